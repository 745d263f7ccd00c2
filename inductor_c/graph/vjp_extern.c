/* vjp_extern.c — backward rules of the externs (matmuls, conv, attention, gather/scatter,
 * cumsum, linear algebra) and the shape inference of the backward externs they call
 * (ic_train_extern: IC_EXT_CONV_BWD and later). The table is graph/vjp.h; the rule
 * language and builders graph/ag.h; the driver graph/autograd.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "ag.h"

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
/* the gradients of operands 0 and 1 of n by one backward extern (kind; operands in, params
 * p[0..np) then `which` in p[np]): both from one call (which = 2: one flat buffer, sliced
 * apart here), or the one needed (which = 0 or 1) */
static void grads_of_two(ag *a, const ic_node *n, ic_extern_kind kind, ic_val *in, int64_t *p, int np) {
    if (NEED(0) && NEED(1)) {
        p[np] = 2;
        ic_val flat = ext(a, kind, 3, in, np + 1, p);
        int64_t off = 0;
        for (int i = 0; i < 2 && flat >= 0; i++) {
            const ic_meta *m = &FN(a, n->in[i])->meta;
            int64_t k = ic_numel(m);
            ag_acc(a, n->in[i], ic_reshape(a->b, ic_slice(a->b, flat, 0, off, off + k, 1), m->ndim, m->sizes));
            off += k;
        }
        if (flat < 0) ag_acc(a, n->in[0], flat); /* reports the failure */
        return;
    }
    for (int which = 0; which < 2; which++)
        if (NEED(which)) {
            p[np] = which;
            ag_acc(a, n->in[which], ext(a, kind, 3, in, np + 1, p));
        }
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
    grads_of_two(a, n, IC_EXT_CONV_BWD, in, p, n->nparams);
    if (n->in[2] >= 0 && NEED(2)) {
        int ch = cl ? n->meta.ndim - 1 : 1;
        uint32_t mask = 0;
        for (int i = 0; i < n->meta.ndim; i++)
            if (i != ch) mask |= 1u << i;
        ag_acc(a, n->in[2], ic_reduce(a->b, IC_OP_SUM, g, mask, 0, -1));
    }
}

/* grid_sample (x, grid; params: interpolation, padding, align_corners): ATen's backward kernel
 * as one extern call giving x's and grid's gradients (one flat buffer sliced apart, as conv's) */
