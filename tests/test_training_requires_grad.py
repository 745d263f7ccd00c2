"""`x.requires_grad = b` inside a captured training graph (issue 22's target: transformers'
audio feature encoders set `hidden_states.requires_grad = True` on a view of their input in
training). Eager's rules (torch/csrc/autograd/python_variable.cpp): b must be a bool; a
non-leaf raises; True on an integer tensor raises; True on a floating tensor that does not
require grad makes it a leaf that does; False on such a leaf makes it stop. The graph models
it as a leaf node (graph/autograd.c ic_grad_leaf): what is built from it requires grad, no
gradient passes below it. Two-sided: the compiled step is one forward and one backward graph
with no break, and losses and gradients equal eager's over several steps; the cases eager
raises for raise the same error; the cases left to eager say why.
"""
import copy

import pytest
import torch
import torch.nn as nn

import torchc


class FeatureEncoder(nn.Module):
    """wav2vec2's feature encoder shape: a view of the input made a leaf, then convs"""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1 if i == 0 else 4, 4, 3, stride=2) for i in range(2)])
        self._requires_grad = True

    def forward(self, x):
        h = x[:, None]
        if self._requires_grad and self.training:
            h.requires_grad = True
        for c in self.convs:
            h = nn.functional.gelu(c(h))
        return h


class Speech(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = FeatureEncoder()
        self.proj = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.proj(self.drop(self.enc(x).transpose(1, 2)))


@pytest.mark.parametrize("n", [33, 16, 7])
def test_feature_encoder_leaf_trains_whole(n):
    torch.manual_seed(0)
    me = Speech().train()
    mc = copy.deepcopy(me)
    oe = torch.optim.SGD(me.parameters(), lr=0.1, momentum=0.9)
    oc = torch.optim.SGD(mc.parameters(), lr=0.1, momentum=0.9)
    cm = torchc.compile(mc)
    for step in range(4):
        x = torch.randn(2, n, generator=torch.Generator().manual_seed(step))
        torch.manual_seed(10 + step)
        le = me(x).square().mean()
        se = torch.get_rng_state()
        torch.manual_seed(10 + step)
        lc = cm(x).square().mean()
        assert torch.equal(torch.get_rng_state(), se)
        torch.testing.assert_close(lc, le, rtol=1e-6, atol=1e-7)
        for o, l in ((oe, le), (oc, lc)):
            o.zero_grad()
            l.backward()
            o.step()
        for (k, a), b in zip(me.named_parameters(), mc.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6, msg=k)
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=k)
    ex = torchc.explain(cm)(torch.randn(2, n))
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    assert ex.result.requires_grad


def _leaf_uses(x, w):
    h = x.t()[1:]  # a non-contiguous view of the input
    v = h * 1  # made before the store: does not require grad (eager)
    h.requires_grad = True
    return (h * w).sum() + (v * w).sum(), v.requires_grad, h.requires_grad


@pytest.mark.parametrize("shape", [(4, 6), (1, 2), (3, 1), (0, 5)])
def test_leaf_of_a_view_matches_eager(shape):
    x = torch.randn(*shape)
    w = torch.randn(shape[1] - 1, shape[0], requires_grad=True)
    we = w.detach().clone().requires_grad_(True)
    ye, ve, he = _leaf_uses(x, we)
    ex = torchc.explain(_leaf_uses)(x, w)
    yc, vc, hc = ex.result
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    assert vc is ve is False and hc is he is True and yc.requires_grad
    torch.testing.assert_close(yc, ye)
    ye.backward()
    yc.backward()
    torch.testing.assert_close(w.grad, we.grad)


def _leaf_then_off(x, w):
    h = x * 2
    h.requires_grad = True
    a = h * 3
    h.requires_grad = False  # a leaf again stops requiring grad
    h.requires_grad = False  # no change
    b = h * 3
    return (a * w).sum() + (b * w).sum(), a.requires_grad, b.requires_grad


def test_leaf_switched_off_matches_eager():
    x, w = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    want = _leaf_then_off(x, w)
    ex = torchc.explain(_leaf_then_off)(x, w)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    assert ex.result[1:] == want[1:] == (True, False)
    torch.testing.assert_close(ex.result[0], want[0])


def _no_grad_value_made_leaf(x, w):
    with torch.no_grad():
        h = x @ w  # computed from w, but under no_grad: a leaf
    h.requires_grad = True
    return (h.exp() * w.sum()).sum()


def test_value_made_under_no_grad_becomes_leaf():
    x, w = torch.randn(2, 3), torch.randn(3, 3, requires_grad=True)
    we = w.detach().clone().requires_grad_(True)
    ye = _no_grad_value_made_leaf(x, we)
    ex = torchc.explain(_no_grad_value_made_leaf)(x, w)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    torch.testing.assert_close(ex.result, ye)
    ye.backward()
    ex.result.backward()
    torch.testing.assert_close(w.grad, we.grad)


