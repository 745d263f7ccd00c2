/* ops_views.c — views and data movement: reshape/view (refusing what eager refuses),
 * flatten, permute, transpose, squeeze, expand, size, cat, narrow, split, tril/triu, flip,
 * repeat, diagonal, unfold, and eager's strides of views. Indexing and the index ops
 * (x[key], index_select, gather/scatter) are in ops_index.c.
 */
#include "ops_internal.h"

/* x.to(x.dtype), x.float() on a float tensor, ...: eager returns x itself (an alias) */
int sym_same_tensor(trace *t, var **p, var *out) {
    *out = *p[0];
    sym_resolve(t, out);
    return 0;
}

static PyObject *ints_tuple(const int64_t *v, int n) {
    PyObject *tup = PyTuple_New(n);
    if (tup == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, x);
    }
    return tup;
}

PyObject *sym_perm_tuple(const int *perm, int n) {
    int64_t v[IC_MAX_DIMS];
    for (int i = 0; i < n; i++)
        v[i] = perm[i];
    return ints_tuple(v, n);
}

static int eager_strides(trace *t, ic_val v, int64_t *st, int depth);
static int desc_strides(trace *t, ic_val v, const ic_meta *mp, ic_val base, const char *name, PyObject *args,
                        const int64_t *bs, int64_t *st);

/* A view of in: name(*args) replayed on the real tensor when a view of an input is
 * returned (so the caller gets a real view, as from eager). args: new reference. */
int sym_view_out_desc(trace *t, const var *in, ic_val v, var *out, const char *name,
                         PyObject *args) {
    if (args == NULL)
        return -1;
    if (sym_tensor_out(t, v, out) < 0) {
        Py_DECREF(args);
        return -1;
    }
    PyObject *desc = Py_BuildValue("(isN)", in->val, name, args);
    if (desc == NULL || sym_keep(t, desc) == NULL)
        return -1;
    sym_set_view_desc(t, v, desc);
    sym_mark_view(t, v, in->val);
    sym_alias_objects(t, out->oid, in->oid);
    int64_t es[IC_MAX_DIMS]; /* the graph learns the view's strides (an expand's 0s too) */
    if (eager_strides(t, v, es, 0))
        ic_value_set_strides(t->g, v, es);
    return 0;
}

PyObject *sym_shape_args(trace *t, ic_val v) {
    const ic_meta *m = v >= 0 ? ic_value_meta(t->g, v) : NULL;
    if (m == NULL)
        return PyTuple_New(0);
    return Py_BuildValue("(N)", ints_tuple(m->sizes, m->ndim));
}

/* ---- eager strides of views: Tensor.view must refuse what eager refuses ----------- */

/* ATen's computeStride: the strides of a view of (sizes, strides) as nsizes, or 0 when no
 * view can express it (eager's view raises). */
int sym_view_strides(int n, const int64_t *sizes, const int64_t *strides, int nn,
                        const int64_t *nsizes, int64_t *nstrides) {
    int64_t numel = 1;
    for (int i = 0; i < n; i++)
        numel *= sizes[i];
    if (numel == 0 || n == 0) {
        int64_t st = 1;
        for (int i = nn - 1; i >= 0; i--) {
            nstrides[i] = st;
            st *= nsizes[i] > 1 ? nsizes[i] : 1;
        }
        return 1;
    }
    int vd = nn - 1;
    int64_t chunk = strides[n - 1], tn = 1, vn = 1;
    for (int td = n - 1; td >= 0; td--) {
        tn *= sizes[td];
        if (td == 0 || (sizes[td - 1] != 1 && strides[td - 1] != tn * chunk)) {
            while (vd >= 0 && (vn < tn || nsizes[vd] == 1)) {
                nstrides[vd] = vn * chunk;
                vn *= nsizes[vd];
                vd--;
            }
            if (vn != tn)
                return 0;
            if (td > 0) {
                chunk = strides[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    return vd == -1;
}

/* Strides of base[key] for a basic index key (ints, slices, None, Ellipsis, a tuple of them)
 * as ATen's applySlicing makes them, item by item: an int drops its dim, a slice keeps it
 * with stride * step, None inserts a dim as unsqueeze does. 0: not such a key (tensors). */
static int getitem_strides(const ic_meta *bm, const int64_t *bs, PyObject *key, const ic_meta *m, int64_t *st) {
    int64_t sz[IC_MAX_DIMS + 8], sd[IC_MAX_DIMS + 8];
    int n = bm->ndim, d = 0, nitems = PyTuple_Check(key) ? (int)PyTuple_GET_SIZE(key) : 1, consuming = 0;
    memcpy(sz, bm->sizes, sizeof(int64_t) * (size_t)n);
    memcpy(sd, bs, sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < nitems; i++) {
        PyObject *it = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, i) : key;
        if (it != Py_None && it != Py_Ellipsis && !PySlice_Check(it) && !(PyLong_Check(it) && !PyBool_Check(it)))
            return 0;
        consuming += it != Py_None && it != Py_Ellipsis;
    }
    for (int i = 0; i < nitems; i++) {
        PyObject *it = PyTuple_Check(key) ? PyTuple_GET_ITEM(key, i) : key;
        if (it == Py_Ellipsis) { /* the dims no item names */
            d += bm->ndim - consuming;
            if (d < 0 || d > n)
                return 0;
            continue;
        }
        if (it == Py_None) {
            if (n >= IC_MAX_DIMS + 7)
                return 0;
            int64_t ns = d >= n ? 1 : sz[d] * sd[d];
            memmove(&sz[d + 1], &sz[d], sizeof(int64_t) * (size_t)(n - d));
            memmove(&sd[d + 1], &sd[d], sizeof(int64_t) * (size_t)(n - d));
            sz[d] = 1;
            sd[d] = ns;
            n++;
            d++;
            continue;
        }
        if (d >= n)
            return 0;
        if (PyLong_Check(it)) { /* select: the dim goes */
            memmove(&sz[d], &sz[d + 1], sizeof(int64_t) * (size_t)(n - d - 1));
            memmove(&sd[d], &sd[d + 1], sizeof(int64_t) * (size_t)(n - d - 1));
            n--;
            continue;
        }
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(it, &start, &stop, &step) < 0 || step <= 0) {
            (void)tc_clear_expected(PyExc_Exception); /* an item's __index__ raised: eager raises it */
            return 0;
        }
        Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)sz[d], &start, &stop, step);
        sz[d] = len;
        sd[d] *= step;
        d++;
    }
    if (n != m->ndim)
        return 0;
    for (int i = 0; i < n; i++)
        if (sz[i] != m->sizes[i])
            return 0;
    memcpy(st, sd, sizeof(int64_t) * (size_t)n);
    return 1;
}

/* The strides eager gives value v (1), or 0 when not known (an indexing view, dynamic
 * sizes). Values no view made: the graph's (ic_value_strides). */
