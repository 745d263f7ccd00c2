/* ll_convert.c - layout conversion planning, warp-shuffle schedules, shared
 * memory bank-conflict counting, the optimal swizzle, and redundancy masks.
 *
 * Contract: requires distributed layouts (in dims register, lane[, warp]
 * [, block]) over the same tensor dims and sizes; never allocates.  The cost
 * model is the one documented in ll.h (32 banks x 4 bytes; phases of 32/16/8
 * lanes for <=4/8/16-byte accesses). */
#include "ll_internal.h"

#include <string.h>

const char *ll_cvt_kind_name(ll_cvt_kind k) {
    switch (k) {
    case LL_CVT_NOOP: return "noop";
    case LL_CVT_REGISTER: return "register";
    case LL_CVT_SHUFFLE: return "shuffle";
    case LL_CVT_SHARED: return "shared";
    case LL_CVT_CLUSTER: return "cluster";
    }
    return "?";
}

static bool bits_ok(int b) { return b == 8 || b == 16 || b == 32 || b == 64; }

/* Flat input mask of dim `name` (0 when absent). */
static uint64_t dim_mask(const ll_layout *L, const char *name) {
    int i = ll_find_in(L, name);
    return i < 0 ? 0 : ll_in_mask(L, i);
}
static int dim_log2(const ll_layout *L, const char *name) {
    int i = ll_find_in(L, name);
    return i < 0 ? 0 : L->in[i].log2;
}
static int dim_shift(const ll_layout *L, const char *name) {
    int i = ll_find_in(L, name);
    return i < 0 ? 0 : L->in[i].shift;
}

/* ---- redundancy --------------------------------------------------------- */

int ll_redundancy_masks(const ll_layout *L, ll_redundancy *out) {
    if (!L || !out) return LL_EINVAL;
    uint64_t m[LL_MAX_DIMS];
    ll_free_variable_masks(L, m);
    int r = ll_find_in(L, LL_REGISTER), l = ll_find_in(L, LL_LANE);
    int w = ll_find_in(L, LL_WARP), b = ll_find_in(L, LL_BLOCK);
    out->reg = r < 0 ? 0 : m[r];
    out->lane = l < 0 ? 0 : m[l];
    out->warp = w < 0 ? 0 : m[w];
    out->block = b < 0 ? 0 : m[b];
    return LL_OK;
}

/* ---- bank conflicts ----------------------------------------------------- */

/* Lanes served together for an access of `bytes` per lane. */
static int lanes_per_phase(int bytes) { return bytes <= 4 ? 32 : bytes == 8 ? 16 : 8; }

/* Same out dims (names and sizes, any order). */
static bool same_outs(const ll_layout *a, const ll_layout *b) {
    if (a->n_out != b->n_out) return false;
    for (int o = 0; o < a->n_out; o++) {
        int j = ll_find_out(b, a->out[o].name);
        if (j < 0 || b->out[j].log2 != a->out[o].log2) return false;
    }
    return true;
}

/* Vector bits of a hardware -> (offset[, block]) map `c`: register bits
 * whose offsets are 1, 2, 4, ... (in that order), such that every other
 * basis keeps the vector aligned (no offset bit below the vector).  Returns
 * the number of bits (<= want) and the register bits used in *used. */
static int vector_bits(const ll_layout *c, uint64_t rmask, int oshift, int want, uint64_t *used) {
    for (int vb = want; vb >= 0; vb--) {
        uint64_t u = 0;
        int got = 0;
        for (; got < vb; got++) {
            int found = -1;
            for (int k = 0; k < c->in_bits && found < 0; k++)
                if ((rmask >> k & 1) && !(u >> k & 1) && c->basis[k] == (uint64_t)1 << (oshift + got))
                    found = k;
            if (found < 0) break;
            u |= (uint64_t)1 << found;
        }
        if (got < vb) continue;
        uint64_t other = 0;
        for (int k = 0; k < c->in_bits; k++)
            if (!(u >> k & 1)) other |= c->basis[k];
        if ((other >> oshift) & llx_low(vb)) continue;
        *used = u;
        return vb;
    }
    *used = 0;
    return 0;
}

