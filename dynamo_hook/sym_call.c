/* sym_call.c — calls: inlining Python functions and nn.Module.forward, and the CALL /
 * CALL_FUNCTION_EX / KW_NAMES / MAKE_FUNCTION / BEFORE_WITH handlers. */
#include "sym_interp.h"
#include "sym_sem.h"

#include <string.h>
/* ---- inlining ----------------------------------------------------------------------- */

static int inline_code(trace *t, PyCodeObject *code, PyObject *globals, PyObject *func,
                       int fn_src, var *closure, int nclosure, const var *made, const var *self,
                       var *args, int nargs, PyObject *kwnames, var *out);
static int recompute_region(trace *t, PyObject *func, int fn_src, const var *self, var *args, int nargs,
                            PyObject *kwnames, var *out);

/* torchc/_polyfills.py recompute_region(function, args, kwargs[, context_fn]), called by the polyfill of
 * torch.utils.checkpoint.checkpoint: inlined with the graph's checkpoint mark around it
 * (ic_set_recompute: the backward recomputes what it computes). A region that updates a
 * tensor that existed before it in place, or writes an attribute (BatchNorm's running
 * statistics), fails the trace: eager's recompute in the backward repeats the update, which
 * the graph would not; the call then runs eagerly. An attribute the region sets and sets back
 * to the constant it had (attr_restored) does not count. */
/* the Python object a traced value stands for, where it is one the trace can hand to a call
 * made now (new reference): a constant, a function or object (identity-guarded where it was
 * read through a source; not one made by the trace), a list/tuple of such, a functools.partial
 * of such made in the trace.
 * NULL without an error set: not such a value; NULL with an error: failed. */
static PyObject *real_object(trace *t, const var *v, int depth) {
    if (depth > 8)
        return NULL;
    switch (v->kind) {
    case V_CONST:
        return Py_XNewRef(v->obj);
    case V_OBJ:
    case V_FUNC:
        if (v->kind == V_FUNC && v->op == SYM_PARTIAL) {
            PyObject *f = real_object(t, &v->items[0], depth + 1);
            PyObject *kwn = v->items[v->n].obj;
            int nkw = v->pos, npos = v->n - 1 - nkw;
            PyObject *pos = f ? PyTuple_New(1 + npos) : NULL, *kw = pos ? PyDict_New() : NULL, *r = NULL;
            if (kw == NULL) {
                Py_XDECREF(f);
                Py_XDECREF(pos);
                return NULL;
            }
            PyTuple_SET_ITEM(pos, 0, f);
            int ok = 1;
            for (int i = 0; i < npos && ok; i++) {
                PyObject *o = real_object(t, &v->items[1 + i], depth + 1);
                if (o == NULL)
                    ok = 0;
                else
                    PyTuple_SET_ITEM(pos, 1 + i, o);
            }
            for (int i = 0; i < nkw && ok; i++) {
                PyObject *o = real_object(t, &v->items[1 + npos + i], depth + 1);
                ok = o != NULL && PyDict_SetItem(kw, PyTuple_GET_ITEM(kwn, i), o) == 0;
                Py_XDECREF(o);
            }
            if (ok) {
                PyObject *ft = PyImport_ImportModule("functools");
                PyObject *pt = ft ? PyObject_GetAttrString(ft, "partial") : NULL;
                r = pt ? PyObject_Call(pt, pos, kw) : NULL;
                Py_XDECREF(pt);
                Py_XDECREF(ft);
            }
            Py_DECREF(pos);
            Py_DECREF(kw);
            return r;
        }
        /* not a function made in the trace (MAKE_FUNCTION: its globals set) */
        if (v->obj == NULL || (v->kind == V_FUNC && v->globals != NULL) ||
            (v->src >= 0 && sym_guard_id(t, v->src, v->obj) < 0))
            return NULL;
        return Py_NewRef(v->obj);
    case V_SEQ: {
        if (v->obj != NULL)
            return NULL;
        PyObject *l = PyList_New(v->n);
        for (int i = 0; l != NULL && i < v->n; i++) {
            PyObject *o = real_object(t, &v->items[i], depth + 1);
            if (o == NULL)
                Py_CLEAR(l);
            else
                PyList_SET_ITEM(l, i, o);
        }
        if (l != NULL && !v->is_list)
            Py_SETREF(l, PyList_AsTuple(l));
        return l;
    }
    default:
        return NULL;
    }
}

/* Selective activation checkpointing: checkpoint(..., context_fn=cf) where cf() gives
 * create_selective_checkpoint_contexts's contexts. torchc/_polyfills.py _sac_policy calls cf
 * and its policy once per matmul/conv/attention extern the region made [from, end), in
 * order, with the ATen op eager dispatches for it; the ones the policy saves are marked
 * (ic_set_checkpoint_policy) and the partitioner saves them. What else the region made is
 * recomputed (the policy is not asked about pointwise ops and reductions). 0, or -1 (the
 * trace fails with the reason: the call runs eagerly). */
static int checkpoint_policy(trace *t, const var *cfv, int from) {
    static PyObject *policy_fn;
    if (policy_fn == NULL) {
        PyObject *m = PyImport_ImportModule("torchc._polyfills");
        policy_fn = m ? PyObject_GetAttrString(m, "_sac_policy") : NULL; /* kept for the process */
        Py_XDECREF(m);
        if (policy_fn == NULL)
            return -1;
    }
    PyObject *cf = real_object(t, cfv, 0);
    if (cf == NULL) {
        if (PyErr_Occurred())
            return -1;
        return sym_fail(t, "torch.utils.checkpoint with a context_fn made in the compiled function (not a "
                           "partial of known values)");
    }
    int end = ic_graph_num_values(t->g), rc = -1;
    PyObject *items = PyList_New(0), *vals = NULL, *res = NULL;
    if (items == NULL)
        goto done;
    for (int v = from; v < end; v++) {
        int k = ic_value_extern_kind(t->g, v);
        if (k != IC_EXT_MM && k != IC_EXT_BMM && k != IC_EXT_MATMUL && k != IC_EXT_ADDMM && k != IC_EXT_LINEAR &&
            k != IC_EXT_BADDBMM && k != IC_EXT_CONV && k != IC_EXT_SDPA)
            continue;
        ic_val in[IC_EXT_MAXIN];
        int nin = ic_value_operands(t->g, v, in);
        PyObject *metas = PyList_New(0);
        if (metas == NULL)
            goto done;
        for (int i = 0; i <= nin; i++) {
            const ic_meta *m = ic_value_meta(t->g, i < nin ? in[i] : v);
            PyObject *sz = PyTuple_New(m->ndim), *st = PyTuple_New(m->ndim);
            for (int d = 0; sz && st && d < m->ndim; d++) {
                PyTuple_SET_ITEM(sz, d, PyLong_FromLongLong(m->sizes[d]));
                PyTuple_SET_ITEM(st, d, PyLong_FromLongLong(m->strides[d]));
            }
            PyObject *e = sz && st ? Py_BuildValue("(OOO)", sz, st, sym_dtype_object(m->dtype)) : NULL;
            Py_XDECREF(sz);
            Py_XDECREF(st);
            if (e == NULL || PyList_Append(metas, e) < 0) {
                Py_XDECREF(e);
                Py_DECREF(metas);
                goto done;
            }
            Py_DECREF(e);
        }
        PyObject *it = Py_BuildValue("(siN)", ic_extern_name((ic_extern_kind)k), t->device_type == TC_DEV_CUDA, metas);
        if (it == NULL || PyList_Append(items, it) < 0) {
            Py_XDECREF(it);
            goto done;
        }
        Py_DECREF(it);
        PyObject *iv = PyLong_FromLong(v);
        if (iv == NULL)
            goto done;
        if (vals == NULL && (vals = PyList_New(0)) == NULL) {
            Py_DECREF(iv);
            goto done;
        }
        int ar = PyList_Append(vals, iv);
        Py_DECREF(iv);
        if (ar < 0)
            goto done;
    }
    res = PyObject_CallFunctionObjArgs(policy_fn, cf, items, NULL);
    if (res == NULL)
        goto done;
    if (PyUnicode_Check(res)) {
        rc = sym_fail(t, "%s", PyUnicode_AsUTF8(res));
        goto done;
    }
    if (!PyList_Check(res) || PyList_GET_SIZE(res) != PyList_GET_SIZE(items)) {
        rc = sym_fail(t, "torch.utils.checkpoint's selective policy: no answer");
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(res); i++)
        ic_set_checkpoint_policy(t->g, (ic_val)PyLong_AsLong(PyList_GET_ITEM(vals, i)),
                                 PyObject_IsTrue(PyList_GET_ITEM(res, i)) == 1);
    rc = 0;
done:
    Py_DECREF(cf);
    Py_XDECREF(items);
    Py_XDECREF(vals);
    Py_XDECREF(res);
    return rc;
}

