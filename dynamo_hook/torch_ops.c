/* torch_ops.c — torch calls seen by the trace, lowered to inductor_c graph builders.
 *
 * One table (OPS) lists every supported callable: where it lives (torch.X, torch.nn.
 * functional.X, Tensor.X), its Python signature, and its handler. The signature string
 * names parameters in order; names after '|' are keyword-only. Anything not in the table
 * fails the trace with a reason (eager fallback).
 */
#include "sym.h"

#include <math.h>
#include <string.h>

enum { W_TORCH = 1, W_F = 2, W_METHOD = 4, W_ALL = 7, W_LINALG = 8 /* torch.linalg.* */ };
#define MAXP 16

typedef struct opdef opdef;
typedef int (*handler)(trace *t, const opdef *d, var **p, var *out);
struct opdef {
    const char *name;
    unsigned where;
    const char *sig;
    handler fn;
    int op; /* ic_op for generic handlers */
};

/* ---- helpers -------------------------------------------------------------------- */

static int as_tensor(trace *t, const var *v, ic_val *out) {
    if (v->kind == V_TENSOR) {
        *out = v->val;
        return 0;
    }
    if (v->kind == V_CONST && (PyFloat_CheckExact(v->obj) || PyLong_CheckExact(v->obj) ||
                               PyBool_Check(v->obj))) {
        ic_dtype kind = PyBool_Check(v->obj) ? IC_BOOL : PyFloat_CheckExact(v->obj) ? IC_F64 : IC_I64;
        double x = PyFloat_CheckExact(v->obj) ? PyFloat_AS_DOUBLE(v->obj) : (double)PyLong_AsLongLong(v->obj);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return sym_fail(t, "integer constant out of range");
        }
        *out = ic_scalar(t->g, x, kind);
        return *out < 0 ? sym_check_graph(t) : 0;
    }
    return sym_fail(t, "expected a tensor or a number, got %s",
                    v->kind == V_CONST ? Py_TYPE(v->obj)->tp_name : "a non-tensor value");
}

static int tensor_out(trace *t, ic_val v, var *out) {
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
    memset(out, 0, sizeof *out);
    out->kind = V_TENSOR;
    out->src = -1;
    out->val = v;
    out->oid = sym_new_object(t, v);
    return out->oid > 0 ? 0 : -1;
}

static int is_none(const var *v) { return v == NULL || (v->kind == V_CONST && v->obj == Py_None); }

/* eager refuses `-` with a bool operand (tensor or Python bool): "Subtraction, the `-`
 * operator, with a bool tensor is not supported" */
static int is_bool_operand(trace *t, const var *v) {
    if (v->kind == V_TENSOR)
        return ic_value_meta(t->g, v->val)->dtype == IC_BOOL;
    return v->kind == V_CONST && PyBool_Check(v->obj);
}

static int sub_bool_check(trace *t, const var *a, const var *b) {
    if (is_bool_operand(t, a) || is_bool_operand(t, b))
        return sym_fail(t, "subtraction with a bool tensor (eager raises)");
    return 0;
}

/* An in-place update of self whose operand is another view of self's storage: eager
 * refuses partial overlap ("some elements of the input tensor and the written-to tensor
 * refer to a single memory location") or reads elements already written; left to eager. */
static int inplace_overlap_check(trace *t, const var *self, const var *args, int n) {
    for (int i = 0; i < n; i++)
        if (args[i].kind == V_TENSOR && args[i].oid > 0 && self->oid > 0 && args[i].oid != self->oid &&
            sym_alias_same(t, args[i].oid, self->oid))
            return sym_fail(t, "in-place update reading another view of the same memory (eager decides)");
    return 0;
}

static int get_int(trace *t, const var *v, long long *out, const char *what) {
    if (v && v->kind == V_CONST && (PyLong_CheckExact(v->obj) || PyBool_Check(v->obj))) {
        *out = PyLong_AsLongLong(v->obj);
        return 0;
    }
    return sym_fail(t, "%s must be a constant int", what);
}

static int get_bool(trace *t, const var *v, int dflt, int *out, const char *what) {
    if (is_none(v)) {
        *out = dflt;
        return 0;
    }
    if (v->kind == V_CONST && (PyBool_Check(v->obj) || PyLong_CheckExact(v->obj))) {
        *out = PyObject_IsTrue(v->obj);
        return 0;
    }
    return sym_fail(t, "%s must be a constant bool", what);
}

/* Meta of a value, never NULL (a zero meta for a failed builder: the graph's error is
 * reported where the value is used). */
static const ic_meta *metap(trace *t, ic_val v) {
    static const ic_meta zero;
    const ic_meta *m = v >= 0 ? ic_value_meta(t->g, v) : NULL;
    return m ? m : &zero;
}

static int ndim_of(trace *t, ic_val v) { return metap(t, v)->ndim; }

static int norm_dim(trace *t, long long d, int ndim, int *out) {
    int n = ndim > 0 ? ndim : 1;
    if (d < -n || d >= n)
        return sym_fail(t, "dim %lld out of range for %d-d tensor", d, ndim);
    *out = (int)(d < 0 ? d + n : d);
    return 0;
}

/* int, tuple/list of ints, torch.Size or a SEQ of consts → list of ints */
static int get_ints(trace *t, const var *v, long long *out, int max, int *n, const char *what) {
    *n = 0;
    if (v->kind == V_CONST && (PyLong_CheckExact(v->obj) || PyBool_Check(v->obj))) {
        out[(*n)++] = PyLong_AsLongLong(v->obj);
        return 0;
    }
    if (v->kind == V_CONST && PyTuple_Check(v->obj)) {
        Py_ssize_t k = PyTuple_GET_SIZE(v->obj);
        if (k > max)
            return sym_fail(t, "%s: too many values", what);
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *it = PyTuple_GET_ITEM(v->obj, i);
            if (!PyLong_Check(it))
                return sym_fail(t, "%s must hold ints", what);
            out[(*n)++] = PyLong_AsLongLong(it);
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
            out[(*n)++] = PyLong_AsLongLong(it);
        }
        return 0;
    }
    if (v->kind == V_SEQ) {
        if (v->n > max)
            return sym_fail(t, "%s: too many values", what);
        for (int i = 0; i < v->n; i++) {
            long long x;
            if (get_int(t, &v->items[i], &x, what) < 0)
                return -1;
            out[(*n)++] = x;
        }
        return 0;
    }
    return sym_fail(t, "%s must be ints", what);
}

/* varargs shapes: f(x, 2, 3) or f(x, (2, 3)) — p[1] holds the packed extra positionals */
static int get_shape_args(trace *t, const var *rest, long long *out, int *n, const char *what) {
    if (rest->kind == V_SEQ && rest->n == 1 && rest->items[0].kind != V_TENSOR &&
        !(rest->items[0].kind == V_CONST && PyLong_Check(rest->items[0].obj)))
        return get_ints(t, &rest->items[0], out, IC_MAX_DIMS, n, what);
    return get_ints(t, rest, out, IC_MAX_DIMS, n, what);
}

/* Shape arguments that hold symbolic ints (x.view(B * T, C)): 1 with out[] filled when a
 * V_SYM is among them, 0 when none (use get_shape_args), -1 on failure. */
static int get_sym_shape_args(trace *t, const var *rest, ic_dim *out, int *n) {
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

static int dims_mask(trace *t, const var *dim, int ndim, uint32_t *mask) {
    *mask = 0;
    if (is_none(dim))
        return 0;
    long long ds[IC_MAX_DIMS];
    int n;
    if (get_ints(t, dim, ds, IC_MAX_DIMS, &n, "dim") < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int d;
        if (norm_dim(t, ds[i], ndim, &d) < 0)
            return -1;
        if (ndim == 0)
            continue;
        if (*mask & (1u << d))
            return sym_fail(t, "dim %d repeated", d);
        *mask |= 1u << d;
    }
    if (n == 0 || ndim == 0)
        *mask = 0; /* dim=() or a 0-d input: reduce everything */
    return 0;
}

static int get_dtype(trace *t, const var *v, int *out) {
    if (is_none(v)) {
        *out = -1;
        return 0;
    }
    if (v->kind == V_CONST) {
        int d = sym_dtype_from_object(v->obj);
        if (d >= 0) {
            *out = d;
            return 0;
        }
    }
    return sym_fail(t, "dtype must be a torch.dtype");
}

/* ---- handlers ------------------------------------------------------------------- */

/* Integer %, // and fmod raise on a zero divisor in eager: a constant 0 is refused, a
 * divisor that is a graph input is checked for zeros before each run (eager runs then),
 * a computed integer divisor is not supported. */
static int int_div_check(trace *t, ic_op op, ic_val x, ic_val y, const var *bv) {
    if (op != IC_OP_FLOOR_DIVIDE && op != IC_OP_REMAINDER && op != IC_OP_FMOD)
        return 0;
    const ic_meta *mx = ic_value_meta(t->g, x), *my = ic_value_meta(t->g, y);
    if (mx == NULL || my == NULL || mx->dtype >= IC_F16 || my->dtype >= IC_F16)
        return 0;
    if (bv->kind == V_CONST) {
        int zero = PyObject_Not(bv->obj);
        if (zero < 0)
            PyErr_Clear();
        return zero ? sym_fail(t, "integer division by zero (eager raises ZeroDivisionError)") : 0;
    }
    if (bv->kind != V_TENSOR || ic_value_op(t->g, y) != IC_OP_INPUT)
        return sym_fail(t, "integer division by a computed tensor (a zero divisor can't be checked)");
    int k = 0;
    for (ic_val v = 0; v < y; v++)
        if (ic_value_op(t->g, v) == IC_OP_INPUT)
            k++;
    int s = t->input_src[k];
    for (int i = 0; i < t->nidx; i++)
        if (t->idx_src[i] == s && t->idx_bound[i] == -1)
            return 0;
    if (t->nidx >= 16)
        return sym_fail(t, "too many checked inputs");
    t->idx_src[t->nidx] = s;
    t->idx_gather[t->nidx] = 0;
    t->idx_bound[t->nidx++] = -1; /* -1: no zero element */
    return 0;
}

static int h_binary(trace *t, const opdef *d, var **p, var *out) {
    ic_val a, b;
    if (as_tensor(t, p[0], &a) < 0 || as_tensor(t, p[1], &b) < 0)
        return -1;
    if (p[0]->kind != V_TENSOR && p[1]->kind != V_TENSOR)
        return sym_fail(t, "%s of two numbers", d->name);
    var bv = *p[1];
    sym_resolve(t, &bv);
    if (int_div_check(t, (ic_op)d->op, a, b, &bv) < 0)
        return -1;
    return tensor_out(t, ic_binary(t->g, (ic_op)d->op, a, b), out);
}

static int h_add_sub(trace *t, const opdef *d, var **p, var *out) {
    ic_val a, b;
    if (d->op == IC_OP_SUB && sub_bool_check(t, p[0], p[1]) < 0)
        return -1;
    if (as_tensor(t, p[0], &a) < 0 || as_tensor(t, p[1], &b) < 0)
        return -1;
    if (!is_none(p[2])) {
        if (!sym_is_number(p[2]))
            return sym_fail(t, "alpha must be a number");
        ic_val al;
        if (as_tensor(t, p[2], &al) < 0)
            return -1;
        b = ic_binary(t->g, IC_OP_MUL, b, al);
    }
    return tensor_out(t, ic_binary(t->g, (ic_op)d->op, a, b), out);
}

static int h_div(trace *t, const opdef *d, var **p, var *out) {
    if (!is_none(p[2]))
        return sym_fail(t, "div with rounding_mode not supported yet");
    return h_binary(t, d, p, out);
}

static int h_unary(trace *t, const opdef *d, var **p, var *out) {
    int inplace = 0;
    if (p[1] && get_bool(t, p[1], 0, &inplace, "inplace") < 0)
        return -1;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_val r = ic_unary(t->g, (ic_op)d->op, p[0]->val);
    if (inplace) { /* F.relu(x, inplace=True): x is updated and returned */
        if (sym_mutate(t, p[0], r) < 0)
            return -1;
        *out = *p[0];
        sym_resolve(t, out);
        return 0;
    }
    return tensor_out(t, r, out);
}

static int h_square(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "square of a non-tensor");
    return tensor_out(t, ic_binary(t->g, IC_OP_MUL, p[0]->val, p[0]->val), out);
}

static int h_gelu(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "gelu of a non-tensor");
    ic_op op = IC_OP_GELU;
    if (!is_none(p[1])) {
        if (p[1]->kind != V_CONST || !PyUnicode_Check(p[1]->obj))
            return sym_fail(t, "gelu approximate must be a string");
        const char *s = PyUnicode_AsUTF8(p[1]->obj);
        if (strcmp(s, "tanh") == 0)
            op = IC_OP_GELU_TANH;
        else if (strcmp(s, "none") != 0)
            return sym_fail(t, "gelu approximate=%s", s);
    }
    return tensor_out(t, ic_unary(t->g, op, p[0]->val), out);
}

static int h_where(trace *t, const opdef *d, var **p, var *out) {
    ic_val c, a, b;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "where condition must be a tensor");
    if (p[1] == NULL || p[2] == NULL)
        return sym_fail(t, "where(condition) (nonzero) not supported");
    if (as_tensor(t, p[0], &c) < 0 || as_tensor(t, p[1], &a) < 0 || as_tensor(t, p[2], &b) < 0)
        return -1;
    return tensor_out(t, ic_where(t->g, c, a, b), out);
}

static int h_clamp(trace *t, const opdef *d, var **p, var *out) {
    ic_val x = p[0]->val, lo, hi;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "clamp of a non-tensor");
    var *mn = p[1], *mx = p[2];
    if (d->op == 1) { /* clamp_max */
        mx = p[1];
        mn = NULL;
    } else if (d->op == 2) { /* clamp_min */
        mx = NULL;
    }
    if (is_none(mn) && is_none(mx))
        return sym_fail(t, "clamp needs min or max");
    if (!is_none(mn)) {
        if (as_tensor(t, mn, &lo) < 0)
            return -1;
        x = ic_binary(t->g, IC_OP_MAXIMUM, x, lo);
    }
    if (!is_none(mx)) {
        if (as_tensor(t, mx, &hi) < 0)
            return -1;
        x = ic_binary(t->g, IC_OP_MINIMUM, x, hi);
    }
    return tensor_out(t, x, out);
}

static int h_reduce(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    int nd = ndim_of(t, p[0]->val), keep = 0, dt = -1;
    uint32_t mask;
    if (dims_mask(t, p[1], nd, &mask) < 0 || get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (p[3] && get_dtype(t, p[3], &dt) < 0)
        return -1;
    if ((d->op == IC_OP_AMAX || d->op == IC_OP_AMIN) && is_none(p[1]) && p[1] != NULL && 0)
        return -1;
    return tensor_out(t, ic_reduce(t->g, (ic_op)d->op, p[0]->val, mask, keep, dt), out);
}

/* max(x) / max(x, other) / max(x, dim) */
static int h_max_min(trace *t, const opdef *d, var **p, var *out) {
    if (p[1] == NULL) {
        if (p[0]->kind != V_TENSOR)
            return sym_fail(t, "%s of a non-tensor", d->name);
        return tensor_out(t, ic_reduce(t->g, d->op == IC_OP_MAXIMUM ? IC_OP_AMAX : IC_OP_AMIN,
                                       p[0]->val, 0, 0, -1), out);
    }
    if (p[1]->kind == V_TENSOR) {
        opdef b = *d;
        return h_binary(t, &b, p, out);
    }
    /* max(x, dim, keepdim=False): (values, indices) = (amax, argmax) over dim */
    long long dd;
    int dim, keep = 0, nd = ndim_of(t, p[0]->val);
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    if (get_int(t, p[1], &dd, "dim") < 0 || norm_dim(t, dd, nd, &dim) < 0 ||
        get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (nd == 0)
        return sym_fail(t, "%s(dim) of a 0-d tensor not supported yet", d->name);
    if (metap(t, p[0]->val)->sizes[dim] == 0)
        return sym_fail(t, "%s(dim) over an empty dim (eager will raise)", d->name);
    int mx = d->op == IC_OP_MAXIMUM;
    ic_val v = ic_reduce(t->g, mx ? IC_OP_AMAX : IC_OP_AMIN, p[0]->val, 1u << dim, keep, -1);
    ic_val i = ic_reduce(t->g, mx ? IC_OP_ARGMAX : IC_OP_ARGMIN, p[0]->val, 1u << dim, keep, -1);
    if (v < 0 || i < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s(dim) failed", d->name);
    return sym_return_pair(t, mx ? "max" : "min", v, i, out);
}

int sym_return_pair(trace *t, const char *name, ic_val values, ic_val indices, var *out) {
    PyObject *rt = PyImport_ImportModule("torch.return_types");
    PyObject *tp = rt ? PyObject_GetAttrString(rt, name) : NULL;
    Py_XDECREF(rt);
    if (tp == NULL || sym_keep(t, tp) == NULL) {
        PyErr_Clear();
        return sym_fail(t, "torch.return_types.%s not found", name);
    }
    var *items = sym_alloc(t, 2);
    if (items == NULL || tensor_out(t, values, &items[0]) < 0 || tensor_out(t, indices, &items[1]) < 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->kind = V_SEQ;
    out->src = -1;
    out->n = 2;
    out->items = items;
    out->obj = tp;
    return 0;
}

static int softmax_common(trace *t, var **p, int dim_i, int dtype_i, int log, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "softmax of a non-tensor");
    if (is_none(p[dim_i]))
        return sym_fail(t, "softmax without dim");
    long long dd;
    int dim, dt = -1;
    if (get_int(t, p[dim_i], &dd, "dim") < 0 || norm_dim(t, dd, ndim_of(t, p[0]->val), &dim) < 0)
        return -1;
    if (p[dtype_i] && get_dtype(t, p[dtype_i], &dt) < 0)
        return -1;
    ic_val x = p[0]->val;
    if (dt >= 0)
        x = ic_cast(t->g, x, (ic_dtype)dt);
    else if (ic_value_meta(t->g, x)->dtype < IC_F16)
        return sym_fail(t, "softmax of an integer tensor");
    /* f16/bf16: eager's kernels compute in f32 and round once (the output); so does this */
    ic_dtype io = ic_value_meta(t->g, x)->dtype;
    int half = io == IC_F16 || io == IC_BF16;
    if (half)
        x = ic_cast(t->g, x, IC_F32);
    uint32_t mask = ndim_of(t, x) ? 1u << dim : 0;
    ic_val m = ic_reduce(t->g, IC_OP_AMAX, x, mask, 1, -1);
    if (sym_value_requires_grad(t, m)) /* training: the shift's gradient is zero (eager's formula) */
        m = ic_detach(t->g, m);
    ic_val s = ic_binary(t->g, IC_OP_SUB, x, m);
    ic_val e = ic_unary(t->g, IC_OP_EXP, s);
    ic_val z = ic_reduce(t->g, IC_OP_SUM, e, mask, 1, -1);
    ic_val r = log ? ic_binary(t->g, IC_OP_SUB, s, ic_unary(t->g, IC_OP_LOG, z))
                   : ic_binary(t->g, IC_OP_DIV, e, z);
    if (half)
        r = ic_cast(t->g, r, io);
    return tensor_out(t, r, out);
}

static int h_softmax(trace *t, const opdef *d, var **p, var *out) {
    /* F.softmax(input, dim, _stacklevel, dtype); torch/Tensor: (input, dim, dtype) */
    int dtype_i = (d->where == W_F) ? 3 : 2;
    return softmax_common(t, p, 1, dtype_i, d->op, out);
}

/* x.to(x.dtype), x.float() on a float tensor, ...: eager returns x itself (an alias) */
static int same_tensor(trace *t, var **p, var *out) {
    *out = *p[0];
    sym_resolve(t, out);
    return 0;
}

static int h_cast(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "cast of a non-tensor");
    if (ic_value_meta(t->g, p[0]->val)->dtype == (ic_dtype)d->op)
        return same_tensor(t, p, out);
    return tensor_out(t, ic_cast(t->g, p[0]->val, (ic_dtype)d->op), out);
}

/* A device argument (str or torch.device): 1 with type/index (index -1: unspecified),
 * 0 when v is not a device. */
static int device_arg(const var *v, int *type, int *index) {
    if (v == NULL || v->kind != V_CONST || v->obj == NULL)
        return 0;
    if (!PyUnicode_Check(v->obj) && strcmp(Py_TYPE(v->obj)->tp_name, "torch.device") != 0)
        return 0;
    PyObject *s = PyObject_Str(v->obj);
    if (s == NULL) {
        PyErr_Clear();
        return 0;
    }
    const char *str = PyUnicode_AsUTF8(s);
    int ok = 1;
    *index = -1;
    if (str && strcmp(str, "cpu") == 0) {
        *type = TC_DEV_CPU;
        *index = 0;
    } else if (str && strncmp(str, "cuda", 4) == 0 && (str[4] == 0 || str[4] == ':')) {
        *type = TC_DEV_CUDA;
        if (str[4] == ':')
            *index = atoi(str + 5);
    } else {
        ok = 0;
    }
    Py_DECREF(s);
    return ok;
}

/* The graph's tensors all live on one device: a value made on (type, index) must be on
 * it (the first one decides when no input did). */
static int same_device(trace *t, int type, int index, const char *what) {
    if (t->device_type < 0) {
        if (type == TC_DEV_CUDA && index < 0)
            return sym_fail(t, "%s on the current CUDA device (index unknown) not supported yet", what);
        t->device_type = type;
        t->device_index = index;
        return 0;
    }
    if (t->device_type != type || (index >= 0 && t->device_index != index))
        return sym_fail(t, "%s on another device than the graph's (eager decides)", what);
    if (type == TC_DEV_CUDA && index < 0 && t->device_index != 0)
        return sym_fail(t, "%s on the current CUDA device (index unknown) not supported yet", what);
    return 0;
}

static PyObject *graph_device(trace *t) {
    PyObject *torch = PyImport_ImportModule("torch");
    PyObject *dev = NULL;
    if (torch != NULL)
        dev = t->device_type == TC_DEV_CUDA
                  ? PyObject_CallMethod(torch, "device", "si", "cuda", t->device_index > 0 ? t->device_index : 0)
                  : PyObject_CallMethod(torch, "device", "s", "cpu");
    Py_XDECREF(torch);
    return dev;
}

static int h_to(trace *t, const opdef *d, var **p, var *out) {
    /* x.to(dtype) / x.to(device) / x.to(device, dtype) / x.to(dtype=...) */
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "to() of a non-tensor");
    ic_val x = p[0]->val;
    if (!is_none(p[7]))
        return sym_fail(t, "to(memory_format=...) not supported yet");
    int copy = 0;
    if (!is_none(p[5]) && (p[5]->kind != V_CONST || (copy = PyObject_IsTrue(p[5]->obj)) < 0)) {
        PyErr_Clear();
        return sym_fail(t, "to(copy=...) not a constant");
    }
    for (int i = 1; i <= 2 || i == 6; i = i == 2 ? 6 : i + 1) {
        if (is_none(p[i]))
            continue;
        int dt = p[i]->kind == V_CONST ? sym_dtype_from_object(p[i]->obj) : -1;
        if (dt >= 0) {
            x = ic_cast(t->g, x, (ic_dtype)dt);
            continue;
        }
        int dtype_, dindex;
        if (device_arg(p[i], &dtype_, &dindex)) {
            /* to the graph's own device: no copy (eager returns self); elsewhere: a break */
            if (same_device(t, dtype_, dindex, "to(device)") < 0)
                return -1;
            continue;
        }
        return sym_fail(t, "unsupported to() argument");
    }
    if (!is_none(p[3])) {
        int dt;
        if (get_dtype(t, p[3], &dt) < 0)
            return -1;
        x = ic_cast(t->g, x, (ic_dtype)dt);
    }
    if (copy && x == p[0]->val) /* copy=True: a new tensor even without a conversion */
        x = ic_cast(t->g, x, ic_value_meta(t->g, x)->dtype);
    else if (x == p[0]->val || ic_value_meta(t->g, x)->dtype == ic_value_meta(t->g, p[0]->val)->dtype)
        return same_tensor(t, p, out); /* no conversion: eager returns self */
    return tensor_out(t, x, out);
}

static PyObject *ints_tuple(const int64_t *v, int n) {
    PyObject *tup = PyTuple_New(n);
    if (tup == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLongLong(v[i]);
        if (x == NULL) {
            Py_DECREF(tup);
            return NULL;
        }
        PyTuple_SET_ITEM(tup, i, x);
    }
    return tup;
}

static PyObject *perm_tuple(const int *perm, int n) {
    int64_t v[IC_MAX_DIMS];
    for (int i = 0; i < n; i++)
        v[i] = perm[i];
    return ints_tuple(v, n);
}

/* A view of in: name(*args) replayed on the real tensor when a view of an input is
 * returned (so the caller gets a real view, as from eager). args: new reference. */
static int view_out_desc(trace *t, const var *in, ic_val v, var *out, const char *name,
                         PyObject *args) {
    if (args == NULL)
        return -1;
    if (tensor_out(t, v, out) < 0) {
        Py_DECREF(args);
        return -1;
    }
    PyObject *desc = Py_BuildValue("(isN)", in->val, name, args);
    if (desc == NULL || sym_keep(t, desc) == NULL)
        return -1;
    sym_set_view_desc(t, v, desc);
    sym_mark_view(t, v, in->val);
    sym_alias_objects(t, out->oid, in->oid);
    return 0;
}

#define view_out(t, in, v, out) view_out_desc(t, in, v, out, "reshape", shape_args(t, v))

static PyObject *shape_args(trace *t, ic_val v) {
    const ic_meta *m = v >= 0 ? ic_value_meta(t->g, v) : NULL;
    if (m == NULL)
        return PyTuple_New(0);
    return Py_BuildValue("(N)", ints_tuple(m->sizes, m->ndim));
}

/* ---- eager strides of views: Tensor.view must refuse what eager refuses ----------- */

/* ATen's computeStride: the strides of a view of (sizes, strides) as nsizes, or 0 when no
 * view can express it (eager's view raises). */
static int view_strides(int n, const int64_t *sizes, const int64_t *strides, int nn,
                        const int64_t *nsizes, int64_t *nstrides) {
    int64_t numel = 1;
    for (int i = 0; i < n; i++)
        numel *= sizes[i];
    if (numel == 0 || n == 0) {
        int64_t st = 1;
        for (int i = nn - 1; i >= 0; i--) {
            nstrides[i] = st;
            st *= nsizes[i] > 1 ? nsizes[i] : 1;
        }
        return 1;
    }
    int vd = nn - 1;
    int64_t chunk = strides[n - 1], tn = 1, vn = 1;
    for (int td = n - 1; td >= 0; td--) {
        tn *= sizes[td];
        if (td == 0 || (sizes[td - 1] != 1 && strides[td - 1] != tn * chunk)) {
            while (vd >= 0 && (vn < tn || nsizes[vd] == 1)) {
                nstrides[vd] = vn * chunk;
                vn *= nsizes[vd];
                vd--;
            }
            if (vn != tn)
                return 0;
            if (td > 0) {
                chunk = strides[td - 1];
                tn = 1;
                vn = 1;
            }
        }
    }
    return vd == -1;
}

/* The strides eager gives value v (1), or 0 when not known (an indexing view, dynamic
 * sizes). Values no view made are taken as contiguous (inputs: their guarded strides). */
static int eager_strides(trace *t, ic_val v, int64_t *st, int depth) {
    ic_meta m = *ic_value_meta(t->g, v);
    if (m.dyn || depth > 64)
        return 0;
    PyObject *desc = v < t->capvals ? t->view_desc[v] : NULL;
    if (desc == NULL) {
        if (ic_value_op(t->g, v) == IC_OP_INPUT) {
            memcpy(st, m.strides, sizeof(int64_t) * (size_t)m.ndim);
            return 1;
        }
        int64_t a = 1;
        for (int i = m.ndim - 1; i >= 0; i--) {
            st[i] = a;
            a *= m.sizes[i] > 1 ? m.sizes[i] : 1;
        }
        return 1;
    }
    ic_val base = (ic_val)PyLong_AsLong(PyTuple_GET_ITEM(desc, 0));
    const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(desc, 1));
    PyObject *args = PyTuple_GET_ITEM(desc, 2);
    int64_t bs[IC_MAX_DIMS];
    if (name == NULL || !eager_strides(t, base, bs, depth + 1)) {
        PyErr_Clear();
        return 0;
    }
    ic_meta bm = *ic_value_meta(t->g, base);
    if (!strcmp(name, "narrow")) {
        memcpy(st, bs, sizeof(int64_t) * (size_t)bm.ndim);
        return 1;
    }
    if (!strcmp(name, "select")) {
        int dim = (int)PyLong_AsLong(PyTuple_GET_ITEM(args, 0)), k = 0;
        for (int i = 0; i < bm.ndim; i++)
            if (i != dim)
                st[k++] = bs[i];
        return k == m.ndim;
    }
    if (!strcmp(name, "permute")) {
        PyObject *perm = PyTuple_GET_ITEM(args, 0);
        if (!PyTuple_Check(perm) || PyTuple_GET_SIZE(perm) != m.ndim)
            return 0;
        for (int i = 0; i < m.ndim; i++)
            st[i] = bs[PyLong_AsLong(PyTuple_GET_ITEM(perm, i))];
        return !PyErr_Occurred() || (PyErr_Clear(), 0);
    }
    if (!strcmp(name, "expand")) {
        int lead = m.ndim - bm.ndim;
        for (int i = 0; i < m.ndim; i++)
            st[i] = i < lead ? 0 : (bm.sizes[i - lead] == 1 && m.sizes[i] != 1) ? 0 : bs[i - lead];
        return 1;
    }
    if (!strcmp(name, "reshape")) {
        if (view_strides(bm.ndim, bm.sizes, bs, m.ndim, m.sizes, st))
            return 1;
        int64_t a = 1; /* reshape copied */
        for (int i = m.ndim - 1; i >= 0; i--) {
            st[i] = a;
            a *= m.sizes[i] > 1 ? m.sizes[i] : 1;
        }
        return 1;
    }
    return 0;
}

