/* ops_models.c — small captures found breaking real models (issue 21's op list): dtype
 * queries answered at trace time (torch.result_type), numpy ufuncs of Python numbers
 * (np.sqrt(d_model) in a scale), torch.return_types results built by polyfills
 * (torchc/_polyfills.py: kthvalue, median), and Tensor methods with a polyfill (x.diag()).
 * The ops themselves are decompositions written in Python over ops the graph has.
 */
#include "ops_internal.h"

/* torch.result_type(tensor, other): a dtype, decided by the operands' dtypes, whether each
 * tensor is 0-d and the Python type of a number; asked of torch with an empty stand-in of
 * each tensor (same dtype, 0-d or 1-d), so the answer is eager's. */
int sym_h_result_type(trace *t, const opdef *d, var **p, var *out) {
    PyObject *a[2] = {NULL, NULL}, *r = NULL, *torch = PyImport_ImportModule("torch");
    int rc = -1;
    if (torch == NULL)
        return -1;
    for (int i = 0; i < 2; i++) {
        if (p[i] == NULL) {
            rc = sym_fail(t, "result_type: missing operand (eager will raise)");
            goto done;
        }
        if (p[i]->kind == V_TENSOR) {
            const ic_meta *m = sym_metap(t, p[i]->val);
            PyObject *dt = sym_dtype_object(m->dtype);
            if (dt == NULL) {
                rc = sym_fail(t, "result_type of a tensor of an unknown dtype");
                goto done;
            }
            PyObject *kw = Py_BuildValue("{s:O}", "dtype", dt);
            PyObject *shape = m->ndim == 0 ? PyTuple_New(0) : Py_BuildValue("(i)", 0);
            PyObject *args = shape ? PyTuple_Pack(1, shape) : NULL;
            PyObject *empty = PyObject_GetAttrString(torch, "empty");
            if (kw && args && empty)
                a[i] = PyObject_Call(empty, args, kw);
            Py_XDECREF(kw);
            Py_XDECREF(shape);
            Py_XDECREF(args);
            Py_XDECREF(empty);
            if (a[i] == NULL)
                goto done;
        } else if (p[i]->kind == V_CONST && (PyBool_Check(p[i]->obj) || PyLong_Check(p[i]->obj) ||
                                             PyFloat_Check(p[i]->obj))) {
            a[i] = Py_NewRef(p[i]->obj);
        } else {
            rc = sym_fail(t, "result_type of operands other than tensors and numbers");
            goto done;
        }
    }
    r = PyObject_CallMethod(torch, "result_type", "OO", a[0], a[1]);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "result_type raised (eager will raise)");
        goto done;
    }
    rc = sym_const(t, r, out);
done:
    Py_XDECREF(a[0]);
    Py_XDECREF(a[1]);
    Py_DECREF(torch);
    return rc;
}

/* o is a numpy ufunc (np.sqrt, np.log): known by its type's name, numpy is not imported */
int sym_is_np_ufunc(PyObject *o) {
    return o != NULL && !strcmp(Py_TYPE(o)->tp_name, "numpy.ufunc");
}

/* torch.get_default_dtype(), and np.sqrt(x) & co of Python numbers (ints, floats, bools, np.float64): computed now, a
 * constant, when the result is a float (np.float64, which torch takes as a Python float)
 * and finite (numpy would warn for a log(0) each call). 1: not that call. */
