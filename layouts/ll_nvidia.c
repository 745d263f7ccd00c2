/* ll_nvidia.c - standard NVIDIA layouts as linear layouts: blocked, slice,
 * mma.sync / wgmma accumulators and operands, ldmatrix/stmatrix fragments,
 * swizzled and NVMMA shared layouts.
 *
 * Contract: requires power-of-two shapes and parameters (LL_ESIZE otherwise)
 * and rank <= LL_MAX_DIMS; produces layouts whose out dims are dim0..dim{r-1}
 * in standard order with sizes equal to the shape.  Distributed layouts have
 * in dims register, lane, warp, block; shared ones offset, block.  The CTA
 * tile is fitted to the shape as Triton does: a shape smaller than the tile
 * zeroes the largest bases (registers are dropped instead), a larger one
 * repeats the tile in registers (offsets for shared layouts). */
#include "ll_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct dimnames {
    char buf[LL_MAX_DIMS][LL_NAME_MAX + 1];
    const char *p[LL_MAX_DIMS];
} dimnames;

static void std_names(dimnames *n, int rank) {
    for (int i = 0; i < rank; i++) {
        llx_dim_name(n->buf[i], i);
        n->p[i] = n->buf[i];
    }
}

static bool pow2_all(int rank, const int64_t *v) {
    for (int i = 0; i < rank; i++)
        if (v[i] <= 0 || !llx_is_pow2((uint64_t)v[i])) return false;
    return true;
}
static bool pow2_int(int rank, const int *v) {
    for (int i = 0; i < rank; i++)
        if (v[i] <= 0 || !llx_is_pow2((uint64_t)v[i])) return false;
    return true;
}
static bool perm_ok(int rank, const int *order) {
    unsigned seen = 0;
    for (int i = 0; i < rank; i++) {
        if (order[i] < 0 || order[i] >= rank || (seen >> order[i] & 1)) return false;
        seen |= 1u << order[i];
    }
    return true;
}

/* L *= identity1D(size, in, out) */
static int mul_id(ll_layout *L, uint64_t size, const char *in, const char *out) {
    ll_layout f;
    int rc = ll_identity1d(&f, size, in, out);
    return rc ? rc : ll_product(L, L, &f);
}
static int mul_zero(ll_layout *L, uint64_t size, const char *in, const char *out) {
    ll_layout f;
    int rc = ll_zeros1d(&f, size, in, out, 1);
    return rc ? rc : ll_product(L, L, &f);
}

/* identityND without the final transpose: out dims stay in `order`. */
static int id_ordered(ll_layout *L, const char *in, int rank, const int *sizes, const int *order) {
    dimnames n;
    std_names(&n, rank);
    ll_empty(L);
    int rc = ll_add_in_dim(L, in, 0);
    for (int i = 0; i < rank && !rc; i++) rc = mul_id(L, (uint64_t)sizes[order[i]], in, n.p[order[i]]);
    return rc;
}

/* shape by out dim name of L (L's out dims are standard names). */
static int64_t shape_of(const char *name, const int64_t *shape) {
    return shape[strtol(name + 3, NULL, 10)];
}

/* Repeat L in its first in dim until every out dim reaches the shape. */
static int ensure_not_smaller(ll_layout *L, const int64_t *shape) {
    const char *k = L->in[0].name;
    int n = L->n_out;
    char names[LL_MAX_DIMS][LL_NAME_MAX + 1];
    for (int o = 0; o < n; o++) memcpy(names[o], L->out[o].name, sizeof names[o]);
    for (int o = 0; o < n; o++) {
        int j = ll_find_out(L, names[o]);
        uint64_t have = ll_out_size(L, j), want = (uint64_t)shape_of(names[o], shape);
        if (have < want) {
            int rc = mul_id(L, want / have, k, names[o]);
            if (rc) return rc;
        }
    }
    return LL_OK;
}

/* Zero the largest bases of out dims larger than the shape; bases of the
 * first in dim when it is "register" are removed instead. */
