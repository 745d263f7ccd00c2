/* gpu_scan.c — torchc.scan's forward on CUDA as one persistent kernel (ic_device.h ic_scan_*):
 * a recurrence h_t = f(h_{t-1} @ W + g(x_t, constants)) run for all steps by one launch.
 *
 * Requires: the scan body's graph as text (ic_graph_to_string of the probe's entry), the role
 *   of each graph input (the carry, an x slice, a loop constant), which graph outputs are the
 *   next carry and the results, the carry's shape [N, n], and the target (sm, SMs).
 * Produces: an ic_scan_kernel: its launch shape, its LLVM IR (text, for the CPU emulation of
 *   tests/test_scan_persistent.py) and bitcode; PTX on first need (O3 + NVPTX as every GPU
 *   part: ic_gpu_lazy_ptx); the module loaded per device through runtime/cuda.c.
 *   Or NULL with the reason the body does not qualify (the caller runs its other lowering).
 *
 * A body qualifies when (the reasons are the user-facing `why`):
 *   - its carry is one float32 tensor [N, n], n <= SCAN_MAX_HIDDEN (one thread a column);
 *   - every node is pointwise over float32 / bool values (any op of the shared op layer,
 *     codegen/ops.c, but pow with a tensor exponent), a view of a graph input (permute,
 *     expand, reshape of a dense view or one that adds / drops size-1 dims, slice), or a
 *     matrix product (mm, 2-D matmul, addmm, linear) whose right operand is a view of a loop
 *     constant [K, n] and whose left operand is the carry (at most one: the recurrent product;
 *     none is a pointwise recurrence) or a view of an x slice or constant [N or 1, K] (an
 *     input projection, summed per element over K);
 *   - the carry is read only as itself, every value broadcasts to [N, n] (right-aligned,
 *     leading dims 1), and every used output is a computed float32 [N, n] value stored
 *     contiguously; no dynamic sizes.
 *
 * Kernel (one launch for all T steps; threads = n rounded up to a warp):
 *   one CTA per R batch rows (W in shared memory: R = 1 while N <= the SMs, else 2 or 4; W
 *   from L2: R = 4, 2 at more than 512 threads), one thread per column i;
 *   W (the recurrent product's right operand, any strides) in shared memory as ws[j][i]
 *   (rows padded to np = n rounded up to 4) when it and the state fit the opt-in limit
 *   (sm_90: n <= ~236), else read from global memory (L2); the state h in shared memory,
 *   double-buffered (one barrier a step);
 *   for t in 0 .. T-1: acc[r] = sum_j hs[t % 2][r][j] * W[j][i] (j by 4: one 16-byte
 *   broadcast load of the state, two accumulators); the body's pointwise ops give the next
 *   carry and the results at (r, i), which go to their [T, N, n] stacks.
 * Threads past n or past the last row compute on clamped indices and store nothing.
 * Pointwise ops come from the shared op layer with the NVPTX target (the same code and values
 * as torchc's other GPU kernels: exp through ex2.approx, vm_tanh, ...).
 */
#include "gpu_internal.h"
#include "../ic_device.h"
#include "../support.h"

#define SCAN_MAX_HIDDEN 1024
#define SCAN_KNAME "torchc_scan_persist"
#define SCAN_CACHE 64     /* kernels (and reasons) kept by key */
#define SCAN_MAX_ROWS 4   /* R */
#define SCAN_DEVS 16      /* devices a kernel is loaded on at once */

/* ---- what the body's values are ------------------------------------------------------------ */
typedef enum { V_NONE, V_CARRY, V_SCALAR, V_VIEW, V_PW, V_MM } vkind;

typedef struct sview { /* a strided view of graph input `inp` */
    int inp;
    int64_t off;
    int nd;
    int64_t sz[IC_MAX_DIMS], st[IC_MAX_DIMS];
} sview;

typedef struct smm { /* a matrix product: sum_k a[row, k] b[k, col], alpha, + beta bias */
    ic_val node;
    bool rec;      /* a = the carry (the recurrent product) */
    sview a, b;    /* b: [K, n] of a loop constant; a (not rec): [N or 1, K] */
    ic_val bias;   /* or IC_NONE */
    double beta, alpha;
} smm;

typedef struct sa { /* the analysis of one body */
    ic_ctx *c;
    const ic_graph *g;
    const ic_scan_spec *sp;
    int64_t N, n;
    vkind *kind;   /* per node */
    sview *view;   /* per node (V_VIEW) */
    int *mm;       /* per node (V_MM): index into mms */
    smm *mms;
    int nmm, rec;  /* rec: the recurrent product's index, or -1 */
} sa;

#define FAIL(A, ...) ic_fail((A)->c, IC_EUNSUPPORTED, __VA_ARGS__)

static bool bshape_ok(const sa *A, int nd, const int64_t *sz) { /* broadcastable to [N, n] */
    for (int d = 0; d < nd - 2; d++)
        if (sz[d] != 1) return false;
    int64_t r = nd >= 2 ? sz[nd - 2] : 1, c = nd >= 1 ? sz[nd - 1] : 1;
    return (r == 1 || r == A->N) && (c == 1 || c == A->n);
}

static bool is_NN(const sa *A, const ic_meta *m) { return m->ndim == 2 && m->sizes[0] == A->N && m->sizes[1] == A->n; }

static void dense(int nd, const int64_t *sz, int64_t *st) {
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; d--) st[d] = acc, acc *= sz[d];
}

static sview view_of(sa *A, const ic_node *nd, const sview *src) {
    sview v = *src;
    const ic_meta *m = &nd->meta;
    switch (nd->op) {
    case IC_OP_PERMUTE:
        if (m->ndim != src->nd) FAIL(A, "a permute of another rank");
        for (int d = 0; d < m->ndim; d++) {
            if (nd->perm[d] < 0 || nd->perm[d] >= src->nd) FAIL(A, "a bad permutation");
            v.sz[d] = src->sz[nd->perm[d]], v.st[d] = src->st[nd->perm[d]];
        }
        return v;
    case IC_OP_EXPAND: {
        int k = m->ndim - src->nd;
        if (k < 0 || m->ndim > IC_MAX_DIMS) FAIL(A, "an expand to fewer dims");
        v.nd = m->ndim;
        for (int d = 0; d < m->ndim; d++) {
            v.sz[d] = m->sizes[d];
            v.st[d] = d < k || (src->sz[d - k] == 1 && m->sizes[d] != 1) ? 0 : src->st[d - k];
        }
        return v;
    }
    case IC_OP_SLICE: {
        int d = nd->dim;
        if (d < 0 || d >= src->nd) FAIL(A, "a slice of a bad dim");
        v.off = src->off + nd->start * src->st[d];
        v.st[d] = src->st[d] * nd->step;
        v.sz[d] = m->sizes[d];
        return v;
    }
    case IC_OP_RESHAPE: { /* size-1 dims added or dropped, or a dense source */
        int na = 0, nb = 0;
        int64_t asz[IC_MAX_DIMS], ast[IC_MAX_DIMS];
        for (int d = 0; d < src->nd; d++)
            if (src->sz[d] != 1) asz[na] = src->sz[d], ast[na++] = src->st[d];
        bool same = true;
        for (int d = 0; d < m->ndim; d++)
            if (m->sizes[d] != 1) same = same && nb < na && m->sizes[d] == asz[nb], nb++;
        v.nd = m->ndim;
        if (same && nb == na) {
            for (int d = 0, k = 0; d < m->ndim; d++) {
                v.sz[d] = m->sizes[d];
                v.st[d] = m->sizes[d] == 1 ? 0 : ast[k++];
            }
            return v;
        }
        int64_t ds[IC_MAX_DIMS];
        dense(src->nd, src->sz, ds);
        for (int d = 0; d < src->nd; d++)
            if (src->sz[d] != 1 && src->st[d] != ds[d]) FAIL(A, "a reshape of a strided input view");
        for (int d = 0; d < m->ndim; d++) v.sz[d] = m->sizes[d];
        dense(m->ndim, m->sizes, v.st);
        return v;
    }
    default: FAIL(A, "view %s", ic_op_name(nd->op));
    }
}

