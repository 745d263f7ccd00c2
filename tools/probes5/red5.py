"""Reductions over empty dims, nan/inf propagation, half/bfloat16 accumulation."""
import torch

from probe2 import scenario


def _call_each(C, R, fns, xs):
    for fn in fns:
        g = C(fn)
        for x in xs:
            R.call(g, x)


@scenario(exact=True)
def empty_reductions(C, R):
    fns = [
        lambda x: x.sum(0), lambda x: x.prod(0), lambda x: x.mean(0), lambda x: x.amax(0), lambda x: x.amin(1),
        lambda x: x.argmax(0), lambda x: x.argmin(1), lambda x: x.max(0), lambda x: x.min(1), lambda x: x.var(0),
        lambda x: x.std(0), lambda x: x.logsumexp(0), lambda x: x.sum(), lambda x: x.mean(), lambda x: x.max(),
        lambda x: x.argmax(), lambda x: x.norm(dim=0), lambda x: x.all(0), lambda x: x.any(0),
        lambda x: x.var(0, correction=0), lambda x: x.std(1, unbiased=True), lambda x: x.softmax(0),
        lambda x: x.cumsum(0), lambda x: x.cumprod(1), lambda x: x.count_nonzero(0), lambda x: x.nansum(0),
        lambda x: x.median(0), lambda x: x.amax((0, 1)), lambda x: torch.aminmax(x, dim=0),
        lambda x: x.var_mean(0), lambda x: x.log_softmax(1),
    ]
    xs = [torch.empty(0, 3), torch.empty(3, 0), torch.empty(0, 0)]
    _call_each(C, R, fns, xs)


@scenario(exact=True)
def empty_reductions_int(C, R):
    fns = [lambda x: x.sum(0), lambda x: x.prod(0), lambda x: x.amax(0), lambda x: x.max(0), lambda x: x.sum(),
           lambda x: x.all(), lambda x: x.any(1)]
    _call_each(C, R, fns, [torch.empty(0, 3, dtype=torch.int64), torch.empty(3, 0, dtype=torch.bool),
                           torch.empty(0, 2, dtype=torch.uint8)])


@scenario(exact=True)
def nan_propagation(C, R):
    nan, inf = float("nan"), float("inf")
    fns = [lambda x: x.max(), lambda x: x.min(0), lambda x: x.amax(1), lambda x: x.argmax(1), lambda x: x.argmin(0),
           lambda x: x.clamp(0, 1), lambda x: x.clamp(min=0.5), lambda x: x.clamp(max=-0.5), lambda x: x.softmax(1),
           lambda x: x.logsumexp(1), lambda x: torch.maximum(x, x.flip(0)), lambda x: torch.fmax(x, x.flip(1)),
           lambda x: x.relu(), lambda x: torch.nn.functional.relu6(x), lambda x: torch.nn.functional.hardtanh(x),
           lambda x: x.sort(1), lambda x: x.topk(2, 1), lambda x: x.cummax(1), lambda x: x.nanmean(1),
           lambda x: x.log_softmax(0), lambda x: x.max(1),
           lambda x: x.sigmoid(), lambda x: torch.nan_to_num(x), lambda x: x.clamp(nan, 1.0),
           lambda x: x.clamp(0.0, nan), lambda x: x.sign(), lambda x: x.mean(1), lambda x: torch.minimum(x, torch.tensor(0.0))]
    xs = [torch.tensor([[1.0, nan, 3.0], [inf, -inf, 0.0]]),
          torch.tensor([[inf, inf, -inf], [-inf, -inf, -inf]]),
          torch.tensor([[nan, nan, nan], [0.0, -0.0, 0.0]])]
    _call_each(C, R, fns, xs)


