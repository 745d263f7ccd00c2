/* matrix_exp.h — the matrix exponential, its vector-Jacobian product and the linear solve of
 * the Cayley map, on ATen tensors (matrix_exp.cpp). Two users:
 *   - the extern nodes IC_EXT_MATRIX_EXP / MATRIX_EXP_VJP / SOLVE of a compiled graph
 *     (aten_bridge.cpp's run_extern calls tc_linalg_extern);
 *   - torchc.manifolds, through the functions tc_matrix_exp_init adds to torchc._C
 *     (matrix_exp, matrix_exp_save, matrix_exp_vjp), which its torch.autograd.Function uses.
 * Prefix tc_. */
#ifndef TORCHC_MATRIX_EXP_H
#define TORCHC_MATRIX_EXP_H

#include <Python.h>

#ifdef __cplusplus
#include <ATen/ATen.h>
/* out (contiguous, allocated by the caller) = the extern `kind` of in[0..nin) with params p.
 * Throws std::exception on failure (run_extern's caller turns it into an ic_err). */
void tc_linalg_extern(int kind, const at::Tensor *in, int nin, const int64_t *p, int np, at::Tensor &out);
extern "C" {
#endif

/* Adds matrix_exp, matrix_exp_save and matrix_exp_vjp to `module`. 0, or -1 with an
 * exception set. */
int tc_matrix_exp_init(PyObject *module);

#ifdef __cplusplus
}
#endif
#endif
