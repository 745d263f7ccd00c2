/* records.c — output records made inside a traced frame: transformers' ModelOutput
 * dataclasses (BaseModelOutputWithPast & co, OrderedDict subclasses with __post_init__).
 *
 * Requires: the class is a dataclass deriving from a class named ModelOutput of a
 *           transformers module, keeping ModelOutput's __init__ wrapper, __post_init__,
 *           __setattr__, __setitem__, __getitem__ and the generated dataclass __init__.
 * Keeps:    what eager builds: construction is deferred to the output (or a graph break),
 *           where the class is called with the same field values (DH_O_KWCALL); in between
 *           the trace reads fields, items (d["k"], d[0], to_tuple()), len and truth as
 *           __post_init__ leaves them: the non-None fields, in field order.
 *           A field that was None and is then set (r[k] = v, or r.k = v where the class's
 *           __setattr__ adds the item) joins the dict at its end, as in eager: items[n] (one
 *           var past the fields) holds the names of those fields in the order they joined, a
 *           constant tuple (journalled like the fields); the output is then the class called
 *           with the other fields and those items set after it (record_rebuild).
 * Breaks:   identity: the record is one object per output place (like dicts); writes of
 *           None or of names that are not fields fail the trace (eager runs).
 */
#include "sym.h"

static PyObject *dc_fields_fn;  /* dataclasses.fields */
static PyObject *ordered_dict;  /* collections.OrderedDict */
static PyObject *missing;       /* dataclasses.MISSING */

static int init_once(void) {
    if (dc_fields_fn != NULL)
        return 0;
    PyObject *dc = PyImport_ImportModule("dataclasses");
    PyObject *col = PyImport_ImportModule("collections");
    if (dc != NULL && col != NULL) {
        dc_fields_fn = PyObject_GetAttrString(dc, "fields");
        missing = PyObject_GetAttrString(dc, "MISSING");
        ordered_dict = PyObject_GetAttrString(col, "OrderedDict");
    }
    Py_XDECREF(dc);
    Py_XDECREF(col);
    if (dc_fields_fn == NULL || missing == NULL || ordered_dict == NULL) {
        Py_CLEAR(dc_fields_fn);
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return -1;
    }
    return 0;
}

/* ModelOutput in cls's MRO (a transformers class by that name), or NULL (borrowed) */
static PyObject *model_output_base(PyObject *cls) {
    PyObject *mro = ((PyTypeObject *)cls)->tp_mro;
    for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *b = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (strcmp(b->tp_name, "ModelOutput") != 0)
            continue;
        PyObject *m = PyDict_GetItemString(dh_type_dict(b), "__module__");
        if (m && PyUnicode_Check(m) && PyUnicode_CompareWithASCIIString(m, "transformers.utils.generic") == 0)
            return (PyObject *)b;
    }
    return NULL;
}

/* cls's attribute `name` is the one ModelOutput defines */
static int inherits(PyObject *cls, PyObject *base, const char *name) {
    PyObject *n = PyUnicode_InternFromString(name);
    if (n == NULL)
        return 0;
    PyObject *mine = _PyType_Lookup((PyTypeObject *)cls, n);
    PyObject *theirs = PyDict_GetItemWithError(dh_type_dict((PyTypeObject *)base), n);
    Py_DECREF(n);
    (void)tc_clear_expected(PyExc_Exception);
    return mine != NULL && mine == theirs;
}

