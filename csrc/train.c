/* train.c — the autograd node of compiled training graphs (see train.h; owner: training).
 *
 * The train object is a capsule over tc_train: the backward graph and the maps of
 * ic_autograd. The backward graph is derived (and what the forward saves decided) when the
 * forward is compiled, but compiled only on the first backward call (then kept): a model
 * run in grad mode that never calls backward (inference without no_grad) pays no backward
 * compile. Its runner (a builtin bound to the capsule, kept by each autograd node
 * that uses it) runs the compiled backward: inputs are the saved tensors (forward inputs
 * and saved forward outputs, in the order of the backward graph's inputs) and the output
 * gradients (made contiguous, or channels-last for a channels-last output: the backward
 * graph reads them in that layout, graph/autograd.c grad_layout);
 * outputs are fresh tensors, one gradient per forward input that requires grad.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <time.h>

#include "aten_bridge.h"
#include "pyerr.h"
#include "ic.h"
#include "ic_config.h"
#include "ic_device.h"
#include "train.h"

/* dynamo_hook/eval_frame.c: the thread signals go to, and the count of compiles that exit
 * waits for (LLVM's static destructors must not run under one) */
int dh_is_main_thread(void);
void dh_compile_inflight_add(int delta);
int dh_wait_step(pthread_mutex_t *mu, pthread_cond_t *cv, const int *done);

typedef struct bjob bjob;

typedef struct tc_train {
    ic_autograd ag;         /* ag.bwd: the graph, until it is compiled */
    ic_compiled *bwd;       /* NULL until the first backward */
    bjob *job;              /* the backward's compile, running on a helper thread */
    ic_options opt;
    int eager;              /* a backward ran with create_graph=True: the frame runs eagerly */
    char *bwd_text;
    int bwd_ops;
    int nfwd_in;
    int device_type, device_index;
    ic_meta *in_meta; /* the backward graph's inputs */
    PyObject *came[2]; /* bool scalars False, True on the device (IC_AG_GRAD_CAME inputs) */
    PyObject *detach;  /* the forward's stop-gradient values (ic_graph_grad_plain); NULL: the
                        * forward is not replayed for a double backward */
    PyObject *replay;  /* [forward graph text, None, detach] once attached (torchc/_autograd.py
                        * puts its eager form second on the first double backward) */
} tc_train;

static const char *CAPSULE = "torchc.train";
static unsigned long long n_bwd_compiles; /* under the GIL */

unsigned long long tc_train_backward_compiles(void) { return n_bwd_compiles; }

/* The backward graph compiles on a helper thread while the calling thread waits with the
 * GIL released and, on the main thread, checks for signals every 20 ms: Ctrl-C during a long
 * backward compile arrives at once (as the forward's, eval_frame.c dh_compile). The
 * interrupted job keeps running and stays the train object's: the next backward waits for
 * it; a train object freed first leaves the graph and the result to the job to free.
 * refs: the train object's (tr->job), the helper thread's, and each waiter's (taken under the
 * GIL); the last one frees. */
struct bjob {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ic_graph *g; /* tr->ag.bwd, the job's own once orphaned */
    ic_options opt;
    ic_err err;
    ic_compiled *res;
    int done, orphan, taken;
    _Atomic int refs;
};

static void bjob_unref(bjob *j) {
    if (--j->refs > 0)
        return;
    if (j->res != NULL && !j->taken)
        ic_compiled_free(j->res);
    if (j->orphan)
        ic_graph_free(j->g);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
}

static void *bjob_run(void *p) {
    bjob *j = p;
    ic_err err = {0};
    ic_compiled *r = ic_compile(j->g, &j->opt, &err);
    pthread_mutex_lock(&j->mu);
    j->res = r;
    j->err = err;
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    bjob_unref(j);
    dh_compile_inflight_add(-1);
    return NULL;
}

/* the backward's compile started on a helper thread (tr->job), unless one is running or done;
 * without memory or a thread nothing starts (the caller compiles on its own thread) */
