/* test_ptx.c — the GPU backend without and with a GPU (make ptx-check; also run by make test).
 *
 * 1. PTX corpus: every graph below goes through ic_graph_to_ptx (sm_90) and, when ptxas is
 *    found ($PTXAS, /usr/local/cuda/bin/ptxas, or ptxas on PATH), is assembled with
 *    `ptxas -arch=sm_90`; without ptxas that step is skipped with a message.
 * 2. Where libcuda works (ic_cuda_available), each corpus graph is also compiled for
 *    IC_CUDA, run on random inputs (strided layouts as built), and compared with the CPU
 *    backend on the same inputs (which itself is tested against a reference elsewhere).
 *    Then again from the GPU disk cache (plans, PTX and cubins: no LLVM, no PTX -> SASS),
 *    and a few once more after their cached cubins were garbled (recompiled from PTX).
 *    The harness opens libcuda itself for memory copies. TEST_PTX_BENCH=1 adds timings.
 * 3. Error paths: without a driver ic_compile(IC_CUDA) must fail with IC_EUNSUPPORTED.
 * 4. The GPU disk cache without a GPU: blobs (cubins too) round-trip through
 *    ic_gcache_put/get; corrupted, truncated and inconsistent blobs are misses.
 *
 * Exit status: number of failures. Options: -v (print each graph), -k NAME (only graphs
 * whose name contains NAME), -s (keep the PTX files in /tmp/torchc_ptx), -d DIR (dump mode,
 * nothing else runs: for each corpus graph DIR/NAME.graph (graph text), NAME.sm90.ptx and
 * NAME.sm80.ptx (ic_graph_to_ptx), NAME.cpu.ll (the CPU module after optimization, as
 * TORCHC_DEBUG=llvm prints it) and NAME.cpu.txt (ic_compiled_describe); tools/codegen_corpus.py
 * drives it to show that a refactor changes no generated code).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ic.h"
#include "ic_device.h"
#include "codegen/gpu.h" /* the disk cache (runtime/gpu_cache.c) */
#include "ic_diskcache.h"
#include "harness.h"

static int verbose, keep;
static const char *only, *dump_dir;


/* ---- graph helpers ------------------------------------------------------------------------- */
static ic_val in_(ic_graph *g, ic_dtype t, int nd, const int64_t *sz) {
    ic_meta m = {.dtype = t, .ndim = nd};
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        m.sizes[i] = sz[i];
        m.strides[i] = s;
        s *= sz[i] > 0 ? sz[i] : 1;
    }
    return ic_input(g, &m);
}
#define IN(g, t, ...) in_(g, t, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})
/* transposed 2-D input: logical [a, b], stored as [b, a] */
static ic_val in_t(ic_graph *g, ic_dtype t, int64_t a, int64_t b) {
    ic_meta m = {.dtype = t, .ndim = 2, .sizes = {a, b}, .strides = {1, a}};
    return ic_input(g, &m);
}
static ic_val S(ic_graph *g, double v) { return ic_scalar(g, v, IC_F64); }
static ic_val U(ic_graph *g, ic_op op, ic_val a) { return ic_unary(g, op, a); }
static ic_val Bn(ic_graph *g, ic_op op, ic_val a, ic_val b) { return ic_binary(g, op, a, b); }
static int last_dim(ic_graph *g, ic_val v) { return ic_value_meta(g, v)->ndim - 1; }
static ic_val R(ic_graph *g, ic_op op, ic_val a, int dim, int keep) {
    return ic_reduce(g, op, a, 1u << dim, keep, -1);
}
static ic_val softmax(ic_graph *g, ic_val x) {
    int d = last_dim(g, x);
    ic_val m = R(g, IC_OP_AMAX, x, d, 1);
    ic_val e = U(g, IC_OP_EXP, Bn(g, IC_OP_SUB, x, m));
    return Bn(g, IC_OP_DIV, e, R(g, IC_OP_SUM, e, d, 1));
}
static ic_val layernorm(ic_graph *g, ic_val x, ic_val w, ic_val b) {
    int d = last_dim(g, x);
    ic_val mu = R(g, IC_OP_MEAN, x, d, 1);
    ic_val c = Bn(g, IC_OP_SUB, x, mu);
    ic_val var = R(g, IC_OP_MEAN, Bn(g, IC_OP_MUL, c, c), d, 1);
    ic_val y = Bn(g, IC_OP_MUL, c, U(g, IC_OP_RSQRT, Bn(g, IC_OP_ADD, var, S(g, 1e-5))));
    return Bn(g, IC_OP_ADD, Bn(g, IC_OP_MUL, y, w), b);
}
static ic_val rmsnorm(ic_graph *g, ic_val x, ic_val w) {
    int d = last_dim(g, x);
    ic_val ms = R(g, IC_OP_MEAN, Bn(g, IC_OP_MUL, x, x), d, 1);
    return Bn(g, IC_OP_MUL, Bn(g, IC_OP_MUL, x, U(g, IC_OP_RSQRT, Bn(g, IC_OP_ADD, ms, S(g, 1e-6)))), w);
}

/* ---- the corpus ----------------------------------------------------------------------------- */
typedef struct gcase {
    char name[64];
    ic_graph *g;
    ic_errcode expect; /* IC_OK, or the error code ic_graph_to_ptx must give */
    double tol; /* relative tolerance GPU vs CPU */
} gcase;

static gcase cases[256];
static int ncases;

