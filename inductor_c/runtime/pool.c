/* pool.c — a small pthread pool that splits a kernel's outer iterations.
 *
 * One job at a time (a second concurrent caller runs its kernel serially instead of
 * waiting). The caller takes part 0; n-1 workers take the others. Workers spin briefly
 * before sleeping so back-to-back kernels do not pay a futex wake each.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "../ic_internal.h"

#define MAX_WORKERS 255

static pthread_mutex_t job_mu = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_done = PTHREAD_COND_INITIALIZER;
static pthread_t workers[MAX_WORKERS];
static int nworkers;
static int want_threads; /* 0: not set yet */
static atomic_uint job_gen;
static atomic_int pending;
static int stop;
static ic_kernel_fn job_fn;
static void *const *job_bufs;
static int64_t job_n;
static int job_parts;

/* Busy-wait budget of an idle worker before it sleeps (pause instructions, ~40 ns each).
 * Short on purpose: a spinning worker steals a core from eager ops (OpenMP) that run
 * between compiled graphs. torchc.config.spin (ic_config.h) sets it, read once. */
static int spin_iters(void) {
    static atomic_int v = -1;
    int x = atomic_load_explicit(&v, memory_order_relaxed);
    if (x < 0) {
        x = (int)ic_config_int(IC_CFG_spin);
        atomic_store_explicit(&v, x, memory_order_relaxed);
    }
    return x;
}

static void run_part(int part) {
    if (part >= job_parts) return;
    int64_t lo = job_n * part / job_parts, hi = job_n * (part + 1) / job_parts;
    if (lo < hi) job_fn(job_bufs, lo, hi);
}

static unsigned start_gen[MAX_WORKERS]; /* job generation when worker i was created */

static void *worker(void *arg) {
    int idx = (int)(intptr_t)arg;
    /* jobs posted before this worker existed are not its business */
    unsigned seen = start_gen[idx];
    for (;;) {
        /* spin a little, then sleep */
        for (int i = 0; i < spin_iters(); i++) {
            if (atomic_load_explicit(&job_gen, memory_order_acquire) != seen) break;
            __builtin_ia32_pause();
        }
        pthread_mutex_lock(&mu);
        while (!stop && atomic_load(&job_gen) == seen) pthread_cond_wait(&cv_start, &mu);
        if (stop) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        seen = atomic_load(&job_gen);
        pthread_mutex_unlock(&mu);
        run_part(idx + 1);
        if (atomic_fetch_sub(&pending, 1) == 1) {
            pthread_mutex_lock(&mu);
            pthread_cond_signal(&cv_done);
            pthread_mutex_unlock(&mu);
        }
    }
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_WORKERS + 1 ? MAX_WORKERS + 1 : (int)n;
}

static void stop_workers(void) {
    pthread_mutex_lock(&mu);
    stop = 1;
    pthread_cond_broadcast(&cv_start);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nworkers; i++) pthread_join(workers[i], NULL);
    nworkers = 0;
    stop = 0;
}

IC_API void ic_set_num_threads(int n) {
    if (n < 1) n = 1;
    if (n > MAX_WORKERS + 1) n = MAX_WORKERS + 1;
    pthread_mutex_lock(&job_mu);
    want_threads = n;
    if (nworkers > n - 1) stop_workers();
    pthread_mutex_unlock(&job_mu);
}

IC_API int ic_get_num_threads(void) {
    int n = want_threads;
    return n ? n : default_threads();
}

void ic_parallel_for(ic_kernel_fn fn, void *const *bufs, int64_t n, int nthreads) {
    if (nthreads > MAX_WORKERS + 1) nthreads = MAX_WORKERS + 1;
    if (nthreads <= 1 || n <= 1 || pthread_mutex_trylock(&job_mu) != 0) {
        fn(bufs, 0, n);
        return;
    }
    while (nworkers < nthreads - 1) {
        start_gen[nworkers] = atomic_load(&job_gen);
        if (pthread_create(&workers[nworkers], NULL, worker, (void *)(intptr_t)nworkers) != 0) break;
        nworkers++;
    }
    if (nworkers == 0) {
        pthread_mutex_unlock(&job_mu);
        fn(bufs, 0, n);
        return;
    }
    int parts = nworkers + 1 < nthreads ? nworkers + 1 : nthreads;
    if (parts > n) parts = (int)n;
    pthread_mutex_lock(&mu);
    job_fn = fn;
    job_bufs = bufs;
    job_n = n;
    job_parts = parts;
    atomic_store(&pending, nworkers);
    atomic_fetch_add_explicit(&job_gen, 1, memory_order_release);
    pthread_cond_broadcast(&cv_start);
    pthread_mutex_unlock(&mu);
    run_part(0);
    /* wait: spin, then sleep */
    for (int i = 0; i < 4 * spin_iters() && atomic_load(&pending) > 0; i++) __builtin_ia32_pause();
    pthread_mutex_lock(&mu);
    while (atomic_load(&pending) > 0) pthread_cond_wait(&cv_done, &mu);
    pthread_mutex_unlock(&mu);
    pthread_mutex_unlock(&job_mu);
}
