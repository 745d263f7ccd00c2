/* ops_index.c — tensor indexing and index ops: x[key] (ints, slices, None, Ellipsis, bool
 * masks, integer tensor indices: one or several, with eager's result strides), index_select and
 * embedding, the runtime index check, gather / scatter / scatter_add / scatter_reduce.
 * Split from ops_views.c (views and data movement), whose stride helpers it shares through
 * ops_internal.h (sym_view_strides, sym_unsqueeze_val).
 */
#include "ops_internal.h"

/* index values < 0 become `bound` (out of range: the GPU gather traps on it) for ops whose
 * eager form rejects negative indices instead of wrapping them */
static ic_val sym_trap_negatives(trace *t, ic_val iv, int64_t bound) {
    ic_dtype dt = ic_value_meta(t->g, iv)->dtype;
    return ic_where(t->g, ic_binary(t->g, IC_OP_LT, iv, ic_scalar(t->g, 0, dt)), ic_scalar(t->g, (double)bound, dt), iv);
}

/* index_select(input, dim, index) / F.embedding(input, weight) */
int sym_h_index_select(trace *t, const opdef *d, var **p, var *out) {
    if (d->op == 1) { /* embedding(input, weight, padding_idx=None, max_norm=None, ...) */
        if (p[0]->kind != V_TENSOR || p[1] == NULL || p[1]->kind != V_TENSOR)
            return sym_fail(t, "embedding: bad arguments");
        if (!sym_is_none(p[3]))
            return sym_fail(t, "embedding with max_norm not supported");
        ic_meta im_copy = *sym_metap(t, p[0]->val), wm_copy = *sym_metap(t, p[1]->val);
        const ic_meta *im = &im_copy, *wm = &wm_copy;
        int64_t n = 1;
        for (int i = 0; i < im->ndim; i++)
            n *= im->sizes[i];
        ic_val flat = sym_reshape(t, p[0]->val, 1, &n);
        int chk = sym_check_index(t, p[0], wm->ndim ? wm->sizes[0] : 0, 1);
        if (chk < 0)
            return -1;
        if (chk == 1)
            flat = sym_trap_negatives(t, flat, wm->ndim ? wm->sizes[0] : 0);
        ic_val rows = ic_index_select(t->g, p[1]->val, 0, flat);
        long long pad = 0;
        if (!sym_is_none(p[2])) { /* F.embedding asserts -rows <= padding_idx < rows */
            if (sym_get_int(t, p[2], &pad, "padding_idx") < 0)
                return -1;
            int64_t nrows = wm->ndim ? wm->sizes[0] : 0;
            if ((pad > 0 && pad >= nrows) || (pad < 0 && pad < -nrows))
                return sym_fail(t, "embedding: padding_idx out of range (eager will raise)");
        }
        if (!sym_is_none(p[2]) && sym_value_requires_grad(t, p[1]->val)) {
            /* training: rows of padding_idx get no gradient (eager's embedding_backward) */
            if (pad < 0)
                pad += wm->sizes[0];
            int64_t L1[2] = {n, 1};
            ic_val m = ic_reshape(t->g, ic_binary(t->g, IC_OP_EQ, flat, ic_scalar(t->g, (double)pad, IC_I64)), 2, L1);
            rows = ic_where(t->g, m, ic_detach(t->g, rows), rows);
        }
        int64_t sz[IC_MAX_DIMS];
        int k = 0;
        for (int i = 0; i < im->ndim; i++)
            sz[k++] = im->sizes[i];
        if (wm->ndim != 2 || k + 1 > IC_MAX_DIMS)
            return sym_fail(t, "embedding: weight must be 2-d");
        sz[k++] = wm->sizes[1];
        return sym_tensor_out(t, sym_reshape(t, rows, k, sz), out);
    }
    if (p[0]->kind != V_TENSOR || p[2] == NULL || p[2]->kind != V_TENSOR)
        return sym_fail(t, "index_select: bad arguments");
    long long dd;
    int dim;
    if (sym_get_int(t, p[1], &dd, "dim") < 0 || sym_norm_dim(t, dd, sym_ndim_of(t, p[0]->val), &dim) < 0)
        return -1;
    int64_t bound = ic_value_meta(t->g, p[0]->val)->sizes[dim];
    int chk = sym_check_index(t, p[2], bound, 1);
    if (chk < 0)
        return -1;
    ic_val ix = chk == 1 ? sym_trap_negatives(t, p[2]->val, bound) : p[2]->val;
    return sym_tensor_out(t, ic_index_select(t->g, p[0]->val, dim, ix), out);
}

static void contiguous_strides(int n, const int64_t *sz, int64_t *st) {
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        st[i] = s;
        s *= sz[i] > 1 ? sz[i] : 1;
    }
}

static int is_contiguous_strides(int n, const int64_t *sz, const int64_t *st) {
    int64_t e = 1;
    for (int i = 0; i < n; i++)
        if (sz[i] == 0)
            return 1;
    for (int i = n - 1; i >= 0; i--) {
        if (sz[i] == 1)
            continue;
        if (st[i] != e)
            return 0;
        e *= sz[i];
    }
    return 1;
}

static int adv_index_strides(trace *t, int nd, const int64_t *vsz, const int64_t *vst, int n,
                             const int *dims, const ic_val *ix, int on, const int64_t *osz, int64_t *st);

/* Eager's strides of x[parts] (x: m0, its eager strides xst) with integer tensor indices
 * among the parts: applySlicing's view of the basic items (ints select, slices step, None
 * unsqueezes; a tensor keeps its dim), then adv_index_strides. The result's sizes: osz
 * (on dims). 1 with st set, else 0. */
static int key_index_strides(trace *t, const ic_meta *m0, const int64_t *xst, const var **parts, int np,
                             int consuming, int on, const int64_t *osz, int64_t *st) {
    int64_t sz[IC_MAX_DIMS + 1], sd[IC_MAX_DIMS + 1];
    int dims[IC_MAX_DIMS], n = 0, nd = m0->ndim, d = 0;
    ic_val ix[IC_MAX_DIMS];
    memcpy(sz, m0->sizes, sizeof(int64_t) * (size_t)nd);
    memcpy(sd, xst, sizeof(int64_t) * (size_t)nd);
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        if (p->kind == V_CONST && p->obj == Py_Ellipsis) {
            d += m0->ndim - consuming;
            if (d < 0 || d > nd)
                return 0;
            continue;
        }
        if (p->kind == V_CONST && p->obj == Py_None) {
            if (nd >= IC_MAX_DIMS)
                return 0;
            int64_t ns = d >= nd ? 1 : sz[d] * sd[d];
            memmove(&sz[d + 1], &sz[d], sizeof(int64_t) * (size_t)(nd - d));
            memmove(&sd[d + 1], &sd[d], sizeof(int64_t) * (size_t)(nd - d));
            sz[d] = 1;
            sd[d] = ns;
            nd++;
            d++;
            continue;
        }
        if (d >= nd)
            return 0;
        if (p->kind == V_TENSOR) {
            var pv = *p;
            sym_resolve(t, &pv);
            if (n >= IC_MAX_DIMS || pv.val < 0)
                return 0;
            ix[n] = pv.val;
            dims[n++] = d++;
            continue;
        }
        if (p->kind != V_CONST)
            return 0;
        if (PyLong_Check(p->obj)) {
            memmove(&sz[d], &sz[d + 1], sizeof(int64_t) * (size_t)(nd - d - 1));
            memmove(&sd[d], &sd[d + 1], sizeof(int64_t) * (size_t)(nd - d - 1));
            nd--;
            continue;
        }
        Py_ssize_t start, stop, step;
        if (!PySlice_Check(p->obj) || PySlice_Unpack(p->obj, &start, &stop, &step) < 0 || step <= 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return 0;
        }
        sz[d] = PySlice_AdjustIndices((Py_ssize_t)sz[d], &start, &stop, step);
        sd[d] *= step;
        d++;
    }
    return adv_index_strides(t, nd, sz, sd, n, dims, ix, on, osz, st);
}

/* Sets eager's strides on v, x[parts] with integer tensor indices (0), or fails the trace
 * with a reason when they are not known (-1). */
static int set_index_strides(trace *t, const var *x, const var **parts, int np, int consuming, ic_val v) {
    ic_meta m0 = *sym_metap(t, x->val), mv = *sym_metap(t, v);
    int64_t xst[IC_MAX_DIMS], st[IC_MAX_DIMS];
    if (!sym_eager_strides(t, x->val, xst) && !ic_value_strides(t->g, x->val, xst))
        return sym_fail(t, "advanced indexing of a tensor whose strides are not known left to eager");
    if (!key_index_strides(t, &m0, xst, parts, np, consuming, mv.ndim, mv.sizes, st))
        return sym_fail(t, "advanced indexing: eager's strides of the result not derived, left to eager");
    ic_value_set_strides(t->g, v, st);
    return 0;
}

