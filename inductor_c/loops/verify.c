/* verify.c — checks of the loop IR (per-value loop nodes after ic_lower, and the scheduled
 * kernels after ic_schedule, before finalize; sched/verify.c checks finalized kernels).
 *
 * Requires: c->ln (ic_verify_loops); c->kernels as ic_schedule leaves them
 * (ic_verify_sched). Keeps/breaks: nothing (read-only). Run by the driver after each loop-IR
 * pass in debug builds (no NDEBUG) and whenever TORCHC_DEBUG is set, like the kernel
 * verifier; a failure is IC_EINTERNAL ("loop verifier: ...").
 * Checks:
 *   well-formed indices: handles in range, terms and atoms in range, loop variables that
 *     exist and belong to the node (or the kernel frame), modidx with a positive divisor;
 *   buffers defined before use: a value's body loads only earlier values, whose index tuple
 *     has their rank; expressions only refer to earlier expressions (the DAG is acyclic);
 *     no kernel-only expression (X_LOADF, X_ROWVAL) in a per-value body;
 *   shapes consistent: a loop node's kind matches its op, its sizes are the value's (a
 *     reduction's: its operand's), a var of each dim of size > 1 with that size, distinct;
 *     the reduced dims are dims of the operand and red_count their product.
 */
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

typedef struct lv {
    ic_ctx *c;
    char *msg;
    size_t n;
    bool bad;
    const char *where; /* "%5" or "kernel k3 item 2" */
    const int32_t *own; /* the vars an index may use (NULL: any existing var) */
    int nown;
    uint32_t *seen; /* expressions checked (stamp gen) */
    uint32_t gen;
    int depth;
} lv;

