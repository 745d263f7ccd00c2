/* jit.c — the process-wide ORC LLJIT.
 *
 * Created lazily once (pthread_once). The main JITDylib searches the process for undefined
 * symbols (libm for f64 math and scalar fallbacks). Code arrives as object files (the
 * codegen emits them, or the driver reads them from the disk cache); each is added under its
 * own ResourceTracker, so freeing the last compiled graph that uses it releases exactly its code.
 *
 * Loaded code is shared by key: an object added with a 128-bit key (graph text, options,
 * versions) is found again by ic_jit_find while some compiled graph holds it, so identical
 * graphs compiled twice in one process (cache evictions, reset()) load their code once, and
 * the symbol names derived from the key never clash. Unkeyed code uses per-module names.
 *
 * The JIT's TargetMachine comes from codegen/part.c (ic_host_tm_new), which also holds the
 * pool of host TMs the code generator emits with.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>

#include "../ic_internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static LLVMOrcLLJITRef jit;
static char init_err[256];
static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;
static bool jit_ok;  /* set once by init (pthread_once): readable without the lock */

static void errmsg(LLVMErrorRef err, char *msg, size_t n) {
    char *m = LLVMGetErrorMessage(err);
    snprintf(msg, n, "%s", m);
    LLVMDisposeErrorMessage(m);
}

static void init(void) {
    LLVMTargetMachineRef jtm = ic_host_tm_new(init_err, sizeof init_err);
    if (!jtm) return;
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
    if (jit_ok) return true;
    snprintf(msg, n, "%.200s", init_err[0] ? init_err : "JIT unavailable");
    return false;
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
