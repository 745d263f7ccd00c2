/* ops_more.c — more torch calls lowered to graph builders, found where real models broke:
 * tensor queries answered at trace time (is_floating_point, is_contiguous, stride, ...),
 * views by another tensor's shape (broadcast_to, expand_as, view_as, movedim,
 * tensor_split), one_hot and histc as compare-and-sum reductions (MoE routing), the
 * index_* updates (index_fill, index_add, index_copy) and count_nonzero; and
 * sym_known_index, the value of a 0-d integer tensor built only from constants (a slice
 * bound torch.tensor(n) - k). Each handler falls back to eager with a reason where it does
 * not reproduce eager (data-dependent sizes, dtypes eager refuses). */
#include "ops_internal.h"

/* 1 and *out (a new int) when v is a one-element integer tensor whose value the graph knows
 * (built from numbers and aranges only: ic_value_int_range is one point); 0 otherwise */
int sym_known_index(trace *t, const var *v, PyObject **out) {
    var r = *v;
    sym_resolve(t, &r);
    if (r.kind != V_TENSOR)
        return 0;
    const ic_meta *m = sym_metap(t, r.val);
    if (m == NULL || m->dyn || m->dtype == IC_BOOL || m->dtype > IC_I64)
        return 0;
    int64_t numel = 1;
    for (int i = 0; i < m->ndim; i++)
        numel *= m->sizes[i];
    double lo, hi;
    if (numel != 1 || !ic_value_int_range(t->g, r.val, &lo, &hi) || lo != hi || lo != floor(lo) ||
        fabs(lo) > 9e15)
        return 0;
    *out = PyLong_FromLongLong((long long)lo);
    return *out != NULL ? 1 : -1;
}

/* is_floating_point (0), is_complex (1), is_contiguous(memory_format) (2), stride(dim) (3),
 * element_size (4), get_device (5), is_same_size(other) (6), is_signed (7) */
int sym_h_query(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    switch (d->op) {
    case 0:
        return sym_const(t, PyBool_FromLong(m.dtype >= IC_F16 && m.dtype <= IC_F64), out);
    case 1:
        return sym_const(t, PyBool_FromLong(ic_dtype_is_complex(m.dtype)), out);
    case 4: {
        static const int bytes[IC_DTYPE_COUNT] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
        return sym_const(t, PyLong_FromLong(bytes[m.dtype]), out);
    }
    case 5: /* CPU tensors: -1 */
        return sym_const(t, PyLong_FromLong(t->device_type == TC_DEV_CUDA && !sym_home_off(t, p[0]->val) ? t->device_index : -1), out);
    case 6: {
        if (sym_need_tensor(t, d, p[1]) < 0)
            return -1;
        ic_meta o = *sym_metap(t, p[1]->val);
        if (m.dyn || o.dyn)
            return sym_fail(t, "is_same_size with symbolic shapes left to eager");
        int same = m.ndim == o.ndim;
        for (int i = 0; same && i < m.ndim; i++)
            same = m.sizes[i] == o.sizes[i];
        return sym_const(t, PyBool_FromLong(same), out);
    }
    case 7:
        return sym_const(t, PyBool_FromLong(m.dtype != IC_BOOL && m.dtype != IC_U8), out);
    default:
        break;
    }
    /* strides: eager's (inputs: guarded; views: replayed; values of the graph: their
     * planned layout), unknown for dynamic shapes or layouts chosen at run time */
    int64_t st[IC_MAX_DIMS];
    if (!sym_eager_strides(t, p[0]->val, st))
        return sym_fail(t, "%s: eager's strides not known here (dynamic shape or run-time layout)", d->name);
    if (d->op == 3) {
        if (sym_is_none(p[1])) {
            PyObject *tup = PyTuple_New(m.ndim);
            for (int i = 0; tup && i < m.ndim; i++) {
                PyObject *x = PyLong_FromLongLong(st[i]);
                if (x == NULL)
                    Py_CLEAR(tup);
                else
                    PyTuple_SET_ITEM(tup, i, x);
            }
            return tup ? sym_const(t, tup, out) : -1;
        }
        long long dd;
        int dim;
        if (sym_get_int(t, p[1], &dd, "dim") < 0 || sym_norm_dim(t, dd, m.ndim, &dim) < 0)
            return -1;
        if (m.ndim == 0)
            return sym_fail(t, "stride(dim) of a 0-d tensor (eager will raise)");
        return sym_const(t, PyLong_FromLongLong(st[dim]), out);
    }
    /* is_contiguous(memory_format=torch.contiguous_format): ATen's rule, size-1 dims and
     * empty tensors aside; channels_last(_3d): the same over (C, W, H, N) / (C, W, H, D, N) */
    int fmt = IC_MF_CONTIGUOUS;
    if (p[1] != NULL && !sym_is_none(p[1]) && dh_memory_format(t, p[1], &fmt) < 0)
        return -1;
    int order[IC_MAX_DIMS], n = m.ndim;
    if (fmt == IC_MF_CHANNELS_LAST || fmt == IC_MF_CHANNELS_LAST_3D) {
        if (n != (fmt == IC_MF_CHANNELS_LAST ? 4 : 5))
            return sym_const(t, Py_NewRef(Py_False), out);
        order[0] = 1; /* innermost first */
        for (int i = 1; i < n - 1; i++)
            order[i] = n - i;
        order[n - 1] = 0;
    } else if (fmt == IC_MF_CONTIGUOUS || fmt == IC_MF_PRESERVE) {
        if (fmt == IC_MF_PRESERVE)
            return sym_fail(t, "is_contiguous(memory_format=torch.preserve_format) (eager will raise)");
        for (int i = 0; i < n; i++)
            order[i] = n - 1 - i;
    } else {
        return sym_fail(t, "is_contiguous with this memory_format left to eager");
    }
    int64_t numel = 1, want = 1;
    for (int i = 0; i < n; i++)
        numel *= m.sizes[i];
    int contig = 1;
    for (int i = 0; i < n && numel > 0 && contig; i++) {
        int k = order[i];
        if (m.sizes[k] != 1 && st[k] != want)
            contig = 0;
        want *= m.sizes[k];
    }
    return sym_const(t, PyBool_FromLong(contig), out);
}

