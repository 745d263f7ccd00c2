/* sym_attr.c — attribute reads of tracked values (modules, classes, constants, super(),
 * functions, records) and the LOAD_GLOBAL / LOAD_ATTR / STORE_ATTR / LOAD_SUPER_ATTR /
 * IMPORT_* handlers. */
#include "sym_interp.h"
#include "train.h"

#include <string.h>

int sym_is_property(PyObject *d) {
    return d != NULL && (Py_IS_TYPE(d, &PyProperty_Type) ||
                         (PyObject_TypeCheck(d, &PyProperty_Type) &&
                          Py_TYPE(d)->tp_descr_get == PyProperty_Type.tp_descr_get));
}

static int fn_const_attr(const char *n) {
    return !strcmp(n, "__name__") || !strcmp(n, "__qualname__") || !strcmp(n, "__module__");
}

/* The source of cls.name looked up through cls's MRO (on the class's source src or, without
 * one, the class held by the entry), its identity guarded: K.f = g (a monkeypatched method,
 * staticmethod or classmethod) after a call is seen by the next. -1 failed. */
static int class_attr_guarded(trace *t, PyObject *cls, int src, PyObject *name, PyObject *a) {
    int cs = src >= 0 ? src : sym_source(t, DH_S_CONST, -1, 0, cls);
    int s = cs < 0 ? -1 : sym_source(t, DH_S_ATTR, cs, 3, name);
    return s < 0 || sym_guard_id(t, s, a) < 0 ? -1 : s;
}

/* super().name found in the class at mro[end - 1], past mro[first..end - 2] which lack it:
 * each of those classes' lookup of name (through its own MRO) guarded as it is now, its
 * identity, or its absence (hasattr == 0), so a class of the path that gains the name or the
 * one defining it being reassigned fails the guards. -1 failed. */
static int guard_super_lookup(trace *t, PyObject *mro, Py_ssize_t first, Py_ssize_t end, PyObject *name) {
    for (Py_ssize_t k = first; k < end; k++) {
        PyObject *cls = PyTuple_GET_ITEM(mro, k);
        if (cls == (PyObject *)&PyBaseObject_Type)
            continue; /* object's own attributes cannot be set */
        int cs = sym_source(t, DH_S_CONST, -1, 0, cls);
        if (cs < 0)
            return -1;
        PyObject *a = _PyType_Lookup((PyTypeObject *)cls, name);
        if (a != NULL) {
            if (class_attr_guarded(t, cls, cs, name, a) < 0)
                return -1;
            continue;
        }
        dh_guard *g = sym_new_guard(t, DH_G_HASATTR, cs);
        if (g == NULL)
            return -1;
        g->obj = Py_NewRef(name);
        PyObject *r = PyObject_GetAttr(cls, name); /* a metaclass's attribute */
        if (r == NULL && tc_clear_expected(PyExc_AttributeError) < 0)
            return -1;
        g->value = r != NULL;
        Py_XDECREF(r);
    }
    return 0;
}

/* cls.name for a class reached as a guarded global or as type(guarded object): a function
 * on the class (its identity guarded, class_attr_guarded), an enum member, a plain constant
 * (guarded: the class's attribute looked up through its MRO), or the class's name.
 * 0 done, -1 failed, 1 not handled. */
/* a tuple of None, bools, ints, floats, strings (and such tuples): immutable all through */
static int const_tuple(PyObject *a, int depth) {
    if (!PyTuple_CheckExact(a) || depth > 4)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
        PyObject *x = PyTuple_GET_ITEM(a, i);
        if (!(x == Py_None || PyBool_Check(x) || PyLong_CheckExact(x) || PyFloat_CheckExact(x) ||
              PyUnicode_CheckExact(x) || const_tuple(x, depth + 1)))
            return 0;
    }
    return 1;
}

static int type_attr(trace *t, PyObject *cls, int src, PyObject *name, var *out) {
    const char *n = PyUnicode_AsUTF8(name);
    if (n == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return 1;
    }
    if (!strcmp(n, "__name__") || !strcmp(n, "__qualname__") || !strcmp(n, "__module__"))
        return sym_const(t, PyObject_GetAttr(cls, name), out) < 0
                   ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "attribute %U of a class", name)) : 0;
    PyTypeObject *meta = Py_TYPE(cls);
    PyObject *md = meta != &PyType_Type && (meta->tp_flags & Py_TPFLAGS_HEAPTYPE) ? _PyType_Lookup(meta, name) : NULL;
    if (md != NULL && Py_IS_TYPE(md, &PyProperty_Type)) {
        /* a property of a Python metaclass (EnumType.__members__): a data descriptor, found
         * before the class's own attributes, its getter inlined with the class as self, as
         * eager calls type(cls).name.fget(cls) */
        PyObject *fget = PyObject_GetAttrString(md, "fget");
        if (fget == NULL)
            return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
        PyObject *kept = sym_keep(t, fget);
        if (kept == NULL)
            return -1;
        if (!PyFunction_Check(kept))
            return 1;
        var self;
        int s;
        if (class_attr_guarded(t, (PyObject *)meta, -1, name, md) < 0 || sym_wrap(t, cls, src, &self) < 0 ||
            (s = sym_source(t, DH_S_CONST, -1, 0, kept)) < 0)
            return -1;
        return sym_inline(t, kept, s, &self, NULL, 0, NULL, out);
    }
    if (n[0] == '_') {
        /* Base.__init__ / Cls._helper: a Python function on the class, called with an explicit
         * self; object's own __init__/__setattr__/__delattr__ (obj_attrs.c) */
        PyObject *a = _PyType_Lookup((PyTypeObject *)cls, name);
        if (a != NULL && sym_obj_slot_attr(t, a, NULL, out) == 0)
            return 0;
        if (a == NULL || !(PyFunction_Check(a) || Py_IS_TYPE(a, &PyClassMethod_Type) ||
                           Py_IS_TYPE(a, &PyStaticMethod_Type) || const_tuple(a, 0) || PyList_CheckExact(a) ||
                           PyDict_CheckExact(a) || /* a named tuple's _make */
                           (n[1] != '_' && (a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) ||
                                            PyFloat_CheckExact(a) || PyUnicode_CheckExact(a))))) /* cls._eps */
            return 1;
    }
    /* Fn.apply: captured or a break at its call (sym_call); a Python classmethod overriding
     * Function.apply (calling super().apply) is inlined as any classmethod below */
    int base = !strcmp(n, "apply") && tc_is_autograd_function(cls);
    if (base) {
        PyObject *ov = _PyType_Lookup((PyTypeObject *)cls, name);
        PyObject *ovf = ov != NULL && Py_IS_TYPE(ov, &PyClassMethod_Type) ? PyObject_GetAttrString(ov, "__func__") : NULL;
        if (ovf == NULL && tc_clear_expected(PyExc_AttributeError) < 0)
            return -1;
        base = ovf != NULL && PyFunction_Check(ovf) ? dh_autograd_is_base_apply(ovf) : 1;
        Py_XDECREF(ovf);
        if (base < 0)
            return -1;
    }
    if (base)
        return sym_const(t, PyObject_GetAttr(cls, name), out) < 0 ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "Function.apply")) : 0;
    PyObject *a = _PyType_Lookup((PyTypeObject *)cls, name);
    if (a == NULL)
        return 1;
    int cm = Py_IS_TYPE(a, &PyClassMethod_Type);
    if (Py_IS_TYPE(a, &PyStaticMethod_Type) || cm) {
        /* C.f of a staticmethod: the function; of a classmethod: the function bound to C */
        PyObject *fn = PyObject_GetAttrString(a, "__func__");
        if (fn == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
        int ok = PyFunction_Check(fn);
        PyObject *kept = sym_keep(t, fn);
        if (kept == NULL)
            return -1;
        if (!ok)
            return 1;
        if (class_attr_guarded(t, cls, src, name, a) < 0) /* the descriptor; its __func__ is fixed */
            return -1;
        int s = sym_source(t, DH_S_CONST, -1, 0, kept);
        if (s < 0)
            return -1;
        if (cm) {
            var self;
            if (sym_wrap(t, cls, src, &self) < 0)
                return -1;
            return sym_method(t, &self, kept, s, out);
        }
        *out = sym_var(V_FUNC);
        out->src = s;
        out->op = SYM_USER_FUNCTION;
        out->obj = kept;
        return 0;
    }
    if (PyFunction_Check(a)) {
        if (class_attr_guarded(t, cls, src, name, a) < 0)
            return -1;
        int s = sym_source(t, DH_S_CONST, -1, 0, a); /* its globals/closure are read through it */
        if (s < 0)
            return -1;
        memset(out, 0, sizeof *out);
        out->kind = V_FUNC;
        out->src = s;
        out->op = SYM_USER_FUNCTION;
        out->obj = sym_keep(t, Py_NewRef(a));
        return out->obj ? 0 : -1;
    }
    if (PyObject_TypeCheck(a, (PyTypeObject *)cls)) /* an enum member */
        return sym_const(t, Py_NewRef(a), out);
    if (PyList_CheckExact(a) || PyDict_CheckExact(a)) {
        /* a class-level registry (Cls.registry[name] = fn), a table of names: the container
         * reached through the class (its MRO), read and updated as a global one is (its
         * keys and items guarded as read; updates replayed on it after the graph) */
        int cs = src >= 0 ? src : sym_source(t, DH_S_CONST, -1, 0, cls);
        int s = cs < 0 ? -1 : sym_source(t, DH_S_ATTR, cs, 3, name);
        return s < 0 ? -1 : sym_wrap(t, a, s, out);
    }
    if (PyTuple_CheckExact(a) && const_tuple(a, 0)) {
        /* a named tuple's _fields, a class's table of names: the tuple itself guarded */
        if (class_attr_guarded(t, cls, src, name, a) < 0)
            return -1;
        return sym_const(t, Py_NewRef(a), out);
    }
    if (a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a) ||
        PyUnicode_CheckExact(a)) {
        /* K.factor = 5 after a call: the next call sees it (was: the value at trace time) */
        int cs = src >= 0 ? src : sym_source(t, DH_S_CONST, -1, 0, cls);
        int s = cs < 0 ? -1 : sym_source(t, DH_S_ATTR, cs, 3, name);
        return s < 0 ? -1 : sym_wrap(t, a, s, out);
    }
    return 1;
}

