/* ops_reduce.c — reductions and normalizations: sum/mean/amax & co, max/min with indices,
 * softmax, var/std, logsumexp, any/all, norm, layer/batch/group norm, cumsum, sort, argmax.
 */
#include "ops_internal.h"

int sym_h_reduce(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    int nd = sym_ndim_of(t, p[0]->val), keep = 0, dt = -1;
    uint32_t mask;
    /* eager's argument parser: a bool is no dim (nor a dim list whose first item is one);
     * prod takes one int dim only; sum/mean/prod have no keepdim without a dim */
    const var *d1 = p[1];
    int seq = d1 && ((d1->kind == V_CONST && (PyTuple_Check(d1->obj) || PyList_Check(d1->obj))) ||
                     d1->kind == V_SEQ);
    PyObject *first = !d1 ? NULL : d1->kind == V_CONST && seq ? (PySequence_Fast_GET_SIZE(d1->obj) ? PySequence_Fast_GET_ITEM(d1->obj, 0) : NULL)
                      : d1->kind == V_SEQ ? (d1->n && d1->items[0].kind == V_CONST ? d1->items[0].obj : NULL)
                      : d1->kind == V_CONST ? d1->obj : NULL;
    if (first && PyBool_Check(first))
        return sym_fail(t, "%s: a bool dim (eager raises TypeError)", d->name);
    if (d->op == IC_OP_PROD && p[1] && (seq || sym_is_none(p[1])))
        return sym_fail(t, "prod: dim must be one int (eager raises TypeError)");
    if (d->op != IC_OP_AMAX && d->op != IC_OP_AMIN && p[1] == NULL && p[2] != NULL)
        return sym_fail(t, "%s: keepdim without dim (eager raises TypeError)", d->name);
    if (sym_dims_mask(t, p[1], nd, &mask) < 0 || sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (p[3] && sym_get_dtype(t, p[3], &dt) < 0)
        return -1;
    if ((d->op == IC_OP_AMAX || d->op == IC_OP_AMIN) && sym_is_none(p[1]) && p[1] != NULL && 0)
        return -1;
    return sym_tensor_out(t, ic_reduce(t->g, (ic_op)d->op, p[0]->val, mask, keep, dt), out);
}

/* max(x) / max(x, other) / max(x, dim) */
int sym_h_max_min(trace *t, const opdef *d, var **p, var *out) {
    if (p[1] == NULL) {
        if (p[0]->kind != V_TENSOR)
            return sym_fail(t, "%s of a non-tensor", d->name);
        return sym_tensor_out(t, ic_reduce(t->g, d->op == IC_OP_MAXIMUM ? IC_OP_AMAX : IC_OP_AMIN,
                                       p[0]->val, 0, 0, -1), out);
    }
    if (p[1]->kind == V_TENSOR) {
        opdef b = *d;
        return sym_h_binary(t, &b, p, out);
    }
    /* max(x, dim, keepdim=False): (values, indices) = (amax, argmax) over dim */
    long long dd;
    int dim, keep = 0, nd = sym_ndim_of(t, p[0]->val);
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    if (sym_get_int(t, p[1], &dd, "dim") < 0 || sym_norm_dim(t, dd, nd, &dim) < 0 ||
        sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (nd == 0)
        return sym_fail(t, "%s(dim) of a 0-d tensor not supported yet", d->name);
    if (sym_metap(t, p[0]->val)->sizes[dim] == 0)
        return sym_fail(t, "%s(dim) over an empty dim (eager will raise)", d->name);
    int mx = d->op == IC_OP_MAXIMUM;
    ic_val v, i;
    if (sym_value_requires_grad(t, p[0]->val)) {
        /* eager's gradient goes to the one element the index names (amax's is shared among
         * ties): the values are the input gathered at the indices */
        ic_meta m = *sym_metap(t, p[0]->val);
        int64_t prm[1] = {dim};
        ic_val ik = ic_reduce(t->g, mx ? IC_OP_ARGMAX : IC_OP_ARGMIN, p[0]->val, 1u << dim, 1, -1);
        ic_val in[2] = {p[0]->val, ik};
        v = ik < 0 ? IC_NONE : ic_extern(G, IC_EXT_GATHER, 2, in, 1, prm, 1, 1);
        i = ik;
        if (!keep && v >= 0) {
            int64_t sz[IC_MAX_DIMS];
            for (int a = 0, b = 0; a < m.ndim; a++)
                if (a != dim)
                    sz[b++] = m.sizes[a];
            v = sym_reshape(t, v, m.ndim - 1, sz);
            i = sym_reshape(t, ik, m.ndim - 1, sz);
        }
    } else {
        v = ic_reduce(t->g, mx ? IC_OP_AMAX : IC_OP_AMIN, p[0]->val, 1u << dim, keep, -1);
        i = ic_reduce(t->g, mx ? IC_OP_ARGMAX : IC_OP_ARGMIN, p[0]->val, 1u << dim, keep, -1);
    }
    if (v < 0 || i < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s(dim) failed", d->name);
    return sym_return_pair(t, mx ? "max" : "min", v, i, out);
}

int sym_return_pair(trace *t, const char *name, ic_val values, ic_val indices, var *out) {
    PyObject *rt = PyImport_ImportModule("torch.return_types");
    PyObject *tp = rt ? PyObject_GetAttrString(rt, name) : NULL;
    Py_XDECREF(rt);
    if (tp == NULL || sym_keep(t, tp) == NULL) {
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return sym_fail(t, "torch.return_types.%s not found", name);
    }
    var *items = sym_alloc(t, 2);
    if (items == NULL || sym_tensor_out(t, values, &items[0]) < 0 || sym_tensor_out(t, indices, &items[1]) < 0)
        return -1;
    *out = sym_var(V_SEQ);
    out->n = 2;
    out->items = items;
    out->obj = tp;
    return 0;
}

static int softmax_common(trace *t, var **p, int dim_i, int dtype_i, int log, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "softmax of a non-tensor");
    if (sym_is_none(p[dim_i]))
        return sym_fail(t, "softmax without dim");
    long long dd;
    int dim, dt = -1;
    if (sym_get_int(t, p[dim_i], &dd, "dim") < 0 || sym_norm_dim(t, dd, sym_ndim_of(t, p[0]->val), &dim) < 0)
        return -1;
    if (p[dtype_i] && sym_get_dtype(t, p[dtype_i], &dt) < 0)
        return -1;
    ic_val x = p[0]->val;
    if (dt >= 0)
        x = ic_cast(t->g, x, (ic_dtype)dt);
    else if (ic_value_meta(t->g, x)->dtype < IC_F16)
        return sym_fail(t, "softmax of an integer tensor");
    /* f16/bf16: eager's kernels compute in f32 and round once (the output); so does this */
    ic_dtype io = ic_value_meta(t->g, x)->dtype;
    int half = io == IC_F16 || io == IC_BF16;
    if (half)
        x = ic_cast(t->g, x, IC_F32);
    uint32_t mask = sym_ndim_of(t, x) ? 1u << dim : 0;
    ic_val m = ic_reduce(t->g, IC_OP_AMAX, x, mask, 1, -1);
    if (sym_value_requires_grad(t, m)) /* training: the shift's gradient is zero (eager's formula) */
        m = ic_detach(t->g, m);
    ic_val s = ic_binary(t->g, IC_OP_SUB, x, m);
    ic_val e = ic_unary(t->g, IC_OP_EXP, s);
    ic_val z = ic_reduce(t->g, IC_OP_SUM, e, mask, 1, -1);
    ic_val r = log ? ic_binary(t->g, IC_OP_SUB, s, ic_unary(t->g, IC_OP_LOG, z))
                   : ic_binary(t->g, IC_OP_DIV, e, z);
    if (half)
        r = ic_cast(t->g, r, io);
    return sym_tensor_out(t, r, out);
}

int sym_h_softmax(trace *t, const opdef *d, var **p, var *out) {
    /* F.softmax(input, dim, _stacklevel, dtype); torch/Tensor: (input, dim, dtype) */
    int dtype_i = (d->where == W_F) ? 3 : 2;
    if (softmax_common(t, p, 1, dtype_i, d->op, out) < 0)
        return -1;
    ic_value_set_format(t->g, out->val, out->val, IC_MF_CONTIGUOUS); /* eager's kernel's layout */
    return 0;
}

/* torch._softmax_backward_data(grad_output, output, dim, input_dtype): softmax's gradient from
 * its output y, y * (g - sum(g * y, dim)), in input_dtype (a custom autograd.Function's backward
 * calls it; ATen's kernel computes a half input's in f32 and rounds once) */
int sym_h_softmax_backward_data(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR || p[1]->kind != V_TENSOR || p[2] == NULL || p[3] == NULL)
        return sym_fail(t, "%s: bad arguments", d->name);
    long long dd;
    int dim, dt;
    ic_val g = p[0]->val, y = p[1]->val;
    const ic_meta *mg = ic_value_meta(t->g, g), *my = ic_value_meta(t->g, y);
    if (sym_get_int(t, p[2], &dd, "dim") < 0 || sym_norm_dim(t, dd, sym_ndim_of(t, y), &dim) < 0 ||
        sym_get_dtype(t, p[3], &dt) < 0)
        return -1;
    if (mg->ndim != my->ndim || mg->dtype != my->dtype || mg->dtype < IC_F16 || mg->dyn || my->dyn)
        return sym_fail(t, "%s: grad_output and output of other shapes or dtypes, or symbolic (left to eager)",
                        d->name);
    for (int i = 0; i < mg->ndim; i++)
        if (mg->sizes[i] != my->sizes[i])
            return sym_fail(t, "%s: grad_output and output of other shapes (eager raises)", d->name);
    ic_dtype io = mg->dtype;
    if (io == IC_F16 || io == IC_BF16) {
        g = ic_cast(t->g, g, IC_F32);
        y = ic_cast(t->g, y, IC_F32);
    }
    uint32_t mask = sym_ndim_of(t, y) ? 1u << dim : 0;
    ic_val s = ic_reduce(t->g, IC_OP_SUM, ic_binary(t->g, IC_OP_MUL, g, y), mask, 1, -1);
    ic_val r = ic_binary(t->g, IC_OP_MUL, y, ic_binary(t->g, IC_OP_SUB, g, s));
    r = ic_cast(t->g, r, (ic_dtype)dt);
    return sym_tensor_out(t, r, out);
}

/* The statistics of x's rows over the dims of mask for layer_norm/group_norm: x - mean (*xc)
 * and the biased variance (*var), computed on the rows shifted by their first element x0
 * (detached; both are shift-invariant): xs = x - x0, m = mean(xs), var = mean((xs - m)^2),
 * xc = x - (x0 + m). Exact for constant rows (xs is 0 there), as eager's Welford moments are;
 * the unshifted float mean's rounding residue times rsqrt(eps) gave 4.5e-4 where eager gives 0
 * (layer_norm of a constant row of 17; fuzz seed 10962329). The (mean, variance) pair over xs
 * keeps the GPU's online split rows one launch, and the output pass reads x and the mean only,
 * as before the shift. Rows of a symbolic size are not shifted (a slice of a symbolic dim is
 * unsupported). */
static void norm_stats(trace *t, ic_val x, uint32_t mask, ic_val *xc, ic_val *var) {
    ic_meta m = *sym_metap(t, x);
    ic_val s = x;
    int shift = 1;
    for (int i = 0; i < m.ndim && shift; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (m.dyn && !sym_dim_static(m.dims[i]))
            shift = 0;
        else
            s = ic_slice(G, s, i, 0, m.sizes[i] < 1 ? m.sizes[i] : 1, 1);
    }
    ic_val xs = shift ? ic_binary(G, IC_OP_SUB, x, s = ic_detach(G, s)) : x;
    ic_val mu = ic_reduce(G, IC_OP_MEAN, xs, mask, 1, -1);
    ic_val d = ic_binary(G, IC_OP_SUB, xs, mu);
    *var = ic_reduce(G, IC_OP_MEAN, ic_binary(G, IC_OP_MUL, d, d), mask, 1, -1);
    *xc = shift ? ic_binary(G, IC_OP_SUB, x, ic_binary(G, IC_OP_ADD, s, mu)) : d;
}

/* layer_norm(input, normalized_shape, weight, bias, eps) over the trailing dims */
int sym_h_layer_norm(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR || p[1] == NULL)
        return sym_fail(t, "%s: bad arguments", d->name);
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long ns[IC_MAX_DIMS];
    int k;
    if (sym_get_ints(t, p[1], ns, IC_MAX_DIMS, &k, "normalized_shape") < 0)
        return -1;
    if (k > m->ndim || k == 0)
        return sym_fail(t, "%s: normalized_shape does not match", d->name);
    for (int i = 0; i < k; i++)
        if (m->sizes[m->ndim - k + i] != ns[i])
            return sym_fail(t, "%s: normalized_shape does not match (eager will raise)", d->name);
    if (m->dtype != IC_F32 && m->dtype != IC_F64 && m->dtype != IC_F16 && m->dtype != IC_BF16)
        return sym_fail(t, "%s of a non-float tensor", d->name);
    /* 16-bit inputs: computed in float32 (weight and bias too), rounded once at the end, as
     * ATen's kernels do */
    ic_dtype io = m->dtype, acc = io == IC_F64 ? IC_F64 : IC_F32;
    uint32_t mask = 0;
    for (int i = m->ndim - k; i < m->ndim; i++)
        mask |= 1u << i;
    int rms = d->op == 1;
    var *eps_v = rms ? p[3] : p[4];
    double eps = rms ? (acc == IC_F32 ? 1.1920928955078125e-07 : 2.220446049250313e-16) : 1e-5;
    if (sym_opt_num(t, eps_v, eps, &eps, "eps") < 0)
        return -1;
    ic_val x = io == acc ? p[0]->val : ic_cast(t->g, p[0]->val, acc), y;
    ic_val e = ic_scalar(t->g, eps, IC_F64);
    if (rms) {
        ic_val ms = ic_reduce(t->g, IC_OP_MEAN, ic_binary(t->g, IC_OP_MUL, x, x), mask, 1, -1);
        y = ic_binary(t->g, IC_OP_MUL, x, ic_unary(t->g, IC_OP_RSQRT, ic_binary(t->g, IC_OP_ADD, ms, e)));
    } else {
        ic_val xc, var;
        norm_stats(t, x, mask, &xc, &var);
        y = ic_binary(t->g, IC_OP_MUL, xc, ic_unary(t->g, IC_OP_RSQRT, ic_binary(t->g, IC_OP_ADD, var, e)));
    }
    var *w = p[2], *b = rms ? NULL : p[3];
    if (!sym_is_none(w)) {
        if (w->kind != V_TENSOR)
            return sym_fail(t, "weight must be a tensor");
        y = ic_binary(t->g, IC_OP_MUL, y, io == acc ? w->val : ic_cast(t->g, w->val, acc));
    }
    if (!sym_is_none(b)) {
        if (b->kind != V_TENSOR)
            return sym_fail(t, "bias must be a tensor");
        y = ic_binary(t->g, IC_OP_ADD, y, io == acc ? b->val : ic_cast(t->g, b->val, acc));
    }
    if (sym_tensor_out(t, io == acc ? y : ic_cast(t->g, y, io), out) < 0)
        return -1;
    /* layer_norm's and rms_norm's kernels (rms_norm's fused one since torch 2.8) write a
     * contiguous result, whatever the input's layout */
    ic_value_set_format(t->g, out->val, out->val, IC_MF_CONTIGUOUS);
    return 0;
}

