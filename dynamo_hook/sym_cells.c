/* sym_cells.c — cell variables written after a closure over them was made.
 *
 * A closure made by MAKE_FUNCTION holds the values of the cells it captures (its items,
 * shared by every copy of the function value, and read by its frames through f->closure).
 * Eager's cell is one object that the closure and the making frame share: a later write by
 * the frame is seen by the closure. So every closure is registered with the frame owning
 * each cell it captures (a free variable passed on to a nested closure registers that one
 * with the owner too), and a STORE_DEREF writes the value into the items of each
 * registered closure as well. Swin-style code writes `x = f(x)` after a comprehension over
 * x; a lambda called before and after its variable changes sees both values.
 *
 * Requires: closures of this trace only (a real function's cells belong to frames outside
 *   the trace, which never write them while it runs; writes to free variables fail).
 * Keeps: the items pointer of a made function (copied once at MAKE_FUNCTION).
 * Breaks: nothing; a frame with more captures than cellrefs holds, or a generator frame
 *   (suspended, its closures' owners may be gone from the frame stack), fails the write as
 *   before. */
#include "sym_interp.h"

#define NREFS ((int)(sizeof(((sframe *)0)->cellrefs) / sizeof(((sframe *)0)->cellrefs[0])))

static int same_name(PyObject *a, PyObject *b) {
    if (a == b)
        return 1;
    return PyUnicode_Check(a) && PyUnicode_Check(b) && PyUnicode_Compare(a, b) == 0;
}

static void add(sframe *f, var *items, int k, PyObject *name) {
    if (f->ncellrefs >= NREFS) {
        f->cellrefs_full = 1;
        return;
    }
    f->cellrefs[f->ncellrefs].items = items;
    f->cellrefs[f->ncellrefs].k = k;
    f->cellrefs[f->ncellrefs].name = name;
    f->ncellrefs++;
}

/* Closure item k of a made function is the real cell at source src (a DH_S_CELL): eager's
 * function shares that cell with the function whose free variable it is, and so does the
 * one built where it leaves the trace (sym_output.c made_function). Full or out of memory:
 * not registered, the item gets a fresh cell as before (the break checks then apply). */
static void real_add(trace *t, var *items, int k, int src) {
    if (t->nrealcells == t->caprealcells) {
        int cap = t->caprealcells ? 2 * t->caprealcells : 8;
        struct sym_realcell *n = realloc(t->realcells, (size_t)cap * sizeof *n);
        if (n == NULL)
            return;
        t->realcells = n;
        t->caprealcells = cap;
    }
    t->realcells[t->nrealcells].items = items;
    t->realcells[t->nrealcells].k = k;
    t->realcells[t->nrealcells].src = src;
    t->nrealcells++;
}

int sym_cells_real(trace *t, const var *items, int k) {
    for (int i = 0; i < t->nrealcells; i++)
        if (t->realcells[i].items == items && t->realcells[i].k == k)
            return t->realcells[i].src;
    return -1;
}

int sym_cells_made(trace *t, sframe *f, PyCodeObject *code, var *items, int n) {
    /* the code's free variables: the last co_nfreevars of its localsplus names */
    PyObject *cn = code->co_localsplusnames;
    int nfv = code->co_nfreevars, base = (int)PyTuple_GET_SIZE(cn) - nfv;
    if (nfv != n || base < 0)
        return sym_fail(t, "closure size mismatch");
    PyObject *names = f->code->co_localsplusnames;
    int first_free = f->nlocals - f->code->co_nfreevars;
    for (int k = 0; k < n; k++) {
        PyObject *name = PyTuple_GET_ITEM(cn, base + k);
        int j = -1;
        for (int i = 0; i < (int)PyTuple_GET_SIZE(names) && i < f->nlocals; i++)
            if (same_name(PyTuple_GET_ITEM(names, i), name)) {
                j = i;
                break;
            }
        if (j < 0)
            return sym_fail(t, "closure variable %R not found in the making frame", name);
        if (j < first_free) { /* a cell of f */
            add(f, items, k, name);
            continue;
        }
        /* f's own free variable passed on: the frames owning it (they registered f's
         * closure under this name) own the new closure's item too */
        if (f->closure == NULL) {
            /* a real function's cell, owned outside the trace: the new closure holds that
             * very cell (the traced function's, or an inlined one's reached by a source) */
            if (f->top || f->func_src >= 0) {
                int s = sym_source(t, DH_S_CELL, f->top ? -1 : f->func_src, j - first_free, NULL);
                if (s < 0)
                    return -1;
                real_add(t, items, k, s);
            }
            continue;
        }
        {
            int s = sym_cells_real(t, f->closure, j - first_free);
            if (s >= 0)
                real_add(t, items, k, s);
        }
        for (int d = 0; d < t->nframes; d++) {
            sframe *o = t->frames[d];
            if (o == f)
                continue;
            int n0 = o->ncellrefs;
            for (int r = 0; r < n0; r++)
                if (o->cellrefs[r].items == f->closure && o->cellrefs[r].k == j - first_free &&
                    same_name(o->cellrefs[r].name, name)) {
                    add(o, items, k, name);
                    break;
                }
        }
    }
    return 0;
}

int sym_cells_store(trace *t, sframe *f, int i, const var *v) {
    if (!f->made_closure)
        return 0;
    if (f->gen || f->cellrefs_full)
        return sym_fail(t, "a captured variable changes after its closure was made");
    PyObject *name = PyTuple_GET_ITEM(f->code->co_localsplusnames, i);
    for (int r = 0; r < f->ncellrefs; r++)
        if (same_name(f->cellrefs[r].name, name))
            f->cellrefs[r].items[f->cellrefs[r].k] = *v;
    return 0;
}

/* STORE_DEREF of free variable k in a made closure's frame (nonlocal x; x = v): the frame
 * of the trace owning the cell (it registered this closure under the name) gets the value,
 * and with it every closure over the cell (nn.Module._call_impl's inner() writes result,
 * args, kwargs). No owner in the trace (a real function's cell, or its frame returned):
 * fails as before. */
int sym_cells_store_free(trace *t, sframe *f, int k, const var *v) {
    if (f->closure == NULL || k < 0 || k >= f->nclosure)
        return sym_fail(t, "write to a nonlocal variable of a function outside the trace");
    PyObject *cn = f->code->co_localsplusnames;
    PyObject *name = PyTuple_GET_ITEM(cn, PyTuple_GET_SIZE(cn) - f->code->co_nfreevars + k);
    for (int d = t->nframes - 1; d >= 0; d--) {
        sframe *o = t->frames[d];
        if (o == f)
            continue;
        for (int r = 0; r < o->ncellrefs; r++) {
            if (o->cellrefs[r].items != f->closure || o->cellrefs[r].k != k ||
                !same_name(o->cellrefs[r].name, name))
                continue;
            int first_free = o->nlocals - o->code->co_nfreevars;
            PyObject *on = o->code->co_localsplusnames;
            for (int j = 0; j < first_free && j < (int)PyTuple_GET_SIZE(on); j++) {
                if (!same_name(PyTuple_GET_ITEM(on, j), name))
                    continue;
                if (o->gen || o->cellrefs_full)
                    return sym_fail(t, "a captured variable changes after its closure was made");
                o->locals[j] = *v;
                f->closure[k] = *v;
                return sym_cells_store(t, o, j, v);
            }
        }
    }
    return sym_fail(t, "write to a nonlocal variable of a frame outside the trace");
}
