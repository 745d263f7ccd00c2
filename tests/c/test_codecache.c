/* test_codecache.c — machine code shared by key inside a process and loaded from the disk
 * cache (ic_compile, ic_get_cache_stats): identical graphs share loaded code while one is
 * alive; once all are freed, a new compile loads the object file from disk; entries that
 * pass the disk checksum but hold no usable objects are rebuilt; concurrent compiles of one
 * graph agree. Every result is checked against a scalar reference. Exit status: failures.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ic.h"
#include "ic_diskcache.h"
#include "harness.h"


enum { R = 9, C = 37 };
static float X[R * C];
static char root[256];

/* y = sum(tanh(x * s) * x, dim 1, keepdim) ; z = y + x.amax(1) */
static ic_graph *build(double s) {
    ic_graph *g = ic_graph_new();
    ic_meta m = {.dtype = IC_F32, .ndim = 2, .sizes = {R, C}, .strides = {C, 1}};
    ic_val x = ic_input(g, &m);
    ic_val t = ic_unary(g, IC_OP_TANH, ic_binary(g, IC_OP_MUL, x, ic_scalar(g, s, IC_F64)));
    ic_val y = ic_reduce(g, IC_OP_SUM, ic_binary(g, IC_OP_MUL, t, x), 1u << 1, 1, -1);
    ic_val z = ic_binary(g, IC_OP_ADD, y, ic_reduce(g, IC_OP_AMAX, x, 1u << 1, 1, -1));
    ic_output(g, y);
    ic_output(g, z);
    return g;
}

static int run_check(ic_compiled *c, double s, const char *what) {
    float y[R], z[R];
    void *in[1] = {X}, *out[2] = {y, z};
    ic_err e;
    if (ic_run(c, in, out, &e)) {
        CHECK(0, "%s: run: %s", what, e.msg);
        return -1;
    }
    int bad = 0;
    for (int i = 0; i < R; i++) {
        double acc = 0, mx = -INFINITY;
        for (int j = 0; j < C; j++) {
            double v = X[i * C + j];
            acc += tanh(v * s) * v;
            if (v > mx) mx = v;
        }
        if (fabs(acc - y[i]) > 1e-4 || fabs(acc + mx - z[i]) > 1e-4) bad++;
    }
    CHECK(bad == 0, "%s: %d wrong rows", what, bad);
    return bad;
}

static ic_compiled *compile(double s, const char *what) {
    ic_graph *g = build(s);
    ic_err e;
    ic_compiled *c = ic_compile(g, NULL, &e);
    ic_graph_free(g);
    CHECK(c != NULL, "%s: compile: %s", what, e.msg);
    return c;
}

static ic_cache_stats st(void) {
    ic_cache_stats s;
    ic_get_cache_stats(&s);
    return s;
}

/* the one entry of dir/cpu: its key from the file name */
static int only_key(ic_dkey *k) {
    char d[400];
    snprintf(d, sizeof d, "%s/cpu", root);
    DIR *dd = opendir(d);
    if (!dd) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd))) {
        if (e->d_name[0] == '.' || strlen(e->d_name) != 32) continue;
        char hi[17], lo[17];
        memcpy(hi, e->d_name, 16);
        hi[16] = 0;
        memcpy(lo, e->d_name + 16, 16);
        lo[16] = 0;
        k->hi = strtoull(hi, NULL, 16);
        k->lo = strtoull(lo, NULL, 16);
        n++;
    }
    closedir(dd);
    return n == 1 ? 0 : -1;
}

static void *thread_compile(void *arg) {
    ic_compiled *c = compile(3.0, "thread");
    if (c) run_check(c, 3.0, "thread");
    *(ic_compiled **)arg = c;
    return NULL;
}

