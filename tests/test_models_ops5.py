"""Torch ops that broke graphs of real models, now captured (torchc/_polyfill_ops.py: written
over the graph's ops; dynamo_hook/ops_models.c: torch.result_type, get_default_dtype, numpy
ufuncs of Python numbers, torch.return_types results): torch.diag / diag_embed / diagflat,
F.cosine_similarity, torch.take, atleast_1d/2d/3d, searchsorted, median / nanmedian of all
elements, cdist (p 1 and 2, both of ATen's p=2 algorithms), tensordot, kron, logspace.
Each compiled whole (1 graph, 0 breaks from torchc.explain: a silent fallback fails,
tests/conftest.py) and compared with eager: dtype, shape, strides, values, and the gradients
of the differentiable ones (a backward graph compiled too)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchc
from conftest import captured_whole


def _same(g, w, exact=True, tol=None):
    if isinstance(w, (tuple, list)):
        assert type(g) is type(w) and len(g) == len(w), (type(g), type(w))
        for a, b in zip(g, w):
            _same(a, b, exact, tol)
        return
    if not isinstance(w, torch.Tensor):
        assert g == w and type(g) is type(w)
        return
    assert (g.dtype, g.shape, g.requires_grad) == (w.dtype, w.shape, w.requires_grad), \
        (g.dtype, w.dtype, g.shape, w.shape, g.requires_grad, w.requires_grad)
    if g.numel() > 1:
        assert g.stride() == w.stride(), (g.stride(), w.stride())
    if exact:
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(g, w, equal_nan=True, **(tol or dict(rtol=1e-5, atol=1e-5)))


def _whole(fn, *args, exact=True, tol=None):
    """fn compiled whole (1 graph, 0 breaks) gives eager's result"""
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert captured_whole(ex), ex
    _same(ex.result, want, exact, tol)
    got = torchc.compile(fn)(*args)
    _same(got, want, exact, tol)
    return ex


def _grads(fn, *args, tol=None):
    """outputs and the gradients of every floating input: compiled (one forward and one
    backward graph) vs eager"""
    tol = tol or dict(rtol=1e-4, atol=1e-5)
    ae = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
    ac = [a.detach().clone().requires_grad_(a.is_floating_point()) for a in args]
    oe = fn(*ae)
    torchc.reset()
    ex = torchc.explain(fn)(*ac)
    oc = ex.result
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    oe = [oe] if isinstance(oe, torch.Tensor) else list(oe)
    oc = [oc] if isinstance(oc, torch.Tensor) else list(oc)
    gen = torch.Generator().manual_seed(1)
    gouts = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o in oe]
    for c, e in zip(oc, oe):
        _same(c.detach(), e.detach(), exact=False, tol=tol)
    we = [a for a in ae if a.requires_grad]
    wc = [a for a in ac if a.requires_grad]
    ge = torch.autograd.grad(oe, we, gouts, allow_unused=True)
    gc = torch.autograd.grad(oc, wc, gouts, allow_unused=True)
    for c, e in zip(gc, ge):
        assert (c is None) == (e is None)
        if e is not None:
            torch.testing.assert_close(c, e, equal_nan=True, **tol)


def R(*s, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + sum(s) * 7)
    return torch.randn(s, generator=g).to(dtype)


