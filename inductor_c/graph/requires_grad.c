/* requires_grad.c — stop-gradient marks (no_grad regions, detach, leaves) and what requires
 * and what saves a gradient: need[] for the derivation (graph/autograd.c) and what eager's
 * autograd keeps, whose versions are checked at backward. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "ag.h"

/* ---- stop-gradient marks ---------------------------------------------------------------- */
IC_API void ic_set_grad_enabled(ic_graph *g, int on) {
    if (!on) {
        if (g->nograd_depth++ == 0) g->nograd_from = g->n;
        return;
    }
    if (g->nograd_depth <= 0) return;
    if (--g->nograd_depth == 0) {
        for (int v = g->nograd_from; v < g->n; v++) g->nodes[v].nograd = 1;
        ic_rg_forget(g, g->nograd_from); /* (the same answers: those values needed none while open) */
    }
}

IC_API void ic_set_recompute(ic_graph *g, int on) {
    if (on) {
        if (g->recompute_depth++ == 0) g->recompute_from = g->n;
        return;
    }
    if (g->recompute_depth <= 0) return;
    if (--g->recompute_depth == 0) {
        unsigned short id = (unsigned short)(1 + g->nregions++ % 65535);
        for (int v = g->recompute_from; v < g->n; v++)
            if (g->nodes[v].op != IC_OP_INPUT && g->nodes[v].op != IC_OP_SCALAR) g->nodes[v].recompute = id;
    }
}

IC_API void ic_set_checkpoint_policy(ic_graph *g, ic_val v, int save) {
    if (v < 0 || v >= g->n || g->nodes[v].sac) return;
    g->nodes[v].sac = save ? 1 : 2;
}

IC_API int ic_value_checkpoint_policy(const ic_graph *g, ic_val v) {
    if (v < 0 || v >= g->n || !g->nodes[v].sac) return -1;
    return g->nodes[v].sac == 1;
}

IC_API int ic_value_extern_kind(const ic_graph *g, ic_val v) {
    if (v < 0 || v >= g->n || g->nodes[v].op != IC_OP_EXTERN) return -1;
    return g->nodes[v].ext_kind;
}

IC_API ic_val ic_detach(ic_graph *g, ic_val v) {
    if (g->err) return IC_NONE;
    const ic_meta *m = ic_value_meta(g, v);
    if (m == NULL) return ic_cast(g, v, IC_F32); /* the builder reports the bad handle */
    /* every node the cast makes: of a channels-last value it is permute(cast(NHWC value))
     * (graph.c cl_rewrite), and an elementwise op on it reads the inner cast, not the permute */
    int first = g->n;
    ic_val r = ic_cast(g, v, m->dtype);
    if (r >= 0) {
        for (int u = first; u < g->n; u++) g->nodes[u].nograd = 1;
        ic_rg_forget(g, first);
    }
    return r;
}

IC_API ic_val ic_grad_leaf(ic_graph *g, ic_val v) {
    ic_val r = ic_detach(g, v);
    if (r >= 0) {
        g->nodes[r].leaf = 1;
        ic_rg_forget(g, r);
    }
    return r;
}

IC_API int ic_value_is_grad_leaf(const ic_graph *g, ic_val v) {
    return v >= 0 && v < g->n && g->nodes[v].leaf;
}

bool node_nograd(const ic_graph *g, ic_val v) {
    return g->nodes[v].nograd || (g->nograd_depth > 0 && v >= g->nograd_from);
}

/* need[v] for v in [from, upto), those before it computed: carries a gradient from an input
 * with req; an autograd.Function's outputs (built from its forward with grad off) where one
 * of its inputs does (its outputs come after its inputs: one pass in order) */
static uint64_t need_steps; /* values need_range has walked (a test hook: ic_test_need_steps) */

IC_API uint64_t ic_test_need_steps(void) { return __atomic_load_n(&need_steps, __ATOMIC_RELAXED); }

