"""Lazy fallbacks (codegen/gpu.h ic_gpu.lazy_bc; gpu_nvptx.c lazy_part, ic_gpu_lazy_ptx;
runtime/cuda.c lazy_prepare, lazy_load): the scalar variant of a kernel whose vector variant
only needs aligned base pointers is not compiled with the rest; its LLVM bitcode is kept and
compiled, then loaded as one more module, the first time a call's pointers are not aligned
(a view with a storage offset). Differential tests against eager on the device: aligned calls
load nothing, a misaligned one loads the module once (torchc._C.stats()["lazy_fallback_loads"]),
later calls of either kind stay right; pointwise, row reductions, split rows, the GEMM
template, the disk cache (the bitcode travels in the entry), CUDA graphs, several threads,
and TORCHC_GPU_LAZY=0 (everything compiled up front). Skips without a CUDA device; the PTX
side is in test_ptx_probe.py (test_lazy_fallbacks)."""
import threading

import pytest
import torch
import torch.nn.functional as F

import torchc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
BF = torch.bfloat16


def loads():
    return torchc._C.stats()["lazy_fallback_loads"]


def _close(got, want, tol=2e-2):
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol, equal_nan=True)


def misaligned(*shape, dtype=torch.float32):
    """a tensor whose data pointer is one element past an aligned allocation"""
    n = 1
    for s in shape:
        n *= s
    base = torch.randn(n + 1, device="cuda").to(dtype)
    t = base[1:].view(*shape)
    assert t.data_ptr() % 16 != 0
    return t


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.delenv("TORCHC_GPU_LAZY", raising=False)
    torchc.reset()


CASES = {
    "gelu bf16": (lambda t: F.gelu(t * 2 + 1), (64, 1000), BF),
    "softmax f32": (lambda t: torch.softmax(t * 3, -1), (64, 1000), torch.float32),
    "layernorm bf16": (lambda t: F.layer_norm(t, (768,)) * 2, (33, 768), BF),
    "split sum f32": (lambda t: t.sum() * 2, (1 << 22,), torch.float32),
}


@pytest.mark.parametrize("case", list(CASES))
def test_misaligned_call_loads_the_fallbacks_once(case):
    fn, shape, dt = CASES[case]
    cf = torchc.compile(fn)
    x = torch.randn(*shape, device="cuda").to(dt)
    n0 = loads()
    _close(cf(x), fn(x))
    assert loads() == n0, "an aligned call compiled the fallbacks"
    y = misaligned(*shape, dtype=dt)
    _close(cf(y), fn(y))
    assert loads() == n0 + 1
    _close(cf(x), fn(x))
    y2 = misaligned(*shape, dtype=dt)
    _close(cf(y2), fn(y2))
    assert loads() == n0 + 1, "the fallbacks were compiled twice"


def test_lazy_off_compiles_everything(monkeypatch):
    monkeypatch.setenv("TORCHC_GPU_LAZY", "0")
    fn, shape, dt = CASES["gelu bf16"]
    cf = torchc.compile(fn)
    n0 = loads()
    y = misaligned(*shape, dtype=dt)
    _close(cf(y), fn(y))
    assert loads() == n0


def test_gemm_template_fallback():
    """the template's fast variant needs 16-byte aligned operands: a misaligned A takes the
    lazily compiled scalar-load GEMM, fused gelu and all"""
    w = torch.randn(256, 256, device="cuda").to(BF)
    fn = lambda x: F.gelu(x @ w)  # noqa: E731
    cf = torchc.compile(fn)
    x = torch.randn(128, 256, device="cuda").to(BF)
    n0 = loads()
    _close(cf(x), fn(x))
    y = misaligned(128, 256, dtype=BF)
    _close(cf(y), fn(y))
    assert loads() == n0 + 1


def test_from_disk_cache(tmp_path, monkeypatch):
    """the bitcode is part of the disk-cache entry: a compilation served from it still has
    its fallbacks"""
    monkeypatch.setenv("TORCHC_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHC_CACHE", raising=False)
    monkeypatch.delenv("TORCHC_DISK_CACHE", raising=False)
    fn, shape, dt = CASES["softmax f32"]
    x = torch.randn(*shape, device="cuda").to(dt)
    torchc.reset()
    _close(torchc.compile(fn)(x), fn(x))  # compiled, entry written
    torchc.reset()
    cf = torchc.compile(fn)
    _close(cf(x), fn(x))  # from the entry
    n0 = loads()
    y = misaligned(*shape, dtype=dt)
    _close(cf(y), fn(y))
    assert loads() == n0 + 1


def test_cuda_graphs():
    fn, shape, dt = CASES["gelu bf16"]
    cf = torchc.compile(fn, mode="reduce-overhead")
    y = misaligned(*shape, dtype=dt)
    for _ in range(3):
        got = cf(y)
    _close(got, fn(y))
    x = torch.randn(*shape, device="cuda").to(dt)
    for _ in range(3):
        got = cf(x)
    _close(got, fn(x))


def test_threads():
    """several threads meet the first misaligned call together: one load, right results"""
    fn, shape, dt = CASES["softmax f32"]
    cf = torchc.compile(fn)
    x = torch.randn(*shape, device="cuda").to(dt)
    _close(cf(x), fn(x))
    n0 = loads()
    ys = [misaligned(*shape, dtype=dt) for _ in range(4)]
    outs = [None] * 4
    errs = []

    def work(i):
        try:
            outs[i] = cf(ys[i])
            torch.cuda.synchronize()
        except Exception as e:  # reported below
            errs.append(e)

    th = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    assert not errs, errs
    for y, o in zip(ys, outs):
        _close(o, fn(y))
    assert loads() == n0 + 1
