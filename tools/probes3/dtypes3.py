"""Integer overflow, type promotion, division by zero, NaN/inf in reductions, empty tensors in
reductions that eager raises on. One scenario per program (table driven)."""
import torch

from probe2 import scenario


def _mk(name, fn, inputs, **cfg):
    def scen(C, R):
        g = C(fn)
        for make in inputs:
            R.call(g, *make())
    scen.__name__ = name
    scen.__qualname__ = name
    scen.__module__ = __name__
    globals()[name] = scenario(scen, **cfg) if not cfg else scenario(**cfg)(scen)


u8 = lambda *v: torch.tensor(v, dtype=torch.uint8)  # noqa: E731
i8 = lambda *v: torch.tensor(v, dtype=torch.int8)  # noqa: E731
i16 = lambda *v: torch.tensor(v, dtype=torch.int16)  # noqa: E731
i32 = lambda *v: torch.tensor(v, dtype=torch.int32)  # noqa: E731
i64 = lambda *v: torch.tensor(v, dtype=torch.int64)  # noqa: E731
b = lambda *v: torch.tensor(v, dtype=torch.bool)  # noqa: E731
f16 = lambda *v: torch.tensor(v, dtype=torch.float16)  # noqa: E731
bf = lambda *v: torch.tensor(v, dtype=torch.bfloat16)  # noqa: E731
f32 = lambda *v: torch.tensor(v, dtype=torch.float32)  # noqa: E731
f64 = lambda *v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
inf, nan = float("inf"), float("nan")

E = dict(exact=True)

# ---- integer overflow / wraparound
_mk("u8_add_wraps", lambda a, b: (a + b, a * b, a - b), [lambda: (u8(200, 255, 0), u8(100, 1, 1))], **E)
_mk("i8_mul_wraps", lambda a: (a * 3, a * a, -a, a.abs()), [lambda: (i8(-128, 127, 50, -7),)], **E)
_mk("i16_sum_promotes_int64", lambda a: (a.sum(), a.cumsum(0), a.prod()), [lambda: (i16(30000, 30000, 30000),)], **E)
_mk("u8_sum_promotes_int64", lambda a: (a.sum(), a.sum(dtype=torch.uint8), a.mean(dtype=torch.float32)), [lambda: (u8(200, 200, 200),)], **E)
_mk("i32_mul_overflow", lambda a: (a * a, a + 2147483647), [lambda: (i32(65536, -3, 2),)], **E)
_mk("i64_add_overflow", lambda a: (a + 1, a * 2), [lambda: (i64(9223372036854775807, -9223372036854775807),)], **E)
_mk("u8_neg_and_sub_scalar", lambda a: (a - 5, 5 - a, a.neg() if False else a * 1), [lambda: (u8(0, 3, 250),)], **E)
_mk("u8_bitwise_shifts", lambda a: (a << 3, a >> 1, ~a, a ^ 0xF0, a & 7, a | 128), [lambda: (u8(1, 37, 255),)], **E)
_mk("i8_shift_negative", lambda a: (a >> 2, a << 2), [lambda: (i8(-128, -1, 5),)], **E)
_mk("i64_shift_by_large", lambda a, s: (a << s, a >> s), [lambda: (i64(1, -1, 5), i64(63, 64, 70))], **E)
_mk("int_pow_negative_exp_raises", lambda a: a ** -1, [lambda: (i64(1, 2),)], **E)
_mk("int_pow_overflow", lambda a: (a ** 3, a.pow(2)), [lambda: (i32(2000, -2000, 70000),), lambda: (u8(7, 16),)], **E)

