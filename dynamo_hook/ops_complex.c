/* ops_complex.c — complex tensors in captured graphs (issues 21, 23).
 *
 * A complex64/complex128 tensor is a graph value like any other (graph inputs, dtype
 * IC_C64/IC_C128), but no kernel ever touches one: every call that reads or makes a
 * complex value is one CUSTOM extern, an ATen call made when the graph runs
 * (torchc/_complex_ops.py plans it on meta tensors and registers it with the custom-op
 * registry, ops_custom.c builds the node). graph.c refuses any other node with a complex
 * operand or result, so complex stays out of codegen by construction.
 *
 * Entry points (each asks sym_complex_call before its own handler): calls of torch
 * functions, Tensor methods and builtins (ops_table.c sym_call), Python operators
 * (ops_pyops.c), indexing (sym_containers.c), tensor attributes such as .real, .imag, .mH
 * (ops_table.c sym_tensor_attr). A torch function with no lowering (torch.fft.*,
 * torch.polar, torch.view_as_complex, ...) is planned too: it is captured when its meta
 * result is complex.
 *
 * Gradients: a complex extern on a value that requires grad is differentiated by the graph's
 * autograd (inductor_c/graph/vjp_extern.c vjp_custom: one gradient extern per operand, ATen's
 * derivative of the call); in-place updates of complex tensors, or of the copies that stand
 * for eager's views into them, are left to eager.
 */
#include "ops_internal.h"

static PyObject *plan_fn; /* torchc._complex_ops.plan, kept for the process */

static int load(trace *t) {
    if (plan_fn != NULL)
        return 0;
    PyObject *m = PyImport_ImportModule("torchc._complex_ops");
    plan_fn = m ? PyObject_GetAttrString(m, "plan") : NULL;
    Py_XDECREF(m);
    if (plan_fn == NULL) {
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return sym_fail(t, "complex ops: torchc._complex_ops not importable");
    }
    return 0;
}

static int cx_const(PyObject *o, int depth) {
    if (PyComplex_Check(o))
        return 1;
    int dt = sym_dtype_from_object(o);
    if (dt >= 0)
        return ic_dtype_is_complex((ic_dtype)dt);
    if (PyTuple_Check(o) && depth < 4)
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            if (cx_const(PyTuple_GET_ITEM(o, i), depth + 1))
                return 1;
    return 0;
}

/* 1: v is (or holds) a complex tensor, a complex number or a complex dtype */
int sym_complex_involved(trace *t, const var *v_in) {
    var v = *v_in;
    switch (v.kind) {
    case V_TENSOR: {
        sym_resolve(t, &v);
        const ic_meta *m = v.val >= 0 ? ic_value_meta(G, v.val) : NULL;
        return m != NULL && ic_dtype_is_complex(m->dtype);
    }
    case V_CONST:
        return v.obj != NULL && cx_const(v.obj, 0);
    case V_SEQ:
        for (int i = 0; i < v.n; i++)
            if (sym_complex_involved(t, &v.items[i]))
                return 1;
        return 0;
    default:
        return 0;
    }
}

/* 1: sym_custom_arg takes v (a constant, a tensor of static sizes, a sequence of them);
 * *ntens counts its tensors (an extern takes IC_EXT_MAXIN at most) */
static int plannable(trace *t, const var *v, int depth, int *ntens) {
    switch (v->kind) {
    case V_CONST:
        return 1;
    case V_TENSOR: {
        var r = *v;
        sym_resolve(t, &r);
        const ic_meta *m = r.val >= 0 ? ic_value_meta(G, r.val) : NULL;
        return m != NULL && !m->dyn && ++*ntens <= IC_EXT_MAXIN;
    }
    case V_SEQ:
        for (int i = 0; i < v->n; i++)
            if (depth > 4 || !plannable(t, &v->items[i], depth + 1, ntens))
                return 0;
        return 1;
    default:
        return 0;
    }
}

/* out (a copy) stands for eager's view of base: aliases, so that an in-place update of
 * either is refused (alias_fn.c does not know how to replay these views); with desc (method
 * name, args) the view is rebuilt on the real base where it is returned or live at a graph
 * break (sym_output.c), else it is remembered as a copy (sym_complex_view_copy) */
