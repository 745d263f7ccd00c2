"""In-place updates of tensors with live views, functionalized (dynamo_hook/alias_fn.c):
an update of a base or of a view is seen by every live alias, views of inputs write back
into the caller's tensor, all in one graph. Differential against eager, with two-sided
graph/break counts (a silent fallback fails)."""
import pytest
import torch

import torchc
from conftest import assert_same


def check(fn, *args, graphs=1, breaks=0):
    ea = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    ca = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    want = fn(*ea)
    torchc.reset()
    ex = torchc.explain(fn)(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    got = torchc.compile(fn)(*ca)
    assert_same(got, want)
    for g, w in zip(ca, ea):  # inputs mutated through views: written back as eager
        if isinstance(w, torch.Tensor):
            assert_same(g, w)
    return got


def aug_slice(x):
    r = x.clone()
    r[:, 0] += 2
    return r


def base_update_view_live(x):
    r = x.clone()
    v = r[:, 1:]
    r.mul_(2)
    return v + r[:, 1:]


def input_view_update(x):
    v = x[:, 1:]
    v.add_(1)
    return x * 2


def transposed_view(x):
    r = x.clone()
    v = r.t()
    v.mul_(3)
    return r + 1, v * 1


def two_views(x):
    r = x.clone()
    v = r[0]
    w = r.view(-1)
    v.add_(5)
    return w * 1, r.sum()


def narrow_zero(x):
    r = x.clone()
    v = r.narrow(1, 0, 1)
    v.zero_()
    return r


def select_iadd(x):
    r = x * 1
    v = r.select(0, -1)
    v += 1
    return r, v + 0


def chain_of_views(x):
    r = x + 0
    v = r.narrow(0, 1, r.shape[0] - 1)
    w = v.reshape(-1).unsqueeze(0)
    w.sub_(1)
    return r.t()[0], v * 1, w + 0


def input_view_flat(x):
    v = x.view(-1)
    v.mul_(2)
    return x + 1


def broadcast_rhs(x, b):
    r = x.clone()
    r[1:] += b
    return r


def dead_view_then_base(x):
    r = x.clone()
    _ = r[0]
    r.add_(1)
    return r


SHAPES = [(3, 4), (1, 4), (4, 1), (2, 5)]
FNS = [aug_slice, base_update_view_live, input_view_update, transposed_view, two_views,
       narrow_zero, select_iadd, chain_of_views, input_view_flat, dead_view_then_base]


@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_inplace_with_live_views(fn, shape):
    check(fn, torch.randn(*shape))


@pytest.mark.parametrize("fn", [f for f in FNS if f not in (two_views, chain_of_views, input_view_flat)],
                         ids=lambda f: f.__name__)
def test_noncontiguous_input(fn):
    check(fn, torch.randn(5, 3).t())  # [3, 5], strides (1, 3): clone keeps them


def test_reshape_copy_is_not_an_alias():
    def f(x):
        r = x + 0
        v = r.t()[1:]
        w = v.reshape(-1)  # eager copies (v is not contiguous): w shares nothing with r
        w.sub_(1)
        return r, v * 1, w

    # the trace knows the slice's strides (ops_views.c getitem_strides): the reshape copies,
    # the update is of the copy only, one graph
    check(f, torch.randn(3, 4), graphs=1, breaks=0)


def test_broadcast_value():
    check(broadcast_rhs, torch.randn(4, 3), torch.randn(3))


def test_empty():
    check(aug_slice, torch.randn(0, 3))
    check(base_update_view_live, torch.randn(3, 0))


def test_int_dtype():
    check(aug_slice, torch.arange(12).reshape(3, 4))


def test_view_of_input_returned_after_update():
    def f(x):
        v = x[1:]
        x.add_(1)
        return v

    got = check(f, torch.randn(3, 2))
    assert got.dtype == torch.float32


def test_expand_view_still_breaks():
    def f(x):
        r = x.clone()
        e = r.expand(3, 4)
        r.add_(1)
        return e * 1

    # an expanded alias is not replayed: the graph breaks at the update, eager values
    check(f, torch.randn(1, 4), graphs=2, breaks=1)


# ---- in-place view ops: the object itself becomes the view --------------------------

def t_clone(x):
    r = x.clone()
    r.t_()
    return r + 1, r


def unsqueeze_then_update(x):
    r = x * 1
    r.unsqueeze_(0)
    r[0, 0] += 1
    return r * 2


def squeeze_(x):
    r = x.unsqueeze(1) * 1
    r.squeeze_(1)
    return r - 1


def t_of_view_then_update(x):
    y = x * 2
    v = y.t()
    v.t_()
    v.add_(1)
    return y, v


def transpose_then_setitem(x):
    r = x.clone()
    r.transpose_(0, 1)
    r[0] += 1
    return r


@pytest.mark.parametrize("fn", [t_clone, unsqueeze_then_update, squeeze_, t_of_view_then_update,
                                transpose_then_setitem], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(3, 4), (1, 1), (2, 1)], ids=str)
