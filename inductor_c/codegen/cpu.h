/* cpu.h — between the CPU code generator's kernel emitter (cpu_llvm.c) and its driver
 * (cpu_module.c). */
#ifndef IC_CPU_H
#define IC_CPU_H

#include "cg.h"

enum {
    CPU_GEN_FULL, /* the kernel's body and its wrapper `name` */
    CPU_GEN_BODY, /* the body only, named K_body (the driver compares kernels by its bitcode) */
    CPU_GEN_WRAP  /* the wrapper only, calling `shared`: the body of an identical kernel */
};

/* Emits kernel k as function `name` (phase 0), or a split kernel's partial (1) / combining (2)
 * function, into g's module, for the host CPU and features given: `name` unpacks the buffers
 * of bufs[] the kernel uses (in increasing order) and calls the kernel's body (internal,
 * always inlined unless the driver shares it) with them as noalias parameters. Returns the
 * body. */
LLVMValueRef cpu_gen_kernel(cg *g, ic_kernel *k, const char *name, const char *cpu, const char *feat, int phase,
                            int mode, LLVMValueRef shared);

#endif
