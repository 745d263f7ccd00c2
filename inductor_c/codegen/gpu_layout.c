/* gpu_layout.c — the thread mappings of GPU kernels as linear layouts (layouts/, ll_).
 *
 * Requires: a launch plan's shape parameters (gpu_nvptx.c plan_kernel). Produces: the layout
 * of one block and what the code generator reads off it (ic_gmap). Pure: no LLVM, no ctx.
 *
 * Row kernels. One block holds R rows of T threads, V consecutive elements per thread and
 * access, C chunks per thread (Cp = C rounded up to a power of two for the layout):
 *
 *   rows on warps (jlow):  ll_blocked(shape [V*T*Cp (col), R (row)], spt [V, 1],
 *                          tpw [min(T,32), 32/min(T,32)], wpc [T/32 or 1, rest], order col, row)
 *   rows on lanes:         ll_blocked(shape [T*Cp (col), 32 (row)], spt [1, 1],
 *                          tpw [1, 32], wpc [T, 1], order row, col)     (x.sum(0): V = 1)
 *
 *   in:  register (V*Cp) | lane (32) | warp (Bk/32)       out: col (dim0) | row (dim1)
 *
 * Read off the bases (tid bit b = lane bit b for b < 5, warp bit b-5 above):
 *   vec        ll_num_consecutive: registers -> consecutive columns (the 16-byte access)
 *   j, rl      tid bits whose bases lie in col (row): each must be one run of tid bits onto
 *              consecutive bits, so j = (tid >> j_shift) & (T-1), rl likewise
 *   shuffles   lane bits whose basis lies in col only: a reduction over the row combines
 *              across them with shfl.sync.bfly (xor mask = the lane bit), high bit first
 *   smem       warp bits whose basis lies in col: combined through shared memory
 * A basis touching both col and row, or runs that are not contiguous, are refused: the
 * generator never guesses a mapping the layout does not state.
 *
 * Vector width of pointwise / row accesses: ll_num_consecutive of the blocked 1-D layout
 * over the largest power of two dividing the vectorized size with V0 (16 bytes of the
 * smallest element) registers per thread: registers past the shape broadcast, so the
 * width is min(V0, 2^tz(size)).
 */
#include <string.h>

#include "../../layouts/ll.h"
#include "gpu.h"

static int ilog2u(int64_t x) {
    int l = 0;
    while (((int64_t)1 << (l + 1)) <= x) l++;
    return l;
}

int ic_gpu_vec_width(int v0, int64_t size) {
    if (v0 <= 1 || size <= 0) return 1;
    int64_t p = size & -size; /* largest power of two dividing size */
    if (p > v0) p = v0;
    ll_layout L;
    int64_t shape[1] = {p};
    int spt[1] = {v0}, tpw[1] = {32}, wpc[1] = {1}, order[1] = {0};
    if (ll_blocked(&L, 1, shape, spt, tpw, wpc, order, NULL) != LL_OK) return 1;
    uint64_t v = ll_num_consecutive(&L);
    return v < 1 ? 1 : (int)v;
}

/* one run of tid bits onto consecutive bits of out dim `o` starting at value `unit` */
static int run_of(const ll_layout *L, int lane, int warp, int o, int ntid, uint64_t unit, int *shift,
                  int *len) {
    int lo = -1, n = 0;
    for (int b = 0; b < ntid; b++) {
        uint64_t v = b < 5 ? ll_get_basis(L, lane, b, o) : ll_get_basis(L, warp, b - 5, o);
        if (!v) continue;
        if (lo < 0) lo = b;
        if (b != lo + n || v != unit << n) return -1;
        n++;
    }
    *shift = lo < 0 ? 0 : lo;
    *len = n;
    return 0;
}

