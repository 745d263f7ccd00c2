/* sideeffects.c — the trace's side-effect state, and undoing it for a call that turns into
 * a graph break.
 *
 * When the top frame calls a function, the call is traced inline. If something deep inside
 * it is unsupported, the top frame stops at the call: the graph holds what came before and
 * the call runs eagerly. Anything the abandoned inline trace logged (attribute writes
 * replayed after the graph, in-place tensor updates written back, dict/list updates rebound
 * into the live frames, context variables set) describes effects that the eager call will
 * now have itself; kept, they would happen twice (GPT-Neo's KV cache concatenated twice per
 * layer). sym_fx_save before the call, sym_fx_rollback when it becomes the break.
 *
 * Requires: called only for the top frame (inlined frames never break, they fail).
 * Keeps: the graph (dead nodes of the abandoned call are not outputs), guards (extra
 * guards only specialise more), sources. */
#include "sym.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sym_undo {
    var *slot;
    var old;
};

void sym_fx_set(trace *t, var *slot, const var *nv) {
    if (t->nundo == t->capundo) {
        int cap = t->capundo ? 2 * t->capundo : 64;
        struct sym_undo *u = realloc(t->undo, (size_t)cap * sizeof *u);
        if (u == NULL) {
            /* no journal: no rollback possible, so no break may reuse this state */
            sym_fail(t, "out of memory journalling a container update");
            *slot = *nv;
            return;
        }
        t->undo = u;
        t->capundo = cap;
    }
    t->undo[t->nundo].slot = slot;
    t->undo[t->nundo].old = *slot;
    t->nundo++;
    *slot = *nv;
}

int sym_fx_save(trace *t, sym_fx_mark *m) {
    memset(m, 0, sizeof *m);
    m->nundo = t->nundo;
    m->nattrw = t->nattrw;
    m->nobj = t->nobj;
    m->nctxv = t->nctxv;
    m->nograd = t->nograd;
    if (t->nattrw > 0) {
        m->attrw = malloc(sizeof t->attrw[0] * (size_t)t->nattrw);
        if (m->attrw == NULL)
            goto nomem;
        memcpy(m->attrw, t->attrw, sizeof t->attrw[0] * (size_t)t->nattrw);
    }
    if (t->nobj > 0) {
        m->obj_val = malloc(sizeof(ic_val) * (size_t)t->nobj);
        if (m->obj_val == NULL)
            goto nomem;
        memcpy(m->obj_val, t->obj_val + 1, sizeof(ic_val) * (size_t)t->nobj);
    }
    if (t->nctxv > 0) {
        m->ctxv = malloc(sizeof t->ctxv);
        if (m->ctxv == NULL)
            goto nomem;
        memcpy(m->ctxv, t->ctxv, sizeof t->ctxv);
    }
    m->valid = 1;
    return 0;
nomem:
    sym_fx_drop(m);
    PyErr_NoMemory();
    return -1;
}

void sym_fx_drop(sym_fx_mark *m) {
    free(m->attrw);
    free(m->obj_val);
    free(m->ctxv);
    m->attrw = m->obj_val = m->ctxv = NULL;
    m->valid = 0;
}

void sym_fx_rollback(trace *t, sym_fx_mark *m) {
    if (!m->valid)
        return;
    for (int i = t->nundo - 1; i >= m->nundo; i--)
        *t->undo[i].slot = t->undo[i].old;
    t->nundo = m->nundo;
    t->nattrw = m->nattrw;
    if (m->nattrw > 0)
        memcpy(t->attrw, m->attrw, sizeof t->attrw[0] * (size_t)m->nattrw);
    /* objects made by the abandoned call stay (ids only grow), unreferenced */
    if (m->nobj > 0)
        memcpy(t->obj_val + 1, m->obj_val, sizeof(ic_val) * (size_t)m->nobj);
    t->nctxv = m->nctxv;
    if (m->ctxv != NULL)
        memcpy(t->ctxv, m->ctxv, sizeof t->ctxv);
    else
        memset(t->ctxv, 0, sizeof t->ctxv);
    t->nograd = m->nograd;
    sym_fx_drop(m);
}

void sym_fx_free(trace *t) {
    free(t->undo);
    t->undo = NULL;
    t->nundo = t->capundo = 0;
}

void sym_fx_moved(trace *t, uintptr_t old, size_t size, void *now) {
    if (old == 0 || old == (uintptr_t)now)
        return;
    for (int i = 0; i < t->nundo; i++) {
        uintptr_t p = (uintptr_t)t->undo[i].slot;
        if (p >= old && p < old + size)
            t->undo[i].slot = (var *)((char *)now + (p - old));
    }
}

