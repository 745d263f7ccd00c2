/* test_gemm.c — the GEMM template (inductor_c/codegen/gpu_gemm.c) without a GPU (make ptx-check).
 *
 * 1. Maps: ic_gemm_map_build for every tile configuration; shared-memory accesses (cp.async
 *    stores, ldmatrix row reads) are free of bank conflicts.
 * 2. Simulation: one block of the kernel on the CPU, driven only by the derived maps, with the
 *    PTX ISA's definitions of ldmatrix (.x4, .trans) and mma.m16n8k16 written out here as the
 *    independent reference: global -> shared (swizzled) -> fragments -> mma -> accumulator
 *    registers -> (row, col); compared with a plain matmul (exact on small integers).
 * 3. PTX: GEMM graphs (mm, addmm, linear with/without bias, bmm, baddbmm, matmul; aligned and
 *    not; fused epilogues) through ic_graph_to_ptx with TORCHC_GEMM=template, checked for
 *    mma/ldmatrix/cp.async and assembled with `ptxas -arch=sm_90` when ptxas exists.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ic.h"
#include "ic_device.h"
#include "codegen/gpu_gemm.h"
#include "harness.h"


static const ic_gemm_cfg cfgs[] = {{128, 128, 32, 2, 4, 3}, {64, 64, 32, 2, 2, 4}};

static uint32_t soff(const ic_gemm_smem *s, int row, int col) {
    uint32_t x = 0;
    for (int b = 0; b < 8; b++) {
        if (row >> b & 1) x ^= s->row_off[b];
        if (col >> b & 1) x ^= s->col_off[b];
    }
    return x;
}

static int ilog2i(int x) {
    int l = 0;
    while ((1 << l) < x) l++;
    return l;
}

/* per thread: XOR of per-bit values */
static int xb(int x, const int16_t *v, int n) {
    int r = 0;
    for (int b = 0; b < n; b++)
        if (x >> b & 1) r ^= v[b];
    return r;
}

/* phases of 8 lanes x 16 bytes: distinct 16-byte slots of a 128-byte line */
static bool phase_ok(const uint32_t *elem_off, int n) {
    unsigned seen = 0;
    for (int i = 0; i < n; i++) {
        unsigned slot = (elem_off[i] * 2 / 16) % 8;
        if (seen >> slot & 1) return false;
        seen |= 1u << slot;
    }
    return true;
}

static void check_banks(const ic_gemm_map *M, const ic_gemm_smem *s, const char *what) {
    int ntb = ilog2i(M->nthreads);
    for (int i = 0; i < s->nchunk; i++)
        for (int w = 0; w < M->nthreads / 32; w++)
            for (int ph = 0; ph < 4; ph++) {
                uint32_t o[8];
                for (int q = 0; q < 8; q++) {
                    int tid = w * 32 + ph * 8 + q;
                    o[q] = soff(s, xb(tid, s->tid_row, ntb) ^ s->reg_row[i], xb(tid, s->tid_col, ntb) ^ s->reg_col[i]);
                }
                CHECK(phase_ok(o, 8), "%s: cp.async store conflicts (chunk %d, warp %d, phase %d)", what, i, w, ph);
            }
    /* ldmatrix at every 16x16 region: each matrix (8 lanes) is one phase */
    for (int r0 = 0; r0 < s->rows; r0 += 16)
        for (int c0 = 0; c0 < s->cols; c0 += 16)
            for (int mtx = 0; mtx < 4; mtx++) {
                uint32_t o[8];
                for (int q = 0; q < 8; q++) {
                    int l = mtx * 8 + q;
                    o[q] = soff(s, r0 + xb(l, M->ldm_row, 5), c0 + xb(l, M->ldm_col, 5));
                }
                CHECK(phase_ok(o, 8), "%s: ldmatrix conflicts at (%d, %d) matrix %d", what, r0, c0, mtx);
            }
}

/* ---- the ISA, written out (reference for the simulation) ---------------------------------- */
/* ldmatrix.x4: lane l addresses row l%8 of matrix l/8 (addr[l], element offsets); thread t gets
 * 4 words, word j from matrix j: non-trans elements (row t/4, cols 2(t%4), +1); .trans the
 * same of the transposed matrix: (rows 2(t%4), +1, col t/4). */