static ic_graph *add_case(const char *name, ic_errcode expect, double tol) {
    gcase *c = &cases[ncases++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->g = ic_graph_new();
    c->expect = expect;
    c->tol = tol;
    return c->g;
}
static ic_graph *G(const char *name) { return add_case(name, IC_OK, 2e-6); }
/* an output allocated contiguous (eager's x.contiguous()), not in its operands' layout */
static void out_contig(ic_graph *g, ic_val v) {
    ic_value_set_format(g, v, v, IC_MF_CONTIGUOUS);
    ic_output(g, v);
}

static void build_corpus(void) {
    ic_graph *g;
    ic_val x, y, w, b;
    /* pointwise */
    g = G("add_1000");
    ic_output(g, Bn(g, IC_OP_ADD, IN(g, IC_F32, 1000), IN(g, IC_F32, 1000)));
    g = G("add_odd_1023");
    ic_output(g, Bn(g, IC_OP_ADD, IN(g, IC_F32, 1023), IN(g, IC_F32, 1023)));
    g = G("chain_33x65");
    x = IN(g, IC_F32, 33, 65);
    y = Bn(g, IC_OP_ADD, Bn(g, IC_OP_MUL, x, S(g, 2.0)), S(g, 1.0));
    ic_output(g, U(g, IC_OP_TANH, U(g, IC_OP_RELU, Bn(g, IC_OP_SUB, U(g, IC_OP_EXP, y), x))));
    g = G("broadcast_64x1_1x100");
    ic_output(g, Bn(g, IC_OP_MUL, IN(g, IC_F32, 64, 1), IN(g, IC_F32, 1, 100)));
    g = G("broadcast_row_7x9x256");
    ic_output(g, Bn(g, IC_OP_ADD, IN(g, IC_F32, 7, 9, 256), IN(g, IC_F32, 256)));
    g = G("transposed_in_300x17");
    x = in_t(g, IC_F32, 300, 17);
    ic_output(g, Bn(g, IC_OP_ADD, x, IN(g, IC_F32, 300, 17)));
    /* transposes through shared memory (tile kernels) */
    g = G("tile_transpose_add_300x517");
    ic_output(g, Bn(g, IC_OP_ADD, in_t(g, IC_F32, 300, 517), IN(g, IC_F32, 300, 517)));
    g = G("tile_transpose_copy_64x64");
    ic_output(g, U(g, IC_OP_NEG, in_t(g, IC_F32, 64, 64)));
    g = add_case("tile_transpose_bf16_33x1000", IC_OK, 1e-2);
    x = in_t(g, IC_BF16, 33, 1000);
    ic_output(g, Bn(g, IC_OP_MUL, x, Bn(g, IC_OP_ADD, x, IN(g, IC_BF16, 1000))));
    /* 16-bit word tiles (64 x 64 tiles of pairs; partial tiles, batches,
     * two transposed inputs, a fused op before and after; odd sizes keep the 32 x 32 tile) */
    g = add_case("tile2_bf16_66x130", IC_OK, 1e-2);
    ic_output(g, Bn(g, IC_OP_ADD, in_t(g, IC_BF16, 66, 130), IN(g, IC_BF16, 66, 130)));
    g = add_case("tile2_f16_128x64_full", IC_OK, 1e-2);
    x = in_t(g, IC_F16, 128, 64);
    ic_output(g, U(g, IC_OP_RELU, Bn(g, IC_OP_MUL, x, IN(g, IC_F16, 128, 64))));
    g = add_case("tile2_bf16_batch_two_inputs_3x70x46", IC_OK, 1e-2);
    x = ic_permute(g, IN(g, IC_BF16, 3, 46, 70), (int[]){0, 2, 1});
    y = ic_permute(g, IN(g, IC_BF16, 3, 46, 70), (int[]){0, 2, 1});
    ic_output(g, Bn(g, IC_OP_SUB, U(g, IC_OP_EXP, x), Bn(g, IC_OP_MUL, y, S(g, 0.5))));
    g = add_case("tile2_bf16_odd_34x95", IC_OK, 1e-2);
    ic_output(g, Bn(g, IC_OP_ADD, in_t(g, IC_BF16, 34, 95), IN(g, IC_BF16, 95)));
    g = G("tile_transpose_i64_100x40");
    ic_output(g, Bn(g, IC_OP_ADD, in_t(g, IC_I64, 100, 40), IN(g, IC_I64, 100, 40)));
    g = G("tile_permute_batch_3x70x45");
    x = ic_permute(g, IN(g, IC_F32, 3, 45, 70), (int[]){0, 2, 1});
    y = ic_permute(g, IN(g, IC_F32, 45, 3, 70), (int[]){1, 2, 0});
    ic_output(g, Bn(g, IC_OP_SUB, U(g, IC_OP_EXP, x), Bn(g, IC_OP_MUL, y, IN(g, IC_F32, 3, 70, 45))));
    g = G("tile_two_outputs_50x200");
    x = in_t(g, IC_F32, 50, 200);
    ic_output(g, Bn(g, IC_OP_ADD, x, S(g, 1.0)));
    ic_output(g, U(g, IC_OP_TANH, x));
    g = G("permute_out_4x5x6");
    x = IN(g, IC_F32, 4, 5, 6);
    ic_output(g, U(g, IC_OP_NEG, ic_permute(g, x, (int[]){2, 0, 1})));
    /* The same transposes with contiguous outputs (as x.T.contiguous(), reshape after a
     * transpose): since outputs get eager's strides (graph/strides.c), a pointwise op of a
     * transposed first input stores in its layout, and the cases above lost their tiles; these
     * keep the tile kernels (32 x 32, 64 x 64 words, batches, two outputs, odd sizes) covered. */
    g = G("tile_transpose_copy_64x64_contig");
    out_contig(g, U(g, IC_OP_NEG, in_t(g, IC_F32, 64, 64)));
    g = G("tile_transpose_add_300x517_contig");
    out_contig(g, Bn(g, IC_OP_ADD, in_t(g, IC_F32, 300, 517), IN(g, IC_F32, 300, 517)));
    g = add_case("tile_transpose_bf16_33x1000_contig", IC_OK, 1e-2);
    x = in_t(g, IC_BF16, 33, 1000);
    out_contig(g, Bn(g, IC_OP_MUL, x, Bn(g, IC_OP_ADD, x, IN(g, IC_BF16, 1000))));
    g = add_case("tile2_bf16_66x130_contig", IC_OK, 1e-2);
    out_contig(g, Bn(g, IC_OP_ADD, in_t(g, IC_BF16, 66, 130), IN(g, IC_BF16, 66, 130)));
    g = add_case("tile2_f16_128x64_full_contig", IC_OK, 1e-2);
    x = in_t(g, IC_F16, 128, 64);
    out_contig(g, U(g, IC_OP_RELU, Bn(g, IC_OP_MUL, x, IN(g, IC_F16, 128, 64))));
    g = add_case("tile2_bf16_batch_two_inputs_3x70x46_contig", IC_OK, 1e-2);
    x = ic_permute(g, IN(g, IC_BF16, 3, 46, 70), (int[]){0, 2, 1});
    y = ic_permute(g, IN(g, IC_BF16, 3, 46, 70), (int[]){0, 2, 1});
    out_contig(g, Bn(g, IC_OP_SUB, U(g, IC_OP_EXP, x), Bn(g, IC_OP_MUL, y, S(g, 0.5))));
    g = add_case("tile2_bf16_odd_34x95_contig", IC_OK, 1e-2);
    out_contig(g, Bn(g, IC_OP_ADD, in_t(g, IC_BF16, 34, 95), IN(g, IC_BF16, 95)));
    g = G("tile_transpose_i64_100x40_contig");
    out_contig(g, Bn(g, IC_OP_ADD, in_t(g, IC_I64, 100, 40), IN(g, IC_I64, 100, 40)));
    g = G("tile_permute_batch_3x70x45_contig");
    x = ic_permute(g, IN(g, IC_F32, 3, 45, 70), (int[]){0, 2, 1});
    y = ic_permute(g, IN(g, IC_F32, 45, 3, 70), (int[]){1, 2, 0});
    out_contig(g, Bn(g, IC_OP_SUB, U(g, IC_OP_EXP, x), Bn(g, IC_OP_MUL, y, IN(g, IC_F32, 3, 70, 45))));
    g = G("tile_two_outputs_50x200_contig");
    x = in_t(g, IC_F32, 50, 200);
    out_contig(g, Bn(g, IC_OP_ADD, x, S(g, 1.0)));
    out_contig(g, U(g, IC_OP_TANH, x));
    g = G("transposed_in_300x17_contig");
    x = in_t(g, IC_F32, 300, 17);
    out_contig(g, Bn(g, IC_OP_ADD, x, IN(g, IC_F32, 300, 17)));
    g = G("permute_out_4x5x6_contig");
    out_contig(g, U(g, IC_OP_NEG, ic_permute(g, IN(g, IC_F32, 4, 5, 6), (int[]){2, 0, 1})));
    g = G("reshape_expand");
    x = IN(g, IC_F32, 6, 4);
    y = ic_reshape(g, x, 3, (int64_t[]){2, 3, 4});
    ic_output(g, Bn(g, IC_OP_ADD, y, ic_expand(g, IN(g, IC_F32, 1, 3, 1), 3, (int64_t[]){2, 3, 4})));
    g = G("multi_out");
    x = IN(g, IC_F32, 129, 3);
    y = U(g, IC_OP_SIGMOID, x);
    ic_output(g, y);
    ic_output(g, Bn(g, IC_OP_MUL, y, x));
    g = G("scalar_0d");
    x = in_(g, IC_F32, 0, NULL);
    ic_output(g, Bn(g, IC_OP_ADD, x, S(g, 3.5)));
    g = G("empty_0x5");
    ic_output(g, Bn(g, IC_OP_ADD, IN(g, IC_F32, 0, 5), S(g, 1.0)));
    g = G("size1_1x1");
    ic_output(g, U(g, IC_OP_EXP, IN(g, IC_F32, 1, 1)));
    /* every unary op, f32 */
    static const ic_op un[] = {IC_OP_NEG, IC_OP_ABS, IC_OP_EXP, IC_OP_LOG, IC_OP_SQRT, IC_OP_RSQRT,
                               IC_OP_RECIPROCAL, IC_OP_SIGMOID, IC_OP_TANH, IC_OP_RELU, IC_OP_GELU,
                               IC_OP_GELU_TANH, IC_OP_SILU, IC_OP_SIN, IC_OP_COS};
    for (size_t i = 0; i < sizeof un / sizeof un[0]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "unary_%s", ic_op_name(un[i]));
        g = add_case(nm, IC_OK, 4e-6);
        x = IN(g, IC_F32, 517);
        if (un[i] == IC_OP_LOG || un[i] == IC_OP_SQRT || un[i] == IC_OP_RSQRT) x = U(g, IC_OP_ABS, x);
        ic_output(g, U(g, un[i], x));
    }
    static const ic_op un2[] = {IC_OP_FLOOR, IC_OP_CEIL, IC_OP_ROUND, IC_OP_TRUNC, IC_OP_SIGN, IC_OP_ERF,
                                IC_OP_LOG1P, IC_OP_EXPM1, IC_OP_LOG2, IC_OP_EXP2, IC_OP_TAN, IC_OP_ATAN,
                                IC_OP_ISNAN, IC_OP_ISINF, IC_OP_ISFINITE, IC_OP_ASIN, IC_OP_ACOS,
                                IC_OP_ASINH, IC_OP_ACOSH, IC_OP_ATANH};
    for (size_t i = 0; i < sizeof un2 / sizeof un2[0]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "unary_%s", ic_op_name(un2[i]));
        g = add_case(nm, IC_OK, 4e-6);
        x = Bn(g, IC_OP_MUL, IN(g, IC_F32, 517), S(g, 3.0));
        if (un2[i] == IC_OP_LOG2) x = U(g, IC_OP_ABS, x);
        if (un2[i] == IC_OP_LOG1P) x = Bn(g, IC_OP_ADD, U(g, IC_OP_ABS, x), S(g, -0.9));
        ic_output(g, U(g, un2[i], x));
    }
    g = G("int_bitwise");
    x = IN(g, IC_I32, 200);
    y = IN(g, IC_I32, 200);
    ic_output(g, U(g, IC_OP_BITWISE_NOT, x));
    ic_output(g, Bn(g, IC_OP_BITWISE_AND, x, y));
    ic_output(g, Bn(g, IC_OP_BITWISE_OR, x, y));
    ic_output(g, Bn(g, IC_OP_BITWISE_XOR, x, y));
    ic_output(g, Bn(g, IC_OP_FLOOR_DIVIDE, x, y));
    ic_output(g, Bn(g, IC_OP_REMAINDER, x, y));
    ic_output(g, Bn(g, IC_OP_FMOD, x, y));
    ic_output(g, Bn(g, IC_OP_LSHIFT, x, y));
    ic_output(g, Bn(g, IC_OP_RSHIFT, x, y));
    g = G("u8_shifts"); /* narrow unsigned: logical right shift, amounts past the width */
    x = IN(g, IC_U8, 200);
    y = IN(g, IC_U8, 200);
    ic_output(g, Bn(g, IC_OP_LSHIFT, x, y));
    ic_output(g, Bn(g, IC_OP_RSHIFT, x, ic_scalar(g, 3, IC_I64)));
    g = G("int_pow"); /* powi: a tensor exponent (its bits unrolled, negative ones), a number */
    x = IN(g, IC_I64, 200);
    y = IN(g, IC_I32, 200);
    ic_output(g, Bn(g, IC_OP_POW, x, y));
    ic_output(g, Bn(g, IC_OP_POW, y, ic_scalar(g, 5, IC_I64)));
    ic_output(g, Bn(g, IC_OP_POW, ic_cast(g, y, IC_U8), ic_cast(g, x, IC_U8)));
    static const ic_op bi2[] = {IC_OP_FMOD, IC_OP_REMAINDER, IC_OP_FLOOR_DIVIDE, IC_OP_ATAN2, IC_OP_LOGICAL_XOR};
    for (size_t i = 0; i < sizeof bi2 / sizeof bi2[0]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "binary_%s", ic_op_name(bi2[i]));
        g = add_case(nm, IC_OK, 8e-6);
        ic_output(g, Bn(g, bi2[i], Bn(g, IC_OP_MUL, IN(g, IC_F32, 33, 31), S(g, 5.0)), IN(g, IC_F32, 31)));
    }
    /* f64 fmod / remainder: vm_fmod's exact loop (its own basic blocks in the kernel) */
    g = add_case("binary_fmod_f64", IC_OK, 1e-12);
    x = Bn(g, IC_OP_MUL, IN(g, IC_F64, 33, 31), S(g, 5.0));
    y = IN(g, IC_F64, 31);
    ic_output(g, Bn(g, IC_OP_FMOD, x, y));
    ic_output(g, Bn(g, IC_OP_REMAINDER, x, y));
    /* bf16 division: div.full with tiny divisors scaled first (gpu_ops.c) */
    g = add_case("bf16_div", IC_OK, 1e-2);
    ic_output(g, Bn(g, IC_OP_DIV, IN(g, IC_BF16, 64, 128), IN(g, IC_BF16, 128)));
    /* max(dim) / min(dim): values and indices of one element (gpu_rows.c gg_arg_values) */
    g = add_case("max_dim_pair_40x300_dim0", IC_OK, 0);
    x = IN(g, IC_F32, 40, 300);
    ic_output(g, R(g, IC_OP_AMAX, x, 0, 0));
    ic_output(g, R(g, IC_OP_ARGMAX, x, 0, 0));
    g = add_case("min_dim_pair_8x5000", IC_OK, 0);
    x = IN(g, IC_F32, 8, 5000);
    ic_output(g, R(g, IC_OP_AMIN, x, 1, 1));
    ic_output(g, R(g, IC_OP_ARGMIN, x, 1, 1));
    g = add_case("prod_rows", IC_OK, 1e-5);
    ic_output(g, R(g, IC_OP_PROD, Bn(g, IC_OP_ADD, Bn(g, IC_OP_MUL, IN(g, IC_F32, 40, 30), S(g, 0.1)), S(g, 1.0)), 1, 0));
    g = add_case("argmax_last_8x5000", IC_OK, 0);
    ic_output(g, R(g, IC_OP_ARGMAX, IN(g, IC_F32, 8, 5000), 1, 0));
    g = add_case("argmax_last_64x100", IC_OK, 0);
    ic_output(g, R(g, IC_OP_ARGMAX, IN(g, IC_F32, 64, 100), 1, 1));
    g = add_case("argmin_first_300x40", IC_OK, 0);
    ic_output(g, R(g, IC_OP_ARGMIN, IN(g, IC_F32, 300, 40), 0, 0));
    g = add_case("argmax_int_ties", IC_OK, 0);
    ic_output(g, R(g, IC_OP_ARGMAX, IN(g, IC_I8, 16, 3000), 1, 0));
    g = G("logical_not");
    ic_output(g, U(g, IC_OP_LOGICAL_NOT, Bn(g, IC_OP_GT, IN(g, IC_F32, 300), S(g, 0.0))));
    /* every binary op */
    static const ic_op bi[] = {IC_OP_ADD, IC_OP_SUB, IC_OP_MUL, IC_OP_DIV, IC_OP_MAXIMUM, IC_OP_MINIMUM,
                               IC_OP_POW, IC_OP_EQ, IC_OP_NE, IC_OP_LT, IC_OP_LE, IC_OP_GT, IC_OP_GE,
                               IC_OP_LOGICAL_AND, IC_OP_LOGICAL_OR};
    for (size_t i = 0; i < sizeof bi / sizeof bi[0]; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "binary_%s", ic_op_name(bi[i]));
        g = add_case(nm, IC_OK, 8e-6);
        x = IN(g, IC_F32, 33, 31);
        y = IN(g, IC_F32, 31);
        if (bi[i] == IC_OP_POW) x = U(g, IC_OP_ABS, x);
        ic_output(g, Bn(g, bi[i], x, y));
    }
    g = G("pow_const");
    x = IN(g, IC_F32, 100);
    ic_output(g, Bn(g, IC_OP_POW, x, S(g, 2.0)));
    ic_output(g, Bn(g, IC_OP_POW, U(g, IC_OP_ABS, x), S(g, 0.5)));
    ic_output(g, Bn(g, IC_OP_POW, x, S(g, 3.0)));
    g = G("where");
    x = IN(g, IC_F32, 40, 50);
    ic_output(g, ic_where(g, Bn(g, IC_OP_GT, x, S(g, 0.0)), x, Bn(g, IC_OP_MUL, x, S(g, 0.1))));
    g = G("casts");
    x = IN(g, IC_F32, 257);
    ic_output(g, ic_cast(g, Bn(g, IC_OP_MUL, x, S(g, 10.0)), IC_I32));
    ic_output(g, ic_cast(g, x, IC_BOOL));
    ic_output(g, ic_cast(g, x, IC_F64));
    g = G("casts_to_ints"); /* f32/f64/bf16 -> every int type: cvt.rzi.s32 / s64 (test_fp2int_cuda) */
    x = Bn(g, IC_OP_MUL, IN(g, IC_F32, 131), S(g, 60.0));
    y = ic_cast(g, IN(g, IC_F64, 131), IC_F64);
    w = IN(g, IC_BF16, 131);
    static const ic_dtype ints[] = {IC_I32, IC_I16, IC_I8, IC_I64, IC_U8};
    for (int i = 0; i < 5; i++) {
        ic_output(g, ic_cast(g, x, ints[i]));
        ic_output(g, ic_cast(g, y, ints[i]));
        ic_output(g, ic_cast(g, w, ints[i]));
    }
    g = G("int_ops");
    x = IN(g, IC_I32, 77);
    y = IN(g, IC_I64, 77);
    ic_output(g, Bn(g, IC_OP_ADD, x, y));
    ic_output(g, Bn(g, IC_OP_MAXIMUM, x, ic_cast(g, y, IC_I32)));
    ic_output(g, U(g, IC_OP_ABS, x));
    g = G("gather_rows_50x33"); /* index_select: wrap + trap code on the device */
    w = IN(g, IC_F32, 50, 33);
    y = Bn(g, IC_OP_MINIMUM, U(g, IC_OP_ABS, IN(g, IC_I64, 40)), ic_scalar(g, 49, IC_I64));
    ic_output(g, Bn(g, IC_OP_MUL, ic_index_select(g, w, 0, y), S(g, 2.0)));
    g = G("u8_i8_bool");
    x = IN(g, IC_U8, 100);
    y = IN(g, IC_I8, 100);
    ic_output(g, Bn(g, IC_OP_ADD, x, y));
    ic_output(g, Bn(g, IC_OP_LOGICAL_AND, ic_cast(g, x, IC_BOOL), ic_cast(g, y, IC_BOOL)));
    /* f64 */
    g = add_case("f64_arith", IC_OK, 1e-14);
    x = IN(g, IC_F64, 999);
    y = IN(g, IC_F64, 999);
    ic_output(g, U(g, IC_OP_SQRT, U(g, IC_OP_ABS, Bn(g, IC_OP_DIV, Bn(g, IC_OP_MUL, x, y), Bn(g, IC_OP_ADD, y, S(g, 3.0))))));
    g = add_case("f64_sum_rows", IC_OK, 1e-12);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F64, 50, 333), 1, 0));
    g = add_case("f64_exp_unsupported", IC_EUNSUPPORTED, 0);
    ic_output(g, U(g, IC_OP_EXP, IN(g, IC_F64, 10)));
    /* reductions */
    g = add_case("sum_last_100x37", IC_OK, 1e-4);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 100, 37), 1, 0));
    g = add_case("sum_last_64x1024", IC_OK, 1e-4);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 64, 1024), 1, 1));
    g = add_case("sum_last_8x100000_looped", IC_OK, 5e-4);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 8, 100000), 1, 0));
    g = add_case("amax_last_odd_31x4099", IC_OK, 0);
    ic_output(g, R(g, IC_OP_AMAX, IN(g, IC_F32, 31, 4099), 1, 0));
    g = add_case("amax_first_1000x64", IC_OK, 0);
    ic_output(g, R(g, IC_OP_AMAX, IN(g, IC_F32, 1000, 64), 0, 0));
    g = add_case("sum_first_4096x256", IC_OK, 5e-4);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 4096, 256), 0, 1));
    /* split columns (gpu_plan.c gg_choose_split: vec_outer, few groups of 32 columns, a long
     * extent): partials, a combining launch per read pass, the later passes over many blocks */
    g = add_case("sum_first_split_20000x64", IC_OK, 5e-4);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 20000, 64), 0, 0));
    g = add_case("colnorm_split_9001x40", IC_OK, 1e-4);
    x = IN(g, IC_F32, 9001, 40);
    y = Bn(g, IC_OP_SUB, x, R(g, IC_OP_MEAN, x, 0, 1));
    ic_output(g, Bn(g, IC_OP_MUL, y, U(g, IC_OP_RSQRT, Bn(g, IC_OP_ADD, R(g, IC_OP_MEAN, Bn(g, IC_OP_MUL, y, y), 0, 1), S(g, 1e-5)))));
    g = add_case("argmax_first_split_9000x33", IC_OK, 0);
    x = IN(g, IC_F32, 9000, 33);
    ic_output(g, R(g, IC_OP_AMAX, x, 0, 0));
    ic_output(g, R(g, IC_OP_ARGMAX, x, 0, 0));
    g = add_case("colcenter_split_16_cols_20000x16", IC_OK, 1e-4); /* 16 of 32 lanes */
    x = IN(g, IC_F32, 20000, 16);
    ic_output(g, Bn(g, IC_OP_SUB, x, R(g, IC_OP_MEAN, x, 0, 1)));
    g = add_case("sum_first_split_bf16_6000x96", IC_OK, 1e-2);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_BF16, 6000, 96), 0, 1));
    g = add_case("sum_first_small_5x7", IC_OK, 1e-4);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 5, 7), 0, 0));
    g = add_case("amin_mid_6x50x8", IC_OK, 0);
    ic_output(g, R(g, IC_OP_AMIN, IN(g, IC_F32, 6, 50, 8), 1, 0));
    g = add_case("mean_all_12345", IC_OK, 1e-4);
    ic_output(g, ic_reduce(g, IC_OP_MEAN, IN(g, IC_F32, 12345), 0, 0, -1));
    g = add_case("sum_all_2d_300x301", IC_OK, 1e-4);
    ic_output(g, ic_reduce(g, IC_OP_SUM, IN(g, IC_F32, 300, 301), 0, 0, -1));
    /* few huge rows: split over many blocks (partials, then a combining launch) */
    g = add_case("split_sum_all_4M", IC_OK, 1e-4);
    ic_output(g, ic_reduce(g, IC_OP_SUM, IN(g, IC_F32, 1 << 22), 0, 0, -1));
    g = add_case("split_mean_rows_3x1M", IC_OK, 1e-4);
    ic_output(g, R(g, IC_OP_MEAN, IN(g, IC_F32, 3, 1000003), 1, 1));
    g = add_case("split_softmax_1x300000", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 1, 300000)));
    g = add_case("split_layernorm_2x200000", IC_OK, 1e-4);
    ic_output(g, layernorm(g, IN(g, IC_F32, 2, 200000), IN(g, IC_F32, 200000), IN(g, IC_F32, 200000)));
    g = add_case("split_argmax_amin_1M", IC_OK, 0);
    x = IN(g, IC_F32, 1 << 20);
    ic_output(g, ic_reduce(g, IC_OP_ARGMAX, x, 0, 0, -1));
    ic_output(g, ic_reduce(g, IC_OP_AMIN, x, 0, 0, -1));
    g = add_case("split_bf16_sum_2M", IC_OK, 1e-2);
    ic_output(g, ic_reduce(g, IC_OP_SUM, IN(g, IC_BF16, 1 << 21), 0, 0, IC_F32));
    g = add_case("sum_int_rows", IC_OK, 0);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_I32, 17, 129), 1, 0));
    g = add_case("sum_bool_rows", IC_OK, 0);
    ic_output(g, R(g, IC_OP_SUM, Bn(g, IC_OP_GT, IN(g, IC_F32, 19, 300), S(g, 0.0)), 1, 0));
    g = add_case("sum_transposed_in", IC_OK, 1e-4);
    ic_output(g, R(g, IC_OP_SUM, in_t(g, IC_F32, 200, 300), 1, 0));
    g = add_case("sum_dims_0_2", IC_OK, 1e-4);
    ic_output(g, ic_reduce(g, IC_OP_SUM, IN(g, IC_F32, 8, 9, 10), 5u, 0, -1));
    g = add_case("reduce_empty_3x0", IC_OK, 0);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 3, 0), 1, 0));
    g = add_case("reduce_size1_dim", IC_OK, 0);
    ic_output(g, R(g, IC_OP_SUM, IN(g, IC_F32, 40, 1), 1, 0));
    /* row patterns */
    g = add_case("softmax_128x1000", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 128, 1000)));
    g = add_case("softmax_3x33", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 3, 33)));
    g = add_case("softmax_4x8192", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 4, 8192)));
    g = add_case("softmax_2x32768_persistent", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 200, 32768)));
    g = add_case("softmax_2x50000_looped", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 2, 50000)));
    g = add_case("softmax_dim0_300x40", IC_OK, 1e-5);
    x = IN(g, IC_F32, 300, 40);
    {
        ic_val m = R(g, IC_OP_AMAX, x, 0, 1);
        ic_val e = U(g, IC_OP_EXP, Bn(g, IC_OP_SUB, x, m));
        ic_output(g, Bn(g, IC_OP_DIV, e, R(g, IC_OP_SUM, e, 0, 1)));
    }
    /* a long chain used twice in a row kernel is realized in row scratch (kind 3) */
    g = add_case("rowscratch_heavy_softmax_33x1000", IC_OK, 2e-5);
    x = IN(g, IC_F32, 33, 1000);
    for (int i = 0; i < 20; i++) x = Bn(g, IC_OP_ADD, Bn(g, IC_OP_MUL, x, S(g, 1.001)), S(g, 0.001));
    ic_output(g, softmax(g, x));
    g = add_case("rowscratch_split_1x200000", IC_OK, 2e-5);
    x = IN(g, IC_F32, 1, 200000);
    for (int i = 0; i < 20; i++) x = Bn(g, IC_OP_ADD, Bn(g, IC_OP_MUL, x, S(g, 1.001)), S(g, 0.001));
    ic_output(g, softmax(g, x));
    g = add_case("layernorm_64x768", IC_OK, 2e-5);
    x = IN(g, IC_F32, 64, 768);
    w = IN(g, IC_F32, 768);
    b = IN(g, IC_F32, 768);
    ic_output(g, layernorm(g, x, w, b));
    g = add_case("layernorm_odd_10x771", IC_OK, 2e-5);
    ic_output(g, layernorm(g, IN(g, IC_F32, 10, 771), IN(g, IC_F32, 771), IN(g, IC_F32, 771)));
    g = add_case("rmsnorm_32x4096", IC_OK, 2e-5);
    ic_output(g, rmsnorm(g, IN(g, IC_F32, 32, 4096), IN(g, IC_F32, 4096)));
    g = add_case("rmsnorm_3d_2x5x127", IC_OK, 2e-5);
    ic_output(g, rmsnorm(g, IN(g, IC_F32, 2, 5, 127), IN(g, IC_F32, 127)));
    g = add_case("logsumexp_16x500", IC_OK, 1e-5);
    x = IN(g, IC_F32, 16, 500);
    {
        ic_val m = R(g, IC_OP_AMAX, x, 1, 1);
        ic_val s = R(g, IC_OP_SUM, U(g, IC_OP_EXP, Bn(g, IC_OP_SUB, x, m)), 1, 1);
        ic_output(g, Bn(g, IC_OP_ADD, U(g, IC_OP_LOG, s), m));
    }
    /* half precision storage */
    g = add_case("bf16_add_mul", IC_OK, 1e-2);
    x = IN(g, IC_BF16, 64, 128);
    ic_output(g, Bn(g, IC_OP_MUL, Bn(g, IC_OP_ADD, x, IN(g, IC_BF16, 128)), S(g, 0.5)));
    g = add_case("bf16_odd_softmax_7x99", IC_OK, 1e-2);
    ic_output(g, softmax(g, IN(g, IC_BF16, 7, 99)));
    g = add_case("bf16_softmax_64x4096", IC_OK, 1e-2);
    ic_output(g, softmax(g, IN(g, IC_BF16, 64, 4096)));
    g = add_case("bf16_softmax_odd_rows_5x4096", IC_OK, 1e-2); /* V2: 2 rows per block, 5 rows */
    ic_output(g, softmax(g, IN(g, IC_BF16, 5, 4096)));
    g = add_case("f16_softmax_9x1000", IC_OK, 1e-2); /* V2: chunks not exact */
    ic_output(g, softmax(g, IN(g, IC_F16, 9, 1000)));
    g = add_case("softmax_long_3x32768", IC_OK, 1e-5); /* V2: looped T = 1024 */
    ic_output(g, softmax(g, IN(g, IC_F32, 3, 32768)));
    g = add_case("bf16_softmax_long_2x32768", IC_OK, 1e-2);
    ic_output(g, softmax(g, IN(g, IC_BF16, 2, 32768)));
    g = add_case("f32_softmax_64x4096", IC_OK, 1e-5);
    ic_output(g, softmax(g, IN(g, IC_F32, 64, 4096)));
    g = add_case("bf16_rmsnorm_16x2048", IC_OK, 1e-2);
    ic_output(g, rmsnorm(g, IN(g, IC_BF16, 16, 2048), IN(g, IC_BF16, 2048)));
    g = add_case("f16_gelu_layernorm", IC_OK, 1e-2);
    x = IN(g, IC_F16, 8, 512);
    ic_output(g, layernorm(g, U(g, IC_OP_GELU, x), IN(g, IC_F16, 512), IN(g, IC_F16, 512)));
    g = add_case("bf16_to_f32_sum", IC_OK, 1e-5);
    ic_output(g, R(g, IC_OP_SUM, ic_cast(g, IN(g, IC_BF16, 33, 256), IC_F32), 1, 0));
}

