/* gpu_gemm.c — the tensor-core GEMM template (f16/bf16 in, f32 accumulate) for NVPTX.
 *
 * Requires: an extern matmul kernel (is_ext) with planned buffers; sm_80 or newer (the
 *   caller checks). Produces: the LLVM IR body of one kernel; gpu_nvptx.c owns the function,
 *   its parameters, the launch plan and the fused epilogue (ic_gemm_epi). Breaks: nothing.
 *
 * The kernel, one block per BM x BN output tile (grouped raster: GROUP tile rows share the
 * B columns in L2), WM x WN warps:
 *
 *   prologue   cp.async K tiles 0 .. S-2 into stages 0 .. S-2          (one group each)
 *   loop kt    wait_group S-2; bar.sync; cp.async tile kt+S-1 into stage (kt+S-1) % S;
 *              for each k16 step: ldmatrix.x4 A fragments, ldmatrix.x4[.trans] B fragments,
 *              mma.sync.m16n8k16 on every (m16, n8) tile of the warp
 *   epilogue   alpha * acc + beta * bias, rounded to the output dtype; stored, and/or handed
 *              to gpu_nvptx.c (the next pointwise kernel evaluated on the value)
 *
 * Where each value lives comes from layouts/ (ic_gemm_map_build), never from tables typed in
 * here: the accumulator registers of a thread are ll_mma_accumulator's register bases; an
 * mma instruction's operand order is ll_mma_operand / ll_mma_accumulator of one 16x16 /
 * 16x8 tile; which ldmatrix result word feeds which instruction word is found by matching
 * ll_ldmatrix's coordinates against those (for every lane); the lane addresses of ldmatrix
 * are ll_ldmatrix_addr; shared offsets are the inverse of ll_nvmma_shared (linear over F2, so
 * offset(row, col) is an XOR of per-bit bases and a thread's part is computed once); each
 * thread's cp.async chunks are ll_blocked. Bit fields combine by XOR as the layouts do
 * (origins, tiles and lanes occupy disjoint bits: checked).
 *
 * Edges: rows/columns past M, N and K are masked: cp.async copies only the valid bytes of a
 * 16-byte chunk and zero-fills the rest (src-size), the per-element variant loads under a
 * predicate; stores are predicated. The cp.async variant needs 16-byte aligned chunks: the
 * contiguous operand dim has stride 1 and the others multiples of 8 (ic_gemm_match), and
 * the A / B base pointers 16-byte aligned (checked per call by the runtime, which takes the
 * per-element variant otherwise).
 */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "../../layouts/ll.h"
#define IC_GEMM_EMIT
#include "gpu_gemm.h"

#define GROUP 8 /* tile rows per raster group */

/* ---- maps from layouts/ ------------------------------------------------------------------ */
static int fail(char *err, size_t n, const char *msg) {
    snprintf(err, n, "gemm layouts: %s", msg);
    return -1;
}

/* XOR of the bases of `in` dim i over the set bits of v, as (dim0, dim1) */
static void at(const ll_layout *L, int i, uint64_t v, int *d0, int *d1) {
    int o0 = ll_find_out(L, "dim0"), o1 = ll_find_out(L, "dim1");
    uint64_t a = 0, b = 0;
    for (int bit = 0; i >= 0 && v; bit++, v >>= 1) {
        if (!(v & 1)) continue;
        a ^= ll_get_basis(L, i, bit, o0);
        b ^= ll_get_basis(L, i, bit, o1);
    }
    *d0 = (int)a;
    *d1 = (int)b;
}

static int in_size(const ll_layout *L, const char *name) {
    int i = ll_find_in(L, name);
    return i < 0 ? 1 : (int)ll_in_size(L, i);
}

static int ilog2i(int x) {
    int l = 0;
    while ((1 << l) < x) l++;
    return l;
}

/* the shared tile of one operand: swizzle, inverse bases, cp.async chunks */
static int smem_map(ic_gemm_smem *s, int rows, int cols, int nthreads, char *err, size_t n) {
    memset(s, 0, sizeof *s);
    s->rows = rows;
    s->cols = cols;
    s->swizzle_bytes = cols * 2 >= 128 ? 128 : cols * 2;
    ll_layout L;
    int64_t shape[2] = {rows, cols};
    if (ll_nvmma_shared(&L, 2, shape, 16, s->swizzle_bytes, false, NULL) != LL_OK) return fail(err, n, "nvmma_shared");
    int off = ll_find_in(&L, LL_OFFSET);
    if (off < 0 || (int)ll_in_size(&L, off) != rows * cols) return fail(err, n, "shared layout size");
    uint32_t *inv = malloc((size_t)rows * cols * sizeof *inv);
    if (!inv) return fail(err, n, "out of memory");
    for (int o = 0; o < rows * cols; o++) {
        int r, c;
        at(&L, off, (uint64_t)o, &r, &c);
        inv[r * cols + c] = (uint32_t)o;
    }
    int lr = ilog2i(rows), lc = ilog2i(cols);
    for (int b = 0; b < lr; b++) s->row_off[b] = inv[(1 << b) * cols];
    for (int b = 0; b < lc; b++) s->col_off[b] = inv[1 << b];
    int bad = 0;
    for (int r = 0; r < rows && !bad; r++)
        for (int c = 0; c < cols; c++) {
            uint32_t x = 0;
            for (int b = 0; b < lr; b++)
                if (r >> b & 1) x ^= s->row_off[b];
            for (int b = 0; b < lc; b++)
                if (c >> b & 1) x ^= s->col_off[b];
            if (x != inv[r * cols + c]) bad = 1;
        }
    free(inv);
    if (bad) return fail(err, n, "shared layout is not linear");
    if (s->col_off[0] != 1 || s->col_off[1] != 2 || s->col_off[2] != 4)
        return fail(err, n, "8 consecutive columns are not contiguous in shared memory");
    /* cp.async: 8-element chunks, consecutive threads along the row */
    int tc = cols / 8 > 32 ? 32 : cols / 8, nw = nthreads / 32;
    int64_t bshape[2] = {rows, cols};
    int spt[2] = {1, 8}, tpw[2] = {32 / tc, tc}, wpc[2] = {nw, 1}, order[2] = {1, 0};
    if (rows * cols / 8 % nthreads) return fail(err, n, "chunks do not divide among the threads");
    ll_layout B;
    if (ll_blocked(&B, 2, bshape, spt, tpw, wpc, order, NULL) != LL_OK) return fail(err, n, "blocked");
    int reg = ll_find_in(&B, LL_REGISTER), lane = ll_find_in(&B, LL_LANE), warp = ll_find_in(&B, LL_WARP);
    int nreg = in_size(&B, LL_REGISTER);
    if (nreg != 8 * (rows * cols / 8 / nthreads)) return fail(err, n, "blocked registers");
    for (int b = 0; b < 3; b++) {
        int r, c;
        at(&B, reg, 1u << b, &r, &c);
        if (r != 0 || c != 1 << b) return fail(err, n, "a chunk is not 8 consecutive columns");
    }
    s->nchunk = nreg / 8;
    if (s->nchunk > 16) return fail(err, n, "too many chunks per thread");
    for (int i = 0; i < s->nchunk; i++) {
        int r, c;
        at(&B, reg, (uint64_t)i << 3, &r, &c);
        s->reg_row[i] = (int16_t)r;
        s->reg_col[i] = (int16_t)c;
    }
    int ntb = ilog2i(nthreads);
    for (int b = 0; b < ntb; b++) {
        int r, c;
        if (b < 5) at(&B, lane, 1u << b, &r, &c);
        else at(&B, warp, 1u << (b - 5), &r, &c);
        s->tid_row[b] = (int16_t)r;
        s->tid_col[b] = (int16_t)c;
    }
    return 0;
}