/* broadcast_to(input, *size) (0), expand_as(input, other) (1): expand;
 * view_as(input, other) (2): view */
int sym_h_shape_like(trace *t, const opdef *d, var **p, var *out) {
    static const opdef viewdef = {"view", W_METHOD, "input,*shape", sym_h_reshape, 0};
    if (sym_need_tensor(t, d, p[0]) < 0 || p[1] == NULL)
        return -1;
    var rest = sym_var(V_SEQ), *pp[MAXP] = {0};
    pp[0] = p[0];
    pp[1] = &rest;
    rest.n = 1;
    if (d->op == 0) {
        return sym_h_expand(t, d, p, out); /* broadcast_to(input, *size): expand's */
    } else {
        if (sym_need_tensor(t, d, p[1]) < 0)
            return -1;
        ic_meta o = *sym_metap(t, p[1]->val);
        if (o.dyn)
            return sym_fail(t, "%s of a tensor with symbolic shape left to eager", d->name);
        PyObject *tup = PyTuple_New(o.ndim);
        for (int i = 0; tup && i < o.ndim; i++) {
            PyObject *x = PyLong_FromLongLong(o.sizes[i]);
            if (x == NULL)
                Py_CLEAR(tup);
            else
                PyTuple_SET_ITEM(tup, i, x);
        }
        var *c = sym_alloc(t, 1);
        if (tup == NULL || c == NULL || sym_const(t, tup, c) < 0)
            return -1;
        rest.items = c;
    }
    return d->op == 2 ? sym_h_reshape(t, &viewdef, pp, out) : sym_h_expand(t, d, pp, out);
}

/* one int or a sequence of ints (movedim's source/destination) */
static int int_list(trace *t, const var *v, long long *out, int *n, const char *what) {
    if (v != NULL && v->kind == V_CONST && PyLong_Check(v->obj) && !PyBool_Check(v->obj)) {
        *n = 1;
        return sym_get_int(t, v, out, what);
    }
    if (v == NULL)
        return sym_fail(t, "missing %s", what);
    return sym_get_ints(t, v, out, IC_MAX_DIMS, n, what);
}