# ---- diag / diag_embed / diagflat ------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 5])
@pytest.mark.parametrize("k", [-2, 0, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_diag_of_a_vector(n, k, dtype):
    v = (R(n) > 0) if dtype == torch.bool else R(n).mul(10).to(dtype)
    _whole(lambda v: torch.diag(v, k), v)
    _whole(lambda v: v.diag(k) + 0, v) if dtype != torch.bool else None


@pytest.mark.parametrize("k", [-1, 0, 2, 7])
def test_diag_of_a_matrix_noncontiguous(k):
    m = R(6, 4).t()  # (4, 6), non-contiguous
    _whole(lambda m: torch.diag(m, k), m)
    _whole(lambda m: torch.diag(m.exp(), diagonal=k) * 2, m)


@pytest.mark.parametrize("args", [(0, -2, -1), (1, -2, -1), (-2, -2, -1), (1, 0, 2), (2, 2, 0), (-1, -1, 1)])
def test_diag_embed(args):
    x = R(2, 3)
    _whole(lambda x: torch.diag_embed(x, *args), x)
    _whole(lambda x: x.diag_embed(*args), x.t())  # non-contiguous input


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
@pytest.mark.parametrize("k", [0, -1, 2])
def test_diagflat(shape, k):
    _whole(lambda x: torch.diagflat(x, k), R(*shape))


def test_diag_grads():
    _grads(lambda v, m: (torch.diag(v, 1), torch.diag(m, -1), torch.diag_embed(m, 1, 0, 2), torch.diagflat(m)),
           R(4), R(3, 5))


# ---- F.cosine_similarity -------------------------------------------------------------------

COS = [  # (shape1, shape2, dim)
    ((4, 5), (4, 5), 1), ((4, 5), (4, 5), -1), ((4, 5), (4, 5), 0), ((3, 1, 5), (1, 4, 5), -1),
    ((2, 7), (7,), -1), ((1, 1), (1, 1), 1), ((3, 0), (3, 0), 1),
]


@pytest.mark.parametrize("s1,s2,dim", COS)
def test_cosine_similarity(s1, s2, dim):
    _whole(lambda a, b: F.cosine_similarity(a, b, dim=dim), R(*s1), R(*s2, seed=1), exact=False)


@pytest.mark.parametrize("dt1,dt2", [(torch.float64, torch.float64), (torch.float16, torch.float16),
                                     (torch.int64, torch.float32), (torch.float16, torch.float32)])
def test_cosine_similarity_dtypes(dt1, dt2):
    a = R(3, 9).mul(4).to(dt1)
    b = R(3, 9, seed=2).to(dt2)
    _whole(lambda a, b: F.cosine_similarity(a, b, -1), a, b, exact=False, tol=dict(rtol=2e-3, atol=2e-3))


def test_cosine_similarity_zero_vectors_and_eps():
    a = R(4, 6)
    a[1] = 0
    b = R(4, 6, seed=3)
    b[2] = 1e-12
    _whole(lambda a, b: F.cosine_similarity(a, b, dim=1, eps=1e-6), a, b, exact=False)
    _whole(lambda a, b: torch.cosine_similarity(a, b, 1), a.t().contiguous().t(), b, exact=False)


def test_cosine_similarity_grads():
    a = R(3, 1, 6)
    b = R(1, 4, 6, seed=4)
    _grads(lambda a, b: F.cosine_similarity(a, b, dim=-1), a, b)
    b2 = b.clone()
    b2[0, 1] = 0  # a zero vector: the clamp passes the norm's gradient, as eager
    _grads(lambda a, b: F.cosine_similarity(a, b, dim=-1, eps=1e-3), a, b2, tol=dict(rtol=1e-3, atol=1e-4))


# ---- result_type, get_default_dtype, numpy ufuncs of numbers --------------------------------

@pytest.mark.parametrize("other", [2, 2.5, True, "t_f64_0d", "t_i32", "t_f16"])
def test_result_type(other):
    x = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    o = {"t_f64_0d": torch.tensor(1.5, dtype=torch.float64), "t_i32": torch.ones(3, dtype=torch.int32),
         "t_f16": torch.ones(3, dtype=torch.float16)}.get(other, other)

    def f(x, o):
        return x.to(torch.result_type(x, o)) + 1, torch.result_type(o, x) == torch.float32

    _whole(f, x, o)


def test_get_default_dtype():
    _whole(lambda x: x.to(torch.get_default_dtype()) * 2, torch.arange(4))


def test_numpy_ufunc_of_numbers():
    x = R(2, 8)
    _whole(lambda x: x * np.sqrt(x.shape[-1]) + np.log(10000.0) / np.exp(2), x)
    _whole(lambda x: x / np.sqrt(64) - np.floor(2.5), x)


@pytest.mark.allow_fallback
def test_numpy_ufunc_of_a_tensor_left_to_eager():
    x = R(3).abs()
    ex = torchc.explain(lambda x: np.sqrt(x.numpy()) + 1)(x)
    assert ex.graph_break_count >= 1
    torch.testing.assert_close(torch.as_tensor(ex.result), torch.as_tensor(np.sqrt(x.numpy()) + 1))


# ---- take, atleast_nd -------------------------------------------------------------------------

@pytest.mark.parametrize("idx", [[0, 3, 7], [[1, -1], [-12, 5]], 4, []])
def test_take(idx):
    x = R(3, 4)
    i = torch.tensor(idx, dtype=torch.int64)
    _whole(lambda x, i: torch.take(x, i), x, i)
    _whole(lambda x, i: x.take(i) * 2, x.t(), i)  # non-contiguous input: its logical order


def test_take_grads():
    _grads(lambda x: torch.take(x, torch.tensor([[0, 5], [5, 11]])), R(3, 4))


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)])
def test_atleast(shape):
    x = R(*shape)
    _whole(lambda x: (torch.atleast_1d(x), torch.atleast_2d(x), torch.atleast_3d(x)), x)
    _whole(lambda x: torch.atleast_3d((x, x + 1)), x)
    _whole(lambda x: torch.atleast_2d(x, x.amax()), x)