static int same_const(PyObject *a, PyObject *b) {
    if (a == b)
        return 1;
    if (a == NULL || b == NULL || Py_TYPE(a) != Py_TYPE(b) ||
        !(PyLong_CheckExact(a) || PyFloat_CheckExact(a) || PyUnicode_CheckExact(a)))
        return 0;
    int r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0)
        (void)tc_clear_expected(PyExc_Exception);
    return r == 1;
}

/* attribute write i of a checkpoint region whose writes start at `from`: 1 when it is not the
 * last write of its attribute in the region, or the last one gives the attribute back the
 * constant it had before the region (a set and a reset: a context-variable-like flag a library
 * sets around a call), which eager's recompute repeats without a lasting change */
static int attr_restored(trace *t, int from, int i) {
    const sym_attrw *w = &t->attrw[i];
    if (w->obj == NULL || w->name == NULL || !PyUnicode_Check(w->name))
        return 0;
    for (int j = i + 1; j < t->nattrw; j++)
        if (t->attrw[j].obj == w->obj && t->attrw[j].name != NULL && PyUnicode_Check(t->attrw[j].name) &&
            PyUnicode_Compare(t->attrw[j].name, w->name) == 0)
            return 1; /* a later write decides */
    if (w->val == NULL || w->val->kind != V_CONST)
        return 0;
    for (int j = from - 1; j >= 0; j--)
        if (t->attrw[j].obj == w->obj && t->attrw[j].name != NULL && PyUnicode_Check(t->attrw[j].name) &&
            PyUnicode_Compare(t->attrw[j].name, w->name) == 0)
            return t->attrw[j].val != NULL && t->attrw[j].val->kind == V_CONST &&
                   same_const(t->attrw[j].val->obj, w->val->obj);
    /* not written before the region in the trace: the object's own value (writes are replayed
     * after the graph) */
    PyObject *before = PyObject_GenericGetAttr(w->obj, w->name);
    if (before == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    int r = same_const(before, w->val->obj);
    Py_DECREF(before);
    return r;
}

static int recompute_region(trace *t, PyObject *func, int fn_src, const var *self, var *args, int nargs,
                            PyObject *kwnames, var *out) {
    int nobj = t->nobj, nattrw = t->nattrw, ncap = t->capnmut, from = ic_graph_num_values(t->g);
    int *before = malloc(sizeof(int) * (size_t)(2 * ncap + 1));
    if (before == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (ncap > 0)
        memcpy(before, t->obj_nmut, sizeof(int) * (size_t)(2 * ncap));
    ic_set_recompute(t->g, 1);
    int rc = inline_code(t, (PyCodeObject *)PyFunction_GET_CODE(func), PyFunction_GET_GLOBALS(func), func,
                         fn_src, NULL, 0, NULL, self, args, nargs, kwnames, out);
    ic_set_recompute(t->g, 0);
    if (rc == 0) {
        /* in-place ops on a tensor the region did not make: one seen before it, or a graph
         * input first read inside it (a module's buffer) */
        int changed = 0;
        for (int i = nattrw; i < t->nattrw && !changed; i++)
            changed = !attr_restored(t, nattrw, i);
        for (int o = 1; o <= t->nobj && o < t->capnmut && !changed; o++) {
            if (t->obj_nmut[2 * o] == (o < ncap ? before[2 * o] : 0))
                continue;
            changed = o <= nobj;
            for (int k = 0; k < t->ninputs && !changed; k++)
                changed = t->input_oid[k] == o;
        }
        if (changed)
            rc = sym_fail(t, "a torch.utils.checkpoint function that updates a tensor or an attribute "
                          "in place (eager repeats the update when it recomputes in the backward)");
    }
    /* recompute_region(function, args, kwargs, context_fn): a selective checkpoint's */
    if (rc == 0 && nargs - (kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0) >= 4 &&
        !(args[3].kind == V_CONST && args[3].obj == Py_None))
        rc = checkpoint_policy(t, &args[3], from);
    free(before);
    return rc;
}

int sym_inline(trace *t, PyObject *func, int fn_src, const var *self, var *args, int nargs,
               PyObject *kwnames, var *out) {
    if (fn_src >= 0) {
        /* the function object is identity-guarded; its code and defaults can still be
         * reassigned: guard them too (getattr re-run by the guard) */
        static PyObject *s_code, *s_defaults, *s_kwdefaults;
        if (s_code == NULL) {
            s_code = PyUnicode_InternFromString("__code__");
            s_defaults = PyUnicode_InternFromString("__defaults__");
            s_kwdefaults = PyUnicode_InternFromString("__kwdefaults__");
            if (s_code == NULL || s_defaults == NULL || s_kwdefaults == NULL)
                return -1;
        }
        int sc = sym_source(t, DH_S_ATTR, fn_src, 2, s_code);
        int sd = sym_source(t, DH_S_ATTR, fn_src, 2, s_defaults);
        if (sc < 0 || sd < 0 || sym_guard_id(t, sc, PyFunction_GET_CODE(func)) < 0)
            return -1;
        PyObject *defs = PyFunction_GET_DEFAULTS(func);
        if (sym_guard_id(t, sd, defs ? defs : Py_None) < 0)
            return -1;
        /* keyword-only defaults (f.__kwdefaults__ = {...} after a call was not seen) */
        PyObject *kwdefs = PyFunction_GET_KW_DEFAULTS(func);
        if (kwdefs != NULL) {
            int sk = sym_source(t, DH_S_ATTR, fn_src, 2, s_kwdefaults);
            if (sk < 0 || sym_guard_id(t, sk, kwdefs) < 0)
                return -1;
        }
    }
    if (self == NULL) {
        int crc = sym_process_const_call(t, func, args, nargs, kwnames, out); /* ops_models.c */
        if (crc != 1)
            return crc;
    }
    int prc = sym_obj_polyfill_func(t, func, self, args, nargs, kwnames, out); /* obj_func.c */
    if (prc != 1)
        return prc;
    if (sym_obj_is_recompute_region(func))
        return recompute_region(t, func, fn_src, self, args, nargs, kwnames, out);
    return inline_code(t, (PyCodeObject *)PyFunction_GET_CODE(func), PyFunction_GET_GLOBALS(func),
                       func, fn_src, NULL, 0, NULL, self, args, nargs, kwnames, out);
}

int sym_inline_made(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    /* its globals: those of the frame that made it, whose function has source fn->val
     * (-1: the top frame) */
    return inline_code(t, (PyCodeObject *)fn->obj, fn->globals ? fn->globals : t->globals, NULL,
                       fn->val, fn->items, fn->n, fn, NULL, args, nargs, kwnames, out);
}

/* code is that of the wrapper torch._compile._disable_dynamo puts around functions torch
 * keeps from torch.compile (torch.utils.checkpoint.checkpoint & co): one code object for all
 * of them, found once by wrapping a builtin (kept for the process) */
static int is_torch_disabled_wrapper(PyCodeObject *code) {
    static PyObject *wrapper_code;
    static int inited;
    if (!inited) {
        inited = 1;
        PyObject *mod = PyImport_ImportModule("torch._compile");
        PyObject *dd = mod ? PyObject_GetAttrString(mod, "_disable_dynamo") : NULL;
        PyObject *bi = dd ? PyImport_ImportModule("builtins") : NULL;
        PyObject *len = bi ? PyObject_GetAttrString(bi, "len") : NULL;
        PyObject *w = len ? PyObject_CallOneArg(dd, len) : NULL;
        Py_XDECREF(len);
        Py_XDECREF(bi);
        if (w != NULL && PyFunction_Check(w))
            wrapper_code = Py_NewRef(PyFunction_GET_CODE(w));
        Py_XDECREF(w);
        Py_XDECREF(dd);
        Py_XDECREF(mod);
        if (wrapper_code == NULL)
            (void)tc_clear_expected(PyExc_Exception);
    }
    return wrapper_code != NULL && (PyObject *)code == wrapper_code;
}

static int inline_code(trace *t, PyCodeObject *code, PyObject *globals, PyObject *func,
                       int fn_src, var *closure, int nclosure, const var *made, const var *self,
                       var *args, int nargs, PyObject *kwnames, var *out) {
    if (t->depth >= dh_limit.inline_depth || t->depth >= SYM_INLINE_DEPTH)
        return sym_fail(t, "inlining deeper than %d calls (recursion? torchc.config.inline_depth)",
                        dh_limit.inline_depth);
    /* generators (genexprs, functions with yield) stop at RETURN_GENERATOR: the value is a
     * V_GEN whose frame lives with the trace and runs lazily (sym_gen.c) */
    if (code->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
        return sym_fail(t, "call to coroutine %U", code->co_name);
    /* try/except/with: only the path without exceptions is traced; anything that would
     * raise fails the trace (eager then runs, raising and handling as usual) */
    if (dh_code_is_disabled(code))
        return sym_fail(t, "call to %U, which is torchc.disable'd", code->co_qualname);
    if (func != NULL && is_torch_disabled_wrapper(code))
        return sym_fail(t, "call to %U, which torch runs without compilation (torch._disable_dynamo: "
                        "e.g. torch.utils.checkpoint; the call and what it calls run eagerly)",
                        ((PyFunctionObject *)func)->func_qualname);
    if (dh_n_redirects && dh_frame_redirect(code))
        return sym_fail(t, "%U runs between graphs: torchc/_optim.py's compiled step in its place "
                        "(SGD, Adam, AdamW), else eager", code->co_qualname);
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - nkw;
    /* the keywords **kwargs takes: nkw ints in room the trace frees (vars' room, any count) */
    int *extra_kw = NULL, nextra_kw = 0;
    if (nkw > 0 && (extra_kw = (int *)sym_alloc(t, (int)((nkw * sizeof(int) + sizeof(var) - 1) / sizeof(var)))) == NULL)
        return -1;
    int is_gen = (code->co_flags & CO_GENERATOR) != 0;
    sframe *f = is_gen ? sym_gen_frame_new(t) : calloc(1, sizeof *f);
    if (f == NULL) {
        if (!is_gen)
            PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    f->code = code;
    f->top = 0;
    f->globals = globals;
    f->func = func;
    f->func_src = fn_src;
    f->closure = closure;
    f->nclosure = nclosure;
    f->gen = is_gen;
    f->nlocals = (int)code->co_nlocalsplus;
    f->locals = sym_alloc(t, f->nlocals);
    if (f->locals == NULL)
        goto done;
    /* bind: [self] + positionals, keywords by name, then defaults */
    int argc = code->co_argcount, kwonly = code->co_kwonlyargcount;
    int given = npos + (self ? 1 : 0);
    int i = 0;
    if (self) { /* one positional list [self] + args (self may land in *args) */
        var *all = sym_alloc(t, nargs + 1);
        if (all == NULL)
            goto done;
        all[0] = *self;
        if (nargs > 0)
            memcpy(all + 1, args, (size_t)nargs * sizeof(var));
        args = all;
        npos = given;
        self = NULL;
    }
    for (int k = 0; k < npos && i < argc; k++)
        f->locals[i++] = args[k];
    int extra_pos = given - argc;
    if (extra_pos > 0) {
        if (!(code->co_flags & CO_VARARGS)) {
            sym_fail(t, "%U() takes %d positional arguments but %d were given (eager will raise)",
                     code->co_name, argc, given);
            goto done;
        }
        var *items = sym_alloc(t, extra_pos);
        if (items == NULL)
            goto done;
        for (int k = 0; k < extra_pos; k++)
            items[k] = args[npos - extra_pos + k];
        var *va = &f->locals[argc + kwonly];
        va->kind = V_SEQ;
        va->src = -1;
        va->n = extra_pos;
        va->items = items;
    } else if (code->co_flags & CO_VARARGS) {
        var *va = &f->locals[argc + kwonly];
        if (sym_const(t, PyTuple_New(0), va) < 0)
            goto done;
    }
    for (int k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = self ? 1 : 0; j < argc + kwonly; j++)
            if (PyUnicode_Compare(PyTuple_GET_ITEM(code->co_localsplusnames, j), kn) == 0)
                found = j;
        if (found < 0 && (code->co_flags & CO_VARKEYWORDS)) {
            extra_kw[nextra_kw++] = k;
            continue;
        }
        if (found < 0) {
            sym_fail(t, "%U() got an unexpected keyword argument %R (eager will raise)",
                     code->co_name, kn);
            goto done;
        }
        if (f->locals[found].kind != V_UNSET) {
            sym_fail(t, "%U() got multiple values for %R", code->co_name, kn);
            goto done;
        }
        f->locals[found] = args[npos + k];
    }
    if (code->co_flags & CO_VARKEYWORDS) {
        /* **kwargs: a dict of the keywords no parameter took */
        PyObject *keys = PyTuple_New(nextra_kw);
        var *vals = sym_alloc(t, nextra_kw);
        if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL)
            goto done;
        for (int k = 0; k < nextra_kw; k++) {
            PyTuple_SET_ITEM(keys, k, Py_NewRef(PyTuple_GET_ITEM(kwnames, extra_kw[k])));
            vals[k] = args[npos + extra_kw[k]];
        }
        var *kwv = &f->locals[argc + kwonly + ((code->co_flags & CO_VARARGS) ? 1 : 0)];
        *kwv = sym_var(V_DICT);
        kwv->obj = keys;
        kwv->items = vals;
        kwv->n = nextra_kw;
    }
    PyObject *defs = func ? PyFunction_GET_DEFAULTS(func) : NULL;
    PyObject *kwdefs = func ? PyFunction_GET_KW_DEFAULTS(func) : NULL;
    int ndefs = defs ? (int)PyTuple_GET_SIZE(defs) : 0;
    /* a function made in the trace: its defaults are traced values (sym_op_make_function) */
    const var *mdefs = made && made->pos > 0 ? made->items + made->n : NULL;
    const var *mkw = made && made->is_list ? made->items + made->n + made->pos : NULL;
    if (made)
        ndefs = made->pos;
    for (int j = 0; j < argc + kwonly; j++) {
        if (f->locals[j].kind != V_UNSET)
            continue;
        if (made) {
            const var *dv = NULL;
            if (j < argc && j >= argc - ndefs)
                dv = &mdefs[j - (argc - ndefs)];
            else if (j >= argc && mkw != NULL) {
                PyObject *pn = PyTuple_GET_ITEM(code->co_localsplusnames, j);
                for (int k = 0; k < mkw->n && dv == NULL; k++)
                    if (PyUnicode_Check(PyTuple_GET_ITEM(mkw->obj, k)) &&
                        PyUnicode_Compare(PyTuple_GET_ITEM(mkw->obj, k), pn) == 0)
                        dv = &mkw->items[k];
            }
            if (dv == NULL) {
                sym_fail(t, "%U() missing argument %R (eager will raise)", code->co_name,
                         PyTuple_GET_ITEM(code->co_localsplusnames, j));
                goto done;
            }
            f->locals[j] = *dv;
            continue;
        }
        PyObject *d = NULL;
        if (j < argc && j >= argc - ndefs)
            d = PyTuple_GET_ITEM(defs, j - (argc - ndefs));
        else if (j >= argc && kwdefs)
            d = PyDict_GetItemWithError(kwdefs, PyTuple_GET_ITEM(code->co_localsplusnames, j));
        if (d == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            sym_fail(t, "%U() missing argument %R (eager will raise)", code->co_name,
                     PyTuple_GET_ITEM(code->co_localsplusnames, j));
            goto done;
        }
        /* defaults belong to the (guarded) function object: constants */
        if (sym_wrap(t, d, -1, &f->locals[j]) < 0)
            goto done;
    }
    t->depth++;
    PyObject *saved_globals = t->cur_globals;
    int saved_autocast = dh_tl_autocast;
    t->cur_globals = globals;
    rc = sym_run_frame(t, f, out);
    if (rc < 0) /* a region it left open when it failed: closed (the call runs eagerly) */
        dh_tl_autocast = saved_autocast;
    t->cur_globals = saved_globals;
    t->depth--;
    if (rc >= 0) /* dynamic ints passed in: the callee's instructions counted their uses */
        t->dyn_inst = t->cur_inst;
    if (is_gen && rc == SYM_YIELD) /* stopped at RETURN_GENERATOR: the generator */
        rc = sym_gen_new(t, f, 0, out);
    else if (is_gen && rc >= 0)
        rc = sym_fail(t, "generator function did not stop at RETURN_GENERATOR");
done:
    if (!is_gen) {
        sym_fx_forget(t, f, sizeof *f); /* its stack dies with it */
        free(f);
    }
    return rc;
}

static PyObject *str_forward, *str_hooks[4];

/* torch.jit.script keeps the Python function it compiled as `_torchdynamo_inline` on the
 * ScriptFunction (what torch.compile traces in its place): the call inlines that function,
 * read through a guarded attribute source. 1 where the object has none (a ScriptFunction
 * loaded from a file) or is no ScriptFunction: any other callable's attribute of that name
 * (a user's, one a __getattr__ delegates) says nothing of what calling it does, and reading
 * it would run that __getattr__ at trace time. */
static int inline_script_source(trace *t, const var *obj, var *args, int nargs, PyObject *kwnames,
                                var *out) {
    static PyObject *name, *script_fn_type;
    if (obj->src < 0)
        return 1;
    if (name == NULL && (name = PyUnicode_InternFromString("_torchdynamo_inline")) == NULL)
        return -1;
    if (script_fn_type == NULL) { /* kept */
        PyObject *c = PyImport_ImportModule("torch._C");
        script_fn_type = c ? PyObject_GetAttrString(c, "ScriptFunction") : NULL;
        Py_XDECREF(c);
        if (script_fn_type == NULL)
            return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 1;
    }
    if (!PyType_Check(script_fn_type) || !PyObject_TypeCheck(obj->obj, (PyTypeObject *)script_fn_type))
        return 1;
    PyObject *fn = PyObject_GetAttr(obj->obj, name);
    if (fn == NULL)
        return tc_clear_expected(PyExc_AttributeError) < 0 ? -1 : 1;
    if (!PyFunction_Check(fn)) {
        Py_DECREF(fn);
        return 1;
    }
    int s = sym_source(t, DH_S_ATTR, obj->src, 2, name); /* a full getattr in the guard */
    int rc = s < 0 ? -1 : sym_inline(t, fn, s, NULL, args, nargs, kwnames, out);
    Py_DECREF(fn);
    return rc;
}

/* module(x) whose forward is an instance attribute (m.forward = m.other_method, or a plain
 * function): eager's _call_impl calls it. The dict's value is identity-guarded (a bound
 * method keeps its __func__ and __self__), its function's code and defaults by sym_inline. */
static int inline_instance_forward(trace *t, const var *mod, PyObject *dict, var *args, int nargs,
                                   PyObject *kwnames, var *out) {
    static PyObject *s_func;
    if (s_func == NULL && (s_func = PyUnicode_InternFromString("__func__")) == NULL)
        return -1;
    PyObject *v = PyDict_GetItemWithError(dict, str_forward); /* borrowed */
    if (v == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "module %s: forward set on the instance", Py_TYPE(mod->obj)->tp_name);
    }
    int bound = PyMethod_Check(v) && PyMethod_GET_SELF(v) == mod->obj && PyFunction_Check(PyMethod_GET_FUNCTION(v));
    if (!bound && !PyFunction_Check(v))
        return sym_fail(t, "module %s: forward set on the instance to a %s", Py_TYPE(mod->obj)->tp_name,
                        Py_TYPE(v)->tp_name);
    int s = sym_source(t, DH_S_ATTR, mod->src, 0, str_forward);
    if (s < 0 || sym_guard_id(t, s, v) < 0)
        return -1;
    if (!bound)
        return sym_inline(t, v, s, NULL, args, nargs, kwnames, out);
    int fs = sym_source(t, DH_S_ATTR, s, 2, s_func);
    return fs < 0 ? -1 : sym_inline(t, PyMethod_GET_FUNCTION(v), fs, mod, args, nargs, kwnames, out);
}

int sym_inline_module(trace *t, const var *mod, var *args, int nargs, PyObject *kwnames,
                      var *out) {
    if (str_forward == NULL) {
        str_forward = PyUnicode_InternFromString("forward");
        str_hooks[0] = PyUnicode_InternFromString("_forward_hooks");
        str_hooks[1] = PyUnicode_InternFromString("_forward_pre_hooks");
        str_hooks[2] = PyUnicode_InternFromString("_backward_hooks");
        str_hooks[3] = PyUnicode_InternFromString("_backward_pre_hooks");
        if (!str_forward || !str_hooks[3])
            return -1;
    }
    if (!sym_is_nn_module(mod->obj)) {
        /* a callable object: inline type(obj).__call__ */
        PyObject *call = PyUnicode_InternFromString("__call__");
        PyObject *fn = call ? _PyType_Lookup(Py_TYPE(mod->obj), call) : NULL;
        if (fn == NULL || !PyFunction_Check(fn)) {
            Py_XDECREF(call);
            int sr = inline_script_source(t, mod, args, nargs, kwnames, out);
            if (sr != 1)
                return sr;
            if (PyMethod_Check(mod->obj) && mod->src >= 0) /* a bound method held as a value (sym_exc.c) */
                return sym_call_bound_method(t, mod, args, nargs, kwnames, out);
            if (PyWeakref_CheckRefExact(mod->obj) && mod->src >= 0 && nargs == 0) {
                /* ref() of a weakref read from the frame: its referent, through a source */
                PyObject *v = PyWeakref_GetObject(mod->obj);
                int s = v == NULL ? -1 : sym_source(t, DH_S_DEREF, mod->src, 0, NULL);
                if (s < 0)
                    return -1;
                Py_INCREF(v);
                int rc = sym_wrap(t, v, s, out);
                Py_DECREF(v);
                return rc;
            }
            int rc = sym_obj_call_polyfill(t, mod, args, nargs, kwnames, out); /* obj_func.c */
            if (rc != 1)
                return rc;
            return sym_fail(t, "call of a %s object", Py_TYPE(mod->obj)->tp_name);
        }
        int s = sym_source(t, DH_S_ATTR, mod->src, 1, call);
        Py_DECREF(call);
        return s < 0 ? -1 : sym_inline(t, fn, s, mod, args, nargs, kwnames, out);
    }
    int fwd_hooks = 0;
    for (int i = 0; i < 4; i++) {
        PyObject *h = dh_module_getattr(mod->obj, str_hooks[i]);
        int busy = h != NULL && PyDict_Check(h) && PyDict_GET_SIZE(h) > 0;
        int len = busy ? (int)PyDict_GET_SIZE(h) : 0;
        Py_XDECREF(h);
        if (busy && i >= 2)
            return sym_fail(t, "module %s has backward hooks", Py_TYPE(mod->obj)->tp_name);
        fwd_hooks |= busy;
        /* hooks registered later (output capturing on a second call) must not reuse a
         * trace that inlined this forward without them */
        int hs = mod->src >= 0 ? sym_source(t, DH_S_ATTR, mod->src, 0, str_hooks[i]) : -1;
        if (mod->src >= 0 && (hs < 0 || sym_guard_len(t, hs, len) < 0))
            return -1;
    }
    if (sym_global_hooks_guard(t) < 0)
        return -1;
    if (fwd_hooks && mod->src >= 0) {
        /* forward hooks / pre-hooks: nn.Module.__call__ (its _call_impl) is inlined as eager
         * runs it: the hooks in order, their results replacing args / the output, what they
         * do to objects the caller sees replayed (obj_hooks note in tests/test_capture_hooks.py) */
        PyObject *call = PyUnicode_InternFromString("__call__");
        PyObject *fn = call ? _PyType_Lookup(Py_TYPE(mod->obj), call) : NULL;
        if (fn == NULL || !PyFunction_Check(fn)) {
            Py_XDECREF(call);
            return sym_fail(t, "module %s has hooks and no Python __call__", Py_TYPE(mod->obj)->tp_name);
        }
        int s = sym_source(t, DH_S_ATTR, mod->src, 1, call);
        Py_DECREF(call);
        return s < 0 ? -1 : sym_inline(t, fn, s, mod, args, nargs, kwnames, out);
    }
    if (fwd_hooks)
        return sym_fail(t, "module %s has hooks", Py_TYPE(mod->obj)->tp_name);
    /* a subclass's own __call__ (transformers' GradientCheckpointingLayer runs its forward
     * through torch.utils.checkpoint there): inlined as eager calls it, not skipped for the
     * forward (the type is guarded: its __call__ too) */
    if (mod->src >= 0) {
        static PyObject *module_call, *s_call;
        if (module_call == NULL) {
            s_call = PyUnicode_InternFromString("__call__");
            PyObject *nn = s_call ? PyImport_ImportModule("torch.nn") : NULL;
            PyObject *mt = nn ? PyObject_GetAttrString(nn, "Module") : NULL;
            module_call = mt && PyType_Check(mt) ? _PyType_Lookup((PyTypeObject *)mt, s_call) : NULL;
            Py_XINCREF(module_call); /* kept for the process */
            Py_XDECREF(mt);
            Py_XDECREF(nn);
            if (module_call == NULL)
                return -1;
        }
        PyObject *fn = _PyType_Lookup(Py_TYPE(mod->obj), s_call);
        if (fn != NULL && fn != module_call && PyFunction_Check(fn)) {
            int s = sym_source(t, DH_S_ATTR, mod->src, 1, s_call);
            return s < 0 ? -1 : sym_inline(t, fn, s, mod, args, nargs, kwnames, out);
        }
    }
    PyObject *fwd = _PyType_Lookup(Py_TYPE(mod->obj), str_forward);
    if (fwd == NULL || !PyFunction_Check(fwd))
        return sym_fail(t, "module %s has no Python forward", Py_TYPE(mod->obj)->tp_name);
    /* eager's _call_impl calls self.forward: an instance attribute (m.forward = f, set before
     * or after a call) wins over the class's; its absence guarded */
    PyObject **dp = mod->src >= 0 ? _PyObject_GetDictPtr(mod->obj) : NULL;
    int shadow = dp != NULL ? sym_guard_key(t, mod->src, *dp, str_forward) : 0;
    if (shadow < 0)
        return -1;
    if (shadow)
        return inline_instance_forward(t, mod, *dp, args, nargs, kwnames, out);
    int s = sym_source(t, DH_S_ATTR, mod->src, 1, str_forward);
    if (s < 0)
        return -1;
    return sym_inline(t, fwd, s, mod, args, nargs, kwnames, out);
}

static PyObject *next_builtin(void) {
    static PyObject *nx;
    if (nx == NULL) {
        nx = PyDict_GetItemString(PyEval_GetBuiltins(), "next"); /* borrowed: builtins live on */
    }
    return nx;
}

/* KW_NAMES */
int sym_op_kw_names(trace *t, sframe *f, sym_ins *in) {
    f->kwnames = PyTuple_GET_ITEM(in->consts, in->oparg);
    return SYM_NEXT;
}

/* CALL */
/* the top frame breaks at this call (its callee failed): the call runs eagerly after the
 * graph as fn(*args, **dict(zip(kwnames, ...))) and the rest of the frame resumes */
static int break_at_call(trace *t, sframe *f, const sym_ins *in, const var *fn, var *args, int nargs,
                         PyObject *kwnames) {
    var *fnc = sym_alloc(t, 1);
    if (fnc == NULL)
        return -1;
    *fnc = *fn;
    t->brk.kind = DH_BRK_CALL;
    t->brk.pc_next = in->next;
    t->brk.fn = fnc;
    t->brk.args = args;
    t->brk.nargs = nargs;
    t->brk.kwnames = kwnames; /* kept by t->keep; the entry takes a reference */
    return sym_record_break_state(t, f);
}

/* the instruction after in is a BEFORE_WITH (which has no inline caches) */
static int next_is_before_with(sframe *f, const sym_ins *in) {
    PyObject *bytes = PyCode_GetCode(f->code);
    if (bytes == NULL) {
        (void)tc_clear_expected(PyExc_Exception); /* (a fatal one stays: the trace reports it) */
        return 0;
    }
    const char *nm = 2 * (Py_ssize_t)in->next < PyBytes_GET_SIZE(bytes)
                         ? sym_opname(((const unsigned char *)PyBytes_AS_STRING(bytes))[2 * in->next])
                         : NULL;
    Py_DECREF(bytes);
    return nm != NULL && strcmp(nm, "BEFORE_WITH") == 0;
}

int sym_op_call(trace *t, sframe *f, sym_ins *in) {
    var a, c;
    NEED(in->oparg + 2);
    var *args = &f->stack[f->sp - in->oparg];
    var *callable = &PEEK(in->oparg + 1);
    var *maybe = &PEEK(in->oparg + 2);
    var *fnv;
    var *argv = args;
    int nargs = in->oparg;
    if (maybe->kind != V_NULL) { /* [method, self, args...] */
        fnv = maybe;
        argv = callable;
        nargs = in->oparg + 1;
    } else {
        fnv = callable;
    }
    var fn = *fnv;
    if (fn.kind == V_FUNC && fn.obj == (PyObject *)&PySuper_Type && nargs == 2 && !f->kwnames &&
        argv[0].obj != NULL && PyType_Check(argv[0].obj) && sym_super_self(&argv[1], argv[0].obj)) {
        /* super(C, self) / super(C, cls): as the zero-argument form, with the class given */
        var *sv = sym_alloc(t, 1);
        if (sv == NULL)
            return -1;
        sv[0] = argv[1];
        PyObject *cls = argv[0].obj;
        f->sp -= in->oparg + 2;
        a = sym_var(V_SUPER);
        a.obj = cls;
        a.items = sv;
        PUSH(a);
        return SYM_NEXT;
    }
    (void)tc_clear_expected(PyExc_Exception); /* isinstance of super(C, x) raised */
    if (fn.kind == V_FUNC && fn.obj == (PyObject *)&PySuper_Type && nargs == 0) {
        /* zero-argument super(): the method's __class__ cell and first argument */
        PyObject *cls = NULL;
        PyObject *fv = PyObject_GetAttrString((PyObject *)f->code, "co_freevars");
        if (fv != NULL && PyTuple_Check(fv)) {
            Py_ssize_t nfree = PyTuple_GET_SIZE(fv);
            for (Py_ssize_t ci = 0; ci < nfree; ci++)
                if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(fv, ci), "__class__") == 0) {
                    var *cv = &f->locals[f->nlocals - (int)nfree + (int)ci];
                    if (cv->kind == V_CONST || cv->kind == V_FUNC || cv->kind == V_OBJ)
                        cls = cv->obj;
                }
        }
        Py_XDECREF(fv);
        (void)tc_clear_expected(PyExc_AttributeError);
        var self0;
        if (cls == NULL || !PyType_Check(cls) || f->code->co_argcount < 1 ||
            sym_load_local(t, f, 0, &self0) < 0 || !sym_super_self(&self0, cls))
            return sym_fail(t, "zero-argument super() outside a module method");
        f->sp -= in->oparg + 2;
        var *sv = sym_alloc(t, 1);
        if (sv == NULL)
            return -1;
        sv[0] = self0;
        a = sym_var(V_SUPER);
        a.obj = cls;
        a.items = sv;
        PUSH(a);
        return SYM_NEXT;
    }
    var *copy = sym_alloc(t, nargs);
    if (copy == NULL)
        return -1;
    memcpy(copy, argv, (size_t)nargs * sizeof *copy);
    PyObject *kw = f->kwnames;
    f->kwnames = NULL;
    f->sp -= in->oparg + 2;
    if (f->top && in->pc == t->with_brk_pc && sym_can_break(t)) {
        /* it made a context manager whose block holds a graph break (break_at_with): the
         * call runs eagerly, the resume enters its real object */
        sym_fail(t, "a context manager made here holds a graph break in its block (%s): made and entered "
                    "eagerly, its block resumes", t->with_why);
        int rc = break_at_call(t, f, in, &fn, copy, nargs, kw);
        if (rc == 1 && next_is_before_with(f, in)) { /* `with cm(...):` the BEFORE_WITH too */
            t->brk.kind = DH_BRK_CALL_WITH;
            t->brk.pc_next = in->next + 1;
        }
        return rc;
    }
    if (fn.kind == V_FUNC && fn.op == SYM_GENCM_EXIT) { /* a contextmanager's exit (sym_gen.c) */
        if (sym_gen_cm_exit(t, &fn, &a) < 0)
            return -1;
        PUSH(a);
        return SYM_NEXT;
    }
    if (fn.kind == V_FUNC && fn.obj == next_builtin() && (nargs == 1 || nargs == 2) && !kw &&
        copy[0].kind == V_GEN) { /* next(generator[, default]) */
        if (copy[0].op != 0)
            return sym_fail(t, "next() of a generator context manager (eager raises)");
        int r = sym_gen_step(t, &copy[0], &a);
        if (r < 0)
            return -1;
        if (r == 0 && nargs == 1)
            return sym_fail(t, "next() of an exhausted generator (eager raises StopIteration)");
        PUSH(r == 0 ? copy[1] : a);
        return SYM_NEXT;
    }
    if (fn.kind == V_FUNC && fn.op == SYM_USER_FUNCTION) { /* @contextlib.contextmanager */
        int r = sym_gen_cm_call(t, &fn, copy, nargs, kw, &a);
        if (r < 0)
            return -1;
        if (r == 0) {
            PUSH(a);
            return SYM_NEXT;
        }
    }
    if (fn.kind == V_METHOD && fn.items != NULL && fn.items[0].kind == V_GEN && nargs == 1 && !kw &&
        fn.obj != NULL && PyUnicode_Check(fn.obj) && PyUnicode_CompareWithASCIIString(fn.obj, "send") == 0) {
        if (sym_gen_send(t, &fn.items[0], &copy[0], &a) < 0) /* gen.send(v) (sym_gen.c) */
            return -1;
        PUSH(a);
        return SYM_NEXT;
    }
    if (fn.kind == V_METHOD && fn.items != NULL) { /* a @contextlib.contextmanager method */
        int r = sym_gen_cm_method(t, &fn, copy, nargs, kw, &a);
        if (r < 0)
            return -1;
        if (r == 0) {
            PUSH(a);
            return SYM_NEXT;
        }
    }
    if (fn.kind == V_FUNC && fn.op == SYM_AUTOCAST_EXIT) { /* autocast.c */
        if (dh_autocast_exit(t, &fn, &a) < 0)
            return -1;
        PUSH(a);
        return SYM_NEXT;
    }
    if (sym_is_real_object(&fn) && dh_autocast_is_class(fn.obj)) {
        if (dh_autocast_new(t, fn.obj, copy, nargs, kw, &a) < 0)
            return -1;
        PUSH(a);
        return SYM_NEXT;
    }
    if (fn.kind == V_FUNC && fn.obj != NULL) {
        int q = dh_autocast_query(t, fn.obj, copy, nargs, kw, &a);
        if (q < 0)
            return -1;
        if (q == 0) {
            PUSH(a);
            return SYM_NEXT;
        }
    }
    t->pending_exc = NULL; /* only what this call raises */
    /* the top frame may break at this call: what its trace logs is undone then */
    sym_fx_mark mark = {0};
    if (f->top && sym_can_break(t) && sym_fx_save(t, &mark) < 0)
        return -1;
    int crc = sym_call(t, &fn, copy, nargs, kw, &a);
    if (crc < 0) {
        int hd, hl, h;
        if (t->pending_exc != NULL && t->failed && !PyErr_Occurred() &&
            (h = sym_exc_handler(f->code, in->pc, &hd, &hl)) >= 0 && hd <= f->sp) {
            /* a process-state predicate raised (torch.cuda's without CUDA): the
             * frame's handler runs, as in eager (the raise is guarded): what the call
             * did before it raised stays */
            sym_fx_drop(&mark);
            t->failed = 0;
            t->reason[0] = 0;
            f->sp = hd;
            if (hl && sym_const(t, PyLong_FromLong(in->pc), &c) < 0)
                return -1;
            if (hl)
                PUSH(c);
            c = sym_var(V_CONST);
            c.obj = t->pending_exc;
            t->pending_exc = NULL;
            PUSH(c);
            in->next = h;
            return SYM_NEXT;
        }
        /* constructing an exception (to raise it) is not worth a break: the resume
         * would be specialized on each new exception object */
        int exc = fn.kind == V_FUNC && fn.obj && PyExceptionClass_Check(fn.obj);
        if (f->top && t->failed && !PyErr_Occurred() && sym_can_break(t) && !exc && t->pending_exc != NULL &&
            t->asked_compiling) {
            sym_fx_drop(&mark);
            return sym_refuse_raise_break(t);
        }
        if (f->top && t->failed && !PyErr_Occurred() && sym_can_break(t) && !exc) {
            /* the call runs eagerly (and raises there, if it raised here): what its trace
             * logged is undone (its random draws: sym_record_break_state) */
            sym_fx_drop_guards(t, &mark);
            sym_fx_rollback(t, &mark);
            return break_at_call(t, f, in, &fn, copy, nargs, kw);
        }
        sym_fx_drop(&mark);
        return -1;
    }
    sym_fx_drop(&mark);
    PUSH(a);
    return SYM_NEXT;
}