int sym_is_record_type(PyObject *cls) {
    if (!PyType_Check(cls) || !(((PyTypeObject *)cls)->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        Py_TYPE(cls)->tp_call != PyType_Type.tp_call || init_once() < 0)
        return 0;
    PyObject *base = model_output_base(cls);
    if (base == NULL || base == cls || PyObject_IsSubclass(cls, ordered_dict) != 1) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0;
    }
    /* to_tuple may be the class's own (CLIPOutput's converts nested outputs): then only
     * what does not read it (fields, string keys) is traced */
    if (!inherits(cls, base, "__post_init__") || !inherits(cls, base, "__setattr__") ||
        !inherits(cls, base, "__setitem__") || !inherits(cls, base, "__getitem__"))
        return 0;
    /* __init__: the dataclass-generated one, or the metaclass's wrapper around it (transformers
     * >= 5.2x renames past_key_values= to cache= there) */
    /* (found through the MRO: a subclass declared with `pass` keeps its base's __init__ and
     * fields) */
    PyObject *iname = PyUnicode_InternFromString("__init__");
    PyObject *init = iname ? _PyType_Lookup((PyTypeObject *)cls, iname) : NULL;
    Py_XDECREF(iname);
    if (init == NULL || !PyFunction_Check(init))
        return 0;
    if (PyUnicode_CompareWithASCIIString(((PyCodeObject *)PyFunction_GET_CODE(init))->co_filename, "<string>") == 0)
        return 1;
    PyObject *w = PyObject_GetAttrString(init, "__wrapped__");
    int ok = w != NULL && PyFunction_Check(w) &&
             PyUnicode_CompareWithASCIIString(((PyCodeObject *)PyFunction_GET_CODE(w))->co_filename,
                                              "<string>") == 0;
    Py_XDECREF(w);
    (void)tc_clear_expected(PyExc_AttributeError);
    return ok;
}

static int is_none_var(const var *v) { return v->kind == V_CONST && v->obj == Py_None; }

#define REC_MAX_FIELDS 64

/* cls(*args, **kw) as a record. 0, or -1 failed. */
int sym_make_record(trace *t, PyObject *cls, var *args, int npos, PyObject *kwnames, var *out) {
    PyObject *fields = PyObject_CallOneArg(dc_fields_fn, cls), *names = NULL;
    if (fields == NULL || !PyTuple_Check(fields)) {
        Py_XDECREF(fields);
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "fields() of %s failed", ((PyTypeObject *)cls)->tp_name);
    }
    Py_ssize_t n = PyTuple_GET_SIZE(fields);
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0, rc = -1, has_cache = 0, first_required = 0;
    var *vals = sym_alloc(t, (int)n + 1); /* vals[n]: the fields that joined later (joined()) */
    unsigned char *set = calloc((size_t)n + 1, 1);
    names = PyTuple_New(n);
    if (vals == NULL || set == NULL || names == NULL)
        goto done;
    if (n == 0 || n > REC_MAX_FIELDS || npos > n) {
        rc = sym_fail(t, "%s: unsupported fields/arguments", ((PyTypeObject *)cls)->tp_name);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyTuple_GET_ITEM(fields, i);
        PyObject *nm = PyObject_GetAttrString(f, "name"), *def = PyObject_GetAttrString(f, "default");
        if (nm == NULL || def == NULL || !PyUnicode_Check(nm)) {
            Py_XDECREF(nm);
            Py_XDECREF(def);
            (void)tc_clear_expected(PyExc_AttributeError);
            rc = sym_fail(t, "a field of %s without a name/default", ((PyTypeObject *)cls)->tp_name);
            goto done;
        }
        PyTuple_SET_ITEM(names, i, nm);
        has_cache |= PyUnicode_CompareWithASCIIString(nm, "cache") == 0;
        int ok = def == Py_None || (i == 0 && def == missing);
        first_required |= i == 0 && def == missing;
        Py_DECREF(def);
        if (!ok) { /* __post_init__ raises */
            rc = sym_fail(t, "%s: a field with a non-None default", ((PyTypeObject *)cls)->tp_name);
            goto done;
        }
        if (sym_const(t, Py_NewRef(Py_None), &vals[i]) < 0)
            goto done;
    }
    for (int i = 0; i < npos; i++) {
        vals[i] = args[i];
        set[i] = 1;
    }
    for (int k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k);
        /* the metaclass's BC rename: past_key_values / cache_params -> cache */
        if (has_cache && (PyUnicode_CompareWithASCIIString(kn, "past_key_values") == 0 ||
                          PyUnicode_CompareWithASCIIString(kn, "cache_params") == 0))
            kn = PyUnicode_FromString("cache");
        else
            Py_INCREF(kn);
        Py_ssize_t i = 0;
        while (i < n && (kn == NULL || PyUnicode_Compare(PyTuple_GET_ITEM(names, i), kn) != 0))
            i++;
        Py_XDECREF(kn);
        if (i == n || set[i]) {
            rc = sym_fail(t, "%s: unexpected or repeated argument (eager will raise)",
                          ((PyTypeObject *)cls)->tp_name);
            goto done;
        }
        vals[i] = args[npos + k];
        set[i] = 1;
    }
    if (!set[0] && first_required) {
        rc = sym_fail(t, "%s: required field missing (eager will raise)", ((PyTypeObject *)cls)->tp_name);
        goto done;
    }
    int others = 0;
    for (Py_ssize_t i = 1; i < n; i++)
        others |= !is_none_var(&vals[i]);
    /* a tuple/list first field whose first item is no (str, value) pair: __post_init__'s
     * iterator path sets it back as the first field (what the plain path does) */
    int seq_kept = vals[0].kind == V_SEQ && vals[0].obj == NULL && vals[0].n >= 1 &&
                   !(vals[0].items[0].kind == V_SEQ && vals[0].items[0].n == 2 &&
                     vals[0].items[0].items[0].kind == V_CONST) &&
                   !(vals[0].items[0].kind == V_CONST && (PyTuple_Check(vals[0].items[0].obj) ||
                                                          PyList_Check(vals[0].items[0].obj)));
    if (vals[0].kind != V_TENSOR && !others && !seq_kept) {
        /* __post_init__'s first-field-iterator path */
        rc = sym_fail(t, "%s with only a non-tensor first field", ((PyTypeObject *)cls)->tp_name);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (vals[i].kind == V_UNSET || vals[i].kind == V_NULL) {
            rc = sym_fail(t, "%s: unsupported field value", ((PyTypeObject *)cls)->tp_name);
            goto done;
        }
    PyObject *spec = sym_keep(t, Py_BuildValue("(OO)", cls, names));
    if (spec == NULL || sym_const(t, PyTuple_New(0), &vals[n]) < 0)
        goto done;
    memset(out, 0, sizeof *out);
    out->kind = V_REC;
    out->src = -1;
    out->obj = spec;
    out->items = vals;
    out->n = (int)n;
    rc = 0;
done:
    Py_XDECREF(fields);
    Py_XDECREF(names);
    free(set);
    return rc;
}

