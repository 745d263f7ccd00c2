/* partition.c — which forward values the backward graph reads from memory (saved by the
 * forward graph as extra outputs) and which it recomputes from those: a minimum cut over
 * bytes (the min-cut rematerialization of AOTAutograd's partitioner, on this IR).
 *
 * Contract: reads the forward graph and want[v] (the backward rules read forward value v:
 * found by a first derivation pass, graph/autograd.c); fills save[v] for every node. A
 * value marked 0 is rebuilt in the backward graph from its operands (recursively, see
 * autograd.c rebuild); a value marked 1 is read as a backward input. Keeps the graph.
 *
 * The flow network: each forward value v is an edge v_in -> v_out whose capacity is the
 * bytes that saving v costs; each operand edge u -> v is u_out -> v_in (infinite). The
 * source feeds (infinitely) every value the backward cannot or must not recompute:
 *  - graph inputs (read directly; they are alive anyway, so their capacity is 0 — but an
 *    input updated in place is overwritten after the forward: saving it costs its bytes,
 *    and the cut may lie after it, at what the backward needs of it);
 *  - externs (matmul, conv, attention, gather/scatter, scans, the dropout mask: RNG is
 *    drawn once, in the forward), reductions (they read their whole input) and any op the
 *    backward cannot rebuild;
 *  - a cheap value whose recomputation would read more than RECOMPUTE_MAX_LEAVES
 *    distinct banned values (a residual stream h = x + a1 + m1 + a2 + ... would otherwise
 *    be rebuilt from every layer's outputs in every layer's backward: quadratic traffic).
 * Values made inside an activation-checkpoint region (node->recompute: ic_set_recompute)
 * are recomputed where they can be: reductions and the matmul, conv and attention externs
 * become rebuildable too, the leaves limit does not apply, and saving one costs as much as
 * the cut can avoid (the program's outputs still cost 0), so the cut lies at what the
 * region reads, as eager's checkpoint saves only its inputs. A region's value read outside
 * it (by an op of no region or of another one: consecutive checkpointed blocks) is banned
 * instead: the forward computes it, and it is saved where the backward reads it, as eager
 * keeps it (the next region's input, the operand of an op outside); recomputing it would
 * recompute every earlier region in each region's backward (torch.compile's partitioner
 * makes such values must-save too, cleanup_recompute_tags). Random draws in a region stay
 * banned: the mask is saved, the same values eager's recompute draws again from the
 * generator state it restored. (torch.compile's partitioner recomputes such values too:
 * its checkpoint tags, honoured by its min cut.) A value a selective-checkpoint policy saves
 * (node->sac 1: ic_set_checkpoint_policy) is banned as well: the forward computes it, the
 * backward reads it (or what it needs of it) saved, and the region's values after it are
 * recomputed from it, as eager's SAC caches the op's output for its recompute.
 * Every wanted value feeds the sink. A minimum cut separates the two at the least number of
 * saved bytes: its edges v_in -> v_out are the saved values; everything between the cut and
 * the wanted values is recomputed. The program's own outputs cost 0 (they are returned
 * anyway). Scalars and aranges have no operands: they are never fed, always rebuilt.
 *
 * Max flow by Dinic's algorithm (BFS levels, DFS blocking flows with current-arc pointers,
 * iterative: graphs of 10^5 nodes must not overflow the C stack).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"
#include "vjp.h"

#define RECOMPUTE_MAX_LEAVES 4
#define INF (INT64_MAX / 4)
#define RECOMPUTE_COST (INF / 4096) /* saving a value of a checkpoint region: finite, above any tensor */

/* ---- rebuildable ops (must match autograd.c rebuild) --------------------------------------- */
static bool rebuildable_plain(const ic_node *n);

/* the externs a checkpoint region recomputes: deterministic, no side effects */
static bool recompute_extern(int kind) {
    switch (kind) {
    case IC_EXT_MM:
    case IC_EXT_BMM:
    case IC_EXT_MATMUL:
    case IC_EXT_ADDMM:
    case IC_EXT_LINEAR:
    case IC_EXT_BADDBMM:
    case IC_EXT_CONV:
    case IC_EXT_SDPA:
        return true;
    default:
        return false;
    }
}

bool ic_part_rebuildable(const ic_node *n) {
    if (rebuildable_plain(n)) return true;
    if (!n->recompute) return false;
    if (ic_op_kind(n->op) == IC_K_REDUCE) return true;
    return n->op == IC_OP_EXTERN && recompute_extern(n->ext_kind);
}

/* n as the plan sees it, by mk (region_marks): banned where read outside its region */
static bool rebuildable_mk(const ic_node *n, unsigned char mk) {
    if (mk == 2) return false;
    if (rebuildable_plain(n)) return true;
    return mk == 1 && ic_part_rebuildable(n);
}

/* mk[v]: 1, v was made in a checkpoint region and only that region's values read it; 2, v
 * was made in one and is read outside it, or its region's policy saves it (banned); 0, neither */
