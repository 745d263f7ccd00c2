/* obj_data.c — standard-library containers and data objects in the trace:
 * collections.OrderedDict / defaultdict / deque made in the frame, iter() / next() over
 * tracked sequences, sorted() and list.sort() with key= and reverse=, dict.update(**kw) /
 * popitem / clear, dataclasses' Field objects (what dataclasses.fields() returns, so
 * fields(), replace() and __post_init__ are inlined as written), and torch.return_types
 * results handed to the frame (a resume function after an op left to eager).
 *
 * Representation (sym.h):
 *   OrderedDict: a V_DICT with op SYM_DICT_ORDERED; defaultdict: op SYM_DICT_DEFAULT, the
 *     default factory in globals (kept) and its op in pos. Dict updates keep both
 *     (sym_containers.c), so every copy stays the same kind of dict. At the output (or a
 *     graph break) the dict is built as a plain dict and wrapped: OrderedDict(d) /
 *     partial(defaultdict, factory)(d).
 *   deque: a V_SEQ list whose obj is collections.deque: the list machinery (objects.c:
 *     identity by the items array, mutation rebinds every copy, caller-visible state written
 *     back) with deque's method names; built as deque(list) at the output.
 *   iterators the frame holds (iter(x), or any V_ITER advanced by next()): op SYM_OWN_ITER,
 *     a fresh items array naming the iterator; next() and FOR_ITER move pos and rebind
 *     every copy, so the local and the loop see one iterator.
 *   Field: a V_CONST (identity-guarded where read from a class's __dataclass_fields__);
 *     its attributes are constants (a class's fields do not change once it is made).
 *   named tuples (a Python subclass of tuple with no __dict__: collections.namedtuple,
 *     typing.NamedTuple, pytree's NodeDef): a V_SEQ tuple whose obj is the class, as
 *     torch.return_types results. Fields read by the class's _tuplegetter index; methods,
 *     properties and classmethods of the class inlined on it; cls(...) inlines the class's
 *     Python __new__, whose tuple.__new__(cls, items) makes the V_SEQ; built at the output
 *     as tuple.__new__(cls, items) (no Python runs).
 *
 * Requires: hooks in ops_table.c (sym_data_call, sym_data_method), sym_attr.c
 *           (sym_data_attr), variables.c (sym_data_wrap), sym_output.c (sym_data_out_type).
 * Keeps:    eager's results and order of effects: key functions run once per item in order;
 *           sorting is stable (equal keys keep their order, reverse= as eager); a comparison
 *           the trace can't decide (two different tensors) fails the trace, eager runs.
 * Breaks:   nothing: every unsupported form returns 1 (the caller's rules apply) or fails
 *           the trace with a reason.
 */
#include "sym_interp.h"

#include <string.h>
#include <structmember.h>

static PyObject *od_type, *dd_type, *dq_type, *ct_type, *field_type, *partial_fn, *dc_sentinel[2], *tuple_new;
static int inited;

static int init_once(void) {
    if (inited)
        return od_type != NULL ? 0 : -1;
    inited = 1;
    PyObject *col = PyImport_ImportModule("collections");
    PyObject *dc = PyImport_ImportModule("dataclasses");
    PyObject *ft = PyImport_ImportModule("functools");
    if (col && dc && ft) { /* kept for the process */
        od_type = PyObject_GetAttrString(col, "OrderedDict");
        dd_type = PyObject_GetAttrString(col, "defaultdict");
        dq_type = PyObject_GetAttrString(col, "deque");
        ct_type = PyObject_GetAttrString(col, "Counter");
        field_type = PyObject_GetAttrString(dc, "Field");
        /* the markers a dataclass's generated __init__ compares with `is` (its defaults) */
        dc_sentinel[0] = PyObject_GetAttrString(dc, "_HAS_DEFAULT_FACTORY");
        dc_sentinel[1] = PyObject_GetAttrString(dc, "MISSING");
        if (!dc_sentinel[0] || !dc_sentinel[1])
            (void)tc_clear_expected(PyExc_AttributeError);
        partial_fn = PyObject_GetAttrString(ft, "partial");
        tuple_new = PyObject_GetAttrString((PyObject *)&PyTuple_Type, "__new__");
    }
    Py_XDECREF(col);
    Py_XDECREF(dc);
    Py_XDECREF(ft);
    if (!od_type || !dd_type || !dq_type || !ct_type || !field_type || !partial_fn) {
        Py_CLEAR(od_type);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return -1;
    }
    return 0;
}

int sym_data_is_deque(const var *v) {
    return v->kind == V_SEQ && v->is_list && v->obj != NULL && init_once() == 0 && v->obj == dq_type;
}

/* o is a collections.defaultdict (the exact type): a dict the trace reads and writes as one,
 * its default_factory called for a missing key (sym_containers.c) */
int sym_data_is_defaultdict(PyObject *o) {
    return o != NULL && init_once() == 0 && (PyObject *)Py_TYPE(o) == dd_type;
}

static int none_out(trace *t, var *out) { return sym_const(t, Py_NewRef(Py_None), out); }

static int empty_dict(trace *t, int op, var *out) {
    PyObject *keys = PyTuple_New(0);
    var *vals = sym_alloc(t, 1);
    if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL)
        return -1;
    *out = sym_var(V_DICT);
    out->obj = keys;
    out->items = vals; /* names the dict (never shared) */
    out->op = op;
    return 0;
}

/* d (a local value, not rebound) updated from x: a V_DICT, a constant dict, or an
 * iterable of (key, value) pairs */
static int dict_update_from(trace *t, var *d, const var *x) {
    if (x->kind == V_DICT || (x->kind == V_CONST && PyDict_Check(x->obj)))
        return sym_dict_merge(t, d, x);
    var *items;
    int n;
    if (sym_iter_items(t, x, &items, &n) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        var *kv;
        int k;
        if (sym_iter_items(t, &items[i], &kv, &k) < 0)
            return -1;
        if (k != 2)
            return sym_fail(t, "dict update sequence element has length %d (eager will raise)", k);
        if (kv[0].kind != V_CONST)
            return sym_fail(t, "dict update with a non-constant key");
        if (sym_dict_set(t, d, kv[0].obj, &kv[1]) < 0)
            return -1;
    }
    return 0;
}

/* keyword arguments args[0..nkw) named by kwnames, stored into d (a local value) in order */
static int dict_update_kw(trace *t, var *d, var *args, PyObject *kwnames, int nkw) {
    for (int i = 0; i < nkw; i++)
        if (sym_dict_set(t, d, PyTuple_GET_ITEM(kwnames, i), &args[i]) < 0)
            return -1;
    return 0;
}

/* OrderedDict(...) / defaultdict(factory, ...) / dict(od) */
static int make_mapping(trace *t, int op, var *args, int npos, PyObject *kwnames, var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *factory = NULL;
    int fop = -1;
    if (op == SYM_DICT_DEFAULT) {
        if (npos >= 1) {
            const var *f = &args[0];
            if (f->kind == V_CONST && f->obj == Py_None) {
                factory = Py_None;
            } else if (f->kind == V_FUNC && f->obj != NULL && f->op != SYM_MADE_FUNCTION &&
                       f->op != SYM_PARTIAL && f->op != SYM_CTX_EXIT) {
                factory = f->obj;
                fop = f->op;
            } else if (f->kind == V_FUNC && f->op == SYM_MADE_FUNCTION) {
                /* a nested function or lambda made in the trace (defaultdict(lambda:
                 * defaultdict(list))): its var, kept with the trace, in a capsule; such a
                 * dict never leaves the graph (sym_data_out_type) */
                var *fv = sym_alloc(t, 1);
                if (fv == NULL)
                    return -1;
                *fv = *f;
                factory = sym_keep(t, PyCapsule_New(fv, "torchc.made_factory", NULL));
                if (factory == NULL)
                    return -1;
                fop = SYM_MADE_FUNCTION;
            } else {
                return sym_fail(t, "defaultdict with this default_factory not supported");
            }
            args++;
            npos--;
        } else {
            factory = Py_None;
        }
    }
    if (npos > 1)
        return sym_fail(t, "mapping made with %d positional arguments (eager will raise)", npos);
    if (empty_dict(t, op, out) < 0)
        return -1;
    if (op == SYM_DICT_DEFAULT) {
        out->globals = factory;
        out->pos = fop;
    }
    if (npos == 1 && dict_update_from(t, out, &args[0]) < 0)
        return -1;
    return dict_update_kw(t, out, args + npos, kwnames, nkw);
}

