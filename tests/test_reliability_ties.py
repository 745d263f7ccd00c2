"""Index-returning ops on ties: compiled picks the same index as eager.

topk, sort, argsort, msort, argmax/argmin, max/min(dim) and (left to eager) kthvalue, mode,
median, nanmedian, cummax/cummin and unique, on rows full of equal values, NaNs, -0.0 beside
0.0 and infinities, for float, half, int and bool dtypes, contiguous and transposed inputs.

The rules being matched (CPU eager): argmax/argmin/max(dim)/min(dim) take the first index of
the extreme value (a NaN counts as the extreme, the first NaN wins); sort(stable=True) keeps
input order among equal values; topk's order among equal values is whatever its selection
algorithm leaves (std::partial_sort when k * 64 <= n, else std::nth_element then std::sort):
no simple rule, so torchc runs ATen's topk for the indices (a stable sort's first k picked
other indices: [2, 4, 1] in eager, [1, 2, 4] compiled, before). CUDA eager: argmax & co. take
the first index too; topk's tie order comes from its radix select and is again ATen's own.
"""
import pytest
import torch

import torchc

NAN, INF = float("nan"), float("inf")


def _rows():
    r = torch.Generator().manual_seed(5)
    many = torch.randint(0, 3, (6, 150), generator=r).float()  # k * 64 <= n: partial_sort path
    return {
        "ties": torch.tensor([[1., 3., 3., 2., 3., 1., 1.], [0., 0., 0., 0., 0., 0., 0.],
                              [2., 1., 2., 1., 2., 1., 2.]]),
        "nan": torch.tensor([[NAN, 1., NAN, 1., 5., 5.], [1., 1., 1., NAN, 1., 1.]]),
        "zeros": torch.tensor([[0., -0., 0., -0., -1., 1.], [-0., 0., -0., 0., 1., -1.]]),
        "inf": torch.tensor([[INF, -INF, INF, 1., -INF, INF], [1., 1., -INF, -INF, INF, INF]]),
        "many": many,
        "odd": torch.randint(0, 2, (5, 33), generator=r).float(),
    }


def _inputs():
    for name, x in _rows().items():
        yield name, x
        yield name + "-t", x.t().contiguous().t()  # same values, column-major
        if name in ("ties", "many", "odd"):
            yield name + "-i64", x.long()
            yield name + "-i32", x.int()
            yield name + "-f16", x.half()
            yield name + "-f64", x.double()
        if name == "odd":
            yield name + "-bool", x.bool()


def _k(x):
    return min(3, x.shape[-1])


OPS = {  # name: (fn, compiled into the graph)
    "topk": (lambda a: torch.topk(a * 1, _k(a), dim=-1), True),
    "topk-smallest": (lambda a: torch.topk(a * 1, _k(a), dim=-1, largest=False), True),
    "topk-unsorted": (lambda a: torch.topk(a * 1, _k(a), dim=-1, sorted=False), True),
    "topk-k1": (lambda a: (a * 1).topk(1), True),
    "topk-kall": (lambda a: (a * 1).topk(a.shape[-1], largest=False), True),
    "topk-dim0": (lambda a: torch.topk(a * 1, 2, dim=0), True),
    "sort": (lambda a: torch.sort(a * 1, dim=-1), True),
    "sort-desc": (lambda a: torch.sort(a * 1, dim=-1, descending=True), True),
    "sort-stable": (lambda a: torch.sort(a * 1, dim=-1, stable=True), True),
    "sort-stable-desc": (lambda a: (a * 1).sort(stable=True, descending=True), True),
    "sort-dim0": (lambda a: torch.sort(a * 1, dim=0, stable=True), True),
    "argsort": (lambda a: torch.argsort(a * 1, dim=-1), True),
    "argsort-stable-desc": (lambda a: torch.argsort(a * 1, dim=-1, descending=True, stable=True), True),
    "msort": (lambda a: torch.msort(a * 1), True),
    "argmax": (lambda a: torch.argmax(a * 1, dim=-1), True),
    "argmax-all": (lambda a: torch.argmax(a * 1), True),
    "argmax-dim0-keep": (lambda a: (a * 1).argmax(0, keepdim=True), True),
    "argmin": (lambda a: torch.argmin(a * 1, dim=-1), True),
    "argmin-all": (lambda a: torch.argmin(a * 1), True),
    "max-dim": (lambda a: torch.max(a * 1, dim=-1), True),
    "max-dim0-keep": (lambda a: (a * 1).max(0, keepdim=True), True),
    "min-dim": (lambda a: torch.min(a * 1, dim=-1), True),
    "min-dim0": (lambda a: (a * 1).min(dim=0), True),
    "kthvalue": (lambda a: torch.kthvalue(a * 1, 2, dim=-1), False),
    "mode": (lambda a: torch.mode(a * 1, dim=-1), False),
    "median": (lambda a: torch.median(a * 1, dim=-1), False),
    "nanmedian": (lambda a: torch.nanmedian(a * 1, dim=-1), False),
    "cummax": (lambda a: torch.cummax(a * 1, dim=-1), False),
    "cummin": (lambda a: torch.cummin(a * 1, dim=-1), False),
    "unique": (lambda a: torch.unique(a * 1, return_inverse=True, return_counts=True), False),
    "unique-dim": (lambda a: torch.unique(a * 1, dim=1, return_inverse=True), False),
}

