"""Regressions found by probing (round 9, tools/probes9): each test is the minimal program that
gave a different value, dtype, stride or exception under torchc than in eager (or fell back
where it is meant to compile), and fails on the build before its fix."""
import pytest
import torch

import torchc
from conftest import captured_whole
from test_reliability_probes5 import _raises_same
from test_reliability_probes6 import _same


def _whole(f, *args):
    """f compiled whole (one graph, no break, nothing left to eager) on fresh args"""
    torchc.reset()
    ex = torchc.explain(f)(*args)
    assert captured_whole(ex), (ex.break_reasons, ex.eager_frames)


# ---- views into complex tensors: x.real, x.imag, view_as_real, view_as_complex ---------------
# Eager's x.real / x.imag / view_as_real(x) are float views of x's storage with strides 2 * x's
# (then 1). The capture wrote view_as_real(x) as x.view(float).view(..., n, 2), which needs x's
# last stride to be 1, and otherwise planned one extern whose strides were made contiguous:
# x.t().real.stride() was (4, 1) for eager's (2, 12), x.t().real * 2 came out row-major, a
# size-1 dim's stride differed, and torch.real(x) of any layout gave contiguous strides.

_CX_LAYOUTS = {"contig": lambda x: x, "T": lambda x: x.t(), "step": lambda x: x[:, ::2], "Tstep": lambda x: x.t()[::2],
               "expand": lambda x: x[:1].expand(3, 6), "empty": lambda x: x[:0], "one": lambda x: x[:1, :1],
               "d0": lambda x: x[1, 2]}


def _cx(dt, lay):
    x = torch.arange(24.0).reshape(4, 6)
    x = (x + 1j * x.cos()).to(dt)
    return _CX_LAYOUTS[lay](x)


def _cx_views(x):
    r = torch.view_as_real(x)
    return (x.real * 2, x.imag + 1, r * 1, torch.real(x) - 1, x.real, x.imag, r,
            x.real.stride(), x.imag.stride(), r.stride(), torch.imag(x).stride(), x.real.is_contiguous(),
            torch.view_as_complex(r).stride(), torch.view_as_complex(r) * 2)


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("lay", list(_CX_LAYOUTS))
def test_complex_views_values_and_strides_as_eager(dt, lay):
    want = _cx_views(_cx(dt, lay))
    torchc.reset()
    got = torchc.compile(_cx_views)(_cx(dt, lay))
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            _same(g, w)
            assert g.stride() == w.stride() or w.numel() <= 1, (g.stride(), w.stride())
        else:
            assert g == w
    _whole(_cx_views, _cx(dt, lay))


@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
@pytest.mark.parametrize("lay", ["contig", "T", "step", "one", "d0"])
def test_complex_returned_views_share_the_input(dt, lay):
    """a returned x.real / view_as_real(x) is a view of the input: a write through it shows in x"""
    f = lambda x: (x.real, x.imag, torch.view_as_real(x))   # noqa: E731
    xe, xc = _cx(dt, lay).clone(), _cx(dt, lay).clone()
    want = f(xe)
    torchc.reset()
    got = torchc.compile(f)(xc)
    for g, w in zip(got, want):
        _same(g, w)
        assert g.stride() == w.stride()
        w.add_(1)
        g.add_(1)
    _same(xc, xe)
    _whole(f, _cx(dt, lay).clone())


def _write_real(x):
    x.real.mul_(2)
    return x


def _write_var(x):
    torch.view_as_real(x)[..., 1].add_(1)
    return x


def _write_read(x):   # the base read after the write: a graph break (alias_fn.c does not invert
    x.imag.zero_()    # the complex externs that stand for dtype views), eager's values
    return x.abs()


def _write_local(x):
    r = x.imag
    r += 3
    return x, r


@pytest.mark.parametrize("dt,lay", [(torch.complex64, "contig"), (torch.complex64, "T"), (torch.complex64, "step"),
                                    (torch.complex64, "one"), (torch.complex128, "Tstep"), (torch.complex128, "d0")])
