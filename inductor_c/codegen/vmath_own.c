/* vmath_own.c — f32 math as scalar LLVM IR for targets without a libm (the NVPTX backend:
 * no libdevice is linked), used by the shared op layer (ops.c) where its target says
 * IC_MATH_OWN: sin/cos, tan, atan, atan2, exp2, log2, pow, fmod, and two exps built on the
 * NVPTX ex2.approx instruction (vm_exp_approx, vm_exp_ex2). Moved from the GPU code generator
 * (gpu_ops.c), where they were measured; values are scalars, not vectors. pow (f64 core) and
 * fmod (an exact loop: its own basic blocks) were rewritten after the first GPU run.
 */
#include <math.h>

#include "cg.h"

#define B g->b

/* sin / cos (Cephes sinf/cosf: reduction by pi/4 in three parts, degree-7/8 polynomials);
 * accurate to ~1 ulp for |x| < 8192, NaN for inf/NaN. */
LLVMValueRef vm_sincos(cg *g, LLVMValueRef x, bool want_cos) {
    LLVMTypeRef F = g->f32, I = g->i32;
    LLVMValueRef ax = cg_intrin1(g, "llvm.fabs", x);
    LLVMValueRef fin = cg_fcmp(g, LLVMRealOLT, ax, LLVMConstReal(F, 1e30));
    LLVMValueRef sx = cg_sel(g, fin, ax, LLVMConstReal(F, 0.0));
    LLVMValueRef j = LLVMBuildFPToSI(B, LLVMBuildFMul(B, sx, LLVMConstReal(F, 1.27323954473516), ""), I, "");
    j = LLVMBuildAnd(B, LLVMBuildAdd(B, j, cg_ki(I, 1), ""), cg_ki(I, ~1LL), ""); /* j += j & 1 */
    LLVMValueRef y = LLVMBuildSIToFP(B, j, F, "");
    LLVMValueRef ny = LLVMBuildFNeg(B, y, "");
    LLVMValueRef z = cg_fma(g, ny, LLVMConstReal(F, 0.78515625), sx);
    z = cg_fma(g, ny, LLVMConstReal(F, 2.4187564849853515625e-4), z);
    z = cg_fma(g, ny, LLVMConstReal(F, 3.77489497744594108e-8), z);
    LLVMValueRef j7 = LLVMBuildAnd(B, j, cg_ki(I, 7), "");
    LLVMValueRef hi = LLVMBuildICmp(B, LLVMIntUGT, j7, cg_ki(I, 3), "");
    LLVMValueRef jj = cg_sel(g, hi, LLVMBuildSub(B, j7, cg_ki(I, 4), ""), j7);
    LLVMValueRef zz = LLVMBuildFMul(B, z, z, "");
    /* cos poly */
    LLVMValueRef cp = cg_fma(g, LLVMConstReal(F, 2.443315711809948e-5), zz, LLVMConstReal(F, -1.388731625493765e-3));
    cp = cg_fma(g, cp, zz, LLVMConstReal(F, 4.166664568298827e-2));
    cp = LLVMBuildFMul(B, LLVMBuildFMul(B, cp, zz, ""), zz, "");
    cp = cg_fma(g, zz, LLVMConstReal(F, -0.5), cp);
    cp = LLVMBuildFAdd(B, cp, LLVMConstReal(F, 1.0), "");
    /* sin poly */
    LLVMValueRef sp = cg_fma(g, LLVMConstReal(F, -1.9515295891e-4), zz, LLVMConstReal(F, 8.3321608736e-3));
    sp = cg_fma(g, sp, zz, LLVMConstReal(F, -1.6666654611e-1));
    sp = cg_fma(g, LLVMBuildFMul(B, sp, zz, ""), z, z);
    LLVMValueRef mid = LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntEQ, jj, cg_ki(I, 1), ""),
                                   LLVMBuildICmp(B, LLVMIntEQ, jj, cg_ki(I, 2), ""), "");
    LLVMValueRef r, neg;
    if (!want_cos) {
        r = cg_sel(g, mid, cp, sp);
        neg = LLVMBuildXor(B, hi, cg_fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 0.0)), "");
    } else {
        r = cg_sel(g, mid, sp, cp);
        neg = LLVMBuildXor(B, hi, LLVMBuildICmp(B, LLVMIntUGT, jj, cg_ki(I, 1), ""), "");
    }
    r = cg_sel(g, neg, LLVMBuildFNeg(B, r, ""), r);
    return cg_sel(g, fin, r, LLVMBuildFSub(B, x, x, "")); /* inf - inf = NaN, NaN stays */
}

