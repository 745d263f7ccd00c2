/* obj_setorder.c — iterating a set the trace built, in the order eager's set iterates.
 *
 * Sets of constants are held as frozensets (objects.c), whose own order may differ from
 * eager's set: a set's order follows its table size and its insertion history, and a copy
 * (frozenset(s)) is sized differently. So where the trace builds a set as eager does, by
 * adding items one at a time — set(sequence), a display {a, b}, a comprehension, .add(),
 * .update(sequence) — the value notes the items in the order they were added, beside the
 * frozenset: v->globals = (frozenset, history tuple). Iterating it builds eager's set for
 * real from that history (CPython adds them one by one in both cases: the same table) and
 * takes its order. A note holds while the value still holds that very frozenset; anything
 * else that changes the set (discard, a merge of another set) rebinds it to a new one
 * without a note, and iterating it fails as before. Sets of 0 or 1 items iterate in the
 * only order there is. transformers:
 *   for layer_type in set(self.config.layer_types): emb[layer_type] = rotary(..., layer_type)
 *
 * Keeps: everything else of the value (its mutable-set token in items). */
#include "sym.h"

/* A note: (frozenset, steps), steps a tuple of (0, item) adds and (1, set) merges (a real set
 * laid out as eager's: CPython's set_merge follows the other set's table); or (frozenset,
 * None): the frozenset is eager's object itself (a code constant). */

/* the note of s's current frozenset, borrowed; NULL: none */
static PyObject *note_of(const var *s) {
    if (s->kind != V_CONST || s->obj == NULL || s->globals == NULL || !PyTuple_CheckExact(s->globals) ||
        PyTuple_GET_SIZE(s->globals) != 2 || PyTuple_GET_ITEM(s->globals, 0) != s->obj)
        return NULL;
    return PyTuple_GET_ITEM(s->globals, 1);
}

/* s->globals = (s->obj, steps); steals steps (NULL: error set) */
static int note(trace *t, var *s, PyObject *steps) {
    if (steps == NULL)
        return -1;
    PyObject *rec = PyTuple_Pack(2, s->obj, steps);
    Py_DECREF(steps);
    if (rec == NULL || sym_keep(t, rec) == NULL)
        return -1;
    s->globals = rec;
    return 0;
}

/* eager's set for a note: a new set, or NULL (error set) */
static PyObject *replay(PyObject *obj, PyObject *steps) {
    if (steps == Py_None)
        return PySet_New(obj); /* not iterated: only merged (the merge of a copy is the same) */
    PyObject *real = PySet_New(NULL);
    for (Py_ssize_t i = 0; real != NULL && i < PyTuple_GET_SIZE(steps); i++) {
        PyObject *st = PyTuple_GET_ITEM(steps, i);
        PyObject *x = PyTuple_GET_ITEM(st, 1);
        int rc = PyTuple_GET_ITEM(st, 0) == Py_False ? PySet_Add(real, x) : _PySet_Update(real, x);
        if (rc < 0)
            Py_CLEAR(real);
    }
    return real;
}

/* the steps arg adds to a set (update: its items; else arg itself), a new tuple, or NULL
 * (none known; no error set unless one happened) */
