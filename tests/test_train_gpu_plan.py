"""GPU plans of training graphs, checked without a GPU (issue 22: GPU training speed).

Backward graphs compiled on the CPU also go through the PTX path when torchc.config.ptx_probe
is set (csrc/train.c calls inductor_c/backends.c ic_ptx_probe after the backward's first
compile), and TORCHC_DEBUG=loops prints each launch ("gpu NAME: grid G block B vec V (kK)").

1. Sums over broadcast dims take out the factors constant along them (graph/autograd.c
   sum_lin): BatchNorm's backward used to sum (dvar * (x - mean)) for the mean's gradient after
   the variance's sum was done, a second reducing pass over x and dy that also stored an f32
   product; now every sum reads the inputs in one pass, then one pass stores dx.
2. A channels-last output's gradient is read channels-last (autograd.c grad_layout,
   csrc/train.c grad_buffer): the BatchNorm backward's sums over N, H, W are split columns,
   not rows across channels-last x with dy made contiguous first.
3. A GEMM operand that is a transposed reshape of a graph input is read in place
   (sched/extern_views.c): the LM head's weight gradient took a copy of the logits' gradient.
Values are checked against eager on the CPU in each case.
"""
import os
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

LAUNCH = re.compile(r"^gpu (tc(\d+)_k\d+([pcf]?)(\d*)v?): grid (\d+) block (\d+) vec (\d+) \(k(\d+)\)$")


def _probe(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    monkeypatch.setenv("TORCHC_DEBUG", "loops")
    monkeypatch.setenv("TORCHC_CACHE", "0")
    # the listings in order, the backward's last: its compile not run beside the forward's
    monkeypatch.setenv("TORCHC_BACKWARD_AHEAD", "0")
    torchc.reset()


def _assemble(tmp_path):
    """every probed module assembled by ptxas -arch=sm_90 where ptxas is found"""
    files = sorted(tmp_path.glob("*.ptx"))
    assert files
    for c in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            for p in files:
                r = subprocess.run([c, "-arch=sm_90", str(p), "-o", os.devnull], capture_output=True, text=True)
                assert r.returncode == 0, r.stderr[:2000]
            return


def _launches(err):
    """launches of the last PTX-only compile (the backward's, compiled after the forward's)"""
    ls = [dict(mod=int(m.group(2)), kind=m.group(3), pos=m.group(4), grid=int(m.group(5)), k=m.group(8))
          for ln in err if (m := LAUNCH.match(ln))]
    assert ls, "\n".join(err[-60:])
    last = max(L["mod"] for L in ls)
    return [L for L in ls if L["mod"] == last]


class BNRelu(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(x))


def _bn_step(m, x, g):
    x = x.detach().clone().requires_grad_()
    y = m(x)
    y.backward(g)
    return (y, x.grad, m.bn.weight.grad.clone(), m.bn.bias.grad.clone(), m.bn.running_mean.clone(),
            m.bn.running_var.clone())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_bn_backward_one_reducing_pass(dtype, monkeypatch, capfd, tmp_path):
    """BatchNorm2d in training mode, channels-last inputs (gpu_red_bench's layer): the
    backward reads its gradient channels-last and works on NHWC views, its sums in one pass
    each, along C over many blocks; values as eager's"""
    _probe(monkeypatch, tmp_path)
    torch.manual_seed(0)
    x = torch.randn(16, 64, 24, 24).to(dtype=dtype, memory_format=torch.channels_last)
    g = torch.randn_like(x)
    me = BNRelu(64).to(memory_format=torch.channels_last)
    mc = BNRelu(64).to(memory_format=torch.channels_last)
    mc.load_state_dict(me.state_dict())
    capfd.readouterr()
    want = _bn_step(me, x, g)
    cm = torchc.compile(mc)
    got = _bn_step(cm, x, g)
    err = capfd.readouterr().err.splitlines()
    probe = [ln for ln in err if "ptx probe" in ln]
    assert len(probe) == 2 and all(ln.endswith("ok") for ln in probe), probe  # forward and backward
    ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.backward_graph_count == 1, ex.break_reasons
    bwd = ex.backward_graphs[0]
    # the gradient of the channels-last output is read channels-last
    assert re.search(r"%0 = input 0 : \w+\[16,64,24,24\] strides=\[36864,1,1536,64\]", bwd), bwd[:400]
    # the backward (the last listing): its inputs are read as NHWC views (autograd.c
    # cl_input), so every sum over N, H, W reads along C (vec_outer, split over many blocks),
    # each in one pass (was: one row kernel across channels-last x with dy NCHW, three passes)
    i = max(j for j, ln in enumerate(err) if ln.startswith("=== torchc kernels"))
    body = err[i:]
    blocks, red = [], []
    for ln in body:
        if ln.startswith("kernel k"):
            blocks.append([ln])
        elif blocks and ln.startswith("  pass"):
            blocks[-1].append(ln)
    red = [b[0] for b in blocks if any("reduce" in ln for ln in b[1:])]
    assert red and all(ln.endswith("vec_outer") for ln in red), red
    passes = {ln.split(":")[0].strip() for ln in body if ln.startswith("  pass ")}
    assert passes == {"pass 0"}, passes
    vo = {re.match(r"kernel k(\d+):", ln).group(1) for ln in red}
    ls = [L for L in _launches(err) if L["k"] in vo]
    assert ls and all(L["grid"] >= 132 for L in ls if L["kind"] == "p"), ls
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        torch.testing.assert_close(a, b, **tol)
    assert got[1].is_contiguous(memory_format=torch.channels_last)
    _assemble(tmp_path)


class ConvBN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x))).mean((2, 3))


