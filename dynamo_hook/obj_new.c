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

/* a Python class whose instances are object's layout plus __slots__ members (no __dict__: a
 * frozen dataclass with slots=True, pytree's TreeSpec): its attributes are member
 * descriptors, read and written through object's generic getattr/setattr (C, no Python) */
int sym_slots_class(PyTypeObject *tp) {
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_dictoffset != 0 ||
        tp->tp_getattro != PyObject_GenericGetAttr)
        return 0;
    PyTypeObject *b = tp;
    while (b != NULL && (b->tp_flags & Py_TPFLAGS_HEAPTYPE))
        b = b->tp_base;
    return b == &PyBaseObject_Type;
}

int sym_obj_plain_class(PyObject *cls) {
    if (!PyType_Check(cls) || init_once() < 0)
        return 0;
    PyTypeObject *tp = (PyTypeObject *)cls;
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IS_ABSTRACT) ||
        Py_TYPE(cls)->tp_call != PyType_Type.tp_call || tp->tp_new != PyBaseObject_Type.tp_new ||
        !plain_setattr(tp) || tp->tp_finalize != NULL || tp->tp_del != NULL ||
        (tp->tp_dictoffset == 0 && !sym_slots_class(tp)) || sym_is_nn_module_type(cls))
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
 * the copy through guarded sources. The copy is made from the state before the call, so the
 * writes the trace logged (t->attrw) to objects the copy reads before the copy are made on
 * the copy too (writes_in: atomic constant values, on objects reached from obj through
 * attributes; a config changed, then copied); any other such write fails the trace.
 * Tensors, modules and objects with their own copy protocol are left to the inlined
 * copy.deepcopy (1). */
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

/* An atomic constant value a write stored (None, bool, int, float, complex, str, bytes, or a
 * tuple of them, held as a constant or built in the trace): deepcopy returns it as it is, so
 * the copy holds it too. New reference, or NULL (no exception) when not such a value. */
static PyObject *atomic_value(trace *t, const var *v_in, int depth) {
    var v = *v_in;
    sym_resolve(t, &v);
    if (depth > 8)
        return NULL;
    if (v.kind == V_CONST && !v.is_list && v.obj != NULL) {
        PyObject *o = v.obj;
        if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
            PyComplex_CheckExact(o) || PyUnicode_CheckExact(o) || PyBytes_CheckExact(o))
            return Py_NewRef(o);
        if (PyTuple_CheckExact(o)) {
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++) {
                var it = sym_var(V_CONST);
                it.obj = PyTuple_GET_ITEM(o, i);
                PyObject *r = atomic_value(t, &it, depth + 1);
                if (r == NULL)
                    return NULL;
                Py_DECREF(r);
            }
            return Py_NewRef(o);
        }
        return NULL;
    }
    if (v.kind == V_SEQ && !v.is_list && v.op == 0 && (v.items != NULL || v.n == 0)) {
        PyObject *tup = PyTuple_New(v.n);
        for (int i = 0; tup != NULL && i < v.n; i++) {
            PyObject *r = atomic_value(t, &v.items[i], depth + 1);
            if (r == NULL)
                Py_CLEAR(tup);
            else
                PyTuple_SET_ITEM(tup, i, r);
        }
        (void)tc_clear_expected(PyExc_MemoryError); /* a failed tuple: not such a value */
        return tup;
    }
    return NULL;
}

/* paths: id(obj) -> tuple of the attribute names that lead from the root to obj through the
 * instance dicts of plain objects (breadth first: the shortest path); 0 done, -1 error */
