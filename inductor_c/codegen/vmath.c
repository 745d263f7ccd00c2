/* vmath.c — f32 transcendentals (and f64 sin/cos/tan) as straight-line LLVM IR, so they
 * vectorize with the loop body instead of calling scalar libm in the hot loop.
 *
 * Contract: inputs/outputs are float or <VF x float>; results are within ~1 ulp of the
 * correctly rounded value (checked against libm over the whole range: exp, log, tanh,
 * erf max 1 ulp), and handle inf, NaN, zero and denormal inputs like libm.
 *   exp: Cody–Waite reduction by ln2, degree-6 Cephes polynomial, 2^n applied in two
 *        halves so results in the denormal range and overflow to inf come out right.
 *   log: Cephes logf (mantissa in [sqrt(.5), sqrt(2)), degree-9 polynomial).
 *   tanh: odd polynomial below 0.625, 1 - 2/(exp(2|x|)+1) above.
 *   erf: two minimax pieces (njuffa), the outer one through exp.
 *   sin, cos, tan: vm_trig below (f32 and f64; one branch to libm for huge arguments).
 */
#include <llvm-c/Core.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cg.h"

static LLVMTypeRef ity(cg *g, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) return LLVMVectorType(g->i32, LLVMGetVectorSize(t));
    return g->i32;
}

#define K(v) cg_constf(g, T, (v))
#define KI(v) cg_consti(g, IT, (v))
#define B g->b

static LLVMValueRef fma3(cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[3] = {a, b, c};
    return cg_intrin(g, "llvm.fmuladd", &t, 1, args, 3);
}

static LLVMValueRef fabs1(cg *g, LLVMValueRef a) {
    LLVMTypeRef t = LLVMTypeOf(a);
    return cg_intrin(g, "llvm.fabs", &t, 1, &a, 1);
}

static LLVMValueRef sel(cg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b,
                        LLVMValueRef t, LLVMValueRef f) {
    return LLVMBuildSelect(B, LLVMBuildFCmp(B, p, a, b, ""), t, f, "");
}

static LLVMValueRef pow2i(cg *g, LLVMValueRef n /* int vector */) {
    LLVMTypeRef IT = LLVMTypeOf(n);
    LLVMValueRef e = LLVMBuildShl(B, LLVMBuildAdd(B, n, KI(127), ""), KI(23), "");
    return LLVMBuildBitCast(B, e, LLVMGetTypeKind(IT) == LLVMVectorTypeKind
                                      ? LLVMVectorType(g->f32, LLVMGetVectorSize(IT))
                                      : g->f32,
                            "");
}

LLVMValueRef vm_exp(cg *g, LLVMValueRef x0) {
    LLVMTypeRef T = LLVMTypeOf(x0), IT = ity(g, x0);
    LLVMValueRef x = sel(g, LLVMRealOLT, x0, K(-104.0), K(-104.0), x0);
    x = sel(g, LLVMRealOGT, x, K(89.0), K(89.0), x);
    LLVMValueRef n = LLVMBuildFMul(B, x, K(1.44269504088896341), "");
    n = cg_intrin(g, "llvm.rint", &T, 1, &n, 1);
    LLVMValueRef r = fma3(g, n, K(-0.693359375), x);
    r = fma3(g, n, K(2.12194440e-4), r);
    LLVMValueRef p = K(1.9875691500E-4);
    p = fma3(g, p, r, K(1.3981999507E-3));
    p = fma3(g, p, r, K(8.3334519073E-3));
    p = fma3(g, p, r, K(4.1665795894E-2));
    p = fma3(g, p, r, K(1.6666665459E-1));
    p = fma3(g, p, r, K(5.0000001201E-1));
    LLVMValueRef y = fma3(g, p, LLVMBuildFMul(B, r, r, ""), r);
    y = LLVMBuildFAdd(B, y, K(1.0), "");
    LLVMValueRef ni = LLVMBuildFPToSI(B, n, IT, "");
    LLVMValueRef n1 = LLVMBuildAShr(B, ni, KI(1), "");
    LLVMValueRef n2 = LLVMBuildSub(B, ni, n1, "");
    y = LLVMBuildFMul(B, LLVMBuildFMul(B, y, pow2i(g, n1), ""), pow2i(g, n2), "");
    return sel(g, LLVMRealUNO, x0, x0, x0, y);
}

