/* gpu_ops.c — the GPU code generator's f32 math (sin/cos, atan, exp, log2, ...) and pointwise ops.
 * Split out of gpu_nvptx.c (the driver): see its comment. */
#include "gpu_internal.h"

/* ---- f32 math not in vmath.c --------------------------------------------------------------- */
/* sin / cos (Cephes sinf/cosf: reduction by pi/4 in three parts, degree-7/8 polynomials);
 * accurate to ~1 ulp for |x| < 8192, NaN for inf/NaN. */
static LLVMValueRef sincos_f32(gg *g, LLVMValueRef x, bool want_cos) {
    LLVMTypeRef F = g->cg.f32, I = g->cg.i32;
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
static LLVMValueRef pow_f32(gg *g, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef F = g->cg.f32;
    LLVMValueRef zero = LLVMConstReal(F, 0.0), one = LLVMConstReal(F, 1.0);
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x);
    LLVMValueRef r = vm_exp(&g->cg, LLVMBuildFMul(B, y, vm_log(&g->cg, ax), ""));
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
    LLVMValueRef zs = intrin(g, "llvm.copysign", &F, 1, args, 2);
    r = sel(g, xz, sel(g, yodd, zs, zr), r);
    r = sel(g, fcmp(g, LLVMRealOEQ, x, one), one, r);
    return sel(g, fcmp(g, LLVMRealOEQ, y, zero), one, r);
}

/* 2^n for an i32 n in [-126, 127] */
static LLVMValueRef pow2i(gg *g, LLVMValueRef n) {
    LLVMTypeRef I = g->cg.i32;
    LLVMValueRef e = LLVMBuildShl(B, LLVMBuildAdd(B, n, ki(g, I, 127), ""), ki(g, I, 23), "");
    return LLVMBuildBitCast(B, e, g->cg.f32, "");
}

/* 2^x: 2^(x - n) through exp on [-ln2/2, ln2/2], times 2^n applied in two halves */
static LLVMValueRef exp2_f32(gg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32, I = g->cg.i32;
    LLVMValueRef xc = sel(g, fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, -160.0)), LLVMConstReal(F, -160.0), x);
    xc = sel(g, fcmp(g, LLVMRealOGT, xc, LLVMConstReal(F, 130.0)), LLVMConstReal(F, 130.0), xc);
    LLVMValueRef n = intrin1(g, "llvm.rint", xc);
    LLVMValueRef f = LLVMBuildFSub(B, xc, n, "");
    LLVMValueRef r = vm_exp(&g->cg, LLVMBuildFMul(B, f, LLVMConstReal(F, 0.693147180559945309), ""));
    LLVMValueRef ni = LLVMBuildFPToSI(B, n, I, "");
    LLVMValueRef n1 = LLVMBuildAShr(B, ni, ki(g, I, 1), "");
    r = LLVMBuildFMul(B, LLVMBuildFMul(B, r, pow2i(g, n1), ""), pow2i(g, LLVMBuildSub(B, ni, n1, "")), "");
    return sel(g, isnan_(g, x), x, r);
}

