"""Captures found breaking the tiny transformers sweep (issue 21), each compiled whole (1 graph,
0 breaks from torchc.explain: a silent fallback fails, tests/conftest.py) and compared with
eager (dtype, shape, strides, values; gradients where differentiable):
- x[bool_mask] = v with v a tensor the same at every selected position (t5gemma2's
  `embeds[ids == token] = embedding`): where(mask, v, x); one value per selected element (a
  data-dependent count) still breaks, with its reason; x[mask] += v;
- torch.kthvalue, median / nanmedian with dim (values and indices: ATen's own selection, so
  eager's index among ties and NaN), quantile / nanquantile of a float q;
- torch.ops.aten.index(x, [tensors]) as indexing (TransformGetItemToIndex under torch.vmap,
  transformers' mask functions)."""
import pytest
import torch

import torchc

from test_models_ops5 import R, _grads, _same, _whole


def _breaks(fn, *args, reason):
    """fn runs as eager does, with a graph break whose reason contains `reason`"""
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert any(reason in r for r in ex.break_reasons), ex.break_reasons
    _same(ex.result, want)


# ---- x[mask] = v -----------------------------------------------------------------------------

def _store(x, m, v):
    x = x.clone()
    x[m] = v
    return x


MASKS = {
    "lead2": ((2, 3, 4), (2, 3)),
    "lead1": ((3, 5), (3,)),
    "full": ((2, 3), (2, 3)),
    "empty": ((0, 4), (0,)),
    "one": ((1, 1, 1), (1,)),
    "scalar_mask": ((2, 3), ()),
}


@pytest.mark.parametrize("case", sorted(MASKS))
@pytest.mark.parametrize("vshape", ["row", "lead1", "one", "number", "zero_d"])
def test_masked_store_broadcast_value(case, vshape):
    xs, ms = MASKS[case]
    x = R(*xs)
    m = R(*ms) > 0 if ms else torch.tensor(True)
    rest = xs[len(ms):]
    v = {"row": R(*rest[-1:], seed=3) if rest else R(seed=3), "lead1": R(1, 1, *rest, seed=4),
         "one": R(1, seed=5), "number": 2.5, "zero_d": R(seed=6)}[vshape]
    _whole(_store, x, m, v)


def test_masked_store_embedding_rows_noncontiguous_bf16():
    emb = R(4, 2, 8).transpose(0, 1).to(torch.bfloat16)  # [2, 4, 8] non-contiguous
    ids = torch.tensor([[3, 1, 3, 0], [1, 1, 2, 3]])
    row = R(8, seed=9)
    _whole(lambda e, ids, r: _store(e, ids == 3, r.to(e.dtype)), emb, ids, row)
    _whole(lambda e, ids, r: _store(e, ids == 3, r.to(e.dtype)[None, :]), emb, ids, row)


def test_masked_store_broadcast_inner_dims():
    x = R(2, 3, 4, 5)
    m = R(2, 3, seed=1) > 0
    _whole(_store, x, m, R(4, 1, seed=2))
    _whole(_store, x, m, R(1, 5, seed=2))
    _whole(_store, x, m, R(1, 1, 4, 5, seed=2))


def test_masked_store_grads():
    m = R(3, 4, seed=1) > 0
    _grads(lambda x, v: _store(x * 1, m, v * 2), R(3, 4, 5), R(5, seed=2))


def test_masked_store_into_input_seen_by_caller():
    def f(x, m, v):
        x[m] = v
        return x.sum(-1)
    x = R(3, 4)
    m = R(3, seed=1) > 0
    v = R(4, seed=2)
    xe = x.clone()
    want = f(xe, m, v)
    torchc.reset()
    xc = x.clone()
    ex = torchc.explain(f)(xc, m, v)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, want)
    _same(xc, xe)


@pytest.mark.allow_fallback
def test_masked_store_per_element_values_breaks():
    # one value per selected element: where each goes depends on the mask's values
    m = torch.tensor([True, False, True])
    _breaks(_store, R(3, 4), m, R(2, 4), reason="value per selected element")


def _store2(x, m, v):
    y = x * 2
    y[m] = v
    return y


@pytest.mark.allow_fallback
@pytest.mark.parametrize("v", [R(4).double(), pytest.param(R(3), marks=pytest.mark.no_compile),
                               pytest.param(R(2, 1, 4), marks=pytest.mark.no_compile)])
def test_masked_store_eager_raises(v):
    # another dtype (index_put_ refuses it), a shape that does not broadcast: eager raises
    # (the shape mismatch is found while tracing: the frame runs eagerly, compiling nothing)
    x = R(3, 4)
    m = torch.tensor([True, False, True])
    with pytest.raises(RuntimeError):
        _store2(x, m, v)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(_store2)(x, m, v)


