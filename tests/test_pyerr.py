"""MemoryError, KeyboardInterrupt and RecursionError raised by user code that torchc runs
while it captures or guards a frame (a __getattr__, a __len__, a property, an __eq__)
propagate as they do in eager: the same exception, raised by the same number of calls of the
user's code, and no fallback that would run the frame a second time (issue 24: PyErr_Clear
only for the exception classes expected at that spot, csrc/pyerr.h's tc_clear_expected).
Exceptions that mean "not here" (AttributeError from a getattr probe) are still handled."""
import os
import re

import pytest
import torch

import torchc

FATAL = [MemoryError, KeyboardInterrupt, RecursionError]


class Boom:
    """raises `exc` from the hooks while `armed`; counts the calls of each hook"""

    def __init__(self, exc=None):
        self.__dict__["exc"] = exc
        self.__dict__["calls"] = 0

    def _hit(self):
        self.__dict__["calls"] += 1
        exc = self.__dict__["exc"]
        if exc is not None:
            raise exc("boom")


class GetattrBoom(Boom):
    def __getattr__(self, name):
        self._hit()
        if name == "scale":
            return 3.0
        raise AttributeError(name)


class LenBoom(Boom):
    def __len__(self):
        self._hit()
        return 3


def run(fn, obj, x):
    """(result or exception type and text, the calls of obj's hooks)"""
    try:
        r = fn(x, obj)
    except BaseException as e:  # noqa: B036 - KeyboardInterrupt is what is compared
        r = (type(e), str(e))
    return r, obj.calls


def same(got, want):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor)
        torch.testing.assert_close(got, want)
    else:
        assert got == want


def check(fn, make, exc, inlined=False):
    """`inlined`: torchc traces the hook's own bytecode (a Python __getattr__, __len__ or
    property getter): its raise is not captured, the frame falls back, eager raises it once.
    Otherwise the capture calls the hook for real and the exception propagates from there."""
    x = torch.randn(5)
    want_ok, _ = run(fn, make(None), x)
    want_err, want_calls = run(fn, make(exc), x)
    assert want_err == (exc, "boom")
    cf = torchc.compile(fn)
    # the fatal exception first (while tracing), then a good object: it compiles
    got_err, got_calls = run(cf, make(exc), x)
    assert got_err == want_err
    assert got_calls == want_calls, "the user's hook ran again (a fallback re-ran the frame)"
    s = torchc._C.stats()
    if not inlined:  # nothing compiled, nothing ran eagerly: the exception came from the capture
        assert s["compiles"] == 0 and s["fallbacks"] == 0, s
    got_ok, _ = run(cf, make(None), x)
    same(got_ok, want_ok)
    assert torchc._C.stats()["compiles"] >= 1


class GetattributeBoom(Boom):
    """a Python __getattribute__: the capture runs the real getattr (and the guards re-run it)"""

    def __getattribute__(self, name):
        d = object.__getattribute__(self, "__dict__")
        if name == "scale":
            d["calls"] += 1
            if d["exc"] is not None:
                raise d["exc"]("boom")
            return 3.0
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("exc", FATAL)
def test_getattribute_raises_while_tracing(exc):
    def f(x, o):
        return x * o.scale

    check(f, GetattributeBoom, exc)


@pytest.mark.parametrize("exc", FATAL)
def test_getattribute_raises_in_guard(exc):
    # compiled with a good object; the next call's guards re-run the getattr, which raises:
    # the exception propagates from the guard check, the getattr ran once (as in eager)
    def f(x, o):
        return x * o.scale

    x = torch.randn(5)
    cf = torchc.compile(f)
    same(cf(x, GetattributeBoom()), f(x, GetattributeBoom()))
    want, want_calls = run(f, GetattributeBoom(exc), x)
    got, got_calls = run(cf, GetattributeBoom(exc), x)
    assert got == want == (exc, "boom")
    assert got_calls == want_calls == 1
    s = torchc._C.stats()
    assert s["compiles"] == 1 and s["fallbacks"] == 0, s
    same(cf(x, GetattributeBoom()), f(x, GetattributeBoom()))


def test_getattribute_attribute_error_is_handled():
    # AttributeError is the expected "absent" answer of a getattr probe: compiled, as eager
    class Obj(GetattributeBoom):
        def __getattribute__(self, name):
            if name == "missing":
                raise AttributeError(name)
            return super().__getattribute__(name)

    def f(x, o):
        return x * getattr(o, "missing", 2.0) + o.scale

    x = torch.randn(5)
    cf = torchc.compile(f)
    same(cf(x, Obj()), f(x, Obj()))
    s = torchc._C.stats()
    assert s["compiles"] == 1 and s["fallbacks"] == 0, s


@pytest.mark.allow_fallback
@pytest.mark.parametrize("exc", FATAL)
def test_getattr_raises_while_tracing(exc):
    def f(x, o):
        return x * o.scale

    check(f, GetattrBoom, exc, inlined=True)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("exc", FATAL)
