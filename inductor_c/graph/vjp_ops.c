/* vjp_ops.c — backward rules of the graph ops: pointwise (binary and unary), where and cast,
 * reductions, views and index maps. The table is graph/vjp.h; the rule language (X, OUT,
 * NEED, ACC, NODE) and builders graph/ag.h; the driver graph/autograd.c. Rules follow eager's
 * formulas (torch/csrc/autograd/FunctionsManual.cpp); they build graph nodes only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "ag.h"

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
        /* eager: -grad * self.div(other, rounding_mode=trunc|floor); floor is floor_divide's
         * own rounding (NaN for an infinite self), not floor(self / other) */
        ic_val q = n->op == IC_OP_FMOD ? un(a, IC_OP_TRUNC, bin(a, IC_OP_DIV, X(0), X(1)))
                                       : bin(a, IC_OP_FLOOR_DIVIDE, X(0), X(1));
        ag_acc(a, n->in[1], mul(a, un(a, IC_OP_NEG, g), q));
    }
}
RULE(vjp_atan2) {
    NODE;
    /* eager's atan2_backward: no gradient where self^2 + other^2 is 0 (at the origin) */
    ic_val den = bin(a, IC_OP_ADD, mul(a, X(0), X(0)), mul(a, X(1), X(1)));
    ic_val r = ic_where(a->b, bin(a, IC_OP_EQ, den, num(a, 0.0)), num(a, 0.0), un(a, IC_OP_RECIPROCAL, den));
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
    /* derivatives.yaml's forms: asin grad * (1 - x^2)^-1/2, acos its negation, asinh
     * grad * (x^2 + 1)^-1/2, acosh grad * (x^2 - 1)^-1/2, atanh grad / (1 - x^2) */
    case IC_OP_ASIN: case IC_OP_ACOS: {
        ic_val rs = un(a, IC_OP_RSQRT, bin(a, IC_OP_SUB, num(a, 1.0), mul(a, X(0), X(0))));
        r = mul(a, g, n->op == IC_OP_ASIN ? rs : un(a, IC_OP_NEG, rs));
        break;
    }
    case IC_OP_ASINH: r = mul(a, g, un(a, IC_OP_RSQRT, bin(a, IC_OP_ADD, mul(a, X(0), X(0)), num(a, 1.0)))); break;
    case IC_OP_ACOSH: r = mul(a, g, un(a, IC_OP_RSQRT, bin(a, IC_OP_SUB, mul(a, X(0), X(0)), num(a, 1.0)))); break;
    case IC_OP_ATANH: r = bin(a, IC_OP_DIV, g, bin(a, IC_OP_SUB, num(a, 1.0), mul(a, X(0), X(0)))); break;
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
