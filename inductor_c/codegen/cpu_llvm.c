/* cpu_llvm.c — kernels to one LLVM module, explicitly vectorized, optimized, JIT-compiled.
 *
 * Requires: finalized kernels (flat loads, outer/inner vars, stores decided), buffers.
 * Produces: one function per kernel, `void icN_kK(void **bufs, i64 start, i64 end)`, that
 *   runs outer iterations [start, end). Shape of the code:
 *
 *     for it in [start, end):                  outer vars = digits of it (tile digit last)
 *       row block 0                            scalar items of position 0
 *       pass 0:  for inner vars (nested)       innermost: <16 x T> body, then scalar tail
 *                   items of position 1        stores; reductions into vector accumulators
 *                tree-reduce accumulators  ->  row values (X_ROWVAL), stored if needed
 *       row block 1, pass 1, ...
 *
 *   Loads whose offset has coefficient 1 in the innermost var are vector loads, 0 a
 *   broadcast, anything else a gather; loads that may leave their buffer (cat branches)
 *   are clamped into it. f32 sums of long rows (and tall columns) add blocks in f32 and
 *   block sums in f64. vec_outer kernels put the lanes along the kept dim instead (up to
 *   16 vectors side by side, scalar loops over the reduced dims); split kernels write
 *   partial accumulators per part and a second function (`_fin`) combines them. Float math keeps IEEE semantics (no fast-math
 *   flags exist in the LLVM 16 C API and none are needed: vectorization is explicit and
 *   reductions are reassociated by construction: 16 lanes, then a tree). f32
 *   transcendentals (and f64 sin/cos/tan) come from vmath.c; other f64 ones from libm.
 *   Buffers reach the body as noalias arguments of an always-inlined function, so LLVM
 *   may hoist and reorder memory accesses across buffers.
 * Then (cpu_module.c): verifier, the pipeline of ic_cpu_pipeline (new pass manager), an object
 * file per module (modules of big graphs on parallel threads), ORC LLJIT; objects are cached
 * by code key.
 */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "../support.h"
#include "cpu.h"

#define B g->b
#define IC_SUM_BLOCK 512 /* row mode: 32 adds per lane */
#define IC_COL_BLOCK 32  /* vec_outer: each lane is a column */

/* ---- small helpers ------------------------------------------------------------------- */
LLVMTypeRef cg_type(cg *g, ic_dtype t, int width) {
    LLVMTypeRef s;
    switch (t) {
    case IC_BOOL: s = g->i1; break;
    case IC_U8: case IC_I8: s = g->i8; break;
    case IC_I16: s = g->i16; break;
    case IC_I32: s = g->i32; break;
    case IC_I64: s = g->i64; break;
    case IC_F32: s = g->f32; break;
    case IC_F64: s = g->f64; break;
    case IC_F16: s = LLVMHalfTypeInContext(g->ctx); break;
    case IC_BF16: s = g->i16; break; /* bits; math happens in f32 */
    default: ic_fail(g->c, IC_EUNSUPPORTED, "dtype %s not supported by the CPU backend", ic_dtype_name(t));
    }
    return width > 1 ? LLVMVectorType(s, (unsigned)width) : s;
}

static LLVMTypeRef mem_type(cg *g, ic_dtype t) { return t == IC_BOOL ? g->i8 : cg_type(g, t, 1); }

static LLVMValueRef splat_const(LLVMValueRef s, int width) {
    LLVMValueRef e[IC_VF];
    for (int i = 0; i < width; i++) e[i] = s;
    return LLVMConstVector(e, (unsigned)width);
}

LLVMValueRef cg_splat(cg *g, LLVMValueRef s, int width) {
    if (width <= 1 || LLVMGetTypeKind(LLVMTypeOf(s)) == LLVMVectorTypeKind) return s;
    if (LLVMIsConstant(s)) return splat_const(s, width);
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), (unsigned)width);
    LLVMValueRef v = LLVMBuildInsertElement(B, LLVMGetPoison(vt), s, LLVMConstInt(g->i32, 0, 0), "");
    LLVMValueRef zero = LLVMConstNull(LLVMVectorType(g->i32, (unsigned)width));
    return LLVMBuildShuffleVector(B, v, LLVMGetPoison(vt), zero, "");
}

LLVMValueRef cg_constf(cg *g, LLVMTypeRef ty, double v) {
    if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind)
        return splat_const(LLVMConstReal(LLVMGetElementType(ty), v), (int)LLVMGetVectorSize(ty));
    return LLVMConstReal(ty, v);
}

LLVMValueRef cg_consti(cg *g, LLVMTypeRef ty, long long v) {
    if (LLVMGetTypeKind(ty) == LLVMVectorTypeKind)
        return splat_const(LLVMConstInt(LLVMGetElementType(ty), (unsigned long long)v, 1),
                           (int)LLVMGetVectorSize(ty));
    return LLVMConstInt(ty, (unsigned long long)v, 1);
}

LLVMValueRef cg_intrin(cg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args,
                       int nargs) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id) ic_fail(g->c, IC_EINTERNAL, "unknown intrinsic %s", name);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, ov, (size_t)nov);
    LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, ov, (size_t)nov);
    return LLVMBuildCall2(B, fty, fn, args, (unsigned)nargs, "");
}

static LLVMValueRef libm_fn(cg *g, const char *name, LLVMTypeRef st, int nargs, LLVMTypeRef *fty) {
    LLVMTypeRef ps[2] = {st, st};
    *fty = LLVMFunctionType(st, ps, (unsigned)nargs, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
    if (!f) f = LLVMAddFunction(g->mod, name, *fty);
    return f;
}

static LLVMValueRef libm_call(cg *g, const char *name, LLVMValueRef x, LLVMValueRef y) {
    LLVMTypeRef t = LLVMTypeOf(x);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    LLVMTypeRef st = vec ? LLVMGetElementType(t) : t;
    LLVMTypeRef fty;
    int nargs = y ? 2 : 1;
    LLVMValueRef f = libm_fn(g, name, st, nargs, &fty);
    if (!vec) {
        LLVMValueRef a[2] = {x, y};
        return LLVMBuildCall2(B, fty, f, a, (unsigned)nargs, "");
    }
    LLVMValueRef r = LLVMGetPoison(t);
    for (unsigned i = 0; i < LLVMGetVectorSize(t); i++) {
        LLVMValueRef idx = LLVMConstInt(g->i32, i, 0);
        LLVMValueRef a[2] = {LLVMBuildExtractElement(B, x, idx, ""),
                             y ? LLVMBuildExtractElement(B, y, idx, "") : NULL};
        r = LLVMBuildInsertElement(B, r, LLVMBuildCall2(B, fty, f, a, (unsigned)nargs, ""), idx, "");
    }
    return r;
}

LLVMValueRef cg_libm1(cg *g, const char *name, LLVMValueRef x) { return libm_call(g, name, x, NULL); }
LLVMValueRef cg_libm2(cg *g, const char *name, LLVMValueRef x, LLVMValueRef y) {
    return libm_call(g, name, x, y);
}

static LLVMValueRef alloca_(cg *g, LLVMTypeRef t) { return LLVMBuildAlloca(g->ab, t, ""); }

/* ---- loops over an i64 counter kept in an alloca (mem2reg makes it a phi) ---------------
 * Emitted already rotated (a guard, then a bottom-tested body): LoopRotate would otherwise
 * rotate each loop and make ScalarEvolution forget the enclosing row loop every time,
 * quadratic in the number of passes of a kernel (a 127-pass kernel spent 130 ms there). */
typedef struct lp {
    LLVMValueRef iv, i, hi;
    LLVMBasicBlockRef body, exit;
    int step;
} lp;

static void lp_begin(cg *g, lp *L, LLVMValueRef iv, LLVMValueRef lo, LLVMValueRef hi, int step) {
    L->iv = iv ? iv : alloca_(g, g->i64);
    if (lo) LLVMBuildStore(B, lo, L->iv);
    L->hi = hi;
    L->step = step;
    L->body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "body");
    L->exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "exit");
    LLVMValueRef i0 = LLVMBuildLoad2(B, g->i64, L->iv, "");
    LLVMValueRef next = LLVMBuildAdd(B, i0, LLVMConstInt(g->i64, (unsigned)step, 0), "");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLE, next, hi, ""), L->body, L->exit);
    LLVMPositionBuilderAtEnd(B, L->body);
    L->i = LLVMBuildLoad2(B, g->i64, L->iv, "i");
}