int sym_np_ufunc_call(trace *t, PyObject *f, const var *args, int nargs, PyObject *kwnames, var *out) {
    static PyObject *get_default_dtype;
    if (get_default_dtype == NULL) {
        PyObject *torch = PyImport_ImportModule("torch");
        get_default_dtype = torch ? PyObject_GetAttrString(torch, "get_default_dtype") : NULL; /* kept */
        Py_XDECREF(torch);
        if (get_default_dtype == NULL)
            (void)tc_clear_expected(PyExc_Exception);
    }
    if (f == get_default_dtype && f != NULL && nargs == 0) {
        /* torch.get_default_dtype(): the default dtype, guarded (set_default_dtype recompiles) */
        int dt = sym_default_dtype(t);
        PyObject *o = dt < 0 ? NULL : sym_dtype_object((ic_dtype)dt);
        if (o == NULL)
            return dt < 0 ? -1 : sym_fail(t, "get_default_dtype: an unknown dtype");
        return sym_const(t, Py_NewRef(o), out);
    }
    if (!sym_is_np_ufunc(f))
        return 1;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return sym_fail(t, "numpy ufunc with keyword arguments");
    PyObject *tup = PyTuple_New(nargs);
    if (tup == NULL)
        return -1;
    for (int i = 0; i < nargs; i++) {
        PyObject *o = args[i].kind == V_CONST ? args[i].obj : NULL;
        if (o == NULL || !(PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_Check(o))) {
            Py_DECREF(tup);
            return sym_fail(t, "numpy ufunc of values other than Python numbers");
        }
        PyTuple_SET_ITEM(tup, i, Py_NewRef(o));
    }
    PyObject *r = PyObject_Call(f, tup, NULL);
    Py_DECREF(tup);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "numpy ufunc raised (eager will raise)");
    }
    if (!PyFloat_Check(r) || !isfinite(PyFloat_AS_DOUBLE(r))) {
        Py_DECREF(r);
        return sym_fail(t, "numpy ufunc with a result other than a finite float");
    }
    return sym_const(t, r, out);
}

/* Device and build queries whose answer cannot change while the process runs
 * (torch.cuda.is_available(), torch.cuda.get_device_capability(dev), ...): called now with
 * constant arguments, the answer a constant, as Dynamo folds them. Tracing into them would
 * reach torch._C builtins (_cuda_isInBadFork) and break the graph. Not these: anything
 * that reads state user code can change (current_device, is_initialized, memory). 1: not
 * one of them. */
int sym_process_const_call(trace *t, PyObject *f, const var *args, int nargs, PyObject *kwnames, var *out) {
    static const char *const where[][2] = {
        {"torch.cuda", "is_available"}, {"torch.cuda", "device_count"},
        {"torch.cuda", "get_device_capability"}, {"torch.cuda", "get_device_name"},
        {"torch.cuda", "is_bf16_supported"}, {"torch.cuda", "get_arch_list"},
        {"torch.backends.cudnn", "is_available"}, {"torch.backends.mps", "is_available"},
        {"torch.backends.mps", "is_built"}, {"torch.mps", "is_available"},
        {"torch.xpu", "is_available"}, {"torch.xpu", "device_count"},
        {"torch.distributed", "is_available"}, {"torch.accelerator", "is_available"},
        {"torch.accelerator", "device_count"},
        /* pure functions of their arguments: the pattern cache is the only state they touch */
        {"re", "match"}, {"re", "search"}, {"re", "fullmatch"}, {"re", "sub"}, {"re", "subn"},
        {"re", "split"}, {"re", "findall"}, {"re", "compile"}, {"re", "escape"}};
    enum { N = sizeof where / sizeof where[0] };
    static PyObject *fns[N];
    static int inited;
    if (f == NULL || !PyFunction_Check(f))
        return 1;
    if (!inited) {
        inited = 1;
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        for (int i = 0; i < N; i++) {
            fns[i] = dh_loaded_attr(where[i][0], where[i][1]); /* kept for the process */
            (void)tc_clear_expected(PyExc_Exception);
        }
        PyErr_Restore(et, ev, etb);
    }
    int k = 0;
    while (k < N && fns[k] != f)
        k++;
    if (k == N)
        return 1;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *tup = PyTuple_New(nargs - nkw), *kw = nkw ? PyDict_New() : NULL;
    if (tup == NULL || (nkw && kw == NULL)) {
        Py_XDECREF(tup);
        Py_XDECREF(kw);
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        PyObject *o = args[i].kind == V_CONST ? args[i].obj : NULL;
        if (o == NULL) {
            Py_DECREF(tup);
            Py_XDECREF(kw);
            return 1; /* a value not known now: traced as any function */
        }
        if (i < nargs - nkw)
            PyTuple_SET_ITEM(tup, i, Py_NewRef(o));
        else if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i - (nargs - nkw)), o) < 0) {
            Py_DECREF(tup);
            Py_DECREF(kw);
            return -1;
        }
    }
    PyObject *r = PyObject_Call(f, tup, kw);
    Py_DECREF(tup);
    Py_XDECREF(kw);
    if (r == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return -1;
        return sym_fail(t, "%s.%s() raised (eager will raise)", where[k][0], where[k][1]);
    }
    return sym_const(t, r, out);
}

