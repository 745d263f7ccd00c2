"""GPU plans of training graphs, part 2 (issue 22: GPU training speed), checked without a GPU
through the PTX probe (see tests/test_train_gpu_plan.py for the mechanism).

1. BatchNorm's training forward takes its batch statistics in one reducing pass
   (dynamo_hook/ops_reduce.c bn_stats: sums of x - x0 and its square, x0 the channel's first
   element): the mean's and the variance's sums share a pass, one split launch and one
   combine (was: the mean, then a second reading pass for mean((x - mean)^2), four launches).
   Loads constant along the reduced var (per-channel statistics) no longer decide the
   reduction's orientation (sched/finalize.c count_contig), and ic_detach of a channels-last
   value stops the gradient at the cast the elementwise ops read (autograd.c).
2. A convolution's backward is one extern call for the input's and the weight's gradients
   (conv_bwd which = 2: ATen's convolution_backward with both outputs, one buffer).
Values are checked against eager on the CPU in each case.
"""
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from test_train_gpu_plan import _assemble, _launches, _probe


class ConvBNRelu(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.conv = nn.Conv2d(cin, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


def _kernels(err, listing):
    """the `listing`-th kernel listing's kernels: [(header, [pass/row lines])]"""
    starts = [j for j, ln in enumerate(err) if ln.startswith("=== torchc kernels")]
    body = err[starts[listing]:]
    ks = []
    for ln in body[1:]:
        if ln.startswith("=== torchc"):
            break
        if ln.startswith("kernel k"):
            ks.append((ln, []))
        elif ks and (ln.startswith("  pass") or ln.startswith("  row")):
            ks[-1][1].append(ln)
    return ks


def test_bn_forward_statistics_one_pass(monkeypatch, capfd, tmp_path):
    """conv -> BatchNorm (training) -> relu in bf16 autocast, channels-last (the CUDA layout):
    the forward's statistics are two means in one pass of one vec_outer kernel, launched as one
    split pass and one combine before the normalizing pass; the backward keeps its one reducing
    pass and one combine (every launch split over many blocks)"""
    _probe(monkeypatch, tmp_path)
    monkeypatch.setattr(torchc.config, "conv_layout", "nhwc")
    torch.manual_seed(0)
    me, mc = ConvBNRelu(8, 32), ConvBNRelu(8, 32)
    mc.load_state_dict(me.state_dict())
    x = torch.randn(8, 8, 40, 40)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ye = me(x)
    ye.float().square().sum().backward()
    capfd.readouterr()
    cm = torchc.compile(mc)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yc = cm(x)
    yc.float().square().sum().backward()
    err = capfd.readouterr().err.splitlines()
    probe = [ln for ln in err if "ptx probe" in ln]
    assert len(probe) == 2 and all(ln.endswith("ok") for ln in probe), probe
    # listings: forward (CPU), forward (PTX), backward (CPU), backward (PTX)
    fwd = _kernels(err, 1)
    red = [(h, ls) for h, ls in fwd if any(" reduce " in ln for ln in ls)]
    assert len(red) == 1, fwd
    h, ls = red[0]
    assert h.endswith("vec_outer"), h
    means = [ln for ln in ls if " reduce mean " in ln]
    assert len(means) == 2 and all(ln.startswith("  pass 0:") for ln in means), ls
    k = re.match(r"kernel k(\d+):", h).group(1)
    first_probe = min(j for j, ln in enumerate(err) if "ptx probe" in ln)
    launches = [m.group(1) for ln in err[:first_probe] if (m := re.match(r"^gpu tc\d+_k\d+([pcf]?)\d*v?: .*\(k%s\)$" % k, ln))]
    # one split launch and one combine make both sums, then the normalizing pass (was: the
    # mean's split launch and combine, the variance's, then the normalizing pass)
    assert launches == ["p", "c", "p", "f"], launches
    # the backward: one vec_outer reducing kernel, one combine
    bwd = _kernels(err, 3)
    vo = {re.match(r"kernel k(\d+):", h).group(1) for h, ls in bwd if h.endswith("vec_outer")}
    ls = [L for L in _launches(err) if L["k"] in vo]
    assert ls and sum(L["kind"] == "c" for L in ls) == 1, ls
    torch.testing.assert_close(yc, ye, rtol=2e-2, atol=2e-2)
    for pe, pc in zip(me.parameters(), mc.parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, rtol=5e-2, atol=5e-2)
    torch.testing.assert_close(mc.bn.running_mean, me.bn.running_mean, rtol=1e-2, atol=1e-3)
    torch.testing.assert_close(mc.bn.running_var, me.bn.running_var, rtol=1e-2, atol=1e-3)
    _assemble(tmp_path)


class BN(nn.Module):
    def __init__(self, c, dims):
        super().__init__()
        self.bn = (nn.BatchNorm1d if dims < 4 else nn.BatchNorm2d)(c)

    def forward(self, x):
        return self.bn(x) * 1.5


@pytest.mark.parametrize("case", ["offset", "constant", "tiny", "bn1d", "bn1d_seq", "channels_last", "f64"])
def test_bn_one_pass_statistics_values(case):
    """values, gradients and running statistics as eager's where the one-pass statistics could
    lose digits: a channel mean of 1e4 beside a deviation of 1e-1 (and an outlier as the
    shift), a constant channel, two elements a channel; BatchNorm1d on [N, C] and [N, C, L]"""
    torch.manual_seed(3)
    dt = torch.float64 if case == "f64" else torch.float32
    shape = {"bn1d": (6, 5), "bn1d_seq": (4, 5, 7), "tiny": (2, 5, 1, 1)}.get(case, (3, 5, 7, 9))
    x = torch.randn(*shape, dtype=dt)
    if case == "offset":
        x = x * 0.1 + torch.tensor([1e4, -3e3, 0.0, 7.0, 1e2], dtype=dt).reshape(1, 5, *([1] * (len(shape) - 2)))
        x[0, :, 0, 0] += 5.0  # the shift itself 50 deviations off the mean
    if case == "constant":
        x[:, 2] = 3.25
    if case == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    g = torch.randn(*shape, dtype=dt)
    me = BN(5, len(shape)).to(dt)
    mc = BN(5, len(shape)).to(dt)
    with torch.no_grad():
        me.bn.weight.uniform_(0.5, 1.5)
        me.bn.bias.uniform_(-0.5, 0.5)
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    tol = dict(rtol=1e-10, atol=1e-10) if dt == torch.float64 else dict(rtol=1e-4, atol=2e-4)
    mref = BN(5, len(shape)).double()  # float64 eager: what both are measured against
    mref.load_state_dict(me.state_dict())
    for step in range(2):
        outs = []
        for m in (me, cm, mref):
            xi = x.detach().clone().to(torch.float64 if m is mref else dt).requires_grad_()
            y = m(xi)
            y.backward(g.to(xi.dtype))
            outs.append((y, xi.grad))
        for a, b, r in zip(outs[1], outs[0], outs[2]):
            if case == "offset":  # x's own rounding (an ulp of 1e4 is 1e-3, 1% of the deviation)
                # bounds both: torchc's error against float64 as eager's, or less
                ea, eb = (a.double() - r).abs().max().item(), (b.double() - r).abs().max().item()
                assert ea <= 1.5 * eb + 1e-5, (ea, eb)
            else:
                torch.testing.assert_close(a, b, **tol)
        for pe, pc in zip(me.parameters(), mc.parameters()):
            torch.testing.assert_close(pc.grad, pe.grad, **tol)
        torch.testing.assert_close(mc.bn.running_mean, me.bn.running_mean, **tol)
        torch.testing.assert_close(mc.bn.running_var, me.bn.running_var, **tol)
    ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.backward_graph_count == 1, ex.break_reasons


def _bwd_conv_calls(err):
    """the conv_bwd extern kernels of the listings (only the backward's has them: with config
    backward_ahead its listing may come before the forward's, compiled beside it)"""
    assert any(ln.startswith("=== torchc kernels") for ln in err)
    return [ln for ln in err if ln.startswith("kernel k") and " extern conv_bwd(" in ln]


@pytest.mark.parametrize("case", ["2d", "2d_channels_last", "grouped_strided", "1d", "3d", "x_only", "w_only"])
def test_conv_backward_one_call(case, monkeypatch, capfd):
    """a conv's input and weight gradients come from one convolution_backward call (one
    conv_bwd kernel a conv, was two), or a single-gradient call where only one is needed;
    gradients as eager's (f32), the input's in its layout"""
    monkeypatch.setenv("TORCHC_DEBUG", "loops")
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torchc.reset()
    torch.manual_seed(4)
    nd = {"1d": 1, "3d": 3}.get(case, 2)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    groups, stride = (2, 2) if case == "grouped_strided" else (1, 1)
    x = torch.randn(3, 4, *([9] * nd))
    if case == "2d_channels_last":
        x = x.to(memory_format=torch.channels_last)
    w1 = torch.randn(6, 4 // groups, *([3] * nd))
    w2 = torch.randn(5, 6, *([1] * nd))
    b1 = torch.randn(6)
    need_x, need_w = case != "w_only", case != "x_only"

    def f(x, w1, w2, b1):
        h = torch.tanh(conv(x, w1, b1, stride=stride, padding=1, groups=groups))
        return conv(h, w2)

    def run(fn):
        xs = x.detach().clone().requires_grad_(need_x)
        ws = [t.detach().clone().requires_grad_(need_w) for t in (w1, w2, b1)]
        y = fn(xs, *ws)
        y.backward(torch.ones_like(y) * 0.5)
        return y, [t.grad for t in [xs] + ws]
    ye, ge = run(f)
    capfd.readouterr()
    yc, gc = run(torchc.compile(f))
    err = capfd.readouterr().err.splitlines()
    torch.testing.assert_close(yc, ye, rtol=1e-4, atol=1e-4)
    for a, b in zip(gc, ge):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and a.dtype == b.dtype
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    if need_x:
        assert gc[0].stride() == ge[0].stride()
    calls = _bwd_conv_calls(err)
    # two convs: each one call (the first conv's input gradient only when x requires grad)
    assert len(calls) == 2, calls


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@cuda
@pytest.mark.parametrize("cl", [True, False])
def test_cuda_conv_bn_training_values(cl):
    """conv -> BatchNorm (training) -> relu on the GPU under bf16 autocast, channels-last or
    not: outputs, gradients (one conv_bwd call a conv) and running statistics as eager's"""
    torch.manual_seed(8)
    fmt = torch.channels_last if cl else torch.contiguous_format
    me = ConvBNRelu(16, 64).cuda().to(memory_format=fmt)
    mc = ConvBNRelu(16, 64).cuda().to(memory_format=fmt)
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    for step in range(3):
        x = torch.randn(8, 16, 28, 28, device="cuda").to(memory_format=fmt)
        outs = []
        for m in (me, cm):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                y = m(x)
            (y.float().square().sum() / 1000).backward()
            outs.append(y)
        torch.testing.assert_close(outs[1].float(), outs[0].float(), rtol=2e-2, atol=2e-2)
        for pe, pc in zip(me.parameters(), mc.parameters()):
            torch.testing.assert_close(pc.grad, pe.grad, rtol=5e-2, atol=5e-2)
        torch.testing.assert_close(mc.bn.running_mean, me.bn.running_mean, rtol=1e-2, atol=1e-3)
        torch.testing.assert_close(mc.bn.running_var, me.bn.running_var, rtol=1e-2, atol=1e-3)
        me.zero_grad()
        mc.zero_grad()
    ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.backward_graph_count == 1, ex.break_reasons
