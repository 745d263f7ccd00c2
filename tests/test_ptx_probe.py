"""GPU code generation for graphs captured on the CPU, without a GPU: TORCHC_PTX_PROBE=1 sends
every compiled CPU graph through the NVPTX path too (ic_graph_to_ptx, sm_90) and reports on
stderr. Catches GPU codegen gaps for real captured graphs on machines (CI) that have no GPU."""
import copy
import os
import re
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc


class Block(nn.Module):
    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.ln = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.emb = nn.Embedding(50, d)

    def forward(self, ids, x):
        x = x + self.emb(ids)
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.h, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
        return F.gelu(x).softmax(-1), x.float().sum(), x[:, ::2].T.contiguous()


def _probe(capfd, fn, *args):
    torchc.reset()
    with torch.no_grad():
        torchc.compile(fn)(*args)
    return [ln for ln in capfd.readouterr().err.splitlines() if "ptx probe" in ln]


def _ptxas():
    for c in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def test_captured_graphs_generate_ptx(monkeypatch, capfd, tmp_path):
    """every graph's PTX is generated, and assembled by ptxas -arch=sm_90 where it exists"""
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    m = Block().eval()
    ids = torch.randint(0, 50, (2, 7))
    x = torch.randn(2, 7, 32)
    conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1)).eval()
    for fn, args in [(m, (ids, x)), (copy.deepcopy(m).to(torch.bfloat16), (ids, x.bfloat16())),
                     (conv, (torch.randn(2, 3, 9, 9),)),
                     (lambda a, b: (a * b).relu().sum(0), (torch.randn(5, 3), torch.randn(3)))]:
        lines = _probe(capfd, fn, *args)
        assert lines and all(ln.endswith("ok") for ln in lines), lines
    files = sorted(tmp_path.glob("probe_*.ptx"))
    assert len(files) >= 4
    ptxas = _ptxas()
    if ptxas:
        for f in files:
            r = subprocess.run([ptxas, "-arch=sm_90", str(f), "-o", os.devnull], capture_output=True, text=True)
            assert r.returncode == 0, (f.name, r.stderr[-2000:])


def test_probe_reports_what_the_gpu_cannot_do(monkeypatch, capfd):
    monkeypatch.setenv("TORCHC_PTX_PROBE", "1")
    lines = _probe(capfd, lambda a: a.exp() * 2, torch.randn(4, dtype=torch.float64))
    assert lines and "FAILED" in lines[0] and "f64" in lines[0], lines


def test_kernels_spread_over_parallel_modules(monkeypatch, capfd, tmp_path):
    """the GPU compile's partitioned path (a module per kernel, compiled on threads) without a
    GPU: the PTX holds one module per part, IC_PTX_SEP between them, each assembled alone"""
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    monkeypatch.setenv("TORCHC_KERNELS_PER_PART", "1")
    monkeypatch.setenv("TORCHC_COMPILE_THREADS", "4")
    m = Block().eval()
    lines = _probe(capfd, m, torch.randint(0, 50, (2, 7)), torch.randn(2, 7, 32))
    assert lines and all(ln.endswith("ok") for ln in lines), lines
    sep = "\n// ---- torchc: next PTX module ----\n"
    texts = [f.read_text() for f in sorted(tmp_path.glob("probe_*.ptx"))]
    mods = [m for t in texts for m in t.split(sep)]
    assert max(len(t.split(sep)) for t in texts) >= 3, [len(t.split(sep)) for t in texts]
    assert all(".entry" in m and ".target sm_" in m for m in mods)
    ptxas = _ptxas()
    if ptxas:
        for i, mod in enumerate(mods):
            f = tmp_path / f"part_{i}.ptx"
            f.write_text(mod)
            r = subprocess.run([ptxas, "-arch=sm_90", str(f), "-o", os.devnull], capture_output=True, text=True)
            assert r.returncode == 0, (i, r.stderr[-2000:])


