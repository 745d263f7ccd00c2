"""Depthwise convolutions as window sums (dynamo_hook/ops_pool.c sym_dw_conv): compiled vs eager.

groups == in channels == out channels becomes zero padding, one strided slice per kernel tap
times that tap's weight column, summed in f32 (no library call); fused with its neighbours.
The default is CUDA only; TORCHC_DWCONV=1 turns it on for the CPU tests here, =0 off.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

CASES = [  # N, C, H, W, kernel, stride, padding, dilation, bias
    (2, 8, 9, 11, 3, 1, 1, 1, True),
    (3, 16, 12, 12, 5, 2, 2, 1, False),
    (1, 4, 7, 7, 3, 2, 0, 1, True),
    (2, 6, 10, 10, 3, 1, 2, 2, True),
    (2, 3, 8, 8, 5, 1, 3, 1, True),
    (1, 1, 1, 1, 1, 1, 0, 1, False),
    (2, 4, 5, 6, (3, 1), (1, 2), (1, 0), 1, True),
    (1, 5, 4, 4, 3, 3, 1, 1, True),  # stride larger than the overlap
]


def block(x, w, b, s, p, d):
    return F.hardswish(F.conv2d(x, w, b, s, p, d, groups=x.shape[1]) * 1.5 + 0.25)


def externs(fn, *args):
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1, ex
    return ex.extern_calls


def _run(device, dtype, case, monkeypatch, mode="1"):
    monkeypatch.setenv("TORCHC_DWCONV", mode)
    N, C, H, W, k, s, p, d, bias = case
    ks = (k, k) if isinstance(k, int) else k
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, C, H, W, generator=g).to(device, dtype)
    w = torch.randn(C, 1, *ks, generator=g).to(device, dtype)
    b = torch.randn(C, generator=g).to(device, dtype) if bias else None
    torchc.reset()
    got = torchc.compile(block)(x, w, b, s, p, d)
    want = block(x, w, b, s, p, d)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = {torch.bfloat16: 3e-2, torch.float16: 4e-3, torch.float32: 1e-4}.get(dtype, 1e-10)
    torch.testing.assert_close(got.float(), want.float(), atol=tol, rtol=tol)
    return externs(block, x, w, b, s, p, d)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dwconv_cpu(case, dtype, monkeypatch):
    assert _run("cpu", dtype, case, monkeypatch) == []  # no library call


def test_dwconv_off_and_default_cpu(monkeypatch):
    case = CASES[0]
    assert _run("cpu", torch.float32, case, monkeypatch, mode="0") == ["conv"]
    monkeypatch.delenv("TORCHC_DWCONV")
    assert _run("cpu", torch.float32, case, monkeypatch, mode="") == ["conv"]  # CPU default: ATen


def test_not_depthwise_stays_extern(monkeypatch):
    """a channel multiplier (out = 2 x in), groups below the channel count, a 7x7 kernel."""
    monkeypatch.setenv("TORCHC_DWCONV", "1")
    x = torch.randn(2, 4, 12, 12)
    for w, groups in [(torch.randn(8, 1, 3, 3), 4), (torch.randn(4, 2, 3, 3), 2), (torch.randn(4, 1, 7, 7), 4)]:
        f = lambda x, w: F.conv2d(x, w, None, 1, 1, 1, groups)  # noqa: E731
        torchc.reset()
        torch.testing.assert_close(torchc.compile(f)(x, w), f(x, w), atol=1e-4, rtol=1e-4)
        assert externs(f, x, w) == ["conv"]


def test_dwconv_module_channels_last_and_noncontiguous(monkeypatch):
    monkeypatch.setenv("TORCHC_DWCONV", "1")
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU6(),
                      nn.Conv2d(8, 8, 5, stride=2, padding=2, groups=8, bias=False)).eval()
    for x in [torch.randn(2, 8, 10, 10).to(memory_format=torch.channels_last),
              torch.randn(2, 10, 10, 8).permute(0, 3, 1, 2),
              torch.randn(2, 8, 20, 10)[:, :, ::2]]:
        torchc.reset()
        with torch.no_grad():
            torch.testing.assert_close(torchc.compile(m)(x), m(x), atol=1e-4, rtol=1e-4)


def test_dwconv1d(monkeypatch):
    monkeypatch.setenv("TORCHC_DWCONV", "1")
    x, w, b = torch.randn(2, 6, 17), torch.randn(6, 1, 4), torch.randn(6)
    f = lambda x, w, b: F.conv1d(x, w, b, 2, 3, 1, 6).relu()  # noqa: E731
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(x, w, b), f(x, w, b), atol=1e-5, rtol=1e-5)
    assert externs(f, x, w, b) == []


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_dwconv_cuda_default(case, dtype, monkeypatch):
    assert _run("cuda", dtype, case, monkeypatch, mode="") == []  # on by default on CUDA


@cuda
def test_dwconv_cuda_mobilenet_block(monkeypatch):
    """an inverted-residual block in bf16 channels-last (the 1x1 convs stay library calls)."""
    monkeypatch.delenv("TORCHC_DWCONV", raising=False)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(16, 64, 1, bias=False), nn.BatchNorm2d(64), nn.Hardswish(),
                      nn.Conv2d(64, 64, 5, stride=2, padding=2, groups=64, bias=False), nn.BatchNorm2d(64),
                      nn.Hardswish(), nn.Conv2d(64, 24, 1, bias=False)).cuda().to(torch.bfloat16).eval()
    x = torch.randn(4, 16, 29, 29, device="cuda", dtype=torch.bfloat16)
    torchc.reset()
    with torch.no_grad():
        got, want = torchc.compile(m)(x), m(x)
        torch.testing.assert_close(got.float(), want.float(), atol=5e-2, rtol=5e-2)
        assert externs(m, x) == ["conv", "conv"]


@pytest.mark.parametrize("stencil", ["1", "0"])
def test_stencil_option(stencil, monkeypatch, tmp_path, capfd):
    """TORCHC_STENCIL=1 (the default: padded inputs of windows stored once, fewer GPU lanes for stencils):
    same results on the CPU; the GPU code of a depthwise block (PTX probe) is smaller"""
    monkeypatch.setenv("TORCHC_DWCONV", "1")
    monkeypatch.setenv("TORCHC_STENCIL", stencil)
    monkeypatch.setenv("TORCHC_CONV_LAYOUT", "nhwc")
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    torch.manual_seed(0)
    m = nn.Sequential(nn.BatchNorm2d(16), nn.Hardswish(), nn.Conv2d(16, 16, 5, padding=2, groups=16, bias=False),
                      nn.ReLU(), nn.MaxPool2d(3, 2, 1)).eval()
    x = torch.randn(2, 16, 12, 12)
    torchc.reset()
    with torch.no_grad():
        torch.testing.assert_close(torchc.compile(m)(x), m(x), atol=1e-4, rtol=1e-4)
        torchc.reset()
        torchc.compile(m.to(torch.bfloat16))(x.bfloat16())
    err = capfd.readouterr().err
    assert "ptx probe: ok" in err and "FAILED" not in err
    lines = sum(f.read_text().count("\n") for f in tmp_path.glob("probe_*.ptx"))
    (tmp_path.parent / f"stencil_{stencil}.lines").write_text(str(lines))
    other = tmp_path.parent / f"stencil_{'0' if stencil == '1' else '1'}.lines"
    if stencil == "0" and other.exists():  # ran after "1" in the same session
        assert int(other.read_text()) < lines
