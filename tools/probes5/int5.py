"""Integer and bool edge semantics: division by zero, negative operands, shifts, bitwise on
bool/uint8/int8, overflow wrap, Python-scalar promotion with int/bool/half tensors, where."""
import torch

from probe2 import scenario

IDT = (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)


@scenario(exact=True)
def int_div_neg(C, R):
    def f(a, b):
        return (a // b, a % b, torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
                torch.remainder(a, b), torch.fmod(a, b), a / b, torch.floor_divide(a, b))
    g = C(f)
    for dt in (torch.int8, torch.int16, torch.int32, torch.int64):
        a = torch.tensor([7, -7, 7, -7, 0, 5, -128 if dt == torch.int8 else -9], dtype=dt)
        b = torch.tensor([2, 2, -2, -2, 3, -1, -1], dtype=dt)
        R(g(a, b))


@scenario(exact=True)
def int_div_zero(C, R):
    def f(a, b):
        return a // b
    def h(a, b):
        return a % b
    def k(a, b):
        return torch.div(a, b, rounding_mode="trunc")
    def m(a, b):
        return torch.fmod(a, b)
    def n(a):
        return a // 0
    def p(a):
        return a % 0
    for fn in (f, h, k, m):
        g = C(fn)
        for dt in (torch.int32, torch.int64, torch.uint8):
            R.call(g, torch.tensor([3, 4], dtype=dt), torch.tensor([1, 0], dtype=dt))
            R.call(g, torch.tensor([3, 4], dtype=dt), torch.tensor([1, 2], dtype=dt))
    for fn in (n, p):
        g = C(fn)
        R.call(g, torch.tensor([3, 4]))
        R.call(g, torch.tensor([3.0, -4.0]))
    # float division by zero gives inf/nan
    g = C(f)
    R(g(torch.tensor([3.0, -3.0, 0.0]), torch.tensor([0.0, 0.0, 0.0])))


@scenario(exact=True)
def int_div_zero_scalar(C, R):
    def f(a, s):
        return a // s, a % s
    g = C(f)
    R.call(g, torch.tensor([3, -4]), 2)
    R.call(g, torch.tensor([3, -4]), 0)
    R.call(g, torch.tensor([3, -4]), -3)
    R.call(g, torch.tensor([3, -4], dtype=torch.int8), 0)


@scenario(exact=True)
def shifts(C, R):
    fns = [eval(f"lambda a: (a << {s}, a >> {s}, torch.bitwise_left_shift(a, {s}), torch.bitwise_right_shift(a, {s}))")
           for s in (0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 65)]
    for fn in fns:
        g = C(fn)
        for dt in IDT:
            R.call(g, torch.tensor([1, 3, 100, -5 if dt != torch.uint8 else 250, 0], dtype=dt))
    def f(a, s):
        return a << s, a >> s
    g = C(f)
    for dt in IDT:
        a = torch.tensor([1, 3, 100, -5 if dt != torch.uint8 else 250, 0], dtype=dt)
        R.call(g, a, torch.tensor([0, 7, 8, 33, 64], dtype=dt))


@scenario(exact=True)
def shifts_neg(C, R):
    def f(a, s):
        return a << s, a >> s
    g = C(f)
    R.call(g, torch.tensor([1, -8, 100]), torch.tensor([-1, -2, -64]))
    R.call(g, torch.tensor([1, -8, 100], dtype=torch.int32), -1)


@scenario(exact=True)
def bitwise_small(C, R):
    def f(a, b):
        return a & b, a | b, a ^ b, ~a, a & 1, a | True, a ^ 3, torch.bitwise_not(b)
    g = C(f)
    R.call(g, torch.tensor([True, False, True]), torch.tensor([True, True, False]))
    R.call(g, torch.tensor([0, 255, 128], dtype=torch.uint8), torch.tensor([1, 254, 7], dtype=torch.uint8))
    R.call(g, torch.tensor([-128, 127, -1], dtype=torch.int8), torch.tensor([1, -2, 7], dtype=torch.int8))
    R.call(g, torch.tensor([True, False]), torch.tensor([3, 4], dtype=torch.uint8))
    R.call(g, torch.tensor([-3, 4], dtype=torch.int8), torch.tensor([3, 250], dtype=torch.uint8))


@scenario(exact=True)
def overflow_wrap(C, R):
    def f(a):
        return a + 1, a * 2, a - 3, -a, a.abs(), a * a, a.sum(), a.cumsum(0), a.prod()
    g = C(f)
    R(g(torch.tensor([127, -128, 100], dtype=torch.int8)))
    R(g(torch.tensor([255, 0, 200], dtype=torch.uint8)))
    R(g(torch.tensor([2 ** 31 - 1, -2 ** 31], dtype=torch.int32)))
    R(g(torch.tensor([2 ** 63 - 1, -2 ** 63], dtype=torch.int64)))
    R(g(torch.tensor([32767, -32768], dtype=torch.int16)))