int ll_bank_conflicts(ll_bank_stats *st, const ll_layout *reg, const ll_layout *smem,
                      int elem_bits, int vec) {
    if (!st || !reg || !smem || !bits_ok(elem_bits) || vec < 0) return LL_EINVAL;
    if (vec && (!llx_is_pow2((uint64_t)vec) || vec * elem_bits > 128)) return LL_EINVAL;
    if (ll_find_in(smem, LL_OFFSET) < 0 || ll_find_in(reg, LL_LANE) < 0) return LL_EDIM;
    if (!same_outs(reg, smem)) return LL_EMISMATCH;
    /* hardware -> (offset[, block]) */
    ll_layout c;
    int rc = ll_invert_and_compose(&c, reg, smem);
    if (rc) return rc;
    uint64_t omask = ll_out_mask(&c, ll_find_out(&c, LL_OFFSET));
    int oshift = c.out[ll_find_out(&c, LL_OFFSET)].shift;
    uint64_t rmask = dim_mask(reg, LL_REGISTER);
    uint64_t used;
    int want = vec ? llx_log2((uint64_t)vec) : llx_log2((uint64_t)(128 / elem_bits));
    int vbits = vector_bits(&c, rmask, oshift, want, &used);
    if (vec && vbits < want) return LL_EINVAL; /* layouts do not allow this vector */
    /* Skip registers that repeat earlier ones. */
    ll_redundancy red;
    ll_redundancy_masks(reg, &red);
    uint64_t dup = red.reg << dim_shift(reg, LL_REGISTER);
    uint64_t iter = rmask & ~used & ~dup; /* register bits enumerated per instruction */
    int nlane = dim_log2(reg, LL_LANE), lshift = dim_shift(reg, LL_LANE);
    if (llx_popcount(iter) > 20) return LL_ESIZE;
    int bytes = (1 << vbits) * elem_bits / 8;
    int lpp = lanes_per_phase(bytes);
    int nlanes = 1 << nlane;
    memset(st, 0, sizeof *st);
    st->vec = 1 << vbits;
    /* Enumerate subsets of `iter` (warp 0, block 0: other warps are XOR
     * translates with the same conflicts). */
    uint64_t sub = 0;
    do {
        int wf_instr = 0;
        for (int p0 = 0; p0 < nlanes; p0 += lpp) {
            uint32_t words[32][32];
            int cnt[32] = {0}, worst = 1;
            for (int l = p0; l < p0 + lpp && l < nlanes; l++) {
                uint64_t x = sub | ((uint64_t)l << lshift);
                uint64_t off = (ll_apply_flat(&c, x) & omask) >> oshift;
                uint64_t addr = off * (uint64_t)elem_bits / 8;
                for (uint64_t w = addr / 4; w <= (addr + (uint64_t)bytes - 1) / 4; w++) {
                    int bank = (int)(w % 32), seen = 0;
                    for (int q = 0; q < cnt[bank]; q++) seen |= words[bank][q] == (uint32_t)w;
                    if (!seen && cnt[bank] < 32) {
                        words[bank][cnt[bank]++] = (uint32_t)w;
                        if (cnt[bank] > worst) worst = cnt[bank];
                    }
                }
            }
            wf_instr += worst;
            st->ideal++;
        }
        st->instructions++;
        st->wavefronts += wf_instr;
        if (wf_instr > st->max_wavefronts) st->max_wavefronts = wf_instr;
        sub = (sub - iter) & iter; /* next subset */
    } while (sub);
    return LL_OK;
}

/* ---- optimal swizzle ---------------------------------------------------- */

typedef struct vlist {
    int n;
    uint64_t v[LL_MAX_BITS];
} vlist;

static void vpush(vlist *l, uint64_t x) { l->v[l->n++] = x; }

/* Images of the bits of in dim `name` (first `limit` bits), in order. */
static void images(const ll_layout *L, const char *name, int limit, vlist *out) {
    out->n = 0;
    int i = ll_find_in(L, name);
    if (i < 0) return;
    for (int q = 0; q < L->in[i].log2 && q < limit; q++) vpush(out, L->basis[L->in[i].shift + q]);
}

static void ech_of(llx_echelon *e, const vlist *l) {
    llx_ech_init(e);
    for (int i = 0; i < l->n; i++) llx_ech_add(e, l->v[i], 0);
}

/* Reduce x modulo the span of e (canonical representative). */
static uint64_t reduce(const llx_echelon *e, uint64_t x) {
    for (int i = 0; i < e->n; i++)
        if (x >> e->piv[i] & 1) x ^= e->vec[i];
    return x;
}