static int mark_view(trace *t, const var *base_in, var *out, PyObject *desc) {
    var base = *base_in;
    sym_resolve(t, &base);
    sym_alias_objects(t, out->oid, base.oid);
    if (desc != Py_None && PyTuple_Check(desc) && PyTuple_GET_SIZE(desc) == 2) {
        PyObject *d = Py_BuildValue("(iOO)", base.val, PyTuple_GET_ITEM(desc, 0), PyTuple_GET_ITEM(desc, 1));
        if (d == NULL || sym_keep(t, d) == NULL)
            return -1;
        sym_set_view_desc(t, out->val, d);
        sym_mark_view(t, out->val, base.val);
        return 0;
    }
    if (t->ncxv == t->capcxv) {
        int cap = t->capcxv ? 2 * t->capcxv : 16;
        var *nv = sym_alloc(t, cap); /* trace lifetime */
        if (nv == NULL)
            return -1;
        if (t->ncxv)
            memcpy(nv, t->cxv, (size_t)t->ncxv * sizeof *nv);
        t->cxv = nv;
        t->capcxv = cap;
    }
    t->cxv[t->ncxv++] = *out;
    return 0;
}

/* the extern of one planned output: (key, name, outs, view, desc) */
static int build_one(trace *t, const sym_opnds *o, PyObject *plan, var *out) {
    long long key;
    int view;
    PyObject *name, *outs, *desc;
    if (!PyTuple_Check(plan) || !PyArg_ParseTuple(plan, "LUO!iO", &key, &name, &PyList_Type, &outs, &view, &desc) ||
        view >= o->n)
        return tc_clear_expected(PyExc_TypeError) < 0 ? -1 : sym_fail(t, "complex op: bad plan");
    int rc = sym_custom_build(t, o, key, -1, outs, 0, out);
    if (rc == 0 && view >= 0 && out->kind == V_TENSOR && o->v[view]->kind == V_TENSOR)
        rc = mark_view(t, o->v[view], out, desc);
    return rc;
}

int sym_complex_view_copy(trace *t, const var *v) {
    if (v->kind != V_TENSOR || v->oid <= 0 || v->oid > t->nobj || !t->obj_aliased[v->oid] || t->ncxv == 0)
        return 0;
    ic_val x = v->val;
    for (int depth = 0; x >= 0 && depth < 32; depth++) { /* v, or the base of a view chain */
        for (int i = 0; i < t->ncxv; i++)
            if (t->cxv[i].val == x)
                return 1;
        PyObject *d = x < t->capvals ? t->view_desc[x] : NULL;
        if (d == NULL)
            return 0;
        x = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(d, 0));
    }
    return 0;
}

/* x.name(args...) traced as the tensor method it is (the table's or ops_complex.c's) */
static int method_call(trace *t, const var *x, const char *name, var *args, int nargs, var *out) {
    PyObject *n = PyUnicode_InternFromString(name);
    var m;
    if (n == NULL || sym_keep(t, n) == NULL || sym_method(t, x, n, -1, &m) < 0)
        return -1;
    return sym_call(t, &m, args, nargs, NULL, out);
}

/* 1: eager's value of v carries the conjugate bit (x.conj() of a complex x, lazily: a view
 * whose reads conjugate), through the view ops taken of it since; a resolve_conj() (a new
 * tensor in eager) or a value no view made clears it. The graph's buffers hold the
 * conjugated values (a planned call's result is copied out resolved); the bit decides only
 * what eager refuses or answers about it (view(dtype), view_as_real, is_conj) */
static int conj_view(trace *t, const var *x_in) {
    var x = *x_in;
    sym_resolve(t, &x);
    int conj = 0;
    for (ic_val v = x.kind == V_TENSOR ? x.val : -1, depth = 0; v >= 0 && v < t->capvals && depth < 64; depth++) {
        PyObject *d = t->view_desc[v];
        const ic_meta *m = ic_value_meta(G, v);
        if (d == NULL || m == NULL || !ic_dtype_is_complex(m->dtype))
            break;
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(d, 1));
        if (name == NULL) {
            (void)tc_clear_expected(PyExc_UnicodeError);
            break;
        }
        if (!strcmp(name, "resolve_conj") || !strcmp(name, "conj_physical"))
            break;
        conj ^= !strcmp(name, "conj");
        v = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(d, 0));
    }
    return conj;
}

