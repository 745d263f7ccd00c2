/* gpu_nvptx.c — finalized kernels to PTX for nvptx64-nvidia-cuda through the LLVM-C API.
 *
 * Requires: finalized kernels (flat loads, outer/inner vars, stores decided) and planned
 *   buffers, exactly what the CPU backend gets (ic_codegen_cpu).
 * Produces: one PTX module (ic_gpu.ptx) and a launch plan per kernel (ic_gpu.k); then, unless
 *   the compilation is PTX-only, loads the module through runtime/cuda.c. Sets out->gpu.
 * Keeps: kernels, buffers (it may only grow nothing). Breaks: nothing.
 *
 * Element -> hardware mapping (what a linear layout would say, bits low to high):
 *
 *   pointwise   element e = ((block*B + tid) + k*grid*B) * V + reg     grid-stride loop
 *               reg bits -> e bits [0, log V), tid bits next, then block bits: a blocked
 *               layout with V registers per thread; consecutive lanes hold consecutive
 *               V-vectors, so every access of a contiguous buffer is one 16-byte ld/st.
 *   row         a block holds R rows and T threads per row (R*T = B):
 *     (rows on    tid = rl*T + j   (j-bits low: lanes along the row, rows contiguous)
 *      warps)     element of row r = (c*T + j) * V + reg, c = chunk 0..C-1
 *   column      tid = j*R + rl with R = 32 (rows on lanes: the kept dim is the contiguous
 *     (vec_outer) one, x.sum(0)); element of row r = c*T + j, V = 1.
 *   split       few huge rows (x.sum()): S blocks a row (R = 1, T = 512) leave partials, one
 *               launch per reducing pass, and a final launch combines and stores. Split
 *     columns   (vec_outer with fewer blocks than SMs, a long extent: BatchNorm's sums over
 *               N, H, W in channels-last): blocks of R <= 32 columns x 512/R threads down
 *               them, S parts; each pass's partials are combined once by a launch of its own
 *               into a row value area that later passes read (gpu_plan.c gg_choose_split).
 *   The row mapping is a linear layout (gpu_layout.c, layouts/): j and rl are the bit
 *   fields of tid its bases name, the access width is its ll_num_consecutive, and a row's
 *   reduction combines over the tid bits whose bases lie in the row's columns: lane bits by
 *   shfl.sync.bfly butterflies (the layout's lane masks), warp bits through shared memory (every thread reads the same slots in the
 *   same order, so all threads of a row hold the identical result: no broadcast step).
 *   Persistent rows (groups per row <= 1024): C <= 4 chunks unrolled, loads of buffers
 *   the kernel does not write are kept in registers across the row's passes (softmax
 *   reads x once). Longer rows loop over chunks and reload (L1/L2 hits).
 *   Multi-pass row kernels (softmax, layernorm: reduce, reduce, store) stay one kernel:
 *   passes run one after another in the same block; X_ROWVAL is the block-reduced value.
 *
 *   tile        pointwise kernels that load an input transposed (contiguous along another
 *               var u than the store's vv): 32 x 32 tiles through shared memory, both
 *               phases and the swizzle from layouts (gpu_layout.c, gg_choose_tile, gg_emit_tile);
 *               on by default (TORCHC_GPU_TILE=0: off).
 *
 * Control flow is uniform across a block except around stores (`if (valid) store`), so the
 * barriers of the reductions are always reached by every thread; threads past the last
 * row / element compute on clamped (in-bounds) indices and are masked out of reductions.
 * f16/bf16 values live in f32 registers rounded to their precision (eager's per-op
 * rounding); memory holds the 16-bit form. f32 transcendentals come from vmath.c (the
 * CPU's straight-line polynomial code, shared through the cg struct), plus sin/cos/pow
 * here; f64 transcendentals are IC_EUNSUPPORTED (no libdevice).
 * Then, per module part (codegen/part.c, shared with the CPU code generator): verifier,
 * default<O3> with the NVPTX TargetMachine, PTX (sm_XY, +ptx78) to memory.
 */
#include "gpu_internal.h"

/* ---- driver ----------------------------------------------------------------------------------- */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_nvptx(void) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}


static void gpart_free(gpart *q) {
    ic_part_free(&q->P);
    memset(q, 0, sizeof *q);
}

static void gres_free(gres *R) {
    if (R->tmp) LLVMDisposeModule(R->tmp); /* before its context */
    for (int i = 0; i < R->np; i++) gpart_free(&R->p[i]);
    gpart_free(&R->lz);
    for (int i = 0; i < R->nseen; i++) free(R->seen[i].text);
    free(R->seen);
    for (int i = 0; i < R->nks; i++) free(R->ks[i].key), free(R->ks[i].apos), free(R->ks[i].abytes);
    free(R->ks);
    gg_keyer_free(R->keyer);
    memset(R, 0, sizeof *R);
}

/* Point the generator at part q: every LLVM type and the module/builder come from its context. */
void gg_bind_part(gg *g, gpart *q) {
    LLVMContextRef x = q->P.ctx;
    g->cg.ctx = x;
    g->cg.mod = q->P.mod;
    g->cg.b = g->cg.ab = q->P.b;
    g->cg.i1 = LLVMInt1TypeInContext(x);
    g->cg.i8 = LLVMInt8TypeInContext(x);
    g->cg.i16 = LLVMInt16TypeInContext(x);
    g->cg.i32 = LLVMInt32TypeInContext(x);
    g->cg.i64 = LLVMInt64TypeInContext(x);
    g->cg.f32 = LLVMFloatTypeInContext(x);
    g->cg.f64 = LLVMDoubleTypeInContext(x);
    g->cg.ptr = LLVMPointerTypeInContext(x, 0);
    g->cg.vd = LLVMVoidTypeInContext(x);
    g->f16 = LLVMHalfTypeInContext(x);
    g->gptr = LLVMPointerTypeInContext(x, 1);
    g->sptr = LLVMPointerTypeInContext(x, 3);
    g->ity = g->cg.i32;
}

