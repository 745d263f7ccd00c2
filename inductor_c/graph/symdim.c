/* symdim.c — symbolic sizes: monomials coef * prod_k s_k^exp[k] (ic_dim).
 *
 * Contract: pure functions on ic_dim values. Symbols are >= 2 at run time, so a monomial
 * with a symbol is never 0 or 1 (coef >= 1); ic_dim_eq is exact structural equality (a
 * symbolic dim never equals a static one, whatever the hints say).
 */
#include <string.h>

#include "../ic_internal.h"

bool ic_dim_is_static(ic_dim d) {
    for (int k = 0; k < IC_MAX_SYMS; k++)
        if (d.exp[k]) return false;
    return true;
}

bool ic_dim_eq(ic_dim a, ic_dim b) {
    return a.coef == b.coef && memcmp(a.exp, b.exp, sizeof a.exp) == 0;
}

ic_dim ic_dim_mul(ic_dim a, ic_dim b) {
    ic_dim r = {.coef = a.coef * b.coef};
    for (int k = 0; k < IC_MAX_SYMS; k++) {
        int e = a.exp[k] + b.exp[k];
        r.exp[k] = (uint8_t)(e > 255 ? 255 : e);
    }
    if (r.coef == 0) memset(r.exp, 0, sizeof r.exp);
    return r;
}

bool ic_dim_div(ic_dim a, ic_dim b, ic_dim *q) {
    if (b.coef == 0) return false;
    if (a.coef == 0) {
        *q = ic_dim_k(0);
        return true;
    }
    if (a.coef % b.coef) return false;
    ic_dim r = {.coef = a.coef / b.coef};
    for (int k = 0; k < IC_MAX_SYMS; k++) {
        if (a.exp[k] < b.exp[k]) return false;
        r.exp[k] = (uint8_t)(a.exp[k] - b.exp[k]);
    }
    *q = r;
    return true;
}

int64_t ic_dim_eval(ic_dim d, const int64_t *syms) {
    int64_t v = d.coef;
    for (int k = 0; k < IC_MAX_SYMS; k++)
        for (int e = 0; e < d.exp[k]; e++)
            if (__builtin_mul_overflow(v, syms[k], &v)) return -1;
    return v;
}

ic_dim ic_meta_dim(const ic_meta *m, int i) {
    return m->dyn ? m->dims[i] : ic_dim_k(m->sizes[i]);
}

int ic_dim_nsyms(ic_dim d) {
    for (int k = IC_MAX_SYMS - 1; k >= 0; k--)
        if (d.exp[k]) return k + 1;
    return 0;
}

void ic_dim_print(ic_str *s, ic_dim d) {
    bool sym = !ic_dim_is_static(d);
    if (!sym || d.coef != 1) ic_str_printf(s, "%lld", (long long)d.coef);
    bool first = !sym || d.coef != 1 ? false : true;
    for (int k = 0; k < IC_MAX_SYMS; k++) {
        if (!d.exp[k]) continue;
        ic_str_printf(s, "%ss%d", first ? "" : "*", k);
        if (d.exp[k] > 1) ic_str_printf(s, "^%d", d.exp[k]);
        first = false;
    }
}

bool ic_sym_decode(const ic_ctx *c, int64_t v, ic_dim *out) {
    ic_dim d = {.coef = v};
    if (!ic_tainted(c, v)) {
        *out = d;
        return true;
    }
    if (v < 0) return false;
    for (int k = 0; k < IC_MAX_SYMS; k++)
        while (c->symH[k] && d.coef % c->symH[k] == 0 && d.exp[k] < 255) {
            d.coef /= c->symH[k];
            d.exp[k]++;
        }
    if (d.coef < 1 || d.coef >= IC_SYM_BAND || ic_dim_is_static(d)) return false;
    *out = d;
    return true;
}