/* torch.return_types.X((values, indices)) (a polyfill's named result): a sequence of the
 * type, as ops give (ops_reduce.c sym_return_pair). 1: not that call. */
int sym_return_types_call(trace *t, PyObject *f, const var *args, int nargs, PyObject *kwnames, var *out) {
    if (f == NULL || !PyType_Check(f) || strncmp(((PyTypeObject *)f)->tp_name, "torch.return_types.", 19) ||
        (((PyTypeObject *)f)->tp_flags & Py_TPFLAGS_HEAPTYPE))
        return 1;
    if (nargs != 1 || kwnames != NULL || args[0].kind != V_SEQ || args[0].n < 1)
        return sym_fail(t, "%s() of other than a sequence", ((PyTypeObject *)f)->tp_name);
    var *items = sym_alloc(t, args[0].n);
    if (items == NULL)
        return -1;
    for (int i = 0; i < args[0].n; i++)
        items[i] = args[0].items[i];
    *out = sym_var(V_SEQ);
    out->n = args[0].n;
    out->items = items;
    out->obj = f;
    return 0;
}

/* torch.div(a, b[, rounding_mode]) & co of two Python numbers (constants): eager makes both
 * 0-d tensors and returns one (longformer: torch.div(seq_len, 2 * w, rounding_mode="trunc")
 * as a view's size): computed now by torch itself, the graph holds the 0-d constant (its
 * value usable as an int, sym_get_int). 1: not two constant numbers. */
int sym_numbers_op(trace *t, const opdef *d, var **p, int nkw, const char *const *kwn, var *out) {
    for (int i = 0; i < 2; i++)
        if (p[i] == NULL || p[i]->kind != V_CONST ||
            !(PyBool_Check(p[i]->obj) || PyLong_CheckExact(p[i]->obj) || PyFloat_CheckExact(p[i]->obj)))
            return 1;
    PyObject *torch = PyImport_ImportModule("torch"), *fn = NULL, *args = NULL, *kw = NULL, *r = NULL;
    int rc = -1;
    if (torch == NULL)
        return -1;
    fn = PyObject_GetAttrString(torch, d->name);
    args = PyTuple_Pack(2, p[0]->obj, p[1]->obj);
    kw = PyDict_New();
    if (fn == NULL || args == NULL || kw == NULL)
        goto done;
    for (int i = 0; i < nkw; i++) {
        const var *v = p[2 + i];
        if (v == NULL || sym_is_none(v))
            continue;
        if (v->kind != V_CONST) {
            rc = sym_fail(t, "%s of two numbers with a non-constant %s", d->name, kwn[i]);
            goto done;
        }
        if (PyDict_SetItemString(kw, kwn[i], v->obj) < 0)
            goto done;
    }
    r = PyObject_Call(fn, args, kw);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "%s of two numbers raised (eager will raise)", d->name);
        goto done;
    }
    PyObject *dto = PyObject_GetAttrString(r, "dtype"), *item = PyObject_CallMethod(r, "item", NULL);
    int dt = dto ? sym_dtype_from_object(dto) : -1;
    Py_XDECREF(dto);
    if (item == NULL || dt < 0 || PyComplex_Check(item)) {
        Py_XDECREF(item);
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "%s of two numbers: an unsupported result", d->name);
        goto done;
    }
    double x = PyFloat_AsDouble(item);
    int exact = PyFloat_Check(item) || (PyLong_Check(item) && (double)PyLong_AsLongLong(item) == x &&
                                        fabs(x) < 9007199254740992.0);
    ic_dtype k = PyBool_Check(item) ? IC_BOOL : PyFloat_Check(item) ? IC_F64 : IC_I64;
    Py_DECREF(item);
    if (PyErr_Occurred() || !exact) {
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "%s of two numbers: a result a double does not hold", d->name);
        goto done;
    }
    rc = sym_tensor_out(t, ic_cast(G, ic_scalar(G, x, k), (ic_dtype)dt), out);