static void start_job(tc_train *tr) {
    if (tr->job != NULL || tr->bwd != NULL || tr->ag.bwd == NULL)
        return;
    bjob *j = calloc(1, sizeof *j);
    if (j == NULL)
        return;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->g = tr->ag.bwd;
    j->opt = tr->opt;
    j->refs = 2;
    dh_compile_inflight_add(1);
    pthread_t th;
    if (pthread_create(&th, NULL, bjob_run, j) != 0) {
        dh_compile_inflight_add(-1);
        j->refs = 1;
        bjob_unref(j);
    } else {
        pthread_detach(th);
        tr->job = j;
    }
}

/* compiles the backward graph once (the GIL is released meanwhile: a second thread that
 * gets here first wins, the loser's copy is dropped); with config backward_ahead the job
 * started at capture (tc_train_new) is usually done or nearly so by now */
static int ensure_compiled(tc_train *tr) {
    if (tr->bwd)
        return 0;
    if (tr->ag.bwd == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "torchc backward: no backward graph");
        return -1;
    }
    ic_err err = {0};
    ic_compiled *c = NULL;
    if (tr->job == NULL && dh_is_main_thread())
        start_job(tr);
    if (tr->job != NULL) {
        bjob *j = tr->job;
        j->refs++; /* this waiter's */
        for (;;) {
            int done = dh_wait_step(&j->mu, &j->cv, &j->done);
            if (tr->job != j) { /* another waiter took the result */
                bjob_unref(j);
                if (tr->bwd)
                    return 0;
                PyErr_SetString(PyExc_RuntimeError, "torchc: the backward graph failed to compile");
                return -1;
            }
            if (done)
                break;
            if (PyErr_CheckSignals() < 0) { /* Ctrl-C: the job goes on, the next backward waits for it */
                bjob_unref(j);
                return -1;
            }
        }
        c = j->res;
        err = j->err;
        j->taken = 1;
        tr->job = NULL;
        bjob_unref(j); /* the waiter's */
        bjob_unref(j); /* the train object's */
    } else { /* not the main thread (signals go to the main one), or no thread to be had */
        ic_graph *g = tr->ag.bwd;
        ic_options opt = tr->opt;
        Py_BEGIN_ALLOW_THREADS
        c = ic_compile(g, &opt, &err);
        Py_END_ALLOW_THREADS
        if (tr->job != NULL || tr->bwd) { /* another thread compiled it, or is compiling it, meanwhile */
            if (c != NULL)
                ic_compiled_free(c);
            return tr->bwd ? 0 : ensure_compiled(tr);
        }
    }
    if (c == NULL) {
        PyErr_Format(PyExc_RuntimeError, "torchc: the backward graph failed to compile: %s", err.msg);
        return -1;
    }
    if (tr->bwd) { /* another thread compiled it meanwhile */
        ic_compiled_free(c);
        return 0;
    }
    tr->bwd = c;
    n_bwd_compiles++;
    if (tr->opt.device == IC_CPU)
        ic_ptx_probe(tr->ag.bwd); /* developers' PTX checks of backward graphs */
    ic_graph_free(tr->ag.bwd); /* compiled: the graph is not needed any more */
    tr->ag.bwd = NULL;
    return 0;
}

static void train_free(tc_train *tr) {
    if (tr == NULL)
        return;
    if (tr->job != NULL) { /* a compile still running (interrupted): it frees the graph */
        bjob *j = tr->job;
        pthread_mutex_lock(&j->mu);
        j->orphan = 1;
        pthread_mutex_unlock(&j->mu);
        tr->ag.bwd = NULL;
        tr->job = NULL;
        bjob_unref(j);
    }
    ic_autograd_clear(&tr->ag);
    if (tr->bwd)
        ic_compiled_free(tr->bwd);
    free(tr->bwd_text);
    free(tr->in_meta);
    Py_XDECREF(tr->came[0]);
    Py_XDECREF(tr->came[1]);
    Py_XDECREF(tr->replay);
    Py_XDECREF(tr->detach);
    free(tr);
}

static void capsule_destroy(PyObject *cap) {
    train_free(PyCapsule_GetPointer(cap, CAPSULE));
}

/* torch's current CUDA stream of a device (torch._C._cuda_getCurrentRawStream): 0, or -1
 * with a Python exception */
