/* variables.c — turning Python values seen by the trace into tracked values, with the
 * sources and guards that make the specialization sound.
 *
 * Contract: every Python value the trace specializes on is reached through a source and
 * gets a guard: tensors → TENSOR_MATCH (and become graph inputs), numbers/strings/tuples →
 * CONSTANT_MATCH, modules and callables → ID_MATCH, nn.Module → ID_MATCH + training.
 * A plain dict's constant values: CONSTANT_MATCH once the trace reads them (lazy guards,
 * sym_lazy_use), the key set always (length and DICT_KEY).
 */
#include "sym.h"

int sym_is_np_ufunc(PyObject *o); /* ops_models.c */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static PyObject *dtype_objs[IC_DTYPE_COUNT];
static PyObject *nn_module_type, *torch_module, *torch_size_type, *torch_dtype_type;
static PyObject *torch_device_type;

int sym_fail(trace *t, const char *fmt, ...) {
    /* PyUnicode_FromFormat: reasons may name Python objects (%U, %S, %R) */
    if (!t->failed) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        va_list ap;
        va_start(ap, fmt);
        PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
        va_end(ap);
        const char *s = msg ? PyUnicode_AsUTF8(msg) : NULL;
        snprintf(t->reason, sizeof t->reason, "%s", s ? s : fmt);
        sym_where(t);
        Py_XDECREF(msg);
        if (tc_clear_expected(PyExc_Exception) < 0) { /* a fatal one while formatting (%R): it wins */
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
        } else {
            PyErr_Restore(et, ev, tb);
        }
        t->failed = 1;
    }
    return -1;
}

