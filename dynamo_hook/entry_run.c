/* entry_run.c — running a compiled entry on a cache hit (dh_entry_run): the graph's outputs
 * allocated and the compiled code run (or its Python backend), in-place updates and
 * attribute writes replayed, the frame's result built from the entry's output spec
 * (build_output: containers, views of inputs, one object reached twice), and a graph break's
 * call and resume function run (run_break). Split from eval_frame.c (the PEP 523 hook that
 * looks entries up and captures new ones); the host-time counters of TORCHC_HOST_STATS stay
 * there (dh_host_now, dh_host_add).
 */
#include "dh_internal.h"
#include "train.h"
#include "scan.h"

#include <stdlib.h>
#include <string.h>

static PyObject *build_node(const dh_entry *e, int node, PyObject *const *outs, PyObject *const *values,
                            const int64_t *symvals, PyObject **memo);

/* memo (NULL, or e->nouts slots): the object each node built, for DH_O_SAME (one object
 * reached twice: a view, a list, a dict, a made function) */
static PyObject *build_output(const dh_entry *e, int node, PyObject *const *outs,
                              PyObject *const *values, const int64_t *symvals, PyObject **memo) {
    PyObject *r = build_node(e, node, outs, values, symvals, memo);
    if (r != NULL && memo != NULL && memo[node] == NULL)
        memo[node] = Py_NewRef(r);
    return r;
}

static PyObject *build_node(const dh_entry *e, int node, PyObject *const *outs, PyObject *const *values,
                            const int64_t *symvals, PyObject **memo) {
    const dh_outspec *o = &e->outs[node];
    switch (o->kind) {
    case DH_O_SYM: { /* coef * prod s_k^e_k at this call's symbol values */
        long long r = PyLong_AsLongLong(PyTuple_GET_ITEM(o->obj, 0));
        for (int k = 0; k < IC_MAX_SYMS && k < PyTuple_GET_SIZE(o->obj) - 1; k++)
            for (long ex = PyLong_AsLong(PyTuple_GET_ITEM(o->obj, 1 + k)); ex > 0; ex--)
                r *= symvals[k];
        return PyLong_FromLongLong(r);
    }
    case DH_O_GRAPH:
        return Py_NewRef(outs[o->index]);
    case DH_O_SOURCE:
        return Py_NewRef(values[o->index]);
    case DH_O_CONST:
        return Py_NewRef(o->obj);
    case DH_O_ITER:
    case DH_O_ATTR:
    case DH_O_BOUND: {
        PyObject *child = build_output(e, o->index, outs, values, symvals, memo);
        if (child == NULL)
            return NULL;
        PyObject *r = o->kind == DH_O_ITER   ? PyObject_GetIter(child)
                      : o->kind == DH_O_ATTR ? PyObject_GetAttr(child, o->obj)
                                             : PyMethod_New(o->obj, child);
        Py_DECREF(child);
        if (r != NULL && o->kind == DH_O_ITER && o->count > 0) { /* a list's iterator at its index */
            PyObject *st = PyObject_CallMethod(r, "__setstate__", "n", (Py_ssize_t)o->count);
            if (st == NULL)
                Py_CLEAR(r);
            Py_XDECREF(st);
        }
        return r;
    }
    case DH_O_WRAP: {
        PyObject *child = build_output(e, o->index, outs, values, symvals, memo);
        if (child == NULL)
            return NULL;
        PyObject *r = PyObject_CallOneArg(o->obj, child);
        Py_DECREF(child);
        return r;
    }
    case DH_O_KWCALL: {
        PyObject *kw = build_output(e, o->index, outs, values, symvals, memo);
        if (kw == NULL)
            return NULL;
        PyObject *empty = PyTuple_New(0);
        int busy = dh_tl_busy;
        dh_tl_busy = 1; /* the class's __init__/__post_init__ run as they are, not captured */
        PyObject *r = empty ? PyObject_Call(o->obj, empty, kw) : NULL;
        dh_tl_busy = busy;
        Py_XDECREF(empty);
        Py_DECREF(kw);
        return r;
    }
    case DH_O_CALLM: {
        PyObject *child = build_output(e, o->index, outs, values, symvals, memo);
        if (child == NULL)
            return NULL;
        PyObject *m = PyObject_GetAttr(child, PyTuple_GET_ITEM(o->obj, 0));
        Py_DECREF(child);
        if (m == NULL)
            return NULL;
        PyObject *r = PyObject_Call(m, PyTuple_GET_ITEM(o->obj, 1), NULL);
        Py_DECREF(m);
        return r;
    }
    case DH_O_SAME:
        if (memo != NULL && o->index >= 0 && o->index < e->nouts && memo[o->index] != NULL)
            return Py_NewRef(memo[o->index]);
        break;
    case DH_O_DICT: {
        PyObject *d = PyDict_New();
        if (d == NULL)
            return NULL;
        for (int i = 0; i < o->count; i++) {
            PyObject *item = build_output(e, o->index + i, outs, values, symvals, memo);
            if (item == NULL || PyDict_SetItem(d, PyTuple_GET_ITEM(o->obj, i), item) < 0) {
                Py_XDECREF(item);
                Py_DECREF(d);
                return NULL;
            }
            Py_DECREF(item);
        }
        return d;
    }
    case DH_O_TUPLE:
    case DH_O_LIST: {
        PyObject *seq = o->kind == DH_O_TUPLE ? PyTuple_New(o->count) : PyList_New(o->count);
        if (seq == NULL)
            return NULL;
        for (int i = 0; i < o->count; i++) {
            PyObject *item = build_output(e, o->index + i, outs, values, symvals, memo);
            if (item == NULL) {
                Py_DECREF(seq);
                return NULL;
            }
            if (o->kind == DH_O_TUPLE)
                PyTuple_SET_ITEM(seq, i, item);
            else
                PyList_SET_ITEM(seq, i, item);
        }
        return seq;
    }
    }
    PyErr_SetString(PyExc_SystemError, "torchc: bad output spec");
    return NULL;
}

