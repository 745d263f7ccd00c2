/* strides.c — the strides eager gives every graph value (layout propagation).
 *
 * Requires: a node just appended with its meta inferred (graph.c append() calls
 *   ic_layout_infer), its operands' layouts set.
 * Produces: node.est, the strides (in elements, at meta.sizes: the hints of a symbolic
 *   value) that eager's tensor for this value has. The rules follow ATen:
 *     pointwise (unary/binary/where)  TensorIterator: the fast setup when every operand
 *                                     has the output's shape (all contiguous, all
 *                                     channels-last, or all the same dense strides), else
 *                                     the dims sorted by the operands' strides (broadcast
 *                                     dims skipped; ties: the smaller dim inner) and the
 *                                     output dense in that order
 *     cast (.to/.float/clone)         preserve_format: a dense input's strides exactly,
 *                                     else dense in the input's stride order
 *     reductions, index_select, externs (but conv), arange
 *                                     contiguous
 *     conv                            channels-last when the input or the weight is
 *     permute / slice                 the input's strides permuted / times the step
 *     reshape                         ATen's computeStride when a view can express it,
 *                                     else contiguous (reshape copied)
 *     expand                          contiguous (a materialized broadcast: a factory,
 *                                     a fill); a user's expand view is marked by the
 *                                     frontend (ic_value_set_strides: 0 strides)
 *     cat                             the inputs' common memory format, else contiguous
 *   The frontend overrides the result of ops it decomposes where eager's kernel makes a
 *   different layout (ic_value_set_strides / ic_value_set_format); IC_MF_UNARY_OF: the
 *   TensorIterator of one operand, for ops whose scalar arguments are no operands in ATen
 *   (clamp(Scalar), pow(Tensor, Scalar), activations with scalar parameters) while the
 *   decomposition made them 0-d operands (which ATen's fast setup would not skip).
 * Keeps: everything else. The compiler allocates graph outputs with these strides (made
 *   dense when they overlap: never a buffer two elements share); intermediates stay
 *   contiguous.
 */
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

static void contig(int n, const int64_t *sz, int64_t *st) {
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        st[i] = s;
        s *= sz[i] > 1 ? sz[i] : 1;
    }
}

/* ATen get_channels_last_strides_2d / _3d (no max(1): as ATen) */
static bool cl_strides(int n, const int64_t *sz, int64_t *st) {
    if (n == 4) {
        st[1] = 1;
        st[3] = sz[1];
        st[2] = st[3] * sz[3];
        st[0] = st[2] * sz[2];
        return true;
    }
    if (n == 5) {
        st[1] = 1;
        st[4] = sz[1];
        st[3] = st[4] * sz[4];
        st[2] = st[3] * sz[3];
        st[0] = st[2] * sz[2];
        return true;
    }
    return false;
}

static int64_t numel(int n, const int64_t *sz) {
    int64_t k = 1;
    for (int i = 0; i < n; i++) k *= sz[i];
    return k;
}

static bool is_contig(int n, const int64_t *sz, const int64_t *st) {
    if (numel(n, sz) == 0) return true;
    int64_t e = 1;
    for (int i = n - 1; i >= 0; i--) {
        if (sz[i] == 1) continue;
        if (st[i] != e) return false;
        e *= sz[i];
    }
    return true;
}

/* ATen compute_channels_last_contiguous_2d/3d */
static bool is_cl_contig(int n, const int64_t *sz, const int64_t *st) {
    static const int o4[] = {1, 3, 2, 0}, o5[] = {1, 4, 3, 2, 0};
    if (n != 4 && n != 5) return false;
    const int *o = n == 4 ? o4 : o5;
    int64_t e = 1;
    for (int k = 0; k < n; k++) {
        int d = o[k];
        if (sz[d] == 1) continue;
        if (st[d] != e) return false;
        e *= sz[d];
    }
    return true;
}

