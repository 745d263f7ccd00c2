/* ic_internal.h — shared internals of inductor_c (hidden symbols, not part of the API).
 *
 * Pipeline (see ic_compile_graph in compile.c):
 *
 *   ic_graph ──lower──▶ loop nodes (one per graph value: Pointwise / Reduction body
 *                        = expression DAG over that value's own index vars)
 *            ──sched──▶ kernels (realized values; bodies inlined into the kernel's vars;
 *                        passes over a row; flat load/store offsets; buffers)
 *            ──codegen─▶ one LLVM module, explicitly vectorized, O3
 *            ──runtime─▶ ORC JIT resource tracker; ic_run calls kernels via a thread pool
 *
 * Handles are 32-bit indices into pools owned by one compilation (ic_ctx): index
 * expressions (ic_ix), index tuples (ic_ixv), expressions (ic_xid). All pools are
 * hash-consed, so equal handles mean equal terms.
 */
#ifndef IC_INTERNAL_H
#define IC_INTERNAL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>

#include "ic.h"
#include "ic_diskcache.h"
#include "ic_config.h"

#define IC_API __attribute__((visibility("default")))
#define IC_HIDDEN __attribute__((visibility("hidden")))

/* ---- graph --------------------------------------------------------------------------- */
/* operands per node: 3 for every op but extern calls, which may take up to IC_EXT_MAXIN
 * (ic.h: custom ops, sdpa with a mask); unused operands are -1 (after the used ones: every
 * walk over in[] stops at the first -1). Build in[] with these, never with a brace list
 * shorter than IC_NIN (its tail would be 0, a node). */
#define IC_NIN IC_EXT_MAXIN
/* A CPU kernel of less work (k->work: elements times passes) runs on the calling thread
 * alone (compile.c): waking a sleeping worker costs more than it saves. The scheduler
 * (sched/finalize.c) lays such a kernel out for one thread. */
#define IC_PAR_MIN_WORK (1 << 20)
#define IC_IN_NONE {-1, -1, -1, -1, -1, -1, -1, -1}
#define IC_IN1(a) {(a), -1, -1, -1, -1, -1, -1, -1}
#define IC_IN2(a, b) {(a), (b), -1, -1, -1, -1, -1, -1}
#define IC_IN3(a, b, c) {(a), (b), (c), -1, -1, -1, -1, -1}
_Static_assert(IC_NIN == 8, "IC_IN_NONE and IC_IN1..3 list IC_NIN operands");

typedef struct ic_node {
    ic_op op;
    ic_val in[IC_NIN];
    ic_meta meta;        /* result meta; CAST: target dtype; views: target sizes */
    double num;          /* SCALAR: value */
    uint32_t dim_mask;   /* reductions: normalized (never 0 unless ndim == 0) */
    int keepdim;         /* reductions */
    int perm[IC_MAX_DIMS]; /* PERMUTE */
    int index;           /* INPUT: input number */
    int dim;             /* SLICE, CAT, INDEX_SELECT */
    int64_t start, step; /* SLICE */
    double num2;         /* ARANGE: step (num: start); EXTERN: alpha (num: beta) */
    int ext_kind;        /* EXTERN: ic_extern_kind */
    int nparams;         /* EXTERN */
    int64_t params[IC_EXT_MAXP];
    unsigned char nograd; /* training: passes no gradient to its operands (graph/requires_grad.c) */
    unsigned char leaf;   /* training: a leaf that requires grad (ic_grad_leaf; nograd too) */
    unsigned char dropped; /* RANDOM/DROPOUT_MASK: made by a traced call the caller abandoned
                            * (ic_graph_drop_draws): not run unless read */
    unsigned short recompute; /* training: made inside activation-checkpoint region number
                               * `recompute` (ic_set_recompute; 0: none): the backward
                               * recomputes it rather than reading it saved, where it can
                               * (graph/partition.c) */
    unsigned char sac;    /* training: a checkpoint region's policy for it (ic_set_checkpoint_policy):
                           * 0 none, 1 saved (computed by the forward), 2 recomputed */
    int64_t est[IC_MAX_DIMS]; /* the strides eager gives this value (graph/strides.c) */
} ic_node;

struct ic_graph {
    ic_node *nodes;
    int n, cap;
    ic_val *inputs;
    int ninputs, icap;
    ic_val *outputs;
    int noutputs, ocap;
    int nops;
    ic_errcode err;
    char msg[256];
    int64_t sym_hint[IC_MAX_SYMS]; /* hint value of each size symbol, 0: not used yet */
    int nograd_depth, nograd_from; /* training: ic_set_grad_enabled nesting, first node */
    int recompute_depth, recompute_from; /* training: ic_set_recompute nesting, first node, */
    int nregions;                        /* regions closed (their numbers: 1 + count % 65535) */
    struct ic_custom *custom;      /* training: torch.autograd.Function backward templates */
    int ncustom;                   /* (graph/custom_fn.c ic_custom_capture; freed with g) */
    int dflt;                      /* torch's default dtype + 1 (0: f32): wrapped floats,
                                    * int / int, float ops of ints */
    int cuda;                      /* the graph's tensors are CUDA ones: eager's layouts of
                                    * mixed-dtype pointwise ops differ (graph/strides.c) */
    int *into;                     /* ic_output_into requests: pairs (output, input) */
    int ninto;
    struct ic_rgmemo *rg;          /* ic_value_requires_grad's memo (graph/requires_grad.c;
                                    * freed with g, never shared by a copy) */
};
/* the dtype python floats and float ops of integers take (torch.get_default_dtype()) */
static inline ic_dtype ic_default_float(const ic_graph *g) { return g->dflt ? (ic_dtype)(g->dflt - 1) : IC_F32; }