static void lp_end(cg *g, lp *L) {
    LLVMValueRef step = LLVMConstInt(g->i64, (unsigned)L->step, 0);
    LLVMValueRef inc = LLVMBuildAdd(B, L->i, step, "");
    LLVMBuildStore(B, inc, L->iv);
    LLVMValueRef next = LLVMBuildAdd(B, inc, step, "");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLE, next, L->hi, ""), L->body, L->exit);
    LLVMPositionBuilderAtEnd(B, L->exit);
}

/* ---- index expressions ------------------------------------------------------------------ */
static LLVMValueRef lanes(cg *g) {
    LLVMValueRef e[IC_VF];
    for (int i = 0; i < g->width; i++) e[i] = LLVMConstInt(g->i64, (unsigned)i, 0);
    return LLVMConstVector(e, (unsigned)g->width);
}

/* vec: the value as <width x i64> with the vec var's lanes consecutive */
static LLVMValueRef ixval(cg *g, ic_ix a, bool vec) {
    ic_ctx *c = g->c;
    const ix_sum s = c->sums[a];
    int w = vec ? g->width : 1;
    LLVMTypeRef t = vec ? LLVMVectorType(g->i64, (unsigned)w) : g->i64;
    LLVMValueRef sum = cg_consti(g, t, s.off);
    for (int i = 0; i < s.n; i++) {
        ix_term tm = c->terms[s.first + i];
        ix_atom at = c->atoms[tm.atom];
        LLVMValueRef v;
        if (at.kind == IX_VAR) {
            LLVMValueRef sv = g->var_val[at.var];
            if (!sv) ic_fail(c, IC_EINTERNAL, "codegen: var i%d has no value", at.var);
            v = cg_splat(g, sv, w);
            if (vec && at.var == g->vec_var) v = LLVMBuildAdd(B, v, lanes(g), "");
        } else {
            v = ixval(g, at.sub, vec);
            if (at.div != 1) v = LLVMBuildSDiv(B, v, cg_consti(g, t, at.div), "");
            if (at.mod) v = LLVMBuildSRem(B, v, cg_consti(g, t, at.mod), "");
        }
        if (tm.coeff != 1) v = LLVMBuildMul(B, v, cg_consti(g, t, tm.coeff), "");
        sum = LLVMBuildAdd(B, sum, v, "");
    }
    return sum;
}

/* ---- expressions ------------------------------------------------------------------------ */
static LLVMValueRef emit(cg *g, ic_xid x);

static LLVMValueRef fconst(cg *g, LLVMValueRef like, double v) { return cg_constf(g, LLVMTypeOf(like), v); }

/* A size or count as an i64: a constant, or (dynamic graphs, tainted) its monomial in
 * the symbol values, computed in the entry block. */
static LLVMValueRef cg_size(cg *g, int64_t v) {
    ic_dim d;
    if (!ic_tainted(g->c, v)) return LLVMConstInt(g->i64, (unsigned long long)v, 0);
    if (!g->syms || !ic_sym_decode(g->c, v, &d))
        ic_fail(g->c, IC_EUNSUPPORTED, "dynamic shapes: a size that is not a monomial");
    LLVMValueRef r = LLVMConstInt(g->i64, (unsigned long long)d.coef, 0);
    for (int k = 0; k < IC_MAX_SYMS; k++) {
        if (!d.exp[k]) continue;
        LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)k, 0);
        LLVMValueRef p = LLVMBuildGEP2(g->ab, g->i64, g->syms, &idx, 1, "");
        LLVMValueRef s = LLVMBuildLoad2(g->ab, g->i64, p, "sym");
        for (int e = 0; e < d.exp[k]; e++) r = LLVMBuildMul(g->ab, r, s, "");
    }
    return r;
}

/* the element count of a mean, as a float like `like` (scalar or vector) */
static LLVMValueRef fcount(cg *g, LLVMValueRef like, int64_t n) {
    if (!ic_tainted(g->c, n)) return fconst(g, like, (double)n);
    LLVMTypeRef t = LLVMTypeOf(like);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    LLVMValueRef f = LLVMBuildSIToFP(B, cg_size(g, n), vec ? LLVMGetElementType(t) : t, "");
    return vec ? cg_splat(g, f, (int)LLVMGetVectorSize(t)) : f;
}

static LLVMValueRef all_ones(cg *g) {
    LLVMValueRef ones[IC_VF];
    for (int i = 0; i < g->width; i++) ones[i] = LLVMConstInt(g->i1, 1, 0);
    return LLVMConstVector(ones, (unsigned)g->width);
}

static LLVMValueRef gather(cg *g, LLVMTypeRef mt, LLVMValueRef base, LLVMValueRef offs, size_t esz) {
    LLVMValueRef ps = LLVMBuildGEP2(B, mt, base, &offs, 1, "");
    LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)g->width);
    LLVMTypeRef ov[2] = {vt, LLVMTypeOf(ps)};
    LLVMValueRef args[4] = {ps, LLVMConstInt(g->i32, esz, 0), all_ones(g), LLVMGetPoison(vt)};
    return cg_intrin(g, "llvm.masked.gather", ov, 2, args, 4);
}

static LLVMValueRef cg_size(cg *g, int64_t v);

/* offsets clamped into [0, hi) (scalar or vector); hi may be symbolic (dynamic graphs) */
static LLVMValueRef clamp_off(cg *g, LLVMValueRef off, int64_t hi) {
    LLVMTypeRef t = LLVMTypeOf(off);
    LLVMValueRef z = LLVMConstNull(t), h = cg_consti(g, t, hi > 0 ? hi - 1 : 0);
    if (ic_tainted(g->c, hi)) {
        LLVMValueRef m = LLVMBuildSub(B, cg_size(g, hi), LLVMConstInt(g->i64, 1, 0), "");
        h = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? cg_splat(g, m, (int)LLVMGetVectorSize(t)) : m;
    }
    off = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, off, z, ""), z, off, "");
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSGT, off, h, ""), h, off, "");
}

/* A load of dtype dt (memory type mt, esz bytes) at base + off: one element, or a gather of
 * the vector of offsets off (vec); bools are compared to 0. */
static LLVMValueRef load_at(cg *g, ic_dtype dt, LLVMTypeRef mt, LLVMValueRef base, LLVMValueRef off, size_t esz,
                            bool vec) {
    LLVMValueRef v;
    if (!vec) {
        LLVMValueRef p = LLVMBuildGEP2(B, mt, base, &off, 1, "");
        v = LLVMBuildLoad2(B, mt, p, "");
        LLVMSetAlignment(v, (unsigned)esz);
    } else {
        v = gather(g, mt, base, off, esz);
    }
    if (dt == IC_BOOL) v = LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
    return v;
}

