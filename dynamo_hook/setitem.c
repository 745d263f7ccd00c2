/* setitem.c — x[k] = v on a tracked tensor, as a functional update of x's object.
 *
 * Requires: x a V_TENSOR with an object id; k basic indexing (ints, slices with a positive
 *   step, None, Ellipsis, tuples of them) or one boolean mask over x's leading dims with a
 *   number, a one-element tensor, or a tensor broadcast over the selected elements (one value
 *   per selected element, a data-dependent count, is refused).
 * Keeps:    eager semantics: v is cast to x's dtype and broadcast to x[k]'s shape; the new
 *   value of x is recorded with sym_mutate (inputs are copied back after the graph).
 *   One 1-D integer tensor index over dim 0 (index_put) is a scatter extern.
 * Breaks:   nothing; anything else (other tensor indices, v a view overlapping x[k])
 *   fails the trace with a reason and the caller breaks the graph at the store.
 *
 * Basic indexing selects a box: per dim of x a range [start, stop). The updated value is
 * built dim by dim as cat(x[..:start], inner, x[stop:..]) where inner recurses into the
 * box, so the result stays a pure index-map expression that fuses with its consumers. A
 * strided dim (start, start + step, ..) takes the inner value gathered back to x's size on
 * that dim ((j - start) / step) where j is one of its elements, x elsewhere. */
#include "sym.h"
#include "ops_internal.h"

typedef struct box {
    int ndim;
    int64_t start[IC_MAX_DIMS], stop[IC_MAX_DIMS]; /* stop: past the last element selected */
    int64_t step[IC_MAX_DIMS];                     /* > 1: a strided slice */
    int nview;                       /* rank of x[k] */
    int64_t view[IC_MAX_DIMS + 4];   /* shape of x[k] */
} box;

/* elements the box selects on dim d */
static int64_t box_len(const box *b, int d) {
    return b->stop[d] <= b->start[d] ? 0 : (b->stop[d] - b->start[d] - 1) / b->step[d] + 1;
}

static const ic_meta *meta(trace *t, ic_val v, ic_meta *copy) {
    const ic_meta *m = ic_value_meta(t->g, v);
    if (m == NULL)
        return NULL;
    *copy = *m; /* the graph reallocates its value array: keep a copy */
    return copy;
}

static int parse_box(trace *t, const ic_meta *m, const var *k, box *b) {
    const var *parts[SYM_INDEX_PARTS];
    var tmp[SYM_INDEX_PARTS];
    int np = sym_index_parts(t, k, parts, tmp), consuming = 0, ell = -1;
    if (np < 0)
        return -1;
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        if (p->kind != V_CONST)
            return sym_fail(t, "item assignment with a tensor or computed index not supported yet");
        if (p->obj == Py_Ellipsis) {
            if (ell >= 0)
                return sym_fail(t, "two ellipses (eager will raise)");
            ell = i;
        } else if (p->obj == Py_None) {
        } else if (PyLong_Check(p->obj) || PySlice_Check(p->obj)) {
            consuming++;
        } else {
            return sym_fail(t, "unsupported index type in item assignment");
        }
    }
    if (consuming > m->ndim)
        return sym_fail(t, "too many indices for the tensor (eager will raise)");
    b->ndim = m->ndim;
    for (int d = 0; d < m->ndim; d++) {
        b->start[d] = 0;
        b->stop[d] = m->sizes[d];
        b->step[d] = 1;
    }
    b->nview = 0;
    int d = 0;
    for (int i = 0; i < np; i++) {
        PyObject *o = parts[i]->obj;
        if (o == Py_Ellipsis) {
            for (int j = 0; j < m->ndim - consuming; j++, d++)
                b->view[b->nview++] = m->sizes[d];
            continue;
        }
        if (o == Py_None) {
            b->view[b->nview++] = 1;
            continue;
        }
        int64_t size = m->sizes[d];
        if (PyLong_Check(o)) {
            long long i0 = PyLong_AsLongLong(o);
            if (i0 == -1 && PyErr_Occurred()) {
                (void)tc_clear_expected(PyExc_OverflowError);
                return sym_fail(t, "index out of range (eager will raise)");
            }
            if (i0 < 0)
                i0 += size;
            if (i0 < 0 || i0 >= size)
                return sym_fail(t, "index out of range (eager will raise)");
            b->start[d] = i0;
            b->stop[d] = i0 + 1;
            d++;
            continue;
        }
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(o, &start, &stop, &step) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "bad slice");
        }
        if (step <= 0)
            return sym_fail(t, "slice step must be positive (eager will raise)");
        Py_ssize_t n = PySlice_AdjustIndices(size, &start, &stop, step);
        if (n == 0)
            stop = start;
        else if (step != 1)
            stop = start + (n - 1) * step + 1;
        b->start[d] = start;
        b->stop[d] = stop;
        b->step[d] = n > 1 ? step : 1;
        b->view[b->nview++] = n;
        d++;
    }
    for (; d < m->ndim; d++)
        b->view[b->nview++] = m->sizes[d];
    if (b->nview > IC_MAX_DIMS)
        return sym_fail(t, "too many dims");
    return 0;
}