static PyObject *binop(int op, PyObject *a, PyObject *b) {
    switch (op) {
    case 0: return PyNumber_Add(a, b);
    case 1: return PyNumber_And(a, b);
    case 2: return PyNumber_FloorDivide(a, b);
    case 3: return PyNumber_Lshift(a, b);
    case 4: return PyNumber_MatrixMultiply(a, b);
    case 5: return PyNumber_Multiply(a, b);
    case 6: return PyNumber_Remainder(a, b);
    case 7: return PyNumber_Or(a, b);
    case 8: return PyNumber_Power(a, b, Py_None);
    case 9: return PyNumber_Rshift(a, b);
    case 10: return PyNumber_Subtract(a, b);
    case 11: return PyNumber_TrueDivide(a, b);
    case 12: return PyNumber_Xor(a, b);
    case 13: return PyNumber_InPlaceAdd(a, b);
    case 14: return PyNumber_InPlaceAnd(a, b);
    case 15: return PyNumber_InPlaceFloorDivide(a, b);
    case 16: return PyNumber_InPlaceLshift(a, b);
    case 17: return PyNumber_InPlaceMatrixMultiply(a, b);
    case 18: return PyNumber_InPlaceMultiply(a, b);
    case 19: return PyNumber_InPlaceRemainder(a, b);
    case 20: return PyNumber_InPlaceOr(a, b);
    case 21: return PyNumber_InPlacePower(a, b, Py_None);
    case 22: return PyNumber_InPlaceRshift(a, b);
    case 23: return PyNumber_InPlaceSubtract(a, b);
    case 24: return PyNumber_InPlaceTrueDivide(a, b);
    case 25: return PyNumber_InPlaceXor(a, b);
    }
    PyErr_SetString(PyExc_SystemError, "torchc: bad binary op");
    return NULL;
}