/* log2(x) = e + log(m)/ln2 with x = m 2^e, m in [sqrt(1/2), sqrt(2)): exact at powers of 2 */
static LLVMValueRef log2_f32(gg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32, I = g->cg.i32;
    LLVMValueRef tiny = fcmp(g, LLVMRealOLT, x, LLVMConstReal(F, 1.17549435e-38));
    LLVMValueRef xs = sel(g, tiny, LLVMBuildFMul(B, x, LLVMConstReal(F, 8388608.0), ""), x);
    LLVMValueRef bits = LLVMBuildBitCast(B, xs, I, "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, ki(g, I, 23), ""), ki(g, I, 127), "");
    e = LLVMBuildSub(B, e, sel(g, tiny, ki(g, I, 23), ki(g, I, 0)), "");
    LLVMValueRef m = LLVMBuildBitCast(B, LLVMBuildOr(B, LLVMBuildAnd(B, bits, ki(g, I, 0x7FFFFF), ""), ki(g, I, 0x3F800000), ""), F, "");
    LLVMValueRef big = fcmp(g, LLVMRealOGT, m, LLVMConstReal(F, 1.41421356237));
    m = sel(g, big, LLVMBuildFMul(B, m, LLVMConstReal(F, 0.5), ""), m);
    e = sel(g, big, LLVMBuildAdd(B, e, ki(g, I, 1), ""), e);
    LLVMValueRef r = fma3(g, vm_log(&g->cg, m), LLVMConstReal(F, 1.44269504088896341), LLVMBuildSIToFP(B, e, F, ""));
    /* zero, negative, inf, NaN: what log gives */
    LLVMValueRef odd = LLVMBuildOr(B, fcmp(g, LLVMRealULE, x, LLVMConstReal(F, 0.0)),
                                   fcmp(g, LLVMRealOEQ, x, LLVMConstReal(F, INFINITY)), "");
    return sel(g, odd, vm_log(&g->cg, x), r);
}

/* atan(t) for t in [0, 1] and beyond (Cephes atanf, ~1 ulp) */
static LLVMValueRef atan_f32(gg *g, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32;
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
    return intrin(g, "llvm.copysign", &F, 1, args, 2); /* NaN stays NaN */
}

static LLVMValueRef signbit_(gg *g, LLVMValueRef x) {
    LLVMValueRef b = LLVMBuildBitCast(B, x, g->cg.i32, "");
    return LLVMBuildICmp(B, LLVMIntSLT, b, ki(g, g->cg.i32, 0), "");
}

static LLVMValueRef atan2_f32(gg *g, LLVMValueRef y, LLVMValueRef x) {
    LLVMTypeRef F = g->cg.f32;
    LLVMValueRef ax = intrin1(g, "llvm.fabs", x), ay = intrin1(g, "llvm.fabs", y);
    LLVMValueRef swap = fcmp(g, LLVMRealOGT, ay, ax);
    LLVMValueRef t = LLVMBuildFDiv(B, sel(g, swap, ax, ay), sel(g, swap, ay, ax), "");
    LLVMValueRef a = atan_f32(g, t);
    LLVMValueRef r = sel(g, swap, LLVMBuildFSub(B, LLVMConstReal(F, 1.5707963267948966), a, ""), a);
    LLVMValueRef inf = LLVMConstReal(F, INFINITY), zero = LLVMConstReal(F, 0.0);
    r = sel(g, and_(g, fcmp(g, LLVMRealOEQ, ax, inf), fcmp(g, LLVMRealOEQ, ay, inf)), LLVMConstReal(F, 0.7853981633974483), r);
    r = sel(g, and_(g, fcmp(g, LLVMRealOEQ, ax, zero), fcmp(g, LLVMRealOEQ, ay, zero)), zero, r);
    r = sel(g, signbit_(g, x), LLVMBuildFSub(B, LLVMConstReal(F, 3.14159265358979323846), r, ""), r);
    LLVMValueRef args[2] = {r, y};
    r = intrin(g, "llvm.copysign", &F, 1, args, 2);
    return sel(g, LLVMBuildOr(B, isnan_(g, x), isnan_(g, y), ""), LLVMBuildFAdd(B, x, y, ""), r);
}

/* fmod: f32 exactly through f64 (|a/b| < 2^29), f64 through LLVM's frem expansion */
static LLVMValueRef fmod_(gg *g, LLVMValueRef a, LLVMValueRef b) {
    if (LLVMTypeOf(a) != g->cg.f32) return LLVMBuildFRem(B, a, b, "");
    LLVMTypeRef D = g->cg.f64;
    LLVMValueRef da = LLVMBuildFPExt(B, a, D, ""), db = LLVMBuildFPExt(B, b, D, "");
    LLVMValueRef q = intrin1(g, "llvm.trunc", LLVMBuildFDiv(B, da, db, ""));
    LLVMValueRef r = fma3(g, LLVMBuildFNeg(B, q, ""), db, da);
    r = sel(g, fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.fabs", db), LLVMConstReal(D, INFINITY)), da, r);
    LLVMValueRef args[2] = {LLVMBuildFPTrunc(B, r, g->cg.f32, ""), a};
    LLVMTypeRef F = g->cg.f32;
    return intrin(g, "llvm.copysign", &F, 1, args, 2); /* fmod keeps the dividend's sign, -0 too */
}

/* float fmod / remainder / floor_divide with eager's rules (as the CPU backend) */
static LLVMValueRef fdivmod(gg *g, ic_op op, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a));
    LLVMValueRef mod = fmod_(g, a, b);
    if (op == IC_OP_FMOD) return mod;
    LLVMValueRef sdiff = LLVMBuildXor(B, fcmp(g, LLVMRealOLT, mod, z), fcmp(g, LLVMRealOLT, b, z), "");
    LLVMValueRef fix = LLVMBuildAnd(B, fcmp(g, LLVMRealONE, mod, z), sdiff, "");
    if (op == IC_OP_REMAINDER) return sel(g, fix, LLVMBuildFAdd(B, mod, b, ""), mod);
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef div = LLVMBuildFDiv(B, LLVMBuildFSub(B, a, mod, ""), b, "");
    div = sel(g, fix, LLVMBuildFSub(B, div, kf(a, 1.0), ""), div);
    LLVMValueRef fl = intrin1(g, "llvm.floor", div);
    LLVMValueRef up = fcmp(g, LLVMRealOGT, LLVMBuildFSub(B, div, fl, ""), kf(a, 0.5));
    fl = sel(g, up, LLVMBuildFAdd(B, fl, kf(a, 1.0), ""), fl);
    LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
    LLVMValueRef args[2] = {z, q};
    LLVMValueRef zs = intrin(g, "llvm.copysign", &ty, 1, args, 2);
    LLVMValueRef r = sel(g, fcmp(g, LLVMRealUNE, div, z), fl, zs);
    return sel(g, fcmp(g, LLVMRealOEQ, b, z), q, r);
}