/* log(ax) in f64 for ax > 0 (ax = m 2^e, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s),
 * s = (m-1)/(m+1), |s| <= 0.1716: the series to s^19, ~1e-16); +inf for +inf. Subnormal f32
 * values are normal f64 values. */
static LLVMValueRef log64_(cg *g, LLVMValueRef ax) {
    LLVMTypeRef D = g->f64, I = g->i64;
    LLVMValueRef bits = LLVMBuildBitCast(B, ax, I, "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, cg_ki(I, 52), ""), cg_ki(I, 1023), "");
    LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, cg_ki(I, 0xFFFFFFFFFFFFFLL), ""),
                                                     cg_ki(I, 1023LL << 52), ""), D, "");
    LLVMValueRef big = cg_fcmp(g, LLVMRealOGT, m, LLVMConstReal(D, 1.4142135623730951));
    m = cg_sel(g, big, LLVMBuildFMul(B, m, LLVMConstReal(D, 0.5), ""), m);
    e = cg_sel(g, big, LLVMBuildAdd(B, e, cg_ki(I, 1), ""), e);
    LLVMValueRef one = LLVMConstReal(D, 1.0);
    LLVMValueRef s = LLVMBuildFDiv(B, LLVMBuildFSub(B, m, one, ""), LLVMBuildFAdd(B, m, one, ""), "");
    LLVMValueRef s2 = LLVMBuildFMul(B, s, s, "");
    LLVMValueRef p = LLVMConstReal(D, 1.0 / 19);
    for (int k = 8; k >= 0; k--) p = cg_fma(g, p, s2, LLVMConstReal(D, 1.0 / (2 * k + 1)));
    LLVMValueRef r = cg_fma(g, LLVMBuildSIToFP(B, e, D, ""), LLVMConstReal(D, 0.6931471805599453),
                            LLVMBuildFMul(B, LLVMBuildFMul(B, s, LLVMConstReal(D, 2.0), ""), p, ""));
    return cg_sel(g, cg_fcmp(g, LLVMRealOEQ, ax, LLVMConstReal(D, INFINITY)), ax, r);
}

/* exp(t) in f64 for a t that is not NaN, clamped to [-200, 200] (beyond f32's range both
 * ways): t = n ln2 + r (ln2 in two parts), exp(r) by its Taylor series to r^11 (~1e-15 on
 * |r| <= ln2/2), times 2^n built from its bits. */
static LLVMValueRef exp64_(cg *g, LLVMValueRef t) {
    LLVMTypeRef D = g->f64, I = g->i64;
    t = cg_sel(g, cg_fcmp(g, LLVMRealOLT, t, LLVMConstReal(D, -200.0)), LLVMConstReal(D, -200.0), t);
    t = cg_sel(g, cg_fcmp(g, LLVMRealOGT, t, LLVMConstReal(D, 200.0)), LLVMConstReal(D, 200.0), t);
    LLVMValueRef n = cg_intrin1(g, "llvm.rint", LLVMBuildFMul(B, t, LLVMConstReal(D, 1.4426950408889634), ""));
    LLVMValueRef r = cg_fma(g, LLVMBuildFNeg(B, n, ""), LLVMConstReal(D, 6.93147180369123816490e-01), t);
    r = cg_fma(g, LLVMBuildFNeg(B, n, ""), LLVMConstReal(D, 1.90821492927058770002e-10), r);
    double f = 1.0;
    for (int k = 2; k <= 11; k++) f *= k;
    LLVMValueRef p = LLVMConstReal(D, 1.0 / f);
    for (int k = 10; k >= 0; k--) {
        f = 1.0;
        for (int j = 2; j <= k; j++) f *= j;
        p = cg_fma(g, p, r, LLVMConstReal(D, 1.0 / f));
    }
    LLVMValueRef ni = LLVMBuildFPToSI(B, n, I, "");
    LLVMValueRef p2 = LLVMBuildBitCast(B, LLVMBuildShl(B, LLVMBuildAdd(B, ni, cg_ki(I, 1023), ""), cg_ki(I, 52), ""), D, "");
    return LLVMBuildFMul(B, p, p2, "");
}

