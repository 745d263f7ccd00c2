/* autograd_fn.c — torch.autograd.Function.apply captured whole under grad mode (issue 22,
 * deliverable 6; owner: training).
 *
 * Fn.apply(*args) where a tensor argument requires grad is, in eager: forward(ctx, *args)
 * (or forward(*args) then setup_context(ctx, args, output)) run with grad off, its float
 * outputs given a node whose backward is the user's backward(ctx, *grads). Here:
 *   forward:  inlined with grad off (ic_set_grad_enabled), ctx a fresh FunctionCtx (obj_new.c)
 *             with needs_input_grad written first; each differentiable output becomes a fresh
 *             value (ic_custom_output) that requires grad where an argument does;
 *   backward: inlined right away, with grad off (once_differentiable's wrapper takes its
 *             plain path), onto the forward graph from a mark: each differentiable output's
 *             gradient a placeholder graph input, non-differentiable outputs' gradients zeros
 *             (eager materializes them), ctx.saved_tensors what save_for_backward saved.
 *             ic_custom_capture then moves the nodes traced since the mark out of the graph
 *             into a template the graph keeps; graph/autograd.c copies it into the backward
 *             graph where the outputs' gradients are final.
 * Requires: the caller (ops_table.c sym_call) hands over Function.apply calls made under grad
 *           mode (t->nograd == 0); apply is torch's own.
 * Keeps:    the trace state as the forward left it: whatever the backward's trace touched is
 *           checked untouched (attribute writes but ctx's, containers, objects, inputs,
 *           index checks) or dropped with the template (its objects, per-value facts).
 * Breaks:   nothing; what is not captured fails the call with a reason (a graph break: the
 *           apply runs eagerly) — mark_dirty, keyword arguments, set_materialize_grads(False)
 *           with several outputs, a backward reading a tensor the forward did not have,
 *           updating a forward tensor in place, or returning what eager would refuse.
 */
#include "ops_internal.h"

#include "../csrc/train.h"

static PyObject *base_apply, *base_setup, *base_backward, *base_vjp, *ctx_cls;
static PyObject *s_nig, *s_saved, *s_to_save, *s_nondiff, *s_dirty, *s_mat;

static int init_once(void) {
    if (ctx_cls != NULL)
        return 0;
    PyObject *m = PyImport_ImportModule("torch.autograd.function");
    PyObject *fc = m ? PyObject_GetAttrString(m, "Function") : NULL;
    PyObject *sl = m ? PyObject_GetAttrString(m, "_SingleLevelFunction") : NULL;
    PyObject *ap = fc ? PyObject_GetAttrString(fc, "apply") : NULL;
    PyObject *su = sl ? PyObject_GetAttrString(sl, "setup_context") : NULL;
    PyObject *bw = sl ? PyObject_GetAttrString(sl, "backward") : NULL;
    PyObject *vj = sl ? PyObject_GetAttrString(sl, "vjp") : NULL;
    PyObject *cx = m ? PyObject_GetAttrString(m, "FunctionCtx") : NULL;
    Py_XDECREF(m);
    Py_XDECREF(fc);
    Py_XDECREF(sl);
    s_nig = s_nig ? s_nig : PyUnicode_InternFromString("needs_input_grad");
    s_saved = s_saved ? s_saved : PyUnicode_InternFromString("saved_tensors");
    s_to_save = s_to_save ? s_to_save : PyUnicode_InternFromString("to_save");
    s_nondiff = s_nondiff ? s_nondiff : PyUnicode_InternFromString("non_differentiable");
    s_dirty = s_dirty ? s_dirty : PyUnicode_InternFromString("dirty_tensors");
    s_mat = s_mat ? s_mat : PyUnicode_InternFromString("materialize_grads");
    if (!ap || !su || !bw || !vj || !cx || !s_nig || !s_saved || !s_to_save || !s_nondiff || !s_dirty || !s_mat) {
        Py_XDECREF(ap);
        Py_XDECREF(su);
        Py_XDECREF(bw);
        Py_XDECREF(vj);
        Py_XDECREF(cx);
        return tc_clear_expected(PyExc_ImportError, PyExc_AttributeError) < 0 ? -1 : 1;
    }
    base_apply = PyMethod_Check(ap) ? Py_NewRef(PyMethod_GET_FUNCTION(ap)) : Py_NewRef(ap);
    Py_DECREF(ap);
    base_setup = su; /* these are kept for the process */
    base_backward = bw;
    base_vjp = vj;
    ctx_cls = cx;
    return 0;
}

