/* expr.c — the expression DAG that forms loop bodies (hash-consed: common
 * subexpressions share one node, so a body is a DAG and CSE is free).
 *
 * Contract: constructors never fold across loads; X_OP operands already have the compute
 * dtype (lowering inserts X_CAST), so codegen needs no promotion logic.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../ic_internal.h"
#include "../support.h"

static bool x_eq(ic_ctx *c, int32_t a, int32_t b) {
    const ic_x *x = &c->xs[a], *y = &c->xs[b];
    return x->kind == y->kind && x->dtype == y->dtype && x->op == y->op && x->a == y->a &&
           x->b == y->b && x->c == y->c && x->buf == y->buf && x->ix == y->ix && x->aux == y->aux &&
           memcmp(&x->cval, &y->cval, sizeof(double)) == 0;
}

ic_xid x_intern(ic_ctx *c, const ic_x *x) {
    *IC_PUSH(c, c->xs, c->nxs, c->xs_cap) = *x;
    int32_t cand = c->nxs - 1;
    uint64_t bits;
    memcpy(&bits, &x->cval, sizeof bits);
    uint64_t h = ic_hmix(ic_hmix((uint64_t)x->kind, (uint64_t)x->dtype), (uint64_t)x->op);
    h = ic_hmix(ic_hmix(h, (uint64_t)x->a), ic_hmix((uint64_t)x->b, (uint64_t)x->c));
    h = ic_hmix(ic_hmix(h, (uint64_t)x->buf), ic_hmix((uint64_t)x->ix, bits));
    h = ic_hmix(h, (uint64_t)x->aux);
    int32_t id = ic_hintern(c, &c->h_x, h, cand, x_eq);
    if (id != cand) c->nxs--;
    return id;
}

/* f (a float) rounded to float16 / bfloat16 precision, to nearest even; NaN and inf kept */
static double round_half_type(float f, ic_dtype t) {
    if (f != f || isinf(f) || f == 0) return f;
    if (t == IC_BF16) {
        uint32_t u;
        memcpy(&u, &f, 4);
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
        memcpy(&f, &u, 4);
        return f;
    }
    double a = fabs((double)f);
    if (a >= 65520.0) return f < 0 ? -INFINITY : INFINITY;
    int e;
    (void)frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): a's unit in the last place is 2^(e-11) */
    double q = ldexp(1.0, (e - 11 < -24 ? -24 : e - 11));
    double r = nearbyint(a / q) * q;
    return f < 0 ? -r : r;
}

ic_xid x_const(ic_ctx *c, double v, ic_dtype t) {
    if (t == IC_BOOL) v = v != 0;
    else if (t == IC_F32) v = (float)v;
    else if (t == IC_F16 || t == IC_BF16) v = round_half_type((float)v, t); /* through float, as c10 converts */
    else if (!ic_is_float(t)) v = trunc(v);
    ic_x x = {.kind = X_CONST, .dtype = t, .a = -1, .b = -1, .c = -1, .buf = -1, .ix = -1, .cval = v};
    return x_intern(c, &x);
}

ic_xid x_load(ic_ctx *c, ic_val v, ic_ixv t, ic_dtype dt) {
    ic_x x = {.kind = X_LOAD, .dtype = dt, .a = -1, .b = -1, .c = -1, .buf = v, .ix = t};
    return x_intern(c, &x);
}

ic_xid x_loadf(ic_ctx *c, int buf, ic_ix off, ic_dtype dt) {
    ic_x x = {.kind = X_LOADF, .dtype = dt, .a = -1, .b = -1, .c = -1, .buf = buf, .ix = off};
    return x_intern(c, &x);
}

ic_xid x_op(ic_ctx *c, ic_op op, ic_dtype t, ic_xid a, ic_xid b, ic_xid cc) {
    ic_x x = {.kind = X_OP, .dtype = t, .op = op, .a = a, .b = b, .c = cc, .buf = -1, .ix = -1};
    return x_intern(c, &x);
}

ic_xid x_cast(ic_ctx *c, ic_xid a, ic_dtype t) {
    const ic_x *s = &c->xs[a];
    if (s->dtype == t) return a;
    /* a constant folds, except a float out of int32's range (NaN and inf included) cast to
     * an integer: its value is the target's (ol_fp_to_int: x86's cvtt minimum, CUDA's
     * saturation), so the cast is emitted on the constant */
    if (s->kind == X_CONST &&
        !(ic_is_float(s->dtype) && t != IC_BOOL && !ic_is_float(t) && !(fabs(s->cval) < 2147483648.0)))
        return x_const(c, s->cval, t);
    ic_x x = {.kind = X_CAST, .dtype = t, .a = a, .b = -1, .c = -1, .buf = -1, .ix = -1};
    return x_intern(c, &x);
}

