"""Python object model gaps found on real models (issue 21): module hook dicts, classes made
inside the compiled frame, recursive nested functions, copy.deepcopy of plain objects, break
reasons and their counts. Each test compares with eager and asserts torchc.explain's graph and
break counts, so a silent fallback fails it."""
import copy

import sys

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


# ---- copy.deepcopy of a plain object graph (a config copied in forward)

class _Inner:
    def __init__(self):
        self.scale = 0.5
        self.names = ["a", "b"]


class _Cfg:
    def __init__(self):
        self.width = 3
        self.id2label = {0: "neg", 1: "pos"}
        self.inner = _Inner()
        self.dtype = torch.float32
        self.shared = self.inner.names  # shared in the original: shared in the copy


def test_deepcopy_of_a_config_object():
    cfg = _Cfg()

    def f(x):
        c = copy.deepcopy(cfg)
        c.width = c.width + 1
        c.inner.names.append("c")
        return x * c.width * c.inner.scale + len(c.shared) + len(c.id2label), c

    x = torch.randn(2, 3)
    got, want = whole(f, x)
    assert_same(got[0], want[0])
    c = got[1]
    assert type(c) is _Cfg and c is not cfg and c.width == 4 and c.inner.names == ["a", "b", "c"]
    assert c.shared is c.inner.names and cfg.inner.names == ["a", "b"] and cfg.width == 3
    cf = torchc.compile(f)
    r1, r2 = cf(x), cf(x)
    assert r1[1] is not r2[1] and r1[1].inner is not r2[1].inner
    cfg.inner.scale = 2.0  # a changed original: the copy's value is guarded
    assert_same(cf(x)[0], f(x)[0])


def test_deepcopy_of_a_transformers_config():
    tf = pytest.importorskip("transformers")
    cfg = tf.T5Config(d_model=8, num_layers=1, num_heads=2, d_ff=16, vocab_size=32)

    def f(x):
        c = copy.deepcopy(cfg)
        c.is_decoder = True
        return x * c.d_model + c.num_heads, c.is_decoder, cfg.is_decoder

    x = torch.randn(4)
    got, want = whole(f, x)
    assert_same(got, want)


@pytest.mark.allow_fallback
def test_deepcopy_after_a_write_is_not_hoisted():
    cfg = _Cfg()

    def f(x):
        cfg.width = cfg.width + 1  # the copy must see this write
        c = copy.deepcopy(cfg)
        return x * c.width

    x = torch.randn(3)
    want = f(x)
    cfg.width = 3
    got = torchc.compile(f)(x)
    assert_same(got, want) and cfg.width == 4


# ---- class statements inside the compiled frame (LOAD_BUILD_CLASS)

class _Base:
    k = 3.0

    def scale(self, t):
        return t * self.k


def test_class_defined_in_the_frame():
    def f(x, n):
        class Acc(_Base):
            """doc"""
            k = 2.0

            def __init__(self, t):
                self.t = t

            def scale(self, t):
                return super().scale(t) + 1  # the __class__ cell

            @property
            def double(self):
                return self.t * 2

            @staticmethod
            def bias(i):
                return i + 0.5

        a = Acc(x)
        return a.scale(a.double) + Acc.bias(n), Acc.__name__, Acc.__qualname__, isinstance(a, _Base)

    x = torch.randn(3)
    got, want = whole(f, x, 2)
    assert_same(got[0], want[0])
    assert got[1:] == want[1:]


def test_class_closing_over_a_constant():
    def f(x, p):
        class Holder:
            def get(self):
                return p  # a free variable of the class body's methods

        return x * Holder().get()

    x = torch.randn(4)
    got, want = whole(f, x, 3)
    assert_same(got, want)


_GLOBAL_SCALE = 4.0


