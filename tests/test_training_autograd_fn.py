"""torch.autograd.Function subclasses in user code under grad mode (issue 22, deliverable 6):
the forward and the user's backward are captured into the forward and backward graphs
(dynamo_hook/autograd_fn.c, graph/autograd.c's templates), or the call is a graph break with
a reason (the apply runs eagerly) — never a wrong gradient.

Each captured case asserts one forward graph, no break and one backward graph (so a silent
fallback fails it) and compares the loss and every gradient with eager's; float64 gradcheck
where the function is smooth.
"""
import pytest
import torch
from torch.autograd.function import once_differentiable

import torchc


def _captured(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    return ex


def _grads(fn, args):
    for a in args:
        a.grad = None
    out = fn(*args)
    loss = out if out.dim() == 0 else out.sum()
    loss.backward()
    return loss.detach(), [None if a.grad is None else a.grad.clone() for a in args]


def _matches_eager(fn, *args, rtol=1.3e-6, atol=1e-5):
    _captured(fn, *args)
    cf = torchc.compile(fn)
    for _ in range(2):  # the second call runs the cached graphs
        le, ge = _grads(fn, args)
        lc, gc = _grads(cf, args)
        torch.testing.assert_close(lc, le, rtol=rtol, atol=atol)
        for a, b in zip(gc, ge):
            assert (a is None) == (b is None)
            if a is not None:
                torch.testing.assert_close(a, b, rtol=rtol, atol=atol)


def _breaks_with(fn, args, words):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert any(words in r for r in ex.break_reasons), ex.break_reasons
    return ex


class GeluTanh(torch.autograd.Function):
    """BLOOM's GeLUFunction pattern: the input saved, a ctx attribute, a non-tensor argument"""

    @staticmethod
    def forward(ctx, x, scale=1.0):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))) * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        th = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
        ff = 0.5 * x * ((1 - th * th) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + th)
        return ff * g * ctx.scale, None


def test_function_saved_input_ctx_attribute():
    def f(x, w):
        return GeluTanh.apply(x @ w, 2.0) * 3 + 1

    x, w = torch.randn(4, 5, requires_grad=True), torch.randn(5, 3, requires_grad=True)
    _matches_eager(f, x, w)


def test_function_gradcheck_f64():
    def f(x, w):
        return GeluTanh.apply(x * w, 0.5).sin()

    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(4, dtype=torch.float64, requires_grad=True)
    _captured(f, x, w)
    assert torch.autograd.gradcheck(torchc.compile(f), (x, w), eps=1e-6, atol=1e-5, rtol=1e-4)


class ExpSavedOut(torch.autograd.Function):
    """the output saved (the backward reads a forward value made inside the function)"""

    @staticmethod
    def forward(ctx, x):
        y = torch.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def test_function_saved_output_and_twice():
    def f(x):
        return ExpSavedOut.apply(ExpSavedOut.apply(x) * 0.1).sum()

    _matches_eager(f, torch.randn(6, requires_grad=True))


class MulNeeds(torch.autograd.Function):
    """needs_input_grad: gradients only where asked, None elsewhere"""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g * b if ctx.needs_input_grad[0] else None
        gb = g * a if ctx.needs_input_grad[1] else None
        return ga, gb


@pytest.mark.parametrize("which", ["a", "b", "both"])
def test_function_needs_input_grad(which):
    a = torch.randn(3, 4, requires_grad=which in ("a", "both"))
    b = torch.randn(3, 4, requires_grad=which in ("b", "both"))

    def f(a, b):
        return MulNeeds.apply(a, b).tanh()

    _matches_eager(f, a, b)


class SplitMax(torch.autograd.Function):
    """two outputs (one non-differentiable: an index; one marked), one of them unused"""

    @staticmethod
    def forward(ctx, x):
        m = x.amax(dim=1)
        i = x.argmax(dim=1)
        scaled = x * 2
        half = x * 0.5
        ctx.mark_non_differentiable(i, half)
        ctx.save_for_backward(x, i)
        return m, i, scaled, half

    @staticmethod
    def backward(ctx, gm, gi, gs, gh):
        x, i = ctx.saved_tensors
        g = torch.zeros_like(x)
        g = g + (torch.arange(x.shape[1]) == i.unsqueeze(1)).to(x.dtype) * gm.unsqueeze(1)
        return g + 2 * gs + gh  # gh: zeros (a non-differentiable output's gradient)


def test_function_mark_non_differentiable_and_unused_outputs():
    x = torch.randn(4, 5, requires_grad=True)

    def f(x):
        m, i, s, h = SplitMax.apply(x)
        return m.sum() * 3 + i.float().sum() + h.sum()  # s unused: its gradient is zeros

    _matches_eager(f, x)
    m, i, s, h = torchc.compile(lambda x: SplitMax.apply(x))(x)
    assert m.requires_grad and s.requires_grad and not i.requires_grad and not h.requires_grad
    assert i.dtype == torch.int64


class ClampGrad(torch.autograd.Function):
    """once_differentiable, an in-place update of the incoming gradient's copy"""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        gi = g.clone()
        gi[x < 0] = 0
        return gi


