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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "vjp.h"

typedef struct ag {
    ic_graph *f;           /* forward (saved values appended as outputs) */
    ic_graph *b;           /* backward */
    ic_val *fmap;          /* forward value -> its backward value (read or rebuilt), -1 */
    ic_val *grad;          /* forward value -> its gradient in b, -1 */
    unsigned char *need;   /* forward value carries a gradient */
    unsigned char *save;   /* partitioner: read from memory (1) or rebuilt (0) */
    unsigned char *want;   /* probe pass: the rules read forward value v */
    bool probe;            /* first pass: every forward value read is a placeholder input */
    const unsigned char *req;
    ic_autograd *out;
    int incap, outcap;
    /* which program outputs' gradients each gradient reads (bit sets of nw words): eager runs
     * no backward of a node none of whose outputs got a gradient, so where a contribution
     * reading other outputs' gradients than the sum it joins, it is added only if one of its
     * outputs' gradients came (a runtime flag per output; an output with no gradient is read
     * as zeros, and a zero times an infinite local derivative, sqrt's at 0, is NaN) */
    size_t nw;
    uint64_t *dep;         /* forward value -> the outputs its gradient reads (n x nw) */
    uint64_t *cur;         /* the rule running: the outputs its gradient reads (nw) */
    ic_val *flag;          /* program output -> backward input "its gradient came", -1 */
    bool failed;
    char msg[200];
} ag;