/* ATen compute_non_overlapping_and_dense */
static bool dense(int n, const int64_t *sz, const int64_t *st) {
    if (n == 1) return sz[0] < 2 || st[0] == 1;
    if (is_contig(n, sz, st)) return true;
    int p[IC_MAX_DIMS];
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = 1; i < n; i++) /* stable sort: size < 2 last, then by stride */
        for (int j = i; j > 0; j--) {
            int a = p[j - 1], b = p[j];
            bool swap = sz[a] < 2 ? sz[b] >= 2 : (sz[b] >= 2 && st[b] < st[a]);
            if (!swap) break;
            p[j - 1] = b;
            p[j] = a;
        }
    int64_t req = 1;
    for (int i = 0; i < n; i++) {
        if (sz[p[i]] < 2) return true;
        if (st[p[i]] != req) return false;
        req *= sz[p[i]];
    }
    return true;
}

/* ATen is_channels_last_strides_2d_s4 / _3d_s5 */
static bool like_cl(int n, const int64_t *sz, const int64_t *st) {
    static const int o4[] = {1, 3, 2, 0}, o5[] = {1, 4, 3, 2, 0};
    if (n != 4 && n != 5) return false;
    const int *o = n == 4 ? o4 : o5;
    int64_t min = 0;
    if (st[1] == 0) return false;
    for (int k = 0; k < n; k++) {
        int d = o[k];
        if (sz[d] == 0 || st[d] < min) return false;
        if (d == 0 && min == st[1]) return false;
        min = st[d];
        if (sz[d] > 1) min *= sz[d];
    }
    return true;
}

/* TensorIterator's reorder_dimensions over nop operands (strides already broadcast: 0 on
 * broadcast dims), then the output dense in that order (compatible_stride + invert_perm). */
static void ti_dense(int n, const int64_t *sz, int nop, const int64_t (*ost)[IC_MAX_DIMS], int64_t *st) {
    int perm[IC_MAX_DIMS]; /* perm[0]: the innermost dim */
    for (int i = 0; i < n; i++) perm[i] = n - 1 - i;
    for (int i = 1; i < n; i++) {
        int d1 = i;
        for (int d0 = i - 1; d0 >= 0; d0--) {
            int a = perm[d0], b = perm[d1], cmp = 0;
            for (int k = 0; k < nop; k++) {
                int64_t s0 = ost[k][a], s1 = ost[k][b];
                if (s0 == 0 || s1 == 0) continue;
                if (s0 < s1) {
                    cmp = -1;
                    break;
                }
                if (s0 > s1) {
                    cmp = 1;
                    break;
                }
                if (sz[a] > sz[b]) {
                    cmp = 1;
                    break;
                }
            }
            if (cmp > 0) {
                perm[d0] = b;
                perm[d1] = a;
                d1 = d0;
            } else if (cmp < 0) {
                break;
            }
        }
    }
    bool inverted = true; /* the dims in their own order: a contiguous output (ATen
                           * allocate_or_resize_outputs), which differs where a size is 0 */
    for (int i = 0; i < n; i++) inverted &= perm[i] == n - 1 - i;
    if (inverted) return contig(n, sz, st);
    int64_t s = 1;
    for (int i = 0; i < n; i++) {
        st[perm[i]] = s;
        s *= sz[perm[i]];
    }
}

/* empty_like / clone / _to_copy with preserve_format */
static void preserve(int n, const int64_t *sz, const int64_t *in, int64_t *st) {
    if (dense(n, sz, in)) {
        memcpy(st, in, sizeof(int64_t) * (size_t)n);
        return;
    }
    const int64_t(*one)[IC_MAX_DIMS] = (const int64_t(*)[IC_MAX_DIMS])in;
    int64_t tmp[1][IC_MAX_DIMS];
    memcpy(tmp[0], one[0], sizeof(int64_t) * (size_t)n);
    ti_dense(n, sz, 1, (const int64_t(*)[IC_MAX_DIMS])tmp, st);
}

