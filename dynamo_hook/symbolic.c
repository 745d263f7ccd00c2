/* symbolic.c — the bytecode symbolic interpreter (CPython 3.11 and 3.12).
 *
 * Requires: a frame that has not started (locals = bound arguments).
 * Produces: an inductor_c graph, the sources/guards it was specialized on, and an output
 *           spec; or a fallback entry whose reason says what stopped the capture. The
 *           guards of a fallback entry cover the path traced so far, so the same inputs
 *           skip the capture next time.
 * Opcodes are identified by name through dis.opmap at init (one table for both versions);
 * inline cache sizes come from dis._inline_cache_entries. Each opcode has a handler
 * (sym_interp.h); this file holds the loop, the frames, graph breaks and the driver
 * (dh_trace_frame); the handlers live in sym_flow.c, sym_attr.c, sym_containers.c and
 * sym_call.c, the end of a trace in sym_output.c.
 */
#include "sym_interp.h"
#include "sym_sem.h"
#include "train.h"

#include <string.h>

static unsigned char optab[256];   /* CPython opcode → OP_* */
static unsigned char ncaches[256]; /* inline cache entries after each opcode */
static const char *opnames[256];   /* for reasons */

int dh_symbolic_init(void) {
    PyObject *dis = NULL, *opmap = NULL, *caches = NULL;
    int rc = -1;
    static const char *names[] = {
        "",
#define X(n) #n,
        DH_OPCODES(X)
#undef X
    };
    if (sym_variables_init() < 0 || sym_ops_init() < 0)
        return -1;
    dis = PyImport_ImportModule("dis");
    if (dis == NULL)
        goto error;
    opmap = PyObject_GetAttrString(dis, "opmap");
    caches = PyObject_GetAttrString(dis, "_inline_cache_entries");
    if (opmap == NULL || caches == NULL)
        goto error;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(opmap, &pos, &k, &v)) {
        long code = PyLong_AsLong(v);
        if (code < 0 || code > 255)
            continue;
        const char *s = PyUnicode_AsUTF8(k);
        opnames[code] = s; /* opmap keys are interned and live as long as dis */
        for (int i = 1; i < OP_COUNT_; i++)
            if (strcmp(names[i], s) == 0)
                optab[code] = (unsigned char)i;
    }
    Py_ssize_t n = PySequence_Size(caches);
    for (Py_ssize_t i = 0; i < n && i < 256; i++) {
        PyObject *c = PySequence_GetItem(caches, i);
        if (c == NULL)
            goto error;
        ncaches[i] = (unsigned char)PyLong_AsLong(c);
        Py_DECREF(c);
    }
    Py_INCREF(opmap); /* keep the names alive for opnames[] */
    rc = 0;
error:
    Py_XDECREF(dis);
    Py_XDECREF(opmap);
    Py_XDECREF(caches);
    return rc;
}

/* ---- frames of the symbolic interpreter ------------------------------------------ */

/* Reads local i: the real frame's value wrapped on first use. */
int sym_load_local(trace *t, sframe *f, int i, var *out) {
    if (i < 0 || i >= f->nlocals)
        return sym_fail(t, "bad local index");
    var *l = &f->locals[i];
    if (l->kind == V_UNSET && f->top) {
        PyObject *o = t->localsplus[i];
        if (o == NULL)
            return sym_fail(t, "local read before assignment");
        int s = sym_source(t, DH_S_LOCAL, -1, i, NULL);
        if (s >= 0 && PyCell_Check(o) && dh_resume_cell_passed(t->code, i)) {
            /* a resume frame's cell shared with a function made before the break
             * (sym_output.c shared_cell): its value, read through it */
            static PyObject *contents;
            if (contents == NULL && (contents = PyUnicode_InternFromString("cell_contents")) == NULL)
                return -1;
            o = PyCell_GET(o);
            if (o == NULL)
                return sym_fail(t, "free variable referenced before assignment (eager will raise)");
            s = sym_source(t, DH_S_ATTR, s, 2, contents);
        }
        if (s < 0 || sym_wrap(t, o, s, l) < 0)
            return -1;
    } else if (l->kind == V_UNSET || l->kind == V_NULL) {
        return sym_fail(t, "local read before assignment (eager will raise)");
    }
    *out = *l;
    return 0;
}

/* v stands for the Python object v->obj itself (identity comparisons are exact) */
int sym_is_real_object(const var *v) {
    return v->obj != NULL && (v->kind == V_CONST || v->kind == V_OBJ ||
                              (v->kind == V_FUNC && v->op != SYM_MADE_FUNCTION &&
                               v->op != SYM_CTX_EXIT));
}

int sym_real_object_pinned(trace *t, const var *v) {
    return sym_is_real_object(v) && sym_pin_identity(t, v) == 0;
}

int sym_truthy(trace *t, const var *v, int *out) {
    if (v->kind == V_CONST) {
        int r = PyObject_IsTrue(v->obj);
        if (r < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "truth value of a constant raised");
        }
        *out = r;
        return 0;
    }
    if (v->kind == V_SEQ || v->kind == V_DICT) {
        *out = v->n != 0;
        return 0;
    }
    if (v->kind == V_TENSOR) { /* a tensor built from constants (fold.c): its truth, now */
        var rv = *v;
        sym_resolve(t, &rv);
        PyObject *o = sym_hconst(t, &rv);
        if (o != NULL) {
            int busy = dh_tl_busy;
            dh_tl_busy = 1;
            int r = PyObject_IsTrue(o);
            dh_tl_busy = busy;
            if (r >= 0) {
                *out = r;
                return 0;
            }
            if (tc_clear_expected(PyExc_Exception) < 0)
                return -1; /* not a single value: eager raises; the rules below decide */
        }
    }
    if (v->kind == V_REC) { /* an OrderedDict: non-empty when a field is not None */
        var *items;
        int n;
        if (sym_record_items(t, v, &items, &n) < 0)
            return -1;
        *out = n != 0;
        return 0;
    }
    if (v->kind == V_OBJ && !PyModule_Check(v->obj)) {
        int rc = sym_obj_truth(t, v, out); /* obj_proto.c: a Python __bool__/__len__ */
        if (rc <= 0)
            return rc;
        /* objects are true unless their class has __bool__/__len__ */
        PyTypeObject *tp = Py_TYPE(v->obj);
        int has = (tp->tp_as_number && tp->tp_as_number->nb_bool) ||
                  (tp->tp_as_mapping && tp->tp_as_mapping->mp_length) ||
                  (tp->tp_as_sequence && tp->tp_as_sequence->sq_length);
        if (has && sym_is_module_container(v->obj, "__len__")) {
            var *items;
            int n;
            if (sym_iter_items(t, v, &items, &n) < 0)
                return -1;
            *out = n != 0;
            return 0;
        }
        if (has)
            return sym_fail(t, "truth value of a %s not supported", tp->tp_name);
        *out = 1;
        return 0;
    }
    if (v->kind == V_OBJ || v->kind == V_FUNC) {
        *out = 1;
        return 0;
    }
    if (v->kind == V_TENSOR)
        return sym_fail(t, "data-dependent branch on a tensor");
    return sym_fail(t, "branch on an unsupported value");
}

/* ---- graph breaks ------------------------------------------------------------------ */

int sym_can_break(trace *t) {
    /* free variables come back through the closure (COPY_FREE_VARS in the prologue), cell
     * variables get fresh cells and the exception table moves with the body (resume.c);
     * a break inside a try block is refused by sym_record_break_state */
    return !t->cfg->fullgraph;
}

/* the exit a with block on torch's state contexts left on the stack (sym_call.c BEFORE_WITH) */
int sym_is_with_exit(const var *v) {
    return v->kind == V_FUNC && (v->op == SYM_CTX_EXIT || v->op == SYM_AUTOCAST_EXIT) && v->obj != NULL;
}

