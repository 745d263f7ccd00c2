/* finalize.c — kernels to their loop form.
 *
 * Requires: scheduled kernels (items with X_LOAD tuples in kernel vars).
 * Produces: buffers (inputs, outputs, needed intermediates) with the strides used to
 *   address them; item stores decided (outputs, values read by later kernels or later
 *   passes; values only read at the same element in the same pass are forwarded in
 *   registers and never stored); intermediates read only inside their own row become
 *   per-thread row scratch (kind 3, on the kernel's stack); loads as X_LOADF flat
 *   offsets (gathers keep their index expression); loop vars split into outer and inner
 *   lists with adjacent dims collapsed where every access stays affine. Then one loop
 *   shape per kernel:
 *     tiles      pointwise, short outer loop: the inner var cut into parts for threads
 *     blocked    pointwise with transposed reads: 2-D blocks of rows x columns
 *     vec_outer  reductions contiguous along the kept dim: lanes along it
 *     split      one huge row: parallel parts with partial accumulators + combine
 *   Extern kernels get their output buffer (an intermediate unless it is a graph output)
 *   and mark their operands as needed in memory; they have no loops.
 * Dynamic graphs: an outer var of symbolic (tainted) size must be the first one (the
 *   caller's iteration range covers it: the kernel never needs its size), else
 *   IC_EUNSUPPORTED; inner vars may be symbolic (runtime loop bounds from the symbol
 *   values); tiles/split/vec_outer/blocking never cut a symbolic var. Pointwise kernels
 *   keep a symbolic var apart (no collapse) and, when it is last, get no inner loop.
 * Keeps: item order and positions. Breaks: out_ixv (tuples are stale after collapsing).
 */
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

typedef struct rw {
    ic_ctx *c;
    int kidx, pos; /* to_flat: the reading item's kernel and position */
    ic_xid *memo; /* xid -> rewritten, valid where stamp[xid] == cur; sized at creation */
    uint32_t *stamp, cur;
    int n;
} rw;

static rw rw_new(ic_ctx *c) {
    rw r = {.c = c, .n = c->nxs, .cur = 1};
    r.memo = ic_alloc(c, (size_t)r.n * sizeof(ic_xid));
    r.stamp = ic_alloc(c, (size_t)r.n * sizeof(uint32_t));
    return r;
}

/* Forget every memo entry in O(1) (a fresh rw per item made finalize quadratic: 20 ms for a
 * 500-item kernel; a fresh rw per collapse attempt and per row-scratch buffer made it
 * quadratic in the kernel count: 0.7 s for a DenseNet-121 backward); re-sized when the
 * expression pool has outgrown it. Expressions are interned, so a memo miss only costs time. */
static void rw_next(rw *R) {
    if (R->c->nxs > R->n + R->n / 2) {
        rw r = rw_new(R->c);
        r.kidx = R->kidx;
        r.pos = R->pos;
        *R = r;
    } else {
        R->cur++;
    }
}

#define RW_HIT(R, x) ((x) < (R)->n && (R)->stamp[x] == (R)->cur)
#define RW_SET(R, x, r) ((x) < (R)->n ? ((R)->memo[x] = (r), (R)->stamp[x] = (R)->cur) : 0)

static ic_ix flat(ic_ctx *c, ic_ixv T, const ic_meta *m) {
    ic_ix off = ix_const(c, 0);
    for (int d = 0; d < m->ndim; d++) {
        ic_ix t = ixv_get(c, T, d);
        int64_t k;
        if (ix_is_const(c, t, &k) && k == 0) continue;
        off = ix_add(c, off, ix_scale(c, t, m->strides[d]));
    }
    return off;
}

