/* ll.h - linear layouts over F2 (the public header of layouts/).
 *
 * A linear layout maps a hardware index to a tensor index.  Both sides are
 * split into named dimensions whose sizes are powers of two; an index is a
 * bit vector and the map is linear over F2 (addition = XOR):
 *
 *     L(x ^ y) = L(x) ^ L(y)            so L is fixed by one basis per input bit
 *
 *   input dims (hardware)          output dims (tensor)
 *   register  lane  warp  block    dim0 dim1 ...            (distributed layouts)
 *   offset    block                dim0 dim1 ...            (shared-memory layouts)
 *
 * Storage.  The input dims are concatenated, first dim least significant,
 * into one flat input index of in_bits bits; the output dims likewise into a
 * flat output index of out_bits bits.  basis[k] is the flat output of flat
 * input bit k (a bit row).  Example: the mma.sync m16n8 fp32 accumulator
 * (out dims dim0 = row, 16 rows; dim1 = col, 8 cols; dim1 is the *second*
 * out dim so its bits sit above dim0's 4 bits):
 *
 *   flat in bit :  0    1    2    3    4    5    6
 *   in dim      :  reg  reg  lane lane lane lane lane
 *   basis (row,col): (0,1)(8,0)(0,2)(0,4)(1,0)(2,0)(4,0)
 *   flat out      : 0x10 0x08 0x20 0x40 0x01 0x02 0x04
 *                   |<- dim0: bits 0..3 ->|<- dim1: bits 4..6 ->|
 *
 * L(x) is the XOR of basis[k] over the set bits k of x.  layouts/README.md
 * explains the conventions with drawings.
 *
 * Rules: every value type here is a plain struct of fixed size (no heap), so
 * building and querying a layout never allocates; functions that build a
 * layout write into a caller-provided ll_layout (which may alias an input)
 * and return LL_OK or a negative ll_status.  At most LL_MAX_DIMS dims and
 * LL_MAX_BITS bits per side.  No global state; everything is reentrant.
 */
#ifndef TORCHC_LL_H
#define TORCHC_LL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    LL_MAX_DIMS = 8,  /* named dims per side */
    LL_MAX_BITS = 64, /* total bits per side */
    LL_NAME_MAX = 15, /* characters in a dim name (plus NUL) */
};

/* Status codes: 0 is success, errors are negative. */
typedef enum ll_status {
    LL_OK = 0,
    LL_EINVAL = -1,    /* bad argument: NULL, negative, unknown enum value */
    LL_ESIZE = -2,     /* size not a power of two, or more than 64 bits / 8 dims */
    LL_EDIM = -3,      /* unknown, duplicate or overlong dimension name */
    LL_EMISMATCH = -4, /* the dims of two layouts do not fit together */
    LL_ENOSOLUTION = -5, /* not invertible / not surjective / not solvable */
    LL_ENOTDIV = -6,   /* division or quotient has no exact result */
    LL_ESPACE = -7,    /* output buffer too small (formatting) */
} ll_status;

/* Message for a status code (static string, never NULL). */
const char *ll_strerror(int status);

/* Standard dim names. */
#define LL_REGISTER "register"
#define LL_LANE "lane"
#define LL_WARP "warp"
#define LL_BLOCK "block"
#define LL_OFFSET "offset"

typedef struct ll_dim {
    char name[LL_NAME_MAX + 1]; /* NUL-terminated */
    uint8_t log2;               /* size is 1 << log2 */
    uint8_t shift;              /* first bit of this dim in the flat index */
} ll_dim;

typedef struct ll_layout {
    uint8_t n_in, n_out;        /* number of dims per side */
    uint8_t in_bits, out_bits;  /* total bits per side (sum of log2) */
    ll_dim in[LL_MAX_DIMS];
    ll_dim out[LL_MAX_DIMS];
    uint64_t basis[LL_MAX_BITS]; /* basis[k] = flat output of flat input bit k */
} ll_layout;

/* ---- construction ------------------------------------------------------ */

/* The empty layout: no dims, maps the single index 0 to 0. */
void ll_empty(ll_layout *L);
/* Append a dim of size 1 << log2; new input bits get zero bases.  LL_EDIM on a
 * duplicate or bad name, LL_ESIZE past 8 dims or 64 bits. */
