/* partition.c — which forward values the backward graph reads from memory (saved by the
 * forward graph as extra outputs) and which it recomputes from those.
 *
 * Contract: reads the forward graph; fills save[v] for every node. A value marked 0 is
 * rebuilt in the backward graph from its operands (recursively); a value marked 1 is read
 * as a backward input when the backward needs it (the forward stores it). Graph inputs are
 * always read directly (they are alive anyway); scalars and aranges are always rebuilt.
 *
 * Policy (a first, greedy version of a min-cut over bytes):
 *  - never recompute an extern call (matmul, conv, attention, gather/scatter, scans: the
 *    cost is the library kernel) nor a reduction (it reads its whole input);
 *  - recompute pointwise ops, casts, views, slices, cats and index_select: their inputs are
 *    read once by the fused backward kernel that needs them, so the saved bytes shrink to
 *    the inputs of the cheap region (eager saves every intermediate);
 *  - but a cheap value whose recomputation would read more than RECOMPUTE_MAX_LEAVES saved
 *    tensors is saved itself (a residual stream h = x + a1 + m1 + a2 + ... would otherwise
 *    be rebuilt from every layer's outputs in every layer's backward: quadratic traffic).
 * There is no random-number op in the graph IR, so RNG is never recomputed.
 */
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "vjp.h"

#define RECOMPUTE_MAX_LEAVES 4

static bool always_saved(const ic_node *n) {
    return n->op == IC_OP_EXTERN || ic_op_kind(n->op) == IC_K_REDUCE;
}

/* distinct leaves (inputs and saved values) a value's recomputation reads */
typedef struct leafset {
    int n;
    ic_val v[RECOMPUTE_MAX_LEAVES + 1];
} leafset;

static void leaf_add(leafset *s, ic_val x) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == x) return;
    if (s->n <= RECOMPUTE_MAX_LEAVES) s->v[s->n] = x;
    s->n++;
}

int ic_part_plan(const ic_graph *f, unsigned char *save) {
    leafset *ls = calloc((size_t)f->n + 1, sizeof *ls);
    if (ls == NULL) return -1;
    for (ic_val v = 0; v < f->n; v++) {
        const ic_node *n = &f->nodes[v];
        save[v] = 0;
        if (n->op == IC_OP_SCALAR || n->op == IC_OP_ARANGE) continue;
        if (n->op == IC_OP_INPUT) {
            leaf_add(&ls[v], v);
            continue;
        }
        if (always_saved(n)) {
            save[v] = 1;
            leaf_add(&ls[v], v);
            continue;
        }
        for (int k = 0; k < IC_NIN && ls[v].n <= RECOMPUTE_MAX_LEAVES; k++)
            if (n->in[k] >= 0)
                for (int i = 0; i < ls[n->in[k]].n && i <= RECOMPUTE_MAX_LEAVES; i++) leaf_add(&ls[v], ls[n->in[k]].v[i]);
        if (ls[v].n > RECOMPUTE_MAX_LEAVES) {
            save[v] = 1;
            ls[v].n = 0;
            leaf_add(&ls[v], v);
        }
    }
    free(ls);
    return 0;
}
