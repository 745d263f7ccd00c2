"""Python that torchc runs while it holds pointers into the frame's objects or its own state:
a custom __getattribute__ the guards re-run, a finalizer run by torchc.reset(), the replay of
attribute writes after the graph. That Python rebinds what the guards had resolved, resets,
or compiles again; the compiled call must stay what eager computes. Before the fixes: the
guards kept borrowed pointers to objects the getattr freed (the wrong tensor read: pymalloc
had reused the slot; heap-use-after-free under ASan with PYTHONMALLOC=malloc), a reset run by
a finalizer freed entries the outer reset was walking (double free, abort), and a replayed
write freed the object the next write went to."""
import gc
import types

import pytest
import torch

import torchc
from conftest import captured_whole, explain_of

ARM = [0]
G = torch.ones(64)
L = [torch.ones(64)]


def _fresh_state():
    global G
    G = torch.ones(64)
    L[0] = torch.ones(64)


class _Hostile:
    """o.k runs `act` once when armed (ARM[0] == 1), as the guards' full getattr does"""
    k = 2.0

    def __init__(self, act=None, p=None):
        object.__setattr__(self, "act", act)
        object.__setattr__(self, "p", p)

    def __getattribute__(self, name):
        if name == "k" and ARM[0]:
            ARM[0] = 0
            object.__getattribute__(self, "act")(self)
        return object.__getattribute__(self, name)


def _rebind_global(o):
    globals()["G"] = torch.full((64,), 7.0)


def _rebind_item(o):
    L[0] = torch.full((64,), 7.0)


def _rebind_attr(o):
    object.__getattribute__(o, "p").w = torch.full((64,), 7.0)


def f_global(x, o):
    return x + G * o.k


def f_item(x, o):
    return x + L[0] * o.k


def f_attr(x, p, o):
    return x + p.w * o.k


def _make_cell():
    w = torch.ones(64)

    def rebind(o):
        nonlocal w
        w = torch.full((64,), 7.0)

    def reset():
        nonlocal w
        w = torch.ones(64)

    def f_cell(x, o):
        return x + w * o.k
    return f_cell, rebind, reset


f_cell, _rebind_cell, _reset_cell = _make_cell()


class _P:
    pass


def _args(case, x):
    if case == "global":
        return f_global, (x, _Hostile(_rebind_global))
    if case == "item":
        return f_item, (x, _Hostile(_rebind_item))
    if case == "cell":
        return f_cell, (x, _Hostile(_rebind_cell))
    p = _P()
    p.w = torch.ones(64)
    return f_attr, (x, p, _Hostile(_rebind_attr, p))


@pytest.mark.parametrize("case", ["global", "item", "attr", "cell"])
def test_guard_getattr_rebinds_a_resolved_source(case):
    """the guards resolve G (borrowed from the globals), then o.k's getattr rebinds G: eager
    had read the old G before o.k, and so must the compiled call (the old one kept alive)"""
    x = torch.randn(64)
    fn, _ = _args(case, x)
    cf = torchc.compile(fn)
    for rep in range(3):
        _fresh_state()
        _reset_cell()
        fn, args = _args(case, x)
        ARM[0] = 1
        want = fn(*args)
        _fresh_state()
        _reset_cell()
        fn, args = _args(case, x)
        ARM[0] = 1 if rep else 0            # the first call compiles, the others run the guards
        got = cf(*args)
        ARM[0] = 0
        torch.testing.assert_close(got, want)
    _fresh_state()
    _reset_cell()
    assert captured_whole(explain_of(fn, *_args(case, x)[1]))


def test_finalizer_resets_inside_reset():
    """a backend's compiled callable with a __del__ that resets and compiles again: it runs
    while torchc.reset() frees the entries (which held the callable)"""
    log = []
    other = torchc.compile(lambda y: y - 3)

    class Fn:
        def __init__(self, gm):
            self.gm = gm

        def __call__(self, *a):
            return self.gm(*a)

        def __del__(self):
            log.append("del")
            torchc.reset()
            other(torch.ones(2))

    def backend(gm, example_inputs):
        return Fn(gm)

    def f(x):
        return x * 2 + 1

    def g(x):
        return x.sin() - 1
    x = torch.randn(4)
    for _ in range(3):
        cf, cg = torchc.compile(f, backend=backend), torchc.compile(g, backend=backend)
        torch.testing.assert_close(cf(x), f(x))
        torch.testing.assert_close(cg(x), g(x))
        del cf, cg
        torchc.reset()
        gc.collect()
    assert log.count("del") >= 6
    torch.testing.assert_close(other(x), x - 3)


def test_replayed_write_drops_the_next_target():
    """c = self.child; self.child = None; c.v = ...: the first replayed write drops the child
    the second one writes to (values[] only borrowed it from self's dict); eager keeps it in
    the local c until the frame returns"""
    seen = []

    class Child:
        def __del__(self):
            seen.append(getattr(self, "v", None) is not None)

    class Owner:
        pass

    def f(self, x):
        c = self.child
        self.child = None
        c.v = x + 1
        return x * 2

    cf = torchc.compile(f)
    x = torch.randn(4)
    for _ in range(3):
        s = Owner()
        s.child = Child()
        got = cf(s, x)
        torch.testing.assert_close(got, x * 2)
        assert s.child is None
    s = Owner()
    s.child = Child()
    f(s, x)
    gc.collect()
    assert seen == [True] * 4, seen            # each child had its v when it died, as in eager
    s.child = Child()
    assert explain_of(f, s, x).graph_count == 1


def test_probe_finalizer_resets_after_the_hit():
    """torchc._C.probe (reduce-overhead's guard check): the guards' full getattr answers a fresh
    object whose __del__ resets; it dies when the probe clears its scratch list, which freed the
    entry the probe had found before it read it (heap-use-after-free under ASan)"""
    dels = []

    class Fresh:
        def __init__(self, v):
            self.v = v

        def __del__(self):
            if ARM[0]:
                ARM[0] = 0
                dels.append(1)
                torchc.reset()

    class O:
        def __getattribute__(self, name):
            if name == "k":
                return Fresh(2.0)
            return object.__getattribute__(self, name)

    def f(x, o):
        return x * o.k.v

    cf = torchc.compile(f)
    x = torch.randn(4)
    torch.testing.assert_close(cf(x, O()), f(x, O()))
    for _ in range(3):
        torch.testing.assert_close(cf(x, O()), f(x, O()))
        o = O()
        ARM[0] = 1
        r = torchc._C.probe(f, (x, o), None, cf)
        ARM[0] = 0
        assert isinstance(r, int)              # the hit, found before the reset
    assert len(dels) == 3


W = torch.ones(8)


def test_backend_rebinds_a_returned_input():
    """a backend's compiled graph (Python) rebinds the global the frame returns as is: values[]
    borrowed it from the globals, and the output was built from the freed tensor"""
    def backend(gm, example_inputs):
        def run(*a):
            if ARM[0]:
                ARM[0] = 0
                globals()["W"] = torch.zeros(8)
            return gm(*a)
        return run

    def f(x):
        return x + W, W

    cf = torchc.compile(f, backend=backend)
    x = torch.randn(8)
    torch.testing.assert_close(cf(x)[0], x + 1)
    for _ in range(3):
        globals()["W"] = torch.ones(8)
        ARM[0] = 1
        got = cf(x)
        ARM[0] = 0
        gc.collect()
        torch.testing.assert_close(got[0], x + 1)
        torch.testing.assert_close(got[1], torch.ones(8))   # the W the graph read, alive
