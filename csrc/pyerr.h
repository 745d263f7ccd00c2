/* pyerr.h — clearing a Python exception only where it is expected (issue 24).
 *
 * tc_clear_expected(expected) clears the pending exception when it is an Exception that
 * matches `expected` (an exception type or a tuple of types; NULL: any Exception) and is not a
 * MemoryError. Anything else — MemoryError, KeyboardInterrupt, SystemExit, a type the caller
 * did not expect — stays set, so that it propagates as it does in eager.
 * Returns 0 when nothing was pending or it was cleared, -1 when it is left set (the caller
 * returns its error value). Use it instead of PyErr_Clear. dynamo_hook/'s dh_clear_expected
 * is the NULL (any Exception) case.
 */
#ifndef TC_PYERR_H
#define TC_PYERR_H

#include <Python.h>

static inline int tc_clear_expected(PyObject *expected) {
    PyObject *t = PyErr_Occurred();
    if (t == NULL)
        return 0;
    if (!PyErr_GivenExceptionMatches(t, PyExc_Exception) || PyErr_GivenExceptionMatches(t, PyExc_MemoryError))
        return -1;
    if (expected != NULL && !PyErr_GivenExceptionMatches(t, expected))
        return -1;
    PyErr_Clear();
    return 0;
}

#endif
