"""Guards and recompiles: shapes, dtypes, flags, grad mode, globals, repeated calls."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario

FLAG = False


@scenario
def shapes_dtypes_change(C, R):
    def f(x, y):
        return (x * y).sum(-1) + x.shape[0], x.dtype
    g = C(f)
    for s in ((2, 3), (4, 3), (5, 3), (1, 3), (0, 3), (5, 1), (7, 9)):
        R(g(torch.randn(*s), torch.randn(s[-1])))
    for dt in (torch.float64, torch.int32, torch.float16, torch.int64, torch.bool):
        R(g(torch.ones(3, 2, dtype=dt), torch.ones(2, dtype=dt)))


@scenario
def dynamic_true_shapes(C, R):
    def f(x):
        n = x.shape[0]
        return x.view(n, -1).softmax(-1), x.reshape(-1)[: n * 2], torch.arange(n) * x.shape[1], x[n // 2:]
    g = C(f, dynamic=True)
    for n in (2, 3, 8, 1, 17):
        R(g(torch.randn(n, 4)))


@scenario
def global_flag_guard(C, R):
    global FLAG
    FLAG = False

    def f(x):
        return x.relu() if FLAG else x.sigmoid()
    g = C(f)
    x = torch.randn(4)
    R(g(x))
    FLAG = True
    R(g(x))
    FLAG = False
    R(g(x))


@scenario
def grad_mode_guard(C, R):
    w = torch.randn(3, requires_grad=True)

    def f(x):
        return (x * w).sum()
    g = C(f)
    x = torch.randn(3)
    y = g(x)
    R((y, y.requires_grad))
    with torch.no_grad():
        y = g(x)
        R((y, y.requires_grad))
    y = g(x)
    y.backward()
    R(w.grad)


@scenario
def requires_grad_of_input_changes(C, R):
    def f(x):
        return (x.exp() * 2).sum()
    g = C(f)
    x = torch.randn(3)
    R(g(x))
    x.requires_grad_(True)
    y = g(x)
    R(y)
    y.backward()
    R(x.grad)


@scenario
def python_scalar_arg_changes(C, R):
    def f(x, p, flag, name):
        y = x * p
        if flag:
            y = y + 1
        if name == "sq":
            y = y * y
        return y
    g = C(f)
    x = torch.randn(3)
    for p, flag, name in ((1.0, True, "a"), (2.0, True, "a"), (2.0, False, "sq"), (3, False, "sq"), (True, True, "x")):
        R(g(x, p, flag, name))


@scenario
def tensor_list_length_changes(C, R):
    def f(xs):
        return torch.cat(xs).sum(), len(xs)
    g = C(f)
    for n in (1, 2, 3, 2, 5):
        R(g([torch.ones(2) * i for i in range(n)]))


@scenario
def same_fn_different_devices_and_layouts(C, R):
    def f(x):
        return x.t() @ x + 1
    g = C(f)
    R(g(torch.randn(3, 4)))
    R(g(torch.randn(4, 3).t()))
    R(g(torch.randn(3, 4)[:, ::1]))
    R(g(torch.randn(3, 8)[:, ::2]))


@scenario
def many_calls_stable(C, R):
    net = nn.Linear(4, 4)
    m = C(net)
    x = torch.randn(2, 4)
    outs = [m(x) for _ in range(10)]
    R(all(torch.equal(o, outs[0]) for o in outs))
    R(outs[-1])


@scenario
def compile_options(C, R):
    def f(x):
        return F.gelu(x) * 2
    for kw in (dict(fullgraph=True), dict(dynamic=False), dict(mode="reduce-overhead"), dict(mode="max-autotune-no-cudagraphs"), dict(backend="inductor")):
        g = C(f, **kw)
        R(g(torch.randn(4)))


@scenario
def closure_cell_value_changes(C, R):
    scale = torch.tensor(2.0)
    k = 3

    def f(x):
        return x * scale + k
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    scale = torch.tensor(5.0)  # noqa: F841 - rebinding the cell
    k = 10  # noqa: F841
    R(g(x))


@scenario
def module_buffer_replaced(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.ones(4))

        def forward(self, x):
            return x * self.mask
    mod = M()
    m = C(mod)
    x = torch.randn(4)
    R(m(x))
    mod.mask = torch.zeros(4)
    R(m(x))
    mod.mask.fill_(3)
    R(m(x))
    mod.mask = torch.arange(4)
    R(m(x))