/* ldmatrix element e of lane l -> instruction operand element: the word map of one x4 load.
 * ins: the instruction's operand layout (one tile), out dims (K, MN) for B or (M, K) for A;
 * rc_to: how a shared (row, col) maps to ins's (dim0, dim1) and which n8 subtile. */
static int word_map(const ll_layout *ldm, const ll_layout *ins, int kind, int *word, char *err, size_t n) {
    /* kind 0: A, shared [m][k]; 1: B shared [n][k]; 2: B shared [k][n] */
    int lreg = ll_find_in(ldm, LL_REGISTER), llane = ll_find_in(ldm, LL_LANE);
    int ireg = ll_find_in(ins, LL_REGISTER), ilane = ll_find_in(ins, LL_LANE);
    int ni = in_size(ins, LL_REGISTER);
    for (int e = 0; e < 8; e++) {
        int found = -1, sub = 0;
        for (int l = 0; l < 32; l++) {
            int r0, c0, r1, c1;
            at(ldm, lreg, (uint64_t)e, &r0, &c0);
            at(ldm, llane, (uint64_t)l, &r1, &c1);
            int row = r0 ^ r1, col = c0 ^ c1;
            int t0, t1; /* wanted instruction coordinates */
            if (kind == 0) t0 = row, t1 = col, sub = 0;
            else if (kind == 1) t0 = col, t1 = row & 7, sub = row >> 3;
            else t0 = row, t1 = col & 7, sub = col >> 3;
            int hit = -1;
            for (int i = 0; i < ni && hit < 0; i++) {
                int a0, a1, b0, b1;
                at(ins, ireg, (uint64_t)i, &a0, &a1);
                at(ins, ilane, (uint64_t)l, &b0, &b1);
                if ((a0 ^ b0) == t0 && (a1 ^ b1) == t1) hit = i;
            }
            if (hit < 0 || (found >= 0 && hit != found)) return fail(err, n, "ldmatrix does not match the mma fragment");
            found = hit;
        }
        if ((found & 1) != (e & 1)) return fail(err, n, "ldmatrix pairs are not mma pairs");
        int w = sub * 2 + found / 2;
        if (e & 1) {
            if (word[e / 2] != w) return fail(err, n, "ldmatrix word splits across mma words");
        } else {
            word[e / 2] = w;
        }
    }
    return 0;
}

/* The block's accumulator: one warp's tile ll_mma_accumulator([BM/WM, BN/WN]) (the m16n8
 * tile repeated in registers), times the warps row-major (along N first, as mma.sync's
 * layouts order them) on top: each warp owns one contiguous BM/WM x BN/WN tile, so its
 * n8 tiles pair into 16-column ldmatrix.x4 loads of B. */
static int block_acc(ll_layout *L, int BM, int BN, int WM, int WN) {
    int64_t wt[2] = {BM / WM, BN / WN};
    int one[2] = {1, 1};
    ll_layout x, y;
    const char *names[2] = {"dim0", "dim1"};
    int rc = ll_mma_accumulator(L, 2, wt, one, 8, NULL);
    if (!rc) rc = ll_identity1d(&x, (uint64_t)WN, LL_WARP, "dim1");
    if (!rc) rc = ll_identity1d(&y, (uint64_t)WM, LL_WARP, "dim0");
    if (!rc) rc = ll_product(&x, &x, &y);
    if (!rc) rc = ll_transpose_outs(&x, &x, 2, names);
    if (!rc) rc = ll_product(L, L, &x);
    return rc;
}