/* The part the next kernel variant goes to: the one with the least work so far (LLVM
 * instructions of its variants as built), bound. Variants, not kernels, are spread: a GEMM's two variants were 43% of BERT's
 * code in one part, the critical path of the parallel O3 + ptxas. */
gpart *gg_next_part(gg *g, gres *R) {
    gpart *q = &R->p[0];
    for (int i = 1; i < R->np; i++)
        if (R->p[i].work < q->work) q = &R->p[i];
    gg_bind_part(g, q);
    return q;
}

bool gg_lazy_enabled(const gres *R) { return R->lz_on; }

/* The part of the lazy fallbacks (gpu.h ic_gpu.lazy_bc), created on first use, bound: its
 * bitcode is kept, compiled when a launch needs it (ic_gpu_lazy_ptx). */
gpart *gg_lazy_part(gg *g, gres *R) {
    gpart *q = &R->lz;
    if (!q->P.ctx && ic_part_init(&q->P, R->p[0].P.tm, "torchc_gpu_lazy"))
        ic_fail(g->c, IC_ENOMEM, "LLVM: %s", q->P.err);
    gg_bind_part(g, q);
    return q;
}

/* A part for sm: its own NVPTX TargetMachine, context, empty module with the NVPTX triple
 * and layout, and a builder; optimized by O3 and emitted as PTX. 0, or -1 with msg (q holds
 * what was made: gpart_free). */
static int part_init(gpart *q, int tsm, unsigned debug, char *msg, size_t n) {
    const char *triple = "nvptx64-nvidia-cuda";
    LLVMTargetRef target;
    char *terr = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &terr)) {
        snprintf(msg, n, "LLVM has no NVPTX target: %s", terr ? terr : "?");
        LLVMDisposeMessage(terr);
        return -1;
    }
    char cpu[16];
    snprintf(cpu, sizeof cpu, "sm_%d", tsm);
    const char *feat = tsm >= 90 ? "+ptx78" : tsm >= 80 ? "+ptx70" : "+ptx64";
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelAggressive,
                                                      LLVMRelocDefault, LLVMCodeModelDefault);
    if (!tm) {
        snprintf(msg, n, "LLVM: cannot create the NVPTX TargetMachine for %s", cpu);
        return -1;
    }
    if (ic_part_init(&q->P, tm, "torchc_gpu")) {
        LLVMDisposeTargetMachine(tm);
        snprintf(msg, n, "LLVM: %s", q->P.err);
        return -1;
    }
    q->P.tm = tm;
    q->P.own_tm = true;
    q->P.passes = "default<O3>," IC_LSR_PASSES; /* LSR: as the code generator ran it before (cg.h) */
    q->P.asm_out = true;
    q->P.what = "GPU";
    q->P.print_after = "nvptx, after O3";
    q->P.debug = debug;
    return 0;
}

int gg_part_new(gpart *q, int sm, char *msg, size_t n) {
    pthread_once(&init_once, init_nvptx);
    return part_init(q, sm, 0, msg, n);
}

void gg_part_dispose(gpart *q) { gpart_free(q); }

static int compile_threads(const ic_config *cf) {
    long n = cf->compile_threads > 0 ? (long)cf->compile_threads : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > GPU_MAXPARTS ? GPU_MAXPARTS : (int)n;
}

/* Lazy fallbacks (gpu.h ic_gpu.lazy_bc): on unless TORCHC_GPU_LAZY=0 (every variant compiled
 * up front, as before); PTX-only compiles and PTX/LLVM dumps compile everything, except that
 * TORCHC_GPU_LAZY=probe makes a PTX-only compile take the lazy path and append the lazy
 * module's PTX (made from its bitcode by ic_gpu_lazy_ptx), for tests without a GPU. */
static bool lazy_on(const ic_config *cf, bool ptx_only) {
    const char *e = cf->gpu_lazy;
    if (ptx_only) return !strcmp(e, "probe");
    return strcmp(e, "0") != 0;
}

/* Repeated layers give the same kernel again and again (BERT: 12 copies of most of its
 * kernels; a GPT-2 training step: 1143 of 1217 launches). Two ways to find a repeat:
 *  - by its structural key (gpu_key.c), before its IR is built: a variant whose key equals an
 *    earlier one's launches that function with its own buffers, grid and block (key_reuse);
 *    a variant with a new key is built straight into its part's module.
 *  - by its bitcode, after: a variant without a key (one the key cannot describe, a GEMM
 *    template's) is generated into a module of its own; when that module's bitcode, with the
 *    kernel's name as "K" (its shared-memory globals carry the name as a prefix), equals an
 *    earlier variant's, it is dropped and the launch uses the earlier function; otherwise it
 *    is linked into the part's module. The module holds the function, its globals and
 *    nvvm.annotations (block size), so equal bitcode is equal code.
 * TORCHC_DEBUG=dedupe builds every variant the second way and checks each key repeat against
 * it (key_check: same bitcode, same launch plan), else the compile fails.
 * TORCHC_GPU_DEDUPE=0 (or a PTX/LLVM debug dump) turns both off: variants are generated into
 * the part's module directly. */
