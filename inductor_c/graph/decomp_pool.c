/* decomp_pool.c — pooling, constant padding, nearest-interpolation index maps and depthwise
 * convolutions as compositions of graph builders (ic_decomp.h has the contract).
 *
 * Requires: static shapes of the values they read (the callers refuse symbolic ones).
 * Gives: the same values torch computes (pool windows in torch's output-size rules, ceil
 * mode included; padding of -inf for max, 0 for sums), built from slices, cat, reshape,
 * reduce and pointwise ops that fuse into one kernel with their neighbours. Parameter checks
 * run before anything is built, so a refusal leaves the graph as it was. */
#include <math.h>
#include <stdio.h>

#include "ic_decomp.h"

/* the meta of v; a zeroed one for a failed value (IC_NONE), so a chain of builders after
 * the first failure keeps going on the error state without reading through NULL */
static const ic_meta *meta(const ic_graph *g, ic_val v) {
    static const ic_meta zero;
    const ic_meta *m = v >= 0 ? ic_value_meta(g, v) : NULL;
    return m ? m : &zero;
}

static int isflt(ic_dtype d) { return d >= IC_F16 && d <= IC_F64; }

static ic_val fconst(ic_graph *g, double v, ic_dtype dt) { return ic_cast(g, ic_scalar(g, v, IC_F64), dt); }

static ic_val inum(ic_graph *g, int64_t v) { return ic_scalar(g, (double)v, IC_I64); }

ic_val ic_pad_const(ic_graph *g, ic_val x, int dim, int64_t lo, int64_t hi, double fill) {
    ic_meta m = *meta(g, x);
    if (lo < 0) {
        x = ic_slice(g, x, dim, -lo, m.sizes[dim], 1);
        m = *meta(g, x);
        lo = 0;
    }
    if (hi < 0) {
        x = ic_slice(g, x, dim, 0, m.sizes[dim] + hi, 1);
        m = *meta(g, x);
        hi = 0;
    }
    for (int side = 0; side < 2; side++) {
        int64_t n = side ? hi : lo;
        if (n == 0)
            continue;
        int64_t sz[IC_MAX_DIMS];
        for (int i = 0; i < m.ndim; i++)
            sz[i] = i == dim ? n : m.sizes[i];
        ic_val f = ic_expand(g, fconst(g, fill, m.dtype), m.ndim, sz);
        x = side ? ic_cat(g, x, f, dim) : ic_cat(g, f, x, dim);
    }
    return x;
}

