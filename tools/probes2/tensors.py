"""Tensor features: dtypes, in-place on views, out=, odd layouts, numerics."""
import math

import torch
import torch.nn.functional as F

from probe2 import scenario


@scenario
def inplace_on_view_updates_base(C, R):
    def f(x):
        v = x[:, 1:]
        v.mul_(2)
        x[0].add_(10)
        d = x.diagonal()
        d.zero_()
        return x.sum(), v
    g = C(f)
    x = torch.randn(3, 3)
    R(g(x))
    R(x)


@scenario
def inplace_on_transposed_and_expanded(C, R):
    def f(x, y):
        xt = x.t()
        xt.add_(y)
        return x
    g = C(f)
    x = torch.randn(3, 4)
    R(g(x, torch.arange(3.0)))
    R(x)


@scenario
def inplace_on_expanded_raises(C, R):
    def f(x):
        e = x.expand(3, 4)
        e.add_(1)
        return e
    g = C(f)
    R.call(g, torch.randn(1, 4))


@scenario
def out_args(C, R):
    def f(a, b, out):
        torch.add(a, b, out=out)
        torch.mul(a, 2, out=a)
        r = torch.empty(0)
        torch.sum(b, 0, out=r)
        return out, r
    g = C(f)
    a, b, o = torch.randn(3, 2), torch.randn(3, 2), torch.empty(3, 2)
    R(g(a, b, o))
    R(a)
    R(o)


@scenario
def out_arg_resizes(C, R):
    def f(a, out):
        return torch.cumsum(a, 0, out=out)
    g = C(f)
    o = torch.empty(1)
    R(g(torch.arange(5.0), o))
    R(o)


@scenario
def integer_division_semantics(C, R):
    def f(a, b):
        return (a // b, a % b, torch.div(a, b, rounding_mode="trunc"),
                torch.div(a, b, rounding_mode="floor"), a / b, torch.remainder(a, b),
                torch.fmod(a, b), a // 3, a % -3, -a // 2)
    g = C(f)
    a = torch.tensor([7, -7, 7, -7, 0, 5])
    b = torch.tensor([2, 2, -2, -2, 3, -5])
    R(g(a, b))
    R(g(a.float(), b.float()))


@scenario
def int_overflow_wraps(C, R):
    def f(x):
        return x * 1000000, x + 127, (x * 3).to(torch.int8), x.sum(), x.cumsum(0)
    g = C(f)
    R(g(torch.tensor([2**30, 2**31 - 1, -2**31], dtype=torch.int32)))
    R(g(torch.tensor([100, 120, -128], dtype=torch.int8)))
    R(g(torch.tensor([200, 255, 1], dtype=torch.uint8)))


@scenario
def bool_ops(C, R):
    def f(a, b):
        return (a & b, a | b, a ^ b, ~a, a.sum(), a.float().mean(), a + b, a * 3, a.any(), a.all(),
                torch.where(a, 1, 0.5), a.int().cumsum(0), (a == b).all())
    g = C(f)
    R(g(torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])))


@scenario
def half_bf16_cpu(C, R):
    def f(x, y):
        return (x * y + 1).sum(-1), F.softmax(x, -1), x.mean(), (x @ y.T), torch.tanh(x).to(torch.float32)
    g = C(f)
    for dt in (torch.float16, torch.bfloat16):
        x, y = torch.randn(4, 8).to(dt), torch.randn(4, 8).to(dt)
        R(g(x, y))


@scenario
def half_mixed_with_float(C, R):
    def f(x, y, s):
        return x + y, x * s, x + 1.5, (x > 0.1) & (y < 0), x.to(y.dtype) + y
    g = C(f)
    R(g(torch.randn(5).half(), torch.randn(5), 3))
    R(g(torch.randn(5).bfloat16(), torch.randn(5).double(), 2.5))