/* an exit of a with block on another context manager: a @contextmanager's, or a Python
 * __exit__ bound to its object (obj_proto.c sym_obj_enter) */
static int other_with_exit(const var *v) {
    if (v->kind == V_FUNC && v->op == SYM_GENCM_EXIT)
        return 1;
    if (v->kind == V_METHOD && v->obj != NULL && PyFunction_Check(v->obj)) {
        PyObject *nm = ((PyFunctionObject *)v->obj)->func_name;
        return nm != NULL && PyUnicode_Check(nm) && PyUnicode_CompareWithASCIIString(nm, "__exit__") == 0;
    }
    return 0;
}

/* the exit of a Python context manager's block that the frame received (a resume after a
 * break at its BEFORE_WITH: DH_BRK_WITH): the real bound __exit__, passed on as it is */
static int passed_exit(const var *v) { return v->kind == V_OBJ && v->obj != NULL && v->src >= 0; }

/* the BEFORE_WITH of the outermost block on a Python context manager the trace entered
 * symbolically around the break (trace.withpc), or -1 */
static int user_with_pc(const trace *t, const sframe *f) {
    for (int i = 0; i < f->sp; i++) {
        if (!other_with_exit(&f->stack[i]))
            continue;
        for (int k = t->nwithpc; k-- > 0;)
            if (t->withpc[k].slot == i)
                return t->withpc[k].pc;
        return -1;
    }
    return -1;
}

/* The with blocks the break is inside: for each exit on the stack (outermost first) the
 * class and constant arguments of an equal context, (position, class, args), in
 * t->brk.with; the resume's prologue enters one there (resume.c) and run_break one around
 * the instruction (entry_run.c). no_grad() / inference_mode(mode) by their class,
 * autocast by torch.amp.autocast(device, dtype, enabled, cache_enabled): they hold no
 * state but the thread's, which entering again sets as the first entry did. *why set for a
 * block on another context manager. -1: an error. */
static int with_recipes(trace *t, sframe *f, const char **why) {
    int n = 0;
    for (int i = 0; i < f->sp; i++) {
        if (other_with_exit(&f->stack[i])) {
            *why = "inside a with block on a context manager other than no_grad, inference_mode or "
                   "autocast: its __enter__ would run again";
            return 0;
        }
        n += sym_is_with_exit(&f->stack[i]);
    }
    if (n == 0)
        return 0;
    if (n > 16) { /* entry_run.c run_break's room */
        *why = "inside more than 16 with blocks";
        return 0;
    }
    PyObject *tup = PyTuple_New(n);
    if (tup == NULL)
        return -1;
    for (int i = 0, k = 0; i < f->sp; i++) {
        const var *v = &f->stack[i];
        if (!sym_is_with_exit(v))
            continue;
        PyObject *r = NULL;
        if (v->op == SYM_AUTOCAST_EXIT) {
            PyObject *ca = dh_autocast_recipe(v->obj);
            r = ca ? Py_BuildValue("(iOO)", i, PyTuple_GET_ITEM(ca, 0), PyTuple_GET_ITEM(ca, 1)) : NULL;
            Py_XDECREF(ca);
        } else {
            /* no_grad(), inference_mode(mode) */
            PyObject *mode = PyObject_GetAttrString(v->obj, "mode");
            if (mode == NULL)
                (void)tc_clear_expected(PyExc_AttributeError);
            r = mode ? Py_BuildValue("(iO(O))", i, (PyObject *)Py_TYPE(v->obj), mode)
                     : Py_BuildValue("(iO())", i, (PyObject *)Py_TYPE(v->obj));
            Py_XDECREF(mode);
        }
        if (r == NULL) {
            Py_DECREF(tup);
            if (tc_clear_expected(PyExc_Exception) < 0)
                return -1;
            *why = "inside a with block whose context could not be made again";
            return 0;
        }
        PyTuple_SET_ITEM(tup, k++, r);
    }
    t->brk.with = sym_keep(t, tup);
    return t->brk.with ? 0 : -1;
}

/* The trace stops here: keep the reason, clear the failure, snapshot stack and locals.
 * Returns 1 (a break), which run() passes up. The instruction runs eagerly after the graph,
 * so the random draws (and custom ops) the trace made inside it leave the graph
 * (ic_graph_drop_draws): a call traced in part draws again when it runs, and eager's stream
 * would otherwise advance twice. */
