"""GPU kernel repeats found before their LLVM IR is built (inductor_c/codegen/gpu_key.c): a kernel
variant's structural key (its loops, expression DAG, dtypes, sizes, buffers and plan, ids
renumbered in order of first appearance) equal to an earlier variant's reuses that function with
its own launch arguments. Without a GPU: training graphs of models with repeated blocks go
through torchc._C.graph_to_ptx (sm_90).

1. Repeated blocks give fewer functions than launches, and the deduplicated PTX holds the same
   function bodies as the build without any dedupe (TORCHC_GPU_DEDUPE=0), names normalized.
2. TORCHC_DEBUG=dedupe builds every variant anyway and fails the compile when a key repeat's
   canonical bitcode or launch plan differs from the first's: it passes, it checked repeats, every
   repeat the bitcode finds the key finds too, and the PTX equals the default compile's.
3. ptxas -arch=sm_90 assembles every module (where ptxas exists)."""
import os
import re
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from test_gpu_codegen_parallel import SEP, _graph_texts, _ptxas


class Block(nn.Module):  # a pre-norm transformer block, attention by SDPA
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.h, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))).softmax(-1))


class Tower(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class ConvStack(nn.Module):  # conv-BN-ReLU blocks with residuals, NHWC as CUDA captures them
    def __init__(self, c=16, n=3):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.convs = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1, bias=False) for _ in range(n))
        self.bns = nn.ModuleList(nn.BatchNorm2d(c) for _ in range(n))

    def forward(self, x):
        x = self.stem(x)
        for conv, bn in zip(self.convs, self.bns):
            x = x + F.relu(bn(conv(x)))
        return x.mean((2, 3))


def _names_norm(ptx):
    """function bodies of every module, sorted: their own names as K (tcN_k<i>[pcf<n>][v]), the
    function's index in the module out of labels and local depots, comments (LLVM's notes on
    demoted shared globals name them) dropped"""
    bodies = []
    for m in ptx.split(SEP):
        for ch in re.split(r"\n\t// \.globl\t", "\n" + m)[1:]:
            b = re.sub(r"\btc\d+_k\d+(?:[pcf]\d+)?v?", "K", ch.split("\n}")[0])
            b = re.sub(r"\$L__BB\d+_", "$L__BB_", re.sub(r"__local_depot\d+", "__local_depotN", b))
            bodies.append("\n".join(ln for ln in b.splitlines() if ln.strip() and not ln.strip().startswith("//")))
    return sorted(bodies)


@pytest.fixture
def cfg_reset():
    saved = {k: getattr(torchc.config, k) for k in ("debug", "gpu_dedupe", "compile_threads", "kernels_per_part")}
    yield
    for k, v in saved.items():
        setattr(torchc.config, k, v)


def _graphs(monkeypatch, capfd, model, x, amp):
    torch.manual_seed(0)
    monkeypatch.setattr(torchc.config, "conv_layout", "nhwc")
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
        texts = _graph_texts(monkeypatch, capfd, model, x)
    assert len(texts) == 2, [t[:200] for t in texts]  # forward and backward
    return texts


CASES = {  # tiny: the compiles are the test's time
    "tower_f32": (lambda: Tower(3), lambda: torch.randn(2, 4, 32, requires_grad=True), False),
    "tower_amp": (lambda: Tower(2), lambda: torch.randn(2, 4, 32, requires_grad=True), True),  # GEMM templates
    "convs_amp": (lambda: ConvStack(8, 3).train(), lambda: torch.randn(2, 3, 6, 6), True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_key_dedupe_matches_bitcode_and_no_dedupe(monkeypatch, capfd, tmp_path, cfg_reset, case):
    mk, mx, amp = CASES[case]
    texts = _graphs(monkeypatch, capfd, mk(), mx(), amp)
    torchc.config.compile_threads = 2
    torchc.config.kernels_per_part = 4
    ptxas = _ptxas()
    checked = 0
    for gi, text in enumerate(texts):
        capfd.readouterr()
        torchc.config.debug = "time"
        new = torchc._C.graph_to_ptx(text, 90)
        err = capfd.readouterr().err
        m = re.search(r"(\d+) kernels, (\d+) repeats", err)
        assert m, err[-2000:]
        kernels, repeats = int(m.group(1)), int(m.group(2))
        entries = re.findall(r"\.entry (\w+)\(", new)
        assert len(set(entries)) == len(entries)
        # the blocks repeat: many launches share a function
        assert repeats >= kernels // 3 and len(entries) < kernels, (gi, kernels, repeats, len(entries))

        torchc.config.debug = "dedupe"  # every variant built, key repeats compared with their code
        chk = torchc._C.graph_to_ptx(text, 90)
        err = capfd.readouterr().err
        m = re.search(r"dedupe check: (\d+) key repeats built and equal, (\d+) repeats found by bitcode only", err)
        assert m, err[-2000:]
        checked += int(m.group(1))
        assert int(m.group(2)) == 0, err[-2000:]  # the key finds every repeat the bitcode finds
        norm = lambda p: re.sub(r"\btc\d+_", "tcN_", p)
        assert norm(chk) == norm(new)  # byte-identical, but for the compile's counter

        torchc.config.debug = ""
        torchc.config.gpu_dedupe = False  # every variant its own function
        old = torchc._C.graph_to_ptx(text, 90)
        torchc.config.gpu_dedupe = True
        n_old = len(re.findall(r"\.entry (\w+)\(", old))
        assert n_old > len(entries)
        assert sorted(set(_names_norm(old))) == sorted(set(_names_norm(new)))

        if ptxas:
            for i, mod in enumerate(new.split(SEP)):
                f = tmp_path / f"g{gi}m{i}.ptx"
                f.write_text(mod)
                r = subprocess.run([ptxas, "-arch=sm_90", str(f), "-o", os.devnull], capture_output=True, text=True)
                assert r.returncode == 0, r.stderr[-2000:]
    assert checked >= 10, checked


def test_key_ignores_span_of_safe_loads(monkeypatch, capfd, cfg_reset):
    """Two kernels that differ only in the span of the buffer they load (a slice of an 8 x 8
    input, then a 4 x 8 matmul product, read at the same offsets, none leaving either buffer)
    share a key: the span is in the code only where a load is clamped to it (gpu_key.c
    load_bound). Before, the key held every buffer's span and the second kernel was built again,
    found only by its bitcode (resnet50's backward: 17 such, densenet121's: 4)."""
    def fn(a, b):
        h = (a[:4] * 2 + 1).exp()
        return ((h @ b) * 2 + 1).exp()

    texts = _graph_texts(monkeypatch, capfd, fn, torch.randn(8, 8), torch.randn(8, 8))
    assert len(texts) == 1
    capfd.readouterr()
    torchc.config.debug = "dedupe"
    torchc._C.graph_to_ptx(texts[0], 90)
    err = capfd.readouterr().err
    m = re.search(r"dedupe check: (\d+) key repeats built and equal, (\d+) repeats found by bitcode only", err)
    assert m, err[-2000:]
    assert (int(m.group(1)), int(m.group(2))) == (2, 0), m.group(0)  # scalar and vector variants
