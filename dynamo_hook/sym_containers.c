/* sym_containers.c — subscripts, sequences and dicts of the symbolic interpreter, and
 * the handlers of the opcodes that build, unpack, index and update them. */
#include "sym_interp.h"
#include "sym_sem.h"
#include "ops_internal.h"

#include <string.h>

/* a dict or set updated while map() or filter() runs its function ahead of its consumer
 * (t->in_map): the update would come before what eager does in between (a generator's
 * own memo set, named_modules', stays allowed) */
static int gen_effect(trace *t, const char *what) {
    return t->in_map ? sym_fail(t, "%s update inside map() or filter()", what) : 0;
}
static int dict_update(trace *t, const var *d, PyObject *k, const var *val);

/* d[k] of a defaultdict without k: default_factory() stored at k and returned */
static int default_missing(trace *t, const var *d, const var *k, var *out) {
    var fv = sym_var(V_FUNC), v;
    fv.obj = d->globals;
    fv.op = d->pos;
    if (PyCapsule_CheckExact(d->globals)) { /* a function made in the trace (obj_data.c) */
        var *made = PyCapsule_GetPointer(d->globals, "torchc.made_factory");
        if (made == NULL)
            return -1;
        fv = *made;
    } else if (PyFunction_Check(d->globals)) {
        fv.op = SYM_USER_FUNCTION;
        fv.src = sym_source(t, DH_S_CONST, -1, 0, d->globals);
        if (fv.src < 0)
            return -1;
    }
    if (sym_call(t, &fv, NULL, 0, NULL, &v) < 0 || t->failed)
        return -1;
    if (dict_update(t, d, k->obj, &v) < 0)
        return -1;
    *out = v;
    return 0;
}

/* items[slice] (a constant slice) of n items, a new array of *m items; NULL: failed (a
 * reason) or out of memory */
var *sym_slice_items(trace *t, PyObject *slice, const var *items, int n, int *m) {
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(slice, &start, &stop, &step) < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "bad slice (eager will raise)"), NULL;
    }
    Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
    var *sl = sym_alloc(t, (int)len);
    if (sl == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < len; i++)
        sl[i] = items[start + i * step];
    *m = (int)len;
    return sl;
}

/* type(c).__getitem__(c, k) inlined when it is a Python function and c has a source;
 * 1: it is not (nothing done) */
/* a typing construct (typing's special forms, aliases and TypeVars, types.GenericAlias) or a
 * class with __class_getitem__ (list, dict, a Generic subclass, collections.abc.Callable):
 * subscripting it only builds an alias */
static int typing_subscriptable(const var *c) {
    PyObject *o = c->obj;
    if (c->kind == V_FUNC && (c->op == SYM_MADE_FUNCTION || c->op == SYM_PARTIAL))
        return 0; /* obj is not the value itself */
    if (PyType_Check(o)) {
        static PyObject *s_cgi;
        if (s_cgi == NULL && (s_cgi = PyUnicode_InternFromString("__class_getitem__")) == NULL)
            return 0; /* MemoryError, left set */
        return _PyType_Lookup((PyTypeObject *)o, s_cgi) != NULL;
    }
    PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__module__");
    int yes = mod != NULL && PyUnicode_Check(mod) &&
              (PyUnicode_CompareWithASCIIString(mod, "typing") == 0 ||
               PyUnicode_CompareWithASCIIString(mod, "typing_extensions") == 0 ||
               (PyUnicode_CompareWithASCIIString(mod, "types") == 0 && !PyModule_Check(o) && !PyFunction_Check(o)));
    Py_XDECREF(mod);
    (void)tc_clear_expected(PyExc_AttributeError);
    return yes;
}

/* a typing subscript's key as the Python value (a constant, a class, a tuple/list of them),
 * new reference; NULL (no exception) where a part is a traced value */
static PyObject *typing_arg(trace *t, const var *v, int depth) {
    if ((v->kind == V_CONST || (v->kind == V_FUNC && v->op == -1)) && v->obj != NULL)
        return Py_NewRef(v->obj);
    if (v->kind == V_FUNC && v->obj != NULL && PyType_Check(v->obj))
        return Py_NewRef(v->obj);
    if (v->kind == V_OBJ && v->obj != NULL && !PyType_Check(v->obj) && typing_subscriptable(v))
        return Py_NewRef(v->obj); /* a TypeVar, a ParamSpec */
    if (v->kind != V_SEQ || v->obj != NULL || depth > 8)
        return NULL;
    PyObject *r = v->is_list ? PyList_New(v->n) : PyTuple_New(v->n);
    for (int i = 0; r != NULL && i < v->n; i++) {
        PyObject *it = typing_arg(t, &v->items[i], depth + 1);
        if (it == NULL) {
            Py_CLEAR(r);
            break;
        }
        if (v->is_list)
            PyList_SET_ITEM(r, i, it);
        else
            PyTuple_SET_ITEM(r, i, it);
    }
    return r;
}

static int inline_py_getitem(trace *t, const var *c, const var *k, var *out) {
    PyObject *gn = PyUnicode_InternFromString("__getitem__");
    if (gn == NULL)
        return -1;
    PyObject *fn = _PyType_Lookup(Py_TYPE(c->obj), gn);
    if (fn == NULL || !PyFunction_Check(fn) || c->src < 0) {
        Py_DECREF(gn);
        return 1;
    }
    var kk = *k;
    int fs = sym_source(t, DH_S_ATTR, c->src, 1, gn);
    Py_DECREF(gn);
    return fs < 0 ? -1 : sym_inline(t, fn, fs, c, &kk, 1, NULL, out);
}

