/* autograd.c — the backward graph of a captured forward graph (an AOTAutograd in C).
 *
 * Contract: ic_autograd_build reads the forward graph and builds a second graph in the same
 * IR whose inputs are the gradients of the forward's outputs and the forward values the
 * backward reads (saved: appended to the forward graph as outputs), and whose outputs are
 * the gradients of the forward inputs that require grad. Each node is differentiated by its
 * rule in the one table graph/vjp.h; forward values a rule needs are recomputed or saved as
 * graph/partition.c decides. Both graphs are compiled by ic_compile like any other graph:
 * no op semantics here beyond the graph-level derivative rules.
 *
 * Gradients follow eager's formulas (torch/csrc/autograd/FunctionsManual.cpp) node by
 * node: an operand's contribution is summed over the dims its value was broadcast along
 * and cast to its dtype (ag_acc), in the result's dtype before that (type promotion as
 * eager's autograd does it).
 *
 * Files: this one is the driver (forward values in the backward graph, sums over broadcast
 * dims, gradient accumulation, the rule tables, derive and ic_autograd_build); the rules are
 * graph/vjp_ops.c (pointwise, reductions, views) and graph/vjp_extern.c (externs), their
 * shared state and builders graph/ag.h; torch.autograd.Function templates graph/custom_fn.c;
 * stop-gradient marks and what requires or saves a gradient graph/requires_grad.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "ag.h"

void ag_fail(ag *a, const char *fmt, ...) {
    if (a->failed) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
    a->failed = true;
}

static void push_in(ag *a, int kind, int index) {
    ic_autograd *o = a->out;
    if (o->nbwd_in == a->incap) {
        int nc = a->incap ? 2 * a->incap : 16;
        int *k = realloc(o->bwd_in_kind, (size_t)nc * sizeof *k);
        if (k) o->bwd_in_kind = k;
        int *i = realloc(o->bwd_in_index, (size_t)nc * sizeof *i);
        if (i) o->bwd_in_index = i;
        if (!k || !i) return ag_fail(a, "out of memory");
        a->incap = nc;
    }
    o->bwd_in_kind[o->nbwd_in] = kind;
    o->bwd_in_index[o->nbwd_in++] = index;
}

/* ---- forward values in the backward graph ----------------------------------------------- */
static ic_val rebuild(ag *a, ic_val v) {
    const ic_node n = *FN(a, v);
    ic_val x = n.in[0] >= 0 ? ag_fwd(a, n.in[0]) : -1;
    ic_val y = n.in[1] >= 0 ? ag_fwd(a, n.in[1]) : -1;
    switch (n.op) {
    case IC_OP_WHERE: return ic_where(a->b, x, y, ag_fwd(a, n.in[2]));
    case IC_OP_CAST: return ic_cast(a->b, x, n.meta.dtype);
    case IC_OP_RESHAPE: return ic_reshape(a->b, x, n.meta.ndim, n.meta.sizes);
    case IC_OP_PERMUTE: return ic_permute(a->b, x, n.perm);
    case IC_OP_EXPAND: return ic_expand(a->b, x, n.meta.ndim, n.meta.sizes);
    case IC_OP_SLICE: {
        int64_t len = n.meta.sizes[n.dim];
        int64_t end = len ? n.start + (len - 1) * n.step + 1 : n.start;
        return ic_slice(a->b, x, n.dim, n.start, end, n.step);
    }
    case IC_OP_CAT: return ic_cat(a->b, x, y, n.dim);
    case IC_OP_INDEX_SELECT: return ic_index_select(a->b, x, n.dim, y);
    case IC_OP_ARANGE: return ic_arange(a->b, n.meta.sizes[0], n.num, n.num2, n.meta.dtype);
    default:
        break;
    }
    switch (ic_op_kind(n.op)) {
    case IC_K_UNARY: return un(a, n.op, x);
    case IC_K_BINARY: return bin(a, n.op, x, y);
    default:
        break;
    }
    if (n.recompute && ic_part_rebuildable(&n)) {
        /* a reduction or extern of a checkpoint region: the same node over the backward's
         * operands (their values are the forward's; its own strides are contiguous) */
        ic_node c = n;
        for (int k = 0; k < IC_NIN && n.in[k] >= 0; k++)
            if ((c.in[k] = ag_fwd(a, n.in[k])) < 0) return IC_NONE;
        c.nograd = c.leaf = c.dropped = c.recompute = c.sac = 0;
        ic_val r = ic_graph_append_node(a->b, &c);
        if (r < 0) ag_fail(a, "backward: %s", ic_graph_error(a->b));
        return r;
    }
    ag_fail(a, "backward: cannot recompute %s", ic_op_name(n.op));
    return IC_NONE;
}

