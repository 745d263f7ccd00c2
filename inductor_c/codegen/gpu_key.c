/* gpu_key.c — the structural key of a GPU kernel variant, computed before its LLVM IR is built.
 *
 * Requires: finalized kernels and planned buffers (what gg_gen_variant reads), the variant's
 *   plan, its parameter order (gg_param_order).
 * Produces: a byte string (gkey.p) that holds everything gg_gen_variant and the emitters it
 *   calls (gpu_rows.c, gpu_mem.c, gpu_ops.c, vmath.c, ops.c) read about the variant, with every
 *   graph-wide id (expression node, index sum, index atom, loop var, buffer) replaced by its
 *   order of first appearance in the variant: two variants with equal keys are built into
 *   equal functions (but for the name), so a repeat reuses the first one's function with its
 *   own launch arguments, and its IR is never built (gpu_nvptx.c gg_codegen).
 * Keeps / breaks: nothing (reads only).
 *
 * What the key holds:
 *   the kernel   loop vars and sizes, positions, every item (kind, position,
 *                dtypes, reduction, store offset and buffer), the expression DAG of its items
 *   a node       kind, dtype, op, operands (by canonical number: a node met twice is a back
 *                reference, so sharing inside the DAG is part of the key), buffer, index sum,
 *                aux, the bits of cval, and whether the low-precision analysis needs it in f32
 *   a sum        offset and terms (coefficient, atom); an atom: a var (its size and whether it
 *                is symbolic) or modidx(sub-sum, div, mod)
 *   a buffer     dtype, row scratch or not (a row scratch one: its span, the stride of its rows)
 *   a load       its buffer, index sum, and the span where the code reads it: when an offset may
 *                leave the buffer (clamped to it) or a gather's; else only that none does (so
 *                the same layer's loads of workspace slots of other spans share a key)
 *   the variant  its parameters in order (and read/write use), the plan with its vars and
 *                nodes renumbered, the partial slots, the index type (i32/i64), and the row
 *                scratch buffers in buffer order (gpu_rows.c rebase_scratch walks them so)
 *   a GEMM       (gg_gemm_key, the template's variants) its shape, strides, dtype, alpha/beta,
 *                tile config, operand buffers, cp.async or not, whether the product is stored,
 *                and the consumer kernel fused into its epilogue (as a kernel above)
 * Settings, the target and anything else the whole graph shares are equal for all variants
 * of one compilation (the key is only compared within one).
 *
 * Anything the generator reads that is missing here would make two different kernels share
 * one function: TORCHC_DEBUG=dedupe builds every variant anyway and fails the compilation
 * when a key repeat's canonical bitcode differs from the first's (tests/test_gpu_codegen_dedupe.py,
 * benchmarks/gpu_codegen_time.py --check). A node kind the key does not know makes no key
 * (the variant is built). */
#include "gpu_internal.h"
#include "gpu_gemm.h"

/* canonical numbers of graph-wide ids, valid for the stamp of the current variant */
typedef struct cmap {
    uint32_t *st;
    int32_t *id;
    int cap, next;
} cmap;

struct gkeyer {
    uint32_t stamp;
    cmap x, sum, atom, var, buf;
    uint8_t *p;
    size_t n, cap;
    bool bad;  /* something the key does not describe: no key */
    bool oom;
};

static void put(gkeyer *K, const void *d, size_t n) {
    if (K->oom) return;
    if (K->n + n > K->cap) {
        size_t cap = K->cap ? 2 * K->cap : 4096;
        while (cap < K->n + n) cap *= 2;
        uint8_t *p = realloc(K->p, cap);
        if (!p) {
            K->oom = true;
            return;
        }
        K->p = p, K->cap = cap;
    }
    memcpy(K->p + K->n, d, n);
    K->n += n;
}
static void put64(gkeyer *K, int64_t v) { put(K, &v, sizeof v); }

/* canonical number of id in m: *fresh when met for the first time in this variant */
static int32_t canon(gkeyer *K, cmap *m, int32_t id, bool *fresh) {
    *fresh = false;
    if (id < 0) return -1;
    if (id >= m->cap) {
        int cap = m->cap ? m->cap : 256;
        while (cap <= id) cap *= 2;
        uint32_t *st = realloc(m->st, (size_t)cap * sizeof *st);
        if (st) m->st = st;
        int32_t *ix = st ? realloc(m->id, (size_t)cap * sizeof *ix) : NULL;
        if (ix) m->id = ix;
        if (!st || !ix) {
            K->oom = true;
            return -1;
        }
        memset(m->st + m->cap, 0, (size_t)(cap - m->cap) * sizeof *st);
        m->cap = cap;
    }
    if (m->st[id] != K->stamp) {
        m->st[id] = K->stamp;
        m->id[id] = m->next++;
        *fresh = true;
    }
    return m->id[id];
}

static void key_var(gkeyer *K, ic_ctx *c, int32_t v) {
    bool fresh;
    put64(K, canon(K, &K->var, v, &fresh));
    if (fresh) {
        int64_t s = c->var_size[v];
        put64(K, s);
        put64(K, ic_tainted(c, s));
    }
}

