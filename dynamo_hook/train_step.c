/* train_step.c — a whole training step in one compiled function: what its optimizer part
 * reads and writes of the parameters (owner: training; issue 22, deliverable 7).
 *
 * After loss.backward() (a graph break: autograd runs eagerly), the rest of a step such as
 *     with torch.no_grad():
 *         for p in model.parameters():
 *             p -= lr * p.grad
 *     model.zero_grad()
 * is traced as a resume function. p.grad of a parameter is read here as a source of its own
 * (getattr(p, "grad"), guarded like any input: a tensor's metadata, or None), so the update
 * is one graph whose parameter updates the kernels store in place
 * (train_inplace_store.c). A .grad written earlier in the trace is read back as written.
 */
#include "dh_internal.h"

/* room for one more object id in *a (n used, *cap allocated; freed by sym_fx_free) */
static int grow_oids(int **a, int *cap, int n) {
    if (n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 8;
    int *r = realloc(*a, sizeof *r * (size_t)c);
    if (r == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *a = r;
    *cap = c;
    return 0;
}
#include "sym.h"
#include "sym_interp.h"
#include "ops_internal.h"

int sym_tensor_grad(trace *t, const var *x, PyObject *name, var *out) {
    int src = x->src;
    if (src < 0 || src >= t->nsrc || !t->srcdone[src] || t->srcvar[src].oid != x->oid || t->srcobj[src] == NULL)
        return sym_fail(t, "Tensor attribute 'grad' of a tensor made in the graph not supported");
    PyObject *obj = t->srcobj[src];
    for (int i = t->nattrw - 1; i >= 0; i--) /* written earlier in this trace */
        if (t->attrw[i].obj == obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0) {
            *out = *t->attrw[i].val;
            return 0;
        }
    PyObject *a = PyObject_GetAttr(obj, name);
    if (a == NULL)
        return -1;
    int s = sym_source(t, DH_S_ATTR, src, 2, name); /* a getset: the guard calls getattr */
    int rc = s < 0 ? -1 : sym_wrap(t, a, s, out);
    Py_DECREF(a);
    return rc;
}

/* 2: oid is a tensor made to require grad under no_grad; 1: a view of it (sym.h) */
int sym_nograd_leaf(trace *t, int oid) {
    int r = 0;
    for (int i = 0; i < t->nngleaf && r < 2; i++)
        r = t->ngleaf_oid[i] == oid ? 2 : sym_alias_same(t, t->ngleaf_oid[i], oid) ? 1 : r;
    return r;
}

/* x.requires_grad = b with grad mode off for the whole graph (every value of the trace is a
 * leaf that does not require grad; grad mode can't turn on inside it): True makes the object
 * a leaf that requires grad, yet nothing computed from it does. Only its flag differs, read
 * back by x.requires_grad (sym_nograd_leaf); views of it (eager: they require grad too) and
 * the object leaving the graph are left to eager (sym_fill_out). */
static int nograd_flag(trace *t, const var *a, const ic_meta *m, int want) {
    int k = sym_nograd_leaf(t, a->oid);
    if (k == 2 && want)
        return 0;
    if (k != 0)
        return sym_fail(t, "Tensor.requires_grad changed on a tensor made to require grad under no_grad, or "
                           "a view of it (left to eager)");
    if (!want)
        return 0;
    if (ic_dtype_is_complex(m->dtype)) /* complex gradients are not captured */
        return sym_fail(t, "Tensor.requires_grad = True on a complex tensor (its gradients are left to eager)");
    if (!(m->dtype >= IC_F16 && m->dtype <= IC_F64))
        return sym_fail(t, "Tensor.requires_grad = True on a non-floating tensor (eager raises)");
    if (a->oid <= 0 || a->oid > t->nobj)
        return sym_fail(t, "Tensor.requires_grad set on an untracked tensor");
    if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
        return sym_fail(t, "attribute assignment inside a generator");
    if (grow_oids(&t->ngleaf_oid, &t->capngleaf, t->nngleaf) < 0)
        return -1;
    t->ngleaf_oid[t->nngleaf++] = a->oid;
    return 0;
}

/* p.grad = None (Module.zero_grad, Optimizer.zero_grad): an attribute write of the source
 * tensor, replayed after the graph like a module attribute's (its value read back by a later
 * p.grad of the trace) */
/* x.requires_grad = b (transformers' audio feature encoders set it on their input's view in
 * training) and x.requires_grad_(b). Eager: b must be a bool; True on an integer tensor
 * raises; True on a floating tensor that does not require grad makes it a leaf that does
 * (ic_grad_leaf: what is built from it requires grad, no gradient passes below it); False on
 * such a leaf makes it stop; a non-leaf (a value with a grad_fn) raises, except for the
 * method's True (no change). The object must not leave the graph (sym_fill_out): eager's
 * x.grad after backward would be its gradient. Inputs (the caller's tensors) keep their
 * flag: changing it is left to eager. */
static int set_requires_grad(trace *t, const var *a_in, int want, int method) {
    var av = *a_in, *a = &av;
    sym_resolve(t, a); /* its value now (a leaf made earlier, an in-place update) */
    int src = a->src;
    int input = src >= 0 && src < t->nsrc && t->srcdone[src] && t->srcvar[src].oid == a->oid;
    const ic_meta *m = ic_value_meta(t->g, a->val);
    if (m == NULL)
        return sym_check_graph(t);
    if (input) {
        int rg = 0;
        for (int i = 0; i < t->nguards; i++)
            if (t->guards[i].kind == DH_G_TENSOR && t->guards[i].src == src)
                rg = t->guards[i].meta.requires_grad;
        /* a tensor that does not require grad is a leaf; one that does may not be (the
         * setter's True raises on a non-leaf, the method's does not) */
        if (want == rg && (!want || method))
            return 0;
        return sym_fail(t, "Tensor.requires_grad changed on an input tensor (left to eager)");
    }
    if (!tc_grad_enabled())
        return nograd_flag(t, a, m, want);
    if (t->nograd > 0)
        return sym_fail(t, "Tensor.requires_grad set under no_grad not supported");
    if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
        return sym_fail(t, "attribute assignment inside a generator");
    if (a->oid <= 0 || a->oid > t->nobj)
        return sym_fail(t, "Tensor.requires_grad set on an untracked tensor");
    int leaf = ic_value_is_grad_leaf(t->g, a->val);
    int rg = leaf || sym_value_requires_grad(t, a->val);
    if (rg && !leaf && method && want) /* requires_grad_() of a non-leaf: no change */
        return 0;
    if (rg && !leaf) /* eager: "you can only change requires_grad flags of leaf variables" */
        return sym_fail(t, "Tensor.requires_grad set on a non-leaf tensor (eager raises)");
    if (want == rg)
        return 0;
    if (want && ic_dtype_is_complex(m->dtype)) /* complex gradients are not captured */
        return sym_fail(t, "Tensor.requires_grad = True on a complex tensor (its gradients are left to eager)");
    if (want && !(m->dtype >= IC_F16 && m->dtype <= IC_F64))
        return sym_fail(t, "Tensor.requires_grad = True on a non-floating tensor (eager raises)");
    if (want && grow_oids(&t->leaf_oid, &t->capleaf, t->nleaf) < 0)
        return -1;
    ic_val v = want ? ic_grad_leaf(t->g, a->val) : ic_detach(t->g, a->val);
    if (v < 0)
        return sym_check_graph(t);
    if (want)
        t->leaf_oid[t->nleaf++] = a->oid;
    t->obj_val[a->oid] = v; /* the object itself: views made of it before keep their value */
    return 0;
}

/* Tensor.requires_grad_(requires_grad=True): self, its flag set as above */
int sym_h_requires_grad_(trace *t, const opdef *d, var **p, var *out) {
    (void)d;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "requires_grad_ of a non-tensor");
    int want = 1;
    if (!sym_is_none(p[1])) {
        if (p[1]->kind != V_CONST || !PyBool_Check(p[1]->obj))
            return sym_fail(t, "requires_grad_ of a value that is not a constant bool");
        want = p[1]->obj == Py_True;
    }
    if (set_requires_grad(t, p[0], want, 1) < 0)
        return -1;
    *out = *p[0];
    sym_resolve(t, out);
    return 0;
}

int sym_tensor_setattr(trace *t, const var *a, PyObject *name, const var *b) {
    int src = a->src;
    if (PyUnicode_CompareWithASCIIString(name, "requires_grad") == 0) {
        if (b->kind != V_CONST || !PyBool_Check(b->obj))
            return sym_fail(t, "Tensor.requires_grad assigned a value that is not a constant bool");
        return set_requires_grad(t, a, b->obj == Py_True, 0);
    }
    if (PyUnicode_CompareWithASCIIString(name, "grad") != 0)
        return sym_fail(t, "attribute assignment on a tensor (%U) not supported", name);
    if (src < 0 || src >= t->nsrc || !t->srcdone[src] || t->srcvar[src].oid != a->oid || t->srcobj[src] == NULL)
        return sym_fail(t, "Tensor.grad assigned on a tensor made in the graph not supported");
    if (b->kind != V_CONST || b->obj != Py_None)
        return sym_fail(t, "Tensor.grad assigned a value other than None not supported");
    if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
        return sym_fail(t, "attribute assignment inside a generator");
    PyObject *obj = t->srcobj[src];
    int i;
    for (i = 0; i < t->nattrw; i++)
        if (t->attrw[i].obj == obj && PyUnicode_Check(t->attrw[i].name) &&
            PyUnicode_Compare(t->attrw[i].name, name) == 0)
            break;
    if (i == t->nattrw) {
        if (sym_attrw_new(t) == NULL)
            return -1;
        t->attrw[i].src = src;
    }
    var *v = sym_alloc(t, 1);
    if (v == NULL)
        return -1;
    *v = *b;
    t->attrw[i].obj = obj;
    t->attrw[i].name = name;
    t->attrw[i].val = v;
    return 0;
}
