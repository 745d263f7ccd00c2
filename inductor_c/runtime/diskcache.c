/* diskcache.c — the persistent blob cache (ic_diskcache.h has the contract and the format).
 *
 * Requires only libc/POSIX. Every failure is a miss or a skipped write, counted in the
 * stats; nothing here aborts or reports an error to the compiler.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>

#include "../ic_config.h"
#include "../ic_diskcache.h"
#include "../ic_internal.h"

#define DC_MAGIC 0x43444354u /* "TCDC" little-endian */
#define DC_VERSION 2u /* 2: the payload hash covers the key and the size */
#define DC_HDR 40

static _Atomic uint64_t st_hits, st_misses, st_writes, st_rejected, st_errors, st_evicted;
static atomic_uint tmp_counter;
static _Atomic uint64_t written; /* bytes put since the last size-cap scan */

/* ---- keys ------------------------------------------------------------------------------ */
static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t fmix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return k;
}

void ic_dkey_mix(ic_dkey *key, const void *data, size_t n) {
    const unsigned char *p = data;
    const uint64_t c1 = 0x87c37b91114253d5ull, c2 = 0x4cf5ad432745937full;
    uint64_t h1 = key->lo ^ 0x9e3779b97f4a7c15ull, h2 = key->hi;
    size_t nb = n / 16;
    for (size_t i = 0; i <= nb; i++) {
        uint64_t k1 = 0, k2 = 0;
        if (i < nb) {
            memcpy(&k1, p + 16 * i, 8);
            memcpy(&k2, p + 16 * i + 8, 8);
        } else {
            unsigned char t[16] = {0};
            memcpy(t, p + 16 * i, n % 16);
            memcpy(&k1, t, 8);
            memcpy(&k2, t + 8, 8);
        }
        k1 *= c1;
        k1 = rotl(k1, 31);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl(h1, 27) + h2;
        h1 = h1 * 5 + 0x52dce729;
        k2 *= c2;
        k2 = rotl(k2, 33);
        k2 *= c1;
        h2 ^= k2;
        h2 = rotl(h2, 31) + h1;
        h2 = h2 * 5 + 0x38495ab5;
    }
    h1 ^= (uint64_t)n;
    h2 ^= (uint64_t)n;
    h1 += h2;
    h2 += h1;
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 += h2;
    h2 += h1;
    key->lo = h1;
    key->hi = h2;
}

void ic_dkey_mix_str(ic_dkey *k, const char *s) { ic_dkey_mix(k, s ? s : "", s ? strlen(s) + 1 : 1); }

uint64_t ic_hash64(const void *data, size_t n) {
    ic_dkey k = {0, 0};
    ic_dkey_mix(&k, data, n);
    return k.lo;
}

static ic_dkey build_key;
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

static void build_init(void) {
    ic_dkey *k = &build_key;
    Dl_info info;
    struct stat st;
    memset(&info, 0, sizeof info);
    if (dladdr((void *)&ic_dkey_build_id, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0) {
        int64_t v[4] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec,
                        (int64_t)st.st_ino};
        ic_dkey_mix_str(k, info.dli_fname);
        ic_dkey_mix(k, v, sizeof v);
    } else {
        ic_dkey_mix_str(k, "unknown-build " __DATE__ " " __TIME__);
    }
}

void ic_dkey_build_id(ic_dkey *k) {
    pthread_once(&build_once, build_init);
    ic_dkey_mix(k, &build_key, sizeof build_key);
}

void ic_dkey_hex(ic_dkey k, char out[33]) { snprintf(out, 33, "%016llx%016llx", (unsigned long long)k.hi, (unsigned long long)k.lo); }

/* ---- configuration ----------------------------------------------------------------------- */
/* torchc.config (ic_config.h): cache, disk_cache, cache_dir, cache_max_mb */
bool ic_diskcache_enabled(void) { return ic_config_int(IC_CFG_cache) && ic_config_int(IC_CFG_disk_cache); }

static int base_dir(char *out, size_t n) {
    char dir[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_cache_dir, dir);
    const char *d;
    int r;
    if (dir[0]) r = snprintf(out, n, "%s", dir);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d) r = snprintf(out, n, "%s/torchc", d);
    else if ((d = getenv("HOME")) && *d) r = snprintf(out, n, "%s/.cache/torchc", d);
    else return -1;
    return r > 0 && (size_t)r < n ? 0 : -1;
}

