"""Regressions found by probing unseen user-style programs (round 4; the harness is
tools/probe2.py --dir probes4 with its scenarios in tools/probes4/). Each test is the minimal
program that gave a different answer, dtype or exception under torchc.compile than in eager,
and fails on the build before its fix."""
import pytest
import torch

import torchc


def _same(got, want):
    assert type(got) is type(want)
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        torch.testing.assert_close(got, want, equal_nan=True)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        assert got == want


def _raises_same(fn, args, compiled):
    try:
        fn(*args)
    except Exception as e:   # noqa: BLE001 - the type is what is compared
        want = type(e)
    else:
        raise AssertionError("eager did not raise")
    with pytest.raises(want):
        compiled(*args)


# ---- x[idx] = v with an integer tensor index and v a tensor of another dtype ---------------
# Eager's index_put_ refuses a source tensor of another dtype (a Python number is cast); the
# capture cast v to x's dtype and scattered it, returning where eager raises.

def _store_at_index(x, i, v):
    y = x * 2
    y[i] = v
    return y + 1


@pytest.mark.allow_fallback
@pytest.mark.parametrize("xdt,vdt", [(torch.float32, torch.float64), (torch.int32, torch.float32),
                                     (torch.float16, torch.float32)])
@pytest.mark.parametrize("vshape", [(), (1,), (4,)])
def test_index_store_of_another_dtype_raises_as_eager(xdt, vdt, vshape):
    g = torchc.compile(_store_at_index)
    i = torch.tensor([0, 2])
    x = torch.arange(12).reshape(3, 4).to(xdt)
    _same(g(x, i, torch.full(vshape, 5, dtype=xdt)), _store_at_index(x, i, torch.full(vshape, 5, dtype=xdt)))
    assert torchc._C.stats()["compiles"] >= 1
    _raises_same(_store_at_index, (x, i, torch.full(vshape, 5, dtype=vdt)), g)
    _same(g(x, i, 7), _store_at_index(x, i, 7))          # a number is cast, as in eager
    _same(g(x, torch.tensor([True, False, True]), torch.tensor(7, dtype=vdt)),
          _store_at_index(x, torch.tensor([True, False, True]), torch.tensor(7, dtype=vdt)))  # a mask: masked_fill


# ---- in-place update of an input whose elements overlap without a zero stride ---------------
# x = base.as_strided((3, 2), (1, 1)): x[0, 1] and x[1, 0] are one element. Eager's add_
# writes it twice (2.0); the graph computed x + 1 and copied it back (1.0). Only a zero stride
# (an expand) was taken as elements sharing memory.

def _bump(x):
    x.add_(1)
    return x * 1


@pytest.mark.allow_fallback
@pytest.mark.parametrize("size,stride", [((3, 2), (1, 1)), ((2, 3), (2, 1)), ((4,), (0,)), ((2, 2, 2), (2, 1, 1))])
def test_inplace_on_an_input_with_overlapping_elements(size, stride):
    g = torchc.compile(_bump)
    torchc.reset()
    _same(g(torch.zeros(3, 2)), _bump(torch.zeros(3, 2)))
    assert torchc._C.stats()["compiles"] == 1
    be, bc = torch.zeros(12), torch.zeros(12)
    xe, xc = be.as_strided(size, stride), bc.as_strided(size, stride)
    try:
        want = _bump(xe)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            g(xc)
        return
    _same(g(xc), want)
    _same(bc, be)


@pytest.mark.parametrize("size,stride", [((3, 2), (1, 3)), ((2, 3), (1, 2)), ((2, 2), (-0 + 5, 2))])
def test_inplace_on_an_input_with_distinct_elements_still_compiles(size, stride):
    g = torchc.compile(_bump)
    torchc.reset()
    be, bc = torch.zeros(12), torch.zeros(12)
    _same(g(bc.as_strided(size, stride)), _bump(be.as_strided(size, stride)))
    _same(bc, be)
    assert torchc._C.stats()["compiles"] == 1 and torchc._C.stats()["fallbacks"] == 0


