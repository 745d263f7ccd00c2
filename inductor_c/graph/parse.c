/* parse.c — the graph text parser: the inverse of ic_graph_to_string (print.c).
 *
 * Contract: reads text, returns a new graph (the caller frees it with ic_graph_free), never
 * reads or changes another graph. ic_graph_parse(ic_graph_to_string(g)) equals g in every
 * field the compiler reads (ic_graph_equal): that is what makes the printed text a complete
 * in-memory and disk cache key (the key is that text plus the options and the settings).
 * tests/c/test_ptx.c checks it over the whole graph corpus, tests/test_graph_text.py over
 * every graph the corpus programs compile (ic_test_graph_roundtrip).
 *
 * Fields the printer leaves out, and why they are not part of the key:
 *   strides of values other than inputs: always contiguous (the builders set them so);
 *   eager's strides (graph/strides.c): only those of outputs reach the compiler, printed
 *     after an output not allocated contiguous (`output 0 = %3 strides=[1,4]`);
 *   nops: counted from the nodes; sym_hint: the hint of s_k is size / coef of an input dim
 *     coef * s_k (what ic_input_dyn learns);
 *   nograd, nograd_depth/from, dflt: read by the graph builders and autograd only, not by the
 *     compiler (dflt has decided every dtype by the time the graph is built).
 *
 * Text (one line per value, then the outputs; blank lines and lines starting with # skipped):
 *   %0 = input 0 : f32[4,5] strides=[5,1]
 *   %1 = scalar 2 : f64[]
 *   %2 = mul %0 %1 : f32[4,5]
 *   %3 = sum %2 dims=[1] keepdim : f32[4,1]
 *   output 0 = %3
 * A value's number must be its position; operands must come before it. Symbolic sizes:
 * `f32[6,4] sym=[3*s0,4]` (hints in the sizes). Errors: NULL, the line and reason in msg.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"

typedef struct pstate {
    const char *p;   /* cursor in the current line */
    const char *end; /* end of the current line */
    int line;
    char *msg;
    size_t mn;
    bool bad;
} pstate;

static void perr(pstate *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(pstate *s, const char *fmt, ...) {
    if (s->bad) return;
    s->bad = true;
    int k = snprintf(s->msg, s->mn, "line %d: ", s->line);
    if (k < 0 || (size_t)k >= s->mn) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg + k, s->mn - (size_t)k, fmt, ap);
    va_end(ap);
}

#define PFAIL(...) do { perr(__VA_ARGS__); return; } while (0)

/* the rest of the line, at most 20 characters (for messages) */
static int rest(const pstate *s) {
    long n = s->end - s->p;
    return n < 0 ? 0 : n > 20 ? 20 : (int)n;
}

static void skip_ws(pstate *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static bool at_end(pstate *s) {
    skip_ws(s);
    return s->p >= s->end;
}

/* consumes `lit` (after blanks) if it is next */
static bool accept(pstate *s, const char *lit) {
    skip_ws(s);
    size_t n = strlen(lit);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n)) return false;
    s->p += n;
    return true;
}

static void expect(pstate *s, const char *lit) {
    if (!accept(s, lit)) perr(s, "expected '%s' at '%.20s'", lit, s->p);
}

/* a word: letters, digits, _ and . (op, dtype and extern names) */
static size_t word(pstate *s, char *buf, size_t n) {
    skip_ws(s);
    size_t k = 0;
    while (s->p < s->end && (isalnum((unsigned char)*s->p) || *s->p == '_' || *s->p == '.')) {
        if (k + 1 < n) buf[k++] = *s->p;
        s->p++;
    }
    buf[k] = 0;
    return k;
}

static int64_t integer(pstate *s) {
    skip_ws(s);
    char *e;
    errno = 0;
    long long v = strtoll(s->p, &e, 10);
    if (e == s->p || e > s->end || errno) {
        perr(s, "expected an integer at '%.*s'", rest(s), s->p);
        return 0;
    }
    s->p = e;
    return v;
}