/* forward output index holding v (a program output, or a new saved output) */
static int fwd_output_of(ag *a, ic_val v) {
    for (int j = 0; j < a->f->noutputs; j++)
        if (a->f->outputs[j] == v) return j;
    return ic_output(a->f, v);
}

/* A 4-D channels-last input of the backward (a saved activation, a gradient: grad_layout)
 * as the permutation of its NHWC view, the form a channels-last conv's result has (graph.c
 * cl_rewrite): the backward's elementwise ops then run over NHWC values, and what it stores
 * between kernels (BatchNorm's where(relu mask, 0, dy), read by four sums) is NHWC too, not
 * NCHW beside NHWC operands, which kept the sums over N, H, W from reading along C. */
static ic_val cl_input(ag *a, ic_val r) {
    static const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
    const ic_meta *m = BM(a, r);
    if (r < 0 || m->ndim != 4 || m->dyn || m->sizes[1] <= 1 || !ic_config_int(IC_CFG_cl_propagate)) return r;
    int64_t cl[4] = {[1] = 1};
    cl[3] = m->sizes[1];
    cl[2] = cl[3] * (m->sizes[3] > 1 ? m->sizes[3] : 1);
    cl[0] = cl[2] * (m->sizes[2] > 1 ? m->sizes[2] : 1);
    bool same = true, contig = true;
    int64_t e = 1;
    for (int i = 3; i >= 0; i--) {
        if (m->sizes[i] == 1) continue;
        same &= m->strides[i] == cl[i];
        contig &= m->strides[i] == e;
        e *= m->sizes[i];
    }
    if (!same || contig) return r;
    return ic_permute(a->b, ic_permute(a->b, r, to_nhwc), to_nchw);
}

ic_val ag_fwd(ag *a, ic_val v) {
    if (v < 0 || a->failed) return IC_NONE;
    if (a->fmap[v] >= 0) return a->fmap[v];
    const ic_node *n = FN(a, v);
    ic_val r;
    if (a->probe && n->op != IC_OP_SCALAR) { /* what the rules read, for the partitioner */
        ic_meta m = n->meta;
        ic_contiguous_strides(&m);
        a->want[v] = 1;
        return a->fmap[v] = ic_input(a->b, &m);
    }
    if (n->op == IC_OP_INPUT && (a->req[n->index] & IC_AG_OVERWRITTEN)) {
        /* updated in place after the forward: its old value is saved (a copy made by the
         * forward before the update is written back), or the cut lies after it */
        if (!a->save[v]) return ag_fail(a, "backward: reads an input updated in place"), IC_NONE;
        int j = fwd_output_of(a, v);
        if (j < 0) return ag_fail(a, "backward: %s", ic_graph_error(a->f)), IC_NONE;
        ic_meta m = n->meta;
        ic_layout_output(n, m.strides);
        r = cl_input(a, ic_input(a->b, &m));
        push_in(a, IC_AG_FWD_OUTPUT, j);
        a->out->saved_bytes += ic_numel(&m) * (int64_t)ic_dtype_size(m.dtype);
        a->out->nsaved++;
    } else if (n->op == IC_OP_INPUT) {
        ic_meta m = n->meta;
        r = cl_input(a, ic_input(a->b, &m));
        push_in(a, IC_AG_FWD_INPUT, n->index);
        a->out->saved_input_bytes += ic_numel(&n->meta) * (int64_t)ic_dtype_size(n->meta.dtype);
    } else if (n->op == IC_OP_SCALAR) {
        r = ic_scalar(a->b, n->num, n->meta.dtype);
    } else if (a->save[v]) {
        int j = fwd_output_of(a, v);
        if (j < 0) return ag_fail(a, "backward: %s", ic_graph_error(a->f)), IC_NONE;
        ic_meta m = FN(a, v)->meta;
        ic_layout_output(FN(a, v), m.strides); /* as the forward output is allocated */
        r = cl_input(a, ic_input(a->b, &m));
        push_in(a, IC_AG_FWD_OUTPUT, j);
        if (j >= a->out->nuser_out) a->out->saved_bytes += ic_numel(&m) * (int64_t)ic_dtype_size(m.dtype);
        a->out->nsaved++;
    } else {
        r = rebuild(a, v);
        a->out->nrecomputed++;
    }
    a->fmap[v] = r;
    return r;
}

