"""scaled_dot_product_attention with batch dims that broadcast (multi-query attention: key and
value [B, 1, S, E] against query [B, H, L, E], as Falcon writes it): one graph, eager's values
and gradients (it was a break: "batch dims of query, key, value differ")."""
import pytest
import torch
import torch.nn.functional as F

import torchc


def sdpa(q, k, v, m=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


SHAPES = [
    ((2, 4, 5, 8), (2, 1, 7, 8), (2, 1, 7, 8)),   # multi-query key/value
    ((1, 4, 5, 8), (3, 4, 7, 8), (3, 4, 7, 8)),   # query broadcast over the batch
    ((2, 4, 5, 8), (2, 4, 7, 8), (1, 1, 7, 8)),   # value alone broadcast
    ((2, 3, 1, 1, 8), (2, 1, 4, 6, 8), (1, 3, 4, 6, 8)),  # 5-d, two batch dims each way
    ((2, 4, 1, 8), (2, 1, 1, 8), (2, 1, 1, 8)),   # length 1
]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("masked", [False, True])
def test_broadcast_batch_dims(shapes, masked):
    q, k, v = (torch.randn(s) for s in shapes)
    args = (q, k, v) + ((torch.randn(q.shape[-2], k.shape[-2]),) if masked else ())
    with torch.no_grad():
        ex = torchc.explain(sdpa)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    want = sdpa(*args)
    assert ex.result.shape == want.shape and ex.result.dtype == want.dtype
    torch.testing.assert_close(ex.result, want)


def test_non_contiguous_multi_query():
    q = torch.randn(2, 5, 4, 8).transpose(1, 2)
    kv = torch.randn(2, 7, 2, 8)
    k, v = kv[:, :, :1].transpose(1, 2), kv[:, :, 1:].transpose(1, 2)
    with torch.no_grad():
        ex = torchc.explain(sdpa)(q, k, v)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, sdpa(q, k, v))


def test_multi_query_gradients():
    shapes = ((2, 4, 5, 8), (2, 1, 7, 8), (2, 1, 7, 8))
    leaves = [torch.randn(s, requires_grad=True) for s in shapes]
    ex = torchc.explain(sdpa)(*leaves)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    (ex.result * torch.arange(8.0)).sum().backward()
    got = [x.grad.clone() for x in leaves]
    for x in leaves:
        x.grad = None
    (sdpa(*leaves) * torch.arange(8.0)).sum().backward()
    for g, x in zip(got, leaves):
        assert g.shape == x.shape
        torch.testing.assert_close(g, x.grad)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_batch_dims_that_do_not_broadcast_raise_as_eager():
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(3, 4, 7, 8), torch.randn(3, 4, 7, 8)
    with pytest.raises(RuntimeError):
        sdpa(q, k, v)
    with pytest.raises(RuntimeError):
        torchc.compile(sdpa)(q, k, v)


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _close_as_eager(got, want, ref):
    """float32: eager's values. float16/bfloat16: torchc may run another attention kernel than
    eager on the expanded operands (measured on an H100: forward errors against float64 within
    1.4x of eager's, gradients within 2.7x), so the rule is the dynamo harness's: torchc's error
    against a float64 reference at most 3x eager's (RMSE), plus a small floor."""
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype == torch.float32:
        torch.testing.assert_close(got, want)
        return
    def rmse(a):
        return (a.double() - ref).pow(2).mean().sqrt().item()
    assert rmse(got) <= 3 * rmse(want) + 1e-4, (rmse(got), rmse(want))


@CUDA
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("masked", [False, True])
def test_broadcast_batch_dims_cuda(shapes, dtype, masked):
    """On CUDA the expanded (stride-0) operands reach the flash / cuDNN / efficient externs."""
    q, k, v = (torch.randn(s, device="cuda", dtype=dtype) for s in shapes)
    m = (torch.randn(q.shape[-2], k.shape[-2], device="cuda", dtype=dtype),) if masked else ()
    with torch.no_grad():
        ex = torchc.explain(sdpa)(q, k, v, *m)
        want = sdpa(q, k, v, *m)
        ref = sdpa(*(x.double() for x in (q, k, v) + m))
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    _close_as_eager(ex.result, want, ref)


@CUDA
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_multi_query_gradients_cuda(dtype):
    shapes = ((2, 4, 5, 64), (2, 1, 7, 64), (2, 1, 7, 64))
    leaves = [torch.randn(s, device="cuda", dtype=dtype, requires_grad=True) for s in shapes]
    w = torch.arange(64.0, device="cuda", dtype=dtype) / 64
    ex = torchc.explain(sdpa)(*leaves)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    (ex.result * w).sum().backward()
    got = [x.grad.clone() for x in leaves]
    for x in leaves:
        x.grad = None
    (sdpa(*leaves) * w).sum().backward()
    l64 = [x.detach().double().requires_grad_() for x in leaves]
    (sdpa(*l64) * w.double()).sum().backward()
    for g, x, r in zip(got, leaves, l64):
        _close_as_eager(g, x.grad, r.grad)
