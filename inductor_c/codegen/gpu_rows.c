/* gpu_rows.c — the GPU code generator's reductions (warp and block) and kernel bodies (pointwise, rows, split and online rows, tiles).
 * Split out of gpu_nvptx.c (the driver): see its comment. */
#include "gpu_internal.h"

/* ---- reductions ---------------------------------------------------------------------------- */
/* a value as i32 words for shuffles / back */
static LLVMValueRef shfl1(gg *g, LLVMValueRef w, int mask) {
    LLVMValueRef args[4] = {LLVMConstInt(g->cg.i32, 0xFFFFFFFFu, 0), w, LLVMConstInt(g->cg.i32, (unsigned)mask, 0),
                            LLVMConstInt(g->cg.i32, 0x1F, 0)};
    return intrin(g, "llvm.nvvm.shfl.sync.bfly.i32", NULL, 0, args, 4);
}

static LLVMValueRef shfl_bfly(gg *g, LLVMValueRef v, int mask) {
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind tk = LLVMGetTypeKind(t);
    unsigned bits = tk == LLVMFloatTypeKind ? 32 : tk == LLVMDoubleTypeKind ? 64 : LLVMGetIntTypeWidth(t);
    LLVMTypeRef it = LLVMIntTypeInContext(g->cg.ctx, bits);
    LLVMValueRef x = tk == LLVMIntegerTypeKind ? v : LLVMBuildBitCast(B, v, it, "");
    LLVMValueRef r;
    if (bits <= 32) {
        LLVMValueRef w = bits < 32 ? LLVMBuildZExt(B, x, g->cg.i32, "") : x;
        w = shfl1(g, w, mask);
        r = bits < 32 ? LLVMBuildTrunc(B, w, it, "") : w;
    } else {
        LLVMValueRef lo = LLVMBuildTrunc(B, x, g->cg.i32, "");
        LLVMValueRef hi = LLVMBuildTrunc(B, LLVMBuildLShr(B, x, ki(g, it, 32), ""), g->cg.i32, "");
        lo = LLVMBuildZExt(B, shfl1(g, lo, mask), it, "");
        hi = LLVMBuildShl(B, LLVMBuildZExt(B, shfl1(g, hi, mask), it, ""), ki(g, it, 32), "");
        r = LLVMBuildOr(B, lo, hi, "");
    }
    return tk == LLVMIntegerTypeKind ? r : LLVMBuildBitCast(B, r, t, "");
}

void gg_barrier(gg *g) { intrin(g, "llvm.nvvm.barrier0", NULL, 0, NULL, 0); }

/* Combines a (with its index *ai for argmax/argmin) over the threads of one row, the j-bits
 * of tid; every thread gets the result. Lane bits: shfl.sync butterflies; warp bits: shared
 * memory, read by every thread in the same order. */
static LLVMValueRef block_reduce(gg *g, const ic_item *it, LLVMValueRef a, LLVMValueRef *ai) {
    const plan *P = g->P;
    const ic_gmap *M = &P->map;
    for (int s = 0; s < M->nshfl; s++) { /* lane bits of the row: butterflies */
        LLVMValueRef x = shfl_bfly(g, a, M->shfl[s]);
        if (ai) {
            LLVMValueRef xi = shfl_bfly(g, *ai, M->shfl[s]);
            ol_arg_combine(&g->cg, it, a, *ai, x, xi, &a, ai);
        } else {
            a = ol_red_combine(&g->cg, it, a, x);
        }
    }
    if (!M->smem_mask) return a; /* warp bits of the row: shared memory */
    LLVMTypeRef t = LLVMTypeOf(a);
    bool i1 = t == g->cg.i1;
    LLVMTypeRef st = i1 ? g->cg.i8 : t;
    gg_barrier(g);
    LLVMValueRef p = LLVMBuildGEP2(B, st, g->smem, &g->tid, 1, "");
    LLVMBuildStore(B, i1 ? LLVMBuildZExt(B, a, st, "") : a, p);
    LLVMValueRef ibase = NULL;
    if (ai) { /* indices in the second half */
        LLVMValueRef off = LLVMConstInt(g->cg.i32, (unsigned)P->Bk, 0);
        ibase = LLVMBuildGEP2(B, g->cg.i64, g->smem, &off, 1, "");
        LLVMBuildStore(B, *ai, LLVMBuildGEP2(B, g->cg.i64, ibase, &g->tid, 1, ""));
    }
    gg_barrier(g);
    int nw = 1 << __builtin_popcount(M->smem_mask);
    LLVMValueRef base = LLVMBuildAnd(B, g->tid, LLVMConstInt(g->cg.i32, ~M->smem_mask, 0), "");
    LLVMValueRef r = NULL, ri = NULL;
    for (int w = 0; w < nw; w++) {
        unsigned dep = 0; /* w's bits deposited into the smem bits of tid */
        for (unsigned m = M->smem_mask, i = 0; m; m &= m - 1, i++)
            if (w >> i & 1) dep |= m & -m;
        LLVMValueRef idx = LLVMBuildOr(B, base, LLVMConstInt(g->cg.i32, dep, 0), "");
        LLVMValueRef v = LLVMBuildLoad2(B, st, LLVMBuildGEP2(B, st, g->smem, &idx, 1, ""), "");
        if (i1) v = LLVMBuildTrunc(B, v, g->cg.i1, "");
        if (ai) {
            LLVMValueRef vi = LLVMBuildLoad2(B, g->cg.i64, LLVMBuildGEP2(B, g->cg.i64, ibase, &idx, 1, ""), "");
            if (r) ol_arg_combine(&g->cg, it, r, ri, v, vi, &r, &ri);
            else r = v, ri = vi;
        } else {
            r = r ? ol_red_combine(&g->cg, it, r, v) : v;
        }
    }
    if (ai) *ai = ri;
    return r;
}

/* ---- kernel bodies --------------------------------------------------------------------------- */
/* vars[0..n) (slowest first) = digits of e */
void gg_decompose(gg *g, LLVMValueRef e, const int32_t *vars, const int64_t *sizes, int n) {
    for (int d = n - 1; d >= 0; d--) {
        if (d == 0) {
            g->var_val[vars[d]] = e;
            break;
        }
        g->var_val[vars[d]] = LLVMBuildURem(B, e, kix(g, sizes[d]), "");
        e = LLVMBuildUDiv(B, e, kix(g, sizes[d]), "");
    }
}

