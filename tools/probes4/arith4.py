"""Python int/float/bool/complex arithmetic edge cases inside compiled code, mixed with
tensors: overflow, -0.0, nan/inf, floor division and modulo of negatives, pow with negative
exponents, round, math functions, torch.Size arithmetic."""
import math
import operator

import torch

from probe2 import scenario


@scenario(exact=True)
def int_floordiv_mod_negatives(C, R):
    def f(x, a, b):
        return x + a // b, x * (a % b), divmod(a, b), -a // b, a % -b
    g = C(f)
    for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2), (0, 3), (5, 1)):
        R(g(torch.ones(2), a, b))
    R.call(g, torch.ones(2), 3, 0)


@scenario(exact=True)
def float_floordiv_mod_negatives(C, R):
    def f(x, a, b):
        return x + a // b, x * (a % b), math.fmod(a, b), a % b
    g = C(f)
    for a, b in ((7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-0.0, 1.0), (1e308, 1e-308)):
        R(g(torch.ones(2), a, b))
    R.call(g, torch.ones(2), 1.0, 0.0)


@scenario(exact=True)
def big_int_overflow_python(C, R):
    def f(x, n):
        big = n ** 20
        m = big % 1000003
        return x + m, big.bit_length(), (1 << 70) >> 68, big > 2 ** 63
    g = C(f)
    R(g(torch.ones(2), 7))
    R(g(torch.ones(2), 123))


@scenario(exact=True)
def int_tensor_with_big_python_int(C, R):
    def f(x, n):
        return x + n
    g = C(f)
    R(g(torch.ones(2, dtype=torch.int64), 2 ** 40))
    R.call(g, torch.ones(2, dtype=torch.int64), 2 ** 70)
    R.call(g, torch.ones(2, dtype=torch.int8), 300)
    R.call(g, torch.ones(2, dtype=torch.uint8), -1)


@scenario(exact=True)
def neg_zero_nan_inf(C, R):
    def f(x, s):
        return (x * s, math.copysign(1.0, s), s == 0.0, x / s if s != 0 else x, torch.tensor(s).signbit(),
                math.isnan(s), math.isinf(s), x.clamp(min=s) if not math.isnan(s) else x, str(s))
    g = C(f)
    for s in (-0.0, 0.0, float("inf"), float("-inf"), 1e-320):
        R(g(torch.tensor([1.0, -1.0, 0.0]), s))
    R(g(torch.tensor([1.0, -1.0, 0.0]), float("nan")))


@scenario(exact=True)
def pow_edge_cases(C, R):
    def f(x, a, b):
        return x * (a ** b), pow(a, b) if a != 0 or b >= 0 else None
    g = C(f)
    for a, b in ((2, -1), (2, 3), (-8, 3), (2.0, -2), (0, 0), (-2, 2), (4, 0.5)):
        R(g(torch.ones(2), a, b))
    R.call(g, torch.ones(2), 0.0, -1)
    R.call(g, torch.ones(2), -8.0, 1 / 3)


@scenario(exact=True)
def int_pow_negative_mod(C, R):
    def f(x, a):
        return x + pow(a, -1, 7), x + pow(a, 3, 5)
    g = C(f)
    R(g(torch.ones(2), 3))
    R.call(g, torch.ones(2), 7)


@scenario(exact=True)
def round_and_math_funcs(C, R):
    def f(x, v):
        return (round(v), round(v, 1), round(-v), math.floor(v), math.ceil(v), math.trunc(v), int(v),
                math.sqrt(abs(v)), math.log(abs(v) + 1), math.exp(min(v, 10)), math.gcd(12, int(v) or 1),
                math.isclose(v, 2.5), x * round(v))
    g = C(f)
    for v in (2.5, 3.5, -2.5, 0.49999999999999994, 1e16 + 1, -0.5):
        R(g(torch.ones(2), v))


@scenario(exact=True)
def round_tensor_shapes(C, R):
    def f(x):
        n = x.shape[-1]
        h = round(n / 2)
        k = math.ceil(n * 0.3)
        return x[..., :h], x[..., -k:], n / 3, n // 3, float(n) ** 0.5
    g = C(f)
    for n in (1, 5, 6, 7):
        R(g(torch.arange(float(n))))


@scenario(exact=True)
def bool_arithmetic(C, R):
    def f(x, b):
        return x * b, x + (b + b), b - True, x * (not b), b ^ True, ~b, -b, b / 2 if b else 0
    g = C(f)
    R(g(torch.ones(2), True))
    R(g(torch.ones(2), False))


@scenario
def complex_python_scalars(C, R):
    def f(x, c):
        return x * c, c.real, c.imag, abs(c), c.conjugate(), (x + 0j).dtype, x * c.imag
    g = C(f)
    R(g(torch.ones(2), 1 + 2j))
    R(g(torch.ones(2), -0.5j))
    R(g(torch.ones(2, dtype=torch.float64), 3 + 0j))