int ll_add_in_dim(ll_layout *L, const char *name, int log2);
int ll_add_out_dim(ll_layout *L, const char *name, int log2);
/* Set / read basis `bit` of input dim `in` as one value per output dim
 * (vals[n_out]); values must fit their out dims (LL_ESIZE otherwise). */
int ll_set_basis(ll_layout *L, int in, int bit, const uint64_t *vals);
uint64_t ll_get_basis(const ll_layout *L, int in, int bit, int out);

/* identity1D: in dim of `size` -> out dim of `size`, x -> x. */
int ll_identity1d(ll_layout *L, uint64_t size, const char *in, const char *out);
/* zeros1D: in dim of `size` -> out dim of `out_size`, x -> 0 (broadcast). */
int ll_zeros1d(ll_layout *L, uint64_t size, const char *in, const char *out,
               uint64_t out_size);
/* strided1D: x -> x * stride, out dim sized to fit (size*stride). */
int ll_strided1d(ll_layout *L, uint64_t size, uint64_t stride, const char *in,
                 const char *out);
/* identityND over out dims dim0..dim{rank-1}: identity1D(shape[order[0]]) *
 * identity1D(shape[order[1]]) * ..., out dims then put in standard order. */
int ll_identity_nd(ll_layout *L, const char *in, int rank, const int64_t *shape,
                   const int *order);

/* ---- queries (never allocate) ----------------------------------------- */

int ll_find_in(const ll_layout *L, const char *name);  /* index or -1 */
int ll_find_out(const ll_layout *L, const char *name); /* index or -1 */
static inline uint64_t ll_in_size(const ll_layout *L, int i) {
    return (uint64_t)1 << L->in[i].log2;
}
static inline uint64_t ll_out_size(const ll_layout *L, int i) {
    return (uint64_t)1 << L->out[i].log2;
}
/* Flat -> flat application: XOR of the bases of the set bits. */
static inline uint64_t ll_apply_flat(const ll_layout *L, uint64_t x) {
    uint64_t y = 0;
    while (x) {
        y ^= L->basis[__builtin_ctzll(x)];
        x &= x - 1;
    }
    return y;
}
/* Pack per-dim indices into a flat index (values masked to the dim) and back. */
uint64_t ll_pack_in(const ll_layout *L, const uint64_t *idx);
void ll_unpack_out(const ll_layout *L, uint64_t flat, uint64_t *out);
uint64_t ll_pack_out(const ll_layout *L, const uint64_t *idx);
void ll_unpack_in(const ll_layout *L, uint64_t flat, uint64_t *in);
/* Per-dim application: in[n_in] -> out[n_out].  LL_ESIZE if an index is out of
 * range. */
int ll_apply(const ll_layout *L, const uint64_t *in, uint64_t *out);
/* Flat mask of the bits of input (output) dim i. */
uint64_t ll_in_mask(const ll_layout *L, int i);
uint64_t ll_out_mask(const ll_layout *L, int i);

/* Same dims (names, sizes, order) and same bases. */
bool ll_equal(const ll_layout *a, const ll_layout *b);
/* Rank of the basis matrix (number of independent bases). */
int ll_rank(const ll_layout *L);
bool ll_is_surjective(const ll_layout *L); /* every output reached */
bool ll_is_injective(const ll_layout *L);  /* no two inputs collide */
bool ll_is_invertible(const ll_layout *L); /* both, same size */
/* Free variables (broadcast): for input dim i, the bits whose bases are
 * linearly dependent on earlier bits (flat order).  Setting every free bit to
 * 0 still reaches every element of the image, exactly once.  masks[n_in]. */
void ll_free_variable_masks(const ll_layout *L, uint64_t *masks);
/* Number of consecutive elements held by consecutive registers (first input
 * dim) along the first output dim, i.e. the vector width; >= 1. */
uint64_t ll_num_consecutive(const ll_layout *L);
/* The canonical (lowest, free bits 0) flat input with L(x) == y; false if y
 * is not in the image. */
bool ll_preimage(const ll_layout *L, uint64_t y, uint64_t *x);

/* ---- operations (result may alias an argument) ----------------------- */

/* Product a * b: dims of a are minor.  Shared input dims: b's bits follow
 * a's.  Shared output dims: b's values are shifted above a's size. */
int ll_product(ll_layout *R, const ll_layout *a, const ll_layout *b);
/* compose: R(x) = outer(a(x)); a's out dims must be outer's in dims (any
 * order) with a's sizes <= outer's. */
