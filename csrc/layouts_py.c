/* layouts_py.c - Python view of layouts/: the type torchc._C.LinearLayout
 * (an immutable value wrapping one ll_layout) and the ll_* functions
 * (builders, conversion planning, swizzling, bank conflicts).
 *
 * Contract: every argument is checked here or by the C library; bad input
 * raises TypeError (wrong Python type) or ValueError (bad value: sizes not
 * powers of two, unknown dims, layouts that do not fit), never crashes.
 * CPython discipline: PyObject* start NULL, one error label, every new
 * reference released on every path. */
#define PY_SSIZE_T_CLEAN
#include "layouts_py.h"

#include <string.h>

#include "ll.h"
#include "pyerr.h"

typedef struct {
    PyObject_HEAD
    ll_layout L;
} LLObject;

static PyTypeObject LLType;

/* ---- conversions --------------------------------------------------------- */

static PyObject *raise_ll(int rc, const char *what) {
    PyErr_Format(PyExc_ValueError, "%s: %s", what, ll_strerror(rc));
    return NULL;
}

static PyObject *wrap(const ll_layout *L) {
    LLObject *o = (LLObject *)LLType.tp_alloc(&LLType, 0);
    if (o == NULL)
        return NULL;
    o->L = *L;
    return (PyObject *)o;
}

/* Wrap L, or raise for rc != 0. */
static PyObject *result(int rc, const ll_layout *L, const char *what) {
    return rc ? raise_ll(rc, what) : wrap(L);
}

/* o as a Python int (new ref), or NULL with TypeError for a non-integer */
static PyObject *as_index(PyObject *o, const char *what) {
    if (!PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %.100s", what, Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyNumber_Index(o);
}

static int as_i64(PyObject *o, int64_t *v, const char *what) {
    PyObject *n = as_index(o, what); /* new ref */
    if (n == NULL)
        return -1;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(n, &overflow);
    Py_DECREF(n);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "%s: integer out of range", what);
        return -1;
    }
    *v = (int64_t)x;
    return 0;
}

static int as_u64(PyObject *o, uint64_t *v, const char *what) {
    PyObject *n = as_index(o, what); /* new ref */
    if (n == NULL)
        return -1;
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(n, &overflow);
    unsigned long long x = (unsigned long long)s;
    if (!(s == -1 && PyErr_Occurred()) && overflow > 0)
        x = PyLong_AsUnsignedLongLong(n);
    Py_DECREF(n);
    if (PyErr_Occurred() || overflow < 0 || (!overflow && s < 0)) {
        if (tc_clear_expected(PyExc_OverflowError) < 0) /* too large: the ValueError below */
            return -1;
        PyErr_Format(PyExc_ValueError, "%s: expected a non-negative int below 2**64", what);
        return -1;
    }
    *v = (uint64_t)x;
    return 0;
}

static const char *as_name(PyObject *o, const char *what) {
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a str dim name, got %.100s", what,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8(o);
}

static int as_layout(PyObject *o, const ll_layout **L, const char *what) {
    if (!PyObject_TypeCheck(o, &LLType)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a LinearLayout, got %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *L = &((LLObject *)o)->L;
    return 0;
}

/* o as a fast sequence of at most `max` items (new ref), or NULL with ValueError
 * "what: at most max unit" */
static PyObject *seq_upto(PyObject *o, int max, const char *what, const char *unit) {
    PyObject *fast = PySequence_Fast(o, what); /* new ref */
    if (fast != NULL && PySequence_Fast_GET_SIZE(fast) > max) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d %s", what, max, unit);
        Py_CLEAR(fast);
    }
    return fast;
}

/* A sequence of at most `max` ints. */
static int seq_i64(PyObject *o, int64_t *out, int max, int *n, const char *what) {
    PyObject *fast = seq_upto(o, max, what, "entries"); /* new ref */
    if (fast == NULL)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < len; i++)
        if (as_i64(PySequence_Fast_GET_ITEM(fast, i), &out[i], what) < 0)
            goto error;
    *n = (int)len;
    Py_DECREF(fast);
    return 0;
error:
    Py_DECREF(fast);
    return -1;
}

static int seq_int(PyObject *o, int *out, int max, int *n, const char *what) {
    int64_t tmp[LL_MAX_BITS];
    if (seq_i64(o, tmp, max, n, what) < 0)
        return -1;
    for (int i = 0; i < *n; i++) {
        if (tmp[i] < -0x7fffffff || tmp[i] > 0x7fffffff) {
            PyErr_Format(PyExc_ValueError, "%s: integer out of range", what);
            return -1;
        }
        out[i] = (int)tmp[i];
    }
    return 0;
}

/* Exactly `rank` ints. */
static int seq_int_rank(PyObject *o, int *out, int rank, const char *what) {
    int n;
    if (seq_int(o, out, LL_MAX_DIMS, &n, what) < 0)
        return -1;
    if (n != rank) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d entries (one per dim), got %d", what, rank, n);
        return -1;
    }
    return 0;
}

/* A sequence of dim names; *keep holds the strings alive. */
static int seq_names(PyObject *o, const char **names, int *n, PyObject **keep, const char *what) {
    PyObject *fast = seq_upto(o, LL_MAX_DIMS, what, "dims"); /* new ref, returned in *keep */
    if (fast == NULL)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < len; i++)
        if ((names[i] = as_name(PySequence_Fast_GET_ITEM(fast, i), what)) == NULL)
            goto error;
    *n = (int)len;
    *keep = fast;
    return 0;
error:
    Py_DECREF(fast);
    return -1;
}

static int log2_of(uint64_t size, int *lg, const char *what) {
    if (size == 0 || (size & (size - 1))) {
        PyErr_Format(PyExc_ValueError, "%s: size %llu is not a power of two", what,
                     (unsigned long long)size);
        return -1;
    }
    *lg = 63 - __builtin_clzll(size);
    return 0;
}

/* (name, size) pairs from a dict or a sequence of pairs. */
static int seq_dims(PyObject *o, const char **names, int *log2s, int *n, PyObject **keep,
                    const char *what) {
    PyObject *items = NULL, *fast = NULL;
    items = PyDict_Check(o) ? PyDict_Items(o) : (Py_INCREF(o), o); /* new ref */
    if (items == NULL)
        return -1;
    fast = seq_upto(items, LL_MAX_DIMS, what, "dims"); /* new ref, returned in *keep */
    if (fast == NULL)
        goto error;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        uint64_t size;
        if (!PyTuple_Check(pair) && !PyList_Check(pair)) {
            PyErr_Format(PyExc_TypeError, "%s: expected (name, size) pairs", what);
            goto error;
        }
        if (PySequence_Size(pair) != 2) {
            PyErr_Format(PyExc_ValueError, "%s: expected (name, size) pairs", what);
            goto error;
        }
        PyObject *nm = PySequence_Fast_GET_ITEM(pair, 0), *sz = PySequence_Fast_GET_ITEM(pair, 1);
        if ((names[i] = as_name(nm, what)) == NULL || as_u64(sz, &size, what) < 0 ||
            log2_of(size, &log2s[i], what) < 0)
            goto error;
    }
    *n = (int)len;
    Py_DECREF(items);
    *keep = fast;
    return 0;