/* integer versions (as the CPU backend): a zero divisor gives garbage, INT_MIN / -1 wraps */
static LLVMValueRef idivmod(gg *g, ic_op op, ic_dtype t, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    LLVMValueRef z = LLVMConstNull(ty), one = ki(g, ty, 1);
    if (t == IC_BOOL || t == IC_U8) {
        LLVMValueRef bb = sel(g, LLVMBuildICmp(B, LLVMIntEQ, b, z, ""), one, b);
        return op == IC_OP_FLOOR_DIVIDE ? LLVMBuildUDiv(B, a, bb, "") : LLVMBuildURem(B, a, bb, "");
    }
    LLVMValueRef m1 = LLVMBuildICmp(B, LLVMIntEQ, b, ki(g, ty, -1), "");
    LLVMValueRef bad = LLVMBuildOr(B, m1, LLVMBuildICmp(B, LLVMIntEQ, b, z, ""), "");
    LLVMValueRef bb = sel(g, bad, one, b);
    LLVMValueRef q = LLVMBuildSDiv(B, a, bb, ""), r = LLVMBuildSRem(B, a, bb, "");
    q = sel(g, m1, LLVMBuildNeg(B, a, ""), q);
    r = sel(g, m1, z, r);
    if (op == IC_OP_FMOD) return r;
    LLVMValueRef fix = LLVMBuildAnd(B, LLVMBuildICmp(B, LLVMIntNE, r, z, ""),
                                    LLVMBuildICmp(B, LLVMIntSLT, LLVMBuildXor(B, r, b, ""), z, ""), "");
    if (op == IC_OP_REMAINDER) return sel(g, fix, LLVMBuildAdd(B, r, b, ""), r);
    return sel(g, fix, LLVMBuildSub(B, q, one, ""), q);
}

