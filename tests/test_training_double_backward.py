"""Double backward through a compiled training graph (issue 22 item 4): a backward with
create_graph=True replays the forward graph's ops eagerly with autograd (torchc/_autograd.py),
so gradient penalties, Hessian-vector products and MAML-style inner loops get eager's values
on the first call; the frame then runs eagerly. A graph that cannot be replayed soundly (a
no_grad region, a custom autograd.Function, a random op, an input updated in place since the
forward) keeps the clear error, never a silently wrong second-order term."""
import copy
import gc
import weakref

import pytest
import torch
import torch.nn as nn

import torchc
from conftest import assert_same

F64 = dict(rtol=1e-10, atol=1e-12)


def _train_compiled(ex):
    assert ex.backward_graph_count == 1, ex
    assert not ex.break_reasons, ex.break_reasons


def _marked_eager(fn, *args):
    """the compiled node's backward ran with create_graph: the frame now runs eagerly"""
    ex = torchc.explain(fn)(*args)
    assert any("create_graph" in r for r in ex.break_reasons), ex.break_reasons


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3), nn.Softplus()).double()


def _cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Tanh(),
                         nn.Conv2d(4, 3, 3, stride=2), nn.Flatten()).double()


def _penalty(model, x):
    x = x.detach().clone().requires_grad_(True)
    out = model(x)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    loss = out.pow(2).mean() + (g.flatten(1).norm(dim=1) - 1).pow(2).mean()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.allow_fallback  # after the double backward the frame runs eagerly (by design)
@pytest.mark.parametrize("make,shape", [(_mlp, (4, 5)), (_cnn, (3, 2, 6, 6))])
def test_gradient_penalty_first_call_matches_eager(make, shape):
    me = make()
    mc = copy.deepcopy(me)
    torch.manual_seed(1)
    x = torch.randn(*shape, dtype=torch.float64)
    cm = torchc.compile(mc)
    ex = torchc.explain(mc)(x.clone().requires_grad_(True))  # compiled, with a backward graph
    _train_compiled(ex)
    me(x)  # the same running-statistics update as explain's call made in mc
    for p in mc.parameters():
        p.grad = None
    le, ge = _penalty(me, x)
    lc, gc_ = _penalty(cm, x)  # the first create_graph call of a compiled training graph
    assert_same(lc, le, **F64)
    for a, b in zip(gc_, ge):
        assert_same(a, b, **F64)
    for p in mc.parameters():
        p.grad = None
    for p in me.parameters():
        p.grad = None
    lc2, gc2 = _penalty(cm, x)  # later calls: eager, right
    le2, ge2 = _penalty(me, x)
    assert_same(lc2, le2, **F64)
    for a, b in zip(gc2, ge2):
        assert_same(a, b, **F64)
    if any(isinstance(m, nn.BatchNorm2d) for m in me.modules()):
        bn_e = [m for m in me.modules() if isinstance(m, nn.BatchNorm2d)][0]
        bn_c = [m for m in mc.modules() if isinstance(m, nn.BatchNorm2d)][0]
        assert_same(bn_c.running_mean, bn_e.running_mean, **F64)
        assert_same(bn_c.running_var, bn_e.running_var, **F64)
    _marked_eager(mc, x.clone().requires_grad_(True))


@pytest.mark.allow_fallback
def test_hvp_by_double_grad_first_call():
    torch.manual_seed(0)
    w = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    x = torch.randn(3, 6, dtype=torch.float64)
    v = torch.randn(6, 4, dtype=torch.float64)

    def loss(w):
        return torch.sigmoid(x @ w).pow(3).sum() + (w * w).exp().mean()

    ex = torchc.explain(loss)(w)
    _train_compiled(ex)
    cl = torchc.compile(loss)
    (g,) = torch.autograd.grad(cl(w), w, create_graph=True)
    (hv,) = torch.autograd.grad((g * v).sum(), w)
    ref = torch.autograd.functional.hvp(loss, w, v)[1]
    assert_same(hv, ref, **F64)
    assert_same(g.detach(), torch.autograd.grad(loss(w), w)[0], **F64)
    _marked_eager(loss, w)


