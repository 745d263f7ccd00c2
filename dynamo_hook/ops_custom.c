/* ops_custom.c — custom operators as graph externs: calls of torch.ops.<ns>.<op> (an
 * OpOverloadPacket or OpOverload) and of ops made with torch.library.custom_op (CustomOpDef)
 * or torch.library.define + impl. Each call is one CUSTOM extern keyed by a record of the
 * call (qualified name, constant arguments, output metas) that torchc/_custom_ops.py keeps:
 * its plan() binds the arguments to the op's schema and runs the op on meta tensors (the
 * registered fake impl answers), its run() calls the op through the dispatcher when the
 * graph runs. A tensor the schema marks written (Tensor(a!)) is rebound to the extern's
 * output, so the update is eager's. Not captured, with a reason: no fake impl, outputs that
 * alias inputs, non-tensor results, symbolic sizes, more than four tensor operands, tensors
 * that require grad whose op has no formula of torch.library.register_autograd (with one, the
 * call is traced as an autograd.Function of it: autograd_call), autocast. */
#include "ops_internal.h"

#define NOPND IC_EXT_MAXIN /* tensor operands of an extern node (ic.h) */

static int64_t numel_of(const ic_meta *m) {
    int64_t n = 1;
    for (int i = 0; i < m->ndim; i++)
        n *= m->sizes[i];
    return n;
}

static PyObject *plan_fn;      /* torchc._custom_ops.plan, kept for the process */
static PyObject *slot_type;    /* torchc._custom_ops.Slot */
static PyObject *op_types[3];  /* OpOverloadPacket, OpOverload, CustomOpDef (once loaded) */

/* the types, from modules torch has loaded (an op object can exist only then) */
static void find_types(void) {
    static const char *mods[3] = {"torch._ops", "torch._ops", "torch._library.custom_ops"};
    static const char *names[3] = {"OpOverloadPacket", "OpOverload", "CustomOpDef"};
    for (int i = 0; i < 3; i++) {
        if (op_types[i] != NULL)
            continue;
        op_types[i] = dh_loaded_attr(mods[i], names[i]); /* not loaded (yet): no such object exists */
        if (op_types[i] != NULL && !PyType_Check(op_types[i]))
            Py_CLEAR(op_types[i]);
    }
}

int sym_is_custom_op(PyObject *o) {
    if (PyType_Check(o) || PyFunction_Check(o) || PyCFunction_Check(o))
        return 0;
    find_types();
    for (int i = 0; i < 3; i++)
        if (op_types[i] != NULL && PyObject_TypeCheck(o, (PyTypeObject *)op_types[i]))
            return 1;
    return 0;
}

static int load_helper(trace *t) {
    if (plan_fn != NULL)
        return 0;
    PyObject *m = PyImport_ImportModule("torchc._custom_ops");
    PyObject *f = m ? PyObject_GetAttrString(m, "plan") : NULL;
    PyObject *s = m ? PyObject_GetAttrString(m, "Slot") : NULL;
    Py_XDECREF(m);
    if (f == NULL || s == NULL) {
        Py_XDECREF(f);
        Py_XDECREF(s);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return sym_fail(t, "custom ops: torchc._custom_ops not importable");
    }
    plan_fn = f;
    slot_type = s;
    return 0;
}

typedef sym_opnds opnds; /* the call's tensor operands so far (ops_internal.h) */

static PyObject *int_tuple(const int64_t *x, int n) {
    PyObject *r = PyTuple_New(n);
    for (int i = 0; r && i < n; i++) {
        PyObject *v = PyLong_FromLongLong(x[i]);
        if (v == NULL) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, i, v);
    }
    return r;
}

