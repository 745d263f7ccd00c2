/* layout.c — eager's memory formats in the trace.
 *
 * The graph knows the strides eager gives every value (inductor_c/graph/strides.c); the
 * ops that choose a layout on purpose set it here: clone(memory_format=),
 * contiguous(), to(memory_format=), and in-place updates (a tensor keeps its strides
 * whatever the update computed).
 */
#include "sym.h"

#include <string.h>

/* torch.preserve_format / contiguous_format / channels_last / channels_last_3d */
static PyObject *formats[4];

static int load_formats(void) {
    static const char *names[4] = {"preserve_format", "contiguous_format", "channels_last", "channels_last_3d"};
    if (formats[0] != NULL)
        return 0;
    PyObject *torch = PyImport_ImportModule("torch");
    if (torch == NULL)
        return -1;
    PyObject *got[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++) {
        got[i] = PyObject_GetAttrString(torch, names[i]);
        if (got[i] == NULL) {
            for (int j = 0; j < i; j++)
                Py_DECREF(got[j]);
            Py_DECREF(torch);
            return -1;
        }
    }
    Py_DECREF(torch);
    for (int i = 0; i < 4; i++)
        formats[i] = got[i]; /* owned for the process */
    return 0;
}

int dh_is_memory_format(PyObject *o) {
    if (load_formats() < 0) {
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (o == formats[i])
            return 1;
    return 0;
}

int dh_memory_format(trace *t, const var *v, int *fmt) {
    *fmt = IC_MF_PRESERVE;
    if (v == NULL || (v->kind == V_CONST && v->obj == Py_None))
        return 0;
    if (v->kind != V_CONST)
        return sym_fail(t, "memory_format is not a constant");
    if (load_formats() < 0) {
        (void)tc_clear_expected(PyExc_ImportError, PyExc_AttributeError);
        return sym_fail(t, "torch memory formats not found");
    }
    static const int codes[4] = {IC_MF_PRESERVE, IC_MF_CONTIGUOUS, IC_MF_CHANNELS_LAST, IC_MF_CHANNELS_LAST_3D};
    for (int i = 0; i < 4; i++)
        if (v->obj == formats[i]) {
            *fmt = codes[i];
            return 0;
        }
    return sym_fail(t, "unknown memory_format (eager decides)");
}

int dh_layout_copy(trace *t, ic_val x, int fmt, var *out) {
    if (x < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
    ic_val v = ic_cast(t->g, x, ic_value_meta(t->g, x)->dtype);
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
    if (ic_value_set_format(t->g, v, x, fmt) < 0)
        return sym_fail(t, "memory_format does not fit the tensor's rank (eager raises)");
    memset(out, 0, sizeof *out);
    out->kind = V_TENSOR;
    out->src = -1;
    out->val = v;
    out->oid = sym_new_object(t, v);
    return out->oid > 0 ? 0 : -1;
}

int dh_layout_keep(trace *t, ic_val old, ic_val *newval) {
    int64_t so[IC_MAX_DIMS], sn[IC_MAX_DIMS];
    const ic_meta *m = ic_value_meta(t->g, old);
    int nd = m->ndim;
    if (!ic_value_strides(t->g, old, so) || !ic_value_strides(t->g, *newval, sn) ||
        !memcmp(so, sn, sizeof(int64_t) * (size_t)nd))
        return 0;
    /* a copy with the tensor's strides: *newval may be another tensor's value (copy_) */
    ic_val c = ic_cast(t->g, *newval, ic_value_meta(t->g, *newval)->dtype);
    if (c < 0)
        return sym_check_graph(t);
    ic_value_set_strides(t->g, c, so);
    *newval = c;
    return 0;
}

void dh_layout_scalar_args(trace *t, const var *a, const var *b, const var *out) {
    if (out->kind != V_TENSOR)
        return;
    if (a->kind == V_TENSOR && (b == NULL || b->kind != V_TENSOR))
        ic_value_set_format(t->g, out->val, a->val, IC_MF_UNARY_OF);
    else if (a->kind != V_TENSOR && b != NULL && b->kind == V_TENSOR) /* ATen pow.Scalar */
        ic_value_set_format(t->g, out->val, out->val, IC_MF_CONTIGUOUS);
}
