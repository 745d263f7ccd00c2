/* ops_loss.c — losses captured as graph math (training, issue 22): F.cross_entropy,
 * F.nll_loss, F.mse_loss / l1_loss / smooth_l1_loss / huber_loss; and attention with
 * dropout (scaled_dot_product_attention with dropout_p > 0) as eager's math path.
 *
 * Everything here is built from graph ops and externs that already have backward rules
 * (graph/vjp.h), so the gradients are those rules' composition: no rule of its own.
 *
 * cross_entropy / nll_loss follow ATen's composite definitions (LossNLL.cpp):
 *   logp = log_softmax(x, class_dim); picked = logp[target] over the class dim;
 *   w_i = weight[target_i] (1 without weight), 0 where target_i == ignore_index;
 *   none: -picked * w; sum: sum(-picked * w); mean: sum(-picked * w) / sum(w), so a batch
 *   whose targets are all ignored gives 0/0 = nan, as eager does.
 *   label_smoothing ε: (1-ε) nll + ε/C * smooth, smooth = -sum_c logp (* weight), 0 on
 *   ignored rows, reduced like nll (mean: divided by the same total weight).
 *   Class probabilities (target of input's shape): -sum(logp * target' (* weight)), target'
 *   smoothed by ε, mean over the numel / C rows.
 * The target is picked by comparing the class index with the target (a where and a sum
 * over the class dim) rather than by a gather: it fuses with log_softmax and works with
 * symbolic batch and length sizes. A target out of [0, C) that is not ignore_index is
 * counted in the graph and the count read after the kernels (CPU): nonzero, the frame runs
 * eagerly and raises eager's IndexError. On CUDA (eager: a device-side assert) it picks
 * nothing.
 *
 * Attention with dropout: eager's CPU kernel for dropout_p > 0 is the math path
 * (q·√s)(kᵀ·√s), + mask, safe softmax (rows all masked give 0), then at::dropout
 * (empty_like(p).bernoulli_(1-p).div_(1-p), the DROPOUT_MASK extern), @ v. Built the same
 * way, the mask is drawn from ATen's generator in eager's order, so the same seed gives
 * eager's result on the CPU. CUDA's fused kernels draw with Philox: there only the
 * distribution matches.
 */
#include "ops_internal.h"

enum { RED_NONE = 0, RED_MEAN = 1, RED_SUM = 2 };

/* reduction= (with the deprecated size_average/reduce left to eager: eager warns) */
static int get_reduction(trace *t, const opdef *d, var *size_average, var *reduce, var *reduction, int *red) {
    if (!sym_is_none(size_average) || !sym_is_none(reduce))
        return sym_fail(t, "%s with size_average/reduce (deprecated: eager warns) left to eager", d->name);
    *red = RED_MEAN;
    if (sym_is_none(reduction))
        return 0;
    const char *s;
    if (sym_get_str(t, reduction, NULL, &s, "reduction") < 0)
        return -1;
    if (!strcmp(s, "none"))
        *red = RED_NONE;
    else if (!strcmp(s, "mean"))
        *red = RED_MEAN;
    else if (!strcmp(s, "sum"))
        *red = RED_SUM;
    else
        return sym_fail(t, "%s: reduction='%s' is not valid (eager will raise)", d->name, s);
    return 0;
}

static int same_shape(const ic_meta *a, const ic_meta *b) {
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++) {
        if (a->sizes[i] != b->sizes[i])
            return 0;
        if ((a->dyn || b->dyn) && (a->dyn ? a->dims[i].coef : a->sizes[i]) != (b->dyn ? b->dims[i].coef : b->sizes[i]))
            return 0;
        if (a->dyn && b->dyn && memcmp(a->dims[i].exp, b->dims[i].exp, sizeof a->dims[i].exp))
            return 0;
    }
    return 1;
}

/* x with a size-1 dim inserted at `at` */
static ic_val unsq(trace *t, ic_val x, int at) {
    ic_meta m = *sym_metap(t, x);
    int64_t s[IC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i <= m.ndim && n < IC_MAX_DIMS; i++) {
        if (i == at)
            s[n++] = 1;
        if (i < m.ndim)
            s[n++] = m.sizes[i];
    }
    return sym_reshape(t, x, n, s);
}

