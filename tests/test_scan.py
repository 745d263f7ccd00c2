"""torchc.scan: torch.scan's semantics, the body compiled once and run as a C loop.

Every differential test compares values and gradients against the same recurrence written as
a Python loop in eager, and asserts that the scan really ran in C (torchc._scan.last_fallback
is None and the C loop counted the steps), so a silent fallback to a Python loop fails."""
import gc
import os
import subprocess
import sys

import pytest
import torch

import torchc
from torchc import _scan


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def rel(a, b):
    a, b = a.detach().to(b.dtype), b.detach()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def eager_scan(fn, init, xs, reverse=False):
    """torch's scan semantics (dim 0, tensor leaves) as a Python loop"""
    carry, ys = init, []
    T = xs.size(0) if isinstance(xs, torch.Tensor) else next(iter(xs.values())).size(0)
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        x = xs[t] if isinstance(xs, torch.Tensor) else {k: v[t] for k, v in xs.items()}
        carry, y = fn(carry, x)
        ys.append(y)
    if reverse:
        ys = ys[::-1]
    if isinstance(ys[0], torch.Tensor):
        return carry, torch.stack(ys)
    return carry, tuple(torch.stack([y[i] for y in ys]) for i in range(len(ys[0])))


def runs():
    return torchc._C._scan_stats()[1]


def check_grads(got, want, tol):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            assert g.shape == w.shape and g.dtype == w.dtype
            assert rel(g, w) < tol, rel(g, w)


@pytest.mark.parametrize("T", [1, 2, 7])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rnn_values_and_grads_against_python_loop(T, dtype):
    torch.manual_seed(T)
    n, N = 6, 3
    W = (torch.randn(n, n, dtype=dtype) / n ** 0.5).requires_grad_()
    b = torch.randn(n, dtype=dtype, requires_grad=True)

    def step(h, x):
        z = x + h @ W.t()
        h = torch.tanh(z) * b
        return h, h * 2 + 1

    h0 = torch.randn(N, n, dtype=dtype, requires_grad=True)
    xs = torch.randn(T, N, n, dtype=dtype, requires_grad=True)
    r0 = runs()
    c, ys = torchc.scan(step, h0, xs)
    assert _scan.last_fallback is None
    ce, yse = eager_scan(step, h0, xs)
    tol = 1e-12 if dtype == torch.float64 else 2e-6
    assert c.shape == ce.shape and ys.shape == yse.shape and ys.dtype == dtype
    assert rel(c, ce) < tol and rel(ys, yse) < tol
    wy = torch.randn_like(ys)
    loss = (ys * wy).sum() + (c ** 2).sum()
    losse = (yse * wy).sum() + (ce ** 2).sum()
    got = torch.autograd.grad(loss, [W, b, h0, xs])
    want = torch.autograd.grad(losse, [W, b, h0, xs])
    check_grads(got, want, 1e-11 if dtype == torch.float64 else 2e-5)
    assert runs() - r0 == (T - 1) + T  # forward steps after the probe, backward steps


@pytest.mark.needs_no_compiler  # argument checks before anything is compiled
def test_sequence_length_zero_raises_like_torch():
    from torch._higher_order_ops.scan import scan as tscan
    xs = torch.randn(0, 2, 3)
    f = lambda c, x: (c + x, c * x)  # noqa: E731
    with pytest.raises(RuntimeError) as want:
        tscan(f, torch.zeros(2, 3), xs)
    with pytest.raises(RuntimeError) as got:
        torchc.scan(f, torch.zeros(2, 3), xs)
    assert str(got.value) == str(want.value)
    # no xs leaves: init and [] as torch
    init = torch.ones(2)
    c, ys = torchc.scan(f, init, [])
    assert c is init and ys == []


