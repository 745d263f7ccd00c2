"""Repeated kernels are generated once (gpu_nvptx.c kbegin/kend): a model of identical layers
gives identical fused kernels; each is compiled once and every launch of a repeat uses the
first function with its own buffers. PTX checks run without a GPU (TORCHC_PTX_PROBE sends a
CPU graph through the NVPTX path); the differential test needs CUDA."""
import os
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn

import torchc


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.fc(self.ln(x))).softmax(-1)


class Stack(nn.Module):
    def __init__(self, d=48, n=6):
        super().__init__()
        self.layers = nn.ModuleList(Layer(d) for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum(-1)


def _entries(tmp_path, monkeypatch, capfd, dedupe, model, x):
    d = tmp_path / f"d{dedupe}"
    d.mkdir()
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(d))
    monkeypatch.setenv("TORCHC_GPU_DEDUPE", dedupe)
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torchc.reset()
    with torch.no_grad():
        torchc.compile(model)(x)
    lines = [ln for ln in capfd.readouterr().err.splitlines() if "ptx probe" in ln]
    assert lines and all(ln.endswith("ok") for ln in lines), lines
    text = "".join(f.read_text() for f in sorted(d.glob("probe_*.ptx")))
    return text, re.findall(r"\.entry (\w+)\(", text)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_repeats_generated_once(tmp_path, monkeypatch, capfd, dtype):
    m = Stack(n=8).eval().to(dtype)
    x = torch.randn(4, 10, 48, dtype=dtype)
    text1, on = _entries(tmp_path, monkeypatch, capfd, "1", m, x)
    text0, off = _entries(tmp_path, monkeypatch, capfd, "0", m, x)
    assert len(set(on)) == len(on) and len(set(off)) == len(off)
    # eight identical layers: most kernels repeat an earlier one (the first and last layers'
    # kernels differ: a graph input, the final sum)
    assert len(off) >= 7 * 2 and len(on) * 2 <= len(off), (len(on), len(off))
    for p in ("/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if p and os.path.exists(p):
            f = tmp_path / "on.ptx"
            f.write_text(text1.split("\n// ---- torchc: next PTX module ----\n")[0])
            r = subprocess.run([p, "-arch=sm_90", str(f), "-o", os.devnull], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr[-2000:]
            break


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_repeats_on_the_gpu(monkeypatch, dtype):
    """the repeats run with their own buffers: results equal eager, and equal the run without
    deduplication"""
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(0)
    m = Stack(d=200, n=8).cuda().eval().to(dtype)
    x = torch.randn(3, 37, 200, device="cuda", dtype=dtype)
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-4
    outs = []
    for dd in ("1", "0"):
        monkeypatch.setenv("TORCHC_GPU_DEDUPE", dd)
        torchc.reset()
        with torch.no_grad():
            got = torchc.compile(m)(x)
            want = m(x)
        torch.testing.assert_close(got.float(), want.float(), atol=tol * 10, rtol=tol)
        outs.append(got)
    torch.testing.assert_close(outs[0], outs[1], atol=0, rtol=0)
