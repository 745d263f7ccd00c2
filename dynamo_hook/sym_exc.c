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
 * An except clause's own cleanup (the handler that restores the handled exception and
 * re-raises: COPY, POP_EXCEPT, RERAISE; `as e`'s unbinding) and a `finally` run in the trace
 * too, so a raise inside an except clause reaches the next handler out, or leaves the top
 * frame (sym_exc_top_raise). A with-statement's cleanup (WITH_EXCEPT_START: __exit__ would
 * see the exception) is not taken: the trace fails there, as it did.
 *
 * Chaining, as CPython's: an exception raised while an except clause of the traced frames
 * handles another gets that one as __context__ (t->exc_cur, kept by PUSH_EXC_INFO and
 * POP_EXCEPT); raised while none is (exc_cur NULL), its __context__ is what the caller is
 * handling at run time: reading it in the trace guards that the caller handles none; the
 * exception a break raises (_raise_new) gets the caller's then. `raise X from Y` sets
 * __cause__. Exceptions the trace raises are its own objects; the one a break raises is made
 * anew each call, with its chain (its traceback is the frame's, its chain's are empty). */
#include "sym_interp.h"

#include <stdarg.h>

int sym_raise(trace *t, PyObject *type, PyObject *arg, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg == NULL)
        return -1;
    /* eager's args: a KeyError's key, a message; a global's name: NameError's message. A
     * bare attribute name (AttributeError: eager names the object's type too) or none at all
     * is not eager's: such an exception's str, repr and args are not answered */
    int inexact = arg == NULL;
    PyObject *named = NULL;
    if (arg != NULL && PyUnicode_Check(arg) && PyUnicode_FindChar(arg, ' ', 0, PyUnicode_GET_LENGTH(arg), 1) == -1) {
        if (type == PyExc_NameError)
            arg = named = PyUnicode_FromFormat("name '%U' is not defined", arg);
        else if (type == PyExc_AttributeError)
            inexact = 1;
    }
    PyObject *exc = arg ? PyObject_CallOneArg(type, arg) : named == NULL && !PyErr_Occurred() ? PyObject_CallNoArgs(type) : NULL;
    Py_XDECREF(named);
    if (exc == NULL || sym_keep(t, exc) == NULL) {
        Py_DECREF(msg);
        return -1;
    }
    if (inexact && ((t->exc_inexact == NULL && (t->exc_inexact = sym_keep(t, PyList_New(0))) == NULL) ||
                    PyList_Append(t->exc_inexact, exc) < 0)) {
        Py_DECREF(msg);
        return -1;
    }
    if (sym_exc_raised(t, exc) < 0) {
        Py_DECREF(msg);
        return -1;
    }
    int rc = sym_fail(t, "%U", msg);
    Py_DECREF(msg);
    t->pending_exc = exc; /* kept alive by t->keep */
    return rc;
}

