/* gpu_gemm_emit.c — GEMM kernels of the GPU code generator: the template (codegen/gpu_gemm.c) with a fused epilogue, and the GEMM choice.
 * Split out of gpu_nvptx.c (the driver): see its comment. */
#include "gpu_internal.h"

/* ---- the GEMM template (codegen/gpu_gemm.c) ------------------------------------------------- *
 * An extern matmul on f16/bf16 may run as our own tensor-core kernel instead of the ATen call,
 * with the next kernel of the graph fused into its epilogue when the driver found that kernel
 * pointwise over the product's elements (driver_passes.c ic_gemm_epilogues: bias, activation,
 * residual, cast: any pointwise expression, evaluated by gg_val() on the rounded accumulator
 * value). TORCHC_GEMM=extern|template|auto (default auto):
 * auto takes the template where it is expected to win (gemm_auto). Anything the template does
 * not support stays an extern call. */
#define IC_GEMM_EMIT
#include "gpu_gemm.h"

static int gemm_mode(const ic_config *cf) { /* 0 extern, 1 auto, 2 template */
    const char *s = cf->gemm;
    if (!*s || !strcmp(s, "auto")) return 1;
    if (!strcmp(s, "template")) return 2;
    return 0;
}

typedef struct gemm_epi_ctx {
    gg *g;
    ic_kernel *k;
    int nv;
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS];
} gemm_epi_ctx;

/* the epilogue's context for consumer kernel k (the driver's choice, c->gemm_epi): its vars
 * in flat order, so that the product's flat index decomposes into them */
static ic_kernel *gemm_epi_setup(ic_kernel *k, gemm_epi_ctx *E) {
    E->nv = ic_kernel_loop_vars(k, E->vars, E->sizes);
    E->k = k;
    return k;
}

static void gemm_epi_elem(void *p, LLVMValueRef e, LLVMValueRef ok, LLVMValueRef v) {
    gemm_epi_ctx *E = p;
    gg *g = E->g;
    LLVMValueRef ei = g->ity == g->cg.i64 ? e : LLVMBuildTrunc(B, e, g->ity, "");
    gg_decompose(g, ei, E->vars, E->sizes, E->nv);
    g->gen++;
    g->epi_val = v;
    for (int j = 0; j < E->k->nitems; j++) {
        ic_item *it = &E->k->items[j];
        if (!it->store) continue;
        LLVMValueRef r = gg_val(g, it->expr, 0);
        gg_store_item(g, it, &r, 1, ok);
    }
    g->epi_val = NULL;
}

/* Auto selection: where the template is expected to beat ATen (+ a separate epilogue
 * kernel), from measurements on an H200 (benchmarks/gemm_bench.py, results in
 * benchmarks/results/gemm_h200_bf16.json, notes/gemm.md): linear+bias+gelu, template over
 * extern 2.0-2.5x up to 512x768x768, 1.4-1.7x at 1024x768x768 .. 1024^3, 0.7-1.05x at
 * 4096x768x768, 0.4-0.5x beyond (cuBLAS uses wgmma, the template mma.sync). A fixed
 * threshold, not a per-shape timing. The cp.async variant only. */
#define GEMM_AUTO_MAX_MACS ((int64_t)1 << 30)
static bool gemm_auto(const ic_gemm *G, bool fused) {
    (void)fused;
    return G->fast_ok && G->batch * G->M * G->N * G->K <= GEMM_AUTO_MAX_MACS;
}

/* The buffers of the GEMM and its consumer (*used) and the kernel's parameters (*ub, in
 * order: A, B, bias, out, then the consumer's as it meets them); their count. */
static int gemm_params(ic_ctx *c, const ic_gemm *G, const ic_kernel *cons, bool store_out, int **usedp, int **ubp) {
    int *used = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    ic_marks_begin(c, &c->xmark, c->nxs);
    for (int j = 0; cons && j < cons->nitems; j++) {
        if (!cons->items[j].store) continue;
        x_mark_bufs(c, cons->items[j].expr, used);
        used[cons->items[j].buf] |= 2;
    }
    used[G->out_buf] = store_out ? 2 : 0;
    used[G->a_buf] |= 1;
    used[G->b_buf] |= 1;
    if (G->bias_buf >= 0) used[G->bias_buf] |= 1;
    int *ub = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    const int first[4] = {G->a_buf, G->b_buf, G->bias_buf, G->out_buf};
    *usedp = used;
    *ubp = ub;
    return gg_param_order(c, cons, true, used, first, 4, ub);
}

/* i32 index math for the GEMM variant of parameters ub[0..nu) */
static bool gemm_i32(ic_ctx *c, const ic_gemm *G, const int *ub, int nu) {
    const int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 25);
    bool i32 = G->batch * G->M * G->N < lim;
    for (int i = 0; i < nu && i32; i++) i32 = c->bufs[ub[i]].span < lim;
    return i32;
}