/* ---- ptxas ---------------------------------------------------------------------------------- */
static const char *find_ptxas(void) {
    static char path[512];
    const char *e = getenv("PTXAS");
    if (e && *e) return access(e, X_OK) == 0 ? e : NULL;
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return "/usr/local/cuda/bin/ptxas";
    const char *p = getenv("PATH");
    while (p && *p) {
        const char *q = strchr(p, ':');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        snprintf(path, sizeof path, "%.*s/ptxas", (int)n, p);
        if (access(path, X_OK) == 0) return path;
        p = q ? q + 1 : NULL;
    }
    return NULL;
}

static int run_ptxas(const char *ptxas, const char *file, const char *name) {
    char cmd[1024], out[64 * 1024];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 '%s' -o /dev/null 2>&1", ptxas, file);
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    if (st != 0) fprintf(stderr, "ptxas failed on %s:\n%s\n", name, out);
    return st;
}

/* ---- a minimal libcuda for the harness ------------------------------------------------------- */
typedef int CUr;
static struct {
    void *lib;
    CUr (*MemAlloc)(unsigned long long *, size_t);
    CUr (*MemFree)(unsigned long long);
    CUr (*HtoD)(unsigned long long, const void *, size_t);
    CUr (*DtoH)(void *, unsigned long long, size_t);
    CUr (*Sync)(void);
    CUr (*Memset)(unsigned long long, unsigned char, size_t);
} cu;

