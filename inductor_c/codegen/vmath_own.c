/* vmath_own.c — f32 math as scalar LLVM IR for targets without a libm (the NVPTX backend:
 * no libdevice is linked), used by the shared op layer (ops.c) where its target says
 * IC_MATH_OWN: sin/cos, tan, atan, atan2, exp2, log2, pow, fmod, and two exps built on the
 * NVPTX ex2.approx instruction (vm_exp_approx, vm_exp_ex2). Moved unchanged from the GPU
 * code generator (gpu_ops.c), where they were measured; values are scalars, not vectors.
 */
#include <math.h>

#include "cg.h"

#define B g->b

static inline LLVMValueRef ki(cg *g, LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static inline LLVMValueRef kf(LLVMValueRef like, double v) { return LLVMConstReal(LLVMTypeOf(like), v); }
static inline LLVMValueRef intrin1(cg *g, const char *name, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    return cg_intrin(g, name, &t, 1, &x, 1);
}
static inline LLVMValueRef fma3(cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[3] = {a, b, c};
    return cg_intrin(g, "llvm.fma", &t, 1, args, 3);
}
static inline LLVMValueRef sel(cg *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(B, c, a, b, "");
}
static inline LLVMValueRef fcmp(cg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(B, p, a, b, "");
}
static inline LLVMValueRef isnan_(cg *g, LLVMValueRef v) { return fcmp(g, LLVMRealUNO, v, v); }
static inline LLVMValueRef and_(cg *g, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAnd(B, a, b, ""); }

/* sin / cos (Cephes sinf/cosf: reduction by pi/4 in three parts, degree-7/8 polynomials);
 * accurate to ~1 ulp for |x| < 8192, NaN for inf/NaN. */
LLVMValueRef vm_sincos(cg *g, LLVMValueRef x, bool want_cos) {
    LLVMTypeRef F = g->f32, I = g->i32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef fin = fcmp(g, LLVMRealOLT, ax, LLVMConstReal(F, 1e30));
    LLVMValueRef sx = sel(g, fin, ax, LLVMConstReal(F, 0.0));
    LLVMValueRef j = LLVMBuildFPToSI(B, LLVMBuildFMul(B, sx, LLVMConstReal(F, 1.27323954473516), ""), I, "");
    j = LLVMBuildAnd(B, LLVMBuildAdd(B, j, ki(g, I, 1), ""), ki(g, I, ~1LL), ""); /* j += j & 1 */
    LLVMValueRef y = LLVMBuildSIToFP(B, j, F, "");
    LLVMValueRef ny = LLVMBuildFNeg(B, y, "");
    LLVMValueRef z = fma3(g, ny, LLVMConstReal(F, 0.78515625), sx);
    z = fma3(g, ny, LLVMConstReal(F, 2.4187564849853515625e-4), z);
    z = fma3(g, ny, LLVMConstReal(F, 3.77489497744594108e-8), z);
    LLVMValueRef j7 = LLVMBuildAnd(B, j, ki(g, I, 7), "");
    LLVMValueRef hi = LLVMBuildICmp(B, LLVMIntUGT, j7, ki(g, I, 3), "");
    LLVMValueRef jj = sel(g, hi, LLVMBuildSub(B, j7, ki(g, I, 4), ""), j7);
    LLVMValueRef zz = LLVMBuildFMul(B, z, z, "");
    /* cos poly */
    LLVMValueRef cp = fma3(g, LLVMConstReal(F, 2.443315711809948e-5), zz, LLVMConstReal(F, -1.388731625493765e-3));
    cp = fma3(g, cp, zz, LLVMConstReal(F, 4.166664568298827e-2));
    cp = LLVMBuildFMul(B, LLVMBuildFMul(B, cp, zz, ""), zz, "");
    cp = fma3(g, zz, LLVMConstReal(F, -0.5), cp);
    cp = LLVMBuildFAdd(B, cp, LLVMConstReal(F, 1.0), "");
    /* sin poly */
    LLVMValueRef sp = fma3(g, LLVMConstReal(F, -1.9515295891e-4), zz, LLVMConstReal(F, 8.3321608736e-3));
    sp = fma3(g, sp, zz, LLVMConstReal(F, -1.6666654611e-1));
    sp = fma3(g, LLVMBuildFMul(B, sp, zz, ""), z, z);
    LLVMValueRef mid = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntEQ, jj, ki(g, I, 1), ""),
                                   LLVMBuildICmp(B, LLVMIntEQ, jj, ki(g, I, 2), ""), "");
    LLVMValueRef r, neg;
    if (!want_cos) {
        r = sel(g, mid, cp, sp);
        neg = LLVMBuildXor(B, hi, fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 0.0)), "");
    } else {
        r = sel(g, mid, sp, cp);
        neg = LLVMBuildXor(B, hi, LLVMBuildICmp(B, LLVMIntUGT, jj, ki(g, I, 1), ""), "");
    }
    r = sel(g, neg, LLVMBuildFNeg(B, r, ""), r);
    return sel(g, fin, r, LLVMBuildFSub(B, x, x, "")); /* inf - inf = NaN, NaN stays */
}