/* a double as printed by %.17g (inf, -inf, nan and -nan included): exact round trip */
static double number(pstate *s) {
    skip_ws(s);
    char buf[64];
    size_t k = 0;
    while (s->p + k < s->end && k + 1 < sizeof buf && !isspace((unsigned char)s->p[k])) k++;
    memcpy(buf, s->p, k);
    buf[k] = 0;
    char *e;
    double v = strtod(buf, &e);
    if (e == buf || *e) {
        perr(s, "expected a number at '%.*s'", rest(s), s->p);
        return 0;
    }
    s->p += k;
    return v;
}

static ic_val value_ref(pstate *s, int n) {
    expect(s, "%");
    int64_t v = integer(s);
    if (!s->bad && (v < 0 || v >= n)) perr(s, "%%%lld is not an earlier value", (long long)v);
    return (ic_val)v;
}

/* `[a,b,...]` of integers; returns the count (at most max) */
static int int_list(pstate *s, int64_t *out, int max) {
    expect(s, "[");
    int n = 0;
    if (accept(s, "]")) return 0;
    do {
        int64_t v = integer(s);
        if (n >= max) {
            perr(s, "more than %d entries", max);
            return n;
        }
        out[n++] = v;
    } while (!s->bad && accept(s, ","));
    expect(s, "]");
    return n;
}

/* a symbolic size as ic_dim_print writes it: 12, s0, 3*s0^2*s1 */
static ic_dim sym_dim(pstate *s) {
    ic_dim d = {.coef = 1};
    skip_ws(s);
    bool any = false;
    if (s->p < s->end && (isdigit((unsigned char)*s->p) || *s->p == '-')) {
        d.coef = integer(s);
        any = true;
        if (!accept(s, "*")) return d;
    }
    do {
        expect(s, "s");
        int64_t k = integer(s);
        if (s->bad) return d;
        if (k < 0 || k >= IC_MAX_SYMS) {
            perr(s, "symbol s%lld out of range", (long long)k);
            return d;
        }
        int64_t e = 1;
        if (accept(s, "^")) e = integer(s);
        if (e < 1 || e > 255 || d.exp[k]) {
            perr(s, "bad exponent of s%lld", (long long)k);
            return d;
        }
        d.exp[k] = (uint8_t)e;
        any = true;
    } while (!s->bad && accept(s, "*"));
    if (!any) perr(s, "expected a size");
    return d;
}

static int dtype_of(const char *name) {
    for (int t = 0; t < IC_DTYPE_COUNT; t++)
        if (!strcmp(name, ic_dtype_name((ic_dtype)t))) return t;
    return -1;
}

/* `f32[4,5] [sym=[..]] [strides=[..]]`; strides contiguous unless given */
static void meta(pstate *s, ic_meta *m) {
    char name[16];
    word(s, name, sizeof name);
    int t = dtype_of(name);
    if (t < 0) PFAIL(s, "unknown dtype '%s'", name);
    m->dtype = (ic_dtype)t;
    m->ndim = int_list(s, m->sizes, IC_MAX_DIMS);
    for (int i = 0; i < m->ndim; i++)
        if (m->sizes[i] < 0) PFAIL(s, "negative size");
    ic_contiguous_strides(m);
    if (accept(s, "sym=")) {
        m->dyn = 1;
        expect(s, "[");
        for (int i = 0; i < m->ndim && !s->bad; i++) {
            if (i) expect(s, ",");
            m->dims[i] = sym_dim(s);
        }
        expect(s, "]");
    }
    if (accept(s, "strides=")) {
        int64_t st[IC_MAX_DIMS];
        int n = int_list(s, st, IC_MAX_DIMS);
        if (n != m->ndim) PFAIL(s, "%d strides for %d dims", n, m->ndim);
        memcpy(m->strides, st, sizeof st);
    }
}

static bool is_reduction(ic_op op) {
    return op == IC_OP_SUM || op == IC_OP_MEAN || op == IC_OP_AMAX || op == IC_OP_AMIN || op == IC_OP_PROD ||
           op == IC_OP_ARGMAX || op == IC_OP_ARGMIN;
}

static int op_of(const char *name) {
    for (int op = 0; op < IC_OP_COUNT; op++)
        if (!strcmp(name, ic_op_name((ic_op)op))) return op;
    return -1;
}

static int extern_of(const char *name) {
    for (int k = 0; k < IC_EXT_COUNT; k++)
        if (!strcmp(name, ic_extern_name((ic_extern_kind)k))) return k;
    return -1;
}

