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
 *               phases and the swizzle from layouts (gpu_layout.c, choose_tile, emit_tile);
 *               on by default (TORCHC_GPU_TILE=0: off).
 *
 * Control flow is uniform across a block except around stores (`if (valid) store`), so the
 * barriers of the reductions are always reached by every thread; threads past the last
 * row / element compute on clamped (in-bounds) indices and are masked out of reductions.
 * f16/bf16 values live in f32 registers rounded to their precision (eager's per-op
 * rounding); memory holds the 16-bit form. f32 transcendentals come from vmath.c (the
 * CPU's straight-line polynomial code, shared through the cg struct), plus sin/cos/pow
 * here; f64 transcendentals are IC_EUNSUPPORTED (no libdevice).
 * Then: verifier, default<O3> with the NVPTX TargetMachine, PTX (sm_XY, +ptx78) to memory.
 */
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
enum { ON_NONE, ON_SOFTMAX, ON_VAR }; /* online split pairs (online_pair) */
#define SPLIT_PMAX 4096 /* parts per split row (the combining block reads S / its threads each) */
/* Threads per block of split rows (partial and combining launches). On the H200 (sum() of 64 MB,
 * gpu_bench_h200_split.json) 128 gave 0.87 of copy bandwidth, 256 0.79, 1024 0.89, 512 0.89-0.90. */
#define SPLIT_T 512
/* Split rows: blocks of the partial-sums launch over all rows (parts per row: this / rows, at
 * most SPLIT_PMAX, and at most one unrolled iteration a thread: choose_split): 16 per SM, four
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
    int on_kind;           /* online split pair of the kernel (online_pair): ON_SOFTMAX / ON_VAR, */
    int on_a, on_b;        /*   its items A and B (B's pass, A's + 2, has no launch of its own) */
    ic_xid on_shift;       /*   ON_SOFTMAX: B = sum exp(x - on_shift), on_shift a function of A */
    bool online;           /* this launch is A's: it also makes B's partials (emit_online) */
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
    bool *dep;             /* [x]: differs between lanes (x_lane_dep), valid at dep_gen */
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
    ic_xid rcp_x;          /* V2: 1 / val(rcp_x) of generation rcp_gen is rcp_v */
    uint32_t rcp_gen;
    LLVMValueRef rcp_v;
    ic_xid rcp32_x;        /* V2: 1 / val(rcp32_x) (IEEE) of generation rcp32_gen is rcp32_v */
    uint32_t rcp32_gen;
    LLVMValueRef rcp32_v;
    uint8_t *need;         /* [x]: value needed to f32 accuracy (lowp_need); NULL: all are */
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
static bool pdl_on(const ic_config *cf, int sm) { return sm >= 90 && cf->gpu_pdl; }

static void pdl_prologue(gg *g) {
    if (!pdl_on(&g->c->cfg, g->sm)) return;
    LLVMTypeRef ft = LLVMFunctionType(g->cg.vd, NULL, 0, 0);
    static const char text[] = "griddepcontrol.wait;\n\tgriddepcontrol.launch_dependents;", cons[] = "~{memory}";
    LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMBuildCall2(B, ft, ia, NULL, 0, "");
}

/* x only feeds half-precision results (lowp_need) */
static bool is_lowp(const gg *g, ic_xid x) { return g->need && !g->need[x]; }

/* ---- PTX-only mode (ic_graph_to_ptx) ------------------------------------------------ */
static _Thread_local int tls_ptx_only, tls_sm;

int ic_gpu_ptx_only(int *sm) {
    if (tls_ptx_only && sm) *sm = tls_sm;
    return tls_ptx_only;
}

/* ---- types and constants ---------------------------------------------------------------- */
static LLVMTypeRef rtype(gg *g, ic_dtype t) { /* register type */
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

static LLVMTypeRef mtype(gg *g, ic_dtype t) { /* memory type */
    if (t == IC_BOOL) return g->cg.i8;
    if (t == IC_F16) return g->f16;
    if (t == IC_BF16) return g->cg.i16;
    return rtype(g, t);
}

static bool is_unsigned(ic_dtype t) { return t == IC_BOOL || t == IC_U8; }
static LLVMValueRef ki(gg *g, LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static LLVMValueRef kix(gg *g, int64_t v) { return ki(g, g->ity, v); }
static LLVMValueRef kf(LLVMValueRef like, double v) { return LLVMConstReal(LLVMTypeOf(like), v); }
static LLVMValueRef intrin(gg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *a, int na) {
    return cg_intrin(&g->cg, name, ov, nov, a, na);
}
static LLVMValueRef intrin1(gg *g, const char *name, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    return intrin(g, name, &t, 1, &x, 1);
}
static LLVMValueRef sreg(gg *g, const char *name) { return intrin(g, name, NULL, 0, NULL, 0); }
static LLVMValueRef fma3(gg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[3] = {a, b, c};
    return intrin(g, "llvm.fma", &t, 1, args, 3);
}
static LLVMValueRef sel(gg *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(B, c, a, b, "");
}
static LLVMValueRef fcmp(gg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(B, p, a, b, "");
}
static LLVMValueRef isnan_(gg *g, LLVMValueRef v) { return fcmp(g, LLVMRealUNO, v, v); }
static LLVMValueRef and_(gg *g, LLVMValueRef a, LLVMValueRef b) {
    if (!a) return b;
    if (!b) return a;
    return LLVMBuildAnd(B, a, b, "");
}

/* f32 register value rounded to f16 / bf16 precision (kept as f32) */
static LLVMValueRef round_half(gg *g, LLVMValueRef f, ic_dtype t) {
    if (t == IC_F16) return LLVMBuildFPExt(B, LLVMBuildFPTrunc(B, f, g->f16, ""), g->cg.f32, "");
    if (g->sm >= 80) { /* one cvt.rn.bf16.f32 (nearest even, NaN stays NaN); a pure intrinsic */
        LLVMValueRef h = intrin(g, "llvm.nvvm.f2bf16.rn", NULL, 0, &f, 1);
        LLVMValueRef x = LLVMBuildShl(B, LLVMBuildZExt(B, h, g->cg.i32, ""), ki(g, g->cg.i32, 16), "");
        return LLVMBuildBitCast(B, x, g->cg.f32, "");
    }
    LLVMTypeRef it = g->cg.i32;
    LLVMValueRef x = LLVMBuildBitCast(B, f, it, "");
    LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, x, ki(g, it, 16), ""), ki(g, it, 1), "");
    LLVMValueRef r = LLVMBuildAdd(B, x, LLVMBuildAdd(B, lsb, ki(g, it, 0x7FFF), ""), "");
    LLVMValueRef qn = LLVMBuildOr(B, x, ki(g, it, 0x400000), "");
    r = LLVMBuildAnd(B, sel(g, isnan_(g, f), qn, r), ki(g, it, (long long)0xFFFF0000u), "");
    return LLVMBuildBitCast(B, r, g->cg.f32, "");
}

/* memory form -> register form */
static LLVMValueRef to_reg(gg *g, LLVMValueRef v, ic_dtype t) {
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
static LLVMValueRef to_mem(gg *g, LLVMValueRef v, ic_dtype t) {
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

static LLVMValueRef to_bool(gg *g, LLVMValueRef v, ic_dtype from) {
    if (from == IC_BOOL) return v;
    if (ic_is_float(from)) return fcmp(g, LLVMRealUNE, v, LLVMConstNull(LLVMTypeOf(v)));
    return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
}

static bool is_half(ic_dtype t) { return t == IC_F16 || t == IC_BF16; }

static LLVMValueRef convert(gg *g, LLVMValueRef v, ic_dtype from, ic_dtype to) {
    if (from == to) return v;
    if (to == IC_BOOL) return to_bool(g, v, from);
    LLVMTypeRef tt = rtype(g, to);
    bool fu = from == IC_BOOL || from == IC_U8;
    if (ic_is_float(to)) {
        LLVMValueRef r;
        if (ic_is_float(from)) r = LLVMTypeOf(v) == tt ? v : LLVMBuildFPCast(B, v, tt, "");
        else r = fu ? LLVMBuildUIToFP(B, v, tt, "") : LLVMBuildSIToFP(B, v, tt, "");
        return is_half(to) ? round_half(g, r, to) : r;
    }
    if (ic_is_float(from)) return ol_fp_to_int(&g->cg, v, to, tt); /* ops.c, g->cg.target */
    return LLVMBuildIntCast2(B, v, tt, !fu, "");
}

/* ---- f32 math not in vmath.c --------------------------------------------------------------- */
/* sin / cos (Cephes sinf/cosf: reduction by pi/4 in three parts, degree-7/8 polynomials);
 * accurate to ~1 ulp for |x| < 8192, NaN for inf/NaN. */
static LLVMValueRef sincos_f32(gg *g, LLVMValueRef x, bool want_cos) {
    LLVMTypeRef F = g->cg.f32, I = g->cg.i32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef fin = fcmp(g, LLVMRealOLT, ax, LLVMConstReal(F, 1e30));
    LLVMValueRef sx = sel(g, fin, ax, LLVMConstReal(F, 0.0));
    LLVMValueRef j = LLVMBuildFPToSI(B, LLVMBuildFMul(B, sx, LLVMConstReal(F, 1.27323954473516), ""), I, "");
    j = LLVMBuildAnd(B, LLVMBuildAdd(B, j, ki(g, I, 1), ""), ki(g, I, ~1LL), ""); /* j += j & 1 */
    LLVMValueRef y = LLVMBuildSIToFP(B, j, F, "");
    LLVMValueRef ny = LLVMBuildFNeg(B, y, "");
    LLVMValueRef z = fma3(g, ny, LLVMConstReal(F, 0.78515625), sx);
    z = fma3(g, ny, LLVMConstReal(F, 2.4187564849853515625e-4), z);
    z = fma3(g, ny, LLVMConstReal(F, 3.77489497744594108e-8), z);
    LLVMValueRef j7 = LLVMBuildAnd(B, j, ki(g, I, 7), "");
    LLVMValueRef hi = LLVMBuildICmp(B, LLVMIntUGT, j7, ki(g, I, 3), "");
    LLVMValueRef jj = sel(g, hi, LLVMBuildSub(B, j7, ki(g, I, 4), ""), j7);
    LLVMValueRef zz = LLVMBuildFMul(B, z, z, "");
    /* cos poly */
    LLVMValueRef cp = fma3(g, LLVMConstReal(F, 2.443315711809948e-5), zz, LLVMConstReal(F, -1.388731625493765e-3));
    cp = fma3(g, cp, zz, LLVMConstReal(F, 4.166664568298827e-2));
    cp = LLVMBuildFMul(B, LLVMBuildFMul(B, cp, zz, ""), zz, "");
    cp = fma3(g, zz, LLVMConstReal(F, -0.5), cp);
    cp = LLVMBuildFAdd(B, cp, LLVMConstReal(F, 1.0), "");
    /* sin poly */
    LLVMValueRef sp = fma3(g, LLVMConstReal(F, -1.9515295891e-4), zz, LLVMConstReal(F, 8.3321608736e-3));
    sp = fma3(g, sp, zz, LLVMConstReal(F, -1.6666654611e-1));
    sp = fma3(g, LLVMBuildFMul(B, sp, zz, ""), z, z);
    LLVMValueRef mid = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntEQ, jj, ki(g, I, 1), ""),
                                   LLVMBuildICmp(B, LLVMIntEQ, jj, ki(g, I, 2), ""), "");
    LLVMValueRef r, neg;
    if (!want_cos) {
        r = sel(g, mid, cp, sp);
        neg = LLVMBuildXor(B, hi, fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 0.0)), "");
    } else {
        r = sel(g, mid, sp, cp);
        neg = LLVMBuildXor(B, hi, LLVMBuildICmp(B, LLVMIntUGT, jj, ki(g, I, 1), ""), "");
    }
    r = sel(g, neg, LLVMBuildFNeg(B, r, ""), r);
    return sel(g, fin, r, LLVMBuildFSub(B, x, x, "")); /* inf - inf = NaN, NaN stays */
}

/* x ** y in f32 (y not a special constant): exp(y log|x|) with torch's special cases */
static LLVMValueRef pow_f32(gg *g, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef F = g->cg.f32;
    LLVMValueRef zero = LLVMConstReal(F, 0.0), one = LLVMConstReal(F, 1.0);
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef r = vm_exp(&g->cg, LLVMBuildFMul(B, y, vm_log(&g->cg, ax), ""));
    LLVMValueRef yint = fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.trunc", y), y);
    LLVMValueRef h = LLVMBuildFMul(B, y, LLVMConstReal(F, 0.5), "");
    LLVMValueRef yodd = and_(g, yint, fcmp(g, LLVMRealUNE, intrin1(g, "llvm.trunc", h), h));
    LLVMValueRef xneg = fcmp(g, LLVMRealOLT, x, zero);
    LLVMValueRef nr = sel(g, yint, sel(g, yodd, LLVMBuildFNeg(B, r, ""), r), LLVMConstReal(F, NAN));
    r = sel(g, xneg, nr, r);
    /* x == +-0: sign of an odd power follows x */
    LLVMValueRef xz = fcmp(g, LLVMRealOEQ, x, zero);
    LLVMValueRef zr = sel(g, fcmp(g, LLVMRealOGT, y, zero), zero, LLVMConstReal(F, INFINITY));
    LLVMValueRef args[2] = {zr, x};
    LLVMValueRef zs = intrin(g, "llvm.copysign", &F, 1, args, 2);
    r = sel(g, xz, sel(g, yodd, zs, zr), r);
    r = sel(g, fcmp(g, LLVMRealOEQ, x, one), one, r);
    return sel(g, fcmp(g, LLVMRealOEQ, y, zero), one, r);
}

/* 2^n for an i32 n in [-126, 127] */
static LLVMValueRef pow2i(gg *g, LLVMValueRef n) {
    LLVMTypeRef I = g->cg.i32;
    LLVMValueRef e = LLVMBuildShl(B, LLVMBuildAdd(B, n, ki(g, I, 127), ""), ki(g, I, 23), "");
    return LLVMBuildBitCast(B, e, g->cg.f32, "");
}

/* 2^x: 2^(x - n) through exp on [-ln2/2, ln2/2], times 2^n applied in two halves */
static LLVMValueRef exp2_f32(gg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32, I = g->cg.i32;
    LLVMValueRef xc = sel(g, fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, -160.0)), LLVMConstReal(F, -160.0), x);
    xc = sel(g, fcmp(g, LLVMRealOGT, xc, LLVMConstReal(F, 130.0)), LLVMConstReal(F, 130.0), xc);
    LLVMValueRef n = intrin1(g, "llvm.rint", xc);
    LLVMValueRef f = LLVMBuildFSub(B, xc, n, "");
    LLVMValueRef r = vm_exp(&g->cg, LLVMBuildFMul(B, f, LLVMConstReal(F, 0.693147180559945309), ""));
    LLVMValueRef ni = LLVMBuildFPToSI(B, n, I, "");
    LLVMValueRef n1 = LLVMBuildAShr(B, ni, ki(g, I, 1), "");
    r = LLVMBuildFMul(B, LLVMBuildFMul(B, r, pow2i(g, n1), ""), pow2i(g, LLVMBuildSub(B, ni, n1, "")), "");
    return sel(g, isnan_(g, x), x, r);
}

/* log2(x) = e + log(m)/ln2 with x = m 2^e, m in [sqrt(1/2), sqrt(2)): exact at powers of 2 */
static LLVMValueRef log2_f32(gg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32, I = g->cg.i32;
    LLVMValueRef tiny = fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 1.17549435e-38));
    LLVMValueRef xs = sel(g, tiny, LLVMBuildFMul(B, x, LLVMConstReal(F, 8388608.0), ""), x);
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, I, "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, ki(g, I, 23), ""), ki(g, I, 127), "");
    e = LLVMBuildSub(B, e, sel(g, tiny, ki(g, I, 23), ki(g, I, 0)), "");
    LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, ki(g, I, 0x7FFFFF), ""), ki(g, I, 0x3F800000), ""), F, "");
    LLVMValueRef big = fcmp(g, LLVMRealOGT, m, LLVMConstReal(F, 1.41421356237));
    m = sel(g, big, LLVMBuildFMul(B, m, LLVMConstReal(F, 0.5), ""), m);
    e = sel(g, big, LLVMBuildAdd(B, e, ki(g, I, 1), ""), e);
    LLVMValueRef r = fma3(g, vm_log(&g->cg, m), LLVMConstReal(F, 1.44269504088896341), LLVMBuildSIToFP(B, e, F, ""));
    /* zero, negative, inf, NaN: what log gives */
    LLVMValueRef odd = LLVMBuildOr(B, fcmp(g, LLVMRealULE, x, LLVMConstReal(F, 0.0)),
                                   fcmp(g, LLVMRealOEQ, x, LLVMConstReal(F, INFINITY)), "");
    return sel(g, odd, vm_log(&g->cg, x), r);
}

/* atan(t) for t in [0, 1] and beyond (Cephes atanf, ~1 ulp) */
static LLVMValueRef atan_f32(gg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef hi = fcmp(g, LLVMRealOGT, ax, LLVMConstReal(F, 2.414213562373095));
    LLVMValueRef mid = fcmp(g, LLVMRealOGT, ax, LLVMConstReal(F, 0.4142135623730950));
    LLVMValueRef one = LLVMConstReal(F, 1.0);
    LLVMValueRef t = sel(g, hi, LLVMBuildFDiv(B, LLVMConstReal(F, -1.0), ax, ""),
                         sel(g, mid, LLVMBuildFDiv(B, LLVMBuildFSub(B, ax, one, ""), LLVMBuildFAdd(B, ax, one, ""), ""), ax));
    LLVMValueRef y0 = sel(g, hi, LLVMConstReal(F, 1.5707963267948966), sel(g, mid, LLVMConstReal(F, 0.7853981633974483), LLVMConstReal(F, 0.0)));
    LLVMValueRef z = LLVMBuildFMul(B, t, t, "");
    LLVMValueRef p = fma3(g, LLVMConstReal(F, 8.05374449538e-2), z, LLVMConstReal(F, -1.38776856032e-1));
    p = fma3(g, p, z, LLVMConstReal(F, 1.99777106478e-1));
    p = fma3(g, p, z, LLVMConstReal(F, -3.33329491539e-1));
    LLVMValueRef r = LLVMBuildFAdd(B, y0, fma3(g, LLVMBuildFMul(B, p, z, ""), t, t), "");
    LLVMValueRef args[2] = {r, x};
    return intrin(g, "llvm.copysign", &F, 1, args, 2); /* NaN stays NaN */
}

static LLVMValueRef signbit_(gg *g, LLVMValueRef x) {
    LLVMValueRef b = LLVMBuildBitCast(B, x, g->cg.i32, "");
    return LLVMBuildICmp(B, LLVMIntSLT, b, ki(g, g->cg.i32, 0), "");
}

static LLVMValueRef atan2_f32(gg *g, LLVMValueRef y, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x), ay = intrin1(g, "llvm.fabs", y);
    LLVMValueRef swap = fcmp(g, LLVMRealOGT, ay, ax);
    LLVMValueRef t = LLVMBuildFDiv(B, sel(g, swap, ax, ay), sel(g, swap, ay, ax), "");
    LLVMValueRef a = atan_f32(g, t);
    LLVMValueRef r = sel(g, swap, LLVMBuildFSub(B, LLVMConstReal(F, 1.5707963267948966), a, ""), a);
    LLVMValueRef inf = LLVMConstReal(F, INFINITY), zero = LLVMConstReal(F, 0.0);
    r = sel(g, and_(g, fcmp(g, LLVMRealOEQ, ax, inf), fcmp(g, LLVMRealOEQ, ay, inf)), LLVMConstReal(F, 0.7853981633974483), r);
    r = sel(g, and_(g, fcmp(g, LLVMRealOEQ, ax, zero), fcmp(g, LLVMRealOEQ, ay, zero)), zero, r);
    r = sel(g, signbit_(g, x), LLVMBuildFSub(B, LLVMConstReal(F, 3.14159265358979323846), r, ""), r);
    LLVMValueRef args[2] = {r, y};
    r = intrin(g, "llvm.copysign", &F, 1, args, 2);
    return sel(g, LLVMBuildOr(B, isnan_(g, x), isnan_(g, y), ""), LLVMBuildFAdd(B, x, y, ""), r);
}

/* fmod: f32 exactly through f64 (|a/b| < 2^29), f64 through LLVM's frem expansion */
static LLVMValueRef fmod_(gg *g, LLVMValueRef a, LLVMValueRef b) {
    if (LLVMTypeOf(a) != g->cg.f32) return LLVMBuildFRem(B, a, b, "");
    LLVMTypeRef D = g->cg.f64;
    LLVMValueRef da = LLVMBuildFPExt(B, a, D, ""), db = LLVMBuildFPExt(B, b, D, "");
    LLVMValueRef q = intrin1(g, "llvm.trunc", LLVMBuildFDiv(B, da, db, ""));
    LLVMValueRef r = fma3(g, LLVMBuildFNeg(B, q, ""), db, da);
    r = sel(g, fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.fabs", db), LLVMConstReal(D, INFINITY)), da, r);
    LLVMValueRef args[2] = {LLVMBuildFPTrunc(B, r, g->cg.f32, ""), a};
    LLVMTypeRef F = g->cg.f32;
    return intrin(g, "llvm.copysign", &F, 1, args, 2); /* fmod keeps the dividend's sign, -0 too */
}

/* float fmod / remainder / floor_divide with eager's rules (as the CPU backend) */
static LLVMValueRef fdivmod(gg *g, ic_op op, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a));
    LLVMValueRef mod = fmod_(g, a, b);
    if (op == IC_OP_FMOD) return mod;
    LLVMValueRef sdiff = LLVMBuildXor(B, fcmp(g, LLVMRealOLT, mod, z), fcmp(g, LLVMRealOLT, b, z), "");
    LLVMValueRef fix = LLVMBuildAnd(B, fcmp(g, LLVMRealONE, mod, z), sdiff, "");
    if (op == IC_OP_REMAINDER) return sel(g, fix, LLVMBuildFAdd(B, mod, b, ""), mod);
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, a, mod, ""), b, "");
    div = sel(g, fix, LLVMBuildFSub(B, div, kf(a, 1.0), ""), div);
    LLVMValueRef fl = intrin1(g, "llvm.floor", div);
    LLVMValueRef up = fcmp(g, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), kf(a, 0.5));
    fl = sel(g, up, LLVMBuildFAdd(B, fl, kf(a, 1.0), ""), fl);
    LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
    LLVMValueRef args[2] = {z, q};
    LLVMValueRef zs = intrin(g, "llvm.copysign", &ty, 1, args, 2);
    LLVMValueRef r = sel(g, fcmp(g, LLVMRealUNE, div, z), fl, zs);
    return sel(g, fcmp(g, LLVMRealOEQ, b, z), q, r);
}

/* integer versions (as the CPU backend): a zero divisor gives garbage, INT_MIN / -1 wraps */
static LLVMValueRef idivmod(gg *g, ic_op op, ic_dtype t, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef z = LLVMConstNull(ty), one = ki(g, ty, 1);
    if (t == IC_BOOL || t == IC_U8) {
        LLVMValueRef bb = sel(g, LLVMBuildICmp(B, LLVMIntEQ, b, z, ""), one, b);
        return op == IC_OP_FLOOR_DIVIDE ? LLVMBuildUDiv(B, a, bb, "") : LLVMBuildURem(B, a, bb, "");
    }
    LLVMValueRef m1 = LLVMBuildICmp(B, LLVMIntEQ, b, ki(g, ty, -1), "");
    LLVMValueRef bad = LLVMBuildOr(B, m1, LLVMBuildICmp(B, LLVMIntEQ, b, z, ""), "");
    LLVMValueRef bb = sel(g, bad, one, b);
    LLVMValueRef q = LLVMBuildSDiv(B, a, bb, ""), r = LLVMBuildSRem(B, a, bb, "");
    q = sel(g, m1, LLVMBuildNeg(B, a, ""), q);
    r = sel(g, m1, z, r);
    if (op == IC_OP_FMOD) return r;
    LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, z, ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), z, ""), "");
    if (op == IC_OP_REMAINDER) return sel(g, fix, LLVMBuildAdd(B, r, b, ""), r);
    return sel(g, fix, LLVMBuildSub(B, q, one, ""), q);
}

