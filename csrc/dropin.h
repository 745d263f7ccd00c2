/* dropin.h — csrc/dropin.c: torch.compile's controls as torchc's compiled calls see them. */
#ifndef TC_DROPIN_H
#define TC_DROPIN_H
#include <Python.h>

/* Before each compiled call: follows torch.get_num_threads() (unless torchc.config set the
 * count) and returns torch.compiler.set_stance's current stance as a DH_STANCE_* code; -1 with
 * an exception set (MemoryError, KeyboardInterrupt while reading it). */
int tc_dropin_before_call(void);
/* Adds set_stance_globals, stance, set_log_hook, follow_torch_threads to torchc._C. */
int tc_dropin_init(PyObject *m);
#endif
