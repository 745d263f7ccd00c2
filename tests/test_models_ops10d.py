"""Item assignment of a float subclass constant (numpy.float64, as numpy calls on constants give:
`c = np.log(np.exp(1 - min_derivative) - 1); t[..., 0] = c`, a spline's boundary derivatives;
dynamo_hook/setitem.c value_of): stored as its float value, as eager does, instead of a break.
Differential against eager: values, dtype, shape; edge shapes (0, 1, odd, non-contiguous) and
int/bool/half destinations."""
import numpy as np
import pytest
import torch

import torchc


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, ex.break_reasons
    return ex.result


def _same(got, want):
    torch.testing.assert_close(got, want, equal_nan=True)
    assert got.dtype == want.dtype and got.shape == want.shape


def f_pad_ends(x, md=1e-3):
    c = np.log(np.exp(1 - md) - 1)
    y = torch.nn.functional.pad(x, pad=(1, 1))
    y[..., 0] = c
    y[..., -1] = c
    return y * 2


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (2, 5), (3, 7, 4)])
def test_numpy_float_constant_stored_at_the_ends(shape):
    x = torch.randn(shape)
    _same(_whole(f_pad_ends, x), f_pad_ends(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32, torch.bool])
def test_numpy_float_into_other_dtypes(dtype):
    def f(x):
        y = x.clone()
        y[1:3] = np.sqrt(7.5625)  # 2.75, a numpy.float64
        y[0] = np.exp(np.log(0.25))
        return y

    x = (torch.randn(6) * 4).to(dtype)
    _same(_whole(f, x), f(x))


def test_numpy_float_into_non_contiguous_view():
    def f(x):
        y = x * 1
        v = y.t()
        v[::2, 1] = np.log(np.exp(-1.5))
        return y + 1

    x = torch.randn(5, 4)
    _same(_whole(f, x), f(x))