/* Eager's strides of an advanced index: at::index(view, indices) after the key's basic
 * indexing made view (nd dims vsz/vst; ints selected, slices stepped, None unsqueezed), with
 * the integer index tensors ix[0..n) at view dims dims[] (ascending). ATen (make_info,
 * AdvancedIndex, the index TensorIterator): the indices broadcast together (expanded: 0
 * strides), int32 ones converted (preserve_format); indexed dims not adjacent are moved to
 * the front (with the indices); the view restrided to the result's shape (0 strides in the
 * indices' dims), each index viewed with size-1 dims around; on CUDA indices whose strides
 * differ are made contiguous; the output then laid out by TensorIterator over the view and
 * the indices. The result's sizes must be osz (on dims); 1 with st set, else 0. */
static int adv_index_strides(trace *t, int nd, const int64_t *vsz, const int64_t *vst, int n,
                             const int *dims, const ic_val *ix, int on, const int64_t *osz, int64_t *st) {
    int64_t isz[IC_MAX_DIMS][IC_MAX_DIMS], ist[IC_MAX_DIMS][IC_MAX_DIMS], bs[IC_MAX_DIMS];
    int ind[IC_MAX_DIMS], bn = 0, same = 1;
    if (n < 1 || n > nd || nd > IC_MAX_DIMS)
        return 0;
    for (int k = 0; k < n; k++) {
        ic_meta im = *sym_metap(t, ix[k]);
        ind[k] = im.ndim;
        memcpy(isz[k], im.sizes, sizeof(int64_t) * (size_t)im.ndim);
        if (!sym_eager_strides(t, ix[k], ist[k]) && !ic_value_strides(t->g, ix[k], ist[k]))
            return 0;
        same &= k == 0 || (im.ndim == ind[0] && !memcmp(im.sizes, isz[0], sizeof(int64_t) * (size_t)im.ndim));
        if (im.ndim > bn) {
            for (int j = im.ndim - 1; j >= 0; j--)
                bs[j] = j >= im.ndim - bn ? bs[j - (im.ndim - bn)] : 1;
            bn = im.ndim;
        }
        for (int j = 0; j < im.ndim; j++) {
            int64_t a = bs[bn - im.ndim + j], b = im.sizes[j];
            if (a != b && a != 1 && b != 1)
                return 0;
            bs[bn - im.ndim + j] = a == 1 ? b : a;
        }
    }
    int64_t xst[IC_MAX_DIMS][IC_MAX_DIMS]; /* each index expanded to bs */
    for (int k = 0; k < n; k++) {
        int off = bn - ind[k];
        for (int j = 0; j < bn; j++)
            xst[k][j] = same ? ist[k][j]
                        : (j < off || (isz[k][j - off] != bs[j])) ? 0 : ist[k][j - off];
        if (sym_metap(t, ix[k])->dtype == IC_I32) { /* .to(kLong) */
            int64_t pst[IC_MAX_DIMS];
            ic_layout_preserve(bn, bs, xst[k], pst);
            memcpy(xst[k], pst, sizeof pst);
        }
    }
    int adjacent = 1;
    for (int k = 1; k < n; k++)
        adjacent &= dims[k] == dims[k - 1] + 1;
    int64_t psz[IC_MAX_DIMS], pst[IC_MAX_DIMS];
    int first = adjacent ? dims[0] : 0, np = 0;
    if (adjacent) {
        memcpy(psz, vsz, sizeof(int64_t) * (size_t)nd);
        memcpy(pst, vst, sizeof(int64_t) * (size_t)nd);
    } else { /* transposeToFront */
        for (int k = 0; k < n; k++) {
            psz[np] = vsz[dims[k]];
            pst[np++] = vst[dims[k]];
        }
        for (int j = 0; j < nd; j++) {
            int used = 0;
            for (int k = 0; k < n; k++)
                used |= dims[k] == j;
            if (!used) {
                psz[np] = vsz[j];
                pst[np++] = vst[j];
            }
        }
    }
    int before = first, after = nd - first - n, rn = before + bn + after;
    if (rn != on || rn > IC_MAX_DIMS)
        return 0;
    int64_t rsz[IC_MAX_DIMS], ops[1 + IC_MAX_DIMS][IC_MAX_DIMS], isz1[IC_MAX_DIMS];
    for (int j = 0; j < before; j++) {
        rsz[j] = psz[j];
        ops[0][j] = pst[j];
        isz1[j] = 1;
    }
    for (int j = 0; j < bn; j++) {
        rsz[before + j] = bs[j];
        ops[0][before + j] = 0;
        isz1[before + j] = bs[j];
    }
    for (int j = 0; j < after; j++) {
        rsz[before + bn + j] = psz[first + n + j];
        ops[0][before + bn + j] = pst[first + n + j];
        isz1[before + bn + j] = 1;
    }
    if (memcmp(rsz, osz, sizeof(int64_t) * (size_t)rn))
        return 0;
    for (int k = 0; k < n; k++) /* reshape_indexer: a view with size-1 dims around */
        if (!sym_view_strides(bn, bs, xst[k], rn, isz1, ops[1 + k]))
            return 0;
    int stmatch = 1;
    for (int k = 1; k < n; k++)
        stmatch &= !memcmp(ops[1 + k], ops[1], sizeof(int64_t) * (size_t)rn);
    if (n >= 2 && !stmatch && t->device_type == TC_DEV_CUDA)
        for (int k = 0; k < n; k++)
            contiguous_strides(rn, isz1, ops[1 + k]);
    if (rn == 0)
        return 1;
    /* fast setup: every operand of the result's shape and contiguous */
    int fast = !memcmp(isz1, rsz, sizeof(int64_t) * (size_t)rn);
    for (int k = 0; k <= n && fast; k++)
        fast = is_contiguous_strides(rn, rsz, ops[k]);
    if (fast) {
        contiguous_strides(rn, rsz, st);
        return 1;
    }
    for (int k = 1; k <= n; k++) /* broadcast: 0 where the index has size 1 */
        for (int j = 0; j < rn; j++)
            if (isz1[j] == 1 && rsz[j] != 1)
                ops[k][j] = 0;
    ic_layout_iter(rn, rsz, n + 1, (const int64_t(*)[IC_MAX_DIMS])ops, st);
    return 1;
}

/* x[i0, i1, ...] with several integer tensor indices (slices and an Ellipsis between them
 * allowed): the indices broadcast to one shape B; the indexed dims are flattened into one
 * and gathered with the linear index sum(i_k * stride_k). torch's placement rule: B
 * replaces the indexed dims when they are adjacent, else it comes first. Each index must
 * be in [0, size) (inputs are checked before each run: negative indices run eagerly). */
/* the reason for a tensor index that is not an int32/int64 tensor */
static int non_int_index(trace *t, ic_dtype dt) {
    if (dt == IC_BOOL || dt == IC_U8)
        return sym_fail(t, "reading x[mask] with a boolean mask: its shape depends on the mask's values "
                           "(data-dependent; a store x[mask] = v is captured)");
    return sym_fail(t, "tensor index other than a long, int, byte or bool tensor (eager will raise)");
}