static PyObject *steps_of(trace *t, const var *arg, int update) {
    if (!update) {
        PyObject *m = sym_set_member(t, arg); /* a tensor: its object (obj_tensorset.c) */
        if (m == NULL)
            return NULL;
        PyObject *st = PyTuple_Pack(2, Py_False, m);
        PyObject *r = st ? PyTuple_Pack(1, st) : NULL;
        Py_XDECREF(st);
        return r;
    }
    if (arg->kind == V_CONST && arg->obj && PyAnySet_CheckExact(arg->obj)) {
        PyObject *n = note_of(arg); /* merged: eager's object for it, laid out as eager's */
        if (n == NULL)
            return NULL;
        PyObject *real = n == Py_None ? Py_NewRef(arg->obj) : replay(arg->obj, n);
        PyObject *st = real ? PyTuple_Pack(2, Py_True, real) : NULL;
        Py_XDECREF(real);
        PyObject *r = st ? PyTuple_Pack(1, st) : NULL;
        Py_XDECREF(st);
        return r;
    }
    PyObject *seq = NULL;
    if (arg->kind == V_CONST && arg->obj && (PyList_CheckExact(arg->obj) || PyTuple_CheckExact(arg->obj))) {
        seq = PySequence_Tuple(arg->obj);
    } else if (arg->kind == V_SEQ && (arg->items != NULL || arg->n == 0)) {
        for (int i = 0; i < arg->n; i++)
            if (sym_set_member(t, &arg->items[i]) == NULL)
                return NULL;
        seq = PyTuple_New(arg->n);
        for (int i = 0; seq != NULL && i < arg->n; i++)
            PyTuple_SET_ITEM(seq, i, Py_NewRef(sym_set_member(t, &arg->items[i])));
    } else {
        return NULL; /* a dict, a generator, ...: no note */
    }
    if (seq == NULL)
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(seq);
    PyObject *r = PyTuple_New(k);
    for (Py_ssize_t i = 0; r != NULL && i < k; i++) {
        PyObject *st = PyTuple_Pack(2, Py_False, PyTuple_GET_ITEM(seq, i));
        if (st == NULL)
            Py_CLEAR(r);
        else
            PyTuple_SET_ITEM(r, i, st);
    }
    Py_DECREF(seq);
    return r;
}

int sym_set_note_const(trace *t, var *s) {
    if (s->kind != V_CONST || s->obj == NULL || !PyFrozenSet_CheckExact(s->obj))
        return 0;
    return note(t, s, Py_NewRef(Py_None));
}

int sym_set_note_empty(trace *t, var *s) {
    if (s->kind != V_CONST || s->obj == NULL || !PyFrozenSet_CheckExact(s->obj) || PySet_GET_SIZE(s->obj) != 0)
        return 0;
    return note(t, s, PyTuple_New(0));
}

int sym_set_note_added(trace *t, var *s, PyObject *old, const var *v, int update) {
    var was = *s;
    was.obj = old;
    PyObject *h = note_of(&was);
    if (h == NULL || h == Py_None || s->obj == NULL || !PyFrozenSet_CheckExact(s->obj))
        return 0; /* no note: the new frozenset has none either */
    PyObject *more = steps_of(t, v, update);
    if (more == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *nh = PySequence_Concat(h, more);
    Py_DECREF(more);
    return note(t, s, nh);
}

int sym_set_note_seq(trace *t, var *s, const var *arg) {
    if (s->kind != V_CONST || s->obj == NULL || !PyFrozenSet_CheckExact(s->obj))
        return 0;
    PyObject *steps = steps_of(t, arg, 1);
    if (steps == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return note(t, s, steps);
}

int sym_set_iter_items(trace *t, const var *v, var **items, int *n) {
    if (v->kind != V_CONST || v->obj == NULL || !PyAnySet_CheckExact(v->obj))
        return 1;
    PyObject *seq = NULL, *h = note_of(v);
    if (PySet_GET_SIZE(v->obj) <= 1 || h == Py_None) {
        seq = PySequence_Tuple(v->obj); /* the only order, or eager's own object */
    } else {
        if (h == NULL)
            return sym_fail(t, "iteration over a set whose order the trace does not know (a set "
                               "passed in, or changed other than by adding)");
        PyObject *real = replay(v->obj, h); /* eager's set: the same steps in the same order */
        if (real == NULL)
            return -1;
        int eq = PyObject_RichCompareBool(real, v->obj, Py_EQ);
        if (eq == 1)
            seq = PySequence_Tuple(real);
        Py_DECREF(real);
        if (eq == 0)
            return sym_fail(t, "a set's noted history does not match it (internal)");
    }
    if (seq == NULL)
        return -1;
    int k = (int)PyTuple_GET_SIZE(seq);
    var *it = sym_alloc(t, k);
    if (it == NULL) {
        Py_DECREF(seq);
        return -1;
    }
    for (int i = 0; i < k; i++) {
        int rc = sym_set_tensor_item(t, PyTuple_GET_ITEM(seq, i), &it[i]); /* obj_tensorset.c */
        if (rc < 0 || (rc == 1 && sym_wrap(t, PyTuple_GET_ITEM(seq, i), -1, &it[i]) < 0)) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    *items = it;
    *n = k;
    return 0;
}
