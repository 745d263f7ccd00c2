/* test_diskcache.c — the persistent blob cache (inductor_c/runtime/diskcache.c): round trip,
 * keys, bad entries (truncated, flipped byte, wrong key, garbage) rejected and removed,
 * unwritable directories, TORCHC_CACHE=0, the size cap. Runs in a fresh temp directory.
 * Exit status: number of failures.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ic_diskcache.h"
#include "harness.h"


static char root[256];

static ic_dkey key_of(const char *s) {
    ic_dkey k = {0, 0};
    ic_dkey_mix_str(&k, s);
    return k;
}

static void entry_file(char *out, size_t n, const char *ns, ic_dkey k) {
    char hex[33];
    ic_dkey_hex(k, hex);
    snprintf(out, n, "%s/%s/%s", root, ns, hex);
}

static int count_files(const char *ns) {
    char d[512];
    snprintf(d, sizeof d, "%s/%s", root, ns);
    DIR *dd = opendir(d);
    if (!dd) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)))
        if (e->d_name[0] != '.') n++;
    closedir(dd);
    return n;
}

static void rm_rf(const char *p) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    if (system(cmd)) fprintf(stderr, "rm failed\n");
}

static void test_keys(void) {
    ic_dkey a = key_of("graph a"), b = key_of("graph b"), a2 = key_of("graph a");
    CHECK(a.lo == a2.lo && a.hi == a2.hi, "key is deterministic");
    CHECK(a.lo != b.lo && a.hi != b.hi, "keys differ");
    ic_dkey c = {0, 0}, d = {0, 0};
    ic_dkey_mix_str(&c, "ab");
    ic_dkey_mix_str(&c, "c");
    ic_dkey_mix_str(&d, "a");
    ic_dkey_mix_str(&d, "bc");
    CHECK(c.lo != d.lo, "chunk boundaries matter");
    /* every length 0..40 distinct, single-bit changes spread */
    char buf[64] = {0};
    uint64_t seen[41];
    for (int n = 0; n <= 40; n++) {
        seen[n] = ic_hash64(buf, (size_t)n);
        for (int m = 0; m < n; m++) CHECK(seen[m] != seen[n], "length %d vs %d", m, n);
    }
    ic_dkey e = {0, 0}, f = {0, 0};
    ic_dkey_build_id(&e);
    ic_dkey_build_id(&f);
    CHECK(e.lo == f.lo && e.hi == f.hi && (e.lo | e.hi), "build id stable");
    char hex[33];
    ic_dkey_hex(a, hex);
    CHECK(strlen(hex) == 32, "hex length");
}

static void test_roundtrip(void) {
    ic_diskcache_reset_stats();
    ic_dkey k = key_of("k1");
    void *p;
    size_t n;
    CHECK(ic_diskcache_get("cpu", k, &p, &n) == -1 && p == NULL, "empty cache misses");
    const char blob[] = "object bytes \x00\x01\x02 with zeros";
    CHECK(ic_diskcache_put("cpu", k, blob, sizeof blob) == 0, "put");
    CHECK(ic_diskcache_get("cpu", k, &p, &n) == 0 && n == sizeof blob && memcmp(p, blob, n) == 0, "get");
    free(p);
    CHECK(ic_diskcache_put("cpu", k, "v2", 2) == 0, "overwrite");
    CHECK(ic_diskcache_get("cpu", k, &p, &n) == 0 && n == 2 && memcmp(p, "v2", 2) == 0, "get v2");
    free(p);
    CHECK(ic_diskcache_put("ptx", key_of("empty"), "", 0) == 0, "empty blob");
    CHECK(ic_diskcache_get("ptx", key_of("empty"), &p, &n) == 0 && n == 0, "get empty");
    free(p);
    CHECK(ic_diskcache_get("ptx", k, &p, &n) == -1, "namespaces are apart");
    CHECK(ic_diskcache_put("../x", k, "a", 1) == -1 && ic_diskcache_put("", k, "a", 1) == -1, "bad ns");
    ic_diskcache_stats s;
    ic_diskcache_get_stats(&s);
    CHECK(s.hits == 3 && s.writes == 3 && s.misses == 2 && s.rejected == 0, "stats %llu %llu %llu",
          (unsigned long long)s.hits, (unsigned long long)s.writes, (unsigned long long)s.misses);
}

static void corrupt(const char *what, void (*edit)(const char *path)) {
    ic_diskcache_reset_stats();
    ic_dkey k = key_of(what);
    char blob[300];
    for (int i = 0; i < 300; i++) blob[i] = (char)(i * 7);
    CHECK(ic_diskcache_put("cpu", k, blob, sizeof blob) == 0, "%s: put", what);
    char path[600];
    entry_file(path, sizeof path, "cpu", k);
    edit(path);
    void *p;
    size_t n;
    CHECK(ic_diskcache_get("cpu", k, &p, &n) == -1 && p == NULL, "%s: rejected", what);
    CHECK(access(path, F_OK) != 0, "%s: bad entry removed", what);
    ic_diskcache_stats s;
    ic_diskcache_get_stats(&s);
    CHECK(s.rejected == 1, "%s: counted", what);
    CHECK(ic_diskcache_put("cpu", k, blob, sizeof blob) == 0, "%s: rebuilt", what);
    CHECK(ic_diskcache_get("cpu", k, &p, &n) == 0 && n == 300 && memcmp(p, blob, 300) == 0, "%s: hit again", what);
    free(p);
}