@pytest.mark.parametrize("f", [_write_real, _write_var, _write_local, _write_read])
def test_complex_writes_through_real_views(dt, lay, f):
    base_e, base_c = _cx(dt, "contig").clone(), _cx(dt, "contig").clone()
    want = f(_CX_LAYOUTS[lay](base_e))
    torchc.reset()
    got = torchc.compile(f)(_CX_LAYOUTS[lay](base_c))
    _same(got, want)
    _same(base_c, base_e)
    if f is not _write_read:
        _whole(f, _CX_LAYOUTS[lay](_cx(dt, "contig").clone()))


_RE_LAYOUTS = {"contig": lambda r: r, "T": lambda r: r.transpose(0, 1), "step": lambda r: r[:, ::2],
               "one": lambda r: r[:1, :1], "expand": lambda r: r[:1].expand(3, 6, 2), "1d": lambda r: r[0, 0],
               "empty": lambda r: r[:0]}


@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
@pytest.mark.parametrize("lay", list(_RE_LAYOUTS))
def test_view_as_complex_strides_as_eager(dt, lay):
    def f(r):
        c = torch.view_as_complex(r)
        return c, c.stride(), c * 2, c.real.stride(), torch.view_as_real(c)
    mk = lambda: _RE_LAYOUTS[lay](torch.arange(48.0, dtype=dt).reshape(4, 6, 2).sin())   # noqa: E731
    want = f(mk())
    torchc.reset()
    got = torchc.compile(f)(mk())
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            _same(g, w)
        else:
            assert g == w
    _whole(f, mk())


@pytest.mark.allow_fallback
def test_view_as_complex_of_a_last_dim_not_unit_stride_raises():
    f = lambda r: torch.view_as_complex(r) * 2   # noqa: E731
    torchc.reset()
    _raises_same(f, (torch.arange(12.0).reshape(2, 6).t(),), torchc.compile(f))


# ---- activations of integer and bool tensors ---------------------------------------------------
# F.elu / selu / leaky_relu / softplus / hardswish / hardsigmoid / mish / logsigmoid / silu / gelu
# have ATen kernels for floating types only (NotImplementedError "elu_cpu" not implemented for
# 'Int'); the capture promoted the integer input to float and returned a value. F.hardtanh /
# relu6 of an integer tensor clamp in its own dtype with the limits truncated to int64 (eager:
# int32 in, int32 out); the capture promoted to float32 and took 2.5 as 2.5. Bool inputs,
# unsigned ones with negative limits and min_val > max_val (F.hardtanh's ValueError, for every
# dtype) raise in eager.

_FLOAT_ONLY = [lambda x: torch.nn.functional.elu(x), lambda x: torch.nn.functional.selu(x), lambda x: torch.selu(x),
               lambda x: torch.nn.functional.leaky_relu(x, 2), lambda x: torch.nn.functional.softplus(x),
               lambda x: torch.nn.functional.hardswish(x), lambda x: torch.nn.functional.hardsigmoid(x),
               lambda x: torch.nn.functional.mish(x), lambda x: torch.nn.functional.logsigmoid(x),
               lambda x: torch.nn.functional.silu(x), lambda x: torch.nn.functional.gelu(x),
               lambda x: torch.nn.functional.gelu(x, approximate="tanh"), lambda x: torch.nn.functional.elu(x, inplace=True)]


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", _FLOAT_ONLY)
def test_float_only_activations_of_int_raise_as_eager(f):
    v = torch.tensor([-3, -1, 0, 2, 7])
    torchc.reset()
    g = torchc.compile(f)
    _same(g(v.float()), f(v.float()), exact=False)
    for x in (v.int(), v > 0, v.to(torch.uint8)):
        _raises_same(f, (x.clone(),), g)


_HT = [lambda x: torch.nn.functional.hardtanh(x, -1.5, 2.5), lambda x: torch.nn.functional.hardtanh(x),
       lambda x: torch.nn.functional.relu6(x), lambda x: torch.nn.ReLU6()(x), lambda x: torch.nn.Hardtanh(-2, 2)(x),
       lambda x: torch.nn.functional.hardtanh(x, min_val=0.7, max_val=5.9), lambda x: torch.nn.functional.relu6(x * 3, inplace=True)]


