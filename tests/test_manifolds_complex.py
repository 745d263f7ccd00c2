"""Complex tensors under torchc.compile: eager's values, dtypes and gradients.

Complex tensors are graph values; every op that reads or makes one is an ATen extern
(dynamo_hook/ops_complex.c; tests/test_complex.py has the differential tests of that), so
the common complex uses below compile whole, gradients through them included (a compiled
backward graph: tests/test_manifolds_complex_grad.py). What is still left to eager — in-place
updates of complex tensors — falls back with a reason in torchc.explain, and the tests check eager's values and gradients there (a silent
fallback or a silent wrong answer fails them). The manifold-level complex work —
torchc.manifolds.matrix_exp of complex64/128 (torchc's own scaling-and-squaring and VJP in
csrc/matrix_exp.cpp) and the unitary parametrization — is checked against
torch.linalg.matrix_exp and against eager training here too."""
import pytest
import torch

import torchc
from torchc import manifolds as M

from conftest import assert_same, explain_of

XR = torch.randn(4, 4, generator=torch.Generator().manual_seed(1))
XC = torch.randn(4, 4, dtype=torch.complex64, generator=torch.Generator().manual_seed(2))
CGLOB = torch.randn(4, dtype=torch.complex64, generator=torch.Generator().manual_seed(3))

# name: (function, input, what the break reason must mention)
CASES = {
    "c_add": (lambda x: x + 1, XC, "complex64"),
    "c_mul_scalar": (lambda x: x * (1 + 2j), XC, "complex64"),
    "c_abs_sum": (lambda x: x.abs().sum(), XC, "complex64"),
    "c_real_imag": (lambda x: x.imag + x.real * 2, XC, "complex64"),
    "c_conj": (lambda x: x.conj() + 0, XC, "complex64"),
    "c_mH_matmul": (lambda x: x.mH @ x, XC, "complex64"),
    "c_matrix_exp": (lambda x: torch.linalg.matrix_exp(x), XC, "complex64"),
    "c_view_as_real": (lambda x: torch.view_as_real(x) * 2, XC, "complex64"),
    "c_angle": (lambda x: x.angle(), XC, "complex64"),
    "c_sum_dim": (lambda x: x.sum(0), XC, "complex64"),
    "c_exp": (lambda x: torch.exp(x), XC, "complex64"),
    "c_is_complex": (lambda x: x * 2 if x.is_complex() else x * 3, XC, "complex64"),
    "c128_add": (lambda x: x * 3 - 1, XC.to(torch.complex128), "complex128"),
    "r_times_complex_scalar": (lambda x: x * (1 + 2j), XR, "complex"),
    "r_exp_1j": (lambda x: torch.exp(1j * x).real, XR, "complex"),
    "r_plus_1j_abs": (lambda x: (x + 1j).abs(), XR, "complex"),
    "r_to_complex": (lambda x: x.to(torch.complex64) * 2, XR, "complex64"),
    "r_to_dtype_kw": (lambda x: x.to(dtype=torch.complex64).real, XR, "complex64"),
    "r_type_complex": (lambda x: x.type(torch.complex64) + 1, XR, "complex64"),
    "r_cdouble": (lambda x: x.double().to(torch.complex128) + 1, XR, "complex128"),
    "r_torch_complex": (lambda x: torch.complex(x, x * 2).abs(), XR, "complex"),
    "r_polar": (lambda x: torch.polar(x.abs(), x).imag, XR, "polar"),
    "r_view_as_complex": (lambda x: torch.view_as_complex(x.reshape(4, 2, 2)).abs(), XR, "view_as_complex"),
    "r_fft": (lambda x: torch.fft.fft(x).abs(), XR, "fft"),
    "r_rfft_ifft": (lambda x: torch.fft.ifft(torch.fft.rfft(x, dim=0)).real.sum(), XR, "fft"),
    "r_global_complex": (lambda x: (x * CGLOB).real, XR, "complex64"),
    "r_zeros_complex": (lambda x: torch.zeros(4, 4, dtype=torch.complex64) + x, XR, "complex64"),
    "r_ones_like_complex": (lambda x: torch.ones_like(x, dtype=torch.complex64) * x, XR, "complex64"),
    "r_new_zeros_complex": (lambda x: x.new_zeros(4, dtype=torch.complex64) + 1, XR, "complex64"),
    "r_tensor_of_complex": (lambda x: torch.tensor(1 + 2j) * x, XR, "complex"),
    "r_full_complex": (lambda x: torch.full((4,), 1 + 1j) * x, XR, "complex"),
    "r_randn_complex": (lambda x: x + 0 * torch.randn(4, dtype=torch.cfloat).real, XR, "complex64"),
    "r_complex_matrix_exp": (lambda x: torch.linalg.matrix_exp((x - x.T).to(torch.complex64) * 1j), XR, "complex64"),
    "r_eigvals": (lambda x: torch.linalg.eigvals(x).abs().sort().values, XR, "complex"),
    "r_python_complex": (lambda x: x.sum() * complex(1, 1), XR, "complex"),
    "r_pow_complex": (lambda x: x.abs() ** (0.5 + 0j), XR, "complex"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_uses_compile_whole_and_match_eager(name):
    f, x, _ = CASES[name]
    torch.manual_seed(0)
    want = f(x.clone())
    cf = torchc.compile(f)
    for _ in range(2):  # the first call (capture) and a cached one
        torch.manual_seed(0)  # (r_randn_complex: the same draw)
        got = cf(x.clone())
        assert got.dtype == want.dtype and got.shape == want.shape
        assert_same(got, want)
    e = explain_of(f, x.clone())
    assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons


@pytest.mark.allow_fallback
def test_complex_uses_left_to_eager_are_named():
    """What is still left to eager says why: an in-place update of a complex tensor. (A
    complex op on a value that requires grad compiles with its backward:
    tests/test_manifolds_complex_grad.py.)"""
    e = explain_of(lambda x: x.mul_(1j).abs(), XC.clone())
    assert any("writes an operand in place" in str(r) for r in e.break_reasons), e.break_reasons


def test_real_frames_around_complex_still_compile():
    """A real frame that only asks whether a tensor is complex compiles (one graph): the
    fallback is per use, not a blanket refusal."""
    f = lambda x: x * 2 if torch.is_complex(x) else x * 3  # noqa: E731
    e = explain_of(f, XR)
    assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons
    assert_same(torchc.compile(f)(XR), XR * 3)


def test_complex_intermediate_gradients_match_eager():
    """Real parameters, complex intermediates (an FFT, a complex number): one graph with its
    backward graph (the FFT's gradient is ATen's, as a backward extern), eager's gradients."""
    torch.manual_seed(0)
    w = torch.randn(8, requires_grad=True)

    def f(x):
        y = torch.tanh(x * w)  # a graph
        z = torch.fft.fft(y) * (1 + 2j)  # complex: ATen externs
        return z.abs().sum() + y.sum()

    x = torch.randn(3, 8)
    e = explain_of(f, x)
    assert e.graph_count == 1 and e.graph_break_count == 0 and e.backward_graph_count == 1, str(e)
    got = torchc.compile(f)(x)
    (gg,) = torch.autograd.grad(got, w)
    want = f(x)
    (gw,) = torch.autograd.grad(want, w)
    assert_same(got, want)
    assert_same(gg, gw)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 7, 7), (0, 4, 4)])