error:
    Py_XDECREF(fast);
    Py_DECREF(items);
    return -1;
}

/* None, or (ctas_per_cga, cta_split, cta_order). */
static int parse_cga(PyObject *o, int rank, ll_cga *cga, const ll_cga **out) {
    *out = NULL;
    if (o == Py_None)
        return 0;
    PyObject *fast = PySequence_Fast(o, "cga: expected (ctas_per_cga, cta_split, cta_order)");
    if (fast == NULL)
        return -1;
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(fast) != 3) {
        PyErr_SetString(PyExc_ValueError, "cga: expected (ctas_per_cga, cta_split, cta_order)");
        goto done;
    }
    if (seq_int_rank(PySequence_Fast_GET_ITEM(fast, 0), cga->ctas_per_cga, rank, "ctas_per_cga") < 0 ||
        seq_int_rank(PySequence_Fast_GET_ITEM(fast, 1), cga->cta_split, rank, "cta_split") < 0 ||
        seq_int_rank(PySequence_Fast_GET_ITEM(fast, 2), cga->cta_order, rank, "cta_order") < 0)
        goto done;
    *out = cga;
    rc = 0;
done:
    Py_DECREF(fast);
    return rc;
}

/* ---- the type ------------------------------------------------------------- */

/* LinearLayout(bases, out_dims=None)
 *   bases: {in_dim: [basis, ...]} or [(in_dim, [basis, ...]), ...]; a basis is
 *          an int (one out dim) or a sequence with one int per out dim.
 *   out_dims: None (dim0.. with inferred sizes), [name, ...] (inferred sizes),
 *             [(name, size), ...] or {name: size}. */
static PyObject *ll_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"bases", "out_dims", NULL};
    PyObject *bases = NULL, *out_dims = Py_None;
    PyObject *items = NULL, *fast = NULL, *keep_out = NULL;
    PyObject *self = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:LinearLayout", kwlist, &bases, &out_dims))
        return NULL;
    ll_layout L;
    ll_empty(&L);
    uint64_t vals[LL_MAX_BITS][LL_MAX_DIMS];
    const char *onames[LL_MAX_DIMS];
    char gen[LL_MAX_DIMS][16];
    int olog2[LL_MAX_DIMS], n_out = -1, sizes_known = 0, rc;
    memset(vals, 0, sizeof vals);
    /* out dims */
    if (out_dims != Py_None) {
        bool pairs = PyDict_Check(out_dims);
        if (!pairs) {
            Py_ssize_t len = PySequence_Size(out_dims);
            if (len < 0)
                goto error;
            if (len > 0) {
                PyObject *first = PySequence_GetItem(out_dims, 0); /* new ref */
                if (first == NULL)
                    goto error;
                pairs = !PyUnicode_Check(first);
                Py_DECREF(first);
            }
        }
        if (pairs) {
            if (seq_dims(out_dims, onames, olog2, &n_out, &keep_out, "out_dims") < 0)
                goto error;
            sizes_known = 1;
        } else if (seq_names(out_dims, onames, &n_out, &keep_out, "out_dims") < 0) {
            goto error;
        }
    }
    /* in dims and their bases */
    items = PyDict_Check(bases) ? PyDict_Items(bases) : (Py_INCREF(bases), bases);
    if (items == NULL)
        goto error;
    fast = PySequence_Fast(items, "bases: expected a dict or a sequence of (in_dim, bases)");
    if (fast == NULL)
        goto error;
    int k = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(fast, i);
        if ((!PyTuple_Check(pair) && !PyList_Check(pair)) || PySequence_Size(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "bases: expected (in_dim, [basis, ...]) pairs");
            goto error;
        }
        const char *nm = as_name(PySequence_Fast_GET_ITEM(pair, 0), "bases");
        if (nm == NULL)
            goto error;
        PyObject *lst = PySequence_Fast(PySequence_Fast_GET_ITEM(pair, 1),
                                        "bases: expected a list of bases"); /* new ref */
        if (lst == NULL)
            goto error;
        Py_ssize_t nb = PySequence_Fast_GET_SIZE(lst);
        if (k + nb > LL_MAX_BITS) {
            Py_DECREF(lst);
            PyErr_Format(PyExc_ValueError, "bases: more than %d input bits", LL_MAX_BITS);
            goto error;
        }
        rc = ll_add_in_dim(&L, nm, (int)nb);
        if (rc) {
            Py_DECREF(lst);
            raise_ll(rc, "bases");
            goto error;
        }
        for (Py_ssize_t b = 0; b < nb; b++, k++) {
            PyObject *basis = PySequence_Fast_GET_ITEM(lst, b);
            int width;
            if (PyLong_Check(basis) || PyIndex_Check(basis)) {
                width = 1;
                if (as_u64(basis, &vals[k][0], "basis") < 0) {
                    Py_DECREF(lst);
                    goto error;
                }
            } else {
                int64_t tmp[LL_MAX_DIMS];
                if (seq_i64(basis, tmp, LL_MAX_DIMS, &width, "basis") < 0) {
                    Py_DECREF(lst);
                    goto error;
                }
                for (int j = 0; j < width; j++) {
                    if (tmp[j] < 0) {
                        Py_DECREF(lst);
                        PyErr_SetString(PyExc_ValueError, "basis: values must be non-negative");
                        goto error;
                    }
                    vals[k][j] = (uint64_t)tmp[j];
                }
            }
            if (n_out < 0) {
                n_out = width;
                for (int j = 0; j < n_out; j++) {
                    snprintf(gen[j], sizeof gen[j], "dim%d", j);
                    onames[j] = gen[j];
                }
            }
            if (width != n_out) {
                Py_DECREF(lst);
                PyErr_Format(PyExc_ValueError, "basis: expected %d values (one per out dim), got %d",
                             n_out, width);
                goto error;
            }
        }
        Py_DECREF(lst);
    }
    if (n_out < 0)
        n_out = 0;
    if (!sizes_known)
        for (int j = 0; j < n_out; j++) {
            uint64_t mx = 0;
            for (int q = 0; q < k; q++)
                if (vals[q][j] > mx)
                    mx = vals[q][j];
            int lg = 0;
            while (lg < 64 && ((uint64_t)1 << lg) <= mx)
                lg++;
            olog2[j] = lg;
        }
    for (int j = 0; j < n_out; j++)
        if ((rc = ll_add_out_dim(&L, onames[j], olog2[j]))) {
            raise_ll(rc, "out_dims");
            goto error;
        }
    for (int i = 0, q = 0; i < L.n_in; i++)
        for (int b = 0; b < L.in[i].log2; b++, q++)
            if ((rc = ll_set_basis(&L, i, b, vals[q]))) {
                PyErr_Format(PyExc_ValueError, "basis %d of %s does not fit the out dims", b,
                             L.in[i].name);
                goto error;
            }
    self = type->tp_alloc(type, 0);
    if (self == NULL)
        goto error;
    ((LLObject *)self)->L = L;
    Py_DECREF(fast);
    Py_DECREF(items);
    Py_XDECREF(keep_out);
    return self;