@scenario
def noncontig_inputs(C, R):
    def f(x, y):
        return x * 2 + y, (x + y).sum(0), x.T.contiguous(), x.clone()
    g = C(f)
    x = torch.randn(6, 4)[:, ::2]
    y = torch.randn(3, 6).T[:, :2]
    R(g(x, y))
    xe = torch.randn(1, 2).expand(6, 2)
    R(g(xe, y))
    R(g(torch.randn(2, 6).T, torch.randn(6, 2)))


@scenario
def zero_size_inputs(C, R):
    def f(x):
        return x.sum(0), x.mean(1), x * 2, x.max(1).values if x.shape[1] else x.sum(1), torch.cat([x, x]), x.reshape(-1, 2)
    g = C(f)
    R.call(g, torch.randn(0, 4))
    R.call(g, torch.randn(3, 0))


@scenario
def zero_size_reductions_raise(C, R):
    def f(x):
        return x.max(0)
    g = C(f)
    R.call(g, torch.randn(0, 3))
    R.call(lambda x: C(lambda y: y.amax())(x), torch.randn(0))
    R.call(lambda x: C(lambda y: y.argmin())(x), torch.randn(0))
    R.call(lambda x: C(lambda y: y.prod())(x), torch.randn(0))


@scenario
def scalar_tensors(C, R):
    def f(a, b, n):
        return a + b, a * n, (a + n).dtype, torch.tensor(n) * a, a.reshape(1, 1), a[None], b + 0.5
    g = C(f)
    R(g(torch.tensor(3.0), torch.tensor(2), 4))
    R(g(torch.tensor(3), torch.tensor(2), 4.5))
    R(g(torch.tensor(True), torch.tensor(2, dtype=torch.uint8), True))


@scenario
def zero_dim_type_promotion(C, R):
    def f(a, b):
        return a + b, a * b, a / b, torch.maximum(a, b.to(a.dtype))
    g = C(f)
    R(g(torch.ones(3, dtype=torch.float16), torch.tensor(2.0, dtype=torch.float64)))
    R(g(torch.ones(3, dtype=torch.int8), torch.tensor(300)))
    R(g(torch.ones(3, dtype=torch.int32), torch.tensor(2.5)))
    R(g(torch.ones(3, dtype=torch.uint8), torch.tensor(-1)))


@scenario
def nan_inf(C, R):
    def f(x):
        return (x.max(), x.min(), x.argmax(), x.sum(), x.nan_to_num(), x.clamp(0, 1), torch.sort(x).values,
                x.relu(), F.softmax(x, 0), torch.nanmean(x), x.isfinite(), x.sign(), torch.maximum(x, x.flip(0)),
                x.log(), x.sqrt(), 1 / x, x.amax(), x.cummax(0).values)
    g = C(f)
    R(g(torch.tensor([1.0, float("nan"), -float("inf"), float("inf"), 0.0, -0.0])))
    R(g(torch.tensor([1.0, -2.0, float("inf")])))


@scenario
def float_to_int_casts(C, R):
    def f(x):
        return x.long(), x.int(), x.to(torch.uint8), x.round(), x.trunc(), x.floor().long(), x.to(torch.bool)
    g = C(f)
    R(g(torch.tensor([2.5, -2.5, 3.5, -0.4, 0.6, 255.7, 1e3])))


@scenario
def python_scalar_mixing(C, R):
    def f(x, a, b):
        return x + a, x * b, a * x - b, x ** a, a ** x, x / a, a / x, x // b, 2 ** x, x.pow(0.5), x > a
    g = C(f)
    x = torch.tensor([1, 2, 3])
    R(g(x, 2, 0.5))
    R(g(x, 2.0, 3))
    R(g(x.float(), 2, 1))
    R(g(x, True, False))


@scenario
def arange_linspace_factories(C, R):
    def f(x, n):
        return (torch.arange(n), torch.arange(0, 1, 0.25), torch.linspace(0, 1, n), torch.zeros_like(x, dtype=torch.int64),
                torch.full((2, n), 7), torch.full((2,), 1.5), torch.ones(n, dtype=torch.bool), torch.eye(n), torch.empty_like(x).fill_(3),
                x.new_zeros(2), x.new_tensor([1, 2]), torch.tensor([n, n]), torch.arange(n, dtype=torch.float32) * x.sum())
    g = C(f)
    R(g(torch.randn(3), 4))
    R(g(torch.randn(3).double(), 5))