/* the exp of the composite functions below: the code generator's choice (cg.exp_fn) */
static LLVMValueRef exp_in(cg *g, LLVMValueRef x) { return g->exp_fn ? g->exp_fn(g->exp_arg, x) : vm_exp(g, x); }

LLVMValueRef vm_log(cg *g, LLVMValueRef x0) {
    LLVMTypeRef T = LLVMTypeOf(x0), IT = ity(g, x0);
    /* denormals: scale up by 2^23 */
    LLVMValueRef tiny = LLVMBuildFCmp(B, LLVMRealOLT, x0, K(1.17549435e-38), "");
    LLVMValueRef x = LLVMBuildSelect(B, tiny, LLVMBuildFMul(B, x0, K(8388608.0), ""), x0, "");
    LLVMValueRef eadj = LLVMBuildSelect(B, tiny, KI(-23), KI(0), "");
    LLVMValueRef bits = LLVMBuildBitCast(B, x, IT, "");
    LLVMValueRef e = LLVMBuildSub(B, LLVMBuildLShr(B, bits, KI(23), ""), KI(126), "");
    e = LLVMBuildAdd(B, e, eadj, "");
    LLVMValueRef mb = LLVMBuildOr(B, LLVMBuildAnd(B, bits, KI(0x807FFFFF), ""), KI(0x3F000000), "");
    LLVMValueRef m = LLVMBuildBitCast(B, mb, T, "");
    LLVMValueRef lowm = LLVMBuildFCmp(B, LLVMRealOLT, m, K(0.707106781186547524), "");
    e = LLVMBuildSelect(B, lowm, LLVMBuildSub(B, e, KI(1), ""), e, "");
    m = LLVMBuildSelect(B, lowm, LLVMBuildFSub(B, LLVMBuildFAdd(B, m, m, ""), K(1.0), ""),
                        LLVMBuildFSub(B, m, K(1.0), ""), "");
    LLVMValueRef ef = LLVMBuildSIToFP(B, e, T, "");
    LLVMValueRef z = LLVMBuildFMul(B, m, m, "");
    static const double P[] = {7.0376836292E-2,  -1.1514610310E-1, 1.1676998740E-1,
                               -1.2420140846E-1, 1.4249322787E-1,  -1.6668057665E-1,
                               2.0000714765E-1,  -2.4999993993E-1, 3.3333331174E-1};
    LLVMValueRef y = K(P[0]);
    for (int i = 1; i < 9; i++) y = fma3(g, y, m, K(P[i]));
    y = LLVMBuildFMul(B, LLVMBuildFMul(B, y, m, ""), z, "");
    y = fma3(g, ef, K(-2.12194440e-4), y);
    y = fma3(g, z, K(-0.5), y);
    LLVMValueRef r = LLVMBuildFAdd(B, m, y, "");
    r = fma3(g, ef, K(0.693359375), r);
    r = sel(g, LLVMRealOLT, x0, K(0.0), K(__builtin_nan("")), r);
    r = sel(g, LLVMRealOEQ, x0, K(0.0), K(-__builtin_inf()), r);
    r = sel(g, LLVMRealOEQ, x0, K(__builtin_inf()), x0, r);
    return sel(g, LLVMRealUNO, x0, x0, x0, r);
}

LLVMValueRef vm_tanh(cg *g, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    LLVMValueRef ax = fabs1(g, x);
    LLVMValueRef e = exp_in(g, LLVMBuildFMul(B, ax, K(2.0), ""));
    LLVMValueRef big = LLVMBuildFSub(
        B, K(1.0), LLVMBuildFDiv(B, K(2.0), LLVMBuildFAdd(B, e, K(1.0), ""), ""), "");
    LLVMValueRef args[2] = {big, x};
    big = cg_intrin(g, "llvm.copysign", &T, 1, args, 2);
    LLVMValueRef z = LLVMBuildFMul(B, x, x, "");
    LLVMValueRef y = K(-5.70498872745E-3);
    y = fma3(g, y, z, K(2.06390887954E-2));
    y = fma3(g, y, z, K(-5.37397155531E-2));
    y = fma3(g, y, z, K(1.33314422036E-1));
    y = fma3(g, y, z, K(-3.33332819422E-1));
    LLVMValueRef small = fma3(g, LLVMBuildFMul(B, y, z, ""), x, x);
    return sel(g, LLVMRealOGT, ax, K(0.625), big, small);
}

