"""Round 5, second batch: integer ops inside reductions/indexing, scalar tensors as operands,
out= with views, cross-dtype comparisons, integer min/max/clamp with inf, shapes 0/1."""
import torch

from probe2 import scenario


@scenario(exact=True)
def int_tensor_vs_float_scalar_cmp(C, R):
    def f(a):
        return a == 1.5, a < 2.5, a >= -0.5, a != 3.0, a == float("nan"), a < float("inf"), a > -float("inf")
    g = C(f)
    for t in (torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor([True, False])):
        R(g(t))


@scenario(exact=True)
def int_big_compare(C, R):
    def f(a):
        return a == 2 ** 40, a < 2 ** 62, a + 2 ** 62, a == 256, a == -1, a > 255
    g = C(f)
    R.call(g, torch.tensor([0, 1, 2 ** 40]))
    R.call(g, torch.tensor([0, 255], dtype=torch.uint8))
    R.call(g, torch.tensor([0, 127], dtype=torch.int8))


@scenario(exact=True)
def int_maxmin_inf(C, R):
    def f(a):
        return torch.clamp(a, min=float("-inf")), a.clamp(max=float("inf")), torch.maximum(a, torch.tensor(2.5))
    R.call(C(f), torch.tensor([1, 2, 3]))


@scenario(exact=True)
def zero_dim_tensor_operands(C, R):
    def f(a, s):
        return a + s, a * s, torch.where(a > 0, s, a), a // s if not s.is_floating_point() else a / s, (a + s).dtype
    g = C(f)
    for a in (torch.tensor([1, 2], dtype=torch.int8), torch.tensor([1., 2.], dtype=torch.float16), torch.tensor([True, False])):
        for s in (torch.tensor(3), torch.tensor(2.5, dtype=torch.float64), torch.tensor(True), torch.tensor(300)):
            R.call(g, a, s)


@scenario(exact=True)
def inplace_int_by_float(C, R):
    def f(a):
        a += 1.5
        return a
    R.call(C(f), torch.tensor([1, 2]))
    def h(a):
        a *= 2.0
        return a
    R.call(C(h), torch.tensor([1, 2]))
    def k(a):
        a //= 2
        return a
    R.call(C(k), torch.tensor([-3, 5]))
    def m(a):
        a /= 2
        return a
    R.call(C(m), torch.tensor([-3, 5]))
    def n(a):
        a <<= 70
        return a
    R.call(C(n), torch.tensor([-3, 5]))
    def o(a, b):
        a += b
        return a
    R.call(C(o), torch.tensor([True, False]), torch.tensor([1, 1]))
    R.call(C(o), torch.tensor([1, 2], dtype=torch.uint8), torch.tensor([255, 255]))
    R.call(C(o), torch.tensor([1., 2.], dtype=torch.float16), torch.tensor(70000.0))


@scenario(exact=True)
def out_view(C, R):
    def f(a, o):
        torch.mul(a, 2, out=o[1])
        return o
    g = C(f)
    R.call(g, torch.ones(3), torch.zeros(2, 3))
    def h(a, o):
        torch.add(a, 1, out=o.t())
        return o
    R.call(C(h), torch.ones(3, 2), torch.zeros(2, 3))
    def k(a, o):
        torch.exp(a, out=o)
        return o
    R.call(C(k), torch.ones(3), torch.zeros(3)[::2])
    R.call(C(k), torch.ones(2), torch.zeros(4)[::2])
    R.call(C(k), torch.ones(2), torch.zeros(2, dtype=torch.float64))
    R.call(C(k), torch.ones(2), torch.zeros(2, dtype=torch.int64))


@scenario(exact=True)
def int_index_negative(C, R):
    def f(x, i):
        return x[i], x.index_select(0, i.abs()), torch.gather(x, 0, i.abs())
    g = C(f)
    R.call(g, torch.arange(5.), torch.tensor([-1, -5, 0]))
    R.call(g, torch.arange(5.), torch.tensor([5]))
    R.call(g, torch.arange(5.), torch.tensor([-6]))
    R.call(g, torch.arange(5.), torch.tensor([], dtype=torch.int64))
    R.call(g, torch.arange(5.), torch.tensor([1, 2], dtype=torch.int32))


@scenario(exact=True)
def arange_linspace_edge(C, R):
    def f(x, n):
        return x + torch.arange(n), torch.arange(0, n, 0.5), torch.linspace(0, 1, n), torch.arange(n, 0, -2)
    g = C(f)
    for n in (4, 1, 0, 7):
        R.call(g, torch.zeros(1), n)
    R.call(g, torch.zeros(1), -1)


@scenario(exact=True)
def scalar_tensor_item_ops(C, R):
    def f(x):
        n = x.sum().item()
        return x * n, n // 2, n % 3, int(n) << 2
    g = C(f)
    R.call(g, torch.tensor([1, 2, 3]))
    R.call(g, torch.tensor([1.5, 2.5]))
    R.call(g, torch.tensor([-7, 0]))


@scenario(exact=True)
def bool_reductions(C, R):
    def f(x):
        return x.sum(), x.prod(), x.cumsum(0), x.max(), x.float().mean(), x.any(), x.all(), x.sum(0, dtype=torch.bool)
    g = C(f)
    R.call(g, torch.tensor([[True, False], [True, True]]))
    R.call(g, torch.zeros(0, 2, dtype=torch.bool))


@scenario(exact=True)
def uint8_neg_and_abs(C, R):
    def f(a):
        return -a, a.abs(), a.sign(), a - 1, 0 - a, a * -1
    R.call(C(f), torch.tensor([0, 1, 255], dtype=torch.uint8))


@scenario(exact=True)
def half_scalar_overflow(C, R):
    def f(a):
        return a * 70000, a + 1e-8, a * 1e5, a / 1e-10, (a * 300.0).to(torch.int8)
    for dt in (torch.float16, torch.bfloat16):
        R.call(C(f), torch.tensor([1., -2., 0.], dtype=dt))


@scenario(exact=True)
def to_int_casts(C, R):
    def f(a):
        return a.to(torch.int32), a.to(torch.uint8), a.to(torch.bool), a.long(), a.to(torch.int8)
    g = C(f)
    R.call(g, torch.tensor([1.7, -1.7, 0.5, -0.5, 255.9, -0.0]))
    R.call(g, torch.tensor([1.7, -1.7, 0.5], dtype=torch.float16))