static bool cu_open(void) {
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) return false;
    *(void **)&cu.MemAlloc = dlsym(cu.lib, "cuMemAlloc_v2");
    *(void **)&cu.MemFree = dlsym(cu.lib, "cuMemFree_v2");
    *(void **)&cu.HtoD = dlsym(cu.lib, "cuMemcpyHtoD_v2");
    *(void **)&cu.DtoH = dlsym(cu.lib, "cuMemcpyDtoH_v2");
    *(void **)&cu.Sync = dlsym(cu.lib, "cuCtxSynchronize");
    *(void **)&cu.Memset = dlsym(cu.lib, "cuMemsetD8_v2");
    return cu.MemAlloc && cu.MemFree && cu.HtoD && cu.DtoH && cu.Sync && cu.Memset;
}

/* ---- differential GPU run --------------------------------------------------------------------- */
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double rndu(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static int64_t span_of(const ic_meta *m) {
    int64_t s = 1;
    for (int d = 0; d < m->ndim; d++) {
        if (m->sizes[d] == 0) return 0;
        s += (m->sizes[d] - 1) * m->strides[d];
    }
    return s;
}

static float bf16f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
static float f16f(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
    return s ? -v : v;
}
static uint16_t f2h(float f) { /* inputs are small normal numbers here: truncating is fine */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t s = (u >> 16) & 0x8000;
    int e = (int)((u >> 23) & 255) - 127 + 15;
    if (f == 0 || e <= 0) return (uint16_t)s;
    return (uint16_t)(s | ((uint32_t)e << 10) | ((u >> 13) & 1023));
}

static void fill(void *p, ic_dtype t, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        double v = (rndu() * 4.0 - 2.0);
        switch (t) {
        case IC_BOOL: ((uint8_t *)p)[i] = rnd() & 1; break;
        case IC_U8: ((uint8_t *)p)[i] = (uint8_t)(rnd() % 11); break;
        case IC_I8: ((int8_t *)p)[i] = (int8_t)((int)(rnd() % 11) - 5); break;
        case IC_I16: ((int16_t *)p)[i] = (int16_t)((int)(rnd() % 101) - 50); break;
        case IC_I32: ((int32_t *)p)[i] = (int32_t)(rnd() % 2001) - 1000; break;
        case IC_I64: ((int64_t *)p)[i] = (int64_t)(rnd() % 2001) - 1000; break;
        case IC_F16: ((uint16_t *)p)[i] = f2h((float)v); break;
        case IC_BF16: ((uint16_t *)p)[i] = f2bf((float)v); break;
        case IC_F32: ((float *)p)[i] = (float)v; break;
        case IC_F64: ((double *)p)[i] = v; break;
        default: break;
        }
    }
}

static double getv(const void *p, ic_dtype t, int64_t i) {
    switch (t) {
    case IC_BOOL: case IC_U8: return ((const uint8_t *)p)[i];
    case IC_I8: return ((const int8_t *)p)[i];
    case IC_I16: return ((const int16_t *)p)[i];
    case IC_I32: return ((const int32_t *)p)[i];
    case IC_I64: return (double)((const int64_t *)p)[i];
    case IC_F16: return f16f(((const uint16_t *)p)[i]);
    case IC_BF16: return bf16f(((const uint16_t *)p)[i]);
    case IC_F32: return ((const float *)p)[i];
    case IC_F64: return ((const double *)p)[i];
    default: return 0;
    }
}

static int ndiff, gpu_runs, cpu_skipped;