/* weight (C) viewed as [1, C, 1, ...] over nd dims */
static ic_val class_view(trace *t, ic_val w, int nd, int64_t C) {
    int64_t s[IC_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        s[i] = i == 1 ? C : 1;
    return ic_reshape(G, w, nd, s);
}

static int log_softmax(trace *t, var *x, int dim, ic_val *out) {
    static const opdef ls = {"log_softmax", W_TORCH, "input,dim,dtype", sym_h_softmax, 1};
    var dv, r, *p[MAXP] = {0};
    if (sym_const(t, PyLong_FromLong(dim), &dv) < 0)
        return -1;
    p[0] = x;
    p[1] = &dv;
    if (sym_h_softmax(t, &ls, p, &r) < 0)
        return -1;
    *out = r.val;
    return 0;
}

/* the weight argument: None (-1) or a 1-D tensor of C elements of the input's dtype that
 * does not require grad (eager refuses one that does) */
static int get_weight(trace *t, const opdef *d, var *w, ic_dtype dt, int64_t C, ic_val *out) {
    *out = -1;
    if (sym_is_none(w))
        return 0;
    if (w->kind != V_TENSOR)
        return sym_fail(t, "%s: weight must be a tensor", d->name);
    const ic_meta *m = sym_metap(t, w->val);
    if (m->ndim != 1 || m->sizes[0] != C || m->dyn)
        return sym_fail(t, "%s: weight of a shape other than (C,) (eager will raise)", d->name);
    if (m->dtype != dt)
        return sym_fail(t, "%s: weight of another dtype than the input (eager will raise)", d->name);
    if (sym_value_requires_grad(t, w->val))
        return sym_fail(t, "%s: weight requires grad (eager raises: not differentiable)", d->name);
    *out = w->val;
    return 0;
}

/* nll over logp [N, C, d...] (class dim 1) and an integer target [N, d...]: the unreduced
 * loss and the per-element weight (0 where ignored), both of the target's shape */
static int nll_parts(trace *t, const opdef *d, ic_val lp, ic_val tgt, ic_val w, long long ignore, ic_val *loss,
                     ic_val *cw, ic_val *valid) {
    ic_meta m = *sym_metap(t, lp), tm = *sym_metap(t, tgt);
    if (tm.dtype != IC_I64 && tm.dtype != IC_U8)
        return sym_fail(t, "%s: target dtype must be Long or Byte (eager will raise)", d->name);
    int ok = tm.ndim == m.ndim - 1 && tm.sizes[0] == m.sizes[0];
    for (int i = 1; ok && i < tm.ndim; i++)
        ok = tm.sizes[i] == m.sizes[i + 1];
    if (!ok)
        return sym_fail(t, "%s: target's shape does not match the input's (eager will raise)", d->name);
    if (m.dyn && !sym_dim_static(m.dims[1]))
        return sym_fail(t, "%s: a symbolic number of classes not supported", d->name);
    int64_t C = m.sizes[1], s[IC_MAX_DIMS];
    ic_val t64 = tm.dtype == IC_I64 ? tgt : ic_cast(G, tgt, IC_I64);
    for (int i = 0; i < m.ndim; i++)
        s[i] = i == 1 ? C : 1;
    ic_val cls = ic_reshape(G, ic_arange(G, C, 0, 1, IC_I64), m.ndim, s);
    ic_val hit = ic_binary(G, IC_OP_EQ, cls, unsq(t, t64, 1));
    ic_val picked = ic_reduce(G, IC_OP_SUM, ic_where(G, hit, lp, ic_scalar(G, 0, IC_F64)), 1u << 1, 0, -1);
    *valid = ic_binary(G, IC_OP_NE, t64, sym_inum(t, ignore));
    if (t->device_type != TC_DEV_CUDA) {
        /* a target outside [0, C) that is not ignore_index: eager raises IndexError ("Target
         * 7 is out of bounds."); counted here and the frame rerun eagerly. (CUDA: eager's is a
         * device-side assert; the row picks nothing there.) */
        ic_val oob = ic_binary(G, IC_OP_LOGICAL_OR, ic_binary(G, IC_OP_LT, t64, sym_inum(t, 0)),
                               ic_binary(G, IC_OP_GE, t64, sym_inum(t, C)));
        ic_val bad = ic_reduce(G, IC_OP_SUM, ic_cast(G, ic_binary(G, IC_OP_LOGICAL_AND, oob, *valid), IC_I64), 0, 0, -1);
        if (sym_add_check(t, bad, d->name) < 0)
            return -1;
    }
    if (w >= 0) {
        ic_val safe = ic_where(G, *valid, t64, sym_inum(t, 0));
        ic_val flat = sym_reshape(t, safe, 1, (int64_t[]){-1});
        ic_val wt = sym_reshape(t, ic_index_select(G, w, 0, flat), tm.ndim, tm.sizes);
        *cw = ic_where(G, *valid, wt, ic_scalar(G, 0, IC_F64));
    } else {
        *cw = ic_cast(G, *valid, m.dtype);
    }
    *loss = ic_where(G, *valid, ic_unary(G, IC_OP_NEG, ic_binary(G, IC_OP_MUL, picked, *cw)), ic_scalar(G, 0, IC_F64));
    if (sym_check_graph(t) < 0)
        return -1;
    if (*loss < 0)
        return sym_fail(t, "%s: graph builder failed", d->name);
    return 0;
}

static ic_val reduce_by(trace *t, ic_val l, ic_val total, int red) {
    if (red == RED_NONE)
        return l;
    ic_val s = ic_reduce(G, IC_OP_SUM, l, 0, 0, -1);
    return red == RED_SUM ? s : ic_binary(G, IC_OP_DIV, s, total);
}

/* a 1-D input (C) with a 0-d target: as a batch of one, the result's batch dim dropped */
static int batch_of_one(trace *t, const opdef *d, var *x, var *tg, int prob, var *xo, var *to) {
    const ic_meta *tm = sym_metap(t, tg->val);
    if (tm->ndim != (prob ? 1 : 0))
        return sym_fail(t, "%s: target's shape does not match the input's (eager will raise)", d->name);
    int64_t C = sym_metap(t, x->val)->sizes[0];
    *xo = *x;
    *to = *tg;
    xo->val = ic_reshape(G, x->val, 2, (int64_t[]){1, C});
    to->val = ic_reshape(G, tg->val, prob ? 2 : 1, (int64_t[]){1, C});
    return xo->val < 0 || to->val < 0 ? sym_fail(t, "%s: reshape failed", d->name) : 0;
}

static int loss_out(trace *t, ic_val r, int one_d, int red, var *out) {
    if (one_d && red == RED_NONE)
        r = ic_reshape(G, r, 0, (int64_t[]){1});
    return sym_tensor_out(t, r, out);
}

static int float_input(trace *t, const opdef *d, var *x) {
    if (sym_need_tensor(t, d, x) < 0)
        return -1;
    const ic_meta *m = sym_metap(t, x->val);
    if (m->dtype != IC_F32 && m->dtype != IC_F64 && m->dtype != IC_F16 && m->dtype != IC_BF16)
        return sym_fail(t, "%s of a non-float input (eager will raise)", d->name);
    if (m->ndim == 0)
        return sym_fail(t, "%s of a 0-d input (eager will raise)", d->name);
    return 0;
}

/* nll_loss(input, target, weight, size_average, ignore_index=-100, reduce, reduction) */
int sym_h_nll_loss(trace *t, const opdef *d, var **p, var *out) {
    int red;
    long long ignore = -100;
    if (float_input(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 ||
        get_reduction(t, d, p[3], p[5], p[6], &red) < 0 ||
        (!sym_is_none(p[4]) && sym_get_int(t, p[4], &ignore, "ignore_index") < 0))
        return -1;
    var x = *p[0], tg = *p[1];
    int one_d = sym_metap(t, x.val)->ndim == 1;
    if (one_d && batch_of_one(t, d, p[0], p[1], 0, &x, &tg) < 0)
        return -1;
    ic_meta m = *sym_metap(t, x.val);
    ic_val w, l, cw, valid;
    if (get_weight(t, d, p[2], m.dtype, m.sizes[1], &w) < 0 || nll_parts(t, d, x.val, tg.val, w, ignore, &l, &cw, &valid) < 0)
        return -1;
    return loss_out(t, reduce_by(t, l, ic_reduce(G, IC_OP_SUM, cw, 0, 0, -1), red), one_d, red, out);
}

/* cross_entropy(input, target, weight, size_average, ignore_index=-100, reduce, reduction,
 * label_smoothing=0.0) */
int sym_h_cross_entropy(trace *t, const opdef *d, var **p, var *out) {
    int red;
    long long ignore = -100;
    double eps = 0.0;
    if (float_input(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 ||
        get_reduction(t, d, p[3], p[5], p[6], &red) < 0 ||
        (!sym_is_none(p[4]) && sym_get_int(t, p[4], &ignore, "ignore_index") < 0) ||
        sym_opt_num(t, p[7], 0.0, &eps, "label_smoothing") < 0)
        return -1;
    if (!(eps >= 0.0 && eps <= 1.0))
        return sym_fail(t, "%s: label_smoothing outside [0, 1] (eager will raise)", d->name);
    int prob = same_shape(sym_metap(t, p[0]->val), sym_metap(t, p[1]->val));
    if (prob && sym_metap(t, p[1]->val)->dtype < IC_F16)
        return sym_fail(t, "%s: class-probability target of a non-float dtype (eager will raise)", d->name);
    if (prob && ignore >= 0)
        return sym_fail(t, "%s: ignore_index with class-probability targets (eager will raise)", d->name);
    var x = *p[0], tg = *p[1];
    int one_d = sym_metap(t, x.val)->ndim == 1;
    if (one_d && batch_of_one(t, d, p[0], p[1], prob, &x, &tg) < 0)
        return -1;
    ic_meta m = *sym_metap(t, x.val);
    int64_t C = m.sizes[1];
    if (m.dyn && !sym_dim_static(m.dims[1]))
        return sym_fail(t, "%s: a symbolic number of classes not supported", d->name);
    ic_val w, lp;
    if (get_weight(t, d, p[2], m.dtype, C, &w) < 0 || log_softmax(t, &x, 1, &lp) < 0)
        return -1;
    ic_val wv = w >= 0 ? class_view(t, w, m.ndim, C) : -1;
    if (prob) {
        ic_val y = tg.val;
        if (sym_metap(t, y)->dtype != m.dtype)
            return sym_fail(t, "%s: target of another dtype than the input (eager will raise)", d->name);
        if (eps > 0.0)
            y = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, y, sym_num(t, 1.0 - eps)), sym_num(t, eps / (double)C));
        ic_val pr = ic_binary(G, IC_OP_MUL, lp, y);
        if (wv >= 0)
            pr = ic_binary(G, IC_OP_MUL, pr, wv);
        ic_val r;
        if (red == RED_NONE) {
            r = ic_unary(G, IC_OP_NEG, ic_reduce(G, IC_OP_SUM, pr, 1u << 1, 0, -1));
        } else {
            r = ic_unary(G, IC_OP_NEG, ic_reduce(G, IC_OP_SUM, pr, 0, 0, -1));
            if (red == RED_MEAN) {
                if (m.dyn)
                    return sym_fail(t, "%s: mean over symbolic sizes with class-probability targets not supported", d->name);
                int64_t rows = 1;
                for (int i = 0; i < m.ndim; i++)
                    rows *= i == 1 ? 1 : m.sizes[i];
                if (rows == 0)
                    return sym_fail(t, "%s of an empty batch (nan) left to eager", d->name);
                r = ic_binary(G, IC_OP_DIV, r, sym_inum(t, rows));
            }
        }
        return loss_out(t, r, one_d, red, out);
    }
    ic_val l, cw, valid;
    if (nll_parts(t, d, lp, tg.val, w, ignore, &l, &cw, &valid) < 0)
        return -1;
    ic_val total = red == RED_MEAN ? ic_reduce(G, IC_OP_SUM, cw, 0, 0, -1) : -1;
    ic_val r = reduce_by(t, l, total, red);
    if (eps > 0.0) {
        ic_val pw = wv >= 0 ? ic_binary(G, IC_OP_MUL, lp, wv) : lp;
        ic_val sm = ic_unary(G, IC_OP_NEG, ic_reduce(G, IC_OP_SUM, pw, 1u << 1, 0, -1));
        sm = ic_where(G, valid, sm, ic_scalar(G, 0, IC_F64));
        ic_val sr;
        if (red == RED_NONE)
            sr = sm;
        else if (red == RED_SUM)
            sr = ic_reduce(G, IC_OP_SUM, sm, 0, 0, -1);
        else /* eager: over the weights of the kept rows, or their count */
            sr = ic_binary(G, IC_OP_DIV, ic_reduce(G, IC_OP_SUM, sm, 0, 0, -1),
                           w >= 0 ? total : ic_reduce(G, IC_OP_SUM, valid, 0, 0, -1));
        r = ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, r, sym_num(t, 1.0 - eps)),
                      ic_binary(G, IC_OP_MUL, sr, sym_num(t, eps / (double)C)));
    }
    return loss_out(t, r, one_d, red, out);
}