def test_atleast_returns_the_same_tensor_when_no_dims_are_added():
    x = R(2, 3, 4)
    _whole(lambda x: torch.atleast_3d(x) is x and torch.atleast_2d(x) is x, x)


# ---- searchsorted -------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}])
def test_searchsorted_1d(kw):
    s = torch.tensor([-1.0, 0.0, 0.0, 0.5, 2.0])
    x = torch.tensor([[-2.0, 0.0, 0.25], [2.0, 3.0, float("nan")]])
    _whole(lambda s, x: torch.searchsorted(s, x, **kw), s, x)
    _whole(lambda s: torch.searchsorted(s, 0.0, **kw), s)
    _whole(lambda s: torch.searchsorted(s, 2, **kw), s)


def test_searchsorted_batched_and_mixed_dtypes():
    s = torch.sort(R(2, 3, 6), -1).values
    x = R(2, 3, 4, seed=5)
    _whole(lambda s, x: torch.searchsorted(s, x), s, x)
    _whole(lambda s, x: torch.searchsorted(s, x, right=True), s, x)
    si = torch.tensor([1, 3, 5, 7])
    _whole(lambda s, x: torch.searchsorted(s, x), si, torch.tensor([0.5, 3.0, 9.0]))
    _whole(lambda s, x: torch.searchsorted(s, x), si.double(), torch.tensor([0, 3, 9]))


# ---- median / nanmedian of all elements --------------------------------------------------------

@pytest.mark.parametrize("shape", [(1,), (5,), (4,), (3, 4), (2, 3, 5)])
def test_median(shape):
    x = R(*shape)
    _whole(lambda x: (torch.median(x), x.median() + 1, torch.nanmedian(x)), x)
    _whole(lambda x: x.median(), x.transpose(0, -1))
    _whole(lambda x: torch.median(x), (x * 10).to(torch.int64))


def test_median_nan():
    x = torch.tensor([[1.0, float("nan"), 0.0, 3.0], [2.0, -1.0, float("nan"), 5.0]])
    _whole(lambda x: (torch.median(x), torch.nanmedian(x), torch.nanmedian(x[:, :1])), x)
    allnan = torch.full((3,), float("nan"))
    _whole(lambda x: (torch.median(x), torch.nanmedian(x)), allnan)


def test_median_grads_spread_over_ties():
    x = torch.tensor([3.0, 1.0, 2.0, 2.0, 5.0, 2.0, 0.0])
    _grads(lambda x: torch.median(x) * 3, x)
    _grads(lambda x: torch.nanmedian(x) * 3, torch.tensor([float("nan"), 1.0, 2.0, 2.0]))


# ---- cdist --------------------------------------------------------------------------------------

CDIST = [  # (x1, x2, p, compute_mode)
    ((5, 3), (4, 3), 2.0, None), ((30, 4), (6, 4), 2.0, None),  # direct / matrix products (> 25 rows)
    ((2, 5, 3), (1, 4, 3), 2.0, "use_mm_for_euclid_dist"), ((3, 1, 5, 7), (2, 6, 7), 2.0, None),
    ((5, 3), (30, 3), 2.0, "donot_use_mm_for_euclid_dist"), ((5, 3), (4, 3), 1.0, None),
    ((2, 1, 3), (4, 3), 1, None),
]