static int multi_index(trace *t, const var *x, const var **parts, int np, int consuming, var *out) {
    ic_meta m0 = *sym_metap(t, x->val);
    if (m0.dyn)
        return sym_fail(t, "advanced indexing with several tensors of a tensor with symbolic sizes not supported yet");
    if (consuming > m0.ndim)
        return sym_fail(t, "too many indices for the tensor (eager will raise)");
    ic_val v = x->val;
    int dims[IC_MAX_DIMS], nidx = 0, d = 0;
    var idx[IC_MAX_DIMS];
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        if (p->kind == V_CONST && p->obj == Py_Ellipsis) {
            d += m0.ndim - consuming;
        } else if (p->kind == V_TENSOR) {
            idx[nidx] = *p;
            sym_resolve(t, &idx[nidx]);
            dims[nidx++] = d++;
        } else if (p->kind == V_CONST && PySlice_Check(p->obj)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(p->obj, &start, &stop, &step) < 0) {
                if (tc_clear_expected(PyExc_Exception) < 0)
                    return -1;
                return sym_fail(t, "bad slice");
            }
            if (step <= 0)
                return sym_fail(t, "slice step must be positive (eager will raise)");
            PySlice_AdjustIndices(m0.sizes[d], &start, &stop, step);
            if (stop < start)
                stop = start;
            v = ic_slice(t->g, v, d, start, stop, step);
            d++;
        } else {
            return sym_fail(t, "advanced indexing with several tensors mixed with ints or None not supported yet");
        }
    }
    ic_meta m = *sym_metap(t, v); /* sliced */
    int adjacent = 1;
    for (int k = 1; k < nidx; k++)
        adjacent &= dims[k] == dims[k - 1] + 1;
    /* broadcast shape of the indices */
    int64_t bs[IC_MAX_DIMS];
    int bn = 0;
    for (int k = 0; k < nidx; k++) {
        ic_meta im = *sym_metap(t, idx[k].val);
        if (im.dtype != IC_I64 && im.dtype != IC_I32)
            return non_int_index(t, im.dtype);
        if (im.dyn)
            return sym_fail(t, "tensor index with symbolic sizes not supported yet");
        if (im.ndim > bn) {
            for (int j = im.ndim - 1; j >= 0; j--) /* right-align what is there */
                bs[j] = j >= im.ndim - bn ? bs[j - (im.ndim - bn)] : 1;
            bn = im.ndim;
        }
        for (int j = 0; j < im.ndim; j++) {
            int64_t a = bs[bn - im.ndim + j], b = im.sizes[j];
            if (a != b && a != 1 && b != 1)
                return sym_fail(t, "index shapes do not broadcast (eager will raise)");
            bs[bn - im.ndim + j] = a == 1 ? b : a;
        }
        if (sym_check_index(t, &idx[k], m.sizes[dims[k]], 0) < 0)
            return -1;
    }
    /* move the indexed dims together (first when not adjacent) */
    int perm[IC_MAX_DIMS], np2 = 0, first = adjacent ? dims[0] : 0;
    if (!adjacent) {
        for (int k = 0; k < nidx; k++)
            perm[np2++] = dims[k];
        for (int j = 0; j < m.ndim; j++) {
            int used = 0;
            for (int k = 0; k < nidx; k++)
                used |= dims[k] == j;
            if (!used)
                perm[np2++] = j;
        }
        v = ic_permute(t->g, v, perm);
        if (v < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "indexing failed");
        m = *sym_metap(t, v);
    }
    /* flatten the nidx dims at first..first+nidx into one */
    int64_t fs[IC_MAX_DIMS], flat = 1;
    int fn = 0;
    for (int j = 0; j < first; j++)
        fs[fn++] = m.sizes[j];
    for (int k = 0; k < nidx; k++)
        flat *= m.sizes[first + k];
    fs[fn++] = flat;
    for (int j = first + nidx; j < m.ndim; j++)
        fs[fn++] = m.sizes[j];
    v = ic_reshape(t->g, v, fn, fs);
    ic_val lin = -1;
    int64_t stride = 1;
    for (int k = nidx - 1; k >= 0; k--) {
        ic_val ik = ic_cast(t->g, idx[k].val, IC_I64);
        if (stride != 1)
            ik = ic_binary(t->g, IC_OP_MUL, ik, sym_inum(t, stride));
        lin = lin < 0 ? ik : ic_binary(t->g, IC_OP_ADD, lin, ik);
        stride *= m.sizes[first + k];
    }
    int64_t numel = 1;
    for (int j = 0; j < bn; j++)
        numel *= bs[j];
    lin = ic_expand(t->g, lin, bn, bs);
    lin = ic_reshape(t->g, lin, 1, &numel);
    v = ic_index_select(t->g, v, first, lin);
    /* the gathered dim becomes B */
    int64_t rs[IC_MAX_DIMS];
    int rn = 0;
    if (fn - 1 + bn > IC_MAX_DIMS)
        return sym_fail(t, "too many dims");
    for (int j = 0; j < first; j++)
        rs[rn++] = fs[j];
    for (int j = 0; j < bn; j++)
        rs[rn++] = bs[j];
    for (int j = first + 1; j < fn; j++)
        rs[rn++] = fs[j];
    v = sym_reshape(t, v, rn, rs);
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "indexing failed");
    if (set_index_strides(t, x, parts, np, consuming, v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* x[k]: ints, slices, None, Ellipsis, tuples of them, and one 1-D integer tensor index.
 * Basic indexing gives views (index maps); the tensor index is an index_select. */

/* The parts of an index key k (x[k], x[k] = v): a constant tuple's items (as constants in tmp),
 * a symbolic tuple's items, or k itself. Returns their count, or -1 (too many indices). */
/* eager's treatSequenceAsTuple (NumPy's legacy rule): a list key of fewer than 32 items with
 * a tensor, a sequence, a slice, None or Ellipsis among them indexes as the tuple of its items
 * (x[[[0, 2], [1, 1]]] is x[[0, 2], [1, 1]]); 1 yes, 0 no, -1 can't tell */
static int list_key_is_tuple(trace *t, const var *k) {
    if (k->kind == V_CONST && PyList_CheckExact(k->obj)) {
        Py_ssize_t n = PyList_GET_SIZE(k->obj);
        if (n >= 32)
            return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *o = PyList_GET_ITEM(k->obj, i);
            if (o == Py_None || o == Py_Ellipsis || PySlice_Check(o) || PySequence_Check(o))
                return 1;
        }
        return 0;
    }
    if (!(k->kind == V_SEQ && k->is_list))
        return 0;
    if (k->n >= 32)
        return 0;
    for (int i = 0; i < k->n; i++) {
        var it = k->items[i];
        sym_resolve(t, &it);
        if (it.kind == V_TENSOR || it.kind == V_SEQ)
            return 1;
        if (it.kind == V_CONST) {
            PyObject *o = it.obj;
            if (o == Py_None || o == Py_Ellipsis || PySlice_Check(o) || PySequence_Check(o))
                return 1;
            continue;
        }
        if (it.kind != V_SYM)
            return -1;
    }
    return 0;
}

int sym_index_parts(trace *t, const var *k, const var **parts, var *tmp) {
    int np = 0;
    int lt = list_key_is_tuple(t, k);
    if (lt < 0)
        return sym_fail(t, "an index list with items of unknown kinds left to eager");
    if (lt && k->kind == V_CONST) {
        if (PyList_GET_SIZE(k->obj) > SYM_INDEX_PARTS)
            return sym_fail(t, "too many indices");
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(k->obj); i++) {
            memset(&tmp[np], 0, sizeof tmp[np]);
            tmp[np].kind = V_CONST;
            tmp[np].obj = PyList_GET_ITEM(k->obj, i);
            parts[np] = &tmp[np];
            np++;
        }
    } else if (lt) {
        if (k->n > SYM_INDEX_PARTS)
            return sym_fail(t, "too many indices");
        for (int i = 0; i < k->n; i++)
            parts[np++] = &k->items[i];
    } else if (k->kind == V_CONST && PyTuple_CheckExact(k->obj)) {
        if (PyTuple_GET_SIZE(k->obj) > SYM_INDEX_PARTS)
            return sym_fail(t, "too many indices");
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k->obj); i++) {
            memset(&tmp[np], 0, sizeof tmp[np]);
            tmp[np].kind = V_CONST;
            tmp[np].obj = PyTuple_GET_ITEM(k->obj, i);
            parts[np] = &tmp[np];
            np++;
        }
    } else if (k->kind == V_SEQ && !k->is_list) {
        if (k->n > SYM_INDEX_PARTS)
            return sym_fail(t, "too many indices");
        for (int i = 0; i < k->n; i++)
            parts[np++] = &k->items[i];
    } else {
        parts[np++] = k;
    }
    return np;
}

