/* compile.c — the driver: pipeline() lists the whole pipeline in order, one named step a
 * line, each with its contract (Requires / Changes):
 *
 *   copy_graph      the caller's graph → c->g, a private copy          (graph)
 *   cse_graph       config cse: equal nodes merged in c->g             (graph operands, outputs)
 *   fix_outputs     every output a distinct computed value             (graph: identity casts)
 *   dyn_setup       symbolic sizes evaluated at internal hints         (graph metas; c->dyn)
 *   ic_graph_verify graph well formed                                  (nothing)
 *   ic_lower        loop nodes, one per value (loops/lower.c)          (c->ln, expressions)
 *     ic_verify_loops    loop nodes well formed (loops/verify.c)       (nothing)
 *   ic_schedule     realize or inline, fuse into kernels (sched/)      (c->kernels)
 *     ic_verify_sched    scheduled kernels well formed                 (nothing)
 *   ic_finalize_kernels  flat offsets, collapsed dims, tiles, buffers  (kernels, c->bufs)
 *     ic_verify_sched    again (flat loads name existing buffers)
 *   ic_plan_buffers      workspace offsets                             (c->bufs, c->ws_size)
 *     ic_verify_kernels  kernel IR well formed (sched/verify.c)        (nothing)
 *   (each verifier after its pass: debug builds and TORCHC_DEBUG; after_pass)
 *   ic_describe_kernels  explain's kernel summary                      (out->describe)
 *   plan_row_scratch     GPU: workspace for row scratch (kind 3)       (c->row_scratch, ws_size)
 *   ic_lowp_analysis     GPU: values that only feed half results       (c->lowp_need)
 *                        (driver_passes.c)
 *   ic_gemm_epilogues    GPU: the kernel fused into a GEMM's epilogue  (c->gemm_epi)
 *                        (driver_passes.c)
 *   backend->codegen     code + launch plans, loaded (ic_backend.h)    (out: code, plans)
 *   (the compiled object: kernels, buffers, externs copied into out)
 *
 * Extern nodes (ic_extern) become steps of the run between kernels: ic_run calls the
 * registered handler (csrc: ATen) with the buffers of the operands and the result.
 * Errors anywhere longjmp back here (ic_fail) and become the ic_err of ic_compile; the
 * per-compilation arena is freed on every path. TORCHC_DEBUG=graph,loops,llvm dumps
 * the stages to stderr.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Core.h>

#include "driver.h"
#include "ic_backend.h"
#include "ic_internal.h"
#include "support.h"

IC_API const char *ic_version(void) { return "torchc-inductor 0.1 (LLVM 16, cpu)"; }

IC_API unsigned ic_debug_flags(void) {
    char buf[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_debug, buf);
    const char *s = buf;
    unsigned f = 0;
    while (*s) {
        const char *e = s;
        while (*e && *e != ',') e++;
        size_t n = (size_t)(e - s);
        if (n == 5 && !strncmp(s, "graph", 5)) f |= IC_DEBUG_GRAPH;
        else if (n == 5 && !strncmp(s, "loops", 5)) f |= IC_DEBUG_LOOPS;
        else if (n == 4 && !strncmp(s, "llvm", 4)) f |= IC_DEBUG_LLVM;
        else if (n == 3 && !strncmp(s, "ptx", 3)) f |= IC_DEBUG_PTX;
        else if (n == 4 && !strncmp(s, "time", 4)) f |= IC_DEBUG_TIME;
        else if (n == 6 && !strncmp(s, "dedupe", 6)) f |= IC_DEBUG_DEDUPE;
        else if (n == 3 && !strncmp(s, "all", 3)) f |= ~0u;
        s = *e ? e + 1 : e;
    }
    return f;
}

/* Common subexpressions (config cse, opt-in): x.var() and x.std() of one tensor, or a value the
 * program computes twice, are computed once. Off by default until it is measured on the GPU
 * model suite: a value shared by two kernels is stored and read back where each kernel used to
 * recompute it (softmax internals reused by a column sum: tests/c/test_inductor.c "fusion"),
 * which can cost bandwidth. */

static bool meta_eq(const ic_meta *a, const ic_meta *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->dyn != b->dyn) return false;
    for (int i = 0; i < a->ndim; i++) {
        if (a->sizes[i] != b->sizes[i] || a->strides[i] != b->strides[i]) return false;
        if (a->dyn && (a->dims[i].coef != b->dims[i].coef || memcmp(a->dims[i].exp, b->dims[i].exp, sizeof a->dims[i].exp)))
            return false;
    }
    return true;
}

/* every field, doubles bit for bit (-0.0 is not 0.0; NaN equals its own bits) */
static bool node_eq(const ic_node *a, const ic_node *b) {
    return a->op == b->op && !memcmp(a->in, b->in, sizeof a->in) && meta_eq(&a->meta, &b->meta) &&
           !memcmp(&a->num, &b->num, sizeof a->num) && !memcmp(&a->num2, &b->num2, sizeof a->num2) &&
           a->dim_mask == b->dim_mask && a->keepdim == b->keepdim && !memcmp(a->perm, b->perm, sizeof a->perm) &&
           a->index == b->index && a->dim == b->dim && a->start == b->start && a->step == b->step &&
           a->ext_kind == b->ext_kind && a->nparams == b->nparams && !memcmp(a->params, b->params, sizeof a->params) &&
           !memcmp(a->est, b->est, sizeof a->est);
}

static uint64_t node_hash(const ic_node *x) {
    uint64_t h = 1469598103934665603ull;
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 1099511628211ull)
    MIX(x->op);
    for (int i = 0; i < IC_NIN; i++) MIX((uint32_t)x->in[i]);
    MIX(x->meta.dtype);
    MIX(x->meta.ndim);
    for (int i = 0; i < x->meta.ndim; i++) MIX(x->meta.sizes[i]);
    uint64_t nb;
    memcpy(&nb, &x->num, sizeof nb);
    MIX(nb);
    MIX(x->dim_mask);
    MIX(x->dim);
    MIX(x->start);
#undef MIX
    return h;
}

/* A node equal to an earlier one (op, operands after this pass, meta, attributes) is replaced
 * by it in later operands and in the outputs; the copy stays in the graph, dead. Not graph
 * inputs, nor extern calls (library and ATen calls are left as the program made them). */