static char role(const sa *A, int inp) { return A->sp->role[inp]; }

/* an operand of a product: the view it is, or fails with what it is not */
static const sview *operand_view(sa *A, ic_val v) {
    return A->kind[v] == V_VIEW ? &A->view[v] : NULL;
}

static void classify_extern(sa *A, ic_val id) {
    const ic_node *nd = &A->g->nodes[id];
    const char *name = ic_extern_name((ic_extern_kind)nd->ext_kind);
    smm m = {.node = id, .bias = IC_NONE, .beta = 1, .alpha = 1};
    ic_val a, b;
    bool bT = false;
    int nin = 0;
    while (nin < IC_NIN && nd->in[nin] >= 0) nin++;
    switch (nd->ext_kind) {
    case IC_EXT_MM: case IC_EXT_MATMUL:
        if (nin != 2) FAIL(A, "extern %s of %d operands", name, nin);
        a = nd->in[0], b = nd->in[1];
        break;
    case IC_EXT_ADDMM:
        if (nin != 3) FAIL(A, "extern %s of %d operands", name, nin);
        m.bias = nd->in[0], a = nd->in[1], b = nd->in[2];
        m.beta = nd->num, m.alpha = nd->num2;
        break;
    case IC_EXT_LINEAR:
        if (nin < 2 || nin > 3) FAIL(A, "extern %s of %d operands", name, nin);
        a = nd->in[0], b = nd->in[1], bT = true;
        if (nin == 3) m.bias = nd->in[2];
        break;
    default: FAIL(A, "extern %s (only mm, addmm, linear, 2-D matmul)", name);
    }
    const sview *bv = operand_view(A, b);
    if (!bv || bv->nd != 2) FAIL(A, "%s's right operand is not a loop constant [K, n]", name);
    m.b = *bv;
    if (bT) { /* linear: x wᵀ */
        m.b.sz[0] = bv->sz[1], m.b.sz[1] = bv->sz[0];
        m.b.st[0] = bv->st[1], m.b.st[1] = bv->st[0];
    }
    if (role(A, m.b.inp) != 'k' || m.b.sz[1] != A->n || A->g->nodes[A->g->inputs[m.b.inp]].meta.dtype != IC_F32)
        FAIL(A, "%s's right operand is not a loop constant [K, n]", name);
    if (!is_NN(A, &nd->meta) || nd->meta.dtype != IC_F32)
        FAIL(A, "%s of shape other than float32 [N, n]", name);
    if (m.bias != IC_NONE) {
        vkind k = A->kind[m.bias];
        const ic_meta *bm = &A->g->nodes[m.bias].meta;
        if (k == V_MM || !bshape_ok(A, bm->ndim, bm->sizes) || (bm->dtype != IC_F32 && k != V_SCALAR))
            FAIL(A, "%s's bias is not float32 broadcast to [N, n]", name);
    }
    if (A->kind[a] == V_CARRY) {
        if (A->rec >= 0) FAIL(A, "two products of the carry");
        if (m.b.sz[0] != A->n) FAIL(A, "the recurrent matrix is not [n, n]");
        m.rec = true;
        A->rec = A->nmm;
    } else {
        const sview *av = operand_view(A, a);
        if (!av || (role(A, av->inp) != 'x' && role(A, av->inp) != 'k') || av->nd != 2 ||
            (av->sz[0] != 1 && av->sz[0] != A->N) || av->sz[1] != m.b.sz[0] ||
            A->g->nodes[A->g->inputs[av->inp]].meta.dtype != IC_F32)
            FAIL(A, "%s's left operand is neither the carry nor a view of an x slice or constant", name);
        m.a = *av;
    }
    A->mm[id] = A->nmm;
    A->mms[A->nmm++] = m;
    A->kind[id] = V_MM;
}

static void classify_pw(sa *A, ic_val id) {
    const ic_node *nd = &A->g->nodes[id];
    const ic_meta *m = &nd->meta;
    unsigned f = ic_op_flags(nd->op);
    if (m->dtype != IC_F32 && m->dtype != IC_BOOL)
        FAIL(A, "%s of dtype %s (float32 and bool values only)", ic_op_name(nd->op), ic_dtype_name(m->dtype));
    if (!bshape_ok(A, m->ndim, m->sizes))
        FAIL(A, "%%%d %s is not broadcast to the carry's [N, n]", id, ic_op_name(nd->op));
    if (nd->op == IC_OP_POW && A->kind[nd->in[1]] != V_SCALAR) FAIL(A, "pow with a tensor exponent");
    if ((f & IC_F_BITS) && nd->op != IC_OP_BITWISE_NOT) FAIL(A, "bitwise %s", ic_op_name(nd->op));
    for (int i = 0; i < IC_NIN && nd->in[i] >= 0; i++) {
        ic_val a = nd->in[i];
        const ic_meta *am = &A->g->nodes[a].meta;
        if (A->kind[a] == V_SCALAR) continue;
        if (am->dtype != IC_F32 && am->dtype != IC_BOOL)
            FAIL(A, "an operand of %s is %s (float32 and bool values only)", ic_op_name(nd->op), ic_dtype_name(am->dtype));
        if (!bshape_ok(A, am->ndim, am->sizes))
            FAIL(A, "operand %%%d of %s is not broadcast to [N, n]", a, ic_op_name(nd->op));
    }
    A->kind[id] = V_PW;
}

static void classify(sa *A) {
    const ic_graph *g = A->g;
    for (ic_val id = 0; id < g->n; id++) {
        const ic_node *nd = &g->nodes[id];
        const ic_meta *m = &nd->meta;
        if (m->dyn) FAIL(A, "a dynamic-shape body");
        switch (nd->op) {
        case IC_OP_INPUT: {
            int i = nd->index;
            if (i < 0 || i >= A->sp->ninputs) FAIL(A, "graph input %d has no role", i);
            if (role(A, i) == 'c') {
                if (!is_NN(A, m) || m->dtype != IC_F32) FAIL(A, "the carry is not float32 [N, n]");
                A->kind[id] = V_CARRY;
                break;
            }
            if (m->dtype != IC_F32 && m->dtype != IC_BOOL)
                FAIL(A, "input %d is %s (float32 and bool only)", i, ic_dtype_name(m->dtype));
            sview v = {.inp = i, .nd = m->ndim};
            for (int d = 0; d < m->ndim; d++) v.sz[d] = m->sizes[d], v.st[d] = m->strides[d];
            A->view[id] = v;
            A->kind[id] = V_VIEW;
            break;
        }
        case IC_OP_SCALAR: A->kind[id] = V_SCALAR; break;
        case IC_OP_PERMUTE: case IC_OP_EXPAND: case IC_OP_RESHAPE: case IC_OP_SLICE: {
            ic_val s = nd->in[0];
            if (A->kind[s] == V_CARRY) {
                if ((nd->op == IC_OP_EXPAND || nd->op == IC_OP_RESHAPE) && is_NN(A, m)) {
                    A->kind[id] = V_CARRY;
                    break;
                }
                FAIL(A, "the carry is read through a %s (only as itself)", ic_op_name(nd->op));
            }
            if (A->kind[s] != V_VIEW) FAIL(A, "a %s of a computed value", ic_op_name(nd->op));
            A->view[id] = view_of(A, nd, &A->view[s]);
            A->kind[id] = V_VIEW;
            break;
        }
        case IC_OP_EXTERN: classify_extern(A, id); break;
        default:
            if (!(ic_op_flags(nd->op) & IC_F_PW))
                FAIL(A, "op %s is not pointwise, a view or a matrix product", ic_op_name(nd->op));
            classify_pw(A, id);
        }
    }
}

