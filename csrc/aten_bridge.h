/* aten_bridge.h — the C face of the only C++ file (aten_bridge.cpp): tensor metadata,
 * allocation and ATen calls, behind extern "C". Prefix tc_. */
#ifndef TC_ATEN_BRIDGE_H
#define TC_ATEN_BRIDGE_H

#include <Python.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TC_MAX_DIMS 8

/* Device kinds as the bridge reports them. */
enum { TC_DEV_CPU = 0, TC_DEV_CUDA = 1, TC_DEV_OTHER = 2 };

/* Metadata of one tensor, read without touching Python. dtype uses ic_dtype numbering
 * (inductor_c/ic.h); -1 for a dtype torchc does not know (complex, quantized, ...). */
typedef struct tc_meta {
    int dtype;
    int device_type;
    int device_index;
    int ndim;
    int requires_grad;
    int flags;            /* TC_META_* */
    int64_t sizes[TC_MAX_DIMS];
    int64_t strides[TC_MAX_DIMS];
    void *data;           /* data_ptr (storage offset applied) */
} tc_meta;

enum {
    TC_META_TOO_MANY_DIMS = 1, /* ndim > TC_MAX_DIMS: sizes not filled */
    TC_META_SPECIAL = 2,       /* sparse/quantized/nested/meta/mkldnn/tensor subclass: unsupported */
    TC_META_TRANSFORM = 4      /* a torch.func wrapper (vmap/grad/jvp/functionalize), a tensor without
                                * storage, or a forward-AD dual (a tangent at level 0): eager only */
};

/* 1 if o is a torch.Tensor (or subclass), else 0. Never fails. */
int tc_is_tensor(PyObject *o);
/* torchc.scan: the loop constants' addresses while a C loop runs on this thread (NULL, 0: the
 * loop ended; drops the GEMM operand copies made for them, see aten_bridge.cpp) */
void tc_scan_consts_set(const void *const *ptrs, int n);
/* 1 if exactly torch.Tensor or nn.Parameter (no user subclass). */
int tc_is_plain_tensor(PyObject *o);
int tc_is_cuda(PyObject *o); /* a tensor on a CUDA device */
/* Fills m. o must satisfy tc_is_tensor. Returns 0; never throws (a tensor ATen cannot describe
 * is reported TC_META_SPECIAL). */
int tc_tensor_meta(PyObject *o, tc_meta *m);
/* New reference to a fresh tensor, or NULL with a Python exception. */
PyObject *tc_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, int dtype,
                           int device_type, int device_index);
/* 1 while a torch.func transform (vmap, grad, jvp, functionalize) is active on this thread. */
int tc_transform_active(void);
/* 1 while a TorchFunctionMode is on this thread's (real) mode stack. */
int tc_torch_function_mode_active(void);
/* The only TorchFunctionMode on that stack (borrowed; the stack holds it), read without
 * running Python; NULL with *n its length (0: none or torch function disabled, > 1: several;
 * 1: it could not be read). */
PyObject *tc_torch_function_mode_single(int *n);
/* Data pointer of a tensor created by tc_empty_strided (or any tensor); NULL for a tensor
 * without storage (never throws). */
void *tc_data_ptr(PyObject *o);
int tc_grad_enabled(void);
void tc_set_grad_enabled(int on); /* the thread's grad mode, as torch._C._set_grad_enabled */
/* torch autocast state of CPU and CUDA as one int (0: autocast off everywhere) */
int tc_autocast_state(void);
/* 1 if every element of integer tensor idx is in [0, bound), 0 if not, -1 on error. */
int tc_index_in_range(PyObject *idx, int64_t bound);
/* torch.get_default_dtype() as an ic_dtype code */
int tc_default_dtype(void);
/* dst.copy_(src) without autograd; 0, or -1 with a Python exception. */
int tc_copy_(PyObject *dst, PyObject *src);
/* dst.copy_(src) without autograd and without bumping dst's version: a training graph's
 * in-place update, whose autograd node then marks dst dirty, which bumps it
 * (dynamo_hook/train_inplace_store.c). 0, or -1 with a Python exception. */
int tc_copy_quiet(PyObject *dst, PyObject *src);
/* 1 if eager's in-place op on tensor t under the current grad mode raises (a leaf that
 * requires grad, a view of one, a view whose base's history can't be rewritten: autograd's
 * check_inplace), where requires_grad tells whether the op records a gradient (t or another
 * operand requires grad); 0 if it runs. Never raises. */
int tc_inplace_refused(PyObject *t, int requires_grad);
/* n version-counter bumps of tensor t (what n in-place ops on it do in eager); 0, or -1 with
 * a Python exception (an inference tensor outside inference mode: eager's error) */
int tc_bump_version(PyObject *t, int n);
/* tensor t's version counter (t._version) into *v; 0, or -1 with a Python exception (an
 * inference tensor: eager's error) */
int tc_tensor_version(PyObject *t, int64_t *v);
/* torch.get_num_threads() */
int tc_num_threads(void);
/* Device scratch memory from PyTorch's allocator (caching allocator on CUDA): returns the
 * device pointer; *handle owns it until tc_device_release(handle). NULL on failure. */
void *tc_device_alloc(size_t bytes, int device, void *stream, void **handle);
void tc_device_release(void *handle);
/* The extern handler of inductor_c (ic_set_extern_handler): runs one extern call (mm, bmm,
 * matmul, addmm, linear, baddbmm, conv) with ATen on views of the buffers (from_blob), on
 * the call's device and torch's current stream. 0, or -1 with err filled; never throws. */
struct ic_extern_call;
struct ic_err;
int tc_extern_handler(const struct ic_extern_call *call, struct ic_err *err);
/* Eager's output strides of scaled_dot_product_attention(q, k, v, mask, 0, causal, scale) on
 * CUDA device `device`: the backend its dispatcher picks sets them (flash and memory-efficient
 * write [B, L, H, D] and return its transpose, cuDNN follows q, math is contiguous), so the op
 * runs once on uninitialized tensors of these metas (sizes and strides; mask NULL: none).
 * 0 with st (q's ndim entries) filled; -1 when it cannot tell (symbolic sizes, too large, an
 * error): never throws. */
struct ic_meta;
int tc_sdpa_out_strides(const struct ic_meta *q, const struct ic_meta *k, const struct ic_meta *v,
                        const struct ic_meta *mask, int causal, double scale, int device, int64_t *st);
/* The probe runs once per key (metas, causal, scale, device, the backend settings): runs of
 * the attention so far, and answers from the kept results. */
/* extern calls run through ATen, and ATen results copied into their buffers (run_extern) */
void tc_extern_copy_stats(unsigned long long *calls, unsigned long long *copies);
void tc_sdpa_probe_stats(unsigned long long *runs, unsigned long long *hits);
/* _C.sdpa_layout_probe(q, k, v, mask, causal, scale, device) for tests: tc_sdpa_out_strides on
 * the metas of these tensors, a tuple of strides or None. */
PyObject *tc_sdpa_layout_probe_py(PyObject *args);
/* Fills the name of torch's version / build (for cache keys). */
const char *tc_torch_version(void);

#ifdef __cplusplus
}
#endif
#endif
