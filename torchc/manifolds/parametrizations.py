"""Orthogonal, special orthogonal, unitary and Stiefel parametrizations for
torch.nn.utils.parametrize, with a base (dynamic trivializations).

    B = base @ triv(A)[..., :k],   A = skew(X padded to n x n)

X is the unconstrained tensor (the weight's shape: n x k, n >= k; a wide weight is handled
transposed), skew takes its lower triangle (PyTorch's convention: T - Tᴴ, T = tril), triv is
"expm" (torchc.manifolds.matrix_exp), "cayley" or any callable mapping skew matrices to the
group, and base is an n x n orthogonal (unitary) buffer. Conventions of PyTorch's
torch.nn.utils.parametrizations.orthogonal (use_trivialization=True) and geotorch:
  right_inverse(W)  base <- W completed to n x n (W first), returns X = 0, so forward gives W;
  update_base()     base <- base @ triv(A) and X <- 0: one step of a dynamic trivialization
                    (Lezcano-Casado, "Trivializations for gradient-based optimization on
                    manifolds", NeurIPS 2019); the weight is unchanged by it.
SO(n) keeps det(B) = det(base) = +1; Orthogonal covers both components through the base.
"""
import math

import torch
from torch import nn
from torch.nn.utils import parametrize

from .functional import cayley, matrix_exp, orthonormalize, project, single_precision, skew

TRIVS = {"expm": matrix_exp, "cayley": cayley}


def _triv(triv):
    if callable(triv):
        return triv
    if triv not in TRIVS:
        raise ValueError(f"triv must be one of {sorted(TRIVS)} or a callable, got {triv!r}")
    return TRIVS[triv]


class Stiefel(nn.Module):
    """Matrices with orthonormal columns (rows, if wide) of the given size [..., n, k]."""

    complex = False
    special = False

    def __init__(self, size, triv="expm", lower=True, dtype=None, device=None):
        super().__init__()
        size = (size, size) if isinstance(size, int) else tuple(size)
        if len(size) < 2:
            raise ValueError(f"{type(self).__name__}: expected a matrix size, got {size}")
        self.size = size
        self.transposed = size[-2] < size[-1]
        self.n, self.k = max(size[-2:]), min(size[-2:])
        self.lower = lower
        self.triv = _triv(triv)
        self.builtin_triv = isinstance(triv, str)
        self.triv_name = triv if isinstance(triv, str) else getattr(triv, "__name__", "callable")
        dtype = dtype or (torch.complex64 if self.complex else torch.get_default_dtype())
        if self.complex != dtype.is_complex:
            raise ValueError(f"{type(self).__name__}: dtype {dtype} is {'not ' if self.complex else ''}complex")
        base = torch.eye(self.n, dtype=dtype, device=device).expand(*size[:-2], self.n, self.n).clone()
        self.register_buffer("base", base)

    # -- the map -------------------------------------------------------------------------
    def _skew(self, X):
        if self.transposed:
            X = X.transpose(-2, -1)
        if self.k < self.n:
            X = torch.nn.functional.pad(X, (0, self.n - self.k))
        return skew(X, self.lower)

    def _close(self, Q):
        Q = Q[..., : self.k] if self.k < self.n else Q
        if self.refine:
            Q = orthonormalize(Q)
        return Q.transpose(-2, -1) if self.transposed else Q

    @property
    def refine(self):
        """In single precision the built-in maps' results get one Newton-Schulz step
        (orthonormalize): exp of a skew A in float32 is orthogonal only to ~1e-5 once A's
        1-norm passes ~10. A user's own map (a callable) is left as it gives its result."""
        return single_precision(self.base.dtype) and self.builtin_triv

    def forward(self, X):
        Q = self.base @ self.triv(self._skew(X))
        return self._close(Q)

    def right_inverse(self, W):
        """base <- W (completed to an n x n orthogonal matrix with W as its first columns); X = 0."""
        with torch.no_grad():
            W = W.to(self.base.dtype)
            Q = W.mT if self.transposed else W
            Id = torch.eye(self.k, dtype=Q.dtype, device=Q.device)
            if (Q.mH @ Q - Id).abs().amax() > 1e-4:
                raise ValueError(f"{type(self).__name__}.right_inverse: the matrix is not on the manifold "
                                 "(columns not orthonormal); initialize with haar_init_ or project()")
            if self.k < self.n:
                N = torch.randn(*Q.shape[:-1], self.n - self.k, dtype=Q.dtype, device=Q.device)
                N = N - Q @ (Q.mH @ N)
                Q = torch.cat([Q, torch.linalg.qr(N).Q], dim=-1)
            if self.special and self.k == self.n and (torch.linalg.det(Q).real < 0).any():
                raise ValueError("SO.right_inverse: determinant -1 (not in SO(n))")
            self.base.copy_(Q)
        return torch.zeros(self.size, dtype=self.base.dtype, device=self.base.device)

    @torch.no_grad()
    def update_base(self, X, reproject=False):
        """base <- base @ triv(skew(X)) (re-projected onto the group if asked); the caller
        zeroes X (update_base(module) below does both)."""
        B = self.base @ self.triv(self._skew(X))
        if self.refine:  # every move: float32 products drift ~1e-7 a move, systematically
            B = orthonormalize(B)
        if reproject:
            B = project(B)
        self.base.copy_(B)

    @torch.no_grad()
    def reproject_(self):
        self.base.copy_(project(self.base))

    def extra_repr(self):
        return f"size={self.size}, triv={self.triv_name}, dtype={self.base.dtype}"