static int dedupe_on(const ic_ctx *c) { return c->cfg.gpu_dedupe && !(c->debug & (IC_DEBUG_PTX | IC_DEBUG_LLVM)); }

/* Renames the definitions of module m named `from`... (the kernel and its globals, which
 * carry its name as a prefix) to `to`... ; their count */
static int rename_prefixed(LLVMModuleRef m, const char *from, const char *to) {
    size_t fl = strlen(from);
    int n = 0;
    char buf[160];
    for (int pass = 0; pass < 2; pass++)
        for (LLVMValueRef v = pass ? LLVMGetFirstGlobal(m) : LLVMGetFirstFunction(m); v;
             v = pass ? LLVMGetNextGlobal(v) : LLVMGetNextFunction(v)) {
            size_t len = 0;
            const char *nm = LLVMGetValueName2(v, &len);
            if (len < fl || strncmp(nm, from, fl) || len - fl + strlen(to) >= sizeof buf) continue;
            int k = snprintf(buf, sizeof buf, "%s%.*s", to, (int)(len - fl), nm + fl);
            LLVMSetValueName2(v, buf, (size_t)k);
            n++;
        }
    return n;
}

/* instructions of the functions defined in m (from `from` on: the ones added since) */
static size_t count_insts(LLVMModuleRef m, LLVMValueRef from) {
    size_t n = 0;
    for (LLVMValueRef f = from ? from : LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) n++;
    return n;
}

/* Before a variant: its own module in part q's context (the generator's module until gg_kend)
 * when its repeats are found by its bitcode (R->by_bc); else it is built into q's module. */
void gg_kbegin(gg *g, gres *R, gpart *q) {
    R->last_fn = LLVMGetLastFunction(q->P.mod);
    if (!dedupe_on(g->c) || !R->by_bc) return;
    R->tmp = LLVMModuleCreateWithNameInContext("torchc_kernel", q->P.ctx);
    LLVMSetTarget(R->tmp, LLVMGetTarget(q->P.mod));
    LLVMSetDataLayout(R->tmp, LLVMGetDataLayoutStr(q->P.mod));
    g->cg.mod = R->tmp;
}

/* After a variant named gv->name: 1 when it repeats an earlier one (gv now names that one),
 * 0 when it is new (linked into q's module). lazy: q is the lazy fallbacks' part (a variant
 * compiled now never takes a lazy one's code; gv->lazy says where its code is). */
int gg_kend(gg *g, gres *R, gpart *q, ic_gvariant *gv, bool lazy) {
    gv->lazy = lazy;
    R->last_seen = -1;
    if (!R->tmp) { /* generated straight into q's module: its functions since gg_kbegin */
        q->nk++;
        q->work += 1 + count_insts(q->P.mod, R->last_fn ? LLVMGetNextFunction(R->last_fn) : NULL);
        g->fn = g->cg.fn = NULL;
        g->smem = NULL;
        return 0;
    }
    LLVMModuleRef m = R->tmp;
    g->cg.mod = q->P.mod;
    g->fn = g->cg.fn = NULL;
    g->smem = NULL;
    /* the module's bitcode with the kernel's name as "K" (names are in its string table) */
    rename_prefixed(m, gv->name, "K");
    LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(m);
    rename_prefixed(m, "K", gv->name);
    size_t n = mb ? LLVMGetBufferSize(mb) : 0;
    char *bc = n ? malloc(n) : NULL;
    if (bc) memcpy(bc, LLVMGetBufferStart(mb), n);
    if (mb) LLVMDisposeMemoryBuffer(mb);
    uint64_t hv = bc ? ic_hash64(bc, n) : 0;
    for (int i = 0; hv && i < R->nseen; i++)
        if (R->seen[i].h == hv && R->seen[i].n == n && (lazy || !R->seen[i].lazy) && !memcmp(R->seen[i].text, bc, n)) {
            free(bc);
            R->tmp = NULL;
            LLVMDisposeModule(m);
            snprintf(gv->name, sizeof gv->name, "%s", R->seen[i].name);
            gv->lazy = R->seen[i].lazy;
            g->c->cg_dups++;
            R->last_seen = i;
            return 1;
        }
    if (hv && R->nseen == R->capseen) {
        int cap = R->capseen ? 2 * R->capseen : 64;
        gseen *ns = realloc(R->seen, (size_t)cap * sizeof *ns);
        if (ns) R->seen = ns, R->capseen = cap;
    }
    if (hv && R->nseen < R->capseen) {
        gseen *e = &R->seen[R->nseen++];
        e->h = hv;
        e->text = bc;
        e->n = n;
        e->lazy = lazy;
        snprintf(e->name, sizeof e->name, "%s", gv->name);
        R->last_seen = R->nseen - 1;
    } else {
        free(bc);
    }
    R->tmp = NULL;
    q->nk++;
    q->work += 1 + count_insts(m, NULL);
    if (LLVMLinkModules2(q->P.mod, m)) /* consumes m */
        ic_fail(g->c, IC_EINTERNAL, "LLVM: linking kernel %s into its part failed", gv->name);
    return 0;
}

