"""Training gaps of benchmarks/sweep_tiny.py --train (issue 22: a model captured whole in
inference is captured whole in training), reduced to plain torch: the forward captured whole
with one backward graph, the outputs and every leaf's .grad (None where eager's is None) equal
to eager's.

- longformer/led: x[region] = full_like(x[region], -inf).where(mask, x[region]) on a matmul's
  result: where() keeps only its condition for the backward (derivatives.yaml), so the update
  is no in-place change of a tensor saved for backward (the graph ended there before);
- groupvit in train(): gumbel_softmax draws from torch.distributions.Gumbel with argument
  validation on (the default): torch._is_all_true of a check of constant parameters folds,
  torch.Size(...) calls, a property subclass (constraints.dependent_property) and a
  module-level constraint object (constraints.real) are captured.
"""
import collections
import sys

import pytest
import torch
from torch.distributions import constraints

import torchc
from conftest import assert_same, captured_whole


def _run(fn, leaves, args, compiled, seed):
    for p in leaves:
        p.grad = None
    torch.manual_seed(seed)
    ex = None
    if compiled:
        torchc.reset()
        ex = torchc.explain(fn)(*args)
        out = ex.result
    else:
        out = fn(*args)
    g = torch.Generator().manual_seed(7)
    (out * torch.randn(out.shape, generator=g).to(out.device)).sum().backward()
    return ex, out.detach(), [None if p.grad is None else p.grad.clone() for p in leaves]


def _check(fn, leaves, *args, seed=0):
    _, oe, ge = _run(fn, leaves, args, False, seed)
    ex, oc, gc = _run(fn, leaves, args, True, seed)
    assert captured_whole(ex) and ex.graph_count == 1 and ex.backward_graph_count == 1, str(ex)
    assert not ex.break_reasons, ex.break_reasons
    torch.testing.assert_close(oc, oe, equal_nan=True)
    for i, (a, b) in enumerate(zip(gc, ge)):
        assert (a is None) == (b is None), f"leaf {i}: .grad {a is None} vs eager's {b is None}"
        if b is not None:
            torch.testing.assert_close(a, b, equal_nan=True)
    return ex


# ---- where() saves only its condition ------------------------------------------------------

def _mask_invalid(x, n):
    """longformer's _mask_invalid_locations: -inf in the corners, written into x in place"""
    m = x.new_ones(n, n + 1).tril().flip(dims=[0])[None, :, None, :]
    end = m.flip(dims=(1, 3))
    b = x[:, :n, :, : n + 1]
    x[:, :n, :, : n + 1] = torch.full_like(b, -float("inf")).where(m.expand(b.size()).bool(), b)
    e = x[:, -n:, :, -(n + 1):]
    x[:, -n:, :, -(n + 1):] = torch.full_like(e, -float("inf")).where(end.expand(e.size()).bool(), e)


@pytest.mark.parametrize("n", [1, 2])
def test_where_update_of_matmul_result(n):
    def f(q, k):
        s = torch.einsum("bxd,byd->bxy", q, k)
        d = s.new_zeros(2, 8, 2, 5)
        d[:, :, :, :] = s.view(2, 8, 2, 5)
        _mask_invalid(d, n)
        return d.softmax(-1)
    q = torch.randn(2, 8, 4, requires_grad=True)
    k = torch.randn(2, 10, 4, requires_grad=True)
    _check(f, [q, k], q, k)


def test_where_operand_updated_after():
    """a where() operand updated in place after it: eager's backward does not read it"""
    w = torch.nn.Parameter(torch.randn(6))

    def f(x, m):
        y = x * w
        z = torch.where(m, y, 0.0)
        y.add_(1.0)
        return z * 2 + y
    x = torch.randn(6)
    m = torch.rand(6) > 0.5
    _check(f, [w], x, m)