void ic_diskcache_dir(char *out, size_t n) {
    if (n == 0) return;
    if (!ic_diskcache_enabled() || base_dir(out, n)) out[0] = 0;
}

static bool valid_ns(const char *ns) {
    size_t i = 0;
    if (!ns) return false;
    for (; ns[i]; i++)
        if (!((ns[i] >= 'a' && ns[i] <= 'z') || (ns[i] >= '0' && ns[i] <= '9') || ns[i] == '_') || i >= 15)
            return false;
    return i > 0;
}

/* cache_max_mb: a positive number of MiB; beyond 2^44 MiB (or inf) no cap; anything else (0,
 * negative, NaN, garbage) the default 1024. */
static uint64_t cap_bytes(void) {
    char e[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_cache_max_mb, e);
    char *end = NULL;
    double mb = *e ? strtod(e, &end) : 1024.0;
    if (*e && (end == e || *end)) mb = 1024.0;
    if (!(mb > 0)) mb = 1024.0;
    if (mb >= 17592186044416.0) return UINT64_MAX; /* 2^44 MiB = 2^64 bytes */
    double b = mb * 1048576.0;
    return b < 1.0 ? 1 : (uint64_t)b;
}

/* The payload hash is keyed by the entry's key and size: a header copied from another entry,
 * or a payload moved under another name, does not pass. */
static uint64_t payload_hash(ic_dkey key, const void *data, size_t n) {
    ic_dkey h = key;
    uint64_t len = (uint64_t)n;
    ic_dkey_mix(&h, &len, sizeof len);
    ic_dkey_mix(&h, data, n);
    return h.lo ^ h.hi;
}

/* Cache files are opened without following a symbolic link and without blocking (a FIFO
 * planted at an entry's path), then checked to be regular files. */
#define DC_OPEN_FLAGS (O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)

/* dir/ns/hex (or dir/ns when key is NULL) */
static int entry_path(char *out, size_t n, const char *ns, const ic_dkey *key) {
    char dir[3072];
    if (base_dir(dir, sizeof dir)) return -1;
    int r;
    if (key) {
        char hex[33];
        ic_dkey_hex(*key, hex);
        r = snprintf(out, n, "%s/%s/%s", dir, ns, hex);
    } else {
        r = snprintf(out, n, "%s/%s", dir, ns);
    }
    return r > 0 && (size_t)r < n ? 0 : -1;
}

static int mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int r = mkdir(path, 0755);
        *p = '/';
        if (r && errno != EEXIST) return -1;
    }
    if (mkdir(path, 0755) && errno != EEXIST) return -1;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(path, W_OK | X_OK) == 0 ? 0 : -1;
}

static int read_all(int fd, void *buf, size_t n) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int ic_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* ---- get / put --------------------------------------------------------------------------- */
int ic_diskcache_get(const char *ns, ic_dkey key, void **data, size_t *n) {
    *data = NULL;
    *n = 0;
    if (!ic_diskcache_enabled() || !valid_ns(ns)) return -1;
    char path[4096];
    if (entry_path(path, sizeof path, ns, &key)) return -1;
    int fd = open(path, O_RDONLY | DC_OPEN_FLAGS);
    if (fd < 0) {
        if (errno == ELOOP) st_rejected++; /* a symbolic link: never followed */
        st_misses++;
        return -1;
    }
    struct stat st;
    uint64_t hdr[5];
    uint32_t mv[2];
    void *buf = NULL;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < DC_HDR) goto bad;
    if (read_all(fd, mv, 8) || read_all(fd, hdr, 32)) goto bad;
    if (mv[0] != DC_MAGIC || mv[1] != DC_VERSION || hdr[0] != key.lo || hdr[1] != key.hi) goto bad;
    if (hdr[2] != (uint64_t)st.st_size - DC_HDR) goto bad;
    buf = malloc(hdr[2] ? hdr[2] : 1);
    if (!buf) {
        close(fd);
        st_misses++;
        return -1;
    }
    if (read_all(fd, buf, hdr[2]) || payload_hash(key, buf, hdr[2]) != hdr[3]) goto bad;
    futimens(fd, NULL); /* recently used: the size cap evicts by mtime */
    close(fd);
    *data = buf;
    *n = hdr[2];
    st_hits++;
    return 0;
bad:
    free(buf);
    close(fd);
    unlink(path);
    st_rejected++;
    st_misses++;
    return -1;
}

typedef struct dent {
    time_t mtime;
    long nsec;
    uint64_t size;
    char name[40];
} dent;

