"""GEMM template of the GPU backend (inductor_c/codegen/gpu_gemm.c): compiled vs eager on CUDA.

Graphs with extern matmuls (mm, addmm, linear, bmm, baddbmm, matmul) on bf16/f16, built through
the C API (tests/test_gpu.py's ctypes builder), compiled with TORCHC_GEMM=template (forced),
=extern or auto, run on torch's stream and compared with eager. The PTX tells which path ran
(mma.sync: the template). Skips cleanly without a CUDA device.
"""
import math
import re
from ctypes import POINTER, c_double, c_int, c_int32, c_int64, c_void_p

import pytest
import torch
import torch.nn.functional as F

import test_gpu as T

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

T.LIB.ic_extern.restype = c_int32
T.LIB.ic_extern.argtypes = [c_void_p, c_int, c_int, POINTER(c_int32), c_int, POINTER(c_int64), c_double, c_double]
EXT = {"mm": 0, "bmm": 1, "matmul": 2, "addmm": 3, "linear": 4, "baddbmm": 5}
CUDA = "cuda"


def ext(kind, ins, beta=1.0, alpha=1.0):
    g = ins[0].g
    arr = (c_int32 * len(ins))(*[s.v for s in ins])
    return g.check(T.LIB.ic_extern(g.g, EXT[kind], len(ins), arr, 0, None, beta, alpha))


def is_sym(*xs):
    return any(isinstance(x, T.Sym) for x in xs)


def mm(a, b): return ext("mm", [a, b]) if is_sym(a) else torch.mm(a, b)
def bmm(a, b): return ext("bmm", [a, b]) if is_sym(a) else torch.bmm(a, b)
def matmul(a, b): return ext("matmul", [a, b]) if is_sym(a) else torch.matmul(a, b)


def addmm(c, a, b, beta=1.0, alpha=1.0):
    return ext("addmm", [c, a, b], beta, alpha) if is_sym(a) else torch.addmm(c, a, b, beta=beta, alpha=alpha)


def baddbmm(c, a, b, beta=1.0, alpha=1.0):
    return ext("baddbmm", [c, a, b], beta, alpha) if is_sym(a) else torch.baddbmm(c, a, b, beta=beta, alpha=alpha)


def linear(x, w, b=None):
    if is_sym(x):
        return ext("linear", [x, w] + ([b] if b is not None else []))
    return F.linear(x, w, b)


def act(name, x):
    return x if name is None else T.ops.unary(name, x)


@pytest.fixture
def gemm_mode(monkeypatch):
    def set_(mode):
        monkeypatch.setenv("TORCHC_GEMM", mode)
    set_("template")
    return set_


def rnd(*shape, dtype=torch.bfloat16, scale=1.0):
    return ((torch.rand(shape, device=CUDA) * 2 - 1) * scale).to(dtype)


def run(fn, *inputs, want_template=True, tol=None):
    c = T.Compiled(fn, *inputs)
    got = c(*inputs)
    want = fn(*inputs)
    torch.cuda.synchronize()
    ptx = c.ptx() or ""
    used = "mma.sync.aligned.m16n8k16" in ptx
    if want_template is not None:
        assert used == want_template, ("template" if want_template else "extern") + " path expected\n" + (c.describe() or "")
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    for g, w in zip(gots, wants):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        t = tol or dict(rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(g.float(), w.float(), equal_nan=True, **t)
    return c


SHAPES = [(1, 1, 1), (1, 7, 3), (7, 13, 5), (3, 1, 9), (16, 8, 16), (64, 64, 64), (128, 128, 32), (33, 65, 17),
          (100, 200, 300), (255, 129, 96), (31, 1000, 512), (2, 3, 4000), (512, 384, 256), (1024, 1024, 1024)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_mm_shapes(gemm_mode, M, N, K, dtype):
    s = 1 / math.sqrt(K)
    run(mm, rnd(M, K, dtype=dtype), rnd(K, N, dtype=dtype, scale=s))


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (7, 13, 5), (64, 96, 48), (200, 100, 72), (300, 520, 264)])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("activation", [None, "relu", "gelu", "silu", "gelu_tanh"])
def test_linear_epilogues(gemm_mode, M, N, K, bias, activation):
    s = 1 / math.sqrt(K)
    x, w, b = rnd(M, K), rnd(N, K, scale=s), rnd(N)

    def f(x, w, b):
        return act(activation, linear(x, w, b if bias else None))
    c = run(f, x, w, b)
    if activation:  # the activation runs in the GEMM kernel: no other launch
        lines = [ln for ln in (c.describe() or "").splitlines() if ln.startswith("gpu ")]
        assert lines and all(re.match(r"gpu tc\d+_k\d+gv?:", ln) for ln in lines), c.describe()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_linear_3d_residual_scale(gemm_mode, dtype):
    x, w, b, r = rnd(4, 33, 64, dtype=dtype), rnd(96, 64, dtype=dtype, scale=0.125), rnd(96, dtype=dtype), rnd(4, 33, 96, dtype=dtype)

    def f(x, w, b, r):
        return act("gelu", linear(x, w, b)) * 0.5 + r
    run(f, x, w, b, r)