/* CALL_FUNCTION_EX */
int sym_op_call_function_ex(trace *t, sframe *f, sym_ins *in) {
    var a;
    int has_kw = in->oparg & 1;
    NEED(3 + has_kw);
    var kw = has_kw ? POP() : sym_null_var();
    var args = POP();
    var fnv = POP();
    (void)POP(); /* the NULL slot */
    var *items;
    int n;
    if (sym_iter_items(t, &args, &items, &n) < 0)
        return -1;
    var kwd = kw;
    if (has_kw && kwd.kind == V_CONST && PyDict_Check(kwd.obj) && sym_dict_from_const(t, kwd.obj, &kwd) < 0)
        return -1;
    if (has_kw && kwd.kind != V_DICT)
        return sym_fail(t, "**kwargs of an unsupported value");
    int nk = has_kw ? kwd.n : 0;
    var *all = sym_alloc(t, n + nk);
    if (all == NULL)
        return -1;
    memcpy(all, items, (size_t)n * sizeof *all);
    PyObject *kwnames = NULL;
    if (nk > 0) {
        for (int i = 0; i < nk; i++) {
            if (!PyUnicode_Check(PyTuple_GET_ITEM(kwd.obj, i)))
                return sym_fail(t, "keywords must be strings (eager will raise)");
            all[n + i] = kwd.items[i];
        }
        kwnames = kwd.obj;
    }
    /* as CALL: the top frame may break at this call (break_at_call), what its trace logged
     * undone */
    t->pending_exc = NULL;
    sym_fx_mark mark = {0};
    if (f->top && sym_can_break(t) && sym_fx_save(t, &mark) < 0)
        return -1;
    int crc = sym_call(t, &fnv, all, n + nk, kwnames, &a);
    if (crc < 0) {
        int exc = fnv.kind == V_FUNC && fnv.obj && PyExceptionClass_Check(fnv.obj);
        if (f->top && t->failed && !PyErr_Occurred() && t->pending_exc == NULL && sym_can_break(t) && !exc) {
            sym_fx_rollback(t, &mark);
            return break_at_call(t, f, in, &fnv, all, n + nk, kwnames);
        }
        sym_fx_drop(&mark);
        return -1;
    }
    sym_fx_drop(&mark);
    PUSH(a);
    return SYM_NEXT;
}