void sym_fx_forget(trace *t, const void *mem, size_t size) {
    const char *lo = mem, *hi = lo + size;
    int k = 0;
    for (int i = 0; i < t->nundo; i++) {
        const char *p = (const char *)t->undo[i].slot;
        if (p >= lo && p < hi)
            continue;
        t->undo[k++] = t->undo[i];
    }
    t->nundo = k;
}

/* ---- caller-visible lists and dicts ------------------------------------------------
 * A list or dict read from the frame's inputs, globals or attributes (src >= 0) may be
 * mutated in the trace: the mutation is traced as for one made in the frame (every copy of
 * the var rebound, the source's cached var too), and a write-back entry in t->attrw (name: a
 * marker tuple, not a str) replays the final contents into the caller's object after the
 * graph, in program order with the attribute writes (eval_frame.c: dh_replay_container).
 * Outputs and break state hand on the object itself (fill_out: an unchanged source var).
 * The trace is only right when no other source reaches the same object: checked at the end
 * (sym_fx_containers_finish) and pinned by DH_G_SAMEOBJ. */

static PyObject *marker[2]; /* ("list[:]",) and ("dict",) */

static PyObject *marker_of(int is_dict) {
    if (marker[is_dict] == NULL)
        marker[is_dict] = Py_BuildValue("(s)", is_dict ? "dict" : "list[:]"); /* kept */
    return marker[is_dict];
}

static int is_writeback(trace *t, int i) { return !PyUnicode_Check(t->attrw[i].name); }

int sym_fx_container_write(trace *t, const var *c) {
    if (c->src < 0)
        return 0;
    int is_dict = c->kind == V_DICT;
    PyObject *o = c->src < t->capsrc ? t->srcobj[c->src] : NULL;
    if (o == NULL || (is_dict ? !PyDict_CheckExact(o) : !PyList_CheckExact(o)))
        return sym_fail(t, "update of a %s passed in that the trace can't write back",
                        is_dict ? "dict" : "list");
    if (t->in_gen)
        return sym_fail(t, "update of a %s passed in, inside a generator", is_dict ? "dict" : "list");
    for (int i = 0; i < t->nattrw; i++)
        if (is_writeback(t, i) && t->attrw[i].src == c->src)
            return 0; /* registered: its val is rebound with every update */
    if (t->nattrw >= 256)
        return sym_fail(t, "too many attribute writes");
    PyObject *m = marker_of(is_dict);
    var *v = sym_alloc(t, 1);
    if (m == NULL || v == NULL)
        return -1;
    *v = *c;
    v->src = -1; /* rebuilt as a new list/dict: the contents to write back */
    t->attrw[t->nattrw].src = c->src;
    t->attrw[t->nattrw].obj = o;
    t->attrw[t->nattrw].name = m;
    t->attrw[t->nattrw].val = v;
    t->nattrw++;
    return 0;
}

void sym_fx_rebind_sources(trace *t, const var *old_items, const var *nv) {
    for (int i = 0; i < t->nattrw; i++) {
        int s = t->attrw[i].src;
        if (!is_writeback(t, i) || s < 0 || s >= t->capsrc || !t->srcdone[s])
            continue;
        var *x = &t->srcvar[s];
        if (x->items == old_items && (x->kind == V_DICT || (x->kind == V_SEQ && x->is_list))) {
            var y = *nv;
            y.src = x->src;
            sym_fx_set(t, x, &y);
        }
    }
}

int sym_fx_containers_finish(trace *t) {
    int any = 0;
    for (int i = 0; i < t->nattrw; i++)
        any |= is_writeback(t, i);
    if (!any)
        return 0;
    /* every list/dict source: a written one must be reachable through one source only */
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++) {
        PyObject *o = t->srcdone[s] ? t->srcobj[s] : NULL;
        if (o == NULL || !(PyList_CheckExact(o) || PyDict_CheckExact(o)))
            continue;
        for (int i = 0; i < t->nattrw; i++)
            if (is_writeback(t, i) && t->attrw[i].obj == o && t->attrw[i].src != s)
                return sym_fail(t, "a %s updated in the trace is reachable twice from the inputs",
                                Py_TYPE(o)->tp_name);
        if (t->ntobj >= 256)
            return sym_fail(t, "too many objects in the trace");
        t->tobj_src[t->ntobj] = s;
        t->tobj[t->ntobj++] = o;
    }
    return 0;
}

int dh_replay_container(PyObject *obj, PyObject *marker_name, PyObject *val) {
    if (PyList_CheckExact(obj) && (PyList_Check(val) || PyTuple_Check(val)))
        return PyList_SetSlice(obj, 0, PY_SSIZE_T_MAX, val);
    if (PyDict_CheckExact(obj) && PyDict_Check(val)) {
        PyDict_Clear(obj);
        return PyDict_Update(obj, val);
    }
    PyErr_Format(PyExc_RuntimeError, "torchc: cannot write back %R into a %s", marker_name,
                 Py_TYPE(obj)->tp_name);
    return -1;
}
