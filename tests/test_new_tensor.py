"""Tensor.new_tensor(data): torch.tensor(data) with the tensor's dtype and device unless given
(Funnel builds its class-token position this way; it was a break)."""
import pytest
import torch

import torchc

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.bfloat16],
                         ids=str)
def test_new_tensor_like_eager(device, dt):
    def f(x):
        a = x.new_tensor([1, 0, 3])
        b = x.new_tensor(2)
        c = x.new_tensor([[1.5, -2.0]], dtype=torch.float32)
        d = x.new_tensor([], dtype=torch.int64)
        return a, b, c, d, (x[:3].to(torch.float32) * a.to(torch.float32) + b)

    x = (torch.randn(5) * 3).to(dt).to(device)
    with torch.no_grad():
        ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    for got, want in zip(ex.result, f(x)):
        assert got.dtype == want.dtype and got.shape == want.shape and got.device == want.device
        torch.testing.assert_close(got, want)


def test_new_tensor_in_position_ids():
    # the Funnel idiom: a position made from a tensor's new_tensor, concatenated
    def f(pos, k: int):
        cls = pos.new_tensor([-(2**k) + 1])
        return torch.cat([cls, pos[1:]]) * 2

    pos = torch.arange(8)
    ex = torchc.explain(f)(pos, 2)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert torch.equal(ex.result, f(pos, 2))