int ic_gpu_row_map(ic_gmap *m, int V, int T, int R, bool jlow, int64_t chunks, char *err, size_t errn) {
    memset(m, 0, sizeof *m);
    ll_layout L;
    int Bk = T * R;
    int64_t Cp = 1;
    while (Cp < chunks) Cp *= 2;
    if (Bk < 32 || Bk > 1024 || (T & (T - 1)) || (R & (R - 1)) || (V & (V - 1))) {
        snprintf(err, errn, "row layout: bad block %d x %d (V %d)", R, T, V);
        return -1;
    }
    int rc;
    if (jlow) {
        int tl = T < 32 ? T : 32;
        int64_t shape[2] = {(int64_t)V * T * Cp, R};
        int spt[2] = {V, 1}, tpw[2] = {tl, 32 / tl}, wpc[2] = {T / tl, Bk / 32 / (T / tl)}, order[2] = {0, 1};
        rc = ll_blocked(&L, 2, shape, spt, tpw, wpc, order, NULL);
    } else {
        if (V != 1 || R != 32) {
            snprintf(err, errn, "row layout: rows on lanes needs V 1 and R 32 (V %d, R %d)", V, R);
            return -1;
        }
        int64_t shape[2] = {(int64_t)T * Cp, R};
        int spt[2] = {1, 1}, tpw[2] = {1, 32}, wpc[2] = {T, 1}, order[2] = {1, 0};
        rc = ll_blocked(&L, 2, shape, spt, tpw, wpc, order, NULL);
    }
    if (rc != LL_OK) {
        snprintf(err, errn, "row layout: %s", ll_strerror(rc));
        return -1;
    }
    int lane = ll_find_in(&L, LL_LANE), warp = ll_find_in(&L, LL_WARP);
    if (lane < 0 || warp < 0 || L.n_out != 2) {
        snprintf(err, errn, "row layout: missing lane/warp dims");
        return -1;
    }
    m->layout = L;
    int ntid = ilog2u(Bk);
    m->vec = (int)ll_num_consecutive(&L);
    int jlen, rlen;
    if (run_of(&L, lane, warp, 0, ntid, (uint64_t)V, &m->j_shift, &jlen) ||
        run_of(&L, lane, warp, 1, ntid, 1, &m->r_shift, &rlen) || (1 << jlen) != T || (1 << rlen) != R) {
        snprintf(err, errn, "row layout: thread bits are not runs of columns / rows");
        return -1;
    }
    for (int b = (ntid < 5 ? ntid : 5) - 1; b >= 0; b--) {
        uint64_t c = ll_get_basis(&L, lane, b, 0), r = ll_get_basis(&L, lane, b, 1);
        if (c && r) {
            snprintf(err, errn, "row layout: lane bit %d mixes rows and columns", b);
            return -1;
        }
        if (c) m->shfl[m->nshfl++] = 1 << b;
    }
    for (int b = 5; b < ntid; b++)
        if (ll_get_basis(&L, warp, b - 5, 0)) m->smem_mask |= 1u << b;
    return 0;
}

/* ---- transposes through shared memory ------------------------------------------------------
 *
 * A pointwise kernel whose store is contiguous along v but some load is contiguous along
 * another var u goes through a 32 x 32 tile (c = u offset, r = v offset) per block of 256
 * threads (tx = lane, ty = warp), 4 elements per thread:
 *
 *   phase 1 (coalesced in u):  src  register i -> r 8i, lane -> c, warp -> r     tile[c, r] = load
 *   phase 2 (coalesced in v):  dst  register i -> c 8i, lane -> r, warp -> c     value = tile[c, r]
 *
 * The shared layout is ll_optimal_swizzle(src, dst): bank-conflict free (or the predicted
 * minimum) on both sides. The generator needs only offsets: offset = inv(smem) o src, a
 * linear map of (register, tid), so offset = base(tid) ^ reg_const(i), base being the XOR of
 * the bases of tid's set bits (computed once per thread), reg_const a compile-time constant.
 */
static int tile_side(ll_layout *L, bool store) {
    ll_empty(L);
    int rc = ll_add_in_dim(L, LL_REGISTER, 2);
    if (!rc) rc = ll_add_in_dim(L, LL_LANE, 5);
    if (!rc) rc = ll_add_in_dim(L, LL_WARP, 3);
    if (!rc) rc = ll_add_out_dim(L, "dim0", 5); /* c: u offset */
    if (!rc) rc = ll_add_out_dim(L, "dim1", 5); /* r: v offset */
    for (int b = 0; b < 2 && !rc; b++) { /* register i: 8i along r (store) / c (load) */
        uint64_t v[2] = {store ? 0 : 8u << b, store ? 8u << b : 0};
        rc = ll_set_basis(L, 0, b, v);
    }
    for (int b = 0; b < 5 && !rc; b++) { /* lane: c (store) / r (load) */
        uint64_t v[2] = {store ? 1u << b : 0, store ? 0 : 1u << b};
        rc = ll_set_basis(L, 1, b, v);
    }
    for (int b = 0; b < 3 && !rc; b++) { /* warp: r (store) / c (load) */
        uint64_t v[2] = {store ? 0 : 1u << b, store ? 1u << b : 0};
        rc = ll_set_basis(L, 2, b, v);
    }
    return rc;
}

static int offsets_of(const ll_layout *side, const ll_layout *inv, int nreg, int64_t *tidb, int64_t *regc) {
    ll_layout S;
    int rc = ll_compose(&S, side, inv);
    if (rc) return rc;
    int off = ll_find_out(&S, LL_OFFSET);
    if (off < 0) return LL_EMISMATCH;
    for (int b = 0; b < 8; b++)
        tidb[b] = (int64_t)(b < 5 ? ll_get_basis(&S, 1, b, off) : ll_get_basis(&S, 2, b - 5, off));
    for (int i = 0; i < 1 << nreg; i++) {
        uint64_t x = 0;
        for (int b = 0; b < nreg; b++)
            if (i >> b & 1) x ^= ll_get_basis(&S, 0, b, off);
        regc[i] = (int64_t)x;
    }
    return LL_OK;
}

