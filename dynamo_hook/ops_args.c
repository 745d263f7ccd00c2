/* ops_args.c — reading the arguments of torch calls: tensors, ints, bools, shapes, dims,
 * dtypes (the helpers every op handler uses).
 */
#include "ops_internal.h"

/* ---- helpers -------------------------------------------------------------------- */

/* A Python int the graph's constants (doubles) hold exactly: |x| <= 2**53, or a power-of-two
 * multiple beyond (2**62). Others (x == 2**62 + 1 of an int64 tensor) are left to eager. */
int sym_int_const_exact(trace *t, PyObject *o) {
    if (!PyLong_Check(o) || PyBool_Check(o))
        return 0;
    int ovf = 0;
    long long ll = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (ovf || (ll == -1 && PyErr_Occurred())) {
        (void)tc_clear_expected(PyExc_Exception);
        return 0; /* beyond int64: the callers' own checks */
    }
    double d = (double)ll;
    if (d >= 9223372036854775808.0 || (long long)d != ll)
        return sym_fail(t, "an integer constant beyond 2**53 the graph can't hold exactly, left to eager");
    return 0;
}

int sym_as_tensor(trace *t, const var *v, ic_val *out) {
    if (v->kind == V_TENSOR) {
        *out = v->val;
        return 0;
    }
    if (v->kind == V_CONST && (PyFloat_Check(v->obj) || PyLong_Check(v->obj))) {
        /* int/float subclasses (IntEnum members) are numbers to torch as well */
        ic_dtype kind = PyBool_Check(v->obj) ? IC_BOOL : PyFloat_Check(v->obj) ? IC_F64 : IC_I64;
        double x = PyFloat_Check(v->obj) ? PyFloat_AS_DOUBLE(v->obj) : (double)PyLong_AsLongLong(v->obj);
        if (PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_OverflowError);
            return sym_fail(t, "integer constant out of range");
        }
        if (sym_int_const_exact(t, v->obj) < 0)
            return -1;
        *out = ic_scalar(t->g, x, kind);
        return *out < 0 ? sym_check_graph(t) : 0;
    }
    return sym_fail(t, "expected a tensor or a number, got %s",
                    v->kind == V_CONST ? Py_TYPE(v->obj)->tp_name : "a non-tensor value");
}

int sym_tensor_out(trace *t, ic_val v, var *out) {
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
    *out = sym_var(V_TENSOR);
    out->val = v;
    out->oid = sym_new_object(t, v);
    return out->oid > 0 ? 0 : -1;
}

int sym_is_none(const var *v) { return v == NULL || (v->kind == V_CONST && v->obj == Py_None); }

/* eager refuses `-` with a bool operand (tensor or Python bool): "Subtraction, the `-`
 * operator, with a bool tensor is not supported" */
static int is_bool_operand(trace *t, const var *v) {
    if (v->kind == V_TENSOR)
        return ic_value_meta(t->g, v->val)->dtype == IC_BOOL;
    return v->kind == V_CONST && PyBool_Check(v->obj);
}

int sym_sub_bool_check(trace *t, const var *a, const var *b) {
    if (is_bool_operand(t, a) || is_bool_operand(t, b))
        return sym_fail(t, "subtraction with a bool tensor (eager raises)");
    return 0;
}

/* An in-place update of self whose operand is another view of self's storage: eager
 * refuses partial overlap ("some elements of the input tensor and the written-to tensor
 * refer to a single memory location") or reads elements already written; left to eager. */
int sym_inplace_overlap_check(trace *t, const var *self, const var *args, int n) {
    for (int i = 0; i < n; i++)
        if (args[i].kind == V_TENSOR && args[i].oid > 0 && self->oid > 0 && args[i].oid != self->oid &&
            sym_alias_same(t, args[i].oid, self->oid))
            return sym_fail(t, "in-place update reading another view of the same memory (eager decides)");
    return 0;
}

/* a Python int as a long long: one out of range fails the trace (PyLong_AsLongLong's -1 would
 * be taken as a value, its OverflowError left pending) */
static int ll_of(trace *t, PyObject *o, long long *out, const char *what) {
    int ovf = 0;
    *out = PyLong_AsLongLongAndOverflow(o, &ovf);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    return ovf ? sym_fail(t, "%s: an int out of range (eager decides)", what) : 0;
}

