/* ic.h — public API of inductor_c, the C Inductor. No Python here.
 *
 * Use from the capture layer (dynamo_hook/):
 *
 *   ic_graph *g = ic_graph_new();
 *   ic_meta m = {.dtype = IC_F32, .ndim = 2, .sizes = {4, 5}, .strides = {5, 1}};
 *   ic_val x = ic_input(g, &m);                       // graph input 0
 *   ic_val s = ic_scalar(g, 2.0, IC_F64);             // python float
 *   ic_val y = ic_binary(g, IC_OP_MUL, x, s);         // x * 2.0
 *   ic_val r = ic_reduce(g, IC_OP_SUM, y, 1u << 1, 1);// y.sum(1, keepdim=True)
 *   ic_output(g, r);
 *   ic_compiled *c = ic_compile(g, &opts, &err);      // g may be freed afterwards
 *   ic_run(c, in_ptrs, out_ptrs, &err);               // out buffers: ic_compiled_output_meta
 *
 * Every builder returns a value handle >= 0, or IC_NONE (-1) with the reason in
 * ic_graph_error(g); after the first error, the graph stays in the error state and
 * every later builder returns IC_NONE. Shapes are static unless an input is made with
 * ic_input_dyn: strides of inputs are part of the graph (the caller guards them). Builders
 * do shape and dtype inference at once, so ic_value_meta answers x.shape / x.dtype during
 * capture.
 *
 * Dynamic (symbolic) sizes: a size may be a monomial coef * s0^a * s1^b ... in up to
 * IC_MAX_SYMS size symbols (ic_dim). Inputs made with ic_input_dyn carry them, builders
 * propagate them (ic_meta.dyn / dims; sizes[] keep the hint values seen at trace time), and
 * one compile runs for any symbol values (ic_run_dyn). What a builder or the compiler cannot
 * do symbolically is IC_EUNSUPPORTED (the caller then specializes).
 */
#ifndef IC_H
#define IC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ic_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IC_MAX_DIMS 8
#define IC_NONE (-1)

/* Element types. Order is fixed (tests and the bridge map torch dtypes onto it). */
typedef enum ic_dtype {
    IC_BOOL,  /* 1 byte, 0/1 */
    IC_U8,
    IC_I8,
    IC_I16,
    IC_I32,
    IC_I64,
    IC_F16,
    IC_BF16,
    IC_F32,
    IC_F64,
    IC_C64,   /* complex64 / complex128: only graph inputs, CUSTOM externs (ATen calls) and */
    IC_C128,  /* their outputs hold them; no kernel ever reads or writes one (ic_complex_check) */
    IC_DTYPE_COUNT
} ic_dtype;

static inline int ic_dtype_is_complex(ic_dtype t) { return t == IC_C64 || t == IC_C128; }
/* the CUSTOM extern keys of complex gradients (graph/vjp_extern.c vjp_custom, graph/autograd.c
 * ag_acc), registered by torchc/_complex_ops.py under the same arithmetic: operand k's gradient
 * of the complex call `key`, and the sum of two complex gradients */
static inline int64_t ic_custom_vjp_key(int64_t key, int k) {
    return (int64_t)(((uint64_t)key ^ 0x5BD1E9955BD1E995ull) + (uint64_t)(k + 1) * 0x9E3779B97F4A7C15ull);
}
#define IC_CUSTOM_CADD_KEY 0x4341444447524144ll /* complex gradient sum */

typedef int32_t ic_val; /* value handle inside one graph */

#define IC_MAX_SYMS 4
/* A symbolic size: coef * prod_k s_k^exp[k], a monomial in the graph's size symbols
 * s0..s3 (each symbol's value is >= 2 at run time: 0/1 are specialized by the caller).
 * A static size k is {k, {0}}. */
typedef struct ic_dim {
    int64_t coef;
    uint8_t exp[IC_MAX_SYMS];
} ic_dim;

/* Tensor metadata: sizes and strides in elements. */
typedef struct ic_meta {
    ic_dtype dtype;
    int ndim;
    int64_t sizes[IC_MAX_DIMS];   /* dyn: the hint values (sizes seen at trace time) */
    int64_t strides[IC_MAX_DIMS]; /* dyn: contiguous strides of the hint sizes */
    int dyn;                      /* 0: all sizes static (dims unused); 1: dims[] valid */
    ic_dim dims[IC_MAX_DIMS];     /* dyn: symbolic size of each dim (static dims too) */
} ic_meta;

/* Error channel: code separates user-level "unsupported" (eager fallback) from faults. */
typedef enum ic_errcode {
    IC_OK = 0,
    IC_EUNSUPPORTED, /* op/dtype/shape the compiler does not handle: fall back to eager */
    IC_EINVALID,     /* the program is wrong (bad broadcast, bad dim): eager will raise */
    IC_EINTERNAL,    /* a bug or an LLVM/driver failure */
    IC_ENOMEM
} ic_errcode;

typedef struct ic_err {
    ic_errcode code;
    char msg[256];
    /* where ic_compile's time went, ms (the compile-time breakdown of TORCHC_LOGS=perf):
     * in-memory cache lookup and code key, graph passes (copy, lower, schedule, finalize),
     * code generation (LLVM IR / NVPTX, optimization, object or PTX), loading (JIT link,
     * cached code found in process or on disk, CUDA module) */
    double t_lookup, t_passes, t_codegen, t_load;
    int mem_hit; /* 1: answered by the in-memory cache */
} ic_err;