int ic_gemm_map_build(ic_gemm_map *m, const ic_gemm_cfg *cfg, char *err, size_t errn) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    int BM = cfg->BM, BN = cfg->BN, BK = cfg->BK, WM = cfg->WM, WN = cfg->WN;
    if (BK % 16 || (BM / WM) % 16 || (BN / WN) % 16 || cfg->stages < 2) return fail(err, errn, "bad tile configuration");
    m->nthreads = 32 * WM * WN;
    ll_layout acc, D, IA, IB, LD[2], AD;
    int64_t s_d[2] = {16, 8}, s_a[2] = {16, 16}, s_b[2] = {16, 8};
    int one[2] = {1, 1};
    if (block_acc(&acc, BM, BN, WM, WN) || ll_mma_accumulator(&D, 2, s_d, one, 8, NULL) ||
        ll_mma_operand(&IA, 2, 0, s_a, one, 16, 0, NULL) || ll_mma_operand(&IB, 2, 1, s_b, one, 16, 0, NULL) ||
        ll_ldmatrix(&LD[0], 4, false) || ll_ldmatrix(&LD[1], 4, true) || ll_ldmatrix_addr(&AD, 4, false))
        return fail(err, errn, "a layout could not be built");
    int reg = ll_find_in(&acc, LL_REGISTER), lane = ll_find_in(&acc, LL_LANE), warp = ll_find_in(&acc, LL_WARP);
    m->nacc = in_size(&acc, LL_REGISTER);
    if (m->nacc > 128 || in_size(&acc, LL_WARP) != WM * WN) return fail(err, errn, "accumulator size");
    for (int r = 0; r < m->nacc; r++) {
        int a, b;
        at(&acc, reg, (uint64_t)r, &a, &b);
        m->acc_row[r] = (int16_t)a;
        m->acc_col[r] = (int16_t)b;
    }
    int dl = ll_find_in(&D, LL_LANE), dr = ll_find_in(&D, LL_REGISTER);
    for (int b = 0; b < 5; b++) {
        int a0, a1, d0, d1;
        at(&acc, lane, 1u << b, &a0, &a1);
        at(&D, dl, 1u << b, &d0, &d1);
        if (a0 != d0 || a1 != d1) return fail(err, errn, "accumulator lanes differ from the mma's");
        m->lane_row[b] = (int16_t)a0;
        m->lane_col[b] = (int16_t)a1;
    }
    m->nwarp_bits = ilog2i(WM * WN);
    int wr = BM / WM, wc = BN / WN;
    for (int b = 0; b < m->nwarp_bits; b++) {
        int a0, a1;
        at(&acc, warp, 1u << b, &a0, &a1);
        if (a0 % wr || a1 % wc) return fail(err, errn, "a warp origin inside another warp's tile");
        m->warp_row[b] = (int16_t)a0;
        m->warp_col[b] = (int16_t)a1;
    }
    /* group registers into mma tiles: d_i of the instruction = ll_mma_accumulator([16, 8]) */
    for (int r = 0; r < m->nacc; r++) {
        int row = m->acc_row[r], col = m->acc_col[r];
        int m0 = row & ~15, n0 = col & ~7, i = -1;
        if (m0 >= wr || n0 >= wc) return fail(err, errn, "a register outside the warp's tile");
        for (int q = 0; q < 4; q++) {
            int a, b;
            at(&D, dr, (uint64_t)q, &a, &b);
            if (a == (row & 15) && b == (col & 7)) i = q;
        }
        if (i < 0) return fail(err, errn, "a register is no mma result");
        int t = 0;
        while (t < m->ntile && (m->tile[t].m0 != m0 || m->tile[t].n0 != n0)) t++;
        if (t == m->ntile) {
            if (m->ntile == 64) return fail(err, errn, "too many mma tiles");
            m->tile[t].m0 = (int16_t)m0;
            m->tile[t].n0 = (int16_t)n0;
            memset(m->tile[t].d, 0xFF, 4);
            m->ntile++;
        }
        if (m->tile[t].d[i] != 0xFF) return fail(err, errn, "two registers for one mma result");
        m->tile[t].d[i] = (uint8_t)r;
    }
    for (int t = 0; t < m->ntile; t++) {
        for (int i = 0; i < 4; i++)
            if (m->tile[t].d[i] == 0xFF) return fail(err, errn, "an mma result without a register");
        if (m->acc_col[m->tile[t].d[1]] != m->acc_col[m->tile[t].d[0]] + 1 ||
            m->acc_row[m->tile[t].d[1]] != m->acc_row[m->tile[t].d[0]])
            return fail(err, errn, "d0, d1 are not adjacent columns");
        int k;
        for (k = 0; k < m->nmt && m->mt[k] != m->tile[t].m0; k++) {}
        if (k == m->nmt) m->mt[m->nmt++] = m->tile[t].m0;
        for (k = 0; k < m->nnt && m->nt[k] != m->tile[t].n0; k++) {}
        if (k == m->nnt) m->nt[m->nnt++] = m->tile[t].n0;
        if (m->nmt > 16 || m->nnt > 16) return fail(err, errn, "too many tile rows/columns");
    }
    if (m->nmt * m->nnt != m->ntile) return fail(err, errn, "the warp's tiles are no grid");
    /* sort; B columns pair into 16-wide x4 loads */
    for (int i = 1; i < m->nmt; i++)
        for (int j = i; j > 0 && m->mt[j - 1] > m->mt[j]; j--) {
            int16_t x = m->mt[j]; m->mt[j] = m->mt[j - 1]; m->mt[j - 1] = x;
        }
    for (int i = 1; i < m->nnt; i++)
        for (int j = i; j > 0 && m->nt[j - 1] > m->nt[j]; j--) {
            int16_t x = m->nt[j]; m->nt[j] = m->nt[j - 1]; m->nt[j - 1] = x;
        }
    if (m->nnt % 2) return fail(err, errn, "odd number of n8 tiles");
    for (int i = 0; i < m->nnt; i += 2)
        if (m->nt[i] % 16 || m->nt[i + 1] != m->nt[i] + 8) return fail(err, errn, "n8 tiles do not pair");
    for (int i = 0; i < m->nmt; i++)
        if (m->mt[i] % 16) return fail(err, errn, "m16 tiles misaligned");
    /* ldmatrix lane addresses (16 x 16 region) */
    int al = ll_find_in(&AD, LL_LANE);
    for (int b = 0; b < 5; b++) {
        int r, c;
        at(&AD, al, 1u << b, &r, &c);
        m->ldm_row[b] = (int16_t)r;
        m->ldm_col[b] = (int16_t)c;
    }
    if (word_map(&LD[0], &IA, 0, m->a_word, err, errn) || word_map(&LD[0], &IB, 1, m->b_word[0], err, errn) ||
        word_map(&LD[1], &IB, 2, m->b_word[1], err, errn))
        return -1;
    if (smem_map(&m->a, BM, BK, m->nthreads, err, errn) || smem_map(&m->b_nk, BN, BK, m->nthreads, err, errn) ||
        smem_map(&m->b_kn, BK, BN, m->nthreads, err, errn))
        return -1;
    return 0;
}

/* ---- which extern nodes ----------------------------------------------------------------- */
static bool unit(int64_t s, int64_t size) { return size <= 1 || s == 1; }
static bool mult8(int64_t s, int64_t size) { return size <= 1 || s % 8 == 0; }

/* the leading dims of x ([..., K]) folded into one of `rows`: its stride, or -1 when they
 * do not fold (size-1 dims are skipped) */
static int64_t fold_rows(const ic_meta *x, int64_t *rows) {
    int64_t r = 1, st = 0, span = -1;
    for (int d = x->ndim - 2; d >= 0; d--) {
        r *= x->sizes[d];
        if (x->sizes[d] == 1) continue;
        if (span < 0) st = x->strides[d];
        else if (x->strides[d] != span) return -1;
        span = x->strides[d] * x->sizes[d];
    }
    *rows = r;
    return st;
}

/* bias strides for out dims (b, m, n): right-aligned broadcast of meta over `nd` out dims */
static void bias_strides(const ic_meta *x, int nd, const int *outpos, int64_t *sc) {
    sc[0] = sc[1] = sc[2] = 0;
    for (int i = 0; i < x->ndim; i++) {
        int od = nd - x->ndim + i;
        if (od < 0 || x->sizes[i] == 1) continue;
        sc[outpos[od]] = x->strides[i];
    }
}

