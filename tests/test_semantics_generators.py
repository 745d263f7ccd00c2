"""Generators run lazily inside compiled code, and @contextlib.contextmanager `with` blocks
(issue 21 item 1; dynamo_hook/sym_gen.c).

A generator's frame is suspended at each yield and resumed by its consumer (next(), a for
loop, `yield from`, a `with` block's enter and exit), so its body's graph ops and side effects
happen in eager's order. Each test compares with eager and asserts one graph and no break: a
fallback to eager fails it. Exceptions in a `with` body propagate as in eager (that frame
runs eagerly) and the generator's cleanup runs.
"""
import contextlib

import pytest
import torch

import torchc


def _whole(fn, *args, graphs=1):
    torchc.reset()
    want = fn(*args)
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    torch.testing.assert_close(torchc.compile(fn)(*args), want)
    return ex


def gen(x, n):
    for i in range(n):
        yield x * i


def test_sum_and_genexpr():
    _whole(lambda x: sum(gen(x, 3)), torch.randn(4, 5))
    _whole(lambda x: torch.stack(list(x * i for i in range(3))), torch.randn(3))
    _whole(lambda x: x * 2 if all(s > 0 for s in x.shape) else x, torch.randn(2, 3))


def test_next_and_default():
    def f(x):
        g = gen(x, 2)
        a = next(g)
        b = next(g)
        c = next(g, None)
        return a + b if c is None else c

    _whole(f, torch.randn(4))


def test_for_loop_with_break_and_enumerate_zip():
    def f(x):
        out = x
        for t in gen(x, 10):  # left suspended (outside any try): nothing to clean up
            out = out + t
            if out.shape[0] == 3:
                break
        for i, t in enumerate(gen(x, 3)):
            out = out + i * t
        return out + sum(a * b for a, b in zip(gen(x, 3), gen(x + 1, 4)))

    _whole(f, torch.randn(3, 2))


def _sub(x):
    yield x
    yield x + 1
    return 10


def _deleg(x):
    r = yield from _sub(x)
    yield x * r
    yield from [x - 1, x - 2]


def test_yield_from():
    _whole(lambda x: torch.stack(list(_deleg(x))), torch.randn(3))

    def f(x):
        g = _deleg(x)
        return next(g) * next(g) + next(g)

    _whole(f, torch.randn(3))


def _logged(x, log):
    log.append("start")
    yield x
    log.append("middle")
    yield x + 1
    log.append("end")


def test_side_effects_interleave_like_eager():
    def f(x):
        log = []
        g = _logged(x, log)
        a = next(g)
        n1 = len(log)
        b = next(g)
        return a + b + n1 * 10 + len(log) * 100

    ex = _whole(f, torch.randn(2))
    assert torch.allclose(ex.result - (2 * ex.result.new_tensor(0)), ex.result)


def test_side_effects_on_caller_list_replayed_in_order():
    def f(x, log):
        for t in _logged(x, log):
            x = x + t
        return x

    log_e, log_c = [], []
    want = f(torch.ones(2), log_e)
    torchc.reset()
    ex = torchc.explain(f)(torch.ones(2), log_c)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    assert log_c == log_e == ["start", "middle", "end"]


@contextlib.contextmanager
def _doubled(t):
    yield t * 2


class _State:
    depth = 0
    exits = 0


_STATE = _State()


@contextlib.contextmanager
def _scoped(scale):
    _STATE.depth += 1
    try:
        yield _STATE.depth * scale
    finally:
        _STATE.depth -= 1
        _STATE.exits += 1


def test_contextmanager_with_block():
    def f(x):
        with _doubled(x) as y:
            z = y + 1
        return z

    _whole(f, torch.randn(3, 4))


def test_contextmanager_nested_with_cleanup_state():
    def f(x):
        with _scoped(2) as d:
            y = x * d
            with _scoped(3) as d2:
                y = y + d2
        return y + _STATE.depth

    x = torch.randn(4)
    _STATE.depth = _STATE.exits = 0
    _whole(f, x)
    assert _STATE.depth == 0
    assert _STATE.exits == 3 * 2  # eager, explain's run, compile's run: the exits replayed