/* the Python function of a staticmethod or classmethod descr (what: which, for the reason),
 * kept, and its constant source *s; NULL: failed (a reason) */
static PyObject *descr_func(trace *t, PyObject *descr, const char *what, PyObject *name, int *s) {
    PyObject *fn = PyObject_GetAttrString(descr, "__func__");
    if (fn == NULL || !PyFunction_Check(fn)) {
        Py_XDECREF(fn);
        (void)tc_clear_expected(PyExc_AttributeError);
        return sym_fail(t, "%s %U without a Python function", what, name), NULL;
    }
    fn = sym_keep(t, fn);
    *s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
    return *s < 0 ? NULL : fn;
}

/* o.name on an object whose class defines __getattr__ in Python (and no __getattribute__
 * of its own): found in the instance dict or on the class, the generic path below reads it;
 * else __getattr__(o, name) is inlined (eager calls it once per read: so does the graph,
 * where the real getattr at trace and guard time would call it more often). The name's
 * absence from the instance dict is guarded. 1: not this case. */
static int getattr_hook(trace *t, const var *o, PyObject *name, var *out) {
    static PyObject *s_getattr, *s_getattribute, *obj_getattribute;
    PyTypeObject *tp = Py_TYPE(o->obj);
    if (tp->tp_getattro == PyObject_GenericGetAttr || sym_is_nn_module(o->obj) || o->src < 0)
        return 1;
    if (s_getattr == NULL) {
        s_getattr = PyUnicode_InternFromString("__getattr__");
        s_getattribute = PyUnicode_InternFromString("__getattribute__");
        obj_getattribute = s_getattribute ? _PyType_Lookup(&PyBaseObject_Type, s_getattribute) : NULL;
        if (s_getattr == NULL || obj_getattribute == NULL) {
            /* only an allocation failed: MemoryError stays set, as in eager */
            return 1;
        }
    }
    PyObject *ga = _PyType_Lookup(tp, s_getattr);
    if (ga == NULL || !PyFunction_Check(ga) || _PyType_Lookup(tp, s_getattribute) != obj_getattribute)
        return 1;
    if (_PyType_Lookup(tp, name) != NULL)
        return 1; /* a class attribute, method or descriptor: the generic path */
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    PyObject *dict = dp ? *dp : NULL;
    int has = sym_guard_key(t, o->src, dict, name);
    if (has < 0)
        return -1;
    if (has)
        return 1;
    if (sym_guard_type(t, o->src, o->obj) < 0)
        return -1;
    PyObject *fn = sym_keep(t, Py_NewRef(ga));
    int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
    var *arg = sym_alloc(t, 1);
    if (s < 0 || arg == NULL || sym_const(t, Py_NewRef(name), arg) < 0)
        return -1;
    return sym_inline(t, fn, s, o, arg, 1, NULL, out);
}

/* hasattr(o, name) False / getattr(o, name, default) the default: the answer holds while the
 * name stays absent, so that is guarded (else a later call that finds it set, as a lazily
 * initialized cache or buffer is, would rerun the trace's "absent" branch: the cache reset
 * on every call). Established for an object with a source: where its lookup
 * is object's or nn.Module's, the name on no class of its MRO, in neither its instance __dict__
 * nor (a module) its _parameters/_buffers/_modules; where it has its own, by the real getattr
 * (DH_G_HASATTR). 1: absent and guarded; 0: not established (the
 * lookup failed for another reason: the caller keeps the failure); -1: error. */
int sym_guard_attr_absent(trace *t, const var *o, PyObject *name) {
    static PyObject *s_getattr, *s_getattribute, *subs[3];
    if (o->kind != V_OBJ || o->obj == NULL || o->src < 0 || PyModule_Check(o->obj) || !PyUnicode_Check(name))
        return 0;
    for (int i = t->nattrw - 1; i >= 0; i--) /* deleted earlier in this trace: absent then */
        if (t->attrw[i].obj == o->obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0)
            return sym_attr_is_deleted(t->attrw[i].val);
    if (s_getattr == NULL) {
        s_getattr = PyUnicode_InternFromString("__getattr__");
        s_getattribute = PyUnicode_InternFromString("__getattribute__");
        subs[0] = PyUnicode_InternFromString("_parameters");
        subs[1] = PyUnicode_InternFromString("_buffers");
        subs[2] = PyUnicode_InternFromString("_modules");
        if (!s_getattr || !s_getattribute || !subs[0] || !subs[1] || !subs[2])
            return -1;
    }
    PyTypeObject *tp = Py_TYPE(o->obj);
    int mod = sym_is_nn_module(o->obj), own = 0;
    if (mod) {
        PyObject *mt = sym_nn_module_type();
        own = mt == NULL || _PyType_Lookup(tp, s_getattr) != _PyType_Lookup((PyTypeObject *)mt, s_getattr) ||
              _PyType_Lookup(tp, s_getattribute) != _PyType_Lookup(&PyBaseObject_Type, s_getattribute);
    } else {
        own = tp->tp_getattro != PyObject_GenericGetAttr;
    }
    if (own) {
        /* its own __getattribute__/__getattr__ decides (a config object that maps names):
         * asked now and at every guard check, as the real getattr source does */
        PyObject *r = PyObject_GetAttr(o->obj, name);
        if (r != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
            Py_XDECREF(r);
            return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 0;
        }
        if (tc_clear_expected(PyExc_AttributeError) < 0)
            return -1;
        dh_guard *g = sym_new_guard(t, DH_G_HASATTR, o->src);
        if (g == NULL)
            return -1;
        g->obj = Py_NewRef(name);
        g->value = 0;
        return 1;
    }
    if (_PyType_Lookup(tp, name) != NULL || dh_module_has_attr(o->obj, name))
        return 0; /* it is there: the lookup failed for another reason */
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    PyObject *dict = dp ? *dp : NULL;
    if (sym_guard_type(t, o->src, o->obj) < 0 || sym_guard_key(t, o->src, dict, name) < 0)
        return -1;
    for (int i = 0; mod && i < 3; i++) {
        PyObject *d = dict ? PyDict_GetItemWithError(dict, subs[i]) : NULL;
        if (d == NULL && PyErr_Occurred())
            return -1;
        int s = sym_source(t, DH_S_ATTR, o->src, 0, subs[i]);
        if (s < 0 || sym_guard_key(t, s, d != NULL && PyDict_Check(d) ? d : NULL, name) < 0)
            return -1;
    }
    return 1;
}

/* hasattr(x, name) / getattr(x, name, default) of a tensor whose lookup by the trace failed:
 * the answer from the real tensor, guarded. A name on its class (a property the trace does
 * not model, one that raises: __cuda_array_interface__ of a CPU tensor) is not established
 * (0); else an instance attribute decides: 1 absent, 2 present, each guarded on the input's
 * instance __dict__ (its class is fixed by TENSOR_MATCH); a tensor made in the graph has
 * none (the trace assigns only grad and requires_grad, which are on the class). -1: error. */
