/* ll_internal.h - helpers shared by the files of layouts/ (not installed).
 *
 * Symbols here are hidden: the extension module exports only PyInit.  */
#ifndef TORCHC_LL_INTERNAL_H
#define TORCHC_LL_INTERNAL_H

#include "ll.h"

#if defined(__GNUC__)
#define LL_HIDDEN __attribute__((visibility("hidden")))
#else
#define LL_HIDDEN
#endif

static inline uint64_t llx_low(int n) { /* mask of the n low bits, n <= 64 */
    return n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
}
static inline int llx_popcount(uint64_t x) { return __builtin_popcountll(x); }
static inline int llx_ctz(uint64_t x) { return x ? __builtin_ctzll(x) : 64; }
static inline bool llx_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }
static inline int llx_log2(uint64_t x) { return 63 - __builtin_clzll(x); }

/* Incremental reduced echelon form over F2 of a set of column vectors.
 * Each kept vector vec[i] owns pivot bit piv[i], which no other kept vector
 * has; comb[i] records which added columns XOR to vec[i] (only independent
 * ones), so solving y = sum of columns sets dependent columns to 0. */
typedef struct llx_echelon {
    int n;
    uint64_t vec[LL_MAX_BITS];
    uint64_t comb[LL_MAX_BITS];
    uint8_t piv[LL_MAX_BITS];
    uint64_t pivots; /* OR of 1 << piv[i] */
} llx_echelon;

LL_HIDDEN void llx_ech_init(llx_echelon *e);
/* Add column v labelled by the bit `label`; true if it was independent.
 * When dependent and dep != NULL, *dep = label ^ (labels it depends on). */
LL_HIDDEN bool llx_ech_add(llx_echelon *e, uint64_t v, uint64_t label);
LL_HIDDEN bool llx_ech_add_dep(llx_echelon *e, uint64_t v, uint64_t label, uint64_t *dep);
/* x = XOR of labels with sum of their columns == y; false if y not in span. */
LL_HIDDEN bool llx_ech_solve(const llx_echelon *e, uint64_t y, uint64_t *x);
/* true if v is in the span. */
LL_HIDDEN bool llx_ech_contains(const llx_echelon *e, uint64_t v);

/* Dimension of span(a) ∩ span(b) for vector lists. */
LL_HIDDEN int llx_intersect_dim(const uint64_t *a, int na, const uint64_t *b,
                                int nb);

LL_HIDDEN bool llx_name_ok(const char *name);
LL_HIDDEN void llx_fix_shifts(ll_layout *L);
/* Move a flat output value of `s` into the flat out space of `d` (dims
 * matched by name; shift_extra[i] added to the position of s's out dim i).
 * Dims of s missing from d must carry zero bits (else returns false). */
LL_HIDDEN bool llx_move_out(const ll_layout *s, uint64_t v, const ll_layout *d,
                            const int *shift_extra, uint64_t *res);
/* Standard out dim name "dim<i>". */
LL_HIDDEN void llx_dim_name(char *buf, int i);

#endif