/* x ** y in f32 (y not a special constant): exp(y log|x|) with torch's special cases */
LLVMValueRef vm_pow(cg *g, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef F = g->f32;
    LLVMValueRef zero = LLVMConstReal(F, 0.0), one = LLVMConstReal(F, 1.0);
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef r = vm_exp(g, LLVMBuildFMul(B, y, vm_log(g, ax), ""));
    LLVMValueRef yint = fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.trunc", y), y);
    LLVMValueRef h = LLVMBuildFMul(B, y, LLVMConstReal(F, 0.5), "");
    LLVMValueRef yodd = and_(g, yint, fcmp(g, LLVMRealUNE, intrin1(g, "llvm.trunc", h), h));
    LLVMValueRef xneg = fcmp(g, LLVMRealOLT, x, zero);
    LLVMValueRef nr = sel(g, yint, sel(g, yodd, LLVMBuildFNeg(B, r, ""), r), LLVMConstReal(F, NAN));
    r = sel(g, xneg, nr, r);
    /* x == +-0: sign of an odd power follows x */
    LLVMValueRef xz = fcmp(g, LLVMRealOEQ, x, zero);
    LLVMValueRef zr = sel(g, fcmp(g, LLVMRealOGT, y, zero), zero, LLVMConstReal(F, INFINITY));
    LLVMValueRef args[2] = {zr, x};
    LLVMValueRef zs = cg_intrin(g, "llvm.copysign", &F, 1, args, 2);
    r = sel(g, xz, sel(g, yodd, zs, zr), r);
    r = sel(g, fcmp(g, LLVMRealOEQ, x, one), one, r);
    return sel(g, fcmp(g, LLVMRealOEQ, y, zero), one, r);
}

/* 2^n for an i32 n in [-126, 127] */
static LLVMValueRef pow2i(cg *g, LLVMValueRef n) {
    LLVMTypeRef I = g->i32;
    LLVMValueRef e = LLVMBuildShl(B, LLVMBuildAdd(B, n, ki(g, I, 127), ""), ki(g, I, 23), "");
    return LLVMBuildBitCast(B, e, g->f32, "");
}

/* 2^x: 2^(x - n) through exp on [-ln2/2, ln2/2], times 2^n applied in two halves */
LLVMValueRef vm_exp2(cg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->f32, I = g->i32;
    LLVMValueRef xc = sel(g, fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, -160.0)), LLVMConstReal(F, -160.0), x);
    xc = sel(g, fcmp(g, LLVMRealOGT, xc, LLVMConstReal(F, 130.0)), LLVMConstReal(F, 130.0), xc);
    LLVMValueRef n = intrin1(g, "llvm.rint", xc);
    LLVMValueRef f = LLVMBuildFSub(B, xc, n, "");
    LLVMValueRef r = vm_exp(g, LLVMBuildFMul(B, f, LLVMConstReal(F, 0.693147180559945309), ""));
    LLVMValueRef ni = LLVMBuildFPToSI(B, n, I, "");
    LLVMValueRef n1 = LLVMBuildAShr(B, ni, ki(g, I, 1), "");
    r = LLVMBuildFMul(B, LLVMBuildFMul(B, r, pow2i(g, n1), ""), pow2i(g, LLVMBuildSub(B, ni, n1, "")), "");
    return sel(g, isnan_(g, x), x, r);
}

