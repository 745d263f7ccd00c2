/* sideeffects.c — the trace's side-effect state, and undoing it for a call that turns into
 * a graph break.
 *
 * When the top frame calls a function, the call is traced inline. If something deep inside
 * it is unsupported, the top frame stops at the call: the graph holds what came before and
 * the call runs eagerly. Anything the abandoned inline trace logged (attribute writes
 * replayed after the graph, in-place tensor updates written back, dict/list updates rebound
 * into the live frames, context variables set) describes effects that the eager call will
 * now have itself; kept, they would happen twice (GPT-Neo's KV cache concatenated twice per
 * layer). sym_fx_save before the call, sym_fx_rollback when it becomes the break. Its
 * random draws (and custom ops) are dropped by every break, whatever the instruction
 * (symbolic.c sym_record_break_state).
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
    m->nngleaf = t->nngleaf;
    m->nchk = t->nchk;
    m->nguards = t->nguards;
    m->nsrc = t->nsrc;
    m->ntobj = t->ntobj;
    if (t->nlazy > 0 && t->nguards > 0) {
        m->lazy = malloc(sizeof(int) * (size_t)t->nguards);
        if (m->lazy == NULL)
            goto nomem;
        for (int i = 0; i < t->nguards; i++)
            m->lazy[i] = t->guards[i].lazy;
    }
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
        m->ctxv = malloc(sizeof t->ctxv[0] * (size_t)t->nctxv);
        if (m->ctxv == NULL)
            goto nomem;
        memcpy(m->ctxv, t->ctxv, sizeof t->ctxv[0] * (size_t)t->nctxv);
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
    free(m->lazy);
    m->attrw = m->obj_val = m->ctxv = NULL;
    m->lazy = NULL;
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
    /* inputs first read by the abandoned call (a parameter's .grad that GradScaler's unscale_
     * multiplied in place) take their input value back: the eager call updates them itself */
    for (int i = 0, node = 0; i < t->ninputs; i++, node++) {
        while (node < ic_graph_num_values(t->g) && ic_value_op(t->g, node) != IC_OP_INPUT)
            node++;
        int oid = t->input_oid[i];
        if (oid > m->nobj && oid <= t->nobj && node < ic_graph_num_values(t->g))
            t->obj_val[oid] = node;
    }
    t->nctxv = m->nctxv;
    if (m->ctxv != NULL) /* t->ctxv only grows: room for m->nctxv */
        memcpy(t->ctxv, m->ctxv, sizeof t->ctxv[0] * (size_t)m->nctxv);
    t->nograd = m->nograd;
    t->nngleaf = m->nngleaf;
    /* its index checks: the call runs eagerly, which checks its indices itself; kept, they
     * were graph outputs that kept the call's traced ops alive in the graph before it */
    t->nchk = m->nchk;
    /* (the abandoned call's random draws are dropped by the break: sym_record_break_state) */
    sym_fx_drop(m);
}

/* A call that becomes the top frame's graph break runs eagerly: the graph keeps nothing of
 * its abandoned trace that is live (its nodes are dead, its logged effects rolled back), so
 * what that trace alone read need not hold for the entry to be right. Its guards on the
 * sources it made (closure contents, attributes of what it was passed, its inlined callees'
 * code, defaults and globals) and its branch guards on dynamic ints are dropped: a recursion
 * that breaks where inlining stops (inline_depth) gets one entry per frame state, not one per
 * outcome of the levels it tried to inline. Kept: guards on sources made before the call,
 * guards of graph inputs the call read (TENSOR_MATCH: the compiled graph still takes them),
 * global-state guards. Those sources are forgotten (srcdone), as if never read. The lazy
 * guards of earlier values that the abandoned trace counted (a use as a constant, past the
 * INT_EXPR cap in its branches) are lazy again: the break counts what its state reads. */
