/* buffers.c — workspace planning for intermediate buffers.
 *
 * Requires: finalized kernels and buffers (kind 2 = intermediate).
 * Produces: bufs[i].offset (64-byte aligned) inside one workspace of c->ws_size bytes.
 *   An intermediate lives from the kernel that stores it to the last kernel that loads it;
 *   two buffers share bytes only if their lives are disjoint (never inside the same kernel,
 *   so no kernel sees two buffers in one place). An extern call counts as a kernel that
 *   stores its output and reads its operands.
 * Static graphs: offsets, not slots. Each buffer is a rectangle (bytes x kernels); they are
 *   placed one by one, each in the smallest gap between the placed buffers whose lives
 *   overlap its own (best fit), else above them, in four orders (largest first, by start,
 *   greedy by breadth, longest-lived first), and the smallest plan is kept. The workspace is
 *   then the peak of live bytes or close to it (describe's "live peak"), where slots (a
 *   buffer reused one slot of earlier ones, sized by the largest it ever held) left it up to
 *   3x that (DenseNet's blocks, attention's scores beside its projections).
 *   GPU GEMM epilogues: the kernel after an extern may run fused into its epilogue, refused
 *   by driver_passes.c where the epilogue's stores overlap the extern's operands; so an
 *   operand's bytes are kept clear through that kernel wherever that does not grow the
 *   workspace (its soft life), and given up where it would.
 *   ic_ws_reserve adds a block that lives in one kernel only (GPU row scratch, split
 *   reductions' partials) in the same way, after the plan.
 * Dynamic graphs: byte sizes are monomials in the symbols (decoded from the tainted
 *   sizes); a slot is reused only by a buffer of the same monomial with a coefficient no
 *   larger, so it fits for every symbol value. c->slot_dim / c->buf_slot let the runtime
 *   lay the slots out for the actual values (c->ws_size and offsets are only the layout at
 *   the internal hints, for the verifier).
 * Keeps: everything else.
 */
#include <stdlib.h>
#include <string.h>

#include "../ic_backend.h"
#include "../ic_internal.h"

static void scan_reads(ic_ctx *c, ic_xid x, int ki, int *last, uint32_t *seen) {
    if (seen[x] == (uint32_t)ki + 1) return;
    seen[x] = (uint32_t)ki + 1;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF) {
        if (last[e->buf] < ki) last[e->buf] = ki;
        if (e->a >= 0) scan_reads(c, e->a, ki, last, seen);
        return;
    }
    if (e->kind == X_ROWVAL) return;
    if (e->a >= 0) scan_reads(c, e->a, ki, last, seen);
    if (e->b >= 0) scan_reads(c, e->b, ki, last, seen);
    if (e->c >= 0) scan_reads(c, e->c, ki, last, seen);
}

/* A placed block: bytes [off, off + size) from kernel first to kernel last (inclusive);
 * soft: the kernel it would rather stay untouched to (an extern operand: through the kernel
 * that may run in the extern's epilogue), >= last. */
typedef struct ws_block {
    int64_t off, size;
    int first, last, soft;
} ws_block;

struct ic_ws_plan {
    ws_block *b;
    int n, cap;
    int64_t live_peak; /* the most bytes of buffers live in one kernel: no plan is below it */
};

static int by_off(const void *x, const void *y) {
    const ws_block *a = *(const ws_block *const *)x, *b = *(const ws_block *const *)y;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* The offset (a multiple of align) for size bytes living [first, last] among the n placed
 * blocks: the smallest gap that holds it, else above every block whose life overlaps.
 * soft: lives compared through their soft ends. tmp: room for n pointers. */
static int64_t best_gap(const ws_block *placed, int n, int64_t size, int first, int last, bool soft,
                        int64_t align, const ws_block **tmp) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (placed[i].first <= last && first <= (soft ? placed[i].soft : placed[i].last) && placed[i].size > 0)
            tmp[m++] = &placed[i];
    qsort(tmp, (size_t)m, sizeof *tmp, by_off);
    int64_t best = -1, best_gap = 0, top = 0;
    for (int i = 0; i < m; i++) {
        int64_t start = (top + align - 1) / align * align;
        int64_t gap = tmp[i]->off - start;
        if (gap >= size && (best < 0 || gap < best_gap)) {
            best = start;
            best_gap = gap;
        }
        if (tmp[i]->off + tmp[i]->size > top) top = tmp[i]->off + tmp[i]->size;
    }
    return best >= 0 ? best : (top + align - 1) / align * align;
}

typedef struct ws_item {
    int buf;
    int64_t size, key;
    int first, last, soft;
} ws_item;

/* key descending (the order's own rule), then size descending, then start */
static int by_key(const void *x, const void *y) {
    const ws_item *a = x, *b = y;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return a->buf - b->buf;
}

/* Places the items in their order, each where its soft life is untouched if that does not
 * grow the workspace, else where its life is; offsets into off[buf]; returns the size. */
