/* lower.c — graph values to loop nodes.
 *
 * Requires: a verified graph (c->g) with final metas.
 * Produces: c->ln[v] for every value: L_INPUT (a buffer), L_CONST (a scalar), L_POINTWISE
 *   (body over one fresh index var per output dim), L_REDUCE (body over one var per input
 *   dim; red_mask tells which are reduced). Bodies load operands with X_LOAD(value, tuple),
 *   one index per operand dim. L_EXTERN: an extern call's result, read like an input. Broadcast, expand, permute and reshape are index maps here:
 *   no view ever copies. Operands are cast to the compute dtype (torch promotion); f16/bf16
 *   math is done in f32 and rounded back after every op (eager semantics); reductions of
 *   half types accumulate in f32.
 * Keeps: the graph. Breaks: nothing.
 */
#include "../ic_internal.h"
#include "../support.h"

static ic_xid load_bcast(ic_ctx *c, ic_val u, int nd, const int32_t *var) {
    const ic_meta *m = &c->g->nodes[u].meta;
    ic_ix t[IC_MAX_DIMS];
    int lead = nd - m->ndim;
    for (int e = 0; e < m->ndim; e++)
        t[e] = (m->sizes[e] == 1 || var[lead + e] < 0) ? ix_const(c, 0) : ix_var(c, var[lead + e]);
    if (c->g->nodes[u].op == IC_OP_SCALAR) return c->ln[u].body;
    return x_load(c, u, ixv_make(c, m->ndim, t), m->dtype);
}

static bool is_half(ic_dtype t) { return t == IC_F16 || t == IC_BF16; }

/* f16/bf16 math runs in f32 and rounds to the half type after each op, as eager does */
static ic_dtype compute_type(ic_dtype t) { return is_half(t) ? IC_F32 : t; }

static ic_xid op_in(ic_ctx *c, ic_op op, ic_dtype t, ic_dtype ct, ic_xid a, ic_xid b) {
    ic_dtype cc = compute_type(ct);
    ic_dtype rt = t == ct ? cc : t;
    ic_xid r = x_op(c, op, rt, x_cast(c, a, cc), b >= 0 ? x_cast(c, b, cc) : -1, -1);
    return x_cast(c, r, t);
}

/* An operand of another dtype than a half-type compute dtype ct (a Python number, a 0-d
 * tensor, an integer tensor) is rounded to ct first: eager's TensorIterator casts it to the
 * common dtype (a double through float, as c10::Half/BFloat16 convert), so x_f16 + 0.1 adds
 * f16(0.1) and x_f16 == 0.1 compares with it. Except the divisor or factor of mul/div/
 * floor_divide when it is one element: ATen's CPU kernels read that scalar's original value
 * in float32 (original_scalar_value<opmath_t>). */
static ic_xid half_operand(ic_ctx *c, ic_op op, int i, ic_val u, ic_dtype ct, ic_xid x) {
    const ic_meta *m = &c->g->nodes[u].meta;
    if (!is_half(ct) || m->dtype == ct) return x;
    if (c->device == IC_CUDA) {
        /* CUDA (measured on an H100, torch 2.11): a CPU scalar (a Python number) of add/sub/
         * mul/div/floor_divide is read unrounded by the opmath kernels (x_f16 + 0.1 adds
         * float(0.1)); a 0-d CUDA tensor is cast to the common dtype like any operand */
        bool scalar = c->g->nodes[u].op == IC_OP_SCALAR;
        if (scalar && (op == IC_OP_ADD || op == IC_OP_SUB || op == IC_OP_MUL || op == IC_OP_DIV ||
                       op == IC_OP_FLOOR_DIVIDE))
            return x;
    } else if (i == 1 && (op == IC_OP_MUL || op == IC_OP_DIV || op == IC_OP_FLOOR_DIVIDE)) {
        int64_t ne = 1;
        for (int d = 0; d < m->ndim; d++) ne *= m->sizes[d];
        if (ne == 1) return x;
    }
    if (m->dtype != IC_F32) x = x_cast(c, x, IC_F32);
    return x_cast(c, x, ct);
}

/* x ** e where eager's CPU kernel calls std::pow: every f16 pow, and any float pow whose
 * exponent is a tensor (a constant 0-d one too, torch.tensor(0.5)); a Python-number exponent
 * of the other float types takes ATen's sqrt/rsqrt shortcut for +-0.5, as codegen does for a
 * constant e. Where they differ the special values are put back: pow(-inf, 0.5) = inf,
 * pow(-0, 0.5) = +0, pow(-inf, -0.5) = +0, pow(-0, -0.5) = inf */