@scenario
def index_put_and_masks(C, R):
    def f(x, idx, mask):
        y = x.clone()
        y[idx] = -1
        y[mask] = y[mask] * 10
        z = x.index_add(0, idx, torch.ones(len(idx), x.shape[1]))
        w = x.masked_fill(mask, float("-inf")).softmax(-1)
        return y, z, w, x[mask], x[idx, 0], x[:, idx]
    g = C(f)
    x = torch.randn(4, 4)
    R(g(x, torch.tensor([0, 2, 2]) % 4 if False else torch.tensor([0, 2, 3]), x > 0.5))


@scenario
def index_with_duplicates_accumulate(C, R):
    def f(x, idx, v):
        y = x.clone()
        y.index_put_((idx,), v, accumulate=True)
        z = torch.zeros(5).scatter_add(0, idx, v)
        return y, z, torch.bincount(idx, minlength=5)
    g = C(f)
    R(g(torch.zeros(5), torch.tensor([1, 1, 3, 1]), torch.tensor([1.0, 2.0, 3.0, 4.0])))


@scenario
def gather_scatter_topk(C, R):
    def f(x, k):
        v, i = x.topk(k, -1)
        s = torch.zeros_like(x).scatter(-1, i, v)
        gth = x.gather(-1, i.flip(-1))
        srt, order = x.sort(dim=-1, descending=True, stable=True)
        return v, i, s, gth, srt, order, x.argsort(0)
    g = C(f)
    R(g(torch.tensor([[3.0, 1.0, 3.0, 2.0], [0.0, 0.0, 5.0, -1.0]]), 2))


@scenario
def views_and_strides(C, R):
    def f(x):
        return x.t(), x.view(-1), x.unsqueeze(1).expand(-1, 3, -1), x[::2], x.narrow(1, 1, 2), x.permute(1, 0).reshape(2, -1), x.movedim(0, 1), x.unflatten(1, (2, 2)), x.as_strided((2, 2), (1, 4))
    g = C(f)
    R(g(torch.arange(16.0).view(4, 4)))


@scenario
def where_scalar_and_types(C, R):
    def f(c, x):
        return torch.where(c, x, 0), torch.where(c, 1, 2), torch.where(c, x, x.double()), torch.where(c, 2.5, x), torch.where(c)
    g = C(f)
    R(g(torch.tensor([True, False, True]), torch.tensor([1, 2, 3])))
    R(g(torch.tensor([True, False, True]), torch.tensor([1.0, 2.0, 3.0]).half()))


@scenario
def clone_detach_memory_format(C, R):
    def f(x):
        return x.clone(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last) + 1, x.detach().clone(), torch.empty_like(x).copy_(x), x.to(memory_format=torch.channels_last)
    g = C(f)
    R(g(torch.randn(2, 3, 4, 5)))


@scenario
def complex_numbers(C, R):
    def f(x):
        z = torch.view_as_complex(x)
        return (z * z).abs(), z.conj() * 2, torch.view_as_real(z * 1j), z.real + z.imag, z.angle()
    g = C(f)
    R(g(torch.randn(3, 2)))


@scenario
def rng_ops_seeded(C, R):
    def f(x):
        torch.manual_seed(123)
        return torch.rand_like(x), torch.randn(3), torch.randint(0, 10, (4,)), F.dropout(x, 0.5, True), torch.randperm(5)
    g = C(f)
    R(g(torch.ones(6)))
    R(g(torch.ones(6)))


@scenario
def sort_stable_positional_dim_raises(C, R):
    def f(x):
        return x.sort(-1, descending=True, stable=True)
    R.call(C(f), torch.tensor([3.0, 1.0, 3.0]))
