/* obj_func.c — library callables implemented in C, traced through Python stand-ins
 * (torchc/_polyfills.py: itertools, functools.reduce/wraps, operator), and functools.partial.
 *
 * A call of a callable listed in _polyfills.POLYFILLS inlines the listed Python function
 * instead (a constant: the callable is guarded like any other, the polyfill is torchc's own).
 * A call of an object whose type is listed in _polyfills.CALLS (functools.partial passed in or
 * read from a global) inlines that function with the object as its first argument: its
 * attributes are read through guarded sources.
 *
 * functools.partial(f, *a, **k) made inside the trace is a V_FUNC of op SYM_PARTIAL:
 * items[0] the function, items[1 .. n-1] the bound positional then keyword values,
 * items[n] a constant tuple of the keyword names, pos the keyword count. Calling it calls
 * items[0] with the bound values first, as eager. It cannot leave the trace (sym_output fails
 * it, like a nested function): a caller that sees it gets eager's.
 *
 * Requires: the polyfill table importable (torchc is); else nothing is polyfilled.
 * Returns:  1 from the entry points where the callable is not theirs.
 */
#include "sym.h"
#include "sym_interp.h"
#include "ops_internal.h"

#include <string.h>

static PyObject *polyfills, *calls, *partial_type, *recompute_fn;
static PyObject *compiling_query; /* _polyfills.COMPILING_QUERY_TO_EAGER: code -> reason (NULL: none) */
static PyObject *left_fn, *unroll_fn; /* _polyfills.left_to_eager, rnn_unroll_steps (NULL: none) */
static int inited;

static int init_once(void) {
    if (inited)
        return polyfills ? 0 : -1;
    inited = 1;
    PyObject *m = PyImport_ImportModule("torchc._polyfills");
    polyfills = m ? PyObject_GetAttrString(m, "POLYFILLS") : NULL; /* kept for the process */
    calls = m ? PyObject_GetAttrString(m, "CALLS") : NULL;
    recompute_fn = m ? PyObject_GetAttrString(m, "recompute_region") : NULL;
    left_fn = m ? PyObject_GetAttrString(m, "left_to_eager") : NULL;
    unroll_fn = m ? PyObject_GetAttrString(m, "rnn_unroll_steps") : NULL;
    compiling_query = m ? PyObject_GetAttrString(m, "COMPILING_QUERY_TO_EAGER") : NULL;
    if (compiling_query != NULL && !PyDict_Check(compiling_query))
        Py_CLEAR(compiling_query);
    if (left_fn == NULL || unroll_fn == NULL) {
        Py_CLEAR(left_fn);
        Py_CLEAR(unroll_fn);
        (void)tc_clear_expected(PyExc_AttributeError);
    }
    PyObject *ft = PyImport_ImportModule("functools");
    partial_type = ft ? PyObject_GetAttrString(ft, "partial") : NULL;
    Py_XDECREF(m);
    Py_XDECREF(ft);
    if (polyfills == NULL || calls == NULL || partial_type == NULL || recompute_fn == NULL ||
        !PyDict_Check(polyfills) || !PyDict_Check(calls)) {
        (void)tc_clear_expected(PyExc_Exception); /* no polyfills: those calls fail the trace as before */
        Py_CLEAR(polyfills);
        Py_CLEAR(calls);
        Py_CLEAR(recompute_fn);
        return -1;
    }
    return 0;
}

/* torch.compiler.is_compiling() asked by the frame being interpreted: 0, or the trace stops
 * (-1 from sym_fail) where that frame's code is listed in COMPILING_QUERY_TO_EAGER (code that
 * would choose another computation than eager's on the answer) */
