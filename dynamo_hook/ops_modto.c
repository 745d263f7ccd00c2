/* ops_modto.c — nn.Module.to(...) inside traced code, as eager runs it when it converts
 * nothing: Module.to(dtype / device / both, non_blocking) returns the module itself, every
 * parameter and buffer unchanged (Tensor.to of a tensor already of that device and, for
 * floating-point and complex ones, that dtype returns it; `param.data = param` keeps it).
 * Each parameter and buffer is read through its guarded source, so a later call where one
 * would convert (model.half() between calls) fails the guards and retraces. A conversion
 * that would change a tensor, a tensor argument (to(other)), memory_format or non-constant
 * arguments: not captured, with a reason (the call then runs eagerly). */
#include "ops_internal.h"

static PyObject *module_to_fn; /* torch.nn.Module.to (kept) */
static PyObject *parse_to;     /* torch._C._nn._parse_to (kept) */

static int find_fns(void) {
    if (module_to_fn != NULL)
        return 1;
    PyObject *nn = PyImport_ImportModule("torch.nn");
    PyObject *mod = nn ? PyObject_GetAttrString(nn, "Module") : NULL;
    PyObject *to = mod ? PyObject_GetAttrString(mod, "to") : NULL;
    PyObject *cnn = PyImport_ImportModule("torch._C._nn");
    PyObject *pt = cnn ? PyObject_GetAttrString(cnn, "_parse_to") : NULL;
    Py_XDECREF(nn);
    Py_XDECREF(mod);
    Py_XDECREF(cnn);
    if (to == NULL || pt == NULL || !PyFunction_Check(to)) {
        Py_XDECREF(to);
        Py_XDECREF(pt);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return 0;
    }
    module_to_fn = to;
    parse_to = pt;
    return 1;
}

/* 1 when t.to(device, dtype) would make a new tensor (Module._apply's convert) */
static int converts(PyObject *tensor, PyObject *device, PyObject *dtype) {
    int r = 0;
    if (device != Py_None) {
        PyObject *d = PyObject_GetAttrString(tensor, "device");
        r = d == NULL ? -1 : PyObject_RichCompareBool(d, device, Py_NE);
        Py_XDECREF(d);
        if (r != 0)
            return r;
    }
    if (dtype != Py_None) {
        PyObject *fp = PyObject_CallMethod(tensor, "is_floating_point", NULL);
        PyObject *cx = fp ? PyObject_CallMethod(tensor, "is_complex", NULL) : NULL;
        PyObject *dt = cx ? PyObject_GetAttrString(tensor, "dtype") : NULL;
        if (dt == NULL)
            r = -1;
        else if (fp == Py_True || cx == Py_True)
            r = dt != dtype;
        Py_XDECREF(fp);
        Py_XDECREF(cx);
        Py_XDECREF(dt);
    }
    return r;
}

/* reads module.<dotted name> through guarded sources (the tensor's guards pin it) */
static int read_dotted(trace *t, const var *self, PyObject *dotted) {
    PyObject *dot = PyUnicode_FromString(".");
    PyObject *ps = dot ? PyUnicode_Split(dotted, dot, -1) : NULL;
    Py_XDECREF(dot);
    if (ps == NULL)
        return -1;
    var cur = *self;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ps) && rc == 0; i++) {
        var nx;
        PyObject *nm = sym_keep(t, Py_NewRef(PyList_GET_ITEM(ps, i)));
        rc = nm == NULL ? -1 : sym_load_attr(t, &cur, nm, &nx);
        cur = nx;
    }
    Py_DECREF(ps);
    if (rc == 0 && cur.kind != V_TENSOR && !sym_is_none(&cur))
        return sym_fail(t, "Module.to: %U read as a non-tensor", dotted);
    return rc;
}