/* a traced argument as plan() reads it (tensors as Slot(i)); NULL: t failed or no memory */
PyObject *sym_custom_arg(trace *t, const var *a, opnds *o) {
    if (load_helper(t) < 0)
        return NULL;
    switch (a->kind) {
    case V_CONST:
        return Py_NewRef(a->obj);
    case V_TENSOR: {
        if (o->n == NOPND) {
            sym_fail(t, "custom op with more than %d tensor operands not supported yet", NOPND);
            return NULL;
        }
        const ic_meta m = *sym_metap(t, a->val);
        if (m.dyn) {
            sym_fail(t, "custom op on symbolic sizes not supported yet");
            return NULL;
        }
        int64_t st[IC_MAX_DIMS];
        if (!sym_eager_strides(t, a->val, st)) {
            int64_t acc = 1;
            for (int i = m.ndim - 1; i >= 0; i--) {
                st[i] = acc;
                acc *= m.sizes[i] > 1 ? m.sizes[i] : 1;
            }
        }
        PyObject *sz = int_tuple(m.sizes, m.ndim), *sd = int_tuple(st, m.ndim);
        PyObject *meta = sz && sd ? PyTuple_Pack(3, sym_dtype_object(m.dtype), sz, sd) : NULL;
        Py_XDECREF(sz);
        Py_XDECREF(sd);
        int rc = meta ? PyList_Append(o->metas, meta) : -1;
        Py_XDECREF(meta);
        if (rc < 0)
            return NULL;
        o->v[o->n] = a;
        return PyObject_CallFunction(slot_type, "i", o->n++);
    }
    case V_SEQ: {
        PyObject *r = a->is_list ? PyList_New(a->n) : PyTuple_New(a->n);
        for (int i = 0; r && i < a->n; i++) {
            PyObject *x = sym_custom_arg(t, &a->items[i], o);
            if (x == NULL) {
                Py_CLEAR(r);
                break;
            }
            if (a->is_list)
                PyList_SET_ITEM(r, i, x);
            else
                PyTuple_SET_ITEM(r, i, x);
        }
        return r;
    }
    case V_SYM:
        sym_fail(t, "custom op with a symbolic int argument not supported yet");
        return NULL;
    default:
        sym_fail(t, "custom op argument that is not a tensor, a constant or a sequence of them");
        return NULL;
    }
}

/* (dtype, sizes, strides) of a planned output */
static int out_meta(trace *t, PyObject *desc, ic_meta *m, int64_t *st) {
    memset(m, 0, sizeof *m);
    PyObject *sz = PyTuple_Check(desc) && PyTuple_GET_SIZE(desc) == 3 ? PyTuple_GET_ITEM(desc, 1) : NULL;
    PyObject *sd = sz ? PyTuple_GET_ITEM(desc, 2) : NULL;
    int dt = sz ? sym_dtype_from_object(PyTuple_GET_ITEM(desc, 0)) : -1;
    if (dt < 0)
        return sym_fail(t, "custom op output of a dtype torchc graphs do not hold");
    if (!PyTuple_Check(sz) || !PyTuple_Check(sd) || PyTuple_GET_SIZE(sz) > IC_MAX_DIMS ||
        PyTuple_GET_SIZE(sd) != PyTuple_GET_SIZE(sz))
        return sym_fail(t, "custom op output of rank > %d", IC_MAX_DIMS);
    m->dtype = (ic_dtype)dt;
    m->ndim = (int)PyTuple_GET_SIZE(sz);
    for (int i = 0; i < m->ndim; i++) {
        m->sizes[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(sz, i));
        st[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(sd, i));
    }
    if (PyErr_Occurred()) {
        (void)tc_clear_expected(PyExc_OverflowError, PyExc_TypeError);
        return sym_fail(t, "custom op output sizes are not ints");
    }
    return 0;
}

