/* gpu_plan.c — the GPU code generator's launch planning (vector width, rows, split, online pairs, tiles), and one kernel variant (the values that only feed half-precision results: the driver's step, driver_passes.c).
 * Split out of gpu_nvptx.c (the driver): see its comment. */
#include "gpu_internal.h"

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
} scan;

static void scan_ix(scan *S, ic_ix a, ic_dtype t) {
    bool na;
    if (S->vv < 0 || ix_coeff(S->c, a, S->vv, &na) != 1 || na) return;
    int e = (int)ic_dtype_size(t);
    if (e < S->min_esz) S->min_esz = e;
}

static void scan_x(scan *S, ic_xid x) {
    if (!ic_marks_add(&S->c->xmark, x)) return;
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
        case IC_OP_ASIN: case IC_OP_ACOS: case IC_OP_ASINH: case IC_OP_ACOSH: case IC_OP_ATANH:
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
int gg_choose_vec(ic_ctx *c, ic_kernel *k, int32_t vv, int64_t vsize, bool rows) {
    if (vv < 0) return 1;
    scan S = {.c = c, .vv = vv, .min_esz = 99};
    ic_marks_begin(c, &c->xmark, c->nxs);
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

static int stage_mode(const ic_config *cf) {
    const char *e = cf->gpu_stage;
    if (!strcmp(e, "0")) return 0;
    return !strcmp(e, "all") ? 2 : 1;
}

/* every load under x: gathers (computed indices) make it -2, a second row-varying load or one
 * not contiguous along vv -1; else *the is the row-varying load (or stays -1) */
static void stage_walk(ic_ctx *c, ic_xid x, int32_t vv, ic_xid *the, bool *uses) {
    if (x < 0 || *the < -1 || !ic_marks_add(&c->xmark, x)) return;
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
    stage_walk(c, e->a, vv, the, uses);
    stage_walk(c, e->b, vv, the, uses);
    stage_walk(c, e->c, vv, the, uses);
}

static bool stage_rows_ok(ic_ctx *c, const ic_kernel *k, int32_t vv) {
    if (vv < 0) return false;
    ic_xid the = -1;
    unsigned posmask = 0;
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (!it->inner) continue;
        bool uses = false;
        ic_marks_begin(c, &c->xmark, c->nxs);
        stage_walk(c, it->expr, vv, &the, &uses);
        if (it->expr2 >= 0) stage_walk(c, it->expr2, vv, &the, &uses);
        if (the < -1) return false;
        if (uses) posmask |= 1u << (it->pos & 31);
    }
    return the >= 0 && __builtin_popcount(posmask) >= 2;
}

void gg_plan_kernel(ic_ctx *c, ic_kernel *k, plan *P, int V, int nsm, int S, int pass, const int *slot,
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
            if (S <= 1 && sm && vals > (sm == 2 ? 8 : 16) && c->gpu_stage_ok &&
                stage_rows_ok(c, k, P->vv)) {
                staged = true;
                P->T = 512;
            }
        } else {
            P->T = 512;
            P->R = 1;
        }
    }
    if (S > 1 && k->vec_outer) { /* split columns: R columns on lanes, T threads down them */
        P->R = gg_split_rows_per_block(k);
        P->T = SPLIT_T / P->R;
        P->jlow = false;
    } else if (S > 1) {
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
        P->grid = (unsigned)(pass >= 0 ? blocks * P->Sg : blocks);
        /* a partial pass of more than 3 blocks per SM: 4 resident (32 registers), so that the
         * default split (16 per SM) runs in full waves (split columns: not asked; their passes
         * carry fused producers, e.g. BatchNorm's backward with maxpool's, and would spill) */
        if (pass >= 0 && P->grid > 3 * (unsigned)nsm && !k->vec_outer) P->minctasm = 2048 / P->T;
        P->online = online;
        if (online && P->minctasm) P->minctasm = 1024 / P->T > 1 ? 1024 / P->T : 1; /* 64 registers */
        P->pass = pass;
        P->slot = slot;
        P->area = k->vec_outer;
    }
}

/* (Split rows in one launch, the last block of each row to finish doing the combining
 * launch's work through per-row counters, took 19.1-19.2 us of device time for x.sum() of
 * 64 MB on the H200 against 17.6-17.7 us as two launches, the combining one overlapped by
 * programmatic dependent launch: removed.) */