int sym_record_break_state(trace *t, sframe *f) {
    if (t->maug_frame == (const void *)f) /* sym_containers.c masked_aug: the stack holds a full-size copy */
        return sym_fail(t, "a graph break inside x[mask] op= v (not resumable there)");
    if (sym_ctxvar_pending(t, NULL))
        return sym_fail(t, "a context variable set in the trace is live across a graph break");
    if (dh_code_reads_own_frame(t->code)) { /* (cache.c) the rest would run in another frame */
        char why[sizeof t->reason];
        snprintf(why, sizeof why, "%s", t->reason);
        snprintf(t->reason, sizeof t->reason,
                 "a graph break (%.180s) in a function that reads its own frame (locals(), sys._getframe): "
                 "it runs eagerly", why);
        t->failed = 1;
        return -1;
    }
    (void)ic_graph_drop_draws(t->g, t->top_n0);
    /* the instruction reruns eagerly, modes its abandoned calls entered included */
    t->ntfm = t->tfm_active = t->tfm_top;
    t->tfm_n = ic_graph_num_values(t->g);
    {
        /* the instruction run at the break may raise: inside a try block its handler runs, in
         * a resume that rebuilds the stack to the handler's depth and raises there (resume.c
         * dh_make_exc_resume). Inside with blocks on torch's state contexts (no_grad,
         * inference_mode, autocast) the real contexts are entered around the instruction and
         * entered again by the resume's prologue (with_recipes). Not in an except clause or a
         * finally's cleanup (the thread's handled exception is not rebuilt), nor in a with
         * block on another context manager (its __enter__ would run twice): the frame runs as
         * it is */
        int hd, hl, h = sym_exc_handler(f->code, f->pc, &hd, &hl);
        const char *why = NULL;
        int user_cm = 0; /* why: a block on a Python context manager entered in the trace */
        if (h >= 0) {
            PyObject *bytes = PyCode_GetCode(f->code); /* deoptimized */
            if (bytes == NULL)
                return -1;
            const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(bytes);
            int n = (int)(PyBytes_GET_SIZE(bytes) / 2);
            const char *first = h < n ? sym_opname(code[2 * h]) : NULL;
            const char *second = NULL;
            for (int k = h + 1; k < n && second == NULL; k++) {
                const char *nm = sym_opname(code[2 * k]);
                if (nm && strcmp(nm, "NOP") && strcmp(nm, "CACHE") && strcmp(nm, "EXTENDED_ARG"))
                    second = nm;
            }
            /* 3.12 inlines comprehensions (PEP 709): their body's handler puts the saved
             * iteration variables back and reraises (SWAP, POP_TOP, STORE_FAST..., RERAISE),
             * with no handled-exception state: resumable as a try block's */
            int comp_cleanup = 0;
            if (DH_PY312 && first != NULL && !strcmp(first, "SWAP")) {
                comp_cleanup = 1;
                for (int k = h; k < n; k++) {
                    const char *nm = sym_opname(code[2 * k]);
                    if (nm && !strcmp(nm, "RERAISE"))
                        break;
                    if (nm == NULL || (strcmp(nm, "SWAP") && strcmp(nm, "POP_TOP") && strcmp(nm, "STORE_FAST") &&
                                       strcmp(nm, "NOP") && strcmp(nm, "CACHE") && strcmp(nm, "EXTENDED_ARG"))) {
                        comp_cleanup = 0;
                        break;
                    }
                    if (k == n - 1)
                        comp_cleanup = 0;
                }
            }
            Py_DECREF(bytes); /* the names are static strings */
            if (hd > f->sp)
                why = "the handler's stack is deeper";
            else if (comp_cleanup)
                ;
            else if (first == NULL || strcmp(first, "PUSH_EXC_INFO"))
                why = "inside an except clause";
            else if (second == NULL)
                why = "inside a with block";
            else if (!strcmp(second, "WITH_EXCEPT_START") &&
                     (hd < 1 || (!sym_is_with_exit(&f->stack[hd - 1]) && !passed_exit(&f->stack[hd - 1])))) {
                why = "inside a with block on a context manager other than no_grad, inference_mode or "
                      "autocast: its __enter__ would run again";
                user_cm = 1;
            }
        }
        t->brk.with = NULL;
        if (why == NULL && h >= 0) {
            int wr = with_recipes(t, f, &why);
            if (wr < 0)
                return -1;
            user_cm = why != NULL;
        }
        if (user_cm && t->brk.kind != DH_BRK_WITH) {
            /* the frame is traced again, breaking at the outermost such block's BEFORE_WITH */
            int wpc = user_with_pc(t, f);
            if (wpc >= 0 && wpc != t->with_brk_pc) {
                t->with_retry_pc = wpc;
                snprintf(t->with_why, sizeof t->with_why, "%.199s", t->reason);
            }
        }
        if (t->tfm_top > 0 && why == NULL) /* the rest would run without the mode (sym_tfm.c) */
            why = "a TorchFunctionMode is entered";
        for (int i = 0; i < f->sp && why == NULL; i++)
            if (f->stack[i].kind == V_CONST && f->stack[i].obj && PyExceptionInstance_Check(f->stack[i].obj))
                why = "an exception being handled";
        if (why != NULL) {
            char old[sizeof t->reason];
            snprintf(old, sizeof old, "%s", t->reason);
            t->failed = 0;
            return sym_fail(t, "%s (%s: not resumable there)", old, why);
        }
        t->brk.exc_target = h;
        t->brk.exc_depth = h >= 0 ? hd : 0;
        t->brk.exc_lasti = h >= 0 ? hl : 0;
    }
    t->failed = 0;
    t->brk.nstack = f->sp;
    t->brk.stack = sym_alloc(t, f->sp);
    t->brk.locals = sym_alloc(t, f->nlocals);
    if (t->brk.stack == NULL || t->brk.locals == NULL)
        return -1;
    memcpy(t->brk.stack, f->stack, (size_t)f->sp * sizeof(var));
    memcpy(t->brk.locals, f->locals, (size_t)f->nlocals * sizeof(var));
    /* the call's callable and arguments are rebuilt too: a list passed to the eager call
     * and still held by a local must stay one object (or the call's update is lost) */
    int na = (t->brk.fn ? 1 : 0) + (t->brk.args ? t->brk.nargs : 0);
    int nall = f->sp + f->nlocals + na;
    var *all = sym_alloc(t, nall);
    if (all == NULL)
        return -1;
    memcpy(all, f->stack, (size_t)f->sp * sizeof(var));
    memcpy(all + f->sp, f->locals, (size_t)f->nlocals * sizeof(var));
    if (t->brk.fn)
        all[f->sp + f->nlocals] = *t->brk.fn;
    if (t->brk.args && t->brk.nargs > 0)
        memcpy(all + f->sp + f->nlocals + (t->brk.fn ? 1 : 0), t->brk.args, (size_t)t->brk.nargs * sizeof(var));
    /* lists, dicts, sets and made functions reached twice are built once (sym_output.c
     * sym_fill_out); an iterator the frame holds is rebuilt from its items: still one each */
    if (sym_dicts_shared(t, all, nall, all, nall, 0))
        return sym_fail(t, "a set or an iterator reached twice is live across a graph break");
    int mr = sym_made_fns_resumable(t, f, all, nall, 0);
    if (mr <= 0)
        return -1; /* failed (the reason set) or an error */
    t->brk.nlocals = f->nlocals - f->code->co_nfreevars; /* plain locals: free vars stay in the closure */
    t->brk.nlocals = dh_resume_base_nlocals(f->code, t->brk.nlocals); /* a resume's dead stack slots */
    return 1;
}

/* ---- aliasing: is a view sharing oid's storage still reachable? ------------------- */

static int live_in(trace *t, const var *v, int n, int oid, int depth) {
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if (x->kind == V_TENSOR && x->oid > 0 && x->oid != oid && sym_alias_same(t, x->oid, oid))
            return 1;
        if (depth < 8 && x->items != NULL &&
            (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC || x->kind == V_METHOD) &&
            live_in(t, x->items, x->kind == V_METHOD ? 1 : x->n, oid, depth + 1))
            return 1;
    }
    return 0;
}

int sym_alias_live(trace *t, int oid) {
    for (int i = 0; i < t->nframes; i++) {
        sframe *f = t->frames[i];
        if (live_in(t, f->stack, f->sp, oid, 0) || live_in(t, f->locals, f->nlocals, oid, 0) ||
            (f->closure && live_in(t, f->closure, f->nclosure, oid, 0)))
            return 1;
    }
    if (sym_gen_live(t, live_in, oid)) /* suspended generators (sym_gen.c) */
        return 1;
    /* inputs are alive in the caller; attribute writes keep their values */
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++)
        if (t->srcdone[s] && live_in(t, &t->srcvar[s], 1, oid, 0))
            return 1;
    for (int i = 0; i < t->nattrw; i++)
        if (live_in(t, t->attrw[i].val, 1, oid, 0))
            return 1;
    /* frames not registered (should not happen): stay conservative */
    return t->nframes == 0;
}

/* ---- the interpreter loop ---------------------------------------------------------- */

const char *sym_opname(int opcode) { return opcode >= 0 && opcode < 256 ? opnames[opcode] : NULL; }

/* The exception table's handler for instruction pc (code units): its target, with the
 * stack depth and lasti flag; -1 when none. */
int sym_exc_handler(PyCodeObject *co, int pc, int *depth, int *lasti) {
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(co->co_exceptiontable);
    const unsigned char *end = p + PyBytes_GET_SIZE(co->co_exceptiontable);
    while (p < end) {
        int v[4];
        for (int k = 0; k < 4; k++) {
            if (p >= end)
                return -1;
            int b = *p++;
            v[k] = b & 63;
            while (b & 64) {
                if (p >= end)
                    return -1;
                b = *p++;
                v[k] = (v[k] << 6) | (b & 63);
            }
        }
        if (pc >= v[0] && pc < v[0] + v[1]) {
            *depth = v[3] >> 1;
            *lasti = v[3] & 1;
            return v[2];
        }
    }
    return -1;
}

/* "file:line in fn; file:line in caller; ..." of the frames being interpreted, innermost
 * first, into t->where (the user's location of a failure or graph break). */
void sym_where(trace *t) {
    char *p = t->where, *end = t->where + sizeof t->where;
    *p = 0;
    for (int i = t->nframes - 1; i >= 0 && p < end - 1; i--) {
        const sframe *f = t->frames[i];
        const char *fn = PyUnicode_AsUTF8(f->code->co_filename);
        const char *name = PyUnicode_AsUTF8(f->code->co_qualname);
        if (fn == NULL || name == NULL) {
            (void)tc_clear_expected(PyExc_UnicodeError);
            continue;
        }
        int line = PyCode_Addr2Line(f->code, f->pc * 2);
        int n = snprintf(p, (size_t)(end - p), "%s%s:%d in %s", p == t->where ? "" : "; ", fn,
                         line, name);
        if (n < 0)
            break;
        p += n;
    }
}

static int run_body(trace *t, sframe *f, var *result, var **snap);