/* X_LOAD(value, tuple) -> X_LOADF(buffer, offset) */
static ic_xid to_flat(rw *R, ic_xid x) {
    ic_ctx *c = R->c;
    if (RW_HIT(R, x)) return R->memo[x];
    ic_x e = c->xs[x];
    ic_xid r = x;
    switch (e.kind) {
    case X_LOAD: {
        ic_val u = e.buf;
        if (c->kernel_of[u] == R->kidx) {
            const ic_item *P = &c->kernels[R->kidx].items[c->item_of[u]];
            if (P->pos == R->pos) {
                /* same pass, same element (sched checked): forward the value */
                r = P->expr;
                break;
            }
        }
        int b = c->buf_of[u];
        if (b < 0) ic_fail(c, IC_EINTERNAL, "load of %%%d without a buffer", e.buf);
        r = x_loadf(c, b, flat(c, e.ix, &c->bufs[b].meta), e.dtype);
        break;
    }
    case X_GATHER: {
        int b = c->buf_of[e.buf];
        if (b < 0) ic_fail(c, IC_EINTERNAL, "gather from %%%d without a buffer", e.buf);
        const ic_meta *m = &c->bufs[b].meta;
        if (ic_tainted(c, m->strides[e.aux]) || ic_tainted(c, m->sizes[e.aux]))
            ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: index_select with a symbolic stride");
        r = x_gatherf(c, b, flat(c, e.ix, m), to_flat(R, e.a), m->strides[e.aux], m->sizes[e.aux], e.dtype);
        break;
    }
    case X_OP: {
        ic_xid a = to_flat(R, e.a);
        ic_xid b = e.b >= 0 ? to_flat(R, e.b) : -1;
        ic_xid cc = e.c >= 0 ? to_flat(R, e.c) : -1;
        r = x_op(c, e.op, e.dtype, a, b, cc);
        break;
    }
    case X_CAST:
        r = x_cast(c, to_flat(R, e.a), e.dtype);
        break;
    default:
        break;
    }
    RW_SET(R, x, r);
    return r;
}

/* substitute vars in every flat offset */
typedef struct sub {
    const int32_t *from;
    const ic_ix *to;
    int n;
    int32_t z;   /* the new var: must stay affine */
    bool bad;
} sub;

static ic_ix sub_ix(ic_ctx *c, sub *S, ic_ix a) {
    ic_ix r = ix_subst(c, a, S->from, S->to, S->n);
    bool nonaff;
    ix_coeff(c, r, S->z, &nonaff);
    if (nonaff) S->bad = true;
    return r;
}

static ic_xid sub_x(rw *R, sub *S, ic_xid x) {
    ic_ctx *c = R->c;
    if (RW_HIT(R, x)) return R->memo[x];
    ic_x e = c->xs[x];
    ic_xid r = x;
    switch (e.kind) {
    case X_LOADF:
        if (e.a >= 0)
            r = x_gatherf(c, e.buf, sub_ix(c, S, e.ix), sub_x(R, S, e.a), (int64_t)e.cval, e.aux, e.dtype);
        else
            r = x_loadf(c, e.buf, sub_ix(c, S, e.ix), e.dtype);
        break;
    case X_IXVAL:
        r = x_ixval(c, sub_ix(c, S, e.ix));
        break;
    case X_OP: {
        ic_xid a = sub_x(R, S, e.a);
        ic_xid b = e.b >= 0 ? sub_x(R, S, e.b) : -1;
        ic_xid cc = e.c >= 0 ? sub_x(R, S, e.c) : -1;
        r = x_op(c, e.op, e.dtype, a, b, cc);
        break;
    }
    case X_CAST:
        r = x_cast(c, sub_x(R, S, e.a), e.dtype);
        break;
    default:
        break;
    }
    RW_SET(R, x, r);
    return r;
}