@pytest.mark.parametrize("s1,s2,p,mode", CDIST)
def test_cdist(s1, s2, p, mode):
    kw = {} if mode is None else {"compute_mode": mode}
    _whole(lambda a, b: torch.cdist(a, b, p=p, **kw), R(*s1), R(*s2, seed=6), exact=False)


def test_cdist_grads_with_zero_distances():
    x = R(5, 4)
    y = torch.cat([x[:3], R(2, 4, seed=7)])  # three pairs at distance 0: a zero gradient, as eager
    _grads(lambda x, y: torch.cdist(x, y), x, y, tol=dict(rtol=1e-3, atol=1e-4))
    _grads(lambda x, y: torch.cdist(x, y, p=1), x, y)


def test_cdist_grads_matrix_product_form():
    _grads(lambda x, y: torch.cdist(x, y), R(30, 4), R(6, 4, seed=7), tol=dict(rtol=1e-3, atol=1e-4))
    _grads(lambda x, y: torch.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), R(2, 5, 3), R(2, 4, 3),
           tol=dict(rtol=1e-3, atol=1e-4))


# ---- tensordot, kron -------------------------------------------------------------------------

TDOT = [  # (a, b, dims)
    ((3, 4, 5), (4, 5, 6), 2), ((3, 4, 5), (5, 4, 2), ([1, 2], [1, 0])), ((3, 4), (4, 3), ([0], [1])),
    ((2, 1, 5), (3, 5), ([1, 2], [0, 1])), ((3, 4), (5,), 0), ((2, 3), (2, 3), ([-1, -2], [-1, -2])),
]


@pytest.mark.parametrize("sa,sb,dims", TDOT)
def test_tensordot(sa, sb, dims):
    _whole(lambda a, b: torch.tensordot(a, b, dims), R(*sa), R(*sb, seed=8), exact=False)


def test_tensordot_noncontiguous_and_grads():
    a = R(5, 4, 3).permute(2, 1, 0)
    b = R(4, 5, 2, seed=9)
    _whole(lambda a, b: torch.tensordot(a, b, ([1, 2], [0, 1])), a, b, exact=False)
    _grads(lambda a, b: torch.tensordot(a, b, dims=([1, 2], [0, 1])), a.contiguous(), b)


KRON = [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (2, 2)), ((), (3,)), ((0, 2), (3, 1))]


@pytest.mark.parametrize("sa,sb", KRON)
def test_kron(sa, sb):
    _whole(lambda a, b: torch.kron(a, b), R(*sa), R(*sb, seed=10))
    _whole(lambda a, b: a.kron(b), (R(*sa) * 5).to(torch.int32), (R(*sb) * 5).to(torch.int64))


def test_kron_grads():
    _grads(lambda a, b: torch.kron(a, b), R(2, 3), R(3, 2, seed=11))


@pytest.mark.allow_fallback
def test_kron_of_a_non_viewable_tensor_raises_as_eager():
    a, b = R(2, 3), R(3, 2).t()
    with pytest.raises(RuntimeError, match="view size"):
        torch.kron(a, b)
    with pytest.raises(RuntimeError, match="view size"):
        torchc.compile(lambda a, b: torch.kron(a, b) + 1)(a, b)


# ---- logspace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0, 1, 5), (-3, 2, 7), (0.5, 3, 33), (1, 1, 1), (0, 2, 0)])
@pytest.mark.parametrize("base", [10.0, 2, math.e])
@pytest.mark.parametrize("dtype", [None, torch.float64])
def test_logspace(args, base, dtype):
    x = R(args[2])
    _whole(lambda x: x + torch.logspace(*args, base=base, dtype=dtype), x)


# ---- Tensor.unfold with more than 64 taps (one index_select of the window positions) ----------

UNFOLD = [  # (shape, dim, size, step)
    ((2, 300), -1, 80, 10), ((2, 300), 1, 65, 65), ((3, 130, 2), 1, 100, 3), ((200,), 0, 200, 1),
    ((2, 1, 150), 2, 70, 200),
]