/* erf(a), or 1 + erf(a) when one_plus (computed without cancellation for a < 0:
 * the outer piece is erfc(|a|) = exp(r) directly). */
static LLVMValueRef erf_impl_ex(cg *g, LLVMValueRef a, bool one_plus, vm_exp_fn ex, void *arg);
static LLVMValueRef erf_impl(cg *g, LLVMValueRef a, bool one_plus) { return erf_impl_ex(g, a, one_plus, NULL, NULL); }

/* ex(arg, r): the exp of the outer piece (NULL: vm_exp) */
static LLVMValueRef erf_impl_ex(cg *g, LLVMValueRef a, bool one_plus, vm_exp_fn ex, void *arg) {
    LLVMTypeRef T = LLVMTypeOf(a);
    LLVMValueRef t = fabs1(g, a);
    LLVMValueRef s = LLVMBuildFMul(B, a, a, "");
    /* |a| > 0.927734375: erfc(|a|) = exp(r) */
    LLVMValueRef r = fma3(g, K(-1.72853470e-5), t, K(3.83197126e-4));
    LLVMValueRef u = fma3(g, K(-3.88396438e-3), t, K(2.42546219e-2));
    r = fma3(g, r, s, u);
    r = fma3(g, r, t, K(-1.06777877e-1));
    r = fma3(g, r, t, K(-6.34846687e-1));
    r = fma3(g, r, t, K(-1.28717512e-1));
    r = fma3(g, r, t, LLVMBuildFNeg(B, t, ""));
    LLVMValueRef erfc = ex ? ex(arg, r) : exp_in(g, r);
    LLVMValueRef big;
    if (one_plus) {
        big = sel(g, LLVMRealOLT, a, K(0.0), erfc, LLVMBuildFSub(B, K(2.0), erfc, ""));
    } else {
        LLVMValueRef args[2] = {LLVMBuildFSub(B, K(1.0), erfc, ""), a};
        big = cg_intrin(g, "llvm.copysign", &T, 1, args, 2);
    }
    LLVMValueRef q = K(-5.96761703e-4);
    q = fma3(g, q, s, K(4.99119423e-3));
    q = fma3(g, q, s, K(-2.67681349e-2));
    q = fma3(g, q, s, K(1.12819925e-1));
    q = fma3(g, q, s, K(-3.76125336e-1));
    q = fma3(g, q, s, K(1.28379166e-1));
    LLVMValueRef small = fma3(g, q, a, a);
    if (one_plus) small = LLVMBuildFAdd(B, small, K(1.0), "");
    return sel(g, LLVMRealOGT, t, K(0.927734375), big, small);
}

LLVMValueRef vm_erf(cg *g, LLVMValueRef a) { return erf_impl(g, a, false); }

/* x/2 * (1 + erf(x/sqrt2)) with ex as the exp (NULL: cg's), no special cases */
LLVMValueRef vm_gelu_ex(cg *g, LLVMValueRef x, vm_exp_fn ex, void *arg) {
    LLVMTypeRef T = LLVMTypeOf(x);
    LLVMValueRef s = LLVMBuildFMul(B, x, K(0.70710678118654752440), "");
    LLVMValueRef h = LLVMBuildFMul(B, x, K(0.5), "");
    return LLVMBuildFMul(B, h, erf_impl_ex(g, s, true, ex, arg), "");
}

/* gelu(x) = x/2 * (1 + erf(x/sqrt2)); gelu(+inf) = +inf (eager's f32 value there depends on
 * its CPU kernel: NaN with AVX-512, +inf with AVX2; tests/test_pointwise.py) */
LLVMValueRef vm_gelu(cg *g, LLVMValueRef x) { return vm_gelu_ex(g, x, NULL, NULL); }

LLVMValueRef vm_sigmoid(cg *g, LLVMValueRef x) {
    LLVMTypeRef T = LLVMTypeOf(x);
    LLVMValueRef e = exp_in(g, LLVMBuildFNeg(B, x, ""));
    return LLVMBuildFDiv(B, K(1.0), LLVMBuildFAdd(B, K(1.0), e, ""), "");
}

