"""torchc.reset() forgets what the entries of a code object taught, as torch._dynamo.reset()
does: the dims seen changing (automatic dynamic shapes) and module instances sharing one
entry. Kept, they made test_api_dropin_autotune's conv capture dynamic (no layout timing for
symbolic shapes) whenever an earlier test had run nn.Sequential.forward at two batch sizes."""
import torch

import torchc
from torchc import _autotune


def _inputs(graph):
    return [ln for ln in graph.splitlines() if " input " in ln]


def test_reset_forgets_automatic_dynamic_dims():
    def f(x):
        return x * 2 + 1

    cf = torchc.compile(f)
    cf(torch.randn(4, 3))
    ex = torchc.explain(cf)(torch.randn(5, 3))  # dim 0 changed: captured dynamic
    assert ex.graph_count == 1 and "sym=" in _inputs(ex.graphs[0])[0], ex.graphs[0]
    torchc.reset()
    x = torch.randn(6, 3)
    ex = torchc.explain(cf)(x)  # as in a fresh process: specialized
    assert ex.graph_count == 1 and "sym=" not in _inputs(ex.graphs[0])[0], ex.graphs[0]
    torch.testing.assert_close(ex.result, f(x))


def test_reset_then_autotune_times_the_conv(monkeypatch):
    """the order-dependent failure, in one test: Sequential.forward at two batch sizes, reset,
    then max-autotune's conv capture is static and timed"""
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU()).eval()
    with torch.no_grad():
        cm = torchc.compile(m)
        cm(torch.randn(4, 3, 9, 7))
        cm(torch.randn(2, 3, 9, 7))
    torchc.reset()
    calls = []
    monkeypatch.setattr(_autotune, "_time", lambda fn, sync, budget=0.25, reps=7: calls.append(1) or 1.0)
    m2 = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                             torch.nn.Conv2d(8, 4, 1, bias=False)).eval()
    x = torch.randn(2, 3, 9, 7)
    try:
        with torch.no_grad():
            e = torchc.explain(torchc.compile(m2, mode="max-autotune-no-cudagraphs"))(x)
            torch.testing.assert_close(e.result, m2(x), rtol=1e-5, atol=1e-5)
    finally:
        torchc.reset()
    assert e.graph_count == 1 and e.extern_calls == ["conv", "conv"], e
    assert "sym=" not in _inputs(e.graphs[0])[0], e.graphs[0]
    assert len(calls) == 4  # each conv timed in both layouts
