"""AMP inside graphs (issue 22 deliverable 5; dynamo_hook/autocast.c).

Under an active torch.autocast (the state is a guard of every capture), ops autocast
changes are captured with eager's casts: the matmul/conv/attention family casts its floating
arguments to the autocast dtype, the CPU's fp32 losses cast to float32, and the CPU ops only
CUDA's lists hold run in their inputs' dtype. Forward outputs and gradients are compared with
eager autocast (dtypes exactly, values to bf16 tolerance), with one forward and one backward
graph and no break (a silent fallback or a break at each linear fails the test).
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc

BF16 = dict(rtol=2e-2, atol=2e-2)
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


class Block(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.conv = nn.Conv1d(d, d, 3, padding=1)

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.ln(x))))
        h = h + self.conv(x.transpose(1, 2)).transpose(1, 2)
        a = torch.softmax(h @ h.transpose(1, 2) / 4.0, -1)
        return (a @ h).sum(-1).exp().log() + x.mean(-1)


def _run(device, dtype, fn_eager, fn_comp, args, graphs=1):
    with torch.autocast(device, dtype=dtype):
        ex = torchc.explain(fn_comp)(*args[1])
        want = fn_eager(*args[0])
    got = ex.result
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == graphs, str(ex)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got.float(), want.float(), **BF16)
    g = torch.randn(want.shape, device=device, dtype=want.dtype)
    want.backward(g)
    got.backward(g)
    return ex


def _check_grads(a, b):
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        assert q.grad is not None and q.grad.dtype == p.grad.dtype == p.dtype, n
        torch.testing.assert_close(q.grad, p.grad, **BF16)


@pytest.mark.parametrize("device,dtype", [("cpu", torch.bfloat16),
                                          pytest.param("cuda", torch.bfloat16, marks=cuda),
                                          pytest.param("cuda", torch.float16, marks=cuda)])
def test_autocast_block_one_graph(device, dtype):
    torch.manual_seed(0)
    m = Block().to(device)
    mc = copy.deepcopy(m)
    x = torch.randn(2, 5, 16, device=device)
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    ex = _run(device, dtype, m, torchc.compile(mc), ((xe,), (xc,)))
    assert f"{'cpu' if device == 'cpu' else 'cuda'}=" in " ".join(ex.guards)
    _check_grads(m, mc)
    assert xc.grad.dtype == xe.grad.dtype == torch.float32
    torch.testing.assert_close(xc.grad, xe.grad, **BF16)


def test_autocast_mlp_loss_on_cpu():
    """bf16 logits from the autocast linears; log_softmax, pow and sum run in their inputs'
    dtype under CPU autocast (only CUDA's lists hold them), the .float() loss in float32."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 5))
    mc = copy.deepcopy(m)
    x, t = torch.randn(8, 12), F.one_hot(torch.randint(0, 5, (8,)), 5).float()

    def step(model, x, t):
        out = model(x)
        return -(F.log_softmax(out, -1) * t).sum(-1).mean() + (out.float() - t).pow(2).mean()

    ex = _run("cpu", torch.bfloat16, lambda x, t: step(m, x, t), lambda x, t: step(mc, x, t), ((x, t), (x, t)))
    assert ex.result.dtype == torch.float32
    _check_grads(m, mc)


def test_autocast_listed_op_without_rule_still_breaks():
    """An op autocast may change that torchc has no policy for (lerp: a promote op of CUDA's
    list) is left to eager with the reason, never run in the wrong dtype."""
    def f(x, w):
        y = F.linear(x, w)
        return torch.lerp(y, y * 2, 0.3)

    x, w = torch.randn(3, 4), torch.randn(5, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ex = torchc.explain(f)(x, w)
        want = f(x, w)
    assert ex.result.dtype == want.dtype
    assert any("lerp casts under it" in r for r in ex.break_reasons), ex.break_reasons


def test_autocast_off_and_on_entries():
    m = nn.Linear(6, 3)
    cm = torchc.compile(m)
    x = torch.randn(2, 6)
    assert cm(x).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ex = torchc.explain(cm)(x)
    assert ex.result.dtype == torch.bfloat16 and ex.graph_count == 1 and ex.graph_break_count == 0
    assert cm(x).dtype == torch.float32


def test_autocast_grad_scaler_training_loop_cpu():
    """30 AMP steps (bf16 autocast, GradScaler disabled on CPU as in eager, SGD compiled too):
    losses and parameters follow eager's."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 3))
    mc = copy.deepcopy(m)
    oe = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    oc = torch.optim.SGD(mc.parameters(), lr=0.05, momentum=0.9)
    cm = torchc.compile(mc)
    cstep = torchc.compile(oc.step)
    g = torch.Generator().manual_seed(3)
    for i in range(30):
        x, y = torch.randn(16, 10, generator=g), torch.randn(16, 3, generator=g)
        for model, opt, step in ((m, oe, oe.step), (cm, oc, cstep)):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
            loss = (out.float() - y).pow(2).mean()
            loss.backward()
            step()
        for a, b in zip(m.parameters(), mc.parameters()):
            torch.testing.assert_close(b, a, rtol=5e-2, atol=5e-3)


def _scaler_step_fn(model, opt, scaler, autocast):
    def step(x, y):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(x)
        loss = F.mse_loss(out.float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.detach()
    return step


@pytest.mark.parametrize("autocast", [False, True])
def test_grad_scaler_whole_step_compiled(autocast):
    """the whole AMP step under torchc: forward, scaler.scale(loss).backward(), scaler.step
    (unscale, the inf check, the optimizer step or its skip), scaler.update(); an inf in the
    input at two steps makes the gradients non-finite: those steps are skipped and the scale
    halves, as in eager; the scale grows after growth_interval clean steps. Losses, the
    scale, the skipped steps and the parameters follow eager's (fp32 exactly to rounding,
    bf16 autocast to bf16 tolerance)."""
    torch.manual_seed(0)
    me = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 3))
    mc = copy.deepcopy(me)
    runs = []
    for m, compile_ in ((me, False), (mc, True)):
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
        step = _scaler_step_fn(m, opt, scaler, autocast)
        step = torchc.compile(step) if compile_ else step
        g = torch.Generator().manual_seed(1)
        trace = []
        for i in range(9):
            x, y = torch.randn(5, 6, generator=g), torch.randn(5, 3, generator=g)
            if i in (3, 6):
                x[0, 0] = float("inf")
            before = [p.detach().clone() for p in m.parameters()]
            loss = step(x, y)
            skipped = all(torch.equal(a, b) for a, b in zip(before, m.parameters()))
            trace.append((loss, scaler.get_scale(), skipped))
        runs.append(trace)
    tol = BF16 if autocast else dict(rtol=1e-5, atol=1e-6)
    for i, ((le, se, ke), (lc, sc, kc)) in enumerate(zip(*runs)):
        assert (se, ke) == (sc, kc), i
        assert ke == (i in (3, 6)), i
        torch.testing.assert_close(lc, le, **tol, equal_nan=True)
    for a, b in zip(me.parameters(), mc.parameters()):
        torch.testing.assert_close(b, a, **tol)
    ex = torchc.explain(step)(torch.randn(5, 6), torch.randn(5, 3))
    assert ex.backward_graph_count >= 1 and ex.graph_count >= 2, str(ex)