@pytest.mark.parametrize("shape,dim,size,step", UNFOLD)
def test_unfold_many_taps(shape, dim, size, step):
    x = R(*shape)
    _whole(lambda x: x.unfold(dim, size, step) * 2, x)
    _whole(lambda x: (x * 2).unfold(dim, size, step), x)  # the view itself: eager's strides
    _whole(lambda x: x.unfold(dim, size, step).sum(-1), x.transpose(0, -1).contiguous().transpose(0, -1), exact=False)


def test_unfold_many_taps_grads():
    _grads(lambda x: x.unfold(-1, 90, 7).pow(2).sum(-1), R(2, 3, 200))


# ---- torch ops of two numbers (a 0-d constant, usable as an int), as_strided ------------------

@pytest.mark.parametrize("op", ["trunc", "floor", "true", "mul", "sub"])
@pytest.mark.parametrize("ab", [(7, 2), (-7, 2), (7.5, 2), (True, 3)])
def test_torch_op_of_two_numbers(op, ab):
    a, b = ab
    fn = {"trunc": lambda: torch.div(a, b, rounding_mode="trunc"), "floor": lambda: torch.div(a, b, rounding_mode="floor"),
          "true": lambda: torch.div(a, b), "mul": lambda: torch.mul(a, b), "sub": lambda: torch.sub(a, b)}[op]
    if op == "sub" and isinstance(a, bool):
        pytest.skip("torch.sub of a bool raises in eager")  # (a return passed without the compiler)
    _whole(lambda x: (fn(), x + fn()), R(3))


def test_constant_0d_int_tensor_as_a_size():
    x = R(2, 12, 5)

    def f(x):  # longformer's chunking: a size from torch.div of two sizes
        return x.view(x.size(0), torch.div(x.size(1), 4, rounding_mode="trunc"), 4, x.size(2)) * 2

    _whole(f, x)
    _whole(lambda x: x.reshape(torch.tensor(3), -1) + 1, x)


def _chunk(h, w):  # transformers' Longformer _chunk (overlapping chunks by as_strided)
    h = h.view(h.size(0), torch.div(h.size(1), (w * 2), rounding_mode="trunc"), w * 2, h.size(2))
    size = list(h.size())
    size[1] = size[1] * 2 - 1
    stride = list(h.stride())
    stride[1] = stride[1] // 2
    return h.as_strided(size=size, stride=stride)


def test_as_strided_overlapping_chunks():
    q = R(2, 16, 3, 4)

    def f(q):
        q = q.transpose(1, 2).reshape(6, 16, 4)  # a copy: a fresh contiguous storage
        c = _chunk(q, 2)
        return torch.einsum("bcxd,bcyd->bcxy", c, c), c.sum(-1)

    _whole(f, q, exact=False)
    _whole(lambda q: _chunk(q.reshape(6, 16, 4) * 2, 4), q)  # the overlapping view returned: eager's strides


@pytest.mark.parametrize("args", [((3, 3), (1, 2)), ((2, 2), (3, 1), 4), ((4,), (0,), 2), ((0, 3), (1, 1)),
                                  ((2, 3, 2), (6, 1, 3), 1)])
def test_as_strided(args):
    _whole(lambda x: torch.as_strided(x * 1.5, *args) + 1, R(3, 5))
    _whole(lambda x: (x + 1).t().as_strided(*args), R(5, 3))  # a permuted view of a computed tensor


def test_as_strided_grads():
    _grads(lambda x: (x * 2).as_strided((3, 4), (2, 1)).sin(), R(4, 4))


@pytest.mark.allow_fallback
def test_as_strided_of_an_input_or_a_sliced_view_is_left_to_eager():
    x = R(4, 5)
    for fn, why in ((lambda x: x.as_strided((2, 2), (1, 1)) + 1, "an input's storage"),
                    (lambda x: (x * 2)[1:].as_strided((2, 2), (1, 1)) + 1, "storage offset"),
                    (lambda x: (x * 2).as_strided((5, 5), (5, 1)) + 1, "past the storage")):
        want = fn(x) if why != "past the storage" else None
        torchc.reset()
        if want is None:
            with pytest.raises(RuntimeError):
                torchc.compile(fn)(x)
            continue
        ex = torchc.explain(fn)(x)
        assert any(why in str(r) for r in ex.break_reasons), ex.break_reasons
        _same(ex.result, want)


