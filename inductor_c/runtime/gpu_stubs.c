/* gpu_stubs.c — weak fallbacks for the CUDA backend's hooks.
 *
 * compile.c calls into the CUDA backend (codegen/gpu_nvptx.c, runtime/cuda.c). These weak
 * definitions let a tree without that backend (or a build that leaves it out) still link:
 * IC_CUDA compilations then fail with IC_EUNSUPPORTED (eager fallback). The backend's
 * strong definitions replace them at link time; nothing here runs when it is present.
 */
#include "../ic_device.h"
#include "../ic_internal.h"

#define IC_WEAK __attribute__((weak))

IC_WEAK void ic_codegen_gpu(ic_ctx *c, ic_compiled *out, int device) {
    (void)out;
    (void)device;
    ic_fail(c, IC_EUNSUPPORTED, "this build has no CUDA backend");
}

IC_WEAK void ic_gpu_free(void *gpu) { (void)gpu; }

IC_WEAK void ic_gpu_host_stats(double *us, unsigned long long *n) {
    for (int i = 0; i < 6; i++) us[i] = 0, n[i] = 0;
}

IC_WEAK void ic_gemm_choice_stats(unsigned long long *n) {
    for (int i = 0; i < 4; i++) n[i] = 0;
}

IC_WEAK unsigned long long ic_gpu_lazy_loads(void) { return 0; }

IC_WEAK void ic_gpu_split_stats(unsigned long long *n) { n[0] = n[1] = 0; }

IC_WEAK IC_API int ic_run_stream(const ic_compiled *c, void *const *inputs, void *const *outputs,
                                 void *stream, ic_err *err) {
    (void)stream;
    if (c && !c->gpu) return ic_run(c, inputs, outputs, err);
    if (err) {
        err->code = IC_EUNSUPPORTED;
        snprintf(err->msg, sizeof err->msg, "this build has no CUDA backend");
    }
    return -1;
}