static void check_outputs(sa *A) {
    const ic_scan_spec *sp = A->sp;
    for (int k = -1; k < sp->ny; k++) {
        int o = k < 0 ? sp->cout : sp->yout[k];
        if (o < 0 || o >= A->g->noutputs) FAIL(A, "graph output %d does not exist", o);
        ic_val v = A->g->outputs[o];
        const ic_node *nd = &A->g->nodes[v];
        if ((A->kind[v] != V_PW && A->kind[v] != V_MM) || !is_NN(A, &nd->meta) || nd->meta.dtype != IC_F32)
            FAIL(A, "graph output %d is not a computed float32 [N, n] value", o);
        int64_t st[IC_MAX_DIMS] = {0}, cs[IC_MAX_DIMS];
        ic_layout_output(nd, st);
        dense(2, nd->meta.sizes, cs);
        if ((A->N > 1 && st[0] != cs[0]) || (A->n > 1 && st[1] != cs[1]))
            FAIL(A, "graph output %d is not stored contiguously", o);
        for (int i = 0; i < A->g->ninto; i++)
            if (A->g->into[2 * i] == o) FAIL(A, "graph output %d updates an input in place", o);
    }
}

/* ---- the kernel object and its launch shape ---------------------------------------------------- */
typedef struct sdev {
    int device;
    ic_CUcontext ctx;
    ic_CUmodule mod;
    ic_CUfunction fn;
} sdev;

struct ic_scan_kernel {
    int refs;                 /* atomic */
    char *key;
    ic_scan_shape s;
    char describe[400];
    char *ir;                 /* LLVM IR text before optimization */
    void *bc;                 /* its bitcode */
    size_t nbc;
    int ninputs;
    char *role;               /* per graph input */
    int *role_index;
    ic_meta *in_meta;         /* per graph input: its meta in the graph */
    int64_t *x_stride0;       /* per x: elements between steps of its stack */
    int nx;
    int *yslot;               /* per result: its stack (results' distinct outputs, in order) */
    int ny;
    int sm;                   /* the target it was made for (sm_XY as XY) */
    pthread_mutex_t mu;       /* the PTX and the loaded modules */
    char *ptx;
    char ptx_err[300];
    sdev dev[SCAN_DEVS];
    int ndev;
};

static int smem_limit(int sm) {
    switch (sm) {
    case 80: return 163 * 1024;
    case 86: case 89: return 99 * 1024;
    case 90: return 227 * 1024;
    default: return sm < 90 ? 99 * 1024 : 227 * 1024;
    }
}

static void launch_shape(const sa *A, int sm, int nsm, ic_scan_shape *s) {
    int64_t N = A->N, n = A->n;
    s->threads = (int)(n < 32 ? 32 : (n + 31) / 32 * 32);
    int R = N <= nsm ? 1 : (N <= 2 * (int64_t)nsm || s->threads > 512) ? 2 : 4;
    s->R = (int)(R < N ? R : N);
    s->np = (int)((n + 3) & ~(int64_t)3);
    int64_t hs = 2 * (int64_t)s->R * s->np * 4, w = n * s->np * 4;
    s->has_mv = A->rec >= 0;
    s->w_smem = s->has_mv && w + hs <= smem_limit(sm);
    if (s->has_mv && !s->w_smem) {
        /* W from L2: a CTA's step streams all of W whatever its rows, so each value serves up to
         * 4 rows (2 at more than 512 threads: registers) and fewer SMs are busy for it */
        int r = s->threads <= 512 ? 4 : 2;
        s->R = (int)(r < N ? r : N);
        hs = 2 * (int64_t)s->R * s->np * 4;
    }
    s->ctas = (int)((N + s->R - 1) / s->R);
    s->smem = (int)(hs + (s->w_smem ? w : 0));
    s->N = N;
    s->n = n;
    s->nxmm = A->nmm - (A->rec >= 0);
}

/* ---- IR ----------------------------------------------------------------------------------- */
typedef struct sg {
    cg cg;
    sa *A;
    const ic_scan_shape *s;
    LLVMTypeRef gptr, sptr, v4;
    LLVMValueRef fn, smem, *in, h0, hT, *ys, T;
    LLVMValueRef t64, col, rows[SCAN_MAX_ROWS], rowok[SCAN_MAX_ROWS];
    LLVMValueRef cur;         /* this step's state buffer (i64 0 / 1) */
    LLVMValueRef acc;         /* the recurrent product at the row being emitted */
    int r;                    /* the row being emitted (0 .. R-1) */
    LLVMValueRef *memo;       /* per node at this row */
    int64_t hs_base;          /* floats before the state in shared memory (W's) */
} sg;

#undef B
#define B G->cg.b

static LLVMValueRef k64(sg *G, int64_t v) { return LLVMConstInt(G->cg.i64, (unsigned long long)v, 1); }
static LLVMValueRef skf(sg *G, double v) { return LLVMConstReal(G->cg.f32, (double)(float)v); }
static LLVMValueRef add(sg *G, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(B, a, b, ""); }
static LLVMValueRef mul(sg *G, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(B, a, b, ""); }
static LLVMValueRef sfma(sg *G, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) { return cg_fma(&G->cg, a, b, c); }
static LLVMBasicBlockRef block(sg *G, const char *name) { return LLVMAppendBasicBlockInContext(G->cg.ctx, G->fn, name); }
static void at(sg *G, LLVMBasicBlockRef bb) { LLVMPositionBuilderAtEnd(B, bb); }
static LLVMValueRef ssreg(sg *G, const char *name) { return cg_intrin(&G->cg, name, NULL, 0, NULL, 0); }
static void barrier(sg *G) { cg_intrin(&G->cg, "llvm.nvvm.barrier0", NULL, 0, NULL, 0); }