PyObject *sym_record_class(const var *r) { return PyTuple_GET_ITEM(r->obj, 0); }

/* the names of the fields that were None and were set after the record was made, in the
 * order they joined the dict (borrowed: a constant tuple) */
static PyObject *joined(const var *r) { return r->items[r->n].obj; }

/* field i joined later */
static int has_joined(const var *r, int i) {
    PyObject *j = joined(r), *name = PyTuple_GET_ITEM(PyTuple_GET_ITEM(r->obj, 1), i);
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(j); k++)
        if (PyTuple_GET_ITEM(j, k) == name)
            return 1;
    return 0;
}

/* the dict's order of the fields: order[0..*n) (room for REC_MAX_FIELDS) the indexes of the
 * non-None fields, those set at construction in field order, then those that joined later
 * in the order they joined. 1 when that is not field order. */
static int item_order(const var *r, int *order, int *n) {
    int k = 0, moved = 0;
    for (int i = 0; i < r->n; i++)
        if (!is_none_var(&r->items[i]) && !has_joined(r, i))
            order[k++] = i;
    PyObject *j = joined(r), *names = PyTuple_GET_ITEM(r->obj, 1);
    for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(j); q++)
        for (int i = 0; i < r->n; i++)
            if (PyTuple_GET_ITEM(names, i) == PyTuple_GET_ITEM(j, q)) {
                moved |= k > 0 && order[k - 1] > i;
                order[k++] = i;
            }
    *n = k;
    return moved;
}

/* record_rebuild(**fields), bound to (cls, joined): cls(**fields but the joined ones), then
 * r[name] = fields[name] for each joined name in order (the class's __setitem__, as eager
 * set them): the record as the trace left it, its dict in eager's order */