static int eager_strides(trace *t, ic_val v, int64_t *st, int depth) {
    ic_meta m = *ic_value_meta(t->g, v);
    if (m.dyn || depth > 64 || sym_layout_open(t, v))
        return 0;
    PyObject *desc = v < t->capvals ? t->view_desc[v] : NULL;
    /* the graph knows eager's strides (inductor_c/graph/strides.c); an extern standing for a
     * view (ops_complex.c: its buffer a dense copy) has the strides its planned meta call
     * gave, from the operands' eager strides: eager's, holes and 0s included */
    if (desc == NULL || ic_value_op(t->g, v) == IC_OP_EXTERN)
        return ic_value_strides(t->g, v, st);
    ic_val base = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
    PyObject *args = PyTuple_GET_ITEM(desc, 2);
    int64_t bs[IC_MAX_DIMS];
    if (name == NULL || !eager_strides(t, base, bs, depth + 1)) {
        (void)tc_clear_expected(PyExc_UnicodeError, PyExc_OverflowError);
        return 0;
    }
    return desc_strides(t, v, &m, base, name, args, bs, st);
}

/* eager's strides of v = base.name(*args) from base's (bs); 0: a view this does not model */
static int desc_strides(trace *t, ic_val v, const ic_meta *mp, ic_val base, const char *name, PyObject *args,
                        const int64_t *bs, int64_t *st) {
    const ic_meta m = *mp;
    ic_meta bm = *ic_value_meta(t->g, base);
    if (!strcmp(name, "narrow") || !strcmp(name, "detach")) {
        memcpy(st, bs, sizeof(int64_t) * (size_t)bm.ndim);
        return 1;
    }
    if (!strcmp(name, "select")) {
        int dim = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 0)), k = 0;
        for (int i = 0; i < bm.ndim; i++)
            if (i != dim)
                st[k++] = bs[i];
        return k == m.ndim;
    }
    if (!strcmp(name, "permute")) {
        PyObject *perm = PyTuple_GET_ITEM(args, 0);
        if (!PyTuple_Check(perm) || PyTuple_GET_SIZE(perm) != m.ndim)
            return 0;
        for (int i = 0; i < m.ndim; i++)
            st[i] = bs[PyLong_AsLong(PyTuple_GET_ITEM(perm, i))];
        return !PyErr_Occurred() || ((void)tc_clear_expected(PyExc_OverflowError, PyExc_TypeError), 0);
    }
    if (!strcmp(name, "as_strided")) { /* ops_models.c: the strides given */
        PyObject *sts = PyTuple_GET_ITEM(args, 1);
        if (!PyTuple_Check(sts) || PyTuple_GET_SIZE(sts) != m.ndim)
            return 0;
        for (int i = 0; i < m.ndim; i++)
            st[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(sts, i));
        return !PyErr_Occurred() || ((void)tc_clear_expected(PyExc_OverflowError), 0);
    }
    if (!strcmp(name, "expand")) {
        int lead = m.ndim - bm.ndim;
        for (int i = 0; i < m.ndim; i++)
            st[i] = i < lead ? 0 : (bm.sizes[i - lead] == 1 && m.sizes[i] != 1) ? 0 : bs[i - lead];
        return 1;
    }
    if (!strcmp(name, "diagonal")) { /* (offset, dim1, dim2): the other dims' strides in order,
                                     * then dim1's + dim2's (the offset moves the start only) */
        int d1 = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 1)), d2 = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 2)), k = 0;
        if (PyErr_Occurred() || d1 < 0 || d2 < 0 || d1 >= bm.ndim || d2 >= bm.ndim || m.ndim != bm.ndim - 1)
            return (void)tc_clear_expected(PyExc_OverflowError, PyExc_TypeError), 0;
        for (int i = 0; i < bm.ndim; i++)
            if (i != d1 && i != d2)
                st[k++] = bs[i];
        st[k] = bs[d1] + bs[d2];
        return 1;
    }
    if (!strcmp(name, "unfold")) { /* the dim's stride times step; the window's: the dim's */
        int dim = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 0));
        long long step = PyLong_AsLongLong(PyTuple_GET_ITEM(args, 2));
        if (PyErr_Occurred() || dim < 0 || dim >= bm.ndim || m.ndim != bm.ndim + 1)
            return (void)tc_clear_expected(PyExc_OverflowError, PyExc_TypeError), 0;
        for (int i = 0; i < bm.ndim; i++)
            st[i] = i == dim ? bs[i] * step : bs[i];
        st[bm.ndim] = bs[dim];
        return 1;
    }
    if (!strcmp(name, "__getitem__")) /* basic indexing: ints, slices, None, ... (ATen's order); a
                                       * key it does not read: the graph's strides (graph/strides.c) */
        return getitem_strides(&bm, bs, PyTuple_GET_ITEM(args, 0), &m, st) || ic_value_strides(t->g, v, st);
    if (!strcmp(name, "reshape")) {
        if (sym_view_strides(bm.ndim, bm.sizes, bs, m.ndim, m.sizes, st))
            return 1;
        int64_t a = 1; /* reshape copied */
        for (int i = m.ndim - 1; i >= 0; i--) {
            st[i] = a;
            a *= m.sizes[i] > 1 ? m.sizes[i] : 1;
        }
        return 1;
    }
    return 0;
}

/* x.reshape(shape) / flatten: a view of x when eager's strides of x express it, else
 * eager copies into a fresh contiguous tensor: then no view of x (nothing replayed on a
 * returned base, no alias) and the graph computes the reshaped value (one kernel). Not
 * known (dynamic sizes, a run-time layout): a view, as before. */
static int reshape_out(trace *t, var *in, ic_val v, var *out) {
    int64_t st[IC_MAX_DIMS], ns[IC_MAX_DIMS];
    if (v < 0 || !eager_strides(t, in->val, st, 0))
        return view_out(t, in, v, out);
    ic_meta m = *ic_value_meta(t->g, in->val), r = *ic_value_meta(t->g, v);
    if (m.dyn || r.dyn || sym_view_strides(m.ndim, m.sizes, st, r.ndim, r.sizes, ns))
        return view_out(t, in, v, out);
    return sym_tensor_out(t, v, out);
}

/* x.view(shape): eager raises when x's strides can't express it (not checked where x's
 * layout is chosen at run time, sym_layout_open: the view is taken as a reshape) */
static int view_check(trace *t, ic_val x, int n, const int64_t *sizes) {
    int64_t st[IC_MAX_DIMS], ns[IC_MAX_DIMS];
    ic_meta m = *ic_value_meta(t->g, x);
    if (!eager_strides(t, x, st, 0))
        return 0;
    int64_t numel = 1, known = 1;
    int neg = -1;
    for (int i = 0; i < m.ndim; i++)
        numel *= m.sizes[i];
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1)
            neg = i;
        else
            known *= sizes[i];
    }
    int64_t full[IC_MAX_DIMS], prod = 1;
    for (int i = 0; i < n; i++) {
        full[i] = i == neg ? (known ? numel / known : 0) : sizes[i];
        prod *= full[i];
    }
    if (prod != numel || n > IC_MAX_DIMS)
        return 0; /* an invalid shape: the reshape reports it */
    if (!sym_view_strides(m.ndim, m.sizes, st, n, full, ns))
        return sym_fail(t, "view size is not compatible with input tensor's size and stride (eager raises)");
    return 0;
}