/* Append to `out` vectors of `cand` independent of `seed` and of each other. */
static void complement(const llx_echelon *seed, const vlist *cand, vlist *out, int max) {
    llx_echelon e = *seed;
    for (int i = 0; i < cand->n && out->n < max; i++)
        if (llx_ech_add(&e, cand->v[i], 0)) vpush(out, cand->v[i]);
}

/* Basis of span(a) ∩ span(b). */
static void intersection(const vlist *a, const vlist *b, vlist *out) {
    out->n = 0;
    llx_echelon e;
    llx_ech_init(&e);
    vlist ai = {0, {0}};
    for (int i = 0; i < a->n; i++)
        if (llx_ech_add(&e, a->v[i], (uint64_t)1 << ai.n)) vpush(&ai, a->v[i]);
    for (int j = 0; j < b->n; j++) {
        uint64_t dep;
        if (ai.n + j >= 64) break;
        if (!llx_ech_add_dep(&e, b->v[j], (uint64_t)1 << (ai.n + j), &dep)) {
            uint64_t x = 0;
            for (int i = 0; i < ai.n; i++)
                if (dep >> i & 1) x ^= ai.v[i];
            if (x) vpush(out, x);
        }
    }
}

/* dim(span(a ∪ u) ∩ span(b ∪ u)) - dim(u): the conflict exponent. */
static int conflict_log2(const vlist *s, const vlist *t, const vlist *u) {
    vlist su = *u, tu = *u;
    for (int i = 0; i < s->n; i++) vpush(&su, s->v[i]);
    for (int i = 0; i < t->n; i++) vpush(&tu, t->v[i]);
    llx_echelon eu;
    ech_of(&eu, u);
    return llx_intersect_dim(su.v, su.n, tu.v, tu.n) - eu.n;
}

/* Common setup of a src/dst pair: dst's out dims in src's order. */
static int align_pair(const ll_layout *src, const ll_layout *dst, ll_layout *d2) {
    if (!same_outs(src, dst)) return LL_EMISMATCH;
    const char *names[LL_MAX_DIMS];
    for (int o = 0; o < src->n_out; o++) names[o] = src->out[o].name;
    return ll_transpose_outs(d2, dst, src->n_out, names);
}

static int phase_bits(int nlane_bits, int bytes) {
    int pb = llx_log2((uint64_t)lanes_per_phase(bytes));
    return pb < nlane_bits ? pb : nlane_bits;
}