/* ---- pointwise ops ------------------------------------------------------------------------ */
static LLVMValueRef fmaxmin(gg *g, LLVMValueRef a, LLVMValueRef b, bool max) {
    if (g->sm >= 80 && LLVMTypeOf(a) == g->cg.f32) { /* one max.NaN / min.NaN (PTX 7.0) */
        LLVMValueRef v[2] = {a, b};
        LLVMTypeRef t = g->cg.f32;
        return intrin(g, max ? "llvm.maximum" : "llvm.minimum", &t, 1, v, 2);
    }
    LLVMValueRef r = sel(g, fcmp(g, max ? LLVMRealOGT : LLVMRealOLT, a, b), a, b);
    r = sel(g, isnan_(g, a), a, r);
    return sel(g, isnan_(g, b), b, r);
}

static LLVMValueRef imaxmin(gg *g, LLVMValueRef a, LLVMValueRef b, bool max, ic_dtype t) {
    LLVMIntPredicate p = is_unsigned(t) ? (max ? LLVMIntUGT : LLVMIntULT) : (max ? LLVMIntSGT : LLVMIntSLT);
    return sel(g, LLVMBuildICmp(B, p, a, b, ""), a, b);
}

static _Noreturn void no_f64(gg *g, ic_op op) {
    ic_fail(g->c, IC_EUNSUPPORTED, "%s in f64 on the GPU (no libdevice)", ic_op_name(op));
}

static LLVMValueRef sigmoid(gg *g, LLVMValueRef a, ic_dtype t) {
    if (t != IC_F32) no_f64(g, IC_OP_SIGMOID);
    return vm_sigmoid(&g->cg, a);
}

/* f16/bf16 results (f32 registers rounded to 8/11 bits right after): exp through one MUFU
 * ex2.approx (~2 ulp of f32, plus |x|*2^-24 relative from the scaling by log2 e) and
 * division through div.full.f32 (2 ulp, full range) — errors far below the rounding that
 * follows. At 2 bytes per element, bf16 softmax is bound by instruction issue, not memory:
 * the polynomial exp and the IEEE division sequence were most of its instructions. */
static LLVMValueRef exp_half(gg *g, LLVMValueRef a) {
    LLVMValueRef t = LLVMBuildFMul(B, a, kf(a, 1.4426950408889634), "");
    return intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
}

static LLVMValueRef exp_half_cb(void *g, LLVMValueRef a) { return exp_half(g, a); }

/* f32 exp: t = rn(x log2e) and the part of x log2 e it lost,
 * lo = (x L2E - t) + x (log2 e - L2E) (the first term exact by an fma: the two-product of
 * x and the f32 constant L2E), then exp(x) = 2^t 2^lo = ex2.approx(t) * rn(1 + lo ln2):
 * |lo| <= 2^-17 on the clamped range, so the first-order step is exact to 2^-35. Error:
 * ex2.approx's own ~2 ulp plus two roundings (emulated in float64 with an exact 2^t: within
 * 1.93 ulp on [-104, 88.7]; without lo, 63 ulp at the ends). A product, not y + y (lo ln2)
 * as one fma: that is inf - inf = NaN where 2^t overflows. 8 instructions (clamps, mul,
 * 3 fma, ex2, mul) against the Cody-Waite form's ~19 (x = n ln2 + r, 2^r by ex2.approx, 2^n
 * in two exact steps: ~3 ulp) and the 6-term polynomial's ~25 (vmath.c, ~1 ulp); H200, same
 * run: softmax 32768 f32 0.89 -> 0.91 of copy bandwidth, 4096 0.93 -> 0.96 (run 4), so the
 * other two forms (an A/B switch) were removed. Subnormal results come from ex2.approx (not
 * .ftz) itself; NaN passes the clamps (ordered compares) and every step. */
static LLVMValueRef exp_f32(gg *g, LLVMValueRef x0) {
    LLVMValueRef x = sel(g, fcmp(g, LLVMRealOLT, x0, kf(x0, -104.0)), kf(x0, -104.0), x0);
    x = sel(g, fcmp(g, LLVMRealOGT, x, kf(x0, 89.0)), kf(x0, 89.0), x);
    LLVMValueRef l2e = kf(x0, 1.4426950408889634); /* rounded to f32: 0x3FB8AA3B */
    LLVMValueRef t = LLVMBuildFMul(B, x, l2e, "");
    LLVMValueRef lo = fma3(g, x, l2e, LLVMBuildFNeg(B, t, ""));
    lo = fma3(g, x, kf(x0, 1.925963033500011e-08), lo); /* log2 e - L2E */
    LLVMValueRef y = intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
    return LLVMBuildFMul(B, y, fma3(g, lo, kf(x0, 0.6931471805599453), kf(x0, 1.0)), "");
}

/* the exp inside f32 tanh and sigmoid (silu, gelu_tanh) (cg.exp_fn).
 * erf_fast_exp: inside f32 erf and gelu, the exp of erf's outer piece (|a| > 0.93), erfc(|a|)
 * = exp(r) with r in [-a^2 - 1, -0.8], is one ex2.approx of r log2 e (exp_half): relative
 * error <= |r| log2e 2^-24 + 2^-22, below 1e-6 while erfc > 1e-4, and erf = 1 - erfc or
 * gelu's 2 - erfc take it as an absolute error below an ulp; in gelu's negative tail
 * (x/2 erfc) it stays relative, at values that are tiny (eager's own 1 + erf loses them
 * entirely there). f32 gelu of 64 MB was bound by instruction issue: 0.82 of copy bandwidth
 * with the Cody-Waite exp (58 instructions an element), torch.compile's libdevice erf 0.96. */
static LLVMValueRef exp_f32_cb(void *g, LLVMValueRef x) { return exp_f32(g, x); }

/* gelu for f16/bf16 results: erf's outer piece through exp_half (bf16 GELU at 4 KB rows is
 * bound by instruction issue: the polynomial exp was a third of its instructions) */
static LLVMValueRef gelu_half(gg *g, LLVMValueRef a) {
    LLVMValueRef r = vm_gelu_ex(&g->cg, a, exp_half_cb, g);
    return sel(g, fcmp(g, LLVMRealOEQ, a, kf(a, INFINITY)), a, r);
}

static LLVMValueRef div_half(gg *g, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef at[2] = {g->cg.f32, g->cg.f32};
    LLVMTypeRef ft = LLVMFunctionType(g->cg.f32, at, 2, 0);
    static const char text[] = "div.full.f32 $0, $1, $2;", cons[] = "=f,f,f";
    LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef v[2] = {a, b};
    return LLVMBuildCall2(B, ft, ia, v, 2, "");
}

static LLVMValueRef val(gg *g, ic_xid x, int lane);
static bool x_lane_dep(gg *g, ic_xid x);

/* V2: a / b for f16/bf16 results with b the same in every lane (softmax's row sum): one
 * rcp.approx.f32 (1 ulp, full range, subnormals kept) per generation and a multiplication
 * per lane; 0 and inf divisors give inf / 0 products like the division. */
static LLVMValueRef div_half_rcp(gg *g, LLVMValueRef a, ic_xid bx) {
    if (g->rcp_gen != g->gen || g->rcp_x != bx) {
        LLVMTypeRef ft = LLVMFunctionType(g->cg.f32, &g->cg.f32, 1, 0);
        static const char text[] = "rcp.approx.f32 $0, $1;", cons[] = "=f,f";
        LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                           LLVMInlineAsmDialectATT, 0);
        LLVMValueRef b = val(g, bx, 0);
        g->rcp_v = LLVMBuildCall2(B, ft, ia, &b, 1, "");
        g->rcp_x = bx;
        g->rcp_gen = g->gen;
    }
    return LLVMBuildFMul(B, a, g->rcp_v, "");
}

/* V2: softmax's f32 division by its row sum, a / s with s = sum(exp(x - max(x))) over the
 * row: s is 1 <= s <= n (or NaN, or inf with x), so 1/s is a normal number and a * rn(1/s)
 * is within about 1 ulp of a / s (IEEE division: 0.5). One div.rn per chunk instead of one
 * per element (each ~9 SASS instructions: f32 softmax is bound by instruction issue). Only
 * that pattern: for other divisors 1/s may overflow or lose bits as a subnormal. */
static bool softmax_sum(gg *g, ic_xid bx) {
    const ic_x *s = &g->c->xs[bx];
    if (s->kind != X_ROWVAL || !g->k || s->a < 0 || s->a >= g->k->nitems) return false;
    const ic_item *it = &g->k->items[s->a];
    if (it->kind != IT_REDUCE || it->red_op != IC_OP_SUM || it->acc != IC_F32) return false;
    const ic_x *e = &g->c->xs[it->expr];
    if (e->kind != X_OP || e->op != IC_OP_EXP || e->dtype != IC_F32) return false;
    const ic_x *d = &g->c->xs[e->a];
    if (d->kind != X_OP || d->op != IC_OP_SUB) return false;
    const ic_x *m = &g->c->xs[d->b];
    if (m->kind != X_ROWVAL || m->a < 0 || m->a >= g->k->nitems) return false;
    const ic_item *mi = &g->k->items[m->a];
    return mi->kind == IT_REDUCE && mi->red_op == IC_OP_AMAX && mi->expr == d->a && mi->acc == IC_F32;
}

static LLVMValueRef div_rowsum(gg *g, LLVMValueRef a, ic_xid bx) {
    if (g->rcp32_gen != g->gen || g->rcp32_x != bx) {
        g->rcp32_v = LLVMBuildFDiv(B, kf(a, 1.0), val(g, bx, 0), "");
        g->rcp32_x = bx;
        g->rcp32_gen = g->gen;
    }
    return LLVMBuildFMul(B, a, g->rcp32_v, "");
}

static LLVMValueRef unary(gg *g, ic_op op, ic_dtype t, LLVMValueRef a) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    bool f = ic_is_float(t), f32 = ty == g->cg.f32;
    cg *C = &g->cg;
    switch (op) {
    case IC_OP_NEG: return f ? LLVMBuildFNeg(B, a, "") : LLVMBuildNeg(B, a, "");
    case IC_OP_ABS:
        if (f) return intrin1(g, "llvm.fabs", a);
        if (is_unsigned(t)) return a;
        return sel(g, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstNull(ty), ""), LLVMBuildNeg(B, a, ""), a);
    case IC_OP_RELU:
        if (f) return sel(g, fcmp(g, LLVMRealOLT, a, LLVMConstNull(ty)), LLVMConstNull(ty), a);
        if (is_unsigned(t)) return a;
        return sel(g, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstNull(ty), ""), LLVMConstNull(ty), a);
    case IC_OP_LOGICAL_NOT: return LLVMBuildNot(B, a, "");
    case IC_OP_SQRT: return intrin1(g, "llvm.sqrt", a);
    case IC_OP_RSQRT: return LLVMBuildFDiv(B, kf(a, 1.0), intrin1(g, "llvm.sqrt", a), "");
    case IC_OP_RECIPROCAL: return LLVMBuildFDiv(B, kf(a, 1.0), a, "");
    case IC_OP_FLOOR: return f ? intrin1(g, "llvm.floor", a) : a;
    case IC_OP_CEIL: return f ? intrin1(g, "llvm.ceil", a) : a;
    case IC_OP_ROUND: return f ? intrin1(g, "llvm.roundeven", a) : a;
    case IC_OP_TRUNC: return f ? intrin1(g, "llvm.trunc", a) : a;
    case IC_OP_SIGN: {
        if (t == IC_BOOL) return a;
        LLVMValueRef z = LLVMConstNull(ty);
        LLVMValueRef pos = f ? fcmp(g, LLVMRealOGT, a, z) : LLVMBuildICmp(B, is_unsigned(t) ? LLVMIntUGT : LLVMIntSGT, a, z, "");
        LLVMValueRef neg = f ? fcmp(g, LLVMRealOLT, a, z) : LLVMBuildICmp(B, LLVMIntSLT, a, z, "");
        LLVMValueRef one = f ? kf(a, 1.0) : ki(g, ty, 1), mone = f ? kf(a, -1.0) : ki(g, ty, -1);
        return sel(g, pos, one, sel(g, neg, mone, z));
    }
    case IC_OP_ISNAN: return f ? isnan_(g, a) : LLVMConstInt(g->cg.i1, 0, 0);
    case IC_OP_ISINF:
        return f ? fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.fabs", a), kf(a, INFINITY)) : LLVMConstInt(g->cg.i1, 0, 0);
    case IC_OP_ISFINITE:
        return f ? fcmp(g, LLVMRealOLT, intrin1(g, "llvm.fabs", a), kf(a, INFINITY)) : LLVMConstInt(g->cg.i1, 1, 0);
    case IC_OP_BITWISE_NOT: return LLVMBuildNot(B, a, "");
    default: break;
    }
    if (!f32 && ty == g->cg.f64) no_f64(g, op);
    if (!f32) ic_fail(g->c, IC_EUNSUPPORTED, "GPU codegen: %s on %s", ic_op_name(op), ic_dtype_name(t));
    switch (op) {
    case IC_OP_EXP: return exp_f32(g, a);
    case IC_OP_LOG: return vm_log(C, a);
    case IC_OP_SIGMOID: return vm_sigmoid(C, a);
    case IC_OP_TANH: return vm_tanh(C, a);
    case IC_OP_SILU: return LLVMBuildFMul(B, a, vm_sigmoid(C, a), "");
    case IC_OP_GELU: {
        /* gelu(+inf) = +inf, as CUDA eager gives it. The exp of erf's outer piece is one
         * ex2.approx (erf_fast_exp) */
        LLVMValueRef r = vm_gelu_ex(C, a, exp_half_cb, g);
        return sel(g, fcmp(g, LLVMRealOEQ, a, kf(a, INFINITY)), a, r);
    }
    case IC_OP_GELU_TANH: {
        /* x/2 (1 + tanh(u)) = x * sigmoid(2u) */
        LLVMValueRef x3 = LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
        LLVMValueRef in = LLVMBuildFAdd(B, a, LLVMBuildFMul(B, x3, kf(a, 0.044715), ""), "");
        in = LLVMBuildFMul(B, in, kf(a, 2 * 0.79788456080286535588), "");
        return LLVMBuildFMul(B, a, sigmoid(g, in, t), "");
    }
    case IC_OP_SIN: return sincos_f32(g, a, false);
    case IC_OP_COS: return sincos_f32(g, a, true);
    case IC_OP_TAN: return LLVMBuildFDiv(B, sincos_f32(g, a, false), sincos_f32(g, a, true), "");
    case IC_OP_ATAN: return atan_f32(g, a);
    case IC_OP_ERF: {
        LLVMValueRef (*keep)(void *, LLVMValueRef) = C->exp_fn;
        C->exp_fn = exp_half_cb; /* erf_fast_exp */
        LLVMValueRef r = vm_erf(C, a);
        C->exp_fn = keep;
        return r;
    }
    case IC_OP_EXP2: return exp2_f32(g, a);
    case IC_OP_LOG2: return log2_f32(g, a);
    case IC_OP_LOG1P: {
        /* log(u) - ((u - 1) - x) / u, u = 1 + x: exact for tiny x */
        LLVMValueRef u = LLVMBuildFAdd(B, kf(a, 1.0), a, "");
        LLVMValueRef corr = LLVMBuildFDiv(B, LLVMBuildFSub(B, LLVMBuildFSub(B, u, kf(a, 1.0), ""), a, ""), u, "");
        LLVMValueRef r = LLVMBuildFSub(B, vm_log(C, u), corr, "");
        r = sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, INFINITY)), u, r);
        return sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, 1.0)), a, r);
    }
    case IC_OP_EXPM1: {
        /* Kahan: (u - 1) * x / log(u), u = exp(x) */
        LLVMValueRef u = vm_exp(C, a);
        LLVMValueRef um1 = LLVMBuildFSub(B, u, kf(a, 1.0), "");
        LLVMValueRef r = LLVMBuildFDiv(B, LLVMBuildFMul(B, um1, a, ""), vm_log(C, u), "");
        r = sel(g, fcmp(g, LLVMRealOEQ, um1, kf(a, -1.0)), um1, r);
        r = sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, INFINITY)), u, r);
        return sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, 1.0)), a, r);
    }
    default: ic_fail(g->c, IC_EUNSUPPORTED, "GPU codegen: unary %s", ic_op_name(op));
    }
}

static LLVMValueRef pow_(gg *g, LLVMValueRef a, LLVMValueRef b, ic_xid bx) {
    const ic_x *e = &g->c->xs[bx];
    if (e->kind == X_CONST) {
        double p = e->cval;
        if (p == 1.0) return a;
        if (p == 2.0) return LLVMBuildFMul(B, a, a, "");
        if (p == 3.0) return LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
        if (p == 0.5) return intrin1(g, "llvm.sqrt", a);
        if (p == -1.0) return LLVMBuildFDiv(B, kf(a, 1.0), a, "");
        if (p == -2.0) return LLVMBuildFDiv(B, kf(a, 1.0), LLVMBuildFMul(B, a, a, ""), "");
        if (p == -0.5) return LLVMBuildFDiv(B, kf(a, 1.0), intrin1(g, "llvm.sqrt", a), "");
        if (p == 0.0) return kf(a, 1.0);
    }
    if (LLVMTypeOf(a) != g->cg.f32) no_f64(g, IC_OP_POW);
    return pow_f32(g, a, b);
}

static LLVMValueRef binary(gg *g, ic_op op, ic_dtype ct, LLVMValueRef a, LLVMValueRef b, ic_xid bx) {
    bool f = ic_is_float(ct), u = is_unsigned(ct);
    if (ct == IC_BOOL) {
        switch (op) {
        case IC_OP_ADD: case IC_OP_MAXIMUM: case IC_OP_LOGICAL_OR: return LLVMBuildOr(B, a, b, "");
        case IC_OP_MUL: case IC_OP_MINIMUM: case IC_OP_LOGICAL_AND: return LLVMBuildAnd(B, a, b, "");
        default: break;
        }
    }
    switch (op) {
    case IC_OP_ADD: return f ? LLVMBuildFAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
    case IC_OP_SUB: return f ? LLVMBuildFSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
    case IC_OP_MUL: return f ? LLVMBuildFMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
    case IC_OP_DIV:
        if (f) return LLVMBuildFDiv(B, a, b, "");
        break;
    case IC_OP_MAXIMUM: return f ? fmaxmin(g, a, b, true) : imaxmin(g, a, b, true, ct);
    case IC_OP_MINIMUM: return f ? fmaxmin(g, a, b, false) : imaxmin(g, a, b, false, ct);
    case IC_OP_POW:
        if (f) return pow_(g, a, b, bx);
        break;
    case IC_OP_BITWISE_AND: return LLVMBuildAnd(B, a, b, "");
    case IC_OP_BITWISE_OR: return LLVMBuildOr(B, a, b, "");
    case IC_OP_BITWISE_XOR: case IC_OP_LOGICAL_XOR: return LLVMBuildXor(B, a, b, "");
    case IC_OP_FMOD: case IC_OP_REMAINDER: case IC_OP_FLOOR_DIVIDE:
        return f ? fdivmod(g, op, a, b) : idivmod(g, op, ct, a, b);
    case IC_OP_ATAN2:
        if (LLVMTypeOf(a) == g->cg.f32) return atan2_f32(g, a, b);
        no_f64(g, op);
    case IC_OP_EQ: return f ? fcmp(g, LLVMRealOEQ, a, b) : LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
    case IC_OP_NE: return f ? fcmp(g, LLVMRealUNE, a, b) : LLVMBuildICmp(B, LLVMIntNE, a, b, "");
    case IC_OP_LT: return f ? fcmp(g, LLVMRealOLT, a, b) : LLVMBuildICmp(B, u ? LLVMIntULT : LLVMIntSLT, a, b, "");
    case IC_OP_LE: return f ? fcmp(g, LLVMRealOLE, a, b) : LLVMBuildICmp(B, u ? LLVMIntULE : LLVMIntSLE, a, b, "");
    case IC_OP_GT: return f ? fcmp(g, LLVMRealOGT, a, b) : LLVMBuildICmp(B, u ? LLVMIntUGT : LLVMIntSGT, a, b, "");
    case IC_OP_GE: return f ? fcmp(g, LLVMRealOGE, a, b) : LLVMBuildICmp(B, u ? LLVMIntUGE : LLVMIntSGE, a, b, "");
    default: break;
    }
    ic_fail(g->c, IC_EUNSUPPORTED, "GPU codegen: binary %s on %s", ic_op_name(op), ic_dtype_name(ct));
}

/* ---- index expressions ------------------------------------------------------------------- */
static LLVMValueRef gix(gg *g, ic_ix a, int lane) {
    ic_ctx *c = g->c;
    const ix_sum s = c->sums[a];
    LLVMValueRef sum = kix(g, s.off);
    for (int i = 0; i < s.n; i++) {
        ix_term tm = c->terms[s.first + i];
        ix_atom at = c->atoms[tm.atom];
        LLVMValueRef v;
        if (at.kind == IX_VAR) {
            v = g->var_val[at.var];
            if (!v) ic_fail(c, IC_EINTERNAL, "GPU codegen: var i%d has no value", at.var);
            if (lane && at.var == g->vv) v = LLVMBuildAdd(B, v, kix(g, lane), "");
        } else {
            int64_t lo, hi;
            ix_range(c, at.sub, &lo, &hi);
            bool sgn = lo < 0;
            v = gix(g, at.sub, lane);
            if (at.div != 1) {
                if (sgn) { /* floor division */
                    LLVMValueRef q = LLVMBuildSDiv(B, v, kix(g, at.div), "");
                    LLVMValueRef r = LLVMBuildSRem(B, v, kix(g, at.div), "");
                    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, 0), "");
                    v = sel(g, neg, LLVMBuildSub(B, q, kix(g, 1), ""), q);
                } else {
                    v = LLVMBuildUDiv(B, v, kix(g, at.div), "");
                }
            }
            if (at.mod) {
                int64_t l2 = at.div != 1 ? (lo < 0 ? -1 : 0) : lo;
                if (l2 < 0) {
                    LLVMValueRef r = LLVMBuildSRem(B, v, kix(g, at.mod), "");
                    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, 0), "");
                    v = sel(g, neg, LLVMBuildAdd(B, r, kix(g, at.mod), ""), r);
                } else {
                    v = LLVMBuildURem(B, v, kix(g, at.mod), "");
                }
            }
        }
        if (tm.coeff != 1) v = LLVMBuildMul(B, v, kix(g, tm.coeff), "");
        sum = LLVMBuildAdd(B, sum, v, "");
    }
    return sum;
}

/* An access the V lanes make as one aligned vector: coefficient 1 along the vectorized var,
 * every other part a multiple of V (so lane 0 sits at a multiple of V). */
static bool vec_access(gg *g, ic_ix a) {
    if (g->V <= 1 || g->vv < 0) return false;
    ic_ctx *c = g->c;
    bool na;
    if (ix_coeff(c, a, g->vv, &na) != 1 || na) return false;
    const ix_sum s = c->sums[a];
    if (s.off % g->V) return false;
    for (int i = 0; i < s.n; i++) {
        ix_term tm = c->terms[s.first + i];
        const ix_atom *at = &c->atoms[tm.atom];
        if (at->kind == IX_VAR && at->var == g->vv) continue;
        if (tm.coeff % g->V) return false;
    }
    return true;
}

