/* obj_dict.c — the storage of dict-subclass instances the frame reads (an OrderedDict
 * subclass such as a model's output record built by eager and handed to its __init__ /
 * __post_init__, a registry class deriving from dict): the C methods of dict / OrderedDict
 * called on them, directly (o.keys(), o[k] where the class keeps dict's __getitem__, len(o),
 * k in o, iteration) or through super() from a Python override (super().__setitem__(k, v)).
 *
 * The contents are a tracked dict (a V_DICT) kept in a t->attrw slot with the marker
 * ("contents",) (never replayed), read on first use from the object: its length and keys
 * guarded, each value through a DH_S_ITEM source on the storage. A write updates that dict
 * (journalled: undone when a call becomes a graph break) and logs the C method itself, a
 * ("call", method) t->attrw entry with the arguments, replayed on the real object after the
 * graph in program order with the attribute writes (sideeffects.c dh_replay_container).
 * super().__setattr__(name, v) (object's) is an attribute write like STORE_ATTR's.
 *
 * Requires: the class keeps dict's (or OrderedDict's) __len__ and __iter__ (C ones): the
 *           storage read is then what the object holds; the methods called are C methods
 *           of dict or of a C subclass of it (OrderedDict, defaultdict) found in the MRO.
 * Keeps:    eager's effects in order; the object's identity (it is the caller's object).
 * Breaks:   nothing: anything else returns 1 (the caller's rules apply) or fails the trace.
 */
#include "sym.h"

#include <string.h>

static PyObject *contents_marker; /* ("contents",) kept for the process */

static int is_dsub_obj(const var *o) {
    return o->kind == V_OBJ && o->obj != NULL && o->src >= 0 && PyDict_Check(o->obj) &&
           !PyDict_CheckExact(o->obj) && !PyType_Check(o->obj);
}

/* dict itself or a C subclass of it: OrderedDict, defaultdict (a static type, or on 3.12 an
 * immutable heap type: no Python class is immutable) */
static int c_dict_type(PyTypeObject *tp) {
    return tp == &PyDict_Type || ((!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || (tp->tp_flags & Py_TPFLAGS_IMMUTABLETYPE)) &&
                                  PyType_IsSubtype(tp, &PyDict_Type));
}

/* the class keeps C __len__/__iter__ (no Python override of the storage's view) */
static int plain_storage(PyTypeObject *tp) {
    static PyObject *s_len, *s_iter;
    if (s_iter == NULL && ((s_len = PyUnicode_InternFromString("__len__")) == NULL ||
                           (s_iter = PyUnicode_InternFromString("__iter__")) == NULL))
        return 0; /* MemoryError, left set (csrc/pyerr.h) */
    PyObject *l = _PyType_Lookup(tp, s_len), *i = _PyType_Lookup(tp, s_iter);
    return l != NULL && i != NULL && !PyFunction_Check(l) && !PyFunction_Check(i);
}

static const char *const read_names[] = {"keys", "values", "items", "get", "__getitem__", "__contains__",
                                         "__len__", "__iter__", NULL};
static const char *const write_names[] = {"__setitem__", "__delitem__", "pop", "setdefault", "clear", NULL};

static int listed(const char *n, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (!strcmp(n, names[i]))
            return 1;
    return 0;
}

/* o's contents slot, or NULL where the trace has not read the whole storage yet */
static var *contents_if_any(trace *t, const var *o) {
    for (int i = 0; contents_marker != NULL && i < t->nattrw; i++)
        if (t->attrw[i].obj == o->obj && t->attrw[i].name == contents_marker)
            return t->attrw[i].val;
    return NULL;
}