def test_product_also_an_output(gemm_mode):
    x, w = rnd(70, 40), rnd(50, 40, scale=0.15)

    def f(x, w):
        y = linear(x, w)
        return y, act("relu", y), y.to(torch.float32) * 2
    run(f, x, w)


def test_epilogue_not_elementwise_is_not_fused(gemm_mode):
    x, w = rnd(64, 32), rnd(48, 32, scale=0.2)

    def f(x, w):
        y = linear(x, w)
        return T.softmax(y.to(torch.float32), -1), y.T + 1.0
    run(f, x, w, tol=dict(rtol=2e-2, atol=1e-2))


@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (0.5, 2.0), (0.0, 1.0)])
@pytest.mark.parametrize("cshape", [(40,), (64, 40), (1, 40), (64, 1)])
def test_addmm(gemm_mode, beta, alpha, cshape):
    c, a, b = rnd(*cshape), rnd(64, 48), rnd(48, 40, scale=0.15)
    run(lambda c, a, b: addmm(c, a, b, beta, alpha), c, a, b)


@pytest.mark.parametrize("B,M,N,K", [(1, 1, 1, 1), (3, 33, 24, 40), (5, 7, 9, 11), (8, 128, 64, 64), (2, 200, 72, 136)])
def test_bmm_baddbmm(gemm_mode, B, M, N, K):
    s = 1 / math.sqrt(K)
    a, b, c = rnd(B, M, K), rnd(B, K, N, scale=s), rnd(B, 1, N)
    run(bmm, a, b)
    run(lambda c, a, b: act("silu", baddbmm(c, a, b, 0.5, 1.5)), c, a, b)


def test_matmul_forms(gemm_mode):
    x, w = rnd(2, 8, 64), rnd(64, 32, scale=0.125)
    run(matmul, x, w)
    a, b = rnd(3, 17, 24), rnd(3, 24, 40, scale=0.2)
    run(matmul, a, b)
    run(matmul, rnd(20, 24), rnd(24, 16, scale=0.2))


def test_strided_operands(gemm_mode):
    """transposed / sliced / expanded operands: per-element loads (and cp.async where aligned)"""
    base = rnd(96, 80)
    wt = rnd(64, 80, scale=0.12)
    run(mm, base[:, :64], wt.T[:64, :])          # A rows of stride 80 (aligned), B transposed view
    run(mm, base.T[:40, :], rnd(96, 24, scale=0.1))  # A transposed: per-element variant
    run(mm, base[:, 1:65], rnd(64, 24, scale=0.12))  # A misaligned start (offset 1 element)
    a = rnd(1, 48).expand(30, 48)
    run(mm, a, rnd(48, 20, scale=0.15))           # broadcast rows (stride 0)


def test_misaligned_base_pointer_takes_the_fallback(gemm_mode):
    M, N, K = 64, 64, 64
    store = rnd(M * K + 8)
    a = store[1:1 + M * K].view(M, K)             # 2-byte aligned only: aligned in a fresh tensor
    b = rnd(K, N, scale=0.12)
    c = T.Compiled(mm, a.contiguous(), b)         # compiled for contiguous [M, K]
    got = c(a, b)
    torch.testing.assert_close(got.float(), torch.mm(a, b).float(), rtol=2e-2, atol=2e-2)


def test_modes(gemm_mode):
    x, w, b = rnd(256, 128), rnd(192, 128, scale=0.09), rnd(192)

    def f(x, w, b):
        return act("gelu", linear(x, w, b))
    gemm_mode("extern")
    run(f, x, w, b, want_template=False)
    gemm_mode("auto")
    run(f, x, w, b, want_template=None)
    gemm_mode("template")
    run(f, x, w, b, want_template=True)


def test_f32_stays_extern(gemm_mode):
    run(mm, rnd(64, 32, dtype=torch.float32), rnd(32, 16, dtype=torch.float32), want_template=False,
        tol=dict(rtol=1e-3, atol=1e-3))


def test_mlp_block(gemm_mode):
    """two linears with a gelu between: both GEMMs are templates, the gelu fused into the first"""
    x, w1, b1, w2, b2 = rnd(4, 128, 256), rnd(1024, 256, scale=1 / 16), rnd(1024), rnd(256, 1024, scale=1 / 32), rnd(256)

    def f(x, w1, b1, w2, b2):
        return linear(act("gelu", linear(x, w1, b1)), w2, b2) + x
    run(f, x, w1, b1, w2, b2)


# ---- extern GEMMs straight through cuBLASLt (inductor_c/runtime/cublaslt.c) ----------------
T.LIB.ic_cublaslt_calls.restype = c_int64
T.LIB.ic_cublaslt_calls.argtypes = []


