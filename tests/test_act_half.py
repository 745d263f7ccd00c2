"""Activations of f16/bf16 tensors: eager computes hardswish, relu6, softplus, ... in float and
rounds once (one ATen kernel each); torchc's decompositions must do the same, not round after
every op of the formula (which differed from eager in the last bit and cost code size)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

EXACT = [("hardswish", F.hardswish), ("hardsigmoid", F.hardsigmoid), ("relu6", F.relu6),
         ("leaky_relu", lambda t: F.leaky_relu(t, 0.1)), ("hardtanh", lambda t: F.hardtanh(t, -2.0, 3.0)),
         ("softsign", F.softsign)]  # softsign: composite in eager, rounded per op there too
CLOSE = [("softplus", F.softplus), ("elu", F.elu), ("selu", F.selu), ("mish", F.mish),
         ("logsigmoid", F.logsigmoid)]


def _input(dt, n=4097):
    torch.manual_seed(0)
    x = torch.randn(n) * 4
    x[:8] = torch.tensor([0.0, -0.0, -3.0, 3.0, 6.0, -6.0, 1e-3, -1e-3])
    return x.to(dt)


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name,f", EXACT, ids=[e[0] for e in EXACT])
def test_piecewise_linear_exact(name, f, dt):
    x = _input(dt)
    torchc.reset()
    got = torchc.compile(lambda t: f(t))(x)
    assert got.dtype == dt
    assert torch.equal(got, f(x)), f"{name} {dt}: {(got != f(x)).sum().item()} elements differ from eager"


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name,f", CLOSE, ids=[e[0] for e in CLOSE])
def test_transcendental_one_rounding(name, f, dt):
    x = _input(dt)
    torchc.reset()
    got, want = torchc.compile(lambda t: f(t))(x), f(x)
    # one rounding of a float result: at most one unit in the last place of the half type
    # (rounded per op, the error grew to several), and most elements identical
    ulp = torch.finfo(dt).eps * want.float().abs().clamp_min(torch.finfo(dt).tiny)
    err = (got.float() - want.float()).abs()
    assert bool((err <= ulp * 1.01).all()), f"{name} {dt}: max err {err.max().item()}"
    assert (err > 0).float().mean().item() < 0.02


def test_inplace_and_module_forms():
    x = _input(torch.bfloat16, 1000).reshape(10, 100)
    m = nn.Sequential(nn.Hardswish(), nn.ReLU6(), nn.Hardsigmoid())

    def f(t):
        t = t * 1.0
        F.hardswish(t, inplace=True)
        return m(t), t

    torchc.reset()
    got, want = torchc.compile(f)(x), f(x)
    for a, b in zip(got, want):
        assert a.dtype == torch.bfloat16 and torch.equal(a, b)


def test_f32_and_f64_unchanged():
    for dt in (torch.float32, torch.float64):
        x = _input(dt)
        torchc.reset()
        torch.testing.assert_close(torchc.compile(lambda t: F.hardswish(t) + F.softplus(t))(x),
                                   F.hardswish(x) + F.softplus(x))


def test_widening_cast_stores_the_narrow_value():
    """hardswish of a bf16 value used by two kernels: the stored intermediate is the bf16 value
    (cast to f32 where read), not its f32 widening (twice the bytes)"""
    def f(x, a, b, c, d, e):
        g = F.hardswish((x * a + b) * c - d + e)
        return g.sum(0), g.amax(-1)

    torch.manual_seed(0)
    args = [torch.randn(64, 128, dtype=torch.bfloat16) for _ in range(6)]
    torchc.reset()
    ex = torchc.explain(f)(*args)
    text = ex.kernels[0]
    bufs = [b.strip() for b in text.split("buffers:")[1].splitlines()[0].split(";")]
    tmps = [b for b in bufs if b.startswith("tmp")]
    assert tmps and all(" bf16[" in b for b in tmps), text
    got, want = torchc.compile(f)(*args), f(*args)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=0.0625, rtol=0.02)


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_computes_in_float(dt, log):
    """eager's softmax of f16/bf16 computes in float and rounds the output once: so must torchc
    (rounding x - max, exp and the row sum each to the half type put the result off by several
    units in the last place). Measured against the float64 result: within one unit in the
    last place of the half type (eager's own CPU log_softmax is 3 units off at a few points)"""
    torch.manual_seed(0)
    x = (torch.randn(33, 1000) * 4).to(dt)
    f = (lambda t: torch.log_softmax(t, -1)) if log else (lambda t: F.softmax(t, dim=1))
    torchc.reset()
    got = torchc.compile(f)(x)
    assert got.dtype == dt
    exact = f(x.double())
    ulp = torch.finfo(dt).eps * exact.abs().clamp_min(torch.finfo(dt).tiny)
    err = (got.double() - exact).abs()
    assert bool((err <= ulp).all()), f"{dt} log={log}: {(err / ulp).max().item():.2f} ulp"
    if not log:
        torch.testing.assert_close(got, f(x), atol=0, rtol=torch.finfo(dt).eps)


def test_softmax_dtype_argument_unchanged():
    x = torch.randn(8, 100, dtype=torch.bfloat16)
    torchc.reset()
    got = torchc.compile(lambda t: torch.softmax(t, -1, dtype=torch.float32))(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, torch.softmax(x, -1, dtype=torch.float32))