static int subscr(trace *t, const var *c, const var *k, var *out) {
    if (c->kind == V_CONST && k->kind == V_CONST &&
        (PyTuple_Check(c->obj) || PyList_CheckExact(c->obj) || PyUnicode_CheckExact(c->obj)) &&
        (PyLong_Check(k->obj) || PySlice_Check(k->obj))) {
        PyObject *r = PyObject_GetItem(c->obj, k->obj);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "constant subscript raised");
        }
        return sym_const(t, r, out);
    }
    if (c->kind == V_DICT && (k->kind == V_CONST || (k->kind == V_FUNC && k->obj != NULL &&
                                                      (k->op == -1 || k->op == SYM_USER_FUNCTION)))) {
        /* (a function or class held as a callable is a key as itself: type(x), namedtuple) */
        if (sym_dict_view_read_key(t, c, k->obj) < 0)
            return -1;
        for (int i = 0; i < c->n; i++) {
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(c->obj, i), k->obj, Py_EQ);
            if (eq < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "dict key comparison raised");
            }
            if (eq) {
                *out = c->items[i];
                return 0;
            }
        }
        if (c->op == SYM_DICT_DEFAULT && c->globals != NULL && c->globals != Py_None)
            return default_missing(t, c, k, out); /* defaultdict: d[k] = factory() */
        if (c->op == SYM_DICT_COUNTER) /* Counter.__missing__: 0, nothing stored */
            return sym_const(t, PyLong_FromLong(0), out);
        return sym_raise(t, PyExc_KeyError, k->obj, "KeyError %R (eager will raise)", k->obj);
    }
    if (c->kind == V_SEQ && c->obj == NULL && k->kind == V_CONST && PySlice_Check(k->obj)) {
        /* seq[a:b:c]: a new list/tuple of the same items */
        int len;
        var *m = sym_slice_items(t, k->obj, c->items, c->n, &len);
        if (m == NULL)
            return -1;
        *out = *c;
        out->src = -1;
        out->n = len;
        out->items = m;
        return 0;
    }
    if (c->kind == V_SEQ && k->kind == V_CONST && PyLong_CheckExact(k->obj)) {
        long i;
        int in = sym_const_index(k->obj, c->n, &i);
        if (in < 0)
            return -1;
        if (!in) /* eager's IndexError: an except clause of the trace catches it */
        {
            PyObject *m = sym_keep(t, PyUnicode_FromString(c->is_list ? "list index out of range" : "tuple index out of range"));
            return m ? sym_raise(t, PyExc_IndexError, m, "%U", m) : -1;
        }
        *out = c->items[i];
        return 0;
    }
    if ((c->kind == V_FUNC || c->kind == V_CONST || c->kind == V_OBJ) && c->obj != NULL && typing_subscriptable(c)) {
        /* Callable[[T], Any], Optional[int], dict[str, Tensor], a Generic class's C[T]: an
         * annotation evaluated when a nested function is made; typing's subscripts build
         * (cached) alias objects and change nothing: a constant made now */
        PyObject *key = typing_arg(t, k, 0);
        if (key != NULL) {
            PyObject *r = PyObject_GetItem(c->obj, key);
            Py_DECREF(key);
            if (r == NULL) {
                if (tc_clear_expected(PyExc_Exception) < 0)
                    return -1;
                return sym_fail(t, "a typing subscript raised (eager will raise)");
            }
            return sym_const(t, r, out);
        }
        if (PyErr_Occurred())
            return -1;
    }
    if (c->kind == V_OBJ && !PyModule_Check(c->obj) && !sym_is_nn_module(c->obj) && c->src >= 0) {
        /* a user container: type(c).__getitem__(c, k) inlined */
        int rc = inline_py_getitem(t, c, k, out);
        if (rc == 1 && PyDict_Check(c->obj)) {
            var kk = *k; /* obj_dict.c: dict's own __getitem__ on the storage */
            rc = sym_dsub_dunder(t, c, "__getitem__", &kk, 1, out);
        }
        return rc == 1 ? sym_fail(t, "subscript of a %s", Py_TYPE(c->obj)->tp_name) : rc;
    }
    if (c->kind == V_OBJ && !PyModule_Check(c->obj) && k->kind == V_CONST && PyUnicode_Check(k->obj) &&
        c->src >= 0) {
        /* ModuleDict["name"] */
        PyObject *m = dh_module_getattr(c->obj, k->obj);
        if (m == NULL)
            return sym_fail(t, "KeyError %R (eager will raise)", k->obj);
        int s = sym_source(t, DH_S_ATTR, c->src, 0, k->obj);
        int rc = s < 0 ? -1 : sym_wrap(t, m, s, out);
        Py_DECREF(m);
        return rc;
    }
    if (c->kind == V_OBJ && k->kind == V_CONST && PySlice_Check(k->obj) &&
        Py_TYPE(c->obj) == (PyTypeObject *)sym_module_list_type()) {
        /* ModuleList[a:b]: a new ModuleList of the same submodules (made for real where
         * it leaves the trace: DH_O_WRAP calls ModuleList(tuple)) */
        var *items;
        int n, m;
        if (sym_iter_items(t, c, &items, &n) < 0)
            return -1;
        var *sl = sym_slice_items(t, k->obj, items, n, &m);
        if (sl == NULL)
            return -1;
        *out = sym_var(V_SEQ);
        out->n = m;
        out->items = sl;
        out->obj = sym_module_list_type();
        return 0;
    }
    if (c->kind == V_OBJ && !PyModule_Check(c->obj) && k->kind == V_CONST && PyLong_CheckExact(k->obj)) {
        /* ModuleList / Sequential indexing by a constant */
        var *items;
        int n;
        if (!sym_is_module_container(c->obj, "__getitem__")) {
            /* another module with a Python __getitem__ (ParameterList, a user's): inlined */
            int rc = inline_py_getitem(t, c, k, out);
            return rc == 1 ? sym_fail(t, "indexing a %s not supported", Py_TYPE(c->obj)->tp_name) : rc;
        }
        if (sym_iter_items(t, c, &items, &n) < 0)
            return -1;
        long i;
        int in = sym_const_index(k->obj, n, &i);
        if (in <= 0)
            return in < 0 ? -1 : sym_fail(t, "module index out of range (eager will raise)");
        *out = items[i];
        return 0;
    }
    if (c->kind == V_TENSOR)
        return sym_tensor_index(t, c, k, out);
    if (c->kind == V_REC)
        return sym_record_subscr(t, c, k, out);
    if ((c->kind == V_FUNC || c->kind == V_CONST) && c->obj != NULL &&
        (c->obj == (PyObject *)&PyList_Type || c->obj == (PyObject *)&PyDict_Type ||
         c->obj == (PyObject *)&PyTuple_Type || c->obj == (PyObject *)&PySet_Type ||
         c->obj == (PyObject *)&PyFrozenSet_Type || c->obj == (PyObject *)&PyType_Type) &&
        (k->kind == V_FUNC || k->kind == V_CONST) && k->obj != NULL &&
        (PyType_Check(k->obj) || PyTuple_CheckExact(k->obj))) {
        /* list[Tensor] & co (typing.cast's first argument): a types.GenericAlias, a
         * constant made now (builtin __class_getitem__ only builds the alias) */
        PyObject *r = PyObject_GetItem(c->obj, k->obj);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "generic alias raised");
        }
        return sym_const(t, r, out);
    }
    {
        var kk = *k; /* EnumClass["NAME"]: the metaclass's __getitem__ (obj_proto.c) */
        int crc = sym_class_dunder(t, c, "__getitem__", &kk, 1, out);
        if (crc <= 0)
            return crc;
    }
    if (c->kind == V_CONST && c->obj == Py_None) { /* None[...]: eager raises */
        PyObject *msg = PyUnicode_FromString("'NoneType' object is not subscriptable");
        if (msg == NULL || sym_keep(t, msg) == NULL)
            return -1;
        return sym_raise(t, PyExc_TypeError, msg, "'NoneType' object is not subscriptable (eager will raise)");
    }
    return sym_fail(t, "subscript of an unsupported value");
}

static int build_seq(trace *t, sframe *f, int n, int is_list, var *out) {
    int allconst = 1;
    for (int i = 0; i < n; i++)
        if (PEEK(n - i).kind != V_CONST)
            allconst = 0;
    if (allconst && !is_list) {
        PyObject *tup = PyTuple_New(n);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < n; i++)
            PyTuple_SET_ITEM(tup, i, Py_NewRef(PEEK(n - i).obj));
        f->sp -= n;
        return sym_const(t, tup, out);
    }
    var *items = sym_alloc(t, n);
    if (items == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        items[i] = PEEK(n - i);
    f->sp -= n;
    *out = sym_var(V_SEQ);
    out->is_list = is_list;
    out->n = n;
    out->items = items;
    return 0;
}

int sym_iter_items(trace *t, const var *v, var **items, int *n) {
    if (v->kind == V_GEN) /* run to its end (sym_gen.c) */
        return sym_gen_drain(t, v, items, n);
    if (v->kind == V_ITER && v->op == SYM_LAZY_ITER) /* taken to the end (obj_iter.c) */
        return sym_lazy_iter_drain(t, (var *)v, items, n);
    if (v->kind == V_DICT) { /* iterating a dict: its keys */
        if (sym_dict_view_keys(t, v) < 0)
            return -1;
        var *it = sym_alloc(t, v->n);
        if (it == NULL)
            return -1;
        for (int i = 0; i < v->n; i++)
            if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(v->obj, i)), &it[i]) < 0)
                return -1;
        *items = it;
        *n = v->n;
        return 0;
    }
    if (v->kind == V_SEQ || v->kind == V_ITER) {
        *items = v->items + (v->kind == V_ITER ? v->pos : 0);
        *n = v->n - (v->kind == V_ITER ? v->pos : 0);
        return 0;
    }
    if (v->kind == V_CONST && (PyTuple_Check(v->obj) || PyList_CheckExact(v->obj) ||
                               PyRange_Check(v->obj) || PyUnicode_CheckExact(v->obj) ||
                               PyBytes_CheckExact(v->obj))) {
        /* a str: its characters; bytes: their ints (constants, as eager's iteration) */
        PyObject *seq = PySequence_Fast(v->obj, "");
        if (seq == NULL)
            return -1;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        if (k > dh_limit.max_unroll) {
            Py_DECREF(seq);
            return sym_fail(t, "constant sequence of %zd items too long to unroll (torchc.config.max_unroll)", k);
        }
        var *it = sym_alloc(t, (int)k);
        if (it == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        for (Py_ssize_t i = 0; i < k; i++)
            if (sym_const(t, Py_NewRef(PySequence_Fast_GET_ITEM(seq, i)), &it[i]) < 0) {
                Py_DECREF(seq);
                return -1;
            }
        Py_DECREF(seq);
        *items = it;
        *n = (int)k;
        return 0;
    }
    if (v->kind == V_OBJ && !PyModule_Check(v->obj)) {
        /* nn.Sequential / nn.ModuleList (or a subclass keeping their __iter__): their
         * submodules, in order */
        if (!sym_is_module_container(v->obj, "__iter__")) {
            int rc = sym_obj_iter(t, v, items, n); /* obj_proto.c: a Python __iter__ */
            if (rc <= 0)
                return rc;
            return sym_fail(t, "iteration over %s not supported yet", Py_TYPE(v->obj)->tp_name);
        }
        static PyObject *name; /* interned "_modules", kept for the process */
        if (name == NULL && (name = PyUnicode_InternFromString("_modules")) == NULL)
            return -1;
        PyObject *mods = dh_module_getattr(v->obj, name);
        if (mods == NULL || !PyDict_Check(mods)) {
            Py_XDECREF(mods);
            return sym_fail(t, "module container without _modules");
        }
        int k = (int)PyDict_GET_SIZE(mods);
        var *it = sym_alloc(t, k);
        /* a submodule appended later (Sequential.append) must not hit this entry */
        int ms = v->src >= 0 ? sym_source(t, DH_S_ATTR, v->src, 0, name) : -1;
        if (it == NULL || (v->src >= 0 && (ms < 0 || sym_guard_len(t, ms, k) < 0))) {
            Py_DECREF(mods);
            return -1;
        }
        PyObject *key, *val;
        Py_ssize_t pos = 0;
        int j = 0;
        while (PyDict_Next(mods, &pos, &key, &val) && j < k) {
            int s = sym_source(t, DH_S_ATTR, v->src, 0, key);
            if (s < 0 || sym_wrap(t, val, s, &it[j++]) < 0) {
                Py_DECREF(mods);
                return -1;
            }
        }
        Py_DECREF(mods);
        *items = it;
        *n = j;
        return 0;
    }
    if (v->kind == V_TENSOR) /* its rows (sym_iter_tensor.c) */
        return sym_tensor_iter_items(t, v, items, n);
    int crc = sym_obj_iter(t, v, items, n); /* a class with a metaclass __iter__ (obj_proto.c) */
    if (crc <= 0)
        return crc;
    return sym_fail(t, "iteration over an unsupported value");
}

/* ---- dicts -------------------------------------------------------------------------- */