int ic_gemm_match(ic_ctx *c, const ic_kernel *k, int nsm, ic_gemm *G) {
    memset(G, 0, sizeof *G);
    if (!k->is_ext) return -1;
    const ic_node *nd = &c->g->nodes[k->ext_v];
    ic_dtype dt = nd->meta.dtype;
    if (dt != IC_F16 && dt != IC_BF16) return -1;
    int nin = 0;
    const ic_meta *m[3];
    int buf[3];
    for (int i = 0; i < 3 && nd->in[i] >= 0; i++) {
        buf[i] = c->buf_of[nd->in[i]];
        if (buf[i] < 0) return -1;
        m[i] = &c->bufs[buf[i]].meta;
        if (m[i]->dtype != dt) return -1;
        nin++;
    }
    G->dt = dt;
    G->alpha = 1;
    G->beta = 1;
    G->bias_buf = -1;
    G->batch = 1;
    const ic_meta *A, *Bm, *X = NULL;
    int ia, ib;
    int kind = nd->ext_kind;
    bool lin = false; /* B is [N, K] */
    if (kind == IC_EXT_MATMUL) {
        if (nin != 2 || m[1]->ndim != 2 || m[0]->ndim < 2) {
            if (!(nin == 2 && m[0]->ndim == 3 && m[1]->ndim == 3 && m[0]->sizes[0] == m[1]->sizes[0])) return -1;
            kind = IC_EXT_BMM;
        } else {
            kind = IC_EXT_LINEAR; /* [..., M, K] @ [K, N]: rows folded, B not transposed */
        }
    } else if (kind == IC_EXT_LINEAR) {
        lin = true;
    }
    switch (kind) {
    case IC_EXT_MM: ia = 0, ib = 1; break;
    case IC_EXT_BMM: ia = 0, ib = 1; break;
    case IC_EXT_ADDMM: case IC_EXT_BADDBMM: ia = 1, ib = 2, X = m[0], G->bias_buf = buf[0];
        G->alpha = nd->num2, G->beta = nd->num; break;
    case IC_EXT_LINEAR: ia = 0, ib = 1;
        if (nin == 3) X = m[2], G->bias_buf = buf[2];
        break;
    default: return -1;
    }
    A = m[ia];
    Bm = m[ib];
    G->a_buf = buf[ia];
    G->b_buf = buf[ib];
    G->out_buf = c->buf_of[k->ext_v];
    if (G->out_buf < 0) return -1;
    int outpos3[3] = {0, 1, 2}, outpos2[2] = {1, 2}, outpos1[1] = {2};
    if (kind == IC_EXT_BMM || kind == IC_EXT_BADDBMM) {
        if (A->ndim != 3 || Bm->ndim != 3) return -1;
        G->batch = A->sizes[0];
        G->M = A->sizes[1], G->K = A->sizes[2], G->N = Bm->sizes[2];
        G->sa[0] = A->strides[0], G->sa[1] = A->strides[1], G->sa[2] = A->strides[2];
        G->sb[0] = Bm->strides[0], G->sb[1] = Bm->strides[1], G->sb[2] = Bm->strides[2];
        if (X) bias_strides(X, 3, outpos3, G->sc);
    } else if (kind == IC_EXT_LINEAR) {
        if (Bm->ndim != 2 || A->ndim < 1) return -1;
        int64_t rows;
        int64_t st = fold_rows(A, &rows);
        if (st < 0) return -1;
        G->M = rows, G->K = A->sizes[A->ndim - 1];
        G->sa[1] = st, G->sa[2] = A->strides[A->ndim - 1];
        if (lin) { /* w [N, K] */
            G->N = Bm->sizes[0];
            G->sb[1] = Bm->strides[1], G->sb[2] = Bm->strides[0];
        } else {
            G->N = Bm->sizes[1];
            G->sb[1] = Bm->strides[0], G->sb[2] = Bm->strides[1];
        }
        if (X) {
            if (lin) bias_strides(X, 1, outpos1, G->sc);
            else bias_strides(X, 2, outpos2, G->sc);
        }
    } else {
        if (A->ndim != 2 || Bm->ndim != 2) return -1;
        G->M = A->sizes[0], G->K = A->sizes[1], G->N = Bm->sizes[1];
        G->sa[1] = A->strides[0], G->sa[2] = A->strides[1];
        G->sb[1] = Bm->strides[0], G->sb[2] = Bm->strides[1];
        if (X) bias_strides(X, 2, outpos2, G->sc);
    }
    if (G->M < 1 || G->N < 1 || G->K < 1 || G->batch < 1) return -1;
    if (G->beta == 0) G->bias_buf = -1; /* torch ignores the bias (even NaN) */
    /* index math in i64; tiles in i32 */
    if (G->batch * ((G->M + 127) / 128) * ((G->N + 127) / 128) > 0x7FFFFFFF || G->M > 0x7FFFFFF || G->N > 0x7FFFFFF)
        return -1;
    for (int i = 0; i < 3; i++)
        if (G->sa[i] < 0 || G->sb[i] < 0 || G->sc[i] < 0) return -1;
    bool a_ok = unit(G->sa[2], G->K) && mult8(G->sa[1], G->M) && mult8(G->sa[0], G->batch);
    bool bkn = unit(G->sb[2], G->N) && mult8(G->sb[1], G->K) && mult8(G->sb[0], G->batch);
    bool bnk = unit(G->sb[1], G->K) && mult8(G->sb[2], G->N) && mult8(G->sb[0], G->batch);
    G->fast_ok = a_ok && (bkn || bnk);
    /* B staged K-contiguous ([n][k]) when it is so in memory (the linear weight) */
    G->b_nk = G->fast_ok ? bnk && (!bkn || lin) : G->K > 1 && G->sb[1] == 1;
    /* tiles: 128 x 128 (8 warps, 3 stages) when that fills the device, else 64 x 64 */
    int64_t big = G->batch * ((G->M + 127) / 128) * ((G->N + 127) / 128);
    if (big >= nsm) G->cfg = (ic_gemm_cfg){128, 128, 32, 2, 4, 3};
    else G->cfg = (ic_gemm_cfg){64, 64, 32, 2, 2, 4};
    return 0;
}

/* ---- emission ------------------------------------------------------------------------------ */
typedef struct em {
    cg *C;
    LLVMBuilderRef b;
    const ic_gemm *G;
    const ic_gemm_map *M;
    LLVMBasicBlockRef entry;
    LLVMTypeRef i16, i32, i64, f32;
    LLVMValueRef smem;       /* i32 shared address of the stages */
    LLVMValueRef tid, lane, warp;
    LLVMValueRef bb, tm0, tn0; /* batch, first row / column of the tile (i64) */
    int a_bytes, b_bytes, stage_bytes;
    const ic_gemm_smem *bs;  /* B's shared tile: b_nk or b_kn */
} em;

#define Bd e->b

static LLVMValueRef k32(em *e, long long v) { return LLVMConstInt(e->i32, (unsigned long long)v, 1); }
static LLVMValueRef k64(em *e, long long v) { return LLVMConstInt(e->i64, (unsigned long long)v, 1); }
static LLVMValueRef sel(em *e, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildSelect(Bd, c, a, b, ""); }
static LLVMValueRef z64(em *e, LLVMValueRef v) { return LLVMBuildZExt(Bd, v, e->i64, ""); }