/* ---- sums over broadcast dims -------------------------------------------------------------- */
/* A contribution summed over the dims its operand was broadcast along (sum_to) has the
 * factors that are constant along those dims taken out of the sum, through neg, add, sub and
 * permute: sum_D(x * y) = sum_D(x) * y when y is constant along D. Why: the gradient of a
 * statistic reduced from the same tensor (BatchNorm's and LayerNorm's mean and variance)
 * arrives as such a product with another sum's result (the variance's gradient times x - mean
 * summed for the mean's); left inside, that sum must wait for the first one, a second pass
 * over the tensor that also stores the product (BatchNorm's backward in channels-last: three
 * passes over x and dy and an f32 temporary written and read twice). Taken out, every sum
 * reads only the inputs and they share one pass. f32 and f64 only: a 16-bit product is
 * rounded per op in eager, so factoring it out would change the values. */
static const ic_node *BNODE(ag *a, ic_val v) { return &a->b->nodes[v]; }

static bool same_shape(const ic_meta *x, const ic_meta *y) {
    if (x->ndim != y->ndim || x->dyn || y->dyn) return false;
    for (int i = 0; i < x->ndim; i++)
        if (x->sizes[i] != y->sizes[i]) return false;
    return true;
}

/* y (an operand of a value of rank nd) constant along the dims of mask, as a value to multiply
 * the sum by: y, or what y expands or permutes (channels-last values are permutations of NHWC
 * ones, graph.c cl_rewrite), brought to y's dims; -1 if none. build: make that value (else a
 * result >= 0 only says that there is one). */
static ic_val flat_factor(ag *a, ic_val y, uint32_t mask, int nd, ic_dtype t, bool build, int depth) {
    if (y < 0 || depth > 6) return -1;
    const ic_node *n = BNODE(a, y);
    const ic_meta *m = &n->meta;
    if (m->dyn || m->ndim > nd) return -1;
    bool ok = m->dtype == t || n->op == IC_OP_SCALAR;
    for (int d = 0; ok && d < nd; d++) {
        int k = d - (nd - m->ndim);
        if ((mask >> d) & 1 && k >= 0 && m->sizes[k] != 1) ok = false;
    }
    if (ok) return y;
    if (n->op == IC_OP_EXPAND) return flat_factor(a, n->in[0], mask, nd, t, build, depth + 1);
    if (n->op != IC_OP_PERMUTE || m->ndim != nd) return -1;
    int perm[IC_MAX_DIMS];
    memcpy(perm, n->perm, sizeof perm);
    uint32_t mz = 0; /* y's dim d is its operand's dim perm[d] */
    for (int d = 0; d < nd; d++)
        if ((mask >> d) & 1) mz |= 1u << perm[d];
    ic_val f = flat_factor(a, n->in[0], mz, nd, t, build, depth + 1);
    if (f < 0 || !build || BM(a, f)->ndim == 0) return f;
    const ic_meta *fm = BM(a, f);
    if (fm->ndim < nd) {
        int64_t sz[IC_MAX_DIMS];
        for (int i = 0; i < nd; i++) sz[i] = i < nd - fm->ndim ? 1 : fm->sizes[i - (nd - fm->ndim)];
        f = ic_reshape(a->b, f, nd, sz);
    }
    return ic_permute(a->b, f, perm);
}

static bool lin_operand(ag *a, ic_val x, const ic_meta *cm) {
    return x >= 0 && same_shape(BM(a, x), cm) && BM(a, x)->dtype == cm->dtype;
}

/* sum_lin(c) would take a factor out: c, or a neg/add/sub/permute chain in it, is a product
 * with a factor constant along mask */
static bool has_factor(ag *a, ic_val c, uint32_t mask, int depth) {
    const ic_node *n = BNODE(a, c);
    const ic_meta *cm = &n->meta;
    if (depth > 8 || (cm->dtype != IC_F32 && cm->dtype != IC_F64) || cm->dyn) return false;
    ic_val x = n->in[0], y = n->in[1];
    switch (n->op) {
    case IC_OP_NEG: return lin_operand(a, x, cm) && has_factor(a, x, mask, depth + 1);
    case IC_OP_PERMUTE: {
        uint32_t m2 = 0;
        for (int d = 0; d < cm->ndim; d++)
            if ((mask >> d) & 1) m2 |= 1u << n->perm[d];
        return BM(a, x)->dtype == cm->dtype && has_factor(a, x, m2, depth + 1);
    }
    case IC_OP_ADD:
    case IC_OP_SUB:
        return lin_operand(a, x, cm) && lin_operand(a, y, cm) &&
               (has_factor(a, x, mask, depth + 1) || has_factor(a, y, mask, depth + 1));
    case IC_OP_MUL:
        return (lin_operand(a, x, cm) && flat_factor(a, y, mask, cm->ndim, cm->dtype, false, 0) >= 0) ||
               (lin_operand(a, y, cm) && flat_factor(a, x, mask, cm->ndim, cm->dtype, false, 0) >= 0);
    default: return false;
    }
}