typedef struct ic_graph ic_graph;

/* ---- graph building ---------------------------------------------------------------- */
ic_graph *ic_graph_new(void);
void ic_graph_free(ic_graph *g);
const char *ic_graph_error(const ic_graph *g); /* NULL while no error */
ic_errcode ic_graph_errcode(const ic_graph *g);

ic_val ic_input(ic_graph *g, const ic_meta *m); /* static: m->dyn and m->dims are ignored */
/* A contiguous input with symbolic sizes m->dims (m->dyn is taken as 1; m->sizes are the
 * hints and must equal the dims at the hint symbol values; m->strides are ignored: the
 * input is contiguous). Each symbol's hint is learned from the first dim that is
 * coef * s_k; a dim in symbols with no hint yet must be of that form. Values whose dims
 * are all static report dyn = 0. */
ic_val ic_input_dyn(ic_graph *g, const ic_meta *m);
/* torch.get_default_dtype() for this graph (default f32): python floats and float ops of
 * integers take it */
void ic_graph_set_default_dtype(ic_graph *g, ic_dtype d);
/* the graph's tensors live on a CUDA device (default: the CPU); set before its ops are added */
void ic_graph_set_cuda(ic_graph *g, int on);
/* A Python scalar. kind: IC_F64 for float, IC_I64 for int, IC_BOOL for bool. */
ic_val ic_scalar(ic_graph *g, double v, ic_dtype kind);
ic_val ic_unary(ic_graph *g, ic_op op, ic_val a);
ic_val ic_binary(ic_graph *g, ic_op op, ic_val a, ic_val b);
ic_val ic_where(ic_graph *g, ic_val cond, ic_val a, ic_val b);
ic_val ic_cast(ic_graph *g, ic_val a, ic_dtype to);
/* dim_mask: bit d set = reduce dim d (already normalized, non-negative). dim_mask == 0
 * reduces all dims (torch's dim=None). dtype: result dtype or -1 for torch's default
 * (sum of bool/int -> int64; mean requires float). */
ic_val ic_reduce(ic_graph *g, ic_op op, ic_val a, uint32_t dim_mask, int keepdim, int dtype);
/* Views as index maps. sizes may hold one -1 for reshape. */
ic_val ic_reshape(ic_graph *g, ic_val a, int ndim, const int64_t *sizes);
ic_val ic_permute(ic_graph *g, ic_val a, const int *perm);
/* ic_permute, except that undoing a permute node returns that node's input */
ic_val ic_permute_fold(ic_graph *g, ic_val a, const int *perm);
ic_val ic_expand(ic_graph *g, ic_val a, int ndim, const int64_t *sizes);
/* Symbolic forms: reshape sizes may hold one entry with coef == -1 (inferred, like -1);
 * expand sizes with coef == -1 keep the existing size. On values with symbolic dims the
 * plain int64 forms accept sizes only where they are unambiguous (reshape: the same sizes;
 * expand: -1, the hint of a symbolic dim, or the size of a static dim), else IC_EUNSUPPORTED.
 * Builders on symbolic dims: broadcast s vs s / s vs 1 (s vs another size: IC_EUNSUPPORTED);
 * slice of a symbolic dim: only the full range; cat along a symbolic dim: only if the sum
 * is a monomial (s0 + s0); index_select: the index length may be symbolic, the indexed dim
 * of the source must be static. Extern calls (ic_extern): rows, batches and linear's leading
 * dims may be symbolic (conv: the batch only); a symbolic reduction dim K, channel or
 * spatial size, or batches that agree only at the hints are IC_EUNSUPPORTED; the handler
 * gets metas evaluated at the symbol values. Gather/scatter/scans: static only. */
ic_val ic_reshape_dyn(ic_graph *g, ic_val a, int ndim, const ic_dim *sizes);
ic_val ic_expand_dyn(ic_graph *g, ic_val a, int ndim, const ic_dim *sizes);
int ic_output(ic_graph *g, ic_val v); /* returns output index, or -1 */
/* In-place store (owner: training; sched/inplace.c): output j is the new value of graph input i
 * (an update the caller would copy back into input i). The compiler stores it straight into
 * input i's memory where that is exactly what the copy-back would leave: the value has the
 * input's dtype and shape, the input's elements do not share memory, and no kernel reads the
 * input's old value after (or, in the kernel that stores it, at another element than) the one
 * being written; else output j stays an ordinary output. ic_compiled_output_into says which
 * were granted. At most one request per output and per input. 0, or -1 (bad index). */
int ic_output_into(ic_graph *g, int j, int i);
/* Data movement (added by inductor_c). dim is normalized (0 <= dim < ndim).
 * slice: a[..., start:end:step, ...] with 0 <= start <= end <= size (clamped like Python
 *   after normalization by the caller) and step >= 1; a view (an index map).
 * cat: torch.cat((a, b), dim) (chain for more inputs); dtypes promote like torch.cat.
 * index_select: torch.index_select(a, dim, index), index a 0-/1-D i32/i64 tensor; also
 *   embedding (index_select(weight, 0, idx.flatten()) then reshape). Out-of-range
 *   indices are clamped (eager raises). a is realized in memory.
 * arange: 1-D [n], value start + i*step in dtype (n computed by the caller). */