@pytest.mark.allow_fallback
def test_cdist_and_cosine_similarity_under_autocast_are_left_to_eager():
    # autocast runs both wholly in float32 (CUDA's list): a decomposition would autocast its
    # matmul; left to eager with a reason, eager's values and dtypes
    a, b = R(4, 8), R(4, 8, seed=12)

    def f(a, b):
        return F.cosine_similarity(a, b, -1), torch.cdist(a, b)

    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = f(a, b)
        torchc.reset()
        ex = torchc.explain(f)(a, b)
    assert len(ex.break_reasons) == 2 and ex.graph_count == 0, ex  # (each at an edge: no graph break)
    _same(ex.result, want)


# ---- F.grid_sample: ATen's grid_sampler as an extern (inference) -------------------------------

@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d(mode, padding, align):
    x = R(2, 3, 5, 7)
    grid = R(2, 4, 6, 2, seed=13).mul(0.8)  # some points outside [-1, 1]
    _whole(lambda x, g: F.grid_sample(x * 2, g, mode=mode, padding_mode=padding, align_corners=align) + 1, x, grid)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d_noncontiguous_and_half(mode):
    x = R(1, 2, 3, 4, 5)
    grid = R(1, 2, 3, 4, 3, seed=14)
    _whole(lambda x, g: F.grid_sample(x, g, mode=mode, align_corners=False), x, grid)
    x2 = R(2, 5, 6, 3).permute(0, 3, 1, 2)  # channels-last
    g2 = R(2, 3, 4, 2, seed=15).transpose(1, 2)
    _whole(lambda x, g: F.grid_sample(x, g, align_corners=True).relu(), x2, g2)
    _whole(lambda x, g: F.grid_sample(x, g, align_corners=False), x2.double(), g2.double())


def test_grid_sample_with_grad_is_compiled():
    # its backward is ATen's (tests/test_grid_sample_grad.py has the gradients)
    x = R(1, 2, 4, 4).requires_grad_()
    g = R(1, 3, 3, 2, seed=16)
    ex = torchc.explain(lambda x, g: F.grid_sample(x, g, align_corners=False).sum())(x, g)
    assert ex.graph_count == 1 and not ex.break_reasons and ex.backward_graph_count == 1, str(ex)
    torch.testing.assert_close(ex.result, F.grid_sample(x, g, align_corners=False).sum())


# ---- linspace of 0-d tensors (eager takes their item(): no gradient) ---------------------------

@pytest.mark.parametrize("se", [(0.1, 2.7), (-3, 4), (2.5, -1.0)])
@pytest.mark.parametrize("steps", [0, 1, 2, 7, 100])
@pytest.mark.parametrize("dtype", [None, torch.float64])
@pytest.mark.parametrize("which", ["both", "start", "end"])
def test_linspace_of_0d_tensors(se, steps, dtype, which):
    s = torch.tensor(se[0], dtype=torch.float64 if isinstance(se[0], float) else torch.int64)
    e = torch.tensor(se[1], dtype=torch.float32 if isinstance(se[1], float) else torch.int64)

    def f(s, e):
        a = s if which != "end" else se[0]
        b = e if which != "start" else se[1]
        return torch.linspace(a, b, steps, dtype=dtype) * 1

    _whole(f, s, e, exact=False, tol=dict(rtol=2e-7, atol=1e-7))


def test_linspace_of_0d_tensors_passes_no_gradient():
    s = torch.tensor(0.5, requires_grad=True)
    e = torch.tensor(3.0, requires_grad=True)
    _whole(lambda s, e: torch.linspace(s * 2, e, 5) + 1, s, e, exact=False, tol=dict(rtol=2e-7, atol=1e-7))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("idx", [[100], [-13]])