done:
    Py_XDECREF(r);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(fn);
    Py_DECREF(torch);
    return rc;
}

/* A 0-d integer tensor whose value the graph knows (a constant built from numbers:
 * torch.div of two numbers, torch.tensor(3)), where an int is wanted (a view's size: eager
 * calls its __index__). 1 with *out set; 0: not such a tensor. */
int sym_const_int_tensor(trace *t, const var *v, long long *out) {
    if (v == NULL || v->kind != V_TENSOR)
        return 0;
    const ic_meta *m = sym_metap(t, v->val);
    double lo, hi;
    if (m->ndim != 0 || m->dyn || (m->dtype != IC_I64 && m->dtype != IC_I32) ||
        !ic_value_int_range(G, v->val, &lo, &hi) || lo != hi)
        return 0;
    *out = (long long)lo;
    return 1;
}

/* x.as_strided(size, stride, storage_offset=None) / torch.as_strided: the elements at
 * storage_offset + sum(i_k * stride_k) of x's storage, when that storage is known: x is a
 * tensor computed in the graph (no input's storage: its offset and extent are the caller's),
 * or a view of one by reshape/permute/expand/unfold (storage offset 0), and that tensor is
 * contiguous in eager (its storage is its elements in order). One index_select of the
 * positions; a view of x with the given strides, as eager's. Positions past the storage
 * (eager raises) and negative strides are left to eager. */
int sym_h_as_strided(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    long long sz[IC_MAX_DIMS], st[IC_MAX_DIMS], off = 0;
    int n, ns;
    if (sym_get_ints(t, p[1], sz, IC_MAX_DIMS, &n, "size") < 0 ||
        sym_get_ints(t, p[2], st, IC_MAX_DIMS, &ns, "stride") < 0)
        return -1;
    if (n != ns)
        return sym_fail(t, "as_strided: size and stride of different lengths (eager will raise)");
    if (p[3] && !sym_is_none(p[3]) && sym_get_int(t, p[3], &off, "storage_offset") < 0)
        return -1;
    ic_val x = p[0]->val, v = x;
    if (sym_metap(t, x)->dyn)
        return sym_fail(t, "as_strided of a tensor of symbolic shape");
    for (int depth = 0;; depth++) {
        PyObject *desc = v < t->capvals ? t->view_desc[v] : NULL;
        if (desc == NULL)
            break;
        if (depth == 256)
            return sym_fail(t, "as_strided: a chain of views too long");
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
        if (name == NULL)
            return -1;
        if (strcmp(name, "reshape") && strcmp(name, "permute") && strcmp(name, "expand") && strcmp(name, "unfold"))
            return sym_fail(t, "as_strided of a view at a storage offset (%s) left to eager", name);
        v = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
    }
    if (ic_value_op(G, v) == IC_OP_INPUT || sym_is_view_of_input(t, v))
        return sym_fail(t, "as_strided of an input's storage left to eager");
    ic_meta rm = *sym_metap(t, v);
    int64_t rs[IC_MAX_DIMS], numel = 1;
    if (rm.dyn || !sym_eager_strides(t, v, rs))
        return sym_fail(t, "as_strided: the storage's layout is not known");
    for (int i = rm.ndim - 1; i >= 0; i--) {
        if (rm.sizes[i] != 1 && rs[i] != numel)
            return sym_fail(t, "as_strided of a storage that is not contiguous left to eager");
        numel *= rm.sizes[i];
    }
    int64_t last = off, count = 1, s64[IC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (sz[i] < 0 || st[i] < 0)
            return sym_fail(t, "as_strided: negative sizes or strides (eager will raise)");
        count *= sz[i];
        last += (sz[i] - 1) * st[i];
        s64[i] = sz[i];
    }
    if (off < 0 || (count > 0 && last >= numel))
        return sym_fail(t, "as_strided: positions past the storage (eager will raise)");
    ic_val r;
    ic_val flat = ic_reshape(G, v, 1, &numel);
    if (count == 0) {
        r = ic_reshape(G, ic_slice(G, flat, 0, 0, 0, 1), n, s64);
    } else {
        ic_val idx = ic_scalar(G, (double)off, IC_I64);
        for (int i = 0; i < n; i++) {
            int64_t one[IC_MAX_DIMS];
            for (int k = 0; k < n; k++)
                one[k] = k == i ? sz[i] : 1;
            ic_val a = ic_reshape(G, ic_arange(G, sz[i], 0, (double)st[i], IC_I64), n, one);
            idx = ic_binary(G, IC_OP_ADD, idx, a);
        }
        idx = ic_reshape(G, ic_expand(G, idx, n, s64), 1, &count);
        r = ic_reshape(G, ic_index_select(G, flat, 0, idx), n, s64);
    }
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "as_strided failed");
    PyObject *szt = PyTuple_New(n), *stt = PyTuple_New(n);
    for (int i = 0; szt && stt && i < n; i++) {
        PyTuple_SET_ITEM(szt, i, PyLong_FromLongLong(sz[i]));
        PyTuple_SET_ITEM(stt, i, PyLong_FromLongLong(st[i]));
    }
    if (szt == NULL || stt == NULL) {
        Py_XDECREF(szt);
        Py_XDECREF(stt);
        return -1;
    }
    return sym_view_out_desc(t, p[0], r, out, "as_strided", Py_BuildValue("(NNL)", szt, stt, off));
}