static void ag_fail(ag *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ag_fail(ag *a, const char *fmt, ...) {
    if (a->failed) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
    a->failed = true;
}

static const ic_node *FN(ag *a, ic_val v) { return &a->f->nodes[v]; }
static const ic_meta *BM(ag *a, ic_val v) {
    static const ic_meta none = {0};
    const ic_meta *m = ic_value_meta(a->b, v);
    return m ? m : &none;
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

/* ---- small builders on the backward graph ---------------------------------------------- */
static ic_val num(ag *a, double x) { return ic_scalar(a->b, x, IC_F64); }
static ic_val un(ag *a, ic_op op, ic_val x) { return ic_unary(a->b, op, x); }
static ic_val bin(ag *a, ic_op op, ic_val x, ic_val y) { return ic_binary(a->b, op, x, y); }
static ic_val mul(ag *a, ic_val x, ic_val y) { return bin(a, IC_OP_MUL, x, y); }
static ic_val mulk(ag *a, ic_val x, double k) { return k == 1.0 ? x : mul(a, x, num(a, k)); }

static ic_val zeros(ag *a, ic_dtype t, int ndim, const int64_t *sizes) {
    ic_val z = ic_cast(a->b, num(a, 0.0), t);
    return ndim ? ic_expand(a->b, z, ndim, sizes) : z;
}

/* swaps the last two dims */
static ic_val transpose(ag *a, ic_val x) {
    int nd = BM(a, x)->ndim, p[IC_MAX_DIMS];
    if (nd < 2) return x;
    for (int i = 0; i < nd; i++) p[i] = i;
    p[nd - 2] = nd - 1;
    p[nd - 1] = nd - 2;
    return ic_permute_fold(a->b, x, p);
}

static ic_val ext(ag *a, ic_extern_kind k, int nin, const ic_val *in, int np, const int64_t *p) {
    return ic_extern(a->b, k, nin, in, np, p, 1.0, 1.0);
}

/* ---- forward values in the backward graph ----------------------------------------------- */
static ic_val ag_fwd(ag *a, ic_val v);

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
        ag_fail(a, "backward: cannot recompute %s", ic_op_name(n.op));
        return IC_NONE;
    }
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

static ic_val ag_fwd(ag *a, ic_val v) {
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
#define X(k) ag_fwd(a, n->in[k])
#define OUT ag_fwd(a, v)

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

/* a bool scalar of the backward graph: one of the outputs in set d got a gradient */
static ic_val came(ag *a, const uint64_t *d) {
    ic_val r = -1;
    for (int j = 0; j < a->out->nuser_out; j++) {
        if (!((d[j / 64] >> (j % 64)) & 1)) continue;
        if (a->flag[j] < 0) {
            ic_meta m = {.ndim = 0, .dtype = IC_BOOL};
            a->flag[j] = ic_input(a->b, &m);
            push_in(a, IC_AG_GRAD_CAME, j);
        }
        r = r < 0 ? a->flag[j] : bin(a, IC_OP_LOGICAL_OR, r, a->flag[j]);
    }
    return r;
}

/* some output in x is not in y */
static bool beyond(const ag *a, const uint64_t *x, const uint64_t *y) {
    for (size_t w = 0; w < a->nw; w++)
        if (x[w] & ~y[w]) return true;
    return false;
}

static void ag_acc(ag *a, ic_val v, ic_val c) {
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
        ic_val old = a->grad[v], s = bin(a, IC_OP_ADD, old, c);
        bool mask_c = beyond(a, d, a->cur), mask_old = beyond(a, a->cur, d);
        if (mask_c && mask_old) s = ic_where(a->b, came(a, a->cur), ic_where(a->b, came(a, d), s, c), old);
        else if (mask_c) s = ic_where(a->b, came(a, a->cur), s, old);
        else if (mask_old) s = ic_where(a->b, came(a, d), s, c);
        a->grad[v] = s;
    }
    for (size_t w = 0; w < a->nw; w++) d[w] |= a->cur[w];
}
#define NEED(k) (n->in[k] >= 0 && a->need[n->in[k]])
#define ACC(k, expr)                    \
    do {                                \
        if (NEED(k)) ag_acc(a, n->in[k], (expr)); \
    } while (0)

/* ---- rules (the table is graph/vjp.h) ----------------------------------------------------- */
typedef void (*vjp_rule)(ag *a, ic_val v, ic_val g);
#define RULE(name) static void name(ag *a, ic_val v, ic_val g)
#define NODE const ic_node *n = FN(a, v)

RULE(vjp_add) {
    NODE;
    ACC(0, g);
    ACC(1, g);
}
RULE(vjp_sub) {
    NODE;
    ACC(0, g);
    ACC(1, un(a, IC_OP_NEG, g));
}
RULE(vjp_mul) {
    NODE;
    ACC(0, mul(a, g, X(1)));
    ACC(1, mul(a, g, X(0)));
}
RULE(vjp_div) {
    NODE;
    ACC(0, bin(a, IC_OP_DIV, g, X(1)));
    /* -grad * ((self / other) / other) */
    ACC(1, mul(a, un(a, IC_OP_NEG, g), bin(a, IC_OP_DIV, bin(a, IC_OP_DIV, X(0), X(1)), X(1))));
}
RULE(vjp_maxmin) {
    NODE;
    /* where(self == other, grad / 2, grad), zero where the other side wins */
    bool mx = n->op == IC_OP_MAXIMUM;
    ic_val t = ic_where(a->b, bin(a, IC_OP_EQ, X(0), X(1)), bin(a, IC_OP_DIV, g, num(a, 2.0)), g);
    ACC(0, ic_where(a->b, bin(a, mx ? IC_OP_LT : IC_OP_GT, X(0), X(1)), num(a, 0.0), t));
    ACC(1, ic_where(a->b, bin(a, mx ? IC_OP_GT : IC_OP_LT, X(0), X(1)), num(a, 0.0), t));
}
RULE(vjp_pow) {
    NODE;
    if (NEED(0)) {
        const ic_node *e = FN(a, n->in[1]);
        if (e->op == IC_OP_SCALAR) {
            if (e->num != 0.0)
                ag_acc(a, n->in[0], mul(a, g, mul(a, num(a, e->num), bin(a, IC_OP_POW, X(0), num(a, e->num - 1.0)))));
            else
                ag_acc(a, n->in[0], zeros(a, n->meta.dtype, n->meta.ndim, n->meta.sizes));
        } else {
            ic_val d = mul(a, g, mul(a, X(1), bin(a, IC_OP_POW, X(0), bin(a, IC_OP_SUB, X(1), num(a, 1.0)))));
            ag_acc(a, n->in[0], ic_where(a->b, bin(a, IC_OP_EQ, X(1), num(a, 0.0)), num(a, 0.0), d));
        }
    }
    /* grad * where(self == 0 & exponent >= 0, 0, result * log(self)) */
    if (NEED(1)) {
        ic_val cond = bin(a, IC_OP_LOGICAL_AND, bin(a, IC_OP_EQ, X(0), num(a, 0.0)), bin(a, IC_OP_GE, X(1), num(a, 0.0)));
        ic_val r = ic_where(a->b, cond, num(a, 0.0), mul(a, OUT, un(a, IC_OP_LOG, X(0))));
        ag_acc(a, n->in[1], mul(a, g, r));
    }
}
RULE(vjp_fmod) {
    NODE;
    ACC(0, g);
    if (NEED(1)) {
        ic_val q = bin(a, IC_OP_DIV, X(0), X(1));
        q = un(a, n->op == IC_OP_FMOD ? IC_OP_TRUNC : IC_OP_FLOOR, q);
        ag_acc(a, n->in[1], mul(a, un(a, IC_OP_NEG, g), q));
    }
}
RULE(vjp_atan2) {
    NODE;
    ic_val r = un(a, IC_OP_RECIPROCAL, bin(a, IC_OP_ADD, mul(a, X(0), X(0)), mul(a, X(1), X(1))));
    ACC(0, mul(a, mul(a, g, X(1)), r));
    ACC(1, mul(a, mul(a, g, un(a, IC_OP_NEG, X(0))), r));
}
/* a zero derivative: eager's gradient is a tensor of zeros (not None) */
RULE(vjp_zero) {
    NODE;
    (void)g;
    for (int k = 0; k < 2; k++)
        if (NEED(k)) {
            const ic_meta *m = &FN(a, n->in[k])->meta;
            ag_acc(a, n->in[k], zeros(a, m->dtype, m->ndim, m->sizes));
        }
}

RULE(vjp_unary) {
    NODE;
    if (!NEED(0)) return;
    ic_val r = IC_NONE;
    switch (n->op) {
    case IC_OP_NEG: r = un(a, IC_OP_NEG, g); break;
    case IC_OP_ABS: r = mul(a, g, un(a, IC_OP_SIGN, X(0))); break;
    case IC_OP_EXP: r = mul(a, g, OUT); break;
    case IC_OP_LOG: r = bin(a, IC_OP_DIV, g, X(0)); break;
    case IC_OP_SQRT: r = bin(a, IC_OP_DIV, g, mul(a, num(a, 2.0), OUT)); break;
    case IC_OP_RSQRT: { /* -0.5 * grad * result^3 */
        ic_val o = OUT;
        r = mul(a, mul(a, num(a, -0.5), g), mul(a, mul(a, o, o), o));
        break;
    }
    case IC_OP_RECIPROCAL: r = mul(a, un(a, IC_OP_NEG, g), mul(a, OUT, OUT)); break;
    case IC_OP_SIGMOID: r = mul(a, mul(a, g, bin(a, IC_OP_SUB, num(a, 1.0), OUT)), OUT); break;
    case IC_OP_TANH: r = mul(a, g, bin(a, IC_OP_SUB, num(a, 1.0), mul(a, OUT, OUT))); break;
    case IC_OP_RELU: r = ic_where(a->b, bin(a, IC_OP_LE, OUT, num(a, 0.0)), num(a, 0.0), g); break;
    case IC_OP_GELU: { /* cdf + x * pdf */
        ic_val x = X(0);
        ic_val cdf = mul(a, num(a, 0.5), bin(a, IC_OP_ADD, num(a, 1.0), un(a, IC_OP_ERF, mul(a, x, num(a, M_SQRT1_2)))));
        ic_val pdf = mul(a, un(a, IC_OP_EXP, mul(a, mul(a, num(a, -0.5), x), x)), num(a, M_2_SQRTPI * M_SQRT1_2 * 0.5));
        r = mul(a, g, bin(a, IC_OP_ADD, cdf, mul(a, x, pdf)));
        break;
    }
    case IC_OP_GELU_TANH: {
        const double kb = M_SQRT2 * M_2_SQRTPI * 0.5, kk = 0.044715;
        ic_val x = X(0), x2 = mul(a, x, x), x3 = mul(a, x2, x);
        ic_val inner = mul(a, num(a, kb), bin(a, IC_OP_ADD, x, mul(a, num(a, kk), x3)));
        ic_val th = un(a, IC_OP_TANH, inner);
        ic_val left = mul(a, num(a, 0.5), x), right = bin(a, IC_OP_ADD, num(a, 1.0), th);
        ic_val ld = mul(a, num(a, 0.5), right);
        ic_val ti = bin(a, IC_OP_SUB, num(a, 1.0), mul(a, th, th));
        ic_val id = mul(a, num(a, kb), bin(a, IC_OP_ADD, num(a, 1.0), mul(a, num(a, 3.0 * kk), x2)));
        ic_val rd = mul(a, mul(a, left, ti), id);
        r = mul(a, g, bin(a, IC_OP_ADD, ld, rd));
        break;
    }
    case IC_OP_SILU: { /* grad * s * (1 + x * (1 - s)) */
        ic_val x = X(0), s = un(a, IC_OP_SIGMOID, x);
        r = mul(a, g, mul(a, s, bin(a, IC_OP_ADD, num(a, 1.0), mul(a, x, bin(a, IC_OP_SUB, num(a, 1.0), s)))));
        break;
    }
    case IC_OP_SIN: r = mul(a, g, un(a, IC_OP_COS, X(0))); break;
    case IC_OP_COS: r = mul(a, g, un(a, IC_OP_NEG, un(a, IC_OP_SIN, X(0)))); break;
    case IC_OP_ERF: {
        ic_val x = X(0);
        r = mul(a, mul(a, num(a, M_2_SQRTPI), un(a, IC_OP_EXP, un(a, IC_OP_NEG, mul(a, x, x)))), g);
        break;
    }
    case IC_OP_LOG1P: r = bin(a, IC_OP_DIV, g, bin(a, IC_OP_ADD, X(0), num(a, 1.0))); break;
    case IC_OP_EXPM1: r = mul(a, g, bin(a, IC_OP_ADD, OUT, num(a, 1.0))); break;
    case IC_OP_LOG2: r = bin(a, IC_OP_DIV, g, mul(a, X(0), num(a, M_LN2))); break;
    case IC_OP_EXP2: r = mul(a, g, mul(a, OUT, num(a, M_LN2))); break;
    case IC_OP_TAN: r = mul(a, g, bin(a, IC_OP_ADD, num(a, 1.0), mul(a, OUT, OUT))); break;
    case IC_OP_ATAN: r = bin(a, IC_OP_DIV, g, bin(a, IC_OP_ADD, mul(a, X(0), X(0)), num(a, 1.0))); break;
    default: return ag_fail(a, "no backward rule for %s", ic_op_name(n->op));
    }
    ag_acc(a, n->in[0], r);
}

RULE(vjp_where) {
    NODE;
    ACC(1, ic_where(a->b, X(0), g, num(a, 0.0)));
    ACC(2, ic_where(a->b, X(0), num(a, 0.0), g));
}
RULE(vjp_cast) {
    NODE;
    ACC(0, g);
}

/* keepdim sizes of reduction node n */
static void keep_sizes(const ic_node *n, const ic_meta *xm, int64_t *ks) {
    for (int d = 0; d < xm->ndim; d++) ks[d] = (n->dim_mask >> d) & 1 ? 1 : xm->sizes[d];
}

RULE(vjp_sum) {
    NODE;
    if (!NEED(0)) return;
    const ic_meta *xm = &FN(a, n->in[0])->meta;
    int64_t ks[IC_MAX_DIMS], count = 1;
    keep_sizes(n, xm, ks);
    for (int d = 0; d < xm->ndim; d++)
        if ((n->dim_mask >> d) & 1) count *= xm->sizes[d];
    if (xm->ndim && !n->keepdim) g = ic_reshape(a->b, g, xm->ndim, ks);
    if (n->op == IC_OP_MEAN) g = bin(a, IC_OP_DIV, g, num(a, (double)count));
    if (xm->ndim) g = ic_expand(a->b, g, xm->ndim, xm->sizes);
    ag_acc(a, n->in[0], g);
}
RULE(vjp_amax) {
    NODE;
    if (!NEED(0)) return;
    const ic_meta *xm = &FN(a, n->in[0])->meta;
    int64_t ks[IC_MAX_DIMS];
    keep_sizes(n, xm, ks);
    ic_val o = OUT;
    if (xm->ndim && !n->keepdim) {
        g = ic_reshape(a->b, g, xm->ndim, ks);
        o = ic_reshape(a->b, o, xm->ndim, ks);
    }
    /* (grad / count of the extreme values) * mask */
    ic_val mask = ic_cast(a->b, bin(a, IC_OP_EQ, X(0), o), n->meta.dtype);
    ic_val cnt = xm->ndim ? ic_reduce(a->b, IC_OP_SUM, mask, n->dim_mask, 1, -1) : mask;
    ag_acc(a, n->in[0], mul(a, bin(a, IC_OP_DIV, g, cnt), mask));
}

RULE(vjp_reshape) {
    NODE;
    const ic_meta *xm = &FN(a, n->in[0])->meta;
    ACC(0, ic_reshape(a->b, g, xm->ndim, xm->sizes));
}
RULE(vjp_permute) {
    NODE;
    int inv[IC_MAX_DIMS];
    for (int i = 0; i < n->meta.ndim; i++) inv[n->perm[i]] = i;
    ACC(0, ic_permute_fold(a->b, g, inv));
}
RULE(vjp_expand) {
    NODE;
    ACC(0, g); /* ag_acc sums over the expanded dims */
}

/* c with `before` and `after` zeros around it along dim */
static ic_val pad(ag *a, ic_val c, int dim, int64_t before, int64_t after) {
    ic_meta m = *BM(a, c);
    if (before > 0) {
        m.sizes[dim] = before;
        c = ic_cat(a->b, zeros(a, m.dtype, m.ndim, m.sizes), c, dim);
    }
    if (after > 0) {
        m = *BM(a, c);
        m.sizes[dim] = after;
        c = ic_cat(a->b, c, zeros(a, m.dtype, m.ndim, m.sizes), dim);
    }
    return c;
}

RULE(vjp_slice) {
    NODE;
    if (!NEED(0)) return;
    const ic_meta *xm = &FN(a, n->in[0])->meta;
    int dim = n->dim;
    int64_t L = xm->sizes[dim], len = n->meta.sizes[dim], step = n->step;
    if (len == 0) {
        ag_acc(a, n->in[0], zeros(a, n->meta.dtype, xm->ndim, xm->sizes));
        return;
    }
    ic_val c = g;
    int64_t used = len;
    if (step > 1) {
        /* [.., len, ..] -> [.., len, 1, ..] ++ zeros [.., len, step-1, ..] -> [.., len*step, ..] */
        const ic_meta gm = *BM(a, g);
        if (gm.ndim + 1 > IC_MAX_DIMS) return ag_fail(a, "backward of a strided slice: too many dims");
        int64_t s1[IC_MAX_DIMS], s2[IC_MAX_DIMS];
        for (int i = 0, k = 0; i < gm.ndim; i++) {
            s1[k++] = gm.sizes[i];
            if (i == dim) s1[k++] = 1;
        }
        c = ic_reshape(a->b, g, gm.ndim + 1, s1);
        memcpy(s2, s1, sizeof s2);
        s2[dim + 1] = step - 1;
        c = ic_cat(a->b, c, zeros(a, gm.dtype, gm.ndim + 1, s2), dim + 1);
        int64_t s3[IC_MAX_DIMS];
        memcpy(s3, gm.sizes, sizeof s3);
        s3[dim] = len * step;
        c = ic_reshape(a->b, c, gm.ndim, s3);
        used = len * step;
        if (n->start + used > L) used = L - n->start;
        if (used < len * step) c = ic_slice(a->b, c, dim, 0, used, 1);
    }
    ag_acc(a, n->in[0], pad(a, c, dim, n->start, L - n->start - used));
}
RULE(vjp_cat) {
    NODE;
    int64_t nx = FN(a, n->in[0])->meta.sizes[n->dim], ny = FN(a, n->in[1])->meta.sizes[n->dim];
    ACC(0, ic_slice(a->b, g, n->dim, 0, nx, 1));
    ACC(1, ic_slice(a->b, g, n->dim, nx, nx + ny, 1));
}

/* index i64 [L] (or 0-d) reshaped to gm's rank with L at dim and expanded to gm */
static ic_val index_like(ag *a, ic_val idx, int dim, const ic_meta *gm) {
    if (BM(a, idx)->dtype != IC_I64) idx = ic_cast(a->b, idx, IC_I64);
    int64_t s[IC_MAX_DIMS];
    for (int i = 0; i < gm->ndim; i++) s[i] = i == dim ? gm->sizes[dim] : 1;
    idx = ic_reshape(a->b, idx, gm->ndim, s);
    return ic_expand(a->b, idx, gm->ndim, gm->sizes);
}

RULE(vjp_index_select) {
    NODE;
    if (!NEED(0)) return;
    const ic_meta *xm = &FN(a, n->in[0])->meta;
    const ic_meta gm = *BM(a, g);
    ic_val in[3] = {zeros(a, gm.dtype, xm->ndim, xm->sizes), index_like(a, X(1), n->dim, &gm), g};
    int64_t p = n->dim;
    ag_acc(a, n->in[0], ext(a, IC_EXT_SCATTER_ADD, 3, in, 1, &p));
}

/* externs */
RULE(vjp_mm) {
    NODE;
    int k = n->ext_kind;
    bool add = k == IC_EXT_ADDMM || k == IC_EXT_BADDBMM;
    ic_extern_kind mk = k == IC_EXT_BMM || k == IC_EXT_BADDBMM ? IC_EXT_BMM : IC_EXT_MM;
    int ia = add ? 1 : 0, ib = ia + 1;
    double beta = add ? n->num : 1.0, alpha = add ? n->num2 : 1.0;
    if (add) ACC(0, mulk(a, g, beta));
    if (NEED(ia)) {
        ic_val in[2] = {g, transpose(a, X(ib))};
        ag_acc(a, n->in[ia], mulk(a, ext(a, mk, 2, in, 0, NULL), alpha));
    }
    if (NEED(ib)) {
        ic_val in[2] = {transpose(a, X(ia)), g};
        ag_acc(a, n->in[ib], mulk(a, ext(a, mk, 2, in, 0, NULL), alpha));
    }
}
RULE(vjp_matmul) {
    NODE;
    const ic_meta *am = &FN(a, n->in[0])->meta, *bm = &FN(a, n->in[1])->meta;
    int na = am->ndim, nb = bm->ndim;
    if (na == 1 && nb == 1) { /* dot */
        ACC(0, mul(a, g, X(1)));
        ACC(1, mul(a, g, X(0)));
        return;
    }
    const ic_meta gm = *BM(a, g);
    ic_val g2 = g;
    if (na == 1 || nb == 1) { /* the 1-d side as a matrix: a unit dim in the gradient */
        int64_t s[IC_MAX_DIMS];
        int k = 0;
        for (int i = 0; i < gm.ndim; i++) {
            if (na == 1 && i == gm.ndim - 1) s[k++] = 1;
            s[k++] = gm.sizes[i];
        }
        if (nb == 1) s[k++] = 1;
        if (k > IC_MAX_DIMS) return ag_fail(a, "matmul backward: too many dims");
        g2 = ic_reshape(a->b, g, k, s);
    }
    if (NEED(0)) {
        ic_val bb = X(1);
        if (nb == 1) bb = ic_reshape(a->b, bb, 2, (int64_t[]){1, bm->sizes[0]});
        else bb = transpose(a, bb);
        ic_val in[2] = {g2, bb};
        ic_val r = ext(a, IC_EXT_MATMUL, 2, in, 0, NULL); /* [.., M|1, K] */
        if (nb == 1 && na >= 2) { /* r is [.., M, K] already */ }
        ag_acc(a, n->in[0], r);
    }
    if (NEED(1)) {
        ic_val aa = X(0);
        if (na == 1) aa = ic_reshape(a->b, aa, 2, (int64_t[]){am->sizes[0], 1});
        else aa = transpose(a, aa);
        ic_val in[2] = {aa, g2};
        ic_val r = ext(a, IC_EXT_MATMUL, 2, in, 0, NULL); /* [.., K, N|1] */
        if (nb == 1 && r >= 0) { /* drop the unit column */
            ic_meta rm = *BM(a, r);
            r = ic_reshape(a->b, r, rm.ndim - 1, rm.sizes);
        }
        ag_acc(a, n->in[1], r);
    }
}
RULE(vjp_linear) {
    NODE;
    const ic_meta *xm = &FN(a, n->in[0])->meta, *wm = &FN(a, n->in[1])->meta;
    int64_t N = wm->sizes[0], K = wm->sizes[1];
    if (NEED(0)) {
        ic_val in[2] = {g, X(1)};
        ag_acc(a, n->in[0], ext(a, IC_EXT_MATMUL, 2, in, 0, NULL));
    }
    if (NEED(1)) {
        int64_t M = 1;
        for (int i = 0; i + 1 < xm->ndim; i++) M *= xm->sizes[i];
        ic_val g2 = ic_reshape(a->b, g, 2, (int64_t[]){M, N});
        ic_val x2 = ic_reshape(a->b, X(0), 2, (int64_t[]){M, K});
        ic_val in[2] = {ic_permute(a->b, g2, (int[]){1, 0}), x2};
        ag_acc(a, n->in[1], ext(a, IC_EXT_MM, 2, in, 0, NULL));
    }
    if (n->in[2] >= 0) ACC(2, g);
}
/* conv (params: nd, stride[nd], padding[nd], dilation[nd], groups [, channels-last]):
 * ATen's convolution_backward as one extern call: the input's and the weight's gradients
 * (which = 2: both, one flat buffer sliced apart here; was two calls, each running the
 * backward's setup and dispatch), or the one needed; the bias gradient is g summed over every
 * dim but the channels */
RULE(vjp_conv) {
    NODE;
    int nd = (int)n->params[0];
    bool cl = n->nparams == 3 + 3 * nd && n->params[2 + 3 * nd] == 1;
    int64_t p[IC_EXT_MAXP];
    if (n->nparams + 1 > IC_EXT_MAXP) return ag_fail(a, "conv backward: too many params");
    memcpy(p, n->params, sizeof(int64_t) * (size_t)n->nparams);
    ic_val in[3] = {g, X(0), X(1)};
    if (NEED(0) && NEED(1)) {
        p[n->nparams] = 2;
        ic_val flat = ext(a, IC_EXT_CONV_BWD, 3, in, n->nparams + 1, p);
        int64_t off = 0;
        for (int i = 0; i < 2 && flat >= 0; i++) {
            const ic_meta *m = &FN(a, n->in[i])->meta;
            int64_t k = ic_numel(m);
            ag_acc(a, n->in[i], ic_reshape(a->b, ic_slice(a->b, flat, 0, off, off + k, 1), m->ndim, m->sizes));
            off += k;
        }
        if (flat < 0) ag_acc(a, n->in[0], flat); /* reports the failure */
    } else {
        for (int which = 0; which < 2; which++)
            if (NEED(which)) {
                p[n->nparams] = which;
                ag_acc(a, n->in[which], ext(a, IC_EXT_CONV_BWD, 3, in, n->nparams + 1, p));
            }
    }
    if (n->in[2] >= 0 && NEED(2)) {
        int ch = cl ? n->meta.ndim - 1 : 1;
        uint32_t mask = 0;
        for (int i = 0; i < n->meta.ndim; i++)
            if (i != ch) mask |= 1u << i;
        ag_acc(a, n->in[2], ic_reduce(a->b, IC_OP_SUM, g, mask, 0, -1));
    }
}

static ic_val gfail(ic_graph *g, const char *msg) {
    if (g->err == IC_OK) {
        g->err = IC_EINVALID;
        snprintf(g->msg, sizeof g->msg, "%s", msg);
    }
    return IC_NONE;
}

/* shape inference of the backward externs (ic_extern dispatches here) */
ic_val ic_train_extern(ic_graph *g, ic_extern_kind kind, int nin, const ic_val *in, int nparams,
                       const int64_t *params, double beta) {
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = kind, .nparams = nparams,
                 .num = 1, .num2 = 1};
    if (nparams < 0 || nparams > IC_EXT_MAXP || nin < 1 || nin > IC_NIN) return gfail(g, "backward extern: bad operands or params");
    for (int i = 0; i < nin; i++) n.in[i] = in[i];
    if (nparams > 0) memcpy(n.params, params, sizeof(int64_t) * (size_t)nparams);
    const ic_meta *gm = ic_value_meta(g, in[0]);
    /* sdpa_bwd with statistics: operand 5 (the stats) is f32/f64, 6 (a mask) bool or q's dtype */
    const int same = kind == IC_EXT_SDPA_BWD && nparams == 2 ? 5 : nin;
    for (int i = 1; i < same; i++)
        if (ic_value_meta(g, in[i])->dtype != gm->dtype) return gfail(g, "backward extern: operands of different dtypes");
    if (kind == IC_EXT_CONV_BWD) {
        int nd = nparams >= 1 ? (int)params[0] : 0;
        int64_t which = nparams >= 1 ? params[nparams - 1] : -1;
        if (nin != 3 || nd < 1 || nd > 3 || (nparams != 3 + 3 * nd && nparams != 4 + 3 * nd) || which < 0 || which > 2)
            return gfail(g, "conv_bwd: bad operands or params");
        if (which == 2) { /* both: 1-D [numel x + numel w], dx then dw */
            n.meta.dtype = gm->dtype;
            n.meta.ndim = 1;
            n.meta.sizes[0] = ic_numel(ic_value_meta(g, in[1])) + ic_numel(ic_value_meta(g, in[2]));
        } else {
            n.meta = *ic_value_meta(g, in[1 + (int)which]);
        }
    } else if (kind == IC_EXT_SDPA_BWD) {
        if (!(nin == 4 && nparams == 1) && !((nin == 6 || nin == 7) && nparams == 2 && params[1] == 1))
            return gfail(g, "sdpa_bwd: bad operands or params");
        if (nparams == 2) {
            int64_t nn, off, total;
            ic_sdpa_stats_layout(ic_value_meta(g, in[4]), &nn, &off, &total);
            const ic_meta *sm = ic_value_meta(g, in[5]);
            if (sm->ndim != 1 || sm->sizes[0] != total - off || (sm->dtype != IC_F32 && sm->dtype != IC_F64))
                return gfail(g, "sdpa_bwd: statistics of another layout");
        }
        int64_t total = 0;
        for (int i = 1; i < 4; i++) total += ic_numel(ic_value_meta(g, in[i]));
        n.meta.dtype = gm->dtype;
        n.meta.ndim = 1;
        n.meta.sizes[0] = total;
        n.num = beta;
    } else if (kind == IC_EXT_DROPOUT_MASK) {
        /* params: none, or the strides eager's empty_like(x) has (the order of the draws) */
        bool st_ok = nparams == 0 || (nparams == gm->ndim && !gm->dyn);
        for (int i = 0; st_ok && i < nparams; i++)
            st_ok = params[i] >= 0;
        if (nin != 1 || !st_ok || !ic_is_float(gm->dtype) || !(beta >= 0 && beta <= 1))
            return gfail(g, "dropout_mask: bad operands or p");
        n.meta = *gm;
        n.num = beta;
        n.nograd = 1; /* random numbers: no gradient */
    } else {
        return gfail(g, "backward extern: bad kind");
    }
    n.meta.dyn = 0;
    ic_contiguous_strides(&n.meta);
    return ic_graph_append_node(g, &n);
}

