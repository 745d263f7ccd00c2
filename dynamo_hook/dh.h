/* dh.h — public API of dynamo_hook/: the PEP 523 frame hook and capture front end.
 * Used only by csrc/ (the Python module). Prefix dh_. */
#ifndef DH_H
#define DH_H

#include <Python.h>

typedef struct dh_config {
    int fullgraph;       /* raise instead of falling back to eager */
    int dynamic;         /* -1: automatic (a dim that changes becomes dynamic), 0: static, 1: all dims of tensor arguments */
    int recompile_limit; /* entries per code object before running eagerly (default 8) */
} dh_config;

/* Module init: code-extra index, opcode tables, torch function table, skip list. */
int dh_init(PyObject *module);
/* Calls fn(*args, **kwargs) with the hook active on this thread. New ref or NULL. */
PyObject *dh_call(PyObject *fn, PyObject *args, PyObject *kwargs, const dh_config *cfg);
/* Marks a code object never to be hooked (torchc.disable). */
int dh_skip_code(PyObject *code);
/* Undoes dh_skip_code and the file skip list for this code object (allow_in_graph). */
int dh_allow_code(PyObject *code);
/* Drops every cache entry (torchc.reset()). */
void dh_reset(void);
/* Explain recording on this thread: start() begins a list, stop() returns it (new ref):
 * one dict per handled frame. */
int dh_explain_start(void);
PyObject *dh_explain_stop(void);
/* Global counters: dict of frames hooked, cache hits, compiles, fallbacks. */
PyObject *dh_stats(void);
/* The cache entry a call func(*args, **kwargs) would take (guards of its frame only), as an
 * opaque int; None when none passes or the call cannot be bound here (probe.c). New ref. */
PyObject *dh_probe(PyObject *func, PyObject *args, PyObject *kwargs);
/* torchc's own CUDA graph capture of a compiled call is running on this thread: guards on
 * torch.cuda.is_current_stream_capturing() answer as for a normal call (the capture records
 * what a normal call does). */
extern _Thread_local int dh_tl_cg_capture;
/* fn (a callable outside torch) computes the torch op `name` of the op table: traced as it. */
int dh_alias_op(PyObject *fn, const char *name);
/* The default recompile limit (torchc.config.recompile_limit). */
extern int dh_default_recompile_limit;

#endif