@pytest.mark.parametrize("reverse", [False, True])
def test_pytrees_dim_reverse_and_results_not_carried(reverse):
    torch.manual_seed(0)
    W = torch.randn(4, 4, requires_grad=True)

    def step(carry, x):
        h, s = carry
        h2 = torch.relu(x["a"] @ W + h) - 0.5 * x["b"]
        return (h2, s + h2.sum(1)), (h2.sin(), s * 3)

    h0 = torch.randn(2, 4, requires_grad=True)
    s0 = torch.zeros(2)
    a = torch.randn(2, 5, 4, requires_grad=True)   # scanned along dim 1
    bb = torch.randn(2, 5, 4)
    (c1, c2), (y1, y2) = torchc.scan(step, (h0, s0), {"a": a, "b": bb}, dim=1, reverse=reverse)
    assert _scan.last_fallback is None
    (e1, e2), (f1, f2) = eager_scan(step, (h0, s0), {"a": a.movedim(1, 0), "b": bb.movedim(1, 0)}, reverse)
    f1, f2 = f1.movedim(0, 1), f2.movedim(0, 1)
    for g, w in [(c1, e1), (c2, e2), (y1, f1), (y2, f2)]:
        assert g.shape == w.shape and rel(g, w) < 2e-6
    L = (c1 * 2).sum() + c2.sum() + (y1 * y1).sum() + y2.sum()
    Le = (e1 * 2).sum() + e2.sum() + (f1 * f1).sum() + f2.sum()
    check_grads(torch.autograd.grad(L, [W, h0, a]), torch.autograd.grad(Le, [W, h0, a]), 2e-5)


def test_no_grad_runs_the_inference_loop():
    torch.manual_seed(0)
    W = torch.randn(5, 5, requires_grad=True)

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    xs = torch.randn(9, 2, 5)
    with torch.no_grad():
        r0 = runs()
        c, ys = torchc.scan(step, torch.zeros(2, 5), xs)
        assert _scan.last_fallback is None and runs() - r0 == 8
        ce, yse = eager_scan(step, torch.zeros(2, 5), xs)
    assert not ys.requires_grad and rel(ys, yse) < 2e-6 and rel(c, ce) < 2e-6


def test_body_compiled_once_regardless_of_length():
    """compile count is two-sided: exactly one compile for the body at any length"""
    W = torch.randn(8, 8, requires_grad=True)

    def step(h, x):
        h = torch.sigmoid(h @ W) + x
        return h, h.cos()

    h0 = torch.zeros(4, 8)
    c0 = torchc._C.stats()["compiles"]
    for T in (3, 50, 301):
        xs = torch.randn(T, 4, 8, requires_grad=True)
        r0 = runs()
        c, ys = torchc.scan(step, h0, xs)
        (c.sum() + ys.sum()).backward()
        assert _scan.last_fallback is None
        assert runs() - r0 == 2 * T - 1
    assert torchc._C.stats()["compiles"] - c0 == 1


def test_carry_shape_change_raises():
    xs = torch.randn(3, 2)
    with pytest.raises(RuntimeError, match="match init"):
        torchc.scan(lambda c, x: (torch.cat([c, x]), x * 2), torch.zeros(2), xs)


@pytest.mark.allow_fallback
def test_graph_break_in_body_falls_back_with_reason():
    W = torch.randn(3, 3, requires_grad=True)
    seen = []

    def step(h, x):
        h = torch.tanh(h @ W + x)
        seen.append(1)  # a side effect on a list the caller sees: a graph break
        return h, h + 1

    xs = torch.randn(4, 2, 3)
    c, ys = torchc.scan(step, torch.zeros(2, 3), xs)
    assert _scan.last_fallback is not None
    ce, yse = eager_scan(step, torch.zeros(2, 3), xs)
    assert rel(ys, yse) < 2e-6 and rel(c, ce) < 2e-6
    g = torch.autograd.grad(ys.sum(), W)[0]
    ge = torch.autograd.grad(yse.sum(), W)[0]
    assert rel(g, ge) < 2e-5


def test_retain_graph_and_second_backward():
    W = torch.randn(3, 3, requires_grad=True)

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    xs = torch.randn(6, 2, 3)
    c, ys = torchc.scan(step, torch.zeros(2, 3), xs)
    (g1,) = torch.autograd.grad(ys.sum(), W, retain_graph=True)
    (g2,) = torch.autograd.grad(ys.sum(), W)
    assert torch.equal(g1, g2)
    ce, yse = eager_scan(step, torch.zeros(2, 3), xs)
    assert rel(g1, torch.autograd.grad(yse.sum(), W)[0]) < 2e-5


