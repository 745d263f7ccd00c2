"""In-place updates of a training graph's inputs (issue 22, functionalized training graphs):
x[i] = v, x.masked_fill_(m, 0), x += y, x.copy_(y) on an activation passed in that requires grad
(or a view of it, or a tensor that does not require grad given a value that does) are captured:
the forward computes the new value, the backward flows through it, and the tensor ends with
eager's value, version counter and (in effect) history: every gradient upstream equals eager's,
a later in-place update of what eager keeps makes the backward raise as eager's does. A leaf that
requires grad (or a view of one) raises eager's error. Differential against eager; each case
must be captured whole with one backward graph."""
import re

import pytest
import torch

import torchc
from conftest import captured_whole


def _run(fn, make, mutated):
    """fn's outputs, the mutated inputs' values, versions bumped, requires_grad/is_leaf flags,
    and the gradients of a loss over both w.r.t. the leaves make() returns"""
    torch.manual_seed(0)
    leaves, args, *after = make()
    v0 = [a._version for a in args]
    out = fn(*args)
    outs = out if isinstance(out, tuple) else (out,)
    g = torch.Generator().manual_seed(1)
    loss = sum((o * torch.rand(o.shape, generator=g).to(o.device)).sum() for o in outs)
    for t in [args[i] for i in mutated] + after:  # (after: what the caller reads after the call)
        loss = loss + (t * torch.rand(t.shape, generator=g).to(t.device)).sum()
    flags = [(a.requires_grad, a.is_leaf, a.grad_fn is None) for a in args]
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return ([o.detach() for o in outs], [args[i].detach().clone() for i in mutated],
            [a._version - v for a, v in zip(args, v0)], flags, grads)


def _check(fn, make, mutated):
    torchc.reset()
    torch.manual_seed(0)
    ex = torchc.explain(fn)(*make()[1])
    assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
    want = _run(fn, make, mutated)
    cf = torchc.compile(fn)
    for _ in range(2):  # the first call and a cache hit
        got = _run(cf, make, mutated)
        for w, c in zip(want[0] + want[1], got[0] + got[1]):
            torch.testing.assert_close(c, w)
        assert got[2] == want[2]  # version counters
        assert got[3] == want[3]  # requires_grad, is_leaf, grad_fn is None
        for w, c in zip(want[4], got[4]):
            assert (w is None) == (c is None)
            if w is not None:
                torch.testing.assert_close(c, w)


def _setitem_fill_add(x, y):
    x[:, 0] = y.sum(-1)
    x.masked_fill_(x > 0.5, 0.0)
    x += y
    return (x * 2).sum(0)


