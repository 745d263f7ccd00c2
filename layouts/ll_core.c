/* ll_core.c - the layout type: dims, builders, structural operations
 * (product, reshape, transpose, flatten, sublayout, concat), application,
 * equality and printing.
 *
 * Contract: every function validates its arguments and either writes a
 * well-formed layout (dims unique, shifts consistent, bases within the out
 * bits) and returns LL_OK, or leaves the result untouched and returns a
 * negative ll_status.  Results are computed in a local and copied at the end,
 * so a result may alias an argument.  No allocation. */
#include "ll_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ll_strerror(int status) {
    switch (status) {
    case LL_OK: return "ok";
    case LL_EINVAL: return "invalid argument";
    case LL_ESIZE: return "size is not a power of two or exceeds 64 bits / 8 dims";
    case LL_EDIM: return "unknown, duplicate or invalid dimension name";
    case LL_EMISMATCH: return "the dimensions of the layouts do not match";
    case LL_ENOSOLUTION: return "no solution: layout not invertible or not surjective onto the target";
    case LL_ENOTDIV: return "the layout does not divide exactly";
    case LL_ESPACE: return "buffer too small";
    }
    return "unknown status";
}

/* ---- dims -------------------------------------------------------------- */

bool llx_name_ok(const char *name) {
    if (!name || !name[0]) return false;
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_';
        if (!ok || n >= LL_NAME_MAX) return false;
    }
    return true;
}

void llx_fix_shifts(ll_layout *L) {
    int s = 0;
    for (int i = 0; i < L->n_in; i++) { L->in[i].shift = (uint8_t)s; s += L->in[i].log2; }
    L->in_bits = (uint8_t)s;
    for (int k = s; k < LL_MAX_BITS; k++) L->basis[k] = 0; /* no stale bases above in_bits */
    s = 0;
    for (int i = 0; i < L->n_out; i++) { L->out[i].shift = (uint8_t)s; s += L->out[i].log2; }
    L->out_bits = (uint8_t)s;
}

void llx_dim_name(char *buf, int i) { snprintf(buf, LL_NAME_MAX + 1, "dim%d", i); }

void ll_empty(ll_layout *L) { memset(L, 0, sizeof *L); }

static int find_dim(const ll_dim *d, int n, const char *name) {
    if (!name) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(d[i].name, name) == 0) return i;
    return -1;
}
int ll_find_in(const ll_layout *L, const char *name) { return find_dim(L->in, L->n_in, name); }
int ll_find_out(const ll_layout *L, const char *name) { return find_dim(L->out, L->n_out, name); }

static void set_name(ll_dim *d, const char *name) {
    memset(d->name, 0, sizeof d->name);
    memcpy(d->name, name, strlen(name));
}

int ll_add_in_dim(ll_layout *L, const char *name, int log2) {
    if (!L) return LL_EINVAL;
    if (!llx_name_ok(name) || ll_find_in(L, name) >= 0) return LL_EDIM;
    if (log2 < 0 || L->n_in >= LL_MAX_DIMS || L->in_bits + log2 > LL_MAX_BITS) return LL_ESIZE;
    ll_dim *d = &L->in[L->n_in++];
    set_name(d, name);
    d->log2 = (uint8_t)log2;
    d->shift = L->in_bits;
    for (int k = 0; k < log2; k++) L->basis[L->in_bits + k] = 0;
    L->in_bits = (uint8_t)(L->in_bits + log2);
    return LL_OK;
}

int ll_add_out_dim(ll_layout *L, const char *name, int log2) {
    if (!L) return LL_EINVAL;
    if (!llx_name_ok(name) || ll_find_out(L, name) >= 0) return LL_EDIM;
    if (log2 < 0 || L->n_out >= LL_MAX_DIMS || L->out_bits + log2 > LL_MAX_BITS) return LL_ESIZE;
    ll_dim *d = &L->out[L->n_out++];
    set_name(d, name);
    d->log2 = (uint8_t)log2;
    d->shift = L->out_bits;
    L->out_bits = (uint8_t)(L->out_bits + log2);
    return LL_OK;
}

