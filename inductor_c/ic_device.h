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

/* ---- torchc.scan's forward as one persistent kernel (codegen/gpu_scan.c) ----------------
 * A scan body h' = f(h @ W + g(x_t, constants)) (its graph text from the probe's entry) as one
 * kernel that runs every step: which bodies qualify is in gpu_scan.c's header comment. */
typedef struct ic_scan_spec {
    const char *graph;        /* the body's graph (ic_graph_to_string) */
    int ninputs;              /* graph inputs; per input: */
    const char *role;         /*   'c' the carry, 'x' an x slice, 'k' a loop constant */
    const int *role_index;    /*   'x': which x (x_stride0's index); else unused */
    int nx;
    const int64_t *x_stride0; /* per x: elements between the steps of its [T, ...] stack */
    int64_t N, n;             /* the carry [N, n] */
    int cout;                 /* the graph output that is the next carry */
    int ny;
    const int *yout;          /* the graph outputs that are the results, in order */
    int sm, nsm;              /* target sm_XY as XY, and the device's SMs */
} ic_scan_spec;
typedef struct ic_scan_shape {
    int64_t N, n;
    int threads, R, ctas, np;  /* one thread a column, R batch rows a CTA, np: n rounded to 4 */
    int smem;                  /* dynamic shared memory bytes */
    int has_mv, w_smem;        /* a product of the carry; its W in shared memory */
    int nxmm;                  /* input projections (products of x slices or constants) */
    int nres;                  /* the results' stacks (distinct graph outputs) */
} ic_scan_shape;
typedef struct ic_scan_kernel ic_scan_kernel;
/* The kernel of spec (a new reference; kept by key for later calls), or NULL with why. */
ic_scan_kernel *ic_scan_kernel_get(const ic_scan_spec *spec, char *why, size_t nwhy);
void ic_scan_kernel_unref(ic_scan_kernel *k);
void ic_scan_cache_clear(void);
const ic_scan_shape *ic_scan_kernel_shape(const ic_scan_kernel *k);
const char *ic_scan_kernel_describe(const ic_scan_kernel *k);
const char *ic_scan_kernel_ir(const ic_scan_kernel *k); /* LLVM IR text (nvptx64), before O3 */
/* the results (count; *slot: per result, its stack among the nres) */
int ic_scan_kernel_nresults(const ic_scan_kernel *k, const int **slot);
int ic_scan_kernel_ninputs(const ic_scan_kernel *k);
/* graph input i: its role, its meta in the graph, and for an x its stack's stride0; 0 or -1 */
int ic_scan_kernel_input(const ic_scan_kernel *k, int i, char *role, const ic_meta **m, int64_t *x_stride0);
/* its PTX, for the target it was made for (compiled once), malloc'd; NULL with msg */
char *ic_scan_kernel_ptx(ic_scan_kernel *k, char *msg, size_t n);
/* its module loaded on device (once); 0, or -1 with msg */
int ic_scan_kernel_load(ic_scan_kernel *k, int device, char *msg, size_t n);
/* the device's sm (major*10+minor) and SMs, the driver up; 0, or -1 with msg (runtime/cuda.c) */
int ic_cuda_device_info(int device, int *sm, int *nsm, char *msg, size_t n);
/* one launch on stream for T steps: ptrs are the kernel's pointer parameters, in order: h0
 * [N, n], every graph input (the carry's unused; x: its [T, ...] stack), the nres stacks
 * [T, N, n], the final carry [N, n] (all float32 but inputs, contiguous but inputs, which
 * the caller checked against ic_scan_kernel_input). 0, or -1 with msg. */
int ic_scan_kernel_launch(ic_scan_kernel *k, int device, void *stream, void *const *ptrs, int T, char *msg, size_t n);

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
