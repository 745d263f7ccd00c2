/* obj_attrs.c — attribute writes and deletions of objects the trace reads through a source
 * (objects passed in, module state, objects made by obj_new.c or a hoisted deepcopy):
 * STORE_ATTR, DELETE_ATTR, the setattr()/delattr() builtins, and object's own slots called by
 * name (object.__setattr__(o, k, v), super().__setattr__(k, v), super().__delattr__(k),
 * super().__init__(), Base.__init__ of a class that keeps object's, object.__getattribute__).
 *
 * A class with a Python __setattr__/__delattr__ (not an nn.Module: its stores keep their own
 * rule) has it inlined, as eager calls it: what it stores in the end goes through object's
 * slot. Every other write is logged in t->attrw (one slot per object and name, in the order
 * of first writes; later reads of the name in the trace see it) and replayed after the graph
 * (eval_frame.c: dh_replay_attr). A deletion is logged as a value naming the deletion (a
 * constant only this file makes, sym_attr_is_deleted): a read of the name afterwards raises
 * AttributeError where the class has no such attribute (eager does), else the trace fails;
 * the replay deletes the attribute if the object has it (a name the trace set and deleted
 * was never on the real object).
 *
 * Requires: attribute reads consult t->attrw first (sym_attr.c) and know deletions; the
 *           object has a source (its identity is the caller's object or a fresh allocation).
 * Keeps:    eager's final state of every object written: values, deletions, the attributes
 *           a class's own __setattr__ maps names to.
 * Breaks:   nothing; an object without a source fails as before ("attribute assignment on a
 *           non-module value").
 */
#include "sym_interp.h"

#include <string.h>

static PyObject *deleted_marker; /* a unique object: the value of a deleted attribute */
static PyObject *s_setattr, *s_delattr, *s_init, *s_getattribute, *s_dict;
static PyObject *obj_setattr, *obj_delattr, *obj_init, *obj_getattribute; /* object's slots */

static int init_once(void) {
    if (deleted_marker != NULL)
        return 0;
    s_setattr = PyUnicode_InternFromString("__setattr__");
    s_delattr = PyUnicode_InternFromString("__delattr__");
    s_init = PyUnicode_InternFromString("__init__");
    s_getattribute = PyUnicode_InternFromString("__getattribute__");
    s_dict = PyUnicode_InternFromString("__dict__");
    if (!s_setattr || !s_delattr || !s_init || !s_getattribute || !s_dict)
        return -1;
    obj_setattr = _PyType_Lookup(&PyBaseObject_Type, s_setattr);
    obj_delattr = _PyType_Lookup(&PyBaseObject_Type, s_delattr);
    obj_init = _PyType_Lookup(&PyBaseObject_Type, s_init);
    obj_getattribute = _PyType_Lookup(&PyBaseObject_Type, s_getattribute);
    if (!obj_setattr || !obj_delattr || !obj_init || !obj_getattribute) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: object's slots not found");
        return -1;
    }
    deleted_marker = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type); /* kept for the process */
    return deleted_marker ? 0 : -1;
}

PyObject *sym_attr_deleted_marker(void) { return init_once() < 0 ? NULL : deleted_marker; }

int sym_attr_is_deleted(const var *v) {
    return v != NULL && deleted_marker != NULL && v->kind == V_CONST && v->obj == deleted_marker;
}

/* the class's own Python __setattr__/__delattr__ (a function found before object's), or NULL */
static PyObject *py_slot(PyObject *o, PyObject *name) {
    if (sym_is_nn_module(o))
        return NULL;
    PyObject *f = _PyType_Lookup(Py_TYPE(o), name);
    return f != NULL && PyFunction_Check(f) ? f : NULL;
}

static int writable(trace *t, const var *o, PyObject *name, const char *what) {
    if (o->kind != V_OBJ || o->obj == NULL || PyModule_Check(o->obj) || o->src < 0)
        return sym_fail(t, "attribute %s on a non-module value", what);
    if (!PyUnicode_Check(name))
        return sym_fail(t, "attribute name must be a string (eager will raise)");
    if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
        return sym_fail(t, "attribute %s inside a generator", what);
    return 0;
}

