/* backends.c — the backends of the driver (ic_backend.h): each joins a code generator to the
 * runtime that loads and runs its code. Code caching and module loading happen here and in
 * runtime/, never in codegen/.
 *
 * cpu: symbols → code cache lookup (in process, on disk) → on a miss codegen/cpu_module.c
 * ic_codegen_cpu (object files) → ORC JIT load (runtime/jit.c) → cache put.
 * cuda: target from the device (or ic_graph_to_ptx's sm) → disk cache lookup (runtime/
 * gpu_cache.c: PTX, launch plans, cubins; loaded by runtime/cuda.c) → on a miss codegen/
 * gpu_nvptx.c ic_codegen_gpu (PTX + plans) → load → cache put.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <llvm/Config/llvm-config.h>

#include "codegen/gpu.h"
#include "ic_backend.h"
#include "ic_device.h"
#include "ic_diskcache.h"

/* ---- cpu --------------------------------------------------------------------------------- *
 * symbols (codegen/cpu_module.c ic_cpu_symbols) → keyed: loaded in this process already
 * (runtime/jit.c ic_jit_find), else the disk cache (runtime/diskcache.c, ns "cpu") → on a miss
 * ic_codegen_cpu (object files) → ORC LLJIT load (ic_jit_add_object) → disk cache put. */
static _Atomic unsigned long long code_shared, code_disk_loaded;

void ic_cpu_code_stats(unsigned long long *shared, unsigned long long *disk_loaded) {
    *shared = code_shared;
    *disk_loaded = code_disk_loaded;
}

/* A cached code blob: "ICOB", count, sizes, then the object files back to back. */
#define OB_MAGIC 0x424f4349u

void *ic_cpu_pack_objects(const void *const *objs, const size_t *sizes, int nobj, size_t *n) {
    size_t total = 8 + 8 * (size_t)nobj;
    for (int i = 0; i < nobj; i++) total += sizes[i];
    unsigned char *b = malloc(total), *p = b;
    if (!b) return NULL;
    uint32_t h[2] = {OB_MAGIC, (uint32_t)nobj};
    memcpy(p, h, 8);
    p += 8;
    for (int i = 0; i < nobj; i++) {
        uint64_t sz = sizes[i];
        memcpy(p, &sz, 8);
        p += 8;
    }
    for (int i = 0; i < nobj; i++) {
        memcpy(p, objs[i], sizes[i]);
        p += sizes[i];
    }
    *n = total;
    return b;
}

/* -> number of objects (<= IC_CG_PARTS), -1 when the blob is malformed */
static int unpack_objects(const unsigned char *b, size_t n, const void **objs, size_t *sizes) {
    uint32_t h[2];
    if (n < 8) return -1;
    memcpy(h, b, 8);
    if (h[0] != OB_MAGIC || h[1] < 1 || h[1] > IC_CG_PARTS || n < 8 + 8 * (size_t)h[1]) return -1;
    size_t off = 8 + 8 * (size_t)h[1];
    for (uint32_t i = 0; i < h[1]; i++) {
        uint64_t sz;
        memcpy(&sz, b + 8 + 8 * i, 8);
        if (sz > n - off) return -1;
        objs[i] = b + off;
        sizes[i] = (size_t)sz;
        off += (size_t)sz;
    }
    return off == n ? (int)h[1] : -1;
}

static void set_fns(ic_ctx *c, ic_kernel_fn *fns, const ic_cpu_syms *S, void **addrs) {
    for (int i = 0; i < 2 * c->nkernels; i++) fns[i] = NULL;
    for (int i = 0; i < S->n; i++) fns[S->slot[i]] = (ic_kernel_fn)addrs[i];
}