/* x.view(shape): eager raises when x's strides can't express it */
static int view_check(trace *t, ic_val x, int n, const int64_t *sizes) {
    int64_t st[IC_MAX_DIMS], ns[IC_MAX_DIMS];
    ic_meta m = *ic_value_meta(t->g, x);
    if (!eager_strides(t, x, st, 0))
        return 0;
    int64_t numel = 1, known = 1;
    int neg = -1;
    for (int i = 0; i < m.ndim; i++)
        numel *= m.sizes[i];
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1)
            neg = i;
        else
            known *= sizes[i];
    }
    int64_t full[IC_MAX_DIMS], prod = 1;
    for (int i = 0; i < n; i++) {
        full[i] = i == neg ? (known ? numel / known : 0) : sizes[i];
        prod *= full[i];
    }
    if (prod != numel || n > IC_MAX_DIMS)
        return 0; /* an invalid shape: the reshape reports it */
    if (!view_strides(m.ndim, m.sizes, st, n, full, ns))
        return sym_fail(t, "view size is not compatible with input tensor's size and stride (eager raises)");
    return 0;
}

static int h_reshape(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "reshape of a non-tensor");
    long long s[IC_MAX_DIMS];
    int n;
    ic_dim sd[IC_MAX_DIMS];
    int sym = get_sym_shape_args(t, p[1], sd, &n);
    if (sym < 0)
        return -1;
    if (sym)
        return view_out(t, p[0], ic_reshape_dyn(t->g, p[0]->val, n, sd), out);
    if (get_shape_args(t, p[1], s, &n, "shape") < 0)
        return -1;
    int64_t s64[IC_MAX_DIMS];
    for (int i = 0; i < n; i++)
        s64[i] = s[i];
    if (!strcmp(d->name, "view") && view_check(t, p[0]->val, n, s64) < 0)
        return -1;
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, s64), out);
}

static int h_flatten(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "flatten of a non-tensor");
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long a = 0, b = -1;
    if (!is_none(p[1]) && get_int(t, p[1], &a, "start_dim") < 0)
        return -1;
    if (!is_none(p[2]) && get_int(t, p[2], &b, "end_dim") < 0)
        return -1;
    if (m->ndim == 0)
        return view_out(t, p[0], sym_reshape(t, p[0]->val, 1, (int64_t[]){1}), out);
    int s, e;
    if (norm_dim(t, a, m->ndim, &s) < 0 || norm_dim(t, b, m->ndim, &e) < 0)
        return -1;
    if (s > e)
        return sym_fail(t, "flatten start_dim > end_dim");
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s; i++)
        sz[n++] = m->sizes[i];
    int64_t prod = 1;
    for (int i = s; i <= e; i++)
        prod *= m->sizes[i];
    sz[n++] = prod;
    for (int i = e + 1; i < m->ndim; i++)
        sz[n++] = m->sizes[i];
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

/* x.unflatten(dim, sizes): dim split into sizes (one may be -1) */
static int h_unflatten(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "unflatten of a non-tensor");
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long a, parts[IC_MAX_DIMS];
    int k, dim;
    if (get_int(t, p[1], &a, "dim") < 0 || get_ints(t, p[2], parts, IC_MAX_DIMS, &k, "sizes") < 0)
        return -1;
    if (m->ndim == 0 || norm_dim(t, a, m->ndim, &dim) < 0)
        return sym_fail(t, "unflatten: bad dim (eager raises)");
    if (k == 0 || m->ndim - 1 + k > IC_MAX_DIMS)
        return sym_fail(t, "unflatten: %d sizes", k);
    if (m->dyn && !sym_dim_static(m->dims[dim]))
        return sym_fail(t, "unflatten of a dynamic dim");
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < k; i++) {
        if (parts[i] == -1 && infer < 0)
            infer = i;
        else if (parts[i] < 0)
            return sym_fail(t, "unflatten: bad sizes (eager raises)");
        else
            known *= parts[i];
    }
    if (infer >= 0) {
        if (known == 0 || m->sizes[dim] % known)
            return sym_fail(t, "unflatten: sizes do not divide the dim (eager raises)");
        parts[infer] = m->sizes[dim] / known;
    } else if (known != m->sizes[dim]) {
        return sym_fail(t, "unflatten: sizes do not match the dim (eager raises)");
    }
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < m->ndim; i++) {
        if (i != dim) {
            sz[n++] = m->sizes[i];
            continue;
        }
        for (int j = 0; j < k; j++)
            sz[n++] = parts[j];
    }
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

static int h_permute(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "permute of a non-tensor");
    long long s[IC_MAX_DIMS];
    int n, perm[IC_MAX_DIMS];
    int nd = ndim_of(t, p[0]->val);
    if (get_shape_args(t, p[1], s, &n, "dims") < 0)
        return -1;
    if (n != nd)
        return sym_fail(t, "permute: %d dims for a %d-d tensor", n, nd);
    for (int i = 0; i < n; i++)
        if (norm_dim(t, s[i], nd, &perm[i]) < 0)
            return -1;
    return view_out_desc(t, p[0], ic_permute(t->g, p[0]->val, perm), out, "permute",
                         Py_BuildValue("(N)", perm_tuple(perm, n)));
}

static int h_transpose(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "transpose of a non-tensor");
    int nd = ndim_of(t, p[0]->val), perm[IC_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        perm[i] = i;
    int a, b;
    if (d->op == 1) { /* t(): 2-d transpose, no-op below 2 dims */
        if (nd > 2)
            return sym_fail(t, "t() of a %d-d tensor", nd);
        if (nd < 2) {
            *out = *p[0];
            out->src = -1;
            return 0;
        }
        a = 0;
        b = 1;
    } else {
        long long x, y;
        if (get_int(t, p[1], &x, "dim0") < 0 || get_int(t, p[2], &y, "dim1") < 0 ||
            norm_dim(t, x, nd, &a) < 0 || norm_dim(t, y, nd, &b) < 0)
            return -1;
        if (nd == 0) {
            *out = *p[0];
            out->src = -1;
            return 0;
        }
    }
    perm[a] = b;
    perm[b] = a;
    return view_out_desc(t, p[0], ic_permute(t->g, p[0]->val, perm), out, "permute",
                         Py_BuildValue("(N)", perm_tuple(perm, nd)));
}

static int h_unsqueeze(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "unsqueeze of a non-tensor");
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long x;
    int dim;
    if (get_int(t, p[1], &x, "dim") < 0 || norm_dim(t, x, m->ndim + 1, &dim) < 0)
        return -1;
    if (m->ndim + 1 > IC_MAX_DIMS)
        return sym_fail(t, "too many dims");
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= m->ndim; i++) {
        if (i == dim)
            sz[n++] = 1;
        if (i < m->ndim)
            sz[n++] = m->sizes[i];
    }
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

static int h_squeeze(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "squeeze of a non-tensor");
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    uint32_t mask = 0;
    if (is_none(p[1])) {
        for (int i = 0; i < m->ndim; i++)
            if (m->sizes[i] == 1)
                mask |= 1u << i;
    } else {
        if (dims_mask(t, p[1], m->ndim, &mask) < 0)
            return -1;
        uint32_t keep = 0;
        for (int i = 0; i < m->ndim; i++)
            if ((mask >> i & 1) && m->sizes[i] == 1)
                keep |= 1u << i;
        mask = keep;
    }
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < m->ndim; i++)
        if (!(mask >> i & 1))
            sz[n++] = m->sizes[i];
    return view_out(t, p[0], sym_reshape(t, p[0]->val, n, sz), out);
}

static int h_expand(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "expand of a non-tensor");
    long long s[IC_MAX_DIMS];
    int n;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    ic_dim sd[IC_MAX_DIMS];
    int sym = get_sym_shape_args(t, p[1], sd, &n);
    if (sym < 0)
        return -1;
    if (sym) {
        for (int i = 0; i < n; i++) {
            int j = i - (n - m->ndim);
            if (sd[i].coef == -1 && sym_dim_static(sd[i]) && j >= 0)
                sd[i] = m->dyn ? m->dims[j] : (ic_dim){.coef = m->sizes[j]};
        }
        return view_out_desc(t, p[0], ic_expand_dyn(t->g, p[0]->val, n, sd), out, "expand",
                             shape_args(t, -1));
    }
    if (get_shape_args(t, p[1], s, &n, "sizes") < 0)
        return -1;
    int64_t s64[IC_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int j = i - (n - m->ndim);
        s64[i] = (s[i] == -1 && j >= 0) ? m->sizes[j] : s[i];
    }
    return view_out_desc(t, p[0], ic_expand(t->g, p[0]->val, n, s64), out, "expand",
                         Py_BuildValue("(N)", ints_tuple(s64, n)));
}

static int h_identity(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (d->op == 1 && p[0]->val < t->capvals && t->view_desc[p[0]->val] != NULL) {
        /* contiguous() of a view: a copy unless eager's strides are already contiguous
         * (a new object: what it is used for must not reach the viewed tensor) */
        int64_t es[IC_MAX_DIMS], st = 1;
        int contig = eager_strides(t, p[0]->val, es, 0);
        for (int i = m->ndim - 1; i >= 0 && contig; i--) {
            if (m->sizes[i] != 1 && es[i] != st)
                contig = 0;
            st *= m->sizes[i];
        }
        if (!contig)
            return tensor_out(t, ic_cast(t->g, p[0]->val, m->dtype), out);
    }
    if (d->op == 1) { /* contiguous(): a no-op only when already contiguous */
        int64_t st = 1;
        for (int i = m->ndim - 1; i >= 0; i--) {
            if (m->sizes[i] != 1 && m->strides[i] != st)
                return sym_fail(t, "contiguous() of a non-contiguous tensor not supported yet");
            st *= m->sizes[i];
        }
    }
    *out = *p[0];
    if (d->op == 0 && sym_value_requires_grad(t, out->val)) { /* training: a stop-gradient */
        out->val = ic_detach(t->g, out->val);
        if (out->val < 0)
            return sym_check_graph(t);
    }
    if (d->op == 0 && out->oid > 0) {
        /* detach(): a new tensor object sharing the data: both become aliased, so an
         * in-place update through either is not captured (eager handles it) */
        int in_oid = out->oid;
        out->oid = sym_new_object(t, out->val);
        if (out->oid <= 0)
            return -1;
        sym_alias_objects(t, out->oid, in_oid);
        out->src = -1;
    }
    return 0;
}

/* size of dim d: a symbolic int when the dim is dynamic */
static int size_out(trace *t, const ic_meta *m, int d, var *out) {
    if (m->dyn)
        return sym_symint(t, m->dims[d], out);
    return sym_const(t, PyLong_FromLongLong(m->sizes[d]), out);
}

static int numel_out(trace *t, const ic_meta *m, var *out) {
    ic_dim n;
    memset(&n, 0, sizeof n);
    n.coef = 1;
    for (int i = 0; i < m->ndim; i++) {
        if (!m->dyn) {
            n.coef *= m->sizes[i];
            continue;
        }
        n.coef *= m->dims[i].coef;
        for (int k = 0; k < IC_MAX_SYMS; k++)
            n.exp[k] += m->dims[i].exp[k];
    }
    return sym_symint(t, n.coef == 0 ? (ic_dim){0} : n, out);
}

static int h_size(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "size() of a non-tensor");
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (d->op == 1) /* dim() / ndimension() */
        return sym_const(t, PyLong_FromLong(m->ndim), out);
    if (d->op == 2) /* numel() */
        return numel_out(t, m, out);
    if (is_none(p[1])) {
        var tmp = *p[0];
        return sym_tensor_attr(t, &tmp, NULL, out);
    }
    long long x;
    int dim;
    if (get_int(t, p[1], &x, "dim") < 0 || norm_dim(t, x, m->ndim, &dim) < 0)
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "size(dim) of a 0-d tensor");
    return size_out(t, m, dim, out);
}

/* layer_norm(input, normalized_shape, weight, bias, eps) over the trailing dims */
static int h_layer_norm(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR || p[1] == NULL)
        return sym_fail(t, "%s: bad arguments", d->name);
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long ns[IC_MAX_DIMS];
    int k;
    if (get_ints(t, p[1], ns, IC_MAX_DIMS, &k, "normalized_shape") < 0)
        return -1;
    if (k > m->ndim || k == 0)
        return sym_fail(t, "%s: normalized_shape does not match", d->name);
    for (int i = 0; i < k; i++)
        if (m->sizes[m->ndim - k + i] != ns[i])
            return sym_fail(t, "%s: normalized_shape does not match (eager will raise)", d->name);
    if (m->dtype != IC_F32 && m->dtype != IC_F64 && m->dtype != IC_F16 && m->dtype != IC_BF16)
        return sym_fail(t, "%s of a non-float tensor", d->name);
    /* 16-bit inputs: computed in float32 (weight and bias too), rounded once at the end, as
     * ATen's kernels do */
    ic_dtype io = m->dtype, acc = io == IC_F64 ? IC_F64 : IC_F32;
    uint32_t mask = 0;
    for (int i = m->ndim - k; i < m->ndim; i++)
        mask |= 1u << i;
    int rms = d->op == 1;
    var *eps_v = rms ? p[3] : p[4];
    double eps = rms ? (acc == IC_F32 ? 1.1920928955078125e-07 : 2.220446049250313e-16) : 1e-5;
    if (!is_none(eps_v)) {
        if (!sym_is_number(eps_v))
            return sym_fail(t, "eps must be a number");
        eps = PyFloat_AsDouble(eps_v->obj);
    }
    ic_val x = io == acc ? p[0]->val : ic_cast(t->g, p[0]->val, acc), y;
    ic_val e = ic_scalar(t->g, eps, IC_F64);
    if (rms) {
        ic_val ms = ic_reduce(t->g, IC_OP_MEAN, ic_binary(t->g, IC_OP_MUL, x, x), mask, 1, -1);
        y = ic_binary(t->g, IC_OP_MUL, x, ic_unary(t->g, IC_OP_RSQRT, ic_binary(t->g, IC_OP_ADD, ms, e)));
    } else {
        ic_val mu = ic_reduce(t->g, IC_OP_MEAN, x, mask, 1, -1);
        ic_val xc = ic_binary(t->g, IC_OP_SUB, x, mu);
        ic_val var = ic_reduce(t->g, IC_OP_MEAN, ic_binary(t->g, IC_OP_MUL, xc, xc), mask, 1, -1);
        y = ic_binary(t->g, IC_OP_MUL, xc, ic_unary(t->g, IC_OP_RSQRT, ic_binary(t->g, IC_OP_ADD, var, e)));
    }
    var *w = p[2], *b = rms ? NULL : p[3];
    if (!is_none(w)) {
        if (w->kind != V_TENSOR)
            return sym_fail(t, "weight must be a tensor");
        y = ic_binary(t->g, IC_OP_MUL, y, io == acc ? w->val : ic_cast(t->g, w->val, acc));
    }
    if (!is_none(b)) {
        if (b->kind != V_TENSOR)
            return sym_fail(t, "bias must be a tensor");
        y = ic_binary(t->g, IC_OP_ADD, y, io == acc ? b->val : ic_cast(t->g, b->val, acc));
    }
    return tensor_out(t, io == acc ? y : ic_cast(t->g, y, io), out);
}

/* dropout(input, p, training, inplace): identity unless training */
static int h_dropout(trace *t, const opdef *d, var **p, var *out) {
    int training = 1, inplace = 0;
    if (get_bool(t, p[2], 1, &training, "training") < 0 || get_bool(t, p[3], 0, &inplace, "inplace") < 0)
        return -1;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "dropout of a non-tensor");
    if (!is_none(p[1]) && sym_is_number(p[1]) && PyFloat_AsDouble(p[1]->obj) == 0.0)
        training = 0;
    if (training) { /* x * mask, the mask drawn by ATen when the graph runs (training: saved) */
        double pr = is_none(p[1]) ? 0.5 : PyFloat_AsDouble(p[1]->obj);
        if (is_none(p[1]) || !sym_is_number(p[1]) || PyErr_Occurred() || inplace || !(pr >= 0 && pr <= 1)) {
            PyErr_Clear();
            return sym_fail(t, "dropout in training mode with a non-constant p or inplace=True not supported yet");
        }
        ic_val mask = ic_extern(t->g, IC_EXT_DROPOUT_MASK, 1, &p[0]->val, 0, NULL, pr, 1.0);
        return tensor_out(t, ic_binary(t->g, IC_OP_MUL, p[0]->val, mask), out);
    }
    (void)inplace; /* eval-mode dropout is the identity, in place or not */
    *out = *p[0];
    out->src = -1;
    return 0;
}

/* zero_() / fill_(v) / copy_(src): the new value broadcast to self's shape */
static int h_fill(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    ic_val v;
    if (d->op == 0)
        v = ic_scalar(t->g, 0.0, IC_I64);
    else if (p[1] == NULL)
        return sym_fail(t, "%s needs a value", d->name);
    else if (d->op == 2 && p[1]->kind != V_TENSOR)
        return sym_fail(t, "copy_ from a non-tensor");
    else if (as_tensor(t, p[1], &v) < 0)
        return -1;
    int64_t sz[IC_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++)
        sz[i] = m->sizes[i];
    ic_val c = ic_cast(t->g, v, m->dtype);
    ic_val e = ic_expand(t->g, c, m->ndim, sz);
    if (sym_mutate(t, p[0], e) < 0)
        return -1;
    *out = *p[0];
    sym_resolve(t, out);
    return 0;
}

/* argmax/argmin(input, dim=None, keepdim=False) */
static int h_arg(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    int nd = ndim_of(t, p[0]->val), keep = 0;
    uint32_t mask = 0;
    if (get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (!is_none(p[1])) {
        long long x;
        int dim;
        if (get_int(t, p[1], &x, "dim") < 0 || norm_dim(t, x, nd, &dim) < 0)
            return -1;
        mask = nd ? 1u << dim : 0;
    } else if (keep) {
        return sym_fail(t, "%s(dim=None, keepdim=True) not supported", d->name);
    }
    return tensor_out(t, ic_reduce(t->g, (ic_op)d->op, p[0]->val, mask, keep, -1), out);
}

static int tensors_of(trace *t, const var *seq, ic_val *vals, int max, int *n) {
    var *items;
    int k;
    if (seq->kind != V_SEQ)
        return sym_fail(t, "expected a sequence of tensors");
    items = seq->items;
    k = seq->n;
    if (k < 1 || k > max)
        return sym_fail(t, "sequence of %d tensors not supported", k);
    for (int i = 0; i < k; i++) {
        var it = items[i];
        sym_resolve(t, &it);
        if (it.kind != V_TENSOR)
            return sym_fail(t, "expected tensors in the sequence");
        vals[i] = it.val;
    }
    *n = k;
    return 0;
}

static ic_val unsqueeze_val(trace *t, ic_val x, int dim) {
    ic_meta m_copy = *metap(t, x);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    int64_t sz[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= m->ndim; i++) {
        if (i == dim)
            sz[n++] = 1;
        if (i < m->ndim)
            sz[n++] = m->sizes[i];
    }
    return sym_reshape(t, x, n, sz);
}

/* cat(tensors, dim) / stack(tensors, dim) */
static int h_cat(trace *t, const opdef *d, var **p, var *out) {
    ic_val v[64];
    int n;
    long long dd = 0;
    if (tensors_of(t, p[0], v, 64, &n) < 0 || (!is_none(p[1]) && get_int(t, p[1], &dd, "dim") < 0))
        return -1;
    if (d->op == 0) {
        /* ATen's legacy rule: 1-d empty tensors are skipped (a cache grown from
         * torch.tensor([]) by cat); they must not change the result dtype */
        int m = 0, nonempty = 0;
        for (int i = 0; i < n; i++) {
            const ic_meta *mi = metap(t, v[i]);
            nonempty += !(mi->ndim == 1 && mi->sizes[0] == 0);
        }
        for (int i = 0; i < n && nonempty > 0 && nonempty < n; i++) {
            const ic_meta *mi = metap(t, v[i]);
            if (mi->ndim == 1 && mi->sizes[0] == 0) {
                int same = 0;
                for (int j = 0; j < n; j++)
                    same |= j != i && metap(t, v[j])->dtype == mi->dtype;
                if (!same)
                    return sym_fail(t, "cat: an empty 1-d tensor of another dtype");
                continue;
            }
            v[m++] = v[i];
        }
        if (nonempty > 0 && nonempty < n)
            n = m;
    }
    int nd = ndim_of(t, v[0]) + (d->op == 1);
    int dim;
    if (norm_dim(t, dd, nd, &dim) < 0)
        return -1;
    if (d->op == 1)
        for (int i = 0; i < n; i++)
            v[i] = unsqueeze_val(t, v[i], dim);
    ic_val r = v[0];
    for (int i = 1; i < n; i++)
        r = ic_cat(t->g, r, v[i], dim);
    if (n == 1 && d->op == 0) /* cat of one tensor: a copy */
        r = ic_cast(t->g, r, ic_value_meta(t->g, r)->dtype);
    return tensor_out(t, r, out);
}

/* narrow(input, dim, start, length) / select(input, dim, index) */
static int h_narrow(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long dd, st, len = 1;
    int dim;
    if (get_int(t, p[1], &dd, "dim") < 0 || norm_dim(t, dd, m->ndim, &dim) < 0 ||
        get_int(t, p[2], &st, "start") < 0 || (d->op == 0 && get_int(t, p[3], &len, "length") < 0))
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "%s of a 0-d tensor", d->name);
    if (st < 0)
        st += m->sizes[dim];
    if (st < 0 || st + len > m->sizes[dim] || len < 0)
        return sym_fail(t, "%s out of range (eager will raise)", d->name);
    ic_val r = ic_slice(t->g, p[0]->val, dim, st, st + len, 1);
    if (d->op == 1) { /* select: drop the dim */
        int64_t sz[IC_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < m->ndim; i++)
            if (i != dim)
                sz[n++] = m->sizes[i];
        r = sym_reshape(t, r, n, sz);
    }
    return view_out_desc(t, p[0], r, out, d->op == 1 ? "select" : "narrow",
                         d->op == 1 ? Py_BuildValue("(iL)", dim, st) : Py_BuildValue("(iLL)", dim, st, len));
}

/* split(tensor, split_size_or_sections, dim) / chunk(input, chunks, dim) -> tuple of views */
static int h_split(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long dd = 0, sizes[64];
    int dim, ns = 0;
    if (!is_none(p[2]) && get_int(t, p[2], &dd, "dim") < 0)
        return -1;
    if (norm_dim(t, dd, m->ndim, &dim) < 0)
        return -1;
    if (m->ndim == 0)
        return sym_fail(t, "%s of a 0-d tensor", d->name);
    int64_t L = m->sizes[dim];
    if (p[1] == NULL)
        return sym_fail(t, "%s needs sizes", d->name);
    if (p[1]->kind == V_CONST && PyLong_Check(p[1]->obj)) {
        long long k = PyLong_AsLongLong(p[1]->obj);
        if (k <= 0)
            return sym_fail(t, "%s with a non-positive size (eager will raise)", d->name);
        long long each = d->op == 1 ? (L + k - 1) / k : k; /* chunk: ceil(L / chunks) */
        if (each <= 0)
            each = 1;
        for (long long at = 0; at < L && ns < 64; at += each)
            sizes[ns++] = at + each <= L ? each : L - at;
        if (L == 0)
            sizes[ns++] = 0;
    } else {
        int n;
        if (d->op == 1 || get_ints(t, p[1], sizes, 64, &n, "split sizes") < 0)
            return -1;
        ns = n;
        long long sum = 0;
        for (int i = 0; i < n; i++)
            sum += sizes[i];
        if (sum != L)
            return sym_fail(t, "split sizes do not sum to the dim (eager will raise)");
    }
    var *items = sym_alloc(t, ns);
    if (items == NULL)
        return -1;
    long long at = 0;
    for (int i = 0; i < ns; i++) {
        if (view_out_desc(t, p[0], ic_slice(t->g, p[0]->val, dim, at, at + sizes[i], 1), &items[i],
                          "narrow", Py_BuildValue("(iLL)", dim, at, sizes[i])) < 0)
            return -1;
        at += sizes[i];
    }
    memset(out, 0, sizeof *out);
    out->kind = V_SEQ;
    out->src = -1;
    out->n = ns;
    out->items = items;
    return 0;
}

