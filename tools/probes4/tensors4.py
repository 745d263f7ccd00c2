"""Tensors: type promotion across int8/uint8/bool/f16/bf16/f64/complex64, in-place on views
and aliased inputs, out=, size-0 dims, non-contiguous / expanded / flipped inputs."""
import itertools

import torch

from probe2 import scenario

DTS = [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
       torch.float32, torch.float64, torch.complex64]


def _mk(dt, shape=(3,)):
    if dt == torch.bool:
        return torch.tensor([True, False, True][: shape[0]]).reshape(shape)
    if dt.is_complex:
        return torch.tensor([1 + 1j, -2 + 0.5j, 3 - 1j][: shape[0]], dtype=dt)
    return torch.tensor([1, 2, 3][: shape[0]], dtype=dt)


@scenario
def promotion_binary_all_pairs(C, R):
    def f(a, b):
        return a + b, a * b, torch.maximum(a, b) if not (a.is_complex() or b.is_complex()) else a, a == b
    g = C(f)
    for da, db in itertools.combinations(DTS, 2):
        R.call(g, _mk(da), _mk(db))


@scenario
def promotion_zero_dim_and_scalar(C, R):
    def f(a, b, s):
        return a + b, a * s, b - s, torch.where(a > 1, a, s), (a + b).dtype
    g = C(f)
    for da, db in ((torch.uint8, torch.float64), (torch.int8, torch.int64), (torch.float16, torch.float64),
                   (torch.bfloat16, torch.float16), (torch.bool, torch.int64), (torch.int32, torch.complex64)):
        R.call(g, _mk(da), torch.tensor(2, dtype=db), 1.5)
        R.call(g, _mk(da), torch.tensor(2, dtype=db), 3)
        R.call(g, torch.tensor(2, dtype=da), _mk(db), True)


@scenario
def inplace_promotion_rules(C, R):
    def f(a, b):
        a.add_(b)
        return a
    g = C(f)
    for da, db in ((torch.float32, torch.float64), (torch.int32, torch.float32), (torch.uint8, torch.int8),
                   (torch.float16, torch.bfloat16), (torch.bool, torch.bool), (torch.int64, torch.bool),
                   (torch.float32, torch.complex64)):
        R.call(g, _mk(da), _mk(db))


@scenario
def reductions_dtype_of_ints(C, R):
    def f(a):
        return a.sum(), a.prod(), a.cumsum(0), a.mean(dtype=torch.float32), a.max(), a.float().std(), a.sum(dtype=torch.int8)
    g = C(f)
    for dt in (torch.bool, torch.uint8, torch.int8, torch.int32, torch.float16, torch.bfloat16):
        R.call(g, _mk(dt))


@scenario
def inplace_on_view_of_input(C, R):
    def f(x):
        x[:, 1].mul_(10)
        x.diagonal().zero_()
        x.t()[0].add_(1)
        return x.sum()
    g = C(f)
    x = torch.arange(9.0).reshape(3, 3)
    R(g(x))
    R(x)
    base = torch.arange(16.0).reshape(4, 4)
    v = base[1:, ::2]
    R.call(g, v)
    R(base)


@scenario
def aliased_inputs_inplace(C, R):
    def f(a, b):
        a.add_(1)
        return b * 2
    g = C(f)
    x = torch.zeros(4)
    R(g(x, x))
    R(x)
    y = torch.zeros(4)
    R(g(y[:2], y[1:3]))
    R(y)
    z = torch.zeros(4)
    R(g(z, z.view(2, 2)))
    R(z)


@scenario
def aliased_inputs_both_written(C, R):
    def f(a, b):
        a.mul_(2)
        b.add_(a)
        return a + b
    g = C(f)
    x = torch.ones(3)
    R(g(x, x))
    R(x)
    y = torch.arange(5.0)
    R(g(y[1:4], y[:3]))
    R(y)


@scenario
def out_arguments(C, R):
    def f(a, b, o):
        torch.add(a, b, out=o)
        torch.mul(a, 2, out=a)
        return o, a
    g = C(f)
    a = torch.ones(3)
    o = torch.empty(3)
    R(g(a, torch.ones(3), o))
    R((a, o))
    o2 = torch.empty(0)
    R(g(torch.ones(2, 2), torch.ones(2), o2))
    R(o2)
    o3 = torch.empty(3, dtype=torch.int64)
    R.call(g, torch.ones(3), torch.ones(3), o3)
    o4 = torch.empty(6)[::2]
    R.call(g, torch.ones(3), torch.ones(3), o4)