static int tensor_index_impl(trace *t, const var *x_in, const var *k, var *out) {
    var xv = *x_in, *x = &xv;
    sym_resolve(t, x);
    if (t->tfm_active > 0) { /* through the TorchFunctionMode (sym_tfm.c) */
        static PyObject *s_gi;
        if (s_gi == NULL && (s_gi = PyUnicode_InternFromString("__getitem__")) == NULL)
            return -1;
        PyObject *d = sym_tfm_method(s_gi);
        var two[2] = {*x, *k};
        return d ? sym_tfm_dispatch(t, d, NULL, two, 2, NULL, out) : sym_fail(t, "Tensor.__getitem__ not found");
    }
    if (t->vm_depth > 0) { /* inside a torch.vmap'd function (sym_vmap.c) */
        int rc = sym_vmap_index(t, x, k, out);
        if (rc != 1)
            return rc;
    }
    int crc = sym_complex_index(t, x, k, out); /* a complex tensor or index: ops_complex.c */
    if (crc != 1)
        return crc;
    const var *parts[SYM_INDEX_PARTS];
    var tmp[SYM_INDEX_PARTS];
    int np = sym_index_parts(t, k, parts, tmp);
    if (np < 0)
        return -1;
    /* a list of ints (x[:, [-1]], x[[0, 2]]) is an int64 tensor index to eager, a list of bools
     * a mask: torch.tensor of the list (any other list, empty or of floats, left to eager) */
    var lt[SYM_INDEX_PARTS];
    for (int i = 0; i < np; i++) {
        const var *q = parts[i];
        if (!((q->kind == V_SEQ && q->is_list) || (q->kind == V_CONST && PyList_Check(q->obj))))
            continue;
        /* on the indexed tensor's device (eager moves a CPU index there): the graph's, or the
         * CPU of a CUDA graph's tensor that lives there (fold.c sym_home) */
        static const opdef tensor_def = {"tensor", W_TORCH, "data|dtype,device", sym_h_tensor, 0};
        int xh = x->kind == V_TENSOR && x->val >= 0 && sym_home_off(t, x->val) ? sym_home(t, x->val) : 0;
        var dev = sym_var(V_CONST);
        dev.obj = sym_keep(t, xh ? sym_home_device(xh) : sym_graph_device(t));
        if (dev.obj == NULL)
            return -1;
        var *tp[MAXP] = {(var *)q, NULL, &dev};
        int fac_ok = t->fac_ok, fac_home = t->fac_home;
        t->fac_ok = 0; /* (no factory of a call_op's own) */
        int rt = sym_h_tensor(t, &tensor_def, tp, &lt[i]);
        t->fac_ok = fac_ok;
        t->fac_home = fac_home;
        if (rt < 0 || (xh && sym_home_set(t, lt[i].val, xh) < 0))
            return -1;
        ic_dtype ld = sym_metap(t, lt[i].val)->dtype;
        if (ld != IC_I64 && ld != IC_BOOL) /* [] is a float tensor here */
            return sym_fail(t, "unsupported index type (a list not all ints or bools)");
        parts[i] = &lt[i];
    }
    /* a 0-d integer tensor index is an int to eager (select: a view): one whose value the
     * trace knows (torch.tensor(2)) becomes that int; a runtime one is left to eager (the
     * view's position would depend on the data) */
    var zt[SYM_INDEX_PARTS];
    PyObject *key = NULL; /* the key with those ints, for the view's replay */
    int nzero = 0, allconst = 1;
    for (int i = 0; i < np; i++) {
        if (parts[i]->kind != V_TENSOR) {
            allconst &= parts[i]->kind == V_CONST;
            continue;
        }
        var pv = *parts[i];
        sym_resolve(t, &pv);
        ic_meta im = *sym_metap(t, pv.val);
        if (im.ndim != 0 || !(im.dtype >= IC_I8 && im.dtype <= IC_I64)) {
            allconst = 0;
            continue;
        }
        double lo, hi;
        if (!ic_value_int_range(t->g, pv.val, &lo, &hi) || lo != hi)
            return sym_fail(t, "0-d integer tensor index at a runtime value (a view at a data-dependent position) left to eager");
        memset(&zt[i], 0, sizeof zt[i]);
        zt[i].kind = V_CONST;
        zt[i].obj = sym_keep(t, PyLong_FromDouble(lo));
        if (zt[i].obj == NULL)
            return -1;
        parts[i] = &zt[i];
        nzero++;
    }
    if (nzero && allconst) {
        int tup = !(np == 1 && k->kind == V_TENSOR);
        key = tup ? PyTuple_New(np) : NULL;
        if (!tup)
            key = parts[0]->obj;
        else if (key == NULL || sym_keep(t, key) == NULL)
            return -1;
        else
            for (int i = 0; i < np; i++) {
                Py_INCREF(parts[i]->obj);
                PyTuple_SET_ITEM(key, i, parts[i]->obj);
            }
    }
    ic_meta m0_copy = *sym_metap(t, x->val);
    const ic_meta *m0 = &m0_copy; /* a copy: the graph reallocates */
    int consuming = 0, ell = -1, ntensor = 0;
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        if (p->kind == V_CONST && p->obj == Py_Ellipsis) {
            if (ell >= 0)
                return sym_fail(t, "two ellipses (eager will raise)");
            ell = i;
        } else if (p->kind == V_CONST && p->obj == Py_None) {
        } else if (p->kind == V_TENSOR) {
            consuming++;
            ntensor++;
        } else if (p->kind == V_CONST && (PyLong_Check(p->obj) || PySlice_Check(p->obj))) {
            consuming++;
        } else {
            return sym_fail(t, "unsupported index type");
        }
    }
    if (ntensor > 1)
        return multi_index(t, x, parts, np, consuming, out);
    if (consuming > m0->ndim)
        return sym_fail(t, "too many indices for the tensor (eager will raise)");
    ic_val v = x->val;
    int d = 0, is_copy = 0;
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        ic_meta m_copy = *sym_metap(t, v);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
        if (p->kind == V_CONST && p->obj == Py_Ellipsis) {
            d += m0->ndim - consuming;
            continue;
        }
        if (p->kind == V_CONST && p->obj == Py_None) {
            if (m->ndim + 1 > IC_MAX_DIMS)
                return sym_fail(t, "too many dims");
            v = sym_unsqueeze_val(t, v, d);
            d++;
            continue;
        }
        if (d >= m->ndim)
            return sym_fail(t, "index out of range (eager will raise)");
        if (p->kind == V_TENSOR) {
            var pv = *p;
            sym_resolve(t, &pv);
            ic_meta im_copy = *sym_metap(t, pv.val);
    const ic_meta *im = &im_copy; /* a copy: the graph reallocates */
            if (im->dtype != IC_I64 && im->dtype != IC_I32)
                return non_int_index(t, im->dtype);
            if (im->ndim != 1 && (im->dyn || m->ndim - 1 + im->ndim > IC_MAX_DIMS))
                return sym_fail(t, "%d-d tensor index with symbolic sizes or too many dims not supported yet", im->ndim);
            double ilo, ihi; /* negative entries of a known index (x[:, [-1]]) wrap as eager's:
                              * i % size for i in [-size, size) */
            if (!m->dyn && ic_value_int_range(t->g, pv.val, &ilo, &ihi) && ilo < 0 &&
                ilo >= -(double)m->sizes[d] && ihi < (double)m->sizes[d])
                pv.val = ic_binary(t->g, IC_OP_REMAINDER, pv.val, ic_scalar(t->g, (double)m->sizes[d], IC_I64));
            if (pv.val < 0)
                return sym_check_graph(t);
            if (sym_check_index(t, &pv, m->sizes[d], 1) < 0)
                return -1;
            /* one integer index of any shape: select along d with the flattened index, the
             * index's dims replacing d (torch's rule for a single advanced index) */
            ic_val iv = pv.val;
            int64_t numel = 1;
            for (int j = 0; j < im->ndim; j++)
                numel *= im->sizes[j];
            if (im->ndim != 1)
                iv = ic_reshape(t->g, iv, 1, &numel);
            v = ic_index_select(t->g, v, d, iv);
            if (im->ndim != 1 && v >= 0) {
                ic_meta mr = *sym_metap(t, v);
                int64_t sz[IC_MAX_DIMS];
                int n = 0;
                for (int j = 0; j < d; j++)
                    sz[n++] = mr.sizes[j];
                for (int j = 0; j < im->ndim; j++)
                    sz[n++] = im->sizes[j];
                for (int j = d + 1; j < mr.ndim; j++)
                    sz[n++] = mr.sizes[j];
                v = sym_reshape(t, v, n, sz);
            }
            is_copy = 1;
            d += im->ndim;
            continue;
        }
        int64_t size = m->sizes[d];
        if (PyLong_Check(p->obj)) {
            int ovf = 0;
            long long i0 = PyLong_AsLongLongAndOverflow(p->obj, &ovf);
            if (ovf)
                return sym_fail(t, "index out of range (eager will raise)");
            if (i0 < 0)
                i0 += size;
            if (i0 < 0 || i0 >= size)
                return sym_fail(t, "index out of range (eager will raise)");
            v = ic_slice(t->g, v, d, i0, i0 + 1, 1);
            ic_meta ms_copy = *sym_metap(t, v);
    const ic_meta *ms = &ms_copy; /* a copy: the graph reallocates */
            if (ms == NULL)
                return sym_check_graph(t);
            int64_t sz[IC_MAX_DIMS];
            int n = 0;
            for (int j = 0; j < ms->ndim; j++)
                if (j != d)
                    sz[n++] = ms->sizes[j];
            v = sym_reshape(t, v, n, sz);
            continue;
        }
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(p->obj, &start, &stop, &step) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "bad slice");
        }
        if (step <= 0)
            return sym_fail(t, "slice step must be positive (eager will raise)");
        PySlice_AdjustIndices(size, &start, &stop, step);
        if (stop < start)
            stop = start;
        v = ic_slice(t->g, v, d, start, stop, step);
        d++;
    }
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "indexing failed");
    if (is_copy)
        return set_index_strides(t, x, parts, np, consuming, v) < 0 ? -1 : sym_tensor_out(t, v, out);
    if (v == x->val) /* x[...] or x[:]: a view of the same data */
        v = sym_reshape(t, v, m0->ndim, m0->sizes);
    /* the key eager indexes with: the 0-d tensor indices read as ints above, a constant, or a
     * tuple built in the frame (tuple([slice(None)] * axis + [s])) of constants */
    PyObject *nkey = key ? Py_NewRef(key) : k->kind == V_CONST ? Py_NewRef(k->obj) : NULL;
    if (nkey == NULL && k->kind == V_SEQ && !k->is_list && k->obj == NULL && k->n == np) {
        nkey = PyTuple_New(np);
        for (int i = 0; nkey && i < np; i++) {
            if (parts[i]->kind != V_CONST) {
                Py_CLEAR(nkey);
                break;
            }
            PyTuple_SET_ITEM(nkey, i, Py_NewRef(parts[i]->obj));
        }
        if (nkey == NULL && PyErr_Occurred())
            return -1;
    }
    if (nkey == NULL)
        return sym_fail(t, "indexing: non-constant index");
    return sym_view_out_desc(t, x, v, out, "__getitem__", Py_BuildValue("(N)", nkey));
}

