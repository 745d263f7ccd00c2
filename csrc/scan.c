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
#include "ic_config.h"
#include "ic_device.h"

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
    char *graph;           /* the body's graph text (ic_graph_to_string), or NULL */
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
    free(p->graph);
    if (p->entry && p->unpin)
        p->unpin(p->entry);
    free(p);
}

static void capsule_destroy(PyObject *cap) { rec_free(PyCapsule_GetPointer(cap, CAPSULE)); }

int tc_scan_probe_record(PyObject *func, void *entry, void (*unpin)(void *), const ic_compiled *c,
                         int ninputs, PyObject *const *inputs, int nout, PyObject *const *outs,
                         PyObject *train, int nsyms, const int64_t *symvals, const char *why_not,
                         const char *graph_text) {
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
    if ((why_not && (p->why_not = strdup(why_not)) == NULL) ||
        (graph_text && (p->graph = strdup(graph_text)) == NULL)) {
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

/* ---- the persistent CUDA kernel of a forward scan (inductor_c/codegen/gpu_scan.c) -------------- */
static const char *KCAPSULE = "torchc.scan_kernel";

static void kcap_destroy(PyObject *cap) { ic_scan_kernel_unref(PyCapsule_GetPointer(cap, KCAPSULE)); }

static ic_scan_kernel *kernel_of(PyObject *cap) { return PyCapsule_GetPointer(cap, KCAPSULE); }

/* the reason a forward scan of these tensors gets no persistent kernel (before its graph is
 * looked at), or NULL; *cm: the carry's meta */
static const char *tensor_why(PyObject *c0, PyObject *X, PyObject *consts, int plan_only, tc_meta *cm) {
    if (PyList_GET_SIZE(c0) != 1 || !tc_is_tensor(PyList_GET_ITEM(c0, 0)))
        return "the carry is not one float32 [N, n] tensor";
    tc_tensor_meta(PyList_GET_ITEM(c0, 0), cm);
    if (cm->flags || cm->dtype != IC_F32 || cm->ndim != 2)
        return "the carry is not one float32 [N, n] tensor";
    if (cm->sizes[0] == 0 || cm->sizes[1] == 0)
        return "an empty carry";
    if (!plan_only && cm->device_type != TC_DEV_CUDA)
        return "not a CUDA scan";
    int grad = tc_grad_enabled() && cm->requires_grad;
    PyObject *lists[2] = {X, consts};
    for (int l = 0; l < 2; l++)
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lists[l]); i++) {
            PyObject *t = PyList_GET_ITEM(lists[l], i);
            tc_meta m;
            if (!tc_is_tensor(t))
                return "an input is not a tensor";
            tc_tensor_meta(t, &m);
            if (m.flags)
                return "an input tensor torchc cannot describe";
            grad |= tc_grad_enabled() && m.requires_grad;
            if (m.device_type != cm->device_type || m.device_index != cm->device_index)
                return "an input on another device";
        }
    if (grad)
        return "a gradient is needed (the persistent kernel runs the forward only)";
    return NULL;
}

/* _scan_persist(rec, c0, X, consts, kinds, cout, yout, target) -> (kernel, None) or (None, why):
 * the persistent kernel of a forward scan whose probe is rec, with carries c0, x stacks X
 * ([T, ...]), loop constants consts, graph-input kinds [("c"|"x"|"k", index)], the graph
 * outputs of the next carry (cout) and of the results (yout). target (sm, nsm): plan for that
 * GPU (no device needed, nothing loaded); None: for the carry's CUDA device, loaded on it. */