/* Try to merge vars list[i] (slower) and list[i+1] into one. */
static bool collapse(ic_ctx *c, rw *R, ic_kernel *k, int32_t *list, int64_t *size, int *len, int i) {
    int32_t u = list[i], w = list[i + 1];
    int64_t su = size[i], sw = size[i + 1];
    if (su == 0 || sw == 0) return false;
    /* pointwise: a symbolic var stays apart (the first outer loop, the threads' range) */
    if (!k->has_red && (ic_tainted(c, su) || ic_tainted(c, sw))) return false;
    int32_t z = ic_new_var(c, su * sw);
    ic_ix zi = ix_var(c, z);
    int32_t from[2] = {u, w};
    ic_ix to[2] = {ix_div(c, zi, sw), ix_mod(c, zi, sw)};
    sub S = {.from = from, .to = to, .n = 2, .z = z};
    rw_next(R);
    ic_xid *nx = ic_alloc(c, (size_t)k->nitems * sizeof(ic_xid));
    ic_ix *no = ic_alloc(c, (size_t)k->nitems * sizeof(ic_ix));
    ic_xid *nx2 = ic_alloc(c, (size_t)k->nitems * sizeof(ic_xid));
    for (int j = 0; j < k->nitems && !S.bad; j++) {
        nx[j] = sub_x(R, &S, k->items[j].expr);
        nx2[j] = k->items[j].expr2 >= 0 ? sub_x(R, &S, k->items[j].expr2) : -1;
        no[j] = k->items[j].out_ix >= 0 ? sub_ix(c, &S, k->items[j].out_ix) : -1;
    }
    if (S.bad) return false;
    for (int j = 0; j < k->nitems; j++) {
        k->items[j].expr = nx[j];
        k->items[j].expr2 = nx2[j];
        k->items[j].out_ix = no[j];
    }
    list[i] = z;
    size[i] = su * sw;
    for (int j = i + 1; j + 1 < *len; j++) {
        list[j] = list[j + 1];
        size[j] = size[j + 1];
    }
    (*len)--;
    return true;
}

static void collapse_all(ic_ctx *c, rw *R, ic_kernel *k, int32_t *list, int64_t *size, int *len) {
    int i = *len - 2;
    while (i >= 0) {
        if (collapse(c, R, k, list, size, len, i)) {
            if (i > *len - 2) i = *len - 2;
        } else {
            i--;
        }
    }
}

static int add_buffer(ic_ctx *c, int kind, int index, ic_val v, const ic_meta *m) {
    ic_buffer *b = IC_PUSH(c, c->bufs, c->nbufs, c->bcap);
    memset(b, 0, sizeof *b);
    b->kind = kind;
    b->index = index;
    b->v = v;
    b->dtype = m->dtype;
    b->meta = *m;
    b->nbytes = ic_numel(m) * (int64_t)ic_dtype_size(m->dtype);
    b->span = ic_numel(m) ? 1 : 0;
    for (int d = 0; d < m->ndim && b->span; d++)
        b->span += (m->sizes[d] - 1) * (m->strides[d] < 0 ? -m->strides[d] : m->strides[d]);
    b->offset = -1;
    return c->nbufs - 1;
}

/* needed[u]: u must be in memory; external[u]: some other kernel reads it */
static void mark_needed(ic_ctx *c, bool *needed, bool *external, int kidx, int pos, ic_xid x,
                        uint32_t *seen, uint32_t gen) {
    if (seen[x] == gen) return;
    seen[x] = gen;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOAD) {
        ic_val u = e->buf;
        if (c->kernel_of[u] != kidx) needed[u] = external[u] = true;
        else if (c->kernels[kidx].items[c->item_of[u]].pos != pos) needed[u] = true;
        return;
    }
    if (e->kind == X_GATHER) needed[e->buf] = external[e->buf] = true;
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) mark_needed(c, needed, external, kidx, pos, e->a, seen, gen);
    if (e->b >= 0) mark_needed(c, needed, external, kidx, pos, e->b, seen, gen);
    if (e->c >= 0) mark_needed(c, needed, external, kidx, pos, e->c, seen, gen);
}

/* loads of buffer b: offsets with the outer vars set to 0 */
static ic_xid row_loads(rw *R, int b, const int32_t *from, const ic_ix *to, int n, ic_xid x) {
    ic_ctx *c = R->c;
    if (RW_HIT(R, x)) return R->memo[x];
    ic_x e = c->xs[x];
    ic_xid r = x;
    switch (e.kind) {
    case X_LOADF: {
        ic_xid a = e.a >= 0 ? row_loads(R, b, from, to, n, e.a) : -1;
        ic_ix off = e.buf == b ? ix_subst(c, e.ix, from, to, n) : e.ix;
        r = a >= 0 ? x_gatherf(c, e.buf, off, a, (int64_t)e.cval, e.aux, e.dtype) : x_loadf(c, e.buf, off, e.dtype);
        break;
    }
    case X_OP: {
        ic_xid a = row_loads(R, b, from, to, n, e.a);
        ic_xid bb = e.b >= 0 ? row_loads(R, b, from, to, n, e.b) : -1;
        ic_xid cc = e.c >= 0 ? row_loads(R, b, from, to, n, e.c) : -1;
        r = x_op(c, e.op, e.dtype, a, bb, cc);
        break;
    }
    case X_CAST:
        r = x_cast(c, row_loads(R, b, from, to, n, e.a), e.dtype);
        break;
    default:
        break;
    }
    RW_SET(R, x, r);
    return r;
}