/* ---- sin, cos, tan (the CPU's; the GPU's are vm_sincos in vmath_own.c) -----------------
 * x = j pi/2 + r, |r| <= pi/4 (+ a rounding), j = rint(x 2/pi) read off the low bits of
 * x 2/pi + 1.5 2^52 (f32: 2^23; no float -> int conversion: AVX2 has none for f64 vectors);
 * then sin x = [s, c, -s, -c][j mod 4] with s = sin r, c = cos r (cos x: j + 1). Both
 * polynomials are computed and selected per lane; sin and cos of one value in one kernel
 * share them (the same instructions: LLVM's CSE; sin(a)*cos(a) [512,300] f32 runs 1.07x
 * sin(a)*a, sin(a)*cos(1.5a) 2x).
 *   f32 sin/cos: in f32, sincos_f32 below: max 0.667 ulp against libm's f64 sin/cos (every
 *        f32 |x| < 1e4, every 3rd below 65536; eager's SLEEF u10: 0.60 on a [-1e4, 1e4] sweep).
 *   f64 sin/cos/tan, f32 tan: trig_f64, degree 13 / 14 minimax polynomials (fdlibm's
 *        __kernel_sin/cos coefficients). f32 tan in f64 (x exact there): r = x - j P1 - j P2
 *        with pi/2 = P1 + P2 (+ 1.5e-33), the first fma exact (P1's last bit is 2^-52 and
 *        |r| < 2), tan = s / c or -c / s rounded once to f32: max 0.5000 ulp. f64: r as a
 *        double-double rh + rl (pi/2 = P1 + P2 + P3; j P2 split exactly by an fma, the sum by
 *        TwoSum) and the polynomials take rl (sin(rh + rl) ~ sin rh + rl (1 - rh^2/2),
 *        cos(rh + rl) ~ cos rh - rh rl) and the rounding error of rh^2; 1 - rh^2/2 by
 *        Fast2Sum. Max 0.73 ulp against long double sinl/cosl (5M points: up to 1e9, next
 *        to k pi/2 for |k| < 1e8, denormals). f64 tan: s and c as double-doubles (the
 *        last sums' errors by Fast2Sum), their quotient corrected by one fma residual step
 *        (a plain quotient of the two 0.7-ulp values was 2.0 ulp off).
 * Finite |x| beyond the reduction's range (TRIG_BIG_F32, TRIG_BIG): the lanes take libm's
 * value, in a block run only when some lane needs it (trig_slow_lanes). inf and NaN give NaN
 * through the polynomials (inf - inf). Compile time: (sin(a)*a).relu()+1 is 221 IR
 * instructions instead of 70 and takes ~2x as long to compile (TORCHC_DEBUG=time). */
#define TRIG_BIG 1073741824.0 /* 2^30 */

static const double PIO2_1 = 1.5707963267948966, PIO2_2 = 6.123233995736766e-17,
                    PIO2_3 = -1.4973849048591698e-33;
static const double SIN_C[6] = {-1.66666666666666324348e-01, 8.33333333332248946124e-03,
                                -1.98412698298579493134e-04, 2.75573137070700676789e-06,
                                -2.50507602534068634195e-08, 1.58969099521155010221e-10};
static const double COS_C[6] = {4.16666666666666019037e-02,  -1.38888888888741095749e-03,
                                2.48015872894767294178e-05,  -2.75573143513906633035e-07,
                                2.08757232129817482790e-09,  -1.13596475577881948265e-11};

/* c[0] + z c[1] + ... + z^(n-1) c[n-1] */
static LLVMValueRef poly(cg *g, LLVMValueRef z, const double *c, int n) {
    LLVMTypeRef T = LLVMTypeOf(z);
    LLVMValueRef p = K(c[n - 1]);
    for (int i = n - 2; i >= 0; i--) p = fma3(g, p, z, K(c[i]));
    return p;
}

/* void ic.<fn>(ptr p, i64 n): p[i] = fn(p[i]) for i < n, once per module (noinline, cold): the
 * kernels' rare huge-argument block is one call, not a libm call per lane written out */