static PyObject *scan_persist(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *cap, *c0, *X, *consts, *kinds, *yout, *target;
    int cout;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!iO!O", &cap, &PyList_Type, &c0, &PyList_Type, &X, &PyList_Type, &consts,
                          &PyList_Type, &kinds, &cout, &PyList_Type, &yout, &target))
        return NULL;
    tc_scan_probe *p = PyCapsule_GetPointer(cap, CAPSULE);
    if (p == NULL)
        return NULL;
    int sm = 0, nsm = 0, plan_only = target != Py_None;
    if (plan_only && !PyArg_ParseTuple(target, "ii", &sm, &nsm))
        return NULL;
    char why[300] = "";
    tc_meta cm;
    const char *tw = tensor_why(c0, X, consts, plan_only, &cm);
    if (tw == NULL && p->nsyms)
        tw = "a dynamic-shape body";
    if (tw == NULL && p->graph == NULL)
        tw = "the body has no graph text";
    if (tw == NULL && !plan_only && !ic_config_int(IC_CFG_scan_persistent))
        tw = "config scan_persistent is off (the kernel has not yet run on a GPU)";
    if (tw)
        return Py_BuildValue("(Os)", Py_None, tw);
    if (!plan_only && ic_cuda_device_info(cm.device_index, &sm, &nsm, why, sizeof why))
        return Py_BuildValue("(Os)", Py_None, why);
    Py_ssize_t nin = PyList_GET_SIZE(kinds), nx = PyList_GET_SIZE(X), ny = PyList_GET_SIZE(yout);
    char *role = calloc((size_t)nin + 1, 1);
    int *ridx = calloc((size_t)nin + 1, sizeof *ridx), *yo = calloc((size_t)ny + 1, sizeof *yo);
    int64_t *xs0 = calloc((size_t)nx + 1, sizeof *xs0);
    PyObject *res = NULL;
    if (!role || !ridx || !yo || !xs0) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nin; i++) {
        const char *k;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(kinds, i), "si", &k, &ridx[i]))
            goto done;
        role[i] = k[0];
    }
    for (Py_ssize_t i = 0; i < ny; i++) {
        yo[i] = (int)PyLong_AsLong(PyList_GET_ITEM(yout, i));
        if (yo[i] == -1 && PyErr_Occurred())
            goto done;
    }
    for (Py_ssize_t i = 0; i < nx; i++) {
        tc_meta m;
        tc_tensor_meta(PyList_GET_ITEM(X, i), &m);
        xs0[i] = m.ndim ? m.strides[0] : 0;
    }
    ic_scan_spec sp = {.graph = p->graph, .ninputs = (int)nin, .role = role, .role_index = ridx, .nx = (int)nx,
                       .x_stride0 = xs0, .N = cm.sizes[0], .n = cm.sizes[1], .cout = cout, .ny = (int)ny,
                       .yout = yo, .sm = sm, .nsm = nsm};
    ic_scan_kernel *k;
    int loaded = 0;
    Py_BEGIN_ALLOW_THREADS
    k = ic_scan_kernel_get(&sp, why, sizeof why);
    if (k && !plan_only) {
        char msg[256] = "";
        loaded = ic_scan_kernel_load(k, cm.device_index, msg, sizeof msg) == 0;
        if (!loaded) {
            snprintf(why, sizeof why, "the generated kernel did not load: %s", msg);
            ic_scan_kernel_unref(k);
            k = NULL;
        }
    }
    Py_END_ALLOW_THREADS
    if (k == NULL) {
        res = Py_BuildValue("(Os)", Py_None, why);
        goto done;
    }
    PyObject *kc = PyCapsule_New(k, KCAPSULE, kcap_destroy);
    if (kc == NULL) {
        ic_scan_kernel_unref(k);
        goto done;
    }
    res = Py_BuildValue("(NO)", kc, Py_None);
done:
    free(role);
    free(ridx);
    free(yo);
    free(xs0);
    return res;
}

/* _scan_persist_info(kernel) -> dict of its launch shape and describe */
static PyObject *scan_persist_info(PyObject *self, PyObject *kc) {
    (void)self;
    ic_scan_kernel *k = kernel_of(kc);
    if (k == NULL)
        return NULL;
    const ic_scan_shape *s = ic_scan_kernel_shape(k);
    return Py_BuildValue("{sLsLsisisisisisNsNsisisssi}", "N", (long long)s->N, "n", (long long)s->n, "threads",
                         s->threads, "R", s->R, "ctas", s->ctas, "np", s->np, "smem", s->smem, "has_mv",
                         PyBool_FromLong(s->has_mv), "w_smem", PyBool_FromLong(s->w_smem), "nxmm", s->nxmm, "nres",
                         s->nres, "describe", ic_scan_kernel_describe(k), "ninputs", ic_scan_kernel_ninputs(k));
}

static PyObject *scan_persist_ir(PyObject *self, PyObject *kc) {
    (void)self;
    ic_scan_kernel *k = kernel_of(kc);
    return k ? PyUnicode_FromString(ic_scan_kernel_ir(k)) : NULL;
}

