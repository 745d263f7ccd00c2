"""nn.Module.to(...) inside forward (SwitchTransformers' router: `self.classifier =
self.classifier.to(self.dtype)`), captured as eager runs it when it converts nothing: the
module itself, its tensors unchanged and guarded (dynamo_hook/ops_modto.c). A conversion is
left to eager with its reason, so the module is converted as eager converts it."""
import pytest
import torch
from torch import nn

import torchc


class Router(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.classifier = nn.Linear(8, 4)
        self.norm = nn.BatchNorm1d(4)
        self.dtype = torch.float32
        self.how = how

    def forward(self, x):
        if self.how == "dtype":
            self.classifier = self.classifier.to(self.dtype)
        elif self.how == "device":
            self.classifier.to("cpu")
        elif self.how == "both":
            self.to(device=x.device, dtype=x.dtype, non_blocking=True)
        elif self.how == "self_dtype":
            self.to(x.dtype)
        return self.norm(self.classifier(x)).softmax(-1)


X = torch.randn(6, 8)


def _run(m, x, graphs=1, breaks=0):
    ref = m(x)
    torchc.reset()
    cm = torchc.compile(m)
    for _ in range(2):
        got = cm(x)
        assert got.dtype == ref.dtype
        torch.testing.assert_close(got, ref)
    ex = torchc.explain(m)(x)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), ex.break_reasons
    return ex


@pytest.mark.parametrize("how", ["dtype", "device", "both", "self_dtype"])
def test_module_to_without_conversion_is_captured(how):
    m = Router(how).eval()
    _run(m, X)
    assert m.classifier.weight.dtype == torch.float32


@pytest.mark.allow_fallback
def test_module_to_that_converts_runs_eagerly():
    m = Router("self_dtype").eval().double()  # .to(float32) converts the whole module, as in eager
    ref_m = Router("self_dtype").eval().double()
    ref_m.load_state_dict(m.state_dict())
    x = X
    ref = ref_m(x)
    torchc.reset()
    ex = torchc.explain(m)(x)
    assert any("Module.to that converts" in r for r in ex.break_reasons), ex.break_reasons
    assert m.classifier.weight.dtype == torch.float32 == ref_m.classifier.weight.dtype
    got = torchc.compile(m)(x)
    assert got.dtype == ref.dtype
    torch.testing.assert_close(got, ref)


def test_module_to_guards_the_tensors():
    m = Router("self_dtype").eval()
    torchc.reset()
    cm = torchc.compile(m)
    torch.testing.assert_close(cm(X), m(X))
    m.double()  # now .to(float64) of a float64 input converts nothing again: a retrace
    x = X.double()
    got = cm(x)
    assert got.dtype == torch.float64 and m.classifier.weight.dtype == torch.float64
    torch.testing.assert_close(got, m(x))
    ex = torchc.explain(m)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