/* the current contents of o (a var in a t->attrw slot), made from the object on first use */
static var *contents(trace *t, const var *o) {
    if (contents_marker == NULL && (contents_marker = Py_BuildValue("(s)", "contents")) == NULL)
        return NULL;
    var *have = contents_if_any(t, o);
    if (have != NULL)
        return have;
    if (!plain_storage(Py_TYPE(o->obj))) {
        sym_fail(t, "a %s with Python __len__/__iter__", Py_TYPE(o->obj)->tp_name);
        return NULL;
    }
    if (t->in_gen) {
        sym_fail(t, "dict-subclass storage read inside a generator");
        return NULL;
    }
    PyObject *keys = PySequence_List(o->obj); /* the object's own order (an OrderedDict's) */
    if (keys == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        sym_fail(t, "iterating a %s raised", Py_TYPE(o->obj)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(keys);
    var *d = sym_alloc(t, 1), *vals = sym_alloc(t, n > 0 ? (int)n : 1);
    PyObject *kt = PyList_AsTuple(keys);
    Py_DECREF(keys);
    if (d == NULL || vals == NULL || kt == NULL || sym_keep(t, kt) == NULL)
        return NULL;
    if (n > 64) {
        sym_fail(t, "a %s of %zd items", Py_TYPE(o->obj)->tp_name, n);
        return NULL;
    }
    if (sym_guard_len(t, o->src, (int)n) < 0 || sym_guard_key_order(t, o->src, kt) < 0)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(kt, i);
        if (!(PyUnicode_CheckExact(k) || PyLong_CheckExact(k))) {
            sym_fail(t, "a %s with keys that are not str/int", Py_TYPE(o->obj)->tp_name);
            return NULL;
        }
        PyObject *v = PyDict_GetItemWithError(o->obj, k); /* borrowed */
        if (v == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            sym_fail(t, "%s storage lookup failed", Py_TYPE(o->obj)->tp_name);
            return NULL;
        }
        Py_INCREF(v);
        int s = sym_guard_key(t, o->src, o->obj, k) < 0 ? -1 : sym_source(t, DH_S_ITEM, o->src, -1, k);
        int rc = s < 0 ? -1 : sym_wrap(t, v, s, &vals[i]);
        Py_DECREF(v);
        if (rc < 0)
            return NULL;
    }
    *d = sym_var(V_DICT);
    d->obj = kt;
    d->items = vals;
    d->n = (int)n;
    sym_attrw *w = sym_attrw_new(t);
    if (w == NULL)
        return NULL;
    w->src = o->src;
    w->obj = o->obj;
    w->name = contents_marker;
    w->val = d;
    return d;
}

/* the C method m (a descriptor of a dict type) called with args: logged for replay */
static int log_call(trace *t, const var *o, PyObject *m, var *args, int nargs) {
    if (t->in_gen)
        return sym_fail(t, "dict-subclass update inside a generator");
    PyObject *marker = Py_BuildValue("(sO)", "call", m);
    var *v = sym_alloc(t, 1), *a = sym_alloc(t, nargs > 0 ? nargs : 1);
    if (marker == NULL || sym_keep(t, marker) == NULL || v == NULL || a == NULL)
        return -1;
    for (int i = 0; i < nargs; i++) {
        a[i] = args[i];
        if (a[i].kind == V_FUNC && a[i].op == SYM_MADE_FUNCTION)
            return sym_fail(t, "storing a nested function into a %s", Py_TYPE(o->obj)->tp_name);
    }
    *v = sym_var(V_SEQ);
    v->n = nargs;
    v->items = a;
    sym_attrw *w = sym_attrw_new(t);
    if (w == NULL)
        return -1;
    w->src = o->src;
    w->obj = o->obj;
    w->name = marker;
    w->val = v;
    return 0;
}

/* a plain attribute write (object.__setattr__), as STORE_ATTR logs it */
static int log_setattr(trace *t, const var *o, PyObject *name, const var *val) {
    if (t->in_gen)
        return sym_fail(t, "attribute assignment inside a generator");
    if (!PyUnicode_Check(name))
        return sym_fail(t, "setattr with a non-str name (eager will raise)");
    if (val->kind == V_FUNC && val->op == SYM_MADE_FUNCTION)
        return sym_fail(t, "storing a nested function on an object");
    int i;
    for (i = 0; i < t->nattrw; i++)
        if (t->attrw[i].obj == o->obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0)
            break;
    if (i == t->nattrw) {
        if (sym_attrw_new(t) == NULL)
            return -1;
        t->attrw[i].src = o->src;
    }
    var *v = sym_alloc(t, 1);
    if (v == NULL)
        return -1;
    *v = *val;
    t->attrw[i].obj = o->obj;
    t->attrw[i].name = name;
    t->attrw[i].val = v;
    return 0;
}

/* m: a C method of a dict type we model, or object.__setattr__ */
static int modelled(PyObject *m, const char **name) {
    PyTypeObject *dt;
    if (Py_IS_TYPE(m, &PyMethodDescr_Type) || Py_IS_TYPE(m, &PyWrapperDescr_Type)) {
        dt = PyDescr_TYPE(m);
        *name = PyUnicode_AsUTF8(PyDescr_NAME(m));
    } else {
        return 0;
    }
    if (*name == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return 0;
    }
    if (dt == &PyBaseObject_Type)
        return !strcmp(*name, "__setattr__");
    return c_dict_type(dt) && (listed(*name, read_names) || listed(*name, write_names));
}

int sym_dsub_contents(trace *t, const var *o, var *out) {
    if (!is_dsub_obj(o) || !plain_storage(Py_TYPE(o->obj)))
        return 1;
    var *d = contents(t, o);
    if (d == NULL)
        return -1;
    *out = *d;
    return 0;
}

int sym_dsub_attr(trace *t, const var *o, PyObject *name, var *out) {
    if (!is_dsub_obj(o))
        return 1;
    PyObject *m = _PyType_Lookup(Py_TYPE(o->obj), name);
    const char *mn;
    if (m == NULL || !modelled(m, &mn) || !strcmp(mn, "__setattr__"))
        return 1;
    for (int i = 0; i < t->nattrw; i++) /* an instance attribute of that name shadows it */
        if (t->attrw[i].obj == o->obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0)
            return 1;
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    if (dp != NULL && *dp != NULL && PyDict_GetItemWithError(*dp, name) != NULL)
        return 1;
    if (tc_clear_expected(PyExc_Exception) < 0) /* the instance dict's lookup */
        return -1;
    return sym_method(t, o, name, -1, out); /* the name: the method is found again at the call */
}

int sym_dsub_super_attr(trace *t, PyObject *cls, const var *self, PyObject *name, var *out) {
    if (!is_dsub_obj(self) || !PyType_Check(cls))
        return 1;
    PyObject *mro = Py_TYPE(self->obj)->tp_mro;
    Py_ssize_t i = 0, n = mro ? PyTuple_GET_SIZE(mro) : 0;
    while (i < n && PyTuple_GET_ITEM(mro, i) != cls)
        i++;
    for (i++; i < n; i++) {
        PyObject *m = PyDict_GetItemWithError(dh_type_dict((PyTypeObject *)PyTuple_GET_ITEM(mro, i)), name);
        if (m == NULL) {
            if (PyErr_Occurred())
                return -1;
            continue;
        }
        const char *mn;
        return modelled(m, &mn) ? sym_method(t, self, m, -1, out) : 1;
    }
    return 1;
}

static int keys_items(trace *t, const var *d, int which, var *out) { /* 0 keys 1 values 2 items */
    var *items = sym_alloc(t, d->n > 0 ? d->n : 1);
    if (items == NULL)
        return -1;
    for (int i = 0; i < d->n; i++) {
        var key;
        if (which != 1 && sym_const(t, Py_NewRef(PyTuple_GET_ITEM(d->obj, i)), &key) < 0)
            return -1;
        if (which == 0) {
            items[i] = key;
        } else if (which == 1) {
            items[i] = d->items[i];
        } else {
            var *pair = sym_alloc(t, 2);
            if (pair == NULL)
                return -1;
            pair[0] = key;
            pair[1] = d->items[i];
            items[i] = sym_var(V_SEQ);
            items[i].n = 2;
            items[i].items = pair;
        }
    }
    *out = sym_var(V_SEQ);
    out->n = d->n;
    out->items = items;
    return 0;
}

static int find(trace *t, const var *d, PyObject *k) {
    for (int i = 0; i < d->n; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(d->obj, i), k, Py_EQ);
        if (eq < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "dict key comparison raised"), -2;
        }
        if (eq)
            return i;
    }
    return -1;
}