def test_masked_fill_inplace_tensor_value():
    def f(x, m, v):
        x = x * 1
        x.masked_fill_(m, v)
        return x
    _whole(f, R(3, 4), R(4, seed=1) > 0, R(seed=2))
    _whole(f, R(3, 4).t(), R(4, 1, seed=1) > 0, 1.5)


# ---- kthvalue / median / nanmedian with dim -------------------------------------------------

def _ties(*s, seed=0, nan=False):
    """small integers as floats: many equal values; NaN at some positions"""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 3, s, generator=g).float()
    if nan and x.numel():
        x.view(-1)[::5] = float("nan")
    return x


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -1), ((4, 1), 1),
                                       ((1, 6), 1), ((3, 0), 0), ((), 0)])
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_median_ties(shape, dim, nan, keepdim):
    x = _ties(*shape, nan=nan)
    n = x.shape[dim] if x.dim() else 1
    for k in sorted({1, (n + 1) // 2, n}):
        _whole(lambda x: torch.kthvalue(x, k, dim, keepdim), x)
    if n:
        _whole(lambda x: torch.median(x, dim, keepdim), x)
        _whole(lambda x: x.nanmedian(dim=dim, keepdim=keepdim), x)


def test_kthvalue_median_noncontiguous_and_ints():
    x = _ties(4, 5, 3, seed=1, nan=True).permute(2, 0, 1)
    _whole(lambda x: (x.kthvalue(2, dim=1), torch.median(x, 2, True), torch.nanmedian(x, 0)), x)
    xi = torch.randint(-3, 3, (5, 4), generator=torch.Generator().manual_seed(2)).t()
    _whole(lambda x: (torch.kthvalue(x, 3, 1), x.median(dim=0), torch.nanmedian(x, 1, keepdim=True)), xi)
    _whole(lambda x: torch.kthvalue(x * 2, 2).values + torch.median(x, -1).values, R(3, 6).to(torch.float64))


def test_median_all_elements_still_polyfilled():
    x = _ties(3, 5, nan=True)
    _whole(lambda x: (torch.median(x), x.nanmedian(), torch.median(x, 1)), x)


def test_kthvalue_median_grads():
    _grads(lambda x: torch.kthvalue(x, 2, 1).values * 3 + torch.median(x, 1).values, R(3, 5))
    _grads(lambda x: torch.nanmedian(x, 0, keepdim=True).values.exp(), R(4, 3))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("k", [0, 6])
def test_kthvalue_out_of_range_raises_as_eager(k):
    x = R(3, 5)
    with pytest.raises(RuntimeError):
        torch.kthvalue(x, k, 1)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(lambda x: torch.kthvalue(x, k, 1))(x)


# ---- quantile / nanquantile ---------------------------------------------------------------

@pytest.mark.parametrize("shape,dim,keepdim", [((7,), None, False), ((3, 5), 1, False), ((3, 5), 0, True),
                                               ((2, 3, 4), None, True), ((2, 3, 4), -2, False), ((4, 1), 1, True),
                                               ((1,), None, False)])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(shape, dim, keepdim, interpolation):
    x = R(*shape)
    xn = x.clone()
    xn.view(-1)[::3] = float("nan")
    # linear / midpoint end in lerp, whose CPU kernels fuse its multiply-add (one rounding):
    # the graph's lerp rounds twice, within an ulp of eager's
    exact = interpolation not in ("linear", "midpoint")
    tol = dict(rtol=3e-7, atol=1e-7)
    for q in (0.0, 0.3, 0.5, 1.0):
        _whole(lambda x: torch.quantile(x, q, dim, keepdim, interpolation=interpolation), x, exact=exact, tol=tol)
        _whole(lambda x: (x.quantile(q, dim=dim, keepdim=keepdim, interpolation=interpolation),
                          torch.nanquantile(x, q, dim, keepdim, interpolation=interpolation)), xn,
               exact=exact, tol=tol)


def test_quantile_noncontiguous_double_and_grads():
    x = R(5, 4).double().t()
    _whole(lambda x: torch.quantile(x, 0.25, 1) + torch.nanquantile(x, 0.9, 0).sum(), x, exact=False,
           tol=dict(rtol=1e-12, atol=1e-12))
    _grads(lambda x: torch.quantile(x, 0.4, 1) * 2, R(3, 6))


# ---- aten.index as indexing (under vmap) ------------------------------------------------------

def test_aten_index_as_indexing():
    x = R(5, 4, 3).permute(1, 0, 2)
    i = torch.tensor([0, 3, 1])
    j = torch.tensor([[1], [2]])
    _whole(lambda x: torch.ops.aten.index(x, [i]) * 1, x)
    _whole(lambda x: torch.ops.aten.index.Tensor(x, [None, i]) + 1, x)
    _whole(lambda x: torch.ops.aten.index(x, [j, None, torch.tensor([0, 2, 1])]) + 1, x)


def test_aten_index_inside_vmap_mask_function():
    # transformers' sdpa_mask: a mask function vmapped over (batch, q, kv) indices with
    # TransformGetItemToIndex on, so pad[b, kv] is torch.ops.aten.index(pad, [b, kv])
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    def fn(pad):
        def inner(b, q, kv):
            return (torch.div(q, 2, rounding_mode="trunc") >= torch.div(kv, 2, rounding_mode="trunc")) & pad[b, kv]
        f = torch.vmap(torch.vmap(torch.vmap(inner, in_dims=(None, None, 0)), in_dims=(None, 0, None)),
                       in_dims=(0, None, None))
        with TransformGetItemToIndex():
            return f(torch.arange(pad.shape[0]), torch.arange(5), torch.arange(pad.shape[1]))

    pad = torch.tensor([[True, True, True, True, False], [True, True, False, False, False]])
    _whole(fn, pad)


@pytest.mark.no_compile
def test_masked_update_in_place_is_whole():
    # y[m] += v with v the same for every selected row: captured as where(m, y + v, y)
    # (it was a break: the read y[m] has as many rows as the mask has True values)
    def f(x, m, v):
        y = x * 2
        y[m] += v
        return y
    _whole(f, R(3, 4), torch.tensor([True, False, True]), R(4))


# ---- lerp (quantile's interpolation) ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_lerp_half_is_eagers(dtype):
    # ATen: in float32, |w| < 0.5 ? a + w (b - a) : b - (b - a)(1 - w), rounded once to dtype
    a, b = R(257, dtype=dtype, seed=1), R(257, dtype=dtype, seed=2)
    w = (torch.rand(257, generator=torch.Generator().manual_seed(3)) * 1.6 - 0.3).to(dtype)
    _whole(lambda a, b, w: torch.lerp(a, b, w), a, b, w)
    for s in (0.25, 0.75, -1.0):
        _whole(lambda a, b: torch.lerp(a, b, s), a, b)


def test_lerp_float32_near_eager_and_exact_ends():
    a, b = R(5, 7, seed=1), R(7, seed=2)  # broadcast
    w = torch.rand(5, 7, generator=torch.Generator().manual_seed(3)) * 1.6 - 0.3
    _whole(lambda a, b, w: torch.lerp(a, b, w), a, b, w, exact=False, tol=dict(rtol=2e-7, atol=2e-7))
    # w = 0 gives a, w = 1 gives b exactly (the branch eager takes for each)
    _whole(lambda a, b: (torch.lerp(a, b, 0.0), torch.lerp(a, b, 1.0), a.t().lerp(b[:5], 1.0)), a, b)


# ---- associative_scan (generic mode: mamba's selective scan under compile) ----------------------

from torch._higher_order_ops.associative_scan import associative_scan as _assoc  # noqa: E402


def _ssm(l, r):
    return l[0] * r[0], r[0] * l[1] + r[1]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 16])