/* ---- repeats found by their structural key (gpu_key.c) -------------------------------------- */
/* the first key entry equal to key (h, n) whose code variant `lazy` may use, or -1 */
static int key_find(const gres *R, uint64_t h, const uint8_t *key, size_t n, bool lazy) {
    for (int i = 0; i < R->nks; i++) {
        const gkseen *e = &R->ks[i];
        if (e->h == h && e->n == n && (lazy || !e->lazy) && !memcmp(e->key, key, n)) return i;
    }
    return -1;
}

/* Remembers key (h, n) for the variant gv just built (or found repeated by its bitcode): its
 * function's name, where its code is, and the base alignments its code assumes, by parameter
 * position. Out of memory: not remembered (a later repeat is built). */
static void key_add(gres *R, uint64_t h, const uint8_t *key, size_t n, const ic_gvariant *gv) {
    if (R->nks == R->capks) {
        int cap = R->capks ? 2 * R->capks : 64;
        gkseen *ns = realloc(R->ks, (size_t)cap * sizeof *ns);
        if (!ns) return;
        R->ks = ns, R->capks = cap;
    }
    gkseen e = {.h = h, .n = n, .lazy = gv->lazy, .nalign = gv->nalign, .seen = R->last_seen, .grid = gv->grid,
                .block = gv->block, .dsmem = gv->dsmem, .vec = gv->vec};
    e.key = malloc(n ? n : 1);
    e.apos = malloc(((size_t)gv->nalign + 1) * sizeof(int));
    e.abytes = malloc(((size_t)gv->nalign + 1) * sizeof(int));
    if (!e.key || !e.apos || !e.abytes) {
        free(e.key), free(e.apos), free(e.abytes);
        return;
    }
    memcpy(e.key, key, n);
    snprintf(e.name, sizeof e.name, "%s", gv->name);
    for (int j = 0; j < gv->nalign; j++) {
        int p = 0;
        while (p < gv->nparams && gv->params[p] != gv->align_buf[j]) p++;
        if (p == gv->nparams) { /* an aligned buffer is a parameter (gg_gen_variant): never here */
            free(e.key), free(e.apos), free(e.abytes);
            return;
        }
        e.apos[j] = p;
        e.abytes[j] = gv->align_bytes[j];
    }
    R->ks[R->nks++] = e;
}

/* The launch plan of a variant with parameters ub[0..nu) whose code is entry e's function. */
static void key_reuse(ic_ctx *c, const gkseen *e, const int *ub, int nu, ic_gvariant *out) {
    snprintf(out->name, sizeof out->name, "%s", e->name);
    out->lazy = e->lazy;
    out->grid = e->grid;
    out->block = e->block;
    out->part_off = -1;
    out->ctr = 0;
    out->cl = 1;
    out->dsmem = e->dsmem;
    out->vec = e->vec;
    out->nparams = nu;
    out->nalign = 0;
    out->params = malloc((size_t)(nu + 1) * sizeof(int));
    out->align_buf = malloc((size_t)(e->nalign + 1) * sizeof(int));
    out->align_bytes = malloc((size_t)(e->nalign + 1) * sizeof(int));
    if (!out->params || !out->align_buf || !out->align_bytes) ic_fail(c, IC_ENOMEM, "out of memory");
    memcpy(out->params, ub, (size_t)nu * sizeof(int));
    for (int j = 0; j < e->nalign; j++) {
        out->align_buf[j] = ub[e->apos[j]];
        out->align_bytes[j] = e->abytes[j];
    }
    out->nalign = e->nalign;
}

/* TORCHC_DEBUG=dedupe: variant gv was built although entry e has its key; its code (canonical
 * bitcode) and launch plan must be e's. A difference is an internal error: the key misses
 * something the generator reads. */
static void key_check(ic_ctx *c, gres *R, const gkseen *e, const int *ub, int nu, const ic_gvariant *gv) {
    const gseen *a = e->seen >= 0 ? &R->seen[e->seen] : NULL, *b = R->last_seen >= 0 ? &R->seen[R->last_seen] : NULL;
    if (!a || !b) ic_fail(c, IC_EINTERNAL, "GPU dedupe check: %s: no bitcode to compare", gv->name);
    if (a->n != b->n || memcmp(a->text, b->text, a->n))
        ic_fail(c, IC_EINTERNAL, "GPU dedupe check: %s has the key of %s but other code", gv->name, e->name);
    /* what key_reuse would have made */
    bool same = e->grid == gv->grid && e->block == gv->block && e->dsmem == gv->dsmem && e->vec == gv->vec &&
                nu == gv->nparams && !memcmp(ub, gv->params, (size_t)nu * sizeof(int)) && e->nalign == gv->nalign;
    for (int j = 0; same && j < e->nalign; j++)
        same = gv->align_buf[j] == ub[e->apos[j]] && gv->align_bytes[j] == e->abytes[j];
    if (!same) ic_fail(c, IC_EINTERNAL, "GPU dedupe check: %s has the key of %s but another launch plan", gv->name, e->name);
    R->nchecked++;
}

gkeyer *gg_keyer(gres *R) { return R->keyer; }

int gg_key_find(gg *g, gres *R, gkq *q, bool lazy, const int *ub, int nu, ic_gvariant *gv) {
    q->h = q->key ? ic_hash64(q->key, q->n) : 0;
    q->hit = q->key ? key_find(R, q->h, q->key, q->n, lazy) : -1;
    if (q->hit >= 0 && !R->check) {
        key_reuse(g->c, &R->ks[q->hit], ub, nu, gv);
        g->c->cg_dups++;
        R->nkeyrep++;
        return 1;
    }
    R->nbuilt++;
    R->by_bc = !q->key || R->check; /* a new key: new code, no bitcode to compare */
    return 0;
}

