"""The CUDA sdpa layout probe (csrc/aten_bridge.cpp tc_sdpa_out_strides) runs the attention at
trace time to learn eager's output strides: once per key (metas, causal, scale, device, the
backend settings), not once per capture. The counters are _C.stats()'s sdpa_probe_runs/hits."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from torchc import _C

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _runs():
    s = _C.stats()
    return s["sdpa_probe_runs"], s["sdpa_probe_hits"]


def _qkv(shape=(2, 4, 8, 16), dtype=torch.float32, device="cpu"):
    return [torch.randn(shape, dtype=dtype, device=device) for _ in range(3)]


@pytest.mark.needs_no_compiler
def test_probe_runs_once_per_key():
    """runs everywhere: without a device the probe fails (and the failure is kept)"""
    q, k, v = _qkv((3, 5, 7, 16))
    r0, h0 = _runs()
    a = _C.sdpa_layout_probe(q, k, v, None, False, 0.25, 0)
    assert _runs() == (r0 + 1, h0)
    assert _C.sdpa_layout_probe(q, k, v, None, False, 0.25, 0) == a
    assert _runs() == (r0 + 1, h0 + 1)  # the second ask: no run
    # each part of the key: strides, dtype, causal, scale, mask, device
    others = [
        (q.transpose(1, 2).contiguous().transpose(1, 2), k, v, None, False, 0.25, 0),
        (q.double(), k.double(), v.double(), None, False, 0.25, 0),
        (q, k, v, None, True, 0.25, 0),
        (q, k, v, None, False, 0.5, 0),
        (q, k, v, torch.zeros(7, 7), False, 0.25, 0),
        (q, k, v, None, False, 0.25, 1),
    ]
    for i, o in enumerate(others):
        _C.sdpa_layout_probe(*o)
        assert _runs()[0] == r0 + 2 + i, i
        _C.sdpa_layout_probe(*o)
        assert _runs()[0] == r0 + 2 + i, i


@pytest.mark.needs_no_compiler
def test_backend_settings_are_in_the_key():
    q, k, v = _qkv((2, 3, 9, 8))
    r0, _ = _runs()
    _C.sdpa_layout_probe(q, k, v, None, False, 0.125, 0)
    assert _runs()[0] == r0 + 1
    was = torch.backends.cuda.flash_sdp_enabled()
    torch.backends.cuda.enable_flash_sdp(not was)
    try:
        _C.sdpa_layout_probe(q, k, v, None, False, 0.125, 0)  # another backend may be picked
        assert _runs()[0] == r0 + 2
    finally:
        torch.backends.cuda.enable_flash_sdp(was)
    _C.sdpa_layout_probe(q, k, v, None, False, 0.125, 0)
    assert _runs()[0] == r0 + 2


@pytest.mark.needs_no_compiler
def test_bad_arguments_raise():
    q, k, v = _qkv()
    with pytest.raises(TypeError):
        _C.sdpa_layout_probe(q, k, "v", None, False, 1.0, 0)
    with pytest.raises(TypeError):
        _C.sdpa_layout_probe(q, k, v)


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_second_capture_does_not_probe(dtype):
    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2

    def g(q, k, v):  # another function, the same attention: the kept answer
        return F.scaled_dot_product_attention(q, k, v, is_causal=True) + 1

    q, k, v = _qkv((2, 4, 64, 32), dtype, "cuda")
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else {}
    r0, h0 = _runs()
    ex = torchc.explain(torchc.compile(f))(q, k, v)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    assert ex.result.stride() == f(q, k, v).stride()
    torch.testing.assert_close(ex.result, f(q, k, v), **tol)
    r1, h1 = _runs()
    assert r1 - r0 <= 1 and (r1 - r0) + (h1 - h0) >= 1  # asked at least once, ran at most once
    ex = torchc.explain(torchc.compile(g))(q, k, v)
    assert ex.graph_count == 1
    assert ex.result.stride() == g(q, k, v).stride()
    torch.testing.assert_close(ex.result, g(q, k, v), **tol)
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(q, k, v), f(q, k, v), **tol)  # a recapture
    r2, h2 = _runs()
    assert r2 == r1 and h2 >= h1 + 2
