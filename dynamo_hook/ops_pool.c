/* ops_pool.c — pooling, padding and interpolation, decomposed into slices, index maps and
 * pointwise ops; depthwise convolutions as shifted products. The graph-level decompositions
 * live in inductor_c/graph/decomp_pool.c (ic_decomp.h); this file reads the arguments.
 */
#include "ops_internal.h"

#include "ic_decomp.h"

/* ---- pooling, padding, interpolation: decompositions into slices, index maps, pointwise -- */

static int isflt(ic_dtype d) { return d >= IC_F16 && d <= IC_F64; }

static ic_val fconst(trace *t, double v, ic_dtype dt) { return ic_cast(G, ic_scalar(G, v, IC_F64), dt); }

/* the window reduction of ic_pool_window; a refusal fails the trace with its reason */
static int pool_nd(trace *t, ic_val x, int nd, const int64_t *k, const int64_t *s, const int64_t *pad,
                   const int64_t *dl, int ceil, ic_op op, ic_val *res, int64_t *osz) {
    char why[160];
    int rc = ic_pool_window(G, x, nd, k, s, pad, dl, ceil, op, res, osz, why, sizeof why);
    if (rc > 0)
        return sym_fail(t, "%s", why);
    return rc < 0 ? sym_check_graph(t) : 0;
}

/* Depthwise convs (groups == in channels == out channels, 1-d/2-d, float) as a window sum:
 * the input padded with zeros, one strided slice per kernel tap times that tap's weight
 * column, summed in f32 with the bias, cast back: one fused kernel with the convolution's
 * neighbours (batch norm, activation) instead of a library call. On CUDA by default: cuDNN's
 * grouped-conv kernels took 1.73 ms for mobilenet_v3_large's 15 depthwise convs (H200, bf16,
 * batch 32) against 0.56 ms for ATen's own depthwise kernel in NCHW. TORCHC_DWCONV=0: never,
 * =1: on every device. Kernels of more than 25 taps stay library calls: convnext_tiny's 7x7
 * depthwise convs as 49-tap sums took 87 ms a call and 19 s to compile (one run).
 * Returns 1 with *res set, 0 when not applicable, -1 on a failed build. */
int sym_dw_conv(trace *t, int nd, const int64_t *prm, const ic_val *v, int n, ic_val *res) {
    char env[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_dwconv, env); /* torchc.config.dwconv */
    int force = strcmp(env, "1") == 0;
    if (strcmp(env, "0") == 0 || (!force && t->device_type != TC_DEV_CUDA) || nd > 2)
        return 0;
    long long max_taps = ic_config_int(IC_CFG_dwconv_taps); /* the largest decomposed kernel */
    /* padded in its own dtype (stored once: sched.c), each tap cast; torchc.config.stencil=0:
     * cast first and the producer recomputed in every tap (1.32x slower on mobilenet_v3, H200) */
    int stencil = ic_config_int(IC_CFG_stencil) != 0;
    int r = ic_dwconv_window(G, nd, prm, v, n, stencil, max_taps, res);
    return r < 0 ? sym_check_graph(t) : r;
}

static int pool_ints(trace *t, var *v, int64_t dflt_from_k, const int64_t *k, int nd, int64_t *out, long long dflt,
                     const char *what) {
    if (sym_is_none(v) || (v->kind == V_CONST && PyTuple_Check(v->obj) && PyTuple_GET_SIZE(v->obj) == 0) ||
        (v->kind == V_CONST && PyList_Check(v->obj) && PyList_GET_SIZE(v->obj) == 0)) {
        for (int i = 0; i < nd; i++)
            out[i] = dflt_from_k ? k[i] : dflt;
        return 0;
    }
    return sym_conv_ints(t, v, dflt, nd, out, what);
}

/* eager's pooling and upsampling kernels refuse an empty non-batch dim (an empty batch
 * passes): "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size" */
static int nonempty(trace *t, const ic_meta *m, int nd, const char *what) {
    for (int i = m->ndim == nd + 2 ? 1 : 0; i < m->ndim; i++)
        if (m->sizes[i] == 0)
            return sym_fail(t, "%s of a tensor with an empty non-batch dim (eager raises)", what);
    return 0;
}

/* The layout of a pooled or upsampled r of input x: eager's kernels allocate the result in
 * x.suggest_memory_format() for a 4-d/5-d x (channels-last or contiguous), contiguous for
 * fewer dims; via2d: a 1-d pool that eager runs as the 2-d pool of x.unsqueeze(-2), whose
 * channels-last result squeezed has strides (C*L, 1, C) */
