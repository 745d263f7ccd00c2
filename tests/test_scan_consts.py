"""torchc.scan's loop constants read by a GEMM as a transposed view (h Wᵀ, F.linear(h, W)):
while the C loop runs, the GEMM reads a contiguous copy made once per loop (csrc/scan.c
tc_scan_consts_set, csrc/aten_bridge.cpp loop_const_layout). Values and gradients as eager's,
and a constant changed between two calls is read anew (the copy lives for one loop)."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from torchc import _scan


def eager_scan(fn, init, xs):
    c, ys = init, []
    for t in range(xs.shape[0]):
        c, y = fn(c, xs[t])
        ys.append(y)
    return c, torch.stack(ys)


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("kind", ["mm_t", "addmm_t", "linear", "linear_bias", "contiguous"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_transposed_constant_gemm_in_a_scan(kind, dtype):
    torch.manual_seed(0)
    n, N, T = 9, 4, 12
    W = (torch.randn(n, n, dtype=dtype) / n ** 0.5).requires_grad_()
    bias = torch.randn(n, dtype=dtype, requires_grad=True)
    Wc = W.detach().t().contiguous()

    def step(h, x):
        if kind == "mm_t":
            z = torch.mm(h, W.t()) + x
        elif kind == "addmm_t":
            z = torch.addmm(x, h, W.t())
        elif kind == "linear":
            z = F.linear(h, W) + x
        elif kind == "linear_bias":
            z = F.linear(h, W, bias) + x
        else:  # a contiguous constant: not copied
            z = torch.mm(h, Wc) + x
        h = torch.tanh(z)
        return h, h * 2
    h0 = torch.randn(N, n, dtype=dtype, requires_grad=True)
    xs = torch.randn(T, N, n, dtype=dtype, requires_grad=True)
    params = [h0, xs, W, bias] if kind != "contiguous" else [h0, xs]
    params = [p for p in params if kind == "linear_bias" or p is not bias]
    runs = torchc._C._scan_stats()[1]
    h, ys = torchc.scan(step, h0, xs)
    assert _scan.last_fallback is None
    assert torchc._C._scan_stats()[1] - runs == T - 1
    got = torch.autograd.grad((ys.sin()).sum() + h.square().sum(), params)
    he, yse = eager_scan(step, h0, xs)
    want = torch.autograd.grad((yse.sin()).sum() + he.square().sum(), params)
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    assert rel(h, he) < tol and rel(ys, yse) < tol
    for g, w in zip(got, want):
        assert rel(g, w) < tol


def test_constant_changed_between_calls_is_read_anew():
    torch.manual_seed(1)
    W = torch.randn(6, 6, dtype=torch.float64)

    def step(h, x):
        h = torch.tanh(torch.mm(h, W.t()) + x)
        return h, h
    h0 = torch.randn(3, 6, dtype=torch.float64)
    xs = torch.randn(10, 3, 6, dtype=torch.float64)
    a, _ = torchc.scan(step, h0, xs)
    assert _scan.last_fallback is None
    with torch.no_grad():
        W.mul_(-0.5)
    b, _ = torchc.scan(step, h0, xs)
    assert _scan.last_fallback is None
    want, _ = eager_scan(step, h0, xs)
    assert rel(b, want) < 1e-12 and rel(a, want) > 1e-3
