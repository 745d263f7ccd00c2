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
            PyErr_Clear();
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