/* Runs the instruction the trace stopped at, then the resume function.
 * state = (fn/cond, args..., stack..., locals...). */
/* The resume function to call: with the frame's closure when the code has free variables
 * (one function object per call; the resume code is shared). New reference. */
static PyObject *resume_fn(PyObject *proto, PyObject *func) {
    PyObject *code = PyFunction_GET_CODE(proto);
    if (((PyCodeObject *)code)->co_nfreevars == 0)
        return Py_NewRef(proto);
    PyObject *cl = func && PyFunction_Check(func) ? PyFunction_GET_CLOSURE(func) : NULL;
    if (cl == NULL) {
        PyErr_SetString(PyExc_SystemError, "torchc: resume function without a closure");
        return NULL;
    }
    PyObject *fn = PyFunction_New(code, PyFunction_GET_GLOBALS(proto));
    if (fn != NULL && PyFunction_SetClosure(fn, cl) < 0)
        Py_CLEAR(fn);
    return fn;
}

/* a resume function continues the frame whose compiled run counted its recursion level
 * (recursion.c): it is not a level of its own, as the rest of eager's frame is not */
static PyObject *call_resume(PyObject *rf, PyObject *const *argv, size_t n) {
    if (rf == NULL)
        return NULL;
    PyThreadState *ts = PyThreadState_GET();
    dh_rec_same_level(ts, 1);
    PyObject *res = PyObject_Vectorcall(rf, argv, n, NULL);
    dh_rec_same_level(ts, -1);
    return res;
}

/* The with blocks around the break's instruction (e->brk_with): a fresh context each, made
 * and entered outermost first, as eager's frame has them entered while the instruction
 * runs; exits[k] its bound __exit__ (new references). -1: an error (those entered are left
 * again). */
static int with_enter(PyObject *with, PyObject **exits) {
    Py_ssize_t n = PyTuple_GET_SIZE(with), k = 0;
    for (; k < n; k++) {
        PyObject *rec = PyTuple_GET_ITEM(with, k);
        PyObject *ctx = PyObject_CallObject(PyTuple_GET_ITEM(rec, 1), PyTuple_GET_ITEM(rec, 2));
        PyObject *ex = ctx ? PyObject_GetAttrString(ctx, "__exit__") : NULL;
        PyObject *r = ex ? PyObject_CallMethod(ctx, "__enter__", NULL) : NULL;
        Py_XDECREF(ctx);
        if (r == NULL) {
            Py_XDECREF(ex);
            break;
        }
        Py_DECREF(r);
        exits[k] = ex;
    }
    if (k == n)
        return 0;
    while (k-- > 0) {
        PyObject *r = PyObject_CallFunctionObjArgs(exits[k], Py_None, Py_None, Py_None, NULL);
        Py_XDECREF(r);
        Py_CLEAR(exits[k]);
    }
    return -1;
}

/* leaves them again, innermost first: __exit__(None, None, None) after the instruction ran
 * (the resume enters equal ones), keeping an error already set */
static int with_exit(PyObject *with, PyObject **exits) {
    int rc = 0;
    for (Py_ssize_t k = PyTuple_GET_SIZE(with); k-- > 0;) {
        if (exits[k] == NULL)
            continue;
        PyObject *r = PyObject_CallFunctionObjArgs(exits[k], Py_None, Py_None, Py_None, NULL);
        if (r == NULL)
            rc = -1;
        Py_XDECREF(r);
        Py_CLEAR(exits[k]);
    }
    return rc;
}

/* type(o).name bound to o, as the interpreter looks a special method up; NULL with no
 * exception when the type has none */
static PyObject *lookup_special(PyObject *o, const char *name) {
    PyObject *nm = PyUnicode_InternFromString(name);
    PyObject *d = nm ? _PyType_Lookup(Py_TYPE(o), nm) : NULL;
    Py_XDECREF(nm);
    if (d == NULL)
        return NULL;
    descrgetfunc get = Py_TYPE(d)->tp_descr_get;
    return get != NULL ? get(d, o, (PyObject *)Py_TYPE(o)) : Py_NewRef(d);
}