static int pool_out(trace *t, ic_val x, ic_val r, int via2d, var *out) {
    if (r < 0)
        return sym_tensor_out(t, r, out);
    ic_meta m = *sym_metap(t, x), rm = *sym_metap(t, r);
    if (m.dyn || rm.dyn)
        return sym_tensor_out(t, r, out);
    int fmt = m.ndim == 4 || m.ndim == 5 ? ic_value_suggest_format(G, x) : IC_MF_CONTIGUOUS;
    if (via2d && m.ndim == 3 && rm.ndim == 3) {
        ic_val x4 = ic_reshape(G, x, 4, (int64_t[]){m.sizes[0], m.sizes[1], 1, m.sizes[2]});
        if (x4 >= 0 && ic_value_suggest_format(G, x4) == IC_MF_CHANNELS_LAST) {
            int64_t want[3] = {rm.sizes[1] * rm.sizes[2], 1, rm.sizes[1]}, has[3];
            if (ic_value_strides(G, r, has) && !memcmp(has, want, sizeof has))
                return sym_tensor_out(t, r, out);
            ic_val c = ic_cast(G, r, rm.dtype);
            if (c >= 0)
                ic_value_set_strides(G, c, want);
            return sym_tensor_out(t, c, out);
        }
    }
    if (ic_value_is_contiguous(G, r, fmt))
        return sym_tensor_out(t, r, out);
    return dh_layout_copy(t, r, fmt, out);
}

/* max_pool1d/2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices) */
int sym_h_max_pool(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op, ceil = 0, ri = 0;
    int64_t k[2], s2[2], pad[2], dl[2], o[2];
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_conv_ints(t, p[1], 1, nd, k, "kernel_size") < 0 ||
        pool_ints(t, p[2], 1, k, nd, s2, 1, "stride") < 0 || pool_ints(t, p[3], 0, k, nd, pad, 0, "padding") < 0 ||
        pool_ints(t, p[4], 0, k, nd, dl, 1, "dilation") < 0 || sym_get_bool(t, p[5], 0, &ceil, "ceil_mode") < 0 ||
        sym_get_bool(t, p[6], 0, &ri, "return_indices") < 0)
        return -1;
    if (ri)
        return sym_fail(t, "max pool with return_indices left to eager");
    if (nonempty(t, sym_metap(t, p[0]->val), nd, d->name) < 0)
        return -1;
    ic_val r;
    /* under grad: eager's gradient goes to each window's first maximum (ic_pool_window) */
    int grad = sym_value_requires_grad(t, p[0]->val);
    ic_op op = grad ? IC_OP_WHERE : IC_OP_MAXIMUM;
    if (pool_nd(t, p[0]->val, nd, k, s2, pad, dl, ceil, op, &r, o) < 0)
        return -1;
    /* max_pool1d: ATen's own CPU kernel without grad, else max_pool2d of the unsqueezed input */
    return pool_out(t, p[0]->val, r, nd == 1 && (grad || t->device_type != TC_DEV_CPU), out);
}

/* avg_pool1d/2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) */
int sym_h_avg_pool(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op, ceil = 0, inc = 1;
    int64_t k[2], s2[2], pad[2], dl[2] = {1, 1}, o[2];
    long long dov = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_conv_ints(t, p[1], 1, nd, k, "kernel_size") < 0 ||
        pool_ints(t, p[2], 1, k, nd, s2, 1, "stride") < 0 || pool_ints(t, p[3], 0, k, nd, pad, 0, "padding") < 0 ||
        sym_get_bool(t, p[4], 0, &ceil, "ceil_mode") < 0 || sym_get_bool(t, p[5], 1, &inc, "count_include_pad") < 0 ||
        (nd == 2 && !sym_is_none(p[6]) && sym_get_int(t, p[6], &dov, "divisor_override") < 0))
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    if (!isflt(m.dtype))
        return sym_fail(t, "avg pool of an integer tensor left to eager");
    if (nonempty(t, &m, nd, d->name) < 0)
        return -1;
    ic_val sum, xin = p[0]->val;
    if (m.dtype == IC_F16 || m.dtype == IC_BF16) /* ATen sums a 16-bit window in float32 */
        xin = ic_cast(G, xin, IC_F32);
    if (pool_nd(t, xin, nd, k, s2, pad, dl, ceil, IC_OP_ADD, &sum, o) < 0)
        return -1;
    ic_val div;
    if (dov) {
        div = fconst(t, (double)dov, m.dtype);
    } else {
        div = -1;
        for (int i = 0; i < nd; i++) {
            ic_val c = ic_pool_counts(G, o[i], k[i], s2[i], m.sizes[m.ndim - nd + i], pad[i], inc);
            if (i == 0 && nd == 2)
                c = ic_reshape(G, c, 2, (int64_t[]){o[0], 1});
            div = div < 0 ? c : ic_binary(G, IC_OP_MUL, div, c);
        }
        div = ic_cast(G, div, m.dtype == IC_F64 ? IC_F64 : IC_F32);
    }
    ic_val r = ic_binary(G, IC_OP_DIV, ic_cast(G, sum, m.dtype == IC_F64 ? IC_F64 : IC_F32), div);
    return pool_out(t, p[0]->val, ic_cast(G, r, m.dtype), 1, out);
}