/* vector access to buffer b: its base must be aligned in every row copy */
static bool buf_vec_ok(gg *g, int b, ic_dtype t) {
    const ic_buffer *Bf = &g->c->bufs[b];
    if (Bf->kind != 3) return true;
    int64_t al = g->V * (int64_t)ic_dtype_size(t);
    if (al > 16) al = 16;
    return (Bf->span * (int64_t)ic_dtype_size(t)) % al == 0;
}

static bool lane_dep(gg *g, ic_ix a) { return g->V > 1 && g->vv >= 0 && ix_uses_var(g->c, a, g->vv); }

/* offset clamped into [0, span) for loads that may leave their buffer (untaken cat sides) */
static LLVMValueRef clamp_off(gg *g, ic_ix a, LLVMValueRef off, int b) {
    int64_t lo, hi, span = g->c->bufs[b].span;
    ix_range(g->c, a, &lo, &hi);
    if (lo >= 0 && hi < span) return off;
    LLVMValueRef z = kix(g, 0), m = kix(g, span > 0 ? span - 1 : 0);
    off = sel(g, LLVMBuildICmp(B, LLVMIntSLT, off, z, ""), z, off);
    return sel(g, LLVMBuildICmp(B, LLVMIntSGT, off, m, ""), m, off);
}

static bool safe_ix(gg *g, ic_ix a, int b) {
    int64_t lo, hi;
    ix_range(g->c, a, &lo, &hi);
    return lo >= 0 && hi < g->c->bufs[b].span;
}

/* ---- memory ------------------------------------------------------------------------------ */
static unsigned vec_align(gg *g, ic_dtype t) {
    unsigned bytes = (unsigned)(g->V * (int)ic_dtype_size(t));
    return bytes > 16 ? 16 : bytes;
}

static void need_align(gg *g, int b, unsigned bytes) {
    if (g->align[b] < (int)bytes) g->align[b] = (int)bytes;
}

/* Vector load of V elements: 16-bit and 8-bit elements travel as i32 words. Returns a
 * vector value; vec_lane extracts lane l in memory form. */
/* the register type of a V-element access: 16-bit elements as 32-bit words */
static LLVMTypeRef vec_type(gg *g, ic_dtype t) {
    size_t esz = ic_dtype_size(t);
    LLVMTypeRef mt = mtype(g, t);
    return (esz < 4 && g->V * esz >= 4) ? LLVMVectorType(g->cg.i32, (unsigned)(g->V * esz / 4))
                                        : LLVMVectorType(mt, (unsigned)g->V);
}

static LLVMValueRef vec_load(gg *g, int b, ic_dtype t, LLVMValueRef off) {
    unsigned al = vec_align(g, t);
    LLVMTypeRef mt = mtype(g, t);
    LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
    LLVMTypeRef vt = vec_type(g, t);
    LLVMValueRef v = LLVMBuildLoad2(B, vt, p, "");
    LLVMSetAlignment(v, al);
    need_align(g, b, al);
    return v;
}

static LLVMValueRef vec_lane(gg *g, LLVMValueRef v, ic_dtype t, int lane) {
    size_t esz = ic_dtype_size(t);
    LLVMTypeRef vt = LLVMTypeOf(v);
    if (LLVMGetElementType(vt) != g->cg.i32 || esz >= 4)
        return LLVMBuildExtractElement(B, v, LLVMConstInt(g->cg.i32, (unsigned)lane, 0), "");
    unsigned per = (unsigned)(4 / esz);
    LLVMValueRef w = LLVMBuildExtractElement(B, v, LLVMConstInt(g->cg.i32, (unsigned)lane / per, 0), "");
    unsigned sh = (unsigned)(lane % per) * (unsigned)esz * 8;
    if (sh) w = LLVMBuildLShr(B, w, ki(g, g->cg.i32, sh), "");
    LLVMValueRef bits = LLVMBuildTrunc(B, w, LLVMIntTypeInContext(g->cg.ctx, (unsigned)esz * 8), "");
    return t == IC_F16 ? LLVMBuildBitCast(B, bits, g->f16, "") : bits;
}

static LLVMValueRef scalar_load(gg *g, int b, ic_dtype t, LLVMValueRef off) {
    LLVMTypeRef mt = mtype(g, t);
    LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(B, mt, p, "");
    LLVMSetAlignment(v, (unsigned)ic_dtype_size(t));
    return v;
}

static LLVMValueRef val(gg *g, ic_xid x, int lane);

/* trap (the kernel aborts, the context reports an error) when v != 0: CUDA's device assert */
static void trap_if(gg *g, LLVMValueRef v) {
    LLVMTypeRef i32 = g->cg.i32;
    LLVMTypeRef ft = LLVMFunctionType(g->cg.vd, &i32, 1, 0);
    static const char code[] = "{\n.reg .pred %p;\nsetp.ne.s32 %p, $0, 0;\n@%p trap;\n}";
    LLVMValueRef asm_ = LLVMGetInlineAsm(ft, (char *)code, sizeof code - 1, "r", 1, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef a = LLVMBuildZExt(B, v, i32, "");
    LLVMBuildCall2(B, ft, asm_, &a, 1, "");
}

/* index_select: ix + index * stride, a negative index wrapped once (index + size), one still
 * out of [0, size) trapping (the host does not check CUDA indices: no sync per call); the
 * offset is clamped into the buffer all the same */
static LLVMValueRef gather_off(gg *g, const ic_x *e, int lane) {
    LLVMValueRef iv = val(g, e->a, lane);
    ic_dtype it = g->c->xs[e->a].dtype;
    iv = LLVMBuildIntCast2(B, iv, g->ity, !is_unsigned(it), "");
    LLVMValueRef z = kix(g, 0), m = kix(g, e->aux > 0 ? e->aux - 1 : 0);
    if (!is_unsigned(it)) iv = sel(g, LLVMBuildICmp(B, LLVMIntSLT, iv, z, ""), LLVMBuildAdd(B, iv, kix(g, e->aux), ""), iv);
    trap_if(g, LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntSLT, iv, z, ""), LLVMBuildICmp(B, LLVMIntSGT, iv, m, ""), ""));
    iv = sel(g, LLVMBuildICmp(B, LLVMIntSLT, iv, z, ""), z, iv);
    iv = sel(g, LLVMBuildICmp(B, LLVMIntSGT, iv, m, ""), m, iv);
    LLVMValueRef off = LLVMBuildAdd(B, gix(g, e->ix, lane), LLVMBuildMul(B, iv, kix(g, (int64_t)e->cval), ""), "");
    int64_t span = g->c->bufs[e->buf].span;
    LLVMValueRef mx = kix(g, span > 0 ? span - 1 : 0);
    off = sel(g, LLVMBuildICmp(B, LLVMIntSGT, off, mx, ""), mx, off);
    return sel(g, LLVMBuildICmp(B, LLVMIntSLT, off, z, ""), z, off);
}

static LLVMValueRef tile_ptr(gg *g, int q, ic_dtype t, LLVMValueRef off) {
    LLVMValueRef idx = LLVMBuildAdd(B, off, kix(g, (int64_t)q * 1024), "");
    return LLVMBuildGEP2(B, mtype(g, t), g->smem, &idx, 1, "");
}

/* Staged rows (stage_rows): chunk g->chunk >= creg of load x lives in dynamic shared
 * memory between the passes: the first pass that reads it loads it from global memory and
 * stores it at the thread's own 16-byte slot (consecutive threads, consecutive slots: no bank
 * conflicts, no barrier: each thread reads back only what it wrote); later passes load it
 * from there. The vector of the current generation, or NULL when x cannot be staged (not a
 * vector access, or another load holds the stage). */
static LLVMValueRef staged_load(gg *g, ic_xid x) {
    const ic_x *e = &g->c->xs[x];
    int b = e->buf;
    if (!g->dyn || e->a >= 0 || !(vec_access(g, e->ix) && safe_ix(g, e->ix, b) && buf_vec_ok(g, b, e->dtype)))
        return NULL;
    if (g->stage_x < 0) g->stage_x = x;
    if (g->stage_x != x) return NULL;
    if (g->vld_gen[x] == g->gen) return g->vld[x];
    const plan *P = g->P;
    size_t vk = (size_t)x * SMAX + (size_t)g->chunk;
    LLVMTypeRef vt = vec_type(g, e->dtype);
    /* the thread's base (emit_rows) and a constant offset: one address register for all */
    LLVMValueRef off = LLVMConstInt(g->cg.i64, (unsigned long long)(g->chunk - P->creg) * (unsigned long long)P->T * 16, 0);
    LLVMValueRef sp = LLVMBuildInBoundsGEP2(B, g->cg.i8, g->dyn_base, &off, 1, "");
    LLVMValueRef v;
    if (g->pst[vk] == g->vgen) {
        v = LLVMBuildLoad2(B, vt, sp, "");
        LLVMSetAlignment(v, (unsigned)(g->V * ic_dtype_size(e->dtype)));
    } else {
        v = vec_load(g, b, e->dtype, gix(g, e->ix, 0));
        LLVMValueRef st = LLVMBuildStore(B, v, sp);
        LLVMSetAlignment(st, (unsigned)(g->V * ic_dtype_size(e->dtype)));
        g->pst[vk] = g->vgen;
    }
    g->vld[x] = v;
    g->vld_gen[x] = g->gen;
    return v;
}

static LLVMValueRef load_lane(gg *g, ic_xid x, int lane) {
    const ic_x *e = &g->c->xs[x];
    int b = e->buf;
    if (g->epi_val && b == g->epi_buf) return g->epi_val; /* fused GEMM epilogue */
    for (int q = 0; g->tile_on && q < g->P->ntx; q++) {
        if (g->P->tx[q] != x) continue;
        if (g->P->tw == 2) { /* word w(u, p): lane 0 the low half, lane 1 the high one */
            LLVMValueRef idx = LLVMBuildAdd(B, g->tile_off, kix(g, (int64_t)q * 2048), "");
            LLVMValueRef w = LLVMBuildLoad2(B, g->cg.i32, LLVMBuildGEP2(B, g->cg.i32, g->smem, &idx, 1, ""), "");
            if (lane) w = LLVMBuildLShr(B, w, ki(g, g->cg.i32, 16), "");
            LLVMValueRef h = LLVMBuildTrunc(B, w, g->cg.i16, "");
            return to_reg(g, e->dtype == IC_F16 ? LLVMBuildBitCast(B, h, g->f16, "") : h, e->dtype);
        }
        return to_reg(g, LLVMBuildLoad2(B, mtype(g, e->dtype), tile_ptr(g, q, e->dtype, g->tile_off), ""), e->dtype);
    }
    bool pers = g->chunk >= 0 && !g->written[b];
    if (pers && g->P->creg > 0 && g->chunk >= g->P->creg) { /* staged rows: not kept in registers */
        LLVMValueRef v = staged_load(g, x);
        if (v) return to_reg(g, vec_lane(g, v, e->dtype, lane), e->dtype);
        pers = false; /* another load: read again from global memory (L2) in every pass */
    }
    size_t vk = (size_t)x * SMAX + (size_t)(pers ? g->chunk : 0);
    size_t pk = vk * VMAX + (size_t)lane;
    if (pers && g->pgen[vk] != g->vgen) {
        g->pgen[vk] = g->vgen;
        g->pvld[vk] = NULL;
        memset(&g->pmemo[vk * VMAX], 0, VMAX * sizeof(LLVMValueRef));
    }
    if (pers && g->pmemo[pk]) return g->pmemo[pk];
    LLVMValueRef r;
    if (e->a >= 0) {
        r = scalar_load(g, b, e->dtype, gather_off(g, e, lane));
    } else if (vec_access(g, e->ix) && safe_ix(g, e->ix, b) && buf_vec_ok(g, b, e->dtype)) {
        LLVMValueRef v;
        if (pers && g->pvld[vk]) {
            v = g->pvld[vk];
        } else if (!pers && g->vld_gen[x] == g->gen) {
            v = g->vld[x];
        } else {
            v = vec_load(g, b, e->dtype, gix(g, e->ix, 0));
            if (pers) g->pvld[vk] = v;
            g->vld[x] = v;
            g->vld_gen[x] = g->gen;
        }
        r = vec_lane(g, v, e->dtype, lane);
    } else {
        int l = lane_dep(g, e->ix) ? lane : 0;
        r = scalar_load(g, b, e->dtype, clamp_off(g, e->ix, gix(g, e->ix, l), b));
    }
    r = to_reg(g, r, e->dtype);
    if (pers) g->pmemo[pk] = r;
    return r;
}

static LLVMValueRef const_val(gg *g, const ic_x *e) {
    LLVMTypeRef t = rtype(g, e->dtype);
    if (is_half(e->dtype)) { /* rounded by LLVM's constant folding (APFloat, nearest even) */
        LLVMTypeRef ht = e->dtype == IC_F16 ? g->f16 : LLVMBFloatTypeInContext(g->cg.ctx);
        return LLVMBuildFPExt(B, LLVMConstReal(ht, e->cval), t, "");
    }
    if (ic_is_float(e->dtype)) return LLVMConstReal(t, e->cval);
    if (e->dtype == IC_BOOL) return LLVMConstInt(t, e->cval != 0, 0);
    return LLVMConstInt(t, (unsigned long long)(long long)e->cval, 1);
}

/* Does x differ between the V lanes (reads along the vectorized var)? Memoized per
 * generation; lanes of a lane-invariant x share lane 0's value (row math such as
 * rsqrt(mean + eps) is computed once, not V times). */
static bool x_lane_dep(gg *g, ic_xid x) {
    if (g->V <= 1 || g->vv < 0) return false;
    if (g->dep_gen[x] == g->gen) return g->dep[x];
    const ic_x *e = &g->c->xs[x];
    bool d = false;
    switch (e->kind) {
    case X_LOADF: d = lane_dep(g, e->ix) || (e->a >= 0 && x_lane_dep(g, e->a)); break;
    case X_IXVAL: d = lane_dep(g, e->ix); break;
    case X_CONST: case X_ROWVAL: break;
    default:
        d = (e->a >= 0 && x_lane_dep(g, e->a)) || (e->b >= 0 && x_lane_dep(g, e->b)) ||
            (e->c >= 0 && x_lane_dep(g, e->c));
    }
    g->dep[x] = d;
    g->dep_gen[x] = g->gen;
    return d;
}

static LLVMValueRef val(gg *g, ic_xid x, int lane) {
    size_t mi = (size_t)x * VMAX + (size_t)lane;
    if (g->memo_gen[mi] == g->gen) return g->memo[mi];
    if (lane > 0 && !x_lane_dep(g, x)) {
        LLVMValueRef r0 = val(g, x, 0);
        g->memo[mi] = r0;
        g->memo_gen[mi] = g->gen;
        return r0;
    }
    const ic_x e = g->c->xs[x];
    LLVMValueRef r = NULL;
    switch (e.kind) {
    case X_CONST: r = const_val(g, &e); break;
    case X_LOADF: r = load_lane(g, x, lane); break;
    case X_IXVAL: r = LLVMBuildIntCast2(B, gix(g, e.ix, lane_dep(g, e.ix) ? lane : 0), g->cg.i64, 1, ""); break;
    case X_ROWVAL:
        if (!g->rowval[e.a]) ic_fail(g->c, IC_EINTERNAL, "GPU codegen: row value %d not ready", e.a);
        r = g->rowval[e.a];
        break;
    case X_CAST: {
        /* f32 exp / division rounded to half right away: the fast forms (exp_half) */
        const ic_x s = g->c->xs[e.a];
        bool h = is_half(e.dtype) && s.kind == X_OP && s.dtype == IC_F32;
        if (h && s.op == IC_OP_EXP && g->c->xs[s.a].dtype == IC_F32)
            r = exp_half(g, val(g, s.a, lane));
        else if (h && s.op == IC_OP_GELU && g->c->xs[s.a].dtype == IC_F32)
            r = gelu_half(g, val(g, s.a, lane));
        else if (h && s.op == IC_OP_DIV && g->c->xs[s.a].dtype == IC_F32 && g->c->xs[s.b].dtype == IC_F32)
            r = (g->v2 & V2_ROWS) && !x_lane_dep(g, s.b) ? div_half_rcp(g, val(g, s.a, lane), s.b)
                                                         : div_half(g, val(g, s.a, lane), val(g, s.b, lane));
        else
            r = val(g, e.a, lane);
        r = convert(g, r, s.dtype, e.dtype);
        break;
    }
    case X_OP: {
        ic_kind k = ic_op_kind(e.op);
        if (e.dtype == IC_F32 && is_lowp(g, x) && e.op == IC_OP_EXP) {
            r = exp_half(g, val(g, e.a, lane));
            break;
        }
        if (e.dtype == IC_F32 && is_lowp(g, x) && e.op == IC_OP_DIV && g->c->xs[e.a].dtype == IC_F32) {
            r = (g->v2 & V2_ROWS) && !x_lane_dep(g, e.b) ? div_half_rcp(g, val(g, e.a, lane), e.b)
                                                         : div_half(g, val(g, e.a, lane), val(g, e.b, lane));
            break;
        }
        if (e.dtype == IC_F32 && e.op == IC_OP_DIV && (g->v2 & V2_ROWS) && g->c->xs[e.a].dtype == IC_F32 &&
            softmax_sum(g, e.b)) {
            r = div_rowsum(g, val(g, e.a, lane), e.b);
            break;
        }
        LLVMValueRef a = val(g, e.a, lane);
        if (k == IC_K_UNARY) r = unary(g, e.op, g->c->xs[e.a].dtype, a);
        else if (k == IC_K_BINARY) r = binary(g, e.op, g->c->xs[e.a].dtype, a, val(g, e.b, lane), e.b);
        else if (e.op == IC_OP_WHERE) r = sel(g, a, val(g, e.b, lane), val(g, e.c, lane));
        else ic_fail(g->c, IC_EINTERNAL, "GPU codegen: op %s", ic_op_name(e.op));
        break;
    }
    default: ic_fail(g->c, IC_EINTERNAL, "GPU codegen: expression kind %d", e.kind);
    }
    g->memo[mi] = r;
    g->memo_gen[mi] = g->gen;
    return r;
}

/* Stores the lanes' values of item it (register form, item dtype) under cond (NULL: always). */
static void store_item(gg *g, const ic_item *it, LLVMValueRef *v, int nl, LLVMValueRef cond) {
    LLVMBasicBlockRef st = NULL, end = NULL;
    if (cond) {
        st = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "st");
        end = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "st.end");
        LLVMBuildCondBr(B, cond, st, end);
        LLVMPositionBuilderAtEnd(B, st);
    }
    int b = it->buf;
    ic_dtype t = it->dtype;
    LLVMTypeRef mt = mtype(g, t);
    size_t esz = ic_dtype_size(t);
    if (nl > 1 && vec_access(g, it->out_ix) && buf_vec_ok(g, b, t)) {
        LLVMValueRef off = gix(g, it->out_ix, 0);
        LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
        LLVMValueRef vec;
        if (esz < 4 && nl * esz >= 4) {
            unsigned per = (unsigned)(4 / esz), nw = (unsigned)(nl * esz / 4);
            vec = LLVMGetUndef(LLVMVectorType(g->cg.i32, nw));
            for (unsigned w = 0; w < nw; w++) {
                LLVMValueRef word = LLVMConstInt(g->cg.i32, 0, 0);
                for (unsigned q = 0; q < per; q++) {
                    LLVMValueRef m = to_mem(g, v[w * per + q], t);
                    if (t == IC_F16) m = LLVMBuildBitCast(B, m, g->cg.i16, "");
                    m = LLVMBuildZExt(B, m, g->cg.i32, "");
                    if (q) m = LLVMBuildShl(B, m, ki(g, g->cg.i32, q * esz * 8), "");
                    word = LLVMBuildOr(B, word, m, "");
                }
                vec = LLVMBuildInsertElement(B, vec, word, LLVMConstInt(g->cg.i32, w, 0), "");
            }
        } else {
            vec = LLVMGetUndef(LLVMVectorType(mt, (unsigned)nl));
            for (int l = 0; l < nl; l++)
                vec = LLVMBuildInsertElement(B, vec, to_mem(g, v[l], t), LLVMConstInt(g->cg.i32, (unsigned)l, 0), "");
        }
        LLVMValueRef s = LLVMBuildStore(B, vec, p);
        unsigned al = vec_align(g, t);
        LLVMSetAlignment(s, al);
        need_align(g, b, al);
    } else {
        bool dep = lane_dep(g, it->out_ix);
        for (int l = dep ? 0 : nl - 1; l < nl; l++) { /* lane order: the last writer wins */
            LLVMValueRef off = gix(g, it->out_ix, dep ? l : 0);
            LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
            LLVMValueRef s = LLVMBuildStore(B, to_mem(g, v[l], t), p);
            LLVMSetAlignment(s, (unsigned)esz);
        }
    }
    if (cond) {
        LLVMBuildBr(B, end);
        LLVMPositionBuilderAtEnd(B, end);
    }
}

/* ---- reductions ---------------------------------------------------------------------------- */
static LLVMValueRef red_identity(gg *g, const ic_item *it) {
    LLVMTypeRef t = rtype(g, it->acc);
    bool f = ic_is_float(it->acc);
    bool max = it->red_op == IC_OP_AMAX || it->red_op == IC_OP_ARGMAX;
    if (it->red_op == IC_OP_SUM || it->red_op == IC_OP_MEAN) return LLVMConstNull(t);
    if (it->red_op == IC_OP_PROD) return f ? LLVMConstReal(t, 1.0) : LLVMConstInt(t, 1, 0);
    if (f) return LLVMConstReal(t, max ? -INFINITY : INFINITY);
    if (is_unsigned(it->acc)) return max ? LLVMConstNull(t) : LLVMConstAllOnes(t);
    unsigned bits = (unsigned)ic_dtype_size(it->acc) * 8;
    long long lo = bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
    return ki(g, t, max ? lo : ~lo);
}

static LLVMValueRef red_combine(gg *g, const ic_item *it, LLVMValueRef acc, LLVMValueRef x) {
    bool f = ic_is_float(it->acc);
    switch (it->red_op) {
    case IC_OP_SUM:
    case IC_OP_MEAN:
        if (it->acc == IC_BOOL) return LLVMBuildOr(B, acc, x, "");
        return f ? LLVMBuildFAdd(B, acc, x, "") : LLVMBuildAdd(B, acc, x, "");
    case IC_OP_AMAX:
    case IC_OP_AMIN: {
        bool max = it->red_op == IC_OP_AMAX;
        if (!f) return imaxmin(g, x, acc, max, it->acc);
        if (g->sm >= 80 && LLVMTypeOf(x) == g->cg.f32) return fmaxmin(g, x, acc, max);
        LLVMValueRef better = fcmp(g, max ? LLVMRealOGT : LLVMRealOLT, x, acc);
        better = LLVMBuildOr(B, better, isnan_(g, x), "");
        return sel(g, better, x, acc);
    }
    case IC_OP_PROD:
        if (it->acc == IC_BOOL) return LLVMBuildAnd(B, acc, x, "");
        return f ? LLVMBuildFMul(B, acc, x, "") : LLVMBuildMul(B, acc, x, "");
    default:
        ic_fail(g->c, IC_EINTERNAL, "GPU codegen: reduction %s", ic_op_name(it->red_op));
    }
}

/* argmax/argmin: (value, index) pairs; the first extreme wins, NaN counts as the extreme.
 * Commutative and associative (ties go to the lower index), so any combine order agrees. */
