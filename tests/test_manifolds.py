"""torchc.manifolds and the matrix_exp / solve graph ops.

Compiled-path tests assert on torchc.explain: exactly one graph, no break, and the extern
call (matrix_exp / solve) in it, so a silent eager fallback fails them."""
import math

import pytest
import torch
from torch.nn.utils import parametrize

import torchc
from torchc import manifolds as M

from conftest import assert_same, explain_of

try:
    import scipy.linalg as sla
except ImportError:  # pragma: no cover
    sla = None


@pytest.fixture(autouse=True)
def _one_thread():
    """Training loops of many tiny ops: one intra-op thread (on a loaded machine two threads
    spin in every OpenMP region of every small GEMM)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def ref_expm(A):
    """float64 reference: scipy's expm (Al-Mohy & Higham Padé) or a long Taylor series with
    scaling and squaring in float64."""
    A = A.detach().to(torch.complex128 if A.is_complex() else torch.float64)
    if sla is not None:
        return torch.from_numpy(sla.expm(A.numpy()))
    s = max(0, math.ceil(math.log2(max(A.abs().sum(-2).amax().item(), 1e-300)) + 1))
    X = A / 2 ** s
    E = torch.eye(A.size(-1), dtype=A.dtype).expand_as(A).clone()
    T = E.clone()
    for k in range(1, 30):
        T = T @ X / k
        E = E + T
    for _ in range(s):
        E = E @ E
    return E


def rel(a, b):
    """relative error in the Frobenius norm"""
    a, b = a.detach().to(b.dtype), b.detach()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def mat(n, norm, dtype, kind="general", batch=()):
    A = torch.randn(*batch, n, n, dtype=torch.complex128 if dtype.is_complex else torch.float64)
    if kind == "skew":
        A = A - A.mH
    elif kind == "nilpotent":
        A = A.triu(1)
    if norm == 0:
        A = A * 0
    else:
        A = A / A.abs().sum(-2).amax(-1)[..., None, None].clamp_min(1e-300) * norm
    return A.to(dtype)


# ---- matrix_exp values ------------------------------------------------------------------------
NORMS = [0.0, 1e-7, 1e-4, 0.03, 0.4, 1.2, 2.9, 8.0, 60.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
@pytest.mark.parametrize("kind", ["general", "skew", "nilpotent"])
@pytest.mark.needs_no_compiler
def test_matrix_exp_vs_float64_reference(dtype, kind):
    single = dtype in (torch.float32, torch.complex64)
    for n in (1, 2, 7, 32):
        for norm in NORMS:
            A = mat(n, norm, dtype, kind)
            ref = ref_expm(A)
            got = torchc._C.matrix_exp(A)
            assert got.dtype == dtype and got.shape == A.shape
            err, terr = rel(got, ref), rel(torch.linalg.matrix_exp(A), ref)
            # torch's own error bounds what float32 can give at large norms (conditioning:
            # each of the s squarings adds rounding); 4x it, the same algorithm rounded apart
            tol = max(1e-6, 4 * terr) if single else max(1e-12, 4 * terr)
            assert err <= tol, (n, norm, err, terr)


@pytest.mark.needs_no_compiler
def test_matrix_exp_batched_mixed_norms_and_edges():
    # one batch whose matrices need different degrees and scalings
    A = torch.stack([mat(6, nrm, torch.float64) for nrm in (0.0, 1e-5, 0.2, 3.0, 40.0, 500.0)])
    assert rel(torchc._C.matrix_exp(A), ref_expm(A)) < 1e-12
    A4 = A.reshape(2, 3, 6, 6)
    assert_same(torchc._C.matrix_exp(A4), torchc._C.matrix_exp(A).reshape(2, 3, 6, 6))
    # non-contiguous (transposed) input, zero-size, conj view
    B = mat(9, 2.0, torch.float32)
    assert_same(torchc._C.matrix_exp(B.mT), torchc._C.matrix_exp(B.mT.contiguous()), rtol=0, atol=0)
    for shape in [(0, 3, 3), (4, 0, 0), (0, 0)]:
        assert torchc._C.matrix_exp(torch.zeros(shape)).shape == shape
    C = mat(5, 1.0, torch.complex128)
    assert rel(torchc._C.matrix_exp(C.conj()), ref_expm(C.conj().resolve_conj())) < 1e-12
    # exactly: exp(0) = I, nilpotent of index 2: I + N
    N = torch.zeros(4, 4, dtype=torch.float64)
    N[0, 3] = 7.0
    assert torch.equal(torchc._C.matrix_exp(N), torch.eye(4, dtype=torch.float64) + N)
    # skew-symmetric -> orthogonal
    Q = torchc._C.matrix_exp(mat(16, 30.0, torch.float32, "skew"))
    assert (Q.T @ Q - torch.eye(16)).abs().max() < 1e-5


@pytest.mark.needs_no_compiler
def test_matrix_exp_other_dtypes_and_errors_as_torch():
    for bad in [torch.randn(3, 4), torch.randn(3)]:
        with pytest.raises(RuntimeError):
            torchc._C.matrix_exp(bad)
        with pytest.raises(RuntimeError):
            M.matrix_exp(bad)
    x = torch.randn(2, 3, 3).bfloat16()
    assert_same(M.matrix_exp(x), torch.linalg.matrix_exp(x))
    with pytest.raises(TypeError):
        torchc._C.matrix_exp([[1.0]])
    # not finite: torch's result
    x = torch.full((3, 3), float("inf"))
    assert_same(torchc._C.matrix_exp(x), torch.linalg.matrix_exp(x))


# ---- matrix_exp backward ----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.needs_no_compiler
def test_matrix_exp_gradcheck_float64(dtype):
    for norm, batch in [(0.3, ()), (2.5, (2,)), (9.0, ())]:
        A = mat(5, norm, dtype, batch=batch).requires_grad_()
        assert torch.autograd.gradcheck(M.matrix_exp, (A,), eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
@pytest.mark.needs_no_compiler
def test_matrix_exp_vjp_vs_torch_autograd(dtype):
    single = dtype in (torch.float32, torch.complex64)
    for norm, batch in [(0.0, ()), (1e-3, ()), (0.5, (3,)), (4.0, ()), (50.0, (2,))]:
        A = mat(12, norm, dtype, batch=batch)
        if batch:
            A[0] *= 0.01  # different scalings inside one batch
        G = torch.randn(A.shape, dtype=dtype)
        A64 = A.to(torch.complex128 if dtype.is_complex else torch.float64).clone().requires_grad_()
        torch.linalg.matrix_exp(A64).backward(G.to(A64.dtype))
        ref = A64.grad
        At = A.clone().requires_grad_()
        torch.linalg.matrix_exp(At).backward(G)
        Ao = A.clone().requires_grad_()
        M.matrix_exp(Ao).backward(G)  # saved-register backward
        recompute = M.matrix_exp_vjp(A, G)  # the graph op's rule (recomputed registers)
        tol = max(1e-6, 4 * rel(At.grad, ref)) if single else 1e-12
        assert Ao.grad.dtype == dtype
        assert rel(Ao.grad, ref) <= tol and rel(recompute, ref) <= tol, (norm, rel(Ao.grad, ref), rel(At.grad, ref))


@pytest.mark.needs_no_compiler
def test_cayley_gradcheck_and_orthogonality():
    A = mat(6, 3.0, torch.float64, "skew").requires_grad_()
    assert torch.autograd.gradcheck(M.cayley, (A,))
    C = M.cayley(A.detach().float())
    assert (C.T @ C - torch.eye(6)).abs().max() < 1e-5
    Id = torch.eye(6, dtype=torch.float64)
    assert rel(M.cayley(A), torch.linalg.solve(Id - A / 2, Id + A / 2)) < 1e-12


# ---- the graph ops ----------------------------------------------------------------------------
def _one_graph_with(ex, name, count=1):
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    assert ex.extern_calls.count(name) == count, ex.extern_calls


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_exp_compiled_graph_op(dtype):
    def f(A, B):
        return torch.linalg.matrix_exp(A * 0.5) @ B + 1, torch.matrix_exp(B), B.matrix_exp().sum(-1)

    for shape, norm in [((4, 4), 0.1), ((2, 3, 8, 8), 5.0), ((33, 33), 300.0), ((1, 1), 2.0)]:
        A, B = mat(shape[-1], norm, dtype, batch=shape[:-2]), mat(shape[-1], norm / 3, dtype, batch=shape[:-2])
        got, want = torchc.compile(f)(A, B), f(A, B)
        tol = 1e-5 if dtype == torch.float32 else 1e-11
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert rel(g, w) < tol
        _one_graph_with(explain_of(f, A, B), "matrix_exp", 3)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_matrix_exp_graph_op_fallbacks():
    f = lambda A: torch.linalg.matrix_exp(A) * 2  # noqa: E731
    c = torchc.compile(f)
    A = mat(5, 1.0, torch.complex64)  # complex: ATen's matrix_exp as an extern (ops_complex.c)
    assert_same(c(A), f(A))
    e = explain_of(f, A)
    assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons
    with pytest.raises(RuntimeError):
        c(torch.randn(3, 4))  # eager's error


def test_solve_compiled_graph_op_and_cayley_parametrization():
    def f(A, B):
        return torch.linalg.solve(A, B), torch.linalg.solve(A, B.mT.contiguous(), left=False)

    A = torch.randn(3, 6, 6, dtype=torch.float64) + 6 * torch.eye(6, dtype=torch.float64)
    B = torch.randn(3, 6, 2, dtype=torch.float64)
    got, want = torchc.compile(f)(A, B), f(A, B)
    assert_same(got, want, rtol=1e-10, atol=1e-12)
    _one_graph_with(explain_of(f, A, B), "solve", 2)


@pytest.mark.parametrize("triv", ["expm", "cayley"])
@pytest.mark.parametrize("shape", [(8, 8), (9, 4), (4, 9)])
def test_parametrized_linear_compiled_forward(triv, shape):
    lin = torch.nn.Linear(shape[1], shape[0], bias=False)
    M.orthogonal(lin, triv=triv)
    x = torch.randn(5, shape[1])
    with torch.no_grad():
        assert_same(torchc.compile(lin)(x), lin(x), rtol=1e-5, atol=1e-6)
        ex = torchc.explain(lin)(x)
    _one_graph_with(ex, "matrix_exp" if triv == "expm" else "solve")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_exp_and_solve_compiled_training(dtype, device):
    """training through the graph ops: one forward graph with its compiled backward (the
    matrix_exp rule is the MATRIX_EXP_VJP extern; solve's are a transposed solve and a
    matmul), gradients as torch's autograd. (Without the rules the frame ran eagerly: "no
    backward rule for matrix_exp".)"""
    def f(A, B, C):
        E = torch.linalg.matrix_exp(A * 0.5)
        X = torch.linalg.solve(C, E @ B)
        # no transcendental past the externs: f64 sin has no GPU lowering (no libdevice)
        return (X * X * 3).sum() + E.square().sum()

    tol = (1e-4 if device == "cpu" else 2e-3) if dtype == torch.float32 else 1e-10
    for shape, norm in [((5, 5), 0.7), ((2, 3, 8, 8), 6.0), ((1, 1), 2.0), ((33, 33), 40.0)]:
        n, batch = shape[-1], shape[:-2]
        A = mat(n, norm, dtype, batch=batch).to(device).requires_grad_()
        B = mat(n, 1.0, dtype, batch=batch).to(device).requires_grad_()
        C = (mat(n, 1.0, dtype, batch=batch) + 3 * torch.eye(n, dtype=dtype)).to(device).requires_grad_()
        ex = torchc.explain(f)(A, B, C)
        assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.backward_graph_count == 1, str(ex)
        assert ex.extern_calls.count("matrix_exp") == 1 and ex.extern_calls.count("solve") == 1
        torchc.reset()
        got = torchc.compile(f)(A, B, C)
        g_got = torch.autograd.grad(got, (A, B, C))
        want = f(A, B, C)
        g_want = torch.autograd.grad(want, (A, B, C))
        assert rel(got, want) < tol
        for g, w in zip(g_got, g_want):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert rel(g, w) < tol, (shape, rel(g, w))


