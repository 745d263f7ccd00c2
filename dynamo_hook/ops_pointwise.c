/* ops_pointwise.c — pointwise torch ops (arithmetic, unary math, activations, where,
 * clamp, casts and .to, masked_fill, nan_to_num) and tensor factories (arange, zeros/ones/full,
 * torch.tensor).
 */
#include "ops_internal.h"

#include <limits.h>

/* ---- handlers ------------------------------------------------------------------- */

/* Integer %, // and fmod raise on a zero divisor in eager: a constant 0 is refused, a
 * divisor that is a graph input is checked for zeros before each run (eager runs then),
 * a computed integer divisor is not supported. */
int sym_int_div_check(trace *t, ic_op op, ic_val x, ic_val y, const var *bv) {
    if (op != IC_OP_FLOOR_DIVIDE && op != IC_OP_REMAINDER && op != IC_OP_FMOD)
        return 0;
    const ic_meta *mx = ic_value_meta(t->g, x), *my = ic_value_meta(t->g, y);
    if (mx == NULL || my == NULL || mx->dtype >= IC_F16 || my->dtype >= IC_F16)
        return 0;
    if (bv->kind == V_CONST) {
        int zero = PyObject_Not(bv->obj);
        if (zero < 0)
            (void)tc_clear_expected(PyExc_Exception);
        return zero ? sym_fail(t, "integer division by zero (eager raises ZeroDivisionError)") : 0;
    }
    if (bv->kind != V_TENSOR || ic_value_op(t->g, y) != IC_OP_INPUT)
        return sym_fail(t, "integer division by a computed tensor (a zero divisor can't be checked)");
    int k = 0;
    for (ic_val v = 0; v < y; v++)
        if (ic_value_op(t->g, v) == IC_OP_INPUT)
            k++;
    int s = t->input_src[k];
    return sym_idx_add(t, s, -1, 0); /* -1: no zero element */
}

/* floor_divide of float16/bfloat16 tensors by a tensor that is not 0-d, as ATen's kernel
 * computes it (vectorized bfloat16/half arithmetic): every step of its floor division
 * (fmod, (a - mod) / b, the sign fix, floor, the round-up past .5) rounded to the half type.
 * A scalar divisor (a number or 0-d tensor) takes ATen's float32 path: the plain op. */
static int half_tensor_divisor(trace *t, ic_val a, ic_val b, ic_dtype rt) {
    return (rt == IC_F16 || rt == IC_BF16) && sym_metap(t, b)->ndim > 0;
}

static ic_val half_floor_divide(trace *t, ic_val a, ic_val b, ic_dtype rt) {
    ic_graph *g = t->g;
    /* in float32, each step rounded to rt (R): the graph's half arithmetic keeps float32 */
#define K(x) ic_scalar(g, (x), IC_F64)
#define R(x) ic_cast(g, ic_cast(g, (x), rt), IC_F32)
    a = R(a);
    b = R(b);
    ic_val mod = R(ic_binary(g, IC_OP_FMOD, a, b));
    ic_val div = R(ic_binary(g, IC_OP_DIV, R(ic_binary(g, IC_OP_SUB, a, mod)), b));
    ic_val fix = ic_binary(g, IC_OP_LOGICAL_AND, ic_binary(g, IC_OP_NE, mod, K(0)),
                           ic_binary(g, IC_OP_NE, ic_binary(g, IC_OP_LT, b, K(0)), ic_binary(g, IC_OP_LT, mod, K(0))));
    div = ic_where(g, fix, R(ic_binary(g, IC_OP_SUB, div, K(1))), div);
    ic_val fl = ic_unary(g, IC_OP_FLOOR, div);
    fl = ic_where(g, ic_binary(g, IC_OP_GT, R(ic_binary(g, IC_OP_SUB, div, fl)), K(0.5)),
                  R(ic_binary(g, IC_OP_ADD, fl, K(1))), fl);
    ic_val q = R(ic_binary(g, IC_OP_DIV, a, b));
    ic_val neg = ic_binary(g, IC_OP_LOGICAL_OR, ic_binary(g, IC_OP_LT, q, K(0)),
                           ic_binary(g, IC_OP_LT, ic_unary(g, IC_OP_RECIPROCAL, q), K(0))); /* signbit of q */
    ic_val zs = ic_cast(g, ic_where(g, neg, K(-0.0), K(0.0)), IC_F32);               /* copysign(0, q) */
    ic_val r = ic_where(g, ic_binary(g, IC_OP_NE, div, K(0)), fl, zs);
    return ic_cast(g, ic_where(g, ic_binary(g, IC_OP_EQ, b, K(0)), q, r), rt);
#undef R
#undef K
}

/* a // b (floor_divide) with eager's rounding for half types */
ic_val sym_floor_divide(trace *t, ic_val a, ic_val b) {
    ic_val r = ic_binary(t->g, IC_OP_FLOOR_DIVIDE, a, b);
    if (r >= 0 && half_tensor_divisor(t, a, b, sym_metap(t, r)->dtype))
        r = half_floor_divide(t, a, b, sym_metap(t, r)->dtype);
    return r;
}

int sym_h_binary(trace *t, const opdef *d, var **p, var *out) {
    ic_val a, b;
    if (sym_as_tensor(t, p[0], &a) < 0 || sym_as_tensor(t, p[1], &b) < 0)
        return -1;
    if (p[0]->kind != V_TENSOR && p[1]->kind != V_TENSOR) {
        int rc = sym_numbers_op(t, d, p, 0, NULL, out); /* ops_models.c: torch.mul(2, 3) */
        return rc != 1 ? rc : sym_fail(t, "%s of two numbers", d->name);
    }
    var bv = *p[1];
    sym_resolve(t, &bv);
    if (sym_int_div_check(t, (ic_op)d->op, a, b, &bv) < 0)
        return -1;
    ic_val r = d->op == IC_OP_FLOOR_DIVIDE ? sym_floor_divide(t, a, b) : ic_binary(t->g, (ic_op)d->op, a, b);
    if (sym_tensor_out(t, r, out) < 0)
        return -1;
    if (d->op == IC_OP_POW) { /* a number is no operand of ATen's pow */
        var av = *p[0];
        sym_resolve(t, &av);
        dh_layout_scalar_args(t, &av, &bv, out);
    }
    return 0;
}

/* eager converts alpha to the result dtype with c10's overflow check (sub negates it first):
 * a signed integer out of range, an unsigned one beyond +-its max (a negative wraps), a finite
 * float beyond the float type's max (inf and nan pass) raise "value cannot be converted" */
static int alpha_overflows(ic_dtype rt, PyObject *alpha, int negate) {
    static const double fmax[] = {[IC_F16] = 65504.0, [IC_BF16] = 3.3895313892515355e38,
                                  [IC_F32] = 3.4028234663852886e38};
    if (PyBool_Check(alpha) || rt == IC_BOOL || rt == IC_F64)
        return 0;
    if (PyLong_Check(alpha) && rt < IC_F16) {
        int ovf = 0;
        long long a = PyLong_AsLongLongAndOverflow(alpha, &ovf);
        if (ovf || (a == -1 && PyErr_Occurred())) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
        if (negate) {
            if (a == LLONG_MIN)
                return rt != IC_I64 ? 1 : 0;
            a = -a;
        }
        int bits = rt == IC_I8 || rt == IC_U8 ? 8 : rt == IC_I16 ? 16 : rt == IC_I32 ? 32 : 64;
        if (rt == IC_U8) /* c10 lets a negative wrap down to -255 */
            return a > 255 || a < -255;
        if (bits == 64)
            return 0;
        long long hi = (1LL << (bits - 1)) - 1;
        return a > hi || a < -hi - 1;
    }
    if ((rt == IC_F16 || rt == IC_BF16 || rt == IC_F32) && (PyLong_Check(alpha) || PyFloat_Check(alpha))) {
        double a = PyFloat_AsDouble(alpha); /* an int: its double (OverflowError beyond) */
        if (a == -1.0 && PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_Exception);
            return 1;
        }
        return isfinite(a) && fabs(a) > fmax[rt];
    }
    return 0;
}

int sym_h_add_sub(trace *t, const opdef *d, var **p, var *out) {
    ic_val a, b;
    if (d->op == IC_OP_SUB && sym_sub_bool_check(t, p[0], p[1]) < 0)
        return -1;
    if (sym_as_tensor(t, p[0], &a) < 0 || sym_as_tensor(t, p[1], &b) < 0)
        return -1;
    if (!sym_is_none(p[2])) {
        if (!sym_is_number(p[2]))
            return sym_fail(t, "alpha must be a number");
        /* eager: the result dtype is a's and b's (alpha takes no part); b * alpha in it */
        ic_val r0 = ic_binary(t->g, (ic_op)d->op, a, b);
        if (r0 < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
        ic_dtype rt = sym_metap(t, r0)->dtype;
        if (rt < IC_F16 && p[2]->kind == V_CONST && PyFloat_Check(p[2]->obj))
            return sym_fail(t, "%s: a float alpha with integral tensors (eager will raise)", d->name);
        if (p[2]->kind == V_CONST && alpha_overflows(rt, p[2]->obj, d->op == IC_OP_SUB))
            return sym_fail(t, "%s: alpha out of the range of the result dtype (eager will raise)", d->name);
        if (rt == IC_BOOL) { /* alpha cast to bool */
            if (p[2]->kind != V_CONST)
                return sym_fail(t, "%s of bool tensors with a symbolic alpha", d->name);
            int on = PyObject_IsTrue(p[2]->obj);
            if (on < 0)
                return -1;
            b = ic_binary(t->g, IC_OP_LOGICAL_AND, b, ic_scalar(t->g, on, IC_BOOL));
        } else {
            ic_val al;
            if (sym_as_tensor(t, p[2], &al) < 0)
                return -1;
            if (sym_metap(t, b)->dtype != rt)
                b = ic_cast(t->g, b, rt);
            b = ic_binary(t->g, IC_OP_MUL, b, al);
        }
    }
    return sym_tensor_out(t, ic_binary(t->g, (ic_op)d->op, a, b), out);
}

/* div(a, b, rounding_mode=None|'floor'|'trunc'): 'floor' is floor_divide (eager's same
 * kernel); 'trunc' of integers is the exact quotient of a - fmod(a, b) (floor_divide of a
 * multiple of b), of floats trunc(a / b), with eager's rounding for half types: the quotient
 * rounded to the half type, but in float32 (unrounded) when b is a scalar (a number or a 0-d
 * tensor: ATen's CPU-scalar kernel) */
int sym_h_div(trace *t, const opdef *d, var **p, var *out) {
    if (p[0] && p[1] && p[0]->kind != V_TENSOR && p[1]->kind != V_TENSOR) {
        static const char *const kwn[1] = {"rounding_mode"}; /* ops_models.c: torch.div(7, 2) */
        int rc = sym_numbers_op(t, d, p, 1, kwn, out);
        if (rc != 1)
            return rc;
    }
    if (sym_is_none(p[2]))
        return sym_h_binary(t, d, p, out);
    if (p[2]->kind != V_CONST || !PyUnicode_Check(p[2]->obj))
        return sym_fail(t, "div: rounding_mode must be a string (eager will raise)");
    int floor = PyUnicode_CompareWithASCIIString(p[2]->obj, "floor") == 0;
    if (!floor && PyUnicode_CompareWithASCIIString(p[2]->obj, "trunc") != 0)
        return sym_fail(t, "div: rounding_mode %R (eager will raise)", p[2]->obj);
    ic_val a, b;
    if (sym_as_tensor(t, p[0], &a) < 0 || sym_as_tensor(t, p[1], &b) < 0)
        return -1;
    if (p[0]->kind != V_TENSOR && p[1]->kind != V_TENSOR)
        return sym_fail(t, "%s of two numbers", d->name);
    ic_val probe = ic_binary(t->g, IC_OP_FLOOR_DIVIDE, a, b); /* the result dtype */
    if (probe < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    ic_dtype rt = sym_metap(t, probe)->dtype;
    if (rt == IC_BOOL)
        return sym_fail(t, "div with rounding_mode of bool tensors left to eager");
    var bv = *p[1];
    sym_resolve(t, &bv);
    if (sym_int_div_check(t, IC_OP_FLOOR_DIVIDE, a, b, &bv) < 0)
        return -1;
    ic_val r;
    if (floor) {
        r = half_tensor_divisor(t, a, b, rt) ? half_floor_divide(t, a, b, rt) : probe;
    } else if (rt < IC_F16) {
        ic_val m = ic_binary(t->g, IC_OP_FMOD, a, b);
        r = ic_binary(t->g, IC_OP_FLOOR_DIVIDE, ic_binary(t->g, IC_OP_SUB, a, m), b);
    } else if ((rt == IC_F16 || rt == IC_BF16) && !half_tensor_divisor(t, a, b, rt)) {
        ic_val q = ic_binary(t->g, IC_OP_DIV, ic_cast(t->g, a, IC_F32), ic_cast(t->g, b, IC_F32));
        r = ic_cast(t->g, ic_unary(t->g, IC_OP_TRUNC, q), rt);
    } else if (sym_value_requires_grad(t, a) || sym_value_requires_grad(t, b)) {
        /* eager's gradient of a rounded division is zeros; trunc's (0) times the division's
         * (1 / b, -a / b^2) is NaN where b is 0 or a is infinite. The quotient of the
         * detached operands, and each operand joined by a where whose condition always
         * holds (not isnan(q) or isnan(q)): a zero gradient */
        ic_val q = ic_unary(t->g, IC_OP_TRUNC, ic_binary(t->g, IC_OP_DIV, ic_detach(t->g, a), ic_detach(t->g, b)));
        ic_val nan = ic_unary(t->g, IC_OP_ISNAN, q);
        ic_val all = ic_binary(t->g, IC_OP_LOGICAL_OR, ic_unary(t->g, IC_OP_LOGICAL_NOT, nan), nan);
        r = ic_where(t->g, all, ic_where(t->g, all, q, ic_cast(t->g, a, rt)), ic_cast(t->g, b, rt));
    } else {
        r = ic_unary(t->g, IC_OP_TRUNC, ic_binary(t->g, IC_OP_DIV, a, b));
    }
    return sym_tensor_out(t, r, out);
}

int sym_h_unary(trace *t, const opdef *d, var **p, var *out) {
    int inplace = 0;
    if (p[1] && sym_get_bool(t, p[1], 0, &inplace, "inplace") < 0)
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
    return sym_tensor_out(t, r, out);
}

int sym_h_square(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "square of a non-tensor");
    ic_val x = p[0]->val;
    if (sym_metap(t, x)->dtype == IC_BOOL) /* eager: pow(bool, 2) is int64 (bool * bool stays bool) */
        x = ic_cast(t->g, x, IC_I64);
    return sym_tensor_out(t, ic_binary(t->g, IC_OP_MUL, x, x), out);
}

int sym_h_gelu(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "gelu of a non-tensor");
    ic_op op = IC_OP_GELU;
    if (!sym_is_none(p[1])) {
        const char *s;
        if (sym_get_str(t, p[1], NULL, &s, "gelu approximate") < 0)
            return -1;
        if (strcmp(s, "tanh") == 0)
            op = IC_OP_GELU_TANH;
        else if (strcmp(s, "none") != 0)
            return sym_fail(t, "gelu approximate=%s", s);
    }
    return sym_tensor_out(t, ic_unary(t->g, op, p[0]->val), out);
}

