/* ll_f2.c - linear algebra over F2 on layouts: rank, injectivity,
 * surjectivity, free variables, least-squares solving, compose,
 * invert-and-compose, (pseudo-)inverse, quotient, left/right division and the
 * vector width.
 *
 * Contract: as ll_core.c (validate, write a well-formed result or nothing,
 * results may alias inputs, no allocation).  Solutions always set free
 * variables -- columns dependent on earlier columns in flat input order -- to
 * zero, so register bits are preferred over lane bits, lanes over warps... */
#include "ll_internal.h"

#include <string.h>

/* ---- echelon ------------------------------------------------------------ */

void llx_ech_init(llx_echelon *e) {
    e->n = 0;
    e->pivots = 0;
}

bool llx_ech_add(llx_echelon *e, uint64_t v, uint64_t label) {
    return llx_ech_add_dep(e, v, label, NULL);
}

bool llx_ech_add_dep(llx_echelon *e, uint64_t v, uint64_t label, uint64_t *dep) {
    uint64_t c = label;
    uint64_t hit = v & e->pivots;
    for (int i = 0; i < e->n && hit; i++) {
        uint64_t pb = (uint64_t)1 << e->piv[i];
        if (v & pb) {
            v ^= e->vec[i];
            c ^= e->comb[i];
            hit &= ~pb;
        }
    }
    if (!v) {
        if (dep) *dep = c;
        return false;
    }
    int p = llx_ctz(v);
    uint64_t pb = (uint64_t)1 << p;
    for (int i = 0; i < e->n; i++)
        if (e->vec[i] & pb) {
            e->vec[i] ^= v;
            e->comb[i] ^= c;
        }
    e->vec[e->n] = v;
    e->comb[e->n] = c;
    e->piv[e->n] = (uint8_t)p;
    e->n++;
    e->pivots |= pb;
    return true;
}

bool llx_ech_solve(const llx_echelon *e, uint64_t y, uint64_t *x) {
    uint64_t r = 0;
    for (int i = 0; i < e->n; i++)
        if (y >> e->piv[i] & 1) {
            y ^= e->vec[i];
            r ^= e->comb[i];
        }
    if (x) *x = r;
    return y == 0;
}

bool llx_ech_contains(const llx_echelon *e, uint64_t v) { return llx_ech_solve(e, v, NULL); }

int llx_intersect_dim(const uint64_t *a, int na, const uint64_t *b, int nb) {
    llx_echelon ea, eab;
    llx_ech_init(&ea);
    llx_ech_init(&eab);
    for (int i = 0; i < na; i++) { llx_ech_add(&ea, a[i], 0); llx_ech_add(&eab, a[i], 0); }
    llx_echelon eb;
    llx_ech_init(&eb);
    for (int i = 0; i < nb; i++) { llx_ech_add(&eb, b[i], 0); llx_ech_add(&eab, b[i], 0); }
    return ea.n + eb.n - eab.n; /* dim(A ∩ B) = dim A + dim B - dim(A + B) */
}

static void columns(const ll_layout *L, llx_echelon *e) {
    llx_ech_init(e);
    for (int k = 0; k < L->in_bits; k++) llx_ech_add(e, L->basis[k], (uint64_t)1 << k);
}

/* ---- queries ------------------------------------------------------------ */

int ll_rank(const ll_layout *L) {
    llx_echelon e;
    columns(L, &e);
    return e.n;
}

bool ll_is_surjective(const ll_layout *L) { return ll_rank(L) == L->out_bits; }
bool ll_is_injective(const ll_layout *L) { return ll_rank(L) == L->in_bits; }
bool ll_is_invertible(const ll_layout *L) {
    return L->in_bits == L->out_bits && ll_rank(L) == L->in_bits;
}

void ll_free_variable_masks(const ll_layout *L, uint64_t *masks) {
    llx_echelon e;
    llx_ech_init(&e);
    for (int i = 0; i < L->n_in; i++) {
        masks[i] = 0;
        for (int q = 0; q < L->in[i].log2; q++)
            if (!llx_ech_add(&e, L->basis[L->in[i].shift + q], 0)) masks[i] |= (uint64_t)1 << q;
    }
}

bool ll_preimage(const ll_layout *L, uint64_t y, uint64_t *x) {
    llx_echelon e;
    columns(L, &e);
    return llx_ech_solve(&e, y, x);
}

