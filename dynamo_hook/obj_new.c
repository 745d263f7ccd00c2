/* obj_new.c — instances of Python classes constructed inside the traced frame.
 *
 * cls(*args) of a plain Python class (object's __new__, the generic __setattr__, no
 * metaclass __call__, no __del__) splits in two:
 *   allocation: object.__new__(cls) reads no state and has no effect, so it is hoisted to the
 *     guards (a DH_S_NEW source: a fresh, empty object each call, made before the graph
 *     runs; at trace time an empty stand-in of the same class);
 *   initialisation: cls.__init__ is inlined on it like any method. Its attribute writes (and
 *     every later one) are logged as for any object passed in (t->attrw, read back by later
 *     reads in the trace) and replayed on the fresh object after the graph, in program order.
 * The object then is an ordinary V_OBJ with a source: returned, stored into caller-visible
 * state or handed to a graph break, it is the real object with eager's attributes.
 *
 * Requires: attribute reads of an object with a source consult t->attrw first (symbolic.c
 *           load_attr), so the stand-in's empty __dict__ is never read for a written name.
 * Keeps:    eager's order of effects: the allocation is unobservable; what __init__ does is
 *           traced (a write before the construction in the trace stays before it).
 * Breaks:   nothing; classes outside the rule keep failing the trace ("call of type").
 */
#include "sym_interp.h"

#include <string.h>

static PyObject *obj_new;     /* object.__new__ */
static PyObject *obj_init;    /* object.__init__ (a slot wrapper) */
static PyObject *s_init;      /* "__init__" */

static int init_once(void) {
    if (obj_new != NULL)
        return 0;
    s_init = PyUnicode_InternFromString("__init__");
    PyObject *nw = PyObject_GetAttrString((PyObject *)&PyBaseObject_Type, "__new__");
    obj_init = s_init ? _PyType_Lookup(&PyBaseObject_Type, s_init) : NULL;
    if (nw == NULL || obj_init == NULL) {
        Py_XDECREF(nw);
        (void)tc_clear_expected(PyExc_AttributeError);
        return -1;
    }
    Py_INCREF(obj_init); /* kept for the process */
    obj_new = nw;
    return 0;
}

/* object's attribute stores, or a Python __setattr__/__delattr__ (inlined: obj_attrs.c) */
static int plain_setattr(PyTypeObject *tp) {
    if (tp->tp_setattro == PyObject_GenericSetAttr)
        return 1;
    static PyObject *names[2];
    if (names[0] == NULL && ((names[0] = PyUnicode_InternFromString("__setattr__")) == NULL ||
                             (names[1] = PyUnicode_InternFromString("__delattr__")) == NULL)) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        PyObject *f = _PyType_Lookup(tp, names[i]);
        if (f == NULL || (!PyFunction_Check(f) && f != _PyType_Lookup(&PyBaseObject_Type, names[i])))
            return 0;
    }
    return 1;
}

int sym_obj_plain_class(PyObject *cls) {
    if (!PyType_Check(cls) || init_once() < 0)
        return 0;
    PyTypeObject *tp = (PyTypeObject *)cls;
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IS_ABSTRACT) ||
        Py_TYPE(cls)->tp_call != PyType_Type.tp_call || tp->tp_new != PyBaseObject_Type.tp_new ||
        !plain_setattr(tp) || tp->tp_finalize != NULL || tp->tp_del != NULL ||
        tp->tp_dictoffset == 0 || sym_is_nn_module_type(cls))
        return 0;
    PyObject *init = _PyType_Lookup(tp, s_init);
    return init != NULL && (init == obj_init || PyFunction_Check(init));
}

