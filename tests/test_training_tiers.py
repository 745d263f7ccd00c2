"""Tiered CPU code (issue 22, "first step < 2 s"): a big graph runs first on code made quickly
(config cpu_tiers: no loop passes, LLVM's fast instruction selector) while its optimized code is
made on a background thread and swapped in (inductor_c/tier.c).

Every test sets cpu_tiers = 1 (every graph tiered) and checks the counters of
torchc._C.cache_stats(): tier0 (graphs compiled quickly), tier1 (optimized code swapped in),
so it fails when the tiers are not taken; values are compared with eager's before and after
the swap (torchc._C.tier_wait)."""
import gc

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same


def stats():
    return torchc._C.cache_stats()


@pytest.fixture(autouse=True)
def tiers(tmp_path):
    torchc._C.tier_wait()
    torchc.config.cpu_tiers = 1
    # a disk cache of the test's own: optimized code an earlier test put there is loaded at
    # once (not tiered)
    torchc.config.cache_dir = str(tmp_path)
    yield
    torchc._C.tier_wait()


def fresh_fn():
    # a new code object each time: no compile of another test is shared
    def f(x, y, w):
        a = torch.sin(x) * y + torch.exp(-x * x)
        b = (a @ w).softmax(-1)
        return b.sum(1) + a.mean(1), F.gelu(a).amax(0)
    return f


@pytest.mark.parametrize("shape", [(1, 1), (7, 33), (64, 130)])
def test_tier0_then_tier1_equal_eager(shape):
    f = fresh_fn()
    n, m = shape
    x, y, w = torch.randn(n, m), torch.randn(n, m), torch.randn(m, 5)
    s0 = stats()
    cf = torchc.compile(f)
    got0 = cf(x, y, w)
    s1 = stats()
    assert s1["tier0"] == s0["tier0"] + 1, (s0, s1)
    want = f(x, y, w)
    assert_same(got0, want)
    torchc._C.tier_wait()
    s2 = stats()
    assert s2["tier1"] == s1["tier1"] + 1 and s2["tier_failed"] == s0["tier_failed"], (s1, s2)
    assert_same(cf(x, y, w), want)
    # non-contiguous and broadcast operands through the same graph's code (a recompile at most)
    xt = torch.randn(m, n).t()
    assert_same(cf(xt, y[:1].expand(n, m), w), f(xt, y[:1].expand(n, m), w))


def test_off_compiles_once_at_full_optimization():
    torchc.config.cpu_tiers = 0
    f = fresh_fn()
    x, y, w = torch.randn(4, 6), torch.randn(4, 6), torch.randn(6, 3)
    s0 = stats()
    assert_same(torchc.compile(f)(x, y, w), f(x, y, w))
    s1 = stats()
    assert s1["tier0"] == s0["tier0"], (s0, s1)


def test_threshold_counts_llvm_instructions():
    torchc.config.cpu_tiers = 1 << 30  # no graph is that big
    f = fresh_fn()
    x, y, w = torch.randn(4, 6), torch.randn(4, 6), torch.randn(6, 3)
    s0 = stats()
    assert_same(torchc.compile(f)(x, y, w), f(x, y, w))
    assert stats()["tier0"] == s0["tier0"]


def test_split_reduction_and_its_combine_kernel_swap():
    # a long reduction is split (a kernel and its combine step: fns slots 2k and 2k+1)
    def f(x):
        return x.sum(), (x * x).mean(), x.amax()
    x = torch.randn(3_000_001)
    s0 = stats()
    cf = torchc.compile(f)
    want = f(x)
    assert_same(cf(x), want, rtol=1e-5, atol=1e-3)
    torchc._C.tier_wait()
    s1 = stats()
    assert s1["tier0"] > s0["tier0"] and s1["tier1"] > s0["tier1"], (s0, s1)
    assert_same(cf(x), want, rtol=1e-5, atol=1e-3)


def test_dynamic_shapes_graph_tiered():
    def f(x):
        return torch.tanh(x).cumsum(0)[..., :1] + x.logsumexp(-1, keepdim=True)
    cf = torchc.compile(f, dynamic=True)
    s0 = stats()
    for n in (3, 9, 17):
        x = torch.randn(n, 5)
        assert_same(cf(x), f(x))
    torchc._C.tier_wait()
    s1 = stats()
    assert s1["tier1"] > s0["tier1"], (s0, s1)
    for n in (2, 31):
        x = torch.randn(n, 5)
        assert_same(cf(x), f(x))


def test_graph_freed_before_its_tier_up():
    # the compiled graph goes away while its optimized code may still be in the making:
    # nothing is swapped into freed memory, nothing fails
    torchc.config.disk_cache = False  # each compile tiered, whenever the previous tier-up ends
    s0 = stats()
    for _ in range(3):
        f = fresh_fn()
        x, y, w = torch.randn(16, 40), torch.randn(16, 40), torch.randn(40, 7)
        assert_same(torchc.compile(f)(x, y, w), f(x, y, w))
        del f
        torchc.reset()
        gc.collect()
    torchc._C.tier_wait()
    s1 = stats()
    assert s1["tier0"] == s0["tier0"] + 3 and s1["tier_failed"] == s0["tier_failed"], (s0, s1)
    assert s1["tier1"] <= s0["tier1"] + 3