@scenario(exact=True)
def size_arith_and_types(C, R):
    def f(x):
        s = x.shape
        t = s + s[1:]
        return (t, type(t).__name__, s * 2, s[::-1], torch.Size(reversed(s)), s.count(1), s.index(s[-1]),
                sum(s), max(s), min(s), s[0] * 1.5, s[-1] / 2, s < (9, 9), tuple(s) == s, hash(s) == hash(tuple(s)),
                x.new_zeros(s[:-1] + (1,)).shape, x.view(s.numel()).shape, list(s), operator.mul(*s[:2]))
    g = C(f)
    R(g(torch.ones(2, 3)))
    R(g(torch.ones(1, 1, 4)))


@scenario(exact=True)
def size_unpack_and_errors(C, R):
    def f(x):
        b, *rest = x.shape
        n, = rest[-1:] or (1,)
        return x.reshape(b, -1), b, rest, n
    g = C(f)
    R(g(torch.ones(3)))
    R(g(torch.ones(2, 3, 4)))

    def h(x):
        a, b = x.shape
        return x * a * b
    R.call(C(h), torch.ones(3))
    R.call(C(h), torch.ones(1, 2, 3))


@scenario(exact=True)
def int_shapes_math(C, R):
    def f(x):
        n = x.shape[0]
        return (x.reshape(-1)[: n // 2 + n % 2], n ** 2, n ** -1, (-n) // 3, (-n) % 3, abs(-n), n.bit_length(),
                math.log2(n) if n > 0 else 0.0, n & 1, n | 4, n << 2, n >> 1, ~n)
    g = C(f)
    for n in (1, 3, 4, 7):
        R(g(torch.ones(n)))


@scenario
def float_mixed_tensor_dtypes(C, R):
    def f(x, s):
        return x * s, x + s, x / s, x // s if not x.is_complex() else x, s - x, x ** s
    g = C(f)
    for dt in (torch.int32, torch.int64, torch.uint8, torch.float16, torch.bfloat16, torch.bool):
        if dt == torch.bool:
            x = torch.tensor([True, False, True])
        else:
            x = torch.tensor([1, 2, 3], dtype=dt)
        R(g(x, 2.5), str(dt))
        R.call(g, x, 2)


@scenario(exact=True)
def int_tensor_division_semantics(C, R):
    def f(a, b):
        return a / b, a // b, a % b, torch.div(a, b, rounding_mode="trunc"), torch.fmod(a, b), torch.remainder(a, b)
    g = C(f)
    a = torch.tensor([7, -7, 7, -7, 0])
    b = torch.tensor([2, 2, -2, -2, 3])
    R(g(a, b))
    R(g(a.to(torch.int32), b.to(torch.int8)))
    R(g(a.double(), b.double()))
    R(g(torch.tensor([-0.0, 5.5, -5.5]), torch.tensor([1.0, -2.0, 2.0])))


@scenario(exact=True)
def int_tensor_div_by_zero(C, R):
    def f(a, b):
        return a // b
    R.call(C(f), torch.tensor([1, 2]), torch.tensor([1, 0]))

    def h(a, b):
        return a % b
    R.call(C(h), torch.tensor([1, 2]), torch.tensor([0, 0]))

    def k(a):
        return a / 0, a // 0.0, a % 0.0
    R(C(k)(torch.tensor([1.0, -1.0, 0.0])))


@scenario(exact=True)
def int_min_abs_neg(C, R):
    def f(a):
        return a.abs(), -a, a // -1, a * -1, a.sign(), a - 1
    g = C(f)
    R(g(torch.tensor([-(2 ** 63), 2 ** 63 - 1, 0])))
    R(g(torch.tensor([-128, 127, 0], dtype=torch.int8)))
    R(g(torch.tensor([0, 255, 1], dtype=torch.uint8)))


@scenario(exact=True)
def pow_tensor_edge(C, R):
    def f(a, e):
        return a ** e, torch.pow(2, e), a.pow(0), e.float() ** -1
    g = C(f)
    R(g(torch.tensor([2, 3, -2]), torch.tensor([3, 0, 5])))
    R.call(g, torch.tensor([2, 3, -2]), torch.tensor([-1, 0, 5]))
    R(g(torch.tensor([0.0, -0.0, float("inf")]), torch.tensor([0, -1, -2])))


@scenario(exact=True)
def float_to_int_conversions(C, R):
    def f(x):
        return x.to(torch.int32), x.to(torch.uint8) if (x >= 0).all() else x.long(), x.round(), x.round(decimals=1), x.trunc(), x.frac()
    g = C(f)
    R(g(torch.tensor([2.5, 3.5, -2.5, -0.5, 0.49999997, 1.25])))
    R(g(torch.tensor([254.7, 0.2, 1.5])))


@scenario
def math_module_on_tensor_items(C, R):
    def f(x):
        m = x.max().item()
        return x / math.sqrt(m), math.floor(m), int(m), float(x.sum()), bool(x.any())
    g = C(f)
    R(g(torch.tensor([1.0, 4.0, 2.5])))


@scenario(exact=True)
def comparisons_of_mixed_scalars(C, R):
    def f(x, a, b):
        return x * (a < b), x + (a == b), max(a, b), min(a, b, 0), sorted([a, b, 1.5]), a is b
    g = C(f)
    R(g(torch.ones(2), 1, 1.0))
    R(g(torch.ones(2), True, 1))
    R(g(torch.ones(2), float("nan"), 1.0))
    R(g(torch.ones(2), -0.0, 0.0))