int sym_obj_new(trace *t, PyObject *cls, var *args, int nargs, PyObject *kwnames, var *out) {
    PyTypeObject *tp = (PyTypeObject *)cls;
    PyObject *init = _PyType_Lookup(tp, s_init);
    if (init == obj_init && nargs > 0)
        return sym_fail(t, "%s() takes no arguments (eager will raise)", tp->tp_name);
    PyObject *spec = NULL, *stand_in = NULL;
    int rc = -1;
    int cs = sym_source(t, DH_S_CONST, -1, 0, cls);
    if (cs < 0)
        return -1;
    spec = Py_BuildValue("(O()(i))", obj_new, cs);
    stand_in = PyObject_CallOneArg(obj_new, cls); /* what the trace reads (never initialised) */
    if (spec == NULL || stand_in == NULL) {
        if (stand_in == NULL && spec != NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            rc = sym_fail(t, "%s.__new__ raised (eager will raise)", tp->tp_name);
        }
        goto done;
    }
    int s = sym_source(t, DH_S_NEW, -1, t->nsrc, spec);
    if (s < 0 || sym_wrap(t, stand_in, s, out) < 0)
        goto done;
    if (out->kind != V_OBJ) {
        rc = sym_fail(t, "%s(): not an object", tp->tp_name);
        goto done;
    }
    if (init != obj_init) {
        PyObject *fn = sym_keep(t, Py_NewRef(init));
        int fs = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
        var r, self = *out;
        if (fs < 0 || sym_inline(t, fn, fs, &self, args, nargs, kwnames, &r) < 0)
            goto done;
        if (r.kind != V_CONST || r.obj != Py_None) {
            rc = sym_fail(t, "%s.__init__ returned a value (eager will raise)", tp->tp_name);
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(spec);
    Py_XDECREF(stand_in);
    return rc;
}

int sym_obj_attr_special(trace *t, const var *o, PyObject *name) {
    if (PyUnicode_CompareWithASCIIString(name, "__dict__") != 0)
        return 0;
    for (int i = 0; i < t->nattrw; i++)
        if (t->attrw[i].obj == o->obj)
            return sym_fail(t, "__dict__ of an object whose attributes the trace wrote");
    return 0;
}

/* ---- copy.deepcopy(x) of a plain object graph ------------------------------------------
 * deepcopy(obj) where everything reachable from obj is constants, tuples/lists/dicts/sets of
 * them and instances of Python classes that leave copying to object (no Python __deepcopy__,
 * __reduce_ex__, __reduce__, __getstate__, __setstate__, __copy__): a model config copied in
 * forward. Its memo dict (keyed by id()) and reconstruction are not traced: the call is
 * hoisted to the guards like an allocation (a DH_S_NEW source calling copy.deepcopy on the
 * source of obj: a fresh copy each call, made before the graph runs), and the trace reads
 * the copy through guarded sources. Hoisting is exact only if nothing the copy reads was
 * changed earlier in the trace: an object in the graph that the trace wrote (t->attrw) fails
 * the trace. Tensors, modules and objects with their own copy protocol are left to the
 * inlined copy.deepcopy (1). */
static PyObject *deepcopy_fn; /* copy.deepcopy, kept for the process */

static int copy_hook(PyTypeObject *tp) {
    static const char *const names[] = {"__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__",
                                        "__setstate__", "__copy__", NULL};
    for (int i = 0; names[i]; i++) {
        PyObject *n = PyUnicode_InternFromString(names[i]);
        if (n == NULL)
            return 1; /* MemoryError, left set (csrc/pyerr.h) */
        PyObject *f = _PyType_Lookup(tp, n), *base = _PyType_Lookup(&PyBaseObject_Type, n);
        Py_DECREF(n);
        if (f != NULL && f != base)
            return 1;
    }
    return 0;
}

/* 1: every object reachable from o copies without running Python code of its own; ids of
 * the mutable ones go into seen (a set) */
static int plain_graph(PyObject *o, PyObject *seen, int *budget, const char **why) {
    if (--*budget < 0) {
        *why = "too many objects";
        return 0;
    }
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
        PyComplex_CheckExact(o) || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) || PyType_Check(o) ||
        PyFunction_Check(o) || PyCFunction_Check(o) || sym_is_enum_member(o) || sym_dtype_from_object(o) >= 0)
        return 1; /* deepcopy returns these themselves */
    PyObject *id = PyLong_FromVoidPtr(o);
    int had = id ? PySet_Contains(seen, id) : -1;
    if (had == 0 && PySet_Add(seen, id) < 0)
        had = -1;
    Py_XDECREF(id);
    if (had != 0)
        return had > 0; /* had < 0: MemoryError, left set */
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!plain_graph(PySequence_Fast_GET_ITEM(o, i), seen, budget, why))
                return 0;
        return 1;
    }
    if (PyDict_CheckExact(o)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(o, &pos, &k, &v))
            if (!plain_graph(k, seen, budget, why) || !plain_graph(v, seen, budget, why))
                return 0;
        return 1;
    }
    if (PyAnySet_CheckExact(o)) {
        Py_ssize_t pos = 0;
        PyObject *k;
        Py_hash_t h;
        while (_PySet_NextEntry(o, &pos, &k, &h))
            if (!plain_graph(k, seen, budget, why))
                return 0;
        return 1;
    }
    PyTypeObject *tp = Py_TYPE(o);
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_dictoffset == 0 || sym_is_nn_module(o) ||
        tp->tp_new != PyBaseObject_Type.tp_new || copy_hook(tp)) {
        *why = tp->tp_name;
        return 0;
    }
    PyObject **dp = _PyObject_GetDictPtr(o);
    if (dp == NULL || *dp == NULL)
        return 1;
    return plain_graph(*dp, seen, budget, why);
}