/* index_select: static offset + clamp(index) * stride */
static LLVMValueRef load_gather(cg *g, const ic_x *e) {
    LLVMTypeRef mt = mem_type(g, e->dtype);
    LLVMValueRef base = g->buf_ptr[e->buf];
    size_t esz = ic_dtype_size(e->dtype);
    bool vec = g->width > 1;
    LLVMValueRef v;
    if (!ic_tainted(g->c, e->aux) && e->aux <= 0) {
        /* gathered along a dim of size 0: the source holds no element (its pointer may be
         * null) and every index is out of range, which the index check after the kernels
         * raises (eager's IndexError); nothing is read meanwhile */
        v = LLVMConstNull(vec ? LLVMVectorType(mt, (unsigned)g->width) : mt);
        if (e->dtype == IC_BOOL) v = LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
        return v;
    }
    LLVMValueRef idx = clamp_off(g, emit(g, e->a), e->aux);
    LLVMValueRef off = LLVMBuildAdd(B, ixval(g, e->ix, vec), LLVMBuildMul(B, idx, cg_consti(g, LLVMTypeOf(idx), (long long)e->cval), ""), "");
    {
        /* the other dims' offset may leave the buffer as load()'s may (an index_select on
         * an untaken side of cat reads columns beyond its row or before it: past the end or
         * before the start of the table, a fault where the next page is unmapped): the
         * whole offset is clamped into the buffer when its range is not inside it */
        ic_ctx *c = g->c;
        int64_t lo, hi, span = c->bufs[e->buf].span;
        c->range_hint = ic_tainted(c, span);
        ix_range(c, e->ix, &lo, &hi);
        c->range_hint = false;
        bool sym = ic_tainted(c, span) || ic_tainted(c, e->aux);
        if (sym || e->cval < 0 || lo < 0 || hi + (e->aux - 1) * (int64_t)e->cval >= span)
            off = clamp_off(g, off, span);
    }
    if (ic_tainted(g->c, e->aux)) {
        /* a symbolic size that is 0 at run time: the offset and the base fall back to a
         * zeroed slot of the module's (the source may have no storage) */
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSGT, cg_size(g, e->aux), LLVMConstInt(g->i64, 0, 0), "");
        LLVMValueRef zs = LLVMGetNamedGlobal(g->mod, "tc_zero_slot");
        if (zs == NULL) {
            LLVMTypeRef zt = LLVMArrayType(g->i64, 2);
            zs = LLVMAddGlobal(g->mod, zt, "tc_zero_slot");
            LLVMSetInitializer(zs, LLVMConstNull(zt));
            LLVMSetGlobalConstant(zs, 1);
            LLVMSetLinkage(zs, LLVMPrivateLinkage);
            LLVMSetAlignment(zs, 16);
        }
        base = LLVMBuildSelect(B, ok, base, zs, "");
        off = LLVMBuildSelect(B, ok, off, LLVMConstNull(LLVMTypeOf(off)), "");
    }
    return load_at(g, e->dtype, mt, base, off, esz, vec);
}

/* A load that may leave its buffer (a branch of cat not taken there: the lanes outside are
 * never used, they only must not fault). Lane-invariant: one clamped element, broadcast.
 * Contiguous along the vector var: a masked vector load of the lanes inside [0, span) (the
 * others read as 0) instead of a gather of clamped offsets, which is slower to run and to
 * compile (DenseNet's concatenations: a gather per source and vector). Else the gather. */
static LLVMValueRef load_unsafe(cg *g, const ic_x *e, LLVMTypeRef mt, LLVMValueRef base, int64_t span, size_t esz) {
    ic_ctx *c = g->c;
    if (g->width == 1 || !ix_uses_var(c, e->ix, g->vec_var)) {
        LLVMValueRef v = load_at(g, e->dtype, mt, base, clamp_off(g, ixval(g, e->ix, false), span), esz, false);
        return cg_splat(g, v, g->width);
    }
    bool nonaff;
    int64_t k = ix_coeff(c, e->ix, g->vec_var, &nonaff);
    if (nonaff || k != 1)
        return load_at(g, e->dtype, mt, base, clamp_off(g, ixval(g, e->ix, true), span), esz, true);
    LLVMValueRef off = ixval(g, e->ix, false); /* lane 0's; lane j reads off + j */
    LLVMValueRef lanes[IC_VF];
    for (int i = 0; i < g->width; i++) lanes[i] = LLVMConstInt(g->i64, (unsigned long long)i, 0);
    LLVMValueRef offs = LLVMBuildAdd(B, cg_splat(g, off, g->width), LLVMConstVector(lanes, (unsigned)g->width), "");
    LLVMValueRef hi = ic_tainted(c, span) ? cg_size(g, span) : LLVMConstInt(g->i64, (unsigned long long)span, 0);
    /* unsigned: a negative offset is out too */
    LLVMValueRef mask = LLVMBuildICmp(B, LLVMIntULT, offs, cg_splat(g, hi, g->width), "");
    LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)g->width);
    LLVMValueRef p = LLVMBuildGEP2(B, mt, base, &off, 1, "");
    LLVMTypeRef ov[2] = {vt, LLVMTypeOf(p)};
    LLVMValueRef args[4] = {p, LLVMConstInt(g->i32, esz, 0), mask, LLVMConstNull(vt)};
    LLVMValueRef v = cg_intrin(g, "llvm.masked.load", ov, 2, args, 4);
    if (e->dtype == IC_BOOL) v = LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(vt), "");
    return v;
}

static LLVMValueRef load(cg *g, const ic_x *e) {
    ic_ctx *c = g->c;
    if (e->a >= 0) return load_gather(g, e);
    LLVMTypeRef mt = mem_type(g, e->dtype);
    LLVMValueRef base = g->buf_ptr[e->buf];
    size_t esz = ic_dtype_size(e->dtype);
    LLVMValueRef v;
    /* loads that may leave the buffer (branches of cat never taken there) are clamped */
    int64_t lo, hi, span = c->bufs[e->buf].span;
    /* dynamic graphs: symbolic vars range to their hint, as the span is at the hints (the
     * loads that leave a buffer are cat's untaken branches, along a static dim: found at
     * the hints as at any size); the clamp bound of a symbolic span is computed at run
     * time (contiguous buffers: span = numel, a monomial) */
    c->range_hint = ic_tainted(c, span);
    ix_range(c, e->ix, &lo, &hi);
    c->range_hint = false;
    bool unsafe = lo < 0 || hi >= span;
    if (unsafe)
        return load_unsafe(g, e, mt, base, span, esz);
    if (g->width == 1 || !ix_uses_var(c, e->ix, g->vec_var))
        return cg_splat(g, load_at(g, e->dtype, mt, base, ixval(g, e->ix, false), esz, false), g->width);
    bool nonaff;
    int64_t k = ix_coeff(c, e->ix, g->vec_var, &nonaff);
    LLVMTypeRef vt = LLVMVectorType(mt, (unsigned)g->width);
    if (!nonaff && k == 1) {
        LLVMValueRef off = ixval(g, e->ix, false);
        LLVMValueRef p = LLVMBuildGEP2(B, mt, base, &off, 1, "");
        v = LLVMBuildLoad2(B, vt, p, "");
        LLVMSetAlignment(v, (unsigned)esz);
    } else {
        v = gather(g, mt, base, ixval(g, e->ix, true), esz);
    }
    if (e->dtype == IC_BOOL) v = LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstNull(vt), "");
    return v;
}

static LLVMValueRef emit(cg *g, ic_xid x) {
    if (g->memo_gen[x] == g->gen) return g->memo[x];
    const ic_x e = g->c->xs[x];
    LLVMValueRef r = NULL;
    switch (e.kind) {
    case X_CONST: {
        LLVMTypeRef t = cg_type(g, e.dtype, 1);
        LLVMValueRef s;
        if (e.dtype == IC_BF16) {
            float f = (float)e.cval;
            uint32_t u;
            memcpy(&u, &f, 4);
            u = f != f ? (u >> 16) | 0x40 : (u + 0x7FFF + ((u >> 16) & 1)) >> 16;
            s = LLVMConstInt(t, u & 0xFFFF, 0);
        } else if (ic_is_float(e.dtype)) {
            s = LLVMConstReal(t, e.cval);
        } else {
            s = LLVMConstInt(t, (unsigned long long)(long long)e.cval, 1);
        }
        r = cg_splat(g, s, g->width);
        break;
    }
    case X_LOADF:
        r = load(g, &e);
        break;
    case X_IXVAL:
        r = ixval(g, e.ix, g->width > 1);
        break;
    case X_ROWVAL:
        if (g->vo_u && g->rowval_arr && g->rowval_arr[e.a]) {
            const ic_item *it = &g->k->items[e.a];
            LLVMTypeRef rt = cg_type(g, ic_is_arg(it->red_op) ? IC_I64 : it->acc, IC_VF);
            r = LLVMBuildLoad2(B, rt, LLVMBuildGEP2(B, rt, g->rowval_arr[e.a], &g->vo_u, 1, ""), "");
            break;
        }
        if (!g->rowval[e.a]) ic_fail(g->c, IC_EINTERNAL, "codegen: row value %d not ready", e.a);
        r = cg_splat(g, g->rowval[e.a], g->width);
        break;
    case X_CAST:
        r = ol_convert(g, emit(g, e.a), g->c->xs[e.a].dtype, e.dtype);
        break;
    case X_OP: {
        ic_kind k = ic_op_kind(e.op);
        LLVMValueRef a = emit(g, e.a);
        if (k == IC_K_UNARY) {
            r = ol_unary(g, e.op, g->c->xs[e.a].dtype, a);
        } else if (k == IC_K_BINARY) {
            r = ol_binary(g, e.op, g->c->xs[e.a].dtype, a, emit(g, e.b), e.b);
        } else if (e.op == IC_OP_WHERE) {
            r = LLVMBuildSelect(B, a, emit(g, e.b), emit(g, e.c), "");
        } else {
            ic_fail(g->c, IC_EINTERNAL, "codegen: op %s", ic_op_name(e.op));
        }
        break;
    }
    default:
        ic_fail(g->c, IC_EINTERNAL, "codegen: expression kind %d", e.kind);
    }
    g->memo[x] = r;
    g->memo_gen[x] = g->gen;
    return r;
}