# ---- constants equal across types: 1 == 1.0 == True ----------------------------------------
# A set, frozenset or list constant was guarded by ==, so {1.0, 2} passed the guard made for
# {1, 2} and the compiled code returned the first call's elements ([1, 2] where eager
# [1.0, 2]); a one-key dict's key was guarded by `in` only ({1.0: x} passed for {1: x}).

def _sorted_set(x, s):
    return x * len(s), sorted(s, key=repr)


def _dict_items(x, d):
    return x + len(d), list(d.items())


@pytest.mark.allow_fallback   # a dict with a float or bool key is left to eager
@pytest.mark.parametrize("fn,values", [
    (_sorted_set, [{1, 2}, {1.0, 2}, {1, 2.0}, {True, 2}, frozenset({(1, 2)}), frozenset({(1.0, 2)}),
                   frozenset({"a", "b"}), frozenset({"b", "a"})]),
    (_dict_items, [{1: 2}, {1.0: 2}, {True: 2}, {1: 2.0}, {1: 2, 3: 4}, {1: 2, 3.0: 4}, {"a": 1}]),
])
def test_constants_equal_across_types_are_told_apart(fn, values):
    g = torchc.compile(fn)
    torchc.reset()
    x = torch.ones(2)
    for v in values:
        got, want = g(x, v), fn(x, v)
        _same(got[0], want[0])
        assert got[1] == want[1] and [repr(a) for a in got[1]] == [repr(a) for a in want[1]], (v, got[1], want[1])
    assert torchc._C.stats()["compiles"] >= 1


# ---- gradients at the kinks of clamp-like ops, of max(dim) ties, of atan2 at the origin ----
# clamp/clip/clamp_min/clamp_max, hardtanh/relu6, hardsigmoid and hardswish were lowered to
# maximum/minimum, whose backward splits the gradient where x equals a bound (0.5 where eager
# gives 1 for clamp, 0 for hardtanh) and passes it through NaN; max(x, dim).values was amax,
# whose backward shares the gradient among ties (eager gives it all to the returned index);
# atan2's gradient at (0, 0) was NaN (eager: 0); elu/selu's was NaN at a NaN input (eager: 1).

_K = [-4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 4.0, 6.0, 7.0, float("nan")]

_KINKS = {
    "clamp": lambda x: x.clamp(-1, 3),
    "clamp_min": lambda x: x.clamp(min=0),
    "clamp_max": lambda x: torch.clamp_max(x, 3),
    "clip": lambda x: torch.clip(x, 0, 1),
    "hardtanh": lambda x: torch.nn.functional.hardtanh(x),
    "hardtanh_3": lambda x: torch.nn.functional.hardtanh(x, -3.0, 3.0),
    "relu6": lambda x: torch.nn.functional.relu6(x),
    "relu6_module": torch.nn.ReLU6(),
    "hardsigmoid": lambda x: torch.nn.functional.hardsigmoid(x),
    "hardswish": lambda x: torch.nn.functional.hardswish(x),
    "elu": lambda x: torch.nn.functional.elu(x),
    "selu": lambda x: torch.nn.functional.selu(x),
    "clamp_half": lambda x: x.half().clamp(-1, 3).float() * 2,
    "max_dim": lambda x: x.reshape(5, 2).max(1).values * torch.arange(1.0, 6.0),
    "min_dim_keep": lambda x: x.reshape(2, 5).min(0, keepdim=True)[0] * 3,
}


