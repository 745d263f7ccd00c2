/* ops_views.c — views and data movement: reshape/view (refusing what eager refuses),
 * flatten, permute, transpose, squeeze, expand, size, cat, narrow, split, index_select,
 * tensor indexing, tril/triu, flip, repeat, gather.
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
static int view_strides(int n, const int64_t *sizes, const int64_t *strides, int nn,
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
    if (desc == NULL) /* the graph knows eager's strides (inductor_c/graph/strides.c) */
        return ic_value_strides(t->g, v, st);
    ic_val base = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
    PyObject *args = PyTuple_GET_ITEM(desc, 2);
    int64_t bs[IC_MAX_DIMS];
    if (name == NULL || !eager_strides(t, base, bs, depth + 1)) {
        (void)tc_clear_expected(PyExc_UnicodeError, PyExc_OverflowError);
        return 0;
    }
    ic_meta bm = *ic_value_meta(t->g, base);
    if (!strcmp(name, "narrow")) {
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
    if (!strcmp(name, "expand")) {
        int lead = m.ndim - bm.ndim;
        for (int i = 0; i < m.ndim; i++)
            st[i] = i < lead ? 0 : (bm.sizes[i - lead] == 1 && m.sizes[i] != 1) ? 0 : bs[i - lead];
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
        if (view_strides(bm.ndim, bm.sizes, bs, m.ndim, m.sizes, st))
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
    if (m.dyn || r.dyn || view_strides(m.ndim, m.sizes, st, r.ndim, r.sizes, ns))
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
    if (!view_strides(m.ndim, m.sizes, st, n, full, ns))
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
        out->val = ic_detach(t->g, out->val);
        if (out->val < 0)
            return sym_check_graph(t);
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

static int tensors_of(trace *t, const var *seq, ic_val *vals, int max, int *n) {
    var *items;
    int k;
    if (seq->kind != V_SEQ)
        return sym_fail(t, "expected a sequence of tensors");
    items = seq->items;
    k = seq->n;
    if (k < 1 || k > max)
        return sym_fail(t, "sequence of %d tensors not supported", k);
    for (int i = 0; i < k; i++) {
        var it = items[i];
        sym_resolve(t, &it);
        if (it.kind != V_TENSOR)
            return sym_fail(t, "expected tensors in the sequence");
        vals[i] = it.val;
    }
    *n = k;
    return 0;
}

static ic_val unsqueeze_val(trace *t, ic_val x, int dim) {
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
    return sym_reshape(t, x, n, sz);
}

/* cat(tensors, dim) / stack(tensors, dim) */
int sym_h_cat(trace *t, const opdef *d, var **p, var *out) {
    ic_val v[64];
    int n;
    long long dd = 0;
    if (tensors_of(t, p[0], v, 64, &n) < 0 ||
        (d->op < 2 && !sym_is_none(p[1]) && sym_get_int(t, p[1], &dd, "dim") < 0))
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
        /* ATen's legacy rule: 1-d empty tensors are skipped (a cache grown from
         * torch.tensor([]) by cat); they must not change the result dtype */
        int m = 0, nonempty = 0;
        for (int i = 0; i < n; i++) {
            const ic_meta *mi = sym_metap(t, v[i]);
            nonempty += !(mi->ndim == 1 && mi->sizes[0] == 0);
        }
        for (int i = 0; i < n && nonempty > 0 && nonempty < n; i++) {
            const ic_meta *mi = sym_metap(t, v[i]);
            if (mi->ndim == 1 && mi->sizes[0] == 0) {
                int same = 0;
                for (int j = 0; j < n; j++)
                    same |= j != i && sym_metap(t, v[j])->dtype == mi->dtype;
                if (!same)
                    return sym_fail(t, "cat: an empty 1-d tensor of another dtype");
                continue;
            }
            v[m++] = v[i];
        }
        if (nonempty > 0 && nonempty < n)
            n = m;
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
            v[i] = unsqueeze_val(t, v[i], dim);
    ic_val r = v[0];
    for (int i = 1; i < n; i++)
        r = ic_cat(t->g, r, v[i], dim);
    if (n == 1 && d->op != 1) /* cat of one tensor: a copy in its suggested memory format
                               * (eager: a transposed input gives a contiguous result) */
        return dh_layout_copy(t, r, ic_value_suggest_format(t->g, r), out);
    return sym_tensor_out(t, r, out);
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
    ic_val v[IC_MAX_DIMS];
    int n, xy = 0;
    if (tensors_of(t, seq, v, IC_MAX_DIMS, &n) < 0)
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
int sym_h_split(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long dd = 0, sizes[64];
    int dim, ns = 0;
    if (!sym_is_none(p[2]) && sym_get_int(t, p[2], &dd, "dim") < 0)
        return -1;
    if (sym_norm_dim(t, dd, m->ndim, &dim) < 0)
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "%s of a 0-d tensor", d->name);
    int64_t L = m->sizes[dim];
    if (p[1] == NULL)
        return sym_fail(t, "%s needs sizes", d->name);
    if (p[1]->kind == V_CONST && PyLong_Check(p[1]->obj)) {
        long long k = PyLong_AsLongLong(p[1]->obj);
        if (k <= 0)
            return sym_fail(t, "%s with a non-positive size (eager will raise)", d->name);
        long long each = d->op == 1 ? (L + k - 1) / k : k; /* chunk: ceil(L / chunks) */
        if (each <= 0)
            each = 1;
        for (long long at = 0; at < L && ns < 64; at += each)
            sizes[ns++] = at + each <= L ? each : L - at;
        if (L == 0)
            sizes[ns++] = 0;
    } else {
        int n;
        if (d->op == 1 || sym_get_ints(t, p[1], sizes, 64, &n, "split sizes") < 0)
            return -1;
        ns = n;
        long long sum = 0;
        for (int i = 0; i < n; i++)
            sum += sizes[i];
        if (sum != L)
            return sym_fail(t, "split sizes do not sum to the dim (eager will raise)");
    }
    var *items = sym_alloc(t, ns);
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
        if (!sym_is_none(p[2]) && sym_value_requires_grad(t, p[1]->val)) {
            /* training: rows of padding_idx get no gradient (eager's embedding_backward) */
            long long pad;
            if (sym_get_int(t, p[2], &pad, "padding_idx") < 0)
                return -1;
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
        if (!view_strides(bn, bs, xst[k], rn, isz1, ops[1 + k]))
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
            return sym_fail(t, "tensor index other than an integer tensor not supported yet");
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
int sym_index_parts(trace *t, const var *k, const var **parts, var *tmp) {
    int np = 0;
    if (k->kind == V_CONST && PyTuple_CheckExact(k->obj)) {
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

int sym_tensor_index(trace *t, const var *x_in, const var *k, var *out) {
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
        static const opdef tensor_def = {"tensor", W_TORCH, "data", sym_h_tensor, 0};
        var *tp[MAXP] = {(var *)q};
        if (sym_h_tensor(t, &tensor_def, tp, &lt[i]) < 0)
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
            v = unsqueeze_val(t, v, d);
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
                return sym_fail(t, "tensor index other than an integer tensor not supported yet");
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
            long long i0 = PyLong_AsLongLong(p->obj);
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
        for (int i = 0; i < t->nidx; i++)
            if (t->idx_src[i] == s && t->idx_bound[i] == bound) {
                t->idx_gather[i] &= (unsigned char)(gather != 0);
                return 0;
            }
        if (t->nidx >= 16)
            return sym_fail(t, "too many index tensors");
        t->idx_src[t->nidx] = s;
        t->idx_gather[t->nidx] = (unsigned char)(gather != 0);
        t->idx_bound[t->nidx++] = bound;
        return 0;
    }
    if (op == IC_OP_ARGMAX || op == IC_OP_ARGMIN)
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
    /* eager: flip keeps the input's layout (empty_like), roll's result is contiguous */
    ic_value_set_format(G, out->val, p[0]->val, d->op == 0 ? IC_MF_PRESERVE : IC_MF_CONTIGUOUS);
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
    if (m.sizes[dim] > 64)
        return sym_fail(t, "unbind into more than 64 tensors left to eager");
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
 * a returned input and for eager's strides (eager_strides). Static shapes, at most 64 taps. */
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
    if (size > 64)
        return sym_fail(t, "Tensor.unfold: more than 64 taps left to eager");
    int64_t nout = (n - size) / step + 1, sz[IC_MAX_DIMS];
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

