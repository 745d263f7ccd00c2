"""x[k] = v: in-graph functional updates (basic indexing, boolean masks with a number),
graph breaks at the store for the rest; always the eager result and side effects."""
import pytest
import torch

import torchc
from conftest import assert_same, explain_of


def run_both(fn, *args):
    ea = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    ca = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    want = fn(*ea)
    got = torchc.compile(fn)(*ca)
    assert_same(got, want)
    for g, w in zip(ca, ea):  # side effects on the inputs
        if isinstance(w, torch.Tensor):
            assert_same(g, w)
    return got


def f_rows(x):
    y = x * 2
    y[1:3] = 0
    return y + 1


def f_col_from_tensor(x):
    y = x + 1
    y[:, 0] = x[:, 1]
    return y


def f_elem(x):
    y = x.clone()
    y[0, -1] = 7.5
    y[-1] = y[0]
    return y * y


def f_ellipsis_none(x):
    y = x.exp()
    y[..., 1:2] = -1
    y[None, 0] = 3
    return y


def f_broadcast_value(x, v):
    y = x - 1
    y[1:, 2:4] = v  # v broadcast over rows
    return y.sum(0)


def f_input_inplace(x):
    x[0] = 5.0
    x[:, -1] = x[:, 0] * 2
    return x.sum()


def f_int_cast(x):
    y = torch.zeros(x.shape, dtype=torch.int64)
    y[1] = 3.9  # cast like eager (truncation)
    return y + x.long()


def f_mask(x):
    y = x.clone()
    y[y < 0] = 0.0
    y[x > 1] = x[0, 0]  # 0-d tensor value
    return y


def f_empty_region(x):
    y = x + 0
    y[3:3] = 9
    y[:, 5:] = 1
    return y


def f_step(x):
    y = x + 1
    y[::2] = 0  # strided: captured (the rows gathered back and selected by a mask)
    return y * 3


def f_tensor_index(x, i):
    y = x + 1
    y[i] = 0  # index_put: breaks
    return y.sum(1)


def f_view_alias(x):
    y = x * 1
    r = y[0]
    r[1] = 100  # writes through the view into y
    return y + r.sum()


CASES = [
    (f_rows, lambda: (torch.randn(5, 4),), 1),
    (f_col_from_tensor, lambda: (torch.randn(3, 4),), 1),
    (f_elem, lambda: (torch.randn(4, 3),), 1),  # the view y[0] is dead after the store
    (f_ellipsis_none, lambda: (torch.randn(2, 3, 4),), 1),
    (f_broadcast_value, lambda: (torch.randn(4, 6), torch.randn(2)), 1),
    (f_input_inplace, lambda: (torch.randn(3, 4),), 1),
    (f_int_cast, lambda: (torch.randn(3, 2),), 1),
    (f_mask, lambda: (torch.randn(4, 5),), 1),
    (f_empty_region, lambda: (torch.randn(4, 5),), 1),
    (f_step, lambda: (torch.randn(5, 3),), 1),
    (f_tensor_index, lambda: (torch.randn(5, 3), torch.tensor([0, 3])), 1),  # a scatter extern
    (f_view_alias, lambda: (torch.randn(3, 4),), None),
]


@pytest.mark.parametrize("fn,mk,graphs", CASES, ids=[c[0].__name__ for c in CASES])
def test_setitem_matches_eager(fn, mk, graphs):
    args = mk()
    run_both(fn, *args)
    if graphs is not None:
        ex = explain_of(fn, *[a.clone() for a in args])
        assert ex.graph_count == graphs, ex


@pytest.mark.parametrize("shape", [(1, 4), (6, 1), (0, 4), (7, 9)])
def test_setitem_edge_shapes(shape):
    def f(x):
        y = x * 3
        y[:1] = -2
        y[..., -1:] = 4
        return y
    run_both(f, torch.randn(*shape))


def test_setitem_noncontiguous_input():
    def f(x):
        x[1] = 0
        return x * 2
    base = torch.randn(4, 6)
    a, b = base.clone().t(), base.clone().t()
    assert_same(torchc.compile(f)(a), f(b))
    assert_same(a, b)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_setitem_bad_shape_raises_like_eager():
    def f(x):
        y = x + 1
        y[0] = torch.ones(3)
        return y
    x = torch.randn(2, 4)
    with pytest.raises(RuntimeError):
        f(x.clone())
    with pytest.raises(RuntimeError):
        torchc.compile(f)(x.clone())


def test_setitem_repeated_calls_and_refcounts():
    import sys
    def f(x):
        y = x.clone()
        y[0] = 1
        return y
    cf = torchc.compile(f)
    x = torch.randn(3, 3)
    cf(x)
    rc = sys.getrefcount(x)
    for _ in range(50):
        cf(x)
    assert sys.getrefcount(x) == rc


@pytest.mark.allow_fallback
def test_aliasing_guards_between_calls():
    # compiled for distinct arguments, then called with one tensor twice / overlapping views
    def f(a, b):
        a.add_(1)
        return b * 2
    cf = torchc.compile(f, dynamic=False)
    for make in (lambda: (torch.randn(3, 4), torch.randn(3, 4)),
                 lambda: (lambda t: (t, t))(torch.randn(3, 4)),
                 lambda: (lambda t: (t[:3], t[1:]))(torch.randn(4, 4)),
                 lambda: (torch.randn(3, 4), torch.randn(3, 4))):
        base = make()
        ea = [x.clone() for x in base] if base[0] is not base[1] else [base[0].clone()] * 2
        if base[0]._base is not None:
            root = base[0]._base.clone()
            ea = [root[:3], root[1:]]
        want = f(*ea)
        got = cf(*base)
        assert_same(got, want)
        assert_same(base[0], ea[0])


@pytest.mark.parametrize("shape,idx", [((5, 3), [0, 3]), ((6,), [5, 1, 2]), ((4, 2, 3), [3]),
                                       ((5, 3), []), ((5, 3), [4, 4])])
def test_setitem_tensor_index(shape, idx):
    def f(x, i, v):
        y = x * 2
        y[i] = v
        x[i] = 0.5
        return y + 1
    x = torch.randn(*shape)
    i = torch.tensor(idx, dtype=torch.int64)
    for v in (3.0, torch.randn(*shape[1:]) if len(shape) > 1 else torch.tensor(7.0)):
        run_both(f, x, i, v)


def test_setitem_tensor_index_out_of_range_is_eager():
    def f(x, i):
        y = x + 1
        y[i] = 0
        return y
    x = torch.randn(4, 2)
    cf = torchc.compile(f)
    assert_same(cf(x, torch.tensor([1, 3])), f(x, torch.tensor([1, 3])))
    assert_same(cf(x, torch.tensor([-1, 0])), f(x, torch.tensor([-1, 0])))  # negative: eager wraps
    with pytest.raises(IndexError):
        f(x, torch.tensor([4]))
    with pytest.raises(IndexError):
        cf(x, torch.tensor([4]))
