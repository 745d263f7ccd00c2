"""`key in model_output` (a transformers ModelOutput made in the traced frame, records.c): its
class's __contains__ is inlined (ModelOutput's renames old cache keys, then super().__contains__
answers on the non-None fields) instead of a break on "'in' on non-constant values"."""
from dataclasses import dataclass
from typing import Optional

import pytest
import torch

import torchc

ModelOutput = pytest.importorskip("transformers.utils").ModelOutput


@dataclass
class _Out(ModelOutput):
    logits: Optional[torch.Tensor] = None
    loss: Optional[torch.Tensor] = None
    past_key_values: Optional[torch.Tensor] = None


def _keys_in(x):
    o = _Out(logits=x * 2)
    y = o.logits + 1
    if "loss" in o:
        y = y + o.loss
    if "logits" in o:
        y = y * 3
    return y, "logits" in o, "loss" in o, "nope" not in o, "past_key_values" in o


def _keys_in_with_loss(x):
    o = _Out(logits=x * 2, loss=x.sum())
    return ("loss" in o) + o.logits, "loss" in o


@pytest.mark.parametrize("fn", [_keys_in, _keys_in_with_loss])
def test_in_on_a_model_output_is_captured(fn):
    x = torch.randn(5)
    torchc.reset()
    ex = torchc.explain(fn)(x)
    assert ex.graph_count == 1 and not ex.break_reasons, ex.break_reasons
    got, want = torchc.compile(fn)(x), fn(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1:] == want[1:]
