/* cg.h — the LLVM emission state both code generators share (the CPU's cpu_*.c use it
 * directly, the GPU's gg embeds one), the target description, and the shared op layer
 * (ops.c) and math (vmath.c, vmath_own.c) that emit through it. Values are LLVM scalars
 * (width 1) or <VF x T> vectors (width VF, CPU only). */
#ifndef IC_CG_H
#define IC_CG_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "../ic_internal.h"

#define IC_VF 16

/* The target description of the shared op layer (ops.c explains each field). */
enum { IC_FP2I_WRAP64, IC_FP2I_X86, IC_FP2I_CUDA }; /* float -> int casts: ops.c ol_fp_to_int */
enum { IC_MATH_LIBM, IC_MATH_OWN };   /* transcendentals: libm + intrinsics / own polynomials */
typedef struct ic_target {
    int fp2int;       /* IC_FP2I_* */
    int math;         /* IC_MATH_* */
    bool half_f32;    /* f16/bf16 held in f32 registers, rounded after each op */
    bool ex2;         /* NVPTX ex2.approx: exp and erf's outer exp through it */
    bool nan_minmax;  /* f32 maximum/minimum as llvm.maximum/minimum */
    bool bf16_cvt;    /* f32 -> bf16 by cvt.rn.bf16.f32 */
    bool fmod_f64;    /* f32 fmod through f64 */
} ic_target;

static inline bool ic_is_unsigned(ic_dtype t) { return t == IC_BOOL || t == IC_U8; }

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
    uint32_t *buf_seen, buf_gen; /* CPU: a kernel's buffers, stamped (buf_list: listed) */
    int *buf_list;
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