static LLVMValueRef ld(sg *G, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef off, unsigned align) {
    LLVMValueRef p = LLVMBuildGEP2(B, t == G->cg.i8 ? G->cg.i8 : G->cg.f32, base, &off, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(B, t, p, "");
    LLVMSetAlignment(v, align);
    return v;
}

static void st(sg *G, LLVMValueRef v, LLVMValueRef base, LLVMValueRef off) {
    LLVMValueRef p = LLVMBuildGEP2(B, G->cg.f32, base, &off, 1, "");
    LLVMSetAlignment(LLVMBuildStore(B, v, p), 4);
}

/* offset (floats) of hs[buf][r][c] in shared memory */
static LLVMValueRef hs_off(sg *G, LLVMValueRef buf, int r, LLVMValueRef c) {
    LLVMValueRef o = mul(G, buf, k64(G, (int64_t)G->s->R * G->s->np));
    o = add(G, o, k64(G, G->hs_base + (int64_t)r * G->s->np));
    return add(G, o, c);
}

/* element offset of view v at per-dim indices idx (NULL: 0), at step t for an x slice */
static LLVMValueRef view_off(sg *G, const sview *v, LLVMValueRef *idx) {
    LLVMValueRef o = k64(G, v->off);
    if (role(G->A, v->inp) == 'x') o = add(G, o, mul(G, G->t64, k64(G, G->A->sp->x_stride0[G->A->sp->role_index[v->inp]])));
    for (int d = 0; d < v->nd; d++)
        if (v->st[d] && v->sz[d] != 1 && idx[d]) o = add(G, o, mul(G, idx[d], k64(G, v->st[d])));
    return o;
}

/* view v at the element (row, col) of [N, n] (right-aligned broadcast) */
static LLVMValueRef load_bcast(sg *G, const sview *v, ic_dtype dt) {
    LLVMValueRef idx[IC_MAX_DIMS] = {0};
    if (v->nd >= 2) idx[v->nd - 2] = G->rows[G->r];
    if (v->nd >= 1) idx[v->nd - 1] = G->col;
    LLVMValueRef o = view_off(G, v, idx);
    if (dt == IC_BOOL) return LLVMBuildICmp(B, LLVMIntNE, ld(G, G->cg.i8, G->in[v->inp], o, 1), LLVMConstInt(G->cg.i8, 0, 0), "");
    return ld(G, G->cg.f32, G->in[v->inp], o, 4);
}

static LLVMValueRef value(sg *G, ic_val v, ic_dtype want);

/* sum_k a[row, k] b[k, col] of an input projection: unrolled for K <= 16, else a loop */
static LLVMValueRef projection(sg *G, const smm *m) {
    int64_t K = m->b.sz[0];
    LLVMValueRef arow = m->a.sz[0] != 1 ? G->rows[G->r] : NULL;
    LLVMValueRef s = skf(G, 0.0);
    if (K <= 16) {
        for (int64_t k = 0; k < K; k++) {
            LLVMValueRef ia[2] = {arow, k64(G, k)}, ib[2] = {k64(G, k), G->col};
            LLVMValueRef x = ld(G, G->cg.f32, G->in[m->a.inp], view_off(G, &m->a, ia), 4);
            LLVMValueRef w = ld(G, G->cg.f32, G->in[m->b.inp], view_off(G, &m->b, ib), 4);
            s = sfma(G, x, w, s);
        }
        return s;
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B), body = block(G, "proj"), done = block(G, "proj.done");
    LLVMBuildBr(B, body);
    at(G, body);
    LLVMValueRef k = LLVMBuildPhi(B, G->cg.i64, "k"), acc = LLVMBuildPhi(B, G->cg.f32, "");
    LLVMValueRef ia[2] = {arow, k}, ib[2] = {k, G->col};
    LLVMValueRef x = ld(G, G->cg.f32, G->in[m->a.inp], view_off(G, &m->a, ia), 4);
    LLVMValueRef w = ld(G, G->cg.f32, G->in[m->b.inp], view_off(G, &m->b, ib), 4);
    LLVMValueRef an = sfma(G, x, w, acc), kn = add(G, k, k64(G, 1));
    LLVMBasicBlockRef end = LLVMGetInsertBlock(B);
    LLVMValueRef vk[2] = {k64(G, 0), kn}, va[2] = {skf(G, 0.0), an};
    LLVMBasicBlockRef bk[2] = {pre, end};
    LLVMAddIncoming(k, vk, bk, 2);
    LLVMAddIncoming(acc, va, bk, 2);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, kn, k64(G, K), ""), done, body);
    at(G, done);
    return an;
}

static LLVMValueRef product(sg *G, const smm *m) {
    LLVMValueRef s = m->rec ? G->acc : projection(G, m);
    if (m->alpha != 1) s = LLVMBuildFMul(B, s, skf(G, m->alpha), "");
    if (m->bias != IC_NONE) {
        LLVMValueRef b = value(G, m->bias, IC_F32);
        if (m->beta != 1) b = LLVMBuildFMul(B, b, skf(G, m->beta), "");
        s = LLVMBuildFAdd(B, b, s, "");
    }
    return s;
}

/* v (an f32 or i1 register of dtype from) as want (IC_F32 or IC_BOOL) */
static LLVMValueRef as(sg *G, LLVMValueRef v, ic_dtype from, ic_dtype want) {
    if (from == want) return v;
    return ol_convert(&G->cg, v, from, want);
}

/* the compute dtype of a pointwise node's operands: float32 unless every one is bool (weak
 * scalars follow the tensors; a float scalar with bool tensors makes float32, as torch) */
static ic_dtype compute_dtype(sg *G, const ic_node *nd) {
    unsigned f = ic_op_flags(nd->op);
    if (nd->op == IC_OP_LOGICAL_AND || nd->op == IC_OP_LOGICAL_OR || nd->op == IC_OP_LOGICAL_XOR ||
        nd->op == IC_OP_LOGICAL_NOT)
        return IC_BOOL;
    if (f & IC_F_FLOAT) return IC_F32;
    bool any_t = false, all_bool = true, float_scalar = false;
    int first = nd->op == IC_OP_WHERE ? 1 : 0;
    for (int i = first; i < IC_NIN && nd->in[i] >= 0; i++) {
        const ic_node *a = &G->A->g->nodes[nd->in[i]];
        if (a->op == IC_OP_SCALAR) float_scalar |= a->meta.dtype == IC_F64 || a->meta.dtype == IC_F32;
        else any_t = true, all_bool &= a->meta.dtype == IC_BOOL;
    }
    if (nd->op == IC_OP_CAST) return G->A->g->nodes[nd->in[0]].meta.dtype == IC_BOOL ? IC_BOOL : IC_F32;
    if (!(any_t && all_bool && !float_scalar)) return IC_F32;
    for (int i = first; i < IC_NIN && nd->in[i] >= 0; i++) { /* bool tensors with an int: int64 math */
        const ic_node *a = &G->A->g->nodes[nd->in[i]];
        if (a->op == IC_OP_SCALAR && a->meta.dtype != IC_BOOL && a->num != 0 && a->num != 1)
            FAIL(G->A, "%s of bool values and an integer (integer math)", ic_op_name(nd->op));
    }
    return IC_BOOL;
}

static LLVMValueRef pointwise(sg *G, ic_val id) {
    const ic_node *nd = &G->A->g->nodes[id];
    cg *C = &G->cg;
    ic_dtype ct = compute_dtype(G, nd), rt = nd->meta.dtype;
    if (nd->op == IC_OP_CAST) return as(G, value(G, nd->in[0], ct), ct, rt);
    if (nd->op == IC_OP_WHERE) {
        LLVMValueRef c = value(G, nd->in[0], IC_BOOL);
        return LLVMBuildSelect(B, c, value(G, nd->in[1], rt), value(G, nd->in[2], rt), "");
    }
    LLVMValueRef a = value(G, nd->in[0], ct), r;
    if (nd->in[1] < 0) {
        r = nd->op == IC_OP_LOGICAL_NOT ? LLVMBuildNot(B, a, "") : ol_unary(C, nd->op, ct, a);
    } else {
        LLVMValueRef b = value(G, nd->in[1], ct);
        ic_xid bx = -1;
        if (nd->op == IC_OP_POW) bx = x_const(C->c, G->A->g->nodes[nd->in[1]].num, IC_F32);
        r = ol_binary(C, nd->op, ct, a, b, bx);
    }
    ic_dtype got = (ic_op_flags(nd->op) & IC_F_BOOL) ? IC_BOOL : ct;
    return as(G, r, got, rt);
}

