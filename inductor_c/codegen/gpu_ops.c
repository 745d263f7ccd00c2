/* gpu_ops.c — the GPU code generator's own forms of f32 division: for results rounded to
 * f16/bf16 (div.full, one rcp.approx per lane-invariant divisor) and softmax's division by
 * its row sum. Every other op comes from the shared op layer (ops.c) with the NVPTX target. */
#include "gpu_internal.h"

/* |b| < 2^-64: both operands times 2^64 (exact; an |a| that overflows gives the inf the
 * quotient is): div.full.f32 and rcp.approx.f32 lose subnormal divisors (an H100 gave
 * 0 / 2^-128 = NaN, 0.5 / 2^-128 = inf in bf16, eager 0 and 1.7e38) */
static LLVMValueRef small_div_scale(gg *g, LLVMValueRef b) {
    LLVMValueRef small = LLVMBuildFCmp(B, LLVMRealOLT, cg_intrin1(&g->cg, "llvm.fabs", b), LLVMConstReal(g->cg.f32, 0x1p-64), "");
    return LLVMBuildSelect(B, small, LLVMConstReal(g->cg.f32, 0x1p64), LLVMConstReal(g->cg.f32, 1.0), "");
}

/* a / b for f16/bf16 results (f32 registers rounded right after): div.full.f32, 2 ulp over the
 * full range, far below the rounding that follows (vmath_own.c vm_exp_approx: the same for exp);
 * tiny divisors scaled first (small_div_scale) */
LLVMValueRef gg_div_half(gg *g, LLVMValueRef a, LLVMValueRef b) {
    LLVMValueRef s = small_div_scale(g, b);
    a = LLVMBuildFMul(B, a, s, "");
    b = LLVMBuildFMul(B, b, s, "");
    LLVMTypeRef at[2] = {g->cg.f32, g->cg.f32};
    LLVMTypeRef ft = LLVMFunctionType(g->cg.f32, at, 2, 0);
    static const char text[] = "div.full.f32 $0, $1, $2;", cons[] = "=f,f,f";
    LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
    LLVMValueRef v[2] = {a, b};
    return LLVMBuildCall2(B, ft, ia, v, 2, "");
}

/* V2: a / b for f16/bf16 results with b the same in every lane (softmax's row sum): one
 * rcp.approx.f32 (1 ulp, full range) per generation and a multiplication per lane; 0 and inf
 * divisors give inf / 0 products like the division. A divisor that may be tiny (anything but
 * softmax's sum, >= 1) is scaled as in gg_div_half: one more multiplication per lane. */
LLVMValueRef gg_div_half_rcp(gg *g, LLVMValueRef a, ic_xid bx) {
    if (g->rcp_gen != g->gen || g->rcp_x != bx) {
        LLVMTypeRef ft = LLVMFunctionType(g->cg.f32, &g->cg.f32, 1, 0);
        static const char text[] = "rcp.approx.f32 $0, $1;", cons[] = "=f,f";
        LLVMValueRef ia = LLVMGetInlineAsm(ft, (char *)text, sizeof text - 1, (char *)cons, sizeof cons - 1, 0, 0,
                                           LLVMInlineAsmDialectATT, 0);
        LLVMValueRef b = gg_val(g, bx, 0);
        g->rcp_s = gg_softmax_sum(g, bx) ? NULL : small_div_scale(g, b);
        if (g->rcp_s) b = LLVMBuildFMul(B, b, g->rcp_s, "");
        g->rcp_v = LLVMBuildCall2(B, ft, ia, &b, 1, "");
        g->rcp_x = bx;
        g->rcp_gen = g->gen;
    }
    if (g->rcp_s) a = LLVMBuildFMul(B, a, g->rcp_s, "");
    return LLVMBuildFMul(B, a, g->rcp_v, "");
}

/* V2: softmax's f32 division by its row sum, a / s with s = sum(exp(x - max(x))) over the
 * row: s is 1 <= s <= n (or NaN, or inf with x), so 1/s is a normal number and a * rn(1/s)
 * is within about 1 ulp of a / s (IEEE division: 0.5). One div.rn per chunk instead of one
 * per element (each ~9 SASS instructions: f32 softmax is bound by instruction issue). Only
 * that pattern: for other divisors 1/s may overflow or lose bits as a subnormal. */
bool gg_softmax_sum(gg *g, ic_xid bx) {
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

LLVMValueRef gg_div_rowsum(gg *g, LLVMValueRef a, ic_xid bx) {
    if (g->rcp32_gen != g->gen || g->rcp32_x != bx) {
        g->rcp32_v = LLVMBuildFDiv(B, kf(a, 1.0), gg_val(g, bx, 0), "");
        g->rcp32_x = bx;
        g->rcp32_gen = g->gen;
    }
    return LLVMBuildFMul(B, a, g->rcp32_v, "");
}
