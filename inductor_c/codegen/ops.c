/* ops.c — the LLVM op layer: what each graph op computes, emitted once for both code
 * generators (cpu_*.c and the GPU's gpu_*.c), parametrized by the target (cg.h ic_target).
 *
 * Requires: a cg whose builder is positioned; values in the target's register form
 *   (ol_rtype: scalars, or <width x T> vectors on the CPU; f16/bf16 as f32 on the GPU).
 * Produces: the op's value in the same form. Semantics are eager's (ATen's CPU kernels, and
 *   CUDA's where the GPU differs on purpose: noted at the op); tests/test_ops_edge.py checks
 *   both against eager at the edge values (0, -0, NaN, inf, INT_MIN / -1, zero divisors).
 *
 * What the target decides (and nothing else does):
 *   fp2int      float -> integer casts out of range (below)
 *   half_f32    f16/bf16 registers are f32 values rounded after each op (GPU) or the
 *               dtypes themselves (CPU: half, bf16 as i16 bits with f32 math)
 *   math        IC_MATH_LIBM: f32 transcendentals and f64 sin/cos/tan from vmath.c, other f64
 *               ones from LLVM intrinsics and libm calls (CPU); IC_MATH_OWN: scalar f32
 *               polynomials (vmath.c, vmath_own.c), no f64 transcendentals (NVPTX: no
 *               libdevice is linked)
 *   ex2         the NVPTX ex2.approx instruction: exp (and the exp inside tanh, sigmoid) is
 *               vm_exp_ex2, erf's outer exp is one ex2.approx (vm_exp_approx)
 *   nan_minmax  f32 maximum/minimum (and amax/amin combines) as llvm.maximum/minimum: one
 *               max.NaN / min.NaN instruction (PTX 7.0, sm_80+)
 *   bf16_cvt    f32 -> bf16 rounding by one cvt.rn.bf16.f32 (sm_80+)
 *   fmod_f64    fmod by vm_fmod, exact (f32 through f64; NVPTX's frem expansion is not exact)
 *
 * Float -> integer casts must give what eager gives on the same machine, out-of-range values
 * included (NaN, +-inf, 3e9 -> int32), where C and LLVM leave the result undefined (fptosi is
 * poison there, and the optimizer may fold it to anything):
 *   IC_FP2I_X86: ATen's CPU kernels convert with cvtt (cvttss2si/cvttps2dq and their 64-bit
 *     forms): a NaN or a value outside the intermediate integer's range gives its minimum (the
 *     "integer indefinite"), then the result wraps to the type. Measured with torch 2.13 on
 *     x86-64 (tests/test_pointwise.py test_float_to_int_out_of_range): int32, int16 and int8
 *     go through int32, int64 and uint8 through int64.
 *   IC_FP2I_CUDA: CUDA eager's kernels convert with static_cast, which nvcc compiles to
 *     cvt.rzi.s32 / cvt.rzi.s64 (PTX ISA, cvt: float -> integer conversions are clamped to the
 *     destination's range and, by the ISA, NaN gives 0): int32, int16 and int8 through a saturated int32,
 *     int64 and uint8 (c10 TypeCast.h routes float -> uint8 through int64) through a saturated
 *     int64, then wrapped. So on the GPU 3e9 -> int32 is 2147483647, +inf -> int16 is -1 (the
 *     low half of INT32_MAX), -inf -> int8 is 0, 300.0 -> uint8 is 44. NaN gives 0
 *     where the float and the integer have one width (f32 -> s32, f64 -> s64) and the integer's
 *     minimum where they differ (f32 -> s64, f64 -> s32: measured on an H100, eager the same).
 *     Emitted as that cvt in inline PTX: fptosi would be poison out of range, and LLVM's
 *     NVPTX instcombine turns llvm.nvvm.f2i.rz into fptosi (a constant 3e9 then folds to
 *     poison); llvm.fptosi.sat has the same values but takes five more instructions.
 *   IC_FP2I_WRAP64: through int64 and wrapped (fptosi's result for in-range values; CPU
 *     targets other than x86-64).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg.h"

#define B g->b

static LLVMValueRef fconst(cg *g, LLVMValueRef like, double v) { return cg_constf(g, LLVMTypeOf(like), v); }


/* v is f32 (scalar or vector) */
static bool is_f32(cg *g, LLVMValueRef v) {
    LLVMTypeRef t = LLVMTypeOf(v);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
    return t == g->f32;
}

static _Noreturn void no_math(cg *g, ic_op op, ic_dtype t) {
    if (g->target.math == IC_MATH_OWN)
        ic_fail(g->c, IC_EUNSUPPORTED, "%s in %s on the GPU (no libdevice)", ic_op_name(op), ic_dtype_name(t));
    ic_fail(g->c, IC_EUNSUPPORTED, "codegen: %s on %s", ic_op_name(op), ic_dtype_name(t));
}

/* ---- target descriptions ---------------------------------------------------------------- */
void ol_target_cpu(cg *g, const char *triple) {
    memset(&g->target, 0, sizeof g->target);
    g->target.fp2int = !strncmp(triple, "x86_64", 6) ? IC_FP2I_X86 : IC_FP2I_WRAP64;
    g->target.math = IC_MATH_LIBM;
}

static LLVMValueRef exp_ex2_cb(void *g, LLVMValueRef x) { return vm_exp_ex2(g, x); }
LLVMValueRef ol_exp_approx_cb(void *g, LLVMValueRef x) { return vm_exp_approx(g, x); }

void ol_target_nvptx(cg *g, int sm) {
    memset(&g->target, 0, sizeof g->target);
    g->target.fp2int = IC_FP2I_CUDA;
    g->target.half_f32 = true;
    g->target.math = IC_MATH_OWN;
    g->target.ex2 = true;
    g->target.nan_minmax = sm >= 80;
    g->target.bf16_cvt = sm >= 80;
    g->target.fmod_f64 = true;
    g->exp_fn = exp_ex2_cb; /* the exp inside tanh and sigmoid (vmath.c exp_in) */
    g->exp_arg = g;
}

