/* sym_tfm.c — torch.overrides.TorchFunctionMode subclasses entered inside the trace
 * (`with Mode():`), as Dynamo traces them.
 *
 * Mode.__enter__/__exit__ are inlined like any method; their calls of
 * torch._C._push_on_torch_function_stack / _pop_torch_function_stack push and pop the mode
 * object on a stack of the trace (t->tfm), never on the real one. While modes are pushed,
 * the torch calls of the traced code go through the innermost one's Python
 * __torch_function__(func, types, args, kwargs), inlined with that mode taken off the stack
 * as torch does (its own calls dispatch to the next mode, or run): torch.* and F.* functions
 * and Tensor methods (sym_call), x[k] (Tensor.__getitem__), Python operators on tensors
 * (Tensor.__add__, __radd__, __lt__, __neg__, ...) and Tensor properties (Tensor.shape.__get__
 * & co). func is the object eager passes; calling it in the mode's body (a Tensor method
 * descriptor, slot or property getter) runs that operation (sym_tfm_tensor_callable).
 *
 * Anything else that touches a tensor while a mode is pushed fails the trace with a reason,
 * not silently bypassing the mode: builtins with tensor arguments (len, abs, ...), and any
 * graph value made outside a dispatched call (checked at each dispatch and at the pop). A
 * graph break while a mode is pushed is not resumable (symbolic.c: the rest would run
 * without the mode): the frame runs eagerly.
 *
 * Requires: torch._C's stack functions (known by identity); the mode object a V_OBJ whose
 *           class defines __torch_function__ as a Python function.
 * Keeps:    the real torch function mode stack untouched.
 */
#include "sym.h"
#include "sym_interp.h"
#include "ops_internal.h"

#include <string.h>

static PyObject *push_fn, *pop_fn, *tensor_type, *tensor_base, *s_tf;

static int init_once(void) {
    static int inited;
    if (inited)
        return push_fn ? 0 : -1;
    inited = 1;
    PyObject *c = PyImport_ImportModule("torch._C"), *torch = PyImport_ImportModule("torch");
    push_fn = c ? PyObject_GetAttrString(c, "_push_on_torch_function_stack") : NULL; /* kept */
    pop_fn = c ? PyObject_GetAttrString(c, "_pop_torch_function_stack") : NULL;
    tensor_base = c ? PyObject_GetAttrString(c, "TensorBase") : NULL;
    tensor_type = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
    s_tf = PyUnicode_InternFromString("__torch_function__");
    Py_XDECREF(c);
    Py_XDECREF(torch);
    if (push_fn == NULL || pop_fn == NULL || tensor_type == NULL || tensor_base == NULL || s_tf == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        Py_CLEAR(push_fn);
        return -1;
    }
    return 0;
}

/* graph values made while a mode is pushed, outside a dispatched call (but the inputs and
 * Python numbers read lazily): an operation that went around the mode */
static int undispatched(trace *t) {
    int n = ic_graph_num_values(t->g);
    for (ic_val v = t->tfm_n; t->tfm_active > 0 && v < n; v++) {
        ic_op op = ic_value_op(t->g, v);
        if (op != IC_OP_INPUT && op != IC_OP_SCALAR)
            return sym_fail(t, "%s inside a TorchFunctionMode block is not dispatched through its "
                               "__torch_function__ (not captured)", ic_op_name(op));
    }
    t->tfm_n = n;
    return 0;
}

/* (torch.Tensor,): the types eager passes with a property read (kept) */
PyObject *sym_tfm_tensor_types(void) {
    static PyObject *ty;
    if (ty == NULL && init_once() == 0)
        ty = PyTuple_Pack(1, tensor_type);
    return ty;
}

int sym_tfm_sync(trace *t) { return t->tfm_active > 0 ? undispatched(t) : 0; }

void sym_tfm_made_here(trace *t) {
    if (t->tfm_active > 0)
        t->tfm_n = ic_graph_num_values(t->g);
}

