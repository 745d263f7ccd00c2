"""Binary cross entropy in training graphs (issue 22): F.binary_cross_entropy_with_logits
(weight, pos_weight, reductions) and F.binary_cross_entropy are lowered with eager's loss
kernels and eager's backward formulas (dynamo_hook/ops_loss.c: a backward template, not the
chain rule of the composition), so the gradients match eager's where the composition's would
not (BCE at probabilities of exactly 0 or 1, logits of +-100). torch.broadcast_tensors and
broadcast_to are views with expand's backward.

Each case asserts one forward graph, no break and one backward graph, and compares the loss
and the gradients of the input and the target with eager's.
"""
import pytest
import torch
import torch.nn.functional as F

import torchc


def _check(fn, *args, rtol=1.3e-6, atol=1e-5):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    cf = torchc.compile(fn)
    for call in (fn, cf):
        for a in args:
            a.grad = None
        out = call(*args)
        (out if out.dim() == 0 else (out * torch.linspace(0.5, 1.5, out.numel()).view(out.shape)).sum()).backward()
        if call is fn:
            want = (out.detach(), [a.grad for a in args if a.requires_grad])
        else:
            got = (out.detach(), [a.grad for a in args if a.requires_grad])
    assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
    torch.testing.assert_close(got[0], want[0], rtol=rtol, atol=atol)
    for a, b in zip(got[1], want[1]):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol)


def _data(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=g, dtype=dtype) * 3).requires_grad_()
    y = torch.rand(shape, generator=g, dtype=dtype).requires_grad_()
    return x, y


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("wts", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits_matches_eager(reduction, wts):
    x, y = _data((4, 3, 5))
    w = torch.rand(3, 1) + 0.5 if wts in ("weight", "both") else None  # broadcast along dims
    pw = torch.rand(5) + 0.5 if wts in ("pos_weight", "both") else None

    def f(x, y):
        return F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=pw, reduction=reduction)

    _check(f, x, y)


def test_bce_with_logits_extreme_logits_and_module():
    x = torch.tensor([-100.0, -30.0, -1e-3, 0.0, 1e-3, 30.0, 100.0]).requires_grad_()
    y = torch.tensor([1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 0.0])
    loss = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(2.0))
    _check(lambda x, y: loss(x, y), x, y)
    _check(lambda x, y: F.binary_cross_entropy_with_logits(x, y), x, y)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_bce_matches_eager_including_saturated_probabilities(reduction):
    x, y = _data((6, 4))
    w = torch.rand(4) + 0.5

    def f(x, y):
        p = torch.sigmoid(x * 8)  # several saturate to exactly 0 or 1 in float32
        return F.binary_cross_entropy(p, y, weight=w, reduction=reduction)

    with torch.no_grad():
        assert ((torch.sigmoid(x * 8) == 1) | (torch.sigmoid(x * 8) == 0)).any()
    _check(f, x, y, rtol=1e-5, atol=1e-3)


def test_bce_gradcheck_f64():
    x, y = _data((3, 4), torch.float64)
    pw = torch.rand(4, dtype=torch.float64) + 0.5

    def f(x, y):
        return F.binary_cross_entropy_with_logits(x, y, pos_weight=pw) + F.binary_cross_entropy(
            torch.sigmoid(x), y, reduction="sum")

    _check(f, x, y)
    assert torch.autograd.gradcheck(torchc.compile(f), (x, y), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_bce_input_out_of_range_raises_as_eager():
    def f(p, y):
        return F.binary_cross_entropy(p, y)

    p, y = torch.rand(5).requires_grad_(), torch.rand(5)
    cf = torchc.compile(f)
    cf(p, y).backward()
    for bad in (torch.tensor([0.5, 1.5, 0.2, 0.1, 0.3]), torch.tensor([0.5, float("nan"), 0.2, 0.1, 0.3])):
        with pytest.raises(RuntimeError) as want:
            f(bad, y)
        with pytest.raises(RuntimeError) as got:
            cf(bad.requires_grad_(), y)
        assert str(got.value) == str(want.value)


def test_bce_without_grad_and_eager_errors():
    x, y = _data((3, 4))
    with torch.no_grad():
        torchc.reset()
        ex = torchc.explain(lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction="sum"))(x, y)
        assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
        torch.testing.assert_close(ex.result, F.binary_cross_entropy_with_logits(x, y, reduction="sum"))
    cf = torchc.compile(lambda x, y: F.binary_cross_entropy_with_logits(x, y))
    with pytest.raises(ValueError):  # F's own size check, as in eager
        cf(x, y[:2])


def test_broadcast_tensors_and_broadcast_to_backward():
    a = torch.randn(3, 1, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    c = torch.randn(2, 1, 1, requires_grad=True)

    def f(a, b, c):
        x, y, z = torch.broadcast_tensors(a, b, c)
        return x * y.sin() + z * 2 + torch.broadcast_to(b, (5, 4)).sum() + a.broadcast_to((3, 7)).sum() + b.broadcast_to(2, -1).sum()

    _check(f, a, b, c)
    shapes = [t.shape for t in torchc.compile(lambda a, b, c: torch.broadcast_tensors(a, b, c))(a, b, c)]
    assert shapes == [(2, 3, 4)] * 3
