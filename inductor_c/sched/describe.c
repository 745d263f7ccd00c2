/* describe.c — text summary of the kernels (ic_compiled_describe, TORCHC_DEBUG=loops).
 *
 * Format (stable; tests match on it):
 *   kernel k0: outer [4096] inner [1024] iters 4096
 *     pass 0: reduce sum %3 fused(%2,%3) noStore
 *     row: store %4 -> buf2 fused(%4)
 *     pass 1: store %9 -> out0 fused(%5,%6,%7,%8,%9)
 *   kernel k1: extern mm(in0, in1) -> tmp3 (%2)
 *   buffers: in0 f32[4096,1024]; out0 f32[4096,1024]; tmp2 f32[4096,1] @0
 *   workspace 16384 bytes (live peak 16384 bytes)
 */
#include <stdlib.h>

#include "../ic_internal.h"

/* a size: symbolic ones (dynamic graphs) as their monomial, e.g. 16*s0 */
static void num(ic_ctx *c, ic_str *s, int64_t v) {
    ic_dim d;
    if (ic_tainted(c, v) && ic_sym_decode(c, v, &d)) ic_dim_print(s, d);
    else ic_str_printf(s, "%lld", (long long)v);
}

static void bufname(ic_ctx *c, ic_str *s, int b) {
    const ic_buffer *B = &c->bufs[b];
    if (B->kind == 0) ic_str_printf(s, "in%d", B->index);
    else if (B->kind == 1) ic_str_printf(s, "out%d", B->index);
    else if (B->kind == 3) ic_str_printf(s, "rowtmp%d", b);
    else ic_str_printf(s, "tmp%d", b);
}

char *ic_describe_kernels(ic_ctx *c, bool detail) {
    ic_str s = {0};
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        if (k->is_ext) {
            const ic_node *n = &c->g->nodes[k->ext_v];
            ic_str_printf(&s, "kernel %s: extern %s(", k->name, ic_extern_name(n->ext_kind));
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) {
                ic_str_printf(&s, "%s", i ? ", " : "");
                bufname(c, &s, c->buf_of[n->in[i]]);
            }
            ic_str_printf(&s, ") -> ");
            bufname(c, &s, c->buf_of[k->ext_v]);
            ic_str_printf(&s, " (%%%d)\n", k->ext_v);
            continue;
        }
        ic_str_printf(&s, "kernel %s: outer [", k->name);
        for (int i = 0; i < k->nouter; i++) {
            ic_str_printf(&s, "%s", i ? "," : "");
            num(c, &s, k->osize[i]);
        }
        ic_str_printf(&s, "] inner [");
        for (int i = 0; i < k->ninner; i++) {
            ic_str_printf(&s, "%s", i ? "," : "");
            num(c, &s, k->isize[i]);
        }
        ic_str_printf(&s, "] iters ");
        num(c, &s, k->iters);
        if (k->ntiles > 1 && !k->nob) ic_str_printf(&s, " %s %lldx%lld", k->split ? "split" : "tiles", (long long)k->ntiles, (long long)k->tile);
        if (k->vec_outer) ic_str_printf(&s, " vec_outer");
        if (k->nob) ic_str_printf(&s, " blocked %dx%d", IC_BLOCK_ROWS, IC_BLOCK_COLS);
        ic_str_printf(&s, "\n");
        for (int p = 0; p < k->npos; p++) {
            for (int j = 0; j < k->nitems; j++) {
                const ic_item *it = &k->items[j];
                if (it->pos != p) continue;
                if (p % 2) ic_str_printf(&s, "  pass %d: ", p / 2);
                else ic_str_printf(&s, "  row: ");
                if (it->kind == IT_REDUCE) ic_str_printf(&s, "reduce %s %%%d", ic_op_name(it->red_op), it->v);
                else ic_str_printf(&s, "store %%%d", it->v);
                if (it->store) {
                    ic_str_printf(&s, " -> ");
                    bufname(c, &s, it->buf);
                }
                ic_str_printf(&s, " fused(");
                for (int f = 0; f < it->nfused; f++) ic_str_printf(&s, "%s%%%d", f ? "," : "", it->fused[f]);
                ic_str_printf(&s, ")%s\n", it->store ? "" : " noStore");
            }
        }
        if (detail) {
            for (int j = 0; j < k->nitems; j++) {
                ic_str_printf(&s, "  item %d (%%%d):\n", j, k->items[j].v);
                x_print(c, &s, k->items[j].expr);
                if (k->items[j].store) {
                    ic_str_printf(&s, "    store at ");
                    ix_print(c, &s, k->items[j].out_ix);
                    ic_str_printf(&s, "\n");
                }
            }
        }
    }
    ic_str_printf(&s, "buffers:");
    for (int b = 0; b < c->nbufs; b++) {
        const ic_buffer *B = &c->bufs[b];
        ic_str_printf(&s, "%s ", b ? ";" : "");
        bufname(c, &s, b);
        ic_str_printf(&s, " %s[", ic_dtype_name(B->dtype));
        for (int d = 0; d < B->meta.ndim; d++) {
            ic_str_printf(&s, "%s", d ? "," : "");
            num(c, &s, B->meta.sizes[d]);
        }
        ic_str_printf(&s, "]");
        if (B->kind == 2 && c->dyn) ic_str_printf(&s, " @slot%d", c->buf_slot[b]);
        else if (B->kind == 2) ic_str_printf(&s, " @%lld", (long long)B->offset);
    }
    if (c->dyn) {
        ic_str_printf(&s, "\nworkspace slots [");
        for (int i = 0; i < c->nslots; i++) {
            ic_str_printf(&s, "%s", i ? ", " : "");
            ic_dim_print(&s, c->slot_dim[i]);
        }
        ic_str_printf(&s, "] bytes (symbolic)\n");
    } else {
        ic_str_printf(&s, "\nworkspace %lld bytes (live peak %lld bytes)\n", (long long)c->ws_size,
                      (long long)ic_ws_live_peak(c));
    }
    if (s.oom) {
        free(s.s);
        ic_fail(c, IC_ENOMEM, "out of memory");
    }
    return s.s;
}