static void key_sum(gkeyer *K, ic_ctx *c, ic_ix a);

static void key_atom(gkeyer *K, ic_ctx *c, int32_t id) {
    bool fresh;
    put64(K, canon(K, &K->atom, id, &fresh));
    if (!fresh) return;
    const ix_atom *at = &c->atoms[id];
    put64(K, at->kind);
    if (at->kind == IX_VAR) {
        key_var(K, c, at->var);
    } else {
        key_sum(K, c, at->sub);
        put64(K, at->div);
        put64(K, at->mod);
    }
}

static void key_sum(gkeyer *K, ic_ctx *c, ic_ix a) {
    bool fresh;
    put64(K, canon(K, &K->sum, a, &fresh));
    if (!fresh) return;
    const ix_sum s = c->sums[a];
    put64(K, s.off);
    put64(K, s.n);
    for (int i = 0; i < s.n; i++) {
        ix_term tm = c->terms[s.first + i];
        put64(K, tm.coeff);
        key_atom(K, c, tm.atom);
    }
}

static void key_buf(gkeyer *K, ic_ctx *c, int b) {
    bool fresh;
    put64(K, canon(K, &K->buf, b, &fresh));
    if (fresh) {
        const ic_buffer *Bf = &c->bufs[b];
        put64(K, Bf->dtype);
        put64(K, Bf->kind == 3); /* row scratch; the generator tells no other kinds apart */
        if (Bf->kind == 3) put64(K, Bf->span); /* its rows' stride (gpu_rows.c rebase_scratch) */
    }
}

/* What a load reads of its buffer's span (gpu_mem.c): none when its offsets stay inside it
 * (-1: no clamp, the span is not in the code), else the span, the clamp's bound (a gather's
 * offsets are always clamped). Not the span itself: equal loads of buffers whose spans differ
 * (the same layer's activations in workspace slots of other sizes) are the same code. */
static int64_t load_bound(ic_ctx *c, const ic_x *e) {
    int64_t lo, hi, span = c->bufs[e->buf].span;
    if (e->a >= 0) return span;
    ix_range(c, e->ix, &lo, &hi);
    return lo >= 0 && hi < span ? -1 : span;
}

static void key_x(gkeyer *K, ic_ctx *c, const uint8_t *need, ic_xid x) {
    bool fresh;
    put64(K, canon(K, &K->x, x, &fresh));
    if (!fresh) return;
    const ic_x *e = &c->xs[x];
    put64(K, e->kind);
    put64(K, e->dtype);
    put64(K, e->op);
    put64(K, need ? need[x] : 2);
    switch (e->kind) {
    case X_CONST: {
        uint64_t bits;
        memcpy(&bits, &e->cval, sizeof bits);
        put64(K, (int64_t)bits);
        return;
    }
    case X_LOADF: { /* a >= 0: a gather (aux: the size clamped to, cval: the index's stride) */
        key_buf(K, c, e->buf);
        key_sum(K, c, e->ix);
        put64(K, load_bound(c, e));
        put64(K, e->aux);
        uint64_t bits;
        memcpy(&bits, &e->cval, sizeof bits);
        put64(K, (int64_t)bits);
        key_x(K, c, need, e->a);
        return;
    }
    case X_ROWVAL: /* a: the item whose row value it is */
        put64(K, e->a);
        return;
    case X_IXVAL:
        key_sum(K, c, e->ix);
        return;
    case X_OP:
    case X_CAST: {
        uint64_t bits;
        memcpy(&bits, &e->cval, sizeof bits);
        put64(K, (int64_t)bits);
        put64(K, e->aux);
        key_x(K, c, need, e->a);
        key_x(K, c, need, e->b);
        key_x(K, c, need, e->c);
        return;
    }
    default: /* per-value forms (X_LOAD, X_GATHER) are gone after finalize */
        K->bad = true;
        return;
    }
}

gkeyer *gg_keyer_new(void) { return calloc(1, sizeof(gkeyer)); }

void gg_keyer_free(gkeyer *K) {
    if (!K) return;
    cmap *ms[] = {&K->x, &K->sum, &K->atom, &K->var, &K->buf};
    for (int i = 0; i < 5; i++) free(ms[i]->st), free(ms[i]->id);
    free(K->p);
    free(K);
}

/* a new key: every id unnumbered */
static void key_begin(gkeyer *K) {
    K->n = 0;
    K->bad = K->oom = false;
    if (++K->stamp == 0) { /* wrapped: forget every stamp */
        cmap *ms[] = {&K->x, &K->sum, &K->atom, &K->var, &K->buf};
        for (int i = 0; i < 5; i++) memset(ms[i]->st, 0, (size_t)ms[i]->cap * sizeof *ms[i]->st);
        K->stamp = 1;
    }
    K->x.next = K->sum.next = K->atom.next = K->var.next = K->buf.next = 0;
}