static void cpu_codegen(ic_ctx *c, ic_compiled *out, ic_kernel_fn *fns, int device) {
    (void)device;
    int nfused = 0;
    for (int k = 0; k < c->nkernels; k++) nfused += !c->kernels[k].is_ext;
    if (nfused == 0) return;
    char msg[256];
    double t0 = ic_now_ms();
    ic_cpu_syms S;
    ic_cpu_symbols(c, &S);
    void **addrs = ic_alloc(c, (size_t)(S.n + 1) * sizeof(void *));
    if (c->keyed) {
        /* 1. loaded in this process already; 2. on disk */
        void *h = ic_jit_find(c->key, S.names, S.n, addrs);
        if (h) {
            code_shared++;
            out->jit_rt = h;
            set_fns(c, fns, &S, addrs);
            c->t_stage[IC_T_JIT] += ic_now_ms() - t0;
            return;
        }
        void *blob;
        size_t n;
        if (ic_diskcache_get("cpu", c->key, &blob, &n) == 0) {
            const void *objs[IC_CG_PARTS];
            size_t sizes[IC_CG_PARTS];
            int no = unpack_objects(blob, n, objs, sizes);
            h = no > 0 ? ic_jit_add_object(objs, sizes, no, &c->key, S.names, S.n, addrs, msg, sizeof msg) : NULL;
            free(blob);
            if (h) {
                code_disk_loaded++;
                out->jit_rt = h;
                set_fns(c, fns, &S, addrs);
                c->t_stage[IC_T_JIT] += ic_now_ms() - t0;
                return;
            }
            /* unusable entry: rebuilt below and put again */
        }
    }
    const void *objs[IC_CG_PARTS];
    size_t sizes[IC_CG_PARTS];
    /* tier-0 names (used when ic_codegen_cpu tiers the graph): made first, as the bitcode it
     * may return is freed only by ic_tier_new or ic_cpu_tier0_free */
    static _Atomic unsigned tier_counter;
    ic_cpu_tier0 *T = ic_alloc(c, sizeof *T);
    snprintf(T->suffix, sizeof T->suffix, "_t%u", atomic_fetch_add(&tier_counter, 1));
    const char **n0 = ic_alloc(c, (size_t)(S.n + 1) * sizeof(char *));
    for (int i = 0; i < S.n; i++) {
        size_t len = strlen(S.names[i]) + sizeof T->suffix;
        char *nm = ic_alloc(c, len);
        snprintf(nm, len, "%s%s", S.names[i], T->suffix);
        n0[i] = nm;
    }
    int nobj = ic_codegen_cpu(c, &S, objs, sizes, T); /* code only (stages irgen, opt, emit) */
    t0 = ic_now_ms();
    if (T->nparts) { /* tier 0: unshared, not cached; tier.c makes, loads and caches the full code */
        out->tier = ic_tier_new(c, &S, T); /* takes T's bitcode */
        if (!out->tier) {
            ic_cpu_tier0_free(T);
            ic_fail(c, IC_ENOMEM, "out of memory");
        }
        void *h = ic_jit_add_object(objs, sizes, nobj, NULL, n0, S.n, addrs, msg, sizeof msg);
        if (!h) ic_fail(c, IC_EINTERNAL, "JIT: %s", msg);
        out->jit_rt = h;
        set_fns(c, fns, &S, addrs);
        c->t_stage[IC_T_JIT] += ic_now_ms() - t0;
        ic_codegen_cleanup(c);
        return;
    }
    void *h = ic_jit_add_object(objs, sizes, nobj, c->keyed ? &c->key : NULL, S.names, S.n, addrs, msg, sizeof msg);
    if (!h) ic_fail(c, IC_EINTERNAL, "JIT: %s", msg);
    out->jit_rt = h;
    set_fns(c, fns, &S, addrs);
    if (c->keyed && ic_diskcache_enabled()) {
        size_t n;
        void *blob = ic_cpu_pack_objects(objs, sizes, nobj, &n);
        if (blob) ic_diskcache_put("cpu", c->key, blob, n);
        free(blob);
    }
    c->t_stage[IC_T_JIT] += ic_now_ms() - t0;
    ic_codegen_cleanup(c); /* the objects, loaded */
}

static void cpu_release(ic_compiled *o) {
    ic_tier_detach(o); /* first: a tier-up swaps nothing in from here */
    if (o->jit_rt) ic_jit_remove(o->jit_rt);
    if (o->jit_rt0) ic_jit_remove(o->jit_rt0);
    o->jit_rt = o->jit_rt0 = NULL;
}

const ic_backend ic_backend_cpu = {"cpu", false, false, false, cpu_codegen, cpu_release, ic_codegen_cleanup, NULL};

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

const ic_backend ic_backend_cuda = {"cuda", true, true, true, cuda_codegen, cuda_release, NULL, ic_run_stream};

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

IC_API void ic_ptx_probe(const ic_graph *g) {
    char dir[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_ptx_probe, dir);
    if (!dir[0] || g == NULL)
        return;
    ic_err e2 = {0};
    char *ptx = ic_graph_to_ptx(g, 90, &e2);
    static atomic_int nprobe;
    if (ptx && dir[0] == '/') {
        char path[1024];
        snprintf(path, sizeof path, "%s/probe_%d.ptx", dir, atomic_fetch_add(&nprobe, 1));
        FILE *pf = fopen(path, "w");
        if (pf) {
            fputs(ptx, pf);
            fclose(pf);
        }
    }
    if (ptx)
        fprintf(stderr, "torchc ptx probe: ok\n");
    else
        fprintf(stderr, "torchc ptx probe: FAILED: %s\n", e2.msg);
    free(ptx);
}

IC_API int64_t ic_graph_gpu_workspace_bytes(const ic_graph *g, int sm, ic_err *err) {
    ic_options o = {.device = IC_CUDA, .opt_level = 3};
    ic_compiled *cc = ic_compile_ptx_only(g, &o, sm, err);
    if (!cc) return -1;
    int64_t n = ic_compiled_workspace_bytes(cc);
    ic_compiled_free(cc);
    return n;
}