static bool push(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 16;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

/* one `%V = op ...` line into node n (g has the values before it) */
static void node_line(pstate *s, ic_graph *g, ic_node *n) {
    memset(n, 0, sizeof *n);
    for (int i = 0; i < IC_NIN; i++) n->in[i] = -1;
    expect(s, "%");
    int64_t v = integer(s);
    if (!s->bad && v != g->n) PFAIL(s, "value %%%lld out of order (expected %%%d)", (long long)v, g->n);
    expect(s, "=");
    char name[32];
    word(s, name, sizeof name);
    int op = op_of(name);
    if (s->bad) return;
    if (op < 0) PFAIL(s, "unknown op '%s'", name);
    n->op = (ic_op)op;
    switch (n->op) {
    case IC_OP_INPUT: n->index = (int)integer(s); break;
    case IC_OP_SCALAR: n->num = number(s); break;
    default:
        for (int i = 0; i < IC_NIN && !s->bad; i++) {
            skip_ws(s);
            if (s->p >= s->end || *s->p != '%') break;
            n->in[i] = value_ref(s, g->n);
        }
    }
    if (n->op == IC_OP_SLICE) {
        expect(s, "dim=");
        n->dim = (int)integer(s);
        expect(s, "start=");
        n->start = integer(s);
        expect(s, "step=");
        n->step = integer(s);
    }
    if (n->op == IC_OP_CAT || n->op == IC_OP_INDEX_SELECT) {
        expect(s, "dim=");
        n->dim = (int)integer(s);
    }
    if (n->op == IC_OP_ARANGE) {
        expect(s, "start=");
        n->num = number(s);
        expect(s, "step=");
        n->num2 = number(s);
    }
    if (is_reduction(n->op)) {
        expect(s, "dims=");
        int64_t d[32];
        int k = int_list(s, d, 32);
        for (int i = 0; i < k; i++) {
            if (d[i] < 0 || d[i] >= 32) PFAIL(s, "reduced dim %lld out of range", (long long)d[i]);
            n->dim_mask |= 1u << d[i];
        }
        n->keepdim = accept(s, "keepdim");
    }
    if (n->op == IC_OP_EXTERN) {
        word(s, name, sizeof name);
        int k = extern_of(name);
        if (k < 0) PFAIL(s, "unknown extern '%s'", name);
        n->ext_kind = k;
        n->num = n->num2 = 1;
        if (accept(s, "params=")) n->nparams = int_list(s, n->params, IC_EXT_MAXP);
        if (accept(s, "beta=")) {
            n->num = number(s);
            expect(s, "alpha=");
            n->num2 = number(s);
        }
        n->dropped = accept(s, "dropped");
    }
    if (n->op == IC_OP_PERMUTE) {
        expect(s, "perm=");
        int64_t p[IC_MAX_DIMS];
        int k = int_list(s, p, IC_MAX_DIMS);
        for (int i = 0; i < k; i++) n->perm[i] = (int)p[i];
    }
    expect(s, ":");
    if (!s->bad) meta(s, &n->meta);
    if (!s->bad && n->op == IC_OP_PERMUTE) {
        /* the printer writes ndim entries of perm; check them against the meta */
        for (int i = 0; i < n->meta.ndim; i++)
            if (n->perm[i] < 0 || n->perm[i] >= n->meta.ndim) PFAIL(s, "bad perm");
    }
    if (!s->bad && !at_end(s)) perr(s, "unexpected '%.*s'", rest(s), s->p);
}

IC_API ic_graph *ic_graph_parse(const char *text, char *msg, size_t mn) {
    char dummy[8];
    if (!msg || !mn) msg = dummy, mn = sizeof dummy;
    msg[0] = 0;
    ic_graph *g = ic_graph_new();
    if (!g || !text) {
        snprintf(msg, mn, "%s", g ? "no text" : "out of memory");
        ic_graph_free(g);
        return NULL;
    }
    pstate s = {.msg = msg, .mn = mn};
    bool outputs = false;
    for (const char *p = text; *p && !s.bad;) {
        const char *e = strchr(p, '\n');
        if (!e) e = p + strlen(p);
        s.p = p;
        s.end = e;
        s.line++;
        p = *e ? e + 1 : e;
        if (at_end(&s) || *s.p == '#') continue;
        if (accept(&s, "output")) {
            int64_t j = integer(&s);
            expect(&s, "=");
            ic_val v = value_ref(&s, g->n);
            if (!s.bad && accept(&s, "strides=")) { /* eager's strides of the output (strides.c) */
                int64_t st[IC_MAX_DIMS] = {0};
                int nst = int_list(&s, st, IC_MAX_DIMS);
                if (!s.bad && nst != g->nodes[v].meta.ndim) perr(&s, "%d strides for %d dims", nst, g->nodes[v].meta.ndim);
                if (!s.bad) memcpy(g->nodes[v].est, st, sizeof st);
            } else if (!s.bad) { /* none printed: allocated contiguous */
                ic_meta cm = g->nodes[v].meta;
                ic_contiguous_strides(&cm);
                memcpy(g->nodes[v].est, cm.strides, sizeof cm.strides);
            }
            int64_t into = -1; /* stored into input `into` (ic_output_into) */
            if (!s.bad && accept(&s, "into=")) into = integer(&s);
            if (!s.bad && j != g->noutputs) perr(&s, "output %lld out of order", (long long)j);
            if (!s.bad && !at_end(&s)) perr(&s, "unexpected '%.*s'", rest(&s), s.p);
            if (s.bad) break;
            if (!push((void **)&g->outputs, &g->ocap, g->noutputs + 1, sizeof(ic_val))) goto oom;
            g->outputs[g->noutputs++] = v;
            if (into >= 0 && ic_output_into(g, (int)j, (int)into) < 0) {
                if (g->err == IC_ENOMEM) goto oom;
                perr(&s, "into=%lld: a bad or repeated input", (long long)into);
                break;
            }
            outputs = true;
            continue;
        }
        if (outputs) {
            perr(&s, "a value after the outputs");
            break;
        }
        ic_node n;
        node_line(&s, g, &n);
        if (s.bad) break;
        if (!push((void **)&g->nodes, &g->cap, g->n + 1, sizeof(ic_node))) goto oom;
        if (n.op == IC_OP_INPUT) {
            if (n.index != g->ninputs) {
                perr(&s, "input %d out of order (expected %d)", n.index, g->ninputs);
                break;
            }
            if (!push((void **)&g->inputs, &g->icap, g->ninputs + 1, sizeof(ic_val))) goto oom;
            g->inputs[g->ninputs++] = g->n;
            /* hints: a dim coef * s_k of an input (as ic_input_dyn learns them) */
            for (int d = 0; n.meta.dyn && d < n.meta.ndim; d++) {
                const ic_dim *x = &n.meta.dims[d];
                int nsym = 0, k1 = -1;
                for (int k = 0; k < IC_MAX_SYMS; k++)
                    if (x->exp[k]) nsym++, k1 = k;
                if (nsym == 1 && x->exp[k1] == 1 && x->coef > 0 && !g->sym_hint[k1])
                    g->sym_hint[k1] = n.meta.sizes[d] / x->coef;
            }
        } else if (n.op != IC_OP_SCALAR) {
            g->nops++;
        }
        g->nodes[g->n++] = n;
    }
    if (!s.bad && ic_graph_verify(g, msg, mn) != 0) s.bad = true;
    if (s.bad) {
        ic_graph_free(g);
        return NULL;
    }
    return g;
oom:
    snprintf(msg, mn, "out of memory");
    ic_graph_free(g);
    return NULL;
}

/* ---- equality: every field the compiler reads ------------------------------------------ */
static bool meta_same(const ic_meta *a, const ic_meta *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || (a->dyn != 0) != (b->dyn != 0)) return false;
    for (int i = 0; i < a->ndim; i++) {
        if (a->sizes[i] != b->sizes[i] || a->strides[i] != b->strides[i]) return false;
        if (a->dyn && (a->dims[i].coef != b->dims[i].coef || memcmp(a->dims[i].exp, b->dims[i].exp, sizeof a->dims[i].exp)))
            return false;
    }
    return true;
}