int sym_obj_compiling_query(trace *t) {
    if (init_once() < 0 || compiling_query == NULL || t->nframes <= 0 || t->frames[t->nframes - 1] == NULL)
        return 0;
    PyObject *why = PyDict_GetItemWithError(compiling_query, (PyObject *)t->frames[t->nframes - 1]->code);
    if (why == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return sym_fail(t, "%S", why);
}

/* the polyfill of callable c (borrowed), or NULL */
static PyObject *lookup(PyObject *table, PyObject *c) {
    PyObject *r = PyDict_GetItemWithError(table, c);
    if (r == NULL)
        (void)tc_clear_expected(PyExc_TypeError); /* unhashable: not listed */
    return r != NULL && PyFunction_Check(r) ? r : NULL;
}

static int make_partial(trace *t, var *args, int nargs, PyObject *kwnames, var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs - nkw < 1)
        return sym_fail(t, "functools.partial() without a function (eager will raise)");
    var *items = sym_alloc(t, nargs + 1);
    if (items == NULL)
        return -1;
    memcpy(items, args, (size_t)nargs * sizeof(var));
    if (sym_const(t, kwnames ? Py_NewRef(kwnames) : PyTuple_New(0), &items[nargs]) < 0)
        return -1;
    *out = sym_var(V_FUNC);
    out->op = SYM_PARTIAL;
    out->items = items;
    out->n = nargs;
    out->pos = nkw;
    return 0;
}

/* p(*args, **kw) of a SYM_PARTIAL: items[0](*bound, *args, **bound_kw, **kw); a keyword
 * given again overrides the bound one, as eager */
int sym_partial_call(trace *t, const var *p, var *args, int nargs, PyObject *kwnames, var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    PyObject *bkw = p->items[p->n].obj;
    int nbkw = p->pos, nbpos = p->n - 1 - nbkw;
    var *all = sym_alloc(t, nbpos + npos + nbkw + nkw);
    PyObject *names = PyList_New(0), *tup = NULL;
    if (all == NULL || names == NULL)
        goto error;
    int k = 0;
    for (int i = 0; i < nbpos; i++)
        all[k++] = p->items[1 + i];
    for (int i = 0; i < npos; i++)
        all[k++] = args[i];
    for (int i = 0; i < nbkw; i++) {
        PyObject *nm = PyTuple_GET_ITEM(bkw, i);
        int over = 0;
        for (int j = 0; j < nkw; j++)
            over |= PyUnicode_Compare(nm, PyTuple_GET_ITEM(kwnames, j)) == 0;
        if (over)
            continue;
        all[k++] = p->items[1 + nbpos + i];
        if (PyList_Append(names, nm) < 0)
            goto error;
    }
    for (int j = 0; j < nkw; j++) {
        all[k++] = args[npos + j];
        if (PyList_Append(names, PyTuple_GET_ITEM(kwnames, j)) < 0)
            goto error;
    }
    tup = PyList_AsTuple(names);
    Py_CLEAR(names);
    if (tup == NULL || sym_keep(t, tup) == NULL)
        return -1;
    return sym_call(t, &p->items[0], all, k, PyTuple_GET_SIZE(tup) ? tup : NULL, out);
error:
    Py_XDECREF(names);
    return -1;
}

/* inspect.signature(obj.method) of a plain method of a guarded object: a constant (the
 * object's type is guarded, so the class attribute found is too) */
static int signature_of_method(trace *t, PyObject *signature, const var *a, var *out) {
    if ((a->kind == V_OBJ || a->kind == V_CONST) && a->obj != NULL && PyMethod_Check(a->obj) &&
        PyFunction_Check(PyMethod_GET_FUNCTION(a->obj))) {
        /* a bound method object read from a source: its __func__ guarded */
        static PyObject *s_func;
        if (s_func == NULL && (s_func = PyUnicode_InternFromString("__func__")) == NULL)
            return -1;
        int s = a->src >= 0 ? sym_source(t, DH_S_ATTR, a->src, 2, s_func) : -1;
        if (a->src >= 0 && (s < 0 || sym_guard_id(t, s, PyMethod_GET_FUNCTION(a->obj)) < 0))
            return -1;
        PyObject *sig = PyObject_CallOneArg(signature, a->obj);
        if (sig == NULL)
            return tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "inspect.signature raised");
        return sym_const(t, sig, out);
    }
    if (a->kind != V_METHOD || a->items == NULL || a->obj == NULL ||
        (a->items[0].kind != V_OBJ && a->items[0].kind != V_CONST) || a->items[0].obj == NULL)
        return 1;
    PyObject *self = a->items[0].obj, *fn = a->obj;
    if (PyUnicode_Check(fn))
        fn = _PyType_Lookup(Py_TYPE(self), fn);
    if (fn == NULL || !PyFunction_Check(fn))
        return 1;
    PyObject *m = PyMethod_New(fn, self);
    PyObject *sig = m ? PyObject_CallOneArg(signature, m) : NULL;
    Py_XDECREF(m);
    if (sig == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return -1;
        return sym_fail(t, "inspect.signature raised");
    }
    return sym_const(t, sig, out);
}

