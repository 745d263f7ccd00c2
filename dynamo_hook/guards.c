/* guards.c — resolve sources and evaluate an entry's guard list in C.
 *
 * Sources are resolved in order (a source's base always precedes it), each to a borrowed
 * reference stored in values[]; guards then test those values. Attribute sources on
 * nn.Module look in the instance dict and _parameters/_buffers/_modules directly, so a
 * guard check never runs Python code.
 */
#include "dh_internal.h"

#include <string.h>

static PyObject *str_parameters, *str_buffers, *str_modules, *str_dict;
/* The objects a guard check made (custom getattr results, peeked iterator items, objects
 * built by DH_S_NEW), which values[] borrows until the call's output is built: per thread
 * (another thread's call, run while this one released the GIL in a guard's Python or in
 * ic_run, never frees them) and per call: each hooked frame (and each probe) owns the part
 * above the base it found (dh_scratch_enter), so a compiled function called from inside
 * another's run (a graph break, an output's Python) clears only its own part. */
static _Thread_local PyObject *scratch;
static _Thread_local Py_ssize_t scratch_base;
static _Thread_local int scratch_depth;

static void scratch_truncate(Py_ssize_t to) {
    if (scratch && PyList_GET_SIZE(scratch) > to) {
        PyObject *et, *ev, *tb; /* the objects' __del__ runs here: an error set stays set */
        PyErr_Fetch(&et, &ev, &tb);
        if (PyList_SetSlice(scratch, to, PyList_GET_SIZE(scratch), NULL) < 0)
            PyErr_Clear(); /* shrinking a list does not fail; nothing to report */
        PyErr_Restore(et, ev, tb);
    }
}

void dh_scratch_keep(PyObject *v) {
    if (scratch == NULL)
        scratch = PyList_New(0);
    if (scratch != NULL) /* else, or a failed append: MemoryError stays set, as in eager */
        (void)PyList_Append(scratch, v);
    Py_DECREF(v);
}

void dh_scratch_clear(void) { scratch_truncate(scratch_base); }

Py_ssize_t dh_scratch_enter(void) {
    Py_ssize_t old = scratch_base;
    scratch_base = scratch ? PyList_GET_SIZE(scratch) : 0;
    scratch_depth++;
    return old;
}

void dh_scratch_leave(Py_ssize_t old) {
    scratch_truncate(scratch_base);
    scratch_base = old;
    if (--scratch_depth == 0 && scratch != NULL && PyList_GET_SIZE(scratch) == 0)
        Py_CLEAR(scratch); /* the thread's outermost call: nothing left for a thread's exit */
}

static int init_strings(void) {
    if (str_parameters)
        return 0;
    str_parameters = PyUnicode_InternFromString("_parameters");
    str_buffers = PyUnicode_InternFromString("_buffers");
    str_modules = PyUnicode_InternFromString("_modules");
    str_dict = PyUnicode_InternFromString("__dict__");
    return str_parameters && str_buffers && str_modules && str_dict ? 0 : -1;
}

/* getattr without running Python: instance __dict__ first (after data descriptors are
 * ruled out by the trace), then nn.Module's _parameters/_buffers/_modules. New ref. */
PyObject *dh_module_getattr(PyObject *obj, PyObject *name) {
    if (init_strings() < 0) {
        /* only an allocation failed: MemoryError stays set, as in eager */
        return NULL;
    }
    PyObject **dictptr = _PyObject_GetDictPtr(obj);
    PyObject *dict = dictptr ? *dictptr : NULL;
    if (dict == NULL)
        return NULL;
    PyObject *v = PyDict_GetItemWithError(dict, name);
    if (v != NULL)
        return Py_NewRef(v);
    if (PyErr_Occurred()) {
        (void)tc_clear_expected(PyExc_Exception);
        return NULL;
    }
    PyObject *subs[3] = {str_parameters, str_buffers, str_modules};
    for (int i = 0; i < 3; i++) {
        PyObject *d = PyDict_GetItemWithError(dict, subs[i]);
        if (d == NULL || !PyDict_Check(d)) {
            (void)tc_clear_expected(PyExc_Exception);
            continue;
        }
        v = PyDict_GetItemWithError(d, name);
        if (v != NULL)
            return Py_NewRef(v);
        (void)tc_clear_expected(PyExc_Exception);
    }
    return NULL;
}

/* A dict's version tag: a fresh value from a global counter on creation and on every change,
 * so (pointer, tag) names one state of one dict (CPython 3.11/3.12; deprecated for
 * extensions in 3.12 but present). */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static inline uint64_t dict_tag(PyObject *d) { return ((PyDictObject *)d)->ma_version_tag; }
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* dh_module_getattr with the answer of the last call for this source reused while it must
 * still hold: the instance dict unchanged (so the name is still not in it and its sub-dicts
 * are the same objects) and the sub-dicts before the one that had the name unchanged (so
 * they still lack it); then one lookup in that sub-dict instead of up to seven (a ViT's
 * guards resolve ~1500 module attributes per call). Borrowed result, like the caller's. */
static PyObject *module_getattr_cached(PyObject *obj, PyObject *name, dh_attrcache *ac) {
    PyObject **dictptr = _PyObject_GetDictPtr(obj);
    PyObject *dict = dictptr ? *dictptr : NULL;
    if (dict == NULL || !PyDict_Check(dict))
        return NULL;
    if (ac->where >= 0 && ac->dict == dict && ac->ver[0] == dict_tag(dict)) {
        if (ac->where == 3) /* in the instance dict, which is unchanged: the same value */
            return ac->last;
        int ok = 1;
        for (int i = 0; i < ac->where && ok; i++)
            ok = ac->sub[i] == NULL || ac->ver[1 + i] == dict_tag(ac->sub[i]);
        if (ok && ac->ver[1 + ac->where] == dict_tag(ac->sub[ac->where]))
            return ac->last; /* the sub-dict that held it unchanged too */
        if (ok) {
            PyObject *v = PyDict_GetItemWithError(ac->sub[ac->where], name);
            if (v != NULL) {
                ac->ver[1 + ac->where] = dict_tag(ac->sub[ac->where]);
                ac->last = v;
                return v;
            }
            (void)tc_clear_expected(PyExc_Exception);
        }
    }
    ac->where = -1;
    if (init_strings() < 0) {
        /* only an allocation failed: MemoryError stays set, as in eager */
        return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(dict, name);
    if (v != NULL || PyErr_Occurred()) {
        (void)tc_clear_expected(PyExc_Exception);
        if (v != NULL) {
            ac->dict = dict;
            ac->ver[0] = dict_tag(dict);
            ac->where = 3;
            ac->last = v;
        }
        return v;
    }
    PyObject *subs[3] = {str_parameters, str_buffers, str_modules};
    ac->dict = dict;
    ac->ver[0] = dict_tag(dict);
    for (int i = 0; i < 3; i++) {
        PyObject *d = PyDict_GetItemWithError(dict, subs[i]);
        if (d == NULL || !PyDict_Check(d)) {
            (void)tc_clear_expected(PyExc_Exception);
            ac->sub[i] = NULL;
            continue;
        }
        ac->sub[i] = d;
        ac->ver[1 + i] = dict_tag(d);
        v = PyDict_GetItemWithError(d, name);
        if (v != NULL) {
            ac->where = i;
            ac->last = v;
            return v;
        }
        (void)tc_clear_expected(PyExc_Exception);
    }
    return NULL;
}

int dh_module_has_attr(PyObject *obj, PyObject *name) {
    PyObject *v = dh_module_getattr(obj, name);
    Py_XDECREF(v);
    return v != NULL;
}

/* Borrowed result (kept alive by its container for the duration of the call), or NULL
 * when the value is missing. ATTR results are new references owned by... see below. */
PyObject *dh_source_resolve(dh_source *s, PyObject *const *values,
                            PyObject *const *localsplus, PyObject *globals, PyObject *builtins,
                            PyObject *func) {
    switch (s->kind) {
    case DH_S_LOCAL:
        return localsplus[s->index];
    case DH_S_GLOBAL: {
        if (s->base >= 0) { /* a global of an inlined function: its own __globals__ */
            PyObject *fn = values[s->base];
            if (fn == NULL || !PyFunction_Check(fn))
                return NULL;
            globals = PyFunction_GET_GLOBALS(fn);
        }
        if (s->index == 1) /* the globals dict itself (STORE_GLOBAL replay), borrowed */
            return globals;
        PyObject *v = PyDict_GetItemWithError(globals, s->name);
        if (v == NULL && !PyErr_Occurred() && PyDict_Check(builtins))
            v = PyDict_GetItemWithError(builtins, s->name);
        if (v == NULL)
            (void)tc_clear_expected(PyExc_Exception);
        return v;
    }
    case DH_S_ATTR: {
        PyObject *base = values[s->base];
        if (base == NULL)
            return NULL;
        if (s->index == 1) /* the class attribute (a method's function), borrowed */
            return _PyType_Lookup(Py_TYPE(base), s->name);
        if (s->index == 3) /* base is a class: its attribute through the MRO, borrowed */
            return PyType_Check(base) ? _PyType_Lookup((PyTypeObject *)base, s->name) : NULL;
        if (s->index == 2) {
            /* full getattr of an object with a custom __getattribute__/__getattr__: the
             * result is kept alive by the entry's scratch list for this check */
            PyObject *v = PyObject_GetAttr(base, s->name);
            if (v == NULL) {
                (void)tc_clear_expected(PyExc_AttributeError);
                return NULL;
            }
            dh_scratch_keep(v);
            return v;
        }
        PyObject *v = module_getattr_cached(base, s->name, &s->ac);
        if (v != NULL)
            return v; /* borrowed: owned by the object's dicts, alive during the call */
        if (PyModule_Check(base)) {
            /* not in the module's dict: its __getattr__ (PEP 562), whose answer may be a fresh
             * object that only this reference holds: kept alive for the call */
            v = PyObject_GetAttr(base, s->name);
            if (v == NULL)
                (void)tc_clear_expected(PyExc_AttributeError);
            else
                dh_scratch_keep(v);
        }
        return v;
    }
    case DH_S_ITEM: {
        PyObject *base = values[s->base];
        if (base == NULL)
            return NULL;
        if (s->name != NULL) { /* dict[key] (a dict subclass: its storage, as dict.get) */
            if (!PyDict_Check(base))
                return NULL;
            PyObject *v = PyDict_GetItemWithError(base, s->name);
            if (v == NULL)
                (void)tc_clear_expected(PyExc_Exception);
            return v;
        }
        if (PyTuple_Check(base) && s->index < PyTuple_GET_SIZE(base)) /* torch.return_types too */
            return PyTuple_GET_ITEM(base, s->index);
        if (PyList_CheckExact(base) && s->index < PyList_GET_SIZE(base))
            return PyList_GET_ITEM(base, s->index);
        return NULL;
    }
    case DH_S_CONST:
        return s->name;
    case DH_S_NEXT: {
        PyObject *it = values[s->base];
        PyObject *v = it ? dh_iter_peek(it, s->index) : NULL;
        if (v != NULL)
            dh_scratch_keep(v); /* alive for this check */
        return v;
    }
    case DH_S_NEW: {
        PyObject *cls = PyTuple_GET_ITEM(s->name, 0), *kwn = PyTuple_GET_ITEM(s->name, 1);
        PyObject *argsrc = PyTuple_GET_ITEM(s->name, 2);
        Py_ssize_t n = PyTuple_GET_SIZE(argsrc), nkw = PyTuple_GET_SIZE(kwn);
        PyObject *pos = PyTuple_New(n - nkw), *kw = nkw ? PyDict_New() : NULL, *r = NULL;
        for (Py_ssize_t i = 0; pos != NULL && (kw != NULL || !nkw) && i < n; i++) {
            PyObject *a = values[PyLong_AsLong(PyTuple_GET_ITEM(argsrc, i))];
            if (a == NULL)
                goto new_done;
            if (i < n - nkw)
                PyTuple_SET_ITEM(pos, i, Py_NewRef(a));
            else if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwn, i - (n - nkw)), a) < 0)
                goto new_done;
        }
        if (pos != NULL && (kw != NULL || !nkw))
            r = PyObject_Call(cls, pos, kw); /* hook off: the guards run busy */
    new_done:
        Py_XDECREF(pos);
        Py_XDECREF(kw);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return NULL;
        }
        dh_scratch_keep(r); /* alive until the call's output is built */
        return r;
    }
    case DH_S_DEREF: {
        PyObject *ref = values[s->base];
        if (ref == NULL || !PyWeakref_CheckRefExact(ref))
            return NULL;
        PyObject *v = PyWeakref_GetObject(ref); /* borrowed; None once dead */
        if (v == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return NULL;
        }
        dh_scratch_keep(Py_NewRef(v)); /* alive until the call's output is built */
        return v;
    }
    case DH_S_INTT: {
        PyObject *n = values[s->base];
        return n != NULL ? dh_int_tensor(n, s->index) : NULL;
    }
    case DH_S_CTXGET: {
        PyObject *cv = values[s->base], *v = NULL;
        if (cv == NULL || !PyContextVar_CheckExact(cv))
            return NULL;
        if (PyContextVar_Get(cv, NULL, &v) < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return NULL;
        }
        if (v == NULL) /* unset, no default: the guards fail (eager's get raises LookupError) */
            return NULL;
        dh_scratch_keep(v); /* alive until the call's output is built */
        return v;
    }
    case DH_S_CLOSURE:
    case DH_S_CELL: {
        if (s->base >= 0)
            func = values[s->base];
        if (func == NULL || !PyFunction_Check(func))
            return NULL;
        PyObject *cl = PyFunction_GET_CLOSURE(func);
        if (cl == NULL || s->index >= PyTuple_GET_SIZE(cl))
            return NULL;
        PyObject *cell = PyTuple_GET_ITEM(cl, s->index);
        if (!PyCell_Check(cell))
            return NULL;
        return s->kind == DH_S_CELL ? cell : PyCell_GET(cell);
    }
    }
    return NULL;
}

