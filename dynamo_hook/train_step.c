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
#include "sym.h"
#include "sym_interp.h"

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

/* p.grad = None (Module.zero_grad, Optimizer.zero_grad): an attribute write of the source
 * tensor, replayed after the graph like a module attribute's (its value read back by a later
 * p.grad of the trace) */
int sym_tensor_setattr(trace *t, const var *a, PyObject *name, const var *b) {
    int src = a->src;
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