/* ---- pointwise ops ------------------------------------------------------------------------ */
LLVMValueRef fmaxmin(gg *g, LLVMValueRef a, LLVMValueRef b, bool max) {
    if (g->sm >= 80 && LLVMTypeOf(a) == g->cg.f32) { /* one max.NaN / min.NaN (PTX 7.0) */
        LLVMValueRef v[2] = {a, b};
        LLVMTypeRef t = g->cg.f32;
        return intrin(g, max ? "llvm.maximum" : "llvm.minimum", &t, 1, v, 2);
    }
    LLVMValueRef r = sel(g, fcmp(g, max ? LLVMRealOGT : LLVMRealOLT, a, b), a, b);
    r = sel(g, isnan_(g, a), a, r);
    return sel(g, isnan_(g, b), b, r);
}

LLVMValueRef imaxmin(gg *g, LLVMValueRef a, LLVMValueRef b, bool max, ic_dtype t) {
    LLVMIntPredicate p = is_unsigned(t) ? (max ? LLVMIntUGT : LLVMIntULT) : (max ? LLVMIntSGT : LLVMIntSLT);
    return sel(g, LLVMBuildICmp(B, p, a, b, ""), a, b);
}

static _Noreturn void no_f64(gg *g, ic_op op) {
    ic_fail(g->c, IC_EUNSUPPORTED, "%s in f64 on the GPU (no libdevice)", ic_op_name(op));
}

static LLVMValueRef sigmoid(gg *g, LLVMValueRef a, ic_dtype t) {
    if (t != IC_F32) no_f64(g, IC_OP_SIGMOID);
    return vm_sigmoid(&g->cg, a);
}

/* f16/bf16 results (f32 registers rounded to 8/11 bits right after): exp through one MUFU
 * ex2.approx (~2 ulp of f32, plus |x|*2^-24 relative from the scaling by log2 e) and
 * division through div.full.f32 (2 ulp, full range) — errors far below the rounding that
 * follows. At 2 bytes per element, bf16 softmax is bound by instruction issue, not memory:
 * the polynomial exp and the IEEE division sequence were most of its instructions. */
LLVMValueRef exp_half(gg *g, LLVMValueRef a) {
    LLVMValueRef t = LLVMBuildFMul(B, a, kf(a, 1.4426950408889634), "");
    return intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
}

static LLVMValueRef exp_half_cb(void *g, LLVMValueRef a) { return exp_half(g, a); }

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
static LLVMValueRef exp_f32(gg *g, LLVMValueRef x0) {
    LLVMValueRef x = sel(g, fcmp(g, LLVMRealOLT, x0, kf(x0, -104.0)), kf(x0, -104.0), x0);
    x = sel(g, fcmp(g, LLVMRealOGT, x, kf(x0, 89.0)), kf(x0, 89.0), x);
    LLVMValueRef l2e = kf(x0, 1.4426950408889634); /* rounded to f32: 0x3FB8AA3B */
    LLVMValueRef t = LLVMBuildFMul(B, x, l2e, "");
    LLVMValueRef lo = fma3(g, x, l2e, LLVMBuildFNeg(B, t, ""));
    lo = fma3(g, x, kf(x0, 1.925963033500011e-08), lo); /* log2 e - L2E */
    LLVMValueRef y = intrin(g, "llvm.nvvm.ex2.approx.f", NULL, 0, &t, 1);
    return LLVMBuildFMul(B, y, fma3(g, lo, kf(x0, 0.6931471805599453), kf(x0, 1.0)), "");
}

