/* alias_fn.c — in-place updates of tensors that share storage with live views,
 * functionalized: the objects stay values in the graph, and an update of one alias is
 * propagated to every other live alias, as eager's shared storage would show it.
 *
 * Requires: every live alias of the updated object reaches its root object's current
 *   value through a chain of recorded view descriptors (view_desc: reshape, permute,
 *   select, narrow, __getitem__ with basic indexing; a detach shares the value itself,
 *   or in training is a "detach" step: replayed, never inverted).
 * Keeps:    eager's values: an update of a view is written back into the root (the
 *   inverse of each view step: a box store, an inverse permute, a reshape back), then
 *   every live alias is re-derived from the root's new value by replaying its view
 *   chain. A root that is an input is copied back to the caller after the graph, as
 *   for any mutated input (sym_output.c).
 * Breaks:   nothing; an alias whose chain can't be replayed or inverted (expand,
 *   advanced indexing copies, values no view made) fails the trace
 *   with the old reason, and the caller breaks the graph at the in-place op. */
#include "sym.h"
#include "sym_interp.h"
#include "sym_sem.h"
#include "ops_internal.h"

#define ALIAS_MAX_CHAIN 32

static const char NOT_SUPPORTED[] =
    "in-place update of a tensor that has views still in use (aliasing) not supported yet";

static int root_of(const trace *t, int oid) {
    return t->obj_root[oid] > 0 ? t->obj_root[oid] : oid;
}

static int contiguous_base(trace *t, ic_val b) {
    int64_t st[IC_MAX_DIMS], want = 1;
    const ic_meta *mp = ic_value_meta(t->g, b);
    if (mp == NULL || mp->dyn || !sym_eager_strides(t, b, st))
        return 0;
    ic_meta m = *mp;
    for (int i = m.ndim - 1; i >= 0; i--) {
        if (m.sizes[i] == 0)
            return 1;
        if (m.sizes[i] != 1 && st[i] != want)
            return 0;
        want *= m.sizes[i];
    }
    return 1;
}

/* The view descriptors from v down to root (steps[0] made v), their count, or -1 when v
 * is not a view chain of root. */
static int chain_of(trace *t, ic_val v, ic_val root, PyObject **steps) {
    int n = 0;
    while (v != root) {
        PyObject *desc = v >= 0 && v < t->capvals ? t->view_desc[v] : NULL;
        if (desc == NULL || n == ALIAS_MAX_CHAIN)
            return -1;
        steps[n++] = desc;
        v = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
        if (name == NULL) {
            (void)tc_clear_expected(PyExc_UnicodeError);
            return -1;
        }
        /* a reshape is a view in eager only where the base's strides allow it; the trace
         * takes unknown strides as a view: trusted here only on a contiguous base */
        if (!strcmp(name, "reshape") && !contiguous_base(t, v))
            return -1;
    }
    return n;
}

static int exact_in(trace *t, const var *v, int n, int oid, int depth) {
    for (int i = 0; i < n; i++) {
        const var *x = &v[i];
        if (x->kind == V_TENSOR && x->oid == oid)
            return 1;
        if (depth < 8 && x->items != NULL &&
            (x->kind == V_SEQ || x->kind == V_ITER || x->kind == V_DICT || x->kind == V_REC ||
             x->kind == V_METHOD) &&
            exact_in(t, x->items, x->kind == V_METHOD ? 1 : x->n, oid, depth + 1))
            return 1;
    }
    return 0;
}

/* object oid itself is reachable (frames, generators, inputs, attribute writes) */
static int object_live(trace *t, int oid) {
    for (int i = 0; i < t->nframes; i++) {
        sframe *f = t->frames[i];
        if (exact_in(t, f->stack, f->sp, oid, 0) || exact_in(t, f->locals, f->nlocals, oid, 0) ||
            (f->closure && exact_in(t, f->closure, f->nclosure, oid, 0)))
            return 1;
    }
    if (sym_gen_live(t, exact_in, oid))
        return 1;
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++)
        if (t->srcdone[s] && exact_in(t, &t->srcvar[s], 1, oid, 0))
            return 1;
    for (int i = 0; i < t->nattrw; i++)
        if (exact_in(t, t->attrw[i].val, 1, oid, 0))
            return 1;
    return t->nframes == 0;
}

