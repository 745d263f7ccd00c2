/* train_mutbuf.c — buffers of in-place updates kept between runs (owner: training; issue 22,
 * deliverable 7: compiled optimizer steps).
 *
 * A graph that updates inputs in place (an optimizer step: every parameter and state tensor)
 * computes each new value into a graph output that is then copied into the input. A fresh
 * CPU output of a parameter's size costs more than the update itself: the allocator hands
 * back pages that fault on first touch (measured: 1.9M float parameters, SGD with momentum,
 * one thread: 7-12 ms of allocation and first touch a step, against ~1 ms for one in-place
 * pass of eager). An output that only feeds such a copy (no user output, no autograd node,
 * no probe refers to it) is therefore kept by the entry after the copy and handed back to
 * the next run of the same entry, whose kernels overwrite it whole. Static CPU graphs only
 * (CUDA's caching allocator already reuses blocks; a dynamic graph's sizes vary). A buffer
 * still referenced elsewhere after the run (refcount > 1) is not kept.
 */
#include "dh_internal.h"

/* 1 if graph output j of e only feeds the copy-back of an in-place update */
static int mut_only(const dh_entry *e, int j) {
    int fed = 0;
    for (int i = 0; i < e->nmut; i++)
        fed |= e->mut_from[i] == j;
    if (!fed)
        return 0;
    for (int k = 0; k < e->nouts; k++)
        if (e->outs[k].kind == DH_O_GRAPH && e->outs[k].index == j)
            return 0;
    for (int k = 0; k < e->nchk; k++)
        if (e->chk_out[k] == j)
            return 0;
    return 1;
}

static int usable(const dh_entry *e) {
    return e->nmut > 0 && e->train == NULL && e->nsyms == 0 && e->device_type != TC_DEV_CUDA &&
           e->backend_fn == NULL && e->compiled != NULL;
}

PyObject *dh_mutbuf_take(dh_entry *e, int j) {
    if (e->mutbuf == NULL || j >= e->nmutbuf)
        return NULL;
    PyObject *t = e->mutbuf[j];
    e->mutbuf[j] = NULL;
    return t;
}

void dh_mutbuf_keep(dh_entry *e, PyObject **outs, int nout) {
    if (!usable(e))
        return;
    if (e->mutbuf == NULL) {
        e->mutbuf = calloc((size_t)nout + 1, sizeof *e->mutbuf);
        e->mutbuf_ok = calloc((size_t)nout + 1, 1);
        if (e->mutbuf == NULL || e->mutbuf_ok == NULL) { /* an optimization only: none kept */
            free(e->mutbuf);
            free(e->mutbuf_ok);
            e->mutbuf = NULL;
            e->mutbuf_ok = NULL;
            return;
        }
        e->nmutbuf = nout;
        for (int j = 0; j < nout; j++)
            e->mutbuf_ok[j] = (unsigned char)mut_only(e, j);
    }
    for (int j = 0; j < nout && j < e->nmutbuf; j++)
        if (e->mutbuf_ok[j] && outs[j] != NULL && e->mutbuf[j] == NULL && Py_REFCNT(outs[j]) == 1) {
            e->mutbuf[j] = outs[j];
            outs[j] = NULL;
        }
}

void dh_mutbuf_free(dh_entry *e) {
    for (int j = 0; e->mutbuf != NULL && j < e->nmutbuf; j++)
        Py_XDECREF(e->mutbuf[j]);
    free(e->mutbuf);
    free(e->mutbuf_ok);
    e->mutbuf = NULL;
    e->mutbuf_ok = NULL;
    e->nmutbuf = 0;
}