int sym_h_reshape(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "reshape of a non-tensor");
    long long s[IC_MAX_DIMS];
    int n;
    ic_dim sd[IC_MAX_DIMS];
    int sym = sym_get_sym_shape_args(t, p[1], sd, &n);
    if (sym < 0)
        return -1;
    if (sym)
        return view_out(t, p[0], ic_reshape_dyn(t->g, p[0]->val, n, sd), out);
    if (sym_get_shape_args(t, p[1], s, &n, "shape") < 0)
        return -1;
    int64_t s64[IC_MAX_DIMS];
    for (int i = 0; i < n; i++)
        s64[i] = s[i];
    if (!strcmp(d->name, "view") && view_check(t, p[0]->val, n, s64) < 0)
        return -1;
    return reshape_out(t, p[0], sym_reshape(t, p[0]->val, n, s64), out);
}

int sym_h_flatten(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "flatten of a non-tensor");
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long a = 0, b = -1;
    if (!sym_is_none(p[1]) && sym_get_int(t, p[1], &a, "start_dim") < 0)
        return -1;
    if (!sym_is_none(p[2]) && sym_get_int(t, p[2], &b, "end_dim") < 0)
        return -1;
    int s, e; /* a 0-d tensor's dims wrap as a 1-d one's (eager: x.flatten(2) raises IndexError) */
    if (sym_norm_dim(t, a, m->ndim, &s) < 0 || sym_norm_dim(t, b, m->ndim, &e) < 0)
        return -1;
    if (s > e)
        return sym_fail(t, "flatten start_dim > end_dim");
    if (m->ndim == 0)
        return view_out(t, p[0], sym_reshape(t, p[0]->val, 1, (int64_t[]){1}), out);
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s; i++)
        sz[n++] = m->sizes[i];
    int64_t prod = 1;
    for (int i = s; i <= e; i++)
        prod *= m->sizes[i];
    sz[n++] = prod;
    for (int i = e + 1; i < m->ndim; i++)
        sz[n++] = m->sizes[i];
    return reshape_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

/* x.unflatten(dim, sizes): dim split into sizes (one may be -1) */
int sym_h_unflatten(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "unflatten of a non-tensor");
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long a, parts[IC_MAX_DIMS];
    int k, dim;
    if (sym_get_int(t, p[1], &a, "dim") < 0 || sym_get_ints(t, p[2], parts, IC_MAX_DIMS, &k, "sizes") < 0)
        return -1;
    if (m->ndim == 0 || sym_norm_dim(t, a, m->ndim, &dim) < 0)
        return sym_fail(t, "unflatten: bad dim (eager raises)");
    if (k == 0 || m->ndim - 1 + k > IC_MAX_DIMS)
        return sym_fail(t, "unflatten: %d sizes", k);
    if (m->dyn && !sym_dim_static(m->dims[dim]))
        return sym_fail(t, "unflatten of a dynamic dim");
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < k; i++) {
        if (parts[i] == -1 && infer < 0)
            infer = i;
        else if (parts[i] < 0)
            return sym_fail(t, "unflatten: bad sizes (eager raises)");
        else
            known *= parts[i];
    }
    if (infer >= 0) {
        if (known == 0 || m->sizes[dim] % known)
            return sym_fail(t, "unflatten: sizes do not divide the dim (eager raises)");
        parts[infer] = m->sizes[dim] / known;
    } else if (known != m->sizes[dim]) {
        return sym_fail(t, "unflatten: sizes do not match the dim (eager raises)");
    }
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < m->ndim; i++) {
        if (i != dim) {
            sz[n++] = m->sizes[i];
            continue;
        }
        for (int j = 0; j < k; j++)
            sz[n++] = parts[j];
    }
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

int sym_h_permute(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "permute of a non-tensor");
    long long s[IC_MAX_DIMS];
    int n, perm[IC_MAX_DIMS];
    int nd = sym_ndim_of(t, p[0]->val);
    if (sym_get_shape_args(t, p[1], s, &n, "dims") < 0)
        return -1;
    if (n != nd)
        return sym_fail(t, "permute: %d dims for a %d-d tensor", n, nd);
    for (int i = 0; i < n; i++)
        if (sym_norm_dim(t, s[i], nd, &perm[i]) < 0)
            return -1;
    return sym_view_out_desc(t, p[0], ic_permute(t->g, p[0]->val, perm), out, "permute",
                         Py_BuildValue("(N)", sym_perm_tuple(perm, n)));
}

int sym_h_transpose(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "transpose of a non-tensor");
    int nd = sym_ndim_of(t, p[0]->val), perm[IC_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    int a = -1, b = -1;
    /* below 2 dims t() (and a 0-d transpose) keeps the shape, but eager still returns a new
     * view object (x.t() is not x: a t_() or in-place op through it is not x's): an identity
     * permute (fuzz: w = x.t(); w.abs_() on a 1-d x made w x itself at a later break) */
    if (d->op == 1) {
        if (nd > 2)
            return sym_fail(t, "t() of a %d-d tensor", nd);
        if (nd == 2) {
            a = 0;
            b = 1;
        }
    } else {
        long long x, y;
        if (sym_get_int(t, p[1], &x, "dim0") < 0 || sym_get_int(t, p[2], &y, "dim1") < 0 ||
            sym_norm_dim(t, x, nd, &a) < 0 || sym_norm_dim(t, y, nd, &b) < 0)
            return -1;
        if (nd == 0)
            a = b = -1;
    }
    if (a >= 0) {
        perm[a] = b;
        perm[b] = a;
    }
    return sym_view_out_desc(t, p[0], ic_permute(t->g, p[0]->val, perm), out, "permute",
                         Py_BuildValue("(N)", sym_perm_tuple(perm, nd)));
}

int sym_h_unsqueeze(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "unsqueeze of a non-tensor");
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long x;
    int dim;
    if (sym_get_int(t, p[1], &x, "dim") < 0 || sym_norm_dim(t, x, m->ndim + 1, &dim) < 0)
        return -1;
    if (m->ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "too many dims");
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= m->ndim; i++) {
        if (i == dim)
            sz[n++] = 1;
        if (i < m->ndim)
            sz[n++] = m->sizes[i];
    }
    if (m->dyn)
        return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
    /* described as x[:, ..., None] (dim slices, then None): replayed and strided as eager's
     * unsqueeze (the new dim's stride is size * stride of the dim after it, where a reshape
     * would give a contiguous one: x.diagonal().t().unsqueeze(0) of a (1, 5, 3) x has
     * strides (18, 18, 1), not (3, 3, 1), and eager's overlap checks compare them) */
    PyObject *key = PyTuple_New(dim + 1);
    if (key == NULL)
        return -1;
    for (int i = 0; i < dim; i++) {
        PyObject *sl = PySlice_New(NULL, NULL, NULL);
        if (sl == NULL) {
            Py_DECREF(key);
            return -1;
        }
        PyTuple_SET_ITEM(key, i, sl);
    }
    PyTuple_SET_ITEM(key, dim, Py_NewRef(Py_None));
    return sym_view_out_desc(t, p[0], sym_reshape(t, p[0]->val, n, sz), out, "__getitem__", Py_BuildValue("(N)", key));
}

