"""Regressions found by probing (round 7, tools/probes7): indexing keys, bool and integer
edge dtypes, 16-bit accumulation, result layouts and a crash under dynamic shapes, eager
against torchc.compile. Each test is the minimal program that gave a different answer,
dtype, stride or exception (or crashed) under torchc, and fails on the build before its fix."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from test_reliability_probes5 import _raises_same
from test_reliability_probes6 import _compiled, _same


def _img(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


# ---- a list key with sequences in it indexes as a tuple (eager's treatSequenceAsTuple) ------
# x[[[0, 2], [1, 1]]] is x[[0, 2], [1, 1]] to eager (shape (2, 5)); the capture made the
# whole list one tensor index (shape (2, 2, 4, 5)).

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("f", [lambda x: x[[[0, 2], [1, 1]]], lambda x: x[[[0, 2], [1, 1]]] * 2,
                               lambda x: x[[[0, 2]]], lambda x: x[[0, 2]], lambda x: x[[[0, 1], [2, 2], [4, 3]]]])
def test_list_key_of_lists_indexes_as_a_tuple(f):
    torchc.reset()
    x = torch.arange(60.0).reshape(3, 4, 5)
    _same(torchc.compile(f)(x), f(x))
    assert _compiled()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_list_key_of_lists_setitem():
    def f(x):
        x = x * 1
        x[[[0, 2], [1, 1]]] = -1
        return x
    torchc.reset()
    x = torch.arange(60.0).reshape(3, 4, 5)
    _same(torchc.compile(f)(x), f(x))
    assert _compiled()


# ---- clamp of a bool result ---------------------------------------------------------------
# ATen's clamp kernels have no bool version: clamp(b, False, True), clamp_max(b, True) and
# clamp(b, t_lo, t_hi) raise NotImplementedError; the capture clamped.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda b: b.clamp(False, True), lambda b: b.clamp_max(True), lambda b: b.clip(False, True),
                               lambda b: b.clamp(torch.tensor(False), torch.tensor(True)),
                               lambda b: b.clone().clamp_(False, True), lambda b: torch.clamp(b, max=True)])
def test_clamp_of_bool_raises_as_eager(f):
    torchc.reset()
    _raises_same(f, (torch.tensor([True, False]),), torchc.compile(f))


@pytest.mark.parametrize("f", [lambda b: b.clamp(torch.tensor(False)), lambda b: b.clamp_max(torch.tensor(True)),
                               lambda b: b.clamp(0, 1), lambda b: b.clamp(0.5)])
def test_clamp_of_bool_that_eager_runs(f):
    torchc.reset()
    b = torch.tensor([True, False])
    _same(torchc.compile(f)(b), f(b))
    assert _compiled()


# ---- reflect / replicate pad of bool --------------------------------------------------------

@pytest.mark.allow_fallback
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_of_bool_raises_as_eager(mode):
    f = lambda x: F.pad(x, (1, 2), mode=mode)   # noqa: E731
    torchc.reset()
    _raises_same(f, (torch.tensor([[True, False, True]]),), torchc.compile(f))


# ---- circular pad after recompiles (dynamic shapes) -----------------------------------------
# One function called with a float, a transposed float and an int64 tensor: the third trace
# (dynamic) had a graph op refused and passed -1 on: SIGSEGV in dh_layout_copy.

@pytest.mark.allow_fallback
@pytest.mark.parametrize("mode", ["circular", "reflect", "replicate"])
def test_pad_after_recompiles_does_not_crash(mode):
    f = lambda x: F.pad(x, (1, 2), mode=mode)   # noqa: E731
    torchc.reset()
    g = torchc.compile(f)
    x = _img((2, 3, 4))
    for a in (x, x.transpose(1, 2), x.to(torch.int64), _img((3, 2, 5)), x[..., 1:]):
        _same(g(a), f(a))


# ---- result layouts -------------------------------------------------------------------------

@pytest.mark.parametrize("f", [lambda x: x.index_fill(1, torch.tensor([1, 1]), -3), lambda x: x.index_fill(0, torch.tensor([2]), 1.5),
                               lambda x: F.rms_norm(x, (x.shape[-1],)), lambda x: F.rms_norm(x, x.shape[-2:], eps=1.0),
                               lambda x: F.one_hot(x.abs().long() % 3, 3)])
@pytest.mark.parametrize("layout", ["T", "perm", "slice"])
def test_result_layout_follows_eager(f, layout):
    torchc.reset()
    base = _img((4, 5))
    x = {"T": base.T.contiguous().T, "perm": _img((5, 4)).T, "slice": _img((4, 6))[:, 1:]}[layout]
    _same(torchc.compile(f)(x), f(x), exact=False)
    assert _compiled()


# ---- 16-bit accumulation --------------------------------------------------------------------
# ATen computes these in float32 and rounds once: vector_norm squared each element into bf16
# first (one ulp off at p=2, by 1024 at p=0.5), bilinear rounded between its two dims, and
# avg_pool summed the window in bf16.

@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("f", [lambda x: torch.linalg.vector_norm(x, 2, 1), lambda x: torch.linalg.vector_norm(x, 0.5, 1),
                               lambda x: torch.linalg.vector_norm(x, 3, -1, True), lambda x: x.norm(dim=0),
                               lambda x: F.cosine_similarity(x, x.flip(0)), lambda x: F.normalize(x, dim=1)])
def test_half_norms_accumulate_in_float(dt, f):
    torchc.reset()
    x = (torch.arange(600.0).reshape(3, 200).mul(0.37).sin() * 3).to(dt)
    _same(torchc.compile(f)(x), f(x))
    assert _compiled()


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("f", [lambda x: F.interpolate(x, size=(8, 9), mode="bilinear"),
                               lambda x: F.interpolate(x, size=(3, 9), mode="bilinear", align_corners=True),
                               lambda x: F.avg_pool2d(x, 2, ceil_mode=True), lambda x: F.avg_pool2d(x, 3, 1, 1)])
def test_half_interpolate_and_avg_pool_round_once(dt, f):
    # within one ulp of the 16-bit result: its float32 value may differ from eager's in the
    # last bit (fused multiply-adds), and round the other way
    torchc.reset()
    for x in (_img((1, 2, 5, 6), dt)[..., 1:], _img((1, 2, 6, 5), dt).transpose(2, 3)):
        got, want = torchc.compile(f)(x), f(x)
        assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride()
        ulp = want.float().abs() * (2.0 ** (-7 if dt == torch.bfloat16 else -10))
        assert ((got.float() - want.float()).abs() <= ulp + 1e-6).all(), (got, want)
    assert _compiled()


# ---- torch.tensor / new_tensor of a number out of an integer dtype's range -------------------
# eager raises "value cannot be converted to type ... without overflow"; the capture cast it
# (NaN -> int64 min, 300 -> uint8 44).

@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: x.new_tensor(float("nan")), lambda x: x.new_tensor([1.5, float("inf")]),
                               lambda x: torch.tensor(300, dtype=torch.uint8), lambda x: torch.tensor(-1.5, dtype=torch.uint8),
                               lambda x: torch.tensor([0, 1e20], dtype=torch.int32), lambda x: torch.tensor(128, dtype=torch.int8) + x])
def test_tensor_of_an_overflowing_number_raises(f):
    torchc.reset()
    _raises_same(f, (torch.arange(3),), torchc.compile(f))


@pytest.mark.parametrize("f", [lambda x: x + x.new_tensor(2.7), lambda x: x + torch.tensor(-1, dtype=torch.uint8),
                               lambda x: x + torch.tensor([1e6, 2.0], dtype=torch.float16).sum(),
                               lambda x: x * torch.tensor([255, -255], dtype=torch.uint8)])
def test_tensor_of_numbers_eager_converts(f):
    torchc.reset()
    x = torch.arange(2)
    _same(torchc.compile(f)(x), f(x))
    assert _compiled()


# ---- lerp's fused multiply-add --------------------------------------------------------------
# ATen's lerp kernels compute fma(w, end - self, self) (and fma(w - 1, diff, end)): float32
# results one rounding apart were an ulp off; a float64 lerp with a number weight >= 0.5 took
# w - 1 in float32 (5e-6 off at 100).

@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("w", [0.3, 0.7, -2.5, "t"])
def test_lerp_fuses_its_multiply_add(dt, w):
    torchc.reset()
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(100, generator=g) * 100).to(dt)
    b = (torch.randn(100, generator=g) * 100).to(dt)
    wt = (torch.rand(100, generator=g) * 3 - 1).to(dt) if w == "t" else w
    f = lambda a, b: torch.lerp(a, b, wt)   # noqa: E731
    _same(torchc.compile(f)(a, b), f(a, b))
    assert _compiled()


def test_lerp_float64_weight_above_half():
    torchc.reset()
    a = torch.linspace(-100, 100, 50, dtype=torch.float64)
    f = lambda a: torch.lerp(a, a.flip(0) * 1.5, 0.7)   # noqa: E731
    got, want = torchc.compile(f)(a), f(a)
    assert got.dtype == want.dtype and torch.allclose(got, want, rtol=1e-14, atol=1e-12)
    assert _compiled()


# ---- bicubic interpolate of f16/bf16 ---------------------------------------------------------
# ATen's bicubic weights are of the input's 16-bit dtype, the separable sums float32, rounded
# once; the capture computed float32 weights and rounded between the two dims (1 ulp off at
# 40 of 84 elements).

@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize("layout", ["contig", "slice", "T"])
def test_half_bicubic_weights_in_the_input_dtype(dt, ac, layout):
    torchc.reset()
    x = {"contig": _img((1, 2, 4, 5), dt), "slice": _img((2, 3, 6, 7), dt)[..., 1:],
         "T": _img((1, 2, 5, 4), dt).transpose(2, 3)}[layout]
    f = lambda x: F.interpolate(x, size=(6, 7), mode="bicubic", align_corners=ac)   # noqa: E731
    _same(torchc.compile(f)(x), f(x))
    assert _compiled()


# ---- linear (1-d) interpolate and adaptive_avg_pool of f16/bf16 ------------------------------
# upsample_linear1d's lambdas are of the input's 16-bit dtype (l1 = src - i0 rounded, l0 =
# 1 - l1 rounded), the blend in float32; adaptive_avg_pool2d sums its window in float32. The
# capture blended with float32 lambdas (10 of 66 elements an ulp off) and summed in bf16.

@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("f", [lambda x: F.interpolate(x, size=11, mode="linear"),
                               lambda x: F.interpolate(x, size=11, mode="linear", align_corners=True),
                               lambda x: F.interpolate(x, scale_factor=1.7, mode="linear"),
                               lambda x: F.adaptive_avg_pool1d(x, 6), lambda x: F.adaptive_avg_pool2d(x.unflatten(-1, (4, 6)), (2, 3))])
def test_half_linear1d_and_adaptive_avg(dt, f):
    torchc.reset()
    for x in (_img((2, 3, 24), dt), _img((2, 3, 25), dt)[..., 1:]):
        _same(torchc.compile(f)(x), f(x))
    assert _compiled()


@pytest.mark.parametrize("dt", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("pair", ["expand_T", "T_contig", "contig_T", "cl"])
def test_lerp_layout_follows_eager(dt, pair):
    torchc.reset()
    t = _img((4, 6), dt)
    a, b = {"expand_T": (t[:, :1].expand(4, 6), t.T.contiguous().T), "T_contig": (t.T.contiguous().T, t),
            "contig_T": (t, t.T.contiguous().T),
            "cl": (_img((2, 3, 4, 5), dt).contiguous(memory_format=torch.channels_last), _img((2, 3, 4, 5), dt))}[pair]
    for w in (0.3, 0.8):
        f = lambda a, b: torch.lerp(a, b, w)   # noqa: E731
        _same(torchc.compile(f)(a, b), f(a, b))
    assert _compiled()