static int int_tuple_arg(trace *t, const int64_t *v, int n, int extra, var *out) {
    PyObject *tup = PyTuple_New(n + (extra > 0));
    for (int i = 0; tup && i < n + (extra > 0); i++) {
        PyObject *k = i < n ? PyLong_FromLongLong(v[i]) : PyLong_FromLong(extra);
        if (k == NULL) /* no memory: the error stands */
            Py_CLEAR(tup);
        else
            PyTuple_SET_ITEM(tup, i, k);
    }
    return tup ? sym_const(t, tup, out) : -1;
}

/* torch.view_as_real(x) as eager's view (a float view of x's storage: strides 2 * x's, then
 * 1): x.view(float dtype) (an extern: a copy that is rebuilt as the real view where it is
 * observed) then a real view op [..., n, 2]; where that composition's strides are not
 * eager's (x's last stride is not 1: a transposed or stepped x; size-1 dims; a 0-d x),
 * x.unsqueeze(-1).view(float dtype), which ATen makes with exactly view_as_real's strides
 * for any x (the unsqueezed last dim has stride 1). 1: dynamic sizes (the generic extern) */
static int view_as_real_rw(trace *t, const var *x_in, var *out) {
    var x = *x_in;
    sym_resolve(t, &x);
    if (conj_view(t, &x))
        return sym_fail(t, "view_as_real of an unresolved conjugated tensor (eager raises)");
    const ic_meta m = *sym_metap(t, x.val);
    int64_t st[IC_MAX_DIMS], want[IC_MAX_DIMS + 1], fst[IC_MAX_DIMS], fsz[IC_MAX_DIMS], got[IC_MAX_DIMS + 1];
    if (m.dyn || m.ndim >= IC_MAX_DIMS || !sym_eager_strides(t, x.val, st))
        return 1;
    int nd = m.ndim, direct = nd > 0 && st[nd - 1] == 1;
    int64_t vsz[IC_MAX_DIMS + 1];
    for (int i = 0; i < nd; i++) {
        want[i] = 2 * st[i];
        vsz[i] = m.sizes[i];
        fst[i] = i < nd - 1 ? 2 * st[i] : 1; /* x.view(float): ATen's strides */
        fsz[i] = i < nd - 1 ? m.sizes[i] : 2 * m.sizes[i];
    }
    want[nd] = 1;
    vsz[nd] = 2;
    if (direct && sym_view_strides(nd, fsz, fst, nd + 1, vsz, got))
        for (int i = 0; i <= nd; i++)
            direct &= got[i] == want[i];
    else
        direct = 0;
    var dt, flat, arg;
    if (sym_const(t, Py_NewRef(sym_dtype_object(m.dtype == IC_C64 ? IC_F32 : IC_F64)), &dt) < 0)
        return -1;
    if (!direct) {
        var u;
        if (sym_const(t, PyLong_FromLong(-1), &arg) < 0 || method_call(t, &x, "unsqueeze", &arg, 1, &u) < 0)
            return -1;
        return method_call(t, &u, "view", &dt, 1, out);
    }
    if (method_call(t, &x, "view", &dt, 1, &flat) < 0 || int_tuple_arg(t, m.sizes, m.ndim, 2, &arg) < 0)
        return -1;
    return method_call(t, &flat, "view", &arg, 1, out);
}

/* torch.view_as_complex(r) as eager's view (a complex view of r's storage: r's strides but
 * the last, halved): r.flatten(-2) (a real view) then .view(complex dtype), where that
 * composition's strides are eager's; else r.view(complex dtype).squeeze(-1) (externs whose
 * planned strides are ATen's: exactly view_as_complex's for any r it accepts). 1: r is not as
 * eager requires (it raises there): the generic extern, whose plan raises */
