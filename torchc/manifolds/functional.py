"""Maps from the Lie algebra to the group, with fast gradients.

matrix_exp(A)      exp(A) by scaling and squaring (optimized Taylor degree chosen from the
                   1-norm; torchc._C.matrix_exp, csrc/matrix_exp.cpp), float32/64 and
                   complex64/128, batched. Its backward is L(Aᴴ, G), the top-right block of
                   exp([[Aᴴ, G], [0, Aᴴ]]), computed with n x n blocks from the registers of the
                   forward (2 GEMMs per product of the approximant, against 8 for the 2n x 2n
                   block matrix that torch.linalg.matrix_exp's backward exponentiates).
matrix_exp_parts   exp(X + iY) as its real and imaginary parts from real X, Y, in real
                   arithmetic (the 2n x 2n real form): compiles as one real graph op where a
                   complex tensor would make torchc run the frame eagerly.
matrix_exp_vjp     that rule on its own: the gradient of <G, exp(A)> (the VJP a compiled
                   backward can call: the graph op IC_EXT_MATRIX_EXP_VJP runs the same code).
cayley(A)          (I - A/2)⁻¹ (I + A/2), PyTorch's convention, one LU factorization shared by
                   the forward and the backward.
"""
import torch

from .. import _C

class _MatrixExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A):
        E, tape = _C.matrix_exp_save(A)
        ctx.tape = tape
        ctx.save_for_backward(A)
        return E

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, G):
        (A,) = ctx.saved_tensors
        # the registers live as long as the graph (a second backward with retain_graph gives
        # the same values)
        return _C.matrix_exp_vjp(A, G.contiguous(), ctx.tape)


def matrix_exp(A):
    """exp(A) for A of shape [..., n, n]; differentiable (first order). Without gradients it is
    torchc._C.matrix_exp, which torchc traces as torch.linalg.matrix_exp (one graph op running
    the same code); other dtypes and layouts go to torch.linalg.matrix_exp. Inside a function
    torchc compiles, a real A is torch.linalg.matrix_exp, the graph op whose compiled backward
    runs the same rule (the autograd Function would break the graph there); a complex A is
    the complex extern, whose compiled backward is ATen's (graph/vjp_extern.c vjp_custom)."""
    if torch.compiler.is_compiling():
        return torch.linalg.matrix_exp(A)
    if torch.is_grad_enabled() and A.requires_grad:
        return _MatrixExp.apply(A)
    return _C.matrix_exp(A)


def matrix_exp_parts(X, Y):
    """(Re E, Im E) for E = exp(X + iY), X and Y real [..., n, n] of one dtype, computed in real
    arithmetic: X + iY -> [[X, -Y], [Y, X]] is an injective homomorphism of real algebras, so it
    commutes with the exponential's power series, and exp([[X, -Y], [Y, X]]) =
    [[Re E, -Im E], [Im E, Re E]]. Differentiable (the real matrix_exp's backward), and inside
    a function torchc compiles it is one real matrix_exp graph op, where a complex tensor would
    make torchc run the frame eagerly. Eager's values: those of
    torch.linalg.matrix_exp(torch.complex(X, Y)) to rounding; for a skew-Hermitian X + iY
    (X skew-symmetric, Y symmetric) E is unitary. Costs 2x the flops of the complex product."""
    if X.shape != Y.shape or X.dtype != Y.dtype or X.dtype.is_complex:
        raise ValueError(f"matrix_exp_parts: X and Y must be real tensors of one shape and dtype, got "
                         f"{X.dtype}{list(X.shape)} and {Y.dtype}{list(Y.shape)}")
    n = X.size(-1)
    E = matrix_exp(torch.cat([torch.cat([X, -Y], -1), torch.cat([Y, X], -1)], -2))
    return E[..., :n, :n], E[..., n:, :n]


def matrix_exp_vjp(A, G):
    """The gradient of <G, exp(A)> with respect to A: L(Aᴴ, G)."""
    return _C.matrix_exp_vjp(A, G)