/* x ** y in f32 (y not a special constant): exp(y log|x|) in f64 (~1e-15 before the rounding
 * to f32, as CUDA's powf is within 1-2 ulp), then C99's special cases as eager's pow gives
 * them: NaN operands (pow(1, y) and pow(x, 0) are 1), |x| = 1 with y = +-inf is 1, x = +-0
 * and x = -inf with odd integer y keep the sign, other negative finite x need an integer y. */
LLVMValueRef vm_pow(cg *g, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef F = g->f32, D = g->f64;
    LLVMValueRef zero = LLVMConstReal(F, 0.0), one = LLVMConstReal(F, 1.0), inf = LLVMConstReal(F, INFINITY);
    LLVMValueRef ax = cg_intrin1(g, "llvm.fabs", x);
    LLVMValueRef t = LLVMBuildFMul(B, LLVMBuildFPExt(B, y, D, ""), log64_(g, LLVMBuildFPExt(B, ax, D, "")), "");
    LLVMValueRef tnan = cg_isnan(g, t);
    t = cg_sel(g, tnan, LLVMConstReal(D, 0.0), t); /* no fptosi of NaN below; the cases set it */
    LLVMValueRef r = LLVMBuildFPTrunc(B, exp64_(g, t), F, "");
    LLVMValueRef ay = cg_intrin1(g, "llvm.fabs", y);
    LLVMValueRef yinf = cg_fcmp(g, LLVMRealOEQ, ay, inf);
    LLVMValueRef yint = cg_fcmp(g, LLVMRealOEQ, cg_intrin1(g, "llvm.trunc", y), y); /* +-inf too */
    LLVMValueRef h = LLVMBuildFMul(B, y, LLVMConstReal(F, 0.5), "");
    LLVMValueRef yodd = cg_and(g, yint, cg_fcmp(g, LLVMRealUNE, cg_intrin1(g, "llvm.trunc", h), h)); /* inf: even */
    LLVMValueRef xneg = cg_fcmp(g, LLVMRealOLT, x, zero);
    LLVMValueRef xinf = cg_fcmp(g, LLVMRealOEQ, ax, inf);
    LLVMValueRef nr = cg_sel(g, LLVMBuildOr(B, yint, xinf, ""), cg_sel(g, yodd, LLVMBuildFNeg(B, r, ""), r), LLVMConstReal(F, NAN));
    r = cg_sel(g, xneg, nr, r);
    /* x == +-0: sign of an odd power follows x */
    LLVMValueRef xz = cg_fcmp(g, LLVMRealOEQ, x, zero);
    LLVMValueRef zr = cg_sel(g, cg_fcmp(g, LLVMRealOGT, y, zero), zero, inf);
    LLVMValueRef args[2] = {zr, x};
    LLVMValueRef zs = cg_intrin(g, "llvm.copysign", &F, 1, args, 2);
    r = cg_sel(g, xz, cg_sel(g, yodd, zs, zr), r);
    r = cg_sel(g, cg_and(g, cg_fcmp(g, LLVMRealOEQ, ax, one), yinf), one, r);
    r = cg_sel(g, LLVMBuildOr(B, cg_isnan(g, x), cg_isnan(g, y), ""), LLVMConstReal(F, NAN), r);
    r = cg_sel(g, cg_fcmp(g, LLVMRealOEQ, x, one), one, r);
    return cg_sel(g, cg_fcmp(g, LLVMRealOEQ, y, zero), one, r);
}