error:
    Py_XDECREF(fast);
    Py_XDECREF(items);
    Py_XDECREF(keep_out);
    return NULL;
}

#define SELF(o) (&((LLObject *)(o))->L)

static PyObject *dims_list(const ll_dim *d, int n) {
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *t = Py_BuildValue("(sK)", d[i].name, (unsigned long long)1 << d[i].log2);
        if (t == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, t); /* steals t */
    }
    return list;
}

static PyObject *get_in_dims(PyObject *self, void *c) {
    (void)c;
    return dims_list(SELF(self)->in, SELF(self)->n_in);
}
static PyObject *get_out_dims(PyObject *self, void *c) {
    (void)c;
    return dims_list(SELF(self)->out, SELF(self)->n_out);
}
static PyObject *get_in_bits(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(SELF(self)->in_bits);
}
static PyObject *get_out_bits(PyObject *self, void *c) {
    (void)c;
    return PyLong_FromLong(SELF(self)->out_bits);
}

/* One basis as a tuple of per-out-dim values. */
static PyObject *basis_tuple(const ll_layout *L, uint64_t flat) {
    uint64_t v[LL_MAX_DIMS];
    ll_unpack_out(L, flat, v);
    PyObject *t = PyTuple_New(L->n_out);
    if (t == NULL)
        return NULL;
    for (int o = 0; o < L->n_out; o++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[o]);
        if (x == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, o, x); /* steals x */
    }
    return t;
}

static PyObject *get_bases(PyObject *self, void *c) {
    (void)c;
    const ll_layout *L = SELF(self);
    PyObject *d = PyDict_New(), *lst = NULL;
    if (d == NULL)
        return NULL;
    for (int i = 0; i < L->n_in; i++) {
        lst = PyList_New(L->in[i].log2);
        if (lst == NULL)
            goto error;
        for (int b = 0; b < L->in[i].log2; b++) {
            PyObject *t = basis_tuple(L, L->basis[L->in[i].shift + b]);
            if (t == NULL)
                goto error;
            PyList_SET_ITEM(lst, b, t); /* steals t */
        }
        if (PyDict_SetItemString(d, L->in[i].name, lst) < 0)
            goto error;
        Py_CLEAR(lst);
    }
    return d;
error:
    Py_XDECREF(lst);
    Py_DECREF(d);
    return NULL;
}

/* {name: value} (or keyword arguments) -> flat input index. */
static int flat_input(const ll_layout *L, PyObject *mapping, uint64_t *x) {
    *x = 0;
    if (mapping == NULL)
        return 0;
    if (!PyDict_Check(mapping)) {
        PyErr_SetString(PyExc_TypeError, "apply: expected a dict {in_dim: index}");
        return -1;
    }
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(mapping, &pos, &key, &val)) {
        const char *nm = as_name(key, "apply");
        uint64_t v;
        if (nm == NULL || as_u64(val, &v, "apply") < 0)
            return -1;
        int i = ll_find_in(L, nm);
        if (i < 0) {
            PyErr_Format(PyExc_ValueError, "apply: unknown input dim '%s'", nm);
            return -1;
        }
        if (v >> L->in[i].log2) {
            PyErr_Format(PyExc_ValueError, "apply: %s index %llu out of range (size %llu)", nm,
                         (unsigned long long)v, (unsigned long long)ll_in_size(L, i));
            return -1;
        }
        *x |= v << L->in[i].shift;
    }
    return 0;
}

/* {dims[i].name: v[i]} */
static PyObject *dims_dict(const ll_dim *dims, int n, const uint64_t *v) {
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (x == NULL || PyDict_SetItemString(d, dims[i].name, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(x);
    }
    return d;
}

static PyObject *out_dict(const ll_layout *L, uint64_t y) {
    uint64_t v[LL_MAX_DIMS];
    ll_unpack_out(L, y, v);
    return dims_dict(L->out, L->n_out, v);
}

/* apply({in: idx}) or apply(in=idx): {out: idx}; missing in dims are 0. */
static PyObject *m_apply(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *mapping = NULL;
    if (!PyArg_ParseTuple(args, "|O:apply", &mapping))
        return NULL;
    uint64_t x, x2;
    if (flat_input(SELF(self), mapping, &x) < 0 || flat_input(SELF(self), kw, &x2) < 0)
        return NULL;
    return out_dict(SELF(self), ll_apply_flat(SELF(self), x | x2));
}

static PyObject *m_apply_flat(PyObject *self, PyObject *arg) {
    uint64_t x;
    if (as_u64(arg, &x, "apply_flat") < 0)
        return NULL;
    if (SELF(self)->in_bits < 64 && (x >> SELF(self)->in_bits)) {
        PyErr_SetString(PyExc_ValueError, "apply_flat: index out of range");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(ll_apply_flat(SELF(self), x));
}

/* preimage({out: idx}) -> {in: idx} (lowest holder) or None. */
static PyObject *m_preimage(PyObject *self, PyObject *arg) {
    const ll_layout *L = SELF(self);
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "preimage: expected a dict {out_dim: index}");
        return NULL;
    }
    uint64_t y = 0, x, v;
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(arg, &pos, &key, &val)) {
        const char *nm = as_name(key, "preimage");
        if (nm == NULL || as_u64(val, &v, "preimage") < 0)
            return NULL;
        int o = ll_find_out(L, nm);
        if (o < 0 || (v >> L->out[o].log2)) {
            PyErr_Format(PyExc_ValueError, "preimage: bad out dim or index '%s'", nm);
            return NULL;
        }
        y |= v << L->out[o].shift;
    }
    if (!ll_preimage(L, y, &x))
        Py_RETURN_NONE;
    uint64_t idx[LL_MAX_DIMS];
    ll_unpack_in(L, x, idx);
    return dims_dict(L->in, L->n_in, idx);
}