static int const_equal(PyObject *a, PyObject *b);

/* elements whose equality implies the same type (no int == float == bool across types) */
static int set_elem_plain(PyObject *o) {
    return PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) || o == Py_None;
}

/* two sets (one exact type) of elements equal one to one, each pair of the same type */
static int set_equal(PyObject *a, PyObject *b) {
    if (PySet_GET_SIZE(a) != PySet_GET_SIZE(b))
        return 0;
    PyObject *ta = PySequence_Tuple(a), *tb = ta == NULL ? NULL : PySequence_Tuple(b);
    int r = 0;
    if (tb == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(ta), i, j;
    int plain = 1;
    for (i = 0; i < n && plain; i++)
        plain = set_elem_plain(PyTuple_GET_ITEM(ta, i)) && set_elem_plain(PyTuple_GET_ITEM(tb, i));
    if (plain) {
        r = PyObject_RichCompareBool(a, b, Py_EQ);
        if (r < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            r = 0;
        }
        goto done;
    }
    /* every element of a has one of b const_equal to it (the sizes are equal and a set's
     * elements are distinct, so the pairing is one to one) */
    for (i = 0; i < n; i++) {
        for (j = 0; j < n && !const_equal(PyTuple_GET_ITEM(ta, i), PyTuple_GET_ITEM(tb, j)); j++)
            ;
        if (j == n)
            goto done;
    }
    r = 1;
done:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    return r;
}

static int const_equal(PyObject *a, PyObject *b) {
    if (a == b)
        return 1;
    if (Py_TYPE(a) != Py_TYPE(b))
        return 0;
    if (PyFloat_CheckExact(a)) /* NaN-safe and exact: compare bits */
        return memcmp(&((PyFloatObject *)a)->ob_fval, &((PyFloatObject *)b)->ob_fval,
                      sizeof(double)) == 0;
    if (PyTuple_Check(a) || PyList_CheckExact(a)) { /* a namedtuple too: Point(1, 2) == Point(1.0, 2) */
        if (PySequence_Fast_GET_SIZE(a) != PySequence_Fast_GET_SIZE(b))
            return 0;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(a); i++)
            if (!const_equal(PySequence_Fast_GET_ITEM(a, i), PySequence_Fast_GET_ITEM(b, i)))
                return 0;
        return 1;
    }
    if (PyDict_CheckExact(a)) { /* keys and values in order: {1: x} == {1.0: x} in Python */
        if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b))
            return 0;
        Py_ssize_t i = 0, j = 0;
        PyObject *ka, *va, *kb, *vb;
        while (PyDict_Next(a, &i, &ka, &va) && PyDict_Next(b, &j, &kb, &vb))
            if (!const_equal(ka, kb) || !const_equal(va, vb))
                return 0;
        return 1;
    }
    if (PyAnySet_CheckExact(a)) /* {1, 2} == {1.0, 2} in Python: elements paired by type too */
        return set_equal(a, b);
    int r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    return r;
}

static int tensor_matches(PyObject *v, const dh_guard *g, void **data, int64_t *symvals) {
    const tc_meta *want = &g->meta;
    if (!tc_is_tensor(v))
        return 0;
    tc_meta m;
    tc_tensor_meta(v, &m);
    if (m.flags || m.dtype != want->dtype || m.device_type != want->device_type ||
        m.device_index != want->device_index || m.ndim != want->ndim ||
        m.requires_grad != want->requires_grad)
        return 0;
    if (g->dyn) {
        /* symbolic dims: any value >= 2, the same for every dim of one symbol (bound in
         * guard order); static dims exact; the layout must be contiguous */
        int64_t st = 1;
        for (int d = m.ndim - 1; d >= 0; d--) {
            int k = g->sym[d];
            if (k < 0) {
                if (m.sizes[d] != want->sizes[d])
                    return 0;
            } else {
                if (m.sizes[d] < 2 || (symvals[k] != 0 && symvals[k] != m.sizes[d]))
                    return 0;
                symvals[k] = m.sizes[d];
            }
            if (m.sizes[d] != 1 && m.strides[d] != st)
                return 0;
            st *= m.sizes[d];
        }
        *data = m.data;
        return 1;
    }
    for (int d = 0; d < m.ndim; d++)
        if (m.sizes[d] != want->sizes[d] || (m.strides[d] != want->strides[d] && m.sizes[d] > 1))
            return 0;
    *data = m.data;
    return 1;
}

/* byte range [lo, hi) a tensor's elements occupy; lo == hi when empty */
static void extent(PyObject *v, uintptr_t *lo, uintptr_t *hi) {
    tc_meta m;
    tc_tensor_meta(v, &m);
    intptr_t a = 0, b = 0;
    for (int d = 0; d < m.ndim; d++) {
        if (m.sizes[d] == 0) {
            *lo = *hi = 0;
            return;
        }
        intptr_t span = (intptr_t)(m.sizes[d] - 1) * (intptr_t)m.strides[d];
        if (span < 0)
            a += span;
        else
            b += span;
    }
    intptr_t es = m.dtype >= 0 ? (intptr_t)ic_dtype_size((ic_dtype)m.dtype) : 1;
    *lo = (uintptr_t)m.data + (uintptr_t)(a * es);
    *hi = (uintptr_t)m.data + (uintptr_t)(b * es + es);
}

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)*(PyObject *const *)a, y = (uintptr_t)*(PyObject *const *)b;
    return x < y ? -1 : x > y;
}

typedef struct span_t {
    uintptr_t lo, hi;
    PyObject *obj;
    int mut;
} span_t;