int main(void) {
    snprintf(root, sizeof root, "/tmp/torchc_cctest.XXXXXX");
    if (!mkdtemp(root)) return 1;
    setenv("TORCHC_CACHE_DIR", root, 1);
    unsetenv("TORCHC_CACHE");
    unsetenv("TORCHC_DISK_CACHE");
    unsetenv("TORCHC_DEBUG");
    for (int i = 0; i < R * C; i++) X[i] = (float)sin(i * 0.37) * 2.0f;

    ic_cache_stats s0 = st();
    ic_compiled *c1 = compile(1.5, "cold");
    run_check(c1, 1.5, "cold");
    ic_cache_stats s1 = st();
    CHECK(s1.disk_writes == s0.disk_writes + 1 && s1.disk_loaded == s0.disk_loaded, "cold writes one entry");
    /* the in-memory cache answers first */
    ic_compiled *c1b = compile(1.5, "mem");
    CHECK(c1b == c1 && st().mem_hits == s1.mem_hits + 1, "memory hit");
    ic_compiled_free(c1b);
    /* cleared memory cache, code still loaded: shared */
    ic_cache_clear();
    ic_compiled *c2 = compile(1.5, "shared");
    CHECK(c2 != c1 && st().code_shared == s1.code_shared + 1, "code shared while loaded");
    run_check(c2, 1.5, "shared");
    ic_compiled_free(c1);
    run_check(c2, 1.5, "shared after the first is freed");
    ic_compiled_free(c2);
    ic_cache_clear();
    /* nothing loaded: from disk */
    ic_cache_stats s2 = st();
    ic_compiled *c3 = compile(1.5, "warm");
    ic_cache_stats s3 = st();
    CHECK(s3.disk_loaded == s2.disk_loaded + 1 && s3.disk_writes == s2.disk_writes, "warm loads from disk");
    run_check(c3, 1.5, "warm");
    ic_compiled_free(c3);
    ic_cache_clear();
    /* a different graph is a different key */
    ic_compiled *d1 = compile(2.5, "other");
    run_check(d1, 2.5, "other");
    CHECK(st().disk_writes == s3.disk_writes + 1, "other graph writes its own entry");
    ic_compiled_free(d1);
    ic_cache_clear();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'/cpu", root);
    CHECK(system(cmd) == 0, "rm");

    /* entries that pass the disk checks but hold junk: rebuilt */
    ic_compiled *e1 = compile(0.5, "junk cold");
    ic_compiled_free(e1);
    ic_cache_clear();
    ic_dkey k;
    CHECK(only_key(&k) == 0, "one entry");
    const char *junk[2] = {"not an object blob", NULL};
    unsigned char fake[8 + 8 + 64];
    uint32_t h[2] = {0x424f4349u, 1}; /* "ICOB", one object: 64 bytes that are no ELF */
    uint64_t sz = 64;
    memcpy(fake, h, 8);
    memcpy(fake + 8, &sz, 8);
    for (int i = 0; i < 64; i++) fake[16 + i] = (unsigned char)(i * 13);
    for (int t = 0; t < 2; t++) {
        if (t == 0) ic_diskcache_put("cpu", k, junk[0], strlen(junk[0]));
        else ic_diskcache_put("cpu", k, fake, sizeof fake);
        ic_cache_stats a = st();
        ic_compiled *e2 = compile(0.5, "junk");
        ic_cache_stats b = st();
        CHECK(b.disk_hits == a.disk_hits + 1 && b.disk_loaded == a.disk_loaded && b.disk_writes == a.disk_writes + 1,
              "junk %d: read, not loaded, rebuilt and rewritten", t);
        if (e2) run_check(e2, 0.5, "junk rebuilt");
        ic_compiled_free(e2);
        ic_cache_clear();
    }
    ic_compiled *e3 = compile(0.5, "after junk");
    CHECK(e3 && st().disk_loaded > 0, "rewritten entry loads");
    if (e3) run_check(e3, 0.5, "after junk");
    ic_compiled_free(e3);
    ic_cache_clear();

    /* concurrent compiles of one graph, no disk: both right */
    setenv("TORCHC_DISK_CACHE", "0", 1);
    for (int rep = 0; rep < 3; rep++) {
        ic_compiled *r[4] = {0};
        pthread_t th[4];
        for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, thread_compile, &r[i]);
        for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < 4; i++) ic_compiled_free(r[i]);
        ic_cache_clear();
    }
    unsetenv("TORCHC_DISK_CACHE");
    /* TORCHC_DEBUG (other than time) bypasses every cache */
    setenv("TORCHC_DEBUG", "time", 1);
    ic_cache_stats t0 = st();
    ic_compiled *f1 = compile(1.5, "debug time");
    CHECK(st().disk_hits + st().disk_misses > t0.disk_hits + t0.disk_misses, "time keeps the caches");
    ic_compiled_free(f1);
    unsetenv("TORCHC_DEBUG");
    ic_cache_clear();

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd)) fprintf(stderr, "rm failed\n");
    printf("test_codecache: %d checks, %d failures\n", checks, failures);
    return failures;
}
