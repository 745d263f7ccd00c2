/* sym.h — the symbolic interpreter's values and trace state, shared by symbolic.c and the
 * sym_*.c files (the bytecode loop and its opcode handlers, sym_interp.h), variables.c
 * (wrapping Python values, sources, guards) and the ops_*.c files (torch calls lowered to
 * inductor_c graph builders, ops_internal.h). */
#ifndef DH_SYM_H
#define DH_SYM_H

#include "dh_internal.h"

#include <string.h>

/* Tracked values. Python objects in vars are borrowed from t->keep (owned there). */
typedef enum vkind {
    V_UNSET,  /* local not read yet (lazily wrapped from the frame) or unbound */
    V_NULL,   /* the NULL of PUSH_NULL / LOAD_GLOBAL / LOAD_ATTR method bit */
    V_TENSOR, /* graph value */
    V_CONST,  /* Python constant (int, float, bool, None, str, tuple, dtype, Size, ...) */
    V_SEQ,    /* tuple/list holding tracked values; obj: NULL, or a named tuple type
               * (torch.return_types.*: .values/.indices) */
    V_OBJ,    /* Python module or nn.Module instance (attribute access) */
    V_FUNC,   /* callable: torch op handler (op >= 0) or builtin/const callable (op < 0) */
    V_METHOD, /* bound method of a tracked value: self + name */
    V_ITER,   /* iterator over items (range/tuple/SEQ) */
    V_DICT,   /* dict: obj = tuple of constant keys, items = values */
    V_SYM,    /* symbolic int (a dynamic size): val indexes t->symv; obj = Py_NotImplemented */
    V_SUPER,  /* super(): obj = the class, items[0] = self */
    V_REC,    /* a ModelOutput made in the trace (records.c): obj = (class, field names),
               * items = field values (n), built for real at the output */
    V_GEN     /* a generator run lazily (sym_gen.c): val indexes t->gens; op 1: the
               * context manager a @contextlib.contextmanager function returns */
} vkind;

typedef struct var {
    vkind kind;
    int src;        /* source index or -1 */
    ic_val val;     /* TENSOR */
    int oid;        /* TENSOR: object id (aliases share it), 0: none */
    int op;         /* FUNC: torch op table index, or -1 */
    int is_list;    /* SEQ */
    int n;          /* SEQ / ITER: item count */
    int pos;        /* ITER: next item */
    PyObject *obj;  /* CONST value, OBJ object, FUNC callable, METHOD name (str) */
    struct var *items; /* SEQ/ITER items; METHOD: items[0] is self */
    PyObject *globals; /* FUNC made by MAKE_FUNCTION: the globals of the frame that made it */
    int dyn;        /* CONST int: 1 + its t->dynv entry (an int seen changing, or arithmetic on
                     * one: obj is this call's value, the graph computes it), 0: a plain one */
} var;



/* a value of the given kind, everything else zero, no source */
static inline var sym_var(vkind kind) {
    var v;
    memset(&v, 0, sizeof v);
    v.kind = kind;
    v.src = -1;
    return v;
}

/* The constant int k as an index into n items (negative: from the end): 1 with *at set, 0
 * when out of range, beyond a C long included (PyLong_AsLong's -1 and OverflowError there
 * would read as the last item), -1 an error other than the overflow */
static inline int sym_const_index(PyObject *k, int n, long *at) {
    int ovf = 0;
    long i = PyLong_AsLongAndOverflow(k, &ovf);
    if (i == -1 && PyErr_Occurred())
        return -1;
    if (ovf)
        return 0;
    if (i < 0)
        i += n;
    if (i < 0 || i >= n)
        return 0;
    *at = i;
    return 1;
}

/* A graph break recorded by the top frame: the instruction to run eagerly and the state
 * to hand to the resume function. */
typedef struct sym_break {
    int kind;           /* DH_BRK_NONE / CALL / JUMP / BINOP / STORE (fn[args[0]] = args[1]) /
                         * SETATTR (fn.<kwnames> = args[0], on a tensor) / WITH (BEFORE_WITH
                         * on fn: its exit and __enter__'s result pushed) / CALL_WITH (a CALL
                         * and the BEFORE_WITH after it on its result) */
    int binop;          /* BINOP: the BINARY_OP oparg */
    int pc_next;        /* resume here after the CALL, or when the jump is not taken */
    int pc_taken;       /* JUMP: resume here when taken */
    int jump_when;      /* JUMP: taken when bool(cond) == jump_when */
    int nstack;         /* stack items below the instruction's operands */
    int nargs;          /* CALL: values after the callable (keyword values last) */
    PyObject *kwnames;  /* CALL: borrowed from co_consts; SETATTR: the name (co_names) */
    struct var *stack;
    struct var *fn;     /* CALL: callable; JUMP: condition */
    struct var *args;
    struct var *locals;
    int nlocals;
    int exc_target;     /* the instruction inside a try block: its handler (-1: none), the */
    int exc_depth;      /* handler's stack depth and lasti flag (resume.c dh_make_exc_resume) */
    int exc_lasti;
    int nshare;         /* cells of the frame that a function made before the break closes
                         * over and the frame may assign after it: one real cell each, shared
                         * by the function and the resume frame (sym_output.c shared_cell) */
    struct { struct var *items; int k, slot; } share[8];
    PyObject *with;     /* the with blocks around the instruction: a tuple of (stack position of
                         * the exit, class, args) that enter an equal context (kept by the
                         * trace), or NULL (symbolic.c with_recipes) */
} sym_break;
#define SYM_USER_FUNCTION (-2) /* V_FUNC.op of a Python function: inlined when called */
#define SYM_MADE_FUNCTION (-3) /* V_FUNC.op of a MAKE_FUNCTION result: obj = code, items = closure */
#define SYM_CTX_EXIT (-4)      /* V_FUNC.op of a grad-mode context's __exit__ */
/* its .val: 0 no_grad/set_grad_enabled(False), 1 inference_mode; an enable_grad block: */
#define SYM_GRADCTX_NOOP 2     /*   where grad mode was on: the exit changes nothing */
#define SYM_GRADCTX_RESTORE 16 /*   inside no_grad blocks: RESTORE + their count, put back at the exit */
#define SYM_PREDICATE (-5)     /* V_FUNC.op of torch.compiler.is_compiling & co (sym_predicate) */
#define SYM_LAZY_ITER (-7)     /* V_ITER.op of an iterator passed in, read lazily (obj_iter.c) */
#define SYM_PARTIAL (-6)       /* V_FUNC.op of functools.partial(...) made in the trace (obj_func.c) */
#define SYM_CUSTOM_OP (-9)     /* V_FUNC.op of a custom op (torch.ops.ns.op, torch.library): ops_custom.c */
#define SYM_VMAP (-10)          /* V_FUNC.op of torch.vmap(f, in_dims, out_dims) made in the trace:
                                * items[0] f, items[1] in_dims, items[2] out_dims, items[3]
                                * randomness (sym_vmap.c; rebuilt at a break: sym_output.c) */
#define SYM_OWN_ITER (-8)      /* V_ITER.op of an iterator the frame holds (iter(), next()): its
                                * items array names it, copies rebound as it advances (obj_data.c) */
#define SYM_DICT_VIEW 3        /* V_DICT.op: obj.__dict__, read-only; globals: the object, pos: its
                                * source + 1 (obj_dictview.c) */
#define SYM_DICT_ORDERED 1     /* V_DICT.op: a collections.OrderedDict (obj_data.c) */
#define SYM_DICT_DEFAULT 2     /* V_DICT.op: a defaultdict; globals: its default_factory (kept),
                                * pos: the factory's V_FUNC.op */
