/* cublaslt.c — extern GEMMs on CUDA straight through cuBLASLt (mm, addmm with a row bias,
 * linear): the descriptors and the algorithm are chosen once per extern node (first run) and
 * each later run is one cublasLtMatmul on the caller's stream.
 *
 * Why: through ATen, an addmm costs 13-30 µs of host time per call (dispatch, checks, and a
 * cuBLASLt heuristic query on every call), which is most of the host time of a transformer
 * whose GEMMs are short (GPT-2/BERT at batch 32 were host bound on the H200). The same
 * library, the same compute type (f32 accumulation) and the same top heuristic as ATen's
 * Lt path, so the kernels are the ones ATen would run.
 *
 * The library is the one PyTorch already loaded (found with RTLD_NOLOAD / dl_iterate_phdr,
 * never a second copy). Anything not covered (other dtypes, a bias that is not one row
 * vector, beta other than 0/1, strides neither row- nor column-major, pointers less aligned
 * than at planning, a failure, also of a later cublasLtMatmul) returns 1: the caller goes
 * through ATen as before.
 * TORCHC_CUBLASLT=0 turns the path off. Workspace: ic_cuda_stream_workspace (32 MiB per
 * device and stream, kept for the process, as ATen keeps its own).
 *
 * cuBLASLt is column-major; a row-major D[M,N] is the column-major N x M matrix D^T, so the
 * product is computed as D^T = B^T A^T: cuBLAS's A is our B and cuBLAS's B is our A.
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

/* ---- the ABI we use (cublasLt.h, library_types.h; values are stable across CUDA 11-13) ---- */
typedef int lt_status; /* cublasStatus_t: 0 = success */
typedef void *lt_handle, *lt_desc, *lt_layout, *lt_pref;
typedef struct { uint64_t data[8]; } lt_algo;
typedef struct {
    lt_algo algo;
    size_t workspaceSize;
    lt_status state;
    float wavesCount;
    int reserved[4];
} lt_heur;

enum {
    CUDA_R_32F_ = 0, CUDA_R_16F_ = 2, CUDA_R_16BF_ = 14,
    COMPUTE_32F_ = 68,
    OP_N_ = 0, OP_T_ = 1,
    DESC_TRANSA_ = 3, DESC_TRANSB_ = 4, DESC_EPILOGUE_ = 7, DESC_BIAS_POINTER_ = 8,
    EPI_DEFAULT_ = 1, EPI_BIAS_ = 4,
    PREF_MAX_WORKSPACE_ = 1, PREF_ALIGN_A_ = 5, PREF_ALIGN_B_ = 6, PREF_ALIGN_C_ = 7, PREF_ALIGN_D_ = 8,
};

static struct {
    void *lib;
    lt_status (*Create)(lt_handle *);
    lt_status (*DescCreate)(lt_desc *, int, int);
    lt_status (*DescDestroy)(lt_desc);
    lt_status (*DescSet)(lt_desc, int, const void *, size_t);
    lt_status (*LayoutCreate)(lt_layout *, int, uint64_t, uint64_t, int64_t);
    lt_status (*LayoutDestroy)(lt_layout);
    lt_status (*PrefCreate)(lt_pref *);
    lt_status (*PrefDestroy)(lt_pref);
    lt_status (*PrefSet)(lt_pref, int, const void *, size_t);
    lt_status (*Heuristic)(lt_handle, lt_desc, lt_layout, lt_layout, lt_layout, lt_layout, lt_pref, int,
                           lt_heur *, int *);
    lt_status (*Matmul)(lt_handle, lt_desc, const void *, const void *, lt_layout, const void *, lt_layout,
                        const void *, const void *, lt_layout, void *, lt_layout, const lt_algo *, void *,
                        size_t, void *);
    const char *(*StatusString)(lt_status);
    bool ok;
} L;

static pthread_once_t lt_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lt_mu = PTHREAD_MUTEX_INITIALIZER;
static lt_handle handles[64];
static atomic_long lt_calls;

#define WS_BYTES IC_STREAM_WS_BYTES

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libcublasLt.so")) {
        *(void **)data = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD);
        if (*(void **)data) return 1;
    }
    return 0;
}

static void lt_init(void) {
    static const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names && !L.lib; i++) L.lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (!L.lib) dl_iterate_phdr(find_loaded, &L.lib);
    if (!L.lib) return;