static void cse_graph(ic_ctx *c, ic_graph *n) {
    int cap = 16;
    while (cap < 2 * n->n) cap *= 2;
    ic_val *rep = ic_alloc(c, (size_t)(n->n + 1) * sizeof *rep);
    ic_val *tab = ic_alloc(c, (size_t)cap * sizeof *tab);
    for (int i = 0; i < cap; i++) tab[i] = -1;
    for (ic_val v = 0; v < n->n; v++) {
        ic_node *x = &n->nodes[v];
        for (int i = 0; i < IC_NIN; i++)
            if (x->in[i] >= 0 && x->in[i] < v) x->in[i] = rep[x->in[i]];
        rep[v] = v;
        if (x->op == IC_OP_INPUT || x->op == IC_OP_EXTERN) continue;
        size_t h = (size_t)(node_hash(x) & (uint64_t)(cap - 1));
        for (;; h = (h + 1) & (size_t)(cap - 1)) {
            if (tab[h] < 0) {
                tab[h] = v;
                break;
            }
            if (node_eq(&n->nodes[tab[h]], x)) {
                rep[v] = tab[h];
                break;
            }
        }
    }
    for (int j = 0; j < n->noutputs; j++) n->outputs[j] = rep[n->outputs[j]];
}

/* Private copy of the graph, with room for fix_outputs' casts. A graph without inputs (or
 * outputs) has NULL arrays, and memcpy from NULL is undefined even for 0 bytes: guarded. */
static ic_graph *copy_graph(ic_ctx *c, const ic_graph *g) {
    ic_graph *n = ic_alloc(c, sizeof *n);
    *n = *g;
    n->rg = NULL; /* (the original's memo: the copy's nodes change) */
    n->nodes = ic_alloc(c, (size_t)(g->n + g->noutputs + 1) * sizeof(ic_node));
    if (g->n) memcpy(n->nodes, g->nodes, (size_t)g->n * sizeof(ic_node));
    n->cap = g->n + g->noutputs + 1;
    n->inputs = ic_alloc(c, (size_t)(g->ninputs + 1) * sizeof(ic_val));
    if (g->ninputs) memcpy(n->inputs, g->inputs, (size_t)g->ninputs * sizeof(ic_val));
    n->outputs = ic_alloc(c, (size_t)(g->noutputs + 1) * sizeof(ic_val));
    if (g->noutputs) memcpy(n->outputs, g->outputs, (size_t)g->noutputs * sizeof(ic_val));
    return n;
}

/* Outputs that are inputs, scalars or repeated (after cse_graph) get an identity cast, so
 * every output is a distinct computed value with its own buffer. */
static void fix_outputs(ic_graph *n) {
    for (int j = 0; j < n->noutputs; j++) {
        ic_val v = n->outputs[j];
        bool dup = false;
        for (int i = 0; i < j; i++) dup |= n->outputs[i] == v;
        ic_op op = n->nodes[v].op;
        if (!dup && op != IC_OP_INPUT && op != IC_OP_SCALAR) continue;
        ic_node *m = &n->nodes[n->n];
        memset(m, 0, sizeof *m);
        m->op = IC_OP_CAST;
        m->in[0] = v;
        for (int i = 1; i < IC_NIN; i++) m->in[i] = -1;
        m->meta = n->nodes[v].meta;
        ic_contiguous_strides(&m->meta);
        memcpy(m->est, n->nodes[v].est, sizeof m->est); /* the output keeps eager's strides */
        n->outputs[j] = n->n++;
        n->nops++;
    }
}

/* GPU row scratch: a buffer of kind 3 (a row-local value, on each kernel's stack on the CPU)
 * gets one row-local copy per row of the kernel that stores it, in the workspace: its offset
 * in c->row_scratch[b] (else -1), placed where nothing else lives during that kernel (buffers.c
 * ic_ws_reserve), c->ws_size grown if needed. Requires planned buffers; codegen copies
 * the offsets into its launch plan (ic_gpu.scratch_off). */
static void plan_row_scratch(ic_ctx *c) {
    c->row_scratch = ic_alloc(c, ((size_t)c->nbufs + 1) * sizeof(int64_t));
    for (int b = 0; b < c->nbufs; b++) c->row_scratch[b] = -1;
    for (int ki = 0; ki < c->nkernels; ki++) {
        const ic_kernel *k = &c->kernels[ki];
        int64_t rows = 1;
        for (int i = 0; i < k->nouter; i++) rows *= k->osize[i];
        for (int j = 0; j < k->nitems; j++) {
            int b = k->items[j].buf;
            if (!k->items[j].store || b < 0 || c->bufs[b].kind != 3 || c->row_scratch[b] >= 0) continue;
            c->row_scratch[b] = ic_ws_reserve(c, ki, rows * c->bufs[b].span * (int64_t)ic_dtype_size(c->bufs[b].dtype));
        }
    }
}

/* Dynamic graphs: the private graph's symbolic sizes are evaluated at internal hints (see
 * ic_ctx.dyn): distinct primes above IC_SYM_BAND, so symbolic sizes are recognizable and
 * decodable everywhere downstream and never equal a static size. Static sizes and strides
 * of a dynamic graph must stay below the band. */
static const int64_t sym_primes[IC_MAX_SYMS] = {16777259, 16777289, 16777291, 16777331};

static void dyn_setup(ic_ctx *c, const ic_graph *user) {
    ic_graph *G = c->g;
    bool dyn = false;
    for (int v = 0; v < G->n && !dyn; v++) dyn = G->nodes[v].meta.dyn != 0;
    if (!dyn) return;
    c->dyn = true;
    for (int k = 0; k < IC_MAX_SYMS; k++) c->symH[k] = user->sym_hint[k] ? sym_primes[k] : 0;
    for (int v = 0; v < G->n; v++) {
        ic_meta *m = &G->nodes[v].meta;
        int order[IC_MAX_DIMS];
        bool dense = m->dyn && ic_layout_order(m, G->nodes[v].est, order); /* at the hints */
        for (int d = 0; d < m->ndim; d++) {
            if (m->dyn) {
                int deg = 0;
                for (int k = 0; k < IC_MAX_SYMS; k++) deg += m->dims[d].exp[k];
                int64_t x = ic_dim_eval(m->dims[d], c->symH);
                if (deg > 2 || x < 0 || m->dims[d].coef >= IC_SYM_BAND)
                    ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: symbolic size of degree > 2 or too large");
                m->sizes[d] = x;
            } else if (m->sizes[d] >= IC_SYM_BAND || m->strides[d] >= IC_SYM_BAND ||
                       m->strides[d] <= -IC_SYM_BAND) {
                ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: a static size or stride above 2^24");
            }
        }
        if (m->dyn) ic_contiguous_strides(m);
        if (m->dyn) { /* eager's strides at the internal hints: dense in their order */
            int64_t s = 1;
            for (int i = m->ndim - 1; i >= 0 && dense; i--) {
                G->nodes[v].est[order[i]] = s;
                s *= m->sizes[order[i]];
            }
            if (!dense) memcpy(G->nodes[v].est, m->strides, sizeof G->nodes[v].est);
            for (int j = 0; j < G->noutputs && !dense; j++)
                if (G->outputs[j] == v)
                    ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: an output whose eager strides are not dense");
        }
    }
}