static void need_range(const ic_graph *g, const unsigned char *req, unsigned char *need, int from, int upto) {
    if (upto > from) __atomic_fetch_add(&need_steps, (uint64_t)(upto - from), __ATOMIC_RELAXED);
    for (ic_val v = from; v < upto; v++) {
        const ic_node *n = &g->nodes[v];
        need[v] = 0;
        if (!ic_is_float(n->meta.dtype) && !ic_dtype_is_complex(n->meta.dtype)) continue; /* complex: its
            gradient is not captured (the capture refuses it), but it is one (ops_complex.c) */
        if (n->op == IC_OP_INPUT) {
            need[v] = (req[n->index] & IC_AG_REQ) != 0;
            continue;
        }
        if (n->leaf) { /* ic_grad_leaf: requires grad, passes none */
            need[v] = 1;
            continue;
        }
        if (node_nograd(g, v)) continue;
        bool nd = false;
        for (int k = 0; k < IC_NIN && !nd; k++)
            if (n->in[k] >= 0 && need[n->in[k]]) nd = true;
        for (int i = 0; i < g->ncustom && !nd && ic_is_float(n->meta.dtype); i++) {
            const ic_custom *c = &g->custom[i];
            for (int k = 0; k < c->nout && !nd; k++)
                if (c->out[k] == v)
                    for (int j = 0; j < c->nin && !nd; j++) nd = need[c->in[j]] != 0;
        }
        need[v] = nd;
    }
}

void compute_need(const ic_graph *g, const unsigned char *req, unsigned char *need, int upto) {
    need_range(g, req, need, 0, upto);
}

/* ic_value_requires_grad's memo: need[] of the values [0, n) under req (its inputs [0, nin),
 * their IC_AG_REQ bit) with ncustom autograd.Functions. The trace asks at almost every op
 * (dynamo_hook sym_value_requires_grad); computed afresh each time, the whole graph so far
 * was walked per question: quadratic in a trace's length (glm5_next_text's training capture:
 * compute_need was the hottest function of the compiled step). Values only come after those
 * computed; what changes a computed one (a removed node, a stop-gradient mark, a Function's
 * outputs, an input's req) drops the memo from there (ic_rg_forget). */
typedef struct ic_rgmemo {
    unsigned char *need, *req;
    int n, cap, nin, icap, ncustom;
} ic_rgmemo;

void ic_rg_forget(ic_graph *g, int from) {
    if (g->rg && g->rg->n > from) g->rg->n = from > 0 ? from : 0;
}

void ic_rg_free(ic_graph *g) {
    if (!g->rg) return;
    free(g->rg->need);
    free(g->rg->req);
    free(g->rg);
    g->rg = NULL;
}

static bool grow_bytes(unsigned char **p, int *cap, int need) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    unsigned char *q = realloc(*p, (size_t)nc);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

/* need[] of g's values [0, upto) under req, from the memo (grown as needed); NULL: out of memory */
static const unsigned char *memo_need(ic_graph *g, const unsigned char *req, int upto) {
    ic_rgmemo *m = g->rg;
    if (!m && !(m = g->rg = calloc(1, sizeof *m))) return NULL;
    if (m->ncustom != g->ncustom) { /* (ic_custom_capture forgets from its outputs) */
        m->ncustom = g->ncustom;
        m->n = 0;
    }
    if (m->n > g->n) m->n = g->n;
    for (int i = 0; i < g->ninputs && m->n > 0; i++) {
        bool was = i < m->nin ? (m->req[i] & IC_AG_REQ) != 0 : false, now = (req[i] & IC_AG_REQ) != 0;
        if (was != now || i >= m->nin) ic_rg_forget(g, g->inputs[i]);
    }
    if (!grow_bytes(&m->req, &m->icap, g->ninputs + 1) || !grow_bytes(&m->need, &m->cap, upto + 1)) {
        ic_rg_free(g);
        return NULL;
    }
    for (int i = 0; i < g->ninputs; i++) m->req[i] = req[i] & IC_AG_REQ;
    m->nin = g->ninputs;
    if (upto > m->n) {
        need_range(g, req, m->need, m->n, upto);
        m->n = upto;
    }
    return m->need;
}

/* ---- what eager's autograd keeps (its version is checked at backward) ------------------------
 * Eager saves an operand for the derivative of another operand that requires grad
 * (derivatives.yaml: mul saves other for self's gradient, mm saves mat2 for self's), and some
 * nodes save their result (exp, tanh, sigmoid, relu, sqrt: the gradient is built from it).
 * An in-place update of a saved tensor before the backward makes eager's backward raise
 * ("one of the variables needed for gradient computation has been modified by an inplace
 * operation"). precise: only what eager is known to save (a missed tensor leaves eager's
 * error out; a wrong one would raise where eager does not); else conservative: any operand
 * a derivative may read (an update then leaves the graph to eager, which decides). */
