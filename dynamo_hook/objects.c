/* objects.c — mutable Python containers made in the trace: lists.
 *
 * A list is a V_SEQ with is_list set; its items array names it (every copy of the var
 * shares the pointer, and no two lists share one: arrays are never reused). A mutation
 * builds the new items and rebinds every copy in the live frames, containers and
 * attribute writes (sym_rebind, journalled: a call that becomes a graph break undoes it).
 * Lists the caller can see (read from the frame's inputs, globals or attributes: src >= 0)
 * are mutated the same way; their final contents are written back after the graph
 * (sideeffects.c sym_fx_container_write).
 *
 * Requires: items arrays from sym_alloc (trace lifetime).
 * Keeps: the graph (lists hold graph values; nothing here adds nodes). */
#include "sym.h"

#include <string.h>

static int mutable_list(trace *t, const var *l, const char *what) {
    if (l->kind != V_SEQ || !l->is_list || l->items == NULL)
        return sym_fail(t, "list.%s of a non-list", what);
    if (t->in_gen)
        return sym_fail(t, "list.%s inside a generator", what);
    return sym_fx_container_write(t, l); /* passed in: written back after the graph */
}

static var last_list; /* the list as the last set_items left it (sym_list_iadd) */

/* l now holds items[0..n): rebind every copy */
static int set_items(trace *t, const var *l, const var *items, int n) {
    var *m = sym_alloc(t, n);
    if (m == NULL)
        return -1;
    if (n > 0)
        memcpy(m, items, (size_t)n * sizeof *m);
    var nv = *l;
    nv.items = m;
    nv.n = n;
    sym_rebind(t, l->items, &nv);
    last_list = nv;
    return 0;
}

static int none_out(trace *t, var *out) { return sym_const(t, Py_NewRef(Py_None), out); }

static int const_index(trace *t, const var *k, int n, int clamp, long *at) {
    if (k->kind != V_CONST || !PyLong_Check(k->obj))
        return sym_fail(t, "list index that is not a constant int");
    long i = PyLong_AsLong(k->obj);
    if (i == -1 && PyErr_Occurred()) {
        (void)tc_clear_expected(PyExc_OverflowError);
        return sym_fail(t, "list index out of range");
    }
    if (i < 0)
        i += n;
    if (clamp) {
        i = i < 0 ? 0 : i > n ? n : i;
    } else if (i < 0 || i >= n) {
        return sym_fail(t, "list index out of range (eager will raise)");
    }
    *at = i;
    return 0;
}

/* == between two tracked values when it is decidable without the graph: constants, or the
 * same tensor object (identity: list.remove/index/count compare with `is` first). 1/0, -1
 * undecidable (failed). */
static int same_value(trace *t, const var *a, const var *b) {
    if (a->kind == V_TENSOR && b->kind == V_TENSOR &&
        ((a->oid > 0 && b->oid > 0) ? a->oid == b->oid : a->val == b->val))
        return 1;
    if (a->kind == V_CONST && b->kind == V_CONST) {
        int eq = PyObject_RichCompareBool(a->obj, b->obj, Py_EQ);
        if (eq < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "comparison raised"), -1;
        }
        return eq;
    }
    if (a->kind == V_CONST && b->kind != V_TENSOR && b->kind != V_CONST)
        return 0; /* a constant against a container/object: different (no custom __eq__ on
                   * the tracked kinds) */
    if (b->kind == V_CONST && a->kind != V_TENSOR && a->kind != V_CONST)
        return 0;
    return sym_fail(t, "comparison of list items the trace can't decide"), -1;
}

