/* dropin.c — what makes torchc.compile behave as torch.compile for its users (issue 25):
 * torch.compiler.set_stance read at each compiled call, torch.get_num_threads() followed at
 * each call, and the hook through which torchc/_logging.py sees every capture. Registered
 * into torchc._C by tc_dropin_init (module.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "aten_bridge.h"
#include "pyerr.h"
#include "dh.h"
#include "ic.h"
#include "dropin.h"

/* torch._dynamo.eval_frame's globals: set_stance rebinds "_stance" to a new DynamoStance
 * (a dataclass with a str "stance"); its identity tells a change apart from a call. */
static PyObject *stance_globals; /* strong, or NULL: torch has no stance API */
static PyObject *stance_seen;    /* the last _stance read (strong: its address is never reused) */
static int stance_code;
static int follow_threads = 1;   /* 0 once torchc.config.num_threads is set explicitly */
static int threads_seen;

/* the stance's code; a missing or odd stance attribute reads as the default; -1 with an
 * unexpected exception set (MemoryError, KeyboardInterrupt) */
static int stance_of(PyObject *st) {
    PyObject *s = PyObject_GetAttrString(st, "stance");
    int code = DH_STANCE_DEFAULT;
    const char *n = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    if (n == NULL) {
        PyObject *expected = PyTuple_Pack(2, PyExc_AttributeError, PyExc_UnicodeError);
        if (expected == NULL || tc_clear_expected(expected) < 0)
            code = -1;
        Py_XDECREF(expected);
    } else if (!strcmp(n, "force_eager"))
        code = DH_STANCE_FORCE_EAGER;
    else if (!strcmp(n, "eager_on_recompile"))
        code = DH_STANCE_EAGER_ON_RECOMPILE;
    else if (!strcmp(n, "fail_on_recompile"))
        code = DH_STANCE_FAIL_ON_RECOMPILE;
    else if (!strcmp(n, "eager_then_compile") || !strcmp(n, "aot_eager_then_compile"))
        code = DH_STANCE_EAGER_THEN_COMPILE;
    Py_XDECREF(s);
    return code;
}

int tc_dropin_before_call(void) {
    if (follow_threads) {
        int n = tc_num_threads();
        if (n > 0 && n != threads_seen) {
            ic_set_num_threads(n);
            threads_seen = n;
        }
    }
    if (stance_globals == NULL)
        return DH_STANCE_DEFAULT;
    PyObject *st = PyDict_GetItemString(stance_globals, "_stance"); /* borrowed */
    if (st != stance_seen) {
        int code = st ? stance_of(st) : DH_STANCE_DEFAULT;
        if (code < 0)
            return -1; /* not cached: the next call asks again */
        Py_XSETREF(stance_seen, Py_XNewRef(st));
        stance_code = code;
    }
    return stance_code;
}

static PyObject *m_set_stance_globals(PyObject *m, PyObject *arg) {
    if (arg != Py_None && !PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_stance_globals expects a dict or None");
        return NULL;
    }
    Py_XSETREF(stance_globals, arg == Py_None ? NULL : Py_NewRef(arg));
    Py_CLEAR(stance_seen);
    stance_code = DH_STANCE_DEFAULT;
    Py_RETURN_NONE;
}

static PyObject *m_stance(PyObject *m, PyObject *unused) {
    int stance = tc_dropin_before_call();
    return stance < 0 ? NULL : PyLong_FromLong(stance);
}

static PyObject *m_set_log_hook(PyObject *m, PyObject *arg) {
    if (arg != Py_None && !PyCallable_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_log_hook expects a callable or None");
        return NULL;
    }
    Py_XSETREF(dh_log_hook, arg == Py_None ? NULL : Py_NewRef(arg));
    Py_CLEAR(dh_log_wants); /* another hook: every text, until told otherwise */
    Py_RETURN_NONE;
}

static PyObject *m_set_log_wants(PyObject *m, PyObject *arg) {
    if (arg != Py_None && !PyCallable_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_log_wants expects a callable or None");
        return NULL;
    }
    Py_XSETREF(dh_log_wants, arg == Py_None ? NULL : Py_NewRef(arg));
    Py_RETURN_NONE;
}

static PyObject *m_set_limit_source(PyObject *m, PyObject *arg) {
    Py_XSETREF(dh_limit_source, arg == Py_None ? NULL : Py_NewRef(arg));
    Py_RETURN_NONE;
}

static PyObject *m_follow_torch_threads(PyObject *m, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    follow_threads = on;
    threads_seen = 0;
    Py_RETURN_NONE;
}

static PyMethodDef dropin_methods[] = {
    {"set_stance_globals", m_set_stance_globals, METH_O,
     "The globals of torch._dynamo.eval_frame (set_stance's _stance is read at each call), or None."},
    {"stance", m_stance, METH_NOARGS, "The stance a compiled call would take now (DH_STANCE_* code)."},
    {"set_log_hook", m_set_log_hook, METH_O,
     "Callable given the record dict of every capture (compiled, fallback), or None."},
    {"set_log_wants", m_set_log_wants, METH_O,
     "Callable wants(artifact) -> bool: whether the log hook reads a record's 'recompiles' "
     "(recompile_reason) or 'guards' text; None: it reads both (set_log_hook clears it)."},
    {"set_limit_source", m_set_limit_source, METH_O,
     "torch._dynamo.config (its recompile_limit is the default, read at cache misses), or None."},
    {"follow_torch_threads", m_follow_torch_threads, METH_O,
     "bool: the CPU runtime's threads follow torch.get_num_threads() at each compiled call."},
    {NULL, NULL, 0, NULL},
};

int tc_dropin_init(PyObject *m) {
    if (PyModule_AddFunctions(m, dropin_methods) < 0)
        return -1;
    if (PyModule_AddIntConstant(m, "STANCE_FORCE_EAGER", DH_STANCE_FORCE_EAGER) < 0 ||
        PyModule_AddIntConstant(m, "STANCE_EAGER_THEN_COMPILE", DH_STANCE_EAGER_THEN_COMPILE) < 0)
        return -1;
    return 0;
}