int sym_guard_tensor_attr(trace *t, const var *x_in, PyObject *name) {
    static PyObject *tensor_type;
    var x = *x_in;
    sym_resolve(t, &x);
    if (x.kind != V_TENSOR || !PyUnicode_Check(name))
        return 0;
    PyObject *obj = NULL;
    int src = x.src;
    if (src >= 0 && src < t->capsrc && t->srcdone[src] && t->srcvar[src].oid == x.oid)
        obj = t->srcobj[src];
    if (obj == NULL && tensor_type == NULL) {
        PyObject *torch = PyImport_ImportModule("torch");
        tensor_type = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL; /* kept */
        Py_XDECREF(torch);
        if (tensor_type == NULL)
            return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 0;
    }
    PyTypeObject *tp = obj != NULL ? Py_TYPE(obj) : (PyTypeObject *)tensor_type;
    if (tp->tp_getattro != PyObject_GenericGetAttr || _PyType_Lookup(tp, name) != NULL)
        return 0;
    if (obj == NULL)
        return 1;
    PyObject **dp = _PyObject_GetDictPtr(obj);
    int has = sym_guard_key(t, src, dp != NULL ? *dp : NULL, name);
    return has < 0 ? -1 : has ? 2 : 1;
}

/* o.name found on o's class as a method or other non-data attribute: that answer holds while
 * no instance attribute of the name shadows it (set on the instance after the trace, as a
 * monkeypatched method or a flag overriding a class default is): guarded */
static int guard_unshadowed(trace *t, const var *o, PyObject *name) {
    if (o->src < 0 || o->obj == NULL || PyType_Check(o->obj))
        return 0;
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    if (dp == NULL)
        return 0; /* no instance dict: nothing can shadow */
    return sym_guard_key(t, o->src, *dp, name) < 0 ? -1 : 0;
}

/* x.name of an input tensor where name is no data descriptor of its class (a method such as
 * sum, a class attribute, or nothing): an instance attribute of the name is eager's answer
 * (x.sum = ..., a method monkeypatched on the tensor). Absent: guarded, the trace's reading
 * holds; present: the trace fails with its reason. A tensor made in the graph has none. */
static int tensor_unshadowed(trace *t, const var *x_in, PyObject *name) {
    var x = *x_in;
    sym_resolve(t, &x);
    int src = x.src;
    if (x.kind != V_TENSOR || src < 0 || src >= t->capsrc || !t->srcdone[src] || t->srcvar[src].oid != x.oid ||
        !PyUnicode_Check(name))
        return 0;
    PyObject *obj = t->srcobj[src];
    if (obj == NULL || Py_TYPE(obj)->tp_getattro != PyObject_GenericGetAttr)
        return 0;
    PyObject *ca = _PyType_Lookup(Py_TYPE(obj), name);
    if (ca != NULL && Py_TYPE(ca)->tp_descr_set != NULL)
        return 0; /* a data descriptor (shape, grad, a property) wins over the instance dict */
    PyObject **dp = _PyObject_GetDictPtr(obj);
    int has = sym_guard_key(t, src, dp != NULL ? *dp : NULL, name);
    if (has < 0)
        return -1;
    return has ? sym_fail(t, "Tensor attribute %U: an instance attribute of the tensor shadows its class's", name) : 0;
}

