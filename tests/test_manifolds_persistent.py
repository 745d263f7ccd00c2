"""The persistent recurrence kernels' prototype (benchmarks/manifolds/persistent: recur.cu ->
recur.ptx, loaded through the CUDA driver by recur.py).

Without a GPU: the committed PTX assembles for sm_90 with ptxas (no spills, every kernel
present) and is the PTX the committed source gives (where nvcc is installed). With CUDA:
forward values and all four gradients against eager torch's cell loop, at edge shapes
(one row, one column, odd sizes, rows past one CTA's R, T = 1; W in one CTA's shared memory,
split over a cluster's, and read from L2); at T = 784 the gradients against float64
backpropagation from the kernel's own forward (recur.reference_backward says why)."""
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "manifolds", "persistent")
sys.path.insert(0, HERE)
import recur  # noqa: E402

pytestmark = pytest.mark.needs_no_compiler  # the prototype is not torchc's compiled code

KERNELS = [f"recur_{d}_r{r}_{s}" for d in ("fwd", "bwd") for r, s in ((1, "s"), (2, "s"), (4, "s"), (8, "g"), (1, "g"), (8, "c"))]
PTXAS = os.environ.get("PTXAS", "/usr/local/cuda/bin/ptxas")
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")


def _ptx():
    with open(os.path.join(HERE, "recur.ptx")) as f:
        return f.read()


def test_ptx_declares_every_kernel_and_isa_78():
    ptx = _ptx()
    assert re.search(r"^\.version 7\.8$", ptx, re.M)
    assert re.search(r"^\.target sm_90", ptx, re.M)
    for k in KERNELS:
        assert re.search(rf"\.entry {k}\(", ptx), k


