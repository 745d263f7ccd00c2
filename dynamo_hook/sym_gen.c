/* sym_gen.c — generators run lazily, as eager runs them (issue 21 item 1).
 *
 * Calling a generator function (a genexpr, a `def` with yield, the function behind a
 * @contextlib.contextmanager) binds its arguments and stops at RETURN_GENERATOR: the value is
 * a V_GEN, an index into t->gens, whose frame (trace lifetime) stays suspended. Each step
 * (next(), FOR_ITER, SEND of a `yield from`, a `with` block's enter and exit) resumes the
 * frame with None sent until its next YIELD_VALUE (SYM_YIELD) or its return. So the body's
 * side effects and graph ops happen where eager does them, interleaved with the consumer's.
 * A consumer that takes every item (list(), tuple(), zip(), sum(), all(), ...: sym_iter_items)
 * runs it to the end, refusing side effects there (t->in_gen): all()/any() may stop early.
 *
 * Contract: a V_GEN is never rebuilt as a Python object, so a frame that would break with
 * one live fails instead (sym_output.c refuses the kind); a generator left suspended inside
 * a try/with fails the trace at its end (eager's close() would run its cleanup when it is
 * collected: sym_gen_unclosed). send(v) resumes it with v (sym_gen_send); throw()/close()
 * are not modelled (other attribute reads of a V_GEN fail).
 */
#include "sym_interp.h"
#include "sym_sem.h"

#include <string.h>

enum { GEN_NEW, GEN_SUSPENDED, GEN_RUNNING, GEN_DONE };

typedef struct sym_gen {
    sframe *f;   /* the generator's frame (a sym_alloc'd block: freed with the trace) */
    int state;   /* GEN_* */
    int mk_pc;   /* the top frame's instruction that made it (break_at_with), -1: unknown */
} sym_gen;

/* trace-lifetime zeroed memory of `size` bytes (whole vars of a sym_alloc chunk) */
static void *gen_mem(trace *t, size_t size) {
    return sym_alloc(t, (int)((size + sizeof(var) - 1) / sizeof(var)));
}

sframe *sym_gen_frame_new(trace *t) {
    return gen_mem(t, sizeof(sframe));
}

static sym_gen *gen_of(trace *t, const var *v) {
    if (v->kind != V_GEN || v->val < 0 || v->val >= t->ngens)
        return NULL;
    return ((sym_gen **)t->gens)[v->val];
}

/* f (made by sym_gen_frame_new, stopped at RETURN_GENERATOR) becomes generator *out */
int sym_gen_new(trace *t, sframe *f, int cm, var *out) {
    if (t->ngens == t->capgens) { /* grown into a new trace-lifetime block */
        int cap = t->capgens ? 2 * t->capgens : 8;
        sym_gen **g = gen_mem(t, sizeof(sym_gen *) * (size_t)cap);
        if (g == NULL)
            return -1;
        if (t->ngens)
            memcpy(g, t->gens, sizeof(sym_gen *) * (size_t)t->ngens);
        t->gens = (void **)g;
        t->capgens = cap;
    }
    sym_gen *g = gen_mem(t, sizeof *g);
    if (g == NULL)
        return -1;
    g->f = f;
    g->state = GEN_NEW;
    g->mk_pc = t->top_frame != NULL ? t->top_frame->pc : -1;
    ((sym_gen **)t->gens)[t->ngens] = g;
    *out = sym_var(V_GEN);
    out->val = t->ngens++;
    out->op = cm;
    return 0;
}

int sym_gen_made_at(trace *t, const var *v) {
    sym_gen *g = gen_of(t, v);
    return g != NULL ? g->mk_pc : -1;
}

static int gen_resume(trace *t, const var *gv, const var *sent, var *out);

/* One step: 1 yielded (*out the value), 0 returned (*out the return value), -1 failed. */
int sym_gen_step(trace *t, const var *gv, var *out) { return gen_resume(t, gv, NULL, out); }

/* gen.send(v): the suspended yield receives v (a just-started generator only None, as eager:
 * TypeError otherwise); 1 yielded (*out the value); a return fails the trace (eager raises
 * StopIteration, not made here); -1 failed */