int sym_load_attr(trace *t, const var *o, PyObject *name, var *out) {
    if (o->kind == V_GEN && o->op == 0 && PyUnicode_CompareWithASCIIString(name, "send") == 0)
        return sym_method(t, o, name, -1, out); /* gen.send (sym_gen.c) */
    if (o->kind == V_SEQ || o->kind == V_DICT || o->kind == V_CONST || o->kind == V_OBJ ||
        (o->kind == V_FUNC && o->obj != NULL && PyType_Check(o->obj) &&
         PyUnicode_CompareWithASCIIString(name, "__dataclass_fields__") == 0)) { /* obj_data.c */
        int rc = sym_data_attr(t, o, name, out);
        if (rc != 1)
            return rc;
    }
    if (o->kind == V_SEQ && o->obj != NULL && PyType_Check(o->obj) && o->n == 2 &&
        PyType_IsSubtype((PyTypeObject *)o->obj, &PyTuple_Type)) {
        const char *n = PyUnicode_AsUTF8(name);
        if (n && (!strcmp(n, "values") || !strcmp(n, "indices"))) {
            *out = o->items[n[0] == 'v' ? 0 : 1];
            return 0;
        }
        return sym_fail(t, "attribute %U of a %s", name, ((PyTypeObject *)o->obj)->tp_name);
    }
    if (o->kind == V_SEQ && o->obj == NULL) {
        const char *n = PyUnicode_AsUTF8(name);
        static const char *const list_methods[] = {"append", "extend", "insert", "pop", "remove",
                                                   "clear", "reverse", "sort", "copy", NULL};
        int ok = n != NULL && (!strcmp(n, "index") || !strcmp(n, "count"));
        for (int i = 0; !ok && o->is_list && n != NULL && list_methods[i]; i++)
            ok = !strcmp(n, list_methods[i]);
        if (!ok)
            return sym_fail(t, "%s.%U not supported", o->is_list ? "list" : "tuple", name);
        return sym_method(t, o, name, -1, out);
    }
    switch (o->kind) {
    case V_TENSOR:
        if (tensor_unshadowed(t, o, name) < 0)
            return -1;
        return sym_tensor_attr(t, o, name, out);
    case V_OBJ: {
        if (o->obj == sym_os_environ()) {
            if (PyUnicode_CompareWithASCIIString(name, "get") != 0)
                return sym_fail(t, "os.environ.%U not supported", name);
            return sym_method(t, o, name, -1, out);
        }
        if (PyContextVar_CheckExact(o->obj)) {
            const char *n = PyUnicode_AsUTF8(name);
            if (strcmp(n, "set") && strcmp(n, "get") && strcmp(n, "reset"))
                return sym_fail(t, "ContextVar.%U not supported", name);
            return sym_method(t, o, name, -1, out);
        }
        if (PyModule_Check(o->obj)) {
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                (void)tc_clear_expected(PyExc_AttributeError);
                return sym_fail(t, "module has no attribute %U", name);
            }
            if (a == sym_os_environ()) { /* os.environ: .get(k, d) asked and guarded */
                *out = sym_var(V_OBJ);
                out->obj = sym_keep(t, a);
                return out->obj ? 0 : -1;
            }
            /* user functions and modules reached through a module are guarded; torch's
             * own callables are taken as constants; an instance of a Python class (a
             * module-level singleton: torch.distributions.constraints.real) is an object
             * read through its source, as one passed in */
            int s = -1;
            int inst = !PyType_Check(a) && (Py_TYPE(a)->tp_flags & Py_TPFLAGS_HEAPTYPE) &&
                       Py_TYPE(a)->tp_dictoffset != 0 && !tc_is_tensor(a) && !sym_is_nn_module(a);
            if (o->src >= 0 && (PyFunction_Check(a) || PyModule_Check(a) || inst))
                s = sym_source(t, DH_S_ATTR, o->src, 0, name);
            int rc = sym_wrap(t, a, s, out);
            Py_DECREF(a);
            return rc;
        }
        for (int i = t->nattrw - 1; i >= 0; i--) /* written earlier in this trace */
            if (t->attrw[i].obj == o->obj && o->src >= 0 && PyUnicode_Check(t->attrw[i].name) &&
                PyUnicode_Compare(t->attrw[i].name, name) == 0) {
                if (sym_attr_is_deleted(t->attrw[i].val)) { /* del o.name earlier (obj_attrs.c) */
                    if (Py_TYPE(o->obj)->tp_getattro != PyObject_GenericGetAttr ||
                        _PyType_Lookup(Py_TYPE(o->obj), name) != NULL)
                        return sym_fail(t, "read of attribute %U after its deletion", name);
                    return sym_raise(t, PyExc_AttributeError, name, "attribute %U deleted (eager will raise)", name);
                }
                *out = *t->attrw[i].val;
                return 0;
            }
        int rc_dv = sym_obj_dict_view(t, o, name, out); /* obj_dictview.c: o.__dict__ */
        if (rc_dv <= 0)
            return rc_dv;
        if (sym_obj_attr_special(t, o, name) < 0) /* obj_new.c: __dict__ of a written object */
            return -1;
        int rc_ga = getattr_hook(t, o, name, out);
        if (rc_ga <= 0)
            return rc_ga;
        if (!sym_is_nn_module(o->obj) && Py_TYPE(o->obj)->tp_getattro != PyObject_GenericGetAttr) {
            /* a custom __getattribute__/__getattr__: the real getattr, re-run by the guard;
             * once the trace wrote the object the real one is stale: a Python
             * __getattribute__ is inlined then (object's lookup reads the writes, obj_attrs.c) */
            if (o->src < 0)
                return sym_fail(t, "attribute of an object without a source");
            int written = 0;
            for (int i = 0; i < t->nattrw && !written; i++)
                written = t->attrw[i].obj == o->obj;
            if (written) {
                PyObject *gab = PyUnicode_InternFromString("__getattribute__");
                PyObject *ga = gab ? _PyType_Lookup(Py_TYPE(o->obj), gab) : NULL;
                Py_XDECREF(gab);
                PyObject *gan = PyUnicode_InternFromString("__getattr__");
                PyObject *fallback = gan ? _PyType_Lookup(Py_TYPE(o->obj), gan) : NULL;
                Py_XDECREF(gan);
                if (ga == NULL || !PyFunction_Check(ga) || fallback != NULL)
                    return sym_fail(t, "attribute %U of an object with its own getattr after the trace wrote it", name);
                PyObject *fn = sym_keep(t, Py_NewRef(ga));
                int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
                var *arg = sym_alloc(t, 1);
                if (s < 0 || arg == NULL || sym_const(t, Py_NewRef(name), arg) < 0)
                    return -1;
                return sym_inline(t, fn, s, o, arg, 1, NULL, out);
            }
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "attribute %U not found", name);
            }
            if (PyMethod_Check(a) && PyFunction_Check(PyMethod_GET_FUNCTION(a)) &&
                PyMethod_GET_SELF(a) == o->obj) {
                PyObject *fn = sym_keep(t, Py_NewRef(PyMethod_GET_FUNCTION(a)));
                Py_DECREF(a);
                int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
                if (fn == NULL || s < 0)
                    return -1;
                return sym_method(t, o, fn, s, out);
            }
            /* the trace holds the result: a fresh object per getattr, freed here, let the next
             * one take its address and read as the same object (an ALIAS guard that the real
             * getattr fails: "guards reject their own frame") */
            if (sym_keep(t, a) == NULL)
                return -1;
            int s = sym_source(t, DH_S_ATTR, o->src, 2, name);
            return s < 0 ? -1 : sym_wrap(t, a, s, out);
        }
        if (PyUnicode_CompareWithASCIIString(name, "__class__") == 0 && o->src >= 0)
            /* the object is identity-guarded: its class is fixed */
            return sym_const(t, Py_NewRef((PyObject *)Py_TYPE(o->obj)), out);
        if (PyUnicode_CompareWithASCIIString(name, "_modules") == 0 && o->src >= 0) {
            /* the submodule dict: values reached as attributes of the module */
            PyObject *mods = dh_module_getattr(o->obj, name);
            if (mods == NULL || !PyDict_Check(mods)) {
                Py_XDECREF(mods);
                return sym_fail(t, "_modules is not a dict");
            }
            Py_ssize_t n = PyDict_GET_SIZE(mods), pos = 0;
            PyObject *keys = PyTuple_New(n), *k, *v;
            var *vals = sym_alloc(t, (int)n);
            int ms = sym_source(t, DH_S_ATTR, o->src, 0, name); /* submodules added later: */
            if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL || ms < 0 ||
                sym_guard_len(t, ms, (int)n) < 0) {                /* another entry */
                Py_DECREF(mods);
                return -1;
            }
            int i = 0;
            while (i < n && PyDict_Next(mods, &pos, &k, &v)) {
                PyTuple_SET_ITEM(keys, i, Py_NewRef(k));
                int s = sym_source(t, DH_S_ATTR, o->src, 0, k);
                if (s < 0 || sym_wrap(t, v, s, &vals[i++]) < 0) {
                    Py_DECREF(mods);
                    return -1;
                }
            }
            Py_DECREF(mods);
            if (i != n)
                return sym_fail(t, "_modules changed size while traced");
            if (sym_guard_key_order(t, ms, keys) < 0)
                return -1;
            *out = sym_var(V_DICT);
            out->obj = keys;
            out->items = vals;
            out->n = i;
            return 0;
        }
        /* nn.Module: no data descriptor may shadow the instance attribute */
        PyObject *descr = _PyType_Lookup(Py_TYPE(o->obj), name);
        if (descr != NULL) {
            if (sym_is_property(descr) && o->src >= 0) {
                /* a property: its getter inlined (the class is guarded with the object) */
                PyObject *fget = PyObject_GetAttrString(descr, "fget");
                if (fget == NULL)
                    (void)tc_clear_expected(PyExc_AttributeError);
                if (fget == NULL || !PyFunction_Check(fget)) {
                    Py_XDECREF(fget);
                    return sym_fail(t, "property %U on %s without a Python getter", name,
                                    Py_TYPE(o->obj)->tp_name);
                }
                PyObject *fn = sym_keep(t, fget);
                int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
                return s < 0 ? -1 : sym_inline(t, fn, s, o, NULL, 0, NULL, out);
            }
            if (o->src >= 0 && sym_is_lru_wrapper(descr) && !dh_module_has_attr(o->obj, name)) {
                /* an lru_cache'd function on the class: a method called through the cache
                 * (ops_table.c lru_cached_call), reached through the class */
                int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
                if (s < 0 || sym_guard_id(t, s, descr) < 0 || guard_unshadowed(t, o, name) < 0)
                    return -1;
                return sym_method(t, o, descr, s, out);
            }
            if (Py_IS_TYPE(descr, &PyMemberDescr_Type) && o->src >= 0 &&
                Py_TYPE(o->obj)->tp_getattro == PyObject_GenericGetAttr) {
                /* a __slots__ member (not written in the trace: t->attrw above): its value,
                 * read by object's getattr (the member descriptor, C) at guard time */
                PyObject *a = PyObject_GenericGetAttr(o->obj, name);
                if (a == NULL) {
                    if (tc_clear_expected(PyExc_AttributeError) < 0)
                        return -1;
                    return sym_fail(t, "slot %U of %s not set", name, Py_TYPE(o->obj)->tp_name);
                }
                if (sym_keep(t, a) == NULL)
                    return -1;
                int s = sym_source(t, DH_S_ATTR, o->src, 2, name);
                return s < 0 ? -1 : sym_wrap(t, a, s, out);
            }
            if (Py_TYPE(descr)->tp_descr_set != NULL)
                return sym_fail(t, "property/descriptor %U on %s not supported", name,
                                Py_TYPE(o->obj)->tp_name);
            if (PyFunction_Check(descr) && !dh_module_has_attr(o->obj, name)) {
                /* a method: inlined when called, its function reached through the class */
                int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
                if (s < 0 || guard_unshadowed(t, o, name) < 0)
                    return -1;
                return sym_method(t, o, descr, s, out);
            }
        }
        PyObject *a = dh_module_getattr(o->obj, name);
        if (a == NULL && descr != NULL && o->src >= 0 && Py_IS_TYPE(descr, &PyStaticMethod_Type)) {
            /* self.f of a staticmethod: the plain function, reached through the class */
            int s;
            PyObject *fn = descr_func(t, descr, "staticmethod", name, &s);
            if (fn == NULL || guard_unshadowed(t, o, name) < 0)
                return -1;
            memset(out, 0, sizeof *out);
            out->kind = V_FUNC;
            out->src = s;
            out->op = SYM_USER_FUNCTION;
            out->obj = fn;
            return 0;
        }
        if (a == NULL && descr != NULL && o->src >= 0 && Py_TYPE(descr)->tp_descr_get == NULL) {
            /* a plain class attribute (a constant on the class) */
            int s = sym_source(t, DH_S_ATTR, o->src, 1, name);
            return s < 0 || guard_unshadowed(t, o, name) < 0 ? -1 : sym_wrap(t, descr, s, out);
        }
        if (a == NULL && descr != NULL && o->src >= 0 && Py_IS_TYPE(descr, &PyClassMethod_Type)) {
            /* self.f of a classmethod: its function bound to the object's class */
            int s;
            PyObject *fn = descr_func(t, descr, "classmethod", name, &s);
            var cls;
            if (fn == NULL || guard_unshadowed(t, o, name) < 0 || sym_guard_type(t, o->src, o->obj) < 0 ||
                sym_wrap(t, (PyObject *)Py_TYPE(o->obj), -1, &cls) < 0)
                return -1;
            return sym_method(t, &cls, fn, s, out);
        }
        if (a == NULL) {
            if (descr != NULL)
                return sym_fail(t, "class attribute %U not supported", name);
            return sym_fail(t, "attribute %U not found", name);
        }
        int s = sym_source(t, DH_S_ATTR, o->src, 0, name);
        int rc = s < 0 ? -1 : sym_wrap(t, a, s, out);
        Py_DECREF(a);
        return rc;
    }
    case V_CONST: {
        /* attributes of constants: only plain data of immutable builtins */
        if (PyFloat_CheckExact(o->obj) || PyLong_CheckExact(o->obj)) {
            const char *n = PyUnicode_AsUTF8(name);
            if (!strcmp(n, "real") || !strcmp(n, "imag"))
                return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        }
        const char *n = PyUnicode_AsUTF8(name);
        if (sym_is_enum_member(o->obj) && (!strcmp(n, "name") || !strcmp(n, "value") ||
                                           !strcmp(n, "_name_") || !strcmp(n, "_value_")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? (tc_clear_expected(PyExc_AttributeError) < 0 ? -1
                                                                      : sym_fail(t, "attribute %U of an enum member", name))
                       : 0;
        if (sym_set_is_mutable(o) && (!strcmp(n, "add") || !strcmp(n, "discard") || !strcmp(n, "remove") ||
                                      !strcmp(n, "clear") || !strcmp(n, "copy") || !strcmp(n, "pop") ||
                                      !strcmp(n, "update") || !strcmp(n, "difference_update") ||
                                      !strcmp(n, "intersection_update") ||
                                      !strcmp(n, "symmetric_difference_update"))) {
            return sym_method(t, o, name, -1, out); /* a set made in the trace: sym_set_method */
        }
        if ((PyUnicode_CheckExact(o->obj) || PyTuple_CheckExact(o->obj) || PyFrozenSet_CheckExact(o->obj)) &&
            n[0] == '_' && n[1] == '_' && !sym_set_is_mutable(o)) {
            /* "a".__add__, "%s".__mod__, (1, 2).__contains__: slot wrappers of immutable
             * builtins, pure, called on constants (ops_table.c) */
            PyObject *m = PyObject_GetAttr(o->obj, name);
            if (m == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "attribute %U of a constant not found", name);
            }
            if (strcmp(Py_TYPE(m)->tp_name, "method-wrapper") != 0 && !PyCFunction_Check(m)) {
                Py_DECREF(m);
                return sym_fail(t, "attribute %U of %s constant not supported", name, Py_TYPE(o->obj)->tp_name);
            }
            return sym_const(t, m, out);
        }
        if ((PyUnicode_CheckExact(o->obj) || PyTuple_CheckExact(o->obj) || PyAnySet_CheckExact(o->obj) ||
             !strcmp(Py_TYPE(o->obj)->tp_name, "torch.Size") || !strcmp(Py_TYPE(o->obj)->tp_name, "re.Match") ||
             !strcmp(Py_TYPE(o->obj)->tp_name, "re.Pattern")) &&
            n[0] != '_') { /* torch.Size: an immutable tuple (numel, count, index); a regex
                            * and its match: group/span/match/sub/... are pure */
            /* methods of immutable builtins are pure: called on constants */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "attribute %U of a constant", name)) : 0;
        }
        if ((!strcmp(Py_TYPE(o->obj)->tp_name, "types.UnionType") || Py_IS_TYPE(o->obj, &Py_GenericAliasType)) &&
            (!strcmp(n, "__args__") || !strcmp(n, "__origin__") || !strcmp(n, "__parameters__")))
            /* int | None, list[int]: immutable type expressions (typing.get_args/get_origin) */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "attribute %U of a constant", name)) : 0;
        if (strcmp(Py_TYPE(o->obj)->tp_name, "torch.device") == 0 &&
            (!strcmp(n, "type") || !strcmp(n, "index")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        if (PyType_Check(o->obj) && fn_const_attr(n)) /* a class's names */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        if ((!strcmp(Py_TYPE(o->obj)->tp_name, "torch.finfo") || !strcmp(Py_TYPE(o->obj)->tp_name, "torch.iinfo")) &&
            n[0] != '_') /* immutable facts of a dtype */
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "attribute %U of %s", name, Py_TYPE(o->obj)->tp_name)) : 0;
        if (strcmp(Py_TYPE(o->obj)->tp_name, "torch.dtype") == 0 &&
            (!strcmp(n, "is_floating_point") || !strcmp(n, "itemsize") || !strcmp(n, "is_complex")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out);
        if (PyType_Check(o->obj)) {
            int rc = type_attr(t, o->obj, o->src, name, out);
            if (rc <= 0)
                return rc;
        }
        if (PyCode_Check(o->obj) && (!strcmp(n, "co_varnames") || !strcmp(n, "co_argcount") ||
                                     !strcmp(n, "co_name") || !strcmp(n, "co_kwonlyargcount") ||
                                     !strcmp(n, "co_posonlyargcount") || !strcmp(n, "co_flags") ||
                                     !strcmp(n, "co_qualname") || !strcmp(n, "co_filename")))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out); /* code is immutable */
        if (!strcmp(Py_TYPE(o->obj)->tp_name, "Signature") && !strcmp(n, "parameters"))
            return sym_const(t, PyObject_GetAttr(o->obj, name), out) < 0
                       ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "attribute %U of a constant", name)) : 0;
        if (PyExceptionInstance_Check(o->obj)) { /* a raise the trace caught (sym_exc.c) */
            int rc = sym_exc_attr(t, o->obj, name, out);
            if (rc <= 0)
                return rc;
        }
        if (o->obj == Py_None && !PyObject_HasAttr(Py_None, name)) { /* None.shape: eager raises */
            PyObject *msg = PyUnicode_FromFormat("'NoneType' object has no attribute '%U'", name);
            if (msg == NULL || sym_keep(t, msg) == NULL)
                return -1;
            return sym_raise(t, PyExc_AttributeError, msg, "%U (eager will raise)", msg);
        }
        return sym_fail(t, "attribute %U of %s constant not supported", name, Py_TYPE(o->obj)->tp_name);
    }
    case V_SUPER: {
        /* super().name: look past the class in the MRO of self's class (of self, where self is
         * a class: a classmethod's cls); methods are inlined, bound as eager binds them */
        if (o->items[0].kind == V_REC) { /* records.c: dict's own methods on its non-None fields */
            PyObject *mro = ((PyTypeObject *)sym_record_class(&o->items[0]))->tp_mro, *found = NULL;
            Py_ssize_t i = 0, nm = mro ? PyTuple_GET_SIZE(mro) : 0;
            while (i < nm && PyTuple_GET_ITEM(mro, i) != o->obj)
                i++;
            for (i++; i < nm && found == NULL; i++)
                found = PyDict_GetItemWithError(dh_type_dict((PyTypeObject *)PyTuple_GET_ITEM(mro, i)), name);
            if (found == NULL && PyErr_Occurred())
                return -1;
            const char *n = PyUnicode_AsUTF8(name);
            var *d = sym_alloc(t, 1);
            if (found == NULL || found != _PyType_Lookup(&PyDict_Type, name) || n == NULL ||
                (strcmp(n, "__contains__") && strcmp(n, "get")))
                return sym_fail(t, "super().%U of a %s", name, ((PyTypeObject *)sym_record_class(&o->items[0]))->tp_name);
            if (d == NULL || sym_record_as_dict(t, &o->items[0], d) < 0)
                return -1;
            return sym_method(t, d, name, -1, out);
        }
        int drc = sym_dsub_super_attr(t, o->obj, &o->items[0], name, out); /* obj_dict.c */
        if (drc != 1)
            return drc;
        PyObject *so = o->items[0].obj;
        int on_class = so != NULL && PyType_Check(so) && PyType_Check(o->obj) &&
                       PyType_IsSubtype((PyTypeObject *)so, (PyTypeObject *)o->obj);
        PyObject *found = NULL;
        if (PyType_Check(o->obj) && so != NULL) {
            /* the class after o->obj in the MRO defining name */
            PyObject *mro = on_class ? ((PyTypeObject *)so)->tp_mro : Py_TYPE(so)->tp_mro;
            Py_ssize_t i = 0, nm = mro ? PyTuple_GET_SIZE(mro) : 0;
            while (i < nm && PyTuple_GET_ITEM(mro, i) != o->obj)
                i++;
            Py_ssize_t first = i + 1;
            for (i++; i < nm && found == NULL; i++)
                found = PyDict_GetItemWithError(dh_type_dict((PyTypeObject *)PyTuple_GET_ITEM(mro, i)), name);
            if (found == NULL && PyErr_Occurred())
                return -1;
            /* what the lookup went through holds while the classes stay (B.g = h after a call:
             * the next one's super().g is h) */
            if (found != NULL && guard_super_lookup(t, mro, first, i, name) < 0)
                return -1;
            /* object's own slot (super().__init__() / __setattr__ / __delattr__ of a plain
             * class: obj_attrs.c) */
            if (!on_class && found != NULL && sym_obj_slot_attr(t, found, &o->items[0], out) == 0)
                return 0;
            if (!on_class && found != NULL && sym_is_property(found)) {
                /* super().prop: the base's getter inlined on self (not run at trace time) */
                PyObject *fget = PyObject_GetAttrString(found, "fget");
                if (fget == NULL)
                    (void)tc_clear_expected(PyExc_AttributeError);
                if (fget == NULL || !PyFunction_Check(fget)) {
                    Py_XDECREF(fget);
                    return sym_fail(t, "super().%U: a property without a Python getter", name);
                }
                PyObject *fn = sym_keep(t, fget);
                int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
                return s < 0 ? -1 : sym_inline(t, fn, s, &o->items[0], NULL, 0, NULL, out);
            }
            if (found != NULL && Py_TYPE(found)->tp_descr_get != NULL && !PyFunction_Check(found) &&
                !Py_IS_TYPE(found, &PyClassMethod_Type) && !Py_IS_TYPE(found, &PyStaticMethod_Type) &&
                !PyObject_TypeCheck(found, &PyMethodDescr_Type) && !PyObject_TypeCheck(found, &PyClassMethodDescr_Type) &&
                !PyObject_TypeCheck(found, &PyWrapperDescr_Type))
                /* a descriptor whose __get__ would run now, at trace time */
                return sym_fail(t, "super().%U: descriptor %s not supported", name, Py_TYPE(found)->tp_name);
        }
        PyObject *sup = PyObject_CallFunctionObjArgs((PyObject *)&PySuper_Type, o->obj, so, NULL);
        if (sup == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "super() failed");
        }
        PyObject *a = PyObject_GetAttr(sup, name);
        Py_DECREF(sup);
        if (a == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "super().%U not found", name);
        }
        if (PyCFunction_Check(a) && PyCFunction_GET_SELF(a) == so &&
            o->items[0].kind == V_OBJ && o->items[0].src >= 0 && PyDict_Check(so)) {
            /* dict.get / __getitem__ / __contains__ of a dict subclass (a registry) */
            PyObject *d = _PyType_Lookup(&PyDict_Type, name);
            const char *n = PyUnicode_AsUTF8(name);
            int ok = d != NULL && Py_IS_TYPE(d, &PyMethodDescr_Type) &&
                     ((PyCFunctionObject *)a)->m_ml == ((PyMethodDescrObject *)d)->d_method &&
                     (!strcmp(n, "get") || !strcmp(n, "__getitem__") || !strcmp(n, "__contains__"));
            Py_DECREF(a);
            if (!ok)
                return sym_fail(t, "super().%U is not a Python method", name);
            return sym_method(t, &o->items[0], name, -1, out);
        }
        if (on_class && PyMethod_Check(a) && PyMethod_GET_SELF(a) == so && tc_is_autograd_function(so)) {
            /* super().apply in a Function's classmethod apply: Function.apply bound to cls,
             * captured or a break at its call (sym_call), as Fn.apply */
            int base = dh_autograd_is_base_apply(PyMethod_GET_FUNCTION(a));
            if (base < 0) {
                Py_DECREF(a);
                return -1;
            }
            if (base)
                return sym_const(t, a, out);
        }
        if (PyMethod_Check(a) && PyFunction_Check(PyMethod_GET_FUNCTION(a))) {
            PyObject *bself = PyMethod_GET_SELF(a);
            var selfv;
            if (bself == so) {
                selfv = o->items[0]; /* a method on self, a classmethod on cls */
            } else if (!on_class && bself == (PyObject *)Py_TYPE(so)) {
                /* a classmethod through super() in an instance method: bound to self's class */
                if ((o->items[0].src >= 0 && sym_guard_type(t, o->items[0].src, so) < 0) ||
                    sym_wrap(t, bself, -1, &selfv) < 0) {
                    Py_DECREF(a);
                    return -1;
                }
            } else {
                Py_DECREF(a);
                return sym_fail(t, "super().%U bound to another object", name);
            }
            PyObject *fn = sym_keep(t, Py_NewRef(PyMethod_GET_FUNCTION(a)));
            Py_DECREF(a);
            /* the function as it is now (a source: its globals, in another module, are
             * read through it) */
            int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
            if (fn == NULL || s < 0)
                return -1;
            return sym_method(t, &selfv, fn, s, out);
        }
        if (PyFunction_Check(a)) {
            /* a staticmethod (or, on a class, a plain function): unbound */
            PyObject *fn = sym_keep(t, a);
            int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
            if (s < 0)
                return -1;
            *out = sym_var(V_FUNC);
            out->src = s;
            out->op = SYM_USER_FUNCTION;
            out->obj = fn;
            return 0;
        }
        Py_DECREF(a);
        return sym_fail(t, "super().%U is not a Python method", name);
    }
    case V_DICT: {
        const char *n = PyUnicode_AsUTF8(name);
        if (strcmp(n, "items") && strcmp(n, "keys") && strcmp(n, "values") && strcmp(n, "get") &&
            strcmp(n, "pop") && strcmp(n, "setdefault") && strcmp(n, "copy") && strcmp(n, "update") &&
            strcmp(n, "__contains__") &&
            !(o->op == SYM_DICT_COUNTER && (!strcmp(n, "most_common") || !strcmp(n, "elements") ||
                                            !strcmp(n, "total") || !strcmp(n, "subtract")))) /* obj_data.c */
            return sym_fail(t, "dict.%U not supported", name);
        return sym_method(t, o, name, -1, out);
    }
    case V_REC:
        return sym_record_attr(t, o, name, out);
    case V_FUNC: {
        const char *n = PyUnicode_AsUTF8(name);
        if (o->obj && PyType_Check(o->obj) && o->op < 0) {
            int prc = sym_obj_polyfill_attr(t, o->obj, name, out); /* itertools.chain.from_iterable */
            if (prc <= 0)
                return prc;
            int rc = type_attr(t, o->obj, o->src, name, out);
            if (rc <= 0)
                return rc;
        }
        if (fn_const_attr(n) && o->obj && o->op != SYM_MADE_FUNCTION) {
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "attribute %U not found", name);
            }
            return sym_const(t, a, out);
        }
        if (!strcmp(n, "__class__") && o->obj) /* type(f): a constant */
            return sym_const(t, Py_NewRef((PyObject *)Py_TYPE(o->obj)), out);
        if (o->op == SYM_CUSTOM_OP && o->obj) { /* packet.overload (ops_custom.c): an op of the guarded op */
            PyObject *a = PyObject_GetAttr(o->obj, name);
            if (a == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "attribute %U of a custom op not found", name);
            }
            int rc = sym_is_custom_op(a) ? sym_wrap(t, a, -1, out)
                                         : sym_fail(t, "attribute %U of a custom op (only its overloads)", name);
            Py_DECREF(a);
            return rc;
        }
        if (!strcmp(n, "__code__") && o->obj && o->op == SYM_USER_FUNCTION && o->src >= 0 &&
            PyFunction_Check(o->obj)) /* the function is identity-guarded: its code, as it is now */
            return sym_const(t, Py_NewRef(PyFunction_GET_CODE(o->obj)), out);
        if (o->obj && PyType_Check(o->obj) && sym_tfm_method(name) != NULL &&
            _PyType_Lookup((PyTypeObject *)o->obj, name) == sym_tfm_method(name) &&
            PyType_IsSubtype((PyTypeObject *)o->obj, Py_TYPE(sym_tfm_method(name)) == &PyGetSetDescr_Type
                                                              ? PyDescr_TYPE(sym_tfm_method(name))
                                                              : (PyTypeObject *)o->obj)) {
            /* torch.Tensor.add, torch.Tensor.__getitem__, torch.Tensor.shape: torch's own
             * descriptors, as the functions a TorchFunctionMode compares func with (sym_tfm.c) */
            PyObject *d = sym_tfm_method(name);
            if (Py_TYPE(d) == &PyMethodDescr_Type || Py_TYPE(d) == &PyWrapperDescr_Type ||
                Py_TYPE(d) == &PyGetSetDescr_Type)
                return sym_const(t, Py_NewRef(d), out);
        }
        return sym_fail(t, "attribute %U of a function", name);
    }
    case V_METHOD: {
        /* m.__func__ / m.__self__ of a bound Python method */
        const char *n = PyUnicode_AsUTF8(name);
        if (n && !strcmp(n, "__self__") && o->items) {
            *out = o->items[0];
            return 0;
        }
        if (n && !strcmp(n, "__func__") && o->obj && PyFunction_Check(o->obj)) {
            memset(out, 0, sizeof *out);
            out->kind = V_FUNC;
            out->src = o->src; /* the function reached through the class (when known) */
            out->op = SYM_USER_FUNCTION;
            out->obj = o->obj;
            return 0;
        }
        return sym_fail(t, "attribute %U of a bound method", name);
    }
    default:
        return sym_fail(t, "attribute %U of an unsupported value", name);
    }
}

