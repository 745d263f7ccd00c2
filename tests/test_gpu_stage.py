"""Staged rows (gpu_nvptx.c stage_rows_ok / staged_load, runtime/cuda.c): a persistent row
that would hold more than 16 values in each of 1024 threads (softmax of 32768 f32) runs as
512 threads keeping half of their chunks in registers and the other half of the row's one
input in dynamic shared memory (64 KB, opted in with cuFuncSetAttribute), two blocks per SM.
Differential tests against eager (f32 and bf16, exact and ragged chunks, NaN/inf rows,
staging on, off and "all"), under CUDA graph capture, and through the disk cache (the
dynamic shared memory size is part of the cached plan: launched without it the kernel
would read outside its shared memory). The PTX side is checked without a GPU in
test_ptx_probe.py. Skips without a CUDA device."""
import os

import pytest
import torch
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

CASES = {
    "softmax": lambda t: torch.softmax(t, -1),
    "log_softmax": lambda t: torch.log_softmax(t, -1),
    "layernorm": lambda t: F.layer_norm(t, t.shape[-1:]),
    "rms": lambda t: t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(t.dtype),
    "centered": lambda t: t - t.mean(-1, keepdim=True),
    "two_inputs": lambda t: torch.softmax(t + t.flip(-1), -1),  # not staged: a second row input
}


def _check(f, x, got=None):
    want = f(x)
    if got is None:
        got = torchc.compile(f)(x)
    tol = dict(rtol=2e-2, atol=2e-2) if x.dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(got, want, equal_nan=True, **tol)


@cuda
@pytest.mark.parametrize("cols,dt", [(32768, torch.float32), (30000, torch.float32), (16384, torch.float32),
                                     (20000, torch.float32), (32768, torch.bfloat16), (20000, torch.bfloat16)])
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("stage", ["1", "0", "all"])
def test_staged_rows(name, cols, dt, stage, monkeypatch):
    monkeypatch.setenv("TORCHC_GPU_STAGE", stage)
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(0)
    x = (torch.randn(301, cols, device="cuda") * 3).to(dt)
    x[7, 5] = float("nan")
    x[9, 100] = float("inf")
    x[11] = float("-inf")
    torchc.reset()
    _check(CASES[name], x)


@cuda
def test_staged_rows_in_cuda_graphs(monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    f = CASES["softmax"]
    torchc.reset()
    cf = torchc.compile(f, mode="reduce-overhead", options={"cudagraph_adaptive": False})
    for i in range(6):
        x = torch.randn(200, 32768, device="cuda") * (i + 1)
        torch.testing.assert_close(cf(x), f(x), rtol=1e-5, atol=1e-7)


@cuda
def test_staged_rows_from_the_disk_cache(tmp_path, monkeypatch):
    """the second compile reads plan, PTX and cubin back: the launch must still ask for the
    64 KB of dynamic shared memory (and the function its opt-in)"""
    monkeypatch.setenv("TORCHC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHC_CACHE", raising=False)
    monkeypatch.delenv("TORCHC_DISK_CACHE", raising=False)
    f = CASES["layernorm"]
    x = torch.randn(150, 32768, device="cuda")
    for _ in range(2):
        torchc.reset()
        _check(f, x)
        torch.cuda.synchronize()
    assert os.listdir(tmp_path / "ptx")