PyObject *sym_keep(trace *t, PyObject *o) {
    if (o == NULL)
        return NULL;
    if (PyList_Append(t->keep, o) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    Py_DECREF(o);
    return o;
}

/* Vars are allocated in chunks that live in t->keep as capsules: freed with the trace. */
static void free_chunk(PyObject *cap) { free(PyCapsule_GetPointer(cap, NULL)); }

var *sym_alloc(trace *t, int n) {
    if (n <= 0)
        n = 1;
    var *p = calloc((size_t)n, sizeof *p);
    if (p == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    PyObject *cap = PyCapsule_New(p, NULL, free_chunk);
    if (cap == NULL) {
        free(p);
        return NULL;
    }
    if (sym_keep(t, cap) == NULL)
        return NULL;
    return p;
}

/* A bound method: obj is its function or its name (str, for methods the trace models), src its
 * source or -1, items[0] a copy of self. */
int sym_method(trace *t, const var *self, PyObject *obj, int src, var *out) {
    var *s = sym_alloc(t, 1);
    if (s == NULL)
        return -1;
    s[0] = *self;
    *out = sym_var(V_METHOD);
    out->obj = obj;
    out->src = src;
    out->items = s;
    return 0;
}

/* two source names (str, or a dict item's key of any simple constant type) equal */
static int same_name(PyObject *a, PyObject *b) {
    if (a == b)
        return 1;
    if (a == NULL || b == NULL || Py_TYPE(a) != Py_TYPE(b))
        return 0;
    if (PyUnicode_CheckExact(a))
        return PyUnicode_Compare(a, b) == 0;
    int eq = PyObject_RichCompareBool(a, b, Py_EQ);
    if (eq < 0)
        (void)tc_clear_expected(PyExc_Exception);
    return eq == 1;
}

/* sym_source's index: a hash of (kind, base, index, name) consistent with same_name (a
 * CONST's object by identity), so finding an existing source stays O(1) where a dict of 10^4
 * items makes 10^4 item sources (a scan of all of them per source was quadratic). An
 * unhashable name hashes to 0: still found, by comparison. */
static uint64_t src_hash(dh_srckind kind, int base, Py_ssize_t index, PyObject *name) {
    Py_hash_t nh = 0;
    if (name != NULL && kind == DH_S_CONST) {
        nh = (Py_hash_t)((uintptr_t)name >> 4);
    } else if (name != NULL) {
        nh = PyObject_Hash(name);
        if (nh == -1) {
            (void)tc_clear_expected(PyExc_Exception);
            nh = 0;
        }
    }
    uint64_t h = (uint64_t)kind * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)base * 0xC2B2AE3D27D4EB4Full;
    h ^= (uint64_t)index * 0x165667B19E3779F9ull ^ (uint64_t)nh;
    return h ^ (h >> 29);
}

static int srcidx_put(trace *t, int i) {
    if (2 * (t->nsrc + 1) > t->capsrcidx) { /* grown (rehashed) at half full */
        int cap = t->capsrcidx ? 2 * t->capsrcidx : 64;
        while (2 * (t->nsrc + 1) > cap)
            cap *= 2;
        int *n = calloc((size_t)cap, sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        free(t->srcidx);
        t->srcidx = n;
        t->capsrcidx = cap;
        for (int k = 0; k < t->nsrc; k++)
            if (k != i && t->src[k].kind != DH_S_NEW && srcidx_put(t, k) < 0)
                return -1;
    }
    const dh_source *s = &t->src[i];
    uint64_t h = src_hash(s->kind, s->base, s->index, s->name);
    for (uint64_t p = h;; p++)
        if (t->srcidx[p & (uint64_t)(t->capsrcidx - 1)] == 0) {
            t->srcidx[p & (uint64_t)(t->capsrcidx - 1)] = i + 1;
            return 0;
        }
}

int sym_source(trace *t, dh_srckind kind, int base, Py_ssize_t index, PyObject *name) {
    if (kind != DH_S_NEW && t->capsrcidx > 0) {
        uint64_t h = src_hash(kind, base, index, name);
        for (uint64_t p = h;; p++) {
            int e = t->srcidx[p & (uint64_t)(t->capsrcidx - 1)];
            if (e == 0)
                break;
            dh_source *s = &t->src[e - 1];
            if (s->kind == kind && s->base == base && s->index == index &&
                (s->name == name || (kind != DH_S_CONST && same_name(s->name, name))))
                return e - 1;
        }
    }
    if (t->nsrc == t->capsrc) {
        int cap = t->capsrc ? 2 * t->capsrc : 16;
        if (t->nsrc >= dh_limit.max_sources)
            return sym_fail(t, "too many sources (%d: torchc.config.max_sources)", dh_limit.max_sources);
        dh_source *n = realloc(t->src, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->src = n;
        uintptr_t old_sv = (uintptr_t)t->srcvar; /* journal slots in it move with it */
        var *sv = realloc(t->srcvar, (size_t)cap * sizeof *sv);
        if (sv != NULL) {
            sym_fx_moved(t, old_sv, (size_t)t->capsrc * sizeof *sv, sv);
            t->srcvar = sv;
        }
        PyObject **so = sv ? realloc(t->srcobj, (size_t)cap * sizeof *so) : NULL;
        if (so != NULL)
            t->srcobj = so;
        unsigned char *sd = so ? realloc(t->srcdone, (size_t)cap) : NULL;
        if (sd == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->srcdone = sd;
        memset(t->srcvar + t->capsrc, 0, (size_t)(cap - t->capsrc) * sizeof *sv);
        memset(t->srcobj + t->capsrc, 0, (size_t)(cap - t->capsrc) * sizeof *so);
        memset(t->srcdone + t->capsrc, 0, (size_t)(cap - t->capsrc));
        t->capsrc = cap;
    }
    dh_source *s = &t->src[t->nsrc];
    s->kind = kind;
    s->base = base;
    s->index = index;
    s->name = Py_XNewRef(name);
    memset(&s->ac, 0, sizeof s->ac);
    s->ac.where = -1;
    int i = t->nsrc++;
    if (kind != DH_S_NEW && srcidx_put(t, i) < 0)
        return -1;
    return i;
}

static dh_guard *new_guard(trace *t, dh_guardkind kind, int src) {
    if (t->nguards == t->capguards) {
        int cap = t->capguards ? 2 * t->capguards : 16;
        dh_guard *n = realloc(t->guards, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        t->guards = n;
        t->capguards = cap;
    }
    dh_guard *g = &t->guards[t->nguards++];
    memset(g, 0, sizeof *g);
    g->kind = kind;
    g->src = src;
    g->input_index = -1;
    return g;
}

dh_guard *sym_new_guard(trace *t, dh_guardkind kind, int src) { return new_guard(t, kind, src); }

static int has_guard(trace *t, dh_guardkind kind, int src) {
    for (int i = 0; i < t->nguards; i++)
        if (t->guards[i].kind == kind && t->guards[i].src == src)
            return 1;
    return 0;
}

/* A process-state predicate: called now, its answer guarded (re-asked before each run).
 * 0/1, or -1 failed. */
int sym_state_predicate(trace *t, PyObject *fn) {
    PyObject *r = PyObject_CallNoArgs(fn), *exc = NULL;
    int truth = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (truth < 0) {
        /* raising is a state too (torch.cuda without CUDA): guarded, and raised in the
         * trace for a handler of the traced frames to catch; MemoryError, Ctrl-C stay set */
        if (tc_pyerr_fatal(PyErr_Occurred()))
            return sym_fail(t, "%S() raised", fn);
        PyObject *et, *tb;
        PyErr_Fetch(&et, &exc, &tb);
        PyErr_NormalizeException(&et, &exc, &tb);
        Py_XDECREF(et);
        Py_XDECREF(tb);
        if (exc == NULL || sym_keep(t, exc) == NULL)
            return sym_fail(t, "%S() raised", fn);
    }
    for (int i = 0; i < t->nguards; i++)
        if (t->guards[i].kind == DH_G_CALL && t->guards[i].obj == fn) {
            if (truth < 0) {
                t->pending_exc = exc;
                return sym_fail(t, "%S() raised", fn);
            }
            return truth;
        }
    dh_guard *g = new_guard(t, DH_G_CALL, -1);
    if (g == NULL)
        return -1;
    g->obj = Py_NewRef(fn);
    g->value = truth;
    if (truth < 0) {
        t->pending_exc = exc;
        return sym_fail(t, "%S() raised", fn);
    }
    return truth;
}

/* key in sources[src] (a dict or subclass), guarded: 1 present, 0 absent, -1 failed */
int sym_guard_key(trace *t, int src, PyObject *dict, PyObject *key) {
    int has = dict == NULL ? 0 : PyDict_Contains(dict, key);
    if (has < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "dict lookup raised");
    }
    for (int i = 0; i < t->nguards; i++)
        if (t->guards[i].kind == DH_G_KEY && t->guards[i].src == src &&
            PyObject_RichCompareBool(t->guards[i].obj, key, Py_EQ) == 1 && Py_TYPE(t->guards[i].obj) == Py_TYPE(key))
            return has;
    (void)tc_clear_expected(PyExc_Exception);
    dh_guard *g = new_guard(t, DH_G_KEY, src);
    if (g == NULL)
        return -1;
    g->obj = Py_NewRef(key);
    g->value = has;
    return has;
}

static int is_simple_const(PyObject *o);

int sym_ctxvar_call(trace *t, PyObject *cv, int cvsrc, const char *mn, var *args, int nargs, var *out) {
    int i = 0;
    while (i < t->nctxv && t->ctxv[i].cv != cv)
        i++;
    if (t->in_gen)
        return sym_fail(t, "ContextVar.%s inside a generator", mn);
    if (!strcmp(mn, "set") && nargs == 1) {
        if (i == t->nctxv) {
            if (t->nctxv == t->capctxv) { /* grown: no fixed count of context variables */
                int cap = t->capctxv ? 2 * t->capctxv : 4;
                sym_ctxv *c = realloc(t->ctxv, (size_t)cap * sizeof *c);
                if (c == NULL) {
                    PyErr_NoMemory();
                    return -1;
                }
                t->ctxv = c;
                t->capctxv = cap;
            }
            t->nctxv++;
            memset(&t->ctxv[i], 0, sizeof t->ctxv[i]);
            t->ctxv[i].cv = cv;
        }
        int d = t->ctxv[i].depth;
        if (d == t->ctxv[i].cap) { /* nested sets: new arrays (old ones stay for a rollback) */
            int cap = d ? 2 * d : 4;
            var *nv = sym_alloc(t, cap);
            var *room = sym_alloc(t, (cap * (int)sizeof(PyObject *) + (int)sizeof(var) - 1) / (int)sizeof(var));
            if (nv == NULL || room == NULL)
                return -1;
            if (d) {
                memcpy(nv, t->ctxv[i].vals, (size_t)d * sizeof(var));
                memcpy(room, t->ctxv[i].tokens, (size_t)d * sizeof(PyObject *));
            }
            t->ctxv[i].vals = nv;
            t->ctxv[i].tokens = (PyObject **)room;
            t->ctxv[i].cap = cap;
        }
        PyObject *tok = sym_keep(t, PyTuple_Pack(1, cv)); /* a fresh object: this set's token */
        if (tok == NULL)
            return -1;
        t->ctxv[i].vals[d] = args[0];
        t->ctxv[i].tokens[d] = tok;
        t->ctxv[i].depth = d + 1;
        memset(out, 0, sizeof *out);
        out->kind = V_CONST;
        out->src = -1;
        out->obj = tok;
        return 0;
    }
    if (!strcmp(mn, "reset") && nargs == 1) {
        if (i == t->nctxv || t->ctxv[i].depth == 0 || args[0].kind != V_CONST ||
            args[0].obj != t->ctxv[i].tokens[t->ctxv[i].depth - 1])
            return sym_fail(t, "ContextVar.reset with a token not from this trace");
        t->ctxv[i].depth--;
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (!strcmp(mn, "get") && nargs == 0 && i < t->nctxv && t->ctxv[i].depth > 0) {
        *out = t->ctxv[i].vals[t->ctxv[i].depth - 1];
        return 0;
    }
    if (!strcmp(mn, "get") && nargs == 0 && cvsrc >= 0) {
        /* not set in the trace, a value other than a plain constant (a collector dict, an
         * object): read through a source (cv.get() when the guards run), as an input is */
        PyObject *v = NULL;
        if (PyContextVar_Get(cv, NULL, &v) < 0)
            return -1;
        if (v == NULL)
            return sym_fail(t, "ContextVar.get() of an unset variable (eager raises LookupError)");
        if (!is_simple_const(v)) {
            int s = sym_source(t, DH_S_CTXGET, cvsrc, 0, NULL);
            int rc = s < 0 ? -1 : sym_wrap(t, v, s, out);
            Py_DECREF(v);
            return rc;
        }
        Py_DECREF(v);
    }
    if (!strcmp(mn, "get") && nargs <= 1 && (nargs == 0 || args[0].kind == V_CONST)) {
        /* not set in the trace: the caller's value, asked now and guarded equal (a plain
         * constant such as None; anything else is not traced) */
        PyObject *get = PyObject_GetAttrString(cv, "get");
        PyObject *a = get == NULL ? NULL : nargs ? PyTuple_Pack(1, args[0].obj) : PyTuple_New(0);
        int rc = a == NULL ? -1 : sym_guarded_call(t, get, a, out);
        Py_XDECREF(get);
        Py_XDECREF(a);
        return rc;
    }
    return sym_fail(t, "ContextVar.%s not supported here", mn);
}

int sym_ctxvar_pending(trace *t, const var *v) {
    for (int i = 0; i < t->nctxv; i++) {
        if (v == NULL && t->ctxv[i].depth > 0)
            return 1;
        for (int d = 0; v != NULL && d < t->ctxv[i].cap; d++) /* reset ones too: a token out */
            if (t->ctxv[i].tokens[d] != NULL && v->kind == V_CONST && v->obj == t->ctxv[i].tokens[d])
                return 1;
    }
    return 0;
}

static PyObject *os_environ;

PyObject *sym_os_environ(void) { return os_environ; }

int sym_guarded_call(trace *t, PyObject *fn, PyObject *args, var *out) {
    PyObject *r = PyObject_Call(fn, args, NULL);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "%R%R raised", fn, args);
    }
    if (!(r == Py_None || PyUnicode_CheckExact(r) || PyLong_CheckExact(r) || PyBool_Check(r))) {
        Py_DECREF(r);
        return sym_fail(t, "%R%R: not a simple constant", fn, args);
    }
    dh_guard *g = new_guard(t, DH_G_CALLEQ, -1);
    PyObject *spec = g ? Py_BuildValue("(OOO)", fn, args, r) : NULL;
    if (spec == NULL) {
        Py_DECREF(r);
        if (g != NULL)
            t->nguards--;
        return -1;
    }
    g->obj = spec;
    return sym_const(t, r, out);
}

int sym_guard_len(trace *t, int src, int n) {
    for (int i = 0; i < t->nguards; i++)
        if (t->guards[i].kind == DH_G_LEN && t->guards[i].src == src)
            return t->guards[i].value == n ? 0 : sym_fail(t, "conflicting length guards");
    dh_guard *g = new_guard(t, DH_G_LEN, src);
    if (g == NULL)
        return -1;
    g->value = n;
    return 0;
}

/* torch.nn.modules.module's global hook dicts: empty while tracing (else the trace fails),
 * guarded empty (each by a source holding the dict) */
int sym_global_hooks_guard(trace *t) {
    static PyObject *dicts[4];
    static int ready;
    if (!ready) {
        static const char *names[4] = {"_global_forward_hooks", "_global_forward_pre_hooks",
                                       "_global_backward_hooks", "_global_backward_pre_hooks"};
        PyObject *m = PyImport_ImportModule("torch.nn.modules.module");
        for (int i = 0; m && i < 4; i++) {
            dicts[i] = PyObject_GetAttrString(m, names[i]); /* kept */
            if (dicts[i] == NULL)
                (void)tc_clear_expected(PyExc_AttributeError);
        }
        Py_XDECREF(m);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        ready = 1;
    }
    for (int i = 0; i < 4; i++) {
        if (dicts[i] == NULL || !PyDict_Check(dicts[i]))
            continue;
        if (PyDict_GET_SIZE(dicts[i]) > 0)
            return sym_fail(t, "global module hooks are registered");
        int s = sym_source(t, DH_S_CONST, -1, 0, dicts[i]);
        if (s < 0 || sym_guard_len(t, s, 0) < 0)
            return -1;
    }
    return 0;
}

/* The default dtype, guarded once per trace. */
int sym_default_dtype(trace *t) {
    int d = tc_default_dtype();
    for (int i = 0; i < t->nguards; i++)
        if (t->guards[i].kind == DH_G_DEFAULT_DTYPE)
            return d;
    dh_guard *g = new_guard(t, DH_G_DEFAULT_DTYPE, -1);
    if (g == NULL)
        return -1;
    g->value = d;
    return d;
}

/* t->srcdone[src] == 2: the source's value has a lazy guard (a cheap test per value read) */
static void lazy_count(trace *t, dh_guard *g) {
    g->lazy = 0;
    t->nlazy--;
    if (g->src >= 0 && g->src < t->capsrc && t->srcdone[g->src] == 2)
        t->srcdone[g->src] = 1;
}

static void lazy_use_src(trace *t, int src) {
    if (src < 0 || src >= t->capsrc || t->srcdone[src] != 2)
        return;
    for (int i = 0; i < t->nguards && t->nlazy > 0; i++)
        if (t->guards[i].lazy && t->guards[i].src == src)
            lazy_count(t, &t->guards[i]);
    t->srcdone[src] = 1;
}

void sym_lazy_use_made_by(trace *t, int inst) {
    for (int i = 0; i < t->nguards && t->nlazy > 0; i++)
        if (t->guards[i].lazy == inst)
            lazy_count(t, &t->guards[i]);
}

void sym_lazy_use_all(trace *t) {
    for (int i = 0; i < t->nguards && t->nlazy > 0; i++)
        if (t->guards[i].lazy)
            lazy_count(t, &t->guards[i]);
    t->nlazy = 0;
    t->dyn_defer = 0;
}

static void lazy_use(trace *t, const var *v, int depth, int *budget);

/* g is an automatic dynamic int's own equality guard (dynint_wrap) */
static int dynint_guard(const trace *t, const dh_guard *g) {
    if (g->kind != DH_G_CONST || g->src < 0 || g->obj == NULL || !PyLong_CheckExact(g->obj))
        return 0;
    for (int k = 0; k < t->ndynv; k++)
        if (t->dynv[k].src == g->src)
            return 1;
    return 0;
}

/* every lazy guard counts but the dynamic ints' own (left lazy: nlazy says how many) */
static void lazy_use_all_but_dynints(trace *t) {
    int left = 0;
    for (int i = 0; i < t->nguards && t->nlazy > left; i++) {
        dh_guard *g = &t->guards[i];
        if (!g->lazy)
            continue;
        if (dynint_guard(t, g))
            left++;
        else
            lazy_count(t, g);
    }
    t->nlazy = left;
}

/* Dynamic ints live across a graph break stay dynamic: the break state hands each to the
 * resume function as int(its graph value) (sym_output.c sym_fill_out), so the break reads
 * them as graph values, not as constants. Every other lazy guard counts, as at any break;
 * what the state holds that can't be walked (records, closures) counts everything. A failure
 * of an inlined frame may become a break of the top frame at its call (the callee then runs
 * eagerly, its trace dropped): its dynamic ints' guards wait (t->dyn_defer) for the outcome:
 * a break walks its state, a failure of the trace or a recovery (the failure caught: the
 * trace goes on with what the failed callee saw) counts them all. */
void sym_lazy_use_break(trace *t, int how) {
    if (how == SYM_LAZY_FAILED_INNER) { /* an inlined frame failed: a break of the top frame may follow */
        lazy_use_all_but_dynints(t);
        t->dyn_defer = t->nlazy > 0;
        return;
    }
    lazy_use_all_but_dynints(t);
    t->dyn_defer = 0;
    if (t->nlazy == 0)
        return;
    int keep = t->dyn_inst, budget = 4096;
    t->dyn_inst = t->cur_inst;
    const sym_break *b = &t->brk;
    int n[4] = {b->fn != NULL, b->args ? b->nargs : 0, b->stack ? b->nstack : 0, b->locals ? b->nlocals : 0};
    const var *vs[4] = {b->fn, b->args, b->stack, b->locals};
    for (int part = 0; part < 4; part++)
        for (int i = 0; i < n[part] && t->nlazy > 0; i++)
            if (vs[part][i].kind != V_UNSET && vs[part][i].kind != V_NULL) /* (zeroed: no source) */
                lazy_use(t, &vs[part][i], 0, &budget);
    t->dyn_inst = keep;
}

static int intexpr_value_guard(trace *t, const struct sym_dynint *d, PyObject *value);

/* budget: vars visited (a list holding itself, shared items): past it, all count */
static void lazy_use(trace *t, const var *v, int depth, int *budget) {
    if (t->nlazy == 0)
        return;
    if (--*budget < 0 || depth > 8) {
        sym_lazy_use_all(t);
        return;
    }
    if (v->kind == V_CONST && v->dyn > 0 && v->dyn <= t->ndynv) {
        /* a dynamic int: read as a graph value by this instruction (kept lazy), or used as a
         * constant: the ints it is computed from are specialized */
        if (t->dyn_inst != 0 && t->dyn_inst == t->cur_inst)
            return;
        if (intexpr_value_guard(t, &t->dynv[v->dyn - 1], v->obj))
            return;
        uint64_t d = t->dynv[v->dyn - 1].deps;
        for (int k = 0; k < t->ndynv && k < 64 && t->nlazy > 0; k++)
            if (d >> k & 1)
                lazy_use_src(t, t->dynv[k].src);
        return;
    }
    if (v->src >= 0)
        lazy_use_src(t, v->src);
    if (v->items == NULL)
        return;
    int n;
    if (v->kind == V_SEQ || v->kind == V_DICT || (v->kind == V_ITER && v->op != SYM_OWN_ITER && v->op != SYM_LAZY_ITER))
        n = v->n;
    else if (v->kind == V_METHOD || v->kind == V_SUPER)
        n = 1;
    else { /* items of another meaning (records, closures, own iterators): all count */
        sym_lazy_use_all(t);
        return;
    }
    for (int i = 0; i < n && t->nlazy > 0; i++)
        lazy_use(t, &v->items[i], depth + 1, budget);
}

void sym_lazy_use(trace *t, const var *v) {
    int budget = 4096;
    if (t->nlazy > 0)
        lazy_use(t, v, 0, &budget);
}

/* pin[src] = 3: the dict at src has its keys pinned in order (DH_G_KEY_ORDER) and is of a C
 * type whose iteration, len and `in` are its storage's (dict, OrderedDict, defaultdict): a
 * DICT_KEY or LENGTH_CHECK guard of it says nothing more. NULL when out of memory (none). */
static unsigned char *keys_pinned(const trace *t) {
    unsigned char *pin = calloc((size_t)t->nsrc + 1, 1);
    for (int i = 0; pin != NULL && i < t->nguards; i++) {
        const dh_guard *g = &t->guards[i];
        if (g->src < 0 || g->src >= t->nsrc || g->lazy)
            continue;
        if (g->kind == DH_G_KEY_ORDER)
            pin[g->src] |= 1;
        else if (g->kind == DH_G_TYPE && PyType_IsSubtype((PyTypeObject *)g->obj, &PyDict_Type) &&
                 !(((PyTypeObject *)g->obj)->tp_flags & Py_TPFLAGS_HEAPTYPE))
            pin[g->src] |= 2;
    }
    return pin;
}

void sym_lazy_drop(trace *t) {
    /* what the entry writes back (attributes, containers rebuilt from their items, globals);
     * a dynamic int, itself or an item of a list written back, is written from the graph
     * (sym_output.c: int(its graph value)), so its own guard stays lazy */
    int keep = t->dyn_inst;
    t->dyn_inst = t->cur_inst = ++t->inst_serial;
    for (int i = 0; i < t->nattrw && t->nlazy > 0; i++)
        if (t->attrw[i].val != NULL)
            sym_lazy_use(t, t->attrw[i].val);
    t->dyn_inst = keep;
    int k = 0;
    unsigned char *pin = keys_pinned(t);
    for (int i = 0; i < t->nguards; i++) {
        dh_guard *g = &t->guards[i];
        if (g->lazy) {
            if (g->src >= 0 && g->src < t->capsrc)
                t->srcdone[g->src] = 3; /* a candidate for sym_mark_unread */
            dh_guard_clear(g);
            continue;
        }
        if ((g->kind == DH_G_KEY || g->kind == DH_G_LEN) && pin != NULL && g->src >= 0 &&
            g->src < t->nsrc && pin[g->src] == 3) {
            dh_guard_clear(g);
            continue;
        }
        t->guards[k++] = t->guards[i];
    }
    free(pin);
    t->nguards = k;
    t->nlazy = 0;
}

/* the sources whose lazy guard sym_lazy_drop dropped (srcdone 3) that nothing of the entry
 * reads (no guard, no other source built on them, no input, output, update or write-back)
 * are left out of e->live, so the guards skip their lookup (a registry of 1000 classes read
 * for one costs one lookup, not 1000) */
static void ref(unsigned char *cand, int n, Py_ssize_t s) {
    if (s >= 0 && s < n)
        cand[s] = 0;
}

static void ref_tuple(unsigned char *cand, int n, PyObject *o, int depth) {
    if (PyLong_CheckExact(o)) {
        ref(cand, n, PyLong_AsSsize_t(o));
        (void)tc_clear_expected(PyExc_OverflowError);
    } else if (PyTuple_Check(o) && depth < 4) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            ref_tuple(cand, n, PyTuple_GET_ITEM(o, i), depth + 1);
    }
}

static void ref_intexpr(unsigned char *cand, int n, PyObject *x, int depth) {
    if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) < 2 || depth > 64)
        return;
    if (PyTuple_GET_SIZE(x) == 2) { /* (DH_IX_SRC, source) */
        ref(cand, n, PyLong_AsSsize_t(PyTuple_GET_ITEM(x, 1)));
        (void)tc_clear_expected(PyExc_OverflowError);
        return;
    }
    for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(x); i++)
        ref_intexpr(cand, n, PyTuple_GET_ITEM(x, i), depth + 1);
}