static LLVMValueRef trig_lib_loop(cg *g, LLVMTypeRef st, const char *fn) {
    char name[32];
    snprintf(name, sizeof name, "ic.%s", fn);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
    if (f) return f;
    LLVMTypeRef ps[2] = {g->ptr, g->i64};
    f = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->vd, ps, 2, 0));
    LLVMSetLinkage(f, LLVMInternalLinkage);
    static const char *const attrs[] = {"noinline", "cold", "nounwind"};
    for (int i = 0; i < 3; i++)
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(g->ctx, LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i])), 0));
    LLVMBasicBlockRef back = LLVMGetInsertBlock(B);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, f, "entry");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, f, "body");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, f, "done");
    LLVMValueRef p = LLVMGetParam(f, 0), n = LLVMGetParam(f, 1);
    LLVMPositionBuilderAtEnd(B, entry);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSGT, n, LLVMConstInt(g->i64, 0, 0), ""), body, done);
    LLVMPositionBuilderAtEnd(B, body);
    LLVMValueRef i = LLVMBuildPhi(B, g->i64, "");
    LLVMValueRef at = LLVMBuildGEP2(B, st, p, &i, 1, "");
    LLVMBuildStore(B, cg_libm1(g, fn, LLVMBuildLoad2(B, st, at, "")), at);
    LLVMValueRef i1 = LLVMBuildAdd(B, i, LLVMConstInt(g->i64, 1, 0), "");
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0);
    LLVMBasicBlockRef from[2] = {entry, body};
    LLVMValueRef vals[2] = {zero, i1};
    LLVMAddIncoming(i, vals, from, 2);
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, i1, n, ""), body, done);
    LLVMPositionBuilderAtEnd(B, done);
    LLVMBuildRetVoid(B);
    LLVMPositionBuilderAtEnd(B, back);
    return f;
}

/* the libm value for the lanes of `slow`, computed only when one is set */
static LLVMValueRef trig_slow_lanes(cg *g, LLVMValueRef x, LLVMValueRef slow, LLVMValueRef fast, const char *fn) {
    LLVMTypeRef st = LLVMTypeOf(slow), xt = LLVMTypeOf(x);
    bool vec = LLVMGetTypeKind(xt) == LLVMVectorTypeKind;
    LLVMValueRef any = slow;
    if (vec) any = cg_intrin(g, "llvm.vector.reduce.or", &st, 1, &slow, 1);
    LLVMValueRef ex[2] = {any, LLVMConstInt(g->i1, 0, 0)};
    any = cg_intrin(g, "llvm.expect", &g->i1, 1, ex, 2);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(B);
    LLVMValueRef f = LLVMGetBasicBlockParent(pre);
    LLVMBasicBlockRef big = LLVMAppendBasicBlockInContext(g->ctx, f, "trig.big");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, f, "trig.done");
    LLVMBuildCondBr(B, any, big, done);
    LLVMPositionBuilderAtEnd(B, big);
    LLVMValueRef lib;
    if (vec) {
        LLVMTypeRef et = LLVMGetElementType(xt);
        LLVMValueRef loop = trig_lib_loop(g, et, fn);
        LLVMValueRef buf = LLVMBuildAlloca(g->ab, xt, "");
        LLVMBuildStore(B, x, buf);
        LLVMValueRef args[2] = {buf, LLVMConstInt(g->i64, LLVMGetVectorSize(xt), 0)};
        LLVMTypeRef ps[2] = {g->ptr, g->i64};
        LLVMBuildCall2(B, LLVMFunctionType(g->vd, ps, 2, 0), loop, args, 2, "");
        lib = LLVMBuildLoad2(B, xt, buf, "");
    } else {
        lib = cg_libm1(g, fn, x);
    }
    lib = LLVMBuildSelect(B, slow, lib, fast, "");
    LLVMBasicBlockRef big_end = LLVMGetInsertBlock(B);
    LLVMBuildBr(B, done);
    LLVMPositionBuilderAtEnd(B, done);
    LLVMValueRef phi = LLVMBuildPhi(B, LLVMTypeOf(fast), "");
    LLVMValueRef vals[2] = {fast, lib};
    LLVMBasicBlockRef from[2] = {pre, big_end};
    LLVMAddIncoming(phi, vals, from, 2);
    return phi;
}

/* f32 sin/cos in f32 arithmetic: pi/2 = P1 + P2 + P3 (f32 parts); t1 = x - j P1 exact (fma);
 * r = t1 - j P2 - j P3 as a double-float rh + rl (j P2 split by an fma, TwoSum); Cephes's
 * sinf/cosf polynomials (degree 7 and 8 on [-pi/4, pi/4]) with rl and the rounding errors of
 * rh^2 and rh^3 carried in their small terms. Valid for |x| <= TRIG_BIG_F32 (beyond, x 2/pi's
 * rounding puts |r| past pi/4 and the reduction's error grows: 0.9 ulp by 1e6) */
