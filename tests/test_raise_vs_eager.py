"""Code that asks torch.compiler.is_compiling() (True in captured code, False in eager) must
not raise under torchc where eager runs (transformers' `if attention_mask is None and not
is_torchdynamo_compiling(): attention_mask = torch.ones(...)`, then attention_mask[:, None]).

Two ways the traced True reached eager code, both differential against eager here:
- a helper frame with no tensor work that returns is_compiling() (transformers'
  is_torchdynamo_compiling), entered from a frame running eagerly, was captured on its own and
  returned True to that eager caller: such a frame now runs eagerly (symbolic.c trace_once);
- a frame whose trace took the compiled path (mask left None) and then called a function the
  trace proves raises with that None broke at the call, which ran eagerly with None and
  raised: the frame now runs eagerly (sym_exc.c sym_refuse_raise_break), as Dynamo abandons
  a frame an exception escapes.
A frame that raises in eager still raises the same exception."""
import sys
import os

import pytest
import torch

import torchc


def _is_compiling():  # transformers.utils.import_utils.is_torchdynamo_compiling's shape
    try:
        import torch

        return torch.compiler.is_compiling()
    except Exception:
        return False


def _masked(x, mask=None):  # the trace fails at mask[...] (None): the frame runs eagerly
    if mask is None and not _is_compiling():
        mask = torch.ones(x.shape[0], x.shape[1])
    m = mask[:, None, :]
    return x * m.sum(-1) + 1


def _split(m):
    return m.reshape(m.shape[0], -1, 2)


def _block_mask(x, mask=None):  # the trace breaks at _split(None) without the fix
    if mask is None and not _is_compiling():
        mask = torch.ones(x.shape[0], x.shape[1])
    y = x.sin()
    b = _split(mask)
    return y * b.sum()


def _outer(x):
    y = x.cos() * 2
    return _masked(y) + _block_mask(y)


def _reasons(ex):
    return [str(r) for r in ex.break_reasons]


@pytest.mark.allow_fallback  # the helper and the failing frame run eagerly, with reasons
def test_eager_caller_gets_eager_is_compiling_answer():
    x = torch.randn(3, 4)
    want = _outer(x)
    torchc.reset()
    ex = torchc.explain(_outer)(x)
    torch.testing.assert_close(ex.result, want)
    assert ex.graph_count >= 1
    rs = _reasons(ex)
    assert any("_is_compiling" in r and "no tensor operation to compile" in r for r in rs), rs
    for _ in range(2):  # cached entries (fallbacks and graphs) give eager's result too
        torch.testing.assert_close(torchc.compile(_outer)(x), want)


@pytest.mark.allow_fallback
def test_break_at_call_that_raises_after_is_compiling_runs_frame_eagerly():
    x = torch.randn(2, 6)
    want = _block_mask(x)
    torchc.reset()
    ex = torchc.explain(_block_mask)(x)
    torch.testing.assert_close(ex.result, want)
    rs = _reasons(ex)
    assert any("is_compiling() True" in r and "the frame runs eagerly" in r for r in rs), rs
    torch.testing.assert_close(torchc.compile(_block_mask)(x), want)
    x1 = torch.randn(1, 2)  # edge shape: a new specialization, the same answer
    torch.testing.assert_close(torchc.compile(_block_mask)(x1), _block_mask(x1))


def test_is_compiling_in_frame_with_tensor_work_still_true():
    """Unchanged: a frame with graph operations answers True, as under torch.compile."""
    def f(x):
        return x + (1 if _is_compiling() else 100)

    x = torch.zeros(3)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, _reasons(ex)
    torch.testing.assert_close(ex.result, x + 1)


def _none_attr(m):
    return m.shape[0]


@pytest.mark.allow_fallback
def test_genuine_raise_still_raises_same_exception():
    """Eager raises: so does the compiled call, with eager's exception, with or without an
    is_compiling() answer before the raise."""
    def f(x, mask=None):
        y = x * 2
        return y + _none_attr(mask)

    def g(x, mask=None):
        y = x * 2
        if _is_compiling() or True:
            pass
        return y + _split(mask).sum()

    x = torch.randn(2, 4)
    for fn, exc in ((f, AttributeError), (g, AttributeError)):
        with pytest.raises(exc) as want:
            fn(x)
        torchc.reset()
        with pytest.raises(exc) as got:
            torchc.compile(fn)(x)
        assert str(got.value) == str(want.value)
        with pytest.raises(exc):
            torchc.compile(fn)(x)
    # compiles the same functions where eager runs
    torchc.reset()
    m = torch.ones(2, 4)
    torch.testing.assert_close(torchc.compile(g)(x, m), g(x, m))


@pytest.mark.allow_fallback
def test_except_clause_still_catches_none_subscript_and_attribute():
    """None[...] and None.shape are raises the trace proves: the frame's own except runs."""
    def f(x, mask=None):
        y = x + 1
        try:
            m = mask[0]
        except TypeError:
            m = 3
        return y * m

    def g(x, mask=None):
        try:
            n = mask.shape[0]
        except AttributeError:
            n = 3
        return x * n

    x = torch.randn(5)
    for fn in (f, g):
        torchc.reset()
        ex = torchc.explain(fn)(x)
        torch.testing.assert_close(ex.result, fn(x))
        assert ex.graph_count >= 1


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("name", ["switch_transformers", "longt5"])
def test_tiny_transformers_mask_built_in_eager(name):
    transformers = pytest.importorskip("transformers")
    S = pytest.importorskip("sweep_tiny")
    cfg = S.tiny_config(name)
    torch.manual_seed(0)
    m = transformers.AutoModel.from_config(cfg).eval()
    inp, _ = S.make_inputs(m, cfg, False)
    with torch.no_grad():
        want = m(**inp)
        torchc.reset()
        ex = torchc.explain(m)(**inp)
    assert ex.graph_count >= 1
    torch.testing.assert_close(ex.result.last_hidden_state, want.last_hidden_state)


def test_compiled_function_itself_answers_is_compiling_true():
    """The function handed to torchc.compile is captured code even with no tensor work: it
    answers True, as under torch.compile; a helper it calls (inlined) too."""
    def f():
        return torch.compiler.is_compiling()

    def g():
        return _is_compiling()

    torchc.reset()
    assert f() is False and g() is False
    assert torchc.compile(f)() is True
    assert torchc.compile(g)() is True
    assert torchc.compile(g)() is True  # the cached entry
