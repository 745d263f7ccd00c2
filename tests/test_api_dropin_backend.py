"""Backend interop (issue 25): torch.compile(m, backend="torchc") with dynamic shapes (Dynamo's
0-d float inputs read by .item() hoisted out of the graph, changed dims symbolic after one
recompile) and training; torchc.compile(f, backend=callable, dynamic=True) hands over static
shapes, one graph per shape, and says so."""
import logging

import pytest
import torch

import torchc


class Rec:
    def __init__(self):
        self.recs = []

    def __call__(self, rec):
        self.recs.append(rec)
        torchc._logging._on_record(rec)

    def compiled(self):
        return [r for r in self.recs if r["event"] == "compiled" and not r.get("fallback")]


@pytest.fixture
def rec():
    r = Rec()
    torchc._C.set_log_hook(r)
    yield r
    torchc._C.set_log_hook(torchc._logging._on_record)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                               torch.nn.Linear(16, 4))


def test_dynamo_dynamic_true_is_one_graph_and_symbolic(rec):
    torch._dynamo.reset()
    m = _model()
    cm = torch.compile(m, backend="torchc", dynamic=True)
    with torch.no_grad():
        for n in (3, 5, 7, 9):
            x = torch.randn(n, 8)
            torch.testing.assert_close(cm(x), m(x), rtol=1e-5, atol=1e-5)
        got = rec.compiled()
        x = torch.randn(1, 8)  # size 1 is specialized (as Dynamo does): one more graph at most
        torch.testing.assert_close(cm(x), m(x), rtol=1e-5, atol=1e-5)
    # the eps of LayerNorm came as a 0-d tensor .item(): read outside the graph, no break
    assert not [r for r in rec.recs if r.get("break_reason") or r.get("fallback")], rec.recs
    assert 1 <= len(got) <= 2, [r["graph"] for r in got]  # static first, then symbolic
    assert "sym=" in got[-1]["graph"], got[-1]["graph"]


def test_dynamo_automatic_dynamic(rec):
    torch._dynamo.reset()
    m = _model()
    cm = torch.compile(m, backend="torchc")
    with torch.no_grad():
        for n in (3, 5, 7, 9):
            x = torch.randn(n, 8)
            torch.testing.assert_close(cm(x), m(x), rtol=1e-5, atol=1e-5)
    assert not [r for r in rec.recs if r.get("break_reason") or r.get("fallback")], rec.recs
    assert len(rec.compiled()) <= 3, len(rec.compiled())


def test_dynamo_backend_trains(rec):
    torch._dynamo.reset()
    m = _model()
    ref = _model()
    cm = torch.compile(m, backend="torchc")
    x = torch.randn(6, 8)
    cm(x).square().sum().backward()
    ref(x).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    assert any(r.get("backward_graph") for r in rec.compiled()) or rec.compiled(), rec.recs


def test_backend_callable_dynamic_true_is_static_per_shape(caplog, rec):
    seen = []

    def be(gm, ex):
        seen.append([tuple(t.shape) for t in ex])
        return gm.forward

    def f(x):
        return (x * 2).sum(0)

    with caplog.at_level(logging.WARNING, logger="torchc"):
        g = torchc.compile(f, backend=be, dynamic=True)
    assert any("static shapes" in r.getMessage() for r in caplog.records)
    for n in (3, 5, 3):
        x = torch.randn(n, 4)
        torch.testing.assert_close(g(x), f(x))
    assert seen == [[(3, 4)], [(5, 4)]]  # a graph per shape; the third call hits the first