int sym_h_squeeze(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "squeeze of a non-tensor");
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    uint32_t mask = 0;
    if (sym_is_none(p[1])) {
        for (int i = 0; i < m->ndim; i++)
            if (m->sizes[i] == 1)
                mask |= 1u << i;
    } else {
        if (sym_dims_mask(t, p[1], m->ndim, &mask) < 0)
            return -1;
        uint32_t keep = 0;
        for (int i = 0; i < m->ndim; i++)
            if ((mask >> i & 1) && m->sizes[i] == 1)
                keep |= 1u << i;
        mask = keep;
    }
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < m->ndim; i++)
        if (!(mask >> i & 1))
            sz[n++] = m->sizes[i];
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

int sym_h_expand(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "expand of a non-tensor");
    long long s[IC_MAX_DIMS];
    int n;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    ic_dim sd[IC_MAX_DIMS];
    int sym = sym_get_sym_shape_args(t, p[1], sd, &n);
    if (sym < 0)
        return -1;
    if (sym) {
        for (int i = 0; i < n; i++) {
            int j = i - (n - m->ndim);
            if (sd[i].coef == -1 && sym_dim_static(sd[i]) && j >= 0)
                sd[i] = m->dyn ? m->dims[j] : (ic_dim){.coef = m->sizes[j]};
        }
        return sym_view_out_desc(t, p[0], ic_expand_dyn(t->g, p[0]->val, n, sd), out, "expand",
                             sym_shape_args(t, -1));
    }
    if (sym_get_shape_args(t, p[1], s, &n, "sizes") < 0)
        return -1;
    int64_t s64[IC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int j = i - (n - m->ndim);
        s64[i] = (s[i] == -1 && j >= 0) ? m->sizes[j] : s[i];
    }
    return sym_view_out_desc(t, p[0], ic_expand(t->g, p[0]->val, n, s64), out, "expand",
                         Py_BuildValue("(N)", ints_tuple(s64, n)));
}

int sym_h_identity(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (d->op == 1) {
        /* contiguous(): a no-op when eager's strides are contiguous already, else a
         * contiguous copy (a new object: what it is used for must not reach the viewed
         * tensor) */
        int64_t es[IC_MAX_DIMS], st = 1, numel = 1;
        for (int i = 0; i < m->ndim; i++)
            numel *= m->sizes[i];
        int contig = eager_strides(t, p[0]->val, es, 0);
        if (!contig && m->dyn)
            contig = ic_value_is_contiguous(t->g, p[0]->val, IC_MF_CONTIGUOUS);
        else
            for (int i = m->ndim - 1; i >= 0 && contig && numel > 0; i--) {
                if (m->sizes[i] != 1 && es[i] != st)
                    contig = 0;
                st *= m->sizes[i];
            }
        if (!contig)
            return dh_layout_copy(t, p[0]->val, IC_MF_CONTIGUOUS, out);
    }
    *out = *p[0];
    if (d->op == 0 && sym_value_requires_grad(t, out->val)) { /* training: a stop-gradient */
        ic_val in_val = out->val;
        out->val = ic_detach(t->g, in_val);
        if (out->val < 0)
            return sym_check_graph(t);
        /* a value of its own, but eager's detach shares the data: recorded as a view step,
         * so an output (or a value live at a break) is built as base.detach() of the real
         * base, and an update through either alias reaches the other (alias_fn.c) */
        PyObject *desc = Py_BuildValue("(is())", in_val, "detach");
        if (desc == NULL || sym_keep(t, desc) == NULL)
            return -1;
        sym_set_view_desc(t, out->val, desc);
        sym_mark_view(t, out->val, in_val);
    }
    if (d->op == 0 && out->oid > 0) {
        /* detach(): a new tensor object sharing the data: both become aliased, so an
         * in-place update through either is not captured (eager handles it) */
        int in_oid = out->oid;
        out->oid = sym_new_object(t, out->val);
        if (out->oid <= 0)
            return -1;
        sym_alias_objects(t, out->oid, in_oid);
        out->src = -1;
    }
    return 0;
}

/* size of dim d: a symbolic int when the dim is dynamic */
int sym_size_out(trace *t, const ic_meta *m, int d, var *out) {
    if (m->dyn)
        return sym_symint(t, m->dims[d], out);
    return sym_const(t, PyLong_FromLongLong(m->sizes[d]), out);
}

static int numel_out(trace *t, const ic_meta *m, var *out) {
    ic_dim n;
    memset(&n, 0, sizeof n);
    n.coef = 1;
    for (int i = 0; i < m->ndim; i++) {
        if (!m->dyn) {
            n.coef *= m->sizes[i];
            continue;
        }
        n.coef *= m->dims[i].coef;
        for (int k = 0; k < IC_MAX_SYMS; k++)
            n.exp[k] += m->dims[i].exp[k];
    }
    return sym_symint(t, n.coef == 0 ? (ic_dim){0} : n, out);
}

int sym_h_size(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "size() of a non-tensor");
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (d->op == 1) /* dim() / ndimension() */
        return sym_const(t, PyLong_FromLong(m->ndim), out);
    if (d->op == 2) /* numel() */
        return numel_out(t, m, out);
    if (sym_is_none(p[1])) {
        var tmp = *p[0];
        return sym_tensor_attr(t, &tmp, NULL, out);
    }
    long long x;
    int dim;
    if (sym_get_int(t, p[1], &x, "dim") < 0 || sym_norm_dim(t, x, m->ndim, &dim) < 0)
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "size(dim) of a 0-d tensor");
    return sym_size_out(t, m, dim, out);
}

/* the tensors of seq into vals (room for max; max < 0: *vals is set to a malloc'd array the
 * caller frees, any length) */
static int tensors_of(trace *t, const var *seq, ic_val **vals, int max, int *n) {
    var *items;
    int k;
    if (seq->kind != V_SEQ)
        return sym_fail(t, "expected a sequence of tensors");
    items = seq->items;
    k = seq->n;
    if (k < 1 || (max >= 0 && k > max))
        return sym_fail(t, "sequence of %d tensors not supported", k);
    if (max < 0 && (*vals = malloc(sizeof **vals * (size_t)k)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < k; i++) {
        var it = items[i];
        sym_resolve(t, &it);
        if (it.kind != V_TENSOR)
            return sym_fail(t, "expected tensors in the sequence");
        (*vals)[i] = it.val;
    }
    *n = k;
    return 0;
}

ic_val sym_unsqueeze_val(trace *t, ic_val x, int dim) {
    ic_meta m_copy = *sym_metap(t, x);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= m->ndim; i++) {
        if (i == dim)
            sz[n++] = 1;
        if (i < m->ndim)
            sz[n++] = m->sizes[i];
    }
    ic_val r = sym_reshape(t, x, n, sz);
    /* ATen's unsqueeze strides (the new dim's: size * stride of the dim after it, 1 last),
     * where the reshape's view rule gives another stride to the size-1 dim: stack's cat
     * decides its layout from them (stack(..., -1) of channels-last tensors is contiguous) */
    int64_t xs[IC_MAX_DIMS], st[IC_MAX_DIMS];
    if (r >= 0 && !m->dyn && n <= IC_MAX_DIMS && ic_value_strides(G, x, xs)) {
        for (int i = 0, j = 0; i < n; i++)
            st[i] = i == dim ? (dim < m->ndim ? m->sizes[dim] * xs[dim] : 1) : xs[j++];
        ic_value_set_strides(G, r, st);
    }
    return r;
}

