"""CPU sin / cos / tan (float32, float64): vectorized in the compiled loop (vmath.c vm_trig), within 1 ulp for
every input like eager's SLEEF u10 functions.

The ulp checks hold compiled values to numpy's long double sin/cos/tan of the same inputs over
[-1e4, 1e4], near multiples of pi/2 (where a reduction with too short a pi/2 loses the result),
tiny, denormal and huge values (the lanes past the reduction's range go to libm) and inf/NaN;
the differential checks hold them to eager over odd sizes, layouts, empty tensors, dtypes."""
import math

import numpy as np
import pytest
import torch

import torchc
from conftest import assert_same, captured_whole, explain_of


def _inputs(dt):
    """float64 values, exact in dt"""
    k = np.arange(-3000, 3000, dtype=np.float64)
    near = k * (math.pi / 2)  # nearest dt values to k pi/2 and their neighbours
    near = torch.from_numpy(near).to(dt).double().numpy()
    nb = np.concatenate([np.nextafter(near.astype(dt_np(dt)), np.inf), np.nextafter(near.astype(dt_np(dt)), -np.inf)])
    big = np.logspace(4, 38.4, 2000)
    tiny = np.logspace(-44 if dt == torch.float32 else -320, -3, 600)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, 2.0 ** 30, 2.0 ** 30 + 2.0 ** 7, 3.4e38, 1e300])
    xs = np.concatenate([np.linspace(-1e4, 1e4, 40001), np.linspace(-4, 4, 20001), np.linspace(-7e4, 7e4, 20001), near, nb.astype(np.float64),
                         big, -big, tiny, -tiny, special])
    return torch.from_numpy(xs).to(dt)


def dt_np(dt):
    return np.float32 if dt == torch.float32 else np.float64


def _ulps(got, x, name):
    xl = x.double().numpy().astype(np.longdouble)
    with np.errstate(invalid="ignore"):
        ref = getattr(np, name)(xl)
    g = got.numpy().astype(np.longdouble)
    fi = np.finfo(got.numpy().dtype)
    e = np.maximum(np.frexp(ref)[1].astype(np.int64) - fi.nmant - 1, fi.minexp - fi.nmant)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - ref) / np.ldexp(np.longdouble(1), e)
    both_nan = np.isnan(ref) & np.isnan(g)
    err[both_nan] = 0
    return np.where(np.isnan(err), np.inf, err)


@pytest.mark.parametrize("name,dt", [("sin", torch.float32), ("cos", torch.float32), ("tan", torch.float32),
                                     ("sin", torch.float64), ("cos", torch.float64), ("tan", torch.float64)])
def test_ulp(name, dt):
    x = _inputs(dt)
    f = torchc.compile(lambda a: getattr(torch, name)(a))
    got = f(x)
    assert captured_whole(explain_of(lambda a: getattr(torch, name)(a), x))
    err = _ulps(got, x, name)
    worst = int(err.argmax())
    assert err.max() < 1.0, f"{name} {dt}: {err.max():.3f} ulp at {x[worst].item()!r}: {got[worst].item()!r}"
    # the cases ulps do not see: signed zero, NaN from inf
    z = f(torch.tensor([-0.0, 0.0, float("inf"), -float("inf"), float("nan")], dtype=dt))
    if name == "cos":
        assert z[:2].tolist() == [1.0, 1.0]
    else:
        assert z[:2].tolist() == [0.0, 0.0] and torch.signbit(z[0]) and not torch.signbit(z[1])
    assert z[2:].isnan().all()


def _lowered(fn, x, capfd):
    """the LLVM text of fn's CPU kernels"""
    saved = torchc.config.debug
    torchc.config.debug = "llvm"
    try:
        capfd.readouterr()
        torchc.compile(fn)(x)
        return capfd.readouterr().err
    finally:
        torchc.config.debug = saved


@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
def test_lowered_as_vector_code(dt, capfd):
    """no llvm.sin/llvm.cos (a libm call per lane): the polynomials, and a block of libm calls
    run only for huge arguments"""
    ir = _lowered(lambda a: a.sin() + a.cos(), torch.randn(100, dtype=dt), capfd)
    assert "trig.big" in ir, ir[:2000]
    assert "llvm.sin" not in ir and "llvm.cos" not in ir


SIZES = [(0,), (7,), (17,), (1003,), (13, 19)]


def _all(a):
    """sin, cos, tan, both of one value (one reduction), a fused expression, reductions of sin"""
    s = a.sin()
    return s, torch.cos(a), a.tan(), s * a.cos() + s, (s * a).relu() + 1, s.sum(-1), a.cos().sum(0)


@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.bfloat16])
def test_vs_eager(dt):
    cfn = torchc.compile(_all)
    for shape in SIZES:
        x = torch.randn(shape, dtype=torch.float32).mul(20).to(dt)
        assert_same(cfn(x), _all(x))
        if len(shape) == 2:
            xt = torch.randn(shape[::-1], dtype=dt).mul(20).t()
            assert_same(cfn(xt), _all(xt))
            xs = torch.randn(shape[0], shape[1] * 2, dtype=dt).mul(20)[:, ::2]
            assert_same(cfn(xs), _all(xs))
    big = torch.tensor([1e10, -3e38, 5.0, 1e20, 2.5, float("inf"), -0.0], dtype=torch.float32).to(dt)
    assert_same(cfn(big), _all(big))
    assert captured_whole(explain_of(_all, torch.randn(9, dtype=dt)))


def test_int_input():
    fn = lambda a: a.sin() + a.cos()  # noqa: E731
    x = torch.arange(-50, 50, dtype=torch.int32)
    assert_same(torchc.compile(fn)(x), fn(x))
    assert captured_whole(explain_of(fn, x))
