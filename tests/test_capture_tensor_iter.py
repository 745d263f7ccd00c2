"""Iterating over a tensor (issue 21): `for row in x`, list(x), tuple(x), unpacking, zip,
enumerate, iter/next and comprehensions are unrolled over dim 0 as eager's Tensor.__iter__
(unbind(0)) does: the rows are views of x, a size-0 dim iterates nothing, a 0-d tensor raises
eager's TypeError. Differential against eager; graph and break counts pinned both ways (a
silent eager fallback fails)."""
import pytest
import torch

import torchc
from conftest import captured_whole


def _ex(fn, *args, **kw):
    torchc.reset()
    return torchc.explain(fn, **kw)(*args)


def _check(fn, args, graphs=1, breaks=0):
    want = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    ex = _ex(fn, *[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    if (graphs, breaks) == (1, 0):
        assert captured_whole(ex), ex
    else:
        assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    cf = torchc.compile(fn)
    for _ in range(2):  # the cached entry
        torch.testing.assert_close(cf(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args]), want)
    return ex


def f_for(x):
    s = x.new_zeros(x.shape[1:])
    for r in x:
        s = s + r.sin()
    return s


def f_list(x):
    return torch.stack(list(x)) * 2


def f_tuple(x):
    return torch.cat(tuple(x)) + 1


def f_unpack(x):
    a, b = x
    return a * b


def f_star(x):
    a, *rest = x
    return a + len(rest)


def f_zip(x, y):
    return [a + b for a, b in zip(x, y)]


def f_enum(x):
    o = x.new_zeros(x.shape[1:])
    for i, r in enumerate(x):
        o = o + i * r
    return o


def f_comp(x):
    return [r.cos() for r in x]


def f_nested(x):
    return [[c.sum() for c in r] for r in x]


def f_iter_next(x):
    it = iter(x)
    a = next(it)
    b = next(it)
    return a - b, next(it, None) is None


def f_sum_gen(x):
    return sum(r * i for i, r in enumerate(x))


def f_len_rows(x):
    return len(list(x)) + x[0]


@pytest.mark.parametrize("fn,shape", [
    (f_for, (3, 4)), (f_for, (1, 4)), (f_for, (5,)), (f_list, (3, 4)), (f_tuple, (3, 4)),
    (f_unpack, (2, 4)), (f_star, (4, 2)), (f_enum, (3, 4)), (f_comp, (3, 4)), (f_nested, (2, 3, 4)),
    (f_iter_next, (3, 2)), (f_sum_gen, (4, 3)), (f_len_rows, (3, 2)), (f_comp, (3, 1, 2)),
])
def test_rows(fn, shape):
    torch.manual_seed(0)
    _check(fn, (torch.randn(shape),))


def test_zip():
    torch.manual_seed(0)
    _check(f_zip, (torch.randn(3, 4), torch.randn(3, 4)))
    _check(f_zip, (torch.randn(3, 4), torch.randn(2, 4)))  # zip stops at the shorter


def test_size_zero_iterates_nothing():
    _check(f_for, (torch.randn(0, 4),))
    _check(f_comp, (torch.randn(0, 3),))


def test_non_contiguous_and_dtypes():
    torch.manual_seed(0)
    _check(f_list, (torch.randn(4, 3).t(),))
    _check(f_comp, (torch.randn(5, 6)[::2, 1:],))
    _check(f_list, (torch.arange(12).reshape(3, 4),))


def f_zero_d_caught(x):
    try:
        for r in x.sum():
            x = x + r
    except TypeError:
        return x + 1
    return x


def f_zero_d(x):
    return list(x.sum(-1))


@pytest.mark.allow_fallback  # the uncaught case: eager raises
def test_zero_d_raises_eager_type_error():
    x = torch.randn(3)
    _check(f_zero_d_caught, (x,))
    with pytest.raises(TypeError) as want:
        f_zero_d(x)
    torchc.reset()
    with pytest.raises(TypeError) as got:
        torchc.compile(f_zero_d)(x)
    assert torchc.explain(f_zero_d)(torch.randn(2, 3)).graph_count == 1  # a 2-d x: compiled
    assert str(got.value) == str(want.value)


@pytest.mark.allow_fallback  # eager raises: the frame runs eagerly
def test_bad_unpack_raises_value_error():
    x = torch.randn(3, 2)
    with pytest.raises(ValueError) as want:
        f_unpack(x)
    torchc.reset()
    cf = torchc.compile(f_unpack)
    torch.testing.assert_close(cf(x[:2]), f_unpack(x[:2]))  # two rows: compiled
    with pytest.raises(ValueError) as got:
        cf(x)
    assert str(got.value) == str(want.value)


def f_inplace_rows(x):
    for i, r in enumerate(x):
        r.add_(i)
    return x.sum()


def test_rows_are_views_in_place_updates_reach_x():
    x = torch.randn(3, 4)
    xe, xc = x.clone(), x.clone()
    want = f_inplace_rows(xe)
    torchc.reset()
    ex = torchc.explain(f_inplace_rows)(x.clone())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    got = torchc.compile(f_inplace_rows)(xc)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(xc, xe)


def f_rows(x):
    return list(x)


def test_returned_rows_share_storage():
    x = torch.randn(3, 4)
    torchc.reset()
    rows = torchc.compile(f_rows)(x)
    assert [r.data_ptr() - x.data_ptr() for r in rows] == [r.data_ptr() - x.data_ptr() for r in list(x)]
    rows[1].mul_(0)
    assert bool((x[1] == 0).all())


def test_gradients():
    torch.manual_seed(0)
    xe = torch.randn(3, 4, requires_grad=True)
    xc = xe.detach().clone().requires_grad_(True)
    torchc.reset()
    e = f_sum_gen(xe)
    c = torchc.compile(f_sum_gen)(xc)
    torch.testing.assert_close(c, e)
    e.sum().backward()
    c.sum().backward()
    torch.testing.assert_close(xc.grad, xe.grad)


@torch.compiler.disable
def opaque(x):
    return x * 1


def f_break_in_loop(x):
    s = x[0] * 0
    for r in x:
        s = s + opaque(r).sin()
    return s


def test_break_inside_loop_resumes():
    torch.manual_seed(0)
    ex = _check(f_break_in_loop, (torch.randn(3, 4),), graphs=3, breaks=2)
    assert all("disable" in str(r) for r in ex.break_reasons)


def test_dynamic_dim0_specializes():
    """a dynamic dim 0 cannot be unrolled: the frame is traced with that size fixed
    (guarded), so every size still compiles and matches eager"""
    torchc.reset()
    ex = torchc.explain(f_for, dynamic=True)(torch.randn(5, 4))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    cf = torchc.compile(f_for, dynamic=True)
    for n in (3, 4, 0, 1, 6):
        x = torch.randn(n, 4)
        torch.testing.assert_close(cf(x), f_for(x))