typedef int (*binop_fn)(ll_layout *, const ll_layout *, const ll_layout *);

static PyObject *binop(PyObject *self, PyObject *other, binop_fn fn, const char *what) {
    const ll_layout *a, *b;
    if (as_layout(self, &a, what) < 0 || as_layout(other, &b, what) < 0)
        return NULL;
    ll_layout r;
    return result(fn(&r, a, b), &r, what);
}

static PyObject *m_compose(PyObject *self, PyObject *o) { return binop(self, o, ll_compose, "compose"); }
static PyObject *m_invert_and_compose(PyObject *self, PyObject *o) {
    return binop(self, o, ll_invert_and_compose, "invert_and_compose");
}
static PyObject *m_concat_ins(PyObject *self, PyObject *o) { return binop(self, o, ll_concat_ins, "concat_ins"); }
static PyObject *m_concat_outs(PyObject *self, PyObject *o) { return binop(self, o, ll_concat_outs, "concat_outs"); }

/* divide_left / divide_right / quotient: None when there is no exact result */
static PyObject *maybe(int rc, const ll_layout *r, const char *what) {
    if (rc == LL_ENOTDIV)
        Py_RETURN_NONE;
    return result(rc, r, what);
}

static PyObject *divide(PyObject *self, PyObject *o, binop_fn fn, const char *what) {
    const ll_layout *b;
    if (as_layout(o, &b, what) < 0)
        return NULL;
    ll_layout r;
    return maybe(fn(&r, SELF(self), b), &r, what);
}
static PyObject *m_divide_left(PyObject *self, PyObject *o) { return divide(self, o, ll_divide_left, "divide_left"); }
static PyObject *m_divide_right(PyObject *self, PyObject *o) { return divide(self, o, ll_divide_right, "divide_right"); }

typedef int (*unop_fn)(ll_layout *, const ll_layout *);
static PyObject *unop(PyObject *self, unop_fn fn, const char *what) {
    ll_layout r;
    return result(fn(&r, SELF(self)), &r, what);
}
static PyObject *m_invert(PyObject *self, PyObject *u) { (void)u; return unop(self, ll_invert, "invert"); }
static PyObject *m_pseudo_invert(PyObject *self, PyObject *u) { (void)u; return unop(self, ll_pseudo_invert, "pseudo_invert"); }
static PyObject *m_flatten_ins(PyObject *self, PyObject *u) { (void)u; return unop(self, ll_flatten_ins, "flatten_ins"); }
static PyObject *m_flatten_outs(PyObject *self, PyObject *u) { (void)u; return unop(self, ll_flatten_outs, "flatten_outs"); }

typedef int (*reshape_fn)(ll_layout *, const ll_layout *, int, const char *const *, const int *);
static PyObject *reshape(PyObject *self, PyObject *arg, reshape_fn fn, const char *what) {
    const char *names[LL_MAX_DIMS];
    int lg[LL_MAX_DIMS], n;
    PyObject *keep = NULL;
    if (seq_dims(arg, names, lg, &n, &keep, what) < 0)
        return NULL;
    ll_layout r;
    int rc = fn(&r, SELF(self), n, names, lg);
    Py_DECREF(keep);
    return result(rc, &r, what);
}
static PyObject *m_reshape_ins(PyObject *self, PyObject *a) { return reshape(self, a, ll_reshape_ins, "reshape_ins"); }
static PyObject *m_reshape_outs(PyObject *self, PyObject *a) { return reshape(self, a, ll_reshape_outs, "reshape_outs"); }

typedef int (*names_fn)(ll_layout *, const ll_layout *, int, const char *const *);
static PyObject *with_names(PyObject *self, PyObject *arg, names_fn fn, const char *what, bool maybe_none) {
    const char *names[LL_MAX_DIMS];
    int n;
    PyObject *keep = NULL;
    if (PyUnicode_Check(arg)) { /* a single name */
        if ((names[0] = as_name(arg, what)) == NULL)
            return NULL;
        n = 1;
    } else if (seq_names(arg, names, &n, &keep, what) < 0) {
        return NULL;
    }
    ll_layout r;
    int rc = fn(&r, SELF(self), n, names);
    Py_XDECREF(keep);
    return maybe_none ? maybe(rc, &r, what) : result(rc, &r, what);
}
static PyObject *m_transpose_ins(PyObject *self, PyObject *a) { return with_names(self, a, ll_transpose_ins, "transpose_ins", false); }
static PyObject *m_transpose_outs(PyObject *self, PyObject *a) { return with_names(self, a, ll_transpose_outs, "transpose_outs", false); }
static PyObject *m_quotient(PyObject *self, PyObject *a) { return with_names(self, a, ll_quotient, "quotient", true); }

static PyObject *m_sublayout(PyObject *self, PyObject *args) {
    PyObject *ins, *outs, *k1 = NULL, *k2 = NULL;
    if (!PyArg_ParseTuple(args, "OO:sublayout", &ins, &outs))
        return NULL;
    const char *ni[LL_MAX_DIMS], *no[LL_MAX_DIMS];
    int nin, nout;
    if (seq_names(ins, ni, &nin, &k1, "sublayout") < 0)
        return NULL;
    if (seq_names(outs, no, &nout, &k2, "sublayout") < 0) {
        Py_DECREF(k1);
        return NULL;
    }
    ll_layout r;
    int rc = ll_sublayout(&r, SELF(self), nin, ni, nout, no);
    Py_DECREF(k1);
    Py_DECREF(k2);
    return result(rc, &r, "sublayout");
}

static PyObject *m_resize_in(PyObject *self, PyObject *args) {
    const char *nm;
    unsigned long long size;
    int lg;
    if (!PyArg_ParseTuple(args, "sK:resize_in", &nm, &size) || log2_of(size, &lg, "resize_in") < 0)
        return NULL;
    ll_layout r;
    return result(ll_resize_in(&r, SELF(self), nm, lg), &r, "resize_in");
}

static PyObject *m_remove_zero_bases(PyObject *self, PyObject *arg) {
    const char *nm = as_name(arg, "remove_zero_bases");
    if (nm == NULL)
        return NULL;
    ll_layout r;
    return result(ll_remove_zero_bases(&r, SELF(self), nm), &r, "remove_zero_bases");
}

/* m_NAME(): ll_NAME(self) as a Python value made by `box` */
#define QUERY(name, box)                                     \
    static PyObject *m_##name(PyObject *self, PyObject *u) { \
        (void)u;                                             \
        return box(ll_##name(SELF(self)));                   \
    }