#define SYM(f, n)                                       \
    do {                                                \
        *(void **)(&L.f) = dlsym(L.lib, n);             \
        if (!L.f) return;                               \
    } while (0)
    SYM(Create, "cublasLtCreate");
    SYM(DescCreate, "cublasLtMatmulDescCreate");
    SYM(DescDestroy, "cublasLtMatmulDescDestroy");
    SYM(DescSet, "cublasLtMatmulDescSetAttribute");
    SYM(LayoutCreate, "cublasLtMatrixLayoutCreate");
    SYM(LayoutDestroy, "cublasLtMatrixLayoutDestroy");
    SYM(PrefCreate, "cublasLtMatmulPreferenceCreate");
    SYM(PrefDestroy, "cublasLtMatmulPreferenceDestroy");
    SYM(PrefSet, "cublasLtMatmulPreferenceSetAttribute");
    SYM(Heuristic, "cublasLtMatmulAlgoGetHeuristic");
    SYM(Matmul, "cublasLtMatmul");
    SYM(StatusString, "cublasLtGetStatusString");
#undef SYM
    L.ok = true;
}

/* One extern node's plan. state: 0 not planned yet, 1 ready, -1 not taken (ATen). */
typedef struct lt_plan {
    int state;
    int dev;
    lt_desc desc;
    lt_layout la, lb, ld; /* cuBLAS A (our B), cuBLAS B (our A), D (also C) */
    lt_algo algo;
    size_t ws_need;
    int ia, ib, ibias;    /* inputs: our A, our B, the bias vector (-1: none) */
    float alpha, beta;
    unsigned align[4];    /* planned alignment of our A, B, bias, D (bytes) */
    const void *bias_set; /* bias pointer last set on desc */
} lt_plan;

static void plan_free(lt_plan *p) {
    if (!p) return;
    if (L.ok) {
        if (p->desc) L.DescDestroy(p->desc);
        if (p->la) L.LayoutDestroy(p->la);
        if (p->lb) L.LayoutDestroy(p->lb);
        if (p->ld) L.LayoutDestroy(p->ld);
    }
    free(p);
}

void ic_lt_free(void *plan) { plan_free(plan); }

IC_API long ic_cublaslt_calls(void) { return atomic_load(&lt_calls); }

static unsigned ptr_align(const void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned r = 1;
    while (r < 256 && !(a & r)) r <<= 1;
    return r;
}

/* A [r, c] matrix with strides (s0, s1) in column-major terms for cuBLAS: either rows
 * contiguous (s1 == 1: it is the column-major c x r matrix X^T, op N on it gives X^T) or
 * columns contiguous (s0 == 1: the column-major r x c matrix X, op T gives X^T).
 * Size-1 dims take whichever stride fits. false: neither. */
typedef struct { uint64_t rows, cols; int64_t ld; int op; } cm;
static bool as_cm(int64_t r, int64_t c, int64_t s0, int64_t s1, cm *o) {
    if (c == 1) s1 = 1;
    if (r == 1) s0 = c;
    if (s1 == 1 && s0 >= (c > 1 ? c : 1)) { /* X^T: c x r, ld s0 */
        *o = (cm){(uint64_t)c, (uint64_t)r, s0 > 0 ? s0 : 1, OP_N_};
        return true;
    }
    if (r == 1) s0 = 1, s1 = c > 1 ? s1 : 1;
    if (s0 == 1 && s1 >= (r > 1 ? r : 1)) { /* X: r x c, ld s1; op T gives X^T */
        *o = (cm){(uint64_t)r, (uint64_t)c, s1 > 0 ? s1 : 1, OP_T_};
        return true;
    }
    return false;
}

/* [M, K] view of a linear's input: the leading dims collapse into rows */
static bool rows_view(const ic_meta *m, int64_t *M, int64_t *K, int64_t *s0, int64_t *s1) {
    if (m->ndim < 1) return false;
    int nd = m->ndim;
    *K = m->sizes[nd - 1];
    *s1 = m->strides[nd - 1];
    int64_t rows = 1, rs = *K;
    bool first = true;
    for (int d = nd - 2; d >= 0; d--) {
        if (m->sizes[d] == 1) continue;
        if (first) {
            rs = m->strides[d];
            first = false;
        } else if (m->strides[d] != m->strides[d + 1] * m->sizes[d + 1]) {
            /* a gap between leading dims (needs every inner leading dim > 1 to be exact) */
            int64_t inner = 1;
            for (int e = d + 1; e <= nd - 2; e++) inner *= m->sizes[e];
            if (m->strides[d] != rs * inner) return false;
        }
        rows *= m->sizes[d];
    }
    *M = rows;
    *s0 = rs;
    return true;
}

static int lt_dtype(int d) {
    switch (d) {
    case IC_BF16: return CUDA_R_16BF_;
    case IC_F16: return CUDA_R_16F_;
    case IC_F32: return CUDA_R_32F_;
    default: return -1;
    }
}