void sym_mark_unread(trace *t, dh_entry *e) {
    int n = e->nsources, any = 0;
    if (n > t->capsrc)
        return;
    for (int i = 0; i < n && !any; i++)
        any = t->srcdone[i] == 3;
    if (!any)
        return;
    unsigned char *cand = malloc((size_t)n);
    if (cand == NULL)
        return; /* only an optimization: every source stays resolved */
    for (int i = 0; i < n; i++)
        cand[i] = t->srcdone[i] == 3;
    for (int i = 0; i < n; i++) {
        const dh_source *s = &e->sources[i];
        ref(cand, n, s->base); /* whatever its kind: a base of 0 by default keeps source 0 */
        if (s->kind == DH_S_NEW && s->name != NULL)
            ref_tuple(cand, n, s->name, 0);
    }
    for (int i = 0; i < e->nguards; i++) {
        const dh_guard *g = &e->guards[i];
        ref(cand, n, g->src);
        if (g->kind == DH_G_ALIAS)
            ref(cand, n, g->value);
        if ((g->kind == DH_G_SAMEOBJ || g->kind == DH_G_DISTINCT) && g->obj != NULL)
            ref_tuple(cand, n, g->obj, 0);
        if (g->kind == DH_G_INTEXPR)
            ref_intexpr(cand, n, g->obj, 0);
    }
    for (int i = 0; i < e->ninputs; i++)
        ref(cand, n, e->input_src[i]);
    for (int i = 0; i < e->nouts; i++)
        if (e->outs[i].kind == DH_O_SOURCE)
            ref(cand, n, e->outs[i].index);
    for (int i = 0; i < e->nmut; i++) {
        ref(cand, n, e->mut_src[i]);
        if (e->mut_from[i] < 0)
            ref(cand, n, -1 - e->mut_from[i]);
    }
    int nout = e->compiled ? ic_compiled_num_outputs(e->compiled) : 0;
    if (e->out_into_src != NULL)
        for (int i = 0; i < nout; i++)
            ref(cand, n, e->out_into_src[i]);
    for (int i = 0; i < e->nidx; i++)
        ref(cand, n, e->idx_src[i]);
    for (int i = 0; i < e->nattrw; i++)
        ref(cand, n, e->attrw_src[i]);
    int nlive = 0;
    for (int i = 0; i < n; i++)
        nlive += !cand[i];
    if (nlive < n && (e->live = malloc(sizeof(int) * (size_t)(nlive + 1))) != NULL) {
        for (int i = 0; i < n; i++)
            if (!cand[i])
                e->live[e->nlive++] = i;
    }
    free(cand);
}

/* the keys of the dict (subclass) at src in the order the trace saw (a tuple): an iteration
 * traced for one order gives another answer for the same keys in another order, and for a
 * key of another type equal to the one seen (1.0 or True for 1: DICT_KEY passes) */
int sym_guard_key_order(trace *t, int src, PyObject *keys) {
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (src < 0 || n == 0 || (n == 1 && PyUnicode_CheckExact(PyTuple_GET_ITEM(keys, 0))))
        return 0;
    for (int i = 0; i < t->nguards; i++)
        if (t->guards[i].kind == DH_G_KEY_ORDER && t->guards[i].src == src)
            return 0;
    dh_guard *g = new_guard(t, DH_G_KEY_ORDER, src);
    if (g == NULL)
        return -1;
    g->obj = Py_NewRef(keys);
    return 0;
}

int sym_guard_const(trace *t, int src, PyObject *value) {
    if (src >= 0 && t->nlazy > 0)
        lazy_use_src(t, src); /* asked for: it counts */
    if (src < 0 || has_guard(t, DH_G_CONST, src))
        return 0;
    dh_guard *g = new_guard(t, DH_G_CONST, src);
    if (g == NULL)
        return -1;
    g->obj = Py_NewRef(value);
    return 0;
}

int sym_guard_type(trace *t, int src, PyObject *obj) {
    if (src < 0 || has_guard(t, DH_G_TYPE, src))
        return 0;
    dh_guard *g = new_guard(t, DH_G_TYPE, src);
    if (g == NULL)
        return -1;
    g->obj = Py_NewRef((PyObject *)Py_TYPE(obj));
    return 0;
}

int sym_guard_id(trace *t, int src, PyObject *obj) {
    if (src >= 0 && t->nlazy > 0)
        lazy_use_src(t, src); /* asked for: it counts */
    if (src < 0 || has_guard(t, DH_G_ID, src))
        return 0;
    if (t->src[src].kind == DH_S_NEW) /* obj_new.c: a fresh object each call never matches */
        return sym_fail(t, "identity of an object made in the frame (id(), a pinned object)");
    dh_guard *g = new_guard(t, DH_G_ID, src);
    if (g == NULL)
        return -1;
    PyObject *ref = PyWeakref_NewRef(obj, NULL);
    if (ref != NULL) {
        g->obj = ref;
        g->weak = 1;
    } else {
        (void)tc_clear_expected(PyExc_TypeError);
        g->obj = Py_NewRef(obj);
    }
    return 0;
}

int sym_pin_identity(trace *t, const var *v) {
    if (v->kind != V_FUNC || v->src < 0 || v->obj == NULL || !PyFunction_Check(v->obj) ||
        PyFunction_GET_CLOSURE(v->obj) == NULL)
        return 0;
    return sym_guard_id(t, v->src, v->obj);
}

int sym_const(trace *t, PyObject *o, var *out) {
    if (o == NULL)
        return -1;
    memset(out, 0, sizeof *out);
    out->kind = V_CONST;
    out->src = -1;
    out->obj = sym_keep(t, o);
    return out->obj ? 0 : -1;
}

int sym_is_number(const var *v) {
    return v->kind == V_CONST &&
           (PyLong_CheckExact(v->obj) || PyFloat_CheckExact(v->obj) || PyBool_Check(v->obj));
}

PyObject *sym_dtype_object(ic_dtype d) {
    return (unsigned)d < IC_DTYPE_COUNT ? dtype_objs[d] : NULL;
}

int sym_dtype_from_object(PyObject *o) {
    for (int i = 0; i < IC_DTYPE_COUNT; i++)
        if (dtype_objs[i] == o)
            return i;
    return -1;
}