/* An adaptive pool whose output sizes don't all divide the input (7x7 of 9x9, or of 2x2):
 * ATen's windows [floor(o*L/os), ceil((o+1)*L/os)) of each pooled dim, overlapping or
 * repeated. The rectangle's mean is the mean over one dim of the means over the other (its
 * max likewise): one dim at a time, a slice reduced per output position, concatenated. */
static int adaptive_windows(trace *t, ic_val x, const ic_meta *m, int nd, const int64_t *os, int mx, var *out) {
    long long most = ic_config_int(IC_CFG_adaptive_windows);
    if (mx && sym_value_requires_grad(t, x))
        return sym_fail(t, "adaptive max pool with uneven windows under grad left to eager");
    if (!mx && !isflt(m->dtype))
        return sym_fail(t, "adaptive avg pool of an integer tensor left to eager");
    ic_dtype ct = m->dtype == IC_F64 ? IC_F64 : IC_F32;
    ic_val r = mx ? x : ic_cast(G, x, ct);
    for (int i = 0; i < nd; i++) {
        int dim = m->ndim - nd + i;
        int64_t L = m->sizes[dim];
        if (L == os[i])
            continue;
        if (os[i] > most)
            return sym_fail(t, "adaptive pool: %lld uneven windows in a dim (torchc.config.adaptive_windows: %lld)",
                            (long long)os[i], most);
        ic_val acc = -1;
        for (int64_t o = 0; o < os[i]; o++) {
            int64_t a = o * L / os[i], b = ((o + 1) * L + os[i] - 1) / os[i];
            ic_val w = ic_reduce(G, mx ? IC_OP_AMAX : IC_OP_SUM, ic_slice(G, r, dim, a, b, 1), 1u << dim, 1, -1);
            if (!mx)
                w = ic_binary(G, IC_OP_DIV, w, fconst(t, (double)(b - a), ct));
            acc = acc < 0 ? w : ic_cat(G, acc, w, dim);
            if (acc < 0)
                return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "adaptive pool: window build failed");
        }
        r = acc;
    }
    return pool_out(t, x, ic_cast(G, r, m->dtype), 1, out);
}

/* adaptive_avg_pool1d/2d / adaptive_max_pool1d/2d(input, output_size[, return_indices]):
 * output sizes that divide the input (1 included) are plain pools; op: nd, +2 for max */
int sym_h_adaptive_pool(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op & 3, mx = d->op >= 4, ri = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || (mx && sym_get_bool(t, p[2], 0, &ri, "return_indices") < 0))
        return -1;
    if (ri)
        return sym_fail(t, "adaptive max pool with return_indices left to eager");
    ic_meta m = *sym_metap(t, p[0]->val);
    if (m.ndim < nd + 1 || m.ndim > nd + 2)
        return sym_fail(t, "adaptive pool: bad input dims (eager will raise)");
    if (nonempty(t, &m, nd, d->name) < 0)
        return -1;
    int64_t os[2], k[2], pad[2] = {0, 0}, dl[2] = {1, 1}, o[2];
    if (p[1] == NULL)
        return sym_fail(t, "adaptive pool: output_size missing");
    if (p[1]->kind == V_CONST && PyTuple_Check(p[1]->obj) && PyTuple_GET_SIZE(p[1]->obj) == nd) {
        for (int i = 0; i < nd; i++) {
            PyObject *it = PyTuple_GET_ITEM(p[1]->obj, i);
            int ovf = 0;
            os[i] = it == Py_None ? m.sizes[m.ndim - nd + i] : PyLong_Check(it) ? PyLong_AsLongLongAndOverflow(it, &ovf) : -1;
            if (ovf)
                return sym_fail(t, "adaptive pool: output_size out of range (eager will raise)");
        }
    } else if (sym_conv_ints(t, p[1], 1, nd, os, "output_size") < 0) {
        return -1;
    }
    int divides = 1;
    for (int i = 0; i < nd; i++) {
        int64_t L = m.sizes[m.ndim - nd + i];
        if (os[i] < 1 || L < 1)
            return sym_fail(t, "adaptive pool: empty output or input (eager decides)");
        divides &= L % os[i] == 0;
        k[i] = L / os[i];
    }
    if (!divides)
        return adaptive_windows(t, p[0]->val, &m, nd, os, mx, out);
    ic_val r, xin = p[0]->val;
    ic_op op = !mx ? IC_OP_ADD : sym_value_requires_grad(t, p[0]->val) ? IC_OP_WHERE : IC_OP_MAXIMUM;
    if (!mx && (m.dtype == IC_F16 || m.dtype == IC_BF16)) /* ATen sums a 16-bit window in float32 */
        xin = ic_cast(G, xin, IC_F32);
    if (pool_nd(t, xin, nd, k, k, pad, dl, 0, op, &r, o) < 0)
        return -1;
    if (!mx) {
        if (!isflt(m.dtype))
            return sym_fail(t, "adaptive avg pool of an integer tensor left to eager");
        ic_dtype ct = m.dtype == IC_F64 ? IC_F64 : IC_F32;
        r = ic_cast(G, ic_binary(G, IC_OP_DIV, ic_cast(G, r, ct), fconst(t, (double)(k[0] * (nd == 2 ? k[1] : 1)), ct)),
                    m.dtype);
    }
    return pool_out(t, p[0]->val, r, 1, out); /* the 1-d ones: the 2-d pools of x.unsqueeze(-2) */
}