@pytest.mark.parametrize("shape", [(4, 3), (1, 1), (0, 3)])
def test_setitem_masked_fill_iadd_of_a_non_leaf(shape):
    def make():
        a = torch.randn(shape, requires_grad=True)
        y = torch.randn(shape, requires_grad=True)
        return [a, y], [a * 1.5, y]
    _check(_setitem_fill_add, make, [0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_setitem_masked_fill_iadd_of_a_non_leaf_cuda():
    def make():
        a = torch.randn(4, 3, device="cuda", requires_grad=True)
        y = torch.randn(4, 3, device="cuda", requires_grad=True)
        return [a, y], [a * 1.5, y]

    def f(x, y):
        x[:, 0] = y.sum(-1)
        x.masked_fill_(x > 0.5, 0.0)
        x += y
        return (x * 2).sum(0)

    _check(f, make, [0])
    _check(lambda x, y: _setitem_fill_add(x.t(), y.t()), make, [0])  # through views


def test_update_of_a_view_passed_in_non_contiguous():
    # x is a transposed view of an activation: eager rewrites the base's history (CopySlices);
    # the loss reads the base after the call
    def make():
        a = torch.randn(3, 5, requires_grad=True)
        y = torch.randn(5, 3, requires_grad=True)
        base = a + 1
        return [a, y], [base.t(), y], base

    def f(x, y):
        x[1:] *= y[1:].sigmoid()
        return x.sum(1)

    _check(f, make, [0])


@pytest.mark.parametrize("calls", [1, 2])
def test_update_of_a_slice_of_a_larger_base(calls):
    # x is one row of a non-leaf base: the base's gradient outside the row must still reach the
    # base's old history (CopySlices sends it there only with the old row's gradient defined);
    # torchc.scan's fallback loop runs such a body once per row
    w = torch.randn(3, 3)

    def make():
        a = torch.randn(4, 2, 3, requires_grad=True)
        base = a * 1.5
        return [a], [base[0], torch.zeros(2, 3)], base

    def f(x, h):
        x.mul_(2)
        return torch.tanh(h @ w + x)

    _check(f, make, [0])
    a = torch.randn(4, 2, 3, requires_grad=True)
    for fn in (f, torchc.compile(f)):
        base, h = a * 1.5, torch.zeros(2, 3)
        for t in range(calls):
            h = fn(base[t], h)
        g = torch.autograd.grad(h.sum() + (base * torch.arange(24.0).view(4, 2, 3)).sum(), a)[0]
        if fn is f:
            want = g
    torch.testing.assert_close(g, want)


def test_buffer_given_a_value_that_requires_grad():
    # a tensor that does not require grad (made before a graph break, say) updated with one
    # that does: it requires grad afterwards and the gradient reaches the value
    def make():
        h = torch.randn(2, 4, requires_grad=True)
        return [h], [torch.zeros(2, 6), h]

    def f(buf, h):
        buf[:, 1:5] = h.tanh()
        buf[:, 0] += 1.0
        return buf.sum(1)

    _check(f, make, [0])


def test_copy_from_another_input_and_return_the_input():
    def make():
        a = torch.randn(3, 4, requires_grad=True)
        y = torch.randn(3, 4, requires_grad=True)
        return [a, y], [a * 2, y, torch.randn(3, 4)]

    def f(x, y, z):
        z.copy_(y)  # the new value is another input's old one
        x.add_(y).mul_(z)
        return x

    _check(f, make, [0, 2])


def _versions_seen_by_backward(fn):
    """eager's and fn's error for a backward after a later in-place update of a tensor saved
    for it (the message names the versions)"""
    a = torch.randn(4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    x = a.exp()  # ExpBackward keeps its result, x: fn's update of x must be seen
    out = fn(x, w)
    with pytest.raises(RuntimeError) as e1:
        out.sum().backward()
    x2 = a * 1.0
    out = fn(x2, w)  # MulBackward keeps the updated x2 ...
    with torch.no_grad():
        x2.add_(1)  # ... so this update makes the backward raise
    with pytest.raises(RuntimeError) as e2:
        out.sum().backward()
    return [re.search(r"\[(.*)\].*is at version (\d+); expected version (\d+)", str(e.value)).groups()
            for e in (e1, e2)]


def test_version_counters_seen_by_autograd():
    def f(x, w):
        x.mul_(2)
        return x * w

    want = _versions_seen_by_backward(f)
    got = _versions_seen_by_backward(torchc.compile(f))
    assert got == want  # (the node named differs: torchc's Write, eager's Mul)


def test_leaf_that_requires_grad_raises_eagers_error():
    def f(x, y):
        x.masked_fill_(y > 0, 0.0)
        return x * y

    def g(x):
        x[0] = 1.0
        return x * 2

    cf, cg = torchc.compile(f), torchc.compile(g)
    y = torch.randn(3)
    for fn, msg in ((f, "a leaf Variable that requires grad is being used in an in-place operation."),
                    (g, "a view of a leaf Variable that requires grad is being used in an in-place operation.")):
        args = (torch.randn(3, requires_grad=True), y)[: fn.__code__.co_argcount]
        cfn = cf if fn is f else cg
        for call in (fn, cfn):
            with pytest.raises(RuntimeError, match=msg):
                call(*args)
        # a view of a leaf passed in
        leaf = torch.randn(2, 3, requires_grad=True)
        for call in (fn, cfn):
            with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
                call(leaf[1], *args[1:])
        # the same entry serves a non-leaf
        a = torch.randn(3, requires_grad=True)
        r, c = fn(a * 1, *args[1:]), cfn(a * 1, *args[1:])
        torch.testing.assert_close(c, r)
    ex = torchc.explain(f)(torch.randn(3, requires_grad=True) * 1, y)
    assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)


class _XSoftmax(torch.autograd.Function):
    # sew-d's/DeBERTa's masked softmax: masked_fill_ of its own result, and a backward that
    # calls torch._softmax_backward_data
    @staticmethod
    def forward(ctx, x, mask, dim):
        ctx.dim = dim
        rmask = ~mask.to(torch.bool)
        out = torch.softmax(x.masked_fill(rmask, torch.finfo(x.dtype).min), dim)
        out.masked_fill_(rmask, 0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return torch._softmax_backward_data(g, out, ctx.dim, out.dtype), None, None


@pytest.mark.parametrize("shape", [(2, 3, 6), (1, 1, 1)])
def test_custom_function_backward_with_softmax_backward_data(shape):
    def f(x, w, mask):
        return _XSoftmax.apply(x * w, mask, -1) * 3, torch._softmax_backward_data(x, w.expand_as(x), 1, x.dtype)

    def make():
        x = torch.randn(shape, requires_grad=True)
        w = torch.randn(shape[-1], requires_grad=True)
        return [x, w], [x, w, (torch.randn(shape) > 0).int()]

    _check(f, make, [])
