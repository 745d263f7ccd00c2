"""torch.device(d) as a context and torch.set_default_device(d) around a compiled call (issue
21): the DeviceContext they push is the only TorchFunctionMode on the stack, and the call is
traced with its factories (torch.zeros & co without device=) on that device, as eager's
DeviceContext places them, not run eagerly. The entry is guarded on the mode stack: a call
without the context, or under another device, does not reuse it. Any other mode around the
call runs it eagerly (tests/test_reliability_probes3.py)."""
import pytest
import torch

import torchc


def _factories(x):
    a = torch.zeros(3) + torch.ones(3) * 2
    b = torch.arange(3, dtype=torch.float32) + torch.full((3,), 0.5)
    c = torch.tensor([1.0, 2.0, 3.0])
    e = torch.empty(3).fill_(1.0)
    return x * a + b * c + e


def _graph_count(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    return ex


def test_with_torch_device_cpu_compiles_factories():
    x = torch.randn(3)
    with torch.device("cpu"):
        want = _factories(x)
        ex = _graph_count(_factories, x)
        assert ex.graph_count == 1 and ex.op_count > 0, ex.break_reasons
        got = torchc.compile(_factories)(x)
    torch.testing.assert_close(got, want)
    assert got.device == want.device


def test_set_default_device_cpu_compiles_factories():
    x = torch.randn(3)
    torch.set_default_device("cpu")
    try:
        want = _factories(x)
        ex = _graph_count(_factories, x)
        assert ex.graph_count == 1 and ex.op_count > 0, ex.break_reasons
        got = torchc.compile(_factories)(x)
    finally:
        torch.set_default_device(None)
    torch.testing.assert_close(got, want)
    assert got.device == want.device


def _only_factory(n):
    return torch.ones(n) * 2 + torch.arange(n)


@pytest.mark.allow_fallback
def test_entry_not_reused_when_the_context_changes():
    g = torchc.compile(_only_factory)
    torchc.reset()
    with torch.device("cpu"):
        torch.testing.assert_close(g(3), _only_factory(3))
    assert torchc._C.stats()["compiles"] == 1
    # without the context: the entry is guarded on the mode stack, a new compile
    torch.testing.assert_close(g(3), _only_factory(3))
    assert torchc._C.stats()["compiles"] == 2
    # under meta: factories land on meta as in eager (the call runs eagerly)
    with torch.device("meta"):
        want = _only_factory(3)
        got = g(3)
    assert want.device.type == "meta" and got.device.type == "meta"
    assert got.shape == want.shape and got.dtype == want.dtype
    # back under cpu: the first entry again, no compile
    n = torchc._C.stats()["compiles"]
    with torch.device("cpu"):
        torch.testing.assert_close(g(3), _only_factory(3))
    assert torchc._C.stats()["compiles"] == n


@pytest.mark.no_compile   # the call runs eagerly whole
def test_meta_context_runs_eagerly_with_a_reason():
    # factories on meta: the graph cannot make them, and a graph break at the factory would run
    # the rest of the frame eagerly through the hook: the whole call is eager, as before
    with torch.device("meta"):
        want = _only_factory(3)
        torchc.reset()
        ex = torchc.explain(_only_factory)(3)
        got = torchc.compile(_only_factory)(3)
    assert got.device.type == "meta" and got.shape == want.shape and got.dtype == want.dtype
    assert any("TorchFunctionMode" in str(r) for r in ex.break_reasons), ex.break_reasons


def test_explicit_device_is_kept_under_the_context():
    def f(x):
        return x + torch.zeros(3, device="cpu") + torch.ones(3, device=None)
    x = torch.randn(3)
    with torch.device("cpu"):
        want = f(x)
        ex = _graph_count(f, x)
        assert ex.graph_count == 1, ex.break_reasons
        got = torchc.compile(f)(x)
    torch.testing.assert_close(got, want)


def _reads_default_device(x):
    d = torch.get_default_device()
    return x + torch.arange(x.shape[0]), d


@pytest.mark.allow_fallback
def test_get_default_device_is_a_guarded_constant():
    # it reads the real mode stack (guarded by every entry): one graph, no break
    x = torch.randn(3)
    torchc.reset()
    with torch.device("cpu"):
        want = _reads_default_device(x)
        ex = torchc.explain(_reads_default_device)(x)
        assert ex.graph_count == 1 and not ex.break_reasons, ex.break_reasons
        got = torchc.compile(_reads_default_device)(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1]
    got = torchc.compile(_reads_default_device)(x)
    assert got[1] == torch.get_default_device()