/* F.pad(input, pad, mode='constant', value=None): constant as concatenations, reflect /
 * replicate / circular as index maps (index_select with an index computed from arange) */
int sym_h_pad(trace *t, const opdef *d, var **p, var *out) {
    long long pads[2 * IC_MAX_DIMS];
    int np;
    double value = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_ints(t, p[1], pads, 2 * IC_MAX_DIMS, &np, "pad") < 0 ||
        sym_opt_num(t, p[3], 0.0, &value, "value") < 0)
        return -1;
    const char *mode;
    if (sym_get_str(t, p[2], "constant", &mode, "pad: mode") < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    if (np % 2 || np / 2 > m.ndim)
        return sym_fail(t, "pad: bad pad length (eager will raise)");
    int md = !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 : !strcmp(mode, "replicate") ? 2
             : !strcmp(mode, "circular") ? 3 : -1;
    if (md < 0)
        return sym_fail(t, "pad: mode '%s' left to eager", mode);
    /* eager's non-constant modes: 1-3 padded dims of an input with one or two dims more */
    if (md && (np == 0 || np / 2 > 3 || (m.ndim != np / 2 + 1 && m.ndim != np / 2 + 2)))
        return sym_fail(t, "pad: %d pads of a %d-d input in mode '%s' (eager raises)", np, m.ndim, mode);
    if ((md == 1 || md == 2) && m.dtype == IC_BOOL)
        return sym_fail(t, "pad: %s of a bool tensor (eager's kernel has none: raises)", mode);
    if (md == 0 && !isflt(m.dtype) && value != floor(value))
        return sym_fail(t, "pad: a fractional value on an integer tensor left to eager");
    ic_val x = p[0]->val;
    for (int i = 0; i < np / 2; i++) {
        int dim = m.ndim - 1 - i;
        int64_t lo = pads[2 * i], hi = pads[2 * i + 1], L = sym_metap(t, x)->sizes[dim];
        if (lo == 0 && hi == 0)
            continue;
        if (md == 0) {
            if (L + lo + hi < 0)
                return sym_fail(t, "pad: resulting size is negative (eager will raise)");
            x = ic_pad_const(G, x, dim, lo, hi, value);
            continue;
        }
        if (lo < 0 || hi < 0 || L == 0 || (md == 1 && (lo >= L || hi >= L)) || (md == 3 && (lo > L || hi > L)))
            return sym_fail(t, "pad: %s padding out of range (eager decides)", mode);
        ic_val j = ic_arange(G, L + lo + hi, (double)-lo, 1, IC_I64); /* source position, unclamped */
        ic_val idx;
        if (md == 1) { /* (L-1) - |(L-1) - |j|| */
            ic_val a = ic_unary(G, IC_OP_ABS, j);
            idx = ic_binary(G, IC_OP_SUB, sym_inum(t, L - 1), ic_unary(G, IC_OP_ABS, ic_binary(G, IC_OP_SUB, sym_inum(t, L - 1), a)));
        } else if (md == 2) {
            idx = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, j, sym_inum(t, 0)), sym_inum(t, L - 1));
        } else {
            idx = ic_binary(G, IC_OP_REMAINDER, j, sym_inum(t, L));
        }
        x = ic_index_select(G, x, dim, idx);
    }
    if (x < 0) /* a graph builder refused (a dynamic size) */
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "pad: graph builder failed");
    if (x == p[0]->val)
        x = ic_cast(G, x, m.dtype);
    int shrink = 1; /* constant mode, no pad positive: eager clones the narrowed input */
    for (int i = 0; i < np; i++)
        shrink &= md == 0 && pads[i] <= 0;
    if (shrink)
        return dh_layout_copy(t, x, IC_MF_PRESERVE, out);
    if (md == 3) /* circular: eager's cat of narrows, contiguous */
        return ic_value_is_contiguous(G, x, IC_MF_CONTIGUOUS) ? sym_tensor_out(t, x, out)
                                                               : dh_layout_copy(t, x, IC_MF_CONTIGUOUS, out);
    return pool_out(t, p[0]->val, x, 0, out); /* constant / reflect / replicate: as a pool's */
}

/* bicubic along dim (ATen's upsample_bicubic2d): src the unclamped source coordinate of each
 * of the O outputs; i = min(floor(src), L - 1), t = clamp(src - i, 0, 1); taps i-1..i+2
 * clamped into [0, L - 1], weighted by the cubic convolution (A = -0.75) of t (rounded to wdt),
 * summed in tap order in ct, the sum cast to dt; col: the weights broadcast over the dim after dim */