int sym_h_where(trace *t, const opdef *d, var **p, var *out) {
    ic_val c, a, b;
    if (d->op == 1) { /* Tensor.where(condition, other): self is the input */
        if (p[1] == NULL || p[2] == NULL)
            return sym_fail(t, "Tensor.where needs condition and other (eager will raise)");
        var *q[3] = {p[1], p[0], p[2]};
        return sym_h_where(t, &(const opdef){d->name, d->where, d->sig, d->fn, 0}, q, out);
    }
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "where condition must be a tensor");
    if (p[1] == NULL || p[2] == NULL)
        return sym_fail(t, "where(condition) (nonzero) not supported");
    if (sym_as_tensor(t, p[0], &c) < 0 || sym_as_tensor(t, p[1], &a) < 0 || sym_as_tensor(t, p[2], &b) < 0)
        return -1;
    ic_val r = ic_where(t->g, c, a, b);
    int rdt = r >= 0 ? (int)sym_metap(t, r)->dtype : -1;
    /* a number operand converted to the result dtype (eager's where checks all but half) */
    if (rdt != IC_F16 && rdt != IC_BF16 &&
        (sym_check_scalar_fits(t, p[1], rdt, "where") < 0 || sym_check_scalar_fits(t, p[2], rdt, "where") < 0))
        return -1;
    return sym_tensor_out(t, r, out);
}

/* Gradients at the bounds of clamp-like ops, as eager's backward formulas give them: a
 * composition of maximum/minimum splits the gradient where x equals a bound (maximum's
 * rule) and passes it through NaN. Under grad: where(pass, x, v(detach(x))), v the value
 * and pass where eager's gradient reaches x; the value is v everywhere (x == v where pass
 * holds). clamp: lo <= x <= hi (a NaN x gets none); hardtanh / relu6 (open): not (x <= lo or
 * x >= hi) (a NaN x gets it). Bounds that are tensors keep their own gradient through v. */
static ic_val bounded_grad(trace *t, ic_val x, ic_val v_of_detached, ic_val lo, ic_val hi, int open) {
    ic_val pass = IC_NONE;
    if (open) {
        ic_val out = IC_NONE;
        if (lo != IC_NONE)
            out = ic_binary(G, IC_OP_LE, x, lo);
        if (hi != IC_NONE) {
            ic_val o2 = ic_binary(G, IC_OP_GE, x, hi);
            out = out == IC_NONE ? o2 : ic_binary(G, IC_OP_LOGICAL_OR, out, o2);
        }
        pass = ic_unary(G, IC_OP_LOGICAL_NOT, out);
    } else {
        if (lo != IC_NONE)
            pass = ic_binary(G, IC_OP_GE, x, lo);
        if (hi != IC_NONE) {
            ic_val p2 = ic_binary(G, IC_OP_LE, x, hi);
            pass = pass == IC_NONE ? p2 : ic_binary(G, IC_OP_LOGICAL_AND, pass, p2);
        }
    }
    return ic_where(G, pass, x, v_of_detached);
}

int sym_h_clamp(trace *t, const opdef *d, var **p, var *out) {
    ic_val x = p[0]->val, lo = IC_NONE, hi = IC_NONE;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "clamp of a non-tensor");
    var *mn = p[1], *mx = p[2];
    if (d->op == 1) { /* clamp_max */
        mx = p[1];
        mn = NULL;
    } else if (d->op == 2) { /* clamp_min */
        mx = NULL;
    }
    if (sym_is_none(mn) && sym_is_none(mx))
        return sym_fail(t, "clamp needs min or max");
    if (!sym_is_none(mn)) {
        if (sym_as_tensor(t, mn, &lo) < 0)
            return -1;
        x = ic_binary(t->g, IC_OP_MAXIMUM, x, lo);
    }
    if (!sym_is_none(mx)) {
        if (sym_as_tensor(t, mx, &hi) < 0)
            return -1;
        x = ic_binary(t->g, IC_OP_MINIMUM, x, hi);
    }
    int rdt = x >= 0 ? (int)sym_metap(t, x)->dtype : -1; /* the bounds convert to it */
    if (rdt == IC_BOOL) { /* ATen's clamp kernels have no bool version: a bool result with a
                           * number bound or with both bounds raises; one tensor bound runs as
                           * maximum/minimum */
        int nb = 0, tens = 1;
        for (int i = 0; i < 2; i++) {
            var *v = i ? mx : mn, bd;
            if (sym_is_none(v))
                continue;
            bd = *v;
            sym_resolve(t, &bd);
            nb++;
            tens &= bd.kind == V_TENSOR;
        }
        if (nb == 2 || !tens)
            return sym_fail(t, "%s of a bool result left to eager (its kernel has no bool version: raises)", d->name);
    }
    if (sym_check_scalar_fits(t, mn, rdt, d->name) < 0 || sym_check_scalar_fits(t, mx, rdt, d->name) < 0)
        return -1;
    if (x >= 0 && rdt >= IC_F16 && !ic_dtype_is_complex((ic_dtype)rdt) &&
        (sym_value_requires_grad(t, p[0]->val) || (lo != IC_NONE && sym_value_requires_grad(t, lo)) ||
         (hi != IC_NONE && sym_value_requires_grad(t, hi)))) {
        ic_val v = ic_detach(G, p[0]->val);
        if (lo != IC_NONE)
            v = ic_binary(G, IC_OP_MAXIMUM, v, lo);
        if (hi != IC_NONE)
            v = ic_binary(G, IC_OP_MINIMUM, v, hi);
        x = bounded_grad(t, p[0]->val, v, lo, hi, 0);
        if ((lo != IC_NONE && sym_value_requires_grad(t, lo)) || (hi != IC_NONE && sym_value_requires_grad(t, hi))) {
            /* bounds' gradients (clamp_backward_min_max): none at a NaN x (maximum's rule
             * gives one), none below lo when lo == hi (the ties of minimum share one) */
            ic_val dead = ic_unary(G, IC_OP_ISNAN, p[0]->val);
            if (lo != IC_NONE && hi != IC_NONE)
                dead = ic_binary(G, IC_OP_LOGICAL_OR, dead,
                                 ic_binary(G, IC_OP_LOGICAL_AND, ic_binary(G, IC_OP_LT, p[0]->val, lo),
                                           ic_binary(G, IC_OP_EQ, lo, hi)));
            x = ic_where(G, dead, ic_detach(G, v), x);
        }
        if (x < 0)
            return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    }
    if (sym_tensor_out(t, x, out) < 0)
        return -1;
    int scalars = 1; /* clamp(Tensor, Scalar?, Scalar?): one operand in ATen */
    var bound;
    for (int i = 0; i < 2; i++) {
        var *v = i ? mx : mn;
        if (sym_is_none(v))
            continue;
        bound = *v;
        sym_resolve(t, &bound);
        scalars &= bound.kind != V_TENSOR;
    }
    if (scalars)
        dh_layout_scalar_args(t, p[0], NULL, out);
    return 0;
}

int sym_h_cast(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "cast of a non-tensor");
    if (ic_value_meta(t->g, p[0]->val)->dtype == (ic_dtype)d->op)
        return sym_same_tensor(t, p, out);
    return sym_tensor_out(t, ic_cast(t->g, p[0]->val, (ic_dtype)d->op), out);
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
        (void)tc_clear_expected(PyExc_Exception);
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
        ic_graph_set_cuda(t->g, type == TC_DEV_CUDA);
        return 0;
    }
    if (t->device_type != type || (index >= 0 && t->device_index != index))
        return sym_fail(t, "%s on another device than the graph's (eager decides)", what);
    if (type == TC_DEV_CUDA && index < 0 && t->device_index != 0)
        return sym_fail(t, "%s on the current CUDA device (index unknown) not supported yet", what);
    return 0;
}

/* a factory's device (a tensor made from numbers): in a CUDA graph one made on the CPU (torch.zeros(n)
 * with no device) is a value of the graph tagged with eager's device, the CPU (fold.c sym_home: the
 * ops reading it follow eager's device rules); called by call_op (t->fac_ok): the value it makes
 * is tagged there */
static int factory_device(trace *t, int type, int index, const char *what) {
    if (t->fac_ok && t->device_type == TC_DEV_CUDA && type == TC_DEV_CPU) {
        t->fac_home = HOME_CPU;
        return 0;
    }
    if (same_device(t, type, index, what) < 0)
        return -1;
    if (t->fac_ok)
        t->fac_home = sym_home_of(t->device_type, t->device_index);
    return 0;
}

int sym_device_arg(const var *v, int *type, int *index) { return device_arg(v, type, index); }
int sym_same_device(trace *t, int type, int index, const char *what) { return same_device(t, type, index, what); }

PyObject *sym_graph_device(trace *t) {
    PyObject *torch = PyImport_ImportModule("torch");
    PyObject *dev = NULL;
    if (torch != NULL)
        dev = t->device_type == TC_DEV_CUDA
                  ? PyObject_CallMethod(torch, "device", "si", "cuda", t->device_index > 0 ? t->device_index : 0)
                  : PyObject_CallMethod(torch, "device", "s", "cpu");
    Py_XDECREF(torch);
    return dev;
}