/* MAKE_FUNCTION */
int sym_op_make_function(trace *t, sframe *f, sym_ins *in) {
    var a;
    int need = 1 + !!(in->oparg & 0x01) + !!(in->oparg & 0x02) + !!(in->oparg & 0x04) + !!(in->oparg & 0x08);
    NEED(need);
    var code = POP();
    var clos = sym_null_var(), defs = sym_null_var(), kwdefs = sym_null_var(), ann = sym_null_var();
    if (in->oparg & 0x08)
        clos = POP();
    if (in->oparg & 0x04)
        ann = POP();
    if (in->oparg & 0x02)
        kwdefs = POP();
    if (in->oparg & 0x01)
        defs = POP();
    var *dv = NULL;
    int ndefs = 0;
    if ((in->oparg & 0x01) &&
        ((defs.kind != V_SEQ && !(defs.kind == V_CONST && PyTuple_CheckExact(defs.obj))) ||
         sym_iter_items(t, &defs, &dv, &ndefs) < 0))
        return sym_fail(t, "nested function with defaults of unsupported values");
    if ((in->oparg & 0x02) && (kwdefs.kind != V_DICT || kwdefs.op != 0))
        return sym_fail(t, "nested function with keyword-only defaults of unsupported values");
    if (code.kind != V_CONST || !PyCode_Check(code.obj))
        return sym_fail(t, "MAKE_FUNCTION without a code constant");
    memset(&a, 0, sizeof a);
    a.kind = V_FUNC;
    a.op = SYM_MADE_FUNCTION;
    a.src = -1;
    a.obj = code.obj;
    /* its globals are this frame's: reached through this frame's function */
    if (!f->top && f->func_src < 0 && f->globals != t->globals)
        return sym_fail(t, "nested function in a function reached without a source");
    a.val = f->top ? -1 : f->func_src;
    a.globals = f->globals;
    /* items: the closure's values, the defaults, the keyword-only defaults, the annotations
     * (oid 1); allocated always: the array names this function object (sym_fill_out builds
     * it once where it is reached twice) */
    a.items = sym_alloc(t, ndefs + 2 + (clos.kind == V_SEQ ? clos.n : 0) +
                               (clos.kind == V_CONST && clos.obj && PyTuple_Check(clos.obj)
                                    ? (int)PyTuple_GET_SIZE(clos.obj) : 0));
    if (a.items == NULL)
        return -1;
    if (in->oparg & 0x08) {
        /* BUILD_TUPLE of the cells' values: a V_SEQ, or one constant tuple when all are */
        var *items;
        int n;
        if ((clos.kind != V_SEQ && !(clos.kind == V_CONST && PyTuple_CheckExact(clos.obj))) ||
            sym_iter_items(t, &clos, &items, &n) < 0)
            return sym_fail(t, "closure of unsupported values");
        /* its own cells: writes of the making frame reach them (sym_cells.c) */
        memcpy(a.items, items, (size_t)n * sizeof(var));
        a.n = n;
        f->made_closure = 1;
        if (sym_cells_made(t, f, (PyCodeObject *)code.obj, a.items, n) < 0)
            return -1;
    }
    if (in->oparg & 0x03) {
        /* defaults after the closure items: items[n, n + pos) positional defaults, then the
         * keyword-only defaults dict when is_list (inline_code binds them) */
        int kw = (in->oparg & 0x02) != 0;
        var *all = a.items;
        if (ndefs > 0)
            memcpy(all + a.n, dv, (size_t)ndefs * sizeof(var));
        if (kw)
            all[a.n + ndefs] = kwdefs;
        a.items = all;
        a.pos = ndefs;
        a.is_list = kw;
    }
    if (in->oparg & 0x04) { /* the annotations tuple, after the rest (a function leaving the
                             * trace gets them: sym_output.c made_function) */
        a.items[a.n + a.pos + a.is_list] = ann;
        a.oid = 1;
    }
    PUSH(a);
    return SYM_NEXT;
}

