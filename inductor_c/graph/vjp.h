/* vjp.h — the one table of backward (vector-Jacobian product) rules, kept beside the op
 * table (ic_ops.h) and the extern table (ic.h IC_EXTERNS).
 *
 * X(NAME, rule): graph op IC_OP_NAME (IC_VJP_OPS) or extern kind IC_EXT_NAME
 * (IC_VJP_EXTERNS) is differentiated by `rule`, a function of graph/vjp_ops.c (ops) or
 * graph/vjp_extern.c (externs), declared from this table in graph/ag.h:
 *
 *   void rule(ag *a, ic_val v, ic_val g);
 *
 * v is the forward node, g its gradient (a value of the backward graph, v's shape and
 * dtype). The rule adds each operand's contribution with ag_acc (which sums it over the
 * operand's broadcast dims and casts it to the operand's dtype); forward values it needs
 * come from ag_fwd (saved by the forward graph or recomputed in the backward one, as the
 * partitioner decides: graph/partition.c). Rules are graph-level only: they build ic_*
 * nodes, the backward graph is compiled by the same ic_compile as any other graph.
 *
 * An op or extern absent from these tables has no rule: a training graph that needs one
 * is left to eager with the reason "no backward rule for <op>". Ops whose outputs are bool
 * or integer (comparisons, argmax, bitwise ops) never carry a gradient and need no rule;
 * ops with a zero derivative (floor, sign, ...) use vjp_zero. floor_divide has none on
 * purpose: eager raises "derivative for aten::floor_divide is not implemented".
 */
#ifndef IC_VJP_H
#define IC_VJP_H

#define IC_VJP_OPS(X)                                                       \
    /* binary pointwise (type promotion and broadcasting: ag_acc) */        \
    X(ADD, vjp_add)                                                         \
    X(SUB, vjp_sub)                                                         \
    X(MUL, vjp_mul)                                                         \
    X(DIV, vjp_div)                                                         \
    X(MAXIMUM, vjp_maxmin)                                                  \
    X(MINIMUM, vjp_maxmin)                                                  \
    X(POW, vjp_pow)                                                         \
    X(FMOD, vjp_fmod)                                                       \
    X(REMAINDER, vjp_fmod)                                                  \
    X(ATAN2, vjp_atan2)                                                     \
    /* unary pointwise */                                                   \
    X(NEG, vjp_unary)                                                       \
    X(ABS, vjp_unary)                                                       \
    X(EXP, vjp_unary)                                                       \
    X(LOG, vjp_unary)                                                       \
    X(SQRT, vjp_unary)                                                      \
    X(RSQRT, vjp_unary)                                                     \
    X(RECIPROCAL, vjp_unary)                                                \
    X(SIGMOID, vjp_unary)                                                   \
    X(TANH, vjp_unary)                                                      \
    X(RELU, vjp_unary)                                                      \
    X(GELU, vjp_unary)                                                      \
    X(GELU_TANH, vjp_unary)                                                 \
    X(SILU, vjp_unary)                                                      \
    X(SIN, vjp_unary)                                                       \
    X(COS, vjp_unary)                                                       \
    X(ERF, vjp_unary)                                                       \
    X(LOG1P, vjp_unary)                                                     \
    X(EXPM1, vjp_unary)                                                     \
    X(LOG2, vjp_unary)                                                      \
    X(EXP2, vjp_unary)                                                      \
    X(TAN, vjp_unary)                                                       \
    X(ATAN, vjp_unary)                                                      \
    X(ASIN, vjp_unary)                                                      \
    X(ACOS, vjp_unary)                                                      \
    X(ASINH, vjp_unary)                                                     \
    X(ACOSH, vjp_unary)                                                     \
    X(ATANH, vjp_unary)                                                     \
    X(FLOOR, vjp_zero)                                                      \
    X(CEIL, vjp_zero)                                                       \
    X(ROUND, vjp_zero)                                                      \
    X(TRUNC, vjp_zero)                                                      \
    X(SIGN, vjp_zero)                                                       \
    X(WHERE, vjp_where)                                                     \
    X(CAST, vjp_cast)                                                       \
    /* reductions */                                                        \
    X(SUM, vjp_sum)                                                         \
    X(MEAN, vjp_sum)                                                        \
    X(AMAX, vjp_amax)                                                       \
    X(AMIN, vjp_amax)                                                       \
    /* views and index maps */                                              \
    X(RESHAPE, vjp_reshape)                                                 \
    X(PERMUTE, vjp_permute)                                                 \
    X(EXPAND, vjp_expand)                                                   \
    X(SLICE, vjp_slice)                                                     \
    X(CAT, vjp_cat)                                                         \
    X(INDEX_SELECT, vjp_index_select)

#define IC_VJP_EXTERNS(X)                                                   \
    X(MM, vjp_mm)                                                           \
    X(BMM, vjp_mm)                                                          \
    X(ADDMM, vjp_mm)                                                        \
    X(BADDBMM, vjp_mm)                                                      \
    X(MATMUL, vjp_matmul)                                                   \
    X(LINEAR, vjp_linear)                                                   \
    X(CONV, vjp_conv)                                                       \
    X(SDPA, vjp_sdpa)                                                       \
    X(GATHER, vjp_gather)                                                   \
    X(SCATTER_ADD, vjp_scatter)                                             \
    X(SCATTER, vjp_scatter)                                                 \
    X(CUMSUM, vjp_cumsum)                                                   \
    X(MATRIX_EXP, vjp_matrix_exp)                                           \
    X(SOLVE, vjp_solve)                                                     \
    X(GRID_SAMPLE, vjp_grid_sample)                                         \
    X(CUSTOM, vjp_custom)

/* graph/partition.c: given want[v] (the backward rules read forward value v), save[v] = 1
 * for forward values the backward reads from memory, 0 for values it recomputes (every
 * node of f), by a minimum cut over bytes; req: ic_autograd_build's (an input with
 * IC_AG_OVERWRITTEN is not free to read: its value is saved, or what is built from it);
 * 0, or -1 out of memory */
int ic_part_plan(const ic_graph *f, const unsigned char *want, const unsigned char *req, unsigned char *save)
    __attribute__((visibility("hidden")));
/* graph/partition.c: the backward can rebuild n's value from its operands (autograd.c rebuild):
 * pointwise ops, views, cat, index_select, aranges; inside a checkpoint region (n->recompute)
 * also reductions and the matmul, conv and attention externs */
bool ic_part_rebuildable(const ic_node *n) __attribute__((visibility("hidden")));

#endif
