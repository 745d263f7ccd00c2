/* graph.c — graph building with shape and dtype inference (the ic.h builders).
 *
 * Contract: requires nothing; every builder either appends one node whose meta is final
 * (shape broadcast, torch.result_type promotion, contiguous strides) or puts the graph in
 * its sticky error state (IC_EINVALID: eager would raise; IC_EUNSUPPORTED: fall back;
 * IC_ENOMEM). Nodes only reference earlier nodes, so node order is a topological order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"

static const struct {
    const char *name;
    int nin;
    ic_kind kind;
} optab[] = {
#define IC_X_TAB(name, text, nin, kind, flags) {text, nin, kind},
    IC_OPS(IC_X_TAB)
#undef IC_X_TAB
};
_Static_assert(sizeof(optab) / sizeof(optab[0]) == IC_OP_COUNT, "op table size");

IC_API const char *ic_op_name(ic_op op) {
    return (unsigned)op < IC_OP_COUNT ? optab[op].name : "?";
}
ic_kind ic_op_kind(ic_op op) { return optab[op].kind; }

static const char *dtnames[IC_DTYPE_COUNT] = {"bool", "u8",  "i8",   "i16", "i32", "i64",
                                              "f16",  "bf16", "f32", "f64", "c64", "c128"};
static const size_t dtsizes[IC_DTYPE_COUNT] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};

IC_API const char *ic_dtype_name(ic_dtype t) {
    return (unsigned)t < IC_DTYPE_COUNT ? dtnames[t] : "?";
}
IC_API size_t ic_dtype_size(ic_dtype t) { return (unsigned)t < IC_DTYPE_COUNT ? dtsizes[t] : 0; }

bool ic_is_float(ic_dtype t) { return t == IC_F16 || t == IC_BF16 || t == IC_F32 || t == IC_F64; }
bool ic_is_int(ic_dtype t) { return t >= IC_U8 && t <= IC_I64; }

/* torch.promote_types over the supported dtypes */
ic_dtype ic_promote(ic_dtype a, ic_dtype b) {
    if (a == b) return a;
    if (a == IC_BOOL) return b;
    if (b == IC_BOOL) return a;
    if (ic_is_float(a) != ic_is_float(b)) return ic_is_float(a) ? a : b;
    if (ic_is_float(a)) {
        if ((a == IC_F16 && b == IC_BF16) || (a == IC_BF16 && b == IC_F16)) return IC_F32;
        return a > b ? a : b;
    }
    /* ints: u8 with a signed type needs a wider signed type */
    if (a == IC_U8 || b == IC_U8) {
        ic_dtype s = a == IC_U8 ? b : a;
        return s == IC_I8 ? IC_I16 : s;
    }
    return a > b ? a : b;
}

int64_t ic_numel(const ic_meta *m) {
    int64_t n = 1;
    for (int i = 0; i < m->ndim; i++) n *= m->sizes[i];
    return n;
}

void ic_contiguous_strides(ic_meta *m) {
    int64_t s = 1;
    for (int i = m->ndim - 1; i >= 0; i--) {
        m->strides[i] = s;
        s *= m->sizes[i] > 1 ? m->sizes[i] : 1;
    }
}

/* ---- error state ----------------------------------------------------------------------- */
static ic_val fail(ic_graph *g, ic_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ic_val fail(ic_graph *g, ic_errcode code, const char *fmt, ...) {
    if (g->err == IC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->msg, sizeof g->msg, fmt, ap);
        va_end(ap);
        g->err = code;
    }
    return IC_NONE;
}

IC_API ic_graph *ic_graph_new(void) { return calloc(1, sizeof(ic_graph)); }

IC_API void ic_graph_set_cuda(ic_graph *g, int on) { g->cuda = on != 0; }

IC_API void ic_graph_set_default_dtype(ic_graph *g, ic_dtype d) {
    if (g && ic_is_float(d)) g->dflt = (int)d + 1;
}

IC_API void ic_graph_free(ic_graph *g) {
    if (!g) return;
    ic_custom_free(g);
    ic_rg_free(g);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->into);
    free(g);
}

IC_API const char *ic_graph_error(const ic_graph *g) { return g->err ? g->msg : NULL; }
IC_API ic_errcode ic_graph_errcode(const ic_graph *g) { return g->err; }

static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

/* A symbolic meta: hint sizes from the dims, contiguous strides; dyn = 0 (and dims
 * cleared) when every dim turned out static. */
static bool finish_dyn(ic_graph *g, ic_meta *m) {
    bool sym = false;
    for (int i = 0; i < m->ndim; i++) {
        int64_t v = ic_dim_eval(m->dims[i], g->sym_hint);
        if (v < 0) return fail(g, IC_EUNSUPPORTED, "symbolic size overflows at the hint values"), false;
        m->sizes[i] = v;
        sym |= !ic_dim_is_static(m->dims[i]);
    }
    if (!sym) {
        m->dyn = 0;
        memset(m->dims, 0, sizeof m->dims);
    }
    ic_contiguous_strides(m);
    return true;
}

/* Complex values (IC_C64/IC_C128) live only in graph inputs and in CUSTOM externs (ATen
 * calls made by torchc/_complex_ops.py) and their results: no other node may produce or
 * read one, so no loop, kernel or other extern ever sees a complex element (neither
 * backend generates complex arithmetic). A builder that would make such a node fails with
 * IC_EUNSUPPORTED (the capture falls back with this reason). */
static bool complex_ok(ic_graph *g, const ic_node *n) {
    if (n->op == IC_OP_INPUT || (n->op == IC_OP_EXTERN && n->ext_kind == IC_EXT_CUSTOM)) return true;
    bool cx = ic_dtype_is_complex(n->meta.dtype);
    for (int i = 0; i < IC_NIN && !cx; i++)
        cx = n->in[i] >= 0 && n->in[i] < g->n && ic_dtype_is_complex(g->nodes[n->in[i]].meta.dtype);
    if (cx) fail(g, IC_EUNSUPPORTED, "complex value in a %s node (complex tensors are only ATen extern operands)",
                 ic_op_name(n->op));
    return !cx;
}

static ic_val append(ic_graph *g, const ic_node *n) {
    if (!complex_ok(g, n)) return IC_NONE;
    if (!grow((void **)&g->nodes, &g->cap, g->n + 1, sizeof(ic_node)))
        return fail(g, IC_ENOMEM, "out of memory");
    g->nodes[g->n] = *n;
    if (n->meta.dyn && !finish_dyn(g, &g->nodes[g->n].meta)) return IC_NONE;
    ic_layout_infer(g, g->n); /* eager's strides (graph/strides.c) */
    if (n->op != IC_OP_INPUT && n->op != IC_OP_SCALAR) g->nops++;
    return g->n++;
}

static bool check(ic_graph *g, ic_val v) {
    if (g->err) return false;
    if (v < 0 || v >= g->n) {
        fail(g, IC_EINVALID, "invalid value handle %d", v);
        return false;
    }
    return true;
}

static bool check_meta(ic_graph *g, const ic_meta *m) {
    if ((unsigned)m->dtype >= IC_DTYPE_COUNT) return fail(g, IC_EINVALID, "bad dtype"), false;
    if (m->ndim < 0 || m->ndim > IC_MAX_DIMS)
        return fail(g, IC_EUNSUPPORTED, "ndim %d out of range", m->ndim), false;
    for (int i = 0; i < m->ndim; i++)
        if (m->sizes[i] < 0) return fail(g, IC_EINVALID, "negative size"), false;
    return true;
}

IC_API ic_val ic_input(ic_graph *g, const ic_meta *m) {
    if (g->err) return IC_NONE;
    if (!m || !check_meta(g, m)) return IC_NONE;
    if (!grow((void **)&g->inputs, &g->icap, g->ninputs + 1, sizeof(ic_val)))
        return fail(g, IC_ENOMEM, "out of memory");
    ic_node n = {.op = IC_OP_INPUT, .meta = *m, .in = IC_IN_NONE, .index = g->ninputs};
    n.meta.dyn = 0;
    memset(n.meta.dims, 0, sizeof n.meta.dims);
    ic_val v = append(g, &n);
    if (v >= 0) g->inputs[g->ninputs++] = v;
    return v;
}

/* Learns the hint of each symbol from dims coef * s_k; checks every dim against the hints. */
IC_API ic_val ic_input_dyn(ic_graph *g, const ic_meta *m) {
    if (g->err) return IC_NONE;
    if (!m || !check_meta(g, m)) return IC_NONE;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < m->ndim; i++) {
            ic_dim d = m->dims[i];
            int nsym = 0, k1 = -1;
            for (int k = 0; k < IC_MAX_SYMS; k++)
                if (d.exp[k]) nsym++, k1 = k;
            if (d.coef < 0 || (nsym && d.coef == 0))
                return fail(g, IC_EINVALID, "ic_input_dyn: bad symbolic size at dim %d", i);
            if (pass == 0 && nsym == 1 && d.exp[k1] == 1 && !g->sym_hint[k1]) {
                if (d.coef == 0 || m->sizes[i] % d.coef || m->sizes[i] / d.coef < 2)
                    return fail(g, IC_EINVALID,
                                "ic_input_dyn: hint %lld of dim %d is not a multiple >= 2 of %lld",
                                (long long)m->sizes[i], i, (long long)d.coef);
                g->sym_hint[k1] = m->sizes[i] / d.coef;
            }
            if (pass == 1) {
                for (int k = 0; k < IC_MAX_SYMS; k++)
                    if (d.exp[k] && !g->sym_hint[k])
                        return fail(g, IC_EUNSUPPORTED,
                                    "ic_input_dyn: no hint for symbol s%d (dim %d)", k, i);
                if (ic_dim_eval(d, g->sym_hint) != m->sizes[i])
                    return fail(g, IC_EINVALID,
                                "ic_input_dyn: hint size %lld of dim %d does not match its "
                                "symbolic size at the symbol hints",
                                (long long)m->sizes[i], i);
            }
        }
    }
    if (!grow((void **)&g->inputs, &g->icap, g->ninputs + 1, sizeof(ic_val)))
        return fail(g, IC_ENOMEM, "out of memory");
    ic_node n = {.op = IC_OP_INPUT, .meta = *m, .in = IC_IN_NONE, .index = g->ninputs};
    n.meta.dyn = 1;
    ic_val v = append(g, &n);
    if (v >= 0) g->inputs[g->ninputs++] = v;
    return v;
}

IC_API ic_val ic_scalar(ic_graph *g, double v, ic_dtype kind) {
    if (g->err) return IC_NONE;
    if (kind != IC_F64 && kind != IC_I64 && kind != IC_BOOL)
        return fail(g, IC_EINVALID, "scalar kind must be f64, i64 or bool");
    ic_node n = {.op = IC_OP_SCALAR, .num = v, .in = IC_IN_NONE};
    n.meta.dtype = kind;
    if (kind == IC_BOOL) n.num = v != 0;
    return append(g, &n);
}

/* ---- type promotion (torch.result_type) ------------------------------------------------ */
typedef struct {
    int dim, zero, wrapped; /* -1: none yet */
} rstate;

static int promote_skip(int a, int b) { return a < 0 ? b : b < 0 ? a : (int)ic_promote(a, b); }