void sym_fx_drop_guards(trace *t, const sym_fx_mark *m) {
    if (!m->valid || m->nguards > t->nguards || m->nsrc > t->nsrc)
        return;
    for (int i = 0; m->lazy != NULL && i < m->nguards; i++) {
        dh_guard *g = &t->guards[i];
        if (m->lazy[i] == 0 || g->lazy != 0)
            continue;
        g->lazy = m->lazy[i];
        t->nlazy++;
        if (g->src >= 0 && g->src < t->capsrc && t->srcdone[g->src] == 1)
            t->srcdone[g->src] = 2;
    }
    int k = m->nguards;
    for (int i = m->nguards; i < t->nguards; i++) {
        dh_guard *g = &t->guards[i];
        int mine = g->src < 0 ? g->kind == DH_G_INTEXPR : g->src >= m->nsrc;
        int pure = g->kind == DH_G_ID || g->kind == DH_G_CONST || g->kind == DH_G_TYPE ||
                   g->kind == DH_G_LEN || g->kind == DH_G_KEY || g->kind == DH_G_HASATTR ||
                   g->kind == DH_G_KEY_ORDER || g->kind == DH_G_ITERLEN || g->kind == DH_G_INTEXPR;
        if (mine && pure) {
            if (g->lazy)
                t->nlazy--;
            dh_guard_clear(g);
            continue;
        }
        t->guards[k++] = *g;
    }
    t->nguards = k;
    for (int s = m->nsrc; s < t->nsrc && s < t->capsrc; s++) {
        int input = 0;
        for (int i = 0; i < t->ninputs && !input; i++)
            input = t->input_src[i] == s;
        for (int i = 0; i < t->nguards && !input; i++) /* a guard kept on it */
            input = t->guards[i].src == s;
        if (!input)
            t->srcdone[s] = 0;
    }
    if (t->ntobj > m->ntobj)
        t->ntobj = m->ntobj;
}

void sym_fx_free(trace *t) {
    free(t->idx_src);
    free(t->idx_bound);
    free(t->idx_gather);
    t->idx_src = NULL;
    t->idx_bound = NULL;
    t->idx_gather = NULL;
    t->nidx = t->capidx = 0;
    free(t->undo);
    t->undo = NULL;
    t->nundo = t->capundo = 0;
    free(t->attrw);
    t->attrw = NULL;
    t->nattrw = t->capattrw = 0;
    free(t->ctxv);
    t->ctxv = NULL;
    t->nctxv = t->capctxv = 0;
    free(t->realcells);
    t->realcells = NULL;
    t->nrealcells = t->caprealcells = 0;
    free(t->leaf_oid);
    free(t->ngleaf_oid);
    t->leaf_oid = t->ngleaf_oid = NULL;
    t->nleaf = t->capleaf = t->nngleaf = t->capngleaf = 0;
    free(t->tobj_src);
    free(t->tobj);
    t->tobj_src = NULL;
    t->tobj = NULL;
    t->ntobj = t->captobj = 0;
}

