"""Eager's output strides on CUDA where they differ from the CPU's (graph/strides.c models the
CPU kernels; externs but conv are taken as contiguous). CUDA's fused attention kernels (flash,
memory-efficient, cuDNN) compute [B, L, H, D] and return its transpose(1, 2): the result of
F.scaled_dot_product_attention on 16-bit CUDA tensors is not contiguous, and
out.transpose(1, 2).view(B, L, H * D) is legal there (it raises on the CPU, where the math
kernel's output is contiguous). torchc must give eager's strides and must not raise where
eager runs. Skips without a CUDA device; not run yet (written from PyTorch's attention code,
no GPU in the session that wrote it)."""
import pytest
import torch
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _qkv(dtype, b=2, h=4, L=128, d=64):
    torch.manual_seed(0)
    return [torch.randn(b, h, L, d, device="cuda", dtype=dtype) for _ in range(3)]


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_sdpa_output_strides(dtype):
    q, k, v = _qkv(dtype)

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    want = f(q, k, v)
    torchc.reset()
    got = torchc.compile(f)(q, k, v)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
    assert got.stride() == want.stride(), (got.stride(), want.stride())


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_sdpa_merge_heads_view(dtype):
    q, k, v = _qkv(dtype)

    def f(q, k, v):
        o = F.scaled_dot_product_attention(q, k, v)
        return o.transpose(1, 2).view(o.shape[0], o.shape[2], -1) * 2

    try:
        want = f(q, k, v)
    except RuntimeError:
        pytest.skip("eager's attention output is contiguous here: the view raises in eager too")
    torchc.reset()
    ex = torchc.explain(f)(q, k, v)
    torch.testing.assert_close(ex.result, want, rtol=2e-2, atol=2e-2)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)


@cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_sdpa_pointwise_then_view(dtype):
    """a pointwise op keeps the attention output's run-time layout in eager (TensorIterator):
    the view of its transpose is legal there too; torchc must not refuse it"""
    q, k, v = _qkv(dtype)

    def f(q, k, v):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2
        return o.transpose(1, 2).view(o.shape[0], o.shape[2], -1) + 1

    try:
        want = f(q, k, v)
    except RuntimeError:
        pytest.skip("eager's attention output is contiguous here: the view raises in eager too")
    torchc.reset()
    ex = torchc.explain(f)(q, k, v)
    torch.testing.assert_close(ex.result, want, rtol=2e-2, atol=2e-2)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