int sym_raise_current(trace *t, const char *why) {
    if (!PyErr_Occurred() || tc_pyerr_fatal(PyErr_Occurred()))
        return PyErr_Occurred() ? -1 : sym_fail(t, "%s", why);
    PyObject *et, *exc, *tb;
    PyErr_Fetch(&et, &exc, &tb);
    PyErr_NormalizeException(&et, &exc, &tb);
    Py_XDECREF(et);
    Py_XDECREF(tb);
    PyErr_Clear();
    if (exc == NULL || !PyExceptionInstance_Check(exc) || (Py_TYPE(exc)->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        !sym_exc_simple_class((PyObject *)Py_TYPE(exc))) {
        Py_XDECREF(exc);
        return sym_fail(t, "%s", why);
    }
    PyException_SetContext(exc, NULL); /* the trace's own chaining (not the tracing thread's) */
    PyException_SetCause(exc, NULL);
    ((PyBaseExceptionObject *)exc)->suppress_context = 0;
    if (sym_keep(t, exc) == NULL || sym_exc_raised(t, exc) < 0)
        return -1;
    int rc = sym_fail(t, "%s: %s raised (eager raises it)", why, Py_TYPE(exc)->tp_name);
    t->pending_exc = exc;
    return rc;
}

int sym_exc_raised(trace *t, PyObject *exc) {
    if (!PyExceptionInstance_Check(exc))
        return 0;
    if (t->exc_cur != NULL) {
        if (t->exc_cur != exc)
            PyException_SetContext(exc, Py_NewRef(t->exc_cur));
        return 0;
    }
    if (t->exc_ctxout == NULL && (t->exc_ctxout = sym_keep(t, PyList_New(0))) == NULL)
        return -1;
    return PyList_Append(t->exc_ctxout, exc);
}

static int in_list(PyObject *list, PyObject *o) {
    for (Py_ssize_t i = 0; list != NULL && i < PyList_GET_SIZE(list); i++)
        if (PyList_GET_ITEM(list, i) == o)
            return 1;
    return 0;
}

static int ctx_from_caller(trace *t, PyObject *exc) { return in_list(t->exc_ctxout, exc); }

/* ---- exceptions as values: str, repr, attributes ------------------------------------ */

static int plain_const(PyObject *o, int depth) {
    if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
        PyUnicode_CheckExact(o) || PyBytes_CheckExact(o))
        return 1;
    if (!PyTuple_CheckExact(o) || depth > 4)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
        if (!plain_const(PyTuple_GET_ITEM(o, i), depth + 1))
            return 0;
    return 1;
}

int sym_exc_pure_text(trace *t, PyObject *o) {
    if (o == NULL || !PyExceptionInstance_Check(o) || !sym_exc_simple_class((PyObject *)Py_TYPE(o)) ||
        in_list(t->exc_inexact, o))
        return 0;
    PyTypeObject *tp = Py_TYPE(o), *b = tp;
    while (b != NULL && (b->tp_flags & Py_TPFLAGS_HEAPTYPE))
        b = b->tp_base;
    PyObject *args = ((PyBaseExceptionObject *)o)->args;
    return b != NULL && tp->tp_str == b->tp_str && tp->tp_repr == b->tp_repr && args != NULL && plain_const(args, 0);
}

/* True when the thread handles no exception (the guard of a __context__ read as None) */
static PyObject *handles_none(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    PyObject *h = PyErr_GetHandledException();
    int none = h == NULL || h == Py_None;
    Py_XDECREF(h);
    return PyBool_FromLong(none);
}

static PyMethodDef handles_none_def = {"_no_handled_exception", handles_none, METH_NOARGS,
                                       "True when no exception is being handled (a guard)"};
static PyObject *handles_none_fn; /* kept for the process */

