"""Vector loads whose offsets may leave their buffer (codegen/gpu_mem.c vec_in_span, vec_off): a
cat's untaken side, the shifted windows of a pooling's backward. When lane 0 sits at a multiple
of V and the buffer's span is one too, the V lanes are inside or outside the buffer together,
so the vector's offset is clamped into [0, span - V] and the lanes load as one 16-byte access
instead of V clamped scalar loads (DenseNet's backward summed 32 such inputs in one kernel:
686 scalar loads, 376 KB of PTX, the longest ptxas module of its step).

1. without a GPU: the PTX of a bf16 cat along its last dim (parts of 24 and 40 elements: rows
   at multiples of 8) loads both parts as vectors in the vector variant; a part of 20
   elements (rows not at multiples of 8) keeps scalar loads.
2. with a GPU (skips without): cats and avg_pool2d's backward in channels-last bf16, against
   eager, values and gradients."""
import re

import pytest
import torch
import torch.nn.functional as F

import torchc
from conftest import assert_same
from test_ptx_probe import _kernel_ptx

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _entries(ptx):
    """{name: body} of the PTX's kernels"""
    out = {}
    for e in re.split(r"(?=\.visible \.entry )", ptx)[1:]:
        out[re.match(r"\.visible \.entry (\w+)\(", e).group(1)] = e[:e.find("\n}\n")]
    return out


@pytest.mark.parametrize("n0,vec", [(24, True), (20, False)])
def test_cat_sides_load_as_vectors(n0, vec, monkeypatch, capfd, tmp_path):
    a = torch.randn(64, n0).bfloat16()
    b = torch.randn(64, 64 - n0).bfloat16()
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda x, y: torch.cat([x, y], -1) * 2, a, b)
    ents = _entries(ptx)
    vk = [body for name, body in ents.items() if name.endswith("v")]
    if not vec:
        assert all("ld.global.nc.u16" in body for body in ents.values()), list(ents)
        return
    assert len(vk) == 1, list(ents)
    assert vk[0].count("ld.global.nc.v4.u32") == 2, vk[0]
    assert "ld.global.nc.u16" not in vk[0], vk[0]


@cuda
@pytest.mark.parametrize("sizes", [(24, 40), (8, 8, 48), (32, 96)], ids=str)
def test_cat_channels_last_cuda(sizes):
    torch.manual_seed(0)
    xs = [torch.randn(2, c, 5, 7, device="cuda").bfloat16().to(memory_format=torch.channels_last) for c in sizes]

    def f(*xs):
        return torch.relu(torch.cat(xs, 1)) * 3

    want = f(*xs)
    torchc.reset()
    assert_same(torchc.compile(f)(*xs), want)


@cuda
@pytest.mark.parametrize("c", [64, 96, 128])
def test_avg_pool_backward_channels_last_cuda(c):
    torch.manual_seed(0)
    x = torch.randn(4, c, 8, 8, device="cuda").bfloat16().to(memory_format=torch.channels_last)
    w = torch.randn(4, c // 2, 4, 4, device="cuda").bfloat16()

    def f(x, w):
        return (F.avg_pool2d(torch.relu(x), 2) * w.repeat(1, 2, 1, 1)).float().sum()

    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    f(xe, w).backward()
    torchc.reset()
    torchc.compile(f)(xc, w).backward()
    assert_same(xc.grad, xe.grad)
