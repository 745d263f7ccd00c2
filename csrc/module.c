/* module.c — the CPython module torchc._C: module init, the CompiledFunction type that
 * runs a callable under the frame hook, and the small API behind torchc/__init__.py.
 * Errors from the C layers arrive here as Python exceptions. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>

#include "aten_bridge.h"
#include "train.h"
#include "config_py.h"
#include "dh.h"
#include "dropin.h"
#include "ic.h"
#include "ic_device.h"
#include "layouts_py.h"
#include "matrix_exp.h"


/* ---- CompiledFunction: fn called with the hook active ----------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *dict;
    PyObject *weakrefs;
    dh_config cfg;
    int ncalls; /* set_stance("eager_then_compile"): the first call runs eagerly */
} CompiledFunction;

static int cf_init(CompiledFunction *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"fn", "fullgraph", "dynamic", "recompile_limit", NULL};
    PyObject *fn;
    int fullgraph = 0, dynamic = -1, limit = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|pii", kwlist, &fn, &fullgraph, &dynamic, &limit))
        return -1;
    if (dynamic < -1 || dynamic > 1) {
        PyErr_SetString(PyExc_ValueError, "dynamic must be -1 (automatic), 0 or 1");
        return -1;
    }
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "torchc.compile expects a callable, got %s",
                     Py_TYPE(fn)->tp_name);
        return -1;
    }
    Py_XSETREF(self->fn, Py_NewRef(fn));
    self->cfg.fullgraph = fullgraph;
    self->cfg.dynamic = dynamic;
    self->cfg.recompile_limit = limit;
    return 0;
}

static PyObject *cf_call(CompiledFunction *self, PyObject *args, PyObject *kw) {
    if (self->fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "CompiledFunction not initialized");
        return NULL;
    }
    int stance = tc_dropin_before_call(); /* csrc/dropin.c: set_stance, thread count */
    if (stance < 0)
        return NULL;
    if (stance == DH_STANCE_FORCE_EAGER || (stance == DH_STANCE_EAGER_THEN_COMPILE && self->ncalls++ == 0))
        return PyObject_Call(self->fn, args, kw);
    dh_tl_stance = stance;
    PyObject *r = dh_call(self->fn, args, kw, &self->cfg);
    dh_tl_stance = DH_STANCE_DEFAULT;
    return r;
}

static int cf_traverse(CompiledFunction *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->dict);
    Py_VISIT(self->cfg.backend);
    return 0;
}

static int cf_clear(CompiledFunction *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->dict);
    Py_CLEAR(self->cfg.backend);
    return 0;
}

static void cf_dealloc(CompiledFunction *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    cf_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cf_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyMemberDef cf_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(CompiledFunction, fn), READONLY, "the original callable"},
    {"fullgraph", T_INT, offsetof(CompiledFunction, cfg.fullgraph), 0, NULL},
    {"autotune", T_INT, offsetof(CompiledFunction, cfg.autotune), 0,
     "mode=\"max-autotune\": every GEMM choice timed on the device (CUDA)"},
    {"recompile_limit", T_INT, offsetof(CompiledFunction, cfg.recompile_limit), 0,
     "recompiles of a code object before it runs eagerly (0: torchc.config's)"},
    {"dynamic", T_INT, offsetof(CompiledFunction, cfg.dynamic), 0, NULL},
    {"backend", T_OBJECT, offsetof(CompiledFunction, cfg.backend), 0,
     "torchc.compile(backend=...): graphs handed to it as FX GraphModules (None: torchc's inductor)"},
    {"__dictoffset__", T_PYSSIZET, offsetof(CompiledFunction, dict), READONLY},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CompiledFunction, weakrefs), READONLY},
    {NULL},
};

static PyType_Slot cf_slots[] = {
    {Py_tp_init, cf_init},
    {Py_tp_call, cf_call},
    {Py_tp_traverse, cf_traverse},
    {Py_tp_clear, cf_clear},
    {Py_tp_dealloc, cf_dealloc},
    {Py_tp_members, cf_members},
    {Py_tp_descr_get, cf_descr_get},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_doc, "CompiledFunction(fn, fullgraph=False, dynamic=-1): dynamic -1 automatic, 0 static, 1 all dims: fn run under torchc's frame hook"},
    {0, NULL},
};