@pytest.mark.parametrize("triv", ["expm", "cayley"])
def test_parametrized_linear_compiled_training(triv):
    """a compiled training step of an orthogonal Linear: the parametrization (skew, matrix_exp
    or the Cayley solve, base) in one graph with its backward; the gradient of the
    unconstrained weight as eager's (torchc.manifolds.matrix_exp is the graph op when traced)"""
    torch.manual_seed(0)
    lin = torch.nn.Linear(7, 7, bias=False)
    M.orthogonal(lin, triv=triv)
    x = torch.randn(5, 7)
    f = lambda x: lin(x).tanh().sum()  # noqa: E731
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.backward_graph_count == 1, str(ex)
    assert ex.extern_calls.count("matrix_exp" if triv == "expm" else "solve") == 1
    torchc.reset()
    W = lin.parametrizations.weight.original
    got = torchc.compile(f)(x)
    (g_got,) = torch.autograd.grad(got, W)
    want = f(x)
    (g_want,) = torch.autograd.grad(want, W)
    assert rel(got, want) < 1e-6 and rel(g_got, g_want) < 1e-5


# ---- parametrizations ---------------------------------------------------------------------------
@pytest.mark.parametrize("helper,shape,dtype", [
    (M.orthogonal, (7, 7), torch.float32), (M.orthogonal, (9, 3), torch.float64),
    (M.orthogonal, (3, 9), torch.float32), (M.special_orthogonal, (6, 6), torch.float64),
    (M.unitary, (5, 5), torch.complex128), (M.unitary, (5, 5), torch.complex64),
    (M.unitary, (6, 3), torch.complex128), (M.stiefel, (8, 2), torch.float32)])
