"""User-facing text of torchc's logs and explain() names the user's code (issue 25): graph
breaks under torch.compile(m, backend="torchc") point at the user's file:line (not the
forward FX generated), resume functions' fallbacks at a real line, and nothing a user reads
carries torchc's internal names."""
import inspect
import logging
import os
import re

import numpy as np
import pytest
import torch

import torchc

HERE = os.path.abspath(__file__)
# names a user must never read: resume functions, their stack slots, FX's generated files,
# C-level prefixes of torchc's layers, locals by index
INTERNAL = re.compile(r"torchc_resume|__torchc|<eval_with_key>|\b(dh|ic|tc|sym)_[a-z]\w*\(|\bL\[\d+\]|:-1\b")


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.fixture
def logs(caplog):
    lg = logging.getLogger("torchc")
    lg.addHandler(caplog.handler)
    torchc.set_logs(graph_breaks=True, recompiles=True, guards=True, perf=True)
    try:
        with caplog.at_level(logging.INFO, logger="torchc"):
            yield caplog
    finally:
        torchc.set_logs(all=False)
        lg.removeHandler(caplog.handler)


def _text(caplog):
    return "\n".join(r.getMessage() for r in caplog.records)


def _helper(y):
    return torch.linalg.svdvals(y)  # no torchc op: a break inside Dynamo's FX graph


class _M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.relu(self.lin(x))
        z = _helper(y)
        return y * 2 + z.sum()


def test_dynamo_backend_breaks_name_user_lines(logs):
    m = _M()
    cm = torch.compile(m, backend="torchc")
    x = torch.randn(4, 8)
    with torch.no_grad():
        torch.testing.assert_close(cm(x), m(x))
    text = _text(logs)
    brk = line_of(_helper, "svdvals")
    call = line_of(_M.forward, "_helper(y)")
    assert f"Graph break in user code at {HERE}:{brk}" in text, text
    assert f'File "{HERE}", line {call}, in forward' in text, text  # Dynamo's inlined stack
    assert f'File "{HERE}", line {brk}, in _helper' in text, text
    assert not INTERNAL.search(text), INTERNAL.search(text)


def _resumed(x, a):
    y = x.numpy()  # a break; the resume function then falls back (a numpy value)
    return x + 1


@pytest.mark.allow_fallback
def test_resume_fallback_has_a_real_line(logs):
    g = torchc.compile(_resumed)
    e = torchc.explain(g)(torch.ones(2), np.ones(2))
    text = _text(logs) + "\n" + "\n".join(e.break_reasons)
    assert not INTERNAL.search(text), (INTERNAL.search(text), text)
    assert f"{HERE}:{line_of(_resumed, 'x.numpy()')}" in text, text


def _inner(x):
    print("side effect")
    return x * 3


def _outer(x, n):
    return _inner(x + n).relu()


@pytest.mark.allow_fallback
def test_no_internal_names_anywhere(logs, capsys):
    g = torchc.compile(_outer)
    for n in (1, 2, 3):
        e = torchc.explain(g)(torch.ones(3), n)  # breaks, recompiles (n), guards, perf
    text = _text(logs) + "\n" + str(e).split("Graph 0:")[0] + "\n".join(e.guards)
    assert "Recompiling function _outer" in text and "Graph break in user code" in text, text
    assert not INTERNAL.search(text), (INTERNAL.search(text), text)
    with pytest.raises(RuntimeError) as ei:
        torchc.compile(_outer, fullgraph=True)(torch.ones(3), 1)
    assert not INTERNAL.search(str(ei.value)), str(ei.value)
    assert f"{HERE}:{line_of(_inner, 'print(')} in _inner" in str(ei.value), str(ei.value)


def _limited(x, n):
    y = x * 2
    print("side effect")  # a break: the resume function guards on n
    return y + len(range(n))  # n as range's count: specialized on each value (not a dynamic int)


@pytest.mark.allow_fallback
def test_recompile_limit_warning_names_the_users_function(capsys):
    import warnings
    g = torchc.compile(_limited, recompile_limit=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in (1, 2, 3):
            assert torch.equal(g(torch.ones(2), n), torch.ones(2) * 2 + n)
    msgs = [str(x.message) for x in w if "recompile limit" in str(x.message)]
    assert msgs, [str(x.message) for x in w]
    assert "reached for _limited" in msgs[0], msgs
    assert not INTERNAL.search(msgs[0]), msgs
    with torch.compiler.set_stance("fail_on_recompile"):
        torchc.reset()
        g(torch.ones(2), 1)
        with pytest.raises(RuntimeError) as ei:
            g(torch.ones(2), 2)
    assert "_limited" in str(ei.value) and not INTERNAL.search(str(ei.value)), str(ei.value)
