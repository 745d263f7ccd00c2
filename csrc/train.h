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

/* Takes ownership of ag's arrays and backward graph (ag is cleared); the graph is compiled
 * with opt on the first backward call. New reference, or NULL with a Python exception. */
/* detach: the forward graph's stop-gradient values (ic_graph_grad_plain) for double backward's
 * eager replay of it, a tuple of ints (stolen), NULL: no replay */
PyObject *tc_train_new(ic_autograd *ag, const ic_options *opt, int nfwd_in, int device_type, int device_index,
                       PyObject *detach);
/* outs[0 .. nout): the forward's outputs (new references; outs[j] for program outputs j are
 * replaced by the node's outputs); inputs[i]: forward input i (borrowed). 0, or -1 with a
 * Python exception. fwd_text: the forward graph's text (NULL: no eager replay for double
 * backward); mutated[input_src[i]]: forward input i was updated in place by the frame (NULL:
 * none). dirty[j] (NULL, or NULL entries: none; borrowed): the tensor that program output j's
 * value was copied into (an in-place update of the frame's): it comes back in output j's
 * place, marked dirty, its history the update's (torchc/_autograd.py Write;
 * dynamo_hook/train_inplace_store.c) */
int tc_train_attach(PyObject *train, PyObject **outs, int nout, PyObject *const *inputs, const char *fwd_text,
                    const unsigned char *mutated, const int *input_src, PyObject *const *dirty);
/* for explain(): backward graph text (malloc'd), saved bytes, number of backward ops,
 * whether the backward is compiled yet (it is compiled on the first backward call) */
char *tc_train_describe(PyObject *train, long long *saved_bytes, int *bwd_ops, int *nsaved, int *compiled);
/* non-NULL (the reason) once a backward of this graph ran with create_graph=True: the
 * entry then runs its frame eagerly */
const char *tc_train_eager_reason(PyObject *train);
/* 1 if cls is a subclass of torch.autograd.Function (user code: its forward and backward
 * run eagerly, at a graph break), else 0; never raises */
int tc_is_autograd_function(PyObject *cls);
/* 1 if obj is an autograd.Function ctx (a frame of a custom forward/backward), else 0 */
int tc_is_autograd_ctx(PyObject *obj);
/* backward graphs compiled so far (torchc._C.stats()["backward_compiles"]) */
unsigned long long tc_train_backward_compiles(void);
/* torchc.scan (csrc/scan.c): the maps, the compiled backward (NULL: none) and its inputs'
 * metas, borrowed (alive with the capsule). NULL with an exception if train is not one. */
const ic_autograd *tc_train_parts(PyObject *train, const ic_compiled **bwd, const ic_meta **in_meta,
                                  int *device_type);

/* torch's current CUDA stream of a device: 0, or -1 with a Python exception */
int tc_cuda_current_stream(int device, void **stream);

#endif