/* BEFORE_WITH on ctx, as the interpreter runs it: *exit the bound __exit__ (new reference),
 * returns __enter__()'s result; NULL: raised (*exit left NULL) */
static PyObject *before_with(PyObject *ctx, PyObject **exit) {
    PyObject *en = lookup_special(ctx, "__enter__");
    if (en == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "'%.200s' object does not support the context manager protocol",
                         Py_TYPE(ctx)->tp_name);
        return NULL;
    }
    PyObject *ex = lookup_special(ctx, "__exit__");
    if (ex == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "'%.200s' object does not support the context manager protocol (missed __exit__ method)",
                         Py_TYPE(ctx)->tp_name);
        Py_DECREF(en);
        return NULL;
    }
    PyObject *r = PyObject_CallNoArgs(en);
    Py_DECREF(en);
    if (r == NULL) {
        Py_DECREF(ex);
        return NULL;
    }
    *exit = ex;
    return r;
}

static PyObject *run_break(const dh_entry *e, PyObject *state, PyObject *func) {
    PyObject **items = &PyTuple_GET_ITEM(state, 0);
    int nargs = e->brk_nargs, nstack = e->brk_nstack, nlocals = e->brk_nlocals;
    PyObject *const *stack = items + 1 + nargs, *const *locals = stack + nstack;
    PyObject *small[32], **argv = small, *res = NULL, *fn;
    int ran_resume = 0; /* what the resume raises went through the frame's own handlers */
    int n = nlocals + nstack + 1 + (e->brk == DH_BRK_WITH || e->brk == DH_BRK_CALL_WITH); /* + pushed */
    PyObject *exits[16] = {0}; /* the with blocks' real exits while the instruction runs */
    int exc_ran = 0;           /* the handlers saw the instruction's exception */
    PyObject *with = e->brk_with && PyTuple_GET_SIZE(e->brk_with) <= 16 ? e->brk_with : NULL;
    if (n > 32) {
        argv = malloc((size_t)n * sizeof *argv);
        if (argv == NULL)
            return PyErr_NoMemory();
    }
    if (with != NULL && with_enter(with, exits) < 0) {
        if (argv != small)
            free(argv);
        return NULL;
    }
    for (int i = 0; i < nlocals; i++)
        argv[i] = locals[i];
    for (int i = 0; i < nstack; i++)
        argv[nlocals + i] = stack[i];
    if (e->brk == DH_BRK_CALL || e->brk == DH_BRK_BINOP || e->brk == DH_BRK_WITH || e->brk == DH_BRK_CALL_WITH) {
        /* the result pushed for the resume; a with statement's BEFORE_WITH pushes the exit
         * and __enter__'s result (on the call's result: CALL_WITH) */
        PyObject *r = e->brk == DH_BRK_CALL || e->brk == DH_BRK_CALL_WITH
                          /* the call runs in a frame like the original one (resume.c) */
                          ? dh_break_call(e->resume[0], locals, nlocals, items[0], items + 1, nargs,
                                          e->brk_kwnames)
                      : e->brk == DH_BRK_WITH ? Py_NewRef(items[0])
                                              : binop(e->brk_binop, items[0], items[1]);
        PyObject *ex = NULL;
        if (r != NULL && (e->brk == DH_BRK_WITH || e->brk == DH_BRK_CALL_WITH)) {
            PyObject *cm = r;
            r = before_with(cm, &ex);
            Py_DECREF(cm);
        }
        if (r == NULL)
            goto done;
        if (with != NULL && with_exit(with, exits) < 0) {
            if (ex != NULL) { /* the block never starts: its exit runs as it would have */
                PyObject *x = PyObject_CallFunctionObjArgs(ex, Py_None, Py_None, Py_None, NULL);
                Py_XDECREF(x);
                Py_DECREF(ex);
            }
            Py_DECREF(r);
            goto done;
        }
        if (ex != NULL)
            argv[nlocals + nstack] = ex;
        argv[n - 1] = r;
        fn = resume_fn(e->resume[0], func);
        ran_resume = 1;
        res = call_resume(fn, argv, (size_t)n);
        Py_XDECREF(fn);
        Py_XDECREF(ex);
        Py_DECREF(r);
    } else { /* a store, or a jump on a value's truth: nothing pushed */
        int jump = 0;
        if (e->brk == DH_BRK_STORE) {
            if (PyObject_SetItem(items[0], items[1], items[2]) < 0)
                goto done;
        } else if (e->brk == DH_BRK_SETATTR) { /* items[0].<brk_kwnames> = items[1] */
            if (PyObject_SetAttr(items[0], e->brk_kwnames, items[1]) < 0)
                goto done;
        } else {
            int truth = PyObject_IsTrue(items[0]);
            if (truth < 0)
                goto done;
            jump = truth == e->brk_jump_when;
        }
        if (with != NULL && with_exit(with, exits) < 0)
            goto done;
        fn = resume_fn(e->resume[jump], func);
        ran_resume = 1;
        res = call_resume(fn, argv, (size_t)(n - 1));
        Py_XDECREF(fn);
    }
done:
    if (res == NULL && e->exc_resume != NULL && !ran_resume && PyErr_Occurred()) {
        /* the instruction raised inside a try block: its handler runs (resume.c
         * dh_make_exc_resume) with the stack at the handler's depth and the exception */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyErr_NormalizeException(&et, &ev, &tb);
        if (ev != NULL && tb != NULL)
            (void)PyException_SetTraceback(ev, tb);
        Py_XDECREF(et);
        Py_XDECREF(tb);
        if (ev != NULL) {
            int d = e->brk_exc_depth;
            for (int i = 0; i < d; i++)
                argv[nlocals + i] = stack[i];
            /* the with blocks' exits: the real contexts, still entered (their handlers'
             * WITH_EXCEPT_START leaves them with the exception, as eager's) */
            for (Py_ssize_t k = 0; with != NULL && k < PyTuple_GET_SIZE(with); k++) {
                int at = (int)PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(with, k), 0));
                if (at >= 0 && at < d && exits[k] != NULL)
                    argv[nlocals + at] = exits[k];
            }
            argv[nlocals + d] = ev;
            fn = resume_fn(e->exc_resume, func);
            exc_ran = 1;
            res = call_resume(fn, argv, (size_t)(nlocals + d + 1));
            Py_XDECREF(fn);
            Py_DECREF(ev);
        }
    }
    if (with != NULL && !ran_resume && !exc_ran) {
        /* an exception the handlers did not see: the contexts still entered are left as
         * their blocks would leave them */
        if (res == NULL && PyErr_Occurred()) {
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyErr_NormalizeException(&et, &ev, &tb);
            for (Py_ssize_t k = PyTuple_GET_SIZE(with); k-- > 0;) {
                if (exits[k] == NULL)
                    continue;
                PyObject *r = PyObject_CallFunctionObjArgs(exits[k], et ? et : Py_None, ev ? ev : Py_None,
                                                           tb ? tb : Py_None, NULL);
                if (r == NULL) {
                    Py_XDECREF(et), Py_XDECREF(ev), Py_XDECREF(tb);
                    PyErr_Fetch(&et, &ev, &tb);
                }
                Py_XDECREF(r);
            }
            PyErr_Restore(et, ev, tb);
        }
    }
    for (Py_ssize_t k = 0; with != NULL && k < PyTuple_GET_SIZE(with); k++)
        Py_CLEAR(exits[k]);
    if (argv != small)
        free(argv);
    return res;
}

