/* cg.h — state shared by the CPU code generator (cpu_llvm.c) and its math library
 * (vmath.c). Values are LLVM scalars (width 1) or <VF x T> vectors (width VF). */
#ifndef IC_CG_H
#define IC_CG_H

#include <llvm-c/Core.h>

#include "../ic_internal.h"

#define IC_VF 16

/* The target description of the shared op layer (ops.c). */
enum { IC_FP2I_WRAP64, IC_FP2I_X86 }; /* float -> int casts: ops.c ol_fp_to_int */
typedef struct ic_target {
    int fp2int;
} ic_target;

typedef struct cg {
    ic_ctx *c;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMBuilderRef ab; /* allocas at the entry block */
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, vd;
    LLVMValueRef fn;
    LLVMBasicBlockRef entry;
    ic_kernel *k;
    int width;           /* 1 or IC_VF for the code being emitted */
    int32_t vec_var;     /* var whose lanes are consecutive in vector code, -1 none */
    LLVMValueRef *var_val;   /* per var: current scalar i64 value */
    LLVMValueRef *buf_ptr;   /* per buffer: base pointer */
    LLVMValueRef *memo;      /* per expr: value in the current scope */
    uint32_t *memo_gen;
    uint32_t gen;
    LLVMValueRef *rowval;    /* per item: reduction result of the current row */
    LLVMValueRef loop_lo[IC_MAX_DIMS], loop_hi[IC_MAX_DIMS]; /* inner loop bounds */
    LLVMValueRef vo_u;        /* vec_outer: the current vector number, NULL elsewhere */
    LLVMValueRef *rowval_arr; /* vec_outer: per item, [unroll x <16 x T>] row values */
    uint32_t *scan_seen, scan_gen; /* gen_kernel's walk over expressions: visited stamps */
    ic_xid *scan_stack;
    LLVMValueRef syms;        /* dynamic graphs: i64 symbol values (the body's last param) */
    /* the exp inside tanh, sigmoid, erf and gelu (NULL: vm_exp); the GPU's ex2-based one */
    LLVMValueRef (*exp_fn)(void *arg, LLVMValueRef x);
    void *exp_arg;
    ic_target target;
} cg;

LLVMTypeRef cg_type(cg *g, ic_dtype t, int width);
LLVMValueRef cg_splat(cg *g, LLVMValueRef scalar, int width);
LLVMValueRef cg_constf(cg *g, LLVMTypeRef ty, double v); /* ty scalar or vector */
LLVMValueRef cg_consti(cg *g, LLVMTypeRef ty, long long v);
LLVMValueRef cg_intrin(cg *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args,
                       int nargs);
LLVMValueRef cg_libm1(cg *g, const char *name, LLVMValueRef x); /* per-lane libm call */
LLVMValueRef cg_libm2(cg *g, const char *name, LLVMValueRef x, LLVMValueRef y);

/* f32 math emitted as straight-line IR (vectorizes with the surrounding code) */
LLVMValueRef vm_exp(cg *g, LLVMValueRef x);
LLVMValueRef vm_log(cg *g, LLVMValueRef x);
LLVMValueRef vm_tanh(cg *g, LLVMValueRef x);
LLVMValueRef vm_erf(cg *g, LLVMValueRef x);
LLVMValueRef vm_sigmoid(cg *g, LLVMValueRef x);
LLVMValueRef vm_gelu(cg *g, LLVMValueRef x);
typedef LLVMValueRef (*vm_exp_fn)(void *arg, LLVMValueRef x);
/* ops.c: the shared op layer */
LLVMValueRef ol_fp_to_int(cg *g, LLVMValueRef v, ic_dtype to, LLVMTypeRef tt); /* tt: to's (vector) type */
LLVMValueRef vm_gelu_ex(cg *g, LLVMValueRef x, vm_exp_fn ex, void *arg); /* ex NULL: exp_fn or vm_exp; no inf/NaN cases */

#endif