/* the sum of c over mask (keepdim), factors constant along mask taken out (see above) */
static ic_val sum_lin(ag *a, ic_val c, uint32_t mask, int depth) {
    if (c < 0 || a->failed || !has_factor(a, c, mask, depth)) return ic_reduce(a->b, IC_OP_SUM, c, mask, 1, -1);
    const ic_node n = *BNODE(a, c);
    const ic_meta *cm = &n.meta;
    ic_val x = n.in[0], y = n.in[1];
    switch (n.op) {
    case IC_OP_NEG: return un(a, IC_OP_NEG, sum_lin(a, x, mask, depth + 1));
    case IC_OP_PERMUTE: {
        uint32_t m2 = 0;
        for (int d = 0; d < cm->ndim; d++)
            if ((mask >> d) & 1) m2 |= 1u << n.perm[d];
        return ic_permute(a->b, sum_lin(a, x, m2, depth + 1), n.perm);
    }
    case IC_OP_ADD:
    case IC_OP_SUB: return bin(a, n.op, sum_lin(a, x, mask, depth + 1), sum_lin(a, y, mask, depth + 1));
    default: { /* IC_OP_MUL */
        const int nd = cm->ndim;
        const ic_dtype t = cm->dtype;
        bool xs = lin_operand(a, x, cm) && flat_factor(a, y, mask, nd, t, false, 0) >= 0;
        ic_val sum = sum_lin(a, xs ? x : y, mask, depth + 1);
        return mul(a, sum, flat_factor(a, xs ? y : x, mask, nd, t, true, 0));
    }
    }
}

/* ---- gradient accumulation -------------------------------------------------------------- */
/* c summed over the dims it has beyond t's (leading dims, and dims of size 1 in t), reshaped
 * to t's shape; broadcast up where c is smaller (a contribution through a broadcast op) */
static ic_val sum_to(ag *a, ic_val c, const ic_meta *t) {
    const ic_meta *cm = BM(a, c);
    int lead = cm->ndim - t->ndim;
    if (lead < 0) return ic_expand(a->b, c, t->ndim, t->sizes);
    uint32_t mask = 0;
    for (int i = 0; i < lead; i++) mask |= 1u << i;
    for (int i = 0; i < t->ndim; i++)
        if (t->sizes[i] == 1 && cm->sizes[lead + i] != 1) mask |= 1u << (lead + i);
    bool empty = false; /* a sum over no elements: zeros (factored, 0 * the factor: NaN where
                         * it is inf or NaN, as a batch norm's 1 / sqrt(var) of an empty batch) */
    for (int i = 0; i < cm->ndim; i++) empty |= ((mask >> i) & 1) && cm->sizes[i] == 0;
    if (empty) return zeros(a, cm->dtype, t->ndim, t->sizes);
    if (mask) c = sum_lin(a, c, mask, 0);
    if (lead > 0) c = ic_reshape(a->b, c, t->ndim, t->sizes);
    cm = BM(a, c);
    bool same = cm->ndim == t->ndim;
    for (int i = 0; same && i < t->ndim; i++) same = cm->sizes[i] == t->sizes[i];
    if (!same) c = ic_expand(a->b, c, t->ndim, t->sizes);
    return c;
}

/* a bool scalar of the backward graph: one of the outputs in set d got a gradient. Built on
 * the largest set made before that d contains (a->came_set): only the flags beyond it are
 * ORed in. */
