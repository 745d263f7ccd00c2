/* cpu.h — between the CPU code generator's kernel emitter (cpu_llvm.c) and its driver
 * (cpu_module.c). */
#ifndef IC_CPU_H
#define IC_CPU_H

#include "cg.h"

/* Emits kernel k as function `name` (phase 0), or a split kernel's partial (1) / combining (2)
 * function, into g's module, for the host CPU and features given. */
void cpu_gen_kernel(cg *g, ic_kernel *k, const char *name, const char *cpu, const char *feat, int phase);

#endif
