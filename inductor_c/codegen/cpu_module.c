/* cpu_module.c — the CPU code generator's driver: the kernels of a graph into up to
 * IC_CG_PARTS LLVM modules (cpu_llvm.c emits each kernel), each verified, optimized by the
 * pipeline of ic_cpu_pipeline and emitted to an object file (parts on parallel threads: the
 * module parts of codegen/part.c, which the GPU code generator uses too).
 * Looking the objects up in the code caches and loading them (ORC LLJIT, runtime/jit.c) is
 * the driver's (backends.c), as for the GPU.
 *
 * Requires: finalized kernels and buffers, c->key when keyed.
 * Produces: the kernels' symbol names (ic_cpu_symbols: fns slot of each), and object files
 *   that define them (ic_codegen_cpu), owned by c->cg_res until ic_codegen_cleanup.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "../ic_diskcache.h"
#include "../support.h"
#include "cpu.h"

/* ---- driver ----------------------------------------------------------------------------- */
static atomic_int module_counter;

/* Kernels are spread over up to IC_CG_PARTS modules, each in its own LLVMContext, when the
 * graph is big enough: IR is built on the calling thread (it reads the arena), then each
 * module is optimized and emitted to an object file on its own thread with its own
 * TargetMachine. */
#define IC_CG_PAR_MIN_ITEMS 64 /* below this, threads cost more than they save */

typedef struct cg_res {
    ic_part parts[IC_CG_PARTS];
    int ninsts[IC_CG_PARTS]; /* a part's instructions before optimization */
    bool hot[IC_CG_PARTS];   /* a part with a hot kernel: LSR (IC_LSR_MIN_WORK) */
    int nparts;
    LLVMBuilderRef ab;
    char *cpu, *feat, *triple;
    LLVMTargetMachineRef tm; /* the host pool's, held by this compilation (part 0 runs with it) */
    LLVMMemoryBufferRef mb;  /* gen_deduped's bitcode while it allocates (ic_alloc may longjmp) */
    ic_cpu_tier0 *tier;      /* a tiered compile: its bitcode (freed here on an error) */
} cg_res;

static void cg_res_free(cg_res *r) {
    if (r->ab) LLVMDisposeBuilder(r->ab);
    if (r->mb) LLVMDisposeMemoryBuffer(r->mb);
    for (int i = 0; i < r->nparts; i++) ic_part_free(&r->parts[i]);
    if (r->tier) ic_cpu_tier0_free(r->tier);
    if (r->tm) ic_host_tm_release(r->tm);
    if (r->cpu) LLVMDisposeMessage(r->cpu);
    if (r->feat) LLVMDisposeMessage(r->feat);
    if (r->triple) LLVMDisposeMessage(r->triple);
    memset(r, 0, sizeof *r);
}

/* The optimization pipeline, chosen per module by its size. Small modules get LLVM's
 * default<O3>: on short rows its loop passes (partial unrolling, induction variables) make
 * kernels faster (softmax 64x128: 4.4 instead of 5.9 us). Big modules get a lean pipeline:
 * the IR is explicitly vectorized and its loops are simple, so of O3 only what improves
 * such code runs: inlining of the kernel body, SROA (allocas to SSA), CSE, instcombine, LICM
 * (hoists the per-row invariants), GVN (loads forwarded across noalias buffers). On big
 * kernels it runs as fast as O3 (the CPU suite's 4096x1024 kernels within 2%, 1 thread) at a
 * fifth of the optimization time (O3 was dominated by instcombine and loop passes over code
 * they could not improve; its time grows faster than the IR).
 * Loop strength reduction (cg.h IC_LSR_PASSES) ends the pipeline of a module with a hot
 * kernel only: one that touches IC_LSR_MIN_WORK elements or more a call. Kernels below run as
 * fast without it (1 thread: rows of 16..1024 x 1024 within 2%, DenseNet's and a transformer's
 * training steps at batch 2 unchanged), and their code is generated ~23% faster; a 4096x1024
 * layernorm runs ~15% slower without it. Hot kernels go to parts of their own (assign_parts).
 * The text returned (the pipelines and the thresholds) is part of the code key. */