/* argmax/argmin(input, dim=None, keepdim=False) */
int sym_h_arg(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    int nd = sym_ndim_of(t, p[0]->val), keep = 0;
    uint32_t mask = 0;
    if (sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (!sym_is_none(p[1])) {
        long long x;
        int dim;
        if (sym_get_int(t, p[1], &x, "dim") < 0 || sym_norm_dim(t, x, nd, &dim) < 0)
            return -1;
        mask = nd ? 1u << dim : 0;
    } else if (keep) {
        return sym_fail(t, "%s(dim=None, keepdim=True) not supported", d->name);
    }
    return sym_tensor_out(t, ic_reduce(t->g, (ic_op)d->op, p[0]->val, mask, keep, -1), out);
}

/* s^pw (pw > 0; 0.5: sqrt) of a sum s >= 0 whose gradient is 0 where the result is 0, as eager's
 * std and norm backward give it (FunctionsManual.cpp std_backward and norm_backward:
 * masked_fill_(result == 0, 0)); a plain sqrt's gradient there is g / 0, and times the
 * operand's 0 a NaN. The same values (sqrt(+0) = +0; NaN stays NaN) */
static ic_val root_grad_masked(trace *t, ic_val s, double pw) {
    ic_val nz = ic_binary(G, IC_OP_NE, s, sym_num(t, 0.0));
    ic_val safe = ic_where(G, nz, s, sym_num(t, 1.0));
    ic_val r = pw == 0.5 ? ic_unary(G, IC_OP_SQRT, safe) : ic_binary(G, IC_OP_POW, safe, sym_num(t, pw));
    return ic_where(G, nz, r, sym_num(t, 0.0));
}

/* var/std(input, dim=None, *, correction=1, keepdim=False) and unbiased= */
int sym_h_var(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val;
    ic_meta m_copy = *sym_metap(t, x);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->dtype < IC_F16)
        return sym_fail(t, "%s of a non-float tensor", d->name);
    int nd = m->ndim, keep = 0;
    uint32_t mask;
    /* torch.var(x, True) means unbiased: a bool in the dim slot */
    var *dimv = p[1];
    double corr = 1.0;
    if (dimv && dimv->kind == V_CONST && PyBool_Check(dimv->obj)) {
        corr = dimv->obj == Py_True ? 1.0 : 0.0;
        dimv = NULL;
    }
    if (sym_dims_mask(t, dimv, nd, &mask) < 0 || sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (!sym_is_none(p[3])) {
        int ub;
        if (sym_get_bool(t, p[3], 1, &ub, "unbiased") < 0)
            return -1;
        corr = ub ? 1.0 : 0.0;
    }
    if (!sym_is_none(p[4]) && sym_opt_scalar(t, p[4], 1.0, &corr, "correction") < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        if (mask == 0 || (mask >> i & 1))
            n *= m->sizes[i];
    ic_dtype io = m->dtype; /* 16-bit floats: computed in float32 and rounded once, as eager */
    if (io == IC_F16 || io == IC_BF16)
        x = ic_cast(G, x, IC_F32);
    if (n > 0 && !m->dyn) {
        /* shifted by the first element of each reduced slice (no gradient: var is shift-
         * invariant): equal values give exactly 0, as eager's Welford does (a plain mean
         * of three equal floats can round, leaving a tiny positive variance) */
        ic_val x0 = x;
        for (int i = 0; i < nd && x0 >= 0; i++)
            if (mask == 0 || (mask >> i & 1))
                x0 = ic_slice(G, x0, i, 0, 1, 1);
        if (x0 >= 0)
            x = ic_binary(G, IC_OP_SUB, x, ic_detach(G, x0));
        if (x < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    }
    ic_val mu = ic_reduce(G, IC_OP_MEAN, x, mask, 1, -1);
    ic_val xc = ic_binary(G, IC_OP_SUB, x, mu);
    double denom = (double)n - corr;
    /* correction >= n: eager's M2 / 0 is inf where the slice's values differ, NaN where they are
     * equal (or hold a NaN or inf). The CPU kernel accumulates float's M2 in double, where the
     * squares of tiny differences (denormals) stay positive; in float they vanish (0 / 0 = NaN):
     * the sum of the differences' magnitudes tells the same apart instead */
    ic_val ss = denom <= 0 && t->device_type != TC_DEV_CUDA && !sym_value_requires_grad(t, x)
                    ? ic_reduce(G, IC_OP_SUM, ic_unary(G, IC_OP_ABS, xc), mask, keep, -1)
                    : ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_MUL, xc, xc), mask, keep, -1);
    ic_val v = ic_binary(G, IC_OP_DIV, ss, sym_num(t, denom > 0 ? denom : 0.0));
    if (d->op == 1) /* std */
        v = root_grad_masked(t, v, 0.5);
    return sym_tensor_out(t, io == IC_F16 || io == IC_BF16 ? ic_cast(G, v, io) : v, out);
}

/* logsumexp(input, dim, keepdim=False) */
int sym_h_logsumexp(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    /* eager: dim is required (missing or None raises TypeError) and an empty dim list raises a
     * RuntimeError: leave those calls to eager so they raise there */
    long long dims[IC_MAX_DIMS];
    int ndims = -1;
    if (!p[1] || sym_is_none(p[1]))
        return sym_fail(t, "logsumexp without dim (eager raises)");
    if (sym_get_ints(t, p[1], dims, IC_MAX_DIMS, &ndims, "dim") < 0)
        return -1;
    if (ndims == 0)
        return sym_fail(t, "logsumexp over dim=() (eager raises)");
    ic_val x = p[0]->val;
    if (ic_value_meta(G, x)->dtype < IC_F16)
        x = ic_cast(G, x, IC_F32);
    int keep = 0;
    uint32_t mask;
    if (sym_dims_mask(t, p[1], sym_ndim_of(t, x), &mask) < 0 || sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    ic_val m = ic_reduce(G, IC_OP_AMAX, x, mask, 1, -1);
    ic_val ms = ic_where(G, ic_unary(G, IC_OP_ISINF, m), sym_num(t, 0), m);
    if (sym_value_requires_grad(t, ms)) /* training: the shift's gradients cancel (eager: softmax) */
        ms = ic_detach(G, ms);
    ic_val s = ic_reduce(G, IC_OP_SUM, ic_unary(G, IC_OP_EXP, ic_binary(G, IC_OP_SUB, x, ms)), mask, keep, -1);
    ic_val msk = keep ? ms : ic_reduce(G, IC_OP_AMAX, ms, mask, 0, -1);
    return sym_tensor_out(t, ic_binary(G, IC_OP_ADD, ic_unary(G, IC_OP_LOG, s), msk), out);
}

/* any/all(input, dim=None, keepdim=False) */
int sym_h_anyall(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    int keep = 0;
    uint32_t mask;
    ic_val x = p[0]->val;
    if (sym_dims_mask(t, p[1], sym_ndim_of(t, x), &mask) < 0 || sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    ic_val nz = ic_cast(G, ic_binary(G, IC_OP_NE, x, sym_inum(t, 0)), IC_I32);
    long long dims[IC_MAX_DIMS];
    int ndims = -1;
    if (p[1] && !sym_is_none(p[1]) && sym_get_ints(t, p[1], dims, IC_MAX_DIMS, &ndims, "dim") < 0)
        return -1;
    /* eager: any/all of a uint8 tensor are uint8 (0/1), of anything else bool */
    ic_dtype rt = sym_metap(t, x)->dtype == IC_U8 ? IC_U8 : IC_BOOL;
    if (ndims == 0) { /* eager: any/all over dim=() reduce nothing (sum & co. reduce all dims),
                       * into a new contiguous tensor as any reduction's result */
        ic_val r = ic_cast(G, ic_cast(G, nz, IC_BOOL), rt);
        return r < 0 ? (sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name)) : dh_layout_copy(t, r, IC_MF_CONTIGUOUS, out);
    }
    /* a count, not amin/amax: those refuse a reduced dim of size 0, where all is true and
     * any false; all: no zero element, any: some non-zero element */
    ic_val hit = ic_cast(G, ic_binary(G, d->op ? IC_OP_EQ : IC_OP_NE, x, sym_inum(t, 0)), IC_I64);
    ic_val r = ic_reduce(G, IC_OP_SUM, hit, mask, keep, -1);
    r = ic_binary(G, d->op ? IC_OP_EQ : IC_OP_NE, r, sym_inum(t, 0));
    return sym_tensor_out(t, ic_cast(G, ic_cast(G, r, IC_BOOL), rt), out);
}

/* Tensor._is_all_true() / _is_any_true(): all/any of a whole bool tensor (torch._check_tensor_all
 * calls it); eager asserts the dtype is bool, so anything else is left to eager */
int sym_h_is_all_true(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    if (sym_metap(t, p[0]->val)->dtype != IC_BOOL)
        return sym_fail(t, "Tensor.%s of a non-bool tensor left to eager", d->name);
    var *q[3] = {p[0], NULL, NULL};
    return sym_h_anyall(t, d, q, out);
}

/* norm(input, p=2, dim=None, keepdim=False) / linalg.vector_norm(x, ord=2, dim, keepdim) */
int sym_h_norm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    double ord = 2.0;
    if (p[1] && !sym_is_none(p[1])) {
        if (p[1]->kind == V_CONST && PyUnicode_Check(p[1]->obj)) {
            if (d->op == 1 || PyUnicode_CompareWithASCIIString(p[1]->obj, "fro"))
                return sym_fail(t, "norm p=%R not supported", p[1]->obj);
        } else if (sym_opt_scalar(t, p[1], 2.0, &ord, "p") < 0) {
            return -1;
        }
    }
    if (d->op == 1 && ((p[4] && !sym_is_none(p[4])) || (p[5] && !sym_is_none(p[5]))))
        return sym_fail(t, "vector_norm with dtype/out left to eager");
    int keep = 0;
    uint32_t mask;
    ic_val x = p[0]->val;
    if (ic_value_meta(G, x)->dtype < IC_F16)
        return sym_fail(t, "norm of a non-float tensor");
    if (sym_dims_mask(t, p[2], sym_ndim_of(t, x), &mask) < 0 || sym_get_bool(t, p[3], 0, &keep, "keepdim") < 0)
        return -1;
    if (ord < 0 || isinf(ord)) { /* no identity: eager raises where a reduced dim is empty */
        ic_meta xm = *sym_metap(t, x);
        for (int i = 0; i < xm.ndim; i++)
            if ((mask == 0 || (mask >> i & 1)) && xm.sizes[i] == 0) /* mask 0: every dim */
                return sym_fail(t, "vector_norm of order %g over an empty dim (eager raises)", ord);
    }
    /* 16-bit inputs: ATen's norm kernels accumulate |x|^p in float32 and round the norm once
     * (the squares rounded to bf16 first made it an ulp or more off, p = 0.5 by thousands) */
    ic_dtype io = ic_value_meta(G, x)->dtype;
    int half = io == IC_F16 || io == IC_BF16;
    if (half)
        x = ic_cast(G, x, IC_F32);
    ic_val a = ic_unary(G, IC_OP_ABS, x), r;
    if (ord == 2.0)
        r = root_grad_masked(t, ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_MUL, x, x), mask, keep, -1), 0.5);
    else if (ord == 1.0)
        r = ic_reduce(G, IC_OP_SUM, a, mask, keep, -1);
    else if (isinf(ord))
        r = ic_reduce(G, ord > 0 ? IC_OP_AMAX : IC_OP_AMIN, a, mask, keep, -1);
    else if (ord == 0.0) {
        r = ic_reduce(G, IC_OP_SUM, ic_cast(G, ic_binary(G, IC_OP_NE, x, sym_num(t, 0)), ic_value_meta(G, x)->dtype), mask, keep, -1);
        if (r >= 0 && sym_value_requires_grad(t, x)) { /* eager's result requires grad, with a zero gradient: x
                                                         * joined by a where whose condition always holds */
            ic_val nan = ic_unary(G, IC_OP_ISNAN, r);
            ic_val all = ic_binary(G, IC_OP_LOGICAL_OR, ic_unary(G, IC_OP_LOGICAL_NOT, nan), nan);
            r = ic_where(G, all, r, ic_reduce(G, IC_OP_SUM, x, mask, keep, -1));
        }
    }
    else if (ord > 0)
        r = root_grad_masked(t, ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_POW, a, sym_num(t, ord)), mask, keep, -1), 1.0 / ord);
    else
        r = ic_binary(G, IC_OP_POW, ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_POW, a, sym_num(t, ord)), mask, keep, -1),
                      sym_num(t, 1.0 / ord));
    if (half && r >= 0)
        r = ic_cast(G, r, io);
    return sym_tensor_out(t, r, out);
}