/* node v at the current element, as want (IC_F32 or IC_BOOL) */
static LLVMValueRef value(sg *G, ic_val v, ic_dtype want) {
    const ic_node *nd = &G->A->g->nodes[v];
    if (G->A->kind[v] == V_SCALAR)
        return want == IC_BOOL ? LLVMConstInt(G->cg.i1, nd->num != 0, 0) : skf(G, nd->num);
    if (!G->memo[v]) {
        switch (G->A->kind[v]) {
        case V_CARRY:
            G->memo[v] = ld(G, G->cg.f32, G->smem, hs_off(G, G->cur, G->r, G->col), 4);
            break;
        case V_VIEW: G->memo[v] = load_bcast(G, &G->A->view[v], nd->meta.dtype); break;
        case V_MM: G->memo[v] = product(G, &G->A->mms[G->A->mm[v]]); break;
        case V_PW: G->memo[v] = pointwise(G, v); break;
        default: ic_fail(G->A->c, IC_EINTERNAL, "scan kernel: value %%%d has no form", v);
        }
    }
    ic_dtype have = G->A->kind[v] == V_CARRY || G->A->kind[v] == V_MM ? IC_F32 : nd->meta.dtype;
    return as(G, G->memo[v], have, want);
}

/* W[j][col]: from shared memory or from global memory (any strides) */
static LLVMValueRef w_at(sg *G, LLVMValueRef j) {
    if (G->s->w_smem) return ld(G, G->cg.f32, G->smem, add(G, mul(G, j, k64(G, G->s->np)), G->col), 4);
    const sview *W = &G->A->mms[G->A->rec].b;
    LLVMValueRef idx[2] = {j, G->col};
    return ld(G, G->cg.f32, G->in[W->inp], view_off(G, W, idx), 4);
}

static void add_attr(sg *G, LLVMValueRef fn, unsigned idx, const char *name) {
    unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(G->cg.ctx, k, 0));
}

static void annotate(sg *G, const char *key, int v) {
    LLVMValueRef md[3] = {G->fn, LLVMMDStringInContext(G->cg.ctx, key, (unsigned)strlen(key)),
                          LLVMConstInt(G->cg.i32, (unsigned)v, 0)};
    LLVMAddNamedMetadataOperand(G->cg.mod, "nvvm.annotations", LLVMMDNodeInContext(G->cg.ctx, md, 3));
}

