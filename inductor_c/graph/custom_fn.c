/* custom_fn.c — torch.autograd.Function in the training graph (part of graph/autograd.c's
 * derivation; the shared state is graph/ag.h).
 *
 * ---- torch.autograd.Function: the user's backward as a template -------------------------
 * dynamo_hook/autograd_fn.c traces the user's backward onto the forward graph right after
 * the function's outputs (ic_custom_output values), its incoming gradients placeholder
 * inputs; ic_custom_capture moves those nodes out into a template the graph keeps. derive()
 * copies the template into the backward graph where the gradients of the outputs are final
 * (custom_vjp): placeholders become the outputs' gradients (zeros where none reaches one:
 * torch materializes them), operands before `base` the forward values (saved or
 * recomputed as the partitioner decides), and the template's results are accumulated into
 * the function's inputs by ag_acc (summed over broadcast dims, cast: eager's
 * validate_outputs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "ag.h"

void ic_custom_free(ic_graph *g) {
    for (int i = 0; i < g->ncustom; i++) {
        ic_custom *c = &g->custom[i];
        free(c->nodes);
        free(c->out);
        free(c->ph);
        free(c->in);
        free(c->gin);
    }
    free(g->custom);
    g->custom = NULL;
    g->ncustom = 0;
}

IC_API int ic_graph_num_values(const ic_graph *g) { return g->n; }

IC_API ic_val ic_custom_output(ic_graph *g, ic_val y) {
    const ic_meta *m = ic_value_meta(g, y);
    if (g->err || m == NULL) return gfail(g, "ic_custom_output: bad value");
    if (m->dyn) return gfail(g, "ic_custom_output: symbolic sizes");
    return ic_reshape(g, y, m->ndim, m->sizes); /* a fresh value: its own gradient */
}

static ic_val *dup_vals(const ic_val *v, int n) {
    ic_val *r = malloc(sizeof *r * (size_t)(n + 1));
    if (r && n) memcpy(r, v, sizeof *r * (size_t)n);
    return r;
}

IC_API int ic_custom_capture(ic_graph *g, int base, int ninputs, int nout, const ic_val *out, const ic_val *ph, int nin,
                             const ic_val *in, const ic_val *gin) {
    if (g->err) return -1;
    int end = g->n;
    if (base < 0 || base > end || ninputs < 0 || ninputs > g->ninputs || nout < 1 || nin < 0 ||
        g->nograd_depth > 0)
        return gfail(g, "ic_custom_capture: bad arguments"), -1;
    for (int i = ninputs; i < g->ninputs; i++)
        if (g->inputs[i] < base) return gfail(g, "ic_custom_capture: an input before base"), -1;
    for (int i = 0; i < ninputs; i++)
        if (g->inputs[i] >= base) return gfail(g, "ic_custom_capture: the backward made a graph input"), -1;
    for (int j = 0; j < g->noutputs; j++)
        if (g->outputs[j] >= base) return gfail(g, "ic_custom_capture: an output in the template"), -1;
    ic_val first = -1;
    for (int k = 0; k < nout; k++) {
        bool okp = ph[k] >= base && ph[k] < end && g->nodes[ph[k]].op == IC_OP_INPUT;
        bool oko = out[k] < 0 || (out[k] < base && g->nodes[out[k]].op == IC_OP_RESHAPE);
        if (!okp || !oko) return gfail(g, "ic_custom_capture: bad output or placeholder"), -1;
        if (out[k] >= 0 && (first < 0 || out[k] < first)) first = out[k];
        for (int j = 0; j < k; j++)
            if (ph[j] == ph[k] || (out[k] >= 0 && out[j] == out[k]))
                return gfail(g, "ic_custom_capture: repeated output or placeholder"), -1;
    }
    for (int i = 0; i < nin; i++)
        if (in[i] < 0 || in[i] >= base || gin[i] >= end) return gfail(g, "ic_custom_capture: bad input or gradient"), -1;
    for (ic_val v = base; v < end; v++) { /* the only inputs in the template: placeholders */
        if (g->nodes[v].op != IC_OP_INPUT) continue;
        bool isph = false;
        for (int k = 0; k < nout; k++) isph |= ph[k] == v;
        if (!isph) return gfail(g, "ic_custom_capture: a graph input in the template"), -1;
    }
    if (first < 0) return gfail(g, "ic_custom_capture: no differentiable output"), -1;
    ic_custom *cs = realloc(g->custom, sizeof *cs * (size_t)(g->ncustom + 1));
    if (cs == NULL) return gfail(g, "out of memory"), -1;
    g->custom = cs;
    ic_custom c = {.n = end - base, .base = base, .nout = nout, .nin = nin, .first = first};
    c.nodes = malloc(sizeof(ic_node) * (size_t)(c.n + 1));
    c.out = dup_vals(out, nout);
    c.ph = dup_vals(ph, nout);
    c.in = dup_vals(in, nin);
    c.gin = dup_vals(gin, nin);
    if (!c.nodes || !c.out || !c.ph || !c.in || !c.gin) {
        free(c.nodes);
        free(c.out);
        free(c.ph);
        free(c.in);
        free(c.gin);
        return gfail(g, "out of memory"), -1;
    }
    if (c.n) memcpy(c.nodes, g->nodes + base, sizeof(ic_node) * (size_t)c.n);
    for (ic_val v = base; v < end; v++)
        if (g->nodes[v].op != IC_OP_INPUT && g->nodes[v].op != IC_OP_SCALAR) g->nops--;
    g->n = base;
    g->ninputs = ninputs;
    g->custom[g->ncustom++] = c;
    ic_rg_forget(g, first < base ? first : base); /* (its outputs now require grad with its inputs) */
    return 0;
}