@pytest.mark.parametrize("f", _HT)
@pytest.mark.parametrize("dt", [torch.int32, torch.int8, torch.int64, torch.uint8, torch.float16])
def test_hardtanh_of_int_keeps_its_dtype(f, dt):
    x = torch.tensor([-3, -1, 0, 1, 2, 7, 100, -100]).to(dt)
    try:
        want = f(x.clone())
    except RuntimeError:
        return _raises_same(f, (x.clone(),), torchc.compile(f))   # uint8 with negative limits
    torchc.reset()
    _same(torchc.compile(f)(x.clone()), want)
    _whole(f, x.clone())


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: torch.nn.functional.hardtanh(x, 2.0, -2.0), lambda x: torch.nn.functional.relu6(x),
                               lambda x: torch.nn.functional.hardtanh(x, -1000, 1000), lambda x: torch.nn.functional.hardtanh(x, -1.0, 0.5)])
@pytest.mark.parametrize("x", [torch.tensor([-3.0, 1.0]), torch.tensor([True, False]), torch.tensor([3, 1], dtype=torch.int8),
                               torch.tensor([3, 1], dtype=torch.uint8)])
def test_hardtanh_raises_as_eager(f, x):
    try:
        want = f(x)
    except (RuntimeError, ValueError):
        torchc.reset()
        return _raises_same(f, (x,), torchc.compile(f))
    torchc.reset()
    _same(torchc.compile(f)(x), want)


# ---- the conjugate bit -----------------------------------------------------------------------
# x.conj() is a lazy view in eager (is_conj() True, kept through views); .real / .imag of it
# work, view(dtype) and view_as_real of it raise. The capture answered is_conj() False, and
# wrote x.conj().imag as x.conj().view(float)[..., 1], which raised where eager ran (the view
# replayed on the real x at the output).

@pytest.mark.parametrize("f", [lambda x: x.conj().real * 1, lambda x: x.conj().imag * 1, lambda x: x.conj().real - x.conj().imag.t().t(),
                               lambda x: x.conj().is_conj(), lambda x: x.conj().contiguous().is_conj(),
                               lambda x: x.t().conj().t().is_conj(), lambda x: torch.is_conj(x.conj().conj()),
                               lambda x: x.conj().resolve_conj().is_conj(), lambda x: torch.view_as_real(x.conj().resolve_conj()) * 1])
def test_conj_view_semantics_as_eager(f):
    x = (torch.arange(12.0).reshape(3, 4) + 1j * torch.arange(12.0).reshape(3, 4).cos()).to(torch.complex64)
    want = f(x)
    torchc.reset()
    got = torchc.compile(f)(x)
    if isinstance(want, bool):
        assert got == want
    else:
        _same(got, want)
    _whole(f, x)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [lambda x: torch.view_as_real(x.conj()) * 1, lambda x: x.conj().view(torch.float32) * 1,
                               lambda x: x.t().conj().imag.view(torch.int32)])
def test_conj_view_refusals_raise_as_eager(f):
    x = (torch.arange(12.0).reshape(3, 4) + 1j).to(torch.complex64)
    torchc.reset()
    g = torchc.compile(f)
    _raises_same(f, (x,), g)
    torchc.compile(lambda x: x.conj().real * 2)(x)   # (a compiled call: conftest wants one graph)


# ---- in-place updates whose source is self; fill_ with a 1-d value ----------------------------
# ATen's index_add_ / scatter_ / scatter_add_ refuse a source that overlaps self at all ("some
# elements of the input tensor and the written-to tensor refer to a single memory location"),
# self included; fill_ takes a 0-d value tensor only. The capture computed both.

def _sadd(y):
    return y.scatter_add_(0, torch.zeros(3, 4, dtype=torch.long), y)


def _sset(y):
    return y.scatter_(1, torch.zeros(3, 4, dtype=torch.long), y)


def _iadd(y):
    return y.index_add_(0, torch.tensor([2, 1, 0]), y)


def _fill1(y):
    return y.fill_(torch.tensor([1.5]))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [_sadd, _sset, _iadd, _fill1])
def test_inplace_refusals_raise_as_eager(f):
    torchc.reset()
    x = torch.arange(12.0).reshape(3, 4)
    _raises_same(f, (x.clone(),), torchc.compile(f))
    g = lambda y, s: y.scatter_add_(0, torch.zeros(3, 4, dtype=torch.long), s)   # noqa: E731
    _same(torchc.compile(g)(x.clone(), x.clone()), g(x.clone(), x.clone()))   # another source compiles