static PyObject *record_rebuild(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *cls = PyTuple_GET_ITEM(self, 0), *j = PyTuple_GET_ITEM(self, 1);
    if (PyTuple_GET_SIZE(args) != 0 || kw == NULL) {
        PyErr_SetString(PyExc_TypeError, "record_rebuild(**fields)");
        return NULL;
    }
    PyObject *first = PyDict_Copy(kw), *r = NULL;
    for (Py_ssize_t k = 0; first != NULL && k < PyTuple_GET_SIZE(j); k++)
        if (PyDict_DelItem(first, PyTuple_GET_ITEM(j, k)) < 0)
            Py_CLEAR(first);
    PyObject *empty = first ? PyTuple_New(0) : NULL;
    r = empty ? PyObject_Call(cls, empty, first) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(first);
    for (Py_ssize_t k = 0; r != NULL && k < PyTuple_GET_SIZE(j); k++) {
        PyObject *v = PyDict_GetItemWithError(kw, PyTuple_GET_ITEM(j, k));
        if (v == NULL || PyObject_SetItem(r, PyTuple_GET_ITEM(j, k), v) < 0) {
            if (v == NULL && !PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(j, k));
            Py_CLEAR(r);
        }
    }
    return r;
}

static PyMethodDef record_rebuild_def = {"record_rebuild", (PyCFunction)(void (*)(void))record_rebuild,
                                         METH_VARARGS | METH_KEYWORDS, NULL};

/* what the output calls with the fields as keywords: the class, or (fields joined out of
 * field order) record_rebuild bound to the class and the joined names. New reference. */
PyObject *sym_record_maker(const var *r) {
    int order[REC_MAX_FIELDS], n;
    if (!item_order(r, order, &n))
        return Py_NewRef(sym_record_class(r));
    PyObject *self = Py_BuildValue("(OO)", sym_record_class(r), joined(r));
    PyObject *fn = self ? PyCFunction_New(&record_rebuild_def, self) : NULL;
    Py_XDECREF(self);
    return fn;
}

static int own_to_tuple(trace *t, const var *r);

/* the record's items as its dict holds them: the non-None fields, in field order as
 * __post_init__ left them, then those set later in the order they joined (item_order) */
int sym_record_items(trace *t, const var *r, var **items, int *n) {
    var *it = sym_alloc(t, r->n);
    int order[REC_MAX_FIELDS];
    if (it == NULL)
        return -1;
    (void)item_order(r, order, n);
    for (int k = 0; k < *n; k++)
        it[k] = r->items[order[k]];
    *items = it;
    return 0;
}

/* the record read as a mapping (**r, {**r}, dict(r)): a dict of its non-None fields, in field
 * order, as __post_init__ left the OrderedDict; the class must keep OrderedDict's keys() and
 * __iter__ (what the merge reads through) and ModelOutput's __getitem__ (sym_is_record_type) */
int sym_record_as_dict(trace *t, const var *r, var *out) {
    PyObject *cls = sym_record_class(r);
    static const char *const kept[] = {"keys", "__iter__"};
    for (int j = 0; j < 2; j++) {
        PyObject *nm = PyUnicode_InternFromString(kept[j]);
        if (nm == NULL)
            return -1;
        PyObject *mine = _PyType_Lookup((PyTypeObject *)cls, nm);
        PyObject *od = _PyType_Lookup((PyTypeObject *)ordered_dict, nm);
        Py_DECREF(nm);
        if (mine == NULL || mine != od)
            return sym_fail(t, "%s read as a mapping: its own %s", ((PyTypeObject *)cls)->tp_name, kept[j]);
    }
    var *items;
    int n, order[REC_MAX_FIELDS];
    if (sym_record_items(t, r, &items, &n) < 0)
        return -1;
    (void)item_order(r, order, &n);
    PyObject *names = PyTuple_GET_ITEM(r->obj, 1), *keys = PyTuple_New(n);
    if (keys == NULL)
        return -1;
    for (int k = 0; k < n; k++)
        PyTuple_SET_ITEM(keys, k, Py_NewRef(PyTuple_GET_ITEM(names, order[k])));
    *out = sym_var(V_DICT);
    out->n = n;
    out->items = items;
    out->obj = sym_keep(t, keys);
    return out->obj == NULL ? -1 : 0;
}

