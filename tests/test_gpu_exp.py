"""f32 exp on the GPU (codegen/gpu_nvptx.c exp_f32: ex2.approx of rn(x log2 e) corrected by
the part of x log2 e that rounding lost) against torch.exp on the same
device: within a few ulp over the whole range, exact at the special values; softmax built on it.
Skips without a CUDA device (the PTX itself is checked by ptxas in make ptx-check)."""
import pytest
import torch

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _ulps(got, want):
    want64 = want.double()
    spacing = torch.from_numpy(__import__("numpy").spacing(want.abs().cpu().numpy())).to(got.device).double()
    return ((got.double() - want64).abs() / spacing.clamp_min(1e-45))


@cuda
def test_exp_range_and_specials(monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    x = torch.linspace(-110.0, 95.0, 1 << 20, device="cuda")
    sp = torch.tensor([float("-inf"), float("inf"), float("nan"), 0.0, -0.0, 88.72, 88.73, -87.3, -103.9,
                       -150.0, 1e-30, -1e-30], device="cuda")
    x = torch.cat([x, sp, torch.randn(4097, device="cuda")])
    torchc.reset()
    got = torchc.compile(lambda t: torch.exp(t))(x)
    want = torch.exp(x)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(torch.isinf(got), torch.isinf(want))
    fin = torch.isfinite(want) & (want > 1.2e-38)
    # ex2.approx ~2 ulp + reduction < 1 + eager's own error; exp(x log2 e) straight would be ~64 at 88
    assert _ulps(got[fin], want[fin]).max().item() <= 6.0
    sub = torch.isfinite(want) & (want <= 1.2e-38)  # subnormal / zero results: absolute
    assert (got[sub] - want[sub]).abs().max().item() <= 4 * 1.4e-45
    for v in (0.0, -0.0):
        assert got[x == v].eq(1.0).all()


@cuda
@pytest.mark.parametrize("n", [1, 7, 1000, 4096, 32768])
def test_softmax_f32(n, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(0)
    x = torch.randn(64, n, device="cuda") * 10
    torchc.reset()
    got = torchc.compile(lambda t: torch.softmax(t, -1))(x)
    torch.testing.assert_close(got, torch.softmax(x, -1), rtol=2e-6, atol=1e-7)


@cuda
@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n", [1, 7, 1000, 4096, 32768])
@pytest.mark.parametrize("lowp", ["", "0"])
def test_softmax_half(dt, n, lowp, monkeypatch):
    """f16/bf16 softmax: f32 math rounded once (as eager); its exp and division in the fast
    forms (lowp_need) stay within one unit in the last place of the half type of the f64
    result, and almost every element equals eager's"""
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.setenv("TORCHC_GPU_LOWP", lowp)
    torch.manual_seed(0)
    x = (torch.randn(64, n, device="cuda") * 4).to(dt)
    for f in (lambda t: torch.softmax(t, -1), lambda t: torch.log_softmax(t, -1)):
        torchc.reset()
        got = torchc.compile(f)(x)
        assert got.dtype == dt
        exact = f(x.double())
        ulp = torch.finfo(dt).eps * exact.abs().clamp_min(torch.finfo(dt).tiny)
        assert bool(((got.double() - exact).abs() <= ulp).all())
        assert (got != f(x)).float().mean().item() < 0.05


@cuda
def test_gelu_tanh_sigmoid_f32(monkeypatch):
    """f32 gelu, erf, tanh, sigmoid, silu: their inner exp is exp_f32 (cg.exp_fn)"""
    monkeypatch.setenv("TORCHC_CACHE", "0")
    x = torch.cat([torch.linspace(-30, 30, 1 << 16, device="cuda"), torch.randn(4099, device="cuda") * 3,
                   torch.tensor([0.0, -0.0, float("-inf"), float("nan")], device="cuda")])
    F = torch.nn.functional
    for name, f in [("gelu", F.gelu), ("erf", torch.erf), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid),
                    ("silu", F.silu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"))]:
        torchc.reset()
        got, want = torchc.compile(f)(x), f(x)
        torch.testing.assert_close(got, want, rtol=4e-6, atol=2e-7, equal_nan=True, msg=name)