def test_called_from_a_compiled_function():
    """a compiled caller breaks at the scan call (no tracing into scan's Python); the scan
    still runs its compiled loop, and values and gradients match eager"""
    W = torch.randn(4, 4, requires_grad=True)

    def body(h, x):
        h = torch.tanh(h @ W + x)
        return h, h * 2

    def f(x):
        c, ys = torchc.scan(body, torch.zeros(2, 4), x * 3)
        return (ys.sum(0) + c).relu().sum()

    x = torch.randn(6, 2, 4, requires_grad=True)
    e = torchc.explain(f)(x)
    assert any("call to scan" in r for r in e.break_reasons), e.break_reasons
    torchc.reset()
    r = torchc.compile(f)(x)
    assert _scan.last_fallback is None
    got = torch.autograd.grad(r, [W, x])
    ce, yse = eager_scan(body, torch.zeros(2, 4), x * 3)
    re = (yse.sum(0) + ce).relu().sum()
    assert rel(r, re) < 1e-6
    check_grads(got, torch.autograd.grad(re, [W, x]), 2e-5)


def test_outputs_and_buffers_are_freed_without_gc():
    """the autograd node must not hold its own outputs (a cycle through grad_fn that Python's
    gc cannot see): the stacked buffers die with the last reference, no gc.collect()"""
    import gc
    import weakref
    W = torch.randn(4, 4, requires_grad=True)

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    gc.disable()
    try:
        c, ys = torchc.scan(step, torch.zeros(2, 4), torch.randn(5, 2, 4))
        assert _scan.last_fallback is None
        r = weakref.ref(ys)
        (c.sum() + ys.sum()).backward()
        del c, ys
        assert r() is None
        c, ys = torchc.scan(step, torch.zeros(2, 4), torch.randn(5, 2, 4))
        r = weakref.ref(ys)
        del c, ys  # never differentiated
        assert r() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("grad", [False, True])
def test_buffer_pool_reuses_only_dead_buffers(grad):
    """_pool_check in a fresh interpreter: which buffers the pool holds, and whether earlier
    tests' tensors still hold them, depends on everything run before in the process (inside
    the full suite the reuse assertion failed though the pool worked)"""
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(here), here, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", f"import test_scan; test_scan._pool_check({grad})"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def test_buffer_pool_reused_under_a_compiled_caller():
    """_pool_check_compiled in a fresh interpreter (see above)"""
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(here), here, env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", "import test_scan; test_scan._pool_check_compiled()"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def _pool_check_compiled():
    """a scan called by a compiled function (its graph breaks at the call) reuses the pooled
    buffers of the previous calls once they are dropped, as from eager code (the check of a
    buffer's references once ran through a Python call, which torchc's frame hook held extra
    references for: nothing was reused, fresh [T, N, n] stacks every step)"""
    _scan.clear_buffers()
    W = torch.randn(5, 5, requires_grad=True)

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    def f(xs):
        return torchc.scan(step, torch.zeros(3, 5), xs * 2)

    cf = torchc.compile(f)
    xs = torch.randn(7, 3, 5)
    for i in range(5):
        c, ys = cf(xs)
        assert _scan.last_fallback is None
        ptr = ys.untyped_storage().data_ptr()
        pooled = {t.untyped_storage().data_ptr() for v in _scan._pool.values() for t in v}
        if i >= 2:
            assert ptr in pooled, i
        ce, yse = eager_scan(step, torch.zeros(3, 5), xs * 2)
        assert rel(ys, yse) < 2e-6
        (c.sum() + ys.square().sum()).backward()
        del c, ys
    _scan.clear_buffers()


