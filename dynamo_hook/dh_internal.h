/* dh_internal.h — shared structures of dynamo_hook/ (not a public header).
 *
 * Flow of one hooked call:
 *
 *   eval_frame.c  dh_eval_frame ── cache.c dh_cache_of(code) ── guards.c dh_guards_check
 *        │ miss                                                       │ hit
 *        ▼                                                            ▼
 *   symbolic.c dh_trace(frame) → graph + guards + output spec    entry_run.c dh_entry_run
 *        │                      (variables.c: torch calls → ic_*)      │
 *        ▼                                                            ▼
 *   inductor_c ic_compile ──────────────► cache entry ───────► result; frame popped
 *
 * Sources name where a guarded value comes from (a local, a global, an attribute of
 * another source); guards test what the graph was specialized on.
 */
#ifndef DH_INTERNAL_H
#define DH_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "aten_bridge.h"
#include "dh.h"
#include "ic.h"
#include "ic_config.h"
#include "ic_device.h"
#include "pyerr.h"

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030D0000
#error "dynamo_hook supports CPython 3.11 and 3.12"
#endif
#define DH_PY312 (PY_VERSION_HEX >= 0x030C0000)

/* A type's own namespace, borrowed (alive as long as the type). 3.12 keeps the dicts of static
 * builtin types (dict, object, ...) per interpreter: their tp_dict is NULL. */
static inline PyObject *dh_type_dict(PyTypeObject *tp) {
#if DH_PY312
    PyObject *d = PyType_GetDict(tp);
    Py_XDECREF(d);
    return d;
#else
    return tp->tp_dict;
#endif
}

/* ---- recursion (recursion.c) -------------------------------------------------------- */
int dh_stack_units(void);                          /* C stack room, in units; 0: exhausted */
#define DH_TRACE_STACK_UNITS 32                    /* room a capture needs (128 KB) */
int dh_rec_enter_eval(PyThreadState *ts);          /* before _PyEval_EvalFrameDefault: a delta */
void dh_rec_leave(PyThreadState *ts, int delta);
int dh_rec_enter_run(PyThreadState *ts, int *delta); /* a compiled run: -1 RecursionError */
void dh_rec_leave_run(PyThreadState *ts, int delta);
void dh_rec_same_level(PyThreadState *ts, int d); /* +1 / -1 around a call that continues a counted frame */

/* index inputs (module buffers of relative positions, one an attention block) bounds-checked
 * before each run of an entry, at most */

/* ---- sources ---------------------------------------------------------------------- */
typedef enum dh_srckind {
    DH_S_LOCAL,  /* frame localsplus[index] */
    DH_S_GLOBAL, /* f_globals[name], else f_builtins[name] */
    DH_S_ATTR,   /* getattr(sources[base], name), nn.Module-aware, never runs Python (index 1:
                  * the attribute of its class, 2: a full getattr, 3: sources[base] is a class:
                  * its attribute through the MRO) */
    DH_S_ITEM,   /* sources[base][index] for a tuple/list */
    DH_S_CLOSURE,/* function closure cell index (3.11/3.12 free vars) */
    DH_S_CONST,  /* name: an object held by the entry (a function found on a class), itself */
    DH_S_NEW,    /* name = (class, kwnames, argument sources): a new object, constructed when
                  * the guards resolve it (a construction hoisted out of the frame) */
    DH_S_NEXT,   /* the index-th item still to come of iterator sources[base] (obj_iter.c) */
    DH_S_CELL,   /* the cell object itself of closure index (base as DH_S_CLOSURE): a function
                  * made in the trace over a free variable shares it (sym_cells.c) */
    DH_S_CTXGET, /* sources[base].get(): the value of a ContextVar in the caller's context
                  * (one not set in the trace), read like any other input (variables.c) */
    DH_S_DEREF,  /* sources[base](): the referent of a weakref.ref (None once it died):
                  * nn.RNNBase's _flat_weight_refs (sym_call.c) */
    DH_S_INTT    /* a new 0-d int64 tensor holding the int sources[base] (an int seen changing:
                  * automatic dynamic ints, variables.c), on the CPU (index -1) or on CUDA
                  * device index; missing where the int is not an exact int of int64 range */
} dh_srckind;