int ll_set_basis(ll_layout *L, int in, int bit, const uint64_t *vals) {
    if (!L || !vals || in < 0 || in >= L->n_in || bit < 0 || bit >= L->in[in].log2)
        return LL_EINVAL;
    uint64_t v = 0;
    for (int o = 0; o < L->n_out; o++) {
        if (vals[o] >> L->out[o].log2) return LL_ESIZE;
        v |= vals[o] << L->out[o].shift;
    }
    L->basis[L->in[in].shift + bit] = v;
    return LL_OK;
}

uint64_t ll_get_basis(const ll_layout *L, int in, int bit, int out) {
    if (in < 0 || in >= L->n_in || bit < 0 || bit >= L->in[in].log2 || out < 0 ||
        out >= L->n_out)
        return 0;
    return (L->basis[L->in[in].shift + bit] >> L->out[out].shift) & llx_low(L->out[out].log2);
}

uint64_t ll_in_mask(const ll_layout *L, int i) {
    return llx_low(L->in[i].log2) << L->in[i].shift;
}
uint64_t ll_out_mask(const ll_layout *L, int i) {
    return llx_low(L->out[i].log2) << L->out[i].shift;
}

static int size_log2(uint64_t size) {
    if (!llx_is_pow2(size)) return -1;
    return llx_log2(size);
}

int ll_identity1d(ll_layout *L, uint64_t size, const char *in, const char *out) {
    int lg = size_log2(size);
    if (!L) return LL_EINVAL;
    if (lg < 0) return LL_ESIZE;
    ll_layout t;
    ll_empty(&t);
    int rc = ll_add_in_dim(&t, in, lg);
    if (!rc) rc = ll_add_out_dim(&t, out, lg);
    if (rc) return rc;
    for (int k = 0; k < lg; k++) t.basis[k] = (uint64_t)1 << k;
    *L = t;
    return LL_OK;
}

int ll_zeros1d(ll_layout *L, uint64_t size, const char *in, const char *out, uint64_t out_size) {
    int lg = size_log2(size), lo = size_log2(out_size);
    if (!L) return LL_EINVAL;
    if (lg < 0 || lo < 0) return LL_ESIZE;
    ll_layout t;
    ll_empty(&t);
    int rc = ll_add_in_dim(&t, in, lg);
    if (!rc) rc = ll_add_out_dim(&t, out, lo);
    if (rc) return rc;
    *L = t;
    return LL_OK;
}

int ll_strided1d(ll_layout *L, uint64_t size, uint64_t stride, const char *in, const char *out) {
    int lg = size_log2(size), ls = size_log2(stride);
    if (!L) return LL_EINVAL;
    if (lg < 0 || ls < 0 || lg + ls > LL_MAX_BITS) return LL_ESIZE;
    ll_layout t;
    ll_empty(&t);
    int rc = ll_add_in_dim(&t, in, lg);
    if (!rc) rc = ll_add_out_dim(&t, out, lg + ls);
    if (rc) return rc;
    for (int k = 0; k < lg; k++) t.basis[k] = (uint64_t)1 << (k + ls);
    *L = t;
    return LL_OK;
}

/* Validates order as a permutation of 0..rank-1. */
static bool order_ok(int rank, const int *order) {
    unsigned seen = 0;
    for (int i = 0; i < rank; i++) {
        if (order[i] < 0 || order[i] >= rank || (seen >> order[i] & 1)) return false;
        seen |= 1u << order[i];
    }
    return true;
}