static bool off_env(void) { return !ic_config_int(IC_CFG_cublaslt); }

/* Builds the plan for x (state 1), or marks it not taken (-1). in: the run's pointers. */
static void make_plan(lt_plan *p, const ic_rext *x, void *const *in, void *out, int dev) {
    p->state = -1;
    p->dev = dev;
    p->ibias = -1;
    if (off_env()) return;
    const ic_meta *om = &x->out_meta;
    int dt = lt_dtype(om->dtype);
    if (dt < 0 || om->ndim < 1 || om->ndim > 8) return;
    int64_t M, N, K, as0, as1, bs0, bs1;
    p->alpha = (float)x->alpha;
    p->beta = 0.0f;
    switch (x->kind) {
    case IC_EXT_MM:
    case IC_EXT_ADDMM: {
        int a = x->kind == IC_EXT_MM ? 0 : 1;
        if (x->kind == IC_EXT_MM) p->alpha = 1.0f;
        const ic_meta *A = &x->in_meta[a], *Bm = &x->in_meta[a + 1];
        if (A->ndim != 2 || Bm->ndim != 2 || om->ndim != 2) return;
        M = A->sizes[0], K = A->sizes[1], N = Bm->sizes[1];
        as0 = A->strides[0], as1 = A->strides[1], bs0 = Bm->strides[0], bs1 = Bm->strides[1];
        p->ia = a, p->ib = a + 1;
        if (x->kind == IC_EXT_ADDMM) {
            const ic_meta *bm = &x->in_meta[0];
            if (x->beta != 0.0 && x->beta != 1.0) return;
            if (x->beta == 1.0) { /* a row vector: [N], [1, N] or [M, N] with stride (0, 1) */
                if (bm->ndim < 1 || bm->ndim > 2 || bm->sizes[bm->ndim - 1] != N) return;
                if (N > 1 && bm->strides[bm->ndim - 1] != 1) return;
                if (bm->ndim == 2 && bm->sizes[0] != 1 && bm->strides[0] != 0) return;
                if (bm->dtype != om->dtype) return;
                p->ibias = 0;
            }
        }
        break;
    }
    case IC_EXT_LINEAR: {
        const ic_meta *W = &x->in_meta[1];
        if (W->ndim != 2 || !rows_view(&x->in_meta[0], &M, &K, &as0, &as1)) return;
        N = W->sizes[0];
        if (W->sizes[1] != K) return;
        bs0 = W->strides[1], bs1 = W->strides[0]; /* B = W^T: [K, N] */
        p->ia = 0, p->ib = 1;
        p->alpha = 1.0f;
        if (x->nin == 3) {
            const ic_meta *bm = &x->in_meta[2];
            if (bm->ndim != 1 || bm->sizes[0] != N || (N > 1 && bm->strides[0] != 1) || bm->dtype != om->dtype) return;
            p->ibias = 2;
        }
        break;
    }
    default: return;
    }
    if (M < 1 || N < 1 || K < 1) return;
    for (int i = 0; i < x->nin; i++)
        if (x->in_meta[i].dtype != om->dtype) return;
    /* out: [..., N] rows of N, contiguous */
    int64_t on = 1;
    for (int d = 0; d < om->ndim; d++) on *= om->sizes[d];
    if (on != M * N || om->sizes[om->ndim - 1] != N) return;
    {
        int64_t s = 1;
        for (int d = om->ndim - 1; d >= 0; d--) {
            if (om->sizes[d] != 1 && om->strides[d] != s) return;
            s *= om->sizes[d];
        }
    }
    cm ca, cb; /* our B [K, N] -> cuBLAS A (N x K after op); our A [M, K] -> cuBLAS B (K x M) */
    if (!as_cm(K, N, bs0, bs1, &ca) || !as_cm(M, K, as0, as1, &cb)) return;
    pthread_once(&lt_once, lt_init);
    if (!L.ok || dev < 0 || dev >= 64) return;
    pthread_mutex_lock(&lt_mu);
    if (!handles[dev] && L.Create(&handles[dev])) handles[dev] = NULL;
    lt_handle h = handles[dev];
    pthread_mutex_unlock(&lt_mu);
    if (!h) return;
    p->align[0] = ptr_align(in[p->ia]);
    p->align[1] = ptr_align(in[p->ib]);
    p->align[2] = p->ibias >= 0 ? ptr_align(in[p->ibias]) : 256;
    p->align[3] = ptr_align(out);
    int opa = ca.op, opb = cb.op, epi = p->ibias >= 0 ? EPI_BIAS_ : EPI_DEFAULT_;
    uint64_t wsmax = WS_BYTES;
    uint32_t al[4] = {p->align[1], p->align[0], p->align[3], p->align[3]}; /* cuBLAS A = our B */
    lt_pref pref = NULL;
    bool ok = !L.DescCreate(&p->desc, COMPUTE_32F_, CUDA_R_32F_) &&
              !L.DescSet(p->desc, DESC_TRANSA_, &opa, sizeof opa) && !L.DescSet(p->desc, DESC_TRANSB_, &opb, sizeof opb) &&
              !L.DescSet(p->desc, DESC_EPILOGUE_, &epi, sizeof epi) &&
              !L.LayoutCreate(&p->la, dt, ca.rows, ca.cols, ca.ld) &&
              !L.LayoutCreate(&p->lb, dt, cb.rows, cb.cols, cb.ld) &&
              !L.LayoutCreate(&p->ld, dt, (uint64_t)N, (uint64_t)M, N) && !L.PrefCreate(&pref) &&
              !L.PrefSet(pref, PREF_MAX_WORKSPACE_, &wsmax, sizeof wsmax) &&
              !L.PrefSet(pref, PREF_ALIGN_A_, &al[0], sizeof al[0]) && !L.PrefSet(pref, PREF_ALIGN_B_, &al[1], sizeof al[1]) &&
              !L.PrefSet(pref, PREF_ALIGN_C_, &al[2], sizeof al[2]) && !L.PrefSet(pref, PREF_ALIGN_D_, &al[3], sizeof al[3]);
    if (ok && p->ibias >= 0) {
        const void *bp = in[p->ibias];
        ok = !L.DescSet(p->desc, DESC_BIAS_POINTER_, &bp, sizeof bp);
        p->bias_set = bp;
    }
    lt_heur hr;
    int nres = 0;
    memset(&hr, 0, sizeof hr);
    if (ok) ok = !L.Heuristic(h, p->desc, p->la, p->lb, p->ld, p->ld, pref, 1, &hr, &nres) && nres > 0 && !hr.state;
    if (pref) L.PrefDestroy(pref);
    if (!ok) return;
    p->algo = hr.algo;
    p->ws_need = hr.workspaceSize;
    p->state = 1;
}