static LLVMValueRef alloca_(gg *g, LLVMTypeRef t, LLVMBasicBlockRef entry) {
    LLVMBuilderRef ab = LLVMCreateBuilderInContext(g->cg.ctx);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first) LLVMPositionBuilderBefore(ab, first);
    else LLVMPositionBuilderAtEnd(ab, entry);
    LLVMValueRef a = LLVMBuildAlloca(ab, t, "");
    LLVMDisposeBuilder(ab);
    return a;
}

typedef struct loop {
    LLVMValueRef iv, i;
    LLVMBasicBlockRef cond, body, exit;
} loop;

/* for (i = lo; i < hi; i += step) */
static void loop_begin(gg *g, loop *L, LLVMValueRef lo, LLVMValueRef hi) {
    L->iv = alloca_(g, g->ity, LLVMGetEntryBasicBlock(g->fn));
    LLVMBuildStore(B, lo, L->iv);
    L->cond = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "cond");
    L->body = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "body");
    L->exit = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "exit");
    LLVMBuildBr(B, L->cond);
    LLVMPositionBuilderAtEnd(B, L->cond);
    L->i = LLVMBuildLoad2(B, g->ity, L->iv, "i");
    LLVMBuildCondBr(B, LLVMBuildICmp(B, LLVMIntSLT, L->i, hi, ""), L->body, L->exit);
    LLVMPositionBuilderAtEnd(B, L->body);
}

static void loop_end(gg *g, loop *L, LLVMValueRef step) {
    LLVMBuildStore(B, LLVMBuildAdd(B, L->i, step, ""), L->iv);
    LLVMBuildBr(B, L->cond);
    LLVMPositionBuilderAtEnd(B, L->exit);
}

void gg_emit_pointwise(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    int32_t vars[2 * IC_MAX_DIMS];
    int64_t sizes[2 * IC_MAX_DIMS];
    int nv = ic_kernel_loop_vars(k, vars, sizes);
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef i0 = LLVMBuildAdd(B, LLVMBuildMul(B, bid, kix(g, P->Bk), ""), tid, "");
    loop L;
    loop_begin(g, &L, i0, kix(g, P->G));
    LLVMValueRef e0 = P->V > 1 ? LLVMBuildMul(B, L.i, kix(g, P->V), "") : L.i;
    gg_decompose(g, e0, vars, sizes, nv);
    g->V = P->V;
    g->vv = P->vv;
    g->chunk = -1;
    g->gen++;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (!it->store) continue;
        LLVMValueRef v[VMAX];
        for (int l = 0; l < g->V; l++) v[l] = gg_val(g, it->expr, l);
        gg_store_item(g, it, v, g->V, NULL);
    }
    loop_end(g, &L, kix(g, (int64_t)P->grid * P->Bk));
}

/* XOR of basis[b] over the set bits b of tid: a linear layout applied to the thread index */
static LLVMValueRef xor_bits(gg *g, LLVMValueRef tid, const int64_t *basis, int nbits) {
    LLVMValueRef r = kix(g, 0);
    for (int b = 0; b < nbits; b++) {
        if (!basis[b]) continue;
        LLVMValueRef on = LLVMBuildICmp(B, LLVMIntNE, LLVMBuildAnd(B, tid, kix(g, (int64_t)1 << b), ""), kix(g, 0), "");
        r = LLVMBuildXor(B, r, sel(g, on, kix(g, basis[b]), kix(g, 0)), "");
    }
    return r;
}

/* tile coordinates -> the u / vv vars, clamped to umax / vmax; `ok` when both are in range */
static LLVMValueRef set_uv(gg *g, LLVMValueRef uu, LLVMValueRef vx, int64_t umax, int64_t vmax) {
    const plan *P = g->P;
    LLVMValueRef ou = LLVMBuildICmp(B, LLVMIntSLT, uu, kix(g, P->su), "");
    LLVMValueRef ov = LLVMBuildICmp(B, LLVMIntSLT, vx, kix(g, P->sv), "");
    g->var_val[P->tu] = sel(g, ou, uu, kix(g, umax));
    g->var_val[P->vv] = sel(g, ov, vx, kix(g, vmax));
    return LLVMBuildAnd(B, ou, ov, "");
}

/* What both tile kernels start from: the thread's lane (tx) and warp (ty), the corner (u0, v0)
 * of its block's tile of side x side elements (the outer vars decomposed from the block
 * index), and the XOR parts of its shared-memory offsets (st: phase 1, ld: phase 2). */
typedef struct tile_start {
    LLVMValueRef tx, ty, u0, v0, st, ld;
} tile_start;

static tile_start start_tile(gg *g, int64_t side) {
    const plan *P = g->P;
    tile_start T;
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    T.tx = LLVMBuildAnd(B, tid, kix(g, 31), "");
    T.ty = LLVMBuildLShr(B, tid, kix(g, 5), "");
    LLVMValueRef tv = LLVMBuildURem(B, bid, kix(g, P->ntv), ""), t = LLVMBuildUDiv(B, bid, kix(g, P->ntv), "");
    LLVMValueRef tu = LLVMBuildURem(B, t, kix(g, P->ntu), ""), o = LLVMBuildUDiv(B, t, kix(g, P->ntu), "");
    if (P->nob) gg_decompose(g, o, P->obv, P->obs, P->nob);
    T.u0 = LLVMBuildMul(B, tu, kix(g, side), "");
    T.v0 = LLVMBuildMul(B, tv, kix(g, side), "");
    T.st = xor_bits(g, tid, P->tile.st, 8);
    T.ld = xor_bits(g, tid, P->tile.ld, 8);
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    return T;
}

/* A transpose through shared memory: phase 1 loads the transposed inputs coalesced along
 * u into the swizzled tile, phase 2 evaluates and stores coalesced along vv, reading them
 * back from the tile. Offsets from gpu_layout.c (ic_gpu_tile_map). */
