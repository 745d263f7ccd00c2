/* obj_dictview.c — obj.__dict__ of an object in the trace, as a read-only view.
 *
 * o.__dict__ (a V_OBJ with a source, the generic __getattribute__ and the type's own
 * __dict__ slot) becomes a V_DICT with op SYM_DICT_VIEW: the keys and values of the real
 * instance dict (each value through the object's attribute source, the key count guarded
 * on a full-getattr source of __dict__) merged, in eager's insertion order, with the
 * attribute writes this trace logged for the object (t->attrw: what eager's dict holds at
 * this point). The object itself is kept in the view's globals (borrowed: the trace keeps it).
 *
 * A value of the real dict is wrapped (its guards made) only when read: until then its slot
 * holds a placeholder (V_NULL, op VIEW_LAZY, the value kept); the key set is guarded by the
 * length and each key's presence, so an attribute of a type the trace cannot hold costs
 * nothing unless it is read.
 * Reads (get, [], in, keys/items/values, len, iteration, dict(view)) see the snapshot; a
 * read after the object's attributes changed since the snapshot fails the trace (the view
 * in eager is live). Any write through the view (d[k] = v, del, update, pop, setdefault,
 * clear, popitem) and the view leaving the trace (returned, stored, handed to a break:
 * sym_output.c finds no type for the op) fail the trace cleanly.
 *
 * Requires: attribute reads of such an object consult t->attrw first (sym_attr.c).
 * Keeps:    eager's values and key order at the read.
 * Breaks:   nothing; objects outside the rule keep the old reasons.
 */
#include "sym.h"

#include <string.h>

static PyObject *s_dict; /* "__dict__" */

#define VIEW_LAZY 0x6c617a /* V_NULL.op: a real-dict value not wrapped yet (obj kept, src its source) */

static int same_var(const var *a, const var *b) {
    return a->kind == b->kind && a->src == b->src && a->val == b->val && a->oid == b->oid && a->obj == b->obj &&
           a->items == b->items && a->n == b->n && a->op == b->op && a->is_list == b->is_list;
}

static int logged_name(const sym_attrw *w, PyObject *obj) {
    return w->obj == obj && w->name != NULL && PyUnicode_Check(w->name) && w->val != NULL &&
           !sym_attr_is_deleted(w->val);
}

static int find_key(PyObject *keys, int n, PyObject *k) {
    for (int i = 0; i < n; i++)
        if (PyTuple_GET_ITEM(keys, i) == k ||
            (PyUnicode_Check(PyTuple_GET_ITEM(keys, i)) && PyUnicode_Check(k) &&
             PyUnicode_Compare(PyTuple_GET_ITEM(keys, i), k) == 0))
            return i;
    return -1;
}

static int build_view(trace *t, const var *o, int generic, var *out);

int sym_obj_dict_view(trace *t, const var *o, PyObject *name, var *out) {
    if (s_dict == NULL && (s_dict = PyUnicode_InternFromString("__dict__")) == NULL)
        return -1;
    if (PyUnicode_Compare(name, s_dict) != 0)
        return 1;
    return build_view(t, o, 0, out);
}

int sym_obj_dict_view_generic(trace *t, const var *o, var *out) {
    if (s_dict == NULL && (s_dict = PyUnicode_InternFromString("__dict__")) == NULL)
        return -1;
    return build_view(t, o, 1, out);
}