#define TRIG_BIG_F32 65536.0
static LLVMValueRef trig_f64(cg *g, LLVMValueRef x0, vm_trig_fn which, bool f32, bool vec, unsigned n);
static LLVMValueRef sincos_f32(cg *g, LLVMValueRef x, vm_trig_fn which) {
    LLVMTypeRef T = LLVMTypeOf(x);
    bool vec = LLVMGetTypeKind(T) == LLVMVectorTypeKind;
    LLVMTypeRef IT = vec ? LLVMVectorType(g->i32, LLVMGetVectorSize(T)) : g->i32;
    LLVMValueRef magic = K(0x1.8p23);
    LLVMValueRef nm = cg_fma(g, x, K(0.63661977236758134308), magic);
    LLVMValueRef j = LLVMBuildFSub(B, nm, magic, ""), nj = LLVMBuildFNeg(B, j, "");
    LLVMValueRef q = LLVMBuildBitCast(B, nm, IT, "");
    if (which == VM_COS) q = LLVMBuildAdd(B, q, KI(1), "");
    const double P1 = 1.5707963705062866, P2 = -4.371138828673793e-08, P3 = -1.7151245100058819e-15;
    LLVMValueRef t1 = cg_fma(g, nj, K(P1), x); /* exact */
    LLVMValueRef uh = LLVMBuildFMul(B, j, K(P2), "");
    LLVMValueRef ul = cg_fma(g, j, K(P2), LLVMBuildFNeg(B, uh, ""));
    LLVMValueRef s = LLVMBuildFSub(B, t1, uh, "");
    LLVMValueRef bb = LLVMBuildFSub(B, s, t1, "");
    LLVMValueRef e = LLVMBuildFAdd(B, LLVMBuildFSub(B, t1, LLVMBuildFSub(B, s, bb, ""), ""),
                                   LLVMBuildFSub(B, LLVMBuildFNeg(B, uh, ""), bb, ""), "");
    LLVMValueRef lo = cg_fma(g, nj, K(P3), LLVMBuildFSub(B, e, ul, ""));
    LLVMValueRef rh = LLVMBuildFAdd(B, s, lo, "");
    LLVMValueRef rl = LLVMBuildFSub(B, lo, LLVMBuildFSub(B, rh, s, ""), "");
    LLVMValueRef z = LLVMBuildFMul(B, rh, rh, ""), v = LLVMBuildFMul(B, z, rh, "");
    LLVMValueRef zl = cg_fma(g, rh, rh, LLVMBuildFNeg(B, z, "")), vl = cg_fma(g, z, rh, LLVMBuildFNeg(B, v, ""));
    const double S1 = -1.6666654611e-1, S2 = 8.3321608736e-3, S3 = -1.9515295891e-4;
    const double C1 = 4.166664568298827e-2, C2 = -1.388731625493765e-3, C3 = 2.443315711809948e-5;
    /* sin: rh - (z (rl/2 - v (S2 + z S3)) - (rl + S1 (vl + rh zl)) - v S1) */
    LLVMValueRef nv = LLVMBuildFNeg(B, v, "");
    LLVMValueRef a = cg_fma(g, nv, cg_fma(g, z, K(S3), K(S2)), LLVMBuildFMul(B, rl, K(0.5), ""));
    LLVMValueRef b = cg_fma(g, K(S1), cg_fma(g, rh, zl, vl), rl);
    LLVMValueRef t = cg_fma(g, nv, K(S1), cg_fma(g, z, a, LLVMBuildFNeg(B, b, "")));
    LLVMValueRef sn = LLVMBuildFSub(B, rh, t, "");
    /* cos: w + (((1 - w) - hz) + (z^2 C(z) - (rh rl + zl/2))), w = 1 - hz */
    LLVMValueRef hz = LLVMBuildFMul(B, z, K(0.5), "");
    LLVMValueRef w = LLVMBuildFSub(B, K(1.0), hz, "");
    LLVMValueRef cr = cg_fma(g, z, cg_fma(g, z, K(C3), K(C2)), K(C1));
    LLVMValueRef tail = cg_fma(g, LLVMBuildFMul(B, z, z, ""), cr,
                               LLVMBuildFNeg(B, cg_fma(g, rh, rl, LLVMBuildFMul(B, zl, K(0.5), "")), ""));
    LLVMValueRef cs = LLVMBuildFAdd(B, w, LLVMBuildFAdd(B, LLVMBuildFSub(B, LLVMBuildFSub(B, K(1.0), w, ""), hz, ""), tail, ""), "");
    LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, q, KI(1), ""), KI(0), "");
    LLVMValueRef r = LLVMBuildSelect(B, odd, cs, sn, "");
    LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, q, KI(2), ""), KI(30), "");
    return LLVMBuildBitCast(B, LLVMBuildXor(B, LLVMBuildBitCast(B, r, IT, ""), sign, ""), T, "");
}