/* the polyfill pf is being interpreted (a frame of the trace runs its code), and not only
 * outside a checkpoint region (user code inside recompute_region, called by the checkpoint
 * polyfill, may call checkpoint again: nested regions) */
static int in_polyfill(trace *t, PyObject *pf) {
    for (int i = t->nframes - 1; i >= 0; i--) {
        if (t->frames[i] == NULL)
            continue;
        PyObject *code = (PyObject *)t->frames[i]->code;
        if (code == PyFunction_GET_CODE(pf))
            return 1;
        if (recompute_fn != NULL && code == PyFunction_GET_CODE(recompute_fn))
            return 0;
    }
    return 0;
}

int sym_obj_polyfill(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (fn->kind != V_FUNC || fn->obj == NULL || init_once() < 0)
        return 1;
    /* a polyfill's questions to the tracer: left_to_eager(reason) stops the trace (a break
     * at the polyfilled call, which eager runs); rnn_unroll_steps() is the setting's value */
    if (left_fn != NULL && fn->obj == left_fn)
        return nargs == 1 && kwnames == NULL && args[0].kind == V_CONST && PyUnicode_Check(args[0].obj)
                   ? sym_fail(t, "%U", args[0].obj)
                   : sym_fail(t, "a polyfill left the call to eager");
    if (unroll_fn != NULL && fn->obj == unroll_fn && nargs == 0)
        return sym_const(t, PyLong_FromLong(dh_limit.rnn_unroll_steps), out);
    if (nargs == 1 && kwnames == NULL && sym_is_inspect_signature(fn->obj)) {
        int rc = signature_of_method(t, fn->obj, &args[0], out);
        if (rc != 1)
            return rc;
    }
    if (fn->obj == partial_type)
        return make_partial(t, args, nargs, kwnames, out);
    PyObject *pf = lookup(polyfills, fn->obj);
    if (pf == NULL || in_polyfill(t, pf)) /* the polyfill calls the original: traced as written */
        return 1;
    /* a source of its own: the polyfill's globals are read through it (DH_S_GLOBAL) */
    int s = sym_source(t, DH_S_CONST, -1, 0, pf);
    return s < 0 ? -1 : sym_inline(t, pf, s, NULL, args, nargs, kwnames, out);
}

int sym_obj_inline_named(trace *t, const char *name, var *args, int nargs, var *out) {
    if (init_once() < 0)
        return sym_fail(t, "torchc._polyfills not importable");
    PyObject *m = PyImport_ImportModule("torchc._polyfills");
    PyObject *pf = m ? PyObject_GetAttrString(m, name) : NULL;
    Py_XDECREF(m);
    if (pf == NULL || !PyFunction_Check(pf)) {
        Py_XDECREF(pf);
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "torchc._polyfills.%s missing", name);
    }
    PyObject *kept = sym_keep(t, pf); /* alive with the trace */
    if (kept == NULL)
        return -1;
    int s = sym_source(t, DH_S_CONST, -1, 0, kept);
    return s < 0 ? -1 : sym_inline(t, kept, s, NULL, args, nargs, NULL, out);
}

int sym_obj_is_recompute_region(PyObject *func) {
    return init_once() == 0 && func == recompute_fn;
}

int sym_obj_is_special_func(PyObject *func) {
    if (init_once() < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return 1; /* unknown: identity-guarded, as before */
    }
    return func == recompute_fn || func == left_fn || func == unroll_fn || lookup(polyfills, func) != NULL;
}