/* suggest_memory_format: 1 channels-last (2d or 3d by rank), 0 contiguous */
static int suggest(const ic_meta *m, const int64_t *st) { return like_cl(m->ndim, m->sizes, st) ? 1 : 0; }

/* operand u's strides broadcast to the output (sizes osz, n dims) */
static void bstrides(const ic_node *u, int n, const int64_t *osz, int64_t *out) {
    int k = u->meta.ndim, off = n - k;
    for (int i = 0; i < n; i++) out[i] = 0;
    for (int i = 0; i < k && i + off >= 0; i++)
        out[off + i] = (u->meta.sizes[i] == 1 && osz[off + i] != 1) ? 0 : u->est[i];
}

/* TensorIterator's output strides over the operands u[0..nin) (shape osz, nd dims) */
static void ti_layout(int nd, const int64_t *osz, int nin, const ic_node *const *u, int64_t *st) {
    bool same = true, all_c = true, all_cl = true, all_d = true, eq = true;
    const ic_node *first = NULL;
    for (int i = 0; i < nin; i++) {
        const ic_meta *um = &u[i]->meta;
        if (um->ndim != nd || memcmp(um->sizes, osz, sizeof(int64_t) * (size_t)nd)) {
            same = false;
            break;
        }
        all_c &= is_contig(nd, um->sizes, u[i]->est);
        all_cl &= nd == 4 && is_cl_contig(nd, um->sizes, u[i]->est);
        all_d &= dense(nd, um->sizes, u[i]->est);
        if (!first) first = u[i];
        else eq &= !memcmp(first->est, u[i]->est, sizeof(int64_t) * (size_t)nd);
    }
    if (same && nin > 0) { /* fast_set_up */
        if (all_c) return contig(nd, osz, st);
        if (all_cl) {
            cl_strides(nd, osz, st);
            return;
        }
        if (all_d && eq) {
            memcpy(st, first->est, sizeof(int64_t) * (size_t)nd);
            return;
        }
    }
    int64_t ost[IC_NIN][IC_MAX_DIMS];
    for (int i = 0; i < nin; i++) bstrides(u[i], nd, osz, ost[i]);
    if (nd == 1) return contig(nd, osz, st);
    ti_dense(nd, osz, nin, (const int64_t(*)[IC_MAX_DIMS])ost, st);
}

static void pointwise(ic_graph *g, ic_node *n, int nin) {
    const ic_node *u[IC_NIN];
    for (int i = 0; i < nin; i++) u[i] = &g->nodes[n->in[i]];
    /* an operand of another dtype than the common one is converted first (.to(), preserve_
     * format) by where (its values) and, on the CPU, by TensorIterator (binary and comparison
     * ops): an expanded or non-dense operand then sorts the dims as a dense one */
    ic_node conv[IC_NIN];
    int first = n->op == IC_OP_WHERE;
    if (nin >= 2 && (first || !g->cuda)) {
        ic_dtype common = ic_result_type(g, n->in + first, nin - first);
        for (int i = first; i < nin; i++) {
            const ic_meta *um = &u[i]->meta;
            if (um->dtype == common || um->ndim == 0 || u[i]->op == IC_OP_SCALAR) continue;
            conv[i] = *u[i];
            preserve(um->ndim, um->sizes, u[i]->est, conv[i].est);
            u[i] = &conv[i];
        }
    }
    ti_layout(n->meta.ndim, n->meta.sizes, nin, u, n->est);
}

