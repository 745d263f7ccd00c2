/* obj_proto.c — Python-level protocols of user objects: len(o), bool(o), iter(o), o[k],
 * o[k] = v, k in o, o(...) where o's class defines the dunder in Python.
 *
 * The dunder is found on the object's class (guarded with the object: its type for instances
 * of Python classes, its identity otherwise) and inlined with o as self, so it runs as often,
 * and on the same state, as in eager. Iteration of a collections.abc.Sequence that keeps the
 * mixin's __iter__ walks o[0] .. o[len(o) - 1] (the mixin stops at the IndexError a Sequence
 * raises at len).
 *
 * Requires: o a V_OBJ with a source (attributes read through guarded sources / t->attrw).
 * Keeps:    every effect of the dunder traced like any inlined function.
 * Returns:  1 where the class has no Python dunder (the caller's own rules apply).
 */
#include "sym.h"

#include <string.h>

static PyObject *seq_iter, *seq_contains; /* collections.abc.Sequence.__iter__/__contains__ */
static int inited;

static void init_once(void) {
    if (inited)
        return;
    inited = 1;
    PyObject *abc = PyImport_ImportModule("collections.abc");
    PyObject *seq = abc ? PyObject_GetAttrString(abc, "Sequence") : NULL;
    if (seq != NULL) {
        seq_iter = PyObject_GetAttrString(seq, "__iter__");         /* kept for the process */
        seq_contains = PyObject_GetAttrString(seq, "__contains__");
    }
    Py_XDECREF(abc);
    Py_XDECREF(seq);
    (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
}

static int user_obj(const var *o) {
    return o->kind == V_OBJ && o->obj != NULL && o->src >= 0 && !PyModule_Check(o->obj) &&
           !PyType_Check(o->obj) && (Py_TYPE(o->obj)->tp_flags & Py_TPFLAGS_HEAPTYPE);
}

/* the Python function cls.name, or NULL (borrowed) */
static PyObject *py_dunder(const var *o, const char *name) {
    PyObject *n = PyUnicode_InternFromString(name);
    if (n == NULL) {
        /* only an allocation failed: MemoryError stays set, as in eager */
        return NULL;
    }
    PyObject *f = _PyType_Lookup(Py_TYPE(o->obj), n);
    Py_DECREF(n);
    return f != NULL && PyFunction_Check(f) ? f : NULL;
}

static int call_fn(trace *t, PyObject *f, const var *o, var *args, int nargs, var *out) {
    PyObject *fn = sym_keep(t, Py_NewRef(f));
    int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
    if (s < 0)
        return -1;
    return sym_inline(t, fn, s, o, args, nargs, NULL, out);
}

int sym_obj_dunder(trace *t, const var *o, const char *name, var *args, int nargs, var *out) {
    if (!user_obj(o))
        return 1;
    init_once();
    PyObject *f = py_dunder(o, name);
    if (f == NULL && PyDict_Check(o->obj))
        return sym_dsub_dunder(t, o, name, args, nargs, out); /* obj_dict.c: dict's own */
    if (f == NULL || (!strcmp(name, "__call__") && sym_is_nn_module(o->obj)))
        return 1;
    if (!strcmp(name, "__contains__") && f == seq_contains)
        return 1; /* the mixin iterates: the caller's iteration rule */
    return call_fn(t, f, o, args, nargs, out);
}

static int int_result(trace *t, const var *r, const char *what, long *n) {
    if (r->kind != V_CONST || !PyLong_Check(r->obj))
        return sym_fail(t, "%s returned a value that is not a constant int", what);
    *n = PyLong_AsLong(r->obj);
    if (*n == -1 && PyErr_Occurred()) {
        (void)tc_clear_expected(PyExc_OverflowError);
        return sym_fail(t, "%s out of range", what);
    }
    if (*n < 0)
        return sym_fail(t, "%s returned a negative value (eager will raise)", what);
    return 0;
}

/* A class whose metaclass defines the dunder in Python (EnumType's __iter__, __len__,
 * __getitem__, __contains__; a registry's metaclass): inlined with the class as self, as
 * eager calls type(cls).name(cls, ...). The class is reached through a guarded source (or
 * is a constant); the metaclass's function found now is fixed by the class's identity. 1:
 * not one. */
int sym_class_dunder(trace *t, const var *cls, const char *name, var *args, int nargs, var *out) {
    if ((cls->kind != V_FUNC && cls->kind != V_CONST && cls->kind != V_OBJ) || cls->obj == NULL ||
        !PyType_Check(cls->obj) || Py_TYPE(cls->obj) == &PyType_Type ||
        !(Py_TYPE(cls->obj)->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        (cls->kind == V_FUNC && (cls->op == SYM_MADE_FUNCTION || cls->op == SYM_PARTIAL)))
        return 1;
    PyObject *f = py_dunder(cls, name);
    if (f == NULL)
        return PyErr_Occurred() ? -1 : 1;
    return call_fn(t, f, cls, args, nargs, out);
}

int sym_obj_len(trace *t, const var *o, var *out) {
    var r;
    Py_ssize_t k;
    if (o->kind == V_OBJ && py_dunder(o, "__len__") == NULL) {
        int drc = sym_dsub_len(t, o, &k); /* a dict subclass with C __len__ (obj_dict.c) */
        if (drc <= 0)
            return drc < 0 ? -1 : sym_const(t, PyLong_FromSsize_t(k), out);
    }
    int rc = sym_obj_dunder(t, o, "__len__", NULL, 0, &r);
    if (rc == 1)
        rc = sym_class_dunder(t, o, "__len__", NULL, 0, &r); /* len(EnumClass) */
    if (rc != 0)
        return rc;
    long n;
    if (int_result(t, &r, "__len__", &n) < 0)
        return -1;
    return sym_const(t, PyLong_FromLong(n), out);
}

int sym_obj_truth(trace *t, const var *o, int *truth) {
    var r;
    if (o->kind == V_OBJ && o->src >= 0 && PyDict_Check(o->obj) && py_dunder(o, "__bool__") == NULL &&
        py_dunder(o, "__len__") == NULL) {
        /* a dict (OrderedDict: a module's hook dicts) read from the frame: its length (the
         * trace's contents where it updated them), guarded */
        Py_ssize_t n;
        int drc = sym_dsub_len(t, o, &n);
        if (drc < 0)
            return -1;
        if (drc == 1) {
            n = PyDict_GET_SIZE(o->obj);
            if (sym_guard_len(t, o->src, (int)n) < 0)
                return -1;
        }
        *truth = n != 0;
        return 0;
    }
    int rc = sym_obj_dunder(t, o, "__bool__", NULL, 0, &r);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        if (r.kind != V_CONST || !PyBool_Check(r.obj))
            return sym_fail(t, "__bool__ returned a value that is not a constant bool");
        *truth = r.obj == Py_True;
        return 0;
    }
    if (user_obj(o) && py_dunder(o, "__bool__") == NULL &&
        PyObject_HasAttrString((PyObject *)Py_TYPE(o->obj), "__bool__"))
        return 1; /* a C __bool__: the caller's rules */
    rc = sym_obj_dunder(t, o, "__len__", NULL, 0, &r);
    if (rc != 0)
        return rc;
    long n;
    if (int_result(t, &r, "__len__", &n) < 0)
        return -1;
    *truth = n != 0;
    return 0;
}

int sym_obj_iter(trace *t, const var *o, var **items, int *n) {
    if (!user_obj(o)) {
        var it; /* iteration over a class whose metaclass has a Python __iter__ (an Enum) */
        int rc = sym_class_dunder(t, o, "__iter__", NULL, 0, &it);
        return rc != 0 ? rc : sym_iter_items(t, &it, items, n);
    }
    init_once();
    PyObject *f = py_dunder(o, "__iter__");
    if (f == NULL && PyDict_Check(o->obj)) { /* obj_dict.c: a dict subclass's keys */
        var it;
        int rc = sym_dsub_dunder(t, o, "__iter__", NULL, 0, &it);
        if (rc != 0)
            return rc;
        *items = it.items;
        *n = it.n;
        return 0;
    }
    if (f == NULL)
        return 1;
    if (f != seq_iter) {
        var it;
        if (call_fn(t, f, o, NULL, 0, &it) < 0)
            return -1;
        if (it.kind == V_OBJ && it.obj == o->obj)
            return sym_fail(t, "__iter__ returning self not supported");
        return sym_iter_items(t, &it, items, n);
    }
    /* the Sequence mixin: o[0], o[1], ... up to len(o) */
    PyObject *gi = py_dunder(o, "__getitem__");
    var lv;
    if (gi == NULL)
        return sym_fail(t, "iteration over a Sequence without a Python __getitem__");
    int rc = sym_obj_dunder(t, o, "__len__", NULL, 0, &lv);
    if (rc > 0)
        return sym_fail(t, "iteration over a Sequence without a Python __len__");
    long k;
    if (rc < 0 || int_result(t, &lv, "__len__", &k) < 0)
        return -1;
    if (k > dh_limit.max_unroll)
        return sym_fail(t, "Sequence of %ld items too long to unroll (torchc.config.max_unroll)", k);
    var *it = sym_alloc(t, (int)k);
    if (it == NULL)
        return -1;
    for (long i = 0; i < k; i++) {
        var idx;
        if (sym_const(t, PyLong_FromLong(i), &idx) < 0 || call_fn(t, gi, o, &idx, 1, &it[i]) < 0)
            return -1;
    }
    *items = it;
    *n = (int)k;
    return 0;
}

int sym_obj_enter(trace *t, const var *o, var *exit, var *entered) {
    if (!user_obj(o))
        return 1;
    PyObject *en = py_dunder(o, "__enter__"), *ex = py_dunder(o, "__exit__");
    if (en == NULL || ex == NULL)
        return 1;
    var *self = sym_alloc(t, 1);
    PyObject *fn = sym_keep(t, Py_NewRef(ex));
    int s = fn && self ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
    if (s < 0)
        return -1;
    *self = *o;
    *exit = sym_var(V_METHOD);
    exit->obj = fn;
    exit->src = s;
    exit->items = self;
    exit->n = 1;
    return call_fn(t, en, o, NULL, 0, entered);
}

/* ---- operators: a op b with an instance of a Python class on either side ---------------- */

/* the class's own Python function for name (1), object's default slot or none (0), a C
 * method of another base (-1: the trace can't run it) */
static int op_kind(const var *o, const char *name, PyObject **fn) {
    *fn = NULL;
    if (!user_obj(o))
        return o->kind == V_CONST || o->kind == V_TENSOR || o->kind == V_SEQ || o->kind == V_DICT ? 0 : -1;
    PyObject *n = PyUnicode_InternFromString(name);
    PyObject *f = n ? _PyType_Lookup(Py_TYPE(o->obj), n) : NULL;
    PyObject *dflt = n ? _PyType_Lookup(&PyBaseObject_Type, n) : NULL;
    Py_XDECREF(n);
    if (f == NULL || f == dflt)
        return 0;
    if (PyFunction_Check(f)) {
        *fn = f;
        return 1;
    }
    return -1;
}

static int not_implemented(const var *r) { return r->kind == V_CONST && r->obj == Py_NotImplemented; }

/* a.<name>(b) and b.<rname>(a), as the interpreter tries them (a subclass's reflected
 * method first when it overrides it); *done 0 when both said NotImplemented. 1: neither
 * operand is an instance of a Python class with such a method; -1 failed */
static int try_pair(trace *t, const var *a, const var *b, const char *name, const char *rname, var *out, int *done) {
    PyObject *fa, *fb;
    int ka = op_kind(a, name, &fa), kb = op_kind(b, rname, &fb);
    *done = 0;
    if (fa == NULL && fb == NULL)
        return ka < 0 || kb < 0 || (!user_obj(a) && !user_obj(b)) ? 1 : 0;
    if (ka < 0 || kb < 0)
        return sym_fail(t, "operator %s between a Python object and a value with a C method", name);
    int same_type = user_obj(a) && user_obj(b) && Py_TYPE(a->obj) == Py_TYPE(b->obj);
    int b_first = fb != NULL && !same_type && user_obj(b) &&
                  (!user_obj(a) || PyType_IsSubtype(Py_TYPE(b->obj), Py_TYPE(a->obj))) && fb != fa && user_obj(a);
    var arg;
    if (b_first) {
        arg = *a;
        if (call_fn(t, fb, b, &arg, 1, out) < 0)
            return -1;
        if (!not_implemented(out)) {
            *done = 1;
            return 0;
        }
        fb = NULL;
    }
    if (fa != NULL) {
        arg = *b;
        if (call_fn(t, fa, a, &arg, 1, out) < 0)
            return -1;
        if (!not_implemented(out)) {
            *done = 1;
            return 0;
        }
    }
    if (fb != NULL && !same_type) {
        arg = *a;
        if (call_fn(t, fb, b, &arg, 1, out) < 0)
            return -1;
        if (!not_implemented(out)) {
            *done = 1;
            return 0;
        }
    }
    return 0;
}

static const char *const binop_names[13][2] = {
    {"__add__", "__radd__"}, {"__and__", "__rand__"}, {"__floordiv__", "__rfloordiv__"},
    {"__lshift__", "__rlshift__"}, {"__matmul__", "__rmatmul__"}, {"__mul__", "__rmul__"},
    {"__mod__", "__rmod__"}, {"__or__", "__ror__"}, {"__pow__", "__rpow__"},
    {"__rshift__", "__rrshift__"}, {"__sub__", "__rsub__"}, {"__truediv__", "__rtruediv__"},
    {"__xor__", "__rxor__"}};
static const char *const ibinop_names[13] = {
    "__iadd__", "__iand__", "__ifloordiv__", "__ilshift__", "__imatmul__", "__imul__", "__imod__",
    "__ior__", "__ipow__", "__irshift__", "__isub__", "__itruediv__", "__ixor__"};

static int obj_binary(trace *t, int nb, const var *a, const var *b, var *out) {
    if (nb < 0 || nb >= 26 || (!user_obj(a) && !user_obj(b)))
        return 1;
    int base = nb >= 13 ? nb - 13 : nb, done;
    if (nb >= 13 && user_obj(a)) { /* a op= b: a.__iop__(b) first */
        PyObject *fi;
        int ki = op_kind(a, ibinop_names[base], &fi);
        if (ki < 0)
            return sym_fail(t, "operator %s of a Python object with a C method", ibinop_names[base]);
        if (fi != NULL) {
            var arg = *b;
            if (call_fn(t, fi, a, &arg, 1, out) < 0)
                return -1;
            if (!not_implemented(out))
                return 0;
        }
    }
    int rc = try_pair(t, a, b, binop_names[base][0], binop_names[base][1], out, &done);
    if (rc != 0)
        return rc;
    return done ? 0 : sym_fail(t, "unsupported operand types for %s (eager will raise TypeError)", binop_names[base][0]);
}

static int obj_compare(trace *t, int cmp, const var *a, const var *b, var *out) {
    static const char *const names[6] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};
    static const int refl[6] = {4, 5, 2, 3, 0, 1};
    if (cmp < 0 || cmp > 5 || (!user_obj(a) && !user_obj(b)))
        return 1;
    int done;
    int rc = try_pair(t, a, b, names[cmp], names[refl[cmp]], out, &done);
    if (rc < 0 || (rc == 0 && done))
        return rc;
    if (cmp == Py_NE) { /* object's __ne__: the inverse of __eq__, where that answers */
        var r;
        rc = try_pair(t, a, b, "__eq__", "__eq__", &r, &done);
        if (rc < 0)
            return -1;
        if (rc == 0 && done) {
            int truth = r.kind == V_CONST ? PyObject_IsTrue(r.obj) : -1;
            if (truth < 0) {
                if (tc_clear_expected(PyExc_Exception) < 0)
                    return -1;
                return sym_fail(t, "!= of a Python object whose __eq__ gave no constant");
            }
            return sym_const(t, PyBool_FromLong(!truth), out);
        }
    }
    if (rc == 1)
        return 1;
    if (cmp == Py_EQ || cmp == Py_NE) { /* neither answers: identity */
        int same = user_obj(a) && user_obj(b) && a->obj == b->obj && a->src == b->src;
        if (user_obj(a) && user_obj(b) && a->obj == b->obj && a->src != b->src)
            return sym_fail(t, "== of one object reached through two sources");
        return sym_const(t, PyBool_FromLong(cmp == Py_EQ ? same : !same), out);
    }
    return sym_fail(t, "'%s' not supported between these objects (eager will raise TypeError)", names[cmp]);
}