/* a Python function listed in POLYFILLS (torch.optim.Optimizer.zero_grad, whose
 * _disable_dynamo wrapper would break the graph): its polyfill inlined in its place, with
 * self. 1: not listed, or the polyfill is being interpreted already (it calls the original
 * for what it leaves to eager: that call is traced as written, and breaks). */
int sym_obj_polyfill_func(trace *t, PyObject *func, const var *self, var *args, int nargs,
                          PyObject *kwnames, var *out) {
    if (init_once() < 0)
        return 1;
    PyObject *pf = lookup(polyfills, func);
    if (pf == NULL)
        return 1;
    if (in_polyfill(t, pf))
        return 1;
    int s = sym_source(t, DH_S_CONST, -1, 0, pf);
    return s < 0 ? -1 : sym_inline(t, pf, s, self, args, nargs, kwnames, out);
}

/* a functools.partial object passed in or read from a global (identity-guarded by sym_wrap):
 * its func, args and keywords read through sources, then called as a SYM_PARTIAL */
static int call_partial_object(trace *t, const var *o, var *args, int nargs, PyObject *kwnames, var *out) {
    static PyObject *s_func, *s_args, *s_kw;
    if (s_func == NULL && ((s_func = PyUnicode_InternFromString("func")) == NULL ||
                           (s_args = PyUnicode_InternFromString("args")) == NULL ||
                           (s_kw = PyUnicode_InternFromString("keywords")) == NULL))
        return -1;
    PyObject *pa = PyObject_GetAttr(o->obj, s_args), *pk = PyObject_GetAttr(o->obj, s_kw);
    PyObject *pfn = PyObject_GetAttr(o->obj, s_func), *names = NULL;
    int rc = -1;
    if (pa == NULL || pk == NULL || pfn == NULL || !PyTuple_Check(pa) || !PyDict_Check(pk)) {
        if (tc_clear_expected(PyExc_AttributeError) < 0)
            goto done;
        rc = sym_fail(t, "a functools.partial without func/args/keywords");
        goto done;
    }
    Py_ssize_t na = PyTuple_GET_SIZE(pa), nk = PyDict_GET_SIZE(pk);
    int fs = sym_source(t, DH_S_ATTR, o->src, 2, s_func);
    int as = sym_source(t, DH_S_ATTR, o->src, 2, s_args);
    int ks = sym_source(t, DH_S_ATTR, o->src, 2, s_kw);
    var *items = sym_alloc(t, (int)(1 + na + nk + 1));
    names = PyTuple_New(nk);
    if (fs < 0 || as < 0 || ks < 0 || items == NULL || names == NULL || sym_keep(t, Py_NewRef(names)) == NULL)
        goto done;
    if (sym_wrap(t, pfn, fs, &items[0]) < 0 || sym_guard_len(t, as, (int)na) < 0 ||
        sym_guard_len(t, ks, (int)nk) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < na; i++) {
        int is = sym_source(t, DH_S_ITEM, as, i, NULL);
        if (is < 0 || sym_wrap(t, PyTuple_GET_ITEM(pa, i), is, &items[1 + i]) < 0)
            goto done;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *k, *v;
    while (PyDict_Next(pk, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k) || sym_guard_key(t, ks, pk, k) < 0) {
            if (!PyErr_Occurred())
                sym_fail(t, "a functools.partial with a non-str keyword");
            goto done;
        }
        int is = sym_source(t, DH_S_ITEM, ks, -1, k);
        if (is < 0 || sym_wrap(t, v, is, &items[1 + na + i]) < 0)
            goto done;
        PyTuple_SET_ITEM(names, i++, Py_NewRef(k));
    }
    if (sym_const(t, Py_NewRef(names), &items[1 + na + nk]) < 0)
        goto done;
    var p = sym_var(V_FUNC);
    p.op = SYM_PARTIAL;
    p.items = items;
    p.n = (int)(1 + na + nk);
    p.pos = (int)nk;
    rc = sym_partial_call(t, &p, args, nargs, kwnames, out);
done:
    Py_XDECREF(pa);
    Py_XDECREF(pk);
    Py_XDECREF(pfn);
    Py_XDECREF(names);
    return rc;
}