/* mse_loss / l1_loss (input, target, size_average, reduce, reduction, weight);
 * smooth_l1_loss (input, target, size_average, reduce, reduction, beta);
 * huber_loss (input, target, reduction, delta, weight): op 0 mse, 1 l1, 2 smooth_l1, 3 huber.
 * Eager's formulas (ATen's kernels): mse (x-y)^2; l1 |x-y|; smooth_l1 |d| < β ? 0.5 d²/β :
 * |d| - 0.5β (β = 0: l1); huber |d| < δ ? 0.5 d² : δ(|d| - 0.5δ). A target of another
 * shape is broadcast by eager with a warning: left to eager (the warning is eager's). */
int sym_h_pointwise_loss(trace *t, const opdef *d, var **p, var *out) {
    int red, op = d->op;
    var *wv = NULL;
    double beta = 1.0;
    if (op == 3) {
        if (get_reduction(t, d, NULL, NULL, p[2], &red) < 0 || sym_opt_num(t, p[3], 1.0, &beta, "delta") < 0)
            return -1;
        wv = p[4];
    } else {
        if (get_reduction(t, d, p[2], p[3], p[4], &red) < 0)
            return -1;
        if (op == 2 && sym_opt_num(t, p[5], 1.0, &beta, "beta") < 0)
            return -1;
        if (op < 2)
            wv = p[5];
    }
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0)
        return -1;
    ic_meta xm = *sym_metap(t, p[0]->val), ym = *sym_metap(t, p[1]->val);
    if (!same_shape(&xm, &ym))
        return sym_fail(t, "%s with a target of another size (eager warns and broadcasts) left to eager", d->name);
    if (xm.dtype < IC_F16 || ym.dtype < IC_F16)
        return sym_fail(t, "%s of a non-float tensor left to eager", d->name);
    if (!sym_is_none(wv))
        return sym_fail(t, "%s with weight= left to eager", d->name);
    if (beta < 0)
        return sym_fail(t, "%s with a negative beta/delta (eager will raise)", d->name);
    ic_val x = p[0]->val, y = p[1]->val, df = ic_binary(G, IC_OP_SUB, x, y), l;
    if (op == 0) {
        l = ic_binary(G, IC_OP_MUL, df, df);
    } else {
        ic_val a = ic_unary(G, IC_OP_ABS, df);
        if (op == 1 || (op == 2 && beta == 0.0)) {
            l = a;
        } else {
            /* under grad the quadratic branch reads 0 where the linear one is taken: its
             * derivative (infinite at an infinite difference) is not multiplied in (eager's
             * gradient there is sign(d); at a NaN difference NaN, kept) */
            ic_val in = ic_binary(G, IC_OP_LT, a, sym_num(t, beta));
            ic_val dq = !sym_value_requires_grad(t, df) ? df
                        : ic_where(G, ic_binary(G, IC_OP_LOGICAL_OR, in, ic_unary(G, IC_OP_ISNAN, df)), df, sym_num(t, 0));
            ic_val q = ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_MUL, dq, dq), sym_num(t, 0.5));
            if (op == 2)
                l = ic_where(G, in, ic_binary(G, IC_OP_DIV, q, sym_num(t, beta)), ic_binary(G, IC_OP_SUB, a, sym_num(t, 0.5 * beta)));
            else
                l = ic_where(G, in, q, ic_binary(G, IC_OP_MUL, sym_num(t, beta), ic_binary(G, IC_OP_SUB, a, sym_num(t, 0.5 * beta))));
        }
    }
    if (red != RED_NONE)
        l = ic_reduce(G, red == RED_SUM ? IC_OP_SUM : IC_OP_MEAN, l, 0, 0, -1);
    return sym_tensor_out(t, l, out);
}