/* seen (ids of the objects a copy reads) holds an object the trace wrote: the copy hoisted
 * before the graph would not see that write */
static int written_in(trace *t, PyObject *seen) {
    for (int i = 0; i < t->nattrw; i++) {
        PyObject *id = t->attrw[i].obj ? PyLong_FromVoidPtr(t->attrw[i].obj) : NULL;
        int in = id ? PySet_Contains(seen, id) : 0;
        Py_XDECREF(id);
        if (in != 0)
            return 1; /* in < 0: MemoryError, left set */
    }
    return 0;
}

/* copy_then_write(obj, names, values): deepcopy(obj), then the attribute writes names[i] =
 * values[i] replayed on the copy as they are after a graph (dh_replay_attr): the copy of an
 * object the trace changed, made by the guards from the unchanged object */
static PyObject *copy_then_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[1]) != PyTuple_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "copy_then_write(obj, names, values)");
        return NULL;
    }
    PyObject *copy = PyObject_CallOneArg(deepcopy_fn, args[0]);
    for (Py_ssize_t i = 0; copy != NULL && i < PyTuple_GET_SIZE(args[1]); i++)
        if (dh_replay_attr(copy, PyTuple_GET_ITEM(args[1], i), PyTuple_GET_ITEM(args[2], i)) < 0)
            Py_CLEAR(copy);
    return copy;
}

static PyMethodDef copy_then_write_def = {"copy_then_write", (PyCFunction)(void (*)(void))copy_then_write,
                                          METH_FASTCALL, NULL};
static PyObject *copy_then_write_fn; /* kept for the process */

/* deepcopy(spec's source) made by the guards: a DH_S_NEW source read by the trace (a copy
 * made now stands for it); with writes (a tuple of names and one of constant values), the
 * copy takes them after it is made (copy_then_write) */
static int hoisted_copy_with(trace *t, PyObject *orig, int src, PyObject *names, PyObject *vals, var *out) {
    PyObject *spec = NULL, *copy = NULL;
    if (names == NULL) {
        spec = Py_BuildValue("(O()(i))", deepcopy_fn, src);
        copy = spec ? PyObject_CallOneArg(deepcopy_fn, orig) : NULL; /* what the trace reads */
    } else {
        if (copy_then_write_fn == NULL &&
            (copy_then_write_fn = PyCFunction_New(&copy_then_write_def, NULL)) == NULL)
            return -1;
        int ns = sym_source(t, DH_S_CONST, -1, 0, names);
        int vs = ns < 0 ? -1 : sym_source(t, DH_S_CONST, -1, 0, vals);
        if (vs < 0)
            return -1;
        spec = Py_BuildValue("(O()(iii))", copy_then_write_fn, src, ns, vs);
        PyObject *a[3] = {orig, names, vals};
        copy = spec ? copy_then_write(NULL, a, 3) : NULL;
    }
    int rc = -1;
    if (copy == NULL) {
        if (spec != NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            rc = sym_fail(t, "copy.deepcopy raised (eager will raise)");
        }
        Py_XDECREF(spec);
        return rc;
    }
    int s = sym_source(t, DH_S_NEW, -1, t->nsrc, spec);
    rc = s < 0 ? -1 : sym_wrap(t, copy, s, out);
    Py_DECREF(spec);
    Py_DECREF(copy);
    return rc;
}

