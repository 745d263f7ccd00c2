/* gpu_gemm.h — the tensor-core GEMM template of the GPU backend (codegen/gpu_gemm.c).
 *
 * One extern matmul node (mm, addmm, bmm, baddbmm, linear, 2-D/3-D matmul) on f16/bf16 as a
 * kernel of our own: mma.sync.m16n8k16 (f32 accumulators), ldmatrix fragments, a cp.async
 * multi-stage pipeline through swizzled shared memory, and an epilogue (alpha, bias/beta,
 * rounding to the output dtype, then optionally the next pointwise kernel of the graph,
 * evaluated by gpu_nvptx.c on the accumulator values).
 *
 *   out[b, m, n] = alpha * sum_k A[b, m, k] * B[b, k, n] + beta * bias[b, m, n]
 *
 * Every index map of the kernel is read off layouts/ (ic_gemm_map_build): the accumulator
 * registers (ll_mma_accumulator), the instruction fragments (ll_mma_operand), the ldmatrix
 * results and lane addresses (ll_ldmatrix, ll_ldmatrix_addr), the shared-memory swizzle
 * (ll_nvmma_shared) and the cp.async chunk of each thread (ll_blocked).
 */
#ifndef IC_GPU_GEMM_H
#define IC_GPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "../ic_internal.h"

/* Tile configuration: block BM x BN, K steps of BK, WM x WN warps, `stages` buffers. */
typedef struct ic_gemm_cfg {
    int BM, BN, BK, WM, WN, stages;
} ic_gemm_cfg;

/* One operand tile in shared memory: rows x cols elements (cols contiguous before the
 * swizzle), plus the cp.async chunks (8 elements) each thread moves. */
typedef struct ic_gemm_smem {
    int rows, cols;           /* powers of two */
    int swizzle_bytes;        /* ll_nvmma_shared's swizzle */
    uint32_t row_off[8];      /* offset (elements) of row bit b: offset(r, c) = XOR of bases */
    uint32_t col_off[8];
    int nchunk;               /* chunks per thread */
    int16_t tid_row[10], tid_col[10]; /* ll_blocked: tid bit -> (row, col) of its chunk */
    int16_t reg_row[16], reg_col[16]; /* chunk i (0 <= i < nchunk) -> (row, col) at tid 0 */
} ic_gemm_smem;

typedef struct ic_gemm_tile {
    int16_t m0, n0;           /* origin in the block tile at warp 0, lane 0 */
    uint8_t d[4];             /* accumulator registers of d0..d3 */
} ic_gemm_tile;

typedef struct ic_gemm_map {
    ic_gemm_cfg cfg;
    int nthreads, nacc;       /* threads per block, f32 accumulators per thread */
    int16_t acc_row[128], acc_col[128];     /* register -> (row, col) at warp 0, lane 0 */
    int16_t lane_row[5], lane_col[5];       /* accumulator: lane bit -> (row, col) */
    int16_t warp_row[5], warp_col[5];       /* warp bit -> warp origin */
    int nwarp_bits;
    int ntile;                /* mma tiles per warp */
    ic_gemm_tile tile[64];
    int nmt, nnt;             /* distinct tile rows / columns of a warp */
    int16_t mt[16], nt[16];   /* their origins */
    /* ldmatrix.x4 over a 16 x 16 shared region: lane bit -> (row, col) of its address */
    int16_t ldm_row[5], ldm_col[5];
    int a_word[4];            /* A: result word w -> instruction word (a0a1, a2a3, ...) */
    int b_word[2][4];         /* B [n][k] (non-trans) / [k][n] (trans): word w ->
                                 n8 subtile * 2 + instruction word (b0b1, b2b3) */
    ic_gemm_smem a, b_nk, b_kn; /* A [m][k]; B as [n][k] or as [k][n] */
} ic_gemm_map;

/* Derives every map from layouts/; 0, or -1 with a message. Pure (no LLVM). */
int ic_gemm_map_build(ic_gemm_map *m, const ic_gemm_cfg *cfg, char *err, size_t errn);

/* A GEMM node the template can run. */
typedef struct ic_gemm {
    ic_dtype dt;              /* IC_F16 or IC_BF16: operands, bias and result */
    int64_t batch, M, N, K;
    int64_t sa[3], sb[3], sc[3]; /* strides (elements): A (b, m, k), B (b, k, n), bias (b, m, n) */
    int a_buf, b_buf, bias_buf, out_buf; /* bias_buf -1: none */
    double alpha, beta;
    bool fast_ok;             /* strides allow 16-byte cp.async (base alignment checked at run) */
    bool b_nk;                /* B staged as [n][k] (K contiguous: the nn.Linear weight) */
    ic_gemm_cfg cfg;
} ic_gemm;

/* Fills G for extern kernel k when the template supports it (0), else -1 (extern path). */
int ic_gemm_match(ic_ctx *c, const ic_kernel *k, int nsm, ic_gemm *G);

#ifdef IC_GEMM_EMIT
#include "cg.h"
/* The epilogue hook: called for each accumulator element with its flat output index e
 * ((b*M + m)*N + n, i64; clamped to 0 when !ok), the in-range flag and the value (f32,
 * alpha/bias applied, rounded to the output dtype). */
typedef struct ic_gemm_epi {
    void *ctx;
    void (*elem)(void *ctx, LLVMValueRef e, LLVMValueRef ok, LLVMValueRef v);
} ic_gemm_epi;

/* Emits the body of kernel fn (builder positioned in its first block; allocas go to
 * `entry`). fast: cp.async loads (needs 16-byte aligned A/B bases), else per-element
 * loads. out: store the result there (NULL: the epilogue hook only). */
void ic_gemm_emit(cg *C, const ic_gemm *G, const ic_gemm_map *M, bool fast, LLVMBasicBlockRef entry,
                  LLVMValueRef a, LLVMValueRef b, LLVMValueRef bias, LLVMValueRef out, const ic_gemm_epi *epi,
                  const char *name);
#endif

#endif
