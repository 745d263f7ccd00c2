"""Training through torchc.scan under a compiled caller: the expRNN shape of issue 23.

    f(x, A, W, b, h0):  B = matrix_exp(A - Aᵀ)          (graph op, compiled backward)
                        h_T, H = torchc.scan(h' = modReLU(h Bᵀ + x_t Wᵀ), h0, x)
                        loss(h_T, H)

The caller's graphs (B, the loss) are compiled with their backward; the scan's body is
compiled once, forward and backward, and both run as C loops (the backward: the body's
compiled backward graph for t = T-1 .. 0, the carry's gradient passed back a step, the
loop constants' gradients summed). Every test checks that this is what ran: the lowering
explain() names, the C loop's step count (T-1 forward runs after the probe, T backward),
and op counts that do not depend on T (an unrolled loop or a Python loop fails them)."""
import pytest
import torch

import torchc
from torchc import _scan

C_LOOP = "C loop: the body's compiled graph run per step in C"


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def runs():
    return torchc._C._scan_stats()[1]


def step(h, xt, Bt, Wt, b):
    z = h @ Bt + xt @ Wt
    h = torch.sign(z) * torch.relu(z.abs() + b)
    return h, h


def f(x, A, W, b, h0):
    B = torch.linalg.matrix_exp(A - A.t())
    Bt, Wt = B.t(), W.t()
    h, H = torchc.scan(lambda h, xt: step(h, xt, Bt, Wt, b), h0, x)
    return h.square().sum() + (H * H.flip(0)).mean()


def f_eager(x, A, W, b, h0):
    """the same recurrence as a Python loop"""
    B = torch.linalg.matrix_exp(A - A.t())
    Bt, Wt = B.t(), W.t()
    h, H = h0, []
    for t in range(x.shape[0]):
        h, y = step(h, x[t], Bt, Wt, b)
        H.append(y)
    H = torch.stack(H)
    return h.square().sum() + (H * H.flip(0)).mean()