LLVMTypeRef ol_rtype(cg *g, ic_dtype t, int width) {
    if (g->target.half_f32 && (t == IC_F16 || t == IC_BF16)) t = IC_F32;
    return cg_type(g, t, width);
}

/* ---- conversions ------------------------------------------------------------------------ */
/* IC_FP2I_CUDA: one cvt.rzi.s32 / cvt.rzi.s64 of a scalar f32 or f64 (ops.c header) */
static LLVMValueRef fp_to_int_cuda(cg *g, LLVMValueRef v, ic_dtype to, LLVMTypeRef tt) {
    LLVMTypeRef vt = LLVMTypeOf(v);
    if (vt != g->f32 && vt != g->f64) v = LLVMBuildFPCast(B, v, g->f32, ""), vt = g->f32;
    bool wide = to == IC_I64 || to == IC_U8, d = vt == g->f64;
    char text[32], cons[8];
    snprintf(text, sizeof text, "cvt.rzi.s%d.f%d $0, $1;", wide ? 64 : 32, d ? 64 : 32);
    snprintf(cons, sizeof cons, "=%c,%c", wide ? 'l' : 'r', d ? 'd' : 'f');
    LLVMTypeRef it = wide ? g->i64 : g->i32;
    LLVMTypeRef ft = LLVMFunctionType(it, &vt, 1, 0);
    LLVMValueRef ia = LLVMGetInlineAsm(ft, text, strlen(text), cons, strlen(cons), 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef w = LLVMBuildCall2(B, ft, ia, &v, 1, "");
    return it == tt ? w : LLVMBuildTrunc(B, w, tt, "");
}

LLVMValueRef ol_fp_to_int(cg *g, LLVMValueRef v, ic_dtype to, LLVMTypeRef tt) {
    LLVMTypeRef vt = LLVMTypeOf(v);
    if (g->target.fp2int == IC_FP2I_CUDA && LLVMGetTypeKind(vt) != LLVMVectorTypeKind) return fp_to_int_cuda(g, v, to, tt);
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

LLVMValueRef ol_to_bool(cg *g, LLVMValueRef v, ic_dtype from) {
    LLVMTypeRef t = LLVMTypeOf(v);
    if (from == IC_BOOL) return v;
    if (ic_is_float(from)) return LLVMBuildFCmp(B, LLVMRealUNE, v, LLVMConstNull(t), "");
    return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(t), "");
}

/* bf16 bits <-> f32 (CPU register form) */
static LLVMValueRef bf16_to_f32(cg *g, LLVMValueRef v) {
    int w = g->width;
    LLVMValueRef x = LLVMBuildZExt(B, v, cg_type(g, IC_I32, w), "");
    x = LLVMBuildShl(B, x, cg_consti(g, cg_type(g, IC_I32, w), 16), "");
    return LLVMBuildBitCast(B, x, cg_type(g, IC_F32, w), "");
}

static LLVMValueRef f32_to_bf16(cg *g, LLVMValueRef f) {
    /* round to nearest even; NaN stays a (quiet) NaN */
    int w = g->width;
    LLVMTypeRef it = cg_type(g, IC_I32, w);
    LLVMValueRef x = LLVMBuildBitCast(B, f, it, "");
    LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, x, cg_consti(g, it, 16), ""), cg_consti(g, it, 1), "");
    LLVMValueRef r = LLVMBuildAdd(B, x, LLVMBuildAdd(B, lsb, cg_consti(g, it, 0x7FFF), ""), "");
    r = LLVMBuildLShr(B, r, cg_consti(g, it, 16), "");
    LLVMValueRef nan = LLVMBuildFCmp(B, LLVMRealUNO, f, f, "");
    LLVMValueRef qn = LLVMBuildOr(B, LLVMBuildLShr(B, x, cg_consti(g, it, 16), ""), cg_consti(g, it, 0x40), "");
    r = LLVMBuildSelect(B, nan, qn, r, "");
    return LLVMBuildTrunc(B, r, cg_type(g, IC_I16, w), "");
}

/* f32 register value (scalar) rounded to f16 / bf16 precision, kept as f32 (half_f32) */
LLVMValueRef ol_round_half(cg *g, LLVMValueRef f, ic_dtype t) {
    if (t == IC_F16) {
        LLVMTypeRef h = LLVMHalfTypeInContext(g->ctx);
        return LLVMBuildFPExt(B, LLVMBuildFPTrunc(B, f, h, ""), g->f32, "");
    }
    if (g->target.bf16_cvt) { /* one cvt.rn.bf16.f32 (nearest even, NaN stays NaN); a pure intrinsic */
        LLVMValueRef h = cg_intrin(g, "llvm.nvvm.f2bf16.rn", NULL, 0, &f, 1);
        LLVMValueRef x = LLVMBuildShl(B, LLVMBuildZExt(B, h, g->i32, ""), cg_consti(g, g->i32, 16), "");
        return LLVMBuildBitCast(B, x, g->f32, "");
    }
    LLVMTypeRef it = g->i32;
    LLVMValueRef x = LLVMBuildBitCast(B, f, it, "");
    LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, x, cg_consti(g, it, 16), ""), cg_consti(g, it, 1), "");
    LLVMValueRef r = LLVMBuildAdd(B, x, LLVMBuildAdd(B, lsb, cg_consti(g, it, 0x7FFF), ""), "");
    LLVMValueRef qn = LLVMBuildOr(B, x, cg_consti(g, it, 0x400000), "");
    r = LLVMBuildAnd(B, LLVMBuildSelect(B, cg_isnan(g, f), qn, r, ""), cg_consti(g, it, (long long)0xFFFF0000u), "");
    return LLVMBuildBitCast(B, r, g->f32, "");
}

