"""torch.jit.script functions called in compiled code (dynamo_hook/sym_call.c
inline_script_source): the Python function torch.jit.script compiled, which it keeps as the
ScriptFunction's `_torchdynamo_inline`, is inlined in its place (deberta's and vits' scripted
helpers broke the graph before). A ScriptFunction without one stays a break, with its reason."""
import pytest
import torch

import torchc


@torch.jit.script
def _scripted_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))


@torch.jit.script
def _scripted_tanh(x):
    return torch.tanh(x)


@torch.jit.script
def _scripted_two(x, y: int):
    return x.softmax(-1) * y, x.sum(-1)


def test_scripted_function_is_inlined_whole():
    def f(x):
        a, b = _scripted_two(_scripted_gelu(x + 1), 3)
        return a * 2 + b.unsqueeze(-1)

    for shape in [(4, 5), (1, 1), (0, 3), (3, 7)]:
        x = torch.randn(shape)
        torchc.reset()
        ex = torchc.explain(f)(x)
        assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count > 3, ex.break_reasons
        torch.testing.assert_close(ex.result, f(x))


def test_rebinding_the_scripted_global_recompiles():
    g = {"torch": torch}
    exec("def f(x):\n    return h(x) + 1\n", g)
    g["h"] = _scripted_gelu
    x = torch.randn(6)
    cf = torchc.compile(g["f"])
    torchc.reset()
    torch.testing.assert_close(cf(x), g["f"](x))
    g["h"] = _scripted_tanh
    torch.testing.assert_close(cf(x), torch.tanh(x) + 1)


@pytest.mark.allow_fallback  # a ScriptFunction with no Python function: a break
def test_script_function_without_python_source_breaks_cleanly():
    sf = torch.jit.script(_scripted_gelu._torchdynamo_inline)
    del sf._torchdynamo_inline

    def f(x):
        return sf(x * 2) + 1

    x = torch.randn(5)
    torchc.reset()
    ex = torchc.explain(f)(x)
    torch.testing.assert_close(ex.result, f(x))
    assert any("ScriptFunction" in r for r in ex.break_reasons), ex.break_reasons