#define IC_ROW_SCRATCH_MAX 65536

/* Intermediates written and read only inside one row of one kernel (softmax's exp when it
 * is realized) live in a per-thread row buffer on the kernel's stack (kind 3): the row
 * stays in L1/L2 instead of streaming a full-size temporary through memory. */
static void row_scratch(ic_ctx *c, rw *R, ic_kernel *k, const bool *external) {
    if (!k->has_red) return;
    int32_t from[IC_MAX_DIMS];
    ic_ix to[IC_MAX_DIMS];
    int n = 0;
    int64_t rowsize = 1;
    for (int d = 0; d < k->nf; d++) {
        if (k->finner[d]) rowsize *= k->fsize[d];
        else if (k->fvar[d] >= 0) {
            from[n] = k->fvar[d];
            to[n++] = ix_const(c, 0);
        }
    }
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (!it->store || it->kind != IT_STORE || !it->inner || external[it->v]) continue;
        ic_buffer *B = &c->bufs[it->buf];
        int64_t esz = (int64_t)ic_dtype_size(B->dtype);
        if (B->kind != 2 || ic_tainted(c, rowsize) || rowsize * esz > IC_ROW_SCRATCH_MAX) continue;
        ic_ix off = ix_subst(c, it->out_ix, from, to, n);
        int64_t lo, hi;
        ix_range(c, off, &lo, &hi);
        if (lo < 0 || hi >= rowsize) continue;
        B->kind = 3;
        B->nbytes = rowsize * esz;
        B->span = rowsize;
        it->out_ix = off;
        /* one memo for all items: the rewrite depends only on the buffer */
        rw_next(R);
        for (int i = 0; i < k->nitems; i++) k->items[i].expr = row_loads(R, it->buf, from, to, n, k->items[i].expr);
    }
}

/* Cost of vectorizing a load along a var: 0 broadcast, 1 contiguous, 2 short stride
 * (gather within a few cache lines), 4 anything else. */
static int vcost(ic_ctx *c, ic_ix ix, int32_t v) {
    bool na;
    int64_t k = ix_coeff(c, ix, v, &na);
    if (na) return 4;
    if (k < 0) k = -k;
    return k == 0 ? 0 : k == 1 ? 1 : k <= 4 ? 2 : 4;
}

/* The stride of ix along v over runs of at least 16 consecutive values of v: as ix_coeff,
 * but an atom (v + R) % m (m >= 16) counts as stride 1 and (v + R) // d (d >= 16) as 0, the
 * strides they have between their wraps. A view that splits and reorders dims (the
 * attention's [B, H, L, D] gradients read as [B*L, H*D] rows) is contiguous along the kept
 * dim in runs of D, though not affine in it. */
static int64_t run_coeff(ic_ctx *c, ic_ix ix, int32_t v, bool *na) {
    const ix_sum *s = &c->sums[ix];
    int64_t k = 0;
    *na = false;
    for (int i = 0; i < s->n; i++) {
        const ix_term *t = &c->terms[s->first + i];
        const ix_atom *at = &c->atoms[t->atom];
        if (at->kind == IX_VAR) {
            if (at->var == v) k += t->coeff;
            continue;
        }
        if (!ix_uses_var(c, at->sub, v)) continue;
        bool na2;
        int64_t sv = ix_coeff(c, at->sub, v, &na2);
        if (na2 || sv != 1) *na = true;
        else if (at->div == 1 && at->mod >= 16) k += t->coeff;
        else if (at->div < 16) *na = true;
    }
    return k;
}