/* movedim / moveaxis(input, source, destination): a permute */
int sym_h_movedim(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    int nd = sym_ndim_of(t, p[0]->val), ns, nt;
    long long s[IC_MAX_DIMS], e[IC_MAX_DIMS];
    if (int_list(t, p[1], s, &ns, "source") < 0 || int_list(t, p[2], e, &nt, "destination") < 0)
        return -1;
    if (ns != nt)
        return sym_fail(t, "movedim: source and destination differ in length (eager will raise)");
    int src[IC_MAX_DIMS], dst[IC_MAX_DIMS], perm[IC_MAX_DIMS], used_s[IC_MAX_DIMS] = {0}, used_d[IC_MAX_DIMS] = {0};
    for (int i = 0; i < ns; i++) {
        if (sym_norm_dim(t, s[i], nd, &src[i]) < 0 || sym_norm_dim(t, e[i], nd, &dst[i]) < 0)
            return -1;
        if (used_s[src[i]]++ || used_d[dst[i]]++)
            return sym_fail(t, "movedim: repeated dim (eager will raise)");
    }
    for (int i = 0; i < nd; i++)
        perm[i] = -1;
    for (int i = 0; i < ns; i++)
        perm[dst[i]] = src[i];
    /* the other dims keep their order in the free slots */
    int k = 0;
    for (int i = 0; i < nd; i++) {
        if (perm[i] >= 0)
            continue;
        while (k < nd && used_s[k])
            k++;
        perm[i] = k++;
    }
    return sym_view_out_desc(t, p[0], ic_permute(G, p[0]->val, perm), out, "permute",
                             Py_BuildValue("(N)", sym_perm_tuple(perm, nd)));
}

/* tensor_split(input, indices_or_sections, dim=0): n near-equal parts (the first L % n one
 * longer) or the pieces between the given indices (Python slice bounds), as views */