/* ATTR of an nn.Module-like object (index 0): where the last resolution found the name, with
 * the version tags that make the same answer hold (guards.c module_getattr_cached). Borrowed
 * pointers, only read while the instance dict's tag is unchanged (it keeps them alive). */
typedef struct dh_attrcache {
    PyObject *dict;       /* the instance __dict__ */
    PyObject *sub[3];     /* its _parameters, _buffers, _modules (NULL: absent / not a dict) */
    uint64_t ver[4];      /* tags of dict, sub[0..2] */
    int where;            /* 0..2: found in sub[where]; 3: in the instance dict; -1: nothing cached */
    PyObject *last;       /* the value found (borrowed: alive while the tags of the dicts
                           * that hold and precede it are unchanged) */
} dh_attrcache;

typedef struct dh_source {
    dh_srckind kind;
    int base;       /* index of the base source (ATTR/ITEM) */
    Py_ssize_t index;
    PyObject *name; /* strong (ATTR/GLOBAL: str; CONST: the object) */
    dh_attrcache ac; /* ATTR, index 0 (zeroed by sym_source: where 0 with dict NULL never matches) */
} dh_source;

/* ---- guards ----------------------------------------------------------------------- */
typedef enum dh_guardkind {
    DH_G_TENSOR,    /* exact tensor type + dtype/device/shape/stride/requires_grad */
    DH_G_ID,        /* identity: weakref (or strong ref when not weakrefable) */
    DH_G_CONST,     /* exact type and == value (int, float, bool, str, None, tuple) */
    DH_G_TYPE,      /* exact type */
    DH_G_GRAD_MODE, /* torch.is_grad_enabled() == value */
    DH_G_DEFAULT_DTYPE, /* torch.get_default_dtype() == value */
    DH_G_SAMEOBJ,      /* obj = (sources, first): values[sources[i]] is values[sources[first[i]]]
                        * and no earlier one (objects type-guarded: their aliasing as traced) */
    DH_G_KEY,          /* (obj in values[src]) == value for a dict (subclass), or for an
                        * object's instance __dict__ */
    DH_G_CALLEQ,       /* obj = (fn, args, result): fn(*args) == result, same type */
    DH_G_CALL,         /* bool(obj()) == value: a process-state predicate answered while tracing
                        * (torch.cuda.is_current_stream_capturing) */
    DH_G_LEN,          /* len(value) == value */
    DH_G_ALIAS,        /* values[src] is values[value]: the same tensor passed twice */
    DH_G_DISTINCT,     /* obj = (argument sources, mutated sources, input sources): the
                        * arguments are distinct objects and no mutated input overlaps another */
    DH_G_AUTOCAST,     /* tc_autocast_state() == value (CPU and CUDA enabled + dtype) */
    DH_G_TFM_STACK,    /* dh_tfm_state() == value: the TorchFunctionMode stack around the call */
    DH_G_ITERLEN,      /* items left in an iterator: == value (value >= 0), >= -value (< 0) */
    DH_G_HASATTR,      /* hasattr(values[src], obj) == value, by the real getattr (an object
                        * whose own __getattribute__/__getattr__ decides) */
    DH_G_KEY_ORDER,    /* the keys of the dict values[src], in iteration order, are obj (a
                        * tuple): each the same object or equal and of the same type */
    DH_G_INTEXPR       /* bool(obj) == value, obj an expression of automatic dynamic ints
                        * (dh_intexpr_eval): a branch on one guards its outcome, not its value */
} dh_guardkind;