/* vcost over runs (run_coeff): what choose_vec_outer weighs */
static int vcost_runs(ic_ctx *c, ic_ix ix, int32_t v) {
    bool na;
    int64_t k = run_coeff(c, ix, v, &na);
    if (na) return 4;
    if (k < 0) k = -k;
    return k == 0 ? 0 : k == 1 ? 1 : k <= 4 ? 2 : 4;
}

/* visited stamps of the expression walks below: one array for every kernel (one of every
 * expression per kernel made finalize quadratic), grown with the expressions, gen per walk */
typedef struct xstamp {
    uint32_t *s, gen;
    int n;
} xstamp;

static uint32_t xstamp_next(ic_ctx *c, xstamp *S) {
    if (S->n < c->nxs) {
        S->n = 2 * c->nxs + 64;
        S->s = ic_alloc(c, (size_t)S->n * sizeof(uint32_t));
        S->gen = 0;
    }
    return ++S->gen;
}

static void count_contig(ic_ctx *c, ic_xid x, int32_t v, int32_t w, int *nv, int *nw, int *ncontig_w,
                         uint32_t *seen, uint32_t gen) {
    if (seen[x] == gen) return;
    seen[x] = gen;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && e->a < 0) {
        int cv = vcost_runs(c, e->ix, v), cw = vcost_runs(c, e->ix, w);
        if (cv == 0) return; /* constant along the reduced var (a statistic per kept index, BatchNorm's
                              * per-channel mean and scale): says nothing about the layout */
        *nv += cv;
        *nw += cw;
        *ncontig_w += cw == 1 || cw == 2;
        return;
    }
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) count_contig(c, e->a, v, w, nv, nw, ncontig_w, seen, gen);
    if (e->b >= 0) count_contig(c, e->b, v, w, nv, nw, ncontig_w, seen, gen);
    if (e->c >= 0) count_contig(c, e->c, v, w, nv, nw, ncontig_w, seen, gen);
}

/* Reductions whose inputs are contiguous along the last outer var rather than the
 * innermost reduced var (x.sum(0), column softmax) run 16 outputs per vector: the
 * reduced dims become scalar loops and each lane keeps its own accumulator. `serial`: the
 * kernel's work is below IC_PAR_MIN_WORK, so it runs on one thread (see the chunks below). */
static void choose_vec_outer(ic_ctx *c, ic_kernel *k, xstamp *S, bool serial) {
    k->vec_outer = false;
    if (!k->has_red || k->nouter < 1 || k->ninner < 1) return;
    for (int j = 0; j < k->nitems; j++)
        if (k->items[j].store && c->bufs[k->items[j].buf].kind == 3) return; /* row scratch */
    int32_t ov = k->ovar[k->nouter - 1], iv = k->ivar[k->ninner - 1];
    if (k->osize[k->nouter - 1] < 16 || ic_tainted(c, k->osize[k->nouter - 1])) return;
    int n_in = 0, n_out = 0, contig_out = 0;
    uint32_t gen = xstamp_next(c, S);
    for (int j = 0; j < k->nitems; j++)
        if (k->items[j].inner) count_contig(c, k->items[j].expr, iv, ov, &n_in, &n_out, &contig_out, S->s, gen);
    /* costs: lower is better; and some load must really be contiguous along the kept dim
     * (loads broadcast along it alone, e.g. a weight, say nothing) */
    if (n_out >= n_in || contig_out == 0) return;
    k->vec_outer = true;
    /* up to 16 vectors (256 lanes, 1 KB of f32) per chunk, keeping >= 4 chunks for threads.
     * A kernel that runs on one thread takes the kept dim in as few chunks as fit: each chunk
     * walks all the reduced rows, so with 4 chunks a row of a tall input from memory was read
     * a quarter at a time, once per chunk, at a stride of the row (an expRNN backward step,
     * [128, 170] summed over the 128 rows with the rows of a sequence-sized stack: 784 steps
     * 22.4 against 14.0 ms, the training step 252 against 241 ms) */
    int64_t O = k->osize[k->nouter - 1];
    int64_t u = serial ? (O + 15) / 16 : O / 64;
    k->vo_unroll = (int)(u < 1 ? 1 : u > 16 ? 16 : u);
    k->nchunks = (O + 16 * k->vo_unroll - 1) / (16 * k->vo_unroll);
}

