/* ops_pyops.c — Python operators on tracked values: BINARY_OP, unary minus, comparisons.
 */
#include "ops_internal.h"

/* BINARY_OP on tensors or numbers. nb_op is the oparg of BINARY_OP (NB_*). */
static int binary_impl(trace *t, int nb, const var *a_in, const var *b_in, var *out) {
    var av = *a_in, bv = *b_in, *a = &av, *b = &bv;
    sym_resolve(t, a);
    sym_resolve(t, b);
    if (((a->kind == V_CONST && a->dyn) || (b->kind == V_CONST && b->dyn)) && t->tfm_active == 0 &&
        t->vm_depth == 0) {
        /* an automatic dynamic int (variables.c): int arithmetic gives another; with a tensor
         * its graph value (a 0-d int64: the same result dtype as a Python int's, but against
         * a 0-d integer tensor of another dtype, which then specializes it) */
        int base0 = nb >= 13 ? nb - 13 : nb;
        if (a->kind == V_CONST && b->kind == V_CONST) {
            int r = sym_dynint_binary(t, nb, a, b, out);
            if (r != 0)
                return r < 0 ? -1 : 0;
        } else if ((a->kind == V_TENSOR || b->kind == V_TENSOR) &&
                   (base0 == 0 || base0 == 5 || base0 == 10 || base0 == 11 || base0 == 2 || base0 == 6)) {
            var *c = a->kind == V_CONST ? a : b, *tv = c == a ? b : a;
            const ic_meta *m = c->dyn && tv->kind == V_TENSOR ? sym_metap(t, tv->val) : NULL;
            if (m != NULL && !(m->ndim == 0 && m->dtype != IC_I64 &&
                               (m->dtype == IC_U8 || m->dtype == IC_I8 || m->dtype == IC_I16 || m->dtype == IC_I32))) {
                ic_val gv;
                int r = sym_dynint_val(t, c, &gv);
                if (r < 0)
                    return -1;
                if (r == 1) {
                    *c = sym_var(V_TENSOR);
                    c->val = gv;
                    t->dyn_inst = t->cur_inst;
                    if (c == a && nb >= 13) /* k += x of an int k: a new tensor (int has no __iadd__) */
                        nb -= 13;
                }
            }
        }
    }
    if (t->tfm_active > 0 && (a->kind == V_TENSOR || b->kind == V_TENSOR)) { /* sym_tfm.c */
        char nm[24];
        int refl = a->kind != V_TENSOR;
        if (sym_tfm_binop_name(nb, nm, sizeof nm) == NULL)
            return sym_fail(t, "operator %d on a tensor inside a TorchFunctionMode block", nb);
        var two[2] = {refl ? *b : *a, refl ? *a : *b};
        return sym_tfm_operator(t, nm, refl, two, 2, out);
    }
    if (t->vm_depth > 0 && sym_vmap_align2(t, a, b) < 0) /* inside a torch.vmap'd function (sym_vmap.c) */
        return -1;
    int inplace = nb >= 13;
    int base = inplace ? nb - 13 : nb;
    if (dh_tl_autocast && (base == 4 || base == 8) && (a->kind != V_CONST || b->kind != V_CONST)) {
        ic_dtype to = IC_F32;
        int policy = dh_autocast_policy(t, base == 4 ? "matmul" : "pow", &to);
        if (policy < 0)
            return sym_fail(t, "autocast is enabled and %s casts under it (not captured)",
                            base == 4 ? "matmul" : "pow");
        var *ca, *cb;
        if (policy == 1 && (dh_autocast_arg(t, a, to, &ca) < 0 || dh_autocast_arg(t, b, to, &cb) < 0))
            return -1;
        if (policy == 1) { /* a @ b under autocast: the operands cast as eager's (autocast.c) */
            av = *ca;
            bv = *cb;
        }
    }
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
            (void)tc_clear_expected(PyExc_Exception);
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
        *out = sym_var(V_SEQ);
        out->is_list = la;
        out->n = na + nb2;
        out->items = m;
        return 0;
    }
    if (base == 5 && ((a->kind == V_SEQ && b->kind == V_CONST && PyLong_CheckExact(b->obj)) ||
                      (b->kind == V_SEQ && a->kind == V_CONST && PyLong_CheckExact(a->obj)))) {
        /* [x] * n: a new sequence, the items repeated */
        const var *sq = a->kind == V_SEQ ? a : b;
        int ovf = 0;
        long k = PyLong_AsLongAndOverflow((a->kind == V_SEQ ? b : a)->obj, &ovf);
        if (ovf) /* eager: OverflowError, cannot fit 'int' into an index-sized integer */
            return sym_fail(t, "sequence repetition by an int out of range (eager will raise)");
        if (k < 0)
            k = 0;
        if (k > dh_limit.max_unroll || (long)sq->n * k > 16L * dh_limit.max_unroll)
            return sym_fail(t, "sequence repetition too long (torchc.config.max_unroll)");
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
    if (a->kind == V_DICT || b->kind == V_DICT) { /* Counter + Counter & co (obj_data.c) */
        int rc = sym_counter_binary(t, nb, a, b, out);
        if (rc != 1)
            return rc;
    }
    if (base == 7 && a->kind == V_DICT) /* d | other, d |= other (sym_containers.c) */
        return sym_dict_or(t, a, b, inplace, out);
    if (a->kind == V_TENSOR || b->kind == V_TENSOR) { /* complex operands (ops_complex.c) */
        int rc = sym_complex_binary(t, base, inplace, a, b, out);
        if (rc != 1)
            return rc;
    }
    if (a->kind == V_OBJ || b->kind == V_OBJ) { /* a Python class's __add__ & co (obj_proto.c) */
        int rc = sym_obj_binary(t, nb, a, b, out);
        if (rc != 1)
            return rc;
    }
    if (a->kind != V_TENSOR && b->kind != V_TENSOR)
        return sym_fail(t, "binary op on unsupported values");
    if (base == 10 && sym_sub_bool_check(t, a, b) < 0)
        return -1;
    if (inplace && a->kind == V_TENSOR) {
        /* x += y: compute, then update x in place (x stays the same object) */
        var r;
        if (sym_inplace_overlap_check(t, a, b, 1) < 0)
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
        if (sym_as_tensor(t, a, &x) < 0 || sym_as_tensor(t, b, &y) < 0)
            return -1;
        if (ic_value_meta(t->g, x)->dtype != IC_BOOL || ic_value_meta(t->g, y)->dtype != IC_BOOL)
            return sym_tensor_out(t, ic_binary(t->g, base == 1 ? IC_OP_BITWISE_AND : IC_OP_BITWISE_OR, x, y), out);
        return sym_tensor_out(t, ic_binary(t->g, base == 1 ? IC_OP_LOGICAL_AND : IC_OP_LOGICAL_OR, x, y), out);
    }
    case 2: op = IC_OP_FLOOR_DIVIDE; break;
    case 6: op = IC_OP_REMAINDER; break;
    case 12: op = IC_OP_BITWISE_XOR; break;
    case 3: op = IC_OP_LSHIFT; break;
    case 9: op = IC_OP_RSHIFT; break;
    case 4: {
        /* a @ b: an extern (ATen) node inside the graph */
        if (a->kind != V_TENSOR || b->kind != V_TENSOR)
            return sym_fail(t, "matmul (@) of a non-tensor");
        ic_val ab[2] = {a->val, b->val};
        if (sym_outer_product(t, ab[0], ab[1]))
            return sym_tensor_out(t, ic_binary(t->g, IC_OP_MUL, ab[0], ab[1]), out);
        return sym_tensor_out(t, ic_extern(t->g, IC_EXT_MATMUL, 2, ab, 0, NULL, 1, 1), out);
    }
    default: return sym_fail(t, "binary op %d on tensors not supported yet", nb);
    }
    ic_val x, y;
    if (sym_as_tensor(t, a, &x) < 0 || sym_as_tensor(t, b, &y) < 0)
        return -1;
    if (sym_int_div_check(t, op, x, y, b) < 0)
        return -1;
    if (a->kind != V_TENSOR && b->kind == V_TENSOR && (op == IC_OP_MUL || op == IC_OP_DIV)) {
        /* number * x is x.__rmul__(number): mul(x, number), the number the second operand
         * (for half types that decides its rounding: lower.c); number / x is
         * x.__rtruediv__(number): x.reciprocal() * number, rounded twice as in eager */
        ic_val r = op == IC_OP_MUL ? ic_binary(t->g, IC_OP_MUL, y, x)
                                   : ic_binary(t->g, IC_OP_MUL, ic_unary(t->g, IC_OP_RECIPROCAL, y), x);
        return sym_tensor_out(t, r, out);
    }
    if (sym_tensor_out(t, op == IC_OP_FLOOR_DIVIDE ? sym_floor_divide(t, x, y) : ic_binary(t->g, op, x, y), out) < 0)
        return -1;
    if (op == IC_OP_POW) /* x ** 2: pow(Tensor, Scalar); 2 ** x: pow(Scalar, Tensor) */
        dh_layout_scalar_args(t, a, b, out);
    return 0;
}

