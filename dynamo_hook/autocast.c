/* autocast.c — torch.autocast's casting of an op's tensor arguments, applied in the graph
 * (training, issue 22 deliverable 5).
 *
 * The autocast state is a guard of every capture (dh_tl_autocast: cpu enabled | dtype + 1 in
 * bits 1..7, cuda enabled (bit 8) | dtype + 1 in bits 9..15). For an op that guards.c's table
 * says autocast affects, dh_autocast_policy answers what eager's autocast does on the trace's
 * device:
 *   lower precision (the matmul/conv/attention ops both torch's CPU and CUDA lists share):
 *     floating arguments other than float64 are cast to the autocast dtype, then the op runs;
 *   fp32 (the CPU losses checked against eager): the same cast to float32;
 *   unaffected on the CPU (ops only CUDA's lists hold, checked against eager: they run in
 *     their inputs' dtype): the op runs as without autocast;
 *   anything else: not captured (the caller breaks the graph, as before).
 * The casts are graph values, so the backward rules give eager's gradient dtypes (a cast's
 * gradient is cast back).
 */
#include "ops_internal.h"

static const char *const lower_ops[] = {
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "mm", "bmm", "addmm", "baddbmm", "addbmm", "linear", "matmul", "prelu",
    "scaled_dot_product_attention", NULL};
static const char *const cpu_fp32_ops[] = {"cross_entropy", "mse_loss", NULL};
static const char *const cpu_unaffected_ops[] = {
    "sum", "softmax", "log_softmax", "exp", "log", "log10", "log2", "log1p", "expm1", "rsqrt",
    "reciprocal", "sinh", "cosh", "tan", "acos", "asin", "erfinv", "softplus", "pow",
    "layer_norm", "group_norm", "cumsum", "cumprod", "norm", "logsumexp", "cat", "stack", NULL};

static int in(const char *const *list, const char *name) {
    while (name[0] == '_') /* __matmul__, _conv2d-style aliases */
        name++;
    for (int i = 0; list[i]; i++) {
        size_t n = strlen(list[i]);
        if (strncmp(name, list[i], n) == 0 && (name[n] == 0 || (name[n] == '_' && name[n + 1] == 0) ||
                                                (name[n] == '_' && name[n + 1] == '_')))
            return 1; /* exact, in-place (pow_) or dunder (matmul__) form */
    }
    return 0;
}

/* 0: run the op unchanged; 1: cast floating non-f64 tensor arguments to *to; -1: not captured */
int dh_autocast_policy(const trace *t, const char *name, ic_dtype *to) {
    int key = dh_tl_autocast;
    if (t->device_type < 0)
        return -1; /* no tensor input yet: the device autocast would follow is unknown */
    int cpu = (key & 1) && t->device_type == TC_DEV_CPU;
    int cuda = (key & (1 << 8)) && t->device_type == TC_DEV_CUDA;
    if (!cpu && !cuda)
        return 0; /* autocast is on for another device only: this graph's ops are unaffected */
    int dt = cpu ? ((key >> 1) & 0x7f) - 1 : ((key >> 9) & 0x7f) - 1;
    if (name == NULL || dt < 0 || dt >= IC_DTYPE_COUNT)
        return -1;
    if (in(lower_ops, name)) {
        *to = (ic_dtype)dt;
        return 1;
    }
    if (cpu && in(cpu_fp32_ops, name)) {
        *to = IC_F32;
        return 1;
    }
    if (cpu && in(cpu_unaffected_ops, name))
        return 0;
    return -1;
}

/* The cast of one argument: a new tensor value when it is floating, not float64 and not
 * already of dtype `to` (eager's autocast eligibility); else the argument itself. */
int dh_autocast_arg(trace *t, var *a, ic_dtype to, var **out) {
    *out = a;
    if (a == NULL || a->kind != V_TENSOR)
        return 0;
    ic_dtype d = ic_value_meta(t->g, a->val)->dtype;
    if ((d != IC_F16 && d != IC_BF16 && d != IC_F32) || d == to)
        return 0;
    var *c = sym_alloc(t, 1);
    if (c == NULL)
        return -1;
    if (sym_tensor_out(t, ic_cast(t->g, a->val, to), c) < 0)
        return -1;
    *out = c;
    return 0;
}
