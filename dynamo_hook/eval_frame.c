/* eval_frame.c — the PEP 523 hook: decide per frame whether to run a compiled entry,
 * capture a new one, or let CPython evaluate the frame as usual. Running an entry (the
 * compiled code, the result, a graph break's call) is entry_run.c.
 *
 * The hook is installed only while some thread is inside dh_call (3.12 stops inlining
 * Python-to-Python calls while any hook is set) and acts only on threads inside dh_call.
 *
 * Frame ownership when we return without evaluating the frame:
 *   3.11: _PyEval_Vector clears and pops the frame after the eval function returns.
 *   3.12: the evaluator pops its own frame, so we clear and pop it here
 *         (mirrors ceval.c clear_thread_frame; those helpers are not exported).
 */
#include "dh_internal.h"
#include "train.h"
#include "scan.h"

#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Thread_local int dh_tl_busy;
_Thread_local int dh_tl_entry_frame;
_Thread_local double dh_tl_ctimes[DH_CT_COUNT];
_Thread_local int dh_tl_cache_hits;
_Thread_local PyObject *dh_tl_dynints;

void dh_note_compile(const ic_err *err) {
    dh_tl_ctimes[DH_CT_LOOKUP] += err->t_lookup;
    dh_tl_ctimes[DH_CT_PASSES] += err->t_passes;
    dh_tl_ctimes[DH_CT_CODEGEN] += err->t_codegen;
    dh_tl_ctimes[DH_CT_LOAD] += err->t_load;
    dh_tl_cache_hits += err->mem_hit;
}
_Thread_local int dh_tl_cg_capture;
static _Thread_local const dh_config *tl_cfg;
static _Thread_local PyObject *tl_explain; /* list, or NULL */
/* the compiled call has not reached a frame of user code yet (dh_call sets it): that frame,
 * if skipped for a reason of its own (it reads its own frame, a generator), is recorded as a
 * fallback with the reason, as explain must name every fallback */
static _Thread_local int tl_entry;
static _PyFrameEvalFunction prev_eval;
static _Thread_local unsigned long long dh_tl_t0; /* TORCHC_HOST_STATS: the hook's entry */
static int active_calls;
int dh_default_recompile_limit = 8;
PyObject *dh_limit_source; /* torch._dynamo.config until torchc.config sets the limit (strong) */
PyObject *dh_log_hook;
PyObject *dh_log_wants;             /* torchc._logging: called with each non-hit record (strong) */
_Thread_local int dh_tl_stance;    /* DH_STANCE_*: torch.compiler.set_stance, read per call */
static _Thread_local const char *tl_recompile; /* the guard that failed, for the next record */
static _Thread_local int tl_fresh; /* a capture decided now (not a cached entry): logged */

static struct {
    unsigned long long frames, hits, compiles, fallbacks, limit_fallbacks;
    /* TORCHC_HOST_STATS=1: host time of cache hits by phase, summed (ns): guards (the hook's
     * entry to a matching entry), outputs (allocation), run (ic_run / the launches), rest
     * (mutations, the output structure) */
    unsigned long long t_guard, t_alloc, t_run, t_rest, timed;
} stats;
static int host_stats = -1; /* -1: TORCHC_HOST_STATS not read yet */