uint64_t ll_num_consecutive(const ll_layout *L) {
    if (L->n_in == 0 || L->n_out == 0) return 1;
    /* Leading bases of the first in dim equal to (2^i, 0, ..., 0). */
    int consec = 0;
    while (consec < L->in[0].log2 && L->basis[consec] == ((uint64_t)1 << consec) &&
           consec < L->out[0].log2)
        consec++;
    /* Any other basis touching a low bit of the first out dim breaks runs. */
    uint64_t other = 0, first = ll_out_mask(L, 0);
    for (int k = consec; k < L->in_bits; k++) other |= L->basis[k] & first;
    int tz = other ? llx_ctz(other) : 64;
    return (uint64_t)1 << (consec < tz ? consec : tz);
}

/* ---- compose ------------------------------------------------------------ */

/* t: zero bases over in dims in[0..n_in) and out dims out[0..n_out) (shifts recomputed) */
static void with_dims(ll_layout *t, const ll_dim *in, int n_in, const ll_dim *out, int n_out) {
    ll_empty(t);
    memcpy(t->in, in, sizeof *in * (size_t)n_in);
    memcpy(t->out, out, sizeof *out * (size_t)n_out);
    t->n_in = (uint8_t)n_in;
    t->n_out = (uint8_t)n_out;
    llx_fix_shifts(t);
}

int ll_compose(ll_layout *R, const ll_layout *a, const ll_layout *outer) {
    if (!R || !a || !outer) return LL_EINVAL;
    /* a's out dims feed outer's in dims of the same name. */
    int map[LL_MAX_DIMS];
    for (int o = 0; o < a->n_out; o++) {
        int j = ll_find_in(outer, a->out[o].name);
        if (j < 0 || outer->in[j].log2 < a->out[o].log2) return LL_EMISMATCH;
        map[o] = j;
    }
    for (int j = 0; j < outer->n_in; j++)
        if (ll_find_out(a, outer->in[j].name) < 0) return LL_EMISMATCH;
    ll_layout t;
    with_dims(&t, a->in, a->n_in, outer->out, outer->n_out);
    for (int k = 0; k < a->in_bits; k++) {
        uint64_t x = 0, v = a->basis[k];
        for (int o = 0; o < a->n_out; o++) {
            uint64_t part = (v >> a->out[o].shift) & llx_low(a->out[o].log2);
            x |= part << outer->in[map[o]].shift;
        }
        t.basis[k] = ll_apply_flat(outer, x);
    }
    *R = t;
    return LL_OK;
}

/* ---- invert and compose ------------------------------------------------- */

int ll_invert_and_compose(ll_layout *R, const ll_layout *a, const ll_layout *outer) {
    if (!R || !a || !outer) return LL_EINVAL;
    for (int o = 0; o < a->n_out; o++) {
        int j = ll_find_out(outer, a->out[o].name);
        if (j < 0 || outer->out[j].log2 < a->out[o].log2) return LL_EMISMATCH;
    }
    /* a's bases in outer's flat out space. */
    uint64_t av[LL_MAX_BITS];
    for (int k = 0; k < a->in_bits; k++)
        if (!llx_move_out(a, a->basis[k], outer, NULL, &av[k])) return LL_EMISMATCH;
    /* Broadcasting heuristic: an in dim on which both layouts agree maps to
     * itself, so a conversion that leaves warps (or lanes) alone says so even
     * when they broadcast.  Dropped if the rest then has no solution. */
    unsigned ident = 0; /* bit i: a's in dim i is an identity dim */
    for (int i = 0; i < a->n_in; i++) {
        int j = ll_find_in(outer, a->in[i].name);
        if (j < 0 || outer->in[j].log2 != a->in[i].log2) continue;
        bool same = true;
        for (int q = 0; q < a->in[i].log2 && same; q++)
            same = av[a->in[i].shift + q] == outer->basis[outer->in[j].shift + q];
        if (same) ident |= 1u << i;
    }
    ll_layout t;
    with_dims(&t, a->in, a->n_in, outer->in, outer->n_in);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 1) {
            if (!ident) break;
            ident = 0;
        }
        llx_echelon e;
        llx_ech_init(&e);
        for (int j = 0; j < outer->n_in; j++) {
            int i = ll_find_in(a, outer->in[j].name);
            if (i >= 0 && (ident >> i & 1)) continue;
            for (int q = 0; q < outer->in[j].log2; q++) {
                int k = outer->in[j].shift + q;
                llx_ech_add(&e, outer->basis[k], (uint64_t)1 << k);
            }
        }
        bool ok = true;
        for (int i = 0; i < a->n_in && ok; i++) {
            int j = ll_find_in(outer, a->in[i].name);
            for (int q = 0; q < a->in[i].log2 && ok; q++) {
                int k = a->in[i].shift + q;
                if (ident >> i & 1) t.basis[k] = (uint64_t)1 << (outer->in[j].shift + q);
                else ok = llx_ech_solve(&e, av[k], &t.basis[k]);
            }
        }
        if (ok) {
            *R = t;
            return LL_OK;
        }
    }
    return LL_ENOSOLUTION;
}