static int by_age(const void *a, const void *b) {
    const dent *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
    return x->nsec < y->nsec ? -1 : x->nsec > y->nsec;
}

/* Size cap over one namespace directory; stale temporaries (a crashed writer) go too. */
static void evict(const char *dir, uint64_t cap) {
    DIR *d = opendir(dir);
    if (!d) return;
    dent *v = NULL;
    size_t nv = 0, cv = 0;
    uint64_t total = 0;
    char path[4400];
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2]))) continue;
        struct stat st;
        size_t ln = strlen(e->d_name);
        if (ln >= sizeof v->name) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) || !S_ISREG(st.st_mode)) continue; /* links, FIFOs: not ours */
        if (e->d_name[0] == '.') {
            if (!strncmp(e->d_name, ".tmp.", 5) && now - st.st_mtime > 3600) unlink(path);
            continue;
        }
        if (nv == cv) {
            size_t nc = cv ? 2 * cv : 64;
            dent *nvp = realloc(v, nc * sizeof *v);
            if (!nvp) break;
            v = nvp;
            cv = nc;
        }
        v[nv].mtime = st.st_mtim.tv_sec;
        v[nv].nsec = st.st_mtim.tv_nsec;
        v[nv].size = (uint64_t)st.st_size;
        memcpy(v[nv].name, e->d_name, ln + 1);
        total += v[nv++].size;
    }
    closedir(d);
    if (total > cap) {
        qsort(v, nv, sizeof *v, by_age);
        for (size_t i = 0; i < nv && total > cap / 4 * 3; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
            if (unlink(path) == 0) {
                total -= v[i].size;
                st_evicted++;
            }
        }
    }
    free(v);
}

int ic_diskcache_put(const char *ns, ic_dkey key, const void *data, size_t n) {
    if (!ic_diskcache_enabled() || !valid_ns(ns)) return -1;
    uint64_t cap = cap_bytes();
    if ((uint64_t)n + DC_HDR > cap) return -1;
    char dir[4096], path[4200], tmp[4300];
    if (entry_path(dir, sizeof dir, ns, NULL)) return -1;
    if (mkdirs(dir)) {
        st_errors++;
        return -1;
    }
    char hex[33];
    ic_dkey_hex(key, hex);
    snprintf(path, sizeof path, "%s/%s", dir, hex);
    snprintf(tmp, sizeof tmp, "%s/.tmp.%s.%ld.%u", dir, hex, (long)getpid(), atomic_fetch_add(&tmp_counter, 1));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | DC_OPEN_FLAGS, 0644);
    if (fd < 0) {
        st_errors++;
        return -1;
    }
    uint32_t mv[2] = {DC_MAGIC, DC_VERSION};
    uint64_t hdr[4] = {key.lo, key.hi, (uint64_t)n, payload_hash(key, data, n)};
    int bad = ic_write_all(fd, mv, sizeof mv) || ic_write_all(fd, hdr, sizeof hdr) || ic_write_all(fd, data, n);
    bad |= close(fd) != 0;
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        st_errors++;
        return -1;
    }
    st_writes++;
    /* The size cap costs a stat of every entry: run it after cap/8 bytes written by this
     * process, or when no process has run it for an hour (the mtime of dir/.evicted). */
    uint64_t w = atomic_fetch_add(&written, (uint64_t)n + DC_HDR) + (uint64_t)n + DC_HDR;
    bool due = w >= cap / 8;
    char mark[4200];
    snprintf(mark, sizeof mark, "%s/.evicted", dir);
    struct stat ms;
    if (!due && (lstat(mark, &ms) || time(NULL) - ms.st_mtime > 3600)) due = true;
    if (due) {
        atomic_store(&written, 0);
        int fd = open(mark, O_WRONLY | O_CREAT | DC_OPEN_FLAGS, 0644);
        if (fd >= 0) {
            struct stat fs;
            if (fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode)) futimens(fd, NULL);
            close(fd);
        }
        evict(dir, cap);
    }
    return 0;
}

void ic_diskcache_get_stats(ic_diskcache_stats *s) {
    s->hits = st_hits;
    s->misses = st_misses;
    s->writes = st_writes;
    s->rejected = st_rejected;
    s->errors = st_errors;
    s->evicted = st_evicted;
}

void ic_diskcache_reset_stats(void) { st_hits = st_misses = st_writes = st_rejected = st_errors = st_evicted = 0; }
