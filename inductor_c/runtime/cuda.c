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
 * Modules: a graph's PTX modules (IC_PTX_SEP) become SASS on parallel threads through the
 * driver's linker (cuLinkAddData + cuLinkComplete: unlike cuModuleLoadDataEx of PTX it hands
 * the cubin out), or in parallel ptxas processes (ic_cuda_set_ptxas); each module loads from
 * its cubin, and G->cubin keeps them for the disk cache (runtime/gpu_cache.c). A graph read
 * back from that cache loads its cubins as they are, skipping PTX -> SASS; a module whose
 * cubin is missing or refused (another driver or device) is compiled from its PTX instead,
 * never an error. Without the cuLink* entry points, or with the disk cache off, PTX loads
 * through cuModuleLoadDataEx (the driver's own JIT cache) and no cubin is kept.
 *
 * Memory: inputs/outputs are the caller's device pointers. The workspace for intermediates
 * comes from the registered allocator (PyTorch's caching allocator through csrc: stream
 * ordered, released right after the launches are queued), else cuMemAllocAsync/FreeAsync on
 * the stream, else cuMemAlloc with a stream synchronization before cuMemFree.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdbool.h>
#include <stdio.h>
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
_Static_assert(sizeof(CUjitInputType) == sizeof(int), "CUjitInputType");
_Static_assert((int)CU_JIT_INPUT_PTX == (int)IC_CU_JIT_INPUT_PTX, "jit input");
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
    R_ (*FuncSetAttribute)(ic_CUfunction, int, int); /* optional: dynamic shared memory over 48 KB */
    R_ (*LaunchKernel)(ic_CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       ic_CUstream, void **, void **);
    R_ (*LaunchKernelEx)(const void *config, ic_CUfunction, void **, void **); /* optional (CUDA >= 12.0) */
    R_ (*StreamIsCapturing)(ic_CUstream, int *);                                /* optional */
    R_ (*MemAlloc)(ic_CUdeviceptr *, size_t);
    R_ (*MemFree)(ic_CUdeviceptr);
    R_ (*MemAllocAsync)(ic_CUdeviceptr *, size_t, ic_CUstream); /* optional (CUDA >= 11.2) */
    R_ (*MemFreeAsync)(ic_CUdeviceptr, ic_CUstream);             /* optional */
    R_ (*StreamSynchronize)(ic_CUstream);
    R_ (*GetErrorString)(R_, const char **);
    /* optional, all five or none: timing the two forms of a GEMM choice (ic_gchoice) */
    R_ (*EventCreate)(void **, unsigned);
    R_ (*EventRecord)(void *, ic_CUstream);
    R_ (*EventSynchronize)(void *);
    R_ (*EventElapsedTime)(float *, void *, void *);
    R_ (*EventDestroy)(void *);
    /* optional, all four or none: PTX -> cubin through the driver's linker */
    R_ (*LinkCreate)(unsigned, int *, void **, ic_CUlinkState *);
    R_ (*LinkAddData)(ic_CUlinkState, int, void *, size_t, const char *, unsigned, int *, void **);
    R_ (*LinkComplete)(ic_CUlinkState, void **, size_t *);
    R_ (*LinkDestroy)(ic_CUlinkState);
    int version;
    int ok;
    char reason[256];
} drv;

static drv D;

/* cuLaunchKernelEx's configuration, laid out as cuda.h's CUlaunchConfig / CUlaunchAttribute
 * (checked against cuda.h by tests/c/test_ptx.c where the header exists) */
typedef struct ic_launch_attr {
    unsigned id;
    char pad[4];
    union {
        char raw[64];
        int ival;
    } value;
} ic_launch_attr;
typedef struct ic_launch_config {
    unsigned grid[3], block[3];
    unsigned smem;
    ic_CUstream stream;
    ic_launch_attr *attrs;
    unsigned nattrs;
} ic_launch_config;
#define IC_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION 6
#define IC_LAUNCH_ATTR_CLUSTER_DIMENSION 4
#define IC_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#ifdef TORCHC_HAVE_CUDA_H
#include <stddef.h>
_Static_assert(sizeof(ic_launch_attr) == sizeof(CUlaunchAttribute), "CUlaunchAttribute");
_Static_assert(offsetof(ic_launch_attr, value) == offsetof(CUlaunchAttribute, value), "CUlaunchAttribute");
_Static_assert(offsetof(ic_launch_config, block) == offsetof(CUlaunchConfig, blockDimX), "CUlaunchConfig");
_Static_assert(offsetof(ic_launch_config, smem) == offsetof(CUlaunchConfig, sharedMemBytes), "CUlaunchConfig");
_Static_assert(offsetof(ic_launch_config, stream) == offsetof(CUlaunchConfig, hStream), "CUlaunchConfig");
_Static_assert(offsetof(ic_launch_config, attrs) == offsetof(CUlaunchConfig, attrs), "CUlaunchConfig");
_Static_assert(offsetof(ic_launch_config, nattrs) == offsetof(CUlaunchConfig, numAttrs), "CUlaunchConfig");
_Static_assert(sizeof(ic_launch_config) == sizeof(CUlaunchConfig), "CUlaunchConfig");
_Static_assert((int)CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION ==
                   IC_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION, "attribute id");
_Static_assert((int)CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION == IC_LAUNCH_ATTR_CLUSTER_DIMENSION, "attribute id");
_Static_assert((int)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == IC_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
               "attribute id");
_Static_assert(offsetof(CUlaunchAttributeValue, clusterDim.x) == 0 && offsetof(CUlaunchAttributeValue, clusterDim.y) == 4,
               "clusterDim");
