/* print.c — text form and verifier of the graph IR.
 *
 * Contract: reads a graph, never modifies it. Text format, one line per value:
 *   %3 = sum %2 dims=[1] keepdim : f32[4,1]
 *   %0 = input 0 : f32[4,5] strides=[5,1]
 *   output 0 = %3
 */
#include <stdlib.h>
#include <string.h>

#include "../ic_internal.h"

void ic_str_printf(ic_str *s, const char *fmt, ...) {
    if (s->oom) return;
    for (;;) {
        size_t room = s->cap - s->n;
        va_list ap;
        va_start(ap, fmt);
        int k = room ? vsnprintf(s->s + s->n, room, fmt, ap) : -1;
        va_end(ap);
        if (k >= 0 && (size_t)k < room) {
            s->n += (size_t)k;
            return;
        }
        size_t nc = s->cap ? s->cap * 2 : 256;
        while (k >= 0 && nc < s->n + (size_t)k + 1) nc *= 2;
        char *p = realloc(s->s, nc);
        if (!p) {
            s->oom = true;
            return;
        }
        s->s = p;
        s->cap = nc;
    }
}

static void meta_str(ic_str *s, const ic_meta *m, bool strides) {
    ic_str_printf(s, "%s[", ic_dtype_name(m->dtype));
    for (int i = 0; i < m->ndim; i++) ic_str_printf(s, "%s%lld", i ? "," : "", (long long)m->sizes[i]);
    ic_str_printf(s, "]");
    if (m->dyn) { /* symbolic sizes (part of the cache key) */
        ic_str_printf(s, " sym=[");
        for (int i = 0; i < m->ndim; i++) {
            if (i) ic_str_printf(s, ",");
            ic_dim_print(s, m->dims[i]);
        }
        ic_str_printf(s, "]");
    }
    if (strides) {
        ic_str_printf(s, " strides=[");
        for (int i = 0; i < m->ndim; i++)
            ic_str_printf(s, "%s%lld", i ? "," : "", (long long)m->strides[i]);
        ic_str_printf(s, "]");
    }
}

