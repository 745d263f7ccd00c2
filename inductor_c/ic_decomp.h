/* ic_decomp.h — decompositions of pooling, padding, interpolation index maps and depthwise
 * convolutions into graph ops (slices, cat, reshape, reduce, pointwise): no new node kinds,
 * so every backend runs them. Built by graph/decomp_pool.c from the public builders of ic.h;
 * dynamo_hook/ops_pool.c calls them after reading the Python arguments.
 *
 * Contract: ic_val results follow ic.h (IC_NONE with the graph in error when a builder
 * fails). Functions that check their parameters do it before building anything: a refused
 * call leaves the graph untouched and writes the reason into why (the caller may then run
 * the op eagerly and go on with the graph). */
#ifndef IC_DECOMP_H
#define IC_DECOMP_H

#include <stddef.h>
#include <stdint.h>

#include "ic.h"

/* x padded along dim by lo before and hi after (negative: cut) with the value fill */
ic_val ic_pad_const(ic_graph *g, ic_val x, int dim, int64_t lo, int64_t hi, double fill);

/* Window reduction over the last nd dims of x (nd + 1 or nd + 2 dims), op IC_OP_MAXIMUM
 * (padding -inf, float only), IC_OP_WHERE (the same max, its gradient to each window's
 * first maximum as eager's) or IC_OP_ADD (padding 0), kernel k, stride s, padding pad,
 * dilation dl, ceil mode as torch: strided slices combined pointwise (one fused kernel), or
 * one reduction over a [.., O0, k0, O1, k1] view for big non-overlapping windows. osz gets
 * the output sizes. Returns 0 (*res set), 1 refused (why, graph untouched) or -1 (a builder
 * failed: the graph is in error). */
int ic_pool_window(ic_graph *g, ic_val x, int nd, const int64_t *k, const int64_t *s, const int64_t *pad,
                   const int64_t *dl, int ceil, ic_op op, ic_val *res, int64_t *osz, char *why, size_t nwhy);

/* counts of in-window elements per output position along one dim (avg_pool's divisor) */
ic_val ic_pool_counts(ic_graph *g, int64_t O, int64_t k, int64_t s, int64_t L, int64_t pad, int include_pad);

/* source index (i64 [O]) of each output index along one dim of a nearest (exact: nearest-
 * exact) interpolation from L to O elements; sf > 0: the scale factor given */
ic_val ic_interp_nearest_index(ic_graph *g, int64_t L, int64_t O, double sf, int exact);

/* A depthwise convolution (groups == in channels == out channels, 1-d/2-d, float) as a
 * window sum: the input padded with zeros, one strided slice per kernel tap times that
 * tap's weight column, summed in f32 (f64 for f64) with the bias, cast back. prm: conv
 * params as ic_extern's CONV (nd, stride[nd], padding[nd], dilation[nd], groups); v: x, w
 * [, bias] (n operands). stencil: pad in the input's dtype and cast each tap (else cast
 * first). Returns 1 with *res set, 0 when not applicable (nothing built: shapes, dtypes,
 * taps > max_taps, an empty batch, or what eager raises on), -1 on a failed build. */
int ic_dwconv_window(ic_graph *g, int nd, const int64_t *prm, const ic_val *v, int n, int stencil,
                     long max_taps, ic_val *res);

#endif