ic_val ic_slice(ic_graph *g, ic_val a, int dim, int64_t start, int64_t end, int64_t step);
ic_val ic_cat(ic_graph *g, ic_val a, ic_val b, int dim);
ic_dtype ic_promote(ic_dtype a, ic_dtype b); /* torch.promote_types of two dtypes */
ic_val ic_index_select(ic_graph *g, ic_val a, int dim, ic_val index);
ic_val ic_arange(ic_graph *g, int64_t n, double start, double step, ic_dtype dtype);

/* ---- extern (library) calls ---------------------------------------------------------
 * An extern node runs a library kernel (ATen's mm/conv, through the handler that csrc
 * registers with ic_set_extern_handler) inside the graph. The scheduler makes it a kernel
 * boundary: its operands are realized in memory (graph inputs keep their strides), its
 * output is a contiguous buffer that the next fused kernel reads, so the epilogue of a
 * matmul (bias, activation, residual) is one kernel. Shapes and dtypes are inferred here
 * like ATen (IC_EINVALID where eager raises, IC_EUNSUPPORTED for dtypes left to eager).
 * params: int64, kind-specific (below); beta/alpha: ADDMM, BADDBMM (else 1). */
#define IC_EXTERNS(X)                                                                    \
    X(MM, "mm")           /* (a[M,K], b[K,N]) -> [M,N] */                                 \
    X(BMM, "bmm")         /* (a[B,M,K], b[B,K,N]) -> [B,M,N] */                           \
    X(MATMUL, "matmul")   /* torch.matmul: 1-D, 2-D, batched with broadcasting */         \
    X(ADDMM, "addmm")     /* (bias bcast to [M,N], a, b): beta*bias + alpha*(a@b) */      \
    X(LINEAR, "linear")   /* (x[...,K], w[N,K] [, bias[N]]) -> [...,N] */                 \
    X(BADDBMM, "baddbmm") /* (self bcast to [B,M,N], b1, b2): beta*self + alpha*b1@b2 */  \
    X(CONV, "conv")       /* (x[N,C,*s], w[O,C/g,*k] [, bias[O]]), params: nd, stride[nd], \
                             padding[nd], dilation[nd], groups (nd = 1, 2 or 3) */          \
    X(SDPA, "sdpa")       /* scaled_dot_product_attention (q[..,L,E], k[..,S,E], v[..,S,Ev] \
                             [, mask: bool or q's dtype, broadcast to [..,L,S]]) -> [..,L,Ev];\
                             params: is_causal [, 1: with the backward's statistics, a \
                             training graph: 1-D flat, ic_sdpa_stats_layout]; beta: the scale \
                             (explicit); dropout 0 */                                       \
    /* indexing and scans (any dtype; index operands i64; params[0] = normalized dim) */    \
    X(GATHER, "gather")   /* (x, index) -> x.gather(dim, index): index's shape */          \
    X(SCATTER, "scatter") /* (x, index, src) -> x.scatter(dim, index, src) */              \
    X(SCATTER_ADD, "scatter_add") /* (x, index, src) -> x.scatter_add(dim, index, src) */  \
    X(CUMSUM, "cumsum")   /* (x), params: dim, dtype (-1: torch's default, ints -> i64) */ \
    X(CUMPROD, "cumprod") /* like cumsum */                                                \
    X(ARGSORT, "argsort") /* (x), params: dim, descending, stable [, k, sorted: topk's      \
                             indices, eager's own tie order] -> i64; or (4 params) dim,    \
                             which (0 kthvalue, 1 median, 2 nanmedian), k (kthvalue's,    \
                             1-based), keepdim: ATen's own selection's indices (its tie   \
                             order, NaN as eager places it) */                            \
    /* linear algebra (graph/linalg.c; static shapes, float32/64): */                     \
    X(MATRIX_EXP, "matrix_exp") /* (a[..., n, n]) -> exp(a) (norm-chosen Taylor degree) */ \
    X(MATRIX_EXP_VJP, "matrix_exp_vjp") /* (a, g) -> gradient of <g, exp(a)> */          \
    X(SOLVE, "solve")     /* (a[..., n, n], b[..., n, k]) -> a^-1 b; params: (left=1), or \
                             solve_triangular's (left, upper, unitriangular, 1) */      \
    /* training (graph/autograd.c): backward kernels of ATen */                          \
    X(CONV_BWD, "conv_bwd") /* (grad_out, x, w), params: conv's then `which`: the gradient \
                               of x (0, x's shape), of w (1, w's shape) or both (2: 1-D   \
                               [numel x + numel w], dx then dw flat) */                   \
    X(SDPA_BWD, "sdpa_bwd") /* (grad_out, q, k, v), params: is_causal, beta: the scale ->  \
                               1-D [numel q + numel k + numel v]: dq, dk, dv flat; or  \
                               (grad_out, q, k, v, out, stats [, mask]), params: is_causal, \
                               1: ATen's backward kernel of the forward's (its logsumexp \
                               in stats: ic_sdpa_stats_layout) */                         \
    X(DROPOUT_MASK, "dropout_mask") /* (x), beta: p -> eager's dropout mask: bernoulli(1-p) \
                               / (1-p) in x's shape and dtype (ATen's generator, drawn when \
                               the graph runs); passes no gradient, never merged or recomputed */ \
    X(GROUPED_MM, "grouped_mm") /* (a[S,K], b[E,K,N], offs[E] int32) -> [S,N]: rows offs[e-1] .. \
                               offs[e] of a times b[e] (ATen's _grouped_mm, MoE experts; rows \
                               past offs[E-1] undefined, as eager's); f32/bf16/f16, static */ \
    X(RANDOM, "random")   /* ATen's generator, drawn when the graph runs in node order (never \
                             merged, never dead): params dist, dtype, i0, i1, ndim, sizes[ndim] \
                             [, strides[ndim]: the layout eager draws in]; beta, alpha: the \
                             distribution's numbers; 0 operands, 1 for BERNOULLI_T/MULTINOMIAL */ \
    X(CUSTOM, "custom")   /* a custom op (torch.ops.<ns>.<op>, torch.library) called through the \
                             dispatcher by torchc/_custom_ops.py (never merged, never dead: it \
                             may have side effects); 0..4 operands; params: key (the call's \
                             record), written operand + 1 (0: none), dtype, ndim, sizes[ndim] \
                             [, strides[ndim]: eager's of the written operand]; output \
                             contiguous (several outputs of one dtype: 1-D, flat) */      \
    X(GRID_SAMPLE, "grid_sample") /* (x[N,C,H,W], grid[N,Ho,Wo,2]) or the 5-d form -> \
                             [N,C,Ho,Wo] (contiguous): ATen's grid_sampler (F.grid_sample); \
                             params: interpolation (0 bilinear, 1 nearest, 2 bicubic), \
                             padding (0 zeros, 1 border, 2 reflection), align_corners */ \
    X(GRID_SAMPLE_BWD, "grid_sample_bwd") /* training: (grad_out, x, grid), params: grid_sample's \
                             then `which`: the gradient of x (0, x's shape), of grid (1, grid's \
                             shape) or both (2: 1-D [numel x + numel grid], dx then dgrid flat); \
                             ATen's grid_sampler_{2,3}d_backward */