static void rstate_add(const ic_graph *g, rstate *s, ic_val v) {
    const ic_node *n = &g->nodes[v];
    ic_dtype t = n->meta.dtype;
    if (n->op == IC_OP_SCALAR) {
        if (t == IC_F64) t = ic_default_float(g); /* wrapped floats take the default dtype */
        s->wrapped = promote_skip(s->wrapped, t);
    } else if (n->meta.ndim == 0) {
        s->zero = promote_skip(s->zero, t);
    } else {
        s->dim = promote_skip(s->dim, t);
    }
}

static int combine(int higher, int lower) {
    if (higher >= 0 && ic_is_float(higher)) return higher;
    if (higher == IC_BOOL || (lower >= 0 && ic_is_float(lower))) return promote_skip(higher, lower);
    if (higher >= 0) return higher;
    return lower;
}

ic_dtype ic_result_type(const ic_graph *g, const ic_val *v, int n) {
    rstate s = {-1, -1, -1};
    for (int i = 0; i < n; i++) rstate_add(g, &s, v[i]);
    int r = combine(s.dim, combine(s.zero, s.wrapped));
    return r < 0 ? IC_F32 : (ic_dtype)r;
}

/* ---- broadcasting --------------------------------------------------------------------- */
/* Symbolic broadcast: s vs s and s vs 1 only; s vs another size is not decidable here. */
static bool broadcast_dyn(ic_graph *g, const ic_val *v, int n, ic_meta *out) {
    for (int d = 0; d < out->ndim; d++) out->dims[d] = ic_dim_k(1);
    for (int i = 0; i < n; i++) {
        const ic_meta *m = &g->nodes[v[i]].meta;
        for (int d = 0; d < m->ndim; d++) {
            int od = out->ndim - m->ndim + d;
            ic_dim a = out->dims[od], b = ic_meta_dim(m, d);
            if (ic_dim_eq(a, b) || ic_dim_eq(b, ic_dim_k(1))) continue;
            if (ic_dim_eq(a, ic_dim_k(1))) {
                out->dims[od] = b;
                continue;
            }
            if (ic_dim_is_static(a) && ic_dim_is_static(b))
                return fail(g, IC_EINVALID,
                            "The size of tensor a (%lld) must match the size of tensor b (%lld) "
                            "at non-singleton dimension %d",
                            (long long)a.coef, (long long)b.coef, od), false;
            return fail(g, IC_EUNSUPPORTED,
                        "broadcast of a symbolic size against a different size at dimension %d", od),
                   false;
        }
    }
    out->dyn = 1;
    return true;
}

static bool broadcast(ic_graph *g, const ic_val *v, int n, ic_meta *out) {
    int nd = 0;
    bool dyn = false;
    for (int i = 0; i < n; i++) {
        if (g->nodes[v[i]].meta.ndim > nd) nd = g->nodes[v[i]].meta.ndim;
        dyn |= g->nodes[v[i]].meta.dyn != 0;
    }
    out->ndim = nd;
    if (dyn) return broadcast_dyn(g, v, n, out);
    for (int d = 0; d < nd; d++) out->sizes[d] = 1;
    for (int i = 0; i < n; i++) {
        const ic_meta *m = &g->nodes[v[i]].meta;
        for (int d = 0; d < m->ndim; d++) {
            int od = nd - m->ndim + d;
            int64_t a = out->sizes[od], b = m->sizes[d];
            if (a == b || b == 1) continue;
            if (a == 1) {
                out->sizes[od] = b;
                continue;
            }
            fail(g, IC_EINVALID,
                 "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                 "non-singleton dimension %d",
                 (long long)a, (long long)b, od);
            return false;
        }
    }
    ic_contiguous_strides(out);
    return true;
}


/* ---- channels-last propagation ------------------------------------------------------
 * A channels-last conv returns permute(r, [0,3,1,2]) of its NHWC result r. Elementwise ops
 * on such a value are built on r instead, and return the same permute of their result:
 * op(permute(r), b) = permute(op(r, b')), where b' maps b into the NHWC order (another
 * such permute: its source; a [N|1, C, 1, 1] or lower-rank broadcast operand: a view;
 * a 0-d value: itself). So BN/activation/residual chains between convs stay NHWC in
 * memory and the next conv reads its input without a transpose. Any other operand (a
 * full-size NCHW tensor) leaves the op as it is. */
static const int cl_to_nchw[4] = {0, 3, 1, 2}, cl_to_nhwc[4] = {0, 2, 3, 1};

static ic_val cl_source(const ic_graph *g, ic_val v) {
    const ic_node *n = &g->nodes[v];
    if (n->op != IC_OP_PERMUTE || n->meta.ndim != 4 || n->meta.dyn) return -1;
    for (int i = 0; i < 4; i++)
        if (n->perm[i] != cl_to_nchw[i]) return -1;
    return n->in[0];
}

/* 1: *out is v in NHWC order; 0: v can't be mapped cheaply */
static int cl_operand(ic_graph *g, ic_val v, ic_val *out) {
    ic_val r = cl_source(g, v);
    if (r >= 0) {
        *out = r;
        return 1;
    }
    const ic_meta m = g->nodes[v].meta;
    if (m.dyn || m.ndim > 4) return 0;
    if (g->nodes[v].op == IC_OP_EXPAND && m.ndim == 4) { /* a broadcast constant (pads) */
        ic_val src;
        if (!cl_operand(g, g->nodes[v].in[0], &src)) return 0;
        const int64_t sz[4] = {m.sizes[0], m.sizes[2], m.sizes[3], m.sizes[1]};
        *out = ic_expand(g, src, 4, sz);
        return *out >= 0;
    }
    if (m.ndim == 0) {
        *out = v;
        return 1;
    }
    int64_t sz[4] = {1, 1, 1, 1};
    for (int i = 0; i < m.ndim; i++) sz[4 - m.ndim + i] = m.sizes[i];
    if (sz[2] != 1 || sz[3] != 1) return 0;
    ic_val w = m.ndim == 4 ? v : ic_reshape(g, v, 4, sz);
    if (w < 0) return 0;
    *out = ic_permute(g, w, cl_to_nhwc);
    return *out >= 0;
}

static bool cl_enabled(void) { return ic_config_int(IC_CFG_cl_propagate) != 0; }

/* the elementwise node `op` over in[0..nin) in NHWC order, or -1 when not applicable */
static ic_val cl_rewrite(ic_graph *g, int nin, const ic_val *in, ic_val (*build)(ic_graph *, const ic_val *, const void *),
                         const void *arg) {
    if (!cl_enabled()) return -1;
    int any = 0;
    for (int i = 0; i < nin; i++) any |= cl_source(g, in[i]) >= 0;
    if (!any) return -1;
    ic_val m[3];
    for (int i = 0; i < nin; i++)
        if (!cl_operand(g, in[i], &m[i])) return -1;
    ic_val r = build(g, m, arg);
    if (r < 0) return r;
    return ic_permute(g, r, cl_to_nchw);
}

static ic_val cl_build_binary(ic_graph *g, const ic_val *m, const void *arg) { return ic_binary(g, *(const ic_op *)arg, m[0], m[1]); }
static ic_val cl_build_unary(ic_graph *g, const ic_val *m, const void *arg) { return ic_unary(g, *(const ic_op *)arg, m[0]); }
static ic_val cl_build_cast(ic_graph *g, const ic_val *m, const void *arg) { return ic_cast(g, m[0], *(const ic_dtype *)arg); }
static ic_val cl_build_where(ic_graph *g, const ic_val *m, const void *arg) {
    (void)arg;
    return ic_where(g, m[0], m[1], m[2]);
}

IC_API ic_val ic_permute_fold(ic_graph *g, ic_val a, const int *perm) {
    if (!check(g, a)) return IC_NONE;
    const ic_node *n = &g->nodes[a];
    if (n->op == IC_OP_PERMUTE) {
        int nd = n->meta.ndim, id = 1;
        for (int i = 0; i < nd; i++) id &= perm[i] >= 0 && perm[i] < nd && n->perm[perm[i]] == i;
        if (id) return n->in[0];
    }
    return ic_permute(g, a, perm);
}

IC_API ic_val ic_binary(ic_graph *g, ic_op op, ic_val a, ic_val b) {
    if (!check(g, a) || !check(g, b)) return IC_NONE;
    if ((unsigned)op >= IC_OP_COUNT || optab[op].kind != IC_K_BINARY)
        return fail(g, IC_EINVALID, "ic_binary: %s is not a binary op", ic_op_name(op));
    ic_val ab[2] = {a, b};
    ic_val clr = cl_rewrite(g, 2, ab, cl_build_binary, &op);
    if (clr >= 0 || g->err) return clr >= 0 ? clr : IC_NONE;
    ic_node n = {.op = op, .in = IC_IN2(a, b)};
    if (!broadcast(g, ab, 2, &n.meta)) return IC_NONE;
    ic_dtype t = ic_result_type(g, ab, 2);
    unsigned fl = ic_op_flags(op);
    if (fl & IC_F_BOOL) {
        t = IC_BOOL;
    } else if (fl & IC_F_BITS) {
        if ((op == IC_OP_LSHIFT || op == IC_OP_RSHIFT) && t == IC_BOOL)
            return fail(g, IC_EINVALID, "\"%s_cpu\" not implemented for 'Bool'", op == IC_OP_LSHIFT ? "lshift" : "rshift");
        if (ic_is_float(t))
            return fail(g, IC_EINVALID, "\"%s_cpu\" not implemented for '%s'", ic_op_name(op), ic_dtype_name(t));
    } else if (op == IC_OP_FMOD || op == IC_OP_REMAINDER || op == IC_OP_FLOOR_DIVIDE) {
        if (t == IC_BOOL) return fail(g, IC_EUNSUPPORTED, "%s on bool is not supported", ic_op_name(op));
    } else if (fl & IC_F_FLOAT) { /* div, atan2 */
        if (!ic_is_float(t)) t = ic_default_float(g);
    } else if (op == IC_OP_SUB && t == IC_BOOL) {
        return fail(g, IC_EINVALID,
                    "Subtraction, the `-` operator, with two bool tensors is not supported");
    } else if (op == IC_OP_POW && !ic_is_float(t)) {
        /* integer pow (codegen: powi). A Python-number exponent is eager's pow(Tensor, Scalar),
         * which refuses a negative one and converts it to the dtype with c10's overflow check;
         * pow(Tensor, Scalar) of a bool result is eager's fill with True (exponent False) or
         * copy (True); a bool tensor exponent (bool ** bool) eager does not implement */
        const ic_node *e = &g->nodes[b];
        if (t == IC_BOOL && e->op == IC_OP_SCALAR)
            return ic_binary(g, IC_OP_LOGICAL_OR, a, ic_scalar(g, e->num == 0, IC_BOOL));
        if (t == IC_BOOL) return fail(g, IC_EUNSUPPORTED, "pow on bool is not supported");
        if (e->op == IC_OP_SCALAR) {
            int bits = (int)ic_dtype_size(t) * 8 - (t == IC_U8 ? 0 : 1);
            if (e->num < 0) return fail(g, IC_EINVALID, "Integers to negative integer powers are not allowed.");
            if (bits < 63 && e->num > (double)((1LL << bits) - 1))
                return fail(g, IC_EINVALID, "pow: value cannot be converted to type %s without overflow",
                            ic_dtype_name(t));
        }
    }
    n.meta.dtype = t;
    return append(g, &n);
}