static int ensure_not_larger(ll_layout *L, const int64_t *shape) {
    uint64_t drop = 0; /* flat register bits to remove */
    bool reg = strcmp(L->in[0].name, LL_REGISTER) == 0 && L->n_in > 0;
    for (int o = 0; o < L->n_out; o++) {
        int have = L->out[o].log2;
        int want = llx_log2((uint64_t)shape_of(L->out[o].name, shape));
        if (have <= want) continue;
        uint64_t m = ll_out_mask(L, o);
        /* From the largest value down; ties: later bits first. */
        for (int step = have; step > want; step--) {
            int best = -1;
            uint64_t bv = 0;
            for (int k = L->in_bits - 1; k >= 0; k--) {
                if (drop >> k & 1) continue;
                uint64_t v = (L->basis[k] & m) >> L->out[o].shift;
                if (v > bv) { bv = v; best = k; }
            }
            if (best < 0) break;
            if (reg && best < L->in[0].log2) drop |= (uint64_t)1 << best;
            else L->basis[best] &= ~m;
        }
        for (int k = 0; k < L->in_bits; k++) {
            if (drop >> k & 1) continue;
            if (((L->basis[k] & m) >> L->out[o].shift) >> want) return LL_ESIZE;
        }
        /* Shrink the out dim: drop its top bits from every basis. */
        uint64_t keep_lo = llx_low(L->out[o].shift + want);
        uint64_t hi_mask = ~llx_low(L->out[o].shift + have);
        int cut = have - want;
        for (int k = 0; k < L->in_bits; k++) {
            uint64_t b = L->basis[k];
            L->basis[k] = (b & keep_lo) | ((b & hi_mask) >> cut);
        }
        L->out[o].log2 = (uint8_t)want;
        llx_fix_shifts(L);
    }
    if (drop) {
        ll_layout t = *L;
        int n = 0;
        for (int q = 0; q < L->in[0].log2; q++)
            if (!(drop >> q & 1)) t.basis[n++] = L->basis[q];
        int removed = L->in[0].log2 - n;
        t.in[0].log2 = (uint8_t)n;
        for (int k = L->in[0].log2; k < L->in_bits; k++) t.basis[k - removed] = L->basis[k];
        llx_fix_shifts(&t);
        *L = t;
    }
    return LL_OK;
}

static int make_cga(ll_layout *L, int rank, const ll_cga *cga) {
    dimnames n;
    std_names(&n, rank);
    ll_empty(L);
    int rc = ll_add_in_dim(L, LL_BLOCK, 0);
    for (int i = 0; i < rank && !rc; i++) {
        int d = cga ? cga->cta_order[i] : i;
        int split = cga ? cga->cta_split[d] : 1, ctas = cga ? cga->ctas_per_cga[d] : 1;
        rc = mul_id(L, (uint64_t)split, LL_BLOCK, n.p[d]);
        if (!rc) rc = mul_zero(L, (uint64_t)(ctas / split), LL_BLOCK, n.p[d]);
    }
    if (!rc) rc = ll_transpose_outs(L, L, rank, n.p);
    return rc;
}

static int check_cga(int rank, const ll_cga *cga) {
    if (!cga) return LL_OK;
    if (!pow2_int(rank, cga->ctas_per_cga) || !pow2_int(rank, cga->cta_split)) return LL_ESIZE;
    if (!perm_ok(rank, cga->cta_order)) return LL_EINVAL;
    for (int i = 0; i < rank; i++)
        if (cga->cta_split[i] > cga->ctas_per_cga[i]) return LL_EINVAL;
    return LL_OK;
}