static void region_marks(const ic_graph *f, unsigned char *mk) {
    for (ic_val v = 0; v < f->n; v++) mk[v] = f->nodes[v].recompute != 0 ? (f->nodes[v].sac == 1 ? 2 : 1) : 0;
    for (ic_val u = 0; u < f->n; u++)
        for (int k = 0; k < IC_NIN && f->nodes[u].in[k] >= 0; k++) {
            ic_val x = f->nodes[u].in[k];
            if (mk[x] && f->nodes[x].recompute != f->nodes[u].recompute) mk[x] = 2;
        }
}

static bool rebuildable_plain(const ic_node *n) {
    switch (n->op) {
    case IC_OP_WHERE:
    case IC_OP_CAST:
    case IC_OP_RESHAPE:
    case IC_OP_PERMUTE:
    case IC_OP_EXPAND:
    case IC_OP_SLICE:
    case IC_OP_CAT:
    case IC_OP_INDEX_SELECT:
    case IC_OP_ARANGE:
    case IC_OP_SCALAR:
        return true;
    default:
        return ic_op_kind(n->op) == IC_K_UNARY || ic_op_kind(n->op) == IC_K_BINARY;
    }
}

/* distinct banned values a value's recomputation reads */
typedef struct leafset {
    int n;
    ic_val v[RECOMPUTE_MAX_LEAVES + 1];
} leafset;

static void leaf_add(leafset *s, ic_val x) {
    for (int i = 0; i < s->n && i <= RECOMPUTE_MAX_LEAVES; i++)
        if (s->v[i] == x) return;
    if (s->n <= RECOMPUTE_MAX_LEAVES) s->v[s->n] = x;
    s->n++;
}

/* ban[v]: v must be computed by the forward (the cut lies at v or after it) */
static int plan_bans(const ic_graph *f, const unsigned char *mk, unsigned char *ban) {
    leafset *ls = calloc((size_t)f->n + 1, sizeof *ls);
    if (ls == NULL) return -1;
    for (ic_val v = 0; v < f->n; v++) {
        const ic_node *n = &f->nodes[v];
        ban[v] = 0;
        if (n->op == IC_OP_SCALAR || n->op == IC_OP_ARANGE) continue;
        if (n->op == IC_OP_INPUT || !rebuildable_mk(n, mk[v])) {
            ban[v] = 1;
            leaf_add(&ls[v], v);
            continue;
        }
        for (int k = 0; k < IC_NIN && ls[v].n <= RECOMPUTE_MAX_LEAVES; k++)
            if (n->in[k] >= 0)
                for (int i = 0; i < ls[n->in[k]].n && i <= RECOMPUTE_MAX_LEAVES; i++) {
                    ic_val x = ls[n->in[k]].v[i];
                    /* a graph input of at most 1/8 of v's elements (a bias, a per-row scale,
                     * broadcast) adds little traffic to v's recomputation: not counted (an RNN
                     * step's z = h B + x w + e; modReLU's |z| + b was saved beside z) */
                    if (f->nodes[x].op == IC_OP_INPUT && ic_numel(&f->nodes[x].meta) * 8 <= ic_numel(&n->meta))
                        continue;
                    leaf_add(&ls[v], x);
                }
        if (ls[v].n > RECOMPUTE_MAX_LEAVES && mk[v] != 1) {
            ban[v] = 1;
            ls[v].n = 0;
            leaf_add(&ls[v], v);
        }
    }
    free(ls);
    return 0;
}

/* ---- max flow ----------------------------------------------------------------------------- */
typedef struct edge {
    int to, next;
    int64_t cap;
} edge;

typedef struct net {
    int nv, ne, ecap;
    int *head, *level, *cur, *queue;
    edge *e;
} net;

static int add_edge(net *g, int u, int v, int64_t cap) {
    if (g->ne + 2 > g->ecap) {
        int nc = g->ecap ? 2 * g->ecap : 256;
        edge *e = realloc(g->e, sizeof *e * (size_t)nc);
        if (e == NULL) return -1;
        g->e = e;
        g->ecap = nc;
    }
    g->e[g->ne] = (edge){v, g->head[u], cap};
    g->head[u] = g->ne++;
    g->e[g->ne] = (edge){u, g->head[v], 0};
    g->head[v] = g->ne++;
    return 0;
}

static bool bfs(net *g, int s, int t) {
    for (int i = 0; i < g->nv; i++) g->level[i] = -1;
    int qh = 0, qt = 0;
    g->level[s] = 0;
    g->queue[qt++] = s;
    while (qh < qt) {
        int u = g->queue[qh++];
        for (int k = g->head[u]; k >= 0; k = g->e[k].next)
            if (g->e[k].cap > 0 && g->level[g->e[k].to] < 0) {
                g->level[g->e[k].to] = g->level[u] + 1;
                g->queue[qt++] = g->e[k].to;
            }
    }
    return g->level[t] >= 0;
}