@pytest.mark.allow_fallback
def test_create_graph_grad_wrt_params_maml_step():
    # MAML-style: an inner step w' = w - lr * dL/dw with create_graph, an outer loss at w'
    torch.manual_seed(0)
    w0 = torch.randn(5, 3, dtype=torch.float64)
    xa, xb = torch.randn(4, 5, dtype=torch.float64), torch.randn(4, 5, dtype=torch.float64)

    def inner(w, x):
        return torch.tanh(x @ w).pow(2).sum()

    ci = torchc.compile(inner)
    res = []
    for fn in (inner, ci):
        w = w0.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(fn(w, xa), w, create_graph=True)
        w1 = w - 0.1 * g
        outer = torch.tanh(xb @ w1).sum()
        res.append(torch.autograd.grad(outer, w)[0])
    assert_same(res[1], res[0], **F64)
    _marked_eager(inner, w0.clone().requires_grad_(True), xa)


@pytest.mark.allow_fallback
def test_no_grad_region_and_detach_first_call():
    # stop-gradient values are detached in the replay: no extra second-order term
    def f(x):
        with torch.no_grad():
            s = (x * x).sum()
        return (x.tanh() * s * x.detach().exp()).sum()

    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    ex = torchc.explain(f)(x)
    _train_compiled(ex)
    (g,) = torch.autograd.grad(ex.result, x, create_graph=True)
    g.pow(2).sum().backward()
    xe = x.detach().clone().requires_grad_(True)
    (ge,) = torch.autograd.grad(f(xe), xe, create_graph=True)
    ge.pow(2).sum().backward()
    assert_same(g.detach(), ge.detach(), **F64)
    assert_same(x.grad, xe.grad, **F64)


@pytest.mark.allow_fallback
def test_dropout_keeps_clear_error():
    # a replay would draw another mask: the clear error, never a silently wrong value
    def f(x):
        return torch.nn.functional.dropout(x.tanh(), 0.5, training=True).sum()

    x = torch.randn(8, dtype=torch.float64, requires_grad=True)
    ex = torchc.explain(f)(x)
    _train_compiled(ex)
    (g,) = torch.autograd.grad(ex.result, x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward"):
        g.sum().backward()


class _STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, g):
        return g


@pytest.mark.allow_fallback
def test_custom_function_keeps_clear_error():
    def f(x):
        return (_STE.apply(x) * x).tanh().sum()

    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    ex = torchc.explain(f)(x)
    _train_compiled(ex)
    (g,) = torch.autograd.grad(ex.result, x, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward"):
        g.sum().backward()


@pytest.mark.allow_fallback
def test_input_updated_in_place_after_forward_never_silently_wrong():
    # x is not kept by eager's autograd (it keeps exp(x)); a replay would read the new x:
    # refused (the clear error)
    w = torch.randn(4, dtype=torch.float64, requires_grad=True)
    x = torch.randn(4, dtype=torch.float64)

    def f(w, x):
        return (torch.sin(w) * x.exp()).sum()

    ex = torchc.explain(f)(w, x)
    _train_compiled(ex)
    out = ex.result
    x.mul_(2)
    with pytest.raises(RuntimeError, match="double backward|modified by an inplace"):
        (g,) = torch.autograd.grad(out, w, create_graph=True)
        g.sum().backward()


def test_plain_backward_unchanged_and_keeps_no_inputs():
    # no create_graph: compiled forward and backward, and after backward the node keeps no
    # reference to the forward's inputs (as eager frees what it saved)
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
    me = copy.deepcopy(m)
    cm = torchc.compile(m)
    x = torch.randn(5, 6)
    ex = torchc.explain(m)(x)
    _train_compiled(ex)
    ex.result.sum().backward()
    for p in m.parameters():
        p.grad = None
    xi = torch.randn(5, 6)
    ref = weakref.ref(xi)
    loss = cm(xi).sum()
    loss.backward()
    me(xi).sum().backward()
    for a, b in zip(m.parameters(), me.parameters()):
        assert_same(a.grad, b.grad, rtol=1e-5, atol=1e-6)
    del xi
    gc.collect()
    assert ref() is None  # loss (and its graph) alive, the input not kept
    ex2 = torchc.explain(m)(x)
    _train_compiled(ex2)  # still compiled