int sym_h_tensor_split(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    long long dd = 0;
    int dim;
    if (!sym_is_none(p[2]) && sym_get_int(t, p[2], &dd, "dim") < 0)
        return -1;
    if (m.ndim == 0)
        return sym_fail(t, "tensor_split of a 0-d tensor (eager will raise)");
    if (sym_norm_dim(t, dd, m.ndim, &dim) < 0)
        return -1;
    if (m.dyn)
        return sym_fail(t, "tensor_split with symbolic shapes left to eager");
    int64_t L = m.sizes[dim];
    long long *starts = NULL, *lens, *idx, np;
    int n = 0, rc = -1;
    if (p[1] == NULL)
        return sym_fail(t, "tensor_split needs indices_or_sections");
    int sections = p[1]->kind == V_CONST && PyLong_Check(p[1]->obj) && !PyBool_Check(p[1]->obj);
    long long k = 0;
    if (sections) {
        if (sym_get_int(t, p[1], &k, "sections") < 0)
            return -1;
        if (k <= 0)
            return sym_fail(t, "tensor_split: sections must be positive (eager will raise)");
        np = k;
    } else {
        if (p[1]->kind == V_TENSOR)
            return sym_fail(t, "tensor_split with tensor indices left to eager");
        np = sym_ints_len(p[1]) + 1;
    }
    if (np > dh_limit.max_unroll)
        return sym_fail(t, "tensor_split into %lld parts (more than %d: torchc.config.max_unroll)", np,
                        dh_limit.max_unroll);
    /* starts, lens and the indices: np each */
    if ((starts = malloc(sizeof *starts * 3 * (size_t)np)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    lens = starts + np;
    idx = lens + np;
    if (sections) {
        long long at = 0;
        for (int i = 0; i < k; i++) {
            long long len = L / k + (i < L % k);
            starts[n] = at;
            lens[n++] = len;
            at += len;
        }
    } else {
        int ni;
        if (sym_get_ints(t, p[1], idx, (int)np - 1, &ni, "indices") < 0)
            goto done;
        long long prev = 0;
        for (int i = 0; i <= ni; i++) {
            Py_ssize_t a = (Py_ssize_t)prev, b = i < ni ? (Py_ssize_t)idx[i] : (Py_ssize_t)L;
            PySlice_AdjustIndices((Py_ssize_t)L, &a, &b, 1);
            if (b < a)
                b = a;
            starts[n] = a;
            lens[n++] = b - a;
            if (i < ni)
                prev = idx[i];
        }
    }
    var *items = sym_alloc(t, n);
    if (items == NULL)
        goto done;
    for (int i = 0; i < n; i++)
        if (sym_view_out_desc(t, p[0], ic_slice(G, p[0]->val, dim, starts[i], starts[i] + lens[i], 1), &items[i],
                              "narrow", Py_BuildValue("(iLL)", dim, starts[i], lens[i])) < 0)
            goto done;
    *out = sym_var(V_SEQ);
    out->n = n;
    out->items = items;
    rc = 0;
done:
    free(starts);
    return rc;
}

/* x with a trailing dim of 1 (to compare against an arange of classes / bins) */
static ic_val with_last_one(trace *t, ic_val x) {
    ic_meta m = *sym_metap(t, x);
    int64_t sz[IC_MAX_DIMS];
    for (int i = 0; i < m.ndim; i++)
        sz[i] = m.sizes[i];
    sz[m.ndim] = 1;
    return sym_reshape(t, x, m.ndim + 1, sz);
}

/* F.one_hot(tensor, num_classes=-1): eq(x[..., None], arange(C)) as int64; indices outside
 * [0, C) are checked as index_select's (eager raises) */
int sym_h_one_hot(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    long long c = -1;
    if (!sym_is_none(p[1]) && sym_get_int(t, p[1], &c, "num_classes") < 0)
        return -1;
    if (m.dtype != IC_I64)
        return sym_fail(t, "one_hot of a non-int64 tensor (eager will raise)");
    if (c < 0)
        return sym_fail(t, "one_hot without num_classes: the class count is data-dependent (left to eager)");
    if (m.dyn || m.ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "one_hot with symbolic shapes left to eager");
    if (sym_check_index(t, p[0], c, 0) < 0)
        return -1;
    ic_val r = ic_cast(G, ic_binary(G, IC_OP_EQ, with_last_one(t, p[0]->val), ic_arange(G, c, 0, 1, IC_I64)), IC_I64);
    if (r >= 0) /* eager scatters into new zeros: contiguous whatever the input's layout */
        ic_value_set_format(G, r, r, IC_MF_CONTIGUOUS);
    return sym_tensor_out(t, r, out);
}

/* histc(input, bins=100, min=0, max=0) with min < max: eager's linear bins (ATen's
 * histogramdd linear interpolation: bin = trunc((x - min) * bins / (max - min)) in the
 * input's dtype, the last bin closed, values outside [min, max] and NaN not counted),
 * counted as a compare-and-sum reduction. min == max (the data's range) is left to eager,
 * as are half precision (eager accumulates in it) and integer inputs on the CPU (eager
 * raises there; CUDA counts integers in integer arithmetic). */
int sym_h_histc(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    long long bins = 100;
    double lo = 0, hi = 0;
    if (!sym_is_none(p[1]) && sym_get_int(t, p[1], &bins, "bins") < 0)
        return -1;
    if (sym_opt_scalar(t, p[2], 0, &lo, "min") < 0 || sym_opt_scalar(t, p[3], 0, &hi, "max") < 0)
        return -1;
    if (p[4] != NULL && !sym_is_none(p[4]))
        return sym_fail(t, "histc with out= left to eager");
    if (bins <= 0)
        return sym_fail(t, "histc: bins must be > 0 (eager will raise)");
    if (lo > hi || !isfinite(lo) || !isfinite(hi))
        return sym_fail(t, "histc: bad range (eager will raise)");
    if (lo == hi)
        return sym_fail(t, "histc over the data's range (min == max) left to eager");
    int isint = m.dtype <= IC_I64;
    if (m.dtype == IC_BOOL || m.dtype == IC_F16 || m.dtype == IC_BF16 || (isint && t->device_type != TC_DEV_CUDA))
        return sym_fail(t, "histc of a %s tensor on this device left to eager", isint ? "integer" : "half-precision");
    if (m.dyn)
        return sym_fail(t, "histc with symbolic shapes left to eager");
    int64_t n = 1;
    for (int i = 0; i < m.ndim; i++)
        n *= m.sizes[i];
    if (n > ((int64_t)1 << 24) && !isint && m.dtype == IC_F32)
        return sym_fail(t, "histc of more than 2^24 elements in float32 left to eager");
    ic_val x = sym_reshape(t, p[0]->val, 1, &n);
    ic_dtype dt = m.dtype;
    /* CUDA integer histc: min/max converted to the input's type, integer arithmetic */
    ic_val mn = ic_cast(G, ic_scalar(G, isint ? trunc(lo) : lo, IC_F64), dt);
    ic_val mx = ic_cast(G, ic_scalar(G, isint ? trunc(hi) : hi, IC_F64), dt);
    ic_val nb = ic_cast(G, ic_scalar(G, (double)bins, IC_I64), dt);
    ic_val off = ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, x, mn), nb);
    ic_val pos = isint ? ic_binary(G, IC_OP_FLOOR_DIVIDE, off, ic_binary(G, IC_OP_SUB, mx, mn))
                       : ic_unary(G, IC_OP_TRUNC, ic_binary(G, IC_OP_DIV, off, ic_binary(G, IC_OP_SUB, mx, mn)));
    ic_val valid = ic_binary(G, IC_OP_LOGICAL_AND, ic_binary(G, IC_OP_GE, x, mn), ic_binary(G, IC_OP_LE, x, mx));
    /* pos in [0, bins] where valid (the last edge itself falls in the last bin); elsewhere
     * any value: masked below */
    pos = ic_where(G, valid, pos, ic_cast(G, ic_scalar(G, -1, IC_I64), dt));
    pos = ic_cast(G, pos, IC_I64);
    pos = ic_binary(G, IC_OP_MINIMUM, pos, sym_inum(t, bins - 1));
    ic_val hit = ic_binary(G, IC_OP_EQ, with_last_one(t, pos), ic_arange(G, bins, 0, 1, IC_I64));
    ic_val cnt = ic_reduce(G, IC_OP_SUM, ic_cast(G, hit, IC_I64), 1u, 0, -1);
    return sym_tensor_out(t, ic_cast(G, cnt, dt), out);
}