/* generic: object.__getattribute__(o, "__dict__") (a class's own __getattribute__ not run) */
static int build_view(trace *t, const var *o, int generic, var *out) {
    if (o->kind != V_OBJ || o->obj == NULL || o->src < 0 || PyType_Check(o->obj) || PyModule_Check(o->obj))
        return 1;
    PyTypeObject *tp = Py_TYPE(o->obj);
    PyObject *descr = _PyType_Lookup(tp, s_dict);
    if ((!generic && tp->tp_getattro != PyObject_GenericGetAttr) || tp->tp_dictoffset == 0 || descr == NULL ||
        !Py_IS_TYPE(descr, &PyGetSetDescr_Type))
        return 1;
    PyObject **dp = _PyObject_GetDictPtr(o->obj);
    PyObject *real = dp ? *dp : NULL;
    Py_ssize_t nreal = real ? PyDict_GET_SIZE(real) : 0;
    int nw = 0;
    for (int i = 0; i < t->nattrw; i++)
        nw += logged_name(&t->attrw[i], o->obj);
    if (nreal + nw > 100000)
        return sym_fail(t, "__dict__ of an object with too many attributes");
    int cap = (int)nreal + nw;
    var *vals = sym_alloc(t, cap > 0 ? cap : 1);
    if (vals == NULL)
        return -1;
    int ds = -1;
    if (nreal > 0 || t->src[o->src].kind != DH_S_NEW) {
        /* the real dict's key set: its length and each key guarded (below) */
        ds = sym_source(t, DH_S_ATTR, o->src, 2, s_dict);
        if (ds < 0 || sym_guard_len(t, ds, (int)nreal) < 0)
            return -1;
    }
    PyObject *keys = PyTuple_New(cap); /* filled below; kept (a tuple of n) at the end */
    if (keys == NULL)
        return -1;
    int n = 0, rc = -1;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (real != NULL && PyDict_Next(real, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) {
            rc = sym_fail(t, "__dict__ with a non-str key");
            goto done;
        }
        PyObject *cd = _PyType_Lookup(tp, k);
        if (cd != NULL && Py_TYPE(cd)->tp_descr_set != NULL) {
            rc = sym_fail(t, "__dict__ entry %U shadowed by a data descriptor", k);
            goto done;
        }
        PyTuple_SET_ITEM(keys, n, Py_NewRef(k));
        n++;
        int s = sym_source(t, DH_S_ATTR, o->src, 0, k);
        if (s < 0 || sym_guard_key(t, ds, real, k) < 0 || sym_keep(t, Py_NewRef(v)) == NULL)
            goto done;
        vals[n - 1] = sym_var(V_NULL);
        vals[n - 1].op = VIEW_LAZY;
        vals[n - 1].obj = v;
        vals[n - 1].src = s;
    }
    /* the trace's writes, in program order: an existing key keeps its place; a deletion
     * removes it (a name set again after it has its own later slot: at the end, as eager) */
    for (int i = 0; i < t->nattrw; i++) {
        const sym_attrw *w = &t->attrw[i];
        if (w->obj == o->obj && w->name != NULL && PyUnicode_Check(w->name) && sym_attr_is_deleted(w->val)) {
            int at = find_key(keys, n, w->name);
            if (at < 0)
                continue;
            Py_DECREF(PyTuple_GET_ITEM(keys, at));
            for (int j = at; j + 1 < n; j++) {
                PyTuple_SET_ITEM(keys, j, PyTuple_GET_ITEM(keys, j + 1));
                vals[j] = vals[j + 1];
            }
            PyTuple_SET_ITEM(keys, n - 1, NULL);
            n--;
            continue;
        }
        if (!logged_name(w, o->obj))
            continue;
        int at = find_key(keys, n, w->name);
        if (at < 0) {
            at = n++;
            PyTuple_SET_ITEM(keys, at, Py_NewRef(w->name));
        }
        vals[at] = *w->val;
    }
    PyObject *kept = sym_keep(t, PyTuple_GetSlice(keys, 0, n));
    if (kept == NULL)
        goto done;
    *out = sym_var(V_DICT);
    out->op = SYM_DICT_VIEW;
    out->obj = kept;
    out->items = vals;
    out->n = n;
    out->globals = o->obj;
    out->pos = o->src + 1;
    rc = 0;
done:
    /* unfilled slots of keys are NULL: the tuple's dealloc skips them */
    Py_DECREF(keys);
    return rc;
}

static int fresh(trace *t, const var *d);

/* slot i wrapped now (every copy of the view shares the items array) */
static int resolve(trace *t, const var *d, int i) {
    var *it = &d->items[i];
    if (it->kind != V_NULL || it->op != VIEW_LAZY)
        return 0;
    var r;
    if (sym_wrap(t, it->obj, it->src, &r) < 0)
        return -1;
    *it = r;
    return 0;
}

int sym_dict_view_read(trace *t, const var *d) {
    if (d->kind != V_DICT || d->op != SYM_DICT_VIEW)
        return 0;
    if (fresh(t, d) < 0)
        return -1;
    for (int i = 0; i < d->n; i++)
        if (resolve(t, d, i) < 0)
            return -1;
    return 0;
}

int sym_dict_view_read_key(trace *t, const var *d, PyObject *key) {
    if (d->kind != V_DICT || d->op != SYM_DICT_VIEW)
        return 0;
    if (fresh(t, d) < 0)
        return -1;
    int at = PyUnicode_Check(key) ? find_key(d->obj, d->n, key) : -1;
    return at < 0 ? 0 : resolve(t, d, at);
}

int sym_dict_view_keys(trace *t, const var *d) {
    if (d->kind != V_DICT || d->op != SYM_DICT_VIEW)
        return 0;
    return fresh(t, d);
}

/* a later t->attrw slot logs the same object and name */
static int later_slot(trace *t, int i) {
    for (int j = i + 1; j < t->nattrw; j++)
        if (t->attrw[j].obj == t->attrw[i].obj && PyUnicode_Check(t->attrw[j].name) &&
            PyUnicode_Compare(t->attrw[j].name, t->attrw[i].name) == 0)
            return 1;
    return 0;
}

static int fresh(trace *t, const var *d) {
    PyObject *obj = d->globals;
    for (int i = 0; i < t->nattrw; i++) {
        const sym_attrw *w = &t->attrw[i];
        if (w->obj != obj || w->name == NULL || !PyUnicode_Check(w->name) || later_slot(t, i))
            continue; /* the last slot of each name decides (obj_attrs.c: set after a deletion) */
        if (sym_attr_is_deleted(w->val) && find_key(d->obj, d->n, w->name) >= 0)
            return sym_fail(t, "__dict__ view read after the object's attributes changed");
        if (!logged_name(w, obj))
            continue;
        int at = find_key(d->obj, d->n, w->name);
        if (at < 0 || !same_var(&d->items[at], w->val))
            return sym_fail(t, "__dict__ view read after the object's attributes changed");
    }
    return 0;
}

int sym_dict_view_write(trace *t, const var *d) {
    if (d->kind == V_DICT && d->op == SYM_DICT_VIEW)
        return sym_fail(t, "write through an object's __dict__ not supported");
    if (d->kind == V_DICT && d->op == SYM_DICT_PROXY)
        return sym_fail(t, "write through a mappingproxy (eager raises TypeError)");
    return 0;
}
