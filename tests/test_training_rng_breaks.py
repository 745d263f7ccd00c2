"""Random draws across graph breaks in training (issue 22): one rule, in
dynamo_hook/symbolic.c sym_record_break_state: the instruction a break stops at runs eagerly
after the graph, so the draws (RANDOM, DROPOUT_MASK) the trace recorded inside it are dropped
from the graph (ic_graph_drop_draws), whatever the break (a call traced in part, a branch on
data, an operator). Kept, they would run in the graph and again in the eager instruction:
eager's stream would advance twice and every later mask would differ under one seed.

Two-sided: the masks, torch.rand values, losses, gradients and the generator state after each
step equal eager's exactly, and the graphs before and after the breaks are compiled (a frame
left to eager whole fails the test).
"""
import copy

import pytest
import torch
import torch.nn as nn

import torchc


class Gated(nn.Module):
    """dropout, a branch on data (two resumes), torch.rand / randn_like on each side, and a
    callee that draws before a break of its own (the caller breaks at the call)"""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 6)
        self.drop = nn.Dropout(0.3)

    def noisy(self, h):
        n = torch.randn_like(h)  # drawn before the callee's break: dropped from the caller's graph
        if n.mean() > 0:  # a break inside the callee
            return h + n
        return h - n

    def forward(self, x):
        h = self.drop(self.a(x))
        if h.sum() > 0:  # a break in this frame: the draws before it stay in its graph
            h = h * torch.rand(h.shape)
        else:
            h = h - torch.rand(h.shape)
        h = self.noisy(h)
        return self.drop(self.b(h)).square().mean()


@pytest.mark.parametrize("shape", [(4, 6), (1, 6), (3, 2, 6)])
def test_masks_and_draws_match_eager_across_breaks(shape):
    torch.manual_seed(0)
    me = Gated().train()
    mc = copy.deepcopy(me)
    oe = torch.optim.SGD(me.parameters(), lr=0.05)
    oc = torch.optim.SGD(mc.parameters(), lr=0.05)
    cm = torchc.compile(mc)
    for step in range(8):
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(step))
        torch.manual_seed(100 + step)
        le = me(x)
        se = torch.get_rng_state()
        torch.manual_seed(100 + step)
        lc = cm(x)
        assert torch.equal(torch.get_rng_state(), se), step
        torch.testing.assert_close(lc, le, rtol=1e-6, atol=1e-7)  # (the masks: equal, or far off)
        for o, l in ((oe, le), (oc, lc)):
            o.zero_grad()
            l.backward()
            o.step()
        for (k, p), q in zip(me.named_parameters(), mc.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-6, atol=1e-7, msg=k)
    torch.manual_seed(1)
    ex = torchc.explain(cm)(torch.randn(*shape))
    assert ex.graph_count >= 3 and ex.graph_break_count >= 2, ex.break_reasons
    assert ex.backward_graph_count >= 2, str(ex)


class _Log:
    def __init__(self):
        self.calls = []
        self.table = {}


def _draw_then_raise(x, log):
    r = torch.rand(3)
    log.calls.append(r)  # an effect the eager call makes again
    return x + r + log.table["missing"]  # KeyError: eager raises here


def _caller(x, log):
    y = torch.nn.functional.dropout(x * 2 + torch.rand(3), 0.5)
    return _draw_then_raise(y, log) * 3


@pytest.mark.allow_fallback  # the callee's own frame runs eagerly (it raises)
def test_break_at_call_that_raises_after_drawing():
    """the callee draws, logs an effect, then raises (no handler): the caller's graph ends
    at the call, the call runs eagerly and raises; its draws and its effect happen once
    (was: the break was refused and the caller ran eagerly whole)"""
    x = torch.randn(4, 3)
    got = []
    for fn in (_caller, torchc.compile(_caller)):
        log = _Log()
        torch.manual_seed(0)
        with pytest.raises(KeyError):
            fn(x, log)
        got.append((torch.get_rng_state(), len(log.calls), log.calls[0]))
    assert torch.equal(got[0][0], got[1][0])
    assert got[0][1] == got[1][1] == 1
    assert torch.equal(got[0][2], got[1][2])
    assert torchc._C.stats()["compiles"] >= 1  # the caller's graph before the call


def _caller_catches(x, log):
    y = torch.nn.functional.dropout(x * 2, 0.5)
    try:
        out = _draw_then_raise(y, log)
    except KeyError:
        out = y - torch.rand(3)
    return out * 3


def test_raise_caught_by_the_caller_keeps_the_draws():
    """the callee's draws before its raise happened in eager too: caught by the caller's own
    except clause, the trace goes on and keeps them (no break)"""
    x = torch.randn(4, 3)
    log = _Log()
    torch.manual_seed(0)
    want = _caller_catches(x, log)
    se = torch.get_rng_state()
    logc = _Log()
    torch.manual_seed(0)
    ex = torchc.explain(_caller_catches)(x, logc)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert torch.equal(torch.get_rng_state(), se)
    assert torch.equal(ex.result, want)
    assert len(logc.calls) == 1 and torch.equal(logc.calls[0], log.calls[0])