static LLVMValueRef asm_(em *e, LLVMTypeRef ret, LLVMValueRef *args, int n, const char *text, const char *cons,
                         bool side) {
    LLVMTypeRef at[16];
    for (int i = 0; i < n; i++) at[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef ft = LLVMFunctionType(ret, at, (unsigned)n, 0);
    LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, strlen(text), (char *)cons, strlen(cons), side, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(Bd, ft, ia, args, (unsigned)n, "");
    /* .sync.aligned instructions need the whole warp: never moved under a branch */
    unsigned kc = LLVMGetEnumAttributeKindForName("convergent", 10);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(e->C->ctx, kc, 0));
    return call;
}

static LLVMValueRef sreg(em *e, const char *name) {
    LLVMTypeRef ft = LLVMFunctionType(e->i32, NULL, 0, 0);
    LLVMValueRef f = LLVMGetNamedFunction(e->C->mod, name);
    if (!f) f = LLVMAddFunction(e->C->mod, name, ft);
    return LLVMBuildCall2(Bd, ft, f, NULL, 0, "");
}

static void barrier(em *e) {
    LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(e->C->ctx), NULL, 0, 0);
    LLVMValueRef f = LLVMGetNamedFunction(e->C->mod, "llvm.nvvm.barrier0");
    if (!f) f = LLVMAddFunction(e->C->mod, "llvm.nvvm.barrier0", ft);
    LLVMBuildCall2(Bd, ft, f, NULL, 0, "");
}

/* XOR of vals[b] over the set bits b of x (i32): a linear layout applied to a hardware index */
static LLVMValueRef xbits(em *e, LLVMValueRef x, const uint32_t *vals, int n) {
    LLVMValueRef r = k32(e, 0);
    for (int b = 0; b < n; b++) {
        if (!vals[b]) continue;
        LLVMValueRef on = LLVMBuildICmp(Bd, LLVMIntNE, LLVMBuildAnd(Bd, x, k32(e, 1LL << b), ""), k32(e, 0), "");
        r = LLVMBuildXor(Bd, r, sel(e, on, k32(e, vals[b]), k32(e, 0)), "");
    }
    return r;
}

/* shared offset (elements) of (row, col): XOR of the inverse swizzle's bases */
static uint32_t soff(const ic_gemm_smem *s, int row, int col) {
    uint32_t x = 0;
    for (int b = 0; b < 8; b++) {
        if (row >> b & 1) x ^= s->row_off[b];
        if (col >> b & 1) x ^= s->col_off[b];
    }
    return x;
}

/* One operand's K tile into a stage: rows [r0, r0+rows) x cols [c0, c0+cols) of the global
 * matrix (limits rl, cl; element (r, c) at boff + r*rs + c*cs) to shared bytes `dst`. */
static void load_tile(em *e, const ic_gemm_smem *s, bool fast, LLVMValueRef dst, LLVMValueRef gp, LLVMValueRef boff,
                      LLVMValueRef r0, LLVMValueRef c0, int64_t rl, int64_t cl, int64_t rs, int64_t cs) {
    int ntb = ilog2i(e->M->nthreads);
    uint32_t tr[10], tc[10], to[10];
    for (int b = 0; b < ntb; b++) {
        tr[b] = (uint32_t)s->tid_row[b];
        tc[b] = (uint32_t)s->tid_col[b];
        to[b] = soff(s, s->tid_row[b], s->tid_col[b]);
    }
    LLVMValueRef trow = xbits(e, e->tid, tr, ntb), tcol = xbits(e, e->tid, tc, ntb), toff = xbits(e, e->tid, to, ntb);
    LLVMTypeRef gi16 = e->i16;
    for (int i = 0; i < s->nchunk; i++) {
        LLVMValueRef row = LLVMBuildXor(Bd, trow, k32(e, s->reg_row[i]), "");
        LLVMValueRef col = LLVMBuildXor(Bd, tcol, k32(e, s->reg_col[i]), "");
        LLVMValueRef off = LLVMBuildXor(Bd, toff, k32(e, soff(s, s->reg_row[i], s->reg_col[i])), "");
        LLVMValueRef saddr = LLVMBuildAdd(Bd, dst, LLVMBuildShl(Bd, off, k32(e, 1), ""), "");
        LLVMValueRef r = LLVMBuildAdd(Bd, r0, z64(e, row), ""), c = LLVMBuildAdd(Bd, c0, z64(e, col), "");
        LLVMValueRef rok = LLVMBuildICmp(Bd, LLVMIntSLT, r, k64(e, rl), "");
        LLVMValueRef base = LLVMBuildAdd(Bd, boff, LLVMBuildMul(Bd, r, k64(e, rs), ""), "");
        if (fast) { /* contiguous along the columns: valid bytes of the 16, zero-filled */
            LLVMValueRef left = LLVMBuildSub(Bd, k64(e, cl), c, "");
            left = sel(e, LLVMBuildICmp(Bd, LLVMIntSLT, left, k64(e, 0), ""), k64(e, 0), left);
            left = sel(e, LLVMBuildICmp(Bd, LLVMIntSGT, left, k64(e, 8), ""), k64(e, 8), left);
            left = sel(e, rok, left, k64(e, 0));
            LLVMValueRef any = LLVMBuildICmp(Bd, LLVMIntSGT, left, k64(e, 0), "");
            LLVMValueRef idx = sel(e, any, LLVMBuildAdd(Bd, base, c, ""), k64(e, 0));
            LLVMValueRef src = LLVMBuildGEP2(Bd, gi16, gp, &idx, 1, "");
            LLVMValueRef bytes = LLVMBuildTrunc(Bd, LLVMBuildShl(Bd, left, k64(e, 1), ""), e->i32, "");
            LLVMValueRef args[3] = {saddr, src, bytes};
            asm_(e, LLVMVoidTypeInContext(e->C->ctx), args, 3, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
                 "r,l,r,~{memory}", true);
        } else { /* per element, under a predicate; one 16-byte shared store */
            LLVMTypeRef v8 = LLVMVectorType(gi16, 8);
            LLVMValueRef vec = LLVMConstNull(v8);
            for (int j = 0; j < 8; j++) {
                LLVMValueRef cj = LLVMBuildAdd(Bd, c, k64(e, j), "");
                LLVMValueRef ok = LLVMBuildAnd(Bd, rok, LLVMBuildICmp(Bd, LLVMIntSLT, cj, k64(e, cl), ""), "");
                LLVMValueRef idx = sel(e, ok, LLVMBuildAdd(Bd, base, LLVMBuildMul(Bd, cj, k64(e, cs), ""), ""), k64(e, 0));
                LLVMValueRef p = LLVMBuildGEP2(Bd, gi16, gp, &idx, 1, "");
                LLVMValueRef v = LLVMBuildLoad2(Bd, gi16, p, "");
                LLVMSetAlignment(v, 2);
                vec = LLVMBuildInsertElement(Bd, vec, sel(e, ok, v, LLVMConstInt(gi16, 0, 0)), k32(e, j), "");
            }
            LLVMTypeRef sp = LLVMPointerTypeInContext(e->C->ctx, 3);
            LLVMValueRef p = LLVMBuildIntToPtr(Bd, saddr, sp, "");
            LLVMValueRef st = LLVMBuildStore(Bd, vec, p);
            LLVMSetAlignment(st, 16);
        }
    }
}