static int64_t place_all(const ws_item *it, int n, ws_block *blocks, const ws_block **tmp, int64_t *off) {
    int64_t ws = 0;
    for (int i = 0; i < n; i++) {
        int64_t o = best_gap(blocks, i, it[i].size, it[i].first, it[i].soft, true, 64, tmp);
        if (o + it[i].size > ws) {
            int64_t h = best_gap(blocks, i, it[i].size, it[i].first, it[i].last, false, 64, tmp);
            if (h < o) o = h;
        }
        blocks[i] = (ws_block){o, it[i].size, it[i].first, it[i].last, it[i].soft};
        off[it[i].buf] = o;
        if (o + it[i].size > ws) ws = o + it[i].size;
    }
    return ws;
}

/* Orders tried (the smallest plan is kept): largest first; by start (the order the buffers
 * come to life); by breadth (the buffers of the kernel with the most live bytes first, then
 * of the next: greedy by breadth); longest-lived first. */
enum { ORD_SIZE, ORD_START, ORD_BREADTH, ORD_LENGTH, NORD };

static void plan_static(ic_ctx *c, const int *first, const int *last, const int *soft) {
    int nb = c->nbufs, n = 0, nk = c->nkernels;
    ws_item *it = ic_alloc(c, (size_t)(nb + 1) * sizeof *it);
    for (int b = 0; b < nb; b++) {
        c->bufs[b].offset = 0;
        if (c->bufs[b].kind != 2 || last[b] < 0) continue; /* never touched: no bytes */
        int64_t need = (c->bufs[b].nbytes + 63) & ~(int64_t)63;
        int f = first[b] < 0 ? 0 : first[b];
        it[n++] = (ws_item){b, need, 0, f, last[b], soft[b] > last[b] ? soft[b] : last[b]};
    }
    /* live bytes per kernel (difference array) */
    int64_t *live = ic_alloc(c, (size_t)(nk + 2) * sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        live[it[i].first] += it[i].size;
        live[it[i].last + 1] -= it[i].size;
    }
    int64_t peak = 0;
    for (int k = 0; k < nk; k++) {
        if (k) live[k] += live[k - 1];
        if (live[k] > peak) peak = live[k];
    }
    ws_block *blocks = ic_alloc(c, (size_t)(n + 1) * sizeof *blocks);
    ws_block *best_blocks = ic_alloc(c, (size_t)(n + 1) * sizeof *blocks);
    const ws_block **tmp = ic_alloc(c, (size_t)(n + 1) * sizeof *tmp);
    int64_t *off = ic_alloc(c, (size_t)(nb + 1) * sizeof(int64_t));
    int64_t *best_off = ic_alloc(c, (size_t)(nb + 1) * sizeof(int64_t));
    int64_t best = -1;
    for (int ord = 0; ord < NORD; ord++) {
        for (int i = 0; i < n; i++) {
            ws_item *x = &it[i];
            switch (ord) {
            case ORD_SIZE: x->key = 0; break;
            case ORD_START: x->key = -(int64_t)x->first; break;
            case ORD_BREADTH: {
                int64_t w = 0; /* the breadth of the widest kernel it lives in, then that kernel */
                int wk = x->first;
                for (int k = x->first; k <= x->last; k++)
                    if (live[k] > w) w = live[k], wk = k;
                x->key = w * 4096 - wk % 4096;
                if (w > ((int64_t)1 << 50)) x->key = w; /* no room for the kernel's place */
                break;
            }
            default: x->key = x->last - x->first; break;
            }
        }
        qsort(it, (size_t)n, sizeof *it, by_key);
        int64_t ws = place_all(it, n, blocks, tmp, off);
        if (best < 0 || ws < best) {
            best = ws;
            memcpy(best_blocks, blocks, (size_t)n * sizeof *blocks);
            for (int i = 0; i < n; i++) best_off[it[i].buf] = off[it[i].buf];
        }
        if (best == peak) break; /* nothing does better */
    }
    for (int i = 0; i < n; i++) c->bufs[it[i].buf].offset = best_off[it[i].buf];
    c->ws_size = best < 0 ? 0 : best;
    struct ic_ws_plan *P = c->ws_plan = ic_alloc(c, sizeof *P);
    P->b = best_blocks;
    P->n = P->cap = n;
    P->live_peak = peak;
}

int64_t ic_ws_reserve(ic_ctx *c, int ki, int64_t bytes) {
    struct ic_ws_plan *P = c->ws_plan;
    if (!P || c->dyn) { /* dynamic graphs: above the slots' layout at the hints */
        int64_t o = (c->ws_size + 255) & ~(int64_t)255;
        c->ws_size = o + bytes;
        return o;
    }
    const ws_block **tmp = ic_alloc(c, (size_t)(P->n + 1) * sizeof *tmp);
    int64_t o = best_gap(P->b, P->n, bytes, ki, ki, false, 256, tmp);
    *IC_PUSH(c, P->b, P->n, P->cap) = (ws_block){o, bytes, ki, ki, ki};
    if (o + bytes > c->ws_size) c->ws_size = o + bytes;
    return o;
}