/* log2(x) = e + log(m)/ln2 with x = m 2^e, m in [sqrt(1/2), sqrt(2)): exact at powers of 2 */
LLVMValueRef vm_log2(cg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->f32, I = g->i32;
    LLVMValueRef tiny = fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 1.17549435e-38));
    LLVMValueRef xs = sel(g, tiny, LLVMBuildFMul(B, x, LLVMConstReal(F, 8388608.0), ""), x);
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, I, "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, ki(g, I, 23), ""), ki(g, I, 127), "");
    e = LLVMBuildSub(B, e, sel(g, tiny, ki(g, I, 23), ki(g, I, 0)), "");
    LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, ki(g, I, 0x7FFFFF), ""), ki(g, I, 0x3F800000), ""), F, "");
    LLVMValueRef big = fcmp(g, LLVMRealOGT, m, LLVMConstReal(F, 1.41421356237));
    m = sel(g, big, LLVMBuildFMul(B, m, LLVMConstReal(F, 0.5), ""), m);
    e = sel(g, big, LLVMBuildAdd(B, e, ki(g, I, 1), ""), e);
    LLVMValueRef r = fma3(g, vm_log(g, m), LLVMConstReal(F, 1.44269504088896341), LLVMBuildSIToFP(B, e, F, ""));
    /* zero, negative, inf, NaN: what log gives */
    LLVMValueRef odd = LLVMBuildOr(B, fcmp(g, LLVMRealULE, x, LLVMConstReal(F, 0.0)),
                                   fcmp(g, LLVMRealOEQ, x, LLVMConstReal(F, INFINITY)), "");
    return sel(g, odd, vm_log(g, x), r);
}

/* atan(t) for t in [0, 1] and beyond (Cephes atanf, ~1 ulp) */
LLVMValueRef vm_atan(cg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->f32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef hi = fcmp(g, LLVMRealOGT, ax, LLVMConstReal(F, 2.414213562373095));
    LLVMValueRef mid = fcmp(g, LLVMRealOGT, ax, LLVMConstReal(F, 0.4142135623730950));
    LLVMValueRef one = LLVMConstReal(F, 1.0);
    LLVMValueRef t = sel(g, hi, LLVMBuildFDiv(B, LLVMConstReal(F, -1.0), ax, ""),
                         sel(g, mid, LLVMBuildFDiv(B, LLVMBuildFSub(B, ax, one, ""), LLVMBuildFAdd(B, ax, one, ""), ""), ax));
    LLVMValueRef y0 = sel(g, hi, LLVMConstReal(F, 1.5707963267948966), sel(g, mid, LLVMConstReal(F, 0.7853981633974483), LLVMConstReal(F, 0.0)));
    LLVMValueRef z = LLVMBuildFMul(B, t, t, "");
    LLVMValueRef p = fma3(g, LLVMConstReal(F, 8.05374449538e-2), z, LLVMConstReal(F, -1.38776856032e-1));
    p = fma3(g, p, z, LLVMConstReal(F, 1.99777106478e-1));
    p = fma3(g, p, z, LLVMConstReal(F, -3.33329491539e-1));
    LLVMValueRef r = LLVMBuildFAdd(B, y0, fma3(g, LLVMBuildFMul(B, p, z, ""), t, t), "");
    LLVMValueRef args[2] = {r, x};
    return cg_intrin(g, "llvm.copysign", &F, 1, args, 2); /* NaN stays NaN */
}

static LLVMValueRef signbit_(cg *g, LLVMValueRef x) {
    LLVMValueRef b = LLVMBuildBitCast(B, x, g->i32, "");
    return LLVMBuildICmp(B, LLVMIntSLT, b, ki(g, g->i32, 0), "");
}

LLVMValueRef vm_atan2(cg *g, LLVMValueRef y, LLVMValueRef x) {
    LLVMTypeRef F = g->f32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x), ay = intrin1(g, "llvm.fabs", y);
    LLVMValueRef swap = fcmp(g, LLVMRealOGT, ay, ax);
    LLVMValueRef t = LLVMBuildFDiv(B, sel(g, swap, ax, ay), sel(g, swap, ay, ax), "");
    LLVMValueRef a = vm_atan(g, t);
    LLVMValueRef r = sel(g, swap, LLVMBuildFSub(B, LLVMConstReal(F, 1.5707963267948966), a, ""), a);
    LLVMValueRef inf = LLVMConstReal(F, INFINITY), zero = LLVMConstReal(F, 0.0);
    r = sel(g, and_(g, fcmp(g, LLVMRealOEQ, ax, inf), fcmp(g, LLVMRealOEQ, ay, inf)), LLVMConstReal(F, 0.7853981633974483), r);
    r = sel(g, and_(g, fcmp(g, LLVMRealOEQ, ax, zero), fcmp(g, LLVMRealOEQ, ay, zero)), zero, r);
    r = sel(g, signbit_(g, x), LLVMBuildFSub(B, LLVMConstReal(F, 3.14159265358979323846), r, ""), r);
    LLVMValueRef args[2] = {r, y};
    r = cg_intrin(g, "llvm.copysign", &F, 1, args, 2);
    return sel(g, LLVMBuildOr(B, isnan_(g, x), isnan_(g, y), ""), LLVMBuildFAdd(B, x, y, ""), r);
}