/* index_select(input, dim, index) / F.embedding(input, weight) */
static int h_index_select(trace *t, const opdef *d, var **p, var *out) {
    if (d->op == 1) { /* embedding(input, weight, padding_idx=None, max_norm=None, ...) */
        if (p[0]->kind != V_TENSOR || p[1] == NULL || p[1]->kind != V_TENSOR)
            return sym_fail(t, "embedding: bad arguments");
        if (!is_none(p[3]))
            return sym_fail(t, "embedding with max_norm not supported");
        ic_meta im_copy = *metap(t, p[0]->val), wm_copy = *metap(t, p[1]->val);
        const ic_meta *im = &im_copy, *wm = &wm_copy;
        int64_t n = 1;
        for (int i = 0; i < im->ndim; i++)
            n *= im->sizes[i];
        ic_val flat = sym_reshape(t, p[0]->val, 1, &n);
        if (sym_check_index(t, p[0], wm->ndim ? wm->sizes[0] : 0, 1) < 0)
            return -1;
        ic_val rows = ic_index_select(t->g, p[1]->val, 0, flat);
        if (!is_none(p[2]) && sym_value_requires_grad(t, p[1]->val)) {
            /* training: rows of padding_idx get no gradient (eager's embedding_backward) */
            long long pad;
            if (get_int(t, p[2], &pad, "padding_idx") < 0)
                return -1;
            if (pad < 0)
                pad += wm->sizes[0];
            int64_t L1[2] = {n, 1};
            ic_val m = ic_reshape(t->g, ic_binary(t->g, IC_OP_EQ, flat, ic_scalar(t->g, (double)pad, IC_I64)), 2, L1);
            rows = ic_where(t->g, m, ic_detach(t->g, rows), rows);
        }
        int64_t sz[IC_MAX_DIMS];
        int k = 0;
        for (int i = 0; i < im->ndim; i++)
            sz[k++] = im->sizes[i];
        if (wm->ndim != 2 || k + 1 > IC_MAX_DIMS)
            return sym_fail(t, "embedding: weight must be 2-d");
        sz[k++] = wm->sizes[1];
        return tensor_out(t, sym_reshape(t, rows, k, sz), out);
    }
    if (p[0]->kind != V_TENSOR || p[2] == NULL || p[2]->kind != V_TENSOR)
        return sym_fail(t, "index_select: bad arguments");
    long long dd;
    int dim;
    if (get_int(t, p[1], &dd, "dim") < 0 || norm_dim(t, dd, ndim_of(t, p[0]->val), &dim) < 0)
        return -1;
    if (sym_check_index(t, p[2], ic_value_meta(t->g, p[0]->val)->sizes[dim], 1) < 0)
        return -1;
    return tensor_out(t, ic_index_select(t->g, p[0]->val, dim, p[2]->val), out);
}

/* arange(end) / arange(start, end, step=1, *, dtype=None) */
static int h_arange(trace *t, const opdef *d, var **p, var *out) {
    var *a = p[0], *b = p[1], *c = p[2];
    double start = 0, end, step = 1;
    int anyfloat = 0;
    var *vals[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (vals[i] && !is_none(vals[i])) {
            if (!sym_is_number(vals[i]))
                return sym_fail(t, "arange bounds must be numbers");
            if (PyFloat_Check(vals[i]->obj))
                anyfloat = 1;
        }
    if (is_none(b)) {
        end = PyFloat_AsDouble(a->obj);
    } else {
        start = PyFloat_AsDouble(a->obj);
        end = PyFloat_AsDouble(b->obj);
        if (!is_none(c))
            step = PyFloat_AsDouble(c->obj);
    }
    if (step == 0)
        return sym_fail(t, "arange step 0 (eager will raise)");
    int dt = -1;
    if (p[3] && get_dtype(t, p[3], &dt) < 0)
        return -1;
    if (dt < 0)
        dt = anyfloat ? IC_F32 : IC_I64;
    double nn = ceil((end - start) / step);
    int64_t n = nn > 0 ? (int64_t)nn : 0;
    if (!is_none(p[5]))
        return sym_fail(t, "arange with a layout argument not supported yet");
    {
        int dty = TC_DEV_CPU, dix = 0;
        if (!is_none(p[4]) && !device_arg(p[4], &dty, &dix))
            return sym_fail(t, "arange: unsupported device argument");
        if (same_device(t, dty, dix, "arange") < 0)
            return -1;
    }
    return tensor_out(t, ic_arange(t->g, n, start, step, (ic_dtype)dt), out);
}

/* x[k]: ints, slices, None, Ellipsis, tuples of them, and one 1-D integer tensor index.
 * Basic indexing gives views (index maps); the tensor index is an index_select. */
int sym_tensor_index(trace *t, const var *x_in, const var *k, var *out) {
    var xv = *x_in, *x = &xv;
    sym_resolve(t, x);
    const var *parts[IC_MAX_DIMS + 4];
    var tmp[IC_MAX_DIMS + 4];
    int np = 0;
    if (k->kind == V_CONST && PyTuple_CheckExact(k->obj)) {
        if (PyTuple_GET_SIZE(k->obj) > IC_MAX_DIMS + 4)
            return sym_fail(t, "too many indices");
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(k->obj); i++) {
            memset(&tmp[np], 0, sizeof tmp[np]);
            tmp[np].kind = V_CONST;
            tmp[np].obj = PyTuple_GET_ITEM(k->obj, i);
            parts[np] = &tmp[np];
            np++;
        }
    } else if (k->kind == V_SEQ && !k->is_list) {
        if (k->n > IC_MAX_DIMS + 4)
            return sym_fail(t, "too many indices");
        for (int i = 0; i < k->n; i++)
            parts[np++] = &k->items[i];
    } else {
        parts[np++] = k;
    }
    ic_meta m0_copy = *metap(t, x->val);
    const ic_meta *m0 = &m0_copy; /* a copy: the graph reallocates */
    int consuming = 0, ell = -1, ntensor = 0;
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        if (p->kind == V_CONST && p->obj == Py_Ellipsis) {
            if (ell >= 0)
                return sym_fail(t, "two ellipses (eager will raise)");
            ell = i;
        } else if (p->kind == V_CONST && p->obj == Py_None) {
        } else if (p->kind == V_TENSOR) {
            consuming++;
            ntensor++;
        } else if (p->kind == V_CONST && (PyLong_Check(p->obj) || PySlice_Check(p->obj))) {
            consuming++;
        } else {
            return sym_fail(t, "unsupported index type");
        }
    }
    if (ntensor > 1)
        return sym_fail(t, "advanced indexing with several tensors not supported yet");
    if (consuming > m0->ndim)
        return sym_fail(t, "too many indices for the tensor (eager will raise)");
    ic_val v = x->val;
    int d = 0, is_copy = 0;
    for (int i = 0; i < np; i++) {
        const var *p = parts[i];
        ic_meta m_copy = *metap(t, v);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
        if (p->kind == V_CONST && p->obj == Py_Ellipsis) {
            d += m0->ndim - consuming;
            continue;
        }
        if (p->kind == V_CONST && p->obj == Py_None) {
            if (m->ndim + 1 > IC_MAX_DIMS)
                return sym_fail(t, "too many dims");
            v = unsqueeze_val(t, v, d);
            d++;
            continue;
        }
        if (d >= m->ndim)
            return sym_fail(t, "index out of range (eager will raise)");
        if (p->kind == V_TENSOR) {
            var pv = *p;
            sym_resolve(t, &pv);
            ic_meta im_copy = *metap(t, pv.val);
    const ic_meta *im = &im_copy; /* a copy: the graph reallocates */
            if (im->ndim != 1 || (im->dtype != IC_I64 && im->dtype != IC_I32))
                return sym_fail(t, "tensor index other than a 1-D integer tensor not supported yet");
            if (sym_check_index(t, &pv, m->sizes[d], 1) < 0)
                return -1;
            v = ic_index_select(t->g, v, d, pv.val);
            is_copy = 1;
            d++;
            continue;
        }
        int64_t size = m->sizes[d];
        if (PyLong_Check(p->obj)) {
            long long i0 = PyLong_AsLongLong(p->obj);
            if (i0 < 0)
                i0 += size;
            if (i0 < 0 || i0 >= size)
                return sym_fail(t, "index out of range (eager will raise)");
            v = ic_slice(t->g, v, d, i0, i0 + 1, 1);
            ic_meta ms_copy = *metap(t, v);
    const ic_meta *ms = &ms_copy; /* a copy: the graph reallocates */
            if (ms == NULL)
                return sym_check_graph(t);
            int64_t sz[IC_MAX_DIMS];
            int n = 0;
            for (int j = 0; j < ms->ndim; j++)
                if (j != d)
                    sz[n++] = ms->sizes[j];
            v = sym_reshape(t, v, n, sz);
            continue;
        }
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(p->obj, &start, &stop, &step) < 0) {
            PyErr_Clear();
            return sym_fail(t, "bad slice");
        }
        if (step <= 0)
            return sym_fail(t, "slice step must be positive (eager will raise)");
        PySlice_AdjustIndices(size, &start, &stop, step);
        if (stop < start)
            stop = start;
        v = ic_slice(t->g, v, d, start, stop, step);
        d++;
    }
    if (v < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "indexing failed");
    if (is_copy)
        return tensor_out(t, v, out);
    if (v == x->val) /* x[...] or x[:]: a view of the same data */
        v = sym_reshape(t, v, m0->ndim, m0->sizes);
    if (k->kind != V_CONST)
        return sym_fail(t, "indexing: non-constant index");
    return view_out_desc(t, x, v, out, "__getitem__", Py_BuildValue("(O)", k->obj));
}

/* ones/zeros/full(size, [fill], *, dtype) and ones_like/zeros_like/full_like(x, [fill]) */
static int h_factory(trace *t, const opdef *d, var **p, var *out) {
    int like = d->op >= 3, kind = d->op % 3; /* 0 zeros, 1 ones, 2 full */
    int64_t sz[IC_MAX_DIMS];
    int n = 0, dt = -1;
    double fill = kind == 1 ? 1.0 : 0.0;
    ic_dtype fill_kind = IC_I64;
    var *fv = kind == 2 ? p[1] : NULL;
    if (kind == 2) {
        if (!sym_is_number(fv))
            return sym_fail(t, "%s: fill value must be a number", d->name);
        fill = PyFloat_AsDouble(fv->obj);
        fill_kind = PyBool_Check(fv->obj) ? IC_BOOL : PyFloat_Check(fv->obj) ? IC_F64 : IC_I64;
    }
    var *dtv = p[kind == 2 ? 2 : 1];
    if (dtv && get_dtype(t, dtv, &dt) < 0)
        return -1;
    int dev_i = kind == 2 ? 3 : 2, dty = -1, dix = -1;
    if (p[dev_i] && !is_none(p[dev_i]) && !device_arg(p[dev_i], &dty, &dix))
        return sym_fail(t, "%s: unsupported device argument", d->name);
    for (int i = dev_i + 1; i < MAXP; i++)
        if (p[i] && !is_none(p[i]) && !(p[i]->kind == V_CONST && PyBool_Check(p[i]->obj) && p[i]->obj == Py_False))
            return sym_fail(t, "%s: layout/requires_grad arguments not supported yet", d->name);
    if (dty >= 0 && same_device(t, dty, dix, d->name) < 0)
        return -1;
    if (like) {
        if (p[0]->kind != V_TENSOR)
            return sym_fail(t, "%s of a non-tensor", d->name);
        ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
        n = m->ndim;
        for (int i = 0; i < n; i++)
            sz[i] = m->sizes[i];
        if (dt < 0)
            dt = m->dtype;
    } else {
        long long s64[IC_MAX_DIMS];
        if (get_shape_args(t, p[0], s64, &n, "size") < 0)
            return -1;
        for (int i = 0; i < n; i++) {
            if (s64[i] < 0)
                return sym_fail(t, "negative size (eager will raise)");
            sz[i] = s64[i];
        }
        if (dt < 0) {
            if (kind == 2 && fill_kind != IC_F64)
                dt = fill_kind == IC_BOOL ? IC_BOOL : IC_I64; /* torch.full infers from the value */
            else if ((dt = sym_default_dtype(t)) < 0)
                return -1;
        }
        if (dty < 0 && same_device(t, TC_DEV_CPU, 0, d->name) < 0) /* no device: the CPU */
            return -1;
    }
    ic_val v = ic_cast(t->g, ic_scalar(t->g, fill, fill_kind), (ic_dtype)dt);
    return tensor_out(t, ic_expand(t->g, v, n, sz), out);
}

/* torch.tensor(data) of a flat constant list of numbers (empty: shape [0], as the
 * DynamicCache layers start), dtype inferred as torch does */
static int h_tensor(trace *t, const opdef *d, var **p, var *out) {
    PyObject *items[64];
    int n = 0, dt = -1, allbool = 1, anyfloat = 0, scalar = 0;
    const var *data = p[0];
    if (data->kind == V_CONST && (PyList_Check(data->obj) || PyTuple_Check(data->obj))) {
        n = (int)PySequence_Fast_GET_SIZE(data->obj);
        if (n > 64)
            return sym_fail(t, "tensor: data too long");
        for (int i = 0; i < n; i++)
            items[i] = PySequence_Fast_GET_ITEM(data->obj, i);
    } else if (data->kind == V_CONST && (PyBool_Check(data->obj) || PyLong_CheckExact(data->obj) ||
                                         PyFloat_CheckExact(data->obj))) {
        n = 1; /* torch.tensor(number): a 0-d tensor */
        items[0] = data->obj;
        scalar = 1;
    } else if (data->kind == V_SEQ && data->n <= 64) {
        n = data->n;
        for (int i = 0; i < n; i++) {
            if (data->items[i].kind != V_CONST)
                return sym_fail(t, "tensor: data is not a list of numbers");
            items[i] = data->items[i].obj;
        }
    } else {
        return sym_fail(t, "tensor: data is not a list of numbers");
    }
    for (int i = 0; i < n; i++) {
        PyObject *x = items[i];
        if (!PyBool_Check(x) && !PyLong_CheckExact(x) && !PyFloat_CheckExact(x))
            return sym_fail(t, "tensor: data is not a list of numbers");
        allbool &= PyBool_Check(x);
        anyfloat |= PyFloat_CheckExact(x);
    }
    if (p[1] && get_dtype(t, p[1], &dt) < 0)
        return -1;
    int dty = -1, dix = -1;
    if (p[2] && !is_none(p[2]) && !device_arg(p[2], &dty, &dix))
        return sym_fail(t, "tensor: unsupported device argument");
    for (int i = 3; i < MAXP; i++)
        if (p[i] && !is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "tensor: requires_grad/pin_memory arguments not supported yet");
    if (same_device(t, dty >= 0 ? dty : TC_DEV_CPU, dty >= 0 ? dix : 0, d->name) < 0)
        return -1;
    if (dt < 0) {
        if (n > 0 && allbool)
            dt = IC_BOOL;
        else if (n > 0 && !anyfloat)
            dt = IC_I64;
        else if ((dt = sym_default_dtype(t)) < 0)
            return -1;
    }
    int64_t sz0 = 0, sz1 = 1;
    if (n == 0)
        return tensor_out(t, ic_expand(t->g, ic_cast(t->g, ic_scalar(t->g, 0.0, IC_I64), (ic_dtype)dt), 1, &sz0), out);
    ic_val r = -1;
    for (int i = 0; i < n; i++) {
        PyObject *x = items[i];
        double v = PyFloat_AsDouble(x);
        ic_dtype k = PyBool_Check(x) ? IC_BOOL : PyFloat_CheckExact(x) ? IC_F64 : IC_I64;
        if (k == IC_I64) { /* exact for big ints */
            int ovf = 0;
            long long ll = PyLong_AsLongLongAndOverflow(x, &ovf);
            if (ovf || (ll > (1LL << 53) || ll < -(1LL << 53)))
                return sym_fail(t, "tensor: integer too large");
            v = (double)ll;
        }
        if (scalar)
            return tensor_out(t, ic_cast(t->g, ic_scalar(t->g, v, k), (ic_dtype)dt), out);
        ic_val e = ic_expand(t->g, ic_cast(t->g, ic_scalar(t->g, v, k), (ic_dtype)dt), 1, &sz1);
        r = r < 0 ? e : ic_cat(t->g, r, e, 0);
    }
    return tensor_out(t, r, out);
}

int sym_check_index(trace *t, const var *index, int64_t bound, int gather) {
    ic_val iv = index->val, root = ic_value_view_root(t->g, iv);
    ic_op op = ic_value_op(t->g, iv);
    if (ic_value_op(t->g, root) == IC_OP_INPUT) {
        /* an input, or a view of one (a slice of a position-ids buffer): the whole input
         * is bounds-checked before each run */
        int s = root == iv ? index->src : -1;
        iv = root;
        if (s < 0) {
            int k = 0;
            for (ic_val x = 0; x < iv; x++)
                if (ic_value_op(t->g, x) == IC_OP_INPUT)
                    k++;
            s = t->input_src[k];
        }
        for (int i = 0; i < t->nidx; i++)
            if (t->idx_src[i] == s && t->idx_bound[i] == bound) {
                t->idx_gather[i] &= (unsigned char)(gather != 0);
                return 0;
            }
        if (t->nidx >= 16)
            return sym_fail(t, "too many index tensors");
        t->idx_src[t->nidx] = s;
        t->idx_gather[t->nidx] = (unsigned char)(gather != 0);
        t->idx_bound[t->nidx++] = bound;
        return 0;
    }
    if (op == IC_OP_ARGMAX || op == IC_OP_ARGMIN)
        return 0;
    double lo, hi; /* position ids: arange(n) + past length, unsqueezed */
    if (ic_value_int_range(t->g, iv, &lo, &hi)) {
        if (bound <= 0 || lo < 0 || hi >= (double)bound)
            return sym_fail(t, "index out of range (eager will raise)");
        return 0;
    }
    return sym_fail(t, "indexing with a computed index tensor (bounds unknown) not supported yet");
}

/* ---- decompositions into graph ops ----------------------------------------------- */

#define G (t->g)
static ic_val num(trace *t, double v) { return ic_scalar(G, v, IC_F64); }
static ic_val inum(trace *t, long long v) { return ic_scalar(G, (double)v, IC_I64); }

static int opt_num(trace *t, var *v, double dflt, double *out, const char *what) {
    if (is_none(v)) {
        *out = dflt;
        return 0;
    }
    if (!sym_is_number(v))
        return sym_fail(t, "%s must be a number", what);
    *out = PyFloat_AsDouble(v->obj);
    return 0;
}

static int need_tensor(trace *t, const opdef *d, var *v) {
    if (v == NULL || v->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    return 0;
}

/* activations: op selects the formula; parameters from the slots */
static int h_act(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val, r;
    double a, b;
    int inplace = 0;
    /* eager computes these in float for half inputs and rounds once: so do we (no per-op
     * rounding); softsign is composite in eager too (rounded after each op) */
    ic_dtype xdt = metap(t, x)->dtype;
    int half = (xdt == IC_F16 || xdt == IC_BF16) && d->op != 10;
    if (half)
        x = ic_cast(G, x, IC_F32);
    switch (d->op) {
    case 0: /* softplus(input, beta=1, threshold=20) */
        if (opt_num(t, p[1], 1.0, &a, "beta") < 0 || opt_num(t, p[2], 20.0, &b, "threshold") < 0)
            return -1;
        {
            ic_val xb = ic_binary(G, IC_OP_MUL, x, num(t, a));
            r = ic_where(G, ic_binary(G, IC_OP_GT, xb, num(t, b)), x,
                         ic_binary(G, IC_OP_DIV, ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_EXP, xb)), num(t, a)));
        }
        break;
    case 1: /* elu(input, alpha=1, inplace) */
        if (opt_num(t, p[1], 1.0, &a, "alpha") < 0 || get_bool(t, p[2], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_where(G, ic_binary(G, IC_OP_GT, x, num(t, 0)), x,
                     ic_binary(G, IC_OP_MUL, ic_unary(G, IC_OP_EXPM1, x), num(t, a)));
        break;
    case 2: /* leaky_relu(input, negative_slope=0.01, inplace) */
        if (opt_num(t, p[1], 0.01, &a, "negative_slope") < 0 || get_bool(t, p[2], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_where(G, ic_binary(G, IC_OP_GT, x, num(t, 0)), x, ic_binary(G, IC_OP_MUL, x, num(t, a)));
        break;
    case 3: /* hardswish(input, inplace) = x * relu6(x + 3) / 6 */
        if (get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_binary(G, IC_OP_DIV,
                      ic_binary(G, IC_OP_MUL, x,
                                ic_binary(G, IC_OP_MINIMUM,
                                          ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_ADD, x, num(t, 3)), num(t, 0)),
                                          num(t, 6))),
                      num(t, 6));
        break;
    case 4: /* hardsigmoid(input, inplace) = relu6(x + 3) / 6 */
        if (get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_binary(G, IC_OP_DIV,
                      ic_binary(G, IC_OP_MINIMUM,
                                ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_ADD, x, num(t, 3)), num(t, 0)),
                                num(t, 6)),
                      num(t, 6));
        break;
    case 5: /* relu6(input, inplace) */
        if (get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, x, num(t, 0)), num(t, 6));
        break;
    case 6: /* hardtanh(input, min_val=-1, max_val=1, inplace) */
        if (opt_num(t, p[1], -1.0, &a, "min_val") < 0 || opt_num(t, p[2], 1.0, &b, "max_val") < 0 ||
            get_bool(t, p[3], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, x, num(t, a)), num(t, b));
        break;
    case 7: /* mish(input, inplace) = x * tanh(softplus(x)) */
        if (get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        {
            ic_val sp = ic_where(G, ic_binary(G, IC_OP_GT, x, num(t, 20)), x,
                                 ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_EXP, x)));
            r = ic_binary(G, IC_OP_MUL, x, ic_unary(G, IC_OP_TANH, sp));
        }
        break;
    case 8: /* logsigmoid(input) = -softplus(-x) */
        {
            ic_val nx = ic_unary(G, IC_OP_NEG, x);
            r = ic_unary(G, IC_OP_NEG, ic_where(G, ic_binary(G, IC_OP_GT, nx, num(t, 20)), nx,
                                                ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_EXP, nx))));
        }
        break;
    case 9: /* selu */
        if (get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_binary(G, IC_OP_MUL,
                      ic_where(G, ic_binary(G, IC_OP_GT, x, num(t, 0)), x,
                               ic_binary(G, IC_OP_MUL, ic_unary(G, IC_OP_EXPM1, x), num(t, 1.6732632423543772848170429916717))),
                      num(t, 1.0507009873554804934193349852946));
        break;
    case 10: /* softsign */
        r = ic_binary(G, IC_OP_DIV, x, ic_binary(G, IC_OP_ADD, ic_unary(G, IC_OP_ABS, x), num(t, 1)));
        break;
    default:
        return sym_fail(t, "internal: activation");
    }
    if (half)
        r = ic_cast(G, r, xdt);
    if (inplace) {
        if (sym_mutate(t, p[0], r) < 0)
            return -1;
        *out = *p[0];
        sym_resolve(t, out);
        return 0;
    }
    return tensor_out(t, r, out);
}

/* var/std(input, dim=None, *, correction=1, keepdim=False) and unbiased= */
static int h_var(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val;
    ic_meta m_copy = *metap(t, x);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->dtype < IC_F16)
        return sym_fail(t, "%s of a non-float tensor", d->name);
    int nd = m->ndim, keep = 0;
    uint32_t mask;
    /* torch.var(x, True) means unbiased: a bool in the dim slot */
    var *dimv = p[1];
    double corr = 1.0;
    if (dimv && dimv->kind == V_CONST && PyBool_Check(dimv->obj)) {
        corr = dimv->obj == Py_True ? 1.0 : 0.0;
        dimv = NULL;
    }
    if (dims_mask(t, dimv, nd, &mask) < 0 || get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    if (!is_none(p[3])) {
        int ub;
        if (get_bool(t, p[3], 1, &ub, "unbiased") < 0)
            return -1;
        corr = ub ? 1.0 : 0.0;
    }
    if (!is_none(p[4]) && opt_num(t, p[4], 1.0, &corr, "correction") < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        if (mask == 0 || (mask >> i & 1))
            n *= m->sizes[i];
    ic_val mu = ic_reduce(G, IC_OP_MEAN, x, mask, 1, -1);
    ic_val xc = ic_binary(G, IC_OP_SUB, x, mu);
    ic_val ss = ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_MUL, xc, xc), mask, keep, -1);
    double denom = (double)n - corr;
    ic_val v = ic_binary(G, IC_OP_DIV, ss, num(t, denom > 0 ? denom : 0.0));
    if (d->op == 1)
        v = ic_unary(G, IC_OP_SQRT, v);
    return tensor_out(t, v, out);
}

/* logsumexp(input, dim, keepdim=False) */
static int h_logsumexp(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val;
    if (ic_value_meta(G, x)->dtype < IC_F16)
        x = ic_cast(G, x, IC_F32);
    int keep = 0;
    uint32_t mask;
    if (dims_mask(t, p[1], ndim_of(t, x), &mask) < 0 || get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    ic_val m = ic_reduce(G, IC_OP_AMAX, x, mask, 1, -1);
    ic_val ms = ic_where(G, ic_unary(G, IC_OP_ISINF, m), num(t, 0), m);
    if (sym_value_requires_grad(t, ms)) /* training: the shift's gradients cancel (eager: softmax) */
        ms = ic_detach(G, ms);
    ic_val s = ic_reduce(G, IC_OP_SUM, ic_unary(G, IC_OP_EXP, ic_binary(G, IC_OP_SUB, x, ms)), mask, keep, -1);
    ic_val msk = keep ? ms : ic_reduce(G, IC_OP_AMAX, ms, mask, 0, -1);
    return tensor_out(t, ic_binary(G, IC_OP_ADD, ic_unary(G, IC_OP_LOG, s), msk), out);
}

/* any/all(input, dim=None, keepdim=False) */
static int h_anyall(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    int keep = 0;
    uint32_t mask;
    ic_val x = p[0]->val;
    if (dims_mask(t, p[1], ndim_of(t, x), &mask) < 0 || get_bool(t, p[2], 0, &keep, "keepdim") < 0)
        return -1;
    ic_val nz = ic_cast(G, ic_binary(G, IC_OP_NE, x, inum(t, 0)), IC_I32);
    ic_val r = ic_reduce(G, d->op ? IC_OP_AMIN : IC_OP_AMAX, nz, mask, keep, -1);
    return tensor_out(t, ic_cast(G, r, IC_BOOL), out);
}

/* norm(input, p=2, dim=None, keepdim=False) / linalg.vector_norm(x, ord=2, dim, keepdim) */
static int h_norm(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    double ord = 2.0;
    if (p[1] && !is_none(p[1])) {
        if (p[1]->kind == V_CONST && PyUnicode_Check(p[1]->obj)) {
            if (PyUnicode_CompareWithASCIIString(p[1]->obj, "fro"))
                return sym_fail(t, "norm p=%R not supported", p[1]->obj);
        } else if (opt_num(t, p[1], 2.0, &ord, "p") < 0) {
            return -1;
        }
    }
    int keep = 0;
    uint32_t mask;
    ic_val x = p[0]->val;
    if (ic_value_meta(G, x)->dtype < IC_F16)
        return sym_fail(t, "norm of a non-float tensor");
    if (dims_mask(t, p[2], ndim_of(t, x), &mask) < 0 || get_bool(t, p[3], 0, &keep, "keepdim") < 0)
        return -1;
    ic_val a = ic_unary(G, IC_OP_ABS, x), r;
    if (ord == 2.0)
        r = ic_unary(G, IC_OP_SQRT, ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_MUL, x, x), mask, keep, -1));
    else if (ord == 1.0)
        r = ic_reduce(G, IC_OP_SUM, a, mask, keep, -1);
    else if (isinf(ord))
        r = ic_reduce(G, ord > 0 ? IC_OP_AMAX : IC_OP_AMIN, a, mask, keep, -1);
    else if (ord == 0.0)
        r = ic_reduce(G, IC_OP_SUM, ic_cast(G, ic_binary(G, IC_OP_NE, x, num(t, 0)), ic_value_meta(G, x)->dtype), mask, keep, -1);
    else
        r = ic_binary(G, IC_OP_POW, ic_reduce(G, IC_OP_SUM, ic_binary(G, IC_OP_POW, a, num(t, ord)), mask, keep, -1),
                      num(t, 1.0 / ord));
    return tensor_out(t, r, out);
}