static inline unsigned long long now_ns(void) {
    if (host_stats <= 0)
        return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* TORCHC_HOST_STATS: the time now (ns), 0 when off; the phases of a cache hit's run added
 * up (entry_run.c) */
unsigned long long dh_host_now(void) {
    return now_ns();
}

void dh_host_add(unsigned long long alloc, unsigned long long run, unsigned long long rest) {
    if (host_stats <= 0)
        return;
    stats.t_alloc += alloc;
    stats.t_run += run;
    stats.t_rest += rest;
}

/* guard value slots a hooked frame takes at least (frame_slots.c; more when its entries
 * have more sources) */
#define DH_MAX_SOURCES 48

static PyObject *frame_func(_PyInterpreterFrame *f) {
#if DH_PY312
    return f->f_funcobj;
#else
    return (PyObject *)f->f_func;
#endif
}

PyObject *dh_frame_function(void *frame) { return frame_func((_PyInterpreterFrame *)frame); }

/* the frame as the interpreter runs it, with recursion counted as eager counts it and capped
 * by the C stack's room (recursion.c) */
static PyObject *eval_default(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag) {
    int delta = dh_rec_enter_eval(ts);
    PyObject *r = prev_eval != NULL && prev_eval != _PyEval_EvalFrameDefault ? prev_eval(ts, f, throwflag)
                                                                            : _PyEval_EvalFrameDefault(ts, f, throwflag);
    dh_rec_leave(ts, delta);
    return r;
}

#if DH_PY312
/* ceval.c clear_thread_frame + _PyFrame_ClearExceptCode + _PyThreadState_PopFrame, for a
 * frame that never started and has no frame object (checked by the caller). */
static void clear_and_pop(PyThreadState *ts, _PyInterpreterFrame *f) {
    for (int i = 0; i < f->stacktop; i++)
        Py_XDECREF(f->localsplus[i]);
    Py_XDECREF(f->f_locals);
    Py_DECREF(f->f_funcobj);
    Py_DECREF(f->f_code);
    PyObject **base = (PyObject **)f;
    if (base == &ts->datastack_chunk->data[0]) {
        _PyStackChunk *chunk = ts->datastack_chunk;
        _PyStackChunk *previous = chunk->previous;
        ts->datastack_top = &previous->data[previous->top];
        ts->datastack_chunk = previous;
        PyObjectArenaAllocator a;
        PyObject_GetArenaAllocator(&a);
        a.free(a.ctx, chunk, chunk->size);
        ts->datastack_limit = (PyObject **)(((char *)previous) + previous->size);
    } else {
        ts->datastack_top = base;
    }
}
#define FINISH(ts, f, result) (clear_and_pop((ts), (f)), (result))
#else
#define FINISH(ts, f, result) (result)
#endif

static int frame_not_started(_PyInterpreterFrame *f) {
    return f->prev_instr == _PyCode_CODE(f->f_code) - 1;
}

/* whether the log hook reads the text of artifact (dh_log_wants; 1 when it can't say), so a
 * cache miss formats no recompile reason and a capture no guard list that nobody reads */
static int log_wants(const char *artifact) {
    if (dh_log_hook == NULL)
        return 0;
    if (dh_log_wants == NULL)
        return 1;
    int busy = dh_tl_busy; /* the logging code runs eagerly: the hook passes its frames through */
    dh_tl_busy = 1;
    PyObject *fn = Py_NewRef(dh_log_wants);
    PyObject *r = PyObject_CallFunction(fn, "s", artifact);
    Py_DECREF(fn);
    dh_tl_busy = busy;
    int yes = r == NULL ? -1 : PyObject_IsTrue(r);
    Py_XDECREF(r);
    if (yes < 0) {
        (void)tc_clear_expected(PyExc_Exception); /* (Ctrl-C stays set, as in eager) */
        yes = 1;
    }
    return yes;
}

void dh_explain_record(PyCodeObject *code, const dh_entry *e, const char *event) {
    int hook = dh_log_hook != NULL && tl_fresh;
    if (tl_explain == NULL && !hook)
        return;
    PyObject *d = NULL, *v = NULL;
    d = PyDict_New();
    if (d == NULL)
        goto error;
#define SET(key, expr)                                    \
    do {                                                  \
        v = (expr);                                       \
        if (v == NULL || PyDict_SetItemString(d, key, v)) \
            goto error;                                   \
        Py_CLEAR(v);                                      \
    } while (0)
    SET("event", PyUnicode_FromString(event));
    SET("name", Py_NewRef(code->co_name));
    SET("filename", Py_NewRef(code->co_filename));
    SET("firstlineno", PyLong_FromLong(code->co_firstlineno));
    SET("code", Py_NewRef(code));
    SET("recompile_reason", tl_recompile ? PyUnicode_FromString(tl_recompile) : Py_NewRef(Py_None));
    if (e != NULL) {
        SET("fallback", PyBool_FromLong(e->fallback));
        /* the cache entry, so explain counts a graph run twice in one call once (as Dynamo,
         * which compiles it once); a fallback() record's entry is a temporary */
        SET("entry", strcmp(event, "fallback") != 0 ? PyLong_FromVoidPtr((void *)e) : Py_NewRef(Py_None));
        SET("reason", e->reason ? PyUnicode_FromString(e->reason) : Py_NewRef(Py_None));
        SET("graph", e->graph_text ? PyUnicode_FromString(e->graph_text) : Py_NewRef(Py_None));
        SET("op_count", PyLong_FromLong(e->op_count));
        SET("guards", tl_explain != NULL || log_wants("guards") ? dh_guards_describe(e) : Py_NewRef(Py_None));
        SET("compile_ms", PyFloat_FromDouble(e->compile_ms));
        SET("break_reason", e->brk_reason && !e->brk_extern ? PyUnicode_FromString(e->brk_reason)
                                                          : Py_NewRef(Py_None));
        SET("extern_call", e->brk_extern ? PyUnicode_FromString(e->brk_reason) : Py_NewRef(Py_None));
        { /* training: the backward graph (csrc/train.c) */
            long long sb = 0;
            int bops = 0, nsv = 0, bcomp = 0;
            char *bt = e->train ? tc_train_describe(e->train, &sb, &bops, &nsv, &bcomp) : NULL;
            (void)bcomp; /* compiled on the first backward, after this record */
            SET("backward_graph", bt ? PyUnicode_FromString(bt) : Py_NewRef(Py_None));
            free(bt);
            SET("backward_op_count", PyLong_FromLong(bops));
            SET("saved_bytes", PyLong_FromLongLong(sb));
            SET("saved_count", PyLong_FromLong(nsv));
        }
        {
            double cap = e->compile_ms;
            for (int i = 0; i < DH_CT_COUNT; i++)
                cap -= e->ctimes[i];
            SET("compile_times", Py_BuildValue("{s:d,s:d,s:d,s:d,s:d,s:d}", "capture", cap > 0 ? cap / 1e3 : 0.0,
                                               "cache_lookup", e->ctimes[DH_CT_LOOKUP] / 1e3, "graph_passes",
                                               e->ctimes[DH_CT_PASSES] / 1e3, "codegen", e->ctimes[DH_CT_CODEGEN] / 1e3,
                                               "load", e->ctimes[DH_CT_LOAD] / 1e3, "fx_export",
                                               e->ctimes[DH_CT_EXPORT] / 1e3));
            SET("cache_hits", PyLong_FromLong(e->cache_hits));
            SET("backend_graph", Py_NewRef(e->backend_fn ? e->backend_fn : Py_None));
        }
        { /* updates of inputs: stored by the kernels into the tensor, or copied back after
           * them (train_inplace_store.c) */
            int ninp = 0;
            for (int i = 0; e->mut_inplace != NULL && i < e->nmut; i++)
                ninp += e->mut_inplace[i];
            SET("inplace_updates", PyLong_FromLong(ninp));
            SET("copied_updates", PyLong_FromLong(e->nmut - ninp));
        }
        /* the workspace one run allocates (intermediates, extern outputs, scratch) */
        SET("planned_bytes", PyLong_FromLongLong(e->compiled ? (long long)ic_compiled_workspace_bytes(e->compiled) : 0));
        char *kd = e->compiled ? ic_compiled_describe(e->compiled) : NULL;
        SET("kernels", kd ? PyUnicode_FromString(kd) : Py_NewRef(Py_None));
        free(kd);
        SET("where", e->where ? PyUnicode_FromString(e->where) : Py_NewRef(Py_None));
        SET("hint", e->hint ? PyUnicode_FromString(e->hint) : Py_NewRef(Py_None));
    }
#undef SET
    if (tl_explain != NULL && PyList_Append(tl_explain, d))
        goto error;
    if (hook) { /* the logging code runs eagerly: the hook passes its frames through */
        int busy = dh_tl_busy;
        dh_tl_busy = 1;
        PyObject *fn = Py_NewRef(dh_log_hook); /* the hook may unset itself (set_log_hook(None)) */
        v = PyObject_CallOneArg(fn, d);
        Py_DECREF(fn);
        dh_tl_busy = busy;
        if (v == NULL)
            goto error;
        Py_CLEAR(v);
    }
    Py_DECREF(d);
    return;
error:
    Py_XDECREF(v);
    Py_XDECREF(d);
    (void)tc_clear_expected(PyExc_Exception); /* explain is best effort; never disturbs the program */
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* s with each "L[i]" (a local by index, as guards print it) replaced by 'name' (malloc'd). */
static char *local_names(const char *s, PyCodeObject *code) {
    size_t cap = strlen(s) + 1, n = 0;
    char *out = malloc(cap);
    while (out != NULL && *s) {
        const char *name = NULL;
        char *end = NULL;
        if (s[0] == 'L' && s[1] == '[') {
            long i = strtol(s + 2, &end, 10);
            if (end != s + 2 && *end == ']' && i >= 0 && i < PyTuple_GET_SIZE(code->co_localsplusnames))
                name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(code->co_localsplusnames, i));
        }
        char friendly[96]; /* a resume function's own locals (resume.c), said plainly */
        if (name && strncmp(name, "__torchc_stack", 14) == 0) {
            snprintf(friendly, sizeof friendly, "stack value %s at the graph break", name + 14);
            name = friendly;
        } else if (name && strncmp(name, "__torchc_arg", 12) == 0) {
            snprintf(friendly, sizeof friendly, "argument %s of the call at the graph break", name + 12);
            name = friendly;
        } else if (name && strncmp(name, "__torchc_", 9) == 0) {
            snprintf(friendly, sizeof friendly, "a value at the graph break");
            name = friendly;
        }
        size_t add = name ? strlen(name) + 2 : 1;
        if (n + add + 1 > cap) {
            char *grown = realloc(out, cap = (n + add + 1) * 2);
            if (grown == NULL) {
                free(out);
                return NULL;
            }
            out = grown;
        }
        if (name) {
            n += (size_t)sprintf(out + n, "'%s'", name);
            s = end + 1;
        } else {
            out[n++] = *s++;
        }
    }
    if (out != NULL)
        out[n] = 0;
    (void)tc_clear_expected(PyExc_Exception);
    return out;
}

/* The first guard of e that the frame fails, described (malloc'd), or NULL. Guards are
 * checked in order, so a prefix of them passes: bisect on the prefix length. Only when the
 * text is read: a recompile logged or explained, or one that changes what happens (stance;
 * force: the recompile limit's warning names it), never on a plain miss. */
static char *failed_guard(const dh_entry *e, _PyInterpreterFrame *f, PyObject *func,
                          PyObject **values, void **ptrs, int64_t *symvals, int force) {
    if (!force && tl_explain == NULL && dh_tl_stance == DH_STANCE_DEFAULT && !log_wants("recompiles"))
        return NULL;
    dh_entry tmp = *e;
    int lo = 0, hi = e->nguards; /* prefix lo passes, prefix hi fails */
    tmp.nguards = hi;
    if (dh_guards_check_sym(&tmp, (PyObject *const *)f->localsplus, f->f_globals, f->f_builtins,
                            func, values, ptrs, symvals) != 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return NULL;
    }
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        tmp.nguards = mid;
        int r = dh_guards_check_sym(&tmp, (PyObject *const *)f->localsplus, f->f_globals,
                                    f->f_builtins, func, values, ptrs, symvals);
        if (r < 0)
            (void)tc_clear_expected(PyExc_Exception);
        if (r == 1)
            lo = mid;
        else
            hi = mid;
    }
    /* what differs (guards.c), read from the values of a check that fails at guard hi - 1 */
    char *diff = NULL;
    if (hi >= 1 && hi <= e->nguards) {
        tmp.nguards = hi;
        if (dh_guards_check_sym(&tmp, (PyObject *const *)f->localsplus, f->f_globals, f->f_builtins,
                                func, values, ptrs, symvals) < 0)
            (void)tc_clear_expected(PyExc_Exception);
        const dh_guard *g = &e->guards[hi - 1];
        diff = dh_guard_mismatch(g, g->src >= 0 ? values[g->src] : NULL);
    }
    dh_scratch_clear();
    PyObject *all = hi >= 1 && hi <= e->nguards ? dh_guard_describe(e, hi - 1) : NULL; /* that one only */
    char *out = NULL;
    if (all != NULL) {
        const char *s = PyUnicode_AsUTF8(all);
        char *both = s && diff ? malloc(strlen(s) + strlen(diff) + 4) : NULL;
        if (both != NULL)
            sprintf(both, "%s: %s", s, diff);
        out = both ? local_names(both, f->f_code) : s ? local_names(s, f->f_code) : NULL;
        free(both);
    }
    free(diff);
    Py_XDECREF(all);
    (void)tc_clear_expected(PyExc_Exception);
    return out;
}

/* Automatic dynamic ints: the first guard of e (the newest entry of this call's options) that
 * the frame fails, when it is an int's CONSTANT_MATCH and the int changed, makes that source a
 * graph input of the next traces (guards.c dh_mark_dynamic_int), as automatic dynamic shapes
 * mark a dim that changed. Guards are checked in order: bisect on the prefix that passes. */
static void mark_dynamic_ints(dh_cache *c, const dh_entry *e, _PyInterpreterFrame *f, PyObject *func,
                              PyObject **values, void **ptrs, int64_t *symvals) {
    int any = 0;
    for (int i = 0; i < e->nguards && !any; i++)
        any = e->guards[i].kind == DH_G_CONST && e->guards[i].obj != NULL &&
              (PyLong_CheckExact(e->guards[i].obj) || PyTuple_CheckExact(e->guards[i].obj));
    if (!any || e->fallback)
        return;
    /* every int that changed, not only the first: the guards of each int found failing are
     * dropped from a copy and the search runs again (ints changing together, f(x, n, m) with
     * both new: one more compile, not one per int) */
    dh_guard *gs = malloc(sizeof *gs * (size_t)e->nguards);
    if (gs == NULL)
        goto done;
    memcpy(gs, e->guards, sizeof *gs * (size_t)e->nguards);
    dh_entry tmp = *e;
    tmp.guards = gs;
    PyObject *const *lp = (PyObject *const *)f->localsplus;
    for (int round = 0, n = e->nguards; round < 16 && n > 0; round++) {
        tmp.nguards = n;
        if (dh_guards_check_sym(&tmp, lp, f->f_globals, f->f_builtins, func, values, ptrs, symvals) != 0)
            break;
        int lo = 0, hi = n, r = 0;
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            tmp.nguards = mid;
            r = dh_guards_check_sym(&tmp, lp, f->f_globals, f->f_builtins, func, values, ptrs, symvals);
            if (r < 0)
                break;
            if (r == 1)
                lo = mid;
            else
                hi = mid;
        }
        if (r < 0)
            break;
        tmp.nguards = hi;
        if (hi < 1 || dh_guards_check_sym(&tmp, lp, f->f_globals, f->f_builtins, func, values, ptrs, symvals) != 0)
            break;
        const dh_guard *g = &gs[hi - 1];
        if (g->kind != DH_G_CONST || g->src < 0 || g->obj == NULL ||
            !(PyLong_CheckExact(g->obj) || PyTuple_CheckExact(g->obj)))
            break; /* another guard failed: a new entry anyway */
        if (dh_mark_dynamic_int(c, e, g, values[g->src]) < 0)
            break;
        memmove(&gs[hi - 1], &gs[hi], sizeof *gs * (size_t)(n - hi));
        n--;
    }
    free(gs);
done:
    (void)tc_clear_expected(PyExc_Exception);
    dh_scratch_clear();
}