def make(T, n=5, N=3, inp=2, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = (torch.randn(n, n, generator=g, dtype=dtype) * 0.3).requires_grad_()
    W = torch.randn(n, inp, generator=g, dtype=dtype).requires_grad_()
    b = torch.empty(n, dtype=dtype).uniform_(-0.2, 0.1, generator=g).requires_grad_()
    x = torch.randn(T, N, inp, generator=g, dtype=dtype).requires_grad_()
    h0 = torch.randn(N, n, generator=g, dtype=dtype).requires_grad_()
    return [x, A, W, b, h0]


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("T", [1, 2, 7])
def test_gradients_of_params_and_inputs_match_eager(T):
    args = make(T)
    r0 = runs()
    e = torchc.explain(f)(*args)
    assert e.scan_lowerings == [C_LOOP] and _scan.last_fallback is None
    got = torch.autograd.grad(e.result, args)
    assert runs() - r0 == (T - 1) + T  # forward steps after the probe, then T backward steps
    # B's matrix exponential and the loss are compiled graphs with a compiled backward
    assert e.graph_count >= 2 and len(e.backward_graphs) >= 1
    assert any("matrix_exp" in g for g in e.graphs)
    want_loss = f_eager(*args)
    want = torch.autograd.grad(want_loss, args)
    assert rel(e.result.detach(), want_loss.detach()) < 1e-6
    # against a float64 reference, torchc's error must be no worse than eager's float32 error:
    # eager's own float32 gradient of A (matrix_exp's backward) is off by up to ~3e-5 relative,
    # so a direct torchc-vs-eager bound would measure eager's rounding, not torchc's
    a64 = [a.detach().double().requires_grad_() for a in args]
    ref = torch.autograd.grad(f_eager(*a64), a64)
    for name, g, w, r in zip("x A W b h0".split(), got, want, ref):
        assert g.shape == w.shape and g.dtype == w.dtype
        err, eager_err = rel(g.double(), r), rel(w.double(), r)
        assert err <= 2 * eager_err + 2e-6, (name, err, eager_err)


def test_op_counts_do_not_grow_with_the_length():
    """The loop is neither unrolled into a graph nor left to eager: the same graphs, op counts
    and backward op counts at T = 3 and T = 40, one C loop each, every step counted."""
    counts = []
    for T in (3, 40):
        args = make(T)
        r0 = runs()
        e = torchc.explain(f)(*args)
        e.result.backward()
        assert e.scan_lowerings == [C_LOOP] and runs() - r0 == 2 * T - 1
        counts.append((e.graph_count, e.op_count, len(e.backward_graphs),
                       sum(g.count("\n%") for g in e.backward_graphs)))
    assert counts[0] == counts[1], counts
    assert counts[0][1] < 40  # a loop unrolled 40 times has hundreds of ops


def test_gradcheck_float64():
    args = [a.detach().requires_grad_() for a in make(3, n=3, N=2, inp=1, dtype=torch.float64, seed=1)]
    cf = torchc.compile(f)
    r0 = runs()
    assert torch.autograd.gradcheck(cf, args, eps=1e-6, atol=1e-7)
    assert _scan.last_fallback is None and runs() > r0


def test_length_zero_raises_like_torch():
    from torch._higher_order_ops.scan import scan as tscan
    args = make(0)
    x, h0 = args[0], args[4]
    body = lambda h, xt: (h + xt.sum(), h * 2)  # noqa: E731
    with pytest.raises(RuntimeError) as want:
        tscan(body, h0, x)
    with pytest.raises(RuntimeError) as got:
        torchc.compile(f)(*args)
    assert str(got.value) == str(want.value)


@pytest.mark.allow_fallback
def test_body_op_without_backward_rule_falls_back_with_reason():
    """lgamma has no compiled backward rule: the body's frame breaks, and the scan runs the
    Python loop over it with the reason in explain(); gradients are still eager's."""
    def step2(h, xt, Bt, Wt, b):
        return (lambda h: (h, h))(torch.lgamma((h @ Bt + xt @ Wt).abs() + 1) * 0.1 + b)

    def g(x, A, W, b, h0):
        B = torch.linalg.matrix_exp(A - A.t())
        Bt, Wt = B.t(), W.t()
        h, H = torchc.scan(lambda h, xt: step2(h, xt, Bt, Wt, b), h0, x)
        return h.sum() + H.mean()

    def g_eager(x, A, W, b, h0):
        B = torch.linalg.matrix_exp(A - A.t())
        h, H = h0, []
        for t in range(x.shape[0]):
            h, y = step2(h, x[t], B.t(), W.t(), b)
            H.append(y)
        return h.sum() + torch.stack(H).mean()

    args = make(4)
    e = torchc.explain(g)(*args)
    assert e.scan_lowerings and e.scan_lowerings[0].startswith("Python loop: the body has a graph break: ")
    assert "lgamma" in e.scan_lowerings[0], e.scan_lowerings
    assert any("lgamma" in r for r in e.break_reasons), e.break_reasons
    got = torch.autograd.grad(e.result, args)
    want = torch.autograd.grad(g_eager(*args), args)
    for gg, w in zip(got, want):
        assert rel(gg, w) < 5e-5


def test_explain_hints_at_a_long_python_loop_unrolled():
    """A Python loop over time steps is traced step by step into one graph (its compile time
    grows with the length): explain() names the loop and points at torchc.scan; the scan of
    the same step, and a short loop, get no hint."""
    w = torch.rand(4) * 0.5

    def loop(x):
        h = torch.zeros(4)
        for t in range(x.shape[0]):
            h = h * w + x[t]
        return h

    def scanned(x):
        return torchc.scan(lambda h, xt: (h * w + xt, h), torch.zeros(4), x)[0]

    x = torch.randn(100, 4)
    e = torchc.explain(loop)(x)
    assert e.graph_count == 1 and e.op_count >= 200  # unrolled
    assert len(e.hints) == 1 and "loop" in e.hints[0] and "100 iterations" in e.hints[0]
    assert "test_scan_grad.py:" in e.hints[0] and "torchc.scan" in e.hints[0] and "Hints:" in str(e)
    torch.testing.assert_close(e.result, scanned(x))
    assert torchc.explain(scanned)(x).hints == []
    assert torchc.explain(loop)(x[:10]).hints == []


def test_unrolled_loop_backward_grows_linearly_and_masks_like_eager():
    """A Python loop left unrolled, every step's state a graph output: the backward adds a
    step's contribution to h_t only where one of the outputs it reads got a gradient (a flag
    per output, ORed). Those ORs are built on the previous step's (nested sets), so the
    backward graph grows linearly in the steps (it was quadratic: 19900 ORs at 100 steps);
    gradients of a few outputs only match eager, NaN where eager's are (sqrt'(0) = inf)."""
    T = 40

    def loop(x, W):
        h, outs = torch.zeros(3, 4), []
        for t in range(T):
            h = torch.sqrt(torch.relu(h @ W + x[t]))
            outs.append(h)
        return outs

    g = torch.Generator().manual_seed(0)
    W = (torch.randn(4, 4, generator=g) * 0.5).requires_grad_()
    x = torch.randn(T, 3, 4, generator=g).requires_grad_()
    e = torchc.explain(loop)(x, W)
    assert e.graph_count == 1 and e.backward_graph_count == 1
    assert e.backward_op_count < 60 * T, e.backward_op_count
    ors = sum(ln.count("logical_or") for g_ in e.backward_graphs for ln in g_.splitlines())
    assert ors < 3 * T, ors
    want_outs = loop(x, W)
    for ks in ([T - 1], [3], [0, 7, T - 2]):
        got = torch.autograd.grad(sum(e.result[k].sum() for k in ks), (W, x), retain_graph=True)
        want = torch.autograd.grad(sum(want_outs[k].sum() for k in ks), (W, x), retain_graph=True)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, equal_nan=True, rtol=2e-5, atol=2e-5)