int tc_cuda_current_stream(int device, void **stream) {
    static PyObject *fn;
    if (fn == NULL) {
        PyObject *tc = PyImport_ImportModule("torch._C");
        fn = tc ? PyObject_GetAttrString(tc, "_cuda_getCurrentRawStream") : NULL;
        Py_XDECREF(tc);
        if (fn == NULL)
            return -1;
    }
    PyObject *r = PyObject_CallFunction(fn, "i", device);
    if (r == NULL)
        return -1;
    *stream = PyLong_AsVoidPtr(r);
    Py_DECREF(r);
    return PyErr_Occurred() ? -1 : 0;
}

/* a tensor of meta m (contiguous, or channels-last) from grad t (None: zeros) */
static PyObject *grad_buffer(PyObject *t, const ic_meta *m, const tc_train *tr) {
    if (t == Py_None) {
        PyObject *z = tc_empty_strided(m->ndim, m->sizes, m->strides, m->dtype, tr->device_type, tr->device_index);
        if (z == NULL)
            return NULL;
        PyObject *r = PyObject_CallMethod(z, "zero_", NULL);
        Py_DECREF(z);
        return r;
    }
    tc_meta tm;
    if (!tc_is_tensor(t)) {
        PyErr_SetString(PyExc_TypeError, "torchc backward: a gradient is not a tensor");
        return NULL;
    }
    tc_tensor_meta(t, &tm);
    int same = tm.ndim == m->ndim && tm.dtype == (int)m->dtype;
    for (int i = 0; same && i < m->ndim; i++)
        same = tm.sizes[i] == m->sizes[i];
    if (!same) {
        PyErr_SetString(PyExc_RuntimeError, "torchc backward: a gradient's shape or dtype differs from its output's");
        return NULL;
    }
    int64_t e = 1;
    int contig = 1, strided = 1; /* m row-major; t already in m's layout */
    for (int i = m->ndim - 1; i >= 0; i--) {
        if (m->sizes[i] == 1)
            continue;
        contig &= m->strides[i] == e;
        strided &= tm.strides[i] == m->strides[i];
        e *= m->sizes[i];
    }
    if (contig)
        return PyObject_CallMethod(t, "contiguous", NULL);
    if (strided) /* a channels-last output's gradient, channels-last (autograd.c grad_layout) */
        return Py_NewRef(t);
    PyObject *z = tc_empty_strided(m->ndim, m->sizes, m->strides, m->dtype, tr->device_type, tr->device_index);
    if (z == NULL)
        return NULL;
    PyObject *r = PyObject_CallMethod(z, "copy_", "O", t);
    Py_DECREF(z);
    return r;
}

