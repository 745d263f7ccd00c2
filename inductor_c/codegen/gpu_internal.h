/* gpu_internal.h — what the files of the GPU code generator share (gpu_nvptx.c the driver,
 * gpu_ops.c math and pointwise ops, gpu_mem.c index expressions and memory access,
 * gpu_rows.c reductions and kernel bodies, gpu_plan.c launch planning and one variant (the
 * low-precision analysis is the driver's, driver_passes.c), gpu_gemm_emit.c the GEMM template's use): the plan and the
 * per-compilation generator state (gg), small helpers, and the functions one file calls in
 * another. Not a public interface (that is gpu.h). */
#ifndef IC_GPU_INTERNAL_H
#define IC_GPU_INTERNAL_H

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <llvm/Config/llvm-config.h>

#include "../support.h"
#include "cg.h"
#include "gpu.h"

#define VMAX 8  /* elements per thread and access */
#define SMAX 16 /* chunks per thread of a persistent row (staged rows: half in shared memory) */
#define UNROLL 4 /* chunks per iteration of a looped row */
enum { ON_NONE, ON_SOFTMAX, ON_VAR }; /* online split pairs (gg_online_pair) */
#define SPLIT_PMAX 4096 /* parts per split row (the combining block reads S / its threads each) */
/* Threads per block of split rows (partial and combining launches). On the H200 (sum() of 64 MB,
 * gpu_bench_h200_split.json) 128 gave 0.87 of copy bandwidth, 256 0.79, 1024 0.89, 512 0.89-0.90. */
#define SPLIT_T 512
/* Split columns (vec_outer kernels of fewer than one block per SM): at most 256 parts (the
 * combining launch's T = 16 threads down a column read 16 partials each, unrolled), and only
 * for a reduced extent of at least 1024 (unsplit: 32 values a thread down a column; ResNet-50's
 * last stage at batch 32 has 1568, 512 to 2048 channels: 16 to 64 blocks unsplit). */
#define VO_SPLIT_PMAX 256
#define VO_SPLIT_MIN 1024
/* Split rows: blocks of the partial-sums launch over all rows (parts per row: this / rows, at
 * most SPLIT_PMAX, and at most one unrolled iteration a thread: gg_choose_split): 16 per SM, four
 * waves of 512-thread blocks at 32 registers (4 resident), one iteration a thread. On the H200,
 * x.sum() of 64 MB (2048 parts) went from 0.87-0.88 of copy bandwidth at 4 per SM (one wave,
 * 528 parts, 4 iterations) to 0.89-0.90 in three runs (1056 blocks 0.79, 1584 0.72); the split
 * softmax and layernorm of 2 rows of 4M were level or better (gpu_bench_h200_split*.json).
 * Chunks per iteration stay UNROLL (8 gave the same 0.87 as 4), and the chunks are not spread
 * evenly over the parts (a full last wave measured 17.87 us against 17.82, gpu_bench_h200_even.json). */
#define SPLIT_BLOCKS_PER_SM 16
/* Blocks of an online pair's split launches over all rows: 4 per SM. On the H200
 * (gpu_bench_h200_online.json, queued device time a call, 2 rows of 4M f32) softmax took 29.8 us
 * and layer_norm 39.1 us with 528 blocks, 30.7 and 44.4 with the split default's 16 per SM (one
 * iteration a thread), 31.3 and 39.6 with 264; a store-only launch takes the partial launch's. */
#define ONLINE_BLOCKS_PER_SM 4
#define B g->cg.b

enum { P_POINTWISE, P_ROWS, P_TILE };

/* Launch plans of the second generation (v2 flags; the first generation's forms stay only in
 * GEMM epilogues, g->v2 = 0). Measured on the H200 (bf16, one run, fraction of copy bandwidth,
 * first gen -> V2): x.T + y 0.68 -> 0.97, softmax 4096 0.78 -> 0.83, rmsnorm 4096 0.94 -> 0.92,
 * f32 cases unchanged. The parts:
 *   rows   row kernels: no bounds selects/branches when rows and chunks tile exactly; 16-bit
 *          rows take the smaller T on ties (more elements per thread: the block reduction's
 *          shuffles and shared-memory steps are amortized over more of them); a 16-bit
 *          division by a lane-invariant divisor (softmax's row sum) is a multiplication by
 *          one rcp.approx per chunk instead of a div.full per element
 *   tile   16-bit transposes through 64 x 64 tiles moved as 32-bit words (ic_gpu_tile2_map),
 *          the 32 x 32 scalar tile as the fallback variant (alignment)
 * (A third part, looping rows of T = 1024 persistent threads holding more than 16 values each,
 * made softmax 32768 f32 slower, 0.75 -> 0.57, and was removed with the switch that chose
 * the generation.) */