@pytest.mark.parametrize("name", sorted(_KINKS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradient_at_kinks_matches_eager(name, dtype):
    fn = _KINKS[name]
    x = torch.tensor(_K, dtype=dtype)
    if name.startswith("max_dim") or name.startswith("min_dim"):
        x = torch.tensor([1.0, 3.0, 3.0, 3.0, 2.0, 2.0, -1.0, 5.0, 0.0, 0.0], dtype=dtype)
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    ya = fn(a)
    ya.sum().backward()
    torchc.reset()
    yb = torchc.compile(fn)(b)
    yb.sum().backward()
    assert torchc._C.stats()["compiles"] >= 1
    torch.testing.assert_close(yb, ya, equal_nan=True)
    torch.testing.assert_close(b.grad, a.grad, equal_nan=True, rtol=3e-6, atol=1e-7)


def test_clamp_with_tensor_bounds_gradients():
    def fn(x, lo, hi):
        return torch.clamp(x, lo, hi) * torch.arange(1.0, 11.0)
    x = torch.tensor(_K)
    lo = torch.tensor([-1.0, -3.0, 0.0, 0.0, 2.0, 3.0, 5.0, 6.0, 8.0, 0.0])
    hi = torch.tensor([0.0, -3.0, 1.0, 0.0, 1.0, 3.0, 5.0, 7.0, 6.0, 1.0])
    ea = [v.clone().requires_grad_(True) for v in (x, lo, hi)]
    ca = [v.clone().requires_grad_(True) for v in (x, lo, hi)]
    fn(*ea).sum().backward()
    torchc.reset()
    torchc.compile(fn)(*ca).sum().backward()
    assert torchc._C.stats()["compiles"] >= 1
    for e, c in zip(ea, ca):
        torch.testing.assert_close(c.grad, e.grad)


def test_atan2_gradient_at_the_origin():
    def fn(y, x):
        return torch.atan2(y, x) * 2
    ys = torch.tensor([0.0, 1e-30, -0.0, 1.0, 0.0])
    xs = torch.tensor([0.0, 1e-30, 0.0, 0.0, 2.0])
    ea = [v.clone().requires_grad_(True) for v in (ys, xs)]
    ca = [v.clone().requires_grad_(True) for v in (ys, xs)]
    fn(*ea).sum().backward()
    torchc.reset()
    torchc.compile(fn)(*ca).sum().backward()
    assert torchc._C.stats()["compiles"] >= 1
    for e, c in zip(ea, ca):
        torch.testing.assert_close(c.grad, e.grad, equal_nan=True)


# ---- gradients through where-branches at infinities, rounded division, norm of order 0 -----
# softplus/logsigmoid at +-inf and smooth_l1/huber at an infinite difference took the
# gradient of the branch not taken times 0 (inf * 0 = NaN; eager 1 / sign(d)); a trunc
# division's gradient (eager: zeros) was 0 * (1 / b) = NaN at b = 0; remainder's gradient for
# the divisor at an infinite dividend was -inf (eager: -floor_divide = NaN); vector_norm of
# order 0 did not require grad, so backward raised where eager runs.

_INF = float("inf")
_NAN = float("nan")
_A = [0.0, 0.0, 1.0, -1.0, 2.0, _INF, -_INF, _INF, _NAN, 0.0, 3.0, -0.0]
_B = [0.0, 1.0, 0.0, 0.0, 2.0, _INF, _INF, 1.0, 1.0, -2.0, -3.0, 5.0]

_EDGE2 = {
    "softplus": lambda a, b: torch.nn.functional.softplus(a) + b,
    "logsigmoid": lambda a, b: torch.nn.functional.logsigmoid(a) * 2 + b,
    "smooth_l1": lambda a, b: torch.nn.functional.smooth_l1_loss(a, b, reduction="none"),
    "huber": lambda a, b: torch.nn.functional.huber_loss(a, b, reduction="none", delta=2.0),
    "remainder": lambda a, b: torch.remainder(a, b),
    "trunc_div": lambda a, b: torch.div(a, b, rounding_mode="trunc") * 3,
}


@pytest.mark.parametrize("name", sorted(_EDGE2))
def test_gradients_at_infinities_match_eager(name):
    fn = _EDGE2[name]
    ea = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (_A, _B)]
    ca = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (_A, _B)]
    w = torch.linspace(0.5, 1.5, len(_A), dtype=torch.float64)
    ye = fn(*ea)
    (ye * w).sum().backward()
    torchc.reset()
    yc = torchc.compile(fn)(*ca)
    (yc * w).sum().backward()
    assert torchc._C.stats()["compiles"] >= 1
    torch.testing.assert_close(yc, ye, equal_nan=True)
    for e, c in zip(ea, ca):
        torch.testing.assert_close(c.grad, e.grad, equal_nan=True)


