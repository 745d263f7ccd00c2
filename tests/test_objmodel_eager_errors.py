"""Programs eager refuses must not return a value compiled (issue 26 item 10): subtraction
with a bool operand, .view() of strides that can't express the shape, an in-place update
reading another view of the same memory. Each raises eager's exception type (the trace
refuses, eager runs). The legal neighbours of each still compile whole."""
import pytest
import torch

import torchc
from conftest import assert_same


def raises_like_eager(f, *args):
    with pytest.raises(RuntimeError) as e1:
        f(*[a.clone() for a in args])
    with pytest.raises(RuntimeError) as e2:
        torchc.compile(f)(*[a.clone() for a in args])
    assert str(e1.value).split(".")[0] == str(e2.value).split(".")[0]


def whole(f, *args):
    want = f(*[a.clone() for a in args])
    ex = torchc.explain(f)(*[a.clone() for a in args])
    assert_same(ex.result, want)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    return ex


B = dict(dtype=torch.bool)


@pytest.mark.allow_fallback
def test_bool_subtraction_raises():
    a, b = torch.tensor([True, False, True]), torch.tensor([False, False, True])
    raises_like_eager(lambda a, b: (a + b) * 2 - a, a, b)
    raises_like_eager(lambda a, b: a.float() - b, a, b)
    raises_like_eager(lambda a, b: torch.sub(a.int(), b), a, b)
    raises_like_eager(lambda a: a.int() - True, a)
    raises_like_eager(lambda a: -a, a)
    whole(lambda a, b: (a + b) * 2 + a, a, b)
    whole(lambda a, b: a.int() - b.int(), a, b)


def test_view_of_incompatible_strides_raises():
    x = torch.randn(3, 4)
    raises_like_eager(lambda x: x.t().view(-1), x)
    raises_like_eager(lambda x: x.permute(1, 0).view(12), x)
    raises_like_eager(lambda x: x.unsqueeze(0).expand(2, 3, 4).view(-1), x)
    raises_like_eager(lambda x: x.narrow(1, 0, 2).view(-1), x)
    raises_like_eager(lambda x: x.view(-1), torch.randn(5, 6).t())   # input strides
    whole(lambda x: x.t().reshape(-1) * 2, x)
    whole(lambda x: x.t().contiguous().view(-1) * 2, x)
    whole(lambda x: x.t().view(4, 3) + 1, x)                    # a no-op view of a transpose
    whole(lambda x: x.t().view(2, 2, 3) + 1, x)                 # splitting a dim is fine
    whole(lambda x: x.narrow(1, 0, 2).view(3, 2, 1) + 1, x)
    whole(lambda x: x.unsqueeze(0).expand(2, 3, 4).view(2, 3, 2, 2) + 1, x)
    whole(lambda x: x.t().view(-1), torch.randn(4, 3).t())    # transposed back: contiguous


def test_gpt2_split_then_view_still_whole():
    def f(h):
        q, k, v = h.split(8, dim=2)
        q = q.view(2, 5, 2, 4).transpose(1, 2)
        k = k.view(2, 5, 2, 4).transpose(1, 2)
        return (q @ k.transpose(-1, -2)).softmax(-1) @ v.view(2, 5, 2, 4).transpose(1, 2)
    whole(f, torch.randn(2, 5, 24))


def test_inplace_internal_overlap_raises():
    raises_like_eager(lambda x: x.add_(x.t()), torch.randn(3, 3))
    raises_like_eager(lambda x: x.mul_(x.t()), torch.randn(3, 3))

    def g(x):
        y = x * 1
        y += y.t()
        return y
    raises_like_eager(g, torch.randn(3, 3))
    whole(lambda x: x.add_(x) * 1, torch.randn(3, 3))
    whole(lambda x: (x * 2).add_(x.t()), torch.randn(3, 3))