int sym_gen_send(trace *t, const var *gv, const var *v, var *out) {
    sym_gen *g = gen_of(t, gv);
    if (g == NULL || gv->op != 0)
        return sym_fail(t, "send() of a generator context manager");
    int none = v->kind == V_CONST && v->obj == Py_None;
    if (g->state == GEN_NEW && !none) {
        PyObject *msg = PyUnicode_FromString("can't send non-None value to a just-started generator");
        int rc = msg ? sym_raise(t, PyExc_TypeError, msg, "send() of a value to a just-started generator "
                                                          "(eager raises TypeError)") : -1;
        Py_XDECREF(msg);
        return rc;
    }
    if (g->state == GEN_DONE)
        return sym_fail(t, "send() to an exhausted generator (eager raises StopIteration)");
    int rc = gen_resume(t, gv, none ? NULL : v, out);
    if (rc == 0)
        return sym_fail(t, "send() made the generator return (eager raises StopIteration)");
    return rc;
}

static int gen_resume(trace *t, const var *gv, const var *sent, var *out) {
    sym_gen *g = gen_of(t, gv);
    if (g == NULL)
        return sym_fail(t, "not a generator");
    if (g->state == GEN_RUNNING)
        return sym_fail(t, "generator already executing (eager raises ValueError)");
    if (g->state == GEN_DONE)
        return sym_const(t, Py_NewRef(Py_None), out) < 0 ? -1 : 0;
    if (t->depth >= dh_limit.inline_depth || t->depth >= SYM_INLINE_DEPTH)
        return sym_fail(t, "inlining deeper than %d calls (torchc.config.inline_depth)",
                        dh_limit.inline_depth);
    sframe *f = g->f;
    var none;
    if (sym_const(t, Py_NewRef(Py_None), &none) < 0)
        return -1;
    if (f->sp >= STACK_MAX)
        return sym_fail(t, "symbolic stack overflow");
    f->stack[f->sp++] = sent ? *sent : none; /* what the suspended yield (or RETURN_GENERATOR) receives */
    g->state = GEN_RUNNING;
    t->depth++;
    PyObject *saved_globals = t->cur_globals;
    t->cur_globals = f->globals;
    int rc = sym_run_frame(t, f, out);
    t->cur_globals = saved_globals;
    t->depth--;
    if (rc == SYM_YIELD) {
        g->state = GEN_SUSPENDED;
        return 1;
    }
    g->state = GEN_DONE;
    return rc == 0 ? 0 : rc < 0 ? -1 : sym_fail(t, "graph break inside a generator");
}

/* Every remaining item (a consumer that drains it): side effects refused meanwhile. */
int sym_gen_drain(trace *t, const var *gv, var **items, int *n) {
    if (gv->op != 0)
        return sym_fail(t, "iteration over a generator context manager (eager raises)");
    int cap = 8, k = 0, rc;
    var *it = sym_alloc(t, cap), v;
    if (it == NULL)
        return -1;
    t->in_gen++;
    while ((rc = sym_gen_step(t, gv, &v)) == 1) {
        if (k == cap) {
            var *m = sym_alloc(t, 2 * cap);
            if (m == NULL) {
                rc = -1;
                break;
            }
            memcpy(m, it, sizeof(var) * (size_t)k);
            it = m;
            cap *= 2;
        }
        it[k++] = v;
    }
    t->in_gen--;
    if (rc < 0)
        return -1;
    *items = it;
    *n = k;
    return 0;
}

/* values the suspended generators hold are live (aliasing checks) */
int sym_gen_live(trace *t, int (*live)(trace *, const var *, int, int, int), int oid) {
    for (int i = 0; i < t->ngens; i++) {
        sym_gen *g = ((sym_gen **)t->gens)[i];
        if (g->state != GEN_NEW && g->state != GEN_SUSPENDED)
            continue;
        if (live(t, g->f->stack, g->f->sp, oid, 0) || live(t, g->f->locals, g->f->nlocals, oid, 0) ||
            (g->f->closure && live(t, g->f->closure, g->f->nclosure, oid, 0)))
            return 1;
    }
    return 0;
}