/* Lazy dict-value guards (variables.c): an instruction that only moves values (loads,
 * stores to the frame's locals, a container's item or an object's attribute pushed, an
 * iteration) reads none; any other reads what it consumes (the stack slots it popped or
 * changed, and everything they hold) and the dicts its handler wrapped. A break or a failure
 * reads everything, but the dynamic ints a break passes on (variables.c sym_lazy_use_break). */
/* d.get, d.__contains__: what the dict's keys answer, and the item looked up pushed as the
 * dict's own item var (counted when it is used) */
static int dict_key_method(PyObject *name) {
    return name != NULL && PyUnicode_Check(name) &&
           (!PyUnicode_CompareWithASCIIString(name, "get") ||
            !PyUnicode_CompareWithASCIIString(name, "__contains__"));
}

/* the stack depth of a dict operand of which the instruction reads no value (k in d,
 * len(d), d.get(k[, default]), d.__contains__(k): its lazy items are not counted by it), or 0 */
static int lazy_keys_only(const sframe *f, const sym_ins *in) {
    if (in->op == OP_CONTAINS_OP)
        return f->sp >= 2 && PEEK(1).kind == V_DICT ? 1 : 0;
    if (in->op != OP_CALL || f->kwnames != NULL)
        return 0;
    int n = in->oparg;
    if (f->sp < n + 2 || PEEK(n + 2).kind != V_NULL)
        return 0;
    const var *c = &PEEK(n + 1);
    if (c->kind == V_METHOD && c->items != NULL && c->items[0].kind == V_DICT && n >= 1 && n <= 2 &&
        dict_key_method(c->obj))
        return n + 1;
    if (c->kind == V_FUNC && n == 1 && PEEK(1).kind == V_DICT && c->obj != NULL && PyCFunction_Check(c->obj) &&
        PyCFunction_GET_SELF(c->obj) != NULL && PyModule_Check(PyCFunction_GET_SELF(c->obj)) &&
        !strcmp(((PyCFunctionObject *)c->obj)->m_ml->ml_name, "len") &&
        !strcmp(PyModule_GetName(PyCFunction_GET_SELF(c->obj)) ? PyModule_GetName(PyCFunction_GET_SELF(c->obj)) : "", "builtins"))
        return 1;
    (void)tc_clear_expected(PyExc_Exception);
    return 0;
}

static int lazy_move(const sframe *f, const sym_ins *in) {
    int op = in->op;
    switch (op) {
    case OP_NOP: case OP_RESUME: case OP_CACHE: case OP_PRECALL: case OP_MAKE_CELL:
    case OP_EXTENDED_ARG: case OP_PUSH_NULL: case OP_POP_TOP: case OP_COPY: case OP_SWAP:
    case OP_LOAD_CONST: case OP_LOAD_FAST: case OP_LOAD_FAST_CHECK: case OP_LOAD_DEREF:
    case OP_LOAD_CLOSURE: case OP_LOAD_FAST_AND_CLEAR: case OP_STORE_FAST: case OP_LOAD_GLOBAL:
    case OP_COPY_FREE_VARS: /* the closure's contents into the frame's locals */
    case OP_KW_NAMES: case OP_JUMP_FORWARD: case OP_JUMP_BACKWARD:
    case OP_JUMP_BACKWARD_NO_INTERRUPT: case OP_END_FOR:
        return 1;
    case OP_LOAD_ATTR: case OP_LOAD_METHOD:
        if (f->sp >= 1 && PEEK(1).kind == V_DICT) /* d.get: the dict moves into the method */
            return (op == OP_LOAD_METHOD || (DH_PY312 && (in->oparg & 1))) &&
                   dict_key_method(PyTuple_GET_ITEM(in->names, DH_PY312 && op == OP_LOAD_ATTR ? in->oparg >> 1 : in->oparg));
        return f->sp >= 1 && PEEK(1).kind == V_OBJ;
    case OP_GET_ITER:
        return f->sp >= 1 && (PEEK(1).kind == V_SEQ || PEEK(1).kind == V_DICT);
    case OP_FOR_ITER:
        return f->sp >= 1 && PEEK(1).kind == V_ITER;
    case OP_UNPACK_SEQUENCE:
        return f->sp >= 1 && PEEK(1).kind == V_SEQ;
    case OP_BINARY_SUBSCR: /* d[k], l[i]: the item pushed; the key itself is read */
        return f->sp >= 2 && PEEK(1).kind == V_CONST && (PEEK(2).kind == V_DICT || PEEK(2).kind == V_SEQ);
    case OP_STORE_SUBSCR: /* d[k] = v, l[i] = v: v moves in, the old item is not read; the key is */
        return f->sp >= 3 && PEEK(1).kind == V_CONST &&
               (PEEK(2).kind == V_DICT || (PEEK(2).kind == V_SEQ && PEEK(2).is_list && PEEK(2).obj == NULL));
    default:
        return 0;
    }
}

/* interprets f with f registered as live (aliasing checks scan its stack and locals) */
int sym_run_frame(trace *t, sframe *f, var *result) {
    if (t->nframes >= (int)(sizeof t->frames / sizeof t->frames[0]))
        return sym_fail(t, "inlining too deep");
    t->frames[t->nframes++] = f;
    var *snap = NULL;
    int inst = t->cur_inst; /* the caller's instruction, whose handler goes on after */
    int rc = run_body(t, f, result, &snap);
    t->cur_inst = inst;
    free(snap);
    t->nframes--;
    if (rc == 1 && f->top)
        ; /* a break: run_body counted what its state reads (sym_lazy_use_break) */
    else if (rc == -1 && !f->top && t->failed && !PyErr_Occurred())
        sym_lazy_use_break(t, SYM_LAZY_FAILED_INNER); /* the top frame may break at its call */
    else if (rc != 0 && rc != SYM_YIELD) /* a failure */
        sym_lazy_use_all(t);
    return rc;
}

