"""Compiled backward through complex graphs (issue 23): a complex op on a tensor that requires
grad is a graph extern whose gradient the graph's autograd builds (inductor_c/graph/vjp_extern.c
vjp_custom: one gradient extern per operand, ATen's own derivative of the call, so torch's
conjugate Wirtinger convention), and complex gradients that meet are summed by an ATen add.

Every differential test here asserts through torchc.explain that the frame is one graph with
no break AND one backward graph: a backward left to eager (the earlier graph break "complex op
on a tensor that requires grad") fails them. Values and gradients are compared with eager's
(float32/complex64 to 1e-5, complex128 to 1e-12) and checked by gradcheck in complex128."""
import pytest
import torch

import torchc
from torchc import manifolds as M

from conftest import assert_same


def _whole_with_backward(f, *args):
    ex = torchc.explain(f)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, (ex.break_reasons, str(ex))
    assert ex.backward_graph_count == 1, str(ex)
    return ex


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _c(shape, seed, dtype):
    return torch.randn(shape, dtype=dtype, generator=_g(seed))


def _skew_hermitian(A):
    return A - A.mH


# name: (function, [(shape, complex?)] of the arguments, all of which require grad)
CASES = {
    "mul": (lambda a, b: (a * b).abs().sum(), [((3, 4), 1), ((3, 4), 1)]),
    "mul_broadcast": (lambda a, b: (a * b).abs().pow(2).sum(), [((3, 4), 1), ((4,), 1)]),
    "add_sub": (lambda a, b: ((a + b) * (a - 2 * b)).real.sum(), [((2, 5), 1), ((2, 5), 1)]),
    "div": (lambda a, b: (a / (b + 3)).abs().sum(), [((6,), 1), ((6,), 1)]),
    "conj": (lambda a, b: (a.conj() * b).imag.sum(), [((4, 4), 1), ((4, 4), 1)]),
    "real_imag": (lambda a: (a.real ** 2 + torch.tanh(a.imag)).sum(), [((5, 3), 1)]),
    "view_as_real": (lambda a, b: torch.view_as_real(a * b).pow(2).sum(), [((3, 4), 1), ((3, 4), 1)]),
    "view_as_complex": (lambda r: (torch.view_as_complex(r) * (1 + 2j)).abs().sum(), [((3, 4, 2), 0)]),
    "matmul": (lambda A, x: (A @ x).abs().pow(2).sum(), [((4, 4), 1), ((4, 3), 1)]),
    "mH_matmul": (lambda A: (A.mH @ A).real.sum() + (A @ A.mH).imag.pow(2).sum(), [((3, 5), 1)]),
    "batched_matmul": (lambda A, x: torch.matmul(A, x).abs().sum(), [((2, 3, 3), 1), ((3, 2), 1)]),
    "matrix_exp_unitary": (lambda A, v: (torch.linalg.matrix_exp(_skew_hermitian(A)) @ v).abs().pow(2).sum()
                           + torch.linalg.matrix_exp(_skew_hermitian(A)).real.trace(), [((4, 4), 1), ((4, 2), 1)]),
    "real_to_complex": (lambda x, y: torch.complex(x, y).mul(1j).exp().real.sum(), [((3, 3), 0), ((3, 3), 0)]),
    "real_times_complex": (lambda x, a: (x * a).angle().sum() + (x.to(a.dtype) * 2j).imag.sum(),
                           [((4,), 0), ((4,), 1)]),
    "reused_sum_of_grads": (lambda a: (a * a.conj()).real.sum() + (a * 2).abs().sum() + a.imag.sum(), [((3, 3), 1)]),
    "complex_output": (lambda a, b: a @ b + a, [((3, 3), 1), ((3, 3), 1)]),
}


def _args(spec, cdtype, seed=0):
    rdtype = torch.float64 if cdtype == torch.complex128 else torch.float32
    return [(_c(s, seed + i, cdtype) if cx else torch.randn(s, dtype=rdtype, generator=_g(seed + i))) * 0.5
            for i, (s, cx) in enumerate(spec)]


