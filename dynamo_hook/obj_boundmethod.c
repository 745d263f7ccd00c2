/* obj_boundmethod.c — a bound method object held as a value (in a closure cell, a list, an
 * attribute) and called: its __func__ inlined with __self__ bound, as eager's method call.
 *
 * torch's @torch.no_grad()/@torch.inference_mode()/@torch.enable_grad() decorators keep
 * `ctx_factory = self.clone` in the wrapper's closure and call it on every call; without
 * this each decorated method ran eagerly as its own frame (a break in every caller).
 *
 * Requires: the method has a source (its __func__ and __self__ are reached from it, guarded
 *   as any attribute: the function by identity, the receiver by what the trace reads).
 * Keeps/breaks: nothing; a __func__ that is not a Python function fails as before. */
#include "sym.h"

int sym_call_bound_method(trace *t, const var *m, var *args, int nargs, PyObject *kwnames, var *out) {
    PyObject *fn = PyMethod_GET_FUNCTION(m->obj), *self = PyMethod_GET_SELF(m->obj);
    if (!PyFunction_Check(fn))
        return sym_fail(t, "call of a bound method of a %s", Py_TYPE(fn)->tp_name);
    PyObject *nf = PyUnicode_InternFromString("__func__");
    PyObject *ns = nf ? PyUnicode_InternFromString("__self__") : NULL;
    if (ns == NULL) {
        Py_XDECREF(nf);
        return -1;
    }
    /* index 2: a full getattr when the guards resolve the source (a method has no __dict__) */
    int fs = sym_source(t, DH_S_ATTR, m->src, 2, nf);
    int ss = fs < 0 ? -1 : sym_source(t, DH_S_ATTR, m->src, 2, ns);
    Py_DECREF(nf);
    Py_DECREF(ns);
    if (fs < 0 || ss < 0 || sym_guard_id(t, fs, fn) < 0)
        return -1;
    var sv;
    if (sym_wrap(t, self, ss, &sv) < 0)
        return -1;
    return sym_inline(t, fn, fs, &sv, args, nargs, kwnames, out);
}