@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_generic(n, reverse):
    a = torch.rand(2, 3, n, 4, generator=torch.Generator().manual_seed(n))
    b = R(2, 3, n, 4)
    _whole(lambda a, b: _assoc(_ssm, (a, b), dim=2, reverse=reverse, combine_mode="generic"), a, b)
    _whole(lambda b: _assoc(lambda x, y: x + y, b.transpose(0, 2), dim=0, reverse=reverse,
                            combine_mode="generic") * 1, b)
    _whole(lambda b: _assoc(lambda l, r: [torch.maximum(l[0], r[0])], [b], dim=-2, combine_mode="generic")[0] * 1, b)


@pytest.mark.allow_fallback
def test_associative_scan_pointwise_mode_on_cpu_raises_as_eager():
    b = R(5, 3)
    with pytest.raises(ValueError):
        _assoc(lambda x, y: x + y, b, dim=0)
    torchc.reset()
    with pytest.raises(ValueError):
        torchc.compile(lambda b: _assoc(lambda x, y: x + y, b * 2, dim=0))(b)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("case", ["value_1d", "value_4", "byte_mask"])
def test_masked_fill_raises_as_eager(case):
    # eager: masked_fill only takes a 0-d value tensor and a bool mask
    def f(x, m, v):
        y = x * 2
        y.masked_fill_(m, v)
        return y
    x = R(3, 4)
    m = R(4, seed=1) > 0
    v = {"value_1d": R(1), "value_4": R(4), "byte_mask": R()}[case]
    if case == "byte_mask":
        m = m.to(torch.uint8)
    with pytest.raises(RuntimeError):
        f(x, m, v)
    torchc.reset()
    with pytest.raises(RuntimeError):
        torchc.compile(f)(x, m, v)
