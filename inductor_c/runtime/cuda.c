/* cuda.c — the CUDA driver, opened with dlopen("libcuda.so.1") at run time (never linked).
 *
 * Contract: every entry point works (and fails cleanly) on machines without CUDA:
 * ic_cuda_available() is 0 with a reason, ic_compile(IC_CUDA) fails with IC_EUNSUPPORTED
 * (the caller falls back to eager). Driver errors become ic_err with cuGetErrorString's text.
 *
 * Context: the module of a compiled graph lives in the context current when it was compiled
 * (PyTorch's: it makes the device's primary context current); when none is current, the
 * primary context of the device is retained (once per device, for the process) and made
 * current. Launches run in that context on the caller's stream; the caller's current
 * context is restored afterwards.
 *
 * Memory: inputs/outputs are the caller's device pointers. The workspace for intermediates
 * comes from the registered allocator (PyTorch's caching allocator through csrc: stream
 * ordered, released right after the launches are queued), else cuMemAllocAsync/FreeAsync on
 * the stream, else cuMemAlloc with a stream synchronization before cuMemFree.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/gpu.h"

#ifdef TORCHC_HAVE_CUDA_H
#include <cuda.h>
_Static_assert(sizeof(CUdeviceptr) == sizeof(ic_CUdeviceptr), "CUdeviceptr");
_Static_assert(sizeof(CUresult) == sizeof(ic_CUresult), "CUresult");
_Static_assert(sizeof(CUjit_option) == sizeof(int), "CUjit_option");
_Static_assert((int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == (int)IC_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "attr");
_Static_assert((int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == (int)IC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "attr");
_Static_assert((int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == (int)IC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "attr");
_Static_assert((int)CU_JIT_ERROR_LOG_BUFFER == (int)IC_CU_JIT_ERROR_LOG_BUFFER, "jit");
_Static_assert((int)CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == (int)IC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "jit");
#endif

typedef ic_CUresult R_;
typedef struct drv {
    void *lib;
    R_ (*Init)(unsigned);
    R_ (*DriverGetVersion)(int *);
    R_ (*DeviceGetCount)(int *);
    R_ (*DeviceGet)(ic_CUdevice *, int);
    R_ (*DeviceGetAttribute)(int *, int, ic_CUdevice);
    R_ (*DevicePrimaryCtxRetain)(ic_CUcontext *, ic_CUdevice);
    R_ (*CtxGetCurrent)(ic_CUcontext *);
    R_ (*CtxSetCurrent)(ic_CUcontext);
    R_ (*CtxGetDevice)(ic_CUdevice *);
    R_ (*ModuleLoadDataEx)(ic_CUmodule *, const void *, unsigned, int *, void **);
    R_ (*ModuleUnload)(ic_CUmodule);
    R_ (*ModuleGetFunction)(ic_CUfunction *, ic_CUmodule, const char *);
    R_ (*LaunchKernel)(ic_CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       ic_CUstream, void **, void **);
    R_ (*MemAlloc)(ic_CUdeviceptr *, size_t);
    R_ (*MemFree)(ic_CUdeviceptr);
    R_ (*MemAllocAsync)(ic_CUdeviceptr *, size_t, ic_CUstream); /* optional (CUDA >= 11.2) */
    R_ (*MemFreeAsync)(ic_CUdeviceptr, ic_CUstream);             /* optional */
    R_ (*StreamSynchronize)(ic_CUstream);
    R_ (*GetErrorString)(R_, const char **);
    int version;
    int ok;
    char reason[256];
} drv;

static drv D;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static ic_CUcontext primary[64];
static ic_device_allocator alloc_;
static int have_alloc;

static const char *errstr(R_ r) {
    const char *s = NULL;
    if (D.GetErrorString && D.GetErrorString(r, &s) == 0 && s) return s;
    return "unknown CUDA error";
}

static void init(void) {
    D.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!D.lib) {
        const char *e = dlerror();
        snprintf(D.reason, sizeof D.reason, "libcuda.so.1 not loadable: %s", e ? e : "?");
        return;
    }