#define IC_O3_MAX_INSTS 1500 /* instructions of a module before optimization */
#define IC_LSR_MIN_WORK (1 << 19) /* elements touched by a call of a hot kernel (ic_kernel.work) */
#define LEAN_PIPELINE                                                                           \
    "always-inline,function(sroa,early-cse,instcombine,simplifycfg,loop-mssa(licm),gvn,instcombine," \
    "simplifycfg)"
#define O1_PIPELINE "always-inline,function(sroa,early-cse,instcombine,simplifycfg)"
/* tier 0 (ic_codegen_cpu's tier argument): the IR cleaned as little as the fast instruction
 * selector needs to make tolerable code (allocas to SSA, the body inlined), no loop passes */
#define TIER0_PIPELINE O1_PIPELINE
#define TIER0_MAX_BLOCK 2000 /* instructions in one basic block past which tier 0 emits at O1 */

const char *ic_cpu_pipeline(int opt_level) {
    if (opt_level <= 1) return O1_PIPELINE "; then " IC_LSR_PASSES " with a kernel of 524288 elements";
    return "default<O3> below 1500 instructions, else " LEAN_PIPELINE "; then " IC_LSR_PASSES
           " with a kernel of 524288 elements";
}

static const char *module_pipeline(int opt_level, int ninsts, bool hot) {
    if (opt_level <= 1) return hot ? O1_PIPELINE "," IC_LSR_PASSES : O1_PIPELINE;
    if (ninsts <= IC_O3_MAX_INSTS) return hot ? "default<O3>," IC_LSR_PASSES : "default<O3>";
    return hot ? LEAN_PIPELINE "," IC_LSR_PASSES : LEAN_PIPELINE;
}

static bool hot_kernel(const ic_kernel *k) { return k->work >= IC_LSR_MIN_WORK; }

/* the longest basic block of a module, in instructions */
static int max_block_insts(LLVMModuleRef m) {
    int best = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b)) {
            int n = 0;
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) n++;
            if (n > best) best = n;
        }
    return best;
}

static int count_insts(LLVMModuleRef m) {
    int n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b))
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i)) n++;
    return n;
}

/* a hint that two kernels may compile to the same code: their loop structure and item count
 * (equal code is decided by the bitcode of their bodies; the hint only keeps them together) */
static uint64_t shape_hint(const ic_kernel *k) {
    uint64_t h = 1469598103934665603ull;
#define MIX(x_) (h = (h ^ (uint64_t)(x_)) * 1099511628211ull)
    MIX(k->nitems), MIX(k->nf), MIX(k->nouter), MIX(k->ninner), MIX(k->ntiles), MIX(k->tile), MIX(k->vec_outer);
    MIX(k->nob), MIX(k->split), MIX(k->has_red), MIX(k->iters), MIX(k->npos), MIX(k->vo_unroll), MIX(k->nchunks);
    for (int d = 0; d < k->nf; d++) MIX(k->fsize[d]);
    for (int d = 0; d < k->nouter; d++) MIX(k->osize[d]);
    for (int d = 0; d < k->ninner; d++) MIX(k->isize[d]);
#undef MIX
    return h ? h : 1;
}

static int by_items(const void *a, const void *b, void *arg) { /* biggest first, then in kernel order */
    const ic_kernel *ks = arg;
    int x = *(const int *)a, y = *(const int *)b;
    int nx = ks[x].nitems, ny = ks[y].nitems;
    return nx != ny ? (nx < ny ? 1 : -1) : (x > y) - (x < y);
}

/* Greedy balance of kernels over parts by item count (a proxy of their IR size); kernels of
 * the same shape hint go to one part (where an identical body is shared: dedupe) and count
 * once. Hot and cold kernels (hot_kernel) go to parts of their own when the graph is split:
 * the cold ones over the parts the CPUs allow, as before, the hot ones over parts beyond
 * those, as many as their share of the items would take (at least one); hot[p] says which. */