# eager refuses these dtypes (the compiled call must raise the same)
_SKIP = {("mode", "bool"), ("median", "bool"), ("nanmedian", "bool"), ("kthvalue", "bool"),
         ("nanmedian", "i64"), ("nanmedian", "i32")}


def _flat(r):
    return [r] if isinstance(r, torch.Tensor) else list(r)


def _same(e, c):
    fe, fc = _flat(e), _flat(c)
    assert type(e) is type(c) and len(fe) == len(fc)
    for a, b in zip(fe, fc):
        assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
        assert torch.equal(a.isnan(), b.isnan()) if a.is_floating_point() else True
        if a.is_floating_point():  # -0.0 and 0.0 too: the same element was picked
            assert torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)), (a, b)
            assert torch.equal(torch.signbit(a), torch.signbit(b)), (a, b)
        else:
            assert torch.equal(a, b), (a, b)


@pytest.mark.parametrize("op", [o if g else pytest.param(o, marks=pytest.mark.allow_fallback)
                                for o, (_, g) in OPS.items()])
def test_ties_like_eager(op):
    fn, in_graph = OPS[op]
    tried = 0
    for name, x in _inputs():
        if any(op.startswith(o) and name.endswith(d) for o, d in _SKIP):
            continue
        if x.dtype == torch.bool and not op.startswith(("sort", "argsort", "msort", "unique", "cum")):
            continue
        try:
            want = fn(x)
        except RuntimeError as e:  # a dtype eager refuses: compiled raises too
            with pytest.raises(type(e)):
                torchc.compile(fn)(x)
            continue
        torchc.reset()
        got = torchc.compile(fn)(x)
        try:
            _same(want, got)
        except AssertionError as e:
            raise AssertionError(f"{op} on {name}:\n{x}\neager {want}\ntorchc {got}") from e
        if in_graph:  # the op ran in a graph, not in eager after a fallback
            ex = torchc.explain(fn)(x)
            assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count >= 1, (op, name, ex)
        tried += 1
    assert tried >= 8


def test_topk_values_and_grad_like_eager():
    """topk's values are gathered at ATen's indices: the gradient goes to eager's elements"""
    x = torch.tensor([[1., 3., 3., 2., 3., 1., 1.]], requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    fn = lambda a: torch.topk(a * 2, 2, dim=-1).values.sum()  # noqa: E731
    fn(x).backward()
    torchc.compile(fn)(x2).backward()
    assert torch.equal(x.grad, x2.grad), (x.grad, x2.grad)


def test_topk_k_out_of_range_raises_like_eager():
    x = torch.randn(2, 4)
    for k in (5, -1):
        with pytest.raises(RuntimeError):
            torch.topk(x, k)
        with pytest.raises(RuntimeError):
            torchc.compile(lambda a: torch.topk(a * 1, k))(x)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("op", [o for o, (_, g) in OPS.items() if g])
def test_ties_like_eager_cuda(op):
    fn, _ = OPS[op]
    for name, x in _inputs():
        if x.dtype == torch.bool:
            continue
        xc = x.cuda()
        try:
            want = fn(xc)
        except RuntimeError:
            continue
        got = torchc.compile(fn)(xc)
        try:
            _same(want, got)
        except AssertionError as e:
            raise AssertionError(f"{op} on {name} (cuda):\neager {want}\ntorchc {got}") from e