enum { V2_ROWS = 1, V2_TILE = 2 };
#define V2_DEFAULT (V2_ROWS | V2_TILE)

typedef struct plan {
    int mode;
    int V;                 /* elements per access */
    int T, R, Bk;          /* threads per row, rows per block, block size */
    int logT, logR;
    bool jlow;             /* j (position in the row) in the low bits of tid */
    bool persistent;
    int64_t n, nv;         /* elements / V-groups per row */
    int64_t rows, C;       /* rows; chunks per thread */
    int64_t G;             /* pointwise: V-groups in total */
    unsigned grid;
    int32_t vv;            /* var whose V consecutive values a thread holds, -1 none */
    /* split rows (few huge rows): S blocks per row; one launch per pass (pass = its
     * position) leaves per-block partials of the pass's reductions; a final launch
     * (pass = -1) combines them and stores. Later launches recombine earlier partials. */
    int S;
    int Sg;                /* blocks a row of this launch: S, or for a launch that only stores
                              (no partials) at most its chunks */
    int64_t Cs;            /* chunks per block (multiple of unroll) */
    int unroll;            /* looped rows: chunks per iteration (UNROLL) */
    int pass;
    const int *slot;       /* per item: partial slot (arg: slot + 1 holds the index) */
    int on_kind;           /* online split pair of the kernel (gg_online_pair): ON_SOFTMAX / ON_VAR, */
    int on_a, on_b;        /*   its items A and B (B's pass, A's + 2, has no launch of its own) */
    ic_xid on_shift;       /*   ON_SOFTMAX: B = sum exp(x - on_shift), on_shift a function of A */
    bool online;           /* this launch is A's: it also makes B's partials (gg_emit_online) */
    /* split columns (vec_outer, few groups of R columns): the partials of a pass are combined
     * once, by a launch of their own (cpos: its pass), into a row value area after the
     * partials (nslot x rows raw accumulators); launches read reductions of pos < acomb from
     * it, the others from their partials (gpu_plan.c gg_choose_split) */
    bool area;
    int nslot, cpos, acomb;
    ic_gmap map;           /* rows: the block's layout (gpu_layout.c): j, rl, shuffles, smem */
    /* tile: a transpose through shared memory, 32 x 32 tiles over (tu, vv) (gpu_layout.c) */
    int32_t tu;            /* the var along which the transposed loads are contiguous */
    int64_t su, sv, ntu, ntv;
    int nob;               /* the other vars: one block per value combination and tile */
    int32_t obv[2 * IC_MAX_DIMS];
    int64_t obs[2 * IC_MAX_DIMS];
    int ntx;               /* transposed loads, staged in the tile */
    ic_xid tx[4];
    int tesz;              /* their element size */
    ic_gtile tile;
    int tw;                /* tile: 1 = 32 x 32 elements; 2 = 64 x 64 moved as words (V2) */
    bool tfull;            /* tw 2: the tiles cover su x sv exactly (stores need no test) */
    int v2;                /* second-generation plan parts (V2_DEFAULT) */
    bool all_rows;         /* V2 rows: every block's rows exist (no `active` test) */
    bool all_cols;         /* V2 rows: every chunk of every thread lies in the row */
    int creg;              /* staged rows (stage_rows): chunks >= creg of the staged load live in
                              dynamic shared memory between passes; 0: none */
    unsigned dsmem;        /* dynamic shared memory bytes per block */
    int minctasm;          /* .minnctapersm of the kernel (0: none) */
} plan;