/* scaled_dot_product_attention(q, k, v, mask, dropout_p > 0, is_causal, scale) as eager's
 * math path (see the top of the file); k, v already repeated for grouped heads */
int sym_sdpa_dropout(trace *t, ic_val q, ic_val k, ic_val v, ic_val mask, int causal, double scale, double p,
                     var *out) {
    ic_meta qm = *sym_metap(t, q), km = *sym_metap(t, k);
    int nd = qm.ndim;
    if (nd < 2 || km.ndim < 2)
        return sym_fail(t, "scaled_dot_product_attention with dropout: inputs of < 2 dims");
    if (qm.dtype != IC_F32 && qm.dtype != IC_F64)
        return sym_fail(t, "scaled_dot_product_attention with dropout in %s left to eager", ic_dtype_name(qm.dtype));
    double sf = sqrt(fabs(scale));
    ic_val qs = ic_binary(G, IC_OP_MUL, q, sym_num(t, scale < 0 ? -sf : sf));
    int perm[IC_MAX_DIMS];
    for (int i = 0; i < km.ndim; i++)
        perm[i] = i;
    perm[km.ndim - 1] = km.ndim - 2;
    perm[km.ndim - 2] = km.ndim - 1;
    ic_val kt = ic_binary(G, IC_OP_MUL, ic_permute(G, k, perm), sym_num(t, sf));
    ic_val in[2] = {qs, kt};
    ic_val s = ic_extern(G, IC_EXT_MATMUL, 2, in, 0, NULL, 1, 1);
    if (s < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "scaled_dot_product_attention with dropout: matmul failed");
    ic_meta sm = *sym_metap(t, s);
    int64_t L = sm.sizes[sm.ndim - 2], S = sm.sizes[sm.ndim - 1];
    if (causal) { /* ones(L, S).tril(): column <= row */
        if (sm.dyn)
            return sym_fail(t, "scaled_dot_product_attention with dropout and is_causal over symbolic sizes not supported");
        ic_val r = ic_reshape(G, ic_arange(G, L, 0, 1, IC_I64), 2, (int64_t[]){L, 1});
        ic_val c = ic_reshape(G, ic_arange(G, S, 0, 1, IC_I64), 2, (int64_t[]){1, S});
        mask = ic_binary(G, IC_OP_LE, c, r);
    }
    if (mask >= 0) {
        if (sym_metap(t, mask)->dtype == IC_BOOL)
            mask = ic_where(G, mask, ic_scalar(G, 0, IC_F64), ic_scalar(G, -INFINITY, IC_F64));
        s = ic_binary(G, IC_OP_ADD, s, mask);
    }
    /* _safe_softmax over the last dim: a row all -inf gives 0 and a 0 gradient (eager's
     * softmax backward of a 0 output); shifted by 0 and divided by 1 there, so no nan (not
     * even 0 * nan in the backward) comes from it */
    uint32_t last = 1u << (sym_metap(t, s)->ndim - 1);
    ic_val mx = ic_detach(G, ic_reduce(G, IC_OP_AMAX, s, last, 1, -1));
    ic_val dead = ic_binary(G, IC_OP_EQ, mx, ic_scalar(G, -INFINITY, IC_F64));
    ic_val e = ic_unary(G, IC_OP_EXP, ic_binary(G, IC_OP_SUB, s, ic_where(G, dead, ic_scalar(G, 0, IC_F64), mx)));
    ic_val z = ic_reduce(G, IC_OP_SUM, e, last, 1, -1);
    ic_val pr = ic_binary(G, IC_OP_DIV, e, ic_where(G, dead, ic_scalar(G, 1, IC_F64), z));
    ic_val dm = sym_dropout_mask(t, pr, p);
    ic_val in2[2] = {ic_binary(G, IC_OP_MUL, pr, dm), v};
    return sym_tensor_out(t, ic_extern(G, IC_EXT_MATMUL, 2, in2, 0, NULL, 1, 1), out);
}