#define SYM_DICT_COUNTER 4     /* V_DICT.op: a collections.Counter made in the trace (obj_data.c):
                                * a missing key reads 0; its methods and operators modelled */
#define SYM_DICT_PROXY 5       /* V_DICT.op: types.MappingProxyType(d) of a plain dict: shares d's
                                * items (rebound with d, so it stays live); reads only, a write
                                * or leaving the trace fails it (eager raises / a mappingproxy) */
/* loops told apart per trace for the unrolled-loop hint; a loop iterated this often into one
 * graph, with tensor ops in every iteration and this many in all, gets it (explain's Hints:
 * 70 fused adds compile quickly, a recurrence over hundreds of steps does not) */
#define SYM_MAX_LOOPS 8
#define SYM_LOOP_HINT_ITERS 64
#define SYM_LOOP_HINT_OPS 256
#define SYM_INLINE_DEPTH DH_INLINE_DEPTH_MAX /* frames[] size; the limit is dh_limit.inline_depth */

/* a ContextVar set in the trace: the values set, not reset yet (depth of them) */
typedef struct sym_ctxv {
    PyObject *cv;                     /* the ContextVar (identity-guarded) */
    int depth, cap;
    struct var *vals;                 /* cap of them (sym_alloc: trace lifetime) */
    PyObject **tokens;                /* stand-in tokens (kept), cap of them (sym_alloc'd vars' room) */
} sym_ctxv;

/* an attribute write (or a container write-back, a global store: name a marker tuple) */
typedef struct sym_attrw {
    int src;
    PyObject *obj;                    /* the object written (borrowed from keep) */
    PyObject *name;
    struct var *val;
} sym_attrw;

typedef struct trace {
    PyCodeObject *code;
    PyObject *const *localsplus;
    PyObject *globals, *builtins, *func;
    const dh_config *cfg;
    ic_graph *g;
    dh_source *src;
    int nsrc, capsrc;
    int *srcidx;      /* sym_source's hash index: source + 1 per slot, 0 empty (variables.c) */
    int capsrcidx;    /* slots, a power of two, at most half full */
    dh_guard *guards;
    int nguards, capguards;
    int nlazy;        /* guards with lazy set: a dict's values the trace has not read (variables.c) */
    int nlazymade;    /* lazy guards made so far */
    int inst_serial;  /* instructions dispatched (symbolic.c run_body), and the one whose handler */
    int cur_inst;     /* runs now (a lazy guard names the instruction that made it) */
    int *input_src;
    int *input_oid;   /* the tensor object of each graph input (in-place updates) */
    int ninputs, capinputs;
    PyObject *keep; /* list: owns every object a var points at */
    /* per-value facts */
    unsigned char *view_of_input; /* indexed by ic_val */
    PyObject **view_desc;         /* (base val, method name, args) per view value, borrowed */
    int capvals;
    /* tensor objects: aliases share an oid; in-place updates change obj_val[oid] */
    ic_val *obj_val;
    unsigned char *obj_aliased;   /* a view of / from this object exists */
    int *obj_root;                /* the object whose storage a view shares (itself: 0) */
    int nobj, capobj;
    int *obj_nmut;                /* in-place ops on each root object (train_inplace_store.c) */
    int capnmut;
    int upd_nograd_from;          /* graph values when an input that requires grad was first
                                   * updated under no_grad, + 1 (0: none) */
    struct sframe *frames[SYM_INLINE_DEPTH + 2]; /* frames being interpreted (live vars) */
    struct sframe *top_frame;         /* the frame hooked (sym_flow.c: its shared cells) */
    int nframes;
    var *srcvar;                      /* the tracked value of each source (capsrc of each) */
    PyObject **srcobj;                /* tensor sources: the object seen (borrowed) */
    unsigned char *srcdone;
    int depth;                        /* inlining depth */
    int in_gen;                       /* generator frames being run (side effects refused) */
    int in_map;                       /* map()/filter() calls run ahead of their consumer (obj_data.c):
                                       * dict and set updates refused too (sym_containers.c) */
    int nograd;                       /* no_grad()/inference_mode() blocks entered, not left */
    int infer_depth;                  /* inference_mode() blocks entered, not left */
    ic_val infer_from;                /* graph values when the outermost one was entered */
    PyObject *cur_globals;            /* globals of the frame being interpreted */
    int device_type, device_index;    /* of the tensor inputs (-1: none yet) */
    sym_break brk;                    /* set when the top frame stops at a graph break */
    /* with blocks of the top frame on Python context managers (a class's __enter__/__exit__,
     * a @contextmanager generator), traced symbolically: where each was entered (stack slot
     * of its exit, BEFORE_WITH pc). A break inside one retraces the frame breaking at the
     * outermost one's BEFORE_WITH instead (symbolic.c trace_once): its __enter__ runs eagerly
     * and the resume holds the real __exit__ (its handler calls it as eager's would) */
    struct { int slot, pc; } withpc[16];
    int nwithpc;
    int with_brk_pc;                  /* break at the top frame's BEFORE_WITH here (-1: none) */
    int with_retry_pc;                /* the BEFORE_WITH to retrace breaking at (-1: none) */
    char with_why[200];               /* the break inside the block that asked for it */
    struct sym_attrw *attrw;          /* attribute writes, replayed after the graph (grown
                                       * by sym_attrw_new, freed by sym_fx_free) */
    int nattrw, capattrw;
    /* instances of Python classes, type-guarded: their sources and the objects seen; which
     * of them are the same object is guarded too (DH_G_SAMEOBJ); grown by sym_tobj_add */
    int *tobj_src;
    PyObject **tobj;
    int ntobj, captobj;
    /* ContextVar.set/reset pairs inside the trace (transformers' output collector): the
     * values set, not applied; the trace fails where one is still set at its end */
    struct sym_ctxv *ctxv;            /* grown by the set (malloc'd, freed by sym_fx_free) */
    int nctxv, capctxv;
    /* sym_cells.c: closure items of made functions that are a real function's cell (a free
     * variable of the traced function, or of an inlined one reached through a source): the
     * cell object itself where the function leaves the trace (malloc'd, sym_fx_free) */
    struct sym_realcell { var *items; int k; int src; } *realcells;
    int nrealcells, caprealcells;
    PyObject *pending_exc;            /* a state predicate raised this (kept): the next
                                       * handler of the frames being traced catches it */
    PyObject *exc_cur;                /* the exception the traced frames' except clause is
                                       * handling (sys.exception(); kept), NULL: the caller's */
    PyObject *exc_ctxout;             /* the exceptions raised while exc_cur was NULL: their
                                       * __context__ is the caller's handled exception (a list
                                       * in keep, made at the first; sym_exc.c) */
    PyObject *exc_inexact;            /* exceptions raised with other args than eager's (its
                                       * message not known here: list in keep; sym_exc.c) */
    int nidx, capidx;                 /* index inputs to bounds-check before each run (grown by
                                       * sym_idx_add up to config max_index_inputs; malloc'd,
                                       * freed by sym_fx_free) */
    int *idx_src;
    int64_t *idx_bound;
    unsigned char *idx_gather;        /* read by a gather: CUDA kernels check it (wrap, trap) */
    /* computed index tensors whose bounds the trace can't prove (CPU): a graph value counting
     * the out-of-range elements of each, an extra graph output read after the kernels (the
     * frame then runs eagerly: eager raises) */
    ic_val *chk;
    int nchk, capchk;
    /* dynamic shapes: dims of local tensors marked dynamic get symbols (duck-sized: equal
     * sizes share one); fake: trace with other hint values (to verify no hint leaks) */
    const uint32_t *dynmask;
    int dyn_fake;
    int nsym;
    int64_t sym_real[IC_MAX_SYMS];
    ic_dim *symv;                     /* V_SYM values */
    int nsymv, capsymv;
    /* sideeffects.c: overwrites of var slots that other values share (dict/list rebinds),
     * undone when a call the top frame will run eagerly is abandoned (sym_fx_rollback) */
    struct sym_undo *undo;
    int nundo, capundo;
    void **gens;                      /* sym_gen.c: generators made in the trace (trace lifetime) */
    int ngens, capgens;
    const char *no_new_inputs;        /* set: reading a tensor not seen yet fails with this
                                       * reason (autograd_fn.c, tracing a backward) */
    int vm_depth;                     /* sym_vmap.c: vmap levels being traced */
    signed char *vb;                  /* batch axes of each graph value (vb_done of them known) */
    int vb_done, vb_cap;
    int vm_in_index;                  /* sym_vmap_index is indexing (its own call) */
    struct var tfm[8];                /* sym_tfm.c: TorchFunctionModes entered in the trace */
    int ntfm;
    int tfm_active;                   /* modes that torch calls dispatch through now (ntfm, or
                                       * fewer inside a mode's __torch_function__) */
    int tfm_n;                        /* graph values when the last dispatch returned */
    int tfm_top;                      /* ntfm when the top frame's instruction began */
    PyObject *devctx;                 /* the torch.device of a DeviceContext around the call
                                       * (dh_tfm_state; in keep), or NULL */
    /* automatic dynamic ints (variables.c): ints read from sources seen changing are CONST vars
     * whose equality guard is lazy (used, it specializes them), with a graph value (a 0-d int64
     * input, or + - * // % on them) that tensor arithmetic and write-backs read instead */
    struct sym_dynint {
        ic_val val;                   /* graph value, -1: not made yet (a source's input) */
        int src;                      /* the int's source (-1: computed) */
        uint64_t deps;                /* the dynv entries of the sources it is computed from */
        PyObject *expr;               /* it as an int expression of its sources (dh_intexpr_eval;
                                       * in keep), NULL: none (a branch on it specializes it) */
    } *dynv;
    int ndynv, capdynv;
    int dyn_inst;                     /* the instruction whose handler read its dynamic ints as
                                       * graph values (their guards stay lazy) */
    int nrangeg;                      /* INT_EXPR guards keeping computed dynamic ints in int64 */
    int dyn_defer;                    /* an inlined frame failed: the dynamic ints' guards wait for
                                       * a break of the top frame (variables.c sym_lazy_use_break) */
    /* FOR_ITER loops the trace iterated (each iteration traced again: unrolled into the
     * graph), by code and instruction: iterations and graph sizes at the first and the last
     * iteration's start (sym_flow.c); sym_output.c names the longest as explain's hint */
    struct sym_loop {
        const void *code;             /* (compared only) */
        int pc, iters, ops0, ops;
        char where[200];              /* file:line in fn */
    } loops[SYM_MAX_LOOPS];
    int nloops;
    char reason[300];
    char where[2048];                 /* file:line of the first failure, innermost first (sym_where) */
    int failed;
    int asked_compiling;              /* the trace answered torch.compiler.is_compiling() & co
                                       * (True here, False in eager): trace_once */
    long steps;
    int inst_n0;                      /* graph values when the current instruction began */
    int top_n0;                       /* the same for the top frame's current instruction: the
                                       * draws after it are dropped at a break (it reruns) */
    int *leaf_oid, capleaf;           /* tensors made leaves that require grad in the trace (malloc'd) */
    int nleaf;                        /* (x.requires_grad = True: train_step.c) */
    var *cxv;                         /* ops_complex.c: copies standing for eager's views into */
    int ncxv, capcxv;                 /* complex tensors with no replayable descriptor (.val) */
    int maug_pc;                      /* x[mask] op= v (sym_containers.c masked_aug): the */
    int maug_oid;                     /* STORE_SUBSCR that stores the full-size copy maug_oid */
    const void *maug_frame;           /* of frame maug_frame back as where(mask, copy, x) */
    int *ngleaf_oid, capngleaf;       /* tensors made to require grad with grad mode off (malloc'd): */
    int nngleaf;                      /* only their flag changes (train_step.c) */
    PyObject **hc;                    /* fold.c: the host constant of each graph value (kept), */
    unsigned char *hcflag;            /* or NULL; flags (a stand-in no graph op may read) */
    int caphc;
    int *fchain;                      /* fold.c: (first, last) graph values each fold made */
    int nfchain, capfchain;
    unsigned char *home;              /* fold.c: the device eager's tensor of each graph value is
                                       * on (HOME_*: tagged, or derived from its operands) */
    int caphome, nhome;               /* (derived up to nhome) */
    int fac_ok;                       /* call_op: a factory may be made on the CPU of a CUDA graph */
    int fac_home;                     /* the device it was made on (HOME_*), 0: the graph's */
    int fold_ran;                     /* the fold ran the op call_op builds: eager accepted its devices */
} trace;