/* masked_fill(input, mask, value) / masked_fill_ */
static int h_masked_fill(trace *t, const opdef *d, var **p, var *out) {
    ic_val v;
    if (need_tensor(t, d, p[0]) < 0 || p[1] == NULL || p[1]->kind != V_TENSOR || p[2] == NULL ||
        as_tensor(t, p[2], &v) < 0)
        return -1;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    return tensor_out(t, ic_where(G, p[1]->val, ic_cast(G, v, m->dtype), p[0]->val), out);
}

/* addcmul/addcdiv(input, t1, t2, *, value=1); lerp(input, end, weight) */
static int h_addc(trace *t, const opdef *d, var **p, var *out) {
    ic_val a, b, c;
    if (need_tensor(t, d, p[0]) < 0 || p[1] == NULL || p[2] == NULL || as_tensor(t, p[1], &b) < 0 ||
        as_tensor(t, p[2], &c) < 0)
        return -1;
    a = p[0]->val;
    ic_dtype da = metap(t, a)->dtype, db = metap(t, b)->dtype;
    if (d->op == 2 && (da != db || da < IC_F16 || (p[2]->kind == V_TENSOR && metap(t, c)->dtype != da)))
        return sym_fail(t, "lerp: dtypes must match and be floating (eager will raise)");
    if (d->op == 1 && (metap(t, b)->dtype < IC_F16 && metap(t, c)->dtype < IC_F16))
        return sym_fail(t, "addcdiv of integer tensors (eager will raise)");
    if (d->op == 2) /* lerp: a + w * (b - a) */
        return tensor_out(t, ic_binary(G, IC_OP_ADD, a, ic_binary(G, IC_OP_MUL, c, ic_binary(G, IC_OP_SUB, b, a))), out);
    double val = 1.0;
    if (opt_num(t, p[3], 1.0, &val, "value") < 0)
        return -1;
    ic_val bc = ic_binary(G, d->op ? IC_OP_DIV : IC_OP_MUL, b, c);
    if (val != 1.0)
        bc = ic_binary(G, IC_OP_MUL, bc, num(t, val));
    return tensor_out(t, ic_binary(G, IC_OP_ADD, a, bc), out);
}

/* tril/triu(input, diagonal=0) on the last two dims */
static int h_tri(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    long long k = 0;
    if (!is_none(p[1]) && get_int(t, p[1], &k, "diagonal") < 0)
        return -1;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->ndim < 2)
        return sym_fail(t, "%s needs 2 dims (eager will raise)", d->name);
    int64_t R = m->sizes[m->ndim - 2], C = m->sizes[m->ndim - 1];
    ic_val rows = ic_reshape(G, ic_arange(G, R, 0, 1, IC_I64), 2, (int64_t[]){R, 1});
    ic_val cols = ic_reshape(G, ic_arange(G, C, 0, 1, IC_I64), 2, (int64_t[]){1, C});
    ic_val diff = ic_binary(G, IC_OP_SUB, cols, rows); /* col - row */
    ic_val keepm = d->op == 0 ? ic_binary(G, IC_OP_LE, diff, inum(t, k)) : ic_binary(G, IC_OP_GE, diff, inum(t, k));
    ic_val zero = ic_cast(G, inum(t, 0), m->dtype);
    return tensor_out(t, ic_where(G, keepm, p[0]->val, zero), out);
}

/* flip(input, dims) via index_select with a reversed arange; roll(input, shifts, dims) */
static int h_flip(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long ds[IC_MAX_DIMS], sh[IC_MAX_DIMS];
    int nd, nsh = 0;
    var *dimv = d->op == 0 ? p[1] : p[2];
    if (d->op == 1) {
        if (get_ints(t, p[1], sh, IC_MAX_DIMS, &nsh, "shifts") < 0)
            return -1;
        if (is_none(dimv))
            return sym_fail(t, "roll without dims not supported yet");
    }
    if (get_ints(t, dimv, ds, IC_MAX_DIMS, &nd, "dims") < 0)
        return -1;
    if (d->op == 1 && nd != nsh)
        return sym_fail(t, "roll: shifts and dims differ in length (eager will raise)");
    ic_val v = p[0]->val;
    for (int i = 0; i < nd; i++) {
        int dim;
        if (norm_dim(t, ds[i], m->ndim, &dim) < 0)
            return -1;
        int64_t n = m->sizes[dim];
        if (n == 0)
            continue;
        if (d->op == 0) {
            v = ic_index_select(G, v, dim, ic_arange(G, n, (double)(n - 1), -1.0, IC_I64));
        } else {
            long long s0 = ((sh[i] % n) + n) % n;
            if (s0 == 0)
                continue;
            ic_val a = ic_slice(G, v, dim, n - s0, n, 1), b = ic_slice(G, v, dim, 0, n - s0, 1);
            v = ic_cat(G, a, b, dim);
        }
    }
    if (v == p[0]->val)
        v = ic_cast(G, v, m->dtype);
    return tensor_out(t, v, out);
}

/* batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps) */
static int h_batch_norm(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (m->ndim < 2 || m->dtype < IC_F16)
        return sym_fail(t, "batch_norm: input must be float with >= 2 dims");
    int training = 0;
    double momentum = 0.1, eps = 1e-5;
    if (get_bool(t, p[5], 0, &training, "training") < 0 || opt_num(t, p[6], 0.1, &momentum, "momentum") < 0 ||
        opt_num(t, p[7], 1e-5, &eps, "eps") < 0)
        return -1;
    int64_t C = m->sizes[1];
    int64_t bshape[IC_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++)
        bshape[i] = i == 1 ? C : 1;
    uint32_t mask = 0;
    int64_t n = 1;
    for (int i = 0; i < m->ndim; i++)
        if (i != 1) {
            mask |= 1u << i;
            n *= m->sizes[i];
        }
    ic_val x = p[0]->val, mean, varv;
    for (int i = 1; i <= 4; i++)
        if (!is_none(p[i]) && p[i]->kind != V_TENSOR)
            return sym_fail(t, "batch_norm: statistics and affine parameters must be tensors");
    if (training) {
        mean = ic_reduce(G, IC_OP_MEAN, x, mask, 1, -1);
        ic_val xc = ic_binary(G, IC_OP_SUB, x, mean);
        varv = ic_reduce(G, IC_OP_MEAN, ic_binary(G, IC_OP_MUL, xc, xc), mask, 1, -1);
        /* running stats: r = (1 - m) r + m * stat (unbiased variance), updated in place */
        if (!is_none(p[1]) && !is_none(p[2])) {
            /* training: eager updates the statistics without autograd (stop-gradients) */
            int sg = sym_value_requires_grad(t, mean);
            ic_val mu1 = ic_reshape(G, sg ? ic_detach(G, mean) : mean, 1, &C);
            ic_val v1 = ic_binary(G, IC_OP_MUL, ic_reshape(G, sg ? ic_detach(G, varv) : varv, 1, &C), num(t, n > 1 ? (double)n / (double)(n - 1) : 1.0));
            ic_val rm = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, p[1]->val, num(t, 1 - momentum)),
                                  ic_binary(G, IC_OP_MUL, mu1, num(t, momentum)));
            ic_val rv = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, p[2]->val, num(t, 1 - momentum)),
                                  ic_binary(G, IC_OP_MUL, v1, num(t, momentum)));
            if (sym_mutate(t, p[1], rm) < 0 || sym_mutate(t, p[2], rv) < 0)
                return -1;
        }
    } else {
        if (is_none(p[1]) || is_none(p[2]))
            return sym_fail(t, "batch_norm in eval mode without running statistics");
        mean = ic_reshape(G, p[1]->val, m->ndim, bshape);
        varv = ic_reshape(G, p[2]->val, m->ndim, bshape);
    }
    ic_val y = ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, x, mean),
                         ic_unary(G, IC_OP_RSQRT, ic_binary(G, IC_OP_ADD, varv, num(t, eps))));
    if (!is_none(p[3]))
        y = ic_binary(G, IC_OP_MUL, y, ic_reshape(G, p[3]->val, m->ndim, bshape));
    if (!is_none(p[4]))
        y = ic_binary(G, IC_OP_ADD, y, ic_reshape(G, p[4]->val, m->ndim, bshape));
    return tensor_out(t, y, out);
}

/* group_norm(input, num_groups, weight, bias, eps) */
static int h_group_norm(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    long long g;
    double eps = 1e-5;
    if (get_int(t, p[1], &g, "num_groups") < 0 || opt_num(t, p[4], 1e-5, &eps, "eps") < 0)
        return -1;
    if (m->ndim < 2 || g <= 0 || m->sizes[1] % g || m->dtype < IC_F16)
        return sym_fail(t, "group_norm: bad shapes (eager will raise)");
    int64_t N = m->sizes[0], C = m->sizes[1], rest = 1;
    for (int i = 2; i < m->ndim; i++)
        rest *= m->sizes[i];
    ic_val x3 = ic_reshape(G, p[0]->val, 3, (int64_t[]){N, g, (C / g) * rest});
    ic_val mu = ic_reduce(G, IC_OP_MEAN, x3, 1u << 2, 1, -1);
    ic_val xc = ic_binary(G, IC_OP_SUB, x3, mu);
    ic_val var = ic_reduce(G, IC_OP_MEAN, ic_binary(G, IC_OP_MUL, xc, xc), 1u << 2, 1, -1);
    ic_val y = ic_binary(G, IC_OP_MUL, xc, ic_unary(G, IC_OP_RSQRT, ic_binary(G, IC_OP_ADD, var, num(t, eps))));
    y = ic_reshape(G, y, m->ndim, m->sizes);
    int64_t bshape[IC_MAX_DIMS];
    for (int i = 0; i < m->ndim; i++)
        bshape[i] = i == 1 ? C : 1;
    if (!is_none(p[2])) {
        if (p[2]->kind != V_TENSOR)
            return sym_fail(t, "group_norm weight must be a tensor");
        y = ic_binary(G, IC_OP_MUL, y, ic_reshape(G, p[2]->val, m->ndim, bshape));
    }
    if (!is_none(p[3])) {
        if (p[3]->kind != V_TENSOR)
            return sym_fail(t, "group_norm bias must be a tensor");
        y = ic_binary(G, IC_OP_ADD, y, ic_reshape(G, p[3]->val, m->ndim, bshape));
    }
    return tensor_out(t, y, out);
}

/* type_as(input, other) */
static int h_type_as(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0 || need_tensor(t, d, p[1]) < 0)
        return -1;
    if (ic_value_meta(G, p[0]->val)->dtype == ic_value_meta(G, p[1]->val)->dtype)
        return same_tensor(t, p, out);
    return tensor_out(t, ic_cast(G, p[0]->val, ic_value_meta(G, p[1]->val)->dtype), out);
}

/* repeat(*sizes): expand a leading-padded view, then reshape */
static int h_repeat(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    long long r[IC_MAX_DIMS];
    int n;
    if (get_shape_args(t, p[1], r, &n, "repeats") < 0)
        return -1;
    ic_meta m_copy = *metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (n < m->ndim || 2 * n > IC_MAX_DIMS)
        return sym_fail(t, "repeat: unsupported number of dims");
    int64_t src[IC_MAX_DIMS], inter[IC_MAX_DIMS], exp[IC_MAX_DIMS], fin[IC_MAX_DIMS];
    for (int i = 0; i < n; i++)
        src[i] = i < n - m->ndim ? 1 : m->sizes[i - (n - m->ndim)];
    for (int i = 0; i < n; i++) {
        inter[2 * i] = 1;
        inter[2 * i + 1] = src[i];
        exp[2 * i] = r[i];
        exp[2 * i + 1] = src[i];
        fin[i] = r[i] * src[i];
    }
    ic_val v = ic_reshape(G, p[0]->val, 2 * n, inter);
    v = ic_expand(G, v, 2 * n, exp);
    v = ic_reshape(G, v, n, fin);
    return tensor_out(t, v, out);
}

/* clone(input, memory_format): a fresh copy (contiguous) */
static int h_clone(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    return tensor_out(t, ic_cast(G, p[0]->val, ic_value_meta(G, p[0]->val)->dtype), out);
}

/* nan_to_num(input, nan=0.0, posinf=None, neginf=None) */
static int h_nan_to_num(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val;
    ic_dtype dt = ic_value_meta(G, x)->dtype;
    if (dt < IC_F16) /* integers have no NaN/inf: a copy */
        return tensor_out(t, ic_cast(G, x, dt), out);
    double big = dt == IC_F64 ? 1.7976931348623157e308 : dt == IC_F32 ? 3.4028234663852886e38
                 : dt == IC_F16 ? 65504.0 : 3.3895313892515355e38;
    double nanv, pinf, ninf;
    if (opt_num(t, p[1], 0.0, &nanv, "nan") < 0 || opt_num(t, p[2], big, &pinf, "posinf") < 0 ||
        opt_num(t, p[3], -big, &ninf, "neginf") < 0)
        return -1;
    ic_val r = ic_where(G, ic_unary(G, IC_OP_ISNAN, x), ic_cast(G, num(t, nanv), dt), x);
    r = ic_where(G, ic_binary(G, IC_OP_EQ, x, num(t, INFINITY)), ic_cast(G, num(t, pinf), dt), r);
    r = ic_where(G, ic_binary(G, IC_OP_EQ, x, num(t, -INFINITY)), ic_cast(G, num(t, ninf), dt), r);
    return tensor_out(t, r, out);
}

#undef G

/* ---- extern (ATen) calls inside the graph: matrix products and convolutions ---------- */
#define G (t->g)

/* matmul / mm / bmm (op: ic_extern_kind) */
static int h_matmul(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0 || need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_val ab[2] = {p[0]->val, p[1]->val};
    return tensor_out(t, ic_extern(t->g, (ic_extern_kind)d->op, 2, ab, 0, NULL, 1, 1), out);
}

/* addmm(input, mat1, mat2, beta, alpha) / baddbmm(input, batch1, batch2, beta, alpha) */
static int h_addmm(trace *t, const opdef *d, var **p, var *out) {
    double beta, alpha;
    if (need_tensor(t, d, p[0]) < 0 || need_tensor(t, d, p[1]) < 0 || need_tensor(t, d, p[2]) < 0 ||
        opt_num(t, p[3], 1.0, &beta, "beta") < 0 || opt_num(t, p[4], 1.0, &alpha, "alpha") < 0)
        return -1;
    ic_val v[3] = {p[0]->val, p[1]->val, p[2]->val};
    return tensor_out(t, ic_extern(t->g, (ic_extern_kind)d->op, 3, v, 0, NULL, beta, alpha), out);
}

/* matrix_exp(A) (torch., torch.linalg., Tensor.) and linalg.solve(A, B, left=True): extern
 * nodes run by csrc/matrix_exp.cpp (the degree of matrix_exp is chosen there from the norm) */
static int h_linalg(trace *t, const opdef *d, var **p, var *out) {
    int nin = d->op == IC_EXT_SOLVE ? 2 : 1, left = 1;
    for (int i = 0; i < nin; i++)
        if (need_tensor(t, d, p[i]) < 0)
            return -1;
    if (d->op == IC_EXT_SOLVE && get_bool(t, p[2], 1, &left, "left") < 0)
        return -1;
    ic_val v[2] = {p[0]->val, nin > 1 ? p[1]->val : -1};
    int64_t prm = left;
    return tensor_out(t, ic_extern(t->g, (ic_extern_kind)d->op, nin, v, d->op == IC_EXT_SOLVE, &prm, 1, 1), out);
}

/* F.linear(input, weight, bias=None) */
static int h_linear(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0 || need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_val v[3] = {p[0]->val, p[1]->val, -1};
    int n = 2;
    if (!is_none(p[2])) {
        if (need_tensor(t, d, p[2]) < 0)
            return -1;
        v[n++] = p[2]->val;
    }
    return tensor_out(t, ic_extern(t->g, IC_EXT_LINEAR, n, v, 0, NULL, 1, 1), out);
}

/* one int or nd ints (a 1-tuple repeats) */
static int conv_ints(trace *t, var *v, long long dflt, int nd, int64_t *out, const char *what) {
    long long x[8];
    int n = 0;
    if (is_none(v)) {
        x[0] = dflt;
        n = 1;
    } else if (get_ints(t, v, x, 8, &n, what) < 0) {
        return -1;
    }
    if (n != 1 && n != nd)
        return sym_fail(t, "conv: %s must have %d values", what, nd);
    for (int i = 0; i < nd; i++)
        out[i] = x[n == 1 ? 0 : i];
    return 0;
}

/* 2-d convs in channels-last layout: TORCHC_CONV_LAYOUT=nhwc always, =nchw never; by default
 * on CUDA for 16-bit floats (what cuDNN's tensor-core kernels read; like Inductor's layout
 * optimization). */
static int conv_channels_last(trace *t, ic_dtype dt) {
    char env[64];
    ic_config_str(IC_CFG_conv_layout, env); /* torchc.config.conv_layout */
    if (strcmp(env, "nhwc") == 0)
        return 1;
    if (strcmp(env, "nchw") == 0)
        return 0;
    return t->device_type == TC_DEV_CUDA && (dt == IC_F16 || dt == IC_BF16);
}

static int dw_conv(trace *t, int nd, const int64_t *prm, const ic_val *v, int n, ic_val *res);

/* conv1d/conv2d/conv3d(input, weight, bias, stride, padding, dilation, groups); op: nd */
static int h_conv(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op;
    int64_t prm[3 + 3 * 3];
    prm[0] = nd;
    if (need_tensor(t, d, p[0]) < 0 || need_tensor(t, d, p[1]) < 0 ||
        conv_ints(t, p[3], 1, nd, prm + 1, "stride") < 0 || conv_ints(t, p[5], 1, nd, prm + 1 + 2 * nd, "dilation") < 0)
        return -1;
    long long groups = 1;
    if (!is_none(p[6]) && get_int(t, p[6], &groups, "groups") < 0)
        return -1;
    prm[1 + 3 * nd] = groups;
    if (p[4] != NULL && p[4]->kind == V_CONST && PyUnicode_Check(p[4]->obj)) {
        const char *mode = PyUnicode_AsUTF8(p[4]->obj);
        const ic_meta *w = metap(t, p[1]->val);
        int same = mode && strcmp(mode, "same") == 0;
        if (!mode || (!same && strcmp(mode, "valid") != 0))
            return sym_fail(t, "conv: padding '%s' (eager will raise)", mode ? mode : "?");
        for (int i = 0; i < nd; i++) {
            int64_t total = w->ndim == nd + 2 ? prm[1 + 2 * nd + i] * (w->sizes[2 + i] - 1) : 0;
            if (same && (prm[1 + i] != 1 || total % 2))
                return sym_fail(t, "conv: padding='same' with stride or asymmetric padding left to eager");
            prm[1 + nd + i] = same ? total / 2 : 0;
        }
    } else if (conv_ints(t, p[4], 0, nd, prm + 1 + nd, "padding") < 0) {
        return -1;
    }
    ic_val v[3] = {p[0]->val, p[1]->val, -1};
    int n = 2;
    if (!is_none(p[2])) {
        if (need_tensor(t, d, p[2]) < 0)
            return -1;
        v[n++] = p[2]->val;
    }
    const ic_meta *xm = metap(t, v[0]);
    ic_val dw = -1;
    int dwr = dw_conv(t, nd, prm, v, n, &dw);
    if (dwr < 0)
        return -1;
    if (dwr == 1)
        return tensor_out(t, dw, out);
    if (nd == 2 && xm->ndim == 4 && conv_channels_last(t, xm->dtype)) {
        /* channels-last: the conv reads x as [N,H,W,C] and writes [N,H',W',O] (cuDNN's fast
         * layout for 16-bit types); the graph sees NCHW views of both, so the producer of x
         * writes NHWC and the consumers of the result read it contiguously */
        prm[2 + 3 * nd] = 1;
        v[0] = ic_permute_fold(G, v[0], (const int[]){0, 2, 3, 1});
        /* the bias is a graph add over the last (channel) dim, fused into the next kernel
         * (cuDNN's path adds it in a kernel of its own) */
        ic_val r = ic_extern(t->g, IC_EXT_CONV, 2, v, 3 + 3 * nd, prm, 1, 1);
        if (r >= 0 && n == 3)
            r = ic_binary(G, IC_OP_ADD, r, v[2]);
        if (r < 0)
            return sym_check_graph(t);
        return tensor_out(t, ic_permute(G, r, (const int[]){0, 3, 1, 2}), out);
    }
    return tensor_out(t, ic_extern(t->g, IC_EXT_CONV, n, v, 2 + 3 * nd, prm, 1, 1), out);
}

/* F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
 * is_causal=False, *, scale=None, enable_gqa=False): an ATen extern (flash/efficient kernels
 * on CUDA). Dropout and grouped heads are left to eager; the scale is made explicit. */
static int h_sdpa(trace *t, const opdef *d, var **p, var *out) {
    double dropout = 0.0, scale;
    int causal = 0, gqa = 0;
    if (need_tensor(t, d, p[0]) < 0 || need_tensor(t, d, p[1]) < 0 || need_tensor(t, d, p[2]) < 0 ||
        opt_num(t, p[4], 0.0, &dropout, "dropout_p") < 0 || get_bool(t, p[5], 0, &causal, "is_causal") < 0 ||
        get_bool(t, p[7], 0, &gqa, "enable_gqa") < 0)
        return -1;
    if (dropout != 0.0)
        return sym_fail(t, "scaled_dot_product_attention with dropout_p=%g left to eager", dropout);
    ic_val kv[2] = {p[1]->val, p[2]->val};
    if (gqa) {
        /* grouped heads: each key/value head repeated for its group of query heads
         * (repeat_interleave on dim -3), then plain attention */
        ic_meta qm = *metap(t, p[0]->val);
        for (int i = 0; i < 2; i++) {
            ic_meta m = *metap(t, kv[i]);
            if (qm.dyn || m.dyn || m.ndim < 3 || m.ndim != qm.ndim || m.ndim + 1 > IC_MAX_DIMS)
                return sym_fail(t, "scaled_dot_product_attention with enable_gqa: unsupported shapes");
            int64_t hq = qm.sizes[qm.ndim - 3], hk = m.sizes[m.ndim - 3];
            if (hk <= 0 || hq % hk != 0)
                return sym_fail(t, "scaled_dot_product_attention: query heads not a multiple of key heads (eager will raise)");
            if (hq == hk)
                continue;
            int64_t s5[IC_MAX_DIMS];
            int n5 = 0;
            for (int j = 0; j < m.ndim; j++) {
                s5[n5++] = m.sizes[j];
                if (j == m.ndim - 3)
                    s5[n5++] = 1;
            }
            ic_val e = ic_reshape(G, kv[i], n5, s5);
            s5[m.ndim - 2] = hq / hk;
            e = e < 0 ? e : ic_expand(G, e, n5, s5);
            int64_t s4[IC_MAX_DIMS];
            for (int j = 0; j < m.ndim; j++)
                s4[j] = j == m.ndim - 3 ? hq : m.sizes[j];
            kv[i] = e < 0 ? e : ic_reshape(G, e, m.ndim, s4);
            if (kv[i] < 0)
                return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "graph builder failed");
        }
    }
    const ic_meta *q = metap(t, p[0]->val);
    if (q->ndim < 1 || (q->dyn && !sym_dim_static(q->dims[q->ndim - 1])))
        return sym_fail(t, "scaled_dot_product_attention: query without a static head dim");
    if (opt_num(t, p[6], 1.0 / sqrt((double)q->sizes[q->ndim - 1]), &scale, "scale") < 0)
        return -1;
    ic_val v[4] = {p[0]->val, kv[0], kv[1], -1};
    int n = 3;
    if (!is_none(p[3])) {
        if (need_tensor(t, d, p[3]) < 0)
            return -1;
        if (causal)
            return sym_fail(t, "scaled_dot_product_attention: attn_mask with is_causal left to eager");
        v[n++] = p[3]->val;
    }
    int64_t prm[1] = {causal};
    return tensor_out(t, ic_extern(G, IC_EXT_SDPA, n, v, 1, prm, scale, 1), out);
}

/* torch._native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight,
 * qkv_bias, proj_weight, proj_bias, mask=None, need_weights=True, average_attn_weights=True,
 * mask_type=None): nn.MultiheadAttention's eager fast path (self-attention, batch first).
 * Built as its math: qkv = linear(x), split into heads, scaled_dot_product_attention, heads
 * merged, out = linear(.); returns (out, None). Masks and need_weights=True are left to eager. */
