/* driver_passes.c — steps of the driver's pipeline (compile.c pipeline()) that analyse the
 * finalized kernels for a backend, so that code generation only reads their results.
 *
 *   ic_lowp_analysis   values that only feed half-precision results   (c->lowp_need)
 *   ic_gemm_epilogues  the kernel fused into each GEMM's epilogue     (c->gemm_epi)
 */
#include "codegen/gpu_gemm.h" /* ic_gemm_match: the GEMMs the template can compute */
#include "driver.h"

/* ---- values that only feed half-precision results ------------------------------------------ *
 * A value computed in f32 whose every use ends, through products and quotients only, in a
 * rounding to f16/bf16 needs no f32 accuracy: a relative error of a few 1e-6 stays far below
 * the half type's 2^-9 / 2^-12 (products and quotients add relative errors; a sum of
 * exponentials, all positive, keeps the largest). Such values may take the fast forms (the
 * GPU: exp by one ex2.approx, division by div.full / rcp.approx). bf16 softmax computed in f32
 * (as eager does: exp(x - max) / sum, rounded once) is bound by instruction issue on the GPU,
 * and its f32 exp was most of the instructions. need[x] = 1 unless x is such a value. Rules
 * (a monotone fixpoint from need = 0):
 *   a stored value, an index, an argmax/argmin operand, the operand of any op other than
 *   mul/div/cast-to-half: needed;
 *   mul/div: operands needed if the product is;
 *   cast to f16/bf16: its operand is not needed through it;
 *   a row sum (or one stored as half) of an exp: the exp is needed if the row value is.
 * config gpu_lowp=0 (TORCHC_GPU_LOWP=0) keeps every value at f32 accuracy.
 * Requires: finalized kernels. Changes: c->lowp_need only (moved here from codegen/gpu_plan.c,
 * where each kernel variant of the second generation computed it; same result). */
static bool half_type(ic_dtype t) { return t == IC_F16 || t == IC_BF16; }

/* the expressions under x, marked in c->xmark's walk, appended to in[0..*n) in the order met */
static void lowp_reach(ic_ctx *c, ic_xid x, ic_xid **in, int *n, int *cap) {
    if (x < 0 || !ic_marks_add(&c->xmark, x)) return;
    *in = ic_grow(c, *in, cap, *n + 1, sizeof **in);
    (*in)[(*n)++] = x;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_ROWVAL || e->kind == X_CONST || e->kind == X_IXVAL) return;
    lowp_reach(c, e->a, in, n, cap);
    if (e->kind == X_OP) {
        lowp_reach(c, e->b, in, n, cap);
        lowp_reach(c, e->c, in, n, cap);
    }
}

static bool lowp_mark(uint8_t *need, ic_xid x) {
    if (x < 0 || need[x]) return false;
    need[x] = 1;
    return true;
}

/* The values of kernel k needed to f32 accuracy, -1 ended; NULL when it has no f32 exp or
 * division (all needed). The fixpoint runs over the kernel's own expressions (*in, scratch),
 * its need[] in c->lowp_map, zero again on return: a kernel costs its own size, not the graph's. */