/* A dict of constant keys; values are tracked values. Keys must be hashable constants. */
static int make_dict(trace *t, PyObject *keys, var *vals, int n, var *out) {
    *out = sym_var(V_DICT);
    out->n = n;
    out->items = vals;
    out->obj = keys;
    return 0;
}

int sym_dict_from_const(trace *t, PyObject *d, var *out) {
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0;
    PyObject *k, *v, *keys = PyTuple_New(n);
    var *vals = sym_alloc(t, (int)n);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    int i = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        PyTuple_SET_ITEM(keys, i, Py_NewRef(k));
        if (sym_wrap(t, v, -1, &vals[i++]) < 0) {
            Py_DECREF(keys);
            return -1;
        }
    }
    PyObject *kk = sym_keep(t, keys);
    return kk ? make_dict(t, kk, vals, (int)n, out) : -1;
}

static int dict_merge(trace *t, var *dst, const var *src) {
    var tmp;
    if (src->kind == V_CONST && PyDict_Check(src->obj)) {
        if (sym_dict_from_const(t, src->obj, &tmp) < 0)
            return -1;
        src = &tmp;
    } else if (src->kind == V_REC) { /* a ModelOutput made in the trace: its non-None fields */
        if (sym_record_as_dict(t, src, &tmp) < 0)
            return -1;
        src = &tmp;
    } else if (src->kind == V_OBJ) { /* a dict-subclass instance passed in: its storage */
        int rc = sym_dsub_contents(t, src, &tmp);
        if (rc < 0)
            return -1;
        if (rc == 0)
            src = &tmp;
    }
    if (dst->kind != V_DICT || src->kind != V_DICT)
        return sym_fail(t, "dict merge of unsupported values");
    if (sym_dict_view_write(t, dst) < 0 || sym_dict_view_read(t, src) < 0) /* obj.__dict__ views */
        return -1;
    int n = dst->n + src->n;
    PyObject *keys = PyTuple_New(n);
    var *vals = sym_alloc(t, n);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    int m = 0;
    for (int pass = 0; pass < 2; pass++) {
        const var *d = pass ? src : dst;
        for (int i = 0; i < d->n; i++) {
            PyObject *k = PyTuple_GET_ITEM(d->obj, i);
            int at = -1;
            for (int j = 0; j < m; j++) {
                int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(keys, j), k, Py_EQ);
                if (eq < 0) {
                    (void)tc_clear_expected(PyExc_Exception);
                    Py_DECREF(keys);
                    return sym_fail(t, "dict key comparison raised");
                }
                if (eq)
                    at = j;
            }
            if (at < 0) {
                PyTuple_SET_ITEM(keys, m, Py_NewRef(k));
                at = m++;
            }
            vals[at] = d->items[i];
        }
    }
    if (_PyTuple_Resize(&keys, m) < 0)
        return -1;
    PyObject *kk = sym_keep(t, keys);
    var was = *dst;
    if (kk == NULL || make_dict(t, kk, vals, m, dst) < 0)
        return -1;
    dst->op = was.op; /* an OrderedDict / defaultdict stays one (obj_data.c) */
    dst->globals = was.globals;
    dst->pos = was.pos;
    return 0;
}

int sym_dict_merge(trace *t, var *dst, const var *src) { return dict_merge(t, dst, src); }

/* Index of constant key k in dict d, -1 when absent, -2 on a comparison error (failed). */
static int dict_find(trace *t, const var *d, PyObject *k) {
    if (sym_dict_view_keys(t, d) < 0)
        return -2;
    for (int i = 0; i < d->n; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(d->obj, i), k, Py_EQ);
        if (eq < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            sym_fail(t, "dict key comparison raised");
            return -2;
        }
        if (eq)
            return i;
    }
    return -1;
}

int sym_dict_find(trace *t, const var *d, PyObject *k) { return dict_find(t, d, k); }

/* Vars are values: every copy of a dict (locals, stack, closures, containers of any live
 * frame) shares its items array, which names the dict. An update builds the new keys and
 * items, then rebinds every copy. */
static int same_object(const var *x, const var *items, const var *nd) {
    if (x->items != items)
        return 0;
    if (nd->kind == V_SEQ)
        return x->kind == V_SEQ && x->is_list;
    if (nd->kind == V_CONST) /* a set made in the trace: named by its token (sym_set_method) */
        return x->kind == V_CONST && x->is_list;
    if (nd->kind == V_ITER) /* an iterator the frame holds (obj_data.c) */
        return x->kind == V_ITER;
    return x->kind == V_DICT || x->kind == V_REC;
}

static void dict_rebind(trace *t, var *v, int n, const var *items, const var *nd, int depth) {
    for (int i = 0; i < n; i++) {
        var *x = &v[i];
        if (same_object(x, items, nd)) {
            var y = *nd;
            y.src = x->src;
            if (x->kind == V_DICT && x->op == SYM_DICT_PROXY)
                y.op = SYM_DICT_PROXY; /* a mappingproxy of the dict: still one, live */
            sym_fx_set(t, x, &y); /* journalled: undone if the call becomes a break */
            continue;
        }
        if (depth < 8 && x->items != NULL && x->items != items &&
            (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC || x->kind == V_METHOD))
            dict_rebind(t, x->items, x->kind == V_METHOD ? 1 : x->n, items, nd, depth + 1);
    }
}

/* copies of the dict named by items in v[0..n) (containers too) */
static int dict_refs(const var *v, int n, const var *items, int depth) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if ((x->kind == V_DICT || x->kind == V_REC || (x->kind == V_SEQ && x->is_list) ||
             (x->kind == V_CONST && x->is_list) || (x->kind == V_ITER && x->op == SYM_OWN_ITER)) &&
            x->items == items)
            k++;
        else if (depth < 8 && x->items != NULL &&
                 (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC || x->kind == V_METHOD))
            k += dict_refs(x->items, x->kind == V_METHOD ? 1 : x->n, items, depth + 1);
    }
    return k;
}

/* A graph break rebuilds an iterator the frame holds from its items: one reachable twice
 * from the state handed to the resume function (or with its list) would split in two; a
 * set made in the trace too (an iterator over it is its items in the trace's order, which
 * a rebuilt set need not iterate in). Lists, dicts, records and made functions are built
 * once however often they are reached (sym_fill_out). */
/* handed on as the caller's own object (fill_out: an unchanged source), not rebuilt */
static int passed_as_source(trace *t, const var *x) {
    return x->src >= 0 && x->src < t->capsrc && t->srcdone[x->src] &&
           t->srcvar[x->src].kind == x->kind && t->srcvar[x->src].items == x->items &&
           t->srcvar[x->src].n == x->n;
}

int sym_dicts_shared(trace *t, const var *v, int n, const var *all, int nall, int depth) {
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if (((x->kind == V_ITER && x->op == SYM_OWN_ITER) || (x->kind == V_CONST && x->is_list)) &&
            x->items != NULL && !passed_as_source(t, x) && dict_refs(all, nall, x->items, 0) > 1)
            return 1;
        if (depth < 8 && x->items != NULL && (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC) &&
            sym_dicts_shared(t, x->items, x->n, all, nall, depth + 1))
            return 1;
    }
    return 0;
}

static void dict_rebind_all(trace *t, const var *old, const var *nd) {
    for (int i = 0; i < t->nframes; i++) {
        sframe *f = t->frames[i];
        dict_rebind(t, f->stack, f->sp, old, nd, 0);
        dict_rebind(t, f->locals, f->nlocals, old, nd, 0);
        if (f->closure)
            dict_rebind(t, f->closure, f->nclosure, old, nd, 0);
    }
    for (int i = 0; i < t->nattrw; i++) /* stored on a module, replayed after the graph */
        dict_rebind(t, t->attrw[i].val, 1, old, nd, 0);
    sym_fx_rebind_sources(t, old, nd); /* sideeffects.c: containers passed in, written back */
    /* copies held inside a container read from the frame's inputs (a list in a dict
     * attribute, read again through the dict after an append) */
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++) {
        var *x = &t->srcvar[s];
        if (t->srcdone[s] && x->items != NULL && x->items != old &&
            (x->kind == V_SEQ || x->kind == V_DICT || x->kind == V_REC))
            dict_rebind(t, x->items, x->n, old, nd, 1);
    }
}

/* A list (or dict) made in the trace changed: every copy of it, in any live frame or
 * container, now holds nv (journalled). Lists are named by their items array. */
void sym_rebind(trace *t, const var *old_items, const var *nv) { dict_rebind_all(t, old_items, nv); }

/* iterators (V_ITER) over the array items in v[0..n), containers included */
static int iter_refs(const var *v, int n, const var *items, int depth) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if (x->kind == V_ITER && x->items == items)
            k++;
        else if (depth < 8 && x->items != NULL && x->items != items &&
                 (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC ||
                  x->kind == V_METHOD))
            k += iter_refs(x->items, x->kind == V_METHOD ? 1 : x->n, items, depth + 1);
    }
    return k;
}

/* copies of the iterator named by items in the live frames */
int sym_iter_copies(trace *t, const var *items) {
    int k = 0;
    for (int i = 0; i < t->nframes; i++) {
        sframe *f = t->frames[i];
        k += iter_refs(f->stack, f->sp, items, 0) + iter_refs(f->locals, f->nlocals, items, 0);
        if (f->closure)
            k += iter_refs(f->closure, f->nclosure, items, 0);
    }
    return k;
}

