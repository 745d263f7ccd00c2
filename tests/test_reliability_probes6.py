"""Regressions found by probing (round 6): op sweeps over dtypes (bool, every int and float
type, complex), special values (NaN, +-inf, -0.0, integer extremes) and layouts (channels-last,
transposed, permuted, sliced, expanded, 0-stride, size-1, empty), eager against torchc.compile.
Each test is the minimal program that gave a different answer, dtype, stride or exception
under torchc than in eager, and fails on the build before its fix."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from test_reliability_probes5 import _raises_same


def _same(got, want, strides=True, exact=True):
    assert type(got) is type(want) or (isinstance(got, tuple) and isinstance(want, tuple))
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
        if strides and want.numel() > 1:
            ks = [s for s, n in zip(want.stride(), want.shape) if n != 1]
            gs = [s for s, n in zip(got.stride(), got.shape) if n != 1]
            assert gs == ks, (got.stride(), want.stride())
        if exact or not want.is_floating_point():
            assert torch.equal(got.nan_to_num(1234.5), want.nan_to_num(1234.5)), (got, want)
        else:
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True), (got, want)
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, strides, exact)
    else:
        assert got == want


def _compiled():
    return torchc._C.stats()["compiles"] >= 1


def _layouts(shape):
    base = torch.arange(float(torch.Size(shape).numel())).reshape(shape).sin() * 4
    out = {"contig": base, "T": base.transpose(1, -1), "perm": base.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
           if len(shape) == 4 else base.transpose(0, 1)}
    if len(shape) == 4:
        out["cl"] = base.contiguous(memory_format=torch.channels_last)
        out["perm2"] = base.permute(3, 0, 2, 1)
    return out


def _check_layout(op, x, exact=True):
    """op compiled (fresh) against eager on x: values, dtype, shape and strides"""
    torchc.reset()
    g = torchc.compile(op)
    _same(g(x), op(x), exact=exact)
    assert _compiled()


# ---- chunk of an empty dim ----------------------------------------------------------------
# x.chunk(3, dim) of a size-0 dim: eager returns 3 empty tensors, the capture returned one.

@pytest.mark.parametrize("n", [1, 3, 5])
def test_chunk_of_an_empty_dim_gives_chunks_tensors(n):
    f = lambda x: [t * 2 for t in x.chunk(n, 1)] + [t + 1 for t in x.split(2, 1)]   # noqa: E731
    g = torchc.compile(f)
    x = torch.ones(4, 0, 3)
    _same(g(x), f(x))
    assert _compiled()


# ---- non-constant F.pad of a rank eager refuses -------------------------------------------
# F.pad(x4d, (1, 1), mode="replicate"): eager raises NotImplementedError (2 pads need a 2-d or
# 3-d input); the capture padded the last dim.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("nd,np_", [(4, 2), (5, 4), (2, 4), (3, 6), (5, 2)])
def test_non_constant_pad_rank_eager_refuses_raises(mode, nd, np_):
    f = lambda x: F.pad(x * 2, (1,) * np_, mode=mode)   # noqa: E731
    g = torchc.compile(f)
    ok = torch.ones(*([3] * (np_ // 2 + 1)))
    _same(g(ok), f(ok))
    assert _compiled()
    _raises_same(f, (torch.ones(*([3] * nd)),), g)


# ---- pooling / upsampling of an empty non-batch dim ---------------------------------------
# max_pool2d / avg_pool2d / adaptive pools / interpolate of a [4, 0, 5, 3] input: eager raises
# ("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size", "Non-empty 4D data
# tensor expected"); the capture returned an empty result.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("op", [lambda x: F.max_pool2d(x, 2), lambda x: F.avg_pool2d(x, 2),
                                lambda x: F.adaptive_avg_pool2d(x, 1), lambda x: F.adaptive_max_pool2d(x, 1),
                                lambda x: F.interpolate(x, scale_factor=2), lambda x: F.max_pool1d(x.flatten(2), 2),
                                lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")])
@pytest.mark.parametrize("shape", [(4, 0, 4, 4), (0, 2, 4, 4), (2, 2, 0, 4)])
def test_pool_of_an_empty_non_batch_dim_raises(op, shape):
    f = lambda x: op(x * 2)   # noqa: E731
    g = torchc.compile(f)
    ok = torch.ones(2, 3, 4, 4)
    _same(g(ok), f(ok))
    assert _compiled()
    x = torch.ones(shape)
    try:
        want = f(x)
    except RuntimeError:
        _raises_same(f, (x,), g)
    else:   # an empty batch: eager runs
        _same(g(x), want)


# ---- output strides of pooling, upsampling and normalization ------------------------------
# eager's pooling, upsampling, batch_norm and group_norm kernels allocate the result in the
# input's suggested memory format (contiguous unless channels-last); the capture's pointwise
# decompositions kept a transposed input's strides (so .view() of the result raised where
# eager ran) and made a channels-last input's result contiguous.

_NORMS = {
    "max_pool2d": lambda x: F.max_pool2d(x, 2),
    "avg_pool2d": lambda x: F.avg_pool2d(x, 2),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (2, 1)),
    "adaptive_max_pool2d": lambda x: F.adaptive_max_pool2d(x, 1),
    "interp_nearest": lambda x: F.interpolate(x, scale_factor=2),
    "interp_bilinear": lambda x: F.interpolate(x, size=(5, 7), mode="bilinear"),
    "batch_norm": lambda x: F.batch_norm(x, None, None, training=True),
    "batch_norm_eval": lambda x: F.batch_norm(x, torch.zeros(x.shape[1]), torch.ones(x.shape[1])),
    "group_norm": lambda x: F.group_norm(x, 2),
}


@pytest.mark.parametrize("name", sorted(_NORMS))
@pytest.mark.parametrize("layout", ["contig", "T", "perm", "cl", "perm2"])
def test_pool_and_norm_output_strides_follow_eager(name, layout):
    _check_layout(_NORMS[name], _layouts((4, 6, 4, 6))[layout], exact=False)


@pytest.mark.parametrize("op", [lambda x: F.max_pool1d(x, 2), lambda x: F.avg_pool1d(x, 2),
                                lambda x: F.adaptive_avg_pool1d(x, 2), lambda x: F.batch_norm(x, None, None, training=True),
                                lambda x: F.interpolate(x, scale_factor=2)])
@pytest.mark.parametrize("layout", ["contig", "T"])
def test_pool1d_output_strides_follow_eager(op, layout):
    base = torch.arange(120.0).reshape(4, 5, 6).cos()
    x = base if layout == "contig" else base.transpose(1, 2).contiguous().transpose(1, 2)
    _check_layout(op, x, exact=False)


def test_max_pool2d_result_of_a_transposed_input_can_be_viewed():
    f = lambda x: F.max_pool2d(x.transpose(2, 3), 2)   # noqa: E731
    g = torchc.compile(f)
    x = torch.randn(2, 3, 8, 6)
    want, got = f(x), g(x)
    assert torch.equal(got.view(-1), want.view(-1))   # eager's result is contiguous
    assert _compiled()


# ---- group_norm of a 16-bit input ---------------------------------------------------------
# eager computes group_norm of a bf16/f16 input in f32 and rounds once; the capture rounded
# after every op (results off by up to 6 bf16 ulps).

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm_half_computes_in_f32(dtype, affine):
    torch.manual_seed(0)
    x = (torch.randn(4, 6, 5, 3) * 4).round().to(dtype)
    w = torch.randn(6).to(dtype) if affine else None
    b = torch.randn(6).to(dtype) if affine else None
    f = lambda x, w, b: F.group_norm(x, 2, w, b)   # noqa: E731
    g = torchc.compile(f)
    want, got = f(x, w, b), g(x, w, b)
    assert got.dtype == want.dtype
    ref = f(x.float(), None if w is None else w.float(), None if b is None else b.float()).to(dtype)
    # eager rounds once from f32: equal to the f32 result rounded, up to one ulp
    assert torch.allclose(got.float(), ref.float(), rtol=8e-3, atol=1e-2)
    assert torch.allclose(got.float(), want.float(), rtol=8e-3, atol=1e-2)
    assert _compiled()


# ---- batch_norm training of a 16-bit input and parameters ---------------------------------
# eager keeps the batch mean and 1/std in the input's dtype when the parameters are of it
# (save_mean / save_invstd) and normalizes with those rounded values; the capture used f32.

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_batch_norm_training_half_rounds_statistics(dtype):
    torch.manual_seed(0)
    m = torch.nn.BatchNorm2d(6).to(dtype)
    g = torchc.compile(lambda m, x: m(x))
    x = (torch.randn(1, 6, 1, 3) * 4).round().to(dtype)
    m2 = torch.nn.BatchNorm2d(6).to(dtype)
    want, got = m2(x), g(m, x)
    _same(got, want)
    _same(m.running_mean, m2.running_mean)
    assert _compiled()


# ---- sum(dtype=) casts the elements first -------------------------------------------------
# x.sum(dtype=torch.float16) of an int16/int32/int64 tensor: eager casts each element to f16
# (32767 -> 32768, int32 max -> inf) and then sums; the capture summed the exact integers.

@pytest.mark.parametrize("src", [torch.int16, torch.int32, torch.int64, torch.float32])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int8])
def test_sum_with_dtype_casts_each_element_first(src, dtype):
    vals = [0, 1, -1, 2, -3, 7, -7, 5, 100, -100]
    big = {torch.int16: [32767, -32768], torch.int32: [2**31 - 1, -2**31], torch.int64: [2**31 - 1, -2**31],
           torch.float32: [32767.0, 301.0]}[src]
    x = torch.tensor(vals + big, dtype=src)
    f = lambda x: (x.sum(dtype=dtype), x.reshape(3, 4).sum(1, dtype=dtype), x.prod(dtype=dtype),   # noqa: E731
                   x[:10].float().mean(dtype=torch.float16), (x[:10] * 1000).float().mean(dtype=torch.float16))
    g = torchc.compile(f)
    _same(g(x), f(x))
    assert _compiled()


# ---- bucketize / searchsorted with NaN or unsorted boundaries -----------------------------
# eager runs a binary search; the capture counted the boundaries b with !(b >= x), the same
# only for sorted boundaries without NaN: searchsorted([-1, -0., 0, 2, nan], 0.) is 1 in eager
# (the count: 2), of 2. is 5 (the count: 4).

_BOUNDS = [[-1.0, -0.0, 0.0, 2.0, float("nan")], [3.0, 1.0, 2.0, 0.0, 5.0], [float("nan")] * 3,
           [0.0, 1.0, 1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0], [1.0], []]
_XS = [0.0, -0.0, float("nan"), 2.0, 5.0, -5.0, 1.0, 16.0, 1.5, 3.0, float("inf"), -float("inf")]


@pytest.mark.parametrize("bounds", range(len(_BOUNDS)))
@pytest.mark.parametrize("right", [False, True])
def test_bucketize_is_eagers_binary_search(bounds, right):
    s = torch.tensor(_BOUNDS[bounds])
    x = torch.tensor(_XS).reshape(3, 4)
    f = lambda x, s: (torch.bucketize(x, s, right=right), torch.bucketize(x.long(), s, right=right, out_int32=True),   # noqa: E731
                      torch.searchsorted(s, x.flatten(), right=right))
    g = torchc.compile(f)
    _same(g(x, s), f(x, s))
    assert _compiled()


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_rows_is_eagers_binary_search(right):
    s = torch.tensor([[-1.0, -0.0, 0.0, 2.0, float("nan")], [3.0, 1.0, 2.0, 0.0, 5.0], [0.0, 1.0, 2.0, 3.0, 4.0]])
    x = torch.tensor(_XS).reshape(3, 4)
    f = lambda s, x: torch.searchsorted(s, x, right=right)   # noqa: E731
    g = torchc.compile(f)
    _same(g(s, x), f(s, x))
    assert _compiled()


# ---- f16 ** +-0.5 on the CPU --------------------------------------------------------------
# eager's f16 pow calls std::pow: (-inf) ** 0.5 = inf, (-0.) ** 0.5 = +0, (-inf) ** -0.5 = 0,
# (-0.) ** -0.5 = inf; codegen's sqrt/rsqrt gave nan, -0, nan, -inf (right for f32/bf16,
# whose eager kernels take sqrt/rsqrt).

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_half_pow_half_exponent_special_values(dtype):
    x = torch.tensor([-float("inf"), float("inf"), -0.0, 0.0, 4.0, -1.0, float("nan"), 2.0], dtype=dtype)
    sign = lambda r: r.signbit() & ~r.isnan()   # noqa: E731 - a NaN's sign bit is noise
    f = lambda x: (x ** 0.5, torch.pow(x, -0.5), sign(x.pow(0.5)), sign(x ** -0.5), x ** 1.5)   # noqa: E731
    g = torchc.compile(f)
    _same(g(x), f(x))
    assert _compiled()


# ---- addcmul / addcdiv ---------------------------------------------------------------------
# (1) integer tensors with value=2: eager converts the value to their type (2.5 -> 2) and keeps
# the integer dtype; the capture multiplied by a float scalar (an f32 result). (2) bf16/f16:
# eager computes self + value * t1 * t2 in f32 and rounds once; the capture rounded the product
# first (2 ulps off). (3) eager's order: (value * t1) * t2, not value * (t1 * t2).

@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8, torch.float32,
                                   torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("value", [1, 2, -3, 2.5, 0.5, True])
def test_addcmul_addcdiv_follow_eagers_kernel(dtype, value):
    fl = dtype.is_floating_point
    a = torch.arange(-10, 14).reshape(4, 6).to(dtype) * (0.7 if fl else 1)
    b = torch.linspace(-3, 3, 6).to(dtype) if fl else torch.arange(6).to(dtype)
    c = (torch.arange(4).reshape(4, 1) + 1).to(dtype) * (1.3 if fl else 1)
    f = lambda a, b, c: (torch.addcmul(a, b, c, value=value), a.addcmul(b, c),   # noqa: E731
                         torch.addcdiv(a, b, c, value=value) if fl else a * 1)
    g = torchc.compile(f)
    # f32/f64: eager's vector kernel may contract into a fused multiply-add (an ulp)
    _same(g(a, b, c), f(a, b, c), exact=dtype not in (torch.float32, torch.float64))
    assert _compiled()


@pytest.mark.allow_fallback
def test_addcmul_float_value_out_of_an_int_range_raises():
    f = lambda a: torch.addcmul(a * 1, a, a, value=-2.5)   # noqa: E731
    g = torchc.compile(f)
    _same(g(torch.arange(4)), f(torch.arange(4)))
    assert _compiled()
    _raises_same(f, (torch.arange(4, dtype=torch.uint8),), g)


# ---- topk of a bool tensor on the CPU -------------------------------------------------------
# eager raises "topk does not support bool dtypes on CPU" (an empty one too); the capture
# returned an empty result for an empty input.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("shape", [(3, 0, 2), (3, 4)])
def test_topk_of_bool_raises_as_eager(shape):
    f = lambda x: (x * 2).topk(1, -1)   # noqa: E731 - int * 2: a graph that compiles
    g = torchc.compile(f)
    _same(g(torch.ones(3, 4)), f(torch.ones(3, 4)))
    assert _compiled()
    h = lambda x: (x > 0).topk(1, 0)   # noqa: E731
    _raises_same(h, (torch.ones(shape),), torchc.compile(h))


# ---- split/chunk into more than 64 pieces ---------------------------------------------------
# x.split(2) of a 1000-row x: eager gives 500 tensors, the capture silently stopped at 64
# (its table's size); such splits are left to eager now, the rest of the frame compiled.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: [t * 2 for t in x.split(2, 0)], lambda x: [t * 2 for t in x.chunk(100, 0)],
                               lambda x: [t + 1 for t in torch.split(x, 3)], lambda x: [t * 2 for t in x.split(16, 0)]])
def test_split_into_many_pieces_is_complete(f):
    g = torchc.compile(f)
    for n in (1000, 130, 64):
        x = torch.randn(n, 3)
        _same(g(x), f(x))
    assert _compiled()


# ---- roll and F.pad result layouts -----------------------------------------------------------
# eager: roll and constant/reflect/replicate pads allocate in the input's suggested memory format
# (a channels-last input gives a channels-last result; the capture's was contiguous); a constant
# pad with no positive pad clones the narrowed input (its layout kept: a transposed input's
# result is transposed, the capture's was contiguous); circular pads are contiguous.

_PADROLL = {"roll1": lambda x: x.roll(1, 1), "roll_flat": lambda x: x.roll(3), "roll2": lambda x: x.roll((1, 2), (-2, -1)),
            "pad": lambda x: F.pad(x, (1, 2)), "pad6": lambda x: F.pad(x, (1, 2, 0, 1, 1, 1)),
            "reflect": lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"), "replicate": lambda x: F.pad(x, (1, 1, 1, 1), mode="replicate"),
            "circular": lambda x: F.pad(x, (1, 1, 1, 1), mode="circular"), "negative": lambda x: F.pad(x, (-1, 0)),
            "zero": lambda x: F.pad(x, (0, 0)), "mixed": lambda x: F.pad(x, (-1, 1))}


@pytest.mark.parametrize("name", sorted(_PADROLL))
@pytest.mark.parametrize("layout", ["contig", "T", "perm", "cl", "perm2"])
def test_roll_and_pad_layouts_follow_eager(name, layout):
    _check_layout(_PADROLL[name], _layouts((2, 6, 5, 4))[layout])


# ---- stack of channels-last tensors ----------------------------------------------------------
# stack(..., dim=-1) of channels-last tensors: eager's result is contiguous; the capture's
# unsqueeze (a reshape) gave the new size-1 dim the view rule's stride, its cat then saw a
# channels-last-3d layout and returned a non-contiguous result (a later .view() raised).
# (dims 0 and 1 of a channels-last input: eager keeps a permuted layout, the capture's is
# contiguous: not matched.)

@pytest.mark.parametrize("dim", [2, 3, 4, -1])
@pytest.mark.parametrize("layout", ["contig", "T", "cl", "perm2"])
def test_stack_layouts_follow_eager(dim, layout):
    _check_layout(lambda a: torch.stack([a, a * 2], dim), _layouts((4, 6, 5, 3))[layout])


# ---- x ** (a constant tensor) --------------------------------------------------------------
# x.pow(torch.tensor(0.5)): eager's tensor-tensor kernel calls std::pow ((-inf) ** 0.5 = inf,
# (-0.) ** 0.5 = +0); the capture folded the constant and codegen took sqrt (nan, -0), right
# only for a Python-number exponent of f32/f64/bf16.

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
@pytest.mark.parametrize("e", [0.5, -0.5, 2.0, 1.5])
def test_pow_of_a_constant_tensor_exponent_is_std_pow(dtype, e):
    x = torch.tensor([-float("inf"), float("inf"), -0.0, 0.0, 4.0, -1.0, float("nan"), 2.0], dtype=dtype)
    sign = lambda r: r.signbit() & ~r.isnan()   # noqa: E731 - a NaN's sign bit is noise
    f = lambda x: [r for y in (x.pow(torch.tensor(e)), x ** torch.tensor([e]), x.pow(torch.tensor(e).to(x.dtype)),   # noqa: E731
                               x ** torch.full((8,), e)) for r in (y, sign(y))]
    g = torchc.compile(f)
    _same(g(x), f(x), exact=dtype != torch.float64)   # f64: codegen's pow may be an ulp off
    assert _compiled()


# ---- cdist of 16-bit tensors on the CPU -----------------------------------------------------
# eager raises NotImplementedError ('"cdist" not implemented for BFloat16'); the polyfill
# computed it.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cdist_of_half_on_the_cpu_raises(dtype):
    f = lambda a, b: torch.cdist(a * 2, b)   # noqa: E731
    g = torchc.compile(f)
    a, b = torch.randn(4, 5), torch.randn(3, 5)
    _same(g(a, b), f(a, b), exact=False)
    assert _compiled()
    _raises_same(f, (a.to(dtype), b.to(dtype)), g)
