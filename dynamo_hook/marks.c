/* marks.c — torch._dynamo's per-tensor dim marks on the arguments of a frame being captured:
 * mark_dynamic / maybe_mark_dynamic (the dim gets a symbol from the first capture on) and
 * mark_static (the dim stays a constant, even with dynamic=True or after it changed).
 * torch keeps them as sets of dim indices in the tensor's attributes; read only when a
 * frame is captured, never on cache hits. */
#include "dh_internal.h"

static PyObject *names[3]; /* interned: dynamic, weak dynamic, static */

/* The int dims of the set attribute `name` of t, as a bit mask over ndim dims (0: none). */
static uint32_t dims_of(PyObject *t, PyObject *name, int ndim) {
    PyObject *s = PyObject_GetAttr(t, name);
    if (s == NULL) {
        (void)tc_clear_expected(PyExc_AttributeError);
        return 0;
    }
    uint32_t m = 0;
    PyObject *it = PyObject_GetIter(s), *x;
    while (it != NULL && (x = PyIter_Next(it)) != NULL) {
        long d = PyLong_Check(x) ? PyLong_AsLong(x) : -1;
        if (d < 0 && d >= -ndim)
            d += ndim;
        if (d >= 0 && d < ndim && d < 31)
            m |= 1u << d;
        Py_DECREF(x);
    }
    Py_XDECREF(it);
    Py_DECREF(s);
    (void)tc_clear_expected(PyExc_Exception);
    return m;
}

int dh_marks_apply(const uint32_t *base, PyObject *const *localsplus, int nlocals, uint32_t *out) {
    if (names[0] == NULL) {
        names[0] = PyUnicode_InternFromString("_dynamo_dynamic_indices");
        names[1] = PyUnicode_InternFromString("_dynamo_weak_dynamic_indices");
        names[2] = PyUnicode_InternFromString("_dynamo_static_indices");
        if (names[0] == NULL || names[1] == NULL || names[2] == NULL) {
            /* only an allocation failed: MemoryError stays set, as in eager */
            Py_CLEAR(names[0]);
            Py_CLEAR(names[1]);
            Py_CLEAR(names[2]);
            return 0;
        }
    }
    int any = 0;
    for (int i = 0; i < DH_DYN_LOCALS; i++)
        out[i] = base ? base[i] : 0;
    for (int i = 0; i < nlocals && i < DH_DYN_LOCALS; i++) {
        PyObject *v = localsplus[i];
        if (v == NULL || !tc_is_tensor(v))
            continue;
        tc_meta m;
        tc_tensor_meta(v, &m);
        if (m.flags)
            continue;
        uint32_t dyn = dims_of(v, names[0], m.ndim) | dims_of(v, names[1], m.ndim);
        uint32_t stat = dims_of(v, names[2], m.ndim);
        if (!dyn && !stat)
            continue;
        any = 1;
        /* a marked dim of size 0 or 1 stays specialized, as in torch */
        for (int d = 0; d < m.ndim && d < 31; d++)
            if ((dyn >> d & 1) && m.sizes[d] < 2)
                dyn &= ~(1u << d);
        uint32_t keep = out[i] & DH_DYN_ND2 ? DH_DYN_ND2 : 0;
        if (dyn && !(out[i] & ~DH_DYN_ND2))
            keep = 0; /* marked explicitly: whatever the tensor's rank */
        out[i] = ((out[i] & ~DH_DYN_ND2) | dyn) & ~stat;
        if (out[i])
            out[i] |= keep;
    }
    return any;
}