int sym_exc_attr(trace *t, PyObject *exc, PyObject *name, var *out) {
    const char *n = PyUnicode_AsUTF8(name);
    if (n == NULL)
        return -1;
    if (!strcmp(n, "args"))
        return in_list(t->exc_inexact, exc) ? sym_fail(t, "args of a %s whose message eager words (not the trace)",
                                                        Py_TYPE(exc)->tp_name)
                                            : sym_const(t, PyObject_GetAttr(exc, name), out);
    if (!strcmp(n, "__class__"))
        return sym_wrap(t, (PyObject *)Py_TYPE(exc), -1, out);
    if (!strcmp(n, "__suppress_context__"))
        return sym_const(t, PyBool_FromLong(((PyBaseExceptionObject *)exc)->suppress_context), out);
    if (!strcmp(n, "__cause__")) {
        PyObject *c = PyException_GetCause(exc);
        return sym_const(t, c ? c : Py_NewRef(Py_None), out);
    }
    if (strcmp(n, "__context__"))
        return 1;
    PyObject *c = PyException_GetContext(exc);
    if (c != NULL)
        return sym_const(t, c, out);
    if (ctx_from_caller(t, exc)) { /* the caller's handled exception: guarded to be none */
        if (handles_none_fn == NULL && (handles_none_fn = PyCFunction_New(&handles_none_def, NULL)) == NULL)
            return -1;
        int r = sym_state_predicate(t, handles_none_fn);
        if (r < 0)
            return -1;
        if (r == 0)
            return sym_fail(t, "__context__ of an exception raised while the caller handles one");
    }
    return sym_const(t, Py_NewRef(Py_None), out);
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

/* the handler at h only restores the handled exception, unbinds `as e`'s name and re-raises
 * (an except clause's cleanup): it runs in the trace as any code */
static int cleanup_handler(const unsigned char *code, int ninstr, int h) {
    static const char *const ok[] = {"COPY", "POP_EXCEPT", "LOAD_CONST", "STORE_FAST", "DELETE_FAST",
                                     "SWAP", "POP_TOP", "NOP", "CACHE", "EXTENDED_ARG"};
    for (int pc = h; pc < ninstr && pc < h + 32; pc++) {
        const char *n = sym_opname(code[2 * pc]);
        if (n == NULL)
            return 0;
        if (!strcmp(n, "RERAISE"))
            return 1;
        int good = 0;
        for (size_t i = 0; i < sizeof ok / sizeof *ok && !good; i++)
            good = !strcmp(n, ok[i]);
        if (!good)
            return 0;
    }
    return 0;
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
    if (first != NULL && second != NULL && !strcmp(second, "WITH_EXCEPT_START") &&
        (depth < 1 || !sym_exc_exit_ok(&f->stack[depth - 1]))) {
        snprintf(t->reason, sizeof t->reason,
                 "%.80s raised in a with block whose __exit__ reads its traceback, is a @contextmanager's or not "
                 "a Python function (eager calls it with the exception)", Py_TYPE(t->pending_exc)->tp_name);
        return 0;
    }
    if (first == NULL || second == NULL || (strcmp(first, "PUSH_EXC_INFO") && !cleanup_handler(code, ninstr, h)))
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

/* ---- a raise through a with block ---------------------------------------------------- */

/* the local of a Python __exit__(self, type, value, traceback) (or __exit__(self, *exc)) that
 * receives the traceback is never read: -1 when it may be (or the signature is another) */
static int tb_unread(PyObject *fn) {
    if (!PyFunction_Check(fn))
        return -1;
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(fn);
    PyObject *dflt = PyFunction_GET_DEFAULTS(fn);
    int idx, ndflt = dflt != NULL && PyTuple_Check(dflt) ? (int)PyTuple_GET_SIZE(dflt) : 0;
    if (co->co_kwonlyargcount > 0)
        return -1;
    if (co->co_argcount >= 4 && co->co_argcount - ndflt <= 4)
        idx = 3; /* self, type, value, traceback (more with defaults) */
    else if (co->co_argcount < 4 && (co->co_flags & CO_VARARGS))
        idx = co->co_argcount; /* *exc: a tuple holding it */
    else
        return -1;
    PyObject *cells = PyCode_GetCellvars(co), *names = PyCode_GetVarnames(co), *bytes = PyCode_GetCode(co);
    int ok = cells != NULL && names != NULL && bytes != NULL && idx < PyTuple_GET_SIZE(names);
    if (ok && PySequence_Contains(cells, PyTuple_GET_ITEM(names, idx)) != 0)
        ok = 0; /* a closure reads it */
    const unsigned char *code = ok ? (const unsigned char *)PyBytes_AS_STRING(bytes) : NULL;
    Py_ssize_t n = ok ? PyBytes_GET_SIZE(bytes) / 2 : 0;
    int arg = 0;
    for (Py_ssize_t pc = 0; ok && pc < n; pc++) {
        const char *nm = sym_opname(code[2 * pc]);
        arg = arg << 8 | code[2 * pc + 1];
        if (nm != NULL && !strcmp(nm, "EXTENDED_ARG"))
            continue;
        if (nm == NULL || (!strncmp(nm, "LOAD_FAST", 9) && arg == idx) || (!strcmp(nm, "DELETE_FAST") && arg == idx) ||
            (!strcmp(nm, "LOAD_CLOSURE") && arg == idx) || !strcmp(nm, "LOAD_FAST_LOAD_FAST"))
            ok = 0;
        arg = 0;
    }
    Py_XDECREF(cells);
    Py_XDECREF(names);
    Py_XDECREF(bytes);
    if (tc_clear_expected(PyExc_Exception) < 0)
        return -1; /* MemoryError and the like stay set: the trace aborts with it */
    return ok ? 0 : -1;
}

int sym_exc_exit_ok(const var *ex) {
    if (sym_is_with_exit(ex)) /* no_grad, inference_mode, autocast: the state restored */
        return 1;
    return ex->kind == V_METHOD && ex->obj != NULL && tb_unread(ex->obj) == 0;
}

/* WITH_EXCEPT_START: (exit, lasti, previous exc, exc) -> (..., exit(type, exc, traceback)).
 * A raise in a with block's body unwinds here (sym_exc_unwind, where sym_exc_exit_ok): a
 * Python __exit__ is inlined with the exception's type and value, as eager calls it; its
 * traceback is passed as None, which the __exit__ never reads (tb_unread: the trace's
 * exception has none to give). Its result decides as eager's: true suppresses the
 * exception (the block ends, the code after it runs in the trace), false re-raises it
 * (RERAISE: the next handler out, or the break that raises it after the graph). torch's state
 * contexts (no_grad, inference_mode, autocast) restore their state as at a normal exit. */
int sym_op_with_except_start(trace *t, sframe *f, sym_ins *in) {
    (void)in;
    NEED(4);
    var exc = PEEK(1), ex = PEEK(4), r;
    if (exc.kind != V_CONST || exc.obj == NULL || !PyExceptionInstance_Check(exc.obj))
        return sym_fail(t, "a with block's __exit__ called with an unsupported exception");
    if (!sym_exc_exit_ok(&ex))
        return sym_fail(t, "a with block's __exit__ that reads the traceback, or is not a Python function, "
                           "called with an exception");
    var *args = sym_alloc(t, 3);
    if (args == NULL)
        return -1;
    if (sym_is_with_exit(&ex)) {
        for (int i = 0; i < 3; i++)
            if (sym_const(t, Py_NewRef(Py_None), &args[i]) < 0)
                return -1;
    } else if (sym_const(t, Py_NewRef((PyObject *)Py_TYPE(exc.obj)), &args[0]) < 0 ||
               sym_const(t, Py_NewRef(Py_None), &args[2]) < 0) {
        return -1;
    } else {
        args[1] = exc;
    }
    if (sym_call(t, &ex, args, 3, NULL, &r) < 0)
        return -1;
    PUSH(r);
    return SYM_NEXT;
}

/* ---- raise statements -------------------------------------------------------------- */

int sym_exc_simple_class(PyObject *f) {
    if (f == NULL || !PyExceptionClass_Check(f))
        return 0;
    PyTypeObject *tp = (PyTypeObject *)f, *base = (PyTypeObject *)PyExc_BaseException;
    return tp->tp_init == base->tp_init && tp->tp_new == base->tp_new;
}

/* an exception's recipe for _raise_new: (cls, args, suppress_context, cause, context,
 * context_from_caller), cause and context recipes or None; NULL failed (error set) */
static PyObject *exc_spec(trace *t, PyObject *e, int depth) {
    if (e == NULL || e == Py_None)
        return Py_NewRef(Py_None);
    if (depth > 32 || !PyExceptionInstance_Check(e) || !sym_exc_simple_class((PyObject *)Py_TYPE(e)))
        return Py_NewRef(Py_Ellipsis); /* not rebuildable from its args (exc_spec_ok) */
    PyObject *args = ((PyBaseExceptionObject *)e)->args;
    PyBaseExceptionObject *b = (PyBaseExceptionObject *)e;
    PyObject *cause = exc_spec(t, b->cause, depth + 1);
    /* `raise X from e` inside e's except clause: one object as both (exc_build keeps it so) */
    PyObject *ctx = cause == NULL ? NULL : b->context == b->cause && b->cause != NULL ? Py_NewRef(cause)
                                                                                   : exc_spec(t, b->context, depth + 1);
    PyObject *r = ctx ? Py_BuildValue("(OOOOOO)", (PyObject *)Py_TYPE(e), args && PyTuple_Check(args) ? args : Py_None,
                                      ((PyBaseExceptionObject *)e)->suppress_context ? Py_True : Py_False, cause, ctx,
                                      ((PyBaseExceptionObject *)e)->context == NULL && ctx_from_caller(t, e) ? Py_True : Py_False)
                      : NULL;
    Py_XDECREF(cause);
    Py_XDECREF(ctx);
    return r;
}

static int exc_spec_ok(PyObject *s, int depth) {
    if (s == Py_None)
        return 1;
    if (s == Py_Ellipsis || !PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 6 || depth > 32)
        return 0;
    return exc_spec_ok(PyTuple_GET_ITEM(s, 3), depth + 1) && exc_spec_ok(PyTuple_GET_ITEM(s, 4), depth + 1);
}

/* a new exception of recipe s (exc_spec), its context the thread's handled one h where the
 * trace left it to the caller's */
static PyObject *exc_build(PyObject *s, PyObject *h, int depth) {
    if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 6 || !PyExceptionClass_Check(PyTuple_GET_ITEM(s, 0)) || depth > 32) {
        PyErr_SetString(PyExc_TypeError, "_raise_new: a malformed exception recipe");
        return NULL;
    }
    PyObject *args = PyTuple_GET_ITEM(s, 1);
    PyObject *e = PyTuple_Check(args) ? PyObject_Call(PyTuple_GET_ITEM(s, 0), args, NULL)
                                      : PyObject_CallNoArgs(PyTuple_GET_ITEM(s, 0));
    if (e == NULL || !PyExceptionInstance_Check(e)) {
        if (e != NULL)
            PyErr_SetString(PyExc_TypeError, "_raise_new: not an exception");
        Py_XDECREF(e);
        return NULL;
    }
    PyObject *cs = PyTuple_GET_ITEM(s, 3), *xs = PyTuple_GET_ITEM(s, 4);
    if (cs != Py_None) {
        PyObject *c = exc_build(cs, h, depth + 1);
        if (c == NULL)
            goto fail;
        PyException_SetCause(e, c);
    }
    ((PyBaseExceptionObject *)e)->suppress_context = PyTuple_GET_ITEM(s, 2) == Py_True;
    if (xs != Py_None && xs == cs) {
        PyException_SetContext(e, Py_NewRef(((PyBaseExceptionObject *)e)->cause));
    } else if (xs != Py_None) {
        PyObject *x = exc_build(xs, h, depth + 1);
        if (x == NULL)
            goto fail;
        PyException_SetContext(e, x);
    } else if (PyTuple_GET_ITEM(s, 5) == Py_True && h != NULL && h != Py_None) {
        PyException_SetContext(e, Py_NewRef(h));
    }
    return e;
fail:
    Py_DECREF(e);
    return NULL;
}

/* _raise_new(recipe): raises a new exception of the recipe (exc_spec) with its chain, a new
 * one each call (the call a raise breaks at: dh_break_call runs it in a frame like the
 * raising one, so the traceback ends at the user's raise). Its chain is complete: it is
 * raised as is, without CPython's implicit chaining (which would overwrite its __context__) */
static PyObject *raise_new(PyObject *self, PyObject *const *a, Py_ssize_t n) {
    (void)self;
    if (n != 1) {
        PyErr_SetString(PyExc_TypeError, "_raise_new(recipe)");
        return NULL;
    }
    PyObject *h = PyErr_GetHandledException();
    PyObject *e = exc_build(a[0], h, 0);
    Py_XDECREF(h);
    if (e == NULL)
        return NULL;
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(e)), e, NULL);
    return NULL;
}