int sym_get_int(trace *t, const var *v, long long *out, const char *what) {
    if (v && v->kind == V_CONST && (PyLong_CheckExact(v->obj) || PyBool_Check(v->obj)))
        return ll_of(t, v->obj, out, what);
    if (sym_const_int_tensor(t, v, out)) /* ops_models.c: a 0-d constant, its __index__ */
        return 0;
    if (v && v->kind == V_TENSOR) /* a tensor's value: known only when the graph runs */
        return sym_fail(t, "%s from a tensor's value (data-dependent; must be a constant int)", what);
    return sym_fail(t, "%s must be a constant int", what);
}

int sym_get_bool(trace *t, const var *v, int dflt, int *out, const char *what) {
    if (sym_is_none(v)) {
        *out = dflt;
        return 0;
    }
    if (v->kind == V_CONST && (PyBool_Check(v->obj) || PyLong_CheckExact(v->obj))) {
        *out = PyObject_IsTrue(v->obj);
        return 0;
    }
    return sym_fail(t, "%s must be a constant bool", what);
}

/* a constant str argument (None: dflt) as UTF-8, borrowed from the trace's constant; one
 * that is not a str, or does not encode (a lone surrogate), fails the trace with a reason
 * (eager raises its own error on the re-run) */
int sym_get_str(trace *t, const var *v, const char *dflt, const char **out, const char *what) {
    if (sym_is_none(v) && dflt != NULL) {
        *out = dflt;
        return 0;
    }
    if (v == NULL || v->kind != V_CONST || !PyUnicode_Check(v->obj))
        return sym_fail(t, "%s must be a constant string", what);
    *out = PyUnicode_AsUTF8(v->obj);
    if (*out == NULL)
        return tc_clear_expected(PyExc_UnicodeError) < 0 ? -1 : sym_fail(t, "%s is not a valid string", what);
    return 0;
}

/* Meta of a value, never NULL (a zero meta for a failed builder: the graph's error is
 * reported where the value is used). */
const ic_meta *sym_metap(trace *t, ic_val v) {
    static const ic_meta zero;
    const ic_meta *m = v >= 0 ? ic_value_meta(t->g, v) : NULL;
    return m ? m : &zero;
}

int sym_ndim_of(trace *t, ic_val v) { return sym_metap(t, v)->ndim; }

int sym_norm_dim(trace *t, long long d, int ndim, int *out) {
    int n = ndim > 0 ? ndim : 1;
    if (d < -n || d >= n)
        return sym_fail(t, "dim %lld out of range for %d-d tensor", d, ndim);
    *out = (int)(d < 0 ? d + n : d);
    return 0;
}

/* the number of values of an int list argument (a tuple, a list, a traced sequence; 1 else) */
Py_ssize_t sym_ints_len(const var *v) {
    if (v->kind == V_CONST && PyTuple_Check(v->obj))
        return PyTuple_GET_SIZE(v->obj);
    if (v->kind == V_CONST && PyList_CheckExact(v->obj))
        return PyList_GET_SIZE(v->obj);
    return v->kind == V_SEQ ? v->n : 1;
}

/* int, tuple/list of ints, torch.Size or a SEQ of consts → list of ints */
int sym_get_ints(trace *t, const var *v, long long *out, int max, int *n, const char *what) {
    *n = 0;
    if (v->kind == V_CONST && (PyLong_CheckExact(v->obj) || PyBool_Check(v->obj)))
        return ll_of(t, v->obj, &out[(*n)++], what);
    if (v->kind == V_CONST && PyTuple_Check(v->obj)) {
        Py_ssize_t k = PyTuple_GET_SIZE(v->obj);
        if (k > max)
            return sym_fail(t, "%s: too many values", what);
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *it = PyTuple_GET_ITEM(v->obj, i);
            if (!PyLong_Check(it))
                return sym_fail(t, "%s must hold ints", what);
            if (ll_of(t, it, &out[(*n)++], what) < 0)
                return -1;
        }
        return 0;
    }
    if (v->kind == V_CONST && PyList_CheckExact(v->obj)) {
        Py_ssize_t k = PyList_GET_SIZE(v->obj);
        if (k > max)
            return sym_fail(t, "%s: too many values", what);
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *it = PyList_GET_ITEM(v->obj, i);
            if (!PyLong_Check(it))
                return sym_fail(t, "%s must hold ints", what);
            if (ll_of(t, it, &out[(*n)++], what) < 0)
                return -1;
        }
        return 0;
    }
    if (v->kind == V_SEQ) {
        if (v->n > max)
            return sym_fail(t, "%s: too many values", what);
        for (int i = 0; i < v->n; i++) {
            long long x;
            if (sym_get_int(t, &v->items[i], &x, what) < 0)
                return -1;
            out[(*n)++] = x;
        }
        return 0;
    }
    return sym_fail(t, "%s must be ints", what);
}