def _ptxas_v(ptxas, f):
    r = subprocess.run([ptxas, "-arch=sm_90", "-v", str(f), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, (f.name, r.stderr[-2000:])
    return r.stderr


def test_v2_plans_assemble(monkeypatch, capfd, tmp_path):
    """the second generation of launch plans (gpu_nvptx.c V2_DEFAULT) on the cases of
    benchmarks/gpu_bench.py that it targets, at small shapes, plus odd ones: 16-bit softmax
    rows (2 rows per block, exact chunks), long rows, 16-bit transposes (64 x 64 word tiles
    with the scalar tile as fallback); ptxas assembles every variant without spills"""
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    monkeypatch.setenv("TORCHC_CACHE", "0")

    def softmax(x):
        m = x.amax(-1, keepdim=True)
        e = (x - m).exp()
        return e / e.sum(-1, keepdim=True)

    bf, f16 = torch.bfloat16, torch.float16
    cases = [(softmax, (torch.randn(64, 4096, dtype=bf),)), (softmax, (torch.randn(5, 4096, dtype=f16),)),
             (softmax, (torch.randn(3, 32768),)), (softmax, (torch.randn(2, 32768, dtype=bf),)),
             (softmax, (torch.randn(7, 999, dtype=bf),)),
             (lambda x, y: x.permute(1, 0) + y, (torch.randn(256, 128, dtype=bf), torch.randn(128, 256, dtype=bf))),
             (lambda x, y: (x.permute(1, 0) * 2 + y).relu(),
              (torch.randn(130, 66, dtype=f16), torch.randn(66, 130, dtype=f16))),
             (lambda x, y: x.permute(1, 0) + y, (torch.randn(95, 34, dtype=bf), torch.randn(34, 95, dtype=bf))),
             (lambda x: x.transpose(1, 2) - 1, (torch.randn(3, 70, 46, dtype=bf),))]
    for fn, args in cases:
        lines = _probe(capfd, fn, *args)
        assert lines and all(ln.endswith("ok") for ln in lines), lines
    files = sorted(tmp_path.glob("probe_*.ptx"))
    assert len(files) >= len(cases)
    text = "".join(f.read_text() for f in files)
    assert "rcp.approx.f32" in text  # 16-bit division by the row sum
    assert "_tile[8192]" in text  # a 64 x 64 word tile
    ptxas = _ptxas()
    if ptxas:
        for f in files:
            info = _ptxas_v(ptxas, f)
            assert " 0 bytes spill stores" in info and "bytes spill stores" in info, (f.name, info)
            assert all(ln.strip().startswith("0 bytes stack") for ln in info.splitlines() if "spill" in ln), info


def _kernel_ptx(monkeypatch, capfd, tmp_path, fn, *args, env=None):
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("TORCHC_PTX_PROBE", str(tmp_path))
    monkeypatch.setenv("TORCHC_CACHE", "0")
    for f in tmp_path.glob("probe_*.ptx"):
        f.unlink()
    lines = _probe(capfd, fn, *args)
    assert lines and all(ln.endswith("ok") for ln in lines), lines
    return "".join(f.read_text() for f in sorted(tmp_path.glob("probe_*.ptx")))


@pytest.mark.parametrize("case,fast", [
    ("softmax bf16", True), ("softmax f16", True), ("softmax f32", False), ("log_softmax bf16", False),
    ("softmax bf16 lowp=0", False), ("exp stored f32", False), ("exp*y to bf16", True)])
def test_half_bound_values_take_fast_forms(case, fast, monkeypatch, capfd, tmp_path):
    """gpu_nvptx.c lowp_need: an f32 exp whose uses all end, through products, quotients and a
    row sum, in a rounding to f16/bf16 is one ex2.approx; one whose value is stored in f32,
    or reaches a log (log_softmax: a relative error becomes an absolute one), keeps the
    accurate exp (the split form's fma by log2 e - L2E, 0f32A57060). TORCHC_GPU_LOWP=0 turns
    the analysis off."""
    bf = torch.bfloat16
    x = torch.randn(8, 512)
    fns = {"softmax bf16": (lambda t: torch.softmax(t, -1), x.to(bf)),
           "softmax f16": (lambda t: torch.softmax(t, -1), x.half()),
           "softmax f32": (lambda t: torch.softmax(t, -1), x),
           "log_softmax bf16": (lambda t: torch.log_softmax(t, -1), x.to(bf)),
           "softmax bf16 lowp=0": (lambda t: torch.softmax(t, -1), x.to(bf)),
           "exp stored f32": (lambda t: (t.exp() * 3, (t.exp() * 3).to(bf)), x),
           "exp*y to bf16": (lambda t: (t.exp() * t).to(bf), x)}
    fn, arg = fns[case]
    env = {"TORCHC_GPU_LOWP": "0"} if "lowp=0" in case else None
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, fn, arg, env=env)
    assert "ex2.approx" in ptx
    assert ("0f32A57060" not in ptx) == fast, case


@pytest.mark.parametrize("pdl", ["", "0"])
def test_kernels_wait_for_their_predecessor_first(pdl, monkeypatch, capfd, tmp_path):
    """programmatic dependent launch (sm_90): each kernel's first memory access comes after
    griddepcontrol.wait (the runtime may start it before the kernel before it has finished);
    TORCHC_GPU_PDL=0: no griddepcontrol at all"""
    m = Block().eval()
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda ids, x: m(ids, x),
                      torch.randint(0, 50, (2, 7)), torch.randn(2, 7, 32), env={"TORCHC_GPU_PDL": pdl})
    bodies = ptx.split(".entry ")[1:]
    assert len(bodies) >= 4
    for b in bodies:
        if pdl == "0":
            assert "griddepcontrol" not in b
            continue
        w = b.find("griddepcontrol.wait")
        assert w > 0, b[:300]
        mem = [b.find(op) for op in ("ld.global", "st.global", "cp.async", "atom.global", "red.global")]
        assert all(i < 0 or i > w for i in mem), b[:w + 200]
        assert 0 < b.find("griddepcontrol.launch_dependents") < b.find("ret;")


