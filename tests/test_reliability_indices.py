"""Ops with bounds-checked indices, given an index out of range: eager raises, and the
compiled call must raise the same exception, type and message (never return values, never
crash). The index is an input, computed in the graph (checked after the kernels), or passed
to an ATen extern (gather/scatter: ATen raises inside the compiled run; the frame reruns
eagerly). Each op also runs with valid indices and must be compiled then."""
import pytest
import torch
import torch.nn.functional as F

import torchc

X = lambda: torch.arange(20.0).reshape(4, 5)  # noqa: E731

_OPS = {
    "getitem": lambda x, i: (x + 1)[:, i] * 2,
    "getitem_rows": lambda x, i: (x + 1)[i] * 2,
    "two_indices": lambda x, i: (x + 1)[i, i] * 2,
    "index_select": lambda x, i: (x + 1).index_select(1, i) * 2,
    "embedding": lambda x, i: F.embedding(i, x + 1) * 2,
    "take": lambda x, i: (x + 1).take(i) * 2,
    "gather": lambda x, i: (x + 1).gather(1, i.view(-1, 1)[:4].expand(4, 2)) * 2,
    "scatter": lambda x, i: (x + 1).scatter(1, i.view(-1, 1)[:4], 0.5) * 2,
    "scatter_add": lambda x, i: (x + 1).scatter_add(1, i.view(-1, 1)[:4], x[:, :1]) * 2,
    "index_add": lambda x, i: (x + 1).index_add(1, i, torch.ones(4, i.numel())) * 2,
    "index_copy": lambda x, i: (x + 1).index_copy(1, i[:1], torch.ones(4, 1)) * 2,
    "index_fill": lambda x, i: (x + 1).index_fill(1, i, -1.0) * 2,
    "setitem": lambda x, i: (x + 1).__setitem__((slice(None), i), 0.0),
    "one_hot": lambda x, i: F.one_hot(i, 5) * 2,
}
_GOOD = torch.tensor([0, 3, 2, 1])
_BAD = {"too_big": torch.tensor([0, 5, 2, 1]), "too_negative": torch.tensor([0, -6, 2, 1]),
        "far": torch.tensor([0, 1 << 40, 2, 1])}


def _run(fn, *a):
    try:
        return fn(*a), None
    except Exception as e:  # noqa: BLE001
        return None, e


def _same_error(got, gerr, werr):
    assert gerr is not None, f"eager raised {werr!r}, compiled returned {got}"
    assert type(gerr) is type(werr) and str(gerr) == str(werr), (gerr, werr)


@pytest.mark.parametrize("op", list(_OPS))
@pytest.mark.parametrize("where", ["input", "computed"])
@pytest.mark.parametrize("bad", list(_BAD))
def test_index_out_of_range_raises_like_eager(op, where, bad):
    g = _OPS[op]
    f = (lambda x, i: g(x, i)) if where == "input" else (lambda x, i: g(x, i * 1 + 0))
    x, idx = X(), _BAD[bad]
    want, werr = _run(f, x, idx)
    if werr is None:
        pytest.skip("eager accepts it")
    torchc.reset()
    cf = torchc.compile(f)
    for _ in range(2):
        got, gerr = _run(cf, x, idx)
        _same_error(got, gerr, werr)
    want, werr = _run(f, x, _GOOD)  # valid indices: the same frame compiled, eager's values
    got, gerr = _run(cf, x, _GOOD)
    assert werr is None and gerr is None, (werr, gerr)
    if want is not None:
        assert torch.equal(got, want)
    ex = torchc.explain(f)(x, _GOOD)
    assert ex.graph_count >= 1, ex.break_reasons


@pytest.mark.parametrize("op", ["getitem", "index_select", "gather", "scatter", "index_fill", "take"])
def test_index_into_a_size_zero_dim_raises_like_eager(op):
    g = _OPS[op]
    f = lambda x, i: g(x, i * 1)  # noqa: E731
    x, idx = torch.zeros(4, 0), torch.tensor([0, 0, 0, 0])
    want, werr = _run(f, x, idx)
    assert werr is not None
    torchc.reset()
    cf = torchc.compile(f)
    for _ in range(2):
        got, gerr = _run(cf, x, idx)
        _same_error(got, gerr, werr)