/* base with its elements start, start + step, .. (n of them) on dim d replaced by in's
 * (base's shape but n on dim d): in gathered to base's size on d by the index
 * (j - start) / step, then where(j is one of them, that, base) */
static ic_val place_strided(trace *t, ic_val base, ic_val in, int d, int64_t start, int64_t step, int64_t n) {
    ic_graph *g = t->g;
    const ic_meta *bm = ic_value_meta(g, base);
    if (bm == NULL || in < 0)
        return IC_NONE;
    ic_meta m = *bm;
    int64_t size = m.sizes[d], shp[IC_MAX_DIMS];
    ic_val j = ic_arange(g, size, 0, 1, IC_I64);
    ic_val off = ic_binary(g, IC_OP_SUB, j, ic_scalar(g, (double)start, IC_I64));
    ic_val idx = ic_binary(g, IC_OP_FLOOR_DIVIDE, off, ic_scalar(g, (double)step, IC_I64));
    idx = ic_binary(g, IC_OP_MAXIMUM, ic_binary(g, IC_OP_MINIMUM, idx, ic_scalar(g, (double)(n - 1), IC_I64)),
                    ic_scalar(g, 0, IC_I64));
    ic_val hit = ic_binary(g, IC_OP_LOGICAL_AND, ic_binary(g, IC_OP_GE, off, ic_scalar(g, 0, IC_I64)),
                           ic_binary(g, IC_OP_LT, off, ic_scalar(g, (double)(n * step), IC_I64)));
    hit = ic_binary(g, IC_OP_LOGICAL_AND, hit,
                    ic_binary(g, IC_OP_EQ, ic_binary(g, IC_OP_REMAINDER, off, ic_scalar(g, (double)step, IC_I64)),
                              ic_scalar(g, 0, IC_I64)));
    for (int i = 0; i < m.ndim; i++)
        shp[i] = i == d ? size : 1;
    hit = ic_expand(g, sym_reshape(t, hit, m.ndim, shp), m.ndim, m.sizes);
    ic_val full = ic_index_select(g, in, d, idx);
    return ic_where(g, hit, full, base);
}

/* base: x restricted to the box on dims < d (full on dims >= d); val: the box's shape */
static ic_val place(trace *t, ic_val base, ic_val val, const box *b, int d, const int64_t *sizes) {
    if (d == b->ndim)
        return val;
    if (b->step[d] > 1) {
        int64_t n = box_len(b, d);
        ic_val mid = ic_slice(t->g, base, d, b->start[d], b->stop[d], b->step[d]);
        ic_val in = mid < 0 ? IC_NONE : place(t, mid, val, b, d + 1, sizes);
        return in < 0 ? in : place_strided(t, base, in, d, b->start[d], b->step[d], n);
    }
    ic_val mid = base;
    int full = b->start[d] == 0 && b->stop[d] == sizes[d];
    if (!full)
        mid = ic_slice(t->g, base, d, b->start[d], b->stop[d], 1);
    ic_val in = place(t, mid, val, b, d + 1, sizes);
    if (in < 0 || full)
        return in;
    ic_val r = IC_NONE;
    if (b->start[d] > 0)
        r = ic_slice(t->g, base, d, 0, b->start[d], 1);
    r = r == IC_NONE ? in : ic_cat(t->g, r, in, d);
    if (r >= 0 && b->stop[d] < sizes[d])
        r = ic_cat(t->g, r, ic_slice(t->g, base, d, b->stop[d], sizes[d], 1), d);
    return r;
}

