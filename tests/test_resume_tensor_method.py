"""x.method(<an argument whose computation breaks>): the bound method x.method waits on the
stack across the break and the resume function receives it as a value. It was guarded by
identity (a new object each call: a recompile every call, the whole function eager after 8)
and called as an unknown builtin (a second break). Now it is x's method, guarded by type,
__name__ and __self__ (variables.c wrap_tensor_method)."""
import warnings

import pytest
import torch
import torch.nn as nn

import torchc
from conftest import assert_same


def inplace(h, m):
    h.add_(h[m].sum())           # the in-place method's receiver is also read after
    return h * 2


def chained(h, m):
    r = h.mul(h[m].sum()).t().add(h.masked_fill(m, 0))
    return r, h.transpose(0, 1).masked_scatter(m.t(), h[m] + 1)


def on_views(h, m):
    return h.t().contiguous().view(-1).add(h[m].sum()), h.new_zeros(3).add(h[m].sum())


@pytest.mark.parametrize("fn,graphs", [(inplace, 1), (chained, 2), (on_views, 3)])  # Dynamo's counting: pieces with no op are no graph
def test_method_held_across_a_break(fn, graphs):
    torchc.reset()
    cf = torchc.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a recompile-limit warning fails the test
        for shape in [(4, 4)] * 10 + [(1, 1), (3, 3)]:
            h = torch.randn(*shape)
            m = torch.rand(*shape) > 0.5
            h1, h2 = h.clone(), h.clone()
            assert_same(cf(h1, m), fn(h2, m), atol=1e-5, rtol=1e-5)
            assert_same(h1, h2, atol=1e-5, rtol=1e-5)
    torchc.reset()
    ex = torchc.explain(fn)(torch.randn(4, 4), torch.rand(4, 4) > 0.5)
    assert ex.graph_count == graphs, ex.break_reasons
    assert all("boolean mask" in r for r in ex.break_reasons), ex.break_reasons


class Merge(nn.Module):
    """a multimodal merge: the masked tokens' states normalized apart and written back"""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.LayerNorm(8), nn.LayerNorm(8)

    def forward(self, h, mask):
        h = h.masked_scatter(mask.unsqueeze(-1), self.a(h[mask]))
        return h.masked_scatter(~mask.unsqueeze(-1), self.b(h[~mask])) * 2


def test_masked_merge_module():
    torch.manual_seed(0)
    model = Merge().eval()
    cm = torchc.compile(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(10):
            h, mask = torch.randn(2, 6, 8), torch.rand(2, 6) > 0.5
            assert_same(cm(h, mask), model(h, mask), atol=1e-5, rtol=1e-5)
        torchc.reset()
        ex = torchc.explain(model)(h, mask)
    assert ex.graph_count == 3, ex.break_reasons  # the two x[mask] reads break, nothing else
