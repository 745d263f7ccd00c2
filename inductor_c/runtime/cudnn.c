/* cudnn.c — 16-bit float convolutions on CUDA, and their gradients (IC_EXT_CONV_BWD: the
 * data and weight gradients written straight into the node's output, where ATen's
 * convolution_backward returns new tensors that were copied in), through cuDNN's backend API: the
 * operation graph, the engine (first of the instant heuristic's list that finalizes) and the
 * execution plan are made once per extern node (first run); each later run is a variant pack
 * (rebuilt only when a pointer changed) and one cudnnBackendExecute on the caller's stream.
 *
 * Why: through ATen, a conv costs ~20 µs of host time (dispatch, a plan-cache lookup keyed by
 * hashing every parameter, descriptor setup, weight-layout checks), which made resnet50 and
 * mobilenet host bound on the H200.
 *
 * Tensors are described by their real strides (channels-last x/y as NCHW dims with NHWC
 * strides, the weight as it is). The library is the one PyTorch loaded (RTLD_NOLOAD /
 * dl_iterate_phdr). Not taken (returns 1, the caller goes through ATen): f32/f64 (ATen's TF32
 * settings apply there), a bias input (channels-last convs have theirs as a graph add),
 * pointers less aligned than at planning, no engine, a workspace over IC_STREAM_WS_BYTES,
 * any failure (planning, or an execution that fails: the node then stays on ATen).
 * grouped convs with 7x7 or larger kernels (see make_plan). TORCHC_CUDNN=0 turns the path off.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/gpu.h"

/* ---- the ABI we use (cudnn_graph.h of cuDNN 9) ------------------------------------------- */
typedef int dnn_status;
typedef void *dnn_handle, *dnn_desc;
enum {
    T_HANDLE = 0, T_DATA_TYPE = 1, T_INT64 = 3, T_FLOAT = 4, T_VOID_PTR = 6, T_CONV_MODE = 7, T_HEUR_MODE = 8,
    T_DESC = 15,
    D_CONV = 1, D_ENGINECFG = 3, D_ENGINEHEUR = 4, D_PLAN = 5, D_OP_CONV_FWD = 10, D_OP_CONV_BWD_W = 11,
    D_OP_CONV_BWD_X = 12, D_OPGRAPH = 15, D_VARPACK = 16,
    D_TENSOR = 17,
    A_CONV_COMP_TYPE = 100, A_CONV_MODE = 101, A_CONV_DILATIONS = 102, A_CONV_STRIDES = 103, A_CONV_POST_PAD = 104,
    A_CONV_PRE_PAD = 105, A_CONV_SPATIAL_DIMS = 106,
    A_HEUR_MODE = 200, A_HEUR_OPGRAPH = 201, A_HEUR_RESULTS = 202,
    A_PLAN_HANDLE = 400, A_PLAN_ENGINECFG = 401, A_PLAN_WS = 402,
    A_FWD_ALPHA = 700, A_FWD_BETA = 701, A_FWD_CONV = 702, A_FWD_W = 703, A_FWD_X = 704, A_FWD_Y = 705,
    A_BWX_ALPHA = 706, A_BWX_BETA = 707, A_BWX_CONV = 708, A_BWX_W = 709, A_BWX_DX = 710, A_BWX_DY = 711,
    A_BWW_ALPHA = 712, A_BWW_BETA = 713, A_BWW_CONV = 714, A_BWW_DW = 715, A_BWW_X = 716, A_BWW_DY = 717,
    A_OPGRAPH_HANDLE = 800, A_OPGRAPH_OPS = 801,
    A_T_ALIGN = 900, A_T_DTYPE = 901, A_T_DIMS = 902, A_T_STRIDES = 903, A_T_UID = 906,
    A_VP_UIDS = 1000, A_VP_PTRS = 1001, A_VP_WS = 1003,
    DATA_FLOAT = 0, DATA_HALF = 2, DATA_BF16 = 9,
    CROSS_CORRELATION = 1, HEUR_INSTANT = 0,
};

