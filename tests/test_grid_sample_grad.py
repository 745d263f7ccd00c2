"""F.grid_sample in training graphs: captured whole with its backward compiled (ATen's
grid_sampler_{2,3}d_backward as one extern, graph/vjp_extern.c vjp_grid_sample), gradients of
the input, the grid or both equal to eager's; every mode, padding and align_corners, 4-d and
5-d, non-contiguous operands, float64 and float32; F.grid_sample as deformable attention and
spatial transformers use it."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from conftest import captured_whole


def _f(x, grid, mode, pad, ac):
    return F.grid_sample(x * 2, grid.tanh(), mode=mode, padding_mode=pad, align_corners=ac).square()


def _grads(fn, x, grid, args, w):
    leaves = [t for t in (x, grid) if t.requires_grad]
    out = fn(x, grid, *args)
    return out.detach(), torch.autograd.grad((out * w).sum(), leaves)


CASES = [(m, p, (i + j) % 2 == 1) for i, m in enumerate(("bilinear", "nearest", "bicubic"))
         for j, p in enumerate(("zeros", "border", "reflection"))]


@pytest.mark.parametrize("mode,pad,ac", CASES)
@pytest.mark.parametrize("need", [(True, True), (True, False), (False, True)], ids=["both", "x", "grid"])
def test_grid_sample_4d_grads_match_eager(mode, pad, ac, need):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, 7, dtype=torch.float64, generator=g).requires_grad_(need[0])
    grid = torch.randn(2, 4, 6, 2, dtype=torch.float64, generator=g).requires_grad_(need[1])
    w = torch.randn(2, 3, 4, 6, dtype=torch.float64, generator=g)
    torchc.reset()
    ex = torchc.explain(_f)(x, grid, mode, pad, ac)
    assert captured_whole(ex) and ex.graph_count == 1 and ex.backward_graph_count == 1, str(ex)
    oe, ge = _grads(_f, x, grid, (mode, pad, ac), w)
    oc, gc = _grads(torchc.compile(_f), x, grid, (mode, pad, ac), w)
    torch.testing.assert_close(oc, oe)
    for a, b in zip(gc, ge):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_5d_and_noncontiguous_float32(mode):
    g = torch.Generator().manual_seed(1)
    # 5-d, operands non-contiguous (a transposed input, a sliced grid)
    x = torch.randn(1, 2, 5, 4, 3, generator=g).transpose(2, 4).requires_grad_()
    grid = torch.randn(1, 3, 4, 5, 4, generator=g)[..., 1:].requires_grad_()
    w = torch.randn(1, 2, 3, 4, 5, generator=g)

    def step(x, grid):
        return F.grid_sample(x, grid, mode=mode, padding_mode="border", align_corners=False).relu() + x.mean()

    torchc.reset()
    ex = torchc.explain(step)(x, grid)
    assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
    leaves = [x, grid]
    oe = step(x, grid)
    ge = torch.autograd.grad((oe * w).sum(), leaves)
    oc = torchc.compile(step)(x, grid)
    gc = torch.autograd.grad((oc * w).sum(), leaves)
    torch.testing.assert_close(oc, oe)
    for a, b in zip(gc, ge):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_spatial_transformer_module_trains_like_eager():
    # an affine_grid + grid_sample spatial transformer, a few SGD steps: losses and weights
    class STN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = torch.nn.Linear(3 * 8 * 8, 6)
            self.head = torch.nn.Conv2d(3, 4, 3)

        def forward(self, x):
            theta = self.loc(x.flatten(1)).view(-1, 2, 3) * 0.1 + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
            grid = F.affine_grid(theta, list(x.shape), align_corners=False)
            return self.head(F.grid_sample(x, grid, align_corners=False)).square().mean()

    def train(m, fn, steps=4):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(3)
        losses = []
        for _ in range(steps):
            x = torch.randn(2, 3, 8, 8, generator=g)
            loss = fn(x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    torch.manual_seed(0)
    me = STN()
    mc = STN()
    mc.load_state_dict(me.state_dict())
    torchc.reset()
    ex = torchc.explain(mc)(torch.randn(2, 3, 8, 8))
    assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
    le = train(me, me)
    lc = train(mc, torchc.compile(mc))
    torch.testing.assert_close(torch.tensor(lc), torch.tensor(le), rtol=1e-5, atol=1e-6)
    for a, b in zip(mc.parameters(), me.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [[2, 3, 5, 7], [1, 1, 1, 4], [3, 2, 6, 1], [2, 1, 4, 3, 5], [1, 2, 1, 1, 2]])
@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid_captured_with_theta_grad(size, ac):
    # F.affine_grid (torch.affine_grid_generator): the base grid as ATen builds it, bmm'd
    # with theta; values to an ulp (ATen's linspace rounds its midpoint by its vector width)
    k = len(size) - 2
    g = torch.Generator().manual_seed(2)
    theta = torch.randn(size[0], k, k + 1, dtype=torch.float64, generator=g, requires_grad=True)

    def f(theta):
        return F.affine_grid(theta * 1.5, size, align_corners=ac)

    torchc.reset()
    ex = torchc.explain(f)(theta)
    assert captured_whole(ex) and ex.backward_graph_count == 1, str(ex)
    r, c = f(theta), torchc.compile(f)(theta)
    torch.testing.assert_close(c, r)
    w = torch.randn(r.shape, dtype=torch.float64, generator=g)
    ge, = torch.autograd.grad((r * w).sum(), [theta])
    gc, = torch.autograd.grad((c * w).sum(), [theta])
    torch.testing.assert_close(gc, ge)
