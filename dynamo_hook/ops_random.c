/* ops_random.c — random ops as graph nodes: torch.rand/randn/randint/randperm, the *_like
 * forms, bernoulli, multinomial, normal(mean, std, size) and the in-place fills uniform_,
 * normal_, random_, exponential_, bernoulli_. Each is one RANDOM extern (ATen's default generator, called
 * when the graph runs), made in program order and never dead-code eliminated (only a graph
 * break drops those of the instruction it reruns eagerly), so the graph consumes the
 * random stream as eager does: under one seed the values, and torch.get_rng_state() after
 * the call, equal eager's bit for bit. The tensor that ATen fills has eager's dtype, sizes
 * and strides (empty_like's for the *_like forms, self's for in-place fills): the order of
 * the draws follows the layout. A generator= argument other than None, and arguments eager
 * refuses, fall back to eager with a reason. */
#include "ops_internal.h"

/* layout, pin_memory and requires_grad as torch's defaults (None or False), out=None */
static int plain_extras(trace *t, const opdef *d, var **p, const int *idx, int n) {
    for (int i = 0; i < n; i++) {
        const var *v = idx[i] >= 0 ? p[idx[i]] : NULL;
        if (v == NULL || sym_is_none(v) || (v->kind == V_CONST && v->obj == Py_False))
            continue;
        if (v->kind == V_CONST && strcmp(Py_TYPE(v->obj)->tp_name, "torch.layout") == 0) {
            PyObject *s = PyObject_Str(v->obj);
            const char *u = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL; /* NULL: raised */
            int strided = u != NULL && strcmp(u, "torch.strided") == 0;
            Py_XDECREF(s);
            (void)tc_clear_expected(PyExc_Exception);
            if (strided)
                continue;
        }
        return sym_fail(t, "%s: layout/out/requires_grad/pin_memory arguments not supported yet", d->name);
    }
    return 0;
}

static int no_generator(trace *t, const opdef *d, const var *g) {
    if (g != NULL && !sym_is_none(g))
        return sym_fail(t, "%s with generator= (its own random stream) is left to eager", d->name);
    return 0;
}

/* the device a factory makes its tensor on: the graph's (CPU unless given) */
static int factory_device(trace *t, const opdef *d, const var *dev) {
    int dty = TC_DEV_CPU, dix = 0;
    if (dev != NULL && !sym_is_none(dev) && !sym_device_arg(dev, &dty, &dix))
        return sym_fail(t, "%s: unsupported device argument", d->name);
    return sym_same_device(t, dty, dix, d->name);
}

/* the RANDOM node: dist, dtype, i0, i1, sizes and (when not contiguous) the strides ATen
 * draws in; v is reported with those strides */
static int rnd_node(trace *t, int dist, int dtype, long long i0, long long i1, int nd, const int64_t *sz,
                    const int64_t *st, int nin, ic_val in, double a, double b, ic_val *res) {
    int64_t prm[IC_EXT_MAXP];
    int contig = 1;
    int64_t acc = 1;
    for (int i = nd - 1; i >= 0; i--) {
        if (st != NULL && sz[i] != 1 && st[i] != acc)
            contig = 0;
        acc *= sz[i];
    }
    if (!contig && 5 + 2 * nd > IC_EXT_MAXP)
        return sym_fail(t, "random fill of a non-contiguous %d-d tensor not supported yet", nd);
    prm[0] = dist;
    prm[1] = dtype;
    prm[2] = i0;
    prm[3] = i1;
    prm[4] = nd;
    for (int i = 0; i < nd; i++)
        prm[5 + i] = sz[i];
    if (!contig)
        for (int i = 0; i < nd; i++)
            prm[5 + nd + i] = st[i];
    ic_val v = ic_extern(G, IC_EXT_RANDOM, nin, &in, contig ? 5 + nd : 5 + 2 * nd, prm, a, b);
    if (v >= 0 && !contig)
        ic_value_set_strides(G, v, st);
    *res = v;
    return 0;
}