static PyMethodDef raise_new_def = {"_raise_new", (PyCFunction)(void (*)(void))raise_new, METH_FASTCALL,
                                    "raises an exception made anew (a graph break at a raise statement)"};
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
    PyObject *cls = (PyObject *)Py_TYPE(exc), *spec = sym_keep(t, exc_spec(t, exc, 0));
    if (spec == NULL)
        return -1;
    if (!exc_spec_ok(spec, 0)) /* its chain holds an exception made otherwise: not rebuilt */
        return 0;
    if (raise_new_fn == NULL && (raise_new_fn = PyCFunction_New(&raise_new_def, NULL)) == NULL)
        return -1;
    var *call = sym_alloc(t, 2);
    if (call == NULL)
        return -1;
    call[0] = sym_var(V_FUNC);
    call[0].op = -1;
    call[0].obj = raise_new_fn;
    call[1] = sym_var(V_CONST);
    call[1].obj = spec;
    t->pending_exc = NULL;
    snprintf(t->reason, sizeof t->reason, "%s raised (eager raises it after the graph)", ((PyTypeObject *)cls)->tp_name);
    memset(&t->brk, 0, sizeof t->brk);
    t->brk.kind = DH_BRK_CALL;
    t->brk.pc_next = in->pc; /* (never resumed: the call raises) */
    t->brk.fn = &call[0];
    t->brk.args = &call[1];
    t->brk.nargs = 1;
    return sym_record_break_state(t, f);
}

