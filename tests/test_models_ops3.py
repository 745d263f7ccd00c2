"""Tensor ops that benchmarks/sweep_tiny.py (every transformers architecture from a tiny random
config) found breaking graphs, each compiled differentially against eager with graph/break
counts from torchc.explain (a silent fallback fails, tests/conftest.py): scatter_/scatter_add_
in place (MoE routers' group masks, GroupViT's hard softmax), div with rounding_mode
(JetMoE, MaskFormer), Tensor.tile/torch.tile (DINOv3, SAM3), torch.scalar_tensor (CPM-Ant),
torch.as_tensor (TAPAS), torch.linalg.norm (OWL-ViT), torch.bucketize (Idefics3, SmolVLM).
Dtype, shape, strides and values must be eager's."""
import math

import pytest
import torch

import torchc


def _same(g, w, exact=True):
    if isinstance(w, (tuple, list)):
        assert type(g) is type(w) and len(g) == len(w)
        for a, b in zip(g, w):
            _same(a, b, exact)
        return
    if isinstance(w, dict):
        assert type(g) is type(w) and list(g) == list(w)
        for k in w:
            _same(g[k], w[k], exact)
        return
    if not isinstance(w, torch.Tensor):
        assert g == w
        return
    assert (g.dtype, g.shape) == (w.dtype, w.shape), (g.dtype, w.dtype, g.shape, w.shape)
    if g.numel() > 1:
        assert g.stride() == w.stride(), (g.stride(), w.stride())
    if exact:
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(g, w, equal_nan=True)


def _whole(fn, *args, exact=True, clone=False):
    """fn compiled whole (1 graph, 0 breaks) gives eager's result; clone: fn writes its args"""
    cp = (lambda a: [x.clone() if isinstance(x, torch.Tensor) else x for x in a]) if clone else (lambda a: a)
    want = fn(*cp(args))
    torchc.reset()
    ex = torchc.explain(fn)(*cp(args))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, want, exact)
    got = torchc.compile(fn)(*cp(args))
    _same(got, want, exact)
    return ex


# ---- scatter_ / scatter_add_ in place ------------------------------------------------------

def f_group_mask(scores, k):
    # MoE router: a mask of the top-k groups, written in place into zeros
    idx = torch.topk(scores, k=k, dim=-1, sorted=False)[1]
    mask = torch.zeros_like(scores)
    mask.scatter_(1, idx, 1)
    return scores.masked_fill(~mask.bool(), float("-inf")), mask


def f_hard_softmax(logits, dim):
    y_soft = logits.softmax(dim)
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = torch.zeros_like(logits, memory_format=torch.legacy_contiguous_format).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def f_scatter_src(x, idx):
    z = torch.zeros_like(x)
    r = z.scatter_(1, idx, x[:, : idx.shape[1]] * 2)
    return z + 1, r is z


def f_scatter_add(x, idx, src):
    z = x.clone()
    z.scatter_add_(0, idx, src)
    return z


def f_scatter_input(x, idx, src):
    x.scatter_(-1, idx, src)  # the caller's tensor is updated
    return x * 2


@pytest.mark.parametrize("shape,k", [((4, 6), 2), ((1, 1), 1), ((5, 8), 8), ((0, 4), 2)])
def test_scatter_inplace_group_mask(shape, k):
    torch.manual_seed(0)
    _whole(f_group_mask, torch.randn(shape), k)


@pytest.mark.parametrize("shape,dim", [((2, 3, 5), -1), ((2, 3, 5), 1), ((1, 7), 0)])
def test_scatter_inplace_hard_softmax(shape, dim):
    torch.manual_seed(1)
    _whole(f_hard_softmax, torch.randn(shape), dim, exact=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16])
def test_scatter_inplace_src(dtype):
    torch.manual_seed(2)
    x = (torch.randn(4, 6) * 10).to(dtype)
    idx = torch.stack([torch.randperm(6)[:3] for _ in range(4)])
    _whole(f_scatter_src, x, idx)


def test_scatter_add_inplace_duplicates_noncontiguous():
    torch.manual_seed(3)
    x = torch.randn(6, 5).t()  # non-contiguous target: keeps its strides
    idx = torch.randint(0, 5, (7, 6))
    src = torch.randn(7, 6)
    _whole(f_scatter_add, x, idx, src, exact=False)
    xi = torch.randint(-5, 5, (5, 4))
    _whole(f_scatter_add, xi, torch.randint(0, 5, (3, 4)), torch.randint(-9, 9, (3, 4)))