/* compile(recompile_limit=), else torchc.config.recompile_limit (the settings table: set or
 * TORCHC_RECOMPILE_LIMIT), else torch._dynamo.config.recompile_limit (read at a cache miss
 * only), else 8. */
static int recompile_limit(const dh_config *cfg) {
    if (cfg->recompile_limit > 0)
        return cfg->recompile_limit;
    long long own = ic_config_int(IC_CFG_recompile_limit);
    if (own > 0)
        return (int)own;
    if (dh_limit_source != NULL) {
        PyObject *v = PyObject_GetAttrString(dh_limit_source, "recompile_limit");
        long n = v && PyLong_Check(v) ? PyLong_AsLong(v) : -1;
        Py_XDECREF(v);
        (void)tc_clear_expected(PyExc_Exception, PyExc_OverflowError);
        if (n >= 1)
            return n > 1 << 30 ? 1 << 30 : (int)n;
    }
    return dh_default_recompile_limit;
}

/* A frame whose arguments are torch.func wrappers or forward-AD duals (directly or in a
 * *args tuple / list argument): captured kernels would read the wrapped data and drop the
 * batch dim or the tangent, so the frame runs eagerly (not cached). */
static int transform_tensor_obj(PyObject *o) {
    if (o == NULL || !tc_is_tensor(o))
        return 0;
    tc_meta m;
    tc_tensor_meta(o, &m);
    return (m.flags & TC_META_TRANSFORM) != 0;
}

