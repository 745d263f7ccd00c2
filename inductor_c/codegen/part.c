/* part.c — what both code generators do with LLVM modules once their IR is built: the host
 * TargetMachines, module parts (a context and a module each, made for a target machine) and
 * the worker that verifies, optimizes and emits one part, with the fan-out that runs the
 * parts of a compilation on threads of their own.
 *
 * Per target: which kernel goes to which part (cpu_module.c balances kernels by item count
 * before generating; gpu_nvptx.c sends each variant to the part with the least bitcode so
 * far), the pass pipeline text (ic_cpu_pipeline; "default<O3>" and LSR for NVPTX: LLVM's
 * code generator runs without its own LSR, see cg.h IC_LSR_PASSES) and what is
 * emitted (object files for the ORC JIT, PTX assembly for the driver). Nothing here looks
 * up caches or loads code (backends.c, runtime/): runtime/jit.c makes its JIT's
 * TargetMachine through ic_host_tm_new, codegen calls nothing in runtime/.
 *
 * Host TargetMachines: a small pool of identical TMs (JIT code model, CodeGenOpt
 * Aggressive); one thread uses a TM at a time (ic_host_tm_acquire/release), so parts of one
 * compilation, and compilations on several threads, optimize and emit in parallel.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "../support.h"
#include "cg.h"

/* ---- host TargetMachines ------------------------------------------------------------------ */
#define TM_POOL 8

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static bool host_ok;          /* set once by host_init: readable without a lock */
static char host_err[256];
static char host_id[512];     /* triple|cpu|features: part of every code key */

static pthread_mutex_t tm_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tm_cv = PTHREAD_COND_INITIALIZER;
static LLVMTargetMachineRef tms[TM_POOL];
static bool tm_busy[TM_POOL];
static int ntms; /* under tm_mu */

static LLVMTargetMachineRef host_tm_level(char *msg, size_t n, LLVMCodeGenOptLevel level) {
    char *triple = LLVMGetDefaultTargetTriple();
    LLVMTargetRef t;
    char *e = NULL;
    if (LLVMGetTargetFromTriple(triple, &t, &e)) {
        snprintf(msg, n, "target: %s", e ? e : "?");
        LLVMDisposeMessage(e);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    char *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(t, triple, cpu, feat, level,
                                                      LLVMRelocDefault, LLVMCodeModelJITDefault);
    if (!host_id[0]) snprintf(host_id, sizeof host_id, "%s|%s|%s", triple, cpu, feat);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feat);
    LLVMDisposeMessage(triple);
    if (!tm) snprintf(msg, n, "cannot create a TargetMachine for the host");
    return tm;
}

static LLVMTargetMachineRef host_tm(char *msg, size_t n) { return host_tm_level(msg, n, LLVMCodeGenLevelAggressive); }

static void host_init(void) {
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        snprintf(host_err, sizeof host_err, "no native target");
        return;
    }
    tms[0] = host_tm(host_err, sizeof host_err); /* and host_id */
    if (!tms[0]) return;
    ntms = 1;
    host_ok = true;
}

static bool host_ready(char *msg, size_t n) {
    pthread_once(&host_once, host_init);
    if (host_ok) return true;
    snprintf(msg, n, "%.200s", host_err[0] ? host_err : "no host target");
    return false;
}

void *ic_host_tm_new(char *msg, size_t n) { return host_ready(msg, n) ? host_tm(msg, n) : NULL; }

void *ic_host_tm_fast(char *msg, size_t n, bool big_blocks) {
    /* LLVM's unoptimized code generator allocates registers in time quadratic in a basic
     * block's length (RegAllocFast: a 20k-instruction block took 3.4 s, O1's 0.6 s) */
    LLVMCodeGenOptLevel level = big_blocks ? LLVMCodeGenLevelLess : LLVMCodeGenLevelNone;
    return host_ready(msg, n) ? host_tm_level(msg, n, level) : NULL;
}

