"""Outputs of in-place updates (issue 22, deliverable 7): a value that only feeds the update
of an input is stored by the kernels into the input itself (dynamo_hook/train_inplace_store.c);
one the caller can see (returned, or a view of it returned) is a tensor of its own, unchanged
by later runs. tests/test_training_inplace_optim.py checks which updates are stored in place."""
import torch

import torchc


def _run(f, make, n=4):
    cf = torchc.compile(f)
    outs_e, outs_c = [], []
    xe, xc = make(), make()
    for _ in range(n):
        outs_e.append(f(*xe))
        outs_c.append(cf(*xc))
    for a, b in zip(outs_e, outs_c):  # results kept across runs stay as they were
        torch.testing.assert_close(b, a)
    for a, b in zip(xe, xc):
        torch.testing.assert_close(b, a)
    ex = torchc.explain(f)(*make())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons


def _mk():
    torch.manual_seed(0)
    return (torch.randn(64, 33), torch.randn(64, 33))


def test_update_only_buffers_reused_values_right():
    def f(p, g):
        p.mul_(0.9).add_(g * 0.1)
        return p.sum()
    _run(f, _mk)


def test_returned_update_value_not_reused():
    def f(p, g):
        y = p * 0.5 + g
        p.copy_(y)
        return y  # the graph output that also feeds the copy-back
    _run(f, _mk)


def test_returned_view_of_update_value_not_reused():
    def f(p, g):
        y = p * 0.5 + g
        p.copy_(y)
        return y[1:3], y.t()
    _run(f, _mk)


def test_returned_updated_input_is_the_input():
    def f(p, g):
        p.add_(g)
        return p
    cf = torchc.compile(f)
    p, g = _mk()
    r1 = cf(p, g)
    r2 = cf(p, g)
    assert r1 is p and r2 is p
    torch.testing.assert_close(p, _mk()[0] + 2 * _mk()[1])