/* fmod: f32 exactly through f64 (|a/b| < 2^29), f64 through LLVM's frem expansion */
LLVMValueRef vm_fmod(cg *g, LLVMValueRef a, LLVMValueRef b) {
    if (LLVMTypeOf(a) != g->f32) return LLVMBuildFRem(B, a, b, "");
    LLVMTypeRef D = g->f64;
    LLVMValueRef da = LLVMBuildFPExt(B, a, D, ""), db = LLVMBuildFPExt(B, b, D, "");
    LLVMValueRef q = intrin1(g, "llvm.trunc", LLVMBuildFDiv(B, da, db, ""));
    LLVMValueRef r = fma3(g, LLVMBuildFNeg(B, q, ""), db, da);
    r = sel(g, fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.fabs", db), LLVMConstReal(D, INFINITY)), da, r);
    LLVMValueRef args[2] = {LLVMBuildFPTrunc(B, r, g->f32, ""), a};
    LLVMTypeRef F = g->f32;
    return cg_intrin(g, "llvm.copysign", &F, 1, args, 2); /* fmod keeps the dividend's sign, -0 too */
}

/* f16/bf16 results (f32 registers rounded to 8/11 bits right after): exp through one MUFU
 * ex2.approx (~2 ulp of f32, plus |x|*2^-24 relative from the scaling by log2 e) and
 * division through div.full.f32 (2 ulp, full range) — errors far below the rounding that
 * follows. At 2 bytes per element, bf16 softmax is bound by instruction issue, not memory:
 * the polynomial exp and the IEEE division sequence were most of its instructions. */
LLVMValueRef vm_exp_approx(cg *g, LLVMValueRef a) {
    LLVMValueRef t = LLVMBuildFMul(B, a, kf(a, 1.4426950408889634), "");
    return cg_intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
}

/* f32 exp: t = rn(x log2e) and the part of x log2 e it lost,
 * lo = (x L2E - t) + x (log2 e - L2E) (the first term exact by an fma: the two-product of
 * x and the f32 constant L2E), then exp(x) = 2^t 2^lo = ex2.approx(t) * rn(1 + lo ln2):
 * |lo| <= 2^-17 on the clamped range, so the first-order step is exact to 2^-35. Error:
 * ex2.approx's own ~2 ulp plus two roundings (emulated in float64 with an exact 2^t: within
 * 1.93 ulp on [-104, 88.7]; without lo, 63 ulp at the ends). A product, not y + y (lo ln2)
 * as one fma: that is inf - inf = NaN where 2^t overflows. 8 instructions (clamps, mul,
 * 3 fma, ex2, mul) against the Cody-Waite form's ~19 (x = n ln2 + r, 2^r by ex2.approx, 2^n
 * in two exact steps: ~3 ulp) and the 6-term polynomial's ~25 (vmath.c, ~1 ulp); H200, same
 * run: softmax 32768 f32 0.89 -> 0.91 of copy bandwidth, 4096 0.93 -> 0.96 (run 4), so the
 * other two forms (an A/B switch) were removed. Subnormal results come from ex2.approx (not
 * .ftz) itself; NaN passes the clamps (ordered compares) and every step. */
LLVMValueRef vm_exp_ex2(cg *g, LLVMValueRef x0) {
    LLVMValueRef x = sel(g, fcmp(g, LLVMRealOLT, x0, kf(x0, -104.0)), kf(x0, -104.0), x0);
    x = sel(g, fcmp(g, LLVMRealOGT, x, kf(x0, 89.0)), kf(x0, 89.0), x);
    LLVMValueRef l2e = kf(x0, 1.4426950408889634); /* rounded to f32: 0x3FB8AA3B */
    LLVMValueRef t = LLVMBuildFMul(B, x, l2e, "");
    LLVMValueRef lo = fma3(g, x, l2e, LLVMBuildFNeg(B, t, ""));
    lo = fma3(g, x, kf(x0, 1.925963033500011e-08), lo); /* log2 e - L2E */
    LLVMValueRef y = cg_intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
    return LLVMBuildFMul(B, y, fma3(g, lo, kf(x0, 0.6931471805599453), kf(x0, 1.0)), "");
}