/* one augmenting path along the level graph (iterative DFS, path kept in stack[]); the
 * amount pushed, 0 when the level graph is blocked */
static int64_t augment(net *g, int s, int t, int *stack) {
    int depth = 0, u = s;
    for (;;) {
        if (u == t) {
            int64_t f = INF;
            for (int i = 0; i < depth; i++)
                if (g->e[stack[i]].cap < f) f = g->e[stack[i]].cap;
            for (int i = 0; i < depth; i++) {
                g->e[stack[i]].cap -= f;
                g->e[stack[i] ^ 1].cap += f;
            }
            return f;
        }
        int k = g->cur[u];
        while (k >= 0 && !(g->e[k].cap > 0 && g->level[g->e[k].to] == g->level[u] + 1)) k = g->e[k].next;
        g->cur[u] = k;
        if (k >= 0) {
            stack[depth++] = k;
            u = g->e[k].to;
            continue;
        }
        /* dead end: retreat and skip the arc that led here */
        if (depth == 0) return 0;
        g->level[u] = -1;
        u = g->e[stack[--depth] ^ 1].to;
        g->cur[u] = g->e[g->cur[u]].next;
    }
}

static int64_t maxflow(net *g, int s, int t, int *stack) {
    int64_t total = 0;
    while (bfs(g, s, t)) {
        memcpy(g->cur, g->head, sizeof(int) * (size_t)g->nv);
        int64_t f;
        while ((f = augment(g, s, t, stack)) > 0) {
            total += f;
            if (total >= INF) return total; /* an uncuttable path: the caller checks */
        }
    }
    return total;
}

/* ---- the plan ----------------------------------------------------------------------------- */
static int64_t bytes_of(const ic_graph *f, ic_val v, const unsigned char *req, const unsigned char *mk) {
    const ic_meta *m = &f->nodes[v].meta;
    for (int j = 0; j < f->noutputs; j++)
        if (f->outputs[j] == v) return 0; /* returned anyway */
    if (f->nodes[v].op == IC_OP_INPUT && !(req[f->nodes[v].index] & IC_AG_OVERWRITTEN)) return 0;
    if (mk[v] == 1 && rebuildable_mk(&f->nodes[v], 1)) return RECOMPUTE_COST;
    return ic_numel(m) * (int64_t)ic_dtype_size(m->dtype) + 1; /* +1: fewer tensors on ties */
}

int ic_part_plan(const ic_graph *f, const unsigned char *want, const unsigned char *req, unsigned char *save) {
    int n = f->n, rc = -1;
    unsigned char *ban = calloc((size_t)n + 1, 1), *mk = calloc((size_t)n + 1, 1);
    net g = {.nv = 2 * n + 2};
    int *stack = NULL;
    int S = 2 * n, T = 2 * n + 1;
    g.head = malloc(sizeof(int) * (size_t)g.nv);
    g.level = malloc(sizeof(int) * (size_t)g.nv);
    g.cur = malloc(sizeof(int) * (size_t)g.nv);
    g.queue = malloc(sizeof(int) * (size_t)g.nv);
    stack = malloc(sizeof(int) * (size_t)(g.nv + 1));
    if (!ban || !mk || !g.head || !g.level || !g.cur || !g.queue || !stack) goto done;
    region_marks(f, mk);
    if (plan_bans(f, mk, ban) < 0) goto done;
    for (int i = 0; i < g.nv; i++) g.head[i] = -1;
    for (ic_val v = 0; v < n; v++) {
        const ic_node *nd = &f->nodes[v];
        save[v] = 0;
        if (nd->op == IC_OP_SCALAR) continue; /* rebuilt by ag_fwd itself */
        if (add_edge(&g, 2 * v, 2 * v + 1, bytes_of(f, v, req, mk)) < 0) goto done;
        if (ban[v] && add_edge(&g, S, 2 * v, INF) < 0) goto done;
        if (want[v] && add_edge(&g, 2 * v + 1, T, INF) < 0) goto done;
        if (nd->op == IC_OP_INPUT || !rebuildable_mk(nd, mk[v])) continue; /* its operands stay in the forward */
        for (int k = 0; k < IC_NIN; k++)
            if (nd->in[k] >= 0 && f->nodes[nd->in[k]].op != IC_OP_SCALAR &&
                add_edge(&g, 2 * nd->in[k] + 1, 2 * v, INF) < 0)
                goto done;
    }
    if (maxflow(&g, S, T, stack) >= INF) goto done; /* cannot happen: every source edge enters a cuttable edge */
    /* the cut: v_in reachable from S in the residual graph, v_out not */
    bfs(&g, S, S);
    for (ic_val v = 0; v < n; v++)
        if (f->nodes[v].op != IC_OP_SCALAR && g.level[2 * v] >= 0 && g.level[2 * v + 1] < 0) save[v] = 1;
    rc = 0;
done:
    free(ban);
    free(mk);
    free(g.head);
    free(g.level);
    free(g.cur);
    free(g.queue);
    free(g.e);
    free(stack);
    return rc;
}