static PyObject *run_backward(PyObject *cap, PyObject *args) {
    tc_train *tr = PyCapsule_GetPointer(cap, CAPSULE);
    PyObject *saved, *grads;
    int create_graph = 0;
    if (tr == NULL || !PyArg_ParseTuple(args, "OO|p", &saved, &grads, &create_graph))
        return NULL;
    if (create_graph)
        tr->eager = 1;
    if (saved == Py_None) /* a double backward replayed eagerly (torchc/_autograd.py): the mark only */
        Py_RETURN_NONE;
    saved = PySequence_Fast(saved, "saved tensors");
    if (saved == NULL)
        return NULL;
    grads = PySequence_Fast(grads, "gradients");
    if (grads == NULL) {
        Py_DECREF(saved);
        return NULL;
    }
    if (ensure_compiled(tr) < 0) {
        Py_DECREF(saved);
        Py_DECREF(grads);
        return NULL;
    }
    const ic_autograd *ag = &tr->ag;
    int nin = ag->nbwd_in, nout = ag->nbwd_out;
    PyObject **keep = calloc((size_t)nin + 1, sizeof *keep);
    PyObject **outs = calloc((size_t)nout + 1, sizeof *outs);
    void **ptrs = calloc((size_t)(nin + nout) + 1, sizeof *ptrs);
    PyObject *res = NULL;
    if (keep == NULL || outs == NULL || ptrs == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t s = 0;
    for (int k = 0; k < nin; k++) {
        if (ag->bwd_in_kind[k] == IC_AG_GRAD_CAME) { /* did output j's gradient come */
            int j = ag->bwd_in_index[k];
            int c = j < PySequence_Fast_GET_SIZE(grads) && PySequence_Fast_GET_ITEM(grads, j) != Py_None;
            if (tr->came[c] == NULL) {
                PyObject *z = tc_empty_strided(0, NULL, NULL, IC_BOOL, tr->device_type, tr->device_index);
                tr->came[c] = z ? PyObject_CallMethod(z, "fill_", "O", c ? Py_True : Py_False) : NULL;
                Py_XDECREF(z);
                if (tr->came[c] == NULL)
                    goto done;
            }
            keep[k] = Py_NewRef(tr->came[c]);
        } else if (ag->bwd_in_kind[k] == IC_AG_GRAD_OUT) {
            int j = ag->bwd_in_index[k];
            if (j >= PySequence_Fast_GET_SIZE(grads)) {
                PyErr_SetString(PyExc_RuntimeError, "torchc backward: missing gradient");
                goto done;
            }
            keep[k] = grad_buffer(PySequence_Fast_GET_ITEM(grads, j), &tr->in_meta[k], tr);
            if (keep[k] == NULL)
                goto done;
        } else {
            if (s >= PySequence_Fast_GET_SIZE(saved)) {
                PyErr_SetString(PyExc_RuntimeError, "torchc backward: missing saved tensor");
                goto done;
            }
            keep[k] = Py_NewRef(PySequence_Fast_GET_ITEM(saved, s++));
        }
        ptrs[k] = tc_data_ptr(keep[k]);
    }
    for (int i = 0; i < nout; i++) {
        const ic_meta *m = ic_compiled_output_meta(tr->bwd, i);
        outs[i] = tc_empty_strided(m->ndim, m->sizes, m->strides, m->dtype, tr->device_type, tr->device_index);
        if (outs[i] == NULL)
            goto done;
        ptrs[nin + i] = tc_data_ptr(outs[i]);
    }
    ic_err err = {0};
    int rc;
    if (tr->device_type == TC_DEV_CUDA) {
        void *stream = NULL;
        if (tc_cuda_current_stream(tr->device_index, &stream) < 0)
            goto done;
        rc = ic_run_on(tr->bwd, ptrs, ptrs + nin, stream, &err);
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = ic_run(tr->bwd, ptrs, ptrs + nin, &err);
        Py_END_ALLOW_THREADS
    }
    if (rc != 0) {
        if (PyErr_Occurred()) /* a custom op's KeyboardInterrupt or MemoryError: as eager */
            goto done;
        PyErr_Format(PyExc_RuntimeError, "torchc: compiled backward failed: %s", err.msg);
        goto done;
    }
    res = PyTuple_New(nout);
    if (res == NULL)
        goto done;
    for (int i = 0; i < nout; i++) {
        /* eager leaves .grad None where no gradient reaches the input: here, where the
         * gradients of all the outputs it reaches came as None (outputs of the graph that
         * the loss does not use; ctx.set_materialize_grads(False) in torchc/_autograd.py) */
        int reached = ag->out_dep == NULL;
        int any = 0;
        for (int j = 0; !reached && j < ag->nuser_out; j++) {
            if (!ag->out_dep[(size_t)i * ag->nuser_out + j])
                continue;
            any = 1;
            reached = j < PySequence_Fast_GET_SIZE(grads) && PySequence_Fast_GET_ITEM(grads, j) != Py_None;
        }
        if (!any) /* reads no output's gradient (a constant zero): whenever the node runs */
            reached = 1;
        PyTuple_SET_ITEM(res, i, reached ? outs[i] : Py_NewRef(Py_None));
        if (reached)
            outs[i] = NULL;
    }
done:
    if (keep)
        for (int k = 0; k < nin; k++)
            Py_XDECREF(keep[k]);
    if (outs)
        for (int i = 0; i < nout; i++)
            Py_XDECREF(outs[i]);
    free(keep);
    free(outs);
    free(ptrs);
    Py_DECREF(saved);
    Py_DECREF(grads);
    return res;
}

static PyMethodDef runner_def = {"torchc_backward", run_backward, METH_VARARGS, "runs a compiled backward graph"};

PyObject *tc_train_new(ic_autograd *ag, const ic_options *opt, int nfwd_in, int device_type, int device_index,
                       PyObject *detach) {
    tc_train *tr = calloc(1, sizeof *tr);
    if (tr == NULL) {
        Py_XDECREF(detach);
        ic_autograd_clear(ag);
        return PyErr_NoMemory();
    }
    tr->ag = *ag;
    memset(ag, 0, sizeof *ag);
    tr->opt = *opt;
    tr->nfwd_in = nfwd_in;
    tr->device_type = device_type;
    tr->device_index = device_index;
    tr->detach = detach;
    if (tr->ag.bwd) {
        int n = ic_graph_num_inputs(tr->ag.bwd);
        tr->in_meta = calloc((size_t)n + 1, sizeof *tr->in_meta);
        if (tr->in_meta == NULL) {
            train_free(tr);
            return PyErr_NoMemory();
        }
        for (int i = 0; i < n; i++)
            tr->in_meta[i] = *ic_value_meta(tr->ag.bwd, ic_graph_input(tr->ag.bwd, i));
        tr->bwd_text = ic_graph_to_string(tr->ag.bwd);
        tr->bwd_ops = ic_graph_num_ops(tr->ag.bwd);
        /* config backward_ahead: the backward compiles beside the forward's compile (the
         * caller's next step) instead of after the forward has run; nothing reads or frees
         * tr->ag.bwd but the job until it is taken (ensure_compiled) or orphaned (train_free) */
        if (ic_config_int(IC_CFG_backward_ahead))
            start_job(tr);
    }
    PyObject *cap = PyCapsule_New(tr, CAPSULE, capsule_destroy);
    if (cap == NULL) {
        train_free(tr);
        return NULL;
    }
    return cap;
}

/* the bound runner, made per attach (cheap) so that the capsule is never in a cycle */
int tc_train_attach(PyObject *train, PyObject **outs, int nout, PyObject *const *inputs, const char *fwd_text,
                    const unsigned char *mutated, const int *input_src, PyObject *const *dirty) {
    static PyObject *attach_fn;
    tc_train *tr = PyCapsule_GetPointer(train, CAPSULE);
    if (tr == NULL)
        return -1;
    const ic_autograd *ag = &tr->ag;
    if (attach_fn == NULL) {
        PyObject *mod = PyImport_ImportModule("torchc._autograd");
        attach_fn = mod ? PyObject_GetAttrString(mod, "attach") : NULL;
        Py_XDECREF(mod);
        if (attach_fn == NULL)
            return -1;
    }
    int nuser = ag->nuser_out, nsaved = 0, nchk = 0, ndirty = 0;
    for (int k = 0; k < ag->nbwd_in; k++)
        nsaved += ag->bwd_in_kind[k] != IC_AG_GRAD_OUT && ag->bwd_in_kind[k] != IC_AG_GRAD_CAME;
    /* what eager's autograd keeps of the inputs and outputs, saved after the backward's
     * own tensors only for autograd's version check (unpacking them at backward raises
     * eager's error if one was updated in place since) */
    for (int i = 0; ag->check_in && i < tr->nfwd_in; i++)
        nchk += ag->check_in[i] != 0;
    for (int j = 0; ag->check_out && j < nuser; j++)
        nchk += ag->check_out[j] != 0;
    PyObject *runner = NULL, *saved = NULL, *uo = NULL, *diff = NULL, *args = NULL, *r = NULL, *rep = NULL;
    PyObject *dt = NULL;
    int rc = -1;
    if (nuser > nout) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: training entry output count");
        return -1;
    }
    for (int j = 0; dirty != NULL && j < nuser; j++)
        ndirty += dirty[j] != NULL;
    runner = PyCFunction_New(&runner_def, train);
    saved = PyTuple_New(nsaved + nchk);
    uo = PyTuple_New(nuser);
    diff = PyTuple_New(nuser);
    dt = PyTuple_New(ndirty);
    args = PyTuple_New(6 + ag->nbwd_out);
    if (!runner || !saved || !uo || !diff || !dt || !args)
        goto done;
    /* double backward's eager replay (torchc/_autograd.py): the forward's text and inputs,
     * references only, and each tensor input's version now (a replay checks that none was
     * updated in place since; None for the others); an input the frame updated in place (its
     * value at the forward is gone) is None */
    if (tr->detach != NULL && fwd_text != NULL) {
        if (tr->replay == NULL && (tr->replay = Py_BuildValue("[sOO]", fwd_text, Py_None, tr->detach)) == NULL)
            goto done;
        PyObject *ins = PyTuple_New(tr->nfwd_in), *vers = PyTuple_New(tr->nfwd_in);
        if (ins == NULL || vers == NULL) {
            Py_XDECREF(ins);
            Py_XDECREF(vers);
            goto done;
        }
        for (int i = 0; i < tr->nfwd_in; i++) {
            PyObject *in = mutated && mutated[input_src[i]] ? Py_None : inputs[i];
            PyTuple_SET_ITEM(ins, i, Py_NewRef(in));
            int64_t v;
            PyObject *vo = !tc_is_tensor(in) ? Py_NewRef(Py_None)
                           : tc_tensor_version(in, &v) == 0 ? PyLong_FromLongLong((long long)v) : NULL;
            if (vo == NULL) {
                Py_DECREF(ins);
                Py_DECREF(vers);
                goto done;
            }
            PyTuple_SET_ITEM(vers, i, vo);
        }
        rep = PyTuple_Pack(3, tr->replay, ins, vers);
        Py_DECREF(ins);
        Py_DECREF(vers);
        if (rep == NULL)
            goto done;
    } else {
        rep = Py_NewRef(Py_None);
    }
    for (int k = 0, s = 0; k < ag->nbwd_in; k++) {
        int i = ag->bwd_in_index[k];
        PyObject *o;
        if (ag->bwd_in_kind[k] == IC_AG_GRAD_OUT || ag->bwd_in_kind[k] == IC_AG_GRAD_CAME)
            continue;
        o = ag->bwd_in_kind[k] == IC_AG_FWD_INPUT ? inputs[i] : outs[i];
        PyTuple_SET_ITEM(saved, s++, Py_NewRef(o));
    }
    int c = nsaved;
    for (int i = 0; ag->check_in && i < tr->nfwd_in; i++)
        if (ag->check_in[i])
            PyTuple_SET_ITEM(saved, c++, Py_NewRef(inputs[i]));
    for (int j = 0; ag->check_out && j < nuser; j++)
        if (ag->check_out[j])
            PyTuple_SET_ITEM(saved, c++, Py_NewRef(outs[j]));
    for (int j = 0; j < nuser; j++) {
        PyTuple_SET_ITEM(uo, j, Py_NewRef(outs[j]));
        PyTuple_SET_ITEM(diff, j, PyBool_FromLong(ag->out_diff[j]));
    }
    /* the frame's in-place updates: (j, tensor, keep, zeros) (torchc/_autograd.py Write):
     * keep: eager keeps the updated tensor for the backward; zeros: the backward graph gives
     * its old value no gradient through output j */
    for (int j = 0, d = 0; dirty != NULL && j < nuser; j++) {
        if (dirty[j] == NULL)
            continue;
        int zeros = 1;
        for (int k = 0; k < ag->nbwd_out && zeros; k++)
            if (inputs[ag->bwd_out_input[k]] == dirty[j] &&
                (ag->out_dep == NULL || ag->out_dep[(size_t)k * nuser + j]))
                zeros = 0;
        PyObject *w = Py_BuildValue("(iONN)", j, dirty[j], PyBool_FromLong(ag->check_out && ag->check_out[j]),
                                    PyBool_FromLong(zeros));
        if (w == NULL)
            goto done;
        PyTuple_SET_ITEM(dt, d++, w);
    }
    PyTuple_SET_ITEM(args, 0, runner);
    PyTuple_SET_ITEM(args, 1, saved);
    PyTuple_SET_ITEM(args, 2, uo);
    PyTuple_SET_ITEM(args, 3, diff);
    PyTuple_SET_ITEM(args, 4, rep);
    PyTuple_SET_ITEM(args, 5, dt);
    runner = saved = uo = diff = rep = dt = NULL;
    for (int k = 0; k < ag->nbwd_out; k++)
        PyTuple_SET_ITEM(args, 6 + k, Py_NewRef(inputs[ag->bwd_out_input[k]]));
    r = PyObject_Call(attach_fn, args, NULL);
    if (r == NULL)
        goto done;
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != nuser) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: the autograd node returned the wrong outputs");
        goto done;
    }
    for (int j = 0; j < nuser; j++) {
        Py_SETREF(outs[j], Py_NewRef(PyTuple_GET_ITEM(r, j)));
    }
    rc = 0;
