/* sched.c — realize-or-inline decisions and fusion into kernels.
 *
 * Requires: loop nodes (c->ln) for every value.
 * Produces: c->kernels; each kernel has a frame (iteration shape, dims split into outer and
 *   inner when it holds a reduction) and items in topological order. An item realizes one
 *   value: IT_STORE (pointwise) or IT_REDUCE, with its body inlined into the kernel's vars.
 *   Loads left in bodies (X_LOAD) read realized values: inputs, values of earlier kernels,
 *   or values of this kernel at exactly the element they were produced (same row); reads of
 *   a reduction of this kernel at its row become X_ROWVAL.
 * Decisions:
 *   realized = inputs, outputs, reductions, and pointwise values with users > 1 and
 *              (reads > 4 or ops > 30) (inductor's realize thresholds), and every value
 *              whose inlined body would exceed IC_MAX_INLINE ops; the rest is inlined into
 *              every consumer (recomputed, never stored).
 *   fusion   = greedy in topological order: a realized value joins the last kernel when its
 *              iteration space maps onto the kernel's frame (same shape: inner pass; the
 *              shape with the reduced dims dropped or 1: per-row block) and all its reads of
 *              the kernel's own values stay within the row. Positions order the work inside
 *              one row: 0 row block, 1 pass 0, 2 row block, 3 pass 1, ... A reduction's result
 *              is usable from the next position on (softmax: max pass, sum pass, store pass).
 *   extern   = an extern node is a kernel of its own (is_ext, no items): its operands are
 *              realized, nothing fuses into it, and the values after it start a new kernel
 *              that reads its output buffer (the epilogue of a matmul is one kernel).
 *   real cat = a tree of two-operand cats along one dim (inner cats read only by their
 *              parent) flattened to its operands; with more than IC_CAT_SELECT operands, or
 *              realized anyway with operands of one shape, it is stored operand by operand
 *              (c->catk): one IT_STORE item per operand (part), iterating the operand's
 *              shape, its body inlined there (or a load of its buffer: a copy) and stored
 *              at its offset along the dim, as Inductor's ConcatKernel. Readers are in
 *              later kernels. Else it is a select tree inlined into its readers (lower.c).
 * Keeps: graph, loop nodes. Breaks: nothing (kernels are new).
 */
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

#define IC_MAX_INLINE 200
#define IC_CAT_SELECT 8 /* at most this many operands: a cat may stay a select (real cats) */
/* parts of one real cat in one kernel, at most: LLVM's machine code for one loop of n loads
 * and stores took O(n^2) (a stack of 1000 [4, 5]: 29.6 s in emit as one kernel, 1.0 s as 63) */
#define IC_CAT_PARTS 16

typedef struct inl {
    ic_ctx *c;
    int kidx;
    bool illegal;
    uint32_t gen;
    /* deps on items of the current kernel */
    int ndeps;
    int dep_item[64];
    /* values inlined */
    int32_t *fused;
    int nfused, fcap;
} inl;

/* memo (value, tuple) -> expr, valid for one placement attempt (generation) */
typedef struct memo_ent {
    uint64_t key;
    uint32_t gen;
    ic_xid x;
} memo_ent;

/* NULL when the table is too full to memoize (then the caller recomputes). */
static ic_xid *memo_slot(ic_ctx *c, inl *S, uint64_t key, bool *found) {
    memo_ent *m = c->memo;
    uint32_t cap = c->memo_cap;
    uint32_t j = (uint32_t)ic_hmix(key, 0) & (cap - 1);
    for (uint32_t probes = 0; probes < 64; probes++) {
        if (m[j].gen != S->gen) {
            m[j].gen = S->gen;
            m[j].key = key;
            m[j].x = -1;
            *found = false;
            return &m[j].x;
        }
        if (m[j].key == key) {
            *found = true;
            return &m[j].x;
        }
        j = (j + 1) & (cap - 1);
    }
    *found = false;
    return NULL;
}

static ic_xid inl_value(inl *S, ic_val u, ic_ixv T);

