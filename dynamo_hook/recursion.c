/* recursion.c — recursion depth of hooked frames: eager's limit, and never a C stack overflow.
 *
 * Eager Python calls Python without C recursion: 3.11 and 3.12 inline the callee's frame in
 * the running _PyEval_EvalFrameDefault, so a recursive function reaches sys.getrecursionlimit()
 * and uses no C stack per level. Under a PEP 523 hook every frame is evaluated from C
 * (_PyEval_Vector → dh_eval_frame → _PyEval_EvalFrameDefault), and a compiled level nests
 * dh_eval_frame → dh_entry_run → the graph-break call → dh_eval_frame: about 4 KB of C stack
 * a level. Two counts follow eager:
 *
 *  - Python levels: a compiled frame never enters the interpreter, so its run counts the one
 *    level eager's frame would (3.11: recursion_remaining through Py_EnterRecursiveCall; 3.12:
 *    py_recursion_remaining, which Py_EnterRecursiveCall no longer touches).
 *  - 3.12's C units: _PyEval_EvalFrameDefault charges PY_EVAL_C_STACK_UNITS (2) of the 1500
 *    in c_recursion_remaining each time it is entered from C, which the hook makes every
 *    frame: recursion under a compiled call stopped at ~550 levels (eager ~1000). The hook
 *    gives those units back, as far as the real C stack has room for them.
 *
 * The real C stack is the bound: the thread's stack (pthread_getattr_np, once per thread)
 * less DH_STACK_RESERVE, in units of DH_STACK_UNIT bytes. While a hooked call runs, the C
 * units CPython may count on (3.12 c_recursion_remaining; 3.11 recursion_remaining, which
 * counts Python frames too) are capped at the units the stack has left, so with any
 * sys.setrecursionlimit() the deepest recursion raises RecursionError instead of overflowing.
 */
#include "dh_internal.h"

#include <pthread.h>

/* kept free below the deepest hooked frame: error reporting, a capture's tracing, ATen calls */
#define DH_STACK_RESERVE (512 * 1024)
/* C stack per unit: CPython 3.12 allows 1500 units on the 8 MB default stack; a compiled
 * recursion level uses about 4 KB (one unit) */
#define DH_STACK_UNIT 4096

static _Thread_local uintptr_t tl_stack_lo; /* lowest usable address; 1: unknown */

static uintptr_t stack_lo(void) {
    if (tl_stack_lo)
        return tl_stack_lo;
    uintptr_t lo = 1;
#ifdef __linux__
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *addr = NULL;
        size_t size = 0;
        if (pthread_attr_getstack(&a, &addr, &size) == 0 && addr != NULL && size > 0)
            /* small thread stacks (threading.stack_size): a quarter kept free */
            lo = (uintptr_t)addr + (size > 4 * DH_STACK_RESERVE ? DH_STACK_RESERVE : size / 4);
        pthread_attr_destroy(&a);
    }
#endif
    tl_stack_lo = lo;
    return lo;
}

int dh_stack_units(void) {
    uintptr_t lo = stack_lo(), sp = (uintptr_t)__builtin_frame_address(0);
    if (lo == 1)
        return INT_MAX / 2; /* unknown bounds: CPython's own counts only */
    if (sp <= lo)
        return 0;
    uintptr_t u = (sp - lo) / DH_STACK_UNIT;
    return u > INT_MAX / 2 ? INT_MAX / 2 : (int)u;
}

#if DH_PY312
#define C_UNITS(ts) ((ts)->c_recursion_remaining)
#else
#define C_UNITS(ts) ((ts)->recursion_remaining)
#endif

/* The counts move by a delta, undone on leave: sys.setrecursionlimit() inside (which moves
 * the remaining counts of every thread) keeps its effect. */
int dh_rec_enter_eval(PyThreadState *ts) {
    int have = C_UNITS(ts), room = dh_stack_units(), want = have;
#if DH_PY312
    want += 2; /* PY_EVAL_C_STACK_UNITS: eager's inlined call would not have charged them */
#endif
    if (want > room)
        want = room;
    C_UNITS(ts) = want;
    return want - have;
}

void dh_rec_leave(PyThreadState *ts, int delta) { C_UNITS(ts) -= delta; }

int dh_rec_enter_run(PyThreadState *ts, int *delta) {
    int room = dh_stack_units();
    if (room <= 0) {
        PyErr_SetString(PyExc_RecursionError,
                        "maximum recursion depth exceeded while calling a torchc-compiled function "
                        "(C stack exhausted)");
        return -1;
    }
#if DH_PY312
    if (ts->py_recursion_remaining <= 0 && !ts->recursion_headroom) {
        ts->recursion_headroom++;
        PyErr_SetString(PyExc_RecursionError, "maximum recursion depth exceeded while calling a torchc-compiled function");
        ts->recursion_headroom--;
        return -1;
    }
    ts->py_recursion_remaining--;
#else
    if (Py_EnterRecursiveCall(" while calling a torchc-compiled function"))
        return -1;
#endif
    int have = C_UNITS(ts);
    *delta = have > room ? room - have : 0;
    C_UNITS(ts) += *delta;
    return 0;
}

void dh_rec_leave_run(PyThreadState *ts, int delta) {
    C_UNITS(ts) -= delta;
#if DH_PY312
    ts->py_recursion_remaining++;
#else
    Py_LeaveRecursiveCall();
#endif
}

void dh_rec_same_level(PyThreadState *ts, int d) {
#if DH_PY312
    ts->py_recursion_remaining += d;
#else
    ts->recursion_remaining += d;
#endif
}