static ic_val bicubic_dim(trace *t, ic_val x, int dim, int64_t L, int64_t O, int col, ic_val src, ic_dtype ct,
                          ic_dtype dt, ic_dtype wdt) {
    const double A = -0.75;
    ic_val fl = ic_unary(G, IC_OP_FLOOR, src);
    ic_val i0 = ic_binary(G, IC_OP_MINIMUM, ic_cast(G, fl, IC_I64), sym_inum(t, L - 1));
    ic_val lam = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_SUB, src, ic_cast(G, i0, ct)),
                                                       fconst(t, 0.0, ct)), fconst(t, 1.0, ct));
    /* cc1(x) = ((A + 2) x - (A + 3)) x x + 1; cc2(x) = ((A x - 5A) x + 8A) x - 4A */
#define CC1(v) ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, \
                 ic_binary(G, IC_OP_MUL, fconst(t, A + 2, ct), (v)), fconst(t, A + 3, ct)), (v)), (v)), fconst(t, 1.0, ct))
#define CC2(v) ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, \
                 ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MUL, fconst(t, A, ct), (v)), fconst(t, 5 * A, ct)), (v)), \
                 fconst(t, 8 * A, ct)), (v)), fconst(t, 4 * A, ct))
    ic_val x2 = ic_binary(G, IC_OP_SUB, fconst(t, 1.0, ct), lam);
    ic_val w[4] = {CC2(ic_binary(G, IC_OP_ADD, lam, fconst(t, 1.0, ct))), CC1(lam), CC1(x2),
                   CC2(ic_binary(G, IC_OP_ADD, x2, fconst(t, 1.0, ct)))};
#undef CC1
#undef CC2
    if (wdt != ct) /* 16-bit inputs: ATen's weights are of the input's dtype (the sums float32) */
        for (int j = 0; j < 4; j++)
            w[j] = ic_cast(G, ic_cast(G, w[j], wdt), ct);
    ic_val acc = -1;
    for (int j = 0; j < 4; j++) {
        ic_val ij = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_ADD, i0, sym_inum(t, j - 1)),
                                                         sym_inum(t, 0)), sym_inum(t, L - 1));
        ic_val wj = w[j];
        if (col) {
            int64_t sh[2] = {O, 1};
            wj = ic_reshape(G, wj, 2, sh);
        }
        ic_val tj = ic_binary(G, IC_OP_MUL, ic_cast(G, ic_index_select(G, x, dim, ij), ct), wj);
        acc = j == 0 ? tj : ic_binary(G, IC_OP_ADD, acc, tj);
    }
    return ic_cast(G, acc, dt);
}

/* F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias):
 * nearest / nearest-exact (1-3 spatial dims) as index maps; linear / bilinear (align_corners
 * either way) as two index maps per dim blended with the weights ATen computes; bicubic as
 * four (bicubic_dim). */