int sym_idx_add(trace *t, int src, int64_t bound, int gather) {
    for (int i = 0; i < t->nidx; i++)
        if (t->idx_src[i] == src && t->idx_bound[i] == bound) {
            t->idx_gather[i] &= (unsigned char)(gather != 0);
            return 0;
        }
    if (t->nidx >= dh_limit.max_index_inputs)
        return sym_fail(t, "more than %d index or divisor input tensors to check before each run "
                           "(torchc.config.max_index_inputs)", dh_limit.max_index_inputs);
    if (t->nidx == t->capidx) {
        int cap = t->capidx ? 2 * t->capidx : 16;
        int *s = realloc(t->idx_src, sizeof(int) * (size_t)cap);
        if (s != NULL)
            t->idx_src = s;
        int64_t *b = s ? realloc(t->idx_bound, sizeof(int64_t) * (size_t)cap) : NULL;
        if (b != NULL)
            t->idx_bound = b;
        unsigned char *g = b ? realloc(t->idx_gather, (size_t)cap) : NULL;
        if (g == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->idx_gather = g;
        t->capidx = cap;
    }
    t->idx_src[t->nidx] = src;
    t->idx_gather[t->nidx] = (unsigned char)(gather != 0);
    t->idx_bound[t->nidx++] = bound;
    return 0;
}

int sym_check_index(trace *t, const var *index, int64_t bound, int gather) {
    ic_val iv = index->val, root = ic_value_view_root(t->g, iv);
    ic_op op = ic_value_op(t->g, iv);
    if (ic_value_op(t->g, root) == IC_OP_INPUT) {
        /* an input, or a view of one (a slice of a position-ids buffer): the whole input
         * is bounds-checked before each run */
        int s = root == iv ? index->src : -1;
        iv = root;
        if (s < 0) {
            int k = 0;
            for (ic_val x = 0; x < iv; x++)
                if (ic_value_op(t->g, x) == IC_OP_INPUT)
                    k++;
            s = t->input_src[k];
        }
        return sym_idx_add(t, s, bound, gather != 0);
    }
    if (op == IC_OP_ARGMAX || op == IC_OP_ARGMIN)
        return 0;
    if (sym_fold_in_range(t, index, bound)) /* a constant (fold.c): its values known now */
        return 0;
    double lo, hi; /* position ids: arange(n) + past length, unsqueezed */
    if (ic_value_int_range(t->g, iv, &lo, &hi)) {
        if (bound <= 0 || lo < 0 || hi >= (double)bound)
            return sym_fail(t, "index out of range (eager will raise)");
        return 0;
    }
    if (t->device_type == TC_DEV_CUDA) {
        /* the GPU gather wraps a negative index once and traps on one still out of [0, bound)
         * (gpu_mem.c gather_off): eager's device-side assert, with no sync per call. Return 1:
         * a caller whose eager op does not wrap negatives (embedding, index_select) maps them
         * out of range first (sym_trap_negatives) */
        if (gather)
            return 1;
        return sym_fail(t, "indexing with a computed index tensor (bounds unknown) not supported yet on CUDA");
    }
    /* checked after the kernels: the number of elements outside [0, bound) (the CPU gather
     * clamps, so the kernels stay in memory meanwhile) */
    ic_val bad = ic_binary(G, IC_OP_LOGICAL_OR, ic_binary(G, IC_OP_LT, iv, sym_inum(t, 0)),
                           ic_binary(G, IC_OP_GE, iv, sym_inum(t, bound)));
    bad = ic_reduce(G, IC_OP_SUM, ic_cast(G, bad, IC_I64), 0, 0, -1);
    return sym_add_check(t, bad, "index");
}


/* gather(input, dim, index) / scatter(input, dim, index, src|value) / scatter_add; op: kind */
int sym_h_gather(trace *t, const opdef *d, var **p, var *out) {
    long long dd;
    int dim;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_int(t, p[1], &dd, "dim") < 0 ||
        sym_norm_dim(t, dd, sym_ndim_of(t, p[0]->val), &dim) < 0 || sym_need_tensor(t, d, p[2]) < 0)
        return -1;
    int64_t prm[1] = {dim};
    ic_val v[3] = {p[0]->val, p[2]->val, -1};
    if (d->op == IC_EXT_GATHER)
        return sym_tensor_out(t, ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1), out);
    if (p[4] != NULL && !sym_is_none(p[4]))
        return sym_fail(t, "%s with reduce= left to eager", d->name);
    {
        /* an empty result runs no kernel, so ATen's index check would not run: an empty
         * input with indices is left to eager (which raises) */
        ic_meta xm = *sym_metap(t, p[0]->val), im = *sym_metap(t, p[2]->val);
        int64_t xn = 1, in = 1;
        for (int i = 0; i < xm.ndim; i++)
            xn *= xm.sizes[i];
        for (int i = 0; i < im.ndim; i++)
            in *= im.sizes[i];
        if (!xm.dyn && !im.dyn && xn == 0 && in != 0)
            return sym_fail(t, "%s into an empty tensor with indices (eager checks them) left to eager", d->name);
    }
    var *src = p[3] != NULL ? p[3] : p[5];
    if (src == NULL || (p[3] != NULL && p[5] != NULL))
        return sym_fail(t, "%s needs one of src/value", d->name);
    if (src->kind == V_TENSOR) {
        v[2] = src->val;
    } else if (d->op == IC_EXT_SCATTER && sym_is_number(src)) {
        /* scatter(dim, index, value): the value broadcast to the index's shape */
        ic_meta im = *sym_metap(t, p[2]->val);
        ic_val s;
        if (sym_as_tensor(t, src, &s) < 0)
            return -1;
        v[2] = ic_expand(G, ic_cast(G, s, sym_metap(t, p[0]->val)->dtype), im.ndim, im.sizes);
    } else {
        return sym_fail(t, "%s: src must be a tensor", d->name);
    }
    return sym_tensor_out(t, ic_extern(G, (ic_extern_kind)d->op, 3, v, 1, prm, 1, 1), out);
}

/* scatter_reduce(input, dim, index, src, reduce, *, include_self=True): ATen's own kernel,
 * an extern of the scatter kind with the reduction and include_self as two more params
 * (csrc/aten_bridge.cpp). Inference only: with a value that requires grad it is left to
 * eager (its backward, for prod/amax/amin ties in particular, is not the graph's). */
