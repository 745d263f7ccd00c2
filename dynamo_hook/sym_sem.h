/* sym_sem.h — semantics of the interpreter that follow eager's: autocast regions inside the
 * frame (autocast.c) and generators run lazily (sym_gen.c). Used by the interpreter's files. */
#ifndef DH_SYM_SEM_H
#define DH_SYM_SEM_H

#include "sym.h"

#define SYM_AUTOCAST_EXIT (-21) /* V_FUNC.op of an autocast region's __exit__: n = state before */

/* autocast.c */
int dh_autocast_is_class(PyObject *cls);
int dh_autocast_new(trace *t, PyObject *cls, const var *args, int nargs, PyObject *kwnames,
                    var *out);
int dh_autocast_enter(trace *t, const var *ctx, var *exit_fn, var *as_val); /* 1: not autocast */
int dh_autocast_exit(trace *t, const var *exit_fn, var *out);
PyObject *dh_autocast_recipe(PyObject *ctx); /* (cls, args) that enter an equal region */
int dh_autocast_query(trace *t, PyObject *fn, const var *args, int nargs, PyObject *kwnames,
                      var *out); /* 1: not an autocast query */

/* sym_gen.c: generators run lazily */
#define SYM_YIELD 3             /* a handler's return: the generator frame yielded *in->result */
#define SYM_GENCM_EXIT (-22)    /* V_FUNC.op of a contextmanager's __exit__: val = its generator */
struct sframe;
struct sframe *sym_gen_frame_new(trace *t);          /* zeroed, trace lifetime */
int sym_gen_new(trace *t, struct sframe *f, int cm, var *out);
int sym_gen_made_at(trace *t, const var *v); /* the top frame's pc that made generator v, or -1 */
int sym_gen_step(trace *t, const var *gv, var *out); /* 1 yielded, 0 returned, -1 failed */
int sym_gen_send(trace *t, const var *gv, const var *v, var *out); /* gen.send(v): 1 yielded, -1 */
int sym_gen_drain(trace *t, const var *gv, var **items, int *n);
int sym_gen_live(trace *t, int (*live)(trace *, const var *, int, int, int), int oid);
int sym_gen_unclosed(trace *t);
int sym_gen_cm_call(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out);
int sym_gen_cm_method(trace *t, const var *m, var *args, int nargs, PyObject *kwnames, var *out);
int sym_gen_cm_enter(trace *t, const var *cm, var *exit_fn, var *as_val); /* 1: not one */
int sym_gen_cm_exit(trace *t, const var *exit_fn, var *out);

#endif