static int plain_const(PyObject *o) {
    return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o);
}

/* a constructor argument: a plain constant, or a tuple of them (ConstantPad1d((lo, hi), 0):
 * a tuple built in the trace of constants is that tuple); a new reference, NULL for anything
 * else (no error set) or out of memory (MemoryError set) */
static PyObject *module_arg(const var *v) {
    if (v->kind == V_CONST && plain_const(v->obj))
        return Py_NewRef(v->obj);
    if (v->kind == V_CONST && PyTuple_CheckExact(v->obj)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v->obj); i++)
            if (!plain_const(PyTuple_GET_ITEM(v->obj, i)))
                return NULL;
        return Py_NewRef(v->obj);
    }
    if (v->kind != V_SEQ || v->is_list || v->obj != NULL)
        return NULL;
    for (int i = 0; i < v->n; i++)
        if (v->items[i].kind != V_CONST || !plain_const(v->items[i].obj))
            return NULL;
    PyObject *tup = PyTuple_New(v->n);
    for (int i = 0; tup && i < v->n; i++)
        PyTuple_SET_ITEM(tup, i, Py_NewRef(v->items[i].obj));
    return tup;
}

/* cls(*constants) (plain ones, or tuples of them) of an nn.Module class inside the frame (loss_fct = CrossEntropyLoss()
 * in a model's forward): constructed afresh each call by the guards, as eager constructs
 * it (a DH_S_NEW source: the class called with the same constant arguments), and at trace
 * time once as the stand-in the trace reads; its forward is then inlined like any module's.
 * Only modules without tensors: no parameters, buffers, submodules or hooks once
 * constructed, so nothing of the graph depends on the fresh object but its plain
 * attributes, which the same constant arguments give again. 1: not this case. */