static int swizzle_try(ll_swizzle *out, const ll_layout *src, const ll_layout *dst,
                       int elem_bits, int max_v) {
    if (ll_find_in(src, LL_REGISTER) < 0 || ll_find_in(src, LL_LANE) < 0 ||
        ll_find_in(dst, LL_REGISTER) < 0 || ll_find_in(dst, LL_LANE) < 0)
        return LL_EDIM;
    ll_layout d;
    int rc = align_pair(src, dst, &d);
    if (rc) return rc;
    /* Blocks must agree: the swizzle is per CTA. */
    vlist bs, bd;
    images(src, LL_BLOCK, 64, &bs);
    images(&d, LL_BLOCK, 64, &bd);
    if (bs.n != bd.n) return LL_EMISMATCH;
    for (int i = 0; i < bs.n; i++)
        if (bs.v[i] != bd.v[i]) return LL_EMISMATCH;
    /* E: elements of one CTA, spanned by src's registers, lanes, warps. */
    vlist rs, rd, ls, ld, ws, wd, all_s = {0, {0}}, all_d = {0, {0}};
    images(src, LL_REGISTER, 64, &rs);
    images(&d, LL_REGISTER, 64, &rd);
    images(src, LL_LANE, 64, &ls);
    images(&d, LL_LANE, 64, &ld);
    images(src, LL_WARP, 64, &ws);
    images(&d, LL_WARP, 64, &wd);
    const vlist *ps[3] = {&rs, &ls, &ws}, *pd[3] = {&rd, &ld, &wd};
    for (int g = 0; g < 3; g++) {
        for (int i = 0; i < ps[g]->n; i++) vpush(&all_s, ps[g]->v[i]);
        for (int i = 0; i < pd[g]->n; i++) vpush(&all_d, pd[g]->v[i]);
    }
    llx_echelon es, ed;
    ech_of(&es, &all_s);
    ech_of(&ed, &all_d);
    int e = es.n;
    if (ed.n != e || llx_intersect_dim(all_s.v, all_s.n, all_d.v, all_d.n) != e)
        return LL_EMISMATCH; /* not the same elements per CTA */
    llx_echelon empty;
    llx_ech_init(&empty);
    /* Candidates for free choices: unit vectors in E first (readable), then
     * src's bases. */
    vlist cand = {0, {0}};
    for (int k = 0; k < src->out_bits; k++)
        if (llx_ech_contains(&es, (uint64_t)1 << k)) vpush(&cand, (uint64_t)1 << k);
    for (int i = 0; i < all_s.n; i++) vpush(&cand, all_s.v[i]);

    /* 1. Vector: registers common to both, exact images first. */
    vlist V = {0, {0}};
    {
        llx_echelon ev, erd;
        llx_ech_init(&ev);
        ech_of(&erd, &rd);
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < rs.n && V.n < max_v; i++) {
                uint64_t x = rs.v[i];
                bool exact = false;
                for (int j = 0; j < rd.n; j++) exact |= rd.v[j] == x;
                bool ok = pass == 0 ? exact : llx_ech_contains(&erd, x);
                if (x && ok && llx_ech_add(&ev, x, 0)) vpush(&V, x);
            }
    }
    int v = V.n;
    /* 2. Fill a 32-bit word when the vector is narrower: src registers, then
     * dst registers, then anything. */
    vlist U = V;
    int word_bits = elem_bits < 32 ? llx_log2((uint64_t)(32 / elem_bits)) : 0;
    if (word_bits > e) word_bits = e;
    if (U.n < word_bits) {
        llx_echelon eu;
        ech_of(&eu, &U);
        vlist pool = {0, {0}};
        for (int i = 0; i < rs.n; i++) vpush(&pool, rs.v[i]);
        for (int i = 0; i < rd.n; i++) vpush(&pool, rd.v[i]);
        for (int i = 0; i < cand.n; i++) vpush(&pool, cand.v[i]);
        complement(&eu, &pool, &U, word_bits);
    }
    int u = U.n;
    llx_echelon eu;
    ech_of(&eu, &U);
    /* 3. Segment bases beyond one 128-byte row of banks. */
    int rowbits = llx_log2((uint64_t)(1024 / elem_bits));
    int s = e > rowbits ? e - rowbits : 0;
    int bytes = (1 << v) * elem_bits / 8;
    vlist T1, T2;
    images(src, LL_LANE, phase_bits(ls.n, bytes), &T1);
    images(&d, LL_LANE, phase_bits(ld.n, bytes), &T2);
    /* Work modulo U: reduced representatives. */
    vlist t1q = {0, {0}}, t2q = {0, {0}}, qall = {0, {0}};
    for (int i = 0; i < T1.n; i++) vpush(&t1q, reduce(&eu, T1.v[i]));
    for (int i = 0; i < T2.n; i++) vpush(&t2q, reduce(&eu, T2.v[i]));
    for (int i = 0; i < cand.n; i++) vpush(&qall, reduce(&eu, cand.v[i]));
    vlist I, A = {0, {0}}, B = {0, {0}}, C = {0, {0}};
    intersection(&t1q, &t2q, &I);
    llx_echelon ei;
    ech_of(&ei, &I);
    complement(&ei, &t1q, &A, 64);
    complement(&ei, &t2q, &B, 64);
    {
        vlist both = I;
        for (int i = 0; i < A.n; i++) vpush(&both, A.v[i]);
        for (int i = 0; i < B.n; i++) vpush(&both, B.v[i]);
        llx_echelon eb;
        ech_of(&eb, &both);
        llx_echelon euq = eb;
        /* complement within Q: candidates reduced mod U, independent of U too */
        for (int i = 0; i < eu.n; i++) llx_ech_add(&euq, eu.vec[i], 0);
        complement(&euq, &qall, &C, 64);
    }
    /* a <= b: pair the smaller difference set with the larger. */
    vlist *sm = A.n <= B.n ? &A : &B, *lg = A.n <= B.n ? &B : &A;
    vlist S = {0, {0}};
    for (int i = 0; i < C.n && S.n < s; i++) vpush(&S, C.v[i]);
    int m = s - S.n;
    if (m > 0) {
        int a = sm->n, b = lg->n;
        int both_cnt = m > b ? m - b : 0; /* pairs split into a_j, b_j */
        if (both_cnt > a) both_cnt = a;
        for (int j = 0; j < a && S.n < s; j++) {
            if (j < both_cnt) {
                vpush(&S, sm->v[j]);
                vpush(&S, lg->v[j]);
            } else {
                vpush(&S, sm->v[j] ^ lg->v[j]);
            }
        }
        for (int j = a; j < b && S.n < s; j++) vpush(&S, lg->v[j]);
        for (int j = 0; j < I.n && S.n < s; j++) vpush(&S, I.v[j]);
    }
    if (S.n != s) return LL_EMISMATCH; /* cannot happen for consistent layouts */
    /* 4. Bank bases: complement of U + S in E. */
    vlist Bk = {0, {0}};
    {
        vlist us = U;
        for (int i = 0; i < S.n; i++) vpush(&us, S.v[i]);
        llx_echelon eus;
        ech_of(&eus, &us);
        if (eus.n != u + s) return LL_EMISMATCH;
        complement(&eus, &cand, &Bk, 64);
    }
    if (u + Bk.n + s != e) return LL_EMISMATCH;
    /* 5. The layout: offset = [V | fill | bank | segment] (+ src's blocks). */
    ll_layout t;
    ll_empty(&t);
    memcpy(t.out, src->out, sizeof t.out);
    t.n_out = src->n_out;
    llx_fix_shifts(&t);
    if ((rc = ll_add_in_dim(&t, LL_OFFSET, e))) return rc;
    int k = 0;
    for (int i = 0; i < U.n; i++) t.basis[k++] = U.v[i];
    for (int i = 0; i < Bk.n; i++) t.basis[k++] = Bk.v[i];
    for (int i = 0; i < S.n; i++) t.basis[k++] = S.v[i];
    if (ll_find_in(src, LL_BLOCK) >= 0) {
        if ((rc = ll_add_in_dim(&t, LL_BLOCK, bs.n))) return rc;
        for (int i = 0; i < bs.n; i++) t.basis[k++] = bs.v[i];
    }
    /* 6. Predicted wavefronts. */
    memset(out, 0, sizeof *out);
    out->smem = t;
    out->vec = 1 << v;
    int ps1 = phase_bits(ls.n, bytes), ps2 = phase_bits(ld.n, bytes);
    out->store_ideal = 1 << (ls.n - ps1);
    out->load_ideal = 1 << (ld.n - ps2);
    out->store_wavefronts = out->store_ideal << conflict_log2(&S, &T1, &U);
    out->load_wavefronts = out->load_ideal << conflict_log2(&S, &T2, &U);
    return LL_OK;
}