IC_API ic_val ic_unary(ic_graph *g, ic_op op, ic_val a) {
    if (!check(g, a)) return IC_NONE;
    if ((unsigned)op >= IC_OP_COUNT || optab[op].kind != IC_K_UNARY)
        return fail(g, IC_EINVALID, "ic_unary: %s is not a unary op", ic_op_name(op));
    ic_val clr = cl_rewrite(g, 1, &a, cl_build_unary, &op);
    if (clr >= 0 || g->err) return clr >= 0 ? clr : IC_NONE;
    ic_node n = {.op = op, .in = IC_IN1(a), .meta = g->nodes[a].meta};
    ic_contiguous_strides(&n.meta);
    ic_dtype t = n.meta.dtype;
    unsigned fl = ic_op_flags(op);
    if (fl & IC_F_BOOL) { /* logical_not, isnan, isinf, isfinite */
        t = IC_BOOL;
    } else if (fl & IC_F_BITS) { /* bitwise_not */
        if (ic_is_float(t))
            return fail(g, IC_EINVALID, "\"bitwise_not_cpu\" not implemented for '%s'", ic_dtype_name(t));
    } else if (op == IC_OP_SIGN || op == IC_OP_FLOOR || op == IC_OP_CEIL || op == IC_OP_ROUND ||
               op == IC_OP_TRUNC) {
        if (t == IC_BOOL && op != IC_OP_SIGN)
            return fail(g, IC_EUNSUPPORTED, "%s on bool is not supported", ic_op_name(op));
    } else if (fl & IC_F_FLOAT) {
        if (!ic_is_float(t)) t = ic_default_float(g);
    } else if (t == IC_BOOL) {
        if (op == IC_OP_NEG)
            return fail(g, IC_EINVALID,
                        "Negation, the `-` operator, on a bool tensor is not supported");
        return fail(g, IC_EUNSUPPORTED, "%s on bool is not supported", ic_op_name(op));
    }
    n.meta.dtype = t;
    return append(g, &n);
}

IC_API ic_val ic_where(ic_graph *g, ic_val cond, ic_val a, ic_val b) {
    if (!check(g, cond) || !check(g, a) || !check(g, b)) return IC_NONE;
    if (g->nodes[cond].meta.dtype != IC_BOOL)
        return fail(g, IC_EINVALID, "where expected condition to be a boolean tensor");
    ic_val all[3] = {cond, a, b};
    ic_val clr = cl_rewrite(g, 3, all, cl_build_where, NULL);
    if (clr >= 0 || g->err) return clr >= 0 ? clr : IC_NONE;
    ic_node n = {.op = IC_OP_WHERE, .in = IC_IN3(cond, a, b)};
    if (!broadcast(g, all, 3, &n.meta)) return IC_NONE;
    n.meta.dtype = ic_result_type(g, all + 1, 2);
    return append(g, &n);
}

IC_API ic_val ic_cast(ic_graph *g, ic_val a, ic_dtype to) {
    if (!check(g, a)) return IC_NONE;
    if ((unsigned)to >= IC_DTYPE_COUNT) return fail(g, IC_EINVALID, "bad dtype");
    ic_val clr = cl_rewrite(g, 1, &a, cl_build_cast, &to);
    if (clr >= 0 || g->err) return clr >= 0 ? clr : IC_NONE;
    ic_node n = {.op = IC_OP_CAST, .in = IC_IN1(a), .meta = g->nodes[a].meta};
    ic_contiguous_strides(&n.meta);
    n.meta.dtype = to;
    return append(g, &n);
}

