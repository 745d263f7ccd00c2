/* gpu.h — private interface of the CUDA backend (not part of the API).
 *
 *   codegen/gpu_nvptx.c   finalized kernels -> LLVM IR (nvptx64-nvidia-cuda) -> PTX, and the
 *                         launch plan of every kernel (ic_gpu, owned by ic_compiled.gpu)
 *   runtime/cuda.c        libcuda through dlopen: context, module load, launches, allocator
 *
 * Launch plan. Every kernel has one or two variants: a vector variant (V > 1 elements per
 * thread and access, 16-byte loads/stores) and the scalar fallback (V = 1). The vector
 * variant assumes the base pointers of some buffers are aligned (align_buf/align_bytes);
 * ic_run_stream checks the actual pointers and takes the fallback when one is not.
 * Kernel parameters are the device pointers of the buffers in params[] order.
 *
 * The few CUDA driver types we need are declared here, so the backend builds without
 * cuda.h (CI has no CUDA); with TORCHC_HAVE_CUDA_H they are checked against it.
 */
#ifndef IC_GPU_H
#define IC_GPU_H

#include "../../layouts/ll.h"
#include "../ic_device.h"
#include "../ic_internal.h"

/* ---- driver ABI (subset of cuda.h) ------------------------------------------------------ */
typedef int ic_CUresult;            /* CUresult: 0 = CUDA_SUCCESS */
typedef int ic_CUdevice;            /* CUdevice */
typedef unsigned long long ic_CUdeviceptr; /* CUdeviceptr (64-bit) */
typedef struct ic_CUctx_st *ic_CUcontext;
typedef struct ic_CUmod_st *ic_CUmodule;
typedef struct ic_CUfunc_st *ic_CUfunction;
typedef struct ic_CUstream_st *ic_CUstream;
typedef struct ic_CUlinkState_st *ic_CUlinkState; /* CUlinkState (the driver's linker) */

enum {
    IC_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    IC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    IC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    IC_CU_JIT_INFO_LOG_BUFFER = 3,
    IC_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    IC_CU_JIT_ERROR_LOG_BUFFER = 5,
    IC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};
enum { IC_CU_JIT_INPUT_PTX = 1 }; /* CUjitInputType: cuLinkAddData of PTX text */

/* ---- launch plan ------------------------------------------------------------------------- */
typedef struct ic_gvariant {
    char name[48];
    ic_CUfunction fn;     /* after loading */
    unsigned grid, block; /* 1-D grid and block */
    int vec;              /* elements per access (1 = scalar variant) */
    int nparams;
    int *params;          /* buffer ids, in parameter order */
    int nalign;
    int *align_buf;       /* vector variant: buffers whose base must be aligned ... */
    int *align_bytes;     /* ... to this many bytes */
    int64_t part_off;     /* >= 0: one more parameter, workspace + part_off (split rows) */
    int cl;               /* CTAs per cluster: always 1 (cluster rows were removed; the field stays
                             in the disk cache's blob format, runtime/gpu_cache.c) */
    unsigned dsmem;       /* dynamic shared memory bytes (staged rows); > 48 KB: opted in at load */
    int lazy;             /* a scalar fallback compiled on its first use (ic_gpu.lazy_bc) */
    int ctr;              /* always 0 (split rows combined by their last block, through row
                             counters, were removed; the field stays in the disk cache's blob
                             format, runtime/gpu_cache.c) */
} ic_gvariant;

typedef struct ic_gkernel {
    int ext;              /* > 0: no launch, the extern call exts[ext - 1] (same stream) */
    int nvar;             /* 1 or 2; v[nvar-1] is the scalar fallback */
    ic_gvariant v[2];
    int choice;           /* > 0: part of GEMM choice choice[choice - 1] (below), as ... */
    int role;             /* IC_ROLE_*: which of its alternatives this launch belongs to */
    int split_final;      /* the final (combining) launch of a split row kernel (counted) */
} ic_gkernel;

/* A GEMM whose faster form is measured on the device (gpu_nvptx.c gemm_kernel): three
 * consecutive launches, the extern call (IC_ROLE_EXT), our template with the next kernel
 * fused into its epilogue (IC_ROLE_TEMPLATE), then that next kernel (IC_ROLE_CONSUMER, none
 * when nothing was fused). The extern path runs EXT + CONSUMER, the template path TEMPLATE.
 * ic_run_stream times both on the first call that can (not while a stream is captured):
 * on scratch copies of the buffers they write (wbuf), so the real ones are written once. */
enum { IC_ROLE_EXT = 1, IC_ROLE_TEMPLATE = 2, IC_ROLE_CONSUMER = 3 };
enum { IC_CHOICE_EXT = 1, IC_CHOICE_TEMPLATE = 2 };
#define IC_CHOICE_MAXW 8
typedef struct ic_gchoice {
    int dflt;             /* IC_CHOICE_*: the choice when not measured (the static rule) */
    int state;            /* 0 not measured yet; else IC_CHOICE_*, measured (atomic) */
    int nw;               /* buffers the alternatives write, and their sizes in bytes */
    int wbuf[IC_CHOICE_MAXW];
    int64_t wbytes[IC_CHOICE_MAXW];
    int64_t macs;         /* batch * M * N * K, for explain */
    float us[2];          /* measured device time of one call: extern path, template */
} ic_gchoice;