def test_norm_of_order_zero_can_be_backpropagated():
    def fn(x):
        return x.norm(p=0, dim=1) + x.sum(1)
    x = torch.tensor([[1.0, 0.0, 3.0], [0.0, 0.0, 2.0]])
    xe, xc = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    ye = fn(xe)
    ye.sum().backward()
    torchc.reset()
    yc = torchc.compile(fn)(xc)
    yc.sum().backward()
    assert torchc._C.stats()["compiles"] >= 1
    assert yc.requires_grad
    torch.testing.assert_close(yc, ye)
    torch.testing.assert_close(xc.grad, xe.grad)
    # alone: eager's result requires grad (its gradient is None); backward must not raise
    xc2 = x.clone().requires_grad_(True)
    out = torchc.compile(lambda v: v.norm(p=0))(xc2)
    assert out.requires_grad == x.clone().requires_grad_(True).norm(p=0).requires_grad
    out.backward()


# ---- max pooling's gradient among ties ---------------------------------------------------
# max_pool1d/2d and adaptive max pools folded windows with maximum, whose rule shares the
# gradient among equal elements; eager gives it to the first maximum of each window (the last
# NaN). ReLU before a max pool makes ties (zeros) common.

_POOLS = {
    "mp1d": lambda x: torch.nn.functional.max_pool1d(x.flatten(1)[None], 2, 1),
    "mp2d": lambda x: torch.nn.functional.max_pool2d(x[None], 2, 1),
    "mp2d_pad": lambda x: torch.nn.functional.max_pool2d(x[None], 3, 2, padding=1),
    "mp2d_dil_ceil": lambda x: torch.nn.functional.max_pool2d(x[None], 2, 2, dilation=1, ceil_mode=True),
    "mp2d_relu": lambda x: torch.nn.functional.max_pool2d(torch.relu(x - 1)[None], 2, 1),
    "adaptive": lambda x: torch.nn.functional.adaptive_max_pool2d(x[None], (2, 2)),
    "module": lambda x: torch.nn.MaxPool2d(2)(x[None]),
    "global": lambda x: torch.nn.functional.adaptive_max_pool2d(x[None], 1),
}


@pytest.mark.parametrize("name", sorted(_POOLS))
def test_max_pool_gradient_goes_to_the_first_maximum(name):
    fn = _POOLS[name]
    x = torch.tensor([[[1.0, 1.0, 2.0, 2.0], [1.0, 0.0, 2.0, 0.0], [3.0, 3.0, 0.0, 0.0], [3.0, 3.0, 0.0, _NAN]],
                      [[0.0, 0.0, 0.0, 0.0], [5.0, 1.0, 5.0, 1.0], [2.0, 2.0, 2.0, 2.0], [0.0, 7.0, 7.0, 0.0]]])
    xe, xc = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    ye = fn(xe)
    w = torch.linspace(0.5, 1.5, ye.numel()).reshape(ye.shape)
    (ye * w).sum().backward()
    torchc.reset()
    yc = torchc.compile(fn)(xc)
    (yc * w).sum().backward()
    assert torchc._C.stats()["compiles"] >= 1
    torch.testing.assert_close(yc, ye, equal_nan=True)
    torch.testing.assert_close(xc.grad, xe.grad, equal_nan=True)
