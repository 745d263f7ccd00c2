"""Programmatic dependent launch (gpu_nvptx.c pdl_on, runtime/cuda.c): on sm_90 each kernel is
launched before the one before it has finished and waits (griddepcontrol.wait) before its
first memory access. Chains of kernels that each read what the one before wrote, with extern
GEMMs between them, against eager, many times in a row; with TORCHC_GPU_PDL=0; and under
CUDA graph capture (plain launches there). The PTX side is checked without a GPU in
test_ptx_probe.py. Skips without a CUDA device."""
import pytest
import torch

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _chain(x, w):
    for i in range(6):
        x = torch.softmax(x * (i + 1), -1)  # a row kernel reading the previous kernel's output
        x = x - x.mean(0, keepdim=True)  # a column reduction: another kernel
        if i % 2:
            x = x @ w  # an extern GEMM between our kernels
    return x.sum(), x


@cuda
@pytest.mark.parametrize("pdl", ["", "0"])
@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_dependent_chains(pdl, mode, monkeypatch):
    monkeypatch.setenv("TORCHC_GPU_PDL", pdl)
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(0)
    w = torch.randn(512, 512, device="cuda") / 16
    torchc.reset()
    cf = torchc.compile(_chain, mode=mode) if mode else torchc.compile(_chain)
    for it in range(20):
        x = torch.randn(300, 512, device="cuda") * (it + 1)
        got, want = cf(x, w), _chain(x, w)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@cuda
def test_many_small_kernels_back_to_back(monkeypatch):
    """tiny grids (one block) whose launch overlaps the previous kernel the most"""
    monkeypatch.setenv("TORCHC_CACHE", "0")

    def f(x):
        for _ in range(10):
            x = (x - x.amax()).exp()  # full reduction then a pointwise kernel, each of one block
        return x

    torchc.reset()
    cf = torchc.compile(f)
    for it in range(50):
        x = torch.randn(37, device="cuda")
        torch.testing.assert_close(cf(x), f(x), rtol=1e-5, atol=1e-6)