#endif
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
    SYM(FuncSetAttribute, "cuFuncSetAttribute", 0);
    SYM(LaunchKernel, "cuLaunchKernel", 1);
    SYM(LaunchKernelEx, "cuLaunchKernelEx", 0);
    SYM(StreamIsCapturing, "cuStreamIsCapturing", 0);
    SYM(MemAlloc, "cuMemAlloc_v2", 1);
    SYM(MemFree, "cuMemFree_v2", 1);
    SYM(MemAllocAsync, "cuMemAllocAsync", 0);
    SYM(MemFreeAsync, "cuMemFreeAsync", 0);
    SYM(StreamSynchronize, "cuStreamSynchronize", 1);
    SYM(GetErrorString, "cuGetErrorString", 1);
    SYM(EventCreate, "cuEventCreate", 0);
    SYM(EventRecord, "cuEventRecord", 0);
    SYM(EventSynchronize, "cuEventSynchronize", 0);
    SYM(EventElapsedTime, "cuEventElapsedTime_v2", 0);
    if (!D.EventElapsedTime) SYM(EventElapsedTime, "cuEventElapsedTime", 0);
    SYM(EventDestroy, "cuEventDestroy_v2", 0);
    SYM(LinkCreate, "cuLinkCreate_v2", 0);
    SYM(LinkAddData, "cuLinkAddData_v2", 0);
    SYM(LinkComplete, "cuLinkComplete", 0);
    SYM(LinkDestroy, "cuLinkDestroy", 0);
#undef SYM
    if (!D.LinkCreate || !D.LinkAddData || !D.LinkComplete || !D.LinkDestroy) {
        D.LinkCreate = NULL; /* the JIT goes through cuModuleLoadDataEx, no cubins kept */
        D.LinkAddData = NULL;
        D.LinkComplete = NULL;
        D.LinkDestroy = NULL;
    }
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

static struct { int dev; void *stream; ic_CUdeviceptr ws; } wss[32];
static int nws;

ic_CUdeviceptr ic_cuda_stream_workspace(int dev, void *stream) {
    ic_CUdeviceptr ws = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nws; i++)
        if (wss[i].dev == dev && wss[i].stream == stream) ws = wss[i].ws;
    if (!ws && nws < (int)(sizeof wss / sizeof *wss) && D.ok && D.MemAlloc(&ws, IC_STREAM_WS_BYTES) == 0) {
        wss[nws].dev = dev;
        wss[nws].stream = stream;
        wss[nws++].ws = ws;
    }
    pthread_mutex_unlock(&mu);
    return ws;
}

int ic_cuda_driver_version(void) {
    pthread_once(&once, init);
    return D.version;
}

int ic_cuda_has_launch_ex(void) {
    pthread_once(&once, init);
    return D.ok && D.LaunchKernelEx != NULL;
}

IC_API void ic_set_device_allocator(const ic_device_allocator *a) {
    pthread_mutex_lock(&mu);
    have_alloc = a && a->alloc && a->release;
    if (have_alloc) alloc_ = *a;
    pthread_mutex_unlock(&mu);
}