done:
    Py_XDECREF(runner);
    Py_XDECREF(saved);
    Py_XDECREF(uo);
    Py_XDECREF(diff);
    Py_XDECREF(args);
    Py_XDECREF(rep);
    Py_XDECREF(dt);
    Py_XDECREF(r);
    return rc;
}

char *tc_train_describe(PyObject *train, long long *saved_bytes, int *bwd_ops, int *nsaved, int *compiled) {
    tc_train *tr = PyCapsule_GetPointer(train, CAPSULE);
    if (tr == NULL) {
        (void)tc_clear_expected(PyExc_ValueError); /* not a training capsule: no description */
        return NULL;
    }
    *compiled = tr->bwd != NULL;
    *saved_bytes = tr->ag.saved_bytes;
    *bwd_ops = tr->bwd_ops;
    *nsaved = tr->ag.nsaved;
    return tr->bwd_text ? strdup(tr->bwd_text) : NULL;
}

const char *tc_train_eager_reason(PyObject *train) {
    tc_train *tr = PyCapsule_GetPointer(train, CAPSULE);
    if (tr == NULL) {
        (void)tc_clear_expected(PyExc_ValueError);
        return NULL;
    }
    return tr->eager ? "training: double backward (create_graph=True) through the compiled backward: "
                       "the frame runs eagerly (torch's autograd records the backward)"
                     : NULL;
}

