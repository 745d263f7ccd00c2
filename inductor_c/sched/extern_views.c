/* extern_views.c — GEMM operands read in place through a permuted view of a graph input.
 *
 * An extern call reads its operands from memory, so the scheduler realizes each one. For a
 * permutation of a graph input (h.t() @ dz, W.t().t(), a transposed parameter) that is a
 * copy kernel per call, though the GEMM's library takes strides: ATen's mm/addmm/bmm pass a
 * transposed operand to BLAS as a transpose flag, cuBLASLt and the GPU GEMM templates read
 * the operand's strides. Such an operand is instead a buffer of input kind on the same
 * input, with the view's strides (the base's strides permuted): no kernel, no copy.
 *
 * Only GEMM externs (their handlers take any strides), or any extern where the permutations
 * undo each other (the operand is the input, strides and all), only permutations (chains of them),
 * only graph inputs as the base, or a reshape of a row-major graph input (a view of it with
 * row-major strides; also without a permutation: a linear's saved input x.reshape(-1, D) in
 * its weight's gradient, and the LM head's grad_logits.reshape(-1, V).t(), a copy of B*L*V
 * elements before), as their memory lives for the whole run (an intermediate base
 * would need its workspace slot kept until the extern, see buffers.c), never a graph output
 * (outputs are written to their own buffers), static shapes only.
 *
 * Measured: the expRNN step's compiled backward (benchmarks/manifolds) copied B and hᵀ at
 * every one of its 784 steps before each of its two GEMMs. */
#include "ic_internal.h"

static bool gemm_operand(int kind, int i) {
    switch (kind) {
    case IC_EXT_MM:
    case IC_EXT_BMM:
    case IC_EXT_MATMUL:
    case IC_EXT_LINEAR: return i == 0 || i == 1;
    case IC_EXT_ADDMM:
    case IC_EXT_BADDBMM: return i == 1 || i == 2;
    default: return false;
    }
}

/* row-major: strides as ic_contiguous_strides gives them (dims of size 1 aside) */
static bool dense(const ic_meta *m) {
    int64_t e = 1;
    for (int i = m->ndim - 1; i >= 0; i--) {
        if (m->sizes[i] == 1) continue;
        if (m->strides[i] != e) return false;
        e *= m->sizes[i];
    }
    return true;
}

bool ic_extern_operand_alias(const ic_ctx *c, ic_val ext, int i, int *input_index, ic_meta *view) {
    const ic_graph *g = c->g;
    if (c->dyn || ext < 0 || ext >= g->n) return false;
    const ic_node *e = &g->nodes[ext];
    if (e->op != IC_OP_EXTERN || i < 0 || i >= IC_NIN || e->in[i] < 0) return false;
    const bool gemm = gemm_operand(e->ext_kind, i);
    ic_val u = e->in[i];
    if (g->nodes[u].op != IC_OP_PERMUTE && g->nodes[u].op != IC_OP_RESHAPE) return false;
    for (int k = 0; k < g->noutputs; k++)
        if (g->outputs[k] == u) return false;
    /* the chain of permutations down to its base; the view's dim d is the base's dim p[d] */
    int p[IC_MAX_DIMS];
    const int nd = g->nodes[u].meta.ndim;
    for (int d = 0; d < nd; d++) p[d] = d;
    ic_val b = u;
    while (g->nodes[b].op == IC_OP_PERMUTE) {
        const ic_node *n = &g->nodes[b];
        if (n->meta.ndim != nd || n->meta.dyn) return false;
        for (int d = 0; d < nd; d++) {
            if (n->perm[p[d]] < 0 || n->perm[p[d]] >= nd) return false;
            p[d] = n->perm[p[d]];
        }
        b = n->in[0];
        if (b < 0) return false;
    }
    bool ident = true; /* permutations that undo each other: the input itself, for any extern
                        * (autograd.c cl_input's NCHW -> NHWC -> NCHW of a channels-last input) */
    for (int d = 0; d < nd; d++) ident &= p[d] == d;
    if (!gemm && !(ident && g->nodes[b].op == IC_OP_INPUT && u != b)) return false;
    const ic_node *bn = &g->nodes[b];
    ic_meta bm = bn->meta; /* the base's sizes and strides */
    if (bn->op == IC_OP_RESHAPE && bn->in[0] >= 0 && g->nodes[bn->in[0]].op == IC_OP_INPUT &&
        !g->nodes[bn->in[0]].meta.dyn && dense(&g->nodes[bn->in[0]].meta)) {
        /* a reshape of a row-major input is a view of it with row-major strides (the
         * backward's grad_logits.reshape(-1, V).t() of an LM head) */
        b = bn->in[0];
        ic_contiguous_strides(&bm);
        bn = &g->nodes[b];
    }
    if (bn->op != IC_OP_INPUT || bm.ndim != nd || bm.dyn || bm.dtype != g->nodes[u].meta.dtype)
        return false;
    int idx = -1;
    for (int k = 0; k < g->ninputs; k++)
        if (g->inputs[k] == b) idx = k;
    if (idx < 0) return false;
    ic_meta m = bm;
    for (int d = 0; d < nd; d++) {
        m.sizes[d] = bm.sizes[p[d]];
        m.strides[d] = bm.strides[p[d]];
        if (m.sizes[d] != g->nodes[u].meta.sizes[d]) return false;
    }
    if (input_index) *input_index = idx;
    if (view) *view = m;
    return true;
}