/* cat(tensors, dim) / stack(tensors, dim) */
static int cat_of(trace *t, const opdef *d, var **p, ic_val *v, int n, var *out) {
    long long dd = 0;
    if (d->op < 2 && !sym_is_none(p[1]) && sym_get_int(t, p[1], &dd, "dim") < 0)
        return -1;
    if (d->op >= 2) {
        /* hstack (op 2): atleast_1d, then cat on dim 0 for 1-d tensors, else dim 1;
         * vstack (op 3): atleast_2d (a 1-d [n] becomes [1, n]), then cat on dim 0 */
        int want = d->op == 2 ? 1 : 2;
        for (int i = 0; i < n; i++) {
            ic_meta mi = *sym_metap(t, v[i]);
            if (mi.ndim >= want)
                continue;
            int64_t sz[2] = {1, 1};
            if (mi.ndim == 1)
                sz[1] = mi.sizes[0];
            v[i] = sym_reshape(t, v[i], want, sz);
            if (v[i] < 0)
                return sym_check_graph(t);
        }
        dd = d->op == 2 && sym_ndim_of(t, v[0]) > 1 ? 1 : 0;
    }
    if (d->op != 1) {
        /* ATen's legacy rule: 1-d empty tensors are skipped for the shapes (a cache grown
         * from torch.tensor([]) by cat) but still take part in the result dtype (eager:
         * cat of a float32 [0] and bfloat16 tensors is float32) */
        int m = 0, nonempty = 0;
        ic_dtype rt = sym_metap(t, v[0])->dtype;
        for (int i = 0; i < n; i++) {
            const ic_meta *mi = sym_metap(t, v[i]);
            nonempty += !(mi->ndim == 1 && mi->sizes[0] == 0);
            rt = ic_promote(rt, mi->dtype);
        }
        for (int i = 0; i < n && nonempty > 0 && nonempty < n; i++) {
            const ic_meta *mi = sym_metap(t, v[i]);
            if (!(mi->ndim == 1 && mi->sizes[0] == 0))
                v[m++] = v[i];
        }
        if (nonempty > 0 && nonempty < n) {
            n = m;
            if (sym_metap(t, v[0])->dtype != rt && (v[0] = ic_cast(t->g, v[0], rt)) < 0)
                return sym_check_graph(t);
        }
    }
    if (d->op == 0)
        for (int i = 0; i < n; i++)
            if (sym_ndim_of(t, v[i]) == 0)
                return sym_fail(t, "cat: a zero-dimensional tensor (eager raises)");
    int nd = sym_ndim_of(t, v[0]) + (d->op == 1);
    int dim;
    if (sym_norm_dim(t, dd, nd, &dim) < 0)
        return -1;
    if (d->op == 1)
        for (int i = 0; i < n; i++)
            v[i] = sym_unsqueeze_val(t, v[i], dim);
    /* a balanced tree of two-operand cats: log2(n) selects per element, not n */
    for (int k = n; k > 1; k = (k + 1) / 2) {
        for (int i = 0; i + 1 < k; i += 2)
            if ((v[i / 2] = ic_cat(t->g, v[i], v[i + 1], dim)) < 0)
                return sym_check_graph(t);
        if (k % 2)
            v[k / 2] = v[k - 1];
    }
    ic_val r = v[0];
    if (n == 1 && d->op != 1) /* cat of one tensor: a copy in its suggested memory format
                               * (eager: a transposed input gives a contiguous result) */
        return dh_layout_copy(t, r, ic_value_suggest_format(t->g, r), out);
    return sym_tensor_out(t, r, out);
}

int sym_h_cat(trace *t, const opdef *d, var **p, var *out) {
    ic_val *v = NULL; /* malloc'd: sequences of any length (an RNN's steps stacked) */
    int n, r = -1;
    if (tensors_of(t, p[0], &v, -1, &n) == 0) {
        if (n > dh_limit.max_cat_inputs)
            r = sym_fail(t, "%s of %d tensors (more than %d: torchc.config.max_cat_inputs)", d->name, n,
                         dh_limit.max_cat_inputs);
        else
            r = cat_of(t, d, p, v, n, out);
    }
    free(v);
    return r;
}

/* meshgrid(*tensors, indexing=None) (or one list of tensors): 0-d/1-d inputs, each a view
 * along its own dim expanded to the grid; indexing "xy" swaps the first two dims. None is
 * "ij" (eager also warns once). */
int sym_h_meshgrid(trace *t, const opdef *d, var **p, var *out) {
    const var *seq = p[0];
    if (seq->kind == V_SEQ && seq->n == 1) {
        var it = seq->items[0];
        sym_resolve(t, &it);
        if (it.kind == V_SEQ)
            seq = &seq->items[0];
    }
    ic_val v[IC_MAX_DIMS], *pv = v;
    int n, xy = 0;
    if (tensors_of(t, seq, &pv, IC_MAX_DIMS, &n) < 0)
        return -1;
    if (p[1] != NULL && !sym_is_none(p[1])) {
        const char *s = p[1]->kind == V_CONST && PyUnicode_Check(p[1]->obj) ? PyUnicode_AsUTF8(p[1]->obj) : NULL;
        if (s == NULL || (strcmp(s, "ij") && strcmp(s, "xy")))
            return sym_fail(t, "meshgrid: indexing must be 'ij' or 'xy' (eager will raise)");
        xy = strcmp(s, "xy") == 0;
    }
    int64_t grid[IC_MAX_DIMS];
    ic_dtype dt = sym_metap(t, v[0])->dtype;
    for (int i = 0; i < n; i++) {
        const ic_meta *m = sym_metap(t, v[i]);
        if (m->ndim > 1 || m->dyn || m->dtype != dt)
            return sym_fail(t, "meshgrid: inputs not 0-d/1-d of one dtype (or symbolic) left to eager");
        grid[i] = m->ndim ? m->sizes[0] : 1;
    }
    if (xy && n >= 2) {
        int64_t g0 = grid[0];
        grid[0] = grid[1];
        grid[1] = g0;
    }
    var *items = sym_alloc(t, n);
    if (items == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        int at = xy && n >= 2 && i < 2 ? 1 - i : i;
        int64_t shp[IC_MAX_DIMS];
        for (int j = 0; j < n; j++)
            shp[j] = j == at ? grid[at] : 1;
        var in = seq->items[i], mid;
        sym_resolve(t, &in);
        if (sym_view_out_desc(t, &in, ic_reshape(t->g, v[i], n, shp), &mid, "view",
                              Py_BuildValue("(N)", ints_tuple(shp, n))) < 0 ||
            sym_view_out_desc(t, &mid, ic_expand(t->g, mid.val, n, grid), &items[i], "expand",
                              Py_BuildValue("(N)", ints_tuple(grid, n))) < 0)
            return -1;
    }
    *out = sym_var(V_SEQ);
    out->n = n;
    out->items = items;
    return 0;
}