typedef struct gg {
    cg cg;                 /* shared with vmath.c: context, module, builder, scalar types */
    ic_ctx *c;
    LLVMTypeRef f16, gptr, sptr, ity;
    int sm;                /* target sm_XY as XY */
    ic_kernel *k;
    const plan *P;
    int V;                 /* lanes of the code being emitted (1 in row blocks) */
    int32_t vv;            /* vectorized var of the code being emitted, -1 none */
    LLVMValueRef *var_val; /* per var: value (lane 0) in ity */
    LLVMValueRef *buf_ptr; /* per buffer: base pointer (row scratch: this row's copy) */
    LLVMValueRef *buf_param; /* per buffer: kernel parameter (global pointer) */
    bool *written;         /* per buffer: stored by the current kernel */
    int *align;            /* per buffer: base alignment the variant assumes (bytes) */
    LLVMValueRef *memo;    /* [x*VMAX + lane] for the current generation */
    uint32_t *memo_gen;
    LLVMValueRef *vld;     /* [x]: vector load of the current generation */
    uint32_t *vld_gen;
    LLVMValueRef *pmemo;   /* persistent rows: [(x*SMAX + chunk)*VMAX + lane] */
    LLVMValueRef *pvld;    /* [x*SMAX + chunk] */
    bool *dep;             /* [x]: differs between lanes (gg_x_lane_dep), valid at dep_gen */
    uint32_t *dep_gen;
    uint32_t *pgen;        /* [x*SMAX + chunk]: variant that filled pmemo/pvld */
    uint32_t *pst;         /* [x*SMAX + chunk]: variant whose code stored it to the stage */
    ic_xid stage_x;        /* the load staged in shared memory (staged rows), -1 none yet */
    LLVMValueRef dyn;      /* the variant's dynamic shared memory, NULL none */
    LLVMValueRef dyn_base; /* staged rows: this thread's first 16-byte slot in it */
    uint32_t vgen;
    int chunk;             /* persistent chunk being emitted, -1 none */
    uint32_t gen;
    LLVMValueRef *rowval;  /* per item: the row's reduced value (item dtype) */
    LLVMValueRef smem, tid, j, active, allok;
    LLVMValueRef part, part_s, row; /* split rows: partials parameter, block part, row index */
    LLVMValueRef fn;
    bool tile_on;          /* tile phase 2: the transposed loads read the tile at tile_off */
    LLVMValueRef tile_off;
    int v2;                /* second-generation parts of the variant being emitted (0 in GEMMs) */
    ic_xid rcp_x;          /* V2: 1 / gg_val(rcp_x) of generation rcp_gen is rcp_v */
    uint32_t rcp_gen;
    LLVMValueRef rcp_v;
    LLVMValueRef rcp_s;    /* its divisor scale (gpu_ops.c small_div_scale), NULL: none */
    ic_xid rcp32_x;        /* V2: 1 / gg_val(rcp32_x) (IEEE) of generation rcp32_gen is rcp32_v */
    uint32_t rcp32_gen;
    LLVMValueRef rcp32_v;
    const uint8_t *need;   /* [x]: value needed to f32 accuracy (ic_lowp_map: the driver's analysis); NULL: all are */
    int64_t max_span;      /* the largest span of a buffer of the graph (gg_buffer_bounds) */
    int64_t max_row_bytes; /*   and of a row scratch buffer's row copy, in bytes */
    int epi_buf;           /* GEMM epilogue (gpu_gemm.c): loads of this buffer read epi_val */
    LLVMValueRef epi_val;  /*   (the accumulator value, register form) while it is non-NULL */
} gg;

/* Programmatic dependent launch (sm_90): every kernel starts with griddepcontrol.wait (until
 * the grid before it in the stream has finished and its writes are visible: nothing is read or
 * written before) and then griddepcontrol.launch_dependents; the runtime launches with
 * programmatic stream serialization, so the next kernel's launch and block scheduling overlap
 * this one's last wave instead of following its end. Kernels launched without the attribute
 * (stream capture for CUDA graphs, other libraries' kernels before ours) wait for nothing.
 * TORCHC_GPU_PDL=0: neither. */
static inline bool pdl_on(const ic_config *cf, int sm) { return sm >= 90 && cf->gpu_pdl; }

static inline void pdl_prologue(gg *g) {
    if (!pdl_on(&g->c->cfg, g->sm)) return;
    LLVMTypeRef ft = LLVMFunctionType(g->cg.vd, NULL, 0, 0);
    static const char text[] = "griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;", cons[] = "~{memory}";
    LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(B, ft, ia, NULL, 0, "");
}

/* x only feeds half-precision results (driver_passes.c ic_lowp_analysis) */
static inline bool is_lowp(const gg *g, ic_xid x) { return g->need && !g->need[x]; }

