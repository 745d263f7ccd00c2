/* pyerr.h — clearing a Python exception only where it is expected (issue 24).
 *
 * tc_clear_expected(T1, T2, ...) clears the pending exception when it matches one of the
 * exception classes named (each a type or a tuple of types; PyExc_Exception: whatever the
 * program's own code may raise there, which an eager re-run raises again) and is none of
 * MemoryError, RecursionError, KeyboardInterrupt, SystemExit or another non-Exception. Those,
 * and any class the caller did not name, stay set, so they propagate as they do in eager: the
 * caller returns its error value, or the trace sees PyErr_Occurred() and aborts with it.
 * Returns 0 when nothing was pending or it was cleared, -1 when it is left set.
 * The one helper for csrc/ and dynamo_hook/; PyErr_Clear is used only after PyErr_Fetch-like
 * bookkeeping, never to drop an exception of unknown class.
 */
#ifndef TC_PYERR_H
#define TC_PYERR_H

#include <Python.h>
#include <stdarg.h>

/* the classes never cleared: they mean "stop", not "this probe failed" */
static inline int tc_pyerr_fatal(PyObject *t) {
    return !PyErr_GivenExceptionMatches(t, PyExc_Exception) ||
           PyErr_GivenExceptionMatches(t, PyExc_MemoryError) ||
           PyErr_GivenExceptionMatches(t, PyExc_RecursionError);
}

/* the list ends with NULL (the macro adds it); a first NULL stands for PyExc_Exception */
static inline int tc_clear_expected_list(PyObject *first, ...) {
    PyObject *t = PyErr_Occurred();
    if (t == NULL)
        return 0;
    if (tc_pyerr_fatal(t))
        return -1;
    int match = first == NULL || PyErr_GivenExceptionMatches(t, first);
    if (!match && first != NULL) {
        va_list ap;
        va_start(ap, first);
        for (PyObject *x = va_arg(ap, PyObject *); x != NULL && !match; x = va_arg(ap, PyObject *))
            match = PyErr_GivenExceptionMatches(t, x);
        va_end(ap);
    }
    if (!match)
        return -1;
    PyErr_Clear();
    return 0;
}

#define tc_clear_expected(...) tc_clear_expected_list(__VA_ARGS__, (PyObject *)NULL)

#endif