int sym_h_to(trace *t, const opdef *d, var **p, var *out) {
    /* x.to(dtype) / x.to(device) / x.to(device, dtype) / x.to(dtype=...) */
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "to() of a non-tensor");
    ic_val x = p[0]->val;
    int fmt = IC_MF_PRESERVE;
    if (dh_memory_format(t, p[7], &fmt) < 0)
        return -1;
    int copy = 0;
    if (!sym_is_none(p[5]) && (p[5]->kind != V_CONST || (copy = PyObject_IsTrue(p[5]->obj)) < 0)) {
        (void)tc_clear_expected(PyExc_Exception);
        return sym_fail(t, "to(copy=...) not a constant");
    }
    if (!sym_is_none(p[2])) { /* to(device, dtype) only: to(dtype, dtype) is eager's TypeError */
        int dty, dix;
        if (!device_arg(p[1], &dty, &dix) || p[2]->kind != V_CONST || sym_dtype_arg(p[2]->obj) < 0)
            return sym_fail(t, "to(): a second positional argument other than a dtype after a device (eager decides)");
    }
    /* x on another device than the graph's (a CPU tensor of a CUDA graph, fold.c sym_home) */
    int xhome = sym_home_off(t, x) ? sym_home(t, x) : 0, moved = 0;
    for (int i = 1; i <= 2 || i == 6; i = i == 2 ? 6 : i + 1) {
        if (sym_is_none(p[i]))
            continue;
        int dt = p[i]->kind == V_CONST || p[i]->kind == V_FUNC ? sym_dtype_arg(p[i]->obj) : -1;
        if (i == 1 && p[i]->kind == V_TENSOR) { /* x.to(other): other's dtype and device */
            dt = sym_metap(t, p[i]->val)->dtype;
            int oh = sym_home_off(t, p[i]->val) ? sym_home(t, p[i]->val) : 0;
            if (oh != xhome && oh)
                return sym_fail(t, "to(other) of a tensor on another device than the graph's not supported yet");
            moved |= xhome && !oh;
        }
        if (dt >= 0) {
            x = ic_cast(t->g, x, (ic_dtype)dt);
            continue;
        }
        int dtype_, dindex;
        if (device_arg(p[i], &dtype_, &dindex)) {
            /* to the graph's own device: no copy (eager returns self); elsewhere: a break. x on
             * another device: to its own, itself; to the graph's, a copy there */
            if (xhome && sym_home_of(dtype_, dindex < 0 && dtype_ == TC_DEV_CUDA ? t->device_index : dindex) == xhome)
                continue;
            if (same_device(t, dtype_, dindex, "to(device)") < 0)
                return -1;
            moved |= xhome != 0;
            continue;
        }
        return sym_fail(t, "unsupported to() argument");
    }
    if (!sym_is_none(p[3])) {
        int dt;
        if (sym_get_dtype(t, p[3], &dt) < 0)
            return -1;
        x = ic_cast(t->g, x, (ic_dtype)dt);
    }
    if (moved) { /* a new tensor on the graph's device, eager's strides kept */
        if (x == p[0]->val)
            x = ic_cast(t->g, x, ic_value_meta(t->g, x)->dtype);
        if (x < 0 || sym_home_set(t, x, sym_home_of(t->device_type, t->device_index)) < 0)
            return x < 0 ? sym_check_graph(t) : -1;
        if (fmt != IC_MF_PRESERVE && ic_value_set_format(t->g, x, p[0]->val, fmt) < 0)
            return sym_fail(t, "to(memory_format=...): the format does not fit the rank (eager raises)");
        return sym_tensor_out(t, x, out);
    }
    if (copy && x == p[0]->val) { /* copy=True: a new tensor even without a conversion */
        x = ic_cast(t->g, x, ic_value_meta(t->g, x)->dtype);
    } else if (x == p[0]->val || ic_value_meta(t->g, x)->dtype == ic_value_meta(t->g, p[0]->val)->dtype) {
        if (fmt == IC_MF_PRESERVE || ic_value_suggest_format(t->g, p[0]->val) == fmt)
            return sym_same_tensor(t, p, out); /* no conversion: eager returns self */
        return dh_layout_copy(t, p[0]->val, fmt, out);
    }
    if (x >= 0 && fmt != IC_MF_PRESERVE && ic_value_set_format(t->g, x, p[0]->val, fmt) < 0)
        return sym_fail(t, "to(memory_format=...): the format does not fit the rank (eager raises)");
    return sym_tensor_out(t, x, out);
}

/* x.cpu(): on a CPU graph the tensor itself (eager returns self, no copy); from a CUDA graph
 * a device transfer, left to eager. memory_format only applies to a copy: none here. */
int sym_h_cpu(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "cpu() of a non-tensor");
    if (!sym_is_none(p[1]))
        return sym_fail(t, "cpu(memory_format=...) not supported");
    if (!(sym_home_off(t, p[0]->val) && sym_home(t, p[0]->val) == HOME_CPU) && /* (a CPU tensor of a CUDA graph) */
        same_device(t, TC_DEV_CPU, -1, "cpu()") < 0)
        return -1;
    return sym_same_tensor(t, p, out);
}

/* dropout(input, p, training, inplace): identity unless training */
int sym_h_dropout(trace *t, const opdef *d, var **p, var *out) {
    int training = 1, inplace = 0;
    if (sym_get_bool(t, p[2], 1, &training, "training") < 0 || sym_get_bool(t, p[3], 0, &inplace, "inplace") < 0)
        return -1;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "dropout of a non-tensor");
    if (!sym_is_none(p[1]) && sym_is_number(p[1]) && PyFloat_AsDouble(p[1]->obj) == 0.0)
        training = 0;
    const ic_meta *xm = sym_metap(t, p[0]->val);
    for (int i = 0; i < xm->ndim && !xm->dyn; i++)
        if (xm->sizes[i] == 0) /* eager returns the input itself (no draws) */
            training = 0;
    if (training) { /* x * mask, the mask drawn by ATen when the graph runs (training: saved) */
        double pr = sym_is_none(p[1]) ? 0.5 : PyFloat_AsDouble(p[1]->obj);
        if (sym_is_none(p[1]) || !sym_is_number(p[1]) || PyErr_Occurred() || !(pr >= 0 && pr <= 1)) {
            (void)tc_clear_expected(PyExc_OverflowError, PyExc_TypeError);
            return sym_fail(t, "dropout in training mode with a non-constant p not supported yet");
        }
        /* dropout_ of a value eager keeps for backward: the graph ends before it, before
         * its mask is drawn (a draw before a break at a call would run twice) */
        if (inplace && p[0]->oid > 0 && sym_train_inplace_check(t, p[0]->oid) < 0)
            return -1;
        ic_val mask = sym_dropout_mask(t, p[0]->val, pr);
        ic_val y = ic_binary(t->g, IC_OP_MUL, p[0]->val, mask);
        if (inplace) { /* dropout_: input.mul_(mask), the input itself returned */
            if (sym_mutate(t, p[0], y) < 0)
                return -1;
            *out = *p[0];
            sym_resolve(t, out);
            return 0;
        }
        return sym_tensor_out(t, y, out);
    }
    (void)inplace; /* eval-mode dropout is the identity, in place or not */
    *out = *p[0];
    out->src = -1;
    return 0;
}

/* zero_() / fill_(v) / copy_(src): the new value broadcast to self's shape */
int sym_h_fill(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    ic_val v;
    if (d->op == 0)
        v = ic_scalar(t->g, 0.0, IC_I64);
    else if (p[1] == NULL)
        return sym_fail(t, "%s needs a value", d->name);
    else if (d->op == 2 && p[1]->kind != V_TENSOR)
        return sym_fail(t, "copy_ from a non-tensor");
    else if (d->op == 1 && p[1]->kind == V_TENSOR && sym_metap(t, p[1]->val)->ndim > 0)
        return sym_fail(t, "fill_ only supports 0-dimension value tensor (eager raises)");
    else if (sym_inplace_overlap_check(t, p[0], p[1], 1) < 0) /* a view of self: eager decides */
        return -1;
    else if (sym_check_scalar_fits(t, p[1], m->dtype, d->name) < 0)
        return -1;
    else if (sym_as_tensor(t, p[1], &v) < 0)
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

/* arange(end) / arange(start, end, step=1, *, dtype=None) */
int sym_h_arange(trace *t, const opdef *d, var **p, var *out) {
    var *a = p[0], *b = p[1], *c = p[2];
    double start = 0, end, step = 1;
    int anyfloat = 0;
    var *vals[3] = {a, b, c};
    double num[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++)
        if (vals[i] && !sym_is_none(vals[i])) {
            long long k;
            if (sym_const_int_tensor(t, vals[i], &k)) { /* a 0-d int tensor the graph knows: eager takes its item() */
                num[i] = (double)k;
                continue;
            }
            if (!sym_is_number(vals[i]))
                return sym_fail(t, vals[i]->kind == V_TENSOR ? "arange bound from a tensor's value (data-dependent)"
                                                             : "arange bounds must be numbers");
            if (PyFloat_Check(vals[i]->obj))
                anyfloat = 1;
            num[i] = PyFloat_AsDouble(vals[i]->obj);
        }
    if (sym_is_none(b)) {
        end = num[0];
    } else {
        start = num[0];
        end = num[1];
        if (!sym_is_none(c))
            step = num[2];
    }
    if (step == 0)
        return sym_fail(t, "arange step 0 (eager will raise)");
    if (!anyfloat && (fabs(start) > 9007199254740992.0 || fabs(end) > 9007199254740992.0 ||
                      fabs(step) > 9007199254740992.0))
        return sym_fail(t, "arange: integer bounds beyond 2**53 left to eager (not exact as doubles)");
    int dt = -1;
    if (p[3] && sym_get_dtype(t, p[3], &dt) < 0)
        return -1;
    if (dt < 0 && anyfloat && (dt = sym_default_dtype(t)) < 0) /* float bounds: the default dtype */
        return -1;
    if (dt < 0)
        dt = IC_I64;
    double nn = ceil((end - start) / step);
    int64_t n = nn > 0 ? (int64_t)nn : 0;
    if (!sym_is_none(p[5]))
        return sym_fail(t, "arange with a layout argument not supported yet");
    for (int i = 6; i < 9; i++) /* out, requires_grad, pin_memory: eager's */
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "arange: out/requires_grad/pin_memory arguments not supported yet");
    {
        int dty = TC_DEV_CPU, dix = 0;
        if (!sym_is_none(p[4]) && !device_arg(p[4], &dty, &dix))
            return sym_fail(t, "arange: unsupported device argument");
        if (factory_device(t, dty, dix, "arange") < 0)
            return -1;
    }
    return sym_tensor_out(t, ic_arange(t->g, n, start, step, (ic_dtype)dt), out);
}

/* linspace(start, end, steps, *, dtype, device) of numbers into a floating dtype: eager's
 * kernel, start + step * i for the first half and end - step * (steps - 1 - i) for the rest
 * (step in the output dtype where that is float); eager's vectorized CPU loop fuses the
 * multiply-add, so float32 values may differ from it by 1 ulp (0.1..0.7 in 1000 steps: 124
 * of 1000 values, 6e-8). A 0-d tensor start or end (eager takes its item(): no gradient)
 * enters as its value cast to the output dtype, the step computed from them in it. */