/* LOAD_GLOBAL */
int sym_op_load_global(trace *t, sframe *f, sym_ins *in) {
    var a;
    PyObject *name = PyTuple_GET_ITEM(in->names, in->oparg >> 1);
    if (in->oparg & 1)
        PUSH(sym_null_var());
    if (!f->top && f->func_src < 0 && f->globals != t->globals)
        return sym_fail(t, "global %U of a function reached without a source", name);
    if (t->nattrw > 0 && sym_fx_global_read(t, f->globals, name, &a)) { /* STORE_GLOBAL'd */
        PUSH(a);
        return SYM_NEXT;
    }
    int s = sym_source(t, DH_S_GLOBAL, f->top ? -1 : f->func_src, 0, name);
    if (s < 0)
        return -1;
    PyObject *o = PyDict_GetItemWithError(f->globals, name);
    if (o == NULL && !PyErr_Occurred())
        o = PyDict_GetItemWithError(t->builtins, name);
    if (o == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "global %U not found (eager will raise)", name);
    }
    if (sym_wrap(t, o, s, &a) < 0)
        return -1;
    PUSH(a);
    return SYM_NEXT;
}

/* STORE_GLOBAL (sideeffects.c) */
int sym_op_store_global(trace *t, sframe *f, sym_ins *in) {
    NEED(1);
    var v = POP();
    if (sym_fx_store_global(t, f->globals, f->func_src, f->top, PyTuple_GET_ITEM(in->names, in->oparg), &v) < 0)
        return -1;
    if (v.kind == V_CONST && v.dyn) /* written back from the graph (sym_output.c) */
        t->dyn_inst = t->cur_inst;
    return SYM_NEXT;
}