int sym_h_scatter_reduce(trace *t, const opdef *d, var **p, var *out) {
    static const char *const modes[] = {"sum", "prod", "mean", "amax", "amin", "max", "min", NULL}; /* (eager's aliases last) */
    long long dd;
    int dim, self = 1, mode = -1;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_int(t, p[1], &dd, "dim") < 0 ||
        sym_norm_dim(t, dd, sym_ndim_of(t, p[0]->val), &dim) < 0 || sym_need_tensor(t, d, p[2]) < 0 ||
        sym_need_tensor(t, d, p[3]) < 0 || sym_get_bool(t, p[5], 1, &self, "include_self") < 0)
        return -1;
    const char *r = p[4] != NULL && p[4]->kind == V_CONST && PyUnicode_Check(p[4]->obj) ? PyUnicode_AsUTF8(p[4]->obj) : NULL;
    for (int i = 0; r && modes[i]; i++)
        if (!strcmp(r, modes[i]))
            mode = i;
    if (mode < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "%s: reduce must be one of sum/prod/mean/amax/amin (eager will raise)", d->name);
    }
    ic_meta xm = *sym_metap(t, p[0]->val), im = *sym_metap(t, p[2]->val), sm = *sym_metap(t, p[3]->val);
    if (sym_value_requires_grad(t, p[0]->val) || sym_value_requires_grad(t, p[3]->val))
        return sym_fail(t, "%s of a tensor that requires grad left to eager", d->name);
    if (xm.dtype == IC_BOOL || sm.dtype != xm.dtype)
        return sym_fail(t, "%s: bool or mixed dtypes left to eager (eager decides)", d->name);
    int64_t xn = 1, in = 1;
    for (int i = 0; i < xm.ndim; i++)
        xn *= xm.sizes[i];
    for (int i = 0; i < im.ndim; i++)
        in *= im.sizes[i];
    if (xm.dyn || im.dyn || sm.dyn)
        return sym_fail(t, "%s with symbolic sizes left to eager", d->name);
    if (xn == 0 && in != 0) /* no kernel runs, so no index check: eager raises */
        return sym_fail(t, "%s into an empty tensor with indices (eager checks them) left to eager", d->name);
    int64_t prm[3] = {dim, mode > 4 ? mode - 2 : mode, self};
    ic_val v[3] = {p[0]->val, p[2]->val, p[3]->val};
    return sym_tensor_out(t, ic_extern(G, IC_EXT_SCATTER, 3, v, 3, prm, 1, 1), out);
}

/* x[k] of a tensor built from constants only, with a constant key: computed now (fold.c) */
int sym_tensor_index(trace *t, const var *x_in, const var *k_in, var *out) {
    var xv = *x_in, kv = *k_in;
    sym_resolve(t, &xv);
    sym_resolve(t, &kv);
    sym_fold f;
    f.res = NULL;
    int rc = sym_fold_index(t, &xv, &kv, &f, out);
    if (rc != 1 && rc != 2)
        return rc;
    var two[2] = {xv, kv};
    if (rc == 1 && sym_fold_check(t, two, 2, 2) < 0) /* (an index: eager moves CPU indices) */
        return -1;
    int rh = tensor_index_impl(t, x_in, k_in, out);
    if (rc == 2 && rh == 0 && sym_fold_attach(t, &f, out) < 0)
        return -1;
    sym_fold_clear(&f);
    return rh;
}

/* zeros of dtype dt in sizes (a broadcast scalar) */
static ic_val zeros_of(trace *t, ic_dtype dt, int n, const int64_t *sz) {
    return ic_expand(G, ic_cast(G, sym_num(t, 0), dt), n, sz);
}

/* F.embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
 * per_sample_weights, include_last_offset, padding_idx) / nn.EmbeddingBag: the rows of weight
 * gathered (index_select) and reduced per bag. A 2-D input (fixed-size bags): one reduction over
 * its columns. A 1-D input with offsets (CPU): each index's bag from a cumulative count of the
 * bag starts, sums as a scatter_add into the bags, max as scatter_reduce(amax) (no gradient);
 * eager's checks of the offsets (offsets[0] == 0, non-decreasing, offsets[-1] <= len) and of
 * the indices run on the values. padding_idx entries count in no bag (a dummy bag past the
 * last); empty bags are 0 in every mode, as eager's. */