@pytest.mark.parametrize("triv", ["expm", "cayley", "callable"])
@pytest.mark.needs_no_compiler
def test_parametrizations_stay_on_manifold(helper, shape, dtype, triv):
    t = (lambda A: torch.linalg.matrix_exp(A)) if triv == "callable" else triv
    lin = torch.nn.Linear(shape[1], shape[0], bias=False, dtype=dtype.to_real() if dtype.is_complex else dtype)
    helper(lin, "weight", triv=t)
    P = lin.parametrizations.weight[0]
    W = lin.weight
    assert W.shape == shape and W.dtype == (dtype if dtype.is_complex or helper is not M.unitary else torch.complex64)
    opt = torch.optim.Adam(lin.parameters(), lr=0.05)
    for i in range(15):
        x = torch.randn(4, shape[1], dtype=W.dtype)
        loss = lin(x).abs().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i == 7:
            before = lin.weight.detach().clone()
            M.update_base(lin)  # the weight does not move, the original is zeroed
            assert rel(lin.weight, before) < 1e-5
            assert lin.parametrizations.weight.original.abs().max() == 0
    Q = lin.weight.detach()
    Q = Q if shape[0] >= shape[1] else Q.mT
    tol = 1e-5 if dtype in (torch.float32, torch.complex64) else 1e-12
    assert (Q.mH @ Q - torch.eye(Q.size(-1), dtype=Q.dtype)).abs().max() < tol
    if isinstance(P, M.SO):
        assert torch.linalg.det(lin.weight).item() > 0