int ll_identity_nd(ll_layout *L, const char *in, int rank, const int64_t *shape, const int *order) {
    if (!L || !shape || !order || rank < 0 || rank > LL_MAX_DIMS) return LL_EINVAL;
    if (!order_ok(rank, order)) return LL_EINVAL;
    ll_layout t, f;
    ll_empty(&t);
    char names[LL_MAX_DIMS][LL_NAME_MAX + 1];
    const char *std[LL_MAX_DIMS];
    for (int i = 0; i < rank; i++) { llx_dim_name(names[i], i); std[i] = names[i]; }
    for (int i = 0; i < rank; i++) {
        int d = order[i];
        if (shape[d] <= 0) return LL_ESIZE;
        int rc = ll_identity1d(&f, (uint64_t)shape[d], in, names[d]);
        if (!rc) rc = ll_product(&t, &t, &f);
        if (rc) return rc;
    }
    if (rank == 0) {
        int rc = ll_add_in_dim(&t, in, 0);
        if (rc) return rc;
    }
    int rc = ll_transpose_outs(&t, &t, rank, std);
    if (rc) return rc;
    *L = t;
    return LL_OK;
}

/* ---- application ------------------------------------------------------- */

uint64_t ll_pack_in(const ll_layout *L, const uint64_t *idx) {
    uint64_t x = 0;
    for (int i = 0; i < L->n_in; i++) x |= (idx[i] & llx_low(L->in[i].log2)) << L->in[i].shift;
    return x;
}
uint64_t ll_pack_out(const ll_layout *L, const uint64_t *idx) {
    uint64_t x = 0;
    for (int i = 0; i < L->n_out; i++) x |= (idx[i] & llx_low(L->out[i].log2)) << L->out[i].shift;
    return x;
}
void ll_unpack_out(const ll_layout *L, uint64_t flat, uint64_t *out) {
    for (int i = 0; i < L->n_out; i++) out[i] = (flat >> L->out[i].shift) & llx_low(L->out[i].log2);
}
void ll_unpack_in(const ll_layout *L, uint64_t flat, uint64_t *in) {
    for (int i = 0; i < L->n_in; i++) in[i] = (flat >> L->in[i].shift) & llx_low(L->in[i].log2);
}

int ll_apply(const ll_layout *L, const uint64_t *in, uint64_t *out) {
    if (!L || (!in && L->n_in) || (!out && L->n_out)) return LL_EINVAL;
    for (int i = 0; i < L->n_in; i++)
        if (in[i] >> L->in[i].log2) return LL_ESIZE;
    ll_unpack_out(L, ll_apply_flat(L, ll_pack_in(L, in)), out);
    return LL_OK;
}

bool ll_equal(const ll_layout *a, const ll_layout *b) {
    if (a->n_in != b->n_in || a->n_out != b->n_out || a->in_bits != b->in_bits ||
        a->out_bits != b->out_bits)
        return false;
    for (int i = 0; i < a->n_in; i++)
        if (strcmp(a->in[i].name, b->in[i].name) || a->in[i].log2 != b->in[i].log2) return false;
    for (int i = 0; i < a->n_out; i++)
        if (strcmp(a->out[i].name, b->out[i].name) || a->out[i].log2 != b->out[i].log2)
            return false;
    for (int k = 0; k < a->in_bits; k++)
        if (a->basis[k] != b->basis[k]) return false;
    return true;
}

bool llx_move_out(const ll_layout *s, uint64_t v, const ll_layout *d, const int *shift_extra,
                  uint64_t *res) {
    uint64_t r = 0;
    for (int o = 0; o < s->n_out; o++) {
        uint64_t part = (v >> s->out[o].shift) & llx_low(s->out[o].log2);
        if (!part) continue;
        int j = ll_find_out(d, s->out[o].name);
        if (j < 0) return false;
        int sh = shift_extra ? shift_extra[o] : 0;
        if ((part << sh) >> d->out[j].log2) return false;
        r |= part << (d->out[j].shift + sh);
    }
    *res = r;
    return true;
}

/* ---- product ------------------------------------------------------------ */

/* Dims common to a and b must appear in the same relative order. */
static bool common_same_order(const ll_dim *a, int na, const ll_dim *b, int nb) {
    int last = -1;
    for (int i = 0; i < na; i++) {
        int j = find_dim(b, nb, a[i].name);
        if (j < 0) continue;
        if (j < last) return false;
        last = j;
    }
    return true;
}