/* ---- iterators ------------------------------------------------------------------------ */

/* it (a V_ITER the frame holds) gets a fresh items array naming it, every copy rebound */
int sym_iter_own(trace *t, var *it) {
    if (it->kind != V_ITER || it->op == SYM_LAZY_ITER)
        return sym_fail(t, "not an iterator");
    if (it->op == SYM_OWN_ITER)
        return 0;
    int left = it->n - it->pos;
    var *m = sym_alloc(t, left > 0 ? left : 1);
    if (m == NULL)
        return -1;
    if (left > 0)
        memcpy(m, it->items + it->pos, (size_t)left * sizeof *m);
    var nv = *it;
    nv.items = m;
    nv.n = left;
    nv.pos = 0;
    nv.op = SYM_OWN_ITER;
    sym_rebind(t, it->items, &nv);
    *it = nv;
    return 0;
}

/* it advanced by one (an owned iterator: every copy follows) */
void sym_iter_advanced(trace *t, const var *it) {
    if (it->kind == V_ITER && it->op == SYM_OWN_ITER)
        sym_rebind(t, it->items, it);
}

static int make_iter(trace *t, const var *x, var *out) {
    if (x->kind == V_ITER) { /* iter(it) is it */
        *out = *x;
        return 0;
    }
    var *items;
    int n;
    if (sym_iter_items(t, x, &items, &n) < 0)
        return -1;
    var *m = sym_alloc(t, n > 0 ? n : 1);
    if (m == NULL)
        return -1;
    if (n > 0)
        memcpy(m, items, (size_t)n * sizeof *m);
    *out = sym_var(V_ITER);
    out->op = SYM_OWN_ITER;
    out->items = m;
    out->n = n;
    /* over a list the caller can see: eager's iterator would see its later growth */
    out->is_list = x->kind == V_SEQ && x->is_list && x->src >= 0;
    return 0;
}

static int next_item(trace *t, var *args, int npos, var *out) {
    var *it = &args[0];
    if (it->kind != V_ITER)
        return sym_fail(t, "next() of a non-iterator");
    if (it->op == SYM_LAZY_ITER) /* its copies are not named by an array: eager's next */
        return sym_fail(t, "next() of an iterator passed in not supported");
    if (sym_iter_own(t, it) < 0)
        return -1;
    if (it->pos >= it->n) {
        if (npos == 2) {
            *out = args[1];
            return 0;
        }
        return sym_fail(t, "StopIteration (eager will raise)");
    }
    *out = it->items[it->pos];
    var nv = *it;
    nv.pos++;
    sym_rebind(t, it->items, &nv);
    return 0;
}

/* ---- sorting -------------------------------------------------------------------------- */

/* a == b decidable without the graph (constants; the same tensor object): 1/0, -1 failed */
static int same(trace *t, const var *a, const var *b) {
    if (a->kind == V_CONST && b->kind == V_CONST) {
        if (a->obj == b->obj)
            return 1;
        int eq = PyObject_RichCompareBool(a->obj, b->obj, Py_EQ);
        if (eq < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "comparison raised (eager will raise)");
        }
        return eq;
    }
    if (a->kind == V_TENSOR && b->kind == V_TENSOR && a->oid > 0 && a->oid == b->oid)
        return 1; /* identity first, as tuple comparison does */
    if ((a->kind == V_OBJ || a->kind == V_FUNC) && a->kind == b->kind && a->obj == b->obj)
        return sym_pin_identity(t, a) < 0 || sym_pin_identity(t, b) < 0 ? -1 : 1;
    return sym_fail(t, "sort: a comparison the trace can't decide");
}

/* a < b: 1/0, -1 failed */
static int less(trace *t, const var *a, const var *b, int depth) {
    if (a->kind == V_CONST && b->kind == V_CONST) {
        int r = PyObject_RichCompareBool(a->obj, b->obj, Py_LT);
        if (r < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "sort: '<' raised (eager will raise)");
        }
        return r;
    }
    if (a->kind == V_SEQ && b->kind == V_SEQ && a->is_list == b->is_list && a->obj == NULL &&
        b->obj == NULL && depth < 8) {
        /* sequences: the first items that differ decide (== first, then <), else length */
        int n = a->n < b->n ? a->n : b->n;
        for (int i = 0; i < n; i++) {
            int eq = same(t, &a->items[i], &b->items[i]);
            if (eq < 0)
                return -1;
            if (!eq)
                return less(t, &a->items[i], &b->items[i], depth + 1);
        }
        return a->n < b->n;
    }
    return sym_fail(t, "sort: a comparison the trace can't decide");
}

/* idx[0..n) stably sorted by keys (reverse: descending, equal keys in their order) */
static int merge_sort(trace *t, const var *keys, int *idx, int *tmp, int n, int reverse) {
    if (n < 2)
        return 0;
    int h = n / 2;
    if (merge_sort(t, keys, idx, tmp, h, reverse) < 0 ||
        merge_sort(t, keys, idx + h, tmp, n - h, reverse) < 0)
        return -1;
    int i = 0, j = h, k = 0;
    while (i < h && j < n) {
        /* take the right one only when strictly before the left one */
        int r = reverse ? less(t, &keys[idx[i]], &keys[idx[j]], 0) : less(t, &keys[idx[j]], &keys[idx[i]], 0);
        if (r < 0)
            return -1;
        tmp[k++] = r ? idx[j++] : idx[i++];
    }
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
    return 0;
}

/* items[0..n) sorted into a new array (*sorted_out), key/reverse from keyword arguments */
static int sort_items(trace *t, const var *items, int n, var *kw, PyObject *kwnames, var **sorted_out) {
    const var *key = NULL;
    int reverse = 0;
    for (Py_ssize_t i = 0; kwnames && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(kn, "key") == 0) {
            if (!(kw[i].kind == V_CONST && kw[i].obj == Py_None))
                key = &kw[i];
        } else if (PyUnicode_CompareWithASCIIString(kn, "reverse") == 0) {
            if (kw[i].kind != V_CONST)
                return sym_fail(t, "sort with a non-constant reverse=");
            reverse = PyObject_IsTrue(kw[i].obj);
            if (reverse < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "sort: bool(reverse) raised");
            }
        } else {
            return sym_fail(t, "sort() got an unexpected keyword %U (eager will raise)", kn);
        }
    }
    var *keys = (var *)items;
    if (key != NULL) {
        keys = sym_alloc(t, n > 0 ? n : 1);
        if (keys == NULL)
            return -1;
        for (int i = 0; i < n; i++) {
            var a = items[i];
            if (sym_call(t, key, &a, 1, NULL, &keys[i]) < 0)
                return -1;
            if (t->failed)
                return -1;
        }
    }
    int *idx = malloc(sizeof(int) * (size_t)(2 * n + 1));
    if (idx == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    int rc = merge_sort(t, keys, idx, idx + n, n, reverse);
    var *m = rc < 0 ? NULL : sym_alloc(t, n > 0 ? n : 1);
    if (m != NULL)
        for (int i = 0; i < n; i++)
            m[i] = items[idx[i]];
    free(idx);
    if (m == NULL)
        return -1;
    *sorted_out = m;
    return 0;
}

static int do_sorted(trace *t, var *args, int npos, PyObject *kwnames, var *out) {
    if (npos != 1)
        return sym_fail(t, "sorted() takes one positional argument (eager will raise)");
    var *items, *m;
    int n;
    if (args[0].kind == V_CONST && PyAnySet_Check(args[0].obj) && kwnames == NULL) {
        /* sorted(a set of constants): the set's order does not matter, eager's result is
         * the sorted list of its items (made now) */
        PyObject *l = PySequence_List(args[0].obj);
        if (l == NULL || PyList_Sort(l) < 0) {
            Py_XDECREF(l);
            if (tc_clear_expected(PyExc_Exception) < 0)
                return -1;
            return sym_fail(t, "sorted() of a set raised (eager will raise)");
        }
        n = (int)PyList_GET_SIZE(l);
        m = sym_alloc(t, n > 0 ? n : 1);
        for (int i = 0; m != NULL && i < n; i++)
            if (sym_const(t, Py_NewRef(PyList_GET_ITEM(l, i)), &m[i]) < 0)
                m = NULL;
        Py_DECREF(l);
        if (m == NULL)
            return -1;
        *out = sym_var(V_SEQ);
        out->is_list = 1;
        out->n = n;
        out->items = m;
        return 0;
    }
    if (sym_iter_items(t, &args[0], &items, &n) < 0)
        return -1;
    if (sort_items(t, items, n, args + 1, kwnames, &m) < 0)
        return -1;
    *out = sym_var(V_SEQ);
    out->is_list = 1;
    out->n = n;
    out->items = m;
    return 0;
}