/* linalg.norm(A, ord=None, dim=None, keepdim=False, *, dtype, out): eager's vector_norm
 * unless a matrix norm is asked for (ord given with two dims, or with no dim on a 2-d A) */
int sym_h_linalg_norm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    int nd = -1; /* dims given: -1 none */
    if (p[2] && !sym_is_none(p[2])) {
        long long dims[IC_MAX_DIMS];
        if (p[2]->kind == V_SEQ || (p[2]->kind == V_CONST && PyTuple_Check(p[2]->obj))) {
            if (sym_get_ints(t, p[2], dims, IC_MAX_DIMS, &nd, "dim") < 0)
                return -1;
        } else {
            nd = 1;
        }
        if (nd != 1 && nd != 2)
            return sym_fail(t, "linalg.norm: dim must have 1 or 2 entries (eager will raise)");
    }
    int has_ord = p[1] && !sym_is_none(p[1]);
    if (has_ord && (nd == 2 || (nd < 0 && sym_ndim_of(t, p[0]->val) == 2)))
        return sym_fail(t, "linalg.norm: matrix norms left to eager");
    if (has_ord && nd < 0 && sym_ndim_of(t, p[0]->val) != 1)
        return sym_fail(t, "linalg.norm: ord without dim needs a 1-d or 2-d input (eager will raise)");
    static const opdef vn = {"vector_norm", W_LINALG, "x,ord,dim,keepdim|dtype,out", sym_h_norm, 1};
    return sym_h_norm(t, &vn, p, out);
}

