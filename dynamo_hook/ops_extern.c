/* ops_extern.c — calls that stay ATen externs inside the graph: matrix products,
 * linear, convolutions, scaled_dot_product_attention, native multi-head attention.
 */
#include "ops_internal.h"

#include "aten_bridge.h"

/* mm / matmul of a [M, 1] and a [1, N] float32/float64 CPU matrix: the outer product, one
 * product per element and no sum, so the broadcast multiply a * b has the GEMM's values
 * exactly (and its contiguous result); it fuses with its consumers where the BLAS call
 * writes [M, N] and the next kernel reads it back (an RNN step's input projection of one
 * feature: torchc.manifolds.ExpRNN). Its gradients are reductions, fused likewise. */
int sym_outer_product(trace *t, ic_val a, ic_val b) {
    const ic_meta *ma = ic_value_meta(t->g, a), *mb = ic_value_meta(t->g, b);
    return t->device_type == TC_DEV_CPU && ma && mb && !ma->dyn && !mb->dyn && ma->ndim == 2 && mb->ndim == 2 &&
           ma->sizes[1] == 1 && mb->sizes[0] == 1 && ma->dtype == mb->dtype &&
           (ma->dtype == IC_F32 || ma->dtype == IC_F64);
}

/* matmul / mm / bmm (op: ic_extern_kind) */
int sym_h_matmul(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_val ab[2] = {p[0]->val, p[1]->val};
    if ((d->op == IC_EXT_MM || d->op == IC_EXT_MATMUL) && sym_outer_product(t, ab[0], ab[1]))
        return sym_tensor_out(t, ic_binary(t->g, IC_OP_MUL, ab[0], ab[1]), out);
    return sym_tensor_out(t, ic_extern(t->g, (ic_extern_kind)d->op, 2, ab, 0, NULL, 1, 1), out);
}

/* addmm(input, mat1, mat2, beta, alpha) / baddbmm(input, batch1, batch2, beta, alpha) */
int sym_h_addmm(trace *t, const opdef *d, var **p, var *out) {
    double beta, alpha;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 || sym_need_tensor(t, d, p[2]) < 0 ||
        sym_opt_scalar(t, p[3], 1.0, &beta, "beta") < 0 || sym_opt_scalar(t, p[4], 1.0, &alpha, "alpha") < 0)
        return -1;
    ic_val v[3] = {p[0]->val, p[1]->val, p[2]->val};
    return sym_tensor_out(t, ic_extern(t->g, (ic_extern_kind)d->op, 3, v, 0, NULL, beta, alpha), out);
}

/* r's strides made LAPACK's column-major matrices (batch dims outermost), as eager's
 * linalg.solve (left=True) and solve_triangular results are: [..., m, k] -> (.., 1, m) */
static ic_val column_major(trace *t, ic_val r) {
    const ic_meta *m = r < 0 ? NULL : ic_value_meta(t->g, r);
    if (m == NULL || m->ndim < 2 || m->dyn)
        return r;
    int nd = m->ndim;
    int64_t st[IC_MAX_DIMS], rows = m->sizes[nd - 2] > 1 ? m->sizes[nd - 2] : 1;
    int64_t acc = rows * (m->sizes[nd - 1] > 1 ? m->sizes[nd - 1] : 1);
    st[nd - 2] = 1;
    st[nd - 1] = rows;
    for (int i = nd - 3; i >= 0; i--) {
        st[i] = acc;
        acc *= m->sizes[i] > 1 ? m->sizes[i] : 1;
    }
    ic_value_set_strides(t->g, r, st);
    return r;
}

/* matrix_exp(A) (torch., torch.linalg., Tensor.) and linalg.solve(A, B, left=True): extern
 * nodes run by csrc/matrix_exp.cpp (the degree of matrix_exp is chosen there from the norm) */
int sym_h_linalg(trace *t, const opdef *d, var **p, var *out) {
    int nin = d->op == IC_EXT_SOLVE ? 2 : 1, left = 1;
    for (int i = 0; i < nin; i++)
        if (sym_need_tensor(t, d, p[i]) < 0)
            return -1;
    if (d->op == IC_EXT_SOLVE && sym_get_bool(t, p[2], 1, &left, "left") < 0)
        return -1;
    ic_val v[2] = {p[0]->val, nin > 1 ? p[1]->val : -1};
    int64_t prm = left;
    ic_val r = ic_extern(t->g, (ic_extern_kind)d->op, nin, v, d->op == IC_EXT_SOLVE, &prm, 1, 1);
    return sym_tensor_out(t, d->op == IC_EXT_SOLVE && left ? column_major(t, r) : r, out);
}

/* torch.linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False): the solve
 * extern with (left, upper, unitriangular) after its left param, run by ATen's own
 * linalg_solve_triangular (csrc/matrix_exp.cpp); only A's triangle is read, as in eager.
 * Its backward rule: graph/vjp_extern.c (vjp_solve). */
int sym_h_solve_triangular(trace *t, const opdef *d, var **p, var *out) {
    int upper = 0, left = 1, unit = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    if (sym_is_none(p[2]))
        return sym_fail(t, "solve_triangular: upper is required (eager will raise)");
    if (sym_get_bool(t, p[2], 0, &upper, "upper") < 0 || sym_get_bool(t, p[3], 1, &left, "left") < 0 ||
        sym_get_bool(t, p[4], 0, &unit, "unitriangular") < 0)
        return -1;
    if (p[5] != NULL && !sym_is_none(p[5]))
        return sym_fail(t, "solve_triangular with out= left to eager");
    ic_val v[2] = {p[0]->val, p[1]->val};
    int64_t prm[4] = {left, upper, unit, 1};
    return sym_tensor_out(t, column_major(t, ic_extern(t->g, IC_EXT_SOLVE, 2, v, 4, prm, 1, 1)), out);
}

/* v = {input, weight[, bias]} of (input, weight, bias=None) (linear, conv): the count, -1 */
static int bias_operands(trace *t, const opdef *d, var **p, ic_val *v) {
    int n = 2;
    v[0] = p[0]->val;
    v[1] = p[1]->val;
    v[2] = -1;
    if (!sym_is_none(p[2])) {
        if (sym_need_tensor(t, d, p[2]) < 0)
            return -1;
        v[n++] = p[2]->val;
    }
    return n;
}

/* F.linear(input, weight, bias=None) */
int sym_h_linear(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_val v[3];
    int n = bias_operands(t, d, p, v);
    if (n < 0)
        return -1;
    return sym_tensor_out(t, ic_extern(t->g, IC_EXT_LINEAR, n, v, 0, NULL, 1, 1), out);
}

/* one int or nd ints (a 1-tuple repeats) */
int sym_conv_ints(trace *t, var *v, long long dflt, int nd, int64_t *out, const char *what) {
    long long x[8];
    int n = 0;
    if (sym_is_none(v)) {
        x[0] = dflt;
        n = 1;
    } else if (sym_get_ints(t, v, x, 8, &n, what) < 0) {
        return -1;
    }
    if (n != 1 && n != nd)
        return sym_fail(t, "conv: %s must have %d values", what, nd);
    for (int i = 0; i < nd; i++)
        out[i] = x[n == 1 ? 0 : i];
    return 0;
}