/* the last slot logging obj.name (a name set again after its deletion has a later slot) */
static int find_slot(trace *t, PyObject *obj, PyObject *name) {
    for (int i = t->nattrw - 1; i >= 0; i--) /* one object (sources may differ: DH_G_SAMEOBJ) */
        if (t->attrw[i].obj == obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0)
            return i;
    return -1;
}

/* o.name = *v logged (v: the deletion marker for a deletion) */
static int log_write(trace *t, const var *o, PyObject *name, const var *v) {
    int i = find_slot(t, o->obj, name);
    if (i >= 0 && sym_attr_is_deleted(t->attrw[i].val) && !sym_attr_is_deleted(v))
        i = -1; /* set again after its deletion: a new slot, replayed after the deletion (the
                 * name then comes last in the object's __dict__, as in eager) */
    if (i < 0) {
        if (sym_attrw_new(t) == NULL)
            return -1;
        i = t->nattrw - 1;
        t->attrw[i].src = o->src;
    }
    var *val = sym_alloc(t, 1);
    if (val == NULL)
        return -1;
    *val = *v;
    t->attrw[i].obj = o->obj;
    t->attrw[i].name = name;
    t->attrw[i].val = val;
    return 0;
}

/* object.__setattr__(o, name, v) */
static int plain_set(trace *t, const var *o, PyObject *name, const var *v) {
    PyObject *descr = _PyType_Lookup(Py_TYPE(o->obj), name);
    if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL && !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        /* a __slots__ member is stored by object's setattr as a dict entry is (the replay:
         * PyObject_GenericSetAttr / SetAttr, which take the member descriptor) */
        return sym_fail(t, "assignment to a property %U", name);
    if (v->kind == V_FUNC && v->op == SYM_MADE_FUNCTION)
        return sym_fail(t, "storing a nested function on an object");
    if (v->kind == V_UNSET || v->kind == V_NULL)
        return sym_fail(t, "storing an unbound value");
    return log_write(t, o, name, v);
}

/* the real object's own __dict__ holds name now: guarded (the source reads the dict) */
static int real_has(trace *t, const var *o, PyObject *name) {
    int ds = sym_source(t, DH_S_ATTR, o->src, 2, s_dict);
    if (ds < 0)
        return -1;
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    return sym_guard_key(t, ds, dp ? *dp : NULL, name);
}

/* object.__delattr__(o, name) */
static int plain_del(trace *t, const var *o, PyObject *name) {
    PyObject *descr = _PyType_Lookup(Py_TYPE(o->obj), name);
    if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL)
        return sym_fail(t, "deletion of a property %U", name);
    if (Py_TYPE(o->obj)->tp_dictoffset == 0)
        return sym_fail(t, "deletion of an attribute of an object without __dict__");
    int i = find_slot(t, o->obj, name), has;
    if (i >= 0)
        has = !sym_attr_is_deleted(t->attrw[i].val);
    else if ((has = real_has(t, o, name)) < 0)
        return -1;
    if (!has)
        return sym_raise(t, PyExc_AttributeError, name, "delattr of a missing attribute %U (eager will raise)", name);
    var d = sym_var(V_CONST);
    d.obj = deleted_marker;
    return log_write(t, o, name, &d);
}

/* type(o).<slot>(o, args...) of a Python function, inlined (its result dropped) */
static int inline_slot(trace *t, PyObject *f, const var *o, PyObject *name, const var *v) {
    PyObject *fn = sym_keep(t, Py_NewRef(f));
    int fs = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
    var *args = sym_alloc(t, 2);
    if (fs < 0 || args == NULL || sym_const(t, Py_NewRef(name), &args[0]) < 0)
        return -1;
    if (v != NULL)
        args[1] = *v;
    var r;
    return sym_inline(t, fn, fs, o, args, v ? 2 : 1, NULL, &r) < 0 ? -1 : 0;
}

int sym_obj_setattr(trace *t, const var *o, PyObject *name, const var *v) {
    if (init_once() < 0 || writable(t, o, name, "assignment") < 0)
        return -1;
    PyObject *f = py_slot(o->obj, s_setattr);
    return f ? inline_slot(t, f, o, name, v) : plain_set(t, o, name, v);
}