def _pool_check(grad):
    """the stacked buffers are reused between calls once nothing holds them; a result still
    referenced (as itself, a view, a detached alias, a tensor saved by autograd, a graph kept
    for a second backward) is never handed out again"""
    _scan.clear_buffers()
    W = torch.randn(5, 5, requires_grad=grad)

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    def run(seed):
        xs = torch.randn(7, 3, 5, generator=torch.Generator().manual_seed(seed))
        c, ys = torchc.scan(step, torch.zeros(3, 5), xs)
        assert _scan.last_fallback is None
        return c, ys, xs

    c, ys, xs = run(0)
    ptr = ys.untyped_storage().data_ptr()
    assert rel(ys, eager_scan(step, torch.zeros(3, 5), xs)[1]) < 2e-6
    want = ys.detach().clone()
    keep = [ys, ys[-1], ys.detach(), ys.transpose(0, 1)]
    wants = [want, want[-1], want, want.transpose(0, 1)]
    del ys
    held = []
    for k in range(len(keep)):  # keep[k:] alive
        c2, ys2, _ = run(k + 1)
        assert ys2.untyped_storage().data_ptr() != ptr  # a live reference: not reused
        held.append((c2, ys2))
        assert torch.equal(keep[k], wants[k])
        keep[k] = None
    # everything dropped: back-to-back calls reuse the buffer (the pool works)
    del held, c, c2, ys2
    gc.collect()  # cyclic garbage of earlier tests (tracebacks, frames) holds no buffer then
    c3, ys3, xs3 = run(99)
    ptr = ys3.untyped_storage().data_ptr()
    del c3, ys3
    gc.collect()
    pooled = {t.untyped_storage().data_ptr() for v in _scan._pool.values() for t in v}
    assert ptr in pooled
    c3, ys3, xs3 = run(98)
    # a pooled buffer, not a fresh one (which of the pooled ones depends on when earlier
    # buffers died: inside the full suite it was not always the last one)
    assert ys3.untyped_storage().data_ptr() in pooled
    assert rel(ys3, eager_scan(step, torch.zeros(3, 5), xs3)[1].detach()) < 2e-6
    if grad:
        # a graph kept for a second backward keeps its saved buffers; after the last backward
        # (the caller still holding the loss) they are free again
        loss = (ys3 * ys3).sum()
        del ys3, c3
        (g1,) = torch.autograd.grad(loss, W, retain_graph=True)
        for s in range(3):
            run(200 + s)
        (g2,) = torch.autograd.grad(loss, W)
        assert torch.equal(g1, g2)
        c4, ys4, _ = run(300)
        assert ys4.untyped_storage().data_ptr() == ptr  # loss still alive, its buffers released
    _scan.clear_buffers()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_scan_runs_the_python_loop_with_reason():
    """CUDA bodies in training are compiled once and run by a Python loop (the C loop is
    CPU-only; the persistent kernel, tests/test_scan_persistent.py, runs forward only): values
    and gradients as eager, the reason given"""
    torch.manual_seed(0)
    W = (torch.randn(16, 16, device="cuda") / 4).requires_grad_()

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    xs = torch.randn(9, 4, 16, device="cuda", requires_grad=True)
    c, ys = torchc.scan(step, torch.zeros(4, 16, device="cuda"), xs)
    assert _scan.last_fallback is not None and "gradient" in _scan.last_fallback
    ce, yse = eager_scan(step, torch.zeros(4, 16, device="cuda"), xs)
    assert rel(ys, yse) < 2e-5 and rel(c, ce) < 2e-5
    got = torch.autograd.grad(ys.sum() + c.sum(), [W, xs])
    check_grads(got, torch.autograd.grad(yse.sum() + ce.sum(), [W, xs]), 2e-4)


def test_buffer_pool_shared_by_threads():
    """threads calling scan at once: each gets its own buffers (results as a lone call's)"""
    import threading
    W = torch.randn(6, 6) / 3

    def step(h, x):
        h = torch.tanh(h @ W + x)
        return h, h

    xs = [torch.randn(11, 2, 6, generator=torch.Generator().manual_seed(s)) for s in range(4)]
    want = [torchc.scan(step, torch.zeros(2, 6), x)[1].clone() for x in xs]
    bad = []

    def worker(k):
        for _ in range(15):
            c, ys = torchc.scan(step, torch.zeros(2, 6), xs[k])
            if not torch.equal(ys, want[k]):
                bad.append(k)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad


@pytest.mark.parametrize("grad", [False, True])
def test_no_reference_to_xs_left_after_the_call(grad):
    """the probe record and the plan (kept by the autograd node until its graph dies) hold no
    view of xs: while the caller keeps the loss, xs's storage has no other user (the pool can
    reuse a pooled xs, e.g. ExpRNN's projection) and xs has no other Python reference"""
    W = torch.randn(5, 5, requires_grad=grad)

    def step(h, x):
        h = torch.tanh(h @ W + x)  # the backward does not read x
        return h, h

    xs = torch.randn(7, 3, 5)
    st = xs.untyped_storage()
    n_st, n_ref = torch._C._storage_Use_Count(st._cdata), sys.getrefcount(xs)
    with torch.set_grad_enabled(grad):
        c, ys = torchc.scan(step, torch.zeros(3, 5), xs)
    assert _scan.last_fallback is None
    assert c.requires_grad == grad
    assert torch._C._storage_Use_Count(st._cdata) == n_st and sys.getrefcount(xs) == n_ref
    if grad:
        loss = ys.square().sum() + c.sum()
        loss.backward()
        assert torch._C._storage_Use_Count(st._cdata) == n_st and sys.getrefcount(xs) == n_ref
        ce, yse = eager_scan(step, torch.zeros(3, 5), xs)
        g = W.grad.clone()
        W.grad = None
        (yse.square().sum() + ce.sum()).backward()
        assert rel(g, W.grad) < 2e-5