int sym_h_linspace(trace *t, const opdef *d, var **p, var *out) {
    int tens = 0;
    for (int i = 0; i < 2; i++) {
        if (p[i] != NULL && p[i]->kind == V_TENSOR) {
            const ic_meta *tm = sym_metap(t, p[i]->val);
            if (tm->ndim != 0)
                return sym_fail(t, "linspace only supports 0-dimensional start and end tensors (eager will raise)");
            tens = 1;
            continue;
        }
        if (p[i] == NULL || !sym_is_number(p[i]) || PyComplex_Check(p[i]->obj))
            return sym_fail(t, "linspace: start and end must be real numbers or 0-d tensors");
    }
    if (p[2] == NULL || p[2]->kind != V_CONST || !PyLong_Check(p[2]->obj) || PyBool_Check(p[2]->obj))
        return sym_fail(t, "linspace: steps must be a constant int");
    long long steps;
    if (sym_get_int(t, p[2], &steps, "linspace: steps") < 0)
        return -1;
    if (steps < 0 || steps > (1LL << 40))
        return sym_fail(t, "linspace: steps out of range (eager will raise)");
    double start = p[0]->kind == V_TENSOR ? 0 : PyFloat_AsDouble(p[0]->obj);
    double end = p[1]->kind == V_TENSOR ? 0 : PyFloat_AsDouble(p[1]->obj);
    if (PyErr_Occurred())
        return -1;
    int dt = -1;
    if (p[3] && sym_get_dtype(t, p[3], &dt) < 0)
        return -1;
    if (dt < 0 && (dt = sym_default_dtype(t)) < 0)
        return -1;
    if (dt != IC_F32 && dt != IC_F64)
        return sym_fail(t, "linspace: a dtype other than float32/float64 left to eager");
    for (int i = 5; i < MAXP; i++)
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "linspace: layout/requires_grad/out arguments not supported yet");
    {
        int dty = TC_DEV_CPU, dix = 0;
        if (p[4] && !sym_is_none(p[4]) && !device_arg(p[4], &dty, &dix))
            return sym_fail(t, "linspace: unsupported device argument");
        if (factory_device(t, dty, dix, "linspace") < 0)
            return -1;
    }
    if (tens) { /* 0-d tensors: their values (detached) in the output dtype */
        ic_val se[2];
        for (int i = 0; i < 2; i++) {
            double v = i ? end : start;
            se[i] = p[i]->kind == V_TENSOR ? ic_cast(G, ic_detach(G, p[i]->val), (ic_dtype)dt)
                                          : ic_cast(G, ic_scalar(G, dt == IC_F32 ? (double)(float)v : v, IC_F64), (ic_dtype)dt);
        }
        if (steps <= 1) {
            int64_t one = 1;
            ic_val r = ic_reshape(G, se[0], 1, &one);
            return sym_tensor_out(t, steps == 1 ? r : ic_slice(G, r, 0, 0, 0, 1), out);
        }
        ic_val stp = ic_binary(G, IC_OP_DIV, ic_binary(G, IC_OP_SUB, se[1], se[0]), ic_scalar(G, (double)(steps - 1), IC_F64));
        ic_val ix = ic_arange(G, steps, 0.0, 1.0, (ic_dtype)dt);
        ic_val lo = ic_binary(G, IC_OP_ADD, se[0], ic_binary(G, IC_OP_MUL, stp, ix));
        ic_val bk = ic_binary(G, IC_OP_SUB, ic_scalar(G, (double)(steps - 1), IC_F64), ix);
        ic_val hi = ic_binary(G, IC_OP_SUB, se[1], ic_binary(G, IC_OP_MUL, stp, bk));
        ic_val fh = ic_binary(G, IC_OP_LT, ix, ic_scalar(G, (double)(steps / 2), IC_F64));
        return sym_tensor_out(t, ic_where(G, fh, lo, hi), out);
    }
    if (steps <= 1)
        return sym_tensor_out(t, ic_arange(G, steps, start, 1.0, (ic_dtype)dt), out);
    if (dt == IC_F32) { /* start and end as the kernel's scalars */
        start = (float)start;
        end = (float)end;
    }
    double step = dt == IC_F32 ? (double)(((float)end - (float)start) / (float)(steps - 1))
                               : (end - start) / (double)(steps - 1);
    ic_val idx = ic_arange(G, steps, 0.0, 1.0, (ic_dtype)dt);
    ic_val lo = ic_binary(G, IC_OP_ADD, ic_scalar(G, start, IC_F64),
                          ic_binary(G, IC_OP_MUL, ic_scalar(G, step, IC_F64), idx));
    ic_val back = ic_binary(G, IC_OP_SUB, ic_scalar(G, (double)(steps - 1), IC_F64), idx);
    ic_val hi = ic_binary(G, IC_OP_SUB, ic_scalar(G, end, IC_F64),
                          ic_binary(G, IC_OP_MUL, ic_scalar(G, step, IC_F64), back));
    ic_val first = ic_binary(G, IC_OP_LT, idx, ic_scalar(G, (double)(steps / 2), IC_F64));
    return sym_tensor_out(t, ic_where(G, first, lo, hi), out);
}

/* eye(n, m=n, *, dtype, device): arange(n)[:, None] == arange(m), cast to the dtype (the
 * default dtype unless given) */
int sym_h_eye(trace *t, const opdef *d, var **p, var *out) {
    int64_t nm[2];
    for (int i = 0; i < 2; i++) {
        var *v = i == 1 && sym_is_none(p[1]) ? p[0] : p[i];
        if (v == NULL || v->kind != V_CONST || !PyLong_Check(v->obj) || PyBool_Check(v->obj))
            return sym_fail(t, "eye: sizes must be constant ints");
        int overflow = 0;
        long long k = PyLong_AsLongLongAndOverflow(v->obj, &overflow);
        if (overflow || k < 0) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "eye: negative or huge size (eager will raise)");
        }
        nm[i] = k;
    }
    int dt = -1;
    if (p[2] && sym_get_dtype(t, p[2], &dt) < 0)
        return -1;
    if (dt < 0 && (dt = sym_default_dtype(t)) < 0)
        return -1;
    int dty = TC_DEV_CPU, dix = 0;
    if (!sym_is_none(p[3]) && !device_arg(p[3], &dty, &dix))
        return sym_fail(t, "eye: unsupported device argument");
    for (int i = 4; i < 8; i++)
        if (!sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "eye: layout/requires_grad/pin_memory/out arguments not supported yet");
    if (factory_device(t, dty, dix, "eye") < 0)
        return -1;
    int64_t rs[2] = {nm[0], 1}, cs[2] = {1, nm[1]};
    ic_val r = ic_reshape(t->g, ic_arange(t->g, nm[0], 0, 1, IC_I64), 2, rs);
    ic_val c = ic_reshape(t->g, ic_arange(t->g, nm[1], 0, 1, IC_I64), 2, cs);
    return sym_tensor_out(t, ic_cast(t->g, ic_binary(t->g, IC_OP_EQ, r, c), (ic_dtype)dt), out);
}

/* ones/zeros/full(size, [fill], *, dtype) and ones_like/zeros_like/full_like(x, [fill]) */
int sym_h_factory(trace *t, const opdef *d, var **p, var *out) {
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
        if (sym_int_const_exact(t, fv->obj) < 0)
            return -1;
    }
    var *dtv = p[kind == 2 ? 2 : 1];
    if (dtv && sym_get_dtype(t, dtv, &dt) < 0)
        return -1;
    int dev_i = kind == 2 ? 3 : 2, dty = -1, dix = -1;
    if (p[dev_i] && !sym_is_none(p[dev_i]) && !device_arg(p[dev_i], &dty, &dix))
        return sym_fail(t, "%s: unsupported device argument", d->name);
    int fmt = IC_MF_PRESERVE; /* *_like(memory_format=) */
    if (like && dh_memory_format(t, p[dev_i + 3], &fmt) < 0)
        return -1;
    /* requires_grad=True: a leaf made in the graph, as x.requires_grad_() makes one */
    var *rgv = p[dev_i + 2];
    int rg = rgv && rgv->kind == V_CONST && rgv->obj == Py_True;
    for (int i = dev_i + 1; i < MAXP; i++)
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && PyBool_Check(p[i]->obj) && p[i]->obj == Py_False) &&
            !(like && i == dev_i + 3) && !(rg && i == dev_i + 2))
            return sym_fail(t, "%s: layout/requires_grad arguments not supported yet", d->name);
    if (dty >= 0 && factory_device(t, dty, dix, d->name) < 0)
        return -1;
    if (like) {
        if (p[0]->kind != V_TENSOR)
            return sym_fail(t, "%s of a non-tensor", d->name);
        ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
        n = m->ndim;
        for (int i = 0; i < n; i++)
            sz[i] = m->sizes[i];
        if (dt < 0)
            dt = m->dtype;
    } else {
        long long s64[IC_MAX_DIMS];
        if (sym_get_shape_args(t, p[0], s64, &n, "size") < 0)
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
        if (dty < 0 && factory_device(t, TC_DEV_CPU, 0, d->name) < 0) /* no device: the CPU */
            return -1;
    }
    if (kind == 2 && sym_check_scalar_fits(t, fv, dt, d->name) < 0)
        return -1;
    ic_val v = ic_cast(t->g, ic_scalar(t->g, fill, fill_kind), (ic_dtype)dt);
    v = ic_expand(t->g, v, n, sz);
    if (like && v >= 0 && ic_value_set_format(t->g, v, p[0]->val, fmt) < 0) /* empty_like's */
        return sym_fail(t, "%s: memory_format does not fit the rank (eager raises)", d->name);
    if (sym_tensor_out(t, v, out) < 0)
        return -1;
    if (!rg)
        return 0;
    var *q[MAXP] = {out, rgv};
    return sym_h_requires_grad_(t, d, q, out);
}

/* x.new_tensor(data, dtype=None, device=None): torch.tensor(data) with x's dtype and device
 * unless given (data: numbers or nested lists of them, as torch.tensor takes here) */
int sym_h_new_tensor(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "Tensor.%s of a non-tensor", d->name);
    if (p[1] == NULL || p[1]->kind == V_TENSOR)
        return sym_fail(t, "Tensor.new_tensor of a tensor left to eager (it warns)");
    for (int i = 4; i < MAXP; i++)
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "new_tensor: requires_grad/layout/pin_memory arguments not supported yet");
    var dtv = sym_var(V_CONST), dev = sym_var(V_CONST);
    if (p[2] == NULL || sym_is_none(p[2]))
        dtv.obj = sym_dtype_object(sym_metap(t, p[0]->val)->dtype); /* borrowed, kept by torch */
    else
        dtv = *p[2];
    if (p[3] == NULL || sym_is_none(p[3])) {
        int xh = sym_home_off(t, p[0]->val) ? sym_home(t, p[0]->val) : 0; /* x's device (fold.c sym_home) */
        dev.obj = sym_keep(t, xh ? sym_home_device(xh) : sym_graph_device(t));
        if (dev.obj == NULL)
            return -1;
    } else {
        dev = *p[3];
    }
    if (dtv.obj == NULL && dtv.kind == V_CONST)
        return sym_fail(t, "new_tensor: an unknown dtype");
    static const opdef tensor_def = {"tensor", W_TORCH, "data|dtype,device", sym_h_tensor, 0};
    var *q[MAXP] = {0};
    q[0] = p[1];
    q[1] = &dtv;
    q[2] = &dev;
    return sym_h_tensor(t, &tensor_def, q, out);
}

/* x.new_zeros/new_ones/new_empty(*size) and x.new_full(size, fill): x's dtype and device
 * unless given (new_empty: zeros, a valid value for memory eager leaves uninitialised) */
