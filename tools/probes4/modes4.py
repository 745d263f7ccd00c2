"""Grad modes, RNG with seeds, threads, re-entrant and recursive compiled calls."""
import threading

import torch
import torch.nn as nn

import torchc
from probe2 import scenario


@scenario
def grad_mode_nesting_inside(C, R):
    def f(x, w):
        with torch.no_grad():
            a = x * w
            with torch.enable_grad():
                b = x * w
                with torch.inference_mode(False):
                    c = b * 2
        with torch.set_grad_enabled(False):
            d = x * w
        e = x * w
        return a, b, c, d, e, torch.is_grad_enabled()
    g = C(f)
    w = torch.ones(3, requires_grad=True)
    R(g(torch.ones(3), w))
    with torch.no_grad():
        R(g(torch.ones(3), w))


@scenario
def set_grad_enabled_as_function(C, R):
    def f(x, w, flag):
        prev = torch.is_grad_enabled()
        torch.set_grad_enabled(flag)
        y = x * w
        torch.set_grad_enabled(prev)
        return y, y.requires_grad, torch.is_grad_enabled()
    g = C(f)
    w = torch.ones(2, requires_grad=True)
    R(g(torch.ones(2), w, False))
    R(g(torch.ones(2), w, True))
    R(torch.is_grad_enabled())


@scenario
def inference_mode_outside_and_inside(C, R):
    def f(x, w):
        y = x @ w
        with torch.inference_mode():
            z = y * 2
        return y, z, z.is_inference(), y.requires_grad
    g = C(f)
    w = torch.randn(3, 3, requires_grad=True)
    R(g(torch.randn(2, 3), w))
    with torch.inference_mode():
        R(g(torch.randn(2, 3), w))
    with torch.no_grad():
        R(g(torch.randn(2, 3), w))


@scenario
def no_grad_decorator_helper_and_training(C, R):
    @torch.no_grad()
    def ema(a, b):
        a.mul_(0.9).add_(b, alpha=0.1)
        return a

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(3, 3)
            self.register_buffer("avg", torch.zeros(3))

        def forward(self, x):
            y = self.l(x)
            ema(self.avg, y.mean(0))
            return y.sum()
    m = M()
    g = C(m)
    for _ in range(2):
        loss = g(torch.randn(4, 3))
        loss.backward()
        R(loss)
    R(m)


@scenario
def rng_seed_inside(C, R):
    def f(x):
        torch.manual_seed(123)
        a = torch.rand_like(x)
        b = torch.randn(3)
        c = torch.randint(0, 10, (4,))
        return x + a, b, c
    g = C(f)
    R(g(torch.zeros(3)))
    R(g(torch.zeros(3)))
    R(torch.rand(2))


@scenario
def rng_dropout_seeded_outside(C, R):
    def f(x):
        return torch.nn.functional.dropout(x, 0.5, training=True), torch.rand(2), torch.bernoulli(torch.full((4,), 0.5))
    g = C(f)
    torch.manual_seed(7)
    R(g(torch.ones(8)))
    R(g(torch.ones(8)))
    R(torch.rand(3))


@scenario
def rng_generator_object(C, R):
    def f(x, gen):
        return x + torch.rand(x.shape, generator=gen), torch.randn(2, generator=gen), torch.randperm(5, generator=gen)
    g = C(f)
    gen = torch.Generator().manual_seed(3)
    R(g(torch.zeros(2), gen))
    R(g(torch.zeros(2), gen))
    R(gen.get_state().sum())


@scenario
def rng_state_save_restore_inside(C, R):
    def f(x):
        st = torch.get_rng_state()
        a = torch.rand(3)
        torch.set_rng_state(st)
        b = torch.rand(3)
        return x + a, a == b
    g = C(f)
    torch.manual_seed(0)
    R(g(torch.zeros(3)))
    R(torch.rand(2))


