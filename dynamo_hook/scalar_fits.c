/* scalar_fits.c — eager's range check of a Python number converted to a tensor's dtype.
 *
 * fill_, setitem with a number, masked_fill, index_fill_, full/full_like/new_full, clamp and
 * where convert their number argument to the result dtype with c10::checked_convert, which
 * raises "value cannot be converted to type ... without overflow" where the number does not
 * fit; graph code would cast it silently (wrapping or saturating). The rule (c10/util/
 * overflows.h, checked against eager): into an integer dtype, a float that is NaN, infinite
 * or outside [lowest, max] overflows; an integer outside [lowest, max] overflows, except that
 * an unsigned dtype takes a negative integer n with -n <= max (two's complement wrap); into
 * a floating dtype, NaN and infinities fit, other values outside [lowest, max] overflow; a
 * bool tensor takes every number. A number the trace does not know (symbolic) is not checked.
 */
#include "ops_internal.h"

static const double dt_max[] = {
    [IC_U8] = 255.0, [IC_I8] = 127.0, [IC_I16] = 32767.0, [IC_I32] = 2147483647.0,
    [IC_I64] = 9223372036854775807.0, [IC_F16] = 65504.0, [IC_BF16] = 3.3895313892515355e38,
    [IC_F32] = 3.4028234663852886e38, [IC_F64] = 1.7976931348623157e308};

/* 1: eager raises converting the number obj to dtype; 0: it fits (or is not a number) */
int sym_scalar_overflows(PyObject *obj, int dtype) {
    if (dtype == IC_BOOL || dtype < 0 || dtype >= IC_DTYPE_COUNT || obj == NULL)
        return 0;
    int isint = dtype != IC_F16 && dtype != IC_BF16 && dtype != IC_F32 && dtype != IC_F64;
    double mx = dt_max[dtype], lo = dtype == IC_U8 ? 0.0 : -mx - (isint ? 1.0 : 0.0);
    if (PyBool_Check(obj))
        return 0;
    if (PyLong_Check(obj)) {
        int ovf = 0;
        long long v = PyLong_AsLongLongAndOverflow(obj, &ovf);
        if (v == -1 && PyErr_Occurred()) {
            (void)tc_clear_expected(PyExc_Exception);
            return 0; /* not an int after all: eager decides */
        }
        if (ovf)
            return 1;
        if (dtype == IC_I64)
            return 0;
        if (dtype == IC_U8)
            return v > 255 || (v < 0 && v < -255);
        return (double)v > mx || (double)v < lo;
    }
    if (PyFloat_Check(obj)) {
        double v = PyFloat_AS_DOUBLE(obj);
        if (isnan(v))
            return isint;
        if (isinf(v))
            return isint;
        return v > mx || v < lo;
    }
    return 0;
}

int sym_check_scalar_fits(trace *t, const var *s, int dtype, const char *what) {
    if (s == NULL || s->kind != V_CONST || !sym_scalar_overflows(s->obj, dtype))
        return 0;
    return sym_fail(t, "%s: value cannot be converted to the tensor's dtype without overflow (eager raises)", what);
}

/* a count of bad elements (an int64 scalar of the graph) read after the kernels on the CPU:
 * nonzero, the frame runs eagerly instead (nothing is applied before the run ends), and eager
 * raises its own error */
int sym_add_check(trace *t, ic_val bad, const char *what) {
    if (bad < 0)
        return sym_check_graph(t) < 0 ? -1 : sym_fail(t, "%s: range check failed", what);
    if (t->nchk == t->capchk) {
        int cap = t->capchk ? 2 * t->capchk : 8;
        ic_val *nc = realloc(t->chk, sizeof *nc * (size_t)cap);
        if (nc == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        t->chk = nc;
        t->capchk = cap;
    }
    t->chk[t->nchk++] = bad;
    return 0;
}

/* every value of dtype `from` converts to `to` without eager's overflow error */
static int always_fits(int from, int to) {
    int fi = from == IC_F16 || from == IC_BF16 || from == IC_F32 || from == IC_F64;
    int ti = !(to == IC_F16 || to == IC_BF16 || to == IC_F32 || to == IC_F64);
    if (from == IC_BOOL || to == IC_BOOL || from == to || to == IC_F64)
        return 1;
    if (fi) /* NaN and inf fit a float; finite values the narrower range only */
        return !ti && dt_max[from] <= dt_max[to];
    if (to == IC_I64 || to == IC_BF16 || to == IC_F32)
        return 1;
    double lo = from == IC_U8 ? 0.0 : -dt_max[from] - 1.0;
    if (to == IC_U8) /* takes -255..255 from an integer */
        return dt_max[from] <= 255.0 && lo >= -255.0;
    return dt_max[from] <= dt_max[to] && (ti ? lo >= -dt_max[to] - 1.0 : 1);
}

/* A 0-d (or one-element) tensor value that eager converts with checked_convert (masked_fill,
 * index_fill, x[mask] = v: eager takes value.item()): where its dtype may not fit the target's,
 * the graph counts a value that overflows (scalar_overflows' rule, in f64 or i64) and the frame
 * reruns eagerly when it does (CPU); on CUDA such a value is left to eager. */
int sym_check_tensor_value_fits(trace *t, const var *s, int dtype, const char *what) {
    if (s == NULL || s->kind != V_TENSOR || dtype < 0 || dtype >= IC_DTYPE_COUNT)
        return 0;
    var r = *s;
    sym_resolve(t, &r);
    ic_meta m = *sym_metap(t, r.val);
    if (m.dtype < 0 || m.dtype >= IC_DTYPE_COUNT || always_fits(m.dtype, dtype))
        return 0;
    if (t->device_type == TC_DEV_CUDA)
        return sym_fail(t, "%s: a tensor value that may overflow the dtype (eager checks it) left to eager on CUDA", what);
    int fi = m.dtype == IC_F16 || m.dtype == IC_BF16 || m.dtype == IC_F32 || m.dtype == IC_F64;
    int ti = !(dtype == IC_F16 || dtype == IC_BF16 || dtype == IC_F32 || dtype == IC_F64);
    double mx = dt_max[dtype], lo = dtype == IC_U8 ? 0.0 : -mx - (ti ? 1.0 : 0.0);
    ic_val v = ic_cast(G, r.val, fi ? IC_F64 : IC_I64), bad;
    if (fi) {
        ic_dtype k = IC_F64;
        bad = ic_binary(G, IC_OP_LOGICAL_OR, ic_binary(G, IC_OP_GT, v, ic_scalar(G, mx, k)),
                        ic_binary(G, IC_OP_LT, v, ic_scalar(G, lo, k)));
        if (ti) /* NaN overflows an integer; inf is caught by the range */
            bad = ic_binary(G, IC_OP_LOGICAL_OR, bad, ic_binary(G, IC_OP_NE, v, v));
        else /* infinities fit a float */
            bad = ic_binary(G, IC_OP_LOGICAL_AND, bad, ic_binary(G, IC_OP_NE, ic_unary(G, IC_OP_ABS, v), ic_scalar(G, INFINITY, k)));
    } else {
        if (dtype == IC_U8)
            lo = -255.0;
        bad = ic_binary(G, IC_OP_LOGICAL_OR, ic_binary(G, IC_OP_GT, v, ic_scalar(G, mx, IC_I64)),
                        ic_binary(G, IC_OP_LT, v, ic_scalar(G, lo, IC_I64)));
    }
    bad = ic_reduce(G, IC_OP_SUM, ic_cast(G, bad, IC_I64), 0, 0, -1);
    return sym_add_check(t, bad, what);
}