/* ATen computeStride: strides of a view of (sizes, strides) as nsz; false if none */
bool ic_view_strides(int n, const int64_t *sz, const int64_t *st, int nn, const int64_t *nsz, int64_t *nst) {
    if (numel(n, sz) == 0) {
        if (n == nn && !memcmp(sz, nsz, sizeof(int64_t) * (size_t)n)) memcpy(nst, st, sizeof(int64_t) * (size_t)n);
        else contig(nn, nsz, nst);
        return true;
    }
    int vd = nn - 1;
    int64_t base = n > 0 ? st[n - 1] : 1, tn = 1, vn = 1;
    for (int td = n - 1; td >= 0; td--) {
        tn *= sz[td];
        if (td == 0 || (sz[td - 1] != 1 && st[td - 1] != tn * base)) {
            while (vd >= 0 && (vn < tn || nsz[vd] == 1)) {
                nst[vd] = vn * base;
                vn *= nsz[vd];
                vd--;
            }
            if (vn != tn) return false;
            if (td > 0) {
                base = st[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    if (n == 0) { /* a 0-d tensor viewed with size-1 dims */
        for (; vd >= 0; vd--) nst[vd] = 1;
    }
    return vd == -1;
}

static void conv_layout(ic_graph *g, ic_node *n) {
    const ic_meta *m = &n->meta;
    int nd = (int)n->params[0];
    bool nhwc = n->nparams == 3 + 3 * nd && n->params[2 + 3 * nd] == 1;
    if (!nhwc && (m->ndim == 4 || m->ndim == 5)) {
        const ic_node *x = &g->nodes[n->in[0]], *w = &g->nodes[n->in[1]];
        if (suggest(&x->meta, x->est) || suggest(&w->meta, w->est)) {
            cl_strides(m->ndim, m->sizes, n->est);
            return;
        }
    }
    contig(m->ndim, m->sizes, n->est);
}

void ic_layout_infer(ic_graph *g, ic_val v) {
    ic_node *n = &g->nodes[v];
    const ic_meta *m = &n->meta;
    int nd = m->ndim;
    const ic_node *a = n->in[0] >= 0 && n->in[0] < v ? &g->nodes[n->in[0]] : NULL;
    memset(n->est, 0, sizeof n->est);
    if (nd == 0) return;
    switch (n->op) {
    case IC_OP_INPUT:
        memcpy(n->est, m->strides, sizeof n->est);
        return;
    case IC_OP_CAST:
        if (a) preserve(nd, m->sizes, a->est, n->est);
        else contig(nd, m->sizes, n->est);
        return;
    case IC_OP_PERMUTE:
        for (int i = 0; i < nd; i++) n->est[i] = a->est[n->perm[i]];
        return;
    case IC_OP_SLICE:
        memcpy(n->est, a->est, sizeof n->est);
        n->est[n->dim] = a->est[n->dim] * n->step;
        return;
    case IC_OP_RESHAPE:
        if (!ic_view_strides(a->meta.ndim, a->meta.sizes, a->est, nd, m->sizes, n->est)) contig(nd, m->sizes, n->est);
        return;
    case IC_OP_CAT: {
        int f = -1;
        for (int i = 0; i < 2; i++) {
            const ic_node *u = &g->nodes[n->in[i]];
            int s = suggest(&u->meta, u->est);
            if (s == 0 || (f >= 0 && f != s)) {
                f = 0;
                break;
            }
            f = s;
        }
        if (f == 1 && cl_strides(nd, m->sizes, n->est)) return;
        contig(nd, m->sizes, n->est);
        return;
    }
    case IC_OP_EXTERN:
        if (n->ext_kind == IC_EXT_CONV) return conv_layout(g, n);
        contig(nd, m->sizes, n->est);
        return;
    default:
        break;
    }
    switch (ic_op_kind(n->op)) {
    case IC_K_UNARY:
        return pointwise(g, n, 1);
    case IC_K_BINARY:
        return pointwise(g, n, 2);
    case IC_K_TERNARY:
        return pointwise(g, n, 3);
    default:
        contig(nd, m->sizes, n->est); /* reductions, expand, index_select, arange */
        return;
    }
}

IC_API int ic_value_strides(const ic_graph *g, ic_val v, int64_t *st) {
    if (!g || v < 0 || v >= g->n) return 0;
    const ic_node *n = &g->nodes[v];
    memcpy(st, n->est, sizeof(int64_t) * (size_t)n->meta.ndim);
    return 1;
}

IC_API int ic_value_set_strides(ic_graph *g, ic_val v, const int64_t *st) {
    if (!g || v < 0 || v >= g->n || g->err) return -1;
    ic_node *n = &g->nodes[v];
    if (n->op == IC_OP_INPUT) return -1; /* an input's strides are its own */
    memcpy(n->est, st, sizeof(int64_t) * (size_t)n->meta.ndim);
    return 0;
}

IC_API int ic_value_suggest_format(const ic_graph *g, ic_val v) {
    if (!g || v < 0 || v >= g->n) return IC_MF_CONTIGUOUS;
    const ic_node *n = &g->nodes[v];
    if (!suggest(&n->meta, n->est)) return IC_MF_CONTIGUOUS;
    return n->meta.ndim == 4 ? IC_MF_CHANNELS_LAST : IC_MF_CHANNELS_LAST_3D;
}

IC_API int ic_value_is_contiguous(const ic_graph *g, ic_val v, int fmt) {
    if (!g || v < 0 || v >= g->n) return 0;
    const ic_node *n = &g->nodes[v];
    const ic_meta *m = &n->meta;
    if (fmt == IC_MF_CONTIGUOUS) return is_contig(m->ndim, m->sizes, n->est);
    if (fmt == IC_MF_CHANNELS_LAST) return m->ndim == 4 && is_cl_contig(4, m->sizes, n->est);
    if (fmt == IC_MF_CHANNELS_LAST_3D) return m->ndim == 5 && is_cl_contig(5, m->sizes, n->est);
    return 0;
}

IC_API int ic_value_set_format(ic_graph *g, ic_val v, ic_val like, int fmt) {
    if (!g || v < 0 || v >= g->n || like < 0 || like >= g->n || g->err) return -1;
    ic_node *n = &g->nodes[v];
    const ic_meta *m = &n->meta;
    if (n->op == IC_OP_INPUT) return -1;
    int64_t st[IC_MAX_DIMS] = {0};
    switch (fmt) {
    case IC_MF_PRESERVE: {
        const ic_node *u = &g->nodes[like];
        if (u->meta.ndim != m->ndim) return -1;
        preserve(m->ndim, m->sizes, u->est, st);
        break;
    }
    case IC_MF_CONTIGUOUS:
        contig(m->ndim, m->sizes, st);
        break;
    case IC_MF_UNARY_OF: {
        const ic_node *u = &g->nodes[like];
        if (u->meta.ndim != m->ndim || memcmp(u->meta.sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim)) return -1;
        ti_layout(m->ndim, m->sizes, 1, &u, st);
        break;
    }
    case IC_MF_CHANNELS_LAST:
        if (m->ndim != 4) return -1;
        cl_strides(4, m->sizes, st);
        break;
    case IC_MF_CHANNELS_LAST_3D:
        if (m->ndim != 5) return -1;
        cl_strides(5, m->sizes, st);
        break;
    default:
        return -1;
    }
    memcpy(n->est, st, sizeof st);
    return 0;
}

/* TensorIterator's layout of an output over nop operands with strides ost (broadcast to the
 * output's n dims sz: 0 on broadcast dims), for ops the frontend builds from other nodes
 * (advanced indexing: at::index's iterator over the restrided source and the indices) */
IC_API void ic_layout_iter(int n, const int64_t *sz, int nop, const int64_t (*ost)[IC_MAX_DIMS], int64_t *st) {
    if (n <= 0) return;
    if (n == 1) return contig(n, sz, st);
    ti_dense(n, sz, nop, ost, st);
}

/* the strides of x.to(dtype) (preserve_format) for x of strides in */
IC_API void ic_layout_preserve(int n, const int64_t *sz, const int64_t *in, int64_t *st) {
    if (n > 0) preserve(n, sz, in, st);
}

/* The strides a graph output is allocated with: eager's when no two elements share memory
 * (a permuted, channels-last or sliced layout), else dense in their order (an expand). */
void ic_layout_output(const ic_node *n, int64_t *st) {
    const ic_meta *m = &n->meta;
    int nd = m->ndim;
    if (nd == 0) return;
    int p[IC_MAX_DIMS], k = 0;
    bool ok = true;
    for (int i = 0; i < nd; i++) {
        if (n->est[i] <= 0 && m->sizes[i] > 1) ok = false;
        p[k++] = i;
    }
    /* sorted by stride (size-1 dims out): each one must clear the span of those inside */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0 && n->est[p[j]] < n->est[p[j - 1]]; j--) {
            int t = p[j];
            p[j] = p[j - 1];
            p[j - 1] = t;
        }
    int64_t span = 1;
    for (int i = 0; i < nd && ok; i++) {
        int d = p[i];
        if (m->sizes[d] <= 1) continue;
        if (n->est[d] < span) ok = false;
        span = n->est[d] * m->sizes[d];
    }
    if (ok && numel(nd, m->sizes) > 0) {
        memcpy(st, n->est, sizeof(int64_t) * (size_t)nd);
        return;
    }
    if (numel(nd, m->sizes) == 0) { /* nothing to share: eager's strides as they are */
        for (int i = 0; i < nd; i++) st[i] = n->est[i];
        return;
    }
    int64_t one[1][IC_MAX_DIMS];
    memcpy(one[0], n->est, sizeof one[0]);
    ti_dense(nd, m->sizes, 1, (const int64_t(*)[IC_MAX_DIMS])one, st);
}

/* A dense layout as a dim order (outermost first) for symbolic sizes: false when the
 * strides at the hints are not dense. */
bool ic_layout_order(const ic_meta *m, const int64_t *st, int *order) {
    int nd = m->ndim;
    if (!dense(nd, m->sizes, st)) return false;
    for (int i = 0; i < nd; i++) order[i] = i;
    /* by stride, larger first; equal strides: the size-1 dim inner */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0; j--) {
            int a = order[j - 1], b = order[j];
            bool swap = st[b] > st[a] || (st[b] == st[a] && m->sizes[a] == 1 && m->sizes[b] != 1);
            if (!swap) break;
            order[j - 1] = b;
            order[j] = a;
        }
    return true;
}

/* sched/finalize.c: a pointwise kernel that stores a graph output eager lays out permuted
 * (channels-last, transposed) runs its loops in that output's memory order, so the store
 * (and the loads of inputs in the same layout) are contiguous along the inner loop. vars
 * (n, frame order) are reordered by the store's stride of each, largest outermost. Only
 * for outputs not allocated contiguous, on static graphs: other kernels keep their order. */
void ic_layout_loop_order(ic_ctx *c, const ic_kernel *k, int32_t *vars, int64_t *sizes, int n) {
    if (c->dyn || k->has_red || n < 2) return;
    const ic_item *it = NULL;
    for (int j = 0; j < k->nitems && !it; j++) {
        const ic_item *x = &k->items[j];
        if (!x->store || x->buf < 0 || c->bufs[x->buf].kind != 1) continue;
        const ic_meta *m = &c->bufs[x->buf].meta;
        ic_meta cm = *m;
        ic_contiguous_strides(&cm);
        if (memcmp(cm.strides, m->strides, sizeof(int64_t) * (size_t)m->ndim)) it = x;
    }
    if (!it) return;
    int64_t co[IC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        bool na = false;
        co[i] = ix_coeff(c, it->out_ix, vars[i], &na);
        if (na || co[i] < 0) return;
    }
    for (int i = 1; i < n; i++) /* stable: by coefficient, largest first */
        for (int j = i; j > 0 && co[j] > co[j - 1]; j--) {
            int64_t t = co[j];
            co[j] = co[j - 1];
            co[j - 1] = t;
            int32_t v = vars[j];
            vars[j] = vars[j - 1];
            vars[j - 1] = v;
            t = sizes[j];
            sizes[j] = sizes[j - 1];
            sizes[j - 1] = t;
        }
}