static int any_tensor(trace *t, const var *args, int n) {
    for (int i = 0; i < n; i++) {
        var v = args[i];
        sym_resolve(t, &v);
        if (v.kind == V_TENSOR)
            return 1;
        for (int j = 0; v.kind == V_SEQ && j < v.n; j++)
            if (v.items[j].kind == V_TENSOR)
                return 1;
    }
    return 0;
}

int sym_tfm_builtin(trace *t, PyObject *f, var *args, int nargs, PyObject *kwnames, var *out) {
    if (f == NULL || init_once() < 0 || (f != push_fn && f != pop_fn)) {
        /* isinstance, type, getattr (a property read dispatches itself) & co do not dispatch */
        const char *n = PyCFunction_Check(f) ? ((PyCFunctionObject *)f)->m_ml->ml_name : NULL;
        int plain = f == (PyObject *)&PyType_Type ||
                    (n && (!strcmp(n, "isinstance") || !strcmp(n, "issubclass") || !strcmp(n, "callable") ||
                           !strcmp(n, "id") || !strcmp(n, "getattr") || !strcmp(n, "hasattr")));
        if (t->tfm_active > 0 && !plain && any_tensor(t, args, nargs))
            return sym_fail(t, "%S of a tensor inside a TorchFunctionMode block (not dispatched through it)", f);
        return 1;
    }
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames))
        return sym_fail(t, "torch function mode stack call with keywords");
    if (f == push_fn) {
        if (nargs != 1 || args[0].kind != V_OBJ || args[0].obj == NULL)
            return sym_fail(t, "a torch function mode pushed that is not an object of the trace");
        PyObject *tf = _PyType_Lookup(Py_TYPE(args[0].obj), s_tf);
        if (tf == NULL || !PyFunction_Check(tf))
            return sym_fail(t, "a TorchFunctionMode whose __torch_function__ is not a Python function");
        if (t->ntfm >= (int)(sizeof t->tfm / sizeof t->tfm[0]))
            return sym_fail(t, "more than %d TorchFunctionModes entered", (int)(sizeof t->tfm / sizeof t->tfm[0]));
        if (t->tfm_active != t->ntfm)
            return sym_fail(t, "a TorchFunctionMode entered inside a __torch_function__ (not captured)");
        if (undispatched(t) < 0)
            return -1;
        t->tfm[t->ntfm++] = args[0];
        t->tfm_active = t->ntfm;
        t->tfm_n = ic_graph_num_values(t->g);
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (nargs != 0)
        return sym_fail(t, "_pop_torch_function_stack with arguments (eager raises)");
    if (t->ntfm == 0 || t->tfm_active != t->ntfm)
        return sym_fail(t, "a torch function mode popped that the trace did not push");
    if (undispatched(t) < 0)
        return -1;
    *out = t->tfm[--t->ntfm];
    t->tfm_active = t->ntfm;
    t->tfm_n = ic_graph_num_values(t->g);
    return 0;
}