/* the exp inside f32 tanh and sigmoid (silu, gelu_tanh) (cg.exp_fn).
 * erf_fast_exp: inside f32 erf and gelu, the exp of erf's outer piece (|a| > 0.93), erfc(|a|)
 * = exp(r) with r in [-a^2 - 1, -0.8], is one ex2.approx of r log2 e (exp_half): relative
 * error <= |r| log2e 2^-24 + 2^-22, below 1e-6 while erfc > 1e-4, and erf = 1 - erfc or
 * gelu's 2 - erfc take it as an absolute error below an ulp; in gelu's negative tail
 * (x/2 erfc) it stays relative, at values that are tiny (eager's own 1 + erf loses them
 * entirely there). f32 gelu of 64 MB was bound by instruction issue: 0.82 of copy bandwidth
 * with the Cody-Waite exp (58 instructions an element), torch.compile's libdevice erf 0.96. */
LLVMValueRef exp_f32_cb(void *g, LLVMValueRef x) { return exp_f32(g, x); }

/* gelu for f16/bf16 results: erf's outer piece through exp_half (bf16 GELU at 4 KB rows is
 * bound by instruction issue: the polynomial exp was a third of its instructions) */
LLVMValueRef gelu_half(gg *g, LLVMValueRef a) {
    LLVMValueRef r = vm_gelu_ex(&g->cg, a, exp_half_cb, g);
    return sel(g, fcmp(g, LLVMRealOEQ, a, kf(a, INFINITY)), a, r);
}

LLVMValueRef div_half(gg *g, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef at[2] = {g->cg.f32, g->cg.f32};
    LLVMTypeRef ft = LLVMFunctionType(g->cg.f32, at, 2, 0);
    static const char text[] = "div.full.f32 $0, $1, $2;", cons[] = "=f,f,f";
    LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef v[2] = {a, b};
    return LLVMBuildCall2(B, ft, ia, v, 2, "");
}


/* V2: a / b for f16/bf16 results with b the same in every lane (softmax's row sum): one
 * rcp.approx.f32 (1 ulp, full range, subnormals kept) per generation and a multiplication
 * per lane; 0 and inf divisors give inf / 0 products like the division. */
LLVMValueRef div_half_rcp(gg *g, LLVMValueRef a, ic_xid bx) {
    if (g->rcp_gen != g->gen || g->rcp_x != bx) {
        LLVMTypeRef ft = LLVMFunctionType(g->cg.f32, &g->cg.f32, 1, 0);
        static const char text[] = "rcp.approx.f32 $0, $1;", cons[] = "=f,f";
        LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                           LLVMInlineAsmDialectATT, 0);
        LLVMValueRef b = val(g, bx, 0);
        g->rcp_v = LLVMBuildCall2(B, ft, ia, &b, 1, "");
        g->rcp_x = bx;
        g->rcp_gen = g->gen;
    }
    return LLVMBuildFMul(B, a, g->rcp_v, "");
}

/* V2: softmax's f32 division by its row sum, a / s with s = sum(exp(x - max(x))) over the
 * row: s is 1 <= s <= n (or NaN, or inf with x), so 1/s is a normal number and a * rn(1/s)
 * is within about 1 ulp of a / s (IEEE division: 0.5). One div.rn per chunk instead of one
 * per element (each ~9 SASS instructions: f32 softmax is bound by instruction issue). Only
 * that pattern: for other divisors 1/s may overflow or lose bits as a subnormal. */
bool softmax_sum(gg *g, ic_xid bx) {
    const ic_x *s = &g->c->xs[bx];
    if (s->kind != X_ROWVAL || !g->k || s->a < 0 || s->a >= g->k->nitems) return false;
    const ic_item *it = &g->k->items[s->a];
    if (it->kind != IT_REDUCE || it->red_op != IC_OP_SUM || it->acc != IC_F32) return false;
    const ic_x *e = &g->c->xs[it->expr];
    if (e->kind != X_OP || e->op != IC_OP_EXP || e->dtype != IC_F32) return false;
    const ic_x *d = &g->c->xs[e->a];
    if (d->kind != X_OP || d->op != IC_OP_SUB) return false;
    const ic_x *m = &g->c->xs[d->b];
    if (m->kind != X_ROWVAL || m->a < 0 || m->a >= g->k->nitems) return false;
    const ic_item *mi = &g->k->items[m->a];
    return mi->kind == IT_REDUCE && mi->red_op == IC_OP_AMAX && mi->expr == d->a && mi->acc == IC_F32;
}