def test_conv_bn_backward_split_columns_one_pass(monkeypatch, capfd, tmp_path):
    """conv -> BatchNorm -> relu as captured for a 16-bit CUDA conv (channels-last, NHWC values
    throughout, graph.c cl_rewrite): the BatchNorm backward is one split-column kernel whose
    sums take one pass (one combining launch; was two, with an f32 product stored and read
    back), then dx's store pass; values as eager's"""
    _probe(monkeypatch, tmp_path)
    monkeypatch.setattr(torchc.config, "conv_layout", "nhwc")
    torch.manual_seed(5)
    me, mc = ConvBN(32), ConvBN(32)
    mc.load_state_dict(me.state_dict())
    x = torch.randn(8, 3, 40, 40)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ye = me(x)
    ye.float().sum().backward()
    capfd.readouterr()
    cm = torchc.compile(mc)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yc = cm(x)
    yc.float().sum().backward()
    err = capfd.readouterr().err.splitlines()
    probe = [ln for ln in err if "ptx probe" in ln]
    assert len(probe) == 2 and all(ln.endswith("ok") for ln in probe), probe
    vo = {m.group(1) for ln in err if (m := re.match(r"^kernel k(\d+): .* vec_outer$", ln))}
    ls = [L for L in _launches(err) if L["k"] in vo]
    assert ls, err[-80:]
    assert sum(L["kind"] == "c" for L in ls) == 1, ls
    assert len({L["pos"] for L in ls if L["kind"] == "p"}) == 2, ls
    torch.testing.assert_close(yc, ye, rtol=2e-2, atol=2e-2)
    for pe, pc in zip(me.parameters(), mc.parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, rtol=5e-2, atol=5e-2)
    _assemble(tmp_path)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last_grad_contiguous", "channels_last"])
def test_bn_training_values(layout):
    """gradients and running statistics as eager's (f32, odd sizes), the gradient coming in
    channels-last or not (a contiguous gradient of a channels-last output is copied into the
    layout the backward reads)"""
    torch.manual_seed(1)
    cl = layout != "contiguous"
    fmt = torch.channels_last if cl else torch.contiguous_format
    me = BNRelu(5).to(memory_format=fmt)
    mc = BNRelu(5).to(memory_format=fmt)
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    for step in range(3):
        x = torch.randn(3, 5, 7, 9).to(memory_format=fmt)
        g = torch.randn(3, 5, 7, 9)
        if layout == "channels_last":
            g = g.to(memory_format=torch.channels_last)
        want = _bn_step(me, x, g)
        got = _bn_step(cm, x, g)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        me.zero_grad()
        mc.zero_grad()
    ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.backward_graph_count == 1