/* register form of `from` -> register form of `to` (width g->width on the CPU) */
LLVMValueRef ol_convert(cg *g, LLVMValueRef v, ic_dtype from, ic_dtype to) {
    if (from == to) return v;
    bool fu = from == IC_BOOL || from == IC_U8;
    if (g->target.half_f32) {
        if (to == IC_BOOL) return ol_to_bool(g, v, from);
        LLVMTypeRef tt = ol_rtype(g, to, 1);
        if (ic_is_float(to)) {
            LLVMValueRef r;
            if (ic_is_float(from)) r = LLVMTypeOf(v) == tt ? v : LLVMBuildFPCast(B, v, tt, "");
            else r = fu ? LLVMBuildUIToFP(B, v, tt, "") : LLVMBuildSIToFP(B, v, tt, "");
            return to == IC_F16 || to == IC_BF16 ? ol_round_half(g, r, to) : r;
        }
        if (ic_is_float(from)) return ol_fp_to_int(g, v, to, tt);
        return LLVMBuildIntCast2(B, v, tt, !fu, "");
    }
    if (from == IC_BF16) return ol_convert(g, bf16_to_f32(g, v), IC_F32, to);
    if (to == IC_BF16) {
        if (from != IC_F32) v = ol_convert(g, v, from, IC_F32);
        return f32_to_bf16(g, v);
    }
    if (from == IC_F16 && to != IC_F32 && to != IC_F64) return ol_convert(g, ol_convert(g, v, IC_F16, IC_F32), IC_F32, to);
    /* to f16 from anything but f32 goes through f32, as eager's c10::Half(float) does: f64 is
     * rounded twice (f64 -> f32 -> f16), and no __truncdfhf2 libcall reaches the JIT */
    if (to == IC_F16 && from != IC_F32) return ol_convert(g, ol_convert(g, v, from, IC_F32), IC_F32, IC_F16);
    LLVMTypeRef tt = cg_type(g, to, g->width);
    if (to == IC_BOOL) return ol_to_bool(g, v, from);
    if (ic_is_float(to)) {
        if (ic_is_float(from)) return LLVMBuildFPCast(B, v, tt, "");
        return fu ? LLVMBuildUIToFP(B, v, tt, "") : LLVMBuildSIToFP(B, v, tt, "");
    }
    if (ic_is_float(from)) return ol_fp_to_int(g, v, to, tt); /* toward zero; out of range as eager */
    return LLVMBuildIntCast2(B, v, tt, !fu, "");
}

/* ---- maximum / minimum ------------------------------------------------------------------ */
/* NaN-propagating (torch.maximum): a NaN operand is the result */
LLVMValueRef ol_fmaxmin(cg *g, LLVMValueRef a, LLVMValueRef b, bool max) {
    if (g->target.nan_minmax && LLVMTypeOf(a) == g->f32) { /* one max.NaN / min.NaN (PTX 7.0) */
        LLVMValueRef v[2] = {a, b};
        LLVMTypeRef t = g->f32;
        return cg_intrin(g, max ? "llvm.maximum" : "llvm.minimum", &t, 1, v, 2);
    }
    LLVMValueRef gt = LLVMBuildFCmp(B, max ? LLVMRealOGT : LLVMRealOLT, a, b, "");
    LLVMValueRef r = LLVMBuildSelect(B, gt, a, b, "");
    r = LLVMBuildSelect(B, cg_isnan(g, a), a, r, "");
    return LLVMBuildSelect(B, cg_isnan(g, b), b, r, "");
}

LLVMValueRef ol_imaxmin(cg *g, LLVMValueRef a, LLVMValueRef b, bool max, ic_dtype t) {
    LLVMIntPredicate p = ic_is_unsigned(t) ? (max ? LLVMIntUGT : LLVMIntULT) : (max ? LLVMIntSGT : LLVMIntSLT);
    return LLVMBuildSelect(B, LLVMBuildICmp(B, p, a, b, ""), a, b, "");
}

