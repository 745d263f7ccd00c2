"""Patterns from transformers' modelling code (tests/test_models_tiny.py measures the models):
each compiled differentially against eager, with graph/break counts from torchc.explain so a
silent fallback fails."""
import torch

import torchc


def _whole(fn, *args):
    """fn compiled: one graph, no break, same values, dtypes and shapes as eager."""
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    want = fn(*args)
    got = ex.result
    if isinstance(want, torch.Tensor):
        want, got = (want,), (got,)
    assert len(want) == len(got)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        torch.testing.assert_close(g, w)
    return ex


def test_tensor_new_factories():
    # masking_utils.and_mask: q_idx.new_ones((), dtype=torch.bool)
    def f(x, i):
        return (i.new_ones((), dtype=torch.bool) & (x > 0), x.new_zeros(2, 3), x.new_zeros((0,)),
                x.new_full((3,), 2.5) * x[:3], i.new_full((2,), 7), x.new_ones(1, 5, dtype=torch.float64),
                x.new_empty((2, 0)))
    _whole(f, torch.randn(5), torch.arange(4))