def test_len_raises_while_tracing(exc):
    def f(x, o):
        return x * len(o)

    check(f, LenBoom, exc, inlined=True)


class PropBoom(Boom):
    @property
    def scale(self):
        self._hit()
        return 3.0


@pytest.mark.allow_fallback
@pytest.mark.parametrize("exc", FATAL)
def test_property_raises_while_tracing(exc):
    def f(x, o):
        return x * o.scale

    check(f, PropBoom, exc, inlined=True)


class EqBoom:
    """a dict key whose __eq__ raises (a hash collision with the key looked up)"""

    def __init__(self, exc):
        self.exc = exc

    def __hash__(self):
        return hash("k")

    def __eq__(self, other):
        if self.exc is not None and other is not self:
            raise self.exc("boom")
        return other is self


@pytest.mark.allow_fallback
@pytest.mark.parametrize("exc", FATAL)
def test_dict_key_eq_raises_while_tracing(exc):
    def f(x, d):
        return x * d["k"]

    x = torch.randn(5)
    key = EqBoom(None)
    d = {key: 1.0, "k": 2.0}
    key.exc = exc  # d["k"] compares "k" with it now
    try:
        f(x, d)
        want = None
    except BaseException as e:  # noqa: B036
        want = (type(e), str(e))
    cf = torchc.compile(f)
    try:
        cf(x, d)
        got = None
    except BaseException as e:  # noqa: B036
        got = (type(e), str(e))
    assert got == want
    good = {"k": 2.0}
    same(cf(x, good), f(x, good))
    assert torchc._C.stats()["compiles"] >= 1


_OP_RAISE = {"exc": None, "calls": 0}


@torch.library.custom_op("torchc_pyerr::maybe_raise", mutates_args=())
def _maybe_raise(x: torch.Tensor) -> torch.Tensor:
    _OP_RAISE["calls"] += 1
    exc, _OP_RAISE["exc"] = _OP_RAISE["exc"], None  # once: a Ctrl-C is not raised again
    if exc is not None:
        raise exc("boom")
    return x * 2


@_maybe_raise.register_fake
def _(x):
    return torch.empty_like(x)


@pytest.mark.parametrize("exc", FATAL + [pytest.param(ValueError, marks=pytest.mark.allow_fallback)])
def test_custom_op_raises_in_compiled_graph(exc):
    """a custom op (a CUSTOM extern called from the running graph) that raises
    KeyboardInterrupt, MemoryError or RecursionError: the exception propagates from the
    compiled call as from eager, the op ran once (no eager re-run of the frame, no internal
    error); an ordinary exception reruns the frame eagerly, which gives eager's result"""
    def f(x):
        return torch.ops.torchc_pyerr.maybe_raise(x.sin()) + 1

    x = torch.randn(5)
    faults0 = torchc._C.stats()["internal_faults"]  # process-wide: earlier tests may have provoked some
    cf = torchc.compile(f)
    same(cf(x), f(x))  # compiled, the op in the graph
    s = torchc._C.stats()
    assert s["compiles"] == 1 and s["fallbacks"] == 0, s
    for fn in (f, cf):
        _OP_RAISE.update(exc=exc, calls=0)
        try:
            r = fn(x)
        except BaseException as e:  # noqa: B036 - KeyboardInterrupt is what is compared
            r = (type(e), str(e))
        if fn is f:
            want, want_calls = r, _OP_RAISE["calls"]
    if exc is ValueError:  # raised once in the graph, the eager re-run calls the op again
        assert want == (exc, "boom") and want_calls == 1
        same(r, f(x))
    else:
        assert r == want == (exc, "boom") and _OP_RAISE["calls"] == want_calls == 1
    assert torchc._C.stats()["internal_faults"] == faults0


@pytest.mark.needs_no_compiler
def test_no_blanket_clear():
    """csrc/ and dynamo_hook/ clear a pending exception only through tc_clear_expected
    (csrc/pyerr.h), naming the classes expected there; a bare PyErr_Clear() is allowed only
    right after PyErr_Fetch (the exception was taken and reported: the clear drops what the
    reporting itself raised). A new bare clear would turn MemoryError or KeyboardInterrupt
    into a fallback again."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for d in ("csrc", "dynamo_hook", "inductor_c"):
        for base, _, files in os.walk(os.path.join(root, d)):
            for fn in files:
                if not fn.endswith((".c", ".h", ".cpp")) or fn == "pyerr.h":
                    continue
                lines = open(os.path.join(base, fn)).read().splitlines()
                for i, line in enumerate(lines):
                    if re.search(r"\bPyErr_Clear\(\)", line) and \
                            not any("PyErr_Fetch(" in ln for ln in lines[max(0, i - 12):i]):
                        found.append(f"{os.path.relpath(os.path.join(base, fn), root)}:{i + 1}")
    assert not found, "bare PyErr_Clear() (use tc_clear_expected): " + ", ".join(found)