int sym_list_method(trace *t, const var *l, const char *mn, var *args, int nargs, var *out) {
    if (!strcmp(mn, "copy") && nargs == 0) {
        var *m = sym_alloc(t, l->n);
        if (m == NULL)
            return -1;
        memcpy(m, l->items, (size_t)l->n * sizeof *m);
        *out = *l;
        out->src = -1;
        out->items = m;
        return 0;
    }
    if ((!strcmp(mn, "index") || !strcmp(mn, "count") || !strcmp(mn, "__contains__")) && nargs == 1) {
        long cnt = 0, first = -1;
        for (int i = 0; i < l->n; i++) {
            int eq = same_value(t, &l->items[i], &args[0]);
            if (eq < 0)
                return -1;
            if (eq && first < 0)
                first = i;
            cnt += eq;
            if (first >= 0 && strcmp(mn, "count") != 0)
                break; /* index/in stop at the first match, as eager (no later __eq__) */
        }
        if (!strcmp(mn, "count"))
            return sym_const(t, PyLong_FromLong(cnt), out);
        if (!strcmp(mn, "__contains__"))
            return sym_const(t, PyBool_FromLong(first >= 0), out);
        if (first < 0)
            return sym_fail(t, "list.index: value not in list (eager will raise)");
        return sym_const(t, PyLong_FromLong(first), out);
    }
    if (mutable_list(t, l, mn) < 0)
        return -1;
    int n = l->n;
    if (!strcmp(mn, "append") && nargs == 1) {
        var *m = sym_alloc(t, n + 1);
        if (m == NULL)
            return -1;
        memcpy(m, l->items, (size_t)n * sizeof *m);
        m[n] = args[0];
        if (set_items(t, l, m, n + 1) < 0)
            return -1;
        return none_out(t, out);
    }
    if (!strcmp(mn, "extend") && nargs == 1) {
        var *items;
        int k;
        if (sym_iter_items(t, &args[0], &items, &k) < 0)
            return -1;
        var *m = sym_alloc(t, n + k);
        if (m == NULL)
            return -1;
        memcpy(m, l->items, (size_t)n * sizeof *m);
        if (k > 0)
            memcpy(m + n, items, (size_t)k * sizeof *m);
        if (set_items(t, l, m, n + k) < 0)
            return -1;
        return none_out(t, out);
    }
    if (!strcmp(mn, "insert") && nargs == 2) {
        long at;
        if (const_index(t, &args[0], n, 1, &at) < 0)
            return -1;
        var *m = sym_alloc(t, n + 1);
        if (m == NULL)
            return -1;
        memcpy(m, l->items, (size_t)at * sizeof *m);
        m[at] = args[1];
        memcpy(m + at + 1, l->items + at, (size_t)(n - at) * sizeof *m);
        if (set_items(t, l, m, n + 1) < 0)
            return -1;
        return none_out(t, out);
    }
    if (!strcmp(mn, "pop") && nargs <= 1) {
        long at = n - 1;
        if (n == 0)
            return sym_fail(t, "pop from empty list (eager will raise)");
        if (nargs == 1 && const_index(t, &args[0], n, 0, &at) < 0)
            return -1;
        *out = l->items[at];
        var *m = sym_alloc(t, n - 1);
        if (m == NULL)
            return -1;
        memcpy(m, l->items, (size_t)at * sizeof *m);
        memcpy(m + at, l->items + at + 1, (size_t)(n - at - 1) * sizeof *m);
        return set_items(t, l, m, n - 1);
    }
    if (!strcmp(mn, "remove") && nargs == 1) {
        for (int i = 0; i < n; i++) {
            int eq = same_value(t, &l->items[i], &args[0]);
            if (eq < 0)
                return -1;
            if (eq) {
                var *m = sym_alloc(t, n - 1);
                if (m == NULL)
                    return -1;
                memcpy(m, l->items, (size_t)i * sizeof *m);
                memcpy(m + i, l->items + i + 1, (size_t)(n - i - 1) * sizeof *m);
                if (set_items(t, l, m, n - 1) < 0)
                    return -1;
                return none_out(t, out);
            }
        }
        return sym_fail(t, "list.remove(x): x not in list (eager will raise)");
    }
    if (!strcmp(mn, "clear") && nargs == 0)
        return set_items(t, l, NULL, 0) < 0 ? -1 : none_out(t, out);
    if (!strcmp(mn, "reverse") && nargs == 0) {
        var *m = sym_alloc(t, n);
        if (m == NULL)
            return -1;
        for (int i = 0; i < n; i++)
            m[i] = l->items[n - 1 - i];
        return set_items(t, l, m, n) < 0 ? -1 : none_out(t, out);
    }
    if (!strcmp(mn, "sort") && nargs == 0) {
        /* constants only: sorted by Python (stable, as eager) */
        PyObject *lst = PyList_New(n);
        if (lst == NULL)
            return -1;
        for (int i = 0; i < n; i++) {
            if (l->items[i].kind != V_CONST) {
                Py_DECREF(lst);
                return sym_fail(t, "list.sort of non-constant items");
            }
            PyList_SET_ITEM(lst, i, Py_NewRef(l->items[i].obj));
        }
        if (PyList_Sort(lst) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            Py_DECREF(lst);
            return sym_fail(t, "list.sort raised (eager will raise)");
        }
        var *m = sym_alloc(t, n);
        if (m == NULL || sym_keep(t, lst) == NULL)
            return -1;
        for (int i = 0; i < n; i++)
            if (sym_const(t, Py_NewRef(PyList_GET_ITEM(lst, i)), &m[i]) < 0)
                return -1;
        return set_items(t, l, m, n) < 0 ? -1 : none_out(t, out);
    }
    return sym_fail(t, "list.%s not supported", mn);
}