/* Does `hw` vectorize `v` elements into smem (aligned, in order)? */
static bool vector_ok(const ll_layout *hw, const ll_layout *smem, int v) {
    ll_layout c;
    if (ll_invert_and_compose(&c, hw, smem)) return false;
    int o = ll_find_out(&c, LL_OFFSET);
    uint64_t used;
    return vector_bits(&c, dim_mask(hw, LL_REGISTER), c.out[o].shift, v, &used) == v;
}

int ll_optimal_swizzle(ll_swizzle *out, const ll_layout *src, const ll_layout *dst,
                       int elem_bits) {
    if (!out || !src || !dst || !bits_ok(elem_bits)) return LL_EINVAL;
    /* The widest vector whose registers stay aligned on both sides. */
    for (int max_v = llx_log2((uint64_t)(128 / elem_bits)); max_v >= 0; max_v--) {
        ll_swizzle sw;
        int rc = swizzle_try(&sw, src, dst, elem_bits, max_v);
        if (rc) return rc;
        int v = llx_log2((uint64_t)sw.vec);
        if (v < max_v) max_v = v;
        if (vector_ok(src, &sw.smem, v) && vector_ok(dst, &sw.smem, v)) {
            *out = sw;
            return LL_OK;
        }
    }
    return LL_ENOSOLUTION;
}

/* ---- conversion planning ------------------------------------------------ */

/* Split a flat value of the cvt's out space into (register, lane) parts. */
typedef struct cvt_view {
    const ll_layout *c;
    int in_reg_shift, in_reg_bits, in_lane_shift, in_lane_bits;
    int out_reg_shift, out_reg_bits, out_lane_shift, out_lane_bits;
} cvt_view;

