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