void gg_emit_tile(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    tile_start T = start_tile(g, 32);
    LLVMValueRef tx = T.tx, ty = T.ty, u0 = T.u0, v0 = T.v0, st = T.st, ld = T.ld;
    for (int i = 0; i < 4; i++) { /* phase 1: tile[c = tx, r = ty + 8i] */
        set_uv(g, LLVMBuildAdd(B, u0, tx, ""), LLVMBuildAdd(B, v0, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), ""),
               P->su - 1, P->sv - 1);
        g->gen++;
        LLVMValueRef off = LLVMBuildXor(B, st, kix(g, P->tile.st_reg[i]), "");
        for (int q = 0; q < P->ntx; q++) {
            const ic_x *e = &g->c->xs[P->tx[q]];
            LLVMValueRef v = gg_scalar_load(g, e->buf, e->dtype, gg_clamp_off(g, e->ix, gg_gix(g, e->ix, 0), e->buf));
            LLVMBuildStore(B, v, gg_tile_ptr(g, q, e->dtype, off));
        }
    }
    gg_barrier(g);
    g->tile_on = true;
    for (int i = 0; i < 4; i++) { /* phase 2: element (c = ty + 8i, r = tx) */
        LLVMValueRef ok = set_uv(g, LLVMBuildAdd(B, u0, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), ""),
                                 LLVMBuildAdd(B, v0, tx, ""), P->su - 1, P->sv - 1);
        g->gen++;
        g->tile_off = LLVMBuildXor(B, ld, kix(g, P->tile.ld_reg[i]), "");
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (!it->store) continue;
            LLVMValueRef v = gg_val(g, it->expr, 0);
            gg_store_item(g, it, &v, 1, ok);
        }
    }
    g->tile_on = false;
}

/* V2 16-bit transpose (gg_choose_tile2): 64 x 64 tiles of words w(u, p) (gpu_layout.c,
 * ic_gpu_tile2_map). su and sv are even and every transposed load is a 4-byte aligned pair
 * along u, so a pair never straddles the edge: out-of-range coordinates are clamped to the
 * last pair (phase 1 u, phase 2 v) and only in-range pairs are stored. Phase 1: lane l loads
 * the words (2l, 2l+1) of rows v = 2p, 2p+1 and swaps halves into w(2l, p), w(2l+1, p);
 * phase 2: V = 2 along vv, lane -> p, warp and register -> u. */
void gg_emit_tile2(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    tile_start T = start_tile(g, 64);
    LLVMValueRef tx = T.tx, ty = T.ty, u0 = T.u0, v0 = T.v0, st = T.st, ld = T.ld;
    LLVMTypeRef i32 = g->cg.i32;
    LLVMValueRef ue = LLVMBuildAdd(B, u0, LLVMBuildShl(B, tx, kix(g, 1), ""), ""); /* even u of lane */
    LLVMValueRef a[4][4][2]; /* phase 1: pair p = ty + 8i, rows v = 2p + r; all loads first */
    for (int i = 0; i < 4; i++) {
        LLVMValueRef vp = LLVMBuildShl(B, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), kix(g, 1), "");
        for (int r = 0; r < 2; r++) {
            set_uv(g, ue, LLVMBuildAdd(B, v0, LLVMBuildAdd(B, vp, kix(g, r), ""), ""), P->su - 2, P->sv - 1);
            g->gen++;
            for (int q = 0; q < P->ntx; q++) {
                const ic_x *e = &g->c->xs[P->tx[q]];
                LLVMValueRef off = gg_gix(g, e->ix, 0);
                LLVMValueRef p = LLVMBuildGEP2(B, mtype(g, e->dtype), g->buf_ptr[e->buf], &off, 1, "");
                a[i][q][r] = LLVMBuildLoad2(B, i32, p, "");
                LLVMSetAlignment(a[i][q][r], 4);
                gg_need_align(g, e->buf, 4);
            }
        }
    }
    for (int i = 0; i < 4; i++) /* 2 x 2 transposes: w(2l, p) = low halves, w(2l+1, p) = high */
        for (int q = 0; q < P->ntx; q++) {
            LLVMValueRef a0 = a[i][q][0], a1 = a[i][q][1];
            LLVMValueRef lo = LLVMBuildAnd(B, a0, ki(g, i32, 0xFFFF), "");
            LLVMValueRef w0 = LLVMBuildOr(B, lo, LLVMBuildShl(B, a1, ki(g, i32, 16), ""), "");
            LLVMValueRef hi = LLVMBuildAnd(B, a1, ki(g, i32, (long long)0xFFFF0000u), "");
            LLVMValueRef w1 = LLVMBuildOr(B, LLVMBuildLShr(B, a0, ki(g, i32, 16), ""), hi, "");
            for (int h = 0; h < 2; h++) {
                LLVMValueRef idx = LLVMBuildXor(B, st, kix(g, P->tile.st_reg[h + 2 * i]), "");
                idx = LLVMBuildAdd(B, idx, kix(g, (int64_t)q * 2048), "");
                LLVMBuildStore(B, h ? w1 : w0, LLVMBuildGEP2(B, i32, g->smem, &idx, 1, ""));
            }
        }
    gg_barrier(g);
    g->tile_on = true;
    LLVMValueRef ve = LLVMBuildAdd(B, v0, LLVMBuildShl(B, tx, kix(g, 1), ""), ""); /* even v of lane */
    /* phase 2: u = ty + 8i, pair p = tx; every value first (the loads go out together),
     * then the stores (unconditional when the tiles cover su x sv exactly) */
    LLVMValueRef *vals = ic_alloc(g->c, (size_t)(8 * k->nitems + 1) * 2 * sizeof(LLVMValueRef)), ok[8];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < 8; i++) {
            ok[i] = set_uv(g, LLVMBuildAdd(B, u0, LLVMBuildAdd(B, ty, kix(g, 8 * i), ""), ""), ve, P->su - 1,
                            P->sv - 2);
            g->V = 2;
            g->vv = P->vv;
            g->gen++;
            g->tile_off = LLVMBuildXor(B, ld, kix(g, P->tile.ld_reg[i]), "");
            for (int j = 0; j < k->nitems; j++) {
                ic_item *it = &k->items[j];
                if (!it->store) continue;
                LLVMValueRef *v = &vals[(i * k->nitems + j) * 2];
                if (pass == 0) v[0] = gg_val(g, it->expr, 0), v[1] = gg_val(g, it->expr, 1);
                else gg_store_item(g, it, v, 2, P->tfull ? NULL : ok[i]);
            }
        }
    g->tile_on = false;
    g->V = 1;
    g->vv = -1;
}

/* max(dim) / min(dim) give the value of the element whose index they give (eager's CUDA
 * reduction carries the pair): -0.0 beside 0.0 is a tie the index breaks (first wins), which a
 * max / min of the values alone decides otherwise (max.NaN(-0, 0) is 0). A float AMAX (AMIN)
 * beside an ARGMAX (ARGMIN) of the same element in the same pass is run as that arg reduction,
 * its result the carried value. Before planning: the item then takes two partial slots. */