/* fold.c: tensors built from constants only, computed by torch at capture time. The folds
 * return 1 (not folded: the caller goes on as before), 0 (*out set), 2 (run the handler, then
 * sym_fold_attach notes the constant beside its value), -1 (failed). */
typedef struct sym_fold {
    PyObject *res; /* the constant, between a fold's 2 and sym_fold_attach */
    ic_val first;  /* the graph's size before the handler's nodes (and the constants it reads) */
} sym_fold;
PyObject *sym_hconst(trace *t, const var *v); /* borrowed, or NULL */
int sym_fold_call(trace *t, PyObject *callable, const char *name, const var *self, const var *args, int nargs,
                  PyObject *kwnames, sym_fold *f, var *out);
/* nb: BINARY_OP's, 100 + Py_LT..Py_GE a comparison, 200 -a, 201 ~a (b: a None constant) */
int sym_fold_binary(trace *t, int nb, const var *a, const var *b, sym_fold *f, var *out);
int sym_fold_index(trace *t, const var *x, const var *k, sym_fold *f, var *out);
int sym_fold_setitem(trace *t, const var *x, const var *k, const var *v); /* x[k] = v on constants */
int sym_fold_attach(trace *t, sym_fold *f, const var *out);
void sym_fold_clear(sym_fold *f);
/* operands of an op that does not fold: stand-ins materialized (those on another device than
 * the graph's fail: eager's device error), a CPU 0-d constant of a CUDA graph only as the
 * scalar operand of an elementwise op (pointwise) as eager allows; 0, -1 failed */
int sym_fold_check(trace *t, var *args, int n, int pointwise);
/* the same over call_op's slots (NULL ones skipped): constants read by the graph become graph
 * values, and the devices of the tensors an op reads follow eager's rules (pointwise: a CPU 0-d
 * tensor may be an operand of a CUDA op; index: CPU index tensors index a CUDA tensor) */