static void view_of(cvt_view *v, const ll_layout *c) {
    v->c = c;
    int i;
    v->in_reg_shift = (i = ll_find_in(c, LL_REGISTER)) < 0 ? 0 : c->in[i].shift;
    v->in_reg_bits = i < 0 ? 0 : c->in[i].log2;
    v->in_lane_shift = (i = ll_find_in(c, LL_LANE)) < 0 ? 0 : c->in[i].shift;
    v->in_lane_bits = i < 0 ? 0 : c->in[i].log2;
    v->out_reg_shift = (i = ll_find_out(c, LL_REGISTER)) < 0 ? 0 : c->out[i].shift;
    v->out_reg_bits = i < 0 ? 0 : c->out[i].log2;
    v->out_lane_shift = (i = ll_find_out(c, LL_LANE)) < 0 ? 0 : c->out[i].shift;
    v->out_lane_bits = i < 0 ? 0 : c->out[i].log2;
}

/* (dst reg r, dst lane d) -> (src reg, src lane) */
static void view_apply(const cvt_view *v, uint64_t r, uint64_t d, uint64_t *sr, uint64_t *sl) {
    uint64_t x = (r << v->in_reg_shift) | (d << v->in_lane_shift);
    uint64_t y = ll_apply_flat(v->c, x);
    *sr = (y >> v->out_reg_shift) & llx_low(v->out_reg_bits);
    *sl = (y >> v->out_lane_shift) & llx_low(v->out_lane_bits);
}

/* The shuffle schedule.  P = cvt maps (dst reg r, dst lane d) to (src reg,
 * src lane); split P into blocks P_rr, P_rl (lane -> src reg), P_lr, P_ll.
 * Round k (a dst register group) lets receiver d fill dst register
 * r = k ^ A(d): A picks a lane-dependent register so that
 * M = P_ll + P_lr A is invertible, i.e. every sender has one receiver per
 * round (the register/lane transpositions of the paper).  If src lanes are
 * broadcast, M keeps a kernel; receivers reading one sender then want
 * registers differing by W = P_rl(ker M), and each round is split into
 * |W| sub-rounds. */
typedef struct shuf {
    cvt_view v;
    uint64_t dup;        /* dst register bits that duplicate earlier ones */
    uint64_t pack;       /* dst register bits packed into one word */
    int npack;
    int words;           /* 32-bit words per element */
    llx_echelon lanes;   /* dst lane basis: labels < nk are kernel vectors */
    int nk;
    uint64_t a_img[LL_MAX_BITS]; /* A(kernel vector i) */
    int wdim;            /* log2 of sub-rounds per group */
    llx_echelon wext;    /* basis of W extended to the src register space */
    bool m_identity;     /* M == I: lanes read themselves unless P_lr k != 0 */
} shuf;

static uint64_t a_of(const shuf *sh, uint64_t d) {
    uint64_t x = 0, r = 0;
    llx_ech_solve(&sh->lanes, d, &x);
    for (int i = 0; i < sh->nk; i++)
        if (x >> i & 1) r ^= sh->a_img[i];
    return r;
}

