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