int ll_pseudo_invert(ll_layout *R, const ll_layout *a) {
    if (!R || !a) return LL_EINVAL;
    llx_echelon e;
    columns(a, &e);
    if (e.n != a->out_bits) return LL_ENOSOLUTION;
    ll_layout t;
    with_dims(&t, a->out, a->n_out, a->in, a->n_in);
    for (int k = 0; k < a->out_bits; k++) llx_ech_solve(&e, (uint64_t)1 << k, &t.basis[k]);
    *R = t;
    return LL_OK;
}

int ll_invert(ll_layout *R, const ll_layout *a) {
    if (!R || !a) return LL_EINVAL;
    if (!ll_is_invertible(a)) return LL_ENOSOLUTION;
    return ll_pseudo_invert(R, a);
}

/* ---- quotient ----------------------------------------------------------- */

int ll_quotient(ll_layout *R, const ll_layout *a, int n, const char *const *names) {
    if (!R || !a || n < 0 || (n && !names)) return LL_EINVAL;
    unsigned qi = 0, qo = 0;
    uint64_t qout = 0; /* flat out bits of the quotiented dims */
    for (int m = 0; m < n; m++) {
        int i = ll_find_in(a, names[m]), o = ll_find_out(a, names[m]);
        if (i < 0 && o < 0) return LL_EDIM;
        if (i < 0 || o < 0) {
            /* a dim on one side only is trivial when it has size 1 */
            if ((i >= 0 && a->in[i].log2) || (o >= 0 && a->out[o].log2)) return LL_ENOTDIV;
        } else if (a->in[i].log2 != a->out[o].log2) {
            return LL_ENOTDIV;
        }
        if (i >= 0) qi |= 1u << i;
        if (o >= 0) { qo |= 1u << o; qout |= ll_out_mask(a, o); }
    }
    for (int i = 0; i < a->n_in; i++) {
        for (int q = 0; q < a->in[i].log2; q++) {
            uint64_t b = a->basis[a->in[i].shift + q];
            if (qi >> i & 1) {
                /* identity onto the same-named out dim, nothing elsewhere */
                int o = ll_find_out(a, a->in[i].name);
                if (b != (uint64_t)1 << (a->out[o].shift + q)) return LL_ENOTDIV;
            } else if (b & qout) {
                return LL_ENOTDIV;
            }
        }
    }
    const char *ins[LL_MAX_DIMS], *outs[LL_MAX_DIMS];
    int ni = 0, no = 0;
    for (int i = 0; i < a->n_in; i++)
        if (!(qi >> i & 1)) ins[ni++] = a->in[i].name;
    for (int o = 0; o < a->n_out; o++)
        if (!(qo >> o & 1)) outs[no++] = a->out[o].name;
    return ll_sublayout(R, a, ni, ins, no, outs);
}

/* ---- division ----------------------------------------------------------- */

/* Put `p` into a's dim order (same dim sets) and compare. */
static bool equal_reordered(const ll_layout *p, const ll_layout *a) {
    const char *ins[LL_MAX_DIMS], *outs[LL_MAX_DIMS];
    for (int i = 0; i < a->n_in; i++) ins[i] = a->in[i].name;
    for (int i = 0; i < a->n_out; i++) outs[i] = a->out[i].name;
    ll_layout q;
    if (ll_transpose_ins(&q, p, a->n_in, ins)) return false;
    if (ll_transpose_outs(&q, &q, a->n_out, outs)) return false;
    return ll_equal(&q, a);
}