@scenario
def out_argument_reductions_and_matmul(C, R):
    def f(a, b, o1, o2):
        torch.sum(a, 0, out=o1)
        torch.matmul(a, b, out=o2)
        return o1 * 1, o2
    g = C(f)
    a = torch.randn(3, 4)
    b = torch.randn(4, 2)
    o1 = torch.empty(4)
    o2 = torch.empty(3, 2)
    R(g(a, b, o1, o2))
    R((o1, o2))
    o3 = torch.empty(2, 3).t()
    R(g(a, b, torch.empty(1), o3))
    R(o3)


@scenario
def size_zero_dims(C, R):
    def f(x, y):
        return (x.sum(0), x.sum(1), x.mean(1), x @ y, x.softmax(-1), x.reshape(0, -1).shape if x.shape[0] == 0 else x.shape,
                torch.cat([x, x], 0), x.max(1).values if x.shape[1] > 0 else x.amax(0), x.t().contiguous(), x.cumsum(0),
                x.flip(0), (x > 0).any(), x.norm())
    g = C(f)
    R.call(g, torch.ones(0, 3), torch.ones(3, 2))
    R.call(g, torch.ones(2, 0), torch.ones(0, 2))
    R.call(g, torch.ones(0, 0), torch.ones(0, 4))


@scenario
def size_zero_reductions_raise(C, R):
    R.call(C(lambda x: x.max()), torch.ones(0))
    R.call(C(lambda x: x.amax(0)), torch.ones(0, 3))
    R.call(C(lambda x: x.argmax(1)), torch.ones(2, 0))
    R.call(C(lambda x: x.min(0)), torch.ones(0, 2))
    R(C(lambda x: (x.prod(0), x.sum(0), x.logsumexp(0), x.mean(0)))(torch.ones(0, 2)))


@scenario
def noncontig_expanded_flipped(C, R):
    def f(x, y):
        return x * 2 + y, (x + y).sum(-1), x.exp() * y.flip(0), torch.cat([x, y], 0), x.t() @ y
    g = C(f)
    base = torch.randn(4, 6)
    R(g(base[:, ::2], base[:3, 1::2].t().t()))
    R(g(torch.randn(1, 3).expand(3, 3), torch.randn(3, 3).t()))
    R(g(torch.randn(3, 3).flip(1), torch.randn(3, 1).expand(3, 3)))
    R(g(torch.randn(3, 3)[::-1] if False else torch.randn(3, 3).flip(0).flip(1), torch.randn(6, 6)[::2, ::2]))


@scenario
def expanded_input_output_strides(C, R):
    def f(x):
        return x, x + 0, x.clone(), x.contiguous(), x * 1.0, x.sum(0), x.unsqueeze(0), x.transpose(0, 1) * 2
    g = C(f)
    R(g(torch.randn(1, 4).expand(3, 4)))
    R(g(torch.randn(4, 3).t()))
    R(g(torch.randn(3, 4, 2)[:, :, 0]))
    R(g(torch.randn(3, 1).expand(3, 0)))


@scenario
def channels_last_and_odd_layouts(C, R):
    def f(x, w):
        y = torch.nn.functional.conv2d(x, w, padding=1)
        return y, y.relu() + x.mean((2, 3), keepdim=True).sum(1, keepdim=True), x.permute(0, 2, 3, 1) * 2
    g = C(f)
    x = torch.randn(2, 3, 5, 5).to(memory_format=torch.channels_last)
    w = torch.randn(4, 3, 3, 3)
    R(g(x, w))
    R(g(torch.randn(2, 3, 5, 5), w.to(memory_format=torch.channels_last)))
    R(g(torch.randn(2, 3, 1, 1).to(memory_format=torch.channels_last), w))


@scenario
def inplace_on_expanded_and_overlapping(C, R):
    def f(x):
        x.add_(1)
        return x
    g = C(f)
    R.call(g, torch.zeros(1, 3).expand(2, 3))
    R.call(g, torch.zeros(6).as_strided((3, 2), (1, 1)))
    R.call(g, torch.zeros(3).unsqueeze(1).expand(3, 2).clone())