static int value_of(trace *t, const var *v, int dtype, ic_val *out) {
    var plain;
    if (v->kind == V_CONST && PyFloat_Check(v->obj) && !PyFloat_CheckExact(v->obj)) {
        /* a float subclass (numpy.float64, a constant folded from numpy calls): eager stores
         * its float value, as of a float */
        if (sym_const(t, PyFloat_FromDouble(PyFloat_AS_DOUBLE(v->obj)), &plain) < 0)
            return -1;
        v = &plain;
    }
    if (sym_check_scalar_fits(t, v, dtype, "item assignment") < 0) /* eager: checked_convert */
        return -1;
    if (v->kind == V_TENSOR) {
        var r = *v;
        sym_resolve(t, &r);
        *out = r.val;
        return 0;
    }
    if (sym_is_number(v))
        return sym_as_tensor(t, v, out);
    return sym_fail(t, "item assignment of an unsupported value");
}

/* x[mask] = v: where(mask, v, x), mask covering x's leading dims, v a number, a one-element
 * tensor or a tensor the same at every selected position */
static int mask_store(trace *t, const var *x, ic_val xv, const ic_meta *m, const var *k, const var *v) {
    var kv = *k;
    sym_resolve(t, &kv);
    ic_meta km_copy;
    const ic_meta *km = meta(t, kv.val, &km_copy);
    if (km == NULL)
        return sym_check_graph(t);
    if (km->ndim > m->ndim)
        return sym_fail(t, "boolean mask with more dims than the tensor (eager will raise)");
    for (int d = 0; d < km->ndim; d++)
        if (km->sizes[d] != m->sizes[d])
            return sym_fail(t, "boolean mask shape differs from the tensor's (eager will raise)");
    ic_val val;
    if (value_of(t, v, m->dtype, &val) < 0)
        return -1;
    ic_meta vm_copy;
    const ic_meta *vm = meta(t, val, &vm_copy);
    if (vm == NULL)
        return sym_check_graph(t);
    int64_t numel = 1;
    for (int d = 0; d < vm->ndim; d++)
        numel *= vm->sizes[d];
    if (numel == 1) { /* eager: masked_fill_ with the one value (any dtype that fits) */
        if (sym_check_tensor_value_fits(t, v, m->dtype, "item assignment") < 0)
            return -1;
        val = sym_reshape(t, ic_cast(t->g, val, m->dtype), 0, NULL);
    } else {
        /* eager: index_put_ of v broadcast to x[mask]'s shape [count, *rest], rest = x's dims
         * past the mask's, leading size-1 dims of v dropped first. A v no longer than rest is
         * the same at every selected position: where(mask, v broadcast to x, x). A v with a
         * dim of its own for the count has one value per selected element (masked_scatter):
         * where each goes depends on the mask's values. */
        if (vm->dtype != m->dtype)
            return sym_fail(t, "masked assignment of a tensor of another dtype (eager will raise: index_put_ "
                               "requires the source and destination dtypes match)");
        int lead = 0;
        while (lead < vm->ndim && vm->sizes[lead] == 1)
            lead++;
        if (vm->ndim - lead > m->ndim - km->ndim)
            return sym_fail(t, "masked assignment of a tensor with a value per selected element (its count is "
                               "data-dependent) not supported");
        val = sym_reshape(t, val, vm->ndim - lead, vm->sizes + lead);
        val = val < 0 ? IC_NONE : ic_expand(t->g, val, m->ndim, m->sizes);
        if (val < 0)
            return sym_check_graph(t) < 0 ? -1
                                          : sym_fail(t, "masked assignment: shape mismatch (eager will raise)");
    }
    int64_t ksz[IC_MAX_DIMS];
    for (int d = 0; d < m->ndim; d++)
        ksz[d] = d < km->ndim ? m->sizes[d] : 1;
    ic_val mask = sym_reshape(t, kv.val, m->ndim, ksz);
    mask = ic_expand(t->g, mask, m->ndim, m->sizes);
    ic_val r = ic_where(t->g, mask, ic_expand(t->g, val, m->ndim, m->sizes), xv);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "masked assignment failed");
    return sym_mutate(t, x, r);
}