/* r.keys()/values()/items() (mn) as the dict's of sym_record_as_dict, when the class keeps
 * OrderedDict's mn */
int sym_record_view_dict(trace *t, const var *r, const char *mn, var *out) {
    PyObject *cls = sym_record_class(r), *nm = PyUnicode_InternFromString(mn);
    if (nm == NULL)
        return -1;
    PyObject *mine = _PyType_Lookup((PyTypeObject *)cls, nm), *od = _PyType_Lookup((PyTypeObject *)ordered_dict, nm);
    Py_DECREF(nm);
    if (mine == NULL || mine != od)
        return sym_fail(t, "%s.%s: its own", ((PyTypeObject *)cls)->tp_name, mn);
    return sym_record_as_dict(t, r, out);
}

static int field_index(const var *r, PyObject *name) {
    PyObject *names = PyTuple_GET_ITEM(r->obj, 1);
    for (int i = 0; i < r->n; i++)
        if (PyUnicode_Compare(PyTuple_GET_ITEM(names, i), name) == 0)
            return i;
    (void)tc_clear_expected(PyExc_TypeError);
    return -1;
}

int sym_record_attr(trace *t, const var *r, PyObject *name, var *out) {
    int i = field_index(r, name);
    if (i >= 0) {
        *out = r->items[i];
        return 0;
    }
    PyObject *cls = sym_record_class(r);
    PyObject *descr = _PyType_Lookup((PyTypeObject *)cls, name);
    if (descr != NULL && (Py_TYPE(descr) == &PyProperty_Type || PyFunction_Check(descr))) {
        /* a method or property of the class, taken as it is now: its identity guarded (the
         * class's attribute through its MRO), so Out.total = f after a call is seen */
        int cs = sym_source(t, DH_S_CONST, -1, 0, cls);
        int as = cs < 0 ? -1 : sym_source(t, DH_S_ATTR, cs, 3, name);
        if (as < 0 || sym_guard_id(t, as, descr) < 0)
            return -1;
    }
    if (descr != NULL && Py_TYPE(descr) == &PyProperty_Type) {
        PyObject *fget = PyObject_GetAttrString(descr, "fget");
        (void)tc_clear_expected(PyExc_AttributeError);
        if (fget == NULL || !PyFunction_Check(fget)) {
            Py_XDECREF(fget);
            return sym_fail(t, "property %U of a record without a Python getter", name);
        }
        PyObject *fn = sym_keep(t, fget);
        int s = fn ? sym_source(t, DH_S_CONST, -1, 0, fn) : -1;
        return s < 0 ? -1 : sym_inline(t, fn, s, r, NULL, 0, NULL, out);
    }
    if (PyUnicode_CompareWithASCIIString(name, "to_tuple") == 0 || PyUnicode_CompareWithASCIIString(name, "keys") == 0 ||
        PyUnicode_CompareWithASCIIString(name, "values") == 0 || PyUnicode_CompareWithASCIIString(name, "items") == 0) {
        return sym_method(t, r, name, -1, out); /* called: sym_record_method / sym_record_view_dict */
    }
    if (descr != NULL && PyFunction_Check(descr)) { /* a method of its class: inlined when called */
        int s = sym_source(t, DH_S_CONST, -1, 0, descr);
        return s < 0 ? -1 : sym_method(t, r, descr, s, out);
    }
    if (descr != NULL && Py_TYPE(descr)->tp_descr_get == NULL) {
        /* a plain class attribute (__dataclass_fields__ & co): read from the class, a source */
        int cs = sym_source(t, DH_S_CONST, -1, 0, cls);
        int as = cs < 0 ? -1 : sym_source(t, DH_S_ATTR, cs, 3, name); /* through its MRO */
        return as < 0 ? -1 : sym_wrap(t, descr, as, out);
    }
    if (descr != NULL && !t->failed) {
        /* it exists (a method): hasattr/getattr-with-default must not take this failure
         * for absence; a Python error makes the whole capture fail instead */
        PyErr_Format(PyExc_NotImplementedError, "torchc: %U of a %s record", name,
                     ((PyTypeObject *)cls)->tp_name);
    }
    return sym_fail(t, "attribute %U of a %s record not supported", name, ((PyTypeObject *)cls)->tp_name);
}