/* The top frame's **kwargs dict: made fresh by the call, no caller holds it (resume
 * functions take their locals as plain arguments: no CO_VARKEYWORDS). */
static int own_kwargs(trace *t, const var *d) {
    PyCodeObject *co = t->code;
    if (d->src < 0 || d->src >= t->nsrc || t->src[d->src].kind != DH_S_LOCAL ||
        !(co->co_flags & CO_VARKEYWORDS))
        return 0;
    Py_ssize_t kw = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0);
    return t->src[d->src].index == kw;
}

/* d | other (a new dict, d's kind: an OrderedDict stays one) and d |= other (d updated in
 * place, as d.update(other): written back when d was passed in) */
int sym_dict_or(trace *t, const var *d, const var *other, int inplace, var *out) {
    if (d->kind != V_DICT || d->items == NULL || d->op == SYM_DICT_VIEW)
        return sym_fail(t, "dict | of an unsupported dict");
    if (other->kind != V_DICT && other->kind != V_REC && other->kind != V_OBJ &&
        !(other->kind == V_CONST && PyDict_Check(other->obj)))
        return sym_fail(t, "dict | of a non-dict (eager will raise)");
    if (!inplace) {
        var *vals = sym_alloc(t, d->n > 0 ? d->n : 1);
        if (vals == NULL)
            return -1;
        memcpy(vals, d->items, (size_t)d->n * sizeof(var));
        *out = *d;
        out->src = -1;
        out->items = vals;
        return dict_merge(t, out, other);
    }
    if (gen_effect(t, "dict") < 0 || (d->src >= 0 && !own_kwargs(t, d) && sym_fx_container_write(t, d) < 0))
        return -1;
    var m = *d;
    if (dict_merge(t, &m, other) < 0)
        return -1;
    dict_rebind_all(t, d->items, &m);
    *out = m;
    return 0;
}

/* d[k] = val (val NULL: del d[k]; the key must exist). Dicts read from the frame's inputs
 * are left to eager (the caller would see the update), except the frame's own **kwargs. */
static int dict_update(trace *t, const var *d, PyObject *k, const var *val) {
    if (d->kind != V_DICT || d->items == NULL)
        return sym_fail(t, "update of an unsupported dict");
    if (gen_effect(t, "dict") < 0 || sym_dict_view_write(t, d) < 0)
        return -1;
    if (d->src >= 0 && !own_kwargs(t, d) && sym_fx_container_write(t, d) < 0)
        return -1;
    var nd = *d;
    if (sym_dict_set(t, &nd, k, val) < 0)
        return -1;
    dict_rebind_all(t, d->items, &nd);
    return 0;
}

/* *d (a value, not rebound) with d[k] = val (val NULL: del d[k]; the key must exist): new
 * keys and items, d's kind kept */
int sym_dict_set(trace *t, var *dv, PyObject *k, const var *val) {
    const var dcopy = *dv, *d = &dcopy;
    if (PyObject_Hash(k) == -1) {
        (void)tc_clear_expected(PyExc_TypeError);
        return sym_fail(t, "unhashable dict key");
    }
    int at = dict_find(t, d, k);
    if (at == -2)
        return -1;
    if (at < 0 && val == NULL)
        return sym_raise(t, PyExc_KeyError, k, "KeyError %R (eager will raise)", k);
    int n = d->n + (at < 0 ? 1 : val == NULL ? -1 : 0);
    PyObject *keys = PyTuple_New(n);
    var *vals = sym_alloc(t, n);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < d->n; i++) {
        if (i == at && val == NULL)
            continue;
        PyTuple_SET_ITEM(keys, m, Py_NewRef(PyTuple_GET_ITEM(d->obj, i)));
        vals[m++] = i == at ? *val : d->items[i];
    }
    if (at < 0) {
        PyTuple_SET_ITEM(keys, m, Py_NewRef(k));
        vals[m++] = *val;
    }
    PyObject *kk = sym_keep(t, keys);
    if (kk == NULL)
        return -1;
    make_dict(t, kk, vals, m, dv);
    dv->op = d->op;
    dv->globals = d->globals;
    dv->pos = d->pos;
    dv->src = d->src;
    return 0;
}

/* d.get(k, default) / d.pop(k[, default]) / d.setdefault(k, default) / d.copy() /
 * d.update(other) / d.__contains__(k) on a dict of constant keys; 0, or -1 failed */