int sym_h_new_factory(trace *t, const opdef *d, var **p, var *out) {
    int kind = d->op; /* 0 zeros, 1 ones, 2 full, 3 empty */
    int64_t sz[IC_MAX_DIMS];
    long long s64[IC_MAX_DIMS];
    int n = 0, dt = -1;
    double fill = kind == 1 ? 1.0 : 0.0;
    ic_dtype fill_kind = IC_I64;
    if (p[0]->kind != V_TENSOR)
        return sym_fail(t, "Tensor.%s of a non-tensor", d->name);
    if (kind == 2) {
        if (!sym_is_number(p[2]))
            return sym_fail(t, "%s: fill value must be a number", d->name);
        fill = PyFloat_AsDouble(p[2]->obj);
        fill_kind = PyBool_Check(p[2]->obj) ? IC_BOOL : PyFloat_Check(p[2]->obj) ? IC_F64 : IC_I64;
        if (sym_int_const_exact(t, p[2]->obj) < 0)
            return -1;
    }
    int k = kind == 2 ? 3 : 2; /* dtype, device, then requires_grad/layout/pin_memory */
    if (p[k] && sym_get_dtype(t, p[k], &dt) < 0)
        return -1;
    if (dt < 0)
        dt = sym_metap(t, p[0]->val)->dtype;
    if (p[k + 1] && !sym_is_none(p[k + 1])) {
        int dty = -1, dix = -1;
        if (!device_arg(p[k + 1], &dty, &dix))
            return sym_fail(t, "%s: unsupported device argument", d->name);
        if (factory_device(t, dty, dix, d->name) < 0)
            return -1;
    }
    for (int i = k + 2; i < MAXP; i++)
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "%s: layout/requires_grad/pin_memory arguments not supported yet", d->name);
    if (sym_get_shape_args(t, p[1], s64, &n, "size") < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (s64[i] < 0)
            return sym_fail(t, "negative size (eager will raise)");
        sz[i] = s64[i];
    }
    if (kind == 2 && sym_check_scalar_fits(t, p[2], dt, d->name) < 0)
        return -1;
    ic_val v = ic_cast(t->g, ic_scalar(t->g, fill, fill_kind), (ic_dtype)dt);
    v = ic_expand(t->g, v, n, sz);
    return sym_tensor_out(t, v, out);
}

/* a traced sequence of constants (nested) as a new Python list; NULL: not such (no error) */
static PyObject *seq_as_list(const var *v, int depth) {
    if (v->kind == V_CONST)
        return Py_NewRef(v->obj);
    if (v->kind != V_SEQ || depth > IC_MAX_DIMS)
        return NULL;
    PyObject *l = PyList_New(v->n);
    for (int i = 0; l && i < v->n; i++) {
        PyObject *x = seq_as_list(&v->items[i], depth + 1);
        if (x == NULL) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, x);
    }
    if (l == NULL)
        (void)tc_clear_expected(PyExc_Exception);
    return l;
}

/* o (nested lists/tuples of numbers) flattened row-major into items (room for max), its shape
 * in shp[0..*nd) (fixed by the first element at each depth); 0, or -1 when ragged, deep or
 * more than max */
static int flat_data(PyObject *o, int depth, PyObject **items, int max, int *n, int64_t *shp, int *nd) {
    if (!PyList_Check(o) && !PyTuple_Check(o)) {
        if (depth != *nd || *n >= max)
            return -1;
        items[(*n)++] = o;
        return 0;
    }
    if (depth >= IC_MAX_DIMS)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(o);
    if (depth == *nd && *n == 0 && (depth == 0 || shp[depth - 1] > 0)) { /* the first at this depth */
        shp[depth] = len;
        *nd = depth + 1;
    } else if (depth >= *nd || shp[depth] != len) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++)
        if (flat_data(PySequence_Fast_GET_ITEM(o, i), depth + 1, items, max, n, shp, nd) < 0)
            return -1;
    return 0;
}

static int tensor_of(trace *t, const opdef *d, var **p, PyObject **items, var *out);

/* torch.tensor(data) of a constant number or (nested, rectangular) list of numbers,
 * torchc.config.max_unroll of them at most (empty: shape [0], as the DynamicCache layers
 * start), dtype inferred as torch does */
int sym_h_tensor(trace *t, const opdef *d, var **p, var *out) {
    PyObject **items = malloc(sizeof *items * (size_t)(dh_limit.max_unroll > 0 ? dh_limit.max_unroll : 1));
    if (items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = tensor_of(t, d, p, items, out);
    free(items);
    return rc;
}

static int tensor_of(trace *t, const opdef *d, var **p, PyObject **items, var *out) {
    int64_t shp[IC_MAX_DIMS];
    int n = 0, nd = 0, dt = -1, allbool = 1, anyfloat = 0, scalar = 0;
    const var *data = p[0];
    if (data->kind == V_CONST && (PyBool_Check(data->obj) || PyLong_CheckExact(data->obj) ||
                                  PyFloat_CheckExact(data->obj))) {
        n = 1; /* torch.tensor(number): a 0-d tensor */
        items[0] = data->obj;
        scalar = 1;
    } else {
        PyObject *o = (data->kind == V_CONST && (PyList_Check(data->obj) || PyTuple_Check(data->obj))) ||
                              data->kind == V_SEQ
                          ? seq_as_list(data, 0)
                          : NULL;
        if (o == NULL || sym_keep(t, o) == NULL)
            return sym_fail(t, "tensor: data is not a list of numbers");
        if (flat_data(o, 0, items, dh_limit.max_unroll, &n, shp, &nd) < 0)
            return sym_fail(t, "tensor: data is not a rectangular list of at most %d numbers "
                               "(torchc.config.max_unroll)", dh_limit.max_unroll);
    }
    for (int i = 0; i < n; i++) {
        PyObject *x = items[i];
        if (!PyBool_Check(x) && !PyLong_CheckExact(x) && !PyFloat_CheckExact(x))
            return sym_fail(t, "tensor: data is not a list of numbers");
        allbool &= PyBool_Check(x);
        anyfloat |= PyFloat_CheckExact(x);
    }
    if (p[1] && sym_get_dtype(t, p[1], &dt) < 0)
        return -1;
    int dty = -1, dix = -1;
    if (p[2] && !sym_is_none(p[2]) && !device_arg(p[2], &dty, &dix))
        return sym_fail(t, "tensor: unsupported device argument");
    for (int i = 3; i < MAXP; i++)
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "tensor: requires_grad/pin_memory arguments not supported yet");
    if (factory_device(t, dty >= 0 ? dty : TC_DEV_CPU, dty >= 0 ? dix : 0, d->name) < 0)
        return -1;
    if (dt < 0) {
        if (n > 0 && allbool)
            dt = IC_BOOL;
        else if (n > 0 && !anyfloat)
            dt = IC_I64;
        else if ((dt = sym_default_dtype(t)) < 0)
            return -1;
    }
    /* into an integer dtype eager converts each number with c10's overflow check (NaN, inf,
     * 300 for uint8, 1e20 for int32 raise); float dtypes take every number (1e6 -> f16 inf) */
    if (dt != IC_BOOL && dt < IC_F16)
        for (int i = 0; i < n; i++)
            if (sym_scalar_overflows(items[i], dt))
                return sym_fail(t, "tensor: value cannot be converted to the dtype without overflow (eager raises)");
    int64_t sz1 = 1;
    if (n == 0) /* shape [0], [2, 0], ... */
        return sym_tensor_out(t, ic_expand(t->g, ic_cast(t->g, ic_scalar(t->g, 0.0, IC_I64), (ic_dtype)dt), nd, shp), out);
    ic_val *es = malloc(sizeof *es * (size_t)n);
    if (es == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *x = items[i];
        double v = PyFloat_AsDouble(x);
        ic_dtype k = PyBool_Check(x) ? IC_BOOL : PyFloat_CheckExact(x) ? IC_F64 : IC_I64;
        if (k == IC_I64) { /* exact for big ints */
            int ovf = 0;
            long long ll = PyLong_AsLongLongAndOverflow(x, &ovf);
            if (ovf || (ll > (1LL << 53) || ll < -(1LL << 53))) {
                free(es);
                return sym_fail(t, "tensor: integer too large");
            }
            v = (double)ll;
        }
        if (scalar) {
            free(es);
            return sym_tensor_out(t, ic_cast(t->g, ic_scalar(t->g, v, k), (ic_dtype)dt), out);
        }
        es[i] = ic_expand(t->g, ic_cast(t->g, ic_scalar(t->g, v, k), (ic_dtype)dt), 1, &sz1);
    }
    /* a balanced tree of cats (stored every few operands by the scheduler, sched.c catn) */
    for (int k = n; k > 1; k = (k + 1) / 2) {
        for (int i = 0; i + 1 < k; i += 2)
            es[i / 2] = ic_cat(t->g, es[i], es[i + 1], 0);
        if (k % 2)
            es[k / 2] = es[k - 1];
    }
    ic_val r = es[0];
    free(es);
    if (nd > 1 && r >= 0)
        r = sym_reshape(t, r, nd, shp);
    return sym_tensor_out(t, r, out);
}

/* torch.as_tensor(data, dtype=None, device=None): a tensor on the graph's device is returned
 * itself, or converted as .to(dtype) does; numbers and lists of them as torch.tensor */
int sym_h_as_tensor(trace *t, const opdef *d, var **p, var *out) {
    if (p[0]->kind != V_TENSOR)
        return sym_h_tensor(t, d, p, out);
    int dt = -1, dty = -1, dix = -1;
    if (sym_get_dtype(t, p[1], &dt) < 0)
        return -1;
    if (p[2] && !sym_is_none(p[2])) {
        if (!device_arg(p[2], &dty, &dix))
            return sym_fail(t, "as_tensor: unsupported device argument");
        if (same_device(t, dty, dix, d->name) < 0)
            return -1;
    }
    if (dt < 0 || dt == (int)sym_metap(t, p[0]->val)->dtype)
        return sym_same_tensor(t, p, out); /* eager returns data itself */
    return sym_tensor_out(t, ic_cast(t->g, p[0]->val, (ic_dtype)dt), out);
}

/* torch.scalar_tensor(s, *, dtype=None, device=None, ...): a 0-d tensor of the default
 * dtype (whatever the number's kind) unless dtype is given */
int sym_h_scalar_tensor(trace *t, const opdef *d, var **p, var *out) {
    if (!sym_is_number(p[0]) || p[0]->kind != V_CONST)
        return sym_fail(t, "scalar_tensor of a non-constant or a non-number");
    int dt = -1, dty = -1, dix = -1;
    if (sym_get_dtype(t, p[1], &dt) < 0)
        return -1;
    if (p[3] && !sym_is_none(p[3]) && !device_arg(p[3], &dty, &dix))
        return sym_fail(t, "scalar_tensor: unsupported device argument");
    for (int i = 4; i < MAXP; i++)
        if (p[i] && !sym_is_none(p[i]) && !(p[i]->kind == V_CONST && p[i]->obj == Py_False))
            return sym_fail(t, "scalar_tensor: layout/requires_grad/pin_memory arguments not supported yet");
    if (p[2] && !sym_is_none(p[2]))
        return sym_fail(t, "scalar_tensor: layout argument not supported yet");
    if (factory_device(t, dty >= 0 ? dty : TC_DEV_CPU, dty >= 0 ? dix : 0, d->name) < 0)
        return -1;
    if (dt < 0 && (dt = sym_default_dtype(t)) < 0)
        return -1;
    PyObject *x = p[0]->obj;
    ic_dtype k = PyBool_Check(x) ? IC_BOOL : PyFloat_Check(x) ? IC_F64 : IC_I64;
    double v = PyFloat_AsDouble(x);
    if (v == -1.0 && PyErr_Occurred())
        return tc_clear_expected(PyExc_Exception) < 0 ? -1 : sym_fail(t, "scalar_tensor: not a real number");
    if (sym_check_scalar_fits(t, p[0], dt, d->name) < 0 || sym_int_const_exact(t, x) < 0)
        return -1;
    return sym_tensor_out(t, ic_cast(t->g, ic_scalar(t->g, v, k), (ic_dtype)dt), out);
}

int sym_opt_num(trace *t, var *v, double dflt, double *out, const char *what) {
    if (sym_is_none(v)) {
        *out = dflt;
        return 0;
    }
    /* a float subclass too (numpy.float64: np.log(x) of a Python number), read as its value */
    if (!sym_is_number(v) && !(v->kind == V_CONST && PyFloat_Check(v->obj)))
        return sym_fail(t, "%s must be a number", what);
    *out = PyFloat_AsDouble(v->obj);
    if (*out == -1.0 && PyErr_Occurred()) { /* an int too large for a double */
        (void)tc_clear_expected(PyExc_OverflowError);
        return sym_fail(t, "%s: a number out of range (eager will raise)", what);
    }
    return 0;
}

int sym_opt_scalar(trace *t, var *v, double dflt, double *out, const char *what) {
    if (!sym_is_none(v) && v->kind == V_CONST && PyLong_Check(v->obj)) {
        int ovf = 0;
        (void)PyLong_AsLongLongAndOverflow(v->obj, &ovf);
        if (ovf)
            return sym_fail(t, "%s: an int out of range (eager will raise)", what);
    }
    return sym_opt_num(t, v, dflt, out, what);
}