int sym_tensor_setitem_masked_full(trace *t, const var *x_in, const var *k, const var *full) {
    var xv = *x_in, kv = *k, fv = *full;
    sym_resolve(t, &xv);
    sym_resolve(t, &kv);
    sym_resolve(t, &fv);
    if (xv.kind != V_TENSOR || xv.oid <= 0 || kv.kind != V_TENSOR || fv.kind != V_TENSOR)
        return sym_fail(t, "x[mask] op= v: not tensors");
    ic_meta m_copy, km_copy, fm_copy;
    const ic_meta *m = meta(t, xv.val, &m_copy), *km = meta(t, kv.val, &km_copy), *fm = meta(t, fv.val, &fm_copy);
    if (m == NULL || km == NULL || fm == NULL)
        return sym_check_graph(t);
    if (fm->ndim != m->ndim || memcmp(fm->sizes, m->sizes, sizeof(int64_t) * (size_t)m->ndim) != 0 ||
        fm->dtype != m->dtype || km->ndim > m->ndim)
        return sym_fail(t, "x[mask] op= v: the operand does not broadcast over the selection");
    int64_t ksz[IC_MAX_DIMS];
    for (int d = 0; d < m->ndim; d++)
        ksz[d] = d < km->ndim ? m->sizes[d] : 1;
    ic_val mask = ic_expand(t->g, sym_reshape(t, kv.val, m->ndim, ksz), m->ndim, m->sizes);
    ic_val r = mask < 0 ? IC_NONE : ic_where(t->g, mask, fv.val, xv.val);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "masked assignment failed");
    return sym_mutate(t, &xv, r);
}

/* x[idx] = v, idx a 1-D integer tensor over dim 0 (index_put): a scatter of v broadcast
 * to [len(idx), *x.shape[1:]] along dim 0; indices are bounds-checked before each run
 * (negative or out of range: eager runs) */
static int index_store(trace *t, const var *x, const ic_meta *m, const var *kv, const var *v) {
    ic_meta km_copy;
    const ic_meta *km = meta(t, kv->val, &km_copy);
    if (km == NULL)
        return sym_check_graph(t);
    if (km->ndim != 1 || (km->dtype != IC_I64 && km->dtype != IC_I32) || m->ndim < 1)
        return sym_fail(t, "item assignment with a tensor index other than a 1-D integer tensor not supported yet");
    if (sym_check_index(t, kv, m->sizes[0], 0) < 0)
        return -1;
    int64_t S[IC_MAX_DIMS], ones[IC_MAX_DIMS];
    S[0] = ones[0] = km->sizes[0];
    for (int d = 1; d < m->ndim; d++) {
        S[d] = m->sizes[d];
        ones[d] = 1;
    }
    ic_val val;
    if (value_of(t, v, m->dtype, &val) < 0)
        return -1;
    if (v->kind == V_TENSOR) { /* eager: index_put_ casts a number, never a tensor */
        ic_meta vm_copy;
        const ic_meta *vm = meta(t, val, &vm_copy);
        if (vm == NULL)
            return sym_check_graph(t);
        if (vm->dtype != m->dtype)
            return sym_fail(t, "item assignment of a tensor of another dtype at a tensor index (eager will raise: "
                               "index_put_ requires the source and destination dtypes match)");
    }
    val = ic_expand(t->g, ic_cast(t->g, val, m->dtype), m->ndim, S);
    ic_val idx = ic_cast(t->g, kv->val, IC_I64);
    idx = ic_expand(t->g, sym_reshape(t, idx, m->ndim, ones), m->ndim, S);
    if (val < 0 || idx < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "item assignment: shape mismatch (eager will raise)");
    ic_val ins[3] = {x->val, idx, val};
    int64_t prm[1] = {0};
    ic_val r = ic_extern(t->g, IC_EXT_SCATTER, 3, ins, 1, prm, 1, 1);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "item assignment with a tensor index failed");
    return sym_mutate(t, x, r);
}

