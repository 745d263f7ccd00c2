"""obj.__dict__ as a read-only view (dynamo_hook/obj_dictview.c) and methods wrapped in
functools.lru_cache called through the cache (ops_table.c), each differential against eager
with two-sided graph/break counts from torchc.explain (a silent fallback fails)."""
import dataclasses
import functools

import pytest
import torch

import torchc


def _counts(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    return ex, (ex.graph_count, ex.graph_break_count)


class Obj:
    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)


def test_dict_view_reads_of_an_input_object():
    def f(x, o):
        d = o.__dict__
        r = x * d["a"] + d.get("b", 0.5) + d.get("zz", 2.0)
        if "c" in d and "zz" not in d:
            r = r + len(d)
        for k in d:
            r = r + (1.0 if k == "a" else 0.0)
        for k, v in d.items():
            if k == "t":
                r = r + v
        return r, tuple(d.keys()), len(list(d.values()))

    x = torch.randn(4)
    o = Obj(a=3.0, b=1.5, c=None, t=torch.randn(4))
    ex, n = _counts(f, x, o)
    assert n == (1, 0), ex.break_reasons
    want = f(x, o)
    torch.testing.assert_close(ex.result[0], want[0])
    assert ex.result[1:] == want[1:]


def test_dict_view_sees_writes_of_the_trace_in_eager_order():
    def f(x, o):
        o.b = x.sum()   # a new key: after the existing ones
        o.a = 7.0       # an existing key keeps its place
        d = o.__dict__
        return x + d["a"] + d["b"], tuple(d)

    x = torch.randn(3)
    oe, oc = Obj(a=1.0, c=2), Obj(a=1.0, c=2)
    ex, n = _counts(f, x, oc)
    assert n == (1, 0), ex.break_reasons
    want = f(x, oe)
    torch.testing.assert_close(ex.result[0], want[0])
    assert ex.result[1] == want[1] == ("a", "c", "b")
    assert oc.a == 7.0 and torch.equal(oc.b, oe.b)  # the writes replayed on the real object


def test_dict_view_key_set_is_guarded():
    def f(x, o):
        return x + o.__dict__.get("extra", 0.0)

    cf = torchc.compile(f)
    x = torch.randn(3)
    torchc.reset()
    o1 = Obj(a=1)
    torch.testing.assert_close(cf(x, o1), f(x, o1))
    o2 = Obj(a=1, extra=5.0)  # one more key: not the cached entry's answer
    torch.testing.assert_close(cf(x, o2), f(x, o2))
    o3 = Obj(b=1)  # same length, another key
    torch.testing.assert_close(cf(x, o3), f(x, o3))


def test_dict_view_of_an_object_made_in_the_trace_post_init():
    # a dataclass whose __post_init__ reads self.__dict__ (an output-record idiom)
    @dataclasses.dataclass
    class Rec:
        loss: object = None
        logits: object = None

        def __post_init__(self):
            self.n = sum(1 for f in dataclasses.fields(self) if self.__dict__.get(f.name) is not None)

    def f(x):
        r = Rec(logits=x * 2)
        return r.logits + r.n, r.n

    x = torch.randn(5)
    ex, n = _counts(f, x)
    assert n == (1, 0), ex.break_reasons
    want = f(x)
    torch.testing.assert_close(ex.result[0], want[0])
    assert ex.result[1] == want[1] == 1


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_write_through_dict_view_fails_cleanly():
    def f(x, o):
        o.__dict__["a"] = 5.0
        return x + o.a

    x = torch.randn(3)
    oe, oc = Obj(a=1.0), Obj(a=1.0)
    ex, n = _counts(f, x, oc)
    assert n == (0, 1), n  # the frame runs eagerly, with the reason
    assert any("write through an object's __dict__" in r for r in ex.break_reasons), ex.break_reasons
    torch.testing.assert_close(ex.result, f(x, oe))
    assert oc.a == oe.a == 5.0


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_stale_dict_view_fails_cleanly():
    def f(x, o):
        d = o.__dict__
        o.a = 9.0      # eager's dict is live: d["a"] is 9 below
        return x + d["a"]

    x = torch.randn(3)
    oe, oc = Obj(a=1.0), Obj(a=1.0)
    ex, n = _counts(f, x, oc)
    assert n == (0, 1), n
    assert any("changed" in r for r in ex.break_reasons), ex.break_reasons
    torch.testing.assert_close(ex.result, f(x, oe))
    assert oc.a == 9.0


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_dict_view_leaving_the_trace_is_the_real_dict():
    def f(x, o):
        return x + 1, o.__dict__

    x = torch.randn(3)
    o = Obj(a=1)
    ex, n = _counts(f, x, o)
    assert n == (0, 1), n
    assert any("__dict__ leaves the trace" in r for r in ex.break_reasons), ex.break_reasons
    torchc.reset()
    r = torchc.compile(f)(x, o)
    assert r[1] is o.__dict__
    torch.testing.assert_close(r[0], x + 1)


