/* redirect.c — frames run by a Python function in their place (training, issue 22).
 *
 * torchc/_optim.py registers the code object every torch.optim `Optimizer.step` runs (its
 * profile_hook_step wrapper) with a function that performs SGD/Adam/AdamW steps as compiled
 * multi-tensor graphs. When a frame of a registered code object starts inside a torchc call
 * (the hook is active: torchc.compile(opt.step), or opt.step() reached from a compiled
 * function, where the capture breaks the graph at the call), the function is called with the
 * frame's arguments instead; NotImplemented from it means "run the frame as usual". Frames
 * outside torchc calls never see the hook, so eager code is unchanged. The capture does not
 * inline a registered code object (sym_call.c): the call is left to run between graphs.
 */
#include "dh_internal.h"

#define MAX_REDIRECTS 8

static struct {
    PyObject *code; /* strong */
    PyObject *fn;   /* strong */
} redirects[MAX_REDIRECTS];
int dh_n_redirects;

int dh_set_frame_redirect(PyObject *code, PyObject *fn) {
    if (!PyCode_Check(code) || (fn != Py_None && !PyCallable_Check(fn))) {
        PyErr_SetString(PyExc_TypeError, "set_frame_redirect(code, callable or None)");
        return -1;
    }
    for (int i = 0; i < dh_n_redirects; i++)
        if (redirects[i].code == code) {
            if (fn == Py_None) { /* unregister: the last entry takes the slot */
                Py_DECREF(redirects[i].code);
                Py_DECREF(redirects[i].fn);
                redirects[i] = redirects[--dh_n_redirects];
                redirects[dh_n_redirects].code = redirects[dh_n_redirects].fn = NULL;
            } else {
                Py_SETREF(redirects[i].fn, Py_NewRef(fn));
            }
            return 0;
        }
    if (fn == Py_None)
        return 0;
    if (dh_n_redirects == MAX_REDIRECTS) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: too many frame redirects");
        return -1;
    }
    redirects[dh_n_redirects].code = Py_NewRef(code);
    redirects[dh_n_redirects].fn = Py_NewRef(fn);
    dh_n_redirects++;
    return 0;
}

PyObject *dh_frame_redirect(PyCodeObject *code) {
    for (int i = 0; i < dh_n_redirects; i++)
        if (redirects[i].code == (PyObject *)code)
            return redirects[i].fn;
    return NULL;
}

/* fn(*positional, *varargs, **keyword-only, **varkw) from a frame that has not started
 * (its arguments are bound in localsplus). New reference, or NULL with an error. */
PyObject *dh_call_with_frame_args(PyObject *fn, PyCodeObject *code, PyObject *const *locals) {
    int argc = code->co_argcount, kwonly = code->co_kwonlyargcount;
    int has_va = (code->co_flags & CO_VARARGS) != 0, has_kw = (code->co_flags & CO_VARKEYWORDS) != 0;
    PyObject *va = has_va ? locals[argc + kwonly] : NULL;
    PyObject *kw = has_kw ? locals[argc + kwonly + has_va] : NULL;
    Py_ssize_t nva = va ? PyTuple_GET_SIZE(va) : 0;
    PyObject *args = PyTuple_New(argc + nva), *kwargs = NULL, *res = NULL;
    if (args == NULL)
        return NULL;
    for (int i = 0; i < argc; i++)
        PyTuple_SET_ITEM(args, i, Py_NewRef(locals[i]));
    for (Py_ssize_t i = 0; i < nva; i++)
        PyTuple_SET_ITEM(args, argc + i, Py_NewRef(PyTuple_GET_ITEM(va, i)));
    if (kwonly || (kw && PyDict_GET_SIZE(kw))) {
        kwargs = kw ? PyDict_Copy(kw) : PyDict_New();
        if (kwargs == NULL)
            goto error;
        for (int i = 0; i < kwonly; i++)
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(code->co_localsplusnames, argc + i),
                               locals[argc + i]) < 0)
                goto error;
    }
    res = PyObject_Call(fn, args, kwargs);
error:
    Py_DECREF(args);
    Py_XDECREF(kwargs);
    return res;
}