static int view_as_complex_rw(trace *t, const var *r_in, var *out) {
    var r = *r_in;
    sym_resolve(t, &r);
    if (r.kind != V_TENSOR)
        return 1;
    const ic_meta m = *sym_metap(t, r.val);
    int64_t st[IC_MAX_DIMS], fsz[IC_MAX_DIMS], fst[IC_MAX_DIMS];
    if (m.ndim < 1 || m.dyn || (m.dtype != IC_F32 && m.dtype != IC_F64) || m.sizes[m.ndim - 1] != 2 ||
        !sym_eager_strides(t, r.val, st) || st[m.ndim - 1] != 1)
        return 1;
    for (int i = 0; i < m.ndim - 1; i++)
        if (st[i] % 2)
            return 1;
    int n = m.ndim - 1, direct = n > 0 && st[n - 1] == 2;
    for (int i = 0; i < n; i++)
        fsz[i] = i < n - 1 ? m.sizes[i] : 2 * m.sizes[i];
    if (direct && sym_view_strides(m.ndim, m.sizes, st, n, fsz, fst))
        for (int i = 0; i < n - 1; i++) /* .view(complex): the non-last strides halved */
            direct &= fst[i] == st[i];
    else
        direct = 0;
    var dim, flat, dt;
    if (sym_const(t, Py_NewRef(sym_dtype_object(m.dtype == IC_F32 ? IC_C64 : IC_C128)), &dt) < 0 ||
        sym_const(t, PyLong_FromLong(direct ? -2 : -1), &dim) < 0)
        return -1;
    if (!direct)
        return method_call(t, &r, "view", &dt, 1, &flat) < 0 ? -1 : method_call(t, &flat, "squeeze", &dim, 1, out);
    return method_call(t, &r, "flatten", &dim, 1, &flat) < 0 ? -1 : method_call(t, &flat, "view", &dt, 1, out);
}

static int is_torch_attr(PyObject *fn, const char *name) {
    if (!PyCFunction_Check(fn))
        return 0;
    const char *n = ((PyCFunctionObject *)fn)->m_ml->ml_name;
    return n != NULL && !strcmp(n, name) && ((PyCFunctionObject *)fn)->m_ml->ml_meth != NULL &&
           sym_complex_fn(fn) == 2;
}

int sym_complex_call(trace *t, PyObject *fn, var *args, int nargs, PyObject *kwnames, int probe, var *out) {
    if (fn != NULL && nargs == 1 && kwnames == NULL && args[0].kind == V_TENSOR) {
        int rc = 1;
        if (is_torch_attr(fn, "view_as_real") && sym_complex_involved(t, &args[0]))
            rc = view_as_real_rw(t, &args[0], out);
        else if (is_torch_attr(fn, "view_as_complex"))
            rc = view_as_complex_rw(t, &args[0], out);
        else if (is_torch_attr(fn, "real") || is_torch_attr(fn, "imag")) /* torch.real(x): x.real */
            rc = sym_complex_attr(t, &args[0], ((PyCFunctionObject *)fn)->m_ml->ml_name, out);
        else if (is_torch_attr(fn, "is_conj") && sym_complex_involved(t, &args[0]))
            rc = sym_const(t, PyBool_FromLong(conj_view(t, &args[0])), out);
        if (rc != 1)
            return rc;
    }
    int force = 0; /* a complex operand: the call is ours whatever it returns */
    for (int i = 0; i < nargs && !force; i++)
        force = sym_complex_involved(t, &args[i]);
    if (!force && (!probe || fn == NULL || PyUnicode_Check(fn)))
        return 1;
    if (load(t) < 0)
        return -1;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw, rc = -1;
    sym_opnds o = {.n = 0, .metas = PyList_New(0)};
    PyObject *pa = PyTuple_New(npos), *kw = PyDict_New(), *res = NULL;
    if (o.metas == NULL || pa == NULL || kw == NULL)
        goto done;
    int ntens = 0; /* a probe of more tensors than an extern takes: the ordinary path (a
                    * polyfill: torch._VF.gru of a 2-layer GRU's weights) */
    for (int i = 0; i < nargs && !force; i++)
        if (!plannable(t, &args[i], 0, &ntens)) { /* the ordinary path decides */
            rc = 1;
            goto done;
        }
    if (sym_custom_pack(t, args, nargs, kwnames, &o, pa, kw) < 0)
        goto done;
    char dev[32]; /* the graph's device: device arguments naming it are planned on meta */
    if (t->device_type == TC_DEV_CUDA)
        snprintf(dev, sizeof dev, "cuda:%d", t->device_index > 0 ? t->device_index : 0);
    else
        snprintf(dev, sizeof dev, "cpu");
    res = PyObject_CallFunction(plan_fn, "OOOOOs", fn, pa, kw, o.metas, force ? Py_True : Py_False, dev);
    if (res == NULL) {
        rc = tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "complex op %R: planning raised", fn);
        goto done;
    }
    if (res == Py_None) { /* no complex value in or out: the ordinary path */
        rc = 1;
        goto done;
    }
    if (PyUnicode_Check(res)) {
        rc = sym_fail(t, "%U", res);
        goto done;
    }
    if (PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2) { /* ('const', metadata) */
        rc = sym_const(t, Py_NewRef(PyTuple_GET_ITEM(res, 1)), out);
        goto done;
    }
    int multi = PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 3; /* ('multi', [plans], islist) */
    if ((dh_tl_autocast & 1) || (dh_tl_autocast & (1 << 8))) { /* enabled for the CPU or CUDA (autocast.c) */
        rc = sym_fail(t, "complex op %R under autocast not captured", fn);
        goto done;
    }
    if (!multi) {
        rc = build_one(t, &o, res, out);
        goto done;
    }
    PyObject *plans = PyTuple_GET_ITEM(res, 1);
    int n = PyList_Check(plans) ? (int)PyList_GET_SIZE(plans) : -1;
    var *items = n > 0 ? sym_alloc(t, n) : NULL;
    if (items == NULL) {
        rc = n > 0 ? -1 : sym_fail(t, "complex op: bad plan");
        goto done;
    }
    for (int k = 0; k < n; k++)
        if ((rc = build_one(t, &o, PyList_GET_ITEM(plans, k), &items[k])) < 0)
            goto done;
    *out = sym_var(V_SEQ);
    out->is_list = PyObject_IsTrue(PyTuple_GET_ITEM(res, 2)) == 1;
    out->n = n;
    out->items = items;
    rc = 0;
