"""Split columns on the device (gpu_plan.c gg_choose_split, gpu_rows.c emit_split /
emit_area_combine): reductions keeping few columns that are contiguous in memory (x.sum(0) of
few columns, BatchNorm's statistics and backward sums in channels-last) run their reduced
extent over many blocks, combine each pass's partials once, and run the later passes (the
normalizing stores) over many blocks again. Differential tests against eager: BatchNorm
training forward and backward in channels-last f32 and bf16 (autocast, with conv and maxpool
as in ResNet's stem), the running statistics, sum/mean/amax/argmax/var over dim 0 of few
columns, sizes 0, 1 and odd. The split is asserted to run (torchc._C.stats()'s final launches
of split kernels). Skips without a CUDA device; the plan itself is tested on the CPU in
test_gpured_plan.py."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _finals():
    return torchc._C.stats()["split_final_launches"]


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torchc.reset()
    yield
    torchc.reset()


class Stem(nn.Module):
    """maxpool only in f32: in 16-bit, values that differ by an ulp between eager and compiled
    code move maxpool's gradient to another element of a window (ties are common)"""

    def __init__(self, c=64, conv=True, pool=True):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 7, 2, 3, bias=False) if conv else None
        self.bn = nn.BatchNorm2d(c)
        self.bn2 = nn.BatchNorm2d(c)
        self.pool = pool

    def forward(self, x):
        if self.conv is not None:
            x = self.conv(x)
        x = F.relu(self.bn(x))
        if self.pool:
            x = F.max_pool2d(x, 3, 2, 1)
        return F.relu(self.bn2(x) + x)


def _train_step(m, x, amp):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        y = m(x)
    (y.float() * torch.linspace(-1, 1, y.numel(), device=y.device).view_as(y)).sum().backward()
    return y


def _err(a, b, mean=False):
    d = (a.double() - b.double()).abs()
    return d.mean().item() if mean else d.max().item()


def _compare(shape, amp, conv, dtype=torch.float32, fmt=torch.channels_last):
    """one training step eager and compiled (outputs, x.grad, parameter grads, running
    statistics). f32: against each other. 16-bit (bf16 parameters, or autocast): both against
    an f64 model, torchc's error at most 4x eager's + 1% of the values (mean errors for the
    elementwise tensors, where relu's mask flips at an ulp around 0; max errors for the grads
    of the parameters, sums over N, H, W; the decomposed backward rounds its intermediates to
    bf16 op by op where eager's fused kernel keeps f32: the CPU backend's error is ~3x eager's
    too). Returns the split kernels' final launches it ran."""
    torch.manual_seed(0)
    c = 64 if conv else shape[1]
    low = amp or dtype != torch.float32
    m = Stem(c, conv, pool=not low).cuda().to(memory_format=fmt)
    cm = Stem(c, conv, pool=not low).cuda().to(memory_format=fmt)
    cm.load_state_dict(m.state_dict())
    ref = Stem(c, conv, pool=not low).cuda().double().to(memory_format=fmt)
    ref.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in m.state_dict().items()})
    if dtype != torch.float32:
        m, cm = m.to(dtype), cm.to(dtype)
    x = torch.randn(shape, device="cuda", dtype=dtype).to(memory_format=fmt)
    xe, xc, xr = x.clone().requires_grad_(), x.clone().requires_grad_(), x.double().requires_grad_()
    f = torchc.compile(cm)
    n0 = _finals()
    want = _train_step(m, xe, amp)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        ex = torchc.explain(f)(xc)
    got = ex.result
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    (got.float() * torch.linspace(-1, 1, got.numel(), device=got.device).view_as(got)).sum().backward()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert xc.grad.dtype == xe.grad.dtype
    pairs = [("y", got, want, None, True), ("x.grad", xc.grad, xe.grad, None, True)]
    yr = _train_step(ref, xr, False)
    if low:
        pairs = [("y", got, want, yr, True), ("x.grad", xc.grad, xe.grad, xr.grad, True)]
    for (n, p), q, r in zip(m.named_parameters(), cm.parameters(), ref.parameters()):
        assert q.grad is not None and q.grad.dtype == p.grad.dtype, n
        # parameter grads are sums over N, H, W (f32 conv weight grads through TF32 cuDNN in
        # eager and in torchc's extern alike): both against the f64 model
        pairs.append((n + ".grad", q.grad, p.grad, r.grad, False))
    for (n, b), q, r in zip(m.named_buffers(), cm.buffers(), ref.buffers()):
        pairs.append((n, q, b, r if low and b.is_floating_point() else None, False))
    for n, g, e, r, mean in pairs:
        if r is None:
            torch.testing.assert_close(g.float(), e.float(), rtol=1e-3, atol=1e-3, msg=n)
        else:
            eg, ee = _err(g, r, mean), _err(e, r, mean)
            assert eg <= 4 * ee + 1e-2 * r.abs().max().item(), (n, eg, ee)
    return _finals() - n0


