/* gpu_cache.c — on-disk cache of GPU compilations: launch plan, PTX and cubins, keyed by the graph.
 *
 * A GPU compilation is a deterministic function of (graph text, target sm, multiprocessor
 * count, torchc build, LLVM version); the driver version is part of the key too (DESIGN.md).
 * A hit skips the LLVM O3 + NVPTX back end (most of a GPU compile), and with the cubins
 * (the SASS that ptxas or the driver's linker made when the entry was written) the PTX ->
 * SASS step too: the modules load as they are (runtime/cuda.c, ic_cuda_load).
 *
 * Storage is runtime/diskcache.c (ic_diskcache.h: namespace "ptx", atomic writes,
 * checksums, size cap, TORCHC_CACHE_DIR, TORCHC_CACHE=0 / TORCHC_DISK_CACHE=0). The blob:
 *   "TCGPU008" | key (u32 length + bytes, compared in full: no trust in the 128-bit hash) |
 *   i64 ws_size | i32 sm, nkernels, nbufs | i64 scratch_off[nbufs] | i32 nchoice, per GEMM
 *   choice: i32 dflt, i64 macs, i32 nw, wbuf[nw], i64 wbytes[nw] | per kernel: i32 choice,
 *   role, split_final, nvar (< 0: an extern call), per variant: name[48], u32 grid, block,
 *   i32 vec, nparams, params[], nalign, align_buf[], align_bytes[], i64 part_off, i32 cl,
 *   u32 dsmem, i32 lazy, ctr | u32 ptx length + PTX text | u32 nmods (0, or the PTX's module count) |
 *   i32 cubin_sm | per module: u32 length + cubin bytes (length 0: none for that module) |
 *   u32 length + the lazy fallbacks' bitcode (0 when no variant is lazy).
 * Every read is bounds-checked; a short or mismatching blob (an older "TCGPU007" one too) is
 * a miss (rebuilt and put again). A cubin is not checked here: one the driver refuses is
 * recompiled from its PTX (ic_cuda_load) and the entry put again (gpu_nvptx.c, from_cache).
 * Errors are never reported: the cache is an optimization only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/gpu.h"
#include "../ic_diskcache.h"

#define MAGIC "TCGPU008"
#define NS "ptx"

int ic_gcache_hits;       /* entries read back (tests) */
int ic_gcache_cubin_hits; /* modules loaded from their cached cubin (runtime/cuda.c; tests) */

IC_API long ic_gcache_count(int which) {
    return __atomic_load_n(which ? &ic_gcache_cubin_hits : &ic_gcache_hits, __ATOMIC_RELAXED);
}

int ic_gcache_enabled(void) { return ic_diskcache_enabled(); }

/* The storage key: the full key text and the build of this binary. */
static ic_dkey dkey(const char *key) {
    ic_dkey k = {0, 0};
    ic_dkey_mix_str(&k, MAGIC);
    ic_dkey_mix_str(&k, key);
    ic_dkey_build_id(&k);
    return k;
}

/* ---- serialization ------------------------------------------------------------------------- */
typedef struct wbuf {
    char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *w, const void *p, size_t n) {
    if (w->oom || !n) return; /* n == 0: p may be NULL (a module without a cubin) */
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

void ic_gcache_put(const char *key, const ic_gpu *G, int64_t ws_size) {
    if (!ic_gcache_enabled() || !G || !G->ptx) return;
    wbuf w = {0};
    put(&w, MAGIC, 8);
    uint32_t kl = (uint32_t)strlen(key);
    put(&w, &kl, 4);
    put(&w, key, kl);
    put64(&w, ws_size);
    put32(&w, G->sm);
    put32(&w, G->nkernels);
    put32(&w, G->nbufs);
    for (int b = 0; b < G->nbufs; b++) put64(&w, G->scratch_off ? G->scratch_off[b] : -1);
    put32(&w, G->nchoice);
    for (int i = 0; i < G->nchoice; i++) {
        const ic_gchoice *ch = &G->choice[i];
        put32(&w, ch->dflt);
        put64(&w, ch->macs);
        put32(&w, ch->nw);
        for (int j = 0; j < ch->nw; j++) put32(&w, ch->wbuf[j]);
        for (int j = 0; j < ch->nw; j++) put64(&w, ch->wbytes[j]);
    }
    for (int k = 0; k < G->nkernels; k++) {
        const ic_gkernel *K = &G->k[k];
        put32(&w, K->choice);
        put32(&w, K->role);
        put32(&w, K->split_final);
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
            put32(&w, gv->cl);
            put32(&w, gv->dsmem);
            put32(&w, gv->lazy);
            put32(&w, gv->ctr);
        }
    }
    uint32_t pl = (uint32_t)strlen(G->ptx);
    put(&w, &pl, 4);
    put(&w, G->ptx, pl);
    int nc = G->cubin && G->cubin_len ? G->ncubin : 0;
    put32(&w, nc);
    put32(&w, G->cubin_sm);
    for (int i = 0; i < nc; i++) {
        uint32_t cl = G->cubin[i] && G->cubin_len[i] <= UINT32_MAX ? (uint32_t)G->cubin_len[i] : 0;
        put(&w, &cl, 4);
        put(&w, G->cubin[i], cl);
    }
    uint32_t ll = G->lazy_bc && G->lazy_n <= UINT32_MAX ? (uint32_t)G->lazy_n : 0;
    put(&w, &ll, 4);
    put(&w, G->lazy_bc, ll);
    if (w.oom) {
        free(w.p);
        return;
    }
    ic_diskcache_put(NS, dkey(key), w.p, w.n);
    free(w.p);
}

