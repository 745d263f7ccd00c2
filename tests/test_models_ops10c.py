"""The legacy CPU tensor types called with a list or tuple of numbers (torch.IntTensor([c]),
torch.LongTensor, FloatTensor, BoolTensor, ...; dynamo_hook/ops_builtins.c legacy_tensor_type):
torch.tensor(data, dtype=the type's dtype), values known to the trace, so an element can bound
a slice (a WaveNet-style gate: `n = torch.IntTensor([h]); tanh(x[:, :n[0]]) * sigmoid(x[:, n[0]:])`).
Differential against eager: values, dtype, shape, edge shapes (0, 1, odd, non-contiguous);
sizes or a number (an uninitialized tensor) stay eager's."""
import pytest
import torch

import torchc


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, ex.break_reasons
    return ex.result


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b)
        return
    torch.testing.assert_close(got, want, equal_nan=True)
    assert got.dtype == want.dtype and got.shape == want.shape


LEGACY = [torch.IntTensor, torch.LongTensor, torch.ShortTensor, torch.CharTensor, torch.ByteTensor,
          torch.FloatTensor, torch.DoubleTensor, torch.BoolTensor]


@pytest.mark.parametrize("tp", LEGACY, ids=lambda c: c.__name__)
@pytest.mark.parametrize("data", [[3], (1, 0, 2), [[1, 2], [3, 4]], [-1.7, 2.9, True], []], ids=str)
def test_legacy_type_of_numbers(tp, data):
    if tp is torch.ByteTensor and any(isinstance(v, float) and v < 0 for v in data):
        pytest.skip("a negative float into uint8 is undefined behaviour in C")

    def f(x):
        n = tp(data)
        return x * 2, n

    x = torch.randn(3)
    _same(_whole(f, x), f(x))


@pytest.mark.parametrize("shape", [(2, 6, 4), (1, 2, 1), (3, 10, 5), (0, 4, 3)])
def test_gate_split_by_a_legacy_tensor_element(shape):
    def f(a, b):
        n = torch.IntTensor([a.shape[1] // 2])
        act = a + b
        return torch.tanh(act[:, : n[0], :]) * torch.sigmoid(act[:, n[0]:, :])

    a, b = torch.randn(shape), torch.randn(shape)
    _same(_whole(f, a, b), f(a, b))


def test_gate_non_contiguous_and_broadcast():
    def f(a, b):
        n = torch.LongTensor([2])
        act = a + b
        return torch.tanh(act[:, : n[0]]) * torch.sigmoid(act[:, n[0]:]) + n

    a = torch.randn(5, 4, 3).transpose(0, 2)  # (3, 4, 5), non-contiguous
    b = torch.randn(1, 4, 1)
    _same(_whole(f, a, b), f(a, b))


@pytest.mark.allow_fallback  # a size (an uninitialized tensor): left to eager
def test_legacy_type_of_a_size_left_to_eager():
    def f(x):
        n = torch.IntTensor(3)
        return x + n.shape[0], n.shape

    x = torch.randn(2)
    torchc.reset()
    ex = torchc.explain(f)(x)
    got, want = ex.result, f(x)
    _same(got[0], want[0])
    assert got[1] == want[1]
    assert any("IntTensor" in r for r in ex.break_reasons), ex.break_reasons