static int get_ints(PyObject *tup, int64_t *out, int max) {
    if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) > max)
        return -1;
    int n = (int)PyTuple_GET_SIZE(tup);
    for (int i = 0; i < n; i++) {
        out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(tup, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_OverflowError, PyExc_TypeError);
            return -1;
        }
    }
    return n;
}

/* (dim, start, stop) of a select/narrow step over base meta m; 0 when not known */
static int step_range(const ic_meta *m, const char *name, PyObject *args, int *dim,
                      int64_t *start, int64_t *stop) {
    int64_t a[3];
    int n = get_ints(args, a, 3);
    if (n < 2 || a[0] < 0 || a[0] >= m->ndim)
        return 0;
    *dim = (int)a[0];
    int64_t size = m->sizes[*dim], s = a[1] < 0 ? a[1] + size : a[1];
    int64_t len = !strcmp(name, "select") ? 1 : (n == 3 ? a[2] : -1);
    if (s < 0 || len < 0 || s + len > size)
        return 0;
    *start = s;
    *stop = s + len;
    return 1;
}

/* view step desc replayed on base value b: the view's value, with its descriptor */
static ic_val apply_step(trace *t, ic_val b, PyObject *desc) {
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
    PyObject *args = PyTuple_GET_ITEM(desc, 2);
    if (name == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return sym_fail(t, NOT_SUPPORTED);
    }
    var in = sym_var(V_TENSOR), out;
    in.val = b;
    if (!strcmp(name, "__getitem__")) {
        var k = sym_var(V_CONST);
        k.obj = PyTuple_GET_ITEM(args, 0);
        if (sym_tensor_index(t, &in, &k, &out) < 0)
            return -1;
        return out.val;
    }
    ic_meta m = *ic_value_meta(t->g, b);
    ic_val v = IC_NONE;
    int64_t s[IC_MAX_DIMS];
    if (!strcmp(name, "reshape") || !strcmp(name, "permute")) {
        int n = PyTuple_GET_SIZE(args) == 1 ? get_ints(PyTuple_GET_ITEM(args, 0), s, IC_MAX_DIMS) : -1;
        if (n < 0)
            return sym_fail(t, NOT_SUPPORTED);
        if (name[0] == 'r') {
            v = sym_reshape(t, b, n, s);
        } else {
            int perm[IC_MAX_DIMS];
            if (n != m.ndim)
                return sym_fail(t, NOT_SUPPORTED);
            for (int i = 0; i < n; i++)
                perm[i] = (int)s[i];
            v = ic_permute(t->g, b, perm);
        }
    } else if (!strcmp(name, "select") || !strcmp(name, "narrow")) {
        int dim;
        int64_t st, sp;
        if (!step_range(&m, name, args, &dim, &st, &sp))
            return sym_fail(t, NOT_SUPPORTED);
        v = ic_slice(t->g, b, dim, st, sp, 1);
        if (name[0] == 's' && v >= 0) {
            int n = 0;
            for (int i = 0; i < m.ndim; i++)
                if (i != dim)
                    s[n++] = m.sizes[i];
            v = sym_reshape(t, v, n, s);
        }
    } else if (!strcmp(name, "detach")) { /* training: the same data, no gradient */
        v = ic_detach(t->g, b);
    } else {
        return sym_fail(t, NOT_SUPPORTED); /* expand: eager refuses most in-place updates */
    }
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, NOT_SUPPORTED);
    Py_INCREF(args);
    if (sym_view_out_desc(t, &in, v, &out, name, args) < 0)
        return -1;
    return out.val;
}