/* 1: not Module.to (the caller goes on); 0: *out is the module; -1: failed */
int sym_module_to_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    const var *self;
    int first;
    if (fn->kind == V_METHOD && fn->items && fn->obj && PyFunction_Check(fn->obj)) {
        self = &fn->items[0];
        first = 0;
    } else if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION && fn->obj && nargs >= 1) {
        self = &args[0];
        first = 1;
    } else {
        return 1;
    }
    if (!find_fns() || fn->obj != module_to_fn || self->kind != V_OBJ || !sym_is_nn_module(self->obj))
        return 1;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    PyObject *pa = PyTuple_New(npos - first), *kw = nkw ? PyDict_New() : NULL, *parsed = NULL, *items = NULL;
    int rc = -1;
    if (pa == NULL || (nkw && kw == NULL))
        goto done;
    for (int i = first; i < nargs; i++) {
        if (args[i].kind != V_CONST) {
            rc = sym_fail(t, "Module.to with a %s argument not captured",
                          args[i].kind == V_TENSOR ? "tensor" : "non-constant");
            goto done;
        }
        if (i < npos)
            PyTuple_SET_ITEM(pa, i - first, Py_NewRef(args[i].obj));
        else if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i - npos), args[i].obj) < 0)
            goto done;
    }
    parsed = PyObject_Call(parse_to, pa, kw);
    if (parsed == NULL) {
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "Module.to: bad arguments (eager raises)");
        goto done;
    }
    if (!PyTuple_Check(parsed) || PyTuple_GET_SIZE(parsed) != 4) {
        rc = sym_fail(t, "Module.to: unexpected _parse_to result");
        goto done;
    }
    PyObject *device = PyTuple_GET_ITEM(parsed, 0), *dtype = PyTuple_GET_ITEM(parsed, 1);
    if (PyTuple_GET_ITEM(parsed, 3) != Py_None) {
        rc = sym_fail(t, "Module.to(memory_format=...) not captured");
        goto done;
    }
    if (dtype != Py_None) { /* eager: only floating point or complex dtypes */
        PyObject *f = PyObject_GetAttrString(dtype, "is_floating_point");
        PyObject *c = f ? PyObject_GetAttrString(dtype, "is_complex") : NULL;
        int ok = f == Py_True || c == Py_True;
        Py_XDECREF(f);
        Py_XDECREF(c);
        if (!ok) {
            (void)tc_clear_expected(PyExc_Exception); /* the dtype's attributes */
            rc = sym_fail(t, "Module.to with a non-floating dtype (eager raises)");
            goto done;
        }
    }
    /* every parameter and buffer, with its name under the module (eager's _apply order) */
    items = PyList_New(0);
    const char *which[2] = {"named_parameters", "named_buffers"};
    for (int k = 0; items && k < 2; k++) {
        PyObject *it = PyObject_CallMethod(self->obj, which[k], NULL);
        PyObject *l = it ? PySequence_List(it) : NULL;
        Py_XDECREF(it);
        if (l == NULL || PyList_SetSlice(items, PyList_GET_SIZE(items), PyList_GET_SIZE(items), l) < 0)
            Py_CLEAR(items);
        Py_XDECREF(l);
    }
    if (items == NULL) {
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "Module.to: its tensors could not be listed");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            rc = sym_fail(t, "Module.to: unexpected named_parameters item");
            goto done;
        }
        int c = converts(PyTuple_GET_ITEM(pair, 1), device, dtype);
        if (c != 0) {
            rc = c < 0 ? (tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "Module.to: a tensor could not be read"))
                       : sym_fail(t, "Module.to that converts %U (left to eager)", PyTuple_GET_ITEM(pair, 0));
            goto done;
        }
        if (read_dotted(t, self, PyTuple_GET_ITEM(pair, 0)) < 0)
            goto done;
    }
    *out = *self;
    rc = 0;
done:
    Py_XDECREF(pa);
    Py_XDECREF(kw);
    Py_XDECREF(parsed);
    Py_XDECREF(items);
    return rc;
}
