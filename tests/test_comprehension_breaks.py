"""Graph breaks inside comprehensions. Python 3.12 inlines them into the enclosing function
(PEP 709) with an exception handler that puts the saved iteration variable back and reraises:
a break there resumes as inside a try block (before, the whole function ran eagerly on 3.12:
"inside an except clause: not resumable there"). On 3.11 the comprehension is a function of
its own that resumes around its breaks. Values, the restored variable, and exceptions raised
in the resumed part as eager."""
import pytest
import torch

import torchc


def comp_tuple(x, ts, scale):
    y = x.cos() * 2
    out = [t * scale if t.sum() > 0 else t - scale for t in tuple(ts)]
    d = {i: t.sin() if t.sum() > 0 else t for i, t in enumerate(ts)}
    return y + sum(out) + d[1]


def comp_range(x, n):
    i = "outer"  # the comprehension's variable shadows it: eager keeps "outer"
    r = [x * i if (x * i).sum() > 0 else x - i for i in range(n)]
    return sum(r), i


def comp_item(x):
    t = 5
    try:
        r = [1 / 0 if (x * i).sum() > 100 else x[0].item() + i for i in range(3)]
    except ZeroDivisionError:
        return x - 1, t
    return r, t


def comp_raises_after_break(x):
    i = 5
    try:
        r = [(x * i).tolist()[0] / (i - 1) for i in range(3)]  # i == 1 raises after a break
    except ZeroDivisionError:
        return x - 1, i
    return r, i


def _check(fn, *args, raises_later=False):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    got = ex.result
    assert type(got) is type(want)
    assert repr(got) == repr(want) or torch.equal(torch.as_tensor(got[0] if isinstance(got, tuple) else got),
                                                  torch.as_tensor(want[0] if isinstance(want, tuple) else want))
    if isinstance(want, tuple):
        assert got[1] == want[1]
    # the first piece (before the first break) is compiled; a piece that raises runs eagerly
    assert not any(r["event"] == "fallback" and r["name"] == fn.__name__ for r in ex.records[:1]), ex.break_reasons
    if not raises_later:
        assert not any(r["event"] == "fallback" and r["name"] == fn.__name__ for r in ex.records), ex.break_reasons
    assert ex.graph_count >= 2 and ex.graph_break_count >= 1, ex.break_reasons
    cf = torchc.compile(fn)
    for _ in range(2):
        again = cf(*args)
        assert repr(again) == repr(want)


X = torch.tensor([0.5, -1.0, 2.0, 0.25])
TS = [torch.tensor([1.0, 2.0, 3.0, 4.0]), -torch.ones(4), torch.ones(4)]


def test_comprehension_over_a_tuple():
    _check(comp_tuple, X, TS, 1.5)


def test_comprehension_variable_restored():
    _check(comp_range, X, 4)
    _check(comp_range, -X, 3)


def test_comprehension_inside_try():
    _check(comp_item, X)


@pytest.mark.allow_fallback  # the piece that raises runs eagerly
def test_exception_in_the_resumed_comprehension():
    _check(comp_raises_after_break, X, raises_later=True)