/* scaled_dot_product_attention (q, k, v [, mask]; params: is_causal; beta: the scale): one
 * extern call computes dq, dk, dv (flat, one buffer), sliced apart here; with a mask the
 * decomposition above (it also gives a float mask's gradient, which ATen's kernels do not). */
/* attention with a mask: the backward decomposed in the graph (the probabilities recomputed
 * from q, k and the mask, [.., L, S] materialized): dV = P^T g, dP = g V^T,
 * dS = P (dP - rowsum(dP P)), dQ = scale dS K, dK = scale dS^T Q, dMask = dS */
static void sdpa_masked_bwd(ag *a, const ic_node *n, ic_val g) {
    double scale = n->num;
    ic_val q = X(0), k = X(1), v = X(2), mk = X(3);
    ic_val in[2] = {q, transpose(a, k)};
    ic_val sc = mulk(a, ext(a, IC_EXT_MATMUL, 2, in, 0, NULL), scale);
    if (BM(a, mk)->dtype == IC_BOOL) sc = ic_where(a->b, mk, sc, num(a, -INFINITY));
    else sc = bin(a, IC_OP_ADD, sc, mk);
    int nd = BM(a, sc)->ndim;
    uint32_t last = 1u << (nd - 1);
    ic_val e = un(a, IC_OP_EXP, bin(a, IC_OP_SUB, sc, ic_reduce(a->b, IC_OP_AMAX, sc, last, 1, -1)));
    ic_val P = bin(a, IC_OP_DIV, e, ic_reduce(a->b, IC_OP_SUM, e, last, 1, -1));
    if (NEED(2)) {
        ic_val i2[2] = {transpose(a, P), g};
        ag_acc(a, n->in[2], ext(a, IC_EXT_MATMUL, 2, i2, 0, NULL));
    }
    ic_val i3[2] = {g, transpose(a, v)};
    ic_val dP = ext(a, IC_EXT_MATMUL, 2, i3, 0, NULL);
    ic_val dS = mul(a, P, bin(a, IC_OP_SUB, dP, ic_reduce(a->b, IC_OP_SUM, mul(a, dP, P), last, 1, -1)));
    if (NEED(3)) ag_acc(a, n->in[3], dS); /* an additive float mask (a learned position bias): the
                                           * scores' gradient, summed over its broadcast dims */
    if (NEED(0)) {
        ic_val i4[2] = {dS, k};
        ag_acc(a, n->in[0], mulk(a, ext(a, IC_EXT_MATMUL, 2, i4, 0, NULL), scale));
    }
    if (NEED(1)) {
        ic_val i5[2] = {transpose(a, dS), q};
        ag_acc(a, n->in[1], mulk(a, ext(a, IC_EXT_MATMUL, 2, i5, 0, NULL), scale));
    }
}