/* narrow(input, dim, start, length) / select(input, dim, index) */
int sym_h_narrow(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long dd, st, len = 1;
    int dim;
    if (sym_get_int(t, p[1], &dd, "dim") < 0 || sym_norm_dim(t, dd, m->ndim, &dim) < 0 ||
        sym_get_int(t, p[2], &st, "start") < 0 || (d->op == 0 && sym_get_int(t, p[3], &len, "length") < 0))
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "%s of a 0-d tensor", d->name);
    if (st < 0)
        st += m->sizes[dim];
    if (st < 0 || st + len > m->sizes[dim] || len < 0)
        return sym_fail(t, "%s out of range (eager will raise)", d->name);
    ic_val r = ic_slice(t->g, p[0]->val, dim, st, st + len, 1);
    if (d->op == 1) { /* select: drop the dim */
        int64_t sz[IC_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < m->ndim; i++)
            if (i != dim)
                sz[n++] = m->sizes[i];
        r = sym_reshape(t, r, n, sz);
    }
    return sym_view_out_desc(t, p[0], r, out, d->op == 1 ? "select" : "narrow",
                         d->op == 1 ? Py_BuildValue("(iL)", dim, st) : Py_BuildValue("(iLL)", dim, st, len));
}

/* split(tensor, split_size_or_sections, dim) / chunk(input, chunks, dim) -> tuple of views */
static int split_views(trace *t, var **p, int dim, const long long *sizes, int ns, var *out) {
    var *items = sym_alloc(t, ns > 0 ? ns : 1);
    if (items == NULL)
        return -1;
    long long at = 0;
    for (int i = 0; i < ns; i++) {
        if (sym_view_out_desc(t, p[0], ic_slice(t->g, p[0]->val, dim, at, at + sizes[i], 1), &items[i],
                              "narrow", Py_BuildValue("(iLL)", dim, at, sizes[i])) < 0)
            return -1;
        at += sizes[i];
    }
    *out = sym_var(V_SEQ);
    out->n = ns;
    out->items = items;
    return 0;
}

/* split(tensor, split_size_or_sections, dim) / chunk(input, chunks, dim) -> tuple of views
 * (torchc.config.max_unroll of them at most) */