/* The handler of each opcode (sym_interp.h: what a handler returns); NULL: unsupported. */
static const sym_handler handlers[OP_COUNT_] = {
    [OP_EXTENDED_ARG] = sym_op_extended_arg,
    [OP_NOP] = sym_op_nop,
    [OP_RESUME] = sym_op_nop,
    [OP_CACHE] = sym_op_nop,
    [OP_PRECALL] = sym_op_nop,
    [OP_MAKE_CELL] = sym_op_nop,
    [OP_COPY_FREE_VARS] = sym_op_copy_free_vars,
    [OP_PUSH_NULL] = sym_op_push_null,
    [OP_POP_TOP] = sym_op_pop_top,
    [OP_END_FOR] = sym_op_end_for,
    [OP_COPY] = sym_op_copy,
    [OP_SWAP] = sym_op_swap,
    [OP_LOAD_CONST] = sym_op_load_const,
    [OP_RETURN_CONST] = sym_op_return_const,
    [OP_RETURN_VALUE] = sym_op_return_value,
    [OP_RETURN_GENERATOR] = sym_op_return_generator,
    [OP_YIELD_VALUE] = sym_op_yield_value,
    [OP_LOAD_FAST] = sym_op_load_fast,
    [OP_LOAD_FAST_CHECK] = sym_op_load_fast,
    [OP_LOAD_DEREF] = sym_op_load_fast,
    [OP_LOAD_CLOSURE] = sym_op_load_fast,
    [OP_LOAD_FAST_AND_CLEAR] = sym_op_load_fast_and_clear,
    [OP_STORE_FAST] = sym_op_store_fast,
    [OP_STORE_DEREF] = sym_op_store_fast,
    [OP_DELETE_FAST] = sym_op_delete_fast,
    [OP_GET_YIELD_FROM_ITER] = sym_op_get_yield_from_iter,
    [OP_SEND] = sym_op_send,
    [OP_END_SEND] = sym_op_end_send,
    [OP_LOAD_GLOBAL] = sym_op_load_global,
    [OP_STORE_GLOBAL] = sym_op_store_global,
    [OP_LOAD_ATTR] = sym_op_load_attr,
    [OP_LOAD_METHOD] = sym_op_load_attr,
    [OP_KW_NAMES] = sym_op_kw_names,
    [OP_CALL] = sym_op_call,
    [OP_BINARY_OP] = sym_op_binary_op,
    [OP_COMPARE_OP] = sym_op_compare_op,
    [OP_IS_OP] = sym_op_is_op,
    [OP_CONTAINS_OP] = sym_op_contains_op,
    [OP_UNARY_NEGATIVE] = sym_op_unary_negative,
    [OP_UNARY_POSITIVE] = sym_op_unary_positive,
    [OP_UNARY_NOT] = sym_op_unary_not,
    [OP_BUILD_TUPLE] = sym_op_build_tuple,
    [OP_BUILD_LIST] = sym_op_build_tuple,
    [OP_LIST_EXTEND] = sym_op_list_extend,
    [OP_BUILD_MAP] = sym_op_build_map,
    [OP_BUILD_CONST_KEY_MAP] = sym_op_build_const_key_map,
    [OP_DICT_MERGE] = sym_op_dict_merge,
    [OP_DICT_UPDATE] = sym_op_dict_merge,
    [OP_MAP_ADD] = sym_op_map_add,
    [OP_LIST_APPEND] = sym_op_list_append,
    [OP_UNPACK_EX] = sym_op_unpack_ex,
    [OP_BUILD_SLICE] = sym_op_build_slice,
    [OP_FORMAT_VALUE] = sym_op_format_value,
    [OP_BUILD_STRING] = sym_op_build_string,
    [OP_CALL_FUNCTION_EX] = sym_op_call_function_ex,
    [OP_MAKE_FUNCTION] = sym_op_make_function,
    [OP_LOAD_BUILD_CLASS] = sym_op_load_build_class,
    [OP_STORE_ATTR] = sym_op_store_attr,
    [OP_LIST_TO_TUPLE] = sym_op_list_to_tuple,
    [OP_CALL_INTRINSIC_1] = sym_op_call_intrinsic_1,
    [OP_BEFORE_WITH] = sym_op_before_with,
    [OP_MATCH_SEQUENCE] = sym_op_match_sequence,
    [OP_MATCH_MAPPING] = sym_op_match_mapping,
    [OP_MATCH_KEYS] = sym_op_match_keys,
    [OP_MATCH_CLASS] = sym_op_match_class,
    [OP_GET_LEN] = sym_op_get_len,
    [OP_IMPORT_NAME] = sym_op_import_name,
    [OP_IMPORT_FROM] = sym_op_import_from,
    [OP_BUILD_SET] = sym_op_build_set,
    [OP_SET_ADD] = sym_op_set_add,
    [OP_SET_UPDATE] = sym_op_set_add,
    [OP_LOAD_SUPER_ATTR] = sym_op_load_super_attr,
    [OP_BINARY_SLICE] = sym_op_binary_slice,
    [OP_DELETE_SUBSCR] = sym_op_delete_subscr,
    [OP_DELETE_ATTR] = sym_op_delete_attr,
    [OP_STORE_SUBSCR] = sym_op_store_subscr,
    [OP_STORE_SLICE] = sym_op_store_subscr,
    [OP_UNARY_INVERT] = sym_op_unary_invert,
    [OP_BINARY_SUBSCR] = sym_op_binary_subscr,
    [OP_UNPACK_SEQUENCE] = sym_op_unpack_sequence,
    [OP_GET_ITER] = sym_op_get_iter,
    [OP_FOR_ITER] = sym_op_for_iter,
    [OP_JUMP_FORWARD] = sym_op_jump_forward,
    [OP_PUSH_EXC_INFO] = sym_op_push_exc_info,
    [OP_CHECK_EXC_MATCH] = sym_op_check_exc_match,
    [OP_POP_EXCEPT] = sym_op_pop_except,
    [OP_RERAISE] = sym_op_reraise,
    [OP_WITH_EXCEPT_START] = sym_op_with_except_start,
    [OP_JUMP_BACKWARD] = sym_op_jump_backward,
    [OP_JUMP_BACKWARD_NO_INTERRUPT] = sym_op_jump_backward,
    [OP_POP_JUMP_IF_FALSE] = sym_op_pop_jump_if_false,
    [OP_POP_JUMP_IF_TRUE] = sym_op_pop_jump_if_false,
    [OP_POP_JUMP_FORWARD_IF_FALSE] = sym_op_pop_jump_if_false,
    [OP_POP_JUMP_FORWARD_IF_TRUE] = sym_op_pop_jump_if_false,
    [OP_POP_JUMP_BACKWARD_IF_FALSE] = sym_op_pop_jump_if_false,
    [OP_POP_JUMP_BACKWARD_IF_TRUE] = sym_op_pop_jump_if_false,
    [OP_POP_JUMP_IF_NONE] = sym_op_pop_jump_if_none,
    [OP_POP_JUMP_IF_NOT_NONE] = sym_op_pop_jump_if_none,
    [OP_POP_JUMP_FORWARD_IF_NONE] = sym_op_pop_jump_if_none,
    [OP_POP_JUMP_FORWARD_IF_NOT_NONE] = sym_op_pop_jump_if_none,
    [OP_POP_JUMP_BACKWARD_IF_NONE] = sym_op_pop_jump_if_none,
    [OP_POP_JUMP_BACKWARD_IF_NOT_NONE] = sym_op_pop_jump_if_none,
    [OP_JUMP_IF_FALSE_OR_POP] = sym_op_jump_if_false_or_pop,
    [OP_JUMP_IF_TRUE_OR_POP] = sym_op_jump_if_false_or_pop,
    [OP_RAISE_VARARGS] = sym_op_raise_varargs,
    [OP_LOAD_ASSERTION_ERROR] = sym_op_load_assertion_error,
    [OP_DELETE_GLOBAL] = sym_op_delete_global,
};

