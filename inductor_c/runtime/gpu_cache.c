/* gpu_cache.c — on-disk cache of GPU compilations: PTX + launch plan, keyed by the graph.
 *
 * A GPU compilation is a deterministic function of (graph text, target sm, multiprocessor
 * count, torchc build, LLVM version); the driver version is part of the key too (DESIGN.md).
 * A hit skips the LLVM O3 + NVPTX back end (most of a GPU compile); the driver's own
 * compute cache already keeps the PTX -> SASS step.
 *
 * Layout: $TORCHC_CACHE_DIR (else $XDG_CACHE_HOME/torchc, else ~/.cache/torchc) / gpu /
 * <fnv64(key)>.tcg. One file per entry:
 *   "TCGPU001" | u64 fnv64(payload) | u64 payload bytes | payload
 *   payload: key (u32 length + bytes, compared in full: no trust in the hash) | i64 ws_size |
 *            i32 sm, nkernels, nbufs | i64 scratch_off[nbufs] | per kernel: i32 nvar (< 0: extern
 *            call -nvar, nothing else), per
 *            variant: name[48], u32 grid, block, i32 vec, nparams, params[], nalign,
 *            align_buf[], align_bytes[], i64 part_off | u32 ptx length + PTX text.
 * Every read is bounds-checked; a short, corrupted or mismatching file is a miss (and is
 * rewritten by the next store). Stores write a temporary file and rename() it, so readers
 * never see half a file. TORCHC_CACHE=0 turns the cache off. Errors are never reported:
 * the cache is an optimization only.
 *
 * Prefix ic_gcache_. When runtime/diskcache.c (generic byte store) lands, ic_gcache_get/put
 * become its callers; the serialization stays here.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/gpu.h"

#define MAGIC "TCGPU001"

int ic_gcache_hits; /* entries read back (tests) */

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}
#define FNV0 1469598103934665603ull

int ic_gcache_enabled(void) {
    const char *e = getenv("TORCHC_CACHE");
    return !(e && strcmp(e, "0") == 0);
}

/* The cache directory (created), or -1. */
static int cache_dir(char *out, size_t n) {
    const char *d = getenv("TORCHC_CACHE_DIR");
    char base[1024];
    if (d && *d) snprintf(base, sizeof base, "%s", d);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d) snprintf(base, sizeof base, "%s/torchc", d);
    else if ((d = getenv("HOME")) && *d) snprintf(base, sizeof base, "%s/.cache/torchc", d);
    else return -1;
    /* mkdir -p of base, then base/gpu */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", base);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
    if ((size_t)snprintf(out, n, "%s/gpu", base) >= n) return -1;
    if (mkdir(out, 0755) && errno != EEXIST) return -1;
    return 0;
}

/* Build identity: the object holding this code (path, size, mtime), so a rebuilt torchc
 * never reads entries of another build. */
void ic_gcache_build_id(char *out, size_t n) {
    Dl_info di;
    struct stat st;
    if (dladdr((void *)&ic_gcache_build_id, &di) && di.dli_fname && stat(di.dli_fname, &st) == 0)
        snprintf(out, n, "%s:%lld:%lld", di.dli_fname, (long long)st.st_size, (long long)st.st_mtime);
    else
        snprintf(out, n, "unknown-build");
}

/* ---- serialization ------------------------------------------------------------------------- */
typedef struct wbuf {
    char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *w, const void *p, size_t n) {
    if (w->oom) return;
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        while (cap < w->n + n) cap *= 2;
        char *q = realloc(w->p, cap);
        if (!q) {
            w->oom = 1;
            return;
        }
        w->p = q;
        w->cap = cap;
    }
    memcpy(w->p + w->n, p, n);
    w->n += n;
}
static void put32(wbuf *w, int32_t v) { put(w, &v, 4); }
static void put64(wbuf *w, int64_t v) { put(w, &v, 8); }

typedef struct rbuf {
    const char *p;
    size_t n, at;
    int bad;
} rbuf;

static void get(rbuf *r, void *out, size_t n) {
    if (r->bad || n > r->n - r->at) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p + r->at, n);
    r->at += n;
}
static int32_t get32(rbuf *r) {
    int32_t v;
    get(r, &v, 4);
    return v;
}
static int64_t get64(rbuf *r) {
    int64_t v;
    get(r, &v, 8);
    return v;
}
/* an int array of n entries in [0, hi) (hi < 0: any value) */
static int *get_ints(rbuf *r, int n, int hi) {
    if (n < 0 || n > (1 << 20)) {
        r->bad = 1;
        return NULL;
    }
    int *a = malloc(((size_t)n + 1) * sizeof *a);
    if (!a) {
        r->bad = 1;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        a[i] = get32(r);
        if (hi >= 0 && (a[i] < 0 || a[i] >= hi)) r->bad = 1;
    }
    return a;
}

static void path_of(const char *key, char *out, size_t n, const char *dir) {
    snprintf(out, n, "%s/%016llx.tcg", dir, (unsigned long long)fnv(key, strlen(key), FNV0));
}