@pytest.mark.needs_no_compiler
def test_complex_matrix_exp_matches_torch(dtype, shape):
    """torchc.manifolds.matrix_exp (torchc's C implementation) against torch.linalg.matrix_exp:
    values, dtype, shape and the gradient, complex64 and complex128."""
    torch.manual_seed(0)
    A = (torch.randn(*shape, dtype=dtype) * 0.7).requires_grad_()
    got = M.matrix_exp(A)
    want = torch.linalg.matrix_exp(A)
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    tol = 2e-6 if dtype == torch.complex64 else 1e-13
    assert ((got - want).abs().amax((-2, -1)) <= tol * want.abs().amax((-2, -1)).clamp_min(1)).all()
    G = torch.randn_like(got)
    (g,) = torch.autograd.grad(got, A, G)
    (gw,) = torch.autograd.grad(want, A, G)
    assert g.dtype == dtype
    assert ((g - gw).abs().amax((-2, -1)) <= 50 * tol * gw.abs().amax((-2, -1)).clamp_min(1)).all()


@pytest.mark.allow_fallback
def test_unitary_parametrization_trained_through_torchc_matches_eager():
    """A complex unitary layer inside a model compiled by torchc, 20 Adam steps: the layer's
    frame compiles with its backward (complex ops on the trained weight: backward externs),
    the real head compiles; losses, weights and unitarity as in eager (a lost gradient shows
    in the losses); under no_grad the layer compiles whole."""
    def build():
        torch.manual_seed(0)
        lin = torch.nn.Linear(6, 6, bias=False).to(torch.complex64)
        M.unitary(lin, "weight")
        head = torch.nn.Linear(6, 2)
        return lin, head

    def head_loss(head, h, y):  # real: compiled
        return torch.nn.functional.cross_entropy(head(torch.tanh(h)), y)

    def run(compile_):
        lin, head = build()
        opt = torch.optim.Adam(list(lin.parameters()) + list(head.parameters()), lr=1e-2)
        step_loss = (lambda x: lin(x).abs()) if not compile_ else torchc.compile(lambda x: lin(x).abs())
        hl = torchc.compile(head_loss) if compile_ else head_loss
        g = torch.Generator().manual_seed(5)
        losses = []
        for _ in range(20):
            x = torch.randn(16, 6, dtype=torch.complex64, generator=g)
            y = torch.randint(0, 2, (16,), generator=g)
            loss = hl(head, step_loss(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, lin.weight.detach(), head.weight.detach()

    le, We, He = run(False)
    lc, Wc, Hc = run(True)
    assert lc == pytest.approx(le, rel=1e-4, abs=1e-5)
    assert_same(Wc, We, rtol=1e-4, atol=1e-5)
    assert_same(Hc, He, rtol=1e-4, atol=1e-5)
    assert Wc.dtype == torch.complex64
    assert (Wc.mH @ Wc - torch.eye(6)).abs().max() < 1e-5
    lin, head = build()
    x = torch.randn(16, 6, dtype=torch.complex64)
    e = explain_of(lambda x: lin(x).abs(), x)  # the weight requires grad: forward and backward compiled
    assert e.graph_count == 1 and e.graph_break_count == 0 and e.backward_graph_count == 1, str(e)
    with torch.no_grad():  # inference: whole
        e = explain_of(lambda x: lin(x).abs(), x)
        assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons
        assert_same(torchc.compile(lambda x: lin(x).abs())(x), lin(x).abs())
    e = explain_of(lambda h, y: head_loss(head, h, y), torch.randn(16, 6), torch.randint(0, 2, (16,)))
    assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons


@pytest.mark.no_compile  # (the Dynamo backend's graphs with complex values compile nothing)
@pytest.mark.parametrize("name", ["c_matrix_exp", "r_times_complex_scalar", "r_fft", "c_mH_matmul",
                                  "c_view_as_real", "r_complex_matrix_exp"])
def test_complex_through_the_dynamo_backend(name):
    """torch.compile(backend="torchc"): Dynamo's graphs holding complex tensors reach torchc's
    backend; eager's values and dtypes."""
    import torch._dynamo
    f, x, _ = CASES[name]
    torch._dynamo.reset()
    got = torch.compile(f, backend="torchc")(x.clone())
    want = f(x.clone())
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_same(got, want)


def _rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (3, 4, 4), (2, 1, 7, 7)])
@pytest.mark.parametrize("kind", ["general", "skew_hermitian"])
def test_matrix_exp_parts_compiles_with_eagers_complex_values_and_grads(dtype, shape, kind):
    """exp(X + iY) from real parts (the 2n x 2n real form) compiles as one real graph with one
    matrix_exp extern and its backward graph, and gives torch.linalg.matrix_exp's complex
    values and, for a real loss of the parts, the complex autograd's gradients of X and Y
    (sizes 1, 2, odd, batched; a skew-Hermitian input gives a unitary E)."""
    g = torch.Generator().manual_seed(sum(shape) * 7 + (kind == "general"))
    X = torch.randn(shape, generator=g, dtype=torch.float64)
    Y = torch.randn(shape, generator=g, dtype=torch.float64)
    if kind == "skew_hermitian":
        X, Y = X - X.mT, Y + Y.mT
    X, Y = (X / 2).to(dtype).requires_grad_(), (Y / 2).to(dtype).requires_grad_()
    Wr, Wi = torch.randn(shape, generator=g, dtype=dtype), torch.randn(shape, generator=g, dtype=dtype)

    def f(X, Y):
        P, Q = M.matrix_exp_parts(X, Y)
        return P, Q, (P * Wr).sum() + (Q * Wi).sum()

    ex = torchc.explain(f)(X, Y)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.backward_graph_count == 1, str(ex)
    assert ex.extern_calls.count("matrix_exp") == 1, ex.extern_calls
    torchc.reset()
    P, Q, loss = torchc.compile(f)(X, Y)
    gX, gY = torch.autograd.grad(loss, (X, Y))

    E = torch.linalg.matrix_exp(torch.complex(X, Y))  # eager: complex autograd
    want = (E.real * Wr).sum() + (E.imag * Wi).sum()
    wX, wY = torch.autograd.grad(want, (X, Y))
    tol = 2e-6 if dtype == torch.float32 else 1e-12
    for got, ref in ((P, E.real), (Q, E.imag), (gX, wX), (gY, wY)):
        assert got.dtype == dtype and got.shape == ref.shape
        assert _rel(got.detach(), ref.detach()) < tol
    if kind == "skew_hermitian":
        U = torch.complex(P, Q).detach().to(torch.complex128)
        assert (U.mH @ U - torch.eye(shape[-1], dtype=U.dtype)).abs().max() < (1e-5 if dtype == torch.float32 else 1e-12)


@pytest.mark.needs_no_compiler
def test_matrix_exp_parts_argument_checks():
    with pytest.raises(ValueError):
        M.matrix_exp_parts(torch.zeros(2, 2), torch.zeros(3, 3))
    with pytest.raises(ValueError):
        M.matrix_exp_parts(torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.float64))
    with pytest.raises(ValueError):
        M.matrix_exp_parts(torch.zeros(2, 2, dtype=torch.complex64), torch.zeros(2, 2, dtype=torch.complex64))