static int ensure_vals(trace *t, ic_val v) {
    if (v < t->capvals)
        return 0;
    int cap = t->capvals ? t->capvals : 64;
    while (cap <= v)
        cap *= 2;
    unsigned char *n = realloc(t->view_of_input, (size_t)cap);
    if (n != NULL)
        t->view_of_input = n;
    PyObject **vd = realloc(t->view_desc, (size_t)cap * sizeof *vd);
    if (vd != NULL)
        t->view_desc = vd;
    if (n == NULL || vd == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(n + t->capvals, 0, (size_t)(cap - t->capvals));
    memset(vd + t->capvals, 0, (size_t)(cap - t->capvals) * sizeof *vd);
    t->capvals = cap;
    return 0;
}

void sym_mark_view(trace *t, ic_val out, ic_val in) {
    if (out < 0 || in < 0 || ensure_vals(t, out > in ? out : in) < 0) {
        /* only an allocation failed: MemoryError stays set, as in eager */
        return;
    }
    if (ic_value_op(t->g, in) == IC_OP_INPUT || (t->view_of_input[in] & 1))
        t->view_of_input[out] |= 1;
}

int sym_new_object(trace *t, ic_val v) {
    if (t->nobj + 1 >= t->capobj) {
        int cap = t->capobj ? 2 * t->capobj : 64;
        ic_val *ov = realloc(t->obj_val, (size_t)cap * sizeof *ov);
        if (ov != NULL)
            t->obj_val = ov;
        unsigned char *oa = realloc(t->obj_aliased, (size_t)cap);
        if (oa != NULL)
            t->obj_aliased = oa;
        int *orr = realloc(t->obj_root, (size_t)cap * sizeof *orr);
        if (orr != NULL)
            t->obj_root = orr;
        if (ov == NULL || oa == NULL || orr == NULL) {
            PyErr_NoMemory();
            return 0;
        }
        memset(oa + t->capobj, 0, (size_t)(cap - t->capobj));
        memset(orr + t->capobj, 0, (size_t)(cap - t->capobj) * sizeof *orr);
        t->capobj = cap;
    }
    int oid = ++t->nobj;
    t->obj_val[oid] = v;
    return oid;
}

void sym_resolve(trace *t, var *v) {
    if (v->kind == V_TENSOR && v->oid > 0 && v->oid <= t->nobj)
        v->val = t->obj_val[v->oid];
    else if (v->kind == V_SEQ || v->kind == V_ITER || v->kind == V_METHOD || v->kind == V_REC)
        for (int i = 0; i < (v->kind == V_METHOD ? 1 : v->n); i++)
            if (v->items)
                sym_resolve(t, &v->items[i]);
}

static int root_of(const trace *t, int oid) {
    return t->obj_root[oid] > 0 ? t->obj_root[oid] : oid;
}

void sym_alias_objects(trace *t, int out_oid, int in_oid) {
    if (out_oid <= 0 || out_oid > t->nobj)
        return;
    t->obj_aliased[out_oid] = 1;
    if (in_oid <= 0 || in_oid > t->nobj)
        return;
    t->obj_aliased[in_oid] = 1;
    t->obj_root[out_oid] = root_of(t, in_oid);
}

int sym_alias_same(trace *t, int a, int b) {
    return a > 0 && b > 0 && a <= t->nobj && b <= t->nobj && root_of(t, a) == root_of(t, b);
}

/* 1 unless the layout (sizes, strides) gives every element an address of its own: the
 * dims of size > 1 taken by increasing |stride| each step past the span of the ones before
 * (a sufficient test: a layout it refuses may still be free of overlap) */
int sym_strides_may_overlap(int ndim, const int64_t *sizes, const int64_t *strides) {
    int order[IC_MAX_DIMS], n = 0;
    for (int d = 0; d < ndim; d++)
        if (sizes[d] > 1)
            order[n++] = d;
    for (int i = 1; i < n; i++) /* insertion sort by |stride| */
        for (int j = i; j > 0 && llabs(strides[order[j]]) < llabs(strides[order[j - 1]]); j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    int64_t span = 1; /* elements' addresses so far lie in [0, span) */
    for (int i = 0; i < n; i++) {
        int64_t st = llabs(strides[order[i]]);
        if (st < span)
            return 1;
        span = st * (sizes[order[i]] - 1) + span;
    }
    return 0;
}

int sym_mutate(trace *t, const var *target, ic_val newval) {
    if (target->kind != V_TENSOR || target->oid <= 0)
        return sym_fail(t, "in-place update of a non-tensor");
    if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
        return sym_fail(t, "in-place update inside a generator");
    if (t->vm_depth > 0)
        return sym_fail(t, "vmap: in-place update inside the mapped function not captured");
    if (newval < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "in-place update failed");
    if (t->obj_aliased[target->oid] && sym_fold_shared(t, target->oid)) /* fold.c */
        return sym_fail(t, "in-place update of a tensor sharing storage with a tensor built from constants "
                           "(left to eager)");
    if (t->infer_depth == 0 && sym_made_in_inference(t, t->obj_val[target->oid]))
        /* y made in an inference_mode() block (or a view of it), updated after the block */
        return sym_fail(t, "in-place update of an inference tensor outside inference_mode (eager will raise)");
    ic_val old = t->obj_val[target->oid];
    ic_meta mo_copy = *ic_value_meta(t->g, old), mn_copy = *ic_value_meta(t->g, newval);
    const ic_meta *mo = &mo_copy, *mn = &mn_copy;
    if (ic_dtype_is_complex(mo->dtype) || ic_dtype_is_complex(mn->dtype)) /* ops_complex.c */
        return sym_fail(t, "in-place update of a complex tensor, or with a complex value, left to eager");
    if (mo->ndim != mn->ndim)
        return sym_fail(t, "in-place result shape differs (eager will raise)");
    for (int d = 0; d < mo->ndim; d++)
        if (mo->sizes[d] != mn->sizes[d])
            return sym_fail(t, "in-place result shape differs (eager will raise)");
    int64_t ost[IC_MAX_DIMS]; /* elements sharing memory (an expand, an overlapping as_strided):
                               * eager raises at most updates of an expand (fill_/zero_ pass)
                               * and applies others element by element in its own order; the
                               * graph's copy-back would raise or keep one write per address */
    int64_t onum = 1; /* (no elements: none share memory) */
    for (int d = 0; d < mo->ndim; d++)
        onum *= mo->sizes[d];
    if (!mo->dyn && onum > 0 && ic_value_strides(t->g, old, ost) && sym_strides_may_overlap(mo->ndim, mo->sizes, ost))
        return sym_fail(t, "in-place update of a tensor whose elements share memory left to eager");
    int ofloat = mo->dtype >= IC_F16, nfloat = mn->dtype >= IC_F16;
    if ((nfloat && !ofloat) || (mn->dtype != IC_BOOL && mo->dtype == IC_BOOL))
        return sym_fail(t, "in-place result dtype can't be cast to the tensor's (eager will raise)");
    if (mn->dtype != mo->dtype) {
        newval = ic_cast(t->g, newval, mo->dtype);
        if (newval < 0)
            return sym_check_graph(t);
    }
    if (dh_layout_keep(t, old, &newval) < 0) /* the tensor keeps its strides (layout.c) */
        return -1;
    if (sym_train_inplace_check(t, target->oid) < 0) /* eager's backward would raise */
        return -1;
    for (int i = 0; i < t->nleaf; i++) /* eager raises for a leaf that requires grad, or its views */
        if (sym_alias_same(t, t->leaf_oid[i], target->oid))
            return sym_fail(t, "in-place update of a tensor made to require grad in the trace, or of a view "
                               "sharing its data (eager decides)");
    if (sym_inplace_note(t, root_of(t, target->oid)) < 0) /* eager's version bumps */
        return -1;
    /* views of it (or its base) still in use: every alias sees the update (alias_fn.c) */
    if (t->obj_aliased[target->oid] && sym_alias_live(t, target->oid))
        return sym_alias_update(t, target->oid, newval);
    t->obj_val[target->oid] = newval;
    return 0;
}

void sym_set_view_desc(trace *t, ic_val v, PyObject *desc) {
    if (v < 0 || ensure_vals(t, v) < 0) {
        /* only an allocation failed: MemoryError stays set, as in eager */
        return;
    }
    t->view_desc[v] = desc;
}

/* Bit 4 of view_of_input: v was made inside an inference_mode() block (eager's tensor is an
 * inference tensor: is_inference(), in-place updates outside the mode raise). Marked when the
 * outermost block is left; values of a block still open count too. */
void sym_mark_inference(trace *t, ic_val from) {
    int n = ic_graph_num_values(t->g);
    if (n > 0 && ensure_vals(t, n - 1) == 0)
        for (ic_val v = from; v < n; v++)
            t->view_of_input[v] |= 4;
}

/* v, or the base of the view chain it is (a view of an inference tensor is one), made in an
 * inference_mode() block */
int sym_made_in_inference(trace *t, ic_val v) {
    for (int depth = 0; v >= 0 && depth < 64; depth++) {
        if (ic_value_op(t->g, v) == IC_OP_INPUT)
            return 0;
        if ((t->infer_depth > 0 && v >= t->infer_from) || (v < t->capvals && (t->view_of_input[v] & 4)))
            return 1;
        PyObject *d = v < t->capvals ? t->view_desc[v] : NULL;
        if (d == NULL)
            return 0;
        v = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(d, 0));
    }
    return 0;
}

int sym_is_view_of_input(trace *t, ic_val v) {
    return v >= 0 && v < t->capvals && (t->view_of_input[v] & 1);
}

/* Bit 2 of view_of_input: v's eager layout depends on the kernel the backend picks at run
 * time (CUDA attention: flash/efficient/cuDNN give [B,L,H,D] transposed, math contiguous). */
void sym_mark_layout_open(trace *t, ic_val v) {
    if (v >= 0 && ensure_vals(t, v) == 0)
        t->view_of_input[v] |= 2;
}

/* 1 when a value at or before v has a run-time layout: v's strides may follow it
 * (a pointwise op of it, a view), so eager's strides are not known at capture */
int sym_layout_open(trace *t, ic_val v) {
    for (ic_val i = 0; i <= v && i < t->capvals; i++)
        if (t->view_of_input[i] & 2)
            return 1;
    return 0;
}

int sym_check_graph(trace *t) {
    if (ic_graph_error(t->g) != NULL)
        return sym_fail(t, "%s", ic_graph_error(t->g));
    return 0;
}

static int is_simple_const(PyObject *o) {
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
        PyComplex_CheckExact(o) || PyUnicode_CheckExact(o) || o == Py_Ellipsis || PyRange_Check(o))
        return 1;
    if (sym_is_enum_member(o)) /* a singleton of its class: guarded by type and == (obj_func.c) */
        return 1;
    if (PyFloat_Check(o) && !strcmp(Py_TYPE(o)->tp_name, "numpy.float64"))
        return 1; /* np.log(...) of numbers (a Python float to torch), crossing a break: by type and == */
    if (sym_dtype_from_object(o) >= 0 || (torch_device_type && Py_TYPE(o) == (PyTypeObject *)torch_device_type))
        return 1; /* torch.dtype (a singleton), torch.device (== and hash by value): dict keys */
    if (PySlice_Check(o)) { /* a slice of ints/None (a closure's or an attribute's): == is its fields' */
        PySliceObject *s = (PySliceObject *)o;
        PyObject *f[3] = {s->start, s->stop, s->step};
        for (int i = 0; i < 3; i++)
            if (f[i] != Py_None && !PyLong_CheckExact(f[i]))
                return 0;
        return 1;
    }
    if (PyTuple_CheckExact(o) || (torch_size_type && Py_TYPE(o) == (PyTypeObject *)torch_size_type)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            if (!is_simple_const(PyTuple_GET_ITEM(o, i)))
                return 0;
        return 1;
    }
    return 0;
}

static ic_dim dim_mul(ic_dim a, ic_dim b) {
    ic_dim r;
    r.coef = a.coef * b.coef;
    for (int k = 0; k < IC_MAX_SYMS; k++)
        r.exp[k] = (uint8_t)(a.exp[k] + b.exp[k]);
    return r;
}

/* ic_reshape for any value: sizes are hint values; on a value with symbolic dims the new
 * dims are derived by grouping (runs of input dims whose product equals a run of output
 * dims): a run with one output dim gets the run's product; a run split into several output
 * dims keeps them static except the one whose static partners divide the product. Hint
 * coincidences can only make this fail or differ from the verification trace (then the
 * frame is specialized), never silently bake a size. */
ic_val sym_reshape(trace *t, ic_val v, int n, const int64_t *sizes_in) {
    const ic_meta *mp = ic_value_meta(t->g, v);
    if (mp == NULL || !mp->dyn || n > IC_MAX_DIMS || n < 0)
        return ic_reshape(t->g, v, n, sizes_in);
    ic_meta m = *mp;
    int64_t sizes[IC_MAX_DIMS], total = 1, known = 1;
    int infer = -1;
    for (int i = 0; i < m.ndim; i++)
        total *= m.sizes[i];
    for (int j = 0; j < n; j++) {
        sizes[j] = sizes_in[j];
        if (sizes[j] == -1 && infer < 0)
            infer = j;
        else
            known *= sizes[j];
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return ic_reshape(t->g, v, n, sizes_in); /* let the builder report it */
        sizes[infer] = total / known;
    }
    ic_dim out[IC_MAX_DIMS];
    int i = 0, j = 0;
    while (i < m.ndim || j < n) {
        /* size-1 dims on either side stand alone */
        if (j < n && sizes[j] == 1 && (i >= m.ndim || m.sizes[i] != 1)) {
            memset(&out[j], 0, sizeof out[j]);
            out[j++].coef = 1;
            continue;
        }
        if (i < m.ndim && m.sizes[i] == 1 && (j >= n || sizes[j] != 1)) {
            i++;
            continue;
        }
        if (i >= m.ndim || j >= n)
            return ic_reshape(t->g, v, n, sizes_in);
        int i0 = i, j0 = j;
        int64_t pa = m.sizes[i++], pb = sizes[j++];
        while (pa != pb) {
            if (pa < pb && i < m.ndim)
                pa *= m.sizes[i++];
            else if (pb < pa && j < n)
                pb *= sizes[j++];
            else
                return ic_reshape(t->g, v, n, sizes_in);
        }
        ic_dim prod = {.coef = 1};
        for (int a = i0; a < i; a++)
            prod = dim_mul(prod, m.dims[a]);
        if (j - j0 == 1) {
            out[j0] = prod;
            continue;
        }
        if (sym_dim_static(prod)) {
            for (int b = j0; b < j; b++) {
                memset(&out[b], 0, sizeof out[b]);
                out[b].coef = sizes[b];
            }
            continue;
        }
        int pick = -1;
        for (int c = j0; c < j && pick < 0; c++) {
            int64_t others = 1;
            for (int b = j0; b < j; b++)
                if (b != c)
                    others *= sizes[b];
            if (others > 0 && prod.coef % others == 0)
                pick = c;
        }
        if (pick < 0) {
            sym_fail(t, "reshape splits a dynamic size (specializing)");
            return IC_NONE;
        }
        for (int b = j0; b < j; b++) {
            memset(&out[b], 0, sizeof out[b]);
            out[b].coef = sizes[b];
        }
        int64_t others = 1;
        for (int b = j0; b < j; b++)
            if (b != pick)
                others *= sizes[b];
        out[pick] = prod;
        out[pick].coef = prod.coef / others;
    }
    return ic_reshape_dyn(t->g, v, n, out);
}

/* symbolic dims of a local tensor argument marked dynamic: symbol ids per dim (-1 static);
 * 0 when none. Contiguous tensors only (the graph input is given contiguous strides). */
static int dyn_dims(trace *t, int src, const tc_meta *m, signed char *sym) {
    if (t->dynmask == NULL || src < 0 || src >= t->nsrc || t->src[src].kind != DH_S_LOCAL ||
        t->src[src].index >= DH_DYN_LOCALS)
        return 0;
    uint32_t mask = t->dynmask[t->src[src].index];
    if ((mask & DH_DYN_ND2) && m->ndim < 2)
        return 0;
    mask &= ~DH_DYN_ND2;
    if (mask == 0)
        return 0;
    int64_t st = 1;
    for (int d = m->ndim - 1; d >= 0; d--) {
        if (m->sizes[d] != 1 && m->strides[d] != st)
            return 0;
        st *= m->sizes[d];
    }
    int any = 0;
    for (int d = 0; d < m->ndim; d++) {
        sym[d] = -1;
        if (d >= 32 || !(mask >> d & 1) || m->sizes[d] < 2)
            continue;
        int k = 0;
        while (k < t->nsym && t->sym_real[k] != m->sizes[d])
            k++;
        if (k == t->nsym) {
            if (t->nsym == IC_MAX_SYMS)
                continue; /* out of symbols: stays static */
            t->sym_real[t->nsym++] = m->sizes[d];
        }
        sym[d] = (signed char)k;
        any = 1;
    }
    return any;
}

