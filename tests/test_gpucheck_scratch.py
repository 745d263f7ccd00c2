"""The objects a guard check makes (a custom __getattribute__'s result, re-run by the guard)
live in a scratch list until the call's output is built (dynamo_hook/guards.c). That list was
one per process: a thread that finished its call cleared it while another thread's guard check
(in the getattr's Python, the GIL released) still borrowed its objects, which were freed and
their memory reused (a segfault, or a fresh tensor read as the same object as the one before).
Now it is per thread, and each call clears only its own part."""
import os
import subprocess
import sys
import threading
import time

import torch

import torchc


class Box:
    """b.t and b.u: a fresh tensor at every getattr (a custom __getattribute__, which the
    trace does not inline: the guard re-runs it); time.sleep(0) lets another thread run"""

    def __init__(self, v):
        object.__setattr__(self, "v", v)

    def __getattribute__(self, name):
        if name in ("t", "u"):
            time.sleep(0)
            v = object.__getattribute__(self, "v")
            return torch.full((4096,), float(v) + (name == "u"))
        return object.__getattribute__(self, name)


def f(b):
    return b.t * 2 + b.u


def test_fresh_getattr_results_are_two_inputs():
    """the trace holds each getattr result: the second fresh tensor, allocated where the
    first was freed, was taken for the same object (an ALIAS guard the real call fails:
    'internal: guards reject their own frame')"""
    cf = torchc.compile(f)
    for v in (1, 2, 3):
        ex = torchc.explain(cf)(Box(v))
        torch.testing.assert_close(ex.result, f(Box(v)))
        assert ex.internal_faults == 0, ex.last_internal_fault
    assert ex.graph_count <= 1
    assert [r["event"] for r in ex.records] == ["hit"] or ex.graph_count == 1


_THREADS = r"""
import sys, threading, torch, torchc
sys.path.insert(0, sys.argv[1])
from test_gpucheck_scratch import Box, f
cf = torchc.compile(f)
cf(Box(0))
bad = []
def work(k):
    for i in range(250):
        v = k * 1000 + i
        if not torch.equal(cf(Box(v)), f(Box(v))):
            bad.append((k, i))
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
s = torchc._C.stats()
print("bad", len(bad), "compiles", s["compiles"], "hits", s["hits"], "faults", s["internal_faults"])
assert not bad and s["compiles"] == 1 and s["internal_faults"] == 0 and s["hits"] >= 1000, s
"""


def test_threads_share_no_guard_scratch():
    """4 threads x 250 calls, each guard check runs Python between its two getattrs; in a
    subprocess: the old shared list crashed the process (2 of 3 runs) or lost the compile"""
    r = subprocess.run([sys.executable, "-c", _THREADS, os.path.dirname(__file__)], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert "bad 0 compiles 1" in r.stdout, r.stdout


def test_nested_compiled_call_keeps_the_outer_calls_objects():
    """a compiled call made inside another's run (at a graph break) clears only its own
    part of the thread's list"""
    inner = torchc.compile(f)

    def outer(b, c):
        x = b.t + 1
        print("", end="")  # a graph break: the rest runs in a resume function
        y = inner(c)
        return x * b.u + y

    co = torchc.compile(outer)
    for v in range(4):
        got = co(Box(v), Box(10 + v))
        torch.testing.assert_close(got, outer(Box(v), Box(10 + v)))
    ex = torchc.explain(co)(Box(7), Box(8))
    torch.testing.assert_close(ex.result, outer(Box(7), Box(8)))
    assert ex.internal_faults == 0
    assert ex.graph_count >= 1