/* two boxes of one tensor share no element: on some dim their ranges do not meet, or both
 * take every step-th element from starts that differ modulo step */
static int boxes_disjoint(const box *a, const box *b) {
    for (int d = 0; d < a->ndim; d++) {
        if (a->stop[d] <= b->start[d] || b->stop[d] <= a->start[d])
            return 1;
        if (a->step[d] == b->step[d] && a->step[d] > 1 && a->start[d] % a->step[d] != b->start[d] % b->step[d])
            return 1;
    }
    return 0;
}

/* the base value and key of v made by basic indexing (__getitem__); 0 when not such a view */
static int getitem_view(trace *t, ic_val v, ic_val *base, PyObject **key) {
    PyObject *desc = v >= 0 && v < t->capvals ? t->view_desc[v] : NULL;
    if (desc == NULL)
        return 0;
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
    long b = PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
    if (name == NULL || (b == -1 && PyErr_Occurred())) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    if (strcmp(name, "__getitem__") != 0)
        return 0;
    *base = (ic_val)b;
    *key = PyTuple_GET_ITEM(PyTuple_GET_ITEM(desc, 2), 0);
    return 1;
}

/* x[k] = w with w another view of x's memory. Eager refuses a partial overlap of dense
 * views ("some elements of the input tensor and the written-to tensor refer to a single
 * memory location") and copies other overlapping ones in its own element order. Captured
 * (0): w = x[k2] (basic indexing of x's current value) selecting the same box as k with the
 * same shape (x[0] += 1 stores x[0] back), or a box sharing no element with k's (then no
 * byte range of a dense view meets the other's: eager does not raise); or x = B[kx] and
 * w = B[kw] of one base value B with boxes sharing no element (x[k] is inside x's). Else 1. */
static int view_overlap(trace *t, const var *x, const ic_meta *m, const var *k, ic_val w) {
    ic_val wb, xb;
    PyObject *wk, *xk;
    if (!getitem_view(t, w, &wb, &wk))
        return 1;
    var k2 = sym_var(V_CONST);
    box b1, b2;
    if (wb != x->val) { /* siblings: views of one base */
        ic_meta bm_copy;
        const ic_meta *bm = getitem_view(t, x->val, &xb, &xk) && xb == wb ? meta(t, xb, &bm_copy) : NULL;
        if (bm == NULL)
            return 1;
        var k1 = sym_var(V_CONST);
        k1.obj = xk;
        k2.obj = wk;
        if (parse_box(t, bm, &k1, &b1) < 0 || parse_box(t, bm, &k2, &b2) < 0)
            return 1;
        return !boxes_disjoint(&b1, &b2);
    }
    if (k->kind != V_CONST)
        return 1;
    k2.obj = wk;
    if (parse_box(t, m, k, &b1) < 0 || parse_box(t, m, &k2, &b2) < 0)
        return 1; /* the reason is recorded; eager decides */
    int same = b1.nview == b2.nview;
    for (int d = 0; d < m->ndim; d++)
        same &= b1.start[d] == b2.start[d] && b1.stop[d] == b2.stop[d] && b1.step[d] == b2.step[d];
    for (int d = 0; same && d < b1.nview; d++)
        same &= b1.view[d] == b2.view[d];
    return !(same || boxes_disjoint(&b1, &b2));
}

