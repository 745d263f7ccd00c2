"""Wrong gradients found by the fuzzers and by hand, each reduced to a minimal program:
compiled training graphs give eager's gradients (NaN only where eager's are NaN, None where
eager's are None). Every case compiles a backward graph (checked through torchc.explain)."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import torchc


def _leaves(specs, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for shape, fill in specs:
        t = torch.full(shape, fill) if fill is not None else torch.randn(shape, generator=g)
        out.append(t.requires_grad_(True))
    return out


def _grads(fn, specs, use, seed=0, explain=False):
    """fn's outputs in `use` get random gradients, the others none; (outputs, leaf grads)"""
    xs = _leaves(specs, seed)
    if explain:
        ex = torchc.explain(fn)(*xs)
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
        assert ex.backward_graph_count == 1
        outs = ex.result
    else:
        outs = fn(*xs)
    g = torch.Generator().manual_seed(seed + 100)
    sel = [outs[j] for j in use]
    torch.autograd.backward(sel, [torch.randn(o.shape, generator=g) for o in sel])
    return outs, [x.grad for x in xs]


def _check(fn, specs, use, seed=0):
    oe, ge = _grads(fn, specs, use, seed)
    oc, gc = _grads(torchc.compile(fn), specs, use, seed, explain=True)
    for a, b in zip(oc, oe):
        torch.testing.assert_close(a.detach(), b.detach(), equal_nan=True)
    for i, (a, b) in enumerate(zip(gc, ge)):
        assert (a is None) == (b is None), f"leaf {i}: grad None-ness differs (use {use})"
        if b is not None:
            torch.testing.assert_close(a, b, equal_nan=True, msg=lambda m: f"leaf {i} (use {use}): {m}")


def _subsets(n):
    return [s for k in range(1, n + 1) for s in itertools.combinations(range(n), k)]


# ---- an output with no gradient passes none (eager runs no backward of it) ----------------
# The compiled backward read such an output's gradient as zeros and multiplied it through
# the op's local derivative: sqrt's at 0 is inf, 0 * inf = NaN in x.grad.

def _two(x):
    return x * 2, x.sqrt()


def _three(x, w):
    y = x * w
    return y.exp(), (y.log() * 3).sum(), (x.sqrt() + y) / x


def _chain(x):
    s = x.sqrt()
    return s * 2, s.rsqrt(), x + 1


@pytest.mark.parametrize("use", _subsets(2))
def test_unused_output_sqrt_at_zero(use):
    _check(_two, [((3,), 0.0)], use)


@pytest.mark.parametrize("use", _subsets(3))
def test_unused_outputs_infinite_derivatives(use):
    _check(_three, [((2, 3), 0.0), ((3,), None)], use)


@pytest.mark.parametrize("use", _subsets(3))
def test_unused_outputs_shared_chain(use):
    _check(_chain, [((4,), 0.0)], use)


def test_unused_output_materialized_zero_gradient_is_nan_as_eager():
    # an explicit zero gradient (not None) is multiplied through as eager does
    def run(fn):
        x = torch.zeros(3, requires_grad=True)
        a, b = fn(x)
        torch.autograd.backward([a, b], [torch.ones(3), torch.zeros(3)])
        return x.grad
    want = run(_two)
    assert torch.isnan(want).all()
    torch.testing.assert_close(run(torchc.compile(_two)), want, equal_nan=True)


def test_unused_output_across_calls_and_autograd_grad():
    f = torchc.compile(_two)
    for call in range(3):
        x = torch.zeros(3, requires_grad=True)
        a, b = f(x)
        if call == 1:
            (gx,) = torch.autograd.grad(b.sum(), x)
            assert torch.isinf(gx).all()
        else:
            (gx,) = torch.autograd.grad(a.sum(), x)
            assert torch.equal(gx, torch.full((3,), 2.0))


def test_unused_output_module_loss_and_logits():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x):
            h = self.lin(x).relu()
            return h.sum(), h.sqrt()  # sqrt of the zeros relu made: infinite derivative

    torch.manual_seed(0)
    me = M()
    mc = M()
    mc.load_state_dict(me.state_dict())
    x = torch.randn(5, 4)
    me(x)[0].backward()
    cm = torchc.compile(mc)
    ex = torchc.explain(cm)(x)
    assert ex.backward_graph_count == 1
    ex.result[0].backward()
    for (n, a), (_, b) in zip(mc.named_parameters(), me.named_parameters()):
        torch.testing.assert_close(a.grad, b.grad, msg=lambda m: f"{n}: {m}")


# ---- a sum over no elements is zero --------------------------------------------------------
# The gradient of a broadcast operand is a sum over the broadcast dims, from which a factor
# constant along them is taken out; over an empty batch the factor may be NaN (a batch norm's
# 1 / sqrt(var) of no elements), and 0 * NaN was NaN where eager's sum of nothing is 0
# (grad fuzz seed 4214808 program 71: batch_norm's weight.grad).

@pytest.mark.parametrize("shape", [(0, 1), (0, 3), (0, 2, 5), (0, 3, 2, 2)])
def test_batch_norm_training_empty_batch_weight_grad(shape):
    c = shape[1]

    def f(x, w, b):
        return (F.batch_norm(x, None, None, w, b, training=True) * 1.5).sum(0)
    _check(f, [(shape, None), ((c,), None), ((c,), None)], (0,))


def test_two_batch_norms_empty_batch_dead_second():
    # the fuzz program as found: the second batch norm's result is dead, sigmoid_ in place
    def prog(x1, p3, p6):
        v2 = -x1
        v4 = F.batch_norm(v2, None, None, p3, None, training=True)
        v5 = v4 * 1.5
        v5.sigmoid_()
        F.batch_norm(v5, None, None, p6, None, training=True)
        return (torch.mean(v4[:, 1:3], -2, True),)
    _check(prog, [((0, 1), None), ((1,), None), ((1,), None)], (0,))


def test_factor_over_empty_dim_nan():
    # the factor (a mean over nothing: NaN) is constant along the summed dim, which is empty
    def f(x, w):
        return (x * (w * x.mean(0))).sum(0), w * 2
    _check(f, [((0, 3), None), ((3,), None)], (0, 1))


# ---- an in-place update of an empty intermediate stays in the graph -------------------------
# An empty [2, 0] value has strides (0, 1); the capture took it for an expand (elements sharing
# memory) and broke the graph before v6.clamp_, whose eager run then bumped the version of an
# output the compiled backward had saved: "modified by an inplace operation" where eager runs
# (grad fuzz seed 90210 program 119).

@pytest.mark.parametrize("n", [0, 3])
def test_inplace_on_empty_layer_norm_result(n):
    def f(x1, p3, p4):
        v2 = torch.stack([x1, x1], 0)
        v6 = F.layer_norm(v2, (x1.shape[0],), p3, p4, eps=1e-5) * 1.5
        v6.clamp_(-1, 1)
        return v6, v2
    _check(f, [((n,), None), ((n,), None), ((n,), None)], (0, 1))