/* r[k]: a string key (a non-None field), an int or a slice (of to_tuple()) */
int sym_record_subscr(trace *t, const var *r, const var *k, var *out) {
    if (k->kind != V_CONST)
        return sym_fail(t, "record subscript with a non-constant key");
    if (PyUnicode_Check(k->obj)) {
        int i = field_index(r, k->obj);
        if (i < 0 || is_none_var(&r->items[i]))
            return sym_raise(t, PyExc_KeyError, k->obj, "KeyError %R (eager will raise)", k->obj);
        *out = r->items[i];
        return 0;
    }
    var *items;
    int n;
    if (own_to_tuple(t, r) < 0 || sym_record_items(t, r, &items, &n) < 0)
        return -1;
    if (PyLong_CheckExact(k->obj)) {
        long i;
        int in = sym_const_index(k->obj, n, &i);
        if (in <= 0)
            return in < 0 ? -1 : sym_fail(t, "record index out of range (eager will raise)");
        *out = items[i];
        return 0;
    }
    if (PySlice_Check(k->obj)) {
        int m;
        var *sl = sym_slice_items(t, k->obj, items, n, &m);
        if (sl == NULL)
            return -1;
        memset(out, 0, sizeof *out);
        out->kind = V_SEQ;
        out->src = -1;
        out->n = m;
        out->items = sl;
        return 0;
    }
    return sym_fail(t, "record subscript with a %s", Py_TYPE(k->obj)->tp_name);
}

/* r.to_tuple() */
int sym_record_method(trace *t, const var *r, const char *mn, int nargs, var *out) {
    if (strcmp(mn, "to_tuple") != 0 || nargs != 0)
        return sym_fail(t, "record.%s not supported", mn);
    if (own_to_tuple(t, r) < 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->kind = V_SEQ;
    out->src = -1;
    return sym_record_items(t, r, &out->items, &out->n);
}

/* the record's class keeps ModelOutput's to_tuple (int/slice items and to_tuple() are its
 * non-None fields); else the trace fails where they are read */
static int own_to_tuple(trace *t, const var *r) {
    PyObject *cls = sym_record_class(r);
    PyObject *base = model_output_base(cls);
    if (base != NULL && inherits(cls, base, "to_tuple"))
        return 0;
    return sym_fail(t, "to_tuple() of %s (its own) not supported", ((PyTypeObject *)cls)->tp_name);
}

static PyObject *adds_item; /* class -> bool: setattr of a None field adds the item */

/* Does r.f = v of a field f that is None add the dict item too (transformers' __setattr__ of
 * some versions tests the fields, of others the dict's keys)? Asked of the class once, as
 * eager would answer it: an instance built with one field other than f set (f stays None:
 * built with the first field, the probe of f = the first field would find it an item already
 * and answer "adds" for every field of the class), then f set. names: the class's fields.
 * -1 error, with the reason set (the probe raised). */
static int setattr_adds_item(trace *t, PyObject *cls, PyObject *names, PyObject *name) {
    if (adds_item == NULL && (adds_item = PyDict_New()) == NULL)
        return -1;
    PyObject *known = PyDict_GetItemWithError(adds_item, cls);
    if (known != NULL)
        return known == Py_True;
    if (PyErr_Occurred())
        return -1;
    PyObject *other = NULL; /* the first field other than name (none: an instance of no field set) */
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names) && other == NULL; k++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(names, k), name);
        if (eq == -1 && PyErr_Occurred())
            return -1;
        if (eq != 0)
            other = PyTuple_GET_ITEM(names, k);
    }
    PyObject *torch = PyImport_ImportModule("torch"), *zeros = NULL, *inst = NULL, *keys = NULL, *kw = NULL;
    PyObject *noargs = PyTuple_New(0);
    int r = -1;
    zeros = torch ? PyObject_CallMethod(torch, "zeros", "i", 1) : NULL;
    kw = zeros && other ? Py_BuildValue("{OO}", other, zeros) : NULL;
    inst = zeros && noargs && (kw || !other) ? PyObject_Call(cls, noargs, kw) : NULL;
    if (inst != NULL && PyObject_SetAttr(inst, name, zeros) == 0 &&
        (keys = PyObject_CallMethod(inst, "keys", NULL)) != NULL) {
        r = PySequence_Contains(keys, name);
        if (r >= 0 && PyDict_SetItem(adds_item, cls, r ? Py_True : Py_False) < 0)
            r = -1;
    }
    Py_XDECREF(torch);
    Py_XDECREF(zeros);
    Py_XDECREF(inst);
    Py_XDECREF(keys);
    Py_XDECREF(kw);
    Py_XDECREF(noargs);
    if (r < 0) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return -1;
        r = sym_fail(t, "setting a None field of a %s record: its behaviour could not be asked",
                     ((PyTypeObject *)cls)->tp_name);
    }
    return r;
}