static int transform_args(_PyInterpreterFrame *f) {
    PyCodeObject *co = f->f_code;
    int n = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0);
    for (int i = 0; i < n && i < co->co_nlocalsplus; i++) {
        PyObject *o = f->localsplus[i];
        if (transform_tensor_obj(o))
            return 1;
        if (o != NULL && (PyTuple_CheckExact(o) || PyList_CheckExact(o))) {
            Py_ssize_t k = PySequence_Fast_GET_SIZE(o);
            for (Py_ssize_t j = 0; j < k && j < 64; j++)
                if (transform_tensor_obj(PySequence_Fast_ITEMS(o)[j]))
                    return 1;
        }
    }
    return 0;
}

/* ---- compiling with Ctrl-C heard ----------------------------------------------------------
 * On the main thread ic_compile (CPU or GPU: the GPU compile sets its own CUDA context and
 * uses no stream) runs on a helper thread while this one waits (GIL released) and every 20 ms
 * runs Python's signal handlers: Ctrl-C during a long compile raises KeyboardInterrupt at
 * once instead of after the compile. The abandoned compile finishes on its own and frees the
 * graph (handed over) and its result. The exception is kept per thread until the hook
 * returns it: capture retries (dynamic, then static shapes) see it at once. Other threads
 * compile with the GIL released (signals go to the main thread, which hears them at once).
 * Every compile in flight is counted: the process waits for them at exit (LLVM's static
 * destructors must not run under a compile: a Ctrl-C that ends the program while another
 * thread compiles, or a daemon thread, crashed in LLVM). */
typedef struct cjob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ic_graph *g;
    ic_options opt;
    ic_err err;
    ic_compiled *res;
    int done, abandoned;
} cjob;

static unsigned long main_thread;
static _Atomic int abandoned_jobs; /* compiles left running after an interrupt */
static _Atomic int inflight;       /* ic_compile calls running (any thread) */
static _Thread_local PyObject *tl_pending[3]; /* type, value, traceback of an interrupt */