/* Fit the CTA tile `cta` (out dims in any order) and the CGA to `shape`. */
static int combine(ll_layout *L, ll_layout *cta, int rank, const int64_t *shape, const ll_cga *cga) {
    dimnames n;
    std_names(&n, rank);
    ll_layout g;
    int rc = make_cga(&g, rank, cga);
    if (!rc) rc = ensure_not_larger(&g, shape);
    if (rc) return rc;
    int64_t cta_shape[LL_MAX_DIMS];
    for (int d = 0; d < rank; d++) {
        int64_t s = shape[d] / (int64_t)ll_out_size(&g, d);
        cta_shape[d] = s < 1 ? 1 : s;
    }
    const char *order[LL_MAX_DIMS];
    for (int o = 0; o < cta->n_out; o++) order[o] = cta->out[o].name;
    rc = ll_transpose_outs(&g, &g, cta->n_out, order);
    if (!rc) rc = ensure_not_smaller(cta, cta_shape);
    if (!rc) rc = ensure_not_larger(cta, cta_shape);
    if (!rc) rc = ll_product(cta, cta, &g);
    if (!rc) rc = ll_transpose_outs(cta, cta, rank, n.p);
    if (rc) return rc;
    *L = *cta;
    return LL_OK;
}

static int check_shape(int rank, const int64_t *shape) {
    if (rank < 1 || rank > LL_MAX_DIMS || !shape) return LL_EINVAL;
    if (!pow2_all(rank, shape)) return LL_ESIZE;
    int bits = 0;
    for (int i = 0; i < rank; i++) bits += llx_log2((uint64_t)shape[i]);
    return bits > 48 ? LL_ESIZE : LL_OK;
}

/* ---- blocked / slice ---------------------------------------------------- */

int ll_blocked(ll_layout *L, int rank, const int64_t *shape, const int *spt, const int *tpw,
               const int *wpc, const int *order, const ll_cga *cga) {
    if (!L || !spt || !tpw || !wpc || !order) return LL_EINVAL;
    int rc = check_shape(rank, shape);
    if (rc) return rc;
    if (!pow2_int(rank, spt) || !pow2_int(rank, tpw) || !pow2_int(rank, wpc)) return LL_ESIZE;
    if (!perm_ok(rank, order)) return LL_EINVAL;
    if ((rc = check_cga(rank, cga))) return rc;
    int bits = 0;
    for (int i = 0; i < rank; i++)
        bits += llx_log2((uint64_t)spt[i]) + llx_log2((uint64_t)tpw[i]) + llx_log2((uint64_t)wpc[i]);
    if (bits > 40) return LL_ESIZE;
    ll_layout cta, f;
    rc = id_ordered(&cta, LL_REGISTER, rank, spt, order);
    if (!rc) rc = id_ordered(&f, LL_LANE, rank, tpw, order);
    if (!rc) rc = ll_product(&cta, &cta, &f);
    if (!rc) rc = id_ordered(&f, LL_WARP, rank, wpc, order);
    if (!rc) rc = ll_product(&cta, &cta, &f);
    return rc ? rc : combine(L, &cta, rank, shape, cga);
}

int ll_slice(ll_layout *L, const ll_layout *parent, int dim) {
    if (!L || !parent || dim < 0 || dim >= parent->n_out || parent->n_out < 1) return LL_EINVAL;
    dimnames n;
    std_names(&n, parent->n_out);
    for (int i = 0; i < parent->n_out; i++)
        if (strcmp(parent->out[i].name, n.p[i])) return LL_EDIM; /* standard dims only */
    const char *ins[LL_MAX_DIMS], *outs[LL_MAX_DIMS];
    int no = 0;
    for (int i = 0; i < parent->n_in; i++) ins[i] = parent->in[i].name;
    for (int i = 0; i < parent->n_out; i++)
        if (i != dim) outs[no++] = parent->out[i].name;
    ll_layout t;
    int rc = ll_sublayout(&t, parent, parent->n_in, ins, no, outs);
    if (!rc && ll_find_in(&t, LL_REGISTER) >= 0) rc = ll_remove_zero_bases(&t, &t, LL_REGISTER);
    for (int i = 0; i < no && !rc; i++) {
        /* renumber: dims above `dim` move down by one (in increasing order) */
        char nm[LL_NAME_MAX + 1];
        llx_dim_name(nm, i);
        rc = ll_rename(&t, &t, 1, outs[i], nm);
    }
    if (rc) return rc;
    *L = t;
    return LL_OK;
}