RULE(vjp_grid_sample) {
    NODE;
    int64_t p[4] = {n->params[0], n->params[1], n->params[2], 2};
    ic_val in[3] = {g, X(0), X(1)};
    grads_of_two(a, n, IC_EXT_GRID_SAMPLE_BWD, in, p, 3);
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
    /* and without statistics, operand 4 (a mask) bool or q's dtype too */
    const int same = kind == IC_EXT_SDPA_BWD && nparams == 2 ? 5 : kind == IC_EXT_SDPA_BWD ? 4 : nin;
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
    } else if (kind == IC_EXT_GRID_SAMPLE_BWD) {
        int64_t which = nparams == 4 ? params[3] : -1;
        if (nin != 3 || which < 0 || which > 2) return gfail(g, "grid_sample_bwd: bad operands or params");
        if (which == 2) { /* both: 1-D [numel x + numel grid], dx then dgrid */
            n.meta.dtype = gm->dtype;
            n.meta.ndim = 1;
            n.meta.sizes[0] = ic_numel(ic_value_meta(g, in[1])) + ic_numel(ic_value_meta(g, in[2]));
        } else {
            n.meta = *ic_value_meta(g, in[1 + (int)which]);
        }
    } else if (kind == IC_EXT_SDPA_BWD) {
        if (!((nin == 4 || nin == 5) && nparams == 1) && !((nin == 6 || nin == 7) && nparams == 2 && params[1] == 1))
            return gfail(g, "sdpa_bwd: bad operands or params");
        if (nin == 5 || nin == 7) {
            const ic_dtype mt = ic_value_meta(g, in[nin - 1])->dtype;
            if (mt != IC_BOOL && mt != ic_value_meta(g, in[1])->dtype) return gfail(g, "sdpa_bwd: mask of another dtype");
        }
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
 * extern call computes dq, dk, dv (flat, one buffer), sliced apart here, a mask that needs no
 * gradient included (ATen's kernel eager's dispatcher picks: csrc/aten_bridge.cpp sdpa_bwd);
 * a float mask that needs one (a learned position bias) or symbolic sizes: the decomposition
 * below (ATen's kernels give no mask gradient). The decomposition materializes [.., L, S]
 * several times over in the graph: pixtral's tiny config in training (4 heads, L = S = 8192)
 * spent 43-67 s in its compiled backward where eager's fused CPU kernel takes a few seconds. */
/* attention with a mask: the backward decomposed in the graph (the probabilities recomputed
 * from q, k and the mask, [.., L, S] materialized): dV = P^T g, dP = g V^T,
 * dS = P (dP - rowsum(dP P)), dQ = scale dS K, dK = scale dS^T Q, dMask = dS */
static void sdpa_masked_bwd(ag *a, const ic_node *n, ic_val g) {
    double scale = n->num;
    ic_val q = X(0), k = X(1), v = X(2), mk = X(3);
    /* 16-bit operands: computed in float32, as eager's fused kernels accumulate (in bf16 the
     * rounded P and dP made dq 5x less exact than eager's kernel, against a float64 run: H100,
     * test_training_sdpa2::test_cuda_masked_grads_match_eager); ag_acc casts the gradients back */
    const int dt = BM(a, q)->dtype;
    if (dt == IC_F16 || dt == IC_BF16) {
        q = ic_cast(a->b, q, IC_F32), k = ic_cast(a->b, k, IC_F32), v = ic_cast(a->b, v, IC_F32);
        g = ic_cast(a->b, g, IC_F32);
        if (BM(a, mk)->dtype != IC_BOOL) mk = ic_cast(a->b, mk, IC_F32);
    }
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
    const bool masked = n->in[3] >= 0;
    bool dyn = false;
    for (int i = 0; i < (masked ? 4 : 0); i++) dyn |= FN(a, n->in[i])->meta.dyn != 0;
    if (masked && (NEED(3) || dyn)) return sdpa_masked_bwd(a, n, g);
    ic_val in[5] = {g, X(0), X(1), X(2), masked ? X(3) : IC_NONE};
    ic_val flat = ic_extern(a->b, IC_EXT_SDPA_BWD, masked ? 5 : 4, in, 1, n->params, n->num, 1.0);
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
    if (n->nparams == 3) return ag_fail(a, "backward of scatter_reduce not supported"); /* (refused when traced) */
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
/* a complex ATen call (dynamo_hook/ops_complex.c, torchc/_complex_ops.py): each operand's
 * gradient is one more CUSTOM extern, keyed by ic_custom_vjp_key(key, k), that runs ATen's own
 * derivative of the call (its operands and the output's gradient in, the operand's gradient
 * out: torch's conjugate Wirtinger convention by construction). A custom op with only real
 * values (torch.library ops), or one that writes an operand, has no rule. */
RULE(vjp_custom) {
    NODE;
    int nin = 0;
    while (nin < IC_NIN && n->in[nin] >= 0) nin++;
    bool cx = ic_dtype_is_complex(n->meta.dtype);
    for (int k = 0; k < nin; k++) cx |= ic_dtype_is_complex(FN(a, n->in[k])->meta.dtype);
    if (!cx) return ag_fail(a, "no backward rule for custom op (its autograd formula is not captured)");
    if (n->nparams < 4 || n->params[1] != 0) return ag_fail(a, "no backward rule for a complex op that writes an operand");
    if (nin + 1 > IC_NIN) return ag_fail(a, "no backward rule for a complex op of %d operands", nin);
    ic_val in[IC_NIN];
    for (int k = 0; k < nin; k++) in[k] = X(k);
    in[nin] = g;
    for (int k = 0; k < nin; k++) {
        if (!NEED(k)) continue;
        const ic_meta *m = &FN(a, n->in[k])->meta;
        int64_t p[IC_EXT_MAXP];
        if (4 + m->ndim > IC_EXT_MAXP) return ag_fail(a, "no backward rule for a complex op on a %d-d operand", m->ndim);
        p[0] = ic_custom_vjp_key(n->params[0], k);
        p[1] = 0;
        p[2] = m->dtype;
        p[3] = m->ndim;
        for (int i = 0; i < m->ndim; i++) p[4 + i] = m->sizes[i];
        ag_acc(a, n->in[k], ext(a, IC_EXT_CUSTOM, nin + 1, in, 4 + m->ndim, p));
    }
}
/* linear algebra (graph/linalg.c): exp's VJP is its own extern, L(Aᴴ, g) (csrc/matrix_exp.cpp);
 * X = A⁻¹B: gB = A⁻ᵀ g (a solve with the transposed view of A), gA = -gB Xᵀ */
RULE(vjp_matrix_exp) {
    NODE;
    if (!NEED(0)) return;
    ic_val in[2] = {X(0), g};
    ag_acc(a, n->in[0], ext(a, IC_EXT_MATRIX_EXP_VJP, 2, in, 0, NULL));
}
/* solve_triangular (params left, upper, unitriangular, 1): X = A⁻¹B (left) or B A⁻¹; gB is
 * the solve with Aᵀ (the other triangle), gA = -gB Xᵀ (left) or -Xᵀ gB, kept on the
 * triangle the solve reads (off its diagonal when unitriangular), as eager's */
static void vjp_solve_triangular(ag *a, ic_val v, ic_val g) {
    NODE;
    int64_t left = n->params[0] != 0, upper = n->params[1] != 0, unit = n->params[2] != 0;
    int64_t q[4] = {left, !upper, unit, 1};
    ic_val in[2] = {transpose(a, X(0)), g};
    ic_val gb = ext(a, IC_EXT_SOLVE, 2, in, 4, q);
    if (NEED(0)) {
        ic_val xt = transpose(a, OUT);
        ic_val i2[2] = {left ? gb : xt, left ? xt : gb};
        ic_val ga = mulk(a, ext(a, IC_EXT_MATMUL, 2, i2, 0, NULL), -1.0);
        const ic_meta *m = BM(a, ga);
        int64_t R = m->sizes[m->ndim - 2], C = m->sizes[m->ndim - 1];
        ic_dtype dt = m->dtype;
        ic_val rows = ic_reshape(a->b, ic_arange(a->b, R, 0, 1, IC_I64), 2, (int64_t[]){R, 1});
        ic_val cols = ic_reshape(a->b, ic_arange(a->b, C, 0, 1, IC_I64), 2, (int64_t[]){1, C});
        ic_val diff = bin(a, IC_OP_SUB, cols, rows); /* col - row */
        ic_val keep = upper ? bin(a, IC_OP_GE, diff, ic_scalar(a->b, (double)unit, IC_I64))
                            : bin(a, IC_OP_LE, diff, ic_scalar(a->b, -(double)unit, IC_I64));
        ag_acc(a, n->in[0], ic_where(a->b, keep, ga, zeros(a, dt, 0, NULL)));
    }
    ACC(1, gb);
}

RULE(vjp_solve) {
    NODE;
    if (n->nparams == 4) {
        vjp_solve_triangular(a, v, g);
        return;
    }
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