int sym_module_new(trace *t, PyObject *cls, var *args, int nargs, PyObject *kwnames, var *out) {
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *vals[16];
    if (nargs > 16)
        return 1;
    for (int i = 0; i < nargs; i++)
        if ((vals[i] = module_arg(&args[i])) == NULL) {
            while (i-- > 0)
                Py_DECREF(vals[i]);
            return PyErr_Occurred() ? -1 : 1; /* a MemoryError propagates */
        }
    PyObject *pos = PyTuple_New(nargs - nkw), *kw = nkw ? PyDict_New() : NULL, *mod = NULL;
    PyObject *srcs = PyTuple_New(nargs), *spec = NULL;
    int rc = -1;
    if (pos == NULL || srcs == NULL || (nkw && kw == NULL))
        goto done;
    for (int i = 0; i < nargs; i++) {
        int s = sym_source(t, DH_S_CONST, -1, 0, vals[i]);
        PyObject *si = s < 0 ? NULL : PyLong_FromLong(s);
        if (si == NULL)
            goto done;
        PyTuple_SET_ITEM(srcs, i, si);
        if (i < nargs - nkw)
            PyTuple_SET_ITEM(pos, i, Py_NewRef(vals[i]));
        else if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i - (nargs - nkw)), vals[i]) < 0)
            goto done;
    }
    mod = PyObject_Call(cls, pos, kw);
    if (mod == NULL) {
        (void)tc_clear_expected(PyExc_Exception);
        rc = sym_fail(t, "%s() raised (eager will raise)", ((PyTypeObject *)cls)->tp_name);
        goto done;
    }
    /* tensorless: no parameter or buffer other than None (CrossEntropyLoss registers its
     * weight=None as a buffer), no submodule, no hook */
    static const char *const slots[] = {"_parameters", "_buffers", "_modules", "_forward_hooks",
                                        "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks", NULL};
    for (int i = 0; slots[i]; i++) {
        PyObject *d = PyObject_GetAttrString(mod, slots[i]);
        Py_ssize_t n = d == NULL || !PyDict_Check(d) ? -1 : 0, pos = 0;
        PyObject *k, *v;
        while (n >= 0 && PyDict_Next(d, &pos, &k, &v))
            n += i > 1 || v != Py_None;
        Py_XDECREF(d);
        if (n < 0 && tc_clear_expected(PyExc_Exception) < 0)
            goto done; /* MemoryError, KeyboardInterrupt: propagated */
        if (n != 0) {
            rc = 1;
            goto done;
        }
    }
    PyObject *kwn = kwnames ? Py_NewRef(kwnames) : PyTuple_New(0);
    spec = kwn ? Py_BuildValue("(OOO)", cls, kwn, srcs) : NULL;
    Py_XDECREF(kwn);
    if (spec == NULL)
        goto done;
    int s = sym_source(t, DH_S_NEW, -1, t->nsrc, spec);
    if (s < 0 || sym_wrap(t, mod, s, out) < 0)
        goto done;
    rc = 0;
done:
    for (int i = 0; i < nargs; i++)
        Py_DECREF(vals[i]);
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    Py_XDECREF(srcs);
    Py_XDECREF(spec);
    Py_XDECREF(mod);
    return rc;
}

/* ---- binary cross entropy ------------------------------------------------------------------
 * F.binary_cross_entropy_with_logits(input, target, weight, size_average, reduce, reduction,
 * pos_weight) and F.binary_cross_entropy(input, target, weight, size_average, reduce,
 * reduction): the loss as ATen's CPU kernels compute it, its gradients as eager's backward
 * formulas (FunctionsManual / Loss.cpp), not the composition's: both functions are one
 * autograd node in eager whose formulas differ from the chain rule where it matters (BCE's
 * 1e-12 floor on x(1-x), where a composition through the -100 log clamp gives 0; a stable
 * sigmoid form for the logits). The loss is built with grad off; its backward is a template
 * (graph/autograd.c ic_custom_capture, as for a torch.autograd.Function) computing
 *   with logits:  d input  = (pos_weight ? (pw·t + 1 - t)·σ(x) - pw·t : σ(x) - t) · w · g
 *                 d target = (pos_weight ? logσ(-x) - pw·logσ(x) : -x) · w · g
 *   BCE:          d input  = (x - t) / max((1 - x)·x, 1e-12) · w · g
 *                 d target = -logit(x) · w · g
 * (g expanded for sum, divided by numel for mean); weight and pos_weight get none (eager:
 * not differentiable). Eager checks BCE's input and target are in [0, 1] (RuntimeError): the graph
 * counts the elements outside as an index check does (CPU; the frame then reruns eagerly);
 * on CUDA (a device-side assert in eager) the call is left to eager. */

/* w or pos_weight: None (-1), else a tensor of the input's dtype that broadcasts into x's
 * shape (eager multiplies in place into a tensor of x's shape) */