static bool op_saves_input(ic_op op) {
    switch (op) {
    case IC_OP_SIN: case IC_OP_COS: case IC_OP_TAN: case IC_OP_LOG: case IC_OP_LOG1P:
    case IC_OP_LOG2: case IC_OP_ATAN: case IC_OP_ERF: case IC_OP_GELU: case IC_OP_GELU_TANH:
    case IC_OP_SILU: case IC_OP_ABS: case IC_OP_MAXIMUM: case IC_OP_MINIMUM:
    case IC_OP_ASIN: case IC_OP_ACOS: case IC_OP_ASINH: case IC_OP_ACOSH: case IC_OP_ATANH:
        return true;
    default:
        return false;
    }
}

static bool op_saves_result(ic_op op) {
    switch (op) {
    case IC_OP_EXP: case IC_OP_EXP2: case IC_OP_EXPM1: case IC_OP_TANH: case IC_OP_SIGMOID:
    case IC_OP_RELU: case IC_OP_SQRT: case IC_OP_RSQRT: case IC_OP_RECIPROCAL:
        return true;
    default:
        return false;
    }
}

/* operands of a node that pass no gradient and that no derivative reads */
static bool op_saves_nothing(const ic_node *n) {
    switch (n->op) {
    case IC_OP_ADD: case IC_OP_SUB: case IC_OP_NEG: case IC_OP_CAST: case IC_OP_RESHAPE:
    case IC_OP_PERMUTE: case IC_OP_EXPAND: case IC_OP_SLICE: case IC_OP_CAT: case IC_OP_SUM:
    case IC_OP_MEAN: case IC_OP_FLOOR: case IC_OP_CEIL: case IC_OP_ROUND: case IC_OP_TRUNC:
    case IC_OP_SIGN:
        return true;
    default:
        return false;
    }
}

static bool needs(const ic_graph *g, const unsigned char *need, ic_val v) {
    return v >= 0 && g->nodes[v].op != IC_OP_SCALAR && need[v];
}

/* node u (carrying a gradient) keeps its operand k */
static bool keeps_operand(const ic_graph *g, const unsigned char *need, ic_val u, int k, bool precise) {
    const ic_node *n = &g->nodes[u];
    ic_val x = n->in[k];
    if (n->op == IC_OP_INDEX_SELECT && k == 0) return false; /* only the index */
    if (n->op == IC_OP_WHERE) return false; /* only the condition (not a float: saved_by's first rule) */
    if (n->op == IC_OP_MUL) { /* saved for the other operand's gradient */
        ic_val o = n->in[1 - k];
        return o == x || needs(g, need, o);
    }
    if (n->op == IC_OP_DIV) return k == 1 ? needs(g, need, n->in[0]) || needs(g, need, n->in[1]) : needs(g, need, n->in[1]);
    if (n->op == IC_OP_POW) return k == 0 || needs(g, need, n->in[1]);
    if (n->op == IC_OP_EXTERN) {
        int a = -1, b = -1; /* the matmul operands: each kept for the other's gradient */
        switch (n->ext_kind) {
        case IC_EXT_MM: case IC_EXT_BMM: case IC_EXT_MATMUL: case IC_EXT_LINEAR: a = 0, b = 1; break;
        case IC_EXT_ADDMM: case IC_EXT_BADDBMM: a = 1, b = 2; break;
        case IC_EXT_CONV: return k <= 1;
        case IC_EXT_SDPA: return k <= 2;
        default: return !precise;
        }
        if (k == a) return needs(g, need, n->in[b]);
        if (k == b) return needs(g, need, n->in[a]);
        return false;
    }
    if (op_saves_input(n->op)) return true;
    return !precise && !op_saves_nothing(n);
}