/* bucketize(input, boundaries, *, out_int32=False, right=False) of a 1-d boundaries tensor:
 * eager's binary search (NaN inputs land past the last); int64 (int32 with out_int32) */
int sym_h_bucketize(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    if (p[1]->kind != V_TENSOR)
        return sym_fail(t, "bucketize: boundaries must be a tensor");
    int i32 = 0, right = 0;
    if (sym_get_bool(t, p[2], 0, &i32, "out_int32") < 0 || sym_get_bool(t, p[3], 0, &right, "right") < 0)
        return -1;
    if (p[4] && !sym_is_none(p[4]))
        return sym_fail(t, "bucketize with out= left to eager");
    ic_meta xm = *sym_metap(t, p[0]->val), bm = *sym_metap(t, p[1]->val);
    if (bm.ndim != 1)
        return sym_fail(t, "bucketize: boundaries must be 1-d (eager will raise)");
    if (xm.dyn || bm.dyn || xm.ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "bucketize: symbolic shapes or rank left to eager");
    if (bm.sizes[0] > 1024)
        return sym_fail(t, "bucketize: more than 1024 boundaries left to eager");
    if (xm.dtype == IC_BOOL || bm.dtype == IC_BOOL)
        return sym_fail(t, "bucketize of bool tensors (eager will raise)");
    /* eager's binary search step by step: lo moves past mid while !(b[mid] >= x), else hi
     * comes down to mid; a count of such b (the same for sorted boundaries without NaN)
     * differs from it when NaN boundaries sort last or the boundaries are not sorted */
    int64_t nb = bm.sizes[0], ne = 1;
    for (int i = 0; i < xm.ndim; i++)
        ne *= xm.sizes[i];
    ic_val x = ic_reshape(G, p[0]->val, 1, &ne);
    ic_val lo = ic_binary(G, IC_OP_MUL, ic_cast(G, x, IC_I64), sym_inum(t, 0));
    ic_val hi = ic_binary(G, IC_OP_ADD, lo, sym_inum(t, nb));
    for (int64_t span = nb; span > 0; span >>= 1) {
        ic_val on = ic_binary(G, IC_OP_LT, lo, hi);
        ic_val mid = ic_binary(G, IC_OP_ADD, lo, ic_binary(G, IC_OP_FLOOR_DIVIDE, ic_binary(G, IC_OP_SUB, hi, lo),
                                                              sym_inum(t, 2)));
        ic_val b = ic_index_select(G, p[1]->val, 0, ic_binary(G, IC_OP_MINIMUM, mid, sym_inum(t, nb - 1)));
        ic_val past = ic_unary(G, IC_OP_LOGICAL_NOT, ic_binary(G, right ? IC_OP_GT : IC_OP_GE, b, x));
        lo = ic_where(G, ic_binary(G, IC_OP_LOGICAL_AND, on, past), ic_binary(G, IC_OP_ADD, mid, sym_inum(t, 1)), lo);
        hi = ic_where(G, ic_binary(G, IC_OP_LOGICAL_AND, on, ic_unary(G, IC_OP_LOGICAL_NOT, past)), mid, hi);
    }
    ic_val r = ic_reshape(G, lo, xm.ndim, xm.sizes);
    return sym_tensor_out(t, i32 ? ic_cast(G, r, IC_I32) : r, out);
}