static void store(cg *g, const ic_item *it, LLVMValueRef v) {
    ic_ctx *c = g->c;
    LLVMTypeRef mt = mem_type(g, it->dtype);
    size_t esz = ic_dtype_size(it->dtype);
    if (it->dtype == IC_BOOL) v = LLVMBuildZExt(B, v, g->width > 1 ? LLVMVectorType(mt, (unsigned)g->width) : mt, "");
    LLVMValueRef base = g->buf_ptr[it->buf];
    bool nonaff = false;
    int64_t k = g->width > 1 ? ix_coeff(c, it->out_ix, g->vec_var, &nonaff) : 0;
    if (g->width == 1 || (!nonaff && k == 1)) {
        LLVMValueRef off = ixval(g, it->out_ix, false);
        LLVMValueRef p = LLVMBuildGEP2(B, mt, base, &off, 1, "");
        LLVMValueRef s = LLVMBuildStore(B, v, p);
        LLVMSetAlignment(s, (unsigned)esz);
        return;
    }
    /* scattered store, one lane at a time (lane order keeps last-writer semantics) */
    LLVMValueRef offs = ixval(g, it->out_ix, true);
    for (int i = 0; i < g->width; i++) {
        LLVMValueRef idx = LLVMConstInt(g->i32, (unsigned)i, 0);
        LLVMValueRef off = LLVMBuildExtractElement(B, offs, idx, "");
        LLVMValueRef p = LLVMBuildGEP2(B, mt, base, &off, 1, "");
        LLVMValueRef s = LLVMBuildStore(B, LLVMBuildExtractElement(B, v, idx, ""), p);
        LLVMSetAlignment(s, (unsigned)esz);
    }
}

/* ---- reductions ------------------------------------------------------------------------- */
static void arg_hreduce(cg *g, const ic_item *it, LLVMValueRef v, LLVMValueRef vi, LLVMValueRef *ro,
                        LLVMValueRef *ri) {
    for (int w = IC_VF / 2; w >= 1; w /= 2) {
        LLVMValueRef lo[IC_VF], hi[IC_VF];
        for (int i = 0; i < w; i++) {
            lo[i] = LLVMConstInt(g->i32, (unsigned)i, 0);
            hi[i] = LLVMConstInt(g->i32, (unsigned)(i + w), 0);
        }
        LLVMValueRef ml = LLVMConstVector(lo, (unsigned)w), mh = LLVMConstVector(hi, (unsigned)w);
        LLVMValueRef a = LLVMBuildShuffleVector(B, v, LLVMGetPoison(LLVMTypeOf(v)), ml, "");
        LLVMValueRef b = LLVMBuildShuffleVector(B, v, LLVMGetPoison(LLVMTypeOf(v)), mh, "");
        LLVMValueRef ai = LLVMBuildShuffleVector(B, vi, LLVMGetPoison(LLVMTypeOf(vi)), ml, "");
        LLVMValueRef bi = LLVMBuildShuffleVector(B, vi, LLVMGetPoison(LLVMTypeOf(vi)), mh, "");
        ol_arg_combine(g, it, a, ai, b, bi, &v, &vi);
    }
    *ro = LLVMBuildExtractElement(B, v, LLVMConstInt(g->i32, 0, 0), "");
    *ri = LLVMBuildExtractElement(B, vi, LLVMConstInt(g->i32, 0, 0), "");
}

static LLVMValueRef hreduce(cg *g, const ic_item *it, LLVMValueRef v) {
    for (int w = IC_VF / 2; w >= 1; w /= 2) {
        LLVMValueRef lo[IC_VF], hi[IC_VF];
        for (int i = 0; i < w; i++) {
            lo[i] = LLVMConstInt(g->i32, (unsigned)i, 0);
            hi[i] = LLVMConstInt(g->i32, (unsigned)(i + w), 0);
        }
        LLVMValueRef a = LLVMBuildShuffleVector(B, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(lo, (unsigned)w), "");
        LLVMValueRef b = LLVMBuildShuffleVector(B, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstVector(hi, (unsigned)w), "");
        v = ol_red_combine(g, it, a, b);
    }
    return LLVMBuildExtractElement(B, v, LLVMConstInt(g->i32, 0, 0), "");
}

/* ---- kernel structure ------------------------------------------------------------------- */
/* a mean's division (ops.c ol_red_mean) by its count, read from the symbols when dynamic */
static LLVMValueRef red_mean(cg *g, const ic_item *it, LLVMValueRef r) {
    bool sym = it->red_op == IC_OP_MEAN && ic_tainted(g->c, it->red_count);
    return ol_red_mean(g, it, r, sym ? fcount(g, r, it->red_count) : NULL);
}

/* the row value (arg reductions: r is the index) and its store */
static void finish_reduce(cg *g, ic_kernel *k, int j, LLVMValueRef r) {
    ic_item *it = &k->items[j];
    r = red_mean(g, it, r);
    g->rowval[j] = r;
    if (it->store) store(g, it, ol_red_out(g, it, r, r));
}
static void emit_items(cg *g, ic_kernel *k, int pos, LLVMValueRef *vacc, LLVMValueRef *sacc) {
    g->gen++;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos) continue;
        LLVMValueRef v = emit(g, it->expr);
        if (it->kind == IT_REDUCE) {
            LLVMValueRef accp = g->width > 1 ? vacc[j] : sacc[j];
            LLVMTypeRef at = cg_type(g, it->acc, g->width);
            LLVMValueRef acc = LLVMBuildLoad2(B, at, accp, "");
            if (ic_is_arg(it->red_op)) {
                LLVMValueRef idxp = g->width > 1 ? vacc[k->nitems + j] : sacc[k->nitems + j];
                LLVMTypeRef it64 = cg_type(g, IC_I64, g->width);
                LLVMValueRef ai = LLVMBuildLoad2(B, it64, idxp, ""), ro, ri;
                ol_arg_combine(g, it, acc, ai, v, cg_splat(g, emit(g, it->expr2), g->width), &ro, &ri);
                LLVMBuildStore(B, ro, accp);
                LLVMBuildStore(B, ri, idxp);
            } else {
                LLVMBuildStore(B, ol_red_combine(g, it, acc, v), accp);
            }
        } else if (it->store) {
            store(g, it, v);
        }
    }
}

/* One pass over the inner vars at position pos. Row mode: the innermost inner var is
 * vectorized (vector loop + scalar tail), reductions end in a tree reduction. vec_outer
 * mode: lanes run along the last outer var, every inner var is a scalar loop and each lane
 * accumulates its own output. */