int sym_obj_plain_setattr(trace *t, const var *o, PyObject *name, const var *v) {
    if (init_once() < 0 || writable(t, o, name, "assignment") < 0)
        return -1;
    if (sym_is_nn_module(o->obj))
        return sym_fail(t, "object.__setattr__ on an nn.Module");
    return plain_set(t, o, name, v);
}

int sym_obj_delattr(trace *t, const var *o, PyObject *name) {
    if (init_once() < 0 || writable(t, o, name, "deletion") < 0)
        return -1;
    if (sym_is_nn_module(o->obj))
        return sym_fail(t, "attribute deletion on an nn.Module");
    PyObject *f = py_slot(o->obj, s_delattr);
    return f ? inline_slot(t, f, o, name, NULL) : plain_del(t, o, name);
}

/* DELETE_ATTR */
int sym_op_delete_attr(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    var a = POP();
    return sym_obj_delattr(t, &a, PyTuple_GET_ITEM(in->names, in->oparg)) < 0 ? -1 : SYM_NEXT;
}

/* ---- object's slots called by name --------------------------------------------------- */

static int which_slot(PyObject *m) {
    if (m == NULL || init_once() < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return -1;
    }
    return m == obj_setattr ? 0 : m == obj_delattr ? 1 : m == obj_init ? 2 : m == obj_getattribute ? 3 : -1;
}

int sym_obj_slot_attr(trace *t, PyObject *found, const var *self, var *out) {
    if (which_slot(found) < 0)
        return 1;
    if (self != NULL)
        return sym_method(t, self, found, -1, out);
    *out = sym_var(V_FUNC);
    out->op = -1;
    out->obj = found; /* object's own slot wrapper: immortal with object */
    return 0;
}

/* object.__getattribute__(o, name): o's own __dict__ (through the trace's writes), then
 * the class, as object's generic lookup (a class's own __getattribute__ not run) */
static int generic_getattr(trace *t, const var *o, PyObject *name, var *out) {
    if (o->kind != V_OBJ || o->obj == NULL || o->src < 0 || PyType_Check(o->obj) || PyModule_Check(o->obj))
        return sym_fail(t, "object.__getattribute__ of an unsupported value");
    PyTypeObject *tp = Py_TYPE(o->obj);
    PyObject *descr = _PyType_Lookup(tp, name);
    if (PyUnicode_Compare(name, s_dict) == 0 && tp->tp_dictoffset != 0) {
        /* o.__dict__ itself: a read-only view with the trace's writes (obj_dictview.c); the
         * real dict where the view is not for this object */
        int vrc = sym_obj_dict_view_generic(t, o, out);
        if (vrc <= 0)
            return vrc;
        for (int i = 0; i < t->nattrw; i++)
            if (t->attrw[i].obj == o->obj)
                return sym_fail(t, "__dict__ of an object whose attributes the trace wrote");
        PyObject *d = PyObject_GenericGetAttr(o->obj, name);
        int ds = d ? sym_source(t, DH_S_ATTR, o->src, 2, s_dict) : -1;
        int rc = d == NULL ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "__dict__ not readable"))
                 : ds < 0  ? -1
                           : sym_wrap(t, d, ds, out);
        Py_XDECREF(d);
        return rc;
    }
    if (sym_is_property(descr)) {
        /* a property: its Python getter inlined */
        PyObject *fget = PyObject_GetAttrString(descr, "fget");
        if (fget == NULL)
            (void)tc_clear_expected(PyExc_AttributeError);
        if (fget == NULL || !PyFunction_Check(fget)) {
            Py_XDECREF(fget);
            return sym_fail(t, "property %U without a Python getter", name);
        }
        PyObject *fn = sym_keep(t, fget);
        int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
        return s < 0 ? -1 : sym_inline(t, fn, s, o, NULL, 0, NULL, out);
    }
    if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL)
        return sym_fail(t, "object.__getattribute__ of a data descriptor %U", name);
    int i = find_slot(t, o->obj, name), has = 0;
    if (i >= 0 && !sym_attr_is_deleted(t->attrw[i].val)) {
        *out = *t->attrw[i].val;
        return 0;
    }
    if (i < 0 && tp->tp_dictoffset != 0 && (has = real_has(t, o, name)) < 0)
        return -1;
    if (has) {
        PyObject **dp = _PyObject_GetDictPtr(o->obj);
        PyObject *v = dp && *dp ? PyDict_GetItemWithError(*dp, name) : NULL;
        if (v == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "instance dict lookup failed");
        }
        int ds = sym_source(t, DH_S_ATTR, o->src, 2, s_dict);
        int s = ds < 0 ? -1 : sym_source(t, DH_S_ITEM, ds, -1, name);
        return s < 0 ? -1 : sym_wrap(t, v, s, out);
    }
    if (descr == NULL)
        return sym_raise(t, PyExc_AttributeError, name, "attribute %U not found (eager will raise)", name);
    if (PyFunction_Check(descr)) {
        int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
        return s < 0 ? -1 : sym_method(t, o, descr, s, out);
    }
    if (Py_TYPE(descr)->tp_descr_get == NULL) { /* a plain class attribute */
        int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
        return s < 0 ? -1 : sym_wrap(t, descr, s, out);
    }
    return sym_fail(t, "object.__getattribute__ of class attribute %U not supported", name);
}