@pytest.mark.skipif(not os.path.exists(PTXAS), reason="ptxas not installed")
def test_ptx_assembles_for_sm90_without_spills(tmp_path):
    r = subprocess.run([PTXAS, "-arch=sm_90", "-v", "-o", str(tmp_path / "recur.cubin"), os.path.join(HERE, "recur.ptx")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    entries = re.findall(r"Compiling entry function '(\w+)'", r.stderr)
    assert sorted(entries) == sorted(KERNELS)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    assert len(spills) == len(KERNELS) and all(a == "0" and b == "0" for a, b in spills), r.stderr


@pytest.mark.skipif(not os.path.exists(NVCC) or shutil.which("sed") is None, reason="nvcc not installed")
def test_committed_ptx_is_the_sources(tmp_path):
    out = tmp_path / "recur.ptx"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # (make test-asan preloads
    # libasan into this process; nvcc is not built for it and crashes)
    r = subprocess.run([NVCC, "-ptx", "-arch=compute_90", "-O3", "-o", str(out), os.path.join(HERE, "recur.cu")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    mine = re.sub(r"^\.version [0-9.]+", ".version 7.8", out.read_text(), flags=re.M)
    strip = lambda s: [ln for ln in s.splitlines() if not ln.startswith("//")]  # noqa: E731
    if strip(mine) != strip(_ptx()):
        pytest.skip("this nvcc writes other PTX than the committed one's (another version): rerun build.sh")


def test_plan_fits_the_limits():
    for N, n in [(1, 1), (3, 33), (128, 170), (300, 170), (128, 240), (128, 241), (9, 512), (128, 512),
                 (4, 600), (4, 601), (5, 1024)]:
        kind, R, ctas, threads, smem = recur.plan(N, n)
        assert smem <= 227 * 1024 and threads % 32 == 0 and threads <= (1024 if R <= 2 else 512)
        assert kind == ("s" if n <= 240 else "c" if n <= 600 else "g"), (N, n, kind)
        if kind == "c":  # 8 CTAs of a cluster per 8 rows, one thread per column and part
            assert ctas == (N + 7) // 8 * 8 and threads >= 4 * ((n + 7) // 8)
        else:
            assert threads >= n and ctas == (N + R - 1) // R
    with pytest.raises(ValueError):
        recur.plan(4, 1025)


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def _orth(n, g):
    A = torch.randn(n, n, generator=g, dtype=torch.float64)
    return torch.linalg.matrix_exp(A - A.t()).float()


def _case(T, N, n, seed, b_sign=0):
    """b_sign -1: b <= 0, modReLU continuous (b > 0 makes it jump at z = 0, and over 784 steps
    float32 and float64 runs of eager's forward then differ by ~4e-3 of the scale)"""
    g = torch.Generator().manual_seed(seed)
    W = _orth(n, g).cuda()
    U = (0.5 * torch.randn(T, N, n, generator=g)).cuda()
    b = 0.05 * torch.randn(n, generator=g)
    b = (-b.abs() if b_sign < 0 else b).cuda()
    h0 = (0.5 * torch.randn(N, n, generator=g)).cuda()
    G = torch.randn(T, N, n, generator=g).cuda()
    return W, U, b, h0, G


@cuda
@pytest.mark.parametrize("T,N,n", [(1, 1, 1), (2, 3, 33), (37, 5, 170), (9, 130, 7), (50, 133, 64),
                                   (20, 300, 170), (12, 9, 512), (3, 17, 300), (6, 4, 700), (5, 2, 1024)])
def test_cuda_forward_and_gradients_match_eager(T, N, n):
    """Against eager's autograd in float32: at these lengths eager's own float32 and float64
    runs agree to 1e-6 of each value's scale (measured on the CPU)."""
    W, U, b, h0, G = _case(T, N, n, T * 1000 + N * 10 + n)
    ins = [t.clone().requires_grad_() for t in (W, U, b, h0)]
    ref = [t.clone().requires_grad_() for t in (W, U, b, h0)]
    H = recur.recurrence(*ins)
    He = recur.reference(*ref)
    torch.testing.assert_close(H, He, rtol=1e-4, atol=1e-4)
    (H * G).sum().backward()
    (He * G).sum().backward()
    for a, e, name in zip(ins, ref, ("W", "U", "b", "h0")):
        scale = max(1.0, e.grad.abs().max().item())
        torch.testing.assert_close(a.grad / scale, e.grad / scale, rtol=1e-4, atol=1e-4, msg=lambda m: f"{name}: {m}")


@cuda
@pytest.mark.parametrize("T,N,n", [(784, 128, 170), (784, 128, 512), (300, 5, 600)])
def test_cuda_long_sequences(T, N, n):
    """T = 784: the forward against eager's (b <= 0: float32 and float64 runs agree to ~3e-6
    of the scale); the gradients against float64 BPTT from the kernel's own H (eager's float32
    gradients are not a reference here: recur.reference_backward says why)."""
    W, U, b, h0, G = _case(T, N, n, T + N + n, b_sign=-1)
    ins = [t.clone().requires_grad_() for t in (W, U, b, h0)]
    H = recur.recurrence(*ins)
    He = recur.reference(W, U, b, h0)
    scale = max(1.0, He.abs().max().item())
    torch.testing.assert_close(H / scale, He / scale, rtol=1e-4, atol=1e-4)
    (H * G).sum().backward()
    for a, e, name in zip(ins, recur.reference_backward(W, H, h0, G), ("W", "U", "b", "h0")):
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(a.grad.double() / scale, e / scale, rtol=1e-4, atol=1e-4,
                                   msg=lambda m: f"{name}: {m}")


@cuda
def test_cuda_loss_on_the_last_state_only():
    """The benchmark's use: a head on H[-1]; every other step's output gradient is zero."""
    g = torch.Generator().manual_seed(7)
    T, N, n = 64, 128, 170
    W, U = _orth(n, g).cuda(), torch.randn(T, N, n, generator=g).cuda()
    b, h0 = torch.zeros(n).cuda(), torch.zeros(N, n).cuda()
    ins = [t.clone().requires_grad_() for t in (W, U, b, h0)]
    H = recur.recurrence(*ins)
    H[-1].pow(2).sum().backward()
    dH = torch.zeros_like(H)
    dH[-1] = 2 * H[-1].detach()
    for a, e in zip(ins, recur.reference_backward(W, H, h0, dH)):
        scale = max(1.0, e.abs().max().item())
        torch.testing.assert_close(a.grad.double() / scale, e / scale, rtol=1e-4, atol=1e-4)


@cuda
def test_cuda_zero_steps():
    W = torch.eye(4, device="cuda")
    H = recur.recurrence(W, torch.empty(0, 2, 4, device="cuda"), torch.zeros(4, device="cuda"),
                         torch.zeros(2, 4, device="cuda"))
    assert H.shape == (0, 2, 4)