class Logger:
    def __init__(self):
        self.seen = []

    def warn(self, msg):
        self.seen.append(msg)


@functools.lru_cache(None)
def _warn_once(self, msg, level=0):
    self.warn(msg)


Logger.warn_once = _warn_once  # a cached function set on the class after its definition
LOG = Logger()


def test_lru_cached_method_called_through_the_cache():
    class Helper:
        @functools.lru_cache(None)
        def scale(self, k):
            return k * 2

    h = Helper()

    def f(x):
        LOG.warn_once("once", level=1)
        LOG.warn_once("once", level=1)
        return x * h.scale(3)

    x = torch.randn(4)
    ex, n = _counts(f, x)
    assert n == (1, 0), ex.break_reasons
    torch.testing.assert_close(ex.result, x * 6)
    cf = torchc.compile(f)
    torch.testing.assert_close(cf(x), x * 6)
    assert LOG.seen == ["once"]  # the cached call ran once, as in eager


@pytest.mark.allow_fallback
def test_lru_cached_method_with_a_tensor_argument_breaks():
    class Helper:
        @functools.lru_cache(None)
        def scale(self, t):
            return t * 2

    h = Helper()

    def f(x):
        return h.scale(x) + 1

    x = torch.randn(4)
    ex, n = _counts(f, x)
    assert n[1] == 1 and n[0] >= 2, n  # a graph break at the call, the rest compiled
    assert any("lru_cache" in r for r in ex.break_reasons), ex.break_reasons
    torch.testing.assert_close(ex.result, x * 2 + 1)
    cf = torchc.compile(f)
    torch.testing.assert_close(cf(x), x * 2 + 1)


def test_dict_view_copies_are_plain_dicts():
    def f(x, o):
        a = dict(o.__dict__)
        b = {**o.__dict__, "z": 1.0}
        c = o.__dict__.copy()
        a["q"] = 2.0  # a copy is an ordinary dict: writes to it are fine
        return x + a["q"] + b["z"] + c["a"], sorted(a), sorted(b), sorted(c)

    x = torch.randn(3)
    oe, oc = Obj(a=1.0), Obj(a=1.0)
    ex, n = _counts(f, x, oc)
    assert n == (1, 0), ex.break_reasons
    want = f(x, oe)
    torch.testing.assert_close(ex.result[0], want[0])
    assert ex.result[1:] == want[1:]
    assert vars(oc) == {"a": 1.0}


@pytest.mark.allow_fallback
def test_lru_cached_method_of_an_object_the_trace_wrote_breaks():
    class Helper:
        def __init__(self):
            self.k = 1

        @functools.lru_cache(None)
        def scale(self, n):
            return self.k * n

    h = Helper()

    def f(x):
        h.k = 5  # eager's cached call sees k == 5
        return x * h.scale(2)

    x = torch.randn(4)
    ex, n = _counts(f, x)
    assert n == (1, 0), n  # the break ends a piece with no op: one graph after it
    assert any("attributes the trace wrote" in r for r in ex.break_reasons), ex.break_reasons
    torch.testing.assert_close(ex.result, x * 10)


def test_dict_view_identity_and_unread_odd_values():
    import threading

    def f(x, o, p):
        d = o.__dict__
        same = d is o.__dict__ and d is not p.__dict__ and d is not {}
        return x + d.get("a", 0.0) + ("lock" in d), same

    x = torch.randn(3)
    o, p = Obj(a=2.0, lock=threading.Lock(), gen=(i for i in range(2)), b=b"x"), Obj(a=2.0)
    ex, n = _counts(f, x, o, p)  # values never read are never wrapped: no unsupported type
    assert n == (1, 0), ex.break_reasons
    torch.testing.assert_close(ex.result[0], x + 3.0)
    assert ex.result[1] is True