/* A new ic_gpu (module not loaded) and the workspace size, or NULL on a miss. */
ic_gpu *ic_gcache_get(const char *key, int nbufs, int64_t *ws_size) {
    if (!ic_gcache_enabled()) return NULL;
    void *blob = NULL;
    size_t len = 0;
    if (ic_diskcache_get(NS, dkey(key), &blob, &len)) return NULL;
    char *data = blob;
    ic_gpu *G = NULL;
    if (len < 8 || memcmp(data, MAGIC, 8)) goto miss;
    rbuf r = {data, len, 8, 0};
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
    int nch = get32(&r);
    if (r.bad || nch < 0 || nch > G->nkernels) goto miss;
    if (nch) {
        G->choice = calloc((size_t)nch, sizeof *G->choice);
        if (!G->choice) goto miss;
        G->nchoice = nch;
    }
    for (int i = 0; i < nch && !r.bad; i++) {
        ic_gchoice *ch = &G->choice[i];
        ch->dflt = get32(&r);
        ch->macs = get64(&r);
        ch->nw = get32(&r);
        if (ch->dflt < IC_CHOICE_EXT || ch->dflt > IC_CHOICE_TEMPLATE || ch->nw < 1 || ch->nw > IC_CHOICE_MAXW) goto miss;
        for (int j = 0; j < ch->nw; j++)
            if ((ch->wbuf[j] = get32(&r)) < 0 || ch->wbuf[j] >= nbufs) r.bad = 1;
        for (int j = 0; j < ch->nw; j++)
            if ((ch->wbytes[j] = get64(&r)) < 0) r.bad = 1;
    }
    int nlazy = 0; /* variants in the lazy fallbacks' bitcode: it must be there */
    for (int k = 0; k < G->nkernels && !r.bad; k++) {
        ic_gkernel *K = &G->k[k];
        K->choice = get32(&r);
        K->role = get32(&r);
        K->split_final = get32(&r);
        if (K->split_final != 0 && K->split_final != 1) goto miss;
        if (K->choice < 0 || K->choice > nch || K->role < 0 || K->role > IC_ROLE_CONSUMER || (K->choice > 0) != (K->role > 0))
            goto miss;
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
            gv->cl = get32(&r);
            gv->dsmem = get32(&r);
            gv->lazy = get32(&r);
            nlazy += gv->lazy != 0;
            if (gv->lazy != 0 && gv->lazy != 1) r.bad = 1;
            gv->ctr = get32(&r);
            if (gv->ctr != 0 && (gv->ctr != 1 || gv->part_off < 0)) r.bad = 1;
            G->nctr += gv->ctr;
            if (gv->block == 0 || gv->block > 1024 || gv->cl < 1 || gv->cl > 8 || gv->dsmem > 227 * 1024) r.bad = 1;
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
    int nmods = 1; /* the PTX's modules: the cubins must be as many */
    const size_t sl = strlen(IC_PTX_SEP);
    for (const char *s = strstr(G->ptx, IC_PTX_SEP); s; s = strstr(s + sl, IC_PTX_SEP)) nmods++;
    int nc = get32(&r);
    G->cubin_sm = get32(&r);
    if (r.bad || (nc != 0 && nc != nmods)) goto miss;
    if (nc) {
        G->cubin = calloc((size_t)nc, sizeof *G->cubin);
        G->cubin_len = calloc((size_t)nc, sizeof *G->cubin_len);
        if (!G->cubin || !G->cubin_len) goto miss;
        G->ncubin = nc; /* freed by ic_gpu_free from here on */
    }
    for (int i = 0; i < nc; i++) {
        uint32_t cl = 0;
        get(&r, &cl, 4);
        if (r.bad || cl > len - r.at) goto miss;
        if (!cl) continue;
        if (!(G->cubin[i] = malloc(cl))) goto miss;
        memcpy(G->cubin[i], data + r.at, cl);
        G->cubin_len[i] = cl;
        r.at += cl;
    }
    uint32_t ll = 0;
    get(&r, &ll, 4);
    if (r.bad || ll > len - r.at || (nlazy > 0) != (ll > 0)) goto miss;
    if (ll) {
        if (!(G->lazy_bc = malloc(ll))) goto miss;
        memcpy(G->lazy_bc, data + r.at, ll);
        G->lazy_n = ll;
        r.at += ll;
    }
    if (r.at != len) goto miss;
    free(data);
    __atomic_fetch_add(&ic_gcache_hits, 1, __ATOMIC_RELAXED);
    return G;
miss:
    free(data);
    if (G) ic_gpu_free(G);
    return NULL;
}
