/* ic_device.h — the GPU (CUDA) side of inductor_c's public API, beside ic.h.
 *
 * ic_compile(g, &opts, &err) with opts.device == IC_CUDA (opts.device_index = ordinal)
 * generates NVPTX kernels and loads them through the CUDA driver (libcuda opened with
 * dlopen at run time, never linked). Without a usable driver it fails with
 * IC_EUNSUPPORTED, so callers fall back to eager.
 *
 * Buffers: inputs/outputs are device pointers owned by the caller (PyTorch tensors).
 * Intermediates come from the allocator the caller registers (PyTorch's caching allocator
 * through csrc's bridge), so they are stream-ordered like PyTorch's own.
 */
#ifndef IC_DEVICE_H
#define IC_DEVICE_H

#include "ic.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ic_device_allocator {
    /* returns a device pointer of at least bytes (256-byte aligned) and an opaque handle */
    void *(*alloc)(size_t bytes, int device, void *stream, void **handle);
    void (*release)(void *handle);
} ic_device_allocator;

/* Registers the allocator for device intermediates (NULL: cuMemAlloc/cuMemFree). */
void ic_set_device_allocator(const ic_device_allocator *a);
/* The registered allocator: 1 with *out filled, or 0 (none: cuMemAlloc/cuMemFree). A caller
 * that registers its own for a while puts this one back after (tests/test_gpu.py). */
int ic_get_device_allocator(ic_device_allocator *out);

/* Like ic_run, on a CUDA stream (CUstream; NULL = legacy default stream). For CPU-compiled
 * graphs the stream is ignored. Launches are asynchronous on that stream. */
int ic_run_stream(const ic_compiled *c, void *const *inputs, void *const *outputs, void *stream,
                  ic_err *err);

/* Host time spent in GPU runs with TORCHC_HOST_STATS=1 (us[6] microseconds, n[6] counts):
 * whole runs, workspace, cuBLASLt calls, cuDNN calls, other extern calls, kernel launches. */
void ic_gpu_host_stats(double *us, unsigned long long *n);

/* GEMM choices timed on the device (n[4]): measured, of them the template, the extern call,
 * and runs that took the fixed rule untimed (stream capture, no event API, an unknown
 * TORCHC_GEMM_CHOICE). */
void ic_gemm_choice_stats(unsigned long long *n);

/* Lazy fallback modules compiled and loaded so far (runtime/cuda.c lazy_load: the scalar
 * variants of a compilation, built the first time a call's pointers are not aligned). */
unsigned long long ic_gpu_lazy_loads(void);

/* Split row kernels (x.sum() of a large tensor) so far (n[2]): launches whose last block per
 * row combined the partials with the stream's row counters, and final launches that ran
 * (no counters: a stream being captured). */
void ic_gpu_split_stats(unsigned long long *n);

/* 1 when libcuda loads, initializes and has at least one device; the reason otherwise. */
int ic_cuda_available(void);
const char *ic_cuda_unavailable_reason(void);

/* The ptxas to compile PTX with (NULL: none, the driver JIT-compiles). With one, a graph's
 * PTX modules are assembled by parallel ptxas processes and loaded as cubins: the driver's
 * JIT runs one module at a time. TORCHC_PTXAS (a path, or 0 for none) overrides it. */
void ic_cuda_set_ptxas(const char *path);

/* Extern GEMMs (mm, addmm, linear) run straight through cuBLASLt so far in this process
 * (runtime/cublaslt.c; TORCHC_CUBLASLT=0 sends them all through ATen). */
long ic_cublaslt_calls(void);
/* 16-bit convolutions run straight through cuDNN's backend API so far (runtime/cudnn.c;
 * TORCHC_CUDNN=0 sends them through ATen). */
long ic_cudnn_calls(void);

/* PTX text of a CUDA-compiled graph (malloc'd, caller frees), or NULL. */
char *ic_compiled_ptx(const ic_compiled *c);

/* PTX for a graph without any GPU (make ptx-check): target sm_XY as XY (e.g. 90). */
char *ic_graph_to_ptx(const ic_graph *g, int sm, ic_err *err);
/* torchc.config.ptx_probe (developers' PTX checks): when set, g (a graph compiled for the CPU,
 * forward or backward) goes through ic_graph_to_ptx for sm_90 too, so GPU code generation is
 * covered without a GPU; the outcome on stderr ("torchc ptx probe: ok" / "FAILED: reason"),
 * the PTX written to DIR/probe_N.ptx when the setting is an absolute directory DIR. */
void ic_ptx_probe(const ic_graph *g);
/* The workspace bytes a CUDA compilation of g for sm_XY would allocate per run, without any
 * GPU (ic_compiled_workspace_bytes of the PTX-only compilation); -1 with err on failure. */
int64_t ic_graph_gpu_workspace_bytes(const ic_graph *g, int sm, ic_err *err);

#ifdef __cplusplus
}
#endif
#endif