int sym_h_split(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long dd = 0, *sizes = NULL, npieces;
    int dim, ns = 0, rc = -1;
    if (!sym_is_none(p[2]) && sym_get_int(t, p[2], &dd, "dim") < 0)
        return -1;
    if (sym_norm_dim(t, dd, m->ndim, &dim) < 0)
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "%s of a 0-d tensor", d->name);
    int64_t L = m->sizes[dim];
    if (p[1] == NULL)
        return sym_fail(t, "%s needs sizes", d->name);
    int by_size = p[1]->kind == V_CONST && PyLong_Check(p[1]->obj);
    long long k = 0, each = 0;
    if (by_size) {
        int ovf = 0;
        k = PyLong_AsLongLongAndOverflow(p[1]->obj, &ovf);
        if (ovf)
            return sym_fail(t, "%s with a size out of range (eager will raise)", d->name);
        if (k <= 0)
            return sym_fail(t, "%s with a non-positive size (eager will raise)", d->name);
        each = d->op == 1 ? (L + k - 1) / k : k; /* chunk: ceil(L / chunks) */
        if (each <= 0)
            each = 1;
        /* eager: chunk of an empty dim gives `chunks` empty tensors, split one */
        npieces = L == 0 ? (d->op == 1 ? k : 1) : (L + each - 1) / each;
    } else {
        if (d->op == 1)
            return sym_fail(t, "chunk needs an int number of chunks");
        npieces = sym_ints_len(p[1]);
    }
    if (npieces > dh_limit.max_unroll)
        return sym_fail(t, "%s into %lld pieces (more than %d: torchc.config.max_unroll)", d->name, npieces,
                        dh_limit.max_unroll);
    if ((sizes = malloc(sizeof *sizes * (size_t)(npieces > 0 ? npieces : 1))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (by_size) {
        for (long long at = 0; at < L; at += each)
            sizes[ns++] = at + each <= L ? each : L - at;
        if (L == 0)
            for (long long i = 0; i < npieces; i++)
                sizes[ns++] = 0;
    } else {
        if (sym_get_ints(t, p[1], sizes, (int)npieces, &ns, "split sizes") < 0)
            goto done;
        long long sum = 0;
        for (int i = 0; i < ns; i++)
            sum += sizes[i];
        if (sum != L) {
            sym_fail(t, "split sizes do not sum to the dim (eager will raise)");
            goto done;
        }
    }
    rc = split_views(t, p, dim, sizes, ns, out);
done:
    free(sizes);
    return rc;
}

/* tril/triu(input, diagonal=0) on the last two dims */
int sym_h_tri(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    long long k = 0;
    if (!sym_is_none(p[1]) && sym_get_int(t, p[1], &k, "diagonal") < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->ndim < 2)
        return sym_fail(t, "%s needs 2 dims (eager will raise)", d->name);
    int64_t R = m->sizes[m->ndim - 2], C = m->sizes[m->ndim - 1];
    ic_val rows = ic_reshape(G, ic_arange(G, R, 0, 1, IC_I64), 2, (int64_t[]){R, 1});
    ic_val cols = ic_reshape(G, ic_arange(G, C, 0, 1, IC_I64), 2, (int64_t[]){1, C});
    ic_val diff = ic_binary(G, IC_OP_SUB, cols, rows); /* col - row */
    ic_val keepm = d->op == 0 ? ic_binary(G, IC_OP_LE, diff, sym_inum(t, k)) : ic_binary(G, IC_OP_GE, diff, sym_inum(t, k));
    ic_val zero = ic_cast(G, sym_inum(t, 0), m->dtype);
    if (sym_tensor_out(t, ic_where(G, keepm, p[0]->val, zero), out) < 0)
        return -1;
    ic_value_set_format(G, out->val, out->val, IC_MF_CONTIGUOUS); /* eager's tril/triu: contiguous */
    return 0;
}

/* flip(input, dims) via index_select with a reversed arange; roll(input, shifts, dims) */
int sym_h_flip(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long ds[IC_MAX_DIMS], sh[IC_MAX_DIMS];
    int nd, nsh = 0;
    var *dimv = d->op == 0 ? p[1] : p[2];
    if (d->op == 1) {
        if (sym_get_ints(t, p[1], sh, IC_MAX_DIMS, &nsh, "shifts") < 0)
            return -1;
        if (sym_is_none(dimv))
            return sym_fail(t, "roll without dims not supported yet");
    }
    if (sym_get_ints(t, dimv, ds, IC_MAX_DIMS, &nd, "dims") < 0)
        return -1;
    if (d->op == 1 && nd != nsh)
        return sym_fail(t, "roll: shifts and dims differ in length (eager will raise)");
    ic_val v = p[0]->val;
    for (int i = 0; i < nd; i++) {
        int dim;
        if (sym_norm_dim(t, ds[i], m->ndim, &dim) < 0)
            return -1;
        int64_t n = m->sizes[dim];
        if (n == 0)
            continue;
        if (d->op == 0) {
            v = ic_index_select(G, v, dim, ic_arange(G, n, (double)(n - 1), -1.0, IC_I64));
        } else {
            long long s0 = ((sh[i] % n) + n) % n;
            if (s0 == 0)
                continue;
            ic_val a = ic_slice(G, v, dim, n - s0, n, 1), b = ic_slice(G, v, dim, 0, n - s0, 1);
            v = ic_cat(G, a, b, dim);
        }
    }
    if (v == p[0]->val)
        v = ic_cast(G, v, m->dtype);
    if (sym_tensor_out(t, v, out) < 0)
        return -1;
    /* eager: flip keeps the input's layout (empty_like), roll's result takes the input's
     * suggested memory format on the CPU (contiguous unless channels-last), contiguous on CUDA */
    ic_value_set_format(G, out->val, p[0]->val,
                        d->op == 0                       ? IC_MF_PRESERVE
                        : t->device_type == TC_DEV_CUDA ? IC_MF_CONTIGUOUS
                                                         : ic_value_suggest_format(G, p[0]->val));
    return 0;
}

/* repeat(*sizes) (op 0): expand a leading-padded view, then reshape; tile(dims) (op 1):
 * repeat with dims padded by leading 1s to the input's rank */
int sym_h_repeat(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    long long r[IC_MAX_DIMS];
    int n;
    if (sym_get_shape_args(t, p[1], r, &n, d->op ? "dims" : "repeats") < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (d->op == 1 && n < m->ndim) {
        int k = m->ndim - n;
        memmove(r + k, r, (size_t)n * sizeof r[0]);
        for (int i = 0; i < k; i++)
            r[i] = 1;
        n = m->ndim;
    }
    for (int i = 0; i < n; i++)
        if (r[i] < 0)
            return sym_fail(t, "%s: negative dimension (eager will raise)", d->name);
    if (n < m->ndim || 2 * n > IC_MAX_DIMS)
        return sym_fail(t, "repeat: unsupported number of dims");
    int64_t src[IC_MAX_DIMS], inter[IC_MAX_DIMS], exp[IC_MAX_DIMS], fin[IC_MAX_DIMS];
    for (int i = 0; i < n; i++)
        src[i] = i < n - m->ndim ? 1 : m->sizes[i - (n - m->ndim)];
    for (int i = 0; i < n; i++) {
        inter[2 * i] = 1;
        inter[2 * i + 1] = src[i];
        exp[2 * i] = r[i];
        exp[2 * i + 1] = src[i];
        fin[i] = r[i] * src[i];
    }
    ic_val v = ic_reshape(G, p[0]->val, 2 * n, inter);
    v = ic_expand(G, v, 2 * n, exp);
    v = ic_reshape(G, v, n, fin);
    return sym_tensor_out(t, v, out);
}

/* unbind(input, dim=0): a tuple of select views */
int sym_h_unbind(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    long long dd = 0;
    int dim;
    if (p[1] && !sym_is_none(p[1]) && sym_get_int(t, p[1], &dd, "dim") < 0)
        return -1;
    if (m.ndim == 0)
        return sym_fail(t, "unbind of a 0-d tensor (eager will raise)");
    if (sym_norm_dim(t, dd, m.ndim, &dim) < 0)
        return -1;
    if (m.dyn)
        return sym_fail(t, "unbind with symbolic shapes left to eager");
    if (m.sizes[dim] > dh_limit.max_unroll)
        return sym_fail(t, "unbind into %lld tensors (more than %d: torchc.config.max_unroll)", (long long)m.sizes[dim],
                        dh_limit.max_unroll);
    int n = (int)m.sizes[dim];
    var *items = sym_alloc(t, n > 0 ? n : 1);
    if (items == NULL)
        return -1;
    int64_t sz[IC_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < m.ndim; i++)
        if (i != dim)
            sz[k++] = m.sizes[i];
    for (int i = 0; i < n; i++) {
        ic_val r = sym_reshape(t, ic_slice(t->g, p[0]->val, dim, i, i + 1, 1), k, sz);
        if (sym_view_out_desc(t, p[0], r, &items[i], "select", Py_BuildValue("(ii)", dim, i)) < 0)
            return -1;
    }
    *out = sym_var(V_SEQ);
    out->n = n;
    out->items = items;
    return 0;
}

/* reshape_as(input, other): reshape to other's shape */
int sym_h_reshape_as(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_meta o = *sym_metap(t, p[1]->val);
    if (o.dyn || sym_metap(t, p[0]->val)->dyn)
        return sym_fail(t, "reshape_as with symbolic shapes left to eager");
    return reshape_out(t, p[0], sym_reshape(t, p[0]->val, o.ndim, o.sizes), out);
}

/* repeat_interleave(input, repeats, dim=None, *, output_size=None) with an int repeats (or a
 * one-element constant): each element repeated along dim, the flattened input for dim=None */
int sym_h_repeat_interleave(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    long long r;
    if (p[1] == NULL || p[1]->kind != V_CONST || !PyLong_Check(p[1]->obj) || PyBool_Check(p[1]->obj))
        return sym_fail(t, "repeat_interleave with tensor repeats left to eager");
    if (sym_get_int(t, p[1], &r, "repeats") < 0)
        return -1;
    if (r < 0)
        return sym_fail(t, "repeat_interleave: negative repeats (eager will raise)");
    ic_val x = p[0]->val;
    ic_meta m = *sym_metap(t, x);
    if (m.dyn)
        return sym_fail(t, "repeat_interleave with symbolic shapes left to eager");
    int dim = 0;
    if (p[2] == NULL || sym_is_none(p[2])) {
        int64_t n = 1;
        for (int i = 0; i < m.ndim; i++)
            n *= m.sizes[i];
        x = ic_reshape(G, x, 1, &n);
        m = *sym_metap(t, x);
    } else {
        long long dd;
        if (sym_get_int(t, p[2], &dd, "dim") < 0 || sym_norm_dim(t, dd, m.ndim ? m.ndim : 1, &dim) < 0)
            return -1;
        if (m.ndim == 0) {
            int64_t one = 1;
            x = ic_reshape(G, x, 1, &one);
            m = *sym_metap(t, x);
        }
    }
    if (p[3] != NULL && !sym_is_none(p[3])) {
        long long os;
        if (sym_get_int(t, p[3], &os, "output_size") < 0)
            return -1;
        if (os != r * m.sizes[dim])
            return sym_fail(t, "repeat_interleave: output_size does not match (eager will raise)");
    }
    if (m.ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "repeat_interleave: too many dims");
    int64_t inter[IC_MAX_DIMS], exp[IC_MAX_DIMS], fin[IC_MAX_DIMS];
    for (int i = 0, k = 0; i < m.ndim; i++) {
        inter[k] = exp[k] = m.sizes[i];
        k++;
        if (i == dim) {
            inter[k] = 1;
            exp[k++] = r;
        }
        fin[i] = i == dim ? m.sizes[i] * r : m.sizes[i];
    }
    ic_val v = ic_reshape(G, x, m.ndim + 1, inter);
    v = ic_expand(G, v, m.ndim + 1, exp);
    return sym_tensor_out(t, ic_reshape(G, v, m.ndim, fin), out);
}

/* eager's strides of v (1), 0 when not known (alias_fn.c: is a reshape a view?) */
int sym_eager_strides(trace *t, ic_val v, int64_t *st) {
    return eager_strides(t, v, st, 0);
}

/* x.diagonal(offset, dim1, dim2): dim1 and dim2 moved last, flattened, and every
 * (size2 + 1)-th element taken from the offset's start; the diagonal becomes the last dim
 * (eager's order). A view in eager: recorded with a descriptor (an in-place update
 * through it breaks in alias_fn.c; a returned one is replayed on the real base). */
int sym_h_diagonal(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "diagonal of a non-tensor");
    ic_meta m = *sym_metap(t, p[0]->val);
    long long off = 0, a = 0, b = 1;
    if ((!sym_is_none(p[1]) && sym_get_int(t, p[1], &off, "offset") < 0) ||
        (!sym_is_none(p[2]) && sym_get_int(t, p[2], &a, "dim1") < 0) ||
        (!sym_is_none(p[3]) && sym_get_int(t, p[3], &b, "dim2") < 0))
        return -1;
    if (m.dyn)
        return sym_fail(t, "diagonal with dynamic sizes not supported yet");
    if (m.ndim < 2)
        return sym_fail(t, "diagonal of a tensor with fewer than 2 dims (eager will raise)");
    int d1, d2;
    if (sym_norm_dim(t, a, m.ndim, &d1) < 0 || sym_norm_dim(t, b, m.ndim, &d2) < 0)
        return -1;
    if (d1 == d2)
        return sym_fail(t, "diagonal dimensions cannot be identical (eager will raise)");
    int perm[IC_MAX_DIMS], k = 0;
    int64_t sz[IC_MAX_DIMS];
    for (int i = 0; i < m.ndim; i++)
        if (i != d1 && i != d2) {
            sz[k] = m.sizes[i];
            perm[k++] = i;
        }
    perm[k] = d1;
    perm[k + 1] = d2;
    int64_t n1 = m.sizes[d1], n2 = m.sizes[d2], start, len;
    if (off >= 0) {
        len = n2 - off < n1 ? n2 - off : n1;
        start = off;
    } else {
        len = n1 + off < n2 ? n1 + off : n2;
        start = -off * n2;
    }
    if (len < 0)
        len = 0;
    ic_val v = ic_permute(t->g, p[0]->val, perm);
    sz[k] = n1 * n2;
    v = v < 0 ? v : sym_reshape(t, v, k + 1, sz);
    if (v >= 0 && len > 0)
        v = ic_slice(t->g, v, k, start, start + (len - 1) * (n2 + 1) + 1, n2 + 1);
    else if (v >= 0)
        v = ic_slice(t->g, v, k, 0, 0, 1);
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "diagonal failed");
    return sym_view_out_desc(t, p[0], v, out, "diagonal", Py_BuildValue("(Lii)", off, d1, d2));
}