int saved_by(const ic_graph *g, const unsigned char *need, ic_val v, bool precise, int upto) {
    if (v < 0 || v >= upto) return 0;
    if (!ic_is_float(g->nodes[v].meta.dtype)) { /* an index or mask: kept by what reads it for a gradient */
        for (ic_val u = v + 1; u < upto; u++)
            if (need[u] && !node_nograd(g, u))
                for (int k = 0; k < IC_NIN; k++)
                    if (g->nodes[u].in[k] == v) return 1;
        return 0;
    }
    if (need[v] && g->nodes[v].op != IC_OP_INPUT && op_saves_result(g->nodes[v].op) && !node_nograd(g, v)) return 1;
    /* a torch.autograd.Function's backward (its template) reads v: what its forward saved
     * (ctx.save_for_backward), kept by eager's node when one of its outputs needs a gradient */
    for (int i = 0; i < g->ncustom; i++) {
        const ic_custom *c = &g->custom[i];
        if (v >= c->base) continue; /* (template operands >= base are the template's own values) */
        bool live = false;
        for (int k = 0; k < c->nout && !live; k++) live = c->out[k] >= 0 && c->out[k] < upto && need[c->out[k]];
        for (int j = 0; live && j < c->n; j++)
            for (int k = 0; k < IC_NIN; k++)
                if (c->nodes[j].op != IC_OP_INPUT && c->nodes[j].in[k] == v) return 1;
    }
    for (ic_val u = v + 1; u < upto; u++) {
        if (!need[u] || node_nograd(g, u)) continue;
        for (int k = 0; k < IC_NIN; k++)
            if (g->nodes[u].in[k] == v && keeps_operand(g, need, u, k, precise)) return 1;
    }
    return 0;
}

/* v feeds a mean, directly or through a shift (x - x[..., :1]) or a cast: the statistics of
 * a layer, batch or group norm, whose eager kernels keep their input when a gradient passes
 * (the graph's decomposition cannot say; the backward reads v only if one does) */
bool normed(const ic_graph *g, ic_val v, int depth) {
    for (ic_val u = v + 1; u < g->n; u++) {
        const ic_node *n = &g->nodes[u];
        if (n->in[0] != v && n->in[1] != v) continue;
        if (n->op == IC_OP_MEAN) return true;
        if (depth > 0 && (n->op == IC_OP_SUB || n->op == IC_OP_CAST) && normed(g, u, depth - 1)) return true;
    }
    return false;
}

IC_API int ic_value_saved_for_backward(const ic_graph *g, ic_val v, const unsigned char *req, int precise, int upto) {
    if (upto < 0 || upto > g->n) upto = g->n;
    if (v < 0 || v >= upto) return 0;
    const unsigned char *need = memo_need((ic_graph *)g, req, g->n); /* (the memo only: g's nodes unchanged) */
    return need ? saved_by(g, need, v, precise != 0, upto) : 0;
}

IC_API ic_val ic_graph_output_value(const ic_graph *g, int j) {
    return j >= 0 && j < g->noutputs ? g->outputs[j] : IC_NONE;
}

IC_API int ic_value_requires_grad(const ic_graph *g, ic_val v, const unsigned char *req) {
    if (v < 0 || v >= g->n) return 0;
    const unsigned char *need = memo_need((ic_graph *)g, req, v + 1); /* (the memo only: g's nodes unchanged) */
    return need ? need[v] : 0;
}

/* Whether the gradients of g's outputs [0, nout) are torch's rules over its ops, given the
 * stop-gradient marks among the nodes they read: -1 if not (a leaf made in the graph, a custom
 * autograd.Function in g), else the number of those marked nodes, listed in *nograd (malloc'd,
 * the caller frees; NULL if none). An eager run of g's ops with autograd that detaches those
 * values (torchc/_autograd.py, double backward) differentiates as the captured program did. */
IC_API int ic_graph_grad_plain(const ic_graph *g, int nout, ic_val **nograd) {
    *nograd = NULL;
    if (g == NULL || g->ncustom > 0 || g->nograd_depth > 0 || nout > g->noutputs) return -1;
    unsigned char *read = calloc((size_t)g->n + 1, 1);
    ic_val *ids = malloc(((size_t)g->n + 1) * sizeof *ids);
    if (read == NULL || ids == NULL) {
        free(read);
        free(ids);
        return -1;
    }
    for (int j = 0; j < nout; j++)
        if (g->outputs[j] >= 0 && g->outputs[j] < g->n) read[g->outputs[j]] = 1;
    int n = 0;
    for (int v = g->n - 1; v >= 0 && n >= 0; v--) {
        if (!read[v]) continue;
        if (g->nodes[v].leaf) {
            n = -1;
            break;
        }
        if (g->nodes[v].nograd) {
            ids[n++] = v;
            continue; /* what it reads passes no gradient through it */
        }
        for (int k = 0; k < IC_NIN; k++)
            if (g->nodes[v].in[k] >= 0 && g->nodes[v].in[k] < v) read[g->nodes[v].in[k]] = 1;
    }
    free(read);
    if (n > 0)
        *nograd = ids;
    else
        free(ids);
    return n;
}