static ic_xid *lowp_need(ic_ctx *c, const ic_kernel *k, ic_xid **in, int *cap) {
    uint8_t *need = c->lowp_map;
    uint8_t *rowneed = ic_alloc(c, (size_t)k->nitems + 1);
    int n = 0;
    bool any = false;
    ic_marks_begin(c, &c->xmark, c->nxs);
    for (int j = 0; j < k->nitems; j++) {
        lowp_reach(c, k->items[j].expr, in, &n, cap);
        lowp_reach(c, k->items[j].expr2, in, &n, cap);
    }
    const ic_xid *xs = *in;
    for (int i = 0; i < n; i++) {
        const ic_x *e = &c->xs[xs[i]];
        if (e->kind == X_OP && e->dtype == IC_F32 && (e->op == IC_OP_EXP || e->op == IC_OP_DIV)) any = true;
    }
    if (!any) return NULL;
    for (bool changed = true; changed;) {
        changed = false;
        for (int j = 0; j < k->nitems; j++) {
            const ic_item *it = &k->items[j];
            const ic_x *e = &c->xs[it->expr];
            changed |= lowp_mark(need, it->expr2);
            if (it->kind != IT_REDUCE) {
                if (it->store) changed |= lowp_mark(need, it->expr);
                continue;
            }
            bool sum_exp = it->red_op == IC_OP_SUM && e->kind == X_OP && e->op == IC_OP_EXP && e->dtype == IC_F32;
            if (!sum_exp || rowneed[j] || (it->store && !half_type(it->dtype))) changed |= lowp_mark(need, it->expr);
        }
        for (int i = 0; i < n; i++) { /* operands are met after their users: one round mostly */
            ic_xid x = xs[i];
            const ic_x *e = &c->xs[x];
            switch (e->kind) {
            case X_ROWVAL:
                if (need[x] && !rowneed[e->a]) rowneed[e->a] = 1, changed = true;
                break;
            case X_CAST:
                if (!half_type(e->dtype)) changed |= lowp_mark(need, e->a);
                break;
            case X_OP:
                if (need[x] || (e->op != IC_OP_MUL && e->op != IC_OP_DIV)) {
                    changed |= lowp_mark(need, e->a);
                    changed |= lowp_mark(need, e->b);
                    changed |= lowp_mark(need, e->c);
                }
                break;
            case X_LOADF: changed |= lowp_mark(need, e->a); break;
            default: break;
            }
        }
    }
    int m = 0; /* every mark is one of the kernel's expressions (the walk's operands) */
    for (int i = 0; i < n; i++) m += need[xs[i]];
    ic_xid *out = ic_alloc(c, ((size_t)m + 1) * sizeof *out);
    m = 0;
    for (int i = 0; i < n; i++)
        if (need[xs[i]]) out[m++] = xs[i], need[xs[i]] = 0;
    out[m] = -1;
    return out;
}

void ic_lowp_analysis(ic_ctx *c) {
    c->lowp_need = ic_alloc(c, ((size_t)c->nkernels + 1) * sizeof(ic_xid *));
    c->lowp_ki = -1;
    if (c->cfg.gpu_lowp == 0) return; /* every value at f32 accuracy */
    c->lowp_map = ic_alloc(c, (size_t)c->nxs + 1);
    ic_xid *in = NULL;
    int cap = 0;
    for (int ki = 0; ki < c->nkernels; ki++)
        if (!c->kernels[ki].is_ext) c->lowp_need[ki] = lowp_need(c, &c->kernels[ki], &in, &cap);
}

const uint8_t *ic_lowp_map(ic_ctx *c, int ki) {
    if (!c->lowp_need || !c->lowp_need[ki]) return NULL;
    if (c->lowp_ki != ki) { /* the previous kernel's marks off, ki's on */
        if (c->lowp_ki >= 0)
            for (const ic_xid *x = c->lowp_need[c->lowp_ki]; *x >= 0; x++) c->lowp_map[*x] = 0;
        for (const ic_xid *x = c->lowp_need[ki]; *x >= 0; x++) c->lowp_map[*x] = 1;
        c->lowp_ki = ki;
    }
    return c->lowp_map;
}

/* ---- GEMM epilogue fusion ------------------------------------------------------------------ *
 * An extern matmul on f16/bf16 that the GEMM template (codegen/gpu_gemm.c) can compute may run
 * as the backend's own kernel with the next kernel of the graph fused into its epilogue, when
 * that kernel is pointwise over the product's elements (bias, activation, residual, cast: any
 * pointwise expression, evaluated on the rounded accumulator value): it reads the product only
 * at its own element (flat index == the product's), writes nothing the GEMM reads, and is not
 * a row kernel. c->gemm_epi[ki].consumer: that kernel (-1: none); .store_out: the product
 * itself is still needed (another kernel or an extern call reads it, or it is not a workspace
 * buffer). Whether the template runs at all (the target, config gemm, the GEMM choice) is
 * codegen's (codegen/gpu_gemm_emit.c gg_gemm_kernel), which skips a fused consumer.
 * Requires: planned buffers. Changes: c->gemm_epi only (moved here from codegen, same result). */
static void xs_walk(ic_ctx *c, ic_xid x, ic_xid *out, int *n, int cap, int buf) {
    if (x < 0 || !ic_marks_add(&c->xmark, x)) return;
    const ic_x *e = &c->xs[x];
    if (e->kind == X_LOADF && e->buf == buf) {
        if (*n < cap) out[*n] = x;
        (*n)++;
    }
    if (e->kind == X_ROWVAL) return;
    xs_walk(c, e->a, out, n, cap, buf);
    xs_walk(c, e->b, out, n, cap, buf);
    xs_walk(c, e->c, out, n, cap, buf);
}