/* the value ctx.name was last given in the trace, or NULL */
static var *ctx_attr(trace *t, const var *ctx, PyObject *name) {
    for (int i = t->nattrw - 1; i >= 0; i--)
        if (t->attrw[i].obj == ctx->obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0)
            return t->attrw[i].val;
    return NULL;
}

/* ctx.name = *v, logged as any attribute write (read back by later reads in the trace) */
static int ctx_set(trace *t, const var *ctx, PyObject *name, const var *v) {
    var *slot = sym_alloc(t, 1);
    if (slot == NULL)
        return -1;
    *slot = *v;
    sym_attrw *w = sym_attrw_new(t);
    if (w == NULL)
        return -1;
    w->src = ctx->src;
    w->obj = ctx->obj;
    w->name = name;
    w->val = slot;
    return 0;
}

static int is_ctx(const var *v, const var *ctx) { return v->kind == V_OBJ && v->obj == ctx->obj; }

/* v is ctx, or a sequence holding it (one level): ctx reaches the caller */
static int holds_ctx(const var *v, const var *ctx) {
    if (is_ctx(v, ctx))
        return 1;
    if (v->kind == V_SEQ || v->kind == V_DICT)
        for (int i = 0; i < v->n; i++)
            if (is_ctx(&v->items[i], ctx))
                return 1;
    return 0;
}

/* ctx reaches nobody (not in res, not stored by a write logged since natt0, no undo logged
 * since nundo0): its logged attribute writes since natt0 need no replay (ctx is not kept by
 * anything the frame returns or updates); they are dropped. */
void sym_ctx_forget_writes(trace *t, const var *ctx, const var *res, int natt0, int nundo0) {
    int escapes = t->nundo != nundo0 || holds_ctx(res, ctx);
    for (int i = natt0; i < t->nattrw && !escapes; i++)
        escapes = t->attrw[i].obj != ctx->obj && holds_ctx(t->attrw[i].val, ctx);
    if (escapes)
        return;
    int w = natt0;
    for (int i = natt0; i < t->nattrw; i++)
        if (t->attrw[i].obj != ctx->obj)
            t->attrw[w++] = t->attrw[i];
    t->nattrw = w;
}

/* the items of a tuple var (a plain tuple, not a list) or of a single value */
static int items_of(const var *v, const var **items, int *n) {
    if (v->kind == V_SEQ && !v->is_list && v->obj == NULL) {
        *items = v->items;
        *n = v->n;
        return 1;
    }
    *items = v;
    *n = 1;
    return 0;
}

/* grad's shape sums to x's (eager's validate_outputs: x's shape expandable to grad's) */
static int expandable(const ic_meta *x, const ic_meta *g) {
    if (x->ndim > g->ndim)
        return 0;
    int lead = g->ndim - x->ndim;
    for (int i = 0; i < x->ndim; i++)
        if (x->sizes[i] != 1 && x->sizes[i] != g->sizes[lead + i])
            return 0;
    return 1;
}

/* n zeroed bytes living as long as the trace */
static void *trace_mem(trace *t, size_t n) { return sym_alloc(t, (int)((n + sizeof(var) - 1) / sizeof(var))); }

/* the values from base on left the graph (the template, or an abandoned call): so go the
 * facts about them; objects made since nobj0 hold none (ids only grow: they stay, dead),
 * the older ones' alias marks as before (alias0); frees alias0 */