int ic_lt_run(const ic_rext *x, void *const *in, void *out, void *stream, int dev, ic_err *err) {
    if (x->kind != IC_EXT_MM && x->kind != IC_EXT_ADDMM && x->kind != IC_EXT_LINEAR) return 1;
    lt_plan *p = atomic_load(&((ic_rext *)x)->lt);
    if (!p) {
        lt_plan *np = calloc(1, sizeof *np);
        if (!np) return 1;
        make_plan(np, x, in, out, dev);
        lt_plan *expect = NULL;
        if (atomic_compare_exchange_strong(&((ic_rext *)x)->lt, &expect, np)) p = np;
        else plan_free(np), p = expect;
    }
    if (p->state != 1 || p->dev != dev || ic_numel(&x->out_meta) == 0) return 1;
    if (ptr_align(in[p->ia]) < p->align[0] || ptr_align(in[p->ib]) < p->align[1] ||
        (p->ibias >= 0 && ptr_align(in[p->ibias]) < p->align[2]) || ptr_align(out) < p->align[3])
        return 1;
    ic_CUdeviceptr ws = p->ws_need ? ic_cuda_stream_workspace(dev, stream) : 0;
    if (p->ws_need && !ws) return 1;
    pthread_mutex_lock(&lt_mu); /* desc is shared by the threads running this graph */
    lt_status s = 0;
    if (p->ibias >= 0 && p->bias_set != in[p->ibias]) {
        const void *bp = in[p->ibias];
        s = L.DescSet(p->desc, DESC_BIAS_POINTER_, &bp, sizeof bp);
        if (!s) p->bias_set = bp;
    }
    if (!s)
        s = L.Matmul(handles[dev], p->desc, &p->alpha, in[p->ib], p->la, in[p->ia], p->lb, &p->beta, out, p->ld, out,
                     p->ld, &p->algo, (void *)(uintptr_t)ws, p->ws_need ? WS_BYTES : 0, stream);
    if (s) p->state = -1; /* this node goes through ATen from now on */
    pthread_mutex_unlock(&lt_mu);
    if (s) {
        if (ic_debug_flags())
            fprintf(stderr, "torchc: cublasLtMatmul (%s) failed: %s; ATen from now on\n", ic_extern_name(x->kind),
                    L.StatusString ? L.StatusString(s) : "error");
        (void)err;
        return 1;
    }
    atomic_fetch_add(&lt_calls, 1);
    return 0;
}