int sym_fold_check_slots(trace *t, var **slots, int n, int pointwise);
enum { HOME_NEUTRAL = 1, HOME_CPU = 2, HOME_CUDA0 = 3 }; /* HOME_CUDA0 + i: cuda:i */
int sym_home(trace *t, ic_val v);           /* where eager's tensor of v lives (HOME_*) */
int sym_home_set(trace *t, ic_val v, int h); /* v's device tagged (0: derived) */
int sym_home_of(int device_type, int device_index);
int sym_home_off(trace *t, ic_val v);       /* v lives on another device than the graph's */
PyObject *sym_home_device(int h);           /* a torch.device of h (new reference) */
/* a stand-in read by the graph: a copy of a graph input holding its constant; 0, -1 failed */
int sym_fold_materialize(trace *t, var *v);
/* x.name of a constant tensor (x.T, x.device, ...) read from the constant (1: not folded) */
int sym_fold_attr(trace *t, const var *x, PyObject *name, var *out);
int sym_fold_finish(trace *t);  /* the end of the trace: no stand-in read by the graph */
/* 1: another object sharing oid's storage is a stand-in (its update is left to eager); else the
 * constants noted beside the storage's graph values are dropped (the update makes them stale) */
int sym_fold_shared(trace *t, int oid);
/* 1: the index is a constant whose values all lie in [0, bound) (no check needed) */
int sym_fold_in_range(trace *t, const var *index, int64_t bound);
/* v a graph output: 1 with *cst (borrowed) where the output is a clone of that constant each
 * call (no view of it lives on, contiguous), else 0 (v materialized: a graph value); -1 */
int sym_fold_output(trace *t, var *v, PyObject **cst);
int sym_fold_dead_ops(trace *t); /* nodes folds made that nothing reads (not in the op count) */
void sym_fold_free(trace *t);

/* sideeffects.c: what a call may change in the trace state, saved before the top frame
 * calls something and restored when the call becomes a graph break (the call then runs
 * eagerly: whatever its abandoned trace logged must not also be replayed by the graph) */
typedef struct sym_fx_mark {
    int nundo;
    int nattrw;
    void *attrw;        /* copy of t->attrw[0..nattrw) (malloc'd) */
    int nobj;
    ic_val *obj_val;    /* copy of t->obj_val[1..nobj] (malloc'd) */
    int nctxv;
    void *ctxv;         /* copy of t->ctxv (malloc'd) */
    int nograd;
    int nngleaf;        /* flags set under no_grad (train_step.c: only appended) */
    int nchk;           /* index checks (scalar_fits.c): the abandoned call's are dropped */
    int nguards, nsrc, ntobj; /* guards, sources, type-guarded objects (sym_fx_drop_guards) */
    int *lazy;          /* guards[i].lazy for i < nguards, where t->nlazy > 0 (malloc'd) */
    int valid;
} sym_fx_mark;
int sym_fx_save(trace *t, sym_fx_mark *m);    /* 0, or -1 (no memory: exception set) */
void sym_fx_rollback(trace *t, sym_fx_mark *m); /* back to m; frees m */
void sym_fx_drop(sym_fx_mark *m);             /* frees m */
/* after sym_fx_rollback at a call that becomes the top frame's break: the guards only the
 * abandoned call's trace needed are dropped (sideeffects.c) */
void sym_fx_drop_guards(trace *t, const sym_fx_mark *m);
/* *slot = *nv, journalled (undone by a rollback) */
void sym_fx_set(trace *t, var *slot, const var *nv);
void sym_fx_free(trace *t);
/* a new zeroed t->attrw slot (nattrw grown), NULL: no memory (exception set) */
sym_attrw *sym_attrw_new(trace *t);
int sym_tobj_add(trace *t, int src, PyObject *o); /* 0, or -1: no memory */
/* obj_tensorset.c: v's real object as a set member (a tensor read from a source: its source
 * identity-guarded), borrowed, or NULL (not one; t failed if a guard could not be made);
 * a set member back as a tracked value: 0, 1 (not a tensor), -1 */
PyObject *sym_set_member(trace *t, const var *v);
int sym_set_tensor_item(trace *t, PyObject *o, var *out);
void sym_fx_forget(trace *t, const void *mem, size_t size); /* slots in freed memory */
/* slots in [old, old + size), a block realloc moved to now: rebased (old is only compared) */
void sym_fx_moved(trace *t, uintptr_t old, size_t size, void *now);
/* c (a list or dict var) is about to be updated: when it was read from the inputs, its final
 * contents are written back after the graph (a t->attrw entry whose name is not a str) */
int sym_fx_container_write(trace *t, const var *c);
/* the source vars of written-back containers follow their updates (sym_rebind) */
void sym_fx_rebind_sources(trace *t, const var *old_items, const var *nv);
/* STORE_GLOBAL logged for replay; LOAD_GLOBAL of a name written in the trace (1: *out set) */
int sym_fx_store_global(trace *t, PyObject *globals, int func_src, int top, PyObject *name,
                        const var *val);
int sym_fx_global_read(trace *t, PyObject *globals, PyObject *name, var *out);
/* end of the trace: written containers reachable once only (else fails), aliasing pinned */
int sym_fx_containers_finish(trace *t);

/* variables.c */
int sym_fail(trace *t, const char *fmt, ...); /* records the first reason; returns -1 */
/* sym_fail, with type(arg) (arg NULL: type()) raised for the traced frames' except clauses
 * to catch (sym_exc.c): only for raises the trace decides from guarded state */
int sym_raise(trace *t, PyObject *type, PyObject *arg, const char *fmt, ...);
/* the top frame's call raised after the trace answered is_compiling(): no break, the frame
 * runs eagerly (sym_exc.c); -1 */
int sym_refuse_raise_break(trace *t);
/* sym_exc.c: an exception class made from its args alone (BaseException's __new__ and __init__:
 * ValueError, KeyError, a Python subclass defining neither): made in the trace of constants */
int sym_exc_simple_class(PyObject *f);
/* exc, made by the trace, is raised now: its __context__ is the exception being handled, as
 * CPython chains it (0, -1 failed) */
int sym_exc_raised(trace *t, PyObject *exc);
/* a pure builtin call on constants raised the error set: that exception (a builtin class made
 * from its args: eager's own message) raised in the trace for its except clauses, else a
 * plain failure with why; -1 */
int sym_raise_current(trace *t, const char *why);
/* str(o) / repr(o) are pure functions of constants: o an exception the trace made, of a type
 * whose __str__/__repr__ are a builtin exception's, its args plain constants */
int sym_exc_pure_text(trace *t, PyObject *o);
/* exc.name of an exception the trace made (args, __class__, __context__, __cause__,
 * __suppress_context__): 0 with *out, 1 not one of them, -1 failed */
int sym_exc_attr(trace *t, PyObject *exc, PyObject *name, var *out);
/* layout.c: eager's memory formats (the graph keeps eager's strides: inductor_c strides.c).
 * dh_memory_format: None -> IC_MF_PRESERVE, else torch.*_format / channels_last*;
 * dh_layout_copy: a copy of x in format fmt (clone, contiguous(), to(memory_format));
 * dh_layout_keep: an in-place update keeps the tensor's strides (*newval may become a copy) */
int dh_memory_format(trace *t, const var *v, int *fmt);
int dh_is_memory_format(PyObject *o); /* torch.channels_last & co.: constants */
int dh_layout_copy(trace *t, ic_val x, int fmt, var *out);
int dh_layout_keep(trace *t, ic_val old, ic_val *newval);
/* dh_layout_scalar_args: the result of op(a, b) made from a tensor and a Python number that
 * ATen keeps out of its TensorIterator (pow(Tensor, Scalar), clamp(Tensor, Scalar...)): a
 * unary op's layout of the tensor; pow(Scalar, Tensor): contiguous */