ic_xid x_rowval(ic_ctx *c, int item, ic_dtype t) {
    ic_x x = {.kind = X_ROWVAL, .dtype = t, .a = item, .b = -1, .c = -1, .buf = -1, .ix = -1};
    return x_intern(c, &x);
}

ic_xid x_ixval(ic_ctx *c, ic_ix ix) {
    ic_x x = {.kind = X_IXVAL, .dtype = IC_I64, .a = -1, .b = -1, .c = -1, .buf = -1, .ix = ix};
    return x_intern(c, &x);
}

ic_xid x_gather(ic_ctx *c, ic_val v, ic_ixv t, int dim, ic_xid index, ic_dtype dt) {
    ic_x x = {.kind = X_GATHER, .dtype = dt, .a = index, .b = -1, .c = -1, .buf = v, .ix = t, .aux = dim};
    return x_intern(c, &x);
}

ic_xid x_gatherf(ic_ctx *c, int buf, ic_ix off, ic_xid index, int64_t stride, int64_t size, ic_dtype dt) {
    ic_x x = {.kind = X_LOADF, .dtype = dt, .a = index, .b = -1, .c = -1, .buf = buf, .ix = off,
              .aux = (int32_t)(size > INT32_MAX ? INT32_MAX : size), .cval = (double)stride};
    return x_intern(c, &x);
}

/* Prints the DAG rooted at root as a let-list: "t5 = exp f32 t4". */
static void pr(ic_ctx *c, ic_str *s, ic_xid id, uint8_t *seen) {
    if (seen[id]) return;
    seen[id] = 1;
    const ic_x *x = &c->xs[id];
    if (x->a >= 0 && x->kind != X_ROWVAL) pr(c, s, x->a, seen);
    if (x->b >= 0) pr(c, s, x->b, seen);
    if (x->c >= 0) pr(c, s, x->c, seen);
    ic_str_printf(s, "    t%d = ", id);
    switch (x->kind) {
    case X_CONST:
        ic_str_printf(s, "const %.9g", x->cval);
        break;
    case X_LOAD:
        ic_str_printf(s, "load %%%d[", x->buf);
        for (int i = 0; i < ixv_len(c, x->ix); i++) {
            if (i) ic_str_printf(s, ", ");
            ix_print(c, s, ixv_get(c, x->ix, i));
        }
        ic_str_printf(s, "]");
        break;
    case X_LOADF:
        ic_str_printf(s, "load buf%d[", x->buf);
        ix_print(c, s, x->ix);
        if (x->a >= 0) ic_str_printf(s, " + %.0f*clamp(t%d, %d)", x->cval, x->a, x->aux);
        ic_str_printf(s, "]");
        break;
    case X_IXVAL:
        ic_str_printf(s, "index ");
        ix_print(c, s, x->ix);
        break;
    case X_GATHER:
        ic_str_printf(s, "gather %%%d[", x->buf);
        for (int i = 0; i < ixv_len(c, x->ix); i++) {
            if (i) ic_str_printf(s, ", ");
            if (i == x->aux) ic_str_printf(s, "t%d", x->a);
            else ix_print(c, s, ixv_get(c, x->ix, i));
        }
        ic_str_printf(s, "]");
        break;
    case X_OP:
        ic_str_printf(s, "%s t%d", ic_op_name(x->op), x->a);
        if (x->b >= 0) ic_str_printf(s, " t%d", x->b);
        if (x->c >= 0) ic_str_printf(s, " t%d", x->c);
        break;
    case X_CAST:
        ic_str_printf(s, "cast t%d", x->a);
        break;
    case X_ROWVAL:
        ic_str_printf(s, "rowval item%d", x->a);
        break;
    }
    ic_str_printf(s, " : %s\n", ic_dtype_name(x->dtype));
}

void x_print(ic_ctx *c, ic_str *s, ic_xid root) {
    uint8_t *seen = ic_alloc(c, (size_t)c->nxs);
    pr(c, s, root, seen);
}

void x_mark_bufs(ic_ctx *c, ic_xid x, int *used) {
    if (!ic_marks_add(&c->xmark, x))
        return;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF)
        used[e->buf] |= 1;
    if (e->kind == X_ROWVAL)
        return;
    if (e->a >= 0)
        x_mark_bufs(c, e->a, used);
    if (e->b >= 0)
        x_mark_bufs(c, e->b, used);
    if (e->c >= 0)
        x_mark_bufs(c, e->c, used);
}
