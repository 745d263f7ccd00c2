/* inplace.c — graph outputs stored straight into the input they update (owner: training;
 * issue 22, deliverable 7: optimizer steps write parameters and their state in place).
 *
 * Requires: scheduled kernels (items with X_LOAD tuples in kernel vars), needed[] (values
 *   kept in memory), the input buffers made (finalize.c, before the outputs').
 * Decides, for output j requested into input i (ic_output_into), whether storing the value
 *   into input i's memory leaves exactly what storing it apart and copying it back would:
 *   - static shapes; the value has the input's dtype and sizes; the input's elements are
 *     distinct memory (no zero or overlapping strides), and there is at least one;
 *   - one kernel K stores it (not an extern; a GEMM epilogue never takes K: driver_passes.c),
 *     as a pointwise item or an element of a pass over rows, each element once (K's loop
 *     covers the value exactly);
 *   - no kernel after K reads the input (an extern's operand that is a view of it included),
 *     and no extern that can fail at run time (an index out of range: the frame then reruns
 *     eagerly, which must find the inputs untouched) runs after K;
 *   - inside K every read of the input is at the element being stored (the same index
 *     tuple) in the same pass (a row's other passes may run on other threads, or re-read
 *     memory), and an item at or before the storing one that is itself stored reads it: code
 *     generation emits one load of an expression per element for all the items of a pass, in
 *     item order (CPU emit_items, GPU gg_val's memo), so that load precedes the store, and
 *     the later items reuse the loaded value.
 * Keeps: everything (the caller shares the input's buffer with the value).
 */
#include <string.h>

#include "../ic_internal.h"

typedef struct ipscan {
    ic_ctx *c;
    ic_val u;       /* the input's value */
    ic_ixv at;      /* the stored element's tuple */
    bool bad;       /* a read of u at another element */
    uint32_t *seen; /* per expression: gen*2 (visited), gen*2+1 (reads u) */
    uint32_t gen;
} ipscan;

/* does x read u? sets bad for a read at another element */
static bool reads(ipscan *S, ic_xid x) {
    if (x < 0) return false;
    if (S->seen[x] >> 1 == S->gen) return S->seen[x] & 1;
    S->seen[x] = S->gen << 1;
    const ic_x *e = &S->c->xs[x];
    bool r = false;
    if ((e->kind == X_LOAD || e->kind == X_GATHER) && e->buf == S->u) {
        r = true;
        if (e->kind != X_LOAD || e->ix != S->at) S->bad = true;
    }
    if (e->kind != X_ROWVAL) {
        bool a = reads(S, e->a), b = reads(S, e->b), cc = reads(S, e->c);
        r = r || a || b || cc;
    }
    if (r) S->seen[x] |= 1;
    return r;
}

/* last[u] = the last kernel reading graph value u (X_LOAD / X_GATHER of it, or an extern
 * operand that is u or a view of u no kernel computes) */
static void mark_last(ic_ctx *c, ic_xid x, int ki, int *last, int *seen) {
    if (x < 0 || seen[x] == ki + 1) return;
    seen[x] = ki + 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOAD || e->kind == X_GATHER) last[e->buf] = ki;
    if (e->kind == X_ROWVAL) return;
    mark_last(c, e->a, ki, last, seen);
    mark_last(c, e->b, ki, last, seen);
    mark_last(c, e->c, ki, last, seen);
}

/* an extern that cannot fail once its shapes were accepted */
static bool ext_cannot_fail(int kind) {
    switch (kind) {
    case IC_EXT_MM: case IC_EXT_BMM: case IC_EXT_MATMUL: case IC_EXT_ADDMM: case IC_EXT_LINEAR:
    case IC_EXT_BADDBMM: case IC_EXT_CONV: case IC_EXT_SDPA: case IC_EXT_CUMSUM: case IC_EXT_CUMPROD:
        return true;
    default:
        return false;
    }
}