int64_t ic_ws_live_peak(const ic_ctx *c) { return c->ws_plan ? c->ws_plan->live_peak : -1; }

/* The kernel that may run in the epilogue of extern kernel ki (the next one with work, if it
 * is pointwise), else -1: the rule of driver_passes.c's gemm_consumer, without its checks. */
static int epilogue_kernel(const ic_ctx *c, int ki) {
    int kj = ki + 1;
    while (kj < c->nkernels && !c->kernels[kj].is_ext && ic_kernel_empty(&c->kernels[kj])) kj++;
    if (kj >= c->nkernels || c->kernels[kj].is_ext || c->kernels[kj].has_red) return -1;
    return kj;
}

void ic_plan_buffers(ic_ctx *c) {
    int nb = c->nbufs;
    int *first = ic_alloc(c, (size_t)nb * sizeof(int));
    int *last = ic_alloc(c, (size_t)nb * sizeof(int));
    int *soft = ic_alloc(c, (size_t)nb * sizeof(int));
    for (int b = 0; b < nb; b++) first[b] = last[b] = soft[b] = -1;
    /* seen[x] == ki + 1: x scanned for kernel ki (one array for all kernels: one per kernel
     * made this pass quadratic in the graph) */
    uint32_t *seen = ic_alloc(c, (size_t)c->nxs * sizeof(uint32_t));
    for (int ki = 0; ki < c->nkernels; ki++) {
        ic_kernel *k = &c->kernels[ki];
        if (k->is_ext) {
            const ic_node *n = &c->g->nodes[k->ext_v];
            int ob = c->buf_of[k->ext_v];
            if (first[ob] < 0) first[ob] = ki;
            if (last[ob] < ki) last[ob] = ki;
            int kj = c->backend && c->backend->gemm_epilogue ? epilogue_kernel(c, ki) : -1;
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) {
                int b = c->buf_of[n->in[i]];
                if (b < 0) ic_fail(c, IC_EINTERNAL, "extern operand %%%d without a buffer", n->in[i]);
                if (last[b] < ki) last[b] = ki;
                if (soft[b] < kj) soft[b] = kj;
            }
        }
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (it->store && first[it->buf] < 0) first[it->buf] = ki;
            if (it->store && last[it->buf] < ki) last[it->buf] = ki;
            scan_reads(c, it->expr, ki, last, seen);
        }
        if (k->split) first[k->partial_buf] = last[k->partial_buf] = ki;
    }
    c->ws_plan = NULL;
    if (!c->dyn) {
        plan_static(c, first, last, soft);
        c->nslots = 0;
        c->slot_dim = NULL;
        c->buf_slot = ic_alloc(c, (size_t)(nb + 1) * sizeof(int));
        for (int b = 0; b < nb; b++) c->buf_slot[b] = -1;
        return;
    }
    /* dynamic: slots, each of one monomial */
    int nslots = 0;
    int64_t *ssize = ic_alloc(c, (size_t)(nb + 1) * sizeof(int64_t));
    ic_dim *sdim = ic_alloc(c, (size_t)(nb + 1) * sizeof(ic_dim));
    int *sfree = ic_alloc(c, (size_t)(nb + 1) * sizeof(int));
    int *slot_of = ic_alloc(c, (size_t)(nb + 1) * sizeof(int));
    for (int ki = 0; ki < c->nkernels; ki++) {
        for (int b = 0; b < nb; b++) {
            if (c->bufs[b].kind != 2 || first[b] != ki) continue;
            int64_t need = (c->bufs[b].nbytes + 63) & ~(int64_t)63;
            ic_dim nd;
            if (!ic_sym_decode(c, c->bufs[b].nbytes, &nd))
                ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: buffer size is not a monomial");
            int best = -1;
            for (int s = 0; s < nslots; s++) {
                bool fits = sdim[s].coef >= nd.coef && !memcmp(sdim[s].exp, nd.exp, sizeof nd.exp);
                if (sfree[s] < ki && fits && (best < 0 || ssize[s] < ssize[best])) best = s;
            }
            if (best < 0) {
                best = nslots++;
                ssize[best] = need;
                sdim[best] = nd;
            }
            sfree[best] = last[b];
            slot_of[b] = best;
        }
    }
    int64_t *soff = ic_alloc(c, (size_t)(nslots + 1) * sizeof(int64_t));
    int64_t off = 0;
    for (int s = 0; s < nslots; s++) {
        soff[s] = off;
        off += ssize[s];
    }
    for (int b = 0; b < nb; b++)
        if (c->bufs[b].kind == 2) c->bufs[b].offset = soff[slot_of[b]];
    c->ws_size = off;
    c->nslots = nslots;
    c->slot_dim = sdim;
    c->buf_slot = ic_alloc(c, (size_t)(nb + 1) * sizeof(int));
    for (int b = 0; b < nb; b++) c->buf_slot[b] = c->bufs[b].kind == 2 ? slot_of[b] : -1;
}
