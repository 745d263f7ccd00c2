// recur.cu — prototype of the persistent recurrence kernels (issue 23 item 4, GPU side).
//
// What it measures: whether one kernel launch per sequence, with the recurrent matrix loaded
// once into shared memory and the hidden state kept on chip, beats the per-step launches
// torchc's CUDA scan runs today (a Python loop over the compiled body: one GEMM extern and
// one fused pointwise kernel per step, forward and backward). The epilogue here is modReLU
// written by hand; the codegen version takes it from the scan body's pointwise kernel (see
// README.md, "Persistent recurrence kernel: design").
//
// Forward, one CTA per slice of R batch rows (no grid-wide synchronisation: rows are
// independent through the whole recurrence, only W is shared, read-only):
//   smem: W [n][np] (once, when it fits: n*np*4 + 2*R*np*4 <= the opt-in limit), hs[2][R][np]
//   for t in 0..T-1:                         (one __syncthreads per step: hs double-buffered)
//     thread i (column i < n): z[r] = U[t][r][i] + sum_j hs[cur][r][j] * W[j][i]
//                              h = sign(z) * max(|z| + b[i], 0)
//                              H[t][r][i] = h;  hs[nxt][r][i] = h
//   W[j][i] for a fixed j is contiguous over the threads of a warp: conflict-free in shared
//   memory and coalesced from global; hs[.][r][j] is a broadcast (4 j at a time, float4).
//   n too large for one CTA's shared memory (n > 240; n = 512: 1 MiB): a cluster of 8 CTAs
//   holds W, 1/8 of its columns each, and exchanges the state through distributed shared
//   memory (below, n <= 600); larger still, W is read from L2 (__ldg), each value reused
//   for the R rows of the CTA.
//
// Backward through time (the step's gradient from its output h, as _ModReLUFn's backward):
//   g = dH[t] + dprev;  s = sign(H[t]);  db_i += g s;  dz = g s s;  dZ[t] = dz
//   dprev[r][j] = sum_i dz[r][i] W[j][i]   (z = h W, so dh = dz Wᵀ): the same kernel shape
//   with W transposed on its way into shared memory (WT[i][j] contiguous over threads j).
//   After t = 0: dh0 = dprev. W's and the input projection's gradients are one GEMM each
//   over the stacked dZ afterwards (recur.py), db one atomicAdd per thread and CTA.
//
// Build (benchmarks/manifolds/persistent/build.sh): nvcc -ptx -arch=compute_90, the PTX
// version lowered to 7.8 (the drivers torchc's own NVPTX output targets), ptxas -arch=sm_90.

#define MAXR 8

__device__ __forceinline__ void load_w(float *ws, const float *__restrict__ M, int n, int np) {
    // ws[j][i] = M[j][i], rows padded to np (the padding is never read)
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
        int j = e / n, i = e - j * n;
        ws[j * np + i] = M[e];
    }
}

// acc[r] = sum_j vs[r][j] * M[j][i] for the thread's column i; M from shared memory (row
// stride np) or from global memory (row stride n, through the read-only cache)
template <int R>
__device__ __forceinline__ void matvec(float acc[R], const float *vs, int np, int n, const float *M,
                                       int mstride, int i, bool global_m) {
    float a0[R], a1[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        a0[r] = a1[r] = 0.f;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        float m0, m1, m2, m3;
        if (global_m) {
            m0 = __ldg(M + (j + 0) * mstride + i);
            m1 = __ldg(M + (j + 1) * mstride + i);
            m2 = __ldg(M + (j + 2) * mstride + i);
            m3 = __ldg(M + (j + 3) * mstride + i);
        } else {
            m0 = M[(j + 0) * mstride + i];
            m1 = M[(j + 1) * mstride + i];
            m2 = M[(j + 2) * mstride + i];
            m3 = M[(j + 3) * mstride + i];
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            float4 v = *reinterpret_cast<const float4 *>(vs + r * np + j);
            a0[r] = fmaf(v.x, m0, a0[r]);
            a1[r] = fmaf(v.y, m1, a1[r]);
            a0[r] = fmaf(v.z, m2, a0[r]);
            a1[r] = fmaf(v.w, m3, a1[r]);
        }
    }
    for (; j < n; j++) {
        float m = global_m ? __ldg(M + j * mstride + i) : M[j * mstride + i];
#pragma unroll
        for (int r = 0; r < R; r++)
            a0[r] = fmaf(vs[r * np + j], m, a0[r]);
    }
#pragma unroll
    for (int r = 0; r < R; r++)
        acc[r] = a0[r] + a1[r];
}

