/* ops_internal.h — shared by the files of torch calls lowered to inductor_c graph builders
 * (ops_table.c: the table and sym_call; ops_args.c, ops_pointwise.c, ops_reduce.c,
 * ops_views.c, ops_index.c, ops_extern.c, ops_pool.c, ops_builtins.c, ops_pyops.c). Not used
 * outside. */
#ifndef DH_OPS_INTERNAL_H
#define DH_OPS_INTERNAL_H

#include "sym.h"

#include <math.h>
#include <string.h>

enum { W_TORCH = 1, W_F = 2, W_METHOD = 4, W_ALL = 7, W_LINALG = 8 /* torch.linalg.* */,
       W_PF = 16 /* a polyfill (torchc/_polyfills.py) takes the call first; its own calls of the
                    op reach the handler */,
       W_FLOATK = 32 /* ATen's kernel exists for floating (and complex) inputs only: an integer or
                        bool input raises NotImplementedError ("elu_cpu" not implemented for
                        'Int'), left to eager before the handler promotes it (ops_table.c) */ };
#define MAXP 24

typedef struct opdef opdef;
typedef int (*handler)(trace *t, const opdef *d, var **p, var *out);
struct opdef {
    const char *name;
    unsigned where;
    const char *sig;
    handler fn;
    int op; /* ic_op for generic handlers */
};

#define G (t->g)
static inline ic_val sym_num(trace *t, double v) { return ic_scalar(G, v, IC_F64); }
static inline ic_val sym_inum(trace *t, long long v) { return ic_scalar(G, (double)v, IC_I64); }

/* torch callables recognized by identity, looked up once (ops_table.c sym_ops_init) */
typedef struct sym_torch_refs {
    /* torch._C queries about the caller's context, answered at trace time: _is_tracing,
     * _get_tracing_state (torch.jit.trace active: not captured), _len_torch_dispatch_stack
     * (a dispatch mode active: not captured); and _log_api_usage_once /
     * _log_api_usage_metadata, logging without effect on results: no-ops in the graph. */
    PyObject *tracing_query[3], *usage_log[2];
    /* torch._C._has_torch_function / _unary / _variadic: traced tensors are plain tensors
     * (subclasses are not captured), so the answer is the real one for a plain tensor probe. */
    PyObject *tf_query[3], *tf_probe;
    PyObject *autocast_query; /* torch.is_autocast_enabled */
    PyObject *tensor_type;    /* torch.Tensor */
    PyObject *grad_query;     /* torch.is_grad_enabled: guarded at entry, off in no_grad */
} sym_torch_refs;
extern sym_torch_refs sym_refs;

/* ops_custom.c: the tensor operands of one CUSTOM extern call, collected while its
 * arguments become Python values (tensors as torchc._custom_ops.Slot(i)) */
typedef struct sym_opnds {
    const var *v[IC_EXT_MAXIN]; /* the traced arguments (for a written one: its var) */
    int n;
    PyObject *metas;            /* list of (dtype, sizes, strides) */
} sym_opnds;
PyObject *sym_custom_arg(trace *t, const var *a, sym_opnds *o);
int sym_custom_pack(trace *t, const var *args, int nargs, PyObject *kwnames, sym_opnds *o, PyObject *pa,
                    PyObject *kw);
int sym_custom_build(trace *t, const sym_opnds *o, long long key, int w, PyObject *outs, int islist, var *out);
/* ops_complex.c: a call that reads or makes a complex value, as one ATen extern (1: not
 * such a call, nothing done). fn: the callable, or a str: "attr:<name>" of args[0]; probe:
 * planned even without a complex argument (captured if its result is complex). The
 * others: the entry points (1: no complex value, the caller's own path goes on). */
int sym_complex_call(trace *t, PyObject *fn, var *args, int nargs, PyObject *kwnames, int probe, var *out);
int sym_complex_involved(trace *t, const var *v);
int sym_complex_binary(trace *t, int base, int inplace, const var *a, const var *b, var *out);
int sym_complex_operator(trace *t, int cmp, const var *a, const var *b, var *out);
int sym_complex_index(trace *t, const var *x, const var *k, var *out);
int sym_complex_attr(trace *t, const var *x, const char *name, var *out);
int sym_complex_method(trace *t, const var *self, PyObject *name, const var *args, int nargs, PyObject *kwnames,
                       var *out);
