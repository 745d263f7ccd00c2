"""torchc.compile's options are part of the cache key (issue 25): one function compiled twice
with different fullgraph / dynamic / mode never takes the other's entry, and fullgraph=True
raises at every call that cannot be one graph (as torch.compile does), never running eagerly
on a later call."""
import pytest
import torch

import torchc


def _breaks(x):
    y = x * 2
    print("break")  # a graph break under fullgraph=False
    return y + 1


@pytest.mark.allow_fallback
def test_fullgraph_does_not_reuse_a_broken_entry(capsys):
    x = torch.ones(3)
    torchc.compile(_breaks)(x)  # two graphs around the print: entries with a break
    full = torchc.compile(_breaks, fullgraph=True)
    with pytest.raises(RuntimeError, match=r"fullgraph=True.*print"):
        full(x)


@pytest.mark.no_compile
def test_fullgraph_raises_at_every_call():
    full = torchc.compile(_breaks, fullgraph=True)
    for _ in range(3):  # the failed capture is cached: its later hits raise too
        with pytest.raises(RuntimeError, match=r"fullgraph=True.*test_api_dropin_keys.py:\d+"):
            full(torch.ones(3))


@pytest.mark.no_compile
def test_fullgraph_after_failures_skipped_the_code():
    np = pytest.importorskip("numpy")

    def f(x, a):
        return x + a.sum()  # a numpy argument: the whole frame runs eagerly

    g = torchc.compile(f)
    for n in (2, 3, 4, 5):  # three failed captures in a row: the code is skipped
        g(torch.ones(n), np.ones(n))
    with pytest.raises(RuntimeError, match=r"fullgraph=True.*numpy.ndarray\n  at .*test_api_dropin_keys.py:\d+"):
        torchc.compile(f, fullgraph=True)(torch.ones(6), np.ones(6))


@pytest.mark.allow_fallback
def test_fullgraph_recompile_limit_raises():
    def f(x):
        return x + 1

    g = torchc.compile(f, fullgraph=True, dynamic=False, recompile_limit=2)
    g(torch.ones(1))
    g(torch.ones(2))
    with pytest.raises(RuntimeError, match=r"recompile limit \(2\) reached with fullgraph=True"):
        g(torch.ones(3))
    with pytest.raises(RuntimeError, match="fullgraph=True"):
        g(torch.ones(4))


def _scale(x):
    return x.sum(0) * 2


def test_dynamic_false_does_not_take_a_symbolic_entry():
    x = torch.randn(4, 3)
    e = torchc.explain(torchc.compile(_scale, dynamic=True))(x)
    assert e.graph_count == 1 and "sym=" in e.graphs[0], e
    e = torchc.explain(torchc.compile(_scale, dynamic=False))(x)
    assert e.graph_count == 1 and "sym=" not in e.graphs[0], e  # compiled anew, specialized
    assert any(g.startswith("TENSOR_MATCH") and "shape=(4, 3)" in g for g in e.guards), e.guards
    torch.testing.assert_close(e.result, _scale(x))
    e = torchc.explain(torchc.compile(_scale, dynamic=True))(torch.randn(7, 3))  # hits its own
    assert e.graph_count == 1 and "sym=" in e.graphs[0], e


def test_dynamic_true_does_not_take_a_static_entry():
    x = torch.randn(5, 3)
    torchc.compile(_scale, dynamic=False)(x)
    e = torchc.explain(torchc.compile(_scale, dynamic=True))(x)
    assert e.graph_count == 1 and "sym=" in e.graphs[0], e


def test_same_options_share_entries(count_compiles):
    x = torch.randn(4, 3)
    a, b = torchc.compile(_scale, dynamic=False), torchc.compile(_scale, dynamic=False)
    a(x)
    n = count_compiles()
    b(x)
    assert count_compiles() == n  # a cache hit across wrappers with the same options


def test_autotune_is_part_of_the_key(count_compiles):
    x = torch.randn(4, 3)
    torchc.compile(_scale, dynamic=False)(x)
    n = count_compiles()
    torchc.compile(_scale, dynamic=False, mode="max-autotune-no-cudagraphs")(x)
    assert count_compiles() == n + 1


@pytest.fixture
def count_compiles():
    torchc.reset()
    return lambda: torchc._C.stats()["compiles"]