static int hoisted_copy(trace *t, PyObject *orig, int src, var *out) {
    return hoisted_copy_with(t, orig, src, NULL, NULL, out);
}

/* The trace wrote to the graph deepcopy(obj) reads: the copy can still be made by the guards
 * when every write is to obj itself (not to an object inside it), of a str name, with an
 * immutable constant (or a deletion): the writes, in the order they are replayed after the
 * graph, are made on the copy (copy_then_write). 1 and *names/*vals (new references) set,
 * 0 not so, -1 error. */
static int writes_to_replay(trace *t, PyObject *obj, PyObject *seen, PyObject **names, PyObject **vals) {
    *names = PyList_New(0);
    *vals = PyList_New(0);
    if (*names == NULL || *vals == NULL)
        goto fail;
    for (int i = 0; i < t->nattrw; i++) {
        sym_attrw *w = &t->attrw[i];
        PyObject *id = w->obj ? PyLong_FromVoidPtr(w->obj) : NULL;
        int in = id ? PySet_Contains(seen, id) : -1;
        Py_XDECREF(id);
        if (in < 0)
            goto fail;
        if (!in)
            continue;
        const var *v = w->val;
        PyObject *c = v && v->kind == V_CONST ? v->obj : NULL;
        int immutable = c != NULL && (c == Py_None || PyBool_Check(c) || PyLong_CheckExact(c) ||
                                      PyFloat_CheckExact(c) || PyUnicode_CheckExact(c) || sym_attr_is_deleted(v));
        if (w->obj != obj || !PyUnicode_Check(w->name) || !immutable) {
            Py_CLEAR(*names);
            Py_CLEAR(*vals);
            return 0;
        }
        if (PyList_Append(*names, w->name) < 0 || PyList_Append(*vals, c) < 0)
            goto fail;
    }
    Py_SETREF(*names, PyList_AsTuple(*names));
    Py_SETREF(*vals, PyList_AsTuple(*vals));
    if (*names != NULL && *vals != NULL)
        return 1;
fail:
    Py_CLEAR(*names);
    Py_CLEAR(*vals);
    return -1;
}

/* deepcopy(obj.__dict__) (a config's to_dict): the object's real dict, when the trace has
 * not changed the object, copied by the guards as above (its source: obj's "__dict__") */
static int deepcopy_dict_view(trace *t, const var *x, var *out) {
    PyObject *obj = x->globals;
    PyObject **dp = _PyObject_GetDictPtr(obj);
    if (dp == NULL || *dp == NULL || !PyDict_CheckExact(*dp))
        return 1;
    PyObject *seen = PySet_New(NULL);
    if (seen == NULL)
        return -1;
    int budget = 4096;
    const char *why = NULL;
    PyObject *oid = PyLong_FromVoidPtr(obj);
    int plain = oid != NULL && PySet_Add(seen, oid) == 0 && plain_graph(*dp, seen, &budget, &why);
    Py_XDECREF(oid);
    (void)tc_clear_expected(PyExc_Exception);
    int wrote = plain && written_in(t, seen);
    Py_DECREF(seen);
    if (!plain)
        return 1;
    if (wrote)
        return sym_fail(t, "copy.deepcopy of an object the trace changed before the copy");
    PyObject *name = PyUnicode_InternFromString("__dict__");
    int ds = name ? sym_source(t, DH_S_ATTR, (int)x->pos - 1, 2, name) : -1;
    Py_XDECREF(name);
    if (ds < 0)
        return -1;
    return hoisted_copy(t, *dp, ds, out);
}