void dh_layout_scalar_args(trace *t, const var *a, const var *b, const var *out);
void sym_where(trace *t); /* symbolic.c: t->where from the frames being interpreted */
PyObject *sym_keep(trace *t, PyObject *o);    /* steals o into t->keep; borrowed result */
var *sym_alloc(trace *t, int n);              /* zeroed vars living as long as the trace */
int sym_method(trace *t, const var *self, PyObject *obj, int src, var *out); /* a V_METHOD */
int sym_source(trace *t, dh_srckind kind, int base, Py_ssize_t index, PyObject *name);
int sym_guard_key_order(trace *t, int src, PyObject *keys); /* variables.c */
int sym_guard_const(trace *t, int src, PyObject *value);
/* automatic dynamic ints (variables.c): v's graph value (a 0-d int64; an input made at the
 * first use) into *out: 1, 0 when v is not a dynamic int, -1 failed */
int sym_dynint_val(trace *t, const var *v, ic_val *out);
/* a + b, a - b, a * b, a // b, a % b (nb: BINARY_OP's base) of ints, one at least dynamic, as
 * a dynamic int: 1 with *out, 0 not one (specialized as before), -1 failed */
int sym_dynint_binary(trace *t, int nb, const var *a, const var *b, var *out);
/* a < b (cmp: Py_LT..Py_GE) of ints or floats, one at least a dynamic int, whose outcome is
 * guarded (DH_G_INTEXPR) instead of the dynamic ints' values: 1 with the bool in *out, 0 not
 * handled (the ints specialize as before), -1 failed. sym_dynint_truth: the truth r of v, a
 * dynamic int tested by a branch or `not`, guarded the same way: 1 guarded, 0 not. Only where
 * the instruction's result is that bool (COMPARE_OP, a conditional jump, UNARY_NOT): the ints'
 * own guards stay lazy for it. */
int sym_dynint_compare(trace *t, int cmp, const var *a, const var *b, var *out);
int sym_dynint_truth(trace *t, const var *v, int r);
/* Lazy guards of a dict's constant values (variables.c): a value's equality guard counts only
 * once the trace reads it. sym_lazy_use: v and everything it holds are read (all lazy guards
 * when it holds what can't be walked); sym_lazy_use_all: every lazy guard counts;
 * sym_lazy_drop: the ones never read leave the guard list (the entry's guards). */
void sym_lazy_use(trace *t, const var *v);
void sym_lazy_use_all(trace *t);
/* at a graph break of the top frame (SYM_LAZY_BREAK: t->brk recorded) or a failure of an
 * inlined frame (SYM_LAZY_FAILED_INNER): every lazy guard counts but the dynamic ints' that the
 * break state passes on as graph values (they stay dynamic in the resume function) */
#define SYM_LAZY_BREAK 0
#define SYM_LAZY_FAILED_INNER 1
void sym_lazy_use_break(trace *t, int how);
void sym_lazy_use_made_by(trace *t, int inst); /* those the instruction inst wrapped */
void sym_lazy_drop(trace *t);
void sym_mark_unread(trace *t, dh_entry *e); /* after the entry is complete */
/* a new zeroed guard (input_index -1) at the end of t->guards, the array grown as needed;
 * NULL: no memory (exception set) */
dh_guard *sym_new_guard(trace *t, dh_guardkind kind, int src);
int sym_default_dtype(trace *t); /* guarded; -1 on error */
int sym_guard_id(trace *t, int src, PyObject *obj);
/* v's identity guarded where the trace relies on it: a nested function (a closure) is
 * guarded by type and code only (variables.c), else a no-op. 0, or -1 failed */
int sym_pin_identity(trace *t, const var *v);
/* sym_is_real_object(v), the object then relied on as itself: its identity pinned
 * (sym_pin_identity); 0 where that fails (an error set) */
int sym_real_object_pinned(trace *t, const var *v);
int sym_guard_type(trace *t, int src, PyObject *obj); /* type(sources[src]) is type(obj) */
/* Wraps a Python value that came from source src (or -1: a constant needing no guard). */
int sym_wrap(trace *t, PyObject *o, int src, var *out);
int sym_const(trace *t, PyObject *o, var *out); /* steals o */
int sym_is_number(const var *v);
void sym_mark_view(trace *t, ic_val out, ic_val in);
/* out (a new object) shares in's storage: both aliased, out's root is in's root */
void sym_alias_objects(trace *t, int out_oid, int in_oid);
/* 1 when a live variable (any frame, input, attribute write) other than oid shares its storage */
int sym_alias_live(trace *t, int oid);
int sym_strides_may_overlap(int ndim, const int64_t *sizes, const int64_t *strides); /* 1: elements may share an address */
int sym_alias_same(trace *t, int a, int b); /* same storage root */
/* 2: oid is a tensor made to require grad under no_grad (train_step.c); 1: it shares that
 * one's data (a view: eager's flag is its base's; left to eager); 0: neither */
int sym_nograd_leaf(trace *t, int oid);
int sym_is_view_of_input(trace *t, ic_val v);
/* inference_mode() blocks (sym_call.c): values made in one are eager's inference tensors */
void sym_mark_inference(trace *t, ic_val from);
int sym_made_in_inference(trace *t, ic_val v);
void sym_mark_layout_open(trace *t, ic_val v);
int sym_layout_open(trace *t, ic_val v);
void sym_set_view_desc(trace *t, ic_val v, PyObject *desc);
int sym_check_graph(trace *t); /* fails the trace if the graph is in error */
/* training (variables.c): inputs that require grad under grad mode; a value's requires_grad */
int sym_train_req(trace *t, unsigned char *req);
/* train_inplace.c: an in-place update of object oid whose value eager keeps for backward */
int sym_train_inplace_check(trace *t, int oid);
/* train_inplace_store.c: one more in-place op on root object oid (eager bumps its version) */
int sym_inplace_note(trace *t, int oid);
/* 1 if the tensor of source src (a graph input) was updated in place with grad mode on */
int sym_inplace_under_grad(const trace *t, int src);
/* 1 if an op was recorded with grad mode on after an input that requires grad was updated
 * under no_grad (eager's later ops reach that leaf; the graph's new value of it passes none) */
int sym_inplace_nograd_then_grad(const trace *t);
/* train_step.c: x.grad of a source tensor x (a guarded source of its own) */
int sym_tensor_grad(trace *t, const var *x, PyObject *name, var *out);
int sym_tensor_setattr(trace *t, const var *a, PyObject *name, const var *b);
int sym_value_requires_grad(trace *t, ic_val v);
/* In-place updates: the latest version of a value, resolution of a var (recursively in
 * sequences), and recording that target now holds newval (cast to target's dtype). */
int sym_new_object(trace *t, ic_val v); /* a fresh tensor object holding v: its oid */
void sym_resolve(trace *t, var *v);
int sym_mutate(trace *t, const var *target, ic_val newval);
PyObject *sym_dtype_object(ic_dtype d);      /* borrowed torch.dtype */
int sym_dtype_from_object(PyObject *o);      /* ic_dtype or -1 */
int sym_variables_init(void);
int sym_is_nn_module(PyObject *o);
PyObject *sym_nn_module_type(void); /* variables.c: torch.nn.Module (borrowed), or NULL */
PyObject *sym_module_list_type(void); /* nn.ModuleList (borrowed) */
/* o is an nn.Sequential/ModuleList (or a subclass whose `slot` method is the container's) */
int sym_is_module_container(PyObject *o, const char *slot);
int sym_predicate(PyObject *o); /* the traced answer of a tracing predicate (0/1; 2: ask and
                                 * guard, sym_state_predicate), or -1 */
