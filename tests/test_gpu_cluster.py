"""Cluster rows (gpu_nvptx.c cluster_rows_ok, runtime/cuda.c): on sm_90, rows of 1024
persistent threads run as a cluster of two 512-thread CTAs whose block reductions meet in
each other's shared memory; opt-in (TORCHC_GPU_CLUSTER=1: slower on the H200 so far).
Differential tests against eager (f32 and bf16, exact and ragged chunks, NaN/inf rows), on
and off, and under CUDA graph capture. The
PTX side is checked without a GPU in test_ptx_probe.py. Skips without a CUDA device."""
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
    "sum_max": lambda t: (t.float().sum(-1), t.amax(-1)),
}


@cuda
@pytest.mark.parametrize("cols,dt", [(32768, torch.float32), (30000, torch.float32), (16384, torch.float32),
                                     (32768, torch.bfloat16), (20000, torch.bfloat16)])
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("cluster", ["1", "0"])
def test_cluster_rows(name, cols, dt, cluster, monkeypatch):
    monkeypatch.setenv("TORCHC_GPU_CLUSTER", cluster)
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(0)
    x = (torch.randn(300, cols, device="cuda") * 3).to(dt)
    x[7, 5] = float("nan")
    x[9, 100] = float("inf")
    f = CASES[name]
    torchc.reset()
    got, want = torchc.compile(f)(x), f(x)
    tol = dict(rtol=2e-2, atol=2e-2) if dt == torch.bfloat16 else dict(rtol=1e-4, atol=1e-5)
    if name == "sum_max":  # sums of 3e4 values of either sign in another order: absolute error
        tol = dict(rtol=1e-4, atol=2e-3)
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        torch.testing.assert_close(a, b, equal_nan=True, **tol)


@cuda
def test_cluster_rows_in_cuda_graphs(monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.setenv("TORCHC_GPU_CLUSTER", "1")
    f = CASES["softmax"]
    torchc.reset()
    cf = torchc.compile(f, mode="reduce-overhead", options={"cudagraph_adaptive": False})
    for i in range(6):
        x = torch.randn(200, 32768, device="cuda") * (i + 1)
        torch.testing.assert_close(cf(x), f(x), rtol=1e-5, atol=1e-7)
