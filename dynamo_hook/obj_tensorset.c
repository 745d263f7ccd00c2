/* obj_tensorset.c — tensors in sets and membership tests, by identity.
 *
 * A tensor hashes by id() and a set compares members by identity first (then ==, never
 * reached for distinct tensors of distinct ids), so `p in memo`, memo.add(p), {a, b} and
 * set(params) are identity questions (optimizer-style code, XLNet's parameter memo). A
 * tensor the frame reads from a source (an argument, a parameter, a buffer) is its real
 * object: it goes into the trace's set (a frozenset of real objects, objects.c) as itself,
 * and its source gets an identity guard, so the answers hold on every call the entry
 * serves. Iterating such a set gives each member back as the tracked value of its source.
 *
 * Requires: sets held as frozensets of real objects (objects.c, obj_setorder.c).
 * Keeps: the tracked tensor values (members map back to them).
 * Breaks: nothing; a tensor made in the trace (no real object yet) in a set still fails. */
#include "sym_interp.h"

PyObject *sym_set_member(trace *t, const var *v) {
    if (sym_real_object_pinned(t, v))
        return v->obj;
    if (v->kind != V_TENSOR || v->src < 0 || v->src >= t->capsrc || !t->srcdone[v->src])
        return NULL;
    PyObject *o = t->srcobj[v->src];
    if (o == NULL || !tc_is_tensor(o))
        return NULL;
    /* the value must still be the source's object (not an in-place result rebound) */
    if (t->srcvar[v->src].kind != V_TENSOR || t->srcvar[v->src].oid != v->oid)
        return NULL;
    if (sym_guard_id(t, v->src, o) < 0)
        return NULL;
    return o;
}

int sym_set_tensor_item(trace *t, PyObject *o, var *out) {
    if (!tc_is_tensor(o))
        return 1;
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++)
        if (t->srcdone[s] && t->srcobj[s] == o && t->srcvar[s].kind == V_TENSOR) {
            *out = t->srcvar[s];
            return 0;
        }
    return sym_fail(t, "a tensor in a set that the trace did not read");
}