int sym_complex_fn(PyObject *fn); /* 2: a torch builtin, 1: builtins abs/pow, 0: neither */
int dh_alias_of(PyObject *fn); /* ops_table.c: fn made an op's callable by dh_alias_op */

/* ops_args.c */
int sym_int_const_exact(trace *t, PyObject *o); /* ops_args.c: -1 (a graph break) for an int doubles can't hold */
int sym_as_tensor(trace *t, const var *v, ic_val *out);
/* the parts of an index key (ops_index.c): at most SYM_INDEX_PARTS */
#define SYM_INDEX_PARTS (IC_MAX_DIMS + 4)
int sym_index_parts(trace *t, const var *k, const var **parts, var *tmp);
int sym_tensor_out(trace *t, ic_val v, var *out);
/* autocast.c: eager autocast's policy for op `name` on the trace's device (0 unchanged,
 * 1 cast floating args to *to, -1 not captured) and the cast of one argument */
int dh_autocast_policy(const trace *t, const char *name, ic_dtype *to);
int dh_autocast_arg(trace *t, var *a, ic_dtype to, var **out);
int sym_is_none(const var *v);
int sym_sub_bool_check(trace *t, const var *a, const var *b);
int sym_inplace_overlap_check(trace *t, const var *self, const var *args, int n);
int sym_get_int(trace *t, const var *v, long long *out, const char *what);
int sym_get_bool(trace *t, const var *v, int dflt, int *out, const char *what);
int sym_get_str(trace *t, const var *v, const char *dflt, const char **out, const char *what);
const ic_meta *sym_metap(trace *t, ic_val v);
int sym_ndim_of(trace *t, ic_val v);
int sym_norm_dim(trace *t, long long d, int ndim, int *out);
int sym_get_ints(trace *t, const var *v, long long *out, int max, int *n, const char *what);
Py_ssize_t sym_ints_len(const var *v); /* how many values sym_get_ints would read (1: not a list) */
int sym_get_shape_args(trace *t, const var *rest, long long *out, int *n, const char *what);
int sym_get_sym_shape_args(trace *t, const var *rest, ic_dim *out, int *n);
int sym_dims_mask(trace *t, const var *dim, int ndim, uint32_t *mask);
int sym_get_dtype(trace *t, const var *v, int *out);

/* scalar_fits.c: eager's overflow check of a number converted to dtype (1: raises) and a
 * sym_fail with what when it would (s: a constant number, else not checked) */
int sym_scalar_overflows(PyObject *obj, int dtype);
int sym_check_scalar_fits(trace *t, const var *s, int dtype, const char *what);
int sym_check_tensor_value_fits(trace *t, const var *s, int dtype, const char *what);
int sym_add_check(trace *t, ic_val bad, const char *what);

/* ops_pointwise.c */
int sym_int_div_check(trace *t, ic_op op, ic_val x, ic_val y, const var *bv);
PyObject *sym_graph_device(trace *t);
/* a device argument (str or torch.device: cpu, cuda[:i]) -> 1 and type/index; whether a value
 * made on (type, index) may join the graph (the first one decides), else a sym_fail */
int sym_device_arg(const var *v, int *type, int *index);
int sym_same_device(trace *t, int type, int index, const char *what);
/* ops_random.c */
int sym_h_rand(trace *t, const opdef *d, var **p, var *out);
int sym_h_rand_like(trace *t, const opdef *d, var **p, var *out);
int sym_h_randint(trace *t, const opdef *d, var **p, var *out);
int sym_h_randint_like(trace *t, const opdef *d, var **p, var *out);
int sym_h_randperm(trace *t, const opdef *d, var **p, var *out);
int sym_h_bernoulli(trace *t, const opdef *d, var **p, var *out);
int sym_h_multinomial(trace *t, const opdef *d, var **p, var *out);
int sym_h_normal(trace *t, const opdef *d, var **p, var *out);
int sym_h_random_(trace *t, const opdef *d, var **p, var *out);
int sym_opt_num(trace *t, var *v, double dflt, double *out, const char *what);
/* sym_opt_num for an argument torch takes as a Scalar: an int outside int64 fails the trace
 * (eager raises converting it) */