/* An inlined operator method that fails (a break inside it: the op then runs eagerly at the
 * BINARY_OP / COMPARE_OP, or its enclosing call is abandoned) leaves nothing of its trace:
 * what it logged (in-place updates, attribute writes) is undone, else eager's run of the
 * method would do it a second time */
static int with_rollback(trace *t, int rc_of_call, sym_fx_mark *mark) {
    if (rc_of_call < 0 && t->failed && !PyErr_Occurred())
        sym_fx_rollback(t, mark);
    sym_fx_drop(mark);
    return rc_of_call;
}

int sym_obj_binary(trace *t, int nb, const var *a, const var *b, var *out) {
    if (nb < 0 || nb >= 26 || (!user_obj(a) && !user_obj(b)))
        return 1;
    sym_fx_mark mark = {0};
    if (sym_fx_save(t, &mark) < 0)
        return -1;
    return with_rollback(t, obj_binary(t, nb, a, b, out), &mark);
}

int sym_obj_compare(trace *t, int cmp, const var *a, const var *b, var *out) {
    if (cmp < 0 || cmp > 5 || (!user_obj(a) && !user_obj(b)))
        return 1;
    sym_fx_mark mark = {0};
    if (sym_fx_save(t, &mark) < 0)
        return -1;
    return with_rollback(t, obj_compare(t, cmp, a, b, out), &mark);
}