def test_fill_with_a_0d_tensor_compiles():
    f = lambda y: y.fill_(torch.tensor(1.5)) * 2   # noqa: E731
    x = torch.arange(12).reshape(3, 4)
    _same(torchc.compile(f)(x.clone()), f(x.clone()))
    _whole(f, x.clone())


# ---- leftovers of the round (reliab3) ----------------------------------------------------------
# torch.angle of a complex tensor: eager's kernel (a composite resizing an empty out tensor)
# returns contiguous strides; the plan took the meta kernel's, which keeps the input's layout.

@pytest.mark.parametrize("lay", ["T", "step", "Tstep", "expand"])
def test_angle_of_complex_layouts_as_eager(lay):
    f = lambda x: torch.angle(x) * 1, lambda x: x.angle()   # noqa: E731
    for g in f:
        torchc.reset()
        x = _cx(torch.complex64, lay)
        _same(torchc.compile(g)(x), g(x))
        _whole(g, _cx(torch.complex64, lay))


# torch.flip(x, 1) and a dims=1 keyword are eager's TypeError (int[] dims); only the method's
# positional *dims takes bare ints (x.flip(1)). The capture flipped.

def _flip_t(x):
    return torch.flip(x, 1)


def _flip_kw(x):
    return x.flip(dims=1)


def _flip_tkw(x):
    return torch.flip(x, dims=0)


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [_flip_t, _flip_kw, _flip_tkw])
def test_flip_of_a_bare_int_raises_as_eager(f):
    x = torch.arange(12.0).reshape(3, 4)
    _raises_same(f, (x,), torchc.compile(f))
    g = lambda y: y.flip(1) + torch.flip(y, [0])   # noqa: E731
    _same(torchc.compile(g)(x), g(x))
    _whole(g, x)


# var/std with correction >= n: eager's M2 / 0, inf where the values differ. The CPU kernel
# accumulates float's M2 in double, where squared denormal differences stay positive; the
# capture's float squares vanished (0 / 0 = NaN).

@pytest.mark.parametrize("f", [lambda x: x.var(1, correction=5), lambda x: x.std(1, correction=4),
                               lambda x: torch.var(x, 1, correction=7, keepdim=True)])
def test_var_correction_beyond_n_of_denormals_as_eager(f):
    x = torch.tensor([[1e-45, -1e-45, 0.0, -0.0], [3.0, 3.0, 3.0, 3.0], [1e38, 1e38, -1e38, 0.0],
                      [1.0, float("nan"), 0.0, 2.0], [float("inf"), 1.0, 1.0, 1.0], [1e-40, 0.0, 0.0, 0.0]])
    torchc.reset()
    _same(torchc.compile(f)(x), f(x))
    _whole(f, x)


# inplace= belongs to torch.nn.functional's Python signatures (F.relu, F.threshold, F.celu); the
# ATen builtins (torch.relu, torch.threshold, torch.celu, torch.selu, torch.sigmoid), Tensor
# methods and F.sigmoid / F.tanh reject it (eager's TypeError), though one table entry binds all.

_NO_INPLACE = [lambda x: torch.threshold(x, 0.5, 2.0, inplace=True), lambda x: torch.threshold(x, 0.5, 2.0, True),
               lambda x: torch.celu(x, inplace=True), lambda x: torch.selu(x, inplace=True),
               lambda x: torch.relu(x, inplace=True), lambda x: torch.sigmoid(x, inplace=True),
               lambda x: torch.nn.functional.sigmoid(x, inplace=True), lambda x: torch.nn.functional.tanh(x, inplace=True),
               lambda x: x.relu(inplace=True), lambda x: x.exp(inplace=False)]


@pytest.mark.allow_fallback
@pytest.mark.parametrize("i", range(len(_NO_INPLACE)))
def test_inplace_argument_only_where_eager_takes_it(i):
    f = _NO_INPLACE[i]
    x = torch.linspace(-2, 2, 8)
    _raises_same(f, (x.clone(),), torchc.compile(f))
    F = torch.nn.functional
    g = lambda y: (F.threshold(y, 0.5, 2.0, inplace=True), F.celu(y, 2.0, inplace=True), F.relu(y, True), y * 1)   # noqa: E731
    want, got = g(x.clone()), torchc.compile(g)(x.clone())
    _same(got, want)
    _whole(g, x.clone())