int sym_opt_scalar(trace *t, var *v, double dflt, double *out, const char *what);
int sym_need_tensor(trace *t, const opdef *d, var *v);
int sym_h_select(trace *t, const opdef *d, var **p, var *out);
/* handlers */
int sym_h_binary(trace *t, const opdef *d, var **p, var *out);
int sym_h_outer(trace *t, const opdef *d, var **p, var *out);
int sym_h_linspace(trace *t, const opdef *d, var **p, var *out);
int sym_h_add_sub(trace *t, const opdef *d, var **p, var *out);
int sym_h_div(trace *t, const opdef *d, var **p, var *out);
int sym_h_unary(trace *t, const opdef *d, var **p, var *out);
int sym_h_square(trace *t, const opdef *d, var **p, var *out);
int sym_h_gelu(trace *t, const opdef *d, var **p, var *out);
int sym_h_where(trace *t, const opdef *d, var **p, var *out);
int sym_h_clamp(trace *t, const opdef *d, var **p, var *out);
int sym_h_cast(trace *t, const opdef *d, var **p, var *out);
int sym_h_to(trace *t, const opdef *d, var **p, var *out);
int sym_h_cpu(trace *t, const opdef *d, var **p, var *out);
int sym_h_dropout(trace *t, const opdef *d, var **p, var *out);
int sym_h_fill(trace *t, const opdef *d, var **p, var *out);
int sym_h_requires_grad_(trace *t, const opdef *d, var **p, var *out); /* train_step.c */
int sym_h_arange(trace *t, const opdef *d, var **p, var *out);
int sym_h_eye(trace *t, const opdef *d, var **p, var *out);
int sym_h_factory(trace *t, const opdef *d, var **p, var *out);
int sym_h_new_factory(trace *t, const opdef *d, var **p, var *out);
int sym_h_new_tensor(trace *t, const opdef *d, var **p, var *out);
int sym_h_tensor(trace *t, const opdef *d, var **p, var *out);
int sym_dtype_arg(PyObject *o);
ic_val sym_floor_divide(trace *t, ic_val a, ic_val b);
int sym_h_as_tensor(trace *t, const opdef *d, var **p, var *out);
int sym_h_scalar_tensor(trace *t, const opdef *d, var **p, var *out);
int sym_h_linalg_norm(trace *t, const opdef *d, var **p, var *out);
/* ops_models.c */
int sym_h_result_type(trace *t, const opdef *d, var **p, var *out);
int sym_h_as_strided(trace *t, const opdef *d, var **p, var *out);
int sym_h_grid_sampler(trace *t, const opdef *d, var **p, var *out);
int sym_h_affine_grid_generator(trace *t, const opdef *d, var **p, var *out);
int sym_numbers_op(trace *t, const opdef *d, var **p, int nkw, const char *const *kwn, var *out);
int sym_const_int_tensor(trace *t, const var *v, long long *out);
int sym_np_ufunc_call(trace *t, PyObject *f, const var *args, int nargs, PyObject *kwnames, var *out);
int sym_return_types_call(trace *t, PyObject *f, const var *args, int nargs, PyObject *kwnames, var *out);
int sym_h_bucketize(trace *t, const opdef *d, var **p, var *out);
int sym_h_act(trace *t, const opdef *d, var **p, var *out);
int sym_h_glu(trace *t, const opdef *d, var **p, var *out);
int sym_h_type(trace *t, const opdef *d, var **p, var *out);
int sym_h_masked_fill(trace *t, const opdef *d, var **p, var *out);
int sym_h_masked_scatter(trace *t, const opdef *d, var **p, var *out);
int sym_h_addc(trace *t, const opdef *d, var **p, var *out);
int sym_h_type_as(trace *t, const opdef *d, var **p, var *out);
int sym_h_clone(trace *t, const opdef *d, var **p, var *out);
int sym_h_diff(trace *t, const opdef *d, var **p, var *out);
int sym_h_nan_to_num(trace *t, const opdef *d, var **p, var *out);

