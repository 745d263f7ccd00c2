"""Graph breaks in frames with an exception table (try/except, with) or cell variables
(issue 21): the resume function moves the exception table with the shifted body and gives
each cell variable a fresh cell (resume.c), so such a frame compiles the graph before the
break and resumes after it instead of running eagerly whole. A break inside a with block on
a user's context manager or inside an except clause stays refused and says so (breaks inside
try blocks and torch's state contexts: test_resume_with_try.py).
Counts are pinned both ways: a silent eager fallback fails."""
import sys

import pytest
import torch

import torchc


calls = []


@torch.compiler.disable
def opaque(x):
    """never traced: the trace breaks at its call"""
    calls.append(1)
    return x


def _ex(fn, *args):
    torchc.reset()
    calls.clear()
    return torchc.explain(fn)(*args)


def _check(fn, args, graphs, breaks):
    calls.clear()
    want = fn(*args)
    n_eager = len(calls)
    ex = _ex(fn, *args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    assert len(calls) == n_eager  # the break call ran once, as in eager
    cf = torchc.compile(fn)
    for _ in range(2):  # second call: the cached entries and resume functions
        torch.testing.assert_close(cf(*args), want)
    return ex


# ---- exception tables ---------------------------------------------------------------------

def try_before(x, d):
    try:
        s = d["scale"]
    except KeyError:
        s = 1.0
    y = (x * s).sin()
    y = opaque(y)
    return y.cos() + s


def try_after(x, d):
    y = x.sin()
    y = opaque(y)
    try:
        s = d["scale"]  # raises after the break: the shifted table must still catch it
    except KeyError:
        s = -1.0
    return y * s


def with_elsewhere(x):
    with torch.no_grad():
        y = x * 2
    y = opaque(y + 1)
    return y.exp()


@pytest.mark.parametrize("d", [{}, {"scale": 3.0}])
@pytest.mark.parametrize("fn", [try_before, try_after])
def test_break_in_a_frame_with_try(fn, d):
    _check(fn, (torch.randn(5), d), graphs=2, breaks=1)


def test_break_in_a_frame_with_a_with_block():
    _check(with_elsewhere, (torch.randn(3, 2),), graphs=2, breaks=1)


def test_exception_after_resume_caught_by_its_handler():
    def f(x, items):
        y = opaque(x.sin())
        try:
            k = items[5]  # IndexError in the resume's trace or its eager run
        except IndexError:
            k = 2
        return y * k
    _check(f, (torch.randn(4), [1, 2]), graphs=2, breaks=1)


def test_two_breaks_and_a_try():
    def f(x, d):
        y = opaque(x + 1)
        y = y * 2
        y = opaque(y)
        try:
            y = y + d["b"]
        except KeyError:
            y = y - 1
        return y
    _check(f, (torch.randn(4), {}), graphs=3, breaks=2)


@torch.compiler.disable
def maybe_raise(x, kind):
    calls.append(1)
    if kind is not None:
        raise kind("raised at the break")
    return x


def try_around_break(x, kind):
    y = x.sin()
    try:
        y = maybe_raise(y, kind) * 2  # the break's own instruction inside the try block
    except ValueError as e:
        y = y * 0 + len(str(e))
    except KeyError:
        y = y - 5
    return y.cos()


@pytest.mark.parametrize("kind", [None, ValueError, KeyError])
def test_break_inside_try_resumes_and_its_handler_runs(kind):
    """the handler runs in a resume that raises the break call's exception where the
    frame's exception table catches it (resume.c dh_make_exc_resume)"""
    # after an exception the rest of the frame runs as it is (its handler): one graph
    _check(try_around_break, (torch.randn(4), kind), graphs=2 if kind is None else 1, breaks=1 if kind is None else 0)


def test_break_inside_try_uncaught_exception_propagates():
    torchc.reset()
    with pytest.raises(TypeError, match="raised at the break"):
        torchc.compile(try_around_break)(torch.randn(4), TypeError)


def test_break_inside_try_finally_runs_then_reraises():
    log = []

    def f(x, kind):
        try:
            y = maybe_raise(x + 1, kind)
        finally:
            log.append("finally")
        return y * 2
    _check(f, (torch.randn(3), None), graphs=2, breaks=1)
    log.clear()
    torchc.reset()
    with pytest.raises(IndexError):
        torchc.compile(f)(torch.randn(3), IndexError)
    assert log == ["finally"]


def test_data_dependent_branch_inside_try_whose_bool_raises():
    def f(x):
        y = x * 2
        try:
            if y > 0:  # several elements: bool() raises RuntimeError at the break
                y = y + 1
        except RuntimeError:
            y = y - 1
        return y
    _check(f, (torch.randn(3),), graphs=1, breaks=0)  # bool() raised: the handler, as it is
    _check(f, (torch.ones(1),), graphs=2, breaks=1)


def test_break_inside_a_user_context_manager_resumes():
    # a with block on a user's context manager with a break inside: the frame breaks at the
    # call that makes it and its BEFORE_WITH (entered once, eagerly) and the block resumes
    # holding the real exit (test_resume_user_with.py has the cases)
    import contextlib
    log = []

    @contextlib.contextmanager
    def tag():
        log.append("enter")
        yield
        log.append("exit")

    def f(x):
        y = x.sin()
        with tag():
            y = opaque(y)
        return y.cos()
    want = f(torch.ones(3))
    log.clear()
    ex = _ex(f, torch.ones(3))
    assert len(calls) == 1 and log == ["enter", "exit"]
    # (Dynamo's counting: 2 graphs, 1 break; the breaks at the with-block's edges listed)
    assert ex.op_count == 2 and ex.graph_count == 2 and ex.graph_break_count == 1, ex.break_reasons
    assert len(ex.break_reasons) >= 2, ex.break_reasons
    assert "not resumable" not in " ".join(map(str, ex.break_reasons))
    torch.testing.assert_close(ex.result, want)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_break_inside_an_except_clause_is_refused_with_a_reason():
    def f(x, d):
        try:
            s = d["k"]
        except KeyError:
            s = opaque(x).sum()  # the thread's handled exception is not rebuilt
        return x * s
    want = f(torch.ones(3), {})
    ex = _ex(f, torch.ones(3), {})
    torch.testing.assert_close(ex.result, want)
    assert "except clause" in " ".join(map(str, ex.break_reasons))


@pytest.mark.allow_fallback
def test_exception_from_the_break_call_outside_try_propagates():
    def bad(x):
        raise ValueError("from the break")

    def f(x):
        try:
            x = x + 1
        except KeyError:
            pass
        y = bad(x.sin())
        return y
    torchc.reset()
    with pytest.raises(ValueError, match="from the break"):
        torchc.compile(f)(torch.ones(2))


# ---- cell variables -------------------------------------------------------------------------

def cells_comprehension(x):
    s = 2.0
    ys = [v * s for v in x.unbind(0)]  # 3.11: s is a cell of f (the comprehension's closure)
    y = opaque(torch.stack(ys))
    s = s + 1  # written after the break: the resume's fresh cell
    return y.cos() * s + sum(v.sum() * s for v in x.unbind(0))


def cells_lambda_dead(x):
    k = 3
    g = lambda t: t * k  # noqa: E731
    y = g(x)
    del g  # no closure lives across the break
    y = opaque(y)
    return y + k


def cells_read_after(x):
    n = x.shape[0]
    z = opaque(x.sin())
    w = [z[i] * n for i in range(n)]
    return torch.stack(w)


@pytest.mark.parametrize("fn", [cells_comprehension, cells_lambda_dead, cells_read_after])
def test_break_in_a_frame_with_cells(fn):
    x = torch.randn(3, 4)
    if sys.version_info >= (3, 12) and fn is cells_read_after:
        pass  # 3.12 inlines comprehensions: no cell, still two graphs
    _check(fn, (x,), graphs=2, breaks=1)


@pytest.mark.allow_fallback
def test_live_closure_across_a_break_still_refused():
    def f(x):
        k = 3
        g = lambda t: t * k  # noqa: E731
        y = opaque(x)
        return g(y)
    want = f(torch.ones(2))
    ex = _ex(f, torch.ones(2))
    torch.testing.assert_close(ex.result, want)
    assert ex.break_reasons, ex  # (the break ends a piece with no op: no graph break as Dynamo counts)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 inlines the comprehension (PEP 709): s is no cell, "
                    "and f, which reads its own frame (locals()), runs eagerly whole: nothing compiles")