/* index (a 0-/1-d int64 tensor) as a [1, .., n, .., 1] value at dim of an ndim tensor */
static ic_val index_at(trace *t, ic_val index, int dim, int ndim) {
    ic_meta im = *sym_metap(t, index);
    int64_t n = im.ndim ? im.sizes[0] : 1, sz[IC_MAX_DIMS];
    for (int i = 0; i < ndim; i++)
        sz[i] = i == dim ? n : 1;
    return sym_reshape(t, index, ndim, sz);
}

/* the common checks of index_fill/index_add/index_copy: dim, a 0-/1-d int64 index in range */
static int index_args(trace *t, const opdef *d, var **p, int *dim) {
    long long dd;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_int(t, p[1], &dd, "dim") < 0 || sym_need_tensor(t, d, p[2]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val), im = *sym_metap(t, p[2]->val);
    if (m.dyn || im.dyn)
        return sym_fail(t, "%s with symbolic shapes left to eager", d->name);
    if (sym_norm_dim(t, dd, m.ndim ? m.ndim : 1, dim) < 0)
        return -1;
    if (m.ndim == 0)
        return sym_fail(t, "%s of a 0-d tensor left to eager", d->name);
    if (im.dtype != IC_I64 || im.ndim > 1)
        return sym_fail(t, "%s: index must be a 0-/1-d int64 tensor (eager will raise)", d->name);
    return sym_check_index(t, p[2], m.sizes[*dim], 0);
}

