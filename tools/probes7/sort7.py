"""sort/argsort stability with ties and NaN, topk/kthvalue/median/mode/unique, cumulative ops and
their dtypes, reductions with dim tuples / negative dims / keepdim / dim=()."""
import torch

from probe2 import scenario
from probes7._util import each

nan, inf = float("nan"), float("inf")


@scenario(exact=True)
def sort_stability(C, R):
    fns = [lambda x: x.sort(stable=True), lambda x: x.sort(stable=True, descending=True), lambda x: x.argsort(stable=True),
           lambda x: x.argsort(descending=True, stable=True), lambda x: torch.sort(x, 0, stable=True),
           lambda x: x.sort(dim=-1, stable=True).indices, lambda x: x.msort(), lambda x: x.sort(stable=True).values,
           lambda x: x.sort(0)[0]]
    xs = [torch.tensor([[3.0, 1.0, 3.0, nan, 1.0, -0.0, 0.0, nan], [inf, -inf, 2, 2, 2, nan, -inf, 0]]),
          torch.tensor([[2, 1, 2, 1, 2, 1, 0, 0], [5, 5, 5, 5, 5, 5, 5, 5]], dtype=torch.int8),
          torch.tensor([[True, False, True, False, False, True, True, False]]),
          torch.tensor([[3.0, 1.0, 3.0, nan, 1.0, -0.0, 0.0, nan]], dtype=torch.float16),
          torch.tensor([[3.0, 1.0, 3.0, nan, 1.0, -0.0, 0.0, nan]], dtype=torch.bfloat16),
          torch.tensor([[200, 1, 200, 0]], dtype=torch.uint8).T, torch.empty(0, 3), torch.tensor(5.0)]
    each(C, R, fns, xs)


@scenario(exact=True)
def topk_kth_median_mode(C, R):
    fns = [lambda x: x.topk(2), lambda x: x.topk(2, largest=False), lambda x: x.topk(1, 0), lambda x: x.topk(0),
           lambda x: x.topk(3, sorted=True), lambda x: x.kthvalue(2), lambda x: x.kthvalue(1, 0, keepdim=True),
           lambda x: x.median(), lambda x: x.median(1), lambda x: x.nanmedian(), lambda x: x.nanmedian(-1),
           lambda x: x.mode(1), lambda x: x.mode(0), lambda x: x.topk(9), lambda x: x.kthvalue(9),
           lambda x: torch.quantile(x.double(), 0.5, dim=1), lambda x: torch.nanquantile(x.double(), torch.tensor([0.25, 0.75], dtype=torch.float64), dim=1)]
    xs = [torch.tensor([[3.0, 1.0, 3.0, nan], [1.0, -0.0, 0.0, 1.0]]), torch.tensor([[2, 1, 2, 1], [7, 7, -7, 0]]),
          torch.tensor([[3.0, 1.0, 3.0, 2.0]], dtype=torch.bfloat16), torch.tensor([[nan, nan, 1.0, 1.0]]).T]
    each(C, R, fns, xs)


@scenario(exact=True)
def unique_ops(C, R):
    fns = [lambda x: torch.unique(x), lambda x: torch.unique(x, return_inverse=True, return_counts=True),
           lambda x: torch.unique(x, sorted=True, dim=0), lambda x: torch.unique(x, dim=-1, return_counts=True),
           lambda x: torch.unique_consecutive(x), lambda x: torch.unique_consecutive(x, return_inverse=True, return_counts=True, dim=0),
           lambda x: x.unique().numel(), lambda x: torch.bincount(x.flatten().clamp(min=0).long()),
           lambda x: torch.bincount(x.flatten().clamp(min=0).long(), minlength=10), lambda x: torch.histc(x.float(), 4, 0, 3)]
    xs = [torch.tensor([[1, 2, 2], [1, 2, 2], [0, 0, 0]]), torch.tensor([[1.0, nan, nan], [1.0, -0.0, 0.0]]),
          torch.tensor([[True, False], [True, False]]), torch.empty(0, 2, dtype=torch.int64)]
    each(C, R, fns, xs)