static struct {
    void *lib;
    dnn_status (*Create)(dnn_handle *);
    dnn_status (*SetStream)(dnn_handle, void *);
    dnn_status (*DescCreate)(int, dnn_desc *);
    dnn_status (*DescDestroy)(dnn_desc);
    dnn_status (*Finalize)(dnn_desc);
    dnn_status (*Set)(dnn_desc, int, int, int64_t, const void *);
    dnn_status (*Get)(dnn_desc, int, int, int64_t, int64_t *, void *);
    dnn_status (*Execute)(dnn_handle, dnn_desc, dnn_desc);
    /* legacy API, for the weight's layout change */
    dnn_status (*TCreate)(void **);
    dnn_status (*TDestroy)(void *);
    dnn_status (*TSetNd)(void *, int, int, const int *, const int *);
    dnn_status (*Transform)(dnn_handle, const void *, void *, const void *, const void *, void *, void *);
    bool ok;
} N;

static pthread_once_t dnn_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t dnn_mu = PTHREAD_MUTEX_INITIALIZER;
static dnn_handle handles[64];
static atomic_long dnn_calls;

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const char *s = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    s = s ? s + 1 : info->dlpi_name;
    if (s && strncmp(s, "libcudnn.so", 11) == 0) {
        *(void **)data = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
        if (*(void **)data) return 1;
    }
    return 0;
}