/* ---- types and constants ---------------------------------------------------------------- */
static inline LLVMTypeRef rtype(gg *g, ic_dtype t) { /* register type */
    switch (t) {
    case IC_BOOL: return g->cg.i1;
    case IC_U8: case IC_I8: return g->cg.i8;
    case IC_I16: return g->cg.i16;
    case IC_I32: return g->cg.i32;
    case IC_I64: return g->cg.i64;
    case IC_F16: case IC_BF16: case IC_F32: return g->cg.f32;
    case IC_F64: return g->cg.f64;
    default: ic_fail(g->c, IC_EUNSUPPORTED, "dtype %s on the GPU", ic_dtype_name(t));
    }
}

static inline LLVMTypeRef mtype(gg *g, ic_dtype t) { /* memory type */
    if (t == IC_BOOL) return g->cg.i8;
    if (t == IC_F16) return g->f16;
    if (t == IC_BF16) return g->cg.i16;
    return rtype(g, t);
}

static inline bool is_unsigned(ic_dtype t) { return ic_is_unsigned(t); }
static inline LLVMValueRef ki(gg *g, LLVMTypeRef t, long long v) { return cg_ki(t, v); }
static inline LLVMValueRef kix(gg *g, int64_t v) { return cg_ki(g->ity, v); }
static inline LLVMValueRef kf(LLVMValueRef like, double v) { return cg_kf(like, v); }
static inline LLVMValueRef intrin(gg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *a, int na) {
    return cg_intrin(&g->cg, name, ov, nov, a, na);
}
static inline LLVMValueRef intrin1(gg *g, const char *name, LLVMValueRef x) { return cg_intrin1(&g->cg, name, x); }
static inline LLVMValueRef sreg(gg *g, const char *name) { return intrin(g, name, NULL, 0, NULL, 0); }
static inline LLVMValueRef fma3(gg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) { return cg_fma(&g->cg, a, b, c); }
static inline LLVMValueRef sel(gg *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) { return cg_sel(&g->cg, c, a, b); }
static inline LLVMValueRef fcmp(gg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) { return cg_fcmp(&g->cg, p, a, b); }
static inline LLVMValueRef isnan_(gg *g, LLVMValueRef v) { return cg_isnan(&g->cg, v); }
static inline LLVMValueRef and_(gg *g, LLVMValueRef a, LLVMValueRef b) { return cg_and(&g->cg, a, b); }

/* f32 register value rounded to f16 / bf16 precision (kept as f32) */
static inline LLVMValueRef round_half(gg *g, LLVMValueRef f, ic_dtype t) { return ol_round_half(&g->cg, f, t); }

/* memory form -> register form */
static inline LLVMValueRef to_reg(gg *g, LLVMValueRef v, ic_dtype t) {
    switch (t) {
    case IC_BOOL: return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(g->cg.i8), "");
    case IC_F16: return LLVMBuildFPExt(B, v, g->cg.f32, "");
    case IC_BF16: {
        LLVMValueRef x = LLVMBuildShl(B, LLVMBuildZExt(B, v, g->cg.i32, ""), ki(g, g->cg.i32, 16), "");
        return LLVMBuildBitCast(B, x, g->cg.f32, "");
    }
    default: return v;
    }
}

/* register form (already rounded) -> memory form */
static inline LLVMValueRef to_mem(gg *g, LLVMValueRef v, ic_dtype t) {
    switch (t) {
    case IC_BOOL: return LLVMBuildZExt(B, v, g->cg.i8, "");
    case IC_F16: return LLVMBuildFPTrunc(B, v, g->f16, "");
    case IC_BF16: {
        LLVMValueRef x = LLVMBuildBitCast(B, v, g->cg.i32, "");
        return LLVMBuildTrunc(B, LLVMBuildLShr(B, x, ki(g, g->cg.i32, 16), ""), g->cg.i16, "");
    }
    default: return v;
    }
}

static inline LLVMValueRef to_bool(gg *g, LLVMValueRef v, ic_dtype from) { return ol_to_bool(&g->cg, v, from); }

static inline bool is_half(ic_dtype t) { return t == IC_F16 || t == IC_BF16; }

/* register form -> register form (ops.c) */
static inline LLVMValueRef convert(gg *g, LLVMValueRef v, ic_dtype from, ic_dtype to) {
    return ol_convert(&g->cg, v, from, to);
}

typedef struct gres gres;
typedef struct gpart gpart;

/* The kernels of one graph are spread over up to GPU_MAXPARTS LLVM modules (each its own
 * context and TargetMachine), optimized, emitted and JIT-loaded by the driver in parallel
 * threads: a model's first call is bound by O3 + PTX emission + the driver's PTX JIT, all
 * linear in the kernel count. TORCHC_COMPILE_THREADS caps the threads (default: the CPUs). */