static void arg_combine(gg *g, const ic_item *it, LLVMValueRef acc, LLVMValueRef ai, LLVMValueRef x,
                        LLVMValueRef xi, LLVMValueRef *ro, LLVMValueRef *ri) {
    bool max = it->red_op == IC_OP_ARGMAX;
    LLVMValueRef better, tie;
    if (ic_is_float(it->acc)) {
        LLVMValueRef xn = isnan_(g, x), an = isnan_(g, acc);
        better = fcmp(g, max ? LLVMRealOGT : LLVMRealOLT, x, acc);
        better = LLVMBuildOr(B, better, LLVMBuildAnd(B, xn, LLVMBuildNot(B, an, ""), ""), "");
        tie = LLVMBuildOr(B, fcmp(g, LLVMRealOEQ, x, acc), LLVMBuildAnd(B, xn, an, ""), "");
    } else {
        bool u = is_unsigned(it->acc);
        better = LLVMBuildICmp(B, max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT), x, acc, "");
        tie = LLVMBuildICmp(B, LLVMIntEQ, x, acc, "");
    }
    LLVMValueRef take = LLVMBuildOr(B, better, LLVMBuildAnd(B, tie, LLVMBuildICmp(B, LLVMIntSLT, xi, ai, ""), ""), "");
    *ro = sel(g, take, x, acc);
    *ri = sel(g, take, xi, ai);
}

/* a value as i32 words for shuffles / back */
static LLVMValueRef shfl1(gg *g, LLVMValueRef w, int mask) {
    LLVMValueRef args[4] = {LLVMConstInt(g->cg.i32, 0xFFFFFFFFu, 0), w, LLVMConstInt(g->cg.i32, (unsigned)mask, 0),
                            LLVMConstInt(g->cg.i32, 0x1F, 0)};
    return intrin(g, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, args, 4);
}

static LLVMValueRef shfl_bfly(gg *g, LLVMValueRef v, int mask) {
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind tk = LLVMGetTypeKind(t);
    unsigned bits = tk == LLVMFloatTypeKind ? 32 : tk == LLVMDoubleTypeKind ? 64 : LLVMGetIntTypeWidth(t);
    LLVMTypeRef it = LLVMIntTypeInContext(g->cg.ctx, bits);
    LLVMValueRef x = tk == LLVMIntegerTypeKind ? v : LLVMBuildBitCast(B, v, it, "");
    LLVMValueRef r;
    if (bits <= 32) {
        LLVMValueRef w = bits < 32 ? LLVMBuildZExt(B, x, g->cg.i32, "") : x;
        w = shfl1(g, w, mask);
        r = bits < 32 ? LLVMBuildTrunc(B, w, it, "") : w;
    } else {
        LLVMValueRef lo = LLVMBuildTrunc(B, x, g->cg.i32, "");
        LLVMValueRef hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, x, ki(g, it, 32), ""), g->cg.i32, "");
        lo = LLVMBuildZExt(B, shfl1(g, lo, mask), it, "");
        hi = LLVMBuildShl(B, LLVMBuildZExt(B, shfl1(g, hi, mask), it, ""), ki(g, it, 32), "");
        r = LLVMBuildOr(B, lo, hi, "");
    }
    return tk == LLVMIntegerTypeKind ? r : LLVMBuildBitCast(B, r, t, "");
}

static void barrier(gg *g) { intrin(g, "llvm.nvvm.barrier0", NULL, 0, NULL, 0); }

/* Combines a (with its index *ai for argmax/argmin) over the threads of one row, the j-bits
 * of tid; every thread gets the result. Lane bits: shfl.sync butterflies; warp bits: shared
 * memory, read by every thread in the same order. */
static LLVMValueRef block_reduce(gg *g, const ic_item *it, LLVMValueRef a, LLVMValueRef *ai) {
    const plan *P = g->P;
    const ic_gmap *M = &P->map;
    for (int s = 0; s < M->nshfl; s++) { /* lane bits of the row: butterflies */
        LLVMValueRef x = shfl_bfly(g, a, M->shfl[s]);
        if (ai) {
            LLVMValueRef xi = shfl_bfly(g, *ai, M->shfl[s]);
            arg_combine(g, it, a, *ai, x, xi, &a, ai);
        } else {
            a = red_combine(g, it, a, x);
        }
    }
    if (!M->smem_mask) return a; /* warp bits of the row: shared memory */
    LLVMTypeRef t = LLVMTypeOf(a);
    bool i1 = t == g->cg.i1;
    LLVMTypeRef st = i1 ? g->cg.i8 : t;
    barrier(g);
    LLVMValueRef p = LLVMBuildGEP2(B, st, g->smem, &g->tid, 1, "");
    LLVMBuildStore(B, i1 ? LLVMBuildZExt(B, a, st, "") : a, p);
    LLVMValueRef ibase = NULL;
    if (ai) { /* indices in the second half */
        LLVMValueRef off = LLVMConstInt(g->cg.i32, (unsigned)P->Bk, 0);
        ibase = LLVMBuildGEP2(B, g->cg.i64, g->smem, &off, 1, "");
        LLVMBuildStore(B, *ai, LLVMBuildGEP2(B, g->cg.i64, ibase, &g->tid, 1, ""));
    }
    barrier(g);
    int nw = 1 << __builtin_popcount(M->smem_mask);
    LLVMValueRef base = LLVMBuildAnd(B, g->tid, LLVMConstInt(g->cg.i32, ~M->smem_mask, 0), "");
    LLVMValueRef r = NULL, ri = NULL;
    for (int w = 0; w < nw; w++) {
        unsigned dep = 0; /* w's bits deposited into the smem bits of tid */
        for (unsigned m = M->smem_mask, i = 0; m; m &= m - 1, i++)
            if (w >> i & 1) dep |= m & -m;
        LLVMValueRef idx = LLVMBuildOr(B, base, LLVMConstInt(g->cg.i32, dep, 0), "");
        LLVMValueRef v = LLVMBuildLoad2(B, st, LLVMBuildGEP2(B, st, g->smem, &idx, 1, ""), "");
        if (i1) v = LLVMBuildTrunc(B, v, g->cg.i1, "");
        if (ai) {
            LLVMValueRef vi = LLVMBuildLoad2(B, g->cg.i64, LLVMBuildGEP2(B, g->cg.i64, ibase, &idx, 1, ""), "");
            if (r) arg_combine(g, it, r, ri, v, vi, &r, &ri);
            else r = v, ri = vi;
        } else {
            r = r ? red_combine(g, it, r, v) : v;
        }
    }
    if (ai) *ai = ri;
    return r;
}

/* ---- kernel bodies --------------------------------------------------------------------------- */
/* vars[0..n) (slowest first) = digits of e */
static void decompose(gg *g, LLVMValueRef e, const int32_t *vars, const int64_t *sizes, int n) {
    for (int d = n - 1; d >= 0; d--) {
        if (d == 0) {
            g->var_val[vars[d]] = e;
            break;
        }
        g->var_val[vars[d]] = LLVMBuildURem(B, e, kix(g, sizes[d]), "");
        e = LLVMBuildUDiv(B, e, kix(g, sizes[d]), "");
    }
}

static LLVMValueRef alloca_(gg *g, LLVMTypeRef t, LLVMBasicBlockRef entry) {
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(g->cg.ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first) LLVMPositionBuilderBefore(ab, first);
    else LLVMPositionBuilderAtEnd(ab, entry);
    LLVMValueRef a = LLVMBuildAlloca(ab, t, "");
    LLVMDisposeBuilder(ab);
    return a;
}

typedef struct loop {
    LLVMValueRef iv, i;
    LLVMBasicBlockRef cond, body, exit;
} loop;

/* for (i = lo; i < hi; i += step) */
static void loop_begin(gg *g, loop *L, LLVMValueRef lo, LLVMValueRef hi) {
    L->iv = alloca_(g, g->ity, LLVMGetEntryBasicBlock(g->fn));
    LLVMBuildStore(B, lo, L->iv);
    L->cond = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "cond");
    L->body = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "body");
    L->exit = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "exit");
    LLVMBuildBr(B, L->cond);
    LLVMPositionBuilderAtEnd(B, L->cond);
    L->i = LLVMBuildLoad2(B, g->ity, L->iv, "i");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, L->i, hi, ""), L->body, L->exit);
    LLVMPositionBuilderAtEnd(B, L->body);
}

static void loop_end(gg *g, loop *L, LLVMValueRef step) {
    LLVMBuildStore(B, LLVMBuildAdd(B, L->i, step, ""), L->iv);
    LLVMBuildBr(B, L->cond);
    LLVMPositionBuilderAtEnd(B, L->exit);
}

static void emit_pointwise(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS];
    int nv = 0;
    for (int i = 0; i < k->nouter; i++) vars[nv] = k->ovar[i], sizes[nv++] = k->osize[i];
    for (int i = 0; i < k->ninner; i++) vars[nv] = k->ivar[i], sizes[nv++] = k->isize[i];
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef i0 = LLVMBuildAdd(B, LLVMBuildMul(B, bid, kix(g, P->Bk), ""), tid, "");
    loop L;
    loop_begin(g, &L, i0, kix(g, P->G));
    LLVMValueRef e0 = P->V > 1 ? LLVMBuildMul(B, L.i, kix(g, P->V), "") : L.i;
    decompose(g, e0, vars, sizes, nv);
    g->V = P->V;
    g->vv = P->vv;
    g->chunk = -1;
    g->gen++;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (!it->store) continue;
        LLVMValueRef v[VMAX];
        for (int l = 0; l < g->V; l++) v[l] = val(g, it->expr, l);
        store_item(g, it, v, g->V, NULL);
    }
    loop_end(g, &L, kix(g, (int64_t)P->grid * P->Bk));
}

/* XOR of basis[b] over the set bits b of tid: a linear layout applied to the thread index */
static LLVMValueRef xor_bits(gg *g, LLVMValueRef tid, const int64_t *basis, int nbits) {
    LLVMValueRef r = kix(g, 0);
    for (int b = 0; b < nbits; b++) {
        if (!basis[b]) continue;
        LLVMValueRef on = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, tid, kix(g, (int64_t)1 << b), ""), kix(g, 0), "");
        r = LLVMBuildXor(B, r, sel(g, on, kix(g, basis[b]), kix(g, 0)), "");
    }
    return r;
}

/* tile coordinates -> the u / vv vars (clamped in range; `ok` says whether they were) */
static LLVMValueRef set_uv(gg *g, LLVMValueRef uu, LLVMValueRef vx) {
    const plan *P = g->P;
    LLVMValueRef ou = LLVMBuildICmp(B, LLVMIntSLT, uu, kix(g, P->su), "");
    LLVMValueRef ov = LLVMBuildICmp(B, LLVMIntSLT, vx, kix(g, P->sv), "");
    g->var_val[P->tu] = sel(g, ou, uu, kix(g, P->su - 1));
    g->var_val[P->vv] = sel(g, ov, vx, kix(g, P->sv - 1));
    return LLVMBuildAnd(B, ou, ov, "");
}

/* A transpose through shared memory: phase 1 loads the transposed inputs coalesced along
 * u into the swizzled tile, phase 2 evaluates and stores coalesced along vv, reading them
 * back from the tile. Offsets from gpu_layout.c (ic_gpu_tile_map). */
static void emit_tile(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef tx = LLVMBuildAnd(B, tid, kix(g, 31), ""), ty = LLVMBuildLShr(B, tid, kix(g, 5), "");
    LLVMValueRef tv = LLVMBuildURem(B, bid, kix(g, P->ntv), ""), t = LLVMBuildUDiv(B, bid, kix(g, P->ntv), "");
    LLVMValueRef tu = LLVMBuildURem(B, t, kix(g, P->ntu), ""), o = LLVMBuildUDiv(B, t, kix(g, P->ntu), "");
    if (P->nob) decompose(g, o, P->obv, P->obs, P->nob);
    LLVMValueRef u0 = LLVMBuildMul(B, tu, kix(g, 32), ""), v0 = LLVMBuildMul(B, tv, kix(g, 32), "");
    LLVMValueRef st = xor_bits(g, tid, P->tile.st, 8), ld = xor_bits(g, tid, P->tile.ld, 8);
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    for (int i = 0; i < 4; i++) { /* phase 1: tile[c = tx, r = ty + 8i] */
        set_uv(g, LLVMBuildAdd(B, u0, tx, ""), LLVMBuildAdd(B, v0, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), ""));
        g->gen++;
        LLVMValueRef off = LLVMBuildXor(B, st, kix(g, P->tile.st_reg[i]), "");
        for (int q = 0; q < P->ntx; q++) {
            const ic_x *e = &g->c->xs[P->tx[q]];
            LLVMValueRef v = scalar_load(g, e->buf, e->dtype, clamp_off(g, e->ix, gix(g, e->ix, 0), e->buf));
            LLVMBuildStore(B, v, tile_ptr(g, q, e->dtype, off));
        }
    }
    barrier(g);
    g->tile_on = true;
    for (int i = 0; i < 4; i++) { /* phase 2: element (c = ty + 8i, r = tx) */
        LLVMValueRef ok = set_uv(g, LLVMBuildAdd(B, u0, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), ""),
                                 LLVMBuildAdd(B, v0, tx, ""));
        g->gen++;
        g->tile_off = LLVMBuildXor(B, ld, kix(g, P->tile.ld_reg[i]), "");
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (!it->store) continue;
            LLVMValueRef v = val(g, it->expr, 0);
            store_item(g, it, &v, 1, ok);
        }
    }
    g->tile_on = false;
}

/* tile coordinates -> the u / vv vars, clamped to umax / vmax; `ok` when both are in range */
static LLVMValueRef set_uv2(gg *g, LLVMValueRef uu, LLVMValueRef vx, int64_t umax, int64_t vmax) {
    const plan *P = g->P;
    LLVMValueRef ou = LLVMBuildICmp(B, LLVMIntSLT, uu, kix(g, P->su), "");
    LLVMValueRef ov = LLVMBuildICmp(B, LLVMIntSLT, vx, kix(g, P->sv), "");
    g->var_val[P->tu] = sel(g, ou, uu, kix(g, umax));
    g->var_val[P->vv] = sel(g, ov, vx, kix(g, vmax));
    return LLVMBuildAnd(B, ou, ov, "");
}

/* V2 16-bit transpose (choose_tile2): 64 x 64 tiles of words w(u, p) (gpu_layout.c,
 * ic_gpu_tile2_map). su and sv are even and every transposed load is a 4-byte aligned pair
 * along u, so a pair never straddles the edge: out-of-range coordinates are clamped to the
 * last pair (phase 1 u, phase 2 v) and only in-range pairs are stored. Phase 1: lane l loads
 * the words (2l, 2l+1) of rows v = 2p, 2p+1 and swaps halves into w(2l, p), w(2l+1, p);
 * phase 2: V = 2 along vv, lane -> p, warp and register -> u. */
static void emit_tile2(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef tx = LLVMBuildAnd(B, tid, kix(g, 31), ""), ty = LLVMBuildLShr(B, tid, kix(g, 5), "");
    LLVMValueRef tv = LLVMBuildURem(B, bid, kix(g, P->ntv), ""), t = LLVMBuildUDiv(B, bid, kix(g, P->ntv), "");
    LLVMValueRef tu = LLVMBuildURem(B, t, kix(g, P->ntu), ""), o = LLVMBuildUDiv(B, t, kix(g, P->ntu), "");
    if (P->nob) decompose(g, o, P->obv, P->obs, P->nob);
    LLVMValueRef u0 = LLVMBuildMul(B, tu, kix(g, 64), ""), v0 = LLVMBuildMul(B, tv, kix(g, 64), "");
    LLVMValueRef st = xor_bits(g, tid, P->tile.st, 8), ld = xor_bits(g, tid, P->tile.ld, 8);
    LLVMTypeRef i32 = g->cg.i32;
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    LLVMValueRef ue = LLVMBuildAdd(B, u0, LLVMBuildShl(B, tx, kix(g, 1), ""), ""); /* even u of lane */
    LLVMValueRef a[4][4][2]; /* phase 1: pair p = ty + 8i, rows v = 2p + r; all loads first */
    for (int i = 0; i < 4; i++) {
        LLVMValueRef vp = LLVMBuildShl(B, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), kix(g, 1), "");
        for (int r = 0; r < 2; r++) {
            set_uv2(g, ue, LLVMBuildAdd(B, v0, LLVMBuildAdd(B, vp, kix(g, r), ""), ""), P->su - 2, P->sv - 1);
            g->gen++;
            for (int q = 0; q < P->ntx; q++) {
                const ic_x *e = &g->c->xs[P->tx[q]];
                LLVMValueRef off = gix(g, e->ix, 0);
                LLVMValueRef p = LLVMBuildGEP2(B, mtype(g, e->dtype), g->buf_ptr[e->buf], &off, 1, "");
                a[i][q][r] = LLVMBuildLoad2(B, i32, p, "");
                LLVMSetAlignment(a[i][q][r], 4);
                need_align(g, e->buf, 4);
            }
        }
    }
    for (int i = 0; i < 4; i++) /* 2 x 2 transposes: w(2l, p) = low halves, w(2l+1, p) = high */
        for (int q = 0; q < P->ntx; q++) {
            LLVMValueRef a0 = a[i][q][0], a1 = a[i][q][1];
            LLVMValueRef lo = LLVMBuildAnd(B, a0, ki(g, i32, 0xFFFF), "");
            LLVMValueRef w0 = LLVMBuildOr(B, lo, LLVMBuildShl(B, a1, ki(g, i32, 16), ""), "");
            LLVMValueRef hi = LLVMBuildAnd(B, a1, ki(g, i32, (long long)0xFFFF0000u), "");
            LLVMValueRef w1 = LLVMBuildOr(B, LLVMBuildLShr(B, a0, ki(g, i32, 16), ""), hi, "");
            for (int h = 0; h < 2; h++) {
                LLVMValueRef idx = LLVMBuildXor(B, st, kix(g, P->tile.st_reg[h + 2 * i]), "");
                idx = LLVMBuildAdd(B, idx, kix(g, (int64_t)q * 2048), "");
                LLVMBuildStore(B, h ? w1 : w0, LLVMBuildGEP2(B, i32, g->smem, &idx, 1, ""));
            }
        }
    barrier(g);
    g->tile_on = true;
    LLVMValueRef ve = LLVMBuildAdd(B, v0, LLVMBuildShl(B, tx, kix(g, 1), ""), ""); /* even v of lane */
    /* phase 2: u = ty + 8i, pair p = tx; every value first (the loads go out together),
     * then the stores (unconditional when the tiles cover su x sv exactly) */
    LLVMValueRef *vals = ic_alloc(g->c, (size_t)(8 * k->nitems + 1) * 2 * sizeof(LLVMValueRef)), ok[8];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 8; i++) {
            ok[i] = set_uv2(g, LLVMBuildAdd(B, u0, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), ""), ve, P->su - 1,
                            P->sv - 2);
            g->V = 2;
            g->vv = P->vv;
            g->gen++;
            g->tile_off = LLVMBuildXor(B, ld, kix(g, P->tile.ld_reg[i]), "");
            for (int j = 0; j < k->nitems; j++) {
                ic_item *it = &k->items[j];
                if (!it->store) continue;
                LLVMValueRef *v = &vals[(i * k->nitems + j) * 2];
                if (pass == 0) v[0] = val(g, it->expr, 0), v[1] = val(g, it->expr, 1);
                else store_item(g, it, v, 2, P->tfull ? NULL : ok[i]);
            }
        }
    g->tile_on = false;
    g->V = 1;
    g->vv = -1;
}

/* One chunk of a pass: V consecutive elements of the row per thread. */
static void emit_chunk(gg *g, ic_kernel *k, int pos, LLVMValueRef ci, int cidx, LLVMValueRef *acc) {
    const plan *P = g->P;
    LLVMValueRef gi = LLVMBuildAdd(B, LLVMBuildMul(B, ci, kix(g, P->T), ""), g->j, "");
    LLVMValueRef valid = P->all_cols ? g->active : and_(g, g->active, LLVMBuildICmp(B, LLVMIntSLT, gi, kix(g, P->nv), ""));
    LLVMValueRef gc = sel(g, valid, gi, kix(g, 0));
    LLVMValueRef e0 = P->V > 1 ? LLVMBuildMul(B, gc, kix(g, P->V), "") : gc;
    decompose(g, e0, k->ivar, k->isize, k->ninner);
    g->V = P->V;
    g->vv = P->vv;
    g->chunk = cidx;
    g->gen++;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos) continue;
        if (it->kind == IT_REDUCE && ic_is_arg(it->red_op)) {
            LLVMValueRef a = LLVMBuildLoad2(B, rtype(g, it->acc), acc[j], "");
            LLVMValueRef ai = LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "");
            LLVMValueRef id = red_identity(g, it), none = ki(g, g->cg.i64, INT64_MAX);
            ic_dtype xt = g->c->xs[it->expr2].dtype;
            for (int l = 0; l < g->V; l++) {
                LLVMValueRef x = sel(g, valid, val(g, it->expr, l), id);
                LLVMValueRef xi = sel(g, valid, convert(g, val(g, it->expr2, l), xt, IC_I64), none);
                arg_combine(g, it, a, ai, x, xi, &a, &ai);
            }
            LLVMBuildStore(B, a, acc[j]);
            LLVMBuildStore(B, ai, acc[k->nitems + j]);
        } else if (it->kind == IT_REDUCE) {
            LLVMTypeRef at = rtype(g, it->acc);
            LLVMValueRef a = LLVMBuildLoad2(B, at, acc[j], "");
            LLVMValueRef id = red_identity(g, it);
            for (int l = 0; l < g->V; l++) a = red_combine(g, it, a, sel(g, valid, val(g, it->expr, l), id));
            LLVMBuildStore(B, a, acc[j]);
        } else if (it->store) {
            LLVMValueRef v[VMAX];
            for (int l = 0; l < g->V; l++) v[l] = val(g, it->expr, l);
            store_item(g, it, v, g->V, valid);
        }
    }
    g->chunk = -1;
}

/* address of partial (slot, current row, part) */
static LLVMValueRef part_ptr(gg *g, int slot, LLVMValueRef part) {
    const plan *P = g->P;
    LLVMValueRef i = LLVMBuildAdd(B, LLVMBuildMul(B, kix(g, slot), kix(g, P->rows), ""), g->row, "");
    i = LLVMBuildAdd(B, LLVMBuildMul(B, i, kix(g, P->S), ""), part, "");
    i = LLVMBuildMul(B, i, kix(g, 8), "");
    return LLVMBuildGEP2(B, g->cg.i8, g->part, &i, 1, "");
}

static void part_store(gg *g, int slot, LLVMValueRef part, LLVMValueRef v) {
    if (LLVMTypeOf(v) == g->cg.i1) v = LLVMBuildZExt(B, v, g->cg.i8, "");
    LLVMBuildStore(B, v, part_ptr(g, slot, part));
}

/* The block's partials, by its thread `first`: v[i] (skipped where NULL) into slot[i] */
static void part_stores(gg *g, LLVMValueRef first, const int *slot, LLVMValueRef *v, int n) {
    LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "part");
    LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "part.end");
    LLVMBuildCondBr(B, first, st, end);
    LLVMPositionBuilderAtEnd(B, st);
    for (int i = 0; i < n; i++)
        if (v[i]) part_store(g, slot[i], g->part_s, v[i]);
    LLVMBuildBr(B, end);
    LLVMPositionBuilderAtEnd(B, end);
}

/* The row value of reduction item j from its S partials: thread t reads partials t, t + T,
 * ... in that order, then one block reduction (the same order in every block, so every
 * launch gets the same value). */