IC_API int ic_get_device_allocator(ic_device_allocator *out) {
    pthread_mutex_lock(&mu);
    int ha = have_alloc;
    if (ha && out) *out = alloc_;
    pthread_mutex_unlock(&mu);
    return ha;
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

struct load_job;
typedef struct load_job {
    ic_CUcontext ctx;
    const char *ptx;
    bool keep;        /* keep the SASS (for the disk cache) */
    ic_CUmodule mod;
    R_ r;             /* != 0: not loaded (yet) */
    char *cubin;      /* keep: the SASS mod was loaded from, malloc'd, or NULL */
    size_t cubin_len;
    char log[2048];
} load_job;

/* cuModuleLoadDataEx of a PTX or cubin image in the current context, errors into j->log
 * (fresh options each call: the driver writes the log's length back into them). */
static R_ load_image(load_job *j, const void *image) {
    int opts[2] = {IC_CU_JIT_ERROR_LOG_BUFFER, IC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {j->log, (void *)(uintptr_t)sizeof j->log};
    R_ r = D.ModuleLoadDataEx(&j->mod, image, 2, opts, vals);
    if (r) j->mod = NULL;
    return r;
}

/* PTX -> cubin through the driver's linker, then the module from the cubin, kept in j->cubin
 * (a failed copy only loses the cubin). 0 loaded, else -1: nothing loaded or kept. */
static int link_one(load_job *j) {
    int opts[2] = {IC_CU_JIT_ERROR_LOG_BUFFER, IC_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {j->log, (void *)(uintptr_t)sizeof j->log}; /* live until LinkDestroy */
    ic_CUlinkState ls = NULL;
    if (D.LinkCreate(2, opts, vals, &ls) || !ls) return -1;
    void *bin = NULL; /* owned by ls */
    size_t len = 0;
    R_ r = D.LinkAddData(ls, IC_CU_JIT_INPUT_PTX, (void *)j->ptx, strlen(j->ptx) + 1, "torchc.ptx", 0, NULL, NULL);
    if (!r) r = D.LinkComplete(ls, &bin, &len);
    if (!r && (!bin || !len)) r = 1;
    if (!r) r = load_image(j, bin);
    if (!r && (j->cubin = malloc(len))) {
        memcpy(j->cubin, bin, len);
        j->cubin_len = len;
    }
    D.LinkDestroy(ls);
    if (r) return -1;
    j->r = 0;
    return 0;
}

/* The driver JIT-compiles PTX to SASS here; modules load on parallel threads (the driver API
 * is thread-safe, and its JIT runs concurrently for different modules). A module the linker
 * fails on gets one more try through cuModuleLoadDataEx, whose error is the one reported. */
static void *load_one(void *arg) {
    load_job *j = arg;
    ic_CUcontext cur = NULL;
    D.CtxGetCurrent(&cur);
    if (cur != j->ctx) D.CtxSetCurrent(j->ctx);
    if (j->keep && D.LinkCreate && !link_one(j)) return NULL;
    j->r = load_image(j, j->ptx);
    return NULL;
}

/* Frees G's cubins (none kept). */
static void drop_cubins(ic_gpu *G) {
    for (int i = 0; G->cubin && i < G->ncubin; i++) free(G->cubin[i]);
    free(G->cubin);
    free(G->cubin_len);
    G->cubin = NULL;
    G->cubin_len = NULL;
    G->ncubin = 0;
    G->cubin_sm = 0;
}

/* ---- ptxas: PTX -> cubin in parallel processes ------------------------------------------ */
extern char **environ;
static pthread_mutex_t px_mu = PTHREAD_MUTEX_INITIALIZER;
static char *px_path;

void ic_cuda_set_ptxas(const char *path) {
    pthread_mutex_lock(&px_mu);
    free(px_path);
    px_path = path && *path ? strdup(path) : NULL;
    pthread_mutex_unlock(&px_mu);
}

static char *ptxas_get(void) { /* malloc'd path or NULL */
    char e[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_ptxas, e); /* torchc.config.ptxas */
    if (*e) return strcmp(e, "0") ? strdup(e) : NULL;
    pthread_mutex_lock(&px_mu);
    char *p = px_path ? strdup(px_path) : NULL;
    pthread_mutex_unlock(&px_mu);
    return p;
}

static int write_file(const char *path, const char *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int bad = ic_write_all(fd, data, n);
    close(fd);
    return bad;
}

static char *read_file(const char *path, size_t *n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (buf = malloc((size_t)st.st_size))) {
        size_t at = 0;
        while (at < (size_t)st.st_size) {
            ssize_t r = read(fd, buf + at, (size_t)st.st_size - at);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            at += (size_t)r;
        }
        if (at != (size_t)st.st_size) {
            free(buf);
            buf = NULL;
        }
        *n = at;
    }
    close(fd);
    return buf;
}

/* Assembles the PTX of every job not loaded yet (r != 0) with ptxas -arch=sm_<sm> (all
 * processes at once) and loads the cubins (kept in the job when it keeps them); a job whose
 * ptxas or load fails keeps r != 0 and its PTX (the caller JITs it). */
static void ptxas_all(const char *ptxas, int sm, struct load_job *jobs, int nm);

int ic_cuda_load(ic_gpu *G, int device, char *msg, size_t n) {
    if (!ic_cuda_available()) {
        snprintf(msg, n, "%s", D.reason);
        return -1;
    }
    if (device_ctx(device, &G->ctx, msg, n)) return -1;
    G->device = device;
    /* split the text at the separators (a private copy: G->ptx stays whole for the caches) */
    const size_t sl = strlen(IC_PTX_SEP);
    int nm = 1;
    for (const char *s = strstr(G->ptx, IC_PTX_SEP); s; s = strstr(s + sl, IC_PTX_SEP)) nm++;
    char *text = strdup(G->ptx);
    load_job *jobs = calloc((size_t)nm, sizeof *jobs);
    pthread_t *th = calloc((size_t)nm, sizeof *th);
    bool *started = calloc((size_t)nm, sizeof *started);
    G->mods = calloc((size_t)nm, sizeof *G->mods);
    int rc = 0;
    if (!text || !jobs || !th || !started || !G->mods) {
        snprintf(msg, n, "out of memory");
        rc = -1;
        goto out;
    }
    char *s = text;
    for (int i = 0; i < nm; i++) {
        jobs[i].ctx = G->ctx;
        jobs[i].ptx = s;
        char *e = strstr(s, IC_PTX_SEP);
        if (e) {
            *e = 0;
            s = e + sl;
        }
    }
    int dsm = 0, nsm = 0;
    char m2[64];
    if (ic_cuda_device_info(device, &dsm, &nsm, m2, sizeof m2)) dsm = 0;
    const bool keep = dsm > 0 && ic_gcache_enabled(); /* the SASS is for the disk cache */
    for (int i = 0; i < nm; i++) {
        jobs[i].r = 1; /* not loaded yet */
        jobs[i].keep = keep;
    }
    /* cubins read from the disk cache for this device: loaded as they are, in this thread
     * (no compile: cheap); one the driver refuses is compiled from its PTX below. Only ELF
     * images go to the driver (it takes no length: anything else would be read as PTX). */
    G->cubin_loaded = 0;
    if (G->ncubin == nm && G->cubin && G->cubin_len && G->cubin_sm == dsm && dsm > 0)
        for (int i = 0; i < nm; i++) {
            if (!G->cubin[i] || G->cubin_len[i] < 64 || memcmp(G->cubin[i], "\x7f" "ELF", 4)) continue;
            jobs[i].r = load_image(&jobs[i], G->cubin[i]);
            if (jobs[i].r) {
                jobs[i].r = 1;
                jobs[i].log[0] = 0;
                continue;
            }
            jobs[i].cubin = G->cubin[i]; /* moves to the job, back to G below */
            jobs[i].cubin_len = G->cubin_len[i];
            G->cubin[i] = NULL;
            G->cubin_loaded++;
        }
    drop_cubins(G); /* the rest: stale, replaced by what loads now */
    int left = 0;
    for (int i = 0; i < nm; i++) left += jobs[i].r != 0;
    char *ptxas = ptxas_get();
    /* cubins from ptxas when the device is the PTX's target and the work is worth processes */
    if (ptxas && left && (nm > 1 || strlen(G->ptx) > 65536) && dsm > 0 && dsm == G->sm)
        ptxas_all(ptxas, dsm, jobs, nm);
    free(ptxas);
    for (int i = 1; i < nm; i++)
        if (jobs[i].r) started[i] = pthread_create(&th[i], NULL, load_one, &jobs[i]) == 0;
    if (jobs[0].r) load_one(&jobs[0]);
    for (int i = 1; i < nm; i++) {
        if (started[i]) pthread_join(th[i], NULL);
        else if (jobs[i].r) load_one(&jobs[i]);
    }
    for (int i = 0; i < nm; i++) {
        G->mods[i] = jobs[i].mod;
        if (jobs[i].mod) G->nmod = i + 1;
    }
    if (keep) { /* the SASS of every module (NULL where none came out) */
        G->cubin = calloc((size_t)nm, sizeof *G->cubin);
        G->cubin_len = calloc((size_t)nm, sizeof *G->cubin_len);
        if (G->cubin && G->cubin_len) {
            G->ncubin = nm;
            G->cubin_sm = dsm;
            for (int i = 0; i < nm; i++) {
                G->cubin[i] = jobs[i].cubin;
                G->cubin_len[i] = jobs[i].cubin ? jobs[i].cubin_len : 0;
                jobs[i].cubin = NULL;
            }
        } else {
            drop_cubins(G); /* out of memory: the cache gets no cubins, the jobs' are freed below */
        }
    }
    for (int i = 0; i < nm && !rc; i++)
        if (jobs[i].r) {
            snprintf(msg, n, "loading PTX%s: %s%s%.300s", nm > 1 ? " (one of several modules)" : "",
                     errstr(jobs[i].r), jobs[i].log[0] ? ": " : "", jobs[i].log);
            rc = -1;
        }
    G->module = G->mods[0];
    for (int k = 0; k < G->nkernels && !rc; k++)
        for (int v = 0; v < G->k[k].nvar && !rc; v++) {
            ic_gvariant *gv = &G->k[k].v[v];
            if (gv->lazy) continue; /* in the lazy module, loaded on first use (lazy_load) */
            R_ r = 1;
            for (int i = 0; i < G->nmod && r; i++)
                if (G->mods[i]) r = D.ModuleGetFunction(&gv->fn, G->mods[i], gv->name);
            if (!r && gv->dsmem > 48 * 1024) /* opt in to more than 48 KB of dynamic shared memory */
                r = D.FuncSetAttribute ? D.FuncSetAttribute(gv->fn, IC_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                           (int)gv->dsmem)
                                       : 1;
            if (r) {
                snprintf(msg, n, "kernel %s: %s", gv->name,
                         D.FuncSetAttribute || gv->dsmem <= 48 * 1024 ? errstr(r) : "no cuFuncSetAttribute in this driver");
                rc = -1;
            }
        }
    if (!rc) __atomic_fetch_add(&ic_gcache_cubin_hits, G->cubin_loaded, __ATOMIC_RELAXED);
out:
    for (int i = 0; jobs && i < nm; i++) free(jobs[i].cubin);
    free(text);
    free(jobs);
    free(th);
    free(started);
    if (rc) G->module = NULL; /* ic_gpu_free unloads what did load */
    return rc;
}

static void ptxas_all(const char *ptxas, int sm, load_job *jobs, int nm) {
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/torchc-ptxas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return;
    pid_t *pid = calloc((size_t)nm, sizeof *pid);
    if (!pid) {
        rmdir(dir);
        return;
    }
    char arch[32];
    snprintf(arch, sizeof arch, "-arch=sm_%d", sm);
    for (int i = 0; i < nm; i++) {
        if (!jobs[i].r) continue; /* loaded already (a cached cubin) */
        char in[600], out[600], log[600];
        snprintf(in, sizeof in, "%s/m%d.ptx", dir, i);
        snprintf(out, sizeof out, "%s/m%d.cubin", dir, i);
        snprintf(log, sizeof log, "%s/m%d.log", dir, i);
        if (write_file(in, jobs[i].ptx, strlen(jobs[i].ptx))) continue;
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        char *argv[] = {(char *)ptxas, arch, "-O3", in, "-o", out, NULL};
        if (posix_spawn(&pid[i], ptxas, &fa, NULL, argv, environ)) pid[i] = 0;
        posix_spawn_file_actions_destroy(&fa);
    }
    for (int i = 0; i < nm; i++) {
        char path[600];
        int status = 0;
        bool ok = false;
        if (pid[i] > 0) {
            while (waitpid(pid[i], &status, 0) < 0 && errno == EINTR) {
            }
            ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        }
        if (!jobs[i].r) continue;
        size_t n = 0;
        snprintf(path, sizeof path, "%s/m%d.cubin", dir, i);
        char *cubin = ok ? read_file(path, &n) : NULL;
        if (cubin) {
            ic_CUcontext cur = NULL;
            D.CtxGetCurrent(&cur);
            if (cur != jobs[i].ctx) D.CtxSetCurrent(jobs[i].ctx);
            jobs[i].r = load_image(&jobs[i], cubin); /* failed: the caller JITs the PTX instead */
            if (!jobs[i].r && jobs[i].keep) {
                jobs[i].cubin = cubin;
                jobs[i].cubin_len = n;
                cubin = NULL;
            }
            free(cubin);
        }
        unlink(path);
        snprintf(path, sizeof path, "%s/m%d.ptx", dir, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/m%d.log", dir, i);
        unlink(path);
    }
    free(pid);
    rmdir(dir);
}

void ic_gpu_free(void *p) {
    ic_gpu *G = p;
    if (!G) return;
    free(G->choice);
    if (G->nmod > 0 && D.ok) {
        ic_CUcontext cur = NULL;
        D.CtxGetCurrent(&cur);
        if (cur != G->ctx) D.CtxSetCurrent(G->ctx);
        for (int i = 0; i < G->nmod; i++)
            if (G->mods[i]) D.ModuleUnload(G->mods[i]); /* errors (context gone at exit) are ignored */
        if (cur != G->ctx) D.CtxSetCurrent(cur);
    }
    free(G->mods);
    free(G->lazy_bc);
    drop_cubins(G);
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

/* Host time of GPU runs by part (TORCHC_HOST_STATS=1; read by torchc._C.stats()): [0] the
 * whole of ic_run_stream, [1] workspace allocation and release, [2] cuBLASLt calls, [3] cuDNN
 * calls, [4] other extern (ATen) calls, [5] kernel launches with their argument setup;
 * nanoseconds, and the number of each in hs_n. */
static unsigned long long hs_t[6], hs_n[6];
static int hs_on = -1;

static unsigned long long hs_now(void) {
    if (hs_on < 0) {
        hs_on = ic_config_int(IC_CFG_host_stats) != 0;
    }
    if (!hs_on) return 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void hs_add(int part, unsigned long long t0) {
    if (!hs_on || !t0) return;
    __atomic_fetch_add(&hs_t[part], hs_now() - t0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&hs_n[part], 1, __ATOMIC_RELAXED);
}

void ic_gpu_host_stats(double *us, unsigned long long *n) {
    for (int i = 0; i < 6; i++) {
        us[i] = (double)__atomic_load_n(&hs_t[i], __ATOMIC_RELAXED) / 1e3;
        n[i] = __atomic_load_n(&hs_n[i], __ATOMIC_RELAXED);
    }
}

/* An extern call of the graph (cuBLASLt, cuDNN, else ATen), on the stream. 0 or -1 (err). */
static int run_ext(const ic_compiled *c, const ic_gpu *G, const ic_gkernel *K, const ic_CUdeviceptr *bufs,
                   void *stream, ic_err *err) {
    const ic_rext *x = &c->exts[K->ext - 1];
    void *in[IC_NIN] = {NULL};
    for (int i = 0; i < x->nin; i++) in[i] = (void *)(uintptr_t)bufs[x->in_buf[i]];
    ic_err e2;
    unsigned long long t0 = hs_now();
    int lt = ic_lt_run(x, in, (void *)(uintptr_t)bufs[x->out_buf], stream, G->device, err ? err : &e2);
    if (lt <= 0) {
        if (lt == 0) hs_add(2, t0);
        return lt;
    }
    lt = ic_dnn_run(x, in, (void *)(uintptr_t)bufs[x->out_buf], stream, G->device, err ? err : &e2);
    if (lt <= 0) {
        if (lt == 0) hs_add(3, t0);
        return lt;
    }
    if (ic_run_extern(c, x, in, (void *)(uintptr_t)bufs[x->out_buf], stream, err ? err : &e2) < 0) return -1;
    hs_add(4, t0);
    return 0;
}

/* ---- lazy fallbacks (gpu.h ic_gpu.lazy_bc) ---------------------------------------------- */
static pthread_mutex_t lazy_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long lazy_loads;

unsigned long long ic_gpu_lazy_loads(void) { return __atomic_load_n(&lazy_loads, __ATOMIC_RELAXED); }

/* The code generator's compiler of lazy fallbacks, registered by the driver (backends.c), so
 * that the runtime does not call into codegen/. */
static ic_gpu_lazy_compiler lazy_compiler;

void ic_cuda_set_lazy_compiler(ic_gpu_lazy_compiler fn) { __atomic_store_n(&lazy_compiler, fn, __ATOMIC_RELEASE); }

/* Compiles G's lazy fallbacks (O3 + NVPTX from their bitcode, then the driver's JIT), loads
 * them as one more module and looks their functions up: once per ic_gpu, under a lock; a
 * failure is kept and reported on every later need. In G's context (current). 0 or -1. */
static int lazy_load(const ic_gpu *cG, ic_err *err) {
    ic_gpu *G = (ic_gpu *)cG; /* the lazy part of the plan is filled in once, under lazy_mu */
    if (__atomic_load_n(&G->lazy_state, __ATOMIC_ACQUIRE) == 1) return 0;
    pthread_mutex_lock(&lazy_mu);
    if (G->lazy_state == 0) {
        char msg[sizeof G->lazy_err] = "";
        ic_gpu_lazy_compiler lc = __atomic_load_n(&lazy_compiler, __ATOMIC_ACQUIRE);
        char *ptx = G->lazy_bc && lc ? lc(G->lazy_bc, G->lazy_n, G->sm, msg, sizeof msg) : NULL;
        if (G->lazy_bc && !lc) snprintf(msg, sizeof msg, "no compiler for the fallback kernels");
        if (!G->lazy_bc) snprintf(msg, sizeof msg, "no code for the fallback kernels");
        load_job j = {.ctx = G->ctx, .ptx = ptx, .r = 1};
        ic_CUmodule *mods = ptx ? realloc(G->mods, ((size_t)G->nmod + 1) * sizeof *mods) : NULL;
        if (mods) {
            G->mods = mods;
            load_one(&j);
            if (j.r) snprintf(msg, sizeof msg, "loading PTX: %s%s%.100s", errstr(j.r), j.log[0] ? ": " : "", j.log);
        } else if (ptx) {
            snprintf(msg, sizeof msg, "out of memory");
        }
        int ok = ptx && mods && !j.r;
        if (ok) G->mods[G->nmod++] = j.mod; /* unloaded with the others (ic_gpu_free) */
        for (int k = 0; ok && k < G->nkernels; k++)
            for (int v = 0; ok && v < G->k[k].nvar; v++) {
                ic_gvariant *gv = &G->k[k].v[v];
                if (!gv->lazy) continue;
                R_ r = D.ModuleGetFunction(&gv->fn, j.mod, gv->name);
                if (!r && gv->dsmem > 48 * 1024)
                    r = D.FuncSetAttribute
                            ? D.FuncSetAttribute(gv->fn, IC_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)gv->dsmem)
                            : 1;
                if (r) {
                    snprintf(msg, sizeof msg, "kernel %s: %s", gv->name, errstr(r));
                    ok = 0;
                }
            }
        free(ptx);
        if (ok) __atomic_fetch_add(&lazy_loads, 1, __ATOMIC_RELAXED);
        else snprintf(G->lazy_err, sizeof G->lazy_err, "%s", msg);
        __atomic_store_n(&G->lazy_state, ok ? 1 : -1, __ATOMIC_RELEASE);
    }
    int st = G->lazy_state;
    pthread_mutex_unlock(&lazy_mu);
    return st == 1 ? 0 : fail(err, IC_EINTERNAL, "fallback kernels: %s%s", G->lazy_err, "");
}

/* The variant a launch takes: the first whose alignment the buffers meet; NULL: none. */
static const ic_gvariant *pick(const ic_gkernel *K, const ic_CUdeviceptr *bufs) {
    for (int v = 0; v < K->nvar; v++) {
        bool ok = true;
        for (int i = 0; i < K->v[v].nalign; i++)
            if (bufs[K->v[v].align_buf[i]] % (ic_CUdeviceptr)K->v[v].align_bytes[i]) ok = false;
        if (ok) return &K->v[v];
    }
    return NULL;
}

/* Before a call launches anything: the lazy fallbacks, when a launch of it will take one
 * (so that a failure to build them leaves nothing half-run). 0 or -1. */
static int lazy_prepare(const ic_gpu *G, const ic_CUdeviceptr *bufs, ic_err *err) {
    if (!G->lazy_bc || __atomic_load_n(&G->lazy_state, __ATOMIC_ACQUIRE) == 1) return 0;
    for (int k = 0; k < G->nkernels; k++) {
        const ic_gkernel *K = &G->k[k];
        if (K->ext > 0 || K->nvar < 2 || !K->v[K->nvar - 1].lazy) continue;
        const ic_gvariant *gv = pick(K, bufs);
        if (gv && gv->lazy) return lazy_load(G, err);
    }
    return 0;
}

static unsigned long long split_n[2]; /* [1]: final (combining) launches of split rows */

/* [0]: launches that combined their row's partials themselves (none: that form was removed,
 * gpu_nvptx.c), [1]: combining launches */
void ic_gpu_split_stats(unsigned long long *n) {
    for (int i = 0; i < 2; i++) n[i] = __atomic_load_n(&split_n[i], __ATOMIC_RELAXED);
}

/* One kernel's launch: the first variant whose alignment the buffers meet (none: an empty
 * kernel, nothing to do). args: room for its parameters and one more. 0 or -1 (err). */
static int launch(const ic_gpu *G, const ic_gkernel *K, const ic_CUdeviceptr *bufs, ic_CUdeviceptr ws,
                  ic_CUstream st, void **args, bool pdl, ic_err *err) {
    unsigned long long t0 = hs_now();
    const ic_gvariant *gv = pick(K, bufs);
    if (!gv) return 0;
    if (gv->lazy && lazy_load(G, err) < 0) return -1;
    for (int i = 0; i < gv->nparams; i++) args[i] = (void *)&bufs[gv->params[i]];
    ic_CUdeviceptr part = ws + (ic_CUdeviceptr)(gv->part_off > 0 ? gv->part_off : 0);
    if (gv->part_off >= 0) args[gv->nparams] = &part;
    R_ r;
    if (pdl && D.LaunchKernelEx) {
        ic_launch_attr at[1];
        memset(at, 0, sizeof at);
        at[0].id = IC_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION;
        at[0].value.ival = 1;
        ic_launch_config cf = {{gv->grid, 1, 1}, {gv->block, 1, 1}, gv->dsmem, st, at, 1};
        r = D.LaunchKernelEx(&cf, gv->fn, args, NULL);
    } else {
        r = D.LaunchKernel(gv->fn, gv->grid, 1, 1, gv->block, 1, 1, gv->dsmem, st, args, NULL);
    }
    if (r) return fail(err, IC_EINTERNAL, "launch of %s: %s", gv->name, errstr(r));
    if (K->split_final) __atomic_fetch_add(&split_n[1], 1, __ATOMIC_RELAXED);
    hs_add(5, t0);
    return 0;
}

/* GEMM choices made on the device: [0] measured, [1] of them the template, [2] the extern
 * call, [3] runs that took the fixed rule untimed (stream capture, no event API; the config
 * table turns a gemm_choice value it does not list into the default). */
static unsigned long long gc_n[4];

void ic_gemm_choice_stats(unsigned long long *n) {
    for (int i = 0; i < 4; i++) n[i] = __atomic_load_n(&gc_n[i], __ATOMIC_RELAXED);
}

/* config gemm_choice: "" or measure (default) | static (the rule, no timing) | extern | template:
 * what a GEMM choice group runs (the last three for tests and A/B runs). */
static int choice_mode(void) {
    char e[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_gemm_choice, e);
    if (!*e || !strcmp(e, "measure")) return 0;
    if (!strcmp(e, "extern")) return IC_CHOICE_EXT;
    if (!strcmp(e, "template")) return IC_CHOICE_TEMPLATE;
    return -1;
}

/* Device time (ms) of running launches [k0, k1) of G whose role is in rolemask, on the
 * stream: min over reps after one warm-up. < 0 on failure. */
static float time_group(const ic_compiled *c, const ic_gpu *G, int k0, int k1, unsigned rolemask,
                        const ic_CUdeviceptr *bufs, ic_CUdeviceptr ws, ic_CUstream st, void *stream, void **args,
                        void *e0, void *e1) {
    float best = -1;
    for (int rep = 0; rep < 4; rep++) {
        if (rep > 0 && D.EventRecord(e0, st)) return -1;
        for (int k = k0; k < k1; k++) {
            const ic_gkernel *K = &G->k[k];
            if (!(rolemask >> K->role & 1)) continue;
            ic_err e;
            int rc = K->ext > 0 ? run_ext(c, G, K, bufs, stream, &e) : launch(G, K, bufs, ws, st, args, false, &e);
            if (rc < 0) return -1;
        }
        if (rep == 0) continue; /* warm-up: first cuBLASLt plan, caches */
        float ms = 0;
        if (D.EventRecord(e1, st) || D.EventSynchronize(e1) || D.EventElapsedTime(&ms, e0, e1)) return -1;
        if (best < 0 || ms < best) best = ms;
    }
    return best;
}

/* The same decision for every other choice of G with the same template and consumer
 * functions (a repeated layer: its kernels are one function each, gpu_nvptx.c dedupe, and the
 * template's code has the GEMM's shape in it). */
static void share_choice(const ic_gpu *G, int id, int s) {
    ic_CUfunction *fn = calloc((size_t)G->nchoice * 2 + 2, sizeof *fn); /* [2 i]: template, [2 i + 1]: consumer */
    if (!fn) return;
    for (int k = 0; k < G->nkernels; k++) {
        const ic_gkernel *K = &G->k[k];
        if (K->choice > 0 && K->nvar > 0 && K->role != IC_ROLE_EXT)
            fn[2 * (K->choice - 1) + (K->role == IC_ROLE_CONSUMER)] = K->v[0].fn;
    }
    const ic_CUfunction *me = &fn[2 * (id - 1)];
    for (int j = 0; j < G->nchoice && me[0]; j++)
        if (j != id - 1 && fn[2 * j] == me[0] && fn[2 * j + 1] == me[1]) {
            int zero = 0;
            __atomic_compare_exchange_n(&G->choice[j].state, &zero, s, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
        }
    free(fn);
}

/* The choice of the group that starts at launch k (IC_ROLE_EXT): measured once per compiled
 * graph, on scratch buffers in place of the ones the alternatives write (so a consumer that
 * writes over one of its own inputs still reads it intact); the static rule while the stream
 * is being captured, or when timing is not possible. */
static int choose(const ic_compiled *c, const ic_gpu *G, int k, const ic_CUdeviceptr *bufs, ic_CUdeviceptr ws,
                  ic_CUstream st, void *stream, void **args, bool capturing) {
    ic_gchoice *ch = &G->choice[G->k[k].choice - 1];
    int mode = choice_mode();
    if (mode > 0) return mode;
    int s = __atomic_load_n(&ch->state, __ATOMIC_ACQUIRE);
    if (s) return s;
    if (mode < 0 || capturing || !D.EventCreate || !D.EventRecord || !D.EventSynchronize || !D.EventElapsedTime ||
        !D.EventDestroy) {
        __atomic_fetch_add(&gc_n[3], 1, __ATOMIC_RELAXED);
        return ch->dflt;
    }
    int k1 = k + 1;
    while (k1 < G->nkernels && G->k[k1].choice == G->k[k].choice) k1++;
    ic_CUdeviceptr *b2 = malloc((size_t)(c->nbufs + 1) * sizeof *b2);
    ic_CUdeviceptr scratch = 0;
    void *e0 = NULL, *e1 = NULL;
    int64_t total = 0, off[IC_CHOICE_MAXW];
    for (int i = 0; i < ch->nw; i++) {
        off[i] = total;
        total += (ch->wbytes[i] + 255) & ~(int64_t)255;
    }
    float t_ext = -1, t_tpl = -1;
    pthread_mutex_lock(&mu); /* scratch from the caching allocator when there is one (cuMemFree syncs) */
    int ha = have_alloc;
    ic_device_allocator a = alloc_;
    pthread_mutex_unlock(&mu);
    void *handle = NULL;
    size_t bytes = (size_t)(total > 0 ? total : 256);
    if (ha) scratch = (ic_CUdeviceptr)(uintptr_t)a.alloc(bytes, G->device, stream, &handle);
    else if (D.MemAlloc(&scratch, bytes)) scratch = 0;
    if (b2 && scratch && !D.EventCreate(&e0, 0) && !D.EventCreate(&e1, 0)) {
        memcpy(b2, bufs, (size_t)c->nbufs * sizeof *b2);
        for (int i = 0; i < ch->nw; i++) b2[ch->wbuf[i]] = scratch + (ic_CUdeviceptr)off[i];
        t_ext = time_group(c, G, k, k1, 1u << IC_ROLE_EXT | 1u << IC_ROLE_CONSUMER, b2, ws, st, stream, args, e0, e1);
        t_tpl = time_group(c, G, k, k1, 1u << IC_ROLE_TEMPLATE, b2, ws, st, stream, args, e0, e1);
        D.StreamSynchronize(st);
    }
    if (e0) D.EventDestroy(e0);
    if (e1) D.EventDestroy(e1);
    if (scratch && ha) a.release(handle); /* after the sync: nothing of the stream still uses it */
    else if (scratch) D.MemFree(scratch);
    free(b2);
    if (t_ext < 0 || t_tpl < 0) { /* not measurable: the rule, and no more tries */
        __atomic_store_n(&ch->state, ch->dflt, __ATOMIC_RELEASE);
        return ch->dflt;
    }
    ch->us[0] = t_ext * 1000.f;
    ch->us[1] = t_tpl * 1000.f;
    s = t_tpl < t_ext ? IC_CHOICE_TEMPLATE : IC_CHOICE_EXT;
    __atomic_fetch_add(&gc_n[0], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&gc_n[s == IC_CHOICE_TEMPLATE ? 1 : 2], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&ch->state, s, __ATOMIC_RELEASE);
    share_choice(G, G->k[k].choice, s);
    if (ic_config_int(IC_CFG_debug_gemm))
        fprintf(stderr, "torchc GEMM choice %d: %lld multiply-adds, extern call + consumer %.1f us, template %.1f us -> %s\n",
                G->k[k].choice, (long long)ch->macs, ch->us[0], ch->us[1], s == IC_CHOICE_TEMPLATE ? "template" : "extern");
    return s;
}

IC_API int ic_run_stream(const ic_compiled *c, void *const *inputs, void *const *outputs, void *stream,
                         ic_err *err) {
    if (!c->gpu) return ic_run(c, inputs, outputs, err);
    unsigned long long t_all = hs_now(), t0 = t_all;
    const ic_gpu *G = c->gpu;
    if (!G->module && G->nkernels > 0) return fail(err, IC_EINVALID, "%s%s", "compiled for PTX only", "");
    ic_CUstream st = stream;
    ic_CUcontext cur = NULL;
    D.CtxGetCurrent(&cur);
    if (cur != G->ctx) D.CtxSetCurrent(G->ctx);
    int rc = 0;
    /* programmatic dependent launch (G->pdl: the kernels wait for their predecessor first);
     * not while the stream is captured into a CUDA graph: plain launches there */
    int capturing = 1; /* GEMM choices are not timed while capturing either */
    bool cap_known = (G->pdl || G->nchoice > 0) && D.StreamIsCapturing &&
                     !D.StreamIsCapturing(st, &capturing);
    bool pdl = G->pdl && D.LaunchKernelEx && cap_known && capturing == 0;
    ic_CUdeviceptr stackbufs[64];
    ic_CUdeviceptr *bufs = c->nbufs <= 64 ? stackbufs : malloc((size_t)c->nbufs * sizeof *bufs);
    void *args_stack[64];
    void **args = args_stack;
    int maxp = 0;
    for (int k = 0; k < G->nkernels; k++)
        for (int v = 0; v < G->k[k].nvar; v++)
            if (G->k[k].v[v].nparams > maxp) maxp = G->k[k].v[v].nparams;
    if (maxp > 62) args = malloc((size_t)(maxp + 2) * sizeof(void *));
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
        t0 = hs_now();
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
        hs_add(1, t0);
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
    if (lazy_prepare(G, bufs, err) < 0) {
        rc = -1;
        goto done;
    }
    int dec = 0; /* the choice of the current GEMM choice group (its launches are consecutive) */
    for (int k = 0; k < G->nkernels; k++) {
        const ic_gkernel *K = &G->k[k];
        if (K->choice > 0) {
            if (K->role == IC_ROLE_EXT) dec = choose(c, G, k, bufs, ws, st, stream, args, !cap_known || capturing);
            if ((K->role == IC_ROLE_TEMPLATE) != (dec == IC_CHOICE_TEMPLATE)) continue;
        }
        if (K->ext > 0) { /* extern (ATen) call, enqueued on the same stream */
            if (run_ext(c, G, K, bufs, stream, err) < 0) {
                rc = -1;
                break;
            }
            continue;
        }
        if (launch(G, K, bufs, ws, st, args, pdl, err) < 0) {
            rc = -1;
            break;
        }
    }
done:
    t0 = ws_kind ? hs_now() : 0;
    if (ws_kind == 1) {
        a.release(ws_handle);
    } else if (ws_kind == 2) {
        D.MemFreeAsync(ws, st);
    } else if (ws_kind == 3) {
        D.StreamSynchronize(st);
        D.MemFree(ws);
    }
    if (ws_kind) hs_add(1, t0);
    if (bufs && bufs != stackbufs) free(bufs);
    if (args && args != args_stack) free(args);
    if (cur != G->ctx) D.CtxSetCurrent(cur);
    hs_add(0, t_all);
    if (!rc && err) {
        err->code = IC_OK;
        err->msg[0] = 0;
    }
    return rc;
}

/* ---- modules of one kernel (codegen/gpu_scan.c's persistent scan kernels) ------------------ */
int ic_cuda_fn_load(int device, const char *ptx, const char *name, unsigned dsmem, ic_CUcontext *ctx,
                    ic_CUmodule *mod, ic_CUfunction *fn, char *msg, size_t n) {
    if (!ic_cuda_available()) {
        snprintf(msg, n, "%s", D.reason);
        return -1;
    }
    ic_CUcontext cur = NULL;
    D.CtxGetCurrent(&cur);
    if (device_ctx(device, ctx, msg, n)) return -1;
    load_job j;
    memset(&j, 0, sizeof j);
    R_ r = load_image(&j, ptx);
    *mod = NULL;
    if (r) {
        snprintf(msg, n, "loading the PTX: %s%s%.200s", errstr(r), j.log[0] ? ": " : "", j.log);
    } else {
        *mod = j.mod;
        r = D.ModuleGetFunction(fn, j.mod, name);
        if (r) snprintf(msg, n, "no function %s: %s", name, errstr(r));
    }
    if (!r && dsmem > 48 * 1024) {
        r = D.FuncSetAttribute ? D.FuncSetAttribute(*fn, IC_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dsmem) : 1;
        if (r) snprintf(msg, n, "%u bytes of shared memory: %s", dsmem, D.FuncSetAttribute ? errstr(r) : "no cuFuncSetAttribute");
    }
    if (r && *mod) {
        D.ModuleUnload(*mod);
        *mod = NULL;
    }
    if (cur != *ctx) D.CtxSetCurrent(cur);
    return r ? -1 : 0;
}

int ic_cuda_fn_launch(ic_CUcontext ctx, ic_CUfunction fn, unsigned grid, unsigned block, unsigned dsmem,
                      void *stream, void **args, char *msg, size_t n) {
    ic_CUcontext cur = NULL;
    D.CtxGetCurrent(&cur);
    if (cur != ctx) D.CtxSetCurrent(ctx);
    R_ r = D.LaunchKernel(fn, grid, 1, 1, block, 1, 1, dsmem, (ic_CUstream)stream, args, NULL);
    if (cur != ctx) D.CtxSetCurrent(cur);
    if (r) snprintf(msg, n, "launch: %s", errstr(r));
    return r ? -1 : 0;
}

void ic_cuda_fn_unload(ic_CUcontext ctx, ic_CUmodule mod) {
    if (!mod || !D.ok) return;
    ic_CUcontext cur = NULL;
    D.CtxGetCurrent(&cur);
    if (cur != ctx) D.CtxSetCurrent(ctx);
    D.ModuleUnload(mod); /* errors (context gone at exit) are ignored */
    if (cur != ctx) D.CtxSetCurrent(cur);
}
