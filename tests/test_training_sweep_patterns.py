"""Patterns from benchmarks/sweep_tiny.py --train (issue 22: a model captured whole in
inference is captured whole in training, with eager's gradients), each reduced to plain
torch: the forward captured whole with one backward graph, and the outputs and every leaf's
.grad (None where eager's is None) equal to eager's."""
import numpy as np
import pytest
import torch

import torchc
from conftest import captured_whole


def _run(fn, leaves, args, compiled):
    for p in leaves:
        p.grad = None
    ex = None
    if compiled:
        torchc.reset()
        ex = torchc.explain(fn)(*args)
        out = ex.result
    else:
        out = fn(*args)
    g = torch.Generator().manual_seed(7)
    (out * torch.randn(out.shape, generator=g)).sum().backward()
    return ex, out.detach(), [None if p.grad is None else p.grad.clone() for p in leaves]


def _check(fn, leaves, *args, seed=None):
    if seed is not None:
        torch.manual_seed(seed)
    _, oe, ge = _run(fn, leaves, args, False)
    if seed is not None:
        torch.manual_seed(seed)
    ex, oc, gc = _run(fn, leaves, args, True)
    assert captured_whole(ex) and ex.graph_count == 1 and ex.backward_graph_count == 1, str(ex)
    torch.testing.assert_close(oc, oe, equal_nan=True)
    for i, (a, b) in enumerate(zip(gc, ge)):
        assert (a is None) == (b is None), f"leaf {i}: .grad {'None' if a is None else 'a tensor'}, eager's " \
                                           f"{'None' if b is None else 'a tensor'}"
        if b is not None:
            torch.testing.assert_close(a, b, equal_nan=True)
    return ex


# ---- masked_scatter with an empty source (higgs_audio_v2: a norm of x[mask] for a mask with
# no true element, scattered back): eager's autograd reaches the source, so what it is made
# from gets a .grad of zeros; the compiled graph had dropped the source (.grad None)

@pytest.mark.parametrize("nsel", [0, 3])
def test_masked_scatter_empty_source_grad(nsel):
    w = torch.nn.Parameter(torch.randn(8))
    h = torch.randn(2, 4, 8, requires_grad=True)
    mask = torch.zeros(2, 4, dtype=torch.bool)
    mask.view(-1)[:nsel] = True
    src = torch.randn(nsel, 8)

    def f(h, mask, src):
        return h.masked_scatter(mask.unsqueeze(-1), w * src)
    _check(f, [w, h], h, mask, src)


def test_masked_scatter_empty_source_keeps_signed_zero():
    w = torch.nn.Parameter(torch.randn(3))
    h = torch.tensor([[-0.0, 0.0, float("nan")]], requires_grad=True)

    def f(h, mask, src):
        return h.masked_scatter(mask, w * src)
    mask = torch.zeros(1, 3, dtype=torch.bool)
    ex = _check(f, [w, h], h, mask, torch.randn(0, 3))
    assert torch.equal(torch.signbit(ex.result.detach()), torch.tensor([[True, False, False]]))


# ---- torch.linalg.solve_triangular of a value that requires grad (lara_mini): was left to
# eager (no backward rule); gA lies on the triangle the solve reads (off the diagonal when
# unitriangular), gB is the solve with Aᵀ

@pytest.mark.parametrize("upper,left,unit", [(True, True, False), (False, True, True), (True, False, True),
                                             (False, False, False)])
def test_solve_triangular_grad(upper, left, unit):
    g = torch.Generator().manual_seed(0)
    A = torch.randn(2, 4, 4, generator=g).requires_grad_()
    B = torch.randn(*((2, 4, 3) if left else (2, 3, 4)), generator=g).requires_grad_()

    def f(A, B):
        return torch.linalg.solve_triangular(A + 4 * torch.eye(4), B * 2, upper=upper, left=left,
                                             unitriangular=unit)
    _check(f, [A, B], A, B)


# ---- x.data (ibert's quantizers read x.data.min() in training): a detached alias, as
# x.detach(); was "Tensor attribute 'data' not supported"

def test_tensor_data_read_in_training():
    w = torch.nn.Parameter(torch.randn(4, 4))

    def f(x):
        y = x @ w
        return y * 2 + y.data.max() - w.data.sum()
    _check(f, [w], torch.randn(3, 4))


# ---- a numpy float (np.log of a number) as a number argument (dinov3_vit's training-time
# augmentation: uniform_(-np.log(r), np.log(r))): was "a must be a number"; the draws are
# eager's (the default generator, same seed)

def test_numpy_float_argument_of_random_fill():
    w = torch.nn.Parameter(torch.randn(4, 4))

    def f(x):
        r = np.log(2.0)
        s = torch.empty(1, 2).uniform_(-r, r).exp()
        return (x @ w) * s.sum()
    _check(f, [w], torch.randn(3, 4), seed=3)


# ---- Tensor.exponential_ (phimoe's sparsemixer draws Gumbel noise in training:
# torch.empty_like(x).exponential_().log()): was "Tensor.exponential_() not supported"; one
# RANDOM extern on the default generator, so the draws are eager's under the same seed

@pytest.mark.parametrize("lambd", [None, 2.5])
def test_exponential_fill_in_training(lambd):
    w = torch.nn.Parameter(torch.randn(4, 4))

    def f(x):
        y = x @ w
        e = torch.empty_like(y)
        noise = (e.exponential_() if lambd is None else e.exponential_(lambd)).log()
        return (y - noise).softmax(-1) * y
    _check(f, [w], torch.randn(3, 4), seed=5)