/* b with its dims put in the relative order they have in ref (b's dims must
 * all be in ref). */
static int reorder_like(ll_layout *out, const ll_layout *b, const ll_layout *ref) {
    const char *ins[LL_MAX_DIMS], *outs[LL_MAX_DIMS];
    int ni = 0, no = 0;
    for (int i = 0; i < ref->n_in; i++)
        if (ll_find_in(b, ref->in[i].name) >= 0) ins[ni++] = ref->in[i].name;
    for (int i = 0; i < ref->n_out; i++)
        if (ll_find_out(b, ref->out[i].name) >= 0) outs[no++] = ref->out[i].name;
    if (ni != b->n_in || no != b->n_out) return LL_ENOTDIV;
    int rc = ll_transpose_ins(out, b, ni, ins);
    return rc ? rc : ll_transpose_outs(out, out, no, outs);
}

/* R's dims for a / b: a's dims with b's sizes taken off. */
static int quotient_dims(ll_layout *t, const ll_layout *a, const ll_layout *b) {
    ll_empty(t);
    for (int i = 0; i < b->n_in; i++) {
        int j = ll_find_in(a, b->in[i].name);
        if (j < 0 || a->in[j].log2 < b->in[i].log2) return LL_ENOTDIV;
    }
    for (int o = 0; o < b->n_out; o++) {
        int j = ll_find_out(a, b->out[o].name);
        if (j < 0 || a->out[j].log2 < b->out[o].log2) return LL_ENOTDIV;
    }
    t->n_in = a->n_in;
    t->n_out = a->n_out;
    for (int i = 0; i < a->n_in; i++) {
        t->in[i] = a->in[i];
        int j = ll_find_in(b, a->in[i].name);
        if (j >= 0) t->in[i].log2 = (uint8_t)(t->in[i].log2 - b->in[j].log2);
    }
    for (int o = 0; o < a->n_out; o++) {
        t->out[o] = a->out[o];
        int j = ll_find_out(b, a->out[o].name);
        if (j >= 0) t->out[o].log2 = (uint8_t)(t->out[o].log2 - b->out[j].log2);
    }
    llx_fix_shifts(t);
    return LL_OK;
}

/* a = b * R (left) or a = R * b (right): R, or LL_ENOTDIV. In a's bits of in dim i, b's
 * come first and R's values sit above b's out sizes (left), or R's bits come first with
 * values below R's out sizes (right). */
static int divide(ll_layout *R, const ll_layout *a, const ll_layout *b_in, bool left) {
    if (!R || !a || !b_in) return LL_EINVAL;
    ll_layout t, bb;
    int rc = reorder_like(&bb, b_in, a);
    if (rc) return rc;
    const ll_layout *b = &bb;
    rc = quotient_dims(&t, a, b);
    if (rc) return rc;
    for (int i = 0; i < a->n_in; i++) {
        int j = left ? ll_find_in(b, a->in[i].name) : -1;
        int skip = j < 0 ? 0 : b->in[j].log2; /* b's bits of dim i, below R's (left) */
        for (int q = 0; q < t.in[i].log2; q++) {
            uint64_t v = a->basis[a->in[i].shift + skip + q], r = 0;
            for (int o = 0; o < a->n_out; o++) {
                uint64_t part = (v >> a->out[o].shift) & llx_low(a->out[o].log2);
                int jo = left ? ll_find_out(b, a->out[o].name) : -1;
                int low = jo < 0 ? 0 : b->out[jo].log2; /* b's values of out dim o (left) */
                if (left ? (part & llx_low(low)) != 0 : (part >> t.out[o].log2) != 0) return LL_ENOTDIV;
                r |= (part >> low) << t.out[o].shift;
            }
            t.basis[t.in[i].shift + q] = r;
        }
    }
    ll_layout p;
    if ((left ? ll_product(&p, b, &t) : ll_product(&p, &t, b)) || !equal_reordered(&p, a)) return LL_ENOTDIV;
    *R = t;
    return LL_OK;
}

int ll_divide_left(ll_layout *R, const ll_layout *a, const ll_layout *b) { return divide(R, a, b, true); }
int ll_divide_right(ll_layout *R, const ll_layout *a, const ll_layout *b) { return divide(R, a, b, false); }