static int shuf_setup(shuf *sh, const ll_cvt_plan *plan, const ll_layout *dst, int elem_bits) {
    view_of(&sh->v, &plan->cvt);
    const cvt_view *v = &sh->v;
    ll_redundancy red;
    ll_redundancy_masks(dst, &red);
    sh->dup = red.reg & llx_low(v->in_reg_bits);
    sh->words = elem_bits > 32 ? elem_bits / 32 : 1;
    int maxp = elem_bits < 32 ? llx_log2((uint64_t)(32 / elem_bits)) : 0;
    sh->pack = 0;
    sh->npack = 0;
    llx_echelon ep;
    llx_ech_init(&ep);
    for (int j = 0; j < v->in_reg_bits && sh->npack < maxp; j++) {
        if (sh->dup >> j & 1) continue;
        uint64_t sr, sl;
        view_apply(v, (uint64_t)1 << j, 0, &sr, &sl);
        if (sl == 0 && sr && llx_ech_add(&ep, sr, 0)) {
            sh->pack |= (uint64_t)1 << j;
            sh->npack++;
        }
    }
    uint64_t free_regs = llx_low(v->in_reg_bits) & ~sh->dup & ~sh->pack;
    /* ker P_ll, and the image of P_ll to extend */
    llx_echelon ell;
    llx_ech_init(&ell);
    uint64_t kern[LL_MAX_BITS];
    int nkern = 0;
    for (int q = 0; q < v->in_lane_bits; q++) {
        uint64_t sr, sl, dep;
        view_apply(v, 0, (uint64_t)1 << q, &sr, &sl);
        if (!llx_ech_add_dep(&ell, sl, (uint64_t)1 << q, &dep)) kern[nkern++] = dep;
    }
    /* A: kernel vector i -> a dst register bit whose src lane is new */
    uint64_t resolved[LL_MAX_BITS], unresolved[LL_MAX_BITS];
    int nres = 0, nun = 0;
    uint64_t taken = 0;
    for (int i = 0; i < nkern; i++) {
        int found = -1;
        for (int j = 0; j < v->in_reg_bits && found < 0; j++) {
            if (!(free_regs >> j & 1) || (taken >> j & 1)) continue;
            uint64_t sr, sl;
            view_apply(v, (uint64_t)1 << j, 0, &sr, &sl);
            if (llx_ech_add(&ell, sl, 0)) found = j;
        }
        if (found >= 0) {
            taken |= (uint64_t)1 << found;
            sh->a_img[nres] = (uint64_t)1 << found;
            resolved[nres++] = kern[i];
        } else {
            unresolved[nun++] = kern[i];
        }
    }
    sh->nk = nres;
    llx_ech_init(&sh->lanes);
    int label = 0;
    for (int i = 0; i < nres; i++) llx_ech_add(&sh->lanes, resolved[i], (uint64_t)1 << label++);
    for (int i = 0; i < nun; i++) llx_ech_add(&sh->lanes, unresolved[i], (uint64_t)1 << label++);
    for (int q = 0; q < v->in_lane_bits; q++)
        if (llx_ech_add(&sh->lanes, (uint64_t)1 << q, (uint64_t)1 << label)) label++;
    /* W = P_rl(ker M), ker M = span(unresolved) */
    vlist W = {0, {0}};
    llx_echelon ew;
    llx_ech_init(&ew);
    for (int i = 0; i < nun; i++) {
        uint64_t sr, sl;
        view_apply(v, 0, unresolved[i], &sr, &sl);
        if (sr && llx_ech_add(&ew, sr, 0)) vpush(&W, sr);
    }
    sh->wdim = W.n;
    sh->m_identity = true;
    for (int q = 0; q < v->in_lane_bits; q++) {
        uint64_t sr, sl, d = (uint64_t)1 << q;
        view_apply(v, a_of(sh, d), d, &sr, &sl);
        if (sl != d) sh->m_identity = false;
    }
    llx_ech_init(&sh->wext);
    for (int i = 0; i < W.n; i++) llx_ech_add(&sh->wext, W.v[i], (uint64_t)1 << i);
    for (int j = 0; j < v->out_reg_bits; j++)
        llx_ech_add(&sh->wext, (uint64_t)1 << j, (uint64_t)1 << (W.n + j));
    return LL_OK;
}

/* Does round k (a group of dst registers) move anything between lanes?  The
 * sender of d is P_lr k ^ M d, so all lanes read themselves exactly when
 * M == I and P_lr k == 0. */
static bool group_needs(const shuf *sh, uint64_t k) {
    if (!sh->m_identity) return true;
    uint64_t sr, sl;
    view_apply(&sh->v, k, 0, &sr, &sl);
    return sl != 0;
}

/* Sub-round of receiver d: coordinates along W of the register it wants
 * beyond P_rr k. */
static uint64_t subround(const shuf *sh, uint64_t d) {
    uint64_t sr, sl, x = 0;
    view_apply(&sh->v, a_of(sh, d), d, &sr, &sl);
    llx_ech_solve(&sh->wext, sr, &x);
    return x & llx_low(sh->wdim);
}

static int count_rounds(const shuf *sh) {
    int groups = 0;
    uint64_t skip = sh->dup | sh->pack;
    for (uint64_t r = 0; r < ((uint64_t)1 << sh->v.in_reg_bits); r++)
        if (!(r & skip) && group_needs(sh, r)) groups++;
    return groups * (1 << sh->wdim) * sh->words;
}

