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
