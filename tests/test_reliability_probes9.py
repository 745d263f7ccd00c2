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
