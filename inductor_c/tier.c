/* tier.c — tiered CPU code: the background compiles that replace a graph's quickly made code
 * (tier 0) by its optimized code (tier 1).
 *
 * A big graph's optimized code takes seconds to make (DenseNet-121's training backward: ~1.6 s
 * of LLVM, 85% of its compile), most of it in LLVM's code generator. Tier 0 (ic_codegen_cpu's
 * tier argument) is made without loop passes and with the fast instruction selector, in about
 * a third of that; its kernels run up to ~20% slower, so a long run wants the full code. Here,
 * one background thread takes the tiered graphs in the order they were compiled, makes each
 * object file again from the IR saved at tier 0 (ic_cpu_recompile: the same pipeline and
 * TargetMachine an untiered compile uses, so the code is the same), loads it under the
 * kernels' own names (keyed: shared in the process and put in the disk cache, where a later
 * process finds it at once) and swaps the entry points of the compiled graph's kernels
 * (atomic stores; a call running on tier-0 code finishes on it). Tier-0 code stays loaded
 * until the graph is freed (a call may still be in it).
 *
 * Lifetimes: the job is shared by the compiled graph and the queue (refs). A graph freed first
 * detaches itself (out = NULL under mu): the job then loads nothing into it and drops its code.
 * Process exit (atexit, registered after LLVM's own destructors, so it runs before them) stops
 * the thread between two object files and joins it; a forked child starts with no thread and
 * an empty queue (its graphs keep their tier-0 code). ic_tier_wait blocks until the queue is
 * done (benchmarks before they time, tests).
 *
 * Requires: out->tier set by the CPU backend (backends.c) and out complete (compile.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "ic_diskcache.h"
#include "ic_internal.h"

struct ic_tier {
    pthread_mutex_t mu;
    _Atomic int refs;   /* the graph (until detached) and the queue (until done) */
    ic_compiled *out;   /* under mu; NULL once the graph is freed */
    ic_cpu_tier0 t;     /* the bitcode and pipelines of the object files */
    char **names;       /* the kernels' own symbols (ic_cpu_symbols) and their fns slots */
    int *slots;
    int n, nslots;
    ic_dkey key;
    bool keyed;
    struct ic_tier *next; /* queue */
};

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cv = PTHREAD_COND_INITIALIZER;   /* work queued, or stop */
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER; /* the queue ran dry */
static ic_tier *q_head, *q_tail; /* under q_mu */
static bool q_busy, q_stop, q_started;
static pthread_t q_thread;
static _Atomic unsigned long long n_tier0, n_tier1, n_failed;

void ic_tier_stats(unsigned long long *tier0, unsigned long long *tier1, unsigned long long *failed) {
    *tier0 = n_tier0;
    *tier1 = n_tier1;
    *failed = n_failed;
}