typedef enum ic_extern_kind {
#define IC_X_EXT(name, text) IC_EXT_##name,
    IC_EXTERNS(IC_X_EXT)
#undef IC_X_EXT
    IC_EXT_COUNT
} ic_extern_kind;

#define IC_EXT_MAXP 16 /* params per extern node */
#define IC_EXT_MAXIN 8 /* tensor operands per extern node (custom ops; the ATen kinds take 1..4) */

/* SDPA with statistics (params {is_causal, 1}): one flat 1-D output of dtype f64 for f64
 * operands, else f32 (the logsumexp is f32 for 16-bit attention), holding
 *   [0, n): the attention output (its shape, contiguous; a 16-bit one widened exactly),
 *   [off, off + 16): a header, element 0 the kernel that ran (IC_SDPA_ST_*: the backward
 *   calls its backward kernel; NONE: the math form, recomputed),
 *   [off + 16, total): the kernel's logsumexp [batch dims..., L] with rows padded to a
 *   multiple of 32 (the memory-efficient kernel's layout).
 * The stats are a graph value (a slice) that the partitioner saves for the backward. */
enum { IC_SDPA_ST_NONE = 0, IC_SDPA_ST_CPU_FLASH = 1, IC_SDPA_ST_FLASH = 2, IC_SDPA_ST_EFFICIENT = 3 };
static inline void ic_sdpa_stats_layout(const ic_meta *out, int64_t *n, int64_t *off, int64_t *total) {
    int64_t rows = 1, nn = 1;
    for (int i = 0; i < out->ndim; i++) nn *= out->sizes[i];
    for (int i = 0; i + 2 < out->ndim; i++) rows *= out->sizes[i];
    const int64_t L = out->ndim >= 2 ? out->sizes[out->ndim - 2] : 1;
    *n = nn;
    *off = (nn + 15) / 16 * 16;
    *total = *off + 16 + rows * ((L + 31) / 32 * 32);
}

/* RANDOM's params[0]: uniform_(beta, alpha), normal_(beta, alpha), random_(i0, i1),
 * bernoulli_(beta), bernoulli_(operand 0: the probabilities), randperm(sizes[0]),
 * multinomial(operand 0, i0 samples, i1 replacement) */
enum { IC_RND_UNIFORM, IC_RND_NORMAL, IC_RND_RANDINT, IC_RND_BERNOULLI, IC_RND_BERNOULLI_T, IC_RND_RANDPERM,
       IC_RND_MULTINOMIAL, IC_RND_EXPONENTIAL, IC_RND_COUNT };

/* nin: 1..3 operands, 4 for SDPA with a mask and SDPA_BWD, 6 or 7 for SDPA_BWD with
 * statistics, 0..IC_EXT_MAXIN for IC_EXT_CUSTOM */
ic_val ic_extern(ic_graph *g, ic_extern_kind kind, int nin, const ic_val *in, int nparams,
                 const int64_t *params, double beta, double alpha);
const char *ic_extern_name(ic_extern_kind kind);