@pytest.mark.needs_no_compiler
def test_right_inverse_and_initializers():
    lin = torch.nn.Linear(6, 6, bias=False)
    M.orthogonal(lin)
    Q = M.haar_init_(torch.empty(6, 6))
    lin.weight = Q  # parametrize's assignment goes through right_inverse
    assert rel(lin.weight, Q) < 1e-6
    with pytest.raises(ValueError):
        lin.weight = torch.randn(6, 6)
    with pytest.raises(ValueError):
        M.Orthogonal((6, 6), triv="nope")
    for init in ("henaff", "cayley"):
        A = getattr(M, init + "_init_")(torch.empty(8, 8))
        assert torch.equal(A, -A.T) and A.abs().sum() > 0
        m = torch.nn.Linear(8, 8, bias=False)
        M.orthogonal(m, init=init)
        assert rel(m.weight, torch.linalg.matrix_exp(M.skew(m.parametrizations.weight.original))) < 1e-6
    for so in (False, True):
        Q = M.haar_init_(torch.empty(3, 5, 5, dtype=torch.float64), special=so)
        assert (Q.mT @ Q - torch.eye(5, dtype=torch.float64)).abs().max() < 1e-12
        if so:
            assert (torch.linalg.det(Q) > 0).all()
    T = M.torus_init_(torch.empty(6, 6))
    assert (T.T @ T - torch.eye(6)).abs().max() < 1e-5


@pytest.mark.needs_no_compiler
def test_parametrized_training_differential_against_torch():
    """Our Orthogonal and PyTorch's orthogonal(orthogonal_map="matrix_exp") are the same map
    (B = base @ exp(A), A = tril(X) - tril(X)ᴴ): the same SGD steps from the same point give
    the same weights."""
    torch.manual_seed(3)
    a = torch.nn.Linear(6, 6, bias=False).double()
    b = torch.nn.Linear(6, 6, bias=False).double()
    M.orthogonal(a, init="haar")
    b.weight.data = a.weight.detach().clone()
    torch.nn.utils.parametrizations.orthogonal(b, orthogonal_map="matrix_exp", use_trivialization=True)
    assert rel(b.weight, a.weight) < 1e-12
    oa = torch.optim.SGD(a.parameters(), lr=0.1)
    ob = torch.optim.SGD(b.parameters(), lr=0.1)
    for _ in range(20):
        x = torch.randn(8, 6, dtype=torch.float64)
        for m, o in ((a, oa), (b, ob)):
            o.zero_grad()
            torch.tanh(m(x)).pow(2).sum().backward()
            o.step()
    assert rel(a.weight, b.weight) < 1e-10