static void run_gpu(gcase *gc) {
    ic_graph *g = gc->g;
    ic_err e1, e2;
    ic_options oc = {.device = IC_CPU}, og = {.device = IC_CUDA};
    ic_compiled *cg = ic_compile(g, &og, &e2);
    if (gc->expect != IC_OK) {
        CHECK(!cg && e2.code == gc->expect, "%s: expected error %d, got %d (%s)", gc->name, gc->expect,
              cg ? 0 : e2.code, cg ? "compiled" : e2.msg);
        if (cg) ic_compiled_free(cg);
        return;
    }
    CHECK(cg != NULL, "%s: GPU compile failed: %s", gc->name, e2.msg);
    if (!cg) return;
    ic_compiled *cc = ic_compile(g, &oc, &e1);
    int ni = ic_graph_num_inputs(g), no = ic_compiled_num_outputs(cg);
    void *hin[16], *cout[16];
    unsigned long long din[16] = {0}, dout[16] = {0};
    void *dinp[16], *doutp[16];
    size_t obytes[16];
    ic_val inv[16];
    for (int v = 0, i = 0; i < ni; v++)
        if (ic_value_op(g, v) == IC_OP_INPUT) inv[i++] = v;
    for (int i = 0; i < ni; i++) {
        const ic_meta *m = ic_value_meta(g, inv[i]);
        int64_t sp = span_of(m);
        size_t bytes = (size_t)sp * ic_dtype_size(m->dtype);
        hin[i] = calloc(1, bytes + 16);
        fill(hin[i], m->dtype, sp);
        cu.MemAlloc(&din[i], bytes + 256);
        cu.HtoD(din[i], hin[i], bytes);
        dinp[i] = (void *)(uintptr_t)din[i];
    }
    for (int o = 0; o < no; o++) {
        const ic_meta *m = ic_compiled_output_meta(cg, o);
        int64_t n = 1;
        for (int d = 0; d < m->ndim; d++) n *= m->sizes[d];
        obytes[o] = (size_t)n * ic_dtype_size(m->dtype);
        cout[o] = calloc(1, obytes[o] + 16);
        cu.MemAlloc(&dout[o], obytes[o] + 256);
        cu.Memset(dout[o], 0xFF, obytes[o] + 1);
        doutp[o] = (void *)(uintptr_t)dout[o];
    }
    ic_err er;
    int rc = ic_run_stream(cg, dinp, doutp, NULL, &er);
    CHECK(rc == 0, "%s: GPU run: %s", gc->name, er.msg);
    CHECK(cu.Sync() == 0, "%s: synchronize failed (kernel fault?)", gc->name);
    if (getenv("TEST_PTX_BENCH")) {
        double t0 = now();
        for (int it = 0; it < 20; it++) ic_run_stream(cg, dinp, doutp, NULL, &er);
        cu.Sync();
        printf("  %-32s %8.1f us/call\n", gc->name, (now() - t0) / 20 * 1e6);
    }
    gpu_runs++;
    if (!cc) {
        cpu_skipped++;
        if (verbose) printf("  %s: GPU ran; no CPU reference (%s)\n", gc->name, e1.msg);
    } else {
        rc = ic_run(cc, hin, cout, &er);
        CHECK(rc == 0, "%s: CPU run: %s", gc->name, er.msg);
        for (int o = 0; o < no; o++) {
            const ic_meta *m = ic_compiled_output_meta(cg, o);
            void *gout = malloc(obytes[o] + 16);
            cu.DtoH(gout, dout[o], obytes[o]);
            int64_t n = (int64_t)(obytes[o] / ic_dtype_size(m->dtype));
            int bad = 0;
            double worst = 0;
            for (int64_t i = 0; i < n; i++) {
                double a = getv(gout, m->dtype, i), b = getv(cout[o], m->dtype, i);
                if (isnan(a) && isnan(b)) continue;
                /* relative to the value, with an absolute floor at the inputs' scale (~1):
                 * sums in another order differ by a few ulp of their partial sums */
                double d = fabs(a - b), lim = gc->tol * (fabs(b) + 1.0);
                if (m->dtype == IC_BF16 || m->dtype == IC_F16) lim += 1e-2 * fabs(b);
                if (!(d <= lim)) {
                    if (bad < 3)
                        fprintf(stderr, "  %s out%d[%lld]: gpu %.9g cpu %.9g\n", gc->name, o, (long long)i, a, b);
                    bad++;
                }
                if (d > worst) worst = d;
            }
            CHECK(bad == 0, "%s: output %d: %d of %lld elements differ (worst %g)", gc->name, o, bad, (long long)n, worst);
            ndiff += bad;
            free(gout);
        }
        ic_compiled_free(cc);
    }
    for (int i = 0; i < ni; i++) {
        cu.MemFree(din[i]);
        free(hin[i]);
    }
    for (int o = 0; o < no; o++) {
        cu.MemFree(dout[o]);
        free(cout[o]);
    }
    ic_compiled_free(cg);
}

/* ---- disk cache of PTX + launch plans (runtime/gpu_cache.c), no GPU needed ---------------- */
static ic_gpu *fake_gpu(void) {
    ic_gpu *G = calloc(1, sizeof *G);
    G->ptx = strdup("// ptx text\n.version 7.8\n" IC_PTX_SEP "// module 2\n.version 7.8\n");
    G->sm = 90;
    /* two modules: a cubin for the first (every byte value), none for the second */
    G->ncubin = 2;
    G->cubin_sm = 90;
    G->cubin = calloc(2, sizeof *G->cubin);
    G->cubin_len = calloc(2, sizeof *G->cubin_len);
    G->cubin_len[0] = 777;
    G->cubin[0] = malloc(777);
    for (int i = 0; i < 777; i++) G->cubin[0][i] = (char)(i * 37 + 11);
    G->nbufs = 3;
    G->scratch_off = malloc(3 * sizeof(int64_t));
    G->scratch_off[0] = -1, G->scratch_off[1] = 256, G->scratch_off[2] = -1;
    G->nkernels = 2;
    G->k = calloc(2, sizeof(ic_gkernel));
    for (int k = 0; k < 2; k++) {
        G->k[k].nvar = k + 1;
        for (int v = 0; v <= k; v++) {
            ic_gvariant *gv = &G->k[k].v[v];
            snprintf(gv->name, sizeof gv->name, "tc0_k%d%s", k, v ? "" : "v");
            gv->grid = 100u + (unsigned)k, gv->block = 256, gv->vec = v ? 1 : 4;
            gv->nparams = 2;
            gv->params = malloc(2 * sizeof(int));
            gv->params[0] = k, gv->params[1] = 2;
            gv->nalign = v ? 0 : 1;
            gv->align_buf = malloc(sizeof(int));
            gv->align_bytes = malloc(sizeof(int));
            gv->align_buf[0] = 0, gv->align_bytes[0] = 16;
            gv->part_off = k ? 512 : -1;
            gv->cl = k ? 2 : 1;
            gv->dsmem = k ? 65536u : 0u;
            gv->lazy = k == 1 && v == 1; /* the second kernel's scalar fallback: lazy */
            gv->ctr = k == 1;                /* ... and a split partial launch with row counters */
        }
    }
    G->lazy_n = 300; /* its "bitcode" (not parsed by the cache) */
    G->lazy_bc = malloc(G->lazy_n);
    for (int i = 0; i < 300; i++) ((char *)G->lazy_bc)[i] = (char)(i * 13 + 5);
    /* one GEMM choice: the first kernel its template, the second its consumer */
    G->nchoice = 1;
    G->choice = calloc(1, sizeof *G->choice);
    G->choice[0].dflt = IC_CHOICE_TEMPLATE;
    G->choice[0].macs = 123456789;
    G->choice[0].nw = 2;
    G->choice[0].wbuf[0] = 1, G->choice[0].wbuf[1] = 2;
    G->choice[0].wbytes[0] = 1000, G->choice[0].wbytes[1] = 2048;
    G->k[0].choice = 1, G->k[0].role = IC_ROLE_TEMPLATE;
    G->k[1].choice = 1, G->k[1].role = IC_ROLE_CONSUMER;
    G->k[0].split_final = 1;
    G->nctr = 2;
    return G;
}

/* The blob itself behind valid diskcache entries (checksums match): every proper prefix,
 * a trailing byte, and a cubin count other than the PTX's module count are misses; without
 * cubins the entry round-trips with none. Uses key "key-c". */
static void test_cache_blob(ic_gpu *G) {
    ic_dkey k = {0, 0}; /* gpu_cache.c's storage key */
    ic_dkey_mix_str(&k, "TCGPU008");
    ic_dkey_mix_str(&k, "key-c");
    ic_dkey_build_id(&k);
    int64_t ws = 0;
    ic_gcache_put("key-c", G, 64);
    void *blob = NULL;
    size_t len = 0;
    CHECK(ic_diskcache_get("ptx", k, &blob, &len) == 0 && len > 8 && !memcmp(blob, "TCGPU008", 8),
          "cache blob: no TCGPU008 entry under the expected key");
    if (!blob) return;
    int hits = 0;
    for (size_t m = 0; m < len; m++) {
        ic_diskcache_put("ptx", k, blob, m);
        ic_gpu *X = ic_gcache_get("key-c", 3, &ws);
        hits += X != NULL;
        if (X) ic_gpu_free(X);
    }
    CHECK(hits == 0, "cache blob: %d truncated blobs accepted", hits);
    char *longer = malloc(len + 1);
    memcpy(longer, blob, len);
    longer[len] = 0;
    ic_diskcache_put("ptx", k, longer, len + 1);
    ic_gpu *X = ic_gcache_get("key-c", 3, &ws);
    CHECK(X == NULL, "cache blob: a trailing byte accepted");
    if (X) ic_gpu_free(X);
    free(longer);
    ic_diskcache_put("ptx", k, blob, len);
    X = ic_gcache_get("key-c", 3, &ws);
    CHECK(X != NULL && X->ncubin == 2 && X->cubin_len[0] == 777, "cache blob: restored blob not read");
    CHECK(X != NULL && X->nchoice == 1 && X->choice[0].dflt == IC_CHOICE_TEMPLATE && X->choice[0].macs == 123456789 &&
              X->choice[0].nw == 2 && X->choice[0].wbuf[1] == 2 && X->choice[0].wbytes[1] == 2048 &&
              X->choice[0].state == 0 && X->k[0].choice == 1 && X->k[0].role == IC_ROLE_TEMPLATE &&
              X->k[1].role == IC_ROLE_CONSUMER,
          "cache blob: the GEMM choice did not round-trip");
    CHECK(X != NULL && X->k[1].nvar == 2 && X->k[1].v[1].lazy == 1 && X->k[1].v[0].lazy == 0 && X->k[0].v[0].lazy == 0 &&
              X->lazy_n == 300 && !memcmp(X->lazy_bc, G->lazy_bc, 300) && X->lazy_state == 0,
          "cache blob: the lazy fallbacks did not round-trip");
    if (X) ic_gpu_free(X);
    free(blob);
    /* cubins for 3 modules of a 2-module PTX: a miss; no cubins at all: a hit without */
    int nc = G->ncubin;
    G->ncubin = 3;
    char *c3[3] = {G->cubin[0], NULL, NULL};
    size_t l3[3] = {G->cubin_len[0], 0, 0};
    char **c0 = G->cubin;
    size_t *l0 = G->cubin_len;
    G->cubin = c3;
    G->cubin_len = l3;
    ic_gcache_put("key-c", G, 64);
    X = ic_gcache_get("key-c", 3, &ws);
    CHECK(X == NULL, "cache blob: 3 cubins for 2 PTX modules accepted");
    if (X) ic_gpu_free(X);
    G->ncubin = 0;
    ic_gcache_put("key-c", G, 64);
    X = ic_gcache_get("key-c", 3, &ws);
    CHECK(X != NULL && X->ncubin == 0 && !X->cubin && !strcmp(X->ptx, G->ptx),
          "cache blob: no round trip without cubins");
    if (X) ic_gpu_free(X);
    G->ncubin = nc;
    G->cubin = c0;
    G->cubin_len = l0;
    /* a lazy variant without the bitcode, and bitcode without a lazy variant: misses */
    void *bc = G->lazy_bc;
    G->lazy_bc = NULL;
    ic_gcache_put("key-c", G, 64);
    X = ic_gcache_get("key-c", 3, &ws);
    CHECK(X == NULL, "cache blob: a lazy variant without its bitcode accepted");
    if (X) ic_gpu_free(X);
    G->lazy_bc = bc;
    G->k[1].v[1].lazy = 0;
    ic_gcache_put("key-c", G, 64);
    X = ic_gcache_get("key-c", 3, &ws);
    CHECK(X == NULL, "cache blob: lazy bitcode without a lazy variant accepted");
    if (X) ic_gpu_free(X);
    G->k[1].v[1].lazy = 1;
}