static int h_native_mha(trace *t, const opdef *d, var **p, var *out) {
    long long e, h;
    int need_w;
    for (int i = 0; i < 3; i++)
        if (need_tensor(t, d, p[i]) < 0)
            return -1;
    if (get_int(t, p[3], &e, "embed_dim") < 0 || get_int(t, p[4], &h, "num_head") < 0 ||
        get_bool(t, p[10], 1, &need_w, "need_weights") < 0)
        return -1;
    for (int i = 5; i < 9; i++)
        if (need_tensor(t, d, p[i]) < 0)
            return -1;
    if (!is_none(p[9]))
        return sym_fail(t, "%s with a mask left to eager", d->name);
    if (need_w)
        return sym_fail(t, "%s with need_weights=True left to eager", d->name);
    if (p[0]->oid <= 0 || p[0]->oid != p[1]->oid || p[1]->oid != p[2]->oid)
        return sym_fail(t, "%s: query, key and value are not one tensor", d->name);
    ic_meta x = *metap(t, p[0]->val);
    if (x.ndim != 3 || x.dyn || h <= 0 || e % h != 0 || x.sizes[2] != e)
        return sym_fail(t, "%s: unsupported shapes", d->name);
    int64_t b = x.sizes[0], l = x.sizes[1], hd = e / h;
    ic_val qkv = ic_extern(G, IC_EXT_LINEAR, 3, (ic_val[]){p[0]->val, p[5]->val, p[6]->val}, 0,
                           NULL, 1, 1);
    ic_val heads[3] = {-1, -1, -1};
    for (int i = 0; i < 3 && qkv >= 0; i++) { /* [B,L,3E] -> q/k/v [B,H,L,D] */
        ic_val part = ic_slice(G, qkv, 2, i * e, (i + 1) * e, 1);
        part = part < 0 ? part : ic_reshape(G, part, 4, (int64_t[]){b, l, h, hd});
        heads[i] = part < 0 ? part : ic_permute(G, part, (const int[]){0, 2, 1, 3});
    }
    if (heads[0] < 0 || heads[1] < 0 || heads[2] < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: graph builder failed", d->name);
    int64_t causal = 0;
    ic_val a = ic_extern(G, IC_EXT_SDPA, 3, heads, 1, &causal, 1.0 / sqrt((double)hd), 1);
    a = a < 0 ? a : ic_permute(G, a, (const int[]){0, 2, 1, 3});
    a = a < 0 ? a : ic_reshape(G, a, 3, (int64_t[]){b, l, e});
    a = a < 0 ? a : ic_extern(G, IC_EXT_LINEAR, 3, (ic_val[]){a, p[7]->val, p[8]->val}, 0, NULL, 1, 1);
    var *items = sym_alloc(t, 2);
    if (items == NULL || tensor_out(t, a, &items[0]) < 0 ||
        sym_const(t, Py_NewRef(Py_None), &items[1]) < 0)
        return -1;
    memset(out, 0, sizeof *out);
    out->kind = V_SEQ;
    out->src = -1;
    out->n = 2;
    out->items = items;
    return 0;
}

/* gather(input, dim, index) / scatter(input, dim, index, src|value) / scatter_add; op: kind */
static int h_gather(trace *t, const opdef *d, var **p, var *out) {
    long long dd;
    int dim;
    if (need_tensor(t, d, p[0]) < 0 || get_int(t, p[1], &dd, "dim") < 0 ||
        norm_dim(t, dd, ndim_of(t, p[0]->val), &dim) < 0 || need_tensor(t, d, p[2]) < 0)
        return -1;
    int64_t prm[1] = {dim};
    ic_val v[3] = {p[0]->val, p[2]->val, -1};
    if (d->op == IC_EXT_GATHER)
        return tensor_out(t, ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1), out);
    if (p[4] != NULL && !is_none(p[4]))
        return sym_fail(t, "%s with reduce= left to eager", d->name);
    var *src = p[3] != NULL ? p[3] : p[5];
    if (src == NULL || (p[3] != NULL && p[5] != NULL))
        return sym_fail(t, "%s needs one of src/value", d->name);
    if (src->kind == V_TENSOR) {
        v[2] = src->val;
    } else if (d->op == IC_EXT_SCATTER && sym_is_number(src)) {
        /* scatter(dim, index, value): the value broadcast to the index's shape */
        ic_meta im = *metap(t, p[2]->val);
        ic_val s;
        if (as_tensor(t, src, &s) < 0)
            return -1;
        v[2] = ic_expand(G, ic_cast(G, s, metap(t, p[0]->val)->dtype), im.ndim, im.sizes);
    } else {
        return sym_fail(t, "%s: src must be a tensor", d->name);
    }
    return tensor_out(t, ic_extern(G, (ic_extern_kind)d->op, 3, v, 1, prm, 1, 1), out);
}

/* cumsum/cumprod(input, dim, dtype) */
static int h_cumsum(trace *t, const opdef *d, var **p, var *out) {
    long long dd;
    int dim, dt = -1;
    if (need_tensor(t, d, p[0]) < 0 || get_int(t, p[1], &dd, "dim") < 0 ||
        norm_dim(t, dd, ndim_of(t, p[0]->val), &dim) < 0 || (p[2] && get_dtype(t, p[2], &dt) < 0))
        return -1;
    int64_t prm[2] = {dim, dt};
    return tensor_out(t, ic_extern(G, (ic_extern_kind)d->op, 1, &p[0]->val, 2, prm, 1, 1), out);
}

/* argsort(input, dim=-1, descending=False, stable=False); msort(input) = sort values along 0 */
static int h_argsort(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    long long dd = d->op ? 0 : -1;
    int dim, desc = 0, stable = 0;
    if (d->op == 0 && ((!is_none(p[1]) && get_int(t, p[1], &dd, "dim") < 0) ||
                       get_bool(t, p[2], 0, &desc, "descending") < 0 || get_bool(t, p[3], 0, &stable, "stable") < 0))
        return -1;
    if (norm_dim(t, dd, ndim_of(t, p[0]->val), &dim) < 0)
        return -1;
    int64_t prm[3] = {dim, desc, stable};
    ic_val idx = ic_extern(G, IC_EXT_ARGSORT, 1, &p[0]->val, 3, prm, 1, 1);
    if (d->op == 0 || idx < 0)
        return tensor_out(t, idx, out);
    ic_val v[2] = {p[0]->val, idx};
    return tensor_out(t, ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1), out);
}

/* sort(input, dim=-1, descending=False, stable=False) -> (values, indices) (op 0);
 * topk(input, k, dim=-1, largest=True, sorted=True) -> the first k of a stable sort (op 1) */
static int h_sort(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    int nd = ndim_of(t, p[0]->val), dim, desc = 0, stable = 0, srt = 1;
    long long dd = -1, k = -1;
    if (d->op == 0) {
        if ((!is_none(p[1]) && get_int(t, p[1], &dd, "dim") < 0) ||
            get_bool(t, p[2], 0, &desc, "descending") < 0 || get_bool(t, p[3], 0, &stable, "stable") < 0)
            return -1;
    } else {
        if (get_int(t, p[1], &k, "k") < 0 || (!is_none(p[2]) && get_int(t, p[2], &dd, "dim") < 0) ||
            get_bool(t, p[3], 1, &desc, "largest") < 0 || get_bool(t, p[4], 1, &srt, "sorted") < 0)
            return -1;
        stable = 1;
    }
    if (nd == 0)
        return sym_fail(t, "%s of a 0-d tensor not supported yet", d->name);
    if (norm_dim(t, dd, nd, &dim) < 0)
        return -1;
    if (d->op == 1 && (k < 0 || k > metap(t, p[0]->val)->sizes[dim]))
        return sym_fail(t, "topk: k out of range (eager will raise)");
    int64_t prm[3] = {dim, desc, stable};
    ic_val idx = ic_extern(G, IC_EXT_ARGSORT, 1, &p[0]->val, 3, prm, 1, 1);
    if (idx >= 0 && d->op == 1)
        idx = ic_slice(G, idx, dim, 0, k, 1);
    ic_val v[2] = {p[0]->val, idx};
    ic_val vals = idx < 0 ? IC_NONE : ic_extern(G, IC_EXT_GATHER, 2, v, 1, prm, 1, 1);
    if (vals < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    return sym_return_pair(t, d->op == 0 ? "sort" : "topk", vals, idx, out);
}

/* ---- pooling, padding, interpolation: decompositions into slices, index maps, pointwise -- */

static int isflt(ic_dtype d) { return d >= IC_F16 && d <= IC_F64; }

static ic_val fconst(trace *t, double v, ic_dtype dt) { return ic_cast(G, ic_scalar(G, v, IC_F64), dt); }

/* x padded along dim by `lo` before and `hi` after (negative: cut) with the value fill */
static ic_val pad_const(trace *t, ic_val x, int dim, int64_t lo, int64_t hi, double fill) {
    ic_meta m = *metap(t, x);
    if (lo < 0) {
        x = ic_slice(G, x, dim, -lo, m.sizes[dim], 1);
        m = *metap(t, x);
        lo = 0;
    }
    if (hi < 0) {
        x = ic_slice(G, x, dim, 0, m.sizes[dim] + hi, 1);
        m = *metap(t, x);
        hi = 0;
    }
    for (int side = 0; side < 2; side++) {
        int64_t n = side ? hi : lo;
        if (n == 0)
            continue;
        int64_t sz[IC_MAX_DIMS];
        for (int i = 0; i < m.ndim; i++)
            sz[i] = i == dim ? n : m.sizes[i];
        ic_val f = ic_expand(G, fconst(t, fill, m.dtype), m.ndim, sz);
        x = side ? ic_cat(G, x, f, dim) : ic_cat(G, f, x, dim);
    }
    return x;
}

/* Window reduction over the last nd dims (max: op MAXIMUM, padding -inf; sum: op ADD,
 * padding 0) as k0*k1 strided slices combined pointwise: one fused kernel. */
static int pool_nd(trace *t, ic_val x, int nd, const int64_t *k, const int64_t *s, const int64_t *pad,
                   const int64_t *dl, int ceil, ic_op op, ic_val *res, int64_t *osz) {
    ic_meta m = *metap(t, x);
    if (m.ndim < nd + 1 || m.ndim > nd + 2)
        return sym_fail(t, "pool: expected a %dd or %dd input (eager will raise)", nd + 1, nd + 2);
    if (op == IC_OP_MAXIMUM && !isflt(m.dtype))
        return sym_fail(t, "max pool of an integer tensor left to eager");
    ic_val xp = x;
    for (int i = 0; i < nd; i++) {
        int dim = m.ndim - nd + i;
        int64_t L = m.sizes[dim], eff = dl[i] * (k[i] - 1) + 1;
        if (k[i] < 1 || s[i] < 1 || dl[i] < 1 || pad[i] < 0 || 2 * pad[i] > eff || L + 2 * pad[i] < eff)
            return sym_fail(t, "pool: bad kernel/stride/padding (eager will raise)");
        int64_t O = (L + 2 * pad[i] - eff + (ceil ? s[i] - 1 : 0)) / s[i] + 1;
        if (ceil && (O - 1) * s[i] >= L + pad[i])
            O--;
        osz[i] = O;
        int64_t need = (O - 1) * s[i] + eff;
        xp = pad_const(t, xp, dim, pad[i], need - L - pad[i], op == IC_OP_MAXIMUM ? -INFINITY : 0.0);
    }
    ic_val acc = -1;
    int64_t nk = 1;
    for (int i = 0; i < nd; i++)
        nk *= k[i];
    /* big non-overlapping windows (adaptive pools to 1x1, global pools): one reduction over
     * the window dims of a [.., O0, k0, O1, k1] view instead of k0*k1 slices */
    int tiled = nk > 8;
    for (int i = 0; i < nd; i++)
        tiled &= s[i] == k[i] && pad[i] == 0 && dl[i] == 1;
    if (tiled) {
        int64_t sz[IC_MAX_DIMS];
        int r = 0;
        uint32_t mask = 0;
        for (int i = 0; i < m.ndim - nd; i++)
            sz[r++] = m.sizes[i];
        for (int i = 0; i < nd; i++) {
            int dim = m.ndim - nd + i;
            if (osz[i] * k[i] != m.sizes[dim])
                xp = ic_slice(G, xp, dim, 0, osz[i] * k[i], 1);
            sz[r++] = osz[i];
            mask |= 1u << r;
            sz[r++] = k[i];
        }
        if (r > IC_MAX_DIMS)
            return sym_fail(t, "pool: too many dims");
        ic_val v = ic_reshape(G, xp, r, sz);
        *res = ic_reduce(G, op == IC_OP_MAXIMUM ? IC_OP_AMAX : IC_OP_SUM, v, mask, 0, -1);
        return *res < 0 ? sym_check_graph(t) : 0;
    }
    for (int64_t w = 0; w < nk; w++) {
        ic_val v = xp;
        for (int i = nd - 1, r = (int)w; i >= 0; i--) {
            int dim = m.ndim - nd + i;
            int64_t j = r % k[i];
            r /= (int)k[i];
            v = ic_slice(G, v, dim, j * dl[i], j * dl[i] + (osz[i] - 1) * s[i] + 1, s[i]);
        }
        acc = acc < 0 ? v : ic_binary(G, op, acc, v);
    }
    if (nk == 1)
        acc = ic_cast(G, acc, m.dtype);
    *res = acc;
    return acc < 0 ? sym_check_graph(t) : 0;
}

/* Depthwise convs (groups == in channels == out channels, 1-d/2-d, float) as a window sum:
 * the input padded with zeros, one strided slice per kernel tap times that tap's weight
 * column, summed in f32 with the bias, cast back: one fused kernel with the convolution's
 * neighbours (batch norm, activation) instead of a library call. On CUDA by default: cuDNN's
 * grouped-conv kernels took 1.73 ms for mobilenet_v3_large's 15 depthwise convs (H200, bf16,
 * batch 32) against 0.56 ms for ATen's own depthwise kernel in NCHW. TORCHC_DWCONV=0: never,
 * =1: on every device. Kernels of more than 25 taps stay library calls: convnext_tiny's 7x7
 * depthwise convs as 49-tap sums took 87 ms a call and 19 s to compile (one run).
 * Returns 1 with *res set, 0 when not applicable, -1 on a failed build. */
static int dw_conv(trace *t, int nd, const int64_t *prm, const ic_val *v, int n, ic_val *res) {
    char env[64];
    ic_config_str(IC_CFG_dwconv, env); /* torchc.config.dwconv */
    int force = strcmp(env, "1") == 0;
    if (strcmp(env, "0") == 0 || (!force && t->device_type != TC_DEV_CUDA) || nd > 2)
        return 0;
    const ic_meta xm = *metap(t, v[0]), wm = *metap(t, v[1]);
    if (xm.dyn || wm.dyn || xm.ndim != nd + 2 || wm.ndim != nd + 2 || !isflt(xm.dtype) || wm.dtype != xm.dtype)
        return 0;
    int64_t C = xm.sizes[1], taps = 1;
    if (C < 1 || prm[1 + 3 * nd] != C || wm.sizes[0] != C || wm.sizes[1] != 1)
        return 0;
    for (int i = 0; i < nd; i++)
        taps *= wm.sizes[2 + i];
    long long max_taps = ic_config_int(IC_CFG_dwconv_taps); /* the largest decomposed kernel */
    if (taps < 1 || taps > max_taps)
        return 0;
    if (n == 3) {
        const ic_meta *bm = metap(t, v[2]);
        if (bm->dyn || bm->ndim != 1 || bm->sizes[0] != C || bm->dtype != xm.dtype)
            return 0;
    }
    int64_t osz[2], need[2];
    for (int i = 0; i < nd; i++) {
        int64_t L = xm.sizes[2 + i], k = wm.sizes[2 + i], s = prm[1 + i], pd = prm[1 + nd + i],
                dl = prm[1 + 2 * nd + i], eff = dl * (k - 1) + 1;
        if (s < 1 || dl < 1 || pd < 0 || L + 2 * pd < eff)
            return 0; /* eager raises or the output is empty: the library call decides */
        osz[i] = (L + 2 * pd - eff) / s + 1;
        need[i] = (osz[i] - 1) * s + eff;
    }
    if (xm.sizes[0] == 0)
        return 0;
    ic_dtype acc_t = xm.dtype == IC_F64 ? IC_F64 : IC_F32;
    /* padded in its own dtype (stored once: sched.c), each tap cast; TORCHC_STENCIL=0: cast
     * first and the producer recomputed in every tap (1.32x slower on mobilenet_v3, H200) */
    int stencil = ic_config_int(IC_CFG_stencil) != 0;
    ic_val xp = stencil ? v[0] : ic_cast(G, v[0], acc_t);
    for (int i = 0; i < nd && xp >= 0; i++)
        xp = pad_const(t, xp, 2 + i, prm[1 + nd + i], need[i] - xm.sizes[2 + i] - prm[1 + nd + i], 0.0);
    ic_val wf = ic_cast(G, v[1], acc_t), acc = -1;
    int64_t wsz[3] = {C, 1, 1};
    for (int64_t w = 0; w < taps && xp >= 0 && wf >= 0; w++) {
        ic_val xs = xp, wt = wf;
        for (int i = nd - 1, r = (int)w; i >= 0; i--) {
            int64_t k = wm.sizes[2 + i], j = r % k, s = prm[1 + i], dl = prm[1 + 2 * nd + i];
            r /= (int)k;
            xs = ic_slice(G, xs, 2 + i, j * dl, j * dl + (osz[i] - 1) * s + 1, s);
            wt = ic_slice(G, wt, 2 + i, j, j + 1, 1);
        }
        ic_val term = ic_binary(G, IC_OP_MUL, stencil ? ic_cast(G, xs, acc_t) : xs, ic_reshape(G, wt, nd + 1, wsz));
        acc = acc < 0 ? term : ic_binary(G, IC_OP_ADD, acc, term);
    }
    if (acc >= 0 && n == 3)
        acc = ic_binary(G, IC_OP_ADD, acc, ic_reshape(G, ic_cast(G, v[2], acc_t), nd + 1, wsz));
    if (acc >= 0)
        acc = ic_cast(G, acc, xm.dtype);
    if (acc < 0)
        return sym_check_graph(t);
    *res = acc;
    return 1;
}

static int pool_ints(trace *t, var *v, int64_t dflt_from_k, const int64_t *k, int nd, int64_t *out, long long dflt,
                     const char *what) {
    if (is_none(v) || (v->kind == V_CONST && PyTuple_Check(v->obj) && PyTuple_GET_SIZE(v->obj) == 0) ||
        (v->kind == V_CONST && PyList_Check(v->obj) && PyList_GET_SIZE(v->obj) == 0)) {
        for (int i = 0; i < nd; i++)
            out[i] = dflt_from_k ? k[i] : dflt;
        return 0;
    }
    return conv_ints(t, v, dflt, nd, out, what);
}

/* max_pool1d/2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices) */
static int h_max_pool(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op, ceil = 0, ri = 0;
    int64_t k[2], s2[2], pad[2], dl[2], o[2];
    if (need_tensor(t, d, p[0]) < 0 || conv_ints(t, p[1], 1, nd, k, "kernel_size") < 0 ||
        pool_ints(t, p[2], 1, k, nd, s2, 1, "stride") < 0 || pool_ints(t, p[3], 0, k, nd, pad, 0, "padding") < 0 ||
        pool_ints(t, p[4], 0, k, nd, dl, 1, "dilation") < 0 || get_bool(t, p[5], 0, &ceil, "ceil_mode") < 0 ||
        get_bool(t, p[6], 0, &ri, "return_indices") < 0)
        return -1;
    if (ri)
        return sym_fail(t, "max pool with return_indices left to eager");
    ic_val r;
    if (pool_nd(t, p[0]->val, nd, k, s2, pad, dl, ceil, IC_OP_MAXIMUM, &r, o) < 0)
        return -1;
    return tensor_out(t, r, out);
}

/* counts of in-window elements per output position (avg_pool's divisor along one dim) */
static ic_val pool_counts(trace *t, int64_t O, int64_t k, int64_t s, int64_t L, int64_t pad, int include_pad) {
    ic_val st = ic_binary(G, IC_OP_MUL, ic_arange(G, O, 0, 1, IC_I64), inum(t, s));
    ic_val en = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_ADD, st, inum(t, k)), inum(t, L + 2 * pad));
    if (!include_pad) {
        en = ic_binary(G, IC_OP_MINIMUM, en, inum(t, L + pad));
        st = ic_binary(G, IC_OP_MAXIMUM, st, inum(t, pad));
    }
    return ic_binary(G, IC_OP_SUB, en, st);
}

/* avg_pool1d/2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override) */
static int h_avg_pool(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op, ceil = 0, inc = 1;
    int64_t k[2], s2[2], pad[2], dl[2] = {1, 1}, o[2];
    long long dov = 0;
    if (need_tensor(t, d, p[0]) < 0 || conv_ints(t, p[1], 1, nd, k, "kernel_size") < 0 ||
        pool_ints(t, p[2], 1, k, nd, s2, 1, "stride") < 0 || pool_ints(t, p[3], 0, k, nd, pad, 0, "padding") < 0 ||
        get_bool(t, p[4], 0, &ceil, "ceil_mode") < 0 || get_bool(t, p[5], 1, &inc, "count_include_pad") < 0 ||
        (nd == 2 && !is_none(p[6]) && get_int(t, p[6], &dov, "divisor_override") < 0))
        return -1;
    ic_meta m = *metap(t, p[0]->val);
    if (!isflt(m.dtype))
        return sym_fail(t, "avg pool of an integer tensor left to eager");
    ic_val sum;
    if (pool_nd(t, p[0]->val, nd, k, s2, pad, dl, ceil, IC_OP_ADD, &sum, o) < 0)
        return -1;
    ic_val div;
    if (dov) {
        div = fconst(t, (double)dov, m.dtype);
    } else {
        div = -1;
        for (int i = 0; i < nd; i++) {
            ic_val c = pool_counts(t, o[i], k[i], s2[i], m.sizes[m.ndim - nd + i], pad[i], inc);
            if (i == 0 && nd == 2)
                c = ic_reshape(G, c, 2, (int64_t[]){o[0], 1});
            div = div < 0 ? c : ic_binary(G, IC_OP_MUL, div, c);
        }
        div = ic_cast(G, div, m.dtype == IC_F64 ? IC_F64 : IC_F32);
    }
    ic_val r = ic_binary(G, IC_OP_DIV, ic_cast(G, sum, m.dtype == IC_F64 ? IC_F64 : IC_F32), div);
    return tensor_out(t, ic_cast(G, r, m.dtype), out);
}

/* adaptive_avg_pool1d/2d / adaptive_max_pool1d/2d(input, output_size[, return_indices]):
 * output sizes that divide the input (1 included) are plain pools; op: nd, +2 for max */
static int h_adaptive_pool(trace *t, const opdef *d, var **p, var *out) {
    int nd = d->op & 3, mx = d->op >= 4, ri = 0;
    if (need_tensor(t, d, p[0]) < 0 || (mx && get_bool(t, p[2], 0, &ri, "return_indices") < 0))
        return -1;
    if (ri)
        return sym_fail(t, "adaptive max pool with return_indices left to eager");
    ic_meta m = *metap(t, p[0]->val);
    if (m.ndim < nd + 1 || m.ndim > nd + 2)
        return sym_fail(t, "adaptive pool: bad input dims (eager will raise)");
    int64_t os[2], k[2], pad[2] = {0, 0}, dl[2] = {1, 1}, o[2];
    if (p[1] == NULL)
        return sym_fail(t, "adaptive pool: output_size missing");
    if (p[1]->kind == V_CONST && PyTuple_Check(p[1]->obj) && PyTuple_GET_SIZE(p[1]->obj) == nd) {
        for (int i = 0; i < nd; i++) {
            PyObject *it = PyTuple_GET_ITEM(p[1]->obj, i);
            os[i] = it == Py_None ? m.sizes[m.ndim - nd + i] : PyLong_Check(it) ? PyLong_AsLongLong(it) : -1;
        }
    } else if (conv_ints(t, p[1], 1, nd, os, "output_size") < 0) {
        return -1;
    }
    for (int i = 0; i < nd; i++) {
        int64_t L = m.sizes[m.ndim - nd + i];
        if (os[i] < 1 || L < 1 || L % os[i])
            return sym_fail(t, "adaptive pool: output size not dividing the input left to eager");
        k[i] = L / os[i];
    }
    ic_val r;
    if (pool_nd(t, p[0]->val, nd, k, k, pad, dl, 0, mx ? IC_OP_MAXIMUM : IC_OP_ADD, &r, o) < 0)
        return -1;
    if (!mx) {
        if (!isflt(m.dtype))
            return sym_fail(t, "adaptive avg pool of an integer tensor left to eager");
        ic_dtype ct = m.dtype == IC_F64 ? IC_F64 : IC_F32;
        r = ic_cast(G, ic_binary(G, IC_OP_DIV, ic_cast(G, r, ct), fconst(t, (double)(k[0] * (nd == 2 ? k[1] : 1)), ct)),
                    m.dtype);
    }
    return tensor_out(t, r, out);
}

/* F.pad(input, pad, mode='constant', value=None): constant as concatenations, reflect /
 * replicate / circular as index maps (index_select with an index computed from arange) */
static int h_pad(trace *t, const opdef *d, var **p, var *out) {
    long long pads[2 * IC_MAX_DIMS];
    int np;
    double value = 0;
    if (need_tensor(t, d, p[0]) < 0 || get_ints(t, p[1], pads, 2 * IC_MAX_DIMS, &np, "pad") < 0 ||
        opt_num(t, p[3], 0.0, &value, "value") < 0)
        return -1;
    const char *mode = "constant";
    if (!is_none(p[2])) {
        if (p[2]->kind != V_CONST || !PyUnicode_Check(p[2]->obj))
            return sym_fail(t, "pad: mode must be a string");
        mode = PyUnicode_AsUTF8(p[2]->obj);
    }
    ic_meta m = *metap(t, p[0]->val);
    if (np % 2 || np / 2 > m.ndim)
        return sym_fail(t, "pad: bad pad length (eager will raise)");
    int md = !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 : !strcmp(mode, "replicate") ? 2
             : !strcmp(mode, "circular") ? 3 : -1;
    if (md < 0)
        return sym_fail(t, "pad: mode '%s' left to eager", mode);
    if (md && (np / 2 > m.ndim - 1 || np / 2 > 3))
        return sym_fail(t, "pad: non-constant modes pad at most the last 3 non-batch dims (eager decides)");
    if (md == 0 && !isflt(m.dtype) && value != floor(value))
        return sym_fail(t, "pad: a fractional value on an integer tensor left to eager");
    ic_val x = p[0]->val;
    for (int i = 0; i < np / 2; i++) {
        int dim = m.ndim - 1 - i;
        int64_t lo = pads[2 * i], hi = pads[2 * i + 1], L = metap(t, x)->sizes[dim];
        if (lo == 0 && hi == 0)
            continue;
        if (md == 0) {
            if (L + lo + hi < 0)
                return sym_fail(t, "pad: resulting size is negative (eager will raise)");
            x = pad_const(t, x, dim, lo, hi, value);
            continue;
        }
        if (lo < 0 || hi < 0 || L == 0 || (md == 1 && (lo >= L || hi >= L)) || (md == 3 && (lo > L || hi > L)))
            return sym_fail(t, "pad: %s padding out of range (eager decides)", mode);
        ic_val j = ic_arange(G, L + lo + hi, (double)-lo, 1, IC_I64); /* source position, unclamped */
        ic_val idx;
        if (md == 1) { /* (L-1) - |(L-1) - |j|| */
            ic_val a = ic_unary(G, IC_OP_ABS, j);
            idx = ic_binary(G, IC_OP_SUB, inum(t, L - 1), ic_unary(G, IC_OP_ABS, ic_binary(G, IC_OP_SUB, inum(t, L - 1), a)));
        } else if (md == 2) {
            idx = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, j, inum(t, 0)), inum(t, L - 1));
        } else {
            idx = ic_binary(G, IC_OP_REMAINDER, j, inum(t, L));
        }
        x = ic_index_select(G, x, dim, idx);
    }
    if (x == p[0]->val)
        x = ic_cast(G, x, m.dtype);
    return tensor_out(t, x, out);
}