# ---- promotion
_mk("u8_plus_i8_promotes_i16", lambda a, b: (a + b, a * b), [lambda: (u8(200, 1), i8(-100, 5))], **E)
_mk("bool_plus_bool", lambda a, b: (a + b, a * b, a & b, a | b, a ^ b, ~a), [lambda: (b(True, False, True), b(True, True, False))], **E)
_mk("bool_minus_raises", lambda a, b: a - b, [lambda: (b(True), b(False))], **E)
_mk("bool_neg_raises", lambda a: -a, [lambda: (b(True, False),)], **E)
_mk("bool_sum_mean", lambda a: (a.sum(), a.float().mean(), a.any(), a.all(), a.cumsum(0)), [lambda: (b(True, False, True),)], **E)
_mk("bool_mean_raises", lambda a: a.mean(), [lambda: (b(True, False),)], **E)
_mk("int_mean_raises", lambda a: a.mean(), [lambda: (i64(1, 2),)], **E)
_mk("int_tensor_float_scalar", lambda a: (a * 1.5, a + 0.5, a / 2, a // 2, a % 3), [lambda: (i32(3, -7, 8),), lambda: (u8(3, 7),)], **E)
_mk("int_tensor_bool_scalar", lambda a: (a + True, a * False), [lambda: (i8(3, -7),)], **E)
_mk("f16_plus_f32_scalar_tensor", lambda a, s: (a + s, a * s, s + a), [lambda: (f16(1, 2), torch.tensor(1e-4))], **E)
_mk("f16_plus_bf16_promotes_f32", lambda a, c: (a + c, a * c), [lambda: (f16(1.5, 1000), bf(1.25, 3))])
_mk("f16_overflow_to_inf", lambda a: (a * 1000, a + 65504, a.exp(), a.sum()), [lambda: (f16(100, 60000, -70),)], **E)
_mk("f16_sum_accumulates_wide", lambda a: (a.sum(), a.mean(), a.cumsum(0)[-1]), [lambda: (torch.full((4096,), 1.0, dtype=torch.float16),)], **E)
_mk("bf16_arith_rounding", lambda a, c: (a + c, a * c, a / c, a - c), [lambda: (bf(1.0, 256, 3.14159), bf(0.00390625, 1, 7))], **E)
_mk("int_zero_dim_with_float_tensor", lambda a, s: (a + s, s * a), [lambda: (f16(1, 2), torch.tensor(3))], **E)
_mk("float_zero_dim_with_int_tensor", lambda a, s: (a + s, a * s), [lambda: (i32(1, 2), torch.tensor(2.5, dtype=torch.float64))], **E)
_mk("complex_scalar_with_float_tensor", lambda a: (a * 1j, a + (2 + 1j)), [lambda: (f32(1, 2),), lambda: (f64(1.0),)])
_mk("where_mixed_dtypes", lambda c, a, d: (torch.where(c, a, d), torch.where(c, a, 2.5), torch.where(c, 1, d)), [lambda: (b(True, False), i8(1, 2), u8(3, 4))], **E)
_mk("clamp_int_with_float_bounds", lambda a: (a.clamp(0.5, 2.5), a.clamp(min=1), torch.clamp(a, max=torch.tensor(2.0))), [lambda: (i64(0, 1, 3),)], **E)
_mk("maximum_mixed", lambda a, c: (torch.maximum(a, c), torch.minimum(a, c), torch.fmax(a.float(), c.float())), [lambda: (i32(1, 5), u8(3, 2))], **E)

# ---- division
_mk("int_div_by_zero_true_div", lambda a, d: (a / d, torch.true_divide(a, d)), [lambda: (i64(1, 0, -1), i64(0, 0, 0))], **E)
_mk("int_floordiv_by_zero_raises", lambda a, d: a // d, [lambda: (i64(1, 2), i64(0, 1))], **E)
_mk("int_remainder_by_zero_raises", lambda a, d: a % d, [lambda: (i32(1, 2), i32(1, 0))], **E)
_mk("int_div_rounding_modes", lambda a, d: (torch.div(a, d, rounding_mode="trunc"), torch.div(a, d, rounding_mode="floor"), a.fmod(d), a.remainder(d)), [lambda: (i64(-7, 7, -8, 9), i64(2, -2, 3, -4)), lambda: (i8(-128, 127), i8(-1, -1))], **E)
_mk("float_div_by_zero", lambda a, d: (a / d, a // d, a % d, torch.fmod(a, d), torch.remainder(a, d)), [lambda: (f32(1, -1, 0, 2.5), f32(0, 0, 0, -0.0))], **E)
_mk("float_floordiv_negative", lambda a, d: (a // d, a % d), [lambda: (f64(-7.5, 7.5, -0.0, 1e308), f64(2, -2, 3, 1e-308))], **E)
_mk("uint8_floordiv", lambda a, d: (a // d, a % d, a / d), [lambda: (u8(255, 7, 0), u8(16, 3, 5))], **E)

# ---- NaN / inf in reductions
_mk("nan_in_max_min", lambda a: (a.max(), a.min(), a.amax(0), a.argmax(), a.argmin(), a.max(0)), [lambda: (f32(1, nan, 3, -inf),)], **E)
_mk("nan_in_sort_topk", lambda a: (a.sort(), a.topk(2), a.sort(descending=True), a.kthvalue(2)), [lambda: (f32(2, nan, -1, inf, nan),)], **E)
_mk("nanfunctions", lambda a: (a.nansum(), a.nanmean(), torch.nanmedian(a), a.nan_to_num(), a.nan_to_num(nan=1.0, posinf=2.0)), [lambda: (f32(1, nan, inf, -inf),)], **E)
_mk("inf_minus_inf_and_logsumexp", lambda a: (a.sum(), a.logsumexp(0), a.softmax(0), a.mean()), [lambda: (f32(inf, -inf, 1),), lambda: (f32(-inf, -inf),)], **E)
_mk("maximum_propagates_nan", lambda a, c: (torch.maximum(a, c), torch.minimum(a, c), torch.fmax(a, c), torch.fmin(a, c), a.clamp(min=0)), [lambda: (f32(nan, 1, -inf), f32(0, nan, nan))], **E)
_mk("clamp_nan_bounds", lambda a: (a.clamp(0, 1), a.clamp(min=0.5), a.clamp_max(0.2)), [lambda: (f32(nan, -1, 2, 0.3),)], **E)
_mk("nan_comparisons_and_eq", lambda a: (a == a, a != a, a > 0, a.isnan(), a.isfinite(), a.isinf(), a.isposinf(), a.sign()), [lambda: (f32(nan, inf, -inf, 0),)], **E)
_mk("std_var_single_element", lambda a: (a.std(), a.var(), a.std(unbiased=False), torch.var_mean(a)), [lambda: (f32(3.0),)], **E)
# F.gelu(+inf) left out: eager's own answer is nan in its vectorized loop and inf in its scalar
# tail (torch.full((64,), inf) vs torch.tensor([inf])); torchc gives inf
_mk("relu_and_sigmoid_of_inf_nan", lambda a: (a.relu(), a.sigmoid(), a.tanh(), torch.nn.functional.gelu(a.nan_to_num(posinf=0.0)), torch.nn.functional.softplus(a)), [lambda: (f32(inf, -inf, nan, 0),)], **E)
_mk("cumprod_cummax_nan", lambda a: (a.cumprod(0), a.cummax(0), a.cummin(0), a.cumsum(0)), [lambda: (f32(2, nan, 3, 0.5),)], **E)
_mk("median_and_mode_with_nan", lambda a: (a.median(), a.quantile(0.5), a.mode()), [lambda: (f32(1, nan, 3),)], **E)

# ---- empty tensors: eager raises on some reductions
_mk("empty_max_raises", lambda a: a.max(), [lambda: (torch.empty(0),)], **E)
_mk("empty_min_raises", lambda a: a.min(), [lambda: (torch.empty(0),)], **E)
_mk("empty_argmax_raises", lambda a: a.argmax(), [lambda: (torch.empty(0),)], **E)
_mk("empty_argmin_dim_raises", lambda a: a.argmin(1), [lambda: (torch.empty(3, 0),)], **E)
_mk("empty_amax_raises", lambda a: a.amax(), [lambda: (torch.empty(2, 0),)], **E)
_mk("empty_max_dim_nonempty_ok", lambda a: (a.max(1), a.amax(1), a.argmax(1)), [lambda: (torch.empty(0, 3),)], **E)
_mk("empty_max_dim_raises", lambda a: a.max(0), [lambda: (torch.empty(0, 3),)], **E)
_mk("empty_sum_prod_mean", lambda a: (a.sum(), a.prod(), a.mean(), a.sum(0), a.logsumexp(0), a.all(), a.any()), [lambda: (torch.empty(0, 2),)], **E)
_mk("empty_std_var", lambda a: (a.std(), a.var(0)), [lambda: (torch.empty(0, 3),)], **E)
_mk("empty_topk_raises", lambda a: a.topk(1), [lambda: (torch.empty(0),)], **E)
_mk("empty_kthvalue_raises", lambda a: a.kthvalue(1), [lambda: (torch.empty(0),)], **E)
_mk("empty_median_nan", lambda a: (a.median(), a.nanmedian()), [lambda: (torch.empty(0),)], **E)
_mk("empty_int_max_raises", lambda a: a.max(), [lambda: (torch.empty(0, dtype=torch.int64),)], **E)
_mk("empty_cumsum_cummax", lambda a: (a.cumsum(0), a.cummax(0), a.sort(), a.softmax(0)), [lambda: (torch.empty(0),)], **E)
_mk("empty_mm_and_cat", lambda a, c: (a @ c, torch.cat([a, a]), torch.stack([a, a]), a.t() @ a), [lambda: (torch.empty(3, 0), torch.empty(0, 2))], **E)
_mk("empty_aminmax_raises", lambda a: torch.aminmax(a), [lambda: (torch.empty(0),)], **E)
_mk("empty_max_after_mask", lambda a: a[a > 10].max(), [lambda: (f32(1, 2, 3),)], **E)
_mk("empty_minmax_after_slice", lambda a, n: a[n:].min(), [lambda: (f32(1, 2, 3), 3), lambda: (f32(1, 2, 3), 1)], **E)

# ---- casts
_mk("float_to_uint8_cast", lambda a: (a.to(torch.uint8), a.byte(), a.to(torch.int8)), [lambda: (f32(0.7, 255.9, 3.5, -0.5),)], **E)
_mk("bool_casts", lambda a: (a.bool(), a.to(torch.bool).int(), (a != 0).float()), [lambda: (f32(0, -0.0, 0.1, nan),), lambda: (i8(0, -1, 2),)], **E)
_mk("int_to_half_rounding", lambda a: (a.half(), a.bfloat16(), a.float()), [lambda: (i64(2049, 65519, 65520, 16777217),)], **E)
_mk("double_to_float_overflow", lambda a: (a.float(), a.half()), [lambda: (f64(1e39, -1e300, 1e-50, 70000),)], **E)
_mk("type_as_and_new_tensor", lambda a, c: (a.type_as(c), c.new_tensor([1, 2]), a.new_zeros(2), a.new_full((2,), 3)), [lambda: (f32(1.5, 2.5), i8(1, 2))], **E)
_mk("int_arange_sum_big", lambda n: torch.arange(n, dtype=torch.int32).sum(), [lambda: (100000,)], **E)