static LLVMValueRef part_combine(gg *g, const ic_item *it, int slot) {
    const plan *P = g->P;
    LLVMTypeRef at = rtype(g, it->acc);
    LLVMTypeRef lt = at == g->cg.i1 ? g->cg.i8 : at;
    bool arg = ic_is_arg(it->red_op);
    LLVMValueRef v = NULL, vi = NULL;
    for (int i = 0; i * P->Bk < P->S; i++) {
        LLVMValueRef t = i ? LLVMBuildAdd(B, g->j, kix(g, (int64_t)i * P->Bk), "") : g->j;
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLT, t, kix(g, P->S), "");
        t = sel(g, ok, t, kix(g, 0));
        LLVMValueRef x = LLVMBuildLoad2(B, lt, part_ptr(g, slot, t), "");
        if (lt != at) x = LLVMBuildTrunc(B, x, at, "");
        x = sel(g, ok, x, red_identity(g, it));
        if (arg) {
            LLVMValueRef xi = LLVMBuildLoad2(B, g->cg.i64, part_ptr(g, slot + 1, t), "");
            xi = sel(g, ok, xi, ki(g, g->cg.i64, INT64_MAX));
            if (v) arg_combine(g, it, v, vi, x, xi, &v, &vi);
            else v = x, vi = xi;
        } else {
            v = v ? red_combine(g, it, v, x) : x;
        }
    }
    if (arg) {
        block_reduce(g, it, v, &vi);
        return convert(g, vi, IC_I64, it->dtype);
    }
    v = block_reduce(g, it, v, NULL);
    if (it->red_op == IC_OP_MEAN) v = LLVMBuildFDiv(B, v, kf(v, (double)it->red_count), "");
    return convert(g, v, it->acc, it->dtype);
}

static void emit_pass(gg *g, ic_kernel *k, int pos);

/* Row scratch buffers (kind 3) are addressed row-locally; on the GPU every row has its own
 * copy (rows x span in the workspace): point them at this thread's row. */
static void rebase_scratch(gg *g, ic_kernel *k, LLVMValueRef row) {
    ic_ctx *c = g->c;
    for (int b = 0; b < c->nbufs; b++) {
        if (c->bufs[b].kind != 3 || !g->buf_param[b]) continue;
        (void)k;
        LLVMValueRef off = LLVMBuildMul(B, row, kix(g, c->bufs[b].span * (int64_t)ic_dtype_size(c->bufs[b].dtype)), "");
        g->buf_ptr[b] = LLVMBuildGEP2(B, g->cg.i8, g->buf_param[b], &off, 1, "");
    }
}

/* The final launch's stores (only at its end: choose_split): the reductions that store, then
 * the row's other stored values. */
static void final_stores(gg *g, ic_kernel *k, LLVMValueRef first) {
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->kind == IT_REDUCE && it->store) store_item(g, it, &g->rowval[j], 1, first);
    }
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos % 2 || !it->store || it->kind == IT_REDUCE) continue;
        LLVMValueRef v = val(g, it->expr, 0);
        store_item(g, it, &v, 1, first);
    }
}

/* Online split rows: B's row value from the partials (a_t, b_t) of every part t, made by
 * emit_online with its part's own value of A. ON_SOFTMAX (A = max x, B = sum exp(x - A)):
 * B = sum_t b_t exp(a_t - A), a part with a_t = -inf (no values, or only -inf) adds 0.
 * ON_VAR (A = mean x, B = sum or mean of (x - A)^2; a_t is the part's raw sum and slot B + 1
 * its count n_t): B = sum_t m2_t + n_t (a_t / n_t - A)^2 (Chan et al.), an empty part adds 0.
 * Same order in every block, as part_combine. */
static LLVMValueRef online_combine(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    const ic_item *ia = &k->items[P->on_a], *ib = &k->items[P->on_b];
    int sa = P->slot[P->on_a], sb = P->slot[P->on_b];
    LLVMValueRef A = g->rowval[P->on_a], v = NULL, z = kf(A, 0.0);
    LLVMTypeRef ft = g->cg.f32;
    bool plain = g->c->xs[P->on_shift].kind == X_ROWVAL;
    g->gen++;
    LLVMValueRef SA = P->on_kind == ON_SOFTMAX && !plain ? val(g, P->on_shift, 0) : A;
    (void)ia;
    for (int i = 0; i * P->Bk < P->S; i++) {
        LLVMValueRef t = i ? LLVMBuildAdd(B, g->j, kix(g, (int64_t)i * P->Bk), "") : g->j;
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLT, t, kix(g, P->S), "");
        t = sel(g, ok, t, kix(g, 0));
        LLVMValueRef a = LLVMBuildLoad2(B, ft, part_ptr(g, sa, t), "");
        LLVMValueRef b = LLVMBuildLoad2(B, ft, part_ptr(g, sb, t), "");
        LLVMValueRef term;
        if (P->on_kind == ON_SOFTMAX) {
            LLVMValueRef st = a;
            if (!plain) { /* s(a_t): the shift over part t alone */
                g->rowval[P->on_a] = a;
                g->gen++;
                st = val(g, P->on_shift, 0);
            }
            LLVMValueRef e = vm_exp(&g->cg, LLVMBuildFSub(B, st, SA, ""));
            term = sel(g, fcmp(g, LLVMRealOEQ, a, kf(a, -INFINITY)), z, LLVMBuildFMul(B, b, e, ""));
        } else {
            LLVMValueRef n = LLVMBuildLoad2(B, ft, part_ptr(g, sb + 1, t), "");
            LLVMValueRef d = LLVMBuildFSub(B, LLVMBuildFDiv(B, a, n, ""), A, "");
            term = fma3(g, LLVMBuildFMul(B, n, d, ""), d, b);
            term = sel(g, fcmp(g, LLVMRealOGT, n, z), term, z);
        }
        term = sel(g, ok, term, z);
        v = v ? LLVMBuildFAdd(B, v, term, "") : term;
    }
    g->rowval[P->on_a] = A;
    g->gen++;
    v = block_reduce(g, ib, v, NULL);
    if (ib->red_op == IC_OP_MEAN) v = LLVMBuildFDiv(B, v, kf(v, (double)ib->red_count), "");
    return v;
}

/* The row values of the reductions with pos in [lo, hi) from their partials (B of an online
 * pair after the others: it needs A's). */
static void combine_rows(gg *g, ic_kernel *k, int lo, int hi) {
    const plan *P = g->P;
    for (int late = 0; late < 2; late++)
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (it->kind != IT_REDUCE || it->pos < lo || it->pos >= hi) continue;
            bool b = P->on_kind && j == P->on_b;
            if (b != (late == 1)) continue;
            g->rowval[j] = b ? online_combine(g, k) : part_combine(g, it, P->slot[j]);
        }
}

/* The accumulators of the reductions of pass pos, in entry-block allocas set to their
 * identities: [j] the value, [nitems + j] an arg reduction's index (calloc'd; free it). */
static LLVMValueRef *pass_accs(gg *g, ic_kernel *k, int pos) {
    LLVMValueRef *acc = calloc(2 * (size_t)k->nitems + 1, sizeof *acc);
    if (!acc) ic_fail(g->c, IC_ENOMEM, "out of memory");
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos || it->kind != IT_REDUCE) continue;
        acc[j] = alloca_(g, rtype(g, it->acc), entry);
        LLVMBuildStore(B, red_identity(g, it), acc[j]);
        if (ic_is_arg(it->red_op)) {
            acc[k->nitems + j] = alloca_(g, g->cg.i64, entry);
            LLVMBuildStore(B, ki(g, g->cg.i64, INT64_MAX), acc[k->nitems + j]);
        }
    }
    return acc;
}

/* s(v): the shift of an online softmax pair over a value v of A (A itself, or logsumexp's
 * where(isinf(A), 0, A)); rowval[A] is left at v */
static LLVMValueRef online_sh(gg *g, LLVMValueRef v) {
    const plan *P = g->P;
    if (g->c->xs[P->on_shift].kind == X_ROWVAL) return v;
    g->rowval[P->on_a] = v;
    g->gen++;
    return val(g, P->on_shift, 0);
}

/* A's launch of an online pair: each thread runs over its chunks of the part (unroll chunks an
 * iteration, their loads issued together) keeping its own state, with no barrier in the loop:
 *   ON_SOFTMAX: m (A's running max) and s = sum exp(x - s(m)), rescaled by exp(s(m) - s(m'))
 *     when an iteration raises the max to m' (a thread with only -inf so far keeps s = 0);
 *   ON_VAR: the running sum (A's raw accumulator), and count, mean and M2 = sum (x - mean)^2
 *     merged per iteration (Chan et al.) from the iteration's own mean and squared deviations.
 * Then the block: M = max m, sum_t s_t exp(s(m_t) - s(M)); or SUM, n_part and
 * sum_t M2_t + n_t (mean_t - SUM / n_part)^2. The partials are those online_combine reads
 * (A's raw value, B's, and ON_VAR the part's count). Other reductions of A's pass as usual. */
static void emit_online(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    int pa = P->pass, pb = P->pass + 2, ja = P->on_a, jb = P->on_b;
    const ic_item *ia = &k->items[ja], *ib = &k->items[jb];
    bool smx = P->on_kind == ON_SOFTMAX;
    LLVMTypeRef ft = g->cg.f32;
    LLVMValueRef z = LLVMConstReal(ft, 0.0), one = LLVMConstReal(ft, 1.0), ninf = LLVMConstReal(ft, -INFINITY);
    LLVMValueRef *acc = pass_accs(g, k, pa);
    LLVMValueRef *acc2 = calloc(2 * (size_t)k->nitems + 1, sizeof *acc2);
    if (!acc2) ic_fail(g->c, IC_ENOMEM, "out of memory");
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    LLVMValueRef ga = alloca_(g, ft, entry), gb = alloca_(g, ft, entry); /* the iteration's A and B */
    LLVMValueRef sb = alloca_(g, ft, entry), tn = alloca_(g, ft, entry), tm = alloca_(g, ft, entry);
    LLVMBuildStore(B, z, sb);
    LLVMBuildStore(B, z, tn);
    LLVMBuildStore(B, z, tm);
    memcpy(acc2, acc, (2 * (size_t)k->nitems + 1) * sizeof *acc);
    loop L;
    LLVMValueRef lo = LLVMBuildMul(B, g->part_s, kix(g, P->Cs), "");
    loop_begin(g, &L, lo, LLVMBuildAdd(B, lo, kix(g, P->Cs), ""));
    LLVMBuildStore(B, red_identity(g, ia), ga);
    acc2[ja] = ga;
    for (int u = 0; u < P->unroll; u++) emit_chunk(g, k, pa, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, u, acc2);
    g->V = 1;
    g->vv = -1;
    LLVMValueRef gv = LLVMBuildLoad2(B, ft, ga, "");
    LLVMValueRef m = LLVMBuildLoad2(B, ft, acc[ja], "");
    LLVMValueRef m2 = red_combine(g, ia, m, gv); /* the thread's max, or raw sum, so far */
    LLVMBuildStore(B, m2, acc[ja]);
    if (smx) {
        LLVMValueRef shm = online_sh(g, m), shm2 = online_sh(g, m2);
        LLVMValueRef e = vm_exp(&g->cg, LLVMBuildFSub(B, shm, shm2, ""));
        LLVMValueRef scale = sel(g, fcmp(g, LLVMRealOEQ, m, m2), one, sel(g, fcmp(g, LLVMRealOEQ, m, ninf), z, e));
        LLVMBuildStore(B, LLVMBuildFMul(B, LLVMBuildLoad2(B, ft, sb, ""), scale, ""), sb);
        g->rowval[ja] = m2;
        acc2[jb] = sb;
    } else {
        LLVMValueRef cnt = z; /* the thread's values this iteration: whole chunks of V */
        for (int u = 0; u < P->unroll; u++) {
            LLVMValueRef ci = u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i;
            LLVMValueRef gi = LLVMBuildAdd(B, LLVMBuildMul(B, ci, kix(g, P->T), ""), g->j, "");
            LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLT, gi, kix(g, P->nv), "");
            cnt = LLVMBuildFAdd(B, cnt, sel(g, ok, LLVMConstReal(ft, P->V), z), "");
        }
        LLVMValueRef pos = fcmp(g, LLVMRealOGT, cnt, z);
        LLVMValueRef gm = sel(g, pos, LLVMBuildFDiv(B, gv, sel(g, pos, cnt, one), ""), z);
        g->rowval[ja] = gm;
        LLVMBuildStore(B, z, gb);
        acc2[jb] = gb;
        g->gen++;
        for (int u = 0; u < P->unroll; u++) emit_chunk(g, k, pb, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, u, acc2);
        g->V = 1;
        g->vv = -1;
        LLVMValueRef n0 = LLVMBuildLoad2(B, ft, tn, ""), m0 = LLVMBuildLoad2(B, ft, tm, "");
        LLVMValueRef n1 = LLVMBuildFAdd(B, n0, cnt, "");
        LLVMValueRef d = LLVMBuildFSub(B, gm, m0, "");
        LLVMValueRef w = LLVMBuildFDiv(B, cnt, sel(g, pos, n1, one), ""); /* cnt / n1 */
        LLVMValueRef m1 = fma3(g, d, w, m0);
        LLVMValueRef q = LLVMBuildFMul(B, LLVMBuildFMul(B, d, d, ""), LLVMBuildFMul(B, n0, w, ""), "");
        LLVMValueRef M2 = LLVMBuildFAdd(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, ft, sb, ""), LLVMBuildLoad2(B, ft, gb, ""), ""), q, "");
        LLVMBuildStore(B, sel(g, pos, n1, n0), tn);
        LLVMBuildStore(B, sel(g, pos, m1, m0), tm);
        LLVMBuildStore(B, sel(g, pos, M2, LLVMBuildLoad2(B, ft, sb, "")), sb);
    }
    if (smx) {
        g->gen++;
        for (int u = 0; u < P->unroll; u++) emit_chunk(g, k, pb, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, u, acc2);
        g->V = 1;
        g->vv = -1;
        /* nothing but -inf so far: exp(x - s(-inf)) may be NaN; the sum is 0 */
        LLVMValueRef sv = LLVMBuildLoad2(B, ft, sb, "");
        LLVMBuildStore(B, sel(g, fcmp(g, LLVMRealOEQ, m2, ninf), z, sv), sb);
    }
    loop_end(g, &L, kix(g, P->unroll));
    g->vgen++; /* the chunk loads of the loop body stay in it */
    g->gen++;
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), "");
    LLVMValueRef pa_v = NULL, pb_v = NULL, pn_v = NULL;
    for (int j = 0; j < k->nitems; j++) { /* the pass's reductions, A's among them */
        ic_item *it = &k->items[j];
        if (it->pos != pa || it->kind != IT_REDUCE) continue;
        LLVMValueRef r = LLVMBuildLoad2(B, rtype(g, it->acc), acc[j], "");
        LLVMValueRef ri = ic_is_arg(it->red_op) ? LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "") : NULL;
        LLVMValueRef rt = r;
        r = block_reduce(g, it, r, ri ? &ri : NULL);
        if (j == ja) {
            pa_v = r;
            if (smx) { /* s_t exp(s(m_t) - s(M)), 0 for a thread that saw only -inf */
                LLVMValueRef e = vm_exp(&g->cg, LLVMBuildFSub(B, online_sh(g, rt), online_sh(g, r), ""));
                LLVMValueRef st = LLVMBuildFMul(B, LLVMBuildLoad2(B, ft, sb, ""), e, "");
                pb_v = sel(g, fcmp(g, LLVMRealOEQ, rt, ninf), z, st);
            } else { /* M2_t + n_t (mean_t - mean of the part)^2 */
                int64_t per = P->Cs * (int64_t)P->T * P->V;
                LLVMValueRef left = LLVMBuildSub(B, kix(g, P->n), LLVMBuildMul(B, g->part_s, kix(g, per), ""), "");
                left = sel(g, LLVMBuildICmp(B, LLVMIntSLT, left, kix(g, per), ""), left, kix(g, per));
                left = sel(g, LLVMBuildICmp(B, LLVMIntSGT, left, kix(g, 0), ""), left, kix(g, 0));
                pn_v = LLVMBuildSIToFP(B, left, ft, "");
                LLVMValueRef pos = fcmp(g, LLVMRealOGT, pn_v, z);
                LLVMValueRef mp = sel(g, pos, LLVMBuildFDiv(B, r, sel(g, pos, pn_v, one), ""), z);
                LLVMValueRef n0 = LLVMBuildLoad2(B, ft, tn, "");
                LLVMValueRef d = LLVMBuildFSub(B, LLVMBuildLoad2(B, ft, tm, ""), mp, "");
                LLVMValueRef c = fma3(g, LLVMBuildFMul(B, n0, d, ""), d, LLVMBuildLoad2(B, ft, sb, ""));
                pb_v = sel(g, fcmp(g, LLVMRealOGT, n0, z), c, z);
            }
            pb_v = block_reduce(g, ib, pb_v, NULL);
        }
        int sl[4] = {P->slot[j], P->slot[j] + 1, P->slot[jb], P->slot[jb] + 1};
        LLVMValueRef v[4] = {r, ri, j == ja ? pb_v : NULL, j == ja ? pn_v : NULL};
        part_stores(g, first, sl, v, 4);
    }
    (void)pa_v;
    g->rowval[ja] = NULL; /* only combined values past this launch */
    g->gen++;
    free(acc);
    free(acc2);
}

/* One launch of a split row kernel: block = (row, part). */
static void emit_split(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    g->j = LLVMBuildZExt(B, g->tid, g->ity, "");
    int S = P->pass >= 0 ? P->Sg : 1;
    g->row = S > 1 ? LLVMBuildUDiv(B, bid, kix(g, S), "") : bid;
    g->part_s = S > 1 ? LLVMBuildURem(B, bid, kix(g, S), "") : kix(g, 0);
    g->active = LLVMConstInt(g->cg.i1, 1, 0);
    decompose(g, g->row, k->ovar, k->osize, k->nouter);
    rebase_scratch(g, k, g->row);
    memset(g->rowval, 0, sizeof(LLVMValueRef) * (size_t)(k->nitems + 1));
    LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), "");
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    g->gen++;
    combine_rows(g, k, INT_MIN, P->pass >= 0 ? P->pass : INT_MAX);
    if (P->pass >= 0) {
        if (P->online) emit_online(g, k);
        else emit_pass(g, k, P->pass);
        return;
    }
    final_stores(g, k, first);
}

static void emit_pass(gg *g, ic_kernel *k, int pos) {
    const plan *P = g->P;
    LLVMValueRef *acc = pass_accs(g, k, pos);
    if (P->persistent) {
        for (int c = 0; c < P->C; c++) emit_chunk(g, k, pos, kix(g, c), c, acc);
    } else if (P->C > 0) {
        /* unroll chunks per iteration: their loads are independent and go out together */
        loop L;
        if (P->S > 1) {
            LLVMValueRef lo = LLVMBuildMul(B, g->part_s, kix(g, P->Cs), "");
            loop_begin(g, &L, lo, LLVMBuildAdd(B, lo, kix(g, P->Cs), ""));
        } else {
            loop_begin(g, &L, kix(g, 0), kix(g, P->C));
        }
        for (int u = 0; u < P->unroll; u++)
            emit_chunk(g, k, pos, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, -1, acc);
        loop_end(g, &L, kix(g, P->unroll));
    }
    g->V = 1;
    g->vv = -1;
    g->gen++;
    LLVMValueRef first = and_(g, g->active, LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), ""));
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos || it->kind != IT_REDUCE) continue;
        LLVMValueRef r = LLVMBuildLoad2(B, rtype(g, it->acc), acc[j], "");
        if (P->S > 1) { /* this block's partial: raw accumulator (and index) */
            LLVMValueRef ri = ic_is_arg(it->red_op) ? LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "") : NULL;
            r = block_reduce(g, it, r, ri ? &ri : NULL);
            int sl[2] = {P->slot[j], P->slot[j] + 1};
            LLVMValueRef v[2] = {r, ri};
            part_stores(g, first, sl, v, 2);
            continue;
        }
        if (ic_is_arg(it->red_op)) {
            LLVMValueRef ri = LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "");
            block_reduce(g, it, r, &ri);
            r = convert(g, ri, IC_I64, it->dtype);
        } else {
            r = block_reduce(g, it, r, NULL);
            if (it->red_op == IC_OP_MEAN) r = LLVMBuildFDiv(B, r, kf(r, (double)it->red_count), "");
            r = convert(g, r, it->acc, it->dtype);
        }
        g->rowval[j] = r;
        if (it->store) store_item(g, it, &r, 1, first);
    }
    free(acc);
}

/* (tid >> shift) & (2^len - 1), the mask left out when the field reaches the top of tid */
static LLVMValueRef bitfield(gg *g, LLVMValueRef tid, int shift, int len) {
    LLVMValueRef v = shift ? LLVMBuildLShr(B, tid, kix(g, shift), "") : tid;
    if (shift + len >= g->P->logT + g->P->logR) return v;
    return LLVMBuildAnd(B, v, kix(g, ((int64_t)1 << len) - 1), "");
}

static void emit_rows(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    if (P->S > 1) {
        emit_split(g, k);
        return;
    }
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef rl = bitfield(g, tid, P->map.r_shift, P->logR);
    g->j = bitfield(g, tid, P->map.j_shift, P->logT);
    if (g->dyn) {
        LLVMValueRef o = LLVMBuildMul(B, LLVMBuildZExt(B, g->j, g->cg.i64, ""), ki(g, g->cg.i64, 16), "");
        g->dyn_base = LLVMBuildInBoundsGEP2(B, g->cg.i8, g->dyn, &o, 1, "");
    }
    LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildMul(B, bid, kix(g, P->R), ""), rl, "");
    g->active = P->all_rows ? LLVMConstInt(g->cg.i1, 1, 0) : LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, P->rows), "");
    LLVMValueRef rc = P->all_rows ? r : sel(g, g->active, r, kix(g, 0));
    decompose(g, rc, k->ovar, k->osize, k->nouter);
    rebase_scratch(g, k, rc);
    memset(g->rowval, 0, sizeof(LLVMValueRef) * (size_t)(k->nitems + 1));
    LLVMValueRef first = and_(g, g->active, LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), ""));
    for (int p = 0; p < k->npos; p++) {
        if (p % 2) {
            emit_pass(g, k, p);
            continue;
        }
        g->V = 1;
        g->vv = -1;
        g->chunk = -1;
        g->gen++;
        bool stored = false;
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (it->pos != p || !it->store) continue;
            LLVMValueRef v = val(g, it->expr, 0);
            store_item(g, it, &v, 1, first);
            stored = true;
        }
        /* a row value stored by thread j == 0 may be loaded by every thread of a later pass */
        if (stored && p + 1 < k->npos) barrier(g);
    }
}

/* ---- planning ------------------------------------------------------------------------------- */
static int ilog2(int64_t x) {
    int l = 0;
    while (((int64_t)1 << l) < x) l++;
    return l;
}

static int64_t pow2ceil(int64_t x) { return (int64_t)1 << ilog2(x < 1 ? 1 : x); }

typedef struct scan {
    ic_ctx *c;
    int32_t vv;
    int min_esz;     /* smallest element of an access contiguous along vv */
    int nscalar;     /* loads that differ per lane but are not contiguous (one per lane) */
    int ntrans;      /* transcendental ops (exp, erf, tanh, ...): tens of instructions each */
    uint8_t *seen;
} scan;

static void scan_ix(scan *S, ic_ix a, ic_dtype t) {
    bool na;
    if (S->vv < 0 || ix_coeff(S->c, a, S->vv, &na) != 1 || na) return;
    int e = (int)ic_dtype_size(t);
    if (e < S->min_esz) S->min_esz = e;
}