#define GPU_MAXPARTS 32

struct gpart {
    ic_part P;       /* context, module, builder, its own NVPTX TargetMachine; P.out: the PTX */
    int nk;          /* kernel variants generated into it */
    size_t work;     /* their LLVM instructions: the part's share of O3 + PTX + ptxas */
};

typedef struct gseen { /* a generated kernel: its module's canonical bitcode, its name */
    uint64_t h;
    char *text;
    size_t n;
    char name[48];
    bool lazy;   /* a lazy fallback's: only other lazy fallbacks may share it */
} gseen;

/* A variant's structural key (gpu_key.c) and where its code is: a later variant with the same
 * key is launched with that function (gpu_nvptx.c gg_codegen), its IR never built. */
typedef struct gkseen {
    uint64_t h;
    uint8_t *key;
    size_t n;
    char name[48];
    bool lazy;       /* the code is a lazy fallback's (as gseen.lazy) */
    int nalign;      /* the base alignments the code assumes: parameter position, bytes */
    int *apos, *abytes;
    int seen;        /* TORCHC_DEBUG=dedupe: the gseen entry of its bitcode, -1 none */
    unsigned grid, block, dsmem; /* its launch (equal keys: equal plans) */
    int vec;
} gkseen;
/* a variant's key, looked up (gg_key_find) before it is built (then gg_key_built) */
typedef struct gkq {
    const uint8_t *key; /* NULL: none (built, repeats found by bitcode) */
    size_t n;
    uint64_t h;
    int hit;            /* the entry of an earlier variant with this key, -1 none */
} gkq;
typedef struct gkeyer gkeyer;
struct ic_gemm; /* gpu_gemm.h */

struct gres { /* LLVM objects released on every path */
    gpart p[GPU_MAXPARTS];
    int np;
    gpart lz;  /* lazy fallbacks (gpu.h ic_gpu.lazy_bc): generated, kept as bitcode */
    bool lz_on;
    ic_gpu *gpu;
    gseen *seen; /* kernels generated so far (dedupe), nseen of cap */
    int nseen, capseen;
    LLVMModuleRef tmp; /* the variant being generated (gg_kbegin/gg_kend), in one part's context */
    int last_seen;     /* the seen entry of the last gg_kend's bitcode (-1: none) */
    bool by_bc;        /* gg_kbegin: the next variant's repeats are found by its bitcode (a
                          variant without a key, a GEMM's, TORCHC_DEBUG=dedupe) */
    LLVMValueRef last_fn; /* gg_kbegin: the part module's last function before the variant */
    gkeyer *keyer;     /* structural keys (gpu_key.c): NULL when dedupe is off */
    gkseen *ks;        /* the keys met so far, nks of capks */
    int nks, capks;
    bool check;        /* TORCHC_DEBUG=dedupe: every variant built, key repeats checked */
    int nchecked, nbconly; /* check: key repeats whose code was compared; bitcode-only repeats */
    int nbuilt, nkeyrep;   /* kernel variants built (GEMMs aside), repeats found by their key */
};

