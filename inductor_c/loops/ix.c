/* ix.c — symbolic index expressions.
 *
 * Contract: every constructor returns a canonical, hash-consed expression: an affine sum
 * off + Σ coeff·atom with atoms sorted and merged, where an atom is a loop variable or
 * modidx(x, d, m) = (x // d) % m (m == 0: no modulus), all operands non-negative in use.
 * Simplifications (exact for floor division):
 *   (A + R) // d = A/d + R // d        when d divides every coefficient of A
 *   R // d = 0, R % m = R              when range(R) ⊆ [0, d) resp. [0, m)
 *   (A + R) % m = R % m                when m divides every coefficient of A
 *   c·modidx(x,d,s) + c·s·modidx(x,d·s,t) = c·modidx(x,d,s·t)     (merges flattened dims)
 *   (g·A + R) // d = A // (d/g)       when g divides d and range(R) ⊆ [0, g)
 *   modidx(x,1,0) = x;  vars of size 1 are the constant 0.
 * Equal handles are equal expressions, so tuple/offset comparison is handle comparison.
 */
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

#define MAXT 64

typedef struct lin {
    int64_t off;
    int n;
    int64_t coeff[MAXT];
    int32_t atom[MAXT];
} lin;

int32_t ic_new_var(ic_ctx *c, int64_t size) {
    *IC_PUSH(c, c->var_size, c->nvars, c->var_cap) = size;
    return c->nvars - 1;
}

/* ---- interning ------------------------------------------------------------------------- */
static bool atom_eq(ic_ctx *c, int32_t a, int32_t b) {
    const ix_atom *x = &c->atoms[a], *y = &c->atoms[b];
    return x->kind == y->kind && x->var == y->var && x->sub == y->sub && x->div == y->div &&
           x->mod == y->mod;
}

static int32_t intern_atom(ic_ctx *c, ix_atom a) {
    *IC_PUSH(c, c->atoms, c->natoms, c->atom_cap) = a;
    int32_t cand = c->natoms - 1;
    uint64_t h = ic_hmix(ic_hmix(ic_hmix(a.kind, (uint64_t)a.var), (uint64_t)a.sub),
                         ic_hmix((uint64_t)a.div, (uint64_t)a.mod));
    int32_t id = ic_hintern(c, &c->h_atom, h, cand, atom_eq);
    if (id != cand) c->natoms--;
    return id;
}

static bool sum_eq(ic_ctx *c, int32_t a, int32_t b) {
    const ix_sum *x = &c->sums[a], *y = &c->sums[b];
    if (x->off != y->off || x->n != y->n) return false;
    for (int i = 0; i < x->n; i++) {
        const ix_term *s = &c->terms[x->first + i], *t = &c->terms[y->first + i];
        if (s->coeff != t->coeff || s->atom != t->atom) return false;
    }
    return true;
}

static ic_ix intern_lin(ic_ctx *c, const lin *l) {
    if (c->dyn) { /* a symbolic stride or offset is not a constant: not supported */
        bool bad = ic_tainted(c, l->off);
        for (int i = 0; i < l->n; i++) bad |= ic_tainted(c, l->coeff[i]);
        if (bad) ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: a symbolic stride or offset in an index");
    }
    int first = c->nterms;
    uint64_t h = ic_hmix(0x1234, (uint64_t)l->off);
    for (int i = 0; i < l->n; i++) {
        ix_term *t = IC_PUSH(c, c->terms, c->nterms, c->term_cap);
        t->coeff = l->coeff[i];
        t->atom = l->atom[i];
        h = ic_hmix(ic_hmix(h, (uint64_t)t->coeff), (uint64_t)t->atom);
    }
    ix_sum *s = IC_PUSH(c, c->sums, c->nsums, c->sum_cap);
    s->off = l->off;
    s->n = l->n;
    s->first = first;
    int32_t cand = c->nsums - 1;
    int32_t id = ic_hintern(c, &c->h_sum, h, cand, sum_eq);
    if (id != cand) {
        c->nsums--;
        c->nterms = first;
    }
    return id;
}

static void to_lin(ic_ctx *c, ic_ix a, lin *l) {
    const ix_sum *s = &c->sums[a];
    l->off = s->off;
    l->n = s->n;
    for (int i = 0; i < s->n; i++) {
        l->coeff[i] = c->terms[s->first + i].coeff;
        l->atom[i] = c->terms[s->first + i].atom;
    }
}

/* ---- ranges ---------------------------------------------------------------------------- */
static int64_t fdiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t fmod_(int64_t a, int64_t b) { return a - fdiv(a, b) * b; }