/* split kernels: phase 1 writes the partial accumulators of part `tile` */
static void store_partial(cg *g, ic_kernel *k, int j, LLVMValueRef tile, LLVMValueRef r) {
    LLVMValueRef slot = LLVMBuildAdd(B, LLVMBuildMul(B, tile, LLVMConstInt(g->i64, (unsigned)k->nitems, 0), ""),
                                     LLVMConstInt(g->i64, (unsigned)j, 0), "");
    LLVMValueRef p = LLVMBuildGEP2(B, g->i64, g->buf_ptr[k->partial_buf], &slot, 1, "");
    LLVMBuildStore(B, r, p);
}

static void gen_pass(cg *g, ic_kernel *k, int pos, LLVMValueRef tile) {
    /* accumulators: [j] value, [nitems + j] index (argmax/argmin) */
    LLVMValueRef *vacc = ic_alloc(g->c, (size_t)(2 * k->nitems) * sizeof *vacc);
    LLVMValueRef *sacc = ic_alloc(g->c, (size_t)(2 * k->nitems) * sizeof *sacc);
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos || it->kind != IT_REDUCE) continue;
        vacc[j] = alloca_(g, cg_type(g, it->acc, IC_VF));
        sacc[j] = alloca_(g, cg_type(g, it->acc, 1));
        LLVMBuildStore(B, ol_red_identity(g, it, IC_VF), vacc[j]);
        LLVMBuildStore(B, ol_red_identity(g, it, 1), sacc[j]);
        if (ic_is_arg(it->red_op)) {
            int n = k->nitems + j;
            vacc[n] = alloca_(g, cg_type(g, IC_I64, IC_VF));
            sacc[n] = alloca_(g, g->i64);
            LLVMBuildStore(B, cg_consti(g, cg_type(g, IC_I64, IC_VF), INT64_MAX), vacc[n]);
            LLVMBuildStore(B, LLVMConstInt(g->i64, INT64_MAX, 0), sacc[n]);
        }
    }
    if (k->ninner == 0) {
        g->width = 1;
        g->vec_var = -1;
        emit_items(g, k, pos, vacc, sacc);
    } else {
        /* tiles (pointwise) and split parts cut the outermost inner var */
        lp outer[IC_MAX_DIMS];
        for (int d = 0; d < k->ninner; d++) {
            LLVMValueRef lo = LLVMConstInt(g->i64, 0, 0);
            LLVMValueRef hi = cg_size(g, k->isize[d]);
            if (d == 0 && k->ntiles > 1) {
                lo = LLVMBuildMul(B, tile, LLVMConstInt(g->i64, (unsigned long long)k->tile, 0), "");
                LLVMValueRef h = LLVMBuildAdd(B, lo, LLVMConstInt(g->i64, (unsigned long long)k->tile, 0), "");
                hi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, h, hi, ""), h, hi, "");
            }
            g->loop_lo[d] = lo;
            g->loop_hi[d] = hi;
        }
        for (int d = 0; d + 1 < k->ninner; d++) {
            lp_begin(g, &outer[d], NULL, g->loop_lo[d], g->loop_hi[d], 1);
            g->var_val[k->ivar[d]] = outer[d].i;
        }
        int32_t iv = k->ivar[k->ninner - 1];
        LLVMValueRef lo = g->loop_lo[k->ninner - 1], hi = g->loop_hi[k->ninner - 1];
        lp vl, sl;
        /* long rows with f32 sums: blocks of IC_SUM_BLOCK elements (32 adds per lane)
         * accumulate apart and the block sums add up in f64: a 1M-element row stays within
         * ~1e-6 relative, like eager's cascade sum, at ~3% cost */
        bool blocked = k->isize[k->ninner - 1] > 2 * IC_SUM_BLOCK && (k->ntiles <= 1 || k->split);
        bool any = false;
        for (int j = 0; j < k->nitems && blocked; j++) {
            ic_item *it = &k->items[j];
            if (it->pos == pos && it->kind == IT_REDUCE && it->acc == IC_F32 &&
                (it->red_op == IC_OP_SUM || it->red_op == IC_OP_MEAN))
                any = true;
        }
        blocked = blocked && any;
        if (!blocked) {
            lp_begin(g, &vl, NULL, lo, hi, IC_VF);
            g->width = IC_VF;
            g->vec_var = iv;
            g->var_val[iv] = vl.i;
            emit_items(g, k, pos, vacc, sacc);
            lp_end(g, &vl);
        } else {
            LLVMValueRef *bacc = ic_alloc(g->c, (size_t)(2 * k->nitems) * sizeof *bacc);
            LLVMValueRef *dacc = ic_alloc(g->c, (size_t)(k->nitems) * sizeof *dacc);
            memcpy(bacc, vacc, (size_t)(2 * k->nitems) * sizeof *bacc);
            LLVMTypeRef vt = cg_type(g, IC_F32, IC_VF), dt = cg_type(g, IC_F64, IC_VF);
            for (int j = 0; j < k->nitems; j++) {
                ic_item *it = &k->items[j];
                if (it->pos == pos && it->kind == IT_REDUCE && it->acc == IC_F32 &&
                    (it->red_op == IC_OP_SUM || it->red_op == IC_OP_MEAN)) {
                    bacc[j] = alloca_(g, vt);
                    /* the block sums add up in f64, starting from the running sum (outer
                     * inner vars re-enter this loop) */
                    dacc[j] = alloca_(g, dt);
                    LLVMBuildStore(B, LLVMBuildFPExt(B, LLVMBuildLoad2(B, vt, vacc[j], ""), dt, ""), dacc[j]);
                }
            }
            LLVMValueRef CH = LLVMConstInt(g->i64, IC_SUM_BLOCK, 0);
            LLVMValueRef vi = alloca_(g, g->i64);
            LLVMBuildStore(B, lo, vi);
            lp cl;
            lp_begin(g, &cl, NULL, lo, LLVMBuildAdd(B, hi, LLVMConstInt(g->i64, IC_SUM_BLOCK - 1, 0), ""), IC_SUM_BLOCK);
            LLVMValueRef ch = LLVMBuildAdd(B, cl.i, CH, "");
            ch = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, ch, hi, ""), ch, hi, "");
            for (int j = 0; j < k->nitems; j++)
                if (bacc[j] != vacc[j]) LLVMBuildStore(B, ol_red_identity(g, &k->items[j], IC_VF), bacc[j]);
            lp_begin(g, &vl, vi, cl.i, ch, IC_VF);
            g->width = IC_VF;
            g->vec_var = iv;
            g->var_val[iv] = vl.i;
            emit_items(g, k, pos, bacc, sacc);
            lp_end(g, &vl);
            for (int j = 0; j < k->nitems; j++)
                if (bacc[j] != vacc[j]) {
                    LLVMValueRef b64 = LLVMBuildFPExt(B, LLVMBuildLoad2(B, vt, bacc[j], ""), dt, "");
                    LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, dt, dacc[j], ""), b64, ""), dacc[j]);
                }
            lp_end(g, &cl);
            for (int j = 0; j < k->nitems; j++)
                if (bacc[j] != vacc[j])
                    LLVMBuildStore(B, LLVMBuildFPTrunc(B, LLVMBuildLoad2(B, dt, dacc[j], ""), vt, ""), vacc[j]);
        }
        /* the scalar tail, unless the row is known to be whole vectors (LLVM would delete
         * the empty loop, but only after its costly loop passes) */
        bool whole = LLVMIsAConstantInt(lo) && LLVMIsAConstantInt(hi) &&
                     (LLVMConstIntGetSExtValue(hi) - LLVMConstIntGetSExtValue(lo)) % IC_VF == 0;
        if (!whole) {
            lp_begin(g, &sl, vl.iv, NULL, hi, 1);
            g->width = 1;
            g->vec_var = -1;
            g->var_val[iv] = sl.i;
            emit_items(g, k, pos, vacc, sacc);
            lp_end(g, &sl);
        }
        for (int d = k->ninner - 2; d >= 0; d--) lp_end(g, &outer[d]);
    }
    g->width = 1;
    g->vec_var = -1;
    g->gen++;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos || it->kind != IT_REDUCE) continue;
        LLVMValueRef r;
        if (ic_is_arg(it->red_op)) {
            int n = k->nitems + j;
            LLVMValueRef sv = LLVMBuildLoad2(B, cg_type(g, it->acc, 1), sacc[j], "");
            LLVMValueRef si = LLVMBuildLoad2(B, g->i64, sacc[n], "");
            if (k->ninner > 0) {
                LLVMValueRef hv, hi, rv;
                arg_hreduce(g, it, LLVMBuildLoad2(B, cg_type(g, it->acc, IC_VF), vacc[j], ""),
                            LLVMBuildLoad2(B, cg_type(g, IC_I64, IC_VF), vacc[n], ""), &hv, &hi);
                ol_arg_combine(g, it, hv, hi, sv, si, &rv, &si);
            }
            r = si;
        } else {
            r = LLVMBuildLoad2(B, cg_type(g, it->acc, 1), sacc[j], "");
            if (k->ninner > 0) {
                LLVMValueRef v = LLVMBuildLoad2(B, cg_type(g, it->acc, IC_VF), vacc[j], "");
                r = ol_red_combine(g, it, hreduce(g, it, v), r);
            }
        }
        if (k->split) {
            store_partial(g, k, j, tile, r);
            continue;
        }
        finish_reduce(g, k, j, r);
    }
}