/* Blocks per row for few huge rows (x.sum(), softmax of one long row) or few groups of
 * columns (vec_outer: x.sum(0) of few columns, BatchNorm's statistics and backward sums over
 * N, H, W in channels-last): enough blocks to fill the device, each with a few unrolled
 * iterations. 0: no split. A row value stored between passes and loaded by a later pass of
 * the kernel would be read across blocks before the final launch stores it: such kernels
 * stay unsplit (a stored row value nothing in the kernel reads, a running-statistics update,
 * is stored by the final launch). */

/* does an item of pass > p load buffer b? */
static bool loads_buf(ic_ctx *c, ic_xid x, int b) {
    if (x < 0 || !ic_marks_add(&c->xmark, x)) return false;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && e->buf == b) return true;
    if (e->kind == X_ROWVAL) return false;
    return loads_buf(c, e->a, b) || loads_buf(c, e->b, b) || loads_buf(c, e->c, b);
}

static bool read_later(ic_ctx *c, const ic_kernel *k, const ic_item *st) {
    ic_marks_begin(c, &c->xmark, c->nxs);
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (it->pos <= st->pos) continue;
        if (loads_buf(c, it->expr, st->buf) || loads_buf(c, it->expr2, st->buf)) return true;
    }
    return false;
}

/* Split columns: R = 32 columns on the lanes of a block (the row layout puts rows on lanes
 * only as whole warps: fewer columns, 16 at least for vec_outer, leave lanes idle), the
 * reduced extent over SPLIT_T / R threads and the parts. */
int gg_split_rows_per_block(const ic_kernel *k) {
    (void)k;
    return 32;
}

int gg_choose_split(ic_ctx *c, ic_kernel *k, int nsm, int V, bool online) {
    if (!k->has_red) return 0;
    int64_t rows = 1, n = 1;
    for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
    for (int i = 0; i < k->ninner; i++) n *= k->isize[i];
    if (rows < 1) return 0;
    int64_t blocks = rows, T = SPLIT_T, pmax = SPLIT_PMAX;
    if (k->vec_outer) {
        /* unsplit: ceil(rows / 32) blocks; the combining launches read S / T partials a thread
         * (unrolled), so at most VO_SPLIT_PMAX parts; a short extent stays one block */
        int R = gg_split_rows_per_block(k);
        blocks = (rows + R - 1) / R;
        T = SPLIT_T / R;
        V = 1;
        pmax = VO_SPLIT_PMAX;
        if (n < VO_SPLIT_MIN || online) return 0;
        for (int i = 0; i < k->ninner; i++)
            if (ic_tainted(c, k->isize[i])) return 0;
        for (int i = 0; i < k->nouter; i++)
            if (ic_tainted(c, k->osize[i])) return 0;
    }
    if (blocks >= nsm) return 0;
    for (int j = 0; j < k->nitems; j++)
        if (k->items[j].pos % 2 == 0 && k->items[j].store && k->items[j].pos != k->npos - 1 &&
            read_later(c, k, &k->items[j]))
            return 0;
    int64_t chunks = (n / V + T - 1) / T; /* the vector variant's */
    /* at least one unrolled iteration a part, and no part without chunks (the cap used to
     * round down: 2 rows of 4M f32 got 488 parts of 8 chunks a row, half of them empty) */
    int64_t per = UNROLL;
    int64_t s = ((int64_t)(online ? ONLINE_BLOCKS_PER_SM : SPLIT_BLOCKS_PER_SM) * nsm + blocks - 1) / blocks;
    if (s > (chunks + per - 1) / per) s = (chunks + per - 1) / per;
    if (s > pmax) s = pmax;
    return s >= 2 ? (int)s : 0;
}

/* Online split rows (TORCHC_GPU_ONLINE=0 off; in the key): a split row kernel whose pass p
 * reduces A and whose pass p + 2 reduces B of
 *   softmax / log_softmax:  A = max(x),  B = sum(exp(x - A))
 *   layer_norm / var:       A = mean(x), B = mean or sum of (x - A)^2
 * (x the same expression, f32 values) makes both partials in A's launch (gg_emit_online) and
 * combines B with each part's A (gg_online_combine): one read of the row fewer. B must be alone
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

int gg_online_pair(ic_ctx *c, const ic_kernel *k, int *ja, int *jb, ic_xid *shift) {
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

static void collect_loads(ic_ctx *c, ic_xid x, ic_xid *out, int *n, int cap) {
    if (x < 0 || !ic_marks_add(&c->xmark, x)) return;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && e->a < 0 && *n < cap) out[(*n)++] = x;
    if (e->kind == X_ROWVAL) return;
    collect_loads(c, e->a, out, n, cap);
    collect_loads(c, e->b, out, n, cap);
    collect_loads(c, e->c, out, n, cap);
}

/* A pointwise kernel stored contiguously along its last var vv that loads an input with a
 * stride along vv but contiguously along another var u (x.t() + y): a transpose tile.
 * On by default since it ran on the H200 (test_gpu with tiles: 76 passed; x.T + y f32 went
 * from 0.30 to 0.98 of copy bandwidth); TORCHC_GPU_TILE=0 turns it off. */