bool ic_is_float(ic_dtype t);
bool ic_is_int(ic_dtype t); /* integral, not bool */
ic_dtype ic_promote(ic_dtype a, ic_dtype b);
/* torch.result_type over graph values (scalars weak, 0-dim tensors below dimensioned) */
ic_dtype ic_result_type(const ic_graph *g, const ic_val *v, int n);
int64_t ic_numel(const ic_meta *m);
void ic_contiguous_strides(ic_meta *m);
/* graph/linalg.c: result meta of a linear-algebra extern (kind >= IC_EXT_MATRIX_EXP) on
 * static metas; IC_OK, or the error code with the reason in why. */
ic_errcode ic_linalg_meta(ic_extern_kind kind, int nin, const ic_meta *const *m, int nparams, const int64_t *params,
                          ic_meta *out, char *why, size_t nwhy);
int ic_graph_verify(const ic_graph *g, char *msg, size_t n); /* 0 ok */
/* graph/strides.c: eager's strides of node v (append() calls it); ATen's computeStride;
 * the strides graph output n is allocated with (eager's, dense where they overlap); a
 * dense layout's dim order, outermost first (false: not dense) */
void ic_layout_infer(ic_graph *g, ic_val v);
bool ic_view_strides(int n, const int64_t *sz, const int64_t *st, int nn, const int64_t *nsz, int64_t *nst);
void ic_layout_output(const ic_node *n, int64_t *st);
bool ic_layout_order(const ic_meta *m, const int64_t *st, int *order);
/* graph/parse.c: the text of ic_graph_to_string back to a graph (NULL, msg: line and reason);
 * equality over every field the compiler reads (0 equal, else -1 and the first difference);
 * parse(print(g)) == g (0), the check that the printed cache key is complete */
IC_API ic_graph *ic_graph_parse(const char *text, char *msg, size_t n);
IC_API int ic_graph_equal(const ic_graph *a, const ic_graph *b, char *msg, size_t n);
IC_API int ic_graph_roundtrip(const ic_graph *g, char *msg, size_t n);
/* test hooks (compile.c), reached from Python through ctypes (tests/test_graph_text.py):
 * while on, every ic_compile checks ic_graph_roundtrip of its graph and counts the result;
 * returns the checks that passed, *bad those that failed and last the last failure */
IC_API void ic_test_graph_roundtrip(int on);
IC_API uint64_t ic_test_graph_roundtrip_stats(uint64_t *bad, char *last, size_t n);
/* compile.c: ic_compile_graph for IC_CUDA as PTX only, for sm (codegen/gpu_nvptx.c
 * ic_graph_to_ptx); the result has refs 1 */
ic_compiled *ic_compile_ptx_only(const ic_graph *g, const ic_options *opt, int sm, ic_err *err);
/* the n-th compilation from now (1: the next) fails with IC_EINTERNAL, an injected internal
 * fault (tests of the fault counter and explain()); 0 disables */
IC_API void ic_test_inject_fault(int n);
/* training: appends a node whose meta the caller inferred (graph.c); shape inference of the
 * backward externs (IC_EXT_CONV_BWD and later: graph/vjp_extern.c) */
ic_val ic_graph_append_node(ic_graph *g, const ic_node *n);
void ic_custom_free(ic_graph *g); /* graph/custom_fn.c: g's autograd.Function templates */
/* graph/requires_grad.c: the requires-grad memo of g dropped from value `from` on (the nodes
 * there were removed or their stop-gradient marks changed); freed */
void ic_rg_forget(ic_graph *g, int from);
void ic_rg_free(ic_graph *g);
IC_API uint64_t ic_test_need_steps(void); /* values walked for requires-grad answers (tests) */
ic_val ic_train_extern(ic_graph *g, ic_extern_kind kind, int nin, const ic_val *in, int nparams,
                       const int64_t *params, double beta);

/* Stencil options, on by default (TORCHC_STENCIL=0: off): padded values read by >= 4 windows
 * are stored once (sched.c) and GPU pointwise kernels with many per-lane scalar loads take
 * fewer lanes (gpu_nvptx.c). Smaller code and faster kernels: mobilenet_v3_large on the H200
 * (bf16, batch 32, one run) 2.39 -> 1.81 ms a call, first call 1.52 -> 0.96 s. */
static inline bool ic_stencil_opt(void) { return ic_config_int(IC_CFG_stencil) != 0; }