/* What the runtime hands the extern handler for one call. Pointers are valid for the
 * call only. The handler must compute `out` (contiguous, out_meta) from the inputs
 * (strided, in_meta) on `device`, for CUDA on `stream` (torch's current stream when the
 * graph runs from torchc). It returns 0, or -1 with err filled (never throws, never
 * aborts). */
typedef struct ic_extern_call {
    ic_extern_kind kind;
    int nparams;
    const int64_t *params;
    double beta, alpha;
    int nin;
    void *const *in;         /* address of element 0 of each input */
    const ic_meta *in_meta;  /* nin metas: dtype, sizes, strides in elements */
    void *out;
    const ic_meta *out_meta;
    int device;              /* ic_device: IC_CPU or IC_CUDA */
    int device_index;
    void *stream;            /* CUstream (CUDA), NULL on the CPU */
} ic_extern_call;

typedef int (*ic_extern_handler)(const ic_extern_call *call, ic_err *err);

/* Registers the handler (NULL: none). Without one, ic_compile of a graph holding an
 * extern node fails with IC_EUNSUPPORTED. */
void ic_set_extern_handler(ic_extern_handler h);

/* Queries (valid for any handle returned without error). Outputs of ops have
 * contiguous strides in meta; inputs keep theirs. */
const ic_meta *ic_value_meta(const ic_graph *g, ic_val v);
ic_op ic_value_op(const ic_graph *g, ic_val v);
/* the operands of v's node, in order, into out (room for IC_EXT_MAXIN); their count */
int ic_value_operands(const ic_graph *g, ic_val v, ic_val *out);
int ic_graph_num_inputs(const ic_graph *g);
int ic_graph_num_outputs(const ic_graph *g);
int ic_graph_num_ops(const ic_graph *g);
int ic_value_num_uses(const ic_graph *g, ic_val v); /* operands reading v (outputs not counted) */
/* A range [lo, hi] holding every element of an integer value built from aranges and
 * numbers by add/sub, casts and views (static shapes only): 1, else 0 (unknown). */
int ic_value_int_range(const ic_graph *g, ic_val v, double *lo, double *hi);
/* The value whose elements v's are a subset of, through views (reshape/permute/expand/
 * slice), index_select and gather of it, or v itself. */
ic_val ic_value_view_root(const ic_graph *g, ic_val v);
/* Eager's strides (graph/strides.c): every value knows the strides eager's tensor for it
 * has (TensorIterator's rule for pointwise ops, preserve_format for casts, contiguous
 * reductions, views from their base, channels-last convs...); graph outputs are allocated
 * with them. ic_value_strides copies them (ndim entries; at the hints for symbolic sizes).
 * The frontend sets them where its decomposition of an op differs from eager's kernel
 * (ic_value_set_strides; inputs keep theirs: -1), or to a memory format: IC_MF_PRESERVE
 * (empty_like/clone of `like`), contiguous, channels-last (4-d), channels-last-3d (5-d),
 * IC_MF_UNARY_OF (a unary TensorIterator op's output of `like`, which has v's shape: ops
 * whose scalar arguments ATen does not make operands);
 * -1 when the format does not fit the rank. */
enum { IC_MF_PRESERVE = 0, IC_MF_CONTIGUOUS = 1, IC_MF_CHANNELS_LAST = 2, IC_MF_CHANNELS_LAST_3D = 3, IC_MF_UNARY_OF = 4 };
int ic_value_strides(const ic_graph *g, ic_val v, int64_t *st);
int ic_value_set_strides(ic_graph *g, ic_val v, const int64_t *st);
int ic_value_set_format(ic_graph *g, ic_val v, ic_val like, int fmt);
/* TensorIterator's output strides over nop operands' strides (broadcast to the n dims sz, 0
 * on broadcast dims): the dims sorted by the operands' strides, the output dense in that
 * order (no fast setup: the caller checks for all-contiguous operands of the output's shape) */
void ic_layout_iter(int n, const int64_t *sz, int nop, const int64_t (*ost)[IC_MAX_DIMS], int64_t *st);
/* the strides of x.to(other dtype) (preserve_format) for x of sizes sz and strides in */
void ic_layout_preserve(int n, const int64_t *sz, const int64_t *in, int64_t *st);
int ic_value_suggest_format(const ic_graph *g, ic_val v); /* Tensor.suggest_memory_format */
int ic_value_is_contiguous(const ic_graph *g, ic_val v, int fmt); /* is_contiguous(memory_format) */
ic_val ic_graph_input(const ic_graph *g, int i);      /* value of graph input i */ /* compute ops, not counting inputs/scalars */
/* Text form (one line per value); malloc'd string, caller frees. */
char *ic_graph_to_string(const ic_graph *g);

/* ---- training (graph/autograd.c and the files it names, graph/partition.c; owner: training)
 * Stop-gradient marks: nodes built while grad mode is off in g (ic_set_grad_enabled(g, 0),
 * nested; a with torch.no_grad() block) and ic_detach nodes (an identity cast) pass no
 * gradient to their operands. They change nothing in the forward graph's code. */