done:
    Py_XDECREF(o.metas);
    Py_XDECREF(pa);
    Py_XDECREF(kw);
    Py_XDECREF(res);
    return rc;
}

/* the function `name` of Python's operator module (borrowed, kept for the process) */
static PyObject *operator_fn(trace *t, const char *name) {
    static PyObject *mod;
    if (mod == NULL && (mod = PyImport_ImportModule("operator")) == NULL) {
        (void)tc_clear_expected(PyExc_ImportError);
        sym_fail(t, "complex ops: no operator module");
        return NULL;
    }
    PyObject *f = PyObject_GetAttrString(mod, name);
    if (f == NULL) {
        (void)tc_clear_expected(PyExc_AttributeError);
        sym_fail(t, "complex ops: operator.%s missing", name);
        return NULL;
    }
    Py_DECREF(f); /* the module keeps it */
    return f;
}

/* a op b (BINARY_OP, base: its NB_* without the in-place offset); 1: no complex operand */
int sym_complex_binary(trace *t, int base, int inplace, const var *a, const var *b, var *out) {
    static const char *names[13] = {"add", "and_", "floordiv", "lshift", "matmul", "mul", "mod",
                                    "or_", "pow", "rshift", "sub", "truediv", "xor"};
    if (!sym_complex_involved(t, a) && !sym_complex_involved(t, b))
        return 1;
    if (inplace)
        return sym_fail(t, "in-place operator on a complex value left to eager");
    if (base < 0 || base > 12)
        return sym_fail(t, "binary op %d on a complex value", base);
    PyObject *f = operator_fn(t, names[base]);
    var ab[2] = {*a, *b};
    return f == NULL ? -1 : sym_complex_call(t, f, ab, 2, NULL, 0, out);
}

/* -a, ~a, a < b & co (cmp: Py_LT..Py_GE; -1 for neg, -2 for invert); 1: not complex */
int sym_complex_operator(trace *t, int cmp, const var *a, const var *b, var *out) {
    static const char *names[6] = {"lt", "le", "eq", "ne", "gt", "ge"};
    if (!sym_complex_involved(t, a) && (b == NULL || !sym_complex_involved(t, b)))
        return 1;
    if (cmp < -2 || cmp > 5)
        return sym_fail(t, "operator %d on a complex value", cmp);
    PyObject *f = operator_fn(t, cmp == -1 ? "neg" : cmp == -2 ? "invert" : names[cmp]);
    var ab[2] = {*a, b ? *b : *a};
    return f == NULL ? -1 : sym_complex_call(t, f, ab, b ? 2 : 1, NULL, 0, out);
}

