"""State that crosses a graph break: pending in-place updates of inputs and of views, views
of intermediates, requires_grad intermediates (training through the break), grad mode /
autocast / inference_mode blocks around the break, RNG draws on both sides, breaks inside
loops, try/finally, with-blocks, nested calls and comprehensions."""
import contextlib

import torch
import torch.nn.functional as F

from probe2 import scenario

brk = torch._dynamo.graph_break
LOG = []


def _x(shape=(3, 4), dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


@scenario(rtol=1e-6, atol=1e-6)
def mutation_across_break(C, R):
    def f1(x):
        v = x[1]
        v.add_(10)
        brk()
        return x.sum(0), v * 2
    def f2(x):
        y = x * 2
        z = y.view(-1)
        brk()
        z[::2].zero_()
        return y
    def f3(x):
        x.mul_(2)
        brk()
        x.add_(1)
        brk()
        return x.clone()
    def f4(x):
        y = x.t()
        brk()
        y[0].fill_(-1)
        return x, y.is_contiguous()
    def f5(x, acc):
        for i in range(3):
            acc.add_(x * i)
            if i == 1:
                brk()
        return acc
    def f6(x):
        a, b = x.unbind(0)[:2]
        brk()
        a.copy_(b)
        return x
    def f7(x):
        y = x.expand(2, *x.shape)
        brk()
        return y.sum(0), y.stride()
    def f8(x):
        y = x.detach()
        brk()
        y.neg_()
        return x
    for f in (f1, f2, f3, f4, f6, f7, f8):
        x = _x()
        R.call(C(f), x)
        R(x)
    x, acc = _x(), torch.zeros(3, 4)
    R.call(C(f5), x, acc)
    R(acc)


@scenario(rtol=1e-5, atol=1e-5)
def training_across_break(C, R):
    lin = torch.nn.Linear(4, 4)
    def f1(x):
        h = lin(x).relu()
        brk()
        return (h * h.sigmoid()).sum()
    def f2(x):
        h = x.exp()
        brk()
        h2 = h[:, :2] * 3
        brk()
        return h2.sum() + h.mean()
    def f3(x):
        h = x * 2
        h.retain_grad()
        brk()
        y = (h ** 2).sum()
        return y, h
    def f4(x):
        h = x.tanh()
        brk()
        h = h.detach()
        return (h * x).sum()
    def f5(x):
        with torch.no_grad():
            s = x.sum()
            brk()
            s2 = x.mean()
        return x * s + s2
    def f6(x):
        h = x.clone()
        brk()
        h.mul_(x)
        return h.sum()
    def f7(x):
        outs = []
        for i in range(3):
            outs.append((x * (i + 1)).sin())
            brk()
        return torch.stack(outs).sum()
    for f in (f1, f2, f3, f4, f5, f6, f7):
        lin.zero_grad()
        x = _x((3, 4)).requires_grad_()
        out = R.call(C(f), x)
        if out is not None:
            first = out[0] if isinstance(out, tuple) else out
            first.sum().backward()
            R((x.grad, lin.weight.grad))
            if isinstance(out, tuple):
                R(out[1].grad)


@scenario(rtol=1e-5, atol=1e-5)
def modes_around_break(C, R):
    def f1(x):
        with torch.no_grad():
            y = x * 2
            brk()
            z = y + x
        return z.requires_grad, z, torch.is_grad_enabled()
    def f2(x):
        with torch.enable_grad():
            y = x * 2
            brk()
        return y.requires_grad, y
    def f3(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x.T
            brk()
            z = y @ x
        return y.dtype, z.dtype, z
    def f4(x):
        with torch.inference_mode():
            y = x + 1
            brk()
        return y.is_inference(), y * 2
    def f5(x):
        prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        y = x * 3
        brk()
        torch.set_grad_enabled(prev)
        return y.requires_grad, (y + x).requires_grad
    def f6(x):
        with torch.no_grad():
            brk()
            return x * 2
    for f in (f1, f2, f3, f4, f5, f6):
        for rg in (False, True):
            x = _x().requires_grad_(rg)
            R.call(C(f), x)
            R(torch.is_grad_enabled())
        with torch.no_grad():
            R.call(C(f), _x().requires_grad_())
            R(torch.is_grad_enabled())


@scenario(exact=True)
def rng_around_break(C, R):
    def f1(x):
        a = torch.rand(3)
        brk()
        b = torch.rand(3)
        return a, b, x + torch.randn(x.shape)
    def f2(x):
        y = F.dropout(x, 0.5, training=True)
        brk()
        return y, F.dropout(x, 0.5, training=True)
    def f3(x):
        torch.manual_seed(5)
        a = torch.randint(0, 10, (4,))
        brk()
        torch.manual_seed(5)
        return a, torch.randint(0, 10, (4,))
    def f4(x):
        st = torch.get_rng_state()
        a = torch.rand(2)
        brk()
        torch.set_rng_state(st)
        return a, torch.rand(2)
    for f in (f1, f2, f3, f4):
        g = C(f)
        torch.manual_seed(0)
        R.call(g, _x())
        R.call(g, _x())
        R(torch.rand(2))


@scenario(rtol=1e-6, atol=1e-6)
def break_in_control_flow(C, R):
    def f1(x):
        out = x
        for i in range(4):
            out = out * 1.5
            if i % 2:
                brk()
            out = out - i
        return out
    def f2(x):
        i = 0
        while x.sum() > -100 and i < 5:
            x = x - 1
            brk()
            i += 1
        return x, i
    def f3(x):
        try:
            y = x + 1
            brk()
            raise ValueError("v")
        except ValueError:
            y = y * 2
        finally:
            LOG.append("fin")
        return y
    def f4(x):
        @contextlib.contextmanager
        def cm():
            LOG.append("enter")
            try:
                yield x * 2
            finally:
                LOG.append("exit")
        with cm() as y:
            brk()
            z = y + 1
        return z
    def helper(t, k):
        t = t * k
        brk()
        return t + k
    def f5(x):
        return helper(x, 2) + helper(x, 3)
    def f6(x):
        return [helper(t, i) for i, t in enumerate(x)]
    def f7(x):
        return sum(helper(x, i) for i in range(3))
    def f8(x):
        d = {"a": x}
        d["b"] = x * 2
        brk()
        d["a"] = d["a"] + d["b"]
        return d
    def f9(x):
        for t in x:
            if t.sum() > 0:
                brk()
                return t
        return None
    def f10(x):
        def inner(t):
            if t.shape[0] > 1:
                brk()
                return inner(t[1:]) + t[0]
            return t[0]
        return inner(x)
    for f in (f1, f2, f3, f4, f5, f6, f7, f8, f9, f10):
        LOG.clear()
        R.call(C(f), _x())
        R(list(LOG))


@scenario(rtol=1e-6, atol=1e-6)
def module_state_across_break(C, R):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(4)
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("count", torch.zeros((), dtype=torch.long))
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            h = self.bn(x)
            brk()
            self.count += 1
            h = self.lin(h)
            if self.training:
                brk()
                h = F.dropout(h, 0.0)
            return h + self.count
    torch.manual_seed(0)
    m = M()
    cm = C(m)
    for training in (True, True, False, True):
        m.train(training)
        R.call(cm, _x((5, 4)))
        R(m)
        R(m.calls)