static int assign_parts(ic_ctx *c, int *part_of, bool dedupe, bool *hot) {
    int items = 0, nk = 0, hitems = 0, nhk = 0;
    for (int i = 0; i < c->nkernels; i++) {
        part_of[i] = -1;
        if (c->kernels[i].is_ext) continue;
        items += c->kernels[i].nitems + 1;
        nk++;
        if (hot_kernel(&c->kernels[i])) hitems += c->kernels[i].nitems + 1, nhk++;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int np = ncpu < 2 ? 1 : ncpu > IC_CG_PARTS / 2 ? IC_CG_PARTS / 2 : (int)ncpu;
    if (np > nk) np = nk;
    if (items < IC_CG_PAR_MIN_ITEMS || (c->debug & IC_DEBUG_LLVM)) np = 1;
    if (np < 1) np = 1;
    /* cold parts [0, nc), hot parts [nc, np); one part of both when not split */
    int nc = np, nh = 0;
    if (np > 1 && nhk == nk) {
        nc = 0, nh = np;
    } else if (np > 1 && nhk) { /* a kernel or more in each part */
        nc = np < nk - nhk ? np : nk - nhk;
        nh = (int)(((long long)np * hitems + items - 1) / items);
        nh = nh < 1 ? 1 : nh > np ? np : nh;
        nh = nh > nhk ? nhk : nh;
    }
    np = nc + nh;
    for (int p = 0; p < np; p++) hot[p] = p >= nc || (np == 1 && nhk > 0);
    /* part 0 runs on the calling thread after it has built the IR of every part: give it
     * a head start of ~1/24 of the work so the parts finish together */
    int load[IC_CG_PARTS] = {np > 1 ? items / 24 : 0};
    /* biggest first */
    int *order = ic_alloc(c, (size_t)(nk + 1) * sizeof(int)), n = 0;
    for (int i = 0; i < c->nkernels; i++)
        if (!c->kernels[i].is_ext) order[n++] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_items, c->kernels);
    /* shape hints seen: open addressing, the part of each */
    int cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    uint64_t *hk = dedupe && np > 1 ? ic_alloc(c, (size_t)cap * sizeof(uint64_t)) : NULL;
    int *hp = hk ? ic_alloc(c, (size_t)cap * sizeof(int)) : NULL;
    for (int i = 0; i < n; i++) {
        const ic_kernel *k = &c->kernels[order[i]];
        /* the parts of the kernel's class: [lo, hi) */
        int lo = np > 1 && hot_kernel(k) ? nc : 0, hi = np > 1 && !hot_kernel(k) ? nc : np;
        int best = lo, slot = -1;
        if (hk) {
            uint64_t h = shape_hint(k) ^ (hot_kernel(k) ? 0x9e3779b97f4a7c15ull : 0); /* in its class's parts */
            h = h ? h : 1;
            for (slot = (int)(h & (uint64_t)(cap - 1)); hk[slot] && hk[slot] != h; slot = (slot + 1) & (cap - 1)) {}
            if (hk[slot]) {
                part_of[order[i]] = hp[slot];
                load[hp[slot]] += 1;
                continue;
            }
            hk[slot] = h;
        }
        for (int p = lo + 1; p < hi; p++)
            if (load[p] < load[best]) best = p;
        part_of[order[i]] = best;
        if (slot >= 0) hp[slot] = best;
        load[best] += k->nitems + 1;
    }
    return np;
}

/* ---- identical kernels ----------------------------------------------------------------------
 * Repeated layers give the same kernel again and again (ResNet-50's training forward: 109
 * kernels, 33 distinct bodies): each kernel's body is first generated alone into a scratch
 * module of its part's context (named K_body); when that module's bitcode equals an earlier
 * kernel's of the same part, the kernel gets only its wrapper (which loads its own buffers)
 * calling the earlier body, which then stays a function of its own (noinline) instead of
 * being inlined into each wrapper; otherwise the kernel is generated into the part's module
 * as before. The body of a kernel used once is unchanged. Off with an LLVM dump (the module
 * printed is the one compiled). */