int ll_product(ll_layout *R, const ll_layout *a, const ll_layout *b) {
    if (!R || !a || !b) return LL_EINVAL;
    if (!common_same_order(a->in, a->n_in, b->in, b->n_in) ||
        !common_same_order(a->out, a->n_out, b->out, b->n_out))
        return LL_EMISMATCH;
    ll_layout t;
    ll_empty(&t);
    /* Dims: a's in order, then b's new ones; sizes add. */
    const ll_layout *src[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < src[s]->n_in; i++) {
            const ll_dim *d = &src[s]->in[i];
            int j = ll_find_in(&t, d->name);
            if (j < 0) {
                if (t.n_in >= LL_MAX_DIMS) return LL_ESIZE;
                j = t.n_in++;
                set_name(&t.in[j], d->name);
                t.in[j].log2 = 0;
            }
            if (t.in[j].log2 + d->log2 > LL_MAX_BITS) return LL_ESIZE;
            t.in[j].log2 = (uint8_t)(t.in[j].log2 + d->log2);
        }
        for (int i = 0; i < src[s]->n_out; i++) {
            const ll_dim *d = &src[s]->out[i];
            int j = ll_find_out(&t, d->name);
            if (j < 0) {
                if (t.n_out >= LL_MAX_DIMS) return LL_ESIZE;
                j = t.n_out++;
                set_name(&t.out[j], d->name);
                t.out[j].log2 = 0;
            }
            if (t.out[j].log2 + d->log2 > LL_MAX_BITS) return LL_ESIZE;
            t.out[j].log2 = (uint8_t)(t.out[j].log2 + d->log2);
        }
    }
    int ib = 0, ob = 0;
    for (int i = 0; i < t.n_in; i++) ib += t.in[i].log2;
    for (int i = 0; i < t.n_out; i++) ob += t.out[i].log2;
    if (ib > LL_MAX_BITS || ob > LL_MAX_BITS) return LL_ESIZE;
    llx_fix_shifts(&t);
    /* b's outputs sit above a's in shared out dims. */
    int extra[LL_MAX_DIMS];
    for (int o = 0; o < b->n_out; o++) {
        int j = ll_find_out(a, b->out[o].name);
        extra[o] = j < 0 ? 0 : a->out[j].log2;
    }
    for (int i = 0; i < t.n_in; i++) {
        int ia = ll_find_in(a, t.in[i].name), jb = ll_find_in(b, t.in[i].name);
        int k = t.in[i].shift;
        if (ia >= 0)
            for (int q = 0; q < a->in[ia].log2; q++)
                llx_move_out(a, a->basis[a->in[ia].shift + q], &t, NULL, &t.basis[k++]);
        if (jb >= 0)
            for (int q = 0; q < b->in[jb].log2; q++)
                llx_move_out(b, b->basis[b->in[jb].shift + q], &t, extra, &t.basis[k++]);
    }
    *R = t;
    return LL_OK;
}

/* ---- reshape / transpose / flatten -------------------------------------- */

static int fill_dims(ll_dim *dims, uint8_t *n, int cnt, const char *const *names, const int *log2s,
                     int total) {
    if (cnt < 0 || cnt > LL_MAX_DIMS || (cnt && (!names || !log2s))) return LL_EINVAL;
    int sum = 0;
    for (int i = 0; i < cnt; i++) {
        if (!llx_name_ok(names[i])) return LL_EDIM;
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) return LL_EDIM;
        if (log2s[i] < 0 || log2s[i] > LL_MAX_BITS) return LL_ESIZE;
        sum += log2s[i];
    }
    if (sum != total) return LL_EMISMATCH;
    for (int i = 0; i < cnt; i++) {
        set_name(&dims[i], names[i]);
        dims[i].log2 = (uint8_t)log2s[i];
    }
    *n = (uint8_t)cnt;
    return LL_OK;
}