@pytest.mark.allow_fallback
def test_class_body_reading_a_global_breaks_with_a_reason():
    def f(x):
        y = x + 1

        class C:
            s = _GLOBAL_SCALE

        return y * C.s

    x = torch.randn(3)
    want = f(x)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert_same(ex.result, want)
    # the class is made eagerly: the frame falls back (its body is a nested function live
    # at the break; TODO: hand it to the break call) and the body is never a frame of its
    # own (it is not CO_OPTIMIZED), so no LOAD_NAME break from it
    assert ex.break_reasons and not any("LOAD_NAME" in r for r in ex.break_reasons), ex.break_reasons
    assert_same(torchc.compile(lambda t: f(t) * 2)(x), want * 2)


class _WithClassMethod:
    base = 1.5

    @classmethod
    def make(cls, t):
        return t * cls.base

    @staticmethod
    def shift(t):
        return t - 1


def test_staticmethod_and_classmethod_read_from_a_class():
    def f(x):
        return _WithClassMethod.make(x) + _WithClassMethod.shift(x)

    x = torch.randn(3)
    got, want = whole(f, x)
    assert_same(got, want)


# ---- nested functions with defaults (positional and keyword-only)

def test_nested_function_defaults():
    def f(x, k):
        y = x * 2

        def g(t, s=3, extra=y, *, b=1.0):  # a traced tensor as a default too
            return t * s + b + extra

        fns = [lambda t, i=i: t + i for i in range(3)]  # the loop variable bound by a default
        return g(x), g(x, 2), g(x, b=k), g(x, s=k, b=0.5), sum(fn(x) for fn in fns)

    x = torch.randn(3, 4)
    got, want = whole(f, x, 0.25)
    assert_same(got, want)


# ---- enum calls, IntEnum members as numbers, iterating a str constant

import enum  # noqa: E402


class _Mode(enum.Enum):
    A = "a"
    B = "b"


class _Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def test_enum_call_and_intenum_arithmetic():
    def f(x, m, v):
        if _Mode(v) is _Mode.B:
            x = x * 2
        if m == _Mode.A:
            x = x + 1
        return x * _Level.HIGH + _Level(1).value, _Mode("a").name, m.value

    x = torch.randn(3)
    got, want = whole(f, x, _Mode.A, "b")
    assert_same(got[0], want[0])
    assert got[1:] == want[1:]


@pytest.mark.allow_fallback
def test_enum_call_with_a_bad_value_raises_as_eager():
    def f(x):
        return x * 2, _Mode("zzz")

    with pytest.raises(ValueError):
        f(torch.randn(2))
    with pytest.raises(ValueError):
        torchc.compile(f)(torch.randn(2))
    assert_same(torchc.compile(lambda t: t + 1)(torch.ones(2)), torch.ones(2) + 1)


def test_zip_over_a_str_constant():
    def f(x, shapes=((1, 2), (3, 4))):
        out = {k: v for k, v in zip("ab", shapes)}
        return x * out["b"][1] + len([c for c in "xyz" if c != "y"])

    x = torch.randn(3)
    got, want = whole(f, x)
    assert_same(got, want)


# ---- a break inside a comprehension: the comprehension function is built for the break call

@pytest.mark.allow_fallback  # the comprehension frame itself resumes around its breaks
def test_break_inside_a_comprehension_keeps_the_caller_compiled():
    def f(x, ts, scale):
        y = x.cos() * 2
        out = [t * scale if t.sum() > 0 else t - scale for t in ts]  # data-dependent: breaks
        d = {i: t.sin() if t.sum() > 0 else t for i, t in enumerate(ts)}
        return y + sum(out) + d[1]

    x = torch.randn(4)
    ts = [torch.randn(4), -torch.ones(4), torch.ones(4)]
    want = f(x, ts, 1.5)
    torchc.reset()
    ex = torchc.explain(f)(x, ts, 1.5)
    assert_same(ex.result, want)
    assert not any("nested function is live" in r for r in ex.break_reasons), ex.break_reasons
    assert not any(r["event"] == "fallback" and r["name"] == "f" for r in ex.records), ex.break_reasons
    cf = torchc.compile(f)
    for _ in range(2):
        assert_same(cf(x, ts, 1.5), want)
    assert_same(cf(-x, ts[::-1], 0.5), f(-x, ts[::-1], 0.5))