/* ---- mma ---------------------------------------------------------------- */

int ll_mma_accumulator(ll_layout *L, int version, const int64_t *shape, const int *wpc,
                       int instr_n, const ll_cga *cga) {
    if (!L || !wpc || (version != 2 && version != 3)) return LL_EINVAL;
    int rc = check_shape(2, shape);
    if (rc) return rc;
    if ((rc = check_cga(2, cga))) return rc;
    if (!pow2_int(2, wpc) || !llx_is_pow2((uint64_t)(instr_n > 0 ? instr_n : 0)))
        return LL_ESIZE;
    if (version == 2 && instr_n != 8) return LL_EINVAL;
    if (version == 3 && (instr_n < 8 || instr_n > 256)) return LL_EINVAL;
    dimnames n;
    std_names(&n, 2);
    const int m = 16, kwidth = 2;
    /* Out dims in repetition order: columns (dim1) first. */
    ll_layout cta;
    static const int ones[2] = {1, 1}, rep_order[2] = {1, 0};
    rc = id_ordered(&cta, LL_REGISTER, 2, ones, rep_order);
    if (!rc) rc = mul_id(&cta, kwidth, LL_REGISTER, n.p[1]);   /* 2 elements of a row */
    if (!rc) rc = mul_id(&cta, 4, LL_LANE, n.p[1]);            /* 4 lanes along a row */
    if (!rc) rc = mul_id(&cta, 8, LL_LANE, n.p[0]);            /* 8 lanes down */
    if (!rc) rc = mul_id(&cta, m / 8, LL_REGISTER, n.p[0]);    /* rows +8 */
    if (!rc) rc = mul_id(&cta, (uint64_t)instr_n / (kwidth * 4), LL_REGISTER, n.p[1]);
    /* Warps: mma.sync row-major (along N first), wgmma column-major. */
    static const int row_major[2] = {1, 0}, col_major[2] = {0, 1};
    ll_layout w;
    if (!rc) rc = id_ordered(&w, LL_WARP, 2, wpc, version == 2 ? row_major : col_major);
    const char *cto[2] = {cta.out[0].name, cta.out[1].name};
    if (!rc) rc = ll_transpose_outs(&w, &w, 2, cto);
    if (!rc) rc = ll_product(&cta, &cta, &w);
    return rc ? rc : combine(L, &cta, 2, shape, cga);
}