static int add_buffer(ic_ctx *c, int kind, int index, ic_val v, const ic_meta *m);

/* A single huge row (x.sum(), (x*x).mean()) would run on one thread: cut its only pass
 * into IC_SPLIT_PARTS ranges that run in parallel and leave partial accumulators; a
 * combine kernel finishes the row. The parts cut the outermost inner var. Needs: no outer
 * dims, items only in pass 0 and the row blocks after it. */
static void choose_split(ic_ctx *c, ic_kernel *k, int64_t inner) {
    k->split = false;
    k->partial_buf = -1;
    if (!k->has_red || k->nouter != 0 || k->ninner < 1 || inner < 65536 || k->isize[0] < 2) return;
    if (ic_tainted(c, k->isize[0])) return; /* the parts would need a runtime size */
    for (int j = 0; j < k->nitems; j++) {
        int p = k->items[j].pos;
        if (p == 0 || (p % 2 == 1 && p != 1)) return;
        if (ic_is_arg(k->items[j].red_op) && k->items[j].kind == IT_REDUCE) return;
    }
    int64_t n0 = k->isize[0];
    int64_t parts = n0 < IC_SPLIT_PARTS ? n0 : IC_SPLIT_PARTS;
    int64_t t = (n0 + parts - 1) / parts;
    if (k->ninner == 1) t = (t + 63) & ~(int64_t)63;
    k->split = true;
    k->tile = t;
    k->ntiles = (n0 + t - 1) / t;
    ic_meta m = {.dtype = IC_I64, .ndim = 1, .sizes = {k->ntiles * k->nitems}, .strides = {1}};
    k->partial_buf = add_buffer(c, 2, -1, -1, &m);
}

/* Pointwise kernels reading with a large stride along the inner var but (nearly)
 * contiguously along the last outer var (x.t() + y, transpose().contiguous()) visit
 * IC_BLOCK_ROWS x IC_BLOCK_COLS blocks, so the lines and pages a strided load touches are
 * reused by the next rows instead of being evicted (TLB and cache thrash otherwise). */
static bool transposed_load(ic_ctx *c, ic_xid x, int32_t iv, int32_t ov, uint32_t *seen, uint32_t gen) {
    if (seen[x] == gen) return false;
    seen[x] = gen;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF) return e->a < 0 && vcost(c, e->ix, iv) == 4 && vcost(c, e->ix, ov) <= 2;
    if (e->kind == X_ROWVAL) return false;
    return (e->a >= 0 && transposed_load(c, e->a, iv, ov, seen, gen)) ||
           (e->b >= 0 && transposed_load(c, e->b, iv, ov, seen, gen)) || (e->c >= 0 && transposed_load(c, e->c, iv, ov, seen, gen));
}

static void choose_blocking(ic_ctx *c, ic_kernel *k, int64_t outer, int64_t inner, xstamp *S) {
    k->nob = 0;
    if (k->has_red || k->nouter < 1 || k->ninner != 1) return;
    int64_t O = k->osize[k->nouter - 1];
    if (O < IC_BLOCK_ROWS || inner < IC_BLOCK_COLS || ic_tainted(c, O)) return;
    int32_t ov = k->ovar[k->nouter - 1], iv = k->ivar[0];
    /* some load is far apart along iv while near along ov */
    uint32_t gen = xstamp_next(c, S);
    bool strided = false;
    for (int j = 0; j < k->nitems && !strided; j++) strided = transposed_load(c, k->items[j].expr, iv, ov, S->s, gen);
    if (!strided) return;
    (void)outer;
    k->nob = (O + IC_BLOCK_ROWS - 1) / IC_BLOCK_ROWS;
    k->tile = IC_BLOCK_COLS;
    k->ntiles = (inner + IC_BLOCK_COLS - 1) / IC_BLOCK_COLS;
}

bool ic_kernel_empty(const ic_kernel *k) {
    for (int i = 0; i < k->nouter; i++)
        if (k->osize[i] == 0) return true;
    if (!k->has_red)
        for (int i = 0; i < k->ninner; i++)
            if (k->isize[i] == 0) return true;
    return false;
}