static ic_val came(ag *a, const uint64_t *d) {
    const size_t nw = a->nw;
    int best = -1, bestpop = -1;
    int lo = a->ncame > AG_CAME_MEMO ? a->ncame - AG_CAME_MEMO : 0;
    for (int k = a->ncame - 1; k >= lo; k--) { /* newest first: a recurrence's last set */
        const uint64_t *p = &a->came_set[(size_t)(k % AG_CAME_MEMO) * nw];
        bool sub = true;
        int pop = 0;
        for (size_t w = 0; w < nw && sub; w++) {
            sub = (p[w] & ~d[w]) == 0;
            pop += __builtin_popcountll(p[w]);
        }
        if (!sub || pop <= bestpop) continue;
        best = k;
        bestpop = pop;
        if (memcmp(p, d, sizeof *d * nw) == 0) return a->came_val[k % AG_CAME_MEMO];
    }
    const uint64_t *base = best >= 0 ? &a->came_set[(size_t)(best % AG_CAME_MEMO) * nw] : NULL;
    ic_val r = best >= 0 ? a->came_val[best % AG_CAME_MEMO] : -1;
    for (int j = 0; j < a->out->nuser_out; j++) {
        if (!((d[j / 64] >> (j % 64)) & 1) || (base && ((base[j / 64] >> (j % 64)) & 1))) continue;
        if (a->flag[j] < 0) {
            ic_meta m = {.ndim = 0, .dtype = IC_BOOL};
            a->flag[j] = ic_input(a->b, &m);
            push_in(a, IC_AG_GRAD_CAME, j);
        }
        r = r < 0 ? a->flag[j] : bin(a, IC_OP_LOGICAL_OR, r, a->flag[j]);
    }
    int k = a->ncame % AG_CAME_MEMO;
    if (r >= 0 && k >= a->capcame) {
        int nc = a->capcame ? 2 * a->capcame : 16;
        nc = nc < AG_CAME_MEMO ? nc : AG_CAME_MEMO;
        uint64_t *ns = realloc(a->came_set, sizeof *ns * nw * (size_t)nc);
        if (ns) a->came_set = ns;
        ic_val *nv = realloc(a->came_val, sizeof *nv * (size_t)nc);
        if (nv) a->came_val = nv;
        if (!ns || !nv) return ag_fail(a, "out of memory"), -1;
        a->capcame = nc;
    }
    if (r >= 0) {
        a->ncame++;
        memcpy(&a->came_set[(size_t)k * nw], d, sizeof *d * nw);
        a->came_val[k] = r;
    }
    return r;
}

/* some output in x is not in y */
static bool beyond(const ag *a, const uint64_t *x, const uint64_t *y) {
    for (size_t w = 0; w < a->nw; w++)
        if (x[w] & ~y[w]) return true;
    return false;
}

void ag_acc(ag *a, ic_val v, ic_val c) {
    if (v < 0 || !a->need[v] || a->failed) return;
    if (c < 0) return ag_fail(a, "backward: %s", ic_graph_error(a->b) ? ic_graph_error(a->b) : "rule failed");
    const ic_meta *vm = &FN(a, v)->meta;
    c = sum_to(a, c, vm);
    if (c >= 0 && BM(a, c)->dtype != vm->dtype) c = ic_cast(a->b, c, vm->dtype);
    uint64_t *d = &a->dep[(size_t)v * a->nw];
    if (a->grad[v] < 0) {
        a->grad[v] = c;
    } else {
        /* as eager's sum of the gradients that came: a part is added only where one of the
         * outputs it reads got a gradient, if the other part may come without it */
        ic_val old = a->grad[v], s;
        bool mask_c = beyond(a, d, a->cur), mask_old = beyond(a, a->cur, d);
        if (ic_dtype_is_complex(vm->dtype)) { /* an ATen add (no kernel reads complex) */
            if (mask_c || mask_old) return ag_fail(a, "backward: a complex gradient summed only where an output's gradient came");
            int64_t p[4 + IC_MAX_DIMS] = {IC_CUSTOM_CADD_KEY, 0, vm->dtype, vm->ndim};
            for (int i = 0; i < vm->ndim; i++) p[4 + i] = vm->sizes[i];
            ic_val in[2] = {old, c};
            a->grad[v] = ic_extern(a->b, IC_EXT_CUSTOM, 2, in, 4 + vm->ndim, p, 1.0, 1.0);
            for (size_t w = 0; w < a->nw; w++) d[w] |= a->cur[w];
            return;
        }
        s = bin(a, IC_OP_ADD, old, c);
        if (mask_c && mask_old) s = ic_where(a->b, came(a, a->cur), ic_where(a->b, came(a, d), s, c), old);
        else if (mask_c) s = ic_where(a->b, came(a, a->cur), s, old);
        else if (mask_old) s = ic_where(a->b, came(a, d), s, c);
        a->grad[v] = s;
    }
    for (size_t w = 0; w < a->nw; w++) d[w] |= a->cur[w];
}