/* LOAD_BUILD_CLASS: builtins.__build_class__, called by the class statement's CALL
 * (obj_new.c sym_obj_build_class) */
int sym_op_load_build_class(trace *t, sframe *f, sym_ins *in) {
    PyObject *bc = t->builtins && PyDict_Check(t->builtins)
                       ? PyDict_GetItemString(t->builtins, "__build_class__") /* borrowed */
                       : NULL;
    if (bc == NULL || !sym_is_build_class(bc))
        return sym_fail(t, "__build_class__ not found");
    var a = sym_var(V_FUNC);
    a.op = -1;
    a.obj = sym_keep(t, Py_NewRef(bc));
    if (a.obj == NULL)
        return -1;
    PUSH(a);
    return SYM_NEXT;
}

/* the top frame entered a Python context manager's block at pc, its exit at stack slot
 * `slot` (symbolic.c user_with_pc); the newest entry of a slot wins */
static void note_user_with(trace *t, int slot, int pc) {
    int k = 0;
    while (k < t->nwithpc && t->withpc[k].slot != slot)
        k++;
    if (k == (int)(sizeof t->withpc / sizeof t->withpc[0]))
        return; /* full: a break inside this block does not resume */
    t->withpc[k].slot = slot;
    t->withpc[k].pc = pc;
    if (k == t->nwithpc)
        t->nwithpc++;
}