/* does a kernel other than `skip`, or an extern call, read buffer b? */
static bool buf_read_elsewhere(ic_ctx *c, int b, int skip) {
    int *used = ic_alloc(c, (size_t)c->nbufs * sizeof(int) + 1);
    ic_marks_begin(c, &c->xmark, c->nxs);
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        if (ki == skip) continue;
        if (k->is_ext) {
            const ic_node *n = &c->g->nodes[k->ext_v];
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++)
                if (c->buf_of[n->in[i]] == b) return true;
            continue;
        }
        for (int j = 0; j < k->nitems; j++) {
            x_mark_bufs(c, k->items[j].expr, used);
            if (k->items[j].expr2 >= 0) x_mark_bufs(c, k->items[j].expr2, used);
        }
    }
    return used[b] != 0;
}

static bool bufs_overlap(ic_ctx *c, int a, int b) {
    if (a < 0 || b < 0) return false;
    if (a == b) return true;
    const ic_buffer *x = &c->bufs[a], *y = &c->bufs[b];
    if (x->kind != 2 || y->kind != 2) return false;
    return x->offset < y->offset + y->nbytes && y->offset < x->offset + x->nbytes;
}

/* the kernel fused into the epilogue of GEMM kernel ki (-1: none) */
static int gemm_consumer(ic_ctx *c, int ki, const ic_gemm *G, bool *store_out) {
    *store_out = true;
    int kj = ki + 1;
    while (kj < c->nkernels && !c->kernels[kj].is_ext && ic_kernel_empty(&c->kernels[kj])) kj++;
    if (kj >= c->nkernels) return -1;
    const ic_kernel *k = &c->kernels[kj];
    if (k->is_ext || k->has_red) return -1;
    for (int j = 0; j < k->nitems; j++) /* an in-place store (sched/inplace.c): a GEMM choice */
        if (k->items[j].store && c->bufs[k->items[j].buf].inplace) return -1; /* group may run it twice */
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS], total = 1;
    int nv = ic_kernel_loop_vars(k, vars, sizes);
    for (int i = 0; i < nv; i++) total *= sizes[i];
    if (total != G->batch * G->M * G->N) return -1;
    ic_marks_begin(c, &c->xmark, c->nxs);
    ic_xid loads[64];
    int nl = 0;
    for (int j = 0; j < k->nitems; j++) {
        const ic_item *it = &k->items[j];
        if (!it->store) continue;
        xs_walk(c, it->expr, loads, &nl, 64, G->out_buf);
        for (int x = 0; x < 5; x++) {
            int o = x == 0 ? G->a_buf : x == 1 ? G->b_buf : x == 2 ? G->bias_buf : x == 3 ? G->out_buf : -1;
            if (bufs_overlap(c, it->buf, o)) return -1;
        }
    }
    if (nl == 0 || nl > 64) return -1;
    for (int l = 0; l < nl; l++) { /* every read of the product at flat index e */
        const ic_x *e = &c->xs[loads[l]];
        if (e->a >= 0) return -1;
        const ix_sum s = c->sums[e->ix];
        int nterms = 0;
        int64_t coef = 1;
        if (s.off != 0) return -1;
        for (int i = nv - 1; i >= 0; i--) {
            if (sizes[i] > 1) {
                bool na;
                if (ix_coeff(c, e->ix, vars[i], &na) != coef || na) return -1;
                nterms++;
            }
            coef *= sizes[i];
        }
        if (s.n != nterms) return -1;
    }
    *store_out = c->bufs[G->out_buf].kind != 2 || buf_read_elsewhere(c, G->out_buf, kj);
    return kj;
}

void ic_gemm_epilogues(ic_ctx *c) {
    c->gemm_epi = ic_alloc(c, ((size_t)c->nkernels + 1) * sizeof(ic_gemm_epi_plan));
    for (int ki = 0; ki < c->nkernels; ki++) {
        ic_gemm_epi_plan *p = &c->gemm_epi[ki];
        p->consumer = -1;
        p->store_out = true;
        ic_gemm G;
        if (!c->kernels[ki].is_ext || ic_gemm_match(c, &c->kernels[ki], 1, &G)) continue;
        p->consumer = gemm_consumer(c, ki, &G, &p->store_out);
    }
}