int sym_obj_call_polyfill(trace *t, const var *o, var *args, int nargs, PyObject *kwnames, var *out) {
    if (o->obj == NULL || init_once() < 0)
        return 1;
    if (Py_TYPE(o->obj) == (PyTypeObject *)partial_type) {
        if (o->src < 0)
            return sym_fail(t, "call of a functools.partial without a source");
        return call_partial_object(t, o, args, nargs, kwnames, out);
    }
    PyObject *pf = lookup(calls, (PyObject *)Py_TYPE(o->obj));
    if (pf == NULL)
        return 1;
    if (o->src < 0)
        return sym_fail(t, "call of a %s object without a source", Py_TYPE(o->obj)->tp_name);
    int s = sym_guard_type(t, o->src, o->obj) < 0 ? -1 : sym_source(t, DH_S_CONST, -1, 0, pf);
    return s < 0 ? -1 : sym_inline(t, pf, s, o, args, nargs, kwnames, out);
}

int sym_is_enum_member(PyObject *o) {
    static PyObject *enum_type;
    static int tried;
    if (!tried) {
        tried = 1;
        PyObject *m = PyImport_ImportModule("enum");
        enum_type = m ? PyObject_GetAttrString(m, "Enum") : NULL; /* kept for the process */
        Py_XDECREF(m);
        if (enum_type == NULL)
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
    }
    return o != NULL && enum_type != NULL && PyType_Check(enum_type) && !PyType_Check(o) &&
           PyObject_TypeCheck(o, (PyTypeObject *)enum_type);
}

int sym_obj_polyfill_attr(trace *t, PyObject *cls, PyObject *name, var *out) {
    /* a C type (3.12 makes itertools' heap types, immutable as static ones are) */
    if (!(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_IMMUTABLETYPE) || init_once() < 0)
        return 1;
    PyObject *a = PyObject_GetAttr(cls, name);
    if (a == NULL)
        return tc_clear_expected(PyExc_AttributeError) < 0 ? -1 : 1;
    if (lookup(polyfills, a) == NULL) {
        Py_DECREF(a);
        return 1;
    }
    *out = sym_var(V_FUNC);
    out->op = -1;
    out->obj = sym_keep(t, a); /* a C type's attribute: a constant of the type */
    return out->obj ? 0 : -1;
}

/* E(value) of an enum class (read from a guarded source, so a constant here) with one constant
 * argument: the member, looked up while tracing (EnumType.__call__ only reads the class's value
 * map); a value with no member fails the trace (eager raises ValueError). 1: not that call. */
int sym_enum_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (fn->kind != V_FUNC || fn->obj == NULL || !PyType_Check(fn->obj) || nargs != 1 ||
        (kwnames && PyTuple_GET_SIZE(kwnames) > 0) || args[0].kind != V_CONST)
        return 1;
    (void)sym_is_enum_member(Py_None); /* loads enum.Enum */
    PyObject *m = PyImport_ImportModule("enum");
    PyObject *et = m ? PyObject_GetAttrString(m, "Enum") : NULL;
    Py_XDECREF(m);
    int is_enum = et != NULL && PyType_Check(et) && PyType_IsSubtype((PyTypeObject *)fn->obj, (PyTypeObject *)et) &&
                  fn->obj != et;
    Py_XDECREF(et);
    if (!is_enum) {
        (void)tc_clear_expected(PyExc_Exception);
        return 1;
    }
    PyObject *a = args[0].obj;
    if (!(a == Py_None || PyLong_CheckExact(a) || PyUnicode_CheckExact(a) || PyFloat_CheckExact(a) ||
          PyBool_Check(a) || PyTuple_CheckExact(a) || (sym_is_enum_member(a) && PyObject_TypeCheck(a, (PyTypeObject *)fn->obj))))
        return 1;
    PyObject *r = PyObject_CallOneArg(fn->obj, a);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "%s(%R) has no member (eager will raise)", ((PyTypeObject *)fn->obj)->tp_name, a);
    }
    return sym_const(t, r, out);
}
