"""Attention extern on CUDA (csrc/aten_bridge.cpp sdpa_flash_ok): FlashAttention called
directly for unmasked 16-bit attention with a head dim a multiple of 8 up to 256 and at most
2^29 multiply-adds (default; TORCHC_SDPA=flash: any size), the dispatcher's choice otherwise
(TORCHC_SDPA=aten: always); a mask, f32, another head dim or causal attention with Lq != Lk
(FlashAttention's causal mask is aligned bottom-right there, eager's top-left) keeps the
dispatcher's choice.
Differential against eager; skips without a CUDA device."""
import pytest
import torch
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("mode", ["", "flash", "aten"])
@pytest.mark.parametrize("case", ["causal", "plain", "mask", "f32", "hd80", "hd24_kv_len", "scale", "big",
                                  "causal_lq_gt_lk", "causal_lq_lt_lk"])
def test_sdpa(mode, case, monkeypatch):
    monkeypatch.setenv("TORCHC_SDPA", mode)
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(0)
    dt = torch.float32 if case == "f32" else torch.bfloat16
    hd = {"hd80": 80, "hd24_kv_len": 24}.get(case, 64)
    lk = {"hd24_kv_len": 77, "big": 512, "causal_lq_gt_lk": 48, "causal_lq_lt_lk": 200}.get(case, 128)
    lq = {"big": 512, "causal_lq_gt_lk": 80}.get(case, 128)  # big: 2^31 multiply-adds, above the default's limit  # big: 2^31 multiply-adds, above the default's limit
    q = torch.randn(16, 16, lq, hd, device="cuda", dtype=dt)
    k = torch.randn(16, 16, lk, hd, device="cuda", dtype=dt)
    v = torch.randn(16, 16, lk, hd, device="cuda", dtype=dt)
    mask = torch.randn(16, 1, lq, lk, device="cuda", dtype=dt) if case == "mask" else None

    def f(q, k, v):
        if case == "scale":
            return F.scaled_dot_product_attention(q, k, v, scale=0.3) * 2
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=case.startswith("causal")) * 2

    torchc.reset()
    got, want = torchc.compile(f)(q, k, v), f(q, k, v)
    tol = dict(rtol=1e-4, atol=1e-4) if dt == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(got, want, **tol)