/* 2^n for an i32 n in [-126, 127] */
static LLVMValueRef pow2i(cg *g, LLVMValueRef n) {
    LLVMTypeRef I = g->i32;
    LLVMValueRef e = LLVMBuildShl(B, LLVMBuildAdd(B, n, cg_ki(I, 127), ""), cg_ki(I, 23), "");
    return LLVMBuildBitCast(B, e, g->f32, "");
}

/* 2^x: 2^(x - n) through exp on [-ln2/2, ln2/2], times 2^n applied in two halves */
LLVMValueRef vm_exp2(cg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->f32, I = g->i32;
    LLVMValueRef xc = cg_sel(g, cg_fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, -160.0)), LLVMConstReal(F, -160.0), x);
    xc = cg_sel(g, cg_fcmp(g, LLVMRealOGT, xc, LLVMConstReal(F, 130.0)), LLVMConstReal(F, 130.0), xc);
    LLVMValueRef n = cg_intrin1(g, "llvm.rint", xc);
    LLVMValueRef f = LLVMBuildFSub(B, xc, n, "");
    LLVMValueRef r = vm_exp(g, LLVMBuildFMul(B, f, LLVMConstReal(F, 0.693147180559945309), ""));
    LLVMValueRef ni = LLVMBuildFPToSI(B, n, I, "");
    LLVMValueRef n1 = LLVMBuildAShr(B, ni, cg_ki(I, 1), "");
    r = LLVMBuildFMul(B, LLVMBuildFMul(B, r, pow2i(g, n1), ""), pow2i(g, LLVMBuildSub(B, ni, n1, "")), "");
    return cg_sel(g, cg_isnan(g, x), x, r);
}

/* log2(x) = e + log(m)/ln2 with x = m 2^e, m in [sqrt(1/2), sqrt(2)): exact at powers of 2 */
LLVMValueRef vm_log2(cg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->f32, I = g->i32;
    LLVMValueRef tiny = cg_fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 1.17549435e-38));
    LLVMValueRef xs = cg_sel(g, tiny, LLVMBuildFMul(B, x, LLVMConstReal(F, 8388608.0), ""), x);
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, I, "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, cg_ki(I, 23), ""), cg_ki(I, 127), "");
    e = LLVMBuildSub(B, e, cg_sel(g, tiny, cg_ki(I, 23), cg_ki(I, 0)), "");
    LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, cg_ki(I, 0x7FFFFF), ""), cg_ki(I, 0x3F800000), ""), F, "");
    LLVMValueRef big = cg_fcmp(g, LLVMRealOGT, m, LLVMConstReal(F, 1.41421356237));
    m = cg_sel(g, big, LLVMBuildFMul(B, m, LLVMConstReal(F, 0.5), ""), m);
    e = cg_sel(g, big, LLVMBuildAdd(B, e, cg_ki(I, 1), ""), e);
    LLVMValueRef r = cg_fma(g, vm_log(g, m), LLVMConstReal(F, 1.44269504088896341), LLVMBuildSIToFP(B, e, F, ""));
    /* zero, negative, inf, NaN: what log gives */
    LLVMValueRef odd = LLVMBuildOr(B, cg_fcmp(g, LLVMRealULE, x, LLVMConstReal(F, 0.0)),
                                   cg_fcmp(g, LLVMRealOEQ, x, LLVMConstReal(F, INFINITY)), "");
    return cg_sel(g, odd, vm_log(g, x), r);
}