int ll_reshape_ins(ll_layout *R, const ll_layout *a, int n, const char *const *names,
                   const int *log2s) {
    if (!R || !a) return LL_EINVAL;
    ll_layout t = *a;
    int rc = fill_dims(t.in, &t.n_in, n, names, log2s, a->in_bits);
    if (rc) return rc;
    llx_fix_shifts(&t);
    *R = t;
    return LL_OK;
}

int ll_reshape_outs(ll_layout *R, const ll_layout *a, int n, const char *const *names,
                    const int *log2s) {
    if (!R || !a) return LL_EINVAL;
    ll_layout t = *a;
    int rc = fill_dims(t.out, &t.n_out, n, names, log2s, a->out_bits);
    if (rc) return rc;
    llx_fix_shifts(&t);
    *R = t;
    return LL_OK;
}

/* perm[i] = index in `dims` of names[i]; checks it is a permutation. */
static int permutation(const ll_dim *dims, int nd, int n, const char *const *names, int *perm) {
    if (n != nd || (n && !names)) return LL_EMISMATCH;
    unsigned seen = 0;
    for (int i = 0; i < n; i++) {
        int j = find_dim(dims, nd, names[i]);
        if (j < 0 || (seen >> j & 1)) return LL_EDIM;
        seen |= 1u << j;
        perm[i] = j;
    }
    return LL_OK;
}

int ll_transpose_ins(ll_layout *R, const ll_layout *a, int n, const char *const *names) {
    if (!R || !a) return LL_EINVAL;
    int perm[LL_MAX_DIMS];
    int rc = permutation(a->in, a->n_in, n, names, perm);
    if (rc) return rc;
    ll_layout t = *a;
    for (int i = 0; i < n; i++) t.in[i] = a->in[perm[i]];
    llx_fix_shifts(&t);
    for (int i = 0; i < n; i++)
        for (int q = 0; q < t.in[i].log2; q++)
            t.basis[t.in[i].shift + q] = a->basis[a->in[perm[i]].shift + q];
    *R = t;
    return LL_OK;
}

int ll_transpose_outs(ll_layout *R, const ll_layout *a, int n, const char *const *names) {
    if (!R || !a) return LL_EINVAL;
    int perm[LL_MAX_DIMS];
    int rc = permutation(a->out, a->n_out, n, names, perm);
    if (rc) return rc;
    ll_layout t = *a;
    for (int i = 0; i < n; i++) t.out[i] = a->out[perm[i]];
    llx_fix_shifts(&t);
    for (int k = 0; k < a->in_bits; k++) llx_move_out(a, a->basis[k], &t, NULL, &t.basis[k]);
    *R = t;
    return LL_OK;
}

int ll_flatten_ins(ll_layout *R, const ll_layout *a) {
    if (!R || !a) return LL_EINVAL;
    if (a->n_in == 0) { *R = *a; return LL_OK; }
    const char *nm = a->in[0].name;
    int lg = a->in_bits;
    return ll_reshape_ins(R, a, 1, &nm, &lg);
}

int ll_flatten_outs(ll_layout *R, const ll_layout *a) {
    if (!R || !a) return LL_EINVAL;
    if (a->n_out == 0) { *R = *a; return LL_OK; }
    const char *nm = a->out[0].name;
    int lg = a->out_bits;
    return ll_reshape_outs(R, a, 1, &nm, &lg);
}

/* ---- sublayout / concat ------------------------------------------------- */

static int subset_mask(const ll_dim *dims, int nd, int n, const char *const *names, unsigned *mask) {
    if (n < 0 || (n && !names)) return LL_EINVAL;
    *mask = 0;
    for (int i = 0; i < n; i++) {
        int j = find_dim(dims, nd, names[i]);
        if (j < 0) return LL_EDIM;
        *mask |= 1u << j;
    }
    return LL_OK;
}