static int neg_impl(trace *t, const var *a_in, var *out) {
    var av = *a_in, *a = &av;
    sym_resolve(t, a);
    if (a->kind == V_CONST)
        return sym_const(t, PyNumber_Negative(a->obj), out) < 0
                   ? ((void)tc_clear_expected(PyExc_Exception), sym_fail(t, "negation of a constant raised"))
                   : 0;
    if (a->kind != V_TENSOR)
        return sym_fail(t, "negation of an unsupported value");
    if (t->tfm_active > 0) /* through the TorchFunctionMode (sym_tfm.c) */
        return sym_tfm_operator(t, "neg", 0, a, 1, out);
    int rc = sym_complex_operator(t, -1, a, NULL, out);
    if (rc != 1)
        return rc;
    return sym_tensor_out(t, ic_unary(t->g, IC_OP_NEG, a->val), out);
}

/* A tuple/list of constants (nested sequences too) as a new Python object; NULL without an
 * exception when an item is not a constant (a tensor, a symbolic size) */
static PyObject *const_seq(trace *t, const var *v_in, int depth) {
    var v = *v_in;
    sym_resolve(t, &v);
    if (v.kind == V_CONST) {
        Py_INCREF(v.obj);
        return v.obj;
    }
    if (v.kind != V_SEQ || v.obj != NULL || depth > 16)
        return NULL;
    PyObject *r = v.is_list ? PyList_New(v.n) : PyTuple_New(v.n);
    if (r == NULL)
        return NULL; /* MemoryError, left set (csrc/pyerr.h) */
    for (int i = 0; i < v.n; i++) {
        PyObject *it = const_seq(t, &v.items[i], depth + 1);
        if (it == NULL) {
            Py_DECREF(r);
            return NULL;
        }
        if (v.is_list)
            PyList_SET_ITEM(r, i, it);
        else
            PyTuple_SET_ITEM(r, i, it);
    }
    return r;
}