void ic_set_grad_enabled(ic_graph *g, int on);
ic_val ic_detach(ic_graph *g, ic_val v);
/* Activation checkpointing (torch.utils.checkpoint, dynamo_hook/sym_call.c): the ops built
 * between ic_set_recompute(g, 1) and the matching ic_set_recompute(g, 0) (nested) are
 * recomputed by the backward from what the region reads rather than saved by the forward:
 * pointwise ops, views, reductions, and matmul/conv/attention externs; random draws are
 * saved (drawn once, as eager's recompute replays the same generator state). They change
 * nothing in the forward graph's code. */
void ic_set_recompute(ic_graph *g, int on);
/* Selective checkpointing (torch.utils.checkpoint's context_fn with
 * create_selective_checkpoint_contexts): the policy for value v of a region, 1: saved (the
 * forward computes it and the backward reads it, or what the backward needs of it, from
 * memory: MUST_SAVE / PREFER_SAVE), 0: recomputed (the region's default). The first call for
 * a value decides (an inner region's policy before an outer one's). ic_value_checkpoint_policy:
 * -1 none set, else 0/1. ic_value_extern_kind: v's ic_extern_kind, or -1 (not an extern). */
void ic_set_checkpoint_policy(ic_graph *g, ic_val v, int save);
int ic_value_checkpoint_policy(const ic_graph *g, ic_val v);
int ic_value_extern_kind(const ic_graph *g, ic_val v);
/* A leaf that requires grad made inside the graph (`x.requires_grad = True` on a floating
 * value that did not require grad: eager's x becomes a leaf): an identity cast that passes no
 * gradient to its operand and requires grad itself, so what is built from it does. Its own
 * gradient is computed by nobody: the caller keeps the tensor from leaving the graph (its
 * .grad would be eager's only if it were a real leaf). ic_value_is_grad_leaf: 1 for such a
 * node, else 0. */
ic_val ic_grad_leaf(ic_graph *g, ic_val v);
int ic_value_is_grad_leaf(const ic_graph *g, ic_val v);
/* A torch.autograd.Function captured whole (dynamo_hook/autograd_fn.c). Its forward is
 * built with grad off; ic_custom_output(g, y) is a fresh identity of each differentiable
 * output y. The user's backward is then traced onto g from value `base`
 * (ic_graph_num_values) with the gradient of each output a placeholder ic_input (graph
 * inputs past `ninputs`). ic_custom_capture moves the values [base, end) out of g into a
 * template g keeps and drops the placeholders from g's inputs: out[k] (an ic_custom_output
 * value, or -1: a non-differentiable output, whose gradient is zeros) feeds placeholder
 * ph[k]; gin[i] (a template value, a value before base, or -1) is the gradient of forward
 * value in[i]. The backward graph runs the template where the gradients reach out[]; the
 * outputs require grad where an in[] does. 0, or -1 (g's error state set). */
int ic_graph_num_values(const ic_graph *g);
/* the random draws (RANDOM, DROPOUT_MASK) and custom ops at values >= from are no longer run
 * for their effects (the random stream, a custom op's side effects): the instruction a graph
 * break stops at (a call traced in part) runs eagerly and does them itself. Returns how many
 * were dropped. */
int ic_graph_drop_draws(ic_graph *g, ic_val from);
ic_val ic_custom_output(ic_graph *g, ic_val y);
int ic_custom_capture(ic_graph *g, int base, int ninputs, int nout, const ic_val *out, const ic_val *ph, int nin,
                      const ic_val *in, const ic_val *gin);
/* the values [base, end) and the inputs past ninputs leave g (a backward not captured) */
void ic_custom_abort(ic_graph *g, int base, int ninputs);
/* 1 if v depends on a graph input i with req[i] != 0 through float values and nodes that
 * pass gradients (torch's requires_grad of the value under grad mode), else 0. */
int ic_value_requires_grad(const ic_graph *g, ic_val v, const unsigned char *req);
/* -1 if g's outputs [0, nout) read a leaf made in g or g has a custom autograd.Function, else
 * the number of stop-gradient nodes they read, listed in *nograd (malloc'd) (graph/requires_grad.c) */
int ic_graph_grad_plain(const ic_graph *g, int nout, ic_val **nograd);
ic_val ic_graph_output_value(const ic_graph *g, int j); /* value of output j, IC_NONE if none */
/* 1 if v is an op built with grad mode on in g (outside every ic_set_grad_enabled(g, 0) region
 * closed so far), 0 for inputs, scalars and ops built with it off */
int ic_value_grad_on(const ic_graph *g, ic_val v);
/* 1 if eager's autograd keeps value v for the backward (an operand a derivative reads, of a
 * node that carries a gradient from an input with req; or such a node's saved result), so
 * that an in-place update of it before the backward makes eager's backward raise.
 * precise: only what eager is known to keep; 0: conservative (any operand a derivative may
 * read). Only nodes before upto are read (-1: all). graph/requires_grad.c */
int ic_value_saved_for_backward(const ic_graph *g, ic_val v, const unsigned char *req, int precise, int upto);

/* Backward graph derivation. fwd: the captured forward graph; req[i]: IC_AG_REQ if input
 * i requires grad, | IC_AG_OVERWRITTEN if its buffer is overwritten after the forward (an
 * input updated in place: the backward never reads it, but a saved copy of the values it
 * needs). The backward graph is built in the same IR from the rules of graph/vjp.h, reading
 * forward values that the partitioner saves (appended to fwd as outputs after the
 * program's nuser_out) or recomputes. Returns 0 (out filled; out->bwd NULL when no output
 * carries a gradient), or -1 with err (IC_EUNSUPPORTED: e.g. an op with no backward rule;
 * fwd may then hold extra outputs: the caller falls back and discards it). */
