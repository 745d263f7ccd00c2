"""Computed index tensors in training graphs (issue 22): an index whose bounds no range
analysis proves (OPT's learned positions, cumsum of the attention mask) is checked after the
forward's kernels (an extra int64 graph output counting the elements out of range) before
the autograd node is attached: in range, the graph trains whole and index_select's backward
(a scatter-add with accumulation of repeated indices) gives eager's gradients; out of range,
the frame reruns eagerly, which raises IndexError as eager does, with nothing recorded.
"""
import pytest
import torch

import torchc


def _f(emb):
    def f(mask, w):
        pos = (torch.cumsum(mask, dim=1) * mask - 1).long() + 2  # repeats: accumulated
        return (emb(pos) * w).square().sum()
    return f


def test_computed_index_trains_whole_and_matches_eager():
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 4)
    f = _f(emb)
    m = torch.ones(2, 6, dtype=torch.long)
    m[1, :2] = 0
    w = torch.randn(4, requires_grad=True)
    torchc.reset()
    ex = torchc.explain(f)(m, w)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    cf = torchc.compile(f)
    for _ in range(2):
        emb.zero_grad()
        w.grad = None
        le = f(m, w)
        le.backward()
        ge, gwe = emb.weight.grad.clone(), w.grad.clone()
        emb.zero_grad()
        w.grad = None
        lc = cf(m, w)
        lc.backward()
        torch.testing.assert_close(lc, le)
        torch.testing.assert_close(emb.weight.grad, ge)
        torch.testing.assert_close(w.grad, gwe)


def test_computed_index_out_of_range_raises_in_training():
    emb = torch.nn.Embedding(10, 4)
    f = _f(emb)
    w = torch.randn(4, requires_grad=True)
    cf = torchc.compile(f)
    cf(torch.ones(2, 6, dtype=torch.long), w).backward()  # compiled, in range
    for big in (torch.ones(2, 6, dtype=torch.long) * 3, torch.ones(2, 9, dtype=torch.long)):
        with pytest.raises(IndexError):
            f(big, w)
        with pytest.raises(IndexError):
            cf(big, w)
    neg = torch.ones(2, 6, dtype=torch.long)
    neg[0, 0] = -5
    with pytest.raises(IndexError):
        cf(neg, w)
    emb.zero_grad()
    w.grad = None
    cf(torch.ones(2, 6, dtype=torch.long), w).backward()  # still compiled and right after
    g1 = emb.weight.grad.clone()
    emb.zero_grad()
    w.grad = None
    f(torch.ones(2, 6, dtype=torch.long), w).backward()
    torch.testing.assert_close(g1, emb.weight.grad)


def test_masked_fill_inplace_in_training():
    # T5's _shift_right (labels.clone().masked_fill_(labels == -100, pad)) and an in-place
    # masked_fill_ of an intermediate that requires grad: captured (was a break)
    emb = torch.nn.Embedding(10, 4)

    def f(labels, w):
        ids = labels.clone()
        ids.masked_fill_(ids == -100, 0)
        h = emb(ids) * w
        h.masked_fill_(h > 0.5, 0.5)
        return h.square().sum()

    labels = torch.tensor([[1, -100, 3], [-100, 5, 9]])
    w = torch.randn(4, requires_grad=True)
    torchc.reset()
    ex = torchc.explain(f)(labels, w)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    cf = torchc.compile(f)
    grads = []
    for call in (f, cf):
        emb.zero_grad()
        w.grad = None
        call(labels, w).backward()
        grads.append((emb.weight.grad.clone(), w.grad.clone()))
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)