/* atan(t) for t in [0, 1] and beyond (Cephes atanf, ~1 ulp) */
LLVMValueRef vm_atan(cg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->f32;
    LLVMValueRef ax = cg_intrin1(g, "llvm.fabs", x);
    LLVMValueRef hi = cg_fcmp(g, LLVMRealOGT, ax, LLVMConstReal(F, 2.414213562373095));
    LLVMValueRef mid = cg_fcmp(g, LLVMRealOGT, ax, LLVMConstReal(F, 0.4142135623730950));
    LLVMValueRef one = LLVMConstReal(F, 1.0);
    LLVMValueRef t = cg_sel(g, hi, LLVMBuildFDiv(B, LLVMConstReal(F, -1.0), ax, ""),
                         cg_sel(g, mid, LLVMBuildFDiv(B, LLVMBuildFSub(B, ax, one, ""), LLVMBuildFAdd(B, ax, one, ""), ""), ax));
    LLVMValueRef y0 = cg_sel(g, hi, LLVMConstReal(F, 1.5707963267948966), cg_sel(g, mid, LLVMConstReal(F, 0.7853981633974483), LLVMConstReal(F, 0.0)));
    LLVMValueRef z = LLVMBuildFMul(B, t, t, "");
    LLVMValueRef p = cg_fma(g, LLVMConstReal(F, 8.05374449538e-2), z, LLVMConstReal(F, -1.38776856032e-1));
    p = cg_fma(g, p, z, LLVMConstReal(F, 1.99777106478e-1));
    p = cg_fma(g, p, z, LLVMConstReal(F, -3.33329491539e-1));
    LLVMValueRef r = LLVMBuildFAdd(B, y0, cg_fma(g, LLVMBuildFMul(B, p, z, ""), t, t), "");
    LLVMValueRef args[2] = {r, x};
    return cg_intrin(g, "llvm.copysign", &F, 1, args, 2); /* NaN stays NaN */
}

static LLVMValueRef signbit_(cg *g, LLVMValueRef x) {
    LLVMValueRef b = LLVMBuildBitCast(B, x, g->i32, "");
    return LLVMBuildICmp(B, LLVMIntSLT, b, cg_ki(g->i32, 0), "");
}

LLVMValueRef vm_atan2(cg *g, LLVMValueRef y, LLVMValueRef x) {
    LLVMTypeRef F = g->f32;
    LLVMValueRef ax = cg_intrin1(g, "llvm.fabs", x), ay = cg_intrin1(g, "llvm.fabs", y);
    LLVMValueRef swap = cg_fcmp(g, LLVMRealOGT, ay, ax);
    LLVMValueRef t = LLVMBuildFDiv(B, cg_sel(g, swap, ax, ay), cg_sel(g, swap, ay, ax), "");
    LLVMValueRef a = vm_atan(g, t);
    LLVMValueRef r = cg_sel(g, swap, LLVMBuildFSub(B, LLVMConstReal(F, 1.5707963267948966), a, ""), a);
    LLVMValueRef inf = LLVMConstReal(F, INFINITY), zero = LLVMConstReal(F, 0.0);
    r = cg_sel(g, cg_and(g, cg_fcmp(g, LLVMRealOEQ, ax, inf), cg_fcmp(g, LLVMRealOEQ, ay, inf)), LLVMConstReal(F, 0.7853981633974483), r);
    r = cg_sel(g, cg_and(g, cg_fcmp(g, LLVMRealOEQ, ax, zero), cg_fcmp(g, LLVMRealOEQ, ay, zero)), zero, r);
    r = cg_sel(g, signbit_(g, x), LLVMBuildFSub(B, LLVMConstReal(F, 3.14159265358979323846), r, ""), r);
    LLVMValueRef args[2] = {r, y};
    r = cg_intrin(g, "llvm.copysign", &F, 1, args, 2);
    return cg_sel(g, LLVMBuildOr(B, cg_isnan(g, x), cg_isnan(g, y), ""), LLVMBuildFAdd(B, x, y, ""), r);
}