static void gemm_variant(gg *g, const ic_gemm *G, const ic_gemm_map *M, bool fast, gemm_epi_ctx *E, bool store_out,
                         ic_gvariant *out, const char *name, const int *used, const int *ub, int nu) {
    ic_ctx *c = g->c;
    ic_kernel *cons = E ? E->k : NULL;
    g->v2 = 0; /* the epilogue's expressions as in the first generation */
    g->need = NULL;
    LLVMValueRef fn = gg_kernel_fn(g, name, nu, nu, ub, used);
    gg_add_annotation(g, fn, "kernel", 1);
    gg_add_annotation(g, fn, "maxntidx", M->nthreads);
    plan *P = ic_alloc(c, sizeof *P); /* gg_val() needs a plan: pointwise, one lane */
    P->mode = P_POINTWISE;
    P->V = 1;
    P->vv = -1;
    g->P = P;
    g->k = cons;
    g->smem = NULL;
    g->dyn = NULL;
    g->vgen++;
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    g->tile_on = false;
    g->epi_buf = G->out_buf;
    g->epi_val = NULL;
    g->ity = gemm_i32(c, G, ub, nu) ? g->cg.i32 : g->cg.i64;
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->cg.ctx, fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->cg.ctx, fn, "start");
    LLVMPositionBuilderAtEnd(B, start);
    pdl_prologue(g);
    if (E) E->g = g;
    ic_gemm_epi epi = {.ctx = E, .elem = gemm_epi_elem};
    ic_gemm_emit(&g->cg, G, M, fast, entry, g->buf_param[G->a_buf], g->buf_param[G->b_buf],
                 G->bias_buf >= 0 ? g->buf_param[G->bias_buf] : NULL, store_out ? g->buf_param[G->out_buf] : NULL,
                 E ? &epi : NULL, name);
    LLVMBuildRetVoid(B);
    LLVMPositionBuilderAtEnd(B, entry);
    LLVMBuildBr(B, start);
    const ic_gemm_cfg *cf = &M->cfg;
    snprintf(out->name, sizeof out->name, "%s", name);
    out->grid = (unsigned)(G->batch * ((G->M + cf->BM - 1) / cf->BM) * ((G->N + cf->BN - 1) / cf->BN));
    out->block = (unsigned)M->nthreads;
    out->part_off = -1;
    out->cl = 1;
    out->vec = fast ? 8 : 1;
    out->nparams = nu;
    out->params = malloc((size_t)(nu + 1) * sizeof(int));
    out->align_buf = malloc(4 * sizeof(int));
    out->align_bytes = malloc(4 * sizeof(int));
    if (!out->params || !out->align_buf || !out->align_bytes) ic_fail(c, IC_ENOMEM, "out of memory");
    for (int i = 0; i < nu; i++) out->params[i] = ub[i];
    if (fast) { /* cp.async: 16-byte A / B bases; the paired stores: a 4-byte output base */
        out->align_buf[out->nalign] = G->a_buf, out->align_bytes[out->nalign++] = 16;
        out->align_buf[out->nalign] = G->b_buf, out->align_bytes[out->nalign++] = 16;
        if (store_out && G->N % 2 == 0) out->align_buf[out->nalign] = G->out_buf, out->align_bytes[out->nalign++] = 4;
    }
}

/* Extern kernel ki as the GEMM template when supported and selected: fills K (no longer an
 * extern call) and returns the index of the kernel fused into its epilogue (-1: none). */


/* GEMMs between these sizes (batch * M * N * K) are timed on the device, both forms, on their
 * first call (runtime/cuda.c choose); below, the template; above, the extern call. On the
 * H200 the template won 2-2.5x up to 512x768x768 and lost 2-3x from 4096x2304x768 up
 * (gemm_h200_bf16.json); timed in BERT, GPT-2 and ViT at batch 32 (2.4e9 to 7.2e9, 84 GEMMs)
 * cuBLASLt won every one, while compiling and timing both forms added 0.3-0.5 s to their first
 * calls: so the band stops at 2^31. TORCHC_GEMM_CHOICE=static: the fixed rule (gemm_auto). */
#define GEMM_MEASURE_MIN ((int64_t)1 << 27)
#define GEMM_MEASURE_MAX ((int64_t)1 << 31)
static bool gemm_choice_static(const ic_config *cf) { return !strcmp(cf->gemm_choice, "static"); }

/* A new GEMM choice of gpu (its id), the buffers its two forms write: the product, and
 * what the fused consumer stores. 0 when there are too many. */