void gg_key_built(gg *g, gres *R, const gkq *q, int rep, const int *ub, int nu, const ic_gvariant *gv) {
    R->by_bc = true;
    if (q->hit >= 0) key_check(g->c, R, &R->ks[q->hit], ub, nu, gv);
    else if (q->key) key_add(R, q->h, q->key, q->n, gv);
    R->nbconly += q->hit < 0 && rep;
}

static double thread_cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int ic_gpu_target_sm(int sm) { return sm > 90 ? 90 : sm < 52 ? 52 : sm; }

int ic_gpu_pdl(const ic_config *cf, int sm) { return pdl_on(cf, sm); }

void gg_codegen(ic_ctx *c, int tsm, int nsm, gres *R) {
    const double tg0 = ic_now_ms();
    const double tc0 = thread_cpu_ms();
    bool ptx_only = c->ptx_sm > 0; /* ic_graph_to_ptx */
    char msg[512];
    c->gpu_stage_ok = tsm >= 80; /* up to 72 + 8 KB of shared memory a block, two blocks an SM */
    pthread_once(&init_once, init_nvptx);
    {
        LLVMTargetRef target;
        char *terr = NULL;
        if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &target, &terr)) {
            snprintf(msg, sizeof msg, "%s", terr ? terr : "?");
            LLVMDisposeMessage(terr);
            ic_fail(c, IC_EUNSUPPORTED, "LLVM has no NVPTX target: %s", msg);
        }
    }
    int ngen = 0; /* kernels that may be generated: parts get about 4 each at least */
    for (int ki = 0; ki < c->nkernels; ki++) ngen += c->kernels[ki].is_ext || !ic_kernel_empty(&c->kernels[ki]);
    int kpp = (int)c->cfg.kernels_per_part; /* tests set 1: every kernel its own module */
    /* PTX-only compiles (make ptx-check) keep one module unless the tests ask for parts */
    int np = ptx_only && !kpp ? 1 : compile_threads(&c->cfg);
    int per = kpp > 0 ? kpp : 4;
    if (np > (ngen + per - 1) / per) np = (ngen + per - 1) / per;
    if (np < 1) np = 1;
    R->np = np;
    for (int i = 0; i < np; i++) {
        if (part_init(&R->p[i], tsm, c->debug, msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "%s", msg);
    }
    R->lz_on = dedupe_on(c) && lazy_on(&c->cfg, ptx_only);
    R->last_seen = -1;
    R->by_bc = true;
    if (dedupe_on(c)) {
        R->keyer = gg_keyer_new();
        if (!R->keyer) ic_fail(c, IC_ENOMEM, "out of memory");
        R->check = (c->debug & IC_DEBUG_DEDUPE) != 0;
    }

    gg G = {.c = c, .gen = 1, .sm = tsm};
    gg *g = &G;
    g->cg.c = c;
    g->cg.width = 1;
    g->cg.vec_var = -1;
    ol_target_nvptx(&g->cg, tsm);
    gg_bind_part(g, &R->p[0]);

    size_t nx = (size_t)c->nxs + 1;
    g->var_val = ic_alloc(c, ((size_t)c->nvars + 1) * sizeof(LLVMValueRef));
    g->buf_ptr = ic_alloc(c, ((size_t)c->nbufs + 1) * sizeof(LLVMValueRef));
    g->buf_param = ic_alloc(c, ((size_t)c->nbufs + 1) * sizeof(LLVMValueRef));
    g->written = ic_alloc(c, (size_t)c->nbufs + 1);
    g->align = ic_alloc(c, ((size_t)c->nbufs + 1) * sizeof(int));
    g->memo = ic_alloc(c, nx * VMAX * sizeof(LLVMValueRef));
    g->memo_gen = ic_alloc(c, nx * VMAX * sizeof(uint32_t));
    g->vld = ic_alloc(c, nx * sizeof(LLVMValueRef));
    g->vld_gen = ic_alloc(c, nx * sizeof(uint32_t));
    g->pmemo = ic_alloc(c, nx * SMAX * VMAX * sizeof(LLVMValueRef));
    g->pvld = ic_alloc(c, nx * SMAX * sizeof(LLVMValueRef));
    g->pgen = ic_alloc(c, nx * SMAX * sizeof(uint32_t));
    g->pst = ic_alloc(c, nx * SMAX * sizeof(uint32_t));
    g->dep = ic_alloc(c, nx * sizeof(bool));
    g->dep_gen = ic_alloc(c, nx * sizeof(uint32_t));
    int maxitems = 1;
    for (int i = 0; i < c->nkernels; i++)
        if (c->kernels[i].nitems > maxitems) maxitems = c->kernels[i].nitems;
    g->rowval = ic_alloc(c, ((size_t)maxitems + 1) * sizeof(LLVMValueRef));
    gg_buffer_bounds(g);

    ic_gpu *gpu = R->gpu; /* the driver's: freed by it on a failure */
    gpu->sm = tsm;
    gpu->pdl = pdl_on(&c->cfg, tsm);
    /* row scratch: planned by the driver (compile.c plan_row_scratch) */
    gpu->nbufs = c->nbufs;
    gpu->scratch_off = malloc(((size_t)c->nbufs + 1) * sizeof(int64_t));
    if (!c->row_scratch) ic_fail(c, IC_EINTERNAL, "GPU codegen: row scratch not planned");
    if (!gpu->scratch_off) ic_fail(c, IC_ENOMEM, "out of memory");
    memcpy(gpu->scratch_off, c->row_scratch, (size_t)c->nbufs * sizeof(int64_t));
    int nlaunch = 0;
    for (int ki = 0; ki < c->nkernels; ki++) nlaunch += 2 + c->kernels[ki].npos;
    gpu->k = calloc((size_t)nlaunch + 1, sizeof(ic_gkernel));
    if (!gpu->k) ic_fail(c, IC_ENOMEM, "out of memory");
    static int module_counter;
    int mid = __atomic_fetch_add(&module_counter, 1, __ATOMIC_RELAXED);
    for (int ki = 0, ext = 0, fused = -1, choice_kj = -1; ki < c->nkernels; ki++) {
        ic_kernel *k = &c->kernels[ki];
        if (ki == fused) continue; /* evaluated in the epilogue of the GEMM before it */
        if (k->is_ext) { /* extern call: the runtime calls the handler between launches */
            ic_gkernel *K = &gpu->k[gpu->nkernels++];
            K->ext = ++ext;
            int nnew = 0;
            gg_next_part(g, R);
            fused = gg_gemm_kernel(g, ki, K, tsm, nsm, mid, R, &nnew, gpu, &choice_kj); /* or our GEMM template */
            continue;
        }
        if (ic_kernel_empty(k)) continue;
        gg_arg_values(k); /* max(dim)'s value from its argmax (gpu_rows.c) */
        gg_next_part(g, R); /* bound for the planning; each variant picks its own part below */
        int32_t vv = -1;
        int64_t vsize = 1;
        if (k->ninner > 0 && !k->vec_outer) {
            vv = k->ivar[k->ninner - 1];
            vsize = k->isize[k->ninner - 1];
        }
        int *used, *ub;
        int nu = gg_variant_params(c, k, &used, &ub); /* the same for all its variants */
        int V = gg_choose_vec(c, k, vv, vsize, k->has_red);
        int nvar = V > 1 ? 2 : 1;
        plan *TP = ic_alloc(c, sizeof *TP), *TP2 = ic_alloc(c, sizeof *TP2);
        bool tile = gg_choose_tile(c, k, TP);
        bool tile2 = tile && gg_choose_tile2(c, k, TP, TP2); /* V2: word tile, then TP as fallback */
        if (tile) V = 1, nvar = tile2 ? 2 : 1;
        /* split rows: partial slots in extra workspace, launches per pass, then a final one */
        int on_a = -1, on_b = -1;
        ic_xid on_shift = -1;
        int on_kind = tile || k->vec_outer ? ON_NONE : gg_online_pair(c, k, &on_a, &on_b, &on_shift);
        int S = tile ? 0 : gg_choose_split(c, k, nsm, V, on_kind != ON_NONE);
        if (S <= 1) on_kind = ON_NONE;
        int *slot = ic_alloc(c, ((size_t)k->nitems + 1) * sizeof(int));
        int nslot = 0, nfinal = 0; /* nfinal: stores the final launch makes */
        int64_t part_off = -1;
        for (int j = 0; j < k->nitems; j++) {
            const ic_item *it = &k->items[j];
            if (it->kind == IT_REDUCE) {
                slot[j] = nslot;
                nslot += ic_is_arg(it->red_op) || (on_kind == ON_VAR && j == on_b) ? 2 : 1;
            }
            nfinal += it->store && (it->kind == IT_REDUCE || it->pos % 2 == 0);
        }
        if (S > 1) { /* the partials (and a split column kernel's row value area) are addressed
                      * in the kernel's index type: far below 2^31 bytes, else unsplit */
            int64_t rows = 1;
            for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
            if ((int64_t)nslot * rows * (S + 1) * 8 >= ((int64_t)1 << 30)) S = 0, on_kind = ON_NONE;
        }
        /* launches: passes[q] >= 0 a pass's partials, -1 the final one; cpos[q] > 0 (split
         * columns) the combining launch of that pass's partials, acomb[q] (gpu_internal.h) */
        int passes[IC_MAX_DIMS * 16 + 2], cpos[IC_MAX_DIMS * 16 + 2], acomb[IC_MAX_DIMS * 16 + 2], npass = 0;
        const int maxl = (int)(sizeof passes / sizeof passes[0]) - 2;
        if (S > 1) {
            int64_t rows = 1;
            for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
            /* only this kernel's launches; split columns also keep the row value area after
             * the partials */
            part_off = ic_ws_reserve(c, ki, (int64_t)nslot * rows * S * 8 + (k->vec_outer ? (int64_t)nslot * rows * 8 : 0));
            int last = 0; /* split columns: the last pass with partials not yet combined */
            for (int p = 1; p < k->npos && npass < maxl; p += 2) {
                bool any = false, red = false;
                for (int j = 0; j < k->nitems; j++) {
                    any |= k->items[j].pos == p;
                    red |= k->items[j].pos == p && k->items[j].kind == IT_REDUCE;
                }
                if (on_kind && p == k->items[on_b].pos) continue; /* made in A's launch */
                if (!any) continue;
                if (k->vec_outer && last > 0) { /* combined once before a later pass reads them */
                    passes[npass] = -1, cpos[npass] = last, acomb[npass++] = last;
                    last = 0;
                }
                cpos[npass] = 0, acomb[npass] = p;
                passes[npass++] = p;
                if (red) last = p;
            }
            int lastp = 0;
            for (int q = 0; q < npass; q++)
                if (passes[q] >= 0) lastp = passes[q];
            if (nfinal) passes[npass] = -1, cpos[npass] = 0, acomb[npass++] = lastp;
        } else {
            passes[npass++] = 0;
        }
        for (int q = 0; q < npass; q++) {
            ic_gkernel *K = &gpu->k[gpu->nkernels++];
            K->split_final = passes[q] < 0 && cpos[q] == 0;
            for (int v = 0; v < nvar; v++) {
                plan P; /* copied whole: its padding is part of the key (gpu_key.c) */
                memset(&P, 0, sizeof P);
                if (tile) memcpy(&P, tile2 && v == 0 ? TP2 : TP, sizeof P);
                else gg_plan_kernel(c, k, &P, v == 0 ? V : 1, nsm, S, passes[q], slot,
                                 on_kind && passes[q] == k->items[on_a].pos);
                if (S > 1) {
                    P.nslot = nslot;
                    P.cpos = cpos[q];
                    P.acomb = acomb[q];
                }
                P.on_kind = on_kind;
                P.on_a = on_a;
                P.on_b = on_b;
                P.on_shift = on_shift;
                if (P.grid == 0) continue;
                if ((int64_t)P.grid > 0x7FFFFFFF) ic_fail(c, IC_EUNSUPPORTED, "GPU grid too large");
                bool i32 = gg_fits_i32(g, k, &P);
                g->ity = i32 ? g->cg.i32 : g->cg.i64;
                char name[48];
                if (S > 1)
                    snprintf(name, sizeof name, "tc%d_k%d%s%d%s", mid % 1000000, ki,
                             passes[q] >= 0 ? "p" : cpos[q] ? "c" : "f",
                             passes[q] >= 0 ? passes[q] : cpos[q], P.V > 1 ? "v" : "");
                else
                    snprintf(name, sizeof name, "tc%d_k%d%s", mid % 1000000, ki, P.V > 1 ? "v" : "");
                ic_gvariant *gv = &K->v[K->nvar++];
                /* the scalar fallback of a vector variant that only assumes aligned bases */
                bool lazy = v == 1 && K->nvar == 2 && K->v[0].nalign > 0 && R->lz_on;
                /* a repeat of an earlier variant's key: that function, launched with its own
                 * buffers; else built (and, with dedupe, compared by its bitcode) */
                gkq kq = {0};
                if (R->keyer) kq.key = gg_variant_key(R->keyer, g, k, &P, i32, used, ub, nu, &kq.n);
                if (!gg_key_find(g, R, &kq, lazy, ub, nu, gv)) {
                    gpart *q = lazy ? gg_lazy_part(g, R) : gg_next_part(g, R);
                    gg_kbegin(g, R, q);
                    gg_gen_variant(g, k, &P, gv, name, used, ub, nu);
                    gg_key_built(g, R, &kq, gg_kend(g, R, q, gv, lazy), ub, nu, gv);
                }
                gv->part_off = part_off;
                if (c->debug & IC_DEBUG_LOOPS) /* the launch plan (describe's form, the kernel: a repeat's
                                                 * name is the first's), also PTX-only */
                    fprintf(stderr, "gpu %s: grid %u block %u vec %d (k%d)\n", gv->name, gv->grid, gv->block, gv->vec,
                            ki);
                /* the vector variant needs no fallback when it assumes no alignment */
                if (v == 0 && nvar == 2 && K->v[0].nalign == 0) break;
            }
            if (ki == choice_kj) { /* the extern path's consumer in the last GEMM choice */
                K->choice = gpu->nchoice;
                K->role = IC_ROLE_CONSUMER;
            }
        }
    }
    if (R->lz.nk > 0) { /* the lazy fallbacks' bitcode, compiled on first use (runtime/cuda.c) */
        char *verr = NULL; /* verified now, so that a bad kernel is an eager fallback, not a run error */
        bool bad = LLVMVerifyModule(R->lz.P.mod, LLVMReturnStatusAction, &verr);
        if (bad) snprintf(msg, sizeof msg, "%s", verr ? verr : "?");
        if (verr) LLVMDisposeMessage(verr);
        if (bad) ic_fail(c, IC_EINTERNAL, "LLVM verifier (GPU, fallbacks): %s", msg);
        LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(R->lz.P.mod);
        size_t n = mb ? LLVMGetBufferSize(mb) : 0;
        gpu->lazy_bc = n ? malloc(n) : NULL;
        if (gpu->lazy_bc) memcpy(gpu->lazy_bc, LLVMGetBufferStart(mb), n), gpu->lazy_n = n;
        if (mb) LLVMDisposeMemoryBuffer(mb);
        if (!gpu->lazy_bc) ic_fail(c, IC_ENOMEM, "out of memory");
        c->cg_lazy += R->lz.nk;
    }
    if (R->check) /* TORCHC_DEBUG=dedupe: what the keys found, and what only the bitcode did */
        fprintf(stderr, "torchc gpu dedupe check: %d key repeats built and equal, %d repeats found by bitcode only, %d keys\n",
                R->nchecked, R->nbconly, R->nks);
    if (c->debug & IC_DEBUG_TIME) /* the IR build's own CPU time (its wall time is the irgen stage) */
        fprintf(stderr, "torchc gpu irgen: cpu %.2f ms, %d variants built, %d repeats by key, %d by bitcode\n",
                thread_cpu_ms() - tc0, R->nbuilt, R->nkeyrep, c->cg_dups - R->nkeyrep);
    double tg = ic_now_ms(); /* TORCHC_DEBUG=time stages: irgen, then opt (O3) and emit (PTX) of the parts in parallel, jit (driver) */
    c->t_stage[IC_T_IRGEN] += tg - tg0;
    int nw = 0; /* parts with kernels (an empty module is still emitted when there are none) */
    for (int i = 0; i < np; i++)
        if (R->p[i].nk > 0 || i == 0) nw = i + 1;
    ic_part *run[GPU_MAXPARTS];
    for (int i = 0; i < nw; i++) run[i] = &R->p[i].P;
    ic_parts_run(run, nw); /* verify, O3, PTX: parts 1.. on their own threads */
    double topt = 0, temit = 0;
    for (int i = 0; i < nw; i++) {
        if (R->p[i].P.err[0]) ic_fail(c, IC_EINTERNAL, "%s", R->p[i].P.err);
        topt += R->p[i].P.t_opt;
        temit += R->p[i].P.t_emit;
        c->cpu_other += R->p[i].P.cpu; /* part 0 ran on this thread (cpu 0) */
    }
    c->cg_parts = nw;
    size_t total = 1;
    for (int i = 0; i < nw; i++) total += LLVMGetBufferSize(R->p[i].P.out) + sizeof IC_PTX_SEP;
    gpu->ptx = malloc(total);
    if (!gpu->ptx) ic_fail(c, IC_ENOMEM, "out of memory");
    size_t at = 0;
    for (int i = 0; i < nw; i++) {
        if (i) {
            memcpy(gpu->ptx + at, IC_PTX_SEP, sizeof IC_PTX_SEP - 1);
            at += sizeof IC_PTX_SEP - 1;
        }
        size_t n = LLVMGetBufferSize(R->p[i].P.out);
        memcpy(gpu->ptx + at, LLVMGetBufferStart(R->p[i].P.out), n);
        at += n;
    }
    gpu->ptx[at] = 0;
    { /* the parallel phase's wall time, split in proportion of the parts' own times */
        double w = ic_now_ms() - tg;
        c->t_stage[IC_T_OPT] += w * topt / (topt + temit + 1e-9);
        c->t_stage[IC_T_EMIT] += w * temit / (topt + temit + 1e-9);
    }
    if (ptx_only && gpu->lazy_bc) { /* not timed: a run compiles these on first need only */ /* TORCHC_GPU_LAZY=probe: the lazy module's PTX as the last module */
        double tp = thread_cpu_ms(); /* left out of the compile's cpu too (c->cpu_probe) */
        char *lp = ic_gpu_lazy_ptx(gpu->lazy_bc, gpu->lazy_n, tsm, msg, sizeof msg);
        c->cpu_probe += thread_cpu_ms() - tp;
        if (!lp) ic_fail(c, IC_EINTERNAL, "%s", msg);
        size_t ln = strlen(lp);
        char *all = realloc(gpu->ptx, at + sizeof IC_PTX_SEP + ln);
        if (!all) {
            free(lp);
            ic_fail(c, IC_ENOMEM, "out of memory");
        }
        memcpy(all + at, IC_PTX_SEP, sizeof IC_PTX_SEP - 1);
        memcpy(all + at + sizeof IC_PTX_SEP - 1, lp, ln + 1);
        gpu->ptx = all;
        free(lp);
    }
    if (c->debug & IC_DEBUG_PTX) ic_debug_dump("=== torchc ptx ===\n%s\n", gpu->ptx);
}