LLVMValueRef vm_trig(cg *g, LLVMValueRef x0, vm_trig_fn which) {
    LLVMTypeRef XT = LLVMTypeOf(x0);
    bool vec = LLVMGetTypeKind(XT) == LLVMVectorTypeKind;
    unsigned n = vec ? LLVMGetVectorSize(XT) : 1;
    bool f32 = (vec ? LLVMGetElementType(XT) : XT) == g->f32;
    static const char *const names[3][2] = {{"sin", "sinf"}, {"cos", "cosf"}, {"tan", "tanf"}};
    LLVMValueRef r = f32 && which != VM_TAN ? sincos_f32(g, x0, which) : trig_f64(g, x0, which, f32, vec, n);
    LLVMTypeRef T = XT; /* the checks in x0's type: half the vectors for f32 */
    if (which != VM_COS) /* sin(-0) = -0: the sums give +0 */
        r = sel(g, LLVMRealOEQ, x0, K(0.0), x0, r);
    LLVMValueRef ax = fabs1(g, x0);
    double big = f32 && which != VM_TAN ? TRIG_BIG_F32 : TRIG_BIG;
    LLVMValueRef slow = LLVMBuildAnd(B, LLVMBuildFCmp(B, LLVMRealOGT, ax, K(big), ""),
                                     LLVMBuildFCmp(B, LLVMRealOLT, ax, K(__builtin_inf()), ""), "");
    return trig_slow_lanes(g, x0, slow, r, names[which][f32]);
}