static int attr_paths(PyObject *root, PyObject *paths) {
    PyObject *queue = PyList_New(0), *empty = PyTuple_New(0), *id = PyLong_FromVoidPtr(root);
    int rc = -1;
    if (queue == NULL || empty == NULL || id == NULL || PyDict_SetItem(paths, id, empty) < 0 ||
        PyList_Append(queue, root) < 0)
        goto done;
    for (Py_ssize_t qi = 0; qi < PyList_GET_SIZE(queue) && qi < 4096; qi++) {
        PyObject *o = PyList_GET_ITEM(queue, qi), *root_items = o;
        PyObject **dp = qi == 0 && PyDict_CheckExact(o) ? &root_items /* a dict copied: its items */
                        : PyType_Check(o)               ? NULL
                                                        : _PyObject_GetDictPtr(o);
        if (dp == NULL || *dp == NULL || !PyDict_CheckExact(*dp))
            continue;
        Py_XDECREF(id);
        id = PyLong_FromVoidPtr(o);
        PyObject *base = id ? PyDict_GetItemWithError(paths, id) : NULL; /* borrowed */
        if (base == NULL)
            goto done;
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(*dp, &pos, &k, &v)) {
            PyTypeObject *vt = Py_TYPE(v);
            if (!PyUnicode_CheckExact(k) || !(vt->tp_flags & Py_TPFLAGS_HEAPTYPE) || vt->tp_dictoffset == 0 ||
                PyType_Check(v) || PyFunction_Check(v))
                continue;
            PyObject *vid = PyLong_FromVoidPtr(v);
            int had = vid ? PyDict_Contains(paths, vid) : -1;
            PyObject *one = had == 0 ? PyTuple_Pack(1, k) : NULL;
            PyObject *path = one ? PySequence_Concat(base, one) : NULL;
            int bad = had < 0 || (had == 0 && (path == NULL || PyDict_SetItem(paths, vid, path) < 0 ||
                                               PyList_Append(queue, v) < 0));
            Py_XDECREF(vid);
            Py_XDECREF(one);
            Py_XDECREF(path);
            if (bad)
                goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(queue);
    Py_XDECREF(empty);
    Py_XDECREF(id);
    return rc;
}

/* The writes the trace logged (t->attrw, in program order) on objects that a copy of root
 * reads (seen: their ids), as a tuple of (path, name, deleted, value): path the attribute
 * names leading from root to the object written (root_dict: root is an instance dict, the
 * copy a dict; a write to its owner, `owner`, sets its item). Eager's deepcopy at this point
 * copies the objects as written, so the copy hoisted to the guards (made from the state
 * before the call) gets the same writes. Returns a new tuple (empty: nothing written), or
 * NULL: with an exception on error, else with *why set (a write that cannot be replayed on
 * the copy: a non-atomic value, a container's contents, an object reached other than
 * through attributes). */
static PyObject *writes_in(trace *t, PyObject *root, PyObject *owner, PyObject *seen, const char **why) {
    PyObject *out = PyList_New(0), *paths = NULL, *r = NULL;
    if (out == NULL)
        return NULL;
    for (int i = 0; i < t->nattrw; i++) {
        sym_attrw *w = &t->attrw[i];
        if (w->obj == NULL)
            continue;
        PyObject *id = PyLong_FromVoidPtr(w->obj);
        int in = id ? PySet_Contains(seen, id) : -1;
        if (in == 0 && owner != NULL && w->obj == owner)
            in = 2;
        if (in <= 0) {
            Py_XDECREF(id);
            if (in < 0)
                goto done;
            continue;
        }
        if (w->name == NULL || !PyUnicode_CheckExact(w->name) || w->val == NULL) {
            Py_XDECREF(id);
            *why = "a container the copy reads was changed by the trace";
            goto done;
        }
        if (paths == NULL && ((paths = PyDict_New()) == NULL || attr_paths(owner ? owner : root, paths) < 0)) {
            Py_DECREF(id);
            goto done;
        }
        PyObject *path = PyDict_GetItemWithError(paths, id); /* borrowed */
        Py_DECREF(id);
        if (path == NULL) {
            if (!PyErr_Occurred())
                *why = "an object the copy reads, changed by the trace, is not reached through attributes";
            goto done;
        }
        if (owner != NULL && PyTuple_GET_SIZE(path) == 0 && w->obj != owner) {
            *why = "a write to the instance dict's owner only";
            goto done;
        }
        int del = sym_attr_is_deleted(w->val);
        PyObject *val = del ? Py_NewRef(Py_None) : atomic_value(t, w->val, 0);
        if (val == NULL) {
            if (!PyErr_Occurred())
                *why = "an attribute the trace set on an object the copy reads holds a value other than a constant";
            goto done;
        }
        PyObject *item = Py_BuildValue("(OOOO)", path, w->name, del ? Py_True : Py_False, val);
        Py_DECREF(val);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
    }
    r = PyList_AsTuple(out);
done:
    Py_DECREF(out);
    Py_XDECREF(paths);
    return r;
}

/* deepcopy(spec's source) made by the guards: a DH_S_NEW source read by the trace (a copy
 * made now stands for it); with writes (writes_in, not empty), the trace's own writes to
 * the copied objects replayed on the copy (torchc/_api.py _deepcopy_written) */
static int hoisted_copy(trace *t, PyObject *orig, int src, PyObject *writes, int root_dict, var *out) {
    PyObject *fn = NULL;
    if (writes != NULL && PyTuple_GET_SIZE(writes) > 0) {
        PyObject *api = PyImport_ImportModule("torchc._api");
        PyObject *mk = api ? PyObject_GetAttrString(api, "_deepcopy_written") : NULL;
        Py_XDECREF(api);
        fn = mk ? PyObject_CallFunction(mk, "Oi", writes, root_dict) : NULL;
        Py_XDECREF(mk);
        if (fn == NULL || sym_keep(t, Py_NewRef(fn)) == NULL) {
            Py_XDECREF(fn);
            return -1;
        }
    } else {
        fn = Py_NewRef(deepcopy_fn);
    }
    PyObject *spec = Py_BuildValue("(O()(i))", fn, src);
    PyObject *copy = spec ? PyObject_CallOneArg(fn, orig) : NULL; /* what the trace reads */
    Py_DECREF(fn);
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

/* the writes of the trace a copy must carry (writes_in), or the trace failed: NULL with
 * *failed set to sym_fail's result (or -1 on error) */
static PyObject *copy_writes(trace *t, PyObject *root, PyObject *owner, PyObject *seen, int *failed) {
    const char *why = NULL;
    PyObject *w = writes_in(t, root, owner, seen, &why);
    if (w == NULL)
        *failed = PyErr_Occurred() ? -1
                                   : sym_fail(t, "copy.deepcopy of an object the trace changed before the copy (%s)",
                                              why ? why : "?");
    return w;
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
    if (!plain) {
        Py_DECREF(seen);
        return 1;
    }
    int failed = 0;
    PyObject *writes = copy_writes(t, *dp, obj, seen, &failed);
    Py_DECREF(seen);
    if (writes == NULL)
        return failed;
    PyObject *name = PyUnicode_InternFromString("__dict__");
    int ds = name ? sym_source(t, DH_S_ATTR, (int)x->pos - 1, 2, name) : -1;
    Py_XDECREF(name);
    int rc = ds < 0 ? -1 : hoisted_copy(t, *dp, ds, writes, 1, out);
    Py_DECREF(writes);
    return rc;
}

/* what one deepcopy() of a traced value copied already (its memo): a tensor by object id,
 * a list or dict by its items array (objects.c: their identity); the copy of each */
typedef struct dc_memo {
    const void **key; /* malloc'd, cap of them (any number: a part reached twice is one copy) */
    var *val;
    int n, cap;
} dc_memo;

/* copy.deepcopy(v) of a value made in the trace (dataclasses.asdict's leaves): constants and
 * functions are themselves (deepcopy returns atomic and immutable values), a tensor a copy
 * keeping its strides (Tensor.__deepcopy__ of one that needs no grad), lists / tuples /
 * dicts / named tuples / deques rebuilt from copies of their items, a part reached twice
 * copied once (the memo). Anything else fails. */
static int deep_copy(trace *t, const var *v, dc_memo *m, int depth, var *out) {
    if (depth > 32)
        return sym_fail(t, "copy.deepcopy: nesting too deep");
    if (v->kind == V_CONST) {
        PyObject *o = v->obj;
        if (PyList_Check(o) || PyDict_Check(o) || PyAnySet_Check(o) || PyByteArray_Check(o) || sym_set_is_mutable(v))
            return sym_fail(t, "copy.deepcopy of a mutable constant");
        *out = *v;
        return 0;
    }
    if (v->kind == V_FUNC && v->op != SYM_PARTIAL) { /* functions, classes: themselves */
        *out = *v;
        return 0;
    }
    const void *key = v->kind == V_TENSOR ? (v->oid > 0 ? (const void *)(intptr_t)v->oid : NULL) : (const void *)v->items;
    for (int i = 0; key != NULL && i < m->n; i++)
        if (m->key[i] == key) {
            *out = m->val[i];
            return 0;
        }
    if (v->kind == V_TENSOR) {
        if (sym_value_requires_grad(t, v->val))
            return sym_fail(t, "copy.deepcopy of a tensor that requires grad");
        if (dh_layout_copy(t, v->val, IC_MF_PRESERVE, out) < 0)
            return -1;
    } else if ((v->kind == V_SEQ && (v->obj == NULL || sym_data_is_deque(v) || sym_ntuple_class(v->obj))) ||
               (v->kind == V_DICT && (v->op == 0 || v->op == SYM_DICT_ORDERED || v->op == SYM_DICT_DEFAULT))) {
        if (v->kind == V_DICT && v->op == SYM_DICT_DEFAULT && v->pos == SYM_MADE_FUNCTION)
            return sym_fail(t, "copy.deepcopy of a defaultdict whose factory is made in the trace");
        var *items = sym_alloc(t, v->n > 0 ? v->n : 1);
        if (items == NULL)
            return -1;
        for (int i = 0; i < v->n; i++)
            if (deep_copy(t, &v->items[i], m, depth + 1, &items[i]) < 0)
                return -1;
        *out = *v;
        out->src = -1;
        out->items = items;
    } else {
        return sym_fail(t, "copy.deepcopy of this value not supported");
    }
    if (key != NULL && m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 16;
        const void **k = realloc(m->key, sizeof *k * (size_t)cap);
        if (k != NULL)
            m->key = k;
        var *vv = k != NULL ? realloc(m->val, sizeof *vv * (size_t)cap) : NULL;
        if (vv == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        m->val = vv;
        m->cap = cap;
    }
    if (key != NULL) {
        m->key[m->n] = key;
        m->val[m->n++] = *out;
    }
    return 0;
}

int sym_obj_deepcopy(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (deepcopy_fn == NULL) {
        deepcopy_fn = dh_loaded_attr("copy", "deepcopy");
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
        if (!plain) {
            Py_DECREF(seen);
            return 1;
        }
        int failed = 0;
        PyObject *writes = copy_writes(t, t->srcobj[x->src], NULL, seen, &failed);
        Py_DECREF(seen);
        if (writes == NULL)
            return failed;
        int rc = hoisted_copy(t, t->srcobj[x->src], x->src, writes, 1, out);
        Py_DECREF(writes);
        return rc;
    }
    if (x->kind == V_TENSOR || x->kind == V_CONST || (x->kind == V_SEQ && x->src < 0) ||
        (x->kind == V_DICT && x->src < 0)) {
        dc_memo *m = calloc(1, sizeof *m);
        if (m == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        int rc = deep_copy(t, x, m, 0, out);
        free(m->key);
        free(m->val);
        free(m);
        return rc;
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
    int failed = 0;
    PyObject *writes = copy_writes(t, x->obj, NULL, seen, &failed);
    Py_DECREF(seen);
    if (writes == NULL)
        return failed;
    int rc = hoisted_copy(t, x->obj, x->src, writes, 0, out);
    Py_DECREF(writes);
    return rc;
}

/* ---- copy.copy(x) of a plain object ----------------------------------------------------
 * copy.copy(obj) of an instance of a Python class that leaves copying to object (no
 * __copy__/__reduce_ex__/__reduce__/__getstate__/__setstate__ of its own, no __slots__, the
 * default __new__, not an nn.Module): eager makes cls.__new__(cls) and updates its __dict__
 * with obj's, sharing every value. Here: a fresh object made by the guards (a DH_S_NEW
 * source, as obj_new.c's allocations) whose attributes are the trace's view of obj's
 * __dict__ at the call (obj_dictview.c: the real dict merged with the writes logged so far),
 * each written with object.__setattr__ (logged, replayed after the graph), in the dict's
 * order. 1: not this case (the call is inlined as written). */
static PyObject *copy_fn; /* copy.copy, kept for the process */

static int no_slots(PyTypeObject *tp) {
    PyObject *mro = tp->tp_mro;
    for (Py_ssize_t i = 0; mro != NULL && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (b != &PyBaseObject_Type && b->tp_dict != NULL && PyDict_GetItemString(b->tp_dict, "__slots__") != NULL)
            return 0;
    }
    return 1;
}

int sym_obj_copy(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (copy_fn == NULL) {
        PyObject *m = PyImport_ImportModule("copy");
        copy_fn = m ? PyObject_GetAttrString(m, "copy") : NULL;
        Py_XDECREF(m);
        if (copy_fn == NULL) {
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            return PyErr_Occurred() ? -1 : 1;
        }
    }
    if (fn->obj != copy_fn || nargs != 1 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0) || init_once() < 0)
        return PyErr_Occurred() ? -1 : 1;
    const var *x = &args[0];
    if (x->kind != V_OBJ || x->src < 0 || x->obj == NULL || PyModule_Check(x->obj) || PyType_Check(x->obj))
        return 1;
    PyTypeObject *tp = Py_TYPE(x->obj);
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_dictoffset == 0 || sym_is_nn_module(x->obj) ||
        tp->tp_new != PyBaseObject_Type.tp_new || Py_TYPE((PyObject *)tp) != &PyType_Type || !no_slots(tp))
        return 1;
    int hook = copy_hook(tp);
    if (hook && PyErr_Occurred())
        return -1;
    if (hook)
        return 1;
    PyObject *dname = PyUnicode_InternFromString("__dict__");
    if (dname == NULL)
        return -1;
    var view;
    int rc = sym_obj_dict_view(t, x, dname, &view);
    Py_DECREF(dname);
    if (rc != 0)
        return rc < 0 ? -1 : sym_fail(t, "copy.copy: the object's __dict__ not readable");
    int cs = sym_source(t, DH_S_CONST, -1, 0, (PyObject *)tp);
    if (cs < 0)
        return -1;
    PyObject *spec = Py_BuildValue("(O()(i))", obj_new, cs);
    PyObject *stand_in = spec ? PyObject_CallOneArg(obj_new, (PyObject *)tp) : NULL;
    rc = -1;
    if (stand_in == NULL) {
        if (spec != NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            rc = sym_fail(t, "%s.__new__ raised (eager will raise)", tp->tp_name);
        }
        goto done;
    }
    int s = sym_source(t, DH_S_NEW, -1, t->nsrc, spec);
    var copy;
    if (s < 0 || sym_wrap(t, stand_in, s, &copy) < 0)
        goto done;
    if (copy.kind != V_OBJ) {
        rc = sym_fail(t, "copy.copy: the copy is not an object");
        goto done;
    }
    PyObject *keys = view.obj; /* kept by the trace */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        var v;
        if (sym_load_attr(t, x, PyTuple_GET_ITEM(keys, i), &v) < 0 ||
            sym_obj_plain_setattr(t, &copy, PyTuple_GET_ITEM(keys, i), &v) < 0)
            goto done;
    }
    *out = copy;
    rc = 0;
done:
    Py_XDECREF(spec);
    Py_XDECREF(stand_in);
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
            if (!sym_real_object_pinned(t, v)) {
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
        if (!sym_real_object_pinned(t, &args[i])) {
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
