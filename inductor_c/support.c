/* support.c — per-compilation arena, error exits and the hash-consing table.
 *
 * Every allocation of a compilation comes from its arena and is freed at once at the end;
 * allocation failure and internal faults longjmp to the driver (ic_compile_graph), which
 * turns them into an ic_err. Nothing here aborts.
 */
#include <stdlib.h>
#include <string.h>

#include "ic_internal.h"
#include "support.h"

struct ic_chunk {
    ic_chunk *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

static long fail_after = -1; /* test hook: injected allocation failure (not thread-safe) */

void ic_test_fail_alloc_after(long n) { fail_after = n; }

void *ic_alloc(ic_ctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (fail_after >= 0 && fail_after-- == 0) ic_fail(c, IC_ENOMEM, "out of memory (injected)");
    ic_chunk *k = malloc(sizeof(ic_chunk) + n);
    if (!k) ic_fail(c, IC_ENOMEM, "out of memory (%zu bytes)", n);
    k->next = c->chunks;
    k->size = n;
    c->chunks = k;
    memset(k->data, 0, n);
    return k->data;
}

void ic_marks_begin(ic_ctx *c, ic_marks *m, int n) {
    if (m->cap < n + 1) { /* ids added since: a larger set (the arena keeps the old one) */
        int cap = m->cap ? m->cap : 64;
        while (cap < n + 1) cap *= 2;
        m->st = ic_alloc(c, (size_t)cap * sizeof *m->st);
        m->cap = cap;
        m->gen = 0;
    }
    if (++m->gen == 0) { /* wrapped: every stamp forgotten */
        memset(m->st, 0, (size_t)m->cap * sizeof *m->st);
        m->gen = 1;
    }
}

/* Arena realloc: the old block stays in the arena until the compilation ends. Growth is
 * geometric, so the waste is bounded by the final size. */
void *ic_grow(ic_ctx *c, void *p, int *cap, int need, size_t elem) {
    if (need <= *cap) return p;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need) nc *= 2;
    void *q = ic_alloc(c, (size_t)nc * elem);
    if (p) memcpy(q, p, (size_t)*cap * elem);
    *cap = nc;
    return q;
}

/* bytes the arena of this thread's last compilation held: a work measure for tests */
static _Thread_local size_t last_arena_bytes;

IC_API size_t ic_test_last_arena_bytes(void) { return last_arena_bytes; }

void ic_arena_free(ic_ctx *c) {
    ic_chunk *k = c->chunks;
    size_t total = 0;
    while (k) {
        ic_chunk *n = k->next;
        total += k->size;
        free(k);
        k = n;
    }
    c->chunks = NULL;
    last_arena_bytes = total;
}

_Noreturn void ic_fail(ic_ctx *c, ic_errcode code, const char *fmt, ...) {
    if (c->err && c->err->code == IC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
        va_end(ap);
        c->err->code = code;
    }
    longjmp(c->jb, 1);
}

/* ---- hash-consing ---------------------------------------------------------------------- */
struct ic_htab {
    int32_t *slot; /* id + 1, 0 empty */
    uint64_t *hash;
    uint32_t cap, n;
};

static void hrehash(ic_ctx *c, ic_htab *h, uint32_t ncap) {
    int32_t *os = h->slot;
    uint64_t *oh = h->hash;
    uint32_t ocap = h->cap;
    h->slot = ic_alloc(c, ncap * sizeof(int32_t));
    h->hash = ic_alloc(c, ncap * sizeof(uint64_t));
    h->cap = ncap;
    for (uint32_t i = 0; i < ocap; i++) {
        if (!os[i]) continue;
        uint32_t j = (uint32_t)oh[i] & (ncap - 1);
        while (h->slot[j]) j = (j + 1) & (ncap - 1);
        h->slot[j] = os[i];
        h->hash[j] = oh[i];
    }
}

int32_t ic_hintern(ic_ctx *c, ic_htab **hp, uint64_t hash, int32_t cand,
                   bool (*eq)(ic_ctx *, int32_t, int32_t)) {
    if (!*hp) *hp = ic_alloc(c, sizeof(ic_htab));
    ic_htab *h = *hp;
    if ((h->n + 1) * 2 > h->cap) hrehash(c, h, h->cap ? h->cap * 2 : 256);
    uint32_t j = (uint32_t)hash & (h->cap - 1);
    while (h->slot[j]) {
        if (h->hash[j] == hash && eq(c, h->slot[j] - 1, cand)) return h->slot[j] - 1;
        j = (j + 1) & (h->cap - 1);
    }
    h->slot[j] = cand + 1;
    h->hash[j] = hash;
    h->n++;
    return cand;
}

uint64_t ic_hmix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 33);
}