/* r.name = v (ModelOutput.__setattr__): a field holding a value takes a new non-None one
 * (attribute and item alike, as in eager); the record is one object in the trace, so every
 * reference sees the write. A field that is None: where the class's __setattr__ adds the item
 * (setattr_adds_item: transformers versions whose __setattr__ tests the fields), the item
 * joins the dict at its end as r[name] = v would (sym_record_setitem's rule); else (only the
 * attribute would change, attribute and item would differ) the trace fails, as does a write
 * of None (eager keeps the old item, the attribute None). */
int sym_record_setattr(trace *t, const var *r, PyObject *name, const var *v) {
    int i = field_index(r, name);
    if (i < 0)
        return sym_fail(t, "setting attribute %U of a %s record not supported", name,
                        ((PyTypeObject *)sym_record_class(r))->tp_name);
    if (is_none_var(v) || v->kind == V_UNSET || v->kind == V_NULL)
        return sym_fail(t, "setting field %U of a record to None not supported", name);
    if (is_none_var(&r->items[i])) {
        int add = setattr_adds_item(t, sym_record_class(r), PyTuple_GET_ITEM(r->obj, 1), name);
        if (add < 0)
            return -1;
        if (!add)
            return sym_fail(t, "setting field %U of a record from None (an attribute only) not supported", name);
        var key;
        if (sym_const(t, Py_NewRef(name), &key) < 0)
            return -1;
        return sym_record_setitem(t, r, &key, v);
    }
    sym_fx_set(t, &r->items[i], v); /* journalled: undone if the call becomes a break */
    return 0;
}

/* r[k] = v (ModelOutput.__setitem__: the dict item and the attribute): a str key naming a
 * field, a non-None value. A field that was None joins the items at the end of the dict:
 * its name is added to joined(r) (journalled), which orders the items and the output. */
int sym_record_setitem(trace *t, const var *r, const var *k, const var *v) {
    if (k->kind != V_CONST || !PyUnicode_Check(k->obj))
        return sym_fail(t, "record item assignment with a non-str key not supported");
    int i = field_index(r, k->obj);
    if (i < 0)
        return sym_fail(t, "record item assignment to %R (not a field) not supported", k->obj);
    if (is_none_var(v) || v->kind == V_UNSET || v->kind == V_NULL)
        return sym_fail(t, "record item assignment of None not supported");
    if (is_none_var(&r->items[i])) {
        PyObject *j = joined(r), *name = PyTuple_GET_ITEM(PyTuple_GET_ITEM(r->obj, 1), i);
        Py_ssize_t nj = PyTuple_GET_SIZE(j);
        PyObject *j2 = PyTuple_New(nj + 1);
        if (j2 == NULL)
            return -1;
        for (Py_ssize_t q = 0; q < nj; q++)
            PyTuple_SET_ITEM(j2, q, Py_NewRef(PyTuple_GET_ITEM(j, q)));
        PyTuple_SET_ITEM(j2, nj, Py_NewRef(name));
        var jv;
        if (sym_const(t, j2, &jv) < 0)
            return -1;
        sym_fx_set(t, &r->items[r->n], &jv); /* journalled with the field */
    }
    sym_fx_set(t, &r->items[i], v); /* journalled: undone if the call becomes a break */
    return 0;
}