/* the extern for the planned call: written operand w (-1: none), outputs outs */
int sym_custom_build(trace *t, const opnds *o, long long key, int w, PyObject *outs, int islist, var *out) {
    ic_val in[NOPND];
    int64_t prm[IC_EXT_MAXP];
    for (int i = 0; i < o->n; i++) {
        var r = *o->v[i];
        sym_resolve(t, &r);
        in[i] = r.val;
    }
    prm[0] = key;
    prm[1] = w + 1;
    if (w >= 0) { /* the written tensor's new value; the op runs on a copy with eager's strides */
        const ic_meta m = *sym_metap(t, in[w]);
        int64_t st[IC_MAX_DIMS];
        if (4 + 2 * m.ndim > IC_EXT_MAXP)
            return sym_fail(t, "custom op writing a %d-d tensor not supported yet", m.ndim);
        if (!sym_eager_strides(t, in[w], st))
            return sym_fail(t, "custom op writing a tensor whose strides are unknown");
        prm[2] = m.dtype;
        prm[3] = m.ndim;
        for (int i = 0; i < m.ndim; i++) {
            prm[4 + i] = m.sizes[i];
            prm[4 + m.ndim + i] = st[i];
        }
        ic_val v = ic_extern(G, IC_EXT_CUSTOM, o->n, in, 4 + 2 * m.ndim, prm, 1, 1);
        if (v < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "custom op: graph builder failed");
        if (sym_mutate(t, o->v[w], v) < 0)
            return -1;
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    Py_ssize_t nout = PyList_GET_SIZE(outs);
    ic_meta m[16];
    int64_t st[IC_MAX_DIMS];
    if (nout > (Py_ssize_t)(sizeof m / sizeof m[0]))
        return sym_fail(t, "custom op with more than %d outputs not supported yet", (int)(sizeof m / sizeof m[0]));
    if (nout == 1 && !islist) {
        if (out_meta(t, PyList_GET_ITEM(outs, 0), &m[0], st) < 0)
            return -1;
        if (4 + m[0].ndim > IC_EXT_MAXP)
            return sym_fail(t, "custom op output of rank %d not supported yet", m[0].ndim);
        prm[2] = m[0].dtype;
        prm[3] = m[0].ndim;
        for (int i = 0; i < m[0].ndim; i++)
            prm[4 + i] = m[0].sizes[i];
        ic_val v = ic_extern(G, IC_EXT_CUSTOM, o->n, in, 4 + m[0].ndim, prm, 1, 1);
        if (v >= 0)
            (void)ic_value_set_strides(G, v, st); /* the fake impl's: eager's layout */
        return sym_tensor_out(t, v, out);
    }
    /* several outputs of one dtype: one flat buffer, each a slice of it (with the fake
     * impl's strides as eager's layout) */
    static int64_t sts[16][IC_MAX_DIMS]; /* under the GIL */
    int64_t total = 0;
    for (Py_ssize_t k = 0; k < nout; k++) {
        if (out_meta(t, PyList_GET_ITEM(outs, k), &m[k], sts[k]) < 0)
            return -1;
        total += numel_of(&m[k]);
    }
    prm[2] = nout ? m[0].dtype : IC_F32;
    prm[3] = 1;
    prm[4] = total;
    ic_val flat = ic_extern(G, IC_EXT_CUSTOM, o->n, in, 5, prm, 1, 1);
    if (flat < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "custom op: graph builder failed");
    var *items = sym_alloc(t, (int)nout);
    if (items == NULL)
        return -1;
    int64_t off = 0;
    for (Py_ssize_t k = 0; k < nout; k++) {
        const int64_t n = numel_of(&m[k]);
        ic_val v = ic_reshape(G, ic_slice(G, flat, 0, off, off + n, 1), m[k].ndim, m[k].sizes);
        off += n;
        if (v >= 0)
            (void)ic_value_set_strides(G, v, sts[k]);
        if (sym_tensor_out(t, v, &items[k]) < 0)
            return -1;
    }
    *out = sym_var(V_SEQ);
    out->is_list = islist;
    out->n = (int)nout;
    out->items = items;
    return 0;
}

/* the call's arguments (sym_custom_arg each: tensors as metas, in o) into pa (the
 * positional ones, a tuple of their number) and kw (the keywords); -1 with an exception */
int sym_custom_pack(trace *t, const var *args, int nargs, PyObject *kwnames, opnds *o, PyObject *pa, PyObject *kw) {
    int npos = nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0);
    for (int i = 0; i < nargs; i++) {
        PyObject *x = sym_custom_arg(t, &args[i], o);
        if (x == NULL)
            return -1;
        if (i < npos) {
            PyTuple_SET_ITEM(pa, i, x);
        } else {
            int e = PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i - npos), x);
            Py_DECREF(x);
            if (e < 0)
                return -1;
        }
    }
    return 0;
}