static void isa_ldmatrix(const uint16_t *smem, const uint32_t *addr, bool trans, uint16_t out[32][8]) {
    for (int t = 0; t < 32; t++)
        for (int j = 0; j < 4; j++) {
            if (!trans) {
                uint32_t row = addr[8 * j + t / 4];
                out[t][2 * j] = smem[row + 2 * (t % 4)];
                out[t][2 * j + 1] = smem[row + 2 * (t % 4) + 1];
            } else {
                out[t][2 * j] = smem[addr[8 * j + 2 * (t % 4)] + t / 4];
                out[t][2 * j + 1] = smem[addr[8 * j + 2 * (t % 4) + 1] + t / 4];
            }
        }
}

/* mma.m16n8k16 (row.col): a[t][8] (4 words), b[t][4] (2 words), d[t][4] */
static void isa_mma(uint16_t a[32][8], uint16_t b[32][4], float d[32][4]) {
    float A[16][16], Bm[16][8];
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int e = 0; e < 2; e++) {
            A[g][2 * q + e] = a[t][0 + e];
            A[g + 8][2 * q + e] = a[t][2 + e];
            A[g][2 * q + 8 + e] = a[t][4 + e];
            A[g + 8][2 * q + 8 + e] = a[t][6 + e];
            Bm[2 * q + e][g] = b[t][e];
            Bm[2 * q + 8 + e][g] = b[t][2 + e];
        }
    }
    for (int t = 0; t < 32; t++) {
        int g = t / 4, q = t % 4;
        for (int e = 0; e < 4; e++) {
            int row = g + (e >= 2 ? 8 : 0), col = 2 * q + (e & 1);
            float s = 0;
            for (int k = 0; k < 16; k++) s += A[row][k] * Bm[k][col];
            d[t][e] += s;
        }
    }
}

