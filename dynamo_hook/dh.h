/* dh.h — public API of dynamo_hook/: the PEP 523 frame hook and capture front end.
 * Used only by csrc/ (the Python module). Prefix dh_. */
#ifndef DH_H
#define DH_H

#include <Python.h>

typedef struct dh_config {
    int fullgraph;       /* raise instead of falling back to eager */
    int dynamic;         /* -1: automatic (a dim that changes becomes dynamic), 0: static, 1: all dims of tensor arguments */
    int recompile_limit; /* entries per code object before running eagerly (default 8) */
    int autotune;        /* mode="max-autotune": ic_options.autotune of its graphs */
    PyObject *backend;   /* torchc.compile(backend=...): graphs go to it as FX (backend.c); NULL: torchc's */
} dh_config;

/* Module init: code-extra index, opcode tables, torch function table, skip list. */
int dh_init(PyObject *module);
/* Calls fn(*args, **kwargs) with the hook active on this thread. New ref or NULL. */
PyObject *dh_call(PyObject *fn, PyObject *args, PyObject *kwargs, const dh_config *cfg);
/* Marks a code object never to be hooked (torchc.disable). */
int dh_skip_code(PyObject *code);
int dh_skip_code_tree(PyObject *code); /* torch.compiler.disable: callees unhooked too */
/* Undoes dh_skip_code and the file skip list for this code object (allow_in_graph). */
int dh_allow_code(PyObject *code);
/* redirect.c: frames of `code` started inside torchc calls run fn(*their args) instead
 * (fn returning NotImplemented: the frame runs); fn None unregisters. 0 or -1. */
int dh_set_frame_redirect(PyObject *code, PyObject *fn);
/* Drops every cache entry (torchc.reset()). */
void dh_reset(void);
/* Explain recording on this thread: start() begins a list, stop() returns it (new ref):
 * one dict per handled frame. */
int dh_explain_start(void);
PyObject *dh_explain_stop(void);
/* Global counters: dict of frames hooked, cache hits, compiles, fallbacks. */
PyObject *dh_stats(void);
/* d[keys[i]] = vals[i] (Python ints) for i < n: 0, or -1 with an exception set */
int dh_dict_set_counts(PyObject *d, const char *const *keys, const unsigned long long *vals, int n);
/* The cache entry a call func(*args, **kwargs) would take (guards of its frame only), as an
 * opaque int; None when none passes or the call cannot be bound here (probe.c). cfg: the
 * options of the call (an entry captured under other options or for another backend never
 * serves it), or NULL for any entry. New ref. */
PyObject *dh_probe(PyObject *func, PyObject *args, PyObject *kwargs, const dh_config *cfg);
/* torchc's own CUDA graph capture of a compiled call is running on this thread: guards on
 * torch.cuda.is_current_stream_capturing() answer as for a normal call (the capture records
 * what a normal call does). */
extern _Thread_local int dh_tl_cg_capture;
/* fn (a callable outside torch) computes the torch op `name` of the op table: traced as it. */
int dh_alias_op(PyObject *fn, const char *name);
/* ops_custom.c: the body of a CUSTOM extern (torchc._custom_ops.run(key, ins, out, strides)),
 * the frame hook passing its frames through (the op is opaque, as in eager); new ref or NULL
 * with an exception. Under the GIL. */
PyObject *dh_custom_op_run(PyObject *key, PyObject *ins, PyObject *out, PyObject *strides);
/* The default recompile limit (torchc.config.recompile_limit). */
extern int dh_default_recompile_limit;
/* torchc/_logging.py: called with the record dict of every handled frame that is not a
 * cache hit (compiled, fallback); strong reference or NULL (csrc/dropin.c sets it). */
extern PyObject *dh_log_hook;
/* torchc/_logging.py: wants(artifact) -> bool, whether the hook will read the text of the
 * artifact ("recompiles": the recompile reason, "guards": the guard list) of a record; strong
 * or NULL (every text formatted). set_log_hook clears it. */
extern PyObject *dh_log_wants;
/* An object whose recompile_limit attribute is the default limit, read at cache misses
 * (torch._dynamo.config), or NULL: dh_default_recompile_limit. Strong. */
extern PyObject *dh_limit_source;
/* torch.compiler.set_stance, as csrc/dropin.c reads it at each compiled call. */
enum { DH_STANCE_DEFAULT = 0, DH_STANCE_FORCE_EAGER, DH_STANCE_EAGER_ON_RECOMPILE,
       DH_STANCE_FAIL_ON_RECOMPILE, DH_STANCE_EAGER_THEN_COMPILE };
extern _Thread_local int dh_tl_stance;
/* marks.c: dims of the argument tensors marked by torch._dynamo.mark_dynamic /
 * maybe_mark_dynamic are added to base (NULL: none), those marked by mark_static removed,
 * into out[DH_DYN_LOCALS (dh_internal.h)]. 1 when some argument carries a mark (use out). */
int dh_marks_apply(const uint32_t *base, PyObject *const *localsplus, int nlocals, uint32_t *out);
/* Limits of one trace (torchc.config.max_sources, inline_depth, max_outputs: rows of
 * inductor_c/ic_config.h, read into dh_limit at each capture): a trace that reaches one falls
 * back (or breaks) with the limit named in explain()'s reason. */
typedef struct dh_limits {
    int max_sources;  /* guarded values one entry may read (default 1 << 20) */
    int inline_depth; /* nested Python calls inlined (default 48, at most DH_INLINE_DEPTH_MAX) */
    int max_outputs;  /* graph outputs and in-place updated inputs (default 1 << 16) */
    long max_trace_steps; /* instructions one trace interprets (default 200000) */
    int max_dict_items;   /* items of a dict the trace models (default 1024) */
    int max_index_inputs; /* index/divisor inputs bounds-checked before a run (default 4096) */
    int rnn_unroll_steps; /* cell steps of one recurrent layer call unrolled (default 1024) */
    int max_unroll;       /* rows of a tensor iterated, views of one unbind/split (default 4096) */
    int max_cat_inputs;   /* tensors one cat/stack joins (default 4096) */
} dh_limits;
#define DH_INLINE_DEPTH_MAX 128
extern dh_limits dh_limit;

#endif