/* Keep the in dims in `im` and out dims in `om` (bit masks of dim indices). */
static void keep_dims(ll_layout *t, const ll_layout *a, unsigned im, unsigned om) {
    ll_empty(t);
    for (int i = 0; i < a->n_out; i++)
        if (om >> i & 1) t->out[t->n_out++] = a->out[i];
    for (int i = 0; i < a->n_in; i++)
        if (im >> i & 1) t->in[t->n_in++] = a->in[i];
    llx_fix_shifts(t);
    uint64_t keep = 0;
    for (int i = 0; i < a->n_out; i++)
        if (om >> i & 1) keep |= ll_out_mask(a, i);
    int k = 0;
    for (int i = 0; i < a->n_in; i++) {
        if (!(im >> i & 1)) continue;
        for (int q = 0; q < a->in[i].log2; q++)
            llx_move_out(a, a->basis[a->in[i].shift + q] & keep, t, NULL, &t->basis[k++]);
    }
}

int ll_sublayout(ll_layout *R, const ll_layout *a, int n_in, const char *const *ins, int n_out,
                 const char *const *outs) {
    if (!R || !a) return LL_EINVAL;
    unsigned im, om;
    int rc = subset_mask(a->in, a->n_in, n_in, ins, &im);
    if (!rc) rc = subset_mask(a->out, a->n_out, n_out, outs, &om);
    if (rc) return rc;
    ll_layout t;
    keep_dims(&t, a, im, om);
    *R = t;
    return LL_OK;
}

/* Same set of dims with the same sizes (any order). */
static bool same_dims(const ll_dim *a, int na, const ll_dim *b, int nb) {
    if (na != nb) return false;
    for (int i = 0; i < na; i++) {
        int j = find_dim(b, nb, a[i].name);
        if (j < 0 || b[j].log2 != a[i].log2) return false;
    }
    return true;
}

int ll_concat_ins(ll_layout *R, const ll_layout *a, const ll_layout *b) {
    if (!R || !a || !b) return LL_EINVAL;
    if (!same_dims(a->out, a->n_out, b->out, b->n_out)) return LL_EMISMATCH;
    for (int i = 0; i < b->n_in; i++)
        if (ll_find_in(a, b->in[i].name) >= 0) return LL_EDIM;
    if (a->n_in + b->n_in > LL_MAX_DIMS || a->in_bits + b->in_bits > LL_MAX_BITS) return LL_ESIZE;
    ll_layout t = *a;
    for (int i = 0; i < b->n_in; i++) t.in[t.n_in++] = b->in[i];
    llx_fix_shifts(&t);
    for (int k = 0; k < b->in_bits; k++)
        llx_move_out(b, b->basis[k], &t, NULL, &t.basis[a->in_bits + k]);
    *R = t;
    return LL_OK;
}

int ll_concat_outs(ll_layout *R, const ll_layout *a, const ll_layout *b) {
    if (!R || !a || !b) return LL_EINVAL;
    if (!same_dims(a->in, a->n_in, b->in, b->n_in)) return LL_EMISMATCH;
    for (int i = 0; i < b->n_out; i++)
        if (ll_find_out(a, b->out[i].name) >= 0) return LL_EDIM;
    if (a->n_out + b->n_out > LL_MAX_DIMS || a->out_bits + b->out_bits > LL_MAX_BITS)
        return LL_ESIZE;
    ll_layout t = *a;
    for (int i = 0; i < b->n_out; i++) t.out[t.n_out++] = b->out[i];
    llx_fix_shifts(&t);
    for (int i = 0; i < a->n_in; i++) {
        int j = ll_find_in(b, a->in[i].name);
        for (int q = 0; q < a->in[i].log2; q++)
            t.basis[a->in[i].shift + q] |= b->basis[b->in[j].shift + q] << a->out_bits;
    }
    *R = t;
    return LL_OK;
}

