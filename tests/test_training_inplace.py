"""In-place updates in training graphs behave as eager (issue 22, deliverable 2).

Eager's autograd keeps some tensors for the backward (mul keeps each operand for the other's
gradient, sin its input, exp its result) and checks their version counters when the backward
unpacks them. A functionalized graph would use the old value silently. torchc:
- ends the graph before an in-place update of a tensor a node carrying a gradient keeps
  (dynamo_hook/train_inplace.c); eager then runs the update;
- saves, in the compiled node, what eager keeps of the graph's inputs and outputs, so that
  their versions are checked at backward (csrc/train.c, ic_autograd.check_in/check_out);
- never lets the backward read an input the graph updated in place (its old value is saved,
  or what is built from it: the partitioner's IC_AG_OVERWRITTEN);
- bumps the version of inputs it updates (the copy-back), so a later eager backward raises.
Every case compares the exception type and message start with eager's (or the gradients),
and the graph/break/backward counts from torchc.explain.
"""
import pytest
import torch
import torch.nn.functional as F

import torchc

MSG = "one of the variables needed for gradient computation has been modified by an inplace operation"


def _outcome(fn, make, after=None):
    torch.manual_seed(0)
    args = make()
    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad and a.is_leaf]
    try:
        out = fn(*args)
        if after is not None:
            after(args, out)
        out = out if isinstance(out, torch.Tensor) else out[0]
        out.sum().backward()
    except Exception as e:  # noqa: BLE001 — the exception is the outcome compared
        return ("raise", type(e), str(e).split(":")[0].split(".")[0])
    return ("ok", out.detach().clone(), [a.grad.clone() for a in leaves], [a.detach().clone() for a in args])


def _same_as_eager(fn, make, after=None, counts=None):
    torchc.reset()
    e = _outcome(fn, make, after)
    c = _outcome(torchc.compile(fn), make, after)
    assert e[0] == c[0], (e, c)
    if e[0] == "raise":
        assert e[1] is c[1] and e[2] == c[2], (e, c)
    else:
        torch.testing.assert_close(c[1], e[1])
        for ge, gc in zip(e[2], c[2]):
            torch.testing.assert_close(gc, ge)
        for ae, ac in zip(e[3], c[3]):
            torch.testing.assert_close(ac, ae)
    if counts is not None:
        torchc.reset()
        ex = torchc.explain(fn)(*make())
        got = (ex.graph_count, ex.graph_break_count, ex.backward_graph_count)
        assert got == counts, (got, ex.break_reasons)
        return ex
    return None


def _xw():
    return torch.randn(5), torch.randn(5, requires_grad=True)


def _nonleaf():
    a = torch.randn(5, requires_grad=True)
    return (a * 1,)


# ---- an update inside the graph of a tensor eager keeps: eager raises at backward --------

def test_saved_operand_updated_in_graph_raises_as_eager():
    def f(x, w):
        y = x * w  # eager keeps x (w's gradient)
        x.add_(1)
        return y
    ex = _same_as_eager(f, _xw, counts=(1, 0, 1))  # (the piece after the break has no op)
    assert any("saved for backward" in r for r in ex.break_reasons), ex.break_reasons
    assert _outcome(torchc.compile(f), _xw)[2] == MSG


def test_saved_intermediate_updated_in_graph_raises_as_eager():
    def f(x):
        y = x * 2
        z = y.sin()  # keeps y
        y.mul_(2)
        return z
    _same_as_eager(f, _nonleaf, counts=(1, 0, 1))


def test_saved_result_updated_in_graph_raises_as_eager():
    def f(x):
        y = x.exp()  # keeps its result
        y.mul_(2)
        return y
    _same_as_eager(f, _nonleaf)


def test_update_through_a_view_of_a_saved_tensor_raises_as_eager():
    def f(x):
        y = x * 2
        z = y.sin()
        y[1:3].mul_(2)  # a view shares y's version counter
        return z
    _same_as_eager(f, _nonleaf)


@pytest.mark.allow_fallback  # eager decides (reason in explain)
def test_input_that_requires_grad_saved_and_updated_raises_as_eager():
    def f(x):
        y = x.sin()
        x.mul_(2)
        return y
    _same_as_eager(f, _nonleaf)


# ---- updates eager accepts stay in one graph ---------------------------------------------

def test_update_of_an_unsaved_operand_stays_one_graph():
    def f(x, w):
        y = (x + w).softmax(-1)  # add keeps nothing
        x.add_(1)
        return y * 3
    _same_as_eager(f, _xw, counts=(1, 0, 1))


def test_update_whose_own_operand_requires_grad_stays_one_graph():
    def f(x, w):
        h = x * 1
        h.mul_(w)  # eager's mul_ keeps a copy of h's old value, not h
        h.add_(w)
        return h.sin()
    _same_as_eager(f, _xw, counts=(1, 0, 1))