int sym_h_interpolate(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    int nd = m.ndim - 2, align = 0, recompute = 0, anti = 0;
    if (nd < 1 || nd > 3)
        return sym_fail(t, "interpolate: expected a 3-5d input (eager will raise)");
    const char *mode;
    if (sym_get_str(t, p[3], "nearest", &mode, "interpolate: mode") < 0)
        return -1;
    int md = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "nearest-exact") ? 1
             : (!strcmp(mode, "linear") && nd == 1) || (!strcmp(mode, "bilinear") && nd == 2) ? 2
             : !strcmp(mode, "bicubic") && nd == 2 ? 3 : -1;
    if (md < 0)
        return sym_fail(t, "interpolate: mode '%s' left to eager", mode);
    if (sym_get_bool(t, p[4], 0, &align, "align_corners") < 0 || sym_get_bool(t, p[5], 0, &recompute, "recompute_scale_factor") < 0 ||
        sym_get_bool(t, p[6], 0, &anti, "antialias") < 0)
        return -1;
    if (anti || (md < 2 && !sym_is_none(p[4])))
        return sym_fail(t, "interpolate: antialias / align_corners with nearest left to eager");
    if (!isflt(m.dtype))
        return sym_fail(t, "interpolate of an integer tensor left to eager");
    int64_t O[3];
    double sf[3] = {0, 0, 0};
    if (!sym_is_none(p[1]) && sym_is_none(p[2])) {
        if (sym_conv_ints(t, p[1], 1, nd, O, "size") < 0)
            return -1;
    } else if (sym_is_none(p[1]) && !sym_is_none(p[2])) {
        if (sym_is_number(p[2])) {
            for (int i = 0; i < nd; i++)
                sf[i] = PyFloat_AsDouble(p[2]->obj);
        } else if (p[2]->kind == V_CONST && PyTuple_Check(p[2]->obj) && PyTuple_GET_SIZE(p[2]->obj) == nd) {
            for (int i = 0; i < nd; i++)
                sf[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(p[2]->obj, i));
            if (PyErr_Occurred()) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "interpolate: scale_factor must hold numbers");
            }
        } else {
            return sym_fail(t, "interpolate: scale_factor must be constant numbers");
        }
        for (int i = 0; i < nd; i++) {
            if (!(sf[i] > 0))
                return sym_fail(t, "interpolate: bad scale_factor (eager will raise)");
            O[i] = (int64_t)floor((double)m.sizes[2 + i] * sf[i]);
            if (recompute)
                sf[i] = 0;
        }
    } else {
        return sym_fail(t, "interpolate: exactly one of size and scale_factor (eager will raise)");
    }
    ic_val x = p[0]->val;
    for (int i = 0; i < nd; i++) {
        if (O[i] < 1 || m.sizes[2 + i] < 1)
            return sym_fail(t, "interpolate: empty sizes left to eager");
    }
    if (m.sizes[1] == 0)
        return sym_fail(t, "interpolate: no channels (eager raises)");
    if (md < 2) {
        for (int i = 0; i < nd; i++)
            x = ic_index_select(G, x, 2 + i, ic_interp_nearest_index(G, m.sizes[2 + i], O[i], sf[i], md == 1));
        return pool_out(t, p[0]->val, x, 0, out);
    }
    /* linear along the last dim first, then the one before (ATen's order of operations) */
    ic_dtype ct = m.dtype == IC_F64 ? IC_F64 : IC_F32;
    for (int i = nd - 1; i >= 0; i--) {
        int dim = 2 + i;
        int64_t L = m.sizes[dim];
        double scale;
        if (align)
            scale = O[i] > 1 ? (ct == IC_F32 ? (double)((float)(L - 1) / (float)(O[i] - 1)) : (double)(L - 1) / (O[i] - 1)) : 0;
        else if (sf[i] > 0)
            scale = ct == IC_F32 ? (double)(float)(1.0 / sf[i]) : 1.0 / sf[i];
        else
            scale = ct == IC_F32 ? (double)((float)L / (float)O[i]) : (double)L / (double)O[i];
        ic_val di = ic_cast(G, ic_arange(G, O[i], 0, 1, IC_I64), ct);
        ic_val sc = ic_cast(G, ic_scalar(G, scale, IC_F64), ct);
        ic_val src;
        if (align) {
            src = ic_binary(G, IC_OP_MUL, sc, di);
        } else {
            src = ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MUL, sc, ic_binary(G, IC_OP_ADD, di, fconst(t, 0.5, ct))),
                            fconst(t, 0.5, ct));
            if (md == 2) /* (bicubic's is not clamped) */
                src = ic_binary(G, IC_OP_MAXIMUM, src, fconst(t, 0.0, ct));
        }
        if (md == 3) {
            x = bicubic_dim(t, x, dim, L, O[i], i < nd - 1, src, ct, i == 0 ? m.dtype : ct, /* one rounding */
                            t->device_type == TC_DEV_CPU ? m.dtype : ct); /* CUDA's weights: accscalar_t */
            continue;
        }
        ic_val i0 = ic_cast(G, src, IC_I64);
        ic_val i1 = ic_binary(G, IC_OP_ADD, i0, ic_cast(G, ic_binary(G, IC_OP_LT, i0, sym_inum(t, L - 1)), IC_I64));
        ic_val l1 = ic_binary(G, IC_OP_SUB, src, ic_cast(G, i0, ct));
        /* 16-bit linear1d: the CPU kernel's lambdas are of the input dtype (CUDA's accscalar_t) */
        int round_l = nd == 1 && ct != m.dtype && t->device_type == TC_DEV_CPU;
        if (round_l)
            l1 = ic_cast(G, ic_cast(G, l1, m.dtype), ct);
        ic_val l0 = ic_binary(G, IC_OP_SUB, fconst(t, 1.0, ct), l1);
        if (round_l)
            l0 = ic_cast(G, ic_cast(G, l0, m.dtype), ct);
        if (i < nd - 1) { /* weights broadcast over the dims after dim */
            int64_t sh[2] = {O[i], 1};
            l0 = ic_reshape(G, l0, 2, sh);
            l1 = ic_reshape(G, l1, 2, sh);
        }
        ic_val a = ic_cast(G, ic_index_select(G, x, dim, i0), ct), b = ic_cast(G, ic_index_select(G, x, dim, i1), ct);
        /* 16-bit inputs: both dims blended in ct, rounded once (ATen's bilinear kernel) */
        x = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, l0, a), ic_binary(G, IC_OP_MUL, l1, b));
        if (i == 0)
            x = ic_cast(G, x, m.dtype);
    }
    return pool_out(t, p[0]->val, x, 0, out);
}

/* F.unfold(input, kernel_size, dilation=1, padding=0, stride=1) (im2col) of a 3-d/4-d input:
 * one strided slice of the zero-padded input per kernel tap, stacked after the channels
 * ([N, C, kh*kw, oh, ow]) and flattened to [N, C*kh*kw, oh*ow], eager's channel order */