def test_saved_operand_update_still_raises():
    """exp keeps its result, mul its operands: an update of one makes eager's backward raise,
    and the compiled call's too"""
    w = torch.nn.Parameter(torch.randn(4))

    def f(x):
        y = x.exp()  # exp keeps its result
        z = y * w
        y.mul_(2)
        return z

    x = torch.randn(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(x).sum().backward()
    ex = torchc.explain(f)(x)
    assert ex.graph_count >= 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ex.result.sum().backward()


# ---- torch.distributions in train() (gumbel_softmax) --------------------------------------

def _gumbel_softmax(logits, tau=0.5, dim=-2):
    g = torch.distributions.gumbel.Gumbel(torch.full((), 0.0, device=logits.device, dtype=logits.dtype),
                                          torch.full((), 1.0, device=logits.device, dtype=logits.dtype))
    y = ((logits + g.sample(logits.shape)) / tau).softmax(dim)
    idx = y.max(dim, keepdim=True)[1]
    hard = torch.zeros_like(logits).scatter_(dim, idx, 1.0)
    return hard - y.detach() + y


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs CUDA"))])
@pytest.mark.parametrize("validate", [True, False])
def test_gumbel_softmax_distribution(validate, device):
    old = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(validate)
    try:
        w = torch.nn.Parameter(torch.randn(5, 7, device=device))
        x = torch.randn(3, 5, 7, device=device, requires_grad=True)
        _check(lambda x: _gumbel_softmax(x * w), [w, x], x, seed=3)
    finally:
        torch.distributions.Distribution.set_default_validate_args(old)


def test_is_all_true_of_a_computed_tensor():
    def f(x):
        return torch._is_all_true(x > 0), torch._is_any_true(x > 2), (x < 5)._is_all_true()
    for x in (torch.randn(5), torch.rand(2, 3) + 0.1, torch.full((4,), 3.0)):
        torchc.reset()
        ex = torchc.explain(f)(x)
        assert captured_whole(ex), str(ex)
        assert_same(ex.result, f(x))


class _Prop(property):
    pass


class _Holder:
    def __init__(self, k):
        self.k = k

    @_Prop
    def twice(self):
        return self.k * 2


class _Cfg:
    def __init__(self):
        self.scale = 2.0


CFG = _Cfg()


class _Table(collections.OrderedDict):
    pass


TABLE = _Table(a=2.0)


def test_property_subclass_and_module_instance():
    mod = sys.modules[__name__]

    def f(x):
        return x * _Holder(3).twice * mod.CFG.scale * mod.TABLE["a"] + constraints.real.event_dim
    cf = torchc.compile(f)
    x = torch.randn(4)
    ex = torchc.explain(f)(x)
    assert captured_whole(ex), str(ex)
    torch.testing.assert_close(cf(x), f(x))
    CFG.scale = 3.0  # guarded: the next call sees them
    TABLE["a"] = 5.0
    try:
        torch.testing.assert_close(cf(x), f(x))
    finally:
        CFG.scale = 2.0
        TABLE["a"] = 2.0


def test_torch_size_calls():
    def f(x):
        s = torch.Size(x.shape + torch.Size((2,)))
        t = torch.Size([x.shape[0], 3])
        return x.new_zeros(s) + x[..., None], x.new_ones(t), torch.Size()
    x = torch.randn(3, 4)
    ex = torchc.explain(f)(x)
    assert captured_whole(ex) and not ex.break_reasons, str(ex)
    got, want = ex.result, f(x)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])
    assert got[2] == want[2] and type(got[2]) is torch.Size


def test_torch_size_of_symbolic_sizes():
    def f(x):
        return x.new_zeros(torch.Size((x.shape[0], 2))) + x[:, :1]
    cf = torchc.compile(f, dynamic=True)
    for n in (3, 5):
        x = torch.randn(n, 4)
        torch.testing.assert_close(cf(x), f(x))
    ex = torchc.explain(f, dynamic=True)(torch.randn(6, 4))
    assert captured_whole(ex) and not ex.break_reasons, str(ex)
