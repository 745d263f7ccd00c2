/* ic_ops.h — the one table of graph operations (X-macro).
 *
 * X(NAME, text, nin, kind)
 *   NAME  enum member IC_OP_NAME
 *   text  printed name in the graph text format
 *   nin   number of value operands (-1: variable)
 *   kind  IC_K_UNARY / IC_K_BINARY / IC_K_TERNARY / IC_K_REDUCE / IC_K_OTHER
 *
 * Semantics follow the aten op of the same name (float math in the promoted dtype;
 * integer math where torch does integer math). Python scalars enter as IC_OP_SCALAR
 * values ("weak" for type promotion, like torch's wrapped numbers).
 */
#ifndef IC_OPS_H
#define IC_OPS_H

#define IC_OPS(X)                                                     \
    /* leaves */                                                      \
    X(INPUT, "input", 0, IC_K_OTHER)       /* graph input tensor */    \
    X(SCALAR, "scalar", 0, IC_K_OTHER)     /* python number (weak) */  \
    /* binary pointwise, broadcasting, type promotion */              \
    X(ADD, "add", 2, IC_K_BINARY)                                     \
    X(SUB, "sub", 2, IC_K_BINARY)                                     \
    X(MUL, "mul", 2, IC_K_BINARY)                                     \
    X(DIV, "div", 2, IC_K_BINARY)          /* true division */         \
    X(MAXIMUM, "maximum", 2, IC_K_BINARY)  /* NaN-propagating */       \
    X(MINIMUM, "minimum", 2, IC_K_BINARY)  /* NaN-propagating */       \
    X(POW, "pow", 2, IC_K_BINARY)                                     \
    X(EQ, "eq", 2, IC_K_BINARY)            /* -> bool */               \
    X(NE, "ne", 2, IC_K_BINARY)                                       \
    X(LT, "lt", 2, IC_K_BINARY)                                       \
    X(LE, "le", 2, IC_K_BINARY)                                       \
    X(GT, "gt", 2, IC_K_BINARY)                                       \
    X(GE, "ge", 2, IC_K_BINARY)                                       \
    X(LOGICAL_AND, "logical_and", 2, IC_K_BINARY) /* -> bool */       \
    X(LOGICAL_OR, "logical_or", 2, IC_K_BINARY)                       \
    /* unary pointwise (int inputs promote to float for float math) */\
    X(NEG, "neg", 1, IC_K_UNARY)                                      \
    X(ABS, "abs", 1, IC_K_UNARY)                                      \
    X(EXP, "exp", 1, IC_K_UNARY)                                      \
    X(LOG, "log", 1, IC_K_UNARY)                                      \
    X(SQRT, "sqrt", 1, IC_K_UNARY)                                    \
    X(RSQRT, "rsqrt", 1, IC_K_UNARY)                                  \
    X(RECIPROCAL, "reciprocal", 1, IC_K_UNARY)                        \
    X(SIGMOID, "sigmoid", 1, IC_K_UNARY)                              \
    X(TANH, "tanh", 1, IC_K_UNARY)                                    \
    X(RELU, "relu", 1, IC_K_UNARY)                                    \
    X(GELU, "gelu", 1, IC_K_UNARY)          /* erf form */             \
    X(GELU_TANH, "gelu_tanh", 1, IC_K_UNARY) /* approximate='tanh' */  \
    X(SILU, "silu", 1, IC_K_UNARY)                                    \
    X(SIN, "sin", 1, IC_K_UNARY)                                      \
    X(COS, "cos", 1, IC_K_UNARY)                                      \
    X(LOGICAL_NOT, "logical_not", 1, IC_K_UNARY) /* -> bool */        \
    /* ternary */                                                     \
    X(WHERE, "where", 3, IC_K_TERNARY)     /* where(cond, a, b) */     \
    /* dtype conversion: attrs.dtype */                               \
    X(CAST, "cast", 1, IC_K_OTHER)                                    \
    /* reductions: attrs.dim_mask, attrs.keepdim */                   \
    X(SUM, "sum", 1, IC_K_REDUCE)                                     \
    X(MEAN, "mean", 1, IC_K_REDUCE)                                   \
    X(AMAX, "amax", 1, IC_K_REDUCE)                                   \
    X(AMIN, "amin", 1, IC_K_REDUCE)                                   \
    /* views as index maps (attrs.ndim/sizes/perm) */                 \
    X(RESHAPE, "reshape", 1, IC_K_OTHER)                              \
    X(PERMUTE, "permute", 1, IC_K_OTHER)                              \
    X(EXPAND, "expand", 1, IC_K_OTHER)                                \
    /* --- added by inductor_c (appended: earlier values are unchanged) --- */ \
    /* unary: rounding ops keep int dtypes, float math promotes ints */ \
    X(FLOOR, "floor", 1, IC_K_UNARY)                                  \
    X(CEIL, "ceil", 1, IC_K_UNARY)                                    \
    X(ROUND, "round", 1, IC_K_UNARY)        /* half to even */         \
    X(TRUNC, "trunc", 1, IC_K_UNARY)                                  \
    X(SIGN, "sign", 1, IC_K_UNARY)                                    \
    X(ERF, "erf", 1, IC_K_UNARY)                                      \
    X(LOG1P, "log1p", 1, IC_K_UNARY)                                  \
    X(EXPM1, "expm1", 1, IC_K_UNARY)                                  \
    X(LOG2, "log2", 1, IC_K_UNARY)                                    \
    X(EXP2, "exp2", 1, IC_K_UNARY)                                    \
    X(TAN, "tan", 1, IC_K_UNARY)                                      \
    X(ATAN, "atan", 1, IC_K_UNARY)                                    \
    X(ISNAN, "isnan", 1, IC_K_UNARY)        /* -> bool */              \
    X(ISINF, "isinf", 1, IC_K_UNARY)        /* -> bool */              \
    X(ISFINITE, "isfinite", 1, IC_K_UNARY)  /* -> bool */              \
    X(BITWISE_NOT, "bitwise_not", 1, IC_K_UNARY) /* ints and bool */   \
    /* binary */                                                      \
    X(FMOD, "fmod", 2, IC_K_BINARY)         /* sign of the dividend */ \
    X(REMAINDER, "remainder", 2, IC_K_BINARY) /* Python %: sign of the divisor */ \
    X(FLOOR_DIVIDE, "floor_divide", 2, IC_K_BINARY)                   \
    X(BITWISE_AND, "bitwise_and", 2, IC_K_BINARY) /* ints and bool */ \
    X(BITWISE_OR, "bitwise_or", 2, IC_K_BINARY)                       \
    X(BITWISE_XOR, "bitwise_xor", 2, IC_K_BINARY)                     \
    X(LOGICAL_XOR, "logical_xor", 2, IC_K_BINARY) /* -> bool */       \
    X(ATAN2, "atan2", 2, IC_K_BINARY)                                 \
    /* reductions */                                                  \
    X(PROD, "prod", 1, IC_K_REDUCE)         /* bool/int -> i64 */      \
    X(ARGMAX, "argmax", 1, IC_K_REDUCE)     /* -> i64; first max; NaN is max; index over the reduced dims, row-major */ \
    X(ARGMIN, "argmin", 1, IC_K_REDUCE)     /* -> i64; first min; NaN is min */ \
    /* data movement (ic_slice, ic_cat, ic_index_select, ic_arange) */ \
    X(SLICE, "slice", 1, IC_K_OTHER)        /* attrs dim, start, step */ \
    X(CAT, "cat", 2, IC_K_OTHER)            /* attrs dim; promotes */  \
    X(INDEX_SELECT, "index_select", 2, IC_K_OTHER) /* (a, 1-D int index), attrs dim */ \
    X(ARANGE, "arange", 0, IC_K_OTHER)      /* start + i*step */ \
    /* extern (library) call: attrs ext_kind, params, num (beta), num2 (alpha); ic_extern */ \
    X(EXTERN, "extern", -1, IC_K_OTHER)     /* 1..3 tensor operands */

typedef enum ic_kind { IC_K_UNARY, IC_K_BINARY, IC_K_TERNARY, IC_K_REDUCE, IC_K_OTHER } ic_kind;

typedef enum ic_op {
#define IC_X_ENUM(name, text, nin, kind) IC_OP_##name,
    IC_OPS(IC_X_ENUM)
#undef IC_X_ENUM
    IC_OP_COUNT
} ic_op;

#endif
