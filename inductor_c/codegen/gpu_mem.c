/* gpu_mem.c — the GPU code generator's index expressions and memory access (loads, stores, vector access, staged rows, tiles).
 * Split out of gpu_nvptx.c (the driver): see its comment. */
#include "gpu_internal.h"

/* ---- index expressions ------------------------------------------------------------------- */
LLVMValueRef gg_gix(gg *g, ic_ix a, int lane) {
    ic_ctx *c = g->c;
    const ix_sum s = c->sums[a];
    LLVMValueRef sum = kix(g, s.off);
    for (int i = 0; i < s.n; i++) {
        ix_term tm = c->terms[s.first + i];
        ix_atom at = c->atoms[tm.atom];
        LLVMValueRef v;
        if (at.kind == IX_VAR) {
            v = g->var_val[at.var];
            if (!v) ic_fail(c, IC_EINTERNAL, "GPU codegen: var i%d has no value", at.var);
            if (lane && at.var == g->vv) v = LLVMBuildAdd(B, v, kix(g, lane), "");
        } else {
            int64_t lo, hi;
            ix_range(c, at.sub, &lo, &hi);
            bool sgn = lo < 0;
            v = gg_gix(g, at.sub, lane);
            if (at.div != 1) {
                if (sgn) { /* floor division */
                    LLVMValueRef q = LLVMBuildSDiv(B, v, kix(g, at.div), "");
                    LLVMValueRef r = LLVMBuildSRem(B, v, kix(g, at.div), "");
                    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, 0), "");
                    v = sel(g, neg, LLVMBuildSub(B, q, kix(g, 1), ""), q);
                } else {
                    v = LLVMBuildUDiv(B, v, kix(g, at.div), "");
                }
            }
            if (at.mod) {
                int64_t l2 = at.div != 1 ? (lo < 0 ? -1 : 0) : lo;
                if (l2 < 0) {
                    LLVMValueRef r = LLVMBuildSRem(B, v, kix(g, at.mod), "");
                    LLVMValueRef neg = LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, 0), "");
                    v = sel(g, neg, LLVMBuildAdd(B, r, kix(g, at.mod), ""), r);
                } else {
                    v = LLVMBuildURem(B, v, kix(g, at.mod), "");
                }
            }
        }
        if (tm.coeff != 1) v = LLVMBuildMul(B, v, kix(g, tm.coeff), "");
        sum = LLVMBuildAdd(B, sum, v, "");
    }
    return sum;
}

/* An access the V lanes make as one aligned vector: coefficient 1 along the vectorized var,
 * every other part a multiple of V (so lane 0 sits at a multiple of V). */
static bool vec_access(gg *g, ic_ix a) {
    if (g->V <= 1 || g->vv < 0) return false;
    ic_ctx *c = g->c;
    bool na;
    if (ix_coeff(c, a, g->vv, &na) != 1 || na) return false;
    const ix_sum s = c->sums[a];
    if (s.off % g->V) return false;
    for (int i = 0; i < s.n; i++) {
        ix_term tm = c->terms[s.first + i];
        const ix_atom *at = &c->atoms[tm.atom];
        if (at->kind == IX_VAR && at->var == g->vv) continue;
        if (tm.coeff % g->V) return false;
    }
    return true;
}

/* vector access to buffer b: its base must be aligned in every row copy */
static bool buf_vec_ok(gg *g, int b, ic_dtype t) {
    const ic_buffer *Bf = &g->c->bufs[b];
    if (Bf->kind != 3) return true;
    int64_t al = g->V * (int64_t)ic_dtype_size(t);
    if (al > 16) al = 16;
    return (Bf->span * (int64_t)ic_dtype_size(t)) % al == 0;
}

static bool lane_dep(gg *g, ic_ix a) { return g->V > 1 && g->vv >= 0 && ix_uses_var(g->c, a, g->vv); }