static void cjob_free(cjob *j) {
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static void *cjob_run(void *p) {
    cjob *j = p;
    ic_compiled *r = ic_compile(j->g, &j->opt, &j->err);
    inflight--; /* counted by dh_compile before the thread started */
    pthread_mutex_lock(&j->mu);
    j->res = r;
    j->done = 1;
    int abandoned = j->abandoned;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (abandoned) {
        if (r != NULL)
            ic_compiled_free(r);
        ic_graph_free(j->g);
        cjob_free(j);
        abandoned_jobs--;
    }
    return NULL;
}

/* exit() after a Ctrl-C: LLVM's static destructors must not run under a compile */
static void wait_abandoned(void) {
    for (int i = 0; i < 12000 && (abandoned_jobs > 0 || inflight > 0); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void restore_pending(void) {
    Py_XINCREF(tl_pending[0]);
    Py_XINCREF(tl_pending[1]);
    Py_XINCREF(tl_pending[2]);
    PyErr_Restore(tl_pending[0], tl_pending[1], tl_pending[2]);
}

/* One step of waiting for a compile on a helper thread, the GIL released: up to 20 ms on cv
 * unless *done (read under mu) is set. Returns *done; the caller checks signals between steps
 * (Ctrl-C arrives within 20 ms). Used by dh_compile and csrc/train.c's backward compile. */
int dh_wait_step(pthread_mutex_t *mu, pthread_cond_t *cv, const int *done) {
    int d;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(mu);
    if (!*done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(cv, mu, &ts);
    }
    d = *done;
    pthread_mutex_unlock(mu);
    Py_END_ALLOW_THREADS
    return d;
}

ic_compiled *dh_compile(ic_graph **g, const ic_options *opt, ic_err *err) {
    if (tl_pending[0] != NULL) { /* interrupted earlier in this capture */
        restore_pending();
        snprintf(err->msg, sizeof err->msg, "interrupted");
        return NULL;
    }
    cjob *j = PyThread_get_thread_ident() == main_thread ? calloc(1, sizeof *j) : NULL;
    pthread_t th;
    if (j != NULL) {
        pthread_mutex_init(&j->mu, NULL);
        pthread_cond_init(&j->cv, NULL);
        j->g = *g;
        j->opt = *opt;
        inflight++;
        if (pthread_create(&th, NULL, cjob_run, j) != 0) {
            inflight--;
            cjob_free(j);
            j = NULL;
        } else {
            pthread_detach(th);
        }
    }
    if (j == NULL) { /* another thread (signals go to the main one), or no thread to be had */
        ic_compiled *c;
        Py_BEGIN_ALLOW_THREADS
        inflight++;
        c = ic_compile(*g, opt, err);
        inflight--; /* before the GIL: at exit a daemon thread stops there */
        Py_END_ALLOW_THREADS
        dh_note_compile(err);
        return c;
    }
    for (;;) {
        int done = dh_wait_step(&j->mu, &j->cv, &j->done);
        if (done)
            break;
        if (PyErr_CheckSignals() < 0) {
            pthread_mutex_lock(&j->mu);
            done = j->done;
            j->abandoned = !done;
            if (!done)
                abandoned_jobs++;
            pthread_mutex_unlock(&j->mu);
            if (done) { /* finished meanwhile: drop the result, keep the graph with the trace */
                if (j->res != NULL)
                    ic_compiled_free(j->res);
                cjob_free(j);
            } else {
                *g = NULL; /* the helper thread frees it */
            }
            PyErr_Fetch(&tl_pending[0], &tl_pending[1], &tl_pending[2]);
            restore_pending();
            snprintf(err->msg, sizeof err->msg, "interrupted");
            return NULL;
        }
    }
    ic_compiled *c = j->res;
    *err = j->err;
    cjob_free(j);
    dh_note_compile(err);
    return c;
}

/* csrc/train.c's backward compiles: on a helper thread when called on the main thread,
 * counted in inflight for the exit wait */
int dh_is_main_thread(void) { return PyThread_get_thread_ident() == main_thread; }
void dh_compile_inflight_add(int delta) { inflight += delta; }

/* The exception that interrupted a compile during this capture (new references, once). */
static int take_pending(void) {
    if (tl_pending[0] == NULL)
        return 0;
    PyErr_Restore(tl_pending[0], tl_pending[1], tl_pending[2]); /* replaces what was set */
    tl_pending[0] = tl_pending[1] = tl_pending[2] = NULL;
    return 1;
}

/* The qualified name a user wrote: a resume function's (torchc_resume_<qualname>_at_<pc>,
 * resume.c) is the function it continues. buf holds the result. */
static const char *user_qualname(PyCodeObject *code, char *buf, size_t n) {
    const char *q = PyUnicode_AsUTF8(code->co_qualname);
    if (q == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return "?";
    }
    if (strncmp(q, "torchc_resume_", 14) == 0) {
        const char *at = strstr(q + 14, "_at_");
        int len = at ? (int)(at - (q + 14)) : (int)strlen(q + 14);
        snprintf(buf, n, "%.*s", len, q + 14);
        return buf;
    }
    return q;
}

/* fullgraph=True and the frame could not be captured in one graph: the RuntimeError,
 * naming the function, the user's file:line of the failure and its inlined stack. */
static void fullgraph_error(PyCodeObject *code, const char *reason, const char *where) {
    char qb[256];
    const char *qn = user_qualname(code, qb, sizeof qb);
    if (where == NULL) /* skipped after earlier failures: the function's own line */
        PyErr_Format(PyExc_RuntimeError,
                     "torchc: fullgraph=True but %s (%U:%d) could not be captured in one graph: %s\n"
                     "  at %U:%d in %U",
                     qn, code->co_filename, code->co_firstlineno,
                     reason ? reason : "?", code->co_filename, code->co_firstlineno, code->co_name);
    else
        PyErr_Format(PyExc_RuntimeError,
                     "torchc: fullgraph=True but %s (%U:%d) could not be captured in one graph: %s\n"
                     "  at %s",
                     qn, code->co_filename, code->co_firstlineno,
                     reason ? reason : "?", where);
}

/* Records a fallback of the whole frame with a reason and runs it eagerly. */
static PyObject *fallback(PyThreadState *ts, _PyInterpreterFrame *f, const char *why) {
    if (tl_explain != NULL || (dh_log_hook != NULL && tl_fresh)) {
        dh_entry tmp = {0};
        tmp.fallback = 1;
        tmp.reason = (char *)why;
        dh_explain_record(f->f_code, &tmp, "fallback");
        if (PyErr_Occurred()) /* MemoryError, Ctrl-C while recording: as in eager */
            return FINISH(ts, f, NULL);
    }
    return eval_default(ts, f, 0);
}

/* Per-call buffers of guard values and data pointers, one slot per source, from the thread's
 * slot stack (frame_slots.c): dh_eval_frame takes them for the largest entry of the cache and
 * gives them back when the frame returns; a capture whose entry has more sources takes larger
 * ones on top, given back with the first (not zero-filled: the guards write before reading). */
typedef struct frame_bufs {
    PyObject **values;
    void **ptrs;
    int cap;
} frame_bufs;

static int bufs_take(frame_bufs *b, int n, dh_slots_mark *m) {
    void **slots = dh_slots_take(2 * (size_t)n, m);
    if (slots == NULL)
        return -1;
    b->values = (PyObject **)slots;
    b->ptrs = slots + n;
    b->cap = n;
    return 0;
}

static PyObject *eval_body(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag,
                           const dh_config *cfg, dh_cache *c, frame_bufs *b);

static PyObject *dh_eval_frame(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag) {
    const dh_config *cfg = tl_cfg;
    if (cfg == NULL || dh_tl_busy || throwflag || f->owner != FRAME_OWNED_BY_THREAD ||
        f->frame_obj != NULL || !frame_not_started(f) || !(f->f_code->co_flags & CO_OPTIMIZED))
        return eval_default(ts, f, throwflag); /* not CO_OPTIMIZED: a class body, exec'd code */
    PyCodeObject *code = f->f_code;
    stats.frames++;
    if (host_stats < 0) {
        host_stats = ic_config_int(IC_CFG_host_stats) != 0; /* torchc.config.host_stats */
    }
    dh_tl_t0 = now_ns();
    PyObject *redir = dh_n_redirects ? dh_frame_redirect(code) : NULL;
    if (redir != NULL) { /* redirect.c: a Python function runs in the frame's place */
        PyObject *r = dh_call_with_frame_args(redir, code, (PyObject *const *)f->localsplus);
        if (r != Py_NotImplemented)
            return FINISH(ts, f, r);
        Py_DECREF(r);
    }
    dh_cache *c = dh_cache_of(code);
    if (c == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return FINISH(ts, f, NULL);
        return eval_default(ts, f, throwflag);
    }
    if (c->skip && (c->disabled == 2 || c->import_system)) {
        /* torch.compiler.disable's wrapper, the import system: the function and all it calls run unhooked */
        int busy = dh_tl_busy;
        dh_tl_busy = 1;
        PyObject *r = eval_default(ts, f, throwflag);
        dh_tl_busy = busy;
        return r;
    }
    if (c->skip && c->skip_failed && cfg->fullgraph) { /* captures failed before: raise */
        fullgraph_error(code, c->skip_reason, NULL);
        return FINISH(ts, f, NULL);
    }
    if (c->skip && tl_entry && c->disabled == 0 && c->skip_reason != NULL && !dh_cache_should_skip_file(code)) {
        tl_entry = 0; /* the function compiled runs eagerly, skipped: say why */
        stats.fallbacks++;
        return fallback(ts, f, c->skip_reason);
    }
    if (c->skip)
        return eval_default(ts, f, throwflag);
    int entry = tl_entry;
    tl_entry = 0;
    if (c->limit_hit && cfg->fullgraph) {
        char qb[256];
        PyErr_Format(PyExc_RuntimeError, "torchc: fullgraph=True but %s (%U:%d) runs eagerly: %s",
                     user_qualname(code, qb, sizeof qb), code->co_filename, code->co_firstlineno,
                     c->skip_reason ? c->skip_reason : "recompile limit reached");
        return FINISH(ts, f, NULL);
    }
    if (c->limit_hit) {
        stats.limit_fallbacks++;
        return fallback(ts, f, c->skip_reason);
    }
    if (tc_transform_active())
        return fallback(ts, f, "a torch.func transform (vmap, grad, jvp, functionalize) is active: eager");
    int tfm = dh_tfm_state(NULL); /* a lone DeviceContext is traced (sym_tfm_device_ctx) and guarded */
    if (tfm < 0 && PyErr_Occurred()) /* MemoryError & co. left set by the read: raised, as in eager */
        return FINISH(ts, f, NULL);
    if (tfm < 0) {
        char why[400] = "a TorchFunctionMode is active around the call: eager";
        if (tl_explain != NULL || (dh_log_hook != NULL && tl_fresh)) /* recorded: the modes named */
            dh_tfm_reason(why, sizeof why);
        return fallback(ts, f, why);
    }
    /* the slots of guard values and data pointers: off the C stack (frame_slots.c), which a
     * compiled recursion nests twice a level */
    dh_slots_mark smark;
    frame_bufs b;
    if (bufs_take(&b, c->max_sources > DH_MAX_SOURCES ? c->max_sources : DH_MAX_SOURCES, &smark) < 0)
        return FINISH(ts, f, PyErr_NoMemory());
    Py_ssize_t sbase = dh_scratch_enter(); /* guards.c: this frame's part of the scratch list */
    int saved_entry_frame = dh_tl_entry_frame;
    dh_tl_entry_frame = entry;
    PyObject *res = eval_body(ts, f, throwflag, cfg, c, &b);
    dh_tl_entry_frame = saved_entry_frame;
    dh_scratch_leave(sbase);
    dh_slots_give(&smark);
    return res;
}

/* a capture (or its attempt) is over: the guard failure that led to it (why, the recompile
 * reason of its record) is dropped */
static void capture_end(char *why) {
    tl_recompile = NULL;
    tl_fresh = 0;
    free(why);
}

static PyObject *eval_body(PyThreadState *ts, _PyInterpreterFrame *f, int throwflag,
                           const dh_config *cfg, dh_cache *c, frame_bufs *b) {
    PyCodeObject *code = f->f_code;
    PyObject **values = b->values;
    void **ptrs = b->ptrs;
    int64_t symvals[IC_MAX_SYMS];
    PyObject *func = frame_func(f);
    dh_entry *e, *prev = NULL;
    int r = 0;
    int key = dh_cfg_key(cfg);
    dh_tl_busy = 1;
    unsigned long epoch = dh_reset_epoch;
    for (e = c->entries; e != NULL; prev = e, e = e->next) {
        e->pins++; /* guards may run Python (and so a reset, or another thread) */
        r = e->backend != cfg->backend || e->cfg_key != key
                ? 0 /* captured for another backend (backend.c) or other compile options */
                : dh_guards_check_sym(e, (PyObject *const *)f->localsplus, f->f_globals,
                                  f->f_builtins, func, values, ptrs, symvals);
        if (r < 0) {
            if (tc_clear_expected(PyExc_Exception) < 0) {
                dh_entry_unpin(e);
                dh_tl_busy = 0;
                dh_scratch_clear();
                return FINISH(ts, f, NULL);
            }
            r = 0;
        }
        if (dh_reset_epoch != epoch) { /* the list was dropped under us: run this call eagerly */
            dh_entry_unpin(e);
            dh_tl_busy = 0;
            dh_scratch_clear();
            return eval_default(ts, f, throwflag);
        }
        if (r == 1)
            break;
        dh_entry_unpin(e);
    }
    const char *event = "hit";
    char *why = NULL; /* a recompile: the guard of the newest entry that failed */
    if (e != NULL) {
        /* e stays pinned until its run ends */
        dh_cache_touch(c, prev, e);
        const char *te = e->train && !e->fallback ? tc_train_eager_reason(e->train) : NULL;
        if (te != NULL) { /* training: double backward seen (csrc/train.c) */
            char *why_e = strdup(te);
            if (why_e != NULL) {
                e->fallback = 1;
                free(e->reason);
                e->reason = why_e;
            }
        }
        if (e->fallback && cfg->fullgraph) { /* torch.compile raises at every such call */
            dh_tl_busy = 0;
            fullgraph_error(code, e->reason, e->where);
            dh_entry_unpin(e);
            dh_scratch_clear();
            return FINISH(ts, f, NULL);
        }
        if (e->fallback)
            event = "fallback";
    } else {
        if (code->co_argcount >= 1 && tc_is_autograd_ctx(f->localsplus[0])) {
            /* the forward/backward of a torch.autograd.Function, called by its apply (which
             * the capture leaves to eager, with the reason): eager, as the apply */
            c->skip = 1;
            dh_tl_busy = 0;
            dh_scratch_clear();
            return eval_default(ts, f, throwflag);
        }
        int limit = recompile_limit(cfg);
        /* the reason: the failed guard of each entry captured under this call's options
         * (newest first, at most 4, a line each, as torch lists them), or the options
         * themselves when every entry has others (guards.c) */
        int nsame = 0;
        for (dh_entry *s = c->entries, *next; s != NULL && nsame < 4 && !PyErr_Occurred(); s = next) {
            if (s->backend == cfg->backend && s->cfg_key == key && ++nsame) {
                s->pins++; /* its guards run Python: a reset on another thread frees no pinned entry */
                why = dh_reason_join(why, failed_guard(s, f, func, values, ptrs, symvals, c->nentries >= limit));
                next = s->next; /* NULL once a reset unlinked s */
                dh_entry_unpin(s);
            } else {
                next = s->next;
            }
        }
        if (!nsame && c->entries && (dh_log_hook || tl_explain || dh_tl_stance))
            why = dh_options_mismatch(c->entries, cfg);
        if (PyErr_Occurred()) { /* MemoryError, Ctrl-C in a guard or the limit: as in eager */
            free(why);
            dh_tl_busy = 0;
            dh_scratch_clear();
            return FINISH(ts, f, NULL);
        }
        tl_recompile = why;
        tl_fresh = 1;
        if (c->entries && dh_tl_stance != DH_STANCE_DEFAULT) {
            dh_tl_busy = 0;
            PyObject *res = NULL;
            if (dh_tl_stance == DH_STANCE_FAIL_ON_RECOMPILE) {
                char qb[256];
                PyErr_Format(PyExc_RuntimeError,
                             "Detected recompile when torch.compile stance is 'fail_on_recompile'. "
                             "%s (%U:%d): %s", user_qualname(code, qb, sizeof qb), code->co_filename,
                             code->co_firstlineno, why ? why : "no cached entry matches");
                res = FINISH(ts, f, NULL);
            } else {
                res = fallback(ts, f, "recompile skipped: torch.compiler.set_stance('eager_on_recompile')");
            }
            capture_end(why);
            return res;
        }
        if (c->nentries >= limit && cfg->fullgraph) {
            /* torch.compile: FailOnRecompileLimitHit with fullgraph=True, never eager */
            char qb[256];
            dh_tl_busy = 0;
            PyErr_Format(PyExc_RuntimeError,
                         "torchc: recompile limit (%d) reached with fullgraph=True for %s (%U:%d); "
                         "last guard failure: %s. Raise torch._dynamo.config.recompile_limit or "
                         "torchc.compile(..., recompile_limit=N) if the recompiles are expected.",
                         limit, user_qualname(code, qb, sizeof qb), code->co_filename, code->co_firstlineno,
                         why ? why : "no cached entry matches");
            capture_end(why);
            return FINISH(ts, f, NULL);
        }
        if (c->nentries >= limit) {
            c->limit_hit = 1;
            free(c->skip_reason);
            char buf[600], qb[256];
            /* the newest entry's failure: the first line of why (one line per entry) */
            snprintf(buf, sizeof buf, "recompile limit (%d) reached for %s (last guard failure: %.*s)",
                     limit, user_qualname(code, qb, sizeof qb), why ? (int)strcspn(why, "\n") : 1,
                     why ? why : "?");
            c->skip_reason = strdup(buf);
            dh_tl_busy = 0;
            if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "torchc: %s; running eagerly", buf) < 0 &&
                tc_clear_expected(PyExc_Exception) < 0) {
                capture_end(why);
                return FINISH(ts, f, NULL);
            }
            stats.limit_fallbacks++;
            PyObject *res = fallback(ts, f, c->skip_reason);
            capture_end(why);
            return res;
        }
        /* dynamic shapes: dynamic=True makes every dim of the arguments symbolic; the
         * default (automatic) marks the dims that changed since the last specialization */
        static const uint32_t all_dims[DH_DYN_LOCALS] = {[0 ... DH_DYN_LOCALS - 1] = 0xffffffffu};
        const uint32_t *dynmask = NULL;
        if (cfg->dynamic > 0) {
            dynmask = all_dims;
        } else if (cfg->dynamic < 0) {
            dh_mark_dynamic(c, (PyObject *const *)f->localsplus, (int)code->co_nlocalsplus);
            for (dh_entry *s = c->entries; s != NULL && !PyErr_Occurred(); s = s->next)
                if (s->backend == cfg->backend && s->cfg_key == key) { /* the newest one */
                    s->pins++; /* as above: its guards run Python */
                    mark_dynamic_ints(c, s, f, func, values, ptrs, symvals);
                    dh_entry_unpin(s);
                    break;
                }
            for (int i = 0; i < DH_DYN_LOCALS; i++)
                if (c->dynmask[i])
                    dynmask = c->dynmask;
        }
        if (transform_args(f)) {
            dh_tl_busy = 0;
            return fallback(ts, f, "a torch.func wrapper or forward-AD dual tensor argument: eager");
        }
        if (dh_stack_units() < DH_TRACE_STACK_UNITS) { /* a capture needs C stack (recursion.c) */
            dh_tl_busy = 0;
            PyObject *res = fallback(ts, f, "the C stack is nearly exhausted (deep recursion): eager");
            capture_end(why);
            return res;
        }
        double t0 = now_ms();
        memset(dh_tl_ctimes, 0, sizeof dh_tl_ctimes);
        dh_tl_cache_hits = 0;
        dh_settings_read(); /* the trace's limits (settings.c) */
        uint32_t marked[DH_DYN_LOCALS];
        if (dh_marks_apply(dynmask, (PyObject *const *)f->localsplus, (int)code->co_nlocalsplus, marked))
            dynmask = marked; /* torch._dynamo.mark_dynamic / mark_static on the arguments */
        /* a frame the compiled call reaches below its first one (a callee run as a frame of
         * its own after its caller broke, a resume function) is typically one of N blocks of
         * one class: its modules are type-guarded from its first trace, so the second block
         * reuses the first one's entry; the call's first frame pins its modules until a second
         * instance comes (dh_module_sharing_check) */
        if (c->entries == NULL && !dh_tl_entry_frame)
            c->modtype = 1;
        dh_module_sharing_check(c, (PyObject *const *)f->localsplus, (int)code->co_nlocalsplus);
        dh_tl_modtype = c->modtype; /* modules type-guarded: instances share the entry */
        /* the cyclic GC off while capturing: the trace allocates many short-lived objects
         * and each gen-2 collection walks the whole torch heap (GRU training capture: 1.40 s
         * -> 1.06 s CPU; benchmarks/train.py) */
        int gc_was = PyGC_Disable();
        /* automatic dynamic ints; dynamic=True: every int argument from the first trace */
        /* a strong reference: the trace runs Python (a getattr), and a reset there drops c's set */
        dh_tl_dynints = Py_XNewRef(cfg->dynamic > 0 ? Py_True : cfg->dynamic < 0 ? c->dynints : NULL);
        e = dh_trace_frame(code, (PyObject *const *)f->localsplus, f->f_globals, f->f_builtins,
                           func, cfg, dynmask);
        Py_CLEAR(dh_tl_dynints);
        if (gc_was)
            PyGC_Enable();
        dh_tl_modtype = 0;
        if (take_pending()) { /* Ctrl-C (a signal handler's exception) during the compile */
            if (e != NULL)
                dh_entry_free(e);
            dh_tl_busy = 0;
            return FINISH(ts, f, NULL);
        }
        if (e == NULL) {
            /* internal fault: never break the program; report through explain/warning, with
             * the exception the capture raised (read before it is cleared) */
            dh_tl_busy = 0;
            char buf[300];
            snprintf(buf, sizeof buf, "internal error while capturing: no entry and no exception");
            if (PyErr_Occurred() && !cfg->fullgraph && !tc_pyerr_fatal(PyErr_Occurred()) &&
                PyErr_ExceptionMatches(PyExc_Exception)) { /* MemoryError, RecursionError: raised below */
                PyObject *et, *ev, *tb;
                PyErr_Fetch(&et, &ev, &tb);
                PyErr_NormalizeException(&et, &ev, &tb);
                PyObject *msg = ev ? PyObject_Str(ev) : NULL;
                const char *m = msg ? PyUnicode_AsUTF8(msg) : NULL;
                snprintf(buf, sizeof buf, "internal error while capturing: %s%s%s",
                         et ? ((PyTypeObject *)et)->tp_name : "?", m && m[0] ? ": " : "", m ? m : "");
                Py_XDECREF(msg);
                Py_XDECREF(et);
                Py_XDECREF(ev);
                Py_XDECREF(tb);
            }
            if (cfg->fullgraph || (PyErr_Occurred() && tc_clear_expected(PyExc_Exception) < 0)) {
                capture_end(why);
                return FINISH(ts, f, NULL);
            }
            ic_note_internal_fault(buf);
            PyObject *res = fallback(ts, f, buf);
            capture_end(why);
            return res;
        }
        e->compile_ms = now_ms() - t0;
        memcpy(e->ctimes, dh_tl_ctimes, sizeof e->ctimes);
        e->cache_hits = dh_tl_cache_hits;
        if (ic_debug_flags() & IC_DEBUG_TIME)
            fprintf(stderr, "torchc time: frame %s: capture + compile %.2f ms\n",
                    PyUnicode_AsUTF8(code->co_name), e->compile_ms);
        /* the same failure for three specializations in a row (a fresh object each call,
         * an unsupported construct on every path): stop tracing this code, run it eagerly */
        if (e->fallback && e->reason && c->entries && c->entries->fallback && c->entries->reason &&
            strcmp(c->entries->reason, e->reason) == 0 && c->entries->next &&
            c->entries->next->fallback && c->entries->next->reason &&
            strcmp(c->entries->next->reason, e->reason) == 0 && !cfg->fullgraph) {
            c->skip = 1;
            c->skip_failed = 1;
            free(c->skip_reason);
            c->skip_reason = strdup(e->reason);
        }
        dh_cache_add(c, e);
        e->pins++;
        if (e->nsources > c->max_sources)
            c->max_sources = e->nsources;
        if (e->nsources > b->cap) {
            dh_slots_mark above; /* given back with dh_eval_frame's mark, which is under it */
            if (bufs_take(b, e->nsources, &above) < 0) {
                dh_entry_unpin(e);
                dh_tl_busy = 0;
                capture_end(why);
                return FINISH(ts, f, PyErr_NoMemory());
            }
            values = b->values;
            ptrs = b->ptrs;
        }
        event = e->fallback ? "fallback" : "compiled";
        if (e->fallback)
            stats.fallbacks++;
        else
            stats.compiles++;
        r = dh_guards_check_sym(e, (PyObject *const *)f->localsplus, f->f_globals,
                                f->f_builtins, func, values, ptrs, symvals);
        if (r != 1) {
            /* guards that reject the frame they came from: a bug; stay correct */
            if (tc_clear_expected(PyExc_Exception) < 0) {
                dh_entry_unpin(e);
                dh_tl_busy = 0;
                return FINISH(ts, f, NULL);
            }
            e->fallback = 1;
            free(e->reason);
            e->reason = strdup("internal: guards reject their own frame");
            ic_note_internal_fault(e->reason);
        }
        if (e->fallback && cfg->fullgraph) {
            dh_tl_busy = 0;
            capture_end(why);
            fullgraph_error(code, e->reason, e->where);
            dh_entry_unpin(e);
            return FINISH(ts, f, NULL);
        }
    }
    dh_tl_busy = 0;
    if (!e->fallback && (tl_explain != NULL || (dh_log_hook != NULL && tl_fresh)))
        dh_guard_values_keep(e, values); /* the record runs Python (a log hook) before the run */
    dh_explain_record(code, e, event);
    capture_end(why);
    if (PyErr_Occurred()) { /* MemoryError, Ctrl-C while recording: as in eager */
        dh_entry_unpin(e);
        dh_scratch_clear();
        return FINISH(ts, f, NULL);
    }
    if (e->fallback) {
        dh_entry_unpin(e);
        return eval_default(ts, f, throwflag);
    }
    for (int i = 0; i < e->nidx; i++) {
        /* out-of-range (or negative) indices: eager raises or wraps; let it */
        int ok;
        /* CUDA gathers check on the device, like torch.compile's kernels: a negative index
         * wraps, one out of range traps (eager: a device-side assert); no sync here */
        if (e->idx_bound[i] >= 0 && e->idx_gather[i] && tc_is_cuda(values[e->idx_src[i]]))
            continue;
        if (e->idx_bound[i] == -1) { /* an integer divisor: no zero element */
            PyObject *all = PyObject_CallMethod(values[e->idx_src[i]], "all", NULL);
            ok = all ? PyObject_IsTrue(all) : -1;
            Py_XDECREF(all);
            if (ok < 0 && tc_clear_expected(PyExc_Exception) < 0) {
                dh_entry_unpin(e);
                dh_scratch_clear();
                return FINISH(ts, f, NULL);
            }
        } else {
            ok = tc_index_in_range(values[e->idx_src[i]], e->idx_bound[i]);
        }
        if (ok != 1) {
            dh_entry_unpin(e);
            dh_scratch_clear();
            return eval_default(ts, f, throwflag);
        }
    }
    if (e->mut_mode != NULL && !dh_inplace_allowed(e, values)) {
        /* eager's in-place op would raise (a leaf that requires grad...): let it */
        dh_entry_unpin(e);
        dh_scratch_clear();
        return eval_default(ts, f, throwflag);
    }
    stats.hits++;
    e->hits++;
    if (host_stats > 0) {
        stats.t_guard += now_ns() - dh_tl_t0;
        stats.timed++;
    }
    /* eager's recursion limit: a compiled frame never enters _PyEval_EvalFrameDefault; it
     * counts the level its frame would (recursion.c) */
    PyObject *res = NULL;
    int rdelta;
    if (dh_rec_enter_run(ts, &rdelta) == 0) {
        res = dh_entry_run(e, values, ptrs, func, symvals);
        dh_rec_leave_run(ts, rdelta);
    }
    dh_entry_unpin(e);
    dh_scratch_clear();
    if (res == NULL && dh_tl_rerun_eager) { /* a computed index out of range (after the kernels) */
        dh_tl_rerun_eager = 0;
        return eval_default(ts, f, throwflag);
    }
    return FINISH(ts, f, res);
}

/* ---- public API ---------------------------------------------------------------------- */

PyObject *dh_call(PyObject *fn, PyObject *args, PyObject *kwargs, const dh_config *cfg) {
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (active_calls == 0) {
        _PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(interp);
        if (cur != dh_eval_frame) {
            prev_eval = cur;
            _PyInterpreterState_SetEvalFrameFunc(interp, dh_eval_frame);
        }
    }
    active_calls++;
    const dh_config *saved = tl_cfg;
    int saved_busy = dh_tl_busy, saved_entry = tl_entry;
    tl_cfg = cfg;
    dh_tl_busy = 0;
    tl_entry = 1;
    PyObject *res = PyObject_Call(fn, args, kwargs);
    tl_cfg = saved;
    dh_tl_busy = saved_busy;
    tl_entry = saved_entry;
    if (--active_calls == 0)
        _PyInterpreterState_SetEvalFrameFunc(interp, prev_eval ? prev_eval : _PyEval_EvalFrameDefault);
    return res;
}

int dh_explain_start(void) {
    if (tl_explain != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "torchc.explain is already running on this thread");
        return -1;
    }
    tl_explain = PyList_New(0);
    return tl_explain ? 0 : -1;
}