static void atom_range(ic_ctx *c, int32_t id, int64_t *lo, int64_t *hi) {
    const ix_atom *a = &c->atoms[id];
    if (a->kind == IX_VAR) {
        int64_t s = c->var_size[a->var];
        *lo = 0;
        *hi = s > 0 ? s - 1 : 0;
        if (ic_tainted(c, s) && !c->range_hint) *hi = IC_SYM_UNBOUNDED; /* symbolic extent */
        return;
    }
    int64_t l, h;
    ix_range(c, a->sub, &l, &h);
    l = fdiv(l, a->div);
    h = fdiv(h, a->div);
    if (a->mod && (l < 0 || h >= a->mod)) {
        l = 0;
        h = a->mod - 1;
    }
    *lo = l;
    *hi = h;
}

static void lin_range(ic_ctx *c, const lin *x, int64_t *lo, int64_t *hi) {
    int64_t l = x->off, h = x->off;
    for (int i = 0; i < x->n; i++) {
        int64_t al, ah;
        atom_range(c, x->atom[i], &al, &ah);
        int64_t p = x->coeff[i] * al, q = x->coeff[i] * ah;
        l += p < q ? p : q;
        h += p < q ? q : p;
    }
    *lo = l;
    *hi = h;
}

void ix_range(ic_ctx *c, ic_ix a, int64_t *lo, int64_t *hi) {
    lin x;
    to_lin(c, a, &x);
    lin_range(c, &x, lo, hi);
}

/* ---- canonical sums -------------------------------------------------------------------- */
static void lin_add_term(ic_ctx *c, lin *x, int64_t k, int32_t atom) {
    if (k == 0) return;
    for (int i = 0; i < x->n; i++)
        if (x->atom[i] == atom) {
            x->coeff[i] += k;
            return;
        }
    if (x->n == MAXT) ic_fail(c, IC_EUNSUPPORTED, "index expression too large");
    x->coeff[x->n] = k;
    x->atom[x->n++] = atom;
}

static void lin_add(ic_ctx *c, lin *x, const lin *y, int64_t k) {
    x->off += y->off * k;
    for (int i = 0; i < y->n; i++) lin_add_term(c, x, y->coeff[i] * k, y->atom[i]);
}

static ic_ix modidx(ic_ctx *c, ic_ix x, int64_t d, int64_t m);

/* Merge c·modidx(x,d,s) + c·s·modidx(x,d·s,t) into c·modidx(x,d,s·t). */
static bool lin_merge_once(ic_ctx *c, lin *l) {
    for (int i = 0; i < l->n; i++) {
        if (!l->coeff[i]) continue;
        const ix_atom *a = &c->atoms[l->atom[i]];
        if (a->kind != IX_MODIDX || a->mod == 0) continue;
        for (int j = 0; j < l->n; j++) {
            if (j == i || !l->coeff[j]) continue;
            const ix_atom *b = &c->atoms[l->atom[j]];
            if (b->kind != IX_MODIDX || b->sub != a->sub || b->div != a->div * a->mod) continue;
            if (l->coeff[j] != l->coeff[i] * a->mod) continue;
            int64_t k = l->coeff[i];
            ic_ix merged = modidx(c, a->sub, a->div, b->mod ? a->mod * b->mod : 0);
            l->coeff[i] = 0;
            l->coeff[j] = 0;
            lin y;
            to_lin(c, merged, &y);
            lin_add(c, l, &y, k);
            return true;
        }
    }
    return false;
}