def test_tier1_code_shared_by_key_and_put_on_disk():
    f = fresh_fn()
    x, y, w = torch.randn(5, 9), torch.randn(5, 9), torch.randn(9, 2)
    s0 = stats()
    cf = torchc.compile(f)
    assert_same(cf(x, y, w), f(x, y, w))
    torchc._C.tier_wait()
    s1 = stats()
    assert s1["tier1"] == s0["tier1"] + 1
    assert torchc.config.disk_cache is False or s1["disk_writes"] > s0["disk_writes"], (s0, s1)
    # the same graph compiled again (every compiled entry dropped): its optimized code is
    # found by key (in this process or on disk), not made again and not tiered
    torchc.reset()
    cf2 = torchc.compile(f)
    assert_same(cf2(x, y, w), f(x, y, w))
    s2 = stats()
    found = s2["code_shared"] - s1["code_shared"] + s2["disk_loaded"] - s1["disk_loaded"]
    assert s2["tier0"] == s1["tier0"] and found == 1, (s1, s2)
    del cf


class Block(nn.Module):
    def __init__(self, d=24):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 3 * d)
        self.fc2 = nn.Linear(3 * d, d)
        self.bn = nn.BatchNorm1d(d)

    def forward(self, x):
        h = x + self.fc2(F.gelu(self.fc1(self.ln(x))))
        return self.bn(h).tanh().sum(1)


def test_training_steps_forward_and_backward_tiered():
    torch.manual_seed(0)
    me = Block()
    mc = Block()
    mc.load_state_dict(me.state_dict())
    oe = torch.optim.SGD(me.parameters(), lr=0.1, momentum=0.9)
    oc = torch.optim.SGD(mc.parameters(), lr=0.1, momentum=0.9)
    cm = torchc.compile(mc)
    s0 = stats()
    for i in range(6):
        x = torch.randn(10, 24)
        le = me(x).square().mean()
        lc = cm(x).square().mean()
        le.backward()
        lc.backward()
        oe.step()
        oc.step()
        oe.zero_grad()
        oc.zero_grad()
        assert_same(lc, le, rtol=1e-4, atol=1e-5)
        if i == 2:
            s1 = stats()
            assert s1["tier0"] >= s0["tier0"] + 2, (s0, s1)  # the forward and the backward graph
            torchc._C.tier_wait()
            assert stats()["tier1"] >= s0["tier1"] + 2
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert_same(pc, pe, rtol=1e-4, atol=1e-5)
    for be, bc in zip(me.buffers(), mc.buffers()):
        assert_same(bc, be, rtol=1e-4, atol=1e-5)
    ex = torchc.explain(cm)(torch.randn(10, 24))
    assert ex.graph_count == 1 and ex.backward_graph_count == 1, str(ex)


def test_fork_while_tiering_child_does_not_hang():
    # a child forked while the tier-up may run: the fork handlers leave it no thread and an
    # empty queue, so tier_wait returns at once there (the child computes nothing with torch:
    # eager's thread pools are not fork-safe); the parent's graph tiers up as before
    import os
    import sys
    import time
    if not hasattr(os, "fork") or sys.platform != "linux":
        pytest.skip("fork")
    f = fresh_fn()
    x, y, w = torch.randn(8, 12), torch.randn(8, 12), torch.randn(12, 3)
    cf = torchc.compile(f)
    want = f(x, y, w)
    assert_same(cf(x, y, w), want)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            torchc._C.tier_wait()
            code = 0 if torchc._C.cache_stats()["tier0"] >= 1 else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert done and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    torchc._C.tier_wait()
    assert_same(cf(x, y, w), want)


def test_same_graph_twice_at_tier0_both_alive():
    # the in-memory cache off: the same graph compiled again while the first is alive and
    # before its optimized code exists; the tier-0 code of each loads under names of its own
    # (before: 'Duplicate definition of symbol', the second frame ran eagerly)
    torchc.config.cache = False
    f = fresh_fn()
    x, y, w = torch.randn(6, 10), torch.randn(6, 10), torch.randn(10, 4)
    s0 = stats()
    g = fresh_fn()
    g.__code__ = g.__code__.replace(co_name="g")  # a code object of its own: an entry of its own
    a = torchc.compile(f)
    b = torchc.compile(g)
    ga, gb = a(x, y, w), b(x, y, w)
    s1 = stats()
    assert s1["tier0"] == s0["tier0"] + 2, (s0, s1)
    assert_same(ga, f(x, y, w))
    assert_same(gb, f(x, y, w))
    torchc._C.tier_wait()
    assert_same(a(x, y, w), f(x, y, w))
    assert_same(b(x, y, w), f(x, y, w))
    assert stats()["tier_failed"] == s0["tier_failed"]
