/* probe.c — which cache entry would a call of a captured function take, without running it.
 *
 * Used by the CUDA graphs of torchc/_cudagraphs.py (mode="reduce-overhead"): a replay skips
 * the frame, so the wrapper asks here first whether the guards of the called frame still
 * pass, and for which entry (a recompile or a guard failure means another graph).
 *
 * Binds args/kwargs to the parameters of a plain Python function the way CPython fills a
 * frame that has not started (positional, then keywords, then defaults; cell and free
 * variable slots still empty), then runs the guard lists of the code's cache entries in
 * order, skipping entries captured under other compile options than the caller's (cfg, as
 * eval_frame.c does). Only reads: the cache order and hit counters are left alone.
 */
#include "dh_internal.h"

#include <string.h>


/* Fills ls[0..nargs) from args/kwargs/defaults. 0 ok, 1 cannot bind here (no error). */
static int bind(PyCodeObject *co, PyObject *func, PyObject *args, PyObject *kwargs, PyObject **ls) {
    int npos = co->co_argcount, nkwo = co->co_kwonlyargcount;
    if (co->co_flags & (CO_VARARGS | CO_VARKEYWORDS))
        return 1;
    Py_ssize_t na = PyTuple_GET_SIZE(args);
    if (na > npos)
        return 1;
    for (Py_ssize_t i = 0; i < na; i++)
        ls[i] = PyTuple_GET_ITEM(args, i);
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs, &pos, &k, &v)) {
            int found = -1;
            for (int i = co->co_posonlyargcount; i < npos + nkwo && found < 0; i++) {
                PyObject *name = PyTuple_GET_ITEM(co->co_localsplusnames, i);
                int eq = PyUnicode_Compare(name, k);
                if (eq == -1 && PyErr_Occurred()) {
                    (void)tc_clear_expected(PyExc_TypeError);
                    return 1;
                }
                if (eq == 0)
                    found = i;
            }
            if (found < 0 || ls[found] != NULL)
                return 1;
            ls[found] = v;
        }
    }
    PyObject *defs = PyFunction_GET_DEFAULTS(func);
    Py_ssize_t nd = defs ? PyTuple_GET_SIZE(defs) : 0;
    for (int i = 0; i < npos; i++)
        if (ls[i] == NULL) {
            if (i < npos - nd)
                return 1;
            ls[i] = PyTuple_GET_ITEM(defs, i - (npos - nd));
        }
    PyObject *kwdefs = PyFunction_GET_KW_DEFAULTS(func);
    for (int i = npos; i < npos + nkwo; i++)
        if (ls[i] == NULL) {
            PyObject *d = kwdefs ? PyDict_GetItemWithError(kwdefs, PyTuple_GET_ITEM(co->co_localsplusnames, i))
                                 : NULL;
            if (d == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return 1;
            }
            ls[i] = d;
        }
    return 0;
}

PyObject *dh_probe(PyObject *func, PyObject *args, PyObject *kwargs, const dh_config *cfg) {
    if (!PyFunction_Check(func) || !PyTuple_Check(args) || (kwargs && !PyDict_Check(kwargs)))
        Py_RETURN_NONE;
    PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(func);
    dh_cache *c = dh_cache_of(co);
    if (c == NULL) {
        if (tc_clear_expected(PyExc_Exception) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (c->skip || c->limit_hit || c->entries == NULL)
        Py_RETURN_NONE;
    PyObject **ls = calloc((size_t)co->co_nlocalsplus + 1, sizeof *ls);
    int nsrc = c->max_sources; /* the most sources of any entry */
    for (const dh_entry *e = c->entries; e != NULL; e = e->next)
        nsrc = e->nsources > nsrc ? e->nsources : nsrc;
    PyObject **values = calloc((size_t)nsrc + 1, sizeof *values);
    void **ptrs = calloc((size_t)nsrc + 1, sizeof *ptrs);
    PyObject *res = NULL;
    if (ls == NULL || values == NULL || ptrs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (bind(co, func, args, kwargs, ls) != 0) {
        res = PyErr_Occurred() ? NULL : Py_NewRef(Py_None); /* MemoryError stays set */
        memset(ls, 0, ((size_t)co->co_nlocalsplus + 1) * sizeof *ls);
        goto done;
    }
    /* held, as a frame holds its locals: the guards' Python may rebind what they came from
     * (the function's __defaults__, the kwargs dict) */
    for (int i = 0; i < co->co_nlocalsplus; i++)
        Py_XINCREF(ls[i]);
    int saved = dh_tl_busy;
    Py_ssize_t sbase = dh_scratch_enter(); /* its own part of the scratch list (guards.c) */
    dh_tl_busy = 1; /* custom getattr re-run by guards: never captured */
    const dh_entry *hit = NULL;
    int key = cfg ? dh_cfg_key(cfg) : 0;
    unsigned long epoch = dh_reset_epoch;
    for (dh_entry *e = c->entries, *next; e != NULL && hit == NULL; e = next) {
        if (cfg != NULL && (e->backend != cfg->backend || e->cfg_key != key)) {
            next = e->next;
            continue; /* captured under other options: eval_frame.c never runs it for cfg */
        }
        e->pins++; /* guards run Python: a reset on another thread frees no pinned entry */
        int r = dh_guards_check(e, (PyObject *const *)ls, PyFunction_GET_GLOBALS(func),
                                ((PyFunctionObject *)func)->func_builtins, func, values, ptrs);
        next = e->next; /* NULL once a reset unlinked e */
        int gone = dh_reset_epoch != epoch;
        dh_entry_unpin(e);
        if (gone || (r < 0 && tc_clear_expected(PyExc_Exception) < 0))
            break;
        if (r == 1)
            hit = e;
    }
    dh_tl_busy = saved;
    /* before the scratch list is cleared: a finalizer run there may reset, freeing hit */
    res = PyErr_Occurred() ? NULL : hit && !hit->fallback ? PyLong_FromVoidPtr((void *)hit) : Py_NewRef(Py_None);
    dh_scratch_leave(sbase);
done:
    for (int i = 0; ls != NULL && i < co->co_nlocalsplus; i++)
        Py_XDECREF(ls[i]);
    free(ls);
    free(values);
    free(ptrs);
    return res;
}