/* mode="max-autotune": ATen's conv of these shapes timed in both layouts on scratch
 * tensors (torchc/_autotune.py); 1 channels-last, 0 NCHW, -1 not decided (then the fixed
 * rule). */
static int conv_tuned(trace *t, const ic_meta *xm, const ic_meta *wm, const int64_t *prm, int nd,
                      int bias) {
    PyObject *mod = NULL, *r = NULL;
    int v = -1;
    if (xm->dyn || wm->dyn || xm->ndim != 4 || wm->ndim != 4)
        return -1;
    const int64_t *s = prm + 1, *pd = prm + 1 + nd, *dl = prm + 1 + 2 * nd;
    mod = PyImport_ImportModule("torchc._autotune");
    if (mod != NULL)
        r = PyObject_CallMethod(mod, "conv_channels_last", "((LLLL)(LLLL)(LL)(LL)(LL)Lsii)",
                                (long long)xm->sizes[0], (long long)xm->sizes[1], (long long)xm->sizes[2],
                                (long long)xm->sizes[3], (long long)wm->sizes[0], (long long)wm->sizes[1],
                                (long long)wm->sizes[2], (long long)wm->sizes[3], (long long)s[0],
                                (long long)s[1], (long long)pd[0], (long long)pd[1], (long long)dl[0],
                                (long long)dl[1], (long long)prm[1 + 3 * nd], ic_dtype_name(xm->dtype),
                                t->device_type == TC_DEV_CUDA ? (t->device_index > 0 ? t->device_index : 0) : -1,
                                bias);
    if (r != NULL)
        v = PyObject_IsTrue(r);
    Py_XDECREF(r);
    Py_XDECREF(mod);
    if (v < 0 && PyErr_Occurred() && tc_clear_expected(PyExc_Exception) < 0)
        return -2; /* MemoryError, KeyboardInterrupt: propagated */
    return v < 0 ? -1 : v;
}

/* 2-d convs in channels-last layout: TORCHC_CONV_LAYOUT=nhwc always, =nchw never; by default
 * on CUDA for 16-bit floats (what cuDNN's tensor-core kernels read; like Inductor's layout
 * optimization), or under mode="max-autotune" whichever layout ATen's conv ran faster in. */
static int conv_channels_last(trace *t, const ic_meta *xm, const ic_meta *wm, const int64_t *prm,
                              int nd, int bias) {
    char env[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_conv_layout, env); /* torchc.config.conv_layout */
    if (strcmp(env, "nhwc") == 0)
        return 1;
    if (strcmp(env, "nchw") == 0)
        return 0;
    if (t->cfg->autotune) {
        int v = conv_tuned(t, xm, wm, prm, nd, bias);
        if (v != -1)
            return v;
    }
    return t->device_type == TC_DEV_CUDA && (xm->dtype == IC_F16 || xm->dtype == IC_BF16);
}


static ic_val pad_dim(trace *t, ic_val v, int dim, int64_t lo, int64_t hi);

/* conv1d/conv2d/conv3d(input, weight, bias, stride, padding, dilation, groups); op: nd */
int sym_h_conv(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op;
    int64_t prm[3 + 3 * 3];
    char sympad[IC_MAX_DIMS] = {0}; /* dims padded by one zero after ('same', even kernel) */
    prm[0] = nd;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 ||
        sym_conv_ints(t, p[3], 1, nd, prm + 1, "stride") < 0 || sym_conv_ints(t, p[5], 1, nd, prm + 1 + 2 * nd, "dilation") < 0)
        return -1;
    long long groups = 1;
    if (!sym_is_none(p[6]) && sym_get_int(t, p[6], &groups, "groups") < 0)
        return -1;
    prm[1 + 3 * nd] = groups;
    if (p[4] != NULL && p[4]->kind == V_CONST && PyUnicode_Check(p[4]->obj)) {
        const char *mode;
        if (sym_get_str(t, p[4], NULL, &mode, "conv: padding") < 0)
            return -1;
        const ic_meta *w = sym_metap(t, p[1]->val);
        int same = strcmp(mode, "same") == 0;
        if (!same && strcmp(mode, "valid") != 0)
            return sym_fail(t, "conv: padding '%s' (eager will raise)", mode);
        for (int i = 0; i < nd; i++) {
            int64_t total = w->ndim == nd + 2 ? prm[1 + 2 * nd + i] * (w->sizes[2 + i] - 1) : 0;
            if (same && prm[1 + i] != 1)
                return sym_fail(t, "conv: padding='same' with stride (eager will raise)");
            prm[1 + nd + i] = same ? total / 2 : 0;
            if (same && total % 2) {
                /* an odd total: eager pads the input by one more zero after (right of) this
                 * dim, then convolves with total / 2 on both sides; so does the graph */
                const ic_meta *xm0 = sym_metap(t, p[0]->val);
                if (xm0->dyn || xm0->ndim < nd + 1)
                    return sym_fail(t, "conv: padding='same' with an even kernel of a symbolic or unbatched input left to eager");
                sympad[xm0->ndim - nd + i] = 1;
            }
        }
    } else if (sym_conv_ints(t, p[4], 0, nd, prm + 1 + nd, "padding") < 0) {
        return -1;
    }
    ic_val v[3];
    int n = bias_operands(t, d, p, v);
    if (n < 0)
        return -1;
    for (int i = 0; i < IC_MAX_DIMS && v[0] >= 0; i++)
        if (sympad[i])
            v[0] = pad_dim(t, v[0], i, 0, 1);
    if (v[0] < 0)
        return sym_check_graph(t);
    const ic_meta *xm = sym_metap(t, v[0]);
    ic_val dw = -1;
    int dwr = sym_dw_conv(t, nd, prm, v, n, &dw);
    if (dwr < 0)
        return -1;
    if (dwr == 1)
        return sym_tensor_out(t, dw, out);
    int cl = nd == 2 && xm->ndim == 4 ? conv_channels_last(t, xm, sym_metap(t, v[1]), prm, nd, n == 3) : 0;
    if (cl == -2)
        return -1;
    if (cl == 1) {
        /* channels-last: the conv reads x as [N,H,W,C] and writes [N,H',W',O] (cuDNN's fast
         * layout for 16-bit types); the graph sees NCHW views of both, so the producer of x
         * writes NHWC and the consumers of the result read it contiguously */
        prm[2 + 3 * nd] = 1;
        v[0] = ic_permute_fold(G, v[0], (const int[]){0, 2, 3, 1});
        /* the bias is a graph add over the last (channel) dim, fused into the next kernel
         * (cuDNN's path adds it in a kernel of its own) */
        ic_val r = ic_extern(t->g, IC_EXT_CONV, 2, v, 3 + 3 * nd, prm, 1, 1);
        if (r >= 0 && n == 3)
            r = ic_binary(G, IC_OP_ADD, r, v[2]);
        if (r < 0)
            return sym_check_graph(t);
        return sym_tensor_out(t, ic_permute(G, r, (const int[]){0, 3, 1, 2}), out);
    }
    return sym_tensor_out(t, ic_extern(t->g, IC_EXT_CONV, n, v, 2 + 3 * nd, prm, 1, 1), out);
}