/* doubles bit for bit, except NaNs: any NaN prints as nan or -nan (the sign is kept) */
static bool num_same(double a, double b) {
    if (isnan(a) && isnan(b)) return signbit(a) == signbit(b);
    return !memcmp(&a, &b, sizeof a);
}

IC_API int ic_graph_equal(const ic_graph *a, const ic_graph *b, char *msg, size_t mn) {
    char dummy[8];
    if (!msg || !mn) msg = dummy, mn = sizeof dummy;
#define DIFF(...) return snprintf(msg, mn, __VA_ARGS__), -1
    if (a->n != b->n) DIFF("%d values vs %d", a->n, b->n);
    if (a->ninputs != b->ninputs) DIFF("%d inputs vs %d", a->ninputs, b->ninputs);
    if (a->noutputs != b->noutputs) DIFF("%d outputs vs %d", a->noutputs, b->noutputs);
    if (a->nops != b->nops) DIFF("%d ops vs %d", a->nops, b->nops);
    for (int i = 0; i < a->ninputs; i++)
        if (a->inputs[i] != b->inputs[i]) DIFF("input %d: %%%d vs %%%d", i, a->inputs[i], b->inputs[i]);
    for (int i = 0; i < a->noutputs; i++)
        if (a->outputs[i] != b->outputs[i]) DIFF("output %d: %%%d vs %%%d", i, a->outputs[i], b->outputs[i]);
    if (a->ninto != b->ninto) DIFF("%d in-place outputs vs %d", a->ninto, b->ninto);
    for (int k = 0; k < 2 * a->ninto; k++)
        if (a->into[k] != b->into[k]) DIFF("in-place output %d differs", k / 2);
    for (int i = 0; i < a->noutputs; i++) { /* the strides outputs are allocated with */
        int64_t sa[IC_MAX_DIMS] = {0}, sb[IC_MAX_DIMS] = {0};
        if (a->outputs[i] < 0 || a->outputs[i] >= a->n || b->outputs[i] < 0 || b->outputs[i] >= b->n) continue;
        ic_layout_output(&a->nodes[a->outputs[i]], sa);
        ic_layout_output(&b->nodes[b->outputs[i]], sb);
        if (memcmp(sa, sb, sizeof sa)) DIFF("output %d: eager's strides differ", i);
    }
    for (int k = 0; k < IC_MAX_SYMS; k++)
        if (a->sym_hint[k] != b->sym_hint[k])
            DIFF("hint of s%d: %lld vs %lld", k, (long long)a->sym_hint[k], (long long)b->sym_hint[k]);
    for (int v = 0; v < a->n; v++) {
        const ic_node *x = &a->nodes[v], *y = &b->nodes[v];
        const char *what = NULL;
        if (x->op != y->op) what = "op";
        else if (memcmp(x->in, y->in, sizeof x->in)) what = "operands";
        else if (!meta_same(&x->meta, &y->meta)) what = "meta (dtype, sizes, strides or symbolic sizes)";
        else if (!num_same(x->num, y->num)) what = "num";
        else if (!num_same(x->num2, y->num2)) what = "num2";
        else if (x->dim_mask != y->dim_mask) what = "dim_mask";
        else if (x->keepdim != y->keepdim) what = "keepdim";
        else if (memcmp(x->perm, y->perm, sizeof x->perm)) what = "perm";
        else if (x->index != y->index) what = "index";
        else if (x->dim != y->dim) what = "dim";
        else if (x->start != y->start || x->step != y->step) what = "start/step";
        else if (x->ext_kind != y->ext_kind) what = "ext_kind";
        else if (x->nparams != y->nparams || memcmp(x->params, y->params, sizeof x->params)) what = "params";
        if (what) DIFF("%%%d (%s): %s differs", v, ic_op_name(x->op), what);
    }
#undef DIFF
    return 0;
}

IC_API int ic_graph_roundtrip(const ic_graph *g, char *msg, size_t mn) {
    char *text = ic_graph_to_string(g);
    if (!text) return snprintf(msg, mn, "out of memory"), -1;
    char why[256];
    ic_graph *h = ic_graph_parse(text, why, sizeof why);
    int rc = -1;
    if (!h) snprintf(msg, mn, "parse: %s", why);
    else rc = ic_graph_equal(g, h, msg, mn);
    free(text);
    ic_graph_free(h);
    return rc;
}