bool gg_choose_tile(ic_ctx *c, ic_kernel *k, plan *P) {
    bool on = c->cfg.gpu_tile != 0;
    if (!on || k->has_red || k->ninner < 1) return false;
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS];
    int nv = ic_kernel_loop_vars(k, vars, sizes);
    int32_t vv = vars[nv - 1];
    int64_t sv = sizes[nv - 1];
    if (sv < 32) return false;
    bool na;
    ic_marks_begin(c, &c->xmark, c->nxs);
    ic_xid loads[64];
    int nl = 0;
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (!it->store) continue;
        if (ix_coeff(c, it->out_ix, vv, &na) != 1 || na) return false;
        collect_loads(c, it->expr, loads, &nl, 64);
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

/* V2 tile: a 16-bit transpose as 64 x 64 tiles of 32-bit words (gg_emit_tile2), planned from
 * the 32 x 32 one (T), which stays the fallback variant for unaligned base pointers. Needs
 * even su and sv, and transposed loads that are in-bounds pairs along u: coefficient 1,
 * affine, every other term and the offset even (then an even u is a 4-byte aligned word). */
bool gg_choose_tile2(ic_ctx *c, ic_kernel *k, const plan *T, plan *P) {
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
bool gg_fits_i32(gg *g, ic_kernel *k, const plan *P) {
    const int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 25);
    int64_t total = P->mode != P_ROWS ? P->G * P->V : P->rows * ((P->C + 8) * P->T + 1) * P->V;
    if (total >= lim || P->rows + P->R >= lim) return false;
    int64_t rows = 1;
    for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
    if (g->max_span >= lim) return false;
    return rows <= 0 || g->max_row_bytes < (lim + rows - 1) / rows; /* every row copy's offsets */
}

/* gg_fits_i32's bounds over all buffers of the graph, once (not per variant) */
void gg_buffer_bounds(gg *g) {
    ic_ctx *c = g->c;
    g->max_span = g->max_row_bytes = 0;
    for (int b = 0; b < c->nbufs; b++) {
        const ic_buffer *Bf = &c->bufs[b];
        if (Bf->span > g->max_span) g->max_span = Bf->span;
        int64_t rb = Bf->span * (int64_t)ic_dtype_size(Bf->dtype);
        if (Bf->kind == 3 && rb > g->max_row_bytes) g->max_row_bytes = rb;
    }
}

/* ---- one kernel variant ----------------------------------------------------------------------- */
static void order_loads(ic_ctx *c, ic_xid x, const int *used, bool *placed, int *ub, int *nu) {
    if (!ic_marks_add(&c->xmark, x)) return;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && used[e->buf] && !placed[e->buf]) placed[e->buf] = true, ub[(*nu)++] = e->buf;
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) order_loads(c, e->a, used, placed, ub, nu);
    if (e->b >= 0) order_loads(c, e->b, used, placed, ub, nu);
    if (e->c >= 0) order_loads(c, e->c, used, placed, ub, nu);
}

/* The kernel parameters: the buffers marked in `used`, in the order the code first meets
 * them (the n0 of `first`, then each item's loads in expression order and its store, the
 * rest by index), not by buffer number: a repeated layer's kernel then has its parameters in
 * the same order as the first layer's and is the same function (gg_kbegin/gg_kend). */