/* torch._weight_norm(v, g, dim=0) (nn.utils.parametrizations.weight_norm): v * (g / norm of
 * v over every dim but dim), the norm over all of v for dim=-1 */
int sym_h_weight_norm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    long long dd = 0;
    if (p[2] && !sym_is_none(p[2]) && sym_get_int(t, p[2], &dd, "dim") < 0)
        return -1;
    ic_val v = p[0]->val, g = p[1]->val;
    ic_meta vm = *sym_metap(t, v), gm = *sym_metap(t, g);
    if (vm.dtype < IC_F16 || vm.dtype > IC_F64 || gm.dtype != vm.dtype || vm.dyn)
        return sym_fail(t, "_weight_norm: non-float, mixed dtypes or symbolic shapes left to eager");
    uint32_t mask = 0;
    if (dd == -1) {
        mask = vm.ndim ? (uint32_t)((1ull << vm.ndim) - 1) : 0;
    } else {
        int dim;
        if (sym_norm_dim(t, dd, vm.ndim, &dim) < 0)
            return -1;
        for (int i = 0; i < vm.ndim; i++)
            if (i != dim)
                mask |= 1u << i;
        if (gm.ndim != vm.ndim)
            return sym_fail(t, "_weight_norm: g of another rank left to eager");
    }
    ic_val nrm;
    if (mask == 0) /* a 1-d v along dim: each element its own norm */
        nrm = ic_unary(G, IC_OP_ABS, v);
    else
        nrm = ic_unary(G, IC_OP_SQRT, ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_MUL, v, v), mask, 1, -1));
    return sym_tensor_out(t, ic_binary(G, IC_OP_MUL, v, ic_binary(G, IC_OP_DIV, g, nrm)), out);
}

/* BatchNorm's batch statistics over the dims of mask (keepdim): the mean and the biased
 * variance from one pass over x: both sums are of x shifted by its first element along mask
 * (x0, detached; the statistics are shift-invariant), xs = x - x0, m1 = mean(xs),
 * m2 = mean(xs^2), mean = x0 + m1, var = m2 - m1^2. The two
 * sums read only x, so they share one reducing pass (was: the mean, then a second pass for
 * mean((x - mean)^2), then the normalizing pass: three reads of x, the BatchNorm forward of a
 * channels-last conv's output). The shift keeps m1^2 of the order of the variance for any
 * offset of the channel (eager's Welford moments have no cancellation; the unshifted
 * E[x^2] - E[x]^2 would lose all digits at a mean of 1e4 and a deviation of 1); exact for a
 * constant channel. Symbolic reduced sizes keep the two-pass form (a slice of a symbolic dim
 * is unsupported). */
static void bn_stats(trace *t, ic_val x, uint32_t mask, const ic_meta *m, ic_val *mean, ic_val *var, ic_val *var_run) {
    int shift = 1;
    ic_val s = x;
    for (int i = 0; i < m->ndim && shift; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (m->dyn && !sym_dim_static(m->dims[i]))
            shift = 0;
        else
            s = ic_slice(G, s, i, 0, m->sizes[i] < 1 ? m->sizes[i] : 1, 1);
    }
    if (!shift) {
        *mean = ic_reduce(G, IC_OP_MEAN, x, mask, 1, -1);
        ic_val xc = ic_binary(G, IC_OP_SUB, x, *mean);
        *var = *var_run = ic_reduce(G, IC_OP_MEAN, ic_binary(G, IC_OP_MUL, xc, xc), mask, 1, -1);
        return;
    }
    s = ic_detach(G, s);
    ic_val xs = ic_binary(G, IC_OP_SUB, x, s);
    ic_val m1 = ic_reduce(G, IC_OP_MEAN, xs, mask, 1, -1);
    ic_val m2 = ic_reduce(G, IC_OP_MEAN, ic_binary(G, IC_OP_MUL, xs, xs), mask, 1, -1);
    /* var: v + (v < 0 ? -v : 0), the correction detached (the gradient is v's: eager's variance
     * is never clamped, and a mask in the backward makes its per-channel coefficients a row
     * value stored between passes, which keeps the GPU's reductions from splitting across
     * blocks, gpu_plan.c gg_choose_split). The running variance gets its own unclamped
     * m2 - m1^2 (*var_run): var with two users would also be such a stored row value in the
     * forward. x0 is one of the channel's values, so m1^2 <= N var: the rounding of m2 - m1^2
     * stays relative to var (0 for a constant channel, exactly). */
    ic_val v = ic_binary(G, IC_OP_SUB, m2, ic_binary(G, IC_OP_MUL, m1, m1));
    ic_val neg = ic_where(G, ic_binary(G, IC_OP_LT, v, sym_num(t, 0.0)), ic_unary(G, IC_OP_NEG, v), sym_num(t, 0.0));
    *var = ic_binary(G, IC_OP_ADD, v, ic_detach(G, neg));
    *var_run = ic_binary(G, IC_OP_SUB, m2, ic_binary(G, IC_OP_MUL, m1, m1));
    *mean = ic_binary(G, IC_OP_ADD, s, m1);
}

/* batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps) */
/* batch/group norm's result y (computed in f32 for a 16-bit input x) in x's dtype, laid out
 * as eager's kernels write it: on the CPU in x's suggested memory format; on CUDA batch_norm in
 * training keeps x's layout (empty_like) and group_norm writes a contiguous result (its kernel
 * reads x.contiguous()), as torch 2.11 on an H100 does (tools/reliab_probes6_cuda.py) */
static int norm_out(trace *t, ic_val x, ic_val y, ic_dtype in_dt, int cuda_fmt, var *out) {
    if (y >= 0 && ic_value_meta(G, y)->dtype != in_dt)
        y = ic_cast(G, y, in_dt);
    if (sym_tensor_out(t, y, out) < 0)
        return -1;
    int fmt = t->device_type == TC_DEV_CUDA && cuda_fmt >= 0 ? cuda_fmt : ic_value_suggest_format(G, x);
    ic_value_set_format(G, out->val, x, fmt);
    return 0;
}

/* batch_norm's and instance_norm's common tail: (x - mean) * rsqrt(var + eps), then the affine
 * weight and bias (either None) broadcast as bshape. batch_stats: the statistics are the
 * input's; then a 16-bit input whose parameters and statistics (p[1..4], those given) are of
 * its dtype gets eager's CPU rounding: its kernel keeps the batch mean and 1/std in that dtype
 * (save_mean/save_invstd) and normalizes with the rounded values (CUDA's keep them in f32). */