sym_attrw *sym_attrw_new(trace *t) {
    if (t->nattrw == t->capattrw) {
        int cap = t->capattrw ? 2 * t->capattrw : 16;
        sym_attrw *a = realloc(t->attrw, (size_t)cap * sizeof *a);
        if (a == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        t->attrw = a;
        t->capattrw = cap;
    }
    sym_attrw *r = &t->attrw[t->nattrw++];
    memset(r, 0, sizeof *r);
    return r;
}

int sym_tobj_add(trace *t, int src, PyObject *o) {
    if (t->ntobj == t->captobj) {
        int cap = t->captobj ? 2 * t->captobj : 16;
        int *s = realloc(t->tobj_src, (size_t)cap * sizeof *s);
        if (s == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->tobj_src = s;
        PyObject **o2 = realloc(t->tobj, (size_t)cap * sizeof *o2);
        if (o2 == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->tobj = o2;
        t->captobj = cap;
    }
    t->tobj_src[t->ntobj] = src;
    t->tobj[t->ntobj++] = o;
    return 0;
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

static int is_writeback(trace *t, int i) {
    PyObject *m = t->attrw[i].name; /* a ("list[:]",) / ("dict",) marker: not a ("global", name)
                                     * nor an ("advance",) of an iterator */
    return PyTuple_Check(m) && PyTuple_GET_SIZE(m) == 1 && t->attrw[i].obj != NULL &&
           (PyList_CheckExact(t->attrw[i].obj) || PyDict_CheckExact(t->attrw[i].obj) ||
            sym_data_is_defaultdict(t->attrw[i].obj));
}

int sym_fx_container_write(trace *t, const var *c) {
    if (c->src < 0)
        return 0;
    int is_dict = c->kind == V_DICT;
    PyObject *o = c->src < t->capsrc ? t->srcobj[c->src] : NULL;
    if (o == NULL || (is_dict ? !(PyDict_CheckExact(o) || sym_data_is_defaultdict(o)) : !PyList_CheckExact(o)))
        return sym_fail(t, "update of a %s passed in that the trace can't write back",
                        is_dict ? "dict" : "list");
    if (t->in_gen)
        return sym_fail(t, "update of a %s passed in, inside a generator", is_dict ? "dict" : "list");
    for (int i = 0; i < t->nattrw; i++)
        if (is_writeback(t, i) && t->attrw[i].src == c->src)
            return 0; /* registered: its val is rebound with every update */
    PyObject *m = marker_of(is_dict);
    var *v = sym_alloc(t, 1);
    sym_attrw *w = m && v ? sym_attrw_new(t) : NULL;
    if (w == NULL)
        return -1;
    *v = *c;
    v->src = -1; /* rebuilt as a new list/dict: the contents to write back */
    w->src = c->src;
    w->obj = o;
    w->name = m;
    w->val = v;
    return 0;
}

void sym_fx_rebind_sources(trace *t, const var *old_items, const var *nv) {
    /* every source holding the value: a written one and those read as the same object */
    for (int s = 0; s < t->nsrc && s < t->capsrc; s++) {
        if (!t->srcdone[s])
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
        if (o == NULL || !(PyList_CheckExact(o) || PyDict_CheckExact(o) || sym_data_is_defaultdict(o)))
            continue;
        for (int i = 0; i < t->nattrw; i++)
            if (is_writeback(t, i) && t->attrw[i].obj == o && t->attrw[i].src != s &&
                t->srcvar[s].src != t->attrw[i].src) /* not one value read twice (sym_wrap) */
                return sym_fail(t, "a %s updated in the trace is reachable twice from the inputs",
                                Py_TYPE(o)->tp_name);
        if (sym_tobj_add(t, s, o) < 0)
            return -1;
    }
    return 0;
}

int dh_replay_container(PyObject *obj, PyObject *marker_name, PyObject *val) {
    if (PyTuple_Check(marker_name) && PyTuple_GET_SIZE(marker_name) == 1 &&
        PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(marker_name, 0), "advance") == 0)
        return dh_replay_advance(obj, val); /* an iterator passed in (obj_iter.c) */
    if (PyTuple_Check(marker_name) && PyTuple_GET_SIZE(marker_name) >= 1 &&
        PyUnicode_Check(PyTuple_GET_ITEM(marker_name, 0))) {
        PyObject *k = PyTuple_GET_ITEM(marker_name, 0);
        if (PyTuple_GET_SIZE(marker_name) == 1 && PyUnicode_CompareWithASCIIString(k, "contents") == 0)
            return 0; /* a dict-subclass's contents as the trace read them (obj_dict.c) */
        if (PyTuple_GET_SIZE(marker_name) == 2 && PyUnicode_CompareWithASCIIString(k, "call") == 0)
            return dh_replay_call(obj, PyTuple_GET_ITEM(marker_name, 1), val); /* obj_dict.c */
    }
    if (PyDict_Check(obj) && PyTuple_Check(marker_name) && PyTuple_GET_SIZE(marker_name) == 2) { /* a global */
        if (val == sym_attr_deleted_marker()) /* DELETE_GLOBAL (sym_attr.c): bound, as guarded */
            return PyDict_DelItem(obj, PyTuple_GET_ITEM(marker_name, 1));
        return PyDict_SetItem(obj, PyTuple_GET_ITEM(marker_name, 1), val);
    }
    if (PyList_CheckExact(obj) && (PyList_Check(val) || PyTuple_Check(val)))
        return PyList_SetSlice(obj, 0, PY_SSIZE_T_MAX, val);
    if ((PyDict_CheckExact(obj) || sym_data_is_defaultdict(obj)) && PyDict_Check(val)) {
        PyDict_Clear(obj);
        return PyDict_Update(obj, val);
    }
    PyErr_Format(PyExc_RuntimeError, "torchc: cannot write back %R into a %s", marker_name,
                 Py_TYPE(obj)->tp_name);
    return -1;
}

/* ---- STORE_GLOBAL ---------------------------------------------------------------------
 * A write to a module global is a side effect the caller sees: logged in t->attrw like an
 * attribute write, on the globals dict of the frame (a DH_S_GLOBAL source of index 1: the
 * dict itself), with a ("global", name) marker for a name; replayed after the graph in
 * program order (dh_replay_container). LOAD_GLOBAL of the name later in the trace reads the
 * logged value (sym_fx_global_read). */

static int is_global_marker(PyObject *m) {
    return m != NULL && PyTuple_CheckExact(m) && PyTuple_GET_SIZE(m) == 2 &&
           PyUnicode_Check(PyTuple_GET_ITEM(m, 0)) &&
           PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(m, 0), "global") == 0;
}

int sym_fx_global_read(trace *t, PyObject *globals, PyObject *name, var *out) {
    for (int i = t->nattrw - 1; i >= 0; i--)
        if (t->attrw[i].obj == globals && is_global_marker(t->attrw[i].name) &&
            PyUnicode_Compare(PyTuple_GET_ITEM(t->attrw[i].name, 1), name) == 0) {
            if (sym_attr_is_deleted(t->attrw[i].val)) /* deleted in the trace (DELETE_GLOBAL) */
                return sym_raise(t, PyExc_NameError, name, "global %U deleted in the trace (eager will raise)", name);
            *out = *t->attrw[i].val;
            sym_resolve(t, out);
            return 1;
        }
    return 0;
}

int sym_fx_store_global(trace *t, PyObject *globals, int func_src, int top, PyObject *name,
                        const var *val) {
    if (t->in_gen) /* a generator runs to completion: eager may stop it before this */
        return sym_fail(t, "global assignment inside a generator");
    if (val->kind == V_FUNC && (val->op == SYM_MADE_FUNCTION || val->op == SYM_PARTIAL))
        return sym_fail(t, "storing a nested function in a global");
    if (!top && func_src < 0 && globals != t->globals)
        return sym_fail(t, "global %U of a function reached without a source", name);
    int s = sym_source(t, DH_S_GLOBAL, top ? -1 : func_src, 1, name);
    if (s < 0)
        return -1;
    var *v = sym_alloc(t, 1);
    if (v == NULL)
        return -1;
    *v = *val;
    for (int i = 0; i < t->nattrw; i++)
        if (t->attrw[i].obj == globals && is_global_marker(t->attrw[i].name) &&
            PyUnicode_Compare(PyTuple_GET_ITEM(t->attrw[i].name, 1), name) == 0) {
            t->attrw[i].val = v; /* the last write wins; its place in the order is the first */
            return 0;
        }
    PyObject *m = Py_BuildValue("(sO)", "global", name);
    sym_attrw *w = m && sym_keep(t, m) ? sym_attrw_new(t) : NULL;
    if (w == NULL)
        return -1;
    w->src = s;
    w->obj = globals;
    w->name = m;
    w->val = v;
    return 0;
}