typedef struct kseen {
    uint64_t h;
    size_t n;
    char *bc;
    LLVMValueRef body;
    bool shared;
} kseen;

typedef struct kdedupe {
    kseen *e;
    int n, cap; /* cap: a power of two, >= 2 * kernels */
    int vinsts; /* instructions of the bodies not generated again */
} kdedupe;

static int count_insts(LLVMModuleRef m);

static void gen_deduped(ic_ctx *c, cg *g, kdedupe *D, LLVMModuleRef pmod, ic_kernel *k, const char *name,
                        const char *cpu, const char *feat, int phase) {
    LLVMModuleRef tmp = LLVMModuleCreateWithNameInContext("torchc_kernel", g->ctx);
    LLVMSetTarget(tmp, LLVMGetTarget(pmod));
    LLVMSetDataLayout(tmp, LLVMGetDataLayoutStr(pmod));
    g->mod = tmp;
    cpu_gen_kernel(g, k, name, cpu, feat, phase, CPU_GEN_BODY, NULL);
    g->mod = pmod;
    cg_res *R = c->cg_res; /* owns the buffer until it is disposed here (an OOM longjmps) */
    LLVMMemoryBufferRef mb = R->mb = LLVMWriteBitcodeToMemoryBuffer(tmp);
    int tinsts = count_insts(tmp);
    LLVMDisposeModule(tmp);
    size_t n = mb ? LLVMGetBufferSize(mb) : 0;
    const char *bc = mb ? LLVMGetBufferStart(mb) : NULL;
    uint64_t h = n ? ic_hash64(bc, n) : 0;
    h = h ? h : 1;
    int slot = (int)(h & (uint64_t)(D->cap - 1));
    for (; D->e[slot].bc; slot = (slot + 1) & (D->cap - 1)) {
        kseen *e = &D->e[slot];
        if (e->h == h && e->n == n && !memcmp(e->bc, bc, n)) {
            LLVMDisposeMemoryBuffer(mb);
            R->mb = NULL;
            if (!e->shared) { /* a function of its own from now on */
                unsigned kai = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
                unsigned kni = LLVMGetEnumAttributeKindForName("noinline", 8);
                LLVMRemoveEnumAttributeAtIndex(e->body, LLVMAttributeFunctionIndex, kai);
                LLVMAddAttributeAtIndex(e->body, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, kni, 0));
                e->shared = true;
            }
            cpu_gen_kernel(g, k, name, cpu, feat, phase, CPU_GEN_WRAP, e->body);
            D->vinsts += tinsts;
            c->cg_dups++;
            return;
        }
    }
    kseen *e = &D->e[slot];
    e->h = h;
    e->n = n;
    e->bc = ic_alloc(c, n + 1);
    if (n) memcpy(e->bc, bc, n);
    if (mb) LLVMDisposeMemoryBuffer(mb);
    R->mb = NULL;
    D->n++;
    e->body = cpu_gen_kernel(g, k, name, cpu, feat, phase, CPU_GEN_FULL, NULL);
}

/* kernel symbols: named after the code key when keyed (shared, cached), else unique */
void ic_cpu_symbols(ic_ctx *c, ic_cpu_syms *S) {
    if (c->keyed) {
        char hex[33];
        ic_dkey_hex(c->key, hex);
        snprintf(S->prefix, sizeof S->prefix, "ick%s", hex);
    } else {
        snprintf(S->prefix, sizeof S->prefix, "ic%d", atomic_fetch_add(&module_counter, 1));
    }
    S->names = ic_alloc(c, (size_t)(2 * c->nkernels + 1) * sizeof(char *));
    S->slot = ic_alloc(c, (size_t)(2 * c->nkernels + 1) * sizeof(int));
    S->kern = ic_alloc(c, (size_t)(2 * c->nkernels + 1) * sizeof(int));
    S->n = 0;
    for (int i = 0; i < c->nkernels; i++) {
        ic_kernel *k = &c->kernels[i];
        if (k->is_ext) continue; /* extern calls: run by the runtime, no code */
        for (int ph = 0; ph < (k->split ? 2 : 1); ph++) {
            char *nm = ic_alloc(c, 128);
            snprintf(nm, 128, "%s_%s%s", S->prefix, k->name, ph ? "_fin" : "");
            S->names[S->n] = nm;
            S->kern[S->n] = i;
            S->slot[S->n++] = 2 * i + ph;
        }
    }
}