static void dnn_init(void) {
    static const char *names[] = {"libcudnn.so.9", "libcudnn.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !N.lib; i++) N.lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (!N.lib) dl_iterate_phdr(find_loaded, &N.lib);
    if (!N.lib) return;
    size_t (*version)(void) = (size_t (*)(void))dlsym(N.lib, "cudnnGetVersion");
    if (!version || version() < 90000) return; /* the backend API as used here: cuDNN 9 */
#define SYM(f, n)                                       \
    do {                                                \
        *(void **)(&N.f) = dlsym(N.lib, n);             \
        if (!N.f) return;                               \
    } while (0)
    SYM(Create, "cudnnCreate");
    SYM(SetStream, "cudnnSetStream");
    SYM(DescCreate, "cudnnBackendCreateDescriptor");
    SYM(DescDestroy, "cudnnBackendDestroyDescriptor");
    SYM(Finalize, "cudnnBackendFinalize");
    SYM(Set, "cudnnBackendSetAttribute");
    SYM(Get, "cudnnBackendGetAttribute");
    SYM(Execute, "cudnnBackendExecute");
    SYM(TCreate, "cudnnCreateTensorDescriptor");
    SYM(TDestroy, "cudnnDestroyTensorDescriptor");
    SYM(TSetNd, "cudnnSetTensorNdDescriptor");
    SYM(Transform, "cudnnTransformTensor");
#undef SYM
    N.ok = true;
}

IC_API long ic_cudnn_calls(void) { return atomic_load(&dnn_calls); }

/* one cuDNN operation of a node, its tensors named as the forward conv's: x, w, y. The
 * forward y = x * w; for IC_EXT_CONV_BWD the data gradient (dx in x's place, dy in y's) and
 * the weight gradient (dw in w's place), straight into the node's output (no ATen result
 * copied in: a DtoD copy a gradient, 105 a ResNet-50 step). role[i]: where tensor i lives,
 * an input index or -1 (the output, off bytes in: the flat [dx | dw] of which = 2). */
typedef struct dnn_op {
    int kind; /* D_OP_CONV_FWD, D_OP_CONV_BWD_X or D_OP_CONV_BWD_W */
    int role[3];
    int64_t off[3];
    dnn_desc plan, vp;
    int64_t ws_need;
    void *vp_ptrs[3]; /* pointers vp was made with */
    ic_CUdeviceptr vp_ws;
} dnn_op;

typedef struct dnn_plan {
    int state; /* 1 ready, -1 not taken */
    int dev;
    unsigned align; /* planned byte alignment of every tensor */
    int nop;
    dnn_op op[2];
    /* channels-last x with a weight that is not (forward): the weight is copied channels-last
     * into the workspace at w_off before each run (cudnnTransformTensor; ATen copies it too) */
    void *wsrc, *wdst;
    int64_t w_off;
} dnn_plan;

static void destroy(dnn_desc d) {
    if (d && N.ok) N.DescDestroy(d);
}

static void plan_free(dnn_plan *p) {
    if (!p) return;
    for (int i = 0; i < 2; i++) {
        destroy(p->op[i].vp);
        destroy(p->op[i].plan);
    }
    if (p->wsrc && N.ok) N.TDestroy(p->wsrc);
    if (p->wdst && N.ok) N.TDestroy(p->wdst);
    free(p);
}

/* a legacy Nd descriptor (int dims/strides) */
static void *legacy(int dt, int n, const int64_t *dims, const int64_t *strides) {
    int d[5], st[5];
    for (int i = 0; i < n; i++) {
        if (dims[i] > 0x7fffffff || strides[i] > 0x7fffffff) return NULL;
        d[i] = (int)dims[i], st[i] = (int)strides[i];
    }
    void *t = NULL;
    if (N.TCreate(&t)) return NULL;
    if (N.TSetNd(t, dt, n, d, st)) {
        N.TDestroy(t);
        return NULL;
    }
    return t;
}

void ic_dnn_free(void *plan) { plan_free(plan); }

static unsigned ptr_align(const void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned r = 1;
    while (r < 16 && !(a & r)) r <<= 1;
    return r;
}

/* a tensor descriptor: NCHW-order dims with the tensor's strides */
static dnn_desc tensor(int dt, int nd, const int64_t *dims, const int64_t *strides, int64_t uid, int64_t align) {
    dnn_desc d = NULL;
    if (N.DescCreate(D_TENSOR, &d)) return NULL;
    if (N.Set(d, A_T_DTYPE, T_DATA_TYPE, 1, &dt) || N.Set(d, A_T_DIMS, T_INT64, nd, dims) ||
        N.Set(d, A_T_STRIDES, T_INT64, nd, strides) || N.Set(d, A_T_UID, T_INT64, 1, &uid) ||
        N.Set(d, A_T_ALIGN, T_INT64, 1, &align) || N.Finalize(d)) {
        destroy(d);
        return NULL;
    }
    return d;
}

/* dims/strides of a meta in NCHW order: channels-last metas are [N, *s, C] */
static void nchw(const ic_meta *m, bool cl, int64_t *dims, int64_t *strides) {
    int n = m->ndim;
    if (!cl) {
        memcpy(dims, m->sizes, sizeof(int64_t) * (size_t)n);
        memcpy(strides, m->strides, sizeof(int64_t) * (size_t)n);
        return;
    }
    dims[0] = m->sizes[0], strides[0] = m->strides[0];
    dims[1] = m->sizes[n - 1], strides[1] = m->strides[n - 1];
    for (int i = 1; i < n - 1; i++) dims[i + 1] = m->sizes[i], strides[i + 1] = m->strides[i];
}

/* the address of tensor i (x, w, y) of op o */
static void *op_ptr(const dnn_op *o, int i, void *const *in, void *out) {
    return (char *)(o->role[i] >= 0 ? in[o->role[i]] : out) + o->off[i];
}

/* an execution plan for operation o over tensors tx, tw, ty: the first of the instant
 * heuristic's engines that finalizes with a workspace of at most ws_max bytes */
static bool op_plan(dnn_op *o, dnn_desc tx, dnn_desc tw, dnn_desc ty, dnn_desc conv, dnn_handle h, size_t ws_max) {
    static const int attr[3][6] = {
        /* alpha, beta, conv, x, w, y */
        {A_FWD_ALPHA, A_FWD_BETA, A_FWD_CONV, A_FWD_X, A_FWD_W, A_FWD_Y},
        {A_BWX_ALPHA, A_BWX_BETA, A_BWX_CONV, A_BWX_DX, A_BWX_W, A_BWX_DY},
        {A_BWW_ALPHA, A_BWW_BETA, A_BWW_CONV, A_BWW_X, A_BWW_DW, A_BWW_DY},
    };
    const int *at = attr[o->kind == D_OP_CONV_FWD ? 0 : o->kind == D_OP_CONV_BWD_X ? 1 : 2];
    dnn_desc op = NULL, graph = NULL, heur = NULL, cfgs[8] = {0};
    int64_t ncfg = 0;
    float one = 1.0f, zero = 0.0f;
    bool ok = !N.DescCreate(o->kind, &op) && !N.Set(op, at[3], T_DESC, 1, &tx) && !N.Set(op, at[4], T_DESC, 1, &tw) &&
              !N.Set(op, at[5], T_DESC, 1, &ty) && !N.Set(op, at[2], T_DESC, 1, &conv) &&
              !N.Set(op, at[0], T_FLOAT, 1, &one) && !N.Set(op, at[1], T_FLOAT, 1, &zero) && !N.Finalize(op);
    if (ok)
        ok = !N.DescCreate(D_OPGRAPH, &graph) && !N.Set(graph, A_OPGRAPH_HANDLE, T_HANDLE, 1, &h) &&
             !N.Set(graph, A_OPGRAPH_OPS, T_DESC, 1, &op) && !N.Finalize(graph);
    if (ok) {
        int hm = HEUR_INSTANT;
        ok = !N.DescCreate(D_ENGINEHEUR, &heur) && !N.Set(heur, A_HEUR_OPGRAPH, T_DESC, 1, &graph) &&
             !N.Set(heur, A_HEUR_MODE, T_HEUR_MODE, 1, &hm) && !N.Finalize(heur);
    }
    if (ok) {
        for (int i = 0; i < 8 && ok; i++) ok = !N.DescCreate(D_ENGINECFG, &cfgs[i]);
        ok = ok && !N.Get(heur, A_HEUR_RESULTS, T_DESC, 8, &ncfg, cfgs);
    }
    bool found = false;
    for (int64_t i = 0; ok && i < ncfg && i < 8 && !found; i++) {
        dnn_desc plan = NULL;
        int64_t wsz = 0, got = 0;
        if (!N.DescCreate(D_PLAN, &plan) && !N.Set(plan, A_PLAN_HANDLE, T_HANDLE, 1, &h) &&
            !N.Set(plan, A_PLAN_ENGINECFG, T_DESC, 1, &cfgs[i]) && !N.Finalize(plan) &&
            !N.Get(plan, A_PLAN_WS, T_INT64, 1, &got, &wsz) && wsz >= 0 && (size_t)wsz <= ws_max) {
            o->plan = plan;
            o->ws_need = wsz;
            found = true;
        } else {
            destroy(plan);
        }
    }
    for (int i = 0; i < 8; i++) destroy(cfgs[i]);
    destroy(heur);
    destroy(graph);
    destroy(op);
    return found;
}

/* contiguous strides of m's sizes (a part of the flat [dx | dw] output) */
static void packed(const ic_meta *m, ic_meta *r) {
    *r = *m;
    int64_t acc = 1;
    for (int i = m->ndim - 1; i >= 0; i--) r->strides[i] = acc, acc *= m->sizes[i] > 1 ? m->sizes[i] : 1;
}

/* The plan of a conv node: IC_EXT_CONV in = [x, w] out y; IC_EXT_CONV_BWD in = [dy, x, w],
 * params end with which (0 dx, 1 dw, 2 both: out = [dx | dw] flat, each packed). */
static void make_plan(dnn_plan *p, const ic_rext *x, void *const *in, void *out, int dev, dnn_handle h) {
    p->state = -1;
    p->dev = dev;
    const int64_t *prm = x->params;
    int nd = (int)prm[0];
    const bool bwd = x->kind == IC_EXT_CONV_BWD;
    const int which = bwd ? (int)prm[x->nparams - 1] : -1;
    bool cl = x->nparams == (bwd ? 4 : 3) + 3 * nd && prm[2 + 3 * nd] == 1;
    if (x->nin != (bwd ? 3 : 2) || which < -1 || which > 2 || nd < 2 || nd > 3) return;
    ic_meta xm = x->in_meta[bwd ? 1 : 0], wm = x->in_meta[bwd ? 2 : 1], ym = bwd ? x->in_meta[0] : x->out_meta;
    int64_t dw_off = 0;
    if (which == 0) xm = x->out_meta;
    if (which == 1) wm = x->out_meta;
    if (which == 2) {
        packed(&x->in_meta[1], &xm);
        packed(&x->in_meta[2], &wm);
        dw_off = ic_numel(&xm) * (int64_t)ic_dtype_size(xm.dtype);
        if (x->out_meta.ndim != 1 || ic_numel(&x->out_meta) != ic_numel(&xm) + ic_numel(&wm)) return;
    }
    if (xm.ndim != nd + 2 || wm.ndim != nd + 2 || ym.ndim != nd + 2) return;
    int dt = xm.dtype == IC_BF16 ? DATA_BF16 : xm.dtype == IC_F16 ? DATA_HALF : -1;
    if (dt < 0 || wm.dtype != xm.dtype || ym.dtype != xm.dtype || x->out_meta.dtype != xm.dtype) return;
    if (bwd && (x->in_meta[1].dtype != xm.dtype || x->in_meta[2].dtype != xm.dtype)) return;
    /* grouped convs with large kernels stay on ATen: with the instant heuristic's first
     * engine, convnext_tiny's 7x7 depthwise convs made it 4x slower than through ATen (H200,
     * bf16, channels-last); mobilenet's 3x3/5x5 depthwise convs were not slower */
    int64_t karea = 1;
    for (int i = 2; i < nd + 2; i++) karea *= wm.sizes[i];
    if (prm[1 + 3 * nd] != 1 && karea >= 49) return;
    /* the operations and where their tensors live (in[] index or -1 the output) */
    if (!bwd) {
        p->nop = 1;
        p->op[0] = (dnn_op){.kind = D_OP_CONV_FWD, .role = {0, 1, -1}};
    } else {
        if (which != 1) p->op[p->nop++] = (dnn_op){.kind = D_OP_CONV_BWD_X, .role = {-1, 2, 0}};
        if (which != 0) p->op[p->nop++] = (dnn_op){.kind = D_OP_CONV_BWD_W, .role = {1, -1, 0}, .off = {0, dw_off, 0}};
    }
    int n = nd + 2;
    int64_t xd[5], xs[5], wd[5], ws[5], yd[5], ys[5];
    nchw(&xm, cl, xd, xs);
    nchw(&wm, false, wd, ws);
    nchw(&ym, cl, yd, ys);
    int64_t wcl[5]; /* the weight's channels-last strides: [O, *k, C] packed */
    {
        int64_t acc = wd[1];
        wcl[1] = 1;
        for (int i = n - 1; i >= 2; i--) wcl[i] = acc, acc *= wd[i];
        wcl[0] = acc;
    }
    bool wconv = false;
    if (cl) {
        for (int i = 0; i < n; i++)
            if (wd[i] > 1 && ws[i] != wcl[i]) wconv = true;
    }
    if (wconv && !bwd) {
        int64_t wbytes = wcl[0] * wd[0] * (int64_t)ic_dtype_size(wm.dtype);
        p->wsrc = legacy(dt, n, wd, ws);
        p->wdst = legacy(dt, n, wd, wcl);
        if (!p->wsrc || !p->wdst || (size_t)wbytes > IC_STREAM_WS_BYTES / 2) return;
        p->w_off = (int64_t)(IC_STREAM_WS_BYTES - (size_t)wbytes) & ~(int64_t)255;
        memcpy(ws, wcl, sizeof wcl);
    }
    /* gradients: the tensors as they are (a layout no engine takes: ATen's path) */
    for (int i = 0; i < n; i++)
        if (xd[i] < 1 || wd[i] < 1 || yd[i] < 1 || xs[i] < 0 || ws[i] < 0 || ys[i] < 0) return;
    unsigned al = 16;
    for (int k = 0; k < p->nop; k++)
        for (int i = 0; i < 3; i++) {
            if (p->wsrc && p->op[k].kind == D_OP_CONV_FWD && i == 1) continue; /* the workspace copy */
            unsigned a = ptr_align(op_ptr(&p->op[k], i, in, out));
            if (a < al) al = a;
        }
    p->align = al;
    int64_t align = al;
    dnn_desc tx = tensor(dt, n, xd, xs, 'x', align), tw = tensor(dt, n, wd, ws, 'w', align),
             ty = tensor(dt, n, yd, ys, 'y', align);
    dnn_desc conv = NULL;
    bool ok = tx && tw && ty && !N.DescCreate(D_CONV, &conv);
    if (ok) {
        int comp = DATA_FLOAT, mode = CROSS_CORRELATION;
        int64_t sd = nd, st[3], pad[3], dil[3];
        for (int i = 0; i < nd; i++) st[i] = prm[1 + i], pad[i] = prm[1 + nd + i], dil[i] = prm[1 + 2 * nd + i];
        ok = !N.Set(conv, A_CONV_COMP_TYPE, T_DATA_TYPE, 1, &comp) && !N.Set(conv, A_CONV_MODE, T_CONV_MODE, 1, &mode) &&
             !N.Set(conv, A_CONV_SPATIAL_DIMS, T_INT64, 1, &sd) && !N.Set(conv, A_CONV_STRIDES, T_INT64, nd, st) &&
             !N.Set(conv, A_CONV_PRE_PAD, T_INT64, nd, pad) && !N.Set(conv, A_CONV_POST_PAD, T_INT64, nd, pad) &&
             !N.Set(conv, A_CONV_DILATIONS, T_INT64, nd, dil) && !N.Finalize(conv);
    }
    for (int k = 0; ok && k < p->nop; k++)
        ok = op_plan(&p->op[k], tx, tw, ty, conv, h, p->wsrc ? (size_t)p->w_off : IC_STREAM_WS_BYTES);
    if (ok) p->state = 1;
    destroy(conv);
    destroy(tx);
    destroy(tw);
    destroy(ty);
}

static dnn_handle handle_of(int dev) {
    pthread_once(&dnn_once, dnn_init);
    if (!N.ok || dev < 0 || dev >= 64) return NULL;
    pthread_mutex_lock(&dnn_mu);
    if (!handles[dev] && N.Create(&handles[dev])) handles[dev] = NULL;
    dnn_handle h = handles[dev];
    pthread_mutex_unlock(&dnn_mu);
    return h;
}

int ic_dnn_run(const ic_rext *x, void *const *in, void *out, void *stream, int dev, ic_err *err) {
    if (x->kind != IC_EXT_CONV && x->kind != IC_EXT_CONV_BWD) return 1;
    dnn_plan *p = atomic_load(&((ic_rext *)x)->dnn);
    if (!p) {
        dnn_plan *np = calloc(1, sizeof *np);
        if (!np) return 1;
        dnn_handle h = ic_config_int(IC_CFG_cudnn) ? handle_of(dev) : NULL;
        np->state = -1;
        if (h) {
            pthread_mutex_lock(&dnn_mu);
            make_plan(np, x, in, out, dev, h);
            pthread_mutex_unlock(&dnn_mu);
        }
        dnn_plan *expect = NULL;
        if (atomic_compare_exchange_strong(&((ic_rext *)x)->dnn, &expect, np)) p = np;
        else plan_free(np), p = expect;
    }
    if (p->state != 1 || p->dev != dev || ic_numel(&x->out_meta) == 0) return 1;
    bool need_ws = p->wsrc != NULL;
    for (int k = 0; k < p->nop; k++) {
        need_ws |= p->op[k].ws_need > 0;
        for (int i = 0; i < 3; i++)
            if (!(p->wsrc && i == 1) && ptr_align(op_ptr(&p->op[k], i, in, out)) < p->align) return 1;
    }
    ic_CUdeviceptr ws = need_ws ? ic_cuda_stream_workspace(dev, stream) : 0;
    if (need_ws && !ws) return 1;
    dnn_status s = 0;
    pthread_mutex_lock(&dnn_mu); /* the handle's stream and the plan's variant packs are shared */
    dnn_handle h = handles[dev];
    s = N.SetStream(h, stream);
    if (!s && p->wsrc) {
        float one = 1.0f, zero = 0.0f;
        s = N.Transform(h, &one, p->wsrc, in[1], &zero, p->wdst, (void *)(uintptr_t)(ws + (ic_CUdeviceptr)p->w_off));
    }
    for (int k = 0; k < p->nop && !s; k++) {
        dnn_op *o = &p->op[k];
        void *ptrs[3];
        for (int i = 0; i < 3; i++) ptrs[i] = op_ptr(o, i, in, out);
        if (p->wsrc) ptrs[1] = (void *)(uintptr_t)(ws + (ic_CUdeviceptr)p->w_off);
        if (!o->vp || memcmp(o->vp_ptrs, ptrs, sizeof ptrs) || o->vp_ws != ws) {
            destroy(o->vp);
            o->vp = NULL;
            int64_t uids[3] = {'x', 'w', 'y'};
            void *wsp = (void *)(uintptr_t)ws;
            dnn_desc vp = NULL;
            s = N.DescCreate(D_VARPACK, &vp);
            if (!s) s = N.Set(vp, A_VP_UIDS, T_INT64, 3, uids);
            if (!s) s = N.Set(vp, A_VP_PTRS, T_VOID_PTR, 3, ptrs);
            if (!s) s = N.Set(vp, A_VP_WS, T_VOID_PTR, 1, &wsp);
            if (!s) s = N.Finalize(vp);
            if (s) {
                destroy(vp);
                break;
            }
            o->vp = vp;
            memcpy(o->vp_ptrs, ptrs, sizeof ptrs);
            o->vp_ws = ws;
        }
        s = N.Execute(h, o->plan, o->vp);
    }
    if (s) p->state = -1; /* this node goes through ATen from now on (it rewrites all of out) */
    pthread_mutex_unlock(&dnn_mu);
    if (s) {
        if (ic_debug_flags()) fprintf(stderr, "torchc: cuDNN backend convolution failed (status %d): ATen from now on\n", s);
        (void)err;
        return 1;
    }
    atomic_fetch_add(&dnn_calls, 1);
    return 0;
}
