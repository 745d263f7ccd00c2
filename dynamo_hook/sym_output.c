/* sym_output.c — the end of a trace: the output spec (how the frame's value is rebuilt),
 * the break state handed to resume functions, in-place mutations of inputs, the guards
 * added at the end (distinct arguments, same objects), the training graph, the entry. */
#include "sym_interp.h"
#include "train.h"

#include <string.h>
/* ---- output spec ------------------------------------------------------------------- */

int sym_out_reserve(trace *t, outbuf *ob, int k) {
    if (ob->n + k > ob->cap) {
        int cap = ob->cap ? ob->cap * 2 : 8;
        while (cap < ob->n + k)
            cap *= 2;
        dh_outspec *n = realloc(ob->o, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        ob->o = n;
        ob->cap = cap;
    }
    int at = ob->n;
    memset(ob->o + at, 0, (size_t)k * sizeof *ob->o);
    ob->n += k;
    return at;
}

/* ob->o[at] becomes a node of `kind` over one fresh child: the child's index, or -1 (an error
 * set). ob->o may move: a pointer to o[at] taken before is stale. */
static int out_child(trace *t, outbuf *ob, int at, dh_outkind kind) {
    int child = sym_out_reserve(t, ob, 1);
    if (child < 0)
        return -1;
    ob->o[at].kind = kind;
    ob->o[at].index = child;
    return child;
}

static int fill_out(trace *t, outbuf *ob, int at, var *v, ic_val *outvals, int *nout);

/* at: a method call on its child (key: the CALLM's count) made once: a later node with the
 * same key is the same object (DH_O_SAME, 0 returned); else the child's index (-1: no memory) */
static int callm_once(trace *t, outbuf *ob, int at, int key) {
    for (int i = 0; i < ob->n; i++)
        if (i != at && ob->o[i].kind == DH_O_CALLM && ob->o[i].count == key) {
            ob->o[at].kind = DH_O_SAME;
            ob->o[at].index = i;
            return 0;
        }
    int child = out_child(t, ob, at, DH_O_CALLM);
    if (child >= 0)
        ob->o[at].count = key;
    return child;
}

/* at: kind(obj, ...) with its one child filled from inner (obj: borrowed, a reference kept) */
static int out_wrapped(trace *t, outbuf *ob, int at, dh_outkind kind, PyObject *obj, var *inner,
                       ic_val *outvals, int *nout) {
    int child = out_child(t, ob, at, kind);
    if (child < 0)
        return -1;
    ob->o[at].obj = Py_NewRef(obj);
    return fill_out(t, ob, child, inner, outvals, nout); /* this object's own node */
}

/* a new entry of ob's alias table (key, group) for node `at`, not done yet: its index, or -1
 * (no memory) */
static int alias_add(outbuf *ob, const void *key, int group, int at) {
    if (ob->nalias == ob->calias) {
        int cap = ob->calias ? 2 * ob->calias : 8;
        out_alias *na = realloc(ob->alias, (size_t)cap * sizeof *na);
        if (na == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        ob->alias = na;
        ob->calias = cap;
    }
    int k = ob->nalias++;
    ob->alias[k].key = key;
    ob->alias[k].group = group;
    ob->alias[k].node = at;
    ob->alias[k].done = 0;
    return k;
}

/* which objects have an identity here: 1 dicts and records, 2 lists, 3 sets made in the
 * trace, 4 functions made in the trace; 0 values (tuples, tensors: their own rules) */
static int alias_group(const var *v) {
    if (v->items == NULL)
        return 0;
    if (v->kind == V_DICT || v->kind == V_REC)
        return 1;
    if (v->kind == V_SEQ && v->is_list)
        return 2;
    if (v->kind == V_CONST && v->is_list)
        return 3;
    if (v->kind == V_FUNC && v->op == SYM_MADE_FUNCTION)
        return 4;
    return 0;
}

int sym_fill_out(trace *t, outbuf *ob, int at, const var *v_in, ic_val *outvals, int *nout) {
    var rv = *v_in, *v = &rv;
    sym_resolve(t, v);
    if (v->kind == V_TENSOR) { /* a tensor built from constants returned (fold.c) */
        PyObject *cst = NULL;
        int rc = sym_fold_output(t, v, &cst);
        if (rc < 0)
            return -1;
        if (rc == 1) { /* a clone of the constant each call: eager's values, device and strides */
            int child = out_child(t, ob, at, DH_O_CALLM);
            if (child < 0)
                return -1;
            ob->o[at].obj = Py_BuildValue("(s())", "clone");
            if (ob->o[at].obj == NULL)
                return -1;
            ob->o[child].kind = DH_O_CONST;
            ob->o[child].obj = Py_NewRef(cst);
            return 0;
        }
    }
    if ((v->kind == V_DICT || v->kind == V_SEQ) && v->src >= 0 && v->src < t->capsrc &&
        t->srcdone[v->src] && t->srcvar[v->src].kind == v->kind &&
        t->srcvar[v->src].items == v->items && t->srcvar[v->src].n == v->n) {
        /* a dict/list read from the frame as it was: the object itself (a copy would lose
         * its identity: a collector dict returned by a getter, then appended to) */
        ob->o[at].kind = DH_O_SOURCE;
        ob->o[at].index = v->src;
        return 0;
    }
    /* a list, dict, set or made function reached a second time (a local and an argument,
     * a closure's value and a local, the result and a module attribute written): the object
     * the first node built, as eager has one object (was: a copy each, refused at breaks) */
    int g = alias_group(v);
    if (g == 0)
        return fill_out(t, ob, at, v, outvals, nout);
    for (int i = 0; i < ob->nalias; i++)
        if (ob->alias[i].key == v->items && ob->alias[i].group == g) {
            if (!ob->alias[i].done) /* inside itself: not buildable as a tree */
                return sym_fail(t, "a %s that contains itself leaves the trace",
                                g == 4 ? "nested function" : "list or dict");
            ob->o[at].kind = DH_O_SAME;
            ob->o[at].index = ob->alias[i].node;
            return 0;
        }
    int k = alias_add(ob, v->items, g, at);
    if (k < 0)
        return -1;
    int rc = fill_out(t, ob, at, v, outvals, nout);
    ob->alias[k].done = 1;
    return rc;
}

/* the root node moved to `to` (symbolic.c: the result wrapped with the attribute writes) */
void sym_out_root_moved(outbuf *ob, int to) {
    for (int i = 0; i < ob->n; i++)
        if (ob->o[i].kind == DH_O_SAME && ob->o[i].index == 0)
            ob->o[i].index = to;
    for (int i = 0; i < ob->nalias; i++)
        if (ob->alias[i].node == 0)
            ob->alias[i].node = to;
}

static int made_function(trace *t, outbuf *ob, int at, const var *fn, ic_val *outvals, int *nout);

static int fill_out(trace *t, outbuf *ob, int at, var *v, ic_val *outvals, int *nout) {
    dh_outspec *o = &ob->o[at];
    switch (v->kind) {
    case V_TENSOR: {
        int mapped = sym_vmap_batched(t, v); /* sym_vmap.c: a value of a mapped function */
        if (mapped != 0)
            return mapped < 0 ? -1 : sym_fail(t, "vmap: a value of the mapped function leaves the trace");
        if (ic_value_is_grad_leaf(t->g, v->val)) /* train_step.c set_requires_grad */
            return sym_fail(t, "a tensor made to require grad in the trace leaves the graph (its .grad would "
                               "not be eager's)");
        if (sym_nograd_leaf(t, v->oid))
            return sym_fail(t, "a tensor made to require grad under no_grad (or a view of it) leaves the graph "
                               "(left to eager)");
        if (v->src >= 0 && t->srcdone[v->src] && t->srcvar[v->src].kind == V_TENSOR &&
            t->srcvar[v->src].oid == v->oid) {
            /* the input object itself (maybe updated in place: copied back first) */
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        if (sym_made_in_inference(t, v->val))
            return sym_fail(t, "a tensor made under torch.inference_mode() leaves the graph (eager's is an "
                               "inference tensor): left to eager");
        if (ic_value_op(t->g, v->val) == IC_OP_INPUT) {
            if (v->src < 0) {
                /* an input reached through a no-op (detach/contiguous): find its source */
                int k = 0;
                for (ic_val x = 0; x < v->val; x++)
                    if (ic_value_op(t->g, x) == IC_OP_INPUT)
                        k++;
                if (v->oid > 0 && v->oid != t->input_oid[k]) {
                    /* another object over the input's data (detach()): a real one, as eager */
                    int child = out_child(t, ob, at, DH_O_CALLM);
                    if (child < 0)
                        return -1;
                    o = &ob->o[at];
                    o->obj = Py_BuildValue("(s())", "detach");
                    if (o->obj == NULL)
                        return -1;
                    ob->o[child].kind = DH_O_SOURCE;
                    ob->o[child].index = t->input_src[k];
                    return 0;
                }
                o->kind = DH_O_SOURCE;
                o->index = t->input_src[k];
                return 0;
            }
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        if (sym_is_view_of_input(t, v->val) ||
            (v->val < t->capvals && t->view_desc[v->val] != NULL && v->oid > 0 &&
             t->obj_aliased[v->oid])) {
            /* replay the view ops on the real base (an input, or a graph output): the caller
             * (or the eager code after a break) gets a real view sharing its base's data */
            PyObject *desc = v->val < t->capvals ? t->view_desc[v->val] : NULL;
            if (desc == NULL)
                return sym_fail(t, "returning a view of an input (untracked view)");
            if (t->nsym > 0 && PyTuple_GET_SIZE(PyTuple_GET_ITEM(desc, 2)) > 0)
                /* the view's arguments are hint sizes (a detach has none) */
                return sym_fail(t, "a view returned with dynamic shapes (specializing)");
            ic_val base = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
            /* this object's view built already (w = x.t(); w.t_() at a break: the local and
             * the method's self): the same object again */
            int child = v->oid > 0 ? callm_once(t, ob, at, v->oid) : out_child(t, ob, at, DH_O_CALLM);
            if (child <= 0)
                return child;
            o = &ob->o[at];
            o->count = v->oid > 0 ? v->oid : 0;
            o->obj = PyTuple_GetSlice(desc, 1, 3);
            if (o->obj == NULL)
                return -1;
            if (ic_value_op(t->g, base) == IC_OP_INPUT) {
                int k = 0;
                for (ic_val x = 0; x < base; x++)
                    if (ic_value_op(t->g, x) == IC_OP_INPUT)
                        k++;
                ob->o[child].kind = DH_O_SOURCE;
                ob->o[child].index = t->input_src[k];
                return 0;
            }
            /* the base is an input tensor's value after an in-place update (x.add_(1);
             * return x.t()): eager's view is of the input object itself, which gets the
             * updated value copied back before the outputs are built (was: a view of a
             * graph output, sharing no storage with x) */
            for (int s = 0; s < t->nsrc && s < t->capsrc; s++)
                if (t->srcdone[s] && t->srcvar[s].kind == V_TENSOR && t->srcvar[s].oid > 0 &&
                    t->srcvar[s].oid <= t->nobj && t->obj_val[t->srcvar[s].oid] == base) {
                    ob->o[child].kind = DH_O_SOURCE;
                    ob->o[child].index = s;
                    return 0;
                }
            var bv;
            bv = sym_var(V_TENSOR);
            bv.val = base;
            /* the object whose value the base is (w7 = v5.squeeze(-1), v5 a view of v4): built
             * as that object's view, so the chain shares v4's storage as in eager (was: the
             * base a graph output of its own, a copy: v5.mul_(2) after a break missed w7) */
            for (int k = 1; k <= t->nobj; k++)
                if (t->obj_val[k] == base) {
                    bv.oid = k;
                    break;
                }
            return sym_fill_out(t, ob, child, &bv, outvals, nout);
        }
        if (sym_complex_view_copy(t, v) && sym_alias_live(t, v->oid))
            /* eager's view into a complex tensor still in use, ours a copy (ops_complex.c) */
            return sym_fail(t, "a view into a complex tensor (or of one) that shares data with a tensor still in "
                               "use, at a graph break or returned: left to eager");
        if (sym_home_off(t, v->val)) { /* a CPU tensor of a CUDA graph (fold.c sym_home): the graph's
                                         * value moved to eager's device, one object however often reached */
            int child = callm_once(t, ob, at, -1 - v->val);
            if (child <= 0)
                return child;
            o = &ob->o[at];
            PyObject *dev = sym_home_device(sym_home(t, v->val));
            o->obj = dev ? Py_BuildValue("(s(N))", "to", dev) : NULL;
            if (o->obj == NULL)
                return -1;
            o = &ob->o[child];
            at = child;
        }
        for (int i = 0; i < *nout; i++)
            if (outvals[i] == v->val) {
                o->kind = DH_O_GRAPH;
                o->index = i;
                return 0;
            }
        if (*nout >= dh_limit.max_outputs)
            return sym_fail(t, "more than %d outputs (torchc.config.max_outputs)", dh_limit.max_outputs);
        if (ic_output(t->g, v->val) < 0)
            return sym_check_graph(t);
        outvals[*nout] = v->val;
        o->kind = DH_O_GRAPH;
        o->index = (*nout)++;
        return 0;
    }
    case V_CONST:
    case V_OBJ:
    case V_FUNC:
        if (v->kind == V_CONST && v->dyn) { /* an automatic dynamic int: int(its graph value) */
            ic_val gv;
            int r = sym_dynint_val(t, v, &gv);
            if (r < 0)
                return -1;
            if (r == 1) {
                var tv = sym_var(V_TENSOR);
                tv.val = gv;
                PyObject *m = Py_BuildValue("(s())", "item");
                if (m == NULL || sym_keep(t, m) == NULL)
                    return -1;
                return out_wrapped(t, ob, at, DH_O_CALLM, m, &tv, outvals, nout);
            }
        }
        if (v->kind == V_CONST && sym_ctxvar_pending(t, v))
            return sym_fail(t, "a ContextVar token leaves the trace");
        if (v->kind == V_FUNC && v->op == SYM_MADE_FUNCTION)
            return made_function(t, ob, at, v, outvals, nout);
        if (v->kind == V_FUNC && v->op == SYM_PARTIAL)
            return sym_fail(t, "a functools.partial made in the trace is live across a graph break");
        if (v->kind == V_FUNC && v->op == SYM_VMAP) { /* torch.vmap(**its arguments), rebuilt */
            var kw = *v;
            kw.kind = V_DICT;
            kw.op = 0;
            kw.obj = sym_vmap_keys();
            if (kw.obj == NULL || sym_vmap_fn() == NULL)
                return PyErr_Occurred() ? -1 : sym_fail(t, "torch.vmap not found");
            return out_wrapped(t, ob, at, DH_O_KWCALL, sym_vmap_fn(), &kw, outvals, nout);
        }
        if (v->kind != V_CONST && v->src >= 0) {
            /* re-read from the frame each call: no strong reference in the cache entry */
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        if (v->kind == V_CONST && PyAnySet_Check(v->obj)) {
            /* members the trace held as themselves (modules: maybe guarded by type only)
             * are this call's objects, not those seen while tracing: never constants */
            Py_ssize_t pos = 0;
            PyObject *k;
            Py_hash_t h;
            while (_PySet_NextEntry(v->obj, &pos, &k, &h))
                if (!(k == Py_None || PyBool_Check(k) || PyLong_CheckExact(k) || PyFloat_CheckExact(k) ||
                      PyUnicode_CheckExact(k) || PyTuple_CheckExact(k) || PyBytes_CheckExact(k)))
                    return sym_fail(t, "a set of %s objects leaves the trace", Py_TYPE(k)->tp_name);
        }
        if (v->kind == V_CONST && v->is_list && PyFrozenSet_CheckExact(v->obj)) {
            /* a set of constants (held as a frozenset): a fresh set(...) each call */
            int child = out_child(t, ob, at, DH_O_WRAP);
            if (child < 0)
                return -1;
            o = &ob->o[at];
            o->obj = Py_NewRef((PyObject *)&PySet_Type);
            ob->o[child].kind = DH_O_CONST;
            ob->o[child].obj = Py_NewRef(v->obj);
            return 0;
        }
        o->kind = DH_O_CONST;
        o->obj = Py_NewRef(v->obj);
        return 0;
    case V_NULL:
        o->kind = DH_O_CONST;
        o->obj = Py_NewRef(Py_None);
        return 0;
    case V_ITER:
        if (v->op == SYM_LAZY_ITER) { /* the iterator passed in, advanced after the graph */
            o->kind = DH_O_SOURCE;
            o->index = v->src;
            return 0;
        }
        /* fall through */
    case V_METHOD: {
        int bound = v->kind == V_METHOD && (PyFunction_Check(v->obj) || sym_is_lru_wrapper(v->obj));
        if (v->kind == V_METHOD && !PyUnicode_Check(v->obj) && !bound)
            return sym_fail(t, "a bound C method (super().name) leaves the trace");
        int child = sym_out_reserve(t, ob, 1);
        if (child < 0)
            return -1;
        o = &ob->o[at];
        o->index = child;
        if (v->kind == V_ITER) {
            var seq;
            seq = sym_var(V_SEQ);
            seq.n = v->n - v->pos;
            seq.items = v->items + v->pos;
            o->kind = DH_O_ITER;
            return sym_fill_out(t, ob, child, &seq, outvals, nout);
        }
        o->kind = bound ? DH_O_BOUND : DH_O_ATTR; /* an lru_cache'd method: bound as its descriptor binds */
        o->obj = Py_NewRef(v->obj);
        return sym_fill_out(t, ob, child, &v->items[0], outvals, nout);
    }
    case V_DICT: {
        if (v->op != 0) { /* an OrderedDict / defaultdict: made from the plain dict (obj_data.c) */
            if (v->op == SYM_DICT_VIEW) /* eager's is the live instance dict (obj_dictview.c) */
                return sym_fail(t, "an object's __dict__ leaves the trace");
            PyObject *wrap = sym_data_out_type(t, v);
            if (wrap == NULL)
                return PyErr_Occurred() ? -1 : sym_fail(t, "a dict of an unknown kind leaves the trace");
            var plain = *v;
            plain.op = 0;
            return out_wrapped(t, ob, at, DH_O_WRAP, wrap, &plain, outvals, nout);
        }
        int first = sym_out_reserve(t, ob, v->n);
        if (first < 0)
            return -1;
        o = &ob->o[at];
        o->kind = DH_O_DICT;
        o->index = first;
        o->count = v->n;
        o->obj = Py_NewRef(v->obj);
        for (int i = 0; i < v->n; i++)
            if (sym_fill_out(t, ob, first + i, &v->items[i], outvals, nout) < 0)
                return -1;
        return 0;
    }
    case V_REC: { /* class(**fields), built after the graph runs (records.c: fields set
                   * after it joined its dict out of field order are set on it after) */
        var kw = *v;
        kw.kind = V_DICT;
        kw.obj = PyTuple_GET_ITEM(v->obj, 1);
        PyObject *maker = sym_record_maker(v);
        if (maker == NULL)
            return -1;
        int rc = out_wrapped(t, ob, at, DH_O_KWCALL, maker, &kw, outvals, nout);
        Py_DECREF(maker);
        return rc;
    }
    case V_SEQ: {
        if (v->obj != NULL && PyType_Check(v->obj)) { /* a named tuple: type(tuple); a deque */
            PyObject *wrap = sym_data_seq_type(t, v);
            if (wrap == NULL)
                return -1;
            var plain = *v;
            plain.obj = NULL;
            plain.pos = 0;
            return out_wrapped(t, ob, at, DH_O_WRAP, wrap, &plain, outvals, nout);
        }
        int first = sym_out_reserve(t, ob, v->n);
        if (first < 0)
            return -1;
        o = &ob->o[at]; /* may have moved */
        o->kind = v->is_list ? DH_O_LIST : DH_O_TUPLE;
        o->index = first;
        o->count = v->n;
        for (int i = 0; i < v->n; i++)
            if (sym_fill_out(t, ob, first + i, &v->items[i], outvals, nout) < 0)
                return -1;
        return 0;
    }
    case V_SYM: {
        ic_dim d = t->symv[v->val];
        o->kind = DH_O_SYM;
        o->obj = Py_BuildValue("(LLLLL)", (long long)d.coef, (long long)d.exp[0], (long long)d.exp[1],
                               (long long)d.exp[2], (long long)d.exp[3]);
        return o->obj ? 0 : -1;
    }
    default:
        return sym_fail(t, "returning an unsupported value");
    }
}

/* Does code co (or a code nested in it) assign or delete one of `names`, free variables
 * of the function made from the outermost code (nonlocal x; x = ...)? -1: error. */
static int code_writes_free(PyCodeObject *co, PyObject *names, int depth) {
    PyObject *bytes = PyCode_GetCode(co);
    if (bytes == NULL)
        return -1;
    const unsigned char *bc = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    int first_free = co->co_nlocalsplus - co->co_nfreevars, hit = 0, ext = 0;
    for (Py_ssize_t i = 0; i + 1 < n && !hit; i += 2) {
        const char *on = sym_opname(bc[i]);
        int arg = ext | bc[i + 1];
        ext = on && !strcmp(on, "EXTENDED_ARG") ? arg << 8 : 0;
        if (on && (!strcmp(on, "STORE_DEREF") || !strcmp(on, "DELETE_DEREF")) && arg >= first_free &&
            arg < co->co_nlocalsplus) {
            int r = PySequence_Contains(names, PyTuple_GET_ITEM(co->co_localsplusnames, arg));
            if (r != 0)
                hit = r;
        }
    }
    Py_DECREF(bytes);
    if (depth < 8)
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(co->co_consts) && !hit; i++) {
            PyObject *c = PyTuple_GET_ITEM(co->co_consts, i);
            if (PyCode_Check(c))
                hit = code_writes_free((PyCodeObject *)c, names, depth + 1);
        }
    return hit;
}

/* The frame's cell variable `slot` at the break, shared by the functions made before it and
 * the resume frame (sym_made_fns_resumable): one real cell, types.CellType(value), built where
 * it is first reached; the resume's prologue takes it as it is (resume.c, unbound 2). */
static int shared_cell(trace *t, outbuf *ob, int at, int slot, ic_val *outvals, int *nout) {
    const void *key = &t->brk.locals[slot];
    for (int i = 0; i < ob->nalias; i++)
        if (ob->alias[i].key == key && ob->alias[i].group == 5) {
            ob->o[at].kind = DH_O_SAME;
            ob->o[at].index = ob->alias[i].node;
            return 0;
        }
    int k = alias_add(ob, key, 5, at);
    if (k < 0)
        return -1;
    int child = sym_out_reserve(t, ob, 1);
    if (child < 0)
        return -1;
    ob->o[at].kind = DH_O_WRAP;
    ob->o[at].index = child;
    ob->o[at].obj = Py_NewRef((PyObject *)&PyCell_Type);
    int rc = sym_fill_out(t, ob, child, &t->brk.locals[slot], outvals, nout);
    ob->alias[k].done = 1;
    return rc;
}

/* closure item k of a made function over a shared cell of the breaking frame: its slot, or -1 */
static int shared_slot(trace *t, const var *items, int k) {
    for (int i = 0; i < t->brk.nshare; i++)
        if (t->brk.share[i].items == items && t->brk.share[i].k == k)
            return t->brk.share[i].slot;
    return -1;
}

/* A function made by MAKE_FUNCTION in the trace, leaving it (the frame's result, or live
 * in the state a graph break hands on): built for real as CPython's MAKE_FUNCTION would,
 * types.FunctionType(code, globals, name, defaults, closure) with its keyword-only defaults
 * and annotations (torchc/_api.py _made_function), once per function object (sym_fill_out).
 * Its cells are fresh ones holding the values: eager's are shared with the frame that made
 * it, which is gone (an inlined helper) or whose later writes were checked at the break
 * (symbolic.c sym_made_fns_resumable). Refused: a function that assigns a variable of its
 * enclosing function (nonlocal), where a copy of the cell would be seen to differ. */
static int made_function(trace *t, outbuf *ob, int at, const var *fn, ic_val *outvals, int *nout) {
    if (fn->obj == NULL || !PyCode_Check(fn->obj))
        return sym_fail(t, "a nested function of unknown code leaves the trace");
    PyCodeObject *co = (PyCodeObject *)fn->obj;
    if (fn->n > 0) {
        /* a real cell (sym_cells.c) is the one eager's function writes: only the others */
        PyObject *all = PyCode_GetFreevars(co), *names = all ? PyList_New(0) : NULL;
        for (Py_ssize_t k = 0; names != NULL && k < PyTuple_GET_SIZE(all); k++)
            if ((k >= fn->n || (sym_cells_real(t, fn->items, (int)k) < 0 && shared_slot(t, fn->items, (int)k) < 0)) &&
                PyList_Append(names, PyTuple_GET_ITEM(all, k)) < 0)
                Py_CLEAR(names);
        Py_XDECREF(all);
        if (names != NULL)
            Py_SETREF(names, PyList_AsTuple(names));
        int w = names ? code_writes_free(co, names, 0) : -1;
        Py_XDECREF(names);
        if (w < 0)
            return -1;
        if (w)
            return sym_fail(t, "a nested function that assigns a variable of its enclosing function "
                               "(nonlocal) leaves the trace");
    }
    int ann = fn->oid & 1;
    /* closure items that are a real function's cell (sym_cells.c): that cell object itself */
    PyObject *cells = PyTuple_New(fn->n);
    if (cells == NULL)
        return -1;
    for (int k = 0; k < fn->n; k++)
        PyTuple_SET_ITEM(cells, k, Py_NewRef(sym_cells_real(t, fn->items, k) >= 0 || shared_slot(t, fn->items, k) >= 0
                                                 ? Py_True
                                                 : Py_False));
    PyObject *api = PyImport_ImportModule("torchc._api");
    PyObject *mk = api ? PyObject_GetAttrString(api, "_made_function") : NULL;
    Py_XDECREF(api);
    PyObject *globals = fn->globals ? fn->globals : t->globals;
    PyObject *wrap = mk ? PyObject_CallFunction(mk, "OOiiiiO", fn->obj, globals, fn->n, fn->pos, fn->is_list, ann,
                                                cells)
                        : NULL;
    Py_XDECREF(mk);
    Py_DECREF(cells);
    if (wrap == NULL)
        return -1;
    int child = sym_out_reserve(t, ob, 1);
    if (child < 0) {
        Py_DECREF(wrap);
        return -1;
    }
    ob->o[at].kind = DH_O_WRAP;
    ob->o[at].index = child;
    ob->o[at].obj = wrap;
    /* (closure values..., defaults..., [kwdefaults], [annotations]) */
    int n = fn->n + fn->pos + fn->is_list + ann;
    int first = sym_out_reserve(t, ob, n);
    if (first < 0)
        return -1;
    ob->o[child].kind = DH_O_TUPLE;
    ob->o[child].index = first;
    ob->o[child].count = n;
    for (int i = 0; i < n; i++) {
        int s = i < fn->n ? sym_cells_real(t, fn->items, i) : -1;
        int sh = i < fn->n && s < 0 ? shared_slot(t, fn->items, i) : -1;
        if (s >= 0) {
            ob->o[first + i].kind = DH_O_SOURCE;
            ob->o[first + i].index = s;
        } else if (sh >= 0) {
            if (shared_cell(t, ob, first + i, sh, outvals, nout) < 0)
                return -1;
        } else if (sym_fill_out(t, ob, first + i, &fn->items[i], outvals, nout) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Does the rest of code co, from code unit pc on, maybe assign local slot `slot` (a cell
 * variable): an assignment after pc, or one before pc that a backward jump or an exception
 * handler after pc reaches again (a loop)? -1: error. */
static int cell_may_change_after(PyCodeObject *co, int slot, int pc) {
    PyObject *bytes = PyCode_GetCode(co);
    if (bytes == NULL)
        return -1;
    const unsigned char *bc = (const unsigned char *)PyBytes_AS_STRING(bytes);
    int n = (int)(PyBytes_GET_SIZE(bytes) / 2), hit = 0, ext = 0, first_write = -1;
    for (int i = 0; i < n && !hit; i++) { /* the assignments: one after pc is enough */
        const char *on = sym_opname(bc[2 * i]);
        int arg = ext | bc[2 * i + 1];
        ext = on && !strcmp(on, "EXTENDED_ARG") ? arg << 8 : 0;
        if (on && (!strcmp(on, "STORE_DEREF") || !strcmp(on, "DELETE_DEREF")) && arg == slot) {
            if (i >= pc)
                hit = 1;
            else if (first_write < 0)
                first_write = i;
        }
    }
    ext = 0;
    for (int i = 0; i < n && !hit && first_write >= 0; i++) { /* control reaching one again */
        const char *on = sym_opname(bc[2 * i]);
        int arg = ext | bc[2 * i + 1];
        ext = on && !strcmp(on, "EXTENDED_ARG") ? arg << 8 : 0;
        if (i < pc || on == NULL)
            continue;
        if (strstr(on, "BACKWARD") && i + 1 - arg <= pc - 1)
            hit = 1; /* conservative: any loop around the break that starts at or before a write */
        else {
            int d, l, h = sym_exc_handler(co, i, &d, &l);
            if (h >= 0 && h < pc)
                hit = 1;
        }
        if (hit && strstr(on, "BACKWARD") && i + 1 - arg > first_write) {
            /* the loop starts after every earlier write? only writes inside [target, pc) count */
            int tgt = i + 1 - arg, w = 0, e2 = 0;
            for (int j = 0; j < pc; j++) {
                const char *o2 = sym_opname(bc[2 * j]);
                int a2 = e2 | bc[2 * j + 1];
                e2 = o2 && !strcmp(o2, "EXTENDED_ARG") ? a2 << 8 : 0;
                if (j >= tgt && o2 && (!strcmp(o2, "STORE_DEREF") || !strcmp(o2, "DELETE_DEREF")) && a2 == slot)
                    w = 1;
            }
            hit = w;
        }
    }
    Py_DECREF(bytes);
    return hit;
}

/* Does a function that code co makes (a code constant, at any depth) assign its free
 * variable `name` (nonlocal name; name = ...)? Made after a break, such a writer changes the
 * resume frame's cell, not the fresh one of a function rebuilt for the break. -1: error. */
static int made_code_writes(PyCodeObject *co, PyObject *name) {
    PyObject *names = PyTuple_Pack(1, name);
    if (names == NULL)
        return -1;
    int hit = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(co->co_consts) && !hit; i++) {
        PyObject *c = PyTuple_GET_ITEM(co->co_consts, i);
        if (PyCode_Check(c))
            hit = code_writes_free((PyCodeObject *)c, names, 1);
    }
    Py_DECREF(names);
    return hit;
}

/* The functions made in the trace that are live at a break of frame f (in v[0..n), in
 * containers and closures too): each closure value of one that is a cell of f must stay
 * unchanged after the break (the resume frame's cell and the rebuilt function's are two);
 * 1 when resumable, 0 failed (the reason set), -1 error. */
int sym_made_fns_resumable(trace *t, sframe *f, const var *v, int n, int depth) {
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if (x->items == NULL || depth >= 8)
            continue;
        int m = x->kind == V_METHOD ? 1 : x->n;
        if (x->kind == V_FUNC && x->op == SYM_MADE_FUNCTION && x->obj && PyCode_Check(x->obj)) {
            PyCodeObject *co = (PyCodeObject *)x->obj;
            int nfv = co->co_nfreevars, base = co->co_nlocalsplus - nfv;
            int first_free = f->code->co_nlocalsplus - f->code->co_nfreevars;
            PyObject *fnames = f->code->co_localsplusnames;
            for (int k = 0; k < x->n && k < nfv; k++) {
                if (sym_cells_real(t, x->items, k) >= 0)
                    continue; /* the real cell itself: shared with the resume frame's closure */
                PyObject *name = PyTuple_GET_ITEM(co->co_localsplusnames, base + k);
                for (int j = 0; j < f->code->co_nlocalsplus; j++) {
                    int eq = PyUnicode_Compare(PyTuple_GET_ITEM(fnames, j), name);
                    if (eq != 0)
                        continue;
                    if (j >= first_free) {
                        sym_fail(t, "a nested function over a free variable of the frame is live across a "
                                    "graph break");
                        return 0;
                    }
                    int c = cell_may_change_after(f->code, j, f->pc);
                    if (c < 0)
                        return -1;
                    int c2 = c ? 0 : made_code_writes(f->code, name);
                    if (c2 < 0)
                        return -1;
                    if (c || c2) {
                        /* the frame (or a function it makes later) may assign it after the
                         * break: the function and the resume frame share one real cell
                         * (shared_cell), when the trace kept the function's copy of the
                         * value in step with the frame's (sym_cells.c registers it) */
                        int kept = !f->cellrefs_full && !f->gen;
                        int reg = 0;
                        for (int r = 0; kept && r < f->ncellrefs && !reg; r++)
                            reg = f->cellrefs[r].items == x->items && f->cellrefs[r].k == k;
                        if (!reg || t->brk.nshare >= (int)(sizeof t->brk.share / sizeof t->brk.share[0]) ||
                            !f->top) {
                            sym_fail(t, c ? "a nested function over a variable the frame may assign after the "
                                            "break is live across it"
                                          : "a nested function over a variable that another function of the frame "
                                            "assigns (nonlocal) is live across a graph break");
                            return 0;
                        }
                        if (shared_slot(t, x->items, k) < 0) {
                            t->brk.share[t->brk.nshare].items = x->items;
                            t->brk.share[t->brk.nshare].k = k;
                            t->brk.share[t->brk.nshare].slot = j;
                            t->brk.nshare++;
                        }
                    }
                }
            }
            m = x->n + x->pos + x->is_list + (x->oid & 1);
        } else if (!(x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC ||
                     x->kind == V_METHOD))
            continue;
        int r = sym_made_fns_resumable(t, f, x->items, m, depth + 1);
        if (r <= 0)
            return r;
    }
    return 1;
}

/* The callable of a break CALL that is a comprehension made in the frame (3.11's <listcomp>,
 * <dictcomp>, <setcomp>: a break inside its body): built for real when the break runs,
 * types.FunctionType(code, globals, defaults, closure of fresh cells holding the values)
 * (torchc/_api.py _made_function). It is called right there and dropped, so its cells being
 * copies of the frame's is unobservable, unless it writes them (a walrus: STORE_DEREF of a
 * free variable), which is refused. 1: not such a callable (sym_fill_out's rules). */
static int made_comprehension(trace *t, outbuf *ob, int at, const var *fn, ic_val *outvals, int *nout) {
    if (fn->kind != V_FUNC || fn->op != SYM_MADE_FUNCTION || fn->obj == NULL || !PyCode_Check(fn->obj) ||
        fn->is_list)
        return 1;
    PyCodeObject *co = (PyCodeObject *)fn->obj;
    const char *name = PyUnicode_AsUTF8(co->co_name);
    if (name == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return 1;
    }
    if (strcmp(name, "<listcomp>") && strcmp(name, "<dictcomp>") && strcmp(name, "<setcomp>"))
        return 1;
    PyObject *bytes = PyCode_GetCode(co);
    if (bytes == NULL)
        return -1;
    const unsigned char *bc = (const unsigned char *)PyBytes_AS_STRING(bytes);
    int writes = 0;
    for (Py_ssize_t i = 0; i + 1 < PyBytes_GET_SIZE(bytes); i += 2) {
        const char *on = sym_opname(bc[i]);
        if (on && (!strcmp(on, "STORE_DEREF") || !strcmp(on, "DELETE_DEREF")))
            writes = 1;
    }
    Py_DECREF(bytes);
    if (writes)
        return 1;
    PyObject *api = PyImport_ImportModule("torchc._api");
    PyObject *mk = api ? PyObject_GetAttrString(api, "_made_function") : NULL;
    Py_XDECREF(api);
    PyObject *globals = fn->globals ? fn->globals : t->globals;
    PyObject *wrap = mk ? PyObject_CallFunction(mk, "OOi", fn->obj, globals, fn->n) : NULL;
    Py_XDECREF(mk);
    if (wrap == NULL)
        return -1;
    int child = sym_out_reserve(t, ob, 1);
    if (child < 0) {
        Py_DECREF(wrap);
        return -1;
    }
    ob->o[at].kind = DH_O_WRAP;
    ob->o[at].index = child;
    ob->o[at].obj = wrap;
    var vals = sym_var(V_SEQ); /* (closure values..., defaults...) */
    vals.n = fn->n + fn->pos;
    vals.items = fn->items;
    return sym_fill_out(t, ob, child, &vals, outvals, nout);
}

/* the source of the exact list a plain loop iterator (GET_ITER) walks, unchanged by the
 * trace (a write rebinds the source's items, sideeffects.c), or -1 */
static int list_source_of(trace *t, const var *it) {
    if (it->op != 0)
        return -1; /* an owned iterator (iter()) holds a copy of what is left */
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++) {
        const var *x = &t->srcvar[s];
        if (t->srcdone[s] && x->kind == V_SEQ && x->is_list && x->items == it->items && x->n == it->n &&
            t->srcobj[s] != NULL && PyList_CheckExact(t->srcobj[s]) && PyList_GET_SIZE(t->srcobj[s]) == it->n)
            return s;
    }
    return -1;
}

/* Outspec of the break state: (fn/cond, args..., stack..., locals...) and resume code. */
/* The automatic dynamic ints the break passes on (as int(their graph value)) are dynamic in
 * the resume function's first trace too: its cache's dynints get their sources there (L[i]
 * for local i, L[nlocals + k] for stack item k), so N values reuse one resume entry instead
 * of the first specializing and the second marking them. (compile(dynamic=True): every
 * argument of a resume is one already.) 0, or -1 with an error */
static int seed_resume_dynints(trace *t, const sym_break *b, PyObject *const *resumes) {
    if (dh_tl_dynints == NULL || dh_tl_dynints == Py_True)
        return 0;
    for (int r = 0; r < 2; r++) {
        if (resumes[r] == NULL || !PyFunction_Check(resumes[r]) || (r == 1 && resumes[1] == resumes[0]))
            continue;
        dh_cache *c = NULL;
        for (int i = 0; i < b->nlocals + b->nstack; i++) {
            const var *v = i < b->nlocals ? &b->locals[i] : &b->stack[i - b->nlocals];
            if (v->kind != V_CONST || v->dyn <= 0 || v->dyn > t->ndynv)
                continue;
            if (c == NULL && (c = dh_cache_of((PyCodeObject *)PyFunction_GET_CODE(resumes[r]))) == NULL)
                return -1;
            if (c->dynints == NULL && (c->dynints = PySet_New(NULL)) == NULL)
                return -1;
            PyObject *key = PyUnicode_FromFormat("L[%d]", i);
            int rc = key ? PySet_Add(c->dynints, key) : -1;
            Py_XDECREF(key);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

int sym_fill_break(trace *t, outbuf *ob, ic_val *outvals, int *nout, dh_entry_brk *eb) {
    sym_break *b = &t->brk;
    int n = 1 + b->nargs + b->nstack + b->nlocals;
    int first = sym_out_reserve(t, ob, n);
    if (first < 0)
        return -1;
    ob->o[0].kind = DH_O_TUPLE;
    ob->o[0].index = first;
    ob->o[0].count = n;
    int k = first;
    int mrc = made_comprehension(t, ob, k, b->fn, outvals, nout);
    if (mrc < 0 || (mrc == 1 && sym_fill_out(t, ob, k, b->fn, outvals, nout) < 0))
        return -1;
    k++;
    for (int i = 0; i < b->nargs; i++)
        if (sym_fill_out(t, ob, k++, &b->args[i], outvals, nout) < 0)
            return -1;
    unsigned char stack_null[STACK_MAX + 2], *unbound = calloc((size_t)b->nlocals + 1, 1);
    if (unbound == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = -1;
    for (int i = 0; i < b->nstack; i++) {
        var it = b->stack[i];
        stack_null[i] = it.kind == V_NULL ? 1 : it.kind == V_ITER ? 2 : 0;
        if (b->with != NULL && sym_is_with_exit(&it)) {
            /* a with block's exit: the resume enters the block again (resume.c) */
            stack_null[i] = 3;
            ob->o[k].kind = DH_O_CONST;
            ob->o[k++].obj = Py_NewRef(Py_None);
            continue;
        }
        if (it.kind == V_ITER && it.is_list) {
            /* eager's iterator reads the live list: the resume takes a real iterator over it
             * at the same index, so a call that grows or shrinks the list is seen as eager sees it */
            int s = list_source_of(t, &it), child = s < 0 ? -1 : sym_out_reserve(t, ob, 1);
            if (s < 0 && !PyErr_Occurred())
                sym_fail(t, "a graph break inside a loop over a list the caller sees (it may change)");
            if (child < 0)
                goto done;
            ob->o[k].kind = DH_O_ITER;
            ob->o[k].index = child;
            ob->o[k++].count = it.pos;
            ob->o[child].kind = DH_O_SOURCE;
            ob->o[child].index = s;
            continue;
        }
        /* an iterator: the resume function takes an iterator over the items still to
         * come (DH_O_ITER), read lazily there (obj_iter.c): one entry serves every
         * position of a loop that breaks in each iteration; GET_ITER in the prologue */
        if (sym_fill_out(t, ob, k++, &it, outvals, nout) < 0)
            goto done;
    }
    for (int i = 0; i < b->nlocals; i++) {
        var *l = &b->locals[i];
        int shared = 0;
        for (int k2 = 0; k2 < b->nshare && !shared; k2++)
            shared = b->share[k2].slot == i;
        if (shared && l->kind != V_UNSET && l->kind != V_NULL) {
            unbound[i] = 2; /* the cell itself, shared with the functions made before */
            if (shared_cell(t, ob, k++, i, outvals, nout) < 0)
                goto done;
            continue;
        }
        if (dh_resume_cell_passed(t->code, i) && t->localsplus[i] != NULL && PyCell_Check(t->localsplus[i])) {
            /* a resume frame's shared cell (read through it, never written in this trace:
             * a write breaks, symbolic.c): passed on as the cell itself */
            int s = sym_source(t, DH_S_LOCAL, -1, i, NULL);
            if (s < 0)
                goto done;
            unbound[i] = 2;
            ob->o[k].kind = DH_O_SOURCE;
            ob->o[k++].index = s;
            continue;
        }
        if (l->kind == V_UNSET && t->localsplus[i] != NULL) {
            /* never read by the trace: pass the frame's value through */
            int s = sym_source(t, DH_S_LOCAL, -1, i, NULL);
            if (s < 0)
                goto done;
            ob->o[k].kind = DH_O_SOURCE;
            ob->o[k++].index = s;
            continue;
        }
        if (l->kind == V_UNSET || l->kind == V_NULL) {
            unbound[i] = 1;
            ob->o[k].kind = DH_O_CONST;
            ob->o[k++].obj = Py_NewRef(Py_None);
            continue;
        }
        if (sym_fill_out(t, ob, k++, l, outvals, nout) < 0)
            goto done;
    }
    if (b->kind == DH_BRK_CALL || b->kind == DH_BRK_BINOP) {
        stack_null[b->nstack] = 0; /* the call's result */
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack + 1, stack_null, b->with);
        if (eb->resume[0] == NULL)
            goto done;
    } else if (b->kind == DH_BRK_WITH || b->kind == DH_BRK_CALL_WITH) {
        stack_null[b->nstack] = stack_null[b->nstack + 1] = 0; /* the exit, __enter__'s result */
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack + 2, stack_null, b->with);
        if (eb->resume[0] == NULL)
            goto done;
    } else if (b->kind == DH_BRK_STORE || b->kind == DH_BRK_SETATTR) {
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack, stack_null, b->with);
        if (eb->resume[0] == NULL)
            goto done;
    } else {
        eb->resume[0] = dh_make_resume(t->code, t->globals, b->pc_next, b->nlocals, unbound,
                                       b->nstack, stack_null, b->with);
        eb->resume[1] = eb->resume[0] ? dh_make_resume(t->code, t->globals, b->pc_taken,
                                                       b->nlocals, unbound, b->nstack, stack_null, b->with)
                                      : NULL;
        if (eb->resume[1] == NULL)
            goto done;
    }
    if (seed_resume_dynints(t, b, eb->resume) < 0)
        goto done;
    if (b->exc_target >= 0) { /* the instruction may raise inside a try block */
        eb->exc_resume = dh_make_exc_resume(t->code, t->globals, b->exc_target, b->exc_depth, b->exc_lasti,
                                            b->nlocals, unbound, stack_null);
        if (eb->exc_resume == NULL)
            goto done;
    }
    rc = 0;
done:
    free(unbound);
    return rc;
}

static int mut_room(trace *t, mutlist *m) {
    if (m->n < m->cap)
        return 1;
    int cap = m->cap ? 2 * m->cap : 16;
    if (m->n >= dh_limit.max_outputs) {
        sym_fail(t, "more than %d in-place updated inputs (torchc.config.max_outputs)", dh_limit.max_outputs);
        return 0;
    }
    int *s = realloc(m->src, (size_t)cap * sizeof *s);
    if (s != NULL)
        m->src = s;
    int *f = s ? realloc(m->from, (size_t)cap * sizeof *f) : NULL;
    if (f == NULL) {
        PyErr_NoMemory();
        return 0;
    }
    m->from = f;
    m->cap = cap;
    return 1;
}

void sym_record_mutations(trace *t, ic_val *outvals, int *nout, mutlist *m) {
    for (int i = 0; i < t->ninputs; i++) {
        int oid = t->input_oid[i];
        ic_val now = t->obj_val[oid];
        if (ic_value_op(t->g, now) == IC_OP_INPUT && now == t->obj_val[oid] &&
            ic_value_meta(t->g, now) != NULL) {
            /* unchanged, or replaced by another input's value */
            int k = -1;
            for (int j = 0, c = 0; j <= now; j++)
                if (ic_value_op(t->g, j) == IC_OP_INPUT) {
                    if (j == now)
                        k = c;
                    c++;
                }
            if (k == i)
                continue;
            if (k < 0) {
                sym_fail(t, "an in-place updated input not found");
                return;
            }
            if (!mut_room(t, m))
                return;
            m->src[m->n] = t->input_src[i];
            m->from[m->n++] = -1 - t->input_src[k];
            continue;
        }
        int idx = -1;
        for (int j = 0; j < *nout; j++)
            if (outvals[j] == now)
                idx = j;
        if (!mut_room(t, m)) /* (also when the value is an output already: m->src grows) */
            return;
        if (idx < 0) {
            if (*nout >= dh_limit.max_outputs) {
                sym_fail(t, "more than %d outputs (torchc.config.max_outputs)", dh_limit.max_outputs);
                return;
            }
            if (ic_output(t->g, now) < 0) {
                sym_check_graph(t);
                return;
            }
            outvals[*nout] = now;
            idx = (*nout)++;
        }
        m->src[m->n] = t->input_src[i];
        m->from[m->n++] = idx;
    }
}

/* a guard of `kind` over no source, its spec *spec (taken: *spec becomes NULL; left to the
 * caller when the guard could not be added) */
static void spec_guard(trace *t, dh_guardkind kind, PyObject **spec) {
    dh_guard *g = sym_new_guard(t, kind, -1);
    if (g == NULL)
        return;
    g->obj = *spec;
    *spec = NULL;
}

/* The trace took tensors from different sources to be different objects (an object seen
 * twice became one, with an ALIAS guard): the arguments must stay distinct, and an input
 * updated in place must not share memory with another input (views passed together). */
void sym_add_distinct_guard(trace *t, const mutlist *m) {
    PyObject *args = PyList_New(0), *muts = PyList_New(0), *ins = PyList_New(0), *spec = NULL;
    if (args == NULL || muts == NULL || ins == NULL)
        goto done;
    for (int i = 0; i < t->ninputs; i++) {
        int s = t->input_src[i], r = s;
        while (r >= 0 && t->src[r].kind != DH_S_LOCAL && t->src[r].kind != DH_S_GLOBAL &&
               t->src[r].kind != DH_S_CLOSURE)
            r = t->src[r].base;
        PyObject *si = PyLong_FromLong(s);
        /* an overlapping input the graph never reads (passed through, returned as itself)
         * is fine: the copy-back after the kernels updates the memory it shares */
        ic_val iv = ic_graph_input(t->g, i);
        int read = iv != IC_NONE && ic_value_num_uses(t->g, iv) > 0;
        if (si == NULL || (read && PyList_Append(ins, si) < 0) ||
            (r >= 0 && t->src[r].kind == DH_S_LOCAL && PyList_Append(args, si) < 0)) {
            Py_XDECREF(si);
            goto done;
        }
        Py_DECREF(si);
    }
    for (int i = 0; i < m->n; i++) {
        PyObject *si = PyLong_FromLong(m->src[i]);
        if (si == NULL || PyList_Append(muts, si) < 0) {
            Py_XDECREF(si);
            goto done;
        }
        Py_DECREF(si);
    }
    int pair = PyList_GET_SIZE(ins) >= 2; /* a mutated input beside another read one */
    for (int i = 0; i < m->n && !pair && PyList_GET_SIZE(ins) == 1; i++)
        pair = PyLong_AsLong(PyList_GET_ITEM(ins, 0)) != m->src[i];
    if (PyList_GET_SIZE(args) < 2 && (m->n == 0 || !pair))
        goto done; /* nothing to check */
    if (m->n == 0)
        PyList_SetSlice(ins, 0, PyList_GET_SIZE(ins), NULL);
    spec = Py_BuildValue("(NNN)", PyList_AsTuple(args), PyList_AsTuple(muts), PyList_AsTuple(ins));
    if (spec == NULL)
        goto done;
    if (!dh_distinct_ok(spec, (PyObject *const *)t->srcobj)) {
        sym_fail(t, "an input updated in place shares memory with another input (eager decides)");
        goto done;
    }
    spec_guard(t, DH_G_DISTINCT, &spec);
done:
    Py_XDECREF(args);
    Py_XDECREF(muts);
    Py_XDECREF(ins);
    Py_XDECREF(spec);
}

/* Objects of Python classes are type-guarded, not identity-guarded: which of their sources
 * were one object (an attribute written through one, read through another) is guarded. */
void sym_add_sameobj_guard(trace *t) {
    if (t->ntobj < 2)
        return;
    PyObject *srcs = PyTuple_New(t->ntobj), *pat = PyTuple_New(t->ntobj), *spec = NULL;
    if (srcs == NULL || pat == NULL)
        goto done;
    for (int i = 0; i < t->ntobj; i++) {
        int j = 0;
        while (t->tobj[j] != t->tobj[i])
            j++;
        PyTuple_SET_ITEM(srcs, i, PyLong_FromLong(t->tobj_src[i]));
        PyTuple_SET_ITEM(pat, i, PyLong_FromLong(j));
        if (PyErr_Occurred())
            goto done;
    }
    spec = Py_BuildValue("(OO)", srcs, pat);
    if (spec != NULL)
        spec_guard(t, DH_G_SAMEOBJ, &spec);
done:
    Py_XDECREF(srcs);
    Py_XDECREF(pat);
    Py_XDECREF(spec);
}

/* Splits at matrix products and convolutions are by design (they run as ATen kernels
 * between compiled graphs, the epilogue fused into the next graph): explain reports them
 * as extern calls, not as graph breaks. */
int sym_is_extern_break(const sym_break *b) {
    static const char *names[] = {"matmul", "mm", "bmm", "addmm", "baddbmm", "linear",
                                  "conv1d", "conv2d", "conv3d", "einsum", "addmv", "mv", NULL};
    if (b->kind == DH_BRK_BINOP)
        return b->binop == 4 || b->binop == 17;
    if (b->kind != DH_BRK_CALL)
        return 0;
    const char *n = NULL;
    if (b->fn->kind == V_OBJ && !PyModule_Check(b->fn->obj)) {
        /* torch's own linear/conv modules: their forward is the extern kernel */
        const char *tn = Py_TYPE(b->fn->obj)->tp_name;
        PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(b->fn->obj), "__module__");
        const char *mn = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : "";
        int torchmod = mn && strncmp(mn, "torch.nn.modules.", 17) == 0;
        Py_XDECREF(mod);
        (void)tc_clear_expected(PyExc_AttributeError, PyExc_UnicodeError);
        return torchmod && (!strcmp(tn, "Linear") || !strcmp(tn, "Conv1d") || !strcmp(tn, "Conv2d") ||
                            !strcmp(tn, "Conv3d") || !strcmp(tn, "Bilinear"));
    }
    if (b->fn->kind == V_METHOD && PyUnicode_Check(b->fn->obj))
        n = PyUnicode_AsUTF8(b->fn->obj);
    else if (b->fn->kind == V_FUNC && b->fn->obj != NULL && PyCFunction_Check(b->fn->obj))
        n = ((PyCFunctionObject *)b->fn->obj)->m_ml->ml_name;
    if (n == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return 0;
    }
    for (int i = 0; names[i]; i++)
        if (strcmp(n, names[i]) == 0)
            return 1;
    return 0;
}

/* ---- driver -------------------------------------------------------------------------- */

/* ---- training (owner: training) ----
 * When inputs require grad under grad mode, the backward graph is derived from the forward
 * one (inductor_c/graph/autograd.c: saved values become extra forward outputs) and compiled
 * like it; the entry's train object (csrc/train.c) runs it from an autograd node. 1 if the
 * trace trains. */
int sym_trace_trains(trace *t) {
    if (t->nleaf > 0) /* (sym_train_build: trains, or fails) */
        return 1;
    if (t->ninputs == 0 || !tc_grad_enabled())
        return 0;
    unsigned char *req = malloc((size_t)t->ninputs);
    int n = req ? sym_train_req(t, req) : 0;
    free(req);
    return n > 0;
}

/* 0: not training, or *train set; -1: the trace failed (reason) or an exception */
int sym_train_build(trace *t, mutlist *muts, const outbuf *ob, const ic_options *opt, PyObject **train) {
    unsigned char *req = calloc((size_t)t->ninputs + 1, 1);
    if (req == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (sym_train_req(t, req) == 0) {
        free(req);
        if (t->nleaf > 0) /* its outputs would require grad with nothing to reach */
            return sym_fail(t, "Tensor.requires_grad = True in a graph where no input requires grad not supported");
        return 0;
    }
    if (sym_inplace_nograd_then_grad(t)) { /* train_inplace_store.c */
        free(req);
        return sym_fail(t, "training: a tensor that requires grad is updated under no_grad, then used with "
                           "grad mode on (eager decides)");
    }
    /* in-place updates made with grad mode on that autograd must record (an input that
     * requires grad, or a value that does): functionalized, their new values are outputs
     * of the autograd node, which takes over the tensors' history (train_inplace_store.c) */
    if (sym_inplace_train_modes(t, muts, ob, req) < 0) {
        free(req);
        return -1;
    }
    /* inputs updated in place: overwritten after the forward, so never read by the backward */
    for (int i = 0; i < muts->n; i++)
        for (int k = 0; k < t->ninputs; k++)
            if (t->input_src[k] == muts->src[i])
                req[k] |= IC_AG_OVERWRITTEN;
    ic_autograd ag;
    ic_err err = {0};
    int rc = ic_autograd_build(t->g, req, &ag, &err);
    if (rc < 0) {
        free(req);
        return sym_fail(t, "training: %s", err.msg);
    }
    /* an input updated in place, whose new value eager keeps: its version is checked too
     * (one the autograd node's Write takes over: checked there, torchc/_autograd.py) */
    for (int i = 0; ag.check_in && i < muts->n; i++)
        if (muts->from[i] >= 0 && !(muts->mode && muts->mode[i] == DH_MUT_NODE) &&
            ic_value_saved_for_backward(t->g, ic_graph_output_value(t->g, muts->from[i]), req, 1, -1))
            for (int k = 0; k < t->ninputs; k++)
                if (t->input_src[k] == muts->src[i])
                    ag.check_in[k] = 1;
    free(req);
    if (ag.bwd == NULL) {
        ic_autograd_clear(&ag);
        for (int i = 0; muts->mode && i < muts->n; i++)
            if (muts->mode[i] == DH_MUT_NODE)
                return sym_fail(t, "training: an input that requires grad is updated in place and no output "
                                   "carries a gradient (eager decides)");
        return 0;
    }

    /* the backward graph is compiled on the first backward call (csrc/train.c) */
    /* double backward's eager replay of this graph: the stop-gradient values it detaches */
    ic_val *nograd = NULL;
    int nng = ic_graph_grad_plain(t->g, ag.nuser_out, &nograd);
    PyObject *detach = nng >= 0 ? PyTuple_New(nng) : NULL;
    for (int k = 0; detach != NULL && k < nng; k++) {
        PyObject *id = PyLong_FromLong(nograd[k]);
        if (id == NULL)
            Py_CLEAR(detach);
        else
            PyTuple_SET_ITEM(detach, k, id);
    }
    free(nograd);
    if (nng >= 0 && detach == NULL) { /* out of memory: raised, as eager's would be */
        ic_autograd_clear(&ag);
        return -1;
    }
    *train = tc_train_new(&ag, opt, t->ninputs, t->device_type < 0 ? TC_DEV_CPU : t->device_type,
                          t->device_index > 0 ? t->device_index : 0, detach);
    return *train ? 0 : -1;
}

/* explain's hint for the loop that put the most ops into the graph, iterated at least
 * SYM_LOOP_HINT_ITERS times with tensor ops in each iteration and SYM_LOOP_HINT_OPS in all
 * (malloc'd), or NULL */
static char *loop_hint(const trace *t) {
    const struct sym_loop *best = NULL;
    for (int i = 0; i < t->nloops; i++) {
        const struct sym_loop *l = &t->loops[i];
        if (l->iters >= SYM_LOOP_HINT_ITERS && l->ops - l->ops0 >= l->iters - 1 &&
            l->ops - l->ops0 >= SYM_LOOP_HINT_OPS &&
            (best == NULL || l->ops - l->ops0 > best->ops - best->ops0))
            best = l;
    }
    if (best == NULL)
        return NULL;
    char buf[512];
    snprintf(buf, sizeof buf,
             "a Python loop (%s) was unrolled into the graph: %d iterations, about %d ops each; its "
             "compile time grows with its length. torchc.scan(step, init, xs) compiles the step once "
             "and runs it as a loop, forward and backward",
             best->where, best->iters, (best->ops - best->ops0) / (best->iters - 1));
    return strdup(buf);
}

dh_entry *sym_finish_entry(trace *t, outbuf *ob, ic_compiled *compiled) {
    dh_entry *e = calloc(1, sizeof *e);
    if (e == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    e->fallback = t->failed;
    e->reason = t->failed ? strdup(t->reason) : NULL;
    e->where = t->failed && t->where[0] ? strdup(t->where) : NULL;
    sym_lazy_drop(t); /* the dict values never read: not guarded (variables.c) */
    e->nsources = t->nsrc;
    e->sources = t->src;
    t->src = NULL;
    t->nsrc = 0;
    e->nguards = t->nguards;
    e->guards = t->guards;
    t->guards = NULL;
    t->nguards = 0;
    e->ninputs = t->ninputs;
    e->input_src = t->input_src;
    t->input_src = NULL;
    if (!t->failed) {
        e->nouts = ob->n;
        e->outs = ob->o;
        ob->o = NULL;
        ob->n = 0;
        e->compiled = compiled;
        e->graph_text = ic_graph_to_string(t->g);
        e->op_count = ic_graph_num_ops(t->g) - sym_fold_dead_ops(t); /* (fold.c: dead, dropped) */
        e->hint = loop_hint(t);
    }
    return e;
}

void sym_trace_free(trace *t, outbuf *ob) {
    for (int i = 0; i < t->nsrc; i++)
        Py_XDECREF(t->src[i].name);
    free(t->src);
    free(t->srcidx);
    free(t->srcvar);
    free(t->srcobj);
    free(t->srcdone);
    for (int i = 0; i < t->nguards; i++)
        dh_guard_clear(&t->guards[i]);
    free(t->guards);
    free(t->input_src);
    free(t->input_oid);
    free(t->obj_val);
    free(t->obj_aliased);
    free(t->obj_root);
    free(t->obj_nmut);
    free(t->symv);
    free(t->dynv);
    free(t->view_of_input);
    free(t->view_desc);
    sym_fold_free(t);
    free(t->chk);
    free(t->vb);
    sym_fx_free(t);
    if (ob) {
        for (int i = 0; i < ob->n; i++)
            Py_XDECREF(ob->o[i].obj);
        free(ob->o);
        free(ob->alias);
    }
    Py_XDECREF(t->keep);
    if (t->g)
        ic_graph_free(t->g);
    free(t);
}

/* Graph text with the hint sizes of symbolic values removed (and the strides of dynamic
 * inputs), plus the index bounds: equal for two traces at different hints iff no hint
 * value leaked into the graph as a constant. malloc'd. */
char *sym_dyn_signature(trace *t) {
    char *txt = ic_graph_to_string(t->g);
    if (txt == NULL)
        return NULL;
    size_t n = strlen(txt);
    char *out = malloc(n + 64 + 48 * (size_t)t->nidx);
    if (out == NULL) {
        free(txt);
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        /* "[h0,h1,..] sym=[" : drop the hint list */
        if (txt[i] == '[') {
            size_t j = i + 1;
            while (j < n && (txt[j] == ',' || txt[j] == '-' || (txt[j] >= '0' && txt[j] <= '9')))
                j++;
            if (j < n && txt[j] == ']' && strncmp(txt + j + 1, " sym=[", 6) == 0) {
                i = j + 1;
                continue;
            }
        }
        /* " strides=[...]" right after a sym list: contiguous strides of the hints */
        if (strncmp(txt + i, "] strides=[", 11) == 0 && o > 0) {
            size_t back = o;
            while (back > 0 && out[back - 1] != '[' && out[back - 1] != '\n')
                back--;
            if (back >= 5 && strncmp(out + back - 5, "sym=[", 5) == 0) {
                size_t j = i + 11;
                while (j < n && txt[j] != ']')
                    j++;
                out[o++] = ']';
                i = j + 1;
                continue;
            }
        }
        out[o++] = txt[i++];
    }
    for (int k = 0; k < t->nidx; k++)
        o += (size_t)sprintf(out + o, "\nidx %d < %lld", t->idx_src[k], (long long)t->idx_bound[k]);
    out[o] = 0;
    free(txt);
    return out;
}