@pytest.mark.allow_fallback  # the call that raises runs eagerly
def test_contextmanager_exception_in_body_propagates():
    def f(x):
        with _scoped(1):
            if x.shape[0] == 3:
                raise ValueError("three")
            y = x + 1
        return y

    _STATE.depth = _STATE.exits = 0
    torchc.reset()
    ex = torchc.explain(f)(torch.ones(2))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, torch.ones(2) + 1)
    cf = torchc.compile(f)
    with pytest.raises(ValueError, match="three"):
        cf(torch.ones(3))
    assert _STATE.depth == 0 and _STATE.exits == 2  # the finally ran both times


def _guarded_gen(x, log):
    try:
        yield x
        yield x + 1
    finally:
        log.append("closed")


@pytest.mark.allow_fallback  # the suspended try/finally generator: the frame runs eagerly
@pytest.mark.no_compile
def test_generator_left_inside_try_runs_eagerly():
    def f(x, log):
        g = _guarded_gen(x, log)
        return next(g) * 2

    log_e, log_c = [], []
    want = f(torch.ones(2), log_e)
    torchc.reset()
    got = torchc.compile(f)(torch.ones(2), log_c)
    torch.testing.assert_close(got, want)
    assert log_c == log_e == ["closed"]
    torchc.reset()
    ex = torchc.explain(f)(torch.ones(2), [])
    assert ex.graph_count == 0 and any("left suspended" in r for r in ex.break_reasons), ex.break_reasons


def test_generator_in_module_forward():
    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))

        def feats(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
                yield x

        def forward(self, x):
            return torch.cat(tuple(self.feats(x)), -1)

    m = Stack().eval()
    with torch.no_grad():
        _whole(lambda x: m(x), torch.randn(2, 4))


class _WithScope(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = 3.0

    @contextlib.contextmanager
    def scaled(self, k):
        yield self.scale * k

    def forward(self, x):
        with self.scaled(2) as s:
            y = self.lin(x) * s
        return y


def test_contextmanager_method_in_module_forward():
    m = _WithScope().eval()
    with torch.no_grad():
        _whole(lambda x: m(x), torch.randn(2, 4))


@contextlib.contextmanager
def _amp():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yield


def _enter_amp(g):
    next(g)  # the region stays open after this helper returns, as in eager


def test_autocast_region_held_by_suspended_generator():
    def f(x):
        with _amp():
            a = x @ x
        g = _amp_gen()
        _enter_amp(g)
        b = x @ x
        next(g, None)
        c = x @ x
        return a, b, c

    x = torch.randn(3, 3)
    want = f(x)
    assert [v.dtype for v in want] == [torch.bfloat16, torch.bfloat16, torch.float32]
    _whole(f, x)


def _amp_gen():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yield


def _deleg_tree(m):
    for c in m.children():
        yield from _deleg_tree(c)
    yield from m.parameters(recurse=False)


def test_yield_from_left_suspended_is_whole():
    """`next(p.dtype for p in model.parameters())` (transformers' ModuleUtilsMixin.dtype)
    leaves nn.Module's generators suspended inside `yield from`: on 3.12 that yield is covered
    by a CLEANUP_THROW handler the compiler adds, not by a try/with of the code, so there is
    nothing for close() to clean up and the trace stays whole (it broke on 3.12 only)."""
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sequential(torch.nn.Linear(3, 3)))

    def f(x):
        dt = next(p.dtype for p in m.parameters() if p.is_floating_point())
        first = next(_deleg_tree(m[1]))
        return (x.to(dt) @ first).relu()

    _whole(f, torch.randn(2, 3))


def _deleg_in_try(x, log):
    try:
        yield from gen(x, 3)
    finally:
        log.append("closed")


@pytest.mark.no_compile  # the suspended try/finally around `yield from`: eager
def test_yield_from_inside_try_left_suspended_runs_eagerly():
    def f(x, log):
        return next(_deleg_in_try(x, log)) + 1

    log_e, log_c = [], []
    want = f(torch.ones(2), log_e)
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(torch.ones(2), log_c), want)
    assert log_c == log_e == ["closed"]
    torchc.reset()
    ex = torchc.explain(f)(torch.ones(2), [])
    assert ex.graph_count == 0 and any("left suspended" in r for r in ex.break_reasons), ex.break_reasons
