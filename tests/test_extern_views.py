"""GEMM operands that are permutations of graph inputs are read in place (inductor_c/sched/
extern_views.c): the extern call gets the input's memory with the view's strides, no copy
kernel. Differential against eager; the kernel list must hold only the extern calls (it
fails if the permuted operand were copied, or if nothing were compiled)."""
import pytest
import torch

import torchc


def kernels(fn, *args):
    e = torchc.explain(fn)(*args)
    assert e.graph_count == 1 and e.graph_break_count == 0
    ks = [ln for desc in e.kernels for ln in desc.splitlines() if ln.startswith("kernel ")]
    return ks


CASES = {
    # name: (fn, args, copy kernels left)
    "mm_tA": (lambda a, b: a.t() @ b, lambda: (torch.randn(7, 5), torch.randn(7, 3)), 0),
    "mm_tB": (lambda a, b: torch.mm(a, b.t()), lambda: (torch.randn(5, 7), torch.randn(3, 7)), 0),
    "mm_tt": (lambda a, b: torch.mm(a.t(), b.t()), lambda: (torch.randn(7, 5), torch.randn(3, 7)), 0),
    # a transposed input transposed back: contiguous, the same memory
    "mm_input_transposed": (lambda a, b: a @ b.t(), lambda: (torch.randn(4, 6), torch.randn(6, 5).t()), 0),
    "addmm": (lambda c, a, b: torch.addmm(c, a.t(), b.t(), beta=0.5, alpha=2.0),
              lambda: (torch.randn(5, 3), torch.randn(7, 5), torch.randn(3, 7)), 0),
    "bmm": (lambda a, b: torch.bmm(a.transpose(1, 2), b), lambda: (torch.randn(2, 7, 5), torch.randn(2, 7, 3)), 0),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b.transpose(1, 2)),
                lambda: (torch.randn(2, 5, 3), torch.randn(2, 5, 7), torch.randn(2, 3, 7)), 0),
    "chain": (lambda a, b: a.permute(2, 0, 1).permute(0, 2, 1) @ b,
              lambda: (torch.randn(4, 5, 3), torch.randn(3, 4, 6)), 0),
    # (a [1, 1] @ [1, 9] outer product is a broadcast multiply, no extern: K = 2 here)
    "odd_sizes_1": (lambda a, b: a.t() @ b, lambda: (torch.randn(2, 1), torch.randn(2, 9)), 0),
    # the view also read by a pointwise op (inlined there), and returned (an output keeps its copy)
    "also_pointwise": (lambda a, b: (a.t() @ b, a.t() * 2), lambda: (torch.randn(6, 6), torch.randn(6, 4)), 1),
    # (a view of an input returned is no graph output: the frontend makes it from the input)
    "also_output": (lambda a, b: (a.t() @ b, a.t()), lambda: (torch.randn(6, 6), torch.randn(6, 4)), 0),
    "float64": (lambda a, b: a.t() @ b.t(), lambda: (torch.randn(8, 3, dtype=torch.float64),
                                                     torch.randn(5, 8, dtype=torch.float64)), 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_permuted_input_operand_read_in_place(name):
    fn, make, pointwise = CASES[name]
    torch.manual_seed(0)
    args = make()
    ks = kernels(fn, *args)
    ext = [k for k in ks if "extern" in k]
    assert len(ext) >= 1
    assert len(ks) - len(ext) == pointwise, ks
    got = torchc.compile(fn)(*args)
    want = fn(*args)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape and g.stride() == w.stride()
        torch.testing.assert_close(g, w)


def test_permuted_intermediate_still_copied():
    """A permutation of a computed value is not aliased (its workspace slot could be reused
    before the extern reads it): it keeps its copy kernel, values as eager's."""
    def fn(a, b):
        return (a * 2).t() @ b
    a, b = torch.randn(7, 5), torch.randn(7, 3)
    ks = kernels(fn, a, b)
    assert len([k for k in ks if "extern" not in k]) == 1
    torch.testing.assert_close(torchc.compile(fn)(a, b), fn(a, b))


def test_training_backward_transposes_read_in_place():
    """The backward of x @ W (dW = xᵀ g, dx = g Wᵀ): saved inputs are read transposed."""
    x = torch.randn(16, 8, requires_grad=True)
    W = torch.randn(8, 4, requires_grad=True)

    def fn(x, W):
        return (x @ W).tanh().sum()
    cf = torchc.compile(fn)
    loss = cf(x, W)
    gx, gW = torch.autograd.grad(loss, (x, W))
    ex, eW = torch.autograd.grad(fn(x, W), (x, W))
    torch.testing.assert_close(gx, ex)
    torch.testing.assert_close(gW, eW)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", ["mm_tA", "mm_tB", "mm_tt", "addmm", "bmm", "baddbmm", "chain"])
def test_permuted_input_operand_read_in_place_cuda(name, dtype):
    """The same on the GPU (cuBLASLt plans and the GEMM templates read the operand's strides)."""
    fn, make, pointwise = CASES[name]
    torch.manual_seed(0)
    args = [a.to("cuda", dtype) for a in make()]
    ks = kernels(fn, *args)
    assert len(ks) - len([k for k in ks if "extern" in k]) == pointwise, ks
    got, want = torchc.compile(fn)(*args), fn(*args)
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {"rtol": 1e-4, "atol": 1e-4}
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, **tol)