typedef struct dh_guard {
    dh_guardkind kind;
    int src;          /* source index (unused for GRAD_MODE) */
    int input_index;  /* TENSOR: graph input index, or -1 */
    PyObject *obj;    /* ID: weakref or strong; CONST: value; TYPE: type (all strong) */
    int weak;         /* ID: obj is a weakref */
    int value;        /* GRAD_MODE */
    tc_meta meta;     /* TENSOR */
    int dyn;          /* TENSOR: some dims are symbolic (contiguity is checked instead of strides) */
    signed char sym[TC_MAX_DIMS]; /* TENSOR, dyn: symbol of each dim (its value is bound), -1 static */
    int lazy;         /* CONST or ID of a dict value not read (yet; nonzero: the instruction that
                       * wrapped it, symbolic.c): dropped from the entry (variables.c) */
    uint64_t tag;     /* KEY_ORDER of an exact dict: its version tag when the check last passed
                       * (0: none), a pass while unchanged (guards.c) */
} dh_guard;

/* ---- output spec: how the frame's return value is rebuilt -------------------------- */
typedef enum dh_outkind {
    DH_O_GRAPH, /* graph output index */
    DH_O_SOURCE,/* a guarded source value (an input tensor returned as is) */
    DH_O_CONST, /* a Python constant */
    DH_O_TUPLE, /* children follow */
    DH_O_LIST,
    DH_O_ITER,  /* iter(child tuple); count > 0: iter(child list) set to that index */
    DH_O_ATTR,  /* getattr(child, obj) */
    DH_O_BOUND, /* method obj bound to child */
    DH_O_DICT,  /* dict(zip(obj keys, children)) */
    DH_O_CALLM, /* child.name(*args), obj = (name, args): a view replayed on an input */
    DH_O_SYM,   /* a symbolic size as an int: obj = (coef, e0, e1, e2, e3), coef * prod s_k^e_k */
    DH_O_WRAP,  /* obj(child): a named tuple type (torch.return_types.max) around a tuple */
    DH_O_KWCALL,/* obj(**child): a record class called with its fields (a dict child) */
    DH_O_SAME   /* the object node `index` (a CALLM built before it) gave: a view seen from
                 * several places (a local and the stack at a break) is one object, as eager */
} dh_outkind;

enum { DH_BRK_NONE = 0, DH_BRK_CALL = 1, DH_BRK_JUMP = 2, DH_BRK_BINOP = 3, DH_BRK_STORE = 4, DH_BRK_SETATTR = 5,
       DH_BRK_WITH = 6, DH_BRK_CALL_WITH = 7 };

typedef struct dh_outspec {
    dh_outkind kind;
    int index;      /* GRAPH: output index; SOURCE: source index; TUPLE/LIST: first child */
    int count;      /* TUPLE/LIST: number of children; CALLM: the trace's object id (or 0; -1 - v: graph value v moved to eager's device, fold.c) */
    PyObject *obj;  /* CONST (strong) */
} dh_outspec;

/* Compile-time breakdown of one capture, ms (TORCHC_LOGS=perf, explain): ic_compile's parts
 * (ic_err) summed over the graphs compiled while capturing, and backend.c's FX export. The
 * capture itself is the rest of the entry's compile_ms. */
enum { DH_CT_LOOKUP, DH_CT_PASSES, DH_CT_CODEGEN, DH_CT_LOAD, DH_CT_EXPORT, DH_CT_COUNT };
extern _Thread_local double dh_tl_ctimes[DH_CT_COUNT];
extern _Thread_local int dh_tl_cache_hits;
void dh_note_compile(const ic_err *err); /* adds one ic_compile's parts (eval_frame.c) */
/* settings.c: dh_limit from the settings table (max_sources, inline_depth, max_outputs), read
 * at the start of each capture */
void dh_settings_read(void);

