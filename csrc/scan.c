/* scan.c — torchc.scan's probe record and its C loop over a compiled body (see scan.h).
 *
 * The record is a capsule over tc_scan_probe: it keeps the entry that ran the body pinned
 * (its compiled forward stays valid), strong references to the tensors bound to the graph
 * inputs and to the graph outputs of the probe step (until _scan_release drops them), and
 * the training capsule (compiled backward + the autograd maps of csrc/train.c).
 *
 * _scan_loop(rec, which, in_specs, out_specs, ops, t_begin, t_end) runs graph `which`
 * (0 forward, 1 backward) for t = t_begin, t_begin ± 1, ... up to t_end (excluded). Each
 * spec is (tensor, step_bytes, off, mod): the address at step t is
 *     data_ptr + ((t + off) mod m) * step_bytes      (no mod when m == 0)
 * so a stacked buffer [T, ...] is (buf, row bytes, 0, 0), a ping-pong pair (buf2, row bytes,
 * off, 2) and a loop constant (w, 0, 0, 0). ops are per-step memory operations, each
 * (when, kind, dst_spec, src_spec, count, dtype): when 0 before the graph runs, 1 after;
 * kind 0: dst += src (count elements, dtype 0 float32 / 1 float64), 1: copy count bytes,
 * 2: zero count bytes. The Python side (torchc/_scan.py) builds the specs and checks every
 * buffer's size; here only the counts are checked. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include "aten_bridge.h"
#include "scan.h"
#include "train.h"

_Thread_local tc_scan_probe *tc_scan_tl_probe;

struct tc_scan_probe {
    int filled;
    PyObject *func;        /* strong */
    void *entry;           /* pinned while the record lives */
    void (*unpin)(void *);
    const ic_compiled *fwd;
    int nin, nout;
    PyObject **ins, **outs; /* strong */
    PyObject *train;       /* strong or NULL */
    int nsyms;
    int64_t sym[IC_MAX_SYMS];
    char *why_not;
    unsigned long long steps; /* graph runs by _scan_loop (for tests/explain) */
};

static const char *CAPSULE = "torchc.scan_rec";
static unsigned long long total_steps, total_loops;

static void rec_free(tc_scan_probe *p) {
    if (p == NULL)
        return;
    for (int i = 0; i < p->nin; i++)
        Py_XDECREF(p->ins[i]);
    for (int i = 0; i < p->nout; i++)
        Py_XDECREF(p->outs[i]);
    free(p->ins);
    free(p->outs);
    Py_XDECREF(p->func);
    Py_XDECREF(p->train);
    free(p->why_not);
    if (p->entry && p->unpin)
        p->unpin(p->entry);
    free(p);
}

static void capsule_destroy(PyObject *cap) { rec_free(PyCapsule_GetPointer(cap, CAPSULE)); }