int ll_mma_operand(ll_layout *L, int version, int op_idx, const int64_t *shape, const int *wpc,
                   int elem_bits, int k_width, const ll_cga *cga) {
    if (!L || !wpc || (version != 2 && version != 3) || (op_idx != 0 && op_idx != 1))
        return LL_EINVAL;
    if (version == 3 && op_idx != 0) return LL_EINVAL; /* wgmma B lives in smem */
    if (elem_bits != 8 && elem_bits != 16 && elem_bits != 32) return LL_EINVAL;
    int rc = check_shape(2, shape);
    if (rc) return rc;
    if ((rc = check_cga(2, cga))) return rc;
    if (!pow2_int(2, wpc)) return LL_ESIZE;
    if (k_width == 0) k_width = 32 / elem_bits;
    if (k_width < 1 || k_width > 16 || !llx_is_pow2((uint64_t)k_width)) return LL_ESIZE;
    dimnames n;
    std_names(&n, 2);
    int kdim = op_idx == 0 ? 1 : 0, mn = 1 - kdim;
    const char *K = n.p[kdim], *MN = n.p[mn];
    /* Out dims (K, M|N): the operand is tiled K-major. */
    ll_layout cta;
    ll_empty(&cta);
    rc = ll_add_in_dim(&cta, LL_REGISTER, 0);
    if (!rc) rc = ll_add_out_dim(&cta, K, 0);
    if (!rc) rc = ll_add_out_dim(&cta, MN, 0);
    if (!rc) rc = mul_id(&cta, (uint64_t)k_width, LL_REGISTER, K); /* k_width along K */
    if (!rc) rc = mul_id(&cta, 4, LL_LANE, K);                       /* 4 lanes along K */
    if (!rc) rc = mul_id(&cta, 8, LL_LANE, MN);                      /* 8 lanes down */
    if (!rc && op_idx == 0) rc = mul_id(&cta, 2, LL_REGISTER, MN);   /* A: rows +8 */
    if (!rc) rc = mul_id(&cta, 2, LL_REGISTER, K);                   /* K +4*k_width */
    /* Warps: the accumulator's warps, broadcast along K. */
    static const int row_major[2] = {1, 0}, col_major[2] = {0, 1};
    const int *worder = version == 2 ? row_major : col_major;
    ll_layout w;
    ll_empty(&w);
    if (!rc) rc = ll_add_in_dim(&w, LL_WARP, 0);
    for (int i = 0; i < 2 && !rc; i++) {
        int d = worder[i];
        rc = d == kdim ? mul_zero(&w, (uint64_t)wpc[d], LL_WARP, n.p[d])
                       : mul_id(&w, (uint64_t)wpc[d], LL_WARP, n.p[d]);
    }
    const char *cto[2] = {K, MN};
    if (!rc) rc = ll_transpose_outs(&w, &w, 2, cto);
    if (!rc) rc = ll_product(&cta, &cta, &w);
    return rc ? rc : combine(L, &cta, 2, shape, cga);
}

/* ---- ldmatrix ----------------------------------------------------------- */

int ll_ldmatrix(ll_layout *L, int num, bool trans) {
    if (!L || (num != 1 && num != 2 && num != 4)) return LL_EINVAL;
    ll_layout t;
    ll_empty(&t);
    int rows = num >= 2 ? 16 : 8, cols = num == 4 ? 16 : 8;
    int rc = ll_add_in_dim(&t, LL_REGISTER, 1 + (num == 4 ? 2 : num == 2 ? 1 : 0));
    if (!rc) rc = ll_add_in_dim(&t, LL_LANE, 5);
    if (!rc) rc = ll_add_out_dim(&t, "dim0", llx_log2((uint64_t)rows));
    if (!rc) rc = ll_add_out_dim(&t, "dim1", llx_log2((uint64_t)cols));
    if (rc) return rc;
    /* One 8x8 matrix: lane t holds row t/4, columns 2*(t%4)+{0,1} (the .trans
     * variant swaps rows and columns). */
    uint64_t v[2];
    int r = trans ? 1 : 0, c = trans ? 0 : 1; /* index of row / col in v */
    struct { int in, bit, along, val; } b[] = {
        {0, 0, c, 1}, {1, 0, c, 2}, {1, 1, c, 4}, {1, 2, r, 1}, {1, 3, r, 2}, {1, 4, r, 4},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        v[0] = v[1] = 0;
        v[b[i].along] = (uint64_t)b[i].val;
        ll_set_basis(&t, b[i].in, b[i].bit, v);
    }
    /* Matrix index: bit 0 -> rows +8, bit 1 -> columns +8. */
    if (num >= 2) ll_set_basis(&t, 0, 1, (uint64_t[]){8, 0});
    if (num == 4) ll_set_basis(&t, 0, 2, (uint64_t[]){0, 8});
    *L = t;
    return LL_OK;
}