static int compare_impl(trace *t, int cmp, const var *a_in, const var *b_in, var *out) {
    var av = *a_in, bv = *b_in, *a = &av, *b = &bv;
    sym_resolve(t, a);
    sym_resolve(t, b);
    if (t->tfm_active > 0 && (a->kind == V_TENSOR || b->kind == V_TENSOR) && cmp >= 0 && cmp <= 5) { /* sym_tfm.c */
        int refl = a->kind != V_TENSOR;
        var two[2] = {refl ? *b : *a, refl ? *a : *b};
        return sym_tfm_operator(t, sym_tfm_cmp_name(cmp), refl, two, 2, out);
    }
    if (t->vm_depth > 0 && sym_vmap_align2(t, a, b) < 0) /* inside a torch.vmap'd function (sym_vmap.c) */
        return -1;
    if (a->kind == V_TENSOR || b->kind == V_TENSOR) { /* complex operands (ops_complex.c) */
        int rc = sym_complex_operator(t, cmp, a, b, out);
        if (rc != 1)
            return rc;
    }
    if ((a->kind == V_SEQ || b->kind == V_SEQ) && (a->kind == V_SEQ || a->kind == V_CONST) &&
        (b->kind == V_SEQ || b->kind == V_CONST)) {
        /* list(x.size()) == [b, t, h]: sequences of constants compare as Python does */
        PyObject *x = const_seq(t, a, 0), *y = x ? const_seq(t, b, 0) : NULL;
        if (x != NULL && y != NULL) {
            PyObject *r = PyObject_RichCompare(x, y, cmp);
            Py_DECREF(x);
            Py_DECREF(y);
            if (r == NULL) {
                (void)tc_clear_expected(PyExc_Exception);
                return sym_fail(t, "comparison of sequences raised");
            }
            return sym_const(t, r, out);
        }
        Py_XDECREF(x);
    }
    if (a->kind == V_CONST && b->kind == V_CONST) {
        PyObject *r = PyObject_RichCompare(a->obj, b->obj, cmp);
        if (r == NULL) {
            (void)tc_clear_expected(PyExc_Exception);
            return sym_fail(t, "constant comparison raised");
        }
        return sym_const(t, r, out);
    }
    if ((cmp == Py_EQ || cmp == Py_NE) && ((a->kind == V_DICT || a->kind == V_SEQ) != (b->kind == V_DICT || b->kind == V_SEQ))) {
        /* a dict or sequence against a str/number/None/bool: neither side's __eq__ knows the
         * other (NotImplemented both ways), so Python falls back to identity: unequal
         * (rope_type == "longrope" with a dict of rope types per layer) */
        const var *o = a->kind == V_DICT || a->kind == V_SEQ ? b : a;
        if (o->kind == V_CONST && (PyUnicode_CheckExact(o->obj) || PyLong_CheckExact(o->obj) || PyFloat_CheckExact(o->obj) ||
                                   PyBool_Check(o->obj) || o->obj == Py_None || PyBytes_CheckExact(o->obj)))
            return sym_const(t, PyBool_FromLong(cmp == Py_NE), out);
    }
    static const ic_op ops[6] = {IC_OP_LT, IC_OP_LE, IC_OP_EQ, IC_OP_NE, IC_OP_GT, IC_OP_GE};
    if (cmp < 0 || cmp > 5)
        return sym_fail(t, "bad comparison");
    ic_val x, y;
    if (a->kind == V_DICT || b->kind == V_DICT) { /* Counter == Counter (obj_data.c) */
        int rc = sym_counter_binary(t, 100 + cmp, a, b, out);
        if (rc != 1)
            return rc;
    }
    if (a->kind == V_OBJ || b->kind == V_OBJ) { /* a Python class's __eq__ & co (obj_proto.c) */
        int rc = sym_obj_compare(t, cmp, a, b, out);
        if (rc != 1)
            return rc;
    }
    if (a->kind != V_TENSOR && b->kind != V_TENSOR)
        return sym_fail(t, "comparison of unsupported values (kinds %d and %d)", a->kind, b->kind);
    if (sym_as_tensor(t, a, &x) < 0 || sym_as_tensor(t, b, &y) < 0)
        return -1;
    return sym_tensor_out(t, ic_binary(t->g, ops[cmp], x, y), out);
}

