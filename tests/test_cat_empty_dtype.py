"""torch.cat skips 1-d empty tensors for the shapes (ATen's legacy rule, a cache grown from
torch.tensor([])) but keeps them in the result dtype: a float32 [0] cat with bfloat16 tensors
is float32 in eager. The trace used to stop there ("an empty 1-d tensor of another dtype"), as
in a transformers KV cache under bf16 autocast on CUDA; now one graph with eager's dtype."""
import pytest
import torch

import torchc

DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.int32, torch.bool]


def f(x, cache):
    return (torch.cat([cache, x], dim=-2) * 2, torch.cat([x, cache], dim=0),
            torch.cat([torch.tensor([], dtype=torch.int64), x.reshape(-1)]))


@pytest.mark.parametrize("xdt", DTYPES[:5])
@pytest.mark.parametrize("cdt", DTYPES)
def test_cat_with_an_empty_1d_tensor_promotes_like_eager(xdt, cdt):
    x = (torch.randn(2, 3, 4) * 5).to(xdt)
    cache = torch.tensor([], dtype=cdt)
    torchc.reset()
    ex = torchc.explain(f)(x, cache)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.op_count > 0
    for g, w in zip(ex.result, f(x, cache)):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_cat_only_empty_tensors_promotes():
    def g(a, b):
        return torch.cat([a, b]) + 0
    a, b = torch.tensor([], dtype=torch.float16), torch.tensor([], dtype=torch.int64)
    torchc.reset()
    ex = torchc.explain(g)(a, b)
    w = g(a, b)
    assert ex.result.dtype == w.dtype and ex.result.shape == w.shape