/* both operands' K tile kt (i32) into stage `stage` (i32) */
static void load_stage(em *e, bool fast, LLVMValueRef stage, LLVMValueRef kt, LLVMValueRef a, LLVMValueRef bp) {
    const ic_gemm *G = e->G;
    const ic_gemm_cfg *cf = &e->M->cfg;
    LLVMValueRef sa = LLVMBuildAdd(Bd, e->smem, LLVMBuildMul(Bd, stage, k32(e, e->stage_bytes), ""), "");
    LLVMValueRef sb = LLVMBuildAdd(Bd, sa, k32(e, e->a_bytes), "");
    LLVMValueRef k0 = LLVMBuildMul(Bd, z64(e, kt), k64(e, cf->BK), "");
    LLVMValueRef aoff = LLVMBuildMul(Bd, e->bb, k64(e, G->sa[0]), "");
    LLVMValueRef boff = LLVMBuildMul(Bd, e->bb, k64(e, G->sb[0]), "");
    load_tile(e, &e->M->a, fast, sa, a, aoff, e->tm0, k0, G->M, G->K, G->sa[1], G->sa[2]);
    if (G->b_nk) load_tile(e, e->bs, fast, sb, bp, boff, e->tn0, k0, G->N, G->K, G->sb[2], G->sb[1]);
    else load_tile(e, e->bs, fast, sb, bp, boff, k0, e->tn0, G->K, G->N, G->sb[1], G->sb[2]);
}

static void commit(em *e) {
    asm_(e, LLVMVoidTypeInContext(e->C->ctx), NULL, 0, "cp.async.commit_group;", "~{memory}", true);
}

static void wait_group(em *e, int n) {
    char t[64];
    snprintf(t, sizeof t, "cp.async.wait_group %d;", n);
    asm_(e, LLVMVoidTypeInContext(e->C->ctx), NULL, 0, t, "~{memory}", true);
}

static void ldmatrix(em *e, LLVMValueRef addr, bool trans, LLVMValueRef *w) {
    LLVMTypeRef ts[4] = {e->i32, e->i32, e->i32, e->i32};
    LLVMTypeRef st = LLVMStructTypeInContext(e->C->ctx, ts, 4, 0);
    LLVMValueRef r = asm_(e, st, &addr, 1,
                          trans ? "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {$0,$1,$2,$3}, [$4];"
                                : "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0,$1,$2,$3}, [$4];",
                          "=r,=r,=r,=r,r,~{memory}", true);
    for (int i = 0; i < 4; i++) w[i] = LLVMBuildExtractValue(Bd, r, (unsigned)i, "");
}

static void mma(em *e, LLVMValueRef *a, LLVMValueRef *b, LLVMValueRef *acc) {
    LLVMTypeRef ts[4] = {e->f32, e->f32, e->f32, e->f32};
    LLVMTypeRef st = LLVMStructTypeInContext(e->C->ctx, ts, 4, 0);
    LLVMValueRef args[10];
    for (int i = 0; i < 4; i++) args[i] = a[i];
    args[4] = b[0];
    args[5] = b[1];
    for (int i = 0; i < 4; i++) args[6 + i] = LLVMBuildLoad2(Bd, e->f32, acc[i], "");
    const char *t = e->G->dt == IC_BF16
                        ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};"
                        : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};";
    /* side effects too: a pure asm would be sunk into the epilogue's predicated stores */
    LLVMValueRef r = asm_(e, st, args, 10, t, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", true);
    for (int i = 0; i < 4; i++) LLVMBuildStore(Bd, LLVMBuildExtractValue(Bd, r, (unsigned)i, ""), acc[i]);
}

/* the mma work of one stage: BK/16 steps over every tile of the warp */
static void compute_stage(em *e, LLVMValueRef stage, LLVMValueRef ta, LLVMValueRef tb, LLVMValueRef *acc) {
    const ic_gemm_map *M = e->M;
    const ic_gemm *G = e->G;
    const ic_gemm_smem *bs = e->bs;
    LLVMValueRef sa = LLVMBuildAdd(Bd, e->smem, LLVMBuildMul(Bd, stage, k32(e, e->stage_bytes), ""), "");
    LLVMValueRef sb = LLVMBuildAdd(Bd, sa, k32(e, e->a_bytes), "");
    for (int ks = 0; ks < M->cfg.BK / 16; ks++) {
        LLVMValueRef af[16][4], bf[16][2];
        for (int i = 0; i < M->nmt; i++) {
            LLVMValueRef off = LLVMBuildXor(Bd, ta, k32(e, soff(&M->a, M->mt[i], ks * 16)), "");
            LLVMValueRef w[4];
            ldmatrix(e, LLVMBuildAdd(Bd, sa, LLVMBuildShl(Bd, off, k32(e, 1), ""), ""), false, w);
            for (int q = 0; q < 4; q++) af[i][M->a_word[q]] = w[q];
        }
        for (int j = 0; j < M->nnt; j += 2) {
            uint32_t c = G->b_nk ? soff(bs, M->nt[j], ks * 16) : soff(bs, ks * 16, M->nt[j]);
            LLVMValueRef off = LLVMBuildXor(Bd, tb, k32(e, c), "");
            LLVMValueRef w[4];
            ldmatrix(e, LLVMBuildAdd(Bd, sb, LLVMBuildShl(Bd, off, k32(e, 1), ""), ""), !G->b_nk, w);
            const int *bw = M->b_word[G->b_nk ? 0 : 1];
            for (int q = 0; q < 4; q++) bf[j + bw[q] / 2][bw[q] % 2] = w[q];
        }
        for (int t = 0; t < M->ntile; t++) {
            int mi = 0, ni = 0;
            while (M->mt[mi] != M->tile[t].m0) mi++;
            while (M->nt[ni] != M->tile[t].n0) ni++;
            LLVMValueRef d[4];
            for (int q = 0; q < 4; q++) d[q] = acc[M->tile[t].d[q]];
            mma(e, af[mi], bf[ni], d);
        }
    }
}