/* floor(log2(d)) of a finite d > 0 (i64), subnormals included */
static LLVMValueRef ilog2_64(cg *g, LLVMValueRef d) {
    LLVMTypeRef I = g->i64;
    LLVMValueRef bits = LLVMBuildBitCast(B, d, I, "");
    LLVMValueRef f = LLVMBuildAnd(B, LLVMBuildLShr(B, bits, cg_ki(I, 52), ""), cg_ki(I, 0x7FF), "");
    LLVMValueRef args[2] = {bits, LLVMConstInt(g->i1, 0, 0)};
    LLVMValueRef lz = cg_intrin(g, "llvm.ctlz", &I, 1, args, 2);
    LLVMValueRef sub = LLVMBuildSub(B, cg_ki(I, 63 - 1074), lz, "");
    return cg_sel(g, LLVMBuildICmp(B, LLVMIntEQ, f, cg_ki(I, 0), ""), sub, LLVMBuildSub(B, f, cg_ki(I, 1023), ""));
}

static LLVMValueRef pow2_64(cg *g, LLVMValueRef k) { /* 2^k, 0 <= k <= 1000 */
    LLVMTypeRef I = g->i64;
    return LLVMBuildBitCast(B, LLVMBuildShl(B, LLVMBuildAdd(B, k, cg_ki(I, 1023), ""), cg_ki(I, 52), ""), g->f64, "");
}

/* fmod exactly (eager's CUDA fmod is exact), f32 through f64: a loop over x = |a| while
 * x >= |b|: with yy = |b| 2^k, k = max(ilog2 x - ilog2 |b| - 50, 0), q = trunc(x / yy) is
 * floor(x / yy) or one more (x / yy < 2^51), r = fma(-q, yy, x) is exact (a multiple of
 * ulp(yy) below yy in magnitude), and r + yy where r < 0; each pass takes 50 bits off the
 * exponent gap (at most 43 passes, one for quotients below 2^51). The result has a's sign
 * (-0 too); NaN for a NaN operand, an infinite a or a zero b; a itself for an infinite b. */
static LLVMValueRef fmod64_(cg *g, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef D = g->f64, I = g->i64;
    LLVMValueRef inf = LLVMConstReal(D, INFINITY), zero = LLVMConstReal(D, 0.0);
    LLVMValueRef x0 = cg_intrin1(g, "llvm.fabs", a), y = cg_intrin1(g, "llvm.fabs", b);
    LLVMValueRef nan = LLVMBuildOr(B, LLVMBuildOr(B, cg_isnan(g, a), cg_isnan(g, b), ""),
                                   LLVMBuildOr(B, cg_fcmp(g, LLVMRealOEQ, x0, inf), cg_fcmp(g, LLVMRealOEQ, y, zero), ""), "");
    LLVMValueRef binf = cg_fcmp(g, LLVMRealOEQ, y, inf);
    LLVMValueRef skip = LLVMBuildOr(B, nan, binf, "");
    x0 = cg_sel(g, skip, zero, x0); /* the loop runs on finite values only */
    y = cg_sel(g, skip, LLVMConstReal(D, 1.0), y);
    LLVMValueRef ey = ilog2_64(g, y);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMValueRef fn = LLVMGetBasicBlockParent(pre);
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, fn, "fmod.head");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, fn, "fmod.body");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, fn, "fmod.done");
    LLVMBuildBr(B, head);
    LLVMPositionBuilderAtEnd(B, head);
    LLVMValueRef x = LLVMBuildPhi(B, D, "fmod.x");
    LLVMBuildCondBr(B, cg_fcmp(g, LLVMRealOGE, x, y), body, done);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef k = LLVMBuildSub(B, LLVMBuildSub(B, ilog2_64(g, x), ey, ""), cg_ki(I, 50), "");
    k = cg_sel(g, LLVMBuildICmp(B, LLVMIntSLT, k, cg_ki(I, 0), ""), cg_ki(I, 0), k);
    LLVMValueRef k1 = cg_sel(g, LLVMBuildICmp(B, LLVMIntSGT, k, cg_ki(I, 1000), ""), cg_ki(I, 1000), k);
    LLVMValueRef k2 = LLVMBuildSub(B, k, k1, "");
    LLVMValueRef k3 = cg_sel(g, LLVMBuildICmp(B, LLVMIntSGT, k2, cg_ki(I, 1000), ""), LLVMBuildSub(B, k2, cg_ki(I, 1000), ""), cg_ki(I, 0));
    k2 = LLVMBuildSub(B, k2, k3, "");
    LLVMValueRef yy = LLVMBuildFMul(B, LLVMBuildFMul(B, LLVMBuildFMul(B, y, pow2_64(g, k1), ""), pow2_64(g, k2), ""), pow2_64(g, k3), "");
    LLVMValueRef q = cg_intrin1(g, "llvm.trunc", LLVMBuildFDiv(B, x, yy, ""));
    LLVMValueRef r = cg_fma(g, LLVMBuildFNeg(B, q, ""), yy, x);
    LLVMValueRef xn = cg_sel(g, cg_fcmp(g, LLVMRealOLT, r, zero), LLVMBuildFAdd(B, r, yy, ""), r);
    LLVMBasicBlockRef tail = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, head);
    LLVMValueRef inc[2] = {x0, xn};
    LLVMBasicBlockRef from[2] = {pre, tail};
    LLVMAddIncoming(x, inc, from, 2);
    LLVMPositionBuilderAtEnd(B, done);
    LLVMValueRef args[2] = {x, a};
    LLVMValueRef res = cg_intrin(g, "llvm.copysign", &D, 1, args, 2); /* the dividend's sign, -0 too */
    res = cg_sel(g, binf, a, res);
    return cg_sel(g, nan, LLVMConstReal(D, NAN), res);
}