static const uint8_t *key_end(gkeyer *K, ic_ctx *c, size_t *len) {
    if (K->oom) ic_fail(c, IC_ENOMEM, "out of memory");
    if (K->bad) return NULL;
    *len = K->n;
    return K->p;
}

/* kernel k: its loops (vars first, in loop order, so that they number alike; not its frame or
 * the CPU's tiling, which the GPU generator does not read) and items with their DAG */
static void key_kernel(gkeyer *K, ic_ctx *c, const ic_kernel *k, const uint8_t *need) {
    put64(K, k->nouter);
    for (int d = 0; d < k->nouter; d++) key_var(K, c, k->ovar[d]), put64(K, k->osize[d]);
    put64(K, k->ninner);
    for (int d = 0; d < k->ninner; d++) key_var(K, c, k->ivar[d]), put64(K, k->isize[d]);
    int64_t hdr[] = {k->has_red, k->nitems, k->vec_outer, k->npos};
    put(K, hdr, sizeof hdr);
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        int64_t f[] = {it->kind, it->pos, it->inner, it->store, it->arg_value, it->red_op, it->acc, it->red_count,
                       it->dtype};
        put(K, f, sizeof f);
        key_x(K, c, need, it->expr);
        key_x(K, c, need, it->expr2);
        if (it->store) {
            key_sum(K, c, it->out_ix);
            key_buf(K, c, it->buf);
        }
    }
}

/* the parameters, in order, with their use */
static void key_params(gkeyer *K, ic_ctx *c, const int *used, const int *ub, int nu) {
    put64(K, nu);
    for (int i = 0; i < nu; i++) key_buf(K, c, ub[i]), put64(K, used[ub[i]]);
}

const uint8_t *gg_variant_key(gkeyer *K, gg *g, const ic_kernel *k, const plan *P, bool i32, const int *used,
                              const int *ub, int nu, size_t *len) {
    ic_ctx *c = g->c;
    key_begin(K);
    put64(K, P_POINTWISE + P_ROWS + P_TILE + 1); /* not a GEMM's */
    key_kernel(K, c, k, P->v2 ? ic_lowp_map(c, (int)(k - c->kernels)) : NULL);
    key_params(K, c, used, ub, nu);
    for (int b = 0; b < c->nbufs; b++) /* the row scratch ones in buffer order (rebase_scratch) */
        if (used[b] && c->bufs[b].kind == 3) key_buf(K, c, b);
    /* the plan, its graph-wide ids renumbered (its padding is zero: gg_codegen) */
    plan Q;
    memcpy(&Q, P, sizeof Q);
    bool fresh, any = false; /* a plan var or node outside the kernel's loops and DAG: not described */
    Q.slot = NULL;
    Q.vv = canon(K, &K->var, P->vv, &fresh), any |= fresh;
    if (P->mode == P_TILE) Q.tu = canon(K, &K->var, P->tu, &fresh), any |= fresh; /* else unset (0) */
    for (int d = 0; d < 2 * IC_MAX_DIMS; d++)
        Q.obv[d] = d < P->nob ? canon(K, &K->var, P->obv[d], &fresh) : 0, any |= fresh;
    Q.on_shift = canon(K, &K->x, P->on_shift, &fresh), any |= fresh;
    for (int q = 0; q < 4; q++) Q.tx[q] = q < P->ntx ? canon(K, &K->x, P->tx[q], &fresh) : 0, any |= fresh;
    K->bad |= any;
    put(K, &Q, sizeof Q);
    put64(K, P->slot != NULL);
    for (int j = 0; P->slot && j < k->nitems; j++) put64(K, P->slot[j]);
    put64(K, i32);
    return key_end(K, c, len);
}

const uint8_t *gg_gemm_key(gkeyer *K, gg *g, const ic_gemm *G, bool fast, const ic_kernel *cons, bool store_out,
                           bool i32, const int *used, const int *ub, int nu, size_t *len) {
    ic_ctx *c = g->c;
    key_begin(K);
    put64(K, P_POINTWISE + P_ROWS + P_TILE + 2); /* a GEMM's */
    int64_t f[] = {G->dt, G->batch, G->M, G->N, G->K, G->sa[0], G->sa[1], G->sa[2], G->sb[0], G->sb[1], G->sb[2],
                   G->sc[0], G->sc[1], G->sc[2], G->fast_ok, G->b_nk, G->bias_buf >= 0, fast, store_out, i32,
                   cons != NULL};
    put(K, f, sizeof f);
    put(K, &G->alpha, sizeof G->alpha);
    put(K, &G->beta, sizeof G->beta);
    put(K, &G->cfg, sizeof G->cfg); /* ints only: no padding */
    key_buf(K, c, G->a_buf);
    key_buf(K, c, G->b_buf);
    if (G->bias_buf >= 0) key_buf(K, c, G->bias_buf);
    key_buf(K, c, G->out_buf);
    if (cons) key_kernel(K, c, cons, NULL); /* the epilogue: first-generation code (gemm_variant) */
    key_params(K, c, used, ub, nu);
    return key_end(K, c, len);
}