def test_inplace_view_ops(fn, shape):
    check(fn, torch.randn(*shape))


def test_t_strides_match_eager():
    x = torch.randn(3, 4)
    got = check(t_clone, x)
    assert got[1].stride() == t_clone(x.clone())[1].stride()


def test_inplace_view_op_on_input_breaks():
    def f(x):
        x.t_()  # the caller's tensor changes shape: eager runs it
        return x * 2

    check(f, torch.randn(2, 3), graphs=2, breaks=1)


# ---- detach: a new tensor object sharing the data ------------------------------------

def test_detach_identity_and_shared_update():
    def f(x):
        t = x * 2
        y = t.detach()
        z = y.detach()
        y.add_(1)  # t and z share y's data
        return y is t, z is y, t, z

    got = check(f, torch.randn(3))
    assert got[0] is False and got[1] is False


# ---- view/stack ops that broke the graph before --------------------------------------

@pytest.mark.parametrize("shape,args", [((3, 3), ()), ((2, 4), (1,)), ((4, 2), (-1,)),
                                        ((0, 3), ()), ((1, 1), (1,)), ((2, 3, 4), (0, 0, 2)),
                                        ((2, 3, 4), (1, -1, -2))], ids=str)
def test_diagonal(shape, args):
    check(lambda x: x.diagonal(*args) * 2 + 1, torch.randn(*shape))
    check(lambda x: torch.diagonal(x, *args) - 1, torch.randn(*shape))


def test_diagonal_noncontiguous_and_returned_view():
    check(lambda x: x.diagonal(1) + 0, torch.randn(4, 5).t())
    x = torch.randn(3, 3)
    got = check(lambda x: x.diagonal(), x)
    x2 = x.clone()
    d = torchc.compile(lambda x: x.diagonal())(x2)
    d.fill_(7)  # a real view of the caller's tensor, as eager's
    assert torch.equal(torch.diagonal(x2), torch.full((3,), 7.0))


def test_inplace_through_diagonal_still_breaks():
    def f(x):
        r = x.clone()
        r.diagonal().fill_(0)
        return r

    # the clone is a graph, the update runs eagerly at the break, the rest has no op
    check(f, torch.randn(3, 3), graphs=1, breaks=0)
    torchc.reset()
    assert any("aliasing" in r for r in torchc.explain(f)(torch.randn(3, 3)).break_reasons)


@pytest.mark.parametrize("shape", [(3,), (0,), (2, 3), (2, 3, 4), (1, 1)], ids=str)
def test_hstack_vstack(shape):
    check(lambda x: torch.hstack([x, x * 2]) + 1, torch.randn(*shape))
    check(lambda x: torch.vstack((x, x * 2)) + 1, torch.randn(*shape))
    check(lambda x: torch.row_stack((x, x)) * 1, torch.randn(*shape))


def test_hstack_vstack_scalars_and_promotion():
    check(lambda x: torch.hstack([x.sum(), x.sum() * 2]), torch.randn(3))
    check(lambda x: torch.vstack([x.sum(), x.sum()]), torch.randn(3))
    check(lambda x: torch.vstack([x, torch.ones(3, dtype=torch.float64)]), torch.randn(3))
    check(lambda x: torch.hstack([x, torch.ones(2, 1, dtype=torch.int64)]), torch.randn(2, 3))


@pytest.mark.parametrize("read", ["shape", "size", "dim", "len", "ndim", "numel", "mT"])
def test_metadata_after_inplace_view_op_of_a_view(read):
    def f(x):
        w = x.narrow(-1, 0, 1)  # a view of the input: only w's metadata changes
        w.unsqueeze_(0)
        if read == "shape":
            return w.shape, w + 0
        if read == "size":
            return w.size(0), w.size(), w + 0
        if read == "dim":
            return w.dim(), w + 0
        if read == "len":
            return len(w), w + 0
        if read == "ndim":
            return w.ndim, w + 0
        if read == "numel":
            return w.numel(), w + 0
        return w.mT * 1

    check(f, torch.randn(3, 5))