/* min/max(iterable or *args, key=f[, default=d]): sorted's stable order (max: reversed, equal
 * keys in their order), its first item, which is eager's first minimal / maximal one */
static int do_minmax(trace *t, int ismax, var *args, int npos, PyObject *kwnames, var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    var *key = NULL, *dflt = NULL;
    for (int i = 0; i < nkw; i++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(kn, "key") == 0)
            key = &args[npos + i];
        else if (PyUnicode_CompareWithASCIIString(kn, "default") == 0)
            dflt = &args[npos + i];
        else
            return 1;
    }
    if (key == NULL || npos < 1 || (dflt != NULL && npos > 1))
        return 1;
    var *items = args;
    int n = npos;
    if (npos == 1 && sym_iter_items(t, &args[0], &items, &n) < 0)
        return -1;
    if (n == 0) {
        if (dflt == NULL)
            return sym_raise(t, PyExc_ValueError, NULL, "%s() of an empty sequence (eager will raise)", ismax ? "max" : "min");
        *out = *dflt;
        return 0;
    }
    static PyObject *kn2;
    if (kn2 == NULL && (kn2 = Py_BuildValue("(ss)", "key", "reverse")) == NULL) /* kept */
        return -1;
    var kw[2];
    kw[0] = *key;
    if (sym_const(t, PyBool_FromLong(ismax), &kw[1]) < 0)
        return -1;
    var *m;
    if (sort_items(t, items, n, kw, kn2, &m) < 0)
        return -1;
    *out = m[0];
    return 0;
}

/* map(fn, *iterables) / filter(fn or None, iterable): fn called on the items now, in eager's
 * order, with side effects refused there as in a generator (t->in_gen: a consumer stopping
 * early or interleaving effects of its own would see them in another order); an iterator
 * over the results (filter: the items whose answer is a constant true) */
static int do_map_filter(trace *t, int isfilter, var *args, int npos, PyObject *kwnames, var *out) {
    if (kwnames != NULL || npos < 2 || (isfilter && npos != 2))
        return 1;
    int nit = npos - 1, n = -1;
    var **its = malloc(sizeof(var *) * (size_t)nit);
    if (its == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int k = 0; k < nit; k++) {
        int nk;
        if (sym_iter_items(t, &args[1 + k], &its[k], &nk) < 0) {
            free(its);
            return -1;
        }
        n = n < 0 || nk < n ? nk : n;
    }
    var *res = sym_alloc(t, n > 0 ? n : 1), *cargs = sym_alloc(t, nit);
    if (res == NULL || cargs == NULL) {
        free(its);
        return -1;
    }
    int none = isfilter && args[0].kind == V_CONST && args[0].obj == Py_None, m = 0, rc = 0;
    t->in_gen++;
    t->in_map++;
    for (int i = 0; i < n && rc == 0; i++) {
        for (int k = 0; k < nit; k++)
            cargs[k] = its[k][i];
        var r;
        if (none)
            r = cargs[0];
        else if (sym_call(t, &args[0], cargs, nit, NULL, &r) < 0 || t->failed) {
            rc = -1;
            break;
        }
        if (!isfilter) {
            res[m++] = r;
            continue;
        }
        int truth = r.kind == V_CONST ? PyObject_IsTrue(r.obj) : -2;
        if (truth == -1)
            (void)tc_clear_expected(PyExc_Exception);
        if (truth < 0)
            rc = sym_fail(t, "filter() with an answer the trace can't decide");
        else if (truth)
            res[m++] = cargs[0];
    }
    t->in_gen--;
    t->in_map--;
    free(its);
    if (rc < 0)
        return -1;
    *out = sym_var(V_ITER);
    out->op = SYM_OWN_ITER;
    out->items = res;
    out->n = m;
    return 0;
}

/* ---- calls ----------------------------------------------------------------------------- */

/* a named tuple's class: a Python subclass of tuple adding no instance state (no __dict__,
 * no slots: its layout is tuple's), object's getattr */
int sym_ntuple_class(PyObject *cls) {
    if (cls == NULL || !PyType_Check(cls))
        return 0;
    PyTypeObject *tp = (PyTypeObject *)cls, *b = tp;
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || tp->tp_dictoffset != 0 ||
        tp->tp_basicsize != PyTuple_Type.tp_basicsize || tp->tp_getattro != PyObject_GenericGetAttr ||
        Py_TYPE(cls)->tp_call != PyType_Type.tp_call)
        return 0;
    while (b != NULL && (b->tp_flags & Py_TPFLAGS_HEAPTYPE))
        b = b->tp_base;
    return b == &PyTuple_Type;
}

/* cls(*args) of a named tuple class: its Python __new__ inlined (tuple's __init__) */
static int ntuple_make(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    static PyObject *s_new, *s_init;
    if (s_new == NULL && ((s_new = PyUnicode_InternFromString("__new__")) == NULL ||
                          (s_init = PyUnicode_InternFromString("__init__")) == NULL))
        return -1;
    PyTypeObject *tp = (PyTypeObject *)fn->obj;
    if (_PyType_Lookup(tp, s_init) != _PyType_Lookup(&PyTuple_Type, s_init))
        return sym_fail(t, "a tuple subclass with its own __init__ (%s)", tp->tp_name);
    PyObject *nw = _PyType_Lookup(tp, s_new);
    PyObject *f = nw != NULL && Py_IS_TYPE(nw, &PyStaticMethod_Type) ? PyObject_GetAttrString(nw, "__func__") : NULL;
    if (f == NULL)
        (void)tc_clear_expected(PyExc_Exception);
    if (f == NULL || !PyFunction_Check(f)) {
        Py_XDECREF(f);
        return sym_fail(t, "%s() without a Python __new__", tp->tp_name);
    }
    if (sym_keep(t, f) == NULL)
        return -1;
    int s = sym_source(t, DH_S_CONST, -1, 0, f);
    return s < 0 ? -1 : sym_inline(t, f, s, fn, args, nargs, kwnames, out);
}

