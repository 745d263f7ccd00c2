/* sym_exc.c — exceptions the trace proves eager raises, caught by the traced frames' own
 * `except` clauses (Mapping.get's `try: return self[key] except KeyError: return default`).
 *
 * Requires: the raise is decided by state the trace guards or built itself (a key missing
 *   from a dict whose keys the trace knows exactly, a missing key of a guarded mapping).
 * Keeps:    what the frames did before the raise (logged effects stay: eager did them too).
 * Breaks:   nothing; a raise no `except` of the traced frames catches fails the trace as
 *   before (the reason says eager raises), or breaks the top frame at the call.
 *
 * sym_raise fails the trace with t->pending_exc set to the exception. run_body asks
 * sym_exc_unwind at the failing instruction: with a handler in the frame's exception table
 * that starts an `except` clause, the stack unwinds to the handler's depth, the exception is
 * pushed (a constant: CHECK_EXC_MATCH matches it) and the interpretation goes on there. A
 * frame without one returns the failure to its caller's instruction, which asks the same.
 * A with-statement's cleanup (WITH_EXCEPT_START: __exit__ would see the exception) and a
 * `finally` (RERAISE) are not taken: the trace fails there, as it did. */
#include "sym_interp.h"

#include <stdarg.h>

int sym_raise(trace *t, PyObject *type, PyObject *arg, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg == NULL)
        return -1;
    PyObject *exc = arg ? PyObject_CallOneArg(type, arg) : PyObject_CallNoArgs(type);
    if (exc == NULL || sym_keep(t, exc) == NULL) {
        Py_DECREF(msg);
        return -1;
    }
    int rc = sym_fail(t, "%U", msg);
    Py_DECREF(msg);
    t->pending_exc = exc; /* kept alive by t->keep */
    return rc;
}

/* The top frame's call raised in the trace (t->pending_exc, no handler of the frame catches
 * it) after the trace answered torch.compiler.is_compiling() True: the arguments may hold
 * what that answer chose (a mask left None for the graph to build), which eager, answering
 * False, never passes. A break would run the call eagerly with them and raise where eager
 * runs; the frame runs eagerly instead, as Dynamo abandons a frame an exception escapes.
 * Fails the trace (no break) with the raise named in the reason; -1. */
int sym_refuse_raise_break(trace *t) {
    char why[sizeof t->reason], where[sizeof t->where];
    snprintf(why, sizeof why, "%s", t->reason);
    snprintf(where, sizeof where, "%s", t->where);
    /* the raise's own "(eager will raise)" is not known: eager answers False and may not */
    static const char will[] = " (eager will raise)";
    char *at = strstr(why, will);
    if (at != NULL)
        memmove(at, at + sizeof will - 1, strlen(at + sizeof will - 1) + 1);
    t->failed = 0;
    int rc = sym_fail(t, "%.200s, after the trace answered torch.compiler.is_compiling() True (False in eager, "
                         "which may not raise here): the frame runs eagerly", why);
    snprintf(t->where, sizeof t->where, "%s", where); /* the raise's location, innermost first */
    return rc;
}

/* the first instruction after pc that is not an EXTENDED_ARG/NOP/CACHE, its opcode name */
static const char *op_after(const unsigned char *code, int ninstr, int pc) {
    for (pc++; pc < ninstr; pc++) {
        const char *n = sym_opname(code[2 * pc]);
        if (n == NULL || (strcmp(n, "CACHE") && strcmp(n, "NOP") && strcmp(n, "EXTENDED_ARG")))
            return n;
    }
    return NULL;
}

