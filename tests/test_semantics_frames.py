"""Frames user code observes stay eager's around graph breaks, generators and autocast regions
(issue 21 item 2; resume.c, sym_gen.c, autocast.c). test_capture.py covers locals(),
sys._getframe(), inspect.currentframe(), warnings and logging in the compiled frame itself;
these cover a callee run at a break looking at its caller, and torch.compiler.is_compiling /
torch.compiler.disable inside the constructs the trace now runs itself."""
import contextlib
import sys

import pytest
import torch

import torchc


def _who():
    fb = sys._getframe(1)
    return fb.f_code.co_name, fb.f_lineno - fb.f_code.co_firstlineno, sorted(fb.f_locals)


@pytest.mark.allow_fallback  # _who, run at the break, is refused itself (sys._getframe)
def test_callee_at_break_sees_compiled_frame():
    def f(x):
        y = x + 1
        q = torch.linalg.qr(y)[0]  # break 1
        w = _who()                  # break 2: _getframe is not traced; the caller is f
        return q * 2, w

    x = torch.randn(4, 4)
    want = f(x)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_count >= 1 and ex.graph_break_count >= 2, ex.break_reasons
    for got in (ex.result, torchc.compile(f)(x), torchc.compile(f)(x)):
        assert got[1] == want[1] == ("f", 3, ["q", "x", "y"])
        torch.testing.assert_close(got[0], want[0])


def _steps(x):
    yield x * (2 if torch.compiler.is_compiling() else 3)


@contextlib.contextmanager
def _ctx():
    yield 5 if torch.compiler.is_compiling() else 7


def test_is_compiling_inside_generator_region_and_cm():
    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = x * (1 if torch.compiler.is_compiling() else 0)
        with _ctx() as k:
            b = x * k
        return a + sum(_steps(x)) + b

    x = torch.randn(3)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, x + 2 * x + 5 * x)
    torch.testing.assert_close(f(x), 0 * x + 3 * x + 7 * x)  # eager


_CALLS = []


@torch.compiler.disable
def _eager_only(t):
    _CALLS.append(torch.compiler.is_compiling())
    return t + 1


def _gen_calling_disabled(x):
    yield _eager_only(x)


def _consume(x):
    return sum(_gen_calling_disabled(x))


@pytest.mark.allow_fallback  # f: a generator can't live across its break (whole frame eager)
def test_disabled_function_in_generator_is_never_traced():
    def f(x):
        return sum(_gen_calling_disabled(x)) * 2

    def f2(x):  # consumed in a helper: the frame breaks at the helper's call, graphs around
        y = x * 3
        return _consume(y) * 2

    x = torch.randn(3)
    torchc.reset()
    for fn, want in ((f, (x + 1) * 2), (f2, (x * 3 + 1) * 2)):
        _CALLS.clear()
        got = torchc.compile(fn)(x)
        got2 = torchc.compile(fn)(x)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(got2, want)
        assert _CALLS == [False, False]  # ran eagerly, once per call
    ex = torchc.explain(f2)(x)
    assert ex.graph_count == 2 and ex.graph_break_count >= 1, ex.break_reasons  # f2 around its break