static int term_cmp(const void *p, const void *q) {
    const int32_t *a = p, *b = q;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

static ic_ix lin_intern(ic_ctx *c, lin *l) {
    while (lin_merge_once(c, l)) {
    }
    /* drop zeros, sort by atom */
    int32_t pairs[MAXT][2];
    int64_t co[MAXT];
    int n = 0;
    for (int i = 0; i < l->n; i++)
        if (l->coeff[i]) {
            pairs[n][0] = l->atom[i];
            pairs[n][1] = n;
            co[n] = l->coeff[i];
            n++;
        }
    qsort(pairs, (size_t)n, sizeof pairs[0], term_cmp);
    lin out = {.off = l->off, .n = n};
    for (int i = 0; i < n; i++) {
        out.atom[i] = pairs[i][0];
        out.coeff[i] = co[pairs[i][1]];
    }
    return intern_lin(c, &out);
}

ic_ix ix_const(ic_ctx *c, int64_t k) {
    lin l = {.off = k};
    return intern_lin(c, &l);
}

ic_ix ix_var(ic_ctx *c, int32_t var) {
    if (c->var_size[var] == 1) return ix_const(c, 0);
    ix_atom a = {.kind = IX_VAR, .var = var, .sub = -1};
    lin l = {.n = 1, .coeff = {1}, .atom = {intern_atom(c, a)}};
    return intern_lin(c, &l);
}

bool ix_is_const(ic_ctx *c, ic_ix a, int64_t *k) {
    if (c->sums[a].n) return false;
    if (k) *k = c->sums[a].off;
    return true;
}

ic_ix ix_add(ic_ctx *c, ic_ix a, ic_ix b) {
    lin x, y;
    to_lin(c, a, &x);
    to_lin(c, b, &y);
    lin_add(c, &x, &y, 1);
    return lin_intern(c, &x);
}

ic_ix ix_scale(ic_ctx *c, ic_ix a, int64_t k) {
    lin x = {0}, y;
    to_lin(c, a, &y);
    lin_add(c, &x, &y, k);
    return lin_intern(c, &x);
}

/* split l into the part divisible by d (returned divided in *q) and the rest *r */
static void split(const lin *l, int64_t d, lin *q, lin *r) {
    q->n = r->n = 0;
    int64_t oq = fdiv(l->off, d);
    q->off = oq;
    r->off = l->off - oq * d;
    for (int i = 0; i < l->n; i++) {
        if (l->coeff[i] % d == 0) {
            q->coeff[q->n] = l->coeff[i] / d;
            q->atom[q->n++] = l->atom[i];
        } else {
            r->coeff[r->n] = l->coeff[i];
            r->atom[r->n++] = l->atom[i];
        }
    }
}

static ic_ix atom_ix(ic_ctx *c, ic_ix sub, int64_t d, int64_t m) {
    ix_atom a = {.kind = IX_MODIDX, .var = -1, .sub = sub, .div = d, .mod = m};
    lin l = {.n = 1, .coeff = {1}, .atom = {intern_atom(c, a)}};
    return intern_lin(c, &l);
}

/* single atom with coefficient 1 and no offset? */
static const ix_atom *sole_atom(ic_ctx *c, const lin *l) {
    if (l->n != 1 || l->off != 0 || l->coeff[0] != 1) return NULL;
    return &c->atoms[l->atom[0]];
}

static ic_ix modidx(ic_ctx *c, ic_ix x, int64_t d, int64_t m) {
    if (d <= 0 || m < 0) ic_fail(c, IC_EINTERNAL, "modidx: bad divisor");
    if (ic_tainted(c, d) || ic_tainted(c, m))
        ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: division of an index by a symbolic size");
    lin l;
    to_lin(c, x, &l);
    if (l.n == 0) {
        int64_t v = fdiv(l.off, d);
        return ix_const(c, m ? fmod_(v, m) : v);
    }
    ic_ix cur = x;
    if (d > 1) {
        lin q, r;
        split(&l, d, &q, &r);
        int64_t lo, hi;
        lin_range(c, &r, &lo, &hi);
        ic_ix rest;
        int64_t g = 0;
        if (r.n > 1) { /* (g*A + R) // d = A // (d/g) when g | d and 0 <= R < g */
            int64_t big = 0;
            for (int i = 0; i < r.n; i++)
                if (llabs(r.coeff[i]) > llabs(big)) big = r.coeff[i];
            int64_t a = llabs(big), b = d;
            while (b) { int64_t t = a % b; a = b; b = t; }
            g = a > 1 && a < d ? a : 0;
        }
        lin gq, gr;
        int64_t glo = 0, ghi = 0;
        if (g) {
            split(&r, g, &gq, &gr);
            lin_range(c, &gr, &glo, &ghi);
        }
        if (r.n == 0 || (lo >= 0 && hi < d)) {
            rest = ix_const(c, fdiv(r.off, d));
        } else if (g && gq.n > 0 && glo >= 0 && ghi < g) {
            rest = modidx(c, lin_intern(c, &gq), d / g, 0);
        } else {
            const ix_atom *a = sole_atom(c, &r);
            if (a && a->kind == IX_MODIDX && a->mod == 0)
                rest = modidx(c, a->sub, a->div * d, 0);
            else
                rest = atom_ix(c, lin_intern(c, &r), d, 0);
        }
        cur = ix_add(c, lin_intern(c, &q), rest);
    }
    if (m == 0) return cur;
    to_lin(c, cur, &l);
    lin q, r;
    split(&l, m, &q, &r);
    int64_t lo, hi;
    lin_range(c, &r, &lo, &hi);
    if (lo >= 0 && hi < m) return lin_intern(c, &r);
    const ix_atom *a = sole_atom(c, &r);
    if (a && a->kind == IX_MODIDX) {
        if (a->mod == 0) {
            ic_ix s = a->sub;
            int64_t dd = a->div;
            int64_t slo, shi;
            ix_range(c, s, &slo, &shi);
            if (slo >= 0 && fdiv(shi, dd) < m) return lin_intern(c, &r);
            return atom_ix(c, s, dd, m);
        }
        if (a->mod % m == 0) return atom_ix(c, a->sub, a->div, m);
    }
    return atom_ix(c, lin_intern(c, &r), 1, m);
}

ic_ix ix_div(ic_ctx *c, ic_ix a, int64_t d) { return d == 1 ? a : modidx(c, a, d, 0); }
ic_ix ix_mod(ic_ctx *c, ic_ix a, int64_t m) { return modidx(c, a, 1, m); }

ic_ix ix_subst(ic_ctx *c, ic_ix a, const int32_t *from, const ic_ix *to, int n) {
    lin l;
    to_lin(c, a, &l);
    lin out = {.off = l.off};
    for (int i = 0; i < l.n; i++) {
        const ix_atom *at = &c->atoms[l.atom[i]];
        ic_ix t;
        if (at->kind == IX_VAR) {
            int k = -1;
            for (int j = 0; j < n; j++)
                if (from[j] == at->var) k = j;
            if (k < 0) {
                lin_add_term(c, &out, l.coeff[i], l.atom[i]);
                continue;
            }
            t = to[k];
        } else {
            int64_t dv = at->div, md = at->mod;
            t = modidx(c, ix_subst(c, at->sub, from, to, n), dv, md);
        }
        lin y;
        to_lin(c, t, &y);
        lin_add(c, &out, &y, l.coeff[i]);
    }
    return lin_intern(c, &out);
}

bool ix_uses_var(ic_ctx *c, ic_ix a, int32_t var) {
    const ix_sum *s = &c->sums[a];
    for (int i = 0; i < s->n; i++) {
        const ix_atom *at = &c->atoms[c->terms[s->first + i].atom];
        if (at->kind == IX_VAR ? at->var == var : ix_uses_var(c, at->sub, var)) return true;
    }
    return false;
}

int64_t ix_coeff(ic_ctx *c, ic_ix a, int32_t var, bool *nonaffine) {
    const ix_sum *s = &c->sums[a];
    int64_t k = 0;
    *nonaffine = false;
    for (int i = 0; i < s->n; i++) {
        const ix_term *t = &c->terms[s->first + i];
        const ix_atom *at = &c->atoms[t->atom];
        if (at->kind == IX_VAR) {
            if (at->var == var) k += t->coeff;
        } else if (ix_uses_var(c, at->sub, var)) {
            *nonaffine = true;
        }
    }
    return k;
}

void ix_print(ic_ctx *c, ic_str *s, ic_ix a) {
    const ix_sum *x = &c->sums[a];
    if (x->n == 0) {
        ic_str_printf(s, "%lld", (long long)x->off);
        return;
    }
    for (int i = 0; i < x->n; i++) {
        const ix_term *t = &c->terms[x->first + i];
        const ix_atom *at = &c->atoms[t->atom];
        if (i) ic_str_printf(s, " + ");
        if (t->coeff != 1) ic_str_printf(s, "%lld*", (long long)t->coeff);
        if (at->kind == IX_VAR) {
            ic_str_printf(s, "i%d", at->var);
        } else {
            ic_str_printf(s, "(");
            ix_print(c, s, at->sub);
            ic_str_printf(s, ")");
            if (at->div != 1) ic_str_printf(s, "//%lld", (long long)at->div);
            if (at->mod) ic_str_printf(s, "%%%lld", (long long)at->mod);
        }
    }
    if (x->off) ic_str_printf(s, " + %lld", (long long)x->off);
}

/* ---- tuples ---------------------------------------------------------------------------- */
static bool ixv_eq(ic_ctx *c, int32_t a, int32_t b) {
    const int32_t *x = c->ixv_data + c->ixv_start[a], *y = c->ixv_data + c->ixv_start[b];
    if (x[0] != y[0]) return false;
    return memcmp(x + 1, y + 1, (size_t)x[0] * sizeof(int32_t)) == 0;
}

ic_ixv ixv_make(ic_ctx *c, int n, const ic_ix *ix) {
    int start = c->nixv_data;
    uint64_t h = ic_hmix(77, (uint64_t)n);
    *IC_PUSH(c, c->ixv_data, c->nixv_data, c->ixv_cap) = n;
    for (int i = 0; i < n; i++) {
        *IC_PUSH(c, c->ixv_data, c->nixv_data, c->ixv_cap) = ix[i];
        h = ic_hmix(h, (uint64_t)ix[i]);
    }
    *IC_PUSH(c, c->ixv_start, c->nixv, c->ixv_start_cap) = start;
    int32_t cand = c->nixv - 1;
    int32_t id = ic_hintern(c, &c->h_ixv, h, cand, ixv_eq);
    if (id != cand) {
        c->nixv--;
        c->nixv_data = start;
    }
    return id;
}

int ixv_len(ic_ctx *c, ic_ixv t) { return c->ixv_data[c->ixv_start[t]]; }
ic_ix ixv_get(ic_ctx *c, ic_ixv t, int i) { return c->ixv_data[c->ixv_start[t] + 1 + i]; }
