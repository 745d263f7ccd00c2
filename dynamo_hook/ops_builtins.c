/* ops_builtins.c — calls of Python builtins and torch utilities that are not graph ops
 * (isinstance, len, getattr, torch._C queries, torch.finfo, ...), answered at trace time.
 */
#include "ops_internal.h"
#include "sym_sem.h"

/* 1 when the classes after super()'s class in the MRO of its object's class (of the object
 * itself, when that is a class) define name, or type does for a class; 0 otherwise */
static int super_has(const var *sup, PyObject *name) {
    PyObject *so = sup->items ? sup->items[0].obj : NULL;
    if (so == NULL || sup->obj == NULL || !PyType_Check(sup->obj))
        return 0;
    int on_class = PyType_Check(so) && PyType_IsSubtype((PyTypeObject *)so, (PyTypeObject *)sup->obj);
    PyObject *mro = on_class ? ((PyTypeObject *)so)->tp_mro : Py_TYPE(so)->tp_mro;
    Py_ssize_t i = 0, nm = mro ? PyTuple_GET_SIZE(mro) : 0;
    while (i < nm && PyTuple_GET_ITEM(mro, i) != sup->obj)
        i++;
    for (i++; i < nm; i++) {
        PyObject *d = dh_type_dict((PyTypeObject *)PyTuple_GET_ITEM(mro, i));
        if (d != NULL && PyDict_Check(d) && PyDict_GetItemWithError(d, name) != NULL)
            return 1;
        if (PyErr_Occurred())
            (void)tc_clear_expected(PyExc_Exception);
    }
    return on_class && _PyType_Lookup(&PyType_Type, name) != NULL;
}

/* 1 when o (a value whose attribute read failed in the trace) has name all the same, found
 * without running code: in its class (through the MRO), or its instance dict; a graph tensor
 * by torch.Tensor's. 0: not found (or not known: a plain object's absence is guarded by the
 * caller). A failed read is an absent attribute only when this says 0. */
static int really_has(trace *t, const var *o, PyObject *name) {
    static PyObject *tensor_cls;
    if (o->kind == V_SUPER)
        return super_has(o, name);
    PyObject *obj = o->obj;
    if (o->kind == V_TENSOR) {
        obj = o->src >= 0 && o->src < t->capsrc && t->srcdone[o->src] ? t->srcobj[o->src] : NULL;
        if (obj == NULL) {
            if (tensor_cls == NULL) {
                PyObject *torch = PyImport_ImportModule("torch");
                tensor_cls = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL; /* kept */
                Py_XDECREF(torch);
                if (tensor_cls == NULL || !PyType_Check(tensor_cls)) {
                    Py_CLEAR(tensor_cls);
                    (void)tc_clear_expected(PyExc_Exception);
                    return 0;
                }
            }
            return _PyType_Lookup((PyTypeObject *)tensor_cls, name) != NULL;
        }
    }
    if (obj == NULL || o->kind == V_OBJ)
        return 0;
    if (PyType_Check(obj) && _PyType_Lookup((PyTypeObject *)obj, name) != NULL)
        return 1;
    if (_PyType_Lookup(Py_TYPE(obj), name) != NULL)
        return 1;
    PyObject **dp = PyType_Check(obj) ? NULL : _PyObject_GetDictPtr(obj);
    if (dp != NULL && *dp != NULL && PyDict_Check(*dp)) {
        int in = PyDict_Contains(*dp, name);
        if (in < 0)
            (void)tc_clear_expected(PyExc_Exception);
        return in == 1;
    }
    return 0;
}

/* the result r of has_torch_function (a new reference, NULL: it raised): False, or the reason
 * why the call is not traced */
static int tf_result(trace *t, PyObject *r, var *out) {
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "has_torch_function raised");
    }
    if (r != Py_False) {
        Py_DECREF(r);
        return sym_fail(t, "__torch_function__ override or mode active");
    }
    return sym_const(t, r, out);
}

/* has_torch_function(args): asked with the real objects, a plain-tensor probe standing for
 * each traced tensor; True (a torch function mode, an object overriding it) stops here. */
static int torch_function_query(trace *t, PyObject *f, int which, const var *args, int nargs,
                                var *out) {
    const var *items = args;
    int n = nargs;
    if (which == 0) { /* _has_torch_function(iterable) */
        if (nargs == 1 && args[0].kind == V_CONST && PyTuple_CheckExact(args[0].obj)) {
            PyObject *r = PyObject_CallOneArg(f, args[0].obj); /* plain Python values */
            return tf_result(t, r, out);
        }
        if (nargs != 1 || args[0].kind != V_SEQ)
            return sym_fail(t, "has_torch_function of an unsupported value");
        items = args[0].items;
        n = args[0].n;
    }
    PyObject *tup = PyTuple_New(n), *r = NULL;
    if (tup == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        /* a plain list or tuple (torch.atleast_2d((a, b)): *tensors holds one tuple) has no
         * __torch_function__ of its own, the check looks no deeper: an empty tuple stands in */
        PyObject *o = items[i].kind == V_TENSOR ? sym_refs.tf_probe
                      : items[i].kind == V_CONST || items[i].kind == V_OBJ ? items[i].obj
                      : items[i].kind == V_SEQ && items[i].obj == NULL ? sym_keep(t, PyTuple_New(0)) : NULL;
        if (o == NULL) {
            Py_DECREF(tup);
            return sym_fail(t, "has_torch_function of an unsupported value");
        }
        PyTuple_SET_ITEM(tup, i, Py_NewRef(o));
    }
    r = which == 0 ? PyObject_CallOneArg(f, tup) : PyObject_Call(f, tup, NULL);
    Py_DECREF(tup);
    return tf_result(t, r, out);
}

/* the second argument of isinstance/issubclass built in the trace (a V_SEQ) is a tuple, which
 * they take (a list or a deque of classes: eager raises TypeError) */
static int class_tuple(const var *v) {
    return v->kind == V_SEQ && !v->is_list && v->obj == NULL;
}

/* cls (a class or a tuple of them) names a concrete iterator class (map, zip, a generator's):
 * 1; only abstract ones (collections.abc.Iterator) or non-iterators: 0; -1 an error */