/* _scan_persist_ptx(kernel) -> its PTX (for the sm it was planned for) */
static PyObject *scan_persist_ptx(PyObject *self, PyObject *kc) {
    (void)self;
    ic_scan_kernel *k = kernel_of(kc);
    if (k == NULL)
        return NULL;
    char msg[300] = "";
    char *ptx;
    Py_BEGIN_ALLOW_THREADS
    ptx = ic_scan_kernel_ptx(k, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (ptx == NULL) {
        PyErr_Format(PyExc_RuntimeError, "torchc.scan persistent kernel: %s", msg);
        return NULL;
    }
    PyObject *r = PyUnicode_FromString(ptx);
    free(ptx);
    return r;
}

static int bad(const char *what, int i) {
    PyErr_Format(PyExc_ValueError, "torchc.scan persistent kernel: %s (graph input %d)", what, i);
    return -1;
}

/* the kernel's pointer parameters for a call (ptrs: 2 + ninputs + nres), its result tensors
 * made (*hT, stacks) on h0's device, every tensor checked against what the kernel addresses */
static int bind(ic_scan_kernel *k, PyObject *h0, PyObject *args, long long T, void **ptrs, PyObject **hT,
                PyObject *stacks) {
    const ic_scan_shape *s = ic_scan_kernel_shape(k);
    int nin = ic_scan_kernel_ninputs(k);
    tc_meta hm;
    if (!tc_is_tensor(h0))
        return bad("h0 is not a tensor", -1);
    tc_tensor_meta(h0, &hm);
    if (hm.flags || hm.dtype != IC_F32 || hm.ndim != 2 || hm.sizes[0] != s->N || hm.sizes[1] != s->n ||
        (s->N > 1 && hm.strides[0] != s->n) || (s->n > 1 && hm.strides[1] != 1))
        return bad("h0 is not a contiguous float32 [N, n] tensor", -1);
    if (T < 1 || T > 0x7FFFFFFF)
        return bad("the number of steps is out of range", -1);
    if (PyList_GET_SIZE(args) != nin)
        return bad("the inputs are not one per graph input", -1);
    ptrs[0] = hm.data;
    for (int i = 0; i < nin; i++) {
        char role;
        const ic_meta *m;
        int64_t xs0;
        ic_scan_kernel_input(k, i, &role, &m, &xs0);
        PyObject *t = PyList_GET_ITEM(args, i);
        ptrs[1 + i] = NULL;
        if (role == 'c')
            continue;
        tc_meta tm;
        if (!tc_is_tensor(t))
            return bad("an input is not a tensor", i);
        tc_tensor_meta(t, &tm);
        int x = role == 'x';
        if (tm.flags || tm.device_type != hm.device_type || tm.device_index != hm.device_index)
            return bad("an input on another device", i);
        if (tm.dtype != (int)m->dtype || tm.ndim != m->ndim + x || (x && (tm.sizes[0] < T || tm.strides[0] != xs0)))
            return bad("an input of another dtype, rank or step", i);
        for (int d = 0; d < m->ndim; d++)
            if (tm.sizes[d + x] != m->sizes[d] || (m->sizes[d] != 1 && tm.strides[d + x] != m->strides[d]))
                return bad("an input of other sizes or strides than the kernel's", i);
        ptrs[1 + i] = tm.data;
    }
    int64_t ysz[3] = {T, s->N, s->n}, yst[3] = {s->N * s->n, s->n, 1};
    for (int m = 0; m < s->nres; m++) {
        PyObject *y = tc_empty_strided(3, ysz, yst, IC_F32, hm.device_type, hm.device_index);
        if (y == NULL)
            return -1;
        ptrs[1 + nin + m] = tc_data_ptr(y);
        int r = PyList_Append(stacks, y);
        Py_DECREF(y);
        if (r < 0)
            return -1;
    }
    *hT = tc_empty_strided(2, ysz + 1, yst + 1, IC_F32, hm.device_type, hm.device_index);
    if (*hT == NULL)
        return -1;
    ptrs[1 + nin + s->nres] = tc_data_ptr(*hT);
    return 0;
}

/* (hT, ys in the results' order) of stacks */
static PyObject *results(ic_scan_kernel *k, PyObject *hT, PyObject *stacks) {
    const int *slot;
    int ny = ic_scan_kernel_nresults(k, &slot);
    PyObject *ys = PyTuple_New(ny);
    if (ys == NULL)
        return NULL;
    for (int i = 0; i < ny; i++)
        PyTuple_SET_ITEM(ys, i, Py_NewRef(PyList_GET_ITEM(stacks, slot[i])));
    return Py_BuildValue("(ON)", hT, ys);
}

/* _scan_persist_bind(kernel, h0, args, T) -> (pointer parameters, hT, ys): a call's buffers
 * without a launch (tests run the kernel's IR on the CPU with them) */
static PyObject *scan_persist_bind(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *kc, *h0, *args, *hT = NULL, *stacks = NULL, *res = NULL, *ptrl = NULL, *r = NULL;
    long long T;
    if (!PyArg_ParseTuple(a, "OOO!L", &kc, &h0, &PyList_Type, &args, &T))
        return NULL;
    ic_scan_kernel *k = kernel_of(kc);
    if (k == NULL)
        return NULL;
    int np = 2 + ic_scan_kernel_ninputs(k) + ic_scan_kernel_shape(k)->nres;
    void **ptrs = calloc((size_t)np, sizeof *ptrs);
    if (ptrs == NULL)
        return PyErr_NoMemory();
    if ((stacks = PyList_New(0)) == NULL || bind(k, h0, args, T, ptrs, &hT, stacks) < 0 ||
        (ptrl = PyList_New(np)) == NULL)
        goto done;
    for (int i = 0; i < np; i++) {
        PyObject *v = PyLong_FromVoidPtr(ptrs[i]);
        if (v == NULL)
            goto done;
        PyList_SET_ITEM(ptrl, i, v);
    }
    if ((r = results(k, hT, stacks)) == NULL)
        goto done;
    res = Py_BuildValue("(NOO)", Py_NewRef(ptrl), PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1));
done:
    free(ptrs);
    Py_XDECREF(hT);
    Py_XDECREF(stacks);
    Py_XDECREF(ptrl);
    Py_XDECREF(r);
    return res;
}