/* One block: A [BM, K] row-major, B [K, BN] (b_nk: stored [BN, K]); small integers. */
static void simulate(const ic_gemm_map *M, bool b_nk, const char *what) {
    const ic_gemm_cfg *cf = &M->cfg;
    int BM = cf->BM, BN = cf->BN, BK = cf->BK, K = 2 * BK, nt = M->nthreads, ntb = ilog2i(nt);
    const ic_gemm_smem *bs = b_nk ? &M->b_nk : &M->b_kn;
    uint16_t *A = malloc(sizeof(uint16_t) * BM * K), *Bg = malloc(sizeof(uint16_t) * K * BN);
    float *ref = calloc((size_t)BM * BN, sizeof(float));
    float *acc = calloc((size_t)nt * M->nacc, sizeof(float));
    uint16_t *sa = calloc((size_t)BM * BK, 2), *sb = calloc((size_t)BN * BK, 2);
    unsigned seed = 12345;
    for (int i = 0; i < BM * K; i++) A[i] = (uint16_t)((seed = seed * 1103515245 + 12345) >> 16) % 5;
    for (int i = 0; i < K * BN; i++) Bg[i] = (uint16_t)((seed = seed * 1103515245 + 12345) >> 16) % 5;
    for (int m = 0; m < BM; m++)
        for (int n = 0; n < BN; n++)
            for (int k = 0; k < K; k++) ref[m * BN + n] += (float)A[m * K + k] * (float)Bg[k * BN + n];
    for (int k0 = 0; k0 < K; k0 += BK) {
        /* cp.async chunks: 8 consecutive columns of a row to 8 consecutive offsets */
        for (int tid = 0; tid < nt; tid++) {
            for (int i = 0; i < M->a.nchunk; i++) {
                int r = xb(tid, M->a.tid_row, ntb) ^ M->a.reg_row[i], c = xb(tid, M->a.tid_col, ntb) ^ M->a.reg_col[i];
                uint32_t o = soff(&M->a, r, c);
                for (int j = 0; j < 8; j++) sa[o + j] = A[r * K + k0 + c + j];
            }
            for (int i = 0; i < bs->nchunk; i++) {
                int r = xb(tid, bs->tid_row, ntb) ^ bs->reg_row[i], c = xb(tid, bs->tid_col, ntb) ^ bs->reg_col[i];
                uint32_t o = soff(bs, r, c);
                for (int j = 0; j < 8; j++) /* rows n, cols k  /  rows k, cols n */
                    sb[o + j] = b_nk ? Bg[(k0 + c + j) * BN + r] : Bg[(k0 + r) * BN + c + j];
            }
        }
        for (int w = 0; w < nt / 32; w++) {
            int wrow = xb(w, M->warp_row, M->nwarp_bits), wcol = xb(w, M->warp_col, M->nwarp_bits);
            for (int ks = 0; ks < BK / 16; ks++) {
                uint16_t af[16][32][8], bf[16][32][4];
                for (int i = 0; i < M->nmt; i++) {
                    uint32_t addr[32];
                    uint16_t out[32][8];
                    for (int l = 0; l < 32; l++)
                        addr[l] = soff(&M->a, wrow + M->mt[i] + xb(l, M->ldm_row, 5), ks * 16 + xb(l, M->ldm_col, 5));
                    isa_ldmatrix(sa, addr, false, out);
                    for (int l = 0; l < 32; l++)
                        for (int q = 0; q < 4; q++) {
                            af[i][l][2 * M->a_word[q]] = out[l][2 * q];
                            af[i][l][2 * M->a_word[q] + 1] = out[l][2 * q + 1];
                        }
                }
                for (int j = 0; j < M->nnt; j += 2) {
                    uint32_t addr[32];
                    uint16_t out[32][8];
                    for (int l = 0; l < 32; l++) {
                        int lr = xb(l, M->ldm_row, 5), lc = xb(l, M->ldm_col, 5);
                        addr[l] = b_nk ? soff(bs, wcol + M->nt[j] + lr, ks * 16 + lc)
                                       : soff(bs, ks * 16 + lr, wcol + M->nt[j] + lc);
                    }
                    isa_ldmatrix(sb, addr, !b_nk, out);
                    const int *bw = M->b_word[b_nk ? 0 : 1];
                    for (int l = 0; l < 32; l++)
                        for (int q = 0; q < 4; q++) {
                            int tgt = j + bw[q] / 2, wi = bw[q] % 2;
                            bf[tgt][l][2 * wi] = out[l][2 * q];
                            bf[tgt][l][2 * wi + 1] = out[l][2 * q + 1];
                        }
                }
                for (int t = 0; t < M->ntile; t++) {
                    int mi = 0, ni = 0;
                    while (M->mt[mi] != M->tile[t].m0) mi++;
                    while (M->nt[ni] != M->tile[t].n0) ni++;
                    float d[32][4];
                    for (int l = 0; l < 32; l++)
                        for (int q = 0; q < 4; q++) d[l][q] = acc[(w * 32 + l) * M->nacc + M->tile[t].d[q]];
                    isa_mma(af[mi], bf[ni], d);
                    for (int l = 0; l < 32; l++)
                        for (int q = 0; q < 4; q++) acc[(w * 32 + l) * M->nacc + M->tile[t].d[q]] = d[l][q];
                }
            }
        }
    }
    int bad = 0, seen = 0;
    for (int tid = 0; tid < nt; tid++) {
        int l = tid % 32, w = tid / 32;
        for (int r = 0; r < M->nacc; r++) {
            int row = M->acc_row[r] ^ xb(l, M->lane_row, 5) ^ xb(w, M->warp_row, M->nwarp_bits);
            int col = M->acc_col[r] ^ xb(l, M->lane_col, 5) ^ xb(w, M->warp_col, M->nwarp_bits);
            if (row >= BM || col >= BN || acc[tid * M->nacc + r] != ref[row * BN + col]) bad++;
            seen++;
        }
    }
    CHECK(bad == 0 && seen == BM * BN, "%s: simulated block differs from the matmul in %d of %d elements", what, bad, seen);
    free(A), free(Bg), free(ref), free(acc), free(sa), free(sb);
}

static void test_maps(void) {
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        ic_gemm_map M;
        char err[200] = "";
        int rc = ic_gemm_map_build(&M, &cfgs[i], err, sizeof err);
        CHECK(rc == 0, "map %zu: %s", i, err);
        if (rc) continue;
        CHECK(M.nacc * M.nthreads == cfgs[i].BM * cfgs[i].BN, "accumulators cover the tile");
        char what[64];
        snprintf(what, sizeof what, "%dx%d A", cfgs[i].BM, cfgs[i].BN);
        check_banks(&M, &M.a, what);
        snprintf(what, sizeof what, "%dx%d B[n][k]", cfgs[i].BM, cfgs[i].BN);
        check_banks(&M, &M.b_nk, what);
        simulate(&M, true, what);
        snprintf(what, sizeof what, "%dx%d B[k][n]", cfgs[i].BM, cfgs[i].BN);
        check_banks(&M, &M.b_kn, what);
        simulate(&M, false, what);
    }
    ic_gemm_map M;
    char err[200];
    ic_gemm_cfg bad = {64, 64, 24, 2, 2, 3};
    CHECK(ic_gemm_map_build(&M, &bad, err, sizeof err) != 0, "BK 24 refused");
}

