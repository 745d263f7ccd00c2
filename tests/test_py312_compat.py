"""Constructs whose CPython internals differ between 3.11 and 3.12 (the GPU machine runs 3.12,
CI 3.11): static builtin types' namespaces (3.12: tp_dict NULL), the range iterator's
__reduce__ (3.12: index None, the range starts at the next item), stdlib C types that 3.12 made
heap types (itertools). Each test is differential against eager and
asserts graph/break counts, so a silent fallback (or a crash) fails it on either version."""
import itertools

import pytest
import torch

import torchc
from conftest import assert_same

X = torch.randn(4, 3)


def explain_whole(fn, args_fn):
    """args_fn: fresh arguments for each call (iterators are consumed)"""
    want = fn(*args_fn())
    torchc.reset()
    ex = torchc.explain(fn)(*args_fn())
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert_same(ex.result, want)
    return ex


def test_super_of_a_dict_subclass_reaches_dict_itself():
    # super().__getitem__ / super().get resolve on dict (a static builtin type): 3.12 keeps its
    # namespace outside tp_dict; reading tp_dict there crashed the capture (SIGSEGV)
    class D(dict):
        def __getitem__(self, k):
            return super().__getitem__(k) * 2

        def get2(self, k):
            return super().get(k, 0.0)

    def f(x, d):
        return x * d["a"] + d.get2("b") + d.get2("missing")

    d = D(a=1.5, b=2.0)
    explain_whole(f, lambda: (X, d))
    cf = torchc.compile(f)
    assert_same(cf(X, d), f(X, d))
    d["a"] = 3.0  # a new value: guarded
    assert_same(cf(X, d), f(X, d))


def test_range_iterator_partly_consumed():
    # 3.12 reduces iter(range(...)) after one next() to (iter, (range(1, 5),), None)
    def f(it, x):
        return x * sum(list(it))

    def args():
        it = iter(range(5))
        next(it)
        return it, X

    explain_whole(f, args)
    it, _ = args()
    out = torchc.compile(f)(it, X)
    assert_same(out, X * 10)
    assert list(it) == []  # drained as eager drains it


def test_itertools_classmethod():
    # itertools.chain is a heap type on 3.12 (immutable, like a static type)
    def f(x):
        return sum(itertools.chain.from_iterable([[x, x * 2], [x * 3]]))

    explain_whole(f, lambda: (X,))


def test_unary_plus():
    # +x: 3.11 UNARY_POSITIVE, 3.12 CALL_INTRINSIC_1 INTRINSIC_UNARY_POSITIVE (both fell back:
    # 'CALL_INTRINSIC_1 5 not supported'); a tensor's __pos__ returns the tensor itself
    def f(x):
        y = +x
        return y is x, (+y) * 2 + (+3) + (+2.5) - (+True)

    explain_whole(f, lambda: (X,))
    ex = explain_whole(lambda x: +x.int() + 1, lambda: (X,))
    assert ex.result.dtype == torch.int32


@pytest.mark.allow_fallback  # eager raises: the frame runs eagerly
@pytest.mark.no_compile
def test_unary_plus_of_a_bool_tensor_raises_as_eager():
    def f(x):
        return +(x > 0)

    try:
        f(X)
        raise AssertionError("eager accepted +bool")
    except RuntimeError as e:
        want = str(e)
    try:
        torchc.compile(f)(X)
        raise AssertionError("compiled accepted +bool")
    except RuntimeError as e:
        assert str(e) == want