/* DELETE_GLOBAL: `del g` after `global g`, logged as a write of the deletion marker to the
 * globals dict (sideeffects.c), replayed after the graph in program order. Eager raises
 * NameError where the name is unbound: the name's presence in the dict is guarded, a name
 * already deleted in the trace fails it (eager raises). */
int sym_op_delete_global(trace *t, sframe *f, sym_ins *in) {
    PyObject *name = PyTuple_GET_ITEM(in->names, in->oparg);
    if (!f->top && f->func_src < 0 && f->globals != t->globals)
        return sym_fail(t, "global %U of a function reached without a source", name);
    var cur;
    int logged = t->nattrw > 0 ? sym_fx_global_read(t, f->globals, name, &cur) : 0;
    if (logged < 0)
        return -1;
    if (!logged) {
        int ds = sym_source(t, DH_S_GLOBAL, f->top ? -1 : f->func_src, 1, name);
        if (ds < 0)
            return -1;
        int has = sym_guard_key(t, ds, f->globals, name);
        if (has < 0)
            return -1;
        if (!has)
            return sym_raise(t, PyExc_NameError, NULL, "del of an unbound global %U (eager will raise)", name);
    }
    var d = sym_var(V_CONST);
    d.obj = sym_attr_deleted_marker();
    if (d.obj == NULL)
        return -1;
    return sym_fx_store_global(t, f->globals, f->func_src, f->top, name, &d) < 0 ? -1 : SYM_NEXT;
}

