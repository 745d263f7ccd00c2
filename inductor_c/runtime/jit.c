/* jit.c — the process-wide ORC LLJIT and the host TargetMachines.
 *
 * Created lazily once (pthread_once). The main JITDylib searches the process for undefined
 * symbols (libm for f64 math and scalar fallbacks). Code arrives as object files (the
 * codegen emits them with a TargetMachine of the pool below, or reads them from the disk
 * cache); each is added under its own ResourceTracker, so freeing the last compiled graph
 * that uses it releases exactly its code.
 *
 * Loaded code is shared by key: an object added with a 128-bit key (graph text, options,
 * versions) is found again by ic_jit_find while some compiled graph holds it, so identical
 * graphs compiled twice in one process (cache evictions, reset()) load their code once, and
 * the symbol names derived from the key never clash. Unkeyed code uses per-module names.
 *
 * TargetMachines: a small pool of identical host TMs (JIT code model, CodeGenOpt
 * Aggressive); one thread uses a TM at a time (ic_jit_tm_acquire/release), so optimization
 * and object emission of independent modules can run in parallel.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "../ic_internal.h"

#define TM_POOL 4

static pthread_once_t once = PTHREAD_ONCE_INIT;
static LLVMOrcLLJITRef jit;
static char init_err[256];
static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t tm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tm_cv = PTHREAD_COND_INITIALIZER;
static LLVMTargetMachineRef tms[TM_POOL];
static bool tm_busy[TM_POOL];
static int ntms;     /* under tm_mu */
static bool jit_ok;  /* set once by init (pthread_once): readable without the lock */
static char host_id[512]; /* triple, cpu, features: part of every code key */

static LLVMTargetMachineRef host_tm(void) {
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef t;
    char *e = NULL;
    if (LLVMGetTargetFromTriple(triple, &t, &e)) {
        snprintf(init_err, sizeof init_err, "target: %s", e ? e : "?");
        LLVMDisposeMessage(e);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    char *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, cpu, feat, LLVMCodeGenLevelAggressive,
                                                      LLVMRelocDefault, LLVMCodeModelJITDefault);
    if (!host_id[0]) snprintf(host_id, sizeof host_id, "%s|%s|%s", triple, cpu, feat);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feat);
    LLVMDisposeMessage(triple);
    if (!tm) snprintf(init_err, sizeof init_err, "cannot create a TargetMachine for the host");
    return tm;
}

static void errmsg(LLVMErrorRef err, char *msg, size_t n) {
    char *m = LLVMGetErrorMessage(err);
    snprintf(msg, n, "%s", m);
    LLVMDisposeErrorMessage(m);
}

static void init(void) {
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        snprintf(init_err, sizeof init_err, "no native target");
        return;
    }
    tms[0] = host_tm();
    LLVMTargetMachineRef jtm = host_tm();
    if (!tms[0] || !jtm) return;
    ntms = 1;
    LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, b);
    if (err) {
        errmsg(err, init_err, sizeof init_err);
        jit = NULL;
        return;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(jit),
                                                               NULL, NULL);
    if (err) {
        errmsg(err, init_err, sizeof init_err);
        LLVMOrcDisposeLLJIT(jit);
        jit = NULL;
        return;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    jit_ok = true;
}

static bool ready(char *msg, size_t n) {
    pthread_once(&once, init);
    if (jit_ok) return true; /* not ntms: the pool grows under tm_mu (ThreadSanitizer) */
    snprintf(msg, n, "%.200s", init_err[0] ? init_err : "JIT unavailable");
    return false;
}

/* ---- TargetMachine pool -------------------------------------------------------------- */
void *ic_jit_tm_acquire(char *msg, size_t n) {
    if (!ready(msg, n)) return NULL;
    pthread_mutex_lock(&tm_mu);
    for (;;) {
        for (int i = 0; i < ntms; i++)
            if (!tm_busy[i]) {
                tm_busy[i] = true;
                pthread_mutex_unlock(&tm_mu);
                return tms[i];
            }
        if (ntms < TM_POOL) {
            int i = ntms++;
            tm_busy[i] = true;
            pthread_mutex_unlock(&tm_mu);
            LLVMTargetMachineRef tm = host_tm(); /* outside the lock: ~1 ms */
            pthread_mutex_lock(&tm_mu);
            if (!tm) { /* keep the pool as it is and wait for a busy one */
                tm_busy[i] = false;
                ntms--;
                if (ntms == 0) {
                    pthread_mutex_unlock(&tm_mu);
                    snprintf(msg, n, "cannot create a TargetMachine for the host");
                    return NULL;
                }
                pthread_cond_wait(&tm_cv, &tm_mu);
                continue;
            }
            tms[i] = tm;
            pthread_mutex_unlock(&tm_mu);
            return tm;
        }
        pthread_cond_wait(&tm_cv, &tm_mu);
    }
}