int ll_ldmatrix_addr(ll_layout *L, int num, bool trans) {
    (void)trans; /* the addresses are the same; .trans only redistributes */
    if (!L || (num != 1 && num != 2 && num != 4)) return LL_EINVAL;
    ll_layout t;
    ll_empty(&t);
    int rc = ll_add_in_dim(&t, LL_LANE, 5);
    if (!rc) rc = ll_add_out_dim(&t, "dim0", num >= 2 ? 4 : 3);
    if (!rc) rc = ll_add_out_dim(&t, "dim1", num == 4 ? 4 : 3);
    if (rc) return rc;
    ll_set_basis(&t, 0, 0, (uint64_t[]){1, 0});
    ll_set_basis(&t, 0, 1, (uint64_t[]){2, 0});
    ll_set_basis(&t, 0, 2, (uint64_t[]){4, 0});
    if (num >= 2) ll_set_basis(&t, 0, 3, (uint64_t[]){8, 0});
    if (num == 4) ll_set_basis(&t, 0, 4, (uint64_t[]){0, 8});
    *L = t;
    return LL_OK;
}

/* ---- shared layouts ----------------------------------------------------- */

int ll_shared_swizzled(ll_layout *L, int rank, const int64_t *shape, int vec, int per_phase,
                       int max_phase, const int *order, const ll_cga *cga) {
    if (!L || !order) return LL_EINVAL;
    int rc = check_shape(rank, shape);
    if (rc) return rc;
    if (!perm_ok(rank, order)) return LL_EINVAL;
    if ((rc = check_cga(rank, cga))) return rc;
    if (vec <= 0 || per_phase <= 0 || max_phase <= 0 || !llx_is_pow2((uint64_t)vec) ||
        !llx_is_pow2((uint64_t)per_phase) || !llx_is_pow2((uint64_t)max_phase))
        return LL_ESIZE;
    dimnames n;
    std_names(&n, rank);
    ll_layout cta;
    ll_empty(&cta);
    int64_t cta_shape[LL_MAX_DIMS];
    ll_layout g;
    if ((rc = make_cga(&g, rank, cga)) || (rc = ensure_not_larger(&g, shape))) return rc;
    for (int d = 0; d < rank; d++) {
        int64_t s = shape[d] / (int64_t)ll_out_size(&g, d);
        cta_shape[d] = s < 1 ? 1 : s;
    }
    if (rank == 1) {
        rc = ll_identity1d(&cta, (uint64_t)cta_shape[0], LL_OFFSET, n.p[0]);
    } else {
        int cd = order[0], rd = order[1];
        int64_t ncols = cta_shape[cd], nrows = cta_shape[rd];
        rc = ll_add_in_dim(&cta, LL_OFFSET, llx_log2((uint64_t)ncols) + llx_log2((uint64_t)nrows));
        if (!rc) rc = ll_add_out_dim(&cta, n.p[rd], llx_log2((uint64_t)nrows));
        if (!rc) rc = ll_add_out_dim(&cta, n.p[cd], llx_log2((uint64_t)ncols));
        int k = 0;
        for (int64_t c = 1; c < ncols && !rc; c *= 2)
            rc = ll_set_basis(&cta, 0, k++, (uint64_t[]){0, (uint64_t)c});
        for (int64_t r = 1; r < nrows && !rc; r *= 2) {
            uint64_t sw = (uint64_t)(vec * ((r / per_phase) % max_phase)) % (uint64_t)ncols;
            rc = ll_set_basis(&cta, 0, k++, (uint64_t[]){(uint64_t)r, sw});
        }
        for (int i = 2; i < rank && !rc; i++)
            rc = mul_id(&cta, (uint64_t)cta_shape[order[i]], LL_OFFSET, n.p[order[i]]);
    }
    return rc ? rc : combine(L, &cta, rank, shape, cga);
}

