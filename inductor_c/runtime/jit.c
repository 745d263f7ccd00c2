/* jit.c — the process-wide ORC LLJIT.
 *
 * Created lazily once (pthread_once). Its TargetMachine builder comes from a host
 * TargetMachine at CodeGenOpt::Aggressive; the main JITDylib searches the process for
 * undefined symbols (libm for f64 math and scalar fallbacks). Each compiled graph is one
 * module added under its own ResourceTracker, so ic_compiled_free releases exactly its
 * code. A second host TargetMachine serves the optimization pipeline (TTI).
 */
#include <pthread.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "../ic_internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static LLVMOrcLLJITRef jit;
static LLVMTargetMachineRef pass_tm;
static char init_err[256];
static pthread_mutex_t jit_mu = PTHREAD_MUTEX_INITIALIZER;

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
    pass_tm = host_tm();
    LLVMTargetMachineRef jtm = host_tm();
    if (!pass_tm || !jtm) return;
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
        return;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
}

void *ic_jit_target_machine(char *msg, size_t n) {
    pthread_once(&once, init);
    if (!jit || !pass_tm) {
        snprintf(msg, n, "%s", init_err[0] ? init_err : "JIT unavailable");
        return NULL;
    }
    return pass_tm;
}

int ic_jit_add_module(void *tsm, const char **names, int n, void **addrs, void **rt_out, char *msg,
                      size_t msgn) {
    pthread_once(&once, init);
    if (!jit) {
        LLVMOrcDisposeThreadSafeModule(tsm);
        snprintf(msg, msgn, "%s", init_err);
        return -1;
    }
    pthread_mutex_lock(&jit_mu);
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
    LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModuleWithRT(jit, rt, tsm);
    for (int i = 0; !err && i < n; i++) {
        LLVMOrcExecutorAddress a = 0;
        err = LLVMOrcLLJITLookup(jit, &a, names[i]);
        addrs[i] = (void *)(uintptr_t)a;
    }
    if (err) {
        errmsg(err, msg, msgn);
        LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(rt);
        if (e2) LLVMConsumeError(e2);
        LLVMOrcReleaseResourceTracker(rt);
        pthread_mutex_unlock(&jit_mu);
        return -1;
    }
    pthread_mutex_unlock(&jit_mu);
    *rt_out = rt;
    return 0;
}

void ic_jit_remove(void *rt) {
    if (!rt) return;
    pthread_mutex_lock(&jit_mu);
    LLVMErrorRef e = LLVMOrcResourceTrackerRemove(rt);
    if (e) LLVMConsumeError(e);
    LLVMOrcReleaseResourceTracker(rt);
    pthread_mutex_unlock(&jit_mu);
}

/* Serializes LLVM work of compilations (shared TargetMachine). */
void ic_llvm_lock(void) { pthread_mutex_lock(&jit_mu); }
void ic_llvm_unlock(void) { pthread_mutex_unlock(&jit_mu); }