int sym_tfm_dispatch(trace *t, PyObject *func, PyObject *types, const var *args, int npos, PyObject *kwnames,
                     var *out) {
    if (undispatched(t) < 0)
        return -1;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    var *mode = &t->tfm[t->tfm_active - 1];
    PyObject *tf = _PyType_Lookup(Py_TYPE(mode->obj), s_tf); /* the class is type-guarded */
    if (tf == NULL || !PyFunction_Check(tf))
        return sym_fail(t, "a TorchFunctionMode whose __torch_function__ is not a Python function");
    var *ca = sym_alloc(t, 4), *pa = sym_alloc(t, npos > 0 ? npos : 1), *kv = sym_alloc(t, nkw > 0 ? nkw : 1);
    if (ca == NULL || pa == NULL || kv == NULL)
        return -1;
    if (PyMethod_Check(func) || Py_TYPE(func) == &PyMethodDescr_Type || Py_TYPE(func) == &PyWrapperDescr_Type ||
        !strcmp(Py_TYPE(func)->tp_name, "method-wrapper")) {
        if (sym_const(t, Py_NewRef(func), &ca[0]) < 0)
            return -1;
    } else if (sym_wrap(t, func, -1, &ca[0]) < 0) {
        return -1;
    }
    if (sym_const(t, types ? Py_NewRef(types) : PyTuple_New(0), &ca[1]) < 0)
        return -1;
    for (int i = 0; i < npos; i++)
        pa[i] = args[i];
    ca[2] = sym_var(V_SEQ);
    ca[2].n = npos;
    ca[2].items = pa;
    for (int i = 0; i < nkw; i++)
        kv[i] = args[npos + i];
    if (nkw == 0) { /* eager passes kwargs=None */
        if (sym_const(t, Py_NewRef(Py_None), &ca[3]) < 0)
            return -1;
    } else {
        ca[3] = sym_var(V_DICT);
        ca[3].obj = sym_keep(t, Py_NewRef(kwnames));
        if (ca[3].obj == NULL)
            return -1;
        ca[3].items = kv;
        ca[3].n = nkw;
    }
    int saved = t->tfm_active;
    t->tfm_active = saved - 1; /* the mode is off the stack while its handler runs, as in torch */
    int s = sym_source(t, DH_S_CONST, -1, 0, tf); /* its globals are read through it */
    int rc = s < 0 ? -1 : sym_inline(t, tf, s, mode, ca, 4, NULL, out);
    t->tfm_active = saved;
    t->tfm_n = ic_graph_num_values(t->g);
    return rc;
}

/* a Tensor attribute that eager reads through the mode: a getset descriptor's __get__ (a
 * new reference), or NULL (no exception): a method or nothing */
PyObject *sym_tfm_property(PyObject *name) {
    if (init_once() < 0 || name == NULL)
        return NULL;
    PyObject *d = _PyType_Lookup((PyTypeObject *)tensor_type, name);
    if (d == NULL || !(Py_TYPE(d) == &PyGetSetDescr_Type || Py_TYPE(d) == &PyProperty_Type))
        return NULL;
    PyObject *g = PyObject_GetAttrString(d, "__get__");
    if (g == NULL)
        (void)tc_clear_expected(PyExc_Exception);
    return g;
}

/* the Tensor method descriptor of name (borrowed), or NULL */
PyObject *sym_tfm_method(PyObject *name) {
    if (init_once() < 0 || name == NULL)
        return NULL;
    return _PyType_Lookup((PyTypeObject *)tensor_type, name);
}

/* a Python operator on a tensor (the operator module's name; reflected: the tensor is the
 * right operand) through the mode, with the function and types eager passes (torchc/_tfm.py
 * asks torch); args: the tensor first */
int sym_tfm_operator(trace *t, const char *opname, int reflected, const var *args, int n, var *out) {
    static PyObject *probe;
    if (probe == NULL) {
        PyObject *m = PyImport_ImportModule("torchc._tfm");
        probe = m ? PyObject_GetAttrString(m, "operator_func") : NULL; /* kept */
        Py_XDECREF(m);
        if (probe == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "torchc._tfm not importable");
        }
    }
    PyObject *r = PyObject_CallFunction(probe, "si", opname, reflected);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "operator %s on a tensor inside a TorchFunctionMode block: torch's function unknown", opname);
    }
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) {
        Py_DECREF(r);
        return sym_fail(t, "operator %s on a tensor inside a TorchFunctionMode block: not dispatched by torch", opname);
    }
    if (sym_keep(t, r) == NULL)
        return -1;
    return sym_tfm_dispatch(t, PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1), args, n, NULL, out);
}

static const struct {
    const char *name;
    int nb;
} BINOPS[] = {{"add", 0}, {"and", 1}, {"floordiv", 2}, {"lshift", 3}, {"matmul", 4}, {"mul", 5}, {"mod", 6},
              {"or", 7}, {"pow", 8}, {"rshift", 9}, {"sub", 10}, {"truediv", 11}, {"xor", 12}};
static const char *CMPS[6] = {"lt", "le", "eq", "ne", "gt", "ge"};