/* ---- the rule tables (graph/vjp.h) ------------------------------------------------------- */
static vjp_rule op_rules[IC_OP_COUNT];
static vjp_rule ext_rules[IC_EXT_COUNT];

static void init_rules(void) {
#define X_OP(name, fn) op_rules[IC_OP_##name] = fn;
#define X_EXT(name, fn) ext_rules[IC_EXT_##name] = fn;
    IC_VJP_OPS(X_OP)
    IC_VJP_EXTERNS(X_EXT)
#undef X_OP
#undef X_EXT
}

/* ---- driver --------------------------------------------------------------------------- */
IC_API void ic_autograd_clear(ic_autograd *o) {
    if (o == NULL) return;
    ic_graph_free(o->bwd);
    free(o->out_diff);
    free(o->bwd_in_kind);
    free(o->bwd_in_index);
    free(o->bwd_out_input);
    free(o->check_in);
    free(o->check_out);
    free(o->out_dep);
    memset(o, 0, sizeof *o);
}

/* The layout the backward reads an output's gradient in: contiguous, or channels-last where
 * the output is (4-D and 5-D: a BatchNorm or activation after a channels-last conv, a graph
 * that ends there). Eager's gradient then has the output's strides, as AOTAutograd's traced
 * tangents have; read as contiguous it was copied first (csrc/train.c) and the backward's
 * reductions over N, H, W met x channels-last and dy contiguous, one of them read across
 * rows (gpu_red_bench's BatchNorm backward). csrc/train.c copies a gradient that comes
 * in another layout. */
static void grad_layout(const ic_node *n, ic_meta *m) {
    ic_contiguous_strides(m);
    if ((m->ndim != 4 && m->ndim != 5) || m->dyn) return;
    int64_t st[IC_MAX_DIMS], cl[IC_MAX_DIMS], e = 1;
    memcpy(st, m->strides, sizeof st);
    ic_layout_output(n, st);
    /* channels-last strides: C innermost, then the spatial dims and N outermost */
    cl[1] = 1;
    e = m->sizes[1] > 1 ? m->sizes[1] : 1;
    for (int i = m->ndim - 1; i >= 2; i--) {
        cl[i] = e;
        e *= m->sizes[i] > 1 ? m->sizes[i] : 1;
    }
    cl[0] = e;
    bool same = m->sizes[1] > 1;
    for (int i = 0; same && i < m->ndim; i++) same = m->sizes[i] == 1 || st[i] == cl[i];
    if (same) memcpy(m->strides, cl, sizeof(int64_t) * (size_t)m->ndim);
}

static int set_err(ic_err *err, ic_errcode code, const char *msg) {
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", msg);
    }
    return -1;
}

/* o->out_dep: which program outputs' gradients each backward output reads, through the
 * backward graph's operands (bit sets over the program outputs). Left NULL when the graph's
 * outputs are not the gradients one to one (the runner then never returns None). */
static int build_out_dep(ic_autograd *o) {
    const ic_graph *b = o->bwd;
    if (b == NULL || b->noutputs != o->nbwd_out || b->ninputs != o->nbwd_in || o->nuser_out <= 0) return 0;
    size_t nw = ((size_t)o->nuser_out + 63) / 64;
    uint64_t *bits = calloc((size_t)b->n * nw + 1, sizeof *bits);
    o->out_dep = calloc((size_t)o->nbwd_out * (size_t)o->nuser_out + 1, 1);
    if (bits == NULL || o->out_dep == NULL) {
        free(bits);
        free(o->out_dep);
        o->out_dep = NULL;
        return -1;
    }
    for (int k = 0; k < o->nbwd_in; k++)
        if (o->bwd_in_kind[k] == IC_AG_GRAD_OUT) {
            int j = o->bwd_in_index[k];
            bits[(size_t)b->inputs[k] * nw + (size_t)j / 64] |= 1ull << (j % 64);
        }
    for (ic_val v = 0; v < b->n; v++)
        for (int k = 0; k < IC_NIN; k++) {
            ic_val u = b->nodes[v].in[k];
            if (u < 0 || u >= v) continue;
            for (size_t w = 0; w < nw; w++) bits[(size_t)v * nw + w] |= bits[(size_t)u * nw + w];
        }
    for (int k = 0; k < o->nbwd_out; k++) {
        const uint64_t *r = &bits[(size_t)b->outputs[k] * nw];
        for (int j = 0; j < o->nuser_out; j++)
            o->out_dep[(size_t)k * o->nuser_out + j] = (r[j / 64] >> (j % 64)) & 1;
    }
    free(bits);
    return 0;
}

