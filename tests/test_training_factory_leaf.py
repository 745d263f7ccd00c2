"""Factories with requires_grad=True inside a training graph (a leaf made in the graph, as
x.requires_grad_() makes one: maskformer's zeros_like(queries, requires_grad=self.training)),
and Tensor.is_leaf read in captured code: captured whole, values, flags and gradients equal to
eager's, with grad mode on and off."""
import pytest
import torch

import torchc
from conftest import captured_whole


def _f(x, w):
    z = torch.zeros_like(w, requires_grad=True)
    z2 = torch.ones(3, 4, requires_grad=True)
    z3 = torch.full((4,), 0.5, requires_grad=True)
    y = (x @ (w + z)).tanh() * z2.sum() + z3
    return y, z.requires_grad, z.is_leaf, z2.requires_grad, y.is_leaf, x.is_leaf, z3.is_leaf


@pytest.mark.parametrize("grad_mode", [True, False])
def test_factory_requires_grad_leaf(grad_mode):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, generator=g)
    w = torch.randn(3, 4, generator=g, requires_grad=True)
    with torch.set_grad_enabled(grad_mode):
        torchc.reset()
        ex = torchc.explain(_f)(x, w)
        assert captured_whole(ex), str(ex)
        if grad_mode:
            assert ex.backward_graph_count == 1, str(ex)
        r, c = _f(x, w), torchc.compile(_f)(x, w)
    assert r[1:] == c[1:]
    torch.testing.assert_close(c[0], r[0])
    assert c[0].requires_grad == r[0].requires_grad
    if grad_mode:
        ge, = torch.autograd.grad(r[0].sum(), [w])
        gc, = torch.autograd.grad(c[0].sum(), [w])
        torch.testing.assert_close(gc, ge)


@pytest.mark.allow_fallback
def test_is_leaf_of_an_input_that_requires_grad_is_eagers():
    # a non-leaf input that requires grad: its guard does not pin leafness, left to eager
    w = torch.randn(3, requires_grad=True)
    h = w * 2

    def f(a):
        return a.is_leaf, a + 1

    r, c = f(h), torchc.compile(f)(h)
    assert r[0] == c[0] is False
    torch.testing.assert_close(c[1], r[1])
    r, c = f(w), torchc.compile(f)(w)
    assert r[0] == c[0] is True
    # an input that does not require grad is a leaf: captured
    x = torch.randn(3)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert captured_whole(ex) and ex.result[0] is True, str(ex)