int sym_obj_deepcopy(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (deepcopy_fn == NULL) {
        PyObject *name = PyUnicode_FromString("copy");
        PyObject *m = name ? PyImport_GetModule(name) : NULL;
        Py_XDECREF(name);
        deepcopy_fn = m ? PyObject_GetAttrString(m, "deepcopy") : NULL;
        Py_XDECREF(m);
        (void)tc_clear_expected(PyExc_AttributeError);
        if (deepcopy_fn == NULL)
            return 1;
    }
    if (fn->obj != deepcopy_fn || nargs != 1 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0))
        return 1;
    const var *x = &args[0];
    if (x->kind == V_DICT && x->op == SYM_DICT_VIEW && x->pos > 0 && x->globals != NULL)
        return deepcopy_dict_view(t, x, out);
    if (x->kind == V_DICT && x->op == 0 && x->src >= 0 && x->src < t->capsrc && t->srcobj[x->src] != NULL &&
        PyDict_CheckExact(t->srcobj[x->src])) {
        /* a dict read through a source (obj.__dict__ of an object with its own
         * __getattribute__, a dict passed in): the real dict, copied by the guards */
        PyObject *seen = PySet_New(NULL);
        if (seen == NULL)
            return -1;
        int budget = 4096;
        const char *why = NULL;
        int plain = plain_graph(t->srcobj[x->src], seen, &budget, &why);
        int wrote = plain && written_in(t, seen);
        Py_DECREF(seen);
        if (!plain)
            return 1;
        if (wrote)
            return sym_fail(t, "copy.deepcopy of an object the trace changed before the copy");
        return hoisted_copy(t, t->srcobj[x->src], x->src, out);
    }
    if (x->kind != V_OBJ || x->src < 0 || x->obj == NULL || PyModule_Check(x->obj) || PyType_Check(x->obj))
        return 1;
    PyObject *seen = PySet_New(NULL);
    if (seen == NULL)
        return -1;
    int budget = 4096;
    const char *why = NULL;
    int plain = plain_graph(x->obj, seen, &budget, &why);
    if (!plain) {
        Py_DECREF(seen);
        return 1; /* copied as written (inlined) */
    }
    if (!written_in(t, seen)) {
        Py_DECREF(seen);
        return hoisted_copy(t, x->obj, x->src, out);
    }
    PyObject *names, *vals;
    int replay = writes_to_replay(t, x->obj, seen, &names, &vals);
    Py_DECREF(seen);
    if (replay <= 0)
        return replay < 0 ? -1
                          : sym_fail(t, "copy.deepcopy of an object the trace changed before the copy "
                                        "(inside it, or with a value not an immutable constant)");
    int rc = hoisted_copy_with(t, x->obj, x->src, names, vals, out);
    Py_DECREF(names);
    Py_DECREF(vals);
    return rc;
}

/* ---- class statements inside the traced frame (LOAD_BUILD_CLASS) ------------------------
 * builtins.__build_class__(body, name, *bases) where the body is simple: it reads no name
 * but __name__ and the builtins property/staticmethod/classmethod (no global, no import), so
 * running it has no effect and its result depends only on its code, its closure and the
 * bases. The class is then made once, while tracing (the body run as written), and held as
 * a constant: instances are made by obj_new.c, methods inlined. Eager makes a new class
 * object each call: the one difference is that identity (type(a) is type(b) across calls).
 * Anything else (a body reading globals, metaclass= and other keywords, a closure over
 * traced values) fails the trace with the reason. */