RULE(vjp_sdpa) {
    NODE;
    if (n->in[3] >= 0) return sdpa_masked_bwd(a, n, g);
    ic_val in[4] = {g, X(0), X(1), X(2)};
    ic_val flat = ic_extern(a->b, IC_EXT_SDPA_BWD, 4, in, 1, n->params, n->num, 1.0);
    int64_t off = 0;
    for (int i = 0; i < 3; i++) {
        const ic_meta *m = &FN(a, n->in[i])->meta;
        int64_t k = ic_numel(m);
        if (NEED(i)) ag_acc(a, n->in[i], ic_reshape(a->b, ic_slice(a->b, flat, 0, off, off + k, 1), m->ndim, m->sizes));
        off += k;
    }
}

RULE(vjp_gather) {
    NODE;
    if (!NEED(0)) return;
    const ic_meta *xm = &FN(a, n->in[0])->meta;
    ic_val in[3] = {zeros(a, n->meta.dtype, xm->ndim, xm->sizes), X(1), g};
    ag_acc(a, n->in[0], ext(a, IC_EXT_SCATTER_ADD, 3, in, 1, n->params));
}
RULE(vjp_scatter) {
    NODE;
    const ic_meta *im = &FN(a, n->in[1])->meta, *sm = &FN(a, n->in[2])->meta;
    if (n->ext_kind == IC_EXT_SCATTER_ADD) {
        ACC(0, g);
    } else if (NEED(0)) {
        ic_val in[3] = {g, X(1), zeros(a, n->meta.dtype, im->ndim, im->sizes)};
        ag_acc(a, n->in[0], ext(a, IC_EXT_SCATTER, 3, in, 1, n->params));
    }
    if (NEED(2)) {
        bool same = im->ndim == sm->ndim;
        for (int i = 0; same && i < im->ndim; i++) same = im->sizes[i] == sm->sizes[i];
        if (!same) return ag_fail(a, "backward of %s with an index smaller than src", ic_extern_name(n->ext_kind));
        ic_val in[2] = {g, X(1)};
        ag_acc(a, n->in[2], ext(a, IC_EXT_GATHER, 2, in, 1, n->params));
    }
}
RULE(vjp_cumsum) {
    NODE;
    if (!NEED(0)) return;
    if (n->meta.ndim == 0) return ag_acc(a, n->in[0], g);
    /* reversed cumulative sum: total - cumsum(g) + g */
    int64_t p[2] = {n->params[0], -1};
    ic_val cs = ext(a, IC_EXT_CUMSUM, 1, &g, 2, p);
    ic_val tot = ic_reduce(a->b, IC_OP_SUM, g, 1u << n->params[0], 1, -1);
    ag_acc(a, n->in[0], bin(a, IC_OP_ADD, bin(a, IC_OP_SUB, tot, cs), g));
}
/* linear algebra (graph/linalg.c): exp's VJP is its own extern, L(Aᴴ, g) (csrc/matrix_exp.cpp);
 * X = A⁻¹B: gB = A⁻ᵀ g (a solve with the transposed view of A), gA = -gB Xᵀ */
