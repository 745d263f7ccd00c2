/* ag.h — the state of one backward derivation (graph/autograd.c, the driver), shared with
 * the files of backward rules (graph/vjp_ops.c, graph/vjp_extern.c; their one table is
 * graph/vjp.h), torch.autograd.Function templates (graph/custom_fn.c) and what requires
 * and what saves a gradient (graph/requires_grad.c). Private to graph/: include it last
 * (it defines the short macros X, OUT, NEED, ACC, RULE and NODE the rules are written in). */
#ifndef IC_AG_H
#define IC_AG_H

#include <stdarg.h>
#include <stdio.h>

#include "../ic_internal.h"
#include "vjp.h"

#define AG_CAME_MEMO 4096

typedef struct ag {
    ic_graph *f;           /* forward (saved values appended as outputs) */
    ic_graph *b;           /* backward */
    ic_val *fmap;          /* forward value -> its backward value (read or rebuilt), -1 */
    ic_val *grad;          /* forward value -> its gradient in b, -1 */
    unsigned char *need;   /* forward value carries a gradient */
    unsigned char *save;   /* partitioner: read from memory (1) or rebuilt (0) */
    unsigned char *want;   /* probe pass: the rules read forward value v */
    bool probe;            /* first pass: every forward value read is a placeholder input */
    const unsigned char *req;
    ic_autograd *out;
    int incap, outcap;
    /* which program outputs' gradients each gradient reads (bit sets of nw words): eager runs
     * no backward of a node none of whose outputs got a gradient, so where a contribution
     * reading other outputs' gradients than the sum it joins, it is added only if one of its
     * outputs' gradients came (a runtime flag per output; an output with no gradient is read
     * as zeros, and a zero times an infinite local derivative, sqrt's at 0, is NaN) */
    size_t nw;
    uint64_t *dep;         /* forward value -> the outputs its gradient reads (n x nw) */
    uint64_t *cur;         /* the rule running: the outputs its gradient reads (nw) */
    ic_val *flag;          /* program output -> backward input "its gradient came", -1 */
    /* came()'s ORs of flags made so far (a ring of AG_CAME_MEMO sets of nw words and their
     * values): a set is built from the largest one made before that it contains, so the
     * nested sets of a recurrence (h_t's outputs: y_t and h_{t+1}'s) cost one OR each, not
     * one per output (quadratic in the steps of an unrolled loop) */
    uint64_t *came_set;
    ic_val *came_val;
    int ncame;             /* sets made (the ring holds the last AG_CAME_MEMO) */
    int capcame;           /* slots allocated (grown up to AG_CAME_MEMO) */
    bool failed;
    char msg[200];
} ag;

/* a torch.autograd.Function's backward template (graph/custom_fn.c) */
typedef struct ic_custom {
    ic_node *nodes;  /* the template: operands < base are forward values, >= base template values */
    int n, base;
    int nout, nin;
    ic_val *out;     /* per output: its ic_custom_output value, or -1 (not differentiable) */
    ic_val *ph;      /* per output: the placeholder of its gradient (a template value) */
    ic_val *in;      /* forward values the function's gradients go to */
    ic_val *gin;     /* per in: its gradient (template value, forward value, or -1) */
    ic_val first;    /* the lowest out[]: derive() runs the template there */
} ic_custom;

/* graph/autograd.c */
void ag_fail(ag *a, const char *fmt, ...) __attribute__((format(printf, 2, 3), visibility("hidden")));
ic_val ag_fwd(ag *a, ic_val v) __attribute__((visibility("hidden")));
void ag_acc(ag *a, ic_val v, ic_val c) __attribute__((visibility("hidden")));
/* graph/custom_fn.c */
const ic_custom *custom_at(const ic_graph *g, ic_val v) __attribute__((visibility("hidden")));
void custom_vjp(ag *a, const ic_custom *c) __attribute__((visibility("hidden")));
/* graph/requires_grad.c */
bool node_nograd(const ic_graph *g, ic_val v) __attribute__((visibility("hidden")));
void compute_need(const ic_graph *g, const unsigned char *req, unsigned char *need, int upto)
    __attribute__((visibility("hidden")));
int saved_by(const ic_graph *g, const unsigned char *need, ic_val v, bool precise, int upto)
    __attribute__((visibility("hidden")));
bool normed(const ic_graph *g, ic_val v, int depth) __attribute__((visibility("hidden")));

static inline const ic_node *FN(ag *a, ic_val v) { return &a->f->nodes[v]; }
static inline const ic_meta *BM(ag *a, ic_val v) {
    static const ic_meta none = {0};
    const ic_meta *m = ic_value_meta(a->b, v);
    return m ? m : &none;
}

/* ---- small builders on the backward graph ---------------------------------------------- */
static inline ic_val num(ag *a, double x) { return ic_scalar(a->b, x, IC_F64); }
static inline ic_val un(ag *a, ic_op op, ic_val x) { return ic_unary(a->b, op, x); }
static inline ic_val bin(ag *a, ic_op op, ic_val x, ic_val y) { return ic_binary(a->b, op, x, y); }
static inline ic_val mul(ag *a, ic_val x, ic_val y) { return bin(a, IC_OP_MUL, x, y); }
static inline ic_val mulk(ag *a, ic_val x, double k) { return k == 1.0 ? x : mul(a, x, num(a, k)); }

static inline ic_val zeros(ag *a, ic_dtype t, int ndim, const int64_t *sizes) {
    ic_val z = ic_cast(a->b, num(a, 0.0), t);
    return ndim ? ic_expand(a->b, z, ndim, sizes) : z;
}

/* swaps the last two dims */
static inline ic_val transpose(ag *a, ic_val x) {
    int nd = BM(a, x)->ndim, p[IC_MAX_DIMS];
    if (nd < 2) return x;
    for (int i = 0; i < nd; i++) p[i] = i;
    p[nd - 2] = nd - 1;
    p[nd - 1] = nd - 2;
    return ic_permute_fold(a->b, x, p);
}

static inline ic_val ext(ag *a, ic_extern_kind k, int nin, const ic_val *in, int np, const int64_t *p) {
    return ic_extern(a->b, k, nin, in, np, p, 1.0, 1.0);
}

/* a graph builder's failure (the first one is kept) */
static inline ic_val gfail(ic_graph *g, const char *msg) {
    if (g->err == IC_OK) {
        g->err = IC_EINVALID;
        snprintf(g->msg, sizeof g->msg, "%s", msg);
    }
    return IC_NONE;
}

/* ---- the language of the rules ------------------------------------------------------------ */
#define X(k) ag_fwd(a, n->in[k])
#define OUT ag_fwd(a, v)
#define NEED(k) (n->in[k] >= 0 && a->need[n->in[k]])
#define ACC(k, expr)                    \
    do {                                \
        if (NEED(k)) ag_acc(a, n->in[k], (expr)); \
    } while (0)

/* ---- rules (the table is graph/vjp.h) ----------------------------------------------------- */
typedef void (*vjp_rule)(ag *a, ic_val v, ic_val g);
#define RULE(name) void name(ag *a, ic_val v, ic_val g)
#define NODE const ic_node *n = FN(a, v)
#define IC_VJP_DECL(name, fn) RULE(fn) __attribute__((visibility("hidden")));
IC_VJP_OPS(IC_VJP_DECL)
IC_VJP_EXTERNS(IC_VJP_DECL)
#undef IC_VJP_DECL

#endif