/* fn is aten::index (torch.ops.aten.index or its .Tensor overload) */
static int is_aten_index(PyObject *fn) {
    static PyObject *ops[2]; /* kept for the process */
    if (ops[0] == NULL) {
        PyObject *torch = PyImport_ImportModule("torch");
        PyObject *o = torch ? PyObject_GetAttrString(torch, "ops") : NULL;
        PyObject *a = o ? PyObject_GetAttrString(o, "aten") : NULL;
        ops[0] = a ? PyObject_GetAttrString(a, "index") : NULL;
        ops[1] = ops[0] ? PyObject_GetAttrString(ops[0], "Tensor") : NULL;
        Py_XDECREF(torch);
        Py_XDECREF(o);
        Py_XDECREF(a);
        if (ops[1] == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            Py_CLEAR(ops[0]);
            return 0;
        }
    }
    return fn == ops[0] || fn == ops[1];
}

/* aten::index(x, indices) with a list of tensors and Nones is x[indices] (a None: the dim
 * taken whole), eager's advanced indexing (same kernel, same result strides) - but for one
 * 0-d index of a tensor of 2 or more dims, which Python indexing treats as an int (other
 * strides): left to the extern. Captured as indexing (the index checks, vmap's batching rule
 * of an index, gradients); 1: not this form. */
static int aten_index_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (kwnames != NULL || nargs != 2 || !is_aten_index(fn->obj))
        return 1;
    var x = args[0], l = args[1];
    sym_resolve(t, &x);
    sym_resolve(t, &l);
    if (x.kind != V_TENSOR || l.kind != V_SEQ || l.obj != NULL || l.n < 1)
        return 1;
    var *items = sym_alloc(t, l.n);
    if (items == NULL)
        return -1;
    for (int i = 0; i < l.n; i++) {
        var it = l.items[i];
        sym_resolve(t, &it);
        if (sym_is_none(&it)) {
            if (sym_const(t, PySlice_New(NULL, NULL, NULL), &it) < 0)
                return -1;
        } else if (it.kind != V_TENSOR) {
            return 1;
        } else if (l.n == 1 && sym_metap(t, it.val)->ndim == 0 && sym_metap(t, x.val)->ndim >= 2) {
            return 1;
        }
        items[i] = it;
    }
    var key = sym_var(V_SEQ);
    key.n = l.n;
    key.items = items;
    return sym_tensor_index(t, &x, &key, out);
}

/* A call on tensors that require grad: traced as a call of torchc._custom_ops.autograd_call's
 * function (an autograd.Function of the op's registered formula: the op captured in its
 * forward, the registered backward traced into the backward graph), else left to eager. */