@pytest.mark.parametrize("cdtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_backward_compiles_and_matches_eager(name, cdtype):
    f, spec = CASES[name]
    base = _args(spec, cdtype)
    _whole_with_backward(f, *[x.clone().requires_grad_() for x in base])
    torchc.reset()
    cf = torchc.compile(f)
    tol = dict(rtol=1e-5, atol=1e-5) if cdtype == torch.complex64 else dict(rtol=1e-12, atol=1e-12)
    for call in range(2):  # the capture and a cached call
        xs = [x.clone().requires_grad_() for x in base]
        ws = [x.clone().requires_grad_() for x in base]
        got, want = cf(*xs), f(*ws)
        assert_same(got.detach(), want.detach(), **tol)
        go = torch.randn(want.shape, dtype=want.dtype, generator=_g(9 + call))
        gg = torch.autograd.grad(got, xs, go)
        gw = torch.autograd.grad(want, ws, go)
        for a, b in zip(gg, gw):
            assert_same(a, b, **tol)


@pytest.mark.parametrize("name", ["mul_broadcast", "conj", "view_as_real", "view_as_complex", "mH_matmul",
                                  "matrix_exp_unitary", "real_to_complex", "real_times_complex",
                                  "reused_sum_of_grads", "complex_output"])
def test_complex_backward_gradcheck_complex128(name):
    """torch.autograd.gradcheck of the compiled function (complex128 / float64 inputs): the
    compiled gradients against finite differences, complex inputs checked as gradcheck does
    (both Wirtinger derivatives)."""
    f, spec = CASES[name]
    xs = [x.requires_grad_() for x in _args(spec, torch.complex128, seed=3)]
    _whole_with_backward(f, *xs)
    torchc.reset()
    assert torch.autograd.gradcheck(torchc.compile(f), xs, eps=1e-6, atol=1e-7, rtol=1e-6)


def _unitary_model():
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 6, bias=False).to(torch.complex64)
    M.unitary(lin, "weight")
    head = torch.nn.Linear(12, 2)
    return lin, head


def _unitary_loss(lin, head, x, y):
    z = lin(x)
    h = torch.view_as_real(z).flatten(1)
    return torch.nn.functional.cross_entropy(head(torch.tanh(h)), y)