def test_softmax_divides_by_one_reciprocal(monkeypatch, capfd, tmp_path):
    """f32 softmax: x * rn(1 / s) with s = sum(exp(x - max)) >= 1 (rcp.rn once per row), not a
    div.rn per element; a division by another row sum (which may be subnormal or 0) stays
    an IEEE division per element"""
    x = torch.randn(8, 512)
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda t: torch.softmax(t, -1), x)
    assert "rcp.rn.f32" in ptx and "div.rn.f32" not in ptx
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda t: t / t.exp().sum(-1, keepdim=True), x)
    assert "div.rn.f32" in ptx


def test_long_rows_one_cta_by_default(monkeypatch, capfd, tmp_path):
    """a persistent row of T = 1024 threads is one CTA (cluster rows were removed)"""
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda t: torch.softmax(t, -1), torch.randn(160, 32768),
                      env={"TORCHC_GPU_STAGE": "0"})
    assert "barrier.cluster" not in ptx and ".maxntid 1024, 1, 1" in ptx


@pytest.mark.parametrize("case,staged", [("softmax", True), ("layernorm", True), ("softmax bf16", True),
                                         ("ragged", True), ("16384", False), ("16384 all", True),
                                         ("sum", False), ("two inputs", False), ("off", False)])
def test_long_rows_staged(case, staged, monkeypatch, capfd, tmp_path):
    """gpu_nvptx.c stage_rows_ok: a persistent row of 1024 threads holding more than 16
    values each becomes 512 threads with half of each thread's chunks of the one row input in
    dynamic shared memory (.extern .shared, st.shared once, ld.shared in the later passes,
    one address register plus constant offsets) and .minnctapersm 2; not for a row read in
    one pass (sum), nor with a second row input, nor with TORCHC_GPU_STAGE=0; ptxas
    assembles them in 64 registers without spills"""
    f32, bf = torch.randn(160, 32768), torch.randn(160, 32768, dtype=torch.bfloat16)
    sm = lambda t: torch.softmax(t, -1)  # noqa: E731
    cases = {"softmax": (sm, f32, {}), "layernorm": (lambda t: F.layer_norm(t, (32768,)), f32, {}),
             "softmax bf16": (sm, bf, {}), "ragged": (sm, torch.randn(160, 30000), {}),
             "16384": (sm, torch.randn(160, 16384), {}),
             "16384 all": (sm, torch.randn(160, 16384), {"TORCHC_GPU_STAGE": "all"}),
             "sum": (lambda t: t.sum(-1), f32, {}), "two inputs": (lambda t: torch.softmax(t + t.flip(-1), -1), f32, {}),
             "off": (sm, f32, {"TORCHC_GPU_STAGE": "0"})}
    fn, x, env = cases[case]
    env.setdefault("TORCHC_GPU_STAGE", "")
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, fn, x, env=env)
    first = ptx.split(".entry ")[1]
    assert (".minnctapersm 2" in first) == staged, first[:400]
    assert (".extern .shared .align 16 .b8" in ptx) == staged
    if staged:
        assert ".maxntid 512, 1, 1" in first
        body = first.split("ret;")[0]
        assert body.count("st.shared.v4") >= 4 and body.count("ld.shared.v4") >= body.count("st.shared.v4")
        assert "+8192]" in body  # the next chunk's slot: a constant offset from one base
    ptxas = _ptxas()
    if ptxas and staged:
        f = tmp_path / "st.ptx"
        f.write_text(ptx)
        info = _ptxas_v(ptxas, f)
        assert max(int(n) for n in re.findall(r"Used (\d+) registers", info)) <= 64
        assert info.count(" 0 bytes spill stores") == info.count("spill stores"), info