/* one derivation of the backward graph into a fresh a->b (a->out's maps rebuilt): in the
 * probe pass every forward value a rule reads is a placeholder (a->want records it); in
 * the real pass they are saved or recomputed as a->save says. 1: no gradient flows. */
static int derive(ag *a) {
    ic_graph *f = a->f;
    ic_autograd *o = a->out;
    int n = f->n;
    ic_graph_free(o->bwd);
    free(o->bwd_in_kind);
    free(o->bwd_in_index);
    free(o->bwd_out_input);
    o->bwd_in_kind = o->bwd_in_index = o->bwd_out_input = NULL;
    o->nbwd_in = o->nbwd_out = o->nsaved = o->nrecomputed = 0;
    o->saved_bytes = o->saved_input_bytes = 0;
    a->incap = 0;
    a->b = o->bwd = ic_graph_new();
    if (a->b == NULL) return ag_fail(a, "out of memory"), 0;
    ic_graph_set_cuda(a->b, f->cuda);
    for (int v = 0; v < n; v++) a->fmap[v] = a->grad[v] = -1;
    for (int j = 0; j < o->nuser_out; j++) a->flag[j] = -1;
    a->ncame = 0; /* (values of the graph just freed) */
    memset(a->dep, 0, sizeof *a->dep * a->nw * (size_t)n);
    int ndiff = 0;
    for (int j = 0; j < o->nuser_out && !a->failed; j++) {
        ic_val v = f->outputs[j];
        if (!a->need[v]) continue;
        o->out_diff[j] = 1;
        ndiff++;
        ic_meta m = f->nodes[v].meta;
        grad_layout(&f->nodes[v], &m);
        ic_val gi = cl_input(a, ic_input(a->b, &m));
        push_in(a, IC_AG_GRAD_OUT, j);
        a->grad[v] = a->grad[v] < 0 ? gi : ic_binary(a->b, IC_OP_ADD, a->grad[v], gi);
        a->dep[(size_t)v * a->nw + (size_t)j / 64] |= 1ull << (j % 64);
    }
    if (ndiff == 0) return 1;
    for (ic_val v = n - 1; v >= 0 && !a->failed; v--) {
        const ic_node *nd = &f->nodes[v];
        if (f->ncustom > 0 && a->need[v]) { /* an autograd.Function's outputs: its backward */
            const ic_custom *c = custom_at(f, v);
            bool mine = c != NULL;
            for (int i = 0; i < f->ncustom && !mine; i++)
                for (int k = 0; k < f->custom[i].nout; k++) mine |= f->custom[i].out[k] == v;
            if (c != NULL) custom_vjp(a, c);
            if (mine) continue;
        }
        if (a->grad[v] < 0 || !a->need[v] || nd->op == IC_OP_INPUT || node_nograd(f, v)) continue;
        vjp_rule r = nd->op == IC_OP_EXTERN ? ext_rules[nd->ext_kind] : op_rules[nd->op];
        if (r == NULL) {
            ag_fail(a, "no backward rule for %s", nd->op == IC_OP_EXTERN ? ic_extern_name(nd->ext_kind) : ic_op_name(nd->op));
            break;
        }
        memcpy(a->cur, &a->dep[(size_t)v * a->nw], sizeof *a->cur * a->nw);
        r(a, v, a->grad[v]);
        if (ic_graph_error(a->b)) ag_fail(a, "backward graph: %s", ic_graph_error(a->b));
        if (ic_graph_error(f)) ag_fail(a, "forward graph: %s", ic_graph_error(f));
    }
    for (int i = 0; i < f->ninputs && !a->failed; i++) {
        ic_val v = f->inputs[i];
        if (!a->need[v] || a->grad[v] < 0) continue;
        if (ic_output(a->b, a->grad[v]) < 0) {
            ag_fail(a, "backward graph: %s", ic_graph_error(a->b));
            break;
        }
        int *p = realloc(o->bwd_out_input, sizeof(int) * (size_t)(o->nbwd_out + 1));
        if (!p) {
            ag_fail(a, "out of memory");
            break;
        }
        o->bwd_out_input = p;
        o->bwd_out_input[o->nbwd_out++] = i;
    }
    return !a->failed && o->nbwd_out == 0; /* no input is reached: every gradient is None */
}