/* base b with its view (step desc) replaced by nv: b's new value */
static ic_val unapply_step(trace *t, ic_val b, PyObject *desc, ic_val nv) {
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
    PyObject *args = PyTuple_GET_ITEM(desc, 2);
    if (name == NULL) {
        (void)tc_clear_expected(PyExc_UnicodeError);
        return sym_fail(t, NOT_SUPPORTED);
    }
    ic_meta m = *ic_value_meta(t->g, b);
    if (!strcmp(name, "__getitem__"))
        return sym_box_store(t, b, PyTuple_GET_ITEM(args, 0), nv);
    if (!strcmp(name, "reshape"))
        return sym_reshape(t, nv, m.ndim, m.sizes);
    if (!strcmp(name, "permute")) {
        int64_t s[IC_MAX_DIMS];
        int perm[IC_MAX_DIMS], n = get_ints(PyTuple_GET_ITEM(args, 0), s, IC_MAX_DIMS);
        if (n != m.ndim)
            return sym_fail(t, NOT_SUPPORTED);
        for (int i = 0; i < n; i++) {
            if (s[i] < 0 || s[i] >= n)
                return sym_fail(t, NOT_SUPPORTED);
            perm[s[i]] = i;
        }
        return ic_permute(t->g, nv, perm);
    }
    if (!strcmp(name, "select") || !strcmp(name, "narrow")) {
        int dim;
        int64_t st, sp;
        if (!step_range(&m, name, args, &dim, &st, &sp))
            return sym_fail(t, NOT_SUPPORTED);
        PyObject *key = PyTuple_New(dim + 1);
        if (key == NULL)
            return -1;
        for (int i = 0; i <= dim; i++) {
            PyObject *sl = i < dim ? PySlice_New(NULL, NULL, NULL)
                                   : name[0] == 's' ? PyLong_FromLongLong(st) : NULL;
            if (i == dim && name[0] == 'n') {
                PyObject *a = PyLong_FromLongLong(st), *z = PyLong_FromLongLong(sp);
                sl = a && z ? PySlice_New(a, z, NULL) : NULL;
                Py_XDECREF(a);
                Py_XDECREF(z);
            }
            if (sl == NULL) {
                Py_DECREF(key);
                return -1;
            }
            PyTuple_SET_ITEM(key, i, sl);
        }
        ic_val r = sym_box_store(t, b, key, nv);
        Py_DECREF(key);
        return r;
    }
    return sym_fail(t, NOT_SUPPORTED);
}