int sym_need_tensor(trace *t, const opdef *d, var *v) {
    if (v == NULL || v->kind != V_TENSOR)
        return sym_fail(t, "%s of a non-tensor", d->name);
    return 0;
}

/* activations: op selects the formula; parameters from the slots */
int sym_h_act(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val, r;
    double a, b;
    int inplace = 0;
    /* eager computes these in float for half inputs and rounds once: so do we (no per-op
     * rounding); softsign is composite in eager too (rounded after each op) */
    ic_dtype xdt = sym_metap(t, x)->dtype;
    if (d->op >= 11 && d->op <= 14 && (xdt < IC_F16 || xdt > IC_F64))
        return sym_fail(t, "%s of a non-float tensor (eager raises NotImplementedError)", d->name);
    if (d->op >= 15 && xdt == IC_BOOL)
        return sym_fail(t, "threshold of a bool tensor (eager raises NotImplementedError)");
    /* hardshrink compares in x's dtype (eager converts lambd to it); threshold keeps x's
     * dtype for its result and compares in float (or x's integer dtype): below */
    int half = (xdt == IC_F16 || xdt == IC_BF16) && d->op != 10 && d->op != 11 && d->op < 15;
    int grad = sym_value_requires_grad(t, x); /* (the gradient at kinks: bounded_grad) */
    if (half)
        x = ic_cast(G, x, IC_F32);
    switch (d->op) {
    case 0: /* softplus(input, beta=1, threshold=20) */
        if (sym_opt_scalar(t, p[1], 1.0, &a, "beta") < 0 || sym_opt_scalar(t, p[2], 20.0, &b, "threshold") < 0)
            return -1;
        {
            /* under grad the log1p(exp) branch reads 0 where x is taken: its derivative
             * (NaN at x = inf) is not multiplied in (eager's gradient there is 1) */
            ic_val xb = ic_binary(G, IC_OP_MUL, x, sym_num(t, a)), big = ic_binary(G, IC_OP_GT, xb, sym_num(t, b));
            ic_val xs = grad ? ic_where(G, big, sym_num(t, 0), xb) : xb;
            r = ic_where(G, big, x, ic_binary(G, IC_OP_DIV, ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_EXP, xs)), sym_num(t, a)));
        }
        break;
    case 1: /* elu(input, alpha=1, inplace) */
        if (sym_opt_scalar(t, p[1], 1.0, &a, "alpha") < 0 || sym_get_bool(t, p[2], 0, &inplace, "inplace") < 0)
            return -1;
        /* (x <= 0: eager's backward takes a NaN x as positive, gradient 1; under grad the
         * negative branch reads 0 there, so its derivative (NaN at NaN) is not multiplied in) */
        {
            ic_val neg = ic_binary(G, IC_OP_LE, x, sym_num(t, 0));
            ic_val xn = grad ? ic_where(G, neg, x, sym_num(t, 0)) : x;
            r = ic_where(G, neg, ic_binary(G, IC_OP_MUL, ic_unary(G, IC_OP_EXPM1, xn), sym_num(t, a)), x);
        }
        break;
    case 2: /* leaky_relu(input, negative_slope=0.01, inplace) */
        if (sym_opt_scalar(t, p[1], 0.01, &a, "negative_slope") < 0 || sym_get_bool(t, p[2], 0, &inplace, "inplace") < 0)
            return -1;
        r = ic_where(G, ic_binary(G, IC_OP_GT, x, sym_num(t, 0)), x, ic_binary(G, IC_OP_MUL, x, sym_num(t, a)));
        break;
    case 3: /* hardswish(input, inplace) = x * relu6(x + 3) / 6 */
        if (sym_get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        {
            /* under grad the clamped factor c is where(-3 < x < 3, x + 3, x <= -3 ? 0 : 6): the
             * same values (6 at a NaN x, whose product stays NaN), and eager's gradient (0 up
             * to -3, x / 3 + 1/2 inside, 1 from 3 on and at NaN) where the composition splits
             * it at the kinks */
            ic_val c;
            if (grad)
                c = ic_where(G, ic_binary(G, IC_OP_LOGICAL_AND, ic_binary(G, IC_OP_GT, x, sym_num(t, -3)),
                                          ic_binary(G, IC_OP_LT, x, sym_num(t, 3))),
                             ic_binary(G, IC_OP_ADD, x, sym_num(t, 3)),
                             ic_where(G, ic_binary(G, IC_OP_LE, x, sym_num(t, -3)), sym_num(t, 0), sym_num(t, 6)));
            else
                c = ic_binary(G, IC_OP_MINIMUM,
                              ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_ADD, x, sym_num(t, 3)), sym_num(t, 0)),
                              sym_num(t, 6));
            r = ic_binary(G, IC_OP_DIV, ic_binary(G, IC_OP_MUL, x, c), sym_num(t, 6));
        }
        break;
    case 4: /* hardsigmoid(input, inplace) = relu6(x + 3) / 6 */
        if (sym_get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        {
            /* under grad: where(-3 < x < 3, (x + 3) / 6, v(detach(x))): eager's gradient is
             * 1/6 inside, 0 at and past the kinks and at NaN */
            ic_val xc = grad ? ic_detach(G, x) : x;
            r = ic_binary(G, IC_OP_DIV,
                          ic_binary(G, IC_OP_MINIMUM,
                                    ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_ADD, xc, sym_num(t, 3)), sym_num(t, 0)),
                                    sym_num(t, 6)),
                          sym_num(t, 6));
            if (grad)
                r = ic_where(G, ic_binary(G, IC_OP_LOGICAL_AND, ic_binary(G, IC_OP_GT, x, sym_num(t, -3)),
                                          ic_binary(G, IC_OP_LT, x, sym_num(t, 3))),
                             ic_binary(G, IC_OP_DIV, ic_binary(G, IC_OP_ADD, x, sym_num(t, 3)), sym_num(t, 6)), r);
        }
        break;
    case 5: /* relu6(input, inplace) = hardtanh(input, 0, 6) */
    case 6: /* hardtanh(input, min_val=-1, max_val=1, inplace) */
        if (d->op == 5) {
            a = 0, b = 6;
            if (sym_get_bool(t, p[1], 0, &inplace, "inplace") < 0)
                return -1;
        } else if (sym_opt_scalar(t, p[1], -1.0, &a, "min_val") < 0 || sym_opt_scalar(t, p[2], 1.0, &b, "max_val") < 0 ||
                   sym_get_bool(t, p[3], 0, &inplace, "inplace") < 0) {
            return -1;
        } else if (a > b) {
            return sym_fail(t, "hardtanh: min_val cannot be greater than max_val (eager raises ValueError)");
        }
        if (xdt == IC_BOOL)
            return sym_fail(t, "Bool inputs not supported for hardtanh (eager raises)");
        if (xdt != IC_F16 && xdt != IC_BF16 && xdt != IC_F32 && xdt != IC_F64) {
            /* ATen's hardtanh of an integer tensor: the limits as int64 (truncated), clamped in
             * the tensor's dtype (no promotion to float) */
            if (a != a || b != b || fabs(a) >= 9.2e18 || fabs(b) >= 9.2e18)
                return sym_fail(t, "hardtanh: a limit out of the int64 range (eager raises)");
            a = trunc(a), b = trunc(b);
            if (xdt == IC_U8 && (a < 0 || b < 0))
                return sym_fail(t, "cannot do hardtanh on an unsigned type with negative limits (eager raises)");
            PyObject *la = PyLong_FromDouble(a), *lb = la ? PyLong_FromDouble(b) : NULL;
            int bad = la && lb && (sym_scalar_overflows(la, xdt) || sym_scalar_overflows(lb, xdt));
            Py_XDECREF(la);
            Py_XDECREF(lb);
            if (la == NULL || lb == NULL)
                return -1;
            if (bad)
                return sym_fail(t, "hardtanh: a limit out of the tensor's dtype's range (eager raises)");
            r = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, x, ic_cast(G, sym_inum(t, (long long)a), xdt)),
                          ic_cast(G, sym_inum(t, (long long)b), xdt));
            break;
        }
        r = ic_binary(G, IC_OP_MINIMUM, ic_binary(G, IC_OP_MAXIMUM, grad ? ic_detach(G, x) : x, sym_num(t, a)), sym_num(t, b));
        if (grad) /* eager's hardtanh_backward: 0 where x <= min_val or x >= max_val (relu6's too) */
            r = bounded_grad(t, x, r, sym_num(t, a), sym_num(t, b), 1);
        break;
    case 7: /* mish(input, inplace) = x * tanh(softplus(x)) */
        if (sym_get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        {
            ic_val sp = ic_where(G, ic_binary(G, IC_OP_GT, x, sym_num(t, 20)), x,
                                 ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_EXP, x)));
            r = ic_binary(G, IC_OP_MUL, x, ic_unary(G, IC_OP_TANH, sp));
        }
        break;
    case 8: /* logsigmoid(input) = -softplus(-x) */
        {
            ic_val nx = ic_unary(G, IC_OP_NEG, x), big = ic_binary(G, IC_OP_GT, nx, sym_num(t, 20));
            ic_val xs = grad ? ic_where(G, big, sym_num(t, 0), nx) : nx; /* (as softplus's) */
            r = ic_unary(G, IC_OP_NEG, ic_where(G, big, nx, ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_EXP, xs))));
            if (r >= 0) /* eager's log_sigmoid_forward: a contiguous output whatever the input's layout */
                ic_value_set_format(G, r, r, IC_MF_CONTIGUOUS);
        }
        break;
    case 9: /* selu */
        if (sym_get_bool(t, p[1], 0, &inplace, "inplace") < 0)
            return -1;
        {
            ic_val neg = ic_binary(G, IC_OP_LE, x, sym_num(t, 0));
            ic_val xn = grad ? ic_where(G, neg, x, sym_num(t, 0)) : x; /* (as elu's) */
            r = ic_binary(G, IC_OP_MUL,
                          ic_where(G, neg, ic_binary(G, IC_OP_MUL, ic_unary(G, IC_OP_EXPM1, xn), sym_num(t, 1.6732632423543772848170429916717)), x),
                          sym_num(t, 1.0507009873554804934193349852946));
        }
        break;
    case 10: /* softsign */
        r = ic_binary(G, IC_OP_DIV, x, ic_binary(G, IC_OP_ADD, ic_unary(G, IC_OP_ABS, x), sym_num(t, 1)));
        break;
    case 11: /* hardshrink(input, lambd=0.5): x, or 0 where -lambd <= x <= lambd (lambd in x's
              * dtype; a NaN x stays NaN and passes its gradient, as eager's backward) */
        if (sym_opt_scalar(t, p[1], 0.5, &a, "lambd") < 0)
            return -1;
        r = ic_where(G, ic_binary(G, IC_OP_LOGICAL_AND, ic_binary(G, IC_OP_GE, x, sym_num(t, -a)),
                                  ic_binary(G, IC_OP_LE, x, sym_num(t, a))),
                     sym_num(t, 0), x);
        break;
    case 12: /* softshrink(input, lambd=0.5): x - lambd past lambd, x + lambd below -lambd, else
              * x * 0 (a NaN stays NaN; -0 for a small negative x) */
        if (sym_opt_scalar(t, p[1], 0.5, &a, "lambd") < 0)
            return -1;
        {
            static const double mx[] = {[IC_F16] = 65504.0, [IC_BF16] = 3.3895313892515355e38,
                                        [IC_F32] = 3.4028234663852886e38, [IC_F64] = 1.7976931348623157e308};
            if (!(a >= 0 && a <= mx[xdt]))
                return sym_fail(t, "softshrink: lambda out of range for the input's dtype (eager raises)");
            /* under grad the middle branch passes a NaN x's gradient (eager's backward: the
             * gradient where x is not within [-lambd, lambd]) and none elsewhere */
            ic_val mid = ic_binary(G, IC_OP_MUL, grad ? ic_detach(G, x) : x, sym_num(t, 0));
            if (grad)
                mid = ic_where(G, ic_unary(G, IC_OP_ISNAN, x), x, mid);
            r = ic_where(G, ic_binary(G, IC_OP_GT, x, sym_num(t, a)), ic_binary(G, IC_OP_SUB, x, sym_num(t, a)),
                         ic_where(G, ic_binary(G, IC_OP_LT, x, sym_num(t, -a)),
                                  ic_binary(G, IC_OP_ADD, x, sym_num(t, a)), mid));
        }
        break;
    case 13: /* celu(input, alpha=1, inplace) = elu(x, alpha, scale 1, input scale 1/alpha) */
    case 14: /* celu_(input, alpha=1) */
        if (sym_opt_scalar(t, p[1], 1.0, &a, "alpha") < 0 || (d->op == 13 && sym_get_bool(t, p[2], 0, &inplace, "inplace") < 0))
            return -1;
        if (a == 0)
            return sym_fail(t, "celu: alpha 0 (eager raises ZeroDivisionError)");
        inplace |= d->op == 14;
        {
            ic_val neg = ic_binary(G, IC_OP_LE, x, sym_num(t, 0));
            ic_val xn = grad ? ic_where(G, neg, x, sym_num(t, 0)) : x; /* (as elu's) */
            r = ic_where(G, neg, ic_binary(G, IC_OP_MUL, ic_unary(G, IC_OP_EXPM1, ic_binary(G, IC_OP_MUL, xn, sym_num(t, 1.0 / a))),
                                           sym_num(t, a)), x);
        }
        break;
    case 15: /* threshold(input, threshold, value, inplace): value where x <= threshold */
    case 16: /* threshold_(input, threshold, value) */
        if (p[1] == NULL || p[2] == NULL)
            return sym_fail(t, "threshold: missing threshold or value (eager raises TypeError)");
        if (sym_opt_scalar(t, p[1], 0, &a, "threshold") < 0 || sym_opt_scalar(t, p[2], 0, &b, "value") < 0 ||
            (d->op == 15 && sym_get_bool(t, p[3], 0, &inplace, "inplace") < 0))
            return -1;
        inplace |= d->op == 16;
        {
            /* eager: value converted to x's dtype (checked); the comparison in float for
             * floating x (16-bit ones widened), in x's integer dtype for integers (the
             * threshold converted to it: truncated, checked, wrapped into unsigned) */
            int isint = xdt < IC_F16 || xdt > IC_F64;
            if (sym_check_scalar_fits(t, p[2], xdt, "threshold value") < 0 ||
                (isint && sym_check_scalar_fits(t, p[1], xdt, "threshold") < 0))
                return -1;
            if (isint && (fabs(a) > 9007199254740992.0 || fabs(b) > 9007199254740992.0))
                return sym_fail(t, "threshold: an integer threshold or value beyond 2^53 left to eager");
            ic_val cmp;
            if (isint) {
                double ta = trunc(a), tb = trunc(b);
                if (xdt == IC_U8) { /* two's complement wrap of a negative number */
                    ta = ta < 0 ? ta + 256 : ta;
                    tb = tb < 0 ? tb + 256 : tb;
                }
                cmp = ic_binary(G, IC_OP_LE, x, ic_scalar(G, ta, IC_I64));
                b = tb;
            } else {
                cmp = ic_binary(G, IC_OP_LE, xdt == IC_F16 || xdt == IC_BF16 ? ic_cast(G, x, IC_F32) : x, sym_num(t, a));
            }
            r = ic_cast(G, ic_where(G, cmp, ic_scalar(G, b, isint ? IC_I64 : IC_F64), x), xdt);
        }
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
    return sym_tensor_out(t, r, out);
}

