"""Cache reuse across state the graph depends on: closures, defaults, globals (tensors and
numbers), default dtype, module attributes/flags, deterministic settings."""
import torch

from probe2 import scenario

GT = torch.ones(3)
GN = 2
GL = [1, 2]


@scenario(exact=True)
def closure_cells(C, R):
    def make(k, t):
        def f(x):
            return x * k + t
        return f
    for k, t in ((2, torch.ones(3)), (3, torch.zeros(3)), (2.5, torch.ones(3, dtype=torch.float64)), (True, torch.ones(1))):
        R(C(make(k, t))(torch.arange(3.)))
    def outer():
        c = 1
        def f(x):
            return x + c
        g = C(f)
        r1 = g(torch.ones(2))
        c = 5
        r2 = g(torch.ones(2))
        return r1, r2
    R(outer())


@scenario(exact=True)
def default_args(C, R):
    def f(x, k=2, t=None):
        return x * k if t is None else x * k + t
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2), 3))
    R(g(torch.ones(2), t=torch.ones(2)))
    f.__defaults__ = (7, None)
    R(g(torch.ones(2)))


@scenario(exact=True)
def global_tensor_mutated(C, R):
    global GN, GT
    def f(x):
        return x + GT * GN + len(GL)
    g = C(f)
    R(g(torch.ones(3)))
    GT.add_(1)
    R(g(torch.ones(3)))
    GN = 5
    R(g(torch.ones(3)))
    GL.append(3)
    R(g(torch.ones(3)))
    GT = torch.zeros(3, dtype=torch.float64)
    R(g(torch.ones(3)))
    GT = torch.ones(3)
    GN = 2
    del GL[2:]


@scenario(exact=True)
def default_dtype(C, R):
    def f(x):
        return x + torch.tensor(1.5), torch.arange(3.0).dtype, torch.ones(2).dtype, torch.zeros(2) + 0.1, torch.full((2,), 0.1)
    g = C(f)
    R(g(torch.ones(2)))
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        R(g(torch.ones(2)))
        R(g(torch.ones(2, dtype=torch.float64)))
    finally:
        torch.set_default_dtype(old)
    R(g(torch.ones(2)))


@scenario(exact=True)
def module_attr_flags(C, R):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0
            self.use = True
            self.register_buffer("b", torch.ones(3))
            self.lin = torch.nn.Linear(3, 3)
        def forward(self, x):
            y = self.lin(x) * self.scale
            if self.use:
                y = y + self.b
            if self.training:
                y = y * 10
            return y
    torch.manual_seed(0)
    m = M()
    cm = C(m)
    x = torch.ones(2, 3)
    R(cm(x))
    m.scale = 3
    R(cm(x))
    m.use = False
    R(cm(x))
    m.eval()
    R(cm(x))
    m.b = torch.full((3,), 5.0)
    m.use = True
    R(cm(x))
    m.b.mul_(2)
    R(cm(x))
    m.lin = torch.nn.Linear(3, 3, bias=False)
    R(cm(x))
    m.lin.weight.data = torch.zeros(3, 3)
    R(cm(x))


@scenario(exact=True)
def python_float_precision(C, R):
    def f(x, s):
        return x + s, x * s, x - s * s, (x + 0.1) + 0.2, x * (1 / 3)
    g = C(f)
    for dt in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        R(g(torch.tensor([1.0, 3.0, 1e-3], dtype=dt), 0.1))
        R(g(torch.tensor([1.0, 3.0, 1e-3], dtype=dt), 1e-8))
        R(g(torch.tensor([1.0, 3.0, 1e-3], dtype=dt), 3.4e38))


@scenario(exact=True)
def scalar_int_specialisation_many(C, R):
    def f(x, n):
        return x.reshape(n, -1), x.sum() * n
    g = C(f)
    for n in (1, 2, 3, 4, 6, 12, 2, 5):
        R.call(g, torch.arange(12.), n)


@scenario(exact=True)
def tensor_attr_requires_grad_between(C, R):
    def f(x, w):
        return (x * w).sum()
    g = C(f)
    w = torch.ones(3)
    x = torch.ones(3)
    R(g(x, w))
    w.requires_grad_(True)
    r = g(x, w)
    R(r)
    r.backward()
    R(w.grad)
    w.requires_grad_(False)
    R(g(x, w))
    x.requires_grad_(True)
    r = g(x, w)
    r.backward()
    R(x.grad)


@scenario(exact=True)
def storage_offset_guard(C, R):
    def f(x):
        return x.view(2, 2) + x.storage_offset()
    g = C(f)
    b = torch.arange(10.)
    R.call(g, b[:4])
    R.call(g, b[2:6])
    R.call(g, b[6:])
    R.call(g, b[::2][:4])


@scenario(exact=True)
def neg_conj_bits(C, R):
    def f(x):
        return x * 2, x.is_neg(), x.is_conj()
    g = C(f)
    z = torch.tensor([1 + 2j, 3 - 1j])
    R.call(g, z)
    R.call(g, z.conj())
    R.call(g, torch.ones(2, dtype=torch.cfloat).conj().imag)