int gg_param_order(ic_ctx *c, const ic_kernel *k, bool stores_only, const int *used, const int *first, int n0,
                       int *ub) {
    bool *placed = ic_alloc(c, (size_t)c->nbufs + 1);
    ic_marks_begin(c, &c->xmark, c->nxs);
    int nu = 0;
    for (int i = 0; i < n0; i++)
        if (first[i] >= 0 && used[first[i]] && !placed[first[i]]) placed[first[i]] = true, ub[nu++] = first[i];
    for (int j = 0; k && j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (stores_only && !it->store) continue;
        order_loads(c, it->expr, used, placed, ub, &nu);
        if (it->store && used[it->buf] && !placed[it->buf]) placed[it->buf] = true, ub[nu++] = it->buf;
    }
    for (int b = 0; b < c->nbufs; b++)
        if (used[b] && !placed[b]) ub[nu++] = b;
    return nu;
}

void gg_add_annotation(gg *g, LLVMValueRef fn, const char *key, int v) {
    LLVMValueRef md[3] = {fn, LLVMMDStringInContext(g->cg.ctx, key, (unsigned)strlen(key)),
                          LLVMConstInt(g->cg.i32, (unsigned)v, 0)};
    LLVMAddNamedMetadataOperand(g->cg.mod, "nvvm.annotations", LLVMMDNodeInContext(g->cg.ctx, md, 3));
}

/* The kernel function `name` of np pointer parameters, the first nu of them the buffers ub[i]
 * (used[b]: 1 read, 2 written): g's function, its buffers' pointers and state set to them. */
LLVMValueRef gg_kernel_fn(gg *g, const char *name, int np, int nu, const int *ub, const int *used) {
    ic_ctx *c = g->c;
    LLVMTypeRef *ps = ic_alloc(c, (size_t)(np + 1) * sizeof(LLVMTypeRef));
    for (int i = 0; i < np; i++) ps[i] = g->gptr;
    LLVMValueRef fn = LLVMAddFunction(g->cg.mod, name, LLVMFunctionType(g->cg.vd, ps, (unsigned)np, 0));
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
    return fn;
}

/* The buffers of kernel k (*used: per buffer, 1 read, 2 written) and its parameters in order
 * (*ub), the same for all its variants; their count. */
int gg_variant_params(ic_ctx *c, const ic_kernel *k, int **used, int **ub) {
    int *u = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    ic_marks_begin(c, &c->xmark, c->nxs);
    for (int j = 0; j < k->nitems; j++) {
        x_mark_bufs(c, k->items[j].expr, u);
        if (k->items[j].store) u[k->items[j].buf] |= 2;
    }
    *ub = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    *used = u;
    return gg_param_order(c, k, false, u, NULL, 0, *ub);
}

void gg_gen_variant(gg *g, ic_kernel *k, const plan *P, ic_gvariant *out, const char *name, const int *used,
                    const int *ub, int nu) {
    ic_ctx *c = g->c;
    LLVMValueRef fn = gg_kernel_fn(g, name, nu + (P->S > 1) /* split rows: the partials last */, nu, ub, used);
    g->part = P->S > 1 ? LLVMGetParam(fn, (unsigned)nu) : NULL;
    unsigned kna = LLVMGetEnumAttributeKindForName("noalias", 7);
    unsigned kro = LLVMGetEnumAttributeKindForName("readonly", 8);
    unsigned kwo = LLVMGetEnumAttributeKindForName("writeonly", 9);
    for (int i = 0; i < nu; i++) {
        int b = ub[i];
        LLVMAddAttributeAtIndex(fn, (unsigned)(1 + i), LLVMCreateEnumAttribute(g->cg.ctx, kna, 0));
        if (used[b] == 1) LLVMAddAttributeAtIndex(fn, (unsigned)(1 + i), LLVMCreateEnumAttribute(g->cg.ctx, kro, 0));
        if (used[b] == 2) LLVMAddAttributeAtIndex(fn, (unsigned)(1 + i), LLVMCreateEnumAttribute(g->cg.ctx, kwo, 0));
    }
    gg_add_annotation(g, fn, "kernel", 1);
    gg_add_annotation(g, fn, "maxntidx", P->Bk);
    g->dyn = NULL;
    g->stage_x = -1;
    if (P->minctasm) gg_add_annotation(g, fn, "minctasm", P->minctasm);
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
    /* the driver's low-precision analysis (driver_passes.c), for the second generation */
    g->need = g->v2 ? ic_lowp_map(c, (int)(k - c->kernels)) : NULL;
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
    if (P->mode == P_POINTWISE) gg_emit_pointwise(g, k);
    else if (P->mode == P_TILE && P->tw == 2) gg_emit_tile2(g, k);
    else if (P->mode == P_TILE) gg_emit_tile(g, k);
    else gg_emit_rows(g, k);
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
