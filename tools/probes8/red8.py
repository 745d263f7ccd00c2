"""Reductions and scans with keepdim / dim=None / dim tuples / negative dims / 0- and 1-size
dims; statistics (quantile, std_mean, histc, bincount, bucketize); matmul family with beta=0
and nan inputs; einsum spellings."""
import torch

from probe2 import scenario
from probes7._util import each


def _x(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.71).sin() * 3).round(decimals=1).to(dt)


@scenario(rtol=1e-5, atol=1e-5)
def reductions_dims_keepdim(C, R):
    fns = []
    for op in ("sum", "mean", "amax", "amin", "prod", "std", "var", "logsumexp", "nansum", "norm", "count_nonzero", "all", "any"):
        for dim in (None, 0, -1, (0, 2), (-1, 0), ()):
            for kd in (False, True):
                if op in ("logsumexp",) and dim is None:
                    continue
                if op in ("count_nonzero",):
                    fns.append(lambda x, op=op, dim=dim: getattr(torch, op)(x, dim=dim) if dim is not None else torch.count_nonzero(x))
                    break
                if dim is None:
                    fns.append(lambda x, op=op, kd=kd: getattr(x, op)())
                    break
                fns.append(lambda x, op=op, dim=dim, kd=kd: getattr(x, op)(dim, keepdim=kd))
    xs = [_x((2, 3, 4)), _x((2, 3, 4)).transpose(0, 2), _x((1, 3, 1)), _x((2, 0, 3)), _x((3, 1, 2)).expand(3, 4, 2)]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def reductions_int_bool_inputs(C, R):
    fns = [lambda x: x.sum((0, 1)), lambda x: x.sum(-1, keepdim=True), lambda x: x.prod(), lambda x: x.amax((0, -1)),
           lambda x: x.cumsum(0), lambda x: x.cumprod(-1), lambda x: x.all(-1), lambda x: x.any((0, 1)),
           lambda x: x.count_nonzero((0, 1)), lambda x: x.max(0, keepdim=True), lambda x: x.argmax(-1, keepdim=True),
           lambda x: x.float().mean((1,)), lambda x: x.sum(dtype=torch.float32), lambda x: x.cumsum(1, dtype=torch.int16),
           lambda x: x.mean(), lambda x: x.nansum(), lambda x: x.logsumexp(0), lambda x: x.aminmax(dim=1),
           lambda x: x.median(), lambda x: x.mode(1), lambda x: x.std(), lambda x: torch.unique(x, return_counts=True)]
    b = torch.tensor([[True, False, True], [False, False, True]])
    xs = [b, b.T, b.to(torch.uint8), b.to(torch.int8) - 1, (b.long() * 7 - 3).T, torch.zeros(2, 0, dtype=torch.int64)]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def statistics(C, R):
    fns = [lambda x: torch.quantile(x, 0.3), lambda x: torch.quantile(x, torch.tensor([0.0, 0.5, 1.0]), dim=1, keepdim=True),
           lambda x: torch.quantile(x, 0.5, dim=0, interpolation="lower"), lambda x: torch.quantile(x, 0.25, interpolation="nearest"),
           lambda x: torch.quantile(x, 0.7, dim=1, interpolation="midpoint"), lambda x: torch.nanquantile(x, 0.5, dim=1),
           lambda x: torch.quantile(x, 1.5), lambda x: torch.std_mean(x, 1), lambda x: torch.var_mean(x, (0, 1), correction=0),
           lambda x: torch.std(x, 0, correction=2), lambda x: torch.histc(x, 4), lambda x: torch.histc(x, 3, min=-1, max=1),
           lambda x: torch.bucketize(x, torch.tensor([-1.0, 0.0, 1.0])), lambda x: torch.bucketize(x, torch.tensor([-1.0, 0.0, 1.0]), right=True),
           lambda x: torch.searchsorted(torch.tensor([-2.0, 0.0, 0.0, 2.0]), x), lambda x: torch.searchsorted(torch.tensor([-2.0, 0.0, 0.0, 2.0]), x, side="right"),
           lambda x: torch.bincount((x.abs() * 2).long().flatten()), lambda x: torch.bincount((x.abs() * 2).long().flatten(), minlength=10),
           lambda x: torch.bincount(x.abs().long().flatten(), weights=x.flatten()), lambda x: torch.cov(x), lambda x: torch.corrcoef(x),
           lambda x: torch.diff(x), lambda x: torch.diff(x, n=2, dim=0), lambda x: torch.diff(x, prepend=x[:, :1], dim=1),
           lambda x: torch.trapezoid(x), lambda x: torch.cumulative_trapezoid(x, dim=0), lambda x: torch.renorm(x, 2, 0, 1.0),
           lambda x: x.nanmedian(1), lambda x: torch.histogram(x, 3)[0] if False else x.msort()]
    nanx = _x((3, 5))
    nanx[1, 2] = float("nan")
    xs = [_x((3, 5)), _x((5, 3)).T, _x((3, 5), torch.float64), nanx, _x((1, 5))]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def matmul_family_edges(C, R):
    nan = torch.full((3, 4), float("nan"))
    fns = [lambda a, b: torch.addmm(nan, a, b, beta=0), lambda a, b: torch.addmm(nan[:1], a, b, beta=0.0, alpha=2),
           lambda a, b: torch.addmv(nan[0, :3], a, b[:, 0], beta=0), lambda a, b: torch.baddbmm(nan.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), beta=0),
           lambda a, b: torch.addbmm(nan, a.unsqueeze(0), b.unsqueeze(0), beta=0), lambda a, b: torch.addr(nan[:, :3].T.contiguous(), a[:, 0], b[0, :3], beta=0),
           lambda a, b: torch.addmm(torch.ones(4), a, b, beta=-1, alpha=0), lambda a, b: a @ b, lambda a, b: a[0] @ b,
           lambda a, b: a @ b[:, 0], lambda a, b: a[0] @ b[:, 0], lambda a, b: torch.mm(a, b[:, :0]),
           lambda a, b: torch.mv(a, b[:, 1]), lambda a, b: torch.dot(a[0], b[:, 0]), lambda a, b: torch.vdot(a[0], b[:, 0]),
           lambda a, b: torch.inner(a, b.T), lambda a, b: torch.outer(a[0], b[0]), lambda a, b: torch.kron(a, b),
           lambda a, b: torch.tensordot(a, b, 1), lambda a, b: torch.tensordot(a, b, ([1], [0])), lambda a, b: torch.tensordot(a, b.T, ([0, 1], [1, 0])) if a.shape == b.T.shape else torch.tensordot(a, b, 0).shape,
           lambda a, b: torch.cdist(a, b.T), lambda a, b: torch.cdist(a, b.T, p=1), lambda a, b: torch.cdist(a, b.T, p=0),
           lambda a, b: torch.cdist(a, b.T, p=float("inf")), lambda a, b: torch.linalg.multi_dot([a, b, b.T]),
           lambda a, b: torch.chain_matmul(a, b) if False else torch.block_diag(a, b), lambda a, b: torch.cartesian_prod(a[0], b[0]),
           lambda a, b: torch.combinations(a[0], 2), lambda a, b: torch.combinations(a[0], 2, with_replacement=True)]
    a = _x((3, 3))
    b = _x((3, 4)).flip(0)
    xs = [(a, b), (a.T, b), (a.double(), b.double()), (a.long(), b.long()), (a.int(), b.int()), (a[:, :0].reshape(3, 0) if False else a.bfloat16(), b.bfloat16())]
    each(C, R, fns, xs, star=True)