/* Python operators on tensors built from constants only: computed now (fold.c); operands of
 * ops that do not fold held to eager's device rules */
static int fold_op(trace *t, int code, const var *a_in, const var *b_in, var *out) {
    var av = *a_in, bv = b_in ? *b_in : sym_var(V_CONST);
    if (b_in == NULL)
        bv.obj = Py_None;
    sym_resolve(t, &av);
    if (b_in)
        sym_resolve(t, &bv);
    if (av.kind != V_TENSOR && bv.kind != V_TENSOR)
        return code == -1 ? neg_impl(t, a_in, out) : code >= 100 ? compare_impl(t, code - 100, a_in, b_in, out)
                                                                : binary_impl(t, code, a_in, b_in, out);
    sym_fold f;
    f.res = NULL;
    int rc = sym_fold_binary(t, code == -1 ? 200 : code, &av, &bv, &f, out);
    if (rc != 1 && rc != 2)
        return rc;
    int base = code >= 13 && code < 100 ? code - 13 : code;
    var two[2] = {av, bv};
    if (rc == 1 && sym_fold_check(t, two, b_in ? 2 : 1, base != 4) < 0)
        return -1;
    int rh = code == -1 ? neg_impl(t, a_in, out) : code >= 100 ? compare_impl(t, code - 100, a_in, b_in, out)
                                                               : binary_impl(t, code, a_in, b_in, out);
    if (rc == 2 && rh == 0 && sym_fold_attach(t, &f, out) < 0)
        return -1;
    sym_fold_clear(&f);
    return rh;
}

int sym_binary(trace *t, int nb, const var *a, const var *b, var *out) { return fold_op(t, nb, a, b, out); }
int sym_compare(trace *t, int cmp, const var *a, const var *b, var *out) {
    return cmp >= Py_LT && cmp <= Py_GE ? fold_op(t, 100 + cmp, a, b, out) : compare_impl(t, cmp, a, b, out);
}
int sym_neg(trace *t, const var *a, var *out) { return fold_op(t, -1, a, NULL, out); }