int ll_compose(ll_layout *R, const ll_layout *a, const ll_layout *outer);
/* invert_and_compose: C with outer(C(x)) == a(x) for every x (least squares
 * over F2: free variables of outer are set to 0, except input dims on which
 * a and outer agree, which map to themselves).  In dims = a's, out dims =
 * outer's in dims.  LL_ENOSOLUTION if some a(x) is not in outer's image. */
int ll_invert_and_compose(ll_layout *R, const ll_layout *a,
                          const ll_layout *outer);
/* invert: the inverse of a bijective layout (LL_ENOSOLUTION otherwise). */
int ll_invert(ll_layout *R, const ll_layout *a);
/* pseudo_invert: right inverse of a surjective layout, free variables 0. */
int ll_pseudo_invert(ll_layout *R, const ll_layout *a);

/* Reshape ins/outs: flatten then split into the given dims (same total). */
int ll_reshape_ins(ll_layout *R, const ll_layout *a, int n,
                   const char *const *names, const int *log2s);
int ll_reshape_outs(ll_layout *R, const ll_layout *a, int n,
                    const char *const *names, const int *log2s);
/* Transpose: reorder the dims to `names` (a permutation of the dims). */
int ll_transpose_ins(ll_layout *R, const ll_layout *a, int n,
                     const char *const *names);
int ll_transpose_outs(ll_layout *R, const ll_layout *a, int n,
                      const char *const *names);
/* Flatten: one in (out) dim, named after the first one. */
int ll_flatten_ins(ll_layout *R, const ll_layout *a);
int ll_flatten_outs(ll_layout *R, const ll_layout *a);
/* Keep the named dims (kept in a's order). */
int ll_sublayout(ll_layout *R, const ll_layout *a, int n_in,
                 const char *const *ins, int n_out, const char *const *outs);
/* Concat ins: same out dims, disjoint in dims -> R(x, y) = a(x) ^ b(y).
 * Concat outs: same in dims, disjoint out dims -> R(x) = (a(x), b(x)). */
int ll_concat_ins(ll_layout *R, const ll_layout *a, const ll_layout *b);
int ll_concat_outs(ll_layout *R, const ll_layout *a, const ll_layout *b);
/* Quotient: remove the named dims (on both sides) when the layout is the
 * identity on them and they do not interact with the others; LL_ENOTDIV
 * otherwise. */
int ll_quotient(ll_layout *R, const ll_layout *a, int n,
                const char *const *names);
/* Division: divide_left finds R with a == b * R (b minor); divide_right finds
 * R with a == R * b (b major).  LL_ENOTDIV when there is none. */
int ll_divide_left(ll_layout *R, const ll_layout *a, const ll_layout *b);
int ll_divide_right(ll_layout *R, const ll_layout *a, const ll_layout *b);
/* Change the size of an input dim: grow adds zero bases, shrink drops the
 * top bases. */
int ll_resize_in(ll_layout *R, const ll_layout *a, const char *name, int log2);
/* Remove the bases of input dim `name` that are zero (broadcast registers). */
int ll_remove_zero_bases(ll_layout *R, const ll_layout *a, const char *name);
/* Rename a dim (side 0 = in, 1 = out). */
int ll_rename(ll_layout *R, const ll_layout *a, int side, const char *from,
              const char *to);

/* ---- printing ---------------------------------------------------------- */

/* Bases, one input dim per line:
 *   register: (0,1) (8,0) | lane: (0,2) (0,4) (1,0) (2,0) (4,0) -> dim0:16 dim1:8
 * Returns the length the full text needs (like snprintf); writes at most cap
 * bytes including the NUL. */
size_t ll_format(const ll_layout *L, char *buf, size_t cap);
/* A table of which hardware index holds which element: one cell per element
 * (rows: second-to-last out dim, columns: last out dim, one block per value of
 * the others).  Cells read "T<lane>:<reg>" with "W<warp>" / "B<block>"
 * prefixes where those dims exist, the number for other 1-dim layouts, "."
 * for elements not held; '*' marks elements held more than once (the cell
 * shows the lowest holder).  LL_ESIZE if the tensor has more than 2^16
 * elements.  Returns the needed length like ll_format. */
size_t ll_format_table(const ll_layout *L, char *buf, size_t cap);