RULE(vjp_matrix_exp) {
    NODE;
    if (!NEED(0)) return;
    ic_val in[2] = {X(0), g};
    ag_acc(a, n->in[0], ext(a, IC_EXT_MATRIX_EXP_VJP, 2, in, 0, NULL));
}
RULE(vjp_solve) {
    NODE;
    if (n->nparams != 1 || n->params[0] != 1) return ag_fail(a, "no backward rule for solve with left=False");
    ic_val in[2] = {transpose(a, X(0)), g};
    int64_t left = 1;
    ic_val gb = ext(a, IC_EXT_SOLVE, 2, in, 1, &left);
    if (NEED(0)) {
        ic_val i2[2] = {gb, transpose(a, OUT)};
        ag_acc(a, n->in[0], mulk(a, ext(a, IC_EXT_MATMUL, 2, i2, 0, NULL), -1.0));
    }
    ACC(1, gb);
}
#undef NODE

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

/* ---- torch.autograd.Function: the user's backward as a template -------------------------
 * dynamo_hook/autograd_fn.c traces the user's backward onto the forward graph right after
 * the function's outputs (ic_custom_output values), its incoming gradients placeholder
 * inputs; ic_custom_capture moves those nodes out into a template the graph keeps. derive()
 * copies the template into the backward graph where the gradients of the outputs are final
 * (custom_vjp): placeholders become the outputs' gradients (zeros where none reaches one:
 * torch materializes them), operands before `base` the forward values (saved or
 * recomputed as the partitioner decides), and the template's results are accumulated into
 * the function's inputs by ag_acc (summed over broadcast dims, cast: eager's
 * validate_outputs). */
