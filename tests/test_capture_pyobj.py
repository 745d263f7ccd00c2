"""Python object model gaps found on real models (issue 21): module hook dicts, classes made
inside the compiled frame, recursive nested functions, copy.deepcopy of plain objects, break
reasons and their counts. Each test compares with eager and asserts torchc.explain's graph and
break counts, so a silent fallback fails it."""
import torch

import torchc
from conftest import assert_same


def whole(fn, *args, graphs=1):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex
    return ex.result, want


# ---- len() and truthiness of a module's hook dicts (nn.TransformerEncoderLayer's fast-path check)

def test_len_of_module_hook_dicts():
    lin = torch.nn.Linear(4, 4)

    def f(x):
        n = sum(len(getattr(m, "_forward_hooks", {})) + len(getattr(m, "_forward_pre_hooks", {}))
                for m in lin.modules())
        if lin._forward_hooks:
            n = n + 10
        return x * (n + 1)

    x = torch.randn(3, 4)
    got, want = whole(f, x)
    assert_same(got, want)
    # a hook registered later: the length is guarded, the new length is seen
    h = lin.register_forward_hook(lambda m, i, o: None)
    try:
        cf = torchc.compile(f)
        assert_same(cf(x), f(x))
        assert_same(cf(x), x * 12)
    finally:
        h.remove()
    assert_same(cf(x), x)