/* zeros of v's dtype and shape but n on dim */
static ic_val zeros_like_dim(trace *t, const ic_meta *m, int dim, int64_t n) {
    int64_t sz[IC_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++)
        sz[i] = i == dim ? n : m->sizes[i];
    return ic_expand(G, ic_cast(G, ic_scalar(G, 0.0, IC_I64), m->dtype), m->ndim, sz);
}

/* v padded on dim by lo zeros before and hi after (negative: that many cropped) */
static ic_val pad_dim(trace *t, ic_val v, int dim, int64_t lo, int64_t hi) {
    const ic_meta *mp = v < 0 ? NULL : ic_value_meta(G, v);
    if (mp == NULL)
        return IC_NONE;
    ic_meta m = *mp;
    int64_t n = m.sizes[dim];
    if (lo < 0 || hi < 0) {
        int64_t a = lo < 0 ? -lo : 0, b = hi < 0 ? n + hi : n;
        v = ic_slice(G, v, dim, a, b, 1);
        m.sizes[dim] = b - a;
    }
    if (v >= 0 && lo > 0)
        v = ic_cat(G, zeros_like_dim(t, &m, dim, lo), v, dim);
    if (v >= 0 && hi > 0) {
        m.sizes[dim] += lo > 0 ? lo : 0;
        v = ic_cat(G, v, zeros_like_dim(t, &m, dim, hi), dim);
    }
    return v;
}

/* conv_transpose{1,2,3}d(input, weight, bias, stride, padding, output_padding, groups,
 * dilation): the convolution (sym_h_conv, stride 1) of the input spread out by stride
 * (stride - 1 zeros between its elements) and padded by dilation * (k - 1) - padding on
 * each side (+ output_padding after; negative: cropped), with the weight's in and out
 * channels swapped within each group and its taps reversed. Eager's values up to the
 * order of the sums; the gradients are the graph's own. Unbatched inputs and symbolic
 * shapes are left to eager. */
int sym_h_conv_transpose(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op;
    int64_t st[3], pd[3], op[3], dl[3];
    long long g = 1;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 ||
        sym_conv_ints(t, p[3], 1, nd, st, "stride") < 0 || sym_conv_ints(t, p[4], 0, nd, pd, "padding") < 0 ||
        sym_conv_ints(t, p[5], 0, nd, op, "output_padding") < 0 || sym_conv_ints(t, p[7], 1, nd, dl, "dilation") < 0 ||
        (!sym_is_none(p[6]) && sym_get_int(t, p[6], &g, "groups") < 0))
        return -1;
    ic_meta xm = *sym_metap(t, p[0]->val), wm = *sym_metap(t, p[1]->val);
    if (xm.ndim != nd + 2 || wm.ndim != nd + 2 || xm.dyn || wm.dyn)
        return sym_fail(t, "%s: unbatched input or symbolic shapes left to eager", d->name);
    if (g < 1 || xm.sizes[1] != wm.sizes[0] || wm.sizes[0] % g != 0 || xm.dtype != wm.dtype || xm.dtype < IC_F16)
        return sym_fail(t, "%s: channels, groups or dtypes do not fit (eager decides)", d->name);
    /* eager (mkldnn, cuDNN, the slow kernels alike): a channels-last result when the input or
     * the weight is channels-last; the graph's convolution, then a copy in that layout */
    int cl = nd == 2 && (ic_value_suggest_format(G, p[0]->val) == IC_MF_CHANNELS_LAST ||
                         ic_value_suggest_format(G, p[1]->val) == IC_MF_CHANNELS_LAST);
    for (int i = 0; i < nd; i++) {
        int64_t L = xm.sizes[2 + i], k = wm.sizes[2 + i];
        if (st[i] < 1 || dl[i] < 1 || pd[i] < 0 || op[i] < 0 || (op[i] >= st[i] && op[i] >= dl[i]) || L < 1 || k < 1 ||
            (L - 1) * st[i] - 2 * pd[i] + dl[i] * (k - 1) + op[i] + 1 < 1)
            return sym_fail(t, "%s: stride/padding/output_padding/dilation or sizes eager refuses", d->name);
    }
    ic_val v = p[0]->val;
    for (int i = 0; i < nd && v >= 0; i++) {
        int D = 2 + i;
        ic_meta m = *ic_value_meta(G, v);
        int64_t L = m.sizes[D], s = st[i];
        if (s > 1) { /* [.., L, ..] -> [.., L, s, ..] (zeros after each) -> [.., L*s, ..] -> first (L-1)*s+1 */
            int64_t sz[IC_MAX_DIMS];
            int n = 0;
            for (int j = 0; j < m.ndim; j++) {
                sz[n++] = m.sizes[j];
                if (j == D)
                    sz[n++] = 1;
            }
            ic_val u = sym_reshape(t, v, n, sz);
            ic_meta um = *ic_value_meta(G, u);
            u = ic_cat(G, u, zeros_like_dim(t, &um, D + 1, s - 1), D + 1);
            int64_t fs[IC_MAX_DIMS];
            for (int j = 0; j < m.ndim; j++)
                fs[j] = j == D ? L * s : m.sizes[j];
            v = u < 0 ? u : sym_reshape(t, u, m.ndim, fs);
            v = v < 0 ? v : ic_slice(G, v, D, 0, (L - 1) * s + 1, 1);
        }
        int64_t lo = dl[i] * (wm.sizes[2 + i] - 1) - pd[i];
        v = pad_dim(t, v, D, lo, lo + op[i]);
    }
    /* weight [Cin, Cout/g, k..] -> [g, Cin/g, Cout/g, k..] -> [g, Cout/g, Cin/g, k..] -> [Cout, Cin/g, k..] */
    int64_t cin = wm.sizes[0], cog = wm.sizes[1], w5[IC_MAX_DIMS], w4[IC_MAX_DIMS];
    int perm[IC_MAX_DIMS] = {0, 2, 1};
    w5[0] = g;
    w5[1] = cin / g;
    w5[2] = cog;
    w4[0] = g * cog;
    w4[1] = cin / g;
    for (int i = 0; i < nd; i++) {
        w5[3 + i] = w4[2 + i] = wm.sizes[2 + i];
        perm[3 + i] = 3 + i;
    }
    ic_val w = sym_reshape(t, p[1]->val, nd + 3, w5);
    w = w < 0 ? w : ic_permute(G, w, perm);
    w = w < 0 ? w : sym_reshape(t, w, nd + 2, w4);
    for (int i = 0; i < nd && w >= 0; i++) { /* taps reversed */
        int64_t k = wm.sizes[2 + i];
        if (k > 1)
            w = ic_index_select(G, w, 2 + i, ic_arange(G, k, (double)(k - 1), -1.0, IC_I64));
    }
    if (v < 0 || w < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: graph builder failed", d->name);
    var xv, wv, sv, pv, dv;
    PyObject *dil = PyTuple_New(nd);
    for (int i = 0; dil && i < nd; i++) {
        PyObject *o = PyLong_FromLongLong(dl[i]);
        if (o == NULL) {
            Py_CLEAR(dil);
            break;
        }
        PyTuple_SET_ITEM(dil, i, o);
    }
    if (dil == NULL || sym_const(t, dil, &dv) < 0 || sym_tensor_out(t, v, &xv) < 0 ||
        sym_tensor_out(t, w, &wv) < 0 || sym_const(t, PyLong_FromLong(1), &sv) < 0 ||
        sym_const(t, PyLong_FromLong(0), &pv) < 0)
        return -1;
    static const char *names[3] = {"conv1d", "conv2d", "conv3d"};
    const opdef cd = {names[nd - 1], W_F, "input,weight,bias,stride,padding,dilation,groups", sym_h_conv, nd};
    if (sym_h_conv(t, &cd, (var *[]){&xv, &wv, p[2], &sv, &pv, &dv, p[6]}, out) < 0)
        return -1;
    return cl ? dh_layout_copy(t, out->val, IC_MF_CHANNELS_LAST, out) : 0;
}