static int cmp_span(const void *a, const void *b) {
    const span_t *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (uintptr_t)x->obj < (uintptr_t)y->obj ? -1 : (uintptr_t)x->obj > (uintptr_t)y->obj;
}

int dh_distinct_ok(PyObject *spec, PyObject *const *values) {
    PyObject *args = PyTuple_GET_ITEM(spec, 0), *muts = PyTuple_GET_ITEM(spec, 1),
             *ins = PyTuple_GET_ITEM(spec, 2);
    Py_ssize_t na = PyTuple_GET_SIZE(args), nm = PyTuple_GET_SIZE(muts), ni = PyTuple_GET_SIZE(ins);
    if (na > 1) { /* the arguments are distinct objects: sorted, no two neighbours equal
                     (a model passes every parameter: O(n log n), not n^2 index conversions) */
        PyObject *stack[64], **ps = na <= 64 ? stack : PyMem_Malloc(sizeof(PyObject *) * (size_t)na);
        if (ps == NULL)
            return 0;
        for (Py_ssize_t i = 0; i < na; i++)
            ps[i] = values[PyLong_AsLong(PyTuple_GET_ITEM(args, i))];
        qsort(ps, (size_t)na, sizeof *ps, cmp_ptr);
        int dup = 0;
        for (Py_ssize_t i = 1; i < na && !dup; i++)
            dup = ps[i] == ps[i - 1];
        if (ps != stack)
            PyMem_Free(ps);
        if (dup)
            return 0;
    }
    if (nm == 0)
        return 1;
    /* no mutated input shares memory with another input (read or mutated): the extents of
     * the distinct objects, sorted by start, swept once keeping the furthest end seen of any
     * interval and of a mutated one (an optimizer passes hundreds: O(n log n), where the
     * pairwise test cost 46 ms a step for 200 parameters) */
    span_t stack[96], *sp = nm + ni <= 96 ? stack : PyMem_Malloc(sizeof(span_t) * (size_t)(nm + ni));
    if (sp == NULL)
        return 0;
    Py_ssize_t n = 0;
    int ok = 1;
    for (Py_ssize_t i = 0; i < nm + ni && ok; i++) {
        int mut = i < nm;
        PyObject *v = values[PyLong_AsLong(PyTuple_GET_ITEM(mut ? muts : ins, mut ? i : i - nm))];
        if (v == NULL || !tc_is_tensor(v)) {
            ok = !mut; /* an updated input that is not a tensor: not this specialization */
            continue;
        }
        span_t x = {.obj = v, .mut = mut};
        extent(v, &x.lo, &x.hi);
        if (x.lo != x.hi)
            sp[n++] = x;
    }
    if (ok && n > 1) {
        qsort(sp, (size_t)n, sizeof *sp, cmp_span);
        /* one object listed twice (updated and read) is one interval, updated */
        Py_ssize_t m = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t j = m - 1;
            while (j >= 0 && sp[j].lo == sp[i].lo && sp[j].obj != sp[i].obj)
                j--;
            if (j >= 0 && sp[j].obj == sp[i].obj && sp[j].lo == sp[i].lo)
                sp[j].mut |= sp[i].mut;
            else
                sp[m++] = sp[i];
        }
        uintptr_t end_any = 0, end_mut = 0;
        for (Py_ssize_t i = 0; i < m && ok; i++) {
            if (sp[i].lo < (sp[i].mut ? end_any : end_mut))
                ok = 0; /* a mutated input shares memory with another input */
            if (sp[i].hi > end_any)
                end_any = sp[i].hi;
            if (sp[i].mut && sp[i].hi > end_mut)
                end_mut = sp[i].hi;
        }
    }
    if (sp != stack)
        PyMem_Free(sp);
    return ok;
}

int dh_mark_dynamic(dh_cache *c, PyObject *const *localsplus, int nlocals) {
    const dh_entry *e = c->entries; /* the newest entry's specialization */
    int marked = 0;
    if (e == NULL || e->fallback)
        return 0;
    for (int i = 0; i < e->nguards; i++) {
        const dh_guard *g = &e->guards[i];
        if (g->kind != DH_G_TENSOR || g->src < 0 || g->src >= e->nsources)
            continue;
        const dh_source *s = &e->sources[g->src];
        if (s->kind != DH_S_LOCAL || s->index >= nlocals || s->index >= DH_DYN_LOCALS)
            continue;
        PyObject *v = localsplus[s->index];
        if (v == NULL || !tc_is_tensor(v))
            continue;
        tc_meta m;
        tc_tensor_meta(v, &m);
        if (m.flags || m.ndim != g->meta.ndim || m.dtype != g->meta.dtype)
            continue;
        for (int d = 0; d < m.ndim && d < 32; d++)
            if (m.sizes[d] != g->meta.sizes[d] && m.sizes[d] >= 2 && g->meta.sizes[d] >= 2 &&
                !(c->dynmask[s->index] >> d & 1)) {
                c->dynmask[s->index] |= 1u << d;
                marked = 1;
            }
    }
    return marked;
}

/* A new 0-d int64 tensor of the exact int n (kept by the call's scratch list, borrowed), on
 * the CPU (where < 0) or CUDA device `where`; NULL (no error) where n is not an exact int of
 * int64 range or the tensor can't be made */
PyObject *dh_int_tensor(PyObject *n, Py_ssize_t where) {
    int ovf = 0;
    if (!PyLong_CheckExact(n))
        return NULL;
    long long k = PyLong_AsLongLongAndOverflow(n, &ovf);
    if (ovf || (k == -1 && PyErr_Occurred())) {
        (void)tc_clear_expected(PyExc_Exception);
        return NULL;
    }
    PyObject *c = tc_empty_strided(0, NULL, NULL, IC_I64, TC_DEV_CPU, 0);
    void *p = c ? tc_data_ptr(c) : NULL;
    if (p == NULL) {
        Py_XDECREF(c);
        (void)tc_clear_expected(PyExc_Exception);
        return NULL;
    }
    *(int64_t *)p = (int64_t)k;
    if (where >= 0) { /* on the graph's device: a copy (a small host-to-device transfer) */
        PyObject *d = tc_empty_strided(0, NULL, NULL, IC_I64, TC_DEV_CUDA, (int)where);
        if (d == NULL || tc_copy_(d, c) < 0) {
            Py_XDECREF(d);
            Py_DECREF(c);
            (void)tc_clear_expected(PyExc_Exception);
            return NULL;
        }
        Py_DECREF(c);
        c = d;
    }
    dh_scratch_keep(c); /* alive until the call's output is built */
    return c;
}

static const char *const ix_ops[] = {[DH_IX_ADD] = "+", [DH_IX_FLOORDIV] = "//", [DH_IX_MUL] = "*",
                                     [DH_IX_MOD] = "%", [DH_IX_SUB] = "-"};
static const char *const ix_cmps[] = {[Py_LT] = "<", [Py_LE] = "<=", [Py_EQ] = "==",
                                      [Py_NE] = "!=", [Py_GT] = ">", [Py_GE] = ">="};

static long ix_op(PyObject *x) {
    if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) < 2 || !PyLong_CheckExact(PyTuple_GET_ITEM(x, 0)))
        return LONG_MIN;
    long op = PyLong_AsLong(PyTuple_GET_ITEM(x, 0));
    if (op == DH_IX_SRC && PyTuple_GET_SIZE(x) == 2)
        return op;
    if (PyTuple_GET_SIZE(x) == 3 && ((op >= 0 && op < (long)(sizeof ix_ops / sizeof *ix_ops) && ix_ops[op]) ||
                                     (op >= DH_IX_CMP + Py_LT && op <= DH_IX_CMP + Py_GE)))
        return op;
    return LONG_MIN;
}

