/* autocast.c — torch.autocast's casting of an op's tensor arguments, applied in the graph
 * (training, issue 22 deliverable 5).
 *
 * The autocast state is a guard of every capture (dh_tl_autocast: cpu enabled | dtype + 1 in
 * bits 1..7, cuda enabled (bit 8) | dtype + 1 in bits 9..15). For an op that guards.c's table
 * says autocast affects, dh_autocast_policy answers what eager's autocast does on the trace's
 * device:
 *   lower precision (the matmul/conv/attention ops both torch's CPU and CUDA lists share):
 *     floating arguments other than float64 are cast to the autocast dtype, then the op runs;
 *   fp32 (the CPU losses and prod checked against eager; CUDA's fp32 lists: softmax,
 *     layer_norm, sum, exp, ...): the same cast to float32;
 *   unaffected on the CPU (ops only CUDA's lists hold, checked against eager: they run in
 *     their inputs' dtype): the op runs as without autocast;
 *   anything else: not captured (the caller breaks the graph, as before).
 * The casts are graph values, so the backward rules give eager's gradient dtypes (a cast's
 * gradient is cast back).
 */
#include "ops_internal.h"
#include "sym_sem.h"

static const char *const lower_ops[] = {
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "mm", "bmm", "addmm", "baddbmm", "addbmm", "linear", "matmul", "prelu",
    "scaled_dot_product_attention", NULL};