int ic_pool_window(ic_graph *g, ic_val x, int nd, const int64_t *k, const int64_t *s, const int64_t *pad,
                   const int64_t *dl, int ceil, ic_op op, ic_val *res, int64_t *osz, char *why, size_t nwhy) {
    ic_meta m = *meta(g, x);
    /* op IC_OP_WHERE: a max pool whose gradient goes, as eager's, to the first maximum of each
     * window in scan order (the last NaN): a fold of where(v > acc or isnan(v), v, acc), the
     * same values as maximum's (whose rule shares the gradient among ties) */
    int firstmax = op == IC_OP_WHERE;
    if (firstmax)
        op = IC_OP_MAXIMUM;
    if (m.ndim < nd + 1 || m.ndim > nd + 2) {
        snprintf(why, nwhy, "pool: expected a %dd or %dd input (eager will raise)", nd + 1, nd + 2);
        return 1;
    }
    if (op == IC_OP_MAXIMUM && !isflt(m.dtype)) {
        snprintf(why, nwhy, "max pool of an integer tensor left to eager");
        return 1;
    }
    int64_t need[IC_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        int dim = m.ndim - nd + i;
        int64_t L = m.sizes[dim], eff = dl[i] * (k[i] - 1) + 1;
        if (k[i] < 1 || s[i] < 1 || dl[i] < 1 || pad[i] < 0 || 2 * pad[i] > eff) {
            snprintf(why, nwhy, "pool: bad kernel/stride/padding (eager will raise)");
            return 1;
        }
        /* ATen's pooling_output_shape: floor division (a window larger than the input
         * still gives one output in ceil mode) */
        int64_t num = L + 2 * pad[i] - eff + (ceil ? s[i] - 1 : 0);
        int64_t O = (num >= 0 ? num / s[i] : -((-num + s[i] - 1) / s[i])) + 1;
        if (ceil && (O - 1) * s[i] >= L + pad[i])
            O--;
        if (O < 1) {
            snprintf(why, nwhy, "pool: output size too small (eager will raise)");
            return 1;
        }
        osz[i] = O;
        need[i] = (O - 1) * s[i] + eff;
    }
    int64_t nk = 1;
    for (int i = 0; i < nd; i++)
        nk *= k[i];
    /* big non-overlapping windows (adaptive pools to 1x1, global pools): one reduction over
     * the window dims of a [.., O0, k0, O1, k1] view instead of k0*k1 slices */
    int tiled = nk > 8 && !firstmax;
    for (int i = 0; i < nd; i++)
        tiled &= s[i] == k[i] && pad[i] == 0 && dl[i] == 1;
    if (tiled && m.ndim + nd > IC_MAX_DIMS) {
        snprintf(why, nwhy, "pool: too many dims");
        return 1;
    }
    int64_t kt[IC_MAX_DIMS]; /* tiled: one window clipped to the input (ceil mode) reads only it */
    for (int i = 0; i < nd; i++) {
        int64_t L = m.sizes[m.ndim - nd + i];
        kt[i] = tiled && osz[i] == 1 && k[i] > L ? L : k[i];
        if (tiled)
            need[i] = osz[i] * kt[i];
    }
    ic_val xp = x;
    for (int i = 0; i < nd; i++) {
        int dim = m.ndim - nd + i;
        xp = ic_pad_const(g, xp, dim, pad[i], need[i] - m.sizes[dim] - pad[i], op == IC_OP_MAXIMUM ? -INFINITY : 0.0);
    }
    if (tiled) {
        int64_t sz[IC_MAX_DIMS];
        int r = 0;
        uint32_t mask = 0;
        for (int i = 0; i < m.ndim - nd; i++)
            sz[r++] = m.sizes[i];
        for (int i = 0; i < nd; i++) {
            int dim = m.ndim - nd + i;
            if (osz[i] * kt[i] != meta(g, xp)->sizes[dim])
                xp = ic_slice(g, xp, dim, 0, osz[i] * kt[i], 1);
            sz[r++] = osz[i];
            mask |= 1u << r;
            sz[r++] = kt[i];
        }
        ic_val v = ic_reshape(g, xp, r, sz);
        *res = ic_reduce(g, op == IC_OP_MAXIMUM ? IC_OP_AMAX : IC_OP_SUM, v, mask, 0, -1);
        return *res < 0 ? -1 : 0;
    }
    ic_val acc = -1;
    for (int64_t w = 0; w < nk; w++) {
        ic_val v = xp;
        for (int i = nd - 1, r = (int)w; i >= 0; i--) {
            int dim = m.ndim - nd + i;
            int64_t j = r % k[i];
            r /= (int)k[i];
            v = ic_slice(g, v, dim, j * dl[i], j * dl[i] + (osz[i] - 1) * s[i] + 1, s[i]);
        }
        if (acc >= 0 && firstmax)
            acc = ic_where(g, ic_binary(g, IC_OP_LOGICAL_OR, ic_binary(g, IC_OP_GT, v, acc), ic_unary(g, IC_OP_ISNAN, v)), v, acc);
        else
            acc = acc < 0 ? v : ic_binary(g, op, acc, v);
    }
    if (nk == 1)
        acc = ic_cast(g, acc, m.dtype);
    *res = acc;
    return acc < 0 ? -1 : 0;
}

ic_val ic_pool_counts(ic_graph *g, int64_t O, int64_t k, int64_t s, int64_t L, int64_t pad, int include_pad) {
    ic_val st = ic_binary(g, IC_OP_MUL, ic_arange(g, O, 0, 1, IC_I64), inum(g, s));
    ic_val en = ic_binary(g, IC_OP_MINIMUM, ic_binary(g, IC_OP_ADD, st, inum(g, k)), inum(g, L + 2 * pad));
    if (!include_pad) {
        en = ic_binary(g, IC_OP_MINIMUM, en, inum(g, L + pad));
        st = ic_binary(g, IC_OP_MAXIMUM, st, inum(g, pad));
    }
    return ic_binary(g, IC_OP_SUB, en, st);
}