@pytest.mark.parametrize("K", [1, 100, math.inf])
@pytest.mark.needs_no_compiler
def test_dynamic_trivialization_orthogonality_10000_steps(K):
    """||BᴴB - I|| < 1e-5 in float32 after 10,000 optimizer steps (K = 1: the base moves at
    every step; re-projected every 100 moves)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4, bias=False)
    M.orthogonal(lin)
    opt = torch.optim.SGD(lin.parameters(), lr=0.05, momentum=0.5)
    dt = M.DynamicTrivialization(opt, lin, K=K)
    target = M.haar_init_(torch.empty(4, 4))
    x = torch.randn(16, 4)
    for _ in range(10000):
        opt.zero_grad()
        (lin(x) - x @ target.T).pow(2).mean().backward()
        opt.step()
    W = lin.weight.detach()
    assert (W.T @ W - torch.eye(4)).abs().max() < 1e-5
    assert dt.steps == 10000 and dt.base_updates == (0 if K == math.inf else 10000 // K)
    assert (lin(x) - x @ target.T).pow(2).mean() < 0.05  # it also learned


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "RMSprop", "Adagrad", "AdamW"])
@pytest.mark.parametrize("K", [1, 5, math.inf])
@pytest.mark.needs_no_compiler  # the manifold library, eager
def test_dynamic_trivialization_any_optimizer(K, opt_name):
    """DTRIV as a step post-hook on any torch.optim optimizer: the base moves every K steps
    (the weight does not jump there: base <- base exp(A), A <- 0), the weight stays
    orthogonal, the loss falls; K = inf is the static trivialization, step for step the same
    weights as training without the hook."""
    def run(hook):
        torch.manual_seed(4)
        lin = torch.nn.Linear(5, 5, bias=False)
        M.orthogonal(lin)
        kw = {"lr": 0.05} if opt_name != "SGD" else {"lr": 0.05, "momentum": 0.9}
        opt = getattr(torch.optim, opt_name)(lin.parameters(), **kw)
        dt = M.DynamicTrivialization(opt, lin, K=K) if hook else None
        target = M.haar_init_(torch.empty(5, 5))
        x = torch.randn(32, 5)
        losses = []
        for i in range(30):
            opt.zero_grad()
            loss = (lin(x) - x @ target.T).pow(2).mean()
            loss.backward()
            losses.append(loss.item())
            before = lin.weight.detach().clone()
            opt.step()
            if dt is not None and K != math.inf and (i + 1) % K == 0:
                assert lin.parametrizations.weight.original.abs().max() == 0
        return lin, dt, losses
    lin, dt, losses = run(True)
    W = lin.weight.detach()
    assert (W.T @ W - torch.eye(5)).abs().max() < 1e-5
    assert losses[-1] < 0.7 * losses[0]
    assert dt.steps == 30 and dt.base_updates == (0 if K == math.inf else 30 // K)
    if K == math.inf:
        ref, _, ref_losses = run(False)
        assert torch.equal(ref.weight, lin.weight) and ref_losses == losses
    with pytest.raises(ValueError):
        M.DynamicTrivialization(torch.optim.SGD(lin.parameters(), lr=0.1), lin, K=0)
    with pytest.raises(ValueError):
        M.DynamicTrivialization(torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1),
                                torch.nn.Linear(2, 2), K=1)


# ---- expRNN -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_exprnn_scan_against_eager_cell_loop(dtype):
    torch.manual_seed(1)
    m = M.ExpRNN(5, 16).to(dtype)
    x = torch.randn(40, 3, 5, dtype=dtype)
    stats0 = torchc._C.stats()
    H, h = m(x)
    loss = (H ** 2).sum() + h.sum()
    got = torch.autograd.grad(loss, list(m.parameters()))
    stats1 = torchc._C.stats()

    def eager():
        hh, outs = torch.zeros(3, 16, dtype=dtype), []
        for t in range(40):
            hh = m.cell(x[t], hh)
            outs.append(hh)
        Hs = torch.stack(outs)
        return Hs, (Hs ** 2).sum() + hh.sum()

    He, le = eager()
    want = torch.autograd.grad(le, list(m.parameters()))
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert rel(H, He) < tol
    for g, w in zip(got, want):
        assert rel(g, w) < tol
    # the step ran as torchc.scan's C loop: its graph compiled once (forward + backward),
    # 39 forward steps after the probe and 40 backward steps in C, no fallback
    d = {k: stats1[k] - stats0[k] for k in ("hits", "compiles", "fallbacks")}
    assert d["compiles"] <= 1 and d["fallbacks"] == 0, d
    assert torchc._scan.last_fallback is None
    loops, runs = torchc._C._scan_stats()
    H, h = m(x)
    ((H ** 2).sum() + h.sum()).backward()
    assert torchc._C._scan_stats()[1] - runs == 39 + 40


CUDA = pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"))


@pytest.mark.parametrize("device", ["cpu", CUDA])
@pytest.mark.parametrize("T", [1, 2, 7])
def test_exprnn_recurrent_weight_gradient_batched(T, device):
    """The recurrent kernel's gradient is one GEMM after the loop (rnn._StepGradTap):
    against the eager cell loop in float64 with an initial state that needs a gradient, short
    sequences (T = 1: no H[:-1] term), and an error if H was modified in place. (On CUDA the
    scan runs its Python loop over the compiled body: the same gradients.)"""
    torch.manual_seed(2)
    m = M.ExpRNN(3, 8).double().to(device)
    x = torch.randn(T, 4, 3, dtype=torch.float64, device=device)
    h0 = torch.randn(4, 8, dtype=torch.float64, device=device, requires_grad=True)
    params = list(m.parameters()) + [h0]
    H, h = m(x, h0)
    got = torch.autograd.grad((H.sin()).sum() + (h ** 2).sum(), params)
    hh, outs = h0, []
    for t in range(T):
        hh = m.cell(x[t], hh)
        outs.append(hh)
    want = torch.autograd.grad((torch.stack(outs).sin()).sum() + (hh ** 2).sum(), params)
    for g, w in zip(got, want):
        assert rel(g, w) < 1e-12
    assert (torchc._scan.last_fallback is None) == (device == "cpu")
    H, h = m(x, h0)
    loss = H.sum()
    with torch.no_grad():
        H.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_exprnn_in_a_compiled_model(dtype):
    """torchc.compile of a model holding an ExpRNN, trained: ExpRNN.forward is captured up to
    the recurrence (the parametrization's matrix_exp, the base product and the input
    projection in one graph with its compiled backward), the graph breaks only at the
    recurrence (torchc.scan, its own C loop), the rest of the model and the loss compile after
    it; values and every parameter's gradient as the eager model's. (Before: the
    parametrization's autograd Function and the step's closure made ExpRNN.forward run
    eagerly.)"""
    torch.manual_seed(4)
    rnn = M.ExpRNN(3, 12).to(dtype)
    out = torch.nn.Linear(12, 5).to(dtype)
    x = torch.randn(30, 4, 3, dtype=dtype)
    y = torch.randint(0, 5, (4,))
    params = list(rnn.parameters()) + list(out.parameters())

    def step(x, y):
        H, h = rnn(x)
        return torch.nn.functional.cross_entropy(out(h), y) + H.square().mean()

    ex = torchc.explain(step)(x, y)
    assert ex.graph_break_count >= 1 and all("call to _recurrence" in r for r in ex.break_reasons), str(ex)
    assert ex.extern_calls.count("matrix_exp") >= 1 and ex.backward_graph_count >= 3, str(ex)
    torchc.reset()
    cstep = torchc.compile(step)
    for _ in range(2):  # the first call compiles, the second runs the cached entries
        stats0 = torchc._C.stats()
        loss = cstep(x, y)
        got = torch.autograd.grad(loss, params)
        assert torchc._scan.last_fallback is None
        want_loss = step(x, y)
        want = torch.autograd.grad(want_loss, params)
        tol = 1e-11 if dtype == torch.float64 else 2e-5
        assert rel(loss, want_loss) < tol
        for g, w in zip(got, want):
            assert g.shape == w.shape and rel(g, w) < tol, rel(g, w)
    d = {k: torchc._C.stats()[k] - stats0[k] for k in ("compiles", "fallbacks")}
    assert d == {"compiles": 0, "fallbacks": 0}, d


def test_exprnn_frozen_recurrent_kernel():
    """B without a gradient (its parametrization frozen): no recurrent-gradient node, the
    other gradients as eager's."""
    torch.manual_seed(3)
    m = M.ExpRNN(2, 6).double()
    for p in m.cell.recurrent_kernel.parameters():
        p.requires_grad_(False)
    x = torch.randn(5, 3, 2, dtype=torch.float64)
    H, h = m(x)
    params = [p for p in m.parameters() if p.requires_grad]
    got = torch.autograd.grad(H.sum() + h.sum(), params)
    hh, outs = torch.zeros(3, 6, dtype=torch.float64), []
    for t in range(5):
        hh = m.cell(x[t], hh)
        outs.append(hh)
    want = torch.autograd.grad(torch.stack(outs).sum() + hh.sum(), params)
    for g, w in zip(got, want):
        assert rel(g, w) < 1e-12