static const char *const cpu_fp32_ops[] = {
    "cross_entropy", "mse_loss", "prod", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "cdist",
    "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "poisson_nll_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", NULL};
/* CUDA's fp32 and fp32-unless-a-dtype-is-given lists (autocast_mode.cpp): floating arguments
 * cast to float32 (an exact up-cast, so a given dtype= gives eager's result too) */
static const char *const cuda_fp32_ops[] = {
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm",
    "group_norm", "norm", "nuclear_norm", "frobenius_norm", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "cross_entropy", "dist", "pdist",
    "cdist", "renorm", "logsumexp", "softmax", "log_softmax", "cumsum", "cumprod", "sum",
    "prod", "linalg_vector_norm", "linalg_matrix_norm", NULL};
/* promote ops whose own type promotion is the widest type already */
static const char *const cuda_unaffected_ops[] = {"cat", "stack", "concat", "concatenate", NULL};
static const char *const cpu_unaffected_ops[] = {
    "sum", "softmax", "log_softmax", "exp", "log", "log10", "log2", "log1p", "expm1", "rsqrt",
    "reciprocal", "sinh", "cosh", "tan", "acos", "asin", "erfinv", "softplus", "pow",
    "layer_norm", "group_norm", "cumsum", "cumprod", "norm", "logsumexp", "cat", "stack", NULL};

static int in(const char *const *list, const char *name) {
    while (name[0] == '_') /* __matmul__, _conv2d-style aliases */
        name++;
    for (int i = 0; list[i]; i++) {
        size_t n = strlen(list[i]);
        if (strncmp(name, list[i], n) == 0 && (name[n] == 0 || (name[n] == '_' && name[n + 1] == 0) ||
                                                (name[n] == '_' && name[n + 1] == '_')))
            return 1; /* exact, in-place (pow_) or dunder (matmul__) form */
    }
    return 0;
}

/* 0: run the op unchanged; 1: cast floating non-f64 tensor arguments to *to; -1: not captured */
int dh_autocast_policy(const trace *t, const char *name, ic_dtype *to) {
    int key = dh_tl_autocast;
    if (t->device_type < 0)
        return -1; /* no tensor input yet: the device autocast would follow is unknown */
    int cpu = (key & 1) && t->device_type == TC_DEV_CPU;
    int cuda = (key & (1 << 8)) && t->device_type == TC_DEV_CUDA;
    if (!cpu && !cuda)
        return 0; /* autocast is on for another device only: this graph's ops are unaffected */
    int dt = cpu ? ((key >> 1) & 0x7f) - 1 : ((key >> 9) & 0x7f) - 1;
    if (name == NULL || dt < 0 || dt >= IC_DTYPE_COUNT)
        return -1;
    if (in(lower_ops, name)) {
        *to = (ic_dtype)dt;
        return 1;
    }
    if ((cpu && in(cpu_fp32_ops, name)) || (cuda && in(cuda_fp32_ops, name))) {
        *to = IC_F32;
        return 1;
    }
    if ((cpu && in(cpu_unaffected_ops, name)) || (cuda && in(cuda_unaffected_ops, name)))
        return 0;
    return -1;
}

/* The cast of one argument: a new tensor value when it is floating, not float64 and not
 * already of dtype `to` (eager's autocast eligibility); else the argument itself. */
int dh_autocast_arg(trace *t, var *a, ic_dtype to, var **out) {
    *out = a;
    if (a == NULL || a->kind != V_TENSOR)
        return 0;
    ic_dtype d = ic_value_meta(t->g, a->val)->dtype;
    if ((d != IC_F16 && d != IC_BF16 && d != IC_F32) || d == to)
        return 0;
    var *c = sym_alloc(t, 1);
    if (c == NULL)
        return -1;
    if (sym_tensor_out(t, ic_cast(t->g, a->val, to), c) < 0)
        return -1;
    *out = c;
    return 0;
}

/* ---- autocast regions inside captured code (issue 21 item 2, issue 22 item 5) ----------
 *
 * `with torch.autocast(...)` (torch.amp.autocast, torch.cpu.amp.autocast,
 * torch.cuda.amp.autocast, the decorator form's closure instance) inside the frame changes
 * dh_tl_autocast for the ops traced in the block, and its __exit__ restores it: the ops then
 * follow dh_autocast_policy as under an autocast around the call. The state at the frame's
 * entry stays the guard; the state inside is a function of it and of the region's constant
 * arguments. Regions are entered and left by the trace only (no Python runs): the frame must
 * not stop inside one (a frame with a `with` block never breaks; an inlined call that fails
 * runs eagerly as a whole, the state restored by sym_call.c).
 * Key bits (tc_autocast_state): cpu enabled (bit 0), dtype + 1 (bits 1..7); cuda enabled
 * (bit 8), dtype + 1 (bits 9..15). A region may leave a dtype with enabled off: the policy
 * reads enabled first, and get_autocast_dtype answers it. */

static PyObject *ac_base, *ac_enter[3], *ac_get_dtype, *ac_is_enabled, *s_dtype;

static int ac_init(void) {
    if (ac_base != NULL)
        return 0;
    static const char *const mods[3] = {"torch.amp.autocast_mode", "torch.cpu.amp.autocast_mode",
                                        "torch.cuda.amp.autocast_mode"};
    PyObject *torch = PyImport_ImportModule("torch");
    if (torch == NULL)
        return -1;
    ac_get_dtype = PyObject_GetAttrString(torch, "get_autocast_dtype");
    ac_is_enabled = PyObject_GetAttrString(torch, "is_autocast_enabled");
    Py_DECREF(torch);
    s_dtype = PyUnicode_InternFromString("dtype");
    if (ac_get_dtype == NULL || ac_is_enabled == NULL || s_dtype == NULL)
        return -1;
    for (int i = 0; i < 3; i++) {
        PyObject *m = PyImport_ImportModule(mods[i]);
        PyObject *c = m ? PyObject_GetAttrString(m, "autocast") : NULL;
        Py_XDECREF(m);
        if (c == NULL || !PyType_Check(c)) {
            Py_XDECREF(c);
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            continue;
        }
        ac_enter[i] = PyObject_GetAttrString(c, "__enter__"); /* kept */
        if (ac_enter[i] == NULL)
            (void)tc_clear_expected(PyExc_AttributeError);
        if (i == 0)
            ac_base = c; /* kept */
        else
            Py_DECREF(c);
    }
    if (ac_base == NULL)
        ac_base = Py_None; /* no autocast class: nothing is one */
    return 0;
}

/* 1 when cls is torch.autocast or a subclass keeping one of torch's __enter__ */
int dh_autocast_is_class(PyObject *cls) {
    if (cls == NULL || !PyType_Check(cls) || ac_init() < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    if (ac_base == Py_None || !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)ac_base))
        return 0;
    static PyObject *s_enter;
    if (s_enter == NULL && (s_enter = PyUnicode_InternFromString("__enter__")) == NULL)
        return 0;
    PyObject *e = _PyType_Lookup((PyTypeObject *)cls, s_enter);
    for (int i = 0; i < 3; i++)
        if (e != NULL && e == ac_enter[i])
            return 1;
    return 0;
}

static int dev_shift(const char *dev) {
    return !strcmp(dev, "cpu") ? 0 : !strcmp(dev, "cuda") ? 8 : -1;
}