int tc_is_autograd_function(PyObject *cls) {
    static PyObject *fn_type; /* torch.autograd.Function, kept for the process */
    if (!PyType_Check(cls))
        return 0;
    if (fn_type == NULL) {
        PyObject *mod = PyImport_ImportModule("torch.autograd.function");
        fn_type = mod ? PyObject_GetAttrString(mod, "Function") : NULL;
        Py_XDECREF(mod);
        if (fn_type == NULL || !PyType_Check(fn_type)) {
            Py_CLEAR(fn_type);
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            return 0;
        }
    }
    return cls != fn_type && PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)fn_type);
}

int tc_is_autograd_ctx(PyObject *obj) {
    static PyObject *ctx_type; /* torch.autograd.function.FunctionCtx, kept for the process */
    if (obj == NULL)
        return 0;
    if (ctx_type == NULL) {
        PyObject *mod = PyImport_ImportModule("torch.autograd.function");
        ctx_type = mod ? PyObject_GetAttrString(mod, "FunctionCtx") : NULL;
        Py_XDECREF(mod);
        if (ctx_type == NULL || !PyType_Check(ctx_type)) {
            Py_CLEAR(ctx_type);
            (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
            return 0;
        }
    }
    return PyObject_TypeCheck(obj, (PyTypeObject *)ctx_type);
}

const ic_autograd *tc_train_parts(PyObject *train, const ic_compiled **bwd, const ic_meta **in_meta,
                                  int *device_type) {
    tc_train *tr = PyCapsule_GetPointer(train, CAPSULE);
    if (tr == NULL)
        return NULL;
    /* the backward is compiled lazily (first backward call); a scan needs it now */
    if (tr->bwd == NULL && tr->ag.bwd != NULL && ensure_compiled(tr) < 0)
        return NULL;
    *bwd = tr->bwd;
    *in_meta = tr->in_meta;
    *device_type = tr->device_type;
    return &tr->ag;
}