static ic_xid rewrite(inl *S, ic_xid x, const int32_t *from, const ic_ix *to, int n) {
    ic_ctx *c = S->c;
    ic_x e = c->xs[x];
    switch (e.kind) {
    case X_CONST:
        return x;
    case X_LOAD: {
        int len = ixv_len(c, e.ix);
        ic_ix t[IC_MAX_DIMS];
        for (int i = 0; i < len; i++) t[i] = ix_subst(c, ixv_get(c, e.ix, i), from, to, n);
        return inl_value(S, e.buf, ixv_make(c, len, t));
    }
    case X_OP: {
        ic_xid a = rewrite(S, e.a, from, to, n);
        ic_xid b = e.b >= 0 ? rewrite(S, e.b, from, to, n) : -1;
        ic_xid cc = e.c >= 0 ? rewrite(S, e.c, from, to, n) : -1;
        return x_op(c, e.op, e.dtype, a, b, cc);
    }
    case X_CAST:
        return x_cast(c, rewrite(S, e.a, from, to, n), e.dtype);
    case X_IXVAL:
        return x_ixval(c, ix_subst(c, e.ix, from, to, n));
    case X_GATHER: {
        /* the gathered value is realized (ic_schedule); its rows are data-dependent, so
         * it must come from an earlier kernel */
        if (c->kernel_of[e.buf] == S->kidx) S->illegal = true;
        int len = ixv_len(c, e.ix);
        ic_ix t[IC_MAX_DIMS];
        for (int i = 0; i < len; i++) t[i] = ix_subst(c, ixv_get(c, e.ix, i), from, to, n);
        ic_xid idx = rewrite(S, e.a, from, to, n);
        return x_gather(c, e.buf, ixv_make(c, len, t), e.aux, idx, e.dtype);
    }
    default:
        ic_fail(c, IC_EINTERNAL, "rewrite: unexpected expression kind %d", e.kind);
    }
}

static void add_dep(inl *S, int item) {
    for (int i = 0; i < S->ndeps; i++)
        if (S->dep_item[i] == item) return;
    if (S->ndeps == 64) {
        S->illegal = true;
        return;
    }
    S->dep_item[S->ndeps++] = item;
}

/* the dims of L whose var its body uses (L->var[d] >= 0), in order: their vars into from,
 * the dims into dims; how many. A rewrite of the body binds from[i] to what dim dims[i] is. */
static int bound_dims(const ic_lnode *L, int32_t *from, int *dims) {
    int n = 0;
    for (int d = 0; d < L->ndim; d++)
        if (L->var[d] >= 0) {
            from[n] = L->var[d];
            dims[n++] = d;
        }
    return n;
}

static ic_xid inl_value(inl *S, ic_val u, ic_ixv T) {
    ic_ctx *c = S->c;
    const ic_lnode *L = &c->ln[u];
    ic_dtype dt = c->g->nodes[u].meta.dtype;
    if (L->kind == L_CONST) return L->body;
    if (c->catk[u] && c->kernel_of[u] == S->kidx) { /* its parts' stores: read by later kernels */
        S->illegal = true;
        return x_load(c, u, T, dt);
    }
    if (c->realized[u]) {
        if (c->kernel_of[u] == S->kidx) {
            int it = c->item_of[u];
            const ic_item *I = &c->kernels[S->kidx].items[it];
            if (I->out_ixv != T) {
                S->illegal = true;
                return x_load(c, u, T, dt);
            }
            add_dep(S, it);
            if (I->kind == IT_REDUCE)
                return x_cast(c, x_rowval(c, it, ic_is_arg(I->red_op) ? IC_I64 : I->acc), dt);
        }
        return x_load(c, u, T, dt);
    }
    uint64_t key = ((uint64_t)(uint32_t)u << 32) | (uint32_t)T;
    bool found;
    ic_xid *slot = memo_slot(c, S, key, &found);
    if (found && *slot >= 0) return *slot;
    /* inline u's body with its vars bound to T */
    int32_t from[IC_MAX_DIMS];
    ic_ix to[IC_MAX_DIMS];
    int dims[IC_MAX_DIMS], n = bound_dims(L, from, dims);
    for (int i = 0; i < n; i++) to[i] = ixv_get(c, T, dims[i]);
    ic_xid r = rewrite(S, L->body, from, to, n);
    slot = memo_slot(c, S, key, &found);
    if (slot) *slot = r;
    *IC_PUSH(c, S->fused, S->nfused, S->fcap) = u;
    return r;
}