/* empty_like(x)'s strides (preserve_format) */
static void like_strides(trace *t, ic_val x, int64_t *st) {
    const ic_meta m = *sym_metap(t, x);
    ic_val z = ic_expand(G, ic_cast(G, ic_scalar(G, 0.0, IC_F64), m.dtype), m.ndim, m.sizes);
    if (z >= 0 && ic_value_set_format(G, z, x, IC_MF_PRESERVE) >= 0 && ic_value_strides(G, z, st) > 0)
        return;
    int64_t acc = 1;
    for (int i = m.ndim - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= m.sizes[i] > 1 ? m.sizes[i] : 1;
    }
}

/* eager's dropout mask of x (at::dropout: empty_like(x).bernoulli_(1 - p).div_(1 - p)): drawn
 * in empty_like(x)'s layout, so a permuted x (attention's output transposed back to
 * batch-first) takes the draws in eager's order; the strides travel as the extern's params */
ic_val sym_dropout_mask(trace *t, ic_val x, double p) {
    const ic_meta m = *sym_metap(t, x);
    int64_t st[IC_MAX_DIMS], acc = 1;
    like_strides(t, x, st);
    int contig = 1;
    for (int i = m.ndim - 1; i >= 0; i--) {
        if (m.sizes[i] != 1 && st[i] != acc)
            contig = 0;
        acc *= m.sizes[i];
    }
    ic_val v = ic_extern(G, IC_EXT_DROPOUT_MASK, 1, &x, contig || m.dyn ? 0 : m.ndim, st, p, 1.0);
    if (v >= 0 && !contig && !m.dyn)
        ic_value_set_strides(G, v, st);
    return v;
}

static int shape_of(trace *t, const var *size, int64_t *sz, int *nd) {
    long long s64[IC_MAX_DIMS];
    if (sym_get_shape_args(t, size, s64, nd, "size") < 0)
        return -1;
    for (int i = 0; i < *nd; i++) {
        if (s64[i] < 0)
            return sym_fail(t, "negative size (eager raises)");
        sz[i] = s64[i];
    }
    return 0;
}

static int float_dtype(trace *t, const opdef *d, const var *dtv, int *dt) {
    *dt = -1;
    if (dtv && sym_get_dtype(t, dtv, dt) < 0)
        return -1;
    if (*dt < 0 && (*dt = sym_default_dtype(t)) < 0)
        return -1;
    if (*dt < IC_F16)
        return sym_fail(t, "%s of an integer dtype (eager raises)", d->name);
    return 0;
}