ic_val ic_interp_nearest_index(ic_graph *g, int64_t L, int64_t O, double sf, int exact) {
    if (O == L && !exact)
        return ic_arange(g, O, 0, 1, IC_I64);
    float scale = sf > 0 ? (float)(1.0 / sf) : (float)L / (float)O;
    ic_val i = ic_cast(g, ic_arange(g, O, 0, 1, IC_I64), IC_F32);
    if (exact)
        i = ic_binary(g, IC_OP_ADD, i, ic_scalar(g, 0.5, IC_F64));
    ic_val f = ic_unary(g, IC_OP_FLOOR, ic_binary(g, IC_OP_MUL, i, ic_cast(g, ic_scalar(g, scale, IC_F64), IC_F32)));
    return ic_binary(g, IC_OP_MINIMUM, ic_cast(g, f, IC_I64), inum(g, L - 1));
}

int ic_dwconv_window(ic_graph *g, int nd, const int64_t *prm, const ic_val *v, int n, int stencil,
                     long max_taps, ic_val *res) {
    if (nd < 1 || nd > 2 || n < 2 || n > 3)
        return 0;
    const ic_meta xm = *meta(g, v[0]), wm = *meta(g, v[1]);
    if (xm.dyn || wm.dyn || xm.ndim != nd + 2 || wm.ndim != nd + 2 || !isflt(xm.dtype) || wm.dtype != xm.dtype)
        return 0;
    int64_t C = xm.sizes[1], taps = 1;
    if (C < 1 || prm[1 + 3 * nd] != C || wm.sizes[0] != C || wm.sizes[1] != 1)
        return 0;
    for (int i = 0; i < nd; i++)
        taps *= wm.sizes[2 + i];
    if (taps < 1 || taps > max_taps)
        return 0;
    if (n == 3) {
        const ic_meta *bm = meta(g, v[2]);
        if (bm->dyn || bm->ndim != 1 || bm->sizes[0] != C || bm->dtype != xm.dtype)
            return 0;
    }
    int64_t osz[2], need[2];
    for (int i = 0; i < nd; i++) {
        int64_t L = xm.sizes[2 + i], k = wm.sizes[2 + i], s = prm[1 + i], pd = prm[1 + nd + i],
                dl = prm[1 + 2 * nd + i], eff = dl * (k - 1) + 1;
        if (s < 1 || dl < 1 || pd < 0 || L + 2 * pd < eff)
            return 0; /* eager raises or the output is empty: the library call decides */
        osz[i] = (L + 2 * pd - eff) / s + 1;
        need[i] = (osz[i] - 1) * s + eff;
    }
    if (xm.sizes[0] == 0)
        return 0;
    ic_dtype acc_t = xm.dtype == IC_F64 ? IC_F64 : IC_F32;
    ic_val xp = stencil ? v[0] : ic_cast(g, v[0], acc_t);
    for (int i = 0; i < nd && xp >= 0; i++)
        xp = ic_pad_const(g, xp, 2 + i, prm[1 + nd + i], need[i] - xm.sizes[2 + i] - prm[1 + nd + i], 0.0);
    ic_val wf = ic_cast(g, v[1], acc_t), acc = -1;
    int64_t wsz[3] = {C, 1, 1};
    for (int64_t w = 0; w < taps && xp >= 0 && wf >= 0; w++) {
        ic_val xs = xp, wt = wf;
        for (int i = nd - 1, r = (int)w; i >= 0; i--) {
            int64_t k = wm.sizes[2 + i], j = r % k, s = prm[1 + i], dl = prm[1 + 2 * nd + i];
            r /= (int)k;
            xs = ic_slice(g, xs, 2 + i, j * dl, j * dl + (osz[i] - 1) * s + 1, s);
            wt = ic_slice(g, wt, 2 + i, j, j + 1, 1);
        }
        ic_val term = ic_binary(g, IC_OP_MUL, stencil ? ic_cast(g, xs, acc_t) : xs, ic_reshape(g, wt, nd + 1, wsz));
        acc = acc < 0 ? term : ic_binary(g, IC_OP_ADD, acc, term);
    }
    if (acc >= 0 && n == 3)
        acc = ic_binary(g, IC_OP_ADD, acc, ic_reshape(g, ic_cast(g, v[2], acc_t), nd + 1, wsz));
    if (acc >= 0)
        acc = ic_cast(g, acc, xm.dtype);
    if (acc < 0)
        return -1;
    *res = acc;
    return 1;
}