/* masked_fill(input, mask, value) / masked_fill_ */
int sym_h_masked_fill(trace *t, const opdef *d, var **p, var *out) {
    ic_val v;
    if (sym_need_tensor(t, d, p[0]) < 0 || p[1] == NULL || p[1]->kind != V_TENSOR || p[2] == NULL ||
        sym_as_tensor(t, p[2], &v) < 0)
        return -1;
    ic_meta m_copy = *sym_metap(t, p[0]->val);
    const ic_meta *m = &m_copy; /* a copy: the graph reallocates */
    if (p[2]->kind == V_TENSOR && sym_metap(t, v)->ndim > 0)
        return sym_fail(t, "%s: a value tensor of 1 or more dims (eager will raise: only 0-d)", d->name);
    if (sym_metap(t, p[1]->val)->dtype != IC_BOOL)
        return sym_fail(t, "%s: a mask of a dtype other than bool (eager will raise)", d->name);
    if (sym_check_scalar_fits(t, p[2], m->dtype, d->name) < 0 || sym_check_tensor_value_fits(t, p[2], m->dtype, d->name) < 0)
        return -1;
    ic_val r = ic_where(G, p[1]->val, ic_cast(G, v, m->dtype), p[0]->val);
    if (r >= 0) /* eager's masked_fill: a contiguous clone of input, filled (an in-place
                 * masked_fill_ keeps the tensor's own strides when written back) */
        ic_value_set_format(G, r, r, IC_MF_CONTIGUOUS);
    return sym_tensor_out(t, r, out);
}

/* masked_scatter(input, mask, source): input and mask broadcast together; the k-th true
 * element (row-major) takes source's k-th element. Its shape is static whatever the mask
 * holds: position k = cumsum(mask) - 1, read from the flattened source through the checked
 * gather (sym_check_index): more true elements than source has is eager's error (a check
 * after the kernels on the CPU, the gather's trap on CUDA); a false element reads a valid
 * position and keeps input's value. An empty source: input, where the mask must be all false
 * (checked after the kernels; left to eager on CUDA). */
int sym_h_masked_scatter(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 || sym_need_tensor(t, d, p[2]) < 0)
        return -1;
    ic_meta x = *sym_metap(t, p[0]->val), m = *sym_metap(t, p[1]->val), s = *sym_metap(t, p[2]->val);
    if (m.dtype != IC_BOOL)
        return sym_fail(t, "%s: a mask of a dtype other than bool (eager will raise)", d->name);
    if (s.dtype != x.dtype)
        return sym_fail(t, "%s: source and input dtypes differ (eager will raise)", d->name);
    if (x.dyn || m.dyn || s.dyn)
        return sym_fail(t, "%s with symbolic sizes not supported yet", d->name);
    int nd = x.ndim > m.ndim ? x.ndim : m.ndim;
    int64_t sz[IC_MAX_DIMS], n = 1, ns = 1;
    for (int i = 0; i < nd; i++) {
        int64_t a = i - (nd - x.ndim) >= 0 ? x.sizes[i - (nd - x.ndim)] : 1;
        int64_t b = i - (nd - m.ndim) >= 0 ? m.sizes[i - (nd - m.ndim)] : 1;
        if (a != b && a != 1 && b != 1)
            return sym_fail(t, "%s: input and mask do not broadcast (eager will raise)", d->name);
        sz[i] = a == 1 ? b : a;
        n *= sz[i];
    }
    for (int i = 0; i < s.ndim; i++)
        ns *= s.sizes[i];
    if (ns == 0 && n > 0 && t->device_type == TC_DEV_CUDA)
        return sym_fail(t, "%s with an empty source left to eager on CUDA", d->name);
    int64_t one[1] = {n}, sone[1] = {ns};
    ic_val xf = sym_reshape(t, ic_expand(G, p[0]->val, nd, sz), 1, one);
    ic_val mf = sym_reshape(t, ic_expand(G, p[1]->val, nd, sz), 1, one);
    if (n == 0 || ns == 0) { /* nothing to read: input as it is, and a true element is eager's error */
        if (n > 0 && sym_add_check(t, ic_reduce(G, IC_OP_SUM, ic_cast(G, mf, IC_I64), 0, 0, -1), d->name) < 0)
            return -1;
        ic_val r = ic_where(G, mf, xf, xf);
        if (ns == 0 && sym_value_requires_grad(t, p[2]->val)) {
            /* training: eager's autograd reaches the empty source (its .grad, and that of what
             * it is made from, become zeros, not None): x - sum(source), the sum over no
             * element +0.0, which leaves every x (-0.0, NaN) as it is */
            ic_val z = ic_reduce(G, IC_OP_SUM, p[2]->val, 0, 0, (int)s.dtype);
            r = ic_binary(G, IC_OP_SUB, r, z);
        }
        r = sym_reshape(t, r, nd, sz);
        if (r >= 0)
            ic_value_set_format(G, r, r, IC_MF_CONTIGUOUS);
        return sym_tensor_out(t, r, out);
    }
    int64_t prm[2] = {0, IC_I64};
    ic_val c = ic_extern(G, IC_EXT_CUMSUM, 1, &mf, 2, prm, 1, 1);
    var k = *p[2];
    k.val = ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_SUB, c, sym_inum(t, 1)), sym_inum(t, 0));
    if (k.val < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s failed", d->name);
    int chk = sym_check_index(t, &k, ns, 1);
    if (chk < 0)
        return -1;
    ic_val g = ic_index_select(G, sym_reshape(t, p[2]->val, 1, sone), 0, k.val);
    ic_val r = sym_reshape(t, ic_where(G, mf, g, xf), nd, sz);
    if (r >= 0)
        ic_value_set_format(G, r, r, IC_MF_CONTIGUOUS);
    return sym_tensor_out(t, r, out);
}