/* tuple.__new__(cls, seq) of a named tuple class: the items of seq, as cls */
static int ntuple_new(trace *t, var *args, int nargs, var *out) {
    if (nargs != 2)
        return sym_fail(t, "tuple.__new__(%s) with %d arguments", ((PyTypeObject *)args[0].obj)->tp_name, nargs);
    var *from;
    int n;
    if (sym_iter_items(t, &args[1], &from, &n) < 0) /* a sequence, an iterator (map: _replace) */
        return -1;
    var *items = sym_alloc(t, n > 0 ? n : 1);
    if (items == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        items[i] = from[i];
    *out = sym_var(V_SEQ);
    out->obj = args[0].obj;
    out->n = n;
    out->items = items;
    return 0;
}

static int ct_new(trace *t, var *args, int npos, PyObject *kwnames, var *out);

int sym_data_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    if (fn->kind != V_FUNC || fn->obj == NULL || fn->op == SYM_MADE_FUNCTION || init_once() < 0)
        return 1;
    PyObject *f = fn->obj;
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, npos = nargs - nkw;
    if (f == tuple_new && tuple_new != NULL && nargs >= 1 && !nkw &&
        (args[0].kind == V_FUNC || args[0].kind == V_CONST) && sym_ntuple_class(args[0].obj))
        return ntuple_new(t, args, nargs, out);
    if (sym_ntuple_class(f))
        return ntuple_make(t, fn, args, nargs, kwnames, out);
    if (f == (PyObject *)&PyMap_Type || f == (PyObject *)&PyFilter_Type) {
        int rc = do_map_filter(t, f == (PyObject *)&PyFilter_Type, args, npos, kwnames, out);
        if (rc != 1)
            return rc;
    }
    if (f == od_type)
        return make_mapping(t, SYM_DICT_ORDERED, args, npos, kwnames, out);
    if (f == ct_type)
        return ct_new(t, args, npos, kwnames, out);
    if (f == dd_type)
        return make_mapping(t, SYM_DICT_DEFAULT, args, npos, kwnames, out);
    if (f == (PyObject *)&PyDict_Type && npos <= 1 &&
        (nkw > 0 || (npos == 1 && ((args[0].kind == V_DICT && args[0].op != 0) || args[0].kind == V_SEQ ||
                                   args[0].kind == V_ITER))))
        return make_mapping(t, 0, args, npos, kwnames, out); /* dict(od), dict(pairs), dict(**kw) */
    if ((f == (PyObject *)&PyList_Type || f == (PyObject *)&PyTuple_Type) && nargs == 0) {
        /* list() / tuple(): empty (a fresh array names a list) */
        *out = sym_var(V_SEQ);
        out->is_list = f == (PyObject *)&PyList_Type;
        out->items = sym_alloc(t, 1);
        return out->items ? 0 : -1;
    }
    if (f == dq_type) {
        /* deque(iterable=(), maxlen=None): maxlen + 1 kept in pos (0: unbounded) */
        long maxlen = -1;
        if (nargs > 2 || (nkw == 1 && strcmp(PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, 0)), "maxlen") != 0) || nkw > 1)
            return sym_fail(t, "deque() with these arguments not supported");
        if (nargs == 2 || nkw == 1) { /* deque(it, n), deque(it, maxlen=n), deque(maxlen=n) */
            const var *ml = &args[nargs - 1];
            if (ml->kind != V_CONST)
                return sym_fail(t, "deque maxlen that is not a constant");
            if (ml->obj != Py_None) {
                if (!PyLong_CheckExact(ml->obj))
                    return sym_fail(t, "deque maxlen that is not an int (eager will raise)");
                maxlen = PyLong_AsLong(ml->obj);
                if (maxlen < 0 || maxlen >= INT_MAX) {
                    (void)tc_clear_expected(PyExc_OverflowError);
                    return sym_fail(t, "deque maxlen out of range (eager will raise)");
                }
            }
        }
        var *items = NULL;
        int n = 0;
        if (npos >= 1 && sym_iter_items(t, &args[0], &items, &n) < 0)
            return -1;
        if (maxlen >= 0 && n > maxlen) { /* the last maxlen items, as eager */
            items += n - maxlen;
            n = (int)maxlen;
        }
        var *m = sym_alloc(t, n > 0 ? n : 1);
        if (m == NULL)
            return -1;
        if (n > 0)
            memcpy(m, items, (size_t)n * sizeof *m);
        *out = sym_var(V_SEQ);
        out->is_list = 1;
        out->obj = dq_type;
        out->n = n;
        out->items = m;
        out->pos = maxlen >= 0 ? (int)maxlen + 1 : 0;
        return 0;
    }
    if (!PyCFunction_Check(f) || PyCFunction_GET_SELF(f) == NULL || !PyModule_Check(PyCFunction_GET_SELF(f)) ||
        strcmp(PyModule_GetName(PyCFunction_GET_SELF(f)) ? PyModule_GetName(PyCFunction_GET_SELF(f)) : "", "builtins") != 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return 1;
    }
    const char *name = ((PyCFunctionObject *)f)->m_ml->ml_name;
    if (!strcmp(name, "iter") && nargs == 1 && args[0].kind != V_OBJ) /* a tensor: its rows */
        return make_iter(t, &args[0], out);
    if (!strcmp(name, "next") && !nkw && (npos == 1 || npos == 2) && args[0].kind == V_ITER)
        return next_item(t, args, npos, out);
    if (!strcmp(name, "sorted"))
        return do_sorted(t, args, npos, kwnames, out);
    if ((!strcmp(name, "min") || !strcmp(name, "max")) && kwnames != NULL)
        return do_minmax(t, name[1] == 'a', args, npos, kwnames, out);
    return 1;
}

/* ---- methods ---------------------------------------------------------------------------- */

/* a bounded deque dq now holds pre[0..np) + its items + post[0..nq): trimmed to maxlen from the
 * left (from_left) or the right, as eager's append/extend vs appendleft/extendleft */
static int deque_bounded_store(trace *t, const var *dq, const var *pre, int np, const var *post, int nq,
                               int from_left, var *out) {
    int n = np + dq->n + nq, maxlen = dq->pos - 1;
    var *m = sym_alloc(t, n > 0 ? n : 1);
    if (m == NULL)
        return -1;
    if (np > 0)
        memcpy(m, pre, (size_t)np * sizeof *m);
    if (dq->n > 0)
        memcpy(m + np, dq->items, (size_t)dq->n * sizeof *m);
    if (nq > 0)
        memcpy(m + np + dq->n, post, (size_t)nq * sizeof *m);
    var tmp = sym_var(V_SEQ);
    tmp.n = n > maxlen ? maxlen : n;
    tmp.items = from_left && n > maxlen ? m + (n - maxlen) : m;
    var sl;
    if (sym_const(t, PySlice_New(NULL, NULL, NULL), &sl) < 0 || sym_list_store(t, dq, &sl, &tmp) < 0)
        return -1;
    return none_out(t, out);
}

static int deque_method(trace *t, const var *dq, const char *mn, var *args, int nargs, var *out) {
    var a[2];
    if (dq->pos > 0) { /* bounded: the methods that add items drop from the other end */
        if (!strcmp(mn, "append") && nargs == 1)
            return deque_bounded_store(t, dq, NULL, 0, &args[0], 1, 1, out);
        if (!strcmp(mn, "appendleft") && nargs == 1)
            return deque_bounded_store(t, dq, &args[0], 1, NULL, 0, 0, out);
        if ((!strcmp(mn, "extend") || !strcmp(mn, "extendleft")) && nargs == 1) {
            var *items;
            int n;
            if (sym_iter_items(t, &args[0], &items, &n) < 0)
                return -1;
            if (mn[6] == 0)
                return deque_bounded_store(t, dq, NULL, 0, items, n, 1, out);
            var *r = sym_alloc(t, n > 0 ? n : 1);
            if (r == NULL)
                return -1;
            for (int i = 0; i < n; i++)
                r[i] = items[n - 1 - i];
            return deque_bounded_store(t, dq, r, n, NULL, 0, 0, out);
        }
        if (!strcmp(mn, "insert") && dq->n >= dq->pos - 1)
            return sym_fail(t, "deque already at its maximum size (eager will raise)");
        if (!strcmp(mn, "copy"))
            return sym_fail(t, "copy of a bounded deque not supported");
    }
    if (!strcmp(mn, "appendleft") && nargs == 1) {
        if (sym_const(t, PyLong_FromLong(0), &a[0]) < 0)
            return -1;
        a[1] = args[0];
        return sym_list_method(t, dq, "insert", a, 2, out);
    }
    if (!strcmp(mn, "popleft") && nargs == 0) {
        if (dq->n == 0)
            return sym_fail(t, "pop from an empty deque (eager will raise)");
        if (sym_const(t, PyLong_FromLong(0), &a[0]) < 0)
            return -1;
        return sym_list_method(t, dq, "pop", a, 1, out);
    }
    if (!strcmp(mn, "pop") && nargs == 0) {
        if (dq->n == 0)
            return sym_fail(t, "pop from an empty deque (eager will raise)");
        return sym_list_method(t, dq, "pop", NULL, 0, out);
    }
    if (!strcmp(mn, "extendleft") && nargs == 1) {
        var *items;
        int n;
        if (sym_iter_items(t, &args[0], &items, &n) < 0)
            return -1;
        var *m = sym_alloc(t, n + dq->n + 1);
        if (m == NULL)
            return -1;
        for (int i = 0; i < n; i++)
            m[i] = items[n - 1 - i];
        if (dq->n > 0)
            memcpy(m + n, dq->items, (size_t)dq->n * sizeof *m);
        var tmp = sym_var(V_SEQ);
        tmp.n = n + dq->n;
        tmp.items = m;
        var sl;
        if (sym_const(t, PySlice_New(NULL, NULL, NULL), &sl) < 0 || sym_list_store(t, dq, &sl, &tmp) < 0)
            return -1;
        return none_out(t, out);
    }
    if (!strcmp(mn, "rotate") && nargs <= 1) {
        long k = 1;
        if (nargs == 1) {
            if (args[0].kind != V_CONST || !PyLong_Check(args[0].obj))
                return sym_fail(t, "deque.rotate of a non-constant");
            k = PyLong_AsLong(args[0].obj);
        }
        int n = dq->n;
        var *m = sym_alloc(t, n > 0 ? n : 1);
        if (m == NULL)
            return -1;
        for (int i = 0; i < n; i++) {
            long j = ((i - k) % n + n) % n;
            m[i] = dq->items[j];
        }
        var tmp = sym_var(V_SEQ);
        tmp.n = n;
        tmp.items = m;
        var sl;
        if (sym_const(t, PySlice_New(NULL, NULL, NULL), &sl) < 0 || sym_list_store(t, dq, &sl, &tmp) < 0)
            return -1;
        return none_out(t, out);
    }
    static const char *const same_as_list[] = {"append", "extend", "clear", "copy", "count", "index",
                                               "remove", "reverse", "insert", NULL};
    for (int i = 0; same_as_list[i]; i++)
        if (!strcmp(mn, same_as_list[i]))
            return sym_list_method(t, dq, mn, args, nargs, out);
    return sym_fail(t, "deque.%s not supported", mn);
}