int sym_alias_update(trace *t, int oid, ic_val newval) {
    int root = root_of(t, oid);
    ic_val old_root = t->obj_val[root];
    PyObject *steps[ALIAS_MAX_CHAIN];
    ic_val nroot = newval;
    /* (an input that requires grad: a leaf makes eager raise, checked before each run;
     * train_inplace_store.c dh_inplace_allowed) */
    if (ic_value_op(t->g, old_root) == IC_OP_INPUT) {
        /* an input whose elements share memory (an expand): eager raises at the update;
         * here the copy-back would raise after the graph ran */
        int64_t st[IC_MAX_DIMS];
        const ic_meta *rm = ic_value_meta(t->g, old_root);
        if (rm == NULL || !ic_value_strides(t->g, old_root, st))
            return sym_fail(t, NOT_SUPPORTED);
        int64_t rnum = 1;
        for (int d = 0; d < rm->ndim; d++) {
            rnum *= rm->sizes[d];
            if (st[d] == 0 && rm->sizes[d] > 1)
                return sym_fail(t, "in-place update of an input whose elements share memory (eager raises)");
        }
        /* other overlapping elements (an unfold, an as_strided passed in, as at a graph
         * break): the whole input is copied back after the graph, and an element the view
         * updated is written again from another position with its old value */
        if (!rm->dyn && rnum > 0 && sym_strides_may_overlap(rm->ndim, rm->sizes, st))
            return sym_fail(t, "in-place update through a view of an input whose elements share memory left to eager");
    }
    if (oid != root) { /* write the view's new value back through its chain */
        int n = chain_of(t, t->obj_val[oid], old_root, steps);
        if (n < 0)
            return sym_fail(t, NOT_SUPPORTED);
        ic_val bases[ALIAS_MAX_CHAIN + 1];
        bases[0] = t->obj_val[oid];
        for (int i = 0; i < n; i++)
            bases[i + 1] = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(steps[i], 0));
        for (int i = 0; i < n; i++) {
            const ic_meta *bm = ic_value_meta(t->g, bases[i + 1]);
            if (bm != NULL && ic_value_meta(t->g, nroot) != NULL &&
                ic_value_meta(t->g, nroot)->dtype != bm->dtype)
                nroot = ic_cast(t->g, nroot, bm->dtype);
            nroot = unapply_step(t, bases[i + 1], steps[i], nroot);
            if (nroot < 0)
                return sym_check_graph(t) < 0 ? -1 : sym_fail(t, NOT_SUPPORTED);
        }
        if (dh_layout_keep(t, old_root, &nroot) < 0) /* the root keeps its strides */
            return -1;
    }
    /* every other live alias re-derived from the root's new value; computed in full
     * before any object changes (a failure leaves the trace as it was) */
    int nobj = t->nobj;
    ic_val *nv = malloc(sizeof(ic_val) * (size_t)(nobj + 1));
    if (nv == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int o = 1; o <= nobj; o++) {
        nv[o] = IC_NONE;
        if (o == root || root_of(t, o) != root || (o != oid && !object_live(t, o)))
            continue; /* a dead alias is never read again (the updated one is: its result) */
        int n = chain_of(t, t->obj_val[o], old_root, steps);
        if (n < 0) {
            free(nv);
            return sym_fail(t, NOT_SUPPORTED);
        }
        ic_val cur = nroot;
        for (int i = n - 1; i >= 0 && cur >= 0; i--)
            cur = apply_step(t, cur, steps[i]);
        if (cur < 0) {
            free(nv);
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, NOT_SUPPORTED);
        }
        nv[o] = cur;
    }
    t->obj_val[root] = nroot;
    for (int o = 1; o <= nobj; o++)
        if (nv[o] >= 0)
            t->obj_val[o] = nv[o];
    free(nv);
    return 0;
}

/* self.t_() / transpose_ / unsqueeze_ / squeeze_: the object self now holds view (a view
 * of its old value, made by the out-of-place op). Its other aliases keep their values
 * (only self's metadata changes); an update of the root later finds their chains broken
 * and breaks. A tensor the caller can see (an input, a module's attribute) would change
 * shape in the caller: not captured. */
int sym_alias_rebind(trace *t, const var *self, const var *view) {
    var s = *self;
    sym_resolve(t, &s);
    if (s.kind != V_TENSOR || s.oid <= 0 || view->kind != V_TENSOR)
        return sym_fail(t, "in-place view op on an untracked tensor");
    if (t->in_gen)
        return sym_fail(t, "in-place view op inside a generator");
    for (int i = 0; i < t->nsrc && i < t->capsrc; i++)
        if (t->srcdone[i] && t->srcvar[i].kind == V_TENSOR && t->srcvar[i].oid == s.oid)
            return sym_fail(t, "in-place view op on a tensor the caller holds (changes its shape) not supported");
    for (int i = 0; i < t->nattrw; i++)
        if (exact_in(t, t->attrw[i].val, 1, s.oid, 0))
            return sym_fail(t, "in-place view op on a tensor the caller holds (changes its shape) not supported");
    /* the old value stays held by the op's own result object (an alias of self): a view
     * chain through it is rebuilt on the real storage when the trace outputs or breaks
     * (sym_output.c finds a base by the object holding it) */
    if (view->oid > 0 && view->oid <= t->nobj && view->oid != s.oid)
        t->obj_val[view->oid] = s.val;
    t->obj_val[s.oid] = view->val;
    return 0;
}