int sym_state_predicate(trace *t, PyObject *fn);
int sym_guard_key(trace *t, int src, PyObject *dict, PyObject *key); /* 1 in, 0 not, -1 failed */
int sym_guard_len(trace *t, int src, int n);   /* len(sources[src]) == n */
int sym_global_hooks_guard(trace *t);          /* no global module hooks, guarded */
PyObject *sym_os_environ(void); /* borrowed os.environ, or NULL */
/* fn(*args) of constants, its result guarded equal (os.environ.get); 0, -1 failed */
int sym_guarded_call(trace *t, PyObject *fn, PyObject *args, var *out); /* fn()'s truth, guarded; -1 failed */
int sym_is_grad_ctx(PyObject *o);
int sym_is_grad_ctx_type(PyObject *tp); /* torch.no_grad()/enable_grad()/inference_mode()/set_grad_enabled() */

/* symbolic ints (variables.c): d static -> a V_CONST int, else a V_SYM */
int sym_symint(trace *t, ic_dim d, var *out);
/* v an int constant or a V_SYM: its size expression (1), else 0 */
int sym_dim_of(trace *t, const var *v, ic_dim *d);
int sym_dim_static(ic_dim d);
/* ic_reshape that keeps symbolic dims symbolic (sizes are hint values) */
ic_val sym_reshape(trace *t, ic_val v, int n, const int64_t *sizes);

/* records.c */
int sym_is_record_type(PyObject *cls);
int sym_make_record(trace *t, PyObject *cls, var *args, int npos, PyObject *kwnames, var *out);
PyObject *sym_record_class(const var *r); /* borrowed */
PyObject *sym_record_maker(const var *r); /* what the output calls with the fields (new ref) */
int sym_record_items(trace *t, const var *r, var **items, int *n);
int sym_record_as_dict(trace *t, const var *r, var *out); /* **r, dict(r) */
int sym_record_view_dict(trace *t, const var *r, const char *mn, var *out); /* r.keys()/values()/items() */
int sym_record_attr(trace *t, const var *r, PyObject *name, var *out);
int sym_record_subscr(trace *t, const var *r, const var *k, var *out);
int sym_record_method(trace *t, const var *r, const char *mn, int nargs, var *out);
int sym_record_setattr(trace *t, const var *r, PyObject *name, const var *v);
int sym_record_setitem(trace *t, const var *r, const var *k, const var *v); /* r[k] = v */

/* obj_new.c: cls(*args) of a plain Python class: allocated by the guards (DH_S_NEW), its
 * __init__ inlined, its attribute writes replayed after the graph */