@pytest.mark.allow_fallback  # f reads its own frame: its break is refused, f runs eagerly (named)
def test_locals_in_a_resume_with_cells():
    def f(x):
        s = 2
        ys = [v * s for v in x]
        y = opaque(x)
        loc = locals()
        return y * loc["s"] + len(ys)
    x = torch.randn(3)
    want = f(x)
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(x), want)


# ---- breaks in loops --------------------------------------------------------------------

def test_data_dependent_continue_in_a_loop():
    def f(x, thr):
        for i in range(4):
            if (x.sum() + i) < thr:
                continue
            x = x + 1
        return x
    for thr in (-100.0, 100.0, 0.5):
        x = torch.randn(4)
        want = f(x, thr)
        torchc.reset()
        ex = torchc.explain(f)(x, thr)
        torch.testing.assert_close(ex.result, want)
        # a graph per compiled piece with ops (the last one has none where every iteration
        # continued), each data-dependent branch listed; i, live across the break, is an
        # automatic dynamic int of the resume from its second value on: the fourth iteration
        # reuses the third's entry (was: one entry per iteration)
        assert ex.graph_count == ex.graph_break_count + 1 >= 3 and 3 <= len(ex.break_reasons) <= 4, ex
        assert all("data-dependent branch" in str(r) for r in ex.break_reasons)