/* the opcode named `name` in this interpreter's dis.opmap, -1 where there is none */
static int opmap_lookup(const char *name) {
    PyObject *dis = PyImport_ImportModule("dis");
    PyObject *map = dis ? PyObject_GetAttrString(dis, "opmap") : NULL;
    PyObject *v = map ? PyDict_GetItemString(map, name) : NULL;
    int op = v ? (int)PyLong_AsLong(v) : -1;
    Py_XDECREF(map);
    Py_XDECREF(dis);
    (void)tc_clear_expected(PyExc_Exception);
    return op;
}

/* CALL_INTRINSIC_1 and CLEANUP_THROW (both 3.12; -1 on 3.11) */
static int intrinsic_opcode(void) {
    static int op = -2;
    if (op == -2)
        op = opmap_lookup("CALL_INTRINSIC_1");
    return op;
}

static int cleanup_throw_opcode(void) {
    static int op = -2;
    if (op == -2)
        op = opmap_lookup("CLEANUP_THROW");
    return op;
}

/* Whether generator g is suspended inside a try/with of its own code (1), or only inside what
 * the compiler adds to every generator (0): 3.12's whole-body handler that turns StopIteration
 * into RuntimeError (CALL_INTRINSIC_1 INTRINSIC_STOPITERATION_ERROR), and the CLEANUP_THROW
 * handler around the yield of every `yield from` (a throw() into the delegating generator);
 * the handler that covers CLEANUP_THROW itself is what a throw would reach next. */
static int gen_in_user_handler(sym_gen *g) {
    PyObject *bytes = PyCode_GetCode(g->f->code);
    if (bytes == NULL)
        return -1;
    const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    int pc = g->f->pc, r = 1; /* past 64 handlers: in one, the safe answer */
    for (int hops = 0; hops < 64; hops++) {
        int depth, lasti;
        int h = sym_exc_handler(g->f->code, pc, &depth, &lasti);
        if (h < 0 || 2 * h + 1 >= n) {
            r = 0;
            break;
        }
        if (code[2 * h] == intrinsic_opcode() && code[2 * h + 1] == 3) { /* INTRINSIC_STOPITERATION_ERROR */
            r = 0;
            break;
        }
        if (cleanup_throw_opcode() >= 0 && code[2 * h] == cleanup_throw_opcode() && h != pc) {
            pc = h;
            continue;
        }
        r = 1;
        break;
    }
    Py_DECREF(bytes);
    return r;
}

int sym_gen_unclosed(trace *t) {
    for (int i = 0; i < t->ngens; i++) {
        sym_gen *g = ((sym_gen **)t->gens)[i];
        if (g->state != GEN_SUSPENDED)
            continue;
        int r = gen_in_user_handler(g);
        if (r != 0)
            return r;
    }
    return 0;
}

/* ---- @contextlib.contextmanager ------------------------------------------------------ */

static PyObject *cm_helper_code; /* the code of contextlib's helper (what the decorator returns) */

static int cm_init(void) {
    if (cm_helper_code != NULL)
        return 0;
    PyObject *ns = PyDict_New();
    PyObject *r = ns ? PyRun_String("import contextlib\n"
                                    "def _g():\n    yield\n"
                                    "_h = contextlib.contextmanager(_g)\n",
                                    Py_file_input, ns, ns)
                     : NULL;
    PyObject *h = r ? PyDict_GetItemString(ns, "_h") : NULL;
    if (h != NULL && PyFunction_Check(h))
        cm_helper_code = Py_NewRef(PyFunction_GET_CODE(h)); /* kept */
    else
        cm_helper_code = Py_None;
    Py_XDECREF(r);
    Py_XDECREF(ns);
    return tc_clear_expected(PyExc_Exception);
}

/* cm(*args) where cm is a @contextlib.contextmanager function: its generator, suspended at the
 * start, as a context manager (V_GEN op 1). 1: fn is not one. */
