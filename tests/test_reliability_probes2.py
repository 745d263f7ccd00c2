"""Regressions found by probing unseen user-style programs (round 2; the harness is
tools/probe2.py with its scenarios in tools/probes2/). Each test is the minimal program that
gave a different answer, dtype or exception under torchc.compile than in eager, and fails on
the build before its fix."""
import pytest
import torch

import torchc


def _graphs(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count >= 1 and ex.op_count > 0, ex.break_reasons
    return ex


# ---- torch.arange ------------------------------------------------------------------------
# arange with float bounds took float32 whatever torch.get_default_dtype() was (zeros/linspace
# followed it), and its out=/requires_grad= arguments were ignored: out= left the buffer
# unwritten, requires_grad=True gave a tensor without grad.

def _arange_float(n, x):
    return torch.arange(0.0, n) + x.sum(), torch.arange(0, 1, 0.25), torch.arange(n * 1.0)


@pytest.mark.parametrize("default", [torch.float32, torch.float64])
def test_arange_of_float_bounds_takes_the_default_dtype(default):
    x = torch.ones(3, dtype=torch.float16)
    old = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        want = _arange_float(4, x)
        got = torchc.compile(_arange_float)(4, x)
        _graphs(_arange_float, 4, x)
    finally:
        torch.set_default_dtype(old)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == default
        torch.testing.assert_close(g, w)


def test_arange_default_dtype_change_between_calls_recompiles():
    f = torchc.compile(lambda x: torch.arange(0.5, 3) * x)
    x = torch.ones(3, dtype=torch.float16)
    assert f(x).dtype == torch.float32
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert f(x).dtype == torch.float64
    finally:
        torch.set_default_dtype(old)
    assert f(x).dtype == torch.float32


def _arange_out(x, buf):
    torch.arange(4, out=buf)
    return x * 2, buf


def test_arange_out_writes_the_buffer():
    x = torch.randn(3)
    b1, b2 = torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long)
    want = _arange_out(x, b1)
    got = torchc.compile(_arange_out)(x, b2)
    torch.testing.assert_close(b2, torch.arange(4))
    torch.testing.assert_close(got[0], want[0])
    assert got[1] is b2
    _graphs(_arange_out, x, torch.zeros(4, dtype=torch.long))


def _arange_rg(x):
    a = torch.arange(3.0, requires_grad=True)
    return (a * x).sum(), a


def test_arange_requires_grad_is_a_leaf_that_gets_grad():
    x = torch.randn(3)
    loss, a = torchc.compile(_arange_rg)(x)
    assert a.requires_grad and a.is_leaf and loss.requires_grad
    loss.backward()
    torch.testing.assert_close(a.grad, x)
    _graphs(_arange_rg, x)


def test_arange_of_int_bounds_beyond_2_pow_53_is_exact():
    f = lambda x: torch.arange(2**60, 2**60 + 3) + x  # noqa: E731
    x = torch.zeros(3, dtype=torch.long)
    torch.testing.assert_close(torchc.compile(f)(x), f(x), rtol=0, atol=0)


# ---- sort/argsort's stable overload ------------------------------------------------------
# x.sort(-1, stable=True) is eager's TypeError (the stable overload takes dim and descending by
# keyword only); torchc bound -1 to dim and returned the sort.

@pytest.mark.parametrize("call", [lambda x: x.sort(-1, stable=True), lambda x: torch.sort(x, 0, stable=False),
                                  lambda x: x.argsort(-1, True, stable=True), lambda x: x.sort(0, stable=None)])
def test_sort_stable_with_positional_dim_raises_as_eager(call):
    def f(x):
        return call(x * 2)
    x = torch.tensor([3.0, 1.0, 3.0])
    with pytest.raises(TypeError):
        f(x)
    with pytest.raises(TypeError):
        torchc.compile(f)(x)


def test_sort_stable_by_keyword_still_compiles():
    def f(x):
        return x.sort(stable=True, dim=0, descending=True), torch.argsort(x, stable=True)
    x = torch.tensor([3.0, 1.0, 3.0, -1.0])
    want = f(x)
    ex = _graphs(f, x)
    assert ex.graph_break_count == 0, ex.break_reasons
    got = torchc.compile(f)(x)
    torch.testing.assert_close(got[0].values, want[0].values)
    torch.testing.assert_close(got[0].indices, want[0].indices)
    torch.testing.assert_close(got[1], want[1])