QUERY(is_surjective, PyBool_FromLong)
QUERY(is_injective, PyBool_FromLong)
QUERY(is_invertible, PyBool_FromLong)
QUERY(rank, PyLong_FromLong)
QUERY(num_consecutive, PyLong_FromUnsignedLongLong)
#undef QUERY

static PyObject *m_free_variable_masks(PyObject *self, PyObject *u) {
    (void)u;
    const ll_layout *L = SELF(self);
    uint64_t m[LL_MAX_DIMS];
    ll_free_variable_masks(L, m);
    return dims_dict(L->in, L->n_in, m);
}

static PyObject *m_redundancy_masks(PyObject *self, PyObject *u) {
    (void)u;
    ll_redundancy r;
    int rc = ll_redundancy_masks(SELF(self), &r);
    if (rc)
        return raise_ll(rc, "redundancy_masks");
    return Py_BuildValue("{sKsKsKsK}", "register", (unsigned long long)r.reg, "lane",
                         (unsigned long long)r.lane, "warp", (unsigned long long)r.warp, "block",
                         (unsigned long long)r.block);
}

/* Text through a growable buffer: format once, retry with the needed size. */
typedef size_t (*fmt_fn)(const ll_layout *, char *, size_t);
static PyObject *formatted(const ll_layout *L, fmt_fn fn) {
    char small[2048];
    size_t n = fn(L, small, sizeof small);
    if (n < sizeof small)
        return PyUnicode_FromStringAndSize(small, (Py_ssize_t)n);
    char *big = PyMem_Malloc(n + 1);
    if (big == NULL)
        return PyErr_NoMemory();
    fn(L, big, n + 1);
    PyObject *s = PyUnicode_FromStringAndSize(big, (Py_ssize_t)n);
    PyMem_Free(big);
    return s;
}

static PyObject *m_table(PyObject *self, PyObject *u) {
    (void)u;
    return formatted(SELF(self), ll_format_table);
}

static PyObject *ll_repr(PyObject *self) {
    PyObject *body = formatted(SELF(self), ll_format), *res = NULL;
    if (body == NULL)
        return NULL;
    /* indent each line: "LinearLayout(\n  register: ...\n  -> dim0: 16)" */
    PyObject *lines = PyUnicode_Splitlines(body, 0), *sep = NULL, *joined = NULL;
    Py_DECREF(body);
    if (lines == NULL)
        return NULL;
    sep = PyUnicode_FromString("\n  ");
    if (sep == NULL)
        goto done;
    joined = PyUnicode_Join(sep, lines);
    if (joined == NULL)
        goto done;
    res = PyUnicode_FromFormat("LinearLayout(\n  %U)", joined);
done:
    Py_XDECREF(joined);
    Py_XDECREF(sep);
    Py_DECREF(lines);
    return res;
}