static void forget(trace *t, ic_val base, int nobj0, unsigned char *alias0) {
    for (int o = nobj0 + 1; o <= t->nobj; o++) {
        t->obj_val[o] = IC_NONE;
        t->obj_aliased[o] = 0;
    }
    if (alias0)
        memcpy(t->obj_aliased + 1, alias0, (size_t)nobj0);
    for (ic_val v = base; v < t->capvals; v++) {
        t->view_of_input[v] = 0;
        t->view_desc[v] = NULL;
    }
    free(alias0);
}

static void grad_off(trace *t) {
    if (t->nograd++ == 0)
        ic_set_grad_enabled(G, 0);
}
static void grad_on(trace *t) {
    if (--t->nograd == 0)
        ic_set_grad_enabled(G, 1);
}

/* 0: apply is torch.autograd.Function.apply (and FunctionCtx a plain class); 1: not; -1: an
 * exception */
static int function_apply(PyObject *apply) {
    int r = init_once();
    if (r != 0)
        return r;
    return apply == base_apply && sym_obj_plain_class(ctx_cls) ? 0 : 1;
}

/* 1: fn is torch.autograd.Function.apply's function (a subclass's apply that overrides it, a
 * Python classmethod calling super().apply, is inlined instead: sym_attr.c); 0: not; -1: an
 * exception */
int dh_autograd_is_base_apply(PyObject *fn) {
    int r = init_once();
    if (r != 0)
        return r < 0 ? -1 : 0;
    return fn == base_apply;
}

/* Function.apply(*args) with grad mode off records nothing: it is forward(ctx, *args) (or
 * forward(*args) when the class defines setup_context, which then only fills ctx), ctx a
 * fresh torch.autograd.function.FunctionCtx (inlined like any plain object). 1: not this
 * case (apply is not Function.apply, forward not a Python function): the caller refuses. */
int dh_autograd_function_nograd(trace *t, PyObject *cls, PyObject *apply, var *args, int nargs, PyObject *kwnames,
                                var *out) {
    int r0 = function_apply(apply);
    if (r0 != 0)
        return r0;
    PyObject *fwd = PyObject_GetAttrString(cls, "forward"); /* a staticmethod: the function */
    PyObject *setup = fwd ? PyObject_GetAttrString(cls, "setup_context") : NULL;
    if (fwd == NULL || setup == NULL || !PyFunction_Check(fwd)) {
        Py_XDECREF(fwd);
        Py_XDECREF(setup);
        return tc_clear_expected(PyExc_AttributeError) < 0 ? -1 : 1;
    }
    int with_ctx = setup == base_setup;
    Py_DECREF(setup);
    fwd = sym_keep(t, fwd);
    if (fwd == NULL)
        return -1;
    var *a = sym_alloc(t, nargs + 1);
    if (a == NULL)
        return -1;
    if (with_ctx && sym_obj_new(t, ctx_cls, NULL, 0, NULL, &a[0]) < 0)
        return -1;
    for (int i = 0; i < nargs; i++)
        a[with_ctx + i] = args[i];
    int fs = sym_source(t, DH_S_CONST, -1, 0, fwd); /* its globals are read through it */
    if (fs < 0)
        return -1;
    int natt0 = t->nattrw, nundo0 = t->nundo;
    int r = sym_inline(t, fwd, fs, NULL, a, nargs + with_ctx, kwnames, out);
    /* ctx.save_for_backward(...) and the like: writes to the fresh ctx, replayed by nobody
     * when ctx does not escape (a scanned body using such a Function stays a C loop) */
    if (r == 0 && with_ctx)
        sym_ctx_forget_writes(t, &a[0], out, natt0, nundo0);
    return r;
}

