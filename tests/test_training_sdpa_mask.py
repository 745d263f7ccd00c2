"""scaled_dot_product_attention with an additive float mask that requires grad (a learned
relative position bias, T5's) in a training graph (issue 22): the mask's gradient is the
scores' gradient dS summed over the mask's broadcast dims (graph/autograd.c
sdpa_masked_bwd). Was: "no backward rule for sdpa with a mask that requires grad" (the frame
ran eagerly)."""
import pytest
import torch
import torch.nn.functional as F

import torchc


@pytest.mark.parametrize("mshape", [(2, 3, 5, 7), (1, 3, 5, 7), (3, 5, 7), (5, 7), (1, 1, 5, 7)])
def test_sdpa_mask_gradient_matches_eager(mshape):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 8, requires_grad=True) for n in (5, 7, 7))
    bias = torch.randn(*mshape, requires_grad=True)

    def f(q, k, v, bias, neg):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias + neg).square().sum()

    neg = torch.zeros(5, 7)
    neg[0, 4:] = float("-inf")  # masked entries: no gradient reaches them
    torchc.reset()
    ex = torchc.explain(f)(q, k, v, bias, neg)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    ins = (q, k, v, bias)
    le = f(*ins, neg)
    ge = torch.autograd.grad(le, ins)
    lc = torchc.compile(f)(*ins, neg)
    gc = torch.autograd.grad(lc, ins)
    torch.testing.assert_close(lc, le, rtol=1e-5, atol=1e-5)
    for a, b in zip(gc, ge):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_sdpa_mask_only_requires_grad():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    bias = torch.randn(2, 4, 4, requires_grad=True)

    def f(q, k, v, bias):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3).sum(-1).pow(2).mean()

    torchc.reset()
    ex = torchc.explain(f)(q, k, v, bias)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    (ge,) = torch.autograd.grad(f(q, k, v, bias), bias)
    (gc,) = torch.autograd.grad(torchc.compile(f)(q, k, v, bias), bias)
    torch.testing.assert_close(gc, ge, rtol=1e-4, atol=1e-6)