/* the dict d (as called) now holds nd: every copy rebound */
static int dict_commit(trace *t, const var *d, var *nd, var *out) {
    nd->src = d->src;
    sym_rebind(t, d->items, nd);
    return out ? none_out(t, out) : 0;
}


/* ---- collections.Counter made in the trace: a V_DICT (op SYM_DICT_COUNTER) of constant
 * keys and int counts; what its Python methods do, on the dict ----------------------------- */

/* d[k] as Counter reads it (0 when missing); a new reference, NULL failed */
static PyObject *ct_get(trace *t, const var *d, PyObject *k) {
    int at = sym_dict_find(t, d, k);
    if (at == -2)
        return NULL;
    if (at < 0)
        return PyLong_FromLong(0);
    const var *v = &d->items[at];
    if (v->kind != V_CONST || !(PyLong_Check(v->obj) || PyFloat_Check(v->obj))) {
        sym_fail(t, "a Counter count that is not a constant number");
        return NULL;
    }
    return Py_NewRef(v->obj);
}

/* d[k] = get(k) + sign * by (by NULL: 1) */
static int ct_add(trace *t, var *d, PyObject *k, PyObject *by, int sign) {
    PyObject *cur = ct_get(t, d, k), *one = by ? Py_NewRef(by) : PyLong_FromLong(1);
    PyObject *r = cur && one ? (sign > 0 ? PyNumber_Add(cur, one) : PyNumber_Subtract(cur, one)) : NULL;
    Py_XDECREF(cur);
    Py_XDECREF(one);
    if (r == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return -1;
        return sym_fail(t, "Counter arithmetic raised (eager will raise)");
    }
    var v;
    if (sym_const(t, r, &v) < 0)
        return -1;
    return sym_dict_set(t, d, k, &v);
}

/* update (sign 1) / subtract (-1) from a mapping, an iterable of keys, or keywords */
static int ct_update(trace *t, var *d, const var *src, var *kwv, PyObject *kwnames, int sign) {
    if (src != NULL && (src->kind == V_DICT || (src->kind == V_CONST && PyDict_Check(src->obj)))) {
        var m = *src;
        if (m.kind == V_CONST && sym_dict_from_const(t, m.obj, &m) < 0)
            return -1;
        if (sign > 0 && d->n == 0) { /* Counter.update of an empty one: dict's own copy */
            if (sym_dict_merge(t, d, &m) < 0)
                return -1;
            m.n = 0;
        }
        for (int i = 0; i < m.n; i++) {
            const var *c = &m.items[i];
            if (c->kind != V_CONST)
                return sym_fail(t, "a Counter updated with a count that is not a constant");
            if (ct_add(t, d, PyTuple_GET_ITEM(m.obj, i), c->obj, sign) < 0)
                return -1;
        }
    } else if (src != NULL) {
        var *items;
        int n;
        if (sym_iter_items(t, src, &items, &n) < 0)
            return -1;
        for (int i = 0; i < n; i++) {
            if (items[i].kind != V_CONST)
                return sym_fail(t, "a Counter of values that are not constants");
            if (ct_add(t, d, items[i].obj, NULL, sign) < 0)
                return -1;
        }
    }
    for (int i = 0; kwnames != NULL && i < (int)PyTuple_GET_SIZE(kwnames); i++) {
        if (kwv[i].kind != V_CONST)
            return sym_fail(t, "a Counter keyword count that is not a constant");
        if (ct_add(t, d, PyTuple_GET_ITEM(kwnames, i), kwv[i].obj, sign) < 0)
            return -1;
    }
    return 0;
}

/* Counter(iterable or mapping, **kwds) */
static int ct_new(trace *t, var *args, int npos, PyObject *kwnames, var *out) {
    if (npos > 1)
        return sym_fail(t, "Counter() takes at most one positional argument (eager will raise)");
    if (empty_dict(t, SYM_DICT_COUNTER, out) < 0)
        return -1;
    return ct_update(t, out, npos ? &args[0] : NULL, args + npos, kwnames, 1);
}

/* v > 0 for a constant count: 1/0, -1 failed */
static int ct_positive(trace *t, PyObject *v) {
    PyObject *z = PyLong_FromLong(0);
    int r = z ? PyObject_RichCompareBool(v, z, Py_GT) : -1;
    Py_XDECREF(z);
    if (r < 0 && tc_clear_expected(PyExc_Exception) == 0)
        sym_fail(t, "Counter count comparison raised");
    return r;
}

/* result[k] = v where keep */
static int ct_put(trace *t, var *r, PyObject *k, PyObject *v) {
    var c;
    if (sym_const(t, Py_NewRef(v), &c) < 0)
        return -1;
    return sym_dict_set(t, r, k, &c);
}

/* a + b, a - b, a | b, a & b as Counter's methods compute them (positive counts kept, self's
 * order then the other's new keys) */
static int ct_binop(trace *t, int base, const var *a, const var *b, var *out) {
    if (empty_dict(t, SYM_DICT_COUNTER, out) < 0)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        const var *x = pass ? b : a, *y = pass ? a : b;
        for (int i = 0; i < x->n; i++) {
            PyObject *k = PyTuple_GET_ITEM(x->obj, i);
            int in_a = pass ? sym_dict_find(t, a, k) : 0;
            if (in_a == -2)
                return -1;
            if (pass && (in_a >= 0 || base == 1))
                continue; /* b's keys not in a: +, -, | only */
            PyObject *cx = ct_get(t, x, k), *cy = pass ? NULL : ct_get(t, y, k), *nv = NULL;
            if (cx == NULL || (!pass && cy == NULL)) {
                Py_XDECREF(cx);
                return -1;
            }
            if (pass) /* a key of b only: + and | keep its count, - its negation */
                nv = base == 10 ? PyNumber_Negative(cx) : Py_NewRef(cx);
            else if (base == 0)
                nv = PyNumber_Add(cx, cy);
            else if (base == 10)
                nv = PyNumber_Subtract(cx, cy);
            else {
                int lt = PyObject_RichCompareBool(cx, cy, Py_LT);
                nv = lt < 0 ? NULL : Py_NewRef(base == 7 ? (lt ? cy : cx) : (lt ? cx : cy));
            }
            Py_DECREF(cx);
            Py_XDECREF(cy);
            if (nv == NULL) {
                if (tc_clear_expected(PyExc_Exception) < 0)
                    return -1;
                return sym_fail(t, "Counter arithmetic raised (eager will raise)");
            }
            int pos = ct_positive(t, nv);
            int rc = pos < 0 ? -1 : pos ? ct_put(t, out, k, nv) : 0;
            Py_DECREF(nv);
            if (rc < 0)
                return -1;
        }
    }
    return 0;
}