static void scan_x(scan *S, ic_xid x) {
    if (S->seen[x]) return;
    S->seen[x] = 1;
    const ic_x *e = &S->c->xs[x];
    if (e->kind == X_LOADF && e->a < 0) scan_ix(S, e->ix, e->dtype);
    if (e->kind == X_LOADF && S->vv >= 0) {
        bool na;
        if (e->a >= 0 || (ix_uses_var(S->c, e->ix, S->vv) && (ix_coeff(S->c, e->ix, S->vv, &na) != 1 || na)))
            S->nscalar++;
    }
    if (e->kind == X_OP) {
        switch (e->op) {
        case IC_OP_EXP: case IC_OP_LOG: case IC_OP_TANH: case IC_OP_SIGMOID: case IC_OP_SILU: case IC_OP_GELU:
        case IC_OP_GELU_TANH: case IC_OP_ERF: case IC_OP_SIN: case IC_OP_COS: case IC_OP_TAN: case IC_OP_ATAN:
        case IC_OP_EXP2: case IC_OP_LOG2: case IC_OP_LOG1P: case IC_OP_EXPM1: S->ntrans++; break;
        default: break;
        }
    }
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) scan_x(S, e->a);
    if (e->b >= 0) scan_x(S, e->b);
    if (e->c >= 0) scan_x(S, e->c);
}

/* f32 pointwise kernels with a transcendental op take 8 elements a thread (two 16-byte
 * accesses issued together) instead of 4: f32 gelu is bound by instruction issue, and with
 * one load in flight per thread the loads of a warp wait behind its math. H200, same run:
 * gelu(x*w+b) f32 0.87 -> 0.91 of copy bandwidth (32 registers either way); the GPU tests
 * passed with it (459). TORCHC_GPU_VEC8=0: 4 elements. */
static bool vec8_on(const ic_config *cf) { return cf->gpu_vec8 != 0; }

/* Elements per access: 16 bytes of the smallest contiguous element type, while the
 * vectorized var's size stays a multiple. */
static int choose_vec(ic_ctx *c, ic_kernel *k, int32_t vv, int64_t vsize, bool rows) {
    if (vv < 0) return 1;
    scan S = {.c = c, .vv = vv, .min_esz = 99, .seen = ic_alloc(c, (size_t)c->nxs + 1)};
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (rows && !it->inner) continue;
        scan_x(&S, it->expr);
        if (it->store && it->kind != IT_REDUCE) scan_ix(&S, it->out_ix, it->dtype);
    }
    if (S.min_esz == 99) return 1;
    int V = 16 / S.min_esz;
    if (!rows && V == 4 && S.ntrans > 0 && S.nscalar == 0 && vec8_on(&c->cfg)) V = 8;
    if (V > VMAX) V = VMAX;
    /* stencils (TORCHC_STENCIL=0: off): pointwise kernels with many per-lane scalar loads (stencils: a depthwise conv's taps
     * read their weight columns across channels) take fewer lanes: each such load is V
     * instructions and their code, compile time and registers grew V-fold (mobilenet_v3's
     * 5x5 depthwise kernels); 2 lanes of 16-bit still make 4-byte, coalesced accesses */
    while (!rows && V > 2 && S.nscalar * V > 64 && c->cfg.stencil) V /= 2;
    return ic_gpu_vec_width(V, vsize);
}

/* Staged rows: a persistent row of T = 1024 threads holding more than 16 values each (softmax
 * of 32768 f32: 32 values, ~63 registers) fits one block per SM, so a row's loads never
 * overlap another row's reductions and exps. Staged, the row is 512 threads that keep the
 * first half of their chunks in registers and the second half of the one row load in dynamic
 * shared memory (staged_load; 64 KB for 32768 f32), with .minnctapersm 2: two blocks per SM.
 * Only for a kernel whose inner items read exactly one row-varying input, contiguously, in at
 * least two passes (softmax, layernorm; not a plain sum, which reads it once).
 * config gpu_stage: 0 off; "all": also rows of 9-16 values a thread; sm_80 and later (sm_75
 * has 64 KB a block). (Cluster rows, a persistent row as two 512-thread CTAs of a cluster whose
 * block reductions met through st.shared::cluster, were slower on the H200: softmax of 32768
 * f32 0.55 of copy bandwidth against 0.77; removed.) */
static _Thread_local int tls_stage_ok;

static int stage_mode(const ic_config *cf) {
    const char *e = cf->gpu_stage;
    if (!strcmp(e, "0")) return 0;
    return !strcmp(e, "all") ? 2 : 1;
}

/* every load under x: gathers (computed indices) make it -2, a second row-varying load or one
 * not contiguous along vv -1; else *the is the row-varying load (or stays -1) */
static void stage_walk(ic_ctx *c, ic_xid x, uint8_t *seen, int32_t vv, ic_xid *the, bool *uses) {
    if (x < 0 || seen[x] || *the < -1) return;
    seen[x] = 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_ROWVAL) return;
    if (e->kind == X_LOADF) {
        bool na;
        if (e->a >= 0) *the = -2;
        else if (ix_uses_var(c, e->ix, vv)) { /* else row-invariant: a broadcast weight */
            if ((ix_coeff(c, e->ix, vv, &na) != 1 || na) || (*the >= 0 && *the != x)) *the = -2;
            else *the = x, *uses = true;
        }
        return;
    }
    stage_walk(c, e->a, seen, vv, the, uses);
    stage_walk(c, e->b, seen, vv, the, uses);
    stage_walk(c, e->c, seen, vv, the, uses);
}

static bool stage_rows_ok(ic_ctx *c, const ic_kernel *k, int32_t vv) {
    if (vv < 0) return false;
    ic_xid the = -1;
    unsigned posmask = 0;
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (!it->inner) continue;
        bool uses = false;
        memset(seen, 0, (size_t)c->nxs + 1);
        stage_walk(c, it->expr, seen, vv, &the, &uses);
        if (it->expr2 >= 0) stage_walk(c, it->expr2, seen, vv, &the, &uses);
        if (the < -1) return false;
        if (uses) posmask |= 1u << (it->pos & 31);
    }
    return the >= 0 && __builtin_popcount(posmask) >= 2;
}

static void plan_kernel(ic_ctx *c, ic_kernel *k, plan *P, int V, int nsm, int S, int pass, const int *slot,
                        bool online) {
    memset(P, 0, sizeof *P);
    P->unroll = UNROLL;
    P->V = V;
    P->v2 = V2_DEFAULT;
    bool staged = false;
    if (!k->has_red) {
        P->mode = P_POINTWISE;
        int64_t N = 1;
        for (int i = 0; i < k->nouter; i++) N *= k->osize[i];
        for (int i = 0; i < k->ninner; i++) N *= k->isize[i];
        P->vv = k->ninner ? k->ivar[k->ninner - 1] : -1;
        P->G = N / V;
        P->Bk = 256;
        if (P->G < 256) P->Bk = (int)(pow2ceil(P->G) < 32 ? 32 : pow2ceil(P->G));
        int64_t blocks = (P->G + P->Bk - 1) / P->Bk, cap = (int64_t)nsm * 2048 / P->Bk * 2;
        P->grid = (unsigned)(blocks < cap ? blocks : cap);
        return;
    }
    P->mode = P_ROWS;
    P->rows = 1;
    for (int i = 0; i < k->nouter; i++) P->rows *= k->osize[i];
    P->n = 1;
    for (int i = 0; i < k->ninner; i++) P->n *= k->isize[i];
    P->nv = P->n / V;
    if (k->vec_outer) {
        P->vv = -1;
        P->jlow = false;
        P->R = 32;
        P->T = (int)(P->n >= 256 ? 32 : pow2ceil(P->n) < 8 ? pow2ceil(P->n) : 8);
    } else {
        P->vv = k->ninner ? k->ivar[k->ninner - 1] : -1;
        P->jlow = true;
        if (P->nv <= 1024) {
            /* the T (<= 256, <= 4 chunks) wasting the fewest thread slots, larger on ties */
            P->T = (int)pow2ceil(P->nv);
            if (P->nv > 32) {
                int64_t best = -1;
                bool small = (P->v2 & V2_ROWS) && V > 4; /* 16-bit rows: the smaller T on ties */
                for (int t = 32; t <= 256; t *= 2) {
                    int64_t ch = (P->nv + t - 1) / t, waste = ch * t - P->nv;
                    if (ch <= 4 && (best < 0 || waste < best || (waste == best && !small))) best = waste, P->T = t;
                }
            }
            P->R = 256 / P->T;
            int64_t rr = pow2ceil(P->rows);
            if (P->R > rr) P->R = (int)rr;
            if (P->R * P->T < 32) P->R = 32 / P->T; /* whole warps: shfl.sync uses a full mask */
        } else if (P->nv <= 8 * 1024 && (P->nv + 1023) / 1024 * V <= 32) {
            P->T = 1024; /* persistent: up to 32 values per thread stay in registers */
            P->R = 1;
            int64_t vals = (P->nv + 1023) / 1024 * V, sm = stage_mode(&c->cfg);
            if (S <= 1 && sm && vals > (sm == 2 ? 8 : 16) && tls_stage_ok &&
                stage_rows_ok(c, k, P->vv)) {
                staged = true;
                P->T = 512;
            }
        } else {
            P->T = 512;
            P->R = 1;
        }
    }
    if (S > 1) {
        P->T = SPLIT_T;
        P->R = 1;
        P->jlow = true;
    }
    P->logT = ilog2(P->T);
    P->logR = ilog2(P->R);
    P->Bk = P->T * P->R;
    P->C = (P->nv + P->T - 1) / P->T;
    char msg[160];
    if (ic_gpu_row_map(&P->map, V, P->T, P->R, P->jlow, P->C, msg, sizeof msg))
        ic_fail(c, IC_EINTERNAL, "GPU plan: %s", msg);
    if (P->map.vec != V) ic_fail(c, IC_EINTERNAL, "GPU plan: layout gives %d elements per access, not %d", P->map.vec, V);
    P->persistent = P->C <= 4 || (P->T == 1024 && P->C <= 8 && P->C * V <= 32);
    if (staged && S <= 1) P->persistent = true;
    if ((P->v2 & V2_ROWS) && S <= 1) {
        P->all_rows = P->rows % P->R == 0;
        P->all_cols = P->nv % P->T == 0 && (P->persistent || P->C % UNROLL == 0);
    }
    if (staged && S <= 1) {
        /* just under half in registers: with the split exp, 8 of 16 chunks of f32 softmax
         * spilled 8 bytes at 64 registers (7 did not); ragged rows' bounds tests one more */
        P->creg = (int)((P->C - 1) / 2) - (P->all_cols ? 0 : 1);
        if (P->creg < 1) P->creg = 1;
        P->dsmem = (unsigned)((P->C - P->creg) * P->T * 16);
        P->minctasm = 2;
    }
    int64_t blocks = (P->rows + P->R - 1) / P->R;
    P->grid = (unsigned)blocks;
    if (S > 1) {
        P->S = P->Sg = S;
        bool red = false; /* does this launch make partials? */
        for (int j = 0; j < k->nitems; j++) red |= k->items[j].kind == IT_REDUCE && k->items[j].pos == pass;
        if (pass >= 0 && !red && !online) {
            P->Sg = (int)(S > P->C ? P->C : S);
        }
        P->persistent = false;
        P->unroll = UNROLL;
        if (online && P->unroll * V > 16) P->unroll = 16 / V > 1 ? 16 / V : 1; /* 16 values an iteration */
        int64_t cs = (P->C + P->Sg - 1) / P->Sg;
        if (cs < P->unroll) P->unroll = (int)cs; /* one iteration of fewer chunks */
        P->Cs = (cs + P->unroll - 1) / P->unroll * P->unroll;
        P->grid = (unsigned)(pass >= 0 ? P->rows * P->Sg : P->rows);
        /* a partial pass of more than 3 blocks per SM: 4 resident (32 registers), so that the
         * default split (16 per SM) runs in full waves */
        if (pass >= 0 && P->grid > 3 * (unsigned)nsm) P->minctasm = 2048 / P->T;
        P->online = online;
        if (online && P->minctasm) P->minctasm = 1024 / P->T > 1 ? 1024 / P->T : 1; /* 64 registers */
        P->pass = pass;
        P->slot = slot;
    }
}

/* (Split rows in one launch, the last block of each row to finish doing the combining
 * launch's work through per-row counters, took 19.1-19.2 us of device time for x.sum() of
 * 64 MB on the H200 against 17.6-17.7 us as two launches, the combining one overlapped by
 * programmatic dependent launch: removed.) */

/* Blocks per row for few huge rows (x.sum(), softmax of one long row): enough blocks to
 * fill the device, each with a few unrolled iterations. 0: no split. A stored row value
 * between passes would be read across blocks: such kernels stay unsplit. */
static int choose_split(ic_kernel *k, int nsm, int V, bool online) {
    if (!k->has_red || k->vec_outer) return 0;
    int64_t rows = 1, n = 1;
    for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
    for (int i = 0; i < k->ninner; i++) n *= k->isize[i];
    if (rows >= nsm || rows < 1) return 0;
    for (int j = 0; j < k->nitems; j++)
        if (k->items[j].pos % 2 == 0 && k->items[j].store && k->items[j].pos != k->npos - 1) return 0;
    int64_t chunks = (n / V + SPLIT_T - 1) / SPLIT_T; /* the vector variant's */
    /* at least one unrolled iteration a part, and no part without chunks (the cap used to
     * round down: 2 rows of 4M f32 got 488 parts of 8 chunks a row, half of them empty) */
    int64_t per = UNROLL;
    int64_t s = ((int64_t)(online ? ONLINE_BLOCKS_PER_SM : SPLIT_BLOCKS_PER_SM) * nsm + rows - 1) / rows;
    if (s > (chunks + per - 1) / per) s = (chunks + per - 1) / per;
    if (s > SPLIT_PMAX) s = SPLIT_PMAX;
    return s >= 2 ? (int)s : 0;
}

/* Online split rows (TORCHC_GPU_ONLINE=0 off; in the key): a split row kernel whose pass p
 * reduces A and whose pass p + 2 reduces B of
 *   softmax / log_softmax:  A = max(x),  B = sum(exp(x - A))
 *   layer_norm / var:       A = mean(x), B = mean or sum of (x - A)^2
 * (x the same expression, f32 values) makes both partials in A's launch (emit_online) and
 * combines B with each part's A (online_combine): one read of the row fewer. B must be alone
 * in its pass, with nothing between the two. */
static bool online_on(const ic_config *cf) { return cf->gpu_online != 0; }

/* the shift of B = sum exp(x - s): A itself, or logsumexp's where(isinf(A), 0, A) */
static bool online_shift(ic_ctx *c, ic_xid x, int a, bool softmax) {
    const ic_x *e = &c->xs[x];
    if (e->kind == X_ROWVAL) return e->a == a;
    if (!softmax || e->kind != X_OP || e->op != IC_OP_WHERE || e->a < 0 || e->b < 0 || e->c < 0) return false;
    const ic_x *cond = &c->xs[e->a], *t = &c->xs[e->b];
    return cond->kind == X_OP && cond->op == IC_OP_ISINF && cond->a >= 0 && c->xs[cond->a].kind == X_ROWVAL &&
           c->xs[cond->a].a == a && t->kind == X_CONST && isfinite(t->cval) && c->xs[e->c].kind == X_ROWVAL &&
           c->xs[e->c].a == a;
}

static int online_pair(ic_ctx *c, const ic_kernel *k, int *ja, int *jb, ic_xid *shift) {
    if (!online_on(&c->cfg)) return ON_NONE;
    for (int b = 0; b < k->nitems; b++) {
        const ic_item *ib = &k->items[b];
        if (ib->kind != IT_REDUCE || ib->acc != IC_F32 || ib->dtype != IC_F32 || ib->expr < 0) continue;
        const ic_x *e = &c->xs[ib->expr];
        int kind = ON_NONE;
        if (e->kind == X_OP && e->dtype == IC_F32 && ib->red_op == IC_OP_SUM && e->op == IC_OP_EXP) kind = ON_SOFTMAX;
        if (e->kind == X_OP && e->dtype == IC_F32 && (ib->red_op == IC_OP_SUM || ib->red_op == IC_OP_MEAN) &&
            e->op == IC_OP_MUL && e->a == e->b)
            kind = ON_VAR;
        if (!kind || e->a < 0) continue;
        const ic_x *d = &c->xs[e->a];
        if (d->kind != X_OP || d->op != IC_OP_SUB || d->dtype != IC_F32 || d->a < 0 || d->b < 0) continue;
        const ic_x *r = &c->xs[d->b];
        if (r->kind == X_OP && r->op == IC_OP_WHERE && r->c >= 0) r = &c->xs[r->c]; /* logsumexp */
        if (r->kind != X_ROWVAL || r->a < 0 || r->a >= k->nitems) continue;
        if (!online_shift(c, d->b, r->a, kind == ON_SOFTMAX)) continue;
        const ic_item *ia = &k->items[r->a];
        if (ia->kind != IT_REDUCE || ia->expr != d->a || ia->acc != IC_F32 || ia->dtype != IC_F32 ||
            ia->pos + 2 != ib->pos || ia->red_op != (kind == ON_SOFTMAX ? IC_OP_AMAX : IC_OP_MEAN))
            continue;
        bool alone = true;
        for (int j = 0; j < k->nitems; j++)
            if (j != b && (k->items[j].pos == ib->pos || k->items[j].pos == ia->pos + 1)) alone = false;
        if (!alone) continue;
        *ja = r->a;
        *jb = b;
        *shift = d->b;
        return kind;
    }
    return ON_NONE;
}

static void collect_loads(ic_ctx *c, ic_xid x, uint8_t *seen, ic_xid *out, int *n, int cap) {
    if (x < 0 || seen[x]) return;
    seen[x] = 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && e->a < 0 && *n < cap) out[(*n)++] = x;
    if (e->kind == X_ROWVAL) return;
    collect_loads(c, e->a, seen, out, n, cap);
    collect_loads(c, e->b, seen, out, n, cap);
    collect_loads(c, e->c, seen, out, n, cap);
}

/* A pointwise kernel stored contiguously along its last var vv that loads an input with a
 * stride along vv but contiguously along another var u (x.t() + y): a transpose tile.
 * On by default since it ran on the H200 (test_gpu with tiles: 76 passed; x.T + y f32 went
 * from 0.30 to 0.98 of copy bandwidth); TORCHC_GPU_TILE=0 turns it off. */
static bool choose_tile(ic_ctx *c, ic_kernel *k, plan *P) {
    bool on = c->cfg.gpu_tile != 0;
    if (!on || k->has_red || k->ninner < 1) return false;
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS];
    int nv = 0;
    for (int i = 0; i < k->nouter; i++) vars[nv] = k->ovar[i], sizes[nv++] = k->osize[i];
    for (int i = 0; i < k->ninner; i++) vars[nv] = k->ivar[i], sizes[nv++] = k->isize[i];
    int32_t vv = vars[nv - 1];
    int64_t sv = sizes[nv - 1];
    if (sv < 32) return false;
    bool na;
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    ic_xid loads[64];
    int nl = 0;
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (!it->store) continue;
        if (ix_coeff(c, it->out_ix, vv, &na) != 1 || na) return false;
        collect_loads(c, it->expr, seen, loads, &nl, 64);
    }
    if (nl >= 64) return false;
    memset(P, 0, sizeof *P);
    int32_t u = -1;
    int64_t su = 0;
    for (int l = 0; l < nl; l++) {
        const ic_x *e = &c->xs[loads[l]];
        int64_t cv = ix_coeff(c, e->ix, vv, &na);
        if (na || cv == 0 || cv == 1) continue; /* contiguous or broadcast along vv */
        int w = -1;
        for (int d = 0; d < nv - 1 && w < 0; d++) {
            bool na2;
            if (ix_coeff(c, e->ix, vars[d], &na2) == 1 && !na2) w = d;
        }
        if (w < 0) continue;
        if (u >= 0 && vars[w] != u) return false;
        u = vars[w];
        su = sizes[w];
        int esz = (int)ic_dtype_size(e->dtype);
        if (P->ntx == 4 || (P->ntx && esz != P->tesz)) return false;
        P->tesz = esz;
        P->tx[P->ntx++] = loads[l];
    }
    if (!P->ntx || su < 32) return false;
    char msg[160];
    if (ic_gpu_tile_map(&P->tile, 8 * P->tesz, msg, sizeof msg)) return false;
    P->mode = P_TILE;
    P->v2 = V2_DEFAULT;
    P->tw = 1;
    P->V = 1;
    P->Bk = 256;
    P->vv = vv;
    P->tu = u;
    P->su = su;
    P->sv = sv;
    P->ntu = (su + 31) / 32;
    P->ntv = (sv + 31) / 32;
    int64_t nob = 1, N = 1;
    for (int d = 0; d < nv; d++) {
        N *= sizes[d];
        if (vars[d] == u || vars[d] == vv) continue;
        P->obv[P->nob] = vars[d];
        P->obs[P->nob++] = sizes[d];
        nob *= sizes[d];
    }
    P->G = N;
    int64_t grid = P->ntu * P->ntv * nob;
    if (grid > 0x7FFFFFFF) return false;
    P->grid = (unsigned)grid;
    return true;
}

/* V2 tile: a 16-bit transpose as 64 x 64 tiles of 32-bit words (emit_tile2), planned from
 * the 32 x 32 one (T), which stays the fallback variant for unaligned base pointers. Needs
 * even su and sv, and transposed loads that are in-bounds pairs along u: coefficient 1,
 * affine, every other term and the offset even (then an even u is a 4-byte aligned word). */
static bool choose_tile2(ic_ctx *c, ic_kernel *k, const plan *T, plan *P) {
    (void)k;
    if (!(T->v2 & V2_TILE) || T->tesz != 2 || T->su % 2 || T->sv % 2) return false;
    for (int q = 0; q < T->ntx; q++) {
        const ic_x *e = &c->xs[T->tx[q]];
        bool na;
        if (ix_coeff(c, e->ix, T->tu, &na) != 1 || na) return false;
        const ix_sum sm = c->sums[e->ix];
        if (sm.off % 2) return false;
        for (int i = 0; i < sm.n; i++) {
            ix_term tm = c->terms[sm.first + i];
            const ix_atom *at = &c->atoms[tm.atom];
            if (at->kind == IX_VAR && at->var == T->tu) continue;
            if (tm.coeff % 2) return false;
        }
        int64_t lo, hi;
        ix_range(c, e->ix, &lo, &hi);
        const ic_buffer *Bf = &c->bufs[e->buf];
        if (lo < 0 || hi >= Bf->span || Bf->kind == 3) return false;
    }
    *P = *T;
    char msg[160];
    if (ic_gpu_tile2_map(&P->tile, msg, sizeof msg)) return false;
    P->tw = 2;
    P->tfull = P->su % 64 == 0 && P->sv % 64 == 0;
    P->V = 2;
    P->ntu = (P->su + 63) / 64;
    P->ntv = (P->sv + 63) / 64;
    int64_t nob = 1;
    for (int d = 0; d < P->nob; d++) nob *= P->obs[d];
    int64_t grid = P->ntu * P->ntv * nob;
    if (grid > 0x7FFFFFFF) return false;
    P->grid = (unsigned)grid;
    return true;
}

/* i32 index math when every offset and counter stays far below 2^31 */
static bool fits_i32(ic_ctx *c, ic_kernel *k, const plan *P) {
    const int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 25);
    int64_t total = P->mode != P_ROWS ? P->G * P->V : P->rows * ((P->C + 8) * P->T + 1) * P->V;
    if (total >= lim || P->rows + P->R >= lim) return false;
    int64_t rows = 1;
    for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
    for (int b = 0; b < c->nbufs; b++) {
        if (c->bufs[b].span >= lim) return false;
        if (c->bufs[b].kind == 3 && rows * c->bufs[b].span * (int64_t)ic_dtype_size(c->bufs[b].dtype) >= lim)
            return false;
    }
    return true;
}