double ic_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static pthread_mutex_t dump_mu = PTHREAD_MUTEX_INITIALIZER;

void ic_debug_dump(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) return; /* out of memory: a debug dump is dropped */
    pthread_mutex_lock(&dump_mu);
    fflush(stderr);
    (void)ic_write_all(STDERR_FILENO, s, (size_t)n);
    pthread_mutex_unlock(&dump_mu);
    free(s);
}

static void dump(const char *stage, const char *text) {
    ic_debug_dump("=== torchc %s ===\n%s", stage, text ? text : "(null)\n");
}

/* ---- extern calls: the handler registered by the embedding layer (csrc: ATen) ---------- */
static _Atomic(ic_extern_handler) ext_handler;

IC_API void ic_set_extern_handler(ic_extern_handler h) { atomic_store(&ext_handler, h); }

static bool graph_has_extern(const ic_graph *g) {
    for (int v = 0; v < g->n; v++)
        if (g->nodes[v].op == IC_OP_EXTERN) return true;
    return false;
}

int ic_run_extern(const ic_compiled *c, const ic_rext *x, void *const *in, void *out, void *stream, ic_err *err) {
    ic_extern_handler h = atomic_load(&ext_handler);
    if (!h) {
        err->code = IC_EUNSUPPORTED;
        snprintf(err->msg, sizeof err->msg, "no extern handler registered");
        return -1;
    }
    if (ic_numel(&x->out_meta) == 0) return 0;
    ic_extern_call call = {.kind = x->kind, .nparams = x->nparams, .params = x->params, .beta = x->beta,
                           .alpha = x->alpha, .nin = x->nin, .in = in, .in_meta = x->in_meta, .out = out,
                           .out_meta = &x->out_meta, .device = c->device, .device_index = c->device_index,
                           .stream = stream};
    err->code = IC_OK;
    err->msg[0] = 0;
    if (h(&call, err) == 0) return 0;
    if (err->code == IC_OK) err->code = IC_EINTERNAL;
    if (!err->msg[0]) snprintf(err->msg, sizeof err->msg, "extern %s failed", ic_extern_name(x->kind));
    return -1;
}

/* a kernel's entry point now (tier.c swaps in the full code of a tiered graph) */
static ic_kernel_fn kernel_fn(const ic_rkernel *K) { return __atomic_load_n(&K->fn, __ATOMIC_ACQUIRE); }

static void compiled_free_parts(ic_compiled *o) {
    if (!o) return;
    if (o->backend) o->backend->release(o); /* code, modules, library plans */
    free(o->exts);
    free(atomic_load(&o->ws_cache));
    free(o->out_meta);
    free(o->out_order);
    free(o->buf_offset);
    free(o->buf_index);
    free(o->buf_kind);
    free(o->kernels);
    free(o->describe);
    free(o->slot_dim);
    free(o->buf_slot);
    free(o->out_into);
    free(o);
}

/* ---- test hooks (ic_internal.h) ---------------------------------------------------------- */
static _Atomic int fault_countdown;

IC_API void ic_test_inject_fault(int n) { atomic_store(&fault_countdown, n > 0 ? n : 0); }

static bool fault_due(void) {
    int k = atomic_load(&fault_countdown);
    while (k > 0 && !atomic_compare_exchange_weak(&fault_countdown, &k, k - 1)) {}
    return k == 1;
}

static _Atomic int rt_on;
static _Atomic uint64_t rt_ok, rt_bad;
static char rt_last[256];
static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;

IC_API void ic_test_graph_roundtrip(int on) { atomic_store(&rt_on, on != 0); }

IC_API uint64_t ic_test_graph_roundtrip_stats(uint64_t *bad, char *last, size_t n) {
    pthread_mutex_lock(&rt_mu);
    if (bad) *bad = atomic_load(&rt_bad);
    if (last && n) snprintf(last, n, "%s", rt_last);
    pthread_mutex_unlock(&rt_mu);
    return atomic_load(&rt_ok);
}

static void roundtrip_check(const ic_graph *g) {
    char why[200];
    if (ic_graph_roundtrip(g, why, sizeof why) == 0) {
        rt_ok++;
        return;
    }
    char *text = ic_graph_to_string(g);
    pthread_mutex_lock(&rt_mu);
    rt_bad++;
    snprintf(rt_last, sizeof rt_last, "%s; graph:\n%s", why, text ? text : "?");
    pthread_mutex_unlock(&rt_mu);
    free(text);
}

static _Atomic(ic_pass_hook) pass_hook;

IC_API void ic_test_set_pass_hook(ic_pass_hook h) { atomic_store(&pass_hook, h); }

/* After each loop-IR pass: the test hook, then the pass's verifier (linear in the IR: cheap,
 * but off in release builds unless TORCHC_DEBUG is set, as a failure is a fallback). */