static bool same_sizes(const int64_t *a, const int64_t *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static ic_ix fix(ic_ctx *c, int32_t var) { return var < 0 ? ix_const(c, 0) : ix_var(c, var); }

/* the frame of an empty kernel: L's iteration space, a fresh var per dim of size > 1 */
static void fresh_frame(ic_ctx *c, ic_kernel *nk, const ic_lnode *L) {
    nk->nf = L->ndim;
    for (int d = 0; d < L->ndim; d++) {
        nk->fsize[d] = L->size[d];
        nk->fvar[d] = L->size[d] == 1 ? -1 : ic_new_var(c, L->size[d]);
        nk->finner[d] = false;
    }
}

/* Tries to add realized value v (computed by L: c->ln[v], or a part of a real cat v that is
 * stored at offset poff along dim pd, pd >= 0; omap: NULL, or for each of v's ond dims the
 * dim of L it is, -1 for index 0: a part over its operand's source without size-1 dims) to
 * kernel kidx. Returns false (nothing changed) if the iteration spaces do not match or a read
 * would leave the row. */
static bool try_place(ic_ctx *c, int kidx, ic_val v, uint32_t gen, const ic_lnode *L, int pd, int64_t poff,
                      const int *omap, int ond) {
    ic_kernel *k = &c->kernels[kidx];
    const ic_node *n = &c->g->nodes[v];
    if (k->is_ext || L->kind == L_EXTERN) return false;
    ic_kernel nk = *k; /* tentative frame */
    bool inner = true;
    ic_ix T[IC_MAX_DIMS];
    int nT = 0;
    bool fresh = k->nitems == 0;
    if (L->kind == L_REDUCE) {
        if (fresh) {
            fresh_frame(c, &nk, L);
        } else if (k->nf != L->ndim || !same_sizes(k->fsize, L->size, L->ndim)) {
            return false;
        }
        for (int d = 0; d < L->ndim; d++) {
            bool r = (L->red_mask >> d) & 1;
            if (k->has_red && !fresh && r != k->finner[d] && nk.fvar[d] >= 0) return false;
            nk.finner[d] = r;
        }
        nk.has_red = true;
    } else {
        int nd = L->ndim;
        if (fresh)
            fresh_frame(c, &nk, L);
        if (nd == nk.nf && same_sizes(L->size, nk.fsize, nd)) {
            for (int d = 0; d < nd; d++) T[d] = fix(c, nk.fvar[d]);
            nT = nd;
            if (nk.has_red) {
                inner = false;
                for (int d = 0; d < nd; d++)
                    if (nk.finner[d] && nk.fvar[d] >= 0) inner = true;
            }
        } else if (nk.has_red && nd == nk.nf) {
            for (int d = 0; d < nd; d++) {
                if (nk.finner[d] ? L->size[d] != 1 : L->size[d] != nk.fsize[d]) return false;
                T[d] = nk.finner[d] ? ix_const(c, 0) : fix(c, nk.fvar[d]);
            }
            nT = nd;
            inner = false;
        } else if (nk.has_red) {
            int j = 0;
            for (int d = 0; d < nk.nf; d++) {
                if (nk.finner[d]) continue;
                if (j >= nd || L->size[j] != nk.fsize[d]) return false;
                T[j++] = fix(c, nk.fvar[d]);
            }
            if (j != nd) return false;
            nT = nd;
            inner = false;
        } else {
            return false;
        }
    }

    inl S = {.c = c, .kidx = kidx, .gen = gen};
    ic_xid expr, expr2 = -1;
    ic_ixv out_ixv;
    if (L->kind == L_REDUCE) {
        int32_t from[IC_MAX_DIMS];
        ic_ix to[IC_MAX_DIMS];
        int dims[IC_MAX_DIMS], m = bound_dims(L, from, dims);
        for (int i = 0; i < m; i++) to[i] = fix(c, nk.fvar[dims[i]]);
        expr = rewrite(&S, L->body, from, to, m);
        expr2 = L->body2 >= 0 ? rewrite(&S, L->body2, from, to, m) : -1;
        int j = 0;
        for (int d = 0; d < L->ndim; d++) {
            if ((L->red_mask >> d) & 1) {
                if (n->keepdim) T[j++] = ix_const(c, 0);
            } else {
                T[j++] = fix(c, nk.fvar[d]);
            }
        }
        out_ixv = ixv_make(c, j, T);
        inner = true;
    } else {
        int32_t from[IC_MAX_DIMS];
        ic_ix to[IC_MAX_DIMS];
        int dims[IC_MAX_DIMS], m = bound_dims(L, from, dims);
        for (int i = 0; i < m; i++) to[i] = T[dims[i]];
        expr = rewrite(&S, L->body, from, to, m);
        if (omap) {
            ic_ix U[IC_MAX_DIMS];
            for (int e = 0; e < ond; e++) U[e] = omap[e] < 0 ? ix_const(c, 0) : T[omap[e]];
            memcpy(T, U, sizeof U);
            nT = ond;
        }
        if (pd >= 0) T[pd] = ix_add(c, T[pd], ix_const(c, poff));
        out_ixv = ixv_make(c, nT, T);
    }
    if (S.illegal) return false;

    /* position inside the row */
    int need = 0;
    for (int i = 0; i < S.ndeps; i++) {
        const ic_item *d = &k->items[S.dep_item[i]];
        int p = d->pos;
        if (d->kind == IT_REDUCE || (d->inner && !inner)) p++;
        if (need < p) need = p;
    }
    int pos = inner ? (need % 2 ? need : need + 1) : (need % 2 ? need + 1 : need);
    if (!nk.has_red) pos = 1;

    *k = nk;
    ic_item *it = IC_PUSH(c, k->items, k->nitems, k->cap);
    memset(it, 0, sizeof *it);
    it->kind = L->kind == L_REDUCE ? IT_REDUCE : IT_STORE;
    it->v = v;
    it->pos = pos;
    it->inner = inner;
    it->expr = expr;
    it->expr2 = expr2;
    it->out_ixv = out_ixv;
    it->out_ix = -1;
    it->buf = -1;
    it->red_op = L->red_op;
    it->acc = L->acc;
    it->red_count = L->red_count;
    it->dtype = n->meta.dtype;
    it->part = pd >= 0;
    *IC_PUSH(c, S.fused, S.nfused, S.fcap) = v;
    it->fused = S.fused;
    it->nfused = S.nfused;
    c->kernel_of[v] = kidx;
    c->item_of[v] = k->nitems - 1;
    return true;
}

/* the operands of the tree of cats under v (inner: flattened into its parent), left to
 * right, into leaf (room for c->g->n); how many. stack: room for c->g->n values. */
static int cat_leaves(ic_ctx *c, ic_val v, const bool *inner, ic_val *leaf, ic_val *stack) {
    const ic_graph *g = c->g;
    int nl = 0, sp = 0;
    stack[sp++] = v;
    while (sp > 0) {
        ic_val u = stack[--sp];
        if (u != v && !(inner[u] && !c->realized[u])) {
            leaf[nl++] = u;
            continue;
        }
        stack[sp++] = g->nodes[u].in[1]; /* right pushed first: the left comes out first */
        stack[sp++] = g->nodes[u].in[0];
    }
    return nl;
}

/* The parts of the real cats, in order of their cats and offsets. A part of an operand that a
 * kernel stores (realized, pointwise) is placed right after it, in its kernel where it fits
 * (the producer stores its slice too, the value still in registers); the rest when the cat's
 * turn comes, into the last kernel while it fits and holds fewer than IC_CAT_PARTS parts of
 * the cat, else a new one. */
typedef struct catpart {
    ic_val v, u;   /* cat, operand */
    ic_val src;    /* the value u is with size-1 dims added or dropped (u itself, or a
                      realized value under reshapes: a stack's operand unsqueezed) */
    int64_t off;   /* u's offset along v's dim */
    int next;      /* next part of the same operand, -1 */
    bool done;
} catpart;

typedef struct catparts {
    catpart *p;
    int n, cap;
    int *first, *count; /* per cat: its parts */
    int *head;          /* per operand: its first part placed with it, -1 */
    int pk, pkn;        /* kernel pk holds pkn parts placed with their operands */
} catparts;

/* the sizes of a and b without their size-1 dims are equal */
static bool same_but_ones(const ic_meta *a, const ic_meta *b) {
    int i = 0, j = 0;
    for (;;) {
        while (i < a->ndim && a->sizes[i] == 1) i++;
        while (j < b->ndim && b->sizes[j] == 1) j++;
        if (i == a->ndim || j == b->ndim) return i == a->ndim && j == b->ndim;
        if (a->sizes[i++] != b->sizes[j++]) return false;
    }
}

/* u without reshapes that only add or drop size-1 dims (inlined ones) */
static ic_val unit_source(ic_ctx *c, ic_val u) {
    const ic_graph *g = c->g;
    while (!c->realized[u] && g->nodes[u].op == IC_OP_RESHAPE &&
           same_but_ones(&g->nodes[u].meta, &g->nodes[g->nodes[u].in[0]].meta))
        u = g->nodes[u].in[0];
    return u;
}

static void plan_parts(ic_ctx *c, catparts *C, const bool *inner, ic_val *leaf, ic_val *stack) {
    const ic_graph *g = c->g;
    int N = g->n;
    C->first = ic_alloc(c, (size_t)N * sizeof(int));
    C->count = ic_alloc(c, (size_t)N * sizeof(int));
    C->head = ic_alloc(c, (size_t)N * sizeof(int));
    C->pk = -1;
    for (ic_val v = 0; v < N; v++) C->head[v] = -1;
    for (ic_val v = 0; v < N; v++) {
        if (!c->live[v] || !c->catk[v]) continue;
        int d = g->nodes[v].dim, nl = cat_leaves(c, v, inner, leaf, stack);
        int64_t off = 0;
        C->first[v] = C->n;
        for (int i = 0; i < nl; i++) {
            ic_val u = leaf[i];
            const ic_meta *um = &g->nodes[u].meta;
            if (ic_numel(um) > 0) {
                catpart *q = IC_PUSH(c, C->p, C->n, C->cap);
                ic_val w = unit_source(c, u);
                *q = (catpart){.v = v, .u = u, .src = w, .off = off, .next = -1};
                if (c->realized[w] && c->ln[w].kind == L_POINTWISE && !c->catk[w]) {
                    q->next = C->head[w]; /* (placed in reverse order: any order is right) */
                    C->head[w] = C->n - 1;
                }
            }
            off += um->sizes[d];
        }
        C->count[v] = C->n - C->first[v];
    }
}

/* the loop node of part q: its operand cast to the cat's dtype, over the operand's shape */
static void part_ln(ic_ctx *c, const catpart *q, ic_lnode *P) {
    const ic_node *n = &c->g->nodes[q->v];
    const ic_meta *um = &c->g->nodes[q->u].meta;
    int nd = um->ndim;
    *P = (ic_lnode){.kind = L_POINTWISE, .ndim = nd, .body2 = -1};
    ic_ix t[IC_MAX_DIMS];
    for (int e = 0; e < nd; e++) {
        P->size[e] = um->sizes[e];
        P->var[e] = um->sizes[e] == 1 ? -1 : ic_new_var(c, um->sizes[e]);
        t[e] = P->var[e] < 0 ? ix_const(c, 0) : ix_var(c, P->var[e]);
    }
    ic_xid x = c->ln[q->u].kind == L_CONST ? c->ln[q->u].body : x_load(c, q->u, ixv_make(c, nd, t), um->dtype);
    P->body = x_cast(c, x, n->meta.dtype);
}

/* after w is placed: the parts of the operands it is the source of into its kernel, where
 * they fit, iterating w's shape (its value forwarded) */
static void place_parts_of(ic_ctx *c, catparts *C, ic_val w, uint32_t *gen) {
    int kl = c->nkernels - 1;
    const ic_meta *wm = &c->g->nodes[w].meta;
    for (int j = C->head[w]; j >= 0; j = C->p[j].next) {
        catpart *q = &C->p[j];
        if (C->pk == kl && C->pkn >= IC_CAT_PARTS) return;
        const ic_meta *um = &c->g->nodes[q->u].meta;
        int omap[IC_MAX_DIMS], i = 0; /* u's dims in w's: the non-1 sizes in order */
        for (int e = 0; e < um->ndim; e++) {
            while (i < wm->ndim && wm->sizes[i] == 1) i++;
            omap[e] = um->sizes[e] == 1 ? -1 : i++;
        }
        ic_lnode P;
        catpart qw = *q;
        qw.u = w;
        part_ln(c, &qw, &P);
        if (!try_place(c, kl, q->v, ++*gen, &P, c->g->nodes[q->v].dim, q->off, omap, um->ndim)) continue;
        q->done = true;
        if (C->pk != kl) C->pk = kl, C->pkn = 0;
        C->pkn++;
    }
}

static void place_cat(ic_ctx *c, catparts *C, ic_val v, uint32_t *gen) {
    int d = c->g->nodes[v].dim;
    int lastk = -1, inlast = 0; /* parts of v in kernel lastk */
    for (int j = C->first[v]; j < C->first[v] + C->count[v]; j++) {
        catpart *q = &C->p[j];
        if (q->done) continue;
        ic_lnode P;
        part_ln(c, q, &P);
        if (c->nkernels == 0 || (lastk == c->nkernels - 1 && inlast >= IC_CAT_PARTS) ||
            !try_place(c, c->nkernels - 1, v, ++*gen, &P, d, q->off, NULL, 0)) {
            ic_kernel *k = IC_PUSH(c, c->kernels, c->nkernels, c->kcap);
            memset(k, 0, sizeof *k);
            k->id = c->nkernels - 1;
            if (!try_place(c, c->nkernels - 1, v, ++*gen, &P, d, q->off, NULL, 0))
                ic_fail(c, IC_EINTERNAL, "scheduling a part of cat %%%d into a fresh kernel failed", v);
        }
        if (lastk != c->nkernels - 1) lastk = c->nkernels - 1, inlast = 0;
        inlast++;
        q->done = true;
    }
    /* (kernel_of[v]: the kernel of the part placed last, the latest: readers come after it) */
}

/* the operands of real cat v share one shape: its parts share one kernel */
static bool cat_leaves_same(ic_ctx *c, ic_val v, const bool *inner, ic_val *leaf, ic_val *stack) {
    int nl = cat_leaves(c, v, inner, leaf, stack);
    const ic_meta *m0 = &c->g->nodes[leaf[0]].meta;
    for (int i = 1; i < nl; i++)
        if (!same_sizes(m0->sizes, c->g->nodes[leaf[i]].meta.sizes, m0->ndim)) return false;
    return true;
}

/* a cat that may be stored operand by operand: static sizes, some element */
static bool cat_splittable(ic_ctx *c, ic_val v) {
    const ic_meta *m = &c->g->nodes[v].meta;
    if (m->dyn || ic_numel(m) == 0) return false;
    for (int d = 0; d < m->ndim; d++)
        if (ic_tainted(c, m->sizes[d])) return false;
    return true;
}

void ic_schedule(ic_ctx *c) {
    const ic_graph *g = c->g;
    int N = g->n;
    c->live = ic_alloc(c, (size_t)N);
    c->realized = ic_alloc(c, (size_t)N);
    c->users = ic_alloc(c, (size_t)N * sizeof(int));
    c->kernel_of = ic_alloc(c, (size_t)N * sizeof(int));
    c->item_of = ic_alloc(c, (size_t)N * sizeof(int));
    int *reads = ic_alloc(c, (size_t)N * sizeof(int));
    int *ops = ic_alloc(c, (size_t)N * sizeof(int));
    int *catn = ic_alloc(c, (size_t)N * sizeof(int)); /* operands of an inlined tree of cats */
    bool *inner = ic_alloc(c, (size_t)N); /* a cat read only by a cat along its dim: flattened */
    ic_val *leaf = ic_alloc(c, (size_t)N * sizeof(ic_val)), *stack = ic_alloc(c, (size_t)(N + 2) * sizeof(ic_val));
    c->catk = ic_alloc(c, (size_t)N);
    for (int i = 0; i < g->noutputs; i++) c->live[g->outputs[i]] = true;
    /* draws from ATen's generator run even when nothing reads them, as in eager (the stream
     * of random numbers after the graph must be eager's); custom ops too (side effects) */
    for (ic_val v = 0; v < N; v++)
        if (g->nodes[v].op == IC_OP_EXTERN && !g->nodes[v].dropped &&
            (g->nodes[v].ext_kind == IC_EXT_RANDOM || g->nodes[v].ext_kind == IC_EXT_DROPOUT_MASK ||
             g->nodes[v].ext_kind == IC_EXT_CUSTOM))
            c->live[v] = true;
    for (ic_val v = N - 1; v >= 0; v--) {
        c->kernel_of[v] = -1;
        c->item_of[v] = -1;
        if (!c->live[v]) continue;
        const ic_node *n = &g->nodes[v];
        for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) {
            bool dup = false;
            for (int j = 0; j < i; j++) dup |= n->in[j] == n->in[i];
            c->live[n->in[i]] = true;
            if (!dup) c->users[n->in[i]]++;
        }
    }
    for (int i = 0; i < g->noutputs; i++) c->realized[g->outputs[i]] = true;
    for (ic_val v = 0; v < N; v++) {
        const ic_node *n = &g->nodes[v];
        if (!c->live[v] || n->op != IC_OP_CAT) continue;
        for (int i = 0; i < 2; i++) {
            ic_val u = n->in[i];
            if (g->nodes[u].op == IC_OP_CAT && g->nodes[u].dim == n->dim && c->users[u] == 1 && !c->realized[u])
                inner[u] = true;
        }
    }
    const bool stencil = c->cfg.stencil;
    for (ic_val v = 0; v < N; v++) {
        if (!c->live[v]) continue;
        const ic_lnode *L = &c->ln[v];
        const ic_node *n = &g->nodes[v];
        if (L->kind == L_INPUT || L->kind == L_REDUCE || L->kind == L_EXTERN) c->realized[v] = true;
        if (n->op == IC_OP_INDEX_SELECT) c->realized[n->in[0]] = true; /* gathered from memory */
        if (L->kind == L_EXTERN) /* (a permuted input is read in place: extern_views.c) */
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++)
                if (!ic_extern_operand_alias(c, v, i, NULL, NULL)) c->realized[n->in[i]] = true;
        if (L->kind != L_POINTWISE) continue;
        bool view = n->op == IC_OP_RESHAPE || n->op == IC_OP_PERMUTE || n->op == IC_OP_EXPAND ||
                    n->op == IC_OP_SLICE;
        ops[v] = view ? 0 : 1;
        for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) {
            ic_val u = n->in[i];
            if (c->ln[u].kind == L_CONST) continue;
            if (c->realized[u]) {
                reads[v] += 1;
            } else {
                reads[v] += reads[u];
                ops[v] += ops[u];
            }
        }
        if (!view && c->users[v] > 1 && (reads[v] > 4 || ops[v] > 30)) {
            ic_val u = n->in[0];
            /* a widening cast (bf16 -> f32: an op computed in float after its input was
             * rounded) stores its narrower input, cast again where it is read: half the bytes */
            const ic_op uop = g->nodes[u].op;
            if (n->op == IC_OP_CAST && c->ln[u].kind == L_POINTWISE && !c->realized[u] && ops[u] > 0 &&
                uop != IC_OP_RESHAPE && uop != IC_OP_PERMUTE && uop != IC_OP_EXPAND && uop != IC_OP_SLICE &&
                ic_dtype_size(g->nodes[u].meta.dtype) < ic_dtype_size(n->meta.dtype) &&
                ic_is_float(g->nodes[u].meta.dtype) && ic_is_float(n->meta.dtype)) {
                c->realized[u] = true;
                reads[v] = 1;
                ops[v] = 1;
            } else {
                c->realized[v] = true;
            }
        }
        /* stencils (TORCHC_STENCIL=0: off): a padded value read by many windows (the taps of a depthwise
         * conv, a pool's window): stored once with its padding instead of its body recomputed, behind
         * selects, in every tap (mobilenet_v3's 5x5 depthwise kernels were 25 copies of
         * the producer's batch norm and activation) */
        if (n->op == IC_OP_CAT && c->users[v] >= 4 && ops[v] > 4 && stencil) c->realized[v] = true;
        /* bound the size (and recursion depth) of inlined bodies: long chains are stored
         * every IC_MAX_INLINE ops even with one user (an inner cat that may be flattened is
         * never inlined when its root is a real cat, and with at most IC_CAT_SELECT operands
         * it stays small) */
        const bool flat = inner[v] && cat_splittable(c, v);
        if (!flat && (ops[v] > IC_MAX_INLINE || reads[v] > 4 * IC_MAX_INLINE)) c->realized[v] = true;
        /* a cat of many tensors (a tree of two-operand cats: an RNN's steps stacked) as
         * selects loads all its operands at each element (log n selects deep, and a vector
         * evaluates every branch): stored operand by operand instead, each element once
         * (30 ms against eager's 0.4 for a stack of 300 [16, 170]); and a cat stored anyway
         * whose operands have one shape (its parts share one kernel). Dynamic shapes: a
         * select, stored every IC_CAT_SELECT operands (each element loads O(8 log n) values) */
        if (n->op == IC_OP_CAT) {
            for (int i = 0; i < 2; i++)
                catn[v] += inner[n->in[i]] && !c->realized[n->in[i]] ? catn[n->in[i]] : 1;
            if (!inner[v] && cat_splittable(c, v)) {
                if (catn[v] > IC_CAT_SELECT || (c->realized[v] && cat_leaves_same(c, v, inner, leaf, stack)))
                    c->realized[v] = c->catk[v] = true;
            } else if (!flat && catn[v] > IC_CAT_SELECT) {
                c->realized[v] = true;
            }
        }
        if (ops[v] > 1 << 20) ops[v] = 1 << 20;
        if (reads[v] > 1 << 20) reads[v] = 1 << 20;
    }
    /* the memo for inlining */
    c->memo_cap = 1;
    while (c->memo_cap < 4u * (uint32_t)N + 1024) c->memo_cap <<= 1;
    c->memo = ic_alloc(c, c->memo_cap * sizeof(memo_ent));
    uint32_t gen = 0;
    catparts C = {0};
    plan_parts(c, &C, inner, leaf, stack);
    for (ic_val v = 0; v < N; v++) {
        if (!c->live[v] || !c->realized[v] || c->ln[v].kind == L_INPUT) continue;
        if (c->catk[v]) {
            place_cat(c, &C, v, &gen);
            continue;
        }
        if (c->nkernels > 0 && try_place(c, c->nkernels - 1, v, ++gen, &c->ln[v], -1, 0, NULL, 0)) {
            place_parts_of(c, &C, v, &gen);
            continue;
        }
        ic_kernel *k = IC_PUSH(c, c->kernels, c->nkernels, c->kcap);
        memset(k, 0, sizeof *k);
        k->id = c->nkernels - 1;
        if (c->ln[v].kind == L_EXTERN) {
            k->is_ext = true;
            k->ext_v = v;
            c->kernel_of[v] = k->id;
            continue;
        }
        if (!try_place(c, c->nkernels - 1, v, ++gen, &c->ln[v], -1, 0, NULL, 0))
            ic_fail(c, IC_EINTERNAL, "scheduling %%%d into a fresh kernel failed", v);
        place_parts_of(c, &C, v, &gen);
    }
}