/* ATen's linspace_from_neg_one (AffineGridGenerator.cpp): linspace(-1, 1, n) in dt, times
 * (n - 1) / n without align_corners; a 0 for one step */
static ic_val lin_neg_one(trace *t, int64_t n, ic_dtype dt, int ac) {
    if (n <= 1) return ic_cast(G, ic_scalar(G, 0.0, IC_F64), dt);
    double step = dt == IC_F32 ? (double)(2.0f / (float)(n - 1)) : 2.0 / (double)(n - 1);
    ic_val idx = ic_arange(G, n, 0.0, 1.0, dt);
    ic_val lo = ic_binary(G, IC_OP_ADD, ic_scalar(G, -1.0, IC_F64), ic_binary(G, IC_OP_MUL, ic_scalar(G, step, IC_F64), idx));
    ic_val back = ic_binary(G, IC_OP_SUB, ic_scalar(G, (double)(n - 1), IC_F64), idx);
    ic_val hi = ic_binary(G, IC_OP_SUB, ic_scalar(G, 1.0, IC_F64), ic_binary(G, IC_OP_MUL, ic_scalar(G, step, IC_F64), back));
    ic_val r = ic_where(G, ic_binary(G, IC_OP_LT, idx, ic_scalar(G, (double)(n / 2), IC_F64)), lo, hi);
    if (!ac) r = ic_binary(G, IC_OP_DIV, ic_binary(G, IC_OP_MUL, r, ic_scalar(G, (double)(n - 1), IC_I64)), ic_scalar(G, (double)n, IC_I64));
    return r;
}

/* torch.affine_grid_generator(theta, size, align_corners) (what F.affine_grid calls after its
 * checks), as ATen computes it: a base grid [N, (D,) H, W, k+1] of the normalized coordinates
 * (x, y (, z), 1), batched-matmul'd with theta transposed -> [N, (D,) H, W, k]; its gradient
 * (theta's) is bmm's */
