"""Repeated CPU kernels are compiled once (codegen/cpu_module.c gen_deduped): identical layers
give kernels whose bodies have equal bitcode; each body is optimized and emitted once and the
repeats' wrappers call it with their own buffers. Differential against eager: the repeats must
read and write their own buffers (inputs, intermediates, outputs), in inference, training
(the backward graph too), with dynamic sizes and with split (one huge row) reductions.
TORCHC_DEBUG=time reports the repeats of each compile."""
import re

import torch
import torch.nn as nn

import torchc


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return x + torch.tanh(self.fc(self.ln(x))).softmax(-1) * 0.5


class Stack(nn.Module):
    def __init__(self, d=24, n=5):
        super().__init__()
        self.layers = nn.ModuleList(Layer(d) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _repeats(capfd):
    err = capfd.readouterr().err
    found = [int(m) for m in re.findall(r"torchc time: compile .*? (\d+) repeats", err)]
    assert found, err[-2000:]
    return found


def test_repeated_layers_inference(monkeypatch, capfd):
    monkeypatch.setenv("TORCHC_DEBUG", "time")
    torch.manual_seed(0)
    m = Stack().eval()
    x = torch.randn(3, 7, 24)
    torchc.reset()
    with torch.no_grad():
        out = torchc.compile(m)(x)
        ref = m(x)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert max(_repeats(capfd)) >= 1  # five identical layers (fused alike for most of them)


def test_repeated_layers_training(monkeypatch, capfd):
    monkeypatch.setenv("TORCHC_DEBUG", "time")
    torch.manual_seed(0)
    m = Stack(n=4).train()
    ref_m = Stack(n=4).train()
    ref_m.load_state_dict(m.state_dict())
    x = torch.randn(2, 5, 24)
    torchc.reset()
    cm = torchc.compile(m)
    for _ in range(2):
        loss = (cm(x) ** 2).mean()
        loss.backward()
        ref = (ref_m(x) ** 2).mean()
        ref.backward()
        torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
        for p, q in zip(m.parameters(), ref_m.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)
    reps = _repeats(capfd)
    assert len(reps) >= 2 and max(reps) >= 1  # the forward and backward compiles; repeats (the backward)


def _chain(h, ws, bs, ms):
    outs = []
    for w, b, m in zip(ws, bs, ms):  # the matmuls keep the pointwise kernels apart
        h = torch.sigmoid(h * w + b) @ m
        outs.append(h)
    return outs


def test_same_code_different_buffers(monkeypatch, capfd):
    # equal bodies, each repeat with its own inputs, intermediates and outputs
    monkeypatch.setenv("TORCHC_DEBUG", "time")
    torch.manual_seed(0)
    h = torch.randn(33, 17)
    ws, bs, ms = ([torch.randn(17) for _ in range(4)], [torch.randn(33, 17) for _ in range(4)],
                  [torch.randn(17, 17) for _ in range(4)])
    torchc.reset()
    for o, r in zip(torchc.compile(_chain)(h, ws, bs, ms), _chain(h, ws, bs, ms)):
        torch.testing.assert_close(o, r)
    assert max(_repeats(capfd)) >= 3


def test_dynamic_sizes(monkeypatch, capfd):
    monkeypatch.setenv("TORCHC_DEBUG", "time")
    torchc.reset()
    cf = torchc.compile(_chain, dynamic=True)
    torch.manual_seed(0)
    ws, ms = [torch.randn(17) for _ in range(3)], [torch.randn(17, 17) for _ in range(3)]
    for n in (5, 9, 1):
        h, bs = torch.randn(n, 17), [torch.randn(n, 17) for _ in range(3)]
        for o, r in zip(cf(h, ws, bs, ms), _chain(h, ws, bs, ms)):
            torch.testing.assert_close(o, r)
    assert max(_repeats(capfd)) >= 2


def _norms(h, ms):
    outs = []
    for m in ms:  # one huge row each: split kernels (partials, then a combining function)
        h = (h * torch.rsqrt((h * h).sum() + 1)).view(-1, 64) @ m
        outs.append(h)
        h = h.view(-1)
    return outs


def test_split_reductions(monkeypatch, capfd):
    monkeypatch.setenv("TORCHC_DEBUG", "time")
    torch.manual_seed(0)
    h, ms = torch.randn(1 << 20), [torch.randn(64, 64) / 8 for _ in range(3)]
    torchc.reset()
    for o, r in zip(torchc.compile(_norms)(h, ms), _norms(h, ms)):
        torch.testing.assert_close(o, r, rtol=1e-4, atol=1e-4)
    assert max(_repeats(capfd)) >= 2
