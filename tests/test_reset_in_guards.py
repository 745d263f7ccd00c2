"""torchc.reset() run by a guard's own Python (a custom __getattribute__ the guards re-run)
while the hook walks the cache's entries: describing a recompile (failed_guard), marking
automatic dynamic ints, torchc's cache probe. The walked entries stay pinned (alive) and the
result equals eager's. Under make test-asan a freed entry read here is a heap-use-after-free;
threads calling torchc.reset() inside compiled code (tests/stress_reliability.py) hit the same
walk at random."""
import pytest
import torch

import torchc


class Obj:
    def __init__(self):
        object.__setattr__(self, "k", 1)
        object.__setattr__(self, "arm", -1)

    def __getattribute__(self, name):
        if name == "k":
            arm = object.__getattribute__(self, "arm")
            if arm == 0:
                torchc.reset()
            object.__setattr__(self, "arm", arm - 1)
        return object.__getattribute__(self, name)


def f(a, o):
    return a * (2 if o.k == "x" else 3) + len(o.k)


def g(a, o):
    return a * o.k + 1


@pytest.mark.parametrize("at", range(0, 16))
def test_reset_inside_guard_reads(at):
    torchc.reset()
    cf = torchc.compile(f)
    o = Obj()
    x = torch.randn(5)
    for k in ("x", "yy", "zzz"):             # three entries: a str guard is never dynamic
        object.__setattr__(o, "k", k)
        torch.testing.assert_close(cf(x, o), f(x, o))
    for k in ("wwww", "x", "vvvvv"):         # a miss (each entry's guard rerun), a hit, a miss
        object.__setattr__(o, "k", k)
        object.__setattr__(o, "arm", at)     # the at-th guard read from now resets
        got = cf(x, o)
        object.__setattr__(o, "arm", -1)
        torch.testing.assert_close(got, f(x, o))
        if at > 0:
            object.__setattr__(o, "arm", at)
            assert torchc.explain(f)(x, o) is not None
            object.__setattr__(o, "arm", -1)


@pytest.mark.parametrize("at", range(0, 14))
def test_reset_inside_dynamic_int_marking(at):
    torchc.reset()
    cg = torchc.compile(g)
    o = Obj()
    x = torch.randn(5)
    torch.testing.assert_close(cg(x, o), g(x, o))
    object.__setattr__(o, "k", 2)            # the int changes: marked dynamic, recompiled
    object.__setattr__(o, "arm", at)
    got = cg(x, o)
    object.__setattr__(o, "arm", -1)
    torch.testing.assert_close(got, g(x, o))
    for k in (3, 4):
        object.__setattr__(o, "k", k)
        torch.testing.assert_close(cg(x, o), g(x, o))