static ic_xid pow_std(ic_ctx *c, ic_dtype t, ic_val ev, ic_xid a, ic_xid b) {
    ic_dtype ct = compute_type(t);
    ic_xid af = x_cast(c, a, ct), r = x_op(c, IC_OP_POW, ct, af, x_cast(c, b, ct), -1);
    while (c->g->nodes[ev].op == IC_OP_CAST || c->g->nodes[ev].op == IC_OP_EXPAND ||
           c->g->nodes[ev].op == IC_OP_RESHAPE) /* a constant exponent: a number, cast, expanded */
        ev = c->g->nodes[ev].in[0];
    double e = c->g->nodes[ev].op == IC_OP_SCALAR ? c->g->nodes[ev].num : 0;
    if (e == 0.5 || e == -0.5) {
        bool neg = e < 0;
        ic_xid minf = x_op(c, IC_OP_EQ, IC_BOOL, af, x_const(c, -__builtin_inf(), ct), -1);
        ic_xid zero = x_op(c, IC_OP_EQ, IC_BOOL, af, x_const(c, 0.0, ct), -1);
        r = x_op(c, IC_OP_WHERE, ct, zero, x_const(c, neg ? __builtin_inf() : 0.0, ct), r);
        r = x_op(c, IC_OP_WHERE, ct, minf, x_const(c, neg ? 0.0 : __builtin_inf(), ct), r);
    }
    return x_cast(c, r, t);
}