static int concrete_iterator_class(PyObject *cls) {
    static PyObject *abc_iter;
    if (abc_iter == NULL) {
        PyObject *abc = PyImport_ImportModule("collections.abc");
        abc_iter = abc ? PyObject_GetAttrString(abc, "Iterator") : NULL; /* kept */
        Py_XDECREF(abc);
        if (abc_iter == NULL)
            return -1;
    }
    if (PyTuple_Check(cls)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(cls); i++) {
            int r = concrete_iterator_class(PyTuple_GET_ITEM(cls, i));
            if (r != 0)
                return r;
        }
        return 0;
    }
    if (!PyType_Check(cls))
        return 1; /* eager raises: not answered here */
    int r = PyObject_IsSubclass(cls, abc_iter);
    if (r <= 0)
        return r < 0 ? (tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1) : 0;
    return !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_IS_ABSTRACT);
}

/* Generic callables: builtins and math on constants, isinstance, len. */
/* torch.IntTensor([...]) & co (the legacy CPU tensor types: torch.tensortype instances,
 * not CUDA, not sparse) called with one list or tuple of numbers: torch.tensor(data,
 * dtype=the type's dtype) on the CPU, as eager makes it (a float truncates as the cast does).
 * A number or sizes (an uninitialized tensor), a tensor or keywords: 1 (not handled). */
static int legacy_tensor_type(trace *t, PyObject *f, var *args, int nargs, PyObject *kwnames, var *out) {
    if (nargs != 1 || (kwnames && PyTuple_GET_SIZE(kwnames) > 0) ||
        !(args[0].kind == V_SEQ || (args[0].kind == V_CONST && (PyList_Check(args[0].obj) ||
                                                               PyTuple_Check(args[0].obj)))))
        return 1;
    PyObject *dtype = PyObject_GetAttrString(f, "dtype");
    PyObject *cuda = dtype ? PyObject_GetAttrString(f, "is_cuda") : NULL;
    PyObject *sparse = cuda ? PyObject_GetAttrString(f, "is_sparse") : NULL;
    int ok = sparse != NULL && cuda == Py_False && sparse == Py_False && sym_dtype_from_object(dtype) >= 0;
    Py_XDECREF(cuda);
    Py_XDECREF(sparse);
    if (!ok) {
        Py_XDECREF(dtype);
        return tc_clear_expected(PyExc_AttributeError) < 0 ? -1 : 1;
    }
    var dv;
    if (sym_const(t, dtype, &dv) < 0)
        return -1;
    static const opdef legacy_def = {"legacy tensor type", W_TORCH, "data|dtype", sym_h_tensor, 0};
    var *p[MAXP] = {&args[0], &dv};
    return sym_h_tensor(t, &legacy_def, p, out);
}