/* ---- unary ops -------------------------------------------------------------------------- */
/* the transcendentals: f32 from vmath.c (and vmath_own.c), others per the target */
static LLVMValueRef math1(cg *g, ic_op op, ic_dtype t, LLVMValueRef a) {
    bool f32 = is_f32(g, a), own = g->target.math == IC_MATH_OWN;
    if (!f32 && own) no_math(g, op, t);
    switch (op) {
    case IC_OP_EXP:
        if (!f32) return cg_intrin1(g, "llvm.exp", a);
        return g->target.ex2 ? vm_exp_ex2(g, a) : vm_exp(g, a);
    case IC_OP_LOG: return f32 ? vm_log(g, a) : cg_intrin1(g, "llvm.log", a);
    case IC_OP_SIGMOID:
        if (f32) return vm_sigmoid(g, a);
        return LLVMBuildFDiv(B, fconst(g, a, 1.0),
                             LLVMBuildFAdd(B, fconst(g, a, 1.0), math1(g, IC_OP_EXP, t, LLVMBuildFNeg(B, a, "")), ""), "");
    case IC_OP_TANH: return f32 ? vm_tanh(g, a) : cg_libm1(g, "tanh", a);
    case IC_OP_SILU: return LLVMBuildFMul(B, a, math1(g, IC_OP_SIGMOID, t, a), "");
    case IC_OP_GELU: {
        if (f32 && g->target.ex2) {
            /* gelu(+inf) = +inf, as CUDA eager gives it. The exp of erf's outer piece is one
             * ex2.approx (vm_exp_approx: erf_fast_exp, vmath_own.c) */
            LLVMValueRef r = vm_gelu_ex(g, a, ol_exp_approx_cb, g);
            return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, a, fconst(g, a, __builtin_inf()), ""), a, r, "");
        }
        if (f32) return vm_gelu(g, a);
        /* 1 + erf(s) = erfc(-s): no cancellation for negative inputs */
        LLVMValueRef s = LLVMBuildFMul(B, a, fconst(g, a, -0.70710678118654752440), "");
        LLVMValueRef h = LLVMBuildFMul(B, a, fconst(g, a, 0.5), "");
        return LLVMBuildFMul(B, h, cg_libm1(g, "erfc", s), "");
    }
    case IC_OP_GELU_TANH: {
        /* eager's formula and order (ATen's CPU and CUDA kernels): 0.5 x (1 + tanh(u)),
         * u = kBeta (x + 0.044715 x^3). Not x sigmoid(2u): for large negative x, tanh(u) is
         * -1 and eager's result is exactly -0.0 where x sigmoid(2u) is a tiny negative. */
        LLVMValueRef x3 = LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
        LLVMValueRef in = LLVMBuildFAdd(B, a, LLVMBuildFMul(B, fconst(g, a, 0.044715), x3, ""), "");
        in = LLVMBuildFMul(B, fconst(g, a, M_SQRT2 * M_2_SQRTPI * 0.5), in, "");
        LLVMValueRef h = LLVMBuildFMul(B, fconst(g, a, 0.5), a, "");
        return LLVMBuildFMul(B, h, LLVMBuildFAdd(B, fconst(g, a, 1.0), math1(g, IC_OP_TANH, t, in), ""), "");
    }
    case IC_OP_SIN: return own ? vm_sincos(g, a, false) : vm_trig(g, a, VM_SIN);
    case IC_OP_COS: return own ? vm_sincos(g, a, true) : vm_trig(g, a, VM_COS);
    case IC_OP_TAN:
        if (own) return LLVMBuildFDiv(B, vm_sincos(g, a, false), vm_sincos(g, a, true), "");
        return vm_trig(g, a, VM_TAN);
    case IC_OP_ATAN: return own ? vm_atan(g, a) : cg_libm1(g, f32 ? "atanf" : "atan", a);
    case IC_OP_ASIN: case IC_OP_ACOS: {
        if (!own) return cg_libm1(g, op == IC_OP_ASIN ? (f32 ? "asinf" : "asin") : (f32 ? "acosf" : "acos"), a);
        /* c = sqrt((1 - x)(1 + x)) (no cancellation near |x| = 1; NaN for |x| > 1):
         * asin = atan2(x, c), acos = atan2(c, x) */
        LLVMValueRef one = fconst(g, a, 1.0);
        LLVMValueRef c = cg_intrin1(g, "llvm.sqrt", LLVMBuildFMul(B, LLVMBuildFSub(B, one, a, ""), LLVMBuildFAdd(B, one, a, ""), ""));
        return op == IC_OP_ASIN ? vm_atan2(g, a, c) : vm_atan2(g, c, a);
    }
    case IC_OP_ASINH: {
        if (!own) return cg_libm1(g, f32 ? "asinhf" : "asinh", a);
        /* sign(x) log1p(s + s^2 / (1 + sqrt(1 + s^2))), s = |x|; log(s) + ln 2 past 2^28 */
        LLVMValueRef one = fconst(g, a, 1.0), s = cg_intrin1(g, "llvm.fabs", a);
        LLVMValueRef s2 = LLVMBuildFMul(B, s, s, "");
        LLVMValueRef q = LLVMBuildFDiv(B, s2, LLVMBuildFAdd(B, one, cg_intrin1(g, "llvm.sqrt", LLVMBuildFAdd(B, one, s2, "")), ""), "");
        LLVMValueRef r = math1(g, IC_OP_LOG1P, t, LLVMBuildFAdd(B, s, q, ""));
        LLVMValueRef big = LLVMBuildFCmp(B, LLVMRealOGT, s, fconst(g, a, 268435456.0), "");
        r = LLVMBuildSelect(B, big, LLVMBuildFAdd(B, vm_log(g, s), fconst(g, a, M_LN2), ""), r, "");
        LLVMValueRef args[2] = {r, a};
        LLVMTypeRef ty = LLVMTypeOf(a);
        return cg_intrin(g, "llvm.copysign", &ty, 1, args, 2); /* NaN stays NaN */
    }
    case IC_OP_ACOSH: {
        if (!own) return cg_libm1(g, f32 ? "acoshf" : "acosh", a);
        /* log1p(d + sqrt(d (x + 1))), d = x - 1; log(x) + ln 2 past 2^28 */
        LLVMValueRef one = fconst(g, a, 1.0), d = LLVMBuildFSub(B, a, one, "");
        LLVMValueRef r = math1(g, IC_OP_LOG1P, t,
                               LLVMBuildFAdd(B, d, cg_intrin1(g, "llvm.sqrt", LLVMBuildFMul(B, d, LLVMBuildFAdd(B, a, one, ""), "")), ""));
        LLVMValueRef big = LLVMBuildFCmp(B, LLVMRealOGT, a, fconst(g, a, 268435456.0), "");
        r = LLVMBuildSelect(B, big, LLVMBuildFAdd(B, vm_log(g, a), fconst(g, a, M_LN2), ""), r, "");
        /* NaN below 1: for x < -2^64, d (x + 1) overflows to +inf and d + inf = +inf */
        LLVMValueRef below = LLVMBuildFCmp(B, LLVMRealOLT, a, one, "");
        return LLVMBuildSelect(B, below, fconst(g, a, __builtin_nan("")), r, "");
    }
    case IC_OP_ATANH: {
        if (!own) return cg_libm1(g, f32 ? "atanhf" : "atanh", a);
        /* sign(x) 0.5 log1p(2s / (1 - s)), s = |x|: +-inf at +-1, NaN past. On |x| (1 - s
         * exact for s >= 0.5, q >= 0): for x near -1, 1 + 2x/(1-x) would cancel to a few bits */
        LLVMValueRef s = cg_intrin1(g, "llvm.fabs", a);
        LLVMValueRef q = LLVMBuildFDiv(B, LLVMBuildFMul(B, fconst(g, a, 2.0), s, ""), LLVMBuildFSub(B, fconst(g, a, 1.0), s, ""), "");
        LLVMValueRef r = LLVMBuildFMul(B, fconst(g, a, 0.5), math1(g, IC_OP_LOG1P, t, q), "");
        LLVMValueRef args[2] = {r, a};
        LLVMTypeRef ty = LLVMTypeOf(a);
        return cg_intrin(g, "llvm.copysign", &ty, 1, args, 2); /* NaN stays NaN */
    }
    case IC_OP_ERF: {
        if (!f32) return cg_libm1(g, "erf", a);
        if (!g->target.ex2) return vm_erf(g, a);
        LLVMValueRef (*keep)(void *, LLVMValueRef) = g->exp_fn;
        g->exp_fn = ol_exp_approx_cb; /* erf_fast_exp */
        void *keep_arg = g->exp_arg;
        g->exp_arg = g;
        LLVMValueRef r = vm_erf(g, a);
        g->exp_fn = keep;
        g->exp_arg = keep_arg;
        return r;
    }
    case IC_OP_EXP2: return own ? vm_exp2(g, a) : cg_intrin1(g, "llvm.exp2", a);
    case IC_OP_LOG2: return own ? vm_log2(g, a) : cg_intrin1(g, "llvm.log2", a);
    case IC_OP_LOG1P: {
        if (!f32) return cg_libm1(g, "log1p", a);
        /* log(u) - ((u - 1) - x) / u, u = 1 + x: exact for tiny x */
        LLVMValueRef u = LLVMBuildFAdd(B, fconst(g, a, 1.0), a, "");
        LLVMValueRef corr = LLVMBuildFDiv(B, LLVMBuildFSub(B, LLVMBuildFSub(B, u, fconst(g, a, 1.0), ""), a, ""), u, "");
        LLVMValueRef r = LLVMBuildFSub(B, vm_log(g, u), corr, ""); /* the GPU's order (the CPU's was log first) */
        LLVMValueRef big = LLVMBuildFCmp(B, LLVMRealOEQ, u, fconst(g, a, __builtin_inf()), "");
        r = LLVMBuildSelect(B, big, u, r, "");
        /* x = -1: u = 0, log(u) = -inf, but corr = 0 / 0 */
        r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, u, fconst(g, a, 0.0), ""), fconst(g, a, -__builtin_inf()), r, "");
        return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, u, fconst(g, a, 1.0), ""), a, r, "");
    }
    case IC_OP_EXPM1: {
        if (!f32) return cg_libm1(g, "expm1", a);
        /* Kahan: (u - 1) * x / log(u), u = exp(x) */
        LLVMValueRef u = vm_exp(g, a);
        LLVMValueRef um1 = LLVMBuildFSub(B, u, fconst(g, a, 1.0), "");
        LLVMValueRef r = LLVMBuildFDiv(B, LLVMBuildFMul(B, um1, a, ""), vm_log(g, u), "");
        r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, um1, fconst(g, a, -1.0), ""), um1, r, "");
        r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, u, fconst(g, a, __builtin_inf()), ""), u, r, "");
        return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, u, fconst(g, a, 1.0), ""), a, r, "");
    }
    default: no_math(g, op, t);
    }
}

