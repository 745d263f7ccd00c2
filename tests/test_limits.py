"""No fixed cap a real model reaches: sources, outputs, in-place updated inputs and inlining
depth grow as needed; the limits left are torchc.config values, named in explain() when hit."""
import pytest
import torch

import torchc


@pytest.fixture
def restore_config():
    old = {k: getattr(torchc.config, k) for k in ("max_sources", "inline_depth", "max_outputs")}
    yield
    for k, v in old.items():
        setattr(torchc.config, k, v)


def test_many_outputs_one_graph():
    xs = [torch.randn(3) for _ in range(150)]

    def f(*a):
        return tuple(x * 2 + 1 for x in a)

    with torch.no_grad():
        ex = torchc.explain(f)(*xs)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    for r, x in zip(ex.result, xs):
        torch.testing.assert_close(r, x * 2 + 1)


def test_many_inplace_inputs_one_graph():
    xs = [torch.randn(4) for _ in range(100)]
    want = [x + 1 for x in xs]

    def f(*a):
        for x in a:
            x.add_(1)

    with torch.no_grad():
        ex = torchc.explain(f)(*xs)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    for x, w in zip(xs, want):
        torch.testing.assert_close(x, w)


class Holder(torch.nn.Module):
    """reads n guarded attributes (a source each) and a few buffers (graph inputs)"""
    def __init__(self, n):
        super().__init__()
        self.n = n
        for i in range(n):
            setattr(self, f"c{i}", float(i % 7))
        for i in range(8):
            self.register_buffer(f"b{i}", torch.full((2,), float(i)))

    def forward(self, x):
        s = 0.0
        for i in range(self.n // 100):
            for j in range(100):
                s = s + getattr(self, f"c{i * 100 + j}")
        for i in range(8):
            x = x + getattr(self, f"b{i}")
        return x * s


@pytest.mark.allow_fallback
def test_sources_beyond_4096_and_config_limit(restore_config):
    m = Holder(5000)  # a source per attribute: more than the old fixed 4096
    x = torch.zeros(2)
    with torch.no_grad():
        want = m(x)
        ex = torchc.explain(m)(x)
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons[:3]
        torch.testing.assert_close(ex.result, want)
        torchc.reset()
        torchc.config.max_sources = 100
        ex = torchc.explain(m)(x)
        torch.testing.assert_close(ex.result, want)
    assert any("torchc.config.max_sources" in r for r in ex.break_reasons), ex.break_reasons[:3]


def _nest(depth):
    def leaf(x):
        return x * 2
    f = leaf
    for _ in range(depth):
        f = (lambda g: (lambda x: g(x) + 1))(f)
    return f


def test_inline_depth_is_a_config_value(restore_config):
    f = _nest(40)  # 40 nested Python calls: deeper than the old fixed 24
    x = torch.randn(3)
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons[:3]
    torch.testing.assert_close(ex.result, f(x))
    torchc.reset()
    torchc.config.inline_depth = 8
    ex = torchc.explain(f)(x)
    torch.testing.assert_close(ex.result, f(x))
    assert any("torchc.config.inline_depth" in r for r in ex.break_reasons), ex.break_reasons[:3]
    with pytest.raises(ValueError):
        torchc.config.inline_depth = 10**6
    with pytest.raises(ValueError):
        torchc.config.max_sources = 0


REGISTRY = {f"key{i}": {"scale": float(i)} for i in range(300)}


def test_large_registry_dict_read_one_graph():
    # a module-level registry past the old 64-item cap (transformers' output-recorder
    # registry grows with every model class used in the process)
    def f(x, name):
        entry = REGISTRY.get(name) or {}
        return x * entry.get("scale", 1.0) + ("key7" in REGISTRY)

    x = torch.randn(4, 3)
    with torch.no_grad():
        ex = torchc.explain(f)(x, "key123")
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, f(x, "key123"))
    REGISTRY["late"] = {"scale": -2.0}  # the registry grows: still eager's answer
    try:
        torch.testing.assert_close(torchc.compile(f)(x, "late"), f(x, "late"))
    finally:
        del REGISTRY["late"]


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_dict_past_max_dict_items_breaks_with_the_reason():
    old = torchc.config.max_dict_items
    torchc.config.max_dict_items = 100
    try:
        def f(x):
            return x * REGISTRY["key5"]["scale"]

        x = torch.randn(3)
        ex = torchc.explain(f)(x)
        torch.testing.assert_close(ex.result, f(x))
        assert any("max_dict_items" in r for r in ex.break_reasons), ex.break_reasons
    finally:
        torchc.config.max_dict_items = old