/* l[k] = v, l[a:b] = v (v NULL: del l[k] / del l[a:b]) */
int sym_list_store(trace *t, const var *l, const var *k, const var *v) {
    if (mutable_list(t, l, v ? "__setitem__" : "__delitem__") < 0)
        return -1;
    int n = l->n;
    if (k->kind == V_CONST && PySlice_Check(k->obj)) {
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(k->obj, &start, &stop, &step) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "bad slice");
        }
        Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
        var *items = NULL;
        int kk = 0;
        if (v != NULL && sym_iter_items(t, v, &items, &kk) < 0)
            return -1;
        if (step != 1) {
            if (v != NULL && kk != len)
                return sym_fail(t, "extended slice assignment of a different length (eager will raise)");
            var *m = sym_alloc(t, n);
            if (m == NULL)
                return -1;
            int w = 0, j = 0;
            for (int i = 0; i < n; i++) {
                int in = 0;
                if (step > 0)
                    in = i >= start && i < stop && (i - start) % step == 0;
                else
                    in = i <= start && i > stop && (start - i) % (-step) == 0;
                if (!in)
                    m[w++] = l->items[i];
                else if (v != NULL)
                    m[w++] = items[step > 0 ? j++ : (int)(len - 1 - j++)];
            }
            return set_items(t, l, m, w);
        }
        if (stop < start)
            stop = start;
        int nn = n - (int)(stop - start) + kk;
        var *m = sym_alloc(t, nn);
        if (m == NULL)
            return -1;
        memcpy(m, l->items, (size_t)start * sizeof *m);
        if (kk > 0)
            memcpy(m + start, items, (size_t)kk * sizeof *m);
        memcpy(m + start + kk, l->items + stop, (size_t)(n - stop) * sizeof *m);
        return set_items(t, l, m, nn);
    }
    long at;
    if (const_index(t, k, n, 0, &at) < 0)
        return -1;
    var *m = sym_alloc(t, n);
    if (m == NULL)
        return -1;
    memcpy(m, l->items, (size_t)n * sizeof *m);
    if (v != NULL) {
        m[at] = *v;
        return set_items(t, l, m, n);
    }
    memmove(m + at, m + at + 1, (size_t)(n - at - 1) * sizeof *m);
    return set_items(t, l, m, n - 1);
}

/* l += other: extended in place, the same list is the result */
int sym_list_iadd(trace *t, const var *l, const var *other, var *out) {
    var r;
    if (sym_list_method(t, l, "extend", (var *)other, 1, &r) < 0)
        return -1;
    *out = last_list; /* the frames' copies were rebound; the result is the new list too */
    out->src = l->src;
    return 0;
}

/* ---- sets ---------------------------------------------------------------------------
 * Sets of constants (str, int, ... : what model code builds, e.g. {f.name for f in
 * fields(x)}) are values: a frozenset in a V_CONST with is_list set when eager's object is
 * a set. Mutating methods are not traced (eager runs); the output is a fresh set. */

/* s becomes the frozenset of ns (its reference is consumed); old: s before the add of v */
static int set_commit(trace *t, var *s, PyObject *ns, PyObject *old, const var *v, int update) {
    PyObject *fs = PyFrozenSet_New(ns);
    Py_DECREF(ns);
    if (fs == NULL || sym_keep(t, fs) == NULL)
        return -1;
    s->obj = fs;
    s->is_list = 1;
    return sym_set_note_added(t, s, old, v, update);
}

/* s (a set being built) gets v (update: v's items) */
int sym_set_add(trace *t, var *s, const var *v, int update) {
    if (s->kind != V_CONST || !PyFrozenSet_CheckExact(s->obj))
        return sym_fail(t, "set add on an unsupported set");
    PyObject *old = s->obj; /* eager's order of adds (obj_setorder.c) */
    PyObject *ns = PySet_New(s->obj);
    if (ns == NULL)
        return -1;
    if (update && v->kind == V_CONST && (PyAnySet_Check(v->obj) || PyTuple_CheckExact(v->obj))) {
        /* the items of a constant: order is irrelevant to a set */
        if (_PySet_Update(ns, v->obj) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            Py_DECREF(ns);
            return sym_fail(t, "set update raised (eager will raise)");
        }
        return set_commit(t, s, ns, old, v, update);
    }
    var *items = (var *)v;
    int n = 1;
    if (update && sym_iter_items(t, v, &items, &n) < 0) {
        Py_DECREF(ns);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *m = sym_set_member(t, &items[i]); /* a tensor: its object (obj_tensorset.c) */
        if (m == NULL && t->failed) {
            Py_DECREF(ns);
            return -1;
        }
        if (m == NULL || PySet_Add(ns, m) < 0) {
            (void)tc_clear_expected(PyExc_TypeError);
            Py_DECREF(ns);
            return sym_fail(t, "set of non-constant values");
        }
    }
    return set_commit(t, s, ns, old, v, update);
}

/* set(it) / frozenset(it) of constants */
int sym_make_set(trace *t, int is_set, var *args, int nargs, var *out) {
    if (nargs > 1)
        return sym_fail(t, "set() with %d arguments (eager will raise)", nargs);
    PyObject *e = PyFrozenSet_New(NULL);
    if (e == NULL || sym_const(t, e, out) < 0 || (is_set && sym_set_token(t, out) < 0) ||
        sym_set_note_empty(t, out) < 0) /* its adds noted: eager's order (obj_setorder.c) */
        return -1;
    if (nargs == 1) {
        if (args[0].kind == V_CONST && PyAnySet_Check(args[0].obj)) {
            PyObject *fs = PyFrozenSet_New(args[0].obj);
            if (fs == NULL || sym_keep(t, fs) == NULL)
                return -1;
            out->obj = fs;
        } else if (sym_set_add(t, out, &args[0], 1) < 0) {
            return -1;
        }
    }
    out->is_list = is_set;
    return 0;
}