/* CUDA: eager's attention output has the layout of the kernel its dispatcher picks (flash and
 * memory-efficient: the transpose of a [B, L, H, D] result; f32 on an H100 gave (32768, 64,
 * 256, 1) where torchc's contiguous output had (32768, 8192, 64, 1)): the op is run once on
 * tensors of these metas (aten_bridge.cpp tc_sdpa_out_strides) and its strides become a's
 * eager strides (graph outputs are allocated with them). Unknown: left contiguous. */
static void sdpa_eager_layout(trace *t, ic_val a, const ic_val *v, int n, int causal, double scale) {
    ic_meta m[4];
    for (int i = 0; i < n; i++) {
        m[i] = *sym_metap(t, v[i]);
        if (m[i].dyn || !ic_value_strides(G, v[i], m[i].strides))
            return;
    }
    int64_t st[IC_MAX_DIMS];
    if (tc_sdpa_out_strides(&m[0], &m[1], &m[2], n == 4 ? &m[3] : NULL, causal, scale,
                            t->device_index > 0 ? t->device_index : 0, st) == 0)
        ic_value_set_strides(G, a, st);
}

/* Attention in a training graph (issue 22): the forward extern keeps the statistics of the
 * kernel eager's dispatcher picks (its logsumexp: IC_EXT_SDPA with params {is_causal, 1}, a
 * flat output, ic.h ic_sdpa_stats_layout), built with grad off; its backward is a template
 * (graph/autograd.c ic_custom_capture, as for a torch.autograd.Function) calling that
 * kernel's ATen backward on the saved q, k, v, output and statistics (IC_EXT_SDPA_BWD with
 * params {is_causal, 1}), so attention is never recomputed. Static 4-D shapes (the fused
 * kernels' rank) with at least one element, no mask (see below); 1: not this case, -1:
 * failed. */
static int sdpa_with_stats(trace *t, const ic_val *v, int n, int causal, double scale, ic_val *res) {
    int req = 0;
    for (int i = 0; i < 3; i++) {
        const ic_meta *m = sym_metap(t, v[i]);
        if (m->ndim != 4 || m->dyn || m->dtype < IC_F16 || m->dtype > IC_F64)
            return 1;
        for (int d = 0; d < 4; d++)
            if (m->sizes[d] == 0)
                return 1;
        req |= sym_value_requires_grad(t, v[i]);
    }
    /* with a mask: left to graph/autograd.c's rules (a bool mask here made the first call of
     * a frame that inlines the attention run eagerly: hf_gemma, test_trainmodels_capture;
     * not understood yet) */
    if (!req || n == 4)
        return 1;
    /* CUDA: not yet. The wrong CUDA gradients once blamed on this path came from the direct
     * FlashAttention call for causal Lq != Lk (csrc sdpa_flash_ok, fixed); with that fixed this
     * path matched eager on an H100 (test_training_sdpa2 with stats expected), but it was not
     * shown faster (AMP step, same machine: BERT-base MLM 21.7 -> 20.2 ms, GPT-2 25.7 -> 27.9 ms,
     * FlashAttention taken for every 16-bit case), so CUDA keeps the recomputing backward */
    if (t->device_type != TC_DEV_CPU)
        return 1;
    const ic_meta qm = *sym_metap(t, v[0]);
    ic_meta om = qm;
    om.sizes[3] = sym_metap(t, v[2])->sizes[3];
    int64_t nn, off, total, prm[2] = {causal, 1};
    ic_sdpa_stats_layout(&om, &nn, &off, &total);
    ic_set_grad_enabled(G, 0);
    ic_val f = ic_extern(G, IC_EXT_SDPA, n, v, 2, prm, scale, 1);
    ic_val o = f < 0 ? f : ic_reshape(G, ic_slice(G, f, 0, 0, nn, 1), 4, om.sizes);
    if (o >= 0 && ic_value_meta(G, o)->dtype != qm.dtype)
        o = ic_cast(G, o, qm.dtype); /* 16-bit: widened exactly by the extern */
    ic_val st = f < 0 ? f : ic_slice(G, f, 0, off, total, 1);
    ic_set_grad_enabled(G, 1);
    ic_val y = o < 0 || st < 0 ? IC_NONE : ic_custom_output(G, o);
    if (y < 0)
        return -1;
    /* the backward template: operands before `base` are forward values */
    int base = ic_graph_num_values(G), gin0 = ic_graph_num_inputs(G);
    ic_set_grad_enabled(G, 0);
    ic_meta gm = *ic_value_meta(G, y);
    int64_t e = 1;
    for (int i = gm.ndim - 1; i >= 0; i--) {
        gm.strides[i] = e;
        e *= gm.sizes[i] > 1 ? gm.sizes[i] : 1;
    }
    ic_val ph = ic_input(G, &gm);
    ic_val bin[7] = {ph, v[0], v[1], v[2], o, st, n == 4 ? v[3] : IC_NONE};
    ic_val flat = ph < 0 ? ph : ic_extern(G, IC_EXT_SDPA_BWD, n == 4 ? 7 : 6, bin, 2, prm, scale, 1);
    ic_val gin[3] = {IC_NONE, IC_NONE, IC_NONE};
    int64_t at = 0;
    for (int i = 0; i < 3 && flat >= 0; i++) {
        const ic_meta m = *sym_metap(t, v[i]); /* a copy: the slice below may grow the graph's storage */
        int64_t k = m.sizes[0] * m.sizes[1] * m.sizes[2] * m.sizes[3];
        gin[i] = ic_reshape(G, ic_slice(G, flat, 0, at, at + k, 1), m.ndim, m.sizes);
        at += k;
    }
    ic_set_grad_enabled(G, 1);
    if (gin[0] < 0 || gin[1] < 0 || gin[2] < 0 || ic_custom_capture(G, base, gin0, 1, &y, &ph, 3, v, gin) < 0)
        return -1;
    *res = y;
    return 0;
}

/* F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
 * is_causal=False, *, scale=None, enable_gqa=False): an ATen extern (flash/efficient kernels
 * on CUDA). Dropout and grouped heads are left to eager; the scale is made explicit. */