/* ---- PTX corpus ----------------------------------------------------------------------------- */
static int dummy_handler(const ic_extern_call *call, ic_err *err) {
    (void)call;
    err->code = IC_EUNSUPPORTED;
    snprintf(err->msg, sizeof err->msg, "test_gemm: no extern calls");
    return -1;
}

static ic_val inp(ic_graph *g, ic_dtype t, int nd, const int64_t *sz, const int64_t *st) {
    ic_meta m = {.dtype = t, .ndim = nd};
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        m.sizes[i] = sz[i];
        m.strides[i] = st ? st[i] : s;
        s *= sz[i];
    }
    return ic_input(g, &m);
}
#define SZ(...) (int64_t[]){__VA_ARGS__}
#define ND(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8)
#define IN(g, t, ...) inp(g, t, ND(__VA_ARGS__), SZ(__VA_ARGS__), NULL)

static const char *find_ptxas(void) {
    const char *e = getenv("PTXAS");
    if (e && access(e, X_OK) == 0) return e;
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return "/usr/local/cuda/bin/ptxas";
    return NULL;
}

static void ptx_case(const char *name, ic_graph *g, int want_gemm, const char *ptxas) {
    CHECK(ic_graph_error(g) == NULL, "%s: graph: %s", name, ic_graph_error(g));
    ic_err err;
    char *ptx = ic_graph_to_ptx(g, 90, &err);
    CHECK(ptx != NULL, "%s: ic_graph_to_ptx: %s", name, err.msg);
    if (!ptx) {
        ic_graph_free(g);
        return;
    }
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, "mma.sync.aligned.m16n8k16")); p++) n++;
    CHECK(want_gemm ? n > 0 : n == 0, "%s: %d mma instructions", name, n);
    /* every mma of a kernel comes before its first (predicated) epilogue store: the warp is
     * converged there; LLVM once sank the mma into the stores' branches (a hang on a GPU) */
    for (const char *en = strstr(ptx, ".entry"); en; en = strstr(en + 1, ".entry")) {
        const char *next = strstr(en + 1, ".entry"), *st = strstr(en, "st.global"), *mm = en, *last = NULL;
        while ((mm = strstr(mm + 1, "mma.sync")) && (!next || mm < next)) last = mm;
        CHECK(!last || !st || (next && st > next) || last < st, "%s: an mma after an epilogue store", name);
    }
    if (want_gemm) {
        CHECK(strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4") != NULL, "%s: no ldmatrix", name);
        CHECK(want_gemm < 2 || strstr(ptx, "cp.async.cg.shared.global") != NULL, "%s: no cp.async", name);
    }
    if (ptxas) {
        char file[256], cmd[600];
        snprintf(file, sizeof file, "/tmp/torchc_gemm_%d_%s.ptx", (int)getpid(), name);
        FILE *f = fopen(file, "w");
        if (f) {
            fputs(ptx, f);
            fclose(f);
            snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 '%s' -o /dev/null 2>&1", ptxas, file);
            FILE *pp = popen(cmd, "r");
            char out[4096] = "";
            size_t got = pp ? fread(out, 1, sizeof out - 1, pp) : 0;
            out[got] = 0;
            int st = pp ? pclose(pp) : -1;
            CHECK(st == 0, "%s: ptxas rejected the PTX:\n%s", name, out);
            if (getenv("TEST_GEMM_KEEP")) printf("kept %s\n", file);
            else unlink(file);
        }
    }
    free(ptx);
    ic_graph_free(g);
}