IC_API void ic_custom_abort(ic_graph *g, int base, int ninputs) {
    if (base < 0 || base > g->n || ninputs < 0 || ninputs > g->ninputs) return;
    for (int i = 0; i < ninputs; i++)
        if (g->inputs[i] >= base) return; /* (never: the caller's inputs come first) */
    for (ic_val v = base; v < g->n; v++)
        if (g->nodes[v].op != IC_OP_INPUT && g->nodes[v].op != IC_OP_SCALAR) g->nops--;
    g->n = base;
    g->ninputs = ninputs;
    ic_rg_forget(g, base);
    if (g->nograd_depth > 0 && g->nograd_from > base) g->nograd_from = base;
    if (g->recompute_depth > 0 && g->recompute_from > base) g->recompute_from = base;
}

/* the record whose lowest output is v, or NULL */
const ic_custom *custom_at(const ic_graph *g, ic_val v) {
    for (int i = 0; i < g->ncustom; i++)
        if (g->custom[i].first == v) return &g->custom[i];
    return NULL;
}

/* the template, copied into the backward graph once the outputs' gradients are final */
void custom_vjp(ag *a, const ic_custom *c) {
    bool any = false, anyin = false;
    for (int k = 0; k < c->nout; k++) any |= c->out[k] >= 0 && a->grad[c->out[k]] >= 0;
    for (int i = 0; i < c->nin; i++) anyin |= a->need[c->in[i]] && c->gin[i] >= 0;
    if (!any || !anyin) return; /* eager calls no backward where no gradient flows */
    memset(a->cur, 0, sizeof *a->cur * a->nw);
    for (int k = 0; k < c->nout; k++)
        for (size_t w = 0; c->out[k] >= 0 && w < a->nw; w++) a->cur[w] |= a->dep[(size_t)c->out[k] * a->nw + w];
    ic_val *map = malloc(sizeof *map * (size_t)(c->n + 1));
    if (map == NULL) return ag_fail(a, "out of memory");
    for (int t = 0; t < c->n; t++) map[t] = -1;
    for (int k = 0; k < c->nout; k++) {
        const ic_meta *pm = &c->nodes[c->ph[k] - c->base].meta;
        ic_val gk = c->out[k] >= 0 ? a->grad[c->out[k]] : -1;
        if (gk < 0) gk = zeros(a, pm->dtype, pm->ndim, pm->sizes);
        else if (BM(a, gk)->dtype != pm->dtype) gk = ic_cast(a->b, gk, pm->dtype);
        map[c->ph[k] - c->base] = gk;
    }
    for (int t = 0; t < c->n && !a->failed; t++) {
        if (map[t] >= 0 || c->nodes[t].op == IC_OP_INPUT) continue;
        ic_node nd = c->nodes[t];
        for (int k = 0; k < IC_NIN; k++) {
            ic_val x = nd.in[k];
            if (x < 0) continue;
            nd.in[k] = x < c->base ? ag_fwd(a, x) : map[x - c->base];
            if (nd.in[k] < 0) ag_fail(a, "autograd.Function backward: operand %d of %s", k, ic_op_name(nd.op));
        }
        if (a->failed) break;
        nd.nograd = 0;
        map[t] = ic_graph_append_node(a->b, &nd);
        if (map[t] < 0) ag_fail(a, "autograd.Function backward: %s", ic_graph_error(a->b) ? ic_graph_error(a->b) : "copy failed");
    }
    for (int i = 0; i < c->nin && !a->failed; i++) {
        ic_val gv = c->gin[i];
        if (gv < 0 || !a->need[c->in[i]]) continue;
        ag_acc(a, c->in[i], gv < c->base ? ag_fwd(a, gv) : map[gv - c->base]);
    }
    free(map);
}
