"""Wrong answers of the tiny transformers sweep (benchmarks/sweep_tiny.py), told apart from
what is not torchc's:

- training grads "wrong" by the float32 RMSE rule (mobilenet_v2, levit, mobilevit, vits): a
  float64 run under torchc matches eager's float64 to ~1e-13, so no backward rule or capture is
  wrong; their float32 errors are rounding amplified by kinks (ReLU6, leaky_relu, hardswish)
  and tiny-batch BatchNorm (eager itself moves by more with 4 threads or channels_last). The
  differential check of that class: the same non-smooth blocks in float64, where rounding
  cannot hide a wrong formula, compiled grads against eager's at 1e-10.
- PaliGemma "wrong" (inference and training): transformers builds a causal mask while tracing
  (its is_tracing() branch) where eager skips the mask and a bidirectional text model's
  is_causal=False makes eager's SDPA non-causal. torch.compile(backend="eager") gives the same
  values as torchc; the check here: torchc answers such a branch as Dynamo does.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import captured_whole


class Block2d(nn.Module):
    """MobileNetV2/LeViT-like: 1x1 conv, BatchNorm (train, 2 images of 3x3), ReLU6, depthwise
    3x3, BatchNorm, hardswish, 1x1 conv, residual"""

    def __init__(self, c=4, e=12):
        super().__init__()
        self.a = nn.Conv2d(c, e, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(e)
        self.dw = nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False)
        self.bn2 = nn.BatchNorm2d(e)
        self.b = nn.Conv2d(e, c, 1)

    def forward(self, x):
        h = F.relu6(self.bn1(self.a(x)))
        h = F.hardswish(self.bn2(self.dw(h)))
        return x + self.b(h)


class Block1d(nn.Module):
    """HiFi-GAN-like: leaky_relu, dilated conv1d, leaky_relu, conv1d, residual, twice; then a
    sum of two such branches in place and an attention over the time steps"""

    def __init__(self, c=6):
        super().__init__()
        self.c1 = nn.ModuleList([nn.Conv1d(c, c, 5, dilation=d, padding=2 * d) for d in (1, 3)])
        self.c2 = nn.ModuleList([nn.Conv1d(c, c, 5, padding=2) for _ in (1, 3)])
        self.qkv = nn.Linear(c, 3 * c)

    def forward(self, x):
        outs = []
        for c1, c2 in zip(self.c1, self.c2):
            h = c2(F.leaky_relu(c1(F.leaky_relu(x, 0.1)), 0.1)) + x
            outs.append(h)
        r = outs[0].clone()
        r += outs[1]
        q, k, v = self.qkv(r.transpose(1, 2)).unsqueeze(1).chunk(3, dim=-1)
        return F.scaled_dot_product_attention(q, k, v).squeeze(1) + F.silu(r.transpose(1, 2))


def _grads(mod, f, x, w):
    for p in mod.parameters():
        p.grad = None
    (f(x) * w).sum().backward()
    return [p.grad.clone() for p in mod.parameters()]


@pytest.mark.parametrize("make,shape", [(Block2d, (2, 4, 3, 3)), (Block1d, (2, 6, 11))], ids=["2d", "1d"])
def test_nonsmooth_blocks_train_grads_f64(make, shape):
    torch.manual_seed(0)
    m = make().double().train()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    w = torch.randn(m(x).shape, generator=g, dtype=torch.float64)
    ref = _grads(m, m, x, w)
    torchc.reset()
    ex = torchc.explain(m)(x)
    assert captured_whole(ex) and ex.backward_graph_count == 1, ex.break_reasons
    (ex.result * w).sum().backward()
    got = _grads(m, torchc.compile(m), x, w)
    scale = max(r.abs().max().item() for r in ref)
    for r, c in zip(ref, got):
        torch.testing.assert_close(c, r, rtol=1e-10, atol=1e-12 * scale)


class MaskedAttn(nn.Module):
    """transformers' pattern: eager skips the mask (None) and SDPA then follows the module's
    is_causal; while compiling a causal mask is built instead"""

    def __init__(self, is_causal):
        super().__init__()
        self.is_causal = is_causal

    def forward(self, q, k, v):
        mask = None
        if torch.compiler.is_compiling():
            n = q.shape[-2]
            mask = torch.arange(n)[None, :] <= torch.arange(n)[:, None]
        causal = mask is None and self.is_causal and q.shape[-2] > 1
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


@pytest.mark.parametrize("is_causal", [False, True])
def test_is_compiling_branch_answers_as_dynamo(is_causal):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 8, generator=g) for _ in range(3))
    m = MaskedAttn(is_causal)
    torchc.reset()
    ex = torchc.explain(m)(q, k, v)
    assert captured_whole(ex), ex.break_reasons
    torch._dynamo.reset()
    try:
        dyn = torch.compile(m, backend="eager")(q, k, v)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(ex.result, dyn)
    eager_same = torch.allclose(m(q, k, v), dyn, atol=1e-5)
    assert eager_same == is_causal  # bidirectional in eager, causal when compiled: the library's