static int run_body(trace *t, sframe *f, var *result, var **snap) {
    PyObject *bytes = PyCode_GetCode(f->code);
    if (bytes == NULL)
        return -1;
    /* keep the deoptimized bytes alive for the trace */
    if (sym_keep(t, bytes) == NULL)
        return -1;
    const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(bytes);
    int ninstr = (int)(PyBytes_GET_SIZE(bytes) / 2);
    sym_ins in;
    memset(&in, 0, sizeof in);
    in.consts = f->code->co_consts;
    in.names = f->code->co_names;
    in.result = result;
    int pc = f->resume_pc, ext = 0; /* 0, or after a generator's yield (sym_gen.c) */
    while (pc < ninstr) {
        if (++t->steps > dh_limit.max_trace_steps)
            return sym_fail(t, "trace too long: %ld instructions (loop unrolled too far? torchc.config.max_trace_steps)",
                            dh_limit.max_trace_steps);
        f->pc = pc;
        t->inst_n0 = ic_graph_num_values(t->g); /* train_inplace.c */
        if (f->top) {
            t->top_n0 = t->inst_n0;
            t->tfm_top = t->ntfm; /* modes entered before this instruction (sym_tfm.c) */
        }
        int opcode = code[2 * pc];
        in.pc = pc;
        in.opcode = opcode;
        in.oparg = code[2 * pc + 1] | ext;
        in.next = pc + 1 + ncaches[opcode];
        in.op = optab[opcode];
        in.ext = 0;
        sym_handler h = handlers[in.op];
        if (h == NULL)
            return sym_fail(t, "unsupported bytecode %s", opnames[opcode] ? opnames[opcode] : "?");
        int snapn = -1, move = lazy_move(f, &in), made = t->nlazymade, keyonly = -1;
        t->cur_inst = ++t->inst_serial;
        if (t->nlazy > 0) {
            if (!move) {
                if (*snap == NULL && (*snap = malloc(STACK_MAX * sizeof **snap)) == NULL) {
                    PyErr_NoMemory();
                    return -1;
                }
                memcpy(*snap, f->stack, (size_t)f->sp * sizeof **snap);
                snapn = f->sp;
                int k = lazy_keys_only(f, &in);
                keyonly = k > 0 ? f->sp - k : -1;
            } else if (in.op == OP_BINARY_SUBSCR || in.op == OP_STORE_SUBSCR) {
                sym_lazy_use(t, &PEEK(1));
            }
        }
        int rc = h(t, f, &in);
        if (!move && t->nlazymade != made && t->nlazy > 0) /* a dict its handler wrapped, read in passing */
            sym_lazy_use_made_by(t, t->cur_inst);
        if ((rc == 1 && f->top) || /* a break: what the instruction popped is in its state, passed on */
            (rc == -1 && !f->top && t->failed && !PyErr_Occurred())) /* or an inlined frame's failure,
             * which may become the top frame's break at its call: its dynamic ints wait
             * (dyn_defer), as every frame's up to the top's do */
            t->dyn_inst = t->cur_inst; /* (dynamic ints as graph values: sym_lazy_use_break) */
        if (snapn >= 0 && t->nlazy > 0)
            for (int i = 0; i < snapn; i++)
                if (i != keyonly && (i >= f->sp || memcmp(&(*snap)[i], &f->stack[i], sizeof **snap) != 0))
                    sym_lazy_use(t, &(*snap)[i]);
        if (rc == 1 && f->top) /* a graph break: its live dynamic ints stay dynamic */
            sym_lazy_use_break(t, SYM_LAZY_BREAK);
        else if (rc == -1 && !f->top && t->failed && !PyErr_Occurred()) /* the top frame may break */
            sym_lazy_use_break(t, SYM_LAZY_FAILED_INNER);
        else if (rc != SYM_NEXT && rc != 0 && rc != SYM_YIELD)
            sym_lazy_use_all(t);
        if (rc == -1 && t->pending_exc != NULL) { /* an except clause of f catches it (sym_exc.c) */
            int u = sym_exc_unwind(t, f, code, ninstr, pc, &in.next);
            if (u < 0)
                return -1;
            if (u > 0)
                rc = SYM_NEXT, in.ext = 0;
            else if (f->top && (u = sym_exc_top_raise(t, f, &in)) != 0) /* graph, then raise */
                rc = u;
        }
        if (t->dyn_defer && (rc == SYM_NEXT || rc == 0 || rc == SYM_YIELD))
            sym_lazy_use_all(t); /* an inlined frame's failure was caught: the trace goes on */
        if (rc != SYM_NEXT)
            return rc;
        ext = in.ext;
        pc = in.next;
    }
    return sym_fail(t, "fell off the end of the bytecode");
}

/* dyn: 0 static; 1 verification trace at fake hints (no compile; *sig receives the
 * signature, NULL when the trace can't be dynamic); 2 dynamic trace at the real hints,
 * accepted only if its signature equals expect (else *reject = 1, no entry). */
static dh_entry *trace_once(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                            PyObject *builtins, PyObject *func, const dh_config *cfg,
                            const uint32_t *dynmask, int dyn, const char *expect, char **sig,
                            int *reject);

dh_entry *dh_trace_frame(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                         PyObject *builtins, PyObject *func, const dh_config *cfg,
                         const uint32_t *dynmask) {
    /* the dims asked for; if the compiler can't take them, the outermost dims alone (the
     * batch); else static */
    uint32_t outer[DH_DYN_LOCALS], outer2[DH_DYN_LOCALS];
    const uint32_t *masks[3] = {dynmask, NULL, NULL};
    if (dynmask != NULL) {
        int differs = 0, any = 0;
        for (int i = 0; i < DH_DYN_LOCALS; i++) {
            outer[i] = dynmask[i] & 1u;
            outer2[i] = outer[i] ? outer[i] | DH_DYN_ND2 : 0; /* bit 31: tensors of >= 2 dims only */
            differs |= outer[i] != dynmask[i];
            any |= outer[i] != 0;
        }
        int k = 1;
        if (differs && any)
            masks[k++] = outer;
        if (any)
            masks[k++] = outer2;
    }
    for (int m = 0; m < 3 && masks[m] != NULL; m++) {
        char *sig = NULL;
        int reject = 0;
        trace_once(code, localsplus, globals, builtins, func, cfg, masks[m], 1, NULL, &sig, &reject);
        if (tc_clear_expected(PyExc_Exception) < 0) { /* MemoryError, Ctrl-C: the hook raises it */
            free(sig);
            return NULL;
        }
        if (sig == NULL)
            continue;
        dh_entry *e = trace_once(code, localsplus, globals, builtins, func, cfg, masks[m], 2,
                                 sig, NULL, &reject);
        free(sig);
        if (e != NULL || (!reject && PyErr_Occurred()))
            return e;
        /* rejected, or no entry and no error (the dynamic trace failed where the one at
         * fake hints did not): the next mask, then a static trace */
        if (tc_clear_expected(PyExc_Exception) < 0)
            return NULL;
    }
    return trace_once(code, localsplus, globals, builtins, func, cfg, NULL, 0, NULL, NULL, NULL);
}

static dh_entry *trace_at(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                          PyObject *builtins, PyObject *func, const dh_config *cfg,
                          const uint32_t *dynmask, int dyn, const char *expect, char **sig,
                          int *reject, int with_pc, const char *with_why, int *retry, char *retry_why);

/* A break inside a with block on a Python context manager the trace entered (its __enter__
 * traced, its exit symbolic) can't resume there: the frame is traced again, breaking at that
 * block's BEFORE_WITH (DH_BRK_WITH): __enter__ runs eagerly and the resume holds the real
 * exit, so the body resumes and __exit__ runs once, from the resume's own bytecode, with
 * eager's arguments. Nested blocks: once per level, outermost first. */
static dh_entry *trace_once(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                            PyObject *builtins, PyObject *func, const dh_config *cfg,
                            const uint32_t *dynmask, int dyn, const char *expect, char **sig,
                            int *reject) {
    char why[200] = "";
    int with_pc = -1, tried[4], ntried = 0;
    for (;;) {
        int retry = -1, again;
        char next_why[200] = "";
        dh_entry *e = trace_at(code, localsplus, globals, builtins, func, cfg, dynmask, dyn, expect, sig,
                               reject, with_pc, why, &retry, next_why);
        again = retry >= 0 && (e == NULL || e->fallback) && !PyErr_Occurred() && !(reject && *reject) &&
                ntried < 4;
        for (int k = 0; again && k < ntried; k++)
            again = tried[k] != retry; /* each place once: no cycle */
        if (!again)
            return e;
        if (e != NULL)
            dh_entry_free(e); /* this trace's fallback: the next one replaces it */
        if (sig != NULL) {
            free(*sig);
            *sig = NULL;
        }
        with_pc = tried[ntried++] = retry;
        snprintf(why, sizeof why, "%s", next_why);
    }
}

