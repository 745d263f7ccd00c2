"""TORCHC_HOST_STATS=1 on the GPU: torchc._C.stats() splits the host time of GPU runs
(inductor_c/runtime/cuda.c ic_gpu_host_stats) into workspace, cuBLASLt, cuDNN, other extern
calls and kernel launches, with counts; benchmarks/profile_model.py --host prints them.
Runs in a fresh process (the switch is read once). Skips without a CUDA device; without
the switch the keys are absent."""
import json
import os
import subprocess
import sys

import pytest
import torch

import torchc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(torchc.__file__)))
PROG = r"""
import json, torch, torchc
lin = torch.nn.Linear(64, 64).cuda().half()
f = torchc.compile(lambda x: torch.softmax(lin(x).float(), -1))
x = torch.randn(32, 64, device="cuda").half()
with torch.no_grad():
    for _ in range(2):
        f(x)
    s0 = torchc._C.stats()
    for _ in range(5):
        f(x)
    torch.cuda.synchronize()
    s1 = torchc._C.stats()
print(json.dumps({k: s1[k] - s0[k] for k in s1 if k.startswith("gpu_")}))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_gpu_run_parts_are_counted():
    env = dict(os.environ, TORCHC_HOST_STATS="1", PYTHONPATH=ROOT, TORCHC_CACHE="0", TORCHC_GEMM="extern")
    r = subprocess.run([sys.executable, "-c", PROG], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert d["gpu_runs"] == 5
    assert d["gpu_launch_n"] >= 5 and d["gpu_launch_us"] > 0  # the softmax kernel, every run
    assert d["gpu_cublaslt_n"] + d["gpu_aten_n"] >= 5  # the linear: cuBLASLt, or ATen where it is refused
    parts = sum(d[k] for k in ("gpu_ws_us", "gpu_cublaslt_us", "gpu_cudnn_us", "gpu_aten_us", "gpu_launch_us"))
    assert parts <= d["gpu_run_us"] * 1.05 + 5


@pytest.mark.needs_no_compiler
def test_keys_absent_without_the_switch():
    if os.environ.get("TORCHC_HOST_STATS"):
        pytest.skip("TORCHC_HOST_STATS is set for this process")
    assert not any(k.startswith("gpu_") for k in torchc._C.stats())