@cuda
@pytest.mark.parametrize("amp", [False, True])
def test_bn_stem_train_channels_last(amp):
    """ResNet's stem at batch 8: conv, BN, relu, maxpool, BN (outer [64], inner [8*112*112]):
    split in the forward statistics and the backward sums"""
    assert _compare((8, 3, 224, 224), amp, conv=True) > 0


@cuda
def test_bn_stem_train_contiguous():
    """the same in NCHW: row kernels of 64 rows, split with the running statistics' stores
    made by the final launch"""
    assert _compare((8, 3, 224, 224), False, conv=True, fmt=torch.contiguous_format) > 0


@cuda
@pytest.mark.parametrize("shape", [(1, 16, 130, 130), (3, 24, 67, 71), (5, 17, 61, 33)])
def test_bn_train_odd_shapes(shape):
    assert _compare(shape, False, conv=False) > 0


@cuda
def test_bn_train_bf16_params():
    assert _compare((4, 32, 64, 64), False, conv=False, dtype=torch.bfloat16) > 0


@cuda
@pytest.mark.parametrize("shape", [(0, 40), (1, 40), (100003, 24), (65537, 64), (333333, 17)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dim0_reductions_few_columns(shape, dtype):
    torch.manual_seed(1)
    x = torch.randn(shape, device="cuda").to(dtype)
    fns = {"sum": lambda t: t.sum(0), "mean": lambda t: t.float().mean(0),
           "amax": lambda t: t.amax(0) if t.shape[0] else t.sum(0),
           "argmax": lambda t: t.argmax(0) if t.shape[0] else t.sum(0),
           "var": lambda t: t.float().var(0) if t.shape[0] > 1 else t.sum(0),
           "norm": lambda t: (t.float() / t.float().abs().sum(0).clamp_min(1.0))}
    n0 = _finals()
    for name, fn in fns.items():
        want = fn(x)
        got = torchc.compile(fn)(x)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 and name == "sum" else dict(rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(got, want, **tol, equal_nan=True, msg=name)
    if shape[0] >= 4096:
        assert _finals() > n0


@cuda
def test_argmax_ties_across_parts():
    x = torch.zeros(200000, 32, device="cuda")
    x[150000, 3] = 1.0
    x[7, 3] = 1.0  # a tie: the first index wins
    x[199999, 5] = float("nan")
    x[123456, 9] = 2.0
    f = torchc.compile(lambda t: (t.argmax(0), t.amax(0), t.argmin(0)))
    for g, w in zip(f(x), (x.argmax(0), x.amax(0), x.argmin(0))):
        torch.testing.assert_close(g, w, equal_nan=True)


@cuda
def test_split_columns_in_cuda_graphs():
    x = torch.randn(300000, 48, device="cuda")
    f = torchc.compile(lambda t: (t - t.mean(0)) * 2, mode="reduce-overhead")
    for _ in range(3):
        got = f(x)
    torch.testing.assert_close(got, (x - x.mean(0)) * 2, rtol=1e-4, atol=1e-4)
    x.copy_(torch.randn(300000, 48, device="cuda"))
    torch.testing.assert_close(f(x), (x - x.mean(0)) * 2, rtol=1e-4, atol=1e-4)