static void build(sg *G, const ic_scan_kernel *K) {
    sa *A = G->A;
    const ic_scan_shape *s = G->s;
    ic_ctx *c = A->c;
    const int64_t N = A->N, n = A->n, np = s->np;
    const int R = s->R, nin = A->sp->ninputs, nres = K->s.nres;
    /* params: h0, every graph input (the carry's unused), the results' stacks [T, N, n], the
     * final carry, T */
    int npar = 1 + nin + nres + 1 + 1;
    LLVMTypeRef *pt = ic_alloc(c, (size_t)npar * sizeof *pt);
    for (int i = 0; i < npar - 1; i++) pt[i] = G->gptr;
    pt[npar - 1] = G->cg.i32;
    G->fn = LLVMAddFunction(G->cg.mod, SCAN_KNAME, LLVMFunctionType(G->cg.vd, pt, (unsigned)npar, 0));
    G->cg.fn = G->fn;
    char nm[32];
    G->in = ic_alloc(c, ((size_t)nin + 1) * sizeof *G->in);
    G->ys = ic_alloc(c, ((size_t)nres + 1) * sizeof *G->ys);
    G->h0 = LLVMGetParam(G->fn, 0);
    LLVMSetValueName2(G->h0, "h0", 2);
    for (int i = 0; i < nin; i++) {
        G->in[i] = LLVMGetParam(G->fn, (unsigned)(1 + i));
        LLVMSetValueName2(G->in[i], nm, (size_t)snprintf(nm, sizeof nm, "in%d", i));
        add_attr(G, G->fn, (unsigned)(2 + i), "noalias");
    }
    for (int m = 0; m < nres; m++) {
        G->ys[m] = LLVMGetParam(G->fn, (unsigned)(1 + nin + m));
        LLVMSetValueName2(G->ys[m], nm, (size_t)snprintf(nm, sizeof nm, "y%d", m));
        add_attr(G, G->fn, (unsigned)(2 + nin + m), "noalias");
    }
    G->hT = LLVMGetParam(G->fn, (unsigned)(1 + nin + nres));
    LLVMSetValueName2(G->hT, "hT", 2);
    add_attr(G, G->fn, (unsigned)(2 + nin + nres), "noalias");
    G->T = LLVMGetParam(G->fn, (unsigned)(npar - 1));
    LLVMSetValueName2(G->T, "T", 1);
    G->smem = LLVMAddGlobalInAddressSpace(G->cg.mod, LLVMArrayType(G->cg.f32, 0), "smem", 3);
    LLVMSetLinkage(G->smem, LLVMExternalLinkage);
    LLVMSetAlignment(G->smem, 16);
    annotate(G, "kernel", 1);
    annotate(G, "maxntidx", s->threads);

    at(G, block(G, "entry"));
    LLVMValueRef tid = LLVMBuildZExt(B, ssreg(G, "llvm.nvvm.read.ptx.sreg.tid.x"), G->cg.i64, "tid");
    LLVMValueRef bid = LLVMBuildZExt(B, ssreg(G, "llvm.nvvm.read.ptx.sreg.ctaid.x"), G->cg.i64, "cta");
    LLVMValueRef colok = LLVMBuildICmp(B, LLVMIntULT, tid, k64(G, n), "");
    G->col = LLVMBuildSelect(B, colok, tid, k64(G, n - 1), "col");
    LLVMValueRef r0 = mul(G, bid, k64(G, R));
    for (int r = 0; r < R; r++) {
        LLVMValueRef rr = add(G, r0, k64(G, r));
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntULT, rr, k64(G, N), "");
        G->rowok[r] = LLVMBuildAnd(B, ok, colok, "");
        G->rows[r] = LLVMBuildSelect(B, ok, rr, k64(G, N - 1), "row");
    }
    G->hs_base = s->w_smem ? n * np : 0;
    if (s->w_smem) { /* ws[j][i] = W[j, i], loaded once by all threads */
        const sview *W = &A->mms[A->rec].b;
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(B), wl = block(G, "wload"), wst = block(G, "wload.st"),
                          wend = block(G, "wload.end");
        LLVMBuildBr(B, wl);
        at(G, wl);
        LLVMValueRef e = LLVMBuildPhi(B, G->cg.i64, "e");
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntULT, e, k64(G, n * n), ""), wst, wend);
        at(G, wst);
        LLVMValueRef j = LLVMBuildUDiv(B, e, k64(G, n), ""), i = LLVMBuildURem(B, e, k64(G, n), "");
        LLVMValueRef idx[2] = {j, i};
        LLVMValueRef w = ld(G, G->cg.f32, G->in[W->inp], view_off(G, W, idx), 4);
        st(G, w, G->smem, add(G, mul(G, j, k64(G, np)), i));
        LLVMValueRef en = add(G, e, k64(G, s->threads));
        LLVMValueRef ve[2] = {tid, en};
        LLVMBasicBlockRef be[2] = {pre, wst};
        LLVMAddIncoming(e, ve, be, 2);
        LLVMBuildBr(B, wl);
        at(G, wend);
    }
    { /* the state: hs[0][r][col] = h0[row r, col] (threads past n store nothing) */
        LLVMBasicBlockRef ini = block(G, "init"), done = block(G, "init.done");
        LLVMBuildCondBr(B, colok, ini, done);
        at(G, ini);
        for (int r = 0; r < R; r++) {
            LLVMValueRef h = ld(G, G->cg.f32, G->h0, add(G, mul(G, G->rows[r], k64(G, n)), G->col), 4);
            st(G, h, G->smem, hs_off(G, k64(G, 0), r, G->col));
        }
        LLVMBuildBr(B, done);
        at(G, done);
    }
    barrier(G);
    LLVMValueRef T64 = LLVMBuildZExt(B, G->T, G->cg.i64, "T64");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B), step = block(G, "step"), fin = block(G, "fin");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntUGT, T64, k64(G, 0), ""), step, fin);

    /* ---- the step loop */
    at(G, step);
    G->t64 = LLVMBuildPhi(B, G->cg.i64, "t");
    G->cur = LLVMBuildAnd(B, G->t64, k64(G, 1), "cur");
    LLVMValueRef nxt = LLVMBuildXor(B, G->cur, k64(G, 1), "nxt");
    int64_t nmv = s->has_mv ? n : 0, n4 = nmv / 4 * 4;
    LLVMValueRef accs[SCAN_MAX_ROWS];
    for (int r = 0; r < R; r++) accs[r] = skf(G, 0.0);
    if (n4) { /* acc[r] = sum_j hs[cur][r][j] W[j][col], j by 4, two accumulators */
        LLVMBasicBlockRef mvpre = LLVMGetInsertBlock(B), mv = block(G, "mv"), mvt = block(G, "mv.tail");
        LLVMBuildBr(B, mv);
        at(G, mv);
        LLVMValueRef j = LLVMBuildPhi(B, G->cg.i64, "j"), ph[SCAN_MAX_ROWS][2], a[SCAN_MAX_ROWS][2];
        for (int r = 0; r < R; r++)
            for (int q = 0; q < 2; q++) a[r][q] = ph[r][q] = LLVMBuildPhi(B, G->cg.f32, "");
        LLVMValueRef ws[4];
        for (int q = 0; q < 4; q++) ws[q] = w_at(G, add(G, j, k64(G, q)));
        for (int r = 0; r < R; r++) {
            LLVMValueRef o = hs_off(G, G->cur, r, j);
            LLVMValueRef hp = LLVMBuildGEP2(B, G->cg.f32, G->smem, &o, 1, "");
            LLVMValueRef hv = LLVMBuildLoad2(B, G->v4, hp, "");
            LLVMSetAlignment(hv, 16);
            for (int q = 0; q < 4; q++) {
                LLVMValueRef hq = LLVMBuildExtractElement(B, hv, LLVMConstInt(G->cg.i32, (unsigned)q, 0), "");
                a[r][q % 2] = sfma(G, hq, ws[q], a[r][q % 2]);
            }
        }
        LLVMValueRef jn = add(G, j, k64(G, 4));
        LLVMBasicBlockRef end = LLVMGetInsertBlock(B), bb[2] = {mvpre, end};
        LLVMValueRef vj[2] = {k64(G, 0), jn};
        LLVMAddIncoming(j, vj, bb, 2);
        for (int r = 0; r < R; r++)
            for (int q = 0; q < 2; q++) {
                LLVMValueRef vv[2] = {skf(G, 0.0), a[r][q]};
                LLVMAddIncoming(ph[r][q], vv, bb, 2);
            }
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, jn, k64(G, n4), ""), mvt, mv);
        at(G, mvt);
        for (int r = 0; r < R; r++) accs[r] = LLVMBuildFAdd(B, a[r][0], a[r][1], "");
    }
    for (int64_t j = n4; j < nmv; j++) {
        LLVMValueRef w = w_at(G, k64(G, j));
        for (int r = 0; r < R; r++) {
            LLVMValueRef h = ld(G, G->cg.f32, G->smem, hs_off(G, G->cur, r, k64(G, j)), 4);
            accs[r] = sfma(G, h, w, accs[r]);
        }
    }
    /* the body's pointwise ops per row; the results and the next state stored */
    const ic_scan_spec *sp = A->sp;
    G->memo = ic_alloc(c, ((size_t)A->g->n + 1) * sizeof *G->memo);
    for (int r = 0; r < R; r++) {
        memset(G->memo, 0, (size_t)A->g->n * sizeof *G->memo);
        G->r = r;
        G->acc = accs[r];
        LLVMValueRef hnext = value(G, A->g->outputs[sp->cout], IC_F32);
        LLVMValueRef *yv = ic_alloc(c, ((size_t)nres + 1) * sizeof *yv);
        for (int k = 0; k < sp->ny; k++) yv[K->yslot[k]] = value(G, A->g->outputs[sp->yout[k]], IC_F32);
        LLVMBasicBlockRef sb = block(G, "store"), sk = block(G, "store.end");
        LLVMBuildCondBr(B, G->rowok[r], sb, sk);
        at(G, sb);
        LLVMValueRef o = add(G, mul(G, G->t64, k64(G, N * n)), add(G, mul(G, G->rows[r], k64(G, n)), G->col));
        for (int m = 0; m < nres; m++) st(G, yv[m], G->ys[m], o);
        st(G, hnext, G->smem, hs_off(G, nxt, r, G->col));
        LLVMBuildBr(B, sk);
        at(G, sk);
    }
    barrier(G);
    LLVMValueRef tn = add(G, G->t64, k64(G, 1));
    LLVMBasicBlockRef send = LLVMGetInsertBlock(B), bt[2] = {pre, send};
    LLVMValueRef vt[2] = {k64(G, 0), tn};
    LLVMAddIncoming(G->t64, vt, bt, 2);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntEQ, tn, T64, ""), fin, step);

    /* ---- the final carry: hs[T % 2][r][col] (this thread's own column: no barrier needed) */
    at(G, fin);
    LLVMValueRef last = LLVMBuildAnd(B, T64, k64(G, 1), "");
    for (int r = 0; r < R; r++) {
        LLVMBasicBlockRef fb = block(G, "fin.st"), fs = block(G, "fin.end");
        LLVMBuildCondBr(B, G->rowok[r], fb, fs);
        at(G, fb);
        LLVMValueRef h = ld(G, G->cg.f32, G->smem, hs_off(G, last, r, G->col), 4);
        st(G, h, G->hT, add(G, mul(G, G->rows[r], k64(G, n)), G->col));
        LLVMBuildBr(B, fs);
        at(G, fs);
    }
    LLVMBuildRetVoid(B);
}
#undef B

/* ---- planning ------------------------------------------------------------------------------- */
static void kernel_free(ic_scan_kernel *K) {
    if (!K) return;
    for (int i = 0; i < K->ndev; i++) ic_cuda_fn_unload(K->dev[i].ctx, K->dev[i].mod);
    pthread_mutex_destroy(&K->mu);
    free(K->key);
    free(K->ir);
    free(K->bc);
    free(K->role);
    free(K->role_index);
    free(K->in_meta);
    free(K->x_stride0);
    free(K->yslot);
    free(K->ptx);
    free(K);
}

