"""Reliability (issue 26): numerics where eager is exact and a compiled decomposition was not.

Fuzz seed 10962329 (TORCHC_FUZZ_ONLY=94 TORCHC_FUZZ_SEED=10962235): F.layer_norm of rows of
one repeated value gave 4.5e-4 where eager gives exactly 0. The mean of n copies of c,
computed as sum / n, carries a rounding residue of a few ulps; x - mean is that residue,
the variance its square, and rsqrt(var + eps) multiplies it by 1/sqrt(eps) = 316. Eager's
Welford moments are exact for such rows. The compiled layer_norm and group_norm now reduce
the rows shifted by their first element (exact for constant rows).
"""
import pytest
import torch
import torch.nn.functional as F

import torchc


def _one_graph(fn, *args):
    e = torchc.explain(fn)(*args)
    assert e.graph_count == 1 and e.graph_break_count == 0, (e.graph_count, e.break_reasons)
    return e.result


@pytest.mark.parametrize("n", [1, 3, 17, 33, 100, 1000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_constant_rows_exact(n, dtype):
    # values whose running sums round (0.1, 1.7, 4.5...) in every row
    x = (torch.tensor([0.1, 1.7, -4.5, 3.3, 1e3], dtype=dtype)[:, None] * torch.ones(5, n, dtype=dtype)).clone()
    w = torch.randn(n, dtype=dtype)
    b = torch.randn(n, dtype=dtype)

    def f(a, w, b):
        return F.layer_norm(a, (a.size(-1),)), F.layer_norm(a * 3, (a.size(-1),), w, b)

    got = _one_graph(torchc.compile(f), x, w, b)
    want = f(x, w, b)
    assert torch.equal(want[0], torch.zeros_like(x))
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=0)
    torch.testing.assert_close(got[1], want[1], rtol=0, atol=0)


def test_layer_norm_fuzz_seed_10962329():
    # the fuzz program's shape of it: a 0-d value broadcast through where and sums, normed
    # over a transposed input's last dim of 17
    g = torch.Generator().manual_seed(10962329)  # the fuzzer's inputs: x0, x1 (transposed), x2
    torch.randn(17, generator=g)
    x1 = torch.randn(17, 33, generator=g).t()
    x2 = torch.randn((), generator=g)

    def prog(x1, x2):
        v1 = x1 * 0
        for t in (x1, x1, x2):
            v1 = v1 + t
        v2 = torch.where(x2 != v1, x2, v1)
        v5 = x2 + v2 + v2
        return F.layer_norm(v5, (v5.size(-1),))

    got = _one_graph(torchc.compile(prog), x1, x2)
    torch.testing.assert_close(got, prog(x1, x2), rtol=1e-5, atol=1e-6)


def test_layer_norm_rows_far_from_zero():
    # a large common offset: the shifted statistics keep the small spread
    torch.manual_seed(0)
    x = 1e4 + torch.randn(8, 64)

    def f(a):
        return F.layer_norm(a, (64,))

    got = _one_graph(torchc.compile(f), x)
    ref = F.layer_norm(x.double(), (64,)).float()
    assert (got - ref).abs().max() <= 2 * (f(x) - ref).abs().max() + 1e-4


def test_group_norm_constant_groups_exact():
    x = torch.full((2, 6, 5, 3), 1.7)
    x[1] = 0.1
    w, b = torch.randn(6), torch.randn(6)

    def f(a, w, b):
        return F.group_norm(a, 3, w, b)

    got = _one_graph(torchc.compile(f), x, w, b)
    # the exact answer is the bias; eager's (x * scale + shift) rounds within 1e-4 of it
    exact = b[None, :, None, None].expand_as(x)
    torch.testing.assert_close(got, exact, rtol=0, atol=0)
    torch.testing.assert_close(got, f(x, w, b), rtol=1e-4, atol=1e-4)


def test_layer_norm_shift_keeps_gradients():
    # the shift is detached: gradients are layer_norm's (and are still compiled)
    torch.manual_seed(1)
    x = torch.randn(4, 17, dtype=torch.float64, requires_grad=True)
    w = torch.randn(17, dtype=torch.float64, requires_grad=True)
    xc = x.detach().clone().requires_grad_()
    wc = w.detach().clone().requires_grad_()

    def f(a, w):
        return (F.layer_norm(a, (17,), w) ** 2).sum()

    f(x, w).backward()
    torchc.compile(f)(xc, wc).backward()
    torch.testing.assert_close(xc.grad, x.grad)
    torch.testing.assert_close(wc.grad, w.grad)