static void after_pass(ic_ctx *c, const char *pass, int (*verify)(ic_ctx *, char *, size_t), const char *what) {
    ic_pass_hook h = atomic_load(&pass_hook);
    if (h) h(c, pass);
#ifdef NDEBUG
    if (!(c->debug & ~(unsigned)IC_DEBUG_TIME)) return;
#endif
    char msg[256];
    if (verify(c, msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "%s after %s: %s", what, pass, msg);
}

/* The pipeline, in order. Returns NULL after an ic_fail (c->err set). */
static ic_compiled *pipeline(ic_ctx *c, const ic_graph *g, const ic_options *o) {
    if (setjmp(c->jb)) return NULL;
    if (fault_due()) ic_fail(c, IC_EINTERNAL, "injected internal fault (ic_test_inject_fault)");
    double t = ic_now_ms(), t1;
#define STAGE(s) (t1 = ic_now_ms(), c->t_stage[s] += t1 - t, t = t1)
    ic_compiled *out = c->out = calloc(1, sizeof *out);
    if (!out) ic_fail(c, IC_ENOMEM, "out of memory");
    out->backend = c->backend;
    /* 1. graph */
    c->g = copy_graph(c, g);
    if (c->cfg.cse) cse_graph(c, c->g);
    fix_outputs(c->g);
    dyn_setup(c, g);
    if (c->dyn && o->device == IC_CUDA)
        ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes are not supported on the GPU yet");
    char vmsg[200];
    if (ic_graph_verify(c->g, vmsg, sizeof vmsg)) ic_fail(c, IC_EINTERNAL, "graph verifier: %s", vmsg);
    if (c->debug & IC_DEBUG_GRAPH) {
        char *s = ic_graph_to_string(c->g);
        dump("graph", s);
        free(s);
    }
    STAGE(IC_T_GRAPH);
    /* 2. loops: one loop node per value */
    ic_lower(c);
    after_pass(c, "lower", ic_verify_loops, "loop verifier");
    STAGE(IC_T_LOWER);
    /* 3. schedule: realize-or-inline, fusion into kernels */
    ic_schedule(c);
    after_pass(c, "schedule", ic_verify_sched, "loop verifier");
    STAGE(IC_T_SCHED);
    if (c->debug & IC_DEBUG_LOOPS) {
        ic_str s = {0};
        ic_loops_print(c, &s);
        dump("loops", s.s);
        free(s.s);
    }
    /* 4. kernels to loop form: buffers, flat offsets, collapsed dims, tiles */
    ic_finalize_kernels(c);
    after_pass(c, "finalize", ic_verify_sched, "loop verifier");
    /* 5. workspace for intermediates */
    ic_plan_buffers(c);
    after_pass(c, "buffers", ic_verify_kernels, "kernel verifier");
    out->describe = ic_describe_kernels(c, false);
    if (c->debug & IC_DEBUG_LOOPS) {
        char *s = ic_describe_kernels(c, true);
        dump("kernels", s);
        free(s);
    }
    if (c->backend->row_scratch) plan_row_scratch(c);
    if (c->backend->lowp) ic_lowp_analysis(c);
    if (c->backend->gemm_epilogue) ic_gemm_epilogues(c);
    STAGE(IC_T_FINAL);
    /* 6. code, loaded: LLVM IR, O3, ORC JIT (cpu); PTX, plans, the driver's module (cuda) */
    ic_kernel_fn *fns = ic_alloc(c, (size_t)(2 * c->nkernels + 1) * sizeof(ic_kernel_fn));
    int next = 0;
    for (int k = 0; k < c->nkernels; k++) next += c->kernels[k].is_ext;
    c->backend->codegen(c, out, fns, o->device_index); /* ic_backend.h: code, loaded */

#undef STAGE
    /* 7. the compiled object (outlives the arena) */
    const ic_graph *G = c->g;
    out->ninputs = G->ninputs;
    out->noutputs = G->noutputs;
    out->nbufs = c->nbufs;
    out->ws_size = c->ws_size;
    int nrk = 0;
    for (int k = 0; k < c->nkernels; k++) nrk += c->kernels[k].split ? 2 : 1;
    out->nkernels = c->nkernels;
    out->nrun = nrk;
    out->num_threads = o->num_threads;
    out->out_meta = calloc((size_t)G->noutputs + 1, sizeof(ic_meta));
    out->buf_offset = calloc((size_t)c->nbufs + 1, sizeof(int64_t));
    out->buf_index = calloc((size_t)c->nbufs + 1, sizeof(int));
    out->buf_kind = calloc((size_t)c->nbufs + 1, sizeof(int));
    out->kernels = calloc((size_t)nrk + 1, sizeof(ic_rkernel));
    out->exts = calloc((size_t)next + 1, sizeof(ic_rext));
    out->out_into = calloc((size_t)G->noutputs + 1, sizeof(int));
    out->device = o->device;
    out->device_index = o->device_index;
    if (!out->out_meta || !out->buf_offset || !out->buf_index || !out->buf_kind || !out->kernels || !out->exts ||
        !out->out_into)
        ic_fail(c, IC_ENOMEM, "out of memory");
    for (int i = 0; i < G->noutputs; i++) out->out_into[i] = c->out_into ? c->out_into[i] : -1;
    for (int i = 0; i < G->noutputs; i++) {
        out->out_meta[i] = g->nodes[g->outputs[i]].meta; /* the caller's: hints and dims */
        ic_layout_output(&g->nodes[g->outputs[i]], out->out_meta[i].strides); /* eager's */
    }
    if (c->dyn) {
        out->out_order = calloc((size_t)G->noutputs * IC_MAX_DIMS + 1, sizeof(int));
        if (!out->out_order) ic_fail(c, IC_ENOMEM, "out of memory");
        for (int i = 0; i < G->noutputs; i++)
            if (!ic_layout_order(&out->out_meta[i], out->out_meta[i].strides, out->out_order + i * IC_MAX_DIMS))
                ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: an output whose eager strides are not dense");
    }
    if (c->dyn) {
        for (int k = 0; k < IC_MAX_SYMS; k++) {
            out->sym_hint[k] = g->sym_hint[k];
            if (g->sym_hint[k]) out->nsyms = k + 1;
        }
        out->nslots = c->nslots;
        out->slot_dim = calloc((size_t)c->nslots + 1, sizeof(ic_dim));
        out->buf_slot = calloc((size_t)c->nbufs + 1, sizeof(int));
        if (!out->slot_dim || !out->buf_slot) ic_fail(c, IC_ENOMEM, "out of memory");
        memcpy(out->slot_dim, c->slot_dim, (size_t)c->nslots * sizeof(ic_dim));
        memcpy(out->buf_slot, c->buf_slot, (size_t)c->nbufs * sizeof(int));
    }
    for (int b = 0; b < c->nbufs; b++) {
        out->buf_offset[b] = c->bufs[b].offset;
        out->buf_index[b] = c->bufs[b].index;
        out->buf_kind[b] = c->bufs[b].kind;
    }
    for (int k = 0, r = 0; k < c->nkernels; k++) {
        const ic_kernel *K = &c->kernels[k];
        if (K->is_ext) {
            const ic_node *n = &G->nodes[K->ext_v];
            ic_rext *x = &out->exts[out->nexts++];
            x->kind = n->ext_kind;
            x->nparams = n->nparams;
            memcpy(x->params, n->params, sizeof x->params);
            x->beta = n->num;
            x->alpha = n->num2;
            for (int i = 0; i < IC_NIN && n->in[i] >= 0; i++) {
                x->in_buf[x->nin] = c->buf_of[n->in[i]];
                x->in_meta[x->nin++] = c->bufs[c->buf_of[n->in[i]]].meta;
            }
            x->out_buf = c->buf_of[K->ext_v];
            x->out_meta = c->bufs[x->out_buf].meta;
            out->kernels[r].iters = 1;
            out->kernels[r].diters = ic_dim_k(1);
            out->kernels[r].slot = -1;
            out->kernels[r++].ext = out->nexts;
            continue;
        }
        out->kernels[r].fn = fns[2 * k];
        out->kernels[r].slot = 2 * k;
        out->kernels[r].iters = K->split ? K->ntiles : K->iters;
        out->kernels[r].work = K->work;
        if (!ic_sym_decode(c, out->kernels[r].iters, &out->kernels[r].diters) ||
            !ic_sym_decode(c, K->work, &out->kernels[r].dwork))
            ic_fail(c, IC_EUNSUPPORTED, "dynamic shapes: kernel %d: trip count is not a monomial", k);
        r++;
        if (K->split) {
            out->kernels[r].fn = fns[2 * k + 1];
            out->kernels[r].slot = 2 * k + 1;
            out->kernels[r].iters = 1;
            out->kernels[r].diters = ic_dim_k(1);
            out->kernels[r++].work = 0;
        }
    }
    c->out = NULL;
    if (out->tier) ic_tier_start(out); /* complete: its full code may be swapped in from now */
    return out;
}

/* keytext: the in-memory cache key (graph text + options) when the compile may be cached
 * by code key (in process and on disk), else NULL. */
static ic_compiled *compile_graph(const ic_graph *g, const ic_options *opt, ic_err *err_arg, const char *keytext,
                                  int ptx_sm);

ic_compiled *ic_compile_graph(const ic_graph *g, const ic_options *opt, ic_err *err_arg) {
    return compile_graph(g, opt, err_arg, NULL, 0);
}

ic_compiled *ic_compile_ptx_only(const ic_graph *g, const ic_options *opt, int sm, ic_err *err) {
    ic_options o = *opt;
    o.device = IC_CUDA;
    ic_compiled *c = compile_graph(g, &o, err, NULL, sm > 0 ? sm : 90);
    if (c) atomic_store(&c->refs, 1);
    return c;
}

/* ---- internal faults (ic.h) ------------------------------------------------------------ */
static _Atomic uint64_t internal_faults;
static char fault_last[256];
static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;

IC_API void ic_note_internal_fault(const char *msg) {
    pthread_mutex_lock(&fault_mu);
    snprintf(fault_last, sizeof fault_last, "%s", msg ? msg : "?");
    atomic_fetch_add(&internal_faults, 1);
    pthread_mutex_unlock(&fault_mu);
}

IC_API uint64_t ic_internal_faults(char *last, size_t n) {
    pthread_mutex_lock(&fault_mu);
    uint64_t k = atomic_load(&internal_faults);
    if (last && n) snprintf(last, n, "%s", fault_last);
    pthread_mutex_unlock(&fault_mu);
    return k;
}

/* The code key: everything the machine code depends on (the settings: cfg's codegen ones). */
static ic_dkey code_key(const char *keytext, int opt_level, const ic_config *cfg) {
    ic_dkey k = {0, 0};
    unsigned v[3] = {0, 0, 0};
    LLVMGetVersion(&v[0], &v[1], &v[2]);
    ic_dkey_mix_str(&k, "torchc cpu objects 1");
    ic_dkey_mix_str(&k, ic_version());
    ic_dkey_mix(&k, v, sizeof v);
    ic_dkey_mix_str(&k, ic_host_id());
    ic_dkey_mix_str(&k, ic_cpu_pipeline(opt_level));
    ic_dkey_build_id(&k);
    ic_dkey_mix_str(&k, keytext);
    char *ck = ic_config_key(cfg);
    ic_dkey_mix_str(&k, ck ? ck : "|?");
    free(ck);
    return k;
}

static ic_compiled *compile_graph(const ic_graph *g, const ic_options *opt, ic_err *err_arg, const char *keytext,
                                  int ptx_sm) {
    ic_err dummy = {0};
    ic_err *const err = err_arg ? err_arg : &dummy;
    err->code = IC_OK;
    err->msg[0] = 0;
    if (!g) {
        err->code = IC_EINVALID;
        snprintf(err->msg, sizeof err->msg, "no graph");
        return NULL;
    }
    if (g->err) {
        err->code = g->err;
        snprintf(err->msg, sizeof err->msg, "%s", g->msg);
        return NULL;
    }
    for (int i = 0; i < g->n; i++) { /* complex only in inputs and CUSTOM externs (graph.c complex_ok) */
        const ic_node *n = &g->nodes[i];
        if (ic_dtype_is_complex(n->meta.dtype) && n->op != IC_OP_INPUT &&
            !(n->op == IC_OP_EXTERN && n->ext_kind == IC_EXT_CUSTOM)) {
            err->code = IC_EUNSUPPORTED;
            snprintf(err->msg, sizeof err->msg, "complex value in a %s node", ic_op_name(n->op));
            return NULL;
        }
    }
    ic_options o = {.opt_level = 3};
    if (opt) o = *opt;
    if (!atomic_load(&ext_handler) && graph_has_extern(g)) {
        err->code = IC_EUNSUPPORTED;
        snprintf(err->msg, sizeof err->msg, "extern calls need a handler (ic_set_extern_handler)");
        return NULL;
    }
    if (!ic_backend_for(o.device)) {
        err->code = IC_EUNSUPPORTED;
        snprintf(err->msg, sizeof err->msg, "device %d is not supported by this build", o.device);
        return NULL;
    }
    ic_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        err->code = IC_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return NULL;
    }
    c->err = err;
    c->backend = ic_backend_for(o.device);
    c->device = o.device;
    ic_config_read(&c->cfg);
    c->debug = o.debug | ic_debug_flags();
    /* a zero-initialized ic_options means the default O3 */
    c->opt_level = o.opt_level > 0 ? o.opt_level : 3;
    c->num_threads = o.num_threads;
    c->autotune = o.autotune;
    c->ptx_sm = ptx_sm;
    double t0 = ic_now_ms(), cpu0 = thread_cpu_ms();
    if (keytext && o.device == IC_CPU && !(c->debug & ~(unsigned)IC_DEBUG_TIME)) {
        c->keyed = true;
        c->key = code_key(keytext, c->opt_level, &c->cfg);
    }
    c->t_stage[IC_T_INIT] = ic_now_ms() - t0;
    ic_compiled *out = pipeline(c, g, &o);
    err->t_lookup += c->t_stage[IC_T_INIT];
    err->t_passes = c->t_stage[IC_T_GRAPH] + c->t_stage[IC_T_LOWER] + c->t_stage[IC_T_SCHED] + c->t_stage[IC_T_FINAL];
    err->t_codegen = c->t_stage[IC_T_IRGEN] + c->t_stage[IC_T_OPT] + c->t_stage[IC_T_EMIT];
    err->t_load = c->t_stage[IC_T_JIT];
    if (c->debug & IC_DEBUG_TIME) {
        static const char *names[IC_T_COUNT] = {"init", "graph", "lower", "sched", "final", "irgen", "opt", "emit", "jit"};
        char line[400];
        int n = snprintf(line, sizeof line, "torchc time: compile %.2f ms (cpu %.2f + %.2f other threads; %d nodes, %d kernels, "
                         "%d repeats, %d lazy, %d parts, %d insts):", ic_now_ms() - t0, thread_cpu_ms() - cpu0 - c->cpu_probe, c->cpu_other, g->n,
                         c->nkernels, c->cg_dups, c->cg_lazy, c->cg_parts, c->cg_insts);
        for (int i = 0; i < IC_T_COUNT && n > 0 && n < (int)sizeof line; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, " %s %.2f", names[i], c->t_stage[i]);
        fprintf(stderr, "%s%s\n", line, out ? "" : " (failed)");
    }
    if (!out) {
        if (c->backend->cleanup) c->backend->cleanup(c);
        compiled_free_parts(c->out);
        if (err->code == IC_OK) err->code = IC_EINTERNAL;
        if (err->code == IC_EINTERNAL) ic_note_internal_fault(err->msg);
    }
    ic_arena_free(c);
    free(c);
    return out;
}