def test_loop_with_try_and_break():
    def f(x, d):
        out = x
        for i in range(3):
            try:
                s = d[i]
            except KeyError:
                s = 0.5
            out = opaque(out * s)
        return out
    _check(f, (torch.randn(4), {1: 2.0}), graphs=3, breaks=2)


# ---- breaks in a loop over a list the caller sees ------------------------------------------
# The resume takes a real iterator over the caller's list at the loop's index (sym_output.c),
# so an eager call that grows or shrinks the list is seen by the rest of the loop as in eager.

@torch.compiler.disable
def grow(lst, t):
    """never traced: appends to the caller's list while it is being looped over"""
    calls.append(1)
    if len(lst) < 5:
        lst.append(t * 2)
    return t


@torch.compiler.disable
def shrink(lst, t):
    calls.append(1)
    if len(lst) > 2:
        lst.pop()
    return t


def loop_list_break(x, ts):
    acc = x.cos()
    for t in ts:
        acc = acc + opaque(t * 2)
    return acc


def loop_list_grows(x, ts):
    acc = x.cos()
    for t in ts:
        acc = acc * 0.5 + grow(ts, t + 1)
    return acc, len(ts)


def loop_list_shrinks(x, ts):
    acc = x.cos()
    for t in ts:
        acc = acc * 0.5 + shrink(ts, t - 1)
    return acc, len(ts)


def comprehension_over_list(x, ts):
    y = x.sin()
    out = [opaque(t * 3) for t in ts]
    return y + sum(out)


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("fn", [loop_list_break, loop_list_grows, loop_list_shrinks, comprehension_over_list])
def test_break_in_a_loop_over_the_callers_list(fn, n):
    def args():
        torch.manual_seed(n)
        return torch.randn(4), [torch.randn(4) for _ in range(n)]
    x, ts = args()
    calls.clear()
    want = fn(x, ts)
    n_calls, want_ts = len(calls), list(ts)
    x, ts = args()
    ex = _ex(fn, x, ts)
    torch.testing.assert_close(ex.result, want)
    assert len(calls) == n_calls and len(ts) == len(want_ts)  # the list as eager left it
    for a, b in zip(ts, want_ts):
        torch.testing.assert_close(a, b)
    assert not any("list the caller sees" in r for r in ex.break_reasons), ex.break_reasons
    assert not any(r["event"] == "fallback" for r in ex.records), ex.break_reasons
    # Dynamo's counting: each resume entry once however many iterations ran it
    assert ex.graph_count >= 1 + (n > 0) and ex.graph_break_count == ex.graph_count - 1, ex.break_reasons
    assert not ex.eager_frames and ex.pieces_run >= 1 + n_calls, (ex.pieces_run, n_calls)
    cf = torchc.compile(fn)
    for _ in range(2):  # the cached entries and resume functions
        x, ts = args()
        torch.testing.assert_close(cf(x, ts), want)
        assert len(ts) == len(want_ts)


@pytest.mark.no_compile  # refused: f runs eagerly, with the reason
@pytest.mark.allow_fallback
def test_break_in_a_loop_over_a_list_the_trace_wrote_is_refused():
    """a list the trace appended to before its loop breaks: the loop's items are the
    trace's copy, not the caller's list: eager runs the frame and says why"""
    def f(x, ts):
        ts.append(x)
        acc = x
        for t in ts:
            acc = acc + opaque(t)
        return acc
    ts = [torch.ones(4)]
    want = f(torch.ones(4), [torch.ones(4)])
    ex = _ex(f, torch.ones(4), ts)
    torch.testing.assert_close(ex.result, want)
    assert len(ts) == 2
    assert any("list the caller sees" in r for r in ex.break_reasons), ex.break_reasons
