"""In-place ops on views and aliasing inputs, out= arguments, mutated input returned,
non-contiguous / transposed / expanded (0-stride) / empty / size-1 inputs."""
import torch

from probe2 import scenario
from probes7._util import each


def _x(shape=(4, 5), dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return torch.arange(n, dtype=torch.float64).reshape(shape).sub(n / 3).to(dt)


@scenario(rtol=1e-6, atol=1e-6)   # float sums/exp: rounding order
def inplace_on_input_slices(C, R):
    def f1(x):
        x[1:3].add_(1)
        return x
    def f2(x):
        x[:, ::2].mul_(-1)
        return x.sum()
    def f3(x):
        x.T[0].fill_(9)
        return x
    def f4(x):
        v = x.view(-1)
        v[::3].zero_()
        return v
    def f5(x):
        x.diagonal().add_(100)
        return x.diagonal()
    def f6(x):
        x[0].copy_(x[1])
        x[1].copy_(x[0] * 2)
        return x
    def f7(x):
        x[..., -1:].clamp_(min=0)
        return x[..., -1]
    def f8(x):
        y = x.unsqueeze(0)
        y.squeeze_(0)
        y.t_()
        return y, x
    def f9(x):
        x.select(1, 2).masked_fill_(x[:, 2] > 0, -5)
        return x
    def f10(x):
        x.narrow(0, 1, 2).index_fill_(1, torch.tensor([0, 4]), 7)
        return x
    def f11(x):
        x[1:].sub_(x[:-1])     # overlapping read/write of one input
        return x
    for fn in (f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11):
        g = C(fn)
        for mk in (lambda: _x(), lambda: _x(dt=torch.int32), lambda: _x((5, 4)).T):
            x = mk()
            R.call(g, x)
            R(x)


@scenario(rtol=1e-6, atol=1e-6)   # float sums/exp: rounding order
def aliasing_inputs(C, R):
    def f1(a, b):
        a.add_(b)
        return a, b
    def f2(a, b):
        b.mul_(2)
        return a + b
    def f3(a, b):
        torch.add(a, 1, out=b)
        return a, b
    def f4(a, b):
        a.copy_(b.flip(0))
        return a
    def f5(a, b):
        a.addcmul_(b, b)
        return b.sum()
    for fn in (f1, f2, f3, f4, f5):
        g = C(fn)
        for mk in (lambda: (lambda t: (t, t))(_x()), lambda: (lambda t: (t[0], t[1]))(_x()),
                   lambda: (lambda t: (t[:, 1:], t[:, :-1]))(_x()), lambda: (lambda t: (t, t.T.contiguous().T))(_x((4, 4)))):
            a, b = mk()
            R.call(g, a, b)
            R((a, b))


@scenario(exact=True)
def out_args(C, R):
    def f1(x, o):
        return torch.add(x, 1, out=o)
    def f2(x, o):
        torch.sum(x, 0, out=o)
        return o
    def f3(x, o):
        return torch.mul(x, x, out=o), o
    def f4(x, o):
        torch.cumsum(x, 0, out=o)
        return o
    def f5(x, o):
        torch.max(x, 1, out=(o, torch.empty(0, dtype=torch.int64)))
        return o
    def f6(x, o):
        torch.where(x > 0, x, 0.0, out=o)
        return o
    def f7(x, o):
        torch.clamp(x, 0, 1, out=o)
        return o
    for fn in (f1, f2, f3, f4, f5, f6, f7):
        g = C(fn)
        for mk in (lambda: (_x(), torch.full((4, 5,), 7.0)), lambda: (_x(), torch.full((0,), 7.0)), lambda: (_x(), torch.full((20,), 7.0)),
                   lambda: (_x(), torch.full((5, 4,), 7.0).T), lambda: (_x(), torch.full((4, 5,), 7.0, dtype=torch.float64)),
                   lambda: (_x(), torch.full((4, 5,), 7.0, dtype=torch.int64)), lambda: (_x(), torch.full((1, 5,), 7.0).expand(4, 5))):
            x, o = mk()
            R.call(g, x, o)
            R(o)


@scenario(rtol=1e-6, atol=1e-6)   # float sums/exp: rounding order
def mutated_input_returned(C, R):
    def f1(x):
        return x.add_(1)
    def f2(x):
        y = x.relu_()
        return y is x, y
    def f3(x):
        x.unsqueeze_(0)
        return x.shape, x
    def f4(x):
        x.transpose_(0, 1)
        return x.stride(), x
    def f5(x):
        x.resize_(2, 3)
        return x
    def f6(x):
        x.as_strided_((2, 2), (1, 2))
        return x
    def f7(x):
        return x.abs_().neg_().exp_() if x.is_floating_point() else x.abs_()
    def f8(x):
        x.swapdims_(0, -1)
        x.mul_(2)
        return x.contiguous()
    for fn in (f1, f2, f3, f4, f5, f6, f7, f8):
        g = C(fn)
        for mk in (lambda: _x(), lambda: _x().T, lambda: _x(dt=torch.int16), lambda: _x((1, 6))):
            x = mk()
            R.call(g, x)
            R((x.shape, x.stride(), x))


@scenario(exact=True)
def expanded_and_empty_inputs(C, R):
    fns = [lambda x: x + 1, lambda x: x.sum(0), lambda x: x.cumsum(1), lambda x: x.T @ x if x.dim() == 2 else x,
           lambda x: x.softmax(-1), lambda x: x.contiguous(), lambda x: x.reshape(-1), lambda x: x.view(-1) if x.is_contiguous() else x.flatten(),
           lambda x: x * x.mean(), lambda x: x.exp().log(), lambda x: x.clone(), lambda x: x.clone(memory_format=torch.preserve_format),
           lambda x: x.sort(-1)[1], lambda x: torch.cat([x, x], -1), lambda x: x.flip(-1), lambda x: x.roll(1, 0),
           lambda x: x.unfold(-1, 1, 1), lambda x: x.max(-1)[0], lambda x: x.min(), lambda x: x.squeeze(), lambda x: x.add_(1)]
    base = torch.tensor([[1.0, -2.0, 3.0]])
    xs = [base.expand(4, 3), torch.tensor(2.0).expand(2, 3), base.T.expand(3, 2), torch.full((0, 3,), 7.0), torch.full((3, 0,), 7.0),
          torch.ones(1, 1), torch.ones(3, 1), torch.tensor([[5.0]]).expand(1, 4)]
    each(C, R, fns, xs)


@scenario(exact=True)
def noncontig_binary(C, R):
    fns = [lambda a, b: a + b, lambda a, b: torch.where(a > b, a, b), lambda a, b: a * b + a, lambda a, b: torch.maximum(a, b),
           lambda a, b: (a - b).abs().sum(-1), lambda a, b: a.addcdiv(a, b + 100), lambda a, b: a.lerp(b, 0.25)]
    t = _x((4, 6))
    xs = [(t[:, ::2], t[:, 1::2]), (t.T[::2], t.T[1::2]), (t[::-1] if False else t.flip(0), t), (t[:, :1].expand(4, 6), t.T.contiguous().T),
          (t.unsqueeze(-1).expand(4, 6, 2)[..., 0], t), (t[1:3], t[2:]), (t.as_strided((3, 3), (1, 1)), t[:3, :3])]
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def inplace_on_expanded_raises(C, R):
    fns = [lambda x: x.expand(3, 3).add_(1), lambda x: x.expand(3, 3)[0].add_(1), lambda x: x.expand(2, 3).copy_(torch.ones(2, 3)),
           lambda x: torch.add(x, 1, out=x.expand(2, 3)), lambda x: x.expand(3, 3).index_put_((torch.tensor([0]),), torch.tensor(1.0))]
    each(C, R, fns, [torch.zeros(1, 3), torch.zeros(3)])