/* All positions of one row. */
static void gen_row(cg *g, ic_kernel *k, LLVMValueRef tile) {
    for (int p = 0; p < k->npos; p++) {
        if (p % 2) {
            gen_pass(g, k, p, tile);
        } else {
            g->width = 1;
            g->vec_var = -1;
            emit_items(g, k, p, NULL, NULL);
        }
    }
}

/* vec_outer rows: lanes run along the last outer var, nvec (<= k->vo_unroll) vectors of
 * 16 adjacent outputs side by side, so every step down the reduced dims reads nvec*16
 * contiguous elements. Accumulators and row values live in [vo_unroll x <16 x T>] arrays
 * indexed by the vector number u; the reduced dims are scalar loops. Tall f32 sums fold
 * blocks of IC_COL_BLOCK rows into f64 (each lane is a column). */
static LLVMValueRef uptr(cg *g, LLVMTypeRef vt, LLVMValueRef arr, LLVMValueRef u) {
    return LLVMBuildGEP2(B, vt, arr, &u, 1, "");
}

static bool col_blocked_item(const ic_item *it, int pos) {
    return it->pos == pos && it->kind == IT_REDUCE && it->acc == IC_F32 &&
           (it->red_op == IC_OP_SUM || it->red_op == IC_OP_MEAN);
}

static void gen_row_vouter(cg *g, ic_kernel *k, LLVMValueRef base, LLVMValueRef nvec) {
    ic_ctx *c = g->c;
    int32_t ov = k->ovar[k->nouter - 1];
    unsigned U = (unsigned)k->vo_unroll;
    int n = k->nitems;
    LLVMValueRef *acc = ic_alloc(c, (size_t)(2 * n) * sizeof *acc);   /* [j], [n+j] index */
    LLVMValueRef *racc = ic_alloc(c, (size_t)n * sizeof *racc);      /* row values */
    LLVMValueRef *bacc = ic_alloc(c, (size_t)n * sizeof *bacc), *dacc = ic_alloc(c, (size_t)n * sizeof *dacc);
    LLVMValueRef *ptr = ic_alloc(c, (size_t)(2 * n) * sizeof *ptr);
    LLVMTypeRef vi64 = cg_type(g, IC_I64, IC_VF), vf32 = cg_type(g, IC_F32, IC_VF), vf64 = cg_type(g, IC_F64, IC_VF);
    for (int j = 0; j < n; j++) {
        ic_item *it = &k->items[j];
        if (it->kind != IT_REDUCE) continue;
        LLVMTypeRef at = cg_type(g, it->acc, IC_VF);
        acc[j] = LLVMBuildAlloca(g->ab, LLVMArrayType(at, U), "vacc");
        if (ic_is_arg(it->red_op)) acc[n + j] = LLVMBuildAlloca(g->ab, LLVMArrayType(vi64, U), "vidx");
        LLVMTypeRef rt = ic_is_arg(it->red_op) ? vi64 : at;
        racc[j] = LLVMBuildAlloca(g->ab, LLVMArrayType(rt, U), "rowval");
        if (col_blocked_item(it, it->pos)) {
            bacc[j] = LLVMBuildAlloca(g->ab, LLVMArrayType(vf32, U), "bacc");
            dacc[j] = LLVMBuildAlloca(g->ab, LLVMArrayType(vf64, U), "dacc");
        }
    }
    g->rowval_arr = racc;
    LLVMValueRef zero = LLVMConstInt(g->i64, 0, 0);
#define ULOOP(L)                                                                              \
    lp L;                                                                                     \
    lp_begin(g, &L, NULL, zero, nvec, 1);                                                     \
    g->vo_u = L.i;                                                                            \
    g->var_val[ov] = LLVMBuildAdd(B, base, LLVMBuildMul(B, L.i, LLVMConstInt(g->i64, IC_VF, 0), ""), "")
#define UEND(L) lp_end(g, &L)
    for (int pos = 0; pos < k->npos; pos++) {
        g->width = IC_VF;
        g->vec_var = ov;
        if (pos % 2 == 0) {
            ULOOP(L);
            emit_items(g, k, pos, NULL, NULL);
            UEND(L);
            continue;
        }
        int last = k->ninner - 1;
        bool blocked = false;
        {
            ULOOP(L);
            for (int j = 0; j < n; j++) {
                ic_item *it = &k->items[j];
                if (it->pos != pos || it->kind != IT_REDUCE) continue;
                LLVMBuildStore(B, ol_red_identity(g, it, IC_VF), uptr(g, cg_type(g, it->acc, IC_VF), acc[j], L.i));
                if (ic_is_arg(it->red_op)) LLVMBuildStore(B, cg_consti(g, vi64, INT64_MAX), uptr(g, vi64, acc[n + j], L.i));
                if (col_blocked_item(it, pos) && last >= 0 && k->isize[last] > 2 * IC_COL_BLOCK) blocked = true;
            }
            UEND(L);
        }
        lp loops[IC_MAX_DIMS], cl;
        for (int d = 0; d < last; d++) {
            lp_begin(g, &loops[d], NULL, zero, cg_size(g, k->isize[d]), 1);
            g->var_val[k->ivar[d]] = loops[d].i;
        }
        LLVMValueRef clo = zero, chi = NULL;
        if (last >= 0) chi = cg_size(g, k->isize[last]);
        if (blocked) {
            ULOOP(L);
            for (int j = 0; j < n; j++)
                if (col_blocked_item(&k->items[j], pos))
                    LLVMBuildStore(B, LLVMBuildFPExt(B, LLVMBuildLoad2(B, vf32, uptr(g, vf32, acc[j], L.i), ""), vf64, ""),
                                   uptr(g, vf64, dacc[j], L.i));
            UEND(L);
            LLVMValueRef N = chi;
            lp_begin(g, &cl, NULL, zero, LLVMBuildAdd(B, N, LLVMConstInt(g->i64, IC_COL_BLOCK - 1, 0), ""), IC_COL_BLOCK);
            clo = cl.i;
            chi = LLVMBuildAdd(B, cl.i, LLVMConstInt(g->i64, IC_COL_BLOCK, 0), "");
            chi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, chi, N, ""), chi, N, "");
            ULOOP(L2);
            for (int j = 0; j < n; j++)
                if (col_blocked_item(&k->items[j], pos)) LLVMBuildStore(B, LLVMConstNull(vf32), uptr(g, vf32, bacc[j], L2.i));
            UEND(L2);
        }
        lp rl;
        if (last >= 0) {
            lp_begin(g, &rl, NULL, clo, chi, 1);
            g->var_val[k->ivar[last]] = rl.i;
        }
        {
            ULOOP(L);
            for (int j = 0; j < n; j++) {
                ic_item *it = &k->items[j];
                ptr[j] = ptr[n + j] = NULL;
                if (it->pos != pos || it->kind != IT_REDUCE) continue;
                if (blocked && col_blocked_item(it, pos)) ptr[j] = uptr(g, vf32, bacc[j], L.i);
                else ptr[j] = uptr(g, cg_type(g, it->acc, IC_VF), acc[j], L.i);
                if (ic_is_arg(it->red_op)) ptr[n + j] = uptr(g, vi64, acc[n + j], L.i);
            }
            g->width = IC_VF;
            g->vec_var = ov;
            emit_items(g, k, pos, ptr, NULL);
            UEND(L);
        }
        if (last >= 0) lp_end(g, &rl);
        if (blocked) {
            ULOOP(L);
            for (int j = 0; j < n; j++)
                if (col_blocked_item(&k->items[j], pos)) {
                    LLVMValueRef dp = uptr(g, vf64, dacc[j], L.i);
                    LLVMValueRef b64 = LLVMBuildFPExt(B, LLVMBuildLoad2(B, vf32, uptr(g, vf32, bacc[j], L.i), ""), vf64, "");
                    LLVMBuildStore(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, vf64, dp, ""), b64, ""), dp);
                }
            UEND(L);
            lp_end(g, &cl);
            ULOOP(L3);
            for (int j = 0; j < n; j++)
                if (col_blocked_item(&k->items[j], pos))
                    LLVMBuildStore(B, LLVMBuildFPTrunc(B, LLVMBuildLoad2(B, vf64, uptr(g, vf64, dacc[j], L3.i), ""), vf32, ""),
                                   uptr(g, vf32, acc[j], L3.i));
            UEND(L3);
        }
        for (int d = last - 1; d >= 0; d--) lp_end(g, &loops[d]);
        /* finish: per vector, the row values (and their stores) */
        {
            ULOOP(L);
            g->width = IC_VF;
            g->vec_var = ov;
            g->gen++;
            for (int j = 0; j < n; j++) {
                ic_item *it = &k->items[j];
                if (it->pos != pos || it->kind != IT_REDUCE) continue;
                LLVMValueRef r = ic_is_arg(it->red_op) ? LLVMBuildLoad2(B, vi64, uptr(g, vi64, acc[n + j], L.i), "")
                                                       : LLVMBuildLoad2(B, cg_type(g, it->acc, IC_VF), uptr(g, cg_type(g, it->acc, IC_VF), acc[j], L.i), "");
                r = red_mean(g, it, r);
                LLVMBuildStore(B, r, uptr(g, LLVMTypeOf(r), racc[j], L.i));
                if (it->store) store(g, it, ol_red_out(g, it, r, r));
            }
            UEND(L);
        }
    }