/* t: the operand's dtype */
LLVMValueRef ol_unary(cg *g, ic_op op, ic_dtype t, LLVMValueRef a) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    bool f = ic_is_float(t);
    switch (op) {
    case IC_OP_NEG: return f ? LLVMBuildFNeg(B, a, "") : LLVMBuildNeg(B, a, "");
    case IC_OP_ABS:
        if (f) return cg_intrin1(g, "llvm.fabs", a);
        if (ic_is_unsigned(t)) return a;
        return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstNull(ty), ""),
                               LLVMBuildNeg(B, a, ""), a, "");
    case IC_OP_RELU:
        if (f) return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, a, LLVMConstNull(ty), ""),
                                      LLVMConstNull(ty), a, "");
        if (ic_is_unsigned(t)) return a;
        return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstNull(ty), ""),
                               LLVMConstNull(ty), a, "");
    case IC_OP_LOGICAL_NOT: return LLVMBuildNot(B, a, "");
    case IC_OP_SQRT: return cg_intrin1(g, "llvm.sqrt", a);
    case IC_OP_RSQRT: return LLVMBuildFDiv(B, fconst(g, a, 1.0), cg_intrin1(g, "llvm.sqrt", a), "");
    case IC_OP_RECIPROCAL: return LLVMBuildFDiv(B, fconst(g, a, 1.0), a, "");
    case IC_OP_FLOOR: return f ? cg_intrin1(g, "llvm.floor", a) : a;
    case IC_OP_CEIL: return f ? cg_intrin1(g, "llvm.ceil", a) : a;
    case IC_OP_ROUND: return f ? cg_intrin1(g, "llvm.roundeven", a) : a;
    case IC_OP_TRUNC: return f ? cg_intrin1(g, "llvm.trunc", a) : a;
    case IC_OP_SIGN: {
        if (t == IC_BOOL) return a;
        LLVMValueRef z = LLVMConstNull(ty);
        LLVMValueRef pos = f ? LLVMBuildFCmp(B, LLVMRealOGT, a, z, "") : LLVMBuildICmp(B, ic_is_unsigned(t) ? LLVMIntUGT : LLVMIntSGT, a, z, "");
        LLVMValueRef neg = f ? LLVMBuildFCmp(B, LLVMRealOLT, a, z, "") : LLVMBuildICmp(B, LLVMIntSLT, a, z, "");
        LLVMValueRef one = f ? fconst(g, a, 1.0) : cg_consti(g, ty, 1);
        LLVMValueRef mone = f ? fconst(g, a, -1.0) : cg_consti(g, ty, -1);
        return LLVMBuildSelect(B, pos, one, LLVMBuildSelect(B, neg, mone, z, ""), "");
    }
    case IC_OP_ISNAN:
        return f ? LLVMBuildFCmp(B, LLVMRealUNO, a, a, "") : cg_consti(g, cg_type(g, IC_BOOL, g->width), 0);
    case IC_OP_ISINF:
        if (!f) return cg_consti(g, cg_type(g, IC_BOOL, g->width), 0);
        return LLVMBuildFCmp(B, LLVMRealOEQ, cg_intrin1(g, "llvm.fabs", a), fconst(g, a, __builtin_inf()), "");
    case IC_OP_ISFINITE:
        if (!f) return cg_consti(g, cg_type(g, IC_BOOL, g->width), 1);
        return LLVMBuildFCmp(B, LLVMRealOLT, cg_intrin1(g, "llvm.fabs", a), fconst(g, a, __builtin_inf()), "");
    case IC_OP_BITWISE_NOT: return LLVMBuildNot(B, a, "");
    default: break;
    }
    if (!f || !(ic_op_flags(op) & IC_F_FLOAT)) ic_fail(g->c, IC_EUNSUPPORTED, "codegen: unary %s on %s", ic_op_name(op), ic_dtype_name(t));
    return math1(g, op, t, a);
}