/* LOAD_ATTR LOAD_METHOD */
int sym_op_load_attr(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(1);
    int method = in->op == OP_LOAD_METHOD || (DH_PY312 && (in->oparg & 1));
    PyObject *name = PyTuple_GET_ITEM(in->names, DH_PY312 && in->op == OP_LOAD_ATTR ? in->oparg >> 1 : in->oparg);
    a = POP();
    if (sym_load_attr(t, &a, name, &b) < 0)
        return -1;
    if (method)
        PUSH(sym_null_var());
    PUSH(b);
    return SYM_NEXT;
}

/* STORE_ATTR a.name = b run eagerly between two graphs (a graph break at the store) */
static int setattr_break(trace *t, sframe *f, sym_ins *in, const var *a, const var *b, PyObject *name) {
    var *ops = sym_alloc(t, 2);
    if (ops == NULL)
        return -1;
    ops[0] = *a;
    ops[1] = *b;
    t->brk.kind = DH_BRK_SETATTR;
    t->brk.pc_next = in->next;
    t->brk.fn = &ops[0];
    t->brk.args = &ops[1];
    t->brk.nargs = 1;
    t->brk.kwnames = name; /* kept by co_names; the entry takes a reference */
    return sym_record_break_state(t, f);
}

/* STORE_ATTR */
int sym_op_store_attr(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(2);
    a = POP(); /* the object */
    b = POP(); /* the value */
    PyObject *name = PyTuple_GET_ITEM(in->names, in->oparg);
    if (a.kind == V_REC) { /* a ModelOutput made in the trace (records.c) */
        if (t->in_gen)
            return sym_fail(t, "attribute assignment inside a generator");
        return sym_record_setattr(t, &a, name, &b) < 0 ? -1 : SYM_NEXT;
    }
    if (a.kind == V_TENSOR) { /* p.grad = None, x.requires_grad = b (train_step.c) */
        if (sym_tensor_setattr(t, &a, name, &b) == 0)
            return SYM_NEXT;
        /* any other store on a tensor: run it eagerly between two graphs */
        if (f->top && t->failed && !PyErr_Occurred() && sym_can_break(t)) {
            return setattr_break(t, f, in, &a, &b, name);
        }
        return -1;
    }
    /* obj_attrs.c: a Python __setattr__ inlined, else logged; in the top frame a store
     * whose __setattr__ can't be traced runs eagerly between two graphs */
    sym_fx_mark mark = {0};
    int can_break = f->top && a.kind == V_OBJ && a.src >= 0 && sym_can_break(t);
    if (can_break && sym_fx_save(t, &mark) < 0)
        return -1;
    if (sym_obj_setattr(t, &a, name, &b) == 0) {
        sym_fx_drop(&mark);
        if (b.kind == V_CONST && b.dyn) /* written back from the graph (sym_output.c) */
            t->dyn_inst = t->cur_inst;
        return SYM_NEXT;
    }
    if (can_break && t->failed && !PyErr_Occurred() && t->pending_exc == NULL) {
        sym_fx_rollback(t, &mark);
        return setattr_break(t, f, in, &a, &b, name);
    }
    sym_fx_drop(&mark);
    return -1;
}

/* the absolute name of `from .<level dots>name import ...` in a frame with these globals
 * (importlib's _calc___package__ and _resolve_name); new ref, NULL: t failed */
static PyObject *relative_name(trace *t, PyObject *globals, PyObject *name, long level) {
    PyObject *pkg = globals ? PyDict_GetItemString(globals, "__package__") : NULL;
    PyObject *owned = NULL;
    if (pkg == NULL || !PyUnicode_Check(pkg)) {
        PyObject *mn = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
        if (mn == NULL || !PyUnicode_Check(mn))
            return sym_fail(t, "relative import in a frame without __package__/__name__"), NULL;
        if (PyDict_GetItemString(globals, "__path__") != NULL) {
            pkg = mn;
        } else {
            Py_ssize_t dot = PyUnicode_FindChar(mn, '.', 0, PyUnicode_GET_LENGTH(mn), -1);
            if (dot < 0)
                return sym_fail(t, "relative import outside a package (eager raises)"), NULL;
            pkg = owned = PyUnicode_Substring(mn, 0, dot);
            if (pkg == NULL)
                return NULL;
        }
    }
    PyObject *base = Py_NewRef(pkg);
    for (long i = 1; base && i < level; i++) { /* drop level - 1 trailing components */
        Py_ssize_t dot = PyUnicode_FindChar(base, '.', 0, PyUnicode_GET_LENGTH(base), -1);
        if (dot < 0) {
            Py_CLEAR(base);
            sym_fail(t, "relative import beyond the top-level package (eager raises)");
            break;
        }
        PyObject *b = PyUnicode_Substring(base, 0, dot);
        Py_SETREF(base, b);
    }
    Py_XDECREF(owned);
    if (base == NULL || PyUnicode_GET_LENGTH(base) == 0) {
        if (base != NULL)
            sym_fail(t, "relative import outside a package (eager raises)");
        Py_XDECREF(base);
        return NULL;
    }
    if (PyUnicode_GET_LENGTH(name) == 0)
        return base;
    PyObject *r = PyUnicode_FromFormat("%U.%U", base, name);
    Py_DECREF(base);
    return r;
}

/* sys.modules[name] (m) as a source, its identity guarded */
static int module_source(trace *t, PyObject *mods, PyObject *name, PyObject *m) {
    int s0 = sym_source(t, DH_S_CONST, -1, 0, mods);
    int s1 = s0 >= 0 ? sym_source(t, DH_S_ITEM, s0, -1, name) : -1;
    if (s1 < 0 || sym_guard_id(t, s1, m) < 0)
        return -1;
    return s1;
}

/* A module not loaded yet (or a `from m import sub` whose submodule is not): imported now,
 * at capture, as Dynamo does, by the frame's __import__ with eager's arguments (the frames
 * it runs are not traced: the hook is busy). Eager runs this import at this point of the
 * frame; the compiled frame finds the module loaded (its sys.modules entry guarded). 0: done,
 * 1: the import raised (the trace failed with its reason: the frame runs eagerly, where it
 * raises again), -1: an error that must propagate (not an Exception). */