__device__ __forceinline__ float signf_(float z) { return z > 0.f ? 1.f : (z < 0.f ? -1.f : z * 0.f); }

// U, H: [T][N][n]; h0: [N][n]; b: [n]. Threads >= n only take part in the barriers.
template <int R, bool SMEM_W>
__device__ void fwd_body(const float *__restrict__ W, const float *__restrict__ U, const float *__restrict__ b,
                         const float *__restrict__ h0, float *__restrict__ H, int T, int N, int n) {
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const int np = (n + 3) & ~3;
    float *hs = smem;                      // [2][R][np]
    float *ws = smem + 2 * R * np;         // [n][np] when SMEM_W
    const int row0 = blockIdx.x * R, i = threadIdx.x;
    const bool col = i < n;
    for (int e = threadIdx.x; e < 2 * R * np; e += blockDim.x)
        hs[e] = 0.f;
    __syncthreads();
    if (col)
        for (int r = 0; r < R; r++)
            hs[r * np + i] = row0 + r < N ? h0[(size_t)(row0 + r) * n + i] : 0.f;
    if (SMEM_W)
        load_w(ws, W, n, np);
    const float bi = col ? b[i] : 0.f;
    __syncthreads();
    int cur = 0;
    for (int t = 0; t < T; t++) {
        float acc[R], u[R];
#pragma unroll
        for (int r = 0; r < R; r++)  // issued before the matvec: its latency hides behind it
            u[r] = (col && row0 + r < N) ? U[((size_t)t * N + row0 + r) * n + i] : 0.f;
        if (col)
            matvec<R>(acc, hs + cur * R * np, np, n, SMEM_W ? ws : W, SMEM_W ? np : n, i, !SMEM_W);
        float *nx = hs + (cur ^ 1) * R * np;
        if (col) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                int row = row0 + r;
                if (row < N) {
                    size_t o = ((size_t)t * N + row) * n + i;
                    float z = u[r] + acc[r];
                    float h = signf_(z) * fmaxf(fabsf(z) + bi, 0.f);
                    H[o] = h;
                    nx[r * np + i] = h;
                }
            }
        }
        cur ^= 1;
        __syncthreads();
    }
}

// H[t] and dH[t] (0 without dH) of R rows at column j: the backward's per-step global loads,
// issued a step ahead (before the previous step's matvec) to hide their latency
template <int RR>
__device__ __forceinline__ void bwd_fetch(float *hv, float *dv, const float *__restrict__ H, const float *__restrict__ dH,
                                          int t, int row0, int N, int n, int j, bool col) {
#pragma unroll
    for (int r = 0; r < RR; r++) {
        bool ok = col && t >= 0 && row0 + r < N;
        size_t o = ((size_t)(ok ? t : 0) * N + row0 + r) * n + j;
        hv[r] = ok ? H[o] : 0.f;
        dv[r] = ok && dH ? dH[o] : 0.f;
    }
}