/* source index (nearest) or position (linear) of each output index along one dim */
static ic_val interp_nearest(trace *t, int64_t L, int64_t O, double sf, int exact) {
    if (O == L && !exact)
        return ic_arange(G, O, 0, 1, IC_I64);
    float scale = sf > 0 ? (float)(1.0 / sf) : (float)L / (float)O;
    ic_val i = ic_cast(G, ic_arange(G, O, 0, 1, IC_I64), IC_F32);
    if (exact)
        i = ic_binary(G, IC_OP_ADD, i, ic_scalar(G, 0.5, IC_F64));
    ic_val f = ic_unary(G, IC_OP_FLOOR, ic_binary(G, IC_OP_MUL, i, ic_cast(G, ic_scalar(G, scale, IC_F64), IC_F32)));
    return ic_binary(G, IC_OP_MINIMUM, ic_cast(G, f, IC_I64), inum(t, L - 1));
}

/* F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias):
 * nearest / nearest-exact (1-3 spatial dims) as index maps; linear / bilinear (align_corners
 * either way) as two index maps per dim blended with the weights ATen computes. */
static int h_interpolate(trace *t, const opdef *d, var **p, var *out) {
    if (need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_meta m = *metap(t, p[0]->val);
    int nd = m.ndim - 2, align = 0, recompute = 0, anti = 0;
    if (nd < 1 || nd > 3)
        return sym_fail(t, "interpolate: expected a 3-5d input (eager will raise)");
    const char *mode = "nearest";
    if (!is_none(p[3])) {
        if (p[3]->kind != V_CONST || !PyUnicode_Check(p[3]->obj))
            return sym_fail(t, "interpolate: mode must be a string");
        mode = PyUnicode_AsUTF8(p[3]->obj);
    }
    int md = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "nearest-exact") ? 1
             : (!strcmp(mode, "linear") && nd == 1) || (!strcmp(mode, "bilinear") && nd == 2) ? 2 : -1;
    if (md < 0)
        return sym_fail(t, "interpolate: mode '%s' left to eager", mode);
    if (get_bool(t, p[4], 0, &align, "align_corners") < 0 || get_bool(t, p[5], 0, &recompute, "recompute_scale_factor") < 0 ||
        get_bool(t, p[6], 0, &anti, "antialias") < 0)
        return -1;
    if (anti || (md < 2 && !is_none(p[4])))
        return sym_fail(t, "interpolate: antialias / align_corners with nearest left to eager");
    if (!isflt(m.dtype))
        return sym_fail(t, "interpolate of an integer tensor left to eager");
    int64_t O[3];
    double sf[3] = {0, 0, 0};
    if (!is_none(p[1]) && is_none(p[2])) {
        if (conv_ints(t, p[1], 1, nd, O, "size") < 0)
            return -1;
    } else if (is_none(p[1]) && !is_none(p[2])) {
        if (sym_is_number(p[2])) {
            for (int i = 0; i < nd; i++)
                sf[i] = PyFloat_AsDouble(p[2]->obj);
        } else if (p[2]->kind == V_CONST && PyTuple_Check(p[2]->obj) && PyTuple_GET_SIZE(p[2]->obj) == nd) {
            for (int i = 0; i < nd; i++)
                sf[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(p[2]->obj, i));
            if (PyErr_Occurred()) {
                PyErr_Clear();
                return sym_fail(t, "interpolate: scale_factor must hold numbers");
            }
        } else {
            return sym_fail(t, "interpolate: scale_factor must be constant numbers");
        }
        for (int i = 0; i < nd; i++) {
            if (!(sf[i] > 0))
                return sym_fail(t, "interpolate: bad scale_factor (eager will raise)");
            O[i] = (int64_t)floor((double)m.sizes[2 + i] * sf[i]);
            if (recompute)
                sf[i] = 0;
        }
    } else {
        return sym_fail(t, "interpolate: exactly one of size and scale_factor (eager will raise)");
    }
    ic_val x = p[0]->val;
    for (int i = 0; i < nd; i++) {
        if (O[i] < 1 || m.sizes[2 + i] < 1)
            return sym_fail(t, "interpolate: empty sizes left to eager");
    }
    if (md < 2) {
        for (int i = 0; i < nd; i++)
            x = ic_index_select(G, x, 2 + i, interp_nearest(t, m.sizes[2 + i], O[i], sf[i], md == 1));
        return tensor_out(t, x, out);
    }
    /* linear along the last dim first, then the one before (ATen's order of operations) */
    ic_dtype ct = m.dtype == IC_F64 ? IC_F64 : IC_F32;
    for (int i = nd - 1; i >= 0; i--) {
        int dim = 2 + i;
        int64_t L = m.sizes[dim];
        double scale;
        if (align)
            scale = O[i] > 1 ? (ct == IC_F32 ? (double)((float)(L - 1) / (float)(O[i] - 1)) : (double)(L - 1) / (O[i] - 1)) : 0;
        else if (sf[i] > 0)
            scale = ct == IC_F32 ? (double)(float)(1.0 / sf[i]) : 1.0 / sf[i];
        else
            scale = ct == IC_F32 ? (double)((float)L / (float)O[i]) : (double)L / (double)O[i];
        ic_val di = ic_cast(G, ic_arange(G, O[i], 0, 1, IC_I64), ct);
        ic_val sc = ic_cast(G, ic_scalar(G, scale, IC_F64), ct);
        ic_val src;
        if (align) {
            src = ic_binary(G, IC_OP_MUL, sc, di);
        } else {
            src = ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MUL, sc, ic_binary(G, IC_OP_ADD, di, fconst(t, 0.5, ct))),
                            fconst(t, 0.5, ct));
            src = ic_binary(G, IC_OP_MAXIMUM, src, fconst(t, 0.0, ct));
        }
        ic_val i0 = ic_cast(G, src, IC_I64);
        ic_val i1 = ic_binary(G, IC_OP_ADD, i0, ic_cast(G, ic_binary(G, IC_OP_LT, i0, inum(t, L - 1)), IC_I64));
        ic_val l1 = ic_binary(G, IC_OP_SUB, src, ic_cast(G, i0, ct));
        ic_val l0 = ic_binary(G, IC_OP_SUB, fconst(t, 1.0, ct), l1);
        if (i < nd - 1) { /* weights broadcast over the dims after dim */
            int64_t sh[2] = {O[i], 1};
            l0 = ic_reshape(G, l0, 2, sh);
            l1 = ic_reshape(G, l1, 2, sh);
        }
        ic_val a = ic_cast(G, ic_index_select(G, x, dim, i0), ct), b = ic_cast(G, ic_index_select(G, x, dim, i1), ct);
        x = ic_cast(G, ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, l0, a), ic_binary(G, IC_OP_MUL, l1, b)), m.dtype);
    }
    return tensor_out(t, x, out);
}

#undef G

/* ---- the table ------------------------------------------------------------------- */

#define UN(n, w, opc) {n, w, "input,inplace", h_unary, IC_OP_##opc}
#define BIN(n, opc) {n, W_ALL, "input,other", h_binary, IC_OP_##opc}