/* A graph's kernels may span several PTX modules (compiled in parallel): ic_gpu.ptx holds
 * them in order, separated by this line; each piece is a complete module. */
#define IC_PTX_SEP "\n// ---- torchc: next PTX module ----\n"

typedef struct ic_gpu {
    char *ptx;            /* NUL-terminated PTX text of the modules, IC_PTX_SEP between them */
    int sm;               /* target, e.g. 90 */
    int pdl;              /* kernels begin with griddepcontrol.wait (gpu_nvptx.c pdl_on):
                             launched with programmatic stream serialization */
    int device;           /* device ordinal the module was loaded on */
    ic_CUcontext ctx;     /* context the module lives in */
    ic_CUmodule module;   /* the first module; NULL for PTX-only compilations (ic_graph_to_ptx) */
    int nmod;             /* loaded modules (module is mods[0]) */
    ic_CUmodule *mods;
    int nkernels;         /* launches, in order (a split row kernel takes several) */
    int nctr;             /* always 0 (ic_gvariant.ctr) */
    ic_gkernel *k;
    int nchoice;          /* GEMM choices measured on the device (see ic_gchoice) */
    ic_gchoice *choice;
    int nbufs;
    int64_t *scratch_off; /* per buffer: row scratch (kind 3) at workspace + this, else -1;
                             the GPU keeps one row-local copy per row there */
    /* SASS of the modules, for the disk cache: ic_cuda_load keeps what ptxas or the driver's
     * linker made, and loads a module from cubin[i] (read back by ic_gcache_get) when it is
     * there and cubin_sm is the device's; a cubin that does not load is recompiled from PTX. */
    int ncubin;           /* entries of cubin/cubin_len: the PTX modules, or 0 (none) */
    int cubin_sm;         /* the device (major*10+minor) the cubins were made for */
    char **cubin;         /* per module: its cubin (ELF), malloc'd, or NULL (none) */
    size_t *cubin_len;
    int cubin_loaded;     /* modules the last ic_cuda_load took from given cubins */
    /* Lazy fallbacks: the scalar variants of kernels whose vector variant only needs aligned
     * base pointers are not compiled with the rest (a third of a CNN's O3 + ptxas work, and
     * PyTorch's buffers are aligned); their LLVM module is kept as bitcode and compiled, loaded
     * as one more module, the first time a call's pointers need one (runtime/cuda.c). */
    void *lazy_bc;        /* malloc'd bitcode, NULL when there are none */
    size_t lazy_n;
    int lazy_state;       /* 0 not compiled yet, 1 loaded, -1 failed (lazy_err); atomic */
    char lazy_err[200];
} ic_gpu;

/* The PTX of a module's bitcode for sm (gpu_nvptx.c: O3 + NVPTX, as any part): the lazy
 * fallbacks, gpu_scan.c's persistent scan kernels; malloc'd, NULL with msg on failure.
 * Thread-safe (its own LLVM context). */
char *ic_gpu_lazy_ptx(const void *bc, size_t n, int sm, char *msg, size_t msgn);

/* ---- thread mappings from linear layouts (codegen/gpu_layout.c) ------------------------- */
typedef struct ic_gmap {
    ll_layout layout;     /* (register, lane, warp) -> (col, row) of one block */
    int vec;              /* ll_num_consecutive: elements per access */
    int j_shift;          /* j = (tid >> j_shift) & (T-1): position in the row */
    int r_shift;          /* rl = (tid >> r_shift) & (R-1): row in the block */
    int nshfl, shfl[5];   /* butterfly xor masks of a row reduction, high to low */
    unsigned smem_mask;   /* tid bits of the row combined through shared memory */
} ic_gmap;

/* The layout of a row-kernel block and what codegen reads off it; 0, or -1 with err. */
int ic_gpu_row_map(ic_gmap *m, int V, int T, int R, bool jlow, int64_t chunks, char *err, size_t errn);
/* Elements per access: ll_num_consecutive of v0 registers over `size` elements. */
int ic_gpu_vec_width(int v0, int64_t size);

/* Transpose tile (32 x 32 through shared memory, 256 threads, 4 elements each): element
 * offsets in the swizzled tile, offset = base(tid) ^ reg(i) with base(tid) the XOR of
 * st/ld[b] over tid's set bits (b < 5 lane, above warp). */
