"""Backend interop (issue 25): torch.compile(m, backend="torchc") with dynamic shapes (Dynamo's
0-d float inputs read by .item() hoisted out of the graph, changed dims symbolic after one
recompile) and training; torchc.compile(f, backend=callable or name) with dynamic shapes hands
over one graph of symbolic sizes, as Dynamo does."""
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


def _sym(t):
    """a fake tensor's sizes as ints or "s" (symbolic)"""
    return tuple(d if isinstance(d, int) else "s" for d in t.shape)


def test_backend_callable_dynamic_true_one_symbolic_graph(rec):
    """dynamic=True with another backend: like Dynamo's, one graph of symbolic sizes (fake
    example inputs with SymInt dims, sizes read from the inputs inside the graph) serves
    every shape; torchc's guards keep the symbols' relations."""
    seen = []

    def be(gm, ex):
        seen.append([_sym(t) for t in ex])
        assert any(n.target is torch.ops.aten.sym_size.int for n in gm.graph.nodes), gm.code
        return gm.forward

    def f(x, y):
        return (x.reshape(-1) * 2).view(x.shape[0], -1)[:, 1:] + y.sum() + torch.arange(x.shape[1] - 1)

    g = torchc.compile(f, backend=be, dynamic=True)
    for n in (3, 5, 8, 3):
        x, y = torch.randn(n, 4), torch.randn(n + 1)
        torch.testing.assert_close(g(x, y), f(x, y))
    assert seen == [[("s", 4), ("s",)]], seen
    assert len(rec.compiled()) == 1


def test_backend_automatic_dynamic_aot_eager(rec):
    """dynamic=None: the second shape makes a symbolic graph, which AOT autograd traces
    symbolically (Dynamo's tracing context): no third graph for later shapes."""
    def f(x):
        return torch.softmax(x * 3, -1).sum(0)

    g = torchc.compile(f, backend="aot_eager")
    for n in (2, 3, 6, 9):
        x = torch.randn(n, 5)
        torch.testing.assert_close(g(x), f(x))
    assert len(rec.compiled()) == 2, [r["graph"] for r in rec.compiled()]
    assert "sym=" in rec.compiled()[1]["graph"]


def test_backend_own_guards_are_checked(rec):
    """A backend whose code holds only for the sizes it saw (it specialized a symbol: a guard
    in the shape env, as Inductor's "s0 <= 4096") is not run beyond them: the GraphModule
    runs op by op there, results stay right."""
    def be(gm, ex):
        n = int(ex[0].shape[0])  # specializes the symbol (a guard s == n)
        return lambda *a: tuple(o * 0 + n for o in gm(*a))

    def f(x):
        return x.cos() + 1

    g = torchc.compile(f, backend=be, dynamic=True)
    assert torch.equal(g(torch.ones(4, 2)), torch.full((4, 2), 4.0))  # its own size: its code
    x = torch.randn(6, 2)
    torch.testing.assert_close(g(x), f(x))  # another size: not the specialized code
    assert len(rec.compiled()) == 1
