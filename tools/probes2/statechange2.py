"""More state changed between calls."""
import enum
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario

SETTINGS = types.SimpleNamespace(scale=2.0, mode="a")


class Mode(enum.Enum):
    A = 1
    B = 2


@scenario
def plain_object_class_attr_shadowed(C, R):
    class Helper:
        k = 3

        def f(self, x):
            return x + self.k

    h = Helper()

    def f(x):
        return h.f(x) * h.k
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    h.k = 10
    R(g(x))
    h.f = lambda x: x * 0
    R(g(x))
    del h.f, h.k
    R(g(x))


@scenario
def class_forward_replaced(C, R):
    class M(nn.Module):
        def forward(self, x):
            return x + 1
    mod = M()
    m = C(mod)
    x = torch.ones(2)
    R(m(x))
    M.forward = lambda self, x: x * 7
    R(m(x))


@scenario
def dunder_class_swapped(C, R):
    class A(nn.Module):
        def forward(self, x):
            return x + 1

    class B(nn.Module):
        def forward(self, x):
            return x - 1
    mod = A()
    m = C(mod)
    x = torch.ones(2)
    R(m(x))
    mod.__class__ = B
    R(m(x))


@scenario
def module_level_namespace_changed(C, R):
    def f(x):
        y = x * SETTINGS.scale
        return y if SETTINGS.mode == "a" else -y
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    SETTINGS.scale = 3.0
    R(g(x))
    SETTINGS.mode = "b"
    R(g(x))
    SETTINGS.scale, SETTINGS.mode = 2.0, "a"


@scenario
def enum_argument(C, R):
    def f(x, mode):
        if mode is Mode.A:
            return x + mode.value
        return x * mode.value
    g = C(f)
    x = torch.ones(2)
    R(g(x, Mode.A))
    R(g(x, Mode.B))


@scenario
def slots_object(C, R):
    class P:
        __slots__ = ("w", "b")

        def __init__(self):
            self.w = 2.0
            self.b = 1.0

    p = P()

    def f(x):
        return x * p.w + p.b
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    p.w = 5.0
    R(g(x))
    del p.b
    R.call(g, x)


@scenario
def property_backed_by_private(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self._temp = 1.0

        @property
        def temp(self):
            return self._temp

        @temp.setter
        def temp(self, v):
            self._temp = max(v, 0.1)

        def forward(self, x):
            return (x / self.temp).softmax(-1)
    mod = M()
    m = C(mod)
    x = torch.tensor([1.0, 2.0, 3.0])
    R(m(x))
    mod.temp = 0.01
    R(m(x))
    mod.temp = 5
    R(m(x))


@scenario
def nested_closure_rebound(C, R):
    def outer():
        k = 1.0

        def f(x):
            return x * k

        def set_k(v):
            nonlocal k
            k = v
        return f, set_k
    f, set_k = outer()
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    set_k(4.0)
    R(g(x))
    set_k(torch.tensor(2.0))
    R(g(x))


@scenario
def fastpath_flag_changed(C, R):
    mha = nn.MultiheadAttention(4, 2, batch_first=True).eval()
    m = C(mha)
    x = torch.randn(1, 3, 4)
    with torch.no_grad():
        R(m(x, x, x, need_weights=False)[0])
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            R(m(x, x, x, need_weights=False)[0])
        finally:
            torch.backends.mha.set_fastpath_enabled(True)


@scenario
def deterministic_flag(C, R):
    def f(x, idx):
        return torch.zeros(4).index_add(0, idx, x)
    g = C(f)
    x = torch.ones(3)
    idx = torch.tensor([0, 0, 2])
    R(g(x, idx))
    torch.use_deterministic_algorithms(True)
    try:
        R(g(x, idx))
    finally:
        torch.use_deterministic_algorithms(False)


@scenario
def buffer_dtype_changed_in_place_by_to(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("s", torch.ones(3))

        def forward(self, x):
            return x * self.s
    mod = M()
    m = C(mod)
    x = torch.ones(3, dtype=torch.float64)
    R(m(x))
    mod.double()
    R(m(x))
    mod.half()
    R(m(x.half()))


@scenario
def seq_indexing_after_reorder(C, R):
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))

    def f(x):
        return net[-1](net[0](x))
    g = C(f)
    x = torch.randn(1, 2)
    R(g(x))
    net[0], net[2] = net[2], net[0]
    R(g(x))
