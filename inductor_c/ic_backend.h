/* ic_backend.h — the backends the driver (compile.c) chooses between by ic_options.device.
 *
 * A backend is a code generator and the runtime that runs its code, joined by the driver:
 *   cpu   codegen/cpu_module.c + cpu_llvm.c (LLVM IR, O3, object files, nothing else), the
 *         code caches (in process, on disk) and ORC JIT loading here in the driver (backends.c:
 *         runtime/jit.c, runtime/diskcache.c), run by ic_run's loop over the kernels
 *         (runtime/pool.c)
 *   cuda  codegen/gpu_nvptx.c (PTX + launch plans, nothing else), the code cache and module
 *         loading here in the driver (backends.c: runtime/gpu_cache.c, runtime/cuda.c), run
 *         by ic_run_stream (runtime/cuda.c); callers run either through ic_run_on (ic.h)
 * The driver holds no other reference to a backend: no weak symbols, no device checks
 * outside ic_backend_for. Both backends are always built (libcuda is opened at run time;
 * without it the cuda backend's codegen fails with IC_EUNSUPPORTED: eager fallback).
 */
#ifndef IC_BACKEND_H
#define IC_BACKEND_H

#include "ic_internal.h"

typedef struct ic_backend {
    const char *name;
    bool row_scratch; /* row-local buffers (kind 3) live in the workspace (compile.c
                         plan_row_scratch), not on each kernel's stack */
    bool lowp;        /* half-precision values computed in f32 may take fast forms where only
                         a half result depends on them (driver_passes.c ic_lowp_analysis) */
    bool gemm_epilogue; /* its own GEMM kernels may fuse the next kernel into their epilogue
                           (driver_passes.c ic_gemm_epilogues) */
    /* Code for the finalized kernels of c, loaded and ready to run: fills fns (the CPU's
     * kernel entry points, fns[2k] and fns[2k+1]: see ic_codegen_cpu) and its own parts of
     * out (jit_rt, gpu). Failures through ic_fail; what it put in out is freed by release. */
    void (*codegen)(ic_ctx *c, ic_compiled *out, ic_kernel_fn *fns, int device);
    /* frees what codegen (or a run) left in out; out itself is the driver's */
    void (*release)(ic_compiled *out);
    /* after a failed compile: backend state kept in c (NULL: none) */
    void (*cleanup)(ic_ctx *c);
    /* runs out on stream (NULL: the driver's CPU loop in ic_run) */
    int (*run)(const ic_compiled *c, void *const *inputs, void *const *outputs, void *stream, ic_err *err);
} ic_backend;

extern const ic_backend ic_backend_cpu, ic_backend_cuda; /* backends.c */

/* CPU code found loaded in this process, and loaded from the disk cache (backends.c) */
void ic_cpu_code_stats(unsigned long long *shared, unsigned long long *disk_loaded);

/* the backend of a device (IC_CPU, IC_CUDA), NULL for others */
const ic_backend *ic_backend_for(int device);

#endif