def test_copying_task_short_run_below_baseline():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks", "manifolds"))
    import copying
    a = copying.parser().parse_args(["--L", "30", "--hidden", "48", "--steps", "150", "--batch", "64",
                                     "--log_every", "1000", "--lr", "2e-3", "--lr_orth", "2e-4"])
    r = copying.run(a)
    assert r["final_loss_mean_last_50"] < 0.7 * r["baseline"], (r["final_loss_mean_last_50"], r["baseline"])
    assert r["orthogonality_error"] < 1e-5


# ---- GPU (skipped without CUDA) -----------------------------------------------------------------
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_matrix_exp_cuda(dtype):
    single = dtype in (torch.float32, torch.complex64)
    for n, norm, batch in [(16, 0.3, ()), (64, 5.0, (3,)), (200, 40.0, ())]:
        A = mat(n, norm, dtype, batch=batch)
        if batch:
            A[0] *= 1e-3
        Ac = A.cuda()
        ref = ref_expm(A) if not batch else torch.stack([ref_expm(a) for a in A])
        err, terr = rel(torchc._C.matrix_exp(Ac).cpu(), ref), rel(torch.linalg.matrix_exp(Ac).cpu(), ref)
        assert err <= (max(1e-6, 4 * terr) if single else max(1e-12, 4 * terr)), (n, err, terr)
        G = torch.randn(A.shape, dtype=dtype)
        Ag = Ac.clone().requires_grad_()
        M.matrix_exp(Ag).backward(G.cuda())
        A64 = A.to(torch.complex128 if dtype.is_complex else torch.float64).clone().requires_grad_()
        torch.linalg.matrix_exp(A64).backward(G.to(A64.dtype))
        At = Ac.clone().requires_grad_()
        torch.linalg.matrix_exp(At).backward(G.cuda())
        assert rel(Ag.grad.cpu(), A64.grad) <= (max(1e-6, 4 * rel(At.grad.cpu(), A64.grad)) if single else 1e-12)
    if not dtype.is_complex:
        f = lambda A: torch.linalg.matrix_exp(A) * 2  # noqa: E731
        A = mat(32, 3.0, dtype).cuda()
        assert rel(torchc.compile(f)(A), f(A)) < (1e-5 if single else 1e-11)
        _one_graph_with(explain_of(f, A), "matrix_exp")