def test_scatter_inplace_updates_input():
    torch.manual_seed(4)
    x = torch.randn(3, 5)
    idx = torch.randint(0, 5, (3, 2))
    src = torch.randn(3, 2)
    a, b = x.clone(), x.clone()
    want = f_scatter_input(a, idx, src)
    torchc.reset()
    got = torchc.compile(f_scatter_input)(b, idx, src)
    _same(got, want)
    _same(b, a)


# ---- div(rounding_mode=) -------------------------------------------------------------------

def f_div(a, b, mode):
    return torch.div(a, b, rounding_mode=mode)


def f_floor_divide(a, b):
    return torch.floor_divide(a, b), a // b


def f_div_method(a, mode):
    return a.div(3, rounding_mode=mode), (a * 2).div_(-2.5, rounding_mode=mode) if a.is_floating_point() else a


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_div_rounding_float(mode, dtype):
    torch.manual_seed(5)
    a = (torch.randn(40, 37) * 50).to(dtype)
    b = (torch.randn(37) * 3).to(dtype)
    a[0, :3] = torch.tensor([float("inf"), float("nan"), -0.0], dtype=dtype)
    b[1] = 0.0
    _whole(f_div, a, b, mode)
    _whole(f_div, a, b * 0.7 + 0.1, mode)
    _whole(f_div, a, 2.7, mode)  # a scalar divisor: eager's CPU-scalar kernel
    _whole(f_div, a, 0.7, mode)
    _whole(f_div, a, torch.tensor(0.7), mode)  # a 0-d float32 tensor: one too
    _whole(f_div, a, torch.tensor(2.7, dtype=dtype), mode)
    _whole(f_div, a[0, 0] * 3, b, mode)  # a 0-d dividend
    _whole(f_div, a[1, 1] * 3, b[2], mode)  # both 0-d
    _whole(f_floor_divide, a, b)  # the same kernel as rounding_mode='floor'
    _whole(f_floor_divide, a, b[3])
    _whole(f_div, a.t(), -3, mode)
    _whole(f_div_method, a, mode)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_div_rounding_int(mode, dtype):
    a = torch.arange(-12, 13).to(dtype).view(5, 5) if dtype != torch.uint8 else torch.arange(25, dtype=dtype).view(5, 5)
    _whole(f_div, a, 4, mode)
    if dtype != torch.uint8:
        _whole(f_div, a, -3, mode)
    b = torch.tensor([3, 2, 7, 1, 5], dtype=dtype)  # a graph input divisor (checked for zeros)
    _whole(f_div, a, b, mode)
    _whole(f_div_method, a, mode)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_div_rounding_int_by_float_and_empty(mode):
    a = torch.arange(-6, 6)
    _whole(f_div, a, 2.5, mode)  # int / float -> float
    _whole(f_div, torch.empty(0, 3), torch.ones(3), mode)
    _whole(f_div, torch.tensor(7.5), torch.tensor(-2.0), mode)  # 0-d


# ---- tile ----------------------------------------------------------------------------------

def f_tile(x, dims):
    return x.tile(dims) + 1, torch.tile(x, dims) * 2


def f_tile_varargs(x):
    return x.tile(2, 1, 3)


@pytest.mark.parametrize("shape,dims", [((2, 3), (2, 2)), ((2, 3), (3,)), ((4,), (2, 3, 1)),
                                        ((2, 1, 3), (1, 4, 1)), ((0, 3), (2, 2)), ((2, 3), (0, 1)),
                                        ((), (3,)), ((2, 3), ())])
def test_tile(shape, dims):
    _whole(f_tile, torch.randn(shape), dims)


def test_tile_varargs_noncontiguous_int():
    _whole(f_tile_varargs, torch.arange(12).view(3, 4).t())


# ---- scalar_tensor / as_tensor -------------------------------------------------------------

def f_cpmant_mask(score, mask):
    score = torch.masked_fill(score, mask == 0, torch.scalar_tensor(float("-inf"), device=score.device, dtype=score.dtype))
    score = torch.softmax(score, dim=-1)
    return torch.masked_fill(score, mask == 0, torch.scalar_tensor(0, device=score.device, dtype=score.dtype))


def f_scalar_tensor(x):
    return x + torch.scalar_tensor(3), torch.scalar_tensor(True), torch.scalar_tensor(2, dtype=torch.int32)