/* t from the two sides of a tile (rc: what building them returned): the swizzled shared layout
 * of elem_bits elements and the offsets of each side's nreg register bits. `what` names the
 * tile and its accesses in errors. */
static int tile_from_sides(ic_gtile *t, int rc, const ll_layout *src, const ll_layout *dst, int nreg,
                           int elem_bits, const char *what, const char *access, char *err, size_t errn) {
    ll_layout inv;
    ll_swizzle sw;
    if (!rc) rc = ll_optimal_swizzle(&sw, src, dst, elem_bits);
    if (!rc) rc = ll_invert(&inv, &sw.smem);
    if (!rc) rc = offsets_of(src, &inv, nreg, t->st, t->st_reg);
    if (!rc) rc = offsets_of(dst, &inv, nreg, t->ld, t->ld_reg);
    if (rc) {
        snprintf(err, errn, "%s layout: %s", what, ll_strerror(rc));
        return -1;
    }
    if (sw.vec != 1) {
        snprintf(err, errn, "%s layout: swizzle vector %d (%s accesses expected)", what, sw.vec, access);
        return -1;
    }
    t->smem = sw.smem;
    t->store_wavefronts = sw.store_wavefronts;
    t->load_wavefronts = sw.load_wavefronts;
    t->store_ideal = sw.store_ideal;
    t->load_ideal = sw.load_ideal;
    return 0;
}

int ic_gpu_tile_map(ic_gtile *t, int elem_bits, char *err, size_t errn) {
    memset(t, 0, sizeof *t);
    ll_layout src, dst;
    int rc = tile_side(&src, true);
    if (!rc) rc = tile_side(&dst, false);
    return tile_from_sides(t, rc, &src, &dst, 2, elem_bits, "tile", "scalar", err, errn);
}

/* ---- 64 x 64 tiles of 16-bit elements, moved as 32-bit words (V2_TILE) ---------------------
 *
 * 256 threads, one word (2 elements) per access in both phases. The tile holds words
 * w(u, p) = elements (u, 2p), (u, 2p+1): u in [0, 64) along the transposed loads, p in
 * [0, 32) pairs along v. Phase 1 loads words along u (elements (2l, v), (2l+1, v) of lane
 * l) from two rows v = 2p, 2p+1 and transposes the 2 x 2 block in registers (prmt) into
 * w(2l, p) and w(2l+1, p); phase 2 reads w(u, p = lane) and stores it along v.
 *
 *   phase 1 (store):  register h -> u 1, i -> p 8i (2 bits), lane -> u 2..32, warp -> p 1..4
 *   phase 2 (load):   register i -> u 8i (3 bits), lane -> p, warp -> u 1..4
 *
 * The shared layout is ll_optimal_swizzle of the two at 32 bits, as for the 32 x 32 tile.
 */
static int tile2_side(ll_layout *L, bool store) {
    ll_empty(L);
    int rc = ll_add_in_dim(L, LL_REGISTER, 3);
    if (!rc) rc = ll_add_in_dim(L, LL_LANE, 5);
    if (!rc) rc = ll_add_in_dim(L, LL_WARP, 3);
    if (!rc) rc = ll_add_out_dim(L, "dim0", 6); /* u */
    if (!rc) rc = ll_add_out_dim(L, "dim1", 5); /* p: pair of v */
    for (int b = 0; b < 3 && !rc; b++) {
        uint64_t v[2];
        if (store) v[0] = b == 0 ? 1 : 0, v[1] = b == 0 ? 0 : 8u << (b - 1);
        else v[0] = 8u << b, v[1] = 0;
        rc = ll_set_basis(L, 0, b, v);
    }
    for (int b = 0; b < 5 && !rc; b++) {
        uint64_t v[2] = {store ? 2u << b : 0, store ? 0 : 1u << b};
        rc = ll_set_basis(L, 1, b, v);
    }
    for (int b = 0; b < 3 && !rc; b++) {
        uint64_t v[2] = {store ? 0 : 1u << b, store ? 1u << b : 0};
        rc = ll_set_basis(L, 2, b, v);
    }
    return rc;
}

int ic_gpu_tile2_map(ic_gtile *t, char *err, size_t errn) {
    memset(t, 0, sizeof *t);
    ll_layout src, dst;
    int rc = tile2_side(&src, true);
    if (!rc) rc = tile2_side(&dst, false);
    return tile_from_sides(t, rc, &src, &dst, 3, 32, "tile2", "word", err, errn);
}
