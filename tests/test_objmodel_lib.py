"""The Python library the object model traces (dynamo_hook/obj_func.c, torchc/_polyfills.py,
sideeffects.c STORE_GLOBAL, obj_proto.c __enter__/__exit__, sym_containers.c sets): itertools,
functools (partial, reduce, wraps), operator, global stores, user context managers, sets of
objects, torch.compiler.disable. Each test is differential against eager (outputs and every
state the caller sees afterwards) and asserts graph/break counts from torchc.explain, so a
silent fallback to eager fails it."""
import functools
import itertools
import operator

import pytest
import torch
import torch.nn as nn

import torchc
from conftest import assert_same, captured_whole


def whole(fn, *args, graphs=1):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert (captured_whole(ex) if graphs == 1 else (ex.graph_count, ex.graph_break_count) == (graphs, 0)), ex
    assert_same(ex.result, want)
    # the compiled entry is reused: no recompile on a second call with the same inputs
    cf = torchc.compile(fn)
    assert_same(cf(*args), want)
    assert_same(cf(*args), want)
    return ex


X = torch.randn(4, 3)


# ---- itertools ----------------------------------------------------------------------------

def test_itertools_chain_and_from_iterable():
    def f(x):
        a = sum(itertools.chain([x], (x * 2, x * 3)))
        b = list(itertools.chain.from_iterable([[x, x + 1], [x - 1]]))
        return a, b
    whole(f, X)


def test_itertools_zip_longest_product_islice():
    def f(x):
        r = [a if b is None else a + b for a, b in itertools.zip_longest([x, x * 2, x * 3], [x])]
        r += [x * a * b for a, b in itertools.product([1, 2], [3, 4, 5])]
        r += [x * a for a in itertools.islice(range(10), 2, 8, 3)]
        r += [x * a for a in itertools.islice([1, 2, 3, 4], 2)]
        return r
    whole(f, X)


def test_itertools_accumulate_starmap_pairwise():
    def f(x):
        r = list(itertools.accumulate([x, x, x * 2]))
        r += list(itertools.accumulate([1, 2, 3], operator.mul))
        r += list(itertools.starmap(torch.add, [(x, 1), (x, 2)]))
        r += [b - a for a, b in itertools.pairwise([x, x * 2, x * 4])]
        r += [x * (i + j) for i, j in itertools.combinations(range(4), 2)]
        return r
    whole(f, X)


def test_itertools_zip_longest_fillvalue_edge():
    def f(x):
        return [(a, b) for a, b in itertools.zip_longest([], [x], fillvalue=7)]
    whole(f, X)


# ---- functools ----------------------------------------------------------------------------

def test_functools_reduce():
    def f(x):
        e = functools.reduce(operator.add, [], 5)
        a = functools.reduce(operator.add, [x, x * 2, x * 3])
        b = functools.reduce(lambda p, q: p * q, [x, x], torch.ones(4, 3))
        b = functools.reduce(operator.add, [x], x)  # a tensor initial value
        c = functools.reduce(operator.mul, range(1, 5))
        return a, b, c, e
    whole(f, X)


def test_partial_made_in_the_frame():
    def f(x):
        p = functools.partial(torch.add, alpha=2)
        q = functools.partial(torch.clamp, min=-0.5)
        r = functools.partial(p, x)  # a partial of a partial
        return p(x, 1), q(x, max=0.5), r(torch.ones(4, 3)), p(x, 1, alpha=3)
    whole(f, X)


P = functools.partial(torch.mul, 3)


def test_partial_global_and_passed_in():
    def f(x, g):
        return P(x) + g(x)
    whole(f, X, functools.partial(torch.sub, other=1.0))


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_partial_made_in_frame_returned_falls_back():
    # a partial made in the frame cannot leave it: eager runs, the caller gets a real partial
    def f(x):
        return functools.partial(torch.add, x)

    torchc.reset()
    ex = torchc.explain(f)(X)
    assert ex.graph_count == 0
    assert isinstance(ex.result, functools.partial)


def test_functools_wraps_on_a_nested_function():
    def deco(fn):
        @functools.wraps(fn)
        def w(*a, **k):
            return fn(*a, **k) + 1
        return w

    def f(x):
        return deco(lambda y: y * 3)(x)
    whole(f, X)


# ---- operator -----------------------------------------------------------------------------

def test_operator_functions_and_getters():
    def f(x):
        a = operator.mul(operator.getitem([x, 2], 0), operator.itemgetter(1)([0, 3]))
        b = operator.attrgetter("shape")(x)[0] * x
        c = operator.itemgetter(0, 2)([x, 1, x * 2])
        d = operator.methodcaller("sum", 0)(x)
        e = operator.neg(x) + operator.truediv(x, 2) + operator.pow(x, 2)
        return a, b, c, d, e, operator.eq(1, 1), operator.contains([1, 2], 2)
    whole(f, X)


# ---- STORE_GLOBAL -------------------------------------------------------------------------

COUNTER = 0
SCALE = 1.0


def _bump(x):
    global COUNTER
    COUNTER += 1
    return x * COUNTER


def test_store_global_replayed_after_the_graph():
    def f(x):
        global SCALE
        SCALE = SCALE * 2
        y = x * SCALE  # reads the value just stored
        return _bump(y)  # an inlined function's global store

    global COUNTER, SCALE
    COUNTER, SCALE = 0, 1.0
    want = f(X)
    want_state = (COUNTER, SCALE)
    COUNTER, SCALE = 0, 1.0
    torchc.reset()
    ex = torchc.explain(f)(X)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert_same(ex.result, want)
    assert (COUNTER, SCALE) == want_state == (1, 2.0)
    # the entry is reused: each call reads and writes the current values, as eager
    cf = torchc.compile(f)
    COUNTER, SCALE = 0, 1.0
    r1 = cf(X)
    r2 = cf(X)
    assert (COUNTER, SCALE) == (2, 4.0)
    assert_same(r1, want)
    assert_same(r2, X * 4.0 * 2)