/* torchc.scan's probe (csrc/scan.h): the body's entry, pinned for the record, with the
 * tensors of its graph inputs and its outputs; what a C loop over the graph cannot replay
 * (graph breaks, mutations, attribute writes, index checks, CUDA) is named. */
static void unpin_entry(void *e) { dh_entry_unpin(e); }

static int scan_probe(const dh_entry *e, PyObject *const *values, PyObject *const *outs, int nout,
                      PyObject *func, const int64_t *symvals) {
    char brk[400];
    if (e->brk != DH_BRK_NONE) /* what broke it (an op without a capture or backward rule) */
        snprintf(brk, sizeof brk, "the body has a graph break%s%s", e->brk_reason ? ": " : "",
                 e->brk_reason ? e->brk_reason : "");
    const char *why = e->brk != DH_BRK_NONE ? brk
                      : e->nmut      ? "the body mutates its inputs"
                      : e->nattrw    ? "the body writes module attributes"
                      : e->nidx      ? "the body's indices are checked at each call"
                      : e->device_type != TC_DEV_CPU ? "the C loop runs CPU graphs only"
                      : e->compiled == NULL ? "the body has no graph outputs"
                                            : NULL;
    PyObject *small[16], **in = small;
    if (e->ninputs > 16 && (in = calloc((size_t)e->ninputs, sizeof *in)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < e->ninputs; i++)
        in[i] = values[e->input_src[i]];
    ((dh_entry *)e)->pins++;
    int r = tc_scan_probe_record(func, (void *)e, unpin_entry, e->compiled, e->ninputs, in, nout, outs,
                                 e->train, e->nsyms, symvals, why, e->graph_text);
    if (in != small)
        free(in);
    return r;
}

_Thread_local int dh_tl_rerun_eager;

PyObject *dh_entry_run(const dh_entry *e, PyObject *const *values, void *const *data_ptrs,
                       PyObject *func, const int64_t *symvals) {
    unsigned long long t0 = dh_host_now();
    int nout = e->compiled ? ic_compiled_num_outputs(e->compiled) : e->backend_fn ? e->backend_nout : 0;
    PyObject *small_outs[16];
    void *small_ptrs[16 + 16];
    PyObject **outs = small_outs;
    void **ptrs = small_ptrs; /* inputs then outputs */
    PyObject *res = NULL;
    if (nout > 16 || e->ninputs > 16) {
        outs = calloc((size_t)nout + 1, sizeof *outs);
        ptrs = calloc((size_t)e->ninputs + nout + 1, sizeof *ptrs);
        if (outs == NULL || ptrs == NULL) { /* (nothing to release in them yet) */
            free(outs);
            free(ptrs);
            return PyErr_NoMemory();
        }
    }
    for (int i = 0; i < nout; i++)
        outs[i] = NULL;
    for (int i = 0; i < e->ninputs; i++)
        ptrs[i] = data_ptrs[e->input_src[i]];
    /* Python runs before values[] is read for the last time (a backend's compiled graph, a
     * record class built for the output): the values take references of their own (guards.c) */
    int runs_py = e->backend_fn != NULL;
    for (int i = 0; i < e->nouts && !runs_py; i++)
        runs_py = e->outs[i].kind == DH_O_KWCALL;
    if (runs_py)
        dh_guard_values_keep(e, values);
    if (e->backend_fn != NULL && dh_backend_run(e, values, outs, nout) < 0) /* another backend */
        goto done;
    for (int i = 0; i < nout && e->backend_fn == NULL; i++) {
        ic_meta md;
        const ic_meta *m = ic_compiled_output_meta(e->compiled, i);
        if (e->nsyms > 0) {
            if (ic_compiled_output_meta_at(e->compiled, i, symvals, &md) != 0) {
                PyErr_SetString(PyExc_RuntimeError, "torchc: output shape of a dynamic graph");
                goto done;
            }
            m = &md;
        }
        if (e->out_into_src != NULL && e->out_into_src[i] >= 0) { /* stored into the input it
                                                                   * updates (train_inplace_store.c) */
            outs[i] = Py_NewRef(values[e->out_into_src[i]]);
            ptrs[e->ninputs + i] = data_ptrs[e->out_into_src[i]];
            continue;
        }
        outs[i] = tc_empty_strided(m->ndim, m->sizes, m->strides, m->dtype, e->device_type, e->device_index);
        if (outs[i] == NULL)
            goto done;
        ptrs[e->ninputs + i] = tc_data_ptr(outs[i]);
    }
    unsigned long long t1 = dh_host_now();
    dh_host_add(t1 - t0, 0, 0);
    if (nout > 0 && e->backend_fn == NULL) {
        ic_err err = {0};
        int rc;
        if (e->device_type == TC_DEV_CUDA) {
            void *stream = NULL;
            if (tc_cuda_current_stream(e->device_index, &stream) < 0)
                goto done;
            rc = ic_run_on(e->compiled, ptrs, ptrs + e->ninputs, stream, &err);
        } else {
            Py_BEGIN_ALLOW_THREADS
            if (e->nsyms > 0)
                rc = ic_run_dyn(e->compiled, ptrs, ptrs + e->ninputs, symvals, &err);
            else
                rc = ic_run(e->compiled, ptrs, ptrs + e->ninputs, &err);
            Py_END_ALLOW_THREADS
        }
        if (rc != 0) {
            if (PyErr_Occurred()) /* a custom op's KeyboardInterrupt or MemoryError: as eager */
                goto done;
            if (e->device_type != TC_DEV_CUDA && strncmp(err.msg, "ATen ", 5) == 0) {
                /* an ATen extern raised (gather/scatter with an index out of range: data-
                 * dependent): nothing applied yet (the outputs are fresh, inputs are updated
                 * after the run); the frame reruns eagerly and raises eager's own error */
                dh_tl_rerun_eager = 1;
                goto done;
            }
            PyErr_Format(PyExc_RuntimeError, "torchc: compiled kernel failed: %s", err.msg);
            goto done;
        }
        for (int k = 0; k < e->nchk && e->device_type != TC_DEV_CUDA; k++)
            if (*(const int64_t *)ptrs[e->ninputs + e->chk_out[k]] != 0) {
                dh_tl_rerun_eager = 1; /* an index out of range: nothing applied yet; eager raises */
                goto done;
            }
    }
    unsigned long long t2 = dh_host_now();
    for (int i = 0; i < e->nmut; i++) {
        int from = e->mut_from[i];
        PyObject *srcobj = from >= 0 ? outs[from] : values[-1 - from];
        if (dh_inplace_finish(e, i, values[e->mut_src[i]], srcobj) < 0) /* copy-back or version */
            goto done;
    }

    if (e->train != NULL) { /* training: the outputs get the compiled backward's grad_fn */
        PyObject *small_in[16], **fin = small_in;
        if (e->ninputs > 16 && (fin = calloc((size_t)e->ninputs, sizeof *fin)) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        /* the sources the frame updated in place (their forward values are gone) */
        unsigned char small_mut[64] = {0}, *mut = small_mut;
        if (e->nsources > 64 && (mut = calloc((size_t)e->nsources, 1)) == NULL) {
            if (fin != small_in)
                free(fin);
            PyErr_NoMemory();
            goto done;
        }
        for (int k = 0; k < e->nmut; k++)
            if (e->mut_src[k] >= 0 && e->mut_src[k] < e->nsources)
                mut[e->mut_src[k]] = 1;
        for (int j = 0; e->out_into_src != NULL && j < nout; j++)
            if (e->out_into_src[j] >= 0 && e->out_into_src[j] < e->nsources)
                mut[e->out_into_src[j]] = 1;
        for (int i = 0; i < e->ninputs; i++)
            fin[i] = values[e->input_src[i]];
        /* the tensors updated in place that the node marks dirty, at their outputs' places */
        PyObject *small_dirty[16] = {NULL}, **dirty = NULL;
        int ndirty = 0, arc = -1;
        for (int k = 0; e->mut_mode != NULL && k < e->nmut; k++)
            ndirty += e->mut_mode[k] == DH_MUT_NODE;
        if (ndirty > 0 && (dirty = nout <= 16 ? small_dirty : calloc((size_t)nout, sizeof *dirty)) == NULL) {
            PyErr_NoMemory();
            goto attach_done;
        }
        for (int k = 0; ndirty > 0 && k < e->nmut; k++)
            if (e->mut_mode[k] == DH_MUT_NODE && e->mut_from[k] >= 0 && e->mut_from[k] < nout)
                dirty[e->mut_from[k]] = values[e->mut_src[k]];
        int busy = dh_tl_busy;
        dh_tl_busy = 1; /* the autograd.Function's Python runs as it is, not captured */
        arc = tc_train_attach(e->train, outs, nout, fin, e->graph_text, mut, e->input_src, dirty);
        dh_tl_busy = busy;
    attach_done:
        if (dirty != NULL && dirty != small_dirty)
            free(dirty);
        if (fin != small_in)
            free(fin);
        if (mut != small_mut)
            free(mut);
        if (arc < 0)
            goto done;
    }
    if (tc_scan_tl_probe != NULL && scan_probe(e, values, outs, nout, func, symvals) < 0)
        goto done;
    {
        PyObject *small_memo[16] = {NULL}, **memo = NULL;
        for (int i = 0; i < e->nouts && memo == NULL; i++)
            if (e->outs[i].kind == DH_O_SAME) {
                memo = e->nouts <= 16 ? small_memo : calloc((size_t)e->nouts, sizeof *memo);
                if (memo == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
            }
        res = build_output(e, 0, outs, values, symvals, memo);
        if (memo != NULL) {
            for (int i = 0; i < e->nouts; i++)
                Py_XDECREF(memo[i]);
            if (memo != small_memo)
                free(memo);
        }
    }
    if (res != NULL && e->nattrw > 0) {
        /* replay module attribute writes, then unwrap (result, values...) */
        PyObject *root = res;
        res = NULL;
        /* the objects written, held: a write drops the old value (its finalizer runs) and may
         * drop the object a later write goes to (c = self.child; self.child = None; c.v = y),
         * which values[] only borrows from self's dict */
        PyObject *tgt = PyTuple_New(e->nattrw);
        for (int i = 0; tgt != NULL && i < e->nattrw; i++)
            PyTuple_SET_ITEM(tgt, i, Py_NewRef(values[e->attrw_src[i]]));
        for (int i = 0; tgt != NULL && i < e->nattrw; i++)
            if ((PyUnicode_Check(e->attrw_name[i])
                     ? dh_replay_attr(PyTuple_GET_ITEM(tgt, i), e->attrw_name[i],
                                      PyTuple_GET_ITEM(root, 1 + i))
                     : dh_replay_container(PyTuple_GET_ITEM(tgt, i), e->attrw_name[i],
                                           PyTuple_GET_ITEM(root, 1 + i))) < 0)
                Py_CLEAR(tgt);
        if (tgt == NULL) {
            Py_DECREF(root);
            goto done;
        }
        Py_DECREF(tgt);
        res = Py_NewRef(PyTuple_GET_ITEM(root, 0));
        Py_DECREF(root);
    }
    dh_host_add(0, t2 - t1, dh_host_now() - t2);
    if (res != NULL && e->brk != DH_BRK_NONE) {
        PyObject *state = res;
        res = run_break(e, state, func);
        Py_DECREF(state);
    }
done:
    for (int i = 0; i < nout; i++)
        Py_XDECREF(outs[i]);
    if (outs != small_outs)
        free(outs);
    if (ptrs != small_ptrs)
        free(ptrs);
    return res;
}
