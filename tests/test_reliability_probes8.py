"""Regressions found by probing (round 8, tools/probes8): each test is the minimal program that
gave a different stride or exception under torchc than in eager, and fails on the build
before its fix."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from test_reliability_probes5 import _raises_same
from test_reliability_probes6 import _compiled, _same


# ---- einsum's result strides --------------------------------------------------------------
# ATen contracts every pair with permutes + one bmm (with swap_lo_ro), or with a broadcast mul
# when no label is summed; the capture arranged its own bmm, so its result was a permutation
# of eager's layout (bij,bjk->bki: (15, 1, 5) for eager's contiguous (15, 3, 1)), and a
# .view() of it raised where eager's ran.

@pytest.mark.parametrize("eq", ["ij,kj->ikj", "abc,cd->dba", "ij,kj->jik", "bij,bjk->bki", "ijk,ikl->lij", "ab,cd->cadb",
                                "ba,ca->abc", "ij,j->ji"])
@pytest.mark.parametrize("layout", ["contig", "T"])
def test_einsum_result_strides_follow_eager(eq, layout):
    sizes = dict(a=2, b=3, c=4, d=5, i=3, j=4, k=5, l=2, q=3, h=2)
    ops = [torch.arange(float(torch.Size([sizes[c] for c in s]).numel())).reshape([sizes[c] for c in s]).sin()
           for s in eq.split("->")[0].split(",")]
    if layout == "T":
        ops = [o.transpose(0, -1).contiguous().transpose(0, -1) for o in ops]
    f = lambda *o: torch.einsum(eq, *o)   # noqa: E731
    torchc.reset()
    _same(torchc.compile(f)(*ops), f(*ops), exact=False)
    assert _compiled()


def test_einsum_result_views_as_eager():
    def f(a, b):
        return torch.einsum("bij,bjk->bki", a, b).view(2, -1)
    torchc.reset()
    a, b = torch.arange(24.0).reshape(2, 3, 4), torch.arange(40.0).reshape(2, 4, 5)
    _same(torchc.compile(f)(a, b), f(a, b))
    assert _compiled()


# ---- binary_cross_entropy's target range ----------------------------------------------------
# eager checks the target as well as the input is in [0, 1] (RuntimeError "all elements of
# target should be between 0 and 1"); the capture checked only the input.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("rg", [False, True])
@pytest.mark.parametrize("tgt", [lambda y: y * 2, lambda y: y - 0.5, lambda y: y.masked_fill(y > 0.5, float("nan"))])
def test_bce_target_out_of_range_raises(rg, tgt):
    y = torch.tensor([[0.0, 1.0, 0.25], [1.0, 0.5, 0.0]])
    f = lambda x: F.binary_cross_entropy(x.sigmoid(), tgt(y))   # noqa: E731
    torchc.reset()
    _raises_same(f, (torch.randn(2, 3, requires_grad=rg),), torchc.compile(f))


def test_bce_target_in_range_compiles():
    y = torch.tensor([[0.0, 1.0, 0.25], [1.0, 0.5, 0.0]])
    f = lambda x: F.binary_cross_entropy(x.sigmoid(), y)   # noqa: E731
    torchc.reset()
    x = torch.arange(6.0).reshape(2, 3).sin()
    _same(torchc.compile(f)(x), f(x), exact=False)
    assert _compiled()


# ---- strides of views of complex tensors ------------------------------------------------------
# A complex view is a planned extern whose buffer is a dense copy; x.stride() and the view
# check read that copy's strides: x[::2].stride() (4, 1) for eager's (8, 1), an expand's
# (8, 2, 1) for (4, 1, 0), and x[::2].view(-1) ran where eager raises.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: x[::2].stride(), lambda x: x.unsqueeze(-1).expand(3, 4, 2).stride(),
                               lambda x: x[:, 1].stride(), lambda x: x.diagonal(1, -2, -1).stride(), lambda x: x.select(-1, 1).stride(),
                               lambda x: x.unfold(1, 2, 1).stride(), lambda x: x[None, ::2].stride(), lambda x: x[::2].is_contiguous()])
def test_complex_view_strides_are_eager(f):
    torchc.reset()
    x = torch.arange(12.0).reshape(3, 4).to(torch.complex64)
    assert torchc.compile(f)(x) == f(x)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: x[::2].view(-1), lambda x: x.unfold(0, 2, 1).view(-1)])
def test_complex_view_of_strided_view_raises(f):
    torchc.reset()
    _raises_same(f, (torch.arange(12.0).reshape(3, 4).to(torch.complex64),), torchc.compile(f))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: x[:, ::2].real.stride(), lambda x: x[..., 1:].imag.stride(),
                               lambda x: torch.view_as_real(x[:, ::2]).stride(), lambda x: x[:, ::2].view(torch.float32).stride(),
                               lambda x: x[:, ::2].view(torch.complex128).stride()])
def test_complex_real_views_of_strided_views(f):
    torchc.reset()
    x = torch.arange(24.0).reshape(2, 3, 4).to(torch.complex64)
    assert torchc.compile(f)(x) == f(x)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: x.chunk(2, -1)[1].stride(), lambda x: x.split(1, 0)[1][0, ::2].stride(),
                               lambda x: x.tensor_split(3, 2)[2].stride()])
def test_complex_split_items_strides(f):
    # each output of split / chunk (one extern per output) is described as eager's narrow
    torchc.reset()
    x = torch.arange(24.0).reshape(2, 3, 4).to(torch.complex64)
    assert torchc.compile(f)(x) == f(x)


def test_complex_chunk_item_returned_is_a_view():
    f = lambda x: x.chunk(2, -1)[1]   # noqa: E731
    torchc.reset()
    x = torch.arange(24.0).reshape(2, 3, 4).to(torch.complex64)
    got = torchc.compile(f)(x)
    _same(got, f(x))
    assert got._base is x