static PyType_Spec cf_spec = {
    "torchc._C.CompiledFunction",
    sizeof(CompiledFunction),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    cf_slots,
};

/* ---- module functions ----------------------------------------------------------------- */

static PyObject *m_reset(PyObject *m, PyObject *unused) {
    dh_reset();
    Py_RETURN_NONE;
}

static PyObject *m_explain_start(PyObject *m, PyObject *unused) {
    if (dh_explain_start() < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_explain_stop(PyObject *m, PyObject *unused) { return dh_explain_stop(); }

static PyObject *m_stats(PyObject *m, PyObject *unused) {
    PyObject *d = dh_stats();
    if (d == NULL)
        return NULL;
    /* internal faults (ic.h): compiler bugs run eagerly for the user, the tests fail on them;
     * backward graphs compiled (on their first backward call: csrc/train.c); extern calls
     * through ATen and the ATen results copied into their buffers; the sdpa layout probe
     * (aten_bridge.cpp): attention runs at trace time, answers kept */
    static const char *const keys[6] = {"internal_faults", "backward_compiles", "extern_calls",
                                        "extern_copies", "sdpa_probe_runs", "sdpa_probe_hits"};
    unsigned long long n[6] = {ic_internal_faults(NULL, 0), tc_train_backward_compiles()};
    tc_extern_copy_stats(&n[2], &n[3]);
    tc_sdpa_probe_stats(&n[4], &n[5]);
    if (dh_dict_set_counts(d, keys, n, 6) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *m_sdpa_layout_probe(PyObject *m, PyObject *args) { return tc_sdpa_layout_probe_py(args); }

static PyObject *m_last_internal_fault(PyObject *m, PyObject *unused) {
    char last[256];
    if (ic_internal_faults(last, sizeof last) == 0)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(last, (Py_ssize_t)strlen(last), "replace");
}

static PyObject *m_cache_stats(PyObject *m, PyObject *unused) {
    ic_cache_stats s;
    ic_get_cache_stats(&s);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "mem_hits", (unsigned long long)s.mem_hits,
                         "code_shared", (unsigned long long)s.code_shared, "disk_loaded",
                         (unsigned long long)s.disk_loaded, "disk_hits", (unsigned long long)s.disk_hits,
                         "disk_misses", (unsigned long long)s.disk_misses, "disk_writes",
                         (unsigned long long)s.disk_writes, "disk_rejected", (unsigned long long)s.disk_rejected,
                         "disk_errors", (unsigned long long)s.disk_errors, "disk_evicted",
                         (unsigned long long)s.disk_evicted, "tier0", (unsigned long long)s.tier0, "tier1",
                         (unsigned long long)s.tier1, "tier_failed", (unsigned long long)s.tier_failed);
}

static PyObject *m_tier_shutdown(PyObject *m, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    ic_tier_shutdown();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *m_tier_wait(PyObject *m, PyObject *unused) {
    Py_BEGIN_ALLOW_THREADS
    ic_tier_wait();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* An int setting in [lo, hi]: ValueError (never OverflowError from C) outside it. */
static int int_setting(PyObject *arg, const char *name, long lo, long hi, int *out) {
    if (!PyLong_Check(arg) || PyBool_Check(arg)) {
        PyErr_Format(PyExc_ValueError, "torchc.config.%s must be an int in [%ld, %ld], got %R", name, lo, hi, arg);
        return -1;
    }
    int overflow = 0;
    long n = PyLong_AsLongAndOverflow(arg, &overflow);
    if (n == -1 && PyErr_Occurred())
        return -1;
    if (overflow || n < lo || n > hi) {
        PyErr_Format(PyExc_ValueError, "torchc.config.%s must be an int in [%ld, %ld], got %R", name, lo, hi, arg);
        return -1;
    }
    *out = (int)n;
    return 0;
}

#define TC_MAX_THREADS 256 /* the CPU pool's workers + the caller (inductor_c/runtime/pool.c) */

static PyObject *m_set_num_threads(PyObject *m, PyObject *arg) {
    int n;
    if (int_setting(arg, "num_threads", 1, TC_MAX_THREADS, &n) < 0)
        return NULL;
    ic_set_num_threads(n);
    Py_RETURN_NONE;
}

static PyObject *m_set_ptxas(PyObject *m, PyObject *arg) {
    if (arg == Py_None) {
        ic_cuda_set_ptxas(NULL);
        Py_RETURN_NONE;
    }
    const char *p = PyUnicode_AsUTF8(arg);
    if (p == NULL)
        return NULL;
    ic_cuda_set_ptxas(p);
    Py_RETURN_NONE;
}

/* graph_to_ptx(text, sm=90): the PTX of a graph given as its text (ic_graph_to_string, as
 * TORCHC_DEBUG=graph prints it) compiled for sm_XY without a GPU (ic_graph_to_ptx), the GIL
 * released meanwhile; benchmarks/gpu_codegen_time.py times the GPU code generation with it. */
ic_graph *ic_graph_parse(const char *text, char *msg, size_t n); /* inductor_c/graph/parse.c */

static PyObject *m_graph_to_ptx(PyObject *m, PyObject *args) {
    const char *text;
    int sm = 90;
    if (!PyArg_ParseTuple(args, "s|i", &text, &sm))
        return NULL;
    char msg[256] = "";
    ic_err err = {0};
    char *ptx = NULL;
    Py_BEGIN_ALLOW_THREADS /* text: the argument's buffer, alive until we return */
    ic_graph *g = ic_graph_parse(text, msg, sizeof msg);
    if (g != NULL) {
        ptx = ic_graph_to_ptx(g, sm, &err);
        ic_graph_free(g);
    }
    Py_END_ALLOW_THREADS
    if (ptx == NULL) {
        PyErr_Format(PyExc_RuntimeError, "graph_to_ptx: %s", msg[0] ? msg : err.msg);
        return NULL;
    }
    PyObject *r = PyUnicode_FromString(ptx);
    free(ptx);
    return r;
}

static PyObject *m_get_num_threads(PyObject *m, PyObject *unused) {
    return PyLong_FromLong(ic_get_num_threads());
}

static PyObject *m_skip_code(PyObject *m, PyObject *code) {
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "skip_code expects a code object");
        return NULL;
    }
    if (dh_skip_code(code) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_skip_code_tree(PyObject *m, PyObject *code) {
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "skip_code_tree expects a code object");
        return NULL;
    }
    if (dh_skip_code_tree(code) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_allow_code(PyObject *m, PyObject *code) {
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "allow_code expects a code object");
        return NULL;
    }
    if (dh_allow_code(code) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_set_frame_redirect(PyObject *m, PyObject *const *a, Py_ssize_t n) {
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "set_frame_redirect(code, callable or None)");
        return NULL;
    }
    if (dh_set_frame_redirect(a[0], a[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyTypeObject *cf_type; /* CompiledFunction (the module holds it) */

static PyObject *m_probe(PyObject *m, PyObject *const *a, Py_ssize_t n) {
    if (n < 2 || n > 4 || !PyTuple_Check(a[1]) || (n >= 3 && a[2] != Py_None && !PyDict_Check(a[2])) ||
        (n == 4 && a[3] != Py_None && !PyObject_TypeCheck(a[3], cf_type))) {
        PyErr_SetString(PyExc_TypeError, "probe(func, args_tuple, kwargs_dict_or_None[, compiled_function])");
        return NULL;
    }
    /* with the CompiledFunction making the call: only entries captured under its options */
    const dh_config *cfg = n == 4 && a[3] != Py_None ? &((CompiledFunction *)a[3])->cfg : NULL;
    return dh_probe(a[0], a[1], n >= 3 && a[2] != Py_None ? a[2] : NULL, cfg);
}

static PyObject *m_set_cudagraph_capture(PyObject *m, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    dh_tl_cg_capture = on;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"tier_shutdown", m_tier_shutdown, METH_NOARGS, "stop the tier-1 recompile thread (process exit)"},
    {"tier_wait", m_tier_wait, METH_NOARGS,
     "Block until the optimized code of the tiered CPU graphs compiled so far is swapped in."},
    {"cache_stats", m_cache_stats, METH_NOARGS,
     "Compile cache counters: in-memory hits, shared code, disk cache hits/misses/writes/rejects."},
    {"probe", (PyCFunction)(void (*)(void))m_probe, METH_FASTCALL,
     "probe(func, args, kwargs[, compiled_function]): the cache entry (int) a call would take "
     "(under that CompiledFunction's options), else None."},
    {"allow_code", m_allow_code, METH_O, "Capture/inline this code object (allow_in_graph)."},
    {"skip_code", m_skip_code, METH_O, "Never hook frames of this code object."},
    {"set_frame_redirect", (PyCFunction)(void (*)(void))m_set_frame_redirect, METH_FASTCALL,
     "Frames of this code object started inside torchc calls run fn(*args) instead (torchc/_optim.py)."},
    {"skip_code_tree", m_skip_code_tree, METH_O,
     "Never hook frames of this code object nor any frame it calls (torch.compiler.disable's wrapper)."},
    {"reset", m_reset, METH_NOARGS, "Drop every compiled entry."},
    {"explain_start", m_explain_start, METH_NOARGS, "Start recording handled frames."},
    {"explain_stop", m_explain_stop, METH_NOARGS, "Stop recording; return the records."},
    TC_CONFIG_METHODS
    {"stats", m_stats, METH_NOARGS, "Counters of the frame hook (and internal_faults: compiler bugs)."},
    {"sdpa_layout_probe", m_sdpa_layout_probe, METH_VARARGS,
     "sdpa_layout_probe(q, k, v, mask, causal, scale, device): eager's CUDA output strides of the "
     "attention for these tensors' metas (kept per key), or None (tests)."},
    {"last_internal_fault", m_last_internal_fault, METH_NOARGS, "Message of the last internal fault, or None."},
    {"set_cudagraph_capture", m_set_cudagraph_capture, METH_O,
     "torchc's CUDA graph capture runs on this thread (bool): stream-capture guards as normal."},
    {"set_num_threads", m_set_num_threads, METH_O, "Worker threads of the CPU runtime."},
    {"get_num_threads", m_get_num_threads, METH_NOARGS, "Worker threads of the CPU runtime."},
    {"graph_to_ptx", m_graph_to_ptx, METH_VARARGS,
     "graph_to_ptx(text, sm=90): PTX of a graph's text (TORCHC_DEBUG=graph), made without a GPU."},
    {"set_ptxas", m_set_ptxas, METH_O, "ptxas for GPU modules (str path, or None: the driver JIT)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "torchc._C",
                                       "torchc's C engine", -1, methods};


PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = NULL, *type = NULL;
    PyObject *torch = PyImport_ImportModule("torch"); /* loads libtorch before we use it */
    if (torch == NULL)
        return NULL;
    Py_DECREF(torch);
    m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    type = PyType_FromSpec(&cf_spec);
    if (type == NULL || PyModule_AddObject(m, "CompiledFunction", type) < 0)
        goto error;
    cf_type = (PyTypeObject *)type; /* borrowed: the module keeps it */
    type = NULL;
    if (PyModule_AddStringConstant(m, "ic_version", ic_version()) < 0 ||
        PyModule_AddIntConstant(m, "PY312", PY_VERSION_HEX >= 0x030C0000) < 0)
        goto error;
    ic_set_num_threads(tc_num_threads() > 0 ? tc_num_threads() : 1);
    ic_set_extern_handler(tc_extern_handler); /* mm/conv inside graphs run with ATen */
    if (dh_init(m) < 0)
        goto error;
    {
        static const ic_device_allocator alloc = {tc_device_alloc, tc_device_release};
        ic_set_device_allocator(&alloc);
    }
    if (tc_layouts_init(m) < 0 || tc_dropin_init(m) < 0)
        goto error;
    if (tc_matrix_exp_init(m) < 0) /* matrix_exp* for torchc.manifolds */
        goto error;
    return m;
error:
    Py_XDECREF(type);
    Py_DECREF(m);
    return NULL;
}