/* addcmul/addcdiv(input, t1, t2, *, value=1); lerp(input, end, weight) */
int sym_h_addc(trace *t, const opdef *d, var **p, var *out) {
    ic_val a, b, c;
    if (sym_need_tensor(t, d, p[0]) < 0 || p[1] == NULL || p[2] == NULL || sym_as_tensor(t, p[1], &b) < 0 ||
        sym_as_tensor(t, p[2], &c) < 0)
        return -1;
    a = p[0]->val;
    ic_dtype da = sym_metap(t, a)->dtype, db = sym_metap(t, b)->dtype;
    if (d->op == 2 && (da != db || da < IC_F16 || (p[2]->kind == V_TENSOR && sym_metap(t, c)->dtype != da)))
        return sym_fail(t, "lerp: dtypes must match and be floating (eager will raise)");
    if (d->op != 2 && (da == IC_BOOL || db == IC_BOOL || sym_metap(t, c)->dtype == IC_BOOL))
        return sym_fail(t, "%s of bool tensors left to eager (its kernel has no bool version)", d->name);
    if (d->op == 1 && (sym_metap(t, b)->dtype < IC_F16 && sym_metap(t, c)->dtype < IC_F16))
        return sym_fail(t, "addcdiv of integer tensors (eager will raise)");
    if (d->op == 2) { /* lerp as ATen's: |w| < 0.5 ? a + w * (b - a) : b + (w - 1) * (b - a), each
                       * multiply-add fused as its kernels do (float64 has no wider type: rounded twice) */
        int branch = -1; /* a number weight: 1 small, 0 not */
        if (p[2]->kind == V_CONST && sym_is_number(p[2])) {
            double w = PyFloat_AsDouble(p[2]->obj);
            if (w == -1.0 && PyErr_Occurred() && tc_clear_expected(PyExc_Exception) < 0)
                return -1;
            branch = w > -0.5 && w < 0.5;
        }
        int half = da == IC_F16 || da == IC_BF16; /* ATen computes in float32, rounds once */
        ic_val a0 = a, b0 = b, c0 = c; /* the operands, for the result's layout */
        if (half) {
            a = ic_cast(G, a, IC_F32);
            b = ic_cast(G, b, IC_F32);
            c = p[2]->kind == V_TENSOR ? ic_cast(G, c, IC_F32) : c;
        }
        ic_val diff = ic_binary(G, IC_OP_SUB, b, a), lo = IC_NONE, hi = IC_NONE;
        if (da != IC_F64) {
            /* ATen's kernels fuse each multiply-add (fmadd in the vector loop, contracted in
             * the scalar one): float32's fma(w, diff, a) is the float64 w * diff + a (an
             * exact product) rounded to float32; the weight and w - 1 are float32 values */
            ic_val w32 = ic_cast(G, c, IC_F32), d64 = ic_cast(G, diff, IC_F64);
            if (branch != 0)
                lo = ic_cast(G, ic_binary(G, IC_OP_ADD, ic_cast(G, a, IC_F64), ic_binary(G, IC_OP_MUL, ic_cast(G, w32, IC_F64), d64)),
                             IC_F32);
            if (branch != 1)
                hi = ic_cast(G, ic_binary(G, IC_OP_ADD, ic_cast(G, b, IC_F64),
                                          ic_binary(G, IC_OP_MUL, ic_cast(G, ic_binary(G, IC_OP_SUB, w32, sym_num(t, 1.0)), IC_F64), d64)),
                             IC_F32);
        } else { /* w - 1 in float64: a number weight minus 1 was two scalars' op, in float32 */
            ic_val w64 = ic_cast(G, c, IC_F64);
            if (branch != 0)
                lo = ic_binary(G, IC_OP_ADD, a, ic_binary(G, IC_OP_MUL, w64, diff));
            if (branch != 1)
                hi = ic_binary(G, IC_OP_ADD, b, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, w64, sym_num(t, 1.0)), diff));
        }
        ic_val r = branch >= 0 ? (branch ? lo : hi)
                               : ic_where(G, ic_binary(G, IC_OP_LT, ic_unary(G, IC_OP_ABS, c), sym_num(t, 0.5)), lo, hi);
        if (da != IC_F64 && r >= 0) { /* the layout of a + w * diff (eager's TensorIterator order:
                                       * self, end, weight); the float64 casts lost an expanded
                                       * self's place in it (an unused node: dropped) */
            ic_val ref = ic_binary(G, IC_OP_ADD, a0, ic_binary(G, IC_OP_MUL, c0, ic_binary(G, IC_OP_SUB, b0, a0)));
            int64_t so[IC_MAX_DIMS];
            if (ref >= 0 && ic_value_strides(G, ref, so))
                ic_value_set_strides(G, r, so);
        }
        ic_val res = half ? ic_cast(G, r, da) : r;
        if (half && res >= 0) {
            int64_t so[IC_MAX_DIMS];
            if (ic_value_strides(G, r, so))
                ic_value_set_strides(G, res, so);
        }
        return sym_tensor_out(t, res, out);
    }
    double val = 1.0;
    if (sym_opt_scalar(t, p[3], 1.0, &val, "value") < 0)
        return -1;
    /* ATen's kernels: self + value * t1 * t2 (/ t2), in that order; f16/bf16 operands in
     * float32, rounded once */
    int half = (da == IC_F16 || da == IC_BF16) && db == da && sym_metap(t, c)->dtype == da;
    if (half) {
        a = ic_cast(G, a, IC_F32);
        b = ic_cast(G, b, IC_F32);
        c = ic_cast(G, c, IC_F32);
    }
    /* integer operands: the value converted to their type (2.5 -> 2), no float promotion */
    int ints = da < IC_F16 && db < IC_F16 && sym_metap(t, c)->dtype < IC_F16;
    if (ints && p[3] && p[3]->kind == V_CONST && PyFloat_Check(p[3]->obj)) {
        /* eager converts a float value with a range check: -2.5 for uint8 raises */
        int bits = (int)ic_dtype_size(da) * 8;
        double lo = da == IC_BOOL || da == IC_U8 ? 0 : -ldexp(1, bits - 1);
        double hi = da == IC_BOOL ? 1 : da == IC_U8 ? 255 : ldexp(1, bits - 1) - 1;
        if (db != da || sym_metap(t, c)->dtype != da || !(val >= lo && val <= hi))
            return sym_fail(t, "%s: a float value for integer tensors out of their range or of mixed types left to eager", d->name);
    }
    ic_val vb = val == 1.0 ? b : ic_binary(G, IC_OP_MUL, ints ? sym_inum(t, (long long)val) : sym_num(t, val), b);
    ic_val r = ic_binary(G, IC_OP_ADD, a, ic_binary(G, d->op ? IC_OP_DIV : IC_OP_MUL, vb, c));
    return sym_tensor_out(t, half ? ic_cast(G, r, da) : r, out);
}

/* outer(input, vec2) / ger: input[:, None] * vec2[None, :] of two 1-d tensors (the product's
 * dtype promotion is eager's: outer is mul of the two broadcast views) */
int sym_h_outer(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_meta a = *sym_metap(t, p[0]->val), b = *sym_metap(t, p[1]->val);
    if (a.ndim != 1 || b.ndim != 1 || a.dyn || b.dyn)
        return sym_fail(t, "outer: 1-d operands of static shape (else eager raises or runs)");
    int64_t sa[2] = {a.sizes[0], 1}, sb[2] = {1, b.sizes[0]};
    ic_val x = ic_reshape(G, p[0]->val, 2, sa);
    ic_val y = ic_reshape(G, p[1]->val, 2, sb);
    return sym_tensor_out(t, x < 0 || y < 0 ? -1 : ic_binary(G, IC_OP_MUL, x, y), out);
}

/* type_as(input, other) */
int sym_h_type_as(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    /* x.type_as(y) is x.type(y.type()): y's device too (fold.c sym_home: a CPU tensor of a CUDA graph) */
    int xoff = sym_home_off(t, p[0]->val), yoff = sym_home_off(t, p[1]->val);
    if (yoff && (!xoff || sym_home(t, p[0]->val) != sym_home(t, p[1]->val)))
        return sym_fail(t, "type_as of a tensor on another device than the graph's not supported yet");
    if (xoff && !yoff) {
        ic_val c = ic_cast(G, p[0]->val, ic_value_meta(G, p[1]->val)->dtype); /* a copy on y's device */
        if (c < 0 || sym_home_set(t, c, sym_home_of(t->device_type, t->device_index)) < 0)
            return c < 0 ? sym_check_graph(t) : -1;
        return sym_tensor_out(t, c, out);
    }
    if (ic_value_meta(G, p[0]->val)->dtype == ic_value_meta(G, p[1]->val)->dtype)
        return sym_same_tensor(t, p, out);
    return sym_tensor_out(t, ic_cast(G, p[0]->val, ic_value_meta(G, p[1]->val)->dtype), out);
}

/* clone(input, memory_format): a fresh copy in that memory format (layout.c) */
int sym_h_clone(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    int fmt;
    if (dh_memory_format(t, p[1], &fmt) < 0)
        return -1;
    return dh_layout_copy(t, p[0]->val, fmt, out);
}

/* nan_to_num(input, nan=0.0, posinf=None, neginf=None) */
int sym_h_nan_to_num(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    ic_val x = p[0]->val;
    ic_dtype dt = ic_value_meta(G, x)->dtype;
    if (dt < IC_F16) /* integers have no NaN/inf: a copy */
        return sym_tensor_out(t, ic_cast(G, x, dt), out);
    double big = dt == IC_F64 ? 1.7976931348623157e308 : dt == IC_F32 ? 3.4028234663852886e38
                 : dt == IC_F16 ? 65504.0 : 3.3895313892515355e38;
    double nanv, pinf, ninf;
    if (sym_opt_num(t, p[1], 0.0, &nanv, "nan") < 0 || sym_opt_num(t, p[2], big, &pinf, "posinf") < 0 ||
        sym_opt_num(t, p[3], -big, &ninf, "neginf") < 0)
        return -1;
    ic_val r = ic_where(G, ic_unary(G, IC_OP_ISNAN, x), ic_cast(G, sym_num(t, nanv), dt), x);
    r = ic_where(G, ic_binary(G, IC_OP_EQ, x, sym_num(t, INFINITY)), ic_cast(G, sym_num(t, pinf), dt), r);
    r = ic_where(G, ic_binary(G, IC_OP_EQ, x, sym_num(t, -INFINITY)), ic_cast(G, sym_num(t, ninf), dt), r);
    return sym_tensor_out(t, r, out);
}

/* diff(input, n=1, dim=-1, prepend=None, append=None): prepend and append concatenated along
 * dim (promoting like torch.cat), then n times x[1:] - x[:-1] along dim (bool: x[1:] != x[:-1],
 * eager's logical_xor) */
int sym_h_diff(trace *t, const opdef *d, var **p, var *out) {
    long long n = 1, dd = -1;
    if (sym_need_tensor(t, d, p[0]) < 0 || (!sym_is_none(p[1]) && sym_get_int(t, p[1], &n, "n") < 0) ||
        (!sym_is_none(p[2]) && sym_get_int(t, p[2], &dd, "dim") < 0))
        return -1;
    ic_val x = p[0]->val;
    ic_meta m = *sym_metap(t, x);
    if (m.ndim == 0)
        return sym_fail(t, "diff of a 0-d tensor (eager will raise)");
    if (m.dyn)
        return sym_fail(t, "diff of a tensor with symbolic sizes not supported yet");
    if (n < 1)
        return sym_fail(t, "diff with n < 1 left to eager");
    int dim;
    if (sym_norm_dim(t, dd, m.ndim, &dim) < 0)
        return -1;
    for (int k = 0; k < 2; k++) {
        var *e = p[3 + k];
        if (sym_is_none(e))
            continue;
        if (e->kind != V_TENSOR)
            return sym_fail(t, "diff: a non-tensor %s not supported yet", k ? "append" : "prepend");
        const ic_meta *me = sym_metap(t, e->val);
        if (me->ndim != m.ndim || me->dyn)
            return sym_fail(t, "diff: %s of another rank or symbolic (eager decides)", k ? "append" : "prepend");
        x = k ? ic_cat(G, x, e->val, dim) : ic_cat(G, e->val, x, dim);
    }
    for (long long i = 0; i < n && x >= 0; i++) {
        ic_meta mx = *sym_metap(t, x);
        int64_t L = mx.sizes[dim];
        if (L == 0)
            return sym_fail(t, "diff along an empty dim left to eager");
        ic_val hi = ic_slice(G, x, dim, 1, L, 1), lo = ic_slice(G, x, dim, 0, L - 1, 1);
        x = ic_binary(G, mx.dtype == IC_BOOL ? IC_OP_NE : IC_OP_SUB, hi, lo);
    }
    if (x < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "diff failed");
    return sym_tensor_out(t, x, out);
}

/* F.glu(input, dim=-1): the first half times the sigmoid of the second along dim (in f32 for
 * 16-bit floats, rounded once, like eager's kernel) */
int sym_h_glu(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    long long dd = -1;
    if (p[1] && !sym_is_none(p[1]) && sym_get_int(t, p[1], &dd, "dim") < 0)
        return -1;
    ic_meta m = *sym_metap(t, p[0]->val);
    int dim;
    if (m.ndim == 0 || sym_norm_dim(t, dd, m.ndim, &dim) < 0)
        return m.ndim == 0 ? sym_fail(t, "glu of a 0-d tensor (eager will raise)") : -1;
    if (m.dtype < IC_F16 || m.dtype > IC_F64 || m.dyn || m.sizes[dim] % 2)
        return sym_fail(t, "glu: a non-float input, an odd or symbolic dim left to eager");
    int64_t h = m.sizes[dim] / 2;
    ic_val x = p[0]->val;
    int half = m.dtype == IC_F16 || m.dtype == IC_BF16;
    ic_val a = ic_slice(G, x, dim, 0, h, 1), b = ic_slice(G, x, dim, h, 2 * h, 1);
    if (half) {
        a = ic_cast(G, a, IC_F32);
        b = ic_cast(G, b, IC_F32);
    }
    ic_val r = ic_binary(G, IC_OP_MUL, a, ic_unary(G, IC_OP_SIGMOID, b));
    return sym_tensor_out(t, half ? ic_cast(G, r, m.dtype) : r, out);
}

/* Tensor.type(dtype, non_blocking=False): a cast (the tensor itself when the dtype is its
 * own); type() without a dtype (a type name) and type names as strings are left to eager */
int sym_h_type(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0)
        return -1;
    if (p[1] == NULL || sym_is_none(p[1]) || (p[1]->kind == V_CONST && PyUnicode_Check(p[1]->obj)))
        return sym_fail(t, "Tensor.type() without a torch.dtype left to eager");
    int dt;
    if (sym_get_dtype(t, p[1], &dt) < 0)
        return -1;
    if (dt < 0)
        return sym_fail(t, "Tensor.type(): not a dtype");
    if (ic_value_meta(t->g, p[0]->val)->dtype == (ic_dtype)dt)
        return sym_same_tensor(t, p, out);
    return sym_tensor_out(t, ic_cast(t->g, p[0]->val, (ic_dtype)dt), out);
}