/* varargs shapes: f(x, 2, 3) or f(x, (2, 3)) — p[1] holds the packed extra positionals */
int sym_get_shape_args(trace *t, const var *rest, long long *out, int *n, const char *what) {
    if (rest->kind == V_SEQ && rest->n == 1 && rest->items[0].kind != V_TENSOR &&
        !(rest->items[0].kind == V_CONST && PyLong_Check(rest->items[0].obj)))
        return sym_get_ints(t, &rest->items[0], out, IC_MAX_DIMS, n, what);
    return sym_get_ints(t, rest, out, IC_MAX_DIMS, n, what);
}

/* Shape arguments that hold symbolic ints (x.view(B * T, C)): 1 with out[] filled when a
 * V_SYM is among them, 0 when none (use get_shape_args), -1 on failure. */
int sym_get_sym_shape_args(trace *t, const var *rest, ic_dim *out, int *n) {
    const var *seq = rest;
    if (rest->kind == V_SEQ && rest->n == 1 && rest->items[0].kind == V_SEQ)
        seq = &rest->items[0];
    if (seq->kind != V_SEQ)
        return 0;
    int any = 0;
    for (int i = 0; i < seq->n; i++)
        any |= seq->items[i].kind == V_SYM;
    if (!any)
        return 0;
    if (seq->n > IC_MAX_DIMS)
        return sym_fail(t, "too many sizes");
    for (int i = 0; i < seq->n; i++)
        if (!sym_dim_of(t, &seq->items[i], &out[i]))
            return sym_fail(t, "sizes must be ints");
    *n = seq->n;
    return 1;
}

int sym_dims_mask(trace *t, const var *dim, int ndim, uint32_t *mask) {
    *mask = 0;
    if (sym_is_none(dim))
        return 0;
    long long ds[IC_MAX_DIMS];
    int n;
    if (sym_get_ints(t, dim, ds, IC_MAX_DIMS, &n, "dim") < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int d = 0;
        if (sym_norm_dim(t, ds[i], ndim, &d) < 0)
            return -1;
        if (*mask & (1u << d)) /* a 0-d input's dims 0 and -1 are one dim: (0, -1) repeats it */
            return sym_fail(t, "dim %d repeated", d);
        *mask |= 1u << d;
    }
    if (n == 0 || ndim == 0)
        *mask = 0; /* dim=() or a 0-d input: reduce everything */
    return 0;
}

/* a dtype argument: a torch.dtype, or a Python type torch's argument parser takes for one
 * (int: int64, float: float64, bool: bool; complex has no graph dtype); -1: neither */
int sym_dtype_arg(PyObject *o) {
    if (o == (PyObject *)&PyLong_Type)
        return IC_I64;
    if (o == (PyObject *)&PyFloat_Type)
        return IC_F64;
    if (o == (PyObject *)&PyBool_Type)
        return IC_BOOL;
    return sym_dtype_from_object(o);
}

int sym_get_dtype(trace *t, const var *v, int *out) {
    if (sym_is_none(v)) {
        *out = -1;
        return 0;
    }
    if ((v->kind == V_CONST || v->kind == V_FUNC || v->kind == V_OBJ) && v->obj != NULL) { /* int: a V_FUNC */
        int d = sym_dtype_arg(v->obj);
        if (d >= 0) {
            *out = d;
            return 0;
        }
    }
    return sym_fail(t, "dtype must be a torch.dtype");
}