static int bce_weight(trace *t, const opdef *d, var *w, const ic_meta *xm, const char *what, ic_val *out) {
    *out = -1;
    if (sym_is_none(w))
        return 0;
    if (w->kind != V_TENSOR)
        return sym_fail(t, "%s: %s must be a tensor", d->name, what);
    const ic_meta *m = sym_metap(t, w->val);
    if (m->dtype != xm->dtype || m->dyn || m->ndim > xm->ndim)
        return sym_fail(t, "%s: %s of another dtype or shape than the input left to eager", d->name, what);
    for (int i = 0; i < m->ndim; i++) {
        int64_t s = m->sizes[m->ndim - 1 - i], xs = xm->sizes[xm->ndim - 1 - i];
        if (s != 1 && s != xs)
            return sym_fail(t, "%s: %s does not broadcast to the input's shape (eager will raise)", d->name, what);
    }
    *out = w->val;
    return 0;
}

/* log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)) (ATen's log_sigmoid_forward) */
static ic_val log_sigmoid(trace *t, ic_val x) {
    ic_val e = ic_unary(G, IC_OP_EXP, ic_unary(G, IC_OP_NEG, ic_unary(G, IC_OP_ABS, x)));
    return ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MINIMUM, x, sym_num(t, 0.0)), ic_unary(G, IC_OP_LOG1P, e));
}

static ic_val mul_opt(trace *t, ic_val a, ic_val w) { return w >= 0 ? ic_binary(G, IC_OP_MUL, a, w) : a; }

/* BCE's input (and target) range check: the count of elements outside [0, 1] (NaN included), a graph
 * output read after the kernels (CPU) */
static int bce_range_check(trace *t, const opdef *d, ic_val x) {
    if (t->device_type == TC_DEV_CUDA)
        return sym_fail(t, "%s on CUDA (eager's range check is a device-side assert) left to eager", d->name);
    ic_val ok = ic_binary(G, IC_OP_LOGICAL_AND, ic_binary(G, IC_OP_GE, x, sym_num(t, 0.0)),
                          ic_binary(G, IC_OP_LE, x, sym_num(t, 1.0)));
    ic_val bad = ic_reduce(G, IC_OP_SUM, ic_cast(G, ic_unary(G, IC_OP_LOGICAL_NOT, ok), IC_I64), 0, 0, -1);
    return sym_add_check(t, bad, d->name);
}

/* d->op 0: with logits (p[6] pos_weight), 1: of probabilities */
int sym_h_bce(trace *t, const opdef *d, var **p, var *out) {
    int red, logits = d->op == 0;
    if (sym_need_tensor(t, d, p[0]) < 0 || sym_need_tensor(t, d, p[1]) < 0 ||
        get_reduction(t, d, p[3], p[4], p[5], &red) < 0)
        return -1;
    ic_meta xm = *sym_metap(t, p[0]->val), tm = *sym_metap(t, p[1]->val);
    if (!same_shape(&xm, &tm))
        return sym_fail(t, "%s: target of another size than the input (eager will raise)", d->name);
    if (xm.dyn)
        return sym_fail(t, "%s of symbolic sizes not supported", d->name);
    if (xm.dtype < IC_F16 || xm.dtype > IC_F64 || tm.dtype != xm.dtype)
        return sym_fail(t, "%s of non-float or mixed dtypes left to eager", d->name);
    ic_val x = p[0]->val, tg = p[1]->val, w, pw = -1;
    if (bce_weight(t, d, p[2], &xm, "weight", &w) < 0 || (logits && bce_weight(t, d, p[6], &xm, "pos_weight", &pw) < 0))
        return -1;
    int64_t numel = 1;
    for (int i = 0; i < xm.ndim; i++)
        numel *= xm.sizes[i];
    if (red == RED_MEAN && numel == 0)
        return sym_fail(t, "%s: mean of an empty input (nan) left to eager", d->name);
    if (!logits && (bce_range_check(t, d, x) < 0 || bce_range_check(t, d, tg) < 0))
        return -1;
    int train = sym_value_requires_grad(t, x) || sym_value_requires_grad(t, tg);
    int need_t = train && sym_value_requires_grad(t, tg);
    /* the loss, with grad off when a template gives its gradients */
    if (train)
        ic_set_grad_enabled(G, 0);
    ic_val l;
    if (logits) {
        ic_val ls = log_sigmoid(t, x);
        if (pw >= 0) /* log_weight = (pos_weight - 1)·t + 1 */
            ls = ic_binary(G, IC_OP_MUL, ls, ic_binary(G, IC_OP_ADD, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, pw, sym_num(t, 1.0)), tg), sym_num(t, 1.0)));
        l = ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, sym_num(t, 1.0), tg), x), ls);
    } else { /* (t - 1)·max(log1p(-x), -100) - t·max(log(x), -100) */
        ic_val l1 = ic_binary(G, IC_OP_MAXIMUM, ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_NEG, x)), sym_num(t, -100.0));
        ic_val l0 = ic_binary(G, IC_OP_MAXIMUM, ic_unary(G, IC_OP_LOG, x), sym_num(t, -100.0));
        l = ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, tg, sym_num(t, 1.0)), l1),
                      ic_binary(G, IC_OP_MUL, tg, l0));
    }
    l = mul_opt(t, l, w);
    if (l >= 0 && ic_value_meta(G, l)->dtype != xm.dtype)
        l = ic_cast(G, l, xm.dtype);
    if (red != RED_NONE)
        l = ic_reduce(G, red == RED_SUM ? IC_OP_SUM : IC_OP_MEAN, l, 0, 0, -1);
    if (!train)
        return sym_tensor_out(t, l, out);
    ic_set_grad_enabled(G, 1);
    ic_val y = ic_custom_output(G, l);
    if (y < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: graph builder failed", d->name);
    /* the backward template: operands before `base` are forward values */
    int base = ic_graph_num_values(G), gin0 = ic_graph_num_inputs(G);
    ic_set_grad_enabled(G, 0);
    ic_meta gm = *ic_value_meta(G, y);
    int64_t st = 1;
    for (int i = gm.ndim - 1; i >= 0; i--) {
        gm.strides[i] = st;
        st *= gm.sizes[i] > 1 ? gm.sizes[i] : 1;
    }
    ic_val g = ic_input(G, &gm), ph = g;
    if (red != RED_NONE)
        g = ic_expand(G, red == RED_MEAN ? ic_binary(G, IC_OP_DIV, g, sym_num(t, (double)numel)) : g, xm.ndim, xm.sizes);
    ic_val gx, gt = -1;
    if (logits) {
        ic_val s = ic_unary(G, IC_OP_SIGMOID, x);
        if (pw >= 0) {
            ic_val pt = ic_binary(G, IC_OP_MUL, pw, tg);
            gx = ic_binary(G, IC_OP_SUB,
                           ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, ic_binary(G, IC_OP_ADD, pt, sym_num(t, 1.0)), tg), s), pt);
        } else {
            gx = ic_binary(G, IC_OP_SUB, s, tg);
        }
        if (need_t)
            gt = pw >= 0 ? ic_binary(G, IC_OP_SUB, log_sigmoid(t, ic_unary(G, IC_OP_NEG, x)),
                                     ic_binary(G, IC_OP_MUL, log_sigmoid(t, x), pw))
                         : ic_unary(G, IC_OP_NEG, x);
    } else {
        ic_val den = ic_binary(G, IC_OP_MAXIMUM, ic_binary(G, IC_OP_MUL, ic_binary(G, IC_OP_SUB, sym_num(t, 1.0), x), x),
                               sym_num(t, 1e-12));
        gx = ic_binary(G, IC_OP_DIV, ic_binary(G, IC_OP_SUB, x, tg), den);
        if (need_t) /* -logit(x) = log1p(-x) - log(x) */
            gt = ic_binary(G, IC_OP_SUB, ic_unary(G, IC_OP_LOG1P, ic_unary(G, IC_OP_NEG, x)), ic_unary(G, IC_OP_LOG, x));
    }
    gx = ic_binary(G, IC_OP_MUL, mul_opt(t, gx, w), g);
    if (gt != -1)
        gt = ic_binary(G, IC_OP_MUL, mul_opt(t, gt, w), g);
    ic_set_grad_enabled(G, 1);
    ic_val in[2] = {x, tg}, gin[2] = {gx, gt};
    if (gx < 0 || ic_custom_capture(G, base, gin0, 1, &y, &ph, need_t ? 2 : 1, in, gin) < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: backward template failed", d->name);
    return sym_tensor_out(t, y, out);
}

