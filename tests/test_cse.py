"""Common subexpressions (TORCHC_CSE=1, opt-in; compile.c cse_graph): programs that compute a
value twice give eager's results with it, on static and dynamic shapes; scalars that differ
only in sign (0.0 / -0.0) or NaN payload are not merged. The kernel counts are checked in
tests/c/test_inductor.c (test_cse)."""
import pytest
import torch
import torch.nn.functional as F

import torchc


@pytest.fixture(autouse=True)
def cse(monkeypatch):
    monkeypatch.setenv("TORCHC_CSE", "1")
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torchc.reset()
    yield
    torchc.reset()


def _check(fn, *args, **kw):
    with torch.no_grad():
        got = torchc.compile(fn, **kw)(*args)
        want = fn(*args)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-5, atol=1e-5)


def test_var_std_and_repeats():
    x = torch.randn(7, 301)
    _check(lambda t: (t.var(-1), t.std(-1), t.mean(-1)), x)
    _check(lambda t: (t.exp() + t.exp(), torch.softmax(t, -1) * torch.softmax(t, -1).sum(0)), x)
    _check(lambda t: (F.layer_norm(t, (301,)), F.layer_norm(t, (301,)) * 2, t.var(0), t.std(0)), x)


def test_signed_zero_and_nan_scalars():
    x = torch.rand(5, 9) + 0.5
    _check(lambda t: (torch.signbit(t * 0.0), torch.signbit(t * -0.0), t + float("nan"), t + float("nan")), x)


def test_repeated_outputs_and_views():
    x = torch.randn(4, 6)
    _check(lambda t: (t.exp(), t.exp(), t.T.sin(), t.T.sin(), t[:, 1:].sum(), t[:, 1:].sum()), x)


def test_ints_and_bools():
    x = torch.randint(-5, 5, (6, 11))
    _check(lambda t: (t.sum(-1), t.sum(-1) * 2, (t > 0).sum(), (t > 0).any()), x)


@pytest.mark.parametrize("n", [3, 8, 17])
def test_dynamic(n):
    f = lambda t: (t.var(-1), t.std(-1), t.exp() + t.exp())  # noqa: E731
    _check(f, torch.randn(n, 33), dynamic=True)


def test_module():
    m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.LayerNorm(16)).eval()
    x = torch.randn(3, 16)
    _check(lambda t: (m(t), m(t) + 1), x)