@scenario
def rng_fork_rng(C, R):
    def f(x):
        with torch.random.fork_rng():
            torch.manual_seed(5)
            a = torch.rand(2)
        return x + a, torch.rand(2)
    g = C(f)
    torch.manual_seed(1)
    R(g(torch.zeros(2)))
    R(torch.rand(1))


@scenario
def recursive_compiled_call(C, R):
    holder = {}

    def f(x, n):
        if n == 0:
            return x
        return holder["g"](x * 2, n - 1) + 1
    g = C(f)
    holder["g"] = g
    R(g(torch.ones(2), 3))
    R(g(torch.ones(2), 0))


@scenario
def reentrant_via_hook(C, R):
    inner = C(lambda t: t * 3)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(2, 2)

        def forward(self, x):
            return self.l(x)
    m = M()
    m.register_forward_hook(lambda mod, i, o: inner(o))
    g = C(m)
    R(g(torch.ones(1, 2)))
    R(g(torch.ones(3, 2)))


@scenario
def compiled_from_threads(C, R):
    def f(x, k):
        return (x * k).sin() + k
    g = C(f)
    res = {}

    def work(i):
        out = []
        for j in range(5):
            out.append(g(torch.full((3 + i % 2,), float(j)), i))
        res[i] = out
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    R([res[i] for i in range(4)])


@scenario
def thread_local_grad_mode(C, R):
    def f(x, w):
        return x * w
    g = C(f)
    w = torch.ones(2, requires_grad=True)
    out = {}

    def work():
        with torch.no_grad():
            out["t"] = g(torch.ones(2), w)
    t = threading.Thread(target=work)
    t.start()
    t.join()
    out["m"] = g(torch.ones(2), w)
    R([out["t"], out["m"]])


@scenario
def compiled_inside_compiled_different_modes(C, R):
    inner = C(lambda x, w: x * w)

    def f(x, w):
        with torch.no_grad():
            a = inner(x, w)
        b = inner(x, w)
        return a, b
    g = C(f)
    w = torch.ones(2, requires_grad=True)
    R(g(torch.ones(2), w))


@scenario
def training_requires_grad_input_views(C, R):
    def f(x):
        y = x[1:] * 2
        z = x.t() if x.dim() == 2 else x
        return y.sum() + z.sum(), y
    g = C(f)
    x = torch.randn(3, 3, requires_grad=True)
    l, y = g(x)
    l.backward()
    R((l, y, x.grad))
    x2 = torch.randn(6, requires_grad=True)
    v = x2[::2]
    l2, y2 = g(v)
    l2.backward()
    R((l2, y2, x2.grad))


@scenario
def training_inplace_on_nonleaf_input(C, R):
    def f(x):
        x.mul_(2)
        return (x * x).sum()
    g = C(f)
    w = torch.randn(3, requires_grad=True)
    a = w * 1
    l = g(a)
    l.backward()
    R((l, a, w.grad))


@scenario
def training_int_and_bool_outputs(C, R):
    def f(x):
        y = x * 2
        return y, y.argmax(), y > 0, y.detach(), y.sum().item()
    g = C(f)
    x = torch.randn(4, requires_grad=True)
    out = g(x)
    out[0].sum().backward()
    R((out, x.grad))


@scenario
def training_mixed_dtypes(C, R):
    def f(x, w):
        return (x.half().float() * w.double()).sum()
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)
    l = g(x, w)
    l.backward()
    R((l, x.grad, w.grad))


@scenario
def training_zero_size(C, R):
    def f(x, w):
        return (x @ w).relu().sum(), x.sum(0)
    g = C(f)
    x = torch.randn(0, 3, requires_grad=True)
    w = torch.randn(3, 2, requires_grad=True)
    l, s = g(x, w)
    l.backward()
    R((l, s, x.grad, w.grad))


@scenario
def training_expanded_input(C, R):
    def f(x):
        return (x * torch.arange(3.0)).sum()
    g = C(f)
    b = torch.randn(1, 3, requires_grad=True)
    l = g(b.expand(4, 3))
    l.backward()
    R((l, b.grad))