int sym_obj_plain_class(PyObject *cls);
int sym_slots_class(PyTypeObject *tp); /* obj_new.c: object + __slots__, no __dict__ */
int sym_obj_new(trace *t, PyObject *cls, var *args, int nargs, PyObject *kwnames, var *out);
/* copy.deepcopy(obj) of a plain object graph, hoisted to the guards (1: not such a call) */
int sym_obj_deepcopy(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
int sym_obj_copy(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
/* a class statement in the frame: builtins.__build_class__ called with a simple body */
int sym_is_build_class(PyObject *o);
int sym_obj_build_class(trace *t, var *args, int nargs, PyObject *kwnames, var *out);
/* o.name reads the trace can't answer from the stand-in object (o.__dict__ after writes): -1 failed */
int sym_obj_attr_special(trace *t, const var *o, PyObject *name);
/* obj_dictview.c: o.__dict__ as a read-only V_DICT (1: not such a read); checks on reads/writes */
int sym_obj_dict_view(trace *t, const var *o, PyObject *name, var *out);
int sym_obj_dict_view_generic(trace *t, const var *o, var *out); /* object.__getattribute__(o, "__dict__") */
int sym_dict_view_read(trace *t, const var *d);                  /* values read: all wrapped */
int sym_dict_view_read_key(trace *t, const var *d, PyObject *key); /* d[key] / d.get(key) */
int sym_dict_view_keys(trace *t, const var *d);                  /* keys only (in, iteration) */
int sym_dict_view_write(trace *t, const var *d);
int sym_is_lru_wrapper(PyObject *fn); /* ops_table.c: a functools.lru_cache wrapper */
/* sym_attr.c: d is a property, or of a subclass that keeps property's __get__ (torch.distributions'
 * constraints.dependent_property): reading it runs its fget */
int sym_is_property(PyObject *d);
/* sym_attr.c: super(cls, self)'s second argument is an instance or subclass of cls */
int sym_super_self(const var *self, PyObject *cls);
/* autograd_fn.c: fn is Function.apply's own function (1), not (0), an exception (-1) */
int dh_autograd_is_base_apply(PyObject *fn);
/* autograd_fn.c: Function.apply under grad mode, forward and backward captured (1: not one) */
int dh_autograd_function(trace *t, PyObject *cls, PyObject *apply, var *args, int nargs, PyObject *kwnames,
                         var *out);
/* autograd_fn.c: Function.apply with grad mode off, forward inlined (1: not one) */
int dh_autograd_function_nograd(trace *t, PyObject *cls, PyObject *apply, var *args, int nargs, PyObject *kwnames,
                                var *out);
/* autograd_fn.c: drops the logged writes to a Function's ctx that reaches nobody (see there) */
void sym_ctx_forget_writes(trace *t, const var *ctx, const var *res, int natt0, int nundo0);
int sym_is_nn_module_type(PyObject *cls); /* variables.c: cls subclasses nn.Module */
/* obj_proto.c: Python dunders of user objects inlined; 1: the class has none (not handled) */
int sym_obj_dunder(trace *t, const var *o, const char *name, var *args, int nargs, var *out);
int sym_obj_len(trace *t, const var *o, var *out);
/* type(cls).name(cls, *args) where cls is a class whose metaclass defines name in Python (1: not one) */
int sym_class_dunder(trace *t, const var *cls, const char *name, var *args, int nargs, var *out);
/* obj_proto.c: a op b (BINARY_OP's nb) / a cmp b where a or b is an instance of a Python class:
 * its dunders inlined in the interpreter's order (reflected, subclass first, NotImplemented);
 * 1: neither operand is one */
int sym_obj_binary(trace *t, int nb, const var *a, const var *b, var *out);
int sym_obj_compare(trace *t, int cmp, const var *a, const var *b, var *out);
int sym_obj_truth(trace *t, const var *o, int *truth);
int sym_obj_iter(trace *t, const var *o, var **items, int *n);
/* with o: o.__enter__() inlined into *entered, *exit the bound __exit__ (called by the
 * with-block's exit like any bound method); 1: not Python methods (the caller's rules) */
int sym_obj_enter(trace *t, const var *o, var *exit, var *entered);
/* obj_func.c: C library callables traced through torchc/_polyfills.py, functools.partial;
 * 1: not a polyfilled callable (the caller's own rules apply) */
int sym_obj_polyfill(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
/* the function torchc._polyfills.<name> inlined on args (positional): 0, or -1 (failed) */
int sym_obj_inline_named(trace *t, const char *name, var *args, int nargs, var *out);
/* ops_models.c: torch.cuda.is_available() & co, called now (1: not one of them) */
int sym_process_const_call(trace *t, PyObject *f, const var *args, int nargs, PyObject *kwnames, var *out);
/* func is torchc/_polyfills.py recompute_region (a checkpoint region: sym_call.c) */
int sym_obj_is_recompute_region(PyObject *func);
/* func is one the trace treats by its identity (a polyfilled function, recompute_region) */
int sym_obj_is_special_func(PyObject *func);
int sym_obj_compiling_query(trace *t); /* obj_func.c: is_compiling() asked where eager computes otherwise: -1 */
int sym_obj_polyfill_func(trace *t, PyObject *func, const var *self, var *args, int nargs,
                          PyObject *kwnames, var *out);
int sym_obj_call_polyfill(trace *t, const var *o, var *args, int nargs, PyObject *kwnames, var *out);
int sym_is_enum_member(PyObject *o);
int sym_enum_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out); /* E(value) */
/* obj_iter.c: iterators passed in (tuple/list/range), read lazily: wrap; take the next item
 * (1: *out set, 0: exhausted); take all that are left */
int sym_lazy_iter_type(PyObject *o);
int sym_lazy_iter_wrap(trace *t, PyObject *o, int src, var *out);
int sym_lazy_iter_next(trace *t, var *it, var *out);
int sym_lazy_iter_drain(trace *t, var *it, var **items, int *n); /* an enum.Enum member (a constant) */
int sym_obj_polyfill_attr(trace *t, PyObject *cls, PyObject *name, var *out);
int sym_partial_call(trace *t, const var *p, var *args, int nargs, PyObject *kwnames, var *out);
/* sym_vmap.c: torch.vmap(f, ...) (1: fn is not torch.vmap), a call of its result, and the
 * checks the rest of the trace makes on values inside a mapped function */
int sym_vmap_make(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
int sym_vmap_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
PyObject *sym_vmap_fn(void);   /* torch.vmap (borrowed) */
PyObject *sym_vmap_keys(void); /* the keywords a SYM_VMAP's items are torch.vmap's (borrowed) */
int sym_vmap_batched(trace *t, const var *v);   /* 1: a mapped tensor, 0: not, -1: failed */
int sym_vmap_gate(trace *t, const char *what, const var *args, int n);
int sym_vmap_align(trace *t, var **ops, int n); /* pointwise operands lined up (in place) */
int sym_vmap_align2(trace *t, var *a, var *b); /* the same for a binary operator's two */
/* sym_tfm.c: TorchFunctionMode subclasses entered in the trace */
int sym_tfm_builtin(trace *t, PyObject *f, var *args, int nargs, PyObject *kwnames, var *out); /* 1: not its */
int sym_tfm_dispatch(trace *t, PyObject *func, PyObject *types, const var *args, int npos, PyObject *kwnames,
                     var *out);
int sym_tfm_operator(trace *t, const char *opname, int reflected, const var *args, int n, var *out);
int sym_tfm_tensor_callable(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
PyObject *sym_tfm_property(PyObject *name);  /* new reference or NULL */
PyObject *sym_tfm_method(PyObject *name);    /* borrowed or NULL */
int sym_tfm_sync(trace *t);
int sym_tfm_default_device(trace *t, PyObject *f, var *out); /* 1: f is not it */
int sym_tfm_device_ctx(trace *t, const var *fn, PyObject *own, var *args, int nargs, PyObject *kwnames, var *out); /* 1: not its */
PyObject *sym_tfm_tensor_types(void);        /* (torch.Tensor,), borrowed */                  /* fails on values made around the mode */
void sym_tfm_made_here(trace *t);            /* the values made since are the tracer's own */
const char *sym_tfm_binop_name(int nb, char *buf, size_t n); /* operator module's name */
const char *sym_tfm_cmp_name(int cmp);
int sym_vmap_index(trace *t, const var *x, const var *k, var *out); /* 1: not a mapped index */

/* objects.c: lists made in the trace, mutated with identity (sym_rebind) */
int sym_list_method(trace *t, const var *l, const char *mn, var *args, int nargs, var *out);
int sym_list_store(trace *t, const var *l, const var *k, const var *v); /* v NULL: delete */
int sym_list_iadd(trace *t, const var *l, const var *other, var *out);
int sym_set_add(trace *t, var *s, const var *v, int update); /* SET_ADD / SET_UPDATE */
int sym_make_set(trace *t, int is_set, var *args, int nargs, var *out); /* set()/frozenset() */
/* sym_containers.c: sets made in the trace: a token naming the set (every copy shares it);
 * is s such a set; its mutating methods (1: not one of them) */
int sym_set_token(trace *t, var *s);
int sym_is_real_object(const var *v); /* symbolic.c: v stands for v->obj itself */
int sym_set_is_mutable(const var *s);
int sym_set_method(trace *t, const var *s, const char *mn, var *args, int nargs, var *out);
/* sym_containers.c: every copy of the list/dict named by old_items now holds nv (journalled) */
void sym_rebind(trace *t, const var *old_items, const var *nv);

/* ContextVar.get/set/reset on a tracked context variable (variables.c) */
int sym_ctxvar_call(trace *t, PyObject *cv, int cvsrc, const char *mn, var *args, int nargs, var *out);
int sym_ctxvar_pending(trace *t, const var *v); /* 1: a set not reset yet, or v is a token */

/* ops_table.c */
int sym_ops_init(void);
int sym_func_op(PyObject *callable);                 /* op index for torch.X / F.X, or -1 */
int sym_method_op(PyObject *name);                   /* op index for Tensor.X, or -1 */
int sym_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
/* sym_call.c: inline a Python function (fn_src: source of the function object; self: a
 * bound receiver or NULL) */
int sym_inline(trace *t, PyObject *func, int fn_src, const var *self, var *args, int nargs,
               PyObject *kwnames, var *out);
PyObject *dh_make_exc_resume(PyCodeObject *code, PyObject *globals, int handler, int depth, int lasti,
                             int nlocals, const unsigned char *unbound, const unsigned char *stack_null);
PyObject *dh_make_resume(PyCodeObject *code, PyObject *globals, int target_pc, int nlocals,
                         const unsigned char *unbound, int nstack, const unsigned char *stack_null,
                         PyObject *with); /* stack_null 3: a with block's exit, entered again from with */
int dh_resume_cell_passed(PyCodeObject *code, int i); /* resume.c: slot i of a resume code holds
                                                       * a cell shared with a function (unbound 2) */
int sym_grad_ctx_turns_on(PyObject *ctx); /* variables.c: 1 enable_grad()/set_grad_enabled(True), 0 other, -1 error */
int sym_is_inference_mode(PyObject *ctx);  /* variables.c: an inference_mode object */
int sym_is_set_grad_enabled(PyObject *ctx); /* variables.c: a set_grad_enabled object */
int sym_is_with_exit(const struct var *v); /* symbolic.c: an exit of a no_grad/inference_mode/autocast block */
int sym_inline_made(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
/* obj_boundmethod.c: m a bound method (with a source) called: __func__ inlined on __self__ */
int sym_call_bound_method(trace *t, const var *m, var *args, int nargs, PyObject *kwnames, var *out);
/* obj_setorder.c: the order eager adds a set's items, noted where the trace builds it (an
 * empty set; a set made of arg's items; s rebound from frozenset old by adding v (update: v's
 * items)); iterating a set in eager's order: 0 (items), 1 not a set, -1 failed */
int sym_set_note_empty(trace *t, var *s);
int sym_set_note_const(trace *t, var *s); /* a code constant: eager's object itself */
int sym_set_note_seq(trace *t, var *s, const var *arg);
int sym_set_note_added(trace *t, var *s, PyObject *old, const var *v, int update);
int sym_set_iter_items(trace *t, const var *v, var **items, int *n);
int sym_load_attr(trace *t, const var *o, PyObject *name, var *out); /* sym_attr.c */
/* sym_attr.c: hasattr/getattr-with-default answered "absent" for o.name: the absence guarded
 * (1), or not established (0: the caller keeps its failure), -1 error */
int sym_guard_attr_absent(trace *t, const var *o, PyObject *name);
/* sym_attr.c: the same for a tensor (1 absent, 2 present, both guarded; 0 not established) */
int sym_guard_tensor_attr(trace *t, const var *x, PyObject *name);
/* obj_attrs.c: attribute writes and deletions of objects with a source (STORE_ATTR,
 * DELETE_ATTR, setattr(), delattr()): a class's Python __setattr__/__delattr__ inlined, else
 * logged in t->attrw (a deletion: a value sym_attr_is_deleted names) and replayed after the
 * graph; object.__setattr__/__delattr__/__init__ called through the class or super() */
int sym_obj_setattr(trace *t, const var *o, PyObject *name, const var *v); /* 0, -1 failed */
int sym_obj_delattr(trace *t, const var *o, PyObject *name);
/* object.__setattr__(o, name, v) (the class's own __setattr__ not run): logged */
int sym_obj_plain_setattr(trace *t, const var *o, PyObject *name, const var *v);
int sym_attr_is_deleted(const var *v);
PyObject *sym_attr_deleted_marker(void); /* borrowed (kept for the process); NULL: error set */
/* found (a class attribute looked up for self, or NULL: through the class) one of object's
 * __setattr__/__delattr__/__init__/__getattribute__: *out callable (1: not one of them) */
int sym_obj_slot_attr(trace *t, PyObject *found, const var *self, var *out);
int sym_obj_slot_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
/* d.get/pop/setdefault/copy/update/__contains__ on a V_DICT (d: the dict at the call) */
int sym_dict_method(trace *t, const var *d, const char *mn, var *args, int nargs, var *out);
int sym_iter_items(trace *t, const var *v, var **items, int *n);
/* sym_containers.c: items[slice] of a constant slice, a new array of *m; NULL: failed */
var *sym_slice_items(trace *t, PyObject *slice, const var *items, int n, int *m);
int sym_tensor_iter_items(trace *t, const var *x, var **items, int *n); /* sym_iter_tensor.c: its rows */
int sym_inline_module(trace *t, const var *mod, var *args, int nargs, PyObject *kwnames, var *out);
/* ops_pyops.c */
int sym_binary(trace *t, int nb_op, const var *a, const var *b, var *out); /* BINARY_OP */
int sym_compare(trace *t, int cmp, const var *a, const var *b, var *out);
int sym_tensor_attr(trace *t, const var *x, PyObject *name, var *out);
int sym_neg(trace *t, const var *a, var *out);
int sym_tensor_index(trace *t, const var *x, const var *k, var *out); /* ops_index.c: x[k] */
/* (values, indices) as torch.return_types.<name> */
int sym_return_pair(trace *t, const char *name, ic_val values, ic_val indices, var *out);
/* setitem.c: x[k] = v as a functional update of x's object (fails: break at the store) */
int sym_tensor_setitem(trace *t, const var *x, const var *k, const var *v);
/* x[mask] = full, full a tensor of x's shape (x[mask] op= v, sym_containers.c): where(mask, full, x) */
int sym_tensor_setitem_masked_full(trace *t, const var *x, const var *k, const var *full);
ic_val sym_box_store(trace *t, ic_val base, PyObject *key, ic_val val); /* setitem.c */
int sym_alias_update(trace *t, int oid, ic_val newval);                   /* alias_fn.c */
int sym_alias_rebind(trace *t, const var *self, const var *view);         /* alias_fn.c */
int sym_eager_strides(trace *t, ic_val v, int64_t *st);                  /* ops_views.c */
int sym_complex_view_copy(trace *t, const var *v); /* ops_complex.c: a copy for a view, no descriptor */
/* ops_custom.c: o is an OpOverloadPacket/OpOverload/CustomOpDef; a call of one (a CUSTOM extern) */
int sym_is_custom_op(PyObject *o);
int sym_custom_op_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
/* ops_modto.c: nn.Module.to(...) converting nothing: the module (1: not that call) */
int sym_module_to_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
int sym_known_index(trace *t, const var *v, PyObject **out); /* ops_more.c: 1: a constant 0-d int tensor */
/* ops_index.c: index_select with a checked index: graph inputs are bounds-checked at run time (eager
 * runs when out of range), argmax/argmin/arange results are in range by construction. */
int sym_check_index(trace *t, const var *index, int64_t bound, int gather);
/* the input at source src is checked before each run (bound >= 0: every element in
 * [-bound, bound); -1: no zero element, an integer divisor); at most config max_index_inputs
 * a trace (more: the trace fails, naming it); 0, or -1 (out of memory) */
int sym_idx_add(trace *t, int src, int64_t bound, int gather);

/* obj_data.c: collections.OrderedDict/defaultdict/deque, iter/next, sorted/list.sort(key=),
 * dataclass Fields, torch.return_types passed in. The hooks return 1 where not theirs. */
int sym_data_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
int sym_ntuple_class(PyObject *cls); /* obj_data.c: a named tuple's class */
int sym_data_method(trace *t, const var *fn, var *args, int npos, PyObject *kwnames, var *out);
int sym_data_attr(trace *t, const var *o, PyObject *name, var *out);
int sym_data_wrap(trace *t, PyObject *o, int src, var *out);
PyObject *sym_data_seq_type(trace *t, const var *v); /* deque / partial(deque, maxlen=n) */
PyObject *sym_data_out_type(trace *t, const var *v); /* OrderedDict / partial(defaultdict, f) */
int sym_data_is_deque(const var *v);
PyObject *sym_data_dict_type(const var *v); /* obj_data.c: dict, OrderedDict, defaultdict, Counter (borrowed) */
/* obj_data.c: a Counter's operators (BINARY_OP nb, or 100 + a comparison); 1: neither is one */
int sym_counter_binary(trace *t, int nb, const var *a, const var *b, var *out);
int sym_data_is_defaultdict(PyObject *o);
int sym_iter_own(trace *t, var *it);                 /* it named by a fresh array, copies rebound */
void sym_iter_advanced(trace *t, const var *it);     /* FOR_ITER moved an owned iterator */
/* obj_dict.c: dict-subclass instances read from the frame (their storage, C methods) */
int sym_dsub_attr(trace *t, const var *o, PyObject *name, var *out);
int sym_dsub_super_attr(trace *t, PyObject *cls, const var *self, PyObject *name, var *out);
int sym_dsub_call(trace *t, const var *fn, var *args, int npos, PyObject *kwnames, var *out);
int sym_dsub_dunder(trace *t, const var *o, const char *name, var *args, int nargs, var *out);
int sym_dsub_len(trace *t, const var *o, Py_ssize_t *n); /* 1: not such an object */
/* its storage as a V_DICT (read only: **o, dict merges read it as eager's PyDict_Merge does
 * for a class keeping dict's __iter__); 1: not such an object */
int sym_dsub_contents(trace *t, const var *o, var *out);
int dh_replay_call(PyObject *obj, PyObject *m, PyObject *args); /* after the graph */
/* sym_containers.c: *d with d[k] = val (val NULL: deleted), not rebound; merge src into *dst */
int sym_dict_set(trace *t, var *d, PyObject *k, const var *val);
int sym_dict_merge(trace *t, var *dst, const var *src);
int sym_dict_find(trace *t, const var *d, PyObject *k); /* index of constant key k, -1 absent, -2 failed */
int sym_dict_or(trace *t, const var *d, const var *other, int inplace, var *out); /* d | o, d |= o */
int sym_iter_copies(trace *t, const var *items);      /* V_ITERs over items in the live frames */

#endif