void ic_jit_tm_release(void *tm) {
    pthread_mutex_lock(&tm_mu);
    for (int i = 0; i < ntms; i++)
        if (tms[i] == tm) tm_busy[i] = false;
    pthread_cond_broadcast(&tm_cv);
    pthread_mutex_unlock(&tm_mu);
}

const char *ic_jit_host_id(void) {
    char msg[256];
    return ready(msg, sizeof msg) ? host_id : "";
}

/* ---- loaded code, shared by key ------------------------------------------------------- */
typedef struct jcode {
    struct jcode *next;
    LLVMOrcResourceTrackerRef rt;
    ic_dkey key;
    bool keyed;
    int refs;
} jcode;

static jcode *loaded; /* under jit_mu */

static int lookup_all(const char *const *names, int n, void **addrs, char *msg, size_t msgn) {
    for (int i = 0; i < n; i++) {
        LLVMOrcExecutorAddress a = 0;
        LLVMErrorRef err = LLVMOrcLLJITLookup(jit, &a, names[i]);
        if (err) {
            errmsg(err, msg, msgn);
            return -1;
        }
        addrs[i] = (void *)(uintptr_t)a;
    }
    return 0;
}

static jcode *find_locked(ic_dkey key) {
    for (jcode *j = loaded; j; j = j->next)
        if (j->keyed && j->key.lo == key.lo && j->key.hi == key.hi) return j;
    return NULL;
}

void *ic_jit_find(ic_dkey key, const char *const *names, int n, void **addrs) {
    char msg[256];
    if (!ready(msg, sizeof msg)) return NULL;
    pthread_mutex_lock(&jit_mu);
    jcode *j = find_locked(key);
    if (j && lookup_all(names, n, addrs, msg, sizeof msg) == 0) j->refs++;
    else j = NULL;
    pthread_mutex_unlock(&jit_mu);
    return j;
}

void *ic_jit_add_object(const void *const *objs, const size_t *sizes, int nobj, const ic_dkey *key,
                        const char *const *names, int n, void **addrs, char *msg, size_t msgn) {
    if (!ready(msg, msgn)) return NULL;
    jcode *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(msg, msgn, "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&jit_mu);
    if (key) {
        jcode *o = find_locked(*key); /* another thread loaded the same code meanwhile */
        if (o && lookup_all(names, n, addrs, msg, msgn) == 0) {
            o->refs++;
            pthread_mutex_unlock(&jit_mu);
            free(j);
            return o;
        }
    }
    j->rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
    LLVMErrorRef err = NULL;
    for (int i = 0; i < nobj && !err; i++) {
        LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(objs[i], sizes[i], "torchc");
        err = LLVMOrcLLJITAddObjectFileWithRT(jit, j->rt, mb); /* takes mb */
    }
    int bad = 0;
    if (err) {
        errmsg(err, msg, msgn);
        bad = 1;
    } else {
        bad = lookup_all(names, n, addrs, msg, msgn);
    }
    if (bad) {
        LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(j->rt);
        if (e2) LLVMConsumeError(e2);
        LLVMOrcReleaseResourceTracker(j->rt);
        pthread_mutex_unlock(&jit_mu);
        free(j);
        return NULL;
    }
    j->refs = 1;
    if (key) {
        j->key = *key;
        j->keyed = true;
    }
    j->next = loaded;
    loaded = j;
    pthread_mutex_unlock(&jit_mu);
    return j;
}

void ic_jit_remove(void *handle) {
    jcode *j = handle;
    if (!j) return;
    pthread_mutex_lock(&jit_mu);
    if (--j->refs > 0) {
        pthread_mutex_unlock(&jit_mu);
        return;
    }
    for (jcode **p = &loaded; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    LLVMErrorRef e = LLVMOrcResourceTrackerRemove(j->rt);
    if (e) LLVMConsumeError(e);
    LLVMOrcReleaseResourceTracker(j->rt);
    pthread_mutex_unlock(&jit_mu);
    free(j);
}