static void fail(lv *V, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(lv *V, const char *fmt, ...) {
    if (V->bad) return;
    V->bad = true;
    int k = snprintf(V->msg, V->n, "%s: ", V->where);
    if (k < 0 || (size_t)k >= V->n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(V->msg + k, V->n - (size_t)k, fmt, ap);
    va_end(ap);
}

#define VFAIL(...) do { fail(__VA_ARGS__); return; } while (0)

static bool own_var(const lv *V, int32_t var) {
    if (!V->own) return true;
    for (int i = 0; i < V->nown; i++)
        if (V->own[i] == var) return true;
    return false;
}

static void check_ix(lv *V, ic_ix a) {
    ic_ctx *c = V->c;
    if (V->bad) return;
    if (a < 0 || a >= c->nsums) VFAIL(V, "index expression t%d out of range (%d)", a, c->nsums);
    if (++V->depth > 64) VFAIL(V, "index expression t%d nested too deep", a);
    const ix_sum *s = &c->sums[a];
    if (s->n < 0 || s->first < 0 || s->first + s->n > c->nterms) VFAIL(V, "index t%d: terms out of range", a);
    for (int i = 0; i < s->n && !V->bad; i++) {
        const ix_term *t = &c->terms[s->first + i];
        if (t->atom < 0 || t->atom >= c->natoms) VFAIL(V, "index t%d: atom %d out of range", a, t->atom);
        const ix_atom *at = &c->atoms[t->atom];
        if (at->kind == IX_VAR) {
            if (at->var < 0 || at->var >= c->nvars) VFAIL(V, "index t%d: loop variable i%d does not exist", a, at->var);
            if (!own_var(V, at->var)) VFAIL(V, "index t%d uses i%d, not a loop variable of its node", a, at->var);
        } else if (at->kind == IX_MODIDX) {
            if (at->div <= 0 || at->mod < 0) VFAIL(V, "index t%d: modidx by %lld mod %lld", a, (long long)at->div, (long long)at->mod);
            check_ix(V, at->sub);
        } else {
            VFAIL(V, "index t%d: atom kind %d", a, at->kind);
        }
    }
    V->depth--;
}

/* a loaded value u (per-value IR) read with tuple t */
static void check_load(lv *V, ic_val u, ic_ixv t, ic_val before, ic_dtype dt) {
    ic_ctx *c = V->c;
    if (u < 0 || u >= before) VFAIL(V, "loads %%%d, not an earlier value", u);
    if (t < 0 || t >= c->nixv) VFAIL(V, "load of %%%d: index tuple %d out of range", u, t);
    const ic_meta *m = &c->g->nodes[u].meta;
    if (ixv_len(c, t) != m->ndim) VFAIL(V, "load of %%%d: %d indices for %d dims", u, ixv_len(c, t), m->ndim);
    if (dt != m->dtype) VFAIL(V, "load of %%%d as %s, it is %s", u, ic_dtype_name(dt), ic_dtype_name(m->dtype));
    for (int i = 0; i < m->ndim && !V->bad; i++) check_ix(V, ixv_get(c, t, i));
}

/* expression x; per_value: a loop node's body (X_LOAD of earlier values only, no kernel-only
 * kinds); before: the values a load may read */
static void check_x(lv *V, ic_xid x, bool per_value, ic_val before, ic_xid above) {
    ic_ctx *c = V->c;
    if (V->bad) return;
    if (x < 0 || x >= c->nxs) VFAIL(V, "expression e%d out of range (%d)", x, c->nxs);
    if (above >= 0 && x >= above) VFAIL(V, "expression e%d uses e%d, not an earlier one", above, x);
    if (V->seen[x] == V->gen) return;
    V->seen[x] = V->gen;
    const ic_x *e = &c->xs[x];
    if ((unsigned)e->dtype >= IC_DTYPE_COUNT) VFAIL(V, "e%d: bad dtype %d", x, e->dtype);
    switch (e->kind) {
    case X_CONST: break;
    case X_OP:
        if ((unsigned)e->op >= IC_OP_COUNT) VFAIL(V, "e%d: bad op %d", x, e->op);
        check_x(V, e->a, per_value, before, x);
        if (e->b >= 0) check_x(V, e->b, per_value, before, x);
        if (e->c >= 0) check_x(V, e->c, per_value, before, x);
        break;
    case X_CAST: check_x(V, e->a, per_value, before, x); break;
    case X_IXVAL: check_ix(V, e->ix); break;
    case X_LOAD:
        if (per_value) check_load(V, e->buf, e->ix, before, e->dtype);
        else if (e->buf < 0 || e->buf >= c->g->n) fail(V, "e%d loads %%%d, not a value", x, e->buf);
        else if (e->ix < 0 || e->ix >= c->nixv) fail(V, "e%d: index tuple %d out of range", x, e->ix);
        else
            for (int i = 0; i < ixv_len(c, e->ix) && !V->bad; i++) check_ix(V, ixv_get(c, e->ix, i));
        break;
    case X_GATHER:
        if (per_value) {
            check_load(V, e->buf, e->ix, before, e->dtype);
            if (!V->bad && (e->aux < 0 || e->aux >= c->g->nodes[e->buf].meta.ndim))
                fail(V, "e%d: gather along dim %d of %%%d", x, e->aux, e->buf);
        }
        check_x(V, e->a, per_value, before, x);
        break;
    case X_LOADF:
    case X_ROWVAL:
        if (per_value) VFAIL(V, "e%d: kernel expression (kind %d) in a loop node", x, e->kind);
        if (e->kind == X_ROWVAL) break;
        if (e->buf < 0 || e->buf >= c->nbufs) VFAIL(V, "e%d: buffer %d does not exist", x, e->buf);
        check_ix(V, e->ix);
        if (e->a >= 0) check_x(V, e->a, per_value, before, x);
        break;
    default: VFAIL(V, "e%d: bad kind %d", x, e->kind);
    }
}

static lv start(ic_ctx *c, char *msg, size_t n) {
    lv V = {.c = c, .msg = msg, .n = n, .where = "loops"};
    V.seen = ic_alloc(c, ((size_t)c->nxs + 1) * sizeof(uint32_t));
    V.gen = 1;
    msg[0] = 0;
    return V;
}

int ic_verify_loops(ic_ctx *c, char *msg, size_t n) {
    const ic_graph *g = c->g;
    if (!c->ln) return snprintf(msg, n, "no loop nodes"), -1;
    lv V = start(c, msg, n);
    char where[32];
    V.where = where;
    for (ic_val v = 0; v < g->n && !V.bad; v++) {
        const ic_node *nd = &g->nodes[v];
        const ic_lnode *L = &c->ln[v];
        snprintf(where, sizeof where, "%%%d (%s)", v, ic_op_name(nd->op));
        int want = nd->op == IC_OP_INPUT    ? L_INPUT
                   : nd->op == IC_OP_EXTERN ? L_EXTERN
                   : nd->op == IC_OP_SCALAR ? L_CONST
                   : ic_op_kind(nd->op) == IC_K_REDUCE ? L_REDUCE
                                                       : L_POINTWISE;
        if (L->kind != want) {
            fail(&V, "loop node kind %d, its op needs %d", L->kind, want);
            break;
        }
        if (L->kind == L_INPUT || L->kind == L_EXTERN) {
            if (L->body != -1) fail(&V, "a buffer with a body");
            continue;
        }
        if (L->kind == L_CONST) {
            V.own = L->var, V.nown = 0;
            if (L->body < 0 || L->body >= c->nxs || c->xs[L->body].kind != X_CONST) fail(&V, "a scalar whose body is no constant");
            continue;
        }
        const ic_meta *m = L->kind == L_REDUCE ? &g->nodes[nd->in[0]].meta : &nd->meta;
        if (L->ndim != m->ndim) {
            fail(&V, "%d dims, the value has %d", L->ndim, m->ndim);
            break;
        }
        for (int d = 0; d < L->ndim && !V.bad; d++) {
            if (L->size[d] != m->sizes[d])
                fail(&V, "dim %d: size %lld, the value's is %lld", d, (long long)L->size[d], (long long)m->sizes[d]);
            else if (L->var[d] < 0 ? L->size[d] != 1 : L->size[d] == 1)
                fail(&V, "dim %d of size %lld: %s loop variable", d, (long long)L->size[d], L->var[d] < 0 ? "no" : "a");
            else if (L->var[d] >= c->nvars)
                fail(&V, "dim %d: loop variable i%d does not exist", d, L->var[d]);
            else if (L->var[d] >= 0 && c->var_size[L->var[d]] != L->size[d])
                fail(&V, "dim %d: loop variable i%d has size %lld, the dim %lld", d, L->var[d],
                     (long long)c->var_size[L->var[d]], (long long)L->size[d]);
            for (int e = 0; e < d && !V.bad; e++)
                if (L->var[d] >= 0 && L->var[e] == L->var[d]) fail(&V, "dims %d and %d share loop variable i%d", e, d, L->var[d]);
        }
        if (L->kind == L_REDUCE && !V.bad) {
            int64_t count = 1;
            for (int d = 0; d < L->ndim; d++)
                if ((L->red_mask >> d) & 1) count *= L->size[d];
            if (L->ndim < 32 && (L->red_mask >> L->ndim) != 0) fail(&V, "reduces dims beyond its operand's %d", L->ndim);
            else if (L->red_count != count) fail(&V, "red_count %lld, the reduced dims hold %lld", (long long)L->red_count, (long long)count);
            else if (L->red_op != nd->op) fail(&V, "reduction op %s for a %s", ic_op_name(L->red_op), ic_op_name(nd->op));
        }
        V.own = L->var;
        V.nown = L->ndim;
        V.gen++;
        check_x(&V, L->body, true, v, -1);
        if (L->body2 >= 0) check_x(&V, L->body2, true, v, -1);
    }
    return V.bad ? -1 : 0;
}

int ic_verify_sched(ic_ctx *c, char *msg, size_t n) {
    lv V = start(c, msg, n);
    char where[64];
    V.where = where;
    for (int ki = 0; ki < c->nkernels && !V.bad; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        snprintf(where, sizeof where, "kernel %d", ki);
        if (k->is_ext) {
            if (k->ext_v < 0 || k->ext_v >= c->g->n || c->g->nodes[k->ext_v].op != IC_OP_EXTERN)
                fail(&V, "extern kernel of %%%d, not an extern call", k->ext_v);
            continue;
        }
        if (k->nf < 0 || k->nf > IC_MAX_DIMS) {
            fail(&V, "%d frame dims", k->nf);
            break;
        }
        for (int d = 0; d < k->nf && !V.bad; d++)
            if (k->fvar[d] >= c->nvars || (k->fvar[d] >= 0 && c->var_size[k->fvar[d]] != k->fsize[d]))
                fail(&V, "frame dim %d: loop variable i%d does not match its size %lld", d, k->fvar[d], (long long)k->fsize[d]);
        if (k->nitems < 1) fail(&V, "no items");
        for (int j = 0; j < k->nitems && !V.bad; j++) {
            const ic_item *it = &k->items[j];
            snprintf(where, sizeof where, "kernel %d item %d (%%%d)", ki, j, it->v);
            if (it->v < 0 || it->v >= c->g->n) {
                fail(&V, "realizes no value");
                break;
            }
            if (it->kind != IT_STORE && it->kind != IT_REDUCE) fail(&V, "item kind %d", it->kind);
            V.own = NULL; /* the frame's vars and the reductions' (checked after finalize) */
            V.gen++;
            check_x(&V, it->expr, false, c->g->n, -1);
            if (it->expr2 >= 0) check_x(&V, it->expr2, false, c->g->n, -1);
        }
    }
    return V.bad ? -1 : 0;
}