void gg_arg_values(ic_kernel *k) {
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->kind != IT_REDUCE || !ic_is_float(it->acc) || (it->red_op != IC_OP_AMAX && it->red_op != IC_OP_AMIN))
            continue;
        ic_op want = it->red_op == IC_OP_AMAX ? IC_OP_ARGMAX : IC_OP_ARGMIN;
        for (int i = 0; i < k->nitems; i++) {
            const ic_item *a = &k->items[i];
            if (a->kind != IT_REDUCE || a->red_op != want || a->expr != it->expr || a->pos != it->pos ||
                a->acc != it->acc || a->expr2 < 0)
                continue;
            it->red_op = want;
            it->expr2 = a->expr2;
            it->arg_value = true;
            break;
        }
    }
}

/* One chunk of a pass: V consecutive elements of the row per thread. */
static void emit_chunk(gg *g, ic_kernel *k, int pos, LLVMValueRef ci, int cidx, LLVMValueRef *acc) {
    const plan *P = g->P;
    LLVMValueRef gi = LLVMBuildAdd(B, LLVMBuildMul(B, ci, kix(g, P->T), ""), g->j, "");
    LLVMValueRef valid = P->all_cols ? g->active : and_(g, g->active, LLVMBuildICmp(B, LLVMIntSLT, gi, kix(g, P->nv), ""));
    LLVMValueRef gc = sel(g, valid, gi, kix(g, 0));
    LLVMValueRef e0 = P->V > 1 ? LLVMBuildMul(B, gc, kix(g, P->V), "") : gc;
    gg_decompose(g, e0, k->ivar, k->isize, k->ninner);
    g->V = P->V;
    g->vv = P->vv;
    g->chunk = cidx;
    g->gen++;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos) continue;
        if (it->kind == IT_REDUCE && ic_is_arg(it->red_op)) {
            LLVMValueRef a = LLVMBuildLoad2(B, rtype(g, it->acc), acc[j], "");
            LLVMValueRef ai = LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "");
            LLVMValueRef id = ol_red_identity(&g->cg, it, 1), none = ki(g, g->cg.i64, INT64_MAX);
            ic_dtype xt = g->c->xs[it->expr2].dtype;
            for (int l = 0; l < g->V; l++) {
                LLVMValueRef x = sel(g, valid, gg_val(g, it->expr, l), id);
                LLVMValueRef xi = sel(g, valid, convert(g, gg_val(g, it->expr2, l), xt, IC_I64), none);
                ol_arg_combine(&g->cg, it, a, ai, x, xi, &a, &ai);
            }
            LLVMBuildStore(B, a, acc[j]);
            LLVMBuildStore(B, ai, acc[k->nitems + j]);
        } else if (it->kind == IT_REDUCE) {
            LLVMTypeRef at = rtype(g, it->acc);
            LLVMValueRef a = LLVMBuildLoad2(B, at, acc[j], "");
            LLVMValueRef id = ol_red_identity(&g->cg, it, 1);
            for (int l = 0; l < g->V; l++) a = ol_red_combine(&g->cg, it, a, sel(g, valid, gg_val(g, it->expr, l), id));
            LLVMBuildStore(B, a, acc[j]);
        } else if (it->store) {
            LLVMValueRef v[VMAX];
            for (int l = 0; l < g->V; l++) v[l] = gg_val(g, it->expr, l);
            gg_store_item(g, it, v, g->V, valid);
        }
    }
    g->chunk = -1;
}

/* address of partial (slot, current row, part) */
static LLVMValueRef part_ptr(gg *g, int slot, LLVMValueRef part) {
    const plan *P = g->P;
    LLVMValueRef i = LLVMBuildAdd(B, LLVMBuildMul(B, kix(g, slot), kix(g, P->rows), ""), g->row, "");
    i = LLVMBuildAdd(B, LLVMBuildMul(B, i, kix(g, P->S), ""), part, "");
    i = LLVMBuildMul(B, i, kix(g, 8), "");
    return LLVMBuildGEP2(B, g->cg.i8, g->part, &i, 1, "");
}

static void part_store(gg *g, int slot, LLVMValueRef part, LLVMValueRef v) {
    if (LLVMTypeOf(v) == g->cg.i1) v = LLVMBuildZExt(B, v, g->cg.i8, "");
    LLVMBuildStore(B, v, part_ptr(g, slot, part));
}

/* The block's partials, by its thread `first`: v[i] (skipped where NULL) into slot[i] */
static void part_stores(gg *g, LLVMValueRef first, const int *slot, LLVMValueRef *v, int n) {
    LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "part");
    LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "part.end");
    LLVMBuildCondBr(B, first, st, end);
    LLVMPositionBuilderAtEnd(B, st);
    for (int i = 0; i < n; i++)
        if (v[i]) part_store(g, slot[i], g->part_s, v[i]);
    LLVMBuildBr(B, end);
    LLVMPositionBuilderAtEnd(B, end);
}

/* The row value of reduction item j from its S partials: thread t reads partials t, t + T,
 * ... in that order, then one block reduction over the row's threads (the same order in
 * every block, so every launch gets the same value). raw (with *rawi for arg reductions):
 * the combined accumulator before the mean's division and the conversion, or NULL. */
static LLVMValueRef part_finish(gg *g, const ic_item *it, LLVMValueRef v, LLVMValueRef vi) {
    return ol_red_out(&g->cg, it, ol_red_mean(&g->cg, it, v, NULL), vi);
}

static LLVMValueRef part_combine(gg *g, const ic_item *it, int slot, LLVMValueRef *raw, LLVMValueRef *rawi) {
    const plan *P = g->P;
    LLVMTypeRef at = rtype(g, it->acc);
    LLVMTypeRef lt = at == g->cg.i1 ? g->cg.i8 : at;
    bool arg = ic_is_arg(it->red_op);
    LLVMValueRef v = NULL, vi = NULL;
    for (int i = 0; i * P->T < P->S; i++) {
        LLVMValueRef t = i ? LLVMBuildAdd(B, g->j, kix(g, (int64_t)i * P->T), "") : g->j;
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLT, t, kix(g, P->S), "");
        t = sel(g, ok, t, kix(g, 0));
        LLVMValueRef x = LLVMBuildLoad2(B, lt, part_ptr(g, slot, t), "");
        if (lt != at) x = LLVMBuildTrunc(B, x, at, "");
        x = sel(g, ok, x, ol_red_identity(&g->cg, it, 1));
        if (arg) {
            LLVMValueRef xi = LLVMBuildLoad2(B, g->cg.i64, part_ptr(g, slot + 1, t), "");
            xi = sel(g, ok, xi, ki(g, g->cg.i64, INT64_MAX));
            if (v) ol_arg_combine(&g->cg, it, v, vi, x, xi, &v, &vi);
            else v = x, vi = xi;
        } else {
            v = v ? ol_red_combine(&g->cg, it, v, x) : x;
        }
    }
    v = block_reduce(g, it, v, arg ? &vi : NULL);
    if (raw) *raw = v;
    if (rawi) *rawi = vi;
    return part_finish(g, it, v, vi);
}