/* IC_AG_GRAD_CAME: a bool scalar, 1 if program output index's gradient came (0: it is None
 * and its IC_AG_GRAD_OUT input reads zeros); a part of a sum of gradients that reads only
 * outputs with none is not added, as eager runs no backward of it (0 * inf would be NaN) */
enum { IC_AG_FWD_INPUT = 0, IC_AG_FWD_OUTPUT = 1, IC_AG_GRAD_OUT = 2, IC_AG_GRAD_CAME = 3 };
enum { IC_AG_REQ = 1, IC_AG_OVERWRITTEN = 2 };
typedef struct ic_autograd {
    ic_graph *bwd;          /* owned */
    int nuser_out;          /* forward outputs [0, nuser_out) are the program's */
    unsigned char *out_diff;/* per program output: 1 if it carries a gradient */
    int nbwd_in;
    int *bwd_in_kind;       /* per backward input: IC_AG_* */
    int *bwd_in_index;      /* forward input / forward output / program output index */
    int nbwd_out;
    int *bwd_out_input;     /* per backward output: the forward input whose gradient it is */
    int64_t saved_bytes;    /* forward intermediates kept for the backward */
    int64_t saved_input_bytes; /* forward inputs the backward reads (alive anyway) */
    int nsaved, nrecomputed;
    unsigned char *check_in;  /* per forward input: eager's autograd keeps it (its version is */
    unsigned char *check_out; /* checked at backward); per program output: likewise */
    unsigned char *out_dep;   /* nbwd_out x nuser_out: backward output k reads the gradient of
                               * program output j (NULL: not known). A gradient none of whose
                               * outputs' gradients came is None, as eager's .grad stays None
                               * where no gradient reaches it (csrc/train.c) */
} ic_autograd;
int ic_autograd_build(ic_graph *fwd, const unsigned char *req, ic_autograd *out, ic_err *err);
void ic_autograd_clear(ic_autograd *a);

/* ---- compilation -------------------------------------------------------------------- */
typedef enum ic_device { IC_CPU = 0, IC_CUDA = 1 } ic_device;

typedef struct ic_options {
    ic_device device;
    int device_index;
    int num_threads;   /* 0: runtime default (ic_set_num_threads) */
    int opt_level;     /* LLVM optimization level 1..3; 0 (zero-initialized) means the default 3 */
    unsigned debug;    /* IC_DEBUG_* bits; ORed with TORCHC_DEBUG from the environment */
    int autotune;      /* CUDA: time every GEMM choice on the device (mode="max-autotune"),
                        * not only those of 2^27..2^31 multiply-adds */
} ic_options;

/* IC_DEBUG_TIME: per-stage compile times on stderr (does not bypass the caches) */
enum { IC_DEBUG_GRAPH = 1, IC_DEBUG_LOOPS = 2, IC_DEBUG_LLVM = 4, IC_DEBUG_PTX = 8, IC_DEBUG_TIME = 16,
       IC_DEBUG_DEDUPE = 32 /* GPU: every kernel variant built, key repeats checked against it (gpu_key.c) */ };

typedef struct ic_compiled ic_compiled;

/* Compiles g (not modified; may be freed after). NULL with err set on failure. */
ic_compiled *ic_compile(const ic_graph *g, const ic_options *opt, ic_err *err);
void ic_compiled_free(ic_compiled *c);
/* test hook: bytes the arena of this thread's last compilation held (its work grows linearly
 * with the graph; tests/c/test_inductor.c test_arena_linear) */
size_t ic_test_last_arena_bytes(void);
int ic_compiled_num_inputs(const ic_compiled *c);
int ic_compiled_num_outputs(const ic_compiled *c);
/* Meta of output i: dtype, sizes and the strides the caller must allocate with (eager's:
 * ic_value_strides, made dense where they overlap). Output buffers must not alias inputs. */
const ic_meta *ic_compiled_output_meta(const ic_compiled *c, int i);
/* The graph input that output i was stored into (ic_output_into granted), else -1. Such an
 * output has no buffer of its own: ic_run ignores outputs[i] (pass the input's address). */
int ic_compiled_output_into(const ic_compiled *c, int i);
int ic_compiled_num_kernels(const ic_compiled *c); /* fused kernels + extern calls */
int ic_compiled_num_externs(const ic_compiled *c);
/* Dynamic graphs: highest symbol index used + 1 (0 for a static graph). */
int ic_compiled_num_syms(const ic_compiled *c);
/* Output meta for given symbol values (concrete sizes, eager's dense strides, dyn = 0).
 * 0 ok, -1 bad index / symbol value < 2. For a static graph sym_values is ignored. */