def test_update_before_the_read_stays_one_graph():
    def f(x, w):
        x.add_(1)
        return x * w
    _same_as_eager(f, _xw, counts=(1, 0, 1))


def test_inplace_relu_after_linear_stays_one_graph():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)

    def f(x):
        h = lin(x)
        h += 1  # linear keeps x and its weight, not its result
        F.relu(h, inplace=True)
        return h

    _same_as_eager(f, lambda: (torch.randn(2, 4),), counts=(1, 0, 1))


def test_batchnorm_running_stats_train_one_graph():
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(4)
    e = torchc.explain(bn)(torch.randn(6, 4))
    assert (e.graph_count, e.graph_break_count, e.backward_graph_count) == (1, 0, 1), e.break_reasons


def test_old_value_of_an_updated_input_reaches_the_backward():
    # x does not require grad; sin(x) is rebuilt by the backward in the cheap case: it must be
    # the old x's (the graph overwrites x after the forward)
    def f(x, w):
        y = x.sin() * w
        x.add_(1)
        return y
    _same_as_eager(f, _xw, counts=(1, 0, 1))

    def g(x, w):
        y = (x * 2).exp() * w
        x.mul_(3)
        return y
    _same_as_eager(g, _xw, counts=(1, 0, 1))


# ---- updates after the graph (eager code, or another graph) ------------------------------

def _mutate_arg0(args, out):
    args[0].add_(1)


def _mutate_out(args, out):
    out.mul_(2)


def test_kept_input_updated_after_the_graph_raises_as_eager():
    def f(x, w):
        return x * w
    _same_as_eager(f, _xw, after=_mutate_arg0, counts=(1, 0, 1))


def test_kept_output_updated_after_the_graph_raises_as_eager():
    def f(x):
        return x.exp()
    _same_as_eager(f, _nonleaf, after=_mutate_out, counts=(1, 0, 1))


def test_matmul_operand_updated_after_the_graph_raises_as_eager():
    def f(x, w):
        return (x @ w).tanh()
    mk = lambda: (torch.randn(3, 4), torch.randn(4, 2, requires_grad=True))  # noqa: E731
    _same_as_eager(f, mk, after=_mutate_arg0, counts=(1, 0, 1))


def test_unkept_input_updated_after_the_graph_is_fine():
    for f in (lambda x, w: x + w, lambda x, w: (x - w).softmax(-1), lambda x, w: w * 2 + x):
        _same_as_eager(f, _xw, after=_mutate_arg0, counts=(1, 0, 1))


def test_updated_input_new_value_kept_then_updated_again_raises():
    def f(x, w):
        x.add_(1)
        return x * w
    _same_as_eager(f, _xw, after=_mutate_arg0, counts=(1, 0, 1))


def test_graph_update_bumps_the_version_for_an_eager_backward():
    def g(x):
        x.add_(1)
        return x * 2
    cg = torchc.compile(g)
    for fn in (g, cg):
        x = torch.randn(3)
        w = torch.randn(3, requires_grad=True)
        y = x * w  # eager keeps x
        v0 = x._version
        fn(x)
        assert x._version > v0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


# ---- leaves that require grad -------------------------------------------------------------

@pytest.mark.allow_fallback  # eager decides (reason in explain)
@pytest.mark.no_compile
def test_inplace_on_leaf_requiring_grad_raises_as_eager():
    def f(w):
        w.mul_(2)
        return w.sin()
    _same_as_eager(f, lambda: (torch.randn(4, requires_grad=True),))


@pytest.mark.allow_fallback  # eager decides (reason in explain)
def test_inplace_on_view_of_leaf_requiring_grad_raises_as_eager():
    def f(w):
        w[1:3].mul_(2)
        return w.sin()
    _same_as_eager(f, lambda: (torch.randn(4, requires_grad=True),))


@pytest.mark.allow_fallback  # eager decides (reason in explain)
@pytest.mark.no_compile
def test_inplace_on_leaf_under_no_grad_is_fine():
    def f(w, x):
        with torch.no_grad():
            w.mul_(2)
        return (w * x).sin()
    _same_as_eager(f, lambda: (torch.randn(4, requires_grad=True), torch.randn(4)))
    ex = torchc.explain(f)(torch.randn(4, requires_grad=True), torch.randn(4))
    assert any("requires grad is updated" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.allow_fallback  # eager decides (reason in explain)
@pytest.mark.no_compile
def test_inplace_on_leaf_under_no_grad_after_its_use_raises_as_eager():
    def f(w, x):
        y = w.sin()
        with torch.no_grad():
            w.mul_(2)
        return y * x
    _same_as_eager(f, lambda: (torch.randn(4, requires_grad=True), torch.randn(4)))