@scenario(exact=True)
def nan_propagation_half(C, R):
    nan, inf = float("nan"), float("inf")
    fns = [lambda x: x.max(), lambda x: x.amax(1), lambda x: x.argmax(1), lambda x: x.clamp(0, 1), lambda x: x.softmax(1),
           lambda x: x.logsumexp(1), lambda x: torch.maximum(x, x.flip(0)), lambda x: x.sum(1), lambda x: x.mean(1)]
    for dt in (torch.float16, torch.bfloat16):
        xs = [torch.tensor([[1.0, nan, 3.0], [inf, -inf, 0.0]], dtype=dt), torch.tensor([[60000., 60000., 1.], [-inf, -inf, -inf]], dtype=dt)]
        _call_each(C, R, fns, xs)


@scenario(rtol=1e-3, atol=1e-3)
def half_accumulation(C, R):
    torch.manual_seed(0)
    for dt in (torch.float16, torch.bfloat16):
        x = torch.rand(4, 8192).to(dt)
        def f(x):
            return x.sum(1), x.mean(1), x.var(1), x.cumsum(1)[:, -1], x.norm(dim=1), (x * x).sum(1), x.softmax(1).sum(1)
        R(C(f)(x))
        y = torch.full((70000,), 1.0, dtype=dt)
        def h(y):
            return y.sum(), y.mean(), y.cumsum(0)[-5:]
        R(C(h)(y))


@scenario(exact=True)
def softmax_all_neg_inf(C, R):
    def f(x):
        return x.softmax(-1), x.log_softmax(-1), x.logsumexp(-1), torch.nn.functional.softmin(x, -1)
    g = C(f)
    R(g(torch.full((2, 3), float("-inf"))))
    R(g(torch.tensor([[float("inf"), 1.0, 2.0], [float("inf"), float("inf"), 0.0]])))
    m = torch.tensor([[True, False, True], [False, False, False]])
    def h(x, m):
        return x.masked_fill(~m, float("-inf")).softmax(-1)
    R(C(h)(torch.randn(2, 3), m))


@scenario(exact=True)
def reduce_dims_keepdim(C, R):
    fns = [lambda x: x.sum((0, 2), keepdim=True), lambda x: x.amax(-1, keepdim=True), lambda x: x.sum(()),
           lambda x: x.mean([]), lambda x: x.sum(dim=(-1, -1)), lambda x: x.max(5), lambda x: x.sum(3),
           lambda x: x.argmax(1, keepdim=True), lambda x: x.std(()), lambda x: x.prod(-4)]
    xs = [torch.arange(24.).reshape(2, 3, 4), torch.tensor(3.0)]
    _call_each(C, R, fns, xs)


@scenario(exact=True)
def reduce_dtype_args(C, R):
    fns = [lambda x: x.sum(dtype=torch.int8), lambda x: x.sum(0, dtype=torch.float16), lambda x: x.mean(dtype=torch.float64),
           lambda x: x.prod(dtype=torch.int32), lambda x: x.cumsum(0, dtype=torch.int16), lambda x: x.mean(),
           lambda x: x.sum(), lambda x: x.softmax(0, dtype=torch.float64)]
    xs = [torch.tensor([[100, 100], [100, 27]], dtype=torch.int64), torch.tensor([[1.5, 2.5], [3.5, 4.5]]),
          torch.tensor([[True, True], [False, True]])]
    _call_each(C, R, fns, xs)


@scenario(exact=True)
def argmax_ties(C, R):
    fns = [lambda x: x.argmax(), lambda x: x.argmax(0), lambda x: x.argmin(1), lambda x: x.max(1).indices,
           lambda x: x.min(0).indices]
    xs = [torch.tensor([[1., 3., 3.], [3., 1., 3.]]), torch.zeros(2, 4), torch.tensor([[-0.0, 0.0], [0.0, -0.0]]),
          torch.tensor([[1, 5, 5], [5, 5, 1]], dtype=torch.int8), torch.tensor([[True, True], [False, True]])]
    _call_each(C, R, fns, xs)