LLVMValueRef div_rowsum(gg *g, LLVMValueRef a, ic_xid bx) {
    if (g->rcp32_gen != g->gen || g->rcp32_x != bx) {
        g->rcp32_v = LLVMBuildFDiv(B, kf(a, 1.0), val(g, bx, 0), "");
        g->rcp32_x = bx;
        g->rcp32_gen = g->gen;
    }
    return LLVMBuildFMul(B, a, g->rcp32_v, "");
}

LLVMValueRef unary(gg *g, ic_op op, ic_dtype t, LLVMValueRef a) {
    LLVMTypeRef ty = LLVMTypeOf(a);
    bool f = ic_is_float(t), f32 = ty == g->cg.f32;
    cg *C = &g->cg;
    switch (op) {
    case IC_OP_NEG: return f ? LLVMBuildFNeg(B, a, "") : LLVMBuildNeg(B, a, "");
    case IC_OP_ABS:
        if (f) return intrin1(g, "llvm.fabs", a);
        if (is_unsigned(t)) return a;
        return sel(g, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstNull(ty), ""), LLVMBuildNeg(B, a, ""), a);
    case IC_OP_RELU:
        if (f) return sel(g, fcmp(g, LLVMRealOLT, a, LLVMConstNull(ty)), LLVMConstNull(ty), a);
        if (is_unsigned(t)) return a;
        return sel(g, LLVMBuildICmp(B, LLVMIntSLT, a, LLVMConstNull(ty), ""), LLVMConstNull(ty), a);
    case IC_OP_LOGICAL_NOT: return LLVMBuildNot(B, a, "");
    case IC_OP_SQRT: return intrin1(g, "llvm.sqrt", a);
    case IC_OP_RSQRT: return LLVMBuildFDiv(B, kf(a, 1.0), intrin1(g, "llvm.sqrt", a), "");
    case IC_OP_RECIPROCAL: return LLVMBuildFDiv(B, kf(a, 1.0), a, "");
    case IC_OP_FLOOR: return f ? intrin1(g, "llvm.floor", a) : a;
    case IC_OP_CEIL: return f ? intrin1(g, "llvm.ceil", a) : a;
    case IC_OP_ROUND: return f ? intrin1(g, "llvm.roundeven", a) : a;
    case IC_OP_TRUNC: return f ? intrin1(g, "llvm.trunc", a) : a;
    case IC_OP_SIGN: {
        if (t == IC_BOOL) return a;
        LLVMValueRef z = LLVMConstNull(ty);
        LLVMValueRef pos = f ? fcmp(g, LLVMRealOGT, a, z) : LLVMBuildICmp(B, is_unsigned(t) ? LLVMIntUGT : LLVMIntSGT, a, z, "");
        LLVMValueRef neg = f ? fcmp(g, LLVMRealOLT, a, z) : LLVMBuildICmp(B, LLVMIntSLT, a, z, "");
        LLVMValueRef one = f ? kf(a, 1.0) : ki(g, ty, 1), mone = f ? kf(a, -1.0) : ki(g, ty, -1);
        return sel(g, pos, one, sel(g, neg, mone, z));
    }
    case IC_OP_ISNAN: return f ? isnan_(g, a) : LLVMConstInt(g->cg.i1, 0, 0);
    case IC_OP_ISINF:
        return f ? fcmp(g, LLVMRealOEQ, intrin1(g, "llvm.fabs", a), kf(a, INFINITY)) : LLVMConstInt(g->cg.i1, 0, 0);
    case IC_OP_ISFINITE:
        return f ? fcmp(g, LLVMRealOLT, intrin1(g, "llvm.fabs", a), kf(a, INFINITY)) : LLVMConstInt(g->cg.i1, 1, 0);
    case IC_OP_BITWISE_NOT: return LLVMBuildNot(B, a, "");
    default: break;
    }
    if (!f32 && ty == g->cg.f64) no_f64(g, op);
    if (!f32) ic_fail(g->c, IC_EUNSUPPORTED, "GPU codegen: %s on %s", ic_op_name(op), ic_dtype_name(t));
    switch (op) {
    case IC_OP_EXP: return exp_f32(g, a);
    case IC_OP_LOG: return vm_log(C, a);
    case IC_OP_SIGMOID: return vm_sigmoid(C, a);
    case IC_OP_TANH: return vm_tanh(C, a);
    case IC_OP_SILU: return LLVMBuildFMul(B, a, vm_sigmoid(C, a), "");
    case IC_OP_GELU: {
        /* gelu(+inf) = +inf, as CUDA eager gives it. The exp of erf's outer piece is one
         * ex2.approx (erf_fast_exp) */
        LLVMValueRef r = vm_gelu_ex(C, a, exp_half_cb, g);
        return sel(g, fcmp(g, LLVMRealOEQ, a, kf(a, INFINITY)), a, r);
    }
    case IC_OP_GELU_TANH: {
        /* x/2 (1 + tanh(u)) = x * sigmoid(2u) */
        LLVMValueRef x3 = LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
        LLVMValueRef in = LLVMBuildFAdd(B, a, LLVMBuildFMul(B, x3, kf(a, 0.044715), ""), "");
        in = LLVMBuildFMul(B, in, kf(a, 2 * 0.79788456080286535588), "");
        return LLVMBuildFMul(B, a, sigmoid(g, in, t), "");
    }
    case IC_OP_SIN: return sincos_f32(g, a, false);
    case IC_OP_COS: return sincos_f32(g, a, true);
    case IC_OP_TAN: return LLVMBuildFDiv(B, sincos_f32(g, a, false), sincos_f32(g, a, true), "");
    case IC_OP_ATAN: return atan_f32(g, a);
    case IC_OP_ERF: {
        LLVMValueRef (*keep)(void *, LLVMValueRef) = C->exp_fn;
        C->exp_fn = exp_half_cb; /* erf_fast_exp */
        LLVMValueRef r = vm_erf(C, a);
        C->exp_fn = keep;
        return r;
    }
    case IC_OP_EXP2: return exp2_f32(g, a);
    case IC_OP_LOG2: return log2_f32(g, a);
    case IC_OP_LOG1P: {
        /* log(u) - ((u - 1) - x) / u, u = 1 + x: exact for tiny x */
        LLVMValueRef u = LLVMBuildFAdd(B, kf(a, 1.0), a, "");
        LLVMValueRef corr = LLVMBuildFDiv(B, LLVMBuildFSub(B, LLVMBuildFSub(B, u, kf(a, 1.0), ""), a, ""), u, "");
        LLVMValueRef r = LLVMBuildFSub(B, vm_log(C, u), corr, "");
        r = sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, INFINITY)), u, r);
        return sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, 1.0)), a, r);
    }
    case IC_OP_EXPM1: {
        /* Kahan: (u - 1) * x / log(u), u = exp(x) */
        LLVMValueRef u = vm_exp(C, a);
        LLVMValueRef um1 = LLVMBuildFSub(B, u, kf(a, 1.0), "");
        LLVMValueRef r = LLVMBuildFDiv(B, LLVMBuildFMul(B, um1, a, ""), vm_log(C, u), "");
        r = sel(g, fcmp(g, LLVMRealOEQ, um1, kf(a, -1.0)), um1, r);
        r = sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, INFINITY)), u, r);
        return sel(g, fcmp(g, LLVMRealOEQ, u, kf(a, 1.0)), a, r);
    }
    default: ic_fail(g->c, IC_EUNSUPPORTED, "GPU codegen: unary %s", ic_op_name(op));
    }
}