/* x[k]; 1: neither is complex */
int sym_complex_index(trace *t, const var *x, const var *k, var *out) {
    if (!sym_complex_involved(t, x) && !sym_complex_involved(t, k))
        return 1;
    PyObject *f = operator_fn(t, "getitem");
    var xk[2] = {*x, *k};
    return f == NULL ? -1 : sym_complex_call(t, f, xk, 2, NULL, 0, out);
}

/* x.real, x.imag, x.T, x.mT, x.H, x.mH of a complex x; 1: not one of them */
int sym_complex_attr(trace *t, const var *x, const char *name, var *out) {
    static const char *views[6] = {"real", "imag", "T", "mT", "H", "mH"};
    int k = 0;
    while (k < 6 && strcmp(name, views[k]))
        k++;
    if (k == 6 || !sym_complex_involved(t, x))
        return 1;
    var a = *x;
    if (k < 2 && !conj_view(t, &a)) { /* x.real, x.imag: view_as_real(x)[..., 0 or 1], eager's strides (2
                                        * apart); of a conjugated view: the planned attribute */
        var r, key;
        int rc = view_as_real_rw(t, &a, &r);
        if (rc == 0 && sym_const(t, Py_BuildValue("(Oi)", Py_Ellipsis, k), &key) < 0)
            return -1;
        if (rc == 0)
            return sym_tensor_index(t, &r, &key, out);
        if (rc < 0)
            return -1; /* (1: not so expressible: Tensor.real's own extern, below) */
    }
    PyObject *key = PyUnicode_FromFormat("attr:%s", name);
    if (key == NULL)
        return -1;
    int rc = sym_complex_call(t, key, &a, 1, NULL, 1, out);
    Py_DECREF(key);
    return rc;
}

/* x.name(args) with x or an argument complex: Tensor.name called with x first; 1: none is */
int sym_complex_method(trace *t, const var *self, PyObject *name, const var *args, int nargs, PyObject *kwnames,
                       var *out) {
    int cx = sym_complex_involved(t, self);
    for (int i = 0; i < nargs && !cx; i++)
        cx = sym_complex_involved(t, &args[i]);
    if (!cx)
        return 1;
    if (PyUnicode_CompareWithASCIIString(name, "is_conj") == 0 && nargs == 0 && kwnames == NULL)
        return sym_const(t, PyBool_FromLong(conj_view(t, self)), out);
    if (PyUnicode_CompareWithASCIIString(name, "view") == 0 && nargs == 1 && args[0].kind == V_CONST &&
        sym_dtype_from_object(args[0].obj) >= 0 && conj_view(t, self))
        return sym_fail(t, "view(dtype) of a conjugate view (eager raises)");
    if (sym_refs.tensor_type == NULL)
        return sym_fail(t, "complex ops: torch.Tensor unknown");
    PyObject *f = PyObject_GetAttr(sym_refs.tensor_type, name);
    if (f == NULL) {
        (void)tc_clear_expected(PyExc_AttributeError);
        return sym_fail(t, "Tensor.%U() not supported (no such method)", name);
    }
    var *all = sym_alloc(t, nargs + 1);
    int rc = -1;
    if (all != NULL) {
        all[0] = *self;
        for (int i = 0; i < nargs; i++)
            all[i + 1] = args[i];
        rc = sym_complex_call(t, f, all, nargs + 1, kwnames, 1, out);
    }
    Py_DECREF(f);
    return rc;
}

/* a torch function (its module torch or torch.*; or builtins abs/pow) worth planning */
int sym_complex_fn(PyObject *fn) {
    if (fn == NULL || PyType_Check(fn) || !PyCFunction_Check(fn))
        return 0;
    PyObject *mod = PyObject_GetAttrString(fn, "__module__");
    int r = 0;
    if (mod != NULL && PyUnicode_Check(mod)) {
        const char *m = PyUnicode_AsUTF8(mod);
        r = m != NULL && (!strcmp(m, "torch") || !strncmp(m, "torch.", 6) || !strncmp(m, "torch._C", 8)) ? 2 : 0;
        if (!r && m != NULL && !strcmp(m, "builtins")) {
            const char *n = ((PyCFunctionObject *)fn)->m_ml->ml_name;
            r = !strcmp(n, "abs") || !strcmp(n, "pow");
        }
    }
    Py_XDECREF(mod);
    if (PyErr_Occurred())
        (void)tc_clear_expected(PyExc_Exception);
    return r;
}