class _Cayley(torch.autograd.Function):
    @staticmethod
    def forward(ctx, A):
        n = A.size(-1)
        Id = torch.eye(n, dtype=A.dtype, device=A.device)
        LU, piv = torch.linalg.lu_factor(Id - 0.5 * A)
        C = torch.linalg.lu_solve(LU, piv, Id + 0.5 * A)
        ctx.save_for_backward(LU, piv, C)
        return C

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, G):
        # C = M⁻¹ N, M = I - A/2, N = I + A/2: dC = ½ M⁻¹ dA (I + C), so
        # grad A = ½ M⁻ᴴ G (I + C)ᴴ
        LU, piv, C = ctx.saved_tensors
        Y = torch.linalg.lu_solve(LU, piv, G, adjoint=True)
        return 0.5 * (Y + Y @ C.mH)


def eye_like(A):
    """The identity of A's last size, dtype and device, built from aranges (torchc captures it)."""
    i = torch.arange(A.size(-1), device=A.device)
    return (i[:, None] == i[None, :]).to(A.dtype)


def cayley(A):
    """The Cayley map (I - A/2)⁻¹ (I + A/2): orthogonal (unitary) for skew-symmetric (skew-Hermitian) A."""
    if torch.is_grad_enabled() and A.requires_grad and not torch.compiler.is_compiling():
        return _Cayley.apply(A)
    Id = eye_like(A)
    return torch.linalg.solve(Id - 0.5 * A, Id + 0.5 * A)


def skew(X, lower=True):
    """The skew-symmetric (skew-Hermitian) matrix of the lower (upper) triangle of X: T - Tᴴ,
    T = tril(X) (triu): a real diagonal cancels, a complex one keeps 2i·Im(x_ii)."""
    T = X.tril() if lower else X.triu()
    Th = T.transpose(-2, -1)
    return T - (Th.conj() if T.dtype.is_complex else Th)


def single_precision(dtype):
    """True for the dtypes in which the maps' results need orthonormalize() (float32, complex64 and
    narrower): their rounding leaves ||BᴴB - I|| at 1e-5 and above for the exponential of a skew
    matrix of 1-norm >= ~10, and products of such matrices drift further."""
    return torch.finfo(dtype).eps > 1e-10


def orthonormalize(B):
    """One Newton-Schulz step towards the polar factor of a B [..., n, k] (n >= k) with nearly
    orthonormal columns: B + B (I - BᴴB) / 2. For ||BᴴB - I|| = e it leaves ~(3/4) e² plus
    rounding, so a single step takes a map's float32 result from its rounding error (exp of a
    skew matrix of 1-norm 10-300: 1e-5 to 2e-5 at n = 190-512, growing with the scaling's
    squarings) down to the rounding of this step (~5e-7). Written as a correction added to B
    (not B (3I - BᴴB)/2): the GEMM then rounds only the small term. Differentiable, and plain
    matmuls and pointwise ops (one graph under torchc.compile, no data-dependent branch); at an
    orthonormal B its derivative maps a tangent direction to itself, so gradients reaching the
    map are unchanged to first order in e."""
    Bh = B.mT.conj() if B.is_complex() else B.mT
    return B + B @ (0.5 * (eye_like(B) - Bh @ B))


def project(B, iters=2):
    """Re-projection onto the orthogonal (Stiefel) manifold for a B close to it: Newton-Schulz
    iterations B <- B (3I - BᴴB)/2 converge quadratically to the polar factor (the nearest
    matrix with orthonormal columns) while ||BᴴB - I|| < 1; farther away, the polar factor by SVD."""
    k = B.size(-1)
    Id = torch.eye(k, dtype=B.dtype, device=B.device)
    err = (B.mH @ B - Id).abs().amax()
    if not torch.isfinite(err) or err > 0.5:
        U, _, Vh = torch.linalg.svd(B, full_matrices=False)
        return U @ Vh
    for _ in range(iters):
        B = B @ (1.5 * Id - 0.5 * (B.mH @ B))
    return B