def f_as_tensor(ids, n):
    a = torch.min(ids, torch.as_tensor(n - 1, device=ids.device))
    b = torch.as_tensor(ids, device=ids.device)
    c = torch.as_tensor(ids, dtype=torch.float32)
    return a, b is ids, c, torch.as_tensor([1.5, 2.0]), torch.as_tensor(2.5, dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scalar_tensor(dtype):
    torch.manual_seed(6)
    score = torch.randn(2, 3, 4).to(dtype)
    mask = torch.randint(0, 2, (2, 1, 4))
    mask[..., 0] = 1
    _whole(f_cpmant_mask, score, mask, exact=False)  # softmax: a reduction
    _whole(f_scalar_tensor, torch.randn(3).to(dtype))


def test_as_tensor():
    _whole(f_as_tensor, torch.randint(0, 20, (2, 5)), 10)


# ---- linalg.norm ---------------------------------------------------------------------------

def f_lnorm(x, ord, dim, keepdim):
    return x / torch.linalg.norm(x, ord=ord, dim=dim, keepdim=keepdim)


def f_lnorm_plain(x):
    return torch.linalg.norm(x), torch.linalg.norm(x, dim=(0, 1))


@pytest.mark.parametrize("ord,dim", [(None, -1), (2, -1), (1, 0), (float("inf"), 1), (None, None), (3, -1)])
def test_linalg_norm_vector(ord, dim):
    torch.manual_seed(7)
    x = torch.randn(4, 5, 6)
    if dim is None and ord is not None:
        x = torch.randn(7)
    _whole(f_lnorm, x, ord, dim, True, exact=False)
    _whole(f_lnorm, x.transpose(0, -1), ord, dim, True, exact=False)


def test_linalg_norm_frobenius_as_vector():
    torch.manual_seed(8)
    _whole(f_lnorm_plain, torch.randn(3, 4), exact=False)


@pytest.mark.allow_fallback
def test_linalg_norm_matrix_left_to_eager():
    x = torch.randn(3, 4)
    f = lambda x: torch.linalg.norm(x, ord=2) + 1  # noqa: E731 (spectral norm: eager's)
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(x), f(x))
    assert any("matrix norms" in str(r) for r in torchc.explain(f)(x).break_reasons)


# ---- bucketize -----------------------------------------------------------------------------

def f_bucketize(x, b, right, out_int32):
    return torch.bucketize(x, b, right=right, out_int32=out_int32)


def f_idefics_coords(step, n):
    h = torch.arange(n, dtype=torch.float32)
    frac = torch.clamp(h[None, :] * step[:, None], max=1.0 - 1e-6)
    boundaries = torch.arange(1 / 4, 1.0, 1 / 4)
    return torch.bucketize(frac, boundaries, right=True)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize(right, out_int32):
    b = torch.tensor([-1.0, 0.0, 0.0, 0.5, 2.0])
    x = torch.tensor([[-2.0, -1.0, 0.0, 0.25], [0.5, 2.0, 3.0, float("nan")], [float("inf"), float("-inf"), 1.0, -0.0]])
    _whole(f_bucketize, x, b, right, out_int32)
    _whole(f_bucketize, x.t(), b, right, out_int32)  # non-contiguous input: a contiguous result
    _whole(f_bucketize, torch.randint(-3, 4, (6,)), torch.tensor([-2, 0, 1, 3]), right, out_int32)
    _whole(f_bucketize, torch.randn(0, 3), b, right, out_int32)
    _whole(f_bucketize, torch.randn(4), torch.empty(0), right, out_int32)
    _whole(f_bucketize, torch.tensor(0.3), b, right, out_int32)


def test_bucketize_idefics_coords():
    _whole(f_idefics_coords, torch.tensor([1 / 3, 1 / 5]), 5)


# ---- dtype given as a Python type (transformers' cache: torch.tensor(0, dtype=int)) ---------

def f_dtype_types(x):
    a = torch.tensor(0, dtype=int)
    b = torch.zeros(2, 3, dtype=float)
    c = torch.ones(3, dtype=bool)
    return a + 1, b + x, c & (x[0] > 0), x.to(int), x.sum(dtype=float), torch.arange(3, dtype=float)


def test_dtype_as_python_type():
    torch.manual_seed(9)
    _whole(f_dtype_types, torch.randn(2, 3) * 5, exact=False)


# ---- item assignment to strided slices ------------------------------------------------------

def f_store(x, v, key):
    y = x * 1
    y[key] = v
    return y