int ic_compiled_output_meta_at(const ic_compiled *c, int i, const int64_t *sym_values, ic_meta *out);
/* Loop IR / kernel summary text (fusion decisions visible); malloc'd, caller frees.
 * One block per kernel, e.g.
 *   kernel k0: outer [4096] inner [1024] iters 4096
 *     pass 0: reduce amax %1 fused(%1) noStore        (a pass = one loop over a row)
 *     row: store %4 -> tmp2 fused(%3,%4)              (per-row code between passes)
 *     pass 1: store %5 -> out0 fused(%2,%3,%5)        (fused(...) = graph values inlined)
 *   buffers: in0 f32[4096,1024]; out0 ...; tmp2 ... @offset; rowtmp3 (per-row stack scratch)
 *   workspace N bytes (live peak M bytes: the most bytes of intermediates live in one kernel)
 * Kernel flags: "tiles AxB" (pointwise inner dim cut for threads), "split AxB" (one big row
 * reduced in parallel parts), "vec_outer" (lanes along the kept dim: x.sum(0)). */
char *ic_compiled_describe(const ic_compiled *c);
/* Bytes of the workspace one run of c allocates for its intermediates (extern outputs, row
 * scratch and split-reduction partials included; a dynamic graph's at its symbol hints):
 * explain()'s planned_bytes. */
int64_t ic_compiled_workspace_bytes(const ic_compiled *c);

/* Runs the compiled graph. inputs[i]: address of element 0 of input i (data_ptr, storage
 * offset included), laid out with the strides given to ic_input. outputs[i]: buffers
 * allocated by the caller per ic_compiled_output_meta. Thread-safe for distinct buffers. */
int ic_run(const ic_compiled *c, void *const *inputs, void *const *outputs, ic_err *err);
/* ic_run through c's backend on a stream: a GPU compilation's launches go on the CUDA
 * stream (CUstream, NULL: the legacy default stream; asynchronous), a CPU compilation runs
 * ic_run's loop (stream ignored). The one run entry point for callers that hold either. */
int ic_run_on(const ic_compiled *c, void *const *inputs, void *const *outputs, void *stream, ic_err *err);
/* Runs a dynamic graph at the symbol values sym_values[0 .. num_syms) (each >= 2): inputs
 * contiguous at those sizes, outputs allocated per ic_compiled_output_meta_at. ic_run on a
 * dynamic graph runs it at the hint values. On a static graph sym_values is ignored. */
int ic_run_dyn(const ic_compiled *c, void *const *inputs, void *const *outputs,
               const int64_t *sym_values, ic_err *err);

/* Compiles are cached in memory (CPU): an identical graph (same text: ops, shapes, input
 * strides, scalars, symbolic sizes) with the same options returns the cached code at once. The cache
 * keeps at most 128 graphs; TORCHC_CACHE=0 or any TORCHC_DEBUG (but time) bypasses it. ic_cache_clear
 * drops the cache's references (torchc.reset()); objects still held stay valid. */
void ic_cache_clear(void);

/* Machine code is also cached by a 128-bit key of the graph text, options, torchc and LLVM
 * versions, host CPU and the compiler binary: code already loaded in this process is shared
 * (code_shared), and object files persist on disk (ic_diskcache.h: $TORCHC_CACHE_DIR, else
 * ~/.cache/torchc; TORCHC_DISK_CACHE=0 turns off only the disk) for warm starts of new
 * processes (disk_loaded: compiles that skipped LLVM). Counters since process start. */
typedef struct ic_cache_stats {
    uint64_t mem_hits;      /* ic_compile answered by the in-memory cache */
    uint64_t code_shared;   /* compiles that reused code loaded in this process */
    uint64_t disk_loaded;   /* compiles that loaded their code from the disk cache */
    uint64_t disk_hits, disk_misses, disk_writes, disk_rejected, disk_errors, disk_evicted;
    uint64_t tier0;         /* CPU graphs compiled quickly first (config cpu_tiers) */
    uint64_t tier1;         /* ... whose optimized code was swapped in since */
    uint64_t tier_failed;   /* ... whose optimized compile failed (they keep tier 0) */
} ic_cache_stats;
void ic_get_cache_stats(ic_cache_stats *s);
/* Blocks until the background compiles of tiered CPU graphs queued so far are done (their
 * optimized code swapped in): benchmarks call it before they time steady runs. */
void ic_tier_wait(void);
void ic_tier_shutdown(void); /* stop the tier thread for good (process exit) */

/* ---- runtime ------------------------------------------------------------------------ */
void ic_set_num_threads(int n); /* worker count of the CPU pool (>= 1) */
int ic_get_num_threads(void);
const char *ic_version(void);
/* Bits parsed from TORCHC_DEBUG=graph,loops,llvm,ptx,time */
unsigned ic_debug_flags(void);

/* Internal faults: compiles that failed with IC_EINTERNAL (a bug, or an LLVM/driver failure:
 * never an unsupported graph) plus those the frontend reports with ic_note_internal_fault (a
 * capture that raised). Each one still runs eagerly for the user; the count (since process
 * start) is torchc._C.stats()["internal_faults"], and the test suite fails a test that made
 * one. ic_internal_faults copies the last message into last (n bytes) when last is not NULL. */
uint64_t ic_internal_faults(char *last, size_t n);
void ic_note_internal_fault(const char *msg);

/* dtype helpers */
const char *ic_dtype_name(ic_dtype t);
size_t ic_dtype_size(ic_dtype t);
const char *ic_op_name(ic_op op);

#ifdef __cplusplus
}
#endif
#endif
