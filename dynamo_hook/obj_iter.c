/* obj_iter.c — iterators the frame receives (arguments, and the loop iterator a resume
 * function takes over from the frame that broke inside a for loop): tuple, list and range
 * iterators, read lazily.
 *
 * Such a V_ITER (op SYM_LAZY_ITER) holds the real iterator (obj, with its source src) and
 * pos, the items this trace has taken. Taking item k guards that at least k + 1 items remain
 * (DH_G_ITERLEN) and reads it through a DH_S_NEXT source: the k-th item still to come when the
 * guards run, so the entry holds for any position in the same sequence (a loop of N identical
 * blocks broken in each block compiles its resume function once, not N times). Reaching the
 * end guards the exact count left. What was taken is a side effect on an object the caller
 * sees: the iterator is advanced after the graph (a t->attrw entry, marker ("advance",)), in
 * program order with the other writes, before a graph break's call runs.
 *
 * Requires: the iterator's __reduce__ gives (fn, (seq,), index) (tuple/list/range iterators; 3.12's
 *           range iterator: index None, the range starts at the next item) or
 *           (iter, (remaining,)) (dict and OrderedDict iterators), and __length_hint__.
 * Breaks:   nothing: other iterators keep failing the trace (eager runs).
 */
#include "sym.h"

#include <string.h>

static PyObject *advance_marker; /* ("advance",) */

static PyTypeObject *odict_iter_type; /* OrderedDict's key/value/item iterators share one */

int sym_lazy_iter_type(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    if (odict_iter_type == NULL) {
        PyObject *col = PyImport_ImportModule("collections");
        PyObject *od = col ? PyObject_CallMethod(col, "OrderedDict", NULL) : NULL;
        PyObject *it = od ? PyObject_GetIter(od) : NULL;
        if (it != NULL)
            odict_iter_type = (PyTypeObject *)Py_NewRef((PyObject *)Py_TYPE(it)); /* kept */
        Py_XDECREF(col);
        Py_XDECREF(od);
        Py_XDECREF(it);
        (void)tc_clear_expected(PyExc_Exception);
    }
    /* dict iterators reduce to (iter, (remaining items,)): read the same way from index 0 */
    return tp == &PyTupleIter_Type || tp == &PyListIter_Type || tp == &PyRangeIter_Type ||
           tp == &PyDictIterKey_Type || tp == &PyDictIterValue_Type || tp == &PyDictIterItem_Type ||
           (odict_iter_type != NULL && tp == odict_iter_type);
}

/* iterator it's __reduce__ (a new reference; NULL: it raised, cleared as below) and, where it
 * has the form of a sequence's iterator, that sequence (*seq, borrowed from the result; NULL
 * for another form) and the index of its next item (*idx): (fn, (seq,), index), or (iter,
 * (list of what is left,)) of a dict iterator; 3.12's range iterator: (iter, (range of what
 * is left,), None) */
static PyObject *reduce_seq(PyObject *it, PyObject **seq, Py_ssize_t *idx) {
    *seq = NULL;
    *idx = 0;
    PyObject *r = PyObject_CallMethod(it, "__reduce__", NULL);
    if (r == NULL) {
        (void)tc_clear_expected(PyExc_Exception); /* fatal ones stay set: the caller sees them */
        return NULL;
    }
    if (PyTuple_Check(r) && (PyTuple_GET_SIZE(r) == 2 || PyTuple_GET_SIZE(r) == 3) &&
        PyTuple_Check(PyTuple_GET_ITEM(r, 1)) && PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 1)) == 1 &&
        (PyTuple_GET_SIZE(r) == 2 || PyLong_Check(PyTuple_GET_ITEM(r, 2)) || PyTuple_GET_ITEM(r, 2) == Py_None)) {
        *idx = PyTuple_GET_SIZE(r) == 3 && PyLong_Check(PyTuple_GET_ITEM(r, 2))
                   ? PyLong_AsSsize_t(PyTuple_GET_ITEM(r, 2))
                   : 0;
        *seq = PyTuple_GET_ITEM(PyTuple_GET_ITEM(r, 1), 0);
    }
    return r;
}

/* the k-th item still to come of iterator it (new reference), or NULL (none: no error set) */
PyObject *dh_iter_peek(PyObject *it, Py_ssize_t k) {
    PyObject *seq, *v = NULL;
    Py_ssize_t idx;
    PyObject *r = reduce_seq(it, &seq, &idx);
    if (r == NULL)
        return NULL;
    if (seq != NULL && idx >= 0 && idx + k < PyObject_Length(seq))
        v = PySequence_GetItem(seq, idx + k);
    (void)tc_clear_expected(PyExc_Exception);
    Py_DECREF(r);
    return v;
}

