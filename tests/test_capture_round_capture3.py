"""Issue 21, round capture3: integer pow compiles (no break), a branch on an automatic dynamic
int guards its outcome (two entries cover every k, not one entry per k), and exceptions the
trace raised and caught are values (str, repr, args, __context__/__cause__), with a raise
inside an except clause captured (the graph, then eager's exception with its chain). Each
test compares with eager and counts torchc's compiles and fallbacks, so a silent fallback or
a recompile per call fails it."""
import copy

import pytest
import torch

import torchc
from conftest import assert_same, captured_whole


def counts():
    s = torchc._C.stats()
    return s.get("compiles", 0), s.get("fallbacks", 0) + s.get("limit_fallbacks", 0)


# ---- 1. integer pow ----------------------------------------------------------------------

INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("dt", INT_DTYPES)
def test_integer_pow_matches_eager_in_one_graph(dt):
    lo = 0 if dt == torch.uint8 else -6
    x = torch.randint(lo, 7, (37,), dtype=dt)
    e = torch.randint(lo, 70, (37,), dtype=dt)   # negative tensor exponents: 0, 1, +-1

    def f(x, e):
        return x ** 2, x ** 0 + x ** 1, 2 ** x.abs(), torch.pow(x, 13), x ** e, x.clone().pow_(3)

    ex = torchc.explain(f)(x, e)
    assert captured_whole(ex), ex.break_reasons
    assert_same(ex.result, f(x, e))


def test_integer_pow_promotion_broadcast_and_large_exponents():
    x = torch.randint(-6, 7, (37,))
    e = torch.randint(-6, 70, (37,), dtype=torch.int32)

    def f(x, e):
        return (x ** (e.long() * 1000003),                     # wraps as eager's
                x.view(37, 1)[:5] ** e.view(1, 37),            # broadcast, int64 ** int32
                x ** e[3], e ** 2.5, 1.5 ** x, torch.pow(3, e), (x > 0) ** 2, (x > 0) ** True)

    ex = torchc.explain(f)(x, e)
    assert captured_whole(ex), ex.break_reasons
    assert_same(ex.result, f(x, e))


@pytest.mark.allow_fallback
def test_integer_pow_by_a_negative_number_raises_as_eager():
    def f(x):
        return (x + 1) ** -1

    x = torch.arange(4)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        f(x)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        torchc.compile(f)(x)
    with pytest.raises(RuntimeError, match="without overflow"):   # 300 does not fit uint8
        torchc.compile(lambda x: x ** 300)(x.to(torch.uint8))


# ---- 2. a branch on an automatic dynamic int guards its outcome -----------------------

def branch(x, k):
    if k > 2:
        return x * k
    return x - k


def parity(x, k):
    y = x + k
    if k % 2 == 0:          # a computed dynamic int compared
        y = y * 2
    if not k:
        y = y + 100
    return y


def window(x, k):
    if 3 <= k < 10:
        return x * k
    return x


def narrow_mod(x, k):
    return torch.narrow(x, 0, k % 2, 2) * k    # k % 2 a start: its value guarded, not k's


def full_k(x, k):
    return torch.full((k + 1,), 2.0) * x.sum()  # k a size: specialized per value


@pytest.mark.parametrize("fn,want", [(branch, 3), (parity, 3), (window, 4), (narrow_mod, 3), (full_k, 20)])
def test_dynamic_int_branch_compiles_per_outcome(fn, want):
    cf = torchc.compile(fn)
    x = torch.randn(5)
    for k in range(20):
        assert_same(cf(x, k), fn(x, k))
    c, fb = counts()
    assert (c, fb) == (want, 0), (c, fb)   # before: 20 compiles each (one entry per k)