/* torch.rand / randn(*size, *, generator, out, dtype, layout, device, pin_memory, requires_grad) */
int sym_h_rand(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {2, 4, 6, 7};
    int64_t sz[IC_MAX_DIMS];
    int nd = 0, dt;
    if (no_generator(t, d, p[1]) < 0 || plain_extras(t, d, p, extra, 4) < 0 || float_dtype(t, d, p[3], &dt) < 0 ||
        shape_of(t, p[0], sz, &nd) < 0 || factory_device(t, d, p[5]) < 0)
        return -1;
    ic_val v;
    if (rnd_node(t, d->op, dt, 0, 0, nd, sz, NULL, 0, -1, 0.0, 1.0, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* rand_like / randn_like(input, *, generator, dtype, layout, device, requires_grad, memory_format) */
int sym_h_rand_like(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {3, 5};
    if (sym_need_tensor(t, d, p[0]) < 0 || no_generator(t, d, p[1]) < 0 || plain_extras(t, d, p, extra, 2) < 0)
        return -1;
    if (!sym_is_none(p[6]))
        return sym_fail(t, "%s with memory_format= not supported yet", d->name);
    const ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn)
        return sym_fail(t, "%s on symbolic sizes not supported yet", d->name);
    int dt = -1;
    if (p[2] && sym_get_dtype(t, p[2], &dt) < 0)
        return -1;
    if (dt < 0)
        dt = m.dtype;
    if (d->op != IC_RND_RANDINT && dt < IC_F16)
        return sym_fail(t, "%s of an integer dtype (eager raises)", d->name);
    if (!sym_is_none(p[4])) {
        int dty, dix;
        if (!sym_device_arg(p[4], &dty, &dix))
            return sym_fail(t, "%s: unsupported device argument", d->name);
        if (sym_same_device(t, dty, dix, d->name) < 0)
            return -1;
    }
    int64_t st[IC_MAX_DIMS];
    like_strides(t, p[0]->val, st);
    ic_val v;
    if (rnd_node(t, d->op, dt, 0, 0, m.ndim, m.sizes, st, 0, -1, 0.0, 1.0, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* random_(from, to)'s range check: eager raises when from >= to or the range does not fit */
static int int_range(trace *t, const opdef *d, long long lo, long long hi, int dt) {
    if (lo >= hi)
        return sym_fail(t, "%s: low >= high (eager raises)", d->name);
    if (dt == IC_BOOL && (lo < 0 || hi > 2))
        return sym_fail(t, "%s: range outside bool (eager raises)", d->name);
    if (dt < IC_F16 && dt != IC_BOOL && dt != IC_I64) {
        static const double lim[][2] = {{0, 1}, {0, 255}, {-128, 127}, {-32768, 32767}, {-2147483648.0, 2147483647.0}};
        if ((double)lo < lim[dt][0] || (double)(hi - 1) > lim[dt][1])
            return sym_fail(t, "%s: range outside the dtype (eager raises)", d->name);
    }
    if (dt >= IC_F16 && (fabs((double)lo) > 9007199254740992.0 || fabs((double)hi) > 9007199254740992.0))
        return sym_fail(t, "%s: range past the float dtype's exact integers (left to eager)", d->name);
    return 0;
}

/* torch.randint(low=0, high, size, *, generator, out, dtype, layout, device, pin_memory,
 * requires_grad): randint(high, size) moves the arguments */
int sym_h_randint(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {4, 6, 8, 9};
    if (no_generator(t, d, p[3]) < 0 || plain_extras(t, d, p, extra, 4) < 0)
        return -1;
    var *lo = p[0], *hi = p[1], *size = p[2];
    if (size == NULL || sym_is_none(size)) { /* randint(high, size) */
        size = hi;
        hi = lo;
        lo = NULL;
    } else if (hi == NULL || sym_is_none(hi)) { /* randint(high, size=...) */
        hi = lo;
        lo = NULL;
    }
    long long l = 0, h;
    if (size == NULL || hi == NULL || sym_is_none(hi))
        return sym_fail(t, "randint: high and size are required");
    if ((lo && !sym_is_none(lo) && sym_get_int(t, lo, &l, "low") < 0) || sym_get_int(t, hi, &h, "high") < 0)
        return -1;
    int dt = IC_I64;
    if (p[5] && sym_get_dtype(t, p[5], &dt) < 0)
        return -1;
    if (dt < 0)
        dt = IC_I64;
    int64_t sz[IC_MAX_DIMS];
    int nd = 0;
    if (shape_of(t, size, sz, &nd) < 0 || factory_device(t, d, p[7]) < 0 || int_range(t, d, l, h, dt) < 0)
        return -1;
    ic_val v;
    if (rnd_node(t, IC_RND_RANDINT, dt, l, h, nd, sz, NULL, 0, -1, 0.0, 1.0, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* torch.randint_like(input, low=0, high, *, generator, dtype, layout, device, requires_grad,
 * memory_format) */
int sym_h_randint_like(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {5, 7};
    if (sym_need_tensor(t, d, p[0]) < 0 || no_generator(t, d, p[3]) < 0 || plain_extras(t, d, p, extra, 2) < 0)
        return -1;
    if (!sym_is_none(p[8]))
        return sym_fail(t, "%s with memory_format= not supported yet", d->name);
    var *lo = p[1], *hi = p[2];
    if (hi == NULL || sym_is_none(hi)) {
        hi = lo;
        lo = NULL;
    }
    long long l = 0, h;
    if (hi == NULL || sym_is_none(hi))
        return sym_fail(t, "randint_like: high is required");
    if ((lo && !sym_is_none(lo) && sym_get_int(t, lo, &l, "low") < 0) || sym_get_int(t, hi, &h, "high") < 0)
        return -1;
    const ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn)
        return sym_fail(t, "%s on symbolic sizes not supported yet", d->name);
    int dt = -1;
    if (p[4] && sym_get_dtype(t, p[4], &dt) < 0)
        return -1;
    if (dt < 0)
        dt = m.dtype;
    if (!sym_is_none(p[6]))
        return sym_fail(t, "%s with device= not supported yet", d->name);
    if (int_range(t, d, l, h, dt) < 0)
        return -1;
    int64_t st[IC_MAX_DIMS];
    like_strides(t, p[0]->val, st);
    ic_val v;
    if (rnd_node(t, IC_RND_RANDINT, dt, l, h, m.ndim, m.sizes, st, 0, -1, 0.0, 1.0, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* torch.randperm(n, *, generator, out, dtype=int64, layout, device, pin_memory, requires_grad) */
int sym_h_randperm(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {2, 4, 6, 7};
    long long n;
    if (no_generator(t, d, p[1]) < 0 || plain_extras(t, d, p, extra, 4) < 0 || sym_get_int(t, p[0], &n, "n") < 0)
        return -1;
    if (n < 0)
        return sym_fail(t, "randperm of a negative n (eager raises)");
    int dt = IC_I64;
    if (p[3] && sym_get_dtype(t, p[3], &dt) < 0)
        return -1;
    if (dt < 0)
        dt = IC_I64;
    if (dt != IC_I64 && dt != IC_I32)
        return sym_fail(t, "randperm with dtype other than int64/int32 not supported yet");
    if (dt == IC_I32 && n > 2147483647LL)
        return sym_fail(t, "randperm: n past int32 (eager raises)");
    if (factory_device(t, d, p[5]) < 0)
        return -1;
    int64_t sz[1] = {n};
    ic_val v;
    if (rnd_node(t, IC_RND_RANDPERM, dt, 0, 0, 1, sz, NULL, 0, -1, 0.0, 1.0, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* torch.bernoulli(input, p=None, *, generator) and Tensor.bernoulli(p, *, generator): a new
 * tensor like input, drawn with probability p (a number) or input's own elements */
int sym_h_bernoulli(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {3};
    if (sym_need_tensor(t, d, p[0]) < 0 || no_generator(t, d, p[2]) < 0 || plain_extras(t, d, p, extra, 1) < 0)
        return -1;
    const ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn)
        return sym_fail(t, "bernoulli on symbolic sizes not supported yet");
    if (m.dtype < IC_F16)
        return sym_fail(t, "bernoulli of an integer tensor not supported yet");
    int64_t st[IC_MAX_DIMS];
    like_strides(t, p[0]->val, st);
    ic_val v;
    if (p[1] != NULL && !sym_is_none(p[1])) {
        double pr;
        if (!sym_is_number(p[1]))
            return sym_fail(t, "bernoulli with a tensor p not supported yet");
        if (sym_opt_num(t, p[1], 0.5, &pr, "p") < 0)
            return -1;
        if (!(pr >= 0 && pr <= 1))
            return sym_fail(t, "bernoulli: p outside [0, 1] (eager raises)");
        if (rnd_node(t, IC_RND_BERNOULLI, m.dtype, 0, 0, m.ndim, m.sizes, st, 0, -1, pr, 1.0, &v) < 0)
            return -1;
    } else if (rnd_node(t, IC_RND_BERNOULLI_T, m.dtype, 0, 0, m.ndim, m.sizes, st, 1, p[0]->val, 0.0, 1.0, &v) < 0) {
        return -1;
    }
    return sym_tensor_out(t, v, out);
}

/* torch.multinomial(input, num_samples, replacement=False, *, generator) */
int sym_h_multinomial(trace *t, const opdef *d, var **p, var *out) {
    long long n;
    int repl = 0;
    static const int extra[] = {4};
    if (sym_need_tensor(t, d, p[0]) < 0 || no_generator(t, d, p[3]) < 0 || plain_extras(t, d, p, extra, 1) < 0 ||
        sym_get_int(t, p[1], &n, "num_samples") < 0 ||
        sym_get_bool(t, p[2], 0, &repl, "replacement") < 0)
        return -1;
    const ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn || m.ndim < 1 || m.ndim > 2 || m.dtype < IC_F16)
        return sym_fail(t, "multinomial of a %d-d, symbolic or integer tensor is left to eager", m.ndim);
    const int64_t cats = m.sizes[m.ndim - 1];
    if (n <= 0 || cats == 0 || (!repl && n > cats))
        return sym_fail(t, "multinomial: num_samples out of range (eager raises)");
    /* eager checks the probabilities (non-negative, finite, a positive sum) when it runs; an
     * invalid row would make the graph raise where eager raises too */
    int64_t sz[2] = {m.sizes[0], n};
    if (m.ndim == 1)
        sz[0] = n;
    ic_val v;
    if (rnd_node(t, IC_RND_MULTINOMIAL, IC_I64, n, repl, m.ndim, sz, NULL, 1, p[0]->val, 0.0, 1.0, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* torch.normal(mean: number, std: number, size, *, generator, out, dtype, layout, device,
 * pin_memory, requires_grad); tensor means/stds are left to eager */
int sym_h_normal(trace *t, const opdef *d, var **p, var *out) {
    static const int extra[] = {4, 6, 8, 9};
    if (!sym_is_number(p[0]) || !sym_is_number(p[1]) || p[2] == NULL || sym_is_none(p[2]))
        return sym_fail(t, "torch.normal with tensor mean/std (or no size) not supported yet");
    double mean, sd;
    int64_t sz[IC_MAX_DIMS];
    int nd = 0, dt;
    if (no_generator(t, d, p[3]) < 0 || plain_extras(t, d, p, extra, 4) < 0 || sym_opt_num(t, p[0], 0, &mean, "mean") < 0 ||
        sym_opt_num(t, p[1], 1, &sd, "std") < 0 || float_dtype(t, d, p[5], &dt) < 0 || shape_of(t, p[2], sz, &nd) < 0 ||
        factory_device(t, d, p[7]) < 0)
        return -1;
    if (!(sd >= 0))
        return sym_fail(t, "normal: std < 0 (eager raises)");
    ic_val v;
    if (rnd_node(t, IC_RND_NORMAL, dt, 0, 0, nd, sz, NULL, 0, -1, mean, sd, &v) < 0)
        return -1;
    return sym_tensor_out(t, v, out);
}

/* in place: uniform_(from=0, to=1), normal_(mean=0, std=1), random_(from, to) / random_(to),
 * exponential_(lambd=1), bernoulli_(p=0.5) (a number or a tensor of probabilities); self's dtype, sizes and strides */
int sym_h_random_(trace *t, const opdef *d, var **p, var *out) {
    if (sym_need_tensor(t, d, p[0]) < 0 ||
        no_generator(t, d, p[d->op == IC_RND_BERNOULLI || d->op == IC_RND_EXPONENTIAL ? 2 : 3]) < 0)
        return -1;
    const ic_meta m = *sym_metap(t, p[0]->val);
    if (m.dyn)
        return sym_fail(t, "%s on symbolic sizes not supported yet", d->name);
    int64_t st[IC_MAX_DIMS];
    if (!sym_eager_strides(t, p[0]->val, st))
        return sym_fail(t, "%s: strides of self unknown", d->name);
    double a = 0, b = 1;
    long long lo = 0, hi = 0;
    int dist = d->op, nin = 0;
    ic_val pin = -1;
    switch (dist) {
    case IC_RND_UNIFORM:
    case IC_RND_NORMAL:
        if (m.dtype < IC_F16)
            return sym_fail(t, "%s of an integer tensor (eager raises)", d->name);
        if (sym_opt_num(t, p[1], 0, &a, "a") < 0 || sym_opt_num(t, p[2], 1, &b, "b") < 0)
            return -1;
        if (dist == IC_RND_UNIFORM && !(a <= b))
            return sym_fail(t, "uniform_: from > to (eager raises)");
        if (dist == IC_RND_NORMAL && !(b >= 0))
            return sym_fail(t, "normal_: std < 0 (eager raises)");
        break;
    case IC_RND_EXPONENTIAL:
        if (m.dtype < IC_F16)
            return sym_fail(t, "%s of an integer tensor (eager raises)", d->name);
        if (sym_opt_num(t, p[1], 1, &a, "lambd") < 0)
            return -1;
        if (!(a > 0))
            return sym_fail(t, "exponential_: lambd <= 0 (eager raises)");
        break;
    case IC_RND_RANDINT:
        if (p[1] == NULL || sym_is_none(p[1]))
            return sym_fail(t, "random_() over the dtype's whole range not supported yet");
        if (p[2] == NULL || sym_is_none(p[2])) {
            if (sym_get_int(t, p[1], &hi, "to") < 0)
                return -1;
        } else if (sym_get_int(t, p[1], &lo, "from") < 0 || sym_get_int(t, p[2], &hi, "to") < 0) {
            return -1;
        }
        if (int_range(t, d, lo, hi, m.dtype) < 0)
            return -1;
        break;
    default: /* bernoulli_ */
        if (p[1] != NULL && p[1]->kind == V_TENSOR) {
            const ic_meta *pm = sym_metap(t, p[1]->val);
            if (pm->dyn || pm->dtype < IC_F16)
                return sym_fail(t, "bernoulli_ with integer or symbolic probabilities not supported yet");
            int64_t sz[IC_MAX_DIMS];
            for (int i = 0; i < m.ndim; i++)
                sz[i] = m.sizes[i];
            if (pm->ndim > m.ndim)
                return sym_fail(t, "bernoulli_: p does not broadcast to self (eager raises)");
            pin = ic_expand(G, p[1]->val, m.ndim, sz); /* eager expands p to self's shape */
            if (pin < 0)
                return sym_fail(t, "bernoulli_: p does not broadcast to self (eager raises)");
            dist = IC_RND_BERNOULLI_T;
            nin = 1;
        } else {
            if (sym_opt_num(t, p[1], 0.5, &a, "p") < 0)
                return -1;
            if (!(a >= 0 && a <= 1))
                return sym_fail(t, "bernoulli_: p outside [0, 1] (eager raises)");
        }
        if (m.dtype < IC_F16 && m.dtype != IC_BOOL && dist == IC_RND_BERNOULLI_T)
            return sym_fail(t, "bernoulli_ of an integer tensor with tensor p not supported yet");
        break;
    }
    ic_val v;
    if (rnd_node(t, dist, m.dtype, lo, hi, m.ndim, m.sizes, st, nin, pin, a, b, &v) < 0)
        return -1;
    if (v < 0)
        return sym_fail(t, "%s: %s", d->name, ic_graph_error(G) ? ic_graph_error(G) : "graph error");
    if (sym_mutate(t, p[0], v) < 0)
        return -1;
    *out = *p[0];
    sym_resolve(t, out);
    return 0;
}