typedef struct ic_custom {
    ic_node *nodes;  /* the template: operands < base are forward values, >= base template values */
    int n, base;
    int nout, nin;
    ic_val *out;     /* per output: its ic_custom_output value, or -1 (not differentiable) */
    ic_val *ph;      /* per output: the placeholder of its gradient (a template value) */
    ic_val *in;      /* forward values the function's gradients go to */
    ic_val *gin;     /* per in: its gradient (template value, forward value, or -1) */
    ic_val first;    /* the lowest out[]: derive() runs the template there */
} ic_custom;

void ic_custom_free(ic_graph *g) {
    for (int i = 0; i < g->ncustom; i++) {
        ic_custom *c = &g->custom[i];
        free(c->nodes);
        free(c->out);
        free(c->ph);
        free(c->in);
        free(c->gin);
    }
    free(g->custom);
    g->custom = NULL;
    g->ncustom = 0;
}

IC_API int ic_graph_num_values(const ic_graph *g) { return g->n; }

IC_API ic_val ic_custom_output(ic_graph *g, ic_val y) {
    const ic_meta *m = ic_value_meta(g, y);
    if (g->err || m == NULL) return gfail(g, "ic_custom_output: bad value");
    if (m->dyn) return gfail(g, "ic_custom_output: symbolic sizes");
    return ic_reshape(g, y, m->ndim, m->sizes); /* a fresh value: its own gradient */
}

static ic_val *dup_vals(const ic_val *v, int n) {
    ic_val *r = malloc(sizeof *r * (size_t)(n + 1));
    if (r && n) memcpy(r, v, sizeof *r * (size_t)n);
    return r;
}

IC_API int ic_custom_capture(ic_graph *g, int base, int ninputs, int nout, const ic_val *out, const ic_val *ph, int nin,
                             const ic_val *in, const ic_val *gin) {
    if (g->err) return -1;
    int end = g->n;
    if (base < 0 || base > end || ninputs < 0 || ninputs > g->ninputs || nout < 1 || nin < 0 ||
        g->nograd_depth > 0)
        return gfail(g, "ic_custom_capture: bad arguments"), -1;
    for (int i = ninputs; i < g->ninputs; i++)
        if (g->inputs[i] < base) return gfail(g, "ic_custom_capture: an input before base"), -1;
    for (int i = 0; i < ninputs; i++)
        if (g->inputs[i] >= base) return gfail(g, "ic_custom_capture: the backward made a graph input"), -1;
    for (int j = 0; j < g->noutputs; j++)
        if (g->outputs[j] >= base) return gfail(g, "ic_custom_capture: an output in the template"), -1;
    ic_val first = -1;
    for (int k = 0; k < nout; k++) {
        bool okp = ph[k] >= base && ph[k] < end && g->nodes[ph[k]].op == IC_OP_INPUT;
        bool oko = out[k] < 0 || (out[k] < base && g->nodes[out[k]].op == IC_OP_RESHAPE);
        if (!okp || !oko) return gfail(g, "ic_custom_capture: bad output or placeholder"), -1;
        if (out[k] >= 0 && (first < 0 || out[k] < first)) first = out[k];
        for (int j = 0; j < k; j++)
            if (ph[j] == ph[k] || (out[k] >= 0 && out[j] == out[k]))
                return gfail(g, "ic_custom_capture: repeated output or placeholder"), -1;
    }
    for (int i = 0; i < nin; i++)
        if (in[i] < 0 || in[i] >= base || gin[i] >= end) return gfail(g, "ic_custom_capture: bad input or gradient"), -1;
    for (ic_val v = base; v < end; v++) { /* the only inputs in the template: placeholders */
        if (g->nodes[v].op != IC_OP_INPUT) continue;
        bool isph = false;
        for (int k = 0; k < nout; k++) isph |= ph[k] == v;
        if (!isph) return gfail(g, "ic_custom_capture: a graph input in the template"), -1;
    }
    if (first < 0) return gfail(g, "ic_custom_capture: no differentiable output"), -1;
    ic_custom *cs = realloc(g->custom, sizeof *cs * (size_t)(g->ncustom + 1));
    if (cs == NULL) return gfail(g, "out of memory"), -1;
    g->custom = cs;
    ic_custom c = {.n = end - base, .base = base, .nout = nout, .nin = nin, .first = first};
    c.nodes = malloc(sizeof(ic_node) * (size_t)(c.n + 1));
    c.out = dup_vals(out, nout);
    c.ph = dup_vals(ph, nout);
    c.in = dup_vals(in, nin);
    c.gin = dup_vals(gin, nin);
    if (!c.nodes || !c.out || !c.ph || !c.in || !c.gin) {
        free(c.nodes);
        free(c.out);
        free(c.ph);
        free(c.in);
        free(c.gin);
        return gfail(g, "out of memory"), -1;
    }
    if (c.n) memcpy(c.nodes, g->nodes + base, sizeof(ic_node) * (size_t)c.n);
    for (ic_val v = base; v < end; v++)
        if (g->nodes[v].op != IC_OP_INPUT && g->nodes[v].op != IC_OP_SCALAR) g->nops--;
    g->n = base;
    g->ninputs = ninputs;
    g->custom[g->ncustom++] = c;
    return 0;
}

