"""mode="max-autotune" autotunes convolutions (issue 25): each 2-d conv's layout is chosen by
timing ATen's kernel in NCHW and channels-last on the captured shapes, the faster captured;
the default mode keeps the fixed rule (NCHW on the CPU). Results equal eager's either way."""
import logging

import pytest
import torch

import torchc
from torchc import _autotune


def _layouts(graph):
    """'nhwc' / 'nchw' per conv extern of a graph (channels-last convs carry a trailing 1)"""
    out = []
    for ln in graph.splitlines():
        if " conv params=" in ln:
            p = [int(v) for v in ln.split("params=[")[1].split("]")[0].split(",")]
            out.append("nhwc" if len(p) == 3 + 3 * p[0] and p[-1] == 1 else "nchw")
    return out


@pytest.fixture
def fixed_choice(monkeypatch):
    """the timing answered by a stub: which layout 'measured' faster"""
    def use(cl):
        calls = []

        def stub(fn, sync, budget=0.25, reps=7):
            calls.append(1)
            # conv_channels_last times NCHW first, then channels-last
            return 2.0 if (len(calls) % 2 == 1) == cl else 1.0

        monkeypatch.setattr(_autotune, "_time", stub)
        return calls
    torchc.reset()
    yield use
    torchc.reset()


@pytest.mark.parametrize("faster", ["nhwc", "nchw"])
def test_max_autotune_picks_the_faster_conv_layout(fixed_choice, faster):
    calls = fixed_choice(faster == "nhwc")
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Conv2d(8, 4, 1, bias=False)).eval()
    x = torch.randn(2, 3, 9, 7)
    with torch.no_grad():
        e = torchc.explain(torchc.compile(m, mode="max-autotune-no-cudagraphs"))(x)
        torch.testing.assert_close(e.result, m(x), rtol=1e-5, atol=1e-5)
    assert e.graph_count == 1 and e.extern_calls == ["conv", "conv"], e
    assert _layouts(e.graphs[0]) == [faster, faster], e.graphs[0]
    assert len(calls) == 4 and len(_autotune.decisions) == 2  # each conv timed both ways
    with torch.no_grad():  # the default mode: the fixed rule, no timing
        e = torchc.explain(torchc.compile(m))(x)
    assert _layouts(e.graphs[0]) == ["nchw", "nchw"] and len(calls) == 4


def test_max_autotune_conv_real_timing_and_log(caplog):
    torchc.reset()
    m = torch.nn.Conv2d(4, 4, 3)
    x = torch.randn(1, 4, 8, 8, requires_grad=True)  # training: the backward follows the layout
    with caplog.at_level(logging.INFO, logger="torchc.perf"):
        cm = torchc.compile(m, mode="max-autotune-no-cudagraphs")
        e = torchc.explain(cm)(x)
    torch.testing.assert_close(e.result, m(x), rtol=1e-5, atol=1e-5)
    e.result.sum().backward()
    g = m.weight.grad.clone()
    m.zero_grad()
    m(x).sum().backward()
    torch.testing.assert_close(g, m.weight.grad, rtol=1e-4, atol=1e-4)
    assert len(_autotune.decisions) == 1
    (key, t_nchw, t_nhwc, cl), = _autotune.decisions
    assert t_nchw > 0 and t_nhwc > 0 and cl == (t_nhwc < t_nchw)
    assert _layouts(e.graphs[0]) == ["nhwc" if cl else "nchw"]
    assert any("max-autotune: conv x=[1, 4, 8, 8]" in r.getMessage() for r in caplog.records)


def test_conv_layout_setting_wins_over_autotune(fixed_choice):
    calls = fixed_choice(True)
    torchc.config.conv_layout = "nchw"
    try:
        m = torch.nn.Conv2d(3, 3, 3).eval()
        with torch.no_grad():
            e = torchc.explain(torchc.compile(m, mode="max-autotune-no-cudagraphs"))(torch.randn(1, 3, 6, 6))
    finally:
        torchc.config.conv_layout = None
    assert _layouts(e.graphs[0]) == ["nchw"] and not calls