/* ---- cache entries ---------------------------------------------------------------- */
#define DH_DYN_LOCALS 64 /* locals (arguments) whose dims can be marked dynamic */
#define DH_DYN_ND2 0x80000000u /* dynmask flag: only tensors with >= 2 dims */
typedef struct dh_entry {
    struct dh_entry *next;
    int pins;               /* calls running this entry (its guards, kernels, graph break);
                             * reset() unlinks it and the last unpin frees it (under the GIL) */
    int unlinked;           /* off its cache list (reset): freed when pins reaches 0 */
    int fallback;           /* 1: run eagerly (capture failed for inputs like these) */
    char *reason;           /* why fallback (malloc'd) */
    int nsources;
    dh_source *sources;
    int nlive;              /* live != NULL: only these sources (ascending) are resolved by the
                             * guards; the others (dict items the trace never used, whose lazy
                             * guards were dropped) are read by nothing (variables.c
                             * sym_mark_unread) and their values[] slots are left unset */
    int *live;
    int nguards;
    dh_guard *guards;
    int ninputs;            /* graph inputs, each a source index */
    int *input_src;
    int nmut;               /* inputs updated in place: copy back after the kernels */
    int *mut_src;           /* source of the updated tensor */
    int *mut_from;          /* graph output index >= 0, or -1 - source index */
    unsigned char *mut_inplace; /* train_inplace_store.c: per update, 1: the kernels store it */
    int *mut_bumps;         /* per update: eager's in-place ops on the tensor (version bumps) */
    unsigned char *mut_mode; /* per update: DH_MUT_* (NULL: all plain) */
    int *out_into_src;      /* per graph output: the source of the input it is stored into, or -1
                             * (NULL: none) */
    int nidx;               /* index inputs checked against bounds before each run */
    int *idx_src;           /* (nidx each, malloc'd: freed with the entry) */
    int64_t *idx_bound;
    unsigned char *idx_gather; /* CUDA index tensors read only by gathers: checked on the device */
    int nchk;               /* CPU: graph outputs (int64 scalars) counting computed indices out of */
    int *chk_out;           /* range; one nonzero after the kernels: the frame runs eagerly */
    int nattrw;             /* module attribute writes: root is (result, values...) */
    int *attrw_src;
    PyObject **attrw_name;  /* strong */
    int nouts;              /* outspec nodes; node 0 is the root */
    dh_outspec *outs;
    ic_compiled *compiled;  /* NULL when the graph has no outputs */
    int nsyms;              /* dynamic shapes: symbols bound by the guards (0: static) */
    char *graph_text;       /* printable graph (malloc'd) */
    int op_count;
    int device_type;        /* TC_DEV_CPU / TC_DEV_CUDA: where the graph runs */
    int device_index;
    double compile_ms;
    uint64_t hits;
    /* graph break: root outspec is a tuple (fn/cond, args..., stack..., locals...) */
    int brk;                /* DH_BRK_* */
    int brk_nargs, brk_nstack, brk_nlocals, brk_jump_when;
    int brk_binop;          /* BINOP: BINARY_OP oparg */
    int brk_extern;         /* the split is an extern kernel (matmul, conv): not a break */
    PyObject *brk_kwnames;  /* strong or NULL */
    PyObject *resume[2];    /* [0]: after the call / jump not taken; [1]: jump taken */
    PyObject *exc_resume;   /* the instruction raised inside a try block: its handler runs
                             * (resume.c dh_make_exc_resume), the stack's first brk_exc_depth */
    int brk_exc_depth;
    PyObject *brk_with;     /* the with blocks around the instruction, entered around it
                             * (entry_run.c): ((stack position, class, args), ...) or NULL */
    char *brk_reason;
    char *where;            /* user file:line of the failure or break, innermost first (malloc'd) */
    char *hint;             /* explain's hint (a long loop unrolled into the graph), or NULL (malloc'd) */
    PyObject *train;        /* training: the autograd node's state (csrc/train.h), or NULL */
    PyObject *backend;      /* the dh_config backend it was captured for (strong), or NULL */
    PyObject *backend_fn;   /* backend.c: runs the graph in place of compiled (strong), or NULL */
    int backend_nout;       /* its outputs */
    int cfg_key;            /* dh_cfg_key of the dh_config it was captured under: an entry
                             * serves only calls compiled with the same fullgraph, dynamic and
                             * autotune (and backend, above) */
    double ctimes[DH_CT_COUNT]; /* compile-time breakdown of the capture that made it (ms) */
    int cache_hits;         /* its graphs answered by the in-memory compile cache */
} dh_entry;
/* How an in-place update of an input reaches autograd (train_inplace_store.c):
 *   PLAIN  copied back without autograd (no training, or made under no_grad, or nothing in it
 *          requires grad);
 *   NODE   a training graph's: the new value (an output of its own) is copied back before the
 *          autograd node is attached, which marks the tensor dirty (its history becomes the
 *          node's, gradients reach the old value through the backward graph). */