/* offset clamped into [0, span) for loads that may leave their buffer (untaken cat sides) */
LLVMValueRef gg_clamp_off(gg *g, ic_ix a, LLVMValueRef off, int b) {
    int64_t lo, hi, span = g->c->bufs[b].span;
    ix_range(g->c, a, &lo, &hi);
    if (lo >= 0 && hi < span) return off;
    LLVMValueRef z = kix(g, 0), m = kix(g, span > 0 ? span - 1 : 0);
    off = sel(g, LLVMBuildICmp(B, LLVMIntSLT, off, z, ""), z, off);
    return sel(g, LLVMBuildICmp(B, LLVMIntSGT, off, m, ""), m, off);
}

static bool safe_ix(gg *g, ic_ix a, int b) {
    int64_t lo, hi;
    ix_range(g->c, a, &lo, &hi);
    return lo >= 0 && hi < g->c->bufs[b].span;
}

/* A vector access (vec_access) whose offsets may leave the buffer (a cat's untaken side, the
 * shifted windows of a pooling's backward): its lane 0 sits at a multiple of V, so when the
 * span is a multiple of V too the V lanes are inside the buffer or outside it together, and
 * the vector's offset clamped into [0, span - V] (vec_off) reads every lane that is inside
 * where the per-lane clamp (gg_clamp_off) reads it; lanes outside, whose values no taken side
 * uses, read other elements of the buffer. One vector load instead of V clamped scalar ones
 * (DenseNet's backward: the gradient of a block's concatenation summed over 32 inputs). */
static bool vec_in_span(gg *g, ic_ix a, int b) {
    int64_t span = g->c->bufs[b].span;
    return safe_ix(g, a, b) || (span >= g->V && span % g->V == 0);
}

/* lane 0's offset of a vector access, clamped into [0, span - V] when it may leave the buffer */
static LLVMValueRef vec_off(gg *g, ic_ix a, int b) {
    LLVMValueRef off = gg_gix(g, a, 0);
    int64_t lo, hi, span = g->c->bufs[b].span;
    ix_range(g->c, a, &lo, &hi);
    if (lo < 0) off = sel(g, LLVMBuildICmp(B, LLVMIntSLT, off, kix(g, 0), ""), kix(g, 0), off);
    if (hi >= span) {
        LLVMValueRef m = kix(g, span - g->V);
        off = sel(g, LLVMBuildICmp(B, LLVMIntSGT, off, m, ""), m, off);
    }
    return off;
}

/* ---- memory ------------------------------------------------------------------------------ */
static unsigned vec_align(gg *g, ic_dtype t) {
    unsigned bytes = (unsigned)(g->V * (int)ic_dtype_size(t));
    return bytes > 16 ? 16 : bytes;
}

void gg_need_align(gg *g, int b, unsigned bytes) {
    if (g->align[b] < (int)bytes) g->align[b] = (int)bytes;
}

/* Vector load of V elements: 16-bit and 8-bit elements travel as i32 words. Returns a
 * vector value; vec_lane extracts lane l in memory form. */
/* the register type of a V-element access: 16-bit elements as 32-bit words */
static LLVMTypeRef vec_type(gg *g, ic_dtype t) {
    size_t esz = ic_dtype_size(t);
    LLVMTypeRef mt = mtype(g, t);
    return (esz < 4 && g->V * esz >= 4) ? LLVMVectorType(g->cg.i32, (unsigned)(g->V * esz / 4))
                                        : LLVMVectorType(mt, (unsigned)g->V);
}

static LLVMValueRef vec_load(gg *g, int b, ic_dtype t, LLVMValueRef off) {
    unsigned al = vec_align(g, t);
    LLVMTypeRef mt = mtype(g, t);
    LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
    LLVMTypeRef vt = vec_type(g, t);
    LLVMValueRef v = LLVMBuildLoad2(B, vt, p, "");
    LLVMSetAlignment(v, al);
    gg_need_align(g, b, al);
    return v;
}