/* run_gpu on the first n compilable graphs (of -k's selection) */
static void run_first(int n) {
    for (int i = 0; i < ncases && n > 0; i++)
        if (cases[i].expect == IC_OK && (!only || strstr(cases[i].name, only))) {
            run_gpu(&cases[i]);
            n--;
        }
}

/* Garbles the cubins of every GPU entry under dir (an ELF magic, then zeros: an image the
 * driver refuses) through ic_gcache_get/put, the key read from the entry. The count. */
static int garble_cubins(const char *dir) {
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/ptx", dir);
    DIR *d = opendir(sub);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1600];
        snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        fseek(f, 0, SEEK_END);
        long sz = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *b = sz > 0 ? malloc((size_t)sz) : NULL;
        size_t got = b ? fread(b, 1, (size_t)sz, f) : 0;
        fclose(f);
        /* diskcache header (40 bytes) | "TCGPU008" | u32 key length | key | i64 ws | i32 sm, nk, nbufs */
        uint32_t kl = 0;
        if (b && got == (size_t)sz && sz > 52 && !memcmp(b + 40, "TCGPU008", 8)) memcpy(&kl, b + 48, 4);
        if (kl && (size_t)kl + 52 + 20 <= got) {
            char *key = strndup(b + 52, kl);
            int32_t nbufs = 0;
            memcpy(&nbufs, b + 52 + kl + 16, 4);
            int64_t ws = 0;
            ic_gpu *G = key ? ic_gcache_get(key, nbufs, &ws) : NULL;
            if (G) {
                for (int i = 0; i < G->ncubin; i++)
                    if (G->cubin[i] && G->cubin_len[i] >= 4) {
                        memset(G->cubin[i], 0, G->cubin_len[i]);
                        memcpy(G->cubin[i], "\x7f" "ELF", 4);
                    }
                ic_gcache_put(key, G, ws);
                ic_gpu_free(G);
                n++;
            }
            free(key);
        }
        free(b);
    }
    closedir(d);
    return n;
}

static void test_disk_cache(void) {
    char dir[] = "/tmp/torchc_gcache_XXXXXX";
    if (!mkdtemp(dir)) return;
    char *old = getenv("TORCHC_CACHE_DIR") ? strdup(getenv("TORCHC_CACHE_DIR")) : NULL;
    setenv("TORCHC_CACHE_DIR", dir, 1);
    ic_gpu *G = fake_gpu();
    int64_t ws = 0;
    CHECK(ic_gcache_get("key-a", 3, &ws) == NULL, "cache: hit in an empty directory");
    ic_gcache_put("key-a", G, 4096);
    ic_gpu *H = ic_gcache_get("key-a", 3, &ws);
    CHECK(H != NULL && ws == 4096, "cache: no hit after put");
    if (H) {
        CHECK(!strcmp(H->ptx, G->ptx) && H->nkernels == 2 && H->nbufs == 3 && H->scratch_off[1] == 256,
              "cache: header round trip");
        CHECK(H->ncubin == 2 && H->cubin_sm == 90 && H->cubin && H->cubin_len && H->cubin_len[0] == 777 &&
                  H->cubin[0] && !memcmp(H->cubin[0], G->cubin[0], 777) && !H->cubin[1] && H->cubin_len[1] == 0 &&
                  H->nmod == 0 && !H->mods,
              "cache: cubins round trip");
        for (int k = 0; k < 2; k++)
            for (int v = 0; v < G->k[k].nvar; v++) {
                ic_gvariant *a = &G->k[k].v[v], *b = &H->k[k].v[v];
                CHECK(H->k[k].nvar == G->k[k].nvar && !strcmp(a->name, b->name) && a->grid == b->grid &&
                          a->block == b->block && a->vec == b->vec && a->nparams == b->nparams &&
                          b->params[0] == a->params[0] && b->params[1] == a->params[1] && a->nalign == b->nalign &&
                          (!a->nalign || (b->align_buf[0] == 0 && b->align_bytes[0] == 16)) &&
                          a->part_off == b->part_off && a->cl == b->cl && a->dsmem == b->dsmem &&
                          a->lazy == b->lazy && a->ctr == b->ctr && G->k[k].split_final == H->k[k].split_final,
                      "cache: kernel %d variant %d round trip", k, v);
        CHECK(H->nctr == 2, "cache: %d variants with row counters, not 2", H->nctr);
            }
        ic_gpu_free(H);
    }
    CHECK(ic_gcache_get("key-b", 3, &ws) == NULL, "cache: hit for another key");
    CHECK(ic_gcache_get("key-a", 4, &ws) == NULL, "cache: hit with another buffer count");
    /* corruption: every single flipped byte and every truncation is a miss, never a crash */
    char path[1200];
    {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "ls %s/ptx/*", dir);
        FILE *p = popen(cmd, "r");
        path[0] = 0;
        if (p) {
            if (!fgets(path, sizeof path, p)) path[0] = 0;
            pclose(p);
        }
        path[strcspn(path, "\n")] = 0;
    }
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "cache: entry file %s", path);
    if (f) {
        char buf[4096];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        int hits = 0;
        for (size_t i = 0; i < n; i += 7) {
            buf[i] ^= 0x5a;
            f = fopen(path, "wb");
            fwrite(buf, 1, n, f);
            fclose(f);
            ic_gpu *X = ic_gcache_get("key-a", 3, &ws);
            hits += X != NULL;
            if (X) ic_gpu_free(X);
            buf[i] ^= 0x5a;
        }
        for (size_t m = 0; m < n; m += 13) {
            f = fopen(path, "wb");
            fwrite(buf, 1, m, f);
            fclose(f);
            ic_gpu *X = ic_gcache_get("key-a", 3, &ws);
            hits += X != NULL;
            if (X) ic_gpu_free(X);
        }
        CHECK(hits == 0, "cache: %d corrupted entries accepted", hits);
        f = fopen(path, "wb");
        fwrite(buf, 1, n, f);
        fclose(f);
        ic_gpu *X = ic_gcache_get("key-a", 3, &ws);
        CHECK(X != NULL, "cache: restored entry not read");
        if (X) ic_gpu_free(X);
    }
    test_cache_blob(G); /* after the corruption tests: they take the directory's one entry */
    setenv("TORCHC_CACHE", "0", 1);
    CHECK(ic_gcache_get("key-a", 3, &ws) == NULL, "cache: TORCHC_CACHE=0 still reads");
    unsetenv("TORCHC_CACHE");
    ic_gpu_free(G);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    if (old) setenv("TORCHC_CACHE_DIR", old, 1);
    else unsetenv("TORCHC_CACHE_DIR");
    free(old);
    printf("disk cache: round trip, corruption and key checks done\n");
}

/* ---- thread mappings from linear layouts (codegen/gpu_layout.c), no GPU needed ------------- */
static void check_row_map(int V, int T, int R, bool jlow, int64_t C, int nshfl, unsigned smem) {
    ic_gmap m;
    char err[160];
    int rc = ic_gpu_row_map(&m, V, T, R, jlow, C, err, sizeof err);
    CHECK(rc == 0, "row map V%d T%d R%d: %s", V, T, R, err);
    if (rc) return;
    CHECK(m.vec == V, "row map V%d T%d R%d: vec %d", V, T, R, m.vec);
    CHECK(m.nshfl == nshfl && m.smem_mask == smem, "row map V%d T%d R%d: %d shuffles, smem %#x", V, T, R, m.nshfl,
          m.smem_mask);
    for (int s = 1; s < m.nshfl; s++) CHECK(m.shfl[s] < m.shfl[s - 1], "shuffles not high to low");
    /* every thread: the layout's (col, row) of its first register is (j*V, rl) of the
     * plan's formulas, and j/rl come back from the bit fields codegen extracts */
    int lane = ll_find_in(&m.layout, LL_LANE), warp = ll_find_in(&m.layout, LL_WARP);
    int bad = 0;
    for (int tid = 0; tid < T * R; tid++) {
        uint64_t col = 0, row = 0;
        for (int b = 0; (1 << b) < T * R; b++) {
            if (!(tid >> b & 1)) continue;
            int d = b < 5 ? lane : warp, bit = b < 5 ? b : b - 5;
            col ^= ll_get_basis(&m.layout, d, bit, 0);
            row ^= ll_get_basis(&m.layout, d, bit, 1);
        }
        int j = jlow ? tid % T : tid / R, rl = jlow ? tid / T : tid % R;
        int fj = (tid >> m.j_shift) & (T - 1), frl = (tid >> m.r_shift) & (R - 1);
        bad += col != (uint64_t)j * V || row != (uint64_t)rl || fj != j || frl != rl;
    }
    CHECK(bad == 0, "row map V%d T%d R%d jlow %d: %d threads disagree with the plan", V, T, R, jlow, bad);
}