/* ---- in-memory cache: graph text + options -> compiled (CPU) ------------------------------- */
#define IC_CACHE_SIZE 128

typedef struct cache_ent {
    char *key;
    uint64_t hash, used;
    ic_compiled *c;
} cache_ent;

static cache_ent cache[IC_CACHE_SIZE];
static _Atomic uint64_t mem_hits;
static uint64_t cache_clock;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static void release(ic_compiled *c) {
    if (c && atomic_fetch_sub(&c->refs, 1) == 1) compiled_free_parts(c);
}

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool cache_enabled(const ic_options *o) {
    if (!ic_config_int(IC_CFG_cache)) return false;
    if ((ic_debug_flags() | (o ? o->debug : 0)) & ~(unsigned)IC_DEBUG_TIME) return false;
    return !o || o->device == IC_CPU;
}

static char *cache_key(const ic_graph *g, const ic_options *o) {
    char *text = ic_graph_to_string(g);
    if (!text) return NULL;
    ic_options d = {.opt_level = 3};
    if (!o) o = &d;
    ic_config cfg;
    ic_config_read(&cfg);
    char *ck = ic_config_key(&cfg); /* every setting that changes code (ic_config.h) */
    ic_str s = {0};
    ic_str_printf(&s, "%s|opt=%d|threads=%d|dev=%d%s", text, o->opt_level > 0 ? o->opt_level : 3, o->num_threads,
                  o->device, ck ? ck : "|?");
    free(ck);
    free(text);
    if (s.oom) {
        free(s.s);
        return NULL;
    }
    return s.s;
}

