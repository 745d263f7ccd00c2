"""Recompile reasons a user reads (issue 25): which property of which argument changed, as
torch's "tensor 'x' dtype mismatch. expected Float, actual Double", and a recompile caused by
other compile options (fullgraph, dynamic, mode, backend) names them. The cache probe used by
the CUDA graph layer (torchc._C.probe) answers under the caller's options, as a call does."""
import logging

import pytest
import torch

import torchc


@pytest.fixture
def recompiles(caplog):
    lg = logging.getLogger("torchc")
    lg.addHandler(caplog.handler)
    torchc.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="torchc"):
            yield caplog
    finally:
        torchc.set_logs(all=False)
        lg.removeHandler(caplog.handler)


def _reasons(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "torchc.recompiles"]


def _check(change, want, recompiles):
    """one call, then the changed call: one recompile whose reason says `want`"""
    torchc.reset()
    recompiles.clear()

    def f(x):
        return (x * 2).sum()

    g = torchc.compile(f, dynamic=False)
    first, second = change()
    g(first)
    g(second)
    msgs = _reasons(recompiles)
    assert len(msgs) == 1, msgs
    assert "Recompiling function" in msgs[0] and "'x'" in msgs[0], msgs[0]
    assert want in msgs[0], msgs[0]


@pytest.mark.parametrize("change,want", [
    (lambda: (torch.ones(3), torch.ones(3, dtype=torch.float64)), "dtype mismatch. expected f32, actual f64"),
    (lambda: (torch.ones(3), torch.ones(5)), "size mismatch at index 0. expected 3, actual 5"),
    (lambda: (torch.ones(3, 2), torch.ones(3)), "rank mismatch. expected 2 dims, actual 1"),
    (lambda: (torch.ones(3, 4), torch.ones(4, 3).T), "stride mismatch at index 0. expected 4, actual 1"),
    (lambda: (torch.ones(3), torch.ones(3, requires_grad=True)), "requires_grad mismatch. expected requires_grad=0"),
], ids=["dtype", "size", "rank", "stride", "requires_grad"])
def test_recompile_reason_names_the_property(change, want, recompiles):
    _check(change, want, recompiles)


def test_recompile_reason_grad_mode_and_constant(recompiles):
    def f(x, k):
        return x.sin() * k

    g = torchc.compile(f)
    x = torch.ones(3, requires_grad=True)
    g(x, 2)
    with torch.no_grad():
        g(x, 2)
    g(x, 3)
    msgs = _reasons(recompiles)
    assert len(msgs) == 2, msgs
    assert "grad mode changed. expected grad_mode=1, actual 0" in msgs[0], msgs[0]
    # every cached entry's failure, newest first (as torch lists them)
    assert "guard failures (newest entry first):\n    - GLOBAL_STATE grad_mode=0: grad mode changed. " \
           "expected grad_mode=0, actual 1\n    - CONSTANT_MATCH 'k' == 2: actual 3" in msgs[1], msgs[1]


@pytest.mark.parametrize("first,second,want", [
    ({"fullgraph": False}, {"fullgraph": True}, "fullgraph=False, dynamic=None, mode=default, backend=torchc; "
                                                "this call has fullgraph=True, dynamic=None"),
    ({"dynamic": True}, {"dynamic": False}, "compiled with fullgraph=False, dynamic=True"),
    ({}, {"backend": "eager"}, "this call has fullgraph=False, dynamic=None, mode=default, backend=eager"),
], ids=["fullgraph", "dynamic", "backend"])
def test_options_mismatch_recompile_says_so(first, second, want, recompiles):
    """The same function compiled again with other options: its cached entries never serve
    the new wrapper (tests/test_parity.py dynamic_then_static), and the recompile says why."""
    def f(x):
        return x.cos() + 1

    x = torch.ones(4)
    torchc.compile(f, **first)(x)
    ex = torchc.explain(torchc.compile(f, **second))(x)
    assert ex.graph_count == 1
    msgs = _reasons(recompiles)
    assert len(msgs) == 1 and "COMPILE_OPTIONS: the cached entries were compiled with" in msgs[0], msgs
    assert want in msgs[0], msgs[0]


def test_options_mismatch_reason_in_fail_on_recompile(recompiles):
    def f(x):
        return x.exp()

    torchc.compile(f, dynamic=True)(torch.ones(3))
    g = torchc.compile(f, dynamic=False)
    with torch.compiler.set_stance("fail_on_recompile"):
        with pytest.raises(RuntimeError, match="COMPILE_OPTIONS.*dynamic=True.*dynamic=False"):
            g(torch.ones(3))


def test_reason_prefers_an_entry_with_the_same_options(recompiles):
    """Entries of another wrapper do not hide the guard that failed in this one's."""
    def f(x):
        return x.tan()

    torchc.compile(f, fullgraph=True)(torch.ones(2))
    g = torchc.compile(f, dynamic=False)
    g(torch.ones(2))  # options mismatch
    g(torch.ones(5))  # a size change of g's own entry
    msgs = _reasons(recompiles)
    assert len(msgs) == 2, msgs
    assert "COMPILE_OPTIONS" in msgs[0] and "size mismatch at index 0. expected 2, actual 5" in msgs[1], msgs


def test_probe_answers_under_the_callers_options():
    """torchc._C.probe(fn, args, kwargs, compiled_function): only entries captured under that
    CompiledFunction's options (a replay of the CUDA graph layer must not take another
    wrapper's graph: a fullgraph=False entry may hold a break, a dynamic one symbols)."""
    def f(x):
        return x * 3 + 1

    x = torch.ones(4)
    a = torchc.compile(f, dynamic=False)
    b = torchc.compile(f, dynamic=True)
    a(x)
    ea = torchc._C.probe(f, (x,), None, a)
    assert isinstance(ea, int)
    assert torchc._C.probe(f, (x,), None) == ea        # no options given: any entry
    assert torchc._C.probe(f, (x,), None, b) is None   # b's call would not take a's entry
    b(x)
    eb = torchc._C.probe(f, (x,), None, b)
    assert isinstance(eb, int) and eb != ea
    assert torchc._C.probe(f, (x,), None, a) == ea
    assert torchc._C.probe(f, (torch.ones(4, dtype=torch.float64),), None, a) is None
    with pytest.raises(TypeError):
        torchc._C.probe(f, (x,), None, "not a compiled function")