def test_function_once_differentiable_setitem():
    def f(x):
        return (ClampGrad.apply(x) ** 2).sum()

    _matches_eager(f, torch.randn(5, 3, requires_grad=True))


class AddBias(torch.autograd.Function):
    """setup_context (new style); the bias's gradient is returned unreduced: eager sums it"""

    @staticmethod
    def forward(x, b):
        return x + b

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.nd = inputs[0].dim()

    @staticmethod
    def backward(ctx, g):
        return g, g * 1.0  # [4, 5] for a [5] bias: summed by the engine


def test_function_setup_context_and_broadcast_gradient():
    def f(x, b):
        return AddBias.apply(x, b).relu()

    _matches_eager(f, torch.randn(4, 5, requires_grad=True), torch.randn(5, requires_grad=True))


class MaskedScale(torch.autograd.Function):
    """a tensor kept as a ctx attribute (not save_for_backward), a float64 gradient returned for
    a float32 input (the engine casts)"""

    @staticmethod
    def forward(ctx, x):
        ctx.mask = x > 0
        return torch.where(ctx.mask, x * 3, x)

    @staticmethod
    def backward(ctx, g):
        return torch.where(ctx.mask, g * 3, g).double()


def test_function_tensor_ctx_attribute_and_cast():
    def f(x):
        return MaskedScale.apply(x).sum()

    _matches_eager(f, torch.randn(7, requires_grad=True))


def test_function_in_a_module_trains_like_eager():
    torch.manual_seed(0)

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(6, 8)
            self.l2 = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.l2(GeluTanh.apply(self.l1(x)))

    me, mc = M(), M()
    mc.load_state_dict(me.state_dict())
    x, y = torch.randn(5, 6), torch.randn(5, 3)
    ex = torchc.explain(mc)(x)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    cm = torchc.compile(mc)
    oe, oc = torch.optim.SGD(me.parameters(), lr=0.1), torch.optim.SGD(mc.parameters(), lr=0.1)
    for _ in range(5):
        for m, call, o in ((me, me, oe), (mc, cm, oc)):
            o.zero_grad()
            torch.nn.functional.mse_loss(call(x), y).backward()
            o.step()
    for pe, pc in zip(me.parameters(), mc.parameters()):
        torch.testing.assert_close(pc, pe, rtol=1e-5, atol=1e-6)


def test_function_without_grad_inputs_needs_no_backward():
    x = torch.randn(4)  # nothing requires grad: apply is its forward

    def f(x):
        return GeluTanh.apply(x, 3.0) + 1

    torchc.reset()
    ex = torchc.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert not ex.result.requires_grad
    torch.testing.assert_close(ex.result, f(x))


# ---- left to eager, with a reason -------------------------------------------------------------
class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_function_mark_dirty_breaks():
    def f(x):
        return Dirty.apply(x.clone()).sum()

    x = torch.randn(3, requires_grad=True)
    ex = _breaks_with(f, (x,), "mark_dirty")
    ex.result.backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))


_OTHER = torch.randn(3)


class ReadsGlobal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * _OTHER  # a tensor the forward never read


def test_function_backward_reading_a_new_tensor_breaks():
    def f(x):
        return ReadsGlobal.apply(x).sum()

    x = torch.randn(3, requires_grad=True)
    ex = _breaks_with(f, (x,), "backward reads a tensor")
    ex.result.backward()
    torch.testing.assert_close(x.grad, _OTHER)


class TooFew(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return g  # one gradient for two inputs: eager raises at backward


def test_function_wrong_gradient_count_raises_as_eager():
    def f(x, y):
        return TooFew.apply(x, y).sum()

    x, y = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError) as want:
        f(x, y).backward()
    _breaks_with(f, (x, y), "gradients for 2 inputs")
    with pytest.raises(RuntimeError) as got:
        torchc.compile(f)(x, y).backward()
    assert str(got.value) == str(want.value)


class WrongShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g.sum(0)  # [3] for a [2, 3] input: not expandable the other way; eager raises


def test_function_wrong_gradient_shape_raises_as_eager():
    def f(x):
        return WrongShape.apply(x).sum()

    x = torch.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        f(x).backward()
    _breaks_with(f, (x,), "another shape")
    with pytest.raises(RuntimeError):
        torchc.compile(f)(x).backward()


@pytest.mark.parametrize("which", ["output", "input"])
def test_function_saved_tensor_updated_in_place_raises_as_eager(which):
    """A tensor the Function saved (its output, or its input) updated in place before the
    backward: eager's backward raises (version check); torchc ends the graph before the update
    (the reason names it), so the update and the backward run eagerly and raise alike."""

    def f(x):
        u = x * 2
        y = ExpSavedOut.apply(u) if which == "output" else GeluTanh.apply(u)
        (y if which == "output" else u).add_(1)
        return y.sum()

    x = torch.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(x).backward()
    ex = _breaks_with(f, (x,), "saved for backward")
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ex.result.backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        torchc.compile(f)(x).backward()