/* torch.broadcast_tensors(*tensors): each expanded to the common shape (views) */
int sym_h_broadcast_tensors(trace *t, const opdef *d, var **p, var *out) {
    const var *seq = p[0];
    if (seq == NULL || seq->kind != V_SEQ)
        return sym_fail(t, "%s: expected tensors", d->name);
    int n = seq->n, nd = 0;
    int64_t shp[IC_MAX_DIMS];
    var *items = sym_alloc(t, n + 1);
    if (items == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        items[i] = seq->items[i];
        sym_resolve(t, &items[i]);
        if (items[i].kind != V_TENSOR)
            return sym_fail(t, "%s of a non-tensor (eager will raise)", d->name);
        const ic_meta *m = sym_metap(t, items[i].val);
        if (m->dyn)
            return sym_fail(t, "%s of symbolic sizes not supported", d->name);
        if (m->ndim > nd) { /* the common shape, right-aligned */
            int k = m->ndim - nd;
            for (int j = nd - 1; j >= 0; j--)
                shp[j + k] = shp[j];
            for (int j = 0; j < k; j++)
                shp[j] = 1;
            nd = m->ndim;
        }
        for (int j = 0; j < m->ndim; j++) {
            int64_t s = m->sizes[m->ndim - 1 - j], *c = &shp[nd - 1 - j];
            if (s != 1 && *c != 1 && s != *c)
                return sym_fail(t, "%s: shapes do not broadcast (eager will raise)", d->name);
            if (*c == 1)
                *c = s;
        }
    }
    for (int i = 0; i < n; i++) {
        var in = items[i];
        PyObject *tup = PyTuple_New(nd);
        for (int j = 0; tup && j < nd; j++) {
            PyObject *o = PyLong_FromLongLong(shp[j]);
            if (o == NULL)
                Py_CLEAR(tup);
            else
                PyTuple_SET_ITEM(tup, j, o);
        }
        if (sym_view_out_desc(t, &in, ic_expand(G, in.val, nd, shp), &items[i], "expand",
                              tup ? Py_BuildValue("(N)", tup) : NULL) < 0)
            return -1;
    }
    *out = sym_var(V_SEQ);
    out->n = n;
    out->items = items;
    return 0;
}