static void job_unref(ic_tier *j) {
    if (atomic_fetch_sub(&j->refs, 1) != 1) return;
    ic_cpu_tier0_free(&j->t);
    for (int i = 0; i < j->n; i++) free(j->names[i]);
    free(j->names);
    free(j->slots);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

ic_tier *ic_tier_new(const ic_ctx *c, const ic_cpu_syms *S, ic_cpu_tier0 *t) {
    ic_tier *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    pthread_mutex_init(&j->mu, NULL);
    atomic_store(&j->refs, 1);
    j->names = calloc((size_t)S->n + 1, sizeof(char *));
    j->slots = calloc((size_t)S->n + 1, sizeof(int));
    if (!j->names || !j->slots) goto oom;
    for (int i = 0; i < S->n; i++, j->n++) {
        j->names[i] = strdup(S->names[i]);
        if (!j->names[i]) goto oom;
        j->slots[i] = S->slot[i];
    }
    j->nslots = 2 * c->nkernels;
    j->key = c->key;
    j->keyed = c->keyed;
    j->t = *t; /* the bitcode is the job's now */
    memset(t, 0, sizeof *t);
    n_tier0++;
    return j;
oom:
    job_unref(j);
    return NULL;
}

/* ---- the background thread ------------------------------------------------------------- */
static bool stopping(void) {
    pthread_mutex_lock(&q_mu);
    bool s = q_stop;
    pthread_mutex_unlock(&q_mu);
    return s;
}

/* tier 1 of job j: made, loaded and swapped into its graph, unless the graph is gone */
static void run_job(ic_tier *j) {
    char msg[256] = "";
    void *objs[IC_CG_PARTS] = {NULL};
    size_t sizes[IC_CG_PARTS] = {0};
    void **addrs = calloc((size_t)j->n + 1, sizeof(void *));
    ic_kernel_fn *fns = calloc((size_t)j->nslots + 1, sizeof(ic_kernel_fn));
    void *h = NULL;
    int np = j->t.nparts;
    bool ok = addrs && fns;
    for (int p = 0; p < np && ok; p++) {
        if (stopping()) goto out;
        ok = ic_cpu_recompile(j->t.bc[p], j->t.bcn[p], j->t.passes[p], &objs[p], &sizes[p], msg, sizeof msg) == 0;
    }
    if (ok) {
        h = ic_jit_add_object((const void *const *)objs, sizes, np, j->keyed ? &j->key : NULL,
                              (const char *const *)j->names, j->n, addrs, msg, sizeof msg);
        ok = h != NULL;
    }
    if (!ok) {
        n_failed++;
        ic_note_internal_fault(msg[0] ? msg : "tier 1: out of memory");
        goto out;
    }
    if (j->keyed && ic_diskcache_enabled()) {
        size_t n;
        void *blob = ic_cpu_pack_objects((const void *const *)objs, sizes, np, &n);
        if (blob) ic_diskcache_put("cpu", j->key, blob, n);
        free(blob);
    }
    for (int i = 0; i < j->n; i++) fns[j->slots[i]] = (ic_kernel_fn)addrs[i];
    pthread_mutex_lock(&j->mu);
    ic_compiled *o = j->out;
    if (o) {
        for (int r = 0; r < o->nrun; r++) {
            ic_rkernel *K = &o->kernels[r];
            if (K->ext == 0 && K->slot >= 0 && K->slot < j->nslots && fns[K->slot])
                __atomic_store_n(&K->fn, fns[K->slot], __ATOMIC_RELEASE);
        }
        o->jit_rt0 = o->jit_rt;
        o->jit_rt = h;
        h = NULL;
        n_tier1++;
    }
    pthread_mutex_unlock(&j->mu);
out:
    if (h) ic_jit_remove(h);
    for (int p = 0; p < np; p++) free(objs[p]);
    free(addrs);
    free(fns);
    /* the bitcode is not needed any more: free it now, not with the graph */
    pthread_mutex_lock(&j->mu);
    ic_cpu_tier0_free(&j->t);
    pthread_mutex_unlock(&j->mu);
}

static void *worker(void *arg) {
    (void)arg;
#ifdef __linux__
    /* below the threads that compile what a caller waits for (Linux: a thread's own nice value) */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0) {} /* best effort */
#endif
    pthread_mutex_lock(&q_mu);
    for (;;) {
        while (!q_head && !q_stop) pthread_cond_wait(&q_cv, &q_mu);
        if (q_stop) break;
        ic_tier *j = q_head;
        q_head = j->next;
        if (!q_head) q_tail = NULL;
        q_busy = true;
        pthread_mutex_unlock(&q_mu);
        run_job(j);
        job_unref(j);
        pthread_mutex_lock(&q_mu);
        q_busy = false;
        if (!q_head) pthread_cond_broadcast(&idle_cv);
    }
    pthread_cond_broadcast(&idle_cv);
    pthread_mutex_unlock(&q_mu);
    return NULL;
}

/* stop the thread between two object files and join it; idempotent. Also called by
 * torchc's Python atexit hook (ic_tier_shutdown): Python's finalization frees graphs and
 * modules before C's atexit handlers run, and a full run once died with SIGSEGV at exit
 * (test_reliability::test_many_buffers, a 700-op graph still being recompiled) */
static void at_exit(void) {
    pthread_mutex_lock(&q_mu);
    bool join = q_started;
    q_stop = true;
    q_started = false;
    pthread_cond_broadcast(&q_cv);
    pthread_mutex_unlock(&q_mu);
    if (join) pthread_join(q_thread, NULL);
}

IC_API void ic_tier_shutdown(void) { at_exit(); }

static void fork_prepare(void) { pthread_mutex_lock(&q_mu); }
static void fork_parent(void) { pthread_mutex_unlock(&q_mu); }
static void fork_child(void) {
    q_head = q_tail = NULL; /* the jobs stay referenced by their graphs: tier 0 from here */
    q_busy = q_started = false;
    pthread_mutex_unlock(&q_mu);
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static void hooks(void) {
    atexit(at_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void ic_tier_start(ic_compiled *out) {
    ic_tier *j = out->tier;
    pthread_once(&hooks_once, hooks);
    pthread_mutex_lock(&j->mu);
    j->out = out;
    pthread_mutex_unlock(&j->mu);
    atomic_fetch_add(&j->refs, 1);
    pthread_mutex_lock(&q_mu);
    if (!q_started && !q_stop) q_started = pthread_create(&q_thread, NULL, worker, NULL) == 0;
    if (!q_started) { /* no thread (or exiting): the graph keeps its tier-0 code */
        pthread_mutex_unlock(&q_mu);
        job_unref(j);
        return;
    }
    j->next = NULL;
    if (q_tail) q_tail->next = j;
    else q_head = j;
    q_tail = j;
    pthread_cond_signal(&q_cv);
    pthread_mutex_unlock(&q_mu);
}

void ic_tier_detach(ic_compiled *out) {
    ic_tier *j = out->tier;
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    j->out = NULL;
    pthread_mutex_unlock(&j->mu);
    out->tier = NULL;
    job_unref(j);
}

IC_API void ic_tier_wait(void) {
    pthread_mutex_lock(&q_mu);
    while (q_started && !q_stop && (q_head || q_busy)) pthread_cond_wait(&idle_cv, &q_mu);
    pthread_mutex_unlock(&q_mu);
}