IC_API char *ic_graph_to_string(const ic_graph *g) {
    ic_str s = {0};
    for (int v = 0; v < g->n; v++) {
        const ic_node *n = &g->nodes[v];
        ic_str_printf(&s, "%%%d = %s", v, ic_op_name(n->op));
        switch (n->op) {
        case IC_OP_INPUT:
            ic_str_printf(&s, " %d", n->index);
            break;
        case IC_OP_SCALAR:
            ic_str_printf(&s, " %.17g", n->num);
            break;
        default:
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) ic_str_printf(&s, " %%%d", n->in[i]);
        }
        if (n->op == IC_OP_SLICE)
            ic_str_printf(&s, " dim=%d start=%lld step=%lld", n->dim, (long long)n->start, (long long)n->step);
        if (n->op == IC_OP_CAT || n->op == IC_OP_INDEX_SELECT) ic_str_printf(&s, " dim=%d", n->dim);
        if (n->op == IC_OP_ARANGE) ic_str_printf(&s, " start=%.17g step=%.17g", n->num, n->num2);
        if (n->op == IC_OP_SUM || n->op == IC_OP_MEAN || n->op == IC_OP_AMAX ||
            n->op == IC_OP_AMIN || n->op == IC_OP_PROD || n->op == IC_OP_ARGMAX || n->op == IC_OP_ARGMIN) {
            ic_str_printf(&s, " dims=[");
            int k = 0;
            for (int d = 0; d < 32; d++)
                if ((n->dim_mask >> d) & 1) ic_str_printf(&s, "%s%d", k++ ? "," : "", d);
            ic_str_printf(&s, "]%s", n->keepdim ? " keepdim" : "");
        }
        if (n->op == IC_OP_EXTERN) {
            ic_str_printf(&s, " %s", ic_extern_name(n->ext_kind));
            if (n->nparams) {
                ic_str_printf(&s, " params=[");
                for (int i = 0; i < n->nparams; i++) ic_str_printf(&s, "%s%lld", i ? "," : "", (long long)n->params[i]);
                ic_str_printf(&s, "]");
            }
            if (n->num != 1 || n->num2 != 1) ic_str_printf(&s, " beta=%.17g alpha=%.17g", n->num, n->num2);
            if (n->dropped) ic_str_printf(&s, " dropped");
        }
        if (n->op == IC_OP_PERMUTE) {
            ic_str_printf(&s, " perm=[");
            for (int d = 0; d < n->meta.ndim; d++) ic_str_printf(&s, "%s%d", d ? "," : "", n->perm[d]);
            ic_str_printf(&s, "]");
        }
        ic_str_printf(&s, " : ");
        meta_str(&s, &n->meta, n->op == IC_OP_INPUT);
        ic_str_printf(&s, "\n");
    }
    for (int i = 0; i < g->noutputs; i++) {
        ic_str_printf(&s, "output %d = %%%d", i, g->outputs[i]);
        const ic_node *n = g->outputs[i] >= 0 && g->outputs[i] < g->n ? &g->nodes[g->outputs[i]] : NULL;
        if (n) { /* eager's strides, when the output is not allocated contiguous (strides.c) */
            ic_meta c = n->meta;
            ic_contiguous_strides(&c);
            int64_t st[IC_MAX_DIMS] = {0};
            ic_layout_output(n, st);
            if (memcmp(st, c.strides, sizeof(int64_t) * (size_t)c.ndim)) {
                ic_str_printf(&s, " strides=[");
                for (int d = 0; d < c.ndim; d++) ic_str_printf(&s, "%s%lld", d ? "," : "", (long long)st[d]);
                ic_str_printf(&s, "]");
            }
        }
        for (int k = 0; k < g->ninto; k++) /* stored into an input (ic_output_into) */
            if (g->into[2 * k] == i) ic_str_printf(&s, " into=%d", g->into[2 * k + 1]);
        ic_str_printf(&s, "\n");
    }
    if (!s.s) ic_str_printf(&s, "%s", "");
    if (s.oom) {
        free(s.s);
        return NULL;
    }
    return s.s;
}

/* Structural checks: operands precede users, arities match the op table, metas sane. */
int ic_graph_verify(const ic_graph *g, char *msg, size_t mn) {
    static const int nin[] = {
#define IC_X_NIN(name, text, nin, kind, flags) nin,
        IC_OPS(IC_X_NIN)
#undef IC_X_NIN
    };
    for (int v = 0; v < g->n; v++) {
        const ic_node *n = &g->nodes[v];
        if ((unsigned)n->op >= IC_OP_COUNT) {
            snprintf(msg, mn, "%%%d: bad op", v);
            return -1;
        }
        int k = nin[n->op];
        if (k < 0) /* variable: a prefix of 0..IC_NIN operands */
            for (k = 0; k < IC_NIN && n->in[k] >= 0;) k++;
        if (n->op == IC_OP_EXTERN && ((k < 1 && n->ext_kind != IC_EXT_RANDOM && n->ext_kind != IC_EXT_CUSTOM) || (unsigned)n->ext_kind >= IC_EXT_COUNT || n->nparams < 0 ||
                                      n->nparams > IC_EXT_MAXP)) {
            snprintf(msg, mn, "%%%d: bad extern", v);
            return -1;
        }
        for (int i = 0; i < IC_NIN; i++) {
            bool want = i < k;
            if (want != (n->in[i] >= 0) || (want && n->in[i] >= v)) {
                snprintf(msg, mn, "%%%d: bad operand %d", v, i);
                return -1;
            }
        }
        if (n->meta.ndim < 0 || n->meta.ndim > IC_MAX_DIMS || (unsigned)n->meta.dtype >= IC_DTYPE_COUNT) {
            snprintf(msg, mn, "%%%d: bad meta", v);
            return -1;
        }
    }
    for (int i = 0; i < g->noutputs; i++)
        if (g->outputs[i] < 0 || g->outputs[i] >= g->n) {
            snprintf(msg, mn, "output %d: bad value", i);
            return -1;
        }
    return 0;
}