static ic_val norm_apply(trace *t, ic_val x, ic_val mean, ic_val varv, double eps, int batch_stats, ic_dtype in_dt,
                         var **p, var *weight, var *bias, int ndim, const int64_t *bshape) {
    ic_val rstd = ic_unary(G, IC_OP_RSQRT, ic_binary(G, IC_OP_ADD, varv, sym_num(t, eps)));
    if (batch_stats && in_dt != ic_value_meta(G, x)->dtype && t->device_type == TC_DEV_CPU) {
        int mixed = 0;
        for (int i = 1; i <= 4; i++)
            mixed |= !sym_is_none(p[i]) && ic_value_meta(G, p[i]->val)->dtype != in_dt;
        if (!mixed) {
            mean = ic_cast(G, ic_cast(G, mean, in_dt), IC_F32);
            rstd = ic_cast(G, ic_cast(G, rstd, in_dt), IC_F32);
        }
    }
    ic_val y = ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, x, mean), rstd);
    if (!sym_is_none(weight))
        y = ic_binary(G, IC_OP_MUL, y, ic_reshape(G, weight->val, ndim, bshape));
    if (!sym_is_none(bias))
        y = ic_binary(G, IC_OP_ADD, y, ic_reshape(G, bias->val, ndim, bshape));
    return y;
}

int sym_h_batch_norm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->ndim < 2 || m->dtype < IC_F16)
        return sym_fail(t, "batch_norm: input must be float with >= 2 dims");
    int training = 0;
    double momentum = 0.1, eps = 1e-5;
    if (sym_get_bool(t, p[5], 0, &training, "training") < 0 || sym_opt_num(t, p[6], 0.1, &momentum, "momentum") < 0 ||
        sym_opt_num(t, p[7], 1e-5, &eps, "eps") < 0)
        return -1;
    int64_t C = m->sizes[1];
    int64_t bshape[IC_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++)
        bshape[i] = i == 1 ? C : 1;
    uint32_t mask = 0;
    int64_t n = 1;
    for (int i = 0; i < m->ndim; i++)
        if (i != 1) {
            mask |= 1u << i;
            n *= m->sizes[i];
        }
    if (training && n == 1) /* F.batch_norm's _verify_batch_size */
        return sym_fail(t, "batch_norm: one value per channel in training (eager raises ValueError)");
    ic_val x = p[0]->val, mean, varv;
    for (int i = 1; i <= 4; i++)
        if (!sym_is_none(p[i]) && p[i]->kind != V_TENSOR)
            return sym_fail(t, "batch_norm: statistics and affine parameters must be tensors");
    /* eager computes 16-bit inputs in f32 (with f32 or 16-bit statistics and parameters: under
     * autocast a bf16 activation meets f32 parameters) and returns the input's dtype */
    const ic_dtype in_dt = m->dtype;
    if (in_dt == IC_F16 || in_dt == IC_BF16)
        x = ic_cast(G, x, IC_F32);
    if (training) {
        ic_val var_run;
        bn_stats(t, x, mask, m, &mean, &varv, &var_run);
        /* running stats: r = (1 - m) r + m * stat (unbiased variance), updated in place */
        if (!sym_is_none(p[1]) && !sym_is_none(p[2])) {
            /* training: eager updates the statistics without autograd (stop-gradients) */
            int sg = sym_value_requires_grad(t, mean);
            ic_val mu1 = ic_reshape(G, sg ? ic_detach(G, mean) : mean, 1, &C);
            ic_val v1 = ic_binary(G, IC_OP_MUL, ic_reshape(G, sg ? ic_detach(G, var_run) : var_run, 1, &C), sym_num(t, n > 1 ? (double)n / (double)(n - 1) : 1.0));
            ic_val rm = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, p[1]->val, sym_num(t, 1 - momentum)),
                                  ic_binary(G, IC_OP_MUL, mu1, sym_num(t, momentum)));
            ic_val rv = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, p[2]->val, sym_num(t, 1 - momentum)),
                                  ic_binary(G, IC_OP_MUL, v1, sym_num(t, momentum)));
            if (sym_mutate(t, p[1], rm) < 0 || sym_mutate(t, p[2], rv) < 0)
                return -1;
        }
    } else {
        if (sym_is_none(p[1]) || sym_is_none(p[2]))
            return sym_fail(t, "batch_norm in eval mode without running statistics");
        mean = ic_reshape(G, p[1]->val, m->ndim, bshape);
        varv = ic_reshape(G, p[2]->val, m->ndim, bshape);
    }
    ic_val y = norm_apply(t, x, mean, varv, eps, training, in_dt, p, p[3], p[4], m->ndim, bshape);
    return norm_out(t, p[0]->val, y, in_dt, training ? IC_MF_PRESERVE : -1, out);
}

/* instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,
 * cudnn_enabled) (F.instance_norm, nn.InstanceNorm1d/2d/3d): eager's batch_norm of the input
 * viewed as [1, N*C, *]: statistics per (sample, channel) over the spatial dims; the running
 * statistics (per channel) move by momentum toward the batch's mean of the per-sample mean and
 * unbiased variance; without use_input_stats the running statistics normalize. A contiguous
 * result (eager normalizes input.contiguous()). */
int sym_h_instance_norm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->ndim < 2 || m->dtype < IC_F16 || m->dtype > IC_F64 || m->dyn)
        return sym_fail(t, "instance_norm: input must be float with >= 2 dims and static sizes");
    int use = 1;
    double momentum = 0.1, eps = 1e-5;
    if (sym_get_bool(t, p[5], 1, &use, "use_input_stats") < 0 || sym_opt_num(t, p[6], 0.1, &momentum, "momentum") < 0 ||
        sym_opt_num(t, p[7], 1e-5, &eps, "eps") < 0)
        return -1;
    for (int i = 1; i <= 4; i++)
        if (!sym_is_none(p[i]) && p[i]->kind != V_TENSOR)
            return sym_fail(t, "instance_norm: statistics and affine parameters must be tensors");
    int has_run = !sym_is_none(p[3]) && !sym_is_none(p[4]);
    if (!use && !has_run)
        return sym_fail(t, "instance_norm without input statistics nor running statistics (eager raises)");
    if (sym_is_none(p[3]) != sym_is_none(p[4]))
        return sym_fail(t, "instance_norm with one running statistic of two left to eager");
    int64_t C = m->sizes[1], n = 1, bshape[IC_MAX_DIMS];
    uint32_t mask = 0;
    for (int i = 0; i < m->ndim; i++) {
        bshape[i] = i == 1 ? C : 1;
        if (i >= 2) {
            mask |= 1u << i;
            n *= m->sizes[i];
        }
    }
    for (int i = 1; i <= 4; i++) { /* eager's batch_norm checks each against N*C repeated */
        if (sym_is_none(p[i]))
            continue;
        const ic_meta *pm = sym_metap(t, p[i]->val);
        if (pm->ndim != 1 || pm->sizes[0] != C)
            return sym_fail(t, "instance_norm: a parameter or statistic not of the channels' size (eager raises)");
    }
    if (use && n == 1)
        return sym_fail(t, "instance_norm: one value per channel with input statistics (eager raises)");
    if (m->sizes[0] * C == 0 && (!sym_is_none(p[1]) || !sym_is_none(p[2]) || has_run))
        return sym_fail(t, "instance_norm of an empty batch with parameters or statistics left to eager (it may raise)");
    const ic_dtype in_dt = m->dtype;
    ic_val x = p[0]->val, mean, varv;
    if (in_dt == IC_F16 || in_dt == IC_BF16)
        x = ic_cast(G, x, IC_F32);
    if (use) {
        ic_val var_run;
        bn_stats(t, x, mask, m, &mean, &varv, &var_run);
        if (has_run) { /* updated without autograd, the batch's mean of the per-sample stats */
            int sg = sym_value_requires_grad(t, mean);
            ic_val mu = ic_reshape(G, ic_reduce(G, IC_OP_MEAN, sg ? ic_detach(G, mean) : mean, 1u, 0, -1), 1, &C);
            ic_val vu = ic_binary(G, IC_OP_MUL, sg ? ic_detach(G, var_run) : var_run, sym_num(t, (double)n / (double)(n - 1)));
            vu = ic_reshape(G, ic_reduce(G, IC_OP_MEAN, vu, 1u, 0, -1), 1, &C);
            ic_val rm = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, p[3]->val, sym_num(t, 1 - momentum)),
                                  ic_binary(G, IC_OP_MUL, mu, sym_num(t, momentum)));
            ic_val rv = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, p[4]->val, sym_num(t, 1 - momentum)),
                                  ic_binary(G, IC_OP_MUL, vu, sym_num(t, momentum)));
            if (sym_mutate(t, p[3], rm) < 0 || sym_mutate(t, p[4], rv) < 0)
                return -1;
        }
    } else {
        mean = ic_reshape(G, p[3]->val, m->ndim, bshape);
        varv = ic_reshape(G, p[4]->val, m->ndim, bshape);
    }
    ic_val y = norm_apply(t, x, mean, varv, eps, use, in_dt, p, p[1], p[2], m->ndim, bshape);
    if (y >= 0 && ic_value_meta(G, y)->dtype != in_dt)
        y = ic_cast(G, y, in_dt);
    if (sym_tensor_out(t, y, out) < 0)
        return -1;
    ic_value_set_format(G, out->val, p[0]->val, IC_MF_CONTIGUOUS);
    return 0;
}