enum { DH_MUT_PLAIN = 0, DH_MUT_NODE = 1 };
/* train_inplace_store.c: 1 if eager's in-place updates of e's inputs may run now (autograd's
 * leaf and view checks pass); 0: the frame runs eagerly (and raises eager's error) */
int dh_inplace_allowed(const dh_entry *e, PyObject *const *values);
/* train_inplace_store.c: after the kernels, update i of e is finished: the tensor's version
 * bumped as eager's in-place ops would (stored by the kernels), or the value copied back. 0, or
 * -1 with an exception */
int dh_inplace_finish(const dh_entry *e, int i, PyObject *dst, PyObject *src);

typedef struct dh_cache {
    struct dh_cache *prev, *next; /* registry of all caches (for reset) */
    PyCodeObject *code;           /* borrowed: the cache dies with its code object */
    dh_entry *entries;            /* most recently used first */
    int nentries;
    int skip;                     /* never hook this code (file skip list, generator, ...) */
    int limit_hit;                /* recompile limit reached: eager from now on */
    int skip_failed;              /* skip set because captures kept failing the same way: a
                                   * fullgraph=True call raises instead of running eagerly */
    int max_sources;              /* most sources of any entry (guard buffers size) */
    int disabled;                 /* torchc.disable: never captured, never inlined */
    int import_system;            /* code of the import system (importlib's frozen bootstrap):
                                   * what an import runs (module bodies, the functions they call)
                                   * runs unhooked, as torch.compiler.disable's callees */
    int modtype;                  /* nn.Modules type-guarded (instances share entries): set at the
                                   * first trace of a frame below the compiled call's first one,
                                   * or when another instance of a class an entry pinned came */
    char *skip_reason;
    uint32_t dynmask[DH_DYN_LOCALS]; /* automatic dynamic shapes: per local, dims seen changing */
    PyObject *dynints;            /* automatic dynamic ints: a set of the sources (dh_source_str)
                                   * of ints seen changing (a guard failed on a new value), read as
                                   * graph inputs by the next traces (variables.c); NULL: none */
} dh_cache;

/* The compile options an entry is keyed by (besides its backend): fullgraph, dynamic
 * (-1/0/1) and autotune. An entry captured under other options never serves a call: a
 * fullgraph=False entry may hold a graph break or a fallback, a dynamic=True one symbols
 * where dynamic=False promises specialization. */
static inline int dh_cfg_key(const dh_config *cfg) {
    return (cfg->fullgraph ? 1 : 0) | ((cfg->dynamic + 1) & 3) << 1 | (cfg->autotune ? 1 : 0) << 3;
}

/* sideeffects.c: obj[:] = val (a list) or obj.clear(); obj.update(val) (a dict): a
 * container the trace updated, written back after the graph; 0, or -1 with an exception */
int dh_replay_container(PyObject *obj, PyObject *marker_name, PyObject *val);
/* obj_attrs.c: obj.name = val after the graph (val the deletion marker: del obj.name); a
 * class with a Python __setattr__ (not an nn.Module) had it inlined: object's store replays */
int dh_replay_attr(PyObject *obj, PyObject *name, PyObject *val);
/* backend.c: the graph as an FX GraphModule for cfg->backend: a callable (new ref), or NULL
 * with no error set when torchc compiles it itself, or NULL with an error */