def _method_forms(x, w):
    h = (x * 2).requires_grad_()  # a leaf that requires grad, the tensor itself returned
    z = h * w
    same = z.requires_grad_(True) is z  # a non-leaf: True changes nothing (the method allows it)
    g = (x + 1).requires_grad_(False)  # no change
    return (z * g).sum(), h.requires_grad, same, g.requires_grad


def test_requires_grad_method_matches_eager():
    x, w = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    we = w.detach().clone().requires_grad_(True)
    want = _method_forms(x, we)
    ex = torchc.explain(_method_forms)(x, w)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    assert ex.result[1:] == want[1:] == (True, True, False)
    torch.testing.assert_close(ex.result[0], want[0])
    want[0].backward()
    ex.result[0].backward()
    torch.testing.assert_close(w.grad, we.grad)


# ---- what eager raises for: the same error ------------------------------------------------------

def _nonleaf(x, w):
    h = x * w
    h.requires_grad = True
    return h.sum()


def _int_true(x, w):
    i = x.argmax(-1)
    i.requires_grad = True
    return (x * w).sum()


def _not_bool(x, w):
    h = x * 2
    h.requires_grad = 1
    return (h * w).sum()


def _inplace_on_leaf(x, w):
    h = x * 2
    h.requires_grad = True
    h.add_(1)
    return (h * w).sum()


def _nonleaf_false(x, w):
    h = x * w
    h.requires_grad = False
    return h.sum()


def _nonleaf_method_false(x, w):
    return (x * w).requires_grad_(False).sum()


def _int_method(x, w):
    return x.argmax(-1).requires_grad_().sum() + (x * w).sum()


@pytest.mark.allow_fallback  # eager raises: the trace fails, the frame runs eagerly and raises
@pytest.mark.parametrize("fn", [_nonleaf, _int_true, _not_bool, _inplace_on_leaf, _nonleaf_false,
                                _nonleaf_method_false, _int_method])
def test_raises_as_eager(fn):
    x = torch.randn(3, 4)
    w = torch.randn(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError) as ee:
        fn(x, w)
    ex = torchc.explain(fn)
    with pytest.raises(RuntimeError) as ec:
        ex(x, w)
    assert str(ec.value) == str(ee.value)
    torchc.compile(lambda x, w: (x * w).sum())(x, w)  # (one graph compiles: the test can fail)


# ---- what is left to eager, with the reason ------------------------------------------------------

def _returns_leaf(x, w):
    h = x * 2
    h.requires_grad = True
    return h, (h * w).sum()


def _input_flag(x, w):
    x.requires_grad = True
    return (x * w).sum()


def _no_input_requires_grad(x):
    h = x * 2
    h.requires_grad = True
    return (h * 3).sum()


@pytest.mark.allow_fallback
@pytest.mark.parametrize("fn,why", [(_returns_leaf, "leaves the graph"),
                                    (_input_flag, "changed on an input tensor"),
                                    (_no_input_requires_grad, "no input requires grad")])
def test_left_to_eager_with_reason(fn, why):
    x, w = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    args = (x, w) if fn is not _no_input_requires_grad else (x,)
    argse = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in args)
    want = fn(*argse)
    ex = torchc.explain(fn)(*args)
    assert any(why in r for r in ex.break_reasons), ex.break_reasons
    got = ex.result
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for a, b in zip(got, want):
        assert a.requires_grad == b.requires_grad and a.is_leaf == b.is_leaf
        torch.testing.assert_close(a, b)
    got[-1].backward()
    want[-1].backward()
    if fn is _returns_leaf:
        torch.testing.assert_close(got[0].grad, want[0].grad)
    for a, b in zip(args, argse):
        assert a.requires_grad == b.requires_grad
        if b.grad is not None:
            torch.testing.assert_close(a.grad, b.grad)
    torchc.compile(lambda x: x * 2)(x)  # (one graph compiles: the test can fail)


# ---- a store on a tensor the graph does not take: run eagerly between two graphs -----------------

def _flag_then_use(x, w):
    y = (x * 2).sum()  # the graph before the store
    x.requires_grad = True  # the caller's tensor: the store runs eagerly (a break)
    return y + (x * w).sum()  # the resume: x now requires grad


def test_input_flag_store_breaks_and_resumes():
    x, w = torch.randn(3, 4), torch.randn(3, 4, requires_grad=True)
    xe, we = x.clone(), w.detach().clone().requires_grad_(True)
    ye = _flag_then_use(xe, we)
    ex = torchc.explain(_flag_then_use)(x, w)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    assert x.requires_grad and x.is_leaf
    torch.testing.assert_close(ex.result, ye)
    ye.backward()
    ex.result.backward()
    torch.testing.assert_close(x.grad, xe.grad)
    torch.testing.assert_close(w.grad, we.grad)


def _grad_store(w, x):
    loss = (w * x).sum()
    w.grad = x * 3  # a tensor assigned to .grad: run eagerly between two graphs
    return loss * 2


def test_grad_tensor_store_breaks_and_resumes():
    w, x = torch.randn(4), torch.randn(4)
    we = w.clone()
    want = _grad_store(we, x)
    ex = torchc.explain(_grad_store)(w, x)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    torch.testing.assert_close(w.grad, we.grad)