/* Tensor.unfold(dimension, size, step): windows of `size` along `dimension`, `step` apart, as a
 * new last dim (eager: a strided view, overlapping where step < size). The value: one strided
 * slice per window position, stacked along the new dim; described as the view for replay on
 * a returned input and for eager's strides (eager_strides). Static shapes. More than 64 taps:
 * one index_select of the window positions (j * step + k for window j, tap k) along the dim,
 * its (windows, taps) pair unflattened there and the taps moved last. */
int sym_h_tensor_unfold(trace *t, const opdef *d, var **p, var *out) {
    long long dim, size, step;
    int dd;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_int(t, p[1], &dim, "dimension") < 0 ||
        sym_get_int(t, p[2], &size, "size") < 0 || sym_get_int(t, p[3], &step, "step") < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn || m.ndim == 0 || m.ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "Tensor.unfold: a 1-d or more input of static shape");
    if (sym_norm_dim(t, dim, m.ndim, &dd) < 0)
        return -1;
    int64_t n = m.sizes[dd];
    if (size < 1 || step < 1 || size > n)
        return sym_fail(t, "Tensor.unfold: size in [1, the dim's size] and step >= 1 (else eager raises or is empty)");
    int64_t nout = (n - size) / step + 1, sz[IC_MAX_DIMS];
    if (size > 64) {
        int64_t a[2] = {nout, 1}, b[2] = {1, size}, flat = nout * size, usz[IC_MAX_DIMS];
        ic_val w = ic_reshape(G, ic_arange(G, nout, 0, (double)step, IC_I64), 2, a);
        ic_val k = ic_reshape(G, ic_arange(G, size, 0, 1, IC_I64), 2, b);
        ic_val idx = w < 0 || k < 0 ? -1 : ic_reshape(G, ic_binary(G, IC_OP_ADD, w, k), 1, &flat);
        ic_val v = idx < 0 ? -1 : ic_index_select(G, p[0]->val, dd, idx);
        int perm[IC_MAX_DIMS], nd = 0;
        for (int i = 0; i < m.ndim; i++) {
            if (i == dd) {
                usz[nd++] = nout;
                usz[nd++] = size;
            } else {
                usz[nd++] = m.sizes[i];
            }
        }
        v = v < 0 ? v : ic_reshape(G, v, nd, usz);
        for (int i = 0, j = 0; i < nd; i++)
            if (i != dd + 1)
                perm[j++] = i;
        perm[nd - 1] = dd + 1;
        v = v < 0 ? v : ic_permute(G, v, perm);
        if (v < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "Tensor.unfold failed");
        return sym_view_out_desc(t, p[0], v, out, "unfold", Py_BuildValue("(iLL)", dd, size, step));
    }
    for (int i = 0; i < m.ndim; i++)
        sz[i] = i == dd ? nout : m.sizes[i];
    sz[m.ndim] = 1;
    ic_val acc = -1;
    for (int64_t j = 0; j < size; j++) {
        ic_val v = ic_slice(G, p[0]->val, dd, j, j + (nout - 1) * step + 1, step);
        v = v < 0 ? v : ic_reshape(G, v, m.ndim + 1, sz);
        acc = v < 0 ? v : acc < 0 ? v : ic_cat(G, acc, v, m.ndim);
        if (acc < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "Tensor.unfold failed");
    }
    return sym_view_out_desc(t, p[0], acc, out, "unfold", Py_BuildValue("(iLL)", dd, size, step));
}