static void truncate_half(const char *p) { CHECK(truncate(p, 150) == 0, "truncate"); }
static void truncate_hdr(const char *p) { CHECK(truncate(p, 10) == 0, "truncate"); }
static void flip_byte(const char *p) {
    FILE *f = fopen(p, "r+b");
    fseek(f, 200, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 200, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}
static void garbage(const char *p) {
    FILE *f = fopen(p, "wb");
    for (int i = 0; i < 1000; i++) fputc(i, f);
    fclose(f);
}
static void other_key(const char *p) {
    /* a valid entry of another key renamed onto this one */
    ic_dkey o = key_of("other");
    CHECK(ic_diskcache_put("cpu", o, "zz", 2) == 0, "put other");
    char q[600];
    entry_file(q, sizeof q, "cpu", o);
    CHECK(rename(q, p) == 0, "rename");
}

static void test_unwritable(void) {
    char bad[600];
    snprintf(bad, sizeof bad, "%s/afile", root);
    FILE *f = fopen(bad, "w");
    fclose(f);
    char sub[700];
    snprintf(sub, sizeof sub, "%s/below", bad); /* a directory below a regular file */
    setenv("TORCHC_CACHE_DIR", sub, 1);
    ic_diskcache_reset_stats();
    void *p;
    size_t n;
    CHECK(ic_diskcache_put("cpu", key_of("x"), "a", 1) == -1, "unwritable: put skipped");
    CHECK(ic_diskcache_get("cpu", key_of("x"), &p, &n) == -1, "unwritable: miss");
    ic_diskcache_stats s;
    ic_diskcache_get_stats(&s);
    CHECK(s.errors == 1, "unwritable: counted");
    if (geteuid() != 0) {
        char ro[600];
        snprintf(ro, sizeof ro, "%s/ro", root);
        mkdir(ro, 0555);
        setenv("TORCHC_CACHE_DIR", ro, 1);
        CHECK(ic_diskcache_put("cpu", key_of("x"), "a", 1) == -1, "read-only dir: put skipped");
    }
    setenv("TORCHC_CACHE_DIR", root, 1);
    setenv("TORCHC_CACHE", "0", 1);
    CHECK(!ic_diskcache_enabled() && ic_diskcache_put("cpu", key_of("y"), "a", 1) == -1, "TORCHC_CACHE=0");
    unsetenv("TORCHC_CACHE");
    setenv("TORCHC_DISK_CACHE", "0", 1);
    CHECK(!ic_diskcache_enabled() && ic_diskcache_get("cpu", key_of("k1"), &p, &n) == -1, "TORCHC_DISK_CACHE=0");
    unsetenv("TORCHC_DISK_CACHE");
    CHECK(ic_diskcache_enabled(), "enabled again");
}

static void test_cap(void) {
    /* cap 64 KiB: 40 entries of 4 KiB; the oldest go, the newest stay */
    setenv("TORCHC_CACHE_MAX_MB", "0.0625", 1);
    ic_diskcache_reset_stats();
    static char blob[4096];
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "cap%d", i);
        blob[0] = (char)i;
        CHECK(ic_diskcache_put("cap", key_of(name), blob, sizeof blob) == 0, "cap put %d", i);
    }
    int n = count_files("cap");
    CHECK(n > 0 && n <= 16, "cap keeps <= 16 entries: %d", n);
    void *p;
    size_t m;
    CHECK(ic_diskcache_get("cap", key_of("cap39"), &p, &m) == 0 && ((char *)p)[0] == 39, "newest kept");
    free(p);
    ic_diskcache_stats s;
    ic_diskcache_get_stats(&s);
    CHECK(s.evicted >= 24, "evicted %llu", (unsigned long long)s.evicted);
    char *huge = calloc(1, 1 << 17);
    CHECK(ic_diskcache_put("cap", key_of("huge"), huge, 1 << 17) == -1, "blob over the cap");
    free(huge);
    unsetenv("TORCHC_CACHE_MAX_MB");
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/torchc_dctest.XXXXXX");
    if (!mkdtemp(root)) return 1;
    setenv("TORCHC_CACHE_DIR", root, 1);
    unsetenv("TORCHC_CACHE");
    unsetenv("TORCHC_DISK_CACHE");
    test_keys();
    test_roundtrip();
    corrupt("truncated", truncate_half);
    corrupt("header only", truncate_hdr);
    corrupt("flipped byte", flip_byte);
    corrupt("garbage", garbage);
    corrupt("other key", other_key);
    test_unwritable();
    test_cap();
    char ro[600];
    snprintf(ro, sizeof ro, "%s/ro", root);
    chmod(ro, 0755);
    rm_rf(root);
    printf("test_diskcache: %d checks, %d failures\n", checks, failures);
    return failures;
}