/* the contents now nd: journalled */
static void set_contents(trace *t, var *d, const var *nd) {
    var y = *nd;
    y.src = -1;
    sym_fx_set(t, d, &y);
}

int sym_dsub_call(trace *t, const var *fn, var *args, int npos, PyObject *kwnames, var *out) {
    if (fn->kind != V_METHOD || fn->items == NULL || !is_dsub_obj(&fn->items[0]) || fn->obj == NULL)
        return 1;
    const char *mn;
    const var *o = &fn->items[0];
    PyObject *m = PyUnicode_Check(fn->obj) ? _PyType_Lookup(Py_TYPE(o->obj), fn->obj) : fn->obj;
    if (m == NULL || !modelled(m, &mn))
        return 1;
    if (kwnames && PyTuple_GET_SIZE(kwnames))
        return sym_fail(t, "%s.%s with keyword arguments", Py_TYPE(o->obj)->tp_name, mn);
    if (!strcmp(mn, "__setattr__")) {
        if (npos != 2 || args[0].kind != V_CONST)
            return sym_fail(t, "object.__setattr__ with these arguments");
        if (log_setattr(t, o, args[0].obj, &args[1]) < 0)
            return -1;
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (contents_if_any(t, o) == NULL && npos >= 1 && npos <= 2 && args[0].kind == V_CONST &&
        (PyUnicode_CheckExact(args[0].obj) || PyLong_CheckExact(args[0].obj)) &&
        ((!strcmp(mn, "get")) || (npos == 1 && (!strcmp(mn, "__getitem__") || !strcmp(mn, "__contains__"))))) {
        /* one key of storage the trace has not written: its presence guarded, its value
         * read through a source (a registry of many entries is not read whole) */
        int has = sym_guard_key(t, o->src, o->obj, args[0].obj);
        if (has < 0)
            return -1;
        if (!strcmp(mn, "__contains__"))
            return sym_const(t, PyBool_FromLong(has), out);
        if (!has) {
            if (mn[0] == '_')
                return sym_raise(t, PyExc_KeyError, args[0].obj, "KeyError %R (eager will raise)", args[0].obj);
            if (npos == 2) {
                *out = args[1];
                return 0;
            }
            return sym_const(t, Py_NewRef(Py_None), out);
        }
        PyObject *v = PyDict_GetItemWithError(o->obj, args[0].obj);
        if (v == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "dict lookup failed");
        }
        Py_INCREF(v);
        int s = sym_source(t, DH_S_ITEM, o->src, -1, args[0].obj);
        int rc = s < 0 ? -1 : sym_wrap(t, v, s, out);
        Py_DECREF(v);
        return rc;
    }
    var *d = contents(t, o);
    if (d == NULL)
        return -1;
    if (!strcmp(mn, "keys") || !strcmp(mn, "values") || !strcmp(mn, "items")) {
        if (npos)
            return sym_fail(t, "dict.%s() takes no arguments (eager will raise)", mn);
        return keys_items(t, d, mn[0] == 'k' ? 0 : mn[0] == 'v' ? 1 : 2, out);
    }
    if (!strcmp(mn, "__len__") && npos == 0)
        return sym_const(t, PyLong_FromLong(d->n), out);
    if (!strcmp(mn, "__iter__") && npos == 0) {
        var ks;
        if (keys_items(t, d, 0, &ks) < 0)
            return -1;
        *out = sym_var(V_ITER);
        out->op = SYM_OWN_ITER;
        out->items = ks.items;
        out->n = ks.n;
        return 0;
    }
    if (!strcmp(mn, "clear") && npos == 0) {
        var nd = *d;
        for (int i = d->n - 1; i >= 0; i--)
            if (sym_dict_set(t, &nd, PyTuple_GET_ITEM(nd.obj, i), NULL) < 0)
                return -1;
        set_contents(t, d, &nd);
        if (log_call(t, o, m, args, 0) < 0)
            return -1;
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (npos < 1 || args[0].kind != V_CONST)
        return sym_fail(t, "%s.%s with these arguments not supported", Py_TYPE(o->obj)->tp_name, mn);
    PyObject *k = args[0].obj;
    int at = find(t, d, k);
    if (at == -2)
        return -1;
    if (!strcmp(mn, "__contains__") && npos == 1)
        return sym_const(t, PyBool_FromLong(at >= 0), out);
    if ((!strcmp(mn, "__getitem__") && npos == 1) || (!strcmp(mn, "get") && npos <= 2)) {
        if (at >= 0) {
            *out = d->items[at];
            return 0;
        }
        if (mn[0] == '_')
            return sym_raise(t, PyExc_KeyError, k, "KeyError %R (eager will raise)", k);
        if (npos == 2) {
            *out = args[1];
            return 0;
        }
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (!strcmp(mn, "__setitem__") && npos == 2) {
        var nd = *d;
        if (sym_dict_set(t, &nd, k, &args[1]) < 0)
            return -1;
        set_contents(t, d, &nd);
        if (log_call(t, o, m, args, 2) < 0)
            return -1;
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if ((!strcmp(mn, "__delitem__") && npos == 1) || (!strcmp(mn, "pop") && npos <= 2)) {
        if (at < 0) {
            if (mn[0] == 'p' && npos == 2) {
                *out = args[1];
                return 0;
            }
            return sym_raise(t, PyExc_KeyError, k, "KeyError %R (eager will raise)", k);
        }
        var r = d->items[at], nd = *d;
        if (sym_dict_set(t, &nd, k, NULL) < 0)
            return -1;
        set_contents(t, d, &nd);
        if (log_call(t, o, m, args, npos) < 0)
            return -1;
        if (mn[0] == 'p') {
            *out = r;
            return 0;
        }
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (!strcmp(mn, "setdefault") && npos <= 2) {
        if (at >= 0) {
            *out = d->items[at];
            return 0;
        }
        var dflt = npos == 2 ? args[1] : sym_var(V_CONST);
        if (npos < 2 && sym_const(t, Py_NewRef(Py_None), &dflt) < 0)
            return -1;
        var nd = *d;
        if (sym_dict_set(t, &nd, k, &dflt) < 0)
            return -1;
        set_contents(t, d, &nd);
        if (log_call(t, o, m, args, npos) < 0)
            return -1;
        *out = dflt;
        return 0;
    }
    return sym_fail(t, "%s.%s not supported", Py_TYPE(o->obj)->tp_name, mn);
}

/* len(o) / k in o / o[k] / iteration of a dict-subclass instance without Python dunders */
int sym_dsub_dunder(trace *t, const var *o, const char *name, var *args, int nargs, var *out) {
    if (!is_dsub_obj(o))
        return 1;
    PyObject *n = PyUnicode_InternFromString(name);
    if (n == NULL)
        return -1;
    PyObject *m = _PyType_Lookup(Py_TYPE(o->obj), n);
    Py_DECREF(n);
    const char *mn;
    if (m == NULL || !modelled(m, &mn))
        return 1;
    var fn;
    if (sym_method(t, o, m, -1, &fn) < 0)
        return -1;
    return sym_dsub_call(t, &fn, args, nargs, NULL, out);
}

/* len() of a dict-subclass instance that keeps dict's C __len__ (an OrderedDict such as a
 * module's _forward_hooks): the trace's contents where it has read or updated them, else the
 * object's length, guarded (no value is read) */
int sym_dsub_len(trace *t, const var *o, Py_ssize_t *n) {
    if (!is_dsub_obj(o) || !plain_storage(Py_TYPE(o->obj)))
        return 1;
    const var *c = contents_if_any(t, o);
    if (c != NULL) {
        *n = c->n;
        return 0;
    }
    *n = PyDict_GET_SIZE(o->obj);
    return sym_guard_len(t, o->src, (int)*n) < 0 ? -1 : 0;
}

/* after the graph: the logged C method called on the object (sideeffects.c) */
int dh_replay_call(PyObject *obj, PyObject *m, PyObject *args) {
    if (!PyTuple_Check(args)) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: a logged call without an argument tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *all = PyTuple_New(n + 1);
    if (all == NULL)
        return -1;
    PyTuple_SET_ITEM(all, 0, Py_NewRef(obj));
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(all, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyObject *r = PyObject_Call(m, all, NULL);
    Py_DECREF(all);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}
