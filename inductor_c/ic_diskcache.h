/* ic_diskcache.h — a persistent cache of blobs (CPU objects, PTX, cubins) by 128-bit key.
 *
 * Internal to inductor_c (no Python, only libc). Entries live in
 *   $TORCHC_CACHE_DIR (else $XDG_CACHE_HOME/torchc, else ~/.cache/torchc) / <ns> / <32 hex>
 * where ns is a short name of the kind of blob ("cpu", "ptx", "cubin": [a-z0-9_], < 16 chars).
 * An entry file is
 *
 *   offset  0  magic "TCDC"        4  format version (2)
 *           8  key.lo  16 key.hi   24  payload size   32  hash of (key, size, payload)
 *          40  payload ...
 *
 * Writes go to a temporary file in the same directory and are renamed over the entry, so a
 * reader sees a whole entry or none. A reader that finds a bad entry (short, wrong magic,
 * key, size or checksum) deletes it and reports a miss: the caller rebuilds and puts again.
 * A directory that cannot be created or written disables the cache quietly (counted in
 * `errors`). The size cap (TORCHC_CACHE_MAX_MB, default 1024) is enforced by a scan of ns's
 * entries after a put, once this process has written cap/8 bytes since its last scan or when
 * no process has scanned for an hour (mtime of ns/.evicted): above the cap, the least
 * recently used entries (by mtime, which a hit refreshes) go until it is under 3/4 of it.
 *
 * Files are opened with O_NOFOLLOW | O_NONBLOCK and must be regular (a planted symlink or FIFO
 * is a miss, never followed, never waited on).
 * TORCHC_CACHE=0 (everything off) or TORCHC_DISK_CACHE=0 (only this cache) disable it.
 * Keys must cover everything the blob depends on: build the key with ic_dkey_mix over the
 * input text, options and versions (ic_dkey_build_id covers the inductor_c binary itself).
 * Thread-safe; never aborts.
 */
#ifndef IC_DISKCACHE_H
#define IC_DISKCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ic_dkey {
    uint64_t lo, hi;
} ic_dkey;

/* Folds n bytes into the key (MurmurHash3 x64-128 style mixing; order matters). A zero
 * key is a fine start. */
void ic_dkey_mix(ic_dkey *k, const void *data, size_t n);
void ic_dkey_mix_str(ic_dkey *k, const char *s); /* the string and its terminator */
/* Folds in an identity of the binary that holds inductor_c (path, size, mtime of the .so or
 * executable), so a rebuilt compiler never reads code of an older one. */
void ic_dkey_build_id(ic_dkey *k);
void ic_dkey_hex(ic_dkey k, char out[33]);
uint64_t ic_hash64(const void *data, size_t n);

/* Whether the environment enables the disk cache (TORCHC_CACHE / TORCHC_DISK_CACHE). */
bool ic_diskcache_enabled(void);
/* Hit: 0, *data (malloc'd, caller frees) and *n set. Miss, bad entry or disabled: -1. */
int ic_diskcache_get(const char *ns, ic_dkey key, void **data, size_t *n);
/* 0 stored; -1 not stored (disabled, unwritable, too large). Never fails the caller. */
int ic_diskcache_put(const char *ns, ic_dkey key, const void *data, size_t n);
/* The directory in use (for messages/tests): writes at most n bytes; "" when disabled. */
void ic_diskcache_dir(char *out, size_t n);

typedef struct ic_diskcache_stats {
    uint64_t hits, misses, writes;
    uint64_t rejected; /* bad entries found (and removed) */
    uint64_t errors;   /* I/O failures: unwritable directory, short writes */
    uint64_t evicted;  /* entries removed by the size cap */
} ic_diskcache_stats;
void ic_diskcache_get_stats(ic_diskcache_stats *s);
void ic_diskcache_reset_stats(void);

#ifdef __cplusplus
}
#endif
#endif
