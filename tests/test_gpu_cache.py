"""GPU disk cache with cubins (inductor_c/runtime/gpu_cache.c, blob "TCGPU008"; runtime/cuda.c).

A CUDA compilation puts launch plan + PTX + the SASS of every module (from ptxas or the
driver's linker) on disk; a later compilation of the same graph, in this process or another,
loads the modules from those cubins (no PTX -> SASS) and must give the eager results. A
garbled or truncated entry is a miss (rebuilt and put again), never a crash. Counters:
ic_gcache_count(0) = entries read back, ic_gcache_count(1) = modules loaded from cubins.

Graphs go through tests/test_gpu.py's ctypes builder (ic_compile has no in-memory cache, so a
second ic_compile reads the disk), and through torchc.compile in fresh processes. Everything
skips cleanly without a CUDA device.
"""
import json
import os
import subprocess
import sys
from ctypes import c_int, c_long

import pytest
import torch

import torchc
import test_gpu as T

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

T.LIB.ic_gcache_count.restype = c_long
T.LIB.ic_gcache_count.argtypes = [c_int]
SEP = "\n// ---- torchc: next PTX module ----\n"  # IC_PTX_SEP (codegen/gpu.h)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(torchc.__file__)))


def counts():
    return T.LIB.ic_gcache_count(0), T.LIB.ic_gcache_count(1)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHC_CACHE", raising=False)
    monkeypatch.delenv("TORCHC_DISK_CACHE", raising=False)
    monkeypatch.delenv("TORCHC_DEBUG", raising=False)
    torchc.reset()
    return tmp_path


def fn(x, w):
    """pointwise + row reductions (several kernels): softmax, an RMS norm, a row sum"""
    y = T.exp(x * 0.5) - w
    return T.softmax(y * 2), T.rmsnorm(x, w) * 3, T.sum_(y * y, -1, True)


def inputs():
    torch.manual_seed(0)
    return T.rand(67, 300), T.rand(300)


def compile_and_check(x, w):
    c = T.Compiled(fn, x, w)
    got = c(x, w)
    want = fn(x, w)
    torch.cuda.synchronize()
    for g, e in zip(got, want):
        torch.testing.assert_close(g, e, rtol=2e-5, atol=2e-5)
    nmods = c.ptx().count(SEP) + 1
    del c
    return nmods


def entries(d):
    sub = os.path.join(d, "ptx")
    return sorted(os.path.join(sub, n) for n in os.listdir(sub) if not n.startswith("."))


def test_second_compile_loads_cubins(cache_dir):
    x, w = inputs()
    h0, c0 = counts()
    nmods = compile_and_check(x, w)  # cold: LLVM + PTX -> SASS, entry written
    h1, c1 = counts()
    assert (h1, c1) == (h0, c0)
    assert len(entries(cache_dir)) == 1
    torchc.reset()
    assert compile_and_check(x, w) == nmods  # warm: plan, PTX and cubins from the entry
    h2, c2 = counts()
    assert h2 == h1 + 1, "no disk-cache hit"
    assert c2 - c1 == nmods > 0, f"{c2 - c1} of {nmods} modules loaded from cached cubins"


@pytest.mark.parametrize("knob,value", [("TORCHC_CSE", "1"), ("TORCHC_STENCIL", "0"), ("TORCHC_GPU_TILE", "0")])
def test_code_knobs_are_in_the_key(cache_dir, monkeypatch, knob, value):
    """a knob that changes the generated code must not be answered by an entry made
    without it (the exp form was: an A/B run read the other form's kernels)"""
    x, w = inputs()
    compile_and_check(x, w)
    h0, _ = counts()
    monkeypatch.setenv(knob, value)
    compile_and_check(x, w)
    assert counts()[0] == h0, f"{knob}={value} was served the entry compiled without it"
    assert len(entries(cache_dir)) == 2
    compile_and_check(x, w)
    assert counts()[0] == h0 + 1  # and its own entry is hit the next time


@pytest.mark.parametrize("how", ["flip_tail", "flip_head", "truncate"])
def test_garbled_entry_is_rebuilt(cache_dir, how):
    x, w = inputs()
    nmods = compile_and_check(x, w)
    (path,) = entries(cache_dir)
    data = bytearray(open(path, "rb").read())
    if how == "truncate":
        data = data[: len(data) // 2]
    else:  # the tail holds the cubins; the head the header, key and plan
        at = len(data) - 100 if how == "flip_tail" else 60
        for i in range(at, at + 16):
            data[i] ^= 0x5A
    open(path, "wb").write(bytes(data))
    h0, c0 = counts()
    assert compile_and_check(x, w) == nmods  # a miss: compiled again, right results
    assert counts() == (h0, c0)
    assert compile_and_check(x, w) == nmods  # the rebuilt entry is whole again
    h1, c1 = counts()
    assert h1 == h0 + 1 and c1 - c0 == nmods


def test_no_cubins_without_disk_cache(cache_dir, monkeypatch):
    # TORCHC_DISK_CACHE=0: PTX loads through cuModuleLoadDataEx as before, nothing kept or read
    monkeypatch.setenv("TORCHC_DISK_CACHE", "0")
    x, w = inputs()
    h0, c0 = counts()
    compile_and_check(x, w)
    compile_and_check(x, w)
    assert counts() == (h0, c0)
    assert not os.path.isdir(os.path.join(cache_dir, "ptx"))


CHILD = r"""
import json, time, torch, torchc
from ctypes import CDLL, c_int, c_long
lib = CDLL(torchc._C.__file__)
lib.ic_gcache_count.restype, lib.ic_gcache_count.argtypes = c_long, [c_int]
torch.manual_seed(0)
def f(x, w):
    y = torch.exp(x * 0.5) - w
    return torch.softmax(y * 2, -1), x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w, (y * y).sum(-1)
x, w = torch.randn(67, 300, device="cuda"), torch.randn(300, device="cuda")
torch.cuda.synchronize()
t0 = time.perf_counter()
got = torchc.compile(f)(x, w)
torch.cuda.synchronize()
first = time.perf_counter() - t0
for g, e in zip(got, f(x, w)):
    torch.testing.assert_close(g, e, rtol=2e-5, atol=2e-5)
print("RESULT" + json.dumps({"hits": lib.ic_gcache_count(0), "cubins": lib.ic_gcache_count(1), "first_call_s": first}))
"""


def run_child(cache):
    env = dict(os.environ)
    for k in ("TORCHC_DEBUG", "TORCHC_CACHE", "TORCHC_DISK_CACHE"):
        env.pop(k, None)
    env["TORCHC_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_new_process_loads_cubins(tmp_path):
    cold = run_child(tmp_path)
    warm = run_child(tmp_path)
    assert cold["hits"] == 0 and cold["cubins"] == 0, cold
    assert warm["hits"] >= 1 and warm["cubins"] >= warm["hits"], warm
    print(f"first call: cold {cold['first_call_s']:.3f} s, warm {warm['first_call_s']:.3f} s "
          f"({warm['hits']} entries, {warm['cubins']} modules from cubins)")