PyObject *dh_backend_export(const ic_graph *g, PyObject *backend, int device_type, int device_index);
/* runs e->backend_fn on the entry's inputs: outs[0..nout) new refs; 0, or -1 with an error */
int dh_backend_run(const dh_entry *e, PyObject *const *values, PyObject **outs, int nout);

/* redirect.c: the function registered for code (borrowed) or NULL; the count of them;
 * fn called with a not-started frame's bound arguments (new ref or NULL) */
PyObject *dh_frame_redirect(PyCodeObject *code);
extern int dh_n_redirects;
PyObject *dh_call_with_frame_args(PyObject *fn, PyCodeObject *code, PyObject *const *locals);

/* eval_frame.c */
extern _Thread_local int dh_tl_busy;     /* capture/guards running: hook passes through */
extern _Thread_local int dh_tl_entry_frame; /* the frame being run/captured is the compiled function's own
                                            * (torchc.compile(fn)'s fn), not one entered from eager code */
/* ic_compile with the GIL released; on the main thread a signal handler's exception (Ctrl-C)
 * during it returns NULL at once with the exception set, *g handed to the compile (NULL). */
ic_compiled *dh_compile(ic_graph **g, const ic_options *opt, ic_err *err);
PyObject *dh_frame_function(void *frame); /* borrowed */

/* cache.c */
int dh_cache_init(void);
dh_cache *dh_cache_of(PyCodeObject *code); /* NULL with exception on failure */
void dh_entry_free(dh_entry *e);
void dh_cache_add(dh_cache *c, dh_entry *e);
void dh_cache_touch(dh_cache *c, dh_entry *prev, dh_entry *e);
void dh_cache_reset_all(void);
void dh_entry_unpin(dh_entry *e); /* frees an unlinked entry when its last run ends */
extern unsigned long dh_reset_epoch; /* bumped by every reset: cache lists walked may be stale */
int dh_cache_should_skip_file(PyCodeObject *code);
/* the code names locals / _getframe / currentframe: a graph break would run the rest in a
 * resume function whose frame holds other names, so such a frame is only captured whole */
int dh_code_reads_own_frame(PyCodeObject *code);
/* skipfiles.c: the file belongs to a third-party module in the skip list (utilities a call
 * only passes through: filelock, typing_extensions, tqdm, ...; TORCHC_SKIP_MODULES adds) */
int dh_skipfile_module(const char *path);

/* guards.c: values[] receives borrowed references for each source; 1 pass, 0 fail,
 * -1 error (exception set). */
int dh_guards_check(const dh_entry *e, PyObject *const *localsplus, PyObject *globals,
                    PyObject *builtins, PyObject *func, PyObject **values, void **data_ptrs);
/* The values[] of a check that passed take references of their own (the call's scratch
 * list) before Python code runs (a log hook) while the frame still reads them. */
void dh_guard_values_keep(const dh_entry *e, PyObject *const *values);
/* Same, binding the symbols of dynamic dims into symvals[IC_MAX_SYMS]. */
int dh_guards_check_sym(const dh_entry *e, PyObject *const *localsplus, PyObject *globals,
                        PyObject *builtins, PyObject *func, PyObject **values, void **data_ptrs,
                        int64_t *symvals);
/* Dims of local tensors that differ from the newest entry's guards (automatic dynamic):
 * ORed into c->dynmask; returns 1 when a new dim was marked. */
int dh_mark_dynamic(dh_cache *c, PyObject *const *localsplus, int nlocals);
/* Automatic dynamic ints: guard g of an entry of c failed on v; where g is an int's
 * CONSTANT_MATCH and v another int, the source is added to c->dynints (1), else 0; -1 error */
int dh_mark_dynamic_int(dh_cache *c, const dh_entry *e, const dh_guard *g, PyObject *v);
/* the source i of sources[] as the guards print it (L['x'].step), a new str or NULL */
PyObject *dh_source_str(const dh_source *sources, int i);
/* guards.c: DH_S_INTT's value: a new 0-d int64 tensor of n, on the CPU (where < 0) or CUDA
 * device where; kept by the call's scratch list (borrowed); NULL (no error): not one */