PyObject *dh_intexpr_eval(PyObject *x, PyObject *const *values, int depth) {
    if (!PyTuple_Check(x))
        return Py_NewRef(x);
    long op = ix_op(x);
    if (op == LONG_MIN || depth > 64) {
        PyErr_SetString(PyExc_ValueError, "torchc: a malformed int expression guard");
        return NULL;
    }
    if (op == DH_IX_SRC) {
        PyObject *v = values[PyLong_AsSsize_t(PyTuple_GET_ITEM(x, 1))];
        if (v == NULL || !PyLong_CheckExact(v)) {
            PyErr_SetString(PyExc_TypeError, "torchc: an int expression's source is not an int");
            return NULL;
        }
        return Py_NewRef(v);
    }
    PyObject *a = dh_intexpr_eval(PyTuple_GET_ITEM(x, 1), values, depth + 1);
    PyObject *b = a ? dh_intexpr_eval(PyTuple_GET_ITEM(x, 2), values, depth + 1) : NULL, *r = NULL;
    if (b != NULL) {
        switch (op) {
        case DH_IX_ADD: r = PyNumber_Add(a, b); break;
        case DH_IX_SUB: r = PyNumber_Subtract(a, b); break;
        case DH_IX_MUL: r = PyNumber_Multiply(a, b); break;
        case DH_IX_FLOORDIV: r = PyNumber_FloorDivide(a, b); break;
        case DH_IX_MOD: r = PyNumber_Remainder(a, b); break;
        default: r = PyObject_RichCompare(a, b, (int)(op - DH_IX_CMP)); break;
        }
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

PyObject *dh_intexpr_str(PyObject *x, const dh_source *sources, int depth) {
    if (!PyTuple_Check(x))
        return PyObject_Repr(x);
    long op = ix_op(x);
    if (op == LONG_MIN || depth > 64)
        return PyUnicode_FromString("?");
    if (op == DH_IX_SRC)
        return dh_source_str(sources, (int)PyLong_AsLong(PyTuple_GET_ITEM(x, 1)));
    PyObject *a = dh_intexpr_str(PyTuple_GET_ITEM(x, 1), sources, depth + 1);
    PyObject *b = a ? dh_intexpr_str(PyTuple_GET_ITEM(x, 2), sources, depth + 1) : NULL, *r = NULL;
    if (b != NULL) {
        const char *o = op >= DH_IX_CMP ? ix_cmps[op - DH_IX_CMP] : ix_ops[op];
        r = depth ? PyUnicode_FromFormat("(%U %s %U)", a, o, b) : PyUnicode_FromFormat("%U %s %U", a, o, b);
    }
    Py_XDECREF(a);
    Py_XDECREF(b);
    return r;
}

/* key into the code's set of dynamic-int sources: 1 added, 0 there already, -1 an error */
static int mark_key(dh_cache *c, PyObject *key) {
    if (key == NULL)
        return -1;
    if (c->dynints == NULL && (c->dynints = PySet_New(NULL)) == NULL) {
        Py_DECREF(key);
        return -1;
    }
    int had = PySet_Contains(c->dynints, key);
    int rc = had < 0 ? -1 : had ? 0 : PySet_Add(c->dynints, key) < 0 ? -1 : 1;
    Py_DECREF(key);
    return rc;
}

/* A tuple of constants guarded whole (CONSTANT_MATCH t == (1, 2)) that failed on a tuple of
 * the same length whose items differ only where both are ints: its changed items' sources,
 * L['t'][i], are marked, and L['t'][] for the tuple (variables.c then wraps that tuple item by
 * item, those items as dynamic ints). Returns as dh_mark_dynamic_int. */
static int mark_dynamic_tuple_items(dh_cache *c, const dh_entry *e, const dh_guard *g, PyObject *v) {
    Py_ssize_t n = PyTuple_GET_SIZE(g->obj), changed[64], nch = 0;
    if (!PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) != n)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(g->obj, i), *b = PyTuple_GET_ITEM(v, i);
        if (Py_TYPE(a) != Py_TYPE(b))
            return 0;
        int eq = PyObject_RichCompareBool(a, b, Py_EQ);
        if (eq < 0)
            return -1;
        if (eq)
            continue;
        if (!PyLong_CheckExact(a) || nch == 64)
            return 0; /* another item changed: a new entry, not a dynamic one */
        changed[nch++] = i;
    }
    if (nch == 0)
        return 0;
    PyObject *base = dh_source_str(e->sources, g->src);
    if (base == NULL)
        return -1;
    int rc = mark_key(c, PyUnicode_FromFormat("%U[]", base));
    for (Py_ssize_t k = 0; k < nch && rc >= 0; k++) {
        int r = mark_key(c, PyUnicode_FromFormat("%U[%zd]", base, changed[k]));
        rc = r < 0 ? -1 : rc | r;
    }
    Py_DECREF(base);
    return rc;
}

int dh_mark_dynamic_int(dh_cache *c, const dh_entry *e, const dh_guard *g, PyObject *v) {
    if (g->kind == DH_G_CONST && g->src >= 0 && g->src < e->nsources && g->obj != NULL &&
        PyTuple_CheckExact(g->obj) && v != NULL)
        return mark_dynamic_tuple_items(c, e, g, v);
    if (g->kind != DH_G_CONST || g->src < 0 || g->src >= e->nsources || g->obj == NULL ||
        !PyLong_CheckExact(g->obj) || v == NULL || !PyLong_CheckExact(v))
        return 0;
    int eq = PyObject_RichCompareBool(g->obj, v, Py_EQ);
    if (eq != 0)
        return eq < 0 ? -1 : 0;
    return mark_key(c, dh_source_str(e->sources, g->src));
}

int dh_guards_check(const dh_entry *e, PyObject *const *localsplus, PyObject *globals,
                    PyObject *builtins, PyObject *func, PyObject **values, void **data_ptrs) {
    int64_t symvals[IC_MAX_SYMS];
    return dh_guards_check_sym(e, localsplus, globals, builtins, func, values, data_ptrs, symvals);
}

/* Full getattrs (ATTR index 2: a class with its own __getattribute__, e.g. transformers'
 * configs) asked of the same object for the same name more than once in one check (BERT-base:
 * ~720 a call, the 12 layers reading one config) run once: the later sources take the first
 * one's value. Keyed by the base object (identity, at check time) and the name object. The
 * guards already take such a getattr to give one answer per check (the compiled code never
 * re-runs it), so this adds no assumption. Values are kept alive by the check's scratch list. */
typedef struct { PyObject *base, *name, *value; uint32_t gen; } full_memo;
#define FULL_MEMO 512
static _Thread_local full_memo fmemo[FULL_MEMO];
static _Thread_local uint32_t fmemo_gen;

static PyObject *full_getattr_memo(const dh_source *s, PyObject *const *values, PyObject *const *localsplus,
                                   PyObject *globals, PyObject *builtins, PyObject *func, int *nfull) {
    PyObject *base = values[s->base];
    uintptr_t h = ((uintptr_t)base >> 4) * 0x9E3779B97F4A7C15ull ^ ((uintptr_t)s->name >> 4) * 0xC2B2AE3D27D4EB4Full;
    for (uint32_t k = 0; base != NULL && k < 8; k++) {
        full_memo *m = &fmemo[(h + k) & (FULL_MEMO - 1)];
        if (m->gen != fmemo_gen) {
            PyObject *v = dh_source_resolve((dh_source *)s, values, localsplus, globals, builtins, func);
            if (v != NULL && ++*nfull < FULL_MEMO / 2)
                *m = (full_memo){base, s->name, v, fmemo_gen};
            return v;
        }
        if (m->base == base && m->name == s->name)
            return m->value;
    }
    return dh_source_resolve((dh_source *)s, values, localsplus, globals, builtins, func);
}

/* DH_G_KEY_ORDER: dict d's keys, in order, are those of the tuple want (identical, or equal
 * and of the same type: 1 == 1.0 == True). The keys the trace accepts (variables.c: simple
 * constants, objects compared by identity) compare without running Python code. */
static int key_is(PyObject *k, PyObject *w) {
    if (k == w)
        return 1;
    int eq = Py_TYPE(k) == Py_TYPE(w) ? PyObject_RichCompareBool(k, w, Py_EQ) : 0;
    if (eq < 0)
        (void)tc_clear_expected(PyExc_Exception);
    return eq == 1;
}