/* ---- binary ops ------------------------------------------------------------------------- */
/* float fmod / remainder / floor_divide with eager's rules */
static LLVMValueRef fdivmod(cg *g, ic_op op, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a));
    LLVMValueRef mod = g->target.fmod_f64 ? vm_fmod(g, a, b) : LLVMBuildFRem(B, a, b, "");
    if (op == IC_OP_FMOD) return mod;
    LLVMValueRef sdiff = LLVMBuildXor(B, LLVMBuildFCmp(B, LLVMRealOLT, mod, z, ""), LLVMBuildFCmp(B, LLVMRealOLT, b, z, ""), "");
    LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealONE, mod, z, ""), sdiff, "");
    if (op == IC_OP_REMAINDER) return LLVMBuildSelect(B, fix, LLVMBuildFAdd(B, mod, b, ""), mod, "");
    /* floor_divide */
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, a, mod, ""), b, "");
    div = LLVMBuildSelect(B, fix, LLVMBuildFSub(B, div, fconst(g, a, 1.0), ""), div, "");
    LLVMValueRef fl = cg_intrin(g, "llvm.floor", &ty, 1, &div, 1);
    LLVMValueRef up = LLVMBuildFCmp(B, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), fconst(g, a, 0.5), "");
    fl = LLVMBuildSelect(B, up, LLVMBuildFAdd(B, fl, fconst(g, a, 1.0), ""), fl, "");
    LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
    LLVMValueRef args[2] = {z, q};
    LLVMValueRef zs = cg_intrin(g, "llvm.copysign", &ty, 1, args, 2);
    LLVMValueRef r = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNE, div, z, ""), fl, zs, "");
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOEQ, b, z, ""), q, r, "");
}

/* integer versions; a zero divisor yields garbage instead of trapping (eager raises) and
 * INT_MIN / -1 wraps */
static LLVMValueRef idivmod(cg *g, ic_op op, ic_dtype t, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef z = LLVMConstNull(ty), one = cg_consti(g, ty, 1);
    if (ic_is_unsigned(t)) {
        LLVMValueRef bb = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, b, z, ""), one, b, "");
        return op == IC_OP_FLOOR_DIVIDE ? LLVMBuildUDiv(B, a, bb, "") : LLVMBuildURem(B, a, bb, "");
    }
    LLVMValueRef m1 = LLVMBuildICmp(B, LLVMIntEQ, b, cg_consti(g, ty, -1), "");
    LLVMValueRef bad = LLVMBuildOr(B, m1, LLVMBuildICmp(B, LLVMIntEQ, b, z, ""), "");
    LLVMValueRef bb = LLVMBuildSelect(B, bad, one, b, "");
    LLVMValueRef q = LLVMBuildSDiv(B, a, bb, ""), r = LLVMBuildSRem(B, a, bb, "");
    q = LLVMBuildSelect(B, m1, LLVMBuildNeg(B, a, ""), q, "");
    r = LLVMBuildSelect(B, m1, z, r, "");
    if (op == IC_OP_FMOD) return r;
    LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, z, ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), z, ""), "");
    if (op == IC_OP_REMAINDER) return LLVMBuildSelect(B, fix, LLVMBuildAdd(B, r, b, ""), r, "");
    return LLVMBuildSelect(B, fix, LLVMBuildSub(B, q, one, ""), q, "");
}

/* a ** b, b the value of expression bx (constant exponents are multiplications) */
static LLVMValueRef pow_(cg *g, LLVMValueRef a, LLVMValueRef b, ic_xid bx, ic_dtype t) {
    const ic_x *e = &g->c->xs[bx];
    if (e->kind == X_CONST) {
        double p = e->cval;
        if (p == 1.0) return a;
        if (p == 2.0) return LLVMBuildFMul(B, a, a, "");
        if (p == 3.0) return LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
        if (p == 0.5) return cg_intrin1(g, "llvm.sqrt", a);
        if (p == -1.0) return LLVMBuildFDiv(B, fconst(g, a, 1.0), a, "");
        if (p == -2.0) return LLVMBuildFDiv(B, fconst(g, a, 1.0), LLVMBuildFMul(B, a, a, ""), "");
        if (p == -0.5) return LLVMBuildFDiv(B, fconst(g, a, 1.0), cg_intrin1(g, "llvm.sqrt", a), "");
        if (p == 0.0) return fconst(g, a, 1.0);
    }
    if (g->target.math == IC_MATH_OWN) {
        if (!is_f32(g, a)) no_math(g, IC_OP_POW, t);
        return vm_pow(g, a, b);
    }
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef args[2] = {a, b};
    return cg_intrin(g, "llvm.pow", &ty, 1, args, 2);
}

/* a ** b in integer dtype ct as ATen's powi: square-and-multiply over b's bits (integer
 * multiplication wraps, so every order of the products gives eager's value); a negative b
 * (signed types; a Python-number exponent < 0 raised before the graph) gives 1 for a == 1,
 * +-1 for a == -1 by b's parity, and 0 otherwise. A constant b multiplies by its set bits. */