/* the Python operator eager runs as Tensor.__<name>__ (nb: BINARY_OP's oparg; cmp: Py_LT...),
 * for dispatch: the dunder's name into buf */
const char *sym_tfm_binop_name(int nb, char *buf, size_t n) {
    int inplace = nb >= 13, base = inplace ? nb - 13 : nb;
    for (size_t i = 0; i < sizeof BINOPS / sizeof BINOPS[0]; i++)
        if (BINOPS[i].nb == base) { /* operator.add / and_ / iand */
            int kw = !strcmp(BINOPS[i].name, "and") || !strcmp(BINOPS[i].name, "or");
            snprintf(buf, n, "%s%s%s", inplace ? "i" : "", BINOPS[i].name, kw && !inplace ? "_" : "");
            return buf;
        }
    return NULL;
}

const char *sym_tfm_cmp_name(int cmp) { return cmp >= 0 && cmp < 6 ? CMPS[cmp] : NULL; }

/* func(*args) in a mode's body where func is a Tensor method descriptor, slot, or property
 * getter: that operation on args[0]. 1: func is none of them. */
int sym_tfm_tensor_callable(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    PyObject *f = fn->obj;
    if (f == NULL || fn->kind != V_CONST || init_once() < 0) /* (as sym_attr.c and the dispatch hold them) */
        return 1;
    PyObject *owner = NULL, *name = NULL;
    int getter = 0;
    if (Py_TYPE(f) == &PyMethodDescr_Type || Py_TYPE(f) == &PyWrapperDescr_Type) {
        owner = (PyObject *)PyDescr_TYPE(f);
        name = PyDescr_NAME(f);
    } else if (!strcmp(Py_TYPE(f)->tp_name, "method-wrapper")) {
        PyObject *self = PyObject_GetAttrString(f, "__self__"); /* the descriptor */
        if (self == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
        Py_DECREF(self); /* alive: the wrapper holds it */
        if (Py_TYPE(self) != &PyGetSetDescr_Type)
            return 1;
        owner = (PyObject *)PyDescr_TYPE(self);
        name = PyDescr_NAME(self);
        getter = 1;
    } else {
        return 1;
    }
    if (owner != tensor_base && owner != tensor_type)
        return 1;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    if (npos < 1 || args[0].kind != V_TENSOR)
        return sym_fail(t, "Tensor.%U called without a tensor", name);
    const char *n = PyUnicode_AsUTF8(name);
    if (n == NULL)
        return -1;
    if (getter)
        return npos == 1 && !nkw ? sym_tensor_attr(t, &args[0], name, out)
                                 : sym_fail(t, "Tensor.%U.__get__ with arguments", name);
    if (!strcmp(n, "__getitem__"))
        return npos == 2 && !nkw ? sym_tensor_index(t, &args[0], &args[1], out)
                                 : sym_fail(t, "Tensor.__getitem__ with %d arguments", npos);
    if (!strcmp(n, "__neg__"))
        return sym_neg(t, &args[0], out);
    size_t L = strlen(n);
    if (L > 4 && n[0] == '_' && n[1] == '_' && n[L - 1] == '_' && n[L - 2] == '_' && npos == 2 && !nkw) {
        char core[32];
        snprintf(core, sizeof core, "%.*s", (int)(L - 4), n + 2);
        for (int c = 0; c < 6; c++)
            if (!strcmp(core, CMPS[c]))
                return sym_compare(t, c, &args[0], &args[1], out);
        int refl = core[0] == 'r', inpl = core[0] == 'i';
        for (size_t i = 0; i < sizeof BINOPS / sizeof BINOPS[0]; i++) {
            if (!strcmp(core, BINOPS[i].name))
                return sym_binary(t, BINOPS[i].nb, &args[0], &args[1], out);
            if ((refl || inpl) && !strcmp(core + 1, BINOPS[i].name))
                return refl ? sym_binary(t, BINOPS[i].nb, &args[1], &args[0], out)
                            : sym_binary(t, BINOPS[i].nb + 13, &args[0], &args[1], out);
        }
    }
    if (n[0] == '_' && n[1] == '_')
        return 1; /* another slot: not this file's */
    /* a method: args[0].name(*args[1:]) */
    var m = sym_var(V_METHOD);
    var *self = sym_alloc(t, 1);
    if (self == NULL)
        return -1;
    *self = args[0];
    m.items = self;
    m.obj = name;
    return sym_call(t, &m, args + 1, nargs - 1, kwnames, out);
}

/* torch.utils._device.DeviceContext around the compiled call (set_default_device, `with
 * torch.device(d)`; eval_frame.c guards the entry on it, dh_tfm_state): a factory of torch's
 * list (_device_constructors) called without device= or with device=None gets the context's
 * device, as its __torch_function__ does. Reached where the call runs (no mode of the trace
 * in front of it). own: the torch function that torchc's own fast path of an op stands for
 * (dh_alias_op), or NULL. 1 when fn is not such a call. */
int sym_tfm_device_ctx(trace *t, const var *fn, PyObject *own, var *args, int nargs, PyObject *kwnames, var *out) {
    static PyObject *ctors; /* kept */
    if (t->devctx == NULL || t->tfm_active > 0 || fn->kind != V_FUNC || fn->obj == NULL)
        return 1;
    if (ctors == NULL) {
        PyObject *m = PyImport_ImportModule("torch.utils._device");
        ctors = m ? PyObject_CallMethod(m, "_device_constructors", NULL) : NULL;
        Py_XDECREF(m);
        if (ctors == NULL || !PyAnySet_Check(ctors)) {
            Py_CLEAR(ctors);
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "torch.utils._device._device_constructors() unavailable (a torch.device context)");
        }
    }
    int in = PySet_Contains(ctors, own ? own : fn->obj);
    if (in < 0)
        (void)tc_clear_expected(PyExc_Exception); /* unhashable: not a factory */
    if (in <= 0)
        return 1;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, di = -1;
    for (int k = 0; k < nkw; k++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "device") == 0)
            di = nargs - nkw + k;
    if (di >= 0) {
        var v = args[di];
        sym_resolve(t, &v);
        if (!sym_is_none(&v))
            return 1; /* its own device */
    }
    var *a2 = sym_alloc(t, nargs + 1);
    if (a2 == NULL)
        return -1;
    memcpy(a2, args, sizeof(var) * (size_t)nargs);
    PyObject *kw2 = NULL;
    if (di < 0) { /* kwnames + ("device",) */
        kw2 = PyTuple_New(nkw + 1);
        if (kw2 == NULL)
            return -1;
        for (int k = 0; k < nkw; k++)
            PyTuple_SET_ITEM(kw2, k, Py_NewRef(PyTuple_GET_ITEM(kwnames, k)));
        PyObject *name = PyUnicode_FromString("device");
        if (name == NULL) {
            Py_DECREF(kw2);
            return -1;
        }
        PyTuple_SET_ITEM(kw2, nkw, name);
        if (sym_keep(t, kw2) == NULL)
            return -1;
        di = nargs;
    }
    if (sym_const(t, Py_NewRef(t->devctx), &a2[di]) < 0)
        return -1;
    return sym_call(t, fn, a2, di == nargs ? nargs + 1 : nargs, kw2 ? kw2 : kwnames, out);
}

/* torch.get_default_device() with no mode of the trace pushed: what it answers now (it reads
 * the real mode stack, which every entry guards, DH_G_TFM_STACK), a constant. 1 when f is
 * not it. */
int sym_tfm_default_device(trace *t, PyObject *f, var *out) {
    static PyObject *gdd; /* kept */
    if (gdd == NULL) {
        PyObject *torch = PyImport_ImportModule("torch");
        gdd = torch ? PyObject_GetAttrString(torch, "get_default_device") : NULL;
        Py_XDECREF(torch);
        if (gdd == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
    }
    if (f != gdd)
        return 1;
    PyObject *d = PyObject_CallNoArgs(gdd);
    if (d == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "torch.get_default_device() raised (eager raises)");
    }
    return sym_const(t, d, out);
}