def test_unitary_parametrization_training_compiles_forward_and_backward():
    """A unitary layer (complex64 matrix_exp of a skew-Hermitian matrix through
    torch.nn.utils.parametrize) and a real head in one compiled loss: one graph, one backward
    graph; 20 Adam steps give eager's losses and weights, and the weight stays unitary."""
    def run(compile_):
        lin, head = _unitary_model()
        opt = torch.optim.Adam(list(lin.parameters()) + list(head.parameters()), lr=1e-2)
        loss_fn = torchc.compile(_unitary_loss) if compile_ else _unitary_loss
        g = _g(5)
        losses = []
        for _ in range(20):
            x = torch.randn(16, 6, dtype=torch.complex64, generator=g)
            y = torch.randint(0, 2, (16,), generator=g)
            loss = loss_fn(lin, head, x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, lin.weight.detach(), head.weight.detach()

    lin, head = _unitary_model()
    x = torch.randn(16, 6, dtype=torch.complex64)
    y = torch.randint(0, 2, (16,))
    _whole_with_backward(lambda x, y: _unitary_loss(lin, head, x, y), x, y)
    torchc.reset()
    le, We, He = run(False)
    lc, Wc, Hc = run(True)
    assert lc == pytest.approx(le, rel=1e-4, abs=1e-5)
    assert_same(Wc, We, rtol=1e-4, atol=1e-5)
    assert_same(Hc, He, rtol=1e-4, atol=1e-5)
    assert (Wc.mH @ Wc - torch.eye(6)).abs().max() < 1e-5


class _UnitaryRNN(torch.nn.Module):
    """A small expRNN with a unitary recurrent kernel: B = exp(A - Aᴴ) once per forward,
    modReLU, a real read-out of the last state (the recurrence unrolled: T is small)."""

    def __init__(self, n_in, n, T):
        super().__init__()
        g = _g(11)
        self.A = torch.nn.Parameter(torch.randn(n, n, dtype=torch.complex64, generator=g) * 0.1)
        self.U = torch.nn.Parameter(torch.randn(n_in, n, dtype=torch.complex64, generator=g) * 0.3)
        self.b = torch.nn.Parameter(torch.full((n,), -0.05))
        self.out = torch.nn.Linear(2 * n, 3)
        self.T = T

    def forward(self, xs):
        B = torch.linalg.matrix_exp(self.A - self.A.mH)
        h = torch.zeros(xs.shape[1], self.A.shape[0], dtype=self.A.dtype)
        for t in range(self.T):
            z = h @ B + xs[t].to(self.A.dtype) @ self.U
            r = z.abs()
            h = z * (torch.relu(r + self.b) / r.clamp_min(1e-6))  # modReLU
        return self.out(torch.view_as_real(h).flatten(1))


def test_unitary_rnn_training_compiles_forward_and_backward():
    """An expRNN with a complex unitary kernel, 8 RMSprop steps: whole forward and backward
    graphs, eager's losses and parameters, and ‖BᴴB − I‖ of the trained kernel stays small."""
    xs = torch.randn(6, 5, 2, generator=_g(1))
    ys = torch.randint(0, 3, (5,), generator=_g(2))

    def run(compile_):
        torch.manual_seed(0)
        m = _UnitaryRNN(2, 8, 6)
        opt = torch.optim.RMSprop(m.parameters(), lr=1e-3)
        loss_fn = lambda xs, ys: torch.nn.functional.cross_entropy(m(xs), ys)  # noqa: E731
        if compile_:
            _whole_with_backward(loss_fn, xs, ys)
            torchc.reset()
            loss_fn = torchc.compile(loss_fn)
        losses = []
        for _ in range(8):
            loss = loss_fn(xs, ys)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().clone() for p in m.parameters()], m

    le, pe, _ = run(False)
    lc, pc, m = run(True)
    assert lc == pytest.approx(le, rel=1e-4, abs=1e-5)
    for a, b in zip(pc, pe):
        assert_same(a, b, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        B = torch.linalg.matrix_exp(m.A - m.A.mH)
        assert (B.mH @ B - torch.eye(8)).abs().max() < 1e-5


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (5, 3)])
def test_complex_backward_edge_shapes_and_non_contiguous_inputs(shape):
    """Empty, 1x1 and odd shapes, inputs that are non-contiguous views (a transposed and a
    strided view of leaves): compiled forward and backward, eager's values and gradients."""
    base_a = _c((shape[1], 2 * shape[0]), 1, torch.complex64)
    base_b = _c((shape[0], shape[1]), 2, torch.complex64)

    def f(a, b):
        return (a * b.conj() + a.mT.sum() * 0).abs().sum() + (a.mT @ b.conj()).real.sum()

    def args():
        la, lb = base_a.clone().requires_grad_(), base_b.clone().requires_grad_()
        return (la, lb), (la.mT[::2], lb)  # a: a strided, transposed view [shape0, shape1] of a leaf

    (la, lb), xs = args()
    assert not xs[0].is_contiguous() or min(shape) <= 1
    _whole_with_backward(f, *xs)
    torchc.reset()
    got = torchc.compile(f)(*xs)
    gg = torch.autograd.grad(got, (la, lb))
    (wa, wb), ws = args()
    want = f(*ws)
    gw = torch.autograd.grad(want, (wa, wb))
    assert_same(got.detach(), want.detach(), rtol=1e-5, atol=1e-5)
    for a, b in zip(gg, gw):
        assert_same(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.allow_fallback  # after a double backward the frame runs eagerly (by design, issue 22)
def test_complex_double_backward_replays_eagerly_with_eagers_values():
    """create_graph=True through a compiled complex graph: the forward is replayed eagerly
    with autograd (torchc/_fx_export.py exports the complex externs as their ATen calls), so
    the second-order gradient is eager's (it was torch's 'not used in the graph' error)."""
    a0, b0 = _c((3, 3), 4, torch.complex128), _c((3, 3), 5, torch.complex128)
    f = lambda a, b: (torch.exp(a) @ b).abs().pow(2).sum()  # noqa: E731

    def second(fn):
        a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
        (ga,) = torch.autograd.grad(fn(a, b), a, create_graph=True)
        return torch.autograd.grad(ga.abs().sum(), b)[0]

    _whole_with_backward(f, a0.clone().requires_grad_(), b0.clone().requires_grad_())
    torchc.reset()
    assert_same(second(torchc.compile(f)), second(f), rtol=1e-12, atol=1e-12)