/* group_norm(input, num_groups, weight, bias, eps) */
int sym_h_group_norm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long g;
    double eps = 1e-5;
    if (sym_get_int(t, p[1], &g, "num_groups") < 0 || sym_opt_num(t, p[4], 1e-5, &eps, "eps") < 0)
        return -1;
    if (m->ndim < 2 || g <= 0 || m->sizes[1] % g || m->dtype < IC_F16)
        return sym_fail(t, "group_norm: bad shapes (eager will raise)");
    int64_t N = m->sizes[0], C = m->sizes[1], rest = 1;
    for (int i = 2; i < m->ndim; i++)
        rest *= m->sizes[i];
    /* eager computes a 16-bit input in f32 and rounds once (as batch_norm above) */
    const ic_dtype in_dt = m->dtype;
    ic_val x = in_dt == IC_F16 || in_dt == IC_BF16 ? ic_cast(G, p[0]->val, IC_F32) : p[0]->val;
    ic_val x3 = ic_reshape(G, x, 3, (int64_t[]){N, g, (C / g) * rest});
    ic_val xc, var;
    norm_stats(t, x3, 1u << 2, &xc, &var);
    ic_val y = ic_binary(G, IC_OP_MUL, xc, ic_unary(G, IC_OP_RSQRT, ic_binary(G, IC_OP_ADD, var, sym_num(t, eps))));
    y = ic_reshape(G, y, m->ndim, m->sizes);
    int64_t bshape[IC_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++)
        bshape[i] = i == 1 ? C : 1;
    if (!sym_is_none(p[2])) {
        if (p[2]->kind != V_TENSOR)
            return sym_fail(t, "group_norm weight must be a tensor");
        y = ic_binary(G, IC_OP_MUL, y, ic_reshape(G, p[2]->val, m->ndim, bshape));
    }
    if (!sym_is_none(p[3])) {
        if (p[3]->kind != V_TENSOR)
            return sym_fail(t, "group_norm bias must be a tensor");
        y = ic_binary(G, IC_OP_ADD, y, ic_reshape(G, p[3]->val, m->ndim, bshape));
    }
    return norm_out(t, p[0]->val, y, in_dt, IC_MF_CONTIGUOUS, out);
}

/* cumsum/cumprod(input, dim, dtype) */
int sym_h_cumsum(trace *t, const opdef *d, var **p, var *out) {
    long long dd;
    int dim, dt = -1;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_int(t, p[1], &dd, "dim") < 0 ||
        sym_norm_dim(t, dd, sym_ndim_of(t, p[0]->val), &dim) < 0 || (p[2] && sym_get_dtype(t, p[2], &dt) < 0))
        return -1;
    int64_t prm[2] = {dim, dt};
    return sym_tensor_out(t, ic_extern(G, (ic_extern_kind)d->op, 1, &p[0]->val, 2, prm, 1, 1), out);
}

/* argsort(input, dim=-1, descending=False, stable=False); msort(input) = sort values along 0 */
int sym_h_argsort(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    long long dd = d->op ? 0 : -1;
    int dim, desc = 0, stable = 0;
    if (d->op == 0 && ((!sym_is_none(p[1]) && sym_get_int(t, p[1], &dd, "dim") < 0) ||
                       sym_get_bool(t, p[2], 0, &desc, "descending") < 0 || sym_get_bool(t, p[3], 0, &stable, "stable") < 0))
        return -1;
    if (sym_norm_dim(t, dd, sym_ndim_of(t, p[0]->val), &dim) < 0)
        return -1;
    int64_t prm[3] = {dim, desc, stable};
    ic_val idx = ic_extern(G, IC_EXT_ARGSORT, 1, &p[0]->val, 3, prm, 1, 1);
    ic_value_set_format(G, idx, p[0]->val, IC_MF_PRESERVE); /* eager's sort: the input's dense layout */
    if (d->op == 0 || idx < 0)
        return sym_tensor_out(t, idx, out);
    ic_val v[2] = {p[0]->val, idx};
    ic_val vals = ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1);
    ic_value_set_format(G, vals, p[0]->val, IC_MF_PRESERVE);
    return sym_tensor_out(t, vals, out);
}

/* sort(input, dim=-1, descending=False, stable=False) -> (values, indices) (op 0);
 * topk(input, k, dim=-1, largest=True, sorted=True) -> ATen's topk indices (op 1): eager's tie
 * order comes from its selection algorithm (CPU: nth_element/partial_sort; a stable sort's
 * first k picked other indices among equal values), so the extern runs eager's own */
int sym_h_sort(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    int nd = sym_ndim_of(t, p[0]->val), dim, desc = 0, stable = 0, srt = 1;
    long long dd = -1, k = -1;
    if (d->op == 0) {
        if ((!sym_is_none(p[1]) && sym_get_int(t, p[1], &dd, "dim") < 0) ||
            sym_get_bool(t, p[2], 0, &desc, "descending") < 0 || sym_get_bool(t, p[3], 0, &stable, "stable") < 0)
            return -1;
    } else {
        if (sym_get_int(t, p[1], &k, "k") < 0 || (!sym_is_none(p[2]) && sym_get_int(t, p[2], &dd, "dim") < 0) ||
            sym_get_bool(t, p[3], 1, &desc, "largest") < 0 || sym_get_bool(t, p[4], 1, &srt, "sorted") < 0)
            return -1;
        stable = 1;
    }
    if (nd == 0)
        return sym_fail(t, "%s of a 0-d tensor not supported yet", d->name);
    if (sym_norm_dim(t, dd, nd, &dim) < 0)
        return -1;
    if (d->op == 1 && (k < 0 || k > sym_metap(t, p[0]->val)->sizes[dim]))
        return sym_fail(t, "topk: k out of range (eager will raise)");
    if (d->op == 1 && t->device_type == TC_DEV_CPU && sym_metap(t, p[0]->val)->dtype == IC_BOOL)
        return sym_fail(t, "topk of a bool tensor on the CPU (eager raises, empty ones too)");
    int64_t prm[5] = {dim, desc, stable, k, srt};
    ic_val idx = ic_extern(G, IC_EXT_ARGSORT, 1, &p[0]->val, d->op == 1 ? 5 : 3, prm, 1, 1);
    ic_val v[2] = {p[0]->val, idx};
    ic_val vals = idx < 0 ? IC_NONE : ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1);
    if (vals < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    /* eager: sort's values and indices keep the input's dense layout, topk's are contiguous
     * (fuzz: sort of a transposed value gave contiguous strides, eager transposed) */
    int fmt = d->op == 0 ? IC_MF_PRESERVE : IC_MF_CONTIGUOUS;
    ic_value_set_format(G, idx, p[0]->val, fmt);
    ic_value_set_format(G, vals, p[0]->val, fmt);
    return sym_return_pair(t, d->op == 0 ? "sort" : "topk", vals, idx, out);
}