@scenario(exact=True)
def cumulative_dtypes(C, R):
    fns = [lambda x: x.cumsum(0), lambda x: x.cumsum(-1), lambda x: x.cumprod(1), lambda x: x.cumsum(0, dtype=torch.float64),
           lambda x: x.cumsum(1, dtype=torch.int8), lambda x: x.cumprod(0, dtype=torch.float16), lambda x: torch.cumsum(x, dim=0).dtype,
           lambda x: x.cummax(1), lambda x: x.cummin(0), lambda x: x.logcumsumexp(1) if x.is_floating_point() else x,
           lambda x: torch.cumulative_trapezoid(x.double(), dim=1), lambda x: torch.diff(x, dim=1), lambda x: torch.diff(x, 2, dim=0),
           lambda x: torch.diff(x, prepend=x[:, :1], dim=1), lambda x: x.cumsum(2)]
    xs = [torch.tensor([[1, 2, 3], [100, 100, 100]], dtype=torch.int8), torch.tensor([[200, 100, 3], [1, 2, 3]], dtype=torch.uint8),
          torch.tensor([[True, False, True], [True, True, True]]), torch.tensor([[1.5, nan, 2.0], [inf, -inf, 1.0]]),
          torch.tensor([[60000.0, 10000.0, -60000.0], [1, 2, 3]], dtype=torch.float16),
          torch.tensor([[3.0, 3.0, 1.0], [1.0, 1.0, 1.0]], dtype=torch.bfloat16),
          torch.tensor([[32767, 1, 1]], dtype=torch.int16).T, torch.empty(2, 0, dtype=torch.int32)]
    each(C, R, fns, xs)


@scenario(rtol=1e-6, atol=1e-6)
def reduce_dim_tuples(C, R):
    fns = [lambda x: x.sum(()), lambda x: x.sum([]), lambda x: x.mean(()), lambda x: x.amax(()), lambda x: x.amin([]),
           lambda x: x.sum((0, -1)), lambda x: x.sum((-1, 0), keepdim=True), lambda x: x.mean((1, 2)),
           lambda x: x.var((0, 2)), lambda x: x.std((-2,), correction=2), lambda x: x.prod(-1, keepdim=True),
           lambda x: x.amax((-3, -1)), lambda x: x.sum((0, 0)), lambda x: x.sum(3), lambda x: x.norm(dim=(0, 1)),
           lambda x: torch.linalg.vector_norm(x, 3, dim=(-1, 0)), lambda x: x.logsumexp((0, 2)), lambda x: x.count_nonzero((0, 1)),
           lambda x: x.any((0, 2)) if hasattr(x, "any") else x, lambda x: x.all((-1,)), lambda x: torch.var_mean(x, (0, 1), keepdim=True),
           lambda x: torch.std_mean(x, -1, correction=0), lambda x: x.nansum((1,)), lambda x: x.nanmean(-1, keepdim=True),
           lambda x: x.sum(dim=None), lambda x: torch.aminmax(x, dim=-1, keepdim=True), lambda x: x.argmax(-1, keepdim=True),
           lambda x: x.max(-2, keepdim=True), lambda x: x.amax(()).shape, lambda x: x.var(()), lambda x: x.logsumexp(())]
    xs = [torch.arange(24.0).reshape(2, 3, 4).sin(), torch.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).contiguous().permute(1, 2, 0),
          torch.ones(1, 1, 1), torch.empty(2, 0, 3)]
    each(C, R, fns, xs)


@scenario(exact=True)
def reduce_zero_dim_input(C, R):
    fns = [lambda x: x.sum(0), lambda x: x.sum(-1), lambda x: x.mean(0, keepdim=True), lambda x: x.amax(0), lambda x: x.argmax(0),
           lambda x: x.max(0), lambda x: x.cumsum(0), lambda x: x.softmax(0), lambda x: x.sort(0), lambda x: x.topk(1),
           lambda x: x.sum(1), lambda x: x.std(), lambda x: x.var(0), lambda x: x.logsumexp(0), lambda x: x.flip(0),
           lambda x: x.unsqueeze(-1), lambda x: x.squeeze(0), lambda x: x.cumprod(-1), lambda x: x.median(0), lambda x: x.norm(dim=0)]
    each(C, R, fns, [torch.tensor(2.5), torch.tensor(3), torch.tensor(True)])