def run_lt(fn, *inputs, lt=True, tol=None):
    """extern path; lt: whether the run must (True) / must not (False) go through cuBLASLt"""
    n0 = T.LIB.ic_cublaslt_calls()
    c = run(fn, *inputs, want_template=False, tol=tol)
    took = T.LIB.ic_cublaslt_calls() - n0
    if lt is not None:
        assert (took > 0) == lt, f"cuBLASLt {'expected' if lt else 'not expected'} ({took} calls)"
    return c


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_lt_mm_shapes(gemm_mode, M, N, K, dtype):
    gemm_mode("extern")
    s = 1 / math.sqrt(K)
    run_lt(mm, rnd(M, K, dtype=dtype), rnd(K, N, dtype=dtype, scale=s), lt=True if N % 8 == 0 and K % 8 == 0 else None)


@pytest.mark.parametrize("beta,alpha", [(1.0, 1.0), (0.5, 2.0), (0.0, 1.0), (1.0, -0.5)])
@pytest.mark.parametrize("cshape", [(40,), (64, 40), (1, 40), (64, 1)])
def test_lt_addmm(gemm_mode, beta, alpha, cshape):
    """a row-vector bias with beta 0 or 1 goes through the bias epilogue; the rest through ATen"""
    gemm_mode("extern")
    c, a, b = rnd(*cshape), rnd(64, 48), rnd(48, 40, scale=0.15)
    row = cshape in ((40,), (1, 40))
    run_lt(lambda c, a, b: addmm(c, a, b, beta, alpha), c, a, b, lt=beta == 0.0 or (beta == 1.0 and row))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("shape", [(4, 128, 256), (1, 256), (3, 1, 7, 256), (256,)])
def test_lt_linear(gemm_mode, bias, shape):
    gemm_mode("extern")
    x, w, b = rnd(*shape), rnd(192, 256, scale=1 / 16), rnd(192)

    def f(x, w, b):
        return act("gelu", linear(x, w, b if bias else None)) + 1

    run_lt(f, x, w, b, lt=True)


def test_lt_strided_operands(gemm_mode):
    """transposed operands (column-major for cuBLAS: op T), row-sliced leading dims, an input
    whose leading dims do not collapse (ATen), a broadcast row (ATen)"""
    gemm_mode("extern")
    base = rnd(96, 80)
    wt = rnd(64, 80, scale=0.12)
    run_lt(mm, base[:, :64], wt.T[:64, :], lt=True)            # A rows of stride 80, B transposed
    run_lt(mm, base.T[:48, :], rnd(96, 24, scale=0.1), lt=True)  # A transposed
    x = rnd(4, 6, 64)[:, ::2]                                  # rows 128 apart: collapse
    run_lt(lambda x, w: linear(x, w), x, rnd(32, 64, scale=0.12), lt=True)
    x = rnd(4, 8, 64)[:, :3]                                   # [4, 3] rows with a gap: ATen
    run_lt(lambda x, w: linear(x, w), x, rnd(32, 64, scale=0.12), lt=False)
    a = rnd(1, 48).expand(32, 48)
    run_lt(mm, a, rnd(48, 24, scale=0.15), lt=False)


def test_lt_misaligned_pointer_falls_back(gemm_mode):
    """planned at 16-byte aligned pointers; a later call with a 2-byte aligned view goes
    through ATen (same values)"""
    gemm_mode("extern")
    M, N, K = 64, 64, 64
    b = rnd(K, N, scale=0.12)
    c = T.Compiled(mm, rnd(M, K), b)
    a0 = rnd(M, K)
    n0 = T.LIB.ic_cublaslt_calls()
    torch.testing.assert_close(c(a0, b).float(), torch.mm(a0, b).float(), rtol=2e-2, atol=2e-2)
    torch.cuda.synchronize()
    assert T.LIB.ic_cublaslt_calls() == n0 + 1
    store = rnd(M * K + 8)
    a = store[1:1 + M * K].view(M, K)
    got = c(a, b)
    torch.testing.assert_close(got.float(), torch.mm(a, b).float(), rtol=2e-2, atol=2e-2)
    assert T.LIB.ic_cublaslt_calls() == n0 + 1


def test_lt_f32_and_switch_off(gemm_mode, monkeypatch):
    gemm_mode("extern")
    a, b = rnd(64, 32, dtype=torch.float32), rnd(32, 16, dtype=torch.float32)
    run_lt(mm, a, b, lt=True, tol=dict(rtol=1e-4, atol=1e-4))
    monkeypatch.setenv("TORCHC_CUBLASLT", "0")
    run_lt(mm, a, b, lt=False, tol=dict(rtol=1e-4, atol=1e-4))


def test_lt_repeated_runs_and_bias_pointer_change(gemm_mode):
    """the plan is made once; a new bias tensor (another pointer) is picked up on the next run"""
    gemm_mode("extern")
    x, w = rnd(8, 64), rnd(48, 64, scale=0.12)
    c = T.Compiled(lambda x, w, b: linear(x, w, b), x, w, rnd(48))
    for _ in range(3):
        b = rnd(48)
        torch.testing.assert_close(c(x, w, b).float(), F.linear(x, w, b).float(), rtol=2e-2, atol=2e-2)
