/* ops.c — LLVM op semantics shared by the CPU (cpu_llvm.c) and GPU (gpu_nvptx.c) code
 * generators, parametrized by the target (cg.h ic_target). Both backends emit through a cg.
 *
 * Float -> integer casts must give what eager gives on the same machine, out-of-range values
 * included (NaN, +-inf, 3e9 -> int32), where C and LLVM leave the result undefined (fptosi is
 * poison there, and the optimizer may fold it to anything):
 *   IC_FP2I_X86: ATen's CPU kernels convert with cvtt (cvttss2si/cvttps2dq and their 64-bit
 *     forms): a NaN or a value outside the intermediate integer's range gives its minimum (the
 *     "integer indefinite"), then the result wraps to the type. Measured with torch 2.13 on
 *     x86-64 (tests/test_pointwise.py test_float_to_int_out_of_range): int32, int16 and int8
 *     go through int32, int64 and uint8 through int64.
 *   IC_FP2I_WRAP64: through int64 and wrapped (fptosi's result for in-range values; the GPU
 *     backend's behaviour so far, left as it was).
 */
#include "cg.h"

#define B g->b

LLVMValueRef ol_fp_to_int(cg *g, LLVMValueRef v, ic_dtype to, LLVMTypeRef tt) {
    LLVMTypeRef vt = LLVMTypeOf(v);
    bool vec = LLVMGetTypeKind(vt) == LLVMVectorTypeKind;
    unsigned n = vec ? LLVMGetVectorSize(vt) : 1;
    bool wide = g->target.fp2int != IC_FP2I_X86 || to == IC_I64 || to == IC_U8;
    LLVMTypeRef it = wide ? g->i64 : g->i32;
    if (vec) it = LLVMVectorType(it, n);
    LLVMValueRef w = LLVMBuildFPToSI(B, v, it, "");
    if (g->target.fp2int == IC_FP2I_X86) {
        double lim = wide ? 9223372036854775808.0 : 2147483648.0;
        LLVMValueRef ok = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOLT, v, cg_constf(g, vt, lim), ""),
                                       LLVMBuildFCmp(B, LLVMRealOGE, v, cg_constf(g, vt, -lim), ""), "");
        w = LLVMBuildSelect(B, ok, w, cg_consti(g, it, wide ? INT64_MIN : INT32_MIN), "");
    }
    return it == tt ? w : LLVMBuildTrunc(B, w, tt, "");
}