int sym_counter_binary(trace *t, int nb, const var *a, const var *b, var *out) {
    int ca = a->kind == V_DICT && a->op == SYM_DICT_COUNTER, cb = b->kind == V_DICT && b->op == SYM_DICT_COUNTER;
    if (!ca && !cb)
        return 1;
    if (nb == 100 + Py_EQ || nb == 100 + Py_NE) {
        int eq = ca && cb;
        for (int pass = 0; eq && pass < 2; pass++) {
            const var *x = pass ? b : a;
            for (int i = 0; eq && i < x->n; i++) {
                PyObject *k = PyTuple_GET_ITEM(x->obj, i), *p = ct_get(t, a, k), *q = p ? ct_get(t, b, k) : NULL;
                int r = q ? PyObject_RichCompareBool(p, q, Py_EQ) : -1;
                Py_XDECREF(p);
                Py_XDECREF(q);
                if (r < 0)
                    return tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "Counter == failed");
                eq = r;
            }
        }
        if (!(ca && cb))
            return sym_fail(t, "Counter compared with another kind of value");
        return sym_const(t, PyBool_FromLong(nb == 100 + Py_EQ ? eq : !eq), out);
    }
    if (!(ca && cb) || nb >= 13 || !(nb == 0 || nb == 10 || nb == 7 || nb == 1))
        return sym_fail(t, "this Counter operator not supported");
    return ct_binop(t, nb, a, b, out);
}

/* c.most_common(n) / c.elements() / c.total() / c.update() / c.subtract(); 1: another method */
static int ct_method(trace *t, var *d, const char *mn, var *args, int npos, PyObject *kwnames, var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    if (!strcmp(mn, "update") || !strcmp(mn, "subtract")) {
        if (npos > 1)
            return sym_fail(t, "Counter.%s takes at most one positional argument", mn);
        if (d->src >= 0)
            return sym_fail(t, "Counter.%s of a Counter the caller sees", mn);
        var cur = *d;
        var *m = sym_alloc(t, d->n > 0 ? d->n : 1); /* a new array names the dict after */
        if (m == NULL)
            return -1;
        if (d->n > 0)
            memcpy(m, d->items, (size_t)d->n * sizeof *m);
        cur.items = m;
        if (ct_update(t, &cur, npos ? &args[0] : NULL, args + npos, kwnames, mn[0] == 'u' ? 1 : -1) < 0)
            return -1;
        return dict_commit(t, d, &cur, out);
    }
    if (nkw)
        return 1;
    if (!strcmp(mn, "most_common") && npos <= 1) {
        long n = d->n;
        if (npos == 1 && !(args[0].kind == V_CONST && args[0].obj == Py_None)) {
            if (args[0].kind != V_CONST || !PyLong_Check(args[0].obj))
                return sym_fail(t, "Counter.most_common of a count that is not a constant int");
            n = PyLong_AsLong(args[0].obj);
            if (n < 0)
                n = 0;
            if (n > d->n)
                n = d->n;
        }
        int *ord = malloc(sizeof(int) * (size_t)(d->n > 0 ? d->n : 1));
        if (ord == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (int i = 0; i < d->n; i++) { /* stable: sorted(items, key=count, reverse=True) */
            PyObject *ci = ct_get(t, d, PyTuple_GET_ITEM(d->obj, i));
            int j = i;
            while (ci != NULL && j > 0) {
                PyObject *cj = ct_get(t, d, PyTuple_GET_ITEM(d->obj, ord[j - 1]));
                int gt = cj ? PyObject_RichCompareBool(ci, cj, Py_GT) : -1;
                Py_XDECREF(cj);
                if (gt < 0) {
                    Py_CLEAR(ci);
                    break;
                }
                if (!gt)
                    break;
                ord[j] = ord[j - 1];
                j--;
            }
            if (ci == NULL) {
                free(ord);
                return tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "Counter.most_common failed");
            }
            Py_DECREF(ci);
            ord[j] = i;
        }
        var *items = sym_alloc(t, n > 0 ? (int)n : 1);
        for (long i = 0; items != NULL && i < n; i++) {
            var *pair = sym_alloc(t, 2);
            if (pair == NULL || sym_const(t, Py_NewRef(PyTuple_GET_ITEM(d->obj, ord[i])), &pair[0]) < 0) {
                items = NULL;
                break;
            }
            pair[1] = d->items[ord[i]];
            items[i] = sym_var(V_SEQ);
            items[i].n = 2;
            items[i].items = pair;
        }
        free(ord);
        if (items == NULL)
            return -1;
        *out = sym_var(V_SEQ);
        out->is_list = 1;
        out->n = (int)n;
        out->items = items;
        return 0;
    }
    if (!strcmp(mn, "total") && npos == 0) {
        PyObject *sum = PyLong_FromLong(0);
        for (int i = 0; sum != NULL && i < d->n; i++) {
            PyObject *c = ct_get(t, d, PyTuple_GET_ITEM(d->obj, i));
            PyObject *ns = c ? PyNumber_Add(sum, c) : NULL;
            Py_XDECREF(c);
            Py_SETREF(sum, ns);
        }
        if (sum == NULL)
            return PyErr_Occurred() && tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "Counter.total failed");
        return sym_const(t, sum, out);
    }
    if (!strcmp(mn, "elements") && npos == 0) { /* each key count times, in order (positive counts) */
        int k = 0, cap = 0;
        for (int i = 0; i < d->n; i++) {
            const var *c = &d->items[i];
            if (c->kind != V_CONST || !PyLong_Check(c->obj))
                return sym_fail(t, "Counter.elements of a count that is not a constant int");
            long v = PyLong_AsLong(c->obj);
            if (v > dh_limit.max_unroll || cap > 16L * dh_limit.max_unroll)
                return sym_fail(t, "Counter.elements too long to unroll (torchc.config.max_unroll)");
            cap += v > 0 ? (int)v : 0;
        }
        var *m = sym_alloc(t, cap > 0 ? cap : 1);
        if (m == NULL)
            return -1;
        for (int i = 0; i < d->n; i++)
            for (long v = PyLong_AsLong(d->items[i].obj); v > 0; v--)
                if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(d->obj, i)), &m[k++]) < 0)
                    return -1;
        *out = sym_var(V_ITER);
        out->op = SYM_OWN_ITER;
        out->items = m;
        out->n = k;
        return 0;
    }
    if (!strcmp(mn, "copy") && npos == 0) { /* Counter.copy: a Counter */
        if (empty_dict(t, SYM_DICT_COUNTER, out) < 0)
            return -1;
        return sym_dict_merge(t, out, d);
    }
    return 1;
}