IC_API void ic_cache_clear(void) {
    pthread_mutex_lock(&cache_mu);
    ic_compiled *drop[IC_CACHE_SIZE];
    int n = 0;
    for (int i = 0; i < IC_CACHE_SIZE; i++) {
        if (!cache[i].key) continue;
        free(cache[i].key);
        drop[n++] = cache[i].c;
        memset(&cache[i], 0, sizeof cache[i]);
    }
    pthread_mutex_unlock(&cache_mu);
    for (int i = 0; i < n; i++) release(drop[i]);
}

IC_API ic_compiled *ic_compile(const ic_graph *g, const ic_options *opt, ic_err *err) {
    double t0 = ic_now_ms();
    if (err) err->t_lookup = err->t_passes = err->t_codegen = err->t_load = 0, err->mem_hit = 0;
    if (atomic_load(&rt_on) && g && !g->err) roundtrip_check(g);
    if (!g || g->err || !cache_enabled(opt) || (!atomic_load(&ext_handler) && graph_has_extern(g))) {
        ic_compiled *c = ic_compile_graph(g, opt, err);
        if (c) atomic_store(&c->refs, 1);
        return c;
    }
    char *key = cache_key(g, opt);
    uint64_t h = key ? hash_str(key) : 0;
    if (key) {
        pthread_mutex_lock(&cache_mu);
        for (int i = 0; i < IC_CACHE_SIZE; i++) {
            if (cache[i].key && cache[i].hash == h && strcmp(cache[i].key, key) == 0) {
                ic_compiled *c = cache[i].c;
                atomic_fetch_add(&c->refs, 1);
                mem_hits++;
                cache[i].used = ++cache_clock;
                pthread_mutex_unlock(&cache_mu);
                free(key);
                if (err) {
                    err->code = IC_OK;
                    err->msg[0] = 0;
                    err->t_lookup = ic_now_ms() - t0;
                    err->mem_hit = 1;
                }
                return c;
            }
        }
        pthread_mutex_unlock(&cache_mu);
    }
    if (err) err->t_lookup = ic_now_ms() - t0;
    ic_compiled *c = compile_graph(g, opt, err, key, 0);
    if (!c || !key) {
        if (c) atomic_store(&c->refs, 1);
        free(key);
        return c;
    }
    atomic_store(&c->refs, 2); /* the caller and the cache */
    ic_compiled *evict = NULL;
    pthread_mutex_lock(&cache_mu);
    int slot = 0;
    for (int i = 0; i < IC_CACHE_SIZE; i++) {
        if (!cache[i].key) {
            slot = i;
            break;
        }
        if (cache[i].used < cache[slot].used) slot = i;
    }
    if (cache[slot].key) {
        free(cache[slot].key);
        evict = cache[slot].c;
    }
    cache[slot] = (cache_ent){.key = key, .hash = h, .used = ++cache_clock, .c = c};
    pthread_mutex_unlock(&cache_mu);
    release(evict);
    return c;
}

