/* ic_ops.h — the one table of graph operations (X-macro).
 *
 * X(NAME, text, nin, kind, flags)
 *   NAME  enum member IC_OP_NAME
 *   text  printed name in the graph text format
 *   nin   number of value operands (-1: variable)
 *   kind  IC_K_UNARY / IC_K_BINARY / IC_K_TERNARY / IC_K_REDUCE / IC_K_OTHER
 *   flags IC_F_* bits (ic_op_flags): what the op is and which semantics its code needs
 *
 *   what it is (exactly one):
 *     IC_F_PW      pointwise: each output element from the operands' elements at the same
 *                  (broadcast) position; the shared op layer (codegen/ops.c) emits it
 *     IC_F_RED     reduction over attrs.dim_mask (identity and combine: ops.c)
 *     IC_F_VIEW    an index map over its one operand, nothing computed
 *     IC_F_GATHER  reads its operands at computed positions (cat, index_select)
 *     IC_F_LEAF    no tensor operand (inputs, Python numbers, arange)
 *     IC_F_EXT     a library call (ic_extern), run by the runtime, no generated code
 *   semantics:
 *     IC_F_FLOAT   float math: integer and bool operands promote to the default float dtype
 *     IC_F_INT     integer semantics of its own on integer dtypes (wrapping arithmetic,
 *                  signed or unsigned by dtype, Python's floor division and modulo; no
 *                  promotion to float). Pointwise ops with neither FLOAT nor INT take floats
 *                  only (pow), or bool only (the logical ops, with BOOL)
 *     IC_F_BOOL    the result is bool whatever the operands' dtype
 *     IC_F_BITS    integers and bool only: a float operand raises as in eager
 *     IC_F_COMM    commutative: op(a, b) == op(b, a) bit for bit (NaN payloads aside)
 *
 * Semantics follow the aten op of the same name (float math in the promoted dtype;
 * integer math where torch does integer math). Python scalars enter as IC_OP_SCALAR
 * values ("weak" for type promotion, like torch's wrapped numbers).
 */
#ifndef IC_OPS_H
#define IC_OPS_H