@scenario(rtol=1e-5, atol=1e-5)
def einsum_spellings(C, R):
    fns = [lambda a, b: torch.einsum("ij,jk->ik", a, b), lambda a, b: torch.einsum("ij,jk", a, b), lambda a, b: torch.einsum("ii->i", a),
           lambda a, b: torch.einsum("ii", a), lambda a, b: torch.einsum("ij->", a), lambda a, b: torch.einsum("ij->ji", b),
           lambda a, b: torch.einsum("ij,ij->i", a, a.T), lambda a, b: torch.einsum("i,j->ij", a[0], b[0]),
           lambda a, b: torch.einsum("...j,jk->...k", a, b), lambda a, b: torch.einsum("ij,kj->ikj", a, b.T[:, :3]),
           lambda a, b: torch.einsum("bij,bjk->bik", a.expand(2, 3, 3), b.expand(2, 3, 4)),
           lambda a, b: torch.einsum(a, [0, 1], b, [1, 2], [0, 2]), lambda a, b: torch.einsum("i j , j k -> i k", a, b),
           lambda a, b: torch.einsum("ij,jk,kl->il", a, b, b.T), lambda a, b: torch.einsum("ab,ab,ab->", a, a, a),
           lambda a, b: torch.einsum("ij,jk->ik", a, b[:, :1]), lambda a, b: torch.einsum("ij,jk->ik", a[:, :1], b[:1]),
           lambda a, b: torch.einsum("ij->j", a[:0]), lambda a, b: torch.einsum("ij,jk->ik", a, b[:2]),
           lambda a, b: torch.einsum("iij->", a.expand(3, 3, 3) if False else a.unsqueeze(-1).expand(3, 3, 2)),
           lambda a, b: torch.einsum("Ab,bC->AC", a, b), lambda a, b: torch.einsum("ij,jk->ik", a.int(), b.int())]
    a = _x((3, 3))
    b = _x((3, 4))
    xs = [(a, b), (a.T, b.flip(1)), (a.double(), b.double()), (a.bfloat16(), b.bfloat16())]
    each(C, R, fns, xs, star=True)


@scenario(rtol=1e-6, atol=1e-6)   # logcumsumexp: one ulp (rounding order); the indices stay exact
def scans_and_ties(C, R):
    fns = [lambda x: x.cumsum(-1), lambda x: x.cumsum(0, dtype=torch.float64), lambda x: x.cumprod(1), lambda x: x.cummax(-1),
           lambda x: x.cummin(0), lambda x: x.logcumsumexp(1), lambda x: x.sort(stable=True), lambda x: x.sort(0, descending=True, stable=True),
           lambda x: x.argsort(-1, stable=True), lambda x: x.argsort(descending=True, stable=True), lambda x: x.topk(3, sorted=True),
           lambda x: x.argmax(), lambda x: x.argmin(1), lambda x: x.max(0), lambda x: x.min(-1, keepdim=True),
           lambda x: torch.unique(x, sorted=True, return_inverse=True), lambda x: torch.unique_consecutive(x, return_counts=True),
           lambda x: torch.unique(x, dim=0), lambda x: x.mode(), lambda x: x.kthvalue(1, 0), lambda x: x.flip(0).cumsum(0).flip(0),
           lambda x: torch.searchsorted(x.sort(1)[0], x), lambda x: x.msort()]
    t = torch.tensor([[2.0, 1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0], [-0.0, 0.0, 3.0, -0.0]])
    xs = [t, t.T, t.flip(1), t.long(), t.to(torch.int16).T, t[:, :1], t[:0], t.half()]
    each(C, R, fns, xs)