void ic_gcache_put(const char *key, const ic_gpu *G, int64_t ws_size) {
    char dir[1100], path[1200], tmp[1300];
    if (!ic_gcache_enabled() || !G || !G->ptx || cache_dir(dir, sizeof dir)) return;
    wbuf w = {0};
    uint32_t kl = (uint32_t)strlen(key);
    put(&w, &kl, 4);
    put(&w, key, kl);
    put64(&w, ws_size);
    put32(&w, G->sm);
    put32(&w, G->nkernels);
    put32(&w, G->nbufs);
    for (int b = 0; b < G->nbufs; b++) put64(&w, G->scratch_off ? G->scratch_off[b] : -1);
    for (int k = 0; k < G->nkernels; k++) {
        const ic_gkernel *K = &G->k[k];
        put32(&w, K->ext > 0 ? -K->ext : K->nvar); /* < 0: an extern call, no variants */
        for (int v = 0; v < K->nvar; v++) {
            const ic_gvariant *gv = &K->v[v];
            put(&w, gv->name, sizeof gv->name);
            put32(&w, (int32_t)gv->grid);
            put32(&w, (int32_t)gv->block);
            put32(&w, gv->vec);
            put32(&w, gv->nparams);
            for (int i = 0; i < gv->nparams; i++) put32(&w, gv->params[i]);
            put32(&w, gv->nalign);
            for (int i = 0; i < gv->nalign; i++) put32(&w, gv->align_buf[i]);
            for (int i = 0; i < gv->nalign; i++) put32(&w, gv->align_bytes[i]);
            put64(&w, gv->part_off);
        }
    }
    uint32_t pl = (uint32_t)strlen(G->ptx);
    put(&w, &pl, 4);
    put(&w, G->ptx, pl);
    if (w.oom) {
        free(w.p);
        return;
    }
    path_of(key, path, sizeof path, dir);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (f) {
        uint64_t sum = fnv(w.p, w.n, FNV0), len = w.n;
        int ok = fwrite(MAGIC, 1, 8, f) == 8 && fwrite(&sum, 8, 1, f) == 1 && fwrite(&len, 8, 1, f) == 1 &&
                 fwrite(w.p, 1, w.n, f) == w.n;
        ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp, path)) unlink(tmp);
    }
    free(w.p);
}

/* A new ic_gpu (module not loaded) and the workspace size, or NULL on a miss. */
ic_gpu *ic_gcache_get(const char *key, int nbufs, int64_t *ws_size) {
    char dir[1100], path[1200];
    if (!ic_gcache_enabled() || cache_dir(dir, sizeof dir)) return NULL;
    path_of(key, path, sizeof path, dir);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char magic[8];
    uint64_t sum = 0, len = 0;
    char *data = NULL;
    ic_gpu *G = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, MAGIC, 8) || fread(&sum, 8, 1, f) != 1 ||
        fread(&len, 8, 1, f) != 1 || len > ((uint64_t)1 << 31))
        goto miss;
    data = malloc(len + 1);
    if (!data || fread(data, 1, len, f) != len || fnv(data, len, FNV0) != sum) goto miss;
    rbuf r = {data, len, 0, 0};
    uint32_t kl = 0;
    get(&r, &kl, 4);
    if (r.bad || kl != strlen(key) || kl > len - r.at || memcmp(data + r.at, key, kl)) goto miss;
    r.at += kl;
    G = calloc(1, sizeof *G);
    if (!G) goto miss;
    *ws_size = get64(&r);
    G->sm = get32(&r);
    G->nkernels = get32(&r);
    G->nbufs = get32(&r);
    if (r.bad || G->nbufs != nbufs || G->nkernels < 0 || G->nkernels > (1 << 16) || *ws_size < 0) goto miss;
    G->scratch_off = malloc(((size_t)nbufs + 1) * sizeof(int64_t));
    G->k = calloc((size_t)G->nkernels + 1, sizeof(ic_gkernel));
    if (!G->scratch_off || !G->k) goto miss;
    for (int b = 0; b < nbufs; b++) G->scratch_off[b] = get64(&r);
    for (int k = 0; k < G->nkernels && !r.bad; k++) {
        ic_gkernel *K = &G->k[k];
        int nvar = get32(&r);
        if (nvar < 0 && nvar >= -(1 << 16)) {
            K->ext = -nvar;
            continue;
        }
        if (nvar < 1 || nvar > 2) goto miss;
        for (int v = 0; v < nvar && !r.bad; v++) {
            ic_gvariant *gv = &K->v[v];
            K->nvar = v + 1; /* freed by ic_gpu_free from here on */
            get(&r, gv->name, sizeof gv->name);
            gv->name[sizeof gv->name - 1] = 0;
            gv->grid = (unsigned)get32(&r);
            gv->block = (unsigned)get32(&r);
            gv->vec = get32(&r);
            gv->nparams = get32(&r);
            gv->params = get_ints(&r, gv->nparams, nbufs);
            gv->nalign = get32(&r);
            gv->align_buf = get_ints(&r, gv->nalign, nbufs);
            gv->align_bytes = get_ints(&r, gv->nalign, -1);
            gv->part_off = get64(&r);
            if (gv->block == 0 || gv->block > 1024) r.bad = 1;
        }
    }
    uint32_t pl = 0;
    get(&r, &pl, 4);
    if (r.bad || pl > len - r.at) goto miss;
    G->ptx = malloc((size_t)pl + 1);
    if (!G->ptx) goto miss;
    memcpy(G->ptx, data + r.at, pl);
    G->ptx[pl] = 0;
    r.at += pl;
    if (r.at != len) goto miss;
    fclose(f);
    free(data);
    __atomic_fetch_add(&ic_gcache_hits, 1, __ATOMIC_RELAXED);
    return G;
miss:
    fclose(f);
    free(data);
    if (G) ic_gpu_free(G);
    return NULL;
}