static LLVMValueRef ipow(cg *g, ic_dtype ct, LLVMValueRef a, LLVMValueRef b, ic_xid bx) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef z = LLVMConstNull(ty), one = cg_consti(g, ty, 1);
    const ic_x *e = &g->c->xs[bx];
    if (e->kind == X_CONST && e->cval >= 0 && e->cval < 0x1p53 && e->cval == (double)(long long)e->cval) {
        unsigned long long p = (unsigned long long)e->cval;
        LLVMValueRef r = NULL, sq = a;
        for (; p; p >>= 1) {
            if (p & 1) r = r ? LLVMBuildMul(B, r, sq, "") : sq;
            if (p > 1) sq = LLVMBuildMul(B, sq, sq, "");
        }
        return r ? r : one;
    }
    bool u = ic_is_unsigned(ct);
    int bits = (int)ic_dtype_size(ct) * 8 - (u ? 0 : 1);
    LLVMValueRef r = one, sq = a;
    for (int i = 0; i < bits; i++) {
        LLVMValueRef bit = LLVMBuildAnd(B, b, cg_consti(g, ty, 1LL << i), "");
        r = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntNE, bit, z, ""), LLVMBuildMul(B, r, sq, ""), r, "");
        if (i + 1 < bits) sq = LLVMBuildMul(B, sq, sq, "");
    }
    if (u) return r;
    LLVMValueRef m1 = cg_consti(g, ty, -1);
    LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, b, one, ""), z, "");
    LLVMValueRef neg = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, one, ""), one,
                                       LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, a, m1, ""),
                                                       LLVMBuildSelect(B, odd, m1, one, ""), z, ""), "");
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, b, z, ""), neg, r, "");
}

/* a << b, a >> b in integer dtype ct as ATen's: an amount < 0 or >= the width (unsigned
 * compare) shifts everything out: 0, or the sign for a signed right shift */
static LLVMValueRef shift_(cg *g, ic_op op, ic_dtype ct, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    long long bits = (long long)ic_dtype_size(ct) * 8;
    LLVMValueRef z = LLVMConstNull(ty);
    LLVMValueRef big = LLVMBuildICmp(B, LLVMIntUGE, b, cg_consti(g, ty, bits), "");
    if (op == IC_OP_LSHIFT)
        return LLVMBuildSelect(B, big, z, LLVMBuildShl(B, a, LLVMBuildSelect(B, big, z, b, ""), ""), "");
    if (ic_is_unsigned(ct))
        return LLVMBuildSelect(B, big, z, LLVMBuildLShr(B, a, LLVMBuildSelect(B, big, z, b, ""), ""), "");
    return LLVMBuildAShr(B, a, LLVMBuildSelect(B, big, cg_consti(g, ty, bits - 1), b, ""), "");
}

/* ct: the operands' (common) dtype; bx: b's expression (pow's constant exponents) */
LLVMValueRef ol_binary(cg *g, ic_op op, ic_dtype ct, LLVMValueRef a, LLVMValueRef b, ic_xid bx) {
    bool f = ic_is_float(ct), u = ic_is_unsigned(ct);
    if (ct == IC_BOOL) {
        switch (op) {
        case IC_OP_ADD: case IC_OP_MAXIMUM: case IC_OP_LOGICAL_OR: return LLVMBuildOr(B, a, b, "");
        case IC_OP_MUL: case IC_OP_MINIMUM: case IC_OP_LOGICAL_AND: return LLVMBuildAnd(B, a, b, "");
        default: break;
        }
    }
    switch (op) {
    case IC_OP_ADD: return f ? LLVMBuildFAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
    case IC_OP_SUB: return f ? LLVMBuildFSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
    case IC_OP_MUL: return f ? LLVMBuildFMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
    case IC_OP_DIV:
        if (f) return LLVMBuildFDiv(B, a, b, "");
        break;
    case IC_OP_MAXIMUM: return f ? ol_fmaxmin(g, a, b, true) : ol_imaxmin(g, a, b, true, ct);
    case IC_OP_MINIMUM: return f ? ol_fmaxmin(g, a, b, false) : ol_imaxmin(g, a, b, false, ct);
    case IC_OP_POW:
        if (f) return pow_(g, a, b, bx, ct);
        if (ct != IC_BOOL) return ipow(g, ct, a, b, bx);
        break;
    case IC_OP_EQ: return f ? LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "") : LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
    case IC_OP_NE: return f ? LLVMBuildFCmp(B, LLVMRealUNE, a, b, "") : LLVMBuildICmp(B, LLVMIntNE, a, b, "");
    case IC_OP_LT: return f ? LLVMBuildFCmp(B, LLVMRealOLT, a, b, "") : LLVMBuildICmp(B, u ? LLVMIntULT : LLVMIntSLT, a, b, "");
    case IC_OP_LE: return f ? LLVMBuildFCmp(B, LLVMRealOLE, a, b, "") : LLVMBuildICmp(B, u ? LLVMIntULE : LLVMIntSLE, a, b, "");
    case IC_OP_GT: return f ? LLVMBuildFCmp(B, LLVMRealOGT, a, b, "") : LLVMBuildICmp(B, u ? LLVMIntUGT : LLVMIntSGT, a, b, "");
    case IC_OP_GE: return f ? LLVMBuildFCmp(B, LLVMRealOGE, a, b, "") : LLVMBuildICmp(B, u ? LLVMIntUGE : LLVMIntSGE, a, b, "");
    case IC_OP_BITWISE_AND: return LLVMBuildAnd(B, a, b, "");
    case IC_OP_BITWISE_OR: return LLVMBuildOr(B, a, b, "");
    case IC_OP_BITWISE_XOR: case IC_OP_LOGICAL_XOR: return LLVMBuildXor(B, a, b, "");
    case IC_OP_ATAN2:
        if (!f) break;
        if (g->target.math == IC_MATH_OWN) {
            if (!is_f32(g, a)) no_math(g, op, ct);
            return vm_atan2(g, a, b);
        }
        return cg_libm2(g, ct == IC_F32 ? "atan2f" : "atan2", a, b);
    case IC_OP_FMOD: case IC_OP_REMAINDER: case IC_OP_FLOOR_DIVIDE:
        return f ? fdivmod(g, op, a, b) : idivmod(g, op, ct, a, b);
    case IC_OP_LSHIFT: case IC_OP_RSHIFT:
        if (!f && ct != IC_BOOL) return shift_(g, op, ct, a, b);
        break;
    default: break;
    }
    ic_fail(g->c, IC_EUNSUPPORTED, "codegen: binary %s on %s", ic_op_name(op), ic_dtype_name(ct));
}