#define IC_OPS(X)                                                                              \
    /* leaves */                                                                               \
    X(INPUT, "input", 0, IC_K_OTHER, IC_F_LEAF)       /* graph input tensor */                 \
    X(SCALAR, "scalar", 0, IC_K_OTHER, IC_F_LEAF)     /* python number (weak) */               \
    /* binary pointwise, broadcasting, type promotion */                                       \
    X(ADD, "add", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_COMM)                                  \
    X(SUB, "sub", 2, IC_K_BINARY, IC_F_PW|IC_F_INT)                                            \
    X(MUL, "mul", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_COMM)                                  \
    X(DIV, "div", 2, IC_K_BINARY, IC_F_PW|IC_F_FLOAT)          /* true division */             \
    X(MAXIMUM, "maximum", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_COMM)  /* NaN-propagating */   \
    X(MINIMUM, "minimum", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_COMM)  /* NaN-propagating */   \
    X(POW, "pow", 2, IC_K_BINARY, IC_F_PW)                                                     \
    X(EQ, "eq", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BOOL|IC_F_COMM)            /* -> bool */ \
    X(NE, "ne", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BOOL|IC_F_COMM)                          \
    X(LT, "lt", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BOOL)                                    \
    X(LE, "le", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BOOL)                                    \
    X(GT, "gt", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BOOL)                                    \
    X(GE, "ge", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BOOL)                                    \
    X(LOGICAL_AND, "logical_and", 2, IC_K_BINARY, IC_F_PW|IC_F_BOOL|IC_F_COMM) /* -> bool */   \
    X(LOGICAL_OR, "logical_or", 2, IC_K_BINARY, IC_F_PW|IC_F_BOOL|IC_F_COMM)                   \
    /* unary pointwise (int inputs promote to float for float math) */                         \
    X(NEG, "neg", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                             \
    X(ABS, "abs", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                             \
    X(EXP, "exp", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                           \
    X(LOG, "log", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                           \
    X(SQRT, "sqrt", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(RSQRT, "rsqrt", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                       \
    X(RECIPROCAL, "reciprocal", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                             \
    X(SIGMOID, "sigmoid", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                   \
    X(TANH, "tanh", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(RELU, "relu", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                           \
    X(GELU, "gelu", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)          /* erf form */                 \
    X(GELU_TANH, "gelu_tanh", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT) /* approximate='tanh' */      \
    X(SILU, "silu", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(SIN, "sin", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                           \
    X(COS, "cos", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                           \
    X(LOGICAL_NOT, "logical_not", 1, IC_K_UNARY, IC_F_PW|IC_F_BOOL) /* -> bool */              \
    /* ternary */                                                                              \
    X(WHERE, "where", 3, IC_K_TERNARY, IC_F_PW|IC_F_INT)     /* where(cond, a, b) */           \
    /* dtype conversion: attrs.dtype */                                                        \
    X(CAST, "cast", 1, IC_K_OTHER, IC_F_PW|IC_F_INT)                                           \
    /* reductions: attrs.dim_mask, attrs.keepdim */                                            \
    X(SUM, "sum", 1, IC_K_REDUCE, IC_F_RED|IC_F_INT)                                           \
    X(MEAN, "mean", 1, IC_K_REDUCE, IC_F_RED)                                                  \
    X(AMAX, "amax", 1, IC_K_REDUCE, IC_F_RED|IC_F_INT)                                         \
    X(AMIN, "amin", 1, IC_K_REDUCE, IC_F_RED|IC_F_INT)                                         \
    /* views as index maps (attrs.ndim/sizes/perm) */                                          \
    X(RESHAPE, "reshape", 1, IC_K_OTHER, IC_F_VIEW)                                            \
    X(PERMUTE, "permute", 1, IC_K_OTHER, IC_F_VIEW)                                            \
    X(EXPAND, "expand", 1, IC_K_OTHER, IC_F_VIEW)                                              \
    /* --- added by inductor_c (appended: earlier values are unchanged) --- */                 \
    /* unary: rounding ops keep int dtypes, float math promotes ints */                        \
    X(FLOOR, "floor", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                         \
    X(CEIL, "ceil", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                           \
    X(ROUND, "round", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)        /* half to even */               \
    X(TRUNC, "trunc", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                         \
    X(SIGN, "sign", 1, IC_K_UNARY, IC_F_PW|IC_F_INT)                                           \
    X(ERF, "erf", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                           \
    X(LOG1P, "log1p", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                       \
    X(EXPM1, "expm1", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                       \
    X(LOG2, "log2", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(EXP2, "exp2", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(TAN, "tan", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                           \
    X(ATAN, "atan", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(ISNAN, "isnan", 1, IC_K_UNARY, IC_F_PW|IC_F_BOOL)        /* -> bool */                   \
    X(ISINF, "isinf", 1, IC_K_UNARY, IC_F_PW|IC_F_BOOL)        /* -> bool */                   \
    X(ISFINITE, "isfinite", 1, IC_K_UNARY, IC_F_PW|IC_F_BOOL)  /* -> bool */                   \
    X(BITWISE_NOT, "bitwise_not", 1, IC_K_UNARY, IC_F_PW|IC_F_INT|IC_F_BITS) /* ints and bool */ \
    /* binary */                                                                               \
    X(FMOD, "fmod", 2, IC_K_BINARY, IC_F_PW|IC_F_INT)         /* sign of the dividend */       \
    X(REMAINDER, "remainder", 2, IC_K_BINARY, IC_F_PW|IC_F_INT) /* Python %: sign of the divisor */ \
    X(FLOOR_DIVIDE, "floor_divide", 2, IC_K_BINARY, IC_F_PW|IC_F_INT)                          \
    X(BITWISE_AND, "bitwise_and", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BITS|IC_F_COMM) /* ints and bool */ \
    X(BITWISE_OR, "bitwise_or", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BITS|IC_F_COMM)          \
    X(BITWISE_XOR, "bitwise_xor", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BITS|IC_F_COMM)        \
    X(LOGICAL_XOR, "logical_xor", 2, IC_K_BINARY, IC_F_PW|IC_F_BOOL|IC_F_COMM) /* -> bool */   \
    X(ATAN2, "atan2", 2, IC_K_BINARY, IC_F_PW|IC_F_FLOAT)                                      \
    /* reductions */                                                                           \
    X(PROD, "prod", 1, IC_K_REDUCE, IC_F_RED|IC_F_INT)         /* bool/int -> i64 */           \
    X(ARGMAX, "argmax", 1, IC_K_REDUCE, IC_F_RED|IC_F_INT)     /* -> i64; first max; NaN is max; index over the reduced dims, row-major */ \
    X(ARGMIN, "argmin", 1, IC_K_REDUCE, IC_F_RED|IC_F_INT)     /* -> i64; first min; NaN is min */ \
    /* data movement (ic_slice, ic_cat, ic_index_select, ic_arange) */                         \
    X(SLICE, "slice", 1, IC_K_OTHER, IC_F_VIEW)        /* attrs dim, start, step */            \
    X(CAT, "cat", 2, IC_K_OTHER, IC_F_GATHER)            /* attrs dim; promotes */             \
    X(INDEX_SELECT, "index_select", 2, IC_K_OTHER, IC_F_GATHER) /* (a, 1-D int index), attrs dim */ \
    X(ARANGE, "arange", 0, IC_K_OTHER, IC_F_LEAF)      /* start + i*step */                    \
    /* extern (library) call: attrs ext_kind, params, num (beta), num2 (alpha); ic_extern */   \
    X(EXTERN, "extern", -1, IC_K_OTHER, IC_F_EXT)     /* 1..3 tensor operands */          \
    /* unary, appended: inverse trigonometric and hyperbolic (NaN outside the domain) */        \
    X(ASIN, "asin", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(ACOS, "acos", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                         \
    X(ASINH, "asinh", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                       \
    X(ACOSH, "acosh", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                       \
    X(ATANH, "atanh", 1, IC_K_UNARY, IC_F_PW|IC_F_FLOAT)                                       \
    /* binary, appended: shifts of integers (the common integer dtype; a shift by a negative   \
     * amount or by the width or more gives 0, or the sign for a signed right shift) */          \
    X(LSHIFT, "bitwise_left_shift", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BITS)                \
    X(RSHIFT, "bitwise_right_shift", 2, IC_K_BINARY, IC_F_PW|IC_F_INT|IC_F_BITS) /* arithmetic when signed */

typedef enum ic_kind { IC_K_UNARY, IC_K_BINARY, IC_K_TERNARY, IC_K_REDUCE, IC_K_OTHER } ic_kind;

enum {
    IC_F_PW = 1 << 0,
    IC_F_RED = 1 << 1,
    IC_F_VIEW = 1 << 2,
    IC_F_GATHER = 1 << 3,
    IC_F_LEAF = 1 << 4,
    IC_F_EXT = 1 << 5,
    IC_F_FLOAT = 1 << 6,
    IC_F_INT = 1 << 7,
    IC_F_BOOL = 1 << 8,
    IC_F_BITS = 1 << 9,
    IC_F_COMM = 1 << 10,
};
#define IC_F_WHAT (IC_F_PW | IC_F_RED | IC_F_VIEW | IC_F_GATHER | IC_F_LEAF | IC_F_EXT)

typedef enum ic_op {
#define IC_X_ENUM(name, text, nin, kind, flags) IC_OP_##name,
    IC_OPS(IC_X_ENUM)
#undef IC_X_ENUM
    IC_OP_COUNT
} ic_op;

/* Adding an op: append it (earlier ops keep their numbers), give it its row's flags, then update this count and every switch
 * over ops that must know it (the shared op layer codegen/ops.c, graph/vjp.h, graph.c). */
#ifdef __cplusplus
static_assert(IC_OP_COUNT == 81, "an op was added or removed: see above");
#else
_Static_assert(IC_OP_COUNT == 81, "an op was added or removed: see above");
#endif

static inline unsigned ic_op_flags(ic_op op) {
    static const unsigned short flags[] = {
#define IC_X_FLAGS(name, text, nin, kind, flags) flags,
        IC_OPS(IC_X_FLAGS)
#undef IC_X_FLAGS
    };
    return (unsigned)op < IC_OP_COUNT ? flags[op] : 0;
}

#endif