int ll_plan_conversion(ll_cvt_plan *plan, const ll_layout *src, const ll_layout *dst,
                       int elem_bits) {
    if (!plan || !src || !dst || !bits_ok(elem_bits)) return LL_EINVAL;
    if (!same_outs(src, dst)) return LL_EMISMATCH;
    ll_cvt_plan p;
    memset(&p, 0, sizeof p);
    p.elem_bits = elem_bits;
    int rc = ll_invert_and_compose(&p.cvt, dst, src);
    if (rc) return rc;
    static const char *const order[4] = {LL_BLOCK, LL_WARP, LL_LANE, LL_REGISTER};
    for (int i = 0; i < 4; i++) {
        if (ll_find_in(&p.cvt, order[i]) < 0 && ll_find_out(&p.cvt, order[i]) < 0) continue;
        ll_layout q;
        if (ll_quotient(&q, &p.cvt, 1, &order[i]) != LL_OK) break;
        p.cvt = q;
    }
    if (dim_log2(&p.cvt, LL_BLOCK) || ll_find_out(&p.cvt, LL_BLOCK) >= 0) p.kind = LL_CVT_CLUSTER;
    else if (ll_find_in(&p.cvt, LL_WARP) >= 0 || ll_find_out(&p.cvt, LL_WARP) >= 0)
        p.kind = LL_CVT_SHARED;
    else if (ll_find_in(&p.cvt, LL_LANE) >= 0 || ll_find_out(&p.cvt, LL_LANE) >= 0)
        p.kind = LL_CVT_SHUFFLE;
    else if (ll_find_in(&p.cvt, LL_REGISTER) >= 0 || ll_find_out(&p.cvt, LL_REGISTER) >= 0)
        p.kind = LL_CVT_REGISTER;
    else p.kind = LL_CVT_NOOP;
    if (p.kind == LL_CVT_SHARED) {
        rc = ll_optimal_swizzle(&p.swizzle, src, dst, elem_bits);
        if (rc) return rc;
    } else if (p.kind == LL_CVT_SHUFFLE) {
        shuf sh;
        shuf_setup(&sh, &p, dst, elem_bits);
        p.shuffle_rounds = count_rounds(&sh);
        p.shuffle_pack = 1 << sh.npack;
        for (int q = 0; q < sh.v.in_lane_bits; q++) {
            uint64_t sr, sl, a = a_of(&sh, (uint64_t)1 << q);
            view_apply(&sh.v, a, (uint64_t)1 << q, &sr, &sl);
            if (sr || a) p.shuffle_selects = true;
        }
    }
    *plan = p;
    return LL_OK;
}

int ll_shuffle_step(const ll_cvt_plan *plan, const ll_layout *src, const ll_layout *dst, int round,
                    int lane, int *src_lane, int64_t *src_reg, int64_t *dst_reg) {
    (void)src;
    if (!plan || !dst || !src_lane || !src_reg || !dst_reg) return LL_EINVAL;
    if (plan->kind != LL_CVT_SHUFFLE || round < 0 || round >= plan->shuffle_rounds) return LL_EINVAL;
    shuf sh;
    shuf_setup(&sh, plan, dst, plan->elem_bits);
    if (lane < 0 || (uint64_t)lane >= ((uint64_t)1 << sh.v.in_lane_bits)) return LL_EINVAL;
    int per_group = 1 << sh.wdim;
    int words = sh.words;
    int g = round / words / per_group;
    uint64_t q = (uint64_t)((round / words) % per_group);
    uint64_t skip = sh.dup | sh.pack, r = 0;
    for (int seen = -1;; r++) {
        if (r >= ((uint64_t)1 << sh.v.in_reg_bits)) return LL_EINVAL;
        if (!(r & skip) && group_needs(&sh, r) && ++seen == g) break;
    }
    for (int j = 0; j < 4; j++) src_reg[j] = dst_reg[j] = -1;
    uint64_t d = (uint64_t)lane;
    if (subround(&sh, d) != q) {
        *src_lane = lane; /* idle this sub-round */
        return LL_OK;
    }
    uint64_t sr, sl;
    r ^= a_of(&sh, d);
    view_apply(&sh.v, r, d, &sr, &sl);
    *src_lane = (int)sl;
    /* the packed registers: all combinations of the pack bits */
    int j = 0;
    uint64_t sub = 0;
    do {
        uint64_t rr = r | sub, sr2, sl2;
        view_apply(&sh.v, rr, d, &sr2, &sl2);
        src_reg[j] = (int64_t)sr2;
        dst_reg[j] = (int64_t)rr;
        j++;
        sub = (sub - sh.pack) & sh.pack;
    } while (sub && j < 4);
    return LL_OK;
}