int sym_h_unfold(trace *t, const opdef *d, var **p, var *out) {
    int64_t k[2], dl[2], pad[2], s2[2];
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_conv_ints(t, p[1], 1, 2, k, "kernel_size") < 0 ||
        pool_ints(t, p[2], 0, k, 2, dl, 1, "dilation") < 0 || pool_ints(t, p[3], 0, k, 2, pad, 0, "padding") < 0 ||
        pool_ints(t, p[4], 0, k, 2, s2, 1, "stride") < 0)
        return -1;
    ic_val x = p[0]->val;
    ic_meta m = *sym_metap(t, x);
    if (m.dyn || (m.ndim != 3 && m.ndim != 4))
        return sym_fail(t, "unfold: a 3-d/4-d input of static shape (else eager raises or runs)");
    int batched = m.ndim == 4;
    if (!batched) {
        int64_t sz[4] = {1, m.sizes[0], m.sizes[1], m.sizes[2]};
        x = ic_reshape(G, x, 4, sz);
        m = *sym_metap(t, x);
    }
    int64_t o[2];
    for (int i = 0; i < 2; i++) {
        int64_t eff = dl[i] * (k[i] - 1) + 1;
        if (k[i] < 1 || dl[i] < 1 || s2[i] < 1 || pad[i] < 0)
            return sym_fail(t, "unfold: bad kernel/dilation/padding/stride (eager will raise)");
        o[i] = (m.sizes[2 + i] + 2 * pad[i] - eff) / s2[i] + 1;
        if (m.sizes[2 + i] + 2 * pad[i] < eff || o[i] < 1)
            return sym_fail(t, "unfold: output size too small (eager will raise)");
    }
    ic_val xp = x;
    for (int i = 0; i < 2; i++)
        xp = ic_pad_const(G, xp, 2 + i, pad[i], pad[i], 0.0);
    if (s2[0] == k[0] && s2[1] == k[1] && dl[0] == 1 && dl[1] == 1) {
        /* patches that tile the input (stride == kernel): a permutation of its elements,
         * [N, C, o0, k0, o1, k1] -> [N, C, k0, k1, o0, o1], any kernel size */
        xp = ic_slice(G, ic_slice(G, xp, 2, 0, o[0] * k[0], 1), 3, 0, o[1] * k[1], 1);
        xp = sym_reshape(t, xp, 6, (int64_t[]){m.sizes[0], m.sizes[1], o[0], k[0], o[1], k[1]});
        ic_val r = xp < 0 ? xp : ic_permute(G, xp, (int[]){0, 1, 3, 5, 2, 4});
        if (r < 0 || sym_check_graph(t) < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "unfold: build failed");
        ic_val c = ic_cast(G, r, m.dtype); /* materialized contiguous, then a view */
        if (c < 0 || ic_value_set_format(G, c, r, IC_MF_CONTIGUOUS) < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "unfold: build failed");
        int64_t fin[3] = {m.sizes[0], m.sizes[1] * k[0] * k[1], o[0] * o[1]};
        r = sym_reshape(t, c, batched ? 3 : 2, batched ? fin : fin + 1);
        return r < 0 ? (sym_check_graph(t) < 0 ? -1 : sym_fail(t, "unfold: build failed")) : sym_tensor_out(t, r, out);
    }
    if (k[0] * k[1] > 64)
        return sym_fail(t, "unfold: more than 64 kernel taps left to eager");
    int64_t tap[5] = {m.sizes[0], m.sizes[1], 1, o[0], o[1]};
    ic_val acc = -1;
    for (int64_t a = 0; a < k[0]; a++)
        for (int64_t b = 0; b < k[1]; b++) {
            ic_val v = ic_slice(G, xp, 2, a * dl[0], a * dl[0] + (o[0] - 1) * s2[0] + 1, s2[0]);
            v = ic_slice(G, v, 3, b * dl[1], b * dl[1] + (o[1] - 1) * s2[1] + 1, s2[1]);
            v = ic_reshape(G, v, 5, tap);
            acc = acc < 0 ? v : ic_cat(G, acc, v, 2);
        }
    int64_t fin[3] = {m.sizes[0], m.sizes[1] * k[0] * k[1], o[0] * o[1]};
    ic_val r = ic_reshape(G, acc, 3, fin);
    if (!batched)
        r = ic_reshape(G, r, 2, fin + 1);
    if (sym_check_graph(t) < 0)
        return -1;
    return sym_tensor_out(t, r, out);
}

/* v [N, C, L0, L1] spread along dim (2 or 3) by stride s: s - 1 zeros after each element,
 * the last ones dropped ((L - 1) * s + 1) */