@scenario
def setitem_patterns_dtypes(C, R):
    def f(x, i, v):
        x[i] = v
        x[..., -1] += 1
        x[x < 0] = 0
        return x
    g = C(f)
    R.call(g, torch.randn(3, 4), 1, 5.0)
    R.call(g, torch.randn(3, 4), torch.tensor([0, 2]), torch.tensor(2.0, dtype=torch.float64))
    R.call(g, torch.zeros(3, 4, dtype=torch.int32), slice(0, 2), 2.7)
    R.call(g, torch.zeros(3, 4, dtype=torch.uint8), 0, torch.tensor([1, 2, 3, 4]))
    R.call(g, torch.randn(3, 4), torch.tensor([True, False, True]), torch.tensor([1.0, 2.0]))
    R.call(g, torch.randn(3, 4), 0, torch.ones(5))


@scenario
def copy_between_dtypes_and_views(C, R):
    def f(x, y):
        x[1:].copy_(y)
        z = x.view(torch.int32) if x.dtype == torch.float32 else x
        return x, z.clone()
    g = C(f)
    R.call(g, torch.zeros(4), torch.arange(3))
    R.call(g, torch.zeros(4), torch.tensor([1 + 1j, 2j, 3]))
    R.call(g, torch.zeros(4, dtype=torch.float16), torch.tensor([1e5, 1.0, -1e5]))
    R.call(g, torch.zeros(4), torch.ones(1))


@scenario
def bfloat16_float16_arith(C, R):
    def f(a, b):
        return a + b, a * 3.3, (a / 7).sum(), a.mean(), a.var(), (a @ a.t()) if a.dim() == 2 else a, a.cumsum(-1), a.softmax(-1)
    g = C(f)
    x = torch.randn(3, 17)
    R(g(x.half(), x.bfloat16()))
    R(g(x.bfloat16(), x.bfloat16()))
    R(g(x.half() * 300, torch.tensor(2.0, dtype=torch.float16)))


@scenario
def uint8_image_pipeline(C, R):
    def f(img):
        x = img.float() / 255
        x = (x - 0.5) / 0.25
        y = (x * 0.25 + 0.5).mul(255).round().clamp(0, 255).to(torch.uint8)
        return x, y, img.flip(-1), img // 2, img + 250, img.sum(), img.max(), img.to(torch.int16) - 128
    g = C(f)
    R(g(torch.randint(0, 256, (2, 3, 4, 5), dtype=torch.uint8)))
    R(g(torch.randint(0, 256, (3, 4, 5), dtype=torch.uint8).permute(1, 2, 0)))


@scenario
def bool_tensor_arith(C, R):
    def f(m, x):
        return m & (x > 0), m | ~m, m ^ m.flip(0), m.sum(), m.float().mean(), x[m], m * x, m + m, m.cumsum(0), m.int() - 1
    g = C(f)
    R(g(torch.tensor([True, False, True, True]), torch.randn(4)))
    R.call(C(lambda m: m - m), torch.tensor([True, False]))
    R.call(C(lambda m: -m), torch.tensor([True, False]))


@scenario
def complex64_mix(C, R):
    def f(z, x):
        return z * x, z + 1, z.abs(), z.angle(), (z * z.conj()).real, torch.view_as_real(z * 2), z.to(torch.complex128) + x.double()
    g = C(f)
    z = torch.randn(4, dtype=torch.complex64)
    R(g(z, torch.randn(4)))
    R(g(z[::2], torch.randn(2, dtype=torch.float16)))


@scenario
def views_then_base_mutation(C, R):
    def f(x):
        v = x.view(2, 3)
        s = x[1:4]
        x.mul_(2)
        return v, s, v.sum(), s.clone()
    g = C(f)
    R(g(torch.arange(6.0)))


@scenario
def index_ops_with_negative_and_dup(C, R):
    def f(x, i):
        return x[i], x.index_select(0, i.abs()), x.gather(0, i.abs().unsqueeze(1).expand(-1, x.shape[1])), x[i, i % x.shape[1]]
    g = C(f)
    R(g(torch.randn(4, 3), torch.tensor([-1, 0, 0, 2])))
    R.call(g, torch.randn(4, 3), torch.tensor([4]))
    R.call(g, torch.randn(4, 3), torch.tensor([-5]))


@scenario
def where_and_masked_dtypes(C, R):
    def f(c, a, b):
        return torch.where(c, a, b), a.masked_fill(c, 1.5), torch.where(c, a, 0), torch.where(c, 1, 2.0)
    g = C(f)
    c = torch.tensor([True, False, True])
    R.call(g, c, torch.tensor([1, 2, 3]), torch.tensor([0.5, 0.5, 0.5]))
    R.call(g, c, torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor(7, dtype=torch.int64))
    R.call(g, c, torch.randn(3).half(), torch.randn(3).bfloat16())