int sym_h_sdpa(trace *t, const opdef *d, var **p, var *out) {
    double dropout = 0.0, scale;
    int causal = 0, gqa = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 || sym_need_tensor(t, d, p[2]) < 0 ||
        sym_opt_num(t, p[4], 0.0, &dropout, "dropout_p") < 0 || sym_get_bool(t, p[5], 0, &causal, "is_causal") < 0 ||
        sym_get_bool(t, p[7], 0, &gqa, "enable_gqa") < 0)
        return -1;
    if (!(dropout >= 0.0 && dropout <= 1.0)) { /* PyUnicode_FromFormat has no %g */
        char pb[32];
        snprintf(pb, sizeof pb, "%g", dropout);
        return sym_fail(t, "scaled_dot_product_attention with dropout_p=%s (eager will raise)", pb);
    }
    ic_val kv[2] = {p[1]->val, p[2]->val};
    if (gqa) {
        /* grouped heads: each key/value head repeated for its group of query heads
         * (repeat_interleave on dim -3), then plain attention */
        ic_meta qm = *sym_metap(t, p[0]->val);
        for (int i = 0; i < 2; i++) {
            ic_meta m = *sym_metap(t, kv[i]);
            if (qm.dyn || m.dyn || m.ndim < 3 || m.ndim != qm.ndim || m.ndim + 1 > IC_MAX_DIMS)
                return sym_fail(t, "scaled_dot_product_attention with enable_gqa: unsupported shapes");
            int64_t hq = qm.sizes[qm.ndim - 3], hk = m.sizes[m.ndim - 3];
            if (hk <= 0 || hq % hk != 0)
                return sym_fail(t, "scaled_dot_product_attention: query heads not a multiple of key heads (eager will raise)");
            if (hq == hk)
                continue;
            int64_t s5[IC_MAX_DIMS];
            int n5 = 0;
            for (int j = 0; j < m.ndim; j++) {
                s5[n5++] = m.sizes[j];
                if (j == m.ndim - 3)
                    s5[n5++] = 1;
            }
            ic_val e = ic_reshape(G, kv[i], n5, s5);
            s5[m.ndim - 2] = hq / hk;
            e = e < 0 ? e : ic_expand(G, e, n5, s5);
            int64_t s4[IC_MAX_DIMS];
            for (int j = 0; j < m.ndim; j++)
                s4[j] = j == m.ndim - 3 ? hq : m.sizes[j];
            kv[i] = e < 0 ? e : ic_reshape(G, e, m.ndim, s4);
            if (kv[i] < 0)
                return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
        }
    }
    ic_val qv = p[0]->val;
    {
        /* batch dims that broadcast (a multi-query key/value [B, 1, S, E] against query heads
         * [B, H, L, E]): each operand expanded to the common batch dims, as eager's matmuls
         * broadcast them */
        ic_meta m3[3] = {*sym_metap(t, qv), *sym_metap(t, kv[0]), *sym_metap(t, kv[1])};
        int nd = m3[0].ndim, same = 1;
        for (int j = 0; j < 3 && same; j++)
            same = m3[j].ndim == nd;
        for (int i = 0; same && i < nd - 2; i++)
            same = m3[1].sizes[i] == m3[0].sizes[i] && m3[2].sizes[i] == m3[0].sizes[i];
        if (!same && m3[1].ndim == nd && m3[2].ndim == nd && nd >= 3) {
            if (m3[0].dyn || m3[1].dyn || m3[2].dyn)
                return sym_fail(t, "scaled_dot_product_attention: broadcast batch dims on symbolic sizes");
            int64_t b[IC_MAX_DIMS];
            for (int i = 0; i < nd - 2; i++) {
                b[i] = 1;
                for (int j = 0; j < 3; j++) {
                    int64_t s = m3[j].sizes[i];
                    if (s != 1 && b[i] != 1 && s != b[i])
                        return sym_fail(t, "scaled_dot_product_attention: batch dims do not broadcast (eager will raise)");
                    if (s != 1)
                        b[i] = s;
                }
            }
            ic_val *ops[3] = {&qv, &kv[0], &kv[1]};
            for (int j = 0; j < 3; j++) {
                int64_t sz[IC_MAX_DIMS];
                int differs = 0;
                for (int i = 0; i < nd; i++) {
                    sz[i] = i < nd - 2 ? b[i] : m3[j].sizes[i];
                    differs |= sz[i] != m3[j].sizes[i];
                }
                if (differs && (*ops[j] = ic_expand(G, *ops[j], nd, sz)) < 0)
                    return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
            }
        }
    }
    const ic_meta *q = sym_metap(t, qv);
    if (q->ndim < 1 || (q->dyn && !sym_dim_static(q->dims[q->ndim - 1])))
        return sym_fail(t, "scaled_dot_product_attention: query without a static head dim");
    if (sym_opt_num(t, p[6], 1.0 / sqrt((double)q->sizes[q->ndim - 1]), &scale, "scale") < 0)
        return -1;
    ic_val v[4] = {qv, kv[0], kv[1], -1};
    int n = 3;
    if (!sym_is_none(p[3])) {
        if (sym_need_tensor(t, d, p[3]) < 0)
            return -1;
        if (causal)
            return sym_fail(t, "scaled_dot_product_attention: attn_mask with is_causal left to eager");
        v[n++] = p[3]->val;
    }
    if (dropout != 0.0) /* training: eager's math path with its dropout mask (ops_loss.c) */
        return sym_sdpa_dropout(t, v[0], v[1], v[2], n == 4 ? v[3] : -1, causal, scale, dropout, out);
    ic_val a;
    int rs = sdpa_with_stats(t, v, n, causal, scale, &a);
    if (rs < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "scaled_dot_product_attention: backward template failed");
    int64_t prm[1] = {causal};
    if (rs > 0)
        a = ic_extern(G, IC_EXT_SDPA, n, v, 1, prm, scale, 1);
    if (a >= 0 && t->device_type != TC_DEV_CPU) { /* CUDA: the kernel chosen at run time sets the layout */
        sym_mark_layout_open(t, a);
        sdpa_eager_layout(t, a, v, n, causal, scale);
    }
    return sym_tensor_out(t, a, out);
}

/* torch._native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight,
 * qkv_bias, proj_weight, proj_bias, mask=None, need_weights=True, average_attn_weights=True,
 * mask_type=None): nn.MultiheadAttention's eager fast path (self-attention, batch first).
 * Built as its math: qkv = linear(x), split into heads, scaled_dot_product_attention, heads
 * merged, out = linear(.); returns (out, None). Masks and need_weights=True are left to eager. */
