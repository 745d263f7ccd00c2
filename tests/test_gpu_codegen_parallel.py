"""GPU code generation without a GPU: torchc._C.graph_to_ptx compiles a graph's text (as
TORCHC_DEBUG=graph prints it) for sm_90 (benchmarks/gpu_codegen_time.py times it so).

1. The parallel path (gpu_nvptx.c: kernel variants spread over module parts, each optimized and
   emitted on its own thread, ic_parts_run) makes the same kernels as one module made on the
   calling thread: the same functions and globals, once names are normalized (the compile's
   counter tcN, the function's index in LLVM's block labels); every module is assembled by
   ptxas -arch=sm_90 where ptxas exists.
2. config backward_ahead (csrc/train.c): a training graph's backward compiles on a helper thread
   from its capture on, beside the forward's compile; the step matches eager either way, and a
   graph freed while its backward still compiles leaves the job to finish alone
   (test_reliability.py's reset tests run it under ThreadSanitizer)."""
import os
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same

SEP = "\n// ---- torchc: next PTX module ----\n"


class Block(nn.Module):
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc = nn.Linear(d, 2 * d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.h, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
        return x + F.gelu(self.fc(self.ln2(x))).view(b, s, d, 2).amax(-1)


def _ptxas():
    for c in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _graph_texts(monkeypatch, capfd, fn, *args):
    """the graphs torchc compiles for fn(*args) (and its backward, when the result has grad), as text"""
    monkeypatch.setenv("TORCHC_DEBUG", "graph")
    capfd.readouterr()
    out = torchc.compile(fn)(*args)
    if out.requires_grad:
        out.float().square().sum().backward()
    err = capfd.readouterr().err
    monkeypatch.delenv("TORCHC_DEBUG")
    texts = []
    for chunk in err.split("=== torchc graph ===\n")[1:]:
        lines = []
        for ln in chunk.splitlines():
            if not re.match(r"^(%\d+ = |output \d+ = )", ln):
                break
            lines.append(ln)
        texts.append("\n".join(lines) + "\n")
    return texts


def _norm(ptx):
    """(globals, functions) of every module, sorted, names normalized"""
    def n(s):
        s = re.sub(r"\btc\d+_", "tcN_", s)
        return re.sub(r"\$L__BB\d+_", "$L__BB_", re.sub(r"__local_depot\d+", "__local_depotN", s))
    glob, fns = [], []
    for m in ptx.split(SEP):
        body = "\n".join(ln for ln in m.splitlines() if ln.strip() and  # blank lines: between functions
                         not ln.startswith(("//", ".version", ".target", ".address_size")))
        chunks = re.split(r"\n\t// \.globl\t", "\n" + body)
        glob += [n(ln) for ln in chunks[0].splitlines() if ln.strip()]
        fns += [n(c) for c in chunks[1:]]
    return sorted(glob), sorted(fns)


def _to_ptx(text, threads, per_part):
    torchc.config.compile_threads = threads
    torchc.config.kernels_per_part = per_part
    return torchc._C.graph_to_ptx(text, 90)


def test_parallel_modules_match_one_module(monkeypatch, capfd, tmp_path):
    torch.manual_seed(0)
    m = Block()
    texts = _graph_texts(monkeypatch, capfd, m, torch.randn(2, 8, 32))
    assert len(texts) == 2, [t[:200] for t in texts]  # forward and backward
    ptxas = _ptxas()
    nmods = []
    for text in texts:
        serial = _to_ptx(text, 1, 0)  # PTX-only: one module on this thread
        par = _to_ptx(text, 4, 1)     # a module per kernel, four threads
        assert SEP not in serial
        nmods.append(len(par.split(SEP)))
        gs, fs = _norm(serial)
        gp, fp = _norm(par)
        assert len(fs) >= 4 and gs == gp
        assert fs == fp
        if ptxas:
            for i, mod in enumerate(par.split(SEP)):
                f = tmp_path / f"m{i}.ptx"
                f.write_text(mod)
                r = subprocess.run([ptxas, "-arch=sm_90", str(f), "-o", os.devnull], capture_output=True, text=True)
                assert r.returncode == 0, (i, r.stderr[-2000:])
    assert min(nmods) >= 3, nmods


def test_graph_to_ptx_reports_a_bad_text():
    with pytest.raises(RuntimeError, match="graph_to_ptx"):
        torchc._C.graph_to_ptx("%0 = nonsense\n", 90)


@pytest.mark.parametrize("ahead", [True, False])
def test_backward_ahead_step_matches_eager(ahead):
    torchc.config.backward_ahead = ahead
    torch.manual_seed(0)
    m = Block()
    ref = Block()
    ref.load_state_dict(m.state_dict())
    x = torch.randn(3, 5, 32)
    cm = torchc.compile(m)
    for _ in range(2):
        out, want = cm(x), ref(x)
        assert_same(out, want, rtol=1e-4, atol=1e-5)
        out.square().mean().backward()
        want.square().mean().backward()
        for p, q in zip(m.parameters(), ref.parameters()):
            assert_same(p.grad, q.grad, rtol=1e-4, atol=1e-5)
            p.grad = q.grad = None
    ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.backward_graph_count == 1