/* ---- reductions ------------------------------------------------------------------------- */
LLVMValueRef ol_red_identity(cg *g, const ic_item *it, int width) {
    LLVMTypeRef t = ol_rtype(g, it->acc, width);
    bool f = ic_is_float(it->acc);
    bool max = it->red_op == IC_OP_AMAX || it->red_op == IC_OP_ARGMAX;
    if (it->red_op == IC_OP_SUM || it->red_op == IC_OP_MEAN) return LLVMConstNull(t);
    if (it->red_op == IC_OP_PROD) return f ? cg_constf(g, t, 1.0) : cg_consti(g, t, 1);
    if (f) return cg_constf(g, t, max ? -__builtin_inf() : __builtin_inf());
    if (ic_is_unsigned(it->acc)) return max ? LLVMConstNull(t) : LLVMConstAllOnes(t);
    unsigned bits = (unsigned)ic_dtype_size(it->acc) * 8;
    long long lo = bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
    return cg_consti(g, t, max ? lo : ~lo);
}

LLVMValueRef ol_red_combine(cg *g, const ic_item *it, LLVMValueRef acc, LLVMValueRef x) {
    bool f = ic_is_float(it->acc);
    switch (it->red_op) {
    case IC_OP_SUM:
    case IC_OP_MEAN:
        if (it->acc == IC_BOOL) return LLVMBuildOr(B, acc, x, "");
        return f ? LLVMBuildFAdd(B, acc, x, "") : LLVMBuildAdd(B, acc, x, "");
    case IC_OP_PROD:
        if (it->acc == IC_BOOL) return LLVMBuildAnd(B, acc, x, "");
        return f ? LLVMBuildFMul(B, acc, x, "") : LLVMBuildMul(B, acc, x, "");
    case IC_OP_AMAX:
    case IC_OP_AMIN: {
        bool max = it->red_op == IC_OP_AMAX;
        if (!f) return ol_imaxmin(g, x, acc, max, it->acc);
        if (g->target.nan_minmax && LLVMTypeOf(x) == g->f32) return ol_fmaxmin(g, x, acc, max);
        /* NaN-propagating: once a lane holds NaN it keeps it */
        LLVMValueRef better = LLVMBuildFCmp(B, max ? LLVMRealOGT : LLVMRealOLT, x, acc, "");
        better = LLVMBuildOr(B, better, cg_isnan(g, x), "");
        return LLVMBuildSelect(B, better, x, acc, "");
    }
    default:
        ic_fail(g->c, IC_EINTERNAL, "codegen: reduction %s", ic_op_name(it->red_op));
    }
}

/* The end of a reduction's row, after its combines: a mean divided by its element count
 * (count: that count as a value of v's type, NULL: the constant red_count), others v as it is.
 * The CPU keeps this (its row value) for the items after; both backends then store
 * ol_red_out of it. */
LLVMValueRef ol_red_mean(cg *g, const ic_item *it, LLVMValueRef v, LLVMValueRef count) {
    if (it->red_op != IC_OP_MEAN) return v;
    return LLVMBuildFDiv(B, v, count ? count : cg_constf(g, LLVMTypeOf(v), (double)it->red_count), "");
}

/* A reduction's row value (v, after ol_red_mean) in the item's dtype; argmax/argmin: their
 * index vi, or v where the GPU runs an amax/amin as its sibling's arg reduction (arg_value:
 * the picked element's value; the CPU never sets it) */
LLVMValueRef ol_red_out(cg *g, const ic_item *it, LLVMValueRef v, LLVMValueRef vi) {
    if (ic_is_arg(it->red_op) && !it->arg_value) return ol_convert(g, vi, IC_I64, it->dtype);
    return ol_convert(g, v, it->acc, it->dtype);
}

/* argmax/argmin: take (x, xi) over (acc, ai) when x is better, or equal (NaN equal to NaN)
 * with a smaller index: the first extreme wins whatever the order of combination
 * (commutative and associative). */
void ol_arg_combine(cg *g, const ic_item *it, LLVMValueRef acc, LLVMValueRef ai, LLVMValueRef x,
                    LLVMValueRef xi, LLVMValueRef *ro, LLVMValueRef *ri) {
    bool max = it->red_op == IC_OP_ARGMAX;
    LLVMValueRef better, tie;
    if (ic_is_float(it->acc)) {
        LLVMValueRef xn = cg_isnan(g, x), an = cg_isnan(g, acc);
        better = LLVMBuildFCmp(B, max ? LLVMRealOGT : LLVMRealOLT, x, acc, "");
        better = LLVMBuildOr(B, better, LLVMBuildAnd(B, xn, LLVMBuildNot(B, an, ""), ""), "");
        tie = LLVMBuildOr(B, LLVMBuildFCmp(B, LLVMRealOEQ, x, acc, ""), LLVMBuildAnd(B, xn, an, ""), "");
    } else {
        bool u = ic_is_unsigned(it->acc);
        better = LLVMBuildICmp(B, max ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT), x, acc, "");
        tie = LLVMBuildICmp(B, LLVMIntEQ, x, acc, "");
    }
    LLVMValueRef take = LLVMBuildOr(B, better, LLVMBuildAnd(B, tie, LLVMBuildICmp(B, LLVMIntSLT, xi, ai, ""), ""), "");
    *ro = LLVMBuildSelect(B, take, x, acc, "");
    *ri = LLVMBuildSelect(B, take, xi, ai, "");
}