static int dict_keys_are(PyObject *d, PyObject *want) {
    Py_ssize_t n = PyTuple_GET_SIZE(want), pos = 0, i = 0;
    if (!PyDict_Check(d) || PyDict_GET_SIZE(d) != n)
        return 0;
    PyObject *k, *v;
    if (PyDict_CheckExact(d)) {
        while (i < n && PyDict_Next(d, &pos, &k, &v))
            if (!key_is(k, PyTuple_GET_ITEM(want, i++)))
                return 0;
        return i == n;
    }
    /* a subclass whose own order may differ from its storage's (OrderedDict.move_to_end) */
    PyObject *it = PyObject_GetIter(d);
    if (it == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    int ok = 1;
    while (ok && (k = PyIter_Next(it)) != NULL) {
        ok = i < n && key_is(k, PyTuple_GET_ITEM(want, i));
        i++;
        Py_DECREF(k);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    return ok && i == n;
}

/* values[] borrows most of its objects from containers (a globals or instance dict, a list,
 * a class, a cell) that Python code can change: a custom __getattribute__ a later source runs,
 * a guard's __len__ or predicate, a finalizer. Such code may drop the object a resolved slot
 * points to (rebind the global, replace the list item) while the guards and the kernels still
 * read it (a use-after-free; eager had read the old object before that code ran, so it computes
 * with the old one). Before Python runs, the slots resolved so far take references of their
 * own in the check's scratch list; the kinds already kept there, a local (the frame's) and a
 * constant (the entry's) are skipped. */
/* the last check that passed on this thread, and how many of its resolution steps it kept:
 * dh_guard_values_keep adds the rest only (another check in between: all of them) */
static _Thread_local const dh_entry *kept_entry;
static _Thread_local int kept_steps;

static int source_borrows(const dh_source *s) {
    switch (s->kind) {
    case DH_S_LOCAL:
    case DH_S_CONST:
    case DH_S_NEW:
    case DH_S_NEXT:
    case DH_S_DEREF:
    case DH_S_CTXGET:
    case DH_S_INTT:
        return 0;
    case DH_S_ATTR:
        return s->index != 2;
    default:
        return 1;
    }
}

/* resolution steps [from, to) (indices into e->live, or sources) keep their values */
static void keep_resolved(const dh_entry *e, PyObject *const *values, int from, int to) {
    for (int j = from; j < to; j++) {
        int i = e->live ? e->live[j] : j;
        if (values[i] != NULL && source_borrows(&e->sources[i]))
            dh_scratch_keep(Py_NewRef(values[i]));
    }
}

/* resolving s runs Python code (a user getattr, a constructor, an iterator's __reduce__ or
 * __getitem__, a module's __getattr__) */
static int source_runs_python(const dh_source *s, PyObject *const *values) {
    switch (s->kind) {
    case DH_S_NEW:
    case DH_S_NEXT:
        return 1;
    case DH_S_ATTR: {
        if (s->index == 2)
            return 1;
        PyObject *base = values[s->base];
        if (s->index != 0 || base == NULL || !PyModule_Check(base))
            return 0;
        /* a module attribute: Python only when it is not in the module's dict; the last
         * check's answer holds while that dict is unchanged */
        PyObject **dp = _PyObject_GetDictPtr(base);
        return !(dp != NULL && *dp != NULL && s->ac.where == 3 && s->ac.dict == *dp && s->ac.ver[0] == dict_tag(*dp));
    }
    default:
        return 0;
    }
}

/* checking g may run Python code: a predicate, hasattr, len() or the keys of an object that is
 * not a builtin container */
static int guard_runs_python(const dh_guard *g, PyObject *v) {
    switch (g->kind) {
    case DH_G_CALLEQ:
    case DH_G_CALL:
    case DH_G_HASATTR:
    case DH_G_ITERLEN:
        return 1;
    case DH_G_LEN:
    case DH_G_KEY_ORDER:
        return v != NULL && !PyList_CheckExact(v) && !PyTuple_CheckExact(v) && !PyDict_CheckExact(v);
    default:
        return 0;
    }
}

void dh_guard_values_keep(const dh_entry *e, PyObject *const *values) {
    int nres = e->live ? e->nlive : e->nsources;
    keep_resolved(e, values, kept_entry == e ? kept_steps : 0, nres);
    kept_entry = e;
    kept_steps = nres;
}

static int guards_check_sym(const dh_entry *e, PyObject *const *localsplus, PyObject *globals,
                        PyObject *builtins, PyObject *func, PyObject **values, void **data_ptrs,
                        int64_t *symvals) {
    for (int k = 0; k < IC_MAX_SYMS; k++)
        symvals[k] = 0;
    int nfull = 0;
    if (++fmemo_gen == 0) { /* wrapped: no stale entry may look current */
        memset(fmemo, 0, sizeof fmemo);
        fmemo_gen = 1;
    }
    int nres = e->live ? e->nlive : e->nsources;
    int kept = 0; /* resolution steps before this one hold references of their own */
    for (int j = 0; j < nres; j++) {
        int i = e->live ? e->live[j] : j;
        const dh_source *s = &e->sources[i];
        if (source_runs_python(s, values)) {
            keep_resolved(e, values, kept, j);
            kept = j;
        }
        values[i] = s->kind == DH_S_ATTR && s->index == 2
                        ? full_getattr_memo(s, values, localsplus, globals, builtins, func, &nfull)
                        : dh_source_resolve(&e->sources[i], values, localsplus, globals, builtins, func);
        data_ptrs[i] = NULL;
    }
    for (int i = 0; i < e->nguards; i++) {
        const dh_guard *g = &e->guards[i];
        PyObject *v = g->src < 0 ? NULL : values[g->src];
        if (kept < nres && guard_runs_python(g, v)) {
            keep_resolved(e, values, kept, nres);
            kept = nres;
        }
        switch (g->kind) {
        case DH_G_TENSOR:
            if (v == NULL || !tensor_matches(v, g, &data_ptrs[g->src], symvals))
                return 0;
            break;
        case DH_G_ID: {
            PyObject *want = g->weak ? PyWeakref_GetObject(g->obj) : g->obj;
            if (v == NULL || v != want)
                return 0;
            break;
        }
        case DH_G_CONST:
            if (v == NULL || !const_equal(v, g->obj))
                return 0;
            break;
        case DH_G_TYPE:
            if (v == NULL || (PyObject *)Py_TYPE(v) != g->obj)
                return 0;
            break;
        case DH_G_LEN:
            if (v == NULL || PyObject_Length(v) != g->value) {
                (void)tc_clear_expected(PyExc_Exception);
                return 0;
            }
            break;
        case DH_G_ALIAS:
            if (v == NULL || v != values[g->value])
                return 0;
            break;
        case DH_G_DISTINCT:
            if (!dh_distinct_ok(g->obj, values))
                return 0;
            break;
        case DH_G_GRAD_MODE:
            if (tc_grad_enabled() != g->value)
                return 0;
            break;
        case DH_G_DEFAULT_DTYPE:
            if (tc_default_dtype() != g->value)
                return 0;
            break;
        case DH_G_AUTOCAST:
            if (tc_autocast_state() != g->value)
                return 0;
            break;
        case DH_G_TFM_STACK:
            if (dh_tfm_state(NULL) != g->value)
                return 0;
            break;
        case DH_G_ITERLEN: {
            Py_ssize_t left = v ? dh_iter_left(v) : -1;
            if (left < 0)
                return 0;
            if (g->value >= 0 ? left != g->value : left < -(Py_ssize_t)g->value)
                return 0;
            break;
        }
        case DH_G_SAMEOBJ: {
            PyObject *srcs = PyTuple_GET_ITEM(g->obj, 0), *pat = PyTuple_GET_ITEM(g->obj, 1);
            Py_ssize_t n = PyTuple_GET_SIZE(srcs);
            for (Py_ssize_t a = 0; a < n; a++) {
                PyObject *va = values[PyLong_AsLong(PyTuple_GET_ITEM(srcs, a))];
                Py_ssize_t first = 0;
                while (values[PyLong_AsLong(PyTuple_GET_ITEM(srcs, first))] != va)
                    first++;
                if (first != PyLong_AsSsize_t(PyTuple_GET_ITEM(pat, a)))
                    return 0;
            }
            break;
        }
        case DH_G_KEY: {
            if (v != NULL && !PyDict_Check(v) && !PyType_Check(v)) {
                /* an object: the key in its instance __dict__ (none: absent) */
                PyObject **dp = _PyObject_GetDictPtr(v);
                v = dp != NULL && *dp != NULL ? *dp : NULL;
                if (v == NULL && g->value == 0)
                    break;
            }
            int has = v != NULL && PyDict_Check(v) ? PyDict_Contains(v, g->obj) : -1;
            if (has < 0)
                (void)tc_clear_expected(PyExc_Exception);
            if (has != g->value)
                return 0;
            break;
        }
        case DH_G_CALLEQ: {
            PyObject *want = PyTuple_GET_ITEM(g->obj, 2);
            PyObject *r = PyObject_Call(PyTuple_GET_ITEM(g->obj, 0), PyTuple_GET_ITEM(g->obj, 1), NULL);
            int eq = r != NULL && Py_TYPE(r) == Py_TYPE(want) ? PyObject_RichCompareBool(r, want, Py_EQ) : 0;
            Py_XDECREF(r);
            if (eq != 1) {
                (void)tc_clear_expected(PyExc_Exception);
                return 0;
            }
            break;
        }
        case DH_G_KEY_ORDER:
            /* an exact dict unchanged since the last pass (its version tag: a fresh one on every
             * insertion, deletion or value replaced) has the same keys: no walk over them. Not
             * for subclasses (OrderedDict.move_to_end reorders without a change of the tag) */
            if (v != NULL && PyDict_CheckExact(v) && g->tag != 0 && dict_tag(v) == g->tag)
                break;
            if (v == NULL || !dict_keys_are(v, g->obj))
                return 0;
            if (PyDict_CheckExact(v))
                ((dh_guard *)g)->tag = dict_tag(v);
            break;
        case DH_G_HASATTR: {
            PyObject *r = v != NULL ? PyObject_GetAttr(v, g->obj) : NULL;
            Py_XDECREF(r);
            if (r == NULL)
                (void)tc_clear_expected(PyExc_Exception);
            if (v == NULL || (r != NULL) != g->value)
                return 0;
            break;
        }
        case DH_G_INTEXPR: {
            PyObject *r = dh_intexpr_eval(g->obj, values, 0);
            int truth = r ? PyObject_IsTrue(r) : -1;
            Py_XDECREF(r);
            if (truth < 0)
                (void)tc_clear_expected(PyExc_Exception);
            if (truth != g->value)
                return 0;
            break;
        }
        case DH_G_CALL: {
            PyObject *r = PyObject_CallNoArgs(g->obj);
            int truth = r ? PyObject_IsTrue(r) : -1;
            Py_XDECREF(r);
            if (truth < 0)
                (void)tc_clear_expected(PyExc_Exception);
            /* torchc's own capture of a call traced as not capturing: the same path */
            if (truth != g->value && !(dh_tl_cg_capture && g->value == 0 && truth == 1))
                return 0;
            break;
        }
        }
    }
    kept_entry = e;
    kept_steps = kept;
    return 1;
}

/* 1 pass, 0 fail, -1 error set: a guard that could not be evaluated for an expected reason
 * fails (its exception cleared at the spot), while MemoryError, Ctrl-C and the like stay set
 * and are reported as -1 whatever the guard's answer (tc_clear_expected, csrc/pyerr.h) */
int dh_guards_check_sym(const dh_entry *e, PyObject *const *localsplus, PyObject *globals,
                        PyObject *builtins, PyObject *func, PyObject **values, void **data_ptrs,
                        int64_t *symvals) {
    int r = guards_check_sym(e, localsplus, globals, builtins, func, values, data_ptrs, symvals);
    return r >= 0 && PyErr_Occurred() ? -1 : r;
}

PyObject *dh_source_str(const dh_source *sources, int i) {
    const dh_source *s = &sources[i];
    PyObject *base = NULL, *r = NULL;
    switch (s->kind) {
    case DH_S_INTT:
        base = dh_source_str(sources, s->base);
        r = base ? PyUnicode_FromFormat("tensor(%U)", base) : NULL;
        break;
    case DH_S_LOCAL:
        return PyUnicode_FromFormat("L[%zd]", s->index);
    case DH_S_GLOBAL:
    case DH_S_CLOSURE:
    case DH_S_CELL:
        if (s->base >= 0) {
            base = dh_source_str(sources, s->base);
            r = base == NULL ? NULL
                : s->kind == DH_S_GLOBAL ? PyUnicode_FromFormat("%U.__globals__[%R]", base, s->name)
                : s->kind == DH_S_CELL   ? PyUnicode_FromFormat("%U.__closure__[%zd] (the cell)", base, s->index)
                                         : PyUnicode_FromFormat("%U.__closure__[%zd]", base, s->index);
            break;
        }
        if (s->kind == DH_S_GLOBAL)
            return PyUnicode_FromFormat("G[%R]", s->name);
        return PyUnicode_FromFormat(s->kind == DH_S_CELL ? "closure cell[%zd]" : "closure[%zd]", s->index);
    case DH_S_CTXGET:
        base = dh_source_str(sources, s->base);
        r = base == NULL ? NULL : PyUnicode_FromFormat("%U.get()", base);
        break;
    case DH_S_DEREF:
        base = dh_source_str(sources, s->base);
        r = base == NULL ? NULL : PyUnicode_FromFormat("%U()", base);
        break;
    case DH_S_CONST:
        if (tc_is_tensor(s->name)) /* a tensor built from constants (fold.c): not its repr (Python) */
            return PyUnicode_FromString("const(a tensor built from constants)");
        return PyUnicode_FromFormat("const(%R)", s->name);
    case DH_S_NEW:
        return PyUnicode_FromFormat("new %R(sources %R)", PyTuple_GET_ITEM(s->name, 0),
                                    PyTuple_GET_ITEM(s->name, 2));
    case DH_S_NEXT:
        base = dh_source_str(sources, s->base);
        r = base ? PyUnicode_FromFormat("%U.next[%zd]", base, s->index) : NULL;
        break;
    case DH_S_ATTR:
        base = dh_source_str(sources, s->base);
        r = base ? PyUnicode_FromFormat("%U.%U", base, s->name) : NULL;
        break;
    case DH_S_ITEM:
        base = dh_source_str(sources, s->base);
        r = base == NULL ? NULL
            : s->name ? PyUnicode_FromFormat("%U[%R]", base, s->name)
                      : PyUnicode_FromFormat("%U[%zd]", base, s->index);
        break;
    }
    Py_XDECREF(base);
    return r;
}

static PyObject *source_str(const dh_entry *e, int i) { return dh_source_str(e->sources, i); }

/* guard i of e as text (new ref; NULL with an exception set): one guard only, so a recompile's
 * reason (eval_frame.c failed_guard) costs the failing guard's text, not the whole list's
 * (a recursion's entry holds hundreds of guards on sources nested as deep as it inlined) */
PyObject *dh_guard_describe(const dh_entry *e, int i) {
    PyObject *src = NULL, *item = NULL;
    {
        const dh_guard *g = &e->guards[i];
        if (g->src >= 0) {
            src = source_str(e, g->src);
            if (src == NULL)
                return NULL;
        }
        switch (g->kind) {
        case DH_G_TENSOR: {
            char shape[256] = "", *p = shape;
            for (int d = 0; d < g->meta.ndim && p < shape + 200; d++) {
                if (g->dyn && g->sym[d] >= 0)
                    p += snprintf(p, 24, d ? ", s%d" : "s%d", g->sym[d]);
                else
                    p += snprintf(p, 24, d ? ", %lld" : "%lld", (long long)g->meta.sizes[d]);
            }
            char strides[256] = "";
            p = strides;
            if (g->dyn)
                snprintf(strides, sizeof strides, "contiguous");
            else
                for (int d = 0; d < g->meta.ndim && p < strides + 200; d++)
                    p += snprintf(p, 24, d ? ", %lld" : "%lld", (long long)g->meta.strides[d]);
            item = PyUnicode_FromFormat(
                "TENSOR_MATCH %U: dtype=%s device=%s:%d shape=(%s) stride=(%s) requires_grad=%d",
                src, ic_dtype_name((ic_dtype)g->meta.dtype),
                g->meta.device_type == TC_DEV_CUDA ? "cuda" : "cpu", g->meta.device_index, shape,
                strides, g->meta.requires_grad);
            break;
        }
        case DH_G_ID:
            item = PyUnicode_FromFormat("ID_MATCH %U", src);
            break;
        case DH_G_CONST:
            item = PyUnicode_FromFormat("CONSTANT_MATCH %U == %R", src, g->obj);
            break;
        case DH_G_TYPE:
            item = PyUnicode_FromFormat("TYPE_MATCH %U: %s", src, ((PyTypeObject *)g->obj)->tp_name);
            break;
        case DH_G_LEN:
            item = PyUnicode_FromFormat("LENGTH_CHECK len(%U) == %d", src, g->value);
            break;
        case DH_G_ALIAS:
            item = PyUnicode_FromFormat("ALIAS %U is source %d", src, g->value);
            break;
        case DH_G_DISTINCT:
            item = PyUnicode_FromFormat("NO_ALIASING arguments %R, mutated %R vs inputs %R",
                                        PyTuple_GET_ITEM(g->obj, 0), PyTuple_GET_ITEM(g->obj, 1),
                                        PyTuple_GET_ITEM(g->obj, 2));
            break;
        case DH_G_GRAD_MODE:
            item = PyUnicode_FromFormat("GLOBAL_STATE grad_mode=%d", g->value);
            break;
        case DH_G_DEFAULT_DTYPE:
            item = PyUnicode_FromFormat("GLOBAL_STATE default_dtype=%s", ic_dtype_name((ic_dtype)g->value));
            break;
        case DH_G_TFM_STACK:
            item = PyUnicode_FromFormat("GLOBAL_STATE torch_function_mode_stack=%d", g->value);
            break;
        case DH_G_ITERLEN:
            item = PyUnicode_FromFormat("ITER_LEFT %U %s %d", src, g->value >= 0 ? "==" : ">=",
                                        g->value >= 0 ? g->value : -g->value);
            break;
        case DH_G_AUTOCAST: {
            int v = g->value, cd = (v >> 1 & 127) - 1, gd = (v >> 9 & 127) - 1;
            item = PyUnicode_FromFormat("GLOBAL_STATE autocast cpu=%s cuda=%s",
                                        v & 1 ? ic_dtype_name((ic_dtype)cd) : "off",
                                        v >> 8 & 1 ? ic_dtype_name((ic_dtype)gd) : "off");
            break;
        }
        case DH_G_SAMEOBJ:
            item = PyUnicode_FromFormat("SAME_OBJECTS sources %R as %R", PyTuple_GET_ITEM(g->obj, 0),
                                        PyTuple_GET_ITEM(g->obj, 1));
            break;
        case DH_G_KEY:
            item = PyUnicode_FromFormat("DICT_KEY %R %s %U", g->obj, g->value ? "in" : "not in", src);
            break;
        case DH_G_CALLEQ:
            item = PyUnicode_FromFormat("GLOBAL_STATE %R%R == %R", PyTuple_GET_ITEM(g->obj, 0),
                                        PyTuple_GET_ITEM(g->obj, 1), PyTuple_GET_ITEM(g->obj, 2));
            break;
        case DH_G_CALL:
            item = PyUnicode_FromFormat("GLOBAL_STATE %S() == %d", g->obj, g->value);
            break;
        case DH_G_HASATTR:
            item = PyUnicode_FromFormat("HASATTR hasattr(%U, %R) == %d", src, g->obj, g->value);
            break;
        case DH_G_KEY_ORDER:
            item = PyUnicode_FromFormat("DICT_KEYS_ORDER tuple(%U) == %R", src, g->obj);
            break;
        case DH_G_INTEXPR: {
            PyObject *x = dh_intexpr_str(g->obj, e->sources, 0);
            item = x ? PyUnicode_FromFormat("INT_EXPR bool(%U) == %s", x, g->value ? "True" : "False") : NULL;
            Py_XDECREF(x);
            break;
        }
        }
        Py_XDECREF(src);
    }
    return item;
}

PyObject *dh_guards_describe(const dh_entry *e) {
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < e->nguards; i++) {
        PyObject *item = dh_guard_describe(e, i);
        if (item == NULL || PyList_Append(list, item) < 0)
            Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

/* ---- global state ------------------------------------------------------------------ */

_Thread_local int dh_tl_autocast;
_Thread_local int dh_tl_modtype;

static PyObject *nn_module_cls; /* torch.nn.Module, kept for the process */

static int is_nn_module(PyObject *o) {
    if (nn_module_cls == NULL) {
        PyObject *nn = PyImport_ImportModule("torch.nn");
        nn_module_cls = nn ? PyObject_GetAttrString(nn, "Module") : NULL;
        Py_XDECREF(nn);
        if (nn_module_cls == NULL) {
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            return 0;
        }
    }
    return PyObject_TypeCheck(o, (PyTypeObject *)nn_module_cls);
}

/* The object a guard's source names in the frame about to run, read without running Python:
 * a local, an item of a tuple/list/dict (the *args / **kwargs of a wrapper), an item still to
 * come of an iterator (a resume function's loop iterator, obj_iter.c), an instance attribute
 * of a module (module_getattr_cached's rule). NULL (no error set) where it can't be read so.
 * New reference. */
static PyObject *peek_source(const dh_entry *e, int src, PyObject *const *localsplus, int nlocals,
                             int depth) {
    if (src < 0 || src >= e->nsources || depth > 8)
        return NULL;
    const dh_source *s = &e->sources[src];
    if (s->kind == DH_S_LOCAL)
        return s->index < nlocals ? Py_XNewRef(localsplus[s->index]) : NULL;
    if (s->kind != DH_S_ITEM && s->kind != DH_S_NEXT && !(s->kind == DH_S_ATTR && s->index == 0))
        return NULL;
    PyObject *base = peek_source(e, s->base, localsplus, nlocals, depth + 1), *v = NULL;
    if (base == NULL)
        return NULL;
    if (s->kind == DH_S_NEXT) {
        v = dh_iter_peek(base, s->index);
    } else if (s->kind == DH_S_ATTR) {
        v = is_nn_module(base) ? dh_module_getattr(base, s->name) : NULL;
    } else if (s->name != NULL) {
        v = PyDict_CheckExact(base) && PyUnicode_CheckExact(s->name) ? Py_XNewRef(PyDict_GetItemWithError(base, s->name)) : NULL;
    } else if (PyTuple_CheckExact(base) && s->index < PyTuple_GET_SIZE(base)) {
        v = Py_NewRef(PyTuple_GET_ITEM(base, s->index));
    } else if (PyList_CheckExact(base) && s->index < PyList_GET_SIZE(base)) {
        v = Py_NewRef(PyList_GET_ITEM(base, s->index));
    }
    Py_DECREF(base);
    if (v == NULL && PyErr_Occurred())
        (void)tc_clear_expected(PyExc_Exception);
    return v;
}

int dh_module_sharing_check(dh_cache *c, PyObject *const *localsplus, int nlocals) {
    if (c->modtype || c->entries == NULL || nlocals < 1)
        return 0;
    /* an entry pinned a module by identity (self, args[0] of a wrapper, the next block of a
     * loop's iterator) where another instance of the same class comes now */
    for (const dh_entry *e = c->entries; e != NULL; e = e->next)
        for (int i = 0; i < e->nguards; i++) {
            const dh_guard *g = &e->guards[i];
            if (g->kind != DH_G_ID || g->src < 0 || g->src >= e->nsources)
                continue;
            PyObject *was = g->weak ? PyWeakref_GetObject(g->obj) : g->obj;
            if (was == NULL || was == Py_None || !is_nn_module(was))
                continue;
            PyObject *cur = peek_source(e, g->src, localsplus, nlocals, 0);
            int other = cur != NULL && cur != was && Py_TYPE(cur) == Py_TYPE(was);
            Py_XDECREF(cur);
            if (other) {
                c->modtype = 1; /* a second instance of the class: share from now on */
                return 1;
            }
        }
    return 0;
}

dh_limits dh_limit = {.max_sources = 1 << 20, .inline_depth = 48, .max_outputs = 1 << 16, .max_dict_items = 8192,
                      .max_trace_steps = 200000, .max_index_inputs = 4096, .rnn_unroll_steps = 1024,
                      .max_unroll = 4096, .max_cat_inputs = 4096};

int dh_global_state(dh_guardkind *kinds, int *values) {
    kinds[0] = DH_G_GRAD_MODE;
    values[0] = tc_grad_enabled();
    kinds[1] = DH_G_DEFAULT_DTYPE;
    values[1] = tc_default_dtype();
    kinds[2] = DH_G_AUTOCAST;
    values[2] = tc_autocast_state();
    kinds[3] = DH_G_TFM_STACK;
    values[3] = dh_tfm_state(NULL);
    return DH_NSTATE;
}

/* DeviceContext's device d -> the state code (1 cpu, 4 + i cuda:i, -1 another), *out the
 * device the trace takes (a new reference; "cuda": cuda:<current device>); *fixed: the code
 * depends on d alone (not on the current CUDA device) */
static int device_code(PyObject *d, PyObject *cur_dev_fn, PyObject **out, int *fixed) {
    *out = NULL;
    *fixed = 1;
    PyObject *ty = PyObject_GetAttrString(d, "type"), *ix = PyObject_GetAttrString(d, "index");
    const char *tys = ty && PyUnicode_Check(ty) ? PyUnicode_AsUTF8(ty) : NULL;
    Py_INCREF(d);
    if (tys && !strcmp(tys, "cuda") && ix == Py_None) {
        /* "cuda": eager's factories use the current device; the trace and the guard take it */
        *fixed = 0;
        PyObject *cur = cur_dev_fn ? PyObject_CallNoArgs(cur_dev_fn) : NULL;
        PyObject *td = cur ? PyObject_GetAttrString(d, "__class__") : NULL;
        PyObject *nd = td ? PyObject_CallFunction(td, "sO", "cuda", cur) : NULL;
        Py_XDECREF(td);
        Py_XSETREF(d, nd);
        Py_XSETREF(ix, cur);
    }
    long i = ix && PyLong_Check(ix) ? PyLong_AsLong(ix) : -1;
    int code = tys == NULL || d == NULL ? -1
               : !strcmp(tys, "cpu") ? 1
               : !strcmp(tys, "cuda") ? (i >= 0 && i < 1024 ? 4 + (int)i : -1)
                                      : -1;
    Py_XDECREF(ty);
    Py_XDECREF(ix);
    if (code > 0)
        *out = d;
    else
        Py_XDECREF(d);
    return code;
}

int dh_tfm_state(PyObject **dev) {
    static PyObject *devctx, *cur_dev_fn, *s_device;
    /* the last device read and its code (torch.device objects are immutable; the memo holds a
     * reference, so the identity cannot be reused by another object) */
    static PyObject *memo_dev;
    static int memo_code;
    if (dev)
        *dev = NULL;
    int n;
    PyObject *mode = tc_torch_function_mode_single(&n); /* borrowed */
    if (n == 0)
        return 0;
    if (mode == NULL)
        return -1;
    if (devctx == NULL) { /* kept for the process */
        PyObject *c = PyImport_ImportModule("torch._C"), *m = PyImport_ImportModule("torch.utils._device");
        /* a builtin of torch._C: no Python frame runs inside the hook */
        cur_dev_fn = c ? PyObject_GetAttrString(c, "_cuda_getDevice") : NULL; /* NULL without CUDA */
        if (cur_dev_fn == NULL)
            (void)tc_clear_expected(PyExc_AttributeError);
        s_device = PyUnicode_InternFromString("device");
        devctx = m && s_device ? PyObject_GetAttrString(m, "DeviceContext") : NULL;
        Py_XDECREF(c);
        Py_XDECREF(m);
        if (devctx == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return -1;
        }
    }
    /* exactly the class: a subclass may define its own __torch_function__ */
    if (Py_TYPE(mode) != (PyTypeObject *)devctx)
        return -1;
    /* its device: an instance attribute (DeviceContext.__init__), read without running code */
    PyObject **dp = _PyObject_GetDictPtr(mode);
    PyObject *d = dp && *dp && PyDict_CheckExact(*dp) ? PyDict_GetItemWithError(*dp, s_device) : NULL;
    if (d != NULL && d == memo_dev && memo_code != 0) {
        if (memo_code > 0 && dev)
            *dev = Py_NewRef(d);
        return memo_code;
    }
    int in_dict = d != NULL;
    if (d != NULL)
        Py_INCREF(d);
    else if (!PyErr_Occurred())
        d = PyObject_GetAttr(mode, s_device); /* not in its dict: a getattr */
    PyObject *out = NULL;
    int fixed = 0, code = d ? device_code(d, cur_dev_fn, &out, &fixed) : -1;
    if (fixed && in_dict) { /* only a device found in the dict is remembered */
        Py_XSETREF(memo_dev, Py_NewRef(d));
        memo_code = code;
    }
    Py_XDECREF(d);
    (void)tc_clear_expected(PyExc_Exception);
    if (code > 0 && dev)
        *dev = out;
    else
        Py_XDECREF(out);
    return code;
}

/* the reason a frame runs eagerly under a TorchFunctionMode stack dh_tfm_state refuses: the
 * modes named, innermost last ("MyMode", "LoggingMode, DeviceContext(meta)") */
void dh_tfm_reason(char *buf, size_t n) {
    char names[160] = "";
    size_t at = 0;
    PyObject *c = PyImport_ImportModule("torch._C");
    PyObject *len_fn = c ? PyObject_GetAttrString(c, "_len_torch_function_stack") : NULL;
    PyObject *at_fn = c ? PyObject_GetAttrString(c, "_get_function_stack_at") : NULL;
    PyObject *ln = len_fn ? PyObject_CallNoArgs(len_fn) : NULL;
    long len = ln ? PyLong_AsLong(ln) : -1;
    for (long i = 0; at_fn != NULL && i < len && at + 40 < sizeof names; i++) {
        PyObject *mode = PyObject_CallFunction(at_fn, "l", i);
        if (mode == NULL)
            break;
        at += (size_t)snprintf(names + at, sizeof names - at, "%s%.60s", i ? ", " : "", Py_TYPE(mode)->tp_name);
        Py_DECREF(mode);
    }
    Py_XDECREF(ln);
    Py_XDECREF(len_fn);
    Py_XDECREF(at_fn);
    Py_XDECREF(c);
    (void)tc_clear_expected(PyExc_Exception);
    snprintf(buf, n,
             "a TorchFunctionMode is active around the call (%s): eager (only a lone torch.device context on "
             "cpu or cuda is captured around a call; modes entered inside the compiled function are traced)",
             at ? names : "?");
}

/* Ops whose dtypes autocast changes (torch's autocast_mode.cpp lists for CPU and CUDA, by the
 * names of the Python callables that reach them): lower precision (matmul family, conv,
 * attention), fp32 (losses, norms, transcendental ops on CUDA, softmax family, reductions
 * with an output dtype) and promote (multi-input ops that take the widest dtype). An op not
 * listed runs in its inputs' dtype under autocast as without it. */
static const char *const autocast_ops[] = {
    /* lower precision */
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "addr", "linear", "conv1d",
    "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
    "chain_matmul", "linalg_multi_dot", "mv", "scaled_dot_product_attention",
    "_native_multi_head_attention", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "_convolution", "convolution", "einsum", "bilinear",
    /* fp32 */
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "native_layer_norm",
    "group_norm", "norm", "nuclear_norm", "frobenius_norm", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy",
    "cross_entropy", "dist", "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d",
    "upsample_nearest2d", "upsample_nearest3d", "upsample_bilinear2d", "upsample_linear1d",
    "upsample_trilinear3d", "upsample_bicubic2d", "interpolate", "grid_sample",
    "grid_sampler", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "polar", "prod",
    "quantile", "nanquantile", "stft", "trace", "view_as_complex", "cholesky", "inverse",
    "pinverse", "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
    "replication_pad2d", "replication_pad3d", "pad", "ctc_loss", "fft_fft", "fft_ifft",
    "fft_rfft", "fft_irfft", "max_unpool2d", "max_unpool3d", "vander",
    /* fp32 when no dtype is given */
    "softmax", "log_softmax", "cumsum", "cumprod", "sum", "linalg_vector_norm",
    "linalg_matrix_norm",
    /* promote */
    "addcdiv", "addcmul", "atan2", "cross", "dot", "vdot", "index_put", "scatter_add",
    "tensordot", "cat", "stack", "concat", "concatenate", "hstack", "vstack", "index_copy",
    "lerp",
    NULL};

static int autocast_listed(const char *name) {
    for (int i = 0; autocast_ops[i]; i++) {
        size_t n = strlen(autocast_ops[i]);
        if (strncmp(name, autocast_ops[i], n) == 0 && (name[n] == 0 || name[n] == '_'))
            return 1; /* exact, or an in-place / dunder form (pow_, matmul__) */
    }
    return 0;
}

int dh_autocast_op_affected(const char *name) {
    if (name == NULL)
        return 1;
    return autocast_listed(name) || (name[0] == '_' && autocast_listed(name + 1)) ||
           (name[0] == '_' && name[1] == '_' && autocast_listed(name + 2));
}

/* mod.name where mod is a module already imported (nothing is imported here: its code would
 * run inside the hook, and code can only hold the object once its module is loaded). New
 * reference, or NULL: not loaded / no such name (cleared), or a MemoryError & co left set. */
PyObject *dh_loaded_attr(const char *mod, const char *name) {
    PyObject *s = PyUnicode_FromString(mod);
    PyObject *m = s ? PyImport_GetModule(s) : NULL;
    Py_XDECREF(s);
    PyObject *r = m ? PyObject_GetAttrString(m, name) : NULL;
    Py_XDECREF(m);
    if (r == NULL)
        (void)tc_clear_expected(PyExc_AttributeError);
    return r;
}

/* torch.compiler.is_compiling and the older names of it: True inside captured code, as
 * under torch.compile (eager calls them and gets False). Looked up only in modules already
 * imported (importing torch._dynamo here cost 2.7 s at the first traced call); while some
 * are missing, looked up again whenever sys.modules has grown */
static const char *const is_compiling_where[][2] = {
    {"torch.compiler", "is_compiling"}, {"torch.compiler", "is_dynamo_compiling"},
    {"torch._dynamo", "is_compiling"}, {"torch._dynamo.external_utils", "is_compiling"},
    {"torch._utils", "is_compiling"}, {"torch._dynamo.utils", "is_compiling"}};
enum { N_IS_COMPILING = sizeof is_compiling_where / sizeof is_compiling_where[0] };
static PyObject *is_compiling_fns[N_IS_COMPILING]; /* kept for the process once found */
static int n_is_compiling_missing = -1;
static Py_ssize_t is_compiling_nmods = -1; /* len(sys.modules) at the last lookup */

int dh_is_compiling_fn(PyObject *f) {
    if (f == NULL)
        return 0;
    PyObject *mods = n_is_compiling_missing != 0 ? PyImport_GetModuleDict() : NULL;
    if (mods != NULL && PyDict_GET_SIZE(mods) != is_compiling_nmods) {
        is_compiling_nmods = PyDict_GET_SIZE(mods);
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        n_is_compiling_missing = 0;
        for (int i = 0; i < N_IS_COMPILING; i++) {
            if (is_compiling_fns[i] == NULL)
                is_compiling_fns[i] = dh_loaded_attr(is_compiling_where[i][0], is_compiling_where[i][1]);
            if (is_compiling_fns[i] == NULL)
                n_is_compiling_missing++;
            (void)tc_clear_expected(PyExc_Exception);
        }
        PyErr_Restore(et, ev, etb);
    }
    for (int i = 0; i < N_IS_COMPILING; i++)
        if (is_compiling_fns[i] == f)
            return 1;
    return 0;
}

/* "fullgraph=False, dynamic=None, mode=default, backend=torchc" for an options key and backend */
static void options_str(char *buf, size_t n, int key, PyObject *backend) {
    static const char *const dyn[] = {"None", "False", "True", "?"};
    const char *be = "torchc";
    PyObject *name = NULL;
    if (backend != NULL) {
        name = PyUnicode_Check(backend) ? Py_NewRef(backend) : PyObject_GetAttrString(backend, "__name__");
        if (name == NULL || !PyUnicode_Check(name)) {
            Py_CLEAR(name);
            (void)tc_clear_expected(PyExc_Exception);
        }
        be = name ? PyUnicode_AsUTF8(name) : "a callable";
        if (be == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            be = "a callable";
        }
    }
    snprintf(buf, n, "fullgraph=%s, dynamic=%s, mode=%s, backend=%s", key & 1 ? "True" : "False",
             dyn[key >> 1 & 3], key & 8 ? "max-autotune" : "default", be);
    Py_XDECREF(name);
}

char *dh_options_mismatch(const dh_entry *e, const dh_config *cfg) {
    char was[256], now[256], *out = malloc(600);
    if (out == NULL)
        return NULL;
    options_str(was, sizeof was, e->cfg_key, e->backend);
    options_str(now, sizeof now, dh_cfg_key(cfg), cfg->backend);
    snprintf(out, 600, "COMPILE_OPTIONS: the cached entries were compiled with %s; this call has %s", was, now);
    return out;
}

/* What differs between guard g and the value v it failed on, as torch's recompile reasons
 * say it ("dtype mismatch. expected f32, actual f64"), for the kinds a user changes between
 * calls: tensor metadata, constants, types, lengths, grad mode. NULL when there is nothing
 * more to say than the guard itself (or out of memory). No Python error is left set. */
char *dh_guard_mismatch(const dh_guard *g, PyObject *v) {
    char buf[300] = "";
    switch (g->kind) {
    case DH_G_TENSOR: {
        const tc_meta *w = &g->meta;
        if (v == NULL || !tc_is_tensor(v)) {
            snprintf(buf, sizeof buf, "expected a tensor, got %s", v ? Py_TYPE(v)->tp_name : "nothing");
            break;
        }
        tc_meta m;
        tc_tensor_meta(v, &m);
        if (m.flags)
            snprintf(buf, sizeof buf, "a tensor kind torchc does not compile (sparse, subclass, ...)");
        else if (m.dtype != w->dtype)
            snprintf(buf, sizeof buf, "dtype mismatch. expected %s, actual %s", ic_dtype_name((ic_dtype)w->dtype),
                     ic_dtype_name((ic_dtype)m.dtype));
        else if (m.device_type != w->device_type || m.device_index != w->device_index)
            snprintf(buf, sizeof buf, "device mismatch. expected %s:%d, actual %s:%d",
                     w->device_type == TC_DEV_CUDA ? "cuda" : "cpu", w->device_index,
                     m.device_type == TC_DEV_CUDA ? "cuda" : "cpu", m.device_index);
        else if (m.requires_grad != w->requires_grad)
            snprintf(buf, sizeof buf, "requires_grad mismatch. expected requires_grad=%d", w->requires_grad);
        else if (m.ndim != w->ndim)
            snprintf(buf, sizeof buf, "rank mismatch. expected %d dims, actual %d", w->ndim, m.ndim);
        else {
            for (int d = 0; d < m.ndim && !buf[0]; d++) {
                if (g->dyn && g->sym[d] >= 0) {
                    if (m.sizes[d] < 2)
                        snprintf(buf, sizeof buf, "size mismatch at index %d. expected a size >= 2 (s%d), "
                                 "actual %lld", d, g->sym[d], (long long)m.sizes[d]);
                } else if (m.sizes[d] != w->sizes[d]) {
                    snprintf(buf, sizeof buf, "size mismatch at index %d. expected %lld, actual %lld", d,
                             (long long)w->sizes[d], (long long)m.sizes[d]);
                }
            }
            for (int d = 0; d < m.ndim && !buf[0] && !g->dyn; d++)
                if (m.strides[d] != w->strides[d] && m.sizes[d] > 1)
                    snprintf(buf, sizeof buf, "stride mismatch at index %d. expected %lld, actual %lld", d,
                             (long long)w->strides[d], (long long)m.strides[d]);
            if (!buf[0] && g->dyn)
                snprintf(buf, sizeof buf, "not contiguous, or two dims of one symbol differ");
        }
        break;
    }
    case DH_G_CONST: {
        PyObject *r = v ? PyObject_Repr(v) : NULL;
        const char *s = r ? PyUnicode_AsUTF8(r) : NULL;
        snprintf(buf, sizeof buf, "actual %.200s", s ? s : "(missing)");
        Py_XDECREF(r);
        break;
    }
    case DH_G_TYPE:
        snprintf(buf, sizeof buf, "actual type %.200s", v ? Py_TYPE(v)->tp_name : "(missing)");
        break;
    case DH_G_LEN: {
        Py_ssize_t n = v ? PyObject_Length(v) : -1;
        snprintf(buf, sizeof buf, "actual len %zd", n);
        break;
    }
    case DH_G_ID:
        snprintf(buf, sizeof buf, "a different object%s", v ? "" : " (missing)");
        break;
    case DH_G_GRAD_MODE:
        snprintf(buf, sizeof buf, "grad mode changed. expected grad_mode=%d, actual %d", g->value,
                 tc_grad_enabled());
        break;
    case DH_G_DEFAULT_DTYPE:
        snprintf(buf, sizeof buf, "actual default_dtype=%s", ic_dtype_name((ic_dtype)tc_default_dtype()));
        break;
    default:
        break;
    }
    (void)tc_clear_expected(PyExc_Exception);
    return buf[0] ? strdup(buf) : NULL;
}

char *dh_reason_join(char *a, char *b) {
    if (a == NULL)
        return b;
    if (b == NULL)
        return a;
    size_t na = strlen(a), nb = strlen(b);
    char *r = realloc(a, na + nb + 2);
    if (r == NULL) {
        free(b);
        return a;
    }
    r[na] = '\n';
    memcpy(r + na + 1, b, nb + 1);
    free(b);
    return r;
}
