"""Tensor._is_all_true / _is_any_true (torch._check_tensor_all calls _is_all_true: the checks
libraries put on tensors) in compiled code against eager: values, dtype, shape; edge shapes 0, 1,
odd, non-contiguous; a non-bool tensor is left to eager (eager raises there)."""
import pytest
import torch

import torchc


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, ex.break_reasons
    want = fn(*args)
    torch.testing.assert_close(ex.result, want, equal_nan=True)
    assert ex.result.dtype == want.dtype and ex.result.shape == want.shape
    return ex.result, want


@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5), (2, 0, 4), (2, 3, 5)])
@pytest.mark.parametrize("meth", ["_is_all_true", "_is_any_true"])
def test_is_all_any_true_matches_eager(shape, meth):
    torch.manual_seed(0)
    x = torch.randn(shape)
    for thr in (-10.0, 0.0, 10.0):  # all true, mixed, all false
        got, want = _whole(lambda a: getattr((a > thr), meth)() | (a.sum() > 1e9), x)
        assert torch.equal(got, want)


def test_is_all_true_non_contiguous_and_in_graph():
    x = torch.randn(6, 4).t()[:, ::2]
    got, want = _whole(lambda a: torch.where((a.abs() >= 0)._is_all_true(), a * 2, a - 1), x)
    assert torch.equal(got, want)


@pytest.mark.allow_fallback  # eager raises: the call is left to it
def test_is_all_true_of_non_bool_left_to_eager():
    x = torch.randn(3)
    with pytest.raises(RuntimeError):
        x._is_all_true()
    torchc.reset()
    ex = torchc.explain(lambda a: (a + 1)._is_all_true())
    with pytest.raises(RuntimeError):
        ex(x)


def test_check_tensor_all_passes_in_compiled_code():
    def f(a):
        y = a * 2 + 1
        torch._check_tensor_all(y > -1e9)
        return y - 3

    x = torch.randn(4, 3)
    torchc.reset()
    ex = torchc.explain(f)(x)
    torch.testing.assert_close(ex.result, f(x))
    assert ex.graph_count >= 1 and ex.op_count > 0, ex.break_reasons
    assert not any("_is_all_true" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.parametrize("shape,dim", [((0, 3), 0), ((0, 3), None), ((2, 0, 4), 1), ((2, 0, 4), (0, 2)),
                                       ((3, 5), 1), ((1,), 0)])
@pytest.mark.parametrize("meth", ["all", "any"])
def test_all_any_over_empty_dims_match_eager(shape, dim, meth):
    x = torch.randn(shape)
    x.view(-1)[::3] = 0.0
    if dim is None:
        fn = lambda a: getattr(a * 2, meth)()  # noqa: E731
    else:
        fn = lambda a: getattr(a * 2, meth)(dim=dim)  # noqa: E731
    got, want = _whole(fn, x)
    assert torch.equal(got, want)
    got, want = _whole(lambda a: getattr((a * 2).to(torch.uint8), meth)(), x)
    assert torch.equal(got, want)


def test_int_of_constant_int_tensor_and_arange_of_it():
    # a 0-d int tensor built from numbers/shapes: int() and arange bounds take its value
    def f(x):
        n = torch.as_tensor(x.shape[1])
        k = torch.tensor(x.shape[0] + 1)
        idx = torch.arange(start=0, end=n) * int(k)
        return x * idx + torch.arange(torch.tensor(1), n, 2).sum()

    for shape in [(2, 5), (3, 1), (1, 4)]:
        x = torch.randn(shape)
        got, want = _whole(f, x)
        assert torch.equal(got, want)


@pytest.mark.allow_fallback  # a tensor's data as an int: left to eager, the reason says so
def test_int_and_arange_of_data_dependent_tensor_say_data_dependent():
    x = torch.tensor([3, 1, 2])
    for fn in (lambda a: torch.arange(a.max()) * 2, lambda a: a * int(a.max() + 0)):
        torchc.reset()
        ex = torchc.explain(fn)(x)
        assert torch.equal(ex.result, fn(x))
        assert any("data-dependent" in r for r in ex.break_reasons), ex.break_reasons