static int autograd_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    static PyObject *helper;
    if (helper == NULL) {
        PyObject *m = PyImport_ImportModule("torchc._custom_ops");
        helper = m ? PyObject_GetAttrString(m, "autograd_call") : NULL;
        Py_XDECREF(m);
        if (helper == NULL)
            return tc_clear_expected(PyExc_ImportError, PyExc_AttributeError) < 0
                       ? -1
                       : sym_fail(t, "custom ops: torchc._custom_ops.autograd_call not importable");
    }
    PyObject *call = PyObject_CallFunction(helper, "OiO", fn->obj, nargs, kwnames ? kwnames : Py_None);
    if (call == NULL)
        return tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "custom op %R: autograd_call raised", fn->obj);
    if (call == Py_None) {
        Py_DECREF(call);
        return sym_fail(t, "custom op %R on tensors that require grad: no autograd formula of torch.library's "
                           "register_autograd to capture (or keyword-only / default arguments)", fn->obj);
    }
    /* kept alive by the helper's table (one function per op) */
    int s = sym_source(t, DH_S_CONST, -1, 0, call);
    int rc = s < 0 ? -1 : sym_inline(t, call, s, NULL, args, nargs, kwnames, out);
    Py_DECREF(call);
    return rc;
}

int sym_custom_op_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    int irc = aten_index_call(t, fn, args, nargs, kwnames, out);
    if (irc != 1)
        return irc;
    if (load_helper(t) < 0)
        return -1;
    if (dh_tl_autocast)
        return sym_fail(t, "custom op %R under autocast not captured", fn->obj);
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw, rc = -1;
    opnds o = {.n = 0, .metas = PyList_New(0)};
    PyObject *pa = PyTuple_New(npos), *kw = PyDict_New(), *res = NULL;
    if (o.metas == NULL || pa == NULL || kw == NULL)
        goto done;
    if (sym_custom_pack(t, args, nargs, kwnames, &o, pa, kw) < 0)
        goto done;
    for (int i = 0; i < o.n; i++)
        if (sym_value_requires_grad(t, o.v[i]->val)) {
            rc = autograd_call(t, fn, args, nargs, kwnames, out);
            goto done;
        }
    res = PyObject_CallFunctionObjArgs(plan_fn, fn->obj, pa, kw, o.metas, NULL);
    if (res == NULL) {
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "custom op %R: planning raised", fn->obj);
        goto done;
    }
    if (PyUnicode_Check(res)) {
        rc = sym_fail(t, "%U", res);
        goto done;
    }
    long long key;
    int w, islist;
    PyObject *name, *outs;
    if (!PyArg_ParseTuple(res, "LUO!ip", &key, &name, &PyList_Type, &outs, &w, &islist)) {
        rc = tc_clear_expected(PyExc_TypeError) < 0 ? -1 : sym_fail(t, "custom op: bad plan");
        goto done;
    }
    if (w >= 0) { /* eager updates the tensor the op is given: no other operand may share it */
        if (w >= o.n) {
            rc = sym_fail(t, "custom op: bad plan");
            goto done;
        }
        for (int i = 0; i < o.n; i++)
            if (i != w && o.v[i]->oid > 0 && o.v[w]->oid > 0 && sym_alias_same(t, o.v[i]->oid, o.v[w]->oid)) {
                rc = sym_fail(t, "custom op %U writes a tensor another operand shares (left to eager)", name);
                goto done;
            }
    }
    rc = sym_custom_build(t, &o, key, w, outs, islist, out);
done:
    Py_XDECREF(o.metas);
    Py_XDECREF(pa);
    Py_XDECREF(kw);
    Py_XDECREF(res);
    return rc;
}

PyObject *dh_custom_op_run(PyObject *key, PyObject *ins, PyObject *out, PyObject *strides) {
    static PyObject *run_fn; /* torchc._custom_ops.run, kept for the process */
    if (run_fn == NULL) {
        PyObject *m = PyImport_ImportModule("torchc._custom_ops");
        run_fn = m ? PyObject_GetAttrString(m, "run") : NULL;
        Py_XDECREF(m);
        if (run_fn == NULL)
            return NULL;
    }
    dh_tl_busy++;
    PyObject *r = PyObject_CallFunctionObjArgs(run_fn, key, ins, out, strides, NULL);
    dh_tl_busy--;
    return r;
}
