"""A matrix product with contraction length 1 ([M, 1] x [1, N], an outer product) is lowered
to a broadcast multiply on the CPU (dynamo_hook/ops_extern.c sym_outer_product): values as
eager's to the bit (one product per element, no sum), fused with its consumers, no extern
node; its gradients are reductions. expRNN's step uses it for a one-feature input projection
(torchc.manifolds.rnn._recurrence), and the partitioner saves one [N, n] value per step for it
(graph/partition.c: small broadcast inputs do not count against recomputation)."""
import pytest
import torch

import torchc
from torchc import manifolds as M

from conftest import explain_of


def _externs(fn, *args):
    torchc.reset()
    ex = explain_of(fn, *args)
    if ex.graph_count != 1 or ex.graph_break_count != 0:
        raise AssertionError(ex)
    return len(ex.extern_calls)


def _ops():
    return [
        lambda a, b: (torch.mm(a, b) + 1).relu(),
        lambda a, b: torch.matmul(a, b) * 2,
        lambda a, b: (a @ b).tanh(),
        lambda a, b: a.mm(b).sum(0),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("M_,N_", [(5, 7), (1, 1), (0, 3), (4, 0), (33, 1), (1, 17)])
@pytest.mark.parametrize("k", range(4))
def test_outer_product_lowered_bitwise(dtype, M_, N_, k):
    fn = _ops()[k]
    torch.manual_seed(k)
    a, b = torch.randn(M_, 1, dtype=dtype), torch.randn(1, N_, dtype=dtype)
    want = fn(a, b)
    got = torchc.compile(fn)(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.numel() == 0 or got.stride() == want.stride()
    # the product itself to the bit; what follows it (tanh, a sum) within rounding
    tol = 1e-6 if dtype == torch.float32 else 1e-13
    assert torch.allclose(got, want, rtol=tol, atol=tol)
    assert _externs(fn, a, b) == 0
    prod = torchc.compile(lambda a, b: torch.mm(a, b))(a, b)
    assert prod.numel() == 0 or prod.stride() == torch.mm(a, b).stride()
    assert torch.equal(prod, torch.mm(a, b))


def test_outer_product_non_contiguous_and_broadcast_views():
    torch.manual_seed(0)
    a = torch.randn(1, 9).t()          # [9, 1] with strides (1, 1)
    b = torch.randn(6, 2)[:, :1].t()   # [1, 6] with stride 2 along N

    def fn(a, b):
        return torch.mm(a, b) - 0.5
    assert torch.equal(torchc.compile(fn)(a, b), fn(a, b))
    assert _externs(fn, a, b) == 0


@pytest.mark.parametrize("sa,sb,dtype", [
    ((5, 2), (2, 7), torch.float32),          # K = 2: a GEMM
    ((3, 5, 1), (3, 1, 4), torch.float32),    # batched: bmm stays an extern
    ((5, 1), (1, 7), torch.bfloat16),         # not float32/float64
])
def test_other_products_stay_externs(sa, sb, dtype):
    a, b = torch.randn(sa, dtype=dtype), torch.randn(sb, dtype=dtype)

    def fn(a, b):
        return torch.matmul(a, b) + 1
    got, want = torchc.compile(fn)(a, b), fn(a, b)
    assert torch.allclose(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    assert _externs(fn, a, b) == 1


def test_outer_product_mixed_dtypes_raise_like_eager():
    a, b = torch.randn(4, 1), torch.randn(1, 3, dtype=torch.float64)

    def fn(a, b):
        return torch.mm(a, b)
    with pytest.raises(RuntimeError) as e_eager:
        fn(a, b)
    with pytest.raises(RuntimeError) as e_tc:
        torchc.compile(fn)(a, b)
    assert type(e_tc.value) is type(e_eager.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_outer_product_gradients(dtype):
    torch.manual_seed(3)
    a = torch.randn(7, 1, dtype=dtype, requires_grad=True)
    b = torch.randn(1, 5, dtype=dtype, requires_grad=True)
    g = torch.randn(7, 5, dtype=dtype)

    def fn(a, b):
        return (torch.mm(a, b) + 0.1).relu()
    want = torch.autograd.grad(fn(a, b), (a, b), g)
    got = torch.autograd.grad(torchc.compile(fn)(a, b), (a, b), g)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for x, y in zip(got, want):
        assert torch.allclose(x, y, rtol=tol, atol=tol)
    assert _externs(fn, a, b) == 0


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_exprnn_one_feature_input_trains_like_eager(dtype):
    """ExpRNN(1, n) (the pixel-by-pixel setting): the step's input projection is an outer
    product inside the scanned body; values and every gradient (W_in's summed per step, B's
    from the stacked dz of _StepGradTap) as the eager cell loop's, run in C."""
    torch.manual_seed(5)
    m = M.ExpRNN(1, 12).to(dtype)
    x = torch.randn(50, 4, 1, dtype=dtype)
    h0 = torch.randn(4, 12, dtype=dtype, requires_grad=True)
    params = list(m.parameters()) + [h0]
    loops, runs = torchc._C._scan_stats()
    H, h = m(x, h0)
    got = torch.autograd.grad(H.cos().sum() + (h ** 2).sum(), params)
    assert torchc._scan.last_fallback is None
    assert torchc._C._scan_stats()[1] - runs == 49 + 50
    hh, outs = h0, []
    for t in range(50):
        hh = m.cell(x[t], hh)
        outs.append(hh)
    He = torch.stack(outs)
    want = torch.autograd.grad(He.cos().sum() + (hh ** 2).sum(), params)
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert ((H - He).norm() / He.norm()).item() < tol
    for g, w in zip(got, want):
        assert ((g - w).norm() / w.norm()).item() < tol, (g - w).abs().max()
    with torch.no_grad():  # inference: no tap node, the same values
        H2, h2 = m(x, h0)
    assert ((H2 - H.detach()).norm() / H.norm()).item() < tol