int ll_resize_in(ll_layout *R, const ll_layout *a, const char *name, int log2) {
    if (!R || !a) return LL_EINVAL;
    int i = ll_find_in(a, name);
    if (i < 0) return LL_EDIM;
    if (log2 < 0 || a->in_bits - a->in[i].log2 + log2 > LL_MAX_BITS) return LL_ESIZE;
    ll_layout t = *a;
    t.in[i].log2 = (uint8_t)log2;
    llx_fix_shifts(&t);
    for (int j = 0; j < t.n_in; j++)
        for (int q = 0; q < t.in[j].log2; q++)
            t.basis[t.in[j].shift + q] =
                q < a->in[j].log2 ? a->basis[a->in[j].shift + q] : 0;
    *R = t;
    return LL_OK;
}

int ll_remove_zero_bases(ll_layout *R, const ll_layout *a, const char *name) {
    if (!R || !a) return LL_EINVAL;
    int i = ll_find_in(a, name);
    if (i < 0) return LL_EDIM;
    ll_layout t = *a;
    int n = 0;
    uint64_t kept[LL_MAX_BITS];
    for (int q = 0; q < a->in[i].log2; q++)
        if (a->basis[a->in[i].shift + q]) kept[n++] = a->basis[a->in[i].shift + q];
    t.in[i].log2 = (uint8_t)n;
    llx_fix_shifts(&t);
    for (int j = 0; j < t.n_in; j++)
        for (int q = 0; q < t.in[j].log2; q++)
            t.basis[t.in[j].shift + q] = j == i ? kept[q] : a->basis[a->in[j].shift + q];
    *R = t;
    return LL_OK;
}

int ll_rename(ll_layout *R, const ll_layout *a, int side, const char *from, const char *to) {
    if (!R || !a || (side != 0 && side != 1)) return LL_EINVAL;
    ll_layout t = *a;
    ll_dim *dims = side ? t.out : t.in;
    int n = side ? t.n_out : t.n_in;
    int i = find_dim(dims, n, from);
    if (i < 0 || !llx_name_ok(to)) return LL_EDIM;
    int j = find_dim(dims, n, to);
    if (j >= 0 && j != i) return LL_EDIM;
    set_name(&dims[i], to);
    *R = t;
    return LL_OK;
}

/* ---- printing ---------------------------------------------------------- */

typedef struct outbuf {
    char *p;
    size_t cap, len;
} outbuf;