const char *ic_host_id(void) {
    char msg[256];
    return host_ready(msg, sizeof msg) ? host_id : "";
}

void *ic_host_tm_acquire(char *msg, size_t n) {
    if (!host_ready(msg, n)) return NULL;
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
            char e[256];
            LLVMTargetMachineRef tm = host_tm(e, sizeof e); /* outside the lock: ~1 ms */
            pthread_mutex_lock(&tm_mu);
            if (!tm) { /* keep the pool as it is and wait for a busy one (ntms >= 1) */
                tm_busy[i] = false;
                ntms--;
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

void ic_host_tm_release(void *tm) {
    pthread_mutex_lock(&tm_mu);
    for (int i = 0; i < ntms; i++)
        if (tms[i] == tm) tm_busy[i] = false;
    pthread_cond_broadcast(&tm_cv);
    pthread_mutex_unlock(&tm_mu);
}

/* ---- parts -------------------------------------------------------------------------------- */
/* LLVM's code generator without its loop strength reduction (cg.h IC_LSR_PASSES): a process
 * setting of LLVM's, made once before the first module is built (pthread_once orders it before
 * every code generation, on any thread). Errors are not printed (LLVM's C API parses into
 * nulls()); an LLVM without the option keeps its LSR, which only costs time. */
static pthread_once_t llvm_opts_once = PTHREAD_ONCE_INIT;

static void llvm_opts_init(void) {
    const char *argv[] = {"torchc", "-disable-lsr"};
    LLVMParseCommandLineOptions(2, argv, NULL);
}

int ic_part_init(ic_part *P, LLVMTargetMachineRef tm, const char *name) {
    pthread_once(&llvm_opts_once, llvm_opts_init);
    P->ctx = LLVMContextCreate();
    P->mod = LLVMModuleCreateWithNameInContext(name, P->ctx);
    P->b = LLVMCreateBuilderInContext(P->ctx);
    if (!P->ctx || !P->mod || !P->b) {
        snprintf(P->err, sizeof P->err, "out of memory");
        return -1;
    }
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(P->mod, triple);
    LLVMDisposeMessage(triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(P->mod, td);
    LLVMDisposeTargetData(td);
    return 0;
}

void ic_part_free(ic_part *P) {
    if (P->b) LLVMDisposeBuilder(P->b);
    if (P->out) LLVMDisposeMemoryBuffer(P->out);
    if (P->mod) LLVMDisposeModule(P->mod);
    if (P->ctx) LLVMContextDispose(P->ctx);
    if (P->tm && P->own_tm) LLVMDisposeTargetMachine(P->tm);
    memset(P, 0, sizeof *P);
}

static void print_module(LLVMModuleRef m, const char *header) {
    char *s = LLVMPrintModuleToString(m);
    if (header) ic_debug_dump("=== torchc llvm (%s) ===\n%s\n", header, s);
    else ic_debug_dump("%s\n", s);
    LLVMDisposeMessage(s);
}

/* LLVM 16's X86 code generator aborts the process ("LLVM ERROR: Cannot emit physreg copy
 * instruction") on an integer extension of a vector select of two loads whose condition is
 * wider than the selected values without AVX-512, e.g. for AVX2 (znver3, haswell):
 *     %m = icmp slt <16 x i64> %i, %j
 *     %r = select <16 x i1> %m, <16 x i32> (load), <16 x i32> (load)
 *     %e = sext <16 x i32> %r to <16 x i64>
 * (torch.where(i64 < i64, i32, i32).long(); the cat of two int32 slices cast to int64): a DAG
 * combine folds the extension into the loads (a select of two extending loads) and keeps the
 * condition that was already narrowed to the select's width, a 128-bit mask for a 256-bit
 * blend (a COPY from a 128-bit to a 256-bit register class; AVX-512 targets select with mask
 * registers and are not affected). A freeze between the select and the extension hides the
 * select from that fold: a freeze changes no value but poison, and costs at most the
 * extending load the fold would have made. It is put in after the pass pipeline, for every
 * vector select that an extension reads: instcombine makes the pattern itself from
 * select(m, ext a, ext b) (torch.where(m, a.long(), b.long())), where before the passes there is
 * no extension of a select to freeze. */
static bool is_x86(const char *triple) {
    return !strncmp(triple, "x86_64", 6) || (triple[0] == 'i' && !strncmp(triple + 2, "86", 2));
}

static void freeze_extended_selects(LLVMModuleRef m) {
    LLVMBuilderRef b = NULL;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
                LLVMOpcode op = LLVMGetInstructionOpcode(i);
                if (op != LLVMSExt && op != LLVMZExt) continue;
                LLVMValueRef s = LLVMGetOperand(i, 0);
                if (!LLVMIsASelectInst(s) || LLVMGetTypeKind(LLVMTypeOf(s)) != LLVMVectorTypeKind) continue;
                if (!b) b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
                LLVMPositionBuilderBefore(b, i);
                LLVMSetOperand(i, 0, LLVMBuildFreeze(b, s, ""));
            }
    if (b) LLVMDisposeBuilder(b);
}

/* verify, optimize (P->passes), emit with tm: P->out, or P->err */
static void part_run(ic_part *P, LLVMTargetMachineRef tm) {
    char *verr = NULL;
    if (LLVMVerifyModule(P->mod, LLVMReturnStatusAction, &verr)) {
        snprintf(P->err, sizeof P->err, "LLVM verifier (%s): %s", P->what, verr ? verr : "?");
        if (P->debug & IC_DEBUG_LLVM) print_module(P->mod, NULL);
        LLVMDisposeMessage(verr);
        return;
    }
    if (verr) LLVMDisposeMessage(verr);
    double t0 = ic_now_ms();
    LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
    LLVMErrorRef err = LLVMRunPasses(P->mod, P->passes, tm, pbo);
    LLVMDisposePassBuilderOptions(pbo);
    if (err) {
        char *m = LLVMGetErrorMessage(err);
        snprintf(P->err, sizeof P->err, "LLVM passes (%s): %s", P->what, m);
        LLVMDisposeErrorMessage(m);
        return;
    }
    if (is_x86(LLVMGetTarget(P->mod))) freeze_extended_selects(P->mod);
    double t1 = ic_now_ms();
    P->t_opt = t1 - t0;
    if ((P->debug & IC_DEBUG_LLVM) && P->print_after) print_module(P->mod, P->print_after);
    char *em = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, P->mod, P->asm_out ? LLVMAssemblyFile : LLVMObjectFile, &em,
                                            &P->out)) {
        snprintf(P->err, sizeof P->err, "LLVM code generation (%s): %s", P->what, em ? em : "?");
        P->out = NULL;
    }
    if (em) LLVMDisposeMessage(em);
    P->t_emit = ic_now_ms() - t1;
}

void ic_part_run(ic_part *P) {
    if (P->tm) {
        part_run(P, P->tm);
        return;
    }
    LLVMTargetMachineRef tm = ic_host_tm_acquire(P->err, sizeof P->err);
    if (!tm) return;
    part_run(P, tm);
    ic_host_tm_release(tm);
}

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void *part_thread(void *arg) {
    ic_part *P = arg;
    double c0 = thread_cpu_ms();
    ic_part_run(P);
    P->cpu = thread_cpu_ms() - c0;
    return NULL;
}

void ic_parts_run(ic_part *const *parts, int n) {
    enum { MAXT = 64 };
    pthread_t th[MAXT];
    bool started[MAXT] = {false};
    for (int i = 1; i < n && i < MAXT; i++) started[i] = pthread_create(&th[i], NULL, part_thread, parts[i]) == 0;
    if (n > 0) ic_part_run(parts[0]);
    for (int i = 1; i < n; i++) {
        if (i < MAXT && started[i]) pthread_join(th[i], NULL);
        else part_thread(parts[i]);
    }
}