int sym_tensor_setitem(trace *t, const var *x_in, const var *k, const var *v) {
    var xv = *x_in;
    sym_resolve(t, &xv);
    {   /* constants built in the trace (fold.c): the graph's own values from here */
        var kv = *k, vv = *v;
        sym_resolve(t, &kv);
        sym_resolve(t, &vv);
        int rc = sym_fold_setitem(t, &xv, &kv, &vv); /* on the constants themselves */
        if (rc != 1)
            return rc;
        if (sym_fold_materialize(t, &xv) < 0)
            return -1;
        /* devices (fold.c): CPU index tensors index a CUDA tensor; a CPU 0-d value is a scalar */
        var xk[2] = {xv, kv}, xw[2] = {xv, vv};
        if (sym_fold_check(t, xk, 2, 2) < 0 || sym_fold_check(t, xw, 2, 1) < 0)
            return -1;
    }
    if (xv.kind != V_TENSOR || xv.oid <= 0)
        return sym_fail(t, "item assignment to an untracked tensor");
    ic_meta m_copy;
    const ic_meta *m = meta(t, xv.val, &m_copy);
    if (m == NULL)
        return sym_check_graph(t);
    var vv = *v;
    sym_resolve(t, &vv);
    if (ic_dtype_is_complex(m->dtype) || sym_complex_involved(t, &vv))
        return sym_fail(t, "item assignment into a complex tensor or of a complex value left to eager");
    if (vv.kind == V_TENSOR && vv.oid > 0 && vv.oid != xv.oid && sym_alias_same(t, vv.oid, xv.oid) &&
        view_overlap(t, &xv, m, k, vv.val))
        return sym_fail(t, "item assignment of a view partly overlapping the target (eager decides)");
    if (k->kind == V_TENSOR) {
        var kv = *k;
        sym_resolve(t, &kv);
        const ic_meta *km = ic_value_meta(t->g, kv.val);
        if (km != NULL && km->dtype == IC_BOOL)
            return mask_store(t, &xv, xv.val, m, k, v);
        return index_store(t, &xv, m, &kv, v);
    }
    box b;
    if (parse_box(t, m, k, &b) < 0)
        return -1;
    ic_val val;
    if (value_of(t, v, m->dtype, &val) < 0)
        return -1;
    /* eager: v broadcast to x[k]'s shape, cast to x's dtype */
    val = ic_cast(t->g, val, m->dtype);
    val = ic_expand(t->g, val, b.nview, b.view);
    if (val < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "item assignment: shape mismatch (eager will raise)");
    int64_t boxsz[IC_MAX_DIMS], numel = 1;
    for (int d = 0; d < m->ndim; d++) {
        boxsz[d] = box_len(&b, d);
        numel *= boxsz[d];
    }
    if (numel == 0) /* nothing selected: x is unchanged (the broadcast was checked), but eager's
                     * copy_ into the empty view still counts as an in-place op (a version bump,
                     * autograd's leaf check): an update with a copy of its value */
        return sym_mutate(t, &xv, ic_cast(t->g, xv.val, m->dtype));
    val = sym_reshape(t, val, m->ndim, boxsz);
    ic_val r = val < 0 ? IC_NONE : place(t, xv.val, val, &b, 0, m->sizes);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "item assignment failed");
    return sym_mutate(t, &xv, r);
}

/* base[key] = val as a value (key: basic indexing, a constant): the new value of base,
 * or -1 with a reason recorded. Used to write an in-place update of a view back into
 * its base (alias_fn.c). */
ic_val sym_box_store(trace *t, ic_val base, PyObject *key, ic_val val) {
    ic_meta m_copy;
    const ic_meta *m = meta(t, base, &m_copy);
    if (m == NULL)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "view write-back failed");
    var k = sym_var(V_CONST);
    k.obj = key;
    box b;
    if (parse_box(t, m, &k, &b) < 0)
        return -1;
    int64_t boxsz[IC_MAX_DIMS], numel = 1;
    for (int d = 0; d < m->ndim; d++) {
        boxsz[d] = box_len(&b, d);
        numel *= boxsz[d];
    }
    if (numel == 0)
        return base;
    val = sym_reshape(t, val, m->ndim, boxsz);
    ic_val r = val < 0 ? IC_NONE : place(t, base, val, &b, 0, m->sizes);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "view write-back failed");
    return r;
}