/* f32 -> the 16-bit memory form (i16) and back, rounded to nearest even */
static LLVMValueRef to_half_bits(em *e, LLVMValueRef f) {
    if (e->G->dt == IC_F16) return LLVMBuildBitCast(Bd, LLVMBuildFPTrunc(Bd, f, LLVMHalfTypeInContext(e->C->ctx), ""), e->i16, "");
    LLVMTypeRef ft = LLVMFunctionType(e->i16, &e->f32, 1, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(e->C->mod, "llvm.nvvm.f2bf16.rn");
    if (!fn) fn = LLVMAddFunction(e->C->mod, "llvm.nvvm.f2bf16.rn", ft);
    return LLVMBuildCall2(Bd, ft, fn, &f, 1, "");
}

static LLVMValueRef from_half_bits(em *e, LLVMValueRef h) {
    if (e->G->dt == IC_F16) return LLVMBuildFPExt(Bd, LLVMBuildBitCast(Bd, h, LLVMHalfTypeInContext(e->C->ctx), ""), e->f32, "");
    LLVMValueRef x = LLVMBuildShl(Bd, LLVMBuildZExt(Bd, h, e->i32, ""), k32(e, 16), "");
    return LLVMBuildBitCast(Bd, x, e->f32, "");
}

static void if_(em *e, LLVMValueRef cond, LLVMBasicBlockRef *end) {
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(Bd));
    LLVMBasicBlockRef th = LLVMAppendBasicBlockInContext(e->C->ctx, fn, "g.then");
    *end = LLVMAppendBasicBlockInContext(e->C->ctx, fn, "g.end");
    LLVMBuildCondBr(Bd, cond, th, *end);
    LLVMPositionBuilderAtEnd(Bd, th);
}

static void endif_(em *e, LLVMBasicBlockRef end) {
    LLVMBuildBr(Bd, end);
    LLVMPositionBuilderAtEnd(Bd, end);
}