@pytest.mark.parametrize("what", ["xs", "constant"])
def test_inplace_update_of_a_saved_input_raises_like_eager(what):
    """an x slice or a loop constant that the body's backward reads, updated in place between
    forward and backward: eager's autograd raises, and so must the scan (it used to compute
    gradients from the new values silently)"""
    def run(use_scan):
        W = torch.randn(5, 5, generator=torch.Generator().manual_seed(0)).requires_grad_()
        V = torch.randn(3, 5) + 2
        xs = torch.randn(7, 3, 5, generator=torch.Generator().manual_seed(1)).requires_grad_()
        x2 = xs * 1

        def step(h, x):
            h = torch.tanh(h @ W) * x * V  # the backward reads x and V
            return h, h
        if use_scan:
            c, ys = torchc.scan(step, torch.ones(3, 5), x2)
            assert _scan.last_fallback is None
        else:
            c, ys = eager_scan(step, torch.ones(3, 5), x2)
        with torch.no_grad():
            (x2 if what == "xs" else V).mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            ys.sum().backward()
    run(False)
    run(True)


# ---- the limits of the C loop: each one runs the Python loop over the compiled body, says why,
# and gives eager's values and gradients; the probe's step 0 is never run twice --------------
_W = torch.randn(3, 3, generator=torch.Generator().manual_seed(7)).requires_grad_()
_calls, _cnt = [], torch.zeros(())


class _Box:
    n = 0


def _b_result_is_input(h, x):
    return torch.tanh(h @ _W + x), x


def _b_result_is_view(h, x):
    h2 = torch.tanh(h @ _W + x)
    return h2, h2.t()


def _b_result_twice(h, x):
    h2 = torch.tanh(h @ _W + x)
    return h2, (h2, h2)


def _b_carry_is_input(h, x):
    return h, torch.tanh(h @ _W + x)


def _b_noncontiguous_result(h, x):
    h2 = torch.tanh(h @ _W + x)
    return h2, h2.t() * 2


def _b_list_append(h, x):
    _calls.append(1)  # a side effect the caller sees: once per step, as in eager
    return torch.tanh(h @ _W + x), h * 1


def _b_attribute_write(h, x):
    _Box.n += 1
    return torch.tanh(h @ _W + x), h * 1


def _b_buffer_update(h, x):
    _cnt.add_(1)  # a closure buffer updated in place (a running statistic)
    return torch.tanh(h @ _W + x), h * 1


def _b_update_x(h, x):
    x.mul_(2)  # the x slice updated in place: xs changes, and its gradient doubles
    return torch.tanh(h @ _W + x), h * 1


def _b_update_carry(h, x):
    h.mul_(2)
    return h @ _W + x, h * 1


def _b_graph_break(h, x):
    h2 = torch.tanh(h @ _W + x)
    return h2 * (h2.sum().item() > -100), h2 + 1


LIMITS = {  # body: the reason it is not looped in C (None: the body gets no graph at all)
    "result_is_input": (_b_result_is_input, "a result of combine_fn is not a graph output"),
    "result_is_view": (_b_result_is_view, "a result of combine_fn is not a graph output"),
    "result_twice": (_b_result_twice, "one graph output is returned twice"),
    "carry_is_input": (_b_carry_is_input, "a carry of combine_fn is not a graph output"),
    "noncontiguous_result": (_b_noncontiguous_result, "a graph output is not a contiguous tensor"),
    "list_append": (_b_list_append, "writes module attributes"),
    "attribute_write": (_b_attribute_write, None),  # (each value of n a recompile, then eager)
    "buffer_update": (_b_buffer_update, "the body mutates its inputs"),
    "update_x": (_b_update_x, None),
    "update_carry": (_b_update_carry, None),
    "graph_break": (_b_graph_break, "the body has a graph break"),
}


