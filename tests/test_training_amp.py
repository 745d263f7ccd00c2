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