def test_take_out_of_range_raises_as_eager(idx):
    x, i = R(3, 4), torch.tensor(idx)
    with pytest.raises(IndexError):
        torch.take(x, i)
    with pytest.raises(IndexError):
        torchc.compile(lambda x, i: torch.take(x, i) * 2)(x, i)


# ---- trace, dot, inner, pairwise_distance, dist, frac, heaviside, rot90, aminmax,
# fill_diagonal_, tril/triu_indices -----------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (1, 1), (0, 3)])
def test_trace(shape):
    _whole(lambda x: torch.trace(x), R(*shape), exact=False)
    _whole(lambda x: x.trace(), (R(*shape) * 9).to(torch.int32))


def test_dot_inner():
    a, b = R(7), R(7, seed=17)
    _whole(lambda a, b: (torch.dot(a, b), a.dot(b), torch.inner(a, b)), a, b, exact=False)
    _whole(lambda a, b: torch.inner(a, b), R(2, 3, 4), R(5, 4, seed=18), exact=False)
    _whole(lambda a, b: torch.inner(a, b), R(2, 3), torch.tensor(1.5))
    _grads(lambda a, b: (torch.dot(a, b), torch.inner(a.view(1, 7), b)), a, b)


@pytest.mark.parametrize("shapes", [((4, 6), (4, 6)), ((3, 1, 5), (2, 5)), ((5,), (5,))])
@pytest.mark.parametrize("p", [2.0, 1, 3.0])
def test_pairwise_distance_and_dist(shapes, p):
    a, b = R(*shapes[0]), R(*shapes[1], seed=19)
    _whole(lambda a, b: (F.pairwise_distance(a, b, p=p), F.pairwise_distance(a, b, p, 1e-3, True)), a, b,
           exact=False)
    _whole(lambda a, b: torch.dist(a, b, p), a, b, exact=False)
    _grads(lambda a, b: F.pairwise_distance(a, b, p=p), a, b)


def test_frac_heaviside():
    x = torch.tensor([-2.5, -0.0, 0.0, 0.3, 7.0, float("nan"), float("inf")])
    v = torch.tensor([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    _whole(lambda x, v: (torch.frac(x), x.frac(), torch.heaviside(x, v), x.heaviside(torch.tensor(9.0))), x, v)
    xi = torch.tensor([-3, 0, 2])
    _whole(lambda x: torch.heaviside(x, torch.tensor([7])), xi)
    _grads(lambda x: torch.frac(x * 3), R(6))


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0), (1, 2)])
def test_rot90(k, dims):
    x = R(2, 3, 4)
    _whole(lambda x: torch.rot90(x, k, dims), x)
    _whole(lambda x: x.rot90(k, dims) * 2, x.transpose(0, 2))


def test_aminmax():
    x = R(3, 5)
    x[1, 2] = float("nan")
    _whole(lambda x: torch.aminmax(x), x)
    _whole(lambda x: tuple(torch.aminmax(x, dim=1)), R(3, 5))
    _whole(lambda x: x.aminmax(dim=0, keepdim=True).max * 2, R(3, 5))


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (7, 3), (5, 4)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_(shape, wrap):
    def f(x):
        y = x * 2
        y.fill_diagonal_(-1.5, wrap=wrap)
        return y

    _whole(f, R(*shape))
    _grads(lambda x: (x * 2).fill_diagonal_(0.0, wrap) * 3, R(*shape))


@pytest.mark.parametrize("args", [(4, 4), (3, 5, 1), (5, 3, -1), (4, 6, -2), (0, 3), (3, 3, 9)])
def test_tril_triu_indices(args):
    _whole(lambda x: (torch.tril_indices(*args), torch.triu_indices(*args), x + 1), R(2))
    _whole(lambda x: x[tuple(torch.triu_indices(4, 4, 1))], R(4, 4))


def test_numpy_float64_passed_in_or_across_a_break():
    c = np.log(np.exp(1 - 1e-3) - 1)  # np.float64: a Python float to torch
    x = R(3)
    _whole(lambda x, c: x * c + 1, x, c)
    f = torchc.compile(lambda x, c: x * c + 1)
    _same(f(x, np.float64(2.5)), x * np.float64(2.5) + 1)  # another value: guarded, recompiled
    _same(f(x, c), x * c + 1)
