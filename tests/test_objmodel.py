"""The Python object model under torchc: user classes with __getattr__, context variables,
lists with identity and mutation, sets. Each test compares with eager (values and the
state of the objects the caller holds) and asserts the code was compiled (graph count,
no break), so a silent fallback fails it."""
import contextvars

import torch

import torchc
from conftest import assert_same


def whole(fn, *args, graphs=1):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert_same(ex.result, want)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex
    return ex


class Lazy:
    """__getattr__ in Python: runs once per read in eager, so it must under torchc."""
    def __init__(self):
        self.log = 0
        self.base = 3.0

    def __getattr__(self, name):
        if name.startswith("scale"):
            return self.base * (len(name) - 4)
        raise AttributeError(name)


def test_getattr_runs_as_often_as_in_eager():
    calls = []

    class Counting:
        def __getattr__(self, name):
            calls.append(name)
            return 2.0

    o = Counting()

    def f(x, o):
        return x * o.scale

    cf = torchc.compile(f)
    for _ in range(3):
        assert_same(cf(torch.ones(2), o), torch.ones(2) * 2.0)
    assert calls == ["scale"] * 3


def test_getattr_inlined_and_guarded():
    def f(x, o):
        return x * o.scale + o.scale2 + o.base

    o = Lazy()
    whole(f, torch.randn(4), o)
    cf = torchc.compile(f)
    o.base = 5.0                      # read through the inlined __getattr__: guarded
    assert_same(cf(torch.ones(2), o), f(torch.ones(2), o))
    o.scale = 100.0                   # now an instance attribute: __getattr__ no longer runs
    assert_same(cf(torch.ones(2), o), f(torch.ones(2), o))


FLAG = contextvars.ContextVar("flag", default=None)


def test_contextvar_get_outside_the_trace_is_guarded():
    def f(x):
        v = FLAG.get()
        return x * 2 if v is None else x * v

    cf = torchc.compile(f)
    x = torch.randn(3)
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert_same(cf(x), x * 2)
    tok = FLAG.set(3)
    try:
        assert_same(cf(x), x * 3)
    finally:
        FLAG.reset(tok)
    assert_same(cf(x), x * 2)