#define SYM(field, name, required)                                                                \
    do {                                                                                          \
        *(void **)(&D.field) = dlsym(D.lib, name);                                                \
        if (!D.field && required) {                                                               \
            snprintf(D.reason, sizeof D.reason, "libcuda.so.1 lacks %s", name);                    \
            return;                                                                               \
        }                                                                                         \
    } while (0)
    SYM(Init, "cuInit", 1);
    SYM(DriverGetVersion, "cuDriverGetVersion", 1);
    SYM(DeviceGetCount, "cuDeviceGetCount", 1);
    SYM(DeviceGet, "cuDeviceGet", 1);
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute", 1);
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 1);
    SYM(CtxGetCurrent, "cuCtxGetCurrent", 1);
    SYM(CtxSetCurrent, "cuCtxSetCurrent", 1);
    SYM(CtxGetDevice, "cuCtxGetDevice", 1);
    SYM(ModuleLoadDataEx, "cuModuleLoadDataEx", 1);
    SYM(ModuleUnload, "cuModuleUnload", 1);
    SYM(ModuleGetFunction, "cuModuleGetFunction", 1);
    SYM(LaunchKernel, "cuLaunchKernel", 1);
    SYM(MemAlloc, "cuMemAlloc_v2", 1);
    SYM(MemFree, "cuMemFree_v2", 1);
    SYM(MemAllocAsync, "cuMemAllocAsync", 0);
    SYM(MemFreeAsync, "cuMemFreeAsync", 0);
    SYM(StreamSynchronize, "cuStreamSynchronize", 1);
    SYM(GetErrorString, "cuGetErrorString", 1);
#undef SYM
    R_ r = D.Init(0);
    if (r) {
        snprintf(D.reason, sizeof D.reason, "cuInit: %s", errstr(r));
        return;
    }
    D.DriverGetVersion(&D.version);
    int n = 0;
    r = D.DeviceGetCount(&n);
    if (r || n < 1) {
        snprintf(D.reason, sizeof D.reason, "no CUDA device (%s)", r ? errstr(r) : "count 0");
        return;
    }
    D.ok = 1;
}

IC_API int ic_cuda_available(void) {
    pthread_once(&once, init);
    return D.ok;
}

IC_API const char *ic_cuda_unavailable_reason(void) {
    pthread_once(&once, init);
    return D.ok ? NULL : D.reason;
}

int ic_cuda_driver_version(void) {
    pthread_once(&once, init);
    return D.version;
}

IC_API void ic_set_device_allocator(const ic_device_allocator *a) {
    pthread_mutex_lock(&mu);
    have_alloc = a && a->alloc && a->release;
    if (have_alloc) alloc_ = *a;
    pthread_mutex_unlock(&mu);
}