static int gemm_choice_new(ic_ctx *c, ic_gpu *gpu, const ic_gemm *G, const ic_kernel *cons, bool auto_template) {
    ic_gchoice ch;
    memset(&ch, 0, sizeof ch);
    ch.dflt = auto_template ? IC_CHOICE_TEMPLATE : IC_CHOICE_EXT;
    ch.macs = G->batch * G->M * G->N * G->K;
    ch.wbuf[ch.nw++] = G->out_buf;
    for (int j = 0; cons && j < cons->nitems; j++) {
        int b = cons->items[j].buf;
        if (!cons->items[j].store || b < 0) continue;
        bool have = false;
        for (int i = 0; i < ch.nw; i++) have |= ch.wbuf[i] == b;
        if (have) continue;
        if (ch.nw == IC_CHOICE_MAXW) return 0;
        ch.wbuf[ch.nw++] = b;
    }
    for (int i = 0; i < ch.nw; i++) ch.wbytes[i] = c->bufs[ch.wbuf[i]].nbytes;
    ic_gchoice *a = realloc(gpu->choice, ((size_t)gpu->nchoice + 1) * sizeof *a);
    if (!a) ic_fail(c, IC_ENOMEM, "out of memory");
    gpu->choice = a;
    a[gpu->nchoice++] = ch;
    return gpu->nchoice;
}

int gg_gemm_kernel(gg *g, int ki, ic_gkernel *K, int tsm, int nsm, int mid, gres *R, int *nnew, ic_gpu *gpu,
                       int *choice_kj) {
    ic_ctx *c = g->c;
    int mode = gemm_mode(&c->cfg);
    if (mode == 0 || tsm < 80) return -1;
    ic_gemm G;
    if (ic_gemm_match(c, &c->kernels[ki], nsm, &G)) return -1;
    gemm_epi_ctx *E = ic_alloc(c, sizeof *E);
    /* the kernel fused into the epilogue: the driver's step (driver_passes.c ic_gemm_epilogues) */
    const ic_gemm_epi_plan *ep = c->gemm_epi ? &c->gemm_epi[ki] : NULL;
    bool store_out = ep ? ep->store_out : true;
    int kj = ep ? ep->consumer : -1;
    ic_kernel *cons = kj >= 0 ? gemm_epi_setup(&c->kernels[kj], E) : NULL;
    int64_t macs = G.batch * G.M * G.N * G.K;
    int choice = 0;
    /* mode="max-autotune" (ic_options.autotune): every GEMM the template can do is timed */
    bool band = c->autotune ? macs > 0 : (macs > GEMM_MEASURE_MIN && macs <= GEMM_MEASURE_MAX);
    if (mode == 1 && G.fast_ok && band && !gemm_choice_static(&c->cfg))
        choice = gemm_choice_new(c, gpu, &G, cons, gemm_auto(&G, cons != NULL));
    if (!choice && mode == 1 && !gemm_auto(&G, cons != NULL)) return -1;
    ic_gemm_map *M = ic_alloc(c, sizeof *M);
    char msg[200];
    if (ic_gemm_map_build(M, &G.cfg, msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "GPU GEMM: %s", msg);
    if (choice) { /* K stays the extern call; the template is the next launch */
        K->choice = choice;
        K->role = IC_ROLE_EXT;
        K = &gpu->k[gpu->nkernels++];
        K->choice = choice;
        K->role = IC_ROLE_TEMPLATE;
    }
    K->ext = 0;
    int *used, *ub;
    int nu = gemm_params(c, &G, cons, store_out, &used, &ub);
    bool i32 = gemm_i32(c, &G, ub, nu);
    for (int v = G.fast_ok ? 0 : 1; v < 2; v++) {
        char name[48];
        snprintf(name, sizeof name, "tc%d_k%dg%s", mid % 1000000, ki, v == 0 ? "v" : "");
        ic_gvariant *gv = &K->v[K->nvar++];
        bool lazy = v == 1 && G.fast_ok && gg_lazy_enabled(R); /* the fallback of the aligned fast variant */
        /* repeated layers' GEMMs: found by their key (gpu_key.c) as other kernels are */
        gkq kq = {0};
        if (gg_keyer(R)) kq.key = gg_gemm_key(gg_keyer(R), g, &G, v == 0, cons, store_out, i32, used, ub, nu, &kq.n);
        if (gg_key_find(g, R, &kq, lazy, ub, nu, gv)) continue;
        gpart *q = lazy ? gg_lazy_part(g, R) : gg_next_part(g, R);
        gg_kbegin(g, R, q);
        gemm_variant(g, &G, M, v == 0, cons ? E : NULL, store_out, gv, name, used, ub, nu);
        int rep = gg_kend(g, R, q, gv, lazy);
        gg_key_built(g, R, &kq, rep, ub, nu, gv);
        *nnew += !rep;
    }
    if (choice && cons) *choice_kj = kj; /* generated as usual, the extern path's consumer */
    return cons && !choice ? kj : -1;
}