PyObject *dh_int_tensor(PyObject *n, Py_ssize_t where);
/* eval_frame.c: the cache's dynints while its frame is traced (borrowed; NULL: none;
 * Py_True: compile(dynamic=True), every int argument) */
extern _Thread_local PyObject *dh_tl_dynints;
PyObject *dh_source_resolve(dh_source *s, PyObject *const *values,
                            PyObject *const *localsplus, PyObject *globals,
                            PyObject *builtins, PyObject *func); /* borrowed, NULL: missing */
PyObject *dh_module_getattr(PyObject *obj, PyObject *name); /* new ref or NULL (no error) */
int dh_module_has_attr(PyObject *obj, PyObject *name);
void dh_scratch_keep(PyObject *v); /* steals v; alive until dh_scratch_clear */
void dh_scratch_clear(void);       /* drops what this call kept (above its base) */
Py_ssize_t dh_scratch_enter(void); /* a call's own part of the thread's list: the old base */
void dh_scratch_leave(Py_ssize_t old_base);
/* frame_slots.c: per-thread slots for a hooked frame's guard values and data pointers (off
 * the C stack); given back in the reverse order of taking */
typedef struct dh_slots_mark {
    void *chunk;
    size_t top;
} dh_slots_mark;
void **dh_slots_take(size_t n, dh_slots_mark *m); /* NULL: out of memory (no error set) */
void dh_slots_give(const dh_slots_mark *m);
int dh_code_is_disabled(PyCodeObject *code);
/* obj_iter.c: the k-th item still to come of a tuple/list/range iterator (new ref) or NULL;
 * after the graph, the iterator advanced by count */
PyObject *dh_iter_peek(PyObject *it, Py_ssize_t k);
Py_ssize_t dh_iter_left(PyObject *it); /* items left, or -1 */
int dh_replay_advance(PyObject *it, PyObject *count);
PyObject *dh_guards_describe(const dh_entry *e);             /* list of str */
PyObject *dh_guard_describe(const dh_entry *e, int i);       /* guard i's str */
/* A recompile whose cached entries were all captured under other compile options (or for
 * another backend) than cfg: "COMPILE_OPTIONS: ... compiled with ...; this call has ..."
 * (malloc'd, or NULL when out of memory; no Python error set) */
char *dh_options_mismatch(const dh_entry *e, const dh_config *cfg);
/* What differs between guard g and the value v it failed on ("dtype mismatch. expected f32,
 * actual f64"), malloc'd, or NULL (nothing to add, or no memory); no Python error set */
char *dh_guard_mismatch(const dh_guard *g, PyObject *v);
/* a, then b on a line of its own (both malloc'd or NULL; both are consumed) */
char *dh_reason_join(char *a, char *b);
void dh_guard_clear(dh_guard *g);
int dh_distinct_ok(PyObject *spec, PyObject *const *values); /* DH_G_DISTINCT's test */
/* DH_G_INTEXPR's expression, a tree of tuples: a Python int or float is a constant,
 * (DH_IX_SRC, i) the value of source i (an int, its exact type guarded before), (op, a, b)
 * op of two: DH_IX_ADD.. (BINARY_OP's oparg of + - * // %), DH_IX_CMP + cmp the comparison
 * cmp (Py_LT..Py_GE). Evaluated with
 * Python's own int arithmetic, as the frame computes it. New reference; NULL with an error
 * set when it raises. */
enum { DH_IX_SRC = -1, DH_IX_ADD = 0, DH_IX_FLOORDIV = 2, DH_IX_MUL = 5, DH_IX_MOD = 6, DH_IX_SUB = 10,
       DH_IX_CMP = 100 };
PyObject *dh_intexpr_eval(PyObject *x, PyObject *const *values, int depth);
PyObject *dh_intexpr_str(PyObject *x, const dh_source *sources, int depth); /* for explain */