/* Builder shorthands of both code generators (the GPU's gg wraps them on its cg) */
static inline LLVMValueRef cg_ki(LLVMTypeRef t, long long v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static inline LLVMValueRef cg_kf(LLVMValueRef like, double v) { return LLVMConstReal(LLVMTypeOf(like), v); }
static inline LLVMValueRef cg_intrin1(cg *g, const char *name, LLVMValueRef x) {
    LLVMTypeRef t = LLVMTypeOf(x);
    return cg_intrin(g, name, &t, 1, &x, 1);
}
static inline LLVMValueRef cg_fma(cg *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) { /* llvm.fma: fused */
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef args[3] = {a, b, c};
    return cg_intrin(g, "llvm.fma", &t, 1, args, 3);
}
static inline LLVMValueRef cg_sel(cg *g, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildSelect(g->b, c, a, b, "");
}
static inline LLVMValueRef cg_fcmp(cg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
    return LLVMBuildFCmp(g->b, p, a, b, "");
}
static inline LLVMValueRef cg_isnan(cg *g, LLVMValueRef v) { return cg_fcmp(g, LLVMRealUNO, v, v); }
static inline LLVMValueRef cg_and(cg *g, LLVMValueRef a, LLVMValueRef b) { /* NULL: true */
    if (!a) return b;
    if (!b) return a;
    return LLVMBuildAnd(g->b, a, b, "");
}

/* part.c: one LLVM module of a compilation (its own context), built on the calling thread,
 * then verified, optimized and emitted by ic_part_run on any thread */
typedef struct ic_part {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTargetMachineRef tm;  /* the part's target machine; NULL: one of the host pool's for the run */
    bool own_tm;              /* tm is disposed with the part */
    const char *passes;       /* the pass pipeline (LLVMRunPasses text) */
    bool asm_out;             /* emit assembly (PTX), else an object file */
    const char *what;         /* "CPU" / "GPU": names the backend in messages */
    const char *print_after;  /* debug & IC_DEBUG_LLVM: print the module after the passes under it */
    unsigned debug;           /* IC_DEBUG_* */
    LLVMMemoryBufferRef out;  /* the emitted code */
    double t_opt, t_emit, cpu; /* ms; cpu: thread time when run on a thread of ic_parts_run */
    char err[300];            /* "" or why the part failed */
} ic_part;
/* Loop strength reduction: LLVM's code generator runs it on every loop of every module, and
 * on the CPU kernels of a big graph it was ~20% of code generation (DenseNet's backward: 0.38
 * of 2.0 s in llc) while only long loops gain from it (a 4096x1024 layernorm runs ~15% slower
 * without it; rows of up to 1M elements and DenseNet's training step, batch 2, no change).
 * So the code generator's own LSR is off (LLVM's -disable-lsr, set once for the process by
 * ic_part_init) and a pipeline that wants it names it last (IC_LSR_PASSES: the same passes
 * the code generator ran first): NVPTX always, CPU modules of hot kernels (cpu_module.c). */
#define IC_LSR_PASSES "function(loop(canon-freeze,loop-reduce))"
int ic_part_init(ic_part *P, LLVMTargetMachineRef tm, const char *name); /* ctx, module for tm, builder; -1: P->err */
void ic_part_free(ic_part *P);
void ic_part_run(ic_part *P);
void ic_parts_run(ic_part *const *parts, int n); /* parts[1..] on threads, parts[0] here; all done on return */
/* the host TargetMachine pool (LLVMTargetMachineRef; NULL with msg) */
void *ic_host_tm_acquire(char *msg, size_t n);
void ic_host_tm_release(void *tm);

/* f32 math emitted as straight-line IR (vectorizes with the surrounding code) */
LLVMValueRef vm_exp(cg *g, LLVMValueRef x);
LLVMValueRef vm_log(cg *g, LLVMValueRef x);
LLVMValueRef vm_tanh(cg *g, LLVMValueRef x);
LLVMValueRef vm_erf(cg *g, LLVMValueRef x);
LLVMValueRef vm_sigmoid(cg *g, LLVMValueRef x);
LLVMValueRef vm_gelu(cg *g, LLVMValueRef x);
typedef LLVMValueRef (*vm_exp_fn)(void *arg, LLVMValueRef x);
LLVMValueRef vm_gelu_ex(cg *g, LLVMValueRef x, vm_exp_fn ex, void *arg); /* ex NULL: exp_fn or vm_exp; no inf/NaN cases */
/* sin/cos/tan of f32 or f64 values, within 1 ulp for every input (huge ones by libm) */
typedef enum { VM_SIN, VM_COS, VM_TAN } vm_trig_fn;
LLVMValueRef vm_trig(cg *g, LLVMValueRef x, vm_trig_fn which);

/* vmath_own.c: scalar f32 math for targets without libm (IC_MATH_OWN) */
LLVMValueRef vm_sincos(cg *g, LLVMValueRef x, bool want_cos);
LLVMValueRef vm_pow(cg *g, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef vm_exp2(cg *g, LLVMValueRef x);
LLVMValueRef vm_log2(cg *g, LLVMValueRef x);
LLVMValueRef vm_atan(cg *g, LLVMValueRef x);
LLVMValueRef vm_atan2(cg *g, LLVMValueRef y, LLVMValueRef x);
LLVMValueRef vm_fmod(cg *g, LLVMValueRef a, LLVMValueRef b);
LLVMValueRef vm_exp_approx(cg *g, LLVMValueRef a); /* one ex2.approx of a log2 e */
LLVMValueRef vm_exp_ex2(cg *g, LLVMValueRef x);    /* ex2.approx with the lost low part */

/* ops.c: the shared op layer (the op semantics of both backends) */
void ol_target_cpu(cg *g, const char *triple);
void ol_target_nvptx(cg *g, int sm);
LLVMTypeRef ol_rtype(cg *g, ic_dtype t, int width);  /* register type of a dtype */
LLVMValueRef ol_fp_to_int(cg *g, LLVMValueRef v, ic_dtype to, LLVMTypeRef tt); /* tt: to's (vector) type */
LLVMValueRef ol_to_bool(cg *g, LLVMValueRef v, ic_dtype from);
LLVMValueRef ol_round_half(cg *g, LLVMValueRef f, ic_dtype t); /* half_f32 targets */
LLVMValueRef ol_convert(cg *g, LLVMValueRef v, ic_dtype from, ic_dtype to);
LLVMValueRef ol_fmaxmin(cg *g, LLVMValueRef a, LLVMValueRef b, bool max);
LLVMValueRef ol_imaxmin(cg *g, LLVMValueRef a, LLVMValueRef b, bool max, ic_dtype t);
LLVMValueRef ol_exp_approx_cb(void *g, LLVMValueRef x); /* vm_exp_approx as a vm_exp_fn (arg: the cg) */
LLVMValueRef ol_unary(cg *g, ic_op op, ic_dtype t, LLVMValueRef a);
LLVMValueRef ol_binary(cg *g, ic_op op, ic_dtype ct, LLVMValueRef a, LLVMValueRef b, ic_xid bx);
LLVMValueRef ol_red_identity(cg *g, const ic_item *it, int width);
LLVMValueRef ol_red_combine(cg *g, const ic_item *it, LLVMValueRef acc, LLVMValueRef x);
void ol_arg_combine(cg *g, const ic_item *it, LLVMValueRef acc, LLVMValueRef ai, LLVMValueRef x,
                    LLVMValueRef xi, LLVMValueRef *ro, LLVMValueRef *ri);
LLVMValueRef ol_red_mean(cg *g, const ic_item *it, LLVMValueRef v, LLVMValueRef count); /* count NULL: red_count */
LLVMValueRef ol_red_out(cg *g, const ic_item *it, LLVMValueRef v, LLVMValueRef vi);     /* in the item's dtype */

#endif