static void test_layout_maps(void) {
    check_row_map(4, 256, 1, true, 4, 5, 0xE0);   /* softmax 4096 f32: 8 warps per row */
    check_row_map(8, 256, 1, true, 2, 5, 0xE0);   /* bf16 */
    check_row_map(4, 8, 32, true, 1, 3, 0);       /* short rows: 4 rows per warp */
    check_row_map(1, 1, 32, true, 1, 0, 0);       /* one thread per row */
    check_row_map(4, 1024, 1, true, 3, 5, 0x3E0); /* persistent long rows, C not a power of two */
    check_row_map(1, 8, 32, false, 4, 0, 0xE0);   /* x.sum(0): rows on lanes, the row on warps */
    check_row_map(1, 32, 32, false, 1, 0, 0x3E0);
    ic_gmap m;
    char err[160];
    CHECK(ic_gpu_row_map(&m, 3, 32, 1, true, 1, err, sizeof err) != 0, "row map accepts V 3");
    CHECK(ic_gpu_row_map(&m, 4, 8, 2, true, 1, err, sizeof err) != 0, "row map accepts a 16-thread block");
    CHECK(ic_gpu_row_map(&m, 4, 8, 32, false, 1, err, sizeof err) != 0, "rows on lanes accepts V 4");
    int vw[][3] = {{4, 4096, 4}, {4, 6, 2}, {8, 12, 4}, {4, 7, 1}, {1, 64, 1}, {8, 8, 8}, {16, 32, 16}};
    for (size_t i = 0; i < sizeof vw / sizeof vw[0]; i++)
        CHECK(ic_gpu_vec_width(vw[i][0], vw[i][1]) == vw[i][2], "vec width (%d, %d): %d, want %d", vw[i][0],
              vw[i][1], ic_gpu_vec_width(vw[i][0], vw[i][1]), vw[i][2]);
    /* transpose tiles: both phases address the same element at the same offset, the
     * offsets are a bijection of the 1024 slots, and 32-bit tiles are conflict free */
    for (int eb = 8; eb <= 64; eb *= 2) {
        ic_gtile t;
        int rc = ic_gpu_tile_map(&t, eb, err, sizeof err);
        CHECK(rc == 0, "tile map %d bits: %s", eb, err);
        if (rc) continue;
        static int64_t off_of[32][32];
        static uint8_t hit[1024];
        memset(hit, 0, sizeof hit);
        int bad = 0;
        for (int tid = 0; tid < 256; tid++)
            for (int i = 0; i < 4; i++) {
                int64_t o1 = t.st_reg[i], o2 = t.ld_reg[i];
                for (int b = 0; b < 8; b++)
                    if (tid >> b & 1) o1 ^= t.st[b], o2 ^= t.ld[b];
                int tx = tid & 31, ty = tid >> 5;
                if (o1 < 0 || o1 >= 1024 || o2 < 0 || o2 >= 1024) {
                    bad++;
                    continue;
                }
                hit[o1]++;
                off_of[tx][ty + 8 * i] = o1; /* phase 1: c = tx, r = ty + 8i */
                (void)o2;
            }
        for (int o = 0; o < 1024; o++) bad += hit[o] != 1;
        for (int tid = 0; tid < 256; tid++)
            for (int i = 0; i < 4; i++) {
                int64_t o2 = t.ld_reg[i];
                for (int b = 0; b < 8; b++)
                    if (tid >> b & 1) o2 ^= t.ld[b];
                int tx = tid & 31, ty = tid >> 5;
                bad += off_of[ty + 8 * i][tx] != o2; /* phase 2: c = ty + 8i, r = tx */
            }
        CHECK(bad == 0, "tile map %d bits: %d bad offsets", eb, bad);
        if (eb == 32)
            CHECK(t.store_wavefronts == t.store_ideal && t.load_wavefronts == t.load_ideal,
                  "tile map 32 bits: bank conflicts (%d/%d, %d/%d)", t.store_wavefronts, t.store_ideal,
                  t.load_wavefronts, t.load_ideal);
        if (verbose)
            printf("  tile %2d bits: wavefronts store %d (ideal %d) load %d (ideal %d)\n", eb, t.store_wavefronts,
                   t.store_ideal, t.load_wavefronts, t.load_ideal);
    }
    { /* the 64 x 64 word tile of 16-bit pairs: phase 1 writes w(u = 2 lane + h, p = warp + 8i)
       * at reg h + 2i, phase 2 reads w(u = warp + 8i, p = lane) at reg i; every word once,
       * the same slot on both sides, no bank conflicts (words are 32 bits) */
        ic_gtile t;
        int rc = ic_gpu_tile2_map(&t, err, sizeof err);
        CHECK(rc == 0, "tile2 map: %s", err);
        static int64_t off_of[64][32];
        static uint8_t hit[2048];
        memset(hit, 0, sizeof hit);
        int bad = 0, conflicts = 0;
        for (int r = 0; rc == 0 && r < 8; r++)
            for (int w = 0; w < 8; w++) {
                uint32_t banks = 0;
                for (int l = 0; l < 32; l++) {
                    int tid = w * 32 + l;
                    int64_t o = t.st_reg[r];
                    for (int b = 0; b < 8; b++)
                        if (tid >> b & 1) o ^= t.st[b];
                    if (o < 0 || o >= 2048) {
                        bad++;
                        continue;
                    }
                    hit[o]++;
                    conflicts += (banks >> (o & 31) & 1) != 0;
                    banks |= 1u << (o & 31);
                    off_of[2 * l + (r & 1)][w + 8 * (r >> 1)] = o;
                }
            }
        for (int o = 0; rc == 0 && o < 2048; o++) bad += hit[o] != 1;
        for (int i = 0; rc == 0 && i < 8; i++)
            for (int w = 0; w < 8; w++) {
                uint32_t banks = 0;
                for (int l = 0; l < 32; l++) {
                    int tid = w * 32 + l;
                    int64_t o = t.ld_reg[i];
                    for (int b = 0; b < 8; b++)
                        if (tid >> b & 1) o ^= t.ld[b];
                    bad += off_of[w + 8 * i][l] != o;
                    conflicts += (banks >> (o & 31) & 1) != 0;
                    banks |= 1u << (o & 31);
                }
            }
        CHECK(bad == 0 && conflicts == 0, "tile2 map: %d bad offsets, %d bank conflicts", bad, conflicts);
        if (verbose)
            printf("  tile2 words: wavefronts store %d (ideal %d) load %d (ideal %d)\n", t.store_wavefronts,
                   t.store_ideal, t.load_wavefronts, t.load_ideal);
    }
    printf("layouts: row-kernel maps, vector widths and transpose tiles checked\n");
}

/* ---- dump mode (-d DIR) --------------------------------------------------------------------- */
static void dump_text(const char *name, const char *ext, const char *text) {
    char file[1024];
    snprintf(file, sizeof file, "%s/%.64s.%s", dump_dir, name, ext);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL, "%s: cannot write %s", name, file);
    if (!f) return;
    fputs(text ? text : "", f);
    fclose(f);
}

/* the CPU module text: TORCHC_DEBUG=llvm's print on stderr, sent to NAME.cpu.ll for the compile */
static void dump_cpu(gcase *gc) {
    char file[1024];
    snprintf(file, sizeof file, "%s/%.64s.cpu.ll", dump_dir, gc->name);
    fflush(stderr);
    int saved = dup(2);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL && saved >= 0, "%s: cannot write %s", gc->name, file);
    if (!f || saved < 0) {
        if (f) fclose(f);
        if (saved >= 0) close(saved);
        return;
    }
    dup2(fileno(f), 2);
    ic_options o = {.device = IC_CPU, .debug = IC_DEBUG_LLVM};
    ic_err err;
    ic_compiled *cc = ic_compile(gc->g, &o, &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(f);
    char *d = cc ? ic_compiled_describe(cc) : NULL;
    if (!cc) {
        char msg[512];
        snprintf(msg, sizeof msg, "error %d: %s\n", err.code, err.msg);
        dump_text(gc->name, "cpu.txt", msg);
    } else {
        dump_text(gc->name, "cpu.txt", d);
    }
    free(d);
    if (cc) ic_compiled_free(cc);
}

static int dump_corpus(void) {
    mkdir(dump_dir, 0700);
    int n = 0;
    for (int i = 0; i < ncases; i++) {
        gcase *gc = &cases[i];
        if (only && !strstr(gc->name, only)) continue;
        char *t = ic_graph_to_string(gc->g);
        dump_text(gc->name, "graph", t);
        free(t);
        static const int sms[] = {90, 80};
        for (int k = 0; k < 2; k++) {
            ic_err err;
            char *ptx = ic_graph_to_ptx(gc->g, sms[k], &err);
            char ext[32], msg[512];
            snprintf(ext, sizeof ext, "sm%d.ptx", sms[k]);
            if (!ptx) snprintf(msg, sizeof msg, "error %d: %s\n", err.code, err.msg);
            dump_text(gc->name, ext, ptx ? ptx : msg);
            free(ptx);
        }
        dump_cpu(gc);
        n++;
    }
    for (int i = 0; i < ncases; i++) ic_graph_free(cases[i].g);
    printf("test_ptx -d: %d graphs dumped to %s, %d failures\n", n, dump_dir, failures);
    return failures;
}


/* ---- float -> int casts as CUDA eager's (ops.c IC_FP2I_CUDA) ---------------------------------
 * CUDA's static_cast is one cvt.rzi.s32 (to int32, int16, int8) or cvt.rzi.s64 (to int64, and
 * uint8 through int64 as c10's TypeCast.h does): clamped to that range, NaN -> 0, then wrapped.
 * The PTX of each source/destination pair must hold exactly that cvt (not the s64 form before a
 * truncation, which wrapped 3e9 -> int32 to -1294967296 where eager gives 2147483647); on a
 * device, the values of NaN, +-inf and out-of-range floats against that rule. */
/* NaN: 0 where the float and the intermediate integer have one width (cvt.rzi.s32.f32,
 * .s64.f64), the integer's minimum where they differ (.s64.f32, .s32.f64: measured on an H100,
 * where eager's static_cast compiles to the same cvt and gives the same) */
static int64_t cuda_fp2int(double v, ic_dtype from, ic_dtype to) {
    /* NaN: 0 from cvt.rzi.s32.f32 only; the s64 forms and .s32.f64 give the minimum (measured
     * on an H100: f32->i64, f64->i32 and f64->i64 of NaN are INT64_MIN / INT32_MIN) */
    bool wide = to == IC_I64 || to == IC_U8, zero = !wide && from != IC_F64;
    double lo = wide ? -9223372036854775808.0 : -2147483648.0, hi = wide ? 9223372036854775808.0 : 2147483648.0;
    int64_t w = isnan(v) ? (zero ? 0 : wide ? INT64_MIN : INT32_MIN) : v <= lo ? (wide ? INT64_MIN : INT32_MIN) : v >= hi ? (wide ? INT64_MAX : INT32_MAX)
                                                                                : (int64_t)v;
    switch (to) {
    case IC_I32: return (int32_t)w;
    case IC_I16: return (int16_t)w;
    case IC_I8: return (int8_t)w;
    case IC_U8: return (uint8_t)w;
    default: return w;
    }
}