static PyObject *ll_richcompare(PyObject *a, PyObject *b, int op) {
    if (!PyObject_TypeCheck(a, &LLType) || !PyObject_TypeCheck(b, &LLType) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    bool eq = ll_equal(SELF(a), SELF(b));
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t ll_hash(PyObject *self) {
    const ll_layout *L = SELF(self);
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p;
#define MIX(ptr, n)                                   \
    for (p = (const unsigned char *)(ptr); p < (const unsigned char *)(ptr) + (n); p++) \
        h = (h ^ *p) * 1099511628211ull;
    for (int i = 0; i < L->n_in; i++) { MIX(L->in[i].name, strlen(L->in[i].name)); MIX(&L->in[i].log2, 1); }
    for (int i = 0; i < L->n_out; i++) { MIX(L->out[i].name, strlen(L->out[i].name)); MIX(&L->out[i].log2, 1); }
    MIX(L->basis, sizeof(uint64_t) * L->in_bits);
#undef MIX
    Py_hash_t r = (Py_hash_t)(h >> 1);
    return r == -1 ? -2 : r;
}

static PyObject *ll_mul(PyObject *a, PyObject *b) {
    if (!PyObject_TypeCheck(a, &LLType) || !PyObject_TypeCheck(b, &LLType))
        Py_RETURN_NOTIMPLEMENTED;
    ll_layout r;
    return result(ll_product(&r, SELF(a), SELF(b)), &r, "product");
}

static PyObject *m_reduce(PyObject *self, PyObject *u) {
    (void)u;
    PyObject *bases = get_bases(self, NULL), *outs = NULL, *res = NULL;
    if (bases == NULL)
        return NULL;
    outs = get_out_dims(self, NULL);
    if (outs != NULL)
        res = Py_BuildValue("(O(OO))", (PyObject *)Py_TYPE(self), bases, outs);
    Py_XDECREF(outs);
    Py_DECREF(bases);
    return res;
}

static PyMethodDef ll_methods[] = {
    {"apply", (PyCFunction)(void (*)(void))m_apply, METH_VARARGS | METH_KEYWORDS,
     "apply({in_dim: index} or in_dim=index) -> {out_dim: index}; missing dims are 0"},
    {"apply_flat", m_apply_flat, METH_O, "apply to a flat input index (first dim least significant)"},
    {"preimage", m_preimage, METH_O, "lowest hardware index holding {out_dim: index}, or None"},
    {"compose", m_compose, METH_O, "self.compose(outer): x -> outer(self(x))"},
    {"invert_and_compose", m_invert_and_compose, METH_O,
     "self.invert_and_compose(outer): C with outer(C(x)) == self(x) (least squares over F2)"},
    {"invert", m_invert, METH_NOARGS, "inverse of a bijective layout"},
    {"pseudo_invert", m_pseudo_invert, METH_NOARGS, "right inverse of a surjective layout"},
    {"reshape_ins", m_reshape_ins, METH_O, "reshape_ins([(name, size), ...])"},
    {"reshape_outs", m_reshape_outs, METH_O, "reshape_outs([(name, size), ...])"},
    {"transpose_ins", m_transpose_ins, METH_O, "transpose_ins([name, ...])"},
    {"transpose_outs", m_transpose_outs, METH_O, "transpose_outs([name, ...])"},
    {"flatten_ins", m_flatten_ins, METH_NOARGS, "one input dim (named after the first)"},
    {"flatten_outs", m_flatten_outs, METH_NOARGS, "one output dim (named after the first)"},
    {"sublayout", m_sublayout, METH_VARARGS, "sublayout(in_dims, out_dims)"},
    {"concat_ins", m_concat_ins, METH_O, "(x, y) -> self(x) ^ other(y)"},
    {"concat_outs", m_concat_outs, METH_O, "x -> (self(x), other(x))"},
    {"quotient", m_quotient, METH_O, "remove dims on which the layout is the identity, or None"},
    {"divide_left", m_divide_left, METH_O, "R with self == b * R, or None"},
    {"divide_right", m_divide_right, METH_O, "R with self == R * b, or None"},
    {"resize_in", m_resize_in, METH_VARARGS, "resize_in(name, size): grow with zero bases or cut"},
    {"remove_zero_bases", m_remove_zero_bases, METH_O, "drop the zero bases of an input dim"},
    {"is_surjective", m_is_surjective, METH_NOARGS, NULL},
    {"is_injective", m_is_injective, METH_NOARGS, NULL},
    {"is_invertible", m_is_invertible, METH_NOARGS, NULL},
    {"rank", m_rank, METH_NOARGS, "number of linearly independent bases"},
    {"num_consecutive", m_num_consecutive, METH_NOARGS, "vector width along the first out dim"},
    {"free_variable_masks", m_free_variable_masks, METH_NOARGS,
     "{in_dim: mask of bits that only repeat data (broadcast)}"},
    {"redundancy_masks", m_redundancy_masks, METH_NOARGS,
     "{register, lane, warp, block: mask}; store only where (index & mask) == 0"},
    {"table", m_table, METH_NOARGS, "text table of which hardware index holds each element"},
    {"__reduce__", m_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ll_getset[] = {
    {"in_dims", get_in_dims, NULL, "[(name, size), ...] of the hardware side", NULL},
    {"out_dims", get_out_dims, NULL, "[(name, size), ...] of the tensor side", NULL},
    {"bases", get_bases, NULL, "{in_dim: [tuple per input bit]}", NULL},
    {"in_bits", get_in_bits, NULL, NULL, NULL},
    {"out_bits", get_out_bits, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *ll_call(PyObject *self, PyObject *args, PyObject *kw) { return m_apply(self, args, kw); }

static PyNumberMethods ll_as_number = {.nb_multiply = ll_mul};

static PyTypeObject LLType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "torchc._C.LinearLayout",
    .tp_basicsize = sizeof(LLObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A linear layout over F2: hardware index bits -> tensor index bits.\n\n"
              "LinearLayout(bases, out_dims=None): bases {in_dim: [basis, ...]}, a basis is\n"
              "an int or one int per out dim; out_dims None | [name] | [(name, size)] | {name: size}.",
    .tp_new = ll_new,
    .tp_repr = ll_repr,
    .tp_richcompare = ll_richcompare,
    .tp_hash = ll_hash,
    .tp_call = ll_call,
    .tp_as_number = &ll_as_number,
    .tp_methods = ll_methods,
    .tp_getset = ll_getset,
};

/* ---- module functions ------------------------------------------------------ */

static PyObject *f_identity(PyObject *m, PyObject *args) {
    (void)m;
    unsigned long long size;
    const char *in, *out;
    if (!PyArg_ParseTuple(args, "Kss:ll_identity", &size, &in, &out))
        return NULL;
    ll_layout r;
    return result(ll_identity1d(&r, size, in, out), &r, "identity");
}

static PyObject *f_zeros(PyObject *m, PyObject *args) {
    (void)m;
    unsigned long long size, out_size = 1;
    const char *in, *out;
    if (!PyArg_ParseTuple(args, "Kss|K:ll_zeros", &size, &in, &out, &out_size))
        return NULL;
    ll_layout r;
    return result(ll_zeros1d(&r, size, in, out, out_size), &r, "zeros");
}

static PyObject *f_strided(PyObject *m, PyObject *args) {
    (void)m;
    unsigned long long size, stride;
    const char *in, *out;
    if (!PyArg_ParseTuple(args, "KKss:ll_strided", &size, &stride, &in, &out))
        return NULL;
    ll_layout r;
    return result(ll_strided1d(&r, size, stride, in, out), &r, "strided");
}

/* shape -> rank and int64 sizes */
static int parse_shape(PyObject *o, int64_t *shape, int *rank) {
    if (seq_i64(o, shape, LL_MAX_DIMS, rank, "shape") < 0)
        return -1;
    if (*rank < 1) {
        PyErr_SetString(PyExc_ValueError, "shape: expected at least one dim");
        return -1;
    }
    return 0;
}

/* the trailing order and cga arguments of a layout over `rank` dims */
static int parse_order_cga(PyObject *order_o, PyObject *cga_o, int rank, int *order, ll_cga *cga,
                           const ll_cga **cp) {
    return seq_int_rank(order_o, order, rank, "order") < 0 || parse_cga(cga_o, rank, cga, cp) < 0 ? -1 : 0;
}

/* the 2-D shape, warps_per_cta and cga arguments of an mma layout */
static int parse_mma(PyObject *shape_o, PyObject *wpc_o, PyObject *cga_o, int64_t *shape, int *wpc,
                     ll_cga *cga, const ll_cga **cp, const char *what) {
    int rank;
    if (parse_shape(shape_o, shape, &rank) < 0)
        return -1;
    if (rank != 2) {
        PyErr_Format(PyExc_ValueError, "%s: shape must be 2-D", what);
        return -1;
    }
    return seq_int_rank(wpc_o, wpc, 2, "warps_per_cta") < 0 || parse_cga(cga_o, 2, cga, cp) < 0 ? -1 : 0;
}

/* two layout arguments */
static int two_layouts(PyObject *a, PyObject *b, const ll_layout **la, const ll_layout **lb, const char *what) {
    return as_layout(a, la, what) < 0 || as_layout(b, lb, what) < 0 ? -1 : 0;
}

static PyObject *f_identity_nd(PyObject *m, PyObject *args) {
    (void)m;
    const char *in;
    PyObject *shape_o, *order_o;
    if (!PyArg_ParseTuple(args, "sOO:ll_identity_nd", &in, &shape_o, &order_o))
        return NULL;
    int64_t shape[LL_MAX_DIMS];
    int rank, order[LL_MAX_DIMS];
    if (parse_shape(shape_o, shape, &rank) < 0 || seq_int_rank(order_o, order, rank, "order") < 0)
        return NULL;
    ll_layout r;
    return result(ll_identity_nd(&r, in, rank, shape, order), &r, "identity_nd");
}

static PyObject *f_blocked(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *shape_o, *spt_o, *tpw_o, *wpc_o, *order_o, *cga_o = Py_None;
    if (!PyArg_ParseTuple(args, "OOOOO|O:ll_blocked", &shape_o, &spt_o, &tpw_o, &wpc_o, &order_o, &cga_o))
        return NULL;
    int64_t shape[LL_MAX_DIMS];
    int rank, spt[LL_MAX_DIMS], tpw[LL_MAX_DIMS], wpc[LL_MAX_DIMS], order[LL_MAX_DIMS];
    ll_cga cga;
    const ll_cga *cp;
    if (parse_shape(shape_o, shape, &rank) < 0 || seq_int_rank(spt_o, spt, rank, "size_per_thread") < 0 ||
        seq_int_rank(tpw_o, tpw, rank, "threads_per_warp") < 0 ||
        seq_int_rank(wpc_o, wpc, rank, "warps_per_cta") < 0 ||
        parse_order_cga(order_o, cga_o, rank, order, &cga, &cp) < 0)
        return NULL;
    ll_layout r;
    return result(ll_blocked(&r, rank, shape, spt, tpw, wpc, order, cp), &r, "blocked");
}

static PyObject *f_slice(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *parent;
    int dim;
    const ll_layout *p;
    if (!PyArg_ParseTuple(args, "Oi:ll_slice", &parent, &dim) || as_layout(parent, &p, "slice") < 0)
        return NULL;
    ll_layout r;
    return result(ll_slice(&r, p, dim), &r, "slice");
}

static PyObject *f_mma_accumulator(PyObject *m, PyObject *args) {
    (void)m;
    int version, instr_n;
    PyObject *shape_o, *wpc_o, *cga_o = Py_None;
    if (!PyArg_ParseTuple(args, "iOOi|O:ll_mma_accumulator", &version, &shape_o, &wpc_o, &instr_n, &cga_o))
        return NULL;
    int64_t shape[LL_MAX_DIMS];
    int wpc[LL_MAX_DIMS];
    ll_cga cga;
    const ll_cga *cp;
    if (parse_mma(shape_o, wpc_o, cga_o, shape, wpc, &cga, &cp, "mma_accumulator") < 0)
        return NULL;
    ll_layout r;
    return result(ll_mma_accumulator(&r, version, shape, wpc, instr_n, cp), &r, "mma_accumulator");
}

static PyObject *f_mma_operand(PyObject *m, PyObject *args) {
    (void)m;
    int version, op_idx, elem_bits, k_width = 0;
    PyObject *shape_o, *wpc_o, *cga_o = Py_None;
    if (!PyArg_ParseTuple(args, "iiOOi|iO:ll_mma_operand", &version, &op_idx, &shape_o, &wpc_o, &elem_bits,
                          &k_width, &cga_o))
        return NULL;
    int64_t shape[LL_MAX_DIMS];
    int wpc[LL_MAX_DIMS];
    ll_cga cga;
    const ll_cga *cp;
    if (parse_mma(shape_o, wpc_o, cga_o, shape, wpc, &cga, &cp, "mma_operand") < 0)
        return NULL;
    ll_layout r;
    return result(ll_mma_operand(&r, version, op_idx, shape, wpc, elem_bits, k_width, cp), &r, "mma_operand");
}

static PyObject *f_ldmatrix(PyObject *m, PyObject *args) {
    (void)m;
    int num, trans = 0, addr = 0;
    if (!PyArg_ParseTuple(args, "i|pp:ll_ldmatrix", &num, &trans, &addr))
        return NULL;
    ll_layout r;
    int rc = addr ? ll_ldmatrix_addr(&r, num, trans) : ll_ldmatrix(&r, num, trans);
    return result(rc, &r, "ldmatrix");
}

static PyObject *f_shared_swizzled(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *shape_o, *order_o, *cga_o = Py_None;
    int vec, pp, mp;
    if (!PyArg_ParseTuple(args, "OiiiO|O:ll_shared_swizzled", &shape_o, &vec, &pp, &mp, &order_o, &cga_o))
        return NULL;
    int64_t shape[LL_MAX_DIMS];
    int rank, order[LL_MAX_DIMS];
    ll_cga cga;
    const ll_cga *cp;
    if (parse_shape(shape_o, shape, &rank) < 0 || parse_order_cga(order_o, cga_o, rank, order, &cga, &cp) < 0)
        return NULL;
    ll_layout r;
    return result(ll_shared_swizzled(&r, rank, shape, vec, pp, mp, order, cp), &r, "shared_swizzled");
}

static PyObject *f_nvmma_shared(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *shape_o, *cga_o = Py_None;
    int bits, swz, trans = 0;
    if (!PyArg_ParseTuple(args, "Oii|pO:ll_nvmma_shared", &shape_o, &bits, &swz, &trans, &cga_o))
        return NULL;
    int64_t shape[LL_MAX_DIMS];
    int rank;
    ll_cga cga;
    const ll_cga *cp;
    if (parse_shape(shape_o, shape, &rank) < 0 || parse_cga(cga_o, rank, &cga, &cp) < 0)
        return NULL;
    ll_layout r;
    return result(ll_nvmma_shared(&r, rank, shape, bits, swz, trans, cp), &r, "nvmma_shared");
}

static PyObject *swizzle_dict(const ll_swizzle *s) {
    PyObject *smem = wrap(&s->smem), *d = NULL;
    if (smem == NULL)
        return NULL;
    d = Py_BuildValue("{sOsisisisisi}", "layout", smem, "vec", s->vec, "store_wavefronts",
                      s->store_wavefronts, "load_wavefronts", s->load_wavefronts, "store_ideal",
                      s->store_ideal, "load_ideal", s->load_ideal);
    Py_DECREF(smem);
    return d;
}

static PyObject *f_optimal_swizzle(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b;
    int bits;
    const ll_layout *src, *dst;
    if (!PyArg_ParseTuple(args, "OOi:ll_optimal_swizzle", &a, &b, &bits) ||
        two_layouts(a, b, &src, &dst, "optimal_swizzle") < 0)
        return NULL;
    ll_swizzle s;
    int rc = ll_optimal_swizzle(&s, src, dst, bits);
    return rc ? raise_ll(rc, "optimal_swizzle") : swizzle_dict(&s);
}

static PyObject *f_bank_conflicts(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b;
    int bits, vec = 0;
    const ll_layout *reg, *smem;
    if (!PyArg_ParseTuple(args, "OOi|i:ll_bank_conflicts", &a, &b, &bits, &vec) ||
        two_layouts(a, b, &reg, &smem, "bank_conflicts") < 0)
        return NULL;
    ll_bank_stats st;
    int rc = ll_bank_conflicts(&st, reg, smem, bits, vec);
    if (rc)
        return raise_ll(rc, "bank_conflicts");
    return Py_BuildValue("{sLsLsLsisi}", "instructions", (long long)st.instructions, "wavefronts",
                         (long long)st.wavefronts, "ideal", (long long)st.ideal, "max_wavefronts",
                         st.max_wavefronts, "vec", st.vec);
}

/* The whole shuffle schedule: [[(src_lane, [(src_reg, dst_reg), ...]) per lane] per round]. */
static PyObject *shuffle_schedule(const ll_cvt_plan *p, const ll_layout *src, const ll_layout *dst) {
    int lane_dim = ll_find_in(dst, LL_LANE);
    int nlanes = lane_dim < 0 ? 1 : 1 << dst->in[lane_dim].log2;
    PyObject *rounds = PyList_New(p->shuffle_rounds), *lanes = NULL, *pairs = NULL, *entry = NULL;
    if (rounds == NULL)
        return NULL;
    for (int r = 0; r < p->shuffle_rounds; r++) {
        lanes = PyList_New(nlanes);
        if (lanes == NULL)
            goto error;
        for (int l = 0; l < nlanes; l++) {
            int from;
            int64_t sr[4], dr[4];
            int rc = ll_shuffle_step(p, src, dst, r, l, &from, sr, dr);
            if (rc) {
                raise_ll(rc, "shuffle_step");
                goto error;
            }
            pairs = PyList_New(0);
            if (pairs == NULL)
                goto error;
            for (int j = 0; j < 4 && dr[j] >= 0; j++) {
                PyObject *t = Py_BuildValue("(LL)", (long long)sr[j], (long long)dr[j]);
                if (t == NULL || PyList_Append(pairs, t) < 0) {
                    Py_XDECREF(t);
                    goto error;
                }
                Py_DECREF(t);
            }
            entry = Py_BuildValue("(iO)", from, pairs);
            if (entry == NULL)
                goto error;
            Py_CLEAR(pairs);
            PyList_SET_ITEM(lanes, l, entry); /* steals entry */
            entry = NULL;
        }
        PyList_SET_ITEM(rounds, r, lanes); /* steals lanes */
        lanes = NULL;
    }
    return rounds;
error:
    Py_XDECREF(entry);
    Py_XDECREF(pairs);
    Py_XDECREF(lanes);
    Py_DECREF(rounds);
    return NULL;
}

static PyObject *f_plan_conversion(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *a, *b, *cvt = NULL, *extra = NULL, *d = NULL;
    int bits;
    const ll_layout *src, *dst;
    if (!PyArg_ParseTuple(args, "OOi:ll_plan_conversion", &a, &b, &bits) ||
        two_layouts(a, b, &src, &dst, "plan_conversion") < 0)
        return NULL;
    ll_cvt_plan p;
    int rc = ll_plan_conversion(&p, src, dst, bits);
    if (rc)
        return raise_ll(rc, "plan_conversion");
    cvt = wrap(&p.cvt);
    if (cvt == NULL)
        goto error;
    d = Py_BuildValue("{sssO}", "kind", ll_cvt_kind_name(p.kind), "cvt", cvt);
    if (d == NULL)
        goto error;
    if (p.kind == LL_CVT_SHUFFLE) {
        extra = Py_BuildValue("{sisisO}", "rounds", p.shuffle_rounds, "pack", p.shuffle_pack, "selects",
                              p.shuffle_selects ? Py_True : Py_False);
        if (extra == NULL || PyDict_Update(d, extra) < 0)
            goto error;
        Py_CLEAR(extra);
        extra = shuffle_schedule(&p, src, dst);
        if (extra == NULL || PyDict_SetItemString(d, "schedule", extra) < 0)
            goto error;
        Py_CLEAR(extra);
    } else if (p.kind == LL_CVT_SHARED) {
        extra = swizzle_dict(&p.swizzle);
        if (extra == NULL || PyDict_SetItemString(d, "swizzle", extra) < 0)
            goto error;
        Py_CLEAR(extra);
    }
    Py_DECREF(cvt);
    return d;
error:
    Py_XDECREF(extra);
    Py_XDECREF(d);
    Py_XDECREF(cvt);
    return NULL;
}

static PyMethodDef ll_functions[] = {
    {"ll_identity", f_identity, METH_VARARGS, "ll_identity(size, in_dim, out_dim)"},
    {"ll_zeros", f_zeros, METH_VARARGS, "ll_zeros(size, in_dim, out_dim, out_size=1)"},
    {"ll_strided", f_strided, METH_VARARGS, "ll_strided(size, stride, in_dim, out_dim)"},
    {"ll_identity_nd", f_identity_nd, METH_VARARGS, "ll_identity_nd(in_dim, shape, order)"},
    {"ll_blocked", f_blocked, METH_VARARGS,
     "ll_blocked(shape, size_per_thread, threads_per_warp, warps_per_cta, order, cga=None)"},
    {"ll_slice", f_slice, METH_VARARGS, "ll_slice(parent, dim)"},
    {"ll_mma_accumulator", f_mma_accumulator, METH_VARARGS,
     "ll_mma_accumulator(version, shape, warps_per_cta, instr_n, cga=None)"},
    {"ll_mma_operand", f_mma_operand, METH_VARARGS,
     "ll_mma_operand(version, op_idx, shape, warps_per_cta, elem_bits, k_width=0, cga=None)"},
    {"ll_ldmatrix", f_ldmatrix, METH_VARARGS, "ll_ldmatrix(num, trans=False, addresses=False)"},
    {"ll_shared_swizzled", f_shared_swizzled, METH_VARARGS,
     "ll_shared_swizzled(shape, vec, per_phase, max_phase, order, cga=None)"},
    {"ll_nvmma_shared", f_nvmma_shared, METH_VARARGS,
     "ll_nvmma_shared(shape, elem_bits, swizzle_bytes, transposed=False, cga=None)"},
    {"ll_optimal_swizzle", f_optimal_swizzle, METH_VARARGS, "ll_optimal_swizzle(src, dst, elem_bits)"},
    {"ll_bank_conflicts", f_bank_conflicts, METH_VARARGS, "ll_bank_conflicts(reg, smem, elem_bits, vec=0)"},
    {"ll_plan_conversion", f_plan_conversion, METH_VARARGS, "ll_plan_conversion(src, dst, elem_bits)"},
    {NULL, NULL, 0, NULL},
};

int tc_layouts_init(PyObject *module) {
    PyObject *fn = NULL;
    if (PyType_Ready(&LLType) < 0)
        return -1;
    Py_INCREF(&LLType);
    if (PyModule_AddObject(module, "LinearLayout", (PyObject *)&LLType) < 0) {
        Py_DECREF(&LLType);
        return -1;
    }
    PyObject *modname = PyModule_GetNameObject(module); /* new ref */
    if (modname == NULL)
        return -1;
    for (PyMethodDef *d = ll_functions; d->ml_name; d++) {
        fn = PyCFunction_NewEx(d, module, modname); /* new ref */
        if (fn == NULL || PyModule_AddObject(module, d->ml_name, fn) < 0)
            goto error;
        fn = NULL; /* stolen */
    }
    Py_DECREF(modname);
    return 0;
error:
    Py_XDECREF(fn);
    Py_DECREF(modname);
    return -1;
}