PyObject *dh_explain_stop(void) {
    PyObject *l = tl_explain;
    tl_explain = NULL;
    if (l == NULL)
        return PyList_New(0);
    return l;
}

static PyObject *dh_stats_base(void);

int dh_dict_set_counts(PyObject *d, const char *const *keys, const unsigned long long *vals, int n) {
    for (int i = 0; i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(vals[i]);
        if (v == NULL || PyDict_SetItemString(d, keys[i], v) < 0) {
            Py_XDECREF(v);
            return -1;
        }
        Py_DECREF(v);
    }
    return 0;
}

PyObject *dh_stats(void) {
    PyObject *d = dh_stats_base();
    if (d == NULL)
        return NULL;
    /* GEMM choices timed on the device (runtime/cuda.c); lazy fallback modules; split row
     * kernels: combined in their last block, final launches */
    static const char *const keys[7] = {"gemm_measured", "gemm_template", "gemm_extern", "gemm_untimed",
                                        "lazy_fallback_loads", "split_combined", "split_final_launches"};
    unsigned long long n[7];
    ic_gemm_choice_stats(n);
    n[4] = ic_gpu_lazy_loads();
    ic_gpu_split_stats(&n[5]);
    if (dh_dict_set_counts(d, keys, n, 7) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *dh_stats_base(void) {
    if (host_stats > 0) { /* microseconds; gpu_*: inside the GPU runs (ic_gpu_host_stats) */
        double g[6];
        unsigned long long n[6];
        ic_gpu_host_stats(g, n);
        return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:K,s:K,s:K,s:K,s:K}",
                             "frames", stats.frames, "hits", stats.hits, "compiles", stats.compiles, "fallbacks",
                             stats.fallbacks, "limit_fallbacks", stats.limit_fallbacks, "timed_hits", stats.timed,
                             "host_guard_us", stats.t_guard / 1e3, "host_alloc_us", stats.t_alloc / 1e3,
                             "host_run_us", stats.t_run / 1e3, "host_rest_us", stats.t_rest / 1e3, "gpu_run_us", g[0],
                             "gpu_ws_us", g[1], "gpu_cublaslt_us", g[2], "gpu_cudnn_us", g[3], "gpu_aten_us", g[4],
                             "gpu_launch_us", g[5], "gpu_runs", n[0], "gpu_cublaslt_n", n[2], "gpu_cudnn_n", n[3],
                             "gpu_aten_n", n[4], "gpu_launch_n", n[5]);
    }
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "frames", stats.frames, "hits", stats.hits,
                         "compiles", stats.compiles, "fallbacks", stats.fallbacks,
                         "limit_fallbacks", stats.limit_fallbacks);
}

void dh_reset(void) {
    dh_cache_reset_all();
    ic_cache_clear();
    memset(&stats, 0, sizeof stats);
}

int dh_init(PyObject *module) {
    main_thread = PyThread_get_thread_ident(); /* the module is imported by the main thread */
    /* Py_AtExit: at the end of Py_FinalizeEx, before any C exit handler. The C atexit alone ran
     * after the destructors of LLVM's function-local statics, registered later, at the first
     * compile: a compile still running on a thread whose join a Ctrl-C had cut short crashed
     * in LLVM's instruction selection after the program's last line (rc -11 in about one run of
     * four, test_interrupt_while_another_thread_compiles; core: the main thread in
     * wait_abandoned, the other in SelectionDAGISel) */
    Py_AtExit(wait_abandoned);
    atexit(wait_abandoned);
    if (dh_cache_init() < 0)
        return -1;
    if (dh_symbolic_init() < 0)
        return -1;
    return 0;
}
