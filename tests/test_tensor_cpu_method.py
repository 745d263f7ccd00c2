"""Tensor.cpu() in compiled code (dynamo_hook/ops_pointwise.c sym_h_cpu): on a CPU graph it
is the tensor itself, as eager returns self (aria's router called .cpu() and broke the
graph); from a CUDA graph it is a device transfer, left to eager with a reason."""
import pytest
import torch

import torchc


def f(x):
    y = x.cpu() * 2
    return y + x.cpu().sum(-1, keepdim=True), x.cpu() is x


@pytest.mark.parametrize("shape", [(3, 4), (1, 1), (0, 5), (2, 3, 5)])
def test_cpu_of_a_cpu_tensor_is_whole_and_is_self(shape):
    x = torch.randn(shape)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    want = f(x)
    torch.testing.assert_close(ex.result[0], want[0])
    assert ex.result[1] is True


def test_cpu_of_a_non_contiguous_view_keeps_its_strides():
    x = torch.randn(4, 6).t()
    out = torchc.compile(lambda a: a.cpu())(x)
    assert out.stride() == x.stride() and torch.equal(out, x)


@pytest.mark.allow_fallback  # a transfer out of a CUDA graph: eager's
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_from_a_cuda_graph_transfers_like_eager():
    def g(x):
        return (x * 2).cpu() + 1

    x = torch.randn(5, device="cuda")
    torchc.reset()
    ex = torchc.explain(g)(x)
    assert ex.result.device.type == "cpu"
    torch.testing.assert_close(ex.result, g(x))
    assert any("cpu()" in r for r in ex.break_reasons), ex.break_reasons