/* ---- standard NVIDIA layouts ------------------------------------------- */
/* Distributed layouts have in dims register, lane, warp, block and out dims
 * dim0..dim{rank-1}; shapes are powers of two.  When the tensor is smaller
 * than the layout's tile, the largest bases become 0 (lanes/warps broadcast,
 * registers are dropped); when larger, the tile repeats in registers. */

/* Multi-CTA (cluster) parameters; NULL means one CTA. */
typedef struct ll_cga {
    int ctas_per_cga[LL_MAX_DIMS];
    int cta_split[LL_MAX_DIMS]; /* divides ctas_per_cga; the rest broadcast */
    int cta_order[LL_MAX_DIMS];
} ll_cga;

/* Blocked layout (Triton #blocked): order[0] is the fastest dim. */
int ll_blocked(ll_layout *L, int rank, const int64_t *shape,
               const int *size_per_thread, const int *threads_per_warp,
               const int *warps_per_cta, const int *order, const ll_cga *cga);
/* Slice: drop out dim `dim` of `parent` (a layout built for the shape with a
 * 1 inserted at `dim`), remove zero register bases, renumber dims. */
int ll_slice(ll_layout *L, const ll_layout *parent, int dim);

/* mma accumulator.  version 2: mma.sync m16n8 (instr_n must be 8, warps
 * row-major); version 3: wgmma m64nN (instr_n in 8..256, warps column-major,
 * a warp group is 4 warps along M).  rank 2. */
int ll_mma_accumulator(ll_layout *L, int version, const int64_t *shape,
                       const int *warps_per_cta, int instr_n, const ll_cga *cga);
/* mma operand (op_idx 0 = A [M,K], 1 = B [K,N]) for the parent accumulator's
 * warps.  elem_bits 8/16/32 gives k_width = 32/elem_bits elements per 32-bit
 * register (k_width 0 = default).  version 2: mma.sync (A and B, warps
 * broadcast along K); version 3: wgmma A from registers (op_idx 0 only). */
int ll_mma_operand(ll_layout *L, int version, int op_idx, const int64_t *shape,
                   const int *warps_per_cta, int elem_bits, int k_width,
                   const ll_cga *cga);
/* ldmatrix / stmatrix (x1, x2, x4) for 16-bit elements: the registers and
 * lanes of one warp's fragment, out dims dim0 = row, dim1 = col.  Matrices
 * are 8x8; x2 stacks along rows, x4 adds the next 8 columns (the A-operand
 * order).  trans: the .trans variant (each 8x8 transposed). */
int ll_ldmatrix(ll_layout *L, int num_matrices, bool trans);
/* The lane -> row-address layout of ldmatrix/stmatrix: lane i supplies the
 * address of row (i % 8) of matrix i / 8: in dim lane -> (dim0, dim1) where
 * dim1 counts 8-column chunks. */
int ll_ldmatrix_addr(ll_layout *L, int num_matrices, bool trans);

/* Swizzled shared layout (Triton #shared vec/perPhase/maxPhase): in dims
 * offset, block; order[0] is the contiguous dim.  The row r (order[1]) XORs
 * vec * ((r / per_phase) % max_phase) into the column. */
int ll_shared_swizzled(ll_layout *L, int rank, const int64_t *shape, int vec,
                       int per_phase, int max_phase, const int *order,
                       const ll_cga *cga);
/* NVMMA shared layout (TMA / wgmma): swizzle_bytes 0, 32, 64 or 128; the last
 * dim is contiguous (or the first when transposed); the swizzle atom is 8 rows
 * of swizzle_bytes. */
int ll_nvmma_shared(ll_layout *L, int rank, const int64_t *shape,
                    int elem_bits, int swizzle_bytes, bool transposed,
                    const ll_cga *cga);

/* ---- redundancy predicates --------------------------------------------- */

/* Which hardware indices hold duplicates.  A thread must store iff
 * (lane & lane) == 0 && (warp & warp) == 0 && (block & block) == 0, and only
 * registers with (reg & reg) == 0; masks of dims absent from the layout are 0.
 * Every element is then stored exactly once. */
typedef struct ll_redundancy {
    uint64_t reg, lane, warp, block;
} ll_redundancy;
int ll_redundancy_masks(const ll_layout *L, ll_redundancy *out);

/* ---- shared memory: bank conflicts and optimal swizzling ---------------- */

