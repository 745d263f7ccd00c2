"""Reductions and softmax-like fusions: compiled vs eager."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from conftest import assert_same

REDS = {
    "sum_all": lambda x: x.sum(),
    "sum_last": lambda x: x.sum(-1),
    "sum_first_keep": lambda x: torch.sum(x, 0, keepdim=True),
    "mean_last_keep": lambda x: x.mean(dim=-1, keepdim=True),
    "mean_all": lambda x: torch.mean(x),
    "amax_last": lambda x: x.amax(-1),
    "amin_first": lambda x: torch.amin(x, dim=0),
    "amax_multi": lambda x: x.amax(dim=(0, -1)) if x.dim() >= 2 else x.amax(),
    "max_all": lambda x: x.max(),
    "sum_sq": lambda x: (x * x).sum(-1, keepdim=True),
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: F.log_softmax(x, dim=-1),
    "softmax_dim0": lambda x: x.softmax(0),
    "norm_then_pointwise": lambda x: (x - x.mean(-1, keepdim=True)) * torch.rsqrt(
        ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True) + 1e-5),
    "rmsnorm_gelu": lambda x: F.gelu(x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)),
}

SHAPES = [(1,), (7,), (3, 5), (1, 1), (4, 1, 9), (2, 3, 4), (33, 130), (8, 1025)]


@pytest.mark.parametrize("name", sorted(REDS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reduction(name, dtype):
    fn = REDS[name]
    cfn = torchc.compile(fn)
    for shape in SHAPES:
        x = torch.randn(shape, dtype=dtype)
        assert_same(cfn(x), fn(x), rtol=1e-4 if dtype == torch.float32 else 1e-7,
                    atol=1e-4 if dtype == torch.float32 else 1e-9)
        if len(shape) >= 2:
            xt = torch.randn(tuple(reversed(shape)), dtype=dtype).transpose(0, -1)
            assert_same(cfn(xt), fn(xt), rtol=1e-4 if dtype == torch.float32 else 1e-7,
                        atol=1e-4 if dtype == torch.float32 else 1e-9)


def test_empty_reductions():
    def f(x):
        return x.sum(-1), x.mean(0), x.sum()

    x = torch.randn(3, 0)
    assert_same(torchc.compile(f)(x), f(x))


def test_integer_and_bool_sums():
    def f(a, m):
        return a.sum(), a.sum(0), m.sum(-1), (a > 2).sum()

    a = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    m = torch.rand(3, 4) > 0.5
    assert_same(torchc.compile(f)(a, m), f(a, m))


def test_sum_with_dtype():
    def f(x):
        return x.sum(-1, dtype=torch.float64)

    x = torch.randn(4, 5)
    assert_same(torchc.compile(f)(x), f(x))


@pytest.mark.parametrize("shape,dim", [((5, 7), -1), ((5, 7), 0), ((1, 9), 1), ((4, 1), 1), ((3, 4, 6), 1)])
@pytest.mark.parametrize("keep", [False, True])
def test_max_min_with_indices_named_tuple(shape, dim, keep):
    def f(x):
        m = x.max(dim, keepdim=keep)
        n = torch.min(x, dim=dim, keepdim=keep)
        return m, n.values - 1, n.indices, m.indices * 2
    x = torch.randn(*shape)
    x.view(-1)[::3] = 0.5  # ties: the first index, as eager
    if x.numel() > 4:
        x.view(-1)[4] = float("nan")  # NaN is the max and the min
    got, want = torchc.compile(f, dynamic=False)(x), f(x)
    assert type(got[0]) is type(want[0])
    for g, w in zip([*got[0], *got[1:]], [*want[0], *want[1:]]):
        torch.testing.assert_close(g, w, equal_nan=True)


@pytest.mark.parametrize("shape,dim", [((5, 7), -1), ((6, 4), 0), ((1, 9), 1), ((2, 3, 5), 1)])
def test_sort_and_topk_named_tuples(shape, dim):
    def f(x):
        s = torch.sort(x, dim=dim, descending=True)
        a = x.sort(dim)
        k = x.topk(2, dim=dim)
        m = torch.topk(x, 1, dim, largest=False)
        return s, a.values + 1, a.indices, k, m.values * 3, m.indices
    x = torch.randn(*shape)  # no ties: indices are unique
    got, want = torchc.compile(f, dynamic=False)(x), f(x)
    assert type(got[0]) is type(want[0]) and type(got[3]) is type(want[3])
    flat = lambda r: [*r[0], *r[1:3], *r[3], *r[4:]]
    for g, w in zip(flat(got), flat(want)):
        torch.testing.assert_close(g, w)
