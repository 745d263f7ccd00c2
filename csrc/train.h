/* train.h — the autograd node of compiled training graphs (csrc/train.c; owner: training).
 *
 * A training entry holds a "train" object (a capsule): the compiled backward graph and the
 * maps of ic_autograd (which forward inputs/outputs it reads, which program outputs carry a
 * gradient). After the compiled forward runs, tc_train_attach hands the outputs to
 * torchc._autograd (a torch.autograd.Function) so that they get a grad_fn whose backward
 * runs the compiled backward graph.
 */
#ifndef TC_TRAIN_H
#define TC_TRAIN_H

#include <Python.h>

#include "ic.h"

/* Takes ownership of ag's arrays (ag is cleared) and of bwd. New reference, or NULL with a
 * Python exception. */
PyObject *tc_train_new(ic_autograd *ag, ic_compiled *bwd, int nfwd_in, int device_type, int device_index);
/* outs[0 .. nout): the forward's outputs (new references; outs[j] for program outputs j are
 * replaced by the node's outputs); inputs[i]: forward input i (borrowed). 0, or -1 with a
 * Python exception. */
int tc_train_attach(PyObject *train, PyObject **outs, int nout, PyObject *const *inputs);
/* torchc.scan (csrc/scan.c): the maps, the compiled backward (NULL: none) and its inputs'
 * metas, borrowed (alive with the capsule). NULL with an exception if train is not one. */
const ic_autograd *tc_train_parts(PyObject *train, const ic_compiled **bwd, const ic_meta **in_meta,
                                  int *device_type);
/* for explain(): backward graph text (malloc'd), saved bytes, number of backward ops */
char *tc_train_describe(PyObject *train, long long *saved_bytes, int *bwd_ops, int *nsaved);

#endif