# ---- complex dtypes: ATen externs in the graph, their gradients compiled as backward externs -----
@pytest.mark.allow_fallback
def test_complex_unitary_and_matrix_exp_with_eagers_gradients():
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 6, bias=False).to(torch.complex64)
    M.unitary(lin, "weight")
    x = torch.randn(3, 6, dtype=torch.complex64)

    def f(x):
        return lin(x).abs().sum()

    e = explain_of(f, x)  # the weight requires grad: forward and backward compiled
    assert e.graph_count == 1 and e.graph_break_count == 0 and e.backward_graph_count == 1, str(e)
    got = torchc.compile(f)(x)
    got.backward()
    g = lin.parametrizations.weight.original.grad.clone()
    lin.zero_grad()
    want = f(x)
    want.backward()
    assert_same(got, want)
    assert_same(g, lin.parametrizations.weight.original.grad)
    W = lin.weight.detach()
    assert (W.conj().T @ W - torch.eye(6)).abs().max() < 1e-5  # unitary

    A = torch.randn(2, 4, 4, dtype=torch.complex64)
    e = explain_of(lambda A: torch.linalg.matrix_exp(A) * 2, A)
    assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons
    assert_same(torchc.compile(lambda A: torch.linalg.matrix_exp(A) * 2)(A), torch.linalg.matrix_exp(A) * 2)

    # torchc.scan over a complex body: its graph (ATen externs) run as the loop
    def step(h, x):
        h = h * x
        return h, h + 1
    xs = torch.randn(5, 2, dtype=torch.complex64)
    c, ys = torchc.scan(step, torch.ones(2, dtype=torch.complex64), xs)
    assert torchc._scan.last_fallback is None, torchc._scan.last_fallback
    assert_same(c, torch.ones(2, dtype=torch.complex64) * xs.prod(0))
    assert_same(ys[-1], c + 1)

    # a real carry with a complex loop constant that requires grad (a unitary recurrent
    # matrix): the body compiles with its backward, but the scan sums loop constants'
    # gradients in real dtypes only, so the loop falls back, named, with eager's values and
    # gradients
    A = torch.randn(3, 3, dtype=torch.complex64)
    U = torch.linalg.matrix_exp(A - A.mH).requires_grad_()

    def rstep(h, x):
        h = torch.tanh((h.to(torch.complex64) @ U).real + x)
        return h, h
    xr = torch.randn(4, 2, 3)
    c, ys = torchc.scan(rstep, torch.zeros(2, 3), xr)
    assert "float32/float64 only" in torchc._scan.last_fallback, torchc._scan.last_fallback
    (g,) = torch.autograd.grad(ys.sum() + c.sum(), U)
    h, hs = torch.zeros(2, 3), []
    for t in range(4):
        h, _ = rstep(h, xr[t])
        hs.append(h)
    (ge,) = torch.autograd.grad(torch.stack(hs).sum() + h.sum(), U)
    assert_same(ys, torch.stack(hs).detach())
    assert_same(g, ge)