/* Split columns (P->area): the combined raw accumulator of (slot, this thread's row) in the
 * row value area after the partials */
static LLVMValueRef area_ptr(gg *g, int slot) {
    const plan *P = g->P;
    LLVMValueRef i = LLVMBuildAdd(B, kix(g, (int64_t)P->nslot * P->rows * P->S + (int64_t)slot * P->rows), g->row, "");
    i = LLVMBuildMul(B, i, kix(g, 8), "");
    return LLVMBuildGEP2(B, g->cg.i8, g->part, &i, 1, "");
}

static LLVMValueRef area_load(gg *g, const ic_item *it, int slot) {
    LLVMTypeRef at = rtype(g, it->acc);
    LLVMTypeRef lt = at == g->cg.i1 ? g->cg.i8 : at;
    LLVMValueRef v = LLVMBuildLoad2(B, lt, area_ptr(g, slot), ""), vi = NULL;
    if (lt != at) v = LLVMBuildTrunc(B, v, at, "");
    if (ic_is_arg(it->red_op)) vi = LLVMBuildLoad2(B, g->cg.i64, area_ptr(g, slot + 1), "");
    return part_finish(g, it, v, vi);
}

static void area_store(gg *g, int slot, LLVMValueRef v) {
    if (LLVMTypeOf(v) == g->cg.i1) v = LLVMBuildZExt(B, v, g->cg.i8, "");
    LLVMBuildStore(B, v, area_ptr(g, slot));
}

static void emit_pass(gg *g, ic_kernel *k, int pos);

/* Row scratch buffers (kind 3) are addressed row-locally; on the GPU every row has its own
 * copy (rows x span in the workspace): point them at this thread's row. */
static void rebase_scratch(gg *g, ic_kernel *k, LLVMValueRef row) {
    ic_ctx *c = g->c;
    for (int b = 0; b < c->nbufs; b++) {
        if (c->bufs[b].kind != 3 || !g->buf_param[b]) continue;
        (void)k;
        LLVMValueRef off = LLVMBuildMul(B, row, kix(g, c->bufs[b].span * (int64_t)ic_dtype_size(c->bufs[b].dtype)), "");
        g->buf_ptr[b] = LLVMBuildGEP2(B, g->cg.i8, g->buf_param[b], &off, 1, "");
    }
}

/* The final launch's stores (only at its end: gg_choose_split): the reductions that store, then
 * the row's other stored values. */
static void final_stores(gg *g, ic_kernel *k, LLVMValueRef first) {
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->kind == IT_REDUCE && it->store) gg_store_item(g, it, &g->rowval[j], 1, first);
    }
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos % 2 || !it->store || it->kind == IT_REDUCE) continue;
        LLVMValueRef v = gg_val(g, it->expr, 0);
        gg_store_item(g, it, &v, 1, first);
    }
}

/* Online split rows: B's row value from the partials (a_t, b_t) of every part t, made by
 * emit_online with its part's own value of A. ON_SOFTMAX (A = max x, B = sum exp(x - A)):
 * B = sum_t b_t exp(a_t - A), a part with a_t = -inf (no values, or only -inf) adds 0.
 * ON_VAR (A = mean x, B = sum or mean of (x - A)^2; a_t is the part's raw sum and slot B + 1
 * its count n_t): B = sum_t m2_t + n_t (a_t / n_t - A)^2 (Chan et al.), an empty part adds 0.
 * Same order in every block, as part_combine. */
LLVMValueRef gg_online_combine(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    const ic_item *ia = &k->items[P->on_a], *ib = &k->items[P->on_b];
    int sa = P->slot[P->on_a], sb = P->slot[P->on_b];
    LLVMValueRef A = g->rowval[P->on_a], v = NULL, z = kf(A, 0.0);
    LLVMTypeRef ft = g->cg.f32;
    bool plain = g->c->xs[P->on_shift].kind == X_ROWVAL;
    g->gen++;
    LLVMValueRef SA = P->on_kind == ON_SOFTMAX && !plain ? gg_val(g, P->on_shift, 0) : A;
    (void)ia;
    for (int i = 0; i * P->Bk < P->S; i++) {
        LLVMValueRef t = i ? LLVMBuildAdd(B, g->j, kix(g, (int64_t)i * P->Bk), "") : g->j;
        LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLT, t, kix(g, P->S), "");
        t = sel(g, ok, t, kix(g, 0));
        LLVMValueRef a = LLVMBuildLoad2(B, ft, part_ptr(g, sa, t), "");
        LLVMValueRef b = LLVMBuildLoad2(B, ft, part_ptr(g, sb, t), "");
        LLVMValueRef term;
        if (P->on_kind == ON_SOFTMAX) {
            LLVMValueRef st = a;
            if (!plain) { /* s(a_t): the shift over part t alone */
                g->rowval[P->on_a] = a;
                g->gen++;
                st = gg_val(g, P->on_shift, 0);
            }
            LLVMValueRef e = vm_exp(&g->cg, LLVMBuildFSub(B, st, SA, ""));
            term = sel(g, fcmp(g, LLVMRealOEQ, a, kf(a, -INFINITY)), z, LLVMBuildFMul(B, b, e, ""));
        } else {
            LLVMValueRef n = LLVMBuildLoad2(B, ft, part_ptr(g, sb + 1, t), "");
            LLVMValueRef d = LLVMBuildFSub(B, LLVMBuildFDiv(B, a, n, ""), A, "");
            term = fma3(g, LLVMBuildFMul(B, n, d, ""), d, b);
            term = sel(g, fcmp(g, LLVMRealOGT, n, z), term, z);
        }
        term = sel(g, ok, term, z);
        v = v ? LLVMBuildFAdd(B, v, term, "") : term;
    }
    g->rowval[P->on_a] = A;
    g->gen++;
    v = block_reduce(g, ib, v, NULL);
    return ol_red_mean(&g->cg, ib, v, NULL);
}

/* The row values of the reductions with pos in [lo, hi) from their partials (B of an online
 * pair after the others: it needs A's). */
static void combine_rows(gg *g, ic_kernel *k, int lo, int hi) {
    const plan *P = g->P;
    for (int late = 0; late < 2; late++)
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (it->kind != IT_REDUCE || it->pos < lo || it->pos >= hi) continue;
            bool b = P->on_kind && j == P->on_b;
            if (b != (late == 1)) continue;
            if (P->area && it->pos < P->acomb) g->rowval[j] = area_load(g, it, P->slot[j]);
            else g->rowval[j] = b ? gg_online_combine(g, k) : part_combine(g, it, P->slot[j], NULL, NULL);
        }
}