int ll_nvmma_shared(ll_layout *L, int rank, const int64_t *shape, int elem_bits,
                    int swizzle_bytes, bool transposed, const ll_cga *cga) {
    if (!L) return LL_EINVAL;
    int rc = check_shape(rank, shape);
    if (rc) return rc;
    if (rank < 2 || (transposed && rank != 2)) return LL_EINVAL;
    if ((rc = check_cga(rank, cga))) return rc;
    if (elem_bits != 8 && elem_bits != 16 && elem_bits != 32 && elem_bits != 64) return LL_EINVAL;
    int per_phase, max_phase;
    switch (swizzle_bytes) {
    case 0: per_phase = 1; max_phase = 1; break;
    case 32: per_phase = 4; max_phase = 2; break;
    case 64: per_phase = 2; max_phase = 4; break;
    case 128: per_phase = 1; max_phase = 8; break;
    default: return LL_EINVAL;
    }
    dimnames n;
    std_names(&n, rank);
    ll_layout g;
    if ((rc = make_cga(&g, rank, cga)) || (rc = ensure_not_larger(&g, shape))) return rc;
    int64_t cs[LL_MAX_DIMS];
    for (int d = 0; d < rank; d++) {
        int64_t s = shape[d] / (int64_t)ll_out_size(&g, d);
        cs[d] = s < 1 ? 1 : s;
    }
    /* Collapse to (rows, cols): cols = the contiguous dim. */
    int cdim = transposed ? 0 : rank - 1;
    int64_t cols = cs[cdim], rows = 1;
    for (int d = 0; d < rank; d++)
        if (d != cdim) rows *= cs[d];
    int vec = 128 / elem_bits;
    int64_t tile_cols = swizzle_bytes ? 8 * swizzle_bytes / elem_bits : cols;
    int64_t tile_rows = swizzle_bytes ? 8 : rows;
    if (cols < tile_cols || rows < tile_rows) return LL_ESIZE;
    /* The atom: tile_cols x 8 rows, row r XORs vec*((r/per_phase)%max_phase). */
    ll_layout t;
    ll_empty(&t);
    rc = ll_add_in_dim(&t, LL_OFFSET, llx_log2((uint64_t)tile_cols) + llx_log2((uint64_t)tile_rows));
    if (!rc) rc = ll_add_out_dim(&t, "R", llx_log2((uint64_t)tile_rows));
    if (!rc) rc = ll_add_out_dim(&t, "C", llx_log2((uint64_t)tile_cols));
    int k = 0;
    for (int64_t c = 1; c < tile_cols && !rc; c *= 2)
        rc = ll_set_basis(&t, 0, k++, (uint64_t[]){0, (uint64_t)c});
    for (int64_t r = 1; r < tile_rows && !rc; r *= 2) {
        uint64_t sw = swizzle_bytes ? (uint64_t)(vec * ((r / per_phase) % max_phase)) : 0;
        rc = ll_set_basis(&t, 0, k++, (uint64_t[]){(uint64_t)r, sw});
    }
    /* Then more rows (TMA boxes stack down), then the next column boxes. */
    if (!rc && rows > tile_rows) rc = mul_id(&t, (uint64_t)(rows / tile_rows), LL_OFFSET, "R");
    if (!rc && cols > tile_cols) rc = mul_id(&t, (uint64_t)(cols / tile_cols), LL_OFFSET, "C");
    if (rc) return rc;
    /* Split R back into the non-contiguous dims, row-major (last one minor). */
    const char *names[LL_MAX_DIMS];
    int lg[LL_MAX_DIMS], m = 0;
    for (int d = rank - 1; d >= 0; d--) {
        if (d == cdim) continue;
        names[m] = n.p[d];
        lg[m++] = llx_log2((uint64_t)cs[d]);
    }
    names[m] = n.p[cdim];
    lg[m++] = llx_log2((uint64_t)cols);
    rc = ll_reshape_outs(&t, &t, m, names, lg);
    if (!rc) rc = ll_add_in_dim(&t, LL_BLOCK, 0);
    ll_layout out;
    if (!rc) {
        /* cga: blocks multiply on top, as in combine() */
        const char *order[LL_MAX_DIMS];
        for (int o = 0; o < t.n_out; o++) order[o] = t.out[o].name;
        rc = ll_transpose_outs(&g, &g, t.n_out, order);
        if (!rc) rc = ll_product(&out, &t, &g);
        if (!rc) rc = ll_transpose_outs(&out, &out, rank, n.p);
    }
    if (rc) return rc;
    *L = out;
    return LL_OK;
}