IC_API ic_val ic_reduce(ic_graph *g, ic_op op, ic_val a, uint32_t dim_mask, int keepdim,
                        int dtype) {
    if (!check(g, a)) return IC_NONE;
    if ((unsigned)op >= IC_OP_COUNT || optab[op].kind != IC_K_REDUCE)
        return fail(g, IC_EINVALID, "ic_reduce: %s is not a reduction", ic_op_name(op));
    const ic_meta *im = &g->nodes[a].meta;
    int nd = im->ndim;
    if (nd == 0) {
        if (dim_mask & ~1u) return fail(g, IC_EINVALID, "Dimension out of range");
        dim_mask = 0;
    } else {
        if (dim_mask >> nd) return fail(g, IC_EINVALID, "Dimension out of range");
        if (dim_mask == 0) dim_mask = (nd >= 32 ? ~0u : ((1u << nd) - 1));
    }
    ic_dtype in_t = im->dtype, t;
    if (dtype >= 0) {
        if (dtype >= IC_DTYPE_COUNT) return fail(g, IC_EINVALID, "bad dtype");
        t = dtype;
    } else if (op == IC_OP_SUM || op == IC_OP_PROD) {
        t = ic_is_float(in_t) ? in_t : IC_I64;
    } else if (op == IC_OP_MEAN) {
        if (!ic_is_float(in_t))
            return fail(g, IC_EINVALID,
                        "mean(): could not infer output dtype. Input dtype must be either a "
                        "floating point or complex dtype. Got: %s",
                        ic_dtype_name(in_t));
        t = in_t;
    } else {
        t = in_t;
    }
    if (op == IC_OP_MEAN && !ic_is_float(t))
        return fail(g, IC_EINVALID, "mean(): dtype must be floating point");
    if (op == IC_OP_ARGMAX || op == IC_OP_ARGMIN) {
        if (in_t == IC_BOOL) return fail(g, IC_EUNSUPPORTED, "%s on bool is not supported", ic_op_name(op));
        if (dtype >= 0) return fail(g, IC_EINVALID, "%s has no dtype argument", ic_op_name(op));
        t = IC_I64;
    }
    if (op == IC_OP_AMAX || op == IC_OP_AMIN || op == IC_OP_ARGMAX || op == IC_OP_ARGMIN) {
        for (int d = 0; d < nd; d++)
            if (((dim_mask >> d) & 1) && im->sizes[d] == 0)
                return fail(g, IC_EINVALID,
                            "%s(): Expected reduction dim %d to have non-zero size.",
                            ic_op_name(op), d);
    }
    ic_node n = {.op = op, .in = IC_IN1(a), .dim_mask = dim_mask, .keepdim = keepdim != 0};
    n.meta.dtype = t;
    n.meta.dyn = im->dyn;
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if ((dim_mask >> d) & 1) {
            if (keepdim) n.meta.dims[k] = ic_dim_k(im->dyn ? 1 : 0), n.meta.sizes[k++] = 1;
        } else {
            n.meta.dims[k] = im->dims[d];
            n.meta.sizes[k++] = im->sizes[d];
        }
    }
    n.meta.ndim = k;
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API ic_val ic_reshape(ic_graph *g, ic_val a, int ndim, const int64_t *sizes) {
    if (!check(g, a)) return IC_NONE;
    if (ndim < 0 || ndim > IC_MAX_DIMS) return fail(g, IC_EUNSUPPORTED, "ndim out of range");
    const ic_meta *im = &g->nodes[a].meta;
    if (im->dyn) {
        /* only unambiguous: the same (hint) sizes keep the symbolic dims */
        bool same = ndim == im->ndim;
        for (int i = 0; same && i < ndim; i++) same = sizes[i] == im->sizes[i];
        if (!same)
            return fail(g, IC_EUNSUPPORTED, "reshape of a value with symbolic sizes: use ic_reshape_dyn");
        ic_node n = {.op = IC_OP_RESHAPE, .in = IC_IN1(a), .meta = *im};
        return append(g, &n);
    }
    int64_t numel = ic_numel(im), known = 1;
    int infer = -1;
    ic_node n = {.op = IC_OP_RESHAPE, .in = IC_IN1(a)};
    n.meta.dtype = im->dtype;
    n.meta.ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) return fail(g, IC_EINVALID, "only one dimension can be inferred");
            infer = i;
        } else if (sizes[i] < 0) {
            return fail(g, IC_EINVALID, "invalid shape dimension %lld", (long long)sizes[i]);
        } else {
            known *= sizes[i];
        }
        n.meta.sizes[i] = sizes[i];
    }
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return fail(g, IC_EINVALID, "shape is invalid for input of size %lld",
                        (long long)numel);
        n.meta.sizes[infer] = numel / known;
    } else if (known != numel) {
        return fail(g, IC_EINVALID, "shape is invalid for input of size %lld", (long long)numel);
    }
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API ic_val ic_permute(ic_graph *g, ic_val a, const int *perm) {
    if (!check(g, a)) return IC_NONE;
    const ic_meta *im = &g->nodes[a].meta;
    ic_node n = {.op = IC_OP_PERMUTE, .in = IC_IN1(a)};
    n.meta.dtype = im->dtype;
    n.meta.ndim = im->ndim;
    unsigned seen = 0;
    for (int i = 0; i < im->ndim; i++) {
        int p = perm[i];
        if (p < 0 || p >= im->ndim || (seen >> p) & 1)
            return fail(g, IC_EINVALID, "permute(): dims don't match or repeat");
        seen |= 1u << p;
        n.perm[i] = p;
        n.meta.sizes[i] = im->sizes[p];
        n.meta.dims[i] = im->dims[p];
    }
    n.meta.dyn = im->dyn;
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API ic_val ic_expand(ic_graph *g, ic_val a, int ndim, const int64_t *sizes) {
    if (!check(g, a)) return IC_NONE;
    const ic_meta *im = &g->nodes[a].meta;
    if (ndim < im->ndim)
        return fail(g, IC_EINVALID,
                    "expand: the number of sizes provided (%d) must be greater or equal to the "
                    "number of dimensions in the tensor (%d)",
                    ndim, im->ndim);
    if (ndim > IC_MAX_DIMS) return fail(g, IC_EUNSUPPORTED, "ndim out of range");
    ic_node n = {.op = IC_OP_EXPAND, .in = IC_IN1(a)};
    n.meta.dtype = im->dtype;
    n.meta.ndim = ndim;
    int lead = ndim - im->ndim;
    if (im->dyn) {
        ic_dim ds[IC_MAX_DIMS];
        for (int i = 0; i < ndim; i++) {
            ds[i] = ic_dim_k(sizes[i]);
            if (i >= lead && !ic_dim_is_static(im->dims[i - lead])) {
                if (sizes[i] != -1 && sizes[i] != im->sizes[i - lead])
                    return fail(g, IC_EUNSUPPORTED, "expand of a symbolic dim: use ic_expand_dyn");
                ds[i].coef = -1;
            }
        }
        return ic_expand_dyn(g, a, ndim, ds);
    }
    for (int i = 0; i < ndim; i++) {
        int64_t s = sizes[i];
        if (i < lead) {
            if (s < 0) return fail(g, IC_EINVALID, "expand: -1 not allowed in leading dims");
        } else {
            int64_t have = im->sizes[i - lead];
            if (s == -1) s = have;
            if (s < 0 || (have != 1 && have != s))
                return fail(g, IC_EINVALID,
                            "The expanded size of the tensor (%lld) must match the existing "
                            "size (%lld) at non-singleton dimension %d",
                            (long long)s, (long long)have, i);
        }
        n.meta.sizes[i] = s;
    }
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

/* Symbolic reshape: the numel monomials must agree; one coef == -1 entry is inferred
 * by exact monomial division. */
IC_API ic_val ic_reshape_dyn(ic_graph *g, ic_val a, int ndim, const ic_dim *sizes) {
    if (!check(g, a)) return IC_NONE;
    if (ndim < 0 || ndim > IC_MAX_DIMS) return fail(g, IC_EUNSUPPORTED, "ndim out of range");
    const ic_meta *im = &g->nodes[a].meta;
    ic_dim numel = ic_dim_k(1), known = ic_dim_k(1);
    for (int i = 0; i < im->ndim; i++) numel = ic_dim_mul(numel, ic_meta_dim(im, i));
    ic_node n = {.op = IC_OP_RESHAPE, .in = IC_IN1(a)};
    n.meta.dtype = im->dtype;
    n.meta.ndim = ndim;
    n.meta.dyn = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        if (sizes[i].coef == -1) {
            if (infer >= 0) return fail(g, IC_EINVALID, "only one dimension can be inferred");
            infer = i;
            continue;
        }
        if (sizes[i].coef < 0) return fail(g, IC_EINVALID, "invalid shape dimension %lld", (long long)sizes[i].coef);
        for (int k = 0; k < IC_MAX_SYMS; k++)
            if (sizes[i].exp[k] && !g->sym_hint[k])
                return fail(g, IC_EINVALID, "reshape: unknown size symbol s%d", k);
        n.meta.dims[i] = sizes[i];
        if (sizes[i].coef == 0) memset(n.meta.dims[i].exp, 0, sizeof n.meta.dims[i].exp);
        known = ic_dim_mul(known, n.meta.dims[i]);
    }
    if (infer >= 0) {
        if (!ic_dim_div(numel, known, &n.meta.dims[infer]) || known.coef == 0)
            return fail(g, ic_dim_is_static(numel) && ic_dim_is_static(known) ? IC_EINVALID : IC_EUNSUPPORTED,
                        "reshape: the inferred size is not a symbolic monomial");
    } else if (!ic_dim_eq(numel, known)) {
        return fail(g, ic_dim_is_static(numel) && ic_dim_is_static(known) ? IC_EINVALID : IC_EUNSUPPORTED,
                    "reshape: symbolic sizes do not match the number of elements");
    }
    return append(g, &n);
}

IC_API ic_val ic_expand_dyn(ic_graph *g, ic_val a, int ndim, const ic_dim *sizes) {
    if (!check(g, a)) return IC_NONE;
    const ic_meta *im = &g->nodes[a].meta;
    if (ndim < im->ndim)
        return fail(g, IC_EINVALID, "expand: the number of sizes provided (%d) must be greater or "
                    "equal to the number of dimensions in the tensor (%d)", ndim, im->ndim);
    if (ndim > IC_MAX_DIMS) return fail(g, IC_EUNSUPPORTED, "ndim out of range");
    ic_node n = {.op = IC_OP_EXPAND, .in = IC_IN1(a)};
    n.meta.dtype = im->dtype;
    n.meta.ndim = ndim;
    n.meta.dyn = 1;
    int lead = ndim - im->ndim;
    for (int i = 0; i < ndim; i++) {
        ic_dim s = sizes[i];
        if (s.coef >= 0)
            for (int k = 0; k < IC_MAX_SYMS; k++)
                if (s.exp[k] && !g->sym_hint[k]) return fail(g, IC_EINVALID, "expand: unknown size symbol s%d", k);
        if (i < lead) {
            if (s.coef < 0) return fail(g, IC_EINVALID, "expand: -1 not allowed in leading dims");
        } else {
            ic_dim have = ic_meta_dim(im, i - lead);
            if (s.coef == -1) s = have;
            if (s.coef < 0) return fail(g, IC_EINVALID, "expand: bad size");
            if (!ic_dim_eq(have, ic_dim_k(1)) && !ic_dim_eq(have, s))
                return fail(g, ic_dim_is_static(have) && ic_dim_is_static(s) ? IC_EINVALID : IC_EUNSUPPORTED,
                            "The expanded size of the tensor must match the existing size at "
                            "non-singleton dimension %d", i);
        }
        n.meta.dims[i] = s;
    }
    return append(g, &n);
}

IC_API ic_val ic_slice(ic_graph *g, ic_val a, int dim, int64_t start, int64_t end, int64_t step) {
    if (!check(g, a)) return IC_NONE;
    const ic_meta *im = &g->nodes[a].meta;
    if (dim < 0 || dim >= im->ndim) return fail(g, IC_EINVALID, "slice: dimension out of range");
    ic_val clsrc = cl_enabled() ? cl_source(g, a) : -1;
    if (clsrc >= 0) { /* a slice of a channels-last value (pools): slice the NHWC source */
        ic_val r = ic_slice(g, clsrc, cl_to_nchw[dim], start, end, step);
        return r < 0 ? r : ic_permute(g, r, cl_to_nchw);
    }
    if (step < 1) return fail(g, IC_EINVALID, "slice step must be positive");
    if (im->dyn && !ic_dim_is_static(im->dims[dim])) {
        if (start != 0 || end < im->sizes[dim] || step != 1)
            return fail(g, IC_EUNSUPPORTED, "slice of a symbolic dim other than the full range");
        end = im->sizes[dim];
    }
    if (start < 0 || end < start || end > im->sizes[dim])
        return fail(g, IC_EINVALID, "slice: bounds [%lld, %lld) not normalized for size %lld",
                    (long long)start, (long long)end, (long long)im->sizes[dim]);
    ic_node n = {.op = IC_OP_SLICE, .in = IC_IN1(a), .meta = *im, .dim = dim, .start = start, .step = step};
    n.meta.sizes[dim] = (end - start + step - 1) / step;
    if (n.meta.dyn && ic_dim_is_static(n.meta.dims[dim])) n.meta.dims[dim] = ic_dim_k(n.meta.sizes[dim]);
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API ic_val ic_cat(ic_graph *g, ic_val a, ic_val b, int dim) {
    if (!check(g, a) || !check(g, b)) return IC_NONE;
    const ic_meta *x = &g->nodes[a].meta, *y = &g->nodes[b].meta;
    if (x->ndim != y->ndim || x->ndim == 0)
        return fail(g, IC_EINVALID, "cat: tensors must have the same number of dimensions (>0)");
    if (dim < 0 || dim >= x->ndim) return fail(g, IC_EINVALID, "cat: dimension out of range");
    if (cl_enabled() && x->ndim == 4 && (cl_source(g, a) >= 0 || cl_source(g, b) >= 0)) {
        ic_val ma, mb; /* channels-last operands (pads of pools): cat in NHWC order */
        if (cl_operand(g, a, &ma) && cl_operand(g, b, &mb) && g->nodes[ma].meta.ndim == 4 &&
            g->nodes[mb].meta.ndim == 4) {
            ic_val r = ic_cat(g, ma, mb, cl_to_nchw[dim]);
            return r < 0 ? r : ic_permute(g, r, cl_to_nchw);
        }
        if (g->err) return IC_NONE;
    }
    bool dyn = x->dyn || y->dyn;
    for (int d = 0; d < x->ndim; d++) {
        if (d == dim) continue;
        if (dyn && !ic_dim_eq(ic_meta_dim(x, d), ic_meta_dim(y, d))) {
            if (ic_dim_is_static(ic_meta_dim(x, d)) && ic_dim_is_static(ic_meta_dim(y, d)))
                return fail(g, IC_EINVALID, "Sizes of tensors must match except in dimension %d", dim);
            return fail(g, IC_EUNSUPPORTED, "cat: symbolic sizes differ at dimension %d", d);
        }
        if (!dyn && x->sizes[d] != y->sizes[d])
            return fail(g, IC_EINVALID, "Sizes of tensors must match except in dimension %d", dim);
    }
    ic_node n = {.op = IC_OP_CAT, .in = IC_IN2(a, b), .meta = *x, .dim = dim};
    /* torch.cat promotes like result_type over tensors (no weak scalars here) */
    n.meta.dtype = ic_promote(x->dtype, y->dtype);
    n.meta.sizes[dim] = x->sizes[dim] + y->sizes[dim];
    if (dyn) {
        ic_dim dx = ic_meta_dim(x, dim), dy = ic_meta_dim(y, dim);
        if (memcmp(dx.exp, dy.exp, sizeof dx.exp) != 0 && dx.coef && dy.coef)
            return fail(g, IC_EUNSUPPORTED, "cat along a symbolic dim: the size is not a monomial");
        ic_dim r = dx.coef ? dx : dy;
        r.coef = dx.coef + dy.coef;
        for (int d = 0; d < x->ndim; d++) n.meta.dims[d] = ic_meta_dim(x, d);
        n.meta.dims[dim] = r;
        n.meta.dyn = 1;
    }
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API ic_val ic_index_select(ic_graph *g, ic_val a, int dim, ic_val index) {
    if (!check(g, a) || !check(g, index)) return IC_NONE;
    const ic_meta *x = &g->nodes[a].meta, *ix = &g->nodes[index].meta;
    if (ix->dtype != IC_I32 && ix->dtype != IC_I64)
        return fail(g, IC_EINVALID, "index_select(): Expected dtype int32/int64 for index");
    if (ix->ndim > 1) return fail(g, IC_EINVALID, "index_select(): Index is supposed to be a vector");
    if (x->ndim == 0) return fail(g, IC_EUNSUPPORTED, "index_select of a 0-dim tensor");
    if (dim < 0 || dim >= x->ndim) return fail(g, IC_EINVALID, "index_select: dimension out of range");
    if (x->dyn && !ic_dim_is_static(x->dims[dim]))
        return fail(g, IC_EUNSUPPORTED, "index_select along a symbolic dim");
    ic_node n = {.op = IC_OP_INDEX_SELECT, .in = IC_IN2(a, index), .meta = *x, .dim = dim};
    n.meta.sizes[dim] = ix->ndim ? ix->sizes[0] : 1;
    if (x->dyn || ix->dyn) {
        for (int d = 0; d < x->ndim; d++) n.meta.dims[d] = ic_meta_dim(x, d);
        n.meta.dims[dim] = ix->ndim ? ic_meta_dim(ix, 0) : ic_dim_k(1);
        n.meta.dyn = 1;
    }
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API ic_val ic_arange(ic_graph *g, int64_t count, double start, double step, ic_dtype dtype) {
    if (g->err) return IC_NONE;
    if (count < 0) return fail(g, IC_EINVALID, "arange: negative size");
    if ((unsigned)dtype >= IC_DTYPE_COUNT || dtype == IC_BOOL) return fail(g, IC_EINVALID, "arange: bad dtype");
    ic_node n = {.op = IC_OP_ARANGE, .in = IC_IN_NONE, .num = start, .num2 = step};
    n.meta.dtype = dtype;
    n.meta.ndim = 1;
    n.meta.sizes[0] = count;
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

/* ---- extern calls ----------------------------------------------------------------------- */
static const char *extnames[IC_EXT_COUNT] = {
#define IC_X_EXTN(name, text) text,
    IC_EXTERNS(IC_X_EXTN)
#undef IC_X_EXTN
};

IC_API const char *ic_extern_name(ic_extern_kind k) {
    return (unsigned)k < IC_EXT_COUNT ? extnames[k] : "?";
}

/* sizes of `m` broadcast (expand rules) to want[0..nd) */
static bool bcast_to(const ic_meta *m, int nd, const int64_t *want) {
    if (m->ndim > nd) return false;
    for (int i = 0; i < m->ndim; i++) {
        int64_t s = m->sizes[i], w = want[nd - m->ndim + i];
        if (s != w && s != 1) return false;
    }
    return true;
}

static ic_val ext_fail_mm(ic_graph *g, const char *what, const ic_meta *a, const ic_meta *b) {
    return fail(g, IC_EINVALID, "%s: shapes cannot be multiplied (%dd [..,%lld] and %dd [%lld,..])", what, a->ndim,
                (long long)(a->ndim ? a->sizes[a->ndim - 1] : 0), b->ndim, (long long)(b->ndim ? b->sizes[0] : 0));
}

/* torch.matmul's result shape */
static bool matmul_shape(ic_graph *g, const ic_meta *a, const ic_meta *b, ic_meta *o) {
    int na = a->ndim, nb = b->ndim;
    if (na == 0 || nb == 0) {
        fail(g, IC_EINVALID, "both arguments to matmul need to be at least 1D");
        return false;
    }
    int64_t ka = a->sizes[na - 1], kb = nb == 1 ? b->sizes[0] : b->sizes[nb - 2];
    if (ka != kb) {
        ext_fail_mm(g, "matmul", a, b);
        return false;
    }
    /* batch dims: a without its last 2 (1-D: none), b without its last 2 */
    int ba = na >= 2 ? na - 2 : 0, bb = nb >= 2 ? nb - 2 : 0;
    int nbat = ba > bb ? ba : bb;
    int64_t bs[IC_MAX_DIMS];
    for (int i = 0; i < nbat; i++) {
        int ia = i - (nbat - ba), ib = i - (nbat - bb);
        int64_t x = ia >= 0 ? a->sizes[ia] : 1, y = ib >= 0 ? b->sizes[ib] : 1;
        if (x != y && x != 1 && y != 1) {
            fail(g, IC_EINVALID, "matmul: batch dimensions do not broadcast (%lld vs %lld)", (long long)x,
                 (long long)y);
            return false;
        }
        bs[i] = x == 1 ? y : x;
    }
    int k = 0;
    for (int i = 0; i < nbat; i++) o->sizes[k++] = bs[i];
    if (na >= 2) o->sizes[k++] = a->sizes[na - 2];
    if (nb >= 2) o->sizes[k++] = b->sizes[nb - 1];
    if (k > IC_MAX_DIMS) {
        fail(g, IC_EUNSUPPORTED, "matmul: too many dims");
        return false;
    }
    o->ndim = k;
    return true;
}

/* ---- extern calls on symbolic sizes ----
 * The shape checks above ran at the hint sizes; ext_dyn then gives the output its
 * symbolic dims and refuses (IC_EUNSUPPORTED) what one compile cannot promise for every
 * symbol value: a symbolic reduction dim K, conv channels / spatial dims / weights, batch
 * dims that agree only at the hints (s0 vs s1), biases that broadcast only at the hints.
 * Rows (M), batches and linear's leading dims may be symbolic; the handler gets concrete
 * metas at run time (compile.c). */
static bool dim_static(const ic_meta *m, int i) { return ic_dim_is_static(ic_meta_dim(m, i)); }

/* m broadcasts to want[0..nd) for every symbol value: each dim equal or a static 1 */
static bool bcast_dyn(const ic_meta *m, int nd, const ic_dim *want) {
    if (m->ndim > nd) return false;
    for (int i = 0; i < m->ndim; i++) {
        ic_dim s = ic_meta_dim(m, i);
        if (!ic_dim_eq(s, want[nd - m->ndim + i]) && !ic_dim_eq(s, ic_dim_k(1))) return false;
    }
    return true;
}

static bool ext_dyn(ic_graph *g, ic_extern_kind kind, int nin, const ic_meta *const *m, ic_meta *o) {
    const char *nm = extnames[kind];
    ic_dim *od = o->dims;
    switch (kind) {
    case IC_EXT_MM:
    case IC_EXT_ADDMM:
    case IC_EXT_BMM:
    case IC_EXT_BADDBMM: {
        const ic_meta *a = m[nin - 2], *b = m[nin - 1];
        int r = a->ndim - 2; /* 0: mm, 1: bmm */
        if (!dim_static(a, r + 1) || !dim_static(b, r))
            return fail(g, IC_EUNSUPPORTED, "%s: symbolic reduction size", nm), false;
        if (r && !ic_dim_eq(ic_meta_dim(a, 0), ic_meta_dim(b, 0)))
            return fail(g, IC_EUNSUPPORTED, "%s: symbolic batch sizes differ", nm), false;
        if (r) od[0] = ic_meta_dim(a, 0);
        od[r] = ic_meta_dim(a, r);
        od[r + 1] = ic_meta_dim(b, r + 1);
        if (nin == 3 && !bcast_dyn(m[0], o->ndim, od))
            return fail(g, IC_EUNSUPPORTED, "%s: bias broadcast with symbolic sizes", nm), false;
        break;
    }
    case IC_EXT_MATMUL: {
        const ic_meta *a = m[0], *b = m[1];
        int na = a->ndim, nb = b->ndim;
        if (!dim_static(a, na - 1) || !dim_static(b, nb == 1 ? 0 : nb - 2))
            return fail(g, IC_EUNSUPPORTED, "matmul: symbolic reduction size"), false;
        int ba = na >= 2 ? na - 2 : 0, bb = nb >= 2 ? nb - 2 : 0, nbat = ba > bb ? ba : bb, k = 0;
        for (int i = 0; i < nbat; i++) {
            int ia = i - (nbat - ba), ib = i - (nbat - bb);
            ic_dim x = ia >= 0 ? ic_meta_dim(a, ia) : ic_dim_k(1), y = ib >= 0 ? ic_meta_dim(b, ib) : ic_dim_k(1);
            if (ic_dim_eq(x, y) || ic_dim_eq(y, ic_dim_k(1))) od[k++] = x;
            else if (ic_dim_eq(x, ic_dim_k(1))) od[k++] = y;
            else return fail(g, IC_EUNSUPPORTED, "matmul: symbolic batch dims do not broadcast"), false;
        }
        if (na >= 2) od[k++] = ic_meta_dim(a, na - 2);
        if (nb >= 2) od[k++] = ic_meta_dim(b, nb - 1);
        break;
    }
    case IC_EXT_LINEAR: {
        const ic_meta *x = m[0], *w = m[1];
        if (!dim_static(x, x->ndim - 1) || !dim_static(w, 1))
            return fail(g, IC_EUNSUPPORTED, "linear: symbolic in_features"), false;
        for (int i = 0; i < x->ndim; i++) od[i] = ic_meta_dim(x, i);
        od[x->ndim - 1] = ic_meta_dim(w, 0);
        if (nin == 3 && !bcast_dyn(m[2], 1, &od[x->ndim - 1]))
            return fail(g, IC_EUNSUPPORTED, "linear: bias broadcast with symbolic sizes"), false;
        break;
    }
    case IC_EXT_CONV: /* a symbolic batch only */
        for (int i = 1; i < m[0]->ndim; i++)
            if (!dim_static(m[0], i)) return fail(g, IC_EUNSUPPORTED, "conv: symbolic channel or spatial size"), false;
        for (int j = 1; j < nin; j++)
            if (m[j]->dyn) return fail(g, IC_EUNSUPPORTED, "conv: symbolic weight or bias"), false;
        od[0] = ic_meta_dim(m[0], 0);
        for (int i = 1; i < o->ndim; i++) od[i] = ic_dim_k(o->sizes[i]);
        break;
    case IC_EXT_SDPA: { /* batch dims and lengths may be symbolic, head dims not */
        const ic_meta *q = m[0], *k = m[1], *v = m[2];
        int nd = q->ndim;
        if (!dim_static(q, nd - 1) || !dim_static(k, nd - 1) || !dim_static(v, nd - 1))
            return fail(g, IC_EUNSUPPORTED, "sdpa: symbolic head dim"), false;
        for (int i = 0; i < nd - 2; i++)
            if (!ic_dim_eq(ic_meta_dim(q, i), ic_meta_dim(k, i)) || !ic_dim_eq(ic_meta_dim(q, i), ic_meta_dim(v, i)))
                return fail(g, IC_EUNSUPPORTED, "sdpa: symbolic batch dims differ"), false;
        if (!ic_dim_eq(ic_meta_dim(k, nd - 2), ic_meta_dim(v, nd - 2)))
            return fail(g, IC_EUNSUPPORTED, "sdpa: symbolic key and value lengths differ"), false;
        for (int i = 0; i < nd - 1; i++) od[i] = ic_meta_dim(q, i);
        od[nd - 1] = ic_meta_dim(v, nd - 1);
        if (nin == 4) {
            ic_dim want[IC_MAX_DIMS];
            for (int i = 0; i < nd - 1; i++) want[i] = od[i];
            want[nd - 1] = ic_meta_dim(k, nd - 2);
            if (!bcast_dyn(m[3], nd, want))
                return fail(g, IC_EUNSUPPORTED, "sdpa: mask broadcast with symbolic sizes"), false;
        }
        break;
    }
    default:
        return fail(g, IC_EUNSUPPORTED, "%s on symbolic sizes", nm), false;
    }
    o->dyn = 1;
    return true;
}

/* gather / scatter / scatter_add / cumsum / cumprod / argsort: shapes as ATen checks them */
static ic_val ext_index_scan(ic_graph *g, ic_extern_kind kind, int nin, const ic_val *in, int nparams,
                             const int64_t *params) {
    const char *nm = extnames[kind];
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = kind, .nparams = nparams, .num = 1, .num2 = 1};
    for (int i = 0; i < nin; i++) n.in[i] = in[i];
    for (int i = 0; i < nparams; i++) n.params[i] = params[i];
    const ic_meta *x = &g->nodes[in[0]].meta;
    int want_in = kind == IC_EXT_GATHER ? 2 : kind == IC_EXT_SCATTER || kind == IC_EXT_SCATTER_ADD ? 3 : 1;
    int want_p = kind == IC_EXT_GATHER || kind == IC_EXT_SCATTER || kind == IC_EXT_SCATTER_ADD ? 1
                 : kind == IC_EXT_ARGSORT                                                   ? 3
                                                                                            : 2;
    if (kind == IC_EXT_ARGSORT && (nparams == 5 || nparams == 4)) want_p = nparams; /* topk; kthvalue/median */
    if (kind == IC_EXT_SCATTER && nparams == 3) { /* scatter_reduce: + reduction (sum, prod, mean, amax, amin), include_self */
        if (params[1] < 0 || params[1] > 4 || (params[2] != 0 && params[2] != 1))
            return fail(g, IC_EINVALID, "scatter_reduce: bad reduction");
        want_p = 3;
    }
    if (nin != want_in || nparams != want_p) return fail(g, IC_EINVALID, "%s: wrong operand/param count", nm);
    int64_t dim = params[0];
    int nd = x->ndim ? x->ndim : 1;
    if (dim < 0 || dim >= nd) return fail(g, IC_EINVALID, "%s: dimension out of range", nm);
    n.meta = *x;
    if (kind == IC_EXT_GATHER || kind == IC_EXT_SCATTER || kind == IC_EXT_SCATTER_ADD) {
        const ic_meta *ix = &g->nodes[in[1]].meta;
        int64_t ixn = 1; /* ATen takes int32 or int64 indices, and any dtype when there are none */
        for (int d = 0; d < ix->ndim; d++) ixn *= ix->sizes[d];
        if (ixn && ix->dtype != IC_I64 && ix->dtype != IC_I32)
            return fail(g, IC_EINVALID, "%s(): Expected dtype int32/int64 for index", nm);
        if ((ix->ndim ? ix->ndim : 1) != nd)
            return fail(g, IC_EINVALID, "Index tensor must have the same number of dimensions as input tensor");
        for (int d = 0; d < ix->ndim && x->ndim; d++)
            if (d != dim && ix->sizes[d] > x->sizes[d])
                return fail(g, IC_EINVALID, "Size does not match at dimension %d", d);
        if (kind == IC_EXT_GATHER) {
            n.meta = *ix;
            n.meta.dtype = x->dtype;
        } else {
            const ic_meta *src = &g->nodes[in[2]].meta;
            if (src->dtype != x->dtype) return fail(g, IC_EINVALID, "%s(): Expected self.dtype to be equal to src.dtype", nm);
            if ((src->ndim ? src->ndim : 1) != nd) return fail(g, IC_EINVALID, "%s: src must have the input's dims", nm);
            for (int d = 0; d < ix->ndim; d++)
                if (ix->sizes[d] > src->sizes[d]) return fail(g, IC_EINVALID, "%s: index larger than src", nm);
        }
    } else if (kind == IC_EXT_CUMSUM || kind == IC_EXT_CUMPROD) {
        int64_t dt = params[1];
        if (dt >= IC_DTYPE_COUNT || dt < -1) return fail(g, IC_EINVALID, "%s: bad dtype", nm);
        n.meta.dtype = dt >= 0 ? (ic_dtype)dt : ic_is_float(x->dtype) ? x->dtype : IC_I64;
    } else {
        n.meta.dtype = IC_I64;
        if (nparams == 5) { /* topk's indices: k along dim */
            if (!x->ndim || params[3] < 0 || params[3] > x->sizes[dim])
                return fail(g, IC_EINVALID, "%s: selected index k out of range", nm);
            n.meta.sizes[dim] = params[3];
        } else if (nparams == 4) { /* kthvalue / median / nanmedian: one index along dim */
            int64_t len = x->ndim ? x->sizes[dim] : 1;
            if (params[1] < 0 || params[1] > 2 || (params[3] != 0 && params[3] != 1))
                return fail(g, IC_EINVALID, "%s: bad selection", nm);
            if (len == 0 || (params[1] == 0 && (params[2] < 1 || params[2] > len)))
                return fail(g, IC_EINVALID, "%s: selected number k out of range", nm);
            if (x->ndim && params[3]) {
                n.meta.sizes[dim] = 1;
            } else if (x->ndim) {
                for (int d = dim; d + 1 < x->ndim; d++) n.meta.sizes[d] = x->sizes[d + 1];
                n.meta.ndim = x->ndim - 1;
            }
        }
    }
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

/* grouped_mm (a[S,K], b[E,K,N], offs[E] int32) -> [S,N] in a's dtype: the checks of ATen's
 * _grouped_mm for this (2-D x 3-D, offsets) form, strides aside (the handler picks layouts) */
static ic_val ext_grouped_mm(ic_graph *g, int nin, const ic_val *in, int nparams) {
    if (nin != 3 || nparams != 0) return fail(g, IC_EINVALID, "grouped_mm: wrong operand/param count");
    const ic_meta *a = &g->nodes[in[0]].meta, *b = &g->nodes[in[1]].meta, *o = &g->nodes[in[2]].meta;
    if (a->dtype != b->dtype) return fail(g, IC_EINVALID, "grouped_mm: operands of different dtypes");
    if (a->dtype != IC_F32 && a->dtype != IC_BF16 && a->dtype != IC_F16)
        return fail(g, IC_EINVALID, "grouped_mm: expected Float32, BFloat16 or Float16 matrices");
    if (a->ndim != 2 || b->ndim != 3) return fail(g, IC_EUNSUPPORTED, "grouped_mm: only 2-D x 3-D with offsets");
    if (o->dtype != IC_I32 || o->ndim != 1) return fail(g, IC_EINVALID, "grouped_mm: offsets have to be 1-D int32");
    if (o->sizes[0] != b->sizes[0]) return fail(g, IC_EINVALID, "grouped_mm: matrix batch sizes have to match");
    if (a->sizes[1] != b->sizes[1]) return fail(g, IC_EINVALID, "grouped_mm: contraction dims differ");
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN3(in[0], in[1], in[2]), .ext_kind = IC_EXT_GROUPED_MM, .num = 1, .num2 = 1};
    n.meta.dtype = a->dtype;
    n.meta.ndim = 2;
    n.meta.sizes[0] = a->sizes[0];
    n.meta.sizes[1] = b->sizes[2];
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

/* grid_sample (x[N,C,*in], grid[N,*out,nd]) -> [N,C,*out], nd = 2 or 3 (3: 5-d, no bicubic):
 * the checks of ATen's grid_sampler (same floating dtype, batch sizes, the grid's last dim) */
static ic_val ext_grid_sample(ic_graph *g, int nin, const ic_val *in, int nparams, const int64_t *p) {
    if (nin != 2 || nparams != 3) return fail(g, IC_EINVALID, "grid_sample: wrong operand/param count");
    const ic_meta *x = &g->nodes[in[0]].meta, *gr = &g->nodes[in[1]].meta;
    if (x->dtype != gr->dtype) return fail(g, IC_EINVALID, "grid_sampler(): expected input and grid to have the same dtype");
    if (!ic_is_float(x->dtype)) return fail(g, IC_EUNSUPPORTED, "grid_sample of a non-floating input");
    if ((x->ndim != 4 && x->ndim != 5) || gr->ndim != x->ndim || gr->sizes[x->ndim - 1] != x->ndim - 2)
        return fail(g, IC_EINVALID, "grid_sampler(): expected 4-D or 5-D input and grid of the same rank");
    if (x->sizes[0] != gr->sizes[0]) return fail(g, IC_EINVALID, "grid_sampler(): expected grid and input to have same batch size");
    if (p[0] < 0 || p[0] > 2 || p[1] < 0 || p[1] > 2 || (p[2] != 0 && p[2] != 1) || (x->ndim == 5 && p[0] == 2))
        return fail(g, IC_EINVALID, "grid_sampler(): bad interpolation or padding mode");
    for (int i = 2; i < x->ndim; i++)
        if (x->sizes[i] == 0) return fail(g, IC_EINVALID, "grid_sampler(): expected input to have non-empty spatial dimensions");
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = IC_EXT_GRID_SAMPLE, .nparams = 3, .num = 1, .num2 = 1};
    n.in[0] = in[0];
    n.in[1] = in[1];
    for (int i = 0; i < 3; i++) n.params[i] = p[i];
    n.meta.dtype = x->dtype;
    n.meta.ndim = x->ndim;
    n.meta.sizes[0] = x->sizes[0];
    n.meta.sizes[1] = x->sizes[1];
    for (int i = 2; i < x->ndim; i++) n.meta.sizes[i] = gr->sizes[i - 1];
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

/* random (ATen's generator): the output's dtype and sizes are params (see IC_EXT_RANDOM);
 * operands only for the probabilities of bernoulli_(tensor) and multinomial */
static ic_val ext_random(ic_graph *g, int nin, const ic_val *in, int nparams, const int64_t *p, double beta,
                         double alpha) {
    if (nparams < 5) return fail(g, IC_EINVALID, "random: params missing");
    const int64_t dist = p[0], nd = p[4];
    if (dist < 0 || dist >= IC_RND_COUNT) return fail(g, IC_EINVALID, "random: bad distribution %lld", (long long)dist);
    if (p[1] < 0 || p[1] > IC_F64) return fail(g, IC_EINVALID, "random: bad dtype");
    if (nd < 0 || nd > IC_MAX_DIMS || (nparams != 5 + nd && nparams != 5 + 2 * nd))
        return fail(g, IC_EINVALID, "random: bad rank or param count");
    const bool wants_in = dist == IC_RND_BERNOULLI_T || dist == IC_RND_MULTINOMIAL;
    if (nin != (wants_in ? 1 : 0)) return fail(g, IC_EINVALID, "random: wrong operand count %d", nin);
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = IC_EXT_RANDOM, .nparams = nparams,
                 .num = beta, .num2 = alpha};
    for (int i = 0; i < nparams; i++) n.params[i] = p[i];
    for (int i = 0; i < nin; i++) {
        if (!check(g, in[i])) return IC_NONE;
        if (g->nodes[in[i]].op == IC_OP_SCALAR) return fail(g, IC_EINVALID, "random: operands must be tensors");
        if (g->nodes[in[i]].meta.dyn) return fail(g, IC_EUNSUPPORTED, "random on symbolic sizes");
        if (!ic_is_float(g->nodes[in[i]].meta.dtype)) return fail(g, IC_EUNSUPPORTED, "random: probabilities of an integer dtype");
        n.in[i] = in[i];
    }
    n.meta.dtype = (ic_dtype)p[1];
    n.meta.ndim = (int)nd;
    for (int i = 0; i < nd; i++) {
        if (p[5 + i] < 0) return fail(g, IC_EINVALID, "random: negative size");
        n.meta.sizes[i] = p[5 + i];
    }
    if (dist == IC_RND_RANDPERM && nd != 1) return fail(g, IC_EINVALID, "random: randperm is 1-D");
    if ((dist == IC_RND_UNIFORM || dist == IC_RND_NORMAL || dist == IC_RND_EXPONENTIAL) && !ic_is_float(n.meta.dtype))
        return fail(g, IC_EUNSUPPORTED, "random: uniform/normal/exponential of an integer dtype");
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

/* a custom op (see IC_EXT_CUSTOM): the output's dtype and sizes are params (the op's fake
 * impl gave them at trace time); any operands, static sizes */
static ic_val ext_custom(ic_graph *g, int nin, const ic_val *in, int nparams, const int64_t *p) {
    if (nparams < 4 || nin < 0 || nin > IC_NIN) return fail(g, IC_EINVALID, "custom: params or operands missing");
    const int64_t nd = p[3];
    if (p[2] < 0 || p[2] >= IC_DTYPE_COUNT) return fail(g, IC_EINVALID, "custom: bad dtype");
    if (nd < 0 || nd > IC_MAX_DIMS || (nparams != 4 + nd && nparams != 4 + 2 * nd))
        return fail(g, IC_EINVALID, "custom: bad rank or param count");
    if (p[1] < 0 || p[1] > nin || (p[1] > 0 && nparams != 4 + 2 * nd) || (p[1] == 0 && nparams != 4 + nd))
        return fail(g, IC_EINVALID, "custom: bad written operand"); /* (a 0-d output: both counts are 4) */
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = IC_EXT_CUSTOM, .nparams = nparams,
                 .num = 1, .num2 = 1};
    for (int i = 0; i < nparams; i++) n.params[i] = p[i];
    for (int i = 0; i < nin; i++) {
        if (!check(g, in[i])) return IC_NONE;
        if (g->nodes[in[i]].op == IC_OP_SCALAR) return fail(g, IC_EINVALID, "custom: operands must be tensors");
        if (g->nodes[in[i]].meta.dyn) return fail(g, IC_EUNSUPPORTED, "custom op on symbolic sizes");
        n.in[i] = in[i];
    }
    n.meta.dtype = (ic_dtype)p[2];
    n.meta.ndim = (int)nd;
    for (int i = 0; i < nd; i++) {
        if (p[4 + i] < 0) return fail(g, IC_EINVALID, "custom: negative size");
        n.meta.sizes[i] = p[4 + i];
    }
    if (p[1] > 0) { /* the written operand's new value: its sizes and dtype */
        const ic_meta *w = &g->nodes[in[p[1] - 1]].meta;
        bool same = w->dtype == n.meta.dtype && w->ndim == n.meta.ndim;
        for (int i = 0; same && i < nd; i++) same = w->sizes[i] == n.meta.sizes[i];
        if (!same) return fail(g, IC_EINVALID, "custom: the written operand's meta differs from the output's");
    }
    ic_contiguous_strides(&n.meta);
    return append(g, &n);
}

IC_API int ic_graph_drop_draws(ic_graph *g, ic_val from) {
    int k = 0;
    for (ic_val v = from < 0 ? 0 : from; v < g->n; v++) {
        ic_node *n = &g->nodes[v];
        if (n->op == IC_OP_EXTERN && !n->dropped && (n->ext_kind == IC_EXT_RANDOM || n->ext_kind == IC_EXT_DROPOUT_MASK ||
                                                      n->ext_kind == IC_EXT_CUSTOM)) {
            n->dropped = 1;
            k++;
        }
    }
    return k;
}

IC_API ic_val ic_extern(ic_graph *g, ic_extern_kind kind, int nin, const ic_val *in, int nparams,
                        const int64_t *params, double beta, double alpha) {
    if (g->err) return IC_NONE;
    if ((unsigned)kind >= IC_EXT_COUNT) return fail(g, IC_EINVALID, "ic_extern: bad kind %d", kind);
    if (kind == IC_EXT_RANDOM) return ext_random(g, nin, in, nparams, params, beta, alpha);
    if (kind == IC_EXT_CUSTOM) return ext_custom(g, nin, in, nparams, params);
    if (nin < 1 || nin > (kind == IC_EXT_SDPA ? 4 : kind == IC_EXT_SDPA_BWD ? 7 : 3) || nparams < 0 ||
        nparams > IC_EXT_MAXP)
        return fail(g, IC_EINVALID, "ic_extern: bad operand or param count");
    bool dyn = false;
    for (int i = 0; i < nin; i++) {
        if (!check(g, in[i])) return IC_NONE;
        if (g->nodes[in[i]].op == IC_OP_SCALAR) return fail(g, IC_EINVALID, "ic_extern: operands must be tensors");
        dyn |= g->nodes[in[i]].meta.dyn != 0;
    }
    const char *nm = extnames[kind];
    if (kind == IC_EXT_GROUPED_MM) return dyn ? fail(g, IC_EUNSUPPORTED, "%s on symbolic sizes", nm) : ext_grouped_mm(g, nin, in, nparams);
    if (kind == IC_EXT_GRID_SAMPLE)
        return dyn ? fail(g, IC_EUNSUPPORTED, "%s on symbolic sizes", nm) : ext_grid_sample(g, nin, in, nparams, params);
    if (kind >= IC_EXT_CONV_BWD) /* training: graph/vjp_extern.c */
        return dyn ? fail(g, IC_EUNSUPPORTED, "%s on symbolic sizes", nm) : ic_train_extern(g, kind, nin, in, nparams, params, beta);
    if (kind >= IC_EXT_MATRIX_EXP) { /* linear algebra: shapes in graph/linalg.c */
        ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = kind, .nparams = nparams, .num = 1, .num2 = 1};
        const ic_meta *lm[IC_NIN] = {NULL};
        for (int i = 0; i < nin; i++) n.in[i] = in[i], lm[i] = &g->nodes[in[i]].meta;
        for (int i = 0; i < nparams; i++) n.params[i] = params[i];
        char why[200];
        ic_errcode code = dyn ? IC_EUNSUPPORTED : ic_linalg_meta(kind, nin, lm, nparams, params, &n.meta, why, sizeof why);
        if (code != IC_OK) return fail(g, code, "%s: %s", nm, dyn ? "symbolic sizes" : why);
        return append(g, &n);
    }
    if (kind >= IC_EXT_GATHER) {
        if (dyn) return fail(g, IC_EUNSUPPORTED, "%s on symbolic sizes", nm);
        return ext_index_scan(g, kind, nin, in, nparams, params);
    }
    ic_node n = {.op = IC_OP_EXTERN, .in = IC_IN_NONE, .ext_kind = kind, .nparams = nparams, .num = beta,
                 .num2 = alpha};
    for (int i = 0; i < nin; i++) n.in[i] = in[i];
    for (int i = 0; i < nparams; i++) n.params[i] = params[i];
    const ic_meta *m[IC_NIN] = {NULL};
    for (int i = 0; i < nin; i++) m[i] = &g->nodes[in[i]].meta;
    ic_dtype t = m[0]->dtype;
    for (int i = 1; i < (kind == IC_EXT_SDPA ? 3 : nin); i++) /* sdpa's mask: below */
        if (m[i]->dtype != t)
            return fail(g, IC_EUNSUPPORTED, "%s: operands of different dtypes (%s, %s)", nm, ic_dtype_name(t),
                        ic_dtype_name(m[i]->dtype));
    if (!ic_is_float(t)) return fail(g, IC_EUNSUPPORTED, "%s on %s is left to eager", nm, ic_dtype_name(t));
    ic_meta *o = &n.meta;
    o->dtype = t;
    int want = kind == IC_EXT_ADDMM || kind == IC_EXT_BADDBMM ? 3
               : kind == IC_EXT_LINEAR || kind == IC_EXT_CONV || kind == IC_EXT_SDPA ? -1 : 2;
    int lo = kind == IC_EXT_SDPA ? 3 : 2, hi = kind == IC_EXT_SDPA ? 4 : 3;
    if (want > 0 ? nin != want : (nin < lo || nin > hi)) return fail(g, IC_EINVALID, "%s: wrong operand count %d", nm, nin);
    if (kind != IC_EXT_CONV && kind != IC_EXT_SDPA && nparams) return fail(g, IC_EINVALID, "%s takes no params", nm);
    if (kind != IC_EXT_ADDMM && kind != IC_EXT_BADDBMM && kind != IC_EXT_SDPA && (beta != 1 || alpha != 1))
        return fail(g, IC_EINVALID, "%s takes no alpha/beta", nm);
    switch (kind) {
    case IC_EXT_MM:
    case IC_EXT_ADDMM: {
        const ic_meta *a = m[nin - 2], *b = m[nin - 1];
        if (a->ndim != 2 || b->ndim != 2) return fail(g, IC_EINVALID, "%s: expected 2-D matrices", nm);
        if (a->sizes[1] != b->sizes[0]) return ext_fail_mm(g, nm, a, b);
        o->ndim = 2;
        o->sizes[0] = a->sizes[0];
        o->sizes[1] = b->sizes[1];
        if (kind == IC_EXT_ADDMM && !bcast_to(m[0], 2, o->sizes))
            return fail(g, IC_EINVALID, "addmm: bias does not broadcast to the product");
        break;
    }
    case IC_EXT_BMM:
    case IC_EXT_BADDBMM: {
        const ic_meta *a = m[nin - 2], *b = m[nin - 1];
        if (a->ndim != 3 || b->ndim != 3) return fail(g, IC_EINVALID, "%s: expected 3-D tensors", nm);
        if (a->sizes[0] != b->sizes[0]) return fail(g, IC_EINVALID, "%s: batch sizes differ", nm);
        if (a->sizes[2] != b->sizes[1]) return ext_fail_mm(g, nm, a, b);
        o->ndim = 3;
        o->sizes[0] = a->sizes[0];
        o->sizes[1] = a->sizes[1];
        o->sizes[2] = b->sizes[2];
        if (kind == IC_EXT_BADDBMM && !bcast_to(m[0], 3, o->sizes))
            return fail(g, IC_EINVALID, "baddbmm: self does not broadcast to the product");
        break;
    }
    case IC_EXT_MATMUL:
        if (!matmul_shape(g, m[0], m[1], o)) return IC_NONE;
        break;
    case IC_EXT_LINEAR: {
        const ic_meta *x = m[0], *w = m[1];
        if (x->ndim < 1 || w->ndim != 2) return fail(g, IC_EUNSUPPORTED, "linear: weight must be 2-D, input >= 1-D");
        if (x->sizes[x->ndim - 1] != w->sizes[1]) return fail(g, IC_EINVALID, "linear: shapes cannot be multiplied");
        *o = *x;
        o->dtype = t;
        o->sizes[x->ndim - 1] = w->sizes[0];
        if (nin == 3 && !bcast_to(m[2], 1, &w->sizes[0]))
            return fail(g, IC_EINVALID, "linear: bias must have the weight's out_features");
        break;
    }
    case IC_EXT_CONV: {
        const ic_meta *x = m[0], *w = m[1];
        if (nparams < 1) return fail(g, IC_EINVALID, "conv: params missing");
        int nd = (int)params[0];
        if (nd < 1 || nd > 3 || (nparams != 2 + 3 * nd && nparams != 3 + 3 * nd))
            return fail(g, IC_EINVALID, "conv: bad params");
        /* params[2 + 3 nd] = 1: channels-last, x is [N, *s, C] and the output [N, *o, O] */
        int cl = nparams == 3 + 3 * nd ? (int)params[2 + 3 * nd] : 0;
        if (cl != 0 && cl != 1) return fail(g, IC_EINVALID, "conv: bad layout param");
        int xc = cl ? nd + 1 : 1, xs = cl ? 1 : 2; /* x's channel dim, first spatial dim */
        if (x->ndim != nd + 2 || w->ndim != nd + 2) return fail(g, IC_EUNSUPPORTED, "conv: expected batched %dd input", nd);
        int64_t groups = params[1 + 3 * nd];
        if (groups < 1 || w->sizes[0] % groups || x->sizes[xc] != w->sizes[1] * groups)
            return fail(g, IC_EINVALID, "conv: channels do not match the weight and groups");
        if (nin == 3 && (m[2]->ndim != 1 || m[2]->sizes[0] != w->sizes[0]))
            return fail(g, IC_EINVALID, "conv: bias must be 1-D with out_channels");
        o->ndim = nd + 2;
        o->sizes[0] = x->sizes[0];
        o->sizes[cl ? nd + 1 : 1] = w->sizes[0];
        for (int i = 0; i < nd; i++) {
            int64_t st = params[1 + i], pad = params[1 + nd + i], dil = params[1 + 2 * nd + i];
            if (st < 1 || pad < 0 || dil < 1) return fail(g, IC_EINVALID, "conv: bad stride/padding/dilation");
            int64_t span = dil * (w->sizes[2 + i] - 1) + 1, in = x->sizes[xs + i] + 2 * pad;
            if (in < span) return fail(g, IC_EINVALID, "conv: kernel size can't be greater than the padded input");
            o->sizes[xs + i] = (in - span) / st + 1;
        }
        if (w->sizes[0] == 0 || x->sizes[xc] == 0) return fail(g, IC_EUNSUPPORTED, "conv with zero channels");
        break;
    }
    case IC_EXT_SDPA: {
        const ic_meta *q = m[0], *k = m[1], *v = m[2];
        int nd = q->ndim;
        if ((nparams != 1 && (nparams != 2 || params[1] != 1)) || alpha != 1)
            return fail(g, IC_EINVALID, "sdpa: params are (is_causal [, 1: stats]), beta the scale");
        if (nd < 2 || k->ndim != nd || v->ndim != nd)
            return fail(g, IC_EUNSUPPORTED, "sdpa: query, key and value of different ranks (or < 2-D)");
        for (int i = 0; i < nd - 2; i++)
            if (k->sizes[i] != q->sizes[i] || v->sizes[i] != q->sizes[i])
                return fail(g, IC_EUNSUPPORTED, "sdpa: batch dims of query, key, value differ (broadcast or grouped heads)");
        if (k->sizes[nd - 1] != q->sizes[nd - 1]) return fail(g, IC_EINVALID, "sdpa: query and key head dims differ");
        if (v->sizes[nd - 2] != k->sizes[nd - 2]) return fail(g, IC_EINVALID, "sdpa: key and value lengths differ");
        *o = *q;
        o->sizes[nd - 1] = v->sizes[nd - 1];
        if (nin == 4) {
            const ic_meta *mk = m[3];
            int64_t want_s[IC_MAX_DIMS];
            for (int i = 0; i < nd - 1; i++) want_s[i] = q->sizes[i];
            want_s[nd - 1] = k->sizes[nd - 2];
            if (mk->dtype != IC_BOOL && mk->dtype != t)
                return fail(g, IC_EUNSUPPORTED, "sdpa: mask of dtype %s", ic_dtype_name(mk->dtype));
            if (!bcast_to(mk, nd, want_s)) return fail(g, IC_EINVALID, "sdpa: mask does not broadcast to [..., L, S]");
            if (params[0]) return fail(g, IC_EINVALID, "sdpa: explicit attn_mask should not be set when is_causal=True");
        }
        if (nparams == 2) { /* with the backward's statistics: flat (ic_sdpa_stats_layout) */
            if (dyn) return fail(g, IC_EUNSUPPORTED, "sdpa with statistics on symbolic sizes");
            int64_t nn, off, total;
            ic_sdpa_stats_layout(o, &nn, &off, &total);
            o->dtype = t == IC_F64 ? IC_F64 : IC_F32;
            o->ndim = 1;
            o->sizes[0] = total;
        }
        break;
    }
    default:
        return fail(g, IC_EINVALID, "ic_extern: bad kind");
    }
    if (dyn && !ext_dyn(g, kind, nin, m, o)) return IC_NONE;
    ic_contiguous_strides(o);
    return append(g, &n);
}

ic_val ic_graph_append_node(ic_graph *g, const ic_node *n) { return g->err ? IC_NONE : append(g, n); }

IC_API int ic_output(ic_graph *g, ic_val v) {
    if (!check(g, v)) return -1;
    if (!grow((void **)&g->outputs, &g->ocap, g->noutputs + 1, sizeof(ic_val))) {
        fail(g, IC_ENOMEM, "out of memory");
        return -1;
    }
    g->outputs[g->noutputs] = v;
    return g->noutputs++;
}

IC_API int ic_value_grad_on(const ic_graph *g, ic_val v) {
    if (v < 0 || v >= g->n) return 0;
    const ic_node *n = &g->nodes[v];
    bool open = g->nograd_depth > 0 && v >= g->nograd_from; /* a region not closed yet */
    return n->op != IC_OP_INPUT && n->op != IC_OP_SCALAR && !n->nograd && !open;
}

IC_API int ic_output_into(ic_graph *g, int j, int i) {
    if (g->err || j < 0 || j >= g->noutputs || i < 0 || i >= g->ninputs) return -1;
    for (int k = 0; k < g->ninto; k++)
        if (g->into[2 * k] == j || g->into[2 * k + 1] == i) return -1;
    int *p = realloc(g->into, (size_t)(g->ninto + 1) * 2 * sizeof(int));
    if (!p) {
        fail(g, IC_ENOMEM, "out of memory");
        return -1;
    }
    g->into = p;
    g->into[2 * g->ninto] = j;
    g->into[2 * g->ninto + 1] = i;
    g->ninto++;
    return 0;
}

IC_API const ic_meta *ic_value_meta(const ic_graph *g, ic_val v) {
    if (v < 0 || v >= g->n) return NULL;
    return &g->nodes[v].meta;
}
IC_API ic_op ic_value_op(const ic_graph *g, ic_val v) {
    if (v < 0 || v >= g->n) return IC_OP_COUNT;
    return g->nodes[v].op;
}
IC_API int ic_value_operands(const ic_graph *g, ic_val v, ic_val *out) {
    if (v < 0 || v >= g->n) return 0;
    int k = 0;
    for (; k < IC_NIN && g->nodes[v].in[k] >= 0; k++) out[k] = g->nodes[v].in[k];
    return k;
}
static int int_range(const ic_graph *g, ic_val v, double *lo, double *hi, int depth) {
    if (v < 0 || v >= g->n || depth > 16) return 0;
    const ic_node *n = &g->nodes[v];
    if (n->meta.dyn) return 0;
    double a0, a1, b0, b1;
    switch (n->op) {
    case IC_OP_SCALAR:
        if (n->num != n->num || n->num != (double)(int64_t)n->num) return 0;
        *lo = *hi = n->num;
        return 1;
    case IC_OP_ARANGE: {
        if (n->meta.dtype == IC_F16 || n->meta.dtype == IC_BF16 || n->meta.dtype == IC_F32 ||
            n->meta.dtype == IC_F64 || n->meta.sizes[0] <= 0)
            return 0;
        double last = n->num + n->num2 * (double)(n->meta.sizes[0] - 1);
        *lo = n->num < last ? n->num : last;
        *hi = n->num < last ? last : n->num;
        return *lo == (double)(int64_t)*lo && *hi == (double)(int64_t)*hi;
    }
    case IC_OP_ADD:
    case IC_OP_SUB:
        if (n->meta.dtype == IC_F16 || n->meta.dtype == IC_BF16 || n->meta.dtype == IC_F32 ||
            n->meta.dtype == IC_F64 || n->meta.dtype == IC_BOOL)
            return 0;
        if (!int_range(g, n->in[0], &a0, &a1, depth + 1) || !int_range(g, n->in[1], &b0, &b1, depth + 1))
            return 0;
        *lo = n->op == IC_OP_ADD ? a0 + b0 : a0 - b1;
        *hi = n->op == IC_OP_ADD ? a1 + b1 : a1 - b0;
        return 1;
    case IC_OP_CAST: /* to an integer type wide enough (int32/int64) */
        if (n->meta.dtype != IC_I64 && n->meta.dtype != IC_I32) return 0;
        if (!int_range(g, n->in[0], lo, hi, depth + 1)) return 0;
        return *lo >= -2147483648.0 && *hi <= 2147483647.0;
    case IC_OP_RESHAPE: case IC_OP_PERMUTE: case IC_OP_EXPAND: case IC_OP_SLICE:
    case IC_OP_INDEX_SELECT:
        return int_range(g, n->in[0], lo, hi, depth + 1); /* a subset of the same elements */
    case IC_OP_MUL:
    case IC_OP_FLOOR_DIVIDE:
    case IC_OP_REMAINDER: { /* integer math: the corners (floor(a / b) is monotone in each
                             * operand while b > 0); a wrapping product is not bounded */
        if (n->meta.dtype != IC_I64 && n->meta.dtype != IC_I32) return 0;
        if (!int_range(g, n->in[0], &a0, &a1, depth + 1) || !int_range(g, n->in[1], &b0, &b1, depth + 1))
            return 0;
        /* by one number only: the bounds stay attained where a's are (index checks report
         * an index past them as eager's error) */
        if (b0 != b1 || (n->op != IC_OP_MUL && b0 <= 0)) return 0;
        if (n->op == IC_OP_REMAINDER) { /* Python's %: in [0, b) */
            double q = floor(a0 / b0);
            int one = floor(a1 / b0) == q; /* a0..a1 within one period: a - q b */
            *lo = one ? a0 - q * b0 : 0;
            *hi = one ? a1 - q * b0 : b0 - 1;
            return 1;
        }
        double c[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
        if (n->op == IC_OP_FLOOR_DIVIDE)
            c[0] = floor(a0 / b0), c[1] = floor(a0 / b1), c[2] = floor(a1 / b0), c[3] = floor(a1 / b1);
        *lo = *hi = c[0];
        for (int i = 1; i < 4; i++) {
            if (c[i] < *lo) *lo = c[i];
            if (c[i] > *hi) *hi = c[i];
        }
        return fabs(*lo) < 2147483647.0 && fabs(*hi) < 2147483647.0;
    }
    case IC_OP_EXTERN: /* sort (selection) indices: positions along the sorted dim */
        if (n->ext_kind != IC_EXT_ARGSORT || (n->nparams != 3 && n->nparams != 4) || n->in[0] < 0) return 0;
        {
            const ic_meta *x = &g->nodes[n->in[0]].meta;
            int64_t len = x->ndim ? x->sizes[n->params[0]] : 1;
            if (len <= 0) return 0;
            *lo = 0;
            *hi = (double)(len - 1);
            return 1;
        }
    default:
        return 0;
    }
}

IC_API ic_val ic_value_view_root(const ic_graph *g, ic_val v) {
    while (v >= 0 && v < g->n &&
           (g->nodes[v].op == IC_OP_RESHAPE || g->nodes[v].op == IC_OP_PERMUTE ||
            g->nodes[v].op == IC_OP_EXPAND || g->nodes[v].op == IC_OP_SLICE ||
            g->nodes[v].op == IC_OP_INDEX_SELECT ||
            (g->nodes[v].op == IC_OP_EXTERN && g->nodes[v].ext_kind == IC_EXT_GATHER)))
        v = g->nodes[v].in[0];
    return v;
}

IC_API int ic_value_int_range(const ic_graph *g, ic_val v, double *lo, double *hi) {
    return int_range(g, v, lo, hi, 0);
}

IC_API int ic_graph_num_inputs(const ic_graph *g) { return g->ninputs; }
IC_API int ic_graph_num_outputs(const ic_graph *g) { return g->noutputs; }
IC_API int ic_graph_num_ops(const ic_graph *g) { return g->nops; }


/* Number of graph operands that read v (outputs not counted). */
IC_API int ic_value_num_uses(const ic_graph *g, ic_val v) {
    int n = 0;
    for (int i = 0; i < g->n; i++)
        for (int k = 0; k < IC_NIN; k++)
            n += g->nodes[i].in[k] == v;
    return n;
}

/* The value of graph input i (IC_NONE when out of range). */
IC_API ic_val ic_graph_input(const ic_graph *g, int i) {
    return i >= 0 && i < g->ninputs ? g->inputs[i] : IC_NONE;
}