/* Appends to a malloc'd growing string. */
typedef struct ic_str {
    char *s;
    size_t n, cap;
    bool oom;
} ic_str;
void ic_str_printf(ic_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* symbolic sizes (graph/symdim.c): monomials coef * prod s_k^exp[k] */
static inline ic_dim ic_dim_k(int64_t k) { return (ic_dim){.coef = k}; }
bool ic_dim_is_static(ic_dim d);
bool ic_dim_eq(ic_dim a, ic_dim b);
ic_dim ic_dim_mul(ic_dim a, ic_dim b);            /* exponents saturate at 255 */
bool ic_dim_div(ic_dim a, ic_dim b, ic_dim *q);   /* exact monomial quotient a / b */
int64_t ic_dim_eval(ic_dim d, const int64_t *syms); /* -1 on overflow */
ic_dim ic_meta_dim(const ic_meta *m, int i);      /* dims[i], or the static sizes[i] */
int ic_dim_nsyms(ic_dim d);                       /* highest symbol used + 1 */
void ic_dim_print(ic_str *s, ic_dim d);

/* ---- compilation context: arena + error jump ----------------------------------------- */
/* Compile stages timed for TORCHC_DEBUG=time (compile.c prints them in this order). */
typedef enum ic_stage {
    IC_T_INIT,     /* code key (first call: creates the LLJIT and TargetMachine) */
    IC_T_GRAPH,    /* copy + verify the graph */
    IC_T_LOWER,    /* loops/lower.c */
    IC_T_SCHED,    /* sched/sched.c: realize, fuse */
    IC_T_FINAL,    /* finalize, buffers, verify, describe */
    IC_T_IRGEN,    /* codegen: LLVM IR built + verified */
    IC_T_OPT,      /* LLVM optimization pipeline */
    IC_T_EMIT,     /* LLVM codegen: the object file */
    IC_T_JIT,      /* ORC: link the object, look up the kernels; or load cached code */
    IC_T_COUNT
} ic_stage;
double ic_now_ms(void); /* monotonic clock */
/* a debug dump (TORCHC_DEBUG=graph, loops, kernels, llvm, ptx) to stderr as one piece: compile
   threads dump concurrently (a training graph's backward compiles beside its forward), and glibc
   writes an fprintf past 8 KiB to unbuffered stderr in unlocked chunks, so two dumps interleaved
   mid-line. Formats first, then writes under one process-wide lock. */
void ic_debug_dump(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* writes all n bytes to fd (short writes and EINTR retried): 0, or -1 on an error (runtime/diskcache.c) */
int ic_write_all(int fd, const void *buf, size_t n);

typedef struct ic_chunk ic_chunk;
typedef struct ic_ctx ic_ctx;
typedef struct ic_marks { /* ic_marks_begin */
    uint32_t *st;         /* per id: the generation of the walk that marked it */
    uint32_t gen;
    int cap;
} ic_marks;

typedef int32_t ic_ix;  /* index expression */
typedef int32_t ic_ixv; /* tuple of index expressions */
typedef int32_t ic_xid; /* expression node */

/* Index expression: off + sum coeff_i * atom_i, atoms sorted by id.
 * Atom: a loop variable, or modidx(sub, div, mod) = (sub // div) % mod (mod 0: no %). */
enum { IX_VAR, IX_MODIDX };
typedef struct ix_atom {
    int kind;
    int32_t var;
    ic_ix sub;
    int64_t div, mod;
} ix_atom;
typedef struct ix_term {
    int64_t coeff;
    int32_t atom;
} ix_term;
typedef struct ix_sum {
    int64_t off;
    int32_t n, first; /* terms[first .. first+n) */
} ix_sum;

/* Expression DAG node kinds. */
enum {
    X_CONST,  /* cval of dtype */
    X_LOAD,   /* per-value IR and sched: value `buf` at tuple `ixv` */
    X_LOADF,  /* kernel IR: buffer `buf` at flat offset `ix` */
    X_OP,     /* op(a, b, c) of unary/binary/where; result dtype; operands pre-cast */
    X_CAST,   /* a converted to dtype */
    X_ROWVAL, /* kernel IR: result of reduction item `a` of the current row */
    X_IXVAL,  /* the value of index expression `ix` (i64) */
    X_GATHER, /* per-value IR and sched: value `buf` at tuple `ix` whose dim `aux` is
                 replaced by the value of expression `a` (index_select) */
};
typedef struct ic_x {
    int kind;
    ic_dtype dtype;
    ic_op op;
    ic_xid a, b, c;
    int32_t buf;
    int32_t ix; /* ic_ixv for X_LOAD/X_GATHER, ic_ix for X_LOADF/X_IXVAL */
    int32_t aux; /* X_GATHER: dim; X_LOADF with a >= 0: size clamped to */
    double cval; /* X_CONST: value; X_LOADF with a >= 0: stride of the gathered index */
} ic_x;

/* Loop node: the loop-level form of one graph value. */
enum { L_INPUT, L_CONST, L_POINTWISE, L_REDUCE, L_EXTERN /* a buffer, like an input */ };
typedef struct ic_lnode {
    int kind;
    int ndim;                    /* POINTWISE: output dims; REDUCE: input dims */
    int32_t var[IC_MAX_DIMS];    /* local index vars, -1 for size-1 dims (index 0) */
    int64_t size[IC_MAX_DIMS];
    uint32_t red_mask;           /* REDUCE: reduced input dims */
    ic_op red_op;                /* SUM / MEAN / AMAX / AMIN */
    ic_dtype acc;                /* REDUCE: accumulator dtype */
    int64_t red_count;           /* number of reduced elements (for MEAN) */
    ic_xid body;                 /* value (REDUCE: element fed to the reduction) */
    ic_xid body2;                /* ARGMAX/ARGMIN: the element's index (X_IXVAL), else -1 */
} ic_lnode;

static inline bool ic_is_arg(ic_op op) { return op == IC_OP_ARGMAX || op == IC_OP_ARGMIN; }

/* ---- kernels --------------------------------------------------------------------------- */
enum { IT_STORE, IT_REDUCE };
typedef struct ic_item {
    int kind;
    ic_val v;          /* graph value this item realizes */
    int pos;           /* timeline: 0 row block before pass 0, 2k+1 pass k, 2k+2 row after */
    bool inner;        /* iterates the inner vars */
    bool store;        /* result must be written to its buffer */
    ic_xid expr;       /* value (REDUCE: element) in kernel vars */
    ic_xid expr2;      /* ARGMAX/ARGMIN: index of the element, else -1 */
    bool arg_value;    /* GPU: an AMAX/AMIN run as its sibling's ARGMAX/ARGMIN (gpu_rows.c
                          gg_arg_values): the result is the picked element's value */
    ic_ixv out_ixv;    /* v's index tuple in kernel vars (matching reads) */
    ic_ix out_ix;      /* flat store offset (after finalize) */
    int buf;           /* buffer id (after planning), -1 if none */
    ic_op red_op;
    ic_dtype acc;      /* accumulator (argmax/argmin: of the value; the result is i64) */
    int64_t red_count;
    ic_dtype dtype;    /* stored dtype (graph dtype of v) */
    bool part;         /* one operand of a real cat v, stored into its slice of v (sched.c) */
    int32_t *fused;    /* graph values inlined into this item (incl. v) */
    int nfused;
} ic_item;

typedef struct ic_kernel {
    int id;
    /* frame: dims of the kernel's iteration shape, each a var or fixed 0 */
    int nf;
    int64_t fsize[IC_MAX_DIMS];
    int32_t fvar[IC_MAX_DIMS];   /* -1: size-1 dim */
    bool finner[IC_MAX_DIMS];
    bool has_red;
    ic_item *items;
    int nitems, cap;
    /* after finalize: loop vars (collapsed), outer then inner */
    int nouter, ninner;
    int32_t ovar[IC_MAX_DIMS], ivar[IC_MAX_DIMS];
    int64_t osize[IC_MAX_DIMS], isize[IC_MAX_DIMS];
    int64_t ntiles, tile;        /* tiling of the innermost var (pointwise kernels) */
    bool vec_outer;              /* lanes = 16 consecutive values of the last outer var */
    int64_t nob;                 /* > 0: pointwise 2-D blocking, blocks of IC_BLOCK_ROWS of the
                                    last outer var (x tiles of the inner var): transposes */
    bool split;                  /* one big row: pass 1 in ntiles parallel parts writing
                                    partial accumulators, then a combine kernel */
    int partial_buf;             /* split: buffer of ntiles x nitems 8-byte partials */
    int64_t nchunks;             /* vec_outer: chunks of the last outer var */
    int vo_unroll;               /* vec_outer: vectors of 16 lanes per chunk (1..16) */
    int64_t iters;               /* outer iterations = prod(osize) * ntiles */
    int64_t work;                /* elements touched per call (parallel heuristic) */
    int npos;                    /* positions used: 0 .. npos-1 */
    char name[48];
    bool is_ext;                 /* an extern call of value ext_v: no items, no loops */
    ic_val ext_v;
} ic_kernel;

typedef struct ic_buffer {
    int kind;     /* 0 input, 1 output, 2 intermediate */
    int index;    /* input / output number */
    ic_val v;
    ic_dtype dtype;
    int64_t nbytes;
    int64_t offset;   /* intermediates: offset in the workspace */
    int64_t span;     /* elements addressable: 1 + max offset (0 when empty) */
    ic_meta meta;     /* strides used to address it */
    bool inplace;     /* an input that a graph output is stored into (sched/inplace.c) */
} ic_buffer;

/* Resolved at compile time, owned by ic_compiled. */
typedef void (*ic_kernel_fn)(void *const *bufs, int64_t start, int64_t end);

typedef struct ic_rkernel {
    ic_kernel_fn fn;     /* read with __atomic_load_n: a tier-up (tier.c) swaps it while it runs */
    int slot;            /* the fns slot of fn (ic_cpu_syms), -1 for an extern call */
    int64_t iters;
    int64_t work;
    int ext;             /* > 0: not a kernel, the extern call exts[ext - 1] */
    ic_dim diters, dwork; /* dynamic graphs: iters and work as monomials in the symbols */
} ic_rkernel;

/* One extern call of a compiled graph: what ic_extern_call needs, by buffer id. */
typedef struct ic_rext {
    ic_extern_kind kind;
    int nparams, nin;
    int64_t params[IC_EXT_MAXP];
    double beta, alpha;
    int in_buf[IC_NIN], out_buf;
    ic_meta in_meta[IC_NIN], out_meta;
    void *_Atomic lt;    /* CUDA GEMMs: the cuBLASLt plan (runtime/cublaslt.c), made at the first run */
    void *_Atomic dnn;   /* CUDA convs: the cuDNN plan (runtime/cudnn.c) */
} ic_rext;

struct ic_compiled {
    int ninputs, noutputs;
    ic_meta *out_meta;
    int nbufs;
    int64_t ws_size;
    int64_t *buf_offset; /* per buffer: -1 input/output, else workspace offset */
    int *buf_index;      /* per buffer: input/output number */
    int *buf_kind;
    int nkernels;      /* scheduled kernels (ic_compiled_num_kernels) */
    int nrun;          /* runtime kernels: split kernels add a combine step */
    ic_rkernel *kernels;
    char *describe;
    void *jit_rt;        /* jit.c handle of the loaded code (shared by key) */
    void *jit_rt0;       /* tiered: the tier-0 code, once jit_rt holds the full code */
    struct ic_tier *tier; /* tiered: the background job (tier.c), until it is done */
    _Atomic int refs;    /* owners: the caller of ic_compile, and the compile cache */
    void *_Atomic ws_cache; /* a workspace kept between runs (first touch is costly) */
    void *gpu;           /* IC_CUDA: ic_gpu (codegen/gpu.h), owned; NULL on the CPU */
    const struct ic_backend *backend; /* ic_backend.h: made it, runs it, frees its parts */
    int num_threads;
    int nexts;
    ic_rext *exts;
    int device, device_index; /* ic_device of the compilation */
    int nsyms;                       /* dynamic graphs: symbols used (0: static) */
    int64_t sym_hint[IC_MAX_SYMS];   /* ic_run on a dynamic graph runs at these */
    int *out_order;                  /* dynamic graphs: per output IC_MAX_DIMS dims, outermost
                                      * first, its strides dense in that order (eager's) */
    int nslots;                      /* dynamic graphs: workspace slots (bytes per slot */
    ic_dim *slot_dim;                /*   as monomials), slot of each buffer or -1 */
    int *buf_slot;
    int *out_into;                   /* per output: the input it was stored into, or -1 */
};

/* the GEMM epilogue of an extern kernel (driver_passes.c ic_gemm_epilogues) */
typedef struct ic_gemm_epi_plan {
    int consumer;   /* the kernel fused into the epilogue when the template computes it, -1: none */
    bool store_out; /* the product itself is still stored */
} ic_gemm_epi_plan;

struct ic_ctx {
    jmp_buf jb;
    ic_err *err;
    unsigned debug;
    ic_config cfg; /* every setting (ic_config.h), read once at the start of the compilation */
    ic_chunk *chunks;
    /* the graph being compiled (a private copy, outputs fixed up) */
    ic_graph *g;
    /* variables */
    int64_t *var_size;
    int nvars, var_cap;
    /* index expressions */
    ix_atom *atoms;
    int natoms, atom_cap;
    ix_term *terms;
    int nterms, term_cap;
    ix_sum *sums;
    int nsums, sum_cap;
    int32_t *ixv_data;   /* tuples: [n, ix0, ix1, ...] */
    int nixv_data, ixv_cap;
    int32_t *ixv_start;
    int nixv, ixv_start_cap;
    ic_x *xs;
    int nxs, xs_cap;
    struct ic_htab *h_atom, *h_sum, *h_ixv, *h_x;
    /* loops */
    ic_lnode *ln;       /* per graph value */
    /* sched */
    bool *realized;
    bool *catk;         /* per value: a cat stored operand by operand (sched.c: real cats) */
    int *users;
    bool *live;
    int *kernel_of;     /* per value: kernel index or -1 */
    int *item_of;       /* per value: item index in its kernel */
    ic_kernel *kernels;
    int nkernels, kcap;
    ic_buffer *bufs;
    int nbufs, bcap;
    int *buf_of;        /* per value: buffer id or -1 */
    int64_t ws_size;
    int num_threads;
    int opt_level;
    int autotune;               /* ic_options.autotune */
    double t_stage[IC_T_COUNT]; /* ms per stage (TORCHC_DEBUG=time) */
    bool keyed;                 /* code cached by key (in process and on disk) */
    int device;                 /* ic_device of the compilation (eager's semantics differ:
                                   loops/lower.c half_operand) */
    int ptx_sm;                 /* > 0: IC_CUDA code for this sm as PTX only, nothing loaded
                                   (ic_graph_to_ptx; no GPU needed) */
    int64_t *row_scratch;       /* per buffer: GPU row scratch at workspace + this, else -1
                                   (compile.c plan_row_scratch; NULL on the CPU) */
    bool gpu_stage_ok;          /* GPU target: rows may be staged in shared memory (sm >= 80) */
    ic_xid **lowp_need;         /* per kernel: values needed to f32 accuracy, -1 ended (driver_passes.c
                                   ic_lowp_analysis; NULL: all of them, or not a lowp backend) */
    uint8_t *lowp_map;          /*   one kernel's as a map over expressions (ic_lowp_map) */
    int lowp_ki;                /*   the kernel in lowp_map (-1: none) */
    ic_marks xmark;             /* visited expressions of one walk (ic_marks_begin) */
    struct ic_gemm_epi_plan *gemm_epi; /* per kernel: its GEMM epilogue (driver_passes.c
                                   ic_gemm_epilogues; NULL: not a gemm_epilogue backend) */
    int cg_parts;               /* modules compiled in parallel */
    int cg_dups;                /* kernels that repeat an earlier one (generated once) */
    int cg_lazy;                /* GPU fallback variants left to compile on first use */
    int cg_insts;               /* their LLVM instructions before optimization */
    double cpu_other;           /* ms of cpu on the other codegen threads */
    double cpu_probe;           /* ms of this thread's cpu a PTX-only compile spent on the lazy fallbacks'
                                 * PTX (TORCHC_GPU_LAZY=probe; a run compiles them on first need only) */
    ic_dkey key;                /* graph text, options, versions, host, build */
    void *memo; /* sched: inlining memo */
    void *cg_res; /* codegen: LLVM objects to release on error */
    struct ic_compiled *out;
    const struct ic_backend *backend; /* ic_backend.h: the target's code generator */
    uint32_t memo_cap;
    /* dynamic graphs: the private graph's sizes are evaluated at internal symbol hints
     * symH (distinct primes above IC_SYM_BAND), so every size or product that involves a
     * symbol is >= IC_SYM_BAND (it is "tainted": never a compile-time constant) and decodes
     * back to its monomial (ic_sym_decode). Vars of tainted size have an unknown range. */
    bool dyn;
    bool range_hint;               /* ix_range: tainted vars range up to their hint */
    int64_t symH[IC_MAX_SYMS];
    int nslots;                    /* buffers.c: workspace slots, their monomial byte */
    ic_dim *slot_dim;              /*   sizes, and the slot of each buffer (-1: none) */
    int *buf_slot;
    int *out_into;                 /* sched/inplace.c: per output, the input it is stored
                                      into (its buffer shared), or -1 */
    struct ic_ws_plan *ws_plan;    /* buffers.c: the placed blocks (static graphs; NULL: dynamic) */
};

#define IC_SYM_BAND ((int64_t)1 << 24)
#define IC_SYM_UNBOUNDED ((int64_t)1 << 40) /* range bound of a var of symbolic size */
static inline bool ic_tainted(const ic_ctx *c, int64_t v) {
    return c->dyn && (v >= IC_SYM_BAND || v <= -IC_SYM_BAND);
}
/* v (a size, count or byte size) back to coef * prod s_k^e_k; false if v is tainted but
 * not a monomial (a sum of symbolic terms). Static values decode to themselves. */
bool ic_sym_decode(const ic_ctx *c, int64_t v, ic_dim *out);

/* arena / errors (compile.c) */
void *ic_alloc(ic_ctx *c, size_t n);                 /* zeroed; longjmps on OOM */

/* Marks of one walk over ids 0..n-1 (expressions: c->xmark), cleared in
 * O(1) by a generation stamp per id: ic_marks_begin starts a walk, ic_marks_add(m, i) marks i
 * and is true the first time. A per-kernel array of c->nxs bytes, zeroed, made every kernel of
 * a graph cost the whole graph (densenet121's backward: 903 kernels x 91k expressions). One
 * walk at a time per set: a walker calls nothing that begins a walk of the same set. */
void ic_marks_begin(ic_ctx *c, ic_marks *m, int n);
static inline bool ic_marks_add(ic_marks *m, int i) {
    if (m->st[i] == m->gen) return false;
    m->st[i] = m->gen;
    return true;
}
static inline bool ic_marks_has(const ic_marks *m, int i) { return m->st[i] == m->gen; }
void *ic_grow(ic_ctx *c, void *p, int *cap, int need, size_t elem); /* arena realloc */
_Noreturn void ic_fail(ic_ctx *c, ic_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define IC_PUSH(c, arr, n, cap) \
    ((arr) = ic_grow((c), (arr), &(cap), (n) + 1, sizeof(*(arr))), &(arr)[(n)++])

/* index expressions (loops/ix.c) */
int32_t ic_new_var(ic_ctx *c, int64_t size);
ic_ix ix_const(ic_ctx *c, int64_t k);
ic_ix ix_var(ic_ctx *c, int32_t var); /* constant 0 when the var has size 1 */
ic_ix ix_add(ic_ctx *c, ic_ix a, ic_ix b);
ic_ix ix_scale(ic_ctx *c, ic_ix a, int64_t k);
ic_ix ix_div(ic_ctx *c, ic_ix a, int64_t d);
ic_ix ix_mod(ic_ctx *c, ic_ix a, int64_t m);
ic_ix ix_subst(ic_ctx *c, ic_ix a, const int32_t *from, const ic_ix *to, int n);
bool ix_is_const(ic_ctx *c, ic_ix a, int64_t *k);
void ix_range(ic_ctx *c, ic_ix a, int64_t *lo, int64_t *hi);
/* coefficient of `var` at the top level; *nonaffine set when var occurs inside an atom */
int64_t ix_coeff(ic_ctx *c, ic_ix a, int32_t var, bool *nonaffine);
bool ix_uses_var(ic_ctx *c, ic_ix a, int32_t var);
void ix_print(ic_ctx *c, ic_str *s, ic_ix a);
ic_ixv ixv_make(ic_ctx *c, int n, const ic_ix *ix);
int ixv_len(ic_ctx *c, ic_ixv t);
ic_ix ixv_get(ic_ctx *c, ic_ixv t, int i);

/* expressions (loops/expr.c) */
ic_xid x_const(ic_ctx *c, double v, ic_dtype t);
ic_xid x_load(ic_ctx *c, ic_val v, ic_ixv t, ic_dtype dt);
ic_xid x_loadf(ic_ctx *c, int buf, ic_ix off, ic_dtype dt);
ic_xid x_op(ic_ctx *c, ic_op op, ic_dtype t, ic_xid a, ic_xid b, ic_xid cc);
ic_xid x_cast(ic_ctx *c, ic_xid a, ic_dtype t);
ic_xid x_rowval(ic_ctx *c, int item, ic_dtype t);
ic_xid x_ixval(ic_ctx *c, ic_ix ix);
ic_xid x_gather(ic_ctx *c, ic_val v, ic_ixv t, int dim, ic_xid index, ic_dtype dt);
ic_xid x_gatherf(ic_ctx *c, int buf, ic_ix off, ic_xid index, int64_t stride, int64_t size, ic_dtype dt);
ic_xid x_intern(ic_ctx *c, const ic_x *x);
void x_print(ic_ctx *c, ic_str *s, ic_xid root);
/* used[b] |= 1 for every buffer the kernel expression x loads (X_LOADF), not looking through
 * row values; the expressions already visited are c->xmark's (a walk the caller began) */
void x_mark_bufs(ic_ctx *c, ic_xid x, int *used);
/* kernel ki's values needed to f32 accuracy (driver_passes.c ic_lowp_analysis) as a map over
 * expression ids (1: needed; 0: not, or not one of ki's), valid until a call for another
 * kernel; NULL: all are needed */
const uint8_t *ic_lowp_map(ic_ctx *c, int ki);

/* passes */
void ic_lower(ic_ctx *c);               /* loops/lower.c */
void ic_loops_print(ic_ctx *c, ic_str *s);
void ic_schedule(ic_ctx *c);            /* sched/sched.c */
void ic_finalize_kernels(ic_ctx *c);    /* sched/finalize.c */
/* sched/inplace.c: c->out_into (per output: the input whose buffer it is stored into, or -1)
 * from the graph's ic_output_into requests; those inputs' buffers marked inplace. Scheduled
 * kernels, needed[] values, the input buffers made. */
void ic_inplace_plan(ic_ctx *c, const bool *needed);
/* sched/extern_views.c: operand i of GEMM extern `ext` is a permutation of graph input
 * *input_index, read in place with the strides *view (no copy kernel) */
bool ic_extern_operand_alias(const ic_ctx *c, ic_val ext, int i, int *input_index, ic_meta *view);
/* sched/finalize.c: the kernel has no element (a zero-size loop; for a reduction, a zero-size
 * outer loop: an empty inner one still stores the identity) */
bool ic_kernel_empty(const ic_kernel *k);
/* the kernel's loop vars and sizes in flat order (outer, then inner; the last varies fastest)
 * into vars/sizes (2 * IC_MAX_DIMS entries); returns how many */
static inline int ic_kernel_loop_vars(const ic_kernel *k, int32_t *vars, int64_t *sizes) {
    int nv = 0;
    for (int i = 0; i < k->nouter; i++) vars[nv] = k->ovar[i], sizes[nv++] = k->osize[i];
    for (int i = 0; i < k->ninner; i++) vars[nv] = k->ivar[i], sizes[nv++] = k->isize[i];
    return nv;
}
/* graph/strides.c: a pointwise kernel storing a permuted graph output loops in its order */
void ic_layout_loop_order(ic_ctx *c, const ic_kernel *k, int32_t *vars, int64_t *sizes, int n);
void ic_plan_buffers(ic_ctx *c);        /* sched/buffers.c */
/* bytes of workspace that only kernel ki uses (GPU row scratch, split partials), placed where
 * no buffer or block live in ki lies (256-byte aligned; grows c->ws_size if none): the offset */
int64_t ic_ws_reserve(ic_ctx *c, int ki, int64_t bytes);
int64_t ic_ws_live_peak(const ic_ctx *c); /* most bytes of buffers live in one kernel; -1: dynamic */
char *ic_describe_kernels(ic_ctx *c, bool detail); /* malloc'd */
int ic_verify_kernels(ic_ctx *c, char *msg, size_t n); /* sched/verify.c; 0 ok */
int ic_verify_loops(ic_ctx *c, char *msg, size_t n);   /* loops/verify.c: after ic_lower; 0 ok */
int ic_verify_sched(ic_ctx *c, char *msg, size_t n);   /* loops/verify.c: after ic_schedule; 0 ok */
/* test hook (compile.c): called after each loop-IR pass ("lower", "schedule", "finalize",
 * "buffers"), before that pass's verifier; tests break the IR there (tests/c/test_parse.c) */
typedef void (*ic_pass_hook)(ic_ctx *c, const char *pass);
IC_API void ic_test_set_pass_hook(ic_pass_hook h);
/* test hook (support.c): the n-th arena allocation from now fails; -1 disables */
void ic_test_fail_alloc_after(long n);   /* sched/describe.c */
/* codegen/cpu_module.c (kernels emitted by cpu_llvm.c): code only; the driver (backends.c)
 * looks it up in the code caches and loads it. names[i] is the entry point of fns slot
 * slot[i] (fns[2k]: kernel k; fns[2k+1]: its combine kernel when split), of kernel kern[i];
 * named after c->key when keyed. */
#define IC_CG_PARTS 8 /* object files (LLVM modules) of one CPU compilation at most: 4 of cold kernels, 4 of hot ones */
typedef struct ic_cpu_syms {
    const char **names;
    int *slot, *kern;
    int n;
    char prefix[48];
} ic_cpu_syms;
void ic_cpu_symbols(ic_ctx *c, ic_cpu_syms *S);
/* Tiered code: a graph of cfg.cpu_tiers LLVM instructions or more (before optimization) is
 * first compiled quickly (tier 0: no loop passes, no code generator optimization) and run while
 * its full compile (tier 1, the same code an untiered compile makes) runs on a background
 * thread (tier.c), which swaps it in. tier0 code defines each symbol of ic_cpu_symbols with
 * its suffix appended (unique in the process: the same graph may be loaded twice at tier 0);
 * it is never shared by key nor cached on disk. */
typedef struct ic_cpu_tier0 {
    int nparts;                        /* 0: not tiered */
    char suffix[24];                   /* "_t<n>": set by the caller */
    void *bc[IC_CG_PARTS];             /* per object file: its LLVM IR as generated (malloc) */
    size_t bcn[IC_CG_PARTS];
    const char *passes[IC_CG_PARTS];   /* and the pipeline of its full compile (static text) */
} ic_cpu_tier0;
void ic_cpu_tier0_free(ic_cpu_tier0 *t);
/* the object files defining S's symbols (returns how many, <= IC_CG_PARTS), owned by
 * c->cg_res until ic_codegen_cleanup; tier (may be NULL: never tiered) filled when tiered */
int ic_codegen_cpu(ic_ctx *c, const ic_cpu_syms *S, const void **objs, size_t *sizes, ic_cpu_tier0 *tier);
/* tier 1 of one object file: its bitcode optimized and emitted (any thread); *obj malloc'd */
int ic_cpu_recompile(const void *bc, size_t n, const char *passes, void **obj, size_t *objn, char *msg, size_t msgn);
/* tier.c: the background compiles of tiered graphs */
typedef struct ic_tier ic_tier;
ic_tier *ic_tier_new(const ic_ctx *c, const ic_cpu_syms *S, ic_cpu_tier0 *t); /* takes t's bitcode; NULL: OOM */
void ic_tier_start(ic_compiled *out);  /* out->tier queued for its full compile (out complete) */
void ic_tier_detach(ic_compiled *out); /* out is being freed: its tier job swaps nothing in */
void ic_tier_stats(unsigned long long *tier0, unsigned long long *tier1, unsigned long long *failed);
void *ic_cpu_pack_objects(const void *const *objs, const size_t *sizes, int nobj, size_t *n); /* backends.c: a disk-cache blob (malloc) */
void ic_codegen_cleanup(ic_ctx *c);
const char *ic_cpu_pipeline(int opt_level); /* LLVM pass pipeline text (part of the code key) */
/* runtime/jit.c */
#define IC_SPLIT_PARTS 32
#define IC_BLOCK_ROWS 32
#define IC_BLOCK_COLS 64
/* Code loading (see jit.c): returns a handle for ic_jit_remove (refcounted), NULL with msg. */
void *ic_jit_add_object(const void *const *objs, const size_t *sizes, int nobj, const ic_dkey *key,
                        const char *const *names, int n, void **addrs, char *msg, size_t msgn);
void *ic_jit_find(ic_dkey key, const char *const *names, int n, void **addrs); /* NULL: not loaded */
void ic_jit_remove(void *handle);
/* codegen/part.c: the host target (runtime/jit.c makes its JIT's TargetMachine with it) */
void *ic_host_tm_new(char *msg, size_t msgn); /* a new LLVMTargetMachineRef, the caller's */
void *ic_host_tm_fast(char *msg, size_t msgn, bool big_blocks); /* the same without optimization (tier 0), the caller's */
const char *ic_host_id(void); /* triple|cpu|features */
/* compile.c: runs extern call x (in: input addresses) through the registered handler */
int ic_run_extern(const ic_compiled *c, const ic_rext *x, void *const *in, void *out, void *stream,
                  ic_err *err);
/* runtime/pool.c */
void ic_parallel_for(ic_kernel_fn fn, void *const *bufs, int64_t n, int nthreads);

#endif
