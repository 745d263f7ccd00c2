"""Capture gaps of issue 21, round 4: a user TorchFunctionMode active around a compiled call.

Only a lone torch.device context is captured around a call (modes entered inside the compiled
function are traced through their __torch_function__, sym_tfm.c); any other mode on the stack
sends the frame to eager. The reason explain() gives now names the active modes and says
what is captured, and the results stay eager's (the mode's rewrites included).
"""
import pytest
import torch
from torch.overrides import TorchFunctionMode

import torchc


class AddIsMul(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.add:
            return torch.mul(*args, **kwargs)
        return func(*args, **kwargs)


def f(x):
    return torch.add(x, 2).sin() * 3


@pytest.mark.allow_fallback
@pytest.mark.parametrize("shape", [(4,), (0,), (2, 3)])
def test_user_mode_around_call_named_in_reason(shape):
    torchc.reset()
    x = torch.randn(shape)
    ex = torchc.explain(f)(x)                     # no mode: captured whole
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    torch.testing.assert_close(ex.result, f(x))
    with AddIsMul():
        ref = f(x)
        ex = torchc.explain(f)(x)
    torch.testing.assert_close(ex.result, ref)    # the mode's rewrite applied, as eager
    mine = [str(r) for r in ex.break_reasons if str(r).startswith("f (") and "test_capture_round4_modes" in str(r)]
    assert mine and all("AddIsMul" in r and "TorchFunctionMode is active around the call" in r
                        for r in mine), ex.break_reasons