IC_API void ic_get_cache_stats(ic_cache_stats *s) {
    memset(s, 0, sizeof *s);
    s->mem_hits = mem_hits;
    unsigned long long shared, disk;
    ic_cpu_code_stats(&shared, &disk); /* backends.c */
    s->code_shared = shared;
    s->disk_loaded = disk;
    ic_diskcache_stats d;
    ic_diskcache_get_stats(&d);
    s->disk_hits = d.hits;
    s->disk_misses = d.misses;
    s->disk_writes = d.writes;
    s->disk_rejected = d.rejected;
    s->disk_errors = d.errors;
    s->disk_evicted = d.evicted;
    unsigned long long t0, t1, tf;
    ic_tier_stats(&t0, &t1, &tf); /* tier.c */
    s->tier0 = t0;
    s->tier1 = t1;
    s->tier_failed = tf;
}

IC_API void ic_compiled_free(ic_compiled *c) { release(c); }
IC_API int ic_compiled_num_inputs(const ic_compiled *c) { return c->ninputs; }
IC_API int ic_compiled_num_outputs(const ic_compiled *c) { return c->noutputs; }
IC_API const ic_meta *ic_compiled_output_meta(const ic_compiled *c, int i) {
    return i >= 0 && i < c->noutputs ? &c->out_meta[i] : NULL;
}
IC_API int ic_compiled_output_into(const ic_compiled *c, int i) {
    return i >= 0 && i < c->noutputs && c->out_into ? c->out_into[i] : -1;
}
IC_API int ic_compiled_num_kernels(const ic_compiled *c) { return c->nkernels; }
IC_API int ic_compiled_num_externs(const ic_compiled *c) { return c->nexts; }
IC_API int ic_compiled_num_syms(const ic_compiled *c) { return c->nsyms; }

static bool syms_ok(const ic_compiled *c, const int64_t *sym) {
    for (int k = 0; k < c->nsyms; k++)
        if (!sym || sym[k] < 2) return false;
    return true;
}

IC_API int ic_compiled_output_meta_at(const ic_compiled *c, int i, const int64_t *sym, ic_meta *out) {
    if (i < 0 || i >= c->noutputs || !syms_ok(c, sym)) return -1;
    *out = c->out_meta[i];
    if (!out->dyn) return 0;
    int64_t s[IC_MAX_SYMS] = {0};
    for (int k = 0; k < c->nsyms; k++) s[k] = sym[k];
    for (int d = 0; d < out->ndim; d++) {
        out->sizes[d] = ic_dim_eval(out->dims[d], s);
        if (out->sizes[d] < 0) return -1;
    }
    out->dyn = 0;
    memset(out->dims, 0, sizeof out->dims);
    if (c->out_order) { /* eager's layout: dense in the output's dim order */
        const int *order = c->out_order + i * IC_MAX_DIMS;
        int64_t st = 1;
        for (int d = out->ndim - 1; d >= 0; d--) {
            out->strides[order[d]] = st;
            st *= out->sizes[order[d]];
        }
    } else {
        ic_contiguous_strides(out);
    }
    return 0;
}
IC_API char *ic_compiled_describe(const ic_compiled *c) {
    if (!c->describe) return NULL;
    size_t n = strlen(c->describe) + 1;
    char *s = malloc(n);
    if (s) memcpy(s, c->describe, n);
    return s;
}

IC_API int64_t ic_compiled_workspace_bytes(const ic_compiled *c) {
    if (!c->nsyms) return c->ws_size;
    int64_t n = 0; /* dynamic: the slots at the symbol hints, as run_dyn lays them out */
    for (int s = 0; s < c->nslots; s++) n += (ic_dim_eval(c->slot_dim[s], c->sym_hint) + 63) & ~(int64_t)63;
    return n;
}

/* ---- running ---------------------------------------------------------------------------- */

/* An extern operand/result meta at the symbol values: symbolic metas (always contiguous:
 * dynamic inputs, intermediates, outputs) get their sizes evaluated and contiguous
 * strides. false on overflow. */
static bool meta_at(ic_meta *m, const int64_t *sv) {
    if (!m->dyn) return true;
    for (int d = 0; d < m->ndim; d++)
        if ((m->sizes[d] = ic_dim_eval(m->dims[d], sv)) < 0 || m->sizes[d] > ((int64_t)1 << 56)) return false;
    m->dyn = 0;
    memset(m->dims, 0, sizeof m->dims);
    ic_contiguous_strides(m);
    return true;
}

/* extern call x at the symbol values: the concrete metas the handler gets */
static bool rext_at(const ic_rext *x, const int64_t *sv, ic_rext *out) {
    *out = *x;
    for (int i = 0; i < x->nin; i++)
        if (!meta_at(&out->in_meta[i], sv)) return false;
    return meta_at(&out->out_meta, sv);
}

/* Dynamic graphs: slots laid out for the actual symbol values, the workspace cached
 * with its capacity in a 64-byte header; bufs[nbufs] points at the symbol values.
 * Extern calls get metas evaluated at the symbol values. */