// WT = Wᵀ contiguous [n][n] (the caller's one transpose per sequence): dprev[r][j] =
// sum_i dz[r][i] W[j][i] = sum_i dz[r][i] WT[i][j], the forward's matvec with WT for W.
// dH: [T][N][n] or null (no gradient reaches the stacked outputs); dhT: [N][n] or null
// (the final carry's gradient); outputs dZ [T][N][n], dh0 [N][n], db [n] (added to).
template <int R, bool SMEM_W>
__device__ void bwd_body(const float *__restrict__ WT, const float *__restrict__ H, const float *__restrict__ dH,
                         const float *__restrict__ dhT, float *__restrict__ dZ, float *__restrict__ dh0,
                         float *__restrict__ db, int T, int N, int n) {
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const int np = (n + 3) & ~3;
    float *zs = smem;                      // [2][R][np]
    float *ws = smem + 2 * R * np;         // WT [n][np] when SMEM_W
    const int row0 = blockIdx.x * R, j = threadIdx.x;  // this thread's column
    const bool col = j < n;
    for (int e = threadIdx.x; e < 2 * R * np; e += blockDim.x)
        zs[e] = 0.f;
    if (SMEM_W)
        load_w(ws, WT, n, np);
    float dprev[R], dbacc = 0.f, hv[R], dv[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        dprev[r] = (col && dhT && row0 + r < N) ? dhT[(size_t)(row0 + r) * n + j] : 0.f;
    bwd_fetch<R>(hv, dv, H, dH, T - 1, row0, N, n, j, col);
    __syncthreads();
    int cur = 0;
    for (int t = T - 1; t >= 0; t--) {
        float *zc = zs + cur * R * np;
        if (col) {
#pragma unroll
            for (int r = 0; r < R; r++) {
                int row = row0 + r;
                if (row < N) {
                    size_t o = ((size_t)t * N + row) * n + j;
                    float g = dv[r] + dprev[r];
                    float s = signf_(hv[r]);
                    float gs = g * s;
                    dbacc += gs;
                    float dz = gs * s;
                    dZ[o] = dz;
                    zc[r * np + j] = dz;
                }
            }
        }
        __syncthreads();
        bwd_fetch<R>(hv, dv, H, dH, t - 1, row0, N, n, j, col);  // the next step's, before the matvec
        if (col)
            matvec<R>(dprev, zc, np, n, SMEM_W ? ws : WT, SMEM_W ? np : n, j, !SMEM_W);
        cur ^= 1;
    }
    if (col) {
#pragma unroll
        for (int r = 0; r < R; r++)
            if (row0 + r < N)
                dh0[(size_t)(row0 + r) * n + j] = dprev[r];
        atomicAdd(db + j, dbacc);
    }
}

// ---- W too large for one SM (n = 512: 1 MiB): a cluster of CS CTAs shares it ---------------
// The cluster runs R batch rows; CTA c of the cluster keeps the columns [c CW, (c+1) CW) of the
// matrix in its shared memory (n x CW floats: 128 KiB at n = 512, CS = 8) and a full copy of
// the R rows' vector (h forward, dz backward), double-buffered. A step: every thread (column
// ci, part k of the j range) sums R partial dot products; the KS parts meet in shared memory;
// the thread owning (r, ci) pairs finishes them, runs the epilogue, and stores the new values
// into every CTA's vector buffer through distributed shared memory; one cluster barrier
// (barrier.cluster arrive.release / wait.acquire) per step orders those stores before the
// next step's reads. No grid-wide synchronisation: clusters are independent.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define CS 8
#define KS 4

struct cl_geom {
    int n, np, CW, CWp, JP, c, ci, cir, k, col, row0;  // cir: ci clamped into the CTA's columns
};

__device__ __forceinline__ cl_geom cl_geometry(int n, int R, unsigned rank) {
    cl_geom g;
    g.n = n;
    g.np = (n + 3) & ~3;
    g.CW = (n + CS - 1) / CS;
    g.CWp = (g.CW + 31) & ~31;
    g.JP = (((n + KS - 1) / KS) + 3) & ~3;
    g.c = (int)rank;
    g.ci = threadIdx.x % g.CWp;
    g.k = threadIdx.x / g.CWp;
    g.cir = min(g.ci, g.CW - 1);
    g.col = g.c * g.CW + g.ci;
    g.row0 = (blockIdx.x / CS) * R;
    return g;
}

// red[k][r][ci] = sum over the thread's j part of vs[r][j] * Ms[j][ci]  (Ms: n x CW; threads
// ci >= CW read column CW - 1 and their sums are never used)
template <int R>
__device__ __forceinline__ void cl_partial(const cl_geom &g, const float *vs, const float *Ms, float *red) {
    float a0[R], a1[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        a0[r] = a1[r] = 0.f;
    const int j0 = g.k * g.JP, j1 = min(g.n, j0 + g.JP);
    int j = j0;
    for (; j + 4 <= j1; j += 4) {
        float m0 = Ms[(j + 0) * g.CW + g.cir], m1 = Ms[(j + 1) * g.CW + g.cir];
        float m2 = Ms[(j + 2) * g.CW + g.cir], m3 = Ms[(j + 3) * g.CW + g.cir];
#pragma unroll
        for (int r = 0; r < R; r++) {
            float4 v = *reinterpret_cast<const float4 *>(vs + r * g.np + j);
            a0[r] = fmaf(v.x, m0, a0[r]);
            a1[r] = fmaf(v.y, m1, a1[r]);
            a0[r] = fmaf(v.z, m2, a0[r]);
            a1[r] = fmaf(v.w, m3, a1[r]);
        }
    }
    for (; j < j1; j++) {
        float m = Ms[j * g.CW + g.cir];
#pragma unroll
        for (int r = 0; r < R; r++)
            a0[r] = fmaf(vs[r * g.np + j], m, a0[r]);
    }
#pragma unroll
    for (int r = 0; r < R; r++)
        red[(g.k * R + r) * g.CWp + g.ci] = a0[r] + a1[r];
}

// the (r, ci) pairs of this thread: r = k + KS q, q < R / KS (R a multiple of KS)
template <int R>
__device__ __forceinline__ float cl_sum(const cl_geom &g, const float *red, int r) {
    float s = 0.f;
#pragma unroll
    for (int p = 0; p < KS; p++)
        s += red[(p * R + r) * g.CWp + g.ci];
    return s;
}

template <int R>
__device__ __forceinline__ void cl_load(const cl_geom &g, float *Ms, const float *__restrict__ M) {
    // Ms[j][ci] = M[j][c CW + ci] for the CTA's columns (0 past n)
    for (int e = threadIdx.x; e < g.n * g.CW; e += blockDim.x) {
        int j = e / g.CW, ci = e - j * g.CW, col = g.c * g.CW + ci;
        Ms[e] = col < g.n ? M[(size_t)j * g.n + col] : 0.f;
    }
}

template <int R>
__device__ __forceinline__ void cl_bcast(cg::cluster_group &cl, float *buf, int off, float v) {
#pragma unroll
    for (int q = 0; q < CS; q++)
        cl.map_shared_rank(buf, q)[off] = v;
}

template <int R>
__device__ void fwd_cluster(const float *__restrict__ W, const float *__restrict__ U, const float *__restrict__ b,
                            const float *__restrict__ h0, float *__restrict__ H, int T, int N, int n) {
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    cg::cluster_group cl = cg::this_cluster();
    const cl_geom g = cl_geometry(n, R, cl.block_rank());
    float *hs = smem;                          // [2][R][np]
    float *red = hs + 2 * R * g.np;            // [KS][R][CWp]
    float *Ms = red + KS * R * g.CWp;          // [n][CW]
    for (int e = threadIdx.x; e < 2 * R * g.np; e += blockDim.x) {
        int r = (e / g.np) % R, j = e % g.np;
        hs[e] = (e < R * g.np && j < n && g.row0 + r < N) ? h0[(size_t)(g.row0 + r) * n + j] : 0.f;
    }
    cl_load<R>(g, Ms, W);
    const bool own = g.ci < g.CW && g.col < n;
    const float bi = own ? b[g.col] : 0.f;
    cl.sync();  // every CTA of the cluster runs before any stores into its shared memory
    int cur = 0;
    for (int t = 0; t < T; t++) {
        float u[R / KS];
#pragma unroll
        for (int q = 0; q < R / KS; q++) {  // before the partial sums: latency hidden
            int row = g.row0 + g.k + KS * q;
            u[q] = (own && row < N) ? U[((size_t)t * N + row) * n + g.col] : 0.f;
        }
        cl_partial<R>(g, hs + cur * R * g.np, Ms, red);
        __syncthreads();
        float *nx = hs + (cur ^ 1) * R * g.np;
#pragma unroll
        for (int q = 0; q < R / KS; q++) {
            int r = g.k + KS * q, row = g.row0 + r;
            if (own) {
                float z = cl_sum<R>(g, red, r);
                float h = 0.f;
                if (row < N) {
                    size_t o = ((size_t)t * N + row) * n + g.col;
                    z += u[q];
                    h = signf_(z) * fmaxf(fabsf(z) + bi, 0.f);
                    H[o] = h;
                }
                cl_bcast<R>(cl, nx, r * g.np + g.col, h);
            }
        }
        cur ^= 1;
        cl.sync();
    }
}

template <int R>
__device__ __forceinline__ void cl_fetch(const cl_geom &g, float *hv, float *dv, const float *__restrict__ H,
                                         const float *__restrict__ dH, int t, int N, bool own) {
#pragma unroll
    for (int q = 0; q < R / KS; q++) {
        int row = g.row0 + g.k + KS * q;
        bool ok = own && t >= 0 && row < N;
        size_t o = ((size_t)(ok ? t : 0) * N + (ok ? row : 0)) * g.n + (ok ? g.col : 0);
        hv[q] = ok ? H[o] : 0.f;
        dv[q] = ok && dH ? dH[o] : 0.f;
    }
}

template <int R>
__device__ void bwd_cluster(const float *__restrict__ WT, const float *__restrict__ H, const float *__restrict__ dH,
                            const float *__restrict__ dhT, float *__restrict__ dZ, float *__restrict__ dh0,
                            float *__restrict__ db, int T, int N, int n) {
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    cg::cluster_group cl = cg::this_cluster();
    const cl_geom g = cl_geometry(n, R, cl.block_rank());
    float *zs = smem;                          // [2][R][np]
    float *red = zs + 2 * R * g.np;            // [KS][R][CWp]
    float *Ms = red + KS * R * g.CWp;          // WT[:, own columns]: [n][CW]
    for (int e = threadIdx.x; e < 2 * R * g.np; e += blockDim.x)
        zs[e] = 0.f;
    cl_load<R>(g, Ms, WT);
    const bool own = g.ci < g.CW && g.col < n;
    float dprev[R / KS], dbacc = 0.f, hv[R / KS], dv[R / KS];
#pragma unroll
    for (int q = 0; q < R / KS; q++) {
        int row = g.row0 + g.k + KS * q;
        dprev[q] = (own && dhT && row < N) ? dhT[(size_t)row * n + g.col] : 0.f;
    }
    cl_fetch<R>(g, hv, dv, H, dH, T - 1, N, own);
    cl.sync();
    int cur = 0;
    for (int t = T - 1; t >= 0; t--) {
        float *zc = zs + cur * R * g.np;
#pragma unroll
        for (int q = 0; q < R / KS; q++) {
            int r = g.k + KS * q, row = g.row0 + r;
            if (own) {
                float dz = 0.f;
                if (row < N) {
                    size_t o = ((size_t)t * N + row) * n + g.col;
                    float gg = dv[q] + dprev[q];
                    float s = signf_(hv[q]);
                    float gs = gg * s;
                    dbacc += gs;
                    dz = gs * s;
                    dZ[o] = dz;
                }
                cl_bcast<R>(cl, zc, r * g.np + g.col, dz);
            }
        }
        cl.sync();
        cl_fetch<R>(g, hv, dv, H, dH, t - 1, N, own);  // the next step's, before the partial sums
        cl_partial<R>(g, zc, Ms, red);
        __syncthreads();
#pragma unroll
        for (int q = 0; q < R / KS; q++)
            dprev[q] = own ? cl_sum<R>(g, red, g.k + KS * q) : 0.f;
        cur ^= 1;
    }
#pragma unroll
    for (int q = 0; q < R / KS; q++) {
        int row = g.row0 + g.k + KS * q;
        if (own && row < N)
            dh0[(size_t)row * n + g.col] = dprev[q];
    }
    if (own)
        atomicAdd(db + g.col, dbacc);
    cl.sync();  // no CTA leaves while another may still read its shared memory
}

#define FWD(R, S, NAME, LB)                                                                              \
    extern "C" __global__ void __launch_bounds__(LB, 1) NAME(const float *W, const float *U, const float *b, \
                                                            const float *h0, float *H, int T, int N, int n) { \
        fwd_body<R, S>(W, U, b, h0, H, T, N, n);                                                     \
    }
#define BWD(R, S, NAME, LB)                                                                              \
    extern "C" __global__ void __launch_bounds__(LB, 1) NAME(const float *WT, const float *H, const float *dH, \
                                                            const float *dhT, float *dZ, float *dh0, float *db, \
                                                            int T, int N, int n) {                   \
        bwd_body<R, S>(WT, H, dH, dhT, dZ, dh0, db, T, N, n);                                         \
    }
FWD(1, true, recur_fwd_r1_s, 1024)
FWD(2, true, recur_fwd_r2_s, 1024)
FWD(4, true, recur_fwd_r4_s, 512)
FWD(8, false, recur_fwd_r8_g, 512)
FWD(1, false, recur_fwd_r1_g, 1024)
BWD(1, true, recur_bwd_r1_s, 1024)
BWD(2, true, recur_bwd_r2_s, 1024)
BWD(4, true, recur_bwd_r4_s, 512)
BWD(8, false, recur_bwd_r8_g, 512)
BWD(1, false, recur_bwd_r1_g, 1024)

#define FWDC(R, NAME)                                                                                \
    extern "C" __global__ void __cluster_dims__(CS, 1, 1) __launch_bounds__(512)                    \
        NAME(const float *W, const float *U, const float *b, const float *h0, float *H, int T, int N, int n) { \
        fwd_cluster<R>(W, U, b, h0, H, T, N, n);                                                     \
    }
#define BWDC(R, NAME)                                                                                \
    extern "C" __global__ void __cluster_dims__(CS, 1, 1) __launch_bounds__(512)                    \
        NAME(const float *WT, const float *H, const float *dH, const float *dhT, float *dZ, float *dh0, \
             float *db, int T, int N, int n) {                                                       \
        bwd_cluster<R>(WT, H, dH, dhT, dZ, dh0, db, T, N, n);                                        \
    }
FWDC(8, recur_fwd_r8_c)
BWDC(8, recur_bwd_r8_c)
