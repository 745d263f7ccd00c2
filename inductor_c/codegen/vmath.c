/* vmath.c — f32 transcendentals as straight-line LLVM IR, so they vectorize with the
 * loop body instead of calling scalar libm in the hot loop.
 *
 * Contract: inputs/outputs are float or <VF x float>; results are within ~1 ulp of the
 * correctly rounded value (checked against libm over the whole range: exp, log, tanh,
 * erf max 1 ulp), and handle inf, NaN, zero and denormal inputs like libm.
 *   exp: Cody–Waite reduction by ln2, degree-6 Cephes polynomial, 2^n applied in two
 *        halves so results in the denormal range and overflow to inf come out right.
 *   log: Cephes logf (mantissa in [sqrt(.5), sqrt(2)), degree-9 polynomial).
 *   tanh: odd polynomial below 0.625, 1 - 2/(exp(2|x|)+1) above.
 *   erf: two minimax pieces (njuffa), the outer one through exp.
 */
#include <llvm-c/Core.h>

#include <stdbool.h>

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
