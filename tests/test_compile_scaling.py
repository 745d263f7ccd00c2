"""Compile-time scaling (issue 22: "first step < 2 s per model"): work that must stay linear in
the length of a trace, counted in steps (not wall time: the CI machine is slow and shared).

The trace asks whether a value requires grad at almost every op; each answer once walked the
whole graph so far (graph/requires_grad.c compute_need), quadratic in the trace's length
(glm5_next_text's tiny training capture: 8.3 s -> 1.2 s once answered from a memo)."""
import ctypes

import pytest
import torch

import torchc
from torchc import _C

from conftest import captured_whole


def need_steps():
    lib = ctypes.CDLL(_C.__file__)
    lib.ic_test_need_steps.restype = ctypes.c_uint64
    return lib.ic_test_need_steps()


def chain(n):
    ws = [torch.randn(8, requires_grad=True) for _ in range(4)]

    def f(x):
        for i in range(n):
            x = x * ws[i % 4] + 0.5
        return x
    return f, ws


@pytest.mark.parametrize("n", [100, 400])
def test_requires_grad_answers_are_linear(n):
    torchc.reset()
    f, ws = chain(n)
    x = torch.randn(4, 8, requires_grad=True)
    before = need_steps()
    ex = torchc.explain(f)(x)
    steps = need_steps() - before
    assert captured_whole(ex) and ex.graph_count == 1 and ex.backward_graph_count == 1, ex.break_reasons
    # the graph holds ~2n ops (a mul and an add a step); a linear walk visits each value a
    # few times at most (the old per-question walk: ~n^2 steps, 160k at n = 400)
    assert steps <= 20 * n + 200, (n, steps)
    y = ex.result
    y.sum().backward()
    got = [x.grad.clone()] + [w.grad.clone() for w in ws]
    x.grad = None
    for w in ws:
        w.grad = None
    f(x).sum().backward()
    want = [x.grad] + [w.grad for w in ws]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