int sym_dict_method(trace *t, const var *d, const char *mn, var *args, int nargs, var *out) {
    if (d->kind == V_DICT && (d->op == SYM_DICT_VIEW || d->op == SYM_DICT_PROXY)) { /* obj.__dict__ (obj_dictview.c), a mappingproxy */
        int rd = !strcmp(mn, "copy") || !strcmp(mn, "get") || !strcmp(mn, "__contains__") ||
                 !strcmp(mn, "keys") || !strcmp(mn, "values") || !strcmp(mn, "items") || !strcmp(mn, "__getitem__");
        if (!rd)
            return sym_dict_view_write(t, d);
        int one = (!strcmp(mn, "get") || !strcmp(mn, "__getitem__")) && nargs >= 1 && args[0].kind == V_CONST;
        if ((one ? sym_dict_view_read_key(t, d, args[0].obj)
                 : !strcmp(mn, "__contains__") || !strcmp(mn, "keys") ? sym_dict_view_keys(t, d)
                                                                      : sym_dict_view_read(t, d)) < 0)
            return -1;
    }
    if (!strcmp(mn, "copy") && nargs == 0) {
        var *vals = sym_alloc(t, d->n);
        if (vals == NULL)
            return -1;
        memcpy(vals, d->items, (size_t)d->n * sizeof(var));
        make_dict(t, d->obj, vals, d->n, out);
        int plain = d->op == SYM_DICT_VIEW || d->op == SYM_DICT_PROXY; /* a mappingproxy's copy: a dict */
        out->op = plain ? 0 : d->op; /* od.copy() is an OrderedDict (obj_data.c) */
        out->globals = plain ? NULL : d->globals;
        out->pos = d->pos;
        return 0;
    }
    if (!strcmp(mn, "update") && nargs == 1) {
        if (gen_effect(t, "dict") < 0 || (d->src >= 0 && !own_kwargs(t, d) && sym_fx_container_write(t, d) < 0))
            return -1;
        var m = *d;
        if (dict_merge(t, &m, &args[0]) < 0)
            return -1;
        dict_rebind_all(t, d->items, &m);
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    /* a key: a constant, or an object compared by identity (a class: a registry by type) */
    if (nargs < 1 || nargs > 2 ||
        (args[0].kind != V_CONST &&
         !(sym_real_object_pinned(t, &args[0]) && Py_TYPE(args[0].obj)->tp_hash == PyBaseObject_Type.tp_hash &&
           Py_TYPE(args[0].obj)->tp_richcompare == PyBaseObject_Type.tp_richcompare)))
        return sym_fail(t, "dict.%s with these arguments not supported", mn);
    PyObject *k = args[0].obj;
    int at = dict_find(t, d, k);
    if (at == -2)
        return -1;
    if (!strcmp(mn, "__contains__") && nargs == 1)
        return sym_const(t, PyBool_FromLong(at >= 0), out);
    if (!strcmp(mn, "get") || !strcmp(mn, "pop") || !strcmp(mn, "setdefault")) {
        if (at >= 0)
            *out = d->items[at];
        else if (nargs == 2)
            *out = args[1];
        else if (!strcmp(mn, "pop"))
            return sym_raise(t, PyExc_KeyError, k, "KeyError %R (eager will raise)", k);
        else if (sym_const(t, Py_NewRef(Py_None), out) < 0)
            return -1;
        if (!strcmp(mn, "pop") && at >= 0)
            return dict_update(t, d, k, NULL);
        if (!strcmp(mn, "setdefault") && at < 0)
            return dict_update(t, d, k, out);
        return 0;
    }
    return sym_fail(t, "dict.%s not supported", mn);
}

/* a __contains__ inlined answered r: its truth (not, for `not in`) pushed */
static int push_contains(trace *t, sframe *f, const var *r, int invert, const char *what) {
    var c;
    int truth = r->kind == V_CONST ? PyObject_IsTrue(r->obj) : -1;
    if (truth < 0) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return -1;
        return sym_fail(t, "'in' on a %s: not a constant answer", what);
    }
    if (sym_const(t, PyBool_FromLong(truth ^ invert), &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* CONTAINS_OP */
int sym_op_contains_op(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
    NEED(2);
    b = POP();
    a = POP();
    if (a.kind == V_CONST && b.kind == V_REC) {
        /* "loss" in model_output: its class's __contains__ inlined (ModelOutput's renames a
         * key, then super().__contains__: dict's on its non-None fields, sym_attr.c) */
        PyObject *cn = PyUnicode_InternFromString("__contains__");
        PyObject *cls = sym_record_class(&b), *fn = cn ? _PyType_Lookup((PyTypeObject *)cls, cn) : NULL;
        int dicts = cn && fn == _PyType_Lookup(&PyDict_Type, cn);
        Py_XDECREF(cn);
        var r;
        if (dicts) {
            if (sym_record_as_dict(t, &b, &b) < 0)
                return -1;
        } else {
            int fs = fn && PyFunction_Check(fn) ? sym_source(t, DH_S_CONST, -1, 0, fn) : -2;
            if (fs == -2)
                return sym_fail(t, "'in' on a %s", ((PyTypeObject *)cls)->tp_name);
            if (fs < 0 || sym_inline(t, fn, fs, &b, &a, 1, NULL, &r) < 0)
                return -1;
            int truth = r.kind == V_CONST ? PyObject_IsTrue(r.obj) : -1;
            if (truth < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "'in' on a %s: not a constant answer", ((PyTypeObject *)cls)->tp_name);
            }
            if (sym_const(t, PyBool_FromLong(truth ^ in->oparg), &c) < 0)
                return -1;
            PUSH(c);
            return SYM_NEXT;
        }
    }
    /* a function or class (held as a callable: namedtuple, type(x)) as a key: hashed as itself */
    int keylike = a.kind == V_CONST || (a.kind == V_FUNC && a.obj != NULL && (a.op == -1 || a.op == SYM_USER_FUNCTION));
    if (keylike && b.kind == V_DICT) {
        int at = dict_find(t, &b, a.obj);
        if (at == -2)
            return -1;
        if (sym_const(t, PyBool_FromLong((at >= 0) ^ in->oparg), &c) < 0)
            return -1;
        PUSH(c);
        return SYM_NEXT;
    }
    if (a.kind == V_CONST && b.kind == V_SEQ) { /* constants only: == on values */
        int r = 0, i;
        /* (classes held as callables too: `type(t) in _foreach_supported_types`; == of two
         * classes is identity unless a metaclass says otherwise, which RichCompare asks) */
        for (i = 0; i < b.n && !r && (b.items[i].kind == V_CONST ||
                                      (b.items[i].kind == V_FUNC && b.items[i].obj != NULL &&
                                       b.items[i].op != SYM_MADE_FUNCTION && b.items[i].op != SYM_PARTIAL &&
                                       PyType_Check(b.items[i].obj))); i++) {
            r = PyObject_RichCompareBool(b.items[i].obj, a.obj, Py_EQ);
            if (r < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "'in' raised");
            }
        }
        if (!r && i < b.n)
            return sym_fail(t, "'in' on a sequence of non-constant values");
        if (sym_const(t, PyBool_FromLong(r ^ in->oparg), &c) < 0)
            return -1;
        PUSH(c);
        return SYM_NEXT;
    }
    if (b.kind == V_OBJ && b.src >= 0 && !PyModule_Check(b.obj)) {
        /* a user mapping/container: type(b).__contains__(b, a) inlined */
        PyObject *cn = PyUnicode_InternFromString("__contains__");
        PyObject *fn = cn ? _PyType_Lookup(Py_TYPE(b.obj), cn) : NULL;
        if (fn != NULL && !PyFunction_Check(fn) && PyDict_Check(b.obj)) {
            Py_DECREF(cn); /* obj_dict.c: dict's own __contains__ on the storage */
            int rc = sym_dsub_dunder(t, &b, "__contains__", &a, 1, &c);
            if (rc == 1)
                return sym_fail(t, "'in' on a %s", Py_TYPE(b.obj)->tp_name);
            if (rc < 0)
                return -1;
            if (in->oparg && sym_const(t, PyBool_FromLong(c.obj != Py_True), &c) < 0)
                return -1;
            PUSH(c);
            return SYM_NEXT;
        }
        if (fn == NULL || !PyFunction_Check(fn)) {
            Py_XDECREF(cn);
            return sym_fail(t, "'in' on a %s", Py_TYPE(b.obj)->tp_name);
        }
        var r;
        int fs = sym_source(t, DH_S_ATTR, b.src, 1, cn);
        Py_DECREF(cn);
        if (fs < 0 || sym_inline(t, fn, fs, &b, &a, 1, NULL, &r) < 0)
            return -1;
        return push_contains(t, f, &r, in->oparg, Py_TYPE(b.obj)->tp_name);
    }
    PyObject *am = b.kind == V_CONST && PyAnySet_Check(b.obj) ? sym_set_member(t, &a) : NULL;
    if (am == NULL && t->failed)
        return -1;
    if (am != NULL) {
        /* an object (a module, a function, a tensor read from a source: obj_tensorset.c)
         * in a set of such: by identity, as hashed */
        int r = PySet_Contains(b.obj, am);
        if (r < 0) {
            if (tc_clear_expected(PyExc_Exception) < 0)
                return -1;
            return sym_fail(t, "'in' raised (eager will raise)");
        }
        if (sym_const(t, PyBool_FromLong(r ^ in->oparg), &c) < 0)
            return -1;
        PUSH(c);
        return SYM_NEXT;
    }
    {
        var r; /* member in EnumClass: the metaclass's __contains__ (obj_proto.c) */
        int crc = sym_class_dunder(t, &b, "__contains__", &a, 1, &r);
        if (crc != 1)
            return crc < 0 ? -1 : push_contains(t, f, &r, in->oparg, "a class");
    }
    if (!keylike || b.kind != V_CONST)
        return sym_fail(t, "'in' on non-constant values");
    int r = PySequence_Contains(b.obj, a.obj);
    if (r < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "'in' raised");
    }
    if (sym_const(t, PyBool_FromLong(r ^ in->oparg), &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* BUILD_TUPLE BUILD_LIST */
int sym_op_build_tuple(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(in->oparg);
    if (build_seq(t, f, in->oparg, in->op == OP_BUILD_LIST, &a) < 0)
        return -1;
    if (a.kind == V_SEQ)
        t->dyn_inst = t->cur_inst; /* dynamic ints moved into it as they are (DYN_ITEMS) */
    PUSH(a);
    return SYM_NEXT;
}

/* LIST_EXTEND */
int sym_op_list_extend(trace *t, sframe *f, sym_ins *in) {
    var b;
    NEED(in->oparg + 1);
    b = POP();
    var *lst = &PEEK(in->oparg);
    var *items;
    int n;
    if (lst->kind != V_SEQ || !lst->is_list)
        return sym_fail(t, "LIST_EXTEND on a non-list");
    if (sym_iter_items(t, &b, &items, &n) < 0)
        return -1;
    var *m = sym_alloc(t, lst->n + n);
    if (m == NULL)
        return -1;
    memcpy(m, lst->items, (size_t)lst->n * sizeof *m);
    memcpy(m + lst->n, items, (size_t)n * sizeof *m);
    lst->items = m;
    lst->n += n;
    t->dyn_inst = t->cur_inst; /* (DYN_ITEMS) */
    return SYM_NEXT;
}

/* BUILD_MAP */
int sym_op_build_map(trace *t, sframe *f, sym_ins *in) {
    NEED(2 * in->oparg);
    PyObject *keys = PyTuple_New(in->oparg);
    var *vals = sym_alloc(t, in->oparg);
    if (keys == NULL || vals == NULL) {
        Py_XDECREF(keys);
        return -1;
    }
    for (int i = 0; i < in->oparg; i++) {
        var *k = &PEEK(2 * in->oparg - 2 * i), *v = &PEEK(2 * in->oparg - 2 * i - 1);
        if (k->kind != V_CONST || PyObject_Hash(k->obj) == -1) {
            (void)tc_clear_expected(PyExc_TypeError);
            Py_DECREF(keys);
            return sym_fail(t, "dict with non-constant keys");
        }
        PyTuple_SET_ITEM(keys, i, Py_NewRef(k->obj));
        vals[i] = *v;
    }
    int dynkey = 0;
    for (int i = 0; i < in->oparg; i++) {
        const var *k = &PEEK(2 * in->oparg - 2 * i);
        dynkey |= k->dyn > 0;
    }
    if (!dynkey) /* (a dynamic int as a key is read as a constant: it specializes) */
        t->dyn_inst = t->cur_inst; /* the values moved in as they are (DYN_ITEMS) */
    f->sp -= 2 * in->oparg;
    var d;
    if (sym_keep(t, keys) == NULL)
        return -1;
    d = sym_var(V_DICT);
    d.obj = keys;
    d.items = vals;
    d.n = in->oparg;
    if (in->oparg > 0) {
        /* duplicate keys: the last wins, as in Python */
        var e2;
        e2 = sym_var(V_DICT);
        e2.obj = sym_keep(t, PyTuple_New(0));
        if (e2.obj == NULL || dict_merge(t, &e2, &d) < 0)
            return -1;
        d = e2;
    }
    PUSH(d);
    return SYM_NEXT;
}

/* BUILD_CONST_KEY_MAP */
int sym_op_build_const_key_map(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(in->oparg + 1);
    a = POP(); /* keys tuple */
    if (a.kind != V_CONST || !PyTuple_Check(a.obj) || PyTuple_GET_SIZE(a.obj) != in->oparg)
        return sym_fail(t, "BUILD_CONST_KEY_MAP without constant keys");
    var *vals = sym_alloc(t, in->oparg);
    if (vals == NULL)
        return -1;
    for (int i = 0; i < in->oparg; i++)
        vals[i] = PEEK(in->oparg - i);
    f->sp -= in->oparg;
    make_dict(t, a.obj, vals, in->oparg, &b);
    t->dyn_inst = t->cur_inst; /* (DYN_ITEMS) */
    PUSH(b);
    return SYM_NEXT;
}

/* DICT_MERGE (the **mappings and keywords of a call): a key the call has already is eager's
 * TypeError (multiple values for a keyword argument), where DICT_UPDATE ({**a, **b})
 * overwrites it */
static int merge_repeats(trace *t, const var *dst, const var *src) {
    var tmp;
    if (src->kind == V_CONST && PyDict_Check(src->obj)) {
        if (sym_dict_from_const(t, src->obj, &tmp) < 0)
            return -1;
        src = &tmp;
    } else if (src->kind == V_REC) {
        if (sym_record_as_dict(t, src, &tmp) < 0)
            return -1;
        src = &tmp;
    }
    if (dst->kind != V_DICT || src->kind != V_DICT)
        return 0; /* dict_merge fails on them */
    for (int i = 0; i < src->n; i++)
        for (int j = 0; j < dst->n; j++) {
            PyObject *k = PyTuple_GET_ITEM(src->obj, i);
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(dst->obj, j), k, Py_EQ);
            if (eq < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "keyword comparison raised");
            }
            if (eq)
                return sym_fail(t, "multiple values for keyword argument %R (eager will raise)", k);
        }
    return 0;
}

/* DICT_MERGE DICT_UPDATE */
int sym_op_dict_merge(trace *t, sframe *f, sym_ins *in) {
    var b;
    NEED(in->oparg + 1);
    b = POP();
    if (in->op == OP_DICT_MERGE && merge_repeats(t, &PEEK(in->oparg), &b) < 0)
        return -1;
    if (dict_merge(t, &PEEK(in->oparg), &b) < 0)
        return -1;
    return SYM_NEXT;
}

/* MAP_ADD */
int sym_op_map_add(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(in->oparg + 2);
    b = POP(); /* value */
    a = POP(); /* key */
    if (a.kind != V_CONST)
        return sym_fail(t, "dict comprehension with non-constant keys");
    var one;
    PyObject *k1 = PyTuple_Pack(1, a.obj);
    var *v1 = sym_alloc(t, 1);
    if (k1 == NULL || v1 == NULL || sym_keep(t, k1) == NULL)
        return -1;
    v1[0] = b;
    make_dict(t, k1, v1, 1, &one);
    if (dict_merge(t, &PEEK(in->oparg), &one) < 0)
        return -1;
    if (a.dyn <= 0)
        t->dyn_inst = t->cur_inst; /* (DYN_ITEMS; a dynamic key specializes) */
    return SYM_NEXT;
}

/* LIST_APPEND */
int sym_op_list_append(trace *t, sframe *f, sym_ins *in) {
    var b;
    NEED(in->oparg + 1);
    b = POP();
    var *lst = &PEEK(in->oparg);
    if (lst->kind != V_SEQ || !lst->is_list)
        return sym_fail(t, "LIST_APPEND on a non-list");
    var *m = sym_alloc(t, lst->n + 1);
    if (m == NULL)
        return -1;
    memcpy(m, lst->items, (size_t)lst->n * sizeof *m);
    m[lst->n] = b;
    lst->items = m;
    lst->n++;
    t->dyn_inst = t->cur_inst; /* (DYN_ITEMS) */
    return SYM_NEXT;
}

/* UNPACK_EX */
int sym_op_unpack_ex(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    a = POP();
    var *items;
    int n, before = in->oparg & 0xff, after = in->oparg >> 8;
    if (sym_iter_items(t, &a, &items, &n) < 0)
        return -1;
    if (n < before + after)
        return sym_fail(t, "not enough values to unpack (eager will raise)");
    for (int i = n - 1; i >= n - after; i--)
        PUSH(items[i]);
    var *mid = sym_alloc(t, n - before - after);
    if (mid == NULL)
        return -1;
    memcpy(mid, items + before, (size_t)(n - before - after) * sizeof *mid);
    b = sym_var(V_SEQ);
    b.is_list = 1;
    b.n = n - before - after;
    b.items = mid;
    PUSH(b);
    for (int i = before - 1; i >= 0; i--)
        PUSH(items[i]);
    return SYM_NEXT;
}

/* BUILD_SLICE */
int sym_op_build_slice(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(in->oparg);
    PyObject *parts[3] = {Py_None, Py_None, Py_None};
    for (int i = 0; i < in->oparg; i++) {
        var *v = &PEEK(in->oparg - i);
        PyObject *known = NULL; /* a bound torch.tensor(n) - k: its value, as __index__ gives */
        int kr = v->kind == V_TENSOR ? sym_known_index(t, v, &known) : 0;
        if (kr < 0)
            return -1;
        if (kr == 1 && sym_const(t, known, v) < 0)
            return -1;
        if (v->kind != V_CONST)
            return sym_fail(t, "slice with non-constant bounds");
        parts[i] = v->obj;
    }
    f->sp -= in->oparg;
    if (sym_const(t, PySlice_New(parts[0], parts[1], in->oparg == 3 ? parts[2] : Py_None), &a) < 0)
        return -1;
    PUSH(a);
    return SYM_NEXT;
}

/* FORMAT_VALUE */
int sym_op_format_value(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    int have_spec = (in->oparg & 0x04) != 0;
    NEED(1 + have_spec);
    var spec = have_spec ? POP() : sym_null_var();
    a = POP();
    if (a.kind != V_CONST || (have_spec && spec.kind != V_CONST))
        return sym_fail(t, "f-string of a non-constant value");
    PyObject *v = Py_NewRef(a.obj), *r;
    int conv = in->oparg & 0x03;
    if (conv) {
        PyObject *c = conv == 1 ? PyObject_Str(v) : conv == 2 ? PyObject_Repr(v) : PyObject_ASCII(v);
        Py_DECREF(v);
        if (c == NULL)
            return -1;
        v = c;
    }
    r = PyObject_Format(v, have_spec ? spec.obj : NULL);
    Py_DECREF(v);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "format raised");
    }
    if (sym_const(t, r, &b) < 0)
        return -1;
    PUSH(b);
    return SYM_NEXT;
}