@scenario(exact=True)
def scalar_promotion(C, R):
    def f(a):
        return (a + 1, a + 1.5, a * True, a + 2 ** 40 if a.dtype == torch.int64 else a, a / 2, a // 2.5,
                a % 2.5, a ** 2, 2 ** a if a.dtype != torch.bool else a, a > 1.5, a - 0.5)
    g = C(f)
    for t in (torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3], dtype=torch.int8),
              torch.tensor([True, False]), torch.tensor([1.5, 2], dtype=torch.float16),
              torch.tensor([1.5, 2], dtype=torch.bfloat16), torch.tensor([200, 3], dtype=torch.uint8)):
        R.call(g, t)


@scenario(exact=True)
def bool_arith(C, R):
    def f(a, b):
        return a + b, a * b, a + 1, a * 1.5, a.sum(), a.float().mean(), a & b, a.int() - b.int()
    g = C(f)
    R(g(torch.tensor([True, False, True]), torch.tensor([True, True, False])))
    def h(a, b):
        return a - b
    R.call(C(h), torch.tensor([True]), torch.tensor([False]))
    def k(a):
        return -a
    R.call(C(k), torch.tensor([True]))


@scenario(exact=True)
def where_mixed_scalars(C, R):
    def f(c, x):
        return (torch.where(c, x, 0), torch.where(c, x, 0.5), torch.where(c, 1, 0), torch.where(c, 1.0, 0),
                torch.where(c, True, False), torch.where(c, x, True), torch.where(c, 2, x))
    g = C(f)
    c = torch.tensor([True, False, True])
    for x in (torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3], dtype=torch.int8), torch.tensor([1., 2, 3], dtype=torch.float16),
              torch.tensor([True, False, False]), torch.tensor([1., 2, 3], dtype=torch.float64), torch.tensor([1, 2, 255], dtype=torch.uint8)):
        R.call(g, c, x)


@scenario(exact=True)
def where_tensor_mixed(C, R):
    def f(c, x, y):
        return torch.where(c, x, y), torch.where(x > 1, x, y)
    g = C(f)
    c = torch.tensor([True, False])
    R.call(g, c, torch.tensor([1, 2], dtype=torch.int8), torch.tensor([3, 4], dtype=torch.uint8))
    R.call(g, c, torch.tensor([1., 2.], dtype=torch.float16), torch.tensor([3, 4], dtype=torch.int64))
    R.call(g, c, torch.tensor([1., 2.], dtype=torch.float16), torch.tensor(3.0, dtype=torch.float64))
    R.call(g, c, torch.tensor([1., 2.], dtype=torch.bfloat16), torch.tensor([3., 4.], dtype=torch.float16))


@scenario(exact=True)
def int_pow_neg(C, R):
    def f(a, b):
        return a ** b
    g = C(f)
    R.call(g, torch.tensor([2, 3, -2, 0]), torch.tensor([2, 0, 3, 0]))
    R.call(g, torch.tensor([2, 3, 1, -1]), torch.tensor([-1, -2, -3, -3]))
    R.call(g, torch.tensor([2, 3]), -1)
    R.call(g, torch.tensor([2, 3], dtype=torch.int8), 9)
    R.call(g, torch.tensor([0, 0]), torch.tensor([0, -1]))


@scenario(exact=True)
def int_unary_misc(C, R):
    def f(a):
        return (a.sign(), a.abs(), a.clamp(-3, 3), a.clamp(min=2.5) if False else a.clamp(min=2), torch.minimum(a, a.flip(0)),
                a.max(), a.argmax(), a.float().floor_divide(2), torch.gcd(a, a.flip(0)), a.bitwise_and(a.flip(0)))
    g = C(f)
    for dt in IDT:
        a = torch.tensor([5, 0, 3, 120, 7], dtype=dt) if dt == torch.uint8 else torch.tensor([-5, 0, 3, -120, 7], dtype=dt)
        R.call(g, a)


@scenario(exact=True)
def int_clamp_float_bounds(C, R):
    def f(a):
        return a.clamp(min=1.5), a.clamp(max=2.5), torch.clamp(a, -0.5, 0.5)
    g = C(f)
    R.call(g, torch.tensor([0, 1, 2, 3]))
    R.call(g, torch.tensor([0, 1, 2, 3], dtype=torch.uint8))


@scenario()
def int_mean_raises(C, R):
    def f(a):
        return a.mean()
    R.call(C(f), torch.tensor([1, 2]))
    def h(a):
        return a.std()
    R.call(C(h), torch.tensor([1, 2]))
    def k(a):
        return torch.sqrt(a), torch.exp(a), a.sin()
    R.call(C(k), torch.tensor([1, 4]))
    R.call(C(k), torch.tensor([True, False]))


@scenario(exact=True)
def true_div_int(C, R):
    def f(a, b):
        return a / b, torch.true_divide(a, b), a.div(b), a / 3
    g = C(f)
    R(g(torch.tensor([7, -7, 0], dtype=torch.int32), torch.tensor([2, 0, 0], dtype=torch.int32)))
    R(g(torch.tensor([True, False, True]), torch.tensor([True, True, False])))