static int dict_method(trace *t, var *d, const char *mn, var *args, int npos, PyObject *kwnames, var *out) {
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    if (d->items == NULL)
        return 1;
    if (d->op == SYM_DICT_COUNTER) {
        int rc = ct_method(t, d, mn, args, npos, kwnames, out);
        if (rc != 1)
            return rc;
    }
    if (d->op == SYM_DICT_VIEW || d->op == SYM_DICT_PROXY) { /* obj.__dict__ (obj_dictview.c), a mappingproxy: reads only */
        static const char *const reads[] = {"get", "keys", "values", "items", "__getitem__", "__contains__",
                                            "copy", "__len__", "__iter__", NULL};
        int ok = 0;
        for (int i = 0; reads[i] && !ok; i++)
            ok = !strcmp(mn, reads[i]);
        if (!ok)
            return sym_dict_view_write(t, d);
        int one = (!strcmp(mn, "get") || !strcmp(mn, "__getitem__")) && npos >= 1 && args[0].kind == V_CONST;
        if ((one ? sym_dict_view_read_key(t, d, args[0].obj)
                 : !strcmp(mn, "__contains__") || !strcmp(mn, "keys") || !strcmp(mn, "__len__") ||
                           !strcmp(mn, "__iter__")
                       ? sym_dict_view_keys(t, d)
                       : sym_dict_view_read(t, d)) < 0)
            return -1;
    }
    if (!strcmp(mn, "update") && npos <= 1 && (nkw > 0 || (npos == 1 && args[0].kind != V_DICT &&
                                                         !(args[0].kind == V_CONST && PyDict_Check(args[0].obj))))) {
        if (d->src >= 0 && sym_fx_container_write(t, d) < 0)
            return -1;
        var cur = *d;
        if (npos == 1 && dict_update_from(t, &cur, &args[0]) < 0)
            return -1;
        if (dict_update_kw(t, &cur, args + npos, kwnames, nkw) < 0)
            return -1;
        if (cur.items == d->items) { /* nothing stored: still a new array naming the dict */
            var *m = sym_alloc(t, d->n > 0 ? d->n : 1);
            if (m == NULL)
                return -1;
            if (d->n > 0)
                memcpy(m, d->items, (size_t)d->n * sizeof *m);
            cur.items = m;
        }
        return dict_commit(t, d, &cur, out);
    }
    if (nkw == 1 && (!strcmp(mn, "popitem") || !strcmp(mn, "move_to_end")) &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "last") == 0)
        nkw = 0, npos++; /* last= as the positional it is */
    if (nkw)
        return 1;
    if (!strcmp(mn, "clear") && npos == 0) {
        if (d->src >= 0 && sym_fx_container_write(t, d) < 0)
            return -1;
        var nd;
        if (empty_dict(t, d->op, &nd) < 0)
            return -1;
        nd.globals = d->globals;
        nd.pos = d->pos;
        return dict_commit(t, d, &nd, out);
    }
    if (!strcmp(mn, "popitem") && npos <= 1) {
        int last = 1;
        if (npos == 1) {
            if (d->op != SYM_DICT_ORDERED || args[0].kind != V_CONST)
                return sym_fail(t, "popitem(last) of a plain dict / non-constant");
            last = PyObject_IsTrue(args[0].obj);
            if (last < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "popitem: bool(last) raised");
            }
        }
        if (d->n == 0)
            return sym_fail(t, "popitem(): dictionary is empty (eager will raise)");
        if (d->src >= 0 && sym_fx_container_write(t, d) < 0)
            return -1;
        int at = last ? d->n - 1 : 0;
        var *pair = sym_alloc(t, 2);
        if (pair == NULL || sym_const(t, Py_NewRef(PyTuple_GET_ITEM(d->obj, at)), &pair[0]) < 0)
            return -1;
        pair[1] = d->items[at];
        var cur = *d;
        if (sym_dict_set(t, &cur, pair[0].obj, NULL) < 0 || dict_commit(t, d, &cur, NULL) < 0)
            return -1;
        *out = sym_var(V_SEQ);
        out->n = 2;
        out->items = pair;
        return 0;
    }
    if (!strcmp(mn, "move_to_end") && d->op == SYM_DICT_ORDERED && (npos == 1 || npos == 2) &&
        args[0].kind == V_CONST) {
        int last = 1;
        if (npos == 2) {
            if (args[1].kind != V_CONST)
                return sym_fail(t, "move_to_end with a non-constant last=");
            last = PyObject_IsTrue(args[1].obj);
            if (last < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "move_to_end: bool(last) raised");
            }
        }
        var r;
        if (sym_dict_method(t, d, "get", args, 1, &r) < 0) /* KeyError: fails */
            return -1;
        int has = -1;
        for (int i = 0; i < d->n && has < 0; i++) {
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(d->obj, i), args[0].obj, Py_EQ);
            if (eq < 0) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "dict key comparison raised");
            }
            if (eq)
                has = i;
        }
        if (has < 0)
            return sym_fail(t, "move_to_end: KeyError (eager will raise)");
        var v = d->items[has], rest = *d;
        if (sym_dict_set(t, &rest, args[0].obj, NULL) < 0)
            return -1;
        if (last) {
            if (sym_dict_set(t, &rest, args[0].obj, &v) < 0)
                return -1;
            return dict_commit(t, d, &rest, out);
        }
        var front;
        if (empty_dict(t, d->op, &front) < 0 || sym_dict_set(t, &front, args[0].obj, &v) < 0 ||
            sym_dict_merge(t, &front, &rest) < 0)
            return -1;
        front.globals = d->globals;
        front.pos = d->pos;
        return dict_commit(t, d, &front, out);
    }
    return 1;
}

int sym_data_method(trace *t, const var *fn, var *args, int npos, PyObject *kwnames, var *out) {
    if (fn->kind == V_METHOD && fn->items != NULL && fn->items[0].kind == V_OBJ)
        return sym_dsub_call(t, fn, args, npos, kwnames, out); /* obj_dict.c */
    if (fn->kind != V_METHOD || fn->items == NULL || fn->obj == NULL || !PyUnicode_Check(fn->obj) ||
        init_once() < 0)
        return 1;
    var self = fn->items[0];
    const char *mn = PyUnicode_AsUTF8(fn->obj);
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    if (mn == NULL)
        return -1;
    if (sym_data_is_deque(&self)) {
        if (nkw)
            return sym_fail(t, "deque.%s with keyword arguments", mn);
        return deque_method(t, &self, mn, args, npos, out);
    }
    if (self.kind == V_SEQ && self.is_list && self.obj == NULL && !strcmp(mn, "sort") && npos == 0) {
        var *m, r;
        if (sort_items(t, self.items, self.n, args, kwnames, &m) < 0)
            return -1;
        var tmp = sym_var(V_SEQ);
        tmp.n = self.n;
        tmp.items = m;
        var sl;
        if (sym_const(t, PySlice_New(NULL, NULL, NULL), &sl) < 0 || sym_list_store(t, &self, &sl, &tmp) < 0)
            return -1;
        (void)r;
        return none_out(t, out);
    }
    if (self.kind == V_DICT)
        return dict_method(t, &self, mn, args, npos, kwnames, out);
    return 1;
}

/* ---- attributes ---------------------------------------------------------------------------- */

static int return_types_class(PyTypeObject *tp) {
    /* structseq types: the module is the prefix of tp_name */
    return !strncmp(tp->tp_name, "torch.return_types.", 19) && !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE);
}

/* p.name of a named tuple: a field (the class's _tuplegetter: its index), or what the class
 * holds (its identity guarded through the MRO, as K.f of any class): a method bound to p, a
 * property's getter inlined on p, a classmethod bound to the class, a constant (_fields) */
static int ntuple_attr(trace *t, const var *o, PyObject *name, var *out) {
    PyTypeObject *tp = (PyTypeObject *)o->obj;
    PyObject *d = _PyType_Lookup(tp, name);
    if (d == NULL)
        return sym_fail(t, "%s has no attribute %U", tp->tp_name, name);
    const char *dn = Py_TYPE(d)->tp_name; /* _collections._tuplegetter (3.11), collections. (3.12) */
    size_t dl = strlen(dn);
    if (dl >= 13 && !strcmp(dn + dl - 13, "._tuplegetter")) {
        PyObject *r = PyObject_CallMethod(d, "__reduce__", NULL); /* (type, (index, doc)) */
        long at = -1;
        if (r != NULL && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2 && PyTuple_Check(PyTuple_GET_ITEM(r, 1)) &&
            PyTuple_GET_SIZE(PyTuple_GET_ITEM(r, 1)) >= 1)
            at = PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(r, 1), 0));
        Py_XDECREF(r);
        if (at == -1)
            (void)tc_clear_expected(PyExc_Exception);
        if (at < 0 || at >= o->n)
            return sym_fail(t, "field %U of %s", name, tp->tp_name);
        *out = o->items[at];
        return 0;
    }
    int cs = sym_source(t, DH_S_CONST, -1, 0, o->obj);
    int s = cs < 0 ? -1 : sym_source(t, DH_S_ATTR, cs, 3, name);
    if (s < 0 || sym_guard_id(t, s, d) < 0)
        return -1;
    if (PyFunction_Check(d))
        return sym_method(t, o, sym_keep(t, Py_NewRef(d)), s, out);
    if (Py_IS_TYPE(d, &PyProperty_Type) || Py_IS_TYPE(d, &PyClassMethod_Type) || Py_IS_TYPE(d, &PyStaticMethod_Type)) {
        PyObject *f = PyObject_GetAttrString(d, Py_IS_TYPE(d, &PyProperty_Type) ? "fget" : "__func__");
        if (f == NULL)
            (void)tc_clear_expected(PyExc_Exception);
        if (f == NULL || !PyFunction_Check(f)) {
            Py_XDECREF(f);
            return sym_fail(t, "%s.%U without a Python function", tp->tp_name, name);
        }
        if (sym_keep(t, f) == NULL)
            return -1;
        int fs = sym_source(t, DH_S_CONST, -1, 0, f);
        if (fs < 0)
            return -1;
        if (Py_IS_TYPE(d, &PyProperty_Type))
            return sym_inline(t, f, fs, o, NULL, 0, NULL, out);
        if (Py_IS_TYPE(d, &PyStaticMethod_Type)) {
            *out = sym_var(V_FUNC);
            out->src = fs;
            out->op = SYM_USER_FUNCTION;
            out->obj = f;
            return 0;
        }
        var cls = sym_var(V_FUNC);
        cls.op = -1;
        cls.obj = o->obj;
        return sym_method(t, &cls, f, fs, out);
    }
    var v;
    if (sym_wrap(t, d, s, &v) < 0)
        return -1;
    if (v.kind != V_CONST)
        return sym_fail(t, "attribute %U of %s: a class attribute of type %s", name, tp->tp_name, Py_TYPE(d)->tp_name);
    *out = v;
    return 0;
}