static ic_xid lower_pointwise(ic_ctx *c, ic_val v, const ic_node *n, const int32_t *var) {
    int nd = n->meta.ndim;
    ic_dtype t = n->meta.dtype;
    ic_kind k = ic_op_kind(n->op);
    if (k == IC_K_UNARY) {
        ic_xid a = load_bcast(c, n->in[0], nd, var);
        ic_dtype ct = n->op == IC_OP_LOGICAL_NOT ? IC_BOOL : t;
        if (n->op == IC_OP_ISNAN || n->op == IC_OP_ISINF || n->op == IC_OP_ISFINITE)
            ct = c->g->nodes[n->in[0]].meta.dtype;
        return op_in(c, n->op, t, ct, a, -1);
    }
    if (k == IC_K_BINARY) {
        ic_xid a = load_bcast(c, n->in[0], nd, var);
        ic_xid b = load_bcast(c, n->in[1], nd, var);
        ic_dtype ct = t;
        if (n->op >= IC_OP_EQ && n->op <= IC_OP_GE) ct = ic_result_type(c->g, n->in, 2);
        if (n->op == IC_OP_LOGICAL_AND || n->op == IC_OP_LOGICAL_OR || n->op == IC_OP_LOGICAL_XOR) ct = IC_BOOL;
        a = half_operand(c, n->op, 0, n->in[0], ct, a);
        b = half_operand(c, n->op, 1, n->in[1], ct, b);
        if (n->op == IC_OP_POW && ic_is_float(t) && c->device != IC_CUDA &&
            (t == IC_F16 || c->g->nodes[n->in[1]].op != IC_OP_SCALAR))
            return pow_std(c, t, n->in[1], a, b);
        return op_in(c, n->op, t, ct, a, b);
    }
    if (n->op == IC_OP_WHERE) {
        ic_xid w = load_bcast(c, n->in[0], nd, var);
        ic_xid a = load_bcast(c, n->in[1], nd, var);
        ic_xid b = load_bcast(c, n->in[2], nd, var);
        return x_op(c, IC_OP_WHERE, t, x_cast(c, w, IC_BOOL), x_cast(c, a, t), x_cast(c, b, t));
    }
    if (n->op == IC_OP_CAST) return x_cast(c, load_bcast(c, n->in[0], nd, var), t);
    if (n->op == IC_OP_ARANGE) {
        ic_xid i = var[0] < 0 ? x_const(c, 0, IC_I64) : x_ixval(c, ix_var(c, var[0]));
        if (ic_is_float(t)) {
            ic_xid f = x_op(c, IC_OP_MUL, IC_F64, x_cast(c, i, IC_F64), x_const(c, n->num2, IC_F64), -1);
            return x_cast(c, x_op(c, IC_OP_ADD, IC_F64, f, x_const(c, n->num, IC_F64), -1), t);
        }
        ic_xid f = x_op(c, IC_OP_MUL, IC_I64, i, x_const(c, n->num2, IC_I64), -1);
        return x_cast(c, x_op(c, IC_OP_ADD, IC_I64, f, x_const(c, n->num, IC_I64), -1), t);
    }
    if (n->op == IC_OP_CAT) {
        /* where(i < na, a[i], b[i - na]); b's loads at i < na (and a's beyond) are never
         * used, and codegen keeps such out-of-range loads inside the buffers */
        int d = n->dim;
        ic_val a = n->in[0], b = n->in[1];
        int64_t na = c->g->nodes[a].meta.sizes[d];
        ic_ix T[IC_MAX_DIMS] = {0}, U[IC_MAX_DIMS] = {0};
        for (int i = 0; i < nd; i++) T[i] = U[i] = var[i] < 0 ? ix_const(c, 0) : ix_var(c, var[i]);
        U[d] = ix_add(c, T[d], ix_const(c, -na));
        /* size-1 dims of an operand index 0 */
        ic_ix Ta[IC_MAX_DIMS], Ub[IC_MAX_DIMS];
        for (int i = 0; i < nd; i++) {
            Ta[i] = c->g->nodes[a].meta.sizes[i] == 1 ? ix_const(c, 0) : T[i];
            Ub[i] = c->g->nodes[b].meta.sizes[i] == 1 ? ix_const(c, 0) : U[i];
        }
        const ic_dtype ta = c->g->nodes[a].meta.dtype, tb = c->g->nodes[b].meta.dtype;
        ic_xid la = x_cast(c, x_load(c, a, ixv_make(c, nd, Ta), ta), t);
        ic_xid lb = x_cast(c, x_load(c, b, ixv_make(c, nd, Ub), tb), t);
        if (na == 0) return lb;
        if (c->g->nodes[b].meta.sizes[d] == 0) return la;
        ic_xid cond = x_op(c, IC_OP_LT, IC_BOOL, x_ixval(c, T[d]), x_const(c, (double)na, IC_I64), -1);
        return x_op(c, IC_OP_WHERE, t, cond, la, lb);
    }
    if (n->op == IC_OP_INDEX_SELECT) {
        int d = n->dim;
        ic_val a = n->in[0], ix = n->in[1];
        const ic_meta *am = &c->g->nodes[a].meta;
        ic_ix T[IC_MAX_DIMS];
        for (int i = 0; i < nd; i++) T[i] = var[i] < 0 || i == d ? ix_const(c, 0) : ix_var(c, var[i]);
        ic_ix it[1] = {var[d] < 0 ? ix_const(c, 0) : ix_var(c, var[d])};
        const ic_meta *im = &c->g->nodes[ix].meta;
        ic_xid idx = x_load(c, ix, ixv_make(c, im->ndim, it), im->dtype);
        return x_gather(c, a, ixv_make(c, am->ndim, T), d, x_cast(c, idx, IC_I64), am->dtype);
    }
    /* views */
    ic_val a = n->in[0];
    const ic_meta *am = &c->g->nodes[a].meta;
    if (c->g->nodes[a].op == IC_OP_SCALAR) return c->ln[a].body;
    ic_ix T[IC_MAX_DIMS];
    if (n->op == IC_OP_EXPAND) return load_bcast(c, a, nd, var);
    if (n->op == IC_OP_SLICE) {
        for (int i = 0; i < nd; i++) T[i] = var[i] < 0 ? ix_const(c, 0) : ix_var(c, var[i]);
        T[n->dim] = ix_add(c, ix_scale(c, T[n->dim], n->step), ix_const(c, n->start));
        if (am->sizes[n->dim] == 1) T[n->dim] = ix_const(c, 0);
        return x_load(c, a, ixv_make(c, am->ndim, T), am->dtype);
    }
    if (n->op == IC_OP_PERMUTE) {
        for (int i = 0; i < nd; i++)
            T[n->perm[i]] = var[i] < 0 ? ix_const(c, 0) : ix_var(c, var[i]);
    } else if (n->op == IC_OP_RESHAPE) {
        ic_ix lin = ix_const(c, 0);
        for (int j = 0; j < nd; j++)
            if (var[j] >= 0)
                lin = ix_add(c, lin, ix_scale(c, ix_var(c, var[j]), n->meta.strides[j]));
        ic_meta cm = *am;
        ic_contiguous_strides(&cm);
        int64_t before = 1; /* elements of the dims before i */
        for (int i = 0; i < am->ndim; i++) {
            int64_t md = am->sizes[i];
            /* a symbolic size is only possible without a modulus: lin // stride < size
             * holds when every earlier dim has size 1 */
            if (ic_tainted(c, md)) {
                if (before != 1) ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: reshape splitting a symbolic dim");
                md = 0;
            }
            T[i] = am->sizes[i] == 1 ? ix_const(c, 0) : ix_mod(c, ix_div(c, lin, cm.strides[i]), md);
            before *= am->sizes[i];
        }
    } else {
        ic_fail(c, IC_EUNSUPPORTED, "lowering of %s is not implemented", ic_op_name(n->op));
    }
    (void)v;
    return x_load(c, a, ixv_make(c, am->ndim, T), am->dtype);
}