int sym_h_affine_grid_generator(trace *t, const opdef *d, var **p, var *out) {
    long long sz[5];
    int n = 0, ac;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_get_ints(t, p[1], sz, 5, &n, "size") < 0 ||
        sym_get_bool(t, p[2], 0, &ac, "align_corners") < 0)
        return -1;
    const ic_meta m = *sym_metap(t, p[0]->val);
    int k = n - 2; /* spatial dims: 2 or 3 */
    if ((n != 4 && n != 5) || m.ndim != 3 || m.dyn || m.sizes[0] != sz[0] || m.sizes[1] != k || m.sizes[2] != k + 1 ||
        (m.dtype != IC_F32 && m.dtype != IC_F64))
        return sym_fail(t, "affine_grid_generator: theta of another shape or dtype left to eager");
    for (int i = 0; i < n; i++)
        if (sz[i] <= 0) return sym_fail(t, "affine_grid_generator: empty size left to eager");
    ic_dtype dt = (ic_dtype)m.dtype;
    int64_t sp[3], bs[5]; /* the spatial sizes (D,) H, W; the base grid's shape */
    int64_t cells = 1;
    for (int i = 0; i < k; i++) sp[i] = sz[2 + i], cells *= sp[i];
    for (int i = 0; i < k; i++) bs[i] = sp[i];
    bs[k] = 1;
    ic_val parts = IC_NONE;
    for (int c = 0; c <= k; c++) { /* channel c: x (W, the last spatial dim), y (H), z (D), ones */
        int ax = k - 1 - c; /* the spatial dim this channel runs along (none for the ones) */
        int64_t shp[4];
        for (int i = 0; i < k; i++) shp[i] = i == ax ? sp[ax] : 1;
        shp[k] = 1;
        ic_val v = c == k ? ic_cast(G, ic_scalar(G, 1.0, IC_F64), dt) : lin_neg_one(t, sp[ax], dt, ac);
        v = ic_expand(G, ic_reshape(G, v, k + 1, shp), k + 1, bs);
        parts = c == 0 ? v : ic_cat(G, parts, v, k);
    }
    int64_t b3[3] = {1, cells, k + 1}, e3[3] = {sz[0], cells, k + 1};
    ic_val base = ic_expand(G, ic_reshape(G, parts, 3, b3), 3, e3);
    ic_val ab[2] = {base, ic_permute(G, p[0]->val, (int[]){0, 2, 1})};
    ic_val r = ic_extern(G, IC_EXT_BMM, 2, ab, 0, NULL, 1, 1);
    int64_t os[5] = {sz[0]};
    for (int i = 0; i < k; i++) os[1 + i] = sp[i];
    os[k + 1] = k;
    r = r < 0 ? r : ic_reshape(G, r, k + 2, os);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "affine_grid_generator failed");
    return sym_tensor_out(t, r, out);
}

/* torch.grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) (what
 * F.grid_sample calls after checking its arguments): ATen's kernel as an extern node
 * (IC_EXT_GRID_SAMPLE; its gradients by ATen's backward kernel, graph/vjp_extern.c). Under
 * autocast it is left to eager (CUDA's float32 list). */
int sym_h_grid_sampler(trace *t, const opdef *d, var **p, var *out) {
    long long mode, pad;
    int ac;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 ||
        sym_get_int(t, p[2], &mode, "interpolation_mode") < 0 || sym_get_int(t, p[3], &pad, "padding_mode") < 0 ||
        sym_get_bool(t, p[4], 0, &ac, "align_corners") < 0)
        return -1;
    if (p[4] == NULL || sym_is_none(p[4]))
        return sym_fail(t, "grid_sampler: align_corners is required (eager will raise)");
    if (dh_tl_autocast && dh_autocast_op_affected("grid_sampler"))
        return sym_fail(t, "grid_sampler under autocast left to eager");
    ic_val in[2] = {p[0]->val, p[1]->val};
    int64_t prm[3] = {mode, pad, ac};
    ic_val r = ic_extern(G, IC_EXT_GRID_SAMPLE, 2, in, 3, prm, 1, 1);
    if (r < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "grid_sampler failed");
    return sym_tensor_out(t, r, out);
}