/* codegen errors longjmp through the driver: LLVM objects are released by
 * ic_codegen_cleanup before the arena goes. */
void ic_cpu_tier0_free(ic_cpu_tier0 *t) {
    for (int p = 0; p < t->nparts; p++) free(t->bc[p]);
    memset(t, 0, sizeof *t);
}

/* Tier 0 of part P: its IR as generated kept as bitcode (t, part p: what the full compile of
 * the background starts from), then its entry points renamed (t->suffix: the full code
 * is loaded later under the kernels' own names) and P set to the quick pipeline and a
 * TargetMachine without optimization (fast instruction selection, fast register allocation);
 * a part of a hot kernel is compiled fully at once (its loops pay for it on every call), only
 * under the renamed entry points. */
static void tier0_part(ic_ctx *c, ic_part *P, int p, bool hot, const ic_cpu_syms *S, ic_cpu_tier0 *t) {
    char msg[256];
    LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(P->mod);
    if (!mb) ic_fail(c, IC_ENOMEM, "LLVM: no bitcode");
    size_t n = LLVMGetBufferSize(mb);
    t->bc[p] = malloc(n ? n : 1);
    if (!t->bc[p]) {
        LLVMDisposeMemoryBuffer(mb);
        ic_fail(c, IC_ENOMEM, "out of memory");
    }
    memcpy(t->bc[p], LLVMGetBufferStart(mb), n);
    t->bcn[p] = n;
    t->passes[p] = P->passes;
    LLVMDisposeMemoryBuffer(mb);
    for (int i = 0; i < S->n; i++) {
        LLVMValueRef f = LLVMGetNamedFunction(P->mod, S->names[i]);
        if (!f || LLVMIsDeclaration(f)) continue;
        char nm[160];
        snprintf(nm, sizeof nm, "%s%s", S->names[i], t->suffix);
        LLVMSetValueName2(f, nm, strlen(nm));
    }
    if (hot) return;
    P->passes = TIER0_PIPELINE;
    /* a block this long makes unoptimized code generation slower than O1's (part.c) */
    P->tm = ic_host_tm_fast(msg, sizeof msg, max_block_insts(P->mod) > TIER0_MAX_BLOCK);
    if (!P->tm) ic_fail(c, IC_EINTERNAL, "LLVM: %s", msg);
    P->own_tm = true;
}

