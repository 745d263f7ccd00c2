"""Capture gaps of issue 21, round 4: code that branches on torch.compiler.is_compiling().

`if mask is None and not is_compiling(): mask = ones(...)` followed by `mask.shape`: the
trace answers True (as torch.compile does), the branch leaves mask None, and reading
mask.shape raises in the trace where eager, answering False, does not. torch.compile does
the same: its trace raises there and the frame runs eagerly (checked with
torch._dynamo.explain: 0 graphs, and torch.compile(backend="eager") returns eager's result).
torchc runs the frame eagerly too; its reason used to say "(eager will raise)", which is
wrong here: it now says the trace answered is_compiling() True.
"""
import pytest
import torch

import torchc


def uses_mask(x, mask=None):
    if mask is None and not torch.compiler.is_compiling():
        mask = torch.ones_like(x)
    return x * mask.shape[0] + mask


def plain(x):
    return x.cos() + 1


@pytest.mark.allow_fallback
@pytest.mark.parametrize("shape", [(3,), (1,), (0,), (2, 4)])
def test_branch_on_is_compiling_runs_eagerly_with_a_true_reason(shape):
    torchc.reset()
    x = torch.randn(shape)
    ex0 = torchc.explain(plain)(x)          # a graph compiled (the fallback below is expected)
    assert (ex0.graph_count, ex0.graph_break_count) == (1, 0)
    ex = torchc.explain(uses_mask)(x)
    torch.testing.assert_close(ex.result, uses_mask(x))
    assert ex.graph_count == 0
    reasons = [str(r) for r in ex.break_reasons]
    assert any("is_compiling() True" in r and "eager will raise" not in r for r in reasons), reasons
    # with a mask passed, nothing depends on the answer: captured
    m = torch.rand(shape)
    ex2 = torchc.explain(uses_mask)(x, m)
    assert (ex2.graph_count, ex2.graph_break_count) == (1, 0), ex2.break_reasons
    torch.testing.assert_close(ex2.result, uses_mask(x, m))