/* 0: *out is the call's result; -1: failed (reason) or an exception; 1: not Function.apply */
int dh_autograd_function(trace *t, PyObject *cls, PyObject *apply, var *args, int nargs, PyObject *kwnames,
                         var *out) {
    int r = function_apply(apply);
    if (r != 0)
        return r;
    const char *cname = ((PyTypeObject *)cls)->tp_name;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return sym_fail(t, "torch.autograd.Function %s.apply with keyword arguments: not captured", cname);
    PyObject *fwd = PyObject_GetAttrString(cls, "forward");
    PyObject *setup = fwd ? PyObject_GetAttrString(cls, "setup_context") : NULL;
    PyObject *bwd = setup ? PyObject_GetAttrString(cls, "backward") : NULL;
    PyObject *vjp = bwd ? PyObject_GetAttrString(cls, "vjp") : NULL;
    if (vjp == NULL) {
        Py_XDECREF(fwd);
        Py_XDECREF(setup);
        Py_XDECREF(bwd);
        return tc_clear_expected(PyExc_AttributeError) < 0 ? -1 : 1;
    }
    int with_ctx = setup == base_setup;
    int own_bwd = bwd != base_backward, own_vjp = vjp != base_vjp;
    PyObject *user_bwd = own_vjp ? vjp : bwd;
    int ok = PyFunction_Check(fwd) && (with_ctx || PyFunction_Check(setup)) && own_bwd != own_vjp &&
             PyFunction_Check(user_bwd);
    fwd = sym_keep(t, fwd);
    setup = sym_keep(t, setup);
    user_bwd = sym_keep(t, Py_NewRef(user_bwd));
    Py_DECREF(bwd);
    Py_DECREF(vjp);
    if (fwd == NULL || setup == NULL || user_bwd == NULL)
        return -1;
    if (!ok)
        return sym_fail(t, "torch.autograd.Function %s: forward/backward are not plain Python functions "
                           "(or both backward and vjp are defined): not captured", cname);

    /* which arguments need a gradient: ctx.needs_input_grad */
    int nreq = 0;
    PyObject *nig = PyTuple_New(nargs);
    if (nig == NULL)
        return -1;
    unsigned char *req = trace_mem(t, (size_t)nargs + 1);
    if (req == NULL) {
        Py_DECREF(nig);
        return -1;
    }
    for (int i = 0; i < nargs; i++) {
        sym_resolve(t, &args[i]);
        req[i] = args[i].kind == V_TENSOR && sym_value_requires_grad(t, args[i].val);
        nreq += req[i];
        PyTuple_SET_ITEM(nig, i, PyBool_FromLong(req[i]));
    }
    var nigv, ctx;
    if (sym_const(t, nig, &nigv) < 0)
        return -1;
    int natt0 = t->nattrw, nundo0 = t->nundo;
    if (sym_obj_new(t, ctx_cls, NULL, 0, NULL, &ctx) < 0)
        return -1;
    if (ctx.kind != V_OBJ || ctx_set(t, &ctx, s_nig, &nigv) < 0)
        return ctx.kind != V_OBJ ? sym_fail(t, "autograd.Function: ctx is not an object") : -1;

    /* the forward (and setup_context), with grad off as apply runs them */
    var res;
    var *a = sym_alloc(t, nargs + 1);
    if (a == NULL)
        return -1;
    if (with_ctx)
        a[0] = ctx;
    for (int i = 0; i < nargs; i++)
        a[with_ctx + i] = args[i];
    int fs = sym_source(t, DH_S_CONST, -1, 0, fwd);
    if (fs < 0)
        return -1;
    grad_off(t);
    r = sym_inline(t, fwd, fs, NULL, a, nargs + with_ctx, NULL, &res);
    if (r == 0 && !with_ctx) { /* setup_context(ctx, inputs, output), the defaults bound */
        PyObject *dflt = ((PyFunctionObject *)fwd)->func_defaults;
        int argc = ((PyCodeObject *)PyFunction_GET_CODE(fwd))->co_argcount;
        int nd = dflt ? (int)PyTuple_GET_SIZE(dflt) : 0, nin = nargs;
        if (nargs < argc && argc - nargs <= nd)
            nin = argc;
        var *in = sym_alloc(t, nin + 1), *sa = sym_alloc(t, 3);
        int ss = sym_source(t, DH_S_CONST, -1, 0, setup);
        if (in == NULL || sa == NULL || ss < 0) {
            grad_on(t);
            return -1;
        }
        for (int i = 0; i < nin && r == 0; i++)
            if (i < nargs)
                in[i] = args[i];
            else
                r = sym_const(t, Py_NewRef(PyTuple_GET_ITEM(dflt, nd - (argc - i))), &in[i]);
        sa[0] = ctx;
        sa[1] = sym_var(V_SEQ);
        sa[1].items = in;
        sa[1].n = nin;
        sa[2] = res;
        var ignored;
        if (r == 0)
            r = sym_inline(t, setup, ss, NULL, sa, 3, NULL, &ignored);
    }
    grad_on(t);
    if (r < 0)
        return -1;
    sym_resolve(t, &res);

    /* what the forward told ctx */
    if (ctx_attr(t, &ctx, s_dirty) != NULL)
        return sym_fail(t, "torch.autograd.Function %s: mark_dirty (an input updated in place) not captured", cname);
    const var *outs;
    int nouts, is_tuple = items_of(&res, &outs, &nouts);
    if (!is_tuple && res.kind != V_TENSOR)
        return sym_fail(t, "torch.autograd.Function %s: forward returned neither a tensor nor a tuple: not captured", cname);
    int ntens = 0;
    for (int k = 0; k < nouts; k++)
        ntens += outs[k].kind == V_TENSOR;
    if (ntens == 0)
        return sym_fail(t, "torch.autograd.Function %s: forward returned no tensor: not captured", cname);
    if (nreq == 0) { /* nothing to differentiate: the outputs as the forward made them; ctx
                      * (what setup_context saved on it) is dropped as eager drops it */
        *out = res;
        sym_ctx_forget_writes(t, &ctx, &res, natt0, nundo0);
        return 0;
    }
    var *saved = ctx_attr(t, &ctx, s_to_save), *nondiff = ctx_attr(t, &ctx, s_nondiff);
    var *mat = ctx_attr(t, &ctx, s_mat);
    if (saved != NULL) {
        sym_resolve(t, saved);
        if (saved->kind != V_SEQ)
            return sym_fail(t, "autograd.Function: ctx.to_save is not a tuple");
        for (int i = 0; i < saved->n; i++)
            if (saved->items[i].kind != V_TENSOR && !sym_is_none(&saved->items[i]))
                return sym_fail(t, "torch.autograd.Function %s: save_for_backward of a non-tensor (eager raises)", cname);
    }
    if (nondiff != NULL && nondiff->kind != V_SEQ)
        return sym_fail(t, "autograd.Function: ctx.non_differentiable is not a tuple");
    if (mat != NULL && !(mat->kind == V_CONST && mat->obj == Py_True) && ntens > 1)
        return sym_fail(t, "torch.autograd.Function %s: set_materialize_grads(False) with several outputs: not captured", cname);

    /* the outputs: fresh values that carry the function's gradient */
    var *nouts_v = sym_alloc(t, nouts + 1), *gradv = sym_alloc(t, nouts + 1);
    ic_val *outv = trace_mem(t, sizeof(ic_val) * (size_t)(nouts + 1));
    ic_val *phv = trace_mem(t, sizeof(ic_val) * (size_t)(nouts + 1));
    if (nouts_v == NULL || gradv == NULL || outv == NULL || phv == NULL)
        return -1;
    int ndiff = 0;
    for (int k = 0; k < nouts; k++) {
        nouts_v[k] = outs[k];
        if (outs[k].kind != V_TENSOR)
            continue;
        const ic_meta *m = ic_value_meta(G, outs[k].val);
        if (m != NULL && ic_dtype_is_complex(m->dtype)) /* its gradient would be complex: not captured */
            return sym_fail(t, "autograd.Function with a complex output (left to eager)");
        int diff = m != NULL && m->dtype >= IC_F16 && m->dtype <= IC_F64;
        for (int i = 0; diff && nondiff != NULL && i < nondiff->n; i++)
            if (nondiff->items[i].kind == V_TENSOR && nondiff->items[i].oid == outs[k].oid && outs[k].oid > 0)
                diff = 0;
        if (!diff)
            continue;
        if (sym_tensor_out(t, ic_custom_output(G, outs[k].val), &nouts_v[k]) < 0)
            return -1;
        outv[ndiff++] = nouts_v[k].val;
    }
    if (ndiff == 0) { /* every output is non-differentiable: nothing requires grad */
        *out = res;
        return 0;
    }

    /* the backward, traced from the mark onto the graph with grad off */
    int base = ic_graph_num_values(G), gin0 = ic_graph_num_inputs(G);
    int nobj0 = t->nobj, ninputs0 = t->ninputs, nchk0 = t->nchk, ngens0 = t->ngens, nctxv0 = t->nctxv;
    int nundo1 = t->nundo, nattr1 = t->nattrw;
    sym_fx_mark mk;
    unsigned char *alias0 = nobj0 > 0 ? malloc((size_t)nobj0 + 1) : NULL;
    if (nobj0 > 0 && alias0 == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (alias0)
        memcpy(alias0, t->obj_aliased + 1, (size_t)nobj0);
    if (sym_fx_save(t, &mk) < 0) {
        free(alias0);
        return -1;
    }
    var st = sym_var(V_SEQ);
    if (saved != NULL) {
        st.items = sym_alloc(t, saved->n + 1);
        st.n = saved->n;
        if (st.items == NULL)
            goto fail_state;
        for (int i = 0; i < saved->n; i++) {
            st.items[i] = saved->items[i];
            /* a saved output is the output itself, as in eager (its fresh value, the same
             * data): the backward then reads what the forward returns anyway, and the
             * partitioner does not save (or recompute) the value beneath it as well (a
             * scanned step saving its h: one [T, ...] stack less) */
            for (int k = 0; k < nouts && st.items[i].kind == V_TENSOR; k++)
                if (outs[k].kind == V_TENSOR && nouts_v[k].val != outs[k].val && outs[k].oid > 0 &&
                    st.items[i].oid == outs[k].oid && st.items[i].val == outs[k].val) {
                    st.items[i] = nouts_v[k];
                    break;
                }
        }
    }
    if (ctx_set(t, &ctx, s_saved, &st) < 0)
        goto fail_state;
    var *ba = sym_alloc(t, nouts + 1);
    int bs = sym_source(t, DH_S_CONST, -1, 0, user_bwd);
    if (ba == NULL || bs < 0)
        goto fail_state;
    ba[0] = ctx;
    grad_off(t);
    for (int k = 0, d = 0; k < nouts && r == 0; k++) {
        if (outs[k].kind != V_TENSOR) {
            r = sym_const(t, Py_NewRef(Py_None), &ba[1 + k]);
            continue;
        }
        ic_meta m = *ic_value_meta(G, outs[k].val);
        ic_val gv;
        if (d < ndiff && nouts_v[k].val == outv[d]) { /* a differentiable output: its gradient */
            m.dyn = 0;
            int64_t stv = 1;
            for (int i = m.ndim - 1; i >= 0; i--) {
                m.strides[i] = stv;
                stv *= m.sizes[i] > 1 ? m.sizes[i] : 1;
            }
            gv = phv[d++] = ic_input(G, &m);
        } else { /* eager hands the backward zeros for it */
            gv = ic_expand(G, ic_cast(G, sym_num(t, 0.0), m.dtype), m.ndim, m.sizes);
        }
        r = sym_tensor_out(t, gv, &ba[1 + k]);
    }
    var gres;
    const char *nni = t->no_new_inputs;
    t->no_new_inputs = "torch.autograd.Function backward reads a tensor the forward did not have (not captured)";
    if (r == 0)
        r = sym_inline(t, user_bwd, bs, NULL, ba, nouts + 1, NULL, &gres);
    t->no_new_inputs = nni;
    grad_on(t);
    if (r < 0)
        goto abandon;
    sym_resolve(t, &gres);

    /* the gradients it returned, one per argument (eager's checks) */
    const var *gs;
    int ngs;
    items_of(&gres, &gs, &ngs);
    ic_val *inv = trace_mem(t, sizeof(ic_val) * (size_t)(nargs + 1));
    ic_val *ginv = trace_mem(t, sizeof(ic_val) * (size_t)(nargs + 1));
    if (inv == NULL || ginv == NULL)
        goto abandon;
    int nin = 0;
    if (ngs < nargs) {
        sym_fail(t, "torch.autograd.Function %s: backward returned %d gradients for %d inputs (eager raises)", cname,
                 ngs, nargs);
        goto abandon;
    }
    for (int i = 0; i < ngs; i++) {
        const var *gi = &gs[i];
        if (sym_is_none(gi))
            continue;
        if (i >= nargs || args[i].kind != V_TENSOR || gi->kind != V_TENSOR) {
            sym_fail(t, "torch.autograd.Function %s: backward returned %s at position %d (eager raises)", cname,
                     gi->kind == V_TENSOR ? "a gradient for a non-tensor input" : "a non-tensor gradient", i);
            goto abandon;
        }
        if (!req[i])
            continue;
        const ic_meta *xm = ic_value_meta(G, args[i].val), *gm = ic_value_meta(G, gi->val);
        if (xm == NULL || gm == NULL || !expandable(xm, gm) || gm->dtype < IC_F16 || gm->dtype > IC_F64) {
            sym_fail(t, "torch.autograd.Function %s: backward returned a gradient of another shape or dtype at "
                        "position %d (eager raises)", cname, i);
            goto abandon;
        }
        inv[nin] = args[i].val;
        ginv[nin++] = gi->val;
    }
    /* the backward's trace must leave the forward's state as it found it */
    int bad = t->ninputs != ninputs0 || ic_graph_num_inputs(G) != gin0 + ndiff || t->nchk != nchk0 ||
              t->ngens != ngens0 || t->nctxv != nctxv0 || t->nundo != nundo1 || t->pending_exc != NULL ||
              (nobj0 > 0 && memcmp(t->obj_val + 1, mk.obj_val, sizeof(ic_val) * (size_t)nobj0) != 0) ||
              (nattr1 > 0 && memcmp(t->attrw, mk.attrw, sizeof t->attrw[0] * (size_t)nattr1) != 0);
    for (int i = nattr1 + 1; i < t->nattrw && !bad; i++) /* (nattr1: saved_tensors) */
        bad = t->attrw[i].obj != ctx.obj;
    if (bad) {
        sym_fail(t, "torch.autograd.Function %s: its backward updates state the forward can see (not captured)",
                 cname);
        goto abandon;
    }
    if (ic_custom_capture(G, base, gin0, ndiff, outv, phv, nin, inv, ginv) < 0) {
        sym_check_graph(t);
        goto abandon;
    }
    t->nattrw = nattr1;
    forget(t, base, nobj0, alias0);
    sym_fx_drop(&mk);
    sym_ctx_forget_writes(t, &ctx, &res, natt0, nundo0);
    if (!is_tuple) {
        *out = nouts_v[0];
        return 0;
    }
    *out = sym_var(V_SEQ);
    out->items = nouts_v;
    out->n = nouts;
    return 0;

abandon: /* the call fails (a graph break): the mark's values and placeholders leave the graph */
    ic_custom_abort(G, base, gin0);
    forget(t, base, nobj0, alias0);
    sym_fx_drop(&mk);
    return -1;
fail_state:
    free(alias0);
    sym_fx_drop(&mk);
    return -1;
}