static ic_val spread(trace *t, ic_val v, int dim, int64_t s) {
    if (v < 0 || s == 1)
        return v;
    ic_meta m = *sym_metap(t, v);
    int64_t sz[5], fs[4];
    for (int i = 0, j = 0; i < 4; i++) {
        sz[j++] = m.sizes[i];
        if (i == dim)
            sz[j++] = 1;
        fs[i] = i == dim ? m.sizes[i] * s : m.sizes[i];
    }
    v = ic_pad_const(G, sym_reshape(t, v, 5, sz), dim + 1, 0, s - 1, 0.0);
    v = v < 0 ? v : sym_reshape(t, v, 4, fs);
    return v < 0 ? v : ic_slice(G, v, dim, 0, (m.sizes[dim] - 1) * s + 1, 1);
}

/* F.fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) (col2im) of a
 * 2-d/3-d input [N, C*kh*kw, L]: per kernel tap, its [N, C, oh, ow] block spread out by the
 * stride and placed at the tap's offset in the zero-padded output, summed over the taps in
 * ATen's order (each output element adds its contributions in tap order from zero, as the
 * CPU kernel does), then the padding cropped. Gradients are the graph's own (im2col). */
int sym_h_fold(trace *t, const opdef *d, var **p, var *out) {
    int64_t os[2], k[2], dl[2], pad[2], s2[2];
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_conv_ints(t, p[1], 1, 2, os, "output_size") < 0 ||
        sym_conv_ints(t, p[2], 1, 2, k, "kernel_size") < 0 || pool_ints(t, p[3], 0, k, 2, dl, 1, "dilation") < 0 ||
        pool_ints(t, p[4], 0, k, 2, pad, 0, "padding") < 0 || pool_ints(t, p[5], 0, k, 2, s2, 1, "stride") < 0)
        return -1;
    ic_val x = p[0]->val;
    ic_meta m = *sym_metap(t, x);
    if (m.dyn || (m.ndim != 2 && m.ndim != 3))
        return sym_fail(t, "fold: a 2-d/3-d input of static shape (else eager raises or runs)");
    if (m.dtype < IC_F16 || m.dtype > IC_F64)
        return sym_fail(t, "fold of a non-floating tensor left to eager");
    int batched = m.ndim == 3;
    int64_t n = batched ? m.sizes[0] : 1, ck = m.sizes[batched], L = m.sizes[batched + 1], o[2];
    for (int i = 0; i < 2; i++) {
        int64_t eff = dl[i] * (k[i] - 1) + 1;
        if (k[i] < 1 || dl[i] < 1 || s2[i] < 1 || pad[i] < 0 || os[i] < 1)
            return sym_fail(t, "fold: bad output_size/kernel/dilation/padding/stride (eager will raise)");
        o[i] = (os[i] + 2 * pad[i] - eff) / s2[i] + 1;
        if (os[i] + 2 * pad[i] < eff || o[i] < 1)
            return sym_fail(t, "fold: output size too small (eager will raise)");
    }
    if (ck == 0 || ck % (k[0] * k[1]) != 0 || L != o[0] * o[1] || (batched && n == 0))
        return sym_fail(t, "fold: input sizes do not match the blocks (eager will raise)");
    if (k[0] * k[1] > 64)
        return sym_fail(t, "fold: more than 64 kernel taps left to eager");
    int64_t c = ck / (k[0] * k[1]), hp = os[0] + 2 * pad[0], wp = os[1] + 2 * pad[1];
    int64_t six[6] = {n, c, k[0], k[1], o[0], o[1]}, blk[4] = {n, c, o[0], o[1]};
    x = sym_reshape(t, x, 6, six);
    ic_val acc = -1;
    for (int64_t a = 0; a < k[0] && x >= 0; a++)
        for (int64_t b = 0; b < k[1]; b++) {
            ic_val v = ic_slice(G, x, 2, a, a + 1, 1);
            v = v < 0 ? v : ic_slice(G, v, 3, b, b + 1, 1);
            v = v < 0 ? v : sym_reshape(t, v, 4, blk);
            v = spread(t, spread(t, v, 2, s2[0]), 3, s2[1]);
            int64_t lo0 = a * dl[0], lo1 = b * dl[1];
            v = v < 0 ? v : ic_pad_const(G, v, 2, lo0, hp - lo0 - ((o[0] - 1) * s2[0] + 1), 0.0);
            v = v < 0 ? v : ic_pad_const(G, v, 3, lo1, wp - lo1 - ((o[1] - 1) * s2[1] + 1), 0.0);
            acc = acc < 0 ? v : v < 0 ? v : ic_binary(G, IC_OP_ADD, acc, v);
        }
    ic_val r = acc < 0 ? acc : ic_slice(G, acc, 2, pad[0], pad[0] + os[0], 1);
    r = r < 0 ? r : ic_slice(G, r, 3, pad[1], pad[1] + os[1], 1);
    if (r >= 0 && !batched)
        r = sym_reshape(t, r, 3, (int64_t[3]){c, os[0], os[1]});
    if (sym_check_graph(t) < 0)
        return -1;
    if (r < 0)
        return sym_fail(t, "fold: graph builder failed");
    ic_value_set_format(G, r, r, IC_MF_CONTIGUOUS);
    return sym_tensor_out(t, r, out);
}