int sym_call_builtin(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    PyObject *f = fn->obj;
    const char *name = PyCFunction_Check(f) ? ((PyCFunctionObject *)f)->m_ml->ml_name : NULL;
    {
        int rc = sym_tfm_builtin(t, f, args, nargs, kwnames, out); /* mode stack (sym_tfm.c) */
        if (rc != 1)
            return rc;
    }
    if (t->vm_depth > 0 && f != (PyObject *)&PyType_Type && !(name && (!strcmp(name, "abs") || !strcmp(name, "isinstance") || !strcmp(name, "getattr") ||
                                      !strcmp(name, "hasattr") || !strcmp(name, "callable") || !strcmp(name, "id"))) &&
        sym_vmap_gate(t, name ? name : "a builtin call", args, nargs) < 0)
        return -1; /* len(), int(), max() of a mapped value (sym_vmap.c) */
    int urc = sym_np_ufunc_call(t, f, args, nargs, kwnames, out); /* ops_models.c: np.sqrt(d) */
    if (urc != 1)
        return urc;
    for (int i = 0; i < 2; i++)
        if (f == sym_refs.usage_log[i] && f != NULL) /* logging only */
            return sym_const(t, Py_NewRef(Py_None), out);
    for (int i = 0; i < 3; i++) {
        if (f == sym_refs.tracing_query[i] && f != NULL && nargs == 0 && !kwnames) {
            /* False/None/0 unless a torch.jit.trace or a dispatch mode is active */
            PyObject *r = PyObject_CallNoArgs(f);
            if (r == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "%s raised", name);
            }
            int quiet = PyObject_Not(r);
            if (quiet != 1) {
                (void)tc_clear_expected(PyExc_Exception);
                Py_DECREF(r);
                return sym_fail(t, "called under torch.jit.trace or a dispatch mode (%s)", name);
            }
            return sym_const(t, r, out);
        }
    }
    if (f == sym_refs.grad_query && f != NULL && nargs == 0 && !kwnames)
        return sym_const(t, PyBool_FromLong(tc_grad_enabled() && t->nograd == 0), out);
    if (f == sym_refs.autocast_query && f != NULL) /* the trace's state (autocast.c) */
        return dh_autocast_query(t, f, args, nargs, kwnames, out);
    for (int i = 0; i < 3; i++)
        if (f == sym_refs.tf_query[i] && f != NULL && sym_refs.tf_probe != NULL && !kwnames)
            return torch_function_query(t, f, i, args, nargs, out);
    if (f == (PyObject *)&PyDictProxy_Type && nargs == 1 && !kwnames && args[0].kind == V_DICT &&
        args[0].op == 0 && args[0].items != NULL) {
        /* types.MappingProxyType(d): a read-only live view of d (SYM_DICT_PROXY) */
        *out = args[0];
        out->src = -1;
        out->op = SYM_DICT_PROXY;
        return 0;
    }
    if (f == (PyObject *)&PyDict_Type && (!kwnames || PyTuple_GET_SIZE(kwnames) == 0)) {
        /* dict() / dict(d): a new dict */
        if (nargs == 1 && args[0].kind == V_DICT)
            return sym_dict_method(t, &args[0], "copy", NULL, 0, out);
        if (nargs == 1 && args[0].kind == V_REC) /* dict(model_output): its non-None fields */
            return sym_record_as_dict(t, &args[0], out);
        if (nargs == 0) {
            PyObject *keys = PyTuple_New(0);
            var *vals = sym_alloc(t, 0);
            if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL)
                return -1;
            *out = sym_var(V_DICT);
            out->obj = keys;
            out->items = vals;
            return 0;
        }
    }
    if (name && strcmp(name, "len") == 0 && nargs == 1 && !kwnames) {
        if (args[0].kind == V_TENSOR) {
            ic_meta m_copy = *sym_metap(t, args[0].val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
            if (m->ndim == 0)
                return sym_fail(t, "len() of a 0-d tensor");
            return sym_size_out(t, m, 0, out);
        }
        if (args[0].kind == V_SEQ || args[0].kind == V_DICT)
            return sym_const(t, PyLong_FromLong(args[0].n), out);
        if (args[0].kind == V_REC) {
            var *items;
            int n;
            if (sym_record_items(t, &args[0], &items, &n) < 0)
                return -1;
            return sym_const(t, PyLong_FromLong(n), out);
        }
        if ((args[0].kind == V_FUNC || args[0].kind == V_CONST) && args[0].obj != NULL && PyType_Check(args[0].obj)) {
            int rc = sym_obj_len(t, &args[0], out); /* len(EnumClass): a metaclass's __len__ */
            if (rc <= 0)
                return rc;
        }
        if (args[0].kind == V_OBJ && !PyModule_Check(args[0].obj)) {
            /* nn.Sequential / nn.ModuleList keeping their own __len__: their submodule count.
             * Any other object (ParameterList, ParameterDict, ModuleDict, a module with its
             * own __len__) answers through its Python __len__ */
            int container = sym_is_module_container(args[0].obj, "__len__");
            PyObject *name = container ? PyUnicode_InternFromString("_modules") : NULL;
            PyObject *mods = name ? dh_module_getattr(args[0].obj, name) : NULL;
            Py_XDECREF(name);
            if (container && name == NULL)
                return -1; /* MemoryError */
            int ok = mods && PyDict_Check(mods);
            Py_ssize_t k = ok ? PyDict_GET_SIZE(mods) : 0;
            Py_XDECREF(mods);
            if (ok && args[0].src >= 0) { /* len(Sequential): guarded (append changes it) */
                PyObject *mn = PyUnicode_InternFromString("_modules");
                int ms = mn ? sym_source(t, DH_S_ATTR, args[0].src, 0, mn) : -1;
                Py_XDECREF(mn);
                if (ms < 0 || sym_guard_len(t, ms, (int)k) < 0)
                    return -1;
            }
            if (ok)
                return sym_const(t, PyLong_FromSsize_t(k), out);
            int rc = sym_obj_len(t, &args[0], out); /* obj_proto.c: a Python __len__ */
            if (rc <= 0)
                return rc;
        }
    }
    if (name && strcmp(name, "callable") == 0 && f == PyDict_GetItemString(PyEval_GetBuiltins(), "callable") &&
        nargs == 1 && !kwnames) {
        /* callable(x): from x's kind, or from the Python object it stands for (its type's
         * tp_call; the object is guarded by its source like any value read) */
        const var *a = &args[0];
        int r = -1;
        if (a->kind == V_FUNC || a->kind == V_METHOD)
            r = 1;
        else if (a->kind == V_SEQ && a->obj != NULL && PyType_Check(a->obj)) /* a named tuple */
            r = ((PyTypeObject *)a->obj)->tp_call != NULL;
        else if (a->kind == V_TENSOR || a->kind == V_SEQ || a->kind == V_DICT || a->kind == V_ITER ||
                 a->kind == V_SYM || a->kind == V_GEN)
            r = 0;
        else if ((a->kind == V_CONST || a->kind == V_OBJ) && a->obj != NULL)
            r = PyCallable_Check(a->obj);
        else if (a->kind == V_REC)
            r = ((PyTypeObject *)sym_record_class(a))->tp_call != NULL;
        if (r >= 0)
            return sym_const(t, PyBool_FromLong(r), out);
    }
    if (name && strcmp(name, "id") == 0 && f == PyDict_GetItemString(PyEval_GetBuiltins(), "id") &&
        nargs == 1 && !kwnames && (args[0].kind == V_OBJ || args[0].kind == V_FUNC) &&
        args[0].obj != NULL && args[0].src >= 0) {
        /* id(obj) of an object read from the frame: that object, identity-guarded */
        if (sym_guard_id(t, args[0].src, args[0].obj) < 0)
            return -1;
        return sym_const(t, PyLong_FromVoidPtr(args[0].obj), out);
    }
    if (f == (PyObject *)&PyType_Type && nargs == 1 && !kwnames) {
        /* type(x) */
        PyObject *tp = NULL;
        if (args[0].kind == V_OBJ || args[0].kind == V_CONST || args[0].kind == V_FUNC)
            tp = (PyObject *)Py_TYPE(args[0].obj);
        else if (args[0].kind == V_DICT) /* an OrderedDict / defaultdict made in the trace: its own */
            tp = sym_data_dict_type(&args[0]);
        else if (args[0].kind == V_REC)
            tp = sym_record_class(&args[0]);
        else if (args[0].kind == V_SEQ && args[0].obj != NULL && PyType_Check(args[0].obj))
            tp = args[0].obj; /* a named tuple / a ModuleList slice */
        else if (args[0].kind == V_SEQ)
            tp = args[0].is_list ? (PyObject *)&PyList_Type : (PyObject *)&PyTuple_Type;
        else if (args[0].kind == V_TENSOR) {
            /* an input (its type guarded: Parameter or Tensor), or a graph value: Tensor */
            int s = args[0].src;
            if (s >= 0 && s < t->capsrc && t->srcobj[s] != NULL && t->srcdone[s] &&
                t->srcvar[s].oid == args[0].oid) {
                if (sym_guard_type(t, s, t->srcobj[s]) < 0)
                    return -1;
                tp = (PyObject *)Py_TYPE(t->srcobj[s]);
            } else if (s < 0) {
                tp = sym_refs.tensor_type;
            }
        }
        if (tp != NULL)
            return sym_const(t, Py_NewRef(tp), out);
    }
    if (name && strcmp(name, "issubclass") == 0 && nargs == 2 && !kwnames &&
        f == PyDict_GetItemString(PyEval_GetBuiltins(), "issubclass") &&
        (args[0].kind == V_FUNC || args[0].kind == V_CONST) && args[0].obj != NULL && PyType_Check(args[0].obj) &&
        args[0].op != SYM_MADE_FUNCTION) {
        /* issubclass(C, D), issubclass(C, (D, E)): classes the trace holds as themselves (type(x),
         * globals, attributes: guarded where they were read); D's metaclass exactly type, whose
         * answer is C's MRO (an ABC's can change with register()) */
        const var *cs = args[1].kind == V_SEQ ? args[1].items : &args[1];
        int k = args[1].kind == V_SEQ ? args[1].n : 1;
        PyObject *one = NULL;
        if (args[1].kind == V_SEQ && !class_tuple(&args[1])) /* a list: eager raises TypeError */
            return sym_fail(t, "issubclass() of a class and a sequence that is not a tuple (eager raises)");
        if (args[1].kind == V_CONST && args[1].obj != NULL && PyTuple_CheckExact(args[1].obj))
            one = args[1].obj;
        int ok = 1;
        for (int i = 0; i < (one ? (int)PyTuple_GET_SIZE(one) : k) && ok; i++) {
            PyObject *c = one ? PyTuple_GET_ITEM(one, i)
                          : ((cs[i].kind == V_FUNC || cs[i].kind == V_CONST) && cs[i].op != SYM_MADE_FUNCTION
                                 ? cs[i].obj
                                 : NULL);
            ok = c != NULL && PyType_Check(c) && Py_IS_TYPE(c, &PyType_Type);
        }
        if (ok) {
            int r = 0;
            for (int i = 0; i < (one ? (int)PyTuple_GET_SIZE(one) : k) && r == 0; i++)
                r = PyType_IsSubtype((PyTypeObject *)args[0].obj,
                                     (PyTypeObject *)(one ? PyTuple_GET_ITEM(one, i) : cs[i].obj));
            return sym_const(t, PyBool_FromLong(r), out);
        }
    }
    var pair[2]; /* isinstance(x, C), isinstance(x, (C, D)): classes reached as globals are
                  * V_FUNCs; the class argument becomes a constant */
    if (name && strcmp(name, "isinstance") == 0 && nargs == 2 && !kwnames &&
        (args[1].kind == V_FUNC || args[1].kind == V_SEQ)) {
        if (args[1].kind == V_SEQ && !class_tuple(&args[1])) /* a list: eager raises TypeError */
            return sym_fail(t, "isinstance() of a sequence of classes that is not a tuple (eager raises)");
        int k = args[1].kind == V_SEQ ? args[1].n : 1;
        const var *cs = args[1].kind == V_SEQ ? args[1].items : &args[1];
        PyObject *tup = PyTuple_New(k);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < k; i++) {
            if ((cs[i].kind != V_FUNC && cs[i].kind != V_CONST) || cs[i].obj == NULL ||
                !PyType_Check(cs[i].obj)) {
                Py_DECREF(tup);
                return sym_fail(t, "isinstance with an unsupported class argument");
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(cs[i].obj));
        }
        pair[0] = args[0];
        if (sym_const(t, tup, &pair[1]) < 0)
            return -1;
        args = pair;
    }
    if (name && strcmp(name, "isinstance") == 0 && nargs == 2 && args[1].kind == V_CONST &&
        args[0].kind != V_TENSOR) {
        PyObject *probe = NULL;
        if (args[0].kind == V_OBJ || args[0].kind == V_FUNC)
            probe = Py_NewRef(args[0].obj);
        else if (args[0].kind == V_REC) { /* by its class: no instance yet */
            int r = PyObject_IsSubclass(sym_record_class(&args[0]), args[1].obj);
            if (r < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        } else if (args[0].kind == V_GEN) { /* a generator object (clip_grad_norm_'s
                                              * isinstance(parameters, types.GeneratorType)) */
            int r = PyObject_IsSubclass((PyObject *)&PyGen_Type, args[1].obj);
            if (r < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        } else if (args[0].kind == V_DICT && args[0].op == SYM_DICT_PROXY) {
            PyObject *empty = PyDict_New(); /* an empty mappingproxy */
            probe = empty ? PyDictProxy_New(empty) : NULL;
            Py_XDECREF(empty);
        } else if (args[0].kind == V_DICT)
            probe = PyObject_CallNoArgs(sym_data_dict_type(&args[0])); /* an empty one of its type */
        else if (args[0].kind == V_ITER) {
            /* an iterator (map(), zip(), iter(x)): not a list, a tuple, ...; an Iterator.
             * Against a concrete iterator class (map, zip) the trace can't answer */
            int conc = concrete_iterator_class(args[1].obj);
            if (conc != 0)
                return conc < 0 ? -1 : sym_fail(t, "isinstance of an iterator against an iterator class");
            PyObject *empty = PyTuple_New(0);
            probe = empty ? PyObject_GetIter(empty) : NULL; /* a tuple_iterator */
            Py_XDECREF(empty);
            if (probe == NULL)
                return -1;
        }
        else if (args[0].kind == V_SEQ && args[0].obj != NULL && PyType_Check(args[0].obj)) {
            int r = PyObject_IsSubclass(args[0].obj, args[1].obj);
            if (r < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        } else if (args[0].kind == V_SEQ)
            probe = args[0].is_list ? PyList_New(0) : PyTuple_New(0);
        if (probe != NULL) {
            int r = PyObject_IsInstance(probe, args[1].obj);
            Py_DECREF(probe);
            if (r < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        }
    }
    if (name && strcmp(name, "isinstance") == 0 && nargs == 2 && args[1].kind == V_CONST) {
        if (args[0].kind == V_TENSOR) {
            /* an input: by the object itself, its type guarded (an nn.Parameter, a subclass:
             * isinstance(p, nn.Parameter) is True where issubclass(Tensor, Parameter) is not);
             * anything else (a graph value): a torch.Tensor */
            int s = args[0].src, r;
            if (s >= 0 && s < t->capsrc && t->srcobj[s] != NULL && t->srcdone[s] &&
                t->srcvar[s].oid == args[0].oid) {
                if (sym_guard_type(t, s, t->srcobj[s]) < 0)
                    return -1;
                r = PyObject_IsInstance(t->srcobj[s], args[1].obj);
            } else {
                r = PyObject_IsSubclass(sym_refs.tensor_type, args[1].obj);
            }
            if (r < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "isinstance with an unsupported class argument");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        }
    }
    if (name && !strcmp(name, "vars") && nargs == 1 && !kwnames && f == PyDict_GetItemString(PyEval_GetBuiltins(), name) &&
        args[0].kind == V_OBJ) {
        /* vars(o): o.__dict__ (a read-only view with the trace's writes: obj_dictview.c) */
        PyObject *dn = PyUnicode_InternFromString("__dict__");
        int rc = dn ? sym_load_attr(t, &args[0], dn, out) : -1;
        Py_XDECREF(dn);
        return rc;
    }
    if (name && (!strcmp(name, "setattr") || !strcmp(name, "delattr")) && !kwnames &&
        nargs == (name[0] == 's' ? 3 : 2) && f == PyDict_GetItemString(PyEval_GetBuiltins(), name) &&
        args[1].kind == V_CONST && PyUnicode_Check(args[1].obj) &&
        (args[0].kind == V_OBJ || args[0].kind == V_REC || args[0].kind == V_TENSOR)) {
        /* setattr(o, "k", v) / delattr(o, "k"): as o.k = v / del o.k (obj_attrs.c) */
        int rc;
        if (name[0] == 'd')
            rc = sym_obj_delattr(t, &args[0], args[1].obj);
        else if (args[0].kind == V_REC)
            rc = t->in_gen ? sym_fail(t, "attribute assignment inside a generator")
                           : sym_record_setattr(t, &args[0], args[1].obj, &args[2]);
        else if (args[0].kind == V_TENSOR)
            rc = sym_tensor_setattr(t, &args[0], args[1].obj, &args[2]);
        else
            rc = sym_obj_setattr(t, &args[0], args[1].obj, &args[2]);
        return rc < 0 ? -1 : sym_const(t, Py_NewRef(Py_None), out);
    }
    if (name && (!strcmp(name, "getattr") || !strcmp(name, "hasattr")) && (nargs == 2 || nargs == 3) &&
        args[1].kind == V_CONST && PyUnicode_Check(args[1].obj) && !kwnames) {
        /* a lookup that fails is the answer here: what it logged is undone and its reason
         * dropped (a later failure must report its own) */
        if (!strcmp(name, "hasattr") && (args[0].kind == V_CONST || args[0].kind == V_FUNC) &&
            args[0].obj != NULL && PyType_Check(args[0].obj) &&
            Py_TYPE(args[0].obj) == &PyType_Type) {
            /* hasattr(cls, name) of a plain class: its MRO or type's (a name the trace does
             * not read, e.g. __dataclass_fields__, must not answer False) */
            PyObject *a = _PyType_Lookup((PyTypeObject *)args[0].obj, args[1].obj);
            if (a == NULL)
                a = _PyType_Lookup(&PyType_Type, args[1].obj);
            /* a class is mutable: the answer holds while it stays (guarded). One reached with no
             * source (type(x), a class the trace made a constant) is guarded as itself */
            int cs = args[0].src >= 0 ? args[0].src : sym_source(t, DH_S_CONST, -1, 0, args[0].obj);
            if (cs < 0)
                return -1;
            dh_guard *g = sym_new_guard(t, DH_G_HASATTR, cs);
            if (g == NULL)
                return -1;
            g->obj = Py_NewRef(args[1].obj);
            g->value = a != NULL;
            return sym_const(t, PyBool_FromLong(a != NULL), out);
        }
        sym_fx_mark mark = {0};
        if (sym_fx_save(t, &mark) < 0)
            return -1;
        int rc = sym_load_attr(t, &args[0], args[1].obj, out);
        if (rc < 0 && !PyErr_Occurred() && (!strcmp(name, "hasattr") || nargs == 3))
            sym_fx_rollback(t, &mark);
        sym_fx_drop(&mark);
        if (rc < 0 && !PyErr_Occurred() && (!strcmp(name, "hasattr") || nargs == 3) &&
            (args[0].kind == V_OBJ || args[0].kind == V_TENSOR)) {
            /* "absent" only while it stays so (guarded); else the failure stands. A tensor:
             * its class and instance attributes decide (present: guarded too) */
            char why[sizeof t->reason];
            snprintf(why, sizeof why, "%s", t->reason);
            t->failed = 0;
            t->reason[0] = 0;
            t->pending_exc = NULL;
            int ab = args[0].kind == V_OBJ ? sym_guard_attr_absent(t, &args[0], args[1].obj)
                                           : sym_guard_tensor_attr(t, &args[0], args[1].obj);
            if (ab < 0)
                return -1;
            if (ab == 2 && !strcmp(name, "hasattr"))
                return sym_const(t, Py_NewRef(Py_True), out);
            if (ab != 1)
                return sym_fail(t, "%s(o, %R): %s", name, args[1].obj, why);
        }
        if (rc < 0 && !PyErr_Occurred() && (!strcmp(name, "hasattr") || nargs == 3) &&
            args[0].kind != V_OBJ && args[0].kind != V_TENSOR && really_has(t, &args[0], args[1].obj)) {
            /* the object has the name, the trace only failed to read it (a class constant
             * through super(), Tensor.is_leaf): not an absent attribute (was: False) */
            char why[sizeof t->reason];
            snprintf(why, sizeof why, "%s", t->reason);
            return sym_fail(t, "%s(o, %R): %s", name, args[1].obj, why);
        }
        if (rc < 0 && !PyErr_Occurred() && (!strcmp(name, "hasattr") || nargs == 3) &&
            (args[0].kind == V_CONST || (args[0].kind == V_FUNC && args[0].op != SYM_MADE_FUNCTION)) &&
            args[0].obj != NULL && (PyType_Check(args[0].obj) || _PyObject_GetDictPtr(args[0].obj) != NULL)) {
            /* absent now from an object whose attributes can be set later (a function's
             * __dict__, a class): guarded (HASATTR == 0) on its source, or on itself where it
             * has none. Was unguarded: fn.flag = True between calls kept the stale branch */
            int s = args[0].src >= 0 ? args[0].src : sym_source(t, DH_S_CONST, -1, 0, args[0].obj);
            dh_guard *g = s < 0 ? NULL : sym_new_guard(t, DH_G_HASATTR, s);
            if (g == NULL)
                return -1;
            g->obj = Py_NewRef(args[1].obj);
            g->value = 0;
        }
        if (!strcmp(name, "hasattr")) {
            if (rc < 0 && PyErr_Occurred())
                return -1;
            if (rc < 0) {
                t->failed = 0;
                t->reason[0] = 0;
            }
            t->pending_exc = NULL;
            return sym_const(t, PyBool_FromLong(rc == 0), out);
        }
        if (rc < 0 && nargs == 3 && !PyErr_Occurred()) {
            t->failed = 0;
            t->reason[0] = 0;
            t->pending_exc = NULL;
            *out = args[2];
            return 0;
        }
        return rc;
    }
    long long enum_start = 0;
    if (f == (PyObject *)&PyEnum_Type && nargs >= 1 &&
        nargs + (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0) == 2 &&
        (!kwnames || PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "start") == 0)) {
        /* enumerate(it, k) / enumerate(it, start=k): a constant int start */
        int overflow = 0;
        if (args[1].kind != V_CONST || !PyLong_Check(args[1].obj))
            return sym_fail(t, "enumerate() with a start that is not a constant int");
        enum_start = PyLong_AsLongLongAndOverflow(args[1].obj, &overflow);
        if (overflow || (enum_start == -1 && PyErr_Occurred())) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "enumerate() with a start beyond 64 bits");
        }
        nargs = 1;
        kwnames = NULL;
    }
    int zip_strict = 0;
    if (f == (PyObject *)&PyZip_Type && kwnames && PyTuple_GET_SIZE(kwnames) == 1 && nargs >= 1 &&
        PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "strict") == 0) {
        /* zip(a, b, strict=flag): unequal lengths raise in eager (left to it) */
        if (args[nargs].kind != V_CONST || args[nargs].obj == NULL) /* keyword values follow */
            return sym_fail(t, "zip(strict=...) of a value not known when tracing");
        int on = PyObject_IsTrue(args[nargs].obj);
        if (on < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "zip(strict=...): its truth value raised");
        }
        zip_strict = on;
        kwnames = NULL;
    }
    if ((f == (PyObject *)&PyEnum_Type || f == (PyObject *)&PyZip_Type ||
         f == (PyObject *)&PyReversed_Type || f == (PyObject *)&PyList_Type ||
         (f == (PyObject *)&PyTuple_Type && nargs == 1 && args[0].kind != V_CONST)) &&
        !kwnames && nargs >= 1) {
        /* enumerate / zip / reversed / list over tracked sequences: unrolled */
        var *its[8];
        int lens[8], n = 1 << 30, ngen = 0;
        for (int i = 0; i < nargs && nargs <= 8; i++)
            ngen += args[i].kind == V_GEN;
        if (ngen > 0 && !zip_strict && (f == (PyObject *)&PyEnum_Type || f == (PyObject *)&PyZip_Type)) {
            /* over a generator (itertools.count/cycle/repeat, a genexpr): a generator of the
             * tuples (_polyfills.enumerate_lazy / zip_lazy) that steps it as eager's does,
             * one item a round in argument order, so an infinite one is fine; the other
             * arguments are taken as tuples of their items */
            var a[9];
            int na = 0;
            for (int i = 0; i < nargs; i++) {
                if (args[i].kind == V_GEN) {
                    a[na++] = args[i];
                    continue;
                }
                var *it;
                int k, so = sym_set_iter_items(t, &args[i], &it, &k); /* a set: eager's order */
                if (so < 0 || (so > 0 && sym_iter_items(t, &args[i], &it, &k) < 0))
                    return -1;
                memset(&a[na], 0, sizeof a[na]);
                a[na].kind = V_SEQ;
                a[na].src = -1;
                a[na].n = k;
                a[na++].items = it;
            }
            if (f == (PyObject *)&PyEnum_Type &&
                sym_const(t, PyLong_FromLongLong(enum_start), &a[na++]) < 0)
                return -1;
            return sym_obj_inline_named(t, f == (PyObject *)&PyEnum_Type ? "enumerate_lazy" : "zip_lazy", a, na, out);
        }
        if (nargs > 8 || (f != (PyObject *)&PyZip_Type && nargs != 1))
            return sym_fail(t, "unsupported iteration helper call");
        if (f == (PyObject *)&PyReversed_Type && (args[0].kind == V_ITER || args[0].kind == V_GEN))
            return sym_fail(t, "reversed() of an iterator (eager raises)");
        for (int i = 0; i < nargs; i++) {
            /* a set: in eager's order (obj_setorder.c); reversed() of one raises */
            int so = f == (PyObject *)&PyReversed_Type ? 1 : sym_set_iter_items(t, &args[i], &its[i], &lens[i]);
            if (so < 0 || (so > 0 && sym_iter_items(t, &args[i], &its[i], &lens[i]) < 0))
                return -1;
            if (lens[i] < n)
                n = lens[i];
        }
        for (int i = 1; i < nargs && zip_strict; i++)
            if (lens[i] != lens[0])
                return sym_fail(t, "zip(strict=True) of unequal lengths (eager raises)");
        var *items = sym_alloc(t, n);
        if (items == NULL)
            return -1;
        for (int j = 0; j < n; j++) {
            if (f == (PyObject *)&PyReversed_Type) {
                items[j] = its[0][n - 1 - j];
                continue;
            }
            if (f == (PyObject *)&PyList_Type || f == (PyObject *)&PyTuple_Type) {
                items[j] = its[0][j];
                continue;
            }
            int k = f == (PyObject *)&PyEnum_Type ? 2 : nargs;
            var *tup = sym_alloc(t, k);
            if (tup == NULL)
                return -1;
            if (f == (PyObject *)&PyEnum_Type) {
                if (sym_const(t, PyLong_FromLongLong(enum_start + j), &tup[0]) < 0)
                    return -1;
                tup[1] = its[0][j];
            } else {
                for (int i = 0; i < nargs; i++)
                    tup[i] = its[i][j];
            }
            memset(&items[j], 0, sizeof items[j]);
            items[j].kind = V_SEQ;
            items[j].src = -1;
            items[j].n = k;
            items[j].items = tup;
        }
        /* enumerate/zip/reversed make iterators (returned as such, not as tuples) */
        memset(out, 0, sizeof *out);
        out->kind = f == (PyObject *)&PyList_Type || f == (PyObject *)&PyTuple_Type ? V_SEQ : V_ITER;
        out->src = -1;
        out->is_list = f == (PyObject *)&PyList_Type;
        out->n = n;
        out->items = items;
        return 0;
    }
    if ((f == (PyObject *)&PySet_Type || f == (PyObject *)&PyFrozenSet_Type) && !kwnames)
        return sym_make_set(t, f == (PyObject *)&PySet_Type, args, nargs, out);
    if (name && !strcmp(name, "prod") && nargs == 1 && !kwnames && PyCFunction_Check(f) &&
        (args[0].kind == V_SEQ || args[0].kind == V_ITER || args[0].kind == V_GEN)) {
        PyObject *pm = ((PyCFunctionObject *)f)->m_module;
        const char *pmn = pm && PyUnicode_Check(pm) ? PyUnicode_AsUTF8(pm) : pm && PyModule_Check(pm) ? PyModule_GetName(pm) : NULL;
        if (pmn == NULL)
            (void)tc_clear_expected(PyExc_Exception);
        if (pmn && !strcmp(pmn, "math")) {
            /* math.prod(items) of a list built in the trace (sizes, maybe symbolic): 1 * x0 *
             * x1 * ..., left to right as math.prod multiplies */
            var *items, acc;
            int n;
            if (sym_iter_items(t, &args[0], &items, &n) < 0 || sym_const(t, PyLong_FromLong(1), &acc) < 0)
                return -1;
            for (int i = 0; i < n; i++) {
                var r;
                if (sym_binary(t, 5 /* NB_MULTIPLY */, &acc, &items[i], &r) < 0)
                    return -1;
                acc = r;
            }
            *out = acc;
            return 0;
        }
    }
    if (name && (!strcmp(name, "all") || !strcmp(name, "any") || !strcmp(name, "sum") ||
                 !strcmp(name, "min") || !strcmp(name, "max")) &&
        nargs >= 1 && nargs <= 2 && !kwnames &&
        (args[0].kind == V_SEQ || args[0].kind == V_ITER || args[0].kind == V_GEN)) {
        /* all(genexpr), sum(...) over constants: called on a tuple of them (tensors' truth
         * is data: not captured) */
        var *items;
        int n;
        if (sym_iter_items(t, &args[0], &items, &n) < 0)
            return -1;
        int anyt = 0, fold = 1, nonconst = nargs == 2 && args[1].kind != V_CONST;
        for (int i = 0; i <= n; i++) {
            const var *v = i < n ? &items[i] : nargs == 2 ? &args[1] : NULL;
            if (v == NULL)
                break;
            anyt |= v->kind == V_TENSOR;
            nonconst |= v->kind != V_CONST;
            /* floats: sum() of them is not a chain of + (3.12 compensates) */
            fold &= v->kind == V_SEQ || v->kind == V_SYM || v->kind == V_TENSOR ||
                    (v->kind == V_CONST && !PyFloat_Check(v->obj) && !PyComplex_Check(v->obj) &&
                     !PyUnicode_Check(v->obj) && !PyBytes_Check(v->obj) && !PyByteArray_Check(v->obj));
        }
        if (!strcmp(name, "sum") && (anyt || (nonconst && fold))) {
            /* sum(tensors), sum(lists, []) of lists built in the frame, sum of symbolic
             * sizes: start + x0 + x1 + ..., left to right as eager */
            var acc;
            if (nargs == 2)
                acc = args[1];
            else if (sym_const(t, PyLong_FromLong(0), &acc) < 0)
                return -1;
            for (int i = 0; i < n; i++) {
                var r;
                if (sym_binary(t, 0, &acc, &items[i], &r) < 0)
                    return -1;
                acc = r;
            }
            *out = acc;
            return 0;
        }
        if (nargs == 2 && args[1].kind != V_CONST)
            return sym_fail(t, "%s() with a non-constant start", name);
        PyObject *tup = PyTuple_New(n), *r = NULL;
        if (tup == NULL)
            return -1;
        for (int i = 0; i < n; i++) {
            if (items[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "%s() over non-constant values", name);
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(items[i].obj));
        }
        r = nargs == 2 ? PyObject_CallFunctionObjArgs(f, tup, args[1].obj, NULL)
                       : PyObject_CallOneArg(f, tup);
        Py_DECREF(tup);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "%s() raised (eager will raise)", name);
        }
        return sym_const(t, r, out);
    }
    int is_size = PyType_Check(f) && !strcmp(((PyTypeObject *)f)->tp_name, "torch.Size");
    if (is_size && nargs == 1 && !kwnames && args[0].kind == V_SEQ) {
        /* torch.Size(ints): a constant Size; with a symbolic int among them, the tuple of them
         * (what x.shape of a dynamic shape is) */
        int known = 1;
        for (int i = 0; i < args[0].n; i++) {
            const var *it = &args[0].items[i];
            if (it->kind == V_SYM || (it->kind == V_CONST && it->dyn))
                known = 0;
            else if (it->kind != V_CONST || !PyLong_Check(it->obj))
                return sym_fail(t, "torch.Size of a value that is not an int");
        }
        if (!known) {
            var *items = sym_alloc(t, args[0].n);
            if (items == NULL && args[0].n > 0)
                return -1;
            if (args[0].n > 0)
                memcpy(items, args[0].items, (size_t)args[0].n * sizeof *items);
            *out = sym_var(V_SEQ);
            out->n = args[0].n;
            out->items = items;
            return 0;
        }
        PyObject *tup = PyTuple_New(args[0].n);
        for (int i = 0; tup != NULL && i < args[0].n; i++)
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[0].items[i].obj));
        if (tup == NULL)
            return -1;
        PyObject *r = PyObject_CallOneArg(f, tup);
        Py_DECREF(tup);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "torch.Size() raised (eager will raise)");
        }
        return sym_const(t, r, out);
    }
    /* pure functions of constants: math.*, abs, min, max, int, float, bool, round, torch.Size */
    int allconst = 1;
    for (int i = 0; i < nargs; i++)
        if (args[i].kind != V_CONST)
            allconst = 0;
    if (kwnames)
        allconst = 0;
    PyObject *mod = PyCFunction_Check(f) ? ((PyCFunctionObject *)f)->m_module : NULL;
    const char *modname = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    if (!modname && mod && PyModule_Check(mod))
        modname = PyModule_GetName(mod);
    if (modname == NULL)
        (void)tc_clear_expected(PyExc_UnicodeError);
    int pure = (modname && strcmp(modname, "math") == 0) ||
               (name && (!strcmp(name, "abs") || !strcmp(name, "min") || !strcmp(name, "max") ||
                         !strcmp(name, "round") || !strcmp(name, "len") ||
                         !strcmp(name, "isinstance") || !strcmp(name, "divmod") ||
                         !strcmp(name, "sum") || !strcmp(name, "all") || !strcmp(name, "any"))) ||
               (name && modname && !strcmp(modname, "builtins") &&
                (!strcmp(name, "pow") || !strcmp(name, "ord") || !strcmp(name, "chr") || !strcmp(name, "hash") ||
                 !strcmp(name, "bin") || !strcmp(name, "hex") || !strcmp(name, "oct"))) ||
               f == (PyObject *)&PyLong_Type || f == (PyObject *)&PyFloat_Type || f == (PyObject *)&PyComplex_Type ||
               f == (PyObject *)&PyBool_Type || f == (PyObject *)&PyTuple_Type ||
               f == (PyObject *)&PyRange_Type || f == (PyObject *)&PySlice_Type || is_size;
    if (allconst && f == (PyObject *)&PyUnicode_Type && nargs == 1) {
        /* str() of a number, a string or a class (repr of the class unless its metaclass
         * has its own): str(model.__class__) keys a registry */
        PyObject *a = args[0].obj;
        pure = a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a) ||
               PyUnicode_CheckExact(a) || !strcmp(Py_TYPE(a)->tp_name, "torch.device") ||
               !strcmp(Py_TYPE(a)->tp_name, "torch.dtype") || (PyType_Check(a) && Py_TYPE(a)->tp_repr == PyType_Type.tp_repr &&
                                            Py_TYPE(a)->tp_str == PyType_Type.tp_str) ||
               sym_exc_pure_text(t, a); /* an exception the trace raised and caught (sym_exc.c) */
    }
    if (allconst && nargs == 1 && name && modname && !strcmp(modname, "builtins") && !strcmp(name, "repr") &&
        sym_exc_pure_text(t, args[0].obj))
        pure = 1;
    if (allconst && name && !strcmp(name, "format") && f == PyDict_GetItemString(PyEval_GetBuiltins(), name) &&
        (nargs == 1 || (nargs == 2 && PyUnicode_CheckExact(args[1].obj)))) {
        /* format(number or str, spec): builtins' own __format__, pure */
        PyObject *a = args[0].obj;
        pure = a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a) ||
               PyUnicode_CheckExact(a);
    }
    if (nargs == 0 && !kwnames && name && modname && !strcmp(modname, "torch._C") &&
        !strcmp(name, "_get_privateuse1_backend_name")) {
        /* the PrivateUse1 backend's name (torch.utils._foreach_utils asks it): a string, asked
         * now and guarded (torch.utils.rename_privateuse1_backend may change it once) */
        PyObject *tup = PyTuple_New(0);
        int rc = tup ? sym_guarded_call(t, f, tup, out) : -1;
        Py_XDECREF(tup);
        return rc;
    }
    if (allconst && pure) {
        PyObject *tup = PyTuple_New(nargs);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < nargs; i++)
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        PyObject *r = PyObject_Call(f, tup, NULL);
        Py_DECREF(tup);
        if (r == NULL) /* int("abc"): eager's ValueError, for the trace's except clauses */
            return sym_raise_current(t, "constant call raised");
        return sym_const(t, r, out);
    }
    if (PyType_Check(f) && (!strcmp(((PyTypeObject *)f)->tp_name, "torch.finfo") ||
                            !strcmp(((PyTypeObject *)f)->tp_name, "torch.iinfo")) &&
        nargs <= 1 && !kwnames && (nargs == 0 || (args[0].kind == V_CONST && sym_dtype_from_object(args[0].obj) >= 0))) {
        /* torch.finfo(dtype) / torch.iinfo(dtype): facts of a dtype, a constant (its
         * attributes are read as constants); finfo() is of the default dtype, guarded */
        if (nargs == 0 && sym_default_dtype(t) < 0)
            return -1;
        PyObject *r = nargs ? PyObject_CallOneArg(f, args[0].obj) : PyObject_CallNoArgs(f);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "%s() raised (eager will raise)", ((PyTypeObject *)f)->tp_name);
        }
        return sym_const(t, r, out);
    }
    if (PyType_Check(f) && !strcmp(((PyTypeObject *)f)->tp_name, "torch.device") && nargs >= 1 &&
        nargs <= 2 && !kwnames && args[0].kind == V_CONST && (nargs == 1 || args[1].kind == V_CONST)) {
        /* torch.device("cuda:0") / torch.device("cuda", 0) of constants: a constant (GradScaler's
         * `device != torch.device("mps:0")`) */
        PyObject *r = nargs == 1 ? PyObject_CallOneArg(f, args[0].obj)
                                 : PyObject_CallFunctionObjArgs(f, args[0].obj, args[1].obj, NULL);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "torch.device() raised (eager will raise)");
        }
        return sym_const(t, r, out);
    }
    if (name && !strcmp(name, "abs") && nargs == 1 && !kwnames && args[0].kind == V_TENSOR &&
        f == PyDict_GetItemString(PyEval_GetBuiltins(), "abs")) {
        /* abs(tensor): Tensor.__abs__ (masking_utils' sliding windows: abs(q - kv) <= w) */
        if (sym_metap(t, args[0].val)->dtype == IC_BOOL)
            return sym_fail(t, "abs of a bool tensor (eager will raise)");
        return sym_tensor_out(t, ic_unary(t->g, IC_OP_ABS, args[0].val), out);
    }
    if (f == (PyObject *)&PyLong_Type && nargs == 1 && !kwnames && args[0].kind == V_TENSOR) {
        /* int(t): t.__int__(), a number known only for a 0-d int tensor the graph knows (a
         * constant built from numbers or shapes); any other is its data */
        long long k;
        if (sym_const_int_tensor(t, &args[0], &k)) {
            PyObject *r = PyLong_FromLongLong(k);
            return r ? sym_const(t, r, out) : -1;
        }
        return sym_fail(t, "int() of a tensor's value (data-dependent)");
    }
    if (sym_exc_simple_class(f)) { /* ValueError("..."): the exception, raised (sym_exc.c) */
        PyObject *tup = PyTuple_New(kwnames ? 0 : nargs);
        for (int i = 0; tup != NULL && i < nargs && !kwnames; i++) {
            if (args[i].kind != V_CONST || args[i].obj == NULL) {
                Py_DECREF(tup);
                return sym_fail(t, "%s(...) of a value that is not a constant", ((PyTypeObject *)f)->tp_name);
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        if (tup == NULL)
            return -1;
        if (kwnames) {
            Py_DECREF(tup);
            return sym_fail(t, "%s(...) with keyword arguments (eager will raise)", ((PyTypeObject *)f)->tp_name);
        }
        PyObject *r = PyObject_Call(f, tup, NULL);
        Py_DECREF(tup);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "%s(...) raised", ((PyTypeObject *)f)->tp_name);
        }
        return sym_const(t, r, out);
    }
    if (PyType_Check(f) && !strcmp(Py_TYPE(f)->tp_name, "torch.tensortype")) {
        int rc = legacy_tensor_type(t, f, args, nargs, kwnames, out);
        if (rc != 1)
            return rc;
    }
    if (PyType_Check(f))
        return sym_fail(t, "call of type %s not supported", ((PyTypeObject *)f)->tp_name);
    return sym_fail(t, "call to %s not supported", name ? name : Py_TYPE(f)->tp_name);
}

int sym_is_inspect_signature(PyObject *f) {
    static PyObject *sig;
    if (sig == NULL) {
        PyObject *m = PyImport_ImportModule("inspect");
        sig = m ? PyObject_GetAttrString(m, "signature") : NULL; /* kept for the process */
        Py_XDECREF(m);
        if (sig == NULL) {
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            return 0;
        }
    }
    return f == sig;
}