static void test_fp2int_cuda(void) {
    static const ic_dtype srcs[] = {IC_F32, IC_F64, IC_F16, IC_BF16};
    static const ic_dtype dsts[] = {IC_I32, IC_I16, IC_I8, IC_I64, IC_U8};
    static const double vals[] = {NAN, INFINITY, -INFINITY, 3e9, -3e9, 2147483648.0, -2147483649.0, 1e20, -1e20,
                                  9.3e18, 4294967297.0, 70001.0, -70001.0, 300.0, -300.0, 255.9, -129.0, -1.5,
                                  0.75, -0.0, 40000.0, -40000.0, 1e19, -1e19};
    enum { NV = sizeof vals / sizeof vals[0] };
    bool dev = ic_cuda_available() && (cu.lib || cu_open());
    int ran = 0;
    for (int si = 0; si < 4; si++)
        for (int di = 0; di < 5; di++) {
            ic_dtype st = srcs[si], dt = dsts[di];
            ic_graph *g = ic_graph_new();
            ic_output(g, ic_cast(g, in_(g, st, 1, (int64_t[]){NV}), dt));
            ic_err err;
            char *ptx = ic_graph_to_ptx(g, 90, &err);
            CHECK(ptx != NULL, "fp2int %s -> %s: %s", ic_dtype_name(st), ic_dtype_name(dt), err.msg);
            bool wide = dt == IC_I64 || dt == IC_U8;
            char want[32], other[32];
            snprintf(want, sizeof want, "cvt.rzi.s%d.f%d", wide ? 64 : 32, st == IC_F64 ? 64 : 32);
            snprintf(other, sizeof other, "cvt.rzi.s%d.f", wide ? 32 : 64);
            CHECK(ptx && strstr(ptx, want) && !strstr(ptx, other), "fp2int %s -> %s: PTX without %s (or with %s)",
                  ic_dtype_name(st), ic_dtype_name(dt), want, other);
            free(ptx);
            if (dev && st != IC_F16) { /* f16 inputs: the same cvt after the f32 conversion */
                ic_options og = {.device = IC_CUDA};
                ic_compiled *cg = ic_compile(g, &og, &err);
                CHECK(cg != NULL, "fp2int %s -> %s: GPU compile: %s", ic_dtype_name(st), ic_dtype_name(dt), err.msg);
                if (cg) {
                    size_t isz = ic_dtype_size(st), osz = ic_dtype_size(dt);
                    unsigned char hin[NV * 8], hout[NV * 8];
                    double src[NV];
                    for (int i = 0; i < NV; i++) {
                        if (st == IC_F64) ((double *)hin)[i] = src[i] = vals[i];
                        else if (st == IC_F32) ((float *)hin)[i] = (float)vals[i], src[i] = (float)vals[i];
                        else ((uint16_t *)hin)[i] = f2bf((float)vals[i]), src[i] = bf16f(((uint16_t *)hin)[i]);
                        if (st == IC_BF16 && isnan(vals[i])) ((uint16_t *)hin)[i] = 0x7FC0, src[i] = NAN;
                    }
                    unsigned long long din = 0, dout = 0;
                    cu.MemAlloc(&din, NV * isz + 256);
                    cu.MemAlloc(&dout, NV * osz + 256);
                    cu.HtoD(din, hin, NV * isz);
                    void *ip[1] = {(void *)(uintptr_t)din}, *op[1] = {(void *)(uintptr_t)dout};
                    ic_err er;
                    CHECK(ic_run_stream(cg, ip, op, NULL, &er) == 0 && cu.Sync() == 0, "fp2int run: %s", er.msg);
                    cu.DtoH(hout, dout, NV * osz);
                    for (int i = 0; i < NV; i++) {
                        int64_t got = dt == IC_I64 ? ((int64_t *)hout)[i] : (int64_t)getv(hout, dt, i);
                        int64_t want_v = cuda_fp2int(src[i], st, dt);
                        CHECK(got == want_v, "fp2int %s -> %s of %.17g: GPU %lld, CUDA's cvt.rzi gives %lld",
                              ic_dtype_name(st), ic_dtype_name(dt), src[i], (long long)got, (long long)want_v);
                    }
                    cu.MemFree(din);
                    cu.MemFree(dout);
                    ic_compiled_free(cg);
                    ran++;
                }
            }
            ic_graph_free(g);
        }
    printf("fp2int: 20 float -> int casts hold CUDA's cvt.rzi form%s\n", dev ? "" : " (no device: values not run)");
    if (dev) printf("fp2int: %d casts run on the device against CUDA's values\n", ran);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (!strcmp(argv[i], "-s")) keep = 1;
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "-d") && i + 1 < argc) dump_dir = argv[++i];
    }
    if (dump_dir) {
        build_corpus();
        return dump_corpus();
    }
    double t0 = now();
    test_disk_cache();
    test_layout_maps();
    test_fp2int_cuda();
    build_corpus();
    const char *ptxas = find_ptxas();
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/torchc_ptx_%d", (int)getpid());
    if (keep) snprintf(dir, sizeof dir, "/tmp/torchc_ptx");
    if (ptxas) mkdir(dir, 0700);
    int nptx = 0, nasm = 0, nunsup = 0;
    size_t ptx_bytes = 0;
    for (int i = 0; i < ncases; i++) {
        gcase *gc = &cases[i];
        if (only && !strstr(gc->name, only)) continue;
        CHECK(ic_graph_error(gc->g) == NULL, "%s: graph error %s", gc->name, ic_graph_error(gc->g));
        char rt[256]; /* the printed text (the cache key) is complete: parse(print(g)) == g */
        CHECK(ic_graph_error(gc->g) || ic_graph_roundtrip(gc->g, rt, sizeof rt) == 0, "%s: parse(print(g)) != g: %s",
              gc->name, rt);
        ic_err err;
        char *ptx = ic_graph_to_ptx(gc->g, 90, &err);
        if (gc->expect != IC_OK) {
            CHECK(!ptx && err.code == gc->expect, "%s: expected error %d, got %s", gc->name, gc->expect,
                  ptx ? "PTX" : err.msg);
            nunsup++;
            free(ptx);
            continue;
        }
        CHECK(ptx != NULL, "%s: ic_graph_to_ptx: %s", gc->name, err.msg);
        if (!ptx) continue;
        nptx++;
        ptx_bytes += strlen(ptx);
        CHECK(strstr(ptx, ".target sm_90") != NULL, "%s: no .target sm_90", gc->name);
        if (verbose) {
            printf("  %-32s %6zu bytes of PTX\n", gc->name, strlen(ptx));
            ic_options oc = {.device = IC_CPU};
            ic_compiled *cc = ic_compile(gc->g, &oc, &err);
            char *d = cc ? ic_compiled_describe(cc) : NULL;
            if (d) printf("%s", d);
            free(d);
            if (cc) ic_compiled_free(cc);
        }
        if (ptxas) {
            char file[1024];
            snprintf(file, sizeof file, "%s/%.64s.ptx", dir, gc->name);
            FILE *f = fopen(file, "w");
            if (f) {
                fputs(ptx, f);
                fclose(f);
                CHECK(run_ptxas(ptxas, file, gc->name) == 0, "%s: ptxas rejected the PTX", gc->name);
                nasm++;
                if (!keep) unlink(file);
            }
        }
        free(ptx);
    }
    if (ptxas && !keep) rmdir(dir);
    printf("ptx: %d graphs -> PTX (%zu KiB), %d expected-unsupported, ", nptx, ptx_bytes / 1024, nunsup);
    if (ptxas) printf("%d assembled by %s -arch=sm_90\n", nasm, ptxas);
    else printf("ptxas not found: assembly skipped\n");

    if (ic_cuda_available()) {
        if (!cu_open()) {
            CHECK(0, "libcuda loads for torchc but not for the harness");
        } else {
            char cdir[] = "/tmp/torchc_gcache_run_XXXXXX";
            int have_dir = mkdtemp(cdir) != NULL;
            if (have_dir) setenv("TORCHC_CACHE_DIR", cdir, 1);
            for (int i = 0; i < ncases; i++)
                if (!only || strstr(cases[i].name, only)) run_gpu(&cases[i]);
            if (have_dir) { /* the same graphs again: PTX + plans + cubins from the disk cache */
                int h0 = ic_gcache_hits, c0 = ic_gcache_cubin_hits, runs0 = gpu_runs;
                double t1 = now();
                for (int i = 0; i < ncases; i++)
                    if (!only || strstr(cases[i].name, only)) run_gpu(&cases[i]);
                int hits = ic_gcache_hits - h0, cubins = ic_gcache_cubin_hits - c0;
                CHECK(hits > 0 && hits >= (gpu_runs - runs0) / 2, "disk cache: %d hits in %d runs", hits,
                      gpu_runs - runs0);
                CHECK(cubins >= hits, "disk cache: %d modules from cached cubins in %d hits", cubins, hits);
                printf("gpu: second pass from the disk cache: %d hits, %d modules from cubins, %d runs, %.2f s\n",
                       hits, cubins, gpu_runs - runs0, now() - t1);
                /* cubins the driver refuses: the modules come from their PTX, the results stay
                 * right, and the entries are put again with good cubins (a few graphs) */
                int ng = garble_cubins(cdir);
                h0 = ic_gcache_hits, c0 = ic_gcache_cubin_hits;
                run_first(12);
                hits = ic_gcache_hits - h0, cubins = ic_gcache_cubin_hits - c0;
                CHECK(ng > 0 && hits > 0 && cubins == 0, "disk cache: %d garbled entries: %d hits, %d cubins loaded", ng,
                      hits, cubins);
                c0 = ic_gcache_cubin_hits;
                run_first(12);
                cubins = ic_gcache_cubin_hits - c0;
                CHECK(cubins > 0, "disk cache: garbled cubins not replaced (%d loaded after)", cubins);
                printf("gpu: %d entries with garbled cubins: recompiled from PTX, %d modules from cubins after\n", ng,
                       cubins);
                char cmd[256];
                snprintf(cmd, sizeof cmd, "rm -rf %s", cdir);
                if (system(cmd)) {}
                unsetenv("TORCHC_CACHE_DIR");
            }
            printf("gpu: %d graphs run on the device, %d compared with the CPU backend (%d without a CPU "
                   "reference), %d differing elements\n",
                   gpu_runs, gpu_runs - cpu_skipped, cpu_skipped, ndiff);
        }
    } else {
        const char *why = ic_cuda_unavailable_reason();
        CHECK(why && *why, "no reason for the missing driver");
        printf("gpu: skipped (%s)\n", why ? why : "?");
        ic_options o = {.device = IC_CUDA};
        ic_err err;
        ic_compiled *c = ic_compile(cases[0].g, &o, &err);
        CHECK(!c && err.code == IC_EUNSUPPORTED, "compile for IC_CUDA without a driver: %d %s", c ? 0 : err.code,
              err.msg);
        if (c) ic_compiled_free(c);
    }
    for (int i = 0; i < ncases; i++) ic_graph_free(cases[i].g);
    printf("test_ptx: %d checks, %d failures (%.1f s)\n", checks, failures, now() - t0);
    return failures;
}
