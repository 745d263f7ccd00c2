"""Torch ops now captured (torchc/_polyfill_ops.py: written over the graph's ops, issue 21):
torch.block_diag, cartesian_prod, linalg.cross / cross, vander / linalg.vander,
diagonal_scatter, linalg.multi_dot, cummax / cummin (values and indices: the last occurrence on
ties and NaNs, as eager). Each compiled whole (1 graph, 0 breaks from torchc.explain: a silent
fallback fails, tests/conftest.py) and compared with eager: dtype, shape, strides, values, and
the gradients of the differentiable ones (a backward graph compiled too)."""
import pytest
import torch

import torchc

from test_models_ops5 import R, _grads, _whole


# ---- block_diag ------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [[(2, 3)], [(2, 3), (1, 1), (3,)], [(), (0, 2), (2, 0), (4,)], [(1, 5), (3, 1)]])
def test_block_diag(shapes):
    ts = [R(*s, seed=i) for i, s in enumerate(shapes)]
    _whole(lambda *ts: torch.block_diag(*ts), *ts)


def test_block_diag_promotes_and_noncontiguous():
    a = R(3, 2).t()
    b = torch.tensor([[1, 2]], dtype=torch.int32)
    c = torch.tensor(True)
    _whole(lambda a, b, c: torch.block_diag(a, b, c), a, b, c)
    _whole(lambda b, c: torch.block_diag(b, c, b), b, c)


def test_block_diag_grads():
    _grads(lambda a, b, c: torch.block_diag(a, b * 2, c), R(2, 3), R(4), R(1, 1))


# ---- cartesian_prod --------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [(3,), (2, 3), (1, 4, 3), (0, 2), (5, 1)])
def test_cartesian_prod(sizes):
    ts = [R(n, seed=i) for i, n in enumerate(sizes)]
    _whole(lambda *ts: torch.cartesian_prod(*ts) * 1, *ts)
    ints = [torch.arange(n) * (i + 2) for i, n in enumerate(sizes)]
    _whole(lambda *ts: torch.cartesian_prod(*ts) + 0, *ints)


def test_cartesian_prod_noncontiguous_and_grads():
    x = R(4, 3)[:, 1]
    _whole(lambda x, y: torch.cartesian_prod(x, y), x, R(2))
    _grads(lambda x, y: torch.cartesian_prod(x, y), R(3), R(2, seed=3))


# ---- cross -----------------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb,dim", [((3,), (3,), -1), ((4, 3), (4, 3), -1), ((1, 3), (5, 3), 1),
                                       ((3, 5), (3, 1), 0), ((2, 3, 4), (2, 3, 4), 1), ((0, 3), (0, 3), -1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_linalg_cross(sa, sb, dim, dtype):
    a = R(*sa).mul(5).to(dtype)
    b = R(*sb, seed=5).mul(5).to(dtype)
    ex = dtype == torch.int64  # floats: a1 b2 - a2 b1 may round once less (a fused multiply-add)
    _whole(lambda a, b: torch.linalg.cross(a, b, dim=dim), a, b, exact=ex)
    _whole(lambda a, b: torch.cross(a, b, dim=dim), a, b, exact=ex)
    _whole(lambda a, b: a.cross(b, dim), a, b, exact=ex)


def test_cross_noncontiguous_and_grads():
    a = R(3, 6).t()
    b = R(6, 3, seed=2)
    _whole(lambda a, b: torch.linalg.cross(a, b), a, b, exact=False)
    _grads(lambda a, b: torch.linalg.cross(a, b), R(4, 3), R(1, 3, seed=2))


@pytest.mark.allow_fallback
def test_cross_without_dim_left_to_eager():
    # eager searches for a dim of size 3 and warns (deprecated): the call breaks to eager
    a = R(2, 3)
    f = lambda a: torch.cross(a, a * 2) + 1
    torchc.reset()
    with pytest.warns(UserWarning):
        ex = torchc.explain(f)(a)
    assert ex.graph_break_count >= 1
    torch.testing.assert_close(torchc.compile(f)(a), f(a), rtol=0, atol=0)


# ---- vander ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("N", [None, 2, 4])
@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool])
def test_vander(n, N, increasing, dtype):
    x = (R(n) > 0) if dtype == torch.bool else R(n).mul(3).to(dtype)
    _whole(lambda x: torch.vander(x, N, increasing) * 1, x)


@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 1, 5)])
@pytest.mark.parametrize("N", [None, 3])
def test_linalg_vander(shape, N):
    _whole(lambda x: torch.linalg.vander(x, N=N), R(*shape))
    _whole(lambda x: torch.linalg.vander(x, N=N), R(*shape).mul(3).to(torch.int16))


def test_vander_noncontiguous_and_grads():
    _whole(lambda x: torch.vander(x), R(4, 3)[:, 0])
    _grads(lambda x: torch.linalg.vander(x, N=4), R(3))
    _grads(lambda x: torch.linalg.vander(x), R(2, 3))


# ---- diagonal_scatter ------------------------------------------------------------------------