/* Shared memory is modelled as 32 banks of 4 bytes.  A warp instruction that
 * moves `bytes` per lane is served in phases: 1 phase of 32 lanes for <= 4
 * bytes, 2 of 16 lanes for 8 bytes, 4 of 8 lanes for 16 bytes.  A phase takes
 * as many wavefronts as the largest number of distinct 4-byte words it touches
 * in one bank (lanes touching the same word share it). */
typedef struct ll_bank_stats {
    int64_t instructions; /* warp-level ld/st.shared instructions */
    int64_t wavefronts;   /* total wavefronts */
    int64_t ideal;        /* wavefronts without conflicts (sum of phases) */
    int max_wavefronts;   /* worst single instruction */
    int vec;              /* elements per lane per instruction */
} ll_bank_stats;

/* Count the wavefronts of storing (or loading: same count) the distributed
 * layout `reg` to/from the shared layout `smem` (offset[,block] -> same tensor
 * dims, injective on offset).  vec = elements per access; 0 picks the widest
 * the layouts allow (<= 16 bytes).  Vector registers are the register bits
 * that land on offsets 1, 2, 4, ... in order. */
int ll_bank_conflicts(ll_bank_stats *st, const ll_layout *reg,
                      const ll_layout *smem, int elem_bits, int vec);

/* The optimal swizzled layout for a src -> dst round trip through shared
 * memory (the paper's construction: widest common vector, then segment bases
 * chosen against both lane tiles so bank conflicts are minimal). */
typedef struct ll_swizzle {
    ll_layout smem;          /* offset[,block] -> tensor, bijective on offset */
    int vec;                 /* elements per vector (both store and load) */
    int store_wavefronts;    /* predicted per store instruction */
    int load_wavefronts;     /* predicted per load instruction */
    int store_ideal, load_ideal; /* wavefronts without conflicts */
} ll_swizzle;
int ll_optimal_swizzle(ll_swizzle *out, const ll_layout *src,
                       const ll_layout *dst, int elem_bits);

/* ---- conversion planning ---------------------------------------------- */

typedef enum ll_cvt_kind {
    LL_CVT_NOOP = 0,     /* same data in the same registers */
    LL_CVT_REGISTER = 1, /* a permutation of each thread's registers */
    LL_CVT_SHUFFLE = 2,  /* data moves between lanes of a warp: shfl.sync */
    LL_CVT_SHARED = 3,   /* data crosses warps: store + load through smem */
    LL_CVT_CLUSTER = 4,  /* data crosses CTAs: distributed shared memory */
} ll_cvt_kind;

const char *ll_cvt_kind_name(ll_cvt_kind k);

typedef struct ll_cvt_plan {
    ll_cvt_kind kind;
    int elem_bits;
    /* dst.invert_and_compose(src) with block, warp, lane, register quotiented
     * out while they are the identity: dst hardware -> src hardware. */
    ll_layout cvt;
    /* LL_CVT_SHUFFLE: rounds of shfl.sync.idx (one 32-bit word per lane per
     * round; 64-bit elements take 2 rounds each), elements packed per word,
     * and whether the sender's register depends on its lane (selects). */
    int shuffle_rounds;
    int shuffle_pack;
    bool shuffle_selects;
    /* LL_CVT_SHARED / LL_CVT_CLUSTER: the chosen shared layout. */
    ll_swizzle swizzle;
} ll_cvt_plan;

/* Plan src -> dst (same tensor dims and sizes).  elem_bits: 8, 16, 32, 64. */
int ll_plan_conversion(ll_cvt_plan *plan, const ll_layout *src,
                       const ll_layout *dst, int elem_bits);

/* The shuffle schedule behind LL_CVT_SHUFFLE, one query at a time (no
 * allocation): in round `round` (< shuffle_rounds), dst lane `lane` reads the
 * word of src lane *src_lane; element j of the word (j < pack) fills dst
 * register dst_reg[j] from src register src_reg[j] of that lane (-1: unused).
 * Registers are indices into the src / dst register dims. */
int ll_shuffle_step(const ll_cvt_plan *plan, const ll_layout *src,
                    const ll_layout *dst, int round, int lane, int *src_lane,
                    int64_t *src_reg, int64_t *dst_reg);

#ifdef __cplusplus
}
#endif

#endif /* TORCHC_LL_H */