def _rnn_step(W, U):
    def body(h, xt):
        h = torch.tanh(h @ W + xt @ U.t())
        return h, h
    return body


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_loop_constant_gemm_gradients_match_eager(dtype):
    """h @ W + x_t @ Uᵀ with a gradient on every result: W's and U's per-step gradients
    h_{t-1}ᵀ g_t and (x_tᵀ g_t)ᵀ summed by the C loop equal eager's, and so do h0's and x's.
    (Summing them as one GEMM after the loop instead, from a variant of the body's backward
    that outputs g_t, was measured and left out: benchmarks/results/scan_grad_cpu.md.)"""
    g = torch.Generator().manual_seed(3)
    T, N, n, k = 9, 4, 6, 3
    W = (torch.randn(n, n, generator=g, dtype=dtype) * 0.4).requires_grad_()
    U = torch.randn(n, k, generator=g, dtype=dtype).requires_grad_()
    x = torch.randn(T, N, k, generator=g, dtype=dtype).requires_grad_()
    h0 = torch.randn(N, n, generator=g, dtype=dtype).requires_grad_()
    gy = torch.randn(T, N, n, generator=g, dtype=dtype)
    body = _rnn_step(W, U)
    r0 = runs()
    h, H = torchc.scan(body, h0, x)
    assert _scan.last_lowering == C_LOOP
    got = torch.autograd.grad((h.square().sum() + (H * gy).sum()), [W, U, x, h0])
    assert runs() - r0 == 2 * T - 1
    he, Hs = h0, []
    for t in range(T):
        he, y = body(he, x[t])
        Hs.append(y)
    want = torch.autograd.grad(he.square().sum() + (torch.stack(Hs) * gy).sum(), [W, U, x, h0])
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    for name, a, b in zip("W U x h0".split(), got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert rel(a, b) < tol, (name, rel(a, b))


def test_loop_constant_read_twice_or_on_the_left_and_a_second_backward():
    """W read twice (its gradient a sum of two GEMMs) and V on the left (V x_tᵀ): gradients
    equal to eager's; a second backward through the same graph (retain_graph) gives the same."""
    g = torch.Generator().manual_seed(4)
    T, N, n = 6, 3, 4
    W = (torch.randn(n, n, generator=g, dtype=torch.float64) * 0.4).requires_grad_()
    V = (torch.randn(n, n, generator=g, dtype=torch.float64) * 0.4).requires_grad_()
    x = torch.randn(T, N, n, generator=g, dtype=torch.float64)
    h0 = torch.randn(N, n, generator=g, dtype=torch.float64)

    def body(h, xt):
        h = torch.tanh(h @ W + (0.5 * h) @ W + (V @ xt.t()).t())
        return h, h
    h, H = torchc.scan(body, h0, x)
    assert _scan.last_lowering == C_LOOP
    loss = h.sum() + H.square().sum()
    got = torch.autograd.grad(loss, [W, V], retain_graph=True)
    again = torch.autograd.grad(loss, [W, V])
    he, Hs = h0, []
    for t in range(T):
        he, y = body(he, x[t])
        Hs.append(y)
    want = torch.autograd.grad(he.sum() + torch.stack(Hs).square().sum(), [W, V])
    for a, a2, b in zip(got, again, want):
        assert rel(a, b) < 1e-12 and torch.equal(a, a2)