static LLVMValueRef vec_lane(gg *g, LLVMValueRef v, ic_dtype t, int lane) {
    size_t esz = ic_dtype_size(t);
    LLVMTypeRef vt = LLVMTypeOf(v);
    if (LLVMGetElementType(vt) != g->cg.i32 || esz >= 4)
        return LLVMBuildExtractElement(B, v, LLVMConstInt(g->cg.i32, (unsigned)lane, 0), "");
    unsigned per = (unsigned)(4 / esz);
    LLVMValueRef w = LLVMBuildExtractElement(B, v, LLVMConstInt(g->cg.i32, (unsigned)lane / per, 0), "");
    unsigned sh = (unsigned)(lane % per) * (unsigned)esz * 8;
    if (sh) w = LLVMBuildLShr(B, w, ki(g, g->cg.i32, sh), "");
    LLVMValueRef bits = LLVMBuildTrunc(B, w, LLVMIntTypeInContext(g->cg.ctx, (unsigned)esz * 8), "");
    return t == IC_F16 ? LLVMBuildBitCast(B, bits, g->f16, "") : bits;
}

LLVMValueRef gg_scalar_load(gg *g, int b, ic_dtype t, LLVMValueRef off) {
    LLVMTypeRef mt = mtype(g, t);
    LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(B, mt, p, "");
    LLVMSetAlignment(v, (unsigned)ic_dtype_size(t));
    return v;
}