int sym_exc_unwind(trace *t, sframe *f, const unsigned char *code, int ninstr, int pc, int *next) {
    if (t->pending_exc == NULL || !t->failed || PyErr_Occurred())
        return 0;
    int depth, lasti;
    int h = sym_exc_handler(f->code, pc, &depth, &lasti);
    if (h < 0 || h >= ninstr || depth > f->sp)
        return 0;
    const char *first = sym_opname(code[2 * h]);
    const char *second = op_after(code, ninstr, h);
    if (first == NULL || strcmp(first, "PUSH_EXC_INFO") || second == NULL ||
        !strcmp(second, "WITH_EXCEPT_START") || !strcmp(second, "RERAISE"))
        return 0;
    PyObject *exc = t->pending_exc;
    t->pending_exc = NULL;
    t->failed = 0;
    t->reason[0] = 0;
    f->sp = depth;
    var v;
    if (lasti) {
        if (sym_const(t, PyLong_FromLong(pc), &v) < 0)
            return -1;
        PUSH(v);
    }
    v = sym_var(V_CONST);
    v.obj = exc;
    PUSH(v);
    *next = h;
    return 1;
}

/* ---- raise statements -------------------------------------------------------------- */

int sym_exc_simple_class(PyObject *f) {
    if (f == NULL || !PyExceptionClass_Check(f))
        return 0;
    PyTypeObject *tp = (PyTypeObject *)f, *base = (PyTypeObject *)PyExc_BaseException;
    return tp->tp_init == base->tp_init && tp->tp_new == base->tp_new;
}

/* _raise_new(cls, args, from_none): raises cls(*args) (`from None` when from_none is true),
 * a new exception each call (the call a raise breaks at: dh_break_call runs it in a frame
 * like the raising one, so the traceback ends at the user's raise) */
static PyObject *raise_new(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    (void)self;
    if (n != 3 || !PyExceptionClass_Check(a[0]) || !PyTuple_Check(a[1])) {
        PyErr_SetString(PyExc_TypeError, "_raise_new(cls, args, from_none)");
        return NULL;
    }
    PyObject *e = PyObject_Call(a[0], a[1], NULL);
    if (e == NULL)
        return NULL;
    if (PyObject_IsTrue(a[2]) == 1)
        PyException_SetCause(e, NULL); /* __cause__ None, __suppress_context__ True */
    PyErr_SetObject(a[0], e);
    Py_DECREF(e);
    return NULL;
}

static PyMethodDef raise_new_def = {"_raise_new", (PyCFunction)(void (*)(void))raise_new, METH_FASTCALL,
                                    "raises cls(*args) (a graph break at a raise statement)"};
static PyObject *raise_new_fn; /* kept for the process */

/* A raise the trace decided (t->pending_exc: a raise statement, sym_raise's KeyError of a
 * known dict, ...) at instruction in of the top frame, which no except clause of the frame
 * catches: a graph break there. The graph before it runs, the effects logged are replayed,
 * then _raise_new raises a new E(*args) in a frame like this one (dh_break_call), so the user
 * sees eager's exception after eager's side effects; the resume never runs. 1: the break is
 * recorded; 0: not one (the trace fails as it did: the frame runs eagerly and raises); -1. */
