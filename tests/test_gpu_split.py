"""Split rows with more parts than the combining block has threads (gpu_nvptx.c choose_split,
split_blocks, part_combine): x.sum() of a huge tensor is reduced by S blocks per row into
partials, then one block per row combines them, each thread reading partials t, t + 512, ...
(16 blocks per SM for the partial launch; up to 4096 parts per row; a 2^26 sum runs several
iterations a thread). Differential tests
against eager on the device for sums, means, max/min, argmax/argmin (ties and NaN across part
boundaries), several rows, ragged sizes, bf16 input, fused softmax / layernorm of long rows,
and under CUDA graph capture. Skips without a CUDA device; the PTX side is in
test_ptx_probe.py."""
import pytest
import torch
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

BLOCKS = [""]  # the default split (the A/B knobs of other block counts are gone)


def _close(got, want, **tol):
    torch.testing.assert_close(got, want, equal_nan=True, **tol)


@pytest.fixture
def blocks(request, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torchc.reset()
    return request.param


@cuda
@pytest.mark.parametrize("blocks", BLOCKS, indirect=True)
@pytest.mark.parametrize("n", [1 << 24, (1 << 24) + 12345, 3 * 1000003, (1 << 26) + 7])
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
@pytest.mark.parametrize("blocks", BLOCKS, indirect=True)
def test_split_in_cuda_graphs(blocks):
    x = torch.randn(1 << 24, device="cuda")
    f = torchc.compile(lambda t: t.sum() * 2, mode="reduce-overhead")
    for _ in range(3):
        got = f(x)
    _close(got, x.sum() * 2, rtol=1e-4, atol=4e-2)
    x.copy_(torch.randn(1 << 24, device="cuda"))
    _close(f(x), x.sum() * 2, rtol=1e-4, atol=4e-2)