/* trap (the kernel aborts, the context reports an error) when v != 0: CUDA's device assert */
static void trap_if(gg *g, LLVMValueRef v) {
    LLVMTypeRef i32 = g->cg.i32;
    LLVMTypeRef ft = LLVMFunctionType(g->cg.vd, &i32, 1, 0);
    static const char code[] = "{\n.reg .pred %p;\nsetp.ne.s32 %p, $0, 0;\n@%p trap;\n}";
    LLVMValueRef asm_ = LLVMGetInlineAsm(ft, (char *)code, sizeof code - 1, "r", 1, 1, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef a = LLVMBuildZExt(B, v, i32, "");
    LLVMBuildCall2(B, ft, asm_, &a, 1, "");
}

/* 1: expression x reads data (a load, a row's reduction), 0: only positions and constants.
 * (*budget bounds the walk over the DAG: past it, data is assumed) */
static int reads_data(const ic_x *xs, ic_xid x, int *budget) {
    if (x < 0)
        return 0;
    if (--*budget < 0)
        return 1;
    const ic_x *e = &xs[x];
    switch (e->kind) {
    case X_CONST:
    case X_IXVAL:
        return 0;
    case X_OP:
        return reads_data(xs, e->a, budget) || reads_data(xs, e->b, budget) || reads_data(xs, e->c, budget);
    case X_CAST:
        return reads_data(xs, e->a, budget);
    default:
        return 1;
    }
}

/* index_select: ix + index * stride, a negative index wrapped once (index + size), one still
 * out of [0, size) trapping (the host does not check CUDA indices: no sync per call); the
 * offset is clamped into the buffer all the same. Only an index read from data traps: one
 * computed from positions and constants (a decomposition's: bilinear interpolation's source
 * rows) is in range wherever its value is used, but a lane a fused where masks off computes it
 * too (cat(interpolate(t), u): u's rows make row 27 of a 27-row t), and there it is only
 * clamped (eager never computes it; trapping there failed beit's first kernel) */
static LLVMValueRef gather_off(gg *g, const ic_x *e, int lane) {
    LLVMValueRef iv = gg_val(g, e->a, lane);
    ic_dtype it = g->c->xs[e->a].dtype;
    iv = LLVMBuildIntCast2(B, iv, g->ity, !is_unsigned(it), "");
    LLVMValueRef z = kix(g, 0), m = kix(g, e->aux > 0 ? e->aux - 1 : 0);
    if (!is_unsigned(it)) iv = sel(g, LLVMBuildICmp(B, LLVMIntSLT, iv, z, ""), LLVMBuildAdd(B, iv, kix(g, e->aux), ""), iv);
    /* iv > size - 1 traps (a size-0 dim: every index; m is clamped for the offset) */
    int budget = 256;
    if (reads_data(g->c->xs, e->a, &budget))
        trap_if(g, LLVMBuildOr(B, LLVMBuildICmp(B, LLVMIntSLT, iv, z, ""), LLVMBuildICmp(B, LLVMIntSGT, iv, kix(g, e->aux - 1), ""), ""));
    iv = sel(g, LLVMBuildICmp(B, LLVMIntSLT, iv, z, ""), z, iv);
    iv = sel(g, LLVMBuildICmp(B, LLVMIntSGT, iv, m, ""), m, iv);
    LLVMValueRef off = LLVMBuildAdd(B, gg_gix(g, e->ix, lane), LLVMBuildMul(B, iv, kix(g, (int64_t)e->cval), ""), "");
    int64_t span = g->c->bufs[e->buf].span;
    LLVMValueRef mx = kix(g, span > 0 ? span - 1 : 0);
    off = sel(g, LLVMBuildICmp(B, LLVMIntSGT, off, mx, ""), mx, off);
    return sel(g, LLVMBuildICmp(B, LLVMIntSLT, off, z, ""), z, off);
}

LLVMValueRef gg_tile_ptr(gg *g, int q, ic_dtype t, LLVMValueRef off) {
    LLVMValueRef idx = LLVMBuildAdd(B, off, kix(g, (int64_t)q * 1024), "");
    return LLVMBuildGEP2(B, mtype(g, t), g->smem, &idx, 1, "");
}

/* Staged rows (stage_rows): chunk g->chunk >= creg of load x lives in dynamic shared
 * memory between the passes: the first pass that reads it loads it from global memory and
 * stores it at the thread's own 16-byte slot (consecutive threads, consecutive slots: no bank
 * conflicts, no barrier: each thread reads back only what it wrote); later passes load it
 * from there. The vector of the current generation, or NULL when x cannot be staged (not a
 * vector access, or another load holds the stage). */
LLVMValueRef gg_staged_load(gg *g, ic_xid x) {
    const ic_x *e = &g->c->xs[x];
    int b = e->buf;
    if (!g->dyn || e->a >= 0 || !(vec_access(g, e->ix) && safe_ix(g, e->ix, b) && buf_vec_ok(g, b, e->dtype)))
        return NULL;
    if (g->stage_x < 0) g->stage_x = x;
    if (g->stage_x != x) return NULL;
    if (g->vld_gen[x] == g->gen) return g->vld[x];
    const plan *P = g->P;
    size_t vk = (size_t)x * SMAX + (size_t)g->chunk;
    LLVMTypeRef vt = vec_type(g, e->dtype);
    /* the thread's base (gg_emit_rows) and a constant offset: one address register for all */
    LLVMValueRef off = LLVMConstInt(g->cg.i64, (unsigned long long)(g->chunk - P->creg) * (unsigned long long)P->T * 16, 0);
    LLVMValueRef sp = LLVMBuildInBoundsGEP2(B, g->cg.i8, g->dyn_base, &off, 1, "");
    LLVMValueRef v;
    if (g->pst[vk] == g->vgen) {
        v = LLVMBuildLoad2(B, vt, sp, "");
        LLVMSetAlignment(v, (unsigned)(g->V * ic_dtype_size(e->dtype)));
    } else {
        v = vec_load(g, b, e->dtype, gg_gix(g, e->ix, 0));
        LLVMValueRef st = LLVMBuildStore(B, v, sp);
        LLVMSetAlignment(st, (unsigned)(g->V * ic_dtype_size(e->dtype)));
        g->pst[vk] = g->vgen;
    }
    g->vld[x] = v;
    g->vld_gen[x] = g->gen;
    return v;
}

static LLVMValueRef load_lane(gg *g, ic_xid x, int lane) {
    const ic_x *e = &g->c->xs[x];
    int b = e->buf;
    if (g->epi_val && b == g->epi_buf) return g->epi_val; /* fused GEMM epilogue */
    for (int q = 0; g->tile_on && q < g->P->ntx; q++) {
        if (g->P->tx[q] != x) continue;
        if (g->P->tw == 2) { /* word w(u, p): lane 0 the low half, lane 1 the high one */
            LLVMValueRef idx = LLVMBuildAdd(B, g->tile_off, kix(g, (int64_t)q * 2048), "");
            LLVMValueRef w = LLVMBuildLoad2(B, g->cg.i32, LLVMBuildGEP2(B, g->cg.i32, g->smem, &idx, 1, ""), "");
            if (lane) w = LLVMBuildLShr(B, w, ki(g, g->cg.i32, 16), "");
            LLVMValueRef h = LLVMBuildTrunc(B, w, g->cg.i16, "");
            return to_reg(g, e->dtype == IC_F16 ? LLVMBuildBitCast(B, h, g->f16, "") : h, e->dtype);
        }
        return to_reg(g, LLVMBuildLoad2(B, mtype(g, e->dtype), gg_tile_ptr(g, q, e->dtype, g->tile_off), ""), e->dtype);
    }
    bool pers = g->chunk >= 0 && !g->written[b];
    if (pers && g->P->creg > 0 && g->chunk >= g->P->creg) { /* staged rows: not kept in registers */
        LLVMValueRef v = gg_staged_load(g, x);
        if (v) return to_reg(g, vec_lane(g, v, e->dtype, lane), e->dtype);
        pers = false; /* another load: read again from global memory (L2) in every pass */
    }
    size_t vk = (size_t)x * SMAX + (size_t)(pers ? g->chunk : 0);
    size_t pk = vk * VMAX + (size_t)lane;
    if (pers && g->pgen[vk] != g->vgen) {
        g->pgen[vk] = g->vgen;
        g->pvld[vk] = NULL;
        memset(&g->pmemo[vk * VMAX], 0, VMAX * sizeof(LLVMValueRef));
    }
    if (pers && g->pmemo[pk]) return g->pmemo[pk];
    LLVMValueRef r;
    if (e->a >= 0) {
        r = gg_scalar_load(g, b, e->dtype, gather_off(g, e, lane));
    } else if (vec_access(g, e->ix) && vec_in_span(g, e->ix, b) && buf_vec_ok(g, b, e->dtype)) {
        LLVMValueRef v;
        if (pers && g->pvld[vk]) {
            v = g->pvld[vk];
        } else if (!pers && g->vld_gen[x] == g->gen) {
            v = g->vld[x];
        } else {
            v = vec_load(g, b, e->dtype, vec_off(g, e->ix, b));
            if (pers) g->pvld[vk] = v;
            g->vld[x] = v;
            g->vld_gen[x] = g->gen;
        }
        r = vec_lane(g, v, e->dtype, lane);
    } else {
        int l = lane_dep(g, e->ix) ? lane : 0;
        r = gg_scalar_load(g, b, e->dtype, gg_clamp_off(g, e->ix, gg_gix(g, e->ix, l), b));
    }
    r = to_reg(g, r, e->dtype);
    if (pers) g->pmemo[pk] = r;
    return r;
}

static LLVMValueRef const_val(gg *g, const ic_x *e) {
    LLVMTypeRef t = rtype(g, e->dtype);
    if (is_half(e->dtype)) { /* rounded by LLVM's constant folding (APFloat, nearest even) */
        LLVMTypeRef ht = e->dtype == IC_F16 ? g->f16 : LLVMBFloatTypeInContext(g->cg.ctx);
        return LLVMBuildFPExt(B, LLVMConstReal(ht, e->cval), t, "");
    }
    if (ic_is_float(e->dtype)) return LLVMConstReal(t, e->cval);
    if (e->dtype == IC_BOOL) return LLVMConstInt(t, e->cval != 0, 0);
    return LLVMConstInt(t, (unsigned long long)(long long)e->cval, 1);
}

/* Does x differ between the V lanes (reads along the vectorized var)? Memoized per
 * generation; lanes of a lane-invariant x share lane 0's value (row math such as
 * rsqrt(mean + eps) is computed once, not V times). */
bool gg_x_lane_dep(gg *g, ic_xid x) {
    if (g->V <= 1 || g->vv < 0) return false;
    if (g->dep_gen[x] == g->gen) return g->dep[x];
    const ic_x *e = &g->c->xs[x];
    bool d = false;
    switch (e->kind) {
    case X_LOADF: d = lane_dep(g, e->ix) || (e->a >= 0 && gg_x_lane_dep(g, e->a)); break;
    case X_IXVAL: d = lane_dep(g, e->ix); break;
    case X_CONST: case X_ROWVAL: break;
    default:
        d = (e->a >= 0 && gg_x_lane_dep(g, e->a)) || (e->b >= 0 && gg_x_lane_dep(g, e->b)) ||
            (e->c >= 0 && gg_x_lane_dep(g, e->c));
    }
    g->dep[x] = d;
    g->dep_gen[x] = g->gen;
    return d;
}

LLVMValueRef gg_val(gg *g, ic_xid x, int lane) {
    size_t mi = (size_t)x * VMAX + (size_t)lane;
    if (g->memo_gen[mi] == g->gen) return g->memo[mi];
    if (lane > 0 && !gg_x_lane_dep(g, x)) {
        LLVMValueRef r0 = gg_val(g, x, 0);
        g->memo[mi] = r0;
        g->memo_gen[mi] = g->gen;
        return r0;
    }
    const ic_x e = g->c->xs[x];
    LLVMValueRef r = NULL;
    switch (e.kind) {
    case X_CONST: r = const_val(g, &e); break;
    case X_LOADF: r = load_lane(g, x, lane); break;
    case X_IXVAL: r = LLVMBuildIntCast2(B, gg_gix(g, e.ix, lane_dep(g, e.ix) ? lane : 0), g->cg.i64, 1, ""); break;
    case X_ROWVAL:
        if (!g->rowval[e.a]) ic_fail(g->c, IC_EINTERNAL, "GPU codegen: row value %d not ready", e.a);
        r = g->rowval[e.a];
        break;
    case X_CAST: {
        /* f32 exp / division rounded to half right away: the fast forms (vm_exp_approx) */
        const ic_x s = g->c->xs[e.a];
        bool h = is_half(e.dtype) && s.kind == X_OP && s.dtype == IC_F32;
        if (h && s.op == IC_OP_EXP && g->c->xs[s.a].dtype == IC_F32)
            r = vm_exp_approx(&g->cg, gg_val(g, s.a, lane));
        else if (h && s.op == IC_OP_GELU && g->c->xs[s.a].dtype == IC_F32)
            r = ol_unary(&g->cg, IC_OP_GELU, IC_F32, gg_val(g, s.a, lane)); /* f32 gelu: its outer exp is one ex2.approx */
        else if (h && s.op == IC_OP_DIV && g->c->xs[s.a].dtype == IC_F32 && g->c->xs[s.b].dtype == IC_F32)
            r = (g->v2 & V2_ROWS) && !gg_x_lane_dep(g, s.b) ? gg_div_half_rcp(g, gg_val(g, s.a, lane), s.b)
                                                         : gg_div_half(g, gg_val(g, s.a, lane), gg_val(g, s.b, lane));
        else
            r = gg_val(g, e.a, lane);
        r = convert(g, r, s.dtype, e.dtype);
        break;
    }
    case X_OP: {
        ic_kind k = ic_op_kind(e.op);
        if (e.dtype == IC_F32 && is_lowp(g, x) && e.op == IC_OP_EXP) {
            r = vm_exp_approx(&g->cg, gg_val(g, e.a, lane));
            break;
        }
        if (e.dtype == IC_F32 && is_lowp(g, x) && e.op == IC_OP_DIV && g->c->xs[e.a].dtype == IC_F32) {
            r = (g->v2 & V2_ROWS) && !gg_x_lane_dep(g, e.b) ? gg_div_half_rcp(g, gg_val(g, e.a, lane), e.b)
                                                         : gg_div_half(g, gg_val(g, e.a, lane), gg_val(g, e.b, lane));
            break;
        }
        if (e.dtype == IC_F32 && e.op == IC_OP_DIV && (g->v2 & V2_ROWS) && g->c->xs[e.a].dtype == IC_F32 &&
            gg_softmax_sum(g, e.b)) {
            r = gg_div_rowsum(g, gg_val(g, e.a, lane), e.b);
            break;
        }
        LLVMValueRef a = gg_val(g, e.a, lane);
        if (k == IC_K_UNARY) r = ol_unary(&g->cg, e.op, g->c->xs[e.a].dtype, a);
        else if (k == IC_K_BINARY) r = ol_binary(&g->cg, e.op, g->c->xs[e.a].dtype, a, gg_val(g, e.b, lane), e.b);
        else if (e.op == IC_OP_WHERE) r = sel(g, a, gg_val(g, e.b, lane), gg_val(g, e.c, lane));
        else ic_fail(g->c, IC_EINTERNAL, "GPU codegen: op %s", ic_op_name(e.op));
        break;
    }
    default: ic_fail(g->c, IC_EINTERNAL, "GPU codegen: expression kind %d", e.kind);
    }
    g->memo[mi] = r;
    g->memo_gen[mi] = g->gen;
    return r;
}

/* Stores the lanes' values of item it (register form, item dtype) under cond (NULL: always). */
void gg_store_item(gg *g, const ic_item *it, LLVMValueRef *v, int nl, LLVMValueRef cond) {
    LLVMBasicBlockRef st = NULL, end = NULL;
    if (cond) {
        st = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "st");
        end = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "st.end");
        LLVMBuildCondBr(B, cond, st, end);
        LLVMPositionBuilderAtEnd(B, st);
    }
    int b = it->buf;
    ic_dtype t = it->dtype;
    LLVMTypeRef mt = mtype(g, t);
    size_t esz = ic_dtype_size(t);
    if (nl > 1 && vec_access(g, it->out_ix) && buf_vec_ok(g, b, t)) {
        LLVMValueRef off = gg_gix(g, it->out_ix, 0);
        LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
        LLVMValueRef vec;
        if (esz < 4 && nl * esz >= 4) {
            unsigned per = (unsigned)(4 / esz), nw = (unsigned)(nl * esz / 4);
            vec = LLVMGetUndef(LLVMVectorType(g->cg.i32, nw));
            for (unsigned w = 0; w < nw; w++) {
                LLVMValueRef word = LLVMConstInt(g->cg.i32, 0, 0);
                for (unsigned q = 0; q < per; q++) {
                    LLVMValueRef m = to_mem(g, v[w * per + q], t);
                    if (t == IC_F16) m = LLVMBuildBitCast(B, m, g->cg.i16, "");
                    m = LLVMBuildZExt(B, m, g->cg.i32, "");
                    if (q) m = LLVMBuildShl(B, m, ki(g, g->cg.i32, q * esz * 8), "");
                    word = LLVMBuildOr(B, word, m, "");
                }
                vec = LLVMBuildInsertElement(B, vec, word, LLVMConstInt(g->cg.i32, w, 0), "");
            }
        } else {
            vec = LLVMGetUndef(LLVMVectorType(mt, (unsigned)nl));
            for (int l = 0; l < nl; l++)
                vec = LLVMBuildInsertElement(B, vec, to_mem(g, v[l], t), LLVMConstInt(g->cg.i32, (unsigned)l, 0), "");
        }
        LLVMValueRef s = LLVMBuildStore(B, vec, p);
        unsigned al = vec_align(g, t);
        LLVMSetAlignment(s, al);
        gg_need_align(g, b, al);
    } else {
        bool dep = lane_dep(g, it->out_ix);
        for (int l = dep ? 0 : nl - 1; l < nl; l++) { /* lane order: the last writer wins */
            LLVMValueRef off = gg_gix(g, it->out_ix, dep ? l : 0);
            LLVMValueRef p = LLVMBuildGEP2(B, mt, g->buf_ptr[b], &off, 1, "");
            LLVMValueRef s = LLVMBuildStore(B, to_mem(g, v[l], t), p);
            LLVMSetAlignment(s, (unsigned)esz);
        }
    }
    if (cond) {
        LLVMBuildBr(B, end);
        LLVMPositionBuilderAtEnd(B, end);
    }
}