@pytest.mark.parametrize("shape,off,d1,d2", [((4, 4), 0, 0, 1), ((3, 5), 2, 0, 1), ((5, 3), -2, 0, 1),
                                             ((3, 5), -1, 1, 0), ((2, 3, 4), 1, 2, 0), ((2, 3, 4), 0, -1, -2),
                                             ((1, 1), 0, 0, 1), ((3, 2), 5, 0, 1), ((0, 3), 0, 0, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_diagonal_scatter(shape, off, d1, d2, dtype):
    x = R(*shape).mul(5).to(dtype)
    dshape = torch.diagonal(x, off, d1, d2).shape
    src = R(*dshape, seed=9).mul(5).to(dtype) - 100
    _whole(lambda x, s: torch.diagonal_scatter(x, s, off, d1, d2), x, src)
    _whole(lambda x, s: x.diagonal_scatter(s, off, d1, d2), x, src)


def test_diagonal_scatter_grads():
    _grads(lambda x, s: torch.diagonal_scatter(x, s, 1), R(3, 4), R(3, seed=4))
    _grads(lambda x, s: torch.diagonal_scatter(x, s, -1, 1, 2), R(2, 3, 3), R(2, 2, seed=4))


# ---- multi_dot -------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [[(3, 4), (4, 5)], [(4,), (4, 5)], [(3, 4), (4,)], [(4,), (4,)],
                                    [(10, 2), (2, 9), (9, 3)], [(2, 10), (10, 9), (9, 30)],
                                    [(5,), (5, 30), (30, 2), (2, 40), (40,)],
                                    [(7, 30), (30, 2), (2, 40), (40, 3), (3, 8)], [(0, 3), (3, 4), (4, 1)]])
def test_multi_dot(shapes):
    ts = [R(*s, dtype=torch.float64, seed=i) for i, s in enumerate(shapes)]
    _whole(lambda *ts: torch.linalg.multi_dot(ts), *ts)
    _whole(lambda *ts: torch.linalg.multi_dot(list(ts)), *[t.float() for t in ts])


def test_multi_dot_noncontiguous_and_grads():
    a = R(5, 3).t()
    _whole(lambda a, b, c: torch.linalg.multi_dot([a, b, c]), a, R(5, 2), R(2, 6))
    _grads(lambda a, b, c, d: torch.linalg.multi_dot([a, b, c, d]), R(4), R(4, 6), R(6, 2), R(2, 3))


# ---- cummax / cummin -------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [torch.cummax, torch.cummin])
def test_cummax_ties_and_nans_take_the_last(fn):
    nan = float("nan")
    x = torch.tensor([1., 3., 3., 2., 1., 1., nan, 5., nan, 0., -1., -1.])
    _whole(lambda x: fn(x, 0), x)
    _whole(lambda x: fn(x, 0), torch.tensor([2, 2, 1, 2, 1, 1, 3]))
    _whole(lambda x: fn(x, -1), torch.tensor([[nan, 1., nan], [2., 2., 2.]]))


@pytest.mark.parametrize("shape,dim", [((), 0), ((1,), 0), ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 9, 3), 1),
                                       ((0, 4), 1), ((4, 0), 1), ((2, 33), -1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32])
@pytest.mark.parametrize("fn", ["cummax", "cummin"])
def test_cummax(shape, dim, dtype, fn):
    x = R(*shape).mul(3).round().to(dtype)  # many ties
    _whole(lambda x: getattr(torch, fn)(x, dim), x)
    _whole(lambda x: getattr(x, fn)(dim), x)
    if len(shape) == 2:
        _whole(lambda x: getattr(torch, fn)(x, dim), x.t().contiguous().t())  # non-contiguous


def test_cummax_grads():
    x = R(3, 6).mul(2).round()  # ties: the gradient goes to the index eager returns
    _grads(lambda x: torch.cummax(x, 1).values * 2, x)
    _grads(lambda x: torch.cummin(x, 0)[0], x)


# ---- logcumsumexp ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim", [((), 0), ((1,), 0), ((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 9, 3), 1),
                                       ((0, 4), 1), ((2, 33), -1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_logcumsumexp(shape, dim, dtype):
    x = R(*shape, dtype=dtype).mul(20)
    _whole(lambda x: torch.logcumsumexp(x, dim), x, exact=False)
    _whole(lambda x: x.logcumsumexp(dim), x, exact=False)
    if len(shape) == 2:
        _whole(lambda x: torch.logcumsumexp(x, dim), x.t().contiguous().t(), exact=False)


def test_logcumsumexp_wide_range_and_infinities():
    inf = float("inf")
    x = torch.tensor([-1000., 0., 1000., -inf, -inf, 3., inf, 2., float("nan"), 1.])
    _whole(lambda x: torch.logcumsumexp(x, 0), x, exact=False)
    _whole(lambda x: torch.logcumsumexp(x, 0), torch.tensor([-inf, -inf, 1.]), exact=False)


def test_logcumsumexp_grads():
    _grads(lambda x: torch.logcumsumexp(x, 1), R(3, 6).mul(3))
    _grads(lambda x: torch.logcumsumexp(x, 0), torch.tensor([1., 1., 1., 2.]))


# ---- left to eager ---------------------------------------------------------------------------

@pytest.mark.allow_fallback
def test_bincount_left_to_eager_with_a_reason():
    # the output's length is max(input) + 1 (or minlength): data-dependent, not known when traced
    x = torch.tensor([0, 3, 3, 1])
    f = lambda x: torch.bincount(x * 1, minlength=2) + 1
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_break_count >= 1 and any("bincount" in r for r in ex.break_reasons), ex.break_reasons
    torch.testing.assert_close(torchc.compile(f)(x), f(x), rtol=0, atol=0)


@pytest.mark.allow_fallback
def test_diagonal_scatter_of_a_noncontiguous_input_left_to_eager():
    # eager's clone keeps the input's strides: left to eager, which gives them
    x = R(4, 3).t()
    f = lambda x, s: torch.diagonal_scatter(x, s) * 1
    want = f(x, R(3))
    torchc.reset()
    got = torchc.compile(f)(x, R(3))
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want, rtol=0, atol=0)