def test_split_unroll(monkeypatch, capfd, tmp_path):
    """4 chunks (UNROLL) per loop iteration of a split row's partial-sums launch (x.sum() of a
    huge tensor), each one 16-byte load; assembles"""
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda t: t.sum(), torch.randn(16384 * 1024), env={})
    first = ptx.split(".entry ")[1]  # the vector variant of the partial sums
    assert first.count("ld.global.nc.v4.f32") == 4, first[:300]
    ptxas = _ptxas()
    if ptxas:
        f = tmp_path / "su.ptx"
        f.write_text(ptx)
        _ptxas_v(ptxas, f)


def test_split_parts(monkeypatch, capfd, tmp_path):
    """16 blocks per SM (2112 on 132 SMs) for x.sum()'s partial launch, capped at 4 chunks per
    thread (2048 parts here); the combining block of 512 threads reads ceil(parts / 512)
    partials each; a partial launch of more than 3 blocks per SM asks for 4 resident
    (.minnctapersm 4); assembles"""
    parts = 2048
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda t: t.sum(), torch.randn(16384 * 1024), env={})
    ents = {e.split("(")[0]: e for e in ptx.split(".entry ")[1:]}
    fin = [e for n, e in ents.items() if "_k0f" in n]
    assert fin and all(e.count("ld.global.f32") == -(-parts // 512) for e in fin)
    assert all(f"setp.lt.s32 \t%p2, %r1, {parts};" in e or f", {parts};" in e for e in fin)
    part = [e for n, e in ents.items() if "_k0p" in n]
    assert part and all(".minnctapersm 4" in e for e in part)
    ptxas = _ptxas()
    if ptxas:
        f = tmp_path / "sp.ptx"
        f.write_text(ptx)
        info = _ptxas_v(ptxas, f)
        assert max(int(n) for n in re.findall(r"Used (\d+) registers", info)) <= 32


@pytest.mark.parametrize("M,mode,template,consumer", [
    (128, "", True, False),       # 7.5e7 multiply-adds: the template, fused, no choice
    (2048, "", True, True),       # 1.2e9: both forms, timed on the device's first call
    (1024, "static", True, False),  # the fixed rule (up to 2^30): the template
    (2048, "static", False, True),  # the fixed rule: the extern call, then the gelu kernel
    (4096, "", False, True)])     # 2.4e9: the extern call
def test_gemm_choice_forms(M, mode, template, consumer, monkeypatch, capfd, tmp_path):
    """gpu_nvptx.c gemm_kernel: a GEMM of 2^27..2^31 multiply-adds gets both forms (the
    extern call with its consumer kernel, and the template with the consumer fused), timed
    by the runtime on the first call; TORCHC_GEMM_CHOICE=static keeps the fixed rule"""
    bf = torch.bfloat16
    x, w, b = torch.randn(M, 768).to(bf), torch.randn(768, 768).to(bf), torch.randn(768).to(bf)
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda x, w, b: F.gelu(F.linear(x, w, b)), x, w, b,
                      env={"TORCHC_GEMM_CHOICE": mode})
    names = re.findall(r"\.entry (\w+)", ptx)
    assert any(n.endswith("gv") for n in names) == template, names
    assert any(n.endswith("k1v") for n in names) == consumer, names


@pytest.mark.parametrize("case", ["gelu bf16", "softmax f32", "gemm bf16", "split sum"])
def test_lazy_fallbacks(case, monkeypatch, capfd, tmp_path):
    """Lazy fallbacks (gpu.h ic_gpu.lazy_bc): the scalar variant of a kernel whose vector
    variant only needs aligned base pointers is generated into a module of its own, kept as
    bitcode and compiled on first use. TORCHC_GPU_LAZY=probe takes that path in a PTX-only
    compile and appends the lazy module's PTX, made from the bitcode (ic_gpu_lazy_ptx): the
    same kernels as the eager compile, the fallbacks in the last module only; assembles"""
    bf = torch.bfloat16
    fns = {"gelu bf16": (lambda t: F.gelu(t * 2 + 1), (torch.randn(64, 1000).to(bf),)),
           "softmax f32": (lambda t: torch.softmax(t, -1), (torch.randn(64, 1000),)),
           "gemm bf16": (lambda x, w: F.gelu(x @ w), (torch.randn(256, 256).to(bf), torch.randn(256, 256).to(bf))),
           "split sum": (lambda t: t.sum(), (torch.randn(1 << 22),))}
    fn, args = fns[case]
    want = _kernel_ptx(monkeypatch, capfd, tmp_path, fn, *args)
    got = _kernel_ptx(monkeypatch, capfd, tmp_path, fn, *args, env={"TORCHC_GPU_LAZY": "probe"})
    names = lambda p: sorted(re.findall(r"\.entry tc\d+_(\w+)", p))  # noqa: E731
    assert names(got) == names(want)
    sep = "// ---- torchc: next PTX module ----"
    mods = got.split(sep)
    assert len(mods) >= 2
    lazy = re.findall(r"\.entry (\w+)", mods[-1])
    assert lazy and all(not n.endswith("v") for n in lazy), lazy
    eager = re.findall(r"\.entry (\w+)", sep.join(mods[:-1]))
    assert all(n + "v" in eager for n in lazy), (lazy, eager)
    ptxas = _ptxas()
    if ptxas:
        for i, m in enumerate(mods):
            f = tmp_path / f"lz{i}.ptx"
            f.write_text(m)
            _ptxas_v(ptxas, f)


def test_split_partials_then_one_combining_launch(monkeypatch, capfd, tmp_path):
    """x.sum() of a huge tensor: the partial launch takes 3 parameters (input, output,
    partials) and no atomics; the combining launch follows; assembles in 32 registers"""
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, lambda t: t.sum(), torch.randn(16384 * 1024), env={})
    ents = {e.split("(")[0]: e for e in ptx.split(".entry ")[1:]}
    part = [e for n, e in ents.items() if "_k0p" in n]
    fin = [e for n, e in ents.items() if "_k0f" in n]
    assert part and fin
    assert all("atom." not in e and e.split(")")[0].count(".param") == 3 for e in part)
    ptxas = _ptxas()
    if ptxas:
        f = tmp_path / "sf.ptx"
        f.write_text(ptx)
        info = _ptxas_v(ptxas, f)
        regs = re.findall(r"entry function '(\w+)'[\s\S]*?Used (\d+) registers", info)
        assert regs and all(int(n) <= 32 for name, n in regs if "_k0p" in name), regs