int sym_exc_top_raise(trace *t, sframe *f, const sym_ins *in) {
    PyObject *exc = t->pending_exc;
    int hd, hl;
    /* (a call that raised had what its trace logged undone for the break at it, which it
     * then could not make: eager's effects before its raise are not in the graph) */
    if (in->op == OP_CALL || in->op == OP_CALL_FUNCTION_EX || in->op == OP_BEFORE_WITH)
        return 0;
    if (exc == NULL || !f->top || !t->failed || PyErr_Occurred() || !sym_can_break(t) || t->asked_compiling ||
        !PyExceptionInstance_Check(exc) || !sym_exc_simple_class((PyObject *)Py_TYPE(exc)) ||
        sym_exc_handler(f->code, in->pc, &hd, &hl) >= 0)
        return 0;
    for (int i = 0; i < f->sp; i++) /* (an exception being handled: not resumable) */
        if (f->stack[i].kind == V_CONST && f->stack[i].obj && PyExceptionInstance_Check(f->stack[i].obj))
            return 0;
    PyObject *cls = (PyObject *)Py_TYPE(exc), *args = ((PyBaseExceptionObject *)exc)->args;
    args = args != NULL && PyTuple_Check(args) ? Py_NewRef(args) : PyTuple_New(0);
    if (args == NULL || sym_keep(t, args) == NULL)
        return -1;
    if (raise_new_fn == NULL && (raise_new_fn = PyCFunction_New(&raise_new_def, NULL)) == NULL)
        return -1;
    var *call = sym_alloc(t, 4);
    if (call == NULL)
        return -1;
    call[0] = sym_var(V_FUNC);
    call[0].op = -1;
    call[0].obj = raise_new_fn;
    call[1] = sym_var(V_CONST);
    call[1].obj = cls;
    call[2] = sym_var(V_CONST);
    call[2].obj = args;
    call[3] = sym_var(V_CONST);
    call[3].obj = ((PyBaseExceptionObject *)exc)->suppress_context ? Py_True : Py_False;
    t->pending_exc = NULL;
    snprintf(t->reason, sizeof t->reason, "%s raised (eager raises it after the graph)", ((PyTypeObject *)cls)->tp_name);
    memset(&t->brk, 0, sizeof t->brk);
    t->brk.kind = DH_BRK_CALL;
    t->brk.pc_next = in->pc; /* (never resumed: the call raises) */
    t->brk.fn = &call[0];
    t->brk.args = &call[1];
    t->brk.nargs = 3;
    return sym_record_break_state(t, f);
}

/* RAISE_VARARGS 1 (2: `... from None`): `raise E(...)` (an instance the trace made of constants, sym_exc_simple_class)
 * or `raise E`; `assert cond, msg` raises so too. The exception is pending (sym_raise's way):
 * inside a try block of the traced frames the except clause that catches it runs in the trace
 * (run_body's sym_exc_unwind; a caller's: sym_call.c); an inlined frame's raise nothing catches
 * fails its caller's call, which the top frame runs eagerly at a break (eager raises there); the
 * top frame's own raise outside any try block breaks there (sym_exc_top_raise). */
int sym_op_raise_varargs(trace *t, sframe *f, sym_ins *in) {
    if (in->oparg == 0 || in->oparg > 2)
        return sym_fail(t, "a bare raise (re-raise) in the trace");
    NEED(in->oparg);
    int from_none = 0;
    if (in->oparg == 2) { /* raise E from None (another cause: not modelled) */
        var cause = POP();
        if (cause.kind != V_CONST || cause.obj != Py_None)
            return sym_fail(t, "raise ... from an exception in the trace");
        from_none = 1;
    }
    var v = POP();
    PyObject *o = v.kind == V_TENSOR ? NULL : v.obj, *exc;
    if (o != NULL && PyExceptionInstance_Check(o) && sym_exc_simple_class((PyObject *)Py_TYPE(o))) {
        PyObject *args = ((PyBaseExceptionObject *)o)->args; /* a new one of the same args */
        if (args == NULL || !PyTuple_Check(args))
            return sym_fail(t, "raise of an exception whose args are not a tuple");
        exc = PyObject_Call((PyObject *)Py_TYPE(o), args, NULL);
    } else if (sym_exc_simple_class(o)) {
        exc = PyObject_CallNoArgs(o);
    } else {
        return sym_fail(t, "raise of %s (not an exception made in the trace)",
                        o ? Py_TYPE(o)->tp_name : "an unsupported value");
    }
    if (exc == NULL || sym_keep(t, exc) == NULL)
        return -1;
    if (from_none)
        PyException_SetCause(exc, NULL); /* __suppress_context__ True */
    int rc = sym_fail(t, "%s raised (eager raises it)", Py_TYPE(exc)->tp_name);
    t->pending_exc = exc; /* kept alive by t->keep */
    return rc;
}

/* LOAD_ASSERTION_ERROR */
int sym_op_load_assertion_error(trace *t, sframe *f, sym_ins *in) {
    (void)in;
    var a;
    if (sym_wrap(t, PyExc_AssertionError, -1, &a) < 0)
        return -1;
    PUSH(a);
    return SYM_NEXT;
}