void ic_scan_kernel_unref(ic_scan_kernel *K) {
    if (K && __atomic_sub_fetch(&K->refs, 1, __ATOMIC_ACQ_REL) == 0) kernel_free(K);
}

typedef struct sbuild { /* what a failed build releases (setjmp-safe: reached by pointer) */
    ic_ctx c;
    ic_err err;
    sa A;
    sg G;
    gpart q;
    ic_scan_kernel *K;
    ic_graph *g;
} sbuild;

static void sbuild_free(sbuild *S) {
    gg_part_dispose(&S->q);
    ic_arena_free(&S->c);
    if (S->g) ic_graph_free(S->g);
    kernel_free(S->K);
    free(S);
}

static ic_scan_kernel *scan_plan(const ic_scan_spec *sp, char *why, size_t nwhy) {
    sbuild *S = calloc(1, sizeof *S);
    if (!S) {
        snprintf(why, nwhy, "out of memory");
        return NULL;
    }
    char msg[300] = "";
    S->g = ic_graph_parse(sp->graph, msg, sizeof msg);
    if (!S->g) {
        snprintf(why, nwhy, "the body's graph text does not parse: %s", msg);
        sbuild_free(S);
        return NULL;
    }
    ic_ctx *c = &S->c;
    c->err = &S->err;
    if (setjmp(c->jb)) {
        snprintf(why, nwhy, "%s%s", S->err.code == IC_EUNSUPPORTED ? "" : "the kernel generator failed: ", S->err.msg);
        sbuild_free(S);
        return NULL;
    }
    sa *A = &S->A;
    const ic_graph *g = S->g;
    *A = (sa){.c = c, .g = g, .sp = sp, .N = sp->N, .n = sp->n, .rec = -1};
    if (sp->n > SCAN_MAX_HIDDEN) FAIL(A, "hidden size %lld > %d (one thread a column)", (long long)sp->n, SCAN_MAX_HIDDEN);
    if (sp->N < 1 || sp->n < 1) FAIL(A, "an empty carry");
    if (g->ninputs != sp->ninputs) FAIL(A, "the graph has %d inputs, the call binds %d", g->ninputs, sp->ninputs);
    A->kind = ic_alloc(c, ((size_t)g->n + 1) * sizeof *A->kind);
    A->view = ic_alloc(c, ((size_t)g->n + 1) * sizeof *A->view);
    A->mm = ic_alloc(c, ((size_t)g->n + 1) * sizeof *A->mm);
    A->mms = ic_alloc(c, ((size_t)g->n + 1) * sizeof *A->mms);
    classify(A);
    check_outputs(A);

    ic_scan_kernel *K = S->K = calloc(1, sizeof *K);
    if (!K) ic_fail(c, IC_ENOMEM, "out of memory");
    pthread_mutex_init(&K->mu, NULL);
    K->refs = 1;
    launch_shape(A, sp->sm, sp->nsm, &K->s);
    K->sm = ic_gpu_target_sm(sp->sm);
    K->ninputs = sp->ninputs;
    K->nx = sp->nx;
    K->ny = sp->ny;
    K->role = malloc((size_t)sp->ninputs + 1);
    K->role_index = malloc(((size_t)sp->ninputs + 1) * sizeof(int));
    K->in_meta = malloc(((size_t)sp->ninputs + 1) * sizeof(ic_meta));
    K->x_stride0 = malloc(((size_t)sp->nx + 1) * sizeof(int64_t));
    K->yslot = malloc(((size_t)sp->ny + 1) * sizeof(int));
    if (!K->role || !K->role_index || !K->in_meta || !K->x_stride0 || !K->yslot) ic_fail(c, IC_ENOMEM, "out of memory");
    memcpy(K->role, sp->role, (size_t)sp->ninputs);
    memcpy(K->role_index, sp->role_index, (size_t)sp->ninputs * sizeof(int));
    memcpy(K->x_stride0, sp->x_stride0, (size_t)sp->nx * sizeof(int64_t));
    for (int i = 0; i < sp->ninputs; i++) K->in_meta[i] = g->nodes[g->inputs[i]].meta;
    /* the results' stacks: one per distinct graph output, in the order of first use */
    for (int k = 0; k < sp->ny; k++) {
        int j = 0;
        while (j < k && sp->yout[j] != sp->yout[k]) j++;
        K->yslot[k] = j < k ? K->yslot[j] : K->s.nres++;
    }
    const char *where = K->s.w_smem ? "W in shared memory"
                        : K->s.has_mv ? "W in global memory (L2; n*n floats exceed the shared memory)"
                                      : "no matrix product of the carry (a pointwise recurrence)";
    snprintf(K->describe, sizeof K->describe,
             "persistent kernel (the CUDA body is %s): one launch for all steps, %d CTAs x %d threads, "
             "%d batch row(s) a CTA, %s, %d B shared",
             K->s.has_mv ? "a product of the carry with a constant plus pointwise ops" : "pointwise in the carry",
             K->s.ctas, K->s.threads, K->s.R, where, K->s.smem);

    if (gg_part_new(&S->q, ic_gpu_target_sm(sp->sm), msg, sizeof msg)) ic_fail(c, IC_EINTERNAL, "%s", msg);
    sg *G = &S->G;
    G->A = A;
    G->s = &K->s;
    LLVMContextRef x = S->q.P.ctx;
    G->cg.c = c;
    G->cg.ctx = x;
    G->cg.mod = S->q.P.mod;
    G->cg.b = G->cg.ab = S->q.P.b;
    G->cg.i1 = LLVMInt1TypeInContext(x);
    G->cg.i8 = LLVMInt8TypeInContext(x);
    G->cg.i16 = LLVMInt16TypeInContext(x);
    G->cg.i32 = LLVMInt32TypeInContext(x);
    G->cg.i64 = LLVMInt64TypeInContext(x);
    G->cg.f32 = LLVMFloatTypeInContext(x);
    G->cg.f64 = LLVMDoubleTypeInContext(x);
    G->cg.ptr = LLVMPointerTypeInContext(x, 0);
    G->cg.vd = LLVMVoidTypeInContext(x);
    G->cg.width = 1;
    G->cg.vec_var = -1;
    G->gptr = LLVMPointerTypeInContext(x, 1);
    G->sptr = LLVMPointerTypeInContext(x, 3);
    G->v4 = LLVMVectorType(G->cg.f32, 4);
    ol_target_nvptx(&G->cg, ic_gpu_target_sm(sp->sm));
    build(G, K);
    char *verr = NULL;
    if (LLVMVerifyModule(S->q.P.mod, LLVMReturnStatusAction, &verr)) {
        snprintf(msg, sizeof msg, "%s", verr ? verr : "?");
        LLVMDisposeMessage(verr);
        ic_fail(c, IC_EINTERNAL, "LLVM verifier (scan kernel): %s", msg);
    }
    LLVMDisposeMessage(verr);
    char *text = LLVMPrintModuleToString(S->q.P.mod);
    K->ir = text ? strdup(text) : NULL;
    LLVMDisposeMessage(text);
    LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(S->q.P.mod);
    K->nbc = mb ? LLVMGetBufferSize(mb) : 0;
    K->bc = K->nbc ? malloc(K->nbc) : NULL;
    if (K->bc) memcpy(K->bc, LLVMGetBufferStart(mb), K->nbc);
    if (mb) LLVMDisposeMemoryBuffer(mb);
    if (!K->ir || !K->bc) ic_fail(c, IC_ENOMEM, "out of memory");
    S->K = NULL;
    sbuild_free(S);
    return K;
}