static dh_entry *trace_at(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                          PyObject *builtins, PyObject *func, const dh_config *cfg,
                          const uint32_t *dynmask, int dyn, const char *expect, char **sig,
                          int *reject, int with_pc, const char *with_why, int *retry, char *retry_why) {
    trace *t = calloc(1, sizeof *t);
    sframe *f = calloc(1, sizeof *f);
    outbuf ob = {0};
    int chk_base = -1; /* first index-check output (t->chk), -1: none */
    dh_entry *e = NULL;
    dh_entry_brk brk = {{NULL, NULL}, NULL};
    mutlist muts = {0};
    ic_val *outvals = NULL; /* graph outputs (dh_limit.max_outputs at most) */
    ic_compiled *compiled = NULL;
    PyObject *backend_fn = NULL; /* another backend's code for the graph (backend.c) */
    PyObject *train = NULL; /* training: the autograd node's state */
    if (t == NULL || f == NULL) {
        free(t);
        free(f);
        PyErr_NoMemory();
        return NULL;
    }
    t->code = code;
    t->localsplus = localsplus;
    t->globals = globals;
    t->builtins = builtins;
    t->func = func;
    t->cfg = cfg;
    t->keep = PyList_New(0);
    t->g = ic_graph_new();
    if (t->g)
        ic_graph_set_default_dtype(t->g, (ic_dtype)tc_default_dtype());
    t->device_type = -1;
    t->cur_globals = globals;
    t->dynmask = dynmask;
    t->dyn_fake = dyn == 1;
    t->with_brk_pc = with_pc;
    t->with_retry_pc = -1;
    snprintf(t->with_why, sizeof t->with_why, "%s", with_why);
    if (t->keep == NULL || t->g == NULL) {
        if (t->g == NULL)
            PyErr_NoMemory();
        goto error;
    }
    /* grad mode, default dtype and autocast are part of every specialization */
    {
        dh_guardkind kinds[DH_NSTATE];
        int vals[DH_NSTATE], ns = dh_global_state(kinds, vals);
        for (int k = 0; k < ns; k++) {
            dh_guard *g = sym_new_guard(t, kinds[k], -1);
            if (g == NULL)
                goto error;
            g->value = vals[k];
        }
        dh_tl_autocast = vals[2];
        PyObject *dev = NULL;
        if (dh_tfm_state(&dev) > 0 && (t->devctx = sym_keep(t, dev)) == NULL)
            goto error;
    }
    f->code = code;
    f->top = 1;
    t->top_frame = f;
    f->globals = globals;
    f->func = func;
    f->func_src = -1;
    f->gen = (code->co_flags & CO_GENERATOR) != 0;
    f->nlocals = (int)code->co_nlocalsplus;
    f->locals = sym_alloc(t, f->nlocals);
    if (f->locals == NULL)
        goto error;
    {
        var result;
        memset(&result, 0, sizeof result);
        int rr = sym_run_frame(t, f, &result);
        chk_base = -1;
        if (rr < 0 && t->failed && t->with_retry_pc >= 0 && !PyErr_Occurred()) {
            *retry = t->with_retry_pc; /* trace_once may trace again, breaking there (this */
            snprintf(retry_why, 200, "%s", t->with_why); /* trace's fallback entry, if not) */
        }
        if (rr == 0 && sym_ctxvar_pending(t, NULL))
            rr = sym_fail(t, "a context variable set in the trace is not reset at its end");
        if (rr >= 0 && sym_gen_unclosed(t))
            rr = sym_fail(t, "a generator left suspended inside try/with (eager's close() runs its cleanup)");
        if (rr < 0 && t->failed && t->asked_compiling && !PyErr_Occurred()) {
            /* "... (eager will raise)" after the trace answered is_compiling() True: eager,
             * answering False, may take another path and not raise (a value left None for the
             * graph to build): say so (the frame runs eagerly either way, as under Dynamo) */
            char *at = strstr(t->reason, " (eager will raise)");
            if (at != NULL && strstr(t->reason, "is_compiling") == NULL) {
                char head[sizeof t->reason], where[sizeof t->where];
                snprintf(head, sizeof head, "%.*s", (int)(at - t->reason), t->reason);
                snprintf(where, sizeof where, "%s", t->where);
                t->failed = 0;
                sym_fail(t, "%.200s, after the trace answered torch.compiler.is_compiling() True (False in eager, "
                            "which may not raise here): the frame runs eagerly", head);
                snprintf(t->where, sizeof t->where, "%s", where); /* the raise's location */
            }
        }
        if (rr == 0 && t->asked_compiling && ic_graph_num_ops(t->g) == 0 && !dh_tl_entry_frame)
            /* the frame was entered from eager code (a caller that is traced inlines it): with
             * no graph op to compile, the trace's only effect would be handing that code
             * is_compiling()'s True (a helper returning it; a mask left None for the graph
             * to build) where eager's answer is False. The compiled function's own frame
             * (torchc.compile(fn)'s fn) answers True, as torch.compile's does. */
            rr = sym_fail(t, "reads torch.compiler.is_compiling() and has no tensor operation to compile: "
                             "runs eagerly, where it answers False as its eager caller expects");
        if (rr >= 0) {
            int nout = 0;
            outvals = malloc(sizeof *outvals * (size_t)dh_limit.max_outputs);
            if (outvals == NULL) {
                PyErr_NoMemory();
                goto error;
            }
            if (sym_out_reserve(t, &ob, 1) == 0) {
                if (rr == 1)
                    sym_fill_break(t, &ob, outvals, &nout, &brk);
                else
                    sym_fill_out(t, &ob, 0, &result, outvals, &nout);
                if (!t->failed && !PyErr_Occurred() && t->nattrw > 0) {
                    /* root becomes (result, written values...) */
                    int first = sym_out_reserve(t, &ob, 1 + t->nattrw);
                    if (first >= 0) {
                        ob.o[first] = ob.o[0];
                        memset(&ob.o[0], 0, sizeof ob.o[0]);
                        sym_out_root_moved(&ob, first);
                        ob.o[0].kind = DH_O_TUPLE;
                        ob.o[0].index = first;
                        ob.o[0].count = 1 + t->nattrw;
                        for (int i = 0; i < t->nattrw && !t->failed; i++)
                            sym_fill_out(t, &ob, first + 1 + i, t->attrw[i].val, outvals, &nout);
                    }
                }
                if (!t->failed && !PyErr_Occurred())
                    sym_record_mutations(t, outvals, &nout, &muts);
                if (!t->failed && !PyErr_Occurred())
                    sym_add_distinct_guard(t, &muts);
                if (!t->failed && !PyErr_Occurred())
                    sym_fx_containers_finish(t); /* sideeffects.c */
                if (!t->failed && !PyErr_Occurred())
                    sym_add_sameobj_guard(t);
            }
            if (dyn) {
                /* dynamic only for a whole graph with symbols, on the CPU */
                int ok = !t->failed && !PyErr_Occurred() && rr == 0 && t->nsym > 0 && nout > 0 &&
                         t->device_type != TC_DEV_CUDA && !sym_trace_trains(t);
                char *mine = ok ? sym_dyn_signature(t) : NULL;
                if (dyn == 1 && !ok && ic_config_int(IC_CFG_debug_dyn))
                    fprintf(stderr, "torchc dyn: not dynamic: %s %s\n",
                            rr == 1 ? "graph break:" : t->failed ? "" : "no symbols/outputs or cuda", t->reason);
                if (dyn == 1) {
                    *sig = mine;
                    goto error;
                }
                ok = mine != NULL && expect != NULL && strcmp(mine, expect) == 0;
                if (!ok && ic_config_int(IC_CFG_debug_dyn))
                    fprintf(stderr, "torchc dyn: rejected (%s)\n--- real\n%s\n--- fake\n%s\n",
                            t->failed ? t->reason : "signature differs", mine ? mine : "-",
                            expect ? expect : "-");
                free(mine);
                if (!ok) {
                    *reject = 1;
                    goto error;
                }
            }
            if (!t->failed && !PyErr_Occurred())
                sym_fold_finish(t); /* fold.c: constants on another device never computed with */
            chk_base = nout; /* index checks: extra outputs after the others */
            if (!t->failed && !PyErr_Occurred() && t->nchk > 0) { /* (a graph of no other
                 * output too: a dead indexing still raises in eager) */
                /* training: the check runs before the autograd node is attached (an
                 * out-of-range index reruns eagerly, which raises); the backward's scatter-add
                 * reads the same checked indices (saved, version-checked by autograd) */
                if (t->cfg->backend != NULL)
                    sym_fail(t, "indexing with a computed index tensor (bounds unknown) not supported yet "
                                "with another backend");
                for (int k = 0; k < t->nchk && !t->failed; k++) {
                    if (nout >= dh_limit.max_outputs)
                        sym_fail(t, "more than %d outputs (torchc.config.max_outputs)", dh_limit.max_outputs);
                    else if (ic_output(t->g, t->chk[k]) < 0)
                        sym_check_graph(t);
                    else
                        nout++;
                }
            }
            if (!t->failed && !PyErr_Occurred() && nout > 0) {
                ic_options opt = {0};
                opt.device = t->device_type == TC_DEV_CUDA ? IC_CUDA : IC_CPU;
                opt.device_index = t->device_index > 0 ? t->device_index : 0;
                opt.opt_level = 3;
                opt.autotune = t->cfg->autotune;
                ic_err err = {0};
                if (t->cfg->backend != NULL) { /* another backend (backend.c): autograd is eager's;
                                                * symbolic shapes go over as Dynamo's (_fx_export.py) */
                    backend_fn = dh_backend_export(t->g, t->cfg->backend, t->device_type, opt.device_index);
                    if (backend_fn == NULL && PyErr_Occurred())
                        goto error;
                }
                if (backend_fn == NULL && sym_train_build(t, &muts, &ob, &opt, &train) < 0 && PyErr_Occurred())
                    goto error;
                if (!t->failed && backend_fn == NULL) {
                    if (train == NULL)
                        sym_inplace_request(t, &muts, &ob); /* train_inplace_store.c */
                    compiled = dh_compile(&t->g, &opt, &err); /* eval_frame.c: Ctrl-C heard during it */
                    if (compiled == NULL && t->g == NULL)
                        goto error; /* interrupted: the graph went with the compile */
                }
                if (compiled == NULL && dyn && ic_config_int(IC_CFG_debug_dyn))
                    fprintf(stderr, "torchc dyn: compile rejected: %s\n", err.msg);
                if (compiled == NULL && backend_fn == NULL && dyn) {
                    *reject = 1; /* the compiler can't do these symbols: specialize */
                    goto error;
                }
                if (compiled == NULL && backend_fn == NULL && !t->failed)
                    sym_fail(t, "compile failed: %s", err.msg);
                if (compiled != NULL && opt.device == IC_CPU)
                    ic_ptx_probe(t->g); /* developers' PTX checks (torchc.config.ptx_probe) */
            } else if (!t->failed && !PyErr_Occurred() && nout == 0 && ic_graph_num_ops(t->g) > 0) {
                /* every op was dead (result is an input or a constant): nothing to compile */
            }
        }
    }
    if (PyErr_Occurred())
        goto error; /* internal error: reported by the hook */
    e = sym_finish_entry(t, &ob, compiled);
    compiled = NULL;
    if (e != NULL && !e->fallback && muts.n > 0) {
        e->mut_src = malloc(sizeof(int) * (size_t)muts.n);
        e->mut_from = malloc(sizeof(int) * (size_t)muts.n);
        if (e->mut_src == NULL || e->mut_from == NULL) {
            dh_entry_free(e);
            e = NULL;
            PyErr_NoMemory();
            goto error;
        }
        memcpy(e->mut_src, muts.src, sizeof(int) * (size_t)muts.n);
        memcpy(e->mut_from, muts.from, sizeof(int) * (size_t)muts.n);
        e->nmut = muts.n;
        if (sym_inplace_setup(t, e, &muts) < 0) { /* train_inplace_store.c */
            dh_entry_free(e);
            e = NULL;
            goto error;
        }
    }
    if (e != NULL && !e->fallback && t->nchk > 0 && chk_base >= 0 && e->compiled != NULL) {
        e->chk_out = malloc(sizeof(int) * (size_t)t->nchk);
        if (e->chk_out == NULL) {
            dh_entry_free(e);
            e = NULL;
            PyErr_NoMemory();
            goto error;
        }
        for (int k = 0; k < t->nchk; k++)
            e->chk_out[k] = chk_base + k;
        e->nchk = t->nchk;
    }
    if (e != NULL && !e->fallback && t->nidx > 0) {
        e->idx_src = malloc(sizeof(int) * (size_t)t->nidx);
        e->idx_bound = malloc(sizeof(int64_t) * (size_t)t->nidx);
        e->idx_gather = malloc((size_t)t->nidx);
        if (e->idx_src == NULL || e->idx_bound == NULL || e->idx_gather == NULL) {
            dh_entry_free(e);
            e = NULL;
            PyErr_NoMemory();
            goto error;
        }
        e->nidx = t->nidx;
        memcpy(e->idx_src, t->idx_src, sizeof(int) * (size_t)t->nidx);
        memcpy(e->idx_bound, t->idx_bound, sizeof(int64_t) * (size_t)t->nidx);
        memcpy(e->idx_gather, t->idx_gather, (size_t)t->nidx);
    }
    if (e != NULL && !e->fallback && t->nattrw > 0) {
        e->attrw_src = malloc(sizeof(int) * (size_t)t->nattrw);
        e->attrw_name = calloc((size_t)t->nattrw, sizeof(PyObject *));
        if (e->attrw_src == NULL || e->attrw_name == NULL) {
            dh_entry_free(e);
            e = NULL;
            PyErr_NoMemory();
            goto error;
        }
        for (int i = 0; i < t->nattrw; i++) {
            e->attrw_src[i] = t->attrw[i].src;
            e->attrw_name[i] = Py_NewRef(t->attrw[i].name);
        }
        e->nattrw = t->nattrw;
    }
    if (e != NULL && !e->fallback && train != NULL) {
        e->train = train;
        train = NULL;
    }
    if (e != NULL) {
        e->backend = Py_XNewRef(t->cfg->backend);
        e->cfg_key = dh_cfg_key(t->cfg);
        if (!e->fallback && backend_fn != NULL) {
            e->backend_nout = ic_graph_num_outputs(t->g);
            e->backend_fn = backend_fn;
            backend_fn = NULL;
        }
    }
    if (e != NULL && !e->fallback && dyn == 2)
        e->nsyms = t->nsym;
    if (e != NULL) {
        e->device_type = t->device_type < 0 ? TC_DEV_CPU : t->device_type;
        e->device_index = t->device_index > 0 ? t->device_index : 0;
    }
    if (e != NULL && !e->fallback && t->brk.kind != DH_BRK_NONE) {
        e->brk = t->brk.kind;
        e->brk_nargs = t->brk.nargs;
        e->brk_nstack = t->brk.nstack;
        e->brk_nlocals = t->brk.nlocals;
        e->brk_jump_when = t->brk.jump_when;
        e->brk_kwnames = Py_XNewRef(t->brk.kwnames);
        e->brk_binop = t->brk.binop;
        e->brk_extern = sym_is_extern_break(&t->brk);
        e->resume[0] = brk.resume[0];
        e->resume[1] = brk.resume[1];
        e->exc_resume = brk.exc_resume;
        e->brk_exc_depth = t->brk.exc_depth;
        e->brk_with = Py_XNewRef(t->brk.with);
        brk.resume[0] = brk.resume[1] = brk.exc_resume = NULL;
        e->brk_reason = strdup(t->reason);
        if (e->where == NULL && t->where[0])
            e->where = strdup(t->where);
    }
    if (e != NULL)
        sym_mark_unread(t, e); /* dict items never read: not looked up by the guards */
error:
    Py_XDECREF(train);
    Py_XDECREF(backend_fn);
    Py_XDECREF(brk.resume[0]);
    Py_XDECREF(brk.resume[1]);
    Py_XDECREF(brk.exc_resume);
    if (compiled)
        ic_compiled_free(compiled);
    free(outvals);
    free(muts.src);
    free(muts.from);
    free(muts.mode);
    free(f);
    sym_trace_free(t, &ob);
    return e;
}