int tc_scan_probe_record(PyObject *func, void *entry, void (*unpin)(void *), const ic_compiled *c,
                         int ninputs, PyObject *const *inputs, int nout, PyObject *const *outs,
                         PyObject *train, int nsyms, const int64_t *symvals, const char *why_not) {
    tc_scan_probe *p = tc_scan_tl_probe;
    tc_scan_tl_probe = NULL; /* the body's frame only: resumes and nested calls are not recorded */
    if (p == NULL || p->filled) {
        if (unpin)
            unpin(entry);
        return 0;
    }
    p->filled = 1;
    p->entry = entry;
    p->unpin = unpin;
    p->fwd = c;
    p->func = Py_XNewRef(func);
    p->train = Py_XNewRef(train);
    p->nsyms = nsyms;
    for (int k = 0; k < nsyms && k < IC_MAX_SYMS; k++)
        p->sym[k] = symvals[k];
    p->ins = calloc((size_t)ninputs + 1, sizeof *p->ins);
    p->outs = calloc((size_t)nout + 1, sizeof *p->outs);
    if (p->ins == NULL || p->outs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    p->nin = ninputs;
    p->nout = nout;
    for (int i = 0; i < ninputs; i++)
        p->ins[i] = Py_NewRef(inputs[i]);
    for (int i = 0; i < nout; i++)
        p->outs[i] = Py_XNewRef(outs[i]);
    if (why_not && (p->why_not = strdup(why_not)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* _scan_probe(callable, args) -> (result, record or None) */
static PyObject *scan_probe(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *fn, *fargs, *res = NULL, *cap = NULL, *out = NULL;
    if (!PyArg_ParseTuple(args, "OO!", &fn, &PyTuple_Type, &fargs))
        return NULL;
    tc_scan_probe *p = calloc(1, sizeof *p);
    if (p == NULL)
        return PyErr_NoMemory();
    tc_scan_probe *saved = tc_scan_tl_probe;
    tc_scan_tl_probe = p;
    res = PyObject_Call(fn, fargs, NULL);
    tc_scan_tl_probe = saved;
    if (res == NULL)
        goto done;
    if (!p->filled) {
        out = PyTuple_Pack(2, res, Py_None);
        goto done;
    }
    cap = PyCapsule_New(p, CAPSULE, capsule_destroy);
    if (cap == NULL)
        goto done;
    p = NULL; /* owned by the capsule */
    out = PyTuple_Pack(2, res, cap);
done:
    rec_free(p);
    Py_XDECREF(res);
    Py_XDECREF(cap);
    return out;
}

static PyObject *meta_tuple(const ic_meta *m) {
    PyObject *sz = PyTuple_New(m->ndim), *st = PyTuple_New(m->ndim);
    if (sz == NULL || st == NULL) {
        Py_XDECREF(sz);
        Py_XDECREF(st);
        return NULL;
    }
    for (int d = 0; d < m->ndim; d++) {
        PyTuple_SET_ITEM(sz, d, PyLong_FromLongLong(m->sizes[d]));
        PyTuple_SET_ITEM(st, d, PyLong_FromLongLong(m->strides[d]));
    }
    return Py_BuildValue("(NNi)", sz, st, (int)m->dtype);
}

static int set_new(PyObject *d, const char *k, PyObject *v) {
    if (v == NULL)
        return -1;
    int r = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return r;
}

static PyObject *objs_tuple(PyObject *const *a, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++)
        PyTuple_SET_ITEM(t, i, Py_NewRef(a[i] ? a[i] : Py_None));
    return t;
}

/* _scan_info(record) -> dict: func, inputs, outs, why_not, steps, and with a backward:
 * nuser, out_diff, bwd_in ((kind, index), ...), bwd_out (input index, ...), bwd_out_meta */
static PyObject *scan_info(PyObject *self, PyObject *cap) {
    (void)self;
    tc_scan_probe *p = PyCapsule_GetPointer(cap, CAPSULE);
    if (p == NULL)
        return NULL;
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    if (PyDict_SetItemString(d, "func", p->func ? p->func : Py_None) < 0 ||
        set_new(d, "inputs", objs_tuple(p->ins, p->nin)) < 0 ||
        set_new(d, "outs", objs_tuple(p->outs, p->nout)) < 0 ||
        set_new(d, "why_not", p->why_not ? PyUnicode_FromString(p->why_not) : Py_NewRef(Py_None)) < 0 ||
        set_new(d, "nsyms", PyLong_FromLong(p->nsyms)) < 0 ||
        set_new(d, "steps", PyLong_FromUnsignedLongLong(p->steps)) < 0)
        goto error;
    if (p->train) {
        const ic_compiled *bwd;
        const ic_meta *in_meta;
        int dev;
        const ic_autograd *ag = tc_train_parts(p->train, &bwd, &in_meta, &dev);
        if (ag == NULL)
            goto error;
        if (bwd == NULL) {
            if (PyDict_SetItemString(d, "bwd", Py_False) < 0)
                goto error;
            return d;
        }
        PyObject *diff = PyTuple_New(ag->nuser_out), *bin = PyTuple_New(ag->nbwd_in);
        PyObject *bout = PyTuple_New(ag->nbwd_out), *bmeta = PyTuple_New(ag->nbwd_out);
        if (set_new(d, "out_diff", diff) < 0 || set_new(d, "bwd_in", bin) < 0 ||
            set_new(d, "bwd_out", bout) < 0 || set_new(d, "bwd_out_meta", bmeta) < 0)
            goto error;
        for (int j = 0; j < ag->nuser_out; j++)
            PyTuple_SET_ITEM(diff, j, PyBool_FromLong(ag->out_diff[j]));
        for (int k = 0; k < ag->nbwd_in; k++) {
            PyObject *it = Py_BuildValue("(ii)", ag->bwd_in_kind[k], ag->bwd_in_index[k]);
            if (it == NULL)
                goto error;
            PyTuple_SET_ITEM(bin, k, it);
        }
        for (int k = 0; k < ag->nbwd_out; k++) {
            PyObject *m = meta_tuple(ic_compiled_output_meta(bwd, k));
            if (m == NULL)
                goto error;
            PyTuple_SET_ITEM(bout, k, PyLong_FromLong(ag->bwd_out_input[k]));
            PyTuple_SET_ITEM(bmeta, k, m);
        }
        if (set_new(d, "nuser", PyLong_FromLong(ag->nuser_out)) < 0 || PyDict_SetItemString(d, "bwd", Py_True) < 0)
            goto error;
    } else if (PyDict_SetItemString(d, "bwd", Py_False) < 0) {
        goto error;
    }
    return d;
error:
    Py_DECREF(d);
    return NULL;
}

typedef struct spec {
    char *base;
    int64_t step, off, mod;
} spec;

typedef struct memop {
    int when, kind, dtype;
    spec dst, src;
    int64_t count;
} memop;

static inline char *at_step(const spec *s, int64_t t) {
    int64_t i = t + s->off;
    if (s->mod > 0)
        i %= s->mod;
    return s->base + i * s->step;
}

static int parse_spec(PyObject *o, spec *s) {
    PyObject *t;
    long long step, off, mod;
    if (!PyArg_ParseTuple(o, "OLLL", &t, &step, &off, &mod))
        return -1;
    if (!tc_is_tensor(t)) {
        PyErr_SetString(PyExc_TypeError, "_scan_loop: a spec's buffer is not a tensor");
        return -1;
    }
    if (off < 0 || mod < 0) {
        PyErr_SetString(PyExc_ValueError, "_scan_loop: negative offset or modulus");
        return -1;
    }
    s->base = tc_data_ptr(t);
    s->step = step;
    s->off = off;
    s->mod = mod;
    return 0;
}

/* a[i] += b[i]: blocks of 64 bytes with a fixed trip count so that -O2 vectorizes them (its
 * cost model leaves a loop of unknown count scalar: run_op was 8% of an expRNN training
 * step's samples, the gradient of B summed per step), cloned for AVX-512 / AVX2 / SSE2 */
#define ADD_BLOCKS(W)                                                                                   \
    int64_t i = 0;                                                                                      \
    for (; i + (W) <= n; i += (W))                                                                      \
        for (int j = 0; j < (W); j++)                                                                   \
            a[i + j] += b[i + j];                                                                       \
    for (; i < n; i++)                                                                                  \
        a[i] += b[i];
__attribute__((target_clones("avx512f", "avx2", "default"))) static void add_f32(float *restrict a,
                                                                              const float *restrict b,
                                                                              int64_t n) {
    ADD_BLOCKS(16)
}
__attribute__((target_clones("avx512f", "avx2", "default"))) static void add_f64(double *restrict a,
                                                                              const double *restrict b,
                                                                              int64_t n) {
    ADD_BLOCKS(8)
}
#undef ADD_BLOCKS

static void run_op(const memop *m, int64_t t) {
    char *d = at_step(&m->dst, t);
    const char *s = m->kind == 2 ? NULL : at_step(&m->src, t);
    switch (m->kind) {
    case 0:
        if (m->dtype == 0)
            add_f32((float *)d, (const float *)s, m->count);
        else
            add_f64((double *)d, (const double *)s, m->count);
        break;
    case 1: memcpy(d, s, (size_t)m->count); break;
    default: memset(d, 0, (size_t)m->count); break;
    }
}

static PyObject *scan_loop(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap, *ins, *outs, *ops;
    int which;
    long long t0, t1;
    if (!PyArg_ParseTuple(args, "OiO!O!O!LL", &cap, &which, &PyList_Type, &ins, &PyList_Type, &outs,
                          &PyList_Type, &ops, &t0, &t1))
        return NULL;
    tc_scan_probe *p = PyCapsule_GetPointer(cap, CAPSULE);
    if (p == NULL)
        return NULL;
    const ic_compiled *c = p->fwd;
    int dyn = p->nsyms > 0;
    if (which == 1) {
        const ic_meta *im;
        int dev;
        const ic_autograd *ag = p->train ? tc_train_parts(p->train, &c, &im, &dev) : NULL;
        if (ag == NULL || c == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "torchc.scan: the body has no compiled backward");
            return NULL;
        }
        dyn = 0;
    }
    if (p->why_not) {
        PyErr_Format(PyExc_RuntimeError, "torchc.scan: the body cannot run as a loop: %s", p->why_not);
        return NULL;
    }
    Py_ssize_t nin = PyList_GET_SIZE(ins), nout = PyList_GET_SIZE(outs), nops = PyList_GET_SIZE(ops);
    if (nin != ic_compiled_num_inputs(c) || nout != ic_compiled_num_outputs(c)) {
        PyErr_Format(PyExc_ValueError, "_scan_loop: %zd/%zd specs for a graph of %d inputs and %d outputs",
                     nin, nout, ic_compiled_num_inputs(c), ic_compiled_num_outputs(c));
        return NULL;
    }
    spec *sp = calloc((size_t)(nin + nout) + 1, sizeof *sp);
    void **ptrs = calloc((size_t)(nin + nout) + 1, sizeof *ptrs);
    memop *mo = calloc((size_t)nops + 1, sizeof *mo);
    PyObject *res = NULL;
    if (sp == NULL || ptrs == NULL || mo == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nin + nout; i++)
        if (parse_spec(i < nin ? PyList_GET_ITEM(ins, i) : PyList_GET_ITEM(outs, i - nin), &sp[i]) < 0)
            goto done;
    for (Py_ssize_t k = 0; k < nops; k++) {
        PyObject *o = PyList_GET_ITEM(ops, k), *ds, *ss;
        long long count;
        if (!PyArg_ParseTuple(o, "iiOOLi", &mo[k].when, &mo[k].kind, &ds, &ss, &count, &mo[k].dtype))
            goto done;
        mo[k].count = count;
        if (parse_spec(ds, &mo[k].dst) < 0 || (mo[k].kind != 2 && parse_spec(ss, &mo[k].src) < 0))
            goto done;
        if (mo[k].kind < 0 || mo[k].kind > 2 || mo[k].dtype < 0 || mo[k].dtype > 1 || count < 0) {
            PyErr_SetString(PyExc_ValueError, "_scan_loop: bad memory op");
            goto done;
        }
    }
    int64_t dir = t1 >= t0 ? 1 : -1;
    if (t0 < 0 || t1 < -1) {
        PyErr_SetString(PyExc_ValueError, "_scan_loop: negative step range");
        goto done;
    }
    ic_err err = {0};
    int rc = 0;
    int64_t ran = 0;
    /* the graph inputs at one address at every step (loop constants: parameters, Bᵀ): a GEMM
     * reading one transposed reads a contiguous copy made once per loop (aten_bridge.cpp) */
    const void **consts = calloc((size_t)nin + 1, sizeof *consts);
    int nconsts = 0;
    if (consts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nin; i++)
        if (sp[i].step == 0 && sp[i].mod == 0)
            consts[nconsts++] = sp[i].base;
    Py_BEGIN_ALLOW_THREADS
    tc_scan_consts_set(consts, nconsts);
    for (int64_t t = t0; t != t1 && rc == 0; t += dir, ran++) {
        for (Py_ssize_t k = 0; k < nops; k++)
            if (mo[k].when == 0)
                run_op(&mo[k], t);
        for (Py_ssize_t i = 0; i < nin + nout; i++)
            ptrs[i] = at_step(&sp[i], t);
        rc = dyn ? ic_run_dyn(c, ptrs, ptrs + nin, p->sym, &err) : ic_run(c, ptrs, ptrs + nin, &err);
        for (Py_ssize_t k = 0; rc == 0 && k < nops; k++)
            if (mo[k].when == 1)
                run_op(&mo[k], t);
    }
    tc_scan_consts_set(NULL, 0);
    Py_END_ALLOW_THREADS
    free(consts);
    p->steps += (unsigned long long)ran;
    total_steps += (unsigned long long)ran;
    total_loops++;
    if (rc != 0) {
        if (PyErr_Occurred()) /* a custom op's KeyboardInterrupt or MemoryError: as eager */
            goto done;
        PyErr_Format(PyExc_RuntimeError, "torchc.scan: compiled body failed: %s", err.msg);
        goto done;
    }
    res = Py_NewRef(Py_None);
done:
    free(sp);
    free(ptrs);
    free(mo);
    return res;
}

/* _scan_release(record): drops the record's references to the probe step's tensors (the
 * graph inputs, among them a view of xs, and the outputs, whose autograd graph saved more);
 * the record keeps only what the loops run (the pinned entry, the compiled backward).
 * torchc/_scan.py calls it once the plan has classified them, so a record kept by an autograd
 * node until its graph dies holds no sequence-sized storage (the pool could not reuse it). */
static PyObject *scan_release(PyObject *self, PyObject *cap) {
    (void)self;
    tc_scan_probe *p = PyCapsule_GetPointer(cap, CAPSULE);
    if (p == NULL)
        return NULL;
    int nin = p->nin, nout = p->nout;
    p->nin = p->nout = 0;
    for (int i = 0; i < nin; i++)
        Py_CLEAR(p->ins[i]);
    for (int i = 0; i < nout; i++)
        Py_CLEAR(p->outs[i]);
    Py_RETURN_NONE;
}

/* _scan_stats() -> (loops, graph runs) since the module loaded */
static PyObject *scan_stats(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return Py_BuildValue("(KK)", total_loops, total_steps);
}

static PyMethodDef methods[] = {
    {"_scan_probe", scan_probe, METH_VARARGS, "torchc.scan: runs the compiled body once, recording its entry"},
    {"_scan_info", scan_info, METH_O, "torchc.scan: what the probe recorded"},
    {"_scan_loop", scan_loop, METH_VARARGS, "torchc.scan: runs the body's forward or backward graph over steps"},
    {"_scan_release", scan_release, METH_O, "torchc.scan: drops the record's probe tensors"},
    {"_scan_stats", scan_stats, METH_NOARGS, "torchc.scan: (loops, graph runs) so far"},
    {NULL, NULL, 0, NULL},
};

int tc_scan_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