int sym_h_native_mha(trace *t, const opdef *d, var **p, var *out) {
    long long e, h;
    int need_w;
    for (int i = 0; i < 3; i++)
        if (sym_need_tensor(t, d, p[i]) < 0)
            return -1;
    if (sym_get_int(t, p[3], &e, "embed_dim") < 0 || sym_get_int(t, p[4], &h, "num_head") < 0 ||
        sym_get_bool(t, p[10], 1, &need_w, "need_weights") < 0)
        return -1;
    for (int i = 5; i < 9; i++)
        if (sym_need_tensor(t, d, p[i]) < 0)
            return -1;
    if (!sym_is_none(p[9]))
        return sym_fail(t, "%s with a mask left to eager", d->name);
    if (need_w)
        return sym_fail(t, "%s with need_weights=True left to eager", d->name);
    if (p[0]->oid <= 0 || p[0]->oid != p[1]->oid || p[1]->oid != p[2]->oid)
        return sym_fail(t, "%s: query, key and value are not one tensor", d->name);
    ic_meta x = *sym_metap(t, p[0]->val);
    if (x.ndim != 3 || x.dyn || h <= 0 || e % h != 0 || x.sizes[2] != e)
        return sym_fail(t, "%s: unsupported shapes", d->name);
    int64_t b = x.sizes[0], l = x.sizes[1], hd = e / h;
    ic_val qkv = ic_extern(G, IC_EXT_LINEAR, 3, (ic_val[]){p[0]->val, p[5]->val, p[6]->val}, 0,
                           NULL, 1, 1);
    ic_val heads[3] = {-1, -1, -1};
    for (int i = 0; i < 3 && qkv >= 0; i++) { /* [B,L,3E] -> q/k/v [B,H,L,D] */
        ic_val part = ic_slice(G, qkv, 2, i * e, (i + 1) * e, 1);
        part = part < 0 ? part : ic_reshape(G, part, 4, (int64_t[]){b, l, h, hd});
        heads[i] = part < 0 ? part : ic_permute(G, part, (const int[]){0, 2, 1, 3});
    }
    if (heads[0] < 0 || heads[1] < 0 || heads[2] < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: graph builder failed", d->name);
    int64_t causal = 0;
    ic_val a = ic_extern(G, IC_EXT_SDPA, 3, heads, 1, &causal, 1.0 / sqrt((double)hd), 1);
    a = a < 0 ? a : ic_permute(G, a, (const int[]){0, 2, 1, 3});
    a = a < 0 ? a : ic_reshape(G, a, 3, (int64_t[]){b, l, e});
    a = a < 0 ? a : ic_extern(G, IC_EXT_LINEAR, 3, (ic_val[]){a, p[7]->val, p[8]->val}, 0, NULL, 1, 1);
    var *items = sym_alloc(t, 2);
    if (items == NULL || sym_tensor_out(t, a, &items[0]) < 0 ||
        sym_const(t, Py_NewRef(Py_None), &items[1]) < 0)
        return -1;
    *out = sym_var(V_SEQ);
    out->n = 2;
    out->items = items;
    return 0;
}

/* torch._transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias,
 * proj_weight, proj_bias, use_gelu, norm_first, eps, norm1 weight/bias, norm2 weight/bias,
 * linear1 weight/bias, linear2 weight/bias, mask, mask_type): nn.TransformerEncoderLayer's
 * inference fast path, composed as ATen composes it: (layer_norm first,) native multi-head
 * attention (above), + src, (layer_norm,) linear, gelu/relu, linear, + the residual,
 * (layer_norm). A mask, or an empty src (eager returns a clone), is left to eager. */
int sym_h_encoder_layer(trace *t, const opdef *d, var **p, var *out) {
    static const int tensors[] = {0, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 16, 17};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        if (sym_need_tensor(t, d, p[tensors[i]]) < 0)
            return -1;
    long long e;
    int gelu, norm_first;
    double eps;
    if (sym_get_int(t, p[1], &e, "embed_dim") < 0 || sym_get_bool(t, p[7], 0, &gelu, "use_gelu") < 0 ||
        sym_get_bool(t, p[8], 0, &norm_first, "norm_first") < 0 || sym_opt_num(t, p[9], 1e-5, &eps, "eps") < 0)
        return -1;
    if (!sym_is_none(p[18]))
        return sym_fail(t, "%s with a mask left to eager", d->name);
    ic_meta x = *sym_metap(t, p[0]->val);
    if (x.ndim != 3 || x.dyn || x.sizes[2] != e || x.sizes[0] * x.sizes[1] == 0 || x.dtype < IC_F16)
        return sym_fail(t, "%s: unsupported shapes or dtype (or an empty input) left to eager", d->name);
    static const opdef ln_d = {"layer_norm", W_F, "input,normalized_shape,weight,bias,eps", sym_h_layer_norm, 0};
    static const opdef mha_d = {"_native_multi_head_attention", W_TORCH, "", sym_h_native_mha, 0};
    static const opdef lin_d = {"linear", W_F, "input,weight,bias", sym_h_linear, 0};
    var cshape, ceps, cnone, cfalse, ctrue, cur, a, r;
    if (sym_const(t, Py_BuildValue("(L)", e), &cshape) < 0 || sym_const(t, PyFloat_FromDouble(eps), &ceps) < 0 ||
        sym_const(t, Py_NewRef(Py_None), &cnone) < 0 || sym_const(t, Py_NewRef(Py_False), &cfalse) < 0 ||
        sym_const(t, Py_NewRef(Py_True), &ctrue) < 0)
        return -1;
#define LN(in, w, b, res) sym_h_layer_norm(t, &ln_d, (var *[]){&(in), &cshape, (w), (b), &ceps}, &(res))
    cur = *p[0];
    if (norm_first && LN(*p[0], p[10], p[11], cur) < 0)
        return -1;
    var *mp[13] = {&cur, &cur, &cur, p[1], p[2], p[3], p[4], p[5], p[6], &cnone, &cfalse, &ctrue, &cnone};
    if (sym_h_native_mha(t, &mha_d, mp, &a) < 0)
        return -1;
    if (a.kind != V_SEQ || a.n < 1 || a.items[0].kind != V_TENSOR)
        return sym_fail(t, "%s: attention failed", d->name);
    if (sym_tensor_out(t, ic_binary(G, IC_OP_ADD, a.items[0].val, p[0]->val), &cur) < 0)
        return -1;
    if (!norm_first && LN(cur, p[10], p[11], cur) < 0)
        return -1;
    var res = cur, h;
    if (norm_first && LN(res, p[12], p[13], cur) < 0)
        return -1;
    if (sym_h_linear(t, &lin_d, (var *[]){&cur, p[14], p[15]}, &h) < 0 ||
        sym_tensor_out(t, ic_unary(G, gelu ? IC_OP_GELU : IC_OP_RELU, h.val), &h) < 0 ||
        sym_h_linear(t, &lin_d, (var *[]){&h, p[16], p[17]}, &r) < 0 ||
        sym_tensor_out(t, ic_binary(G, IC_OP_ADD, r.val, res.val), &cur) < 0)
        return -1;
    if (!norm_first && LN(cur, p[12], p[13], cur) < 0)
        return -1;
#undef LN
    *out = cur;
    return 0;
}

/* ---- einsum: permutes, sums and one batched matrix product per pair of operands -------- */

#define EIN_LABELS 64 /* a-z, A-Z (by torch's order: A-Z first), then the dims of '...' */

typedef struct ein_op {
    ic_val v;
    int n, lab[IC_MAX_DIMS];
} ein_op;

static int ein_label(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + (c - 'a');
    return -1;
}

/* The contraction follows ATen's einsum step by step, so that the result has eager's strides
 * as well as its values: every operand is viewed (size-1 dims added, permuted) in one order
 * of all labels (the output's, then '...' when the output lacks it, then the summed labels),
 * pairs contract left to right, the result in front. */
static ic_val ein_sum_keep(trace *t, ic_val v, int dim) {
    return ic_reduce(G, IC_OP_SUM, v, 1u << dim, 1, -1);
}

/* ATen's sumproduct_pair(a, b, sum_dims, keepdim=true) of two operands of n dims each:
 * a broadcast multiply when nothing is summed, else permutes, one bmm, a view and the
 * inverse permute */
static ic_val ein_pair(trace *t, ic_val a, ic_val b, int n, const int *sumd, int ns) {
    if (ns == 0)
        return ic_binary(G, IC_OP_MUL, a, b);
    int is_sum[IC_MAX_DIMS] = {0};
    for (int i = 0; i < ns; i++)
        is_sum[sumd[i]] = 1;
    int lro[IC_MAX_DIMS], lo[IC_MAX_DIMS], ro[IC_MAX_DIMS], nlro = 0, nlo = 0, nro = 0;
    int64_t lro_size = 1, lo_size = 1, ro_size = 1, sum_size = 1;
    for (int i = 0; i < n; i++) {
        if (a < 0 || b < 0)
            return IC_NONE;
        int64_t za = sym_metap(t, a)->sizes[i], zb = sym_metap(t, b)->sizes[i];
        int sl = za != 1, sr = zb != 1;
        if (is_sum[i]) {
            if (sl && sr)
                sum_size *= za;
            else if (sl)
                a = ein_sum_keep(t, a, i);
            else if (sr)
                b = ein_sum_keep(t, b, i);
        } else if (sl && sr) {
            lro[nlro++] = i;
            lro_size *= za;
        } else if (sl) {
            lo[nlo++] = i;
            lo_size *= za;
        } else {
            ro[nro++] = i;
            ro_size *= zb;
        }
    }
    if (a < 0 || b < 0)
        return IC_NONE;
    if (nlo && nro && ro[nro - 1] < lo[0]) { /* as ATen (swap_lo_ro): the bmm then writes the output's order */
        ic_val tv = a;
        a = b;
        b = tv;
        int tl[IC_MAX_DIMS], tn = nlo;
        memcpy(tl, lo, sizeof lo);
        memcpy(lo, ro, sizeof ro);
        memcpy(ro, tl, sizeof tl);
        nlo = nro;
        nro = tn;
        int64_t ts = lo_size;
        lo_size = ro_size;
        ro_size = ts;
    }
    int lperm[IC_MAX_DIMS], rperm[IC_MAX_DIMS], operm[IC_MAX_DIMS], k = 0;
    int64_t osz[IC_MAX_DIMS];
    const ic_meta *ma = sym_metap(t, a), *mb = sym_metap(t, b);
#define EIN_PUT(list, cnt, sizes_of)                                                                                   \
    for (int i = 0; i < (cnt); i++, k++) {                                                                             \
        lperm[k] = (list)[i];                                                                                          \
        operm[(list)[i]] = k;                                                                                          \
        osz[k] = sizes_of;                                                                                             \
    }
    EIN_PUT(lro, nlro, ma->sizes[lro[i]])
    EIN_PUT(lo, nlo, ma->sizes[lo[i]])
    EIN_PUT(sumd, ns, 1)
    EIN_PUT(ro, nro, mb->sizes[ro[i]])
#undef EIN_PUT
    k = 0;
    for (int i = 0; i < nlro; i++)
        rperm[k++] = lro[i];
    for (int i = 0; i < ns; i++)
        rperm[k++] = sumd[i];
    for (int i = 0; i < nro; i++)
        rperm[k++] = ro[i];
    for (int i = 0; i < nlo; i++)
        rperm[k++] = lo[i];
    int64_t la[3] = {lro_size, lo_size, sum_size}, lb[3] = {lro_size, sum_size, ro_size};
    ic_val ab[2] = {ic_reshape(G, ic_permute(G, a, lperm), 3, la), ic_reshape(G, ic_permute(G, b, rperm), 3, lb)};
    ic_val p = ic_extern(G, IC_EXT_BMM, 2, ab, 0, NULL, 1, 1);
    return ic_permute(G, ic_reshape(G, p, n, osz), operm);
}

/* einsum(equation, *operands) (or one list of operands): letters and '...', implicit or
 * explicit output; size-1 dims broadcast against their label's size. A label repeated in
 * one operand (a diagonal) and symbolic shapes are left to eager. Operands contract left to
 * right (eager may pick another order with opt_einsum: the same values up to rounding). */
int sym_h_einsum(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_CONST || !PyUnicode_Check(p[0]->obj))
        return sym_fail(t, "einsum: sublist form not supported");
    const char *eq;
    if (sym_get_str(t, p[0], NULL, &eq, "einsum: equation") < 0)
        return -1;
    const var *seq = p[1];
    if (seq == NULL || seq->kind != V_SEQ)
        return sym_fail(t, "einsum: bad arguments");
    if (seq->n == 1) {
        var it = seq->items[0];
        sym_resolve(t, &it);
        if (it.kind == V_SEQ)
            seq = &seq->items[0];
    }
    int nops = seq->n;
    if (nops < 1 || nops > 8)
        return sym_fail(t, "einsum of %d operands not supported", nops);
    ein_op ops[8];
    int64_t size[EIN_LABELS];
    int seen[EIN_LABELS] = {0}, count[EIN_LABELS] = {0};
    ic_dtype to = IC_F32;
    int cast = dh_tl_autocast && dh_autocast_op_affected("einsum") ? dh_autocast_policy(t, "einsum", &to) : 0;
    if (cast < 0)
        return sym_fail(t, "autocast is enabled and einsum casts under it (not captured)");
    /* parse the inputs: per operand its letters and where its '...' stands */
    const char *s = eq;
    int nell = 0, ell_at[8], nlet[8], lets[8][IC_MAX_DIMS];
    for (int i = 0; i < nops; i++) {
        var x = seq->items[i], *xp = &x;
        sym_resolve(t, &x);
        if (x.kind != V_TENSOR)
            return sym_fail(t, "einsum: operands must be tensors");
        if (cast == 1 && dh_autocast_arg(t, &x, to, &xp) < 0)
            return -1;
        const ic_meta *m = sym_metap(t, xp->val);
        if (m->dyn)
            return sym_fail(t, "einsum with symbolic shapes left to eager");
        if (i > 0 && m->dtype != sym_metap(t, ops[0].v)->dtype)
            return sym_fail(t, "einsum: operands of different dtypes (eager will raise)");
        ops[i].v = xp->val;
        ops[i].n = m->ndim;
        ell_at[i] = -1;
        nlet[i] = 0;
        for (; *s && *s != ',' && *s != '-'; s++) {
            if (*s == ' ')
                continue;
            if (*s == '.') {
                if (strncmp(s, "...", 3) || ell_at[i] >= 0)
                    return sym_fail(t, "einsum: bad equation (eager will raise)");
                ell_at[i] = nlet[i];
                s += 2;
                continue;
            }
            int l = ein_label(*s);
            if (l < 0 || nlet[i] >= IC_MAX_DIMS)
                return sym_fail(t, "einsum: bad equation (eager will raise)");
            lets[i][nlet[i]++] = l;
        }
        if ((i < nops - 1) != (*s == ','))
            return sym_fail(t, "einsum: %d operands for the equation (eager will raise)", nops);
        if (*s == ',')
            s++;
        int ne = m->ndim - nlet[i];
        if (ne < 0 || (ne > 0 && ell_at[i] < 0))
            return sym_fail(t, "einsum: subscripts do not match the operand's dims (eager will raise)");
        if (ne > nell)
            nell = ne;
    }
    if (nell > EIN_LABELS - 52)
        return sym_fail(t, "einsum: too many dims");
    /* labels of each operand's dims ('...' dims right-aligned to the longest one) and sizes */
    for (int i = 0; i < nops; i++) {
        const ic_meta m = *sym_metap(t, ops[i].v);
        int ne = m.ndim - nlet[i], at = 0;
        for (int j = 0; j < m.ndim; j++) {
            int l;
            if (ell_at[i] >= 0 && j >= ell_at[i] && j < ell_at[i] + ne)
                l = 52 + nell - ne + (j - ell_at[i]);
            else
                l = lets[i][at++];
            for (int k = 0; k < j; k++)
                if (ops[i].lab[k] == l)
                    return sym_fail(t, "einsum: a repeated subscript (diagonal) left to eager");
            ops[i].lab[j] = l;
            if (!seen[l] || size[l] == 1)
                size[l] = m.sizes[j];
            else if (m.sizes[j] != 1 && m.sizes[j] != size[l])
                return sym_fail(t, "einsum: sizes of a subscript do not match (eager will raise)");
            seen[l] = 1;
            count[l] += l < 52;
        }
    }
    /* the output's labels */
    int olab[IC_MAX_DIMS], no = 0;
    uint64_t omask = 0;
    if (*s == '-') {
        if (s[1] != '>')
            return sym_fail(t, "einsum: bad equation (eager will raise)");
        int had_ell = 0;
        for (s += 2; *s; s++) {
            if (*s == ' ')
                continue;
            int l = -1;
            if (*s == '.') {
                if (strncmp(s, "...", 3) || had_ell)
                    return sym_fail(t, "einsum: bad equation (eager will raise)");
                s += 2;
                had_ell = 1;
                for (int e = 0; e < nell; e++) {
                    if (no >= IC_MAX_DIMS)
                        return sym_fail(t, "einsum: too many dims");
                    olab[no++] = 52 + e;
                    omask |= 1ull << (52 + e);
                }
                continue;
            }
            l = ein_label(*s);
            if (l < 0 || !seen[l] || (omask >> l & 1) || no >= IC_MAX_DIMS)
                return sym_fail(t, "einsum: bad output subscripts (eager will raise)");
            olab[no++] = l;
            omask |= 1ull << l;
        }
        /* without '...' in the output its dims are summed (as in eager) */
    } else {
        for (int e = 0; e < nell; e++) {
            olab[no++] = 52 + e;
            omask |= 1ull << (52 + e);
        }
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) {
                if (no >= IC_MAX_DIMS)
                    return sym_fail(t, "einsum: too many dims");
                olab[no++] = l;
                omask |= 1ull << l;
            }
    }
    for (int i = 0; i < nops; i++) {
        const ic_meta *m = sym_metap(t, ops[i].v);
        for (int j = 0; j < m->ndim; j++)
            if (size[ops[i].lab[j]] == 0)
                return sym_fail(t, "einsum of an empty operand left to eager");
    }
    /* the order of all labels: the output's, '...' when the output lacks it, the summed ones */
    int pidx[EIN_LABELS], np = 0;
    for (int l = 0; l < EIN_LABELS; l++)
        pidx[l] = -1;
    for (int i = 0; i < no; i++)
        pidx[olab[i]] = np++;
    const int nout = np;
    for (int e = 0; e < nell; e++)
        if (pidx[52 + e] < 0)
            pidx[52 + e] = np++;
    for (int l = 0; l < 52; l++)
        if (count[l] > 0 && pidx[l] < 0)
            pidx[l] = np++;
    if (np > IC_MAX_DIMS)
        return sym_fail(t, "einsum: too many dims");
    /* each operand viewed in that order: size-1 dims appended for its missing labels, then
     * permuted; dcount: how many operands have a dim of size != 1 there */
    int dcount[IC_MAX_DIMS] = {0};
    ic_val v[8];
    for (int i = 0; i < nops; i++) {
        const ic_meta m = *sym_metap(t, ops[i].v);
        int perm[IC_MAX_DIMS], d = m.ndim;
        int64_t sz[IC_MAX_DIMS];
        for (int k = 0; k < np; k++)
            perm[k] = -1;
        for (int j = 0; j < m.ndim; j++) {
            perm[pidx[ops[i].lab[j]]] = j;
            sz[j] = m.sizes[j];
            dcount[pidx[ops[i].lab[j]]] += m.sizes[j] != 1;
        }
        for (int k = 0; k < np; k++)
            if (perm[k] < 0) {
                sz[d] = 1;
                perm[k] = d++;
            }
        ic_val x = ops[i].v;
        if (d != m.ndim)
            x = ic_reshape(G, x, d, sz);
        int ident = 1;
        for (int k = 0; k < np; k++)
            ident &= perm[k] == k;
        v[i] = ident ? x : ic_permute(G, x, perm);
    }
    if (sym_check_graph(t) < 0)
        return -1;
    ic_val cur = v[0];
    for (int i = 1; i < nops; i++) {
        ic_val a = cur, b = v[i];
        int sumd[IC_MAX_DIMS], ns = 0;
        uint32_t amask = 0, bmask = 0;
        for (int d = nout; d < np; d++) {
            int za = sym_metap(t, a)->sizes[d] != 1, zb = sym_metap(t, b)->sizes[d] != 1;
            if (za && zb) {
                if (--dcount[d] == 1) {
                    sumd[ns++] = d;
                    dcount[d] = 0;
                }
            } else if (dcount[d] == 1) {
                if (za)
                    amask |= 1u << d;
                else if (zb)
                    bmask |= 1u << d;
                if (za || zb)
                    dcount[d] = 0;
            }
        }
        if (amask)
            a = ic_reduce(G, IC_OP_SUM, a, amask, 1, -1);
        if (bmask)
            b = ic_reduce(G, IC_OP_SUM, b, bmask, 1, -1);
        if (sym_check_graph(t) < 0)
            return -1;
        cur = ein_pair(t, a, b, np, sumd, ns);
        if (sym_check_graph(t) < 0)
            return -1;
    }
    if (np > nout) {
        uint32_t mask = 0;
        for (int d = nout; d < np; d++)
            mask |= 1u << d;
        if (nops > 1) {
            int64_t sz[IC_MAX_DIMS];
            for (int d = 0; d < nout; d++)
                sz[d] = sym_metap(t, cur)->sizes[d];
            cur = ic_reshape(G, cur, nout, sz);
        } else {
            cur = ic_reduce(G, IC_OP_SUM, cur, mask, 0, -1);
        }
    }
    return sym_tensor_out(t, cur, out);
}