int sym_data_attr(trace *t, const var *o, PyObject *name, var *out) {
    const char *n = PyUnicode_AsUTF8(name);
    if (n == NULL)
        return -1;
    if (o->kind == V_OBJ) /* obj_dict.c: dict-subclass instances */
        return sym_dsub_attr(t, o, name, out);
    if (init_once() < 0)
        return 1;
    if (o->kind == V_SEQ && o->obj != NULL && PyType_Check(o->obj) &&
        return_types_class((PyTypeObject *)o->obj)) {
        /* a named field of a torch.return_types result */
        PyMemberDef *mb = ((PyTypeObject *)o->obj)->tp_members;
        for (int i = 0; mb != NULL && mb[i].name != NULL && i < o->n; i++)
            if (!strcmp(mb[i].name, n)) {
                *out = o->items[i];
                return 0;
            }
        return 1;
    }
    if (o->kind == V_SEQ && !o->is_list && sym_ntuple_class(o->obj))
        return ntuple_attr(t, o, name, out);
    if (sym_data_is_deque(o)) {
        static const char *const names[] = {"append", "appendleft", "pop", "popleft", "extend", "extendleft",
                                            "clear", "copy", "count", "index", "remove", "reverse",
                                            "rotate", "insert", NULL};
        for (int i = 0; names[i]; i++)
            if (!strcmp(n, names[i]))
                return sym_method(t, o, name, -1, out);
        if (!strcmp(n, "maxlen"))
            return o->pos > 0 ? sym_const(t, PyLong_FromLong(o->pos - 1), out) : none_out(t, out);
        return sym_fail(t, "deque.%s not supported", n);
    }
    if (o->kind == V_DICT && (!strcmp(n, "clear") || !strcmp(n, "popitem") ||
                              (o->op == SYM_DICT_ORDERED && !strcmp(n, "move_to_end"))))
        return sym_method(t, o, name, -1, out);
    if (o->kind == V_DICT && o->op == SYM_DICT_DEFAULT && !strcmp(n, "default_factory")) {
        if (o->globals == NULL || o->globals == Py_None)
            return none_out(t, out);
        *out = sym_var(V_FUNC);
        out->op = o->pos;
        out->obj = o->globals;
        return 0;
    }
    if ((o->kind == V_CONST || o->kind == V_FUNC) && o->obj != NULL && PyType_Check(o->obj) &&
        PyUnicode_CompareWithASCIIString(name, "__dataclass_fields__") == 0) {
        /* a dataclass's fields (type(obj).__dataclass_fields__: dataclasses.replace/fields) */
        PyObject *fs = _PyType_Lookup((PyTypeObject *)o->obj, name);
        if (fs == NULL || !PyDict_CheckExact(fs))
            return 1;
        return sym_dict_from_const(t, fs, out);
    }
    if (o->kind == V_CONST && o->obj != NULL && Py_TYPE(o->obj) == (PyTypeObject *)field_type) {
        PyObject *v = PyObject_GetAttr(o->obj, name);
        if (v == NULL) {
            if (tc_clear_expected(PyExc_AttributeError) < 0)
                return -1;
            return sym_fail(t, "Field has no attribute %U (eager will raise)", name);
        }
        if (tc_is_tensor(v)) {
            Py_DECREF(v);
            return sym_fail(t, "a dataclass field with a tensor default");
        }
        return sym_const(t, v, out); /* fixed when the class was made */
    }
    return 1;
}

/* ---- values passed in -------------------------------------------------------------------- */


int sym_data_wrap(trace *t, PyObject *o, int src, var *out) {
    if (init_once() < 0)
        return 1;
    if (Py_TYPE(o) == (PyTypeObject *)field_type || (o == dc_sentinel[0] && o != NULL) ||
        (o == dc_sentinel[1] && o != NULL)) {
        /* a dataclass field (read from a class's __dataclass_fields__), or a dataclass marker
         * (a default of a generated __init__): that object */
        if (src >= 0 && sym_guard_id(t, src, o) < 0)
            return -1;
        *out = sym_var(V_CONST);
        out->src = src;
        out->obj = sym_keep(t, Py_NewRef(o));
        return out->obj ? 0 : -1;
    }
    int nt = PyTuple_Check(o) && !PyTuple_CheckExact(o) && sym_ntuple_class((PyObject *)Py_TYPE(o));
    if (src >= 0 && PyTuple_Check(o) && !PyTuple_CheckExact(o) && (nt || return_types_class(Py_TYPE(o)))) {
        /* torch.return_types.* (an op's named result, made by eager before a resume
         * function), a named tuple: its items, the type and length guarded */
        Py_ssize_t n = PyTuple_GET_SIZE(o);
        if (n > (nt ? dh_limit.max_dict_items : 8))
            return 1;
        if (sym_guard_type(t, src, o) < 0 || sym_guard_len(t, src, (int)n) < 0)
            return -1;
        var *items = sym_alloc(t, (int)n);
        if (items == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int s = sym_source(t, DH_S_ITEM, src, i, NULL);
            if (s < 0 || sym_wrap(t, PyTuple_GET_ITEM(o, i), s, &items[i]) < 0)
                return -1;
        }
        *out = sym_var(V_SEQ);
        out->src = src;
        out->obj = (PyObject *)Py_TYPE(o);
        out->n = (int)n;
        out->items = items;
        return 0;
    }
    return 1;
}

/* the callable that makes v (a V_SEQ whose obj is collections.deque) from a list: deque, or
 * partial(deque, maxlen=n) for a bounded one (kept) */
PyObject *sym_data_seq_type(trace *t, const var *v) {
    if (init_once() < 0)
        return NULL;
    if (sym_ntuple_class(v->obj)) /* tuple.__new__(cls, items), as the class's _make */
        return sym_keep(t, PyObject_CallFunctionObjArgs(partial_fn, tuple_new, v->obj, NULL));
    if (v->pos <= 0)
        return v->obj;
    PyObject *a = PyTuple_Pack(1, dq_type), *kw = Py_BuildValue("{s:i}", "maxlen", v->pos - 1), *r = NULL;
    if (a && kw)
        r = PyObject_Call(partial_fn, a, kw);
    Py_XDECREF(a);
    Py_XDECREF(kw);
    return sym_keep(t, r);
}

/* the callable that makes a dict of v's kind from a plain dict (borrowed or kept), or NULL */
PyObject *sym_data_dict_type(const var *v) {
    if (init_once() < 0)
        return (PyObject *)&PyDict_Type; /* (the types are missing: no such dict was made) */
    return v->op == SYM_DICT_ORDERED ? od_type : v->op == SYM_DICT_DEFAULT ? dd_type
         : v->op == SYM_DICT_COUNTER ? ct_type : v->op == SYM_DICT_PROXY ? (PyObject *)&PyDictProxy_Type
         : (PyObject *)&PyDict_Type;
}

PyObject *sym_data_out_type(trace *t, const var *v) {
    if (init_once() < 0)
        return NULL;
    if (v->kind == V_DICT && v->op == SYM_DICT_ORDERED)
        return od_type;
    if (v->kind == V_DICT && v->op == SYM_DICT_COUNTER) /* Counter(d): dict.update's copy */
        return ct_type;
    if (v->kind == V_DICT && v->op == SYM_DICT_DEFAULT && v->globals && PyCapsule_CheckExact(v->globals)) {
        sym_fail(t, "a defaultdict whose default_factory is a function made in the trace leaves it");
        return NULL;
    }
    if (v->kind == V_DICT && v->op == SYM_DICT_DEFAULT)
        return sym_keep(t, PyObject_CallFunctionObjArgs(partial_fn, dd_type,
                                                         v->globals ? v->globals : Py_None, NULL));
    return NULL;
}