static int simple_class_body(PyCodeObject *co, PyObject *globals, const char **bad) {
    static PyObject *ok_names;
    if (ok_names == NULL && (ok_names = Py_BuildValue("(ssss)", "__name__", "property", "staticmethod",
                                                      "classmethod")) == NULL)
        return -1;
    PyObject *bytes = PyCode_GetCode(co);
    if (bytes == NULL)
        return -1;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    int rc = 1, ext = 0;
    for (Py_ssize_t i = 0; i + 1 < n && rc == 1; i += 2) {
        const char *on = sym_opname(b[i]);
        int arg = ext | b[i + 1];
        ext = on && !strcmp(on, "EXTENDED_ARG") ? arg << 8 : 0;
        if (on == NULL)
            continue;
        if (!strcmp(on, "IMPORT_NAME") || !strcmp(on, "STORE_GLOBAL") || !strcmp(on, "DELETE_GLOBAL") ||
            !strcmp(on, "LOAD_GLOBAL") || !strcmp(on, "IMPORT_FROM") || !strcmp(on, "LOAD_BUILD_CLASS")) {
            *bad = on;
            rc = 0;
        } else if (!strcmp(on, "LOAD_NAME")) {
            if (arg >= PyTuple_GET_SIZE(co->co_names)) {
                rc = 0;
                *bad = "LOAD_NAME";
                break;
            }
            PyObject *name = PyTuple_GET_ITEM(co->co_names, arg);
            int found = PySequence_Contains(ok_names, name);
            /* a builtin decorator: not shadowed by a global of that name */
            if (found == 1 && PyUnicode_CompareWithASCIIString(name, "__name__") != 0 &&
                PyDict_GetItemWithError(globals, name) != NULL)
                found = 0;
            if (found < 0 || PyErr_Occurred()) {
                (void)tc_clear_expected(PyExc_Exception);
                found = 0;
            }
            if (!found) {
                *bad = PyUnicode_AsUTF8(name);
                rc = 0;
            }
        }
    }
    Py_DECREF(bytes);
    return rc;
}

static PyObject *build_class_fn; /* builtins.__build_class__, kept for the process */

int sym_is_build_class(PyObject *o) {
    if (build_class_fn == NULL) {
        build_class_fn = PyDict_GetItemString(PyEval_GetBuiltins(), "__build_class__");
        Py_XINCREF(build_class_fn);
    }
    return o != NULL && o == build_class_fn;
}

int sym_obj_build_class(trace *t, var *args, int nargs, PyObject *kwnames, var *out) {
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return sym_fail(t, "class statement with keywords (metaclass=...) not supported");
    if (nargs < 2 || args[0].kind != V_FUNC || args[0].op != SYM_MADE_FUNCTION || args[1].kind != V_CONST ||
        !PyUnicode_Check(args[1].obj))
        return sym_fail(t, "__build_class__ called with unexpected arguments");
    PyCodeObject *co = (PyCodeObject *)args[0].obj;
    PyObject *globals = args[0].globals ? args[0].globals : t->globals;
    const char *bad = "?";
    int simple = simple_class_body(co, globals, &bad);
    if (simple < 0)
        return -1;
    if (!simple)
        return sym_fail(t, "class %U defined in the frame: its body reads %s", args[1].obj, bad ? bad : "?");
    PyObject *fn = NULL, *clos = NULL, *call = NULL, *cls = NULL;
    int rc = -1;
    if (args[0].n > 0) {
        clos = PyTuple_New(args[0].n);
        if (clos == NULL)
            goto done;
        for (int i = 0; i < args[0].n; i++) {
            const var *v = &args[0].items[i];
            if (!sym_is_real_object(v)) {
                rc = sym_fail(t, "class %U defined in the frame closes over a traced value", args[1].obj);
                goto done;
            }
            PyObject *cell = PyCell_New(v->obj);
            if (cell == NULL)
                goto done;
            PyTuple_SET_ITEM(clos, i, cell);
        }
    }
    fn = PyFunction_New((PyObject *)co, globals);
    if (fn == NULL || (clos != NULL && PyFunction_SetClosure(fn, clos) < 0))
        goto done;
    call = PyTuple_New(nargs);
    if (call == NULL)
        goto done;
    PyTuple_SET_ITEM(call, 0, Py_NewRef(fn));
    for (int i = 1; i < nargs; i++) {
        if (!sym_is_real_object(&args[i])) {
            rc = sym_fail(t, "class %U defined in the frame with a base that is a traced value", args[1].obj);
            goto done;
        }
        PyTuple_SET_ITEM(call, i, Py_NewRef(args[i].obj));
    }
    cls = PyObject_Call(build_class_fn, call, NULL); /* the body runs here, as written */
    if (cls == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "class %U defined in the frame: making it raised (eager will raise)", args[1].obj);
        goto done;
    }
    rc = sym_wrap(t, cls, -1, out);
done:
    Py_XDECREF(fn);
    Py_XDECREF(clos);
    Py_XDECREF(call);
    Py_XDECREF(cls);
    return rc;
}