int ic_codegen_cpu(ic_ctx *c, const ic_cpu_syms *S, const void **objs, size_t *sizes, ic_cpu_tier0 *tier) {
    char msg[256];
    double t0 = ic_now_ms(), t1;
    const char *prefix = S->prefix;
    const char *const *names = S->names;
    const int *slot = S->slot, *kern = S->kern;
    int nnames = S->n;
    cg_res *R = ic_alloc(c, sizeof(cg_res));
    c->cg_res = R;
    R->tm = ic_host_tm_acquire(msg, sizeof msg);
    if (!R->tm) ic_fail(c, IC_EINTERNAL, "LLVM: %s", msg);
    R->triple = LLVMGetTargetMachineTriple(R->tm);
    R->cpu = LLVMGetTargetMachineCPU(R->tm);
    R->feat = LLVMGetTargetMachineFeatureString(R->tm);
    int *part_of = ic_alloc(c, (size_t)(c->nkernels + 1) * sizeof(int));
    bool dedupe = !(c->debug & IC_DEBUG_LLVM);
    R->nparts = assign_parts(c, part_of, dedupe, R->hot);
    int dcap = 16;
    while (dcap < 2 * nnames + 2) dcap *= 2;
    int maxitems = 1, vinsts = 0;
    for (int i = 0; i < c->nkernels; i++)
        if (c->kernels[i].nitems > maxitems) maxitems = c->kernels[i].nitems;
    for (int p = 0; p < R->nparts; p++) {
        ic_part *P = &R->parts[p];
        cg G = {.c = c, .gen = 1};
        cg *g = &G;
        char mname[64];
        snprintf(mname, sizeof mname, "%s.%d", prefix, p);
        if (ic_part_init(P, R->tm, mname)) ic_fail(c, IC_ENOMEM, "LLVM: %s", P->err);
        P->what = "CPU";
        P->debug = c->debug;
        P->tm = p == 0 ? R->tm : NULL; /* parts 1..: a TM of the pool on their thread */
        g->ctx = P->ctx;
        g->mod = P->mod;
        g->b = P->b;
        R->ab = g->ab = LLVMCreateBuilderInContext(g->ctx);
        g->i1 = LLVMInt1TypeInContext(g->ctx);
        g->i8 = LLVMInt8TypeInContext(g->ctx);
        g->i16 = LLVMInt16TypeInContext(g->ctx);
        g->i32 = LLVMInt32TypeInContext(g->ctx);
        g->i64 = LLVMInt64TypeInContext(g->ctx);
        g->f32 = LLVMFloatTypeInContext(g->ctx);
        g->f64 = LLVMDoubleTypeInContext(g->ctx);
        g->ptr = LLVMPointerTypeInContext(g->ctx, 0);
        g->vd = LLVMVoidTypeInContext(g->ctx);
        g->var_val = ic_alloc(c, (size_t)(c->nvars + 1) * sizeof(LLVMValueRef));
        g->buf_ptr = ic_alloc(c, (size_t)(c->nbufs + 1) * sizeof(LLVMValueRef));
        g->memo = ic_alloc(c, (size_t)(c->nxs + 1) * sizeof(LLVMValueRef));
        g->memo_gen = ic_alloc(c, (size_t)(c->nxs + 1) * sizeof(uint32_t));
        g->rowval = ic_alloc(c, (size_t)(maxitems + 1) * sizeof(LLVMValueRef));
        g->scan_seen = ic_alloc(c, (size_t)(c->nxs + 1) * sizeof(uint32_t));
        g->scan_stack = ic_alloc(c, (size_t)(3 * c->nxs + 3) * sizeof(ic_xid));
        g->buf_seen = ic_alloc(c, (size_t)(c->nbufs + 1) * sizeof(uint32_t));
        g->buf_list = ic_alloc(c, (size_t)(c->nbufs + 1) * sizeof(int));
        ol_target_cpu(g, R->triple);
        kdedupe D = {.cap = dcap};
        if (dedupe) D.e = ic_alloc(c, (size_t)dcap * sizeof(kseen));
        for (int i = 0; i < nnames; i++) {
            ic_kernel *k = &c->kernels[kern[i]];
            if (part_of[kern[i]] != p) continue;
            int phase = k->split ? slot[i] - 2 * kern[i] + 1 : 0;
            if (dedupe) gen_deduped(c, g, &D, P->mod, k, names[i], R->cpu, R->feat, phase);
            else cpu_gen_kernel(g, k, names[i], R->cpu, R->feat, phase, CPU_GEN_FULL, NULL);
        }
        R->ninsts[p] = count_insts(g->mod);
        vinsts += D.vinsts;
        /* the pipeline is chosen by the size the module would have without dedupe */
        P->passes = module_pipeline(c->opt_level, R->ninsts[p] + D.vinsts, R->hot[p]);
        LLVMDisposeBuilder(R->ab);
        R->ab = NULL;
    }
    /* tiers: a graph whose code takes long to make runs first on code made quickly */
    long long tmin = c->cfg.cpu_tiers;
    int total = vinsts;
    for (int p = 0; p < R->nparts; p++) total += R->ninsts[p];
    if (tier && tmin > 0 && total >= tmin && c->opt_level >= 2 && !(c->debug & IC_DEBUG_LLVM)) {
        R->tier = tier;
        for (int p = 0; p < R->nparts; p++) tier->nparts = p + 1, tier0_part(c, &R->parts[p], p, R->hot[p], S, tier);
        R->tier = NULL; /* the caller's from here (no ic_fail below frees it) */
    }
    t1 = ic_now_ms();
    c->t_stage[IC_T_IRGEN] += t1 - t0;
    t0 = t1;
    /* verify + optimize + emit: parts 1.. on their own threads, part 0 here */
    ic_part *run[IC_CG_PARTS];
    for (int p = 0; p < R->nparts; p++) run[p] = &R->parts[p];
    ic_parts_run(run, R->nparts);
    double topt = 0, temit = 0;
    for (int p = 0; p < R->nparts; p++) {
        ic_part *P = &R->parts[p];
        if (P->err[0] || !P->out) ic_fail(c, IC_EINTERNAL, "%s", P->err[0] ? P->err : "LLVM: no object");
        topt += P->t_opt;
        temit += P->t_emit;
        c->cpu_other += P->cpu;
        c->cg_insts += R->ninsts[p];
        if (c->debug & IC_DEBUG_LLVM) {
            char *s = LLVMPrintModuleToString(P->mod);
            ic_debug_dump("=== torchc llvm (%s.%d, after %s) ===\n%s\n", prefix, p, P->passes, s);
            LLVMDisposeMessage(s);
        }
    }
    /* wall time of the parallel phase, split in proportion of the parts' own times */
    t1 = ic_now_ms();
    c->t_stage[IC_T_OPT] += (t1 - t0) * topt / (topt + temit + 1e-9);
    c->t_stage[IC_T_EMIT] += (t1 - t0) * temit / (topt + temit + 1e-9);
    c->cg_parts = R->nparts;
    for (int p = 0; p < R->nparts; p++) {
        objs[p] = LLVMGetBufferStart(R->parts[p].out);
        sizes[p] = LLVMGetBufferSize(R->parts[p].out);
    }
    return R->nparts;
}

