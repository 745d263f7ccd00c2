"""A transformers ModelOutput made in the traced frame (dynamo_hook/records.c) whose None fields
are set afterwards out of field order (a wrapper that injects collected outputs:
`outputs[key] = tuple(collected[key])`): each such field joins the OrderedDict at its end, as in
eager, so keys(), to_tuple(), r[i], dict(r) and the record returned all follow eager's order.
Each test compares with eager: values, dtype, shape (edge shapes 0, 1, odd, non-contiguous),
the returned record's class and key order; the frame must be one graph."""
from dataclasses import dataclass
from typing import Optional

import pytest
import torch

import torchc

ModelOutput = pytest.importorskip("transformers.utils").ModelOutput


@dataclass
class _Out(ModelOutput):
    last: Optional[torch.Tensor] = None
    pooled: Optional[torch.Tensor] = None
    hidden: Optional[tuple] = None
    attn: Optional[tuple] = None


def _whole(fn, *args):
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 0, ex.break_reasons
    return ex.result


def _same(got, want):
    if isinstance(want, torch.Tensor):
        torch.testing.assert_close(got, want, equal_nan=True)
        assert got.dtype == want.dtype and got.shape == want.shape
        return
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got.keys()) == list(want.keys())
        for k in want:
            _same(got[k], want[k])
        if isinstance(want, ModelOutput):
            for k in ("last", "pooled", "hidden", "attn"):
                _same(getattr(got, k), getattr(want, k))
        return
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b)
        return
    assert got == want


SHAPES = [(0, 3), (1, 1), (3, 5), (2, 7)]


def f_inject(x):
    out = _Out(last=x * 2)
    collected = {"attn": [x + 1, x - 1], "hidden": [x.sin()]}
    for key in collected:  # attn joins first, then hidden: not field order
        out[key] = tuple(collected[key])
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_fields_set_out_of_order_are_returned_in_eager_order(shape):
    x = torch.randn(shape)
    want = f_inject(x)
    got = _whole(f_inject, x)
    assert list(want.keys()) == ["last", "attn", "hidden"]
    _same(got, want)


def f_read_after(x):
    out = _Out(last=x * 2, pooled=x.mean(-1))
    out["attn"] = (x + 1,)
    out["hidden"] = (x - 3, x * 4)
    t = out.to_tuple()
    keys = tuple(out.keys())
    d = dict(out)
    vals = list(out.values())
    return t[2][0] * 2 + out[3][1], keys, tuple(d), len(vals), out[2], out[-1][0]


@pytest.mark.parametrize("shape", SHAPES)
def test_reads_after_out_of_order_sets_follow_the_dict(shape):
    x = torch.randn(shape)
    want = f_read_after(x)
    got = _whole(f_read_after, x)
    assert want[1] == ("last", "pooled", "attn", "hidden")
    _same(got, want)


def f_set_twice(x):
    out = _Out(pooled=x.abs())
    out["attn"] = (x,)
    out["last"] = x + 5  # joins after attn
    out["attn"] = (x * 3,)  # already in the dict: keeps its place
    return out, tuple(out.keys())


def test_field_set_again_keeps_its_place_and_noncontiguous():
    x = torch.randn(6, 4).t()
    want = f_set_twice(x)
    got = _whole(f_set_twice, x)
    assert want[1] == ("pooled", "attn", "last")
    _same(got, want)


def f_in_field_order(x):
    out = _Out(last=x)
    out["hidden"] = (x * 2,)
    out["attn"] = (x * 3,)
    return out, out.to_tuple()[1][0]


def test_fields_set_in_field_order_unchanged():
    x = torch.randn(3, 5)
    want = f_in_field_order(x)
    got = _whole(f_in_field_order, x)
    _same(got, want)


def f_setattr_later_field(x):
    out = _Out(last=x)
    out.attn = (x - 1,)  # (ModelOutput.__setattr__ adds the item: it joins at the end)
    out.pooled = x.sum(-1)
    return out, tuple(out.keys()), out[1][0] + 1


def test_setattr_of_none_fields_out_of_order():
    x = torch.randn(2, 7)
    want = f_setattr_later_field(x)
    got = _whole(f_setattr_later_field, x)
    _same(got, want)


def f_live_across_break(x):
    out = _Out(last=x)
    out["attn"] = (x + 1,)
    out["pooled"] = x * 2
    n = x.sum().item()  # a graph break with the record live
    out["last"] = out.last + n
    return out, out.to_tuple()[1]


def _helper_sets(out, x):
    out["attn"] = (x + 1,)
    n = x.sum().item()  # a break inside the inlined call: its writes are undone, rerun
    out["pooled"] = x * n
    return out


def f_break_inside_call(x):
    out = _Out(last=x)
    out = _helper_sets(out, x)
    return out, out[1], out[2][0]


@pytest.mark.parametrize("fn", [f_live_across_break, f_break_inside_call], ids=lambda f: f.__name__)
def test_out_of_order_record_across_a_graph_break(fn):
    x = torch.randn(3, 4)
    want = fn(x)
    torchc.reset()
    ex = torchc.explain(fn)(x)
    assert ex.graph_count >= 2 and ex.graph_break_count >= 1 and ex.op_count > 0, ex.break_reasons
    assert list(want[0].keys()) == ["last", "attn", "pooled"]
    _same(ex.result, want)