/* BUILD_STRING */
int sym_op_build_string(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(in->oparg);
    PyObject *parts = PyTuple_New(in->oparg);
    if (parts == NULL)
        return -1;
    for (int i = 0; i < in->oparg; i++) {
        var *v = &PEEK(in->oparg - i);
        if (v->kind != V_CONST || !PyUnicode_Check(v->obj)) {
            Py_DECREF(parts);
            return sym_fail(t, "BUILD_STRING of non-strings");
        }
        PyTuple_SET_ITEM(parts, i, Py_NewRef(v->obj));
    }
    f->sp -= in->oparg;
    PyObject *empty = PyUnicode_FromString("");
    PyObject *r = empty ? PyUnicode_Join(empty, parts) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(parts);
    if (sym_const(t, r, &a) < 0)
        return -1;
    PUSH(a);
    return SYM_NEXT;
}

/* LIST_TO_TUPLE */
int sym_op_list_to_tuple(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    if (PEEK(1).kind != V_SEQ)
        return sym_fail(t, "LIST_TO_TUPLE on a non-list");
    PEEK(1).is_list = 0;
    return SYM_NEXT;
}

/* CALL_INTRINSIC_1 */
/* 3.12: LIST_TO_TUPLE became intrinsic 6 ((*a, b), f(*a, b)), UNARY_POSITIVE intrinsic 5 (+x) */
int sym_op_call_intrinsic_1(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    if (in->oparg == 5) { /* INTRINSIC_UNARY_POSITIVE (3.11: UNARY_POSITIVE) */
        var a = POP(), b;
        if (sym_unary_positive(t, &a, &b) < 0)
            return -1;
        PUSH(b);
        return SYM_NEXT;
    }
    if (in->oparg != 6)
        return sym_fail(t, "CALL_INTRINSIC_1 %d not supported", in->oparg);
    if (PEEK(1).kind != V_SEQ || !PEEK(1).is_list)
        return sym_fail(t, "INTRINSIC_LIST_TO_TUPLE on a non-list");
    PEEK(1).is_list = 0;
    return SYM_NEXT;
}

/* BUILD_SET */
int sym_op_build_set(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(in->oparg);
    PyObject *set = PySet_New(NULL);
    if (set == NULL)
        return -1;
    for (int i = 0; i < in->oparg; i++) {
        var *v = &PEEK(in->oparg - i);
        PyObject *m = sym_set_member(t, v); /* a tensor read from a source: itself */
        if (m == NULL && t->failed) {
            Py_DECREF(set);
            return -1;
        }
        if (m == NULL || PySet_Add(set, m) < 0) {
            (void)tc_clear_expected(PyExc_TypeError);
            Py_DECREF(set);
            return sym_fail(t, "set of non-constant values");
        }
    }
    PyObject *fs = PyFrozenSet_New(set);
    Py_DECREF(set);
    if (sym_const(t, fs, &a) < 0 || sym_set_token(t, &a) < 0)
        return -1;
    /* eager's order of {a, b, ...} (obj_setorder.c) */
    if (sym_set_note_seq(t, &a, &(var){.kind = V_SEQ, .src = -1, .n = in->oparg, .items = &PEEK(in->oparg)}) < 0)
        return -1;
    f->sp -= in->oparg;
    a.is_list = 1; /* a set (objects.c: sets of constants are held as frozensets) */
    PUSH(a);
    return SYM_NEXT;
}

/* SET_ADD SET_UPDATE */
/* set comprehension: TOS1[-oparg].add(TOS) */
/* {*a, *b}: TOS1[-oparg].update(TOS) */
int sym_op_set_add(trace *t, sframe *f, sym_ins *in) {
    var b;
    NEED(in->oparg + 1);
    b = POP();
    if (sym_set_add(t, &PEEK(in->oparg), &b, in->op == OP_SET_UPDATE) < 0)
        return -1;
    return SYM_NEXT;
}