/* gpu_ops.c */
LLVMValueRef gg_div_half(gg *g, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef gg_div_half_rcp(gg *g, LLVMValueRef a, ic_xid bx);
void gg_arg_values(ic_kernel *k);
bool gg_softmax_sum(gg *g, ic_xid bx);
LLVMValueRef gg_div_rowsum(gg *g, LLVMValueRef a, ic_xid bx);

/* gpu_mem.c */
LLVMValueRef gg_gix(gg *g, ic_ix a, int lane);
LLVMValueRef gg_clamp_off(gg *g, ic_ix a, LLVMValueRef off, int b);
void gg_need_align(gg *g, int b, unsigned bytes);
LLVMValueRef gg_scalar_load(gg *g, int b, ic_dtype t, LLVMValueRef off);
LLVMValueRef gg_val(gg *g, ic_xid x, int lane);
LLVMValueRef gg_tile_ptr(gg *g, int q, ic_dtype t, LLVMValueRef off);
LLVMValueRef gg_staged_load(gg *g, ic_xid x);
bool gg_x_lane_dep(gg *g, ic_xid x);
void gg_store_item(gg *g, const ic_item *it, LLVMValueRef *v, int nl, LLVMValueRef cond);

/* gpu_rows.c */
void gg_barrier(gg *g);
void gg_decompose(gg *g, LLVMValueRef e, const int32_t *vars, const int64_t *sizes, int n);
void gg_emit_pointwise(gg *g, ic_kernel *k);
void gg_emit_tile(gg *g, ic_kernel *k);
void gg_emit_tile2(gg *g, ic_kernel *k);
LLVMValueRef gg_online_combine(gg *g, ic_kernel *k);
void gg_emit_online(gg *g, ic_kernel *k);
void gg_emit_rows(gg *g, ic_kernel *k);

/* gpu_plan.c */
int gg_choose_vec(ic_ctx *c, ic_kernel *k, int32_t vv, int64_t vsize, bool rows);
void gg_plan_kernel(ic_ctx *c, ic_kernel *k, plan *P, int V, int nsm, int S, int pass, const int *slot, bool online);
int gg_choose_split(ic_ctx *c, ic_kernel *k, int nsm, int V, bool online);
int gg_split_rows_per_block(const ic_kernel *k);
int gg_online_pair(ic_ctx *c, const ic_kernel *k, int *ja, int *jb, ic_xid *shift);
bool gg_choose_tile(ic_ctx *c, ic_kernel *k, plan *P);
bool gg_choose_tile2(ic_ctx *c, ic_kernel *k, const plan *T, plan *P);
bool gg_fits_i32(gg *g, ic_kernel *k, const plan *P);
void gg_buffer_bounds(gg *g);
int gg_param_order(ic_ctx *c, const ic_kernel *k, bool stores_only, const int *used, const int *first, int n0, int *ub);
void gg_add_annotation(gg *g, LLVMValueRef fn, const char *key, int v);
LLVMValueRef gg_kernel_fn(gg *g, const char *name, int np, int nu, const int *ub, const int *used);
int gg_variant_params(ic_ctx *c, const ic_kernel *k, int **used, int **ub);
void gg_gen_variant(gg *g, ic_kernel *k, const plan *P, ic_gvariant *out, const char *name, const int *used,
                    const int *ub, int nu);

/* gpu_key.c */
gkeyer *gg_keyer_new(void);
void gg_keyer_free(gkeyer *K);
/* the key of variant P of k (parameters ub[0..nu) of use used[]) with index type i32 or i64: K's
 * bytes (valid until the next call), *len; NULL when the key cannot describe it */
const uint8_t *gg_variant_key(gkeyer *K, gg *g, const ic_kernel *k, const plan *P, bool i32, const int *used,
                              const int *ub, int nu, size_t *len);
/* the key of a GEMM template variant (gpu_gemm_emit.c gemm_variant): G, fast or not, the
 * consumer fused into its epilogue (NULL none), store_out, index type, parameters */
const uint8_t *gg_gemm_key(gkeyer *K, gg *g, const struct ic_gemm *G, bool fast, const ic_kernel *cons,
                           bool store_out, bool i32, const int *used, const int *ub, int nu, size_t *len);

/* gpu_gemm_emit.c */
int gg_gemm_kernel(gg *g, int ki, ic_gkernel *K, int tsm, int nsm, int mid, gres *R, int *nnew, ic_gpu *gpu, int *choice_kj);

/* gpu_nvptx.c */
void gg_bind_part(gg *g, gpart *q);
/* a part of its own for sm (gpu_scan.c's kernels): 0, or -1 with msg; disposed (also a failed
 * or zeroed one) by gg_part_dispose */
int gg_part_new(gpart *q, int sm, char *msg, size_t n);
void gg_part_dispose(gpart *q);
gpart *gg_next_part(gg *g, gres *R);
bool gg_lazy_enabled(const gres *R);
gpart *gg_lazy_part(gg *g, gres *R);
/* 1: q's key (q->key NULL: none) repeats an earlier variant's: gv launches that function with
 * parameters ub[0..nu) (filled); 0: build gv (gg_kbegin, ..., gg_kend), then gg_key_built with
 * gg_kend's answer */
int gg_key_find(gg *g, gres *R, gkq *q, bool lazy, const int *ub, int nu, ic_gvariant *gv);
void gg_key_built(gg *g, gres *R, const gkq *q, int rep, const int *ub, int nu, const ic_gvariant *gv);
gkeyer *gg_keyer(gres *R); /* NULL: no keys (dedupe off) */
void gg_kbegin(gg *g, gres *R, gpart *q);
int gg_kend(gg *g, gres *R, gpart *q, ic_gvariant *gv, bool lazy);
void gg_codegen(ic_ctx *c, int tsm, int nsm, gres *R);


#endif