/* ---- one kernel variant ----------------------------------------------------------------------- */
static void mark_bufs(ic_ctx *c, ic_xid x, int *used, uint8_t *seen) {
    if (seen[x]) return;
    seen[x] = 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF) used[e->buf] |= 1;
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) mark_bufs(c, e->a, used, seen);
    if (e->b >= 0) mark_bufs(c, e->b, used, seen);
    if (e->c >= 0) mark_bufs(c, e->c, used, seen);
}

static void order_loads(ic_ctx *c, ic_xid x, uint8_t *seen, const int *used, bool *placed, int *ub, int *nu) {
    if (seen[x]) return;
    seen[x] = 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && used[e->buf] && !placed[e->buf]) placed[e->buf] = true, ub[(*nu)++] = e->buf;
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) order_loads(c, e->a, seen, used, placed, ub, nu);
    if (e->b >= 0) order_loads(c, e->b, seen, used, placed, ub, nu);
    if (e->c >= 0) order_loads(c, e->c, seen, used, placed, ub, nu);
}

/* The kernel parameters: the buffers marked in `used`, in the order the code first meets
 * them (the n0 of `first`, then each item's loads in expression order and its store, the
 * rest by index), not by buffer number: a repeated layer's kernel then has its parameters in
 * the same order as the first layer's and is the same function (kbegin/kend). */
static int param_order(ic_ctx *c, const ic_kernel *k, bool stores_only, const int *used, const int *first, int n0,
                       int *ub) {
    bool *placed = ic_alloc(c, (size_t)c->nbufs + 1);
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    int nu = 0;
    for (int i = 0; i < n0; i++)
        if (first[i] >= 0 && used[first[i]] && !placed[first[i]]) placed[first[i]] = true, ub[nu++] = first[i];
    for (int j = 0; k && j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (stores_only && !it->store) continue;
        order_loads(c, it->expr, seen, used, placed, ub, &nu);
        if (it->store && used[it->buf] && !placed[it->buf]) placed[it->buf] = true, ub[nu++] = it->buf;
    }
    for (int b = 0; b < c->nbufs; b++)
        if (used[b] && !placed[b]) ub[nu++] = b;
    return nu;
}

static void add_annotation(gg *g, LLVMValueRef fn, const char *key, int v) {
    LLVMValueRef md[3] = {fn, LLVMMDStringInContext(g->cg.ctx, key, (unsigned)strlen(key)),
                          LLVMConstInt(g->cg.i32, (unsigned)v, 0)};
    LLVMAddNamedMetadataOperand(g->cg.mod, "nvvm.annotations", LLVMMDNodeInContext(g->cg.ctx, md, 3));
}

/* ---- values that only feed half-precision results ------------------------------------------ *
 * A value computed in f32 whose every use ends, through products and quotients only, in a
 * rounding to f16/bf16 needs no f32 accuracy: a relative error of a few 1e-6 stays far below
 * the half type's 2^-9 / 2^-12 (products and quotients add relative errors; a sum of
 * exponentials, all positive, keeps the largest). Such values take the fast forms: exp by
 * one ex2.approx, division by div.full / rcp.approx. bf16 softmax computed in f32 (as eager
 * does: exp(x - max) / sum, rounded once) is bound by instruction issue, and its f32 exp was
 * most of the instructions. need[x] = 1 unless x is such a value. Rules (a monotone fixpoint
 * from need = 0):
 *   a stored value, an index, an argmax/argmin operand, the operand of any op other than
 *   mul/div/cast-to-half: needed;
 *   mul/div: operands needed if the product is;
 *   cast to f16/bf16: its operand is not needed through it;
 *   a row sum (or one stored as half) of an exp: the exp is needed if the row value is.
 * config gpu_lowp=0 (TORCHC_GPU_LOWP=0) keeps every value at f32 accuracy. */
static bool lowp_on(const ic_config *cf) { return cf->gpu_lowp != 0; }

static void lowp_reach(ic_ctx *c, ic_xid x, uint8_t *in) {
    if (x < 0 || in[x]) return;
    in[x] = 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_ROWVAL || e->kind == X_CONST || e->kind == X_IXVAL) return;
    lowp_reach(c, e->a, in);
    if (e->kind == X_OP) {
        lowp_reach(c, e->b, in);
        lowp_reach(c, e->c, in);
    }
}

static bool lowp_mark(uint8_t *need, ic_xid x) {
    if (x < 0 || need[x]) return false;
    need[x] = 1;
    return true;
}

static uint8_t *lowp_need(gg *g, const ic_kernel *k) {
    ic_ctx *c = g->c;
    if (!lowp_on(&g->c->cfg) || !g->v2) return NULL;
    uint8_t *in = ic_alloc(c, (size_t)c->nxs + 1), *need = ic_alloc(c, (size_t)c->nxs + 1);
    uint8_t *rowneed = ic_alloc(c, (size_t)k->nitems + 1);
    bool any = false;
    for (int j = 0; j < k->nitems; j++) {
        lowp_reach(c, k->items[j].expr, in);
        lowp_reach(c, k->items[j].expr2, in);
    }
    for (ic_xid x = 0; x < c->nxs; x++) {
        const ic_x *e = &c->xs[x];
        if (in[x] && e->kind == X_OP && e->dtype == IC_F32 && (e->op == IC_OP_EXP || e->op == IC_OP_DIV)) any = true;
    }
    if (!any) return NULL;
    for (bool changed = true; changed;) {
        changed = false;
        for (int j = 0; j < k->nitems; j++) {
            const ic_item *it = &k->items[j];
            const ic_x *e = &c->xs[it->expr];
            changed |= lowp_mark(need, it->expr2);
            if (it->kind != IT_REDUCE) {
                if (it->store) changed |= lowp_mark(need, it->expr);
                continue;
            }
            bool sum_exp = it->red_op == IC_OP_SUM && e->kind == X_OP && e->op == IC_OP_EXP && e->dtype == IC_F32;
            if (!sum_exp || rowneed[j] || (it->store && !is_half(it->dtype))) changed |= lowp_mark(need, it->expr);
        }
        for (ic_xid x = 0; x < c->nxs; x++) {
            if (!in[x]) continue;
            const ic_x *e = &c->xs[x];
            switch (e->kind) {
            case X_ROWVAL:
                if (need[x] && !rowneed[e->a]) rowneed[e->a] = 1, changed = true;
                break;
            case X_CAST:
                if (!is_half(e->dtype)) changed |= lowp_mark(need, e->a);
                break;
            case X_OP:
                if (need[x] || (e->op != IC_OP_MUL && e->op != IC_OP_DIV)) {
                    changed |= lowp_mark(need, e->a);
                    changed |= lowp_mark(need, e->b);
                    changed |= lowp_mark(need, e->c);
                }
                break;
            case X_LOADF: changed |= lowp_mark(need, e->a); break;
            default: break;
            }
        }
    }
    return need;
}

static void gen_variant(gg *g, ic_kernel *k, const plan *P, ic_gvariant *out, const char *name) {
    ic_ctx *c = g->c;
    int *used = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    for (int j = 0; j < k->nitems; j++) {
        mark_bufs(c, k->items[j].expr, used, seen);
        if (k->items[j].store) used[k->items[j].buf] |= 2;
    }
    int *ub = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    int nu = param_order(c, k, false, used, NULL, 0, ub);
    LLVMTypeRef *ps = ic_alloc(c, (size_t)(nu + 3) * sizeof(LLVMTypeRef));
    for (int i = 0; i < nu + 2; i++) ps[i] = g->gptr;
    int np = nu + (P->S > 1); /* split rows: the partials last */
    LLVMValueRef fn = LLVMAddFunction(g->cg.mod, name, LLVMFunctionType(g->cg.vd, ps, (unsigned)np, 0));
    g->part = P->S > 1 ? LLVMGetParam(fn, (unsigned)nu) : NULL;
    g->fn = g->cg.fn = fn;
    unsigned kna = LLVMGetEnumAttributeKindForName("noalias", 7);
    unsigned kro = LLVMGetEnumAttributeKindForName("readonly", 8);
    unsigned kwo = LLVMGetEnumAttributeKindForName("writeonly", 9);
    unsigned knu = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->cg.ctx, knu, 0));
    memset(g->written, 0, (size_t)c->nbufs * sizeof(bool));
    memset(g->buf_param, 0, (size_t)c->nbufs * sizeof(LLVMValueRef));
    memset(g->align, 0, (size_t)c->nbufs * sizeof(int));
    for (int i = 0; i < nu; i++) {
        int b = ub[i];
        g->buf_ptr[b] = g->buf_param[b] = LLVMGetParam(fn, (unsigned)i);
        g->written[b] = (used[b] & 2) != 0;
        LLVMAddAttributeAtIndex(fn, (unsigned)(1 + i), LLVMCreateEnumAttribute(g->cg.ctx, kna, 0));
        if (used[b] == 1) LLVMAddAttributeAtIndex(fn, (unsigned)(1 + i), LLVMCreateEnumAttribute(g->cg.ctx, kro, 0));
        if (used[b] == 2) LLVMAddAttributeAtIndex(fn, (unsigned)(1 + i), LLVMCreateEnumAttribute(g->cg.ctx, kwo, 0));
    }
    add_annotation(g, fn, "kernel", 1);
    add_annotation(g, fn, "maxntidx", P->Bk);
    g->dyn = NULL;
    g->stage_x = -1;
    if (P->minctasm) add_annotation(g, fn, "minctasm", P->minctasm);
    if (P->dsmem) { /* staged rows: two blocks per SM (64 registers at most for 512 threads) */
        char sn[64];
        snprintf(sn, sizeof sn, "%s_dyn", name);
        g->dyn = LLVMAddGlobalInAddressSpace(g->cg.mod, LLVMArrayType(g->cg.i8, 0), sn, 3);
        LLVMSetLinkage(g->dyn, LLVMExternalLinkage);
        LLVMSetAlignment(g->dyn, 16);
    }
    g->k = k;
    g->P = P;
    g->v2 = P->v2;
    g->need = lowp_need(g, k);
    g->smem = NULL;
    g->vgen++; /* invalidates the persistent loads of the previous variant */
    if (P->mode == P_ROWS && P->logT + (P->jlow ? 0 : P->logR) > 5) {
        char sn[64];
        snprintf(sn, sizeof sn, "%s_smem", name);
        LLVMTypeRef at = LLVMArrayType(g->cg.i64, 2 * (unsigned)P->Bk); /* values, arg indices */
        g->smem = LLVMAddGlobalInAddressSpace(g->cg.mod, at, sn, 3);
        LLVMSetInitializer(g->smem, LLVMGetUndef(at));
        LLVMSetLinkage(g->smem, LLVMInternalLinkage);
        LLVMSetAlignment(g->smem, 16);
    }
    if (P->mode == P_TILE) { /* the transposed loads' tiles, 1024 elements each (tw 2: 4096) */
        char sn[64];
        snprintf(sn, sizeof sn, "%s_tile", name);
        LLVMTypeRef at = LLVMArrayType(g->cg.i8, (unsigned)(P->ntx * 1024 * P->tesz * P->tw * P->tw));
        g->smem = LLVMAddGlobalInAddressSpace(g->cg.mod, at, sn, 3);
        LLVMSetInitializer(g->smem, LLVMGetUndef(at));
        LLVMSetLinkage(g->smem, LLVMInternalLinkage);
        LLVMSetAlignment(g->smem, 16);
    }
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->cg.ctx, fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->cg.ctx, fn, "start");
    LLVMPositionBuilderAtEnd(B, start);
    pdl_prologue(g);
    g->tid = sreg(g, "llvm.nvvm.read.ptx.sreg.tid.x");
    if (P->mode == P_POINTWISE) emit_pointwise(g, k);
    else if (P->mode == P_TILE && P->tw == 2) emit_tile2(g, k);
    else if (P->mode == P_TILE) emit_tile(g, k);
    else emit_rows(g, k);
    LLVMBuildRetVoid(B);
    LLVMPositionBuilderAtEnd(B, entry);
    LLVMBuildBr(B, start);

    snprintf(out->name, sizeof out->name, "%s", name);
    out->grid = P->grid;
    out->block = (unsigned)P->Bk;
    out->part_off = -1;
    out->ctr = 0;
    out->cl = 1;
    out->dsmem = P->dsmem;
    out->vec = P->V;
    out->nparams = nu;
    out->params = malloc((size_t)(nu + 1) * sizeof(int));
    out->align_buf = malloc((size_t)(nu + 1) * sizeof(int));
    out->align_bytes = malloc((size_t)(nu + 1) * sizeof(int));
    if (!out->params || !out->align_buf || !out->align_bytes) ic_fail(c, IC_ENOMEM, "out of memory");
    for (int i = 0; i < nu; i++) {
        out->params[i] = ub[i];
        if (g->align[ub[i]] > (int)ic_dtype_size(c->bufs[ub[i]].dtype)) {
            out->align_buf[out->nalign] = ub[i];
            out->align_bytes[out->nalign++] = g->align[ub[i]];
        }
    }
}

static bool kernel_empty(ic_kernel *k) {
    for (int i = 0; i < k->nouter; i++)
        if (k->osize[i] == 0) return true;
    if (!k->has_red)
        for (int i = 0; i < k->ninner; i++)
            if (k->isize[i] == 0) return true;
    return false;
}


/* ---- the GEMM template (codegen/gpu_gemm.c) ------------------------------------------------- *
 * An extern matmul on f16/bf16 may run as our own tensor-core kernel instead of the ATen call,
 * with the next kernel of the graph fused into its epilogue when that kernel is pointwise over
 * the product's elements (bias, activation, residual, cast: any pointwise expression, evaluated
 * by val() on the rounded accumulator value). TORCHC_GEMM=extern|template|auto (default auto):
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

static void xs_walk(ic_ctx *c, ic_xid x, uint8_t *seen, ic_xid *out, int *n, int cap, int buf) {
    if (x < 0 || seen[x]) return;
    seen[x] = 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && e->buf == buf) {
        if (*n < cap) out[*n] = x;
        (*n)++;
    }
    if (e->kind == X_ROWVAL) return;
    xs_walk(c, e->a, seen, out, n, cap, buf);
    xs_walk(c, e->b, seen, out, n, cap, buf);
    xs_walk(c, e->c, seen, out, n, cap, buf);
}

/* does a kernel other than `skip`, or an extern call, read buffer b? */
static bool buf_read_elsewhere(ic_ctx *c, int b, int skip) {
    int *used = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        if (ki == skip) continue;
        if (k->is_ext) {
            const ic_node *n = &c->g->nodes[k->ext_v];
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++)
                if (c->buf_of[n->in[i]] == b) return true;
            continue;
        }
        for (int j = 0; j < k->nitems; j++) {
            mark_bufs(c, k->items[j].expr, used, seen);
            if (k->items[j].expr2 >= 0) mark_bufs(c, k->items[j].expr2, used, seen);
        }
    }
    return used[b] != 0;
}

static bool bufs_overlap(ic_ctx *c, int a, int b) {
    if (a < 0 || b < 0) return false;
    if (a == b) return true;
    const ic_buffer *x = &c->bufs[a], *y = &c->bufs[b];
    if (x->kind != 2 || y->kind != 2) return false;
    return x->offset < y->offset + y->nbytes && y->offset < x->offset + x->nbytes;
}

typedef struct gemm_epi_ctx {
    gg *g;
    ic_kernel *k;
    int nv;
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS];
} gemm_epi_ctx;

/* The pointwise kernel right after GEMM kernel ki when it reads the product only at its own
 * element (flat index == the product's), writes nothing the GEMM reads, and is not a row
 * kernel: fused into the epilogue. *store_out: the product itself is still needed. */
static ic_kernel *gemm_consumer(gg *g, int ki, const ic_gemm *G, bool *store_out, int *kj_out, gemm_epi_ctx *E) {
    ic_ctx *c = g->c;
    *store_out = true;
    int kj = ki + 1;
    while (kj < c->nkernels && !c->kernels[kj].is_ext && kernel_empty(&c->kernels[kj])) kj++;
    if (kj >= c->nkernels) return NULL;
    ic_kernel *k = &c->kernels[kj];
    if (k->is_ext || k->has_red) return NULL;
    E->nv = 0;
    int64_t total = 1;
    for (int i = 0; i < k->nouter; i++) E->vars[E->nv] = k->ovar[i], E->sizes[E->nv++] = k->osize[i], total *= k->osize[i];
    for (int i = 0; i < k->ninner; i++) E->vars[E->nv] = k->ivar[i], E->sizes[E->nv++] = k->isize[i], total *= k->isize[i];
    if (total != G->batch * G->M * G->N) return NULL;
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    ic_xid loads[64];
    int nl = 0;
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (!it->store) continue;
        xs_walk(c, it->expr, seen, loads, &nl, 64, G->out_buf);
        for (int x = 0; x < 5; x++) {
            int o = x == 0 ? G->a_buf : x == 1 ? G->b_buf : x == 2 ? G->bias_buf : x == 3 ? G->out_buf : -1;
            if (bufs_overlap(c, it->buf, o)) return NULL;
        }
    }
    if (nl == 0 || nl > 64) return NULL;
    for (int l = 0; l < nl; l++) { /* every read of the product at flat index e */
        const ic_x *e = &c->xs[loads[l]];
        if (e->a >= 0) return NULL;
        const ix_sum s = c->sums[e->ix];
        int nterms = 0;
        int64_t coef = 1;
        if (s.off != 0) return NULL;
        for (int i = E->nv - 1; i >= 0; i--) {
            if (E->sizes[i] > 1) {
                bool na;
                if (ix_coeff(c, e->ix, E->vars[i], &na) != coef || na) return NULL;
                nterms++;
            }
            coef *= E->sizes[i];
        }
        if (s.n != nterms) return NULL;
    }
    *store_out = c->bufs[G->out_buf].kind != 2 || buf_read_elsewhere(c, G->out_buf, kj);
    *kj_out = kj;
    E->k = k;
    return k;
}

static void gemm_epi_elem(void *p, LLVMValueRef e, LLVMValueRef ok, LLVMValueRef v) {
    gemm_epi_ctx *E = p;
    gg *g = E->g;
    LLVMValueRef ei = g->ity == g->cg.i64 ? e : LLVMBuildTrunc(B, e, g->ity, "");
    decompose(g, ei, E->vars, E->sizes, E->nv);
    g->gen++;
    g->epi_val = v;
    for (int j = 0; j < E->k->nitems; j++) {
        ic_item *it = &E->k->items[j];
        if (!it->store) continue;
        LLVMValueRef r = val(g, it->expr, 0);
        store_item(g, it, &r, 1, ok);
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

static void gemm_variant(gg *g, const ic_gemm *G, const ic_gemm_map *M, bool fast, gemm_epi_ctx *E, bool store_out,
                         ic_gvariant *out, const char *name) {
    ic_ctx *c = g->c;
    ic_kernel *cons = E ? E->k : NULL;
    g->v2 = 0; /* the epilogue's expressions as in the first generation */
    g->need = NULL;
    int *used = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs + 1);
    for (int j = 0; cons && j < cons->nitems; j++) {
        if (!cons->items[j].store) continue;
        mark_bufs(c, cons->items[j].expr, used, seen);
        used[cons->items[j].buf] |= 2;
    }
    used[G->out_buf] = store_out ? 2 : 0;
    used[G->a_buf] |= 1;
    used[G->b_buf] |= 1;
    if (G->bias_buf >= 0) used[G->bias_buf] |= 1;
    int *ub = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    const int first[4] = {G->a_buf, G->b_buf, G->bias_buf, G->out_buf};
    int nu = param_order(c, cons, true, used, first, 4, ub);
    LLVMTypeRef *ps = ic_alloc(c, (size_t)(nu + 1) * sizeof(LLVMTypeRef));
    for (int i = 0; i < nu; i++) ps[i] = g->gptr;
    LLVMValueRef fn = LLVMAddFunction(g->cg.mod, name, LLVMFunctionType(g->cg.vd, ps, (unsigned)nu, 0));
    g->fn = g->cg.fn = fn;
    unsigned knu = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->cg.ctx, knu, 0));
    memset(g->written, 0, (size_t)c->nbufs * sizeof(bool));
    memset(g->buf_param, 0, (size_t)c->nbufs * sizeof(LLVMValueRef));
    memset(g->align, 0, (size_t)c->nbufs * sizeof(int));
    for (int i = 0; i < nu; i++) {
        g->buf_ptr[ub[i]] = g->buf_param[ub[i]] = LLVMGetParam(fn, (unsigned)i);
        g->written[ub[i]] = (used[ub[i]] & 2) != 0;
    }
    add_annotation(g, fn, "kernel", 1);
    add_annotation(g, fn, "maxntidx", M->nthreads);
    plan *P = ic_alloc(c, sizeof *P); /* val() needs a plan: pointwise, one lane */
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
    const int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 25);
    bool i32 = G->batch * G->M * G->N < lim;
    for (int i = 0; i < nu && i32; i++) i32 = c->bufs[ub[i]].span < lim;
    g->ity = i32 ? g->cg.i32 : g->cg.i64;
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
typedef struct gres gres;
typedef struct gpart gpart;
static void kbegin(gg *g, gres *R, gpart *q);
static int kend(gg *g, gres *R, gpart *q, ic_gvariant *gv, bool lazy);
static void bind_part(gg *g, gpart *q);

static gpart *next_part(gg *g, gres *R);
static gpart *lazy_part(gg *g, gres *R);
static bool lazy_enabled(const gres *R);

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

static int gemm_kernel(gg *g, int ki, ic_gkernel *K, int tsm, int nsm, int mid, gres *R, int *nnew, ic_gpu *gpu,
                       int *choice_kj) {
    ic_ctx *c = g->c;
    int mode = gemm_mode(&c->cfg);
    if (mode == 0 || tsm < 80) return -1;
    ic_gemm G;
    if (ic_gemm_match(c, &c->kernels[ki], nsm, &G)) return -1;
    gemm_epi_ctx *E = ic_alloc(c, sizeof *E);
    bool store_out = true;
    int kj = -1;
    ic_kernel *cons = gemm_consumer(g, ki, &G, &store_out, &kj, E);
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
    for (int v = G.fast_ok ? 0 : 1; v < 2; v++) {
        char name[48];
        snprintf(name, sizeof name, "tc%d_k%dg%s", mid % 1000000, ki, v == 0 ? "v" : "");
        ic_gvariant *gv = &K->v[K->nvar++];
        bool lazy = v == 1 && G.fast_ok && lazy_enabled(R); /* the fallback of the aligned fast variant */
        gpart *q = lazy ? lazy_part(g, R) : next_part(g, R);
        kbegin(g, R, q);
        gemm_variant(g, &G, M, v == 0, cons ? E : NULL, store_out, gv, name);
        *nnew += !kend(g, R, q, gv, lazy);
    }
    if (choice && cons) *choice_kj = kj; /* generated as usual, the extern path's consumer */
    return cons && !choice ? kj : -1;
}

/* ---- driver ----------------------------------------------------------------------------------- */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_nvptx(void) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

/* The kernels of one graph are spread over up to GPU_MAXPARTS LLVM modules (each its own
 * context and TargetMachine), optimized, emitted and JIT-loaded by the driver in parallel
 * threads: a model's first call is bound by O3 + PTX emission + the driver's PTX JIT, all
 * linear in the kernel count. TORCHC_COMPILE_THREADS caps the threads (default: the CPUs). */
#define GPU_MAXPARTS 32

struct gpart {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTargetMachineRef tm;
    int nk;          /* kernel variants generated into it */
    size_t work;     /* their bitcode bytes: the part's share of O3 + PTX + ptxas */
    char *ptx;       /* malloc'd by the worker */
    size_t nptx;
    unsigned debug;
    char err[300];   /* worker's failure, "" when fine */
};

typedef struct gseen { /* a generated kernel: its module's canonical bitcode, its name */
    uint64_t h;
    char *text;
    size_t n;
    char name[48];
    bool lazy;   /* a lazy fallback's: only other lazy fallbacks may share it */
} gseen;

