/* driver.h — the driver's own steps (compile.c pipeline() lists them in order). */
#ifndef IC_DRIVER_H
#define IC_DRIVER_H

#include "ic_internal.h"

/* driver_passes.c: c->lowp_need[k], per kernel the values needed to f32 accuracy (NULL: all
 * of them); for backends that evaluate half-precision values in f32 (ic_backend.lowp); code
 * generators read them with ic_lowp_map (ic_internal.h) */
void ic_lowp_analysis(ic_ctx *c);
/* driver_passes.c: c->gemm_epi[k], for each extern GEMM the GEMM template can compute, the
 * pointwise kernel fused into its epilogue (ic_backend.gemm_epilogue) */
void ic_gemm_epilogues(ic_ctx *c);

#endif
