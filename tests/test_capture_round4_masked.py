"""Capture gaps of issue 21, round 4: `x[mask] op= v`, an in-place op on a boolean-masked
selection.

Reading x[mask] has a data-dependent shape, so the frame used to break there ("reading
x[mask] with a boolean mask"), although the statement as a whole (read, op in place, store
back) keeps x's shape. CPython compiles it as COPY 2, COPY 2, BINARY_SUBSCR, <load v>,
BINARY_OP (in place), SWAP 3, SWAP 2, STORE_SUBSCR; the read now gives a copy of the whole
of x, the op runs on it in place (eager's casting rules), and the store takes
where(mask, copy, x) (dynamo_hook/sym_containers.c masked_aug). Only when v is the same at
every selected position (a number, or a tensor over the dims past the mask's); a v with a
value per selected element still breaks.

Differential tests against eager with edge shapes; the caller's tensor is mutated as eager
mutates it.
"""
import pytest
import torch

import torchc


def _explain(fn, *args):
    torchc.reset()
    return torchc.explain(fn)(*args)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    torch.testing.assert_close(a, b, equal_nan=True)


def add_mul(x, m):
    y = x.clone()
    y[m] += 2.0
    y[m] *= 3
    return y


def sub_div_tensor(x, m, v):
    y = x * 1
    y[m] -= v
    y[m] /= 2
    return y


def inplace_on_input(x, m):
    x[m] += 1
    return x.sum()


def int_ops(x, m):
    y = x + 0
    y[m] += 3
    y[m] //= 2
    y[m] |= 1
    return y


SHAPES = [((5,), (5,)), ((1,), (1,)), ((0,), (0,)), ((3, 4), (3, 4)), ((3, 4), (3,)),
          ((2, 3, 5), (2, 3)), ((7, 1), (7,))]


@pytest.mark.parametrize("xs,ms", SHAPES)
def test_add_mul(xs, ms):
    x = torch.randn(xs)
    m = torch.randn(ms) > 0
    ex = _explain(add_mul, x, m)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, add_mul(x, m))


@pytest.mark.parametrize("xs,ms,vs", [((3, 4), (3,), (4,)), ((3, 4), (3,), (1, 4)), ((3, 4), (3,), ()),
                                      ((2, 3, 5), (2,), (3, 1)), ((6,), (6,), (1,))])
def test_tensor_operand_broadcast_over_selection(xs, ms, vs):
    x = torch.randn(xs)
    m = torch.randn(ms) > 0
    v = torch.randn(vs)
    ex = _explain(sub_div_tensor, x, m, v)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, sub_div_tensor(x, m, v))


def test_non_contiguous_and_all_or_none_selected():
    x = torch.randn(5, 4).t()            # non-contiguous
    for m in (torch.zeros(4, 5, dtype=torch.bool), torch.ones(4, 5, dtype=torch.bool), x > 0):
        ex = _explain(add_mul, x, m)
        assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
        _same(ex.result, add_mul(x, m))


def test_mutates_the_callers_tensor():
    x = torch.randn(4, 3)
    m = x[:, 0] > 0
    xe, xc = x.clone(), x.clone()
    ref = inplace_on_input(xe, m)
    ex = _explain(inplace_on_input, xc, m)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, ref)
    _same(xc, xe)


def test_integer_ops():
    x = torch.randint(-9, 9, (4, 5))
    m = x > 0
    ex = _explain(int_ops, x, m)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    _same(ex.result, int_ops(x, m))


def test_second_call_other_mask_values():
    f = torchc.compile(add_mul)
    x = torch.randn(6, 2)
    for seed in range(3):
        m = torch.rand(6, generator=torch.Generator().manual_seed(seed)) > 0.5
        _same(f(x, m), add_mul(x, m))


def per_element(x, m, v):
    y = x * 2
    y[m] += v                          # one value per selected element: data-dependent
    return y


@pytest.mark.no_compile
def test_value_per_selected_element_still_correct():
    # the read still fails inside the statement (the frame is not resumable there): eager
    x = torch.randn(6)
    m = torch.tensor([1, 0, 1, 1, 0, 0], dtype=torch.bool)
    v = torch.randn(3)
    ex = _explain(per_element, x, m, v)
    assert ex.graph_break_count >= 1
    _same(ex.result, per_element(x, m, v))


def float_into_int(x, m):
    y = x + 0
    y[m] += 1.5                        # eager raises: float result into an int tensor
    return y


@pytest.mark.no_compile
def test_int_plus_float_raises_like_eager():
    # the in-place op fails in the trace; no break inside the statement (the stack holds the
    # full-size copy there): the frame runs eagerly and raises as eager does
    x = torch.arange(4)
    m = x > 1
    with pytest.raises(RuntimeError) as e_ref:
        float_into_int(x, m)
    with pytest.raises(RuntimeError) as e_c:
        torchc.compile(float_into_int)(x, m)
    assert type(e_c.value) is type(e_ref.value)


def with_grad(w, m):
    y = w * 2
    y[m] *= 3
    return y.sum()


def test_autograd_through_masked_update():
    w1 = torch.randn(5, 3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_(True)
    m = torch.tensor([True, False, True, True, False])
    ref = with_grad(w1, m)
    ref.backward()
    out = torchc.compile(with_grad)(w2, m)
    out.backward()
    _same(out.detach(), ref.detach())
    _same(w2.grad, w1.grad)