@pytest.mark.no_compile  # (a body updating its inputs in training gets no graph at all)
@pytest.mark.filterwarnings("ignore:torchc. recompile limit")
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", sorted(LIMITS))
def test_limits_of_the_c_loop_fall_back_like_eager(name, grad):
    body, why = LIMITS[name]

    def run(fn):
        _calls.clear()
        _Box.n = 0
        _cnt.zero_()
        base = torch.randn(5, 2, 3, generator=torch.Generator().manual_seed(3), requires_grad=grad)
        with torch.set_grad_enabled(grad):
            xs = base.clone() if grad else base.detach().clone()
            c, ys = fn(body, torch.zeros(2, 3), xs)
            fb = _scan.last_fallback
            ys = ys if isinstance(ys, tuple) else (ys,)
            g = torch.autograd.grad(c.sum() + sum(y.sum() for y in ys), (_W, base)) if grad else ()
        return (c, ys, xs.detach(), len(_calls), _Box.n, _cnt.item(), g), fb

    want, _ = run(eager_scan)
    _scan.last_fallback = None
    got, fb = run(torchc.scan)
    assert fb is not None and (why is None or why in fb), fb
    assert got[3:6] == want[3:6]  # side effects: once per step
    for a, b in zip([got[0], *got[1], got[2], *got[6]], [want[0], *want[1], want[2], *want[6]]):
        assert a.shape == b.shape and a.dtype == b.dtype and rel(a, b) < 2e-5


@pytest.mark.allow_fallback
def test_fallback_outputs_need_a_gradient_as_in_eager():
    """Nothing needs a gradient but the probe's stand-in carry: the results need none either."""
    W = torch.randn(3, 3)

    def step(h, x):
        return torch.tanh(h @ W + x), x  # (a result that is an input: the Python loop)
    c, ys = torchc.scan(step, torch.zeros(2, 3), torch.randn(4, 2, 3))
    assert _scan.last_fallback is not None
    assert not c.requires_grad and not ys.requires_grad and c.grad_fn is None


class _SaveOut(torch.autograd.Function):
    """softsign y = x / (1 + |x|), differentiated from its output y alone:
    dy/dx = 1 / (1 + |x|)^2 = (1 - |y|)^2"""

    @staticmethod
    def forward(ctx, x):
        y = x / (1 + x.abs())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y.abs()) ** 2


@pytest.mark.parametrize("grad", [False, True])
def test_function_saving_its_output_keeps_no_second_stack(grad, monkeypatch):
    """A body's torch.autograd.Function that saves its own output: the C loop runs with and
    without grad (the no-grad forward's writes to its ctx need no replay), values and
    gradients are eager's, and the backward reads the stacked outputs the forward writes
    anyway: no [T, ...] stack of the value beneath the output is saved beside them (the
    saved output is the output itself, as in eager, so the partitioner reads it for free)."""
    torch.manual_seed(0)
    W = torch.randn(6, 6).requires_grad_(grad)
    T = 11

    def step(h, x):
        h = _SaveOut.apply(h @ W + x)
        return h, h

    xs = torch.randn(T, 3, 6, requires_grad=grad)
    shapes = []
    real_empty = _scan._empty

    def spy(shape, dtype, strides=None):
        shapes.append(tuple(shape))
        return real_empty(shape, dtype, strides)
    monkeypatch.setattr(_scan, "_empty", spy)
    with torch.set_grad_enabled(grad):
        r0 = runs()
        c, ys = torchc.scan(step, torch.zeros(3, 6), xs)
        assert _scan.last_fallback is None and runs() - r0 == T - 1
        ce, yse = eager_scan(step, torch.zeros(3, 6), xs)
    assert rel(ys, yse) < 2e-6 and rel(c, ce) < 2e-6
    # the carry's [T + 1] buffer (the results share it) and nothing else of T rows
    assert [s for s in shapes if s[0] in (T, T + 1)] == [(T + 1, 3, 6)], shapes
    if grad:
        got = torch.autograd.grad(c.sum() + ys.sum(), (W, xs))
        want = torch.autograd.grad(ce.sum() + yse.sum(), (W, xs))
        check_grads(got, want, 2e-5)