/* ---- training (owner: training) ---- */
/* req[i] = 1 for graph inputs that require grad (float) while grad mode is on; returns
 * how many. req holds t->ninputs entries. */
int sym_train_req(trace *t, unsigned char *req) {
    int n = 0;
    for (int i = 0; i < t->ninputs; i++)
        req[i] = 0;
    if (!tc_grad_enabled())
        return 0;
    for (int i = 0; i < t->nguards; i++) {
        const dh_guard *g = &t->guards[i];
        if (g->kind == DH_G_TENSOR && g->input_index >= 0 && g->input_index < t->ninputs &&
            g->meta.requires_grad && g->meta.dtype >= IC_F16 && !req[g->input_index]) {
            req[g->input_index] = 1;
            n++;
        }
    }
    return n;
}

/* torch's requires_grad of graph value v at this point of the trace */
int sym_value_requires_grad(trace *t, ic_val v) {
    if (!tc_grad_enabled() || t->nograd > 0 || (t->ninputs == 0 && t->nleaf == 0))
        return 0;
    unsigned char *req = malloc((size_t)t->ninputs + 1);
    if (req == NULL)
        return 0;
    /* (leaves made in the trace, train_step.c: their values require grad before any input
     * that does is read) */
    int r = (sym_train_req(t, req) > 0 || t->nleaf > 0) && ic_value_requires_grad(t->g, v, req);
    free(req);
    return r;
}