@pytest.mark.parametrize("case,online,launches", [
    ("softmax", "", ["p1", "p5"]), ("softmax", "0", ["p1", "p3", "p5"]),
    ("softmax bf16", "", ["p1", "p5"]), ("logsumexp", "", ["p1", "f0"]),
    ("layer_norm", "", ["p1", "p5"]), ("layer_norm", "0", ["p1", "p3", "p5"]),
    ("var", "", ["p1", "f0"]), ("var", "0", ["p1", "p3", "f0"]),
    ("rms_norm", "", ["p1", "p3"])])
def test_online_split_ptx(case, online, launches, monkeypatch, capfd, tmp_path):
    """Online split rows (gpu_nvptx.c online_pair / emit_online / online_combine): the max and
    the sum of exps (softmax, logsumexp's shifted form), or the mean and the squared deviations
    (layer_norm, var), of a few huge rows come out of one launch whose threads keep their own
    running state (4 16-byte loads an iteration, no spills; 528 blocks: a loop); B's pass has
    no launch of its own. Off
    (TORCHC_GPU_ONLINE=0): three. rms_norm (one reduction) is untouched. Assembles with ptxas."""
    n = 4000000
    x = torch.randn(2, n)
    fns = {"softmax": (lambda t: torch.softmax(t, -1), x), "softmax bf16": (lambda t: torch.softmax(t, -1), x.to(torch.bfloat16)),
           "logsumexp": (lambda t: torch.logsumexp(t, -1), x), "layer_norm": (lambda t: F.layer_norm(t, (n,)), x),
           "var": (lambda t: t.var(), torch.randn(1 << 24)), "rms_norm": (lambda t: F.rms_norm(t, (n,)), x)}
    env = {"TORCHC_GPU_ONLINE": online}
    fn, arg = fns[case]
    ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, fn, arg, env=env)
    ents = {e.split("(")[0]: e for e in ptx.split(".entry ")[1:]}
    got = sorted({re.search(r"_k0([pf]\d+)", name).group(1) for name in ents if "_k0" in name})
    assert got == sorted(launches), (got, list(ents))
    first = [e for name, e in ents.items() if "_k0p1" in name]
    if online == "" and case != "rms_norm":
        vec = [e for name, e in ents.items() if name.endswith("_k0p1v")]
        if vec:  # 16 values an iteration: 4 16-byte loads (f32) or 2 (bf16), each loaded once
            want = {"softmax bf16": 2}.get(case, 4)
            assert vec[0].count("ld.global.nc.v4") == want, vec[0].count("ld.global.nc.v4")
            assert vec[0].count("bra.uni") + vec[0].count("bra ") > 1  # 528 blocks: 2 or more iterations
        # 64 registers (two blocks of 512 a SM) where the grid is more than 3 blocks a SM
        assert all(".minnctapersm 2" in e for e in first)
    ptxas = _ptxas()
    if ptxas:
        f = tmp_path / "online.ptx"
        f.write_text(ptx)
        info = _ptxas_v(ptxas, f)
        # layer_norm's statistics are taken on the rows shifted by their first element (exact
        # for constant rows, like eager's Welford; ops_reduce.c norm_stats): its vectorized
        # output pass keeps the shift beside the mean and spills one 8-byte slot under the
        # 64-register cap; every other kernel here assembles without spills
        allowed = ("8 bytes stack",) if case == "layer_norm" and online == "" else ()
        assert all(ln.strip().startswith(("0 bytes stack",) + allowed) for ln in info.splitlines() if "spill" in ln), info