int sym_gen_cm_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (fn->kind != V_FUNC || fn->op != SYM_USER_FUNCTION || fn->obj == NULL ||
        !PyFunction_Check(fn->obj) || cm_init() < 0)
        return PyErr_Occurred() ? -1 : 1;
    if (PyFunction_GET_CODE(fn->obj) != cm_helper_code)
        return 1;
    PyCodeObject *hc = (PyCodeObject *)cm_helper_code;
    PyObject *cl = PyFunction_GET_CLOSURE(fn->obj);
    PyObject *names = PyCode_GetFreevars(hc);
    int idx = -1;
    for (Py_ssize_t i = 0; names && i < PyTuple_GET_SIZE(names); i++)
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(names, i), "func") == 0)
            idx = (int)i;
    Py_XDECREF(names);
    PyObject *func = cl && idx >= 0 && idx < PyTuple_GET_SIZE(cl) ? PyCell_GET(PyTuple_GET_ITEM(cl, idx)) : NULL;
    if (func == NULL || !PyFunction_Check(func) ||
        !(((PyCodeObject *)PyFunction_GET_CODE(func))->co_flags & CO_GENERATOR))
        return sym_fail(t, "contextmanager of a %s", func ? Py_TYPE(func)->tp_name : "missing function");
    int s = -1;
    if (fn->src >= 0) { /* helper's cell: the decorated function, identity-guarded */
        s = sym_source(t, DH_S_CLOSURE, fn->src, idx, NULL);
        if (s < 0 || sym_guard_id(t, s, func) < 0)
            return -1;
    }
    if (sym_inline(t, func, s, NULL, args, nargs, kwnames, out) < 0)
        return -1;
    if (out->kind != V_GEN)
        return sym_fail(t, "contextmanager function did not make a generator");
    out->op = 1;
    return 0;
}

/* BEFORE_WITH on a contextmanager's generator: run it to its yield. 1: not one. */
int sym_gen_cm_enter(trace *t, const var *cm, var *exit_fn, var *as_val) {
    if (cm->kind != V_GEN || cm->op != 1)
        return 1;
    sym_gen *g = gen_of(t, cm);
    if (g == NULL || g->state != GEN_NEW)
        return sym_fail(t, "a contextmanager object entered twice (eager raises)");
    int rc = sym_gen_step(t, cm, as_val);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return sym_fail(t, "generator didn't yield (eager raises RuntimeError)");
    *exit_fn = sym_var(V_FUNC);
    exit_fn->op = SYM_GENCM_EXIT;
    exit_fn->val = cm->val;
    return 0;
}

/* __exit__(None, None, None): the rest of the generator, which must end */
int sym_gen_cm_exit(trace *t, const var *exit_fn, var *out) {
    var gv = sym_var(V_GEN), r;
    gv.val = exit_fn->val;
    int rc = sym_gen_step(t, &gv, &r);
    if (rc < 0)
        return -1;
    if (rc == 1)
        return sym_fail(t, "generator didn't stop (eager raises RuntimeError)");
    return sym_const(t, Py_NewRef(Py_False), out);
}

/* obj.cm(*args) where cm is a @contextlib.contextmanager method (the class attribute, found
 * through the object's guarded type): as sym_gen_cm_call with obj first. 1: not one. */
int sym_gen_cm_method(trace *t, const var *m, var *args, int nargs, PyObject *kwnames, var *out) {
    const var *self = &m->items[0];
    PyObject *fo = m->obj;
    if (fo != NULL && PyUnicode_Check(fo) && (self->kind == V_OBJ || self->kind == V_CONST) &&
        self->obj != NULL)
        fo = _PyType_Lookup(Py_TYPE(self->obj), fo);
    if (fo == NULL || !PyFunction_Check(fo) || cm_init() < 0)
        return PyErr_Occurred() ? -1 : 1;
    if (PyFunction_GET_CODE(fo) != cm_helper_code)
        return 1;
    var fn = sym_var(V_FUNC), *all = sym_alloc(t, nargs + 1);
    if (all == NULL)
        return -1;
    fn.op = SYM_USER_FUNCTION;
    fn.obj = fo; /* the class's: fixed while the object's type guard holds */
    all[0] = *self;
    if (nargs > 0)
        memcpy(all + 1, args, sizeof(var) * (size_t)nargs);
    return sym_gen_cm_call(t, &fn, all, nargs + 1, kwnames, out);
}