def test_exprnn_inference_runs_the_c_loop():
    """ExpRNN's step (modReLU an autograd.Function differentiated from its output) runs as a C
    loop without grad too (the Function's ctx writes need no replay): eager's values."""
    torch.manual_seed(4)
    m = M.ExpRNN(2, 12)
    x = torch.randn(30, 5, 2)
    with torch.no_grad():
        H, h = m(x)
        assert torchc._scan.last_fallback is None
        hh, outs = torch.zeros(5, 12), []
        for t in range(30):
            hh = m.cell(x[t], hh)
            outs.append(hh)
    assert not H.requires_grad
    assert rel(H, torch.stack(outs)) < 1e-6 and rel(h, hh) < 1e-6


# ---- edge sizes: differential against eager (values and gradients) --------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n_in,hidden,batch,T", [(1, 1, 1, 1), (1, 2, 3, 2), (3, 5, 1, 7), (2, 7, 4, 5), (1, 9, 2, 3)])
def test_exprnn_edge_sizes_against_eager(dtype, n_in, hidden, batch, T):
    """ExpRNN at hidden sizes 1, 2 and odd, batch 1 and more, one step and several, input
    size 1 (the outer-product projection) and more: the scan's C loop (no fallback, its steps
    counted) gives the eager cell loop's outputs and the gradients of every parameter (the
    recurrent kernel's through _StepGradTap and the matrix exponential) and of x and h0."""
    torch.manual_seed(hidden * 100 + T)
    m = M.ExpRNN(n_in, hidden).to(dtype)
    x = torch.randn(T, batch, n_in, dtype=dtype, requires_grad=True)
    h0 = torch.randn(batch, hidden, dtype=dtype, requires_grad=True)
    wts = torch.randn(T, batch, hidden, dtype=dtype)
    params = list(m.parameters())

    runs = torchc._C._scan_stats()[1]
    H, h = m(x, h0)
    assert torchc._scan.last_fallback is None
    loss = (H * wts).sum() + (h ** 2).sum()
    got = torch.autograd.grad(loss, params + [x, h0])
    # the C loop ran every step after the probe, forward and backward
    assert torchc._C._scan_stats()[1] - runs == (T - 1) + T

    hh, outs = h0, []
    for t in range(T):
        hh = m.cell(x[t], hh)
        outs.append(hh)
    He = torch.stack(outs)
    want = torch.autograd.grad((He * wts).sum() + (hh ** 2).sum(), params + [x, h0])
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert H.dtype == He.dtype and H.shape == He.shape and h.shape == hh.shape
    assert rel(H, He) < tol and rel(h, hh) < tol
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert rel(g, w) < tol or (g - w).abs().max() < tol


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (5, 2, 2), (4, 7, 7), (2, 1, 9, 9)])
def test_matrix_exp_graph_op_edge_sizes_training(dtype, shape):
    """matrix_exp and its backward as graph ops (one forward graph, one backward graph, one
    matrix_exp extern) at n = 1, 2 and odd, batched: eager's values and gradients."""
    def f(A, W):
        E = torch.linalg.matrix_exp(A)
        return (E * W).sum() + E.sum(-1)

    n, batch = shape[-1], shape[:-2]
    A = mat(n, 1.7, dtype, "skew" if n > 1 else "general", batch=batch).requires_grad_()
    W = torch.randn(shape, dtype=dtype)
    ex = torchc.explain(f)(A, W)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.backward_graph_count == 1, str(ex)
    assert ex.extern_calls.count("matrix_exp") == 1
    torchc.reset()
    out = torchc.compile(f)(A, W)
    want = f(A, W)
    go = torch.ones_like(want)
    (g,) = torch.autograd.grad(out, A, go)
    (gw,) = torch.autograd.grad(want, A, go)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    assert out.dtype == want.dtype and out.shape == want.shape and rel(out, want) < tol
    assert g.dtype == gw.dtype and g.shape == gw.shape and rel(g, gw) < tol