static void test_ptx(void) {
    const char *ptxas = find_ptxas();
    ic_set_extern_handler(dummy_handler);
    setenv("TORCHC_GEMM", "template", 1);
    const ic_dtype BF = IC_BF16, HF = IC_F16;
    ic_graph *g;
    /* mm, aligned: cp.async + fallback */
    g = ic_graph_new();
    {
        ic_val a = IN(g, BF, 256, 128), b = IN(g, BF, 128, 192);
        ic_output(g, ic_extern(g, IC_EXT_MM, 2, (ic_val[]){a, b}, 0, NULL, 1, 1));
    }
    ptx_case("mm_bf16", g, 2, ptxas);
    /* linear + bias + gelu + residual: fused epilogue, f16 */
    g = ic_graph_new();
    {
        ic_val x = IN(g, HF, 4, 32, 64), w = IN(g, HF, 96, 64), bias = IN(g, HF, 96), r = IN(g, HF, 4, 32, 96);
        ic_val y = ic_extern(g, IC_EXT_LINEAR, 3, (ic_val[]){x, w, bias}, 0, NULL, 1, 1);
        ic_output(g, ic_binary(g, IC_OP_ADD, ic_unary(g, IC_OP_GELU, y), r));
    }
    ptx_case("linear_gelu_res_f16", g, 2, ptxas);
    /* odd sizes: per-element variant only */
    g = ic_graph_new();
    {
        ic_val a = IN(g, BF, 7, 13), b = IN(g, BF, 13, 5);
        ic_val y = ic_extern(g, IC_EXT_MM, 2, (ic_val[]){a, b}, 0, NULL, 1, 1);
        ic_output(g, ic_unary(g, IC_OP_RELU, y));
        ic_output(g, y);
    }
    ptx_case("mm_odd_relu", g, 1, ptxas);
    /* addmm alpha/beta, bmm, baddbmm, matmul 3-D x 2-D, silu */
    g = ic_graph_new();
    {
        ic_val c = IN(g, BF, 64, 40), a = IN(g, BF, 64, 48), b = IN(g, BF, 48, 40);
        ic_val y = ic_extern(g, IC_EXT_ADDMM, 3, (ic_val[]){c, a, b}, 0, NULL, 0.5, 2.0);
        ic_output(g, ic_unary(g, IC_OP_SILU, y));
    }
    ptx_case("addmm_silu", g, 2, ptxas);
    g = ic_graph_new();
    {
        ic_val a = IN(g, BF, 3, 33, 40), b = IN(g, BF, 3, 40, 24), c = IN(g, BF, 3, 1, 24);
        ic_output(g, ic_extern(g, IC_EXT_BADDBMM, 3, (ic_val[]){c, a, b}, 0, NULL, 1, 1));
        ic_output(g, ic_extern(g, IC_EXT_BMM, 2, (ic_val[]){a, b}, 0, NULL, 1, 1));
    }
    ptx_case("bmm_baddbmm", g, 2, ptxas);
    g = ic_graph_new();
    {
        ic_val a = IN(g, HF, 2, 8, 64), b = inp(g, HF, 2, SZ(64, 32), SZ(1, 64)); /* b = t([32, 64]) */
        ic_val y = ic_extern(g, IC_EXT_MATMUL, 2, (ic_val[]){a, b}, 0, NULL, 1, 1);
        ic_output(g, ic_binary(g, IC_OP_MUL, y, ic_scalar(g, 2.0, IC_F64)));
    }
    ptx_case("matmul_bt_scale", g, 2, ptxas);
    /* f32 stays on the extern path */
    g = ic_graph_new();
    {
        ic_val a = IN(g, IC_F32, 64, 64), b = IN(g, IC_F32, 64, 64);
        ic_output(g, ic_unary(g, IC_OP_RELU, ic_extern(g, IC_EXT_MM, 2, (ic_val[]){a, b}, 0, NULL, 1, 1)));
    }
    ptx_case("mm_f32_extern", g, 0, ptxas);
    /* big tile configuration */
    g = ic_graph_new();
    {
        ic_val a = IN(g, BF, 4096, 768), b = IN(g, BF, 3072, 768);
        ic_output(g, ic_unary(g, IC_OP_GELU, ic_extern(g, IC_EXT_LINEAR, 2, (ic_val[]){a, b}, 0, NULL, 1, 1)));
    }
    ptx_case("linear_big_gelu", g, 2, ptxas);
    unsetenv("TORCHC_GEMM");
    ic_set_extern_handler(NULL);
    printf("gemm ptx: %s\n", ptxas ? "assembled by ptxas -arch=sm_90" : "ptxas not found: assembly skipped");
}

int main(void) {
    test_maps();
    test_ptx();
    printf("test_gemm: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