IC_API void ic_custom_abort(ic_graph *g, int base, int ninputs) {
    if (base < 0 || base > g->n || ninputs < 0 || ninputs > g->ninputs) return;
    for (int i = 0; i < ninputs; i++)
        if (g->inputs[i] >= base) return; /* (never: the caller's inputs come first) */
    for (ic_val v = base; v < g->n; v++)
        if (g->nodes[v].op != IC_OP_INPUT && g->nodes[v].op != IC_OP_SCALAR) g->nops--;
    g->n = base;
    g->ninputs = ninputs;
    if (g->nograd_depth > 0 && g->nograd_from > base) g->nograd_from = base;
}

/* the record whose lowest output is v, or NULL */
static const ic_custom *custom_at(const ic_graph *g, ic_val v) {
    for (int i = 0; i < g->ncustom; i++)
        if (g->custom[i].first == v) return &g->custom[i];
    return NULL;
}

/* the template, copied into the backward graph once the outputs' gradients are final */
static void custom_vjp(ag *a, const ic_custom *c) {
    bool any = false, anyin = false;
    for (int k = 0; k < c->nout; k++) any |= c->out[k] >= 0 && a->grad[c->out[k]] >= 0;
    for (int i = 0; i < c->nin; i++) anyin |= a->need[c->in[i]] && c->gin[i] >= 0;
    if (!any || !anyin) return; /* eager calls no backward where no gradient flows */
    memset(a->cur, 0, sizeof *a->cur * a->nw);
    for (int k = 0; k < c->nout; k++)
        for (size_t w = 0; c->out[k] >= 0 && w < a->nw; w++) a->cur[w] |= a->dep[(size_t)c->out[k] * a->nw + w];
    ic_val *map = malloc(sizeof *map * (size_t)(c->n + 1));
    if (map == NULL) return ag_fail(a, "out of memory");
    for (int t = 0; t < c->n; t++) map[t] = -1;
    for (int k = 0; k < c->nout; k++) {
        const ic_meta *pm = &c->nodes[c->ph[k] - c->base].meta;
        ic_val gk = c->out[k] >= 0 ? a->grad[c->out[k]] : -1;
        if (gk < 0) gk = zeros(a, pm->dtype, pm->ndim, pm->sizes);
        else if (BM(a, gk)->dtype != pm->dtype) gk = ic_cast(a->b, gk, pm->dtype);
        map[c->ph[k] - c->base] = gk;
    }
    for (int t = 0; t < c->n && !a->failed; t++) {
        if (map[t] >= 0 || c->nodes[t].op == IC_OP_INPUT) continue;
        ic_node nd = c->nodes[t];
        for (int k = 0; k < IC_NIN; k++) {
            ic_val x = nd.in[k];
            if (x < 0) continue;
            nd.in[k] = x < c->base ? ag_fwd(a, x) : map[x - c->base];
            if (nd.in[k] < 0) ag_fail(a, "autograd.Function backward: operand %d of %s", k, ic_op_name(nd.op));
        }
        if (a->failed) break;
        nd.nograd = 0;
        map[t] = ic_graph_append_node(a->b, &nd);
        if (map[t] < 0) ag_fail(a, "autograd.Function backward: %s", ic_graph_error(a->b) ? ic_graph_error(a->b) : "copy failed");
    }
    for (int i = 0; i < c->nin && !a->failed; i++) {
        ic_val gv = c->gin[i];
        if (gv < 0 || !a->need[c->in[i]]) continue;
        ag_acc(a, c->in[i], gv < c->base ? ag_fwd(a, gv) : map[gv - c->base]);
    }
    free(map);
}

/* ---- stop-gradient marks ---------------------------------------------------------------- */
IC_API void ic_set_grad_enabled(ic_graph *g, int on) {
    if (!on) {
        if (g->nograd_depth++ == 0) g->nograd_from = g->n;
        return;
    }
    if (g->nograd_depth <= 0) return;
    if (--g->nograd_depth == 0)
        for (int v = g->nograd_from; v < g->n; v++) g->nodes[v].nograd = 1;
}

IC_API ic_val ic_detach(ic_graph *g, ic_val v) {
    if (g->err) return IC_NONE;
    const ic_meta *m = ic_value_meta(g, v);
    if (m == NULL) return ic_cast(g, v, IC_F32); /* the builder reports the bad handle */
    /* every node the cast makes: of a channels-last value it is permute(cast(NHWC value))
     * (graph.c cl_rewrite), and an elementwise op on it reads the inner cast, not the permute */
    int first = g->n;
    ic_val r = ic_cast(g, v, m->dtype);
    if (r >= 0)
        for (int u = first; u < g->n; u++) g->nodes[u].nograd = 1;
    return r;
}

IC_API ic_val ic_grad_leaf(ic_graph *g, ic_val v) {
    ic_val r = ic_detach(g, v);
    if (r >= 0) g->nodes[r].leaf = 1;
    return r;
}

IC_API int ic_value_is_grad_leaf(const ic_graph *g, ic_val v) {
    return v >= 0 && v < g->n && g->nodes[v].leaf;
}

static bool node_nograd(const ic_graph *g, ic_val v) {
    return g->nodes[v].nograd || (g->nograd_depth > 0 && v >= g->nograd_from);
}

/* need[v] for every node: carries a gradient from an input with req */
static void compute_need(const ic_graph *g, const unsigned char *req, unsigned char *need, int upto) {
    for (ic_val v = 0; v < upto; v++) {
        const ic_node *n = &g->nodes[v];
        need[v] = 0;
        if (!ic_is_float(n->meta.dtype)) continue;
        if (n->op == IC_OP_INPUT) {
            need[v] = (req[n->index] & IC_AG_REQ) != 0;
            continue;
        }
        if (n->leaf) { /* ic_grad_leaf: requires grad, passes none */
            need[v] = 1;
            continue;
        }
        if (node_nograd(g, v)) continue;
        for (int k = 0; k < IC_NIN; k++)
            if (n->in[k] >= 0 && need[n->in[k]]) need[v] = 1;
    }
    /* an autograd.Function's outputs (built from its forward with grad off) require grad
     * where one of its inputs does; what reads them after, too */
    if (g->ncustom == 0) return;
    for (ic_val v = 0; v < upto; v++) {
        const ic_node *n = &g->nodes[v];
        if (n->op == IC_OP_INPUT || !ic_is_float(n->meta.dtype) || node_nograd(g, v)) continue;
        bool nd = need[v] != 0;
        for (int i = 0; i < g->ncustom && !nd; i++) {
            const ic_custom *c = &g->custom[i];
            for (int k = 0; k < c->nout && !nd; k++)
                if (c->out[k] == v)
                    for (int j = 0; j < c->nin && !nd; j++) nd = need[c->in[j]] != 0;
        }
        for (int k = 0; k < IC_NIN && !nd; k++)
            if (n->in[k] >= 0 && need[n->in[k]]) nd = true;
        need[v] = nd;
    }
}