def f_recompose(freq, section):
    # Qwen3-VL's interleaved M-RoPE: every 3rd frequency of the H and W rows written into T's
    freqs_thw = freq[0]
    for dim, offset in enumerate((1, 2), start=1):
        length = section[dim] * 3
        idx = slice(offset, length, 3)
        freqs_thw[..., idx] = freq[dim, ..., idx]
    return torch.cat((freqs_thw, freqs_thw), dim=-1), freq


def f_strided_view_inplace(x):
    y = x[:, ::2]
    y.mul_(2)
    z = x[1::3]
    z += 1
    return x


@pytest.mark.parametrize("shape,key,vshape", [
    ((4, 10), (Ellipsis, slice(1, 9, 3)), (3,)),
    ((4, 10), (Ellipsis, slice(1, 9, 3)), ()),
    ((4, 10), (slice(None, None, 2), slice(1, 5, 2)), (2, 2)),
    ((4, 10), (slice(None, None, 2), slice(1, 5, 2)), (2, 1)),
    ((5, 3), (slice(0, None, 4), 1), (2,)),
    ((4, 10), (Ellipsis, slice(9, None, 3)), (1,)),    # one element
    ((4, 10), (Ellipsis, slice(12, None, 3)), (0,)),   # none
    ((3, 4, 9), (1, slice(None), slice(2, 9, 2)), (4, 4)),
    ((7,), slice(None, None, 7), ()),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_store_strided_slice(shape, key, vshape, dtype):
    torch.manual_seed(10)
    x = (torch.randn(shape) * 5).to(dtype)
    v = (torch.randn(vshape) * 5).to(dtype)
    _whole(f_store, x, v, key)
    _whole(f_store, x, 3, key)


def test_store_strided_slice_noncontiguous_target():
    torch.manual_seed(11)
    x = torch.randn(10, 4).t()
    _whole(f_store, x, torch.randn(4, 3), (slice(None), slice(1, 9, 3)))


@pytest.mark.parametrize("section", [(2, 2, 2), (1, 3, 1), (0, 1, 2)])
def test_recompose_frequencies_sibling_views(section):
    torch.manual_seed(12)
    freq = torch.randn(3, 2, 5, 3 * max(section) + 1)
    _whole(f_recompose, freq.clone(), section, clone=True)


def test_strided_view_inplace_updates_input():
    torch.manual_seed(13)
    x = torch.randn(6, 5)
    a, b = x.clone(), x.clone()
    want = f_strided_view_inplace(a)
    torchc.reset()
    ex = torchc.explain(f_strided_view_inplace)(x.clone())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    got = torchc.compile(f_strided_view_inplace)(b)
    _same(got, want)
    _same(b, a)
    assert got is b


def f_sibling_overlap(b):
    x = b[0:2]
    x[...] = b[1:3]  # dense views sharing memory: eager raises
    return b


@pytest.mark.allow_fallback
def test_sibling_views_overlapping_left_to_eager():
    b = torch.randn(3, 4)
    with pytest.raises(RuntimeError) as e_eager:
        f_sibling_overlap(b.clone())
    torchc.reset()
    with pytest.raises(RuntimeError) as e_c:
        torchc.compile(f_sibling_overlap)(b.clone())
    assert str(e_c.value) == str(e_eager.value)


# ---- nn.TransformerEncoderLayer's inference fast path (torch._transformer_encoder_layer_fwd) --

@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("shape", [(2, 5, 8), (1, 1, 8), (3, 7, 8)])
def test_transformer_encoder_layer_fast_path(norm_first, activation, shape):
    torch.manual_seed(14)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=norm_first,
                                             activation=activation, dropout=0.1).eval()
    with torch.no_grad():
        _whole(layer, torch.randn(shape), exact=False)


def test_transformer_encoder_stack_fast_path():
    torch.manual_seed(15)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False).eval()
    with torch.no_grad():
        _whole(enc, torch.randn(2, 6, 16), exact=False)


def test_transformer_encoder_layer_with_mask_captured():
    """a key padding mask: ATen's math path, written out (torchc/_polyfills.py); was left to eager"""
    torch.manual_seed(16)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    x = torch.randn(2, 5, 8)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[:, -1] = True
    f = lambda x, m: layer(x, src_key_padding_mask=m)  # noqa: E731
    with torch.no_grad():
        torchc.reset()
        torch.testing.assert_close(torchc.compile(f)(x, mask), f(x, mask))
        ex = torchc.explain(f)(x, mask)
        assert ex.graph_count == 1 and ex.graph_break_count == 0 and not ex.eager_frames, ex.break_reasons