/* symbolic.c: traces one frame. Returns a new entry (compiled, or fallback with a
 * reason) or NULL with a Python exception for internal errors. */
dh_entry *dh_trace_frame(PyCodeObject *code, PyObject *const *localsplus, PyObject *globals,
                         PyObject *builtins, PyObject *func, const dh_config *cfg,
                         const uint32_t *dynmask);
int dh_symbolic_init(void);

/* guards.c: the global state every specialization is guarded on (grad mode, default dtype,
 * autocast), as guard kinds and values; n entries written, at most DH_NSTATE. */
#define DH_NSTATE 4
int dh_global_state(dh_guardkind *kinds, int *values);
/* The thread's TorchFunctionMode stack as a guard value: 0 empty (or torch function
 * disabled); a lone torch.utils._device.DeviceContext (set_default_device, `with
 * torch.device(d)`): 1 cpu, 4 + i cuda:i ("cuda": the current device); -1 anything else (the call
 * runs eagerly: meta too, where a factory would break the graph and the rest run eagerly). dev (may be NULL): that mode's torch.device, a new reference. */
int dh_tfm_state(PyObject **dev);
void dh_tfm_reason(char *buf, size_t n); /* the fallback reason naming the active modes */
/* The autocast state the running trace was started under (0: off). */
extern _Thread_local int dh_tl_autocast;
/* 1 when the torch op `name` casts its inputs or outputs under autocast (an op of eager's
 * lower-precision, fp32 or promote lists, CPU or CUDA) */
int dh_autocast_op_affected(const char *name);

/* resume.c: the locals a break in this code passes on: a resume function's own stack slots
 * (unbound by its prologue) are dropped, its resume is built from the original code */
int dh_resume_base_nlocals(PyCodeObject *code, int nlocals);
/* resume.c: runs fn(*args) (the last len(kwnames) by keyword) inside a frame of the original
 * function at the break resume_proto continues from (its name, file, line and locals), so
 * what the call observes of frames is eager's. New ref. */
PyObject *dh_break_call(PyObject *resume_proto, PyObject *const *locals, int nlocals, PyObject *fn,
                        PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* guards.c: shared module entries. The compiled call's first frame is traced with its modules
 * identity-guarded; when another instance of the same class comes where an entry pinned one
 * (self, args[0] of a *args wrapper, a loop iterator's next block), the code's later traces
 * type-guard modules instead (their attributes, parameters and buffers are guarded sources
 * and graph inputs), so every instance shares one entry. A frame below the first one (a
 * callee its caller broke at, a resume function) type-guards from its first trace
 * (eval_frame.c), so the second of N blocks reuses the first one's entry. Sets c->modtype;
 * 1 when newly set. */
int dh_module_sharing_check(dh_cache *c, PyObject *const *localsplus, int nlocals);
/* the trace running now type-guards nn.Modules (c->modtype of its code) */
extern _Thread_local int dh_tl_modtype;

/* guards.c: f is torch.compiler.is_compiling or one of its aliases (True in captured code) */
int dh_is_compiling_fn(PyObject *f);
/* guards.c: mod.name of a module already imported (new reference), or NULL */
PyObject *dh_loaded_attr(const char *mod, const char *name);

/* entry execution (entry_run.c) */
extern _Thread_local int dh_tl_rerun_eager; /* dh_entry_run: run the frame eagerly instead */
PyObject *dh_entry_run(const dh_entry *e, PyObject *const *values, void *const *data_ptrs,
                       PyObject *func, const int64_t *symvals);
/* TORCHC_HOST_STATS (eval_frame.c): the time now (ns; 0 when off) and a hit's run phases added */
unsigned long long dh_host_now(void);
void dh_host_add(unsigned long long alloc, unsigned long long run, unsigned long long rest);

/* explain recording (eval_frame.c) */
void dh_explain_record(PyCodeObject *code, const dh_entry *e, const char *event);

#endif