/* the dtype autocast would use on dev now in the trace: from the key, else torch's (guarded) */
static PyObject *cur_dtype(trace *t, const char *dev) {
    int sh = dev_shift(dev);
    int dt = sh < 0 ? -1 : ((dh_tl_autocast >> (sh + 1)) & 0x7f) - 1;
    if (dt >= 0 && dt < IC_DTYPE_COUNT)
        return Py_NewRef(sym_dtype_object((ic_dtype)dt));
    PyObject *args = Py_BuildValue("(s)", dev);
    PyObject *r = args ? PyObject_Call(ac_get_dtype, args, NULL) : NULL;
    dh_guard *g = r ? sym_new_guard(t, DH_G_CALLEQ, -1) : NULL;
    if (g != NULL && (g->obj = Py_BuildValue("(OOO)", ac_get_dtype, args, r)) == NULL)
        t->nguards--;
    Py_XDECREF(args);
    if (g == NULL || g->obj == NULL) {
        Py_XDECREF(r);
        if (tc_clear_expected(PyExc_Exception) < 0)
            return NULL;
        sym_fail(t, "torch.get_autocast_dtype(%s) failed", dev);
        return NULL;
    }
    return r;
}

/* cls(*args) of an autocast class with constant arguments: the real object, made now (its
 * __init__ only validates and stores; a deprecation warning is given once per trace). The
 * base class reads the current dtype when none is given: the trace's. */
int dh_autocast_new(trace *t, PyObject *cls, const var *args, int nargs, PyObject *kwnames,
                    var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    PyObject *tup = PyTuple_New(npos), *kw = PyDict_New(), *obj = NULL;
    int rc = -1;
    if (tup == NULL || kw == NULL)
        goto done;
    for (int i = 0; i < nargs; i++)
        if (args[i].kind != V_CONST) {
            rc = sym_fail(t, "torch.autocast with non-constant arguments");
            goto done;
        }
    for (int i = 0; i < npos; i++)
        PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
    for (int i = 0; i < nkw; i++)
        if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[npos + i].obj) < 0)
            goto done;
    if (cls == ac_base) { /* autocast(device_type, dtype=None, ...) */
        PyObject *dev = npos > 0 ? PyTuple_GET_ITEM(tup, 0) : PyDict_GetItemString(kw, "device_type");
        PyObject *dt = npos > 1 ? PyTuple_GET_ITEM(tup, 1) : PyDict_GetItem(kw, s_dtype);
        if (dev != NULL && PyUnicode_Check(dev) && (dt == NULL || dt == Py_None)) {
            PyObject *d = cur_dtype(t, PyUnicode_AsUTF8(dev));
            if (d == NULL)
                goto done;
            int e = npos > 1 ? PyTuple_SetItem(tup, 1, d) : PyDict_SetItem(kw, s_dtype, d);
            if (npos <= 1)
                Py_DECREF(d);
            if (e < 0)
                goto done;
        }
    }
    obj = PyObject_Call(cls, tup, kw);
    if (obj == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            goto done;
        rc = sym_fail(t, "torch.autocast(...) raised (eager will raise)");
        goto done;
    }
    *out = sym_var(V_OBJ);
    out->obj = sym_keep(t, obj);
    obj = NULL;
    rc = out->obj ? 0 : -1;
done:
    Py_XDECREF(tup);
    Py_XDECREF(kw);
    Py_XDECREF(obj);
    return rc;
}

/* an attribute of the autocast object; when it came from a source, guarded equal */
static PyObject *ac_field(trace *t, const var *ctx, const char *name) {
    PyObject *n = PyUnicode_InternFromString(name);
    PyObject *v = n ? PyObject_GetAttr(ctx->obj, n) : NULL;
    if (v != NULL && ctx->src >= 0) {
        int s = sym_source(t, DH_S_ATTR, ctx->src, 2, n); /* full getattr */
        if (s < 0 || sym_guard_const(t, s, v) < 0)
            Py_CLEAR(v);
    }
    Py_XDECREF(n);
    return v;
}

/* BEFORE_WITH on an autocast object: the region's state in dh_tl_autocast; *exit_fn is its
 * __exit__ (the state to restore), *as_val what `as` binds (the object). 1: not one. */