class Orthogonal(Stiefel):
    """Square orthogonal matrices O(n) (both components, through the base)."""

    def __init__(self, size, triv="expm", lower=True, dtype=None, device=None):
        super().__init__(size, triv, lower, dtype, device)
        if self.n != self.k:
            raise ValueError(f"{type(self).__name__} needs square matrices, got {self.size}: use Stiefel")


class SO(Orthogonal):
    """Special orthogonal matrices SO(n): det = +1."""

    special = True


class Unitary(Orthogonal):
    """Unitary matrices U(n) (complex; skew-Hermitian Lie algebra)."""

    complex = True


class UnitaryStiefel(Stiefel):
    """Complex matrices with orthonormal columns."""

    complex = True


# ---- initializers -------------------------------------------------------------------------
def _block_skew(n, values, like):
    """Skew matrix with 2x2 blocks [[0, v], [-v, 0]] on the diagonal (batched over values[..., :])."""
    A = like.new_zeros(*values.shape[:-1], n, n)
    idx = torch.arange(values.size(-1), device=like.device) * 2
    A[..., idx, idx + 1] = values.to(A.dtype)
    return A - A.mT


def henaff_init_(A):
    """Fills the square A with Henaff et al.'s (2016) skew-symmetric initialization:
    2x2 blocks of angles uniform in [-pi, pi]."""
    n = A.size(-1)
    with torch.no_grad():
        v = torch.empty(*A.shape[:-2], n // 2, device=A.device, dtype=A.real.dtype).uniform_(-math.pi, math.pi)
        A.copy_(_block_skew(n, v, A))
    return A


def cayley_init_(A):
    """Fills the square A with Helfrich et al.'s (2018) Cayley initialization:
    2x2 blocks of -sqrt((1 - cos t) / (1 + cos t)), t uniform in [0, pi/2]."""
    n = A.size(-1)
    with torch.no_grad():
        t = torch.empty(*A.shape[:-2], n // 2, device=A.device, dtype=A.real.dtype).uniform_(0.0, math.pi / 2)
        A.copy_(_block_skew(n, -torch.sqrt((1.0 - torch.cos(t)) / (1.0 + torch.cos(t))), A))
    return A


def haar_init_(W, special=False):
    """Fills W [..., n, k] with a matrix with orthonormal columns (rows, if wide) drawn from
    the Haar (uniform) measure: QR of a Gaussian, signs of R's diagonal moved into Q; with
    special (square), det +1."""
    with torch.no_grad():
        transposed = W.size(-2) < W.size(-1)
        G = torch.randn(W.shape, dtype=W.dtype, device=W.device)
        if transposed:
            G = G.mT
        Q, R = torch.linalg.qr(G)
        d = R.diagonal(dim1=-2, dim2=-1)
        Q = Q * (d / d.abs()).unsqueeze(-2)
        if special and Q.size(-1) == Q.size(-2):
            neg = (torch.linalg.det(Q).real < 0).to(Q.dtype)
            Q = Q.clone()
            Q[..., 0] *= (1 - 2 * neg).unsqueeze(-1)
        W.copy_(Q.mT if transposed else Q)
    return W


def torus_init_(W, init_=None, triv=matrix_exp):
    """Fills the square W with triv(A), A block-diagonal skew with angles from init_
    (default uniform [-pi, pi]): the torus initialization of geotorch."""
    n = W.size(-1)
    with torch.no_grad():
        v = torch.empty(*W.shape[:-2], n // 2, device=W.device, dtype=W.real.dtype)
        if init_ is None:
            v.uniform_(-math.pi, math.pi)
        else:
            init_(v)
        W.copy_(triv(_block_skew(n, v, W)))
    return W


# ---- module-level helpers -------------------------------------------------------------------
def _register(module, name, P, init):
    W = getattr(module, name)
    with torch.no_grad():
        if init in ("henaff", "cayley"):  # skew initializers: base = I, A = the initializer's
            if P.n != P.k:
                raise ValueError(f"init={init!r} needs a square weight")
            W.data = torch.eye(P.n, dtype=P.base.dtype, device=W.device).expand(W.shape).clone()
            parametrize.register_parametrization(module, name, P)
            A = henaff_init_(torch.zeros_like(P.base)) if init == "henaff" else cayley_init_(torch.zeros_like(P.base))
            getattr(module.parametrizations, name).original.copy_(A.tril(-1))
            return module
        if init == "haar" or init is None:
            Q = haar_init_(torch.empty(W.shape, dtype=P.base.dtype, device=W.device), special=P.special)
        elif init == "torus":
            Q = torus_init_(torch.empty(W.shape, dtype=P.base.dtype, device=W.device))
        elif init == "keep":
            Q = W
        else:
            raise ValueError(f"unknown init {init!r}: haar, torus, henaff, cayley or keep")
        W.data = Q.to(W.dtype) if not P.complex else Q
    parametrize.register_parametrization(module, name, P)
    return module


def orthogonal(module, name="weight", triv="expm", init="haar", lower=True):
    """Registers an orthogonal (Stiefel, if not square) parametrization of module.<name>.
    init: "haar" (uniform), "torus", "henaff", "cayley" (skew initializers: base I) or "keep"."""
    W = getattr(module, name)
    cls = Orthogonal if W.size(-1) == W.size(-2) else Stiefel
    return _register(module, name, cls(W.shape, triv, lower, W.dtype, W.device), init)


def special_orthogonal(module, name="weight", triv="expm", init="haar", lower=True):
    W = getattr(module, name)
    return _register(module, name, SO(W.shape, triv, lower, W.dtype, W.device), init)


def unitary(module, name="weight", triv="expm", init="haar", lower=True):
    W = getattr(module, name)
    cls = Unitary if W.size(-1) == W.size(-2) else UnitaryStiefel
    dtype = W.dtype if W.dtype.is_complex else (torch.complex128 if W.dtype == torch.float64 else torch.complex64)
    if not W.dtype.is_complex:
        setattr(module, name, nn.Parameter(torch.zeros(W.shape, dtype=dtype, device=W.device)))
    return _register(module, name, cls(W.shape, triv, lower, dtype, W.device), init)


def stiefel(module, name="weight", triv="expm", init="haar", lower=True):
    W = getattr(module, name)
    return _register(module, name, Stiefel(W.shape, triv, lower, W.dtype, W.device), init)


def manifold_parametrizations(module):
    """(owner module, tensor name, parametrization) of every Stiefel-family parametrization in module."""
    out = []
    for mod in module.modules():
        if not parametrize.is_parametrized(mod):
            continue
        for tname, plist in mod.parametrizations.items():
            for p in plist:
                if isinstance(p, Stiefel):
                    out.append((mod, tname, p))
    return out


@torch.no_grad()
def update_base(module, reproject=False):
    """One dynamic-trivialization step for every manifold parametrization in module:
    base <- base @ triv(A), original <- 0 (the weights do not change)."""
    for mod, tname, p in manifold_parametrizations(module):
        plist = mod.parametrizations[tname]
        if len(plist) != 1:
            raise NotImplementedError("update_base: a manifold parametrization chained with others")
        X = plist.original
        p.update_base(X, reproject=reproject)
        X.zero_()