static const opdef OPS[] = {
    {"add", W_TORCH | W_METHOD, "input,other|alpha", h_add_sub, IC_OP_ADD},
    {"sub", W_TORCH | W_METHOD, "input,other|alpha", h_add_sub, IC_OP_SUB},
    {"subtract", W_TORCH | W_METHOD, "input,other|alpha", h_add_sub, IC_OP_SUB},
    BIN("mul", MUL), BIN("multiply", MUL),
    {"div", W_TORCH | W_METHOD, "input,other|rounding_mode", h_div, IC_OP_DIV},
    {"divide", W_TORCH | W_METHOD, "input,other|rounding_mode", h_div, IC_OP_DIV},
    {"true_divide", W_TORCH | W_METHOD, "input,other|rounding_mode", h_div, IC_OP_DIV},
    BIN("maximum", MAXIMUM), BIN("minimum", MINIMUM),
    {"pow", W_TORCH | W_METHOD, "input,exponent", h_binary, IC_OP_POW},
    BIN("eq", EQ), BIN("ne", NE), BIN("not_equal", NE), BIN("lt", LT), BIN("less", LT),
    BIN("le", LE), BIN("less_equal", LE), BIN("gt", GT), BIN("greater", GT), BIN("ge", GE),
    BIN("greater_equal", GE), BIN("logical_and", LOGICAL_AND), BIN("logical_or", LOGICAL_OR),
    UN("neg", W_TORCH | W_METHOD, NEG), UN("negative", W_TORCH | W_METHOD, NEG),
    UN("abs", W_TORCH | W_METHOD, ABS), UN("exp", W_TORCH | W_METHOD, EXP),
    UN("log", W_TORCH | W_METHOD, LOG), UN("sqrt", W_TORCH | W_METHOD, SQRT),
    UN("rsqrt", W_TORCH | W_METHOD, RSQRT), UN("reciprocal", W_TORCH | W_METHOD, RECIPROCAL),
    UN("sigmoid", W_ALL, SIGMOID), UN("tanh", W_ALL, TANH), UN("relu", W_ALL, RELU),
    UN("silu", W_F, SILU), UN("sin", W_TORCH | W_METHOD, SIN), UN("cos", W_TORCH | W_METHOD, COS),
    UN("logical_not", W_TORCH | W_METHOD, LOGICAL_NOT),
    {"square", W_TORCH | W_METHOD, "input", h_square, 0},
    {"gelu", W_ALL, "input|approximate", h_gelu, 0},
    {"where", W_TORCH | W_METHOD, "condition,input,other", h_where, 0},
    {"clamp", W_TORCH | W_METHOD, "input,min,max", h_clamp, 0},
    {"clip", W_TORCH | W_METHOD, "input,min,max", h_clamp, 0},
    {"clamp_max", W_TORCH | W_METHOD, "input,max", h_clamp, 1},
    {"clamp_min", W_TORCH | W_METHOD, "input,min", h_clamp, 2},
    {"sum", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", h_reduce, IC_OP_SUM},
    {"mean", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", h_reduce, IC_OP_MEAN},
    {"amax", W_TORCH | W_METHOD, "input,dim,keepdim", h_reduce, IC_OP_AMAX},
    {"amin", W_TORCH | W_METHOD, "input,dim,keepdim", h_reduce, IC_OP_AMIN},
    {"max", W_TORCH | W_METHOD, "input,dim,keepdim", h_max_min, IC_OP_MAXIMUM}, /* dim: or other */
    {"min", W_TORCH | W_METHOD, "input,dim,keepdim", h_max_min, IC_OP_MINIMUM},
    {"softmax", W_TORCH | W_METHOD, "input,dim,dtype", h_softmax, 0},
    {"softmax", W_F, "input,dim,_stacklevel,dtype", h_softmax, 0},
    {"log_softmax", W_TORCH | W_METHOD, "input,dim,dtype", h_softmax, 1},
    {"log_softmax", W_F, "input,dim,_stacklevel,dtype", h_softmax, 1},
    {"layer_norm", W_TORCH | W_F, "input,normalized_shape,weight,bias,eps", h_layer_norm, 0},
    {"rms_norm", W_TORCH | W_F, "input,normalized_shape,weight,eps", h_layer_norm, 1},
    {"dropout", W_TORCH | W_F, "input,p,training,inplace", h_dropout, 0},
    UN("floor", W_TORCH | W_METHOD, FLOOR), UN("ceil", W_TORCH | W_METHOD, CEIL),
    UN("round", W_TORCH | W_METHOD, ROUND), UN("trunc", W_TORCH | W_METHOD, TRUNC),
    UN("sign", W_TORCH | W_METHOD, SIGN), UN("erf", W_TORCH | W_METHOD, ERF),
    UN("log1p", W_TORCH | W_METHOD, LOG1P), UN("expm1", W_TORCH | W_METHOD, EXPM1),
    UN("log2", W_TORCH | W_METHOD, LOG2), UN("exp2", W_TORCH | W_METHOD, EXP2),
    UN("tan", W_TORCH | W_METHOD, TAN), UN("atan", W_TORCH | W_METHOD, ATAN),
    UN("isnan", W_TORCH | W_METHOD, ISNAN), UN("isinf", W_TORCH | W_METHOD, ISINF),
    UN("isfinite", W_TORCH | W_METHOD, ISFINITE), UN("bitwise_not", W_TORCH | W_METHOD, BITWISE_NOT),
    BIN("fmod", FMOD), BIN("remainder", REMAINDER), BIN("floor_divide", FLOOR_DIVIDE),
    BIN("bitwise_and", BITWISE_AND), BIN("bitwise_or", BITWISE_OR), BIN("bitwise_xor", BITWISE_XOR),
    BIN("logical_xor", LOGICAL_XOR), BIN("atan2", ATAN2), BIN("arctan2", ATAN2),
    {"prod", W_TORCH | W_METHOD, "input,dim,keepdim|dtype", h_reduce, IC_OP_PROD},
    {"argmax", W_TORCH | W_METHOD, "input,dim,keepdim", h_arg, IC_OP_ARGMAX},
    {"argmin", W_TORCH | W_METHOD, "input,dim,keepdim", h_arg, IC_OP_ARGMIN},
    {"cat", W_TORCH, "tensors,dim", h_cat, 0},
    {"concat", W_TORCH, "tensors,dim", h_cat, 0},
    {"concatenate", W_TORCH, "tensors,dim", h_cat, 0},
    {"stack", W_TORCH, "tensors,dim", h_cat, 1},
    {"narrow", W_TORCH | W_METHOD, "input,dim,start,length", h_narrow, 0},
    {"select", W_TORCH | W_METHOD, "input,dim,index", h_narrow, 1},
    {"split", W_TORCH | W_METHOD, "tensor,split_size_or_sections,dim", h_split, 0},
    {"chunk", W_TORCH | W_METHOD, "input,chunks,dim", h_split, 1},
    {"index_select", W_TORCH | W_METHOD, "input,dim,index", h_index_select, 0},
    {"embedding", W_F, "input,weight,padding_idx,max_norm,norm_type,scale_grad_by_freq,sparse", h_index_select, 1},
    {"arange", W_TORCH, "start,end,step|dtype,device,layout,out,requires_grad,pin_memory", h_arange, 0},
    {"tensor", W_TORCH, "data|dtype,device,requires_grad,pin_memory", h_tensor, 0},
    {"zeros", W_TORCH, "*size|dtype,device,layout,requires_grad,pin_memory,out", h_factory, 0},
    {"ones", W_TORCH, "*size|dtype,device,layout,requires_grad,pin_memory,out", h_factory, 1},
    {"full", W_TORCH, "size,fill_value|dtype,device,layout,requires_grad,pin_memory,out", h_factory, 2},
    {"zeros_like", W_TORCH, "input|dtype,device,layout,requires_grad,memory_format", h_factory, 3},
    {"ones_like", W_TORCH, "input|dtype,device,layout,requires_grad,memory_format", h_factory, 4},
    {"full_like", W_TORCH, "input,fill_value|dtype,device,layout,requires_grad,memory_format", h_factory, 5},
    {"softplus", W_F, "input,beta,threshold", h_act, 0},
    {"elu", W_F, "input,alpha,inplace", h_act, 1},
    {"leaky_relu", W_F, "input,negative_slope,inplace", h_act, 2},
    {"hardswish", W_F, "input,inplace", h_act, 3},
    {"hardsigmoid", W_F, "input,inplace", h_act, 4},
    {"relu6", W_F, "input,inplace", h_act, 5},
    {"hardtanh", W_F, "input,min_val,max_val,inplace", h_act, 6},
    {"mish", W_F, "input,inplace", h_act, 7},
    {"logsigmoid", W_F, "input", h_act, 8},
    {"selu", W_TORCH | W_F, "input,inplace", h_act, 9},
    {"softsign", W_F, "input", h_act, 10},
    {"var", W_TORCH | W_METHOD, "input,dim,keepdim|unbiased,correction", h_var, 0},
    {"std", W_TORCH | W_METHOD, "input,dim,keepdim|unbiased,correction", h_var, 1},
    {"logsumexp", W_TORCH | W_METHOD, "input,dim,keepdim", h_logsumexp, 0},
    {"any", W_TORCH | W_METHOD, "input,dim,keepdim", h_anyall, 0},
    {"all", W_TORCH | W_METHOD, "input,dim,keepdim", h_anyall, 1},
    {"norm", W_TORCH | W_METHOD, "input,p,dim,keepdim", h_norm, 0},
    {"masked_fill", W_TORCH | W_METHOD, "input,mask,value", h_masked_fill, 0},
    {"addcmul", W_TORCH | W_METHOD, "input,tensor1,tensor2|value", h_addc, 0},
    {"addcdiv", W_TORCH | W_METHOD, "input,tensor1,tensor2|value", h_addc, 1},
    {"lerp", W_TORCH | W_METHOD, "input,end,weight", h_addc, 2},
    {"tril", W_TORCH | W_METHOD, "input,diagonal", h_tri, 0},
    {"triu", W_TORCH | W_METHOD, "input,diagonal", h_tri, 1},
    {"flip", W_TORCH | W_METHOD, "input,dims", h_flip, 0},
    {"roll", W_TORCH | W_METHOD, "input,shifts,dims", h_flip, 1},
    {"batch_norm", W_F, "input,running_mean,running_var,weight,bias,training,momentum,eps", h_batch_norm, 0},
    {"group_norm", W_TORCH | W_F, "input,num_groups,weight,bias,eps", h_group_norm, 0},
    {"type_as", W_METHOD, "input,other", h_type_as, 0},
    {"clone", W_TORCH | W_METHOD, "input|memory_format", h_clone, 0},
    {"nan_to_num", W_TORCH | W_METHOD, "input,nan,posinf,neginf", h_nan_to_num, 0},
    {"repeat", W_METHOD, "input,*repeats", h_repeat, 0},
    {"float", W_METHOD, "input", h_cast, IC_F32},
    {"double", W_METHOD, "input", h_cast, IC_F64},
    {"int", W_METHOD, "input", h_cast, IC_I32},
    {"long", W_METHOD, "input", h_cast, IC_I64},
    {"bool", W_METHOD, "input", h_cast, IC_BOOL},
    {"to", W_METHOD, "input,a,b|dtype,non_blocking,copy,device,memory_format", h_to, 0},
    {"reshape", W_TORCH | W_METHOD, "input,*shape", h_reshape, 0},
    {"view", W_METHOD, "input,*shape", h_reshape, 0},
    {"flatten", W_TORCH | W_METHOD, "input,start_dim,end_dim", h_flatten, 0},
    {"unflatten", W_TORCH | W_METHOD, "input,dim,sizes", h_unflatten, 0},
    {"permute", W_TORCH | W_METHOD, "input,*dims", h_permute, 0},
    {"transpose", W_TORCH | W_METHOD, "input,dim0,dim1", h_transpose, 0},
    {"swapaxes", W_TORCH | W_METHOD, "input,dim0,dim1", h_transpose, 0},
    {"t", W_TORCH | W_METHOD, "input", h_transpose, 1},
    {"unsqueeze", W_TORCH | W_METHOD, "input,dim", h_unsqueeze, 0},
    {"squeeze", W_TORCH | W_METHOD, "input,dim", h_squeeze, 0},
    {"expand", W_METHOD, "input,*sizes", h_expand, 0},
    {"contiguous", W_METHOD, "input", h_identity, 1},
    {"zero_", W_METHOD, "input", h_fill, 0},
    {"fill_", W_METHOD, "input,value", h_fill, 1},
    {"copy_", W_METHOD, "input,src,non_blocking", h_fill, 2},
    {"detach", W_TORCH | W_METHOD, "input", h_identity, 0},
    {"size", W_METHOD, "input,dim", h_size, 0},
    {"dim", W_METHOD, "input", h_size, 1},
    {"ndimension", W_METHOD, "input", h_size, 1},
    {"numel", W_TORCH | W_METHOD, "input", h_size, 2},
    {"matmul", W_TORCH | W_METHOD, "input,other", h_matmul, IC_EXT_MATMUL},
    {"mm", W_TORCH | W_METHOD, "input,mat2", h_matmul, IC_EXT_MM},
    {"bmm", W_TORCH | W_METHOD, "input,mat2", h_matmul, IC_EXT_BMM},
    {"addmm", W_TORCH | W_METHOD, "input,mat1,mat2|beta,alpha", h_addmm, IC_EXT_ADDMM},
    {"baddbmm", W_TORCH | W_METHOD, "input,batch1,batch2|beta,alpha", h_addmm, IC_EXT_BADDBMM},
    {"linear", W_F, "input,weight,bias", h_linear, 0},
    {"conv1d", W_TORCH | W_F, "input,weight,bias,stride,padding,dilation,groups", h_conv, 1},
    {"conv2d", W_TORCH | W_F, "input,weight,bias,stride,padding,dilation,groups", h_conv, 2},
    {"conv3d", W_TORCH | W_F, "input,weight,bias,stride,padding,dilation,groups", h_conv, 3},
    {"_native_multi_head_attention", W_TORCH,
     "query,key,value,embed_dim,num_head,qkv_weight,qkv_bias,proj_weight,proj_bias,mask,need_weights,average_attn_weights,mask_type",
     h_native_mha, 0},
    {"scaled_dot_product_attention", W_F, "query,key,value,attn_mask,dropout_p,is_causal|scale,enable_gqa",
     h_sdpa, 0},
    {"matrix_exp", W_TORCH | W_METHOD, "input", h_linalg, IC_EXT_MATRIX_EXP},
    {"matrix_exp", W_LINALG, "A", h_linalg, IC_EXT_MATRIX_EXP},
    {"solve", W_LINALG, "A,B|left", h_linalg, IC_EXT_SOLVE},
    {"gather", W_TORCH | W_METHOD, "input,dim,index|sparse_grad", h_gather, IC_EXT_GATHER},
    {"scatter", W_TORCH | W_METHOD, "input,dim,index,src|reduce,value", h_gather, IC_EXT_SCATTER},
    {"scatter_add", W_TORCH | W_METHOD, "input,dim,index,src", h_gather, IC_EXT_SCATTER_ADD},
    {"cumsum", W_TORCH | W_METHOD, "input,dim|dtype", h_cumsum, IC_EXT_CUMSUM},
    {"cumprod", W_TORCH | W_METHOD, "input,dim|dtype", h_cumsum, IC_EXT_CUMPROD},
    {"argsort", W_TORCH | W_METHOD, "input,dim,descending|stable", h_argsort, 0},
    {"msort", W_TORCH | W_METHOD, "input", h_argsort, 1},
    {"sort", W_TORCH | W_METHOD, "input,dim,descending|stable", h_sort, 0},
    {"topk", W_TORCH | W_METHOD, "input,k,dim,largest,sorted", h_sort, 1},
    {"max_pool1d", W_TORCH | W_F, "input,kernel_size,stride,padding,dilation,ceil_mode,return_indices", h_max_pool, 1},
    {"max_pool2d", W_TORCH | W_F, "input,kernel_size,stride,padding,dilation,ceil_mode,return_indices", h_max_pool, 2},
    {"avg_pool1d", W_TORCH | W_F, "input,kernel_size,stride,padding,ceil_mode,count_include_pad", h_avg_pool, 1},
    {"avg_pool2d", W_F, "input,kernel_size,stride,padding,ceil_mode,count_include_pad,divisor_override", h_avg_pool, 2},
    {"adaptive_avg_pool1d", W_TORCH | W_F, "input,output_size", h_adaptive_pool, 1},
    {"adaptive_avg_pool2d", W_F, "input,output_size", h_adaptive_pool, 2},
    {"adaptive_max_pool1d", W_F, "input,output_size,return_indices", h_adaptive_pool, 5},
    {"adaptive_max_pool2d", W_F, "input,output_size,return_indices", h_adaptive_pool, 6},
    {"pad", W_F, "input,pad,mode,value", h_pad, 0},
    {"interpolate", W_F, "input,size,scale_factor,mode,align_corners,recompute_scale_factor,antialias", h_interpolate, 0},
};
#define NOPS ((int)(sizeof OPS / sizeof OPS[0]))

static PyObject *func_table;   /* callable → op index */
/* torch._C queries about the caller's context, answered at trace time: _is_tracing,
 * _get_tracing_state (torch.jit.trace active: not captured), _len_torch_dispatch_stack
 * (a dispatch mode active: not captured); and _log_api_usage_once /
 * _log_api_usage_metadata, logging without effect on results: no-ops in the graph. */
static PyObject *c_tracing_query[3], *c_usage_log[2];
/* torch._C._has_torch_function / _unary / _variadic: traced tensors are plain tensors
 * (subclasses are not captured), so the answer is the real one for a plain tensor probe. */
static PyObject *c_tf_query[3], *tf_probe;
static PyObject *c_autocast_query; /* torch.is_autocast_enabled */
static PyObject *tensor_type;      /* torch.Tensor */
static PyObject *c_grad_query;     /* torch.is_grad_enabled: guarded at entry, off in no_grad */
static PyObject *method_table; /* name → op index */

int sym_func_op(PyObject *callable) {
    if (func_table == NULL)
        return -1;
    PyObject *v = PyDict_GetItemWithError(func_table, callable);
    if (v == NULL) {
        PyErr_Clear();
        return -1;
    }
    return (int)PyLong_AsLong(v);
}

/* A callable outside torch that computes the op named `name` (its first table entry):
 * torchc._C.matrix_exp, the eager fast path of torchc.manifolds, is captured as that op. */
int dh_alias_op(PyObject *fn, const char *name) {
    for (int i = 0; i < NOPS && func_table; i++) {
        if (strcmp(OPS[i].name, name))
            continue;
        PyObject *idx = PyLong_FromLong(i);
        int rc = idx ? PyDict_SetItem(func_table, fn, idx) : -1;
        Py_XDECREF(idx);
        return rc;
    }
    PyErr_Format(PyExc_KeyError, "torchc: no op named %s", name);
    return -1;
}

int sym_method_op(PyObject *name) {
    PyObject *v = PyDict_GetItemWithError(method_table, name);
    if (v == NULL) {
        PyErr_Clear();
        return -1;
    }
    return (int)PyLong_AsLong(v);
}

int sym_ops_init(void) {
    PyObject *torch = NULL, *F = NULL, *linalg = NULL;
    func_table = PyDict_New();
    method_table = PyDict_New();
    if (!func_table || !method_table)
        return -1;
    torch = PyImport_ImportModule("torch");
    F = PyImport_ImportModule("torch.nn.functional");
    if (!torch || !F)
        goto error;
    linalg = PyImport_ImportModule("torch.linalg");
    if (linalg == NULL)
        goto error;
    {
        PyObject *C = PyObject_GetAttrString(torch, "_C");
        static const char *q[3] = {"_is_tracing", "_get_tracing_state", "_len_torch_dispatch_stack"};
        static const char *l[2] = {"_log_api_usage_once", "_log_api_usage_metadata"};
        static const char *h[3] = {"_has_torch_function", "_has_torch_function_unary",
                                   "_has_torch_function_variadic"};
        for (int i = 0; C && i < 3; i++)
            c_tracing_query[i] = PyObject_GetAttrString(C, q[i]);
        for (int i = 0; C && i < 2; i++)
            c_usage_log[i] = PyObject_GetAttrString(C, l[i]);
        for (int i = 0; C && i < 3; i++)
            c_tf_query[i] = PyObject_GetAttrString(C, h[i]);
        tf_probe = PyObject_CallMethod(torch, "empty", "i", 0);
        c_autocast_query = PyObject_GetAttrString(torch, "is_autocast_enabled");
        tensor_type = PyObject_GetAttrString(torch, "Tensor");
        c_grad_query = PyObject_GetAttrString(torch, "is_grad_enabled");
        Py_XDECREF(C);
        PyErr_Clear(); /* missing ones stay NULL: calls to them break as before */
    }
    for (int i = 0; i < NOPS; i++) {
        PyObject *idx = PyLong_FromLong(i);
        if (idx == NULL)
            goto error;
        PyObject *mods[3] = {torch, F, linalg};
        unsigned bits[3] = {W_TORCH, W_F, W_LINALG};
        for (int k = 0; k < 3; k++) {
            if (!(OPS[i].where & bits[k]))
                continue;
            PyObject *fn = PyObject_GetAttrString(mods[k], OPS[i].name);
            if (fn == NULL) {
                PyErr_Clear();
                continue;
            }
            int rc = PyDict_Contains(func_table, fn) ? 0 : PyDict_SetItem(func_table, fn, idx);
            Py_DECREF(fn);
            if (rc < 0) {
                Py_DECREF(idx);
                goto error;
            }
        }
        if (OPS[i].where & W_METHOD) {
            if (PyDict_GetItemString(method_table, OPS[i].name) == NULL &&
                PyDict_SetItemString(method_table, OPS[i].name, idx) < 0) {
                Py_DECREF(idx);
                goto error;
            }
        }
        Py_DECREF(idx);
    }
    Py_DECREF(torch);
    Py_DECREF(F);
    Py_DECREF(linalg);
    return 0;
error:
    Py_XDECREF(torch);
    Py_XDECREF(F);
    Py_XDECREF(linalg);
    return -1;
}

/* ---- binding arguments to a signature ------------------------------------------- */

static int bind(trace *t, const opdef *d, var *args, int nargs, PyObject *kwnames, var *kwv,
                var **slots, var *packed) {
    char names[MAXP][24];
    int np = 0, kwonly_from = MAXP, star = -1;
    const char *s = d->sig;
    while (*s && np < MAXP) {
        if (*s == '|') {
            kwonly_from = np;
            s++;
            continue;
        }
        int k = 0;
        if (*s == '*') {
            star = np;
            s++;
        }
        while (*s && *s != ',' && *s != '|' && k < 23)
            names[np][k++] = *s++;
        names[np][k] = 0;
        np++;
        if (*s == ',')
            s++;
    }
    for (int i = 0; i < MAXP; i++)
        slots[i] = NULL;
    int npos = nargs;
    if (star >= 0) {
        /* *name packs the remaining positionals into one SEQ */
        int rest = nargs - star;
        if (rest < 0)
            rest = 0;
        var *items = sym_alloc(t, rest);
        if (items == NULL)
            return -1;
        for (int i = 0; i < rest; i++)
            items[i] = args[star + i];
        memset(packed, 0, sizeof *packed);
        packed->kind = V_SEQ;
        packed->src = -1;
        packed->n = rest;
        packed->items = items;
        slots[star] = packed;
        npos = star < nargs ? star : nargs;
    } else if (nargs > (kwonly_from < np ? kwonly_from : np)) {
        return sym_fail(t, "%s: too many positional arguments", d->name);
    }
    for (int i = 0; i < npos; i++)
        slots[i] = &args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *kn = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        int found = -1;
        for (int i = 0; i < np; i++)
            if (strcmp(names[i], kn) == 0)
                found = i;
        /* torch's Tensor methods call the first parameter 'self' or 'input' */
        if (found < 0 && strcmp(kn, "self") == 0)
            found = 0;
        if (found < 0 || found == star)
            return sym_fail(t, "%s: unsupported keyword argument '%s'", d->name, kn);
        if (slots[found] != NULL)
            return sym_fail(t, "%s: argument '%s' given twice", d->name, kn);
        slots[found] = &kwv[k];
    }
    if (slots[0] == NULL)
        return sym_fail(t, "%s: missing first argument", d->name);
    return 0;
}

static int call_op(trace *t, int opi, var *args, int nargs, PyObject *kwnames, var *kwv, var *out) {
    const opdef *d = &OPS[opi];
    var *slots[MAXP];
    var packed;
    if (dh_tl_autocast && dh_autocast_op_affected(d->name)) /* casts under autocast: eager's */
        return sym_fail(t, "autocast is enabled and %s casts under it (not captured)", d->name);
    if (bind(t, d, args, nargs, kwnames, kwv, slots, &packed) < 0)
        return -1;
    return d->fn(t, d, slots, out);
}

/* has_torch_function(args): asked with the real objects, a plain-tensor probe standing for
 * each traced tensor; True (a torch function mode, an object overriding it) stops here. */
static int torch_function_query(trace *t, PyObject *f, int which, const var *args, int nargs,
                                var *out) {
    const var *items = args;
    int n = nargs;
    if (which == 0) { /* _has_torch_function(iterable) */
        if (nargs == 1 && args[0].kind == V_CONST && PyTuple_CheckExact(args[0].obj)) {
            PyObject *r = PyObject_CallOneArg(f, args[0].obj); /* plain Python values */
            if (r == NULL) {
                PyErr_Clear();
                return sym_fail(t, "has_torch_function raised");
            }
            if (r != Py_False) {
                Py_DECREF(r);
                return sym_fail(t, "__torch_function__ override or mode active");
            }
            return sym_const(t, r, out);
        }
        if (nargs != 1 || args[0].kind != V_SEQ)
            return sym_fail(t, "has_torch_function of an unsupported value");
        items = args[0].items;
        n = args[0].n;
    }
    PyObject *tup = PyTuple_New(n), *r = NULL;
    if (tup == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        PyObject *o = items[i].kind == V_TENSOR ? tf_probe
                      : items[i].kind == V_CONST || items[i].kind == V_OBJ ? items[i].obj : NULL;
        if (o == NULL) {
            Py_DECREF(tup);
            return sym_fail(t, "has_torch_function of an unsupported value");
        }
        PyTuple_SET_ITEM(tup, i, Py_NewRef(o));
    }
    r = which == 0 ? PyObject_CallOneArg(f, tup) : PyObject_Call(f, tup, NULL);
    Py_DECREF(tup);
    if (r == NULL) {
        PyErr_Clear();
        return sym_fail(t, "has_torch_function raised");
    }
    if (r != Py_False) {
        Py_DECREF(r);
        return sym_fail(t, "__torch_function__ override or mode active");
    }
    return sym_const(t, r, out);
}

/* Generic callables: builtins and math on constants, isinstance, len. */
static int call_builtin(trace *t, const var *fn, var *args, int nargs, PyObject *kwnames, var *out) {
    PyObject *f = fn->obj;
    const char *name = PyCFunction_Check(f) ? ((PyCFunctionObject *)f)->m_ml->ml_name : NULL;
    for (int i = 0; i < 2; i++)
        if (f == c_usage_log[i] && f != NULL) /* logging only */
            return sym_const(t, Py_NewRef(Py_None), out);
    for (int i = 0; i < 3; i++) {
        if (f == c_tracing_query[i] && f != NULL && nargs == 0 && !kwnames) {
            /* False/None/0 unless a torch.jit.trace or a dispatch mode is active */
            PyObject *r = PyObject_CallNoArgs(f);
            if (r == NULL) {
                PyErr_Clear();
                return sym_fail(t, "%s raised", name);
            }
            int quiet = PyObject_Not(r);
            if (quiet != 1) {
                PyErr_Clear();
                Py_DECREF(r);
                return sym_fail(t, "called under torch.jit.trace or a dispatch mode (%s)", name);
            }
            return sym_const(t, r, out);
        }
    }
    if (f == c_grad_query && f != NULL && nargs == 0 && !kwnames)
        return sym_const(t, PyBool_FromLong(tc_grad_enabled() && t->nograd == 0), out);
    if (f == c_autocast_query && f != NULL) {
        /* False unless autocast is on (the graph does not apply autocast: not captured) */
        PyObject *tup = PyTuple_New(nargs);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < nargs; i++) {
            if (args[i].kind != V_CONST || kwnames) {
                Py_DECREF(tup);
                return sym_fail(t, "is_autocast_enabled with non-constant arguments");
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        PyObject *r = PyObject_Call(f, tup, NULL);
        Py_DECREF(tup);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "is_autocast_enabled raised");
        }
        if (r != Py_False) {
            Py_DECREF(r);
            return sym_fail(t, "autocast is enabled (not captured)");
        }
        return sym_const(t, r, out);
    }
    for (int i = 0; i < 3; i++)
        if (f == c_tf_query[i] && f != NULL && tf_probe != NULL && !kwnames)
            return torch_function_query(t, f, i, args, nargs, out);
    if (f == (PyObject *)&PyDict_Type && (!kwnames || PyTuple_GET_SIZE(kwnames) == 0)) {
        /* dict() / dict(d): a new dict */
        if (nargs == 1 && args[0].kind == V_DICT)
            return sym_dict_method(t, &args[0], "copy", NULL, 0, out);
        if (nargs == 0) {
            PyObject *keys = PyTuple_New(0);
            var *vals = sym_alloc(t, 0);
            if (keys == NULL || vals == NULL || sym_keep(t, keys) == NULL)
                return -1;
            memset(out, 0, sizeof *out);
            out->kind = V_DICT;
            out->src = -1;
            out->obj = keys;
            out->items = vals;
            return 0;
        }
    }
    if (name && strcmp(name, "len") == 0 && nargs == 1 && !kwnames) {
        if (args[0].kind == V_TENSOR) {
            ic_meta m_copy = *metap(t, args[0].val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
            if (m->ndim == 0)
                return sym_fail(t, "len() of a 0-d tensor");
            return size_out(t, m, 0, out);
        }
        if (args[0].kind == V_SEQ || args[0].kind == V_DICT)
            return sym_const(t, PyLong_FromLong(args[0].n), out);
        if (args[0].kind == V_REC) {
            var *items;
            int n;
            if (sym_record_items(t, &args[0], &items, &n) < 0)
                return -1;
            return sym_const(t, PyLong_FromLong(n), out);
        }
        if (args[0].kind == V_OBJ && !PyModule_Check(args[0].obj)) {
            PyObject *name = PyUnicode_InternFromString("_modules");
            PyObject *mods = name ? dh_module_getattr(args[0].obj, name) : NULL;
            Py_XDECREF(name);
            int ok = mods && PyDict_Check(mods);
            Py_ssize_t k = ok ? PyDict_GET_SIZE(mods) : 0;
            Py_XDECREF(mods);
            if (ok)
                return sym_const(t, PyLong_FromSsize_t(k), out);
        }
    }
    if (name && strcmp(name, "id") == 0 && f == PyDict_GetItemString(PyEval_GetBuiltins(), "id") &&
        nargs == 1 && !kwnames && (args[0].kind == V_OBJ || args[0].kind == V_FUNC) &&
        args[0].obj != NULL && args[0].src >= 0) {
        /* id(obj) of an object read from the frame: that object, identity-guarded */
        if (sym_guard_id(t, args[0].src, args[0].obj) < 0)
            return -1;
        return sym_const(t, PyLong_FromVoidPtr(args[0].obj), out);
    }
    if (f == (PyObject *)&PyType_Type && nargs == 1 && !kwnames) {
        /* type(x) */
        PyObject *tp = NULL;
        if (args[0].kind == V_OBJ || args[0].kind == V_CONST || args[0].kind == V_FUNC)
            tp = (PyObject *)Py_TYPE(args[0].obj);
        else if (args[0].kind == V_DICT)
            tp = (PyObject *)&PyDict_Type;
        else if (args[0].kind == V_REC)
            tp = sym_record_class(&args[0]);
        else if (args[0].kind == V_SEQ && args[0].obj != NULL && PyType_Check(args[0].obj))
            tp = args[0].obj; /* a named tuple / a ModuleList slice */
        else if (args[0].kind == V_SEQ)
            tp = args[0].is_list ? (PyObject *)&PyList_Type : (PyObject *)&PyTuple_Type;
        else if (args[0].kind == V_TENSOR) {
            /* an input (its type guarded: Parameter or Tensor), or a graph value: Tensor */
            int s = args[0].src;
            if (s >= 0 && s < t->capsrc && t->srcobj[s] != NULL && t->srcdone[s] &&
                t->srcvar[s].oid == args[0].oid) {
                if (sym_guard_type(t, s, t->srcobj[s]) < 0)
                    return -1;
                tp = (PyObject *)Py_TYPE(t->srcobj[s]);
            } else if (s < 0) {
                tp = tensor_type;
            }
        }
        if (tp != NULL)
            return sym_const(t, Py_NewRef(tp), out);
    }
    var pair[2]; /* isinstance(x, C), isinstance(x, (C, D)): classes reached as globals are
                  * V_FUNCs; the class argument becomes a constant */
    if (name && strcmp(name, "isinstance") == 0 && nargs == 2 && !kwnames &&
        (args[1].kind == V_FUNC || args[1].kind == V_SEQ)) {
        int k = args[1].kind == V_SEQ ? args[1].n : 1;
        const var *cs = args[1].kind == V_SEQ ? args[1].items : &args[1];
        PyObject *tup = PyTuple_New(k);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < k; i++) {
            if ((cs[i].kind != V_FUNC && cs[i].kind != V_CONST) || cs[i].obj == NULL ||
                !PyType_Check(cs[i].obj)) {
                Py_DECREF(tup);
                return sym_fail(t, "isinstance with an unsupported class argument");
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(cs[i].obj));
        }
        pair[0] = args[0];
        if (sym_const(t, tup, &pair[1]) < 0)
            return -1;
        args = pair;
    }
    if (name && strcmp(name, "isinstance") == 0 && nargs == 2 && args[1].kind == V_CONST &&
        args[0].kind != V_TENSOR) {
        PyObject *probe = NULL;
        if (args[0].kind == V_OBJ || args[0].kind == V_FUNC)
            probe = Py_NewRef(args[0].obj);
        else if (args[0].kind == V_REC) { /* by its class: no instance yet */
            int r = PyObject_IsSubclass(sym_record_class(&args[0]), args[1].obj);
            if (r < 0) {
                PyErr_Clear();
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        } else if (args[0].kind == V_DICT)
            probe = PyDict_New();
        else if (args[0].kind == V_SEQ && args[0].obj != NULL && PyType_Check(args[0].obj)) {
            int r = PyObject_IsSubclass(args[0].obj, args[1].obj);
            if (r < 0) {
                PyErr_Clear();
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        } else if (args[0].kind == V_SEQ)
            probe = args[0].is_list ? PyList_New(0) : PyTuple_New(0);
        if (probe != NULL) {
            int r = PyObject_IsInstance(probe, args[1].obj);
            Py_DECREF(probe);
            if (r < 0) {
                PyErr_Clear();
                return sym_fail(t, "isinstance raised");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        }
    }
    if (name && strcmp(name, "isinstance") == 0 && nargs == 2 && args[1].kind == V_CONST) {
        if (args[0].kind == V_TENSOR) {
            PyObject *torch = PyImport_ImportModule("torch");
            if (torch == NULL)
                return -1;
            PyObject *tt = PyObject_GetAttrString(torch, "Tensor");
            Py_DECREF(torch);
            if (tt == NULL)
                return -1;
            int r = PyObject_IsSubclass(tt, args[1].obj);
            Py_DECREF(tt);
            if (r < 0) {
                PyErr_Clear();
                return sym_fail(t, "isinstance with an unsupported class argument");
            }
            return sym_const(t, PyBool_FromLong(r), out);
        }
    }
    if (name && (!strcmp(name, "getattr") || !strcmp(name, "hasattr")) && (nargs == 2 || nargs == 3) &&
        args[1].kind == V_CONST && PyUnicode_Check(args[1].obj) && !kwnames) {
        /* a lookup that fails is the answer here: what it logged is undone and its reason
         * dropped (a later failure must report its own) */
        sym_fx_mark mark = {0};
        if (sym_fx_save(t, &mark) < 0)
            return -1;
        int rc = sym_load_attr(t, &args[0], args[1].obj, out);
        if (rc < 0 && !PyErr_Occurred() && (!strcmp(name, "hasattr") || nargs == 3))
            sym_fx_rollback(t, &mark);
        sym_fx_drop(&mark);
        if (!strcmp(name, "hasattr")) {
            if (rc < 0 && PyErr_Occurred())
                return -1;
            if (rc < 0) {
                t->failed = 0;
                t->reason[0] = 0;
            }
            t->pending_exc = NULL;
            return sym_const(t, PyBool_FromLong(rc == 0), out);
        }
        if (rc < 0 && nargs == 3 && !PyErr_Occurred()) {
            t->failed = 0;
            t->reason[0] = 0;
            t->pending_exc = NULL;
            *out = args[2];
            return 0;
        }
        return rc;
    }
    if ((f == (PyObject *)&PyEnum_Type || f == (PyObject *)&PyZip_Type ||
         f == (PyObject *)&PyReversed_Type || f == (PyObject *)&PyList_Type ||
         (f == (PyObject *)&PyTuple_Type && nargs == 1 && args[0].kind != V_CONST)) &&
        !kwnames && nargs >= 1) {
        /* enumerate / zip / reversed / list over tracked sequences: unrolled */
        var *its[8];
        int lens[8], n = 1 << 30;
        if (nargs > 8 || (f != (PyObject *)&PyZip_Type && nargs != 1))
            return sym_fail(t, "unsupported iteration helper call");
        if (f == (PyObject *)&PyReversed_Type && args[0].kind == V_ITER)
            return sym_fail(t, "reversed() of an iterator (eager raises)");
        for (int i = 0; i < nargs; i++) {
            if (sym_iter_items(t, &args[i], &its[i], &lens[i]) < 0)
                return -1;
            if (lens[i] < n)
                n = lens[i];
        }
        var *items = sym_alloc(t, n);
        if (items == NULL)
            return -1;
        for (int j = 0; j < n; j++) {
            if (f == (PyObject *)&PyReversed_Type) {
                items[j] = its[0][n - 1 - j];
                continue;
            }
            if (f == (PyObject *)&PyList_Type || f == (PyObject *)&PyTuple_Type) {
                items[j] = its[0][j];
                continue;
            }
            int k = f == (PyObject *)&PyEnum_Type ? 2 : nargs;
            var *tup = sym_alloc(t, k);
            if (tup == NULL)
                return -1;
            if (f == (PyObject *)&PyEnum_Type) {
                if (sym_const(t, PyLong_FromLong(j), &tup[0]) < 0)
                    return -1;
                tup[1] = its[0][j];
            } else {
                for (int i = 0; i < nargs; i++)
                    tup[i] = its[i][j];
            }
            memset(&items[j], 0, sizeof items[j]);
            items[j].kind = V_SEQ;
            items[j].src = -1;
            items[j].n = k;
            items[j].items = tup;
        }
        /* enumerate/zip/reversed make iterators (returned as such, not as tuples) */
        memset(out, 0, sizeof *out);
        out->kind = f == (PyObject *)&PyList_Type || f == (PyObject *)&PyTuple_Type ? V_SEQ : V_ITER;
        out->src = -1;
        out->is_list = f == (PyObject *)&PyList_Type;
        out->n = n;
        out->items = items;
        return 0;
    }
    if ((f == (PyObject *)&PySet_Type || f == (PyObject *)&PyFrozenSet_Type) && !kwnames)
        return sym_make_set(t, f == (PyObject *)&PySet_Type, args, nargs, out);
    if (name && (!strcmp(name, "all") || !strcmp(name, "any") || !strcmp(name, "sum") ||
                 !strcmp(name, "min") || !strcmp(name, "max")) &&
        nargs >= 1 && nargs <= 2 && !kwnames && (args[0].kind == V_SEQ || args[0].kind == V_ITER)) {
        /* all(genexpr), sum(...) over constants: called on a tuple of them (tensors' truth
         * is data: not captured) */
        var *items;
        int n;
        if (sym_iter_items(t, &args[0], &items, &n) < 0)
            return -1;
        if (nargs == 2 && args[1].kind != V_CONST)
            return sym_fail(t, "%s() with a non-constant start", name);
        PyObject *tup = PyTuple_New(n), *r = NULL;
        if (tup == NULL)
            return -1;
        int anyt = 0;
        for (int i = 0; i < n; i++)
            anyt |= items[i].kind == V_TENSOR;
        if (anyt && !strcmp(name, "sum")) {
            /* sum(tensors): start + x0 + x1 + ..., left to right as eager */
            Py_DECREF(tup);
            var acc;
            if (nargs == 2)
                acc = args[1];
            else if (sym_const(t, PyLong_FromLong(0), &acc) < 0)
                return -1;
            for (int i = 0; i < n; i++) {
                var r;
                if (sym_binary(t, 0, &acc, &items[i], &r) < 0)
                    return -1;
                acc = r;
            }
            *out = acc;
            return 0;
        }
        for (int i = 0; i < n; i++) {
            if (items[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "%s() over non-constant values", name);
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(items[i].obj));
        }
        r = nargs == 2 ? PyObject_CallFunctionObjArgs(f, tup, args[1].obj, NULL)
                       : PyObject_CallOneArg(f, tup);
        Py_DECREF(tup);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "%s() raised (eager will raise)", name);
        }
        return sym_const(t, r, out);
    }
    /* pure functions of constants: math.*, abs, min, max, int, float, bool, round */
    int allconst = 1;
    for (int i = 0; i < nargs; i++)
        if (args[i].kind != V_CONST)
            allconst = 0;
    if (kwnames)
        allconst = 0;
    PyObject *mod = PyCFunction_Check(f) ? ((PyCFunctionObject *)f)->m_module : NULL;
    const char *modname = mod && PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    if (!modname && mod && PyModule_Check(mod))
        modname = PyModule_GetName(mod);
    if (modname == NULL)
        PyErr_Clear();
    int pure = (modname && strcmp(modname, "math") == 0) ||
               (name && (!strcmp(name, "abs") || !strcmp(name, "min") || !strcmp(name, "max") ||
                         !strcmp(name, "round") || !strcmp(name, "len") ||
                         !strcmp(name, "isinstance") || !strcmp(name, "divmod") ||
                         !strcmp(name, "sum") || !strcmp(name, "all") || !strcmp(name, "any"))) ||
               f == (PyObject *)&PyLong_Type || f == (PyObject *)&PyFloat_Type ||
               f == (PyObject *)&PyBool_Type || f == (PyObject *)&PyTuple_Type ||
               f == (PyObject *)&PyRange_Type || f == (PyObject *)&PySlice_Type;
    if (allconst && f == (PyObject *)&PyUnicode_Type && nargs == 1) {
        /* str() of a number, a string or a class (repr of the class unless its metaclass
         * has its own): str(model.__class__) keys a registry */
        PyObject *a = args[0].obj;
        pure = a == Py_None || PyBool_Check(a) || PyLong_CheckExact(a) || PyFloat_CheckExact(a) ||
               PyUnicode_CheckExact(a) || (PyType_Check(a) && Py_TYPE(a)->tp_repr == PyType_Type.tp_repr &&
                                            Py_TYPE(a)->tp_str == PyType_Type.tp_str);
    }
    if (allconst && pure) {
        PyObject *tup = PyTuple_New(nargs);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < nargs; i++)
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        PyObject *r = PyObject_Call(f, tup, NULL);
        Py_DECREF(tup);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "constant call raised");
        }
        return sym_const(t, r, out);
    }
    if (PyType_Check(f) && (!strcmp(((PyTypeObject *)f)->tp_name, "torch.finfo") ||
                            !strcmp(((PyTypeObject *)f)->tp_name, "torch.iinfo")) &&
        nargs <= 1 && !kwnames && (nargs == 0 || (args[0].kind == V_CONST && sym_dtype_from_object(args[0].obj) >= 0))) {
        /* torch.finfo(dtype) / torch.iinfo(dtype): facts of a dtype, a constant (its
         * attributes are read as constants); finfo() is of the default dtype, guarded */
        if (nargs == 0 && sym_default_dtype(t) < 0)
            return -1;
        PyObject *r = nargs ? PyObject_CallOneArg(f, args[0].obj) : PyObject_CallNoArgs(f);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "%s() raised (eager will raise)", ((PyTypeObject *)f)->tp_name);
        }
        return sym_const(t, r, out);
    }
    if (PyType_Check(f))
        return sym_fail(t, "call of type %s not supported", ((PyTypeObject *)f)->tp_name);
    return sym_fail(t, "call to %s not supported", name ? name : Py_TYPE(f)->tp_name);
}

static int is_inspect_signature(PyObject *f) {
    static PyObject *sig;
    if (sig == NULL) {
        PyObject *m = PyImport_ImportModule("inspect");
        sig = m ? PyObject_GetAttrString(m, "signature") : NULL; /* kept for the process */
        Py_XDECREF(m);
        if (sig == NULL) {
            PyErr_Clear();
            return 0;
        }
    }
    return f == sig;
}