/* _scan_persist_run(kernel, h0, args, T) -> (hT, ys): one launch on torch's current stream of
 * h0's device; args per graph input (the carry's ignored; x: its [T, ...] stack) */
static PyObject *scan_persist_run(PyObject *self, PyObject *a) {
    (void)self;
    PyObject *kc, *h0, *args, *hT = NULL, *stacks = NULL, *res = NULL;
    long long T;
    if (!PyArg_ParseTuple(a, "OOO!L", &kc, &h0, &PyList_Type, &args, &T))
        return NULL;
    ic_scan_kernel *k = kernel_of(kc);
    if (k == NULL)
        return NULL;
    int np = 2 + ic_scan_kernel_ninputs(k) + ic_scan_kernel_shape(k)->nres;
    void **ptrs = calloc((size_t)np, sizeof *ptrs);
    if (ptrs == NULL)
        return PyErr_NoMemory();
    void *stream = NULL;
    tc_meta hm;
    if ((stacks = PyList_New(0)) == NULL || bind(k, h0, args, T, ptrs, &hT, stacks) < 0)
        goto done;
    tc_tensor_meta(h0, &hm);
    if (hm.device_type != TC_DEV_CUDA) {
        PyErr_SetString(PyExc_ValueError, "torchc.scan persistent kernel: the carry is not a CUDA tensor");
        goto done;
    }
    if (tc_cuda_current_stream(hm.device_index, &stream) < 0)
        goto done;
    char msg[300] = "";
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = ic_scan_kernel_launch(k, hm.device_index, stream, ptrs, (int)T, msg, sizeof msg);
    Py_END_ALLOW_THREADS
    if (rc) {
        PyErr_Format(PyExc_RuntimeError, "torchc.scan persistent kernel: %s", msg);
        goto done;
    }
    res = results(k, hT, stacks);
done:
    free(ptrs);
    Py_XDECREF(hT);
    Py_XDECREF(stacks);
    return res;
}

static PyObject *scan_persist_clear(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    ic_scan_cache_clear();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"_scan_probe", scan_probe, METH_VARARGS, "torchc.scan: runs the compiled body once, recording its entry"},
    {"_scan_info", scan_info, METH_O, "torchc.scan: what the probe recorded"},
    {"_scan_loop", scan_loop, METH_VARARGS, "torchc.scan: runs the body's forward or backward graph over steps"},
    {"_scan_release", scan_release, METH_O, "torchc.scan: drops the record's probe tensors"},
    {"_scan_stats", scan_stats, METH_NOARGS, "torchc.scan: (loops, graph runs) so far"},
    {"_scan_persist", scan_persist, METH_VARARGS, "torchc.scan: the persistent CUDA kernel of a forward scan, or why not"},
    {"_scan_persist_info", scan_persist_info, METH_O, "torchc.scan: a persistent kernel's launch shape"},
    {"_scan_persist_ir", scan_persist_ir, METH_O, "torchc.scan: a persistent kernel's LLVM IR"},
    {"_scan_persist_ptx", scan_persist_ptx, METH_O, "torchc.scan: a persistent kernel's PTX"},
    {"_scan_persist_bind", scan_persist_bind, METH_VARARGS, "torchc.scan: a persistent kernel's call buffers, no launch"},
    {"_scan_persist_run", scan_persist_run, METH_VARARGS, "torchc.scan: runs a persistent kernel"},
    {"_scan_persist_clear", scan_persist_clear, METH_NOARGS, "torchc.scan: drops the kept persistent kernels"},
    {NULL, NULL, 0, NULL},
};

int tc_scan_init(PyObject *module) { return PyModule_AddFunctions(module, methods); }