typedef struct ic_gtile {
    int64_t st[8], st_reg[8]; /* phase 1 (stores into the tile): tid bits, registers */
    int64_t ld[8], ld_reg[8]; /* phase 2 (loads from the tile) */
    ll_layout smem;           /* ll_optimal_swizzle's shared layout: offset -> (c, r) */
    int store_wavefronts, load_wavefronts, store_ideal, load_ideal; /* per instruction */
} ic_gtile;
int ic_gpu_tile_map(ic_gtile *t, int elem_bits, char *err, size_t errn);
/* 64 x 64 tile of 16-bit elements moved as 32-bit words (gpu_nvptx.c V2_TILE): word offsets of
 * w(u, p) (elements (u, 2p), (u, 2p+1)); 3 register bits (phase 1: h, i; phase 2: i). */
int ic_gpu_tile2_map(ic_gtile *t, char *err, size_t errn);

/* codegen/gpu_nvptx.c: PTX and the launch plans of the finalized kernels of c for target sm
 * (ic_gpu_target_sm of the device's) with nsm SMs; nothing loaded, nothing cached (the driver
 * does both: backends.c), into gpu (zeroed, the caller's: ic_gpu_free). Failures: ic_fail. */
void ic_codegen_gpu(ic_ctx *c, int sm, int nsm, ic_gpu *gpu);
int ic_gpu_target_sm(int device_sm);            /* the sm code is generated for */
int ic_gpu_pdl(const ic_config *cf, int sm);    /* ic_gpu.pdl of code for sm */

/* runtime/cuda.c */
void ic_gpu_free(void *gpu);
/* the compiler of lazy fallbacks (ic_gpu_lazy_ptx), set by the driver before any load */
typedef char *(*ic_gpu_lazy_compiler)(const void *bc, size_t n, int sm, char *msg, size_t msgn);
void ic_cuda_set_lazy_compiler(ic_gpu_lazy_compiler fn);
/* driver up and the device's properties (sm = major*10+minor); 0 ok, else msg */
int ic_cuda_device_info(int device, int *sm, int *nsm, char *msg, size_t n);
/* loads G->ptx in the current (else primary) context of `device`, resolves the kernels;
 * modules with a cubin for the device in G->cubin load from it; keeps the new SASS there */
int ic_cuda_load(ic_gpu *G, int device, char *msg, size_t n);
/* A module of one kernel (codegen/gpu_scan.c) from ptx, in the current context of device if
 * it is the device's, else its primary context: the context, module and function `name`,
 * allowed dsmem bytes of dynamic shared memory. 0, or -1 with msg. */
int ic_cuda_fn_load(int device, const char *ptx, const char *name, unsigned dsmem, ic_CUcontext *ctx,
                    ic_CUmodule *mod, ic_CUfunction *fn, char *msg, size_t n);
/* one launch of fn (loaded in ctx) on stream, the caller's context kept; 0, or -1 with msg */
int ic_cuda_fn_launch(ic_CUcontext ctx, ic_CUfunction fn, unsigned grid, unsigned block, unsigned dsmem,
                      void *stream, void **args, char *msg, size_t n);
void ic_cuda_fn_unload(ic_CUcontext ctx, ic_CUmodule mod);
/* the driver's version (cuDriverGetVersion), 0 without a driver */
int ic_cuda_driver_version(void);
/* 1 when the driver has cuLaunchKernelEx (clusters, programmatic dependent launch) */
int ic_cuda_has_launch_ex(void);
/* Scratch of IC_STREAM_WS_BYTES for library calls (cuBLASLt, cuDNN) on one stream of one
 * device: allocated at first use in the current context, kept for the process; 0 when none
 * can be had. Calls on one stream run in order, so they can share it. */
#define IC_STREAM_WS_BYTES ((size_t)32 << 20)
ic_CUdeviceptr ic_cuda_stream_workspace(int dev, void *stream);

/* runtime/cublaslt.c: an extern GEMM (mm, addmm with a row bias, linear) through cuBLASLt on
 * stream. 0 done, 1 not taken (run it through ATen), -1 failed (err filled). The plan is
 * kept in x->lt (freed with ic_lt_free). */
int ic_lt_run(const ic_rext *x, void *const *in, void *out, void *stream, int dev, ic_err *err);
void ic_lt_free(void *plan);
/* runtime/cudnn.c: a 16-bit float convolution through cuDNN's backend API, plan kept in
 * x->dnn (ic_dnn_free). Same returns as ic_lt_run. */
int ic_dnn_run(const ic_rext *x, void *const *in, void *out, void *stream, int dev, ic_err *err);
void ic_dnn_free(void *plan);

/* runtime/gpu_cache.c: on-disk cache of PTX + launch plans (runtime/diskcache.c, ns "ptx") */
int ic_gcache_enabled(void);
/* a new, unloaded ic_gpu and the workspace size after codegen, or NULL (miss) */
ic_gpu *ic_gcache_get(const char *key, int nbufs, int64_t *ws_size);
void ic_gcache_put(const char *key, const ic_gpu *G, int64_t ws_size);
extern int ic_gcache_hits;       /* successful reads (tests) */
extern int ic_gcache_cubin_hits; /* modules loaded from cached cubins (runtime/cuda.c; tests) */
/* exported for the Python tests: 0 -> ic_gcache_hits, 1 -> ic_gcache_cubin_hits */
long ic_gcache_count(int which);

#endif