int dh_autocast_enter(trace *t, const var *ctx, var *exit_fn, var *as_val) {
    if ((ctx->kind != V_OBJ && ctx->kind != V_CONST) || ctx->obj == NULL ||
        !dh_autocast_is_class((PyObject *)Py_TYPE(ctx->obj)))
        return 1;
    PyObject *dev = ac_field(t, ctx, "device");
    PyObject *dt = dev ? ac_field(t, ctx, "fast_dtype") : NULL;
    PyObject *en = dt ? ac_field(t, ctx, "_enabled") : NULL;
    int rc = -1;
    if (en == NULL) {
        if (!PyErr_Occurred() || tc_clear_expected(PyExc_Exception) == 0)
            rc = sym_fail(t, "autocast object without device/fast_dtype/_enabled");
        goto done;
    }
    int sh = PyUnicode_Check(dev) ? dev_shift(PyUnicode_AsUTF8(dev)) : -1;
    int d = sym_dtype_from_object(dt);
    int on = PyObject_IsTrue(en);
    if (sh < 0 || on < 0 || (on && d < 0)) {
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "autocast on device %R (dtype %R) not captured", dev, dt);
        goto done;
    }
    int prev = dh_tl_autocast;
    int bits = (on ? 1 : 0) | (d >= 0 ? (d + 1) << 1 : (prev >> sh) & 0xfe);
    dh_tl_autocast = (prev & ~(0xff << sh)) | (bits << sh);
    *exit_fn = sym_var(V_FUNC);
    exit_fn->op = SYM_AUTOCAST_EXIT;
    exit_fn->n = prev;
    exit_fn->obj = ctx->obj; /* kept by the trace: a break inside the block re-enters it */
    *as_val = *ctx;
    rc = 0;
done:
    Py_XDECREF(dev);
    Py_XDECREF(dt);
    Py_XDECREF(en);
    return rc;
}

/* A break inside a region (symbolic.c sym_with_recipes): the class and constant arguments
 * that make an equal region again, torch.amp.autocast(device, dtype, enabled, cache_enabled)
 * (a subclass's __enter__ is one of torch's: the same state). New reference, NULL on error. */
PyObject *dh_autocast_recipe(PyObject *ctx) {
    if (ac_init() < 0 || ac_base == Py_None)
        return NULL;
    PyObject *dev = PyObject_GetAttrString(ctx, "device");
    PyObject *dt = dev ? PyObject_GetAttrString(ctx, "fast_dtype") : NULL;
    PyObject *en = dt ? PyObject_GetAttrString(ctx, "_enabled") : NULL;
    PyObject *ce = en ? PyObject_GetAttrString(ctx, "_cache_enabled") : NULL;
    PyObject *r = ce ? Py_BuildValue("(O(OOOO))", ac_base, dev, dt, en, ce) : NULL;
    Py_XDECREF(dev);
    Py_XDECREF(dt);
    Py_XDECREF(en);
    Py_XDECREF(ce);
    return r;
}

/* __exit__(None, None, None) of a region: the state before it */
int dh_autocast_exit(trace *t, const var *exit_fn, var *out) {
    dh_tl_autocast = exit_fn->n;
    return sym_const(t, Py_NewRef(Py_None), out);
}

/* torch.is_autocast_enabled([device]) / torch.get_autocast_dtype(device) in the trace: the
 * trace's state (guarded at entry, changed by regions). 1: not one of them. */
int dh_autocast_query(trace *t, PyObject *fn, const var *args, int nargs, PyObject *kwnames,
                      var *out) {
    if (ac_init() < 0)
        return -1;
    if (fn != ac_is_enabled && fn != ac_get_dtype)
        return 1;
    const char *dev = "cuda"; /* is_autocast_enabled(): the GPU's */
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return sym_fail(t, "autocast query with keywords");
    if (nargs > 1 || (nargs == 0 && fn == ac_get_dtype))
        return sym_fail(t, "autocast query with these arguments");
    if (nargs == 1) {
        if (args[0].kind != V_CONST || !PyUnicode_Check(args[0].obj))
            return sym_fail(t, "autocast query of a non-constant device");
        dev = PyUnicode_AsUTF8(args[0].obj);
    }
    int sh = dev_shift(dev);
    if (sh < 0)
        return sym_fail(t, "autocast query for device %s", dev);
    if (fn == ac_is_enabled)
        return sym_const(t, PyBool_FromLong((dh_tl_autocast >> sh) & 1), out);
    PyObject *d = cur_dtype(t, dev);
    return d ? sym_const(t, d, out) : -1;
}