/* BINARY_SLICE */
int sym_op_binary_slice(trace *t, sframe *f, sym_ins *in) {
    var a, c;
    NEED(3);
    var stop = POP(), start = POP();
    a = POP();
    for (int i = 0; i < 2; i++) { /* bounds torch.tensor(n) - k: their values (__index__) */
        var *b = i ? &stop : &start;
        PyObject *known = NULL;
        int kr = b->kind == V_TENSOR ? sym_known_index(t, b, &known) : 0;
        if (kr < 0 || (kr == 1 && sym_const(t, known, b) < 0))
            return -1;
    }
    if ((start.kind != V_CONST) || (stop.kind != V_CONST))
        return sym_fail(t, "slice with non-constant bounds");
    var k;
    if (sym_const(t, PySlice_New(start.obj, stop.obj, Py_None), &k) < 0)
        return -1;
    if (subscr(t, &a, &k, &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}

/* DELETE_SUBSCR */
/* del TOS1[TOS] */
int sym_op_delete_subscr(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(2);
    b = POP(); /* key */
    a = POP(); /* container */
    if (a.kind == V_SEQ && a.is_list && a.obj == NULL && b.kind == V_CONST) {
        if (sym_list_store(t, &a, &b, NULL) < 0)
            return -1;
        return SYM_NEXT;
    }
    if (a.kind == V_DICT && b.kind == V_CONST) {
        if (dict_update(t, &a, b.obj, NULL) < 0)
            return -1;
        return SYM_NEXT;
    }
    if (a.kind == V_OBJ) { /* obj_proto.c: a Python __delitem__ */
        var r;
        int rc = sym_obj_dunder(t, &a, "__delitem__", &b, 1, &r);
        if (rc <= 0)
            return rc < 0 ? -1 : SYM_NEXT;
    }
    return sym_fail(t, "del of an item of an unsupported container");
}

/* STORE_SUBSCR STORE_SLICE */
int sym_op_store_subscr(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    /* STORE_SUBSCR: TOS1[TOS] = TOS2; STORE_SLICE (3.12): TOS2[TOS1:TOS] = TOS3 */
    var k;
    if (in->op == OP_STORE_SLICE) {
        NEED(4);
        var stop = POP(), start = POP();
        if (start.kind != V_CONST || stop.kind != V_CONST)
            return sym_fail(t, "slice with non-constant bounds");
        if (sym_const(t, PySlice_New(start.obj, stop.obj, Py_None), &k) < 0)
            return -1;
    } else {
        NEED(3);
        k = POP();
    }
    a = POP(); /* container */
    b = POP(); /* value */
    if (t->maug_pc == in->pc && t->maug_frame == (const void *)f && in->op == OP_STORE_SUBSCR) {
        int oid = t->maug_oid;
        t->maug_pc = -1;
        t->maug_frame = NULL;
        if (a.kind == V_TENSOR && b.kind == V_TENSOR && b.oid == oid)
            return sym_tensor_setitem_masked_full(t, &a, &k, &b) < 0 ? -1 : SYM_NEXT;
    }
    if (a.kind == V_TENSOR && sym_tensor_setitem(t, &a, &k, &b) == 0)
        return SYM_NEXT;
    if (a.kind == V_SEQ && a.is_list && a.obj == NULL && k.kind == V_CONST) {
        if (sym_list_store(t, &a, &k, &b) == 0)
            return SYM_NEXT;
        return -1;
    }
    if (a.kind == V_DICT && k.kind == V_CONST && in->op == OP_STORE_SUBSCR) {
        if (dict_update(t, &a, k.obj, &b) == 0)
            return SYM_NEXT;
        return -1;
    }
    if (a.kind == V_REC && in->op == OP_STORE_SUBSCR) /* records.c: ModelOutput.__setitem__ */
        return sym_record_setitem(t, &a, &k, &b) < 0 ? -1 : SYM_NEXT;
    if (a.kind == V_OBJ) { /* obj_proto.c: a Python __setitem__ */
        var kv[2] = {k, b}, r;
        int rc = sym_obj_dunder(t, &a, "__setitem__", kv, 2, &r);
        if (rc <= 0)
            return rc < 0 ? -1 : SYM_NEXT;
    }
    if (a.kind != V_TENSOR)
        sym_fail(t, "item assignment to a %s", a.kind == V_SEQ ? "list" : a.kind == V_DICT ? "dict" : "non-tensor");
    /* run the store eagerly between two graphs */
    if (f->top && t->failed && !PyErr_Occurred() && sym_can_break(t) && a.kind == V_TENSOR) {
        var *ops = sym_alloc(t, 3);
        if (ops == NULL)
            return -1;
        ops[0] = a;
        ops[1] = k;
        ops[2] = b;
        t->brk.kind = DH_BRK_STORE;
        t->brk.pc_next = in->next;
        t->brk.fn = &ops[0];
        t->brk.args = &ops[1];
        t->brk.nargs = 2;
        return sym_record_break_state(t, f);
    }
    return -1;
}

/* the instruction after the one at pc (its inline caches skipped), or -1 */
static int after(const unsigned char *bc, int n, int pc) {
    for (pc++; pc < n; pc++) {
        const char *on = sym_opname(bc[2 * pc]);
        if (on == NULL || strcmp(on, "CACHE") != 0)
            return pc;
    }
    return -1;
}

static int op_is(const unsigned char *bc, int pc, const char *name) {
    const char *on = pc >= 0 ? sym_opname(bc[2 * pc]) : NULL;
    return on != NULL && strcmp(on, name) == 0;
}

/* x[mask] op= v, an augmented assignment to a boolean-masked selection, compiled by CPython
 * as COPY 2, COPY 2, BINARY_SUBSCR, <v: one LOAD_CONST/LOAD_FAST>, BINARY_OP (in place),
 * SWAP 3, SWAP 2, STORE_SUBSCR: eager reads the selection (a copy whose size depends on the
 * mask's values), applies op in place on it and stores it back. Here the read gives a copy
 * of the whole of x instead; the in-place op runs on that copy (eager's casting rules), and
 * the STORE_SUBSCR of the pattern stores it back as where(mask, copy, x) (t->maug_pc,
 * setitem.c). Exact when v is the same at every selected position: a number, or a tensor
 * whose dims past its leading size-1 ones are no more than x's dims past the mask's (each
 * selected element then meets the same part of v, full-size or selected); an elementwise
 * op (not @). 1: not this case (x[mask] read as before). */
static int masked_aug(trace *t, sframe *f, sym_ins *in, const var *x_in, const var *k_in, var *out) {
    if (x_in->kind != V_TENSOR || k_in->kind != V_TENSOR || f->sp < 2 || x_in->oid <= 0)
        return 1;
    var x = *x_in, k = *k_in;
    sym_resolve(t, &x);
    sym_resolve(t, &k);
    const ic_meta *mp = ic_value_meta(t->g, x.val), *kp = ic_value_meta(t->g, k.val);
    if (mp == NULL || kp == NULL || kp->dtype != IC_BOOL || mp->dyn || kp->dyn || kp->ndim > mp->ndim ||
        kp->ndim == 0)
        return 1;
    ic_meta m = *mp, km = *kp;
    for (int d = 0; d < km.ndim; d++)
        if (km.sizes[d] != m.sizes[d])
            return 1; /* eager raises: the read says so */
    /* the copies COPY 2, COPY 2 made are still below */
    if (memcmp(&f->stack[f->sp - 1], k_in, sizeof(var)) != 0 || memcmp(&f->stack[f->sp - 2], x_in, sizeof(var)) != 0)
        return 1;
    PyObject *bytes = PyCode_GetCode(f->code);
    if (bytes == NULL)
        return -1;
    const unsigned char *bc = (const unsigned char *)PyBytes_AS_STRING(bytes);
    int n = (int)(PyBytes_GET_SIZE(bytes) / 2);
    int ld = after(bc, n, in->pc), bo = after(bc, n, ld), s3 = after(bc, n, bo), s2 = after(bc, n, s3),
        st = after(bc, n, s2);
    int ok = st >= 0 && op_is(bc, bo, "BINARY_OP") && bc[2 * bo + 1] >= 13 && bc[2 * bo + 1] != 16 &&
             op_is(bc, s3, "SWAP") && bc[2 * s3 + 1] == 3 && op_is(bc, s2, "SWAP") && bc[2 * s2 + 1] == 2 &&
             op_is(bc, st, "STORE_SUBSCR");
    const var *v = NULL;
    var cv;
    int slot = -1;
    if (ok && op_is(bc, ld, "LOAD_CONST")) {
        cv = sym_var(V_CONST);
        cv.obj = PyTuple_GET_ITEM(in->consts, bc[2 * ld + 1]);
        v = &cv;
    } else if (ok && (op_is(bc, ld, "LOAD_FAST") || op_is(bc, ld, "LOAD_FAST_CHECK"))) {
        slot = bc[2 * ld + 1];
    }
    Py_DECREF(bytes);
    if (slot >= 0 && slot < f->nlocals - f->code->co_nfreevars) {
        /* what the LOAD_FAST will push (an argument not read yet is wrapped now, as it would be) */
        if (sym_load_local(t, f, slot, &cv) < 0)
            return -1;
        v = &cv;
    }
    if (v == NULL)
        return 1;
    if (v->kind == V_TENSOR) {
        var vv = *v;
        sym_resolve(t, &vv);
        const ic_meta *vm = ic_value_meta(t->g, vv.val);
        if (vm == NULL)
            return 1;
        int lead = 0;
        while (lead < vm->ndim && vm->sizes[lead] == 1)
            lead++;
        if (vm->ndim - lead > m.ndim - km.ndim)
            return 1; /* a value per selected element: data-dependent */
    } else if (!sym_is_number(v)) {
        return 1;
    }
    if (sym_tensor_out(t, ic_cast(t->g, x.val, m.dtype), out) < 0)
        return -1;
    t->maug_pc = st;
    t->maug_oid = out->oid;
    t->maug_frame = f;
    return 0;
}

/* BINARY_SUBSCR */
/* the index is, or holds, a bool/uint8 tensor (x[mask], x[:, mask]) */
static int mask_index(trace *t, const var *b) {
    if (b->kind == V_TENSOR) {
        ic_dtype d = ic_value_meta(t->g, b->val)->dtype;
        return d == IC_BOOL || d == IC_U8;
    }
    if (b->kind == V_SEQ && !b->is_list)
        for (int i = 0; i < b->n; i++)
            if (b->items[i].kind == V_TENSOR && mask_index(t, &b->items[i]))
                return 1;
    return 0;
}

int sym_op_binary_subscr(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
    NEED(2);
    b = POP();
    a = POP();
    int mrc = masked_aug(t, f, in, &a, &b, &c);
    if (mrc <= 0) {
        if (mrc < 0)
            return -1;
        PUSH(c);
        return SYM_NEXT;
    }
    /* x[mask] (a boolean mask among the indices: a data-dependent shape the graph can't
     * hold): the top frame breaks there, operator.getitem(x, index) runs eagerly between two
     * graphs as a call would, and the frame resumes after it (was: the frame ran eagerly).
     * Other subscripts that fail (a 0-d tensor index: a view at a data-dependent position)
     * still run the frame eagerly: a break at each would cost more than it compiles */
    sym_fx_mark mark = {0};
    int can = f->top && sym_can_break(t) && a.kind == V_TENSOR && mask_index(t, &b);
    if (can && sym_fx_save(t, &mark) < 0)
        return -1;
    int mark_saved = can;
    if (subscr(t, &a, &b, &c) < 0) {
        static PyObject *getitem;
        if (can && t->failed && strstr(t->reason, "(eager will raise)") != NULL)
            can = 0; /* eager raises there too: the frame runs eagerly, no graph before it */
        if (can && t->failed && !PyErr_Occurred() && t->pending_exc == NULL && getitem == NULL) {
            PyObject *op = PyImport_ImportModule("operator");
            getitem = op ? PyObject_GetAttrString(op, "getitem") : NULL; /* kept */
            Py_XDECREF(op);
            if (getitem == NULL) {
                sym_fx_drop(&mark);
                return -1;
            }
        }
        if (can && t->failed && !PyErr_Occurred() && t->pending_exc == NULL) {
            sym_fx_rollback(t, &mark);
            var *ops = sym_alloc(t, 3);
            if (ops == NULL)
                return -1;
            ops[0] = sym_var(V_FUNC);
            ops[0].op = -1;
            ops[0].obj = getitem;
            ops[1] = a;
            ops[2] = b;
            t->brk.kind = DH_BRK_CALL;
            t->brk.pc_next = in->next;
            t->brk.fn = &ops[0];
            t->brk.args = &ops[1];
            t->brk.nargs = 2;
            t->brk.kwnames = NULL;
            return sym_record_break_state(t, f);
        }
        if (mark_saved)
            sym_fx_drop(&mark);
        return -1;
    }
    if (mark_saved)
        sym_fx_drop(&mark);
    PUSH(c);
    return SYM_NEXT;
}

/* UNPACK_SEQUENCE */
int sym_op_unpack_sequence(trace *t, sframe *f, sym_ins *in) {
    var a;
    NEED(1);
    a = POP();
    var *items;
    int n;
    if (sym_iter_items(t, &a, &items, &n) < 0)
        return -1;
    if (n != in->oparg)
        return sym_fail(t, "unpacking %d values into %d (eager will raise)", n, in->oparg);
    for (int i = n - 1; i >= 0; i--)
        PUSH(items[i]);
    return SYM_NEXT;
}

/* ---- sets made in the trace ------------------------------------------------------------
 * A set is a V_CONST frozenset of its members (constants, or objects the trace holds as
 * themselves: modules, functions — sym_is_real_object) with is_list set; its items pointer
 * is a token naming the set, shared by every copy, so a mutation rebinds them all (as lists
 * and dicts are). Sets passed in are left to eager when updated. */

int sym_set_token(trace *t, var *s) {
    s->items = sym_alloc(t, 1);
    return s->items ? 0 : -1;
}

int sym_set_is_mutable(const var *s) {
    return s->kind == V_CONST && s->is_list && s->items != NULL && s->obj && PyFrozenSet_CheckExact(s->obj);
}

/* added: what s's new value adds to it (update: its items), for eager's order (obj_setorder.c) */
static int set_rebind_added(trace *t, const var *s, PyObject *ns, var *out, const var *added, int update) {
    if (gen_effect(t, "set") < 0) {
        Py_DECREF(ns);
        return -1;
    }
    PyObject *fs = PyFrozenSet_New(ns);
    Py_DECREF(ns);
    if (fs == NULL || sym_keep(t, fs) == NULL)
        return -1;
    var nv = *s;
    nv.obj = fs;
    if (sym_set_token(t, &nv) < 0)
        return -1;
    if (added != NULL && sym_set_note_added(t, &nv, s->obj, added, update) < 0)
        return -1;
    sym_rebind(t, s->items, &nv);
    return out ? sym_const(t, Py_NewRef(Py_None), out) : 0;
}

static int set_rebind(trace *t, const var *s, PyObject *ns, var *out) {
    return set_rebind_added(t, s, ns, out, NULL, 0);
}

int sym_set_method(trace *t, const var *s, const char *mn, var *args, int nargs, var *out) {
    /* inside a generator (run to completion) too: the set was made in the trace, so only
     * the trace reads it (nn.Module.named_modules' memo); a consumer that stops early and
     * reads the set afterwards would see the later additions (not supported: rare) */
    if (!strcmp(mn, "copy") && nargs == 0) {
        if (sym_const(t, Py_NewRef(s->obj), out) < 0 || sym_set_token(t, out) < 0)
            return -1;
        out->is_list = 1;
        return 0;
    }
    PyObject *ns = PySet_New(s->obj);
    if (ns == NULL)
        return -1;
    int one = !strcmp(mn, "add") || !strcmp(mn, "discard") || !strcmp(mn, "remove");
    if (one && nargs == 1) {
        PyObject *m = sym_set_member(t, &args[0]); /* a tensor read from a source: itself */
        if (m == NULL) {
            Py_DECREF(ns);
            return t->failed ? -1 : sym_fail(t, "set.%s of a tracked value (a tensor made in the trace) not supported", mn);
        }
        int r = !strcmp(mn, "add") ? PySet_Add(ns, m) : PySet_Discard(ns, m);
        if (r < 0 || (r == 0 && !strcmp(mn, "remove"))) {
            Py_DECREF(ns);
            if (r < 0 && tc_clear_expected(PyExc_Exception) < 0)
                return -1;
            return sym_fail(t, "set.%s raised (eager will raise)", mn);
        }
        return set_rebind_added(t, s, ns, out, !strcmp(mn, "add") ? &args[0] : NULL, 0);
    }
    if (!strcmp(mn, "clear") && nargs == 0) {
        PySet_Clear(ns);
        return set_rebind(t, s, ns, out);
    }
    if (!strcmp(mn, "update") || !strcmp(mn, "difference_update") ||
        !strcmp(mn, "intersection_update") || !strcmp(mn, "symmetric_difference_update")) {
        for (int i = 0; i < nargs; i++) {
            var *items = &args[i];
            int n = 1;
            if (args[i].kind == V_CONST && (PyAnySet_Check(args[i].obj) || PyTuple_CheckExact(args[i].obj))) {
                n = -1;
            } else if (sym_iter_items(t, &args[i], &items, &n) < 0) {
                Py_DECREF(ns);
                return -1;
            }
            PyObject *other = n < 0 ? PySet_New(args[i].obj) : PySet_New(NULL);
            for (int k = 0; other && k < n; k++) {
                PyObject *m = sym_set_member(t, &items[k]); /* obj_tensorset.c */
                if (m == NULL || PySet_Add(other, m) < 0)
                    Py_CLEAR(other);
            }
            PyObject *r = NULL;
            if (other != NULL) {
                PyObject *m = PyObject_GetAttrString(ns, mn);
                r = m ? PyObject_CallOneArg(m, other) : NULL;
                Py_XDECREF(m);
                Py_DECREF(other);
            }
            if (r == NULL) {
                Py_DECREF(ns);
                if (tc_clear_expected(PyExc_Exception) < 0)
                    return -1;
                return sym_fail(t, "set.%s of non-constant values", mn);
            }
            Py_DECREF(r);
        }
        return set_rebind_added(t, s, ns, out, !strcmp(mn, "update") && nargs == 1 ? &args[0] : NULL, 1);
    }
    if (!strcmp(mn, "pop") && nargs == 0) {
        Py_DECREF(ns);
        return sym_fail(t, "set.pop (arbitrary order) not supported");
    }
    Py_DECREF(ns);
    return 1;
}