class Every5(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.step = 0

    def forward(self, x):
        self.step += 1
        y = self.lin(x)
        if self.step % 5 == 0:
            y = y * 2
        return y + self.step, self.step > 12


def test_module_step_counter_branch_two_dynamic_entries():
    m = Every5()
    ref = copy.deepcopy(m)
    cm = torchc.compile(m)
    x = torch.randn(2, 4)
    for _ in range(20):
        assert_same(cm(x), ref(x))
    assert m.step == ref.step == 20
    c, fb = counts()
    # the first value specialized, then (step % 5 == 0, step > 12): 4 outcomes seen
    assert fb == 0 and c == 5, (c, fb)


def test_dynamic_int_compared_with_another():
    def f(x, k, j):
        if k > j:
            return x * k
        return x * j

    cf = torchc.compile(f)
    x = torch.randn(3)
    for k in range(12):
        assert_same(cf(x, k, 11 - k), f(x, k, 11 - k))
    c, fb = counts()
    assert fb == 0 and c <= 4, (c, fb)


# ---- 3. exceptions as values, raises inside except clauses -------------------------------

def _chain(e, d=0):
    if e is None or d > 6:
        return None
    return (type(e), e.args, e.__suppress_context__, _chain(e.__cause__, d + 1), _chain(e.__context__, d + 1))


def test_caught_exception_str_repr_args_context_in_one_graph():
    def f(x):
        y = x + 1
        out = []
        try:
            raise ValueError("bad value", 3)
        except ValueError as e:
            out += [str(e), repr(e), e.args, e.__class__.__name__, e.__cause__]
        try:
            {}["key"]
        except KeyError as e:
            out += [str(e), repr(e)]
        try:
            [1, 2][5]
        except IndexError as e:
            out.append(str(e))
        try:
            try:
                raise ValueError("inner")
            except ValueError:
                raise TypeError("mid")
        except TypeError as e:
            out += [repr(e.__context__), e.__context__.args, e.__suppress_context__]
        try:
            int("abc")                   # a builtin's own error, eager's message
        except ValueError as e:
            out += [str(e), e.args]
        return y, out

    x = torch.randn(3)
    ex = torchc.explain(f)(x)
    assert captured_whole(ex), ex.break_reasons
    assert_same(torchc.compile(f)(x), f(x))


def _raise_in_except(x):
    y = x * 2
    try:
        raise ValueError("inner")
    except ValueError as e:
        raise RuntimeError("outer") from e


def _raise_plain(x):
    y = x * 2
    try:
        raise KeyError("k")
    except KeyError:
        raise RuntimeError("outer")


def _reraise(x):
    y = x * 2
    try:
        raise ValueError("a")
    except ValueError:
        raise


def _from_none(x):
    y = x + 1
    try:
        {}["missing"]
    except KeyError as e:
        raise LookupError(f"wrapped {e}") from None


def _finally_then_raise(x):
    y = x + 1
    try:
        try:
            raise KeyError("a")
        finally:
            y = y * 2
    except KeyError:
        raise ValueError("after finally")


@pytest.mark.parametrize("fn", [_raise_in_except, _raise_plain, _reraise, _from_none, _finally_then_raise])
def test_raise_inside_except_is_captured_with_eagers_chain(fn):
    x = torch.randn(3)
    with pytest.raises(Exception) as want:
        fn(x)
    cf = torchc.compile(fn)
    for _ in range(2):   # a new exception each call
        with pytest.raises(Exception) as got:
            cf(x)
        assert _chain(got.value) == _chain(want.value)
    if fn is _raise_in_except:
        assert got.value.__cause__ is got.value.__context__
    c, fb = counts()
    assert (c, fb) == (1, 0), (c, fb)   # before: the frame ran eagerly


def test_raise_inside_except_while_the_caller_handles_one():
    x = torch.randn(3)
    cf = torchc.compile(_raise_plain)
    try:
        raise OSError("caller's")
    except OSError:
        with pytest.raises(RuntimeError) as want:
            _raise_plain(x)
        with pytest.raises(RuntimeError) as got:
            cf(x)
    assert _chain(got.value) == _chain(want.value)
    assert type(got.value.__context__.__context__) is OSError
    assert counts() == (1, 0)


@pytest.mark.allow_fallback
def test_context_read_while_the_caller_handles_one_is_eagers():
    def f(x):
        try:
            raise ValueError("v")
        except ValueError as e:
            return x + 1, e.__context__     # the caller's exception in eager: guarded

    x = torch.randn(3)
    cf = torchc.compile(f)
    assert_same(cf(x), f(x))               # handles none: None, compiled
    try:
        raise OSError("caller's")
    except OSError as caller:
        got = cf(x)    # the guard fails: not a stale None (this call runs eagerly: its context
        assert got[1] is caller and f(x)[1] is caller   # is the caller's object)
    assert counts() == (1, 1)