/* The accumulators of the reductions of pass pos, in entry-block allocas set to their
 * identities: [j] the value, [nitems + j] an arg reduction's index (calloc'd; free it). */
static LLVMValueRef *pass_accs(gg *g, ic_kernel *k, int pos) {
    LLVMValueRef *acc = calloc(2 * (size_t)k->nitems + 1, sizeof *acc);
    if (!acc) ic_fail(g->c, IC_ENOMEM, "out of memory");
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos || it->kind != IT_REDUCE) continue;
        acc[j] = alloca_(g, rtype(g, it->acc), entry);
        LLVMBuildStore(B, ol_red_identity(&g->cg, it, 1), acc[j]);
        if (ic_is_arg(it->red_op)) {
            acc[k->nitems + j] = alloca_(g, g->cg.i64, entry);
            LLVMBuildStore(B, ki(g, g->cg.i64, INT64_MAX), acc[k->nitems + j]);
        }
    }
    return acc;
}

/* s(v): the shift of an online softmax pair over a value v of A (A itself, or logsumexp's
 * where(isinf(A), 0, A)); rowval[A] is left at v */
static LLVMValueRef online_sh(gg *g, LLVMValueRef v) {
    const plan *P = g->P;
    if (g->c->xs[P->on_shift].kind == X_ROWVAL) return v;
    g->rowval[P->on_a] = v;
    g->gen++;
    return gg_val(g, P->on_shift, 0);
}

/* A's launch of an online pair: each thread runs over its chunks of the part (unroll chunks an
 * iteration, their loads issued together) keeping its own state, with no barrier in the loop:
 *   ON_SOFTMAX: m (A's running max) and s = sum exp(x - s(m)), rescaled by exp(s(m) - s(m'))
 *     when an iteration raises the max to m' (a thread with only -inf so far keeps s = 0);
 *   ON_VAR: the running sum (A's raw accumulator), and count, mean and M2 = sum (x - mean)^2
 *     merged per iteration (Chan et al.) from the iteration's own mean and squared deviations.
 * Then the block: M = max m, sum_t s_t exp(s(m_t) - s(M)); or SUM, n_part and
 * sum_t M2_t + n_t (mean_t - SUM / n_part)^2. The partials are those online_combine reads
 * (A's raw value, B's, and ON_VAR the part's count). Other reductions of A's pass as usual. */
