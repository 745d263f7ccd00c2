"""Float -> integer casts of constants, and 0-d tensor values that eager range-checks.

A float constant out of int32's range (NaN, inf, 3e9) cast to an integer dtype was folded at
lowering with C's (long long) cast of the double: undefined, 0 for NaN -> int32 on x86 where
eager gives INT_MIN. Such casts are now emitted on the constant, with the target's rule
(codegen/ops.c ol_fp_to_int). masked_fill / index_fill / x[mask] = v with a 0-d tensor v
convert v.item() with eager's overflow check ("value cannot be converted to type int without
overflow"); the compiled graph now counts a value that overflows and reruns eagerly."""
import pytest
import torch

import torchc

NAN, INF = float("nan"), float("inf")

_CONST = {
    "copy_nan": lambda x: x.copy_(torch.tensor(NAN)),
    "copy_vec": lambda x: x.copy_(torch.tensor([INF, -INF, NAN, 3e9])),
    "copy_full": lambda x: x.copy_(torch.full((4,), NAN)),
    "full_int": lambda x: torch.full((4,), NAN).int() + x,
    "full_long": lambda x: torch.full((4,), -1e30).long() + x,
    "fill_t": lambda x: x.fill_(torch.tensor(NAN)),
    "where_t": lambda x: torch.where(x > 0, x, torch.tensor(NAN).int()),
    "where_big": lambda x: torch.where(x > 0, x, torch.tensor(-3e9, dtype=torch.float64).to(torch.int16)),
    "inf_int8": lambda x: torch.tensor(INF).to(torch.int8) + x,
    "in_range": lambda x: x + torch.tensor([2.7, -2.7, 300.5, -129.5]).to(x.dtype),
}


@pytest.mark.parametrize("case", list(_CONST))
@pytest.mark.parametrize("dt", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_float_constant_cast_to_int_is_eagers(case, dt):
    f = _CONST[case]
    mk = lambda: torch.tensor([0, 1, 2, 5], dtype=dt)  # noqa: E731
    want = f(mk())
    torchc.reset()
    cf = torchc.compile(f)
    for _ in range(2):
        got = cf(mk())
        assert got.dtype == want.dtype and torch.equal(got, want), (got, want)
    ex = torchc.explain(f)(mk())
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons


_FILLS = {
    "masked_fill": lambda x, v: x.masked_fill(x == 0, v),
    "masked_fill_": lambda x, v: x.masked_fill_(x == 0, v) * 1,
    "index_fill": lambda x, v: x.index_fill(0, torch.tensor([0, 2]), v),
    "setitem_mask": lambda x, v: x.__setitem__(x == 0, v),
}
_VALUES = [torch.tensor(NAN), torch.tensor(INF), torch.tensor(-INF), torch.tensor(3e9), torch.tensor(2.5),
           torch.tensor(-1.0), torch.tensor(255.5), torch.tensor(1e5), torch.tensor(3.4e38),
           torch.tensor(1e300, dtype=torch.float64), torch.tensor(2 ** 40), torch.tensor(-200),
           torch.tensor(-256), torch.tensor(70000, dtype=torch.int32), torch.tensor(7, dtype=torch.int8)]


def _run(fn, *a):
    try:
        return fn(*a), None
    except Exception as e:  # noqa: BLE001
        return None, e


@pytest.mark.parametrize("op", list(_FILLS))
@pytest.mark.parametrize("dt", [torch.int32, torch.uint8, torch.int64, torch.float16, torch.bfloat16, torch.float32])
def test_tensor_value_overflow_raises_like_eager(op, dt):
    f = _FILLS[op]
    mk = lambda: torch.tensor([0, 1, 0, 3], dtype=dt)  # noqa: E731
    torchc.reset()
    cf = torchc.compile(f)
    raised = 0
    for v in _VALUES:
        want, werr = _run(f, mk(), v)
        got, gerr = _run(cf, mk(), v)
        if werr is not None:
            raised += 1
            assert gerr is not None, f"{v}: eager raised {werr!r}, compiled returned {got}"
            assert type(gerr) is type(werr) and str(gerr) == str(werr), (v, gerr, werr)
        else:
            assert gerr is None, (v, gerr)
            if want is not None:
                assert want.dtype == got.dtype and torch.equal(got.nan_to_num(), want.nan_to_num()), (v, got, want)
    assert raised > 0 or dt == torch.float32
    ex = torchc.explain(f)(mk(), torch.tensor(2.0))
    assert ex.graph_count >= 1, ex.break_reasons


def test_index_fill_number_out_of_range_raises():
    f = lambda x: x.index_fill(0, torch.tensor([1]), NAN)  # noqa: E731
    with pytest.raises(RuntimeError, match="without overflow"):
        f(torch.zeros(3, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="without overflow"):
        torchc.compile(f)(torch.zeros(3, dtype=torch.int32))