/* index_fill(input, dim, index, value): where(dim position in index, value, input) */
int sym_h_index_fill(trace *t, const opdef *d, var **p, var *out) {
    int dim;
    ic_val v;
    if (index_args(t, d, p, &dim) < 0 || p[3] == NULL || sym_as_tensor(t, p[3], &v) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    if (p[3]->kind == V_TENSOR && sym_metap(t, v)->ndim != 0)
        return sym_fail(t, "index_fill: value must be a 0-d tensor (eager will raise)");
    if (sym_check_scalar_fits(t, p[3], m.dtype, d->name) < 0 || sym_check_tensor_value_fits(t, p[3], m.dtype, d->name) < 0)
        return -1;
    ic_val idx = p[2]->val;
    ic_meta im = *sym_metap(t, idx);
    int64_t n = im.ndim ? im.sizes[0] : 1, two[2] = {1, n};
    /* mask[j] = any_k(j == index[k]) along dim */
    ic_val pos = with_last_one(t, ic_arange(G, m.sizes[dim], 0, 1, IC_I64));
    ic_val hit = ic_binary(G, IC_OP_EQ, pos, sym_reshape(t, idx, 2, two));
    ic_val mask = ic_binary(G, IC_OP_GT, ic_reduce(G, IC_OP_SUM, ic_cast(G, hit, IC_I64), 2u, 0, -1), sym_inum(t, 0));
    int64_t sz[IC_MAX_DIMS];
    for (int i = 0; i < m.ndim; i++)
        sz[i] = i == dim ? m.sizes[dim] : 1;
    mask = sym_reshape(t, mask, m.ndim, sz);
    ic_val r = ic_where(G, mask, ic_cast(G, v, m.dtype), p[0]->val);
    if (r >= 0) /* eager fills a clone (memory_format=preserve): a transposed input's result too */
        ic_value_set_format(G, r, p[0]->val, IC_MF_PRESERVE);
    return sym_tensor_out(t, r, out);
}

/* index_add(input, dim, index, source, *, alpha=1) (0) / index_copy(input, dim, index,
 * source) (1): scatter_add / scatter with the index spread over source's shape */
int sym_h_index_add(trace *t, const opdef *d, var **p, var *out) {
    int dim;
    if (index_args(t, d, p, &dim) < 0 || sym_need_tensor(t, d, p[3]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val), sm = *sym_metap(t, p[3]->val), im = *sym_metap(t, p[2]->val);
    if (sm.dtype != m.dtype)
        return sym_fail(t, "%s: source and self dtypes differ (eager will raise)", d->name);
    int64_t n = im.ndim ? im.sizes[0] : 1;
    int ok = sm.ndim == m.ndim || (m.ndim == 1 && sm.ndim == 0);
    for (int i = 0; ok && i < sm.ndim; i++)
        ok = sm.sizes[i] == (i == dim ? n : m.sizes[i]);
    if (!ok)
        return sym_fail(t, "%s: source's shape does not match (eager will raise)", d->name);
    ic_val src = p[3]->val;
    int64_t ssz[IC_MAX_DIMS];
    for (int i = 0; i < m.ndim; i++)
        ssz[i] = i == dim ? n : m.sizes[i];
    if (sm.ndim != m.ndim)
        src = sym_reshape(t, src, m.ndim, ssz);
    if (d->op == 0 && p[4] != NULL && !sym_is_none(p[4])) {
        ic_val a;
        if (sym_as_tensor(t, p[4], &a) < 0)
            return -1;
        src = ic_cast(G, ic_binary(G, IC_OP_MUL, src, a), m.dtype);
    }
    ic_val in[3] = {p[0]->val, ic_expand(G, index_at(t, p[2]->val, dim, m.ndim), m.ndim, ssz), src};
    int64_t prm[1] = {dim};
    ic_val r = ic_extern(G, d->op == 0 ? IC_EXT_SCATTER_ADD : IC_EXT_SCATTER, 3, in, 1, prm, 1, 1);
    return sym_tensor_out(t, r, out);
}

/* count_nonzero(input, dim=None): sum(input != 0) as int64 */
int sym_h_count_nonzero(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    int nd = sym_ndim_of(t, p[0]->val);
    uint32_t mask; /* 0: every dim */
    if (sym_dims_mask(t, p[1], nd, &mask) < 0)
        return -1;
    ic_val nz = ic_cast(G, ic_binary(G, IC_OP_NE, p[0]->val, sym_inum(t, 0)), IC_I64);
    return sym_tensor_out(t, ic_reduce(G, IC_OP_SUM, nz, mask, 0, -1), out);
}

/* ATen's stride rule of _grouped_mm for one matrix (the last two dims of eager's strides):
 * row- or column-major with the leading dim a multiple of 16 bytes; 0 where eager raises */
static int grouped_mm_layout_ok(const ic_meta *m, const int64_t *st) {
    int e = m->ndim - 1;
    int64_t al = m->dtype == IC_F32 ? 4 : 8;
    int64_t r = m->sizes[e - 1], c = m->sizes[e];
    if (st[e - 1] == 1 && st[e] >= (r > 1 ? r : 1))
        return st[e] % al == 0;
    if (st[e] == 1 && st[e - 1] >= (c > 1 ? c : 1))
        return st[e - 1] % al == 0;
    return 0;
}

/* F.grouped_mm(mat_a, mat_b, *, offs, bias=None, out_dtype=None) / torch._grouped_mm: the
 * MoE form (a[S, K] rows grouped by int32 offsets, b[E, K, N]) as one extern (ATen's) */
int sym_h_grouped_mm(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    if (p[2] == NULL || p[2]->kind != V_TENSOR)
        return sym_fail(t, "%s without offsets (batched 3-D form) left to eager", d->name);
    if (!sym_is_none(p[3]) || !sym_is_none(p[4]))
        return sym_fail(t, "%s with bias or out_dtype left to eager", d->name);
    ic_meta a = *sym_metap(t, p[0]->val), b = *sym_metap(t, p[1]->val);
    if (a.dyn || b.dyn)
        return sym_fail(t, "%s with symbolic shapes left to eager", d->name);
    if (a.ndim != 2 || b.ndim != 3)
        return sym_fail(t, "%s: only a 2-D x 3-D product with offsets is captured", d->name);
    int64_t st[IC_MAX_DIMS];
    const ic_meta *ms[2] = {&a, &b};
    for (int i = 0; i < 2; i++)
        if (ms[i]->dtype >= IC_F16 && sym_eager_strides(t, p[i]->val, st) && !grouped_mm_layout_ok(ms[i], st))
            return sym_fail(t, "%s: strides not a multiple of 16 bytes (eager will raise)", d->name);
    ic_val in[3] = {p[0]->val, p[1]->val, p[2]->val};
    ic_val r = ic_extern(G, IC_EXT_GROUPED_MM, 3, in, 0, NULL, 1, 1);
    if (r < 0)
        return sym_check_graph(t);
    return sym_tensor_out(t, r, out);
}

/* channel_shuffle(input, groups) / nn.ChannelShuffle: [N, C, *] viewed as [N, g, C/g, *], the
 * two group dims swapped, back to [N, C, *]; a new tensor in the input's suggested memory
 * format, as eager's */
int sym_h_channel_shuffle(trace *t, const opdef *d, var **p, var *out) {
    long long g;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_int(t, p[1], &g, "groups") < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn)
        return sym_fail(t, "channel_shuffle with symbolic shapes left to eager");
    if (m.ndim < 3)
        return sym_fail(t, "channel_shuffle of < 3 dims (eager raises)");
    if (g <= 0 || m.sizes[1] % g)
        return sym_fail(t, "channel_shuffle: groups not positive or not dividing the channels (eager raises)");
    if (m.ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "channel_shuffle: too many dims");
    int64_t numel = 1;
    for (int i = 0; i < m.ndim; i++)
        numel *= m.sizes[i];
    if (numel == 0) /* eager: an alias of the empty input (its strides) */
        return view_out(t, p[0], ic_reshape(G, p[0]->val, m.ndim, m.sizes), out);
    int64_t sz[IC_MAX_DIMS];
    int perm[IC_MAX_DIMS], n = m.ndim + 1;
    sz[0] = m.sizes[0];
    sz[1] = g;
    sz[2] = m.sizes[1] / g;
    for (int i = 2; i < m.ndim; i++)
        sz[i + 1] = m.sizes[i];
    for (int i = 0; i < n; i++)
        perm[i] = i == 1 ? 2 : i == 2 ? 1 : i;
    ic_val v = sym_reshape(t, p[0]->val, n, sz);
    v = v < 0 ? v : ic_permute(G, v, perm);
    v = v < 0 ? v : sym_reshape(t, v, m.ndim, m.sizes);
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "channel_shuffle failed");
    /* a value of its own (not a view of x, which a reshape of a contiguous x would be) */
    v = ic_cast(G, v, m.dtype);
    if (v < 0 || ic_value_set_format(G, v, p[0]->val, ic_value_suggest_format(G, p[0]->val)) < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "channel_shuffle failed");
    return sym_tensor_out(t, v, out);
}