/* the items left in iterator it (DH_G_ITERLEN's count), or -1 (unknown: no error set): its
 * __length_hint__, else what its __reduce__ says is left (OrderedDict iterators have no
 * __length_hint__: guarding them on it rejected every frame that read one) */
Py_ssize_t dh_iter_left(PyObject *it) {
    Py_ssize_t left = PyObject_LengthHint(it, -1);
    if (left >= 0)
        return left;
    (void)tc_clear_expected(PyExc_Exception);
    PyObject *seq;
    Py_ssize_t idx;
    PyObject *r = reduce_seq(it, &seq, &idx);
    if (r == NULL)
        return -1;
    if (seq != NULL) {
        Py_ssize_t n = PyObject_Length(seq);
        left = idx >= 0 && n >= idx ? n - idx : -1;
    }
    (void)tc_clear_expected(PyExc_Exception);
    Py_DECREF(r);
    return left;
}

int sym_lazy_iter_wrap(trace *t, PyObject *o, int src, var *out) {
    if (src < 0)
        return sym_fail(t, "an iterator without a source");
    if (sym_guard_type(t, src, o) < 0)
        return -1;
    *out = sym_var(V_ITER);
    out->op = SYM_LAZY_ITER;
    out->obj = sym_keep(t, Py_NewRef(o));
    out->src = src;
    return out->obj ? 0 : -1;
}

/* the count taken, logged for replay (the last count wins; the entry keeps its place) */
static int log_taken(trace *t, const var *it) {
    if (t->in_gen)
        return sym_fail(t, "an iterator passed in, advanced inside a generator");
    if (advance_marker == NULL && (advance_marker = Py_BuildValue("(s)", "advance")) == NULL)
        return -1; /* kept for the process */
    var *v = sym_alloc(t, 1);
    if (v == NULL || sym_const(t, PyLong_FromLong(it->pos), v) < 0)
        return -1;
    for (int i = 0; i < t->nattrw; i++)
        if (t->attrw[i].obj == it->obj && t->attrw[i].name == advance_marker) {
            t->attrw[i].val = v;
            return 0;
        }
    sym_attrw *w = sym_attrw_new(t);
    if (w == NULL)
        return -1;
    w->src = it->src;
    w->obj = it->obj;
    w->name = advance_marker;
    w->val = v;
    return 0;
}

static int guard_left(trace *t, int src, int n, int exact) {
    dh_guard *g = sym_new_guard(t, DH_G_ITERLEN, src);
    if (g == NULL)
        return -1;
    g->value = exact ? n : -n; /* exact: n left; else at least n left */
    return 0;
}

int sym_lazy_iter_next(trace *t, var *it, var *out) {
    PyObject *v = dh_iter_peek(it->obj, it->pos);
    if (v == NULL) {
        if (guard_left(t, it->src, it->pos, 1) < 0)
            return -1;
        return 0;
    }
    int s = sym_source(t, DH_S_NEXT, it->src, it->pos, NULL);
    int rc = s < 0 || guard_left(t, it->src, it->pos + 1, 0) < 0 ? -1 : sym_wrap(t, v, s, out);
    Py_DECREF(v);
    if (rc < 0)
        return -1;
    it->pos++;
    return log_taken(t, it) < 0 ? -1 : 1;
}

int sym_lazy_iter_drain(trace *t, var *it, var **items, int *n) {
    int cap = 16, k = 0;
    var *buf = sym_alloc(t, cap);
    if (buf == NULL)
        return -1;
    for (;;) {
        var x;
        int r = sym_lazy_iter_next(t, it, &x);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        if (k == cap) {
            var *nb = sym_alloc(t, 2 * cap);
            if (nb == NULL)
                return -1;
            memcpy(nb, buf, (size_t)k * sizeof(var));
            buf = nb;
            cap *= 2;
        }
        buf[k++] = x;
    }
    *items = buf;
    *n = k;
    return 0;
}

/* eval_frame.c, after the graph: the iterator advanced by the count taken */
int dh_replay_advance(PyObject *it, PyObject *count) {
    long k = PyLong_AsLong(count);
    if (k == -1 && PyErr_Occurred())
        return -1;
    for (long i = 0; i < k; i++) {
        PyObject *x = PyIter_Next(it);
        if (x == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "torchc: an iterator passed in ended early");
            return -1;
        }
        Py_DECREF(x);
    }
    return 0;
}