int sym_call(trace *t, const var *fn_in, var *args, int nargs, PyObject *kwnames, var *out) {
    var fnv = *fn_in, *fn = &fnv;
    for (int i = 0; i < nargs; i++)
        sym_resolve(t, &args[i]);
    /* torch.compiler.is_compiling() & co answer False inside the capture (variables.c's
     * predicates), as in the code eager runs. True (torch.compile's answer) makes transformers
     * write CompileableContextVar.global_var, after which DynamicCache() is not hoisted: tiny
     * Llama/Qwen2/GPT-2 went from 1 graph to 18-20. dh_is_compiling_fn stays for that change. */
    if (fn->kind == V_METHOD && fn->items) {
        var *self = sym_alloc(t, 1);
        if (self == NULL)
            return -1;
        *self = fn->items[0];
        sym_resolve(t, self);
        fn->items = self;
    }
    int nkw = kwnames ? (int)PyTuple_GET_SIZE(kwnames) : 0;
    int npos = nargs - nkw;
    var *kwv = args + npos;
    if (fn->kind == V_CONST && PyCFunction_Check(fn->obj) && PyCFunction_GET_SELF(fn->obj) != NULL &&
        (PyUnicode_CheckExact(PyCFunction_GET_SELF(fn->obj)) || PyTuple_CheckExact(PyCFunction_GET_SELF(fn->obj)) ||
         PyAnySet_CheckExact(PyCFunction_GET_SELF(fn->obj)))) {
        /* "abc".startswith(...), (1, 2).index(...): pure on constants */
        PyObject *tup = PyTuple_New(npos), *kw = NULL;
        if (tup == NULL)
            return -1;
        for (int i = 0; i < nargs; i++) {
            if (args[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "method of a constant with non-constant arguments");
            }
            if (i < npos)
                PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        if (nkw) {
            kw = PyDict_New();
            for (int i = 0; kw && i < nkw; i++)
                if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[npos + i].obj) < 0)
                    Py_CLEAR(kw);
            if (kw == NULL) {
                Py_DECREF(tup);
                return -1;
            }
        }
        PyObject *r = PyObject_Call(fn->obj, tup, kw);
        Py_DECREF(tup);
        Py_XDECREF(kw);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "constant method raised (eager will raise)");
        }
        return sym_const(t, r, out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION && npos == 1 && nkw == 0 && is_inspect_signature(fn->obj) &&
        ((args[0].kind == V_FUNC && args[0].op == SYM_USER_FUNCTION) ||
         (args[0].kind == V_METHOD && PyFunction_Check(args[0].obj) && args[0].items[0].kind == V_OBJ))) {
        /* inspect.signature(f) of a guarded function or bound method: a constant */
        PyObject *target = args[0].kind == V_FUNC ? Py_NewRef(args[0].obj)
                                                  : PyMethod_New(args[0].obj, args[0].items[0].obj);
        PyObject *sig = target ? PyObject_CallOneArg(fn->obj, target) : NULL;
        Py_XDECREF(target);
        if (sig == NULL) {
            PyErr_Clear();
            return sym_fail(t, "inspect.signature raised");
        }
        return sym_const(t, sig, out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_PREDICATE) {
        int a = sym_predicate(fn->obj);
        if (a == 2 && (nargs || kwnames))
            return sym_fail(t, "%S with arguments", fn->obj);
        if (a == 2 && (a = sym_state_predicate(t, fn->obj)) < 0)
            return -1;
        return sym_const(t, PyBool_FromLong(a == 1), out);
    }
    if (fn->kind == V_FUNC && fn->op == SYM_CTX_EXIT) { /* __exit__(None, None, None) */
        if (--t->nograd == 0)
            ic_set_grad_enabled(t->g, 1); /* training: values of the block pass no gradient */
        return sym_const(t, Py_NewRef(Py_None), out);
    }
    if (fn->kind == V_FUNC && sym_is_grad_ctx_type(fn->obj)) {
        /* torch.no_grad() & co: a real context object (harmless to create), constant args */
        PyObject *tup = PyTuple_New(npos);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < npos; i++) {
            if (args[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "grad-mode context with non-constant arguments");
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        if (nkw) {
            Py_DECREF(tup);
            return sym_fail(t, "grad-mode context with keywords");
        }
        PyObject *ctx = PyObject_Call(fn->obj, tup, NULL);
        Py_DECREF(tup);
        if (ctx == NULL) {
            PyErr_Clear();
            return sym_fail(t, "grad-mode context raised");
        }
        /* set_grad_enabled(b) switches mode at construction: undo, the trace only needs the object */
        memset(out, 0, sizeof *out);
        out->kind = V_OBJ;
        out->src = -1;
        out->obj = sym_keep(t, ctx);
        return out->obj ? 0 : -1;
    }
    if (fn->kind == V_FUNC && fn->op == SYM_MADE_FUNCTION)
        return sym_inline_made(t, fn, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC && fn->op == SYM_USER_FUNCTION)
        return sym_inline(t, fn->obj, fn->src, NULL, args, nargs, kwnames, out);
    if (fn->kind == V_FUNC && fn->op >= 0)
        return call_op(t, fn->op, args, npos, kwnames, kwv, out);
    if (fn->kind == V_FUNC && fn->obj && sym_is_hoistable_type(fn->obj))
        return sym_hoist_new(t, fn->obj, args, npos, kwnames, out);
    if (fn->kind == V_FUNC && fn->obj && sym_is_record_type(fn->obj))
        return sym_make_record(t, fn->obj, args, npos, kwnames, out);
    if (fn->kind == V_FUNC)
        return call_builtin(t, fn, args, npos, kwnames, out);
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_OBJ && fn->obj &&
        PyUnicode_Check(fn->obj) && fn->items[0].obj == sym_os_environ()) {
        /* os.environ.get(k[, d]) of constants: asked now, the answer guarded */
        if (nkw || npos < 1 || npos > 2)
            return sym_fail(t, "os.environ.get with these arguments");
        PyObject *tup = PyTuple_New(npos), *m = PyObject_GetAttr(fn->items[0].obj, fn->obj);
        for (int i = 0; tup && i < npos; i++) {
            if (args[i].kind != V_CONST) {
                Py_CLEAR(tup);
                break;
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(args[i].obj));
        }
        int rc = tup && m ? sym_guarded_call(t, m, tup, out) : (PyErr_Clear(), sym_fail(t, "os.environ.get of non-constants"));
        Py_XDECREF(tup);
        Py_XDECREF(m);
        return rc;
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_OBJ && fn->obj &&
        PyUnicode_Check(fn->obj) && PyContextVar_CheckExact(fn->items[0].obj)) {
        if (nkw)
            return sym_fail(t, "ContextVar method with keyword arguments");
        return sym_ctxvar_call(t, fn->items[0].obj, PyUnicode_AsUTF8(fn->obj), args, npos, out);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_OBJ && fn->obj &&
        PyUnicode_Check(fn->obj) && PyDict_Check(fn->items[0].obj) && fn->items[0].src >= 0) {
        /* super().get(k[, default]) / __getitem__ / __contains__ of a dict subclass: its
         * storage read through a guarded source, absence guarded */
        const var *d = &fn->items[0];
        const char *mn = PyUnicode_AsUTF8(fn->obj);
        int isget = !strcmp(mn, "get");
        if (nkw || npos < 1 || npos > (isget ? 2 : 1) || args[0].kind != V_CONST ||
            !PyUnicode_CheckExact(args[0].obj))
            return sym_fail(t, "dict.%s with these arguments not supported", mn);
        int has = sym_guard_key(t, d->src, d->obj, args[0].obj);
        if (has < 0)
            return -1;
        if (!strcmp(mn, "__contains__"))
            return sym_const(t, PyBool_FromLong(has), out);
        if (!has) {
            if (!isget)
                return sym_fail(t, "KeyError %R (eager will raise)", args[0].obj);
            if (npos == 2) {
                *out = args[1];
                return 0;
            }
            return sym_const(t, Py_NewRef(Py_None), out);
        }
        PyObject *v = PyDict_GetItemWithError(d->obj, args[0].obj);
        if (v == NULL) {
            PyErr_Clear();
            return sym_fail(t, "dict lookup failed");
        }
        Py_INCREF(v);
        int s = sym_source(t, DH_S_ITEM, d->src, -1, args[0].obj);
        int rc = s < 0 ? -1 : sym_wrap(t, v, s, out);
        Py_DECREF(v);
        return rc;
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_SEQ && fn->items[0].is_list &&
        fn->items[0].obj == NULL && fn->obj && PyUnicode_Check(fn->obj) && !nkw) {
        /* list methods, mutating ones with identity (objects.c) */
        return sym_list_method(t, &fn->items[0], PyUnicode_AsUTF8(fn->obj), args, npos, out);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_SEQ && fn->obj &&
        PyUnicode_Check(fn->obj)) {
        /* seq.index(x) / seq.count(x) over constants: on a tuple of them */
        const var *sq = &fn->items[0];
        PyObject *tup = PyTuple_New(sq->n), *r = NULL;
        if (tup == NULL)
            return -1;
        for (int i = 0; i < sq->n; i++) {
            if (sq->items[i].kind != V_CONST) {
                Py_DECREF(tup);
                return sym_fail(t, "%U of a sequence of non-constants", fn->obj);
            }
            PyTuple_SET_ITEM(tup, i, Py_NewRef(sq->items[i].obj));
        }
        for (int i = 0; i < nargs; i++)
            if (args[i].kind != V_CONST || nkw) {
                Py_DECREF(tup);
                return sym_fail(t, "%U with non-constant arguments", fn->obj);
            }
        PyObject *m = PyObject_GetAttr(tup, fn->obj);
        if (m != NULL) {
            PyObject *a = PyTuple_New(npos);
            for (int i = 0; a && i < npos; i++)
                PyTuple_SET_ITEM(a, i, Py_NewRef(args[i].obj));
            r = a ? PyObject_Call(m, a, NULL) : NULL;
            Py_XDECREF(a);
            Py_DECREF(m);
        }
        Py_DECREF(tup);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "%U raised (eager will raise)", fn->obj);
        }
        return sym_const(t, r, out);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_REC && PyUnicode_Check(fn->obj)) {
        if (kwnames && PyTuple_GET_SIZE(kwnames))
            return sym_fail(t, "record method with keyword arguments");
        return sym_record_method(t, &fn->items[0], PyUnicode_AsUTF8(fn->obj), npos, out);
    }
    if (fn->kind == V_METHOD && fn->items && fn->items[0].kind == V_DICT) {
        /* d.items() / d.keys() / d.values() */
        const var *d = &fn->items[0];
        const char *mn = PyUnicode_AsUTF8(fn->obj);
        if (strcmp(mn, "items") && strcmp(mn, "keys") && strcmp(mn, "values")) {
            if (kwnames && PyTuple_GET_SIZE(kwnames))
                return sym_fail(t, "dict.%s with keyword arguments", mn);
            return sym_dict_method(t, d, mn, args, npos, out);
        }
        var *items = sym_alloc(t, d->n);
        if (items == NULL)
            return -1;
        for (int i = 0; i < d->n; i++) {
            if (!strcmp(mn, "values")) {
                items[i] = d->items[i];
                continue;
            }
            var key;
            if (sym_const(t, Py_NewRef(PyTuple_GET_ITEM(d->obj, i)), &key) < 0)
                return -1;
            if (!strcmp(mn, "keys")) {
                items[i] = key;
                continue;
            }
            var *pair = sym_alloc(t, 2);
            if (pair == NULL)
                return -1;
            pair[0] = key;
            pair[1] = d->items[i];
            memset(&items[i], 0, sizeof items[i]);
            items[i].kind = V_SEQ;
            items[i].src = -1;
            items[i].n = 2;
            items[i].items = pair;
        }
        memset(out, 0, sizeof *out);
        out->kind = V_SEQ;
        out->src = -1;
        out->n = d->n;
        out->items = items;
        return 0;
    }
    if (fn->kind == V_METHOD && PyFunction_Check(fn->obj))
        return sym_inline(t, fn->obj, fn->src, &fn->items[0], args, nargs, kwnames, out);
    if (fn->kind == V_METHOD) {
        var *self = &fn->items[0];
        if (self->kind == V_TENSOR) {
            int opi = sym_method_op(fn->obj);
            PyObject *base = NULL;
            if (opi < 0) {
                /* x.add_(y): the out-of-place op, then an in-place update of x */
                Py_ssize_t L = PyUnicode_GET_LENGTH(fn->obj);
                if (L > 1 && PyUnicode_READ_CHAR(fn->obj, L - 1) == '_' &&
                    PyUnicode_READ_CHAR(fn->obj, L - 2) != '_') {
                    base = PyUnicode_Substring(fn->obj, 0, L - 1);
                    if (base == NULL)
                        return -1;
                    opi = sym_method_op(base);
                    Py_DECREF(base);
                    if (opi >= 0 && OPS[opi].fn != h_binary && OPS[opi].fn != h_add_sub &&
                        OPS[opi].fn != h_div && OPS[opi].fn != h_unary && OPS[opi].fn != h_clamp &&
                        OPS[opi].fn != h_gelu)
                        opi = -1;
                    if (opi >= 0) {
                        if (inplace_overlap_check(t, self, args, npos) < 0)
                            return -1;
                        var *all = sym_alloc(t, npos + 1);
                        if (all == NULL)
                            return -1;
                        all[0] = *self;
                        for (int i = 0; i < npos; i++)
                            all[i + 1] = args[i];
                        var r;
                        if (call_op(t, opi, all, npos + 1, kwnames, kwv, &r) < 0)
                            return -1;
                        if (r.kind != V_TENSOR || sym_mutate(t, self, r.val) < 0)
                            return sym_fail(t, "Tensor.%U() not supported", fn->obj);
                        *out = *self;
                        sym_resolve(t, out);
                        return 0;
                    }
                }
                return sym_fail(t, "Tensor.%U() not supported", fn->obj);
            }
            var *all = sym_alloc(t, npos + 1);
            if (all == NULL)
                return -1;
            all[0] = *self;
            for (int i = 0; i < npos; i++)
                all[i + 1] = args[i];
            return call_op(t, opi, all, npos + 1, kwnames, kwv, out);
        }
        return sym_fail(t, "method %U of a non-tensor not supported", fn->obj);
    }
    if (fn->kind == V_OBJ && !PyModule_Check(fn->obj))
        return sym_inline_module(t, fn, args, nargs, kwnames, out);
    return sym_fail(t, "call of a non-callable value");
}

/* BINARY_OP on tensors or numbers. nb_op is the oparg of BINARY_OP (NB_*). */
int sym_binary(trace *t, int nb, const var *a_in, const var *b_in, var *out) {
    var av = *a_in, bv = *b_in, *a = &av, *b = &bv;
    sym_resolve(t, a);
    sym_resolve(t, b);
    int inplace = nb >= 13;
    int base = inplace ? nb - 13 : nb;
    if (dh_tl_autocast && (base == 4 || base == 8) && (a->kind != V_CONST || b->kind != V_CONST))
        return sym_fail(t, "autocast is enabled and %s casts under it (not captured)",
                        base == 4 ? "matmul" : "pow");
    if (a->kind == V_CONST && b->kind == V_CONST) {
        /* constant folding on plain Python values */
        static binaryfunc const *dummy;
        (void)dummy;
        PyObject *r = NULL;
        switch (base) {
        case 0: r = PyNumber_Add(a->obj, b->obj); break;
        case 1: r = PyNumber_And(a->obj, b->obj); break;
        case 2: r = PyNumber_FloorDivide(a->obj, b->obj); break;
        case 3: r = PyNumber_Lshift(a->obj, b->obj); break;
        case 5: r = PyNumber_Multiply(a->obj, b->obj); break;
        case 6: r = PyNumber_Remainder(a->obj, b->obj); break;
        case 7: r = PyNumber_Or(a->obj, b->obj); break;
        case 8: r = PyNumber_Power(a->obj, b->obj, Py_None); break;
        case 9: r = PyNumber_Rshift(a->obj, b->obj); break;
        case 10: r = PyNumber_Subtract(a->obj, b->obj); break;
        case 11: r = PyNumber_TrueDivide(a->obj, b->obj); break;
        case 12: r = PyNumber_Xor(a->obj, b->obj); break;
        default: return sym_fail(t, "binary op %d on constants", nb);
        }
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "constant arithmetic raised (eager will raise too)");
        }
        return sym_const(t, r, out);
    }
    if (a->kind == V_SYM || b->kind == V_SYM) {
        /* symbolic sizes: products and exact floor-division stay monomials */
        ic_dim x, y, r;
        if (!sym_dim_of(t, a, &x) || !sym_dim_of(t, b, &y))
            return sym_fail(t, "arithmetic on a dynamic size with a non-int (specializing)");
        memset(&r, 0, sizeof r);
        if (base == 5) {
            r.coef = x.coef * y.coef;
            for (int k = 0; k < IC_MAX_SYMS; k++)
                r.exp[k] = (uint8_t)(x.exp[k] + y.exp[k]);
        } else if (base == 2 && sym_dim_static(y) && y.coef > 0 && x.coef % y.coef == 0) {
            r = x;
            r.coef = x.coef / y.coef;
        } else if (base == 2) {
            int ok = y.coef != 0 && x.coef % y.coef == 0;
            for (int k = 0; k < IC_MAX_SYMS && ok; k++)
                ok = x.exp[k] >= y.exp[k];
            if (!ok)
                return sym_fail(t, "division of a dynamic size not exact (specializing)");
            r.coef = x.coef / y.coef;
            for (int k = 0; k < IC_MAX_SYMS; k++)
                r.exp[k] = (uint8_t)(x.exp[k] - y.exp[k]);
        } else {
            return sym_fail(t, "arithmetic %d on a dynamic size (specializing)", nb);
        }
        return sym_symint(t, r, out);
    }
    if (a->kind == V_SEQ && a->is_list && nb == 13) /* lst += iterable: extended in place */
        return sym_list_iadd(t, a, b, out);
    if (base == 0 && (a->kind == V_SEQ || (a->kind == V_CONST && PyTuple_CheckExact(a->obj))) &&
        (b->kind == V_SEQ || (b->kind == V_CONST && PyTuple_CheckExact(b->obj)))) {
        /* tuple + tuple, list + list: a new sequence */
        int la = a->kind == V_SEQ ? a->is_list : 0, lb = b->kind == V_SEQ ? b->is_list : 0;
        if (la != lb)
            return sym_fail(t, "can only concatenate a list to a list (eager will raise)");
        var *ia, *ib;
        int na, nb2;
        if (sym_iter_items(t, a, &ia, &na) < 0 || sym_iter_items(t, b, &ib, &nb2) < 0)
            return -1;
        var *m = sym_alloc(t, na + nb2);
        if (m == NULL)
            return -1;
        if (na > 0)
            memcpy(m, ia, (size_t)na * sizeof *m);
        if (nb2 > 0)
            memcpy(m + na, ib, (size_t)nb2 * sizeof *m);
        memset(out, 0, sizeof *out);
        out->kind = V_SEQ;
        out->src = -1;
        out->is_list = la;
        out->n = na + nb2;
        out->items = m;
        return 0;
    }
    if (base == 5 && ((a->kind == V_SEQ && b->kind == V_CONST && PyLong_CheckExact(b->obj)) ||
                      (b->kind == V_SEQ && a->kind == V_CONST && PyLong_CheckExact(a->obj)))) {
        /* [x] * n: a new sequence, the items repeated */
        const var *sq = a->kind == V_SEQ ? a : b;
        long k = PyLong_AsLong((a->kind == V_SEQ ? b : a)->obj);
        if (k < 0)
            k = 0;
        if (k > 4096 || (long)sq->n * k > 65536)
            return sym_fail(t, "sequence repetition too long");
        var *m = sym_alloc(t, (int)(sq->n * k));
        if (m == NULL)
            return -1;
        for (long r = 0; r < k; r++)
            if (sq->n > 0)
                memcpy(m + r * sq->n, sq->items, (size_t)sq->n * sizeof *m);
        *out = *sq;
        out->src = -1;
        out->obj = NULL;
        out->n = (int)(sq->n * k);
        out->items = m;
        return 0;
    }
    if (a->kind != V_TENSOR && b->kind != V_TENSOR)
        return sym_fail(t, "binary op on unsupported values");
    if (base == 10 && sub_bool_check(t, a, b) < 0)
        return -1;
    if (inplace && a->kind == V_TENSOR) {
        /* x += y: compute, then update x in place (x stays the same object) */
        var r;
        if (inplace_overlap_check(t, a, b, 1) < 0)
            return -1;
        if (sym_binary(t, base, a, b, &r) < 0)
            return -1;
        if (r.kind != V_TENSOR || sym_mutate(t, a, r.val) < 0)
            return -1;
        *out = *a;
        sym_resolve(t, out);
        return 0;
    }
    ic_op op;
    switch (base) {
    case 0: op = IC_OP_ADD; break;
    case 5: op = IC_OP_MUL; break;
    case 8: op = IC_OP_POW; break;
    case 10: op = IC_OP_SUB; break;
    case 11: op = IC_OP_DIV; break;
    case 1:
    case 7: {
        /* & and | on bool tensors are logical */
        ic_val x, y;
        if (as_tensor(t, a, &x) < 0 || as_tensor(t, b, &y) < 0)
            return -1;
        if (ic_value_meta(t->g, x)->dtype != IC_BOOL || ic_value_meta(t->g, y)->dtype != IC_BOOL)
            return tensor_out(t, ic_binary(t->g, base == 1 ? IC_OP_BITWISE_AND : IC_OP_BITWISE_OR, x, y), out);
        return tensor_out(t, ic_binary(t->g, base == 1 ? IC_OP_LOGICAL_AND : IC_OP_LOGICAL_OR, x, y), out);
    }
    case 2: op = IC_OP_FLOOR_DIVIDE; break;
    case 6: op = IC_OP_REMAINDER; break;
    case 12: op = IC_OP_BITWISE_XOR; break;
    case 4: {
        /* a @ b: an extern (ATen) node inside the graph */
        if (a->kind != V_TENSOR || b->kind != V_TENSOR)
            return sym_fail(t, "matmul (@) of a non-tensor");
        ic_val ab[2] = {a->val, b->val};
        return tensor_out(t, ic_extern(t->g, IC_EXT_MATMUL, 2, ab, 0, NULL, 1, 1), out);
    }
    default: return sym_fail(t, "binary op %d on tensors not supported yet", nb);
    }
    ic_val x, y;
    if (as_tensor(t, a, &x) < 0 || as_tensor(t, b, &y) < 0)
        return -1;
    if (int_div_check(t, op, x, y, b) < 0)
        return -1;
    return tensor_out(t, ic_binary(t->g, op, x, y), out);
}

int sym_neg(trace *t, const var *a_in, var *out) {
    var av = *a_in, *a = &av;
    sym_resolve(t, a);
    if (a->kind == V_CONST)
        return sym_const(t, PyNumber_Negative(a->obj), out) < 0
                   ? (PyErr_Clear(), sym_fail(t, "negation of a constant raised"))
                   : 0;
    if (a->kind != V_TENSOR)
        return sym_fail(t, "negation of an unsupported value");
    return tensor_out(t, ic_unary(t->g, IC_OP_NEG, a->val), out);
}

int sym_compare(trace *t, int cmp, const var *a_in, const var *b_in, var *out) {
    var av = *a_in, bv = *b_in, *a = &av, *b = &bv;
    sym_resolve(t, a);
    sym_resolve(t, b);
    if (a->kind == V_CONST && b->kind == V_CONST) {
        PyObject *r = PyObject_RichCompare(a->obj, b->obj, cmp);
        if (r == NULL) {
            PyErr_Clear();
            return sym_fail(t, "constant comparison raised");
        }
        return sym_const(t, r, out);
    }
    static const ic_op ops[6] = {IC_OP_LT, IC_OP_LE, IC_OP_EQ, IC_OP_NE, IC_OP_GT, IC_OP_GE};
    if (cmp < 0 || cmp > 5)
        return sym_fail(t, "bad comparison");
    ic_val x, y;
    if (a->kind != V_TENSOR && b->kind != V_TENSOR)
        return sym_fail(t, "comparison of unsupported values");
    if (as_tensor(t, a, &x) < 0 || as_tensor(t, b, &y) < 0)
        return -1;
    return tensor_out(t, ic_binary(t->g, ops[cmp], x, y), out);
}

/* x.shape, x.dtype, ... ; name NULL means shape (for size()). */
int sym_tensor_attr(trace *t, const var *x, PyObject *name, var *out) {
    ic_meta m_copy = *metap(t, x->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    const char *n = name ? PyUnicode_AsUTF8(name) : "shape";
    if (!strcmp(n, "shape") && m->dyn) {
        /* a tuple of (symbolic) ints */
        var *items = sym_alloc(t, m->ndim);
        if (items == NULL && m->ndim > 0)
            return -1;
        for (int i = 0; i < m->ndim; i++)
            if (size_out(t, m, i, &items[i]) < 0)
                return -1;
        memset(out, 0, sizeof *out);
        out->kind = V_SEQ;
        out->src = -1;
        out->n = m->ndim;
        out->items = items;
        return 0;
    }
    if (!strcmp(n, "shape")) {
        PyObject *tup = PyTuple_New(m->ndim);
        if (tup == NULL)
            return -1;
        for (int i = 0; i < m->ndim; i++)
            PyTuple_SET_ITEM(tup, i, PyLong_FromLongLong(m->sizes[i]));
        PyObject *torch = PyImport_ImportModule("torch");
        PyObject *size = torch ? PyObject_CallMethod(torch, "Size", "(O)", tup) : NULL;
        Py_XDECREF(torch);
        Py_DECREF(tup);
        return sym_const(t, size, out);
    }
    if (!strcmp(n, "ndim"))
        return sym_const(t, PyLong_FromLong(m->ndim), out);
    if (!strcmp(n, "dtype"))
        return sym_const(t, Py_NewRef(sym_dtype_object(m->dtype)), out);
    if (!strcmp(n, "is_cuda"))
        return sym_const(t, PyBool_FromLong(t->device_type == TC_DEV_CUDA), out);
    if (!strcmp(n, "is_cpu"))
        return sym_const(t, PyBool_FromLong(t->device_type != TC_DEV_CUDA), out);
    if (!strcmp(n, "is_nested") || !strcmp(n, "is_sparse") || !strcmp(n, "is_quantized") ||
        !strcmp(n, "is_meta") || !strcmp(n, "is_mkldnn")) /* such tensors are not captured */
        return sym_const(t, Py_NewRef(Py_False), out);
    if (!strcmp(n, "requires_grad")) {
        /* inputs: what their guard pinned; values computed in the graph never require grad
         * (inputs that require grad with grad mode on are not captured) */
        int rg = 0;
        if (x->src >= 0)
            for (int i = 0; i < t->nguards; i++)
                if (t->guards[i].kind == DH_G_TENSOR && t->guards[i].src == x->src &&
                    t->srcdone[x->src] && t->srcvar[x->src].oid == x->oid)
                    rg = t->guards[i].meta.requires_grad;
        if (!rg) /* training: a computed value requires grad as eager's would */
            rg = sym_value_requires_grad(t, x->val);
        return sym_const(t, PyBool_FromLong(rg), out);
    }
    if (!strcmp(n, "device")) /* every tensor of the graph is on its device */
        return sym_const(t, graph_device(t), out);
    if (!strcmp(n, "T") || !strcmp(n, "mT")) {
        int nd = m->ndim, perm[IC_MAX_DIMS];
        for (int i = 0; i < nd; i++)
            perm[i] = n[0] == 'T' ? nd - 1 - i : i;
        if (n[0] == 'm') {
            if (nd < 2)
                return sym_fail(t, "mT of a tensor with < 2 dims");
            perm[nd - 1] = nd - 2;
            perm[nd - 2] = nd - 1;
        }
        if (nd < 2) {
            *out = *x;
            out->src = -1;
            return 0;
        }
        return view_out_desc(t, x, ic_permute(t->g, x->val, perm), out, "permute",
                             Py_BuildValue("(N)", perm_tuple(perm, nd)));
    }
    int opi = sym_method_op(name);
    if (opi < 0 && name != NULL) {
        /* any other Tensor method: tracked as a bound method; calling it breaks the graph */
        PyObject *torch = PyImport_ImportModule("torch");
        PyObject *tt = torch ? PyObject_GetAttrString(torch, "Tensor") : NULL;
        Py_XDECREF(torch);
        PyObject *m = tt ? PyObject_GetAttr(tt, name) : NULL;
        Py_XDECREF(tt);
        int callable = m != NULL && PyCallable_Check(m) && !PyType_Check(m);
        Py_XDECREF(m);
        PyErr_Clear();
        if (callable)
            opi = NOPS; /* not in the table */
    }
    if (opi >= 0) {
        var *self = sym_alloc(t, 1);
        if (self == NULL)
            return -1;
        self[0] = *x;
        memset(out, 0, sizeof *out);
        out->kind = V_METHOD;
        out->src = -1;
        out->obj = name;
        out->items = self;
        return 0;
    }
    return sym_fail(t, "Tensor attribute '%s' not supported", n);
}
