/* backend.c — torchc.compile(f, backend="eager" | "aot_eager" | <name> | callable): each graph
 * the hook captures is handed to that backend as a torch.fx.GraphModule (torchc/_fx_export.py
 * builds it from the graph's text) instead of torchc's inductor; what the backend returns runs
 * in the entry's place of the compiled kernels. Guards, graph breaks, resume functions, the
 * output structure and the replay of mutations stay torchc's (symbolic.c, eval_frame.c). */
#include "dh_internal.h"

#include <time.h>

#include "aten_bridge.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

PyObject *dh_backend_export(const ic_graph *g, PyObject *backend, int device_type, int device_index) {
    double t0 = now_ms();
    char *text = ic_graph_to_string(g);
    if (text == NULL)
        return PyErr_NoMemory();
    char dev[32];
    if (device_type == TC_DEV_CUDA)
        snprintf(dev, sizeof dev, "cuda:%d", device_index > 0 ? device_index : 0);
    else
        snprintf(dev, sizeof dev, "cpu");
    PyObject *r = NULL, *mod = PyImport_ImportModule("torchc._fx_export");
    if (mod != NULL)
        r = PyObject_CallMethod(mod, "compile_graph", "Oss", backend, text, dev);
    free(text);
    Py_XDECREF(mod);
    dh_tl_ctimes[DH_CT_EXPORT] += now_ms() - t0;
    if (r == Py_None)
        Py_CLEAR(r); /* no FX form: torchc compiles the graph (the reason is logged) */
    return r;
}

int dh_backend_run(const dh_entry *e, PyObject *const *values, PyObject **outs, int nout) {
    PyObject *small[16], **args = small;
    if (e->ninputs > 16 && (args = malloc(sizeof *args * (size_t)e->ninputs)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < e->ninputs; i++)
        args[i] = values[e->input_src[i]];
    int busy = dh_tl_busy;
    dh_tl_busy = 1; /* the backend's code runs as it is, not captured again */
    PyObject *r = PyObject_Vectorcall(e->backend_fn, args, (size_t)e->ninputs, NULL);
    dh_tl_busy = busy;
    if (args != small)
        free(args);
    if (r == NULL)
        return -1;
    int rc = -1;
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != nout) {
        PyErr_Format(PyExc_RuntimeError, "torchc: the backend's compiled graph returned %R; expected %d tensors",
                     r, nout);
        goto done;
    }
    for (int i = 0; i < nout; i++)
        if (!tc_is_tensor(PyTuple_GET_ITEM(r, i))) {
            PyErr_Format(PyExc_RuntimeError, "torchc: the backend's compiled graph returned %R as output %d, "
                         "not a tensor", PyTuple_GET_ITEM(r, i), i);
            goto done;
        }
    for (int i = 0; i < nout; i++)
        outs[i] = Py_NewRef(PyTuple_GET_ITEM(r, i));
    rc = 0;
done:
    Py_DECREF(r);
    return rc;
}