# ---- user context managers ----------------------------------------------------------------

class Scope:
    def __init__(self, log):
        self.log = log
        self.depth = 0

    def __enter__(self):
        self.depth += 1
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.depth -= 1
        self.log.append("exit")
        return False


def test_user_context_manager_enter_exit():
    def f(x, log):
        s = Scope(log)
        with s as c:
            y = x * (c.depth + 1)
        with Scope(log):
            y = y + 1
        return y, s.depth

    log_e, log_c = [], []
    want = f(X, log_e)
    torchc.reset()
    ex = torchc.explain(f)(X, log_c)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert_same(ex.result[0], want[0])
    assert ex.result[1] == want[1] == 0
    assert log_c == log_e == ["enter", "exit", "enter", "exit"]


# ---- sets of objects ----------------------------------------------------------------------

class Tree(nn.Module):
    def __init__(self):
        super().__init__()
        shared = nn.Linear(3, 3)
        self.a = nn.Sequential(shared, nn.ReLU())
        self.b = nn.Sequential(shared, nn.Tanh())  # a module reachable twice

    def forward(self, x):
        n = 0
        for name, m in self.named_modules():
            n += 1
        memo = set()
        for m in self.modules():
            memo.add(m)
        return self.b(self.a(x)) * n + len(memo) + (self.a in memo)


def test_named_modules_memo_set_of_modules():
    m = Tree()
    whole(m, X)


def test_set_methods_and_identity():
    def f(x):
        s = {1, 2}
        t = s  # the same set
        t.add(3)
        s.discard(1)
        s.update([4, 5])
        u = s.copy()
        u.add(9)
        return x * len(s) + x * len(u), len(t), 9 in s, 4 in t, 1 in t
    whole(f, X)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_set_of_objects_returned_falls_back():
    lin = nn.Linear(3, 3)

    def f(x):
        s = set()
        s.add(lin)
        return lin(x), s

    want = f(X)
    torchc.reset()
    got = torchc.compile(f)(X)
    assert_same(got[0], want[0])
    assert got[1] == want[1] == {lin}


# ---- torch.compiler.disable ---------------------------------------------------------------

def test_compiler_disable_never_traced():
    seen = []

    @torch.compiler.disable
    def side(x):
        seen.append(torch.compiler.is_compiling())
        return x + 1

    def f(x):
        return side(x * 2) * 3

    want = f(X)
    assert seen == [False]
    torchc.reset()
    ex = torchc.explain(f)(X)
    assert_same(ex.result, want)
    # the disabled function ran eagerly, unhooked: no graph of its own, is_compiling False
    assert seen == [False, False]
    assert ex.graph_count == 2 and ex.graph_break_count == 1, ex


# ---- iterators passed in, loops broken in every iteration ---------------------------------

def test_iterator_passed_in_is_advanced_as_eager():
    def f(it, x):
        for k in it:
            x = x * k
            if k == 3:
                break
        return x

    def run(fn):
        it = iter([1, 2, 3, 4, 5])
        r = fn(it, X)
        return r, list(it)

    want, rest = run(f)
    torchc.reset()
    ex = torchc.explain(f)(iter([1, 2, 3, 4, 5]), X)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    got, rest_c = run(torchc.compile(f))
    assert_same(got, want)
    assert rest_c == rest == [4, 5]


def test_iterator_drained_and_range_iterator():
    def f(it, r, x):
        # (a generator advancing an iterator passed in is refused: it runs to completion
        # while tracing, eager might stop early)
        return x * sum(list(it)) + sum(list(r))

    want = f(iter((1, 2, 3)), iter(range(4)), X)
    torchc.reset()
    ex = torchc.explain(f)(iter((1, 2, 3)), iter(range(4)), X)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    assert_same(ex.result, want)


class BreakBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        print("", end="")  # a graph break (print is not traced)
        return torch.relu(y) + x


class Deep(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.ModuleList(BreakBlock() for _ in range(n))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        x = x * 2
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def test_48_blocks_broken_in_each_never_reach_the_recompile_limit():
    m = Deep(48).eval()
    x = torch.randn(2, 8)
    with torch.no_grad():
        want = m(x)
        torchc.reset()
        ex = torchc.explain(m)(x)
        assert_same(ex.result, want)
        assert not any("recompile limit" in str(r) for r in ex.break_reasons), ex.break_reasons[:3]
        assert ex.pieces_run >= 48  # captured pieces that ran (hits included): at least one per block
        # compiles per code object: the loop's resume function and the block's forward are
        # compiled a bounded number of times, not once per layer
        per = ex.compiles_per_code
        assert per and max(per.values()) <= 4, per
        cm = torchc.compile(m)
        assert_same(cm(x), want)


def test_yield_from_in_a_generator():
    def gen(xs):
        yield xs[0]
        yield from (y * 2 for y in xs[1:])
        yield from [xs[0] + 1]

    def f(x):
        return list(gen([x, x + 1, x + 2]))
    whole(f, X)


def test_context_variable_set_many_times_nested():
    import contextvars
    cv = contextvars.ContextVar("torchc_test_depth", default=0)

    def f(x):
        toks = []
        for i in range(6):  # deeper than the old fixed depth (4)
            toks.append(cv.set(i + 1))
            x = x * cv.get()
        for tk in reversed(toks):
            cv.reset(tk)
        return x, cv.get()
    whole(f, X)