/* The background's full compile of a tier-0 part: its saved bitcode optimized by its own
 * pipeline and emitted by one of the host pool's TargetMachines (any thread, no arena). */
int ic_cpu_recompile(const void *bc, size_t n, const char *passes, void **obj, size_t *objn, char *msg, size_t msgn) {
    ic_part P = {.what = "CPU", .passes = passes};
    int rc = -1;
    *obj = NULL;
    P.ctx = LLVMContextCreate();
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(bc, n, "torchc_tier", 0);
    if (!P.ctx || !mb || LLVMParseBitcodeInContext2(P.ctx, mb, &P.mod)) {
        snprintf(msg, msgn, "LLVM: the saved bitcode does not parse");
        P.mod = NULL;
        goto done;
    }
    ic_part_run(&P);
    if (P.err[0] || !P.out) {
        snprintf(msg, msgn, "%s", P.err[0] ? P.err : "LLVM: no object");
        goto done;
    }
    *objn = LLVMGetBufferSize(P.out);
    *obj = malloc(*objn ? *objn : 1);
    if (!*obj) {
        snprintf(msg, msgn, "out of memory");
        goto done;
    }
    memcpy(*obj, LLVMGetBufferStart(P.out), *objn);
    rc = 0;
done:
    if (mb) LLVMDisposeMemoryBuffer(mb);
    ic_part_free(&P);
    return rc;
}

void ic_codegen_cleanup(ic_ctx *c) {
    if (c->cg_res) cg_res_free(c->cg_res);
    c->cg_res = NULL;
}