void gg_emit_online(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    int pa = P->pass, pb = P->pass + 2, ja = P->on_a, jb = P->on_b;
    const ic_item *ia = &k->items[ja], *ib = &k->items[jb];
    bool smx = P->on_kind == ON_SOFTMAX;
    LLVMTypeRef ft = g->cg.f32;
    LLVMValueRef z = LLVMConstReal(ft, 0.0), one = LLVMConstReal(ft, 1.0), ninf = LLVMConstReal(ft, -INFINITY);
    LLVMValueRef *acc = pass_accs(g, k, pa);
    LLVMValueRef *acc2 = calloc(2 * (size_t)k->nitems + 1, sizeof *acc2);
    if (!acc2) ic_fail(g->c, IC_ENOMEM, "out of memory");
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(g->fn);
    LLVMValueRef ga = alloca_(g, ft, entry), gb = alloca_(g, ft, entry); /* the iteration's A and B */
    LLVMValueRef sb = alloca_(g, ft, entry), tn = alloca_(g, ft, entry), tm = alloca_(g, ft, entry);
    LLVMBuildStore(B, z, sb);
    LLVMBuildStore(B, z, tn);
    LLVMBuildStore(B, z, tm);
    memcpy(acc2, acc, (2 * (size_t)k->nitems + 1) * sizeof *acc);
    loop L;
    LLVMValueRef lo = LLVMBuildMul(B, g->part_s, kix(g, P->Cs), "");
    loop_begin(g, &L, lo, LLVMBuildAdd(B, lo, kix(g, P->Cs), ""));
    LLVMBuildStore(B, ol_red_identity(&g->cg, ia, 1), ga);
    acc2[ja] = ga;
    for (int u = 0; u < P->unroll; u++) emit_chunk(g, k, pa, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, u, acc2);
    g->V = 1;
    g->vv = -1;
    LLVMValueRef gv = LLVMBuildLoad2(B, ft, ga, "");
    LLVMValueRef m = LLVMBuildLoad2(B, ft, acc[ja], "");
    LLVMValueRef m2 = ol_red_combine(&g->cg, ia, m, gv); /* the thread's max, or raw sum, so far */
    LLVMBuildStore(B, m2, acc[ja]);
    if (smx) {
        LLVMValueRef shm = online_sh(g, m), shm2 = online_sh(g, m2);
        LLVMValueRef e = vm_exp(&g->cg, LLVMBuildFSub(B, shm, shm2, ""));
        LLVMValueRef scale = sel(g, fcmp(g, LLVMRealOEQ, m, m2), one, sel(g, fcmp(g, LLVMRealOEQ, m, ninf), z, e));
        LLVMBuildStore(B, LLVMBuildFMul(B, LLVMBuildLoad2(B, ft, sb, ""), scale, ""), sb);
        g->rowval[ja] = m2;
        acc2[jb] = sb;
    } else {
        LLVMValueRef cnt = z; /* the thread's values this iteration: whole chunks of V */
        for (int u = 0; u < P->unroll; u++) {
            LLVMValueRef ci = u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i;
            LLVMValueRef gi = LLVMBuildAdd(B, LLVMBuildMul(B, ci, kix(g, P->T), ""), g->j, "");
            LLVMValueRef ok = LLVMBuildICmp(B, LLVMIntSLT, gi, kix(g, P->nv), "");
            cnt = LLVMBuildFAdd(B, cnt, sel(g, ok, LLVMConstReal(ft, P->V), z), "");
        }
        LLVMValueRef pos = fcmp(g, LLVMRealOGT, cnt, z);
        LLVMValueRef gm = sel(g, pos, LLVMBuildFDiv(B, gv, sel(g, pos, cnt, one), ""), z);
        g->rowval[ja] = gm;
        LLVMBuildStore(B, z, gb);
        acc2[jb] = gb;
        g->gen++;
        for (int u = 0; u < P->unroll; u++) emit_chunk(g, k, pb, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, u, acc2);
        g->V = 1;
        g->vv = -1;
        LLVMValueRef n0 = LLVMBuildLoad2(B, ft, tn, ""), m0 = LLVMBuildLoad2(B, ft, tm, "");
        LLVMValueRef n1 = LLVMBuildFAdd(B, n0, cnt, "");
        LLVMValueRef d = LLVMBuildFSub(B, gm, m0, "");
        LLVMValueRef w = LLVMBuildFDiv(B, cnt, sel(g, pos, n1, one), ""); /* cnt / n1 */
        LLVMValueRef m1 = fma3(g, d, w, m0);
        LLVMValueRef q = LLVMBuildFMul(B, LLVMBuildFMul(B, d, d, ""), LLVMBuildFMul(B, n0, w, ""), "");
        LLVMValueRef M2 = LLVMBuildFAdd(B, LLVMBuildFAdd(B, LLVMBuildLoad2(B, ft, sb, ""), LLVMBuildLoad2(B, ft, gb, ""), ""), q, "");
        LLVMBuildStore(B, sel(g, pos, n1, n0), tn);
        LLVMBuildStore(B, sel(g, pos, m1, m0), tm);
        LLVMBuildStore(B, sel(g, pos, M2, LLVMBuildLoad2(B, ft, sb, "")), sb);
    }
    if (smx) {
        g->gen++;
        for (int u = 0; u < P->unroll; u++) emit_chunk(g, k, pb, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, u, acc2);
        g->V = 1;
        g->vv = -1;
        /* nothing but -inf so far: exp(x - s(-inf)) may be NaN; the sum is 0 */
        LLVMValueRef sv = LLVMBuildLoad2(B, ft, sb, "");
        LLVMBuildStore(B, sel(g, fcmp(g, LLVMRealOEQ, m2, ninf), z, sv), sb);
    }
    loop_end(g, &L, kix(g, P->unroll));
    g->vgen++; /* the chunk loads of the loop body stay in it */
    g->gen++;
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    LLVMValueRef first = LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), "");
    LLVMValueRef pa_v = NULL, pb_v = NULL, pn_v = NULL;
    for (int j = 0; j < k->nitems; j++) { /* the pass's reductions, A's among them */
        ic_item *it = &k->items[j];
        if (it->pos != pa || it->kind != IT_REDUCE) continue;
        LLVMValueRef r = LLVMBuildLoad2(B, rtype(g, it->acc), acc[j], "");
        LLVMValueRef ri = ic_is_arg(it->red_op) ? LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "") : NULL;
        LLVMValueRef rt = r;
        r = block_reduce(g, it, r, ri ? &ri : NULL);
        if (j == ja) {
            pa_v = r;
            if (smx) { /* s_t exp(s(m_t) - s(M)), 0 for a thread that saw only -inf */
                LLVMValueRef e = vm_exp(&g->cg, LLVMBuildFSub(B, online_sh(g, rt), online_sh(g, r), ""));
                LLVMValueRef st = LLVMBuildFMul(B, LLVMBuildLoad2(B, ft, sb, ""), e, "");
                pb_v = sel(g, fcmp(g, LLVMRealOEQ, rt, ninf), z, st);
            } else { /* M2_t + n_t (mean_t - mean of the part)^2 */
                int64_t per = P->Cs * (int64_t)P->T * P->V;
                LLVMValueRef left = LLVMBuildSub(B, kix(g, P->n), LLVMBuildMul(B, g->part_s, kix(g, per), ""), "");
                left = sel(g, LLVMBuildICmp(B, LLVMIntSLT, left, kix(g, per), ""), left, kix(g, per));
                left = sel(g, LLVMBuildICmp(B, LLVMIntSGT, left, kix(g, 0), ""), left, kix(g, 0));
                pn_v = LLVMBuildSIToFP(B, left, ft, "");
                LLVMValueRef pos = fcmp(g, LLVMRealOGT, pn_v, z);
                LLVMValueRef mp = sel(g, pos, LLVMBuildFDiv(B, r, sel(g, pos, pn_v, one), ""), z);
                LLVMValueRef n0 = LLVMBuildLoad2(B, ft, tn, "");
                LLVMValueRef d = LLVMBuildFSub(B, LLVMBuildLoad2(B, ft, tm, ""), mp, "");
                LLVMValueRef c = fma3(g, LLVMBuildFMul(B, n0, d, ""), d, LLVMBuildLoad2(B, ft, sb, ""));
                pb_v = sel(g, fcmp(g, LLVMRealOGT, n0, z), c, z);
            }
            pb_v = block_reduce(g, ib, pb_v, NULL);
        }
        int sl[4] = {P->slot[j], P->slot[j] + 1, P->slot[jb], P->slot[jb] + 1};
        LLVMValueRef v[4] = {r, ri, j == ja ? pb_v : NULL, j == ja ? pn_v : NULL};
        part_stores(g, first, sl, v, 4);
    }
    (void)pa_v;
    g->rowval[ja] = NULL; /* only combined values past this launch */
    g->gen++;
    free(acc);
    free(acc2);
}

/* (tid >> shift) & (2^len - 1), the mask left out when the field reaches the top of tid */
static LLVMValueRef bitfield(gg *g, LLVMValueRef tid, int shift, int len) {
    LLVMValueRef v = shift ? LLVMBuildLShr(B, tid, kix(g, shift), "") : tid;
    if (shift + len >= g->P->logT + g->P->logR) return v;
    return LLVMBuildAnd(B, v, kix(g, ((int64_t)1 << len) - 1), "");
}

/* Split columns' combining launch of pass cpos: the partials of its reductions, combined by
 * each block for its R columns, into the row value area (thread j == 0 of each column). */
static void emit_area_combine(gg *g, ic_kernel *k, LLVMValueRef first) {
    const plan *P = g->P;
    LLVMValueRef *v = ic_alloc(g->c, (2 * (size_t)k->nitems + 1) * sizeof *v);
    int *sl = ic_alloc(g->c, (2 * (size_t)k->nitems + 1) * sizeof *sl);
    int n = 0;
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->kind != IT_REDUCE || it->pos != P->cpos) continue;
        LLVMValueRef r, ri = NULL;
        part_combine(g, it, P->slot[j], &r, &ri);
        sl[n] = P->slot[j], v[n++] = r;
        if (ri) sl[n] = P->slot[j] + 1, v[n++] = ri;
    }
    LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "area");
    LLVMBasicBlockRef end = LLVMAppendBasicBlockInContext(g->cg.ctx, g->fn, "area.end");
    LLVMBuildCondBr(B, first, st, end);
    LLVMPositionBuilderAtEnd(B, st);
    for (int i = 0; i < n; i++) area_store(g, sl[i], v[i]);
    LLVMBuildBr(B, end);
    LLVMPositionBuilderAtEnd(B, end);
}