/* ops_reduce.c */
/* handlers */
int sym_h_reduce(trace *t, const opdef *d, var **p, var *out);
int sym_h_max_min(trace *t, const opdef *d, var **p, var *out);
int sym_h_softmax(trace *t, const opdef *d, var **p, var *out);
int sym_h_softmax_backward_data(trace *t, const opdef *d, var **p, var *out);
int sym_h_layer_norm(trace *t, const opdef *d, var **p, var *out);
int sym_h_arg(trace *t, const opdef *d, var **p, var *out);
int sym_h_var(trace *t, const opdef *d, var **p, var *out);
int sym_h_logsumexp(trace *t, const opdef *d, var **p, var *out);
int sym_h_anyall(trace *t, const opdef *d, var **p, var *out);
int sym_h_is_all_true(trace *t, const opdef *d, var **p, var *out);
int sym_h_norm(trace *t, const opdef *d, var **p, var *out);
int sym_h_weight_norm(trace *t, const opdef *d, var **p, var *out);
int sym_h_batch_norm(trace *t, const opdef *d, var **p, var *out);
int sym_h_group_norm(trace *t, const opdef *d, var **p, var *out);
int sym_h_instance_norm(trace *t, const opdef *d, var **p, var *out);
int sym_h_nanmean(trace *t, const opdef *d, var **p, var *out);
int sym_h_take_along_dim(trace *t, const opdef *d, var **p, var *out);
int sym_h_cumsum(trace *t, const opdef *d, var **p, var *out);
int sym_h_argsort(trace *t, const opdef *d, var **p, var *out);
int sym_h_sort(trace *t, const opdef *d, var **p, var *out);

/* ops_views.c */
int sym_same_tensor(trace *t, var **p, var *out);
PyObject *sym_perm_tuple(const int *perm, int n);
int sym_view_out_desc(trace *t, const var *in, ic_val v, var *out, const char *name, PyObject *args);
int sym_size_out(trace *t, const ic_meta *m, int d, var *out);
PyObject *sym_shape_args(trace *t, ic_val v);
#define view_out(t, in, v, out) sym_view_out_desc(t, in, v, out, "reshape", sym_shape_args(t, v))
/* ATen's computeStride: the strides of a view of (sizes, strides) as nsizes; 0: none */
int sym_view_strides(int n, const int64_t *sizes, const int64_t *strides, int nn, const int64_t *nsizes,
                     int64_t *nstrides);
ic_val sym_unsqueeze_val(trace *t, ic_val x, int dim); /* x with a size-1 dim inserted at dim */
/* handlers */
int sym_h_reshape(trace *t, const opdef *d, var **p, var *out);
int sym_h_flatten(trace *t, const opdef *d, var **p, var *out);
int sym_h_unflatten(trace *t, const opdef *d, var **p, var *out);
int sym_h_permute(trace *t, const opdef *d, var **p, var *out);
int sym_h_transpose(trace *t, const opdef *d, var **p, var *out);
int sym_h_unsqueeze(trace *t, const opdef *d, var **p, var *out);
int sym_h_squeeze(trace *t, const opdef *d, var **p, var *out);
int sym_h_diagonal(trace *t, const opdef *d, var **p, var *out);
int sym_h_tensor_unfold(trace *t, const opdef *d, var **p, var *out);
int sym_h_expand(trace *t, const opdef *d, var **p, var *out);
int sym_h_identity(trace *t, const opdef *d, var **p, var *out);
int sym_h_size(trace *t, const opdef *d, var **p, var *out);
int sym_h_cat(trace *t, const opdef *d, var **p, var *out);
int sym_h_narrow(trace *t, const opdef *d, var **p, var *out);
int sym_h_split(trace *t, const opdef *d, var **p, var *out);
int sym_h_tri(trace *t, const opdef *d, var **p, var *out);
int sym_h_flip(trace *t, const opdef *d, var **p, var *out);
int sym_h_repeat(trace *t, const opdef *d, var **p, var *out);
int sym_h_solve_triangular(trace *t, const opdef *d, var **p, var *out);
int sym_h_meshgrid(trace *t, const opdef *d, var **p, var *out);
int sym_h_unbind(trace *t, const opdef *d, var **p, var *out);
int sym_h_reshape_as(trace *t, const opdef *d, var **p, var *out);
int sym_h_repeat_interleave(trace *t, const opdef *d, var **p, var *out);

