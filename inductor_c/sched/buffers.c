/* buffers.c — workspace planning for intermediate buffers.
 *
 * Requires: finalized kernels and buffers (kind 2 = intermediate).
 * Produces: bufs[i].offset (64-byte aligned) inside one workspace of c->ws_size bytes.
 *   An intermediate lives from the kernel that stores it to the last kernel that loads it;
 *   a slot is reused by a later buffer once its last reader has finished (never inside
 *   the same kernel, so no kernel sees two buffers in one slot). An extern call counts as
 *   a kernel that stores its output and reads its operands.
 *   the same kernel, so no kernel sees two buffers in one slot).
 * Dynamic graphs: byte sizes are monomials in the symbols (decoded from the tainted
 *   sizes); a slot is reused only by a buffer of the same monomial with a coefficient no
 *   larger, so it fits for every symbol value. c->slot_dim / c->buf_slot let the runtime
 *   lay the slots out for the actual values (c->ws_size and offsets are only the layout at
 *   the internal hints, for the verifier).
 * Keeps: everything else.
 */
#include <string.h>

#include "../ic_internal.h"

static void scan_reads(ic_ctx *c, ic_xid x, int ki, int *last, uint8_t *seen) {
    if (seen[x]) return;
    seen[x] = 1;
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

void ic_plan_buffers(ic_ctx *c) {
    int nb = c->nbufs;
    int *first = ic_alloc(c, (size_t)nb * sizeof(int));
    int *last = ic_alloc(c, (size_t)nb * sizeof(int));
    for (int b = 0; b < nb; b++) first[b] = last[b] = -1;
    for (int ki = 0; ki < c->nkernels; ki++) {
        ic_kernel *k = &c->kernels[ki];
        uint8_t *seen = ic_alloc(c, (size_t)c->nxs);
        if (k->is_ext) {
            const ic_node *n = &c->g->nodes[k->ext_v];
            int ob = c->buf_of[k->ext_v];
            if (first[ob] < 0) first[ob] = ki;
            if (last[ob] < ki) last[ob] = ki;
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) {
                int b = c->buf_of[n->in[i]];
                if (b < 0) ic_fail(c, IC_EINTERNAL, "extern operand %%%d without a buffer", n->in[i]);
                if (last[b] < ki) last[b] = ki;
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
    /* slots: size and the kernel after which they are free */
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
                bool fits = ssize[s] >= need;
                if (c->dyn)
                    fits = sdim[s].coef >= nd.coef && !memcmp(sdim[s].exp, nd.exp, sizeof nd.exp);
                if (sfree[s] < ki && fits && (best < 0 || ssize[s] < ssize[best])) best = s;
            }
            if (best < 0 && !c->dyn) {
                /* grow the largest free slot rather than adding one */
                for (int s = 0; s < nslots; s++)
                    if (sfree[s] < ki && (best < 0 || ssize[s] > ssize[best])) best = s;
                if (best >= 0) ssize[best] = need;
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
