"""Review round 3 (issue 24): regression tests for defects found reviewing the merges of
543bf80..35d3058 (vmap, TorchFunctionMode, lazy dict guards, hasattr guards, polyfills).
Each test is differential against eager and failed before its fix."""
import pytest
import torch
import torch.nn.functional as F

import torchc


def _compiles():
    return torchc._C.stats()["compiles"]


# ---- string arguments that are not UTF-8 encodable (NULL from PyUnicode_AsUTF8) ------------

_BAD = "\ud800"  # a lone surrogate: PyUnicode_AsUTF8 fails


def _same_exception(f, fn, *args):
    with pytest.raises(Exception) as want:
        fn(*args)
    with pytest.raises(type(want.value)):
        f(*args)


@pytest.mark.allow_fallback
def test_interpolate_mode_not_utf8():
    def fn(x):
        return F.interpolate(x, scale_factor=2.0, mode=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(1, 1, 4))


@pytest.mark.allow_fallback
def test_pad_mode_not_utf8():
    def fn(x):
        return F.pad(x, (1, 1), mode=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(1, 2, 4))


@pytest.mark.allow_fallback
def test_gelu_approximate_not_utf8():
    def fn(x):
        return F.gelu(x, approximate=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(4))


@pytest.mark.allow_fallback
def test_conv_padding_not_utf8():
    def fn(x, w):
        return F.conv1d(x, w, padding=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(1, 2, 8), torch.randn(3, 2, 3))


@pytest.mark.allow_fallback
def test_einsum_equation_not_utf8():
    def fn(x):
        return torch.einsum(_BAD, x) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(3, 3))


@pytest.mark.allow_fallback
def test_loss_reduction_not_utf8():
    def fn(x, y):
        return F.mse_loss(x, y, reduction=_BAD) + 1

    _same_exception(torchc.compile(fn), fn, torch.randn(4), torch.randn(4))