#undef ULOOP
#undef UEND
    g->vo_u = NULL;
    g->rowval_arr = NULL;
}

/* split kernels, phase 2: fold the partials of every part, then the row blocks after */
static void gen_combine(cg *g, ic_kernel *k) {
    g->width = 1;
    g->vec_var = -1;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->kind != IT_REDUCE) continue;
        LLVMTypeRef at = cg_type(g, it->acc, 1);
        LLVMValueRef acc = alloca_(g, at);
        LLVMBuildStore(B, ol_red_identity(g, it, 1), acc);
        lp L;
        lp_begin(g, &L, NULL, LLVMConstInt(g->i64, 0, 0), LLVMConstInt(g->i64, (unsigned long long)k->ntiles, 0), 1);
        LLVMValueRef slot = LLVMBuildAdd(B, LLVMBuildMul(B, L.i, LLVMConstInt(g->i64, (unsigned)k->nitems, 0), ""),
                                         LLVMConstInt(g->i64, (unsigned)j, 0), "");
        LLVMValueRef p = LLVMBuildGEP2(B, g->i64, g->buf_ptr[k->partial_buf], &slot, 1, "");
        LLVMValueRef x = LLVMBuildLoad2(B, at, p, "");
        LLVMBuildStore(B, ol_red_combine(g, it, LLVMBuildLoad2(B, at, acc, ""), x), acc);
        lp_end(g, &L);
        finish_reduce(g, k, j, LLVMBuildLoad2(B, at, acc, ""));
    }
    for (int p = 2; p < k->npos; p += 2) {
        g->width = 1;
        g->vec_var = -1;
        emit_items(g, k, p, NULL, NULL);
    }
}

/* phase 0: the kernel; split kernels: phase 1 the parallel parts, phase 2 the combine */
/* nounwind and the target of the host on a kernel's function */
static void cpu_fn_attrs(cg *g, LLVMValueRef f, const char *cpu, const char *feat) {
    unsigned knu = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, knu, 0));
    LLVMAddTargetDependentFunctionAttr(f, "target-cpu", cpu);
    LLVMAddTargetDependentFunctionAttr(f, "target-features", feat);
    LLVMAddTargetDependentFunctionAttr(f, "min-legal-vector-width", "512");
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