static LLVMValueRef pow_(gg *g, LLVMValueRef a, LLVMValueRef b, ic_xid bx) {
    const ic_x *e = &g->c->xs[bx];
    if (e->kind == X_CONST) {
        double p = e->cval;
        if (p == 1.0) return a;
        if (p == 2.0) return LLVMBuildFMul(B, a, a, "");
        if (p == 3.0) return LLVMBuildFMul(B, LLVMBuildFMul(B, a, a, ""), a, "");
        if (p == 0.5) return intrin1(g, "llvm.sqrt", a);
        if (p == -1.0) return LLVMBuildFDiv(B, kf(a, 1.0), a, "");
        if (p == -2.0) return LLVMBuildFDiv(B, kf(a, 1.0), LLVMBuildFMul(B, a, a, ""), "");
        if (p == -0.5) return LLVMBuildFDiv(B, kf(a, 1.0), intrin1(g, "llvm.sqrt", a), "");
        if (p == 0.0) return kf(a, 1.0);
    }
    if (LLVMTypeOf(a) != g->cg.f32) no_f64(g, IC_OP_POW);
    return pow_f32(g, a, b);
}

LLVMValueRef binary(gg *g, ic_op op, ic_dtype ct, LLVMValueRef a, LLVMValueRef b, ic_xid bx) {
    bool f = ic_is_float(ct), u = is_unsigned(ct);
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
    case IC_OP_MAXIMUM: return f ? fmaxmin(g, a, b, true) : imaxmin(g, a, b, true, ct);
    case IC_OP_MINIMUM: return f ? fmaxmin(g, a, b, false) : imaxmin(g, a, b, false, ct);
    case IC_OP_POW:
        if (f) return pow_(g, a, b, bx);
        break;
    case IC_OP_BITWISE_AND: return LLVMBuildAnd(B, a, b, "");
    case IC_OP_BITWISE_OR: return LLVMBuildOr(B, a, b, "");
    case IC_OP_BITWISE_XOR: case IC_OP_LOGICAL_XOR: return LLVMBuildXor(B, a, b, "");
    case IC_OP_FMOD: case IC_OP_REMAINDER: case IC_OP_FLOOR_DIVIDE:
        return f ? fdivmod(g, op, a, b) : idivmod(g, op, ct, a, b);
    case IC_OP_ATAN2:
        if (LLVMTypeOf(a) == g->cg.f32) return atan2_f32(g, a, b);
        no_f64(g, op);
    case IC_OP_EQ: return f ? fcmp(g, LLVMRealOEQ, a, b) : LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
    case IC_OP_NE: return f ? fcmp(g, LLVMRealUNE, a, b) : LLVMBuildICmp(B, LLVMIntNE, a, b, "");
    case IC_OP_LT: return f ? fcmp(g, LLVMRealOLT, a, b) : LLVMBuildICmp(B, u ? LLVMIntULT : LLVMIntSLT, a, b, "");
    case IC_OP_LE: return f ? fcmp(g, LLVMRealOLE, a, b) : LLVMBuildICmp(B, u ? LLVMIntULE : LLVMIntSLE, a, b, "");
    case IC_OP_GT: return f ? fcmp(g, LLVMRealOGT, a, b) : LLVMBuildICmp(B, u ? LLVMIntUGT : LLVMIntSGT, a, b, "");
    case IC_OP_GE: return f ? fcmp(g, LLVMRealOGE, a, b) : LLVMBuildICmp(B, u ? LLVMIntUGE : LLVMIntSGE, a, b, "");
    default: break;
    }
    ic_fail(g->c, IC_EUNSUPPORTED, "GPU codegen: binary %s on %s", ic_op_name(op), ic_dtype_name(ct));
}