void ic_codegen_gpu(ic_ctx *c, int tsm, int nsm, ic_gpu *gpu) {
    /* Errors longjmp to the driver; catch them here first to release the LLVM objects. */
    gres R = {.gpu = gpu};
    jmp_buf saved;
    memcpy(saved, c->jb, sizeof(jmp_buf));
    if (setjmp(c->jb)) {
        gres_free(&R);
        memcpy(c->jb, saved, sizeof(jmp_buf));
        longjmp(c->jb, 1);
    }
    gg_codegen(c, tsm, nsm, &R);
    gres_free(&R);
    memcpy(c->jb, saved, sizeof(jmp_buf));
}

char *ic_gpu_lazy_ptx(const void *bc, size_t n, int sm, char *msg, size_t msgn) {
    pthread_once(&init_once, init_nvptx);
    gpart q = {0};
    char *ptx = NULL;
    if (part_init(&q, sm, 0, msg, msgn)) goto out;
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(bc, n, "torchc_gpu_lazy");
    LLVMModuleRef m = NULL;
    if (!mb || LLVMParseBitcodeInContext2(q.P.ctx, mb, &m)) {
        snprintf(msg, msgn, "LLVM: the bitcode does not parse");
        if (mb) LLVMDisposeMemoryBuffer(mb);
        goto out;
    }
    LLVMDisposeMemoryBuffer(mb); /* parsed: the module does not keep it */
    LLVMDisposeModule(q.P.mod);
    q.P.mod = m;
    ic_part_run(&q.P);
    if (q.P.err[0]) {
        snprintf(msg, msgn, "%s", q.P.err);
        goto out;
    }
    size_t len = LLVMGetBufferSize(q.P.out);
    ptx = malloc(len + 1);
    if (!ptx) {
        snprintf(msg, msgn, "out of memory");
        goto out;
    }
    memcpy(ptx, LLVMGetBufferStart(q.P.out), len);
    ptx[len] = 0;
out:
    gpart_free(&q);
    return ptx;
}