static void put(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(outbuf *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *dst = o->len < o->cap ? o->p + o->len : NULL;
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

static void put_value(outbuf *o, const ll_layout *L, uint64_t v) {
    uint64_t vals[LL_MAX_DIMS];
    ll_unpack_out(L, v, vals);
    if (L->n_out == 1) { put(o, "%llu", (unsigned long long)vals[0]); return; }
    put(o, "(");
    for (int i = 0; i < L->n_out; i++)
        put(o, "%s%llu", i ? ", " : "", (unsigned long long)vals[i]);
    put(o, ")");
}

size_t ll_format(const ll_layout *L, char *buf, size_t cap) {
    outbuf o = {buf, buf ? cap : 0, 0};
    if (o.cap) buf[0] = 0;
    for (int i = 0; i < L->n_in; i++) {
        put(&o, "%s: [", L->in[i].name);
        for (int q = 0; q < L->in[i].log2; q++) {
            if (q) put(&o, ", ");
            put_value(&o, L, L->basis[L->in[i].shift + q]);
        }
        put(&o, "]\n");
    }
    put(&o, "-> ");
    if (!L->n_out) put(&o, "(no out dims)");
    for (int i = 0; i < L->n_out; i++)
        put(&o, "%s%s: %llu", i ? ", " : "", L->out[i].name,
            (unsigned long long)ll_out_size(L, i));
    return o.len;
}

static char dim_letter(const char *name) {
    if (!strcmp(name, LL_LANE)) return 'T';
    if (!strcmp(name, LL_WARP)) return 'W';
    if (!strcmp(name, LL_BLOCK)) return 'B';
    char c = name[0];
    return (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
}

/* Cell text of a hardware index (first in dim after ':' when others exist). */
static int cell_text(const ll_layout *L, uint64_t x, char *s, size_t cap) {
    uint64_t idx[LL_MAX_DIMS];
    ll_unpack_in(L, x, idx);
    int n = 0, others = 0;
    for (int i = L->n_in - 1; i >= 1; i--) {
        if (!L->in[i].log2) continue;
        n += snprintf(s + n, cap - (size_t)n, "%c%llu", dim_letter(L->in[i].name),
                      (unsigned long long)idx[i]);
        others++;
    }
    if (L->n_in && (L->in[0].log2 || !others))
        n += snprintf(s + n, cap - (size_t)n, others ? ":%llu" : "%llu",
                      (unsigned long long)idx[0]);
    return n;
}

size_t ll_format_table(const ll_layout *L, char *buf, size_t cap) {
    outbuf o = {buf, buf ? cap : 0, 0};
    if (o.cap) buf[0] = 0;
    if (L->out_bits > 16) {
        put(&o, "(table omitted: %llu elements)", (unsigned long long)1 << L->out_bits);
        return o.len;
    }
    llx_echelon e;
    llx_ech_init(&e);
    for (int k = 0; k < L->in_bits; k++) llx_ech_add(&e, L->basis[k], (uint64_t)1 << k);
    int dup = L->in_bits - e.n;
    /* Cell width: widest text. */
    int width = 1;
    char cell[96];
    for (uint64_t y = 0; y < ((uint64_t)1 << L->out_bits); y++) {
        uint64_t x;
        if (llx_ech_solve(&e, y, &x)) {
            int w = cell_text(L, x, cell, sizeof cell);
            if (w > width) width = w;
        }
    }
    put(&o, "[");
    for (int i = 0; i < L->n_out; i++) put(&o, "%s%s", i ? ", " : "", L->out[i].name);
    put(&o, "] each element held by %llu index%s", (unsigned long long)1 << dup, dup ? "es" : "");
    int others = 0;
    for (int i = 1; i < L->n_in; i++) others += L->in[i].log2 > 0;
    if (others) put(&o, "; cells: <dim letter><index>...:<%s>", L->in[0].name);
    else if (L->n_in) put(&o, "; cells: <%s>", L->in[0].name);
    put(&o, "\n");
    int n = L->n_out;
    int cdim = n - 1, rdim = n - 2; /* last out dim = columns, previous = rows */
    uint64_t ncol = n >= 1 ? ll_out_size(L, cdim) : 1;
    uint64_t nrow = n >= 2 ? ll_out_size(L, rdim) : 1;
    uint64_t nblk = ((uint64_t)1 << L->out_bits) / (ncol * nrow);
    for (uint64_t blk = 0; blk < nblk; blk++) {
        uint64_t idx[LL_MAX_DIMS] = {0};
        uint64_t rem = blk;
        for (int d = n - 3; d >= 0; d--) { /* row-major over the leading dims */
            idx[d] = rem & llx_low(L->out[d].log2);
            rem >>= L->out[d].log2;
        }
        if (n > 2) {
            put(&o, "(");
            for (int d = 0; d < n - 2; d++) put(&o, "%s%s=%llu", d ? ", " : "", L->out[d].name,
                                                (unsigned long long)idx[d]);
            put(&o, ")\n");
        }
        for (uint64_t r = 0; r < nrow; r++) {
            for (uint64_t c = 0; c < ncol; c++) {
                if (n >= 2) idx[rdim] = r;
                if (n >= 1) idx[cdim] = c;
                uint64_t x, y = ll_pack_out(L, idx);
                if (llx_ech_solve(&e, y, &x)) cell_text(L, x, cell, sizeof cell);
                else strcpy(cell, ".");
                put(&o, "%s%*s", c ? " " : "", width, cell);
            }
            put(&o, "\n");
        }
    }
    return o.len;
}