/* the top frame breaks at this BEFORE_WITH (t->reason set): it runs eagerly after the graph
 * and the block resumes with the real exit and __enter__'s result (DH_BRK_WITH). A context
 * manager made by a generator in the trace can't be handed over: the frame is traced again,
 * breaking at the call that made it (trace_once), whose real object the resume enters */
static int break_at_with(trace *t, sframe *f, const sym_ins *in, const var *cm, int forced) {
    if (cm->kind == V_GEN) {
        int mk = sym_gen_made_at(t, cm);
        if (mk >= 0 && mk != t->with_brk_pc) {
            t->with_retry_pc = mk;
            if (!forced) /* (forced: with_why names the break inside the block already) */
                snprintf(t->with_why, sizeof t->with_why, "%.199s", t->reason);
        }
        return -1;
    }
    var *ctx = sym_alloc(t, 1);
    if (ctx == NULL)
        return -1;
    *ctx = *cm;
    t->brk.kind = DH_BRK_WITH;
    t->brk.pc_next = in->next;
    t->brk.fn = ctx;
    t->brk.args = NULL;
    t->brk.nargs = 0;
    t->brk.kwnames = NULL;
    return sym_record_break_state(t, f);
}

/* BEFORE_WITH */
int sym_op_before_with(trace *t, sframe *f, sym_ins *in) {
    var a, b, c;
    /* with torch.no_grad()/enable_grad()/inference_mode()/set_grad_enabled(b): the
     * graph is the same; grad mode at entry is guarded, outputs never need grad */
    NEED(1);
    a = POP();
    if (f->top && in->pc == t->with_brk_pc && sym_can_break(t)) {
        /* a graph break inside this block, in an earlier trace (symbolic.c trace_once):
         * the with statement runs eagerly, the block resumes holding the real exit */
        sym_fail(t, "with-statement on %s around a graph break (%s): entered eagerly, its block resumes",
                 a.kind == V_OBJ || a.kind == V_CONST ? Py_TYPE(a.obj)->tp_name : "a context manager",
                 t->with_why);
        return break_at_with(t, f, in, &a, 1);
    }
    /* the top frame may break here when __enter__ can't be traced: what its trace logged
     * is undone and the with statement runs eagerly */
    sym_fx_mark mark = {0};
    int can = f->top && sym_can_break(t);
    if (can && sym_fx_save(t, &mark) < 0)
        return -1;
    t->pending_exc = NULL; /* only what __enter__ raises */
    int user = 1; /* a Python context manager: where the top frame entered it (t->withpc) */
    int ac = sym_gen_cm_enter(t, &a, &b, &c); /* @contextlib.contextmanager (sym_gen.c) */
    if (ac == 1) {
        user = 0;
        ac = dh_autocast_enter(t, &a, &b, &c); /* torch.autocast regions (autocast.c) */
    }
    if (ac == 1 && a.kind == V_OBJ && !sym_is_grad_ctx(a.obj)) {
        /* a context manager whose __enter__/__exit__ are Python (obj_proto.c) */
        ac = sym_obj_enter(t, &a, &b, &c);
        user = 1;
    }
    if (ac < 0 && can && t->failed && !PyErr_Occurred()) {
        if (t->pending_exc != NULL && t->asked_compiling) {
            sym_fx_drop(&mark);
            return sym_refuse_raise_break(t);
        }
        sym_fx_rollback(t, &mark);
        return break_at_with(t, f, in, &a, 0);
    }
    sym_fx_drop(&mark);
    if (ac < 0)
        return -1;
    if (ac == 0) {
        if (user && f->top)
            note_user_with(t, f->sp, in->pc);
        PUSH(b);
        PUSH(c);
        return SYM_NEXT;
    }
    if (a.kind != V_OBJ || !sym_is_grad_ctx(a.obj))
        return sym_fail(t, "with-statement on %s not supported yet",
                        a.kind == V_OBJ ? Py_TYPE(a.obj)->tp_name : "a tracked value");
    memset(&b, 0, sizeof b);
    b.kind = V_FUNC;
    b.op = SYM_CTX_EXIT;
    b.src = -1;
    b.obj = a.obj;
    int enable = sym_grad_ctx_turns_on(a.obj);
    if (enable < 0)
        return -1;
    if (sym_is_set_grad_enabled(a.obj)) {
        /* one made outside the trace (a resume's stack, an argument) that switched grad mode
         * when made: its __exit__ switches it back to .prev, a change of the thread's state
         * the trace's exit would not make */
        PyObject *prev = PyObject_GetAttrString(a.obj, "prev");
        int p = prev == NULL ? -1 : PyObject_IsTrue(prev);
        Py_XDECREF(prev);
        if (p < 0)
            (void)tc_clear_expected(PyExc_Exception);
        if (p < 0 || (p != enable && tc_grad_enabled() == enable))
            return sym_fail(t, "with-statement on a set_grad_enabled(%s) that switched grad mode when made "
                               "(its exit switches it back): not captured", enable ? "True" : "False");
    }
    if (enable == 1) {
        /* enable_grad() / set_grad_enabled(True): where grad mode is on already, nothing
         * changes; inside a traced no_grad() block it is on again until the exit (the block's
         * values record gradients as eager's would); where it is off for the whole call
         * (the caller's no_grad, guarded), not captured */
        if (!tc_grad_enabled())
            return sym_fail(t, "%s inside a call made with grad mode off: not captured", Py_TYPE(a.obj)->tp_name);
        if (t->nograd == 0) {
            b.val = SYM_GRADCTX_NOOP;
        } else {
            b.val = SYM_GRADCTX_RESTORE + t->nograd;
            t->nograd = 0;
            ic_set_grad_enabled(t->g, 1);
        }
        PUSH(b);
        if (sym_const(t, Py_NewRef(Py_None), &c) < 0)
            return -1;
        PUSH(c);
        return SYM_NEXT;
    }
    /* no_grad(), set_grad_enabled(False), inference_mode(True); inference_mode(False) turns
     * grad mode on (like enable_grad) and is not captured */
    PyObject *mode = PyObject_GetAttrString(a.obj, "mode");
    int on = mode != NULL && PyObject_Not(mode) == 1;
    int inference = mode != NULL && !on && sym_is_inference_mode(a.obj);
    Py_XDECREF(mode);
    (void)tc_clear_expected(PyExc_Exception);
    if (on && sym_is_inference_mode(a.obj))
        return sym_fail(t, "inference_mode(False) turns grad mode on: not captured");
    if (t->nograd++ == 0) /* grad off inside */
        ic_set_grad_enabled(t->g, 0); /* training: no gradient through the block */
    if (inference && t->infer_depth++ == 0) /* its values: inference tensors (sym_output.c) */
        t->infer_from = ic_graph_num_values(t->g);
    b.val = inference; /* the exit leaves an inference_mode() block */
    PUSH(b);
    if (sym_const(t, Py_NewRef(Py_None), &c) < 0)
        return -1;
    PUSH(c);
    return SYM_NEXT;
}