void ic_gemm_emit(cg *C, const ic_gemm *G, const ic_gemm_map *M, bool fast, LLVMBasicBlockRef entry, LLVMValueRef a,
                  LLVMValueRef bp, LLVMValueRef bias, LLVMValueRef out, const ic_gemm_epi *epi, const char *name) {
    em E = {.C = C, .b = C->b, .G = G, .M = M, .entry = entry};
    em *e = &E;
    e->i16 = C->i16, e->i32 = C->i32, e->i64 = C->i64, e->f32 = C->f32;
    const ic_gemm_cfg *cf = &M->cfg;
    e->bs = G->b_nk ? &M->b_nk : &M->b_kn;
    e->a_bytes = cf->BM * cf->BK * 2;
    e->b_bytes = cf->BN * cf->BK * 2;
    e->stage_bytes = e->a_bytes + e->b_bytes;
    /* shared stages */
    char sn[96];
    snprintf(sn, sizeof sn, "%s_gsm", name);
    LLVMTypeRef at = LLVMArrayType(e->i16, (unsigned)(cf->stages * e->stage_bytes / 2));
    LLVMValueRef sm = LLVMAddGlobalInAddressSpace(C->mod, at, sn, 3);
    LLVMSetInitializer(sm, LLVMGetUndef(at));
    LLVMSetLinkage(sm, LLVMInternalLinkage);
    LLVMSetAlignment(sm, 128);
    e->smem = LLVMBuildTrunc(Bd, LLVMBuildPtrToInt(Bd, sm, e->i64, ""), e->i32, "");
    e->tid = sreg(e, "llvm.nvvm.read.ptx.sreg.tid.x");
    e->lane = LLVMBuildAnd(Bd, e->tid, k32(e, 31), "");
    e->warp = LLVMBuildLShr(Bd, e->tid, k32(e, 5), "");
    /* block -> (batch, tile row, tile column), grouped raster */
    int64_t tiles_m = (G->M + cf->BM - 1) / cf->BM, tiles_n = (G->N + cf->BN - 1) / cf->BN;
    LLVMValueRef bid = sreg(e, "llvm.nvvm.read.ptx.sreg.ctaid.x");
    LLVMValueRef per = k32(e, tiles_m * tiles_n);
    LLVMValueRef bb = LLVMBuildUDiv(Bd, bid, per, ""), pid = LLVMBuildURem(Bd, bid, per, "");
    LLVMValueRef npg = k32(e, GROUP * tiles_n);
    LLVMValueRef gid = LLVMBuildUDiv(Bd, pid, npg, ""), inq = LLVMBuildURem(Bd, pid, npg, "");
    LLVMValueRef first = LLVMBuildMul(Bd, gid, k32(e, GROUP), "");
    LLVMValueRef gsz = LLVMBuildSub(Bd, k32(e, tiles_m), first, "");
    gsz = sel(e, LLVMBuildICmp(Bd, LLVMIntSLT, gsz, k32(e, GROUP), ""), gsz, k32(e, GROUP));
    LLVMValueRef tm = LLVMBuildAdd(Bd, first, LLVMBuildURem(Bd, inq, gsz, ""), "");
    LLVMValueRef tn = LLVMBuildUDiv(Bd, inq, gsz, "");
    e->bb = z64(e, bb);
    e->tm0 = LLVMBuildMul(Bd, z64(e, tm), k64(e, cf->BM), "");
    e->tn0 = LLVMBuildMul(Bd, z64(e, tn), k64(e, cf->BN), "");
    /* per-thread ldmatrix offsets: lane part (ll_ldmatrix_addr) ^ warp origin */
    uint32_t la[5], lb[5], wa[5], wb[5];
    for (int b = 0; b < 5; b++) {
        la[b] = soff(&M->a, M->ldm_row[b], M->ldm_col[b]);
        lb[b] = soff(e->bs, M->ldm_row[b], M->ldm_col[b]);
    }
    for (int b = 0; b < M->nwarp_bits; b++) {
        wa[b] = soff(&M->a, M->warp_row[b], 0);
        wb[b] = G->b_nk ? soff(e->bs, M->warp_col[b], 0) : soff(e->bs, 0, M->warp_col[b]);
    }
    LLVMValueRef ta = LLVMBuildXor(Bd, xbits(e, e->lane, la, 5), xbits(e, e->warp, wa, M->nwarp_bits), "");
    LLVMValueRef tb = LLVMBuildXor(Bd, xbits(e, e->lane, lb, 5), xbits(e, e->warp, wb, M->nwarp_bits), "");
    /* accumulators */
    LLVMValueRef acc[128];
    {
        LLVMBuilderRef ab = LLVMCreateBuilderInContext(C->ctx);
        LLVMValueRef firsti = LLVMGetFirstInstruction(entry);
        if (firsti) LLVMPositionBuilderBefore(ab, firsti);
        else LLVMPositionBuilderAtEnd(ab, entry);
        for (int r = 0; r < M->nacc; r++) acc[r] = LLVMBuildAlloca(ab, e->f32, "acc");
        LLVMDisposeBuilder(ab);
    }
    for (int r = 0; r < M->nacc; r++) LLVMBuildStore(Bd, LLVMConstReal(e->f32, 0.0), acc[r]);
    /* prologue */
    int64_t KT = (G->K + cf->BK - 1) / cf->BK;
    int S = cf->stages;
    for (int s = 0; s < S - 1; s++) {
        if (s < KT) load_stage(e, fast, k32(e, s), k32(e, s), a, bp);
        commit(e);
    }
    /* main loop */
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(Bd));
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(Bd);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(C->ctx, fn, "g.loop");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(C->ctx, fn, "g.done");
    LLVMBuildCondBr(Bd, LLVMConstInt(C->i1, KT > 0, 0), head, done);
    LLVMPositionBuilderAtEnd(Bd, head);
    LLVMValueRef kt = LLVMBuildPhi(Bd, e->i32, "kt");
    wait_group(e, S - 2);
    barrier(e);
    LLVMValueRef nk = LLVMBuildAdd(Bd, kt, k32(e, S - 1), "");
    LLVMBasicBlockRef lend;
    if_(e, LLVMBuildICmp(Bd, LLVMIntSLT, nk, k32(e, KT), ""), &lend);
    load_stage(e, fast, LLVMBuildURem(Bd, nk, k32(e, S), ""), nk, a, bp);
    endif_(e, lend);
    commit(e);
    compute_stage(e, LLVMBuildURem(Bd, kt, k32(e, S), ""), ta, tb, acc);
    LLVMValueRef kn = LLVMBuildAdd(Bd, kt, k32(e, 1), "");
    LLVMBasicBlockRef tail = LLVMGetInsertBlock(Bd);
    LLVMBuildCondBr(Bd, LLVMBuildICmp(Bd, LLVMIntSLT, kn, k32(e, KT), ""), head, done);
    LLVMValueRef inc[2] = {k32(e, 0), kn};
    LLVMBasicBlockRef from[2] = {pre, tail};
    LLVMAddIncoming(kt, inc, from, 2);
    LLVMPositionBuilderAtEnd(Bd, done);
    /* epilogue: (row, col) of register r = acc_row/col[r] ^ lane part ^ warp part */
    uint32_t lr[5], lc[5], wr[5], wc[5];
    for (int b = 0; b < 5; b++) lr[b] = (uint32_t)M->lane_row[b], lc[b] = (uint32_t)M->lane_col[b];
    for (int b = 0; b < M->nwarp_bits; b++) wr[b] = (uint32_t)M->warp_row[b], wc[b] = (uint32_t)M->warp_col[b];
    LLVMValueRef trow = LLVMBuildXor(Bd, xbits(e, e->lane, lr, 5), xbits(e, e->warp, wr, M->nwarp_bits), "");
    LLVMValueRef tcol = LLVMBuildXor(Bd, xbits(e, e->lane, lc, 5), xbits(e, e->warp, wc, M->nwarp_bits), "");
    bool pair = out && fast && G->N % 2 == 0;
    LLVMValueRef cbase = bias ? LLVMBuildMul(Bd, e->bb, k64(e, G->sc[0]), "") : NULL;
    LLVMValueRef obase = LLVMBuildMul(Bd, e->bb, k64(e, G->M * G->N), "");
    for (int t = 0; t < M->ntile; t++)
        for (int h = 0; h < 2; h++) { /* d0 d1 (row), d2 d3 (row + 8) */
            int r0 = M->tile[t].d[2 * h], r1 = M->tile[t].d[2 * h + 1];
            LLVMValueRef mrow = LLVMBuildAdd(Bd, e->tm0, z64(e, LLVMBuildXor(Bd, trow, k32(e, M->acc_row[r0]), "")), "");
            LLVMValueRef rok = LLVMBuildICmp(Bd, LLVMIntSLT, mrow, k64(e, G->M), "");
            LLVMValueRef v[2], ok[2], eo[2];
            for (int q = 0; q < 2; q++) {
                int r = q ? r1 : r0;
                LLVMValueRef ncol = LLVMBuildAdd(Bd, e->tn0, z64(e, LLVMBuildXor(Bd, tcol, k32(e, M->acc_col[r]), "")), "");
                ok[q] = LLVMBuildAnd(Bd, rok, LLVMBuildICmp(Bd, LLVMIntSLT, ncol, k64(e, G->N), ""), "");
                LLVMValueRef x = LLVMBuildLoad2(Bd, e->f32, acc[r], "");
                if (G->alpha != 1) x = LLVMBuildFMul(Bd, x, LLVMConstReal(e->f32, G->alpha), "");
                if (bias) {
                    LLVMValueRef ci = LLVMBuildAdd(Bd, cbase, LLVMBuildAdd(Bd, LLVMBuildMul(Bd, mrow, k64(e, G->sc[1]), ""),
                                                                           LLVMBuildMul(Bd, ncol, k64(e, G->sc[2]), ""), ""), "");
                    ci = sel(e, ok[q], ci, k64(e, 0));
                    LLVMValueRef bv = LLVMBuildLoad2(Bd, e->i16, LLVMBuildGEP2(Bd, e->i16, bias, &ci, 1, ""), "");
                    LLVMSetAlignment(bv, 2);
                    LLVMValueRef bf = from_half_bits(e, bv);
                    if (G->beta != 1) bf = LLVMBuildFMul(Bd, bf, LLVMConstReal(e->f32, G->beta), "");
                    x = LLVMBuildFAdd(Bd, x, bf, "");
                }
                v[q] = to_half_bits(e, x);
                LLVMValueRef eidx = LLVMBuildAdd(Bd, obase, LLVMBuildAdd(Bd, LLVMBuildMul(Bd, mrow, k64(e, G->N), ""), ncol, ""), "");
                eo[q] = sel(e, ok[q], eidx, k64(e, 0));
            }
            if (out && pair) { /* (n, n+1) in one 4-byte store: N even, n even */
                LLVMBasicBlockRef end;
                if_(e, ok[0], &end);
                LLVMValueRef w = LLVMBuildOr(Bd, z64(e, LLVMBuildZExt(Bd, v[0], e->i32, "")),
                                             LLVMBuildShl(Bd, z64(e, LLVMBuildZExt(Bd, v[1], e->i32, "")), k64(e, 16), ""), "");
                LLVMValueRef p = LLVMBuildGEP2(Bd, e->i16, out, &eo[0], 1, "");
                LLVMValueRef s = LLVMBuildStore(Bd, LLVMBuildTrunc(Bd, w, e->i32, ""), p);
                LLVMSetAlignment(s, 4);
                endif_(e, end);
            } else if (out) {
                for (int q = 0; q < 2; q++) {
                    LLVMBasicBlockRef end;
                    if_(e, ok[q], &end);
                    LLVMValueRef s = LLVMBuildStore(Bd, v[q], LLVMBuildGEP2(Bd, e->i16, out, &eo[q], 1, ""));
                    LLVMSetAlignment(s, 2);
                    endif_(e, end);
                }
            }
            if (epi)
                for (int q = 0; q < 2; q++) epi->elem(epi->ctx, eo[q], ok[q], from_half_bits(e, v[q]));
        }
}