LLVMValueRef cpu_gen_kernel(cg *g, ic_kernel *k, const char *name, const char *cpu, const char *feat, int phase,
                            int mode, LLVMValueRef shared) {
    ic_ctx *c = g->c;
    g->gen++; /* no expression value of an earlier kernel (or scratch module) is reused */
    /* buffers used by this kernel, in increasing order: stamped in the driver's array and
     * listed (per-kernel arrays of every buffer made code generation quadratic) */
    uint32_t *bseen = g->buf_seen, bgen = ++g->buf_gen;
    int *used = g->buf_list, nused = 0;
#define USE_BUF(b_) do { int b__ = (b_); if (bseen[b__] != bgen) { bseen[b__] = bgen; used[nused++] = b__; } } while (0)
    if (k->split) USE_BUF(k->partial_buf);
    /* scan loads: a DAG walk with a visited set (shared subexpressions are common); the set
     * and stack are the driver's, stamped per kernel (per-kernel arrays of every expression
     * made code generation quadratic in the graph size) */
    uint32_t *seen = g->scan_seen, gen = ++g->scan_gen;
    ic_xid *stack = g->scan_stack;
    for (int j = 0; j < k->nitems; j++) {
        if (k->items[j].store) USE_BUF(k->items[j].buf);
        int sp = 0;
        stack[sp++] = k->items[j].expr;
        while (sp) {
            ic_xid x = stack[--sp];
            if (seen[x] == gen) continue;
            seen[x] = gen;
            const ic_x *e = &c->xs[x];
            if (e->kind == X_LOADF) USE_BUF(e->buf);
            if (e->kind == X_ROWVAL) continue;
            if (e->a >= 0) stack[sp++] = e->a;
            if (e->b >= 0) stack[sp++] = e->b;
            if (e->c >= 0) stack[sp++] = e->c;
        }
    }
#undef USE_BUF
    qsort(used, (size_t)nused, sizeof *used, cmp_int);
    int nu = 0, nrow = 0;
    int *ub = ic_alloc(c, (size_t)(nused + 1) * sizeof(int)), *rb = ic_alloc(c, (size_t)(nused + 1) * sizeof(int));
    for (int i = 0; i < nused; i++) {
        int b = used[i];
        if (c->bufs[b].kind == 3) rb[nrow++] = b; /* row scratch: an alloca */
        else ub[nu++] = b;
    }
    int nsp = c->dyn ? 1 : 0; /* dynamic graphs: the symbol values follow the buffers */
    LLVMTypeRef bty;
    LLVMValueRef body;
    if (mode == CPU_GEN_WRAP) { /* an identical kernel's body: its parameters are this one's buffers */
        body = shared;
        bty = LLVMGlobalGetValueType(body);
        if (LLVMCountParamTypes(bty) != (unsigned)(2 + nu + nsp))
            ic_fail(c, IC_EINTERNAL, "CPU codegen: kernel %s repeats a body of another arity", name);
    } else {
        LLVMTypeRef *ps = ic_alloc(c, (size_t)(nu + 3) * sizeof(LLVMTypeRef));
        ps[0] = g->i64;
        ps[1] = g->i64;
        for (int i = 0; i < nu; i++) ps[2 + i] = g->ptr;
        if (nsp) ps[2 + nu] = g->ptr;
        bty = LLVMFunctionType(g->vd, ps, (unsigned)(2 + nu + nsp), 0);
        char bname[64];
        snprintf(bname, sizeof bname, "%s_body", mode == CPU_GEN_BODY ? "K" : name);
        body = LLVMAddFunction(g->mod, bname, bty);
        LLVMSetLinkage(body, LLVMInternalLinkage);
        unsigned kna = LLVMGetEnumAttributeKindForName("noalias", 7);
        unsigned kai = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
        for (int i = 0; i < nu; i++)
            LLVMAddAttributeAtIndex(body, (unsigned)(3 + i), LLVMCreateEnumAttribute(g->ctx, kna, 0));
        LLVMAddAttributeAtIndex(body, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->ctx, kai, 0));
        cpu_fn_attrs(g, body, cpu, feat);
    }
    if (mode != CPU_GEN_BODY) {
        LLVMTypeRef wps[3] = {g->ptr, g->i64, g->i64};
        LLVMValueRef wrap = LLVMAddFunction(g->mod, name, LLVMFunctionType(g->vd, wps, 3, 0));
        cpu_fn_attrs(g, wrap, cpu, feat);
        /* wrapper: unpack bufs */
        LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(g->ctx, wrap, "entry");
        LLVMPositionBuilderAtEnd(B, wb);
        LLVMValueRef *args = ic_alloc(c, (size_t)(nu + 3) * sizeof(LLVMValueRef));
        args[0] = LLVMGetParam(wrap, 1);
        args[1] = LLVMGetParam(wrap, 2);
        for (int i = 0; i < nu; i++) {
            LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)ub[i], 0);
            LLVMValueRef p = LLVMBuildGEP2(B, g->ptr, LLVMGetParam(wrap, 0), &idx, 1, "");
            args[2 + i] = LLVMBuildLoad2(B, g->ptr, p, "");
        }
        if (nsp) {
            LLVMValueRef idx = LLVMConstInt(g->i64, (unsigned)c->nbufs, 0);
            LLVMValueRef p = LLVMBuildGEP2(B, g->ptr, LLVMGetParam(wrap, 0), &idx, 1, "");
            args[2 + nu] = LLVMBuildLoad2(B, g->ptr, p, "syms");
        }
        LLVMBuildCall2(B, bty, body, args, (unsigned)(2 + nu + nsp), "");
        LLVMBuildRetVoid(B);
    }
    if (mode == CPU_GEN_WRAP) return body;

    /* body */
    g->fn = body;
    g->syms = nsp ? LLVMGetParam(body, (unsigned)(2 + nu)) : NULL;
    g->k = k;
    for (int i = 0; i < nu; i++) g->buf_ptr[ub[i]] = LLVMGetParam(body, (unsigned)(2 + i));
    g->entry = LLVMAppendBasicBlockInContext(g->ctx, body, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->ctx, body, "start");
    LLVMPositionBuilderAtEnd(g->ab, g->entry);
    LLVMPositionBuilderAtEnd(B, start);
    for (int i = 0; i < nrow; i++) {
        LLVMValueRef a = LLVMBuildAlloca(g->ab, LLVMArrayType(g->i8, (unsigned)c->bufs[rb[i]].nbytes), "rowtmp");
        LLVMSetAlignment(a, 64);
        g->buf_ptr[rb[i]] = a;
    }
    memset(g->rowval, 0, sizeof(LLVMValueRef) * (size_t)(k->nitems + 1));
    if (phase == 2) {
        gen_combine(g, k);
        LLVMBuildRetVoid(B);
        LLVMPositionBuilderAtEnd(g->ab, g->entry);
        LLVMBuildBr(g->ab, start);
        return body;
    }
    lp ol;
    lp_begin(g, &ol, NULL, LLVMGetParam(body, 0), LLVMGetParam(body, 1), 1);
    LLVMValueRef it = ol.i, tile = NULL;
    if (k->ntiles > 1) {
        LLVMValueRef nt = LLVMConstInt(g->i64, (unsigned long long)k->ntiles, 0);
        tile = LLVMBuildURem(B, it, nt, "");
        it = LLVMBuildUDiv(B, it, nt, "");
    }
    int last = k->nouter - 1;
    LLVMValueRef chunk = NULL, oblock = NULL;
    if (k->nob) {
        LLVMValueRef nb = LLVMConstInt(g->i64, (unsigned long long)k->nob, 0);
        oblock = LLVMBuildURem(B, it, nb, "");
        it = LLVMBuildUDiv(B, it, nb, "");
        last--;
    }
    if (k->vec_outer) {
        LLVMValueRef nc = LLVMConstInt(g->i64, (unsigned long long)k->nchunks, 0);
        chunk = LLVMBuildURem(B, it, nc, "");
        it = LLVMBuildUDiv(B, it, nc, "");
        last--;
    }
    for (int d = last; d >= 0; d--) {
        LLVMValueRef s = LLVMConstInt(g->i64, (unsigned long long)k->osize[d], 0);
        g->var_val[k->ovar[d]] = d == 0 ? it : LLVMBuildURem(B, it, s, "");
        if (d > 0) it = LLVMBuildUDiv(B, it, s, "");
    }
    if (k->vec_outer) {
        /* full chunk: 16 lanes; last partial chunk: lane by lane in row mode */
        int32_t ov = k->ovar[k->nouter - 1];
        LLVMValueRef S = LLVMConstInt(g->i64, (unsigned long long)k->osize[k->nouter - 1], 0);
        /* a chunk is vo_unroll vectors of 16 lanes; the lanes past the last full vector
         * (at most 15, last chunk only) run one by one in row mode */
        LLVMValueRef W = LLVMConstInt(g->i64, (unsigned long long)(IC_VF * k->vo_unroll), 0);
        LLVMValueRef base = LLVMBuildMul(B, chunk, W, "");
        LLVMValueRef nvec = LLVMBuildUDiv(B, LLVMBuildSub(B, S, base, ""), LLVMConstInt(g->i64, IC_VF, 0), "");
        LLVMValueRef Uc = LLVMConstInt(g->i64, (unsigned long long)k->vo_unroll, 0);
        nvec = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, nvec, Uc, ""), nvec, Uc, "");
        LLVMBasicBlockRef vb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "vouter");
        LLVMBasicBlockRef sb = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "vtail");
        LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntUGT, nvec, LLVMConstInt(g->i64, 0, 0), ""), vb, sb);
        LLVMPositionBuilderAtEnd(B, vb);
        gen_row_vouter(g, k, base, nvec);
        LLVMBuildBr(B, sb);
        LLVMPositionBuilderAtEnd(B, sb);
        LLVMValueRef tlo = LLVMBuildAdd(B, base, LLVMBuildMul(B, nvec, LLVMConstInt(g->i64, IC_VF, 0), ""), "");
        LLVMValueRef thi = LLVMBuildAdd(B, base, W, "");
        thi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, thi, S, ""), thi, S, "");
        lp tl;
        lp_begin(g, &tl, NULL, tlo, thi, 1);
        g->var_val[ov] = tl.i;
        gen_row(g, k, tile);
        lp_end(g, &tl);
    } else if (phase == 1) {
        gen_pass(g, k, 1, tile);
    } else if (k->nob) {
        /* rows of the block, each over the block's columns (tile) */
        int32_t ov = k->ovar[k->nouter - 1];
        LLVMValueRef S = LLVMConstInt(g->i64, (unsigned long long)k->osize[k->nouter - 1], 0);
        LLVMValueRef lo = LLVMBuildMul(B, oblock, LLVMConstInt(g->i64, IC_BLOCK_ROWS, 0), "");
        LLVMValueRef h = LLVMBuildAdd(B, lo, LLVMConstInt(g->i64, IC_BLOCK_ROWS, 0), "");
        LLVMValueRef hi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, h, S, ""), h, S, "");
        lp rl;
        lp_begin(g, &rl, NULL, lo, hi, 1);
        g->var_val[ov] = rl.i;
        gen_row(g, k, tile);
        lp_end(g, &rl);
    } else {
        gen_row(g, k, tile);
    }
    lp_end(g, &ol);
    LLVMBuildRetVoid(B);
    LLVMPositionBuilderAtEnd(g->ab, g->entry);
    LLVMBuildBr(g->ab, start);
    return body;
}