int sym_h_embedding_bag(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_meta im = *sym_metap(t, p[0]->val), wm = *sym_metap(t, p[1]->val);
    const char *mode = "mean";
    int sgf = 0, sparse = 0, last = 0;
    if (sym_get_str(t, p[6], "mean", &mode, "mode") < 0 || sym_get_bool(t, p[5], 0, &sgf, "scale_grad_by_freq") < 0 ||
        sym_get_bool(t, p[7], 0, &sparse, "sparse") < 0 || sym_get_bool(t, p[9], 0, &last, "include_last_offset") < 0)
        return -1;
    int md = !strcmp(mode, "sum") ? 0 : !strcmp(mode, "mean") ? 1 : !strcmp(mode, "max") ? 2 : -1;
    if (md < 0)
        return sym_fail(t, "embedding_bag: mode has to be one of sum, mean or max (eager raises)");
    if (im.dyn || wm.dyn)
        return sym_fail(t, "embedding_bag with symbolic shapes left to eager");
    if (im.dtype != IC_I64 && im.dtype != IC_I32)
        return sym_fail(t, "embedding_bag: indices not int32/int64 left to eager (eager raises or swaps the arguments)");
    if (wm.ndim != 2)
        return sym_fail(t, "embedding_bag: weight has to be 2-D (eager raises)");
    if (wm.dtype != IC_F32 && wm.dtype != IC_F64)
        return sym_fail(t, "embedding_bag of 16-bit or non-float weights left to eager");
    if (!sym_is_none(p[3]))
        return sym_fail(t, "embedding_bag with max_norm (renormalizes weight in place) left to eager");
    if (md == 2 && (sgf || sparse))
        return sym_fail(t, "embedding_bag: max mode with scale_grad_by_freq or sparse (eager raises)");
    var *psw = sym_is_none(p[8]) ? NULL : p[8];
    if (psw != NULL) {
        if (psw->kind != V_TENSOR)
            return sym_fail(t, "embedding_bag: per_sample_weights must be a tensor");
        if (md != 0)
            return sym_fail(t, "embedding_bag: per_sample_weights only with mode='sum' (eager raises)");
        ic_meta pm = *sym_metap(t, psw->val);
        int same = pm.ndim == im.ndim && pm.dtype == wm.dtype;
        for (int i = 0; same && i < im.ndim; i++)
            same = pm.sizes[i] == im.sizes[i];
        if (!same)
            return sym_fail(t, "embedding_bag: per_sample_weights of another shape or dtype (eager raises)");
    }
    int grad = sym_value_requires_grad(t, p[1]->val) || (psw && sym_value_requires_grad(t, psw->val));
    if (grad && (sgf || sparse))
        return sym_fail(t, "embedding_bag's gradient with scale_grad_by_freq or sparse left to eager");
    const int64_t R = wm.sizes[0], D = wm.sizes[1];
    long long pad = -1;
    if (!sym_is_none(p[10])) { /* F.embedding_bag asserts -rows <= padding_idx < rows */
        if (sym_get_int(t, p[10], &pad, "padding_idx") < 0)
            return -1;
        if ((pad > 0 && pad >= R) || (pad < 0 && pad < -R))
            return sym_fail(t, "embedding_bag: padding_idx out of range (eager raises)");
        if (pad < 0)
            pad += R;
    }
    const ic_dtype wdt = wm.dtype;
    int64_t n = 1;
    for (int i = 0; i < im.ndim; i++)
        n *= im.sizes[i];
    ic_val flat = sym_reshape(t, p[0]->val, 1, &n);
    if (im.ndim == 2) {
        if (!sym_is_none(p[2]))
            return sym_fail(t, "embedding_bag: offsets with a 2-D input (eager raises)");
        const int64_t B = im.sizes[0], L = im.sizes[1];
        if (L == 0)
            return sym_fail(t, "embedding_bag of a 2-D input without columns (eager raises)");
        int chk = sym_check_index(t, p[0], R, 1);
        if (chk < 0)
            return -1;
        ic_val ix = chk == 1 ? sym_trap_negatives(t, flat, R) : flat;
        int64_t s3[3] = {B, L, D}, s31[3] = {B, L, 1};
        ic_val rows = sym_reshape(t, ic_index_select(G, p[1]->val, 0, ix), 3, s3);
        if (psw != NULL)
            rows = ic_binary(G, IC_OP_MUL, rows, sym_reshape(t, psw->val, 3, s31));
        ic_val keep = pad >= 0 ? sym_reshape(t, ic_binary(G, IC_OP_NE, flat, sym_inum(t, pad)), 3, s31) : IC_NONE;
        ic_val cnt = keep >= 0 ? ic_reduce(G, IC_OP_SUM, ic_cast(G, keep, wdt), 2u, 0, -1) : IC_NONE;
        ic_val r;
        if (md == 2) {
            r = ic_reduce(G, IC_OP_AMAX, keep >= 0 ? ic_where(G, keep, rows, sym_num(t, -INFINITY)) : rows, 2u, 0, -1);
            if (keep >= 0)
                r = ic_where(G, ic_binary(G, IC_OP_GT, cnt, sym_num(t, 0)), r, sym_num(t, 0));
        } else {
            r = ic_reduce(G, IC_OP_SUM, keep >= 0 ? ic_where(G, keep, rows, sym_num(t, 0)) : rows, 2u, 0, -1);
            if (md == 1)
                r = ic_binary(G, IC_OP_DIV, r, keep >= 0 ? ic_binary(G, IC_OP_MAXIMUM, cnt, sym_num(t, 1)) : sym_num(t, (double)L));
        }
        return sym_tensor_out(t, r, out);
    }
    if (im.ndim != 1)
        return sym_fail(t, "embedding_bag: input has to be 1-D or 2-D (eager raises)");
    if (p[2] == NULL || p[2]->kind != V_TENSOR)
        return sym_fail(t, "embedding_bag: a 1-D input needs 1-D offsets (eager raises)");
    ic_meta om = *sym_metap(t, p[2]->val);
    if (om.ndim != 1 || om.dyn || (om.dtype != IC_I64 && om.dtype != IC_I32))
        return sym_fail(t, "embedding_bag: offsets must be a 1-D integer tensor (eager raises)");
    if (t->device_type == TC_DEV_CUDA)
        return sym_fail(t, "embedding_bag with offsets on CUDA left to eager (it checks the offsets)");
    const int64_t No = om.sizes[0], B = last ? No - 1 : No;
    if (No == 0 || B < 0)
        return sym_fail(t, "embedding_bag without offsets left to eager");
    if (md == 2 && grad)
        return sym_fail(t, "embedding_bag: max mode with offsets under autograd left to eager");
    if (md == 1 && last && pad >= 0)
        return sym_fail(t, "embedding_bag: mean with include_last_offset and padding_idx left to eager");
    ic_val offs = ic_cast(G, p[2]->val, IC_I64);
    /* eager's checks: offsets[0] == 0, non-decreasing, offsets[-1] <= len(input) */
    ic_val bad = ic_cast(G, ic_binary(G, IC_OP_NE, ic_slice(G, offs, 0, 0, 1, 1), sym_inum(t, 0)), IC_I64);
    bad = ic_binary(G, IC_OP_ADD, bad, ic_cast(G, ic_binary(G, IC_OP_GT, ic_slice(G, offs, 0, No - 1, No, 1), sym_inum(t, n)), IC_I64));
    if (No > 1)
        bad = ic_binary(G, IC_OP_ADD, bad, ic_cast(G, ic_binary(G, IC_OP_LT, ic_slice(G, offs, 0, 1, No, 1),
                                                                   ic_slice(G, offs, 0, 0, No - 1, 1)), IC_I64));
    if (sym_add_check(t, ic_reduce(G, IC_OP_SUM, bad, 0, 0, -1), "embedding_bag offsets") < 0)
        return -1;
    if (sym_check_index(t, p[0], R, 0) < 0)
        return -1;
    /* bag of each index: the starts at or before it, less one (offsets[0] == 0); entries past
     * offsets[B] (include_last_offset) and padding entries go to the dummy bag B */
    int64_t n1 = n + 1, one = 1;
    ic_val ones = ic_expand(G, sym_inum(t, 1), 1, &No);
    ic_val sc[3] = {zeros_of(t, IC_I64, 1, &n1), ic_binary(G, IC_OP_MINIMUM, offs, sym_inum(t, n)), ones};
    int64_t prm[3] = {0, -1, 0};
    ic_val marks = ic_extern(G, IC_EXT_SCATTER_ADD, 3, sc, 1, prm, 1, 1);
    ic_val bag = ic_binary(G, IC_OP_SUB, ic_slice(G, ic_extern(G, IC_EXT_CUMSUM, 1, &marks, 2, prm, 1, 1), 0, 0, n, 1),
                           sym_inum(t, 1));
    /* (eager's CPU max counts the entries past offsets[-1] in the last bag, its sum does not) */
    bag = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, bag, sym_inum(t, 0)),
                    sym_inum(t, md == 2 && last && B > 0 ? B - 1 : B));
    if (pad >= 0)
        bag = ic_where(G, ic_binary(G, IC_OP_EQ, flat, sym_inum(t, pad)), sym_inum(t, B), bag);
    int64_t nb = B + 1, sbd[2] = {nb, D}, snd[2] = {n, D}, sn1[2] = {n, 1};
    ic_val rows = ic_index_select(G, p[1]->val, 0, ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, flat, sym_inum(t, 0)),
                                                              sym_inum(t, R > 0 ? R - 1 : 0)));
    if (psw != NULL)
        rows = ic_binary(G, IC_OP_MUL, rows, sym_reshape(t, psw->val, 2, sn1));
    ic_val bidx = ic_expand(G, sym_reshape(t, bag, 2, sn1), 2, snd);
    ic_val in[3] = {zeros_of(t, wdt, 2, sbd), bidx, rows}, r;
    if (md == 2) {
        int64_t pr[3] = {0, 3 /* amax */, 0 /* include_self: empty bags keep 0 */};
        r = ic_extern(G, IC_EXT_SCATTER, 3, in, 3, pr, 1, 1);
    } else {
        r = ic_extern(G, IC_EXT_SCATTER_ADD, 3, in, 1, prm, 1, 1);
    }
    r = ic_slice(G, r, 0, 0, B, 1);
    if (md == 1) {
        ic_val cin[3] = {zeros_of(t, wdt, 1, &nb), bag, ic_expand(G, ic_cast(G, sym_num(t, 1), wdt), 1, &n)};
        ic_val cnt = ic_slice(G, ic_extern(G, IC_EXT_SCATTER_ADD, 3, cin, 1, prm, 1, 1), 0, 0, B, 1);
        if (last && B > 0) {
            /* eager's CPU kernel counts the entries past offsets[-1] in the last bag's size
             * (its sum leaves them out) */
            ic_val trail = ic_binary(G, IC_OP_SUB, sym_inum(t, n), ic_slice(G, offs, 0, No - 1, No, 1));
            ic_val at = ic_binary(G, IC_OP_EQ, ic_arange(G, B, 0, 1, IC_I64), sym_inum(t, B - 1));
            cnt = ic_binary(G, IC_OP_ADD, cnt, ic_where(G, at, ic_cast(G, trail, wdt), sym_num(t, 0)));
        }
        int64_t sb1[2] = {B, 1};
        r = ic_binary(G, IC_OP_DIV, r, sym_reshape(t, ic_binary(G, IC_OP_MAXIMUM, cnt, sym_num(t, 1)), 2, sb1));
    }
    (void)one;
    return sym_tensor_out(t, r, out);
}

/* idx (an integer tensor value) checked in [-bound, bound) after the run (CPU: the frame reruns
 * eagerly, which raises eager's IndexError), then wrapped and clamped into [0, bound) as i64 */
static ic_val wrapped_index(trace *t, ic_val idx, int64_t bound, const char *what) {
    ic_val i = ic_cast(G, idx, IC_I64);
    ic_val bad = ic_binary(G, IC_OP_LOGICAL_OR, ic_binary(G, IC_OP_LT, i, sym_inum(t, -bound)),
                           ic_binary(G, IC_OP_GE, i, sym_inum(t, bound)));
    if (sym_add_check(t, ic_reduce(G, IC_OP_SUM, ic_cast(G, bad, IC_I64), 0, 0, -1), what) < 0)
        return IC_NONE;
    i = ic_where(G, ic_binary(G, IC_OP_LT, i, sym_inum(t, 0)), ic_binary(G, IC_OP_ADD, i, sym_inum(t, bound)), i);
    return ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, i, sym_inum(t, 0)), sym_inum(t, bound > 0 ? bound - 1 : 0));
}

/* x (sizes xs, nd dims) with the rows [n, *xs[k:]] of vals written (acc: added) at the flat
 * positions lin ([n] i64 in [0, prod xs[:k])) of x's first k dims: one scatter / scatter_add
 * along dim 0 of x viewed as [P, *rest]; the result in x's layout (eager clones with
 * preserve_format) */
