"""Library-module idioms captured as one graph (torchvision models): container subclasses,
context predicates, usage logging, identity tests on tensors, nn.MultiheadAttention."""
import types

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same, explain_of


def one_graph(m, *args, rtol=None, atol=None):
    """compiled == eager, and the whole call is one graph without breaks."""
    with torch.no_grad():
        want = m(*args)
        cm = torchc.compile(m)
        assert_same(cm(*args), want, rtol, atol)
        assert_same(cm(*args), want, rtol, atol)
        ex = explain_of(cm, *args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    return ex


class ConvBN(nn.Sequential):  # like torchvision's Conv2dNormActivation: no forward of its own
    def __init__(self, c, act=True):
        layers = [nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)]
        if act:
            layers.append(nn.ReLU())
        super().__init__(*layers)


class Blocks(nn.ModuleList):
    pass


def test_sequential_subclass_forward_and_iteration():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(ConvBN(4), ConvBN(4, act=False))
            self.blocks = Blocks([nn.Linear(8, 8), nn.GELU()])

        def forward(self, x):
            for m in self.features:  # iteration over a Sequential of subclasses
                x = m(x)
            x = self.features[1](x) + len(self.features[0])  # indexing, len
            for b in self.blocks:
                x = b(x)
            return x

    one_graph(M().eval(), torch.randn(2, 4, 8, 8))


def test_sequential_subclass_with_own_iter_breaks():
    class Rev(nn.Sequential):
        def __iter__(self):
            return reversed(list(self._modules.values()))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = Rev(nn.Linear(4, 6), nn.Linear(6, 4))

        def forward(self, x):
            for m in self.s:  # runs the subclass's __iter__: must not be taken as in order
                x = m(x)
            return x

    m = M().eval()
    x = torch.randn(3, 6)
    with torch.no_grad():
        cm = torchc.compile(m)
        assert_same(cm(x), m(x))
        ex = explain_of(cm, x)
    assert ex.graph_break_count >= 1
    assert any("Rev" in str(r) for r in ex.break_reasons), ex.break_reasons


def test_sequential_subclass_with_own_getitem_breaks():
    class Odd(nn.Sequential):
        def __getitem__(self, i):
            return list(self._modules.values())[-1 - i]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = Odd(nn.Linear(4, 6), nn.Linear(6, 4))

        def forward(self, x):
            return self.s[0](x)

    m = M().eval()
    x = torch.randn(3, 6)
    with torch.no_grad():
        assert_same(torchc.compile(m)(x), m(x))


def test_jit_and_compiler_predicates_are_false():
    def f(x):
        if torch.jit.is_scripting() or torch.jit.is_tracing():
            return x
        if not torch.compiler.is_compiling():
            x = x + 1
        if torch._C._get_tracing_state() is None:
            x = x * 2
        return x.relu()

    one_graph(f, torch.randn(4, 5))


def test_api_usage_logging_is_a_noop():
    def stoch(x, p):  # torchvision.ops.stochastic_depth's prologue
        if not torch.jit.is_scripting() and not torch.jit.is_tracing():
            log_once(stoch)
        if p < 0.0 or p > 1.0:
            raise ValueError("bad p")
        return x * 2

    def log_once(obj):  # torchvision.utils._log_api_usage_once
        module = obj.__module__
        if not module.startswith("torchvision"):
            module = f"torchvision.internal.{module}"
        name = obj.__class__.__name__
        if isinstance(obj, types.FunctionType):
            name = obj.__name__
        torch._C._log_api_usage_once(f"{module}.{name}")

    one_graph(lambda x: stoch(x, 0.1) + 1, torch.randn(3, 3))


def test_torchvision_stochastic_depth_eval():
    tv_ops = pytest.importorskip("torchvision.ops")
    m = tv_ops.StochasticDepth(0.2, "row").eval()
    one_graph(lambda x: m(x).sigmoid(), torch.randn(4, 3, 2))


def test_iteration_helpers_return_iterators():
    def f(xs):
        return reversed(xs), zip(xs, xs), enumerate(xs)

    xs = [torch.randn(2), torch.randn(2)]
    r, z, e = torchc.compile(f)(xs)
    rw, zw, ew = f(xs)
    assert iter(r) is r and iter(z) is z and iter(e) is e
    assert_same(list(r), list(rw))
    assert_same([tuple(p) for p in z], [tuple(p) for p in zw])
    assert [i for i, _ in e] == [i for i, _ in ew]


def test_tuple_of_zip_and_reversed_iterator():
    def f(xs):
        t = tuple(zip(xs, xs))
        s = 0
        for a, b in t:
            s = s + a * b
        return s

    one_graph(f, [torch.randn(3), torch.randn(3)])

    def g(xs):
        return reversed(iter(xs))

    xs = [torch.randn(3)]
    with pytest.raises(TypeError):
        torchc.compile(g)(xs)