# ---- ModelOutput keys()/values()/items() (SegFormer) --------------------------------------

tf = pytest.importorskip("transformers")


def f_record_items(x):
    out = tf.modeling_outputs.SemanticSegmenterOutput(logits=x * 2, hidden_states=(x, x + 1))
    ks = list(out.keys())
    vals = list(out.values())
    return ks, {k: v for k, v in out.items() if k != "hidden_states"}, vals[0] + 1, len(vals)


def test_model_output_items():
    _whole(f_record_items, torch.randn(2, 3))


# ---- Tensor.where(condition, other): self is the input (Longformer/LED) -----------------------

def f_where_method(x, m, y):
    a = torch.full_like(x, -float("inf")).where(m, x)
    b = m.where(y > 0, m.logical_not())  # bool self and bool condition: which is which matters
    return a, b, x.where(m, 0.5), torch.where(m, x, y)


def test_tensor_where_method():
    torch.manual_seed(17)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    m = torch.rand(3, 4) > 0.5
    _whole(f_where_method, x, m, y)


# ---- conv_transpose{1,2,3}d: a stride-1 convolution of the spread-out input (UnivNet, U-Nets) --

def f_convt(x, w, b, stride, padding, output_padding, groups, dilation, fn):
    return fn(x, w, b, stride, padding, output_padding, groups, dilation) * 1


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [
    (1, 0, 0, 1, 1), (2, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 1, 2, 1), (1, 2, 0, 1, 2),
    (2, 3, 0, 1, 1),  # padding past dilation * (k - 1): cropped
    (2, 0, 1, 4, 2),
])
def test_conv_transpose(nd, stride, padding, output_padding, groups, dilation):
    torch.manual_seed(18)
    fn = [None, torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d,
          torch.nn.functional.conv_transpose3d][nd]
    size = {1: (2, 4, 7), 2: (2, 4, 5, 6), 3: (1, 4, 3, 4, 5)}[nd]
    x = torch.randn(size)
    w = torch.randn((4, 8 // groups) + (3,) * nd)
    b = torch.randn(8)
    _whole(f_convt, x, w, b, stride, padding, output_padding, groups, dilation, fn, exact=False)
    _whole(f_convt, x, w, None, stride, padding, output_padding, groups, dilation, fn, exact=False)


def test_conv_transpose_modules():
    torch.manual_seed(19)
    m = torch.nn.Sequential(torch.nn.ConvTranspose2d(3, 6, 4, stride=2, padding=1), torch.nn.ReLU(),
                            torch.nn.ConvTranspose2d(6, 2, (3, 1), stride=(2, 3), groups=2))
    up = torch.nn.ConvTranspose1d(5, 3, 8, stride=4, padding=2).eval()  # UnivNet's upsampler shape
    _whole(m, torch.randn(2, 3, 5, 7), exact=False)
    _whole(up, torch.randn(2, 5, 9), exact=False)


def test_conv_transpose_gradients():
    torch.manual_seed(20)
    up = torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    f = lambda x: up(x).square().sum()  # noqa: E731
    f(x).backward()
    gx, gw = x.grad.clone(), up.weight.grad.clone()
    x.grad = None
    up.weight.grad = None
    torchc.reset()
    torchc.compile(f)(x).backward()
    torch.testing.assert_close(x.grad, gx)
    torch.testing.assert_close(up.weight.grad, gw)


# ---- torch.tensor / as_tensor of nested lists (Mask2Former's spatial shapes) ------------------

def f_nested(x):
    shapes = [(x.shape[0], x.shape[1]), (x.shape[1], 2)]
    a = torch.as_tensor(shapes, dtype=torch.long)
    b = torch.tensor([[shape[1], shape[0]] for shape in shapes])
    c = torch.tensor([[1.5, 2], [3, 4]])
    d = torch.tensor([[True], [False]])
    e = torch.tensor([[], []])
    f = torch.tensor(((1, 2), (3, 4)), dtype=torch.float16)
    return a * 2, b, c, d, e, f, x.sum() + a.sum()


def test_tensor_nested_lists():
    _whole(f_nested, torch.ones(3, 5), exact=False)


@pytest.mark.allow_fallback
def test_tensor_ragged_left_to_eager():
    f = lambda x: torch.tensor([[1, 2], [3]]) + x  # noqa: E731
    with pytest.raises(ValueError):
        f(torch.ones(2))
    torchc.reset()
    with pytest.raises(ValueError):
        torchc.compile(f)(torch.ones(2))