/* kthvalue(input, k, dim=-1, keepdim=False) (op 0), median / nanmedian(input, dim, keepdim)
 * (op 1, 2; of all elements: the polyfill's, torchc/_polyfill_ops.py) -> (values, indices).
 * The index is ATen's own selection's (an ARGSORT extern running eager's kernel: its tie
 * order among equal values, NaN where eager places it, on every device); the value is the
 * input gathered there, so its gradient reaches that element as eager's does. */
int sym_h_select(trace *t, const opdef *d, var **p, var *out) {
    static const char *const names[3] = {"kthvalue", "median", "nanmedian"};
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    const var *pd = d->op == 0 ? p[2] : p[1], *pk = d->op == 0 ? p[3] : p[2];
    long long k = 0, dd = -1;
    int dim, keep = 0;
    if (d->op == 0 && sym_get_int(t, p[1], &k, "k") < 0)
        return -1;
    if (d->op != 0 && sym_is_none(pd))
        return sym_fail(t, "%s of all elements of this tensor left to eager", d->name);
    if ((!sym_is_none(pd) && sym_get_int(t, pd, &dd, "dim") < 0) || sym_get_bool(t, pk, 0, &keep, "keepdim") < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    if (sym_norm_dim(t, dd, m.ndim, &dim) < 0)
        return -1;
    if (m.dtype == IC_BOOL || ic_dtype_is_complex(m.dtype))
        return sym_fail(t, "%s of a bool or complex tensor (eager will raise)", d->name);
    int64_t len = m.ndim ? m.sizes[dim] : 1;
    if (d->op == 0 && (k < 1 || k > len))
        return sym_fail(t, "kthvalue: k out of range (eager will raise)");
    if (len == 0)
        return sym_fail(t, "%s over an empty dim (eager will raise)", d->name);
    int64_t prm[4] = {dim, d->op, d->op == 0 ? k : 0, 1};
    ic_val idx = ic_extern(G, IC_EXT_ARGSORT, 1, &p[0]->val, 4, prm, 1, 1);
    ic_val v[2] = {p[0]->val, idx};
    ic_val vals = idx < 0 ? IC_NONE : ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1);
    if (vals >= 0 && !keep && m.ndim > 0) { /* eager's results are contiguous either way */
        int64_t sz[IC_MAX_DIMS];
        for (int i = 0, j = 0; i < m.ndim; i++)
            if (i != dim)
                sz[j++] = m.sizes[i];
        idx = sym_reshape(t, idx, m.ndim - 1, sz);
        vals = sym_reshape(t, vals, m.ndim - 1, sz);
    }
    if (vals < 0 || idx < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    return sym_return_pair(t, names[d->op], vals, idx, out);
}

/* nanmean(input, dim=None, keepdim=False, *, dtype=None): eager's nansum(dim, keepdim, dtype)
 * divided by the count of non-NaN elements (NaN where there are none) */
int sym_h_nanmean(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_dtype xdt = sym_metap(t, p[0]->val)->dtype;
    if (xdt < IC_F16 || xdt > IC_F64)
        return sym_fail(t, "nanmean of a non-float tensor (eager raises)");
    int nd = sym_ndim_of(t, p[0]->val), keep = 0, dt = -1;
    uint32_t mask;
    if (sym_dims_mask(t, p[1], nd, &mask) < 0 || sym_get_bool(t, p[2], 0, &keep, "keepdim") < 0 ||
        (p[3] && sym_get_dtype(t, p[3], &dt) < 0))
        return -1;
    if (dt >= 0 && (dt < IC_F16 || dt > IC_F64))
        return sym_fail(t, "nanmean with a non-float dtype left to eager");
    ic_val x = p[0]->val, nan = ic_unary(G, IC_OP_ISNAN, x);
    ic_val s = ic_reduce(G, IC_OP_SUM, ic_where(G, nan, sym_num(t, 0), x), mask, keep, dt);
    ic_val n = ic_reduce(G, IC_OP_SUM, ic_unary(G, IC_OP_LOGICAL_NOT, nan), mask, keep, -1);
    return sym_tensor_out(t, ic_binary(G, IC_OP_DIV, s, n), out);
}

/* take_along_dim(input, indices, dim=None): gather along dim of input and indices broadcast
 * to each other on every other dim (of both flattened without dim); indices outside [0, size)
 * rerun the frame eagerly (CPU) or trap (CUDA) */
int sym_h_take_along_dim(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_meta xm = *sym_metap(t, p[0]->val), im = *sym_metap(t, p[1]->val);
    if (im.dtype != IC_I64)
        return sym_fail(t, "take_along_dim: indices not int64 (eager raises)");
    if (xm.dyn || im.dyn)
        return sym_fail(t, "take_along_dim with symbolic shapes left to eager");
    ic_val x = p[0]->val, ix = p[1]->val;
    int dim = 0;
    if (sym_is_none(p[2])) {
        int64_t nx = 1, ni = 1;
        for (int i = 0; i < xm.ndim; i++)
            nx *= xm.sizes[i];
        for (int i = 0; i < im.ndim; i++)
            ni *= im.sizes[i];
        /* eager: input.view(-1) and indices.view(-1), which raise where no such view exists */
        int64_t st[IC_MAX_DIMS], nst[1];
        for (int k = 0; k < 2; k++) {
            const ic_meta *mk = k ? &im : &xm;
            if (!sym_eager_strides(t, k ? ix : x, st))
                return sym_fail(t, "take_along_dim: strides of the operands unknown");
            if (!sym_view_strides(mk->ndim, mk->sizes, st, 1, k ? &ni : &nx, nst))
                return sym_fail(t, "take_along_dim without dim of a tensor that can't be viewed as 1-D (eager raises)");
        }
        x = sym_reshape(t, x, 1, &nx);
        ix = sym_reshape(t, ix, 1, &ni);
        xm.ndim = im.ndim = 1;
        xm.sizes[0] = nx;
        im.sizes[0] = ni;
    } else {
        long long dd;
        if (sym_get_int(t, p[2], &dd, "dim") < 0 || sym_norm_dim(t, dd, xm.ndim, &dim) < 0)
            return -1;
        if (xm.ndim != im.ndim)
            return sym_fail(t, "take_along_dim: input and indices of different ranks (eager raises)");
        int64_t sx[IC_MAX_DIMS], si[IC_MAX_DIMS];
        for (int i = 0; i < xm.ndim; i++) {
            int64_t a = xm.sizes[i], b = im.sizes[i];
            if (i != dim && a != b && a != 1 && b != 1)
                return sym_fail(t, "take_along_dim: shapes do not broadcast (eager raises)");
            int64_t bc = a == 1 ? b : a;
            sx[i] = i == dim ? a : bc;
            si[i] = i == dim ? b : bc;
        }
        x = ic_expand(G, x, xm.ndim, sx);
        ix = ic_expand(G, ix, im.ndim, si);
        memcpy(xm.sizes, sx, sizeof sx[0] * (size_t)xm.ndim);
    }
    int64_t bound = xm.ndim ? xm.sizes[dim] : 1;
    var iv = *p[1];
    iv.val = ix;
    int chk = sym_check_index(t, &iv, bound, 1);
    if (chk < 0)
        return -1;
    if (chk == 0 && t->device_type != TC_DEV_CUDA) /* checked after the run: read in range meanwhile */
        ix = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, ix, sym_inum(t, 0)), sym_inum(t, bound > 0 ? bound - 1 : 0));
    int64_t prm[1] = {dim};
    ic_val v[2] = {x, ix};
    return sym_tensor_out(t, ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1), out);
}