/* sin/cos/tan in f64 (f32 x: tan; exact in f64), the result in x0's type */
static LLVMValueRef trig_f64(cg *g, LLVMValueRef x0, vm_trig_fn which, bool f32, bool vec, unsigned n) {
    LLVMTypeRef XT = LLVMTypeOf(x0);
    LLVMTypeRef T = vec ? LLVMVectorType(g->f64, n) : g->f64, IT = vec ? LLVMVectorType(g->i64, n) : g->i64;
    LLVMValueRef x = f32 ? LLVMBuildFPExt(B, x0, T, "") : x0;
    LLVMValueRef magic = K(0x1.8p52);
    LLVMValueRef nm = cg_fma(g, x, K(0.63661977236758134308), magic);
    LLVMValueRef j = LLVMBuildFSub(B, nm, magic, ""), nj = LLVMBuildFNeg(B, j, "");
    LLVMValueRef q = LLVMBuildBitCast(B, nm, IT, "");
    if (which == VM_COS) q = LLVMBuildAdd(B, q, KI(1), "");
    LLVMValueRef t1 = cg_fma(g, nj, K(PIO2_1), x); /* exact */
    LLVMValueRef rh, rl = NULL;
    if (f32) {
        rh = cg_fma(g, nj, K(PIO2_2), t1);
    } else {
        LLVMValueRef uh = LLVMBuildFMul(B, j, K(PIO2_2), "");
        LLVMValueRef ul = cg_fma(g, j, K(PIO2_2), LLVMBuildFNeg(B, uh, "")); /* j P2 = uh + ul */
        LLVMValueRef s = LLVMBuildFSub(B, t1, uh, "");                         /* TwoSum(t1, -uh) */
        LLVMValueRef bb = LLVMBuildFSub(B, s, t1, "");
        LLVMValueRef e = LLVMBuildFAdd(B, LLVMBuildFSub(B, t1, LLVMBuildFSub(B, s, bb, ""), ""),
                                       LLVMBuildFSub(B, LLVMBuildFNeg(B, uh, ""), bb, ""), "");
        LLVMValueRef lo = cg_fma(g, nj, K(PIO2_3), LLVMBuildFSub(B, e, ul, ""));
        rh = LLVMBuildFAdd(B, s, lo, "");                                      /* Fast2Sum(s, lo) */
        rl = LLVMBuildFSub(B, lo, LLVMBuildFSub(B, rh, s, ""), "");
    }
    LLVMValueRef z = LLVMBuildFMul(B, rh, rh, "");
    LLVMValueRef hz = LLVMBuildFMul(B, z, K(0.5), "");
    LLVMValueRef sn, cs, sl = NULL, cl = NULL; /* f64: sn + sl, cs + cl (tan's quotient) */
    if (f32) {
        /* rh + rh z S(z); 1 - z/2 + z^2 C(z) */
        sn = fma3(g, LLVMBuildFMul(B, rh, z, ""), poly(g, z, SIN_C, 5), rh);
        cs = fma3(g, LLVMBuildFMul(B, z, z, ""), poly(g, z, COS_C, 5), LLVMBuildFSub(B, K(1.0), hz, ""));
    } else {
        /* sin: rh - ((z (rl/2 - v S'(z)) - rl) - v S1), v = z rh, S' the terms past S1 */
        LLVMValueRef v = LLVMBuildFMul(B, z, rh, "");
        LLVMValueRef t = LLVMBuildFSub(B, LLVMBuildFMul(B, rl, K(0.5), ""), LLVMBuildFMul(B, v, poly(g, z, SIN_C + 1, 5), ""), "");
        t = LLVMBuildFSub(B, LLVMBuildFMul(B, z, t, ""), rl, "");
        t = LLVMBuildFSub(B, t, LLVMBuildFMul(B, v, K(SIN_C[0]), ""), "");
        sn = LLVMBuildFSub(B, rh, t, "");
        sl = LLVMBuildFSub(B, LLVMBuildFSub(B, rh, sn, ""), t, "");
        /* cos: w + (((1 - w) - hz) + (z^2 C(z) - (rh rl + zl/2))), w = 1 - hz, zl = rh^2 - z */
        LLVMValueRef w = LLVMBuildFSub(B, K(1.0), hz, "");
        LLVMValueRef zl = cg_fma(g, rh, rh, LLVMBuildFNeg(B, z, ""));
        LLVMValueRef corr = fma3(g, rh, rl, LLVMBuildFMul(B, zl, K(0.5), ""));
        LLVMValueRef tail = LLVMBuildFSub(B, LLVMBuildFMul(B, LLVMBuildFMul(B, z, z, ""), poly(g, z, COS_C, 6), ""), corr, "");
        tail = LLVMBuildFAdd(B, LLVMBuildFSub(B, LLVMBuildFSub(B, K(1.0), w, ""), hz, ""), tail, "");
        cs = LLVMBuildFAdd(B, w, tail, "");
        cl = LLVMBuildFAdd(B, LLVMBuildFSub(B, w, cs, ""), tail, "");
    }
    LLVMValueRef odd = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, q, KI(1), ""), KI(0), "");
    LLVMValueRef r;
    if (which == VM_TAN && f32) {
        r = LLVMBuildSelect(B, odd, LLVMBuildFDiv(B, LLVMBuildFNeg(B, cs, ""), sn, ""), LLVMBuildFDiv(B, sn, cs, ""), "");
    } else if (which == VM_TAN) {
        /* (nh + nl) / (dh + dl): q = nh / dh, then q + (nh - q dh + (nl - q dl)) / dh */
        LLVMValueRef nh = LLVMBuildSelect(B, odd, LLVMBuildFNeg(B, cs, ""), sn, "");
        LLVMValueRef nl = LLVMBuildSelect(B, odd, LLVMBuildFNeg(B, cl, ""), sl, "");
        LLVMValueRef dh = LLVMBuildSelect(B, odd, sn, cs, ""), dl = LLVMBuildSelect(B, odd, sl, cl, "");
        LLVMValueRef tq = LLVMBuildFDiv(B, nh, dh, "");
        LLVMValueRef e = cg_fma(g, LLVMBuildFNeg(B, tq, ""), dh, nh);
        e = LLVMBuildFAdd(B, e, LLVMBuildFSub(B, nl, LLVMBuildFMul(B, tq, dl, ""), ""), "");
        r = LLVMBuildFAdd(B, tq, LLVMBuildFDiv(B, e, dh, ""), "");
    } else {
        r = LLVMBuildSelect(B, odd, cs, sn, "");
        LLVMValueRef sign = LLVMBuildShl(B, LLVMBuildAnd(B, q, KI(2), ""), KI(62), "");
        r = LLVMBuildBitCast(B, LLVMBuildXor(B, LLVMBuildBitCast(B, r, IT, ""), sign, ""), T, "");
    }
    return f32 ? LLVMBuildFPTrunc(B, r, XT, "") : r;
}