static int wrap_tensor(trace *t, PyObject *o, int src, var *out) {
    tc_meta m;
    tc_tensor_meta(o, &m);
    if (src < 0)
        return sym_fail(t, "tensor without a source");
    if (m.flags & TC_META_TOO_MANY_DIMS)
        return sym_fail(t, "tensor with more than %d dims", TC_MAX_DIMS);
    if (m.flags & TC_META_SPECIAL)
        return sym_fail(t, "unsupported tensor kind (subclass, sparse, quantized, conj/neg view...)");
    if (m.dtype < 0) { /* name it: complex (unitary parametrizations, FFTs) is the usual one */
        PyObject *dt = PyObject_GetAttrString(o, "dtype");
        PyObject *s = dt ? PyObject_Str(dt) : NULL;
        const char *name = s ? PyUnicode_AsUTF8(s) : NULL;
        if (name == NULL)
            (void)tc_clear_expected(PyExc_Exception);
        int r = sym_fail(t, "unsupported dtype %s (torchc graphs have no complex or other such dtype: the frame runs eagerly)",
                         name ? name : "(complex or other)");
        Py_XDECREF(s);
        Py_XDECREF(dt);
        return r;
    }
    if (m.device_type == TC_DEV_CUDA) {
        if (!ic_cuda_available())
            return sym_fail(t, "cuda tensors: the CUDA backend is not available (%s)",
                            ic_cuda_unavailable_reason());
    } else if (m.device_type != TC_DEV_CPU) {
        return sym_fail(t, "device type not supported");
    }
    if (t->device_type < 0) {
        t->device_type = m.device_type;
        t->device_index = m.device_index;
        ic_graph_set_cuda(t->g, m.device_type == TC_DEV_CUDA);
    } else if (t->device_type != m.device_type || t->device_index != m.device_index) {
        return sym_fail(t, "tensors on different devices (eager decides)");
    }
    /* training (issue 22): inputs that require grad are captured; the graph's backward is
     * derived at the end of the trace (symbolic.c, inductor_c/graph/autograd.c) */
    for (int s2 = 0; s2 < t->nsrc && s2 < t->capsrc; s2++)
        if (s2 != src && t->srcobj[s2] == o && t->srcdone[s2] && t->srcvar[s2].kind == V_TENSOR) {
            /* the same tensor through a second source (f(t, t), tied weights): one object */
            dh_guard *ga = new_guard(t, DH_G_ALIAS, src);
            if (ga == NULL)
                return -1;
            ga->value = s2;
            *out = t->srcvar[s2];
            return 0;
        }
    if (src < t->capsrc)
        t->srcobj[src] = o;
    if (t->no_new_inputs) /* autograd_fn.c: a Function's backward being traced */
        return sym_fail(t, "%s", t->no_new_inputs);
    ic_meta im = {0};
    im.dtype = (ic_dtype)m.dtype;
    im.ndim = m.ndim;
    for (int d = 0; d < m.ndim; d++) {
        im.sizes[d] = m.sizes[d];
        im.strides[d] = m.strides[d];
    }
    signed char sym[TC_MAX_DIMS];
    int dyn = dyn_dims(t, src, &m, sym);
    ic_val v;
    if (dyn) {
        /* hints: the real sizes, or (verification trace) other values per symbol */
        int64_t st = 1;
        for (int d = m.ndim - 1; d >= 0; d--) {
            memset(&im.dims[d], 0, sizeof im.dims[d]);
            im.dims[d].coef = m.sizes[d];
            if (sym[d] >= 0) {
                im.dims[d].coef = 1;
                im.dims[d].exp[sym[d]] = 1;
                if (t->dyn_fake)
                    im.sizes[d] = 3 * m.sizes[d] + 7 + sym[d];
            }
            im.strides[d] = st;
            st *= im.sizes[d];
        }
        im.dyn = 1;
        v = ic_input_dyn(t->g, &im);
    } else {
        v = ic_input(t->g, &im);
    }
    if (v < 0)
        return sym_check_graph(t);
    dh_guard *g = new_guard(t, DH_G_TENSOR, src);
    if (g == NULL)
        return -1;
    g->meta = m;
    g->meta.data = NULL;
    g->dyn = dyn;
    if (dyn)
        memcpy(g->sym, sym, sizeof g->sym);
    g->input_index = t->ninputs;
    if (t->ninputs == t->capinputs) {
        int cap = t->capinputs ? 2 * t->capinputs : 8;
        int *n = realloc(t->input_src, (size_t)cap * sizeof *n);
        if (n != NULL)
            t->input_src = n;
        int *o = realloc(t->input_oid, (size_t)cap * sizeof *o);
        if (o != NULL)
            t->input_oid = o;
        if (n == NULL || o == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->capinputs = cap;
    }
    int oid = sym_new_object(t, v);
    if (oid <= 0)
        return -1;
    t->input_oid[t->ninputs] = oid;
    t->input_src[t->ninputs++] = src;
    memset(out, 0, sizeof *out);
    out->kind = V_TENSOR;
    out->src = src;
    out->val = v;
    out->oid = oid;
    return 0;
}

int sym_dim_static(ic_dim d) {
    for (int k = 0; k < IC_MAX_SYMS; k++)
        if (d.exp[k])
            return 0;
    return 1;
}

int sym_symint(trace *t, ic_dim d, var *out) {
    if (sym_dim_static(d))
        return sym_const(t, PyLong_FromLongLong(d.coef), out);
    if (t->nsymv == t->capsymv) {
        int cap = t->capsymv ? 2 * t->capsymv : 16;
        ic_dim *n = realloc(t->symv, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->symv = n;
        t->capsymv = cap;
    }
    memset(out, 0, sizeof *out);
    out->kind = V_SYM;
    out->src = -1;
    out->val = t->nsymv;
    out->obj = Py_NotImplemented;
    t->symv[t->nsymv++] = d;
    return 0;
}

int sym_dim_of(trace *t, const var *v, ic_dim *d) {
    if (v->kind == V_SYM && v->val >= 0 && v->val < t->nsymv) {
        *d = t->symv[v->val];
        return 1;
    }
    if (v->kind == V_CONST && PyLong_CheckExact(v->obj)) {
        long long x = PyLong_AsLongLong(v->obj);
        if (x == -1 && PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_OverflowError);
            return 0;
        }
        memset(d, 0, sizeof *d);
        d->coef = x;
        return 1;
    }
    return 0;
}

/* an object of the typing module (a special form, an alias, a TypeVar) */
static int typing_object(PyObject *o) {
    if (PyType_Check(o) || PyModule_Check(o))
        return 0;
    PyObject *mod = PyObject_GetAttrString((PyObject *)Py_TYPE(o), "__module__");
    int yes = mod != NULL && PyUnicode_Check(mod) &&
              (PyUnicode_CompareWithASCIIString(mod, "typing") == 0 ||
               PyUnicode_CompareWithASCIIString(mod, "typing_extensions") == 0);
    Py_XDECREF(mod);
    if (mod == NULL)
        (void)tc_clear_expected(PyExc_AttributeError);
    return yes;
}

static int wrap_uncached(trace *t, PyObject *o, int src, var *out);

int sym_wrap(trace *t, PyObject *o, int src, var *out) {
    if (src >= 0 && src < t->capsrc && t->srcdone[src]) {
        *out = t->srcvar[src]; /* one source, one tracked value */
        if (t->nlazy > 0 && !out->dyn) /* read again by its source: a lazy dict value counts */
            lazy_use_src(t, src);
        return 0;
    }
    if (src >= 0 && src < t->capsrc && (PyList_CheckExact(o) || PyDict_CheckExact(o))) {
        /* a list/dict already read through another source (hooks' closures and globals
         * reaching one log list): one tracked value, so an update through either is seen
         * through both; the aliasing is pinned by DH_G_SAMEOBJ (sym_add_sameobj_guard) */
        for (int s = 0; s < t->nsrc && s < t->capsrc; s++)
            if (s != src && t->srcdone[s] && t->srcobj[s] == o &&
                ((t->srcvar[s].kind == V_SEQ && t->srcvar[s].is_list) || t->srcvar[s].kind == V_DICT)) {
                if (t->srcobj[src] == NULL && sym_keep(t, Py_NewRef(o)) == NULL)
                    return -1;
                t->srcobj[src] = o;
                if (sym_tobj_add(t, s, o) < 0 || sym_tobj_add(t, src, o) < 0)
                    return -1;
                *out = t->srcvar[s];
                t->srcvar[src] = *out;
                t->srcdone[src] = 1;
                return 0;
            }
    }
    int rc = wrap_uncached(t, o, src, out);
    if (rc == 0 && src >= 0 && src < t->capsrc) {
        t->srcvar[src] = *out;
        t->srcdone[src] = out->kind == V_CONST && out->dyn ? 2 : 1; /* 2: its guard is lazy */
    }
    return rc;
}

/* ---- automatic dynamic ints ------------------------------------------------------------
 * An int read from a source whose value changed between calls (eval_frame.c marks it in the
 * code's cache: dh_mark_dynamic_int) is wrapped as a constant with its exact type guarded and
 * its equality guard lazy: an instruction that consumes it as a constant (a branch, a shape, a
 * call, a return) counts the guard (run_body's lazy tracking), which specializes it as before.
 * Tensor arithmetic (ops_pyops.c), int arithmetic on it (+ - * // %: another dynamic int) and
 * its write-back to an attribute or a global read its graph value instead: a 0-d int64 input
 * (a DH_S_INTT source: a new tensor of the int each call) or ops on it, turned into an int by
 * .item() where it leaves the graph (sym_output.c). Its guard left lazy is dropped: later
 * values reuse the entry (Dynamo's automatic dynamic for ints). */
static int dynint_source(trace *t, PyObject *o, int src) {
    if (dh_tl_dynints == NULL || src < 0 || !PyLong_CheckExact(o) || t->ndynv >= 64 || t->in_gen)
        return 0;
    int ovf = 0;
    long long k = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (ovf || (k == -1 && PyErr_Occurred())) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    if (dh_tl_dynints == Py_True) /* dynamic=True: the int arguments */
        return t->src[src].kind == DH_S_LOCAL &&
               t->src[src].index < t->code->co_argcount + t->code->co_kwonlyargcount;
    PyObject *key = dh_source_str(t->src, src);
    if (key == NULL)
        return -1;
    int in = PySet_Contains(dh_tl_dynints, key);
    Py_DECREF(key);
    return in;
}

/* a tuple of constants some of whose items are marked dynamic ints (guards.c
 * mark_dynamic_tuple_items): wrapped item by item (wrap_uncached's sequence branch) instead of
 * as one constant, so those items become dynamic ints. 0: no (or no source string: one constant),
 * -1: an unexpected error. */
static int tuple_has_dynint(trace *t, int src) {
    if (dh_tl_dynints == NULL || dh_tl_dynints == Py_True || src < 0 || t->in_gen)
        return 0;
    PyObject *base = dh_source_str(t->src, src);
    if (base == NULL)
        return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 0;
    PyObject *key = PyUnicode_FromFormat("%U[]", base); /* guards.c mark_dynamic_tuple_items */
    Py_DECREF(base);
    int in = key == NULL ? -1 : PySet_Contains(dh_tl_dynints, key);
    Py_XDECREF(key);
    return in;
}

static int dynint_new(trace *t, ic_val val, int src, uint64_t deps, PyObject *expr) {
    if (t->ndynv == t->capdynv) {
        int cap = t->capdynv ? 2 * t->capdynv : 8;
        struct sym_dynint *n = realloc(t->dynv, (size_t)cap * sizeof *n);
        if (n == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->dynv = n;
        t->capdynv = cap;
    }
    int k = t->ndynv++;
    t->dynv[k].val = val;
    t->dynv[k].src = src;
    t->dynv[k].deps = deps | (src >= 0 ? (uint64_t)1 << k : 0);
    t->dynv[k].expr = expr;
    return k;
}

static int dynint_wrap(trace *t, PyObject *o, int src, var *out) {
    if (sym_guard_type(t, src, o) < 0) /* exact int (a bool or a float is another entry) */
        return -1;
    dh_guard *g = new_guard(t, DH_G_CONST, src);
    if (g == NULL)
        return -1;
    g->obj = Py_NewRef(o);
    g->lazy = t->cur_inst ? t->cur_inst : -1; /* counted by a use as a constant */
    t->nlazy++;
    t->nlazymade++;
    PyObject *x = sym_keep(t, Py_BuildValue("(in)", (int)DH_IX_SRC, (Py_ssize_t)src));
    int k = x ? dynint_new(t, -1, src, 0, x) : -1;
    if (k < 0)
        return -1;
    out->kind = V_CONST;
    out->obj = sym_keep(t, Py_NewRef(o));
    out->dyn = k + 1;
    return out->obj ? 0 : -1;
}

int sym_dynint_val(trace *t, const var *v, ic_val *out) {
    if (v->kind != V_CONST || v->dyn <= 0 || v->dyn > t->ndynv)
        return 0;
    struct sym_dynint *d = &t->dynv[v->dyn - 1];
    if (d->val >= 0) {
        *out = d->val;
        return 1;
    }
    /* a source's int: a graph input, a 0-d int64 tensor of it made on the graph's device
     * (before any tensor was read, `self.step += 1` first: the device of the frame's first
     * tensor argument; a graph on another device then fails as tensors on two devices do) */
    Py_ssize_t where = t->device_type == TC_DEV_CUDA ? t->device_index : -1;
    if (t->device_type < 0) {
        int nargs = t->code->co_argcount + t->code->co_kwonlyargcount;
        for (int i = 0; i < nargs && i < t->code->co_nlocalsplus; i++) {
            PyObject *a = t->localsplus[i];
            if (a != NULL && tc_is_tensor(a)) {
                tc_meta m;
                tc_tensor_meta(a, &m);
                where = m.device_type == TC_DEV_CUDA ? m.device_index : -1;
                break;
            }
        }
    }
    int s2 = sym_source(t, DH_S_INTT, d->src, where, NULL);
    if (s2 < 0)
        return -1;
    PyObject *tn = dh_int_tensor(v->obj, where); /* borrowed (the scratch list's) */
    if (tn == NULL || sym_keep(t, Py_NewRef(tn)) == NULL)
        return PyErr_Occurred() ? -1 : sym_fail(t, "a dynamic int's tensor could not be made");
    var tv;
    if (sym_wrap(t, tn, s2, &tv) < 0)
        return -1;
    if (tv.kind != V_TENSOR)
        return sym_fail(t, "a dynamic int's input");
    d = &t->dynv[v->dyn - 1]; /* (sym_wrap may not move it, but stay safe) */
    d->val = tv.val;
    *out = tv.val;
    return 1;
}

/* a constant int operand as an int64 graph scalar (exact in a double), or a dynamic int's value */
static int dynint_operand(trace *t, const var *v, ic_val *out, uint64_t *deps) {
    if (v->kind != V_CONST || v->obj == NULL || !PyLong_CheckExact(v->obj))
        return 0;
    if (v->dyn > 0) {
        int r = sym_dynint_val(t, v, out);
        if (r == 1)
            *deps |= t->dynv[v->dyn - 1].deps;
        return r;
    }
    int ovf = 0;
    long long k = PyLong_AsLongLongAndOverflow(v->obj, &ovf);
    if (ovf || (k == -1 && PyErr_Occurred()) || k > ((long long)1 << 53) || k < -((long long)1 << 53)) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    *out = ic_scalar(t->g, (double)k, IC_I64);
    return *out >= 0 ? 1 : sym_check_graph(t);
}

int sym_dynint_binary(trace *t, int nb, const var *a, const var *b, var *out) {
    int base = nb >= 13 ? nb - 13 : nb;
    ic_op op;
    PyObject *r;
    switch (base) {
    case 0: op = IC_OP_ADD; r = PyNumber_Add(a->obj, b->obj); break;
    case 5: op = IC_OP_MUL; r = PyNumber_Multiply(a->obj, b->obj); break;
    case 10: op = IC_OP_SUB; r = PyNumber_Subtract(a->obj, b->obj); break;
    case 2:
    case 6: /* by a constant other than 0 (a dynamic divisor: specialized) */
        if (b->dyn || b->obj == NULL || !PyLong_CheckExact(b->obj) || PyObject_IsTrue(b->obj) != 1)
            return 0;
        op = base == 2 ? IC_OP_FLOOR_DIVIDE : IC_OP_REMAINDER;
        r = base == 2 ? PyNumber_FloorDivide(a->obj, b->obj) : PyNumber_Remainder(a->obj, b->obj);
        break;
    default:
        return 0;
    }
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    int ovf = 0;
    long long k = PyLong_Check(r) ? PyLong_AsLongLongAndOverflow(r, &ovf) : 0;
    if (!PyLong_CheckExact(r) || ovf || t->ndynv >= 64 || t->tfm_active > 0 || t->vm_depth > 0) {
        (void)k;
        Py_DECREF(r);
        (void)tc_clear_expected(PyExc_Exception);
        return 0; /* beyond int64: a constant, as before */
    }
    if (sym_keep(t, r) == NULL)
        return -1;
    ic_val x, y;
    uint64_t deps = 0;
    int ra = dynint_operand(t, a, &x, &deps);
    int rb = ra == 1 ? dynint_operand(t, b, &y, &deps) : ra;
    if (ra < 0 || rb < 0)
        return -1;
    if (ra == 0 || rb == 0)
        return 0;
    ic_val v = ic_binary(t->g, op, x, y);
    if (v < 0)
        return sym_check_graph(t);
    if (ic_value_meta(t->g, v)->dtype != IC_I64 || ic_value_meta(t->g, v)->ndim != 0)
        return 0;
    PyObject *ea = a->dyn ? t->dynv[a->dyn - 1].expr : a->obj, *eb = b->dyn ? t->dynv[b->dyn - 1].expr : b->obj;
    if (ea == NULL || eb == NULL)
        return 0; /* (no expression to guard its range by: a constant) */
    PyObject *ex = sym_keep(t, Py_BuildValue("(iOO)", base, ea, eb));
    if (ex == NULL)
        return -1;
    if (base == 0 || base == 5 || base == 10) {
        /* the graph computes it in int64, Python exactly: guarded to fit int64 (was: k * 4
         * of k = 2**62 wrapped to 0 where eager gives 2**64), as
         * (ex + 2**63) // 2**64 == 0, evaluated on the call's Python ints */
        PyObject *h = PyLong_FromString("9223372036854775808", NULL, 10);
        PyObject *w = h ? PyLong_FromString("18446744073709551616", NULL, 10) : NULL;
        PyObject *add = w ? Py_BuildValue("(iOO)", (int)DH_IX_ADD, ex, h) : NULL;
        PyObject *div = add ? Py_BuildValue("(iNO)", (int)DH_IX_FLOORDIV, add, w) : NULL;
        PyObject *x = div ? Py_BuildValue("(iNi)", (int)DH_IX_CMP + Py_EQ, div, 0) : NULL;
        Py_XDECREF(h);
        Py_XDECREF(w);
        dh_guard *g = x ? new_guard(t, DH_G_INTEXPR, -1) : NULL;
        if (g == NULL) {
            Py_XDECREF(x);
            return -1;
        }
        g->obj = x;
        g->value = 1;
        t->nrangeg++;
    }
    int kk = dynint_new(t, v, -1, deps, ex);
    if (kk < 0)
        return -1;
    *out = sym_var(V_CONST);
    out->obj = r;
    out->dyn = kk + 1;
    t->dyn_inst = t->cur_inst; /* its operands read as graph values: their guards stay lazy */
    return 1;
}

/* Branches on automatic dynamic ints guard their outcome (DH_G_INTEXPR), as torch.compile's
 * symbolic guards do: `if k > 2:` gives one entry for k > 2 and one for k <= 2, not one per
 * k. The outcome is all the trace takes from the ints there, so the guard is exact. Where an
 * int decides more than a bool (a shape, a dim, a loop's count, range(k), a call's argument,
 * an int returned), its use as a constant counts its equality guard (lazy_use): the graph's
 * shapes and the indices it was traced with are fixed for the entry, so it specializes.
 * Past INTEXPR_MAX such guards in one trace (a loop comparing a counter with k each
 * iteration), the ints specialize instead: one equality guard rather than a guard per step. */
#define INTEXPR_MAX 16

static PyObject *ix_operand(trace *t, const var *v) {
    if (v->kind != V_CONST || v->obj == NULL)
        return NULL;
    if (v->dyn > 0)
        return v->dyn <= t->ndynv ? t->dynv[v->dyn - 1].expr : NULL;
    return PyLong_CheckExact(v->obj) || PyFloat_CheckExact(v->obj) ? v->obj : NULL;
}

/* x guarded to have truth r: 1, 0 when not (too many: the caller specializes), -1 failed */
static int intexpr_guard(trace *t, PyObject *x, int r) {
    int n = 0, have = 0;
    for (int i = 0; i < t->nguards && !have; i++) {
        dh_guard *g = &t->guards[i];
        if (g->kind != DH_G_INTEXPR)
            continue;
        n++;
        have = g->value == r ? PyObject_RichCompareBool(g->obj, x, Py_EQ) : 0;
        if (have < 0)
            return -1;
    }
    if (!have) {
        if (n - t->nrangeg >= INTEXPR_MAX) /* (the int64 range guards of sym_dynint_binary not counted) */
            return 0;
        dh_guard *g = new_guard(t, DH_G_INTEXPR, -1);
        if (g == NULL)
            return -1;
        g->obj = Py_NewRef(x);
        g->value = r;
    }
    return 1;
}

/* a computed dynamic int (k % 2, k + 1) used as a constant: its value guarded, not the ints
 * it is computed from (1), or 0 (they specialize) */
static int intexpr_value_guard(trace *t, const struct sym_dynint *d, PyObject *value) {
    if (d->src >= 0 || d->expr == NULL || !PyLong_CheckExact(value))
        return 0;
    PyObject *x = Py_BuildValue("(iOO)", DH_IX_CMP + Py_EQ, d->expr, value);
    int rc = x ? intexpr_guard(t, x, 1) : -1;
    Py_XDECREF(x);
    if (rc < 0)
        (void)tc_clear_expected(PyExc_Exception); /* (MemoryError stays set) */
    return rc == 1;
}

int sym_dynint_compare(trace *t, int cmp, const var *a_in, const var *b_in, var *out) {
    if (cmp < Py_LT || cmp > Py_GE || t->tfm_active > 0 || t->vm_depth > 0)
        return 0;
    var a = *a_in, b = *b_in;
    sym_resolve(t, &a);
    sym_resolve(t, &b);
    if (!(a.kind == V_CONST && a.dyn > 0) && !(b.kind == V_CONST && b.dyn > 0))
        return 0;
    PyObject *ea = ix_operand(t, &a), *eb = ix_operand(t, &b);
    if (ea == NULL || eb == NULL)
        return 0;
    int r = PyObject_RichCompareBool(a.obj, b.obj, cmp);
    if (r < 0)
        return tc_clear_expected(PyExc_Exception) < 0 ? -1 : 0;
    PyObject *x = Py_BuildValue("(iOO)", DH_IX_CMP + cmp, ea, eb);
    if (x == NULL)
        return -1;
    int rc = intexpr_guard(t, x, r);
    Py_DECREF(x);
    if (rc != 1)
        return rc;
    t->dyn_inst = t->cur_inst; /* the ints themselves are not read as constants here */
    return sym_const(t, PyBool_FromLong(r), out) < 0 ? -1 : 1;
}

int sym_dynint_truth(trace *t, const var *v_in, int r) {
    var v = *v_in;
    sym_resolve(t, &v);
    if (v.kind != V_CONST || v.dyn <= 0 || t->tfm_active > 0 || t->vm_depth > 0)
        return 0;
    PyObject *x = ix_operand(t, &v);
    int rc = x == NULL ? 0 : intexpr_guard(t, x, r);
    if (rc == 1)
        t->dyn_inst = t->cur_inst; /* k itself is not read as a constant here */
    return rc;
}

static int torch_class(PyTypeObject *tp) {
    PyObject *m = PyDict_GetItemString(dh_type_dict(tp), "__module__");
    if (m == NULL || !PyUnicode_Check(m))
        return 1; /* unknown: conservative */
    const char *s = PyUnicode_AsUTF8(m);
    if (s == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return 1;
    }
    return !strncmp(s, "torch.", 6) || !strcmp(s, "torch") || !strncmp(s, "torchc", 6);
}

/* x.name: a tensor's bound builtin method held as a value (a stack value at a graph break in
 * x.name(<a call that breaks>), a local): the method of its __self__, traced as x.name is.
 * Guarded by type, __name__ and __self__ (wrapped with its source), not by identity: the
 * bound method is a new object each call, so an identity guard recompiled every call. */
static int wrap_tensor_method(trace *t, PyObject *o, int src, var *out) {
    PyObject *name = PyObject_GetAttrString(o, "__name__");
    if (name == NULL || !PyUnicode_Check(name)) {
        Py_XDECREF(name);
        return name == NULL ? -1 : sym_fail(t, "a tensor's method without a name");
    }
    PyUnicode_InternInPlace(&name);
    PyObject *nn = PyUnicode_InternFromString("__name__"), *ns = nn ? PyUnicode_InternFromString("__self__") : NULL;
    int rc = -1;
    var sv;
    if (ns != NULL && sym_keep(t, Py_NewRef(name)) != NULL) {
        int s_name = sym_source(t, DH_S_ATTR, src, 2, nn);
        int s_self = s_name < 0 ? -1 : sym_source(t, DH_S_ATTR, src, 2, ns);
        if (s_self >= 0 && sym_guard_type(t, src, o) >= 0 && sym_guard_const(t, s_name, name) >= 0 &&
            sym_wrap(t, PyCFunction_GET_SELF(o), s_self, &sv) >= 0)
            rc = sv.kind == V_TENSOR ? sym_method(t, &sv, name, -1, out) : sym_fail(t, "a tensor's method");
    }
    Py_XDECREF(nn);
    Py_XDECREF(ns);
    Py_DECREF(name);
    return rc;
}

static int wrap_uncached(trace *t, PyObject *o, int src, var *out) {
    memset(out, 0, sizeof *out);
    out->src = src;
    if (tc_is_tensor(o))
        return wrap_tensor(t, o, src, out);
    int dyn_items = PyTuple_CheckExact(o) ? tuple_has_dynint(t, src) : 0;
    if (dyn_items < 0)
        return -1;
    if (is_simple_const(o) && !dyn_items) {
        int dyn = dynint_source(t, o, src);
        if (dyn < 0)
            return -1;
        if (dyn)
            return dynint_wrap(t, o, src, out);
        if (sym_guard_const(t, src, o) < 0)
            return -1;
        out->kind = V_CONST;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (PyAnySet_CheckExact(o) && PySet_GET_SIZE(o) <= 256) {
        /* a set/frozenset of simple constants: its value, guarded equal (a copy: the
         * guard must not see later changes to this object) */
        Py_ssize_t pos = 0;
        PyObject *k;
        Py_hash_t h;
        while (_PySet_NextEntry(o, &pos, &k, &h))
            if (!is_simple_const(k))
                return sym_fail(t, "set of non-constant values");
        PyObject *fs = PyFrozenSet_New(o);
        PyObject *gv = fs == NULL ? NULL : PySet_CheckExact(o) ? PySet_New(o) : Py_NewRef(fs);
        if (gv == NULL || sym_keep(t, gv) == NULL || sym_keep(t, fs) == NULL)
            return -1;
        if (sym_guard_const(t, src, gv) < 0)
            return -1;
        out->kind = V_CONST;
        out->obj = fs;
        out->is_list = PySet_CheckExact(o);
        return 0;
    }
    if (PyTuple_CheckExact(o) || PyList_CheckExact(o)) {
        /* a sequence holding tensors: guard its type and length, wrap items */
        Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
        if (n > dh_limit.max_sources)
            return sym_fail(t, "sequence too long (%zd: torchc.config.max_sources)", n);
        if (src >= 0) {
            dh_guard *g = new_guard(t, DH_G_TYPE, src);
            if (g == NULL)
                return -1;
            g->obj = Py_NewRef((PyObject *)Py_TYPE(o));
            g = new_guard(t, DH_G_LEN, src); /* a longer list must not hit this entry */
            if (g == NULL)
                return -1;
            g->value = (int)n;
        }
        /* length is pinned by the ITEM sources failing to resolve past the end; also
         * guard the length through a CONST on len: cheap, via a tuple snapshot of types */
        var *items = sym_alloc(t, (int)n);
        if (items == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int s = src >= 0 ? sym_source(t, DH_S_ITEM, src, i, NULL) : -1;
            if (src >= 0 && s < 0)
                return -1;
            if (sym_wrap(t, PySequence_Fast_GET_ITEM(o, i), s, &items[i]) < 0)
                return -1;
        }
        out->kind = V_SEQ;
        out->is_list = PyList_CheckExact(o);
        out->n = (int)n;
        out->items = items;
        if (src >= 0 && out->is_list) /* the object, for a write-back (sideeffects.c) */
            t->srcobj[src] = sym_keep(t, Py_NewRef(o));
        return 0;
    }
    if (sym_dtype_from_object(o) >= 0 || (torch_device_type && PyObject_TypeCheck(o, (PyTypeObject *)torch_device_type)) ||
        dh_is_memory_format(o)) {
        if (sym_guard_const(t, src, o) < 0)
            return -1;
        out->kind = V_CONST;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (!strcmp(Py_TYPE(o)->tp_name, "re.Pattern")) { /* a compiled regex (immutable): a constant */
        if (sym_guard_id(t, src, o) < 0)
            return -1;
        out->kind = V_CONST;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (PyModule_Check(o)) {
        if (sym_guard_id(t, src, o) < 0)
            return -1;
        out->kind = V_OBJ;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (nn_module_type && PyObject_TypeCheck(o, (PyTypeObject *)nn_module_type)) {
        if (src < 0)
            return sym_fail(t, "nn.Module without a source");
        if (dh_tl_modtype || t->src[src].kind == DH_S_NEW) { /* DH_S_NEW: made afresh each call (ops_loss.c) */
            /* shared module entries (guards.c dh_module_sharing_check): the class, not the
             * instance; what the trace reads of it are guarded sources, 'is' between two
             * modules is kept by DH_G_SAMEOBJ */
            if (sym_guard_type(t, src, o) < 0 || sym_tobj_add(t, src, o) < 0)
                return -1;
        } else if (sym_guard_id(t, src, o) < 0) {
            return -1;
        }
        /* guard training */
        PyObject *name = PyUnicode_InternFromString("training");
        if (name == NULL)
            return -1;
        PyObject *tr = dh_module_getattr(o, name);
        int s = sym_source(t, DH_S_ATTR, src, 0, name);
        Py_DECREF(name);
        if (s < 0) {
            Py_XDECREF(tr);
            return -1;
        }
        if (tr != NULL) {
            int rc = sym_guard_const(t, s, tr);
            Py_DECREF(tr);
            if (rc < 0)
                return -1;
        }
        out->kind = V_OBJ;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (PyCFunction_Check(o) && src >= 0 && PyCFunction_GET_SELF(o) != NULL && tc_is_tensor(PyCFunction_GET_SELF(o)))
        return wrap_tensor_method(t, o, src, out);
    if (PyCallable_Check(o) && sym_is_custom_op(o)) { /* ops_custom.c */
        if (sym_guard_id(t, src, o) < 0)
            return -1;
        out->kind = V_FUNC;
        out->op = SYM_CUSTOM_OP;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (PyCallable_Check(o)) {
        int op = sym_func_op(o);
        if (op < 0 && sym_predicate(o) >= 0) {
            out->kind = V_FUNC;
            out->op = SYM_PREDICATE;
            out->obj = sym_keep(t, Py_NewRef(o));
            return out->obj ? 0 : -1;
        }
        if (op >= 0 || PyCFunction_Check(o) || PyType_Check(o) || sym_is_np_ufunc(o)) {
            if (sym_guard_id(t, src, o) < 0)
                return -1;
            out->kind = V_FUNC;
            out->op = op;
            out->obj = sym_keep(t, Py_NewRef(o));
            return out->obj ? 0 : -1;
        }
        if (sym_predicate(o) >= 0) { /* torch.compiler.is_compiling & co: answered */
            out->kind = V_FUNC;
            out->op = SYM_PREDICATE;
            out->obj = sym_keep(t, Py_NewRef(o));
            return out->obj ? 0 : -1;
        }
        if (PyFunction_Check(o)) {
            if (src < 0)
                return sym_fail(t, "function %S reached without a source",
                                ((PyFunctionObject *)o)->func_qualname);
            if (PyFunction_GET_CLOSURE(o) != NULL && t->src[src].kind != DH_S_CONST &&
                !(t->src[src].kind == DH_S_ITEM && t->src[src].name != NULL) && !sym_obj_is_special_func(o)) {
                /* a nested function (a closure): made afresh by each call of the function
                 * that defines it, so guarded by its exact type and its code, not its
                 * identity (Dynamo's CLOSURE_MATCH); what the trace reads of it (closure
                 * contents, defaults, globals) is read through sources of this one, its
                 * calls' side effects replayed through them. Where its identity matters
                 * ('is', a set, an object the trace hands on) sym_pin_identity guards it;
                 * which of its sources are one object is guarded (DH_G_SAMEOBJ). A dict's
                 * value (a registry of functions) keeps its identity guard, which stays
                 * lazy while unread (the dict's wrap). */
                static PyObject *s_code;
                if (s_code == NULL && (s_code = PyUnicode_InternFromString("__code__")) == NULL)
                    return -1;
                int sc = sym_source(t, DH_S_ATTR, src, 2, s_code);
                if (sc < 0 || sym_guard_type(t, src, o) < 0 || sym_guard_id(t, sc, PyFunction_GET_CODE(o)) < 0 ||
                    sym_tobj_add(t, src, o) < 0)
                    return -1;
            } else if (sym_guard_id(t, src, o) < 0) {
                return -1;
            }
            out->kind = V_FUNC;
            out->op = SYM_USER_FUNCTION;
            out->obj = sym_keep(t, Py_NewRef(o));
            return out->obj ? 0 : -1;
        }
    }
    int ddict = sym_data_is_defaultdict(o);
    if ((PyDict_CheckExact(o) || ddict) && src >= 0 && PyDict_GET_SIZE(o) > dh_limit.max_dict_items)
        return sym_fail(t, "a dict of %zd items, more than torchc.config.max_dict_items (%d)", PyDict_GET_SIZE(o),
                        dh_limit.max_dict_items);
    if ((PyDict_CheckExact(o) || ddict) && src >= 0) {
        /* a dict: type and length guarded, every item wrapped (constant values guarded lazily); a
         * defaultdict (GradScaler's per-optimizer states): its default_factory identity-guarded,
         * called by the trace for a missing key (sym_containers.c) */
        Py_ssize_t n = PyDict_GET_SIZE(o), pos = 0;
        PyObject *k, *v, *keys = PyTuple_New(n);
        var *vals = sym_alloc(t, (int)n);
        if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL)
            return -1;
        dh_guard *g = new_guard(t, DH_G_TYPE, src);
        if (g == NULL)
            return -1;
        g->obj = Py_NewRef((PyObject *)Py_TYPE(o));
        PyObject *factory = Py_None;
        int fop = -1;
        if (ddict) {
            static PyObject *s_factory;
            if (s_factory == NULL && (s_factory = PyUnicode_InternFromString("default_factory")) == NULL)
                return -1;
            factory = PyObject_GetAttr(o, s_factory);
            if (factory == NULL || sym_keep(t, factory) == NULL)
                return -1;
            int fs = sym_source(t, DH_S_ATTR, src, 2, s_factory);
            if (fs < 0 || sym_guard_id(t, fs, factory) < 0)
                return -1;
            if (factory != Py_None) {
                var fv;
                if (sym_wrap(t, factory, fs, &fv) < 0)
                    return -1;
                if (fv.kind != V_FUNC || fv.obj != factory)
                    return sym_fail(t, "defaultdict with this default_factory not supported");
                fop = fv.op;
            }
        }
        g = new_guard(t, DH_G_LEN, src);
        if (g == NULL)
            return -1;
        g->value = (int)n;
        int i = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {
            /* keys: constants with a stable hash and value (str, int, bool, None, tuples
             * of them); each item is found by its key when the guards run */
            /* or objects compared by identity (classes, typing's special forms: a registry
             * keyed by type): a kept key finds the same item while the dict holds it */
            int ident = Py_TYPE(k)->tp_hash == PyBaseObject_Type.tp_hash &&
                        Py_TYPE(k)->tp_richcompare == PyBaseObject_Type.tp_richcompare;
            if ((!is_simple_const(k) && !ident) || PyFloat_CheckExact(k))
                return sym_fail(t, "dict with keys that are not simple constants");
            if (i >= n) /* changed size while its items were wrapped */
                return sym_fail(t, "dict changed size while traced");
            PyTuple_SET_ITEM(keys, i, Py_NewRef(k));
            int s = sym_source(t, DH_S_ITEM, src, -1, k);
            if (s < 0)
                return -1;
            /* a constant value of a plain dict: its equality guard is lazy, counted once the
             * trace reads the value (sym_lazy_use: symbolic.c, on each instruction that
             * consumes it, or anything holding it); the key's presence is guarded by the
             * dict's DICT_KEYS_ORDER (the item's source no longer says it). A learning rate
             * in an optimizer's param group, which only the step reads, then changes without
             * a recompile. So is a value guarded by identity alone (a class, a function: a
             * registry of 1000 read for one costs O(1) guards, sym_mark_unread). */
            int ng = t->nguards, ns = t->nsrc;
            int lazy = PyDict_CheckExact(o) && !(s < t->capsrc && t->srcdone[s]);
            if (sym_wrap(t, v, s, &vals[i++]) < 0)
                return -1;
            dh_guardkind gk = t->nguards == ng + 1 ? t->guards[ng].kind : DH_G_TENSOR;
            if (lazy && t->nsrc == ns && gk != DH_G_TENSOR && t->guards[ng].src == s &&
                ((gk == DH_G_CONST && is_simple_const(k) && is_simple_const(v)) || gk == DH_G_ID)) {
                t->guards[ng].lazy = t->cur_inst ? t->cur_inst : -1;
                t->nlazy++;
                t->nlazymade++;
                t->srcdone[s] = 2;
                /* the key's presence: DICT_KEYS_ORDER's below, but for one str key */
                int has = n == 1 && PyUnicode_CheckExact(k) ? sym_guard_key(t, src, o, k) : 1;
                if (has < 0)
                    return -1;
                if (has != 1)
                    return sym_fail(t, "dict key lookup failed");
            }
        }
        if (i != n)
            return sym_fail(t, "dict changed size while traced");
        if (sym_guard_key_order(t, src, keys) < 0)
            return -1;
        out->kind = V_DICT;
        out->obj = keys;
        out->items = vals;
        out->n = i;
        if (ddict) {
            out->op = SYM_DICT_DEFAULT;
            out->globals = factory;
            out->pos = fop;
        }
        t->srcobj[src] = sym_keep(t, Py_NewRef(o)); /* for a write-back (sideeffects.c) */
        return 0;
    }
    if (src >= 0 && PyContextVar_CheckExact(o)) { /* a module-level ContextVar: itself */
        if (sym_guard_id(t, src, o) < 0)
            return -1;
        out->kind = V_OBJ;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (src >= 0 && !PyType_Check(o) &&
        (Py_TYPE(o)->tp_dictoffset != 0 || PyCallable_Check(o) || sym_slots_class(Py_TYPE(o)))) {
        /* any other object: attributes are read through guarded sources. Instances of
         * Python classes are type-guarded (objects made afresh each call, a cache or a
         * config, must not recompile every call; 'is' between two of them guards their
         * identity then), others identity-guarded. */
        int plain = (Py_TYPE(o)->tp_flags & Py_TPFLAGS_HEAPTYPE) != 0 &&
                    (!torch_class(Py_TYPE(o)) || t->src[src].kind == DH_S_NEW);
                    /* torch's own (a grad-mode context: its mode is read as traced) stay
                     * pinned, unless made afresh each call (obj_new.c) */
        if ((plain ? sym_guard_type(t, src, o) : sym_guard_id(t, src, o)) < 0)
            return -1;
        if (plain && sym_tobj_add(t, src, o) < 0)
            return -1;
        out->kind = V_OBJ;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (src >= 0 && sym_lazy_iter_type(o)) /* an iterator passed in (obj_iter.c) */
        return sym_lazy_iter_wrap(t, o, src, out);
    if (!strcmp(Py_TYPE(o)->tp_name, "types.UnionType") || Py_IS_TYPE(o, &Py_GenericAliasType)) {
        /* int | None, list[int] (a dataclass field's type): immutable, identity-guarded (==
         * ignores the order of a union's __args__, which get_args returns) */
        if (sym_guard_id(t, src, o) < 0)
            return -1;
        out->kind = V_CONST;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    if (typing_object(o)) {
        /* typing.Callable, typing.Optional, Callable[[T], Any], a TypeVar: annotations,
         * immutable: itself, identity-guarded where read from a source */
        if (src >= 0 && sym_guard_id(t, src, o) < 0)
            return -1;
        out->kind = V_CONST;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    int drc = sym_data_wrap(t, o, src, out); /* obj_data.c: Field, torch.return_types */
    if (drc != 1)
        return drc;
    if (torch_dtype_type && PyObject_TypeCheck(o, (PyTypeObject *)torch_dtype_type)) /* complex64 & co */
        return sym_fail(t, "unsupported dtype %R (torchc graphs have no complex or other such dtype)", o);
    if (PyComplex_Check(o))
        return sym_fail(t, "Python complex number %R (torchc graphs have no complex dtype)", o);
    return sym_fail(t, "unsupported Python value of type %s", Py_TYPE(o)->tp_name);
}

static PyObject *grad_ctx_types[4];
static PyObject *container_types[2];

int sym_is_grad_ctx(PyObject *o) {
    for (int i = 0; i < 4; i++)
        if (grad_ctx_types[i] && (PyObject *)Py_TYPE(o) == grad_ctx_types[i])
            return 1;
    return 0;
}

int sym_is_inference_mode(PyObject *ctx) {
    return grad_ctx_types[1] && (PyObject *)Py_TYPE(ctx) == grad_ctx_types[1];
}

int sym_is_set_grad_enabled(PyObject *ctx) {
    return grad_ctx_types[3] && (PyObject *)Py_TYPE(ctx) == grad_ctx_types[3];
}

int sym_grad_ctx_turns_on(PyObject *ctx) {
    if (grad_ctx_types[2] && (PyObject *)Py_TYPE(ctx) == grad_ctx_types[2])
        return 1;
    if (!grad_ctx_types[3] || (PyObject *)Py_TYPE(ctx) != grad_ctx_types[3])
        return 0;
    PyObject *mode = PyObject_GetAttrString(ctx, "mode");
    if (mode == NULL)
        return tc_clear_expected(PyExc_AttributeError) < 0 ? -1 : 0;
    int on = PyObject_IsTrue(mode);
    Py_DECREF(mode);
    return on < 0 ? -1 : on;
}

int sym_is_grad_ctx_type(PyObject *tp) {
    for (int i = 0; i < 4; i++)
        if (grad_ctx_types[i] && tp == grad_ctx_types[i])
            return 1;
    return 0;
}

int sym_is_nn_module_type(PyObject *cls) {
    return nn_module_type && PyType_Check(cls) &&
           PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)nn_module_type);
}

PyObject *sym_module_list_type(void) { return container_types[1]; }

PyObject *sym_nn_module_type(void) { return nn_module_type; }

int sym_is_nn_module(PyObject *o) {
    return nn_module_type && PyObject_TypeCheck(o, (PyTypeObject *)nn_module_type);
}

/* nn.Sequential / nn.ModuleList and their subclasses (torchvision's Conv2dNormActivation)
 * whose `slot` (__iter__, __getitem__, forward, ...) is still the container's own:
 * iterating/indexing them walks _modules in order, as the container does. */
int sym_is_module_container(PyObject *o, const char *slot) {
    for (int i = 0; i < 2; i++) {
        PyTypeObject *ct = (PyTypeObject *)container_types[i];
        if (ct == NULL || !PyObject_TypeCheck(o, ct))
            continue;
        if (slot == NULL || Py_TYPE(o) == ct)
            return 1;
        PyObject *name = PyUnicode_InternFromString(slot);
        if (name == NULL) {
            /* only an allocation failed: MemoryError stays set, as in eager */
            return 0;
        }
        PyObject *mine = _PyType_Lookup(Py_TYPE(o), name), *base = _PyType_Lookup(ct, name);
        Py_DECREF(name);
        return mine != NULL && mine == base;
    }
    return 0;
}

/* Tracing predicates answered while tracing: torch.compiler.is_compiling() and its aliases
 * True, as under torch.compile (guards.c dh_is_compiling_fn); jit tracing/scripting and
 * export False, as eager sees them; process state asked and guarded (2) */
static PyObject *pred_obj[12];
static int pred_val[12], npred;

static void add_pred(const char *mod, const char *name, int val) {
    PyObject *m = PyImport_ImportModule(mod), *f = m ? PyObject_GetAttrString(m, name) : NULL;
    Py_XDECREF(m);
    if (f == NULL) {
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return;
    }
    if (npred < 12) {
        pred_obj[npred] = f; /* kept for the process */
        pred_val[npred++] = val;
    } else {
        Py_DECREF(f);
    }
}

int sym_predicate(PyObject *o) {
    if (dh_is_compiling_fn(o)) /* torch.compiler.is_compiling and its aliases: True */
        return 1;
    for (int i = 0; i < npred; i++)
        if (pred_obj[i] == o)
            return pred_val[i];
    return -1;
}

int sym_variables_init(void) {
    static const char *names[IC_DTYPE_COUNT] = {"bool", "uint8", "int8", "int16", "int32",
                                                "int64", "float16", "bfloat16", "float32",
                                                "float64", "complex64", "complex128"};
    torch_module = PyImport_ImportModule("torch");
    if (torch_module == NULL)
        return -1;
    for (int i = 0; i < IC_DTYPE_COUNT; i++) {
        dtype_objs[i] = PyObject_GetAttrString(torch_module, names[i]);
        if (dtype_objs[i] == NULL)
            return -1;
    }
    /* torch's grad-mode contexts (sym_call.c sym_op_before_with: enable_grad and
     * set_grad_enabled(True) where grad mode is on outside the traced code) */
    static const char *ctx[4] = {"no_grad", "inference_mode", "enable_grad", "set_grad_enabled"};
    for (int i = 0; i < 4; i++) {
        grad_ctx_types[i] = PyObject_GetAttrString(torch_module, ctx[i]);
        if (grad_ctx_types[i] == NULL)
            (void)tc_clear_expected(PyExc_AttributeError);
    }
    torch_size_type = PyObject_GetAttrString(torch_module, "Size");
    torch_dtype_type = PyObject_GetAttrString(torch_module, "dtype");
    torch_device_type = PyObject_GetAttrString(torch_module, "device");
    PyObject *nn = PyImport_ImportModule("torch.nn");
    if (nn == NULL)
        return -1;
    nn_module_type = PyObject_GetAttrString(nn, "Module");
    container_types[0] = PyObject_GetAttrString(nn, "Sequential");
    container_types[1] = PyObject_GetAttrString(nn, "ModuleList");
    if (!container_types[0] || !container_types[1])
        (void)tc_clear_expected(PyExc_AttributeError);
    Py_DECREF(nn);
    add_pred("torch.compiler", "is_exporting", 0);
    add_pred("torch.jit", "is_tracing", 0);
    add_pred("torch.jit", "is_scripting", 0);
    add_pred("torch._C", "_is_tracing", 0);
    PyObject *os = PyImport_ImportModule("os");
    os_environ = os ? PyObject_GetAttrString(os, "environ") : NULL; /* kept */
    Py_XDECREF(os);
    (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
    /* process state: asked while tracing, the answer guarded */
    add_pred("torch.cuda", "is_current_stream_capturing", 2);
    add_pred("torch.xpu", "is_current_stream_capturing", 2);
    if (!torch_size_type || !torch_dtype_type || !torch_device_type || !nn_module_type)
        return -1;
    return 0;
}