void ic_finalize_kernels(ic_ctx *c) {
    const ic_graph *g = c->g;
    bool *needed = ic_alloc(c, (size_t)g->n);
    bool *external = ic_alloc(c, (size_t)g->n);
    for (int i = 0; i < g->noutputs; i++) needed[g->outputs[i]] = external[g->outputs[i]] = true;
    uint32_t *seen = ic_alloc(c, (size_t)c->nxs * sizeof(uint32_t)), gen = 0;
    for (int ki = 0; ki < c->nkernels; ki++) {
        ic_kernel *k = &c->kernels[ki];
        if (k->is_ext) { /* an extern call reads its operands from memory */
            const ic_node *n = &g->nodes[k->ext_v];
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) needed[n->in[i]] = external[n->in[i]] = true;
        }
        for (int j = 0; j < k->nitems; j++)
            mark_needed(c, needed, external, ki, k->items[j].pos, k->items[j].expr, seen, ++gen);
    }
    /* buffers: inputs, outputs, intermediates */
    c->buf_of = ic_alloc(c, (size_t)g->n * sizeof(int));
    for (int v = 0; v < g->n; v++) c->buf_of[v] = -1;
    for (int i = 0; i < g->ninputs; i++) {
        ic_val v = g->inputs[i];
        c->buf_of[v] = add_buffer(c, 0, i, v, &g->nodes[v].meta);
    }
    ic_inplace_plan(c, needed); /* outputs stored into the input they update (inplace.c) */
    for (int i = 0; i < g->noutputs; i++) {
        ic_val v = g->outputs[i];
        if (c->out_into[i] >= 0) { /* the input's buffer, addressed with its strides */
            c->buf_of[v] = c->buf_of[g->inputs[c->out_into[i]]];
            continue;
        }
        ic_meta m = g->nodes[v].meta;
        ic_layout_output(&g->nodes[v], m.strides); /* eager's strides (graph/strides.c) */
        c->buf_of[v] = add_buffer(c, 1, i, v, &m);
    }
    /* GEMM operands that are permuted graph inputs and computed by no kernel: the input's
     * memory with the view's strides (extern_views.c) */
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        if (!k->is_ext) continue;
        const ic_node *n = &g->nodes[k->ext_v];
        int idx;
        ic_meta m;
        for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++)
            if (c->buf_of[n->in[i]] < 0 && c->kernel_of[n->in[i]] < 0 &&
                ic_extern_operand_alias(c, k->ext_v, i, &idx, &m))
                c->buf_of[n->in[i]] = add_buffer(c, 0, idx, n->in[i], &m);
    }
    for (int ki = 0; ki < c->nkernels; ki++) {
        ic_kernel *k = &c->kernels[ki];
        if (k->is_ext && c->buf_of[k->ext_v] < 0) {
            ic_meta m = g->nodes[k->ext_v].meta;
            ic_contiguous_strides(&m);
            c->buf_of[k->ext_v] = add_buffer(c, 2, -1, k->ext_v, &m);
        }
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (!needed[it->v] && !it->part) continue;
            it->store = true;
            if (c->buf_of[it->v] < 0) {
                ic_meta m = g->nodes[it->v].meta;
                ic_contiguous_strides(&m);
                c->buf_of[it->v] = add_buffer(c, 2, -1, it->v, &m);
            }
            it->buf = c->buf_of[it->v];
        }
    }
    rw R = rw_new(c); /* one memo for all kernels: rw_next forgets it per item */
    xstamp xs = {0};
    for (int ki = 0; ki < c->nkernels; ki++) {
        ic_kernel *k = &c->kernels[ki];
        if (k->is_ext) {
            k->nouter = k->ninner = 0;
            k->ntiles = k->tile = k->iters = 1;
            k->npos = 0;
            k->work = 0;
            snprintf(k->name, sizeof k->name, "k%d", ki);
            continue;
        }
        R.kidx = ki;
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            rw_next(&R);
            R.pos = it->pos;
            it->expr = to_flat(&R, it->expr);
            if (it->expr2 >= 0) it->expr2 = to_flat(&R, it->expr2);
            if (it->store) it->out_ix = flat(c, it->out_ixv, &c->bufs[it->buf].meta);
        }
        row_scratch(c, &R, k, external);
        /* loop vars */
        int32_t all[IC_MAX_DIMS];
        int64_t asz[IC_MAX_DIMS];
        int na = 0;
        k->nouter = k->ninner = 0;
        for (int d = 0; d < k->nf; d++) {
            if (k->fvar[d] < 0) continue;
            if (k->has_red && k->finner[d]) {
                k->ivar[k->ninner] = k->fvar[d];
                k->isize[k->ninner++] = k->fsize[d];
            } else if (k->has_red) {
                k->ovar[k->nouter] = k->fvar[d];
                k->osize[k->nouter++] = k->fsize[d];
            } else {
                all[na] = k->fvar[d];
                asz[na++] = k->fsize[d];
            }
        }
        if (!k->has_red) {
            ic_layout_loop_order(c, k, all, asz, na); /* graph/strides.c */
            collapse_all(c, &R, k, all, asz, &na);
            for (int i = 0; i + 1 < na; i++) {
                k->ovar[k->nouter] = all[i];
                k->osize[k->nouter++] = asz[i];
            }
            if (na > 0 && ic_tainted(c, asz[na - 1])) {
                k->ovar[k->nouter] = all[na - 1]; /* symbolic: no inner loop */
                k->osize[k->nouter++] = asz[na - 1];
            } else if (na > 0) {
                k->ivar[0] = all[na - 1];
                k->isize[0] = asz[na - 1];
                k->ninner = 1;
            }
        } else {
            collapse_all(c, &R, k, k->ovar, k->osize, &k->nouter);
            collapse_all(c, &R, k, k->ivar, k->isize, &k->ninner);
        }
        if (c->dyn) {
            for (int i = 1; i < k->nouter; i++)
                if (ic_tainted(c, k->osize[i]))
                    ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: a symbolic dim inside another loop");
        }
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < k->nouter; i++) outer *= k->osize[i];
        for (int i = 0; i < k->ninner; i++) inner *= k->isize[i];
        k->ntiles = 1;
        k->tile = k->ninner ? k->isize[k->ninner - 1] : 1;
        if (!k->has_red && k->ninner == 1 && outer < 16 && inner >= 8192) {
            int64_t want = (16 + outer - 1) / (outer ? outer : 1);
            int64_t t = (inner + want - 1) / want;
            if (t < 2048) t = 2048;
            t = (t + 63) & ~(int64_t)63;
            k->tile = t;
            k->ntiles = (inner + t - 1) / t;
        }
        {
            int maxp = 0;
            for (int j = 0; j < k->nitems; j++)
                if (k->items[j].pos > maxp) maxp = k->items[j].pos;
            bool sym = false;
            for (int i = 0; i < k->nouter; i++) sym |= ic_tainted(c, k->osize[i]);
            for (int i = 0; i < k->ninner; i++) sym |= ic_tainted(c, k->isize[i]);
            /* (the work k->work is set to below, with the same count) */
            choose_vec_outer(c, k, &xs, !sym && outer * inner * ((maxp + 1) / 2 + 1) < IC_PAR_MIN_WORK);
        }
        choose_split(c, k, inner);
        choose_blocking(c, k, outer, inner, &xs);
        if (c->dyn) /* inner loops of symbolic size run to a runtime bound: never cut */
            for (int i = 0; i < k->ninner; i++)
                if (ic_tainted(c, k->isize[i]) && (k->ntiles > 1 || k->split))
                    ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: a symbolic inner loop cut in parts");
        k->iters = outer * k->ntiles;
        if (k->vec_outer) k->iters = outer / k->osize[k->nouter - 1] * k->nchunks;
        if (k->nob) k->iters = outer / k->osize[k->nouter - 1] * k->nob * k->ntiles;
        int maxpos = 0;
        for (int j = 0; j < k->nitems; j++)
            if (k->items[j].pos > maxpos) maxpos = k->items[j].pos;
        k->npos = maxpos + 1;
        k->work = outer * inner * ((maxpos + 1) / 2 + 1);
        snprintf(k->name, sizeof k->name, "k%d", ki);
    }
}