/* ops_index.c: handlers */
int sym_h_index_select(trace *t, const opdef *d, var **p, var *out);
int sym_h_gather(trace *t, const opdef *d, var **p, var *out);
int sym_h_scatter_reduce(trace *t, const opdef *d, var **p, var *out);
int sym_h_embedding_bag(trace *t, const opdef *d, var **p, var *out);
int sym_h_index_put(trace *t, const opdef *d, var **p, var *out);
int sym_h_put(trace *t, const opdef *d, var **p, var *out);

/* ops_extern.c */
int sym_conv_ints(trace *t, var *v, long long dflt, int nd, int64_t *out, const char *what);
/* handlers */
int sym_h_matmul(trace *t, const opdef *d, var **p, var *out);
/* mm/matmul of [M, 1] x [1, N] (float32/64, CPU): lowered to a broadcast multiply (ops_extern.c) */
int sym_outer_product(trace *t, ic_val a, ic_val b);
int sym_h_addmm(trace *t, const opdef *d, var **p, var *out);
int sym_h_linalg(trace *t, const opdef *d, var **p, var *out);
int sym_h_linear(trace *t, const opdef *d, var **p, var *out);
int sym_h_conv(trace *t, const opdef *d, var **p, var *out);
int sym_h_sdpa(trace *t, const opdef *d, var **p, var *out);
int sym_h_native_mha(trace *t, const opdef *d, var **p, var *out);
int sym_h_conv_transpose(trace *t, const opdef *d, var **p, var *out);
int sym_h_encoder_layer(trace *t, const opdef *d, var **p, var *out);
int sym_h_einsum(trace *t, const opdef *d, var **p, var *out);

/* ops_pool.c */
int sym_dw_conv(trace *t, int nd, const int64_t *prm, const ic_val *v, int n, ic_val *res);
/* handlers */
int sym_h_max_pool(trace *t, const opdef *d, var **p, var *out);
int sym_h_avg_pool(trace *t, const opdef *d, var **p, var *out);
int sym_h_adaptive_pool(trace *t, const opdef *d, var **p, var *out);
int sym_h_pad(trace *t, const opdef *d, var **p, var *out);
int sym_h_unfold(trace *t, const opdef *d, var **p, var *out);
int sym_h_fold(trace *t, const opdef *d, var **p, var *out);
int sym_h_interpolate(trace *t, const opdef *d, var **p, var *out);

/* ops_loss.c (training): losses; attention with dropout as eager's math path */
ic_val sym_dropout_mask(trace *t, ic_val x, double p); /* ops_random.c */
int sym_sdpa_dropout(trace *t, ic_val q, ic_val k, ic_val v, ic_val mask, int causal, double scale, double p,
                     var *out);
/* handlers */
int sym_h_cross_entropy(trace *t, const opdef *d, var **p, var *out);
int sym_h_nll_loss(trace *t, const opdef *d, var **p, var *out);
int sym_h_pointwise_loss(trace *t, const opdef *d, var **p, var *out);
int sym_h_bce(trace *t, const opdef *d, var **p, var *out);             /* ops_loss.c */
int sym_h_broadcast_tensors(trace *t, const opdef *d, var **p, var *out); /* ops_loss.c */
/* cls(*constants) of a tensorless nn.Module class (a loss module made in forward); 1: not it */
int sym_module_new(trace *t, PyObject *cls, var *args, int nargs, PyObject *kwnames, var *out);

/* ops_more.c */
int sym_h_query(trace *t, const opdef *d, var **p, var *out);
int sym_h_shape_like(trace *t, const opdef *d, var **p, var *out);
int sym_h_movedim(trace *t, const opdef *d, var **p, var *out);
int sym_h_tensor_split(trace *t, const opdef *d, var **p, var *out);
int sym_h_one_hot(trace *t, const opdef *d, var **p, var *out);
int sym_h_histc(trace *t, const opdef *d, var **p, var *out);
int sym_h_index_fill(trace *t, const opdef *d, var **p, var *out);
int sym_h_index_add(trace *t, const opdef *d, var **p, var *out);
int sym_h_count_nonzero(trace *t, const opdef *d, var **p, var *out);
int sym_h_grouped_mm(trace *t, const opdef *d, var **p, var *out);
int sym_h_channel_shuffle(trace *t, const opdef *d, var **p, var *out);

/* ops_builtins.c */
int sym_call_builtin(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
int sym_is_inspect_signature(PyObject *f);

#endif