IC_API int ic_autograd_build(ic_graph *f, const unsigned char *req, ic_autograd *o, ic_err *err) {
    static int inited;
    if (!inited) {
        init_rules();
        inited = 1;
    }
    memset(o, 0, sizeof *o);
    if (f->err) return set_err(err, f->err, f->msg);
    for (ic_val v = 0; v < f->n; v++)
        if (f->nodes[v].meta.dyn) return set_err(err, IC_EUNSUPPORTED, "training graphs with symbolic sizes");
    ag a = {.f = f, .out = o, .req = req};
    int n = f->n, none = 0;
    unsigned char *lreq = NULL;
    a.fmap = malloc(sizeof(ic_val) * (size_t)(n + 1));
    a.grad = malloc(sizeof(ic_val) * (size_t)(n + 1));
    a.need = calloc((size_t)n + 1, 1);
    a.save = calloc((size_t)n + 1, 1);
    a.want = calloc((size_t)n + 1, 1);
    o->nuser_out = f->noutputs;
    o->out_diff = calloc((size_t)f->noutputs + 1, 1);
    a.nw = ((size_t)f->noutputs + 63) / 64 + 1;
    a.dep = calloc((size_t)(n + 1) * a.nw, sizeof *a.dep);
    a.cur = calloc(a.nw, sizeof *a.cur);
    a.flag = malloc(sizeof(ic_val) * (size_t)(f->noutputs + 1));
    if (!a.fmap || !a.grad || !a.need || !a.save || !a.want || !o->out_diff || !a.dep || !a.cur || !a.flag) {
        ag_fail(&a, "out of memory");
        goto done;
    }
    compute_need(f, req, a.need, n);
    /* an input that eager's autograd does not keep (nor requires grad) may be updated in place
     * by the caller between the forward and the backward, as eager allows: the backward reads
     * a saved copy of it (or what is built from it), as for an input the graph updates */
    a.req = lreq = malloc((size_t)f->ninputs + 1);
    if (lreq == NULL) {
        ag_fail(&a, "out of memory");
        goto done;
    }
    for (int i = 0; i < f->ninputs; i++) {
        lreq[i] = req[i];
        if (!(req[i] & IC_AG_REQ) && !saved_by(f, a.need, f->inputs[i], true, n) && !normed(f, f->inputs[i], 2))
            lreq[i] |= IC_AG_OVERWRITTEN;
    }
    /* pass 1: which forward values the rules read; the cut; pass 2: the backward graph */
    a.probe = true;
    none = derive(&a);
    if (a.failed || none) goto done;
    if (ic_part_plan(f, a.want, lreq, a.save) < 0) {
        ag_fail(&a, "out of memory");
        goto done;
    }
    a.probe = false;
    none = derive(&a);
    /* what eager keeps of the inputs and outputs: their versions are checked at backward */
    if (!a.failed && !none) {
        o->check_in = calloc((size_t)f->ninputs + 1, 1);
        o->check_out = calloc((size_t)o->nuser_out + 1, 1);
        if (!o->check_in || !o->check_out) {
            ag_fail(&a, "out of memory");
            goto done;
        }
        for (int i = 0; i < f->ninputs; i++)
            o->check_in[i] = !(req[i] & IC_AG_OVERWRITTEN) && saved_by(f, a.need, f->inputs[i], true, f->n);
        for (int j = 0; j < o->nuser_out; j++)
            o->check_out[j] = f->nodes[f->outputs[j]].op != IC_OP_INPUT && saved_by(f, a.need, f->outputs[j], true, f->n);
        if (build_out_dep(o) < 0) {
            ag_fail(&a, "out of memory");
            goto done;
        }
    }
    /* compiled lazily (on the first backward call): what can be checked now is checked now */
    char vmsg[160];
    if (!a.failed && !none && ic_graph_verify(o->bwd, vmsg, sizeof vmsg)) ag_fail(&a, "backward graph verifier: %s", vmsg);
done:
    free(lreq);
    free(a.fmap);
    free(a.grad);
    free(a.need);
    free(a.save);
    free(a.want);
    free(a.dep);
    free(a.cur);
    free(a.flag);
    free(a.came_set);
    free(a.came_val);
    if (a.failed) {
        ic_errcode code = a.b && ic_graph_errcode(a.b) == IC_ENOMEM ? IC_ENOMEM : IC_EUNSUPPORTED;
        ic_autograd_clear(o);
        return set_err(err, code, a.msg);
    }
    if (none) {
        ic_graph_free(o->bwd);
        o->bwd = NULL;
    }
    return 0;
}