/* the elements of m are distinct memory: dims by stride, each past the span of the smaller */
static bool distinct_elements(const ic_meta *m) {
    int ord[IC_MAX_DIMS], n = 0;
    for (int d = 0; d < m->ndim; d++) {
        if (m->sizes[d] == 0) return false;
        if (m->sizes[d] == 1) continue;
        if (m->strides[d] <= 0) return false;
        int at = n++;
        while (at > 0 && m->strides[ord[at - 1]] > m->strides[d]) ord[at] = ord[at - 1], at--;
        ord[at] = d;
    }
    int64_t span = 1; /* elements addressed by the dims so far: 1 + max offset */
    for (int k = 0; k < n; k++) {
        int d = ord[k];
        if (m->strides[d] < span) return false;
        span += (m->sizes[d] - 1) * m->strides[d];
    }
    return true;
}

static bool granted(ic_ctx *c, ipscan *S, const int *last, int fallible, int j, int i, const bool *needed) {
    const ic_graph *g = c->g;
    if (j < 0 || j >= g->noutputs || i < 0 || i >= g->ninputs || c->out_into[j] >= 0) return false;
    ic_val v = g->outputs[j], u = g->inputs[i];
    int b = c->buf_of[u];
    if (b < 0 || c->bufs[b].inplace || v == u) return false;
    const ic_meta *mv = &g->nodes[v].meta, *mu = &c->bufs[b].meta;
    if (mv->dtype != mu->dtype || mv->ndim != mu->ndim || !distinct_elements(mu)) return false;
    for (int d = 0; d < mv->ndim; d++)
        if (mv->sizes[d] != mu->sizes[d]) return false;
    int ki = c->kernel_of[v];
    if (ki < 0 || last[u] > ki || fallible > ki) return false;
    const ic_kernel *K = &c->kernels[ki];
    if (K->is_ext) return false;
    int a = c->item_of[v];
    const ic_item *A = &K->items[a];
    if (A->kind != IT_STORE || A->v != v || A->part) return false;
    if (K->has_red && (!A->inner || A->pos % 2 != 1)) return false; /* an element of a pass */
    int64_t frame = 1;
    for (int d = 0; d < K->nf; d++) frame *= K->fsize[d];
    if (frame != ic_numel(mv)) return false; /* each element stored once */
    S->u = u;
    S->at = A->out_ixv;
    S->bad = false;
    S->gen++;
    bool first = false, any = false; /* a stored item at or before A reads u; any item does */
    for (int q = 0; q < K->nitems; q++) {
        const ic_item *it = &K->items[q];
        bool r = reads(S, it->expr);
        r = reads(S, it->expr2) || r;
        if (it->pos != A->pos && r) return false;
        any = any || r;
        if (r && q <= a && needed[it->v]) first = true;
    }
    return !S->bad && (first || !any);
}

void ic_inplace_plan(ic_ctx *c, const bool *needed) {
    const ic_graph *g = c->g;
    c->out_into = ic_alloc(c, ((size_t)g->noutputs + 1) * sizeof(int));
    for (int j = 0; j < g->noutputs; j++) c->out_into[j] = -1;
    if (g->ninto == 0 || c->dyn) return;
    int *last = ic_alloc(c, ((size_t)g->n + 1) * sizeof(int));
    int *seen = ic_alloc(c, ((size_t)c->nxs + 1) * sizeof(int));
    for (int v = 0; v < g->n; v++) last[v] = -1;
    int fallible = -1; /* the last extern that may fail at run time */
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        if (k->is_ext) {
            const ic_node *n = &g->nodes[k->ext_v];
            if (!ext_cannot_fail(n->ext_kind)) fallible = ki;
            for (int q = 0; q < IC_NIN && n->in[q] >= 0; q++) {
                last[n->in[q]] = ki;
                if (c->kernel_of[n->in[q]] < 0) {
                    ic_val r = ic_value_view_root(g, n->in[q]);
                    if (r >= 0) last[r] = ki;
                }
            }
        }
        for (int q = 0; q < k->nitems; q++) {
            mark_last(c, k->items[q].expr, ki, last, seen);
            mark_last(c, k->items[q].expr2, ki, last, seen);
        }
    }
    ipscan S = {.c = c, .seen = ic_alloc(c, ((size_t)c->nxs + 1) * sizeof(uint32_t))};
    for (int q = 0; q < g->ninto; q++) {
        int j = g->into[2 * q], i = g->into[2 * q + 1];
        if (!granted(c, &S, last, fallible, j, i, needed)) continue;
        c->out_into[j] = i;
        c->bufs[c->buf_of[g->inputs[i]]].inplace = true;
    }
}