static int run_dyn(const ic_compiled *c, void *const *inputs, void *const *outputs, const int64_t *sym,
                   ic_err *err) {
    int64_t sv[IC_MAX_SYMS] = {0};
    for (int k = 0; k < c->nsyms; k++) sv[k] = sym[k];
    int64_t offstack[64];
    void *stackbufs[65];
    int64_t *soff = c->nslots <= 64 ? offstack : malloc((size_t)c->nslots * sizeof(int64_t));
    void **bufs = c->nbufs <= 64 ? stackbufs : malloc((size_t)(c->nbufs + 1) * sizeof(void *));
    char *ws = NULL;
    const char *why = "out of memory for the workspace";
    ic_errcode code = IC_ENOMEM;
    if (!soff || !bufs) goto fail;
    int64_t ws_size = 0;
    for (int s = 0; s < c->nslots; s++) {
        int64_t n = ic_dim_eval(c->slot_dim[s], sv);
        if (n < 0 || n > ((int64_t)1 << 56)) {
            why = "symbol values too large";
            code = IC_EINVALID;
            goto fail;
        }
        soff[s] = ws_size;
        ws_size += (n + 63) & ~(int64_t)63;
    }
    if (ws_size > 0) {
        ws = atomic_exchange(&((ic_compiled *)c)->ws_cache, NULL);
        if (ws && *(int64_t *)ws < ws_size) {
            free(ws);
            ws = NULL;
        }
        if (!ws) {
            ws = aligned_alloc(64, (size_t)ws_size + 64);
            if (!ws) goto fail;
            *(int64_t *)ws = ws_size;
        }
    }
    for (int b = 0; b < c->nbufs; b++) {
        switch (c->buf_kind[b]) {
        case 0: bufs[b] = inputs[c->buf_index[b]]; break;
        case 1: bufs[b] = outputs[c->buf_index[b]]; break;
        case 3: bufs[b] = NULL; break;
        default: bufs[b] = ws + 64 + soff[c->buf_slot[b]]; break;
        }
    }
    bufs[c->nbufs] = sv;
    ic_rext xat;
    for (int k = 0; k < c->nrun; k++)
        if ((c->kernels[k].ext > 0 && !rext_at(&c->exts[c->kernels[k].ext - 1], sv, &xat)) ||
            ic_dim_eval(c->kernels[k].diters, sv) < 0 ||
            (c->kernels[k].dwork.coef > 0 && ic_dim_eval(c->kernels[k].dwork, sv) < 0)) {
            /* sizes overflow: refuse before any work */
            why = "symbol values too large";
            code = IC_EINVALID;
            goto fail;
        }
    int nt = c->num_threads > 0 ? c->num_threads : ic_get_num_threads();
    int rc = 0;
    for (int k = 0; k < c->nrun && rc == 0; k++) {
        const ic_rkernel *K = &c->kernels[k];
        if (K->ext > 0) {
            rext_at(&c->exts[K->ext - 1], sv, &xat); /* checked above */
            void *in[IC_NIN] = {NULL};
            for (int i = 0; i < xat.nin; i++) in[i] = bufs[xat.in_buf[i]];
            ic_err e2;
            rc = ic_run_extern(c, &xat, in, bufs[xat.out_buf], NULL, err ? err : &e2);
            continue;
        }
        int64_t iters = ic_dim_eval(K->diters, sv), work = ic_dim_eval(K->dwork, sv);
        if (iters <= 0) continue;
        if (nt > 1 && iters > 1 && (work < 0 || work >= IC_PAR_MIN_WORK))
            ic_parallel_for(kernel_fn(K), bufs, iters, nt);
        else
            kernel_fn(K)(bufs, 0, iters);
    }
    if (ws) {
        void *expect = NULL;
        if (!atomic_compare_exchange_strong(&((ic_compiled *)c)->ws_cache, &expect, ws)) free(ws);
    }
    if (soff != offstack) free(soff);
    if (bufs != stackbufs) free(bufs);
    if (rc) return -1; /* the handler's error is in err */
    if (err) err->code = IC_OK;
    return 0;
fail:
    if (ws) {
        void *expect = NULL;
        if (!atomic_compare_exchange_strong(&((ic_compiled *)c)->ws_cache, &expect, ws)) free(ws);
    }
    if (soff != offstack) free(soff);
    if (bufs != stackbufs) free(bufs);
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, "%s", why);
    }
    return -1;
}

IC_API int ic_run_dyn(const ic_compiled *c, void *const *inputs, void *const *outputs,
                      const int64_t *sym, ic_err *err) {
    if (c->nsyms == 0) return ic_run(c, inputs, outputs, err);
    if (!syms_ok(c, sym)) {
        if (err) {
            err->code = IC_EINVALID;
            snprintf(err->msg, sizeof err->msg, "ic_run_dyn: symbol values must be >= 2");
        }
        return -1;
    }
    return run_dyn(c, inputs, outputs, sym, err);
}

IC_API int ic_run_on(const ic_compiled *c, void *const *inputs, void *const *outputs, void *stream, ic_err *err) {
    if (c->backend->run) return c->backend->run(c, inputs, outputs, stream, err); /* ic_backend.h */
    return ic_run(c, inputs, outputs, err);
}

IC_API int ic_run(const ic_compiled *c, void *const *inputs, void *const *outputs, ic_err *err) {
    if (c->backend->run) return c->backend->run(c, inputs, outputs, NULL, err); /* not the CPU's loop */
    if (c->nsyms) return run_dyn(c, inputs, outputs, c->sym_hint, err);
    void *stackbufs[64];
    void **bufs = c->nbufs <= 64 ? stackbufs : malloc((size_t)c->nbufs * sizeof(void *));
    void *ws = NULL;
    if (!bufs) goto nomem;
    if (c->ws_size > 0) {
        /* reuse the cached workspace unless a concurrent run holds it */
        ws = atomic_exchange(&((ic_compiled *)c)->ws_cache, NULL);
        if (!ws) {
            size_t n = ((size_t)c->ws_size + 63) & ~(size_t)63;
            ws = aligned_alloc(64, n);
            if (!ws) goto nomem;
        }
    }
    for (int b = 0; b < c->nbufs; b++) {
        switch (c->buf_kind[b]) {
        case 0: bufs[b] = inputs[c->buf_index[b]]; break;
        case 1: bufs[b] = outputs[c->buf_index[b]]; break;
        case 3: bufs[b] = NULL; break; /* row scratch: on each kernel's stack */
        default: bufs[b] = (char *)ws + c->buf_offset[b]; break;
        }
    }
    int nt = c->num_threads > 0 ? c->num_threads : ic_get_num_threads();
    int rc = 0;
    for (int k = 0; k < c->nrun; k++) {
        const ic_rkernel *K = &c->kernels[k];
        if (K->ext > 0) {
            const ic_rext *x = &c->exts[K->ext - 1];
            void *in[IC_NIN] = {NULL};
            for (int i = 0; i < x->nin; i++) in[i] = bufs[x->in_buf[i]];
            ic_err e2;
            if (ic_run_extern(c, x, in, bufs[x->out_buf], NULL, err ? err : &e2) < 0) {
                rc = -1;
                break;
            }
            continue;
        }
        if (K->iters <= 0) continue;
        if (nt > 1 && K->iters > 1 && K->work >= IC_PAR_MIN_WORK)
            ic_parallel_for(kernel_fn(K), bufs, K->iters, nt);
        else
            kernel_fn(K)(bufs, 0, K->iters);
    }
    if (ws) {
        void *expect = NULL;
        if (!atomic_compare_exchange_strong(&((ic_compiled *)c)->ws_cache, &expect, ws)) free(ws);
    }
    if (bufs != stackbufs) free(bufs);
    if (rc) return rc;
    if (err) err->code = IC_OK;
    return 0;
nomem:
    if (bufs != stackbufs) free(bufs);
    if (err) {
        err->code = IC_ENOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory for the workspace");
    }
    return -1;
}
