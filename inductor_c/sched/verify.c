/* verify.c — checks of the kernel IR (after ic_finalize_kernels / ic_plan_buffers).
 *
 * Requires: finalized kernels. Keeps/breaks: nothing (read-only). Run by the driver in
 * debug builds (no NDEBUG) and whenever TORCHC_DEBUG is set; a failure is IC_EINTERNAL.
 * Checks: positions (passes odd, row blocks even, reductions in passes); row values read
 * only after their pass; loads/stores name existing buffers; every index uses only the
 * kernel's loop vars (row items: outer vars only); operand dtypes agree with the op.
 */
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

typedef struct vctx {
    ic_ctx *c;
    const ic_kernel *k;
    const ic_item *it;
    int item;
    char *msg;
    size_t n;
    bool bad;
    uint32_t *seen, gen; /* seen[x] == gen: x checked for this item */
} vctx;

static void bad(vctx *V, const char *what, int x) {
    if (V->bad) return;
    V->bad = true;
    snprintf(V->msg, V->n, "kernel %s item %d (%%%d): %s (t%d)", V->k->name, V->item, V->it->v, what, x);
}

static bool allowed_var(vctx *V, int32_t var) {
    for (int i = 0; i < V->k->nouter; i++)
        if (V->k->ovar[i] == var) return true;
    if (!V->it->inner && V->k->has_red) return false;
    for (int i = 0; i < V->k->ninner; i++)
        if (V->k->ivar[i] == var) return true;
    return false;
}

static void check_ix(vctx *V, ic_ix a, int x) {
    ic_ctx *c = V->c;
    if (a < 0 || a >= c->nsums) {
        bad(V, "bad index expression", x);
        return;
    }
    const ix_sum *s = &c->sums[a];
    for (int i = 0; i < s->n; i++) {
        const ix_atom *at = &c->atoms[c->terms[s->first + i].atom];
        if (at->kind == IX_VAR) {
            if (!allowed_var(V, at->var)) bad(V, "index uses a var outside the kernel's loops", x);
        } else {
            if (at->div < 1 || at->mod < 0) bad(V, "bad modidx", x);
            check_ix(V, at->sub, x);
        }
    }
}

static void check_x(vctx *V, ic_xid x) {
    ic_ctx *c = V->c;
    if (x < 0 || x >= c->nxs) {
        bad(V, "bad expression handle", x);
        return;
    }
    if (V->seen[x] == V->gen) return;
    V->seen[x] = V->gen;
    const ic_x *e = &c->xs[x];
    switch (e->kind) {
    case X_CONST:
        break;
    case X_LOADF:
        if (e->buf < 0 || e->buf >= c->nbufs) bad(V, "load of a bad buffer", x);
        check_ix(V, e->ix, x);
        if (e->a >= 0) {
            check_x(V, e->a);
            if (c->xs[e->a].dtype != IC_I64) bad(V, "gather index is not i64", x);
        }
        break;
    case X_IXVAL:
        check_ix(V, e->ix, x);
        break;
    case X_ROWVAL: {
        if (e->a < 0 || e->a >= V->k->nitems) {
            bad(V, "row value of a bad item", x);
            break;
        }
        const ic_item *p = &V->k->items[e->a];
        if (p->kind != IT_REDUCE) bad(V, "row value of a non-reduction", x);
        if (p->pos >= V->it->pos) bad(V, "row value read before its pass ends", x);
        break;
    }
    case X_CAST:
        check_x(V, e->a);
        break;
    case X_OP: {
        check_x(V, e->a);
        if (e->b >= 0) check_x(V, e->b);
        if (e->c >= 0) check_x(V, e->c);
        ic_kind k = ic_op_kind(e->op);
        if (V->bad) break;
        if (k == IC_K_BINARY && c->xs[e->a].dtype != c->xs[e->b].dtype) bad(V, "binary operand dtypes differ", x);
        if (e->op == IC_OP_WHERE &&
            (c->xs[e->a].dtype != IC_BOOL || c->xs[e->b].dtype != e->dtype || c->xs[e->c].dtype != e->dtype))
            bad(V, "where operand dtypes", x);
        if (k != IC_K_UNARY && k != IC_K_BINARY && e->op != IC_OP_WHERE) bad(V, "unexpected op", x);
        break;
    }
    default:
        bad(V, "expression kind not allowed after finalize", x);
    }
}

int ic_verify_kernels(ic_ctx *c, char *msg, size_t n) {
    /* one seen array for all items (one per item was quadratic in the graph) */
    uint32_t *seen = ic_alloc(c, ((size_t)c->nxs + 1) * sizeof(uint32_t)), gen = 0;
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        for (int j = 0; j < k->nitems; j++) {
            const ic_item *it = &k->items[j];
            vctx V = {.c = c, .k = k, .it = it, .item = j, .msg = msg, .n = n};
            V.seen = seen;
            V.gen = ++gen;
            if (it->pos < 0 || it->pos >= k->npos) bad(&V, "position out of range", -1);
            if (k->has_red && (it->pos % 2 == 1) != (it->inner || it->kind == IT_REDUCE))
                bad(&V, "inner items belong to passes, row items to row blocks", -1);
            if (it->kind == IT_REDUCE && it->pos % 2 == 0) bad(&V, "reduction outside a pass", -1);
            check_x(&V, it->expr);
            if (it->expr2 >= 0) check_x(&V, it->expr2);
            if (it->store) {
                if (it->buf < 0 || it->buf >= c->nbufs) bad(&V, "store to a bad buffer", -1);
                else if (c->bufs[it->buf].kind == 0 && !c->bufs[it->buf].inplace) bad(&V, "store to an input", -1);
                /* a reduction's result is stored per row: outer vars only */
                if (it->kind == IT_REDUCE) {
                    ic_item tmp = *it;
                    tmp.inner = false;
                    V.it = &tmp;
                    check_ix(&V, it->out_ix, -1);
                    V.it = it;
                } else {
                    check_ix(&V, it->out_ix, -1);
                }
            }
            if (V.bad) return -1;
        }
    }
    for (int b = 0; b < c->nbufs; b++) {
        const ic_buffer *B = &c->bufs[b];
        if (B->kind == 2 && (B->offset < 0 || B->offset % 64 || B->offset + B->nbytes > c->ws_size)) {
            snprintf(msg, n, "buffer %d: bad workspace slot", b);
            return -1;
        }
    }
    return 0;
}