/* fmod for f32 (through f64: exact) and f64 */
LLVMValueRef vm_fmod(cg *g, LLVMValueRef a, LLVMValueRef b) {
    if (LLVMTypeOf(a) == g->f64) return fmod64_(g, a, b);
    LLVMValueRef r = fmod64_(g, LLVMBuildFPExt(B, a, g->f64, ""), LLVMBuildFPExt(B, b, g->f64, ""));
    return LLVMBuildFPTrunc(B, r, LLVMTypeOf(a), "");
}

/* f16/bf16 results (f32 registers rounded to 8/11 bits right after): exp through one MUFU
 * ex2.approx (~2 ulp of f32, plus |x|*2^-24 relative from the scaling by log2 e) and
 * division through div.full.f32 (2 ulp, full range) — errors far below the rounding that
 * follows. At 2 bytes per element, bf16 softmax is bound by instruction issue, not memory:
 * the polynomial exp and the IEEE division sequence were most of its instructions. */
LLVMValueRef vm_exp_approx(cg *g, LLVMValueRef a) {
    LLVMValueRef t = LLVMBuildFMul(B, a, cg_kf(a, 1.4426950408889634), "");
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
    LLVMValueRef x = cg_sel(g, cg_fcmp(g, LLVMRealOLT, x0, cg_kf(x0, -104.0)), cg_kf(x0, -104.0), x0);
    x = cg_sel(g, cg_fcmp(g, LLVMRealOGT, x, cg_kf(x0, 89.0)), cg_kf(x0, 89.0), x);
    LLVMValueRef l2e = cg_kf(x0, 1.4426950408889634); /* rounded to f32: 0x3FB8AA3B */
    LLVMValueRef t = LLVMBuildFMul(B, x, l2e, "");
    LLVMValueRef lo = cg_fma(g, x, l2e, LLVMBuildFNeg(B, t, ""));
    lo = cg_fma(g, x, cg_kf(x0, 1.925963033500011e-08), lo); /* log2 e - L2E */
    LLVMValueRef y = cg_intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
    return LLVMBuildFMul(B, y, cg_fma(g, lo, cg_kf(x0, 0.6931471805599453), cg_kf(x0, 1.0)), "");
}