/* ---- what eager's autograd keeps (its version is checked at backward) ------------------------
 * Eager saves an operand for the derivative of another operand that requires grad
 * (derivatives.yaml: mul saves other for self's gradient, mm saves mat2 for self's), and some
 * nodes save their result (exp, tanh, sigmoid, relu, sqrt: the gradient is built from it).
 * An in-place update of a saved tensor before the backward makes eager's backward raise
 * ("one of the variables needed for gradient computation has been modified by an inplace
 * operation"). precise: only what eager is known to save (a missed tensor leaves eager's
 * error out; a wrong one would raise where eager does not); else conservative: any operand
 * a derivative may read (an update then leaves the graph to eager, which decides). */
static bool op_saves_input(ic_op op) {
    switch (op) {
    case IC_OP_SIN: case IC_OP_COS: case IC_OP_TAN: case IC_OP_LOG: case IC_OP_LOG1P:
    case IC_OP_LOG2: case IC_OP_ATAN: case IC_OP_ERF: case IC_OP_GELU: case IC_OP_GELU_TANH:
    case IC_OP_SILU: case IC_OP_ABS: case IC_OP_MAXIMUM: case IC_OP_MINIMUM:
        return true;
    default:
        return false;
    }
}

static bool op_saves_result(ic_op op) {
    switch (op) {
    case IC_OP_EXP: case IC_OP_EXP2: case IC_OP_EXPM1: case IC_OP_TANH: case IC_OP_SIGMOID:
    case IC_OP_RELU: case IC_OP_SQRT: case IC_OP_RSQRT: case IC_OP_RECIPROCAL:
        return true;
    default:
        return false;
    }
}

/* operands of a node that pass no gradient and that no derivative reads */
static bool op_saves_nothing(const ic_node *n) {
    switch (n->op) {
    case IC_OP_ADD: case IC_OP_SUB: case IC_OP_NEG: case IC_OP_CAST: case IC_OP_RESHAPE:
    case IC_OP_PERMUTE: case IC_OP_EXPAND: case IC_OP_SLICE: case IC_OP_CAT: case IC_OP_SUM:
    case IC_OP_MEAN: case IC_OP_FLOOR: case IC_OP_CEIL: case IC_OP_ROUND: case IC_OP_TRUNC:
    case IC_OP_SIGN:
        return true;
    default:
        return false;
    }
}

static bool needs(const ic_graph *g, const unsigned char *need, ic_val v) {
    return v >= 0 && g->nodes[v].op != IC_OP_SCALAR && need[v];
}

/* node u (carrying a gradient) keeps its operand k */
static bool keeps_operand(const ic_graph *g, const unsigned char *need, ic_val u, int k, bool precise) {
    const ic_node *n = &g->nodes[u];
    ic_val x = n->in[k];
    if (n->op == IC_OP_INDEX_SELECT && k == 0) return false; /* only the index */
    if (n->op == IC_OP_MUL) { /* saved for the other operand's gradient */
        ic_val o = n->in[1 - k];
        return o == x || needs(g, need, o);
    }
    if (n->op == IC_OP_DIV) return k == 1 ? needs(g, need, n->in[0]) || needs(g, need, n->in[1]) : needs(g, need, n->in[1]);
    if (n->op == IC_OP_POW) return k == 0 || needs(g, need, n->in[1]);
    if (n->op == IC_OP_EXTERN) {
        int a = -1, b = -1; /* the matmul operands: each kept for the other's gradient */
        switch (n->ext_kind) {
        case IC_EXT_MM: case IC_EXT_BMM: case IC_EXT_MATMUL: case IC_EXT_LINEAR: a = 0, b = 1; break;
        case IC_EXT_ADDMM: case IC_EXT_BADDBMM: a = 1, b = 2; break;
        case IC_EXT_CONV: return k <= 1;
        case IC_EXT_SDPA: return k <= 2;
        default: return !precise;
        }
        if (k == a) return needs(g, need, n->in[b]);
        if (k == b) return needs(g, need, n->in[a]);
        return false;
    }
    if (op_saves_input(n->op)) return true;
    return !precise && !op_saves_nothing(n);
}

static int saved_by(const ic_graph *g, const unsigned char *need, ic_val v, bool precise, int upto) {
    if (v < 0 || v >= upto) return 0;
    if (!ic_is_float(g->nodes[v].meta.dtype)) { /* an index or mask: kept by what reads it for a gradient */
        for (ic_val u = v + 1; u < upto; u++)
            if (need[u] && !node_nograd(g, u))
                for (int k = 0; k < IC_NIN; k++)
                    if (g->nodes[u].in[k] == v) return 1;
        return 0;
    }
    if (need[v] && g->nodes[v].op != IC_OP_INPUT && op_saves_result(g->nodes[v].op) && !node_nograd(g, v)) return 1;
    /* a torch.autograd.Function's backward (its template) reads v: what its forward saved
     * (ctx.save_for_backward), kept by eager's node when one of its outputs needs a gradient */
    for (int i = 0; i < g->ncustom; i++) {
        const ic_custom *c = &g->custom[i];
        if (v >= c->base) continue; /* (template operands >= base are the template's own values) */
        bool live = false;
        for (int k = 0; k < c->nout && !live; k++) live = c->out[k] >= 0 && c->out[k] < upto && need[c->out[k]];
        for (int j = 0; live && j < c->n; j++)
            for (int k = 0; k < IC_NIN; k++)
                if (c->nodes[j].op != IC_OP_INPUT && c->nodes[j].in[k] == v) return 1;
    }
    for (ic_val u = v + 1; u < upto; u++) {
        if (!need[u] || node_nograd(g, u)) continue;
        for (int k = 0; k < IC_NIN; k++)
            if (g->nodes[u].in[k] == v && keeps_operand(g, need, u, k, precise)) return 1;
    }
    return 0;
}

/* v feeds a mean, directly or through a shift (x - x[..., :1]) or a cast: the statistics of
 * a layer, batch or group norm, whose eager kernels keep their input when a gradient passes
 * (the graph's decomposition cannot say; the backward reads v only if one does) */
static bool normed(const ic_graph *g, ic_val v, int depth) {
    for (ic_val u = v + 1; u < g->n; u++) {
        const ic_node *n = &g->nodes[u];
        if (n->in[0] != v && n->in[1] != v) continue;
        if (n->op == IC_OP_MEAN) return true;
        if (depth > 0 && (n->op == IC_OP_SUB || n->op == IC_OP_CAST) && normed(g, u, depth - 1)) return true;
    }
    return false;
}

IC_API int ic_value_saved_for_backward(const ic_graph *g, ic_val v, const unsigned char *req, int precise, int upto) {
    if (upto < 0 || upto > g->n) upto = g->n;
    if (v < 0 || v >= upto) return 0;
    unsigned char *need = malloc((size_t)g->n + 1);
    if (need == NULL) return 0;
    compute_need(g, req, need, g->n);
    int r = saved_by(g, need, v, precise != 0, upto);
    free(need);
    return r;
}

IC_API ic_val ic_graph_output_value(const ic_graph *g, int j) {
    return j >= 0 && j < g->noutputs ? g->outputs[j] : IC_NONE;
}

IC_API int ic_value_requires_grad(const ic_graph *g, ic_val v, const unsigned char *req) {
    if (v < 0 || v >= g->n) return 0;
    unsigned char *need = malloc((size_t)v + 1);
    if (need == NULL) return 0;
    compute_need(g, req, need, v + 1);
    int r = need[v];
    free(need);
    return r;
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