/* ---- the cache of kernels (and reasons) by key ------------------------------------------------ */
typedef struct sentry {
    char *key;
    ic_scan_kernel *k; /* one reference; NULL: why */
    char *why;
} sentry;
static sentry cache[SCAN_CACHE];
static int ncache;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static char *spec_key(const ic_scan_spec *sp) {
    ic_str s = {0};
    ic_str_printf(&s, "%lld %lld %d %d %d %d|", (long long)sp->N, (long long)sp->n, sp->cout, sp->sm, sp->nsm, sp->ninputs);
    for (int i = 0; i < sp->ninputs; i++) ic_str_printf(&s, "%c%d ", sp->role[i], sp->role_index[i]);
    for (int i = 0; i < sp->nx; i++) ic_str_printf(&s, "%lld ", (long long)sp->x_stride0[i]);
    ic_str_printf(&s, "|");
    for (int i = 0; i < sp->ny; i++) ic_str_printf(&s, "%d ", sp->yout[i]);
    ic_str_printf(&s, "|%s", sp->graph);
    if (s.oom) {
        free(s.s);
        return NULL;
    }
    return s.s;
}

ic_scan_kernel *ic_scan_kernel_get(const ic_scan_spec *spec, char *why, size_t nwhy) {
    ic_scan_spec sp = *spec;
    for (int i = 0; i < sp.ninputs; i++)
        if ((sp.role[i] != 'c' && sp.role[i] != 'x' && sp.role[i] != 'k') ||
            (sp.role[i] == 'x' && (sp.role_index[i] < 0 || sp.role_index[i] >= sp.nx))) {
            snprintf(why, nwhy, "graph input %d has a bad role", i);
            return NULL;
        }
    char *key = spec_key(&sp);
    if (!key) {
        snprintf(why, nwhy, "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < ncache; i++)
        if (!strcmp(cache[i].key, key)) {
            ic_scan_kernel *k = cache[i].k;
            if (k) __atomic_add_fetch(&k->refs, 1, __ATOMIC_ACQ_REL);
            else snprintf(why, nwhy, "%s", cache[i].why);
            pthread_mutex_unlock(&cache_mu);
            free(key);
            return k;
        }
    pthread_mutex_unlock(&cache_mu);
    ic_scan_kernel *k = scan_plan(&sp, why, nwhy);
    pthread_mutex_lock(&cache_mu);
    if (ncache == SCAN_CACHE) { /* the oldest goes */
        free(cache[0].key);
        free(cache[0].why);
        ic_scan_kernel_unref(cache[0].k);
        memmove(cache, cache + 1, (SCAN_CACHE - 1) * sizeof *cache);
        ncache--;
    }
    sentry e = {.key = key, .k = k, .why = k ? NULL : strdup(why)};
    if (k || e.why) {
        if (k) {
            k->key = strdup(key);
            __atomic_add_fetch(&k->refs, 1, __ATOMIC_ACQ_REL);
        }
        cache[ncache++] = e;
    } else {
        free(key);
    }
    pthread_mutex_unlock(&cache_mu);
    return k;
}

void ic_scan_cache_clear(void) {
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < ncache; i++) {
        free(cache[i].key);
        free(cache[i].why);
        ic_scan_kernel_unref(cache[i].k);
    }
    ncache = 0;
    pthread_mutex_unlock(&cache_mu);
}

/* ---- what a kernel is, its code, its launch ------------------------------------------------- */
const ic_scan_shape *ic_scan_kernel_shape(const ic_scan_kernel *K) { return &K->s; }
const char *ic_scan_kernel_describe(const ic_scan_kernel *K) { return K->describe; }
const char *ic_scan_kernel_ir(const ic_scan_kernel *K) { return K->ir; }
int ic_scan_kernel_ninputs(const ic_scan_kernel *K) { return K->ninputs; }
int ic_scan_kernel_nresults(const ic_scan_kernel *K, const int **slot) {
    *slot = K->yslot;
    return K->ny;
}
int ic_scan_kernel_input(const ic_scan_kernel *K, int i, char *role, const ic_meta **m, int64_t *x_stride0) {
    if (i < 0 || i >= K->ninputs) return -1;
    *role = K->role[i];
    *m = &K->in_meta[i];
    *x_stride0 = K->role[i] == 'x' ? K->x_stride0[K->role_index[i]] : 0;
    return 0;
}

static const char *ptx_locked(ic_scan_kernel *K, char *msg, size_t n) {
    if (!K->ptx && !K->ptx_err[0]) {
        K->ptx = ic_gpu_lazy_ptx(K->bc, K->nbc, K->sm, K->ptx_err, sizeof K->ptx_err);
        if (!K->ptx && !K->ptx_err[0]) snprintf(K->ptx_err, sizeof K->ptx_err, "no PTX");
    }
    if (!K->ptx) snprintf(msg, n, "%s", K->ptx_err);
    return K->ptx;
}

char *ic_scan_kernel_ptx(ic_scan_kernel *K, char *msg, size_t n) {
    pthread_mutex_lock(&K->mu);
    const char *p = ptx_locked(K, msg, n);
    char *r = p ? strdup(p) : NULL;
    pthread_mutex_unlock(&K->mu);
    if (p && !r) snprintf(msg, n, "out of memory");
    return r;
}

static sdev *dev_of(ic_scan_kernel *K, int device, char *msg, size_t n) {
    for (int i = 0; i < K->ndev; i++)
        if (K->dev[i].device == device) return &K->dev[i];
    if (K->ndev == SCAN_DEVS) {
        snprintf(msg, n, "loaded on too many devices");
        return NULL;
    }
    const char *ptx = ptx_locked(K, msg, n);
    if (!ptx) return NULL;
    sdev d = {.device = device};
    if (ic_cuda_fn_load(device, ptx, SCAN_KNAME, (unsigned)K->s.smem, &d.ctx, &d.mod, &d.fn, msg, n)) return NULL;
    K->dev[K->ndev] = d;
    return &K->dev[K->ndev++];
}

int ic_scan_kernel_load(ic_scan_kernel *K, int device, char *msg, size_t n) {
    pthread_mutex_lock(&K->mu);
    sdev *d = dev_of(K, device, msg, n);
    pthread_mutex_unlock(&K->mu);
    return d ? 0 : -1;
}

int ic_scan_kernel_launch(ic_scan_kernel *K, int device, void *stream, void *const *ptrs, int T, char *msg, size_t n) {
    pthread_mutex_lock(&K->mu);
    sdev *d = dev_of(K, device, msg, n);
    sdev dv = d ? *d : (sdev){0};
    pthread_mutex_unlock(&K->mu);
    if (!d) return -1;
    int np = 1 + K->ninputs + K->s.nres + 1;
    void *small[32], **args = np + 1 <= 32 ? small : malloc(((size_t)np + 1) * sizeof *args);
    if (!args) {
        snprintf(msg, n, "out of memory");
        return -1;
    }
    for (int i = 0; i < np; i++) args[i] = (void *)&ptrs[i];
    args[np] = &T;
    int r = ic_cuda_fn_launch(dv.ctx, dv.fn, (unsigned)K->s.ctas, (unsigned)K->s.threads, (unsigned)K->s.smem, stream,
                              args, msg, n);
    if (args != small) free(args);
    return r;
}