struct gres { /* LLVM objects released on every path */
    gpart p[GPU_MAXPARTS];
    int np;
    gpart lz;  /* lazy fallbacks (gpu.h ic_gpu.lazy_bc): generated, kept as bitcode */
    bool lz_on;
    ic_gpu *gpu;
    char *key; /* disk cache key (runtime/gpu_cache.c) */
    gseen *seen; /* kernels generated so far (dedupe), nseen of cap */
    int nseen, capseen;
    LLVMModuleRef tmp; /* the variant being generated (kbegin/kend), in one part's context */
};

static void gpart_free(gpart *q) {
    if (q->b) LLVMDisposeBuilder(q->b);
    if (q->mod) LLVMDisposeModule(q->mod);
    if (q->ctx) LLVMContextDispose(q->ctx);
    if (q->tm) LLVMDisposeTargetMachine(q->tm);
    free(q->ptx);
    memset(q, 0, sizeof *q);
}

static void gres_free(gres *R) {
    if (R->tmp) LLVMDisposeModule(R->tmp); /* before its context */
    for (int i = 0; i < R->np; i++) gpart_free(&R->p[i]);
    gpart_free(&R->lz);
    if (R->gpu) ic_gpu_free(R->gpu);
    free(R->key);
    for (int i = 0; i < R->nseen; i++) free(R->seen[i].text);
    free(R->seen);
    memset(R, 0, sizeof *R);
}

/* Point the generator at part q: every LLVM type and the module/builder come from its context. */
static void bind_part(gg *g, gpart *q) {
    LLVMContextRef x = q->ctx;
    g->cg.ctx = x;
    g->cg.mod = q->mod;
    g->cg.b = g->cg.ab = q->b;
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

/* The part the next kernel variant goes to: the one with the least work so far (bitcode
 * bytes), bound. Variants, not kernels, are spread: a GEMM's two variants were 43% of BERT's
 * code in one part, the critical path of the parallel O3 + ptxas. */
static gpart *next_part(gg *g, gres *R) {
    gpart *q = &R->p[0];
    for (int i = 1; i < R->np; i++)
        if (R->p[i].work < q->work) q = &R->p[i];
    bind_part(g, q);
    return q;
}

static bool lazy_enabled(const gres *R) { return R->lz_on; }

/* The part of the lazy fallbacks (gpu.h ic_gpu.lazy_bc), created on first use, bound. */
static gpart *lazy_part(gg *g, gres *R) {
    gpart *q = &R->lz;
    if (!q->ctx) {
        q->ctx = LLVMContextCreate();
        q->mod = LLVMModuleCreateWithNameInContext("torchc_gpu_lazy", q->ctx);
        q->b = LLVMCreateBuilderInContext(q->ctx);
        LLVMSetTarget(q->mod, LLVMGetTarget(R->p[0].mod));
        LLVMSetDataLayout(q->mod, LLVMGetDataLayoutStr(R->p[0].mod));
    }
    bind_part(g, q);
    return q;
}

/* A part for sm: TargetMachine, context, empty module with the NVPTX triple and layout, and
 * a builder. 0, or -1 with msg (q holds what was made: gpart_free). */
static int part_init(gpart *q, int tsm, char *msg, size_t n) {
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
    q->tm = LLVMCreateTargetMachine(target, triple, cpu, feat, LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                    LLVMCodeModelDefault);
    if (!q->tm) {
        snprintf(msg, n, "LLVM: cannot create the NVPTX TargetMachine for %s", cpu);
        return -1;
    }
    q->ctx = LLVMContextCreate();
    q->mod = LLVMModuleCreateWithNameInContext("torchc_gpu", q->ctx);
    q->b = LLVMCreateBuilderInContext(q->ctx);
    LLVMSetTarget(q->mod, triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(q->tm);
    LLVMSetModuleDataLayout(q->mod, td);
    LLVMDisposeTargetData(td);
    return 0;
}

/* Worker: verify, O3, PTX. Runs on its own thread for its own context; no longjmp here. */
static void *part_compile(void *arg) {
    gpart *q = arg;
    char *verr = NULL;
    if (LLVMVerifyModule(q->mod, LLVMReturnStatusAction, &verr)) {
        snprintf(q->err, sizeof q->err, "LLVM verifier (GPU): %s", verr ? verr : "?");
        if (q->debug & IC_DEBUG_LLVM) {
            char *s = LLVMPrintModuleToString(q->mod);
            fprintf(stderr, "%s\n", s);
            LLVMDisposeMessage(s);
        }
        LLVMDisposeMessage(verr);
        return NULL;
    }
    if (verr) LLVMDisposeMessage(verr);
    LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(q->mod, "default<O3>", q->tm, pbo);
    LLVMDisposePassBuilderOptions(pbo);
    if (err) {
        char *m = LLVMGetErrorMessage(err);
        snprintf(q->err, sizeof q->err, "LLVM passes (GPU): %s", m);
        LLVMDisposeErrorMessage(m);
        return NULL;
    }
    if (q->debug & IC_DEBUG_LLVM) {
        char *s = LLVMPrintModuleToString(q->mod);
        fprintf(stderr, "=== torchc llvm (nvptx, after O3) ===\n%s\n", s);
        LLVMDisposeMessage(s);
    }
    LLVMMemoryBufferRef mb = NULL;
    char *eerr = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(q->tm, q->mod, LLVMAssemblyFile, &eerr, &mb)) {
        snprintf(q->err, sizeof q->err, "NVPTX code generation: %s", eerr ? eerr : "?");
        LLVMDisposeMessage(eerr);
        return NULL;
    }
    q->nptx = LLVMGetBufferSize(mb);
    q->ptx = malloc(q->nptx + 1);
    if (q->ptx) {
        memcpy(q->ptx, LLVMGetBufferStart(mb), q->nptx);
        q->ptx[q->nptx] = 0;
    } else {
        snprintf(q->err, sizeof q->err, "out of memory");
    }
    LLVMDisposeMemoryBuffer(mb);
    return NULL;
}

static int compile_threads(const ic_config *cf) {
    long n = cf->compile_threads > 0 ? (long)cf->compile_threads : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > GPU_MAXPARTS ? GPU_MAXPARTS : (int)n;
}

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

/* Lazy fallbacks (gpu.h ic_gpu.lazy_bc): on unless TORCHC_GPU_LAZY=0 (every variant compiled
 * up front, as before); PTX-only compiles and PTX/LLVM dumps compile everything, except that
 * TORCHC_GPU_LAZY=probe makes a PTX-only compile take the lazy path and append the lazy
 * module's PTX (made from its bitcode by ic_gpu_lazy_ptx), for tests without a GPU. */
static bool lazy_on(const ic_config *cf, bool ptx_only) {
    const char *e = cf->gpu_lazy;
    if (ptx_only) return !strcmp(e, "probe");
    return strcmp(e, "0") != 0;
}

/* Disk cache key: everything the PTX and the launch plan depend on. malloc'd or NULL. */
static char *cache_key(ic_ctx *c, int tsm, int nsm) {
    char *text = ic_graph_to_string(c->g);
    if (!text) return NULL;
    ic_str s = {0}; /* the build of this binary is folded in by gpu_cache.c */
    char *ck = ic_config_key(&c->cfg); /* every setting that changes code (ic_config.h) */
    ic_str_printf(&s, "%s|sm=%d|nsm=%d|driver=%d|%s|LLVM %d|pdl=%d%s|autotune=%d", text, tsm, nsm, ic_cuda_driver_version(),
                  ic_version(), LLVM_VERSION_MAJOR, pdl_on(&c->cfg, tsm), ck ? ck : "|?", c->autotune);
    free(ck);
    free(text);
    if (s.oom) {
        free(s.s);
        return NULL;
    }
    return s.s;
}

/* Repeated layers give the same kernel again and again (BERT: 12 copies of most of its
 * kernels): each variant is generated into a module of its own; when that module's bitcode,
 * with the kernel's name as "K" (its shared-memory globals carry the name as a prefix), equals
 * an earlier variant's, it is dropped and the launch uses the earlier function (with its own
 * buffers, grid and block); otherwise it is linked into the part's module. The module holds
 * the function, its globals and nvvm.annotations (block size), so equal bitcode is equal
 * code (bitcode, not text: printing IR cost ~2 ms a kernel). TORCHC_GPU_DEDUPE=0 (or a PTX/LLVM debug dump) turns
 * it off: variants are generated into the part's module directly. */
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

/* Before a variant: its own module in part q's context (the generator's module until kend). */
static void kbegin(gg *g, gres *R, gpart *q) {
    if (!dedupe_on(g->c)) return;
    R->tmp = LLVMModuleCreateWithNameInContext("torchc_kernel", q->ctx);
    LLVMSetTarget(R->tmp, LLVMGetTarget(q->mod));
    LLVMSetDataLayout(R->tmp, LLVMGetDataLayoutStr(q->mod));
    g->cg.mod = R->tmp;
}

/* After a variant named gv->name: 1 when it repeats an earlier one (gv now names that one),
 * 0 when it is new (linked into q's module). lazy: q is the lazy fallbacks' part (a variant
 * compiled now never takes a lazy one's code; gv->lazy says where its code is). */
static int kend(gg *g, gres *R, gpart *q, ic_gvariant *gv, bool lazy) {
    gv->lazy = lazy;
    if (!R->tmp) { /* no dedupe: generated straight into q's module, counted as one unit */
        q->nk++;
        q->work++;
        return 0;
    }
    LLVMModuleRef m = R->tmp;
    g->cg.mod = q->mod;
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
    } else {
        free(bc);
    }
    R->tmp = NULL;
    q->nk++;
    q->work += n ? n : 1;
    if (LLVMLinkModules2(q->mod, m)) /* consumes m */
        ic_fail(g->c, IC_EINTERNAL, "LLVM: linking kernel %s into its part failed", gv->name);
    return 0;
}

/* A cache hit: plan + PTX (+ cubins) from disk, loaded; 0 when used, -1 on a miss (compile).
 * Modules whose cubin was missing or refused were compiled from PTX by ic_cuda_load: the
 * entry is put again with their new cubins, so the next process loads them as they are. */
static int from_cache(ic_ctx *c, ic_compiled *out, int dev, gres *R) {
    int64_t ws = 0;
    ic_gpu *G = ic_gcache_get(R->key, c->nbufs, &ws);
    if (!G) return -1;
    char msg[512];
    if (ws < c->ws_size || ic_cuda_load(G, dev, msg, sizeof msg)) { /* stale or unloadable: rebuild */
        ic_gpu_free(G);
        return -1;
    }
    int fresh = 0; /* cubins that did not come from the entry */
    for (int i = 0; i < G->ncubin; i++) fresh += G->cubin_len[i] > 0;
    if (fresh > G->cubin_loaded) ic_gcache_put(R->key, G, ws);
    G->device = dev;
    G->pdl = pdl_on(&c->cfg, G->sm); /* in the key */
    c->ws_size = ws;
    describe_append(out, G);
    out->gpu = G;
    return 0;
}

static void codegen(ic_ctx *c, ic_compiled *out, int dev, gres *R) {
    const double tg0 = ic_now_ms();
    int sm = 90, nsm = 132;
    bool ptx_only = ic_gpu_ptx_only(&sm) != 0;
    char msg[512];
    if (!ptx_only) {
        if (ic_cuda_device_info(dev, &sm, &nsm, msg, sizeof msg)) ic_fail(c, IC_EUNSUPPORTED, "CUDA: %s", msg);
    }
    int tsm = sm > 90 ? 90 : sm < 52 ? 52 : sm;
    tls_stage_ok = tsm >= 80; /* up to 72 + 8 KB of shared memory a block, two blocks an SM */
    if (!ptx_only && !c->debug && ic_gcache_enabled()) {
        R->key = cache_key(c, tsm, nsm);
        if (R->key && from_cache(c, out, dev, R) == 0) return;
    }
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
    for (int ki = 0; ki < c->nkernels; ki++) ngen += c->kernels[ki].is_ext || !kernel_empty(&c->kernels[ki]);
    int kpp = (int)c->cfg.kernels_per_part; /* tests set 1: every kernel its own module */
    /* PTX-only compiles (make ptx-check) keep one module unless the tests ask for parts */
    int np = ptx_only && !kpp ? 1 : compile_threads(&c->cfg);
    int per = kpp > 0 ? kpp : 4;
    if (np > (ngen + per - 1) / per) np = (ngen + per - 1) / per;
    if (np < 1) np = 1;
    R->np = np;
    for (int i = 0; i < np; i++) {
        gpart *q = &R->p[i];
        q->debug = c->debug;
        if (part_init(q, tsm, msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "%s", msg);
    }
    R->lz_on = dedupe_on(c) && lazy_on(&c->cfg, ptx_only);

    gg G = {.c = c, .gen = 1, .sm = tsm};
    gg *g = &G;
    g->cg.c = c;
    g->cg.width = 1;
    g->cg.vec_var = -1;
    g->cg.exp_fn = exp_f32_cb;
    g->cg.exp_arg = g;
    bind_part(g, &R->p[0]);

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

    ic_gpu *gpu = R->gpu = calloc(1, sizeof *gpu);
    if (!gpu) ic_fail(c, IC_ENOMEM, "out of memory");
    gpu->sm = tsm;
    gpu->pdl = pdl_on(&c->cfg, tsm);
    gpu->device = dev;
    /* row scratch: one row-local copy per row of the kernel that stores it */
    gpu->nbufs = c->nbufs;
    gpu->scratch_off = malloc(((size_t)c->nbufs + 1) * sizeof(int64_t));
    if (!gpu->scratch_off) ic_fail(c, IC_ENOMEM, "out of memory");
    for (int b = 0; b < c->nbufs; b++) gpu->scratch_off[b] = -1;
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        int64_t rows = 1;
        for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
        for (int j = 0; j < k->nitems; j++) {
            int b = k->items[j].buf;
            if (!k->items[j].store || b < 0 || c->bufs[b].kind != 3 || gpu->scratch_off[b] >= 0) continue;
            gpu->scratch_off[b] = (c->ws_size + 255) & ~(int64_t)255;
            c->ws_size = gpu->scratch_off[b] + rows * c->bufs[b].span * (int64_t)ic_dtype_size(c->bufs[b].dtype);
        }
    }
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
            next_part(g, R);
            fused = gemm_kernel(g, ki, K, tsm, nsm, mid, R, &nnew, gpu, &choice_kj); /* or our GEMM template */
            continue;
        }
        if (kernel_empty(k)) continue;
        next_part(g, R); /* bound for the planning; each variant picks its own part below */
        int32_t vv = -1;
        int64_t vsize = 1;
        if (k->ninner > 0 && !k->vec_outer) {
            vv = k->ivar[k->ninner - 1];
            vsize = k->isize[k->ninner - 1];
        }
        int V = choose_vec(c, k, vv, vsize, k->has_red);
        int nvar = V > 1 ? 2 : 1;
        plan *TP = ic_alloc(c, sizeof *TP), *TP2 = ic_alloc(c, sizeof *TP2);
        bool tile = choose_tile(c, k, TP);
        bool tile2 = tile && choose_tile2(c, k, TP, TP2); /* V2: word tile, then TP as fallback */
        if (tile) V = 1, nvar = tile2 ? 2 : 1;
        /* split rows: partial slots in extra workspace, launches per pass, then a final one */
        int on_a = -1, on_b = -1;
        ic_xid on_shift = -1;
        int on_kind = tile ? ON_NONE : online_pair(c, k, &on_a, &on_b, &on_shift);
        int S = tile ? 0 : choose_split(k, nsm, V, on_kind != ON_NONE);
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
        int passes[IC_MAX_DIMS * 8 + 2], npass = 0;
        if (S > 1) {
            int64_t rows = 1;
            for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
            part_off = (c->ws_size + 255) & ~(int64_t)255;
            c->ws_size = part_off + (int64_t)nslot * rows * S * 8;
            for (int p = 1; p < k->npos && npass < (int)(sizeof passes / sizeof passes[0]) - 1; p += 2) {
                bool any = false;
                for (int j = 0; j < k->nitems; j++) any |= k->items[j].pos == p;
                if (on_kind && p == k->items[on_b].pos) continue; /* made in A's launch */
                if (any) passes[npass++] = p;
            }
            if (nfinal) passes[npass++] = -1;
        } else {
            passes[npass++] = 0;
        }
        for (int q = 0; q < npass; q++) {
            ic_gkernel *K = &gpu->k[gpu->nkernels++];
            K->split_final = passes[q] < 0;
            for (int v = 0; v < nvar; v++) {
                plan P;
                if (tile) P = tile2 && v == 0 ? *TP2 : *TP;
                else plan_kernel(c, k, &P, v == 0 ? V : 1, nsm, S, passes[q], slot,
                                 on_kind && passes[q] == k->items[on_a].pos);
                P.on_kind = on_kind;
                P.on_a = on_a;
                P.on_b = on_b;
                P.on_shift = on_shift;
                if (P.grid == 0) continue;
                if ((int64_t)P.grid > 0x7FFFFFFF) ic_fail(c, IC_EUNSUPPORTED, "GPU grid too large");
                g->ity = fits_i32(c, k, &P) ? g->cg.i32 : g->cg.i64;
                char name[48];
                if (S > 1)
                    snprintf(name, sizeof name, "tc%d_k%d%s%d%s", mid % 1000000, ki, passes[q] >= 0 ? "p" : "f",
                             passes[q] >= 0 ? passes[q] : 0, P.V > 1 ? "v" : "");
                else
                    snprintf(name, sizeof name, "tc%d_k%d%s", mid % 1000000, ki, P.V > 1 ? "v" : "");
                ic_gvariant *gv = &K->v[K->nvar++];
                /* the scalar fallback of a vector variant that only assumes aligned bases */
                bool lazy = v == 1 && K->nvar == 2 && K->v[0].nalign > 0 && R->lz_on;
                gpart *q = lazy ? lazy_part(g, R) : next_part(g, R);
                kbegin(g, R, q);
                gen_variant(g, k, &P, gv, name);
                kend(g, R, q, gv, lazy);
                gv->part_off = part_off;
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
        bool bad = LLVMVerifyModule(R->lz.mod, LLVMReturnStatusAction, &verr);
        if (bad) snprintf(msg, sizeof msg, "%s", verr ? verr : "?");
        if (verr) LLVMDisposeMessage(verr);
        if (bad) ic_fail(c, IC_EINTERNAL, "LLVM verifier (GPU, fallbacks): %s", msg);
        LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(R->lz.mod);
        size_t n = mb ? LLVMGetBufferSize(mb) : 0;
        gpu->lazy_bc = n ? malloc(n) : NULL;
        if (gpu->lazy_bc) memcpy(gpu->lazy_bc, LLVMGetBufferStart(mb), n), gpu->lazy_n = n;
        if (mb) LLVMDisposeMemoryBuffer(mb);
        if (!gpu->lazy_bc) ic_fail(c, IC_ENOMEM, "out of memory");
        c->cg_lazy += R->lz.nk;
    }
    double tg = ic_now_ms(); /* TORCHC_DEBUG=time stages: irgen, opt (O3 + PTX, parallel), jit (driver) */
    c->t_stage[IC_T_IRGEN] += tg - tg0;
    pthread_t th[GPU_MAXPARTS];
    bool started[GPU_MAXPARTS] = {0};
    int nw = 0; /* parts with kernels (an empty module is still emitted when there are none) */
    for (int i = 0; i < np; i++)
        if (R->p[i].nk > 0 || i == 0) nw = i + 1;
    for (int i = 1; i < nw; i++) started[i] = pthread_create(&th[i], NULL, part_compile, &R->p[i]) == 0;
    part_compile(&R->p[0]);
    for (int i = 1; i < nw; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else part_compile(&R->p[i]);
    }
    for (int i = 0; i < nw; i++)
        if (R->p[i].err[0]) ic_fail(c, strncmp(R->p[i].err, "out of memory", 13) ? IC_EINTERNAL : IC_ENOMEM, "%s", R->p[i].err);
    size_t total = 1;
    for (int i = 0; i < nw; i++) total += R->p[i].nptx + sizeof IC_PTX_SEP;
    gpu->ptx = malloc(total);
    if (!gpu->ptx) ic_fail(c, IC_ENOMEM, "out of memory");
    size_t at = 0;
    for (int i = 0; i < nw; i++) {
        if (i) {
            memcpy(gpu->ptx + at, IC_PTX_SEP, sizeof IC_PTX_SEP - 1);
            at += sizeof IC_PTX_SEP - 1;
        }
        memcpy(gpu->ptx + at, R->p[i].ptx, R->p[i].nptx);
        at += R->p[i].nptx;
    }
    gpu->ptx[at] = 0;
    if (ptx_only && gpu->lazy_bc) { /* TORCHC_GPU_LAZY=probe: the lazy module's PTX as the last module */
        char *lp = ic_gpu_lazy_ptx(gpu->lazy_bc, gpu->lazy_n, tsm, msg, sizeof msg);
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
    c->t_stage[IC_T_OPT] += ic_now_ms() - tg;
    if (c->debug & IC_DEBUG_PTX) fprintf(stderr, "=== torchc ptx ===\n%s\n", gpu->ptx);
    c->t_stage[IC_T_EMIT] += ic_now_ms() - tg;
    tg = ic_now_ms();
    if (!ptx_only && ic_cuda_load(gpu, dev, msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "CUDA: %s", msg);
    c->t_stage[IC_T_JIT] += ic_now_ms() - tg;
    if (R->key) ic_gcache_put(R->key, gpu, c->ws_size);
    describe_append(out, gpu);
    out->gpu = gpu;
    R->gpu = NULL;
}

void ic_codegen_gpu(ic_ctx *c, ic_compiled *out, int device) {
    /* Errors longjmp to the driver; catch them here first to release the LLVM objects. */
    gres R = {0};
    jmp_buf saved;
    memcpy(saved, c->jb, sizeof(jmp_buf));
    if (setjmp(c->jb)) {
        gres_free(&R);
        memcpy(c->jb, saved, sizeof(jmp_buf));
        longjmp(c->jb, 1);
    }
    codegen(c, out, device, &R);
    gres_free(&R);
    memcpy(c->jb, saved, sizeof(jmp_buf));
}

char *ic_gpu_lazy_ptx(const void *bc, size_t n, int sm, char *msg, size_t msgn) {
    pthread_once(&init_once, init_nvptx);
    gpart q = {0};
    char *ptx = NULL;
    if (part_init(&q, sm, msg, msgn)) goto out;
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(bc, n, "torchc_gpu_lazy");
    LLVMModuleRef m = NULL;
    if (!mb || LLVMParseBitcodeInContext2(q.ctx, mb, &m)) {
        snprintf(msg, msgn, "LLVM: the lazy fallbacks' bitcode does not parse");
        if (mb) LLVMDisposeMemoryBuffer(mb);
        goto out;
    }
    LLVMDisposeMemoryBuffer(mb); /* parsed: the module does not keep it */
    LLVMDisposeModule(q.mod);
    q.mod = m;
    part_compile(&q);
    if (q.err[0]) {
        snprintf(msg, msgn, "%s", q.err);
        goto out;
    }
    ptx = q.ptx;
    q.ptx = NULL;
out:
    gpart_free(&q);
    return ptx;
}

/* ---- public: PTX without a GPU ------------------------------------------------------------- */
IC_API char *ic_graph_to_ptx(const ic_graph *g, int sm, ic_err *err) {
    ic_options o = {.device = IC_CUDA, .opt_level = 3};
    tls_ptx_only = 1;
    tls_sm = sm > 0 ? sm : 90;
    ic_compiled *cc = ic_compile(g, &o, err);
    tls_ptx_only = 0;
    if (!cc) return NULL;
    char *s = ic_compiled_ptx(cc);
    ic_compiled_free(cc);
    if (!s && err) {
        err->code = IC_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
    }
    return s;
}