/* RAISE_VARARGS 1 (2: `... from None`): `raise E(...)` (an instance the trace made of constants, sym_exc_simple_class)
 * or `raise E`; `assert cond, msg` raises so too. The exception is pending (sym_raise's way):
 * inside a try block of the traced frames the except clause that catches it runs in the trace
 * (run_body's sym_exc_unwind; a caller's: sym_call.c); an inlined frame's raise nothing catches
 * fails its caller's call, which the top frame runs eagerly at a break (eager raises there); the
 * top frame's own raise outside any try block breaks there (sym_exc_top_raise). */
int sym_op_raise_varargs(trace *t, sframe *f, sym_ins *in) {
    if (in->oparg == 0) { /* raise: the exception an except clause of the trace handles, as is */
        if (t->exc_cur == NULL)
            return sym_fail(t, "a bare raise (re-raise) outside the trace's except clauses");
        int rc = sym_fail(t, "%s re-raised (eager raises it)", Py_TYPE(t->exc_cur)->tp_name);
        t->pending_exc = t->exc_cur;
        return rc;
    }
    if (in->oparg > 2)
        return sym_fail(t, "raise with %d operands", in->oparg);
    NEED(in->oparg);
    int from_none = 0;
    PyObject *cause = NULL;
    if (in->oparg == 2) { /* raise E from None, from an exception (or a class of one) */
        var cv = POP();
        PyObject *c = cv.kind == V_CONST ? cv.obj : NULL;
        if (c == Py_None) {
            from_none = 1;
        } else if (c != NULL && PyExceptionInstance_Check(c)) {
            cause = c; /* (kept by the trace) */
        } else if (sym_exc_simple_class(c)) {
            if ((cause = sym_keep(t, PyObject_CallNoArgs(c))) == NULL)
                return -1;
        } else {
            return sym_fail(t, "raise ... from an unsupported value");
        }
    }
    var v = POP();
    PyObject *o = v.kind == V_TENSOR ? NULL : v.obj, *exc;
    if (o != NULL && PyExceptionInstance_Check(o) && sym_exc_simple_class((PyObject *)Py_TYPE(o))) {
        exc = Py_NewRef(o); /* the object itself (made or caught by the trace, kept) */
    } else if (sym_exc_simple_class(o)) {
        exc = PyObject_CallNoArgs(o);
    } else {
        return sym_fail(t, "raise of %s (not an exception made in the trace)",
                        o ? Py_TYPE(o)->tp_name : "an unsupported value");
    }
    if (exc == NULL || sym_keep(t, exc) == NULL)
        return -1;
    if (from_none || cause != NULL)
        PyException_SetCause(exc, Py_XNewRef(cause)); /* (steals) __suppress_context__ True */
    if (sym_exc_raised(t, exc) < 0)
        return -1;
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
