"""collections.deque(maxlen=) made in the frame (dynamo_hook/obj_data.c): a bounded deque is a
V_SEQ list with maxlen + 1 in pos; append/extend drop from the left, appendleft/extendleft
from the right, as eager; it leaves the trace as partial(deque, maxlen=n)(list).

Each test runs the function eagerly and compiled and compares results (including the deque
returned, its items, type and maxlen); torchc.explain's graph and break counts make a silent
fallback fail."""
import collections
import copy

import pytest
import torch

import torchc
from conftest import assert_same


def whole(fn, *args, graphs=1):
    eager_args = copy.deepcopy(args)
    want = fn(*eager_args)
    torchc.reset()
    got_args = copy.deepcopy(args)
    ex = torchc.explain(fn)(*got_args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex
    return ex.result, want, got_args, eager_args


def same_deque(a, b):
    assert type(a) is type(b) is collections.deque
    assert a.maxlen == b.maxlen and len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(y, torch.Tensor):
            assert_same(x, y)
        else:
            assert x == y


def test_deque_maxlen_append_drops_left():
    def f(x):
        d = collections.deque(maxlen=3)
        for i in range(5):
            d.append(x * i)
        s = x * 0
        for v in d:
            s = s + v
        return s + len(d) + d.maxlen, d

    (got, gd), (want, wd), _, _ = whole(f, torch.randn(4))
    assert_same(got, want)
    same_deque(gd, wd)


@pytest.mark.parametrize("maxlen", [0, 1, 2, 5])
def test_deque_maxlen_both_ends(maxlen):
    def f(x):
        d = collections.deque([1, 2, 3, 4], maxlen)
        d.appendleft(9)
        d.append(7)
        d.extend([10, 11])
        d.extendleft([20, 21])
        d.appendleft(x)
        return x * len(d) + sum(v for v in d if not isinstance(v, torch.Tensor)), list(d), d

    (got, gl, gd), (want, wl, wd), _, _ = whole(f, torch.randn(3))
    assert_same(got, want)
    assert len(gl) == len(wl)
    same_deque(gd, wd)


def test_deque_keyword_iterable_trimmed_and_pop():
    def f(x):
        d = collections.deque(range(6), maxlen=4)
        a = d.popleft()
        d.append(x)
        b = d.pop()
        d.appendleft(100)
        return b * a + d[0] + d[-1] + len(d), d

    (got, gd), (want, wd), _, _ = whole(f, torch.randn(2, 3))
    assert_same(got, want)
    same_deque(gd, wd)


def test_deque_unbounded_unchanged():
    def f(x):
        d = collections.deque([x])
        d.append(x + 1)
        d.appendleft(x - 1)
        return d[0] + d[2], d.maxlen, d

    (got, gm, gd), (want, wm, wd), _, _ = whole(f, torch.randn(5))
    assert_same(got, want)
    assert gm is wm is None
    same_deque(gd, wd)


@pytest.mark.no_compile  # the whole frame falls back: eager raises
def test_deque_insert_into_full_raises_as_eager():
    def f(x):
        d = collections.deque([1, 2], maxlen=2)
        d.insert(0, 5)
        return x

    with pytest.raises(IndexError):
        f(torch.randn(2))
    with pytest.raises(IndexError):
        torchc.compile(f)(torch.randn(2))


# ---- dataclasses.asdict / astuple (torchc/_polyfills.py) ----------------------------------

import dataclasses
import typing


@dataclasses.dataclass
class _Inner:
    a: int
    b: list
    c: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Outer:
    inner: _Inner
    t: tuple
    z: typing.Any = None


def test_asdict_astuple_nested_made_in_frame():
    def f(x):
        o = _Outer(_Inner(1, [2, 3], {"k": 4}), (5, "s"))
        d = dataclasses.asdict(o)
        t = dataclasses.astuple(o)
        return x + sum(t[0][1]) + d["inner"]["a"] + d["inner"]["c"]["k"], d, t

    (got, gd, gt), (want, wd, wt), _, _ = whole(f, torch.randn(3))
    assert_same(got, want)
    assert gd == wd and gt == wt


def test_asdict_of_object_passed_in_copies_lists():
    def f(x, p):
        d = dataclasses.asdict(p)
        d["b"].append(9)  # a copy: the caller's p.b is unchanged, as in eager
        t = dataclasses.astuple(p, tuple_factory=list)
        return x * len(d["b"]) + t[0], d, t

    (got, gd, gt), (want, wd, wt), (_, pg), (_, pw) = whole(f, torch.randn(4), _Inner(2, [1], {"q": 0}))
    assert_same(got, want)
    assert gd == wd and gt == wt and type(gt) is list
    assert pg == pw and pg.b == [1]


def test_asdict_dict_factory():
    def f(x):
        d = dataclasses.asdict(_Inner(3, [], {}), dict_factory=collections.OrderedDict)
        return x + d["a"], d

    (got, gd), (want, wd), _, _ = whole(f, torch.randn(2))
    assert_same(got, want)
    assert gd == wd and type(gd) is type(wd) is collections.OrderedDict


def test_dataclass_default_factory_made_in_frame():
    # the generated __init__ compares its default with dataclasses' marker (`is`); each
    # instance gets its own factory-made dict
    def f(x):
        p, q = _Inner(3, []), _Inner(4, [1], {"w": 2})
        p.c["k"] = 5
        r = _Inner(5, [])
        return x * (p.c["k"] + len(r.c) + q.c["w"]), dataclasses.asdict(p), r

    (got, gd, gr), (want, wd, wr), _, _ = whole(f, torch.randn(3))
    assert_same(got, want)
    assert gd == wd and gr == wr and gr.c == {}