void ic_lower(ic_ctx *c) {
    const ic_graph *g = c->g;
    c->ln = ic_alloc(c, (size_t)g->n * sizeof(ic_lnode));
    for (ic_val v = 0; v < g->n; v++) {
        const ic_node *n = &g->nodes[v];
        ic_lnode *L = &c->ln[v];
        if (n->op == IC_OP_INPUT || n->op == IC_OP_EXTERN) {
            L->kind = n->op == IC_OP_INPUT ? L_INPUT : L_EXTERN;
            L->body = L->body2 = -1;
            continue;
        }
        if (n->op == IC_OP_SCALAR) {
            L->kind = L_CONST;
            L->body2 = -1;
            L->body = x_const(c, n->num, n->meta.dtype);
            continue;
        }
        if (ic_op_kind(n->op) == IC_K_REDUCE) {
            ic_val a = n->in[0];
            const ic_meta *am = &g->nodes[a].meta;
            L->kind = L_REDUCE;
            L->ndim = am->ndim;
            L->red_mask = am->ndim ? n->dim_mask : 0;
            L->red_op = n->op;
            L->acc = compute_type(ic_is_arg(n->op) ? am->dtype : n->meta.dtype);
            L->body2 = -1;
            L->red_count = 1;
            ic_ix T[IC_MAX_DIMS];
            for (int d = 0; d < am->ndim; d++) {
                L->size[d] = am->sizes[d];
                L->var[d] = am->sizes[d] == 1 ? -1 : ic_new_var(c, am->sizes[d]);
                T[d] = L->var[d] < 0 ? ix_const(c, 0) : ix_var(c, L->var[d]);
                if ((L->red_mask >> d) & 1) L->red_count *= am->sizes[d];
            }
            ic_xid x = g->nodes[a].op == IC_OP_SCALAR
                           ? c->ln[a].body
                           : x_load(c, a, ixv_make(c, am->ndim, T), am->dtype);
            /* sum(dtype=torch.float16) of an integer tensor: eager casts each element to the
             * result dtype, then accumulates (in f32 for the half types); mean(dtype=) sums the
             * input cast to f32 for a half result (ATen's mean_out on the CPU) */
            if (!ic_is_arg(n->op) && n->op != IC_OP_MEAN && n->meta.dtype != am->dtype)
                x = x_cast(c, x, n->meta.dtype);
            L->body = x_cast(c, x, L->acc);
            if (ic_is_arg(n->op)) {
                /* row-major index over the reduced dims */
                ic_ix li = ix_const(c, 0);
                for (int d = 0; d < am->ndim; d++)
                    if ((L->red_mask >> d) & 1) li = ix_add(c, ix_scale(c, li, am->sizes[d]), T[d]);
                L->body2 = x_ixval(c, li);
            }
            continue;
        }
        L->kind = L_POINTWISE;
        L->body2 = -1;
        L->ndim = n->meta.ndim;
        for (int d = 0; d < L->ndim; d++) {
            L->size[d] = n->meta.sizes[d];
            L->var[d] = n->meta.sizes[d] == 1 ? -1 : ic_new_var(c, n->meta.sizes[d]);
        }
        L->body = lower_pointwise(c, v, n, L->var);
    }
}

void ic_loops_print(ic_ctx *c, ic_str *s) {
    const ic_graph *g = c->g;
    for (ic_val v = 0; v < g->n; v++) {
        const ic_lnode *L = &c->ln[v];
        if (L->kind == L_INPUT || L->kind == L_CONST) continue;
        if (L->kind == L_EXTERN) {
            ic_str_printf(s, "%%%d = extern %s\n", v, ic_extern_name(g->nodes[v].ext_kind));
            continue;
        }
        if (c->live && !c->live[v]) continue;
        ic_str_printf(s, "%%%d = %s %s[", v, L->kind == L_REDUCE ? "reduction" : "pointwise",
                      ic_op_name(g->nodes[v].op));
        for (int d = 0; d < L->ndim; d++)
            ic_str_printf(s, "%s%s%lld", d ? "," : "",
                          L->kind == L_REDUCE && ((L->red_mask >> d) & 1) ? "r" : "",
                          (long long)L->size[d]);
        ic_str_printf(s, "] vars (");
        for (int d = 0; d < L->ndim; d++) {
            if (L->var[d] < 0) ic_str_printf(s, "%s0", d ? ", " : "");
            else ic_str_printf(s, "%si%d", d ? ", " : "", L->var[d]);
        }
        ic_str_printf(s, ")\n");
        x_print(c, s, L->body);
    }
}
