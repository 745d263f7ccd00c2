/* backends.c — the backends of the driver (ic_backend.h): each joins a code generator to the
 * runtime that loads and runs its code. Code caching and module loading happen here and in
 * runtime/, never in codegen/.
 *
 * cuda: target from the device (or ic_graph_to_ptx's sm) → disk cache lookup (runtime/
 * gpu_cache.c: PTX, launch plans, cubins; loaded by runtime/cuda.c) → on a miss codegen/
 * gpu_nvptx.c ic_codegen_gpu (PTX + plans) → load → cache put.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>

#include "codegen/gpu.h"
#include "ic_device.h"
#include "ic_backend.h"

/* ---- cpu --------------------------------------------------------------------------------- */
static void cpu_codegen(ic_ctx *c, ic_compiled *out, ic_kernel_fn *fns, int device) {
    (void)device;
    int nfused = 0;
    for (int k = 0; k < c->nkernels; k++) nfused += !c->kernels[k].is_ext;
    if (nfused > 0) ic_codegen_cpu(c, fns, &out->jit_rt);
}

static void cpu_release(ic_compiled *o) {
    if (o->jit_rt) ic_jit_remove(o->jit_rt);
    o->jit_rt = NULL;
}

const ic_backend ic_backend_cpu = {"cpu", false, cpu_codegen, cpu_release, ic_codegen_cleanup, NULL};

/* ---- cuda -------------------------------------------------------------------------------- */
static void describe_append(ic_compiled *out, const ic_gpu *G) {
    ic_str s = {0};
    if (out->describe) ic_str_printf(&s, "%s", out->describe);
    for (int i = 0; i < G->nkernels; i++)
        for (int v = 0; v < G->k[i].nvar; v++) {
            const ic_gvariant *gv = &G->k[i].v[v];
            ic_str_printf(&s, "gpu %s: grid %u block %u vec %d%s\n", gv->name, gv->grid, gv->block, gv->vec,
                          G->k[i].role == IC_ROLE_TEMPLATE   ? " (GEMM choice: the template)"
                          : G->k[i].role == IC_ROLE_CONSUMER ? " (GEMM choice: after the extern call)"
                                                             : "");
        }
    for (int i = 0; i < G->nchoice; i++)
        ic_str_printf(&s, "gpu GEMM choice %d: %lld multiply-adds, timed on the first call (rule: %s)\n", i + 1,
                      (long long)G->choice[i].macs, G->choice[i].dflt == IC_CHOICE_TEMPLATE ? "template" : "extern");
    if (!s.oom && s.s) {
        free(out->describe);
        out->describe = s.s;
    } else {
        free(s.s);
    }
}

/* Disk cache key: everything the PTX and the launch plan depend on, in the arena; NULL when
 * out of memory. The build of this binary is folded in by gpu_cache.c. */
static char *gpu_key(ic_ctx *c, int tsm, int nsm) {
    char *text = ic_graph_to_string(c->g);
    if (!text) return NULL;
    ic_str s = {0};
    char *ck = ic_config_key(&c->cfg); /* every setting that changes code (ic_config.h) */
    ic_str_printf(&s, "%s|sm=%d|nsm=%d|driver=%d|%s|LLVM %d|pdl=%d%s|autotune=%d", text, tsm, nsm, ic_cuda_driver_version(),
                  ic_version(), LLVM_VERSION_MAJOR, ic_gpu_pdl(&c->cfg, tsm), ck ? ck : "|?", c->autotune);
    free(ck);
    free(text);
    char *key = NULL;
    if (!s.oom && s.s) {
        key = ic_alloc(c, s.n + 1);
        memcpy(key, s.s, s.n + 1);
    }
    free(s.s);
    return key;
}

/* A cache hit: plan + PTX (+ cubins) from disk, loaded; 0 when used, -1 on a miss (compile).
 * Modules whose cubin was missing or refused were compiled from PTX by ic_cuda_load: the
 * entry is put again with their new cubins, so the next process loads them as they are. */
static int from_cache(ic_ctx *c, ic_compiled *out, int dev, const char *key) {
    int64_t ws = 0;
    ic_gpu *G = ic_gcache_get(key, c->nbufs, &ws);
    if (!G) return -1;
    char msg[512];
    if (ws < c->ws_size || ic_cuda_load(G, dev, msg, sizeof msg)) { /* stale or unloadable: rebuild */
        ic_gpu_free(G);
        return -1;
    }
    int fresh = 0; /* cubins that did not come from the entry */
    for (int i = 0; i < G->ncubin; i++) fresh += G->cubin_len[i] > 0;
    if (fresh > G->cubin_loaded) ic_gcache_put(key, G, ws);
    G->device = dev;
    G->pdl = ic_gpu_pdl(&c->cfg, G->sm); /* in the key */
    c->ws_size = ws;
    describe_append(out, G);
    out->gpu = G;
    return 0;
}

static void cuda_codegen(ic_ctx *c, ic_compiled *out, ic_kernel_fn *fns, int dev) {
    (void)fns;
    int sm = 90, nsm = 132;
    bool ptx_only = c->ptx_sm > 0; /* ic_graph_to_ptx: no device, nothing loaded */
    char msg[512];
    if (ptx_only) sm = c->ptx_sm;
    else if (ic_cuda_device_info(dev, &sm, &nsm, msg, sizeof msg)) ic_fail(c, IC_EUNSUPPORTED, "CUDA: %s", msg);
    int tsm = ic_gpu_target_sm(sm);
    ic_cuda_set_lazy_compiler(ic_gpu_lazy_ptx); /* the runtime compiles lazy fallbacks through it */
    const char *key = NULL;
    if (!ptx_only && !c->debug && ic_gcache_enabled()) {
        key = gpu_key(c, tsm, nsm);
        if (key && from_cache(c, out, dev, key) == 0) return;
    }
    ic_gpu *G = out->gpu = calloc(1, sizeof *G); /* freed by cuda_release from here on */
    if (!G) ic_fail(c, IC_ENOMEM, "out of memory");
    ic_codegen_gpu(c, tsm, nsm, G);
    G->device = dev;
    double t = ic_now_ms();
    if (!ptx_only && ic_cuda_load(G, dev, msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "CUDA: %s", msg);
    c->t_stage[IC_T_JIT] += ic_now_ms() - t;
    if (key) ic_gcache_put(key, G, c->ws_size);
    describe_append(out, G);
}

static void cuda_release(ic_compiled *o) {
    for (int i = 0; o->exts && i < o->nexts; i++) {
        ic_lt_free(atomic_load(&o->exts[i].lt));
        ic_dnn_free(atomic_load(&o->exts[i].dnn));
    }
    if (o->gpu) ic_gpu_free(o->gpu);
    o->gpu = NULL;
}

const ic_backend ic_backend_cuda = {"cuda", true, cuda_codegen, cuda_release, NULL, ic_run_stream};

const ic_backend *ic_backend_for(int device) {
    return device == IC_CPU ? &ic_backend_cpu : device == IC_CUDA ? &ic_backend_cuda : NULL;
}

/* ---- public: PTX without a GPU (ic_device.h) ---------------------------------------------- */
IC_API char *ic_graph_to_ptx(const ic_graph *g, int sm, ic_err *err) {
    ic_options o = {.device = IC_CUDA, .opt_level = 3};
    ic_compiled *cc = ic_compile_ptx_only(g, &o, sm, err);
    if (!cc) return NULL;
    char *s = ic_compiled_ptx(cc);
    ic_compiled_free(cc);
    if (!s && err) {
        err->code = IC_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
    }
    return s;
}
