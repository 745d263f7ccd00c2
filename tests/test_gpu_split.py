"""Split rows with more parts than the combining block has threads (gpu_nvptx.c choose_split,
split_blocks, part_combine): x.sum() of a huge tensor is reduced by S blocks per row into
partials, then one block per row combines them, each thread reading partials t, t + 512, ...
TORCHC_GPU_SPLIT_BLOCKS sets the partial launch's blocks (default 16 per SM; up to 4096 parts
per row), TORCHC_GPU_SPLIT_EVEN=1 spreads the chunks evenly over the parts. Differential tests
against eager on the device for sums, means, max/min, argmax/argmin (ties and NaN across part
boundaries), several rows, ragged sizes, bf16 input, fused softmax / layernorm of long rows,
and under CUDA graph capture. Skips without a CUDA device; the PTX side is in
test_ptx_probe.py."""
import pytest
import torch
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

BLOCKS = ["", "528", "1056", "5000", "100000", "even", "even5000"]


def _close(got, want, **tol):
    torch.testing.assert_close(got, want, equal_nan=True, **tol)


@pytest.fixture
def blocks(request, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.delenv("TORCHC_GPU_SPLIT_EVEN", raising=False)
    monkeypatch.delenv("TORCHC_GPU_SPLIT_BLOCKS", raising=False)
    if request.param.startswith("even"):  # chunks spread evenly over the parts (A/B knob)
        monkeypatch.setenv("TORCHC_GPU_SPLIT_EVEN", "1")
        if request.param[4:]:
            monkeypatch.setenv("TORCHC_GPU_SPLIT_BLOCKS", request.param[4:])
    elif request.param:
        monkeypatch.setenv("TORCHC_GPU_SPLIT_BLOCKS", request.param)
    torchc.reset()
    return request.param


@cuda
@pytest.mark.parametrize("blocks", BLOCKS, indirect=True)
@pytest.mark.parametrize("n", [1 << 24, (1 << 24) + 12345, 3 * 1000003])
def test_split_sum_mean(blocks, n):
    torch.manual_seed(0)
    x = torch.randn(n, device="cuda")
    _close(torchc.compile(lambda t: t.sum())(x), x.sum(), rtol=1e-4, atol=2e-2)
    _close(torchc.compile(lambda t: t.mean())(x), x.mean(), rtol=1e-4, atol=1e-5)
    _close(torchc.compile(lambda t: (t.amax(), t.amin()))(x), (x.amax(), x.amin()))


@cuda
@pytest.mark.parametrize("blocks", BLOCKS, indirect=True)
def test_split_arg_and_nan(blocks):
    x = torch.randn(1 << 23, device="cuda")
    f = torchc.compile(lambda t: (t.argmax(), t.argmin()))
    _close(f(x), (x.argmax(), x.argmin()))
    y = torch.zeros(1 << 23, device="cuda")
    y[(1 << 23) - 5] = 1.0  # in the last part
    y[77] = 1.0  # a tie: the first index wins
    _close(f(y), (y.argmax(), y.argmin()))
    z = x.clone()
    z[(1 << 22) + 3] = float("nan")
    _close(f(z), (z.argmax(), z.argmin()))
    _close(torchc.compile(lambda t: t.sum())(z), z.sum())


@cuda
@pytest.mark.parametrize("blocks", BLOCKS, indirect=True)
@pytest.mark.parametrize("rows", [2, 3, 7])
def test_split_several_rows(blocks, rows):
    x = torch.randn(rows, 3000017, device="cuda")
    _close(torchc.compile(lambda t: t.sum(-1))(x), x.sum(-1), rtol=1e-4, atol=2e-2)
    _close(torchc.compile(lambda t: t.amax(-1, keepdim=True))(x), x.amax(-1, keepdim=True))
    xb = x.to(torch.bfloat16)
    _close(torchc.compile(lambda t: t.float().sum(-1))(xb), xb.float().sum(-1), rtol=1e-4, atol=2e-2)


@cuda
@pytest.mark.parametrize("blocks", BLOCKS, indirect=True)
def test_split_fused_rows(blocks):
    x = torch.randn(2, 4000000, device="cuda") * 4
    _close(torchc.compile(lambda t: torch.softmax(t, -1))(x), torch.softmax(x, -1), rtol=1e-4, atol=1e-9)
    w, b = torch.randn(4000000, device="cuda"), torch.randn(4000000, device="cuda")
    f = lambda t, w, b: F.layer_norm(t, (4000000,), w, b)
    _close(torchc.compile(f)(x, w, b), f(x, w, b), rtol=1e-4, atol=1e-4)


@cuda
@pytest.mark.parametrize("blocks", ["", "528"], indirect=True)
def test_split_in_cuda_graphs(blocks):
    x = torch.randn(1 << 24, device="cuda")
    f = torchc.compile(lambda t: t.sum() * 2, mode="reduce-overhead")
    for _ in range(3):
        got = f(x)
    _close(got, x.sum() * 2, rtol=1e-4, atol=4e-2)
    x.copy_(torch.randn(1 << 24, device="cuda"))
    _close(f(x), x.sum() * 2, rtol=1e-4, atol=4e-2)


@cuda
@pytest.mark.parametrize("threads", ["128", "256", "1024"])
def test_split_threads(threads, monkeypatch):
    """TORCHC_GPU_SPLIT_T (A/B knob): other block sizes of the split launches"""
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.setenv("TORCHC_GPU_SPLIT_T", threads)
    torchc.reset()
    torch.manual_seed(0)
    x = torch.randn((1 << 24) + 12345, device="cuda")
    _close(torchc.compile(lambda t: t.sum())(x), x.sum(), rtol=1e-4, atol=2e-2)
    y = torch.zeros(1 << 23, device="cuda")
    y[(1 << 23) - 5] = 1.0
    y[77] = 1.0
    _close(torchc.compile(lambda t: (t.argmax(), t.amin()))(y), (y.argmax(), y.amin()))
    z = torch.randn(3, 1 << 22, device="cuda")
    _close(torchc.compile(lambda t: torch.softmax(t, -1))(z), torch.softmax(z, -1), rtol=1e-4, atol=1e-6)