def test_online_composites_ptx(monkeypatch, capfd, tmp_path):
    """online pairs whose x is an expression: softmax of x minus its mean (the mean's launch,
    then the pair's, then the normalizing one), layer_norm of a sum of two inputs, log_softmax
    with the max also returned, var with the mean also returned; assembles without spills"""
    n = 3000017
    x, y = torch.randn(2, n), torch.randn(2, n)
    cases = [(lambda a, b: torch.softmax(a - a.mean(-1, keepdim=True), -1), ["p1", "p3", "p7"]),
             (lambda a, b: F.layer_norm(a + b, (n,)), ["p1", "p5"]),
             (lambda a, b: (torch.log_softmax(a * b, -1), (a * b).amax(-1)), ["f0", "p1", "p5"]),
             (lambda a, b: ((a - b).var(-1), (a - b).mean(-1)), ["f0", "p1"])]
    for fn, want in cases:
        ptx = _kernel_ptx(monkeypatch, capfd, tmp_path, fn, x, y)
        names = re.findall(r"\.entry (\w+)", ptx)
        assert sorted({re.search(r"_k0([pf]\d+)", m).group(1) for m in names if "_k0" in m}) == want, names
        ptxas = _ptxas()
        if ptxas:
            f = tmp_path / "oc.ptx"
            f.write_text(ptx)
            info = _ptxas_v(ptxas, f)
            assert all(ln.strip().startswith("0 bytes stack") for ln in info.splitlines() if "spill" in ln), info