@pytest.mark.parametrize("shape", [(4, 33, 48), (1, 1, 17), (2, 5, 1)])
def test_layernorm_backward_values(shape):
    """LayerNorm's backward (its mean's gradient: the same factoring) as eager's, f64 and f32"""
    # (a normalized size of 1: x - mean is 0 and rstd 1/sqrt(eps); dx rounds to ~6e-5 in f32
    # as it did before the factoring)
    for dt, tol in ((torch.float64, 1e-10), (torch.float32, 1e-4)):
        torch.manual_seed(2)
        ln = nn.LayerNorm(shape[-1]).to(dt)
        with torch.no_grad():
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
        x = torch.randn(*shape, dtype=dt)
        g = torch.randn(*shape, dtype=dt)
        f = lambda m, t: (m(t) * 1.5).tanh()

        def run(fn):
            ln.zero_grad()
            t = x.clone().requires_grad_()
            fn(t).backward(g)
            return t.grad, ln.weight.grad.clone(), ln.bias.grad.clone()
        want = run(lambda t: f(ln, t))
        got = run(torchc.compile(lambda t: f(ln, t)))
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_sum_factoring_keeps_16bit_products():
    """a 16-bit product summed over broadcast dims is not factored (eager rounds each product):
    bf16 x * w with w broadcast, its gradient summed over the batch, as eager's"""
    torch.manual_seed(3)
    x = torch.randn(64, 48, dtype=torch.bfloat16)
    s = torch.randn(64, 1, dtype=torch.bfloat16)
    w = torch.randn(48, dtype=torch.bfloat16, requires_grad=True)
    f = lambda w: ((x * s) * w).float().square().sum()
    f(w).backward()
    want = w.grad.clone()
    w.grad = None
    torchc.compile(f)(w).backward()
    torch.testing.assert_close(w.grad, want, rtol=0, atol=0)


def test_lm_head_grad_reads_logits_grad_in_place(monkeypatch, capfd, tmp_path):
    """the weight gradient of F.linear(x, W) with x [B, L, D]: grad_logits.reshape(-1, V).t() @ x
    reads the gradient input in place (no transposed copy of B*L*V elements)"""
    _probe(monkeypatch, tmp_path)
    torch.manual_seed(4)
    x = torch.randn(4, 16, 32)
    w = torch.randn(96, 32, requires_grad=True)
    g = torch.randn(4, 16, 96)
    f = lambda w: F.linear(x, w)
    f(w).backward(g)
    want = w.grad.clone()
    w.grad = None
    capfd.readouterr()
    cf = torchc.compile(f)
    cf(w).backward(g)
    err = capfd.readouterr().err.splitlines()
    torch.testing.assert_close(w.grad, want, rtol=1e-5, atol=1e-5)
    # the backward's kernels (its listing is the last): externs only, nothing copies [96, 64]
    i = max(j for j, ln in enumerate(err) if ln.startswith("=== torchc kernels"))
    ks = [ln for ln in err[i:] if ln.startswith("kernel k")]
    assert ks and all(" extern " in ln for ln in ks), ks
    _assemble(tmp_path)


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@cuda
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cuda_sdpa_16bit_grads(causal, dtype):
    """16-bit attention's gradients (csrc/aten_bridge.cpp sdpa_bwd: FlashAttention's backward
    where the forward ran FlashAttention) as eager's"""
    torch.manual_seed(6)
    q, k, v = (torch.randn(4, 12, 128, 64, device="cuda", dtype=dtype, requires_grad=True) for _ in range(3))
    g = torch.randn(4, 12, 128, 64, device="cuda", dtype=dtype)
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal) * 2

    def grads(fn):
        for t in (q, k, v):
            t.grad = None
        fn(q, k, v).backward(g)
        return [t.grad.clone() for t in (q, k, v)]
    want = grads(f)
    cf = torchc.compile(f)
    got = grads(cf)
    got2 = grads(cf)
    for a, b, c in zip(got, want, got2):
        assert a.dtype == b.dtype and a.stride() == b.stride()
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(c, a, rtol=2e-2, atol=2e-2)
    ex = torchc.explain(cf)(q, k, v)
    assert ex.graph_count == 1 and ex.backward_graph_count == 1


@cuda
def test_cuda_bn_channels_last_grad_layouts():
    """BatchNorm in training mode on the GPU, bf16 channels-last, the gradient channels-last and
    contiguous: values as eager's"""
    torch.manual_seed(7)
    me = BNRelu(64).cuda().to(memory_format=torch.channels_last)
    mc = BNRelu(64).cuda().to(memory_format=torch.channels_last)
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    x = torch.randn(8, 64, 28, 28, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    for g in (torch.randn_like(x), torch.randn(8, 64, 28, 28, device="cuda", dtype=torch.bfloat16)):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            want = _bn_step(me, x, g)
            got = _bn_step(cm, x, g)
        for a, b in zip(got, want):
            torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2)
        me.zero_grad()
        mc.zero_grad()