static int import_at_capture(trace *t, sframe *f, PyObject *name, const var *fromlist, long level) {
    PyObject *fl = fromlist->kind == V_CONST ? fromlist->obj : NULL;
    if (fl == NULL || !(fl == Py_None || PyTuple_Check(fl)))
        return sym_fail(t, "import of a module not loaded yet (a computed fromlist)"), 1;
    PyObject *b = f->globals ? PyDict_GetItemString(f->globals, "__builtins__") : NULL; /* the frame's builtins */
    if (b != NULL && PyModule_Check(b))
        b = PyModule_GetDict(b);
    PyObject *imp = PyDict_GetItemString(b != NULL && PyDict_Check(b) ? b : PyEval_GetBuiltins(), "__import__");
    if (imp == NULL)
        return sym_fail(t, "import of a module not loaded yet (no __import__)"), 1;
    PyObject *lv = PyLong_FromLong(level);
    PyObject *r = lv ? PyObject_CallFunctionObjArgs(imp, name, f->globals ? f->globals : Py_None, Py_None, fl, lv, NULL)
                     : NULL;
    Py_XDECREF(lv);
    if (r != NULL) {
        Py_DECREF(r);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    sym_fail(t, "import of a module not loaded yet raised %s at capture (eager raises it there too)",
             et ? ((PyTypeObject *)et)->tp_name : "an exception");
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    return 1;
}

/* a name of `from m import a, b` that m does not have yet (a submodule not imported):
 * 1; 0: none; -1: an error (a lookup raised) */
static int fromlist_missing(const var *fromlist, PyObject *m) {
    PyObject *fl = fromlist->kind == V_CONST ? fromlist->obj : NULL;
    if (fl == NULL || !PyTuple_Check(fl) || !PyModule_Check(m))
        return 0;
    PyObject *d = PyModule_GetDict(m);
    for (Py_ssize_t i = 0; d && i < PyTuple_GET_SIZE(fl); i++) {
        PyObject *nm = PyTuple_GET_ITEM(fl, i);
        if (PyUnicode_Check(nm) && PyUnicode_CompareWithASCIIString(nm, "*") && PyDict_GetItemWithError(d, nm) == NULL)
            return PyErr_Occurred() ? -1 : 1;
    }
    return 0;
}

/* IMPORT_NAME */
int sym_op_import_name(trace *t, sframe *f, sym_ins *in) {
    var a;
    /* import of a module that is already loaded: a constant module (a relative import:
     * resolved against the frame's package as eager does), its sys.modules entry guarded */
    NEED(2);
    var fromlist = POP(), lv = POP();
    PyObject *name = PyTuple_GET_ITEM(in->names, in->oparg);
    long level = lv.kind == V_CONST && PyLong_CheckExact(lv.obj) ? PyLong_AsLong(lv.obj) : -1;
    if (level < 0) {
        (void)tc_clear_expected(PyExc_OverflowError);
        return sym_fail(t, "import with an unknown level");
    }
    PyObject *mods = PyImport_GetModuleDict();
    if (level > 0) {
        PyObject *abs = relative_name(t, f->globals, name, level);
        if (abs == NULL)
            return -1; /* t failed, or no memory */
        PyObject *m = PyDict_GetItemWithError(mods, abs);
        int miss = m != NULL ? fromlist_missing(&fromlist, m) : 0;
        if (miss < 0) {
            Py_DECREF(abs);
            return -1;
        }
        if ((m == NULL && !PyErr_Occurred()) || miss) {
            int r = import_at_capture(t, f, name, &fromlist, level);
            if (r != 0) {
                Py_DECREF(abs);
                return -1; /* failed (the reason set) or an error */
            }
            m = PyDict_GetItemWithError(mods, abs);
        }
        if (m == Py_None) { /* sys.modules[name] = None: eager's import raises ImportError */
            Py_DECREF(abs);
            return sym_fail(t, "import of a module blocked by a None in sys.modules");
        }
        int s1 = m ? module_source(t, mods, abs, m) : -1;
        Py_DECREF(abs);
        if (m == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "import of a module not loaded yet");
        }
        if (s1 < 0)
            return -1;
        (void)fromlist; /* `from . import x` / `from .a import x`: the module itself */
        a = sym_var(V_OBJ);
        a.src = s1; /* what is read from it: guarded attributes */
        a.obj = sym_keep(t, Py_NewRef(m));
        if (a.obj == NULL)
            return -1;
        PUSH(a);
        return SYM_NEXT;
    }
    PyObject *m = PyDict_GetItemWithError(mods, name);
    int miss = m != NULL ? fromlist_missing(&fromlist, m) : 0;
    if (miss < 0)
        return -1;
    if ((m == NULL && !PyErr_Occurred()) || miss) {
        if (import_at_capture(t, f, name, &fromlist, level) != 0)
            return -1; /* failed (the reason set) or an error */
        m = PyDict_GetItemWithError(mods, name);
    }
    if (m == Py_None) /* sys.modules[name] = None: eager's import raises ImportError */
        return sym_fail(t, "import of a module blocked by a None in sys.modules");
    if (m == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "import of a module not loaded yet");
    }
    /* as eager's __import__: "import a.b" (no fromlist) pushes a, whose IMPORT_FROMs of
     * "import a.b.c as d" read b from a, then c from a.b; "from a.b import c" pushes a.b */
    PyObject *top = m;
    int tsrc = -1;
    Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, PyUnicode_GET_LENGTH(name), 1);
    if (fromlist.kind == V_CONST && PyTuple_Check(fromlist.obj) && PyTuple_GET_SIZE(fromlist.obj) > 0)
        dot = -1; /* a fromlist: the module itself */
    if (dot > 0) {
        PyObject *first = PyUnicode_Substring(name, 0, dot);
        top = first ? PyDict_GetItemWithError(mods, first) : NULL;
        tsrc = top ? module_source(t, mods, first, top) : -1;
        Py_XDECREF(first);
        if (top == NULL || top == Py_None) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "import of a module not loaded yet");
        }
    } else {
        tsrc = module_source(t, mods, name, m);
    }
    if (tsrc < 0)
        return -1;
    a = sym_var(V_OBJ);
    a.src = tsrc; /* what is read from it: guarded attributes */
    a.obj = sym_keep(t, Py_NewRef(top));
    a.items = NULL;
    a.n = 0;
    a.pos = 0;
    if (a.obj == NULL)
        return -1;
    PUSH(a);
    return SYM_NEXT;
}

/* IMPORT_FROM */
int sym_op_import_from(trace *t, sframe *f, sym_ins *in) {
    var b;
    NEED(1);
    var *mod = &PEEK(1);
    var base = *mod;
    if (base.kind != V_OBJ || !PyModule_Check(base.obj))
        return sym_fail(t, "IMPORT_FROM of a non-module");
    if (sym_load_attr(t, &base, PyTuple_GET_ITEM(in->names, in->oparg), &b) < 0)
        return -1;
    PUSH(b);
    return SYM_NEXT;
}

/* super(cls, self)'s second argument as eager takes it: an instance of cls (a tracked
 * object), or a subclass of cls (a classmethod's cls); 0: neither (a fallback) */
int sym_super_self(const var *self, PyObject *cls) {
    int r = 0;
    if (self->obj == NULL || !PyType_Check(cls))
        return 0;
    if (self->kind == V_REC) /* a ModelOutput made in the trace (records.c) */
        r = PyType_IsSubtype((PyTypeObject *)sym_record_class(self), (PyTypeObject *)cls);
    else if (self->kind == V_OBJ && !PyType_Check(self->obj))
        r = PyObject_IsInstance(self->obj, cls);
    else if ((self->kind == V_OBJ || self->kind == V_CONST || self->kind == V_FUNC) && PyType_Check(self->obj))
        r = PyType_IsSubtype((PyTypeObject *)self->obj, (PyTypeObject *)cls);
    if (r < 0)
        (void)tc_clear_expected(PyExc_Exception);
    return r == 1;
}

/* LOAD_SUPER_ATTR */
/* 3.12: [super, class, self] -> attribute of super(class, self) */
int sym_op_load_super_attr(trace *t, sframe *f, sym_ins *in) {
    var a, b;
    NEED(3);
    var self0 = POP(), cls = POP();
    (void)POP();
    if (cls.obj == NULL || !PyType_Check(cls.obj) || !sym_super_self(&self0, cls.obj))
        return sym_fail(t, "super() outside a module method");
    var *sv = sym_alloc(t, 1);
    if (sv == NULL)
        return -1;
    sv[0] = self0;
    a = sym_var(V_SUPER);
    a.obj = cls.obj;
    a.items = sv;
    if (sym_load_attr(t, &a, PyTuple_GET_ITEM(in->names, in->oparg >> 2), &b) < 0)
        return -1;
    if (in->oparg & 1)
        PUSH(sym_null_var());
    PUSH(b);
    return SYM_NEXT;
}