int sym_obj_slot_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if ((fn->kind != V_METHOD && fn->kind != V_FUNC) || fn->obj == NULL)
        return 1;
    int w = which_slot(fn->obj);
    if (w < 0)
        return 1;
    static const char *const names[] = {"__setattr__", "__delattr__", "__init__", "__getattribute__"};
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return sym_fail(t, "object.%s with keyword arguments (eager will raise)", names[w]);
    const var *self;
    if (fn->kind == V_METHOD) {
        if (fn->items == NULL)
            return 1;
        self = &fn->items[0];
    } else {
        if (nargs < 1)
            return sym_fail(t, "object.%s without self (eager will raise)", names[w]);
        self = &args[0];
        args++;
        nargs--;
    }
    if (w == 2) { /* object.__init__(self): nothing (arguments: eager's rule on excess args) */
        if (nargs > 0)
            return sym_fail(t, "object.__init__ with arguments");
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    int want = w == 0 ? 2 : 1;
    if (nargs != want || args[0].kind != V_CONST || !PyUnicode_Check(args[0].obj))
        return sym_fail(t, "object.%s with these arguments not supported", names[w]);
    PyObject *name = args[0].obj;
    if (w == 3)
        return generic_getattr(t, self, name, out);
    if (writable(t, self, name, w == 0 ? "assignment" : "deletion") < 0)
        return -1;
    if (sym_is_nn_module(self->obj))
        return sym_fail(t, "object.%s on an nn.Module", names[w]);
    if ((w == 0 ? plain_set(t, self, name, &args[1]) : plain_del(t, self, name)) < 0)
        return -1;
    return sym_const(t, Py_NewRef(Py_None), out);
}

/* ---- replay after the graph ---------------------------------------------------------- */

int dh_replay_attr(PyObject *obj, PyObject *name, PyObject *val) {
    if (init_once() < 0)
        return -1;
    /* a Python __setattr__/__delattr__ ran in the trace: what it stored goes through object's */
    PyObject *own = _PyType_Lookup(Py_TYPE(obj), val == deleted_marker ? s_delattr : s_setattr);
    int generic = own != NULL && PyFunction_Check(own) && !sym_is_nn_module(obj);
    if (val != deleted_marker)
        return generic ? PyObject_GenericSetAttr(obj, name, val) : PyObject_SetAttr(obj, name, val);
    int rc = generic ? PyObject_GenericSetAttr(obj, name, NULL) : PyObject_DelAttr(obj, name);
    if (rc < 0 && PyErr_ExceptionMatches(PyExc_AttributeError) && tc_clear_expected(PyExc_AttributeError) == 0)
        rc = 0; /* set and deleted in the trace */
    return rc;
}