/* One launch of a split row kernel: block = (group of R rows, part); split rows have R = 1
 * and j = tid, split columns (vec_outer) R columns on the lanes. */
static void emit_split(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    int S = P->pass >= 0 ? P->Sg : 1;
    LLVMValueRef grp = S > 1 ? LLVMBuildUDiv(B, bid, kix(g, S), "") : bid;
    g->part_s = S > 1 ? LLVMBuildURem(B, bid, kix(g, S), "") : kix(g, 0);
    if (P->R > 1) {
        LLVMValueRef rl = bitfield(g, tid, P->map.r_shift, P->logR);
        g->j = bitfield(g, tid, P->map.j_shift, P->logT);
        LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildMul(B, grp, kix(g, P->R), ""), rl, "");
        g->active = LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, P->rows), "");
        g->row = sel(g, g->active, r, kix(g, 0));
    } else {
        g->j = tid;
        g->row = grp;
        g->active = LLVMConstInt(g->cg.i1, 1, 0);
    }
    gg_decompose(g, g->row, k->ovar, k->osize, k->nouter);
    rebase_scratch(g, k, g->row);
    memset(g->rowval, 0, sizeof(LLVMValueRef) * (size_t)(k->nitems + 1));
    LLVMValueRef first = and_(g, g->active, LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), ""));
    g->V = 1;
    g->vv = -1;
    g->chunk = -1;
    g->gen++;
    if (P->area && P->cpos > 0) {
        emit_area_combine(g, k, first);
        return;
    }
    combine_rows(g, k, INT_MIN, P->pass >= 0 ? P->pass : INT_MAX);
    if (P->pass >= 0) {
        if (P->online) gg_emit_online(g, k);
        else emit_pass(g, k, P->pass);
        return;
    }
    final_stores(g, k, first);
}

static void emit_pass(gg *g, ic_kernel *k, int pos) {
    const plan *P = g->P;
    LLVMValueRef *acc = pass_accs(g, k, pos);
    if (P->persistent) {
        for (int c = 0; c < P->C; c++) emit_chunk(g, k, pos, kix(g, c), c, acc);
    } else if (P->C > 0) {
        /* unroll chunks per iteration: their loads are independent and go out together */
        loop L;
        if (P->S > 1) {
            LLVMValueRef lo = LLVMBuildMul(B, g->part_s, kix(g, P->Cs), "");
            loop_begin(g, &L, lo, LLVMBuildAdd(B, lo, kix(g, P->Cs), ""));
        } else {
            loop_begin(g, &L, kix(g, 0), kix(g, P->C));
        }
        for (int u = 0; u < P->unroll; u++)
            emit_chunk(g, k, pos, u ? LLVMBuildAdd(B, L.i, kix(g, u), "") : L.i, -1, acc);
        loop_end(g, &L, kix(g, P->unroll));
    }
    g->V = 1;
    g->vv = -1;
    g->gen++;
    LLVMValueRef first = and_(g, g->active, LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), ""));
    for (int j = 0; j < k->nitems; j++) {
        ic_item *it = &k->items[j];
        if (it->pos != pos || it->kind != IT_REDUCE) continue;
        LLVMValueRef r = LLVMBuildLoad2(B, rtype(g, it->acc), acc[j], "");
        LLVMValueRef ri = ic_is_arg(it->red_op) ? LLVMBuildLoad2(B, g->cg.i64, acc[k->nitems + j], "") : NULL;
        r = block_reduce(g, it, r, ri ? &ri : NULL);
        if (P->S > 1) { /* this block's partial: raw accumulator (and index) */
            int sl[2] = {P->slot[j], P->slot[j] + 1};
            LLVMValueRef v[2] = {r, ri};
            part_stores(g, first, sl, v, 2);
            continue;
        }
        r = part_finish(g, it, r, ri);
        g->rowval[j] = r;
        if (it->store) gg_store_item(g, it, &r, 1, first);
    }
    free(acc);
}

void gg_emit_rows(gg *g, ic_kernel *k) {
    const plan *P = g->P;
    if (P->S > 1) {
        emit_split(g, k);
        return;
    }
    LLVMValueRef tid = LLVMBuildZExt(B, g->tid, g->ity, "");
    LLVMValueRef bid = LLVMBuildZExt(B, sreg(g, "llvm.nvvm.read.ptx.sreg.ctaid.x"), g->ity, "");
    LLVMValueRef rl = bitfield(g, tid, P->map.r_shift, P->logR);
    g->j = bitfield(g, tid, P->map.j_shift, P->logT);
    if (g->dyn) {
        LLVMValueRef o = LLVMBuildMul(B, LLVMBuildZExt(B, g->j, g->cg.i64, ""), ki(g, g->cg.i64, 16), "");
        g->dyn_base = LLVMBuildInBoundsGEP2(B, g->cg.i8, g->dyn, &o, 1, "");
    }
    LLVMValueRef r = LLVMBuildAdd(B, LLVMBuildMul(B, bid, kix(g, P->R), ""), rl, "");
    g->active = P->all_rows ? LLVMConstInt(g->cg.i1, 1, 0) : LLVMBuildICmp(B, LLVMIntSLT, r, kix(g, P->rows), "");
    LLVMValueRef rc = P->all_rows ? r : sel(g, g->active, r, kix(g, 0));
    gg_decompose(g, rc, k->ovar, k->osize, k->nouter);
    rebase_scratch(g, k, rc);
    memset(g->rowval, 0, sizeof(LLVMValueRef) * (size_t)(k->nitems + 1));
    LLVMValueRef first = and_(g, g->active, LLVMBuildICmp(B, LLVMIntEQ, g->j, kix(g, 0), ""));
    for (int p = 0; p < k->npos; p++) {
        if (p % 2) {
            emit_pass(g, k, p);
            continue;
        }
        g->V = 1;
        g->vv = -1;
        g->chunk = -1;
        g->gen++;
        bool stored = false;
        for (int j = 0; j < k->nitems; j++) {
            ic_item *it = &k->items[j];
            if (it->pos != p || !it->store) continue;
            LLVMValueRef v = gg_val(g, it->expr, 0);
            gg_store_item(g, it, &v, 1, first);
            stored = true;
        }
        /* a row value stored by thread j == 0 may be loaded by every thread of a later pass */
        if (stored && p + 1 < k->npos) gg_barrier(g);
    }
}
