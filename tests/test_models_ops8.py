"""prelu (torchc/_polyfill_ops.py: ATen's x > 0 ? x : w * x, the weight over dim 1) and the
inverse trigonometric/hyperbolic graph ops, in compiled code against eager: values, dtype,
shape, strides and gradients; edge shapes 0, 1, odd, non-contiguous."""
import pytest
import torch
import torch.nn.functional as F

import torchc


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, ex.break_reasons
    want = fn(*args)
    torch.testing.assert_close(ex.result, want, equal_nan=True)
    assert ex.result.dtype == want.dtype and ex.result.shape == want.shape
    return ex.result, want


@pytest.mark.parametrize("xs,wn", [((2, 3, 4), 3), ((2, 3, 4), 1), ((), 1), ((5,), 1), ((0, 3, 5), 3),
                                   ((1, 1), 1), ((2, 7, 3, 5), 7)])
def test_prelu_shapes(xs, wn):
    x = torch.randn(xs)
    w = torch.rand(wn) * 0.5
    got, want = _whole(lambda a, b: F.prelu(a * 1.5, b) + 1, x, w)
    assert torch.equal(got, want)


def test_prelu_channels_last_keeps_strides_and_bf16():
    x = torch.randn(2, 4, 3, 5).to(memory_format=torch.channels_last)
    w = torch.rand(4)
    got, want = _whole(lambda a, b: F.prelu(a, b), x, w)
    assert got.stride() == want.stride()
    _whole(lambda a, b: F.prelu(a, b), x.bfloat16(), w.bfloat16())


def test_prelu_module_gradients_match_eager():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.PReLU(4))
    x = torch.randn(2, 3, 6, 6)
    x[0, 0, 0, :] = 0.0  # exact zeros: the x > 0 branch as eager's kernel
    ref = m(x).square().sum()
    ref.backward()
    gw = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    torchc.reset()
    out = torchc.compile(m)(x).square().sum()
    out.backward()
    torch.testing.assert_close(out, ref)
    for p, g in zip(m.parameters(), gw):
        torch.testing.assert_close(p.grad, g)


@pytest.mark.allow_fallback  # eager raises: the call is left to it
def test_prelu_dtype_mismatch_raises_as_eager():
    x, w = torch.randn(2, 3), torch.rand(3).double()
    with pytest.raises(RuntimeError):
        F.prelu(x, w)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(lambda a, b: F.prelu(a, b) + 1)(x, w)


@pytest.mark.parametrize("name,lo,hi", [("asin", -1.2, 1.2), ("acos", -1.2, 1.2), ("asinh", -50, 50),
                                        ("acosh", 0.5, 50), ("atanh", -1.1, 1.1), ("arcsin", -1, 1),
                                        ("arctanh", -1, 1)])
@pytest.mark.parametrize("shape", [(3, 5), (1,), (0, 4), (7, 9)])
def test_inverse_trig_values(name, lo, hi, shape):
    fn = getattr(torch, name)
    x = torch.rand(shape) * (hi - lo) + lo
    if x.numel() > 2:
        x.view(-1)[0] = 1.0
        x.view(-1)[1] = -1.0 if name != "acosh" else 1.0
    got, want = _whole(lambda a: fn(a) * 2, x)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=2e-6, atol=1e-6)
    xt = (torch.rand(shape[::-1]) * (hi - lo) + lo).t()  # non-contiguous
    _whole(lambda a: getattr(a, name)() + 1, xt)


@pytest.mark.parametrize("name", ["asin", "acos", "asinh", "acosh", "atanh"])
def test_inverse_trig_gradients(name):
    x = torch.rand(4, 5, dtype=torch.float64) * 0.8 + (1.1 if name == "acosh" else -0.4)
    x.requires_grad_(True)
    fn = getattr(torch, name)
    torchc.reset()
    ex = torchc.explain(lambda a: fn(a * 1.0).sum())(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    g, = torch.autograd.grad(torchc.compile(lambda a: fn(a * 1.0).sum())(x), x)
    ge, = torch.autograd.grad(fn(x).sum(), x)
    torch.testing.assert_close(g, ge)