int ic_cuda_device_info(int device, int *sm, int *nsm, char *msg, size_t n) {
    if (!ic_cuda_available()) {
        snprintf(msg, n, "%s", D.reason);
        return -1;
    }
    ic_CUdevice d;
    int ma = 0, mi = 0, ns = 0;
    R_ r = D.DeviceGet(&d, device);
    if (!r) r = D.DeviceGetAttribute(&ma, IC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
    if (!r) r = D.DeviceGetAttribute(&mi, IC_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
    if (!r) r = D.DeviceGetAttribute(&ns, IC_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    if (r) {
        snprintf(msg, n, "device %d: %s", device, errstr(r));
        return -1;
    }
    *sm = ma * 10 + mi;
    *nsm = ns > 0 ? ns : 1;
    return 0;
}

/* The context to use for `device`: the current one when it belongs to the device, else the
 * device's primary context (retained once), made current. */
static int device_ctx(int device, ic_CUcontext *out, char *msg, size_t n) {
    ic_CUcontext cur = NULL;
    R_ r = D.CtxGetCurrent(&cur);
    if (!r && cur) {
        ic_CUdevice d;
        if (!D.CtxGetDevice(&d) && d == device) {
            *out = cur;
            return 0;
        }
    }
    if (device < 0 || device >= 64) {
        snprintf(msg, n, "device ordinal %d out of range", device);
        return -1;
    }
    pthread_mutex_lock(&mu);
    if (!primary[device]) {
        ic_CUdevice d;
        r = D.DeviceGet(&d, device);
        if (!r) r = D.DevicePrimaryCtxRetain(&primary[device], d);
    }
    ic_CUcontext p = primary[device];
    pthread_mutex_unlock(&mu);
    if (!r && p) r = D.CtxSetCurrent(p);
    if (r || !p) {
        snprintf(msg, n, "context for device %d: %s", device, r ? errstr(r) : "none");
        return -1;
    }
    *out = p;
    return 0;
}

int ic_cuda_load(ic_gpu *G, int device, char *msg, size_t n) {
    if (!ic_cuda_available()) {
        snprintf(msg, n, "%s", D.reason);
        return -1;
    }
    if (device_ctx(device, &G->ctx, msg, n)) return -1;
    G->device = device;
    char log[2048] = {0};
    int opts[2] = {IC_CU_JIT_ERROR_LOG_BUFFER, IC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    R_ r = D.ModuleLoadDataEx(&G->module, G->ptx, 2, opts, vals);
    if (r) {
        G->module = NULL;
        snprintf(msg, n, "loading PTX: %s%s%.300s", errstr(r), log[0] ? ": " : "", log);
        return -1;
    }
    for (int k = 0; k < G->nkernels; k++)
        for (int v = 0; v < G->k[k].nvar; v++) {
            ic_gvariant *gv = &G->k[k].v[v];
            r = D.ModuleGetFunction(&gv->fn, G->module, gv->name);
            if (r) {
                snprintf(msg, n, "kernel %s: %s", gv->name, errstr(r));
                return -1;
            }
        }
    return 0;
}

void ic_gpu_free(void *p) {
    ic_gpu *G = p;
    if (!G) return;
    if (G->module && D.ok) {
        ic_CUcontext cur = NULL;
        D.CtxGetCurrent(&cur);
        if (cur != G->ctx) D.CtxSetCurrent(G->ctx);
        D.ModuleUnload(G->module); /* errors (context gone at exit) are ignored */
        if (cur != G->ctx) D.CtxSetCurrent(cur);
    }
    for (int k = 0; G->k && k < G->nkernels; k++)
        for (int v = 0; v < 2; v++) {
            free(G->k[k].v[v].params);
            free(G->k[k].v[v].align_buf);
            free(G->k[k].v[v].align_bytes);
        }
    free(G->k);
    free(G->scratch_off);
    free(G->ptx);
    free(G);
}

IC_API char *ic_compiled_ptx(const ic_compiled *c) {
    if (!c || !c->gpu) return NULL;
    const ic_gpu *G = c->gpu;
    if (!G->ptx) return NULL;
    size_t n = strlen(G->ptx) + 1;
    char *s = malloc(n);
    if (s) memcpy(s, G->ptx, n);
    return s;
}

static int fail(ic_err *err, ic_errcode code, const char *fmt, const char *a, const char *b) {
    if (err) {
        err->code = code;
        snprintf(err->msg, sizeof err->msg, fmt, a, b);
    }
    return -1;
}

IC_API int ic_run_stream(const ic_compiled *c, void *const *inputs, void *const *outputs, void *stream,
                         ic_err *err) {
    if (!c->gpu) return ic_run(c, inputs, outputs, err);
    const ic_gpu *G = c->gpu;
    if (!G->module && G->nkernels > 0) return fail(err, IC_EINVALID, "%s%s", "compiled for PTX only", "");
    ic_CUstream st = stream;
    ic_CUcontext cur = NULL;
    D.CtxGetCurrent(&cur);
    if (cur != G->ctx) D.CtxSetCurrent(G->ctx);
    int rc = 0;
    ic_CUdeviceptr stackbufs[64];
    ic_CUdeviceptr *bufs = c->nbufs <= 64 ? stackbufs : malloc((size_t)c->nbufs * sizeof *bufs);
    void *args_stack[64];
    void **args = args_stack;
    int maxp = 0;
    for (int k = 0; k < G->nkernels; k++)
        for (int v = 0; v < G->k[k].nvar; v++)
            if (G->k[k].v[v].nparams > maxp) maxp = G->k[k].v[v].nparams;
    if (maxp > 63) args = malloc((size_t)(maxp + 1) * sizeof(void *));
    ic_CUdeviceptr ws = 0;
    void *ws_handle = NULL;
    ic_device_allocator a = {0};
    int ws_kind = 0; /* 1 allocator, 2 async, 3 sync */
    R_ r = 0;
    if (!bufs || !args) {
        rc = fail(err, IC_ENOMEM, "%s%s", "out of memory", "");
        goto done;
    }
    if (c->ws_size > 0) {
        size_t bytes = (size_t)c->ws_size;
        pthread_mutex_lock(&mu);
        int ha = have_alloc;
        a = alloc_;
        pthread_mutex_unlock(&mu);
        if (ha) {
            ws = (ic_CUdeviceptr)(uintptr_t)a.alloc(bytes, G->device, stream, &ws_handle);
            ws_kind = 1;
            if (!ws) {
                rc = fail(err, IC_ENOMEM, "%s%s", "device allocator failed for the workspace", "");
                goto done;
            }
        } else if (D.MemAllocAsync) {
            r = D.MemAllocAsync(&ws, bytes, st);
            ws_kind = 2;
        } else {
            r = D.MemAlloc(&ws, bytes);
            ws_kind = 3;
        }
        if (r) {
            ws_kind = 0;
            rc = fail(err, IC_ENOMEM, "workspace: %s%s", errstr(r), "");
            goto done;
        }
    }
    for (int b = 0; b < c->nbufs; b++) {
        switch (c->buf_kind[b]) {
        case 0: bufs[b] = (ic_CUdeviceptr)(uintptr_t)inputs[c->buf_index[b]]; break;
        case 1: bufs[b] = (ic_CUdeviceptr)(uintptr_t)outputs[c->buf_index[b]]; break;
        case 3: /* row scratch: rows x row in the workspace (gpu_nvptx.c) */
            bufs[b] = G->scratch_off && G->scratch_off[b] >= 0 ? ws + (ic_CUdeviceptr)G->scratch_off[b] : 0;
            break;
        default: bufs[b] = ws + (ic_CUdeviceptr)c->buf_offset[b]; break;
        }
    }
    for (int k = 0; k < G->nkernels; k++) {
        const ic_gkernel *K = &G->k[k];
        if (K->ext > 0) { /* extern (ATen) call, enqueued on the same stream */
            const ic_rext *x = &c->exts[K->ext - 1];
            void *in[IC_NIN] = {NULL, NULL, NULL, NULL};
            for (int i = 0; i < x->nin; i++) in[i] = (void *)(uintptr_t)bufs[x->in_buf[i]];
            ic_err e2;
            if (ic_run_extern(c, x, in, (void *)(uintptr_t)bufs[x->out_buf], stream, err ? err : &e2) < 0) {
                rc = -1;
                break;
            }
            continue;
        }
        const ic_gvariant *gv = NULL;
        for (int v = 0; v < K->nvar && !gv; v++) {
            bool ok = true;
            for (int i = 0; i < K->v[v].nalign; i++)
                if (bufs[K->v[v].align_buf[i]] % (ic_CUdeviceptr)K->v[v].align_bytes[i]) ok = false;
            if (ok) gv = &K->v[v];
        }
        if (!gv) continue; /* empty kernel */
        for (int i = 0; i < gv->nparams; i++) args[i] = &bufs[gv->params[i]];
        ic_CUdeviceptr part = ws + (ic_CUdeviceptr)(gv->part_off > 0 ? gv->part_off : 0);
        if (gv->part_off >= 0) args[gv->nparams] = &part;
        r = D.LaunchKernel(gv->fn, gv->grid, 1, 1, gv->block, 1, 1, 0, st, args, NULL);
        if (r) {
            rc = fail(err, IC_EINTERNAL, "launch of %s: %s", gv->name, errstr(r));
            break;
        }
    }
done:
    if (ws_kind == 1) {
        a.release(ws_handle);
    } else if (ws_kind == 2) {
        D.MemFreeAsync(ws, st);
    } else if (ws_kind == 3) {
        D.StreamSynchronize(st);
        D.MemFree(ws);
    }
    if (bufs && bufs != stackbufs) free(bufs);
    if (args && args != args_stack) free(args);
    if (cur != G->ctx) D.CtxSetCurrent(cur);
    if (!rc && err) {
        err->code = IC_OK;
        err->msg[0] = 0;
    }
    return rc;
}