static ic_val put_rows(trace *t, ic_val x, int nd, const int64_t *xs, int k, ic_val lin, int64_t n, ic_val vals, int acc) {
    int64_t vs[IC_MAX_DIMS], ps[IC_MAX_DIMS], ones[IC_MAX_DIMS];
    int rn = nd - k + 1;
    int64_t P = 1;
    for (int i = 0; i < k; i++)
        P *= xs[i];
    ps[0] = P;
    vs[0] = n;
    ones[0] = n;
    for (int i = k; i < nd; i++) {
        ps[i - k + 1] = vs[i - k + 1] = xs[i];
        ones[i - k + 1] = 1;
    }
    ic_val xf = sym_reshape(t, x, rn, ps);
    ic_val ix = ic_expand(G, sym_reshape(t, lin, rn, ones), rn, vs);
    ic_val in[3] = {xf, ix, sym_reshape(t, vals, rn, vs)};
    int64_t prm[1] = {0};
    ic_val r = ic_extern(G, acc ? IC_EXT_SCATTER_ADD : IC_EXT_SCATTER, 3, in, 1, prm, 1, 1);
    r = sym_reshape(t, r, nd, xs);
    if (r >= 0)
        r = ic_cast(G, r, ic_value_meta(G, r)->dtype); /* a value of its own, laid out below */
    if (r >= 0)
        ic_value_set_format(G, r, x, IC_MF_PRESERVE);
    return r;
}

/* index_put(input, indices, values, accumulate=False) / Tensor.index_put(_): integer index
 * tensors (no None, no masks) over the leading dims, broadcast together; negative indices
 * wrap, others out of range rerun the frame eagerly (CPU), which raises */
int sym_h_index_put(trace *t, const opdef *d, var **p, var *out) {
    int acc = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_bool(t, p[3], 0, &acc, "accumulate") < 0)
        return -1;
    if (p[2] == NULL || p[2]->kind != V_TENSOR)
        return sym_fail(t, "%s: values must be a tensor (eager raises)", d->name);
    if (p[1] == NULL || p[1]->kind != V_SEQ || p[1]->n < 1)
        return sym_fail(t, "%s: indices must be a non-empty tuple or list of tensors", d->name);
    if (t->device_type == TC_DEV_CUDA)
        return sym_fail(t, "%s on CUDA left to eager (it checks the indices)", d->name);
    ic_meta xm = *sym_metap(t, p[0]->val), vm = *sym_metap(t, p[2]->val);
    const int k = p[1]->n;
    if (xm.dyn || vm.dyn)
        return sym_fail(t, "%s with symbolic shapes left to eager", d->name);
    if (k > xm.ndim)
        return sym_fail(t, "%s: too many indices (eager raises)", d->name);
    if (vm.dtype != xm.dtype)
        return sym_fail(t, "%s: values of another dtype (eager raises)", d->name);
    ic_val ix[IC_MAX_DIMS];
    int64_t isz[IC_MAX_DIMS];
    int ind = 0;
    for (int j = 0; j < k; j++) {
        var iv = p[1]->items[j];
        sym_resolve(t, &iv);
        if (iv.kind != V_TENSOR)
            return sym_fail(t, "%s: an index that is not a tensor (None: eager raises) left to eager", d->name);
        ix[j] = iv.val;
        ic_meta im = *sym_metap(t, iv.val);
        if (im.dtype != IC_I64 && im.dtype != IC_I32)
            return sym_fail(t, "%s: bool, byte or non-integer indices left to eager", d->name);
        if (im.dyn)
            return sym_fail(t, "%s with symbolic shapes left to eager", d->name);
        /* the broadcast shape of the indices */
        int nn = im.ndim > ind ? im.ndim : ind;
        int64_t ns[IC_MAX_DIMS];
        for (int q = 0; q < nn; q++) {
            int64_t a = q - (nn - ind) >= 0 ? isz[q - (nn - ind)] : 1, b = q - (nn - im.ndim) >= 0 ? im.sizes[q - (nn - im.ndim)] : 1;
            if (a != b && a != 1 && b != 1)
                return sym_fail(t, "%s: indices do not broadcast (eager raises)", d->name);
            ns[q] = a == 1 ? b : a;
        }
        memcpy(isz, ns, sizeof ns[0] * (size_t)nn);
        ind = nn;
    }
    int64_t n = 1;
    for (int q = 0; q < ind; q++)
        n *= isz[q];
    if (ind + xm.ndim - k > IC_MAX_DIMS)
        return sym_fail(t, "%s: too many dims", d->name);
    /* the flat position over the first k dims (row-major) */
    ic_val lin = IC_NONE;
    for (int j = 0; j < k; j++) {
        ic_val w = wrapped_index(t, ic_expand(G, ix[j], ind, isz), xm.sizes[j], "index_put index");
        if (w < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
        lin = lin < 0 ? w : ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, lin, sym_inum(t, xm.sizes[j])), w);
    }
    lin = sym_reshape(t, lin, 1, &n);
    /* values broadcast to [*indices' shape, *x.shape[k:]] */
    int64_t vs[IC_MAX_DIMS];
    int vn = 0;
    for (int q = 0; q < ind; q++)
        vs[vn++] = isz[q];
    for (int i = k; i < xm.ndim; i++)
        vs[vn++] = xm.sizes[i];
    ic_val vals = ic_expand(G, p[2]->val, vn, vs);
    if (vals < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: values do not broadcast (eager raises)", d->name);
    ic_val r = put_rows(t, p[0]->val, xm.ndim, xm.sizes, k, lin, n, vals, acc);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    if (d->op == 1) { /* index_put_ */
        if (sym_mutate(t, p[0], r) < 0)
            return -1;
        *out = *p[0];
        sym_resolve(t, out);
        return 0;
    }
    return sym_tensor_out(t, r, out);
}

/* put(input, index, source, accumulate=False) / Tensor.put(_): source's elements written at
 * (added to) the flat positions index of input (row-major, negative ones wrapping) */
int sym_h_put(trace *t, const opdef *d, var **p, var *out) {
    int acc = 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 || sym_need_tensor(t, d, p[2]) < 0 ||
        sym_get_bool(t, p[3], 0, &acc, "accumulate") < 0)
        return -1;
    if (t->device_type == TC_DEV_CUDA)
        return sym_fail(t, "%s on CUDA left to eager (it checks the indices)", d->name);
    ic_meta xm = *sym_metap(t, p[0]->val), im = *sym_metap(t, p[1]->val), sm = *sym_metap(t, p[2]->val);
    if (xm.dyn || im.dyn || sm.dyn)
        return sym_fail(t, "%s with symbolic shapes left to eager", d->name);
    if (im.dtype != IC_I64)
        return sym_fail(t, "%s: index not int64 (eager raises)", d->name);
    if (sm.dtype != xm.dtype)
        return sym_fail(t, "%s: source of another dtype (eager raises)", d->name);
    int64_t xn = 1, in = 1, sn = 1;
    for (int i = 0; i < xm.ndim; i++)
        xn *= xm.sizes[i];
    for (int i = 0; i < im.ndim; i++)
        in *= im.sizes[i];
    for (int i = 0; i < sm.ndim; i++)
        sn *= sm.sizes[i];
    if (in != sn)
        return sym_fail(t, "%s: source and index of different sizes (eager raises)", d->name);
    if (in == 0) { /* nothing written: x itself (put_) or a copy */
        if (d->op == 1) {
            *out = *p[0];
            sym_resolve(t, out);
            return 0;
        }
        return dh_layout_copy(t, p[0]->val, IC_MF_PRESERVE, out);
    }
    ic_val lin = wrapped_index(t, sym_reshape(t, p[1]->val, 1, &in), xn, "put index");
    if (lin < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    int64_t one = xn;
    ic_val xf = sym_reshape(t, p[0]->val, 1, &one);
    ic_val r = put_rows(t, xf, 1, &one, 1, lin, in, sym_reshape(t, p[2]->val, 1, &in), acc);
    r = r < 0 ? r : sym_reshape(t, r, xm.ndim, xm.sizes);
    if (r >= 0) {
        r = ic_cast(G, r, xm.dtype);
        if (r >= 0)
            ic_value_set_format(G, r, p[0]->val, IC_MF_PRESERVE);
    }
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    if (d->op == 1) {
        if (sym_mutate(t, p[0], r) < 0)
            return -1;
        *out = *p[0];
        sym_resolve(t, out);
        return 0;
    }
    return sym_tensor_out(t, r, out);
}
