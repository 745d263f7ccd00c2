/* scan.h — torchc.scan's C side (csrc/scan.c; owner: manifolds).
 *
 * torchc.scan(fn, init, xs) compiles the body fn once and runs it as a loop in C: no Python
 * and no graph capture per step, so compile time does not depend on the sequence length.
 *
 *   probe:  torchc/_scan.py calls the torchc-compiled body once on step 0 with the probe slot
 *           set; dh_entry_run (dynamo_hook/eval_frame.c) hands the entry that ran to
 *           tc_scan_probe_record: its compiled forward graph, the tensors bound to the graph
 *           inputs, the graph outputs and, in training, the compiled backward (csrc/train.c).
 *   loop:   _C._scan_loop runs the forward graph (steps 1 .. T-1) or the backward graph
 *           (steps T-1 .. 0, backpropagation through time) with each input/output at a
 *           per-step address base + ((t + off) mod m) * step, plus per-step adds/copies
 *           (carry-gradient accumulation, parameter-gradient sums), GIL released.
 * Prefix tc_scan_. */
#ifndef TC_SCAN_H
#define TC_SCAN_H

#include <Python.h>
#include <stdint.h>

#include "ic.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_scan_probe tc_scan_probe;
/* set by _C._scan_probe around the probe call; dh_entry_run records into it (and clears it) */
#ifndef __cplusplus
extern _Thread_local tc_scan_probe *tc_scan_tl_probe;
#endif

/* The entry that ran: func (the frame's function), c (its compiled forward, owned by the
 * entry, which is pinned until the record dies: unpin(entry) then), the graph inputs'
 * tensors and the graph outputs (after the autograd attach), train (csrc/train.h) or NULL,
 * the symbol values of a dynamic graph, why the loop cannot run it (NULL if it can) and the
 * graph's text (for the persistent CUDA kernel, gpu_scan.c).
 * Clears tc_scan_tl_probe. 0, or -1 with an exception (the caller unpins). */
int tc_scan_probe_record(PyObject *func, void *entry, void (*unpin)(void *), const ic_compiled *c,
                         int ninputs, PyObject *const *inputs, int nout, PyObject *const *outs,
                         PyObject *train, int nsyms, const int64_t *symvals, const char *why_not,
                         const char *graph_text);

/* Adds _scan_probe, _scan_info and _scan_loop to module. 0, or -1 with an exception. */
int tc_scan_init(PyObject *module);

#ifdef __cplusplus
}
#endif
#endif
