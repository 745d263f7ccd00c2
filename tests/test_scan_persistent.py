"""torchc.scan on CUDA as one persistent kernel (inductor_c/codegen/gpu_scan.c, through
torchc/_scan.py's persistent_plan and _C._scan_persist*).

CPU tests: which bodies qualify (the reason when not), the generated kernel's PTX (LLVM IR
from the body's graph -> torchc's NVPTX pipeline -> ptxas for sm_90 when a CUDA toolkit is
installed), and the kernel's IR run on the CPU (llc, one pthread a GPU thread) against eager. CUDA tests (skipped without a GPU): differential against eager's loop, odd hidden
sizes, batch 1, modReLU / tanh / relu bodies, and the lowering explain() reports.
"""
import os
import shutil
import subprocess

import pytest
import torch

import torchc
from torchc import _scan, _C

CUDA = torch.cuda.is_available()
PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)


def modrelu_body(Wt, Win_t, b):
    def step(h, xs):
        x, e = xs
        z = torch.mm(h, Wt) + torch.mm(x, Win_t) + e
        h = torch.sign(z) * torch.relu(z.abs() + b)
        return h, h
    return step


def tanh_body(W):
    def step(h, x):
        h = torch.tanh(h @ W.t() + x)
        return h, h
    return step


def linear_relu_body(lin):
    def step(h, x):
        h2 = torch.relu(lin(h) + x * 0.5)
        return h2, h2 * 2.0
    return step


def eager_scan(fn, init, xs):
    h, ys = init, []
    T = (xs[0] if isinstance(xs, (tuple, list)) else xs).shape[0]
    for t in range(T):
        h, y = fn(h, tuple(x[t] for x in xs) if isinstance(xs, (tuple, list)) else xs[t])
        ys.append(y)
    return h, torch.stack(ys)


def modrelu_case(N, n, T=6, dev="cpu", inp=1):
    g = torch.Generator().manual_seed(n * 31 + N)
    W = (torch.randn(n, n, generator=g) / n ** 0.5).to(dev)
    Win = torch.randn(n, inp, generator=g).to(dev)
    # b <= 0: modReLU is continuous (with b > 0 it jumps by 2b at z = 0, where float32 rounding
    # of z's sign may differ from eager's: not a defect of either)
    b = (-torch.rand(n, generator=g) * 0.01).to(dev)
    x = torch.randn(T, N, inp, generator=g).to(dev)
    e = torch.zeros(N, n, device=dev).expand(T, N, n)
    h0 = torch.zeros(N, n, device=dev)
    return modrelu_body(W.t(), Win.t(), b), h0, (x, e)


def tanh_case(N, n, T=6, dev="cpu"):
    g = torch.Generator().manual_seed(n * 7 + N)
    W = (torch.randn(n, n, generator=g) / n ** 0.5).to(dev)
    x = torch.randn(T, N, n, generator=g).to(dev)
    h0 = torch.randn(N, n, generator=g).to(dev)
    return tanh_body(W), h0, x


def ptx_ok(kernel):
    ptx = kernel.ptx()  # (persistent_plan's default target: sm_90)
    assert ".entry torchc_scan_persist" in ptx and "bar.sync" in ptx
    if PTXAS:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "k.ptx")
            with open(p, "w") as f:
                f.write(ptx)
            env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # (ASan runs)
            r = subprocess.run([PTXAS, "-arch=sm_90", p, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True, env=env)
            assert r.returncode == 0, r.stderr
    return ptx


# ---- selection and PTX (CPU) ---------------------------------------------------------------
@pytest.mark.parametrize("N,n,inp", [(1, 7, 1), (5, 33, 3), (3, 170, 1), (2, 241, 20), (4, 512, 1)])
def test_modrelu_body_qualifies_and_its_ptx_assembles(N, n, inp):
    fn, h0, xs = modrelu_case(N, n, inp=inp)
    with torch.no_grad():
        k = _scan.persistent_plan(fn, h0, xs)
    assert k.has_mv
    # x W_inᵀ: K = 1 is captured as a broadcast multiply; K > 1 a product per element
    assert k.nxmm == (inp > 1)
    assert k.threads == max(32, (n + 31) // 32 * 32)
    assert k.w_smem == (n <= 236), k.describe()
    # W in shared memory and N <= the SMs: one row a CTA; W from L2: up to 4 rows a CTA
    assert (k.R, k.ctas) == ((1, N) if k.w_smem else (min(N, 4), (N + 3) // 4)), k.describe()
    ptx_ok(k)


def test_tanh_and_linear_bodies_qualify():
    fn, h0, x = tanh_case(3, 19)
    k = _scan.persistent_plan(fn, h0, x)  # grad enabled, nothing needs one: forward
    assert "tanh" not in k.ir and "ex2.approx" in k.ir  # tanh from the shared op layer, written out
    ptx_ok(k)
    for N in (5, 8):  # the same body at other batch sizes: specialized again, not dynamic
        k = _scan.persistent_plan(fn, torch.randn(N, 19), torch.randn(6, N, 19))
        assert (k.N, k.n) == (N, 19)
    lin = torch.nn.Linear(10, 10)
    with torch.no_grad():
        k2 = _scan.persistent_plan(linear_relu_body(lin), torch.zeros(200, 10), torch.randn(4, 200, 10), nsm=132)
    assert k2.R == 2 and k2.ctas == 100  # more rows than SMs: two a CTA
    ptx_ok(k2)


def test_bodies_that_do_not_qualify_say_why():
    W = torch.randn(8, 8)

    def reduce_body(h, x):
        h = torch.tanh(h @ W + x - h.sum(1, keepdim=True))
        return h, h

    def act_then_mm(h, x):
        h = torch.tanh(h) @ W + x
        return h, h

    def two_carries(c, x):
        h, s = c
        h = torch.tanh(h @ W + x)
        return (h, s + 1), h

    def no_matvec(h, x):
        h = torch.tanh(h + x)
        return h, h
    x = torch.randn(3, 2, 8)
    cases = [(reduce_body, torch.zeros(2, 8), x, "sum"), (act_then_mm, torch.zeros(2, 8), x, "left operand"),
             (two_carries, (torch.zeros(2, 8), torch.zeros(2, 8)), x, "one float32"),
             (tanh_body(W.double()), torch.zeros(2, 8, dtype=torch.float64), x.double(), "float32")]
    for fn, init, xs, want in cases:
        with torch.no_grad(), pytest.raises(_scan.NotPersistent, match=want):
            _scan.persistent_plan(fn, init, xs)
    with torch.no_grad():  # a pointwise recurrence qualifies too (no product to run)
        k = _scan.persistent_plan(no_matvec, torch.zeros(2, 8), x)
    assert not k.has_mv and "pointwise recurrence" in k.describe()
    ptx_ok(k)
    big = torch.randn(1100, 1100)
    with torch.no_grad(), pytest.raises(_scan.NotPersistent, match="1024"):
        _scan.persistent_plan(tanh_body(big), torch.zeros(1, 1100), torch.randn(2, 1, 1100))
    Wg = torch.randn(8, 8, requires_grad=True)  # training: forward only
    with pytest.raises(_scan.NotPersistent, match="gradient"):
        _scan.persistent_plan(tanh_body(Wg), torch.zeros(2, 8), x)


def test_explain_names_the_scan_lowering_on_the_cpu():
    fn, h0, x = tanh_case(2, 8)

    def run(h0, x):
        return torchc.scan(fn, h0, x)
    with torch.no_grad():
        e = torchc.explain(run)(h0, x)
    assert e.scan_lowerings and e.scan_lowerings[-1].startswith("C loop"), e.scan_lowerings
    torch.testing.assert_close(e.result[1], eager_scan(fn, h0, x)[1])


# ---- CUDA ----------------------------------------------------------------------------------
cuda = pytest.mark.skipif(not CUDA, reason="needs CUDA")


@pytest.fixture(autouse=True)
def _persistent_on(monkeypatch):
    """config scan_persistent is off by default until the C kernel has run on a GPU; these
    tests are that run"""
    monkeypatch.setenv("TORCHC_SCAN_PERSISTENT", "1")


@cuda
@pytest.mark.parametrize("N,n,inp", [(1, 1, 1), (1, 170, 1), (3, 33, 3), (128, 170, 1), (5, 241, 20), (2, 512, 1),
                                     (7, 600, 2), (130, 97, 1), (300, 64, 1)])
def test_cuda_modrelu_matches_eager(N, n, inp):
    fn, h0, xs = modrelu_case(N, n, T=50, dev="cuda", inp=inp)
    with torch.no_grad():
        c, ys = torchc.scan(fn, h0, xs)
        assert _scan.last_lowering.startswith("persistent kernel"), _scan.last_lowering
        ce, yse = eager_scan(fn, h0, xs)
    assert ys.shape == yse.shape and c.shape == ce.shape and ys.dtype == yse.dtype
    torch.testing.assert_close(ys, yse, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(c, ce, atol=1e-4, rtol=1e-4)


@cuda
@pytest.mark.parametrize("N,n", [(1, 5), (4, 170), (64, 511), (9, 1024)])
def test_cuda_tanh_matches_eager(N, n):
    fn, h0, x = tanh_case(N, n, T=40, dev="cuda")
    with torch.no_grad():
        c, ys = torchc.scan(fn, h0, x)
        assert _scan.last_lowering.startswith("persistent kernel"), _scan.last_lowering
        ce, yse = eager_scan(fn, h0, x)
    torch.testing.assert_close(ys, yse, atol=2e-5 * n ** 0.5, rtol=1e-4)
    torch.testing.assert_close(c, ce, atol=2e-5 * n ** 0.5, rtol=1e-4)


@cuda
def test_cuda_body_at_several_batch_sizes_keeps_its_kernel():
    """the same body at other sizes (automatic dynamic shapes would make its graph symbolic):
    a CUDA forward scan compiles its body specialized, and each size gets a kernel"""
    fn, _, _ = tanh_case(4, 24, dev="cuda")
    for N in (4, 9, 1):
        h0, x = torch.randn(N, 24, device="cuda"), torch.randn(7, N, 24, device="cuda")
        with torch.no_grad():
            c, ys = torchc.scan(fn, h0, x)
            assert _scan.last_lowering.startswith("persistent kernel"), (N, _scan.last_lowering)
            ce, yse = eager_scan(fn, h0, x)
        torch.testing.assert_close(ys, yse, atol=1e-5, rtol=1e-5)


@cuda
def test_cuda_dim1_and_reverse_match_eager():
    fn, h0, x = tanh_case(3, 45, T=12, dev="cuda")
    xt = x.movedim(0, 1).contiguous()  # [N, T, n], scanned along dim 1
    with torch.no_grad():
        c, ys = torchc.scan(fn, h0, xt, dim=1)
        assert _scan.last_lowering.startswith("persistent kernel"), _scan.last_lowering
        ce, yse = eager_scan(fn, h0, x)
        torch.testing.assert_close(ys, yse.movedim(0, 1), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(c, ce, atol=1e-5, rtol=1e-5)
        c, ys = torchc.scan(fn, h0, x, reverse=True)
        assert _scan.last_lowering.startswith("persistent kernel"), _scan.last_lowering
        ce, yse = eager_scan(fn, h0, x.flip(0))
        torch.testing.assert_close(ys, yse.flip(0), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(c, ce, atol=1e-5, rtol=1e-5)


@cuda
def test_cuda_linear_relu_two_results_and_explain():
    lin = torch.nn.Linear(37, 37).cuda()
    fn = linear_relu_body(lin)
    h0, x = torch.randn(200, 37, device="cuda"), torch.randn(30, 200, 37, device="cuda")

    def run(h0, x):
        return torchc.scan(fn, h0, x)
    with torch.no_grad():
        e = torchc.explain(run)(h0, x)
        c, ys = e.result
        ce, yse = eager_scan(fn, h0, x)
    assert any(s.startswith("persistent kernel") for s in e.scan_lowerings), e.scan_lowerings
    torch.testing.assert_close(ys, yse, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(c, ce, atol=1e-4, rtol=1e-4)


@cuda
def test_cuda_training_keeps_the_python_loop_with_reason():
    fn, h0, x = tanh_case(2, 16, T=5, dev="cuda")
    W = torch.randn(16, 16, device="cuda", requires_grad=True)
    c, ys = torchc.scan(tanh_body(W), h0, x)
    assert _scan.last_lowering.startswith("Python loop") and "gradient" in _scan.last_lowering
    ys.sum().backward()
    assert W.grad is not None


@cuda
def test_cuda_exprnn_forward_is_one_persistent_kernel():
    """torchc.manifolds' expRNN recurrence (its scan body as the module runs it; B from the
    CPU parametrization)"""
    from torchc.manifolds import ExpRNN
    from torchc.manifolds.rnn import _recurrence
    torch.manual_seed(0)
    m = ExpRNN(1, 170)
    with torch.no_grad():
        c = m.cell
        B = c.recurrent_kernel.weight.detach().cuda()
        Win, b = c.input_kernel.weight.detach().cuda(), (-c.nonlinearity.b.detach().abs()).cuda()  # (b <= 0: see modrelu_case)
        x = torch.randn(100, 4, 1, device="cuda")
        H, h = _recurrence(x, Win, B.t(), b, torch.zeros(4, 170, device="cuda"))
        assert _scan.last_lowering.startswith("persistent kernel"), _scan.last_lowering
        he, He = torch.zeros(4, 170, device="cuda"), []
        for t in range(100):
            z = he @ B.t() + x[t] @ Win.t()
            he = torch.sign(z) * torch.relu(z.abs() + b)
            He.append(he)
    torch.testing.assert_close(H, torch.stack(He), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(h, he, atol=1e-4, rtol=1e-4)


# ---- the generated kernel run on the CPU (no GPU here) --------------------------------------
# The kernel's IR, with the NVPTX parts swapped for host ones (thread and CTA ids per pthread,
# the CTA barrier a pthread barrier, ex2/lg2 from libm, shared memory one array: CTAs run one
# after another), compiled by llc and run by `threads` pthreads per CTA: the generated code's
# values against eager's on the CPU, the same IR that goes to PTX.
LLC = shutil.which("llc-16") or ("/usr/lib/llvm-16/bin/llc" if os.path.exists("/usr/lib/llvm-16/bin/llc") else None)
GCC = shutil.which("gcc")

_HARNESS = r"""
#include <pthread.h>
#include <math.h>
__attribute__((aligned(16))) float smem[1 << 16];
static __thread int tid_, cta_;
static pthread_barrier_t bar;
int emu_tid(void) { return tid_; }
int emu_cta(void) { return cta_; }
void emu_barrier(void) { pthread_barrier_wait(&bar); }
float emu_ex2(float x) { return exp2f(x); }
float emu_fmaximum(float a, float b) { return a != a || b != b ? a + b : a > b ? a : b == a ? (signbit(a) ? b : a) : b; }
float emu_fminimum(float a, float b) { return a != a || b != b ? a + b : a < b ? a : b == a ? (signbit(a) ? a : b) : b; }
void torchc_scan_persist(%(decl)s);
static void **A;
static int TT, CTA;
static void *run(void *p) {
    tid_ = (int)(long)p;
    cta_ = CTA;
    torchc_scan_persist(%(call)s);
    return 0;
}
int emu(void **args, int T, int ctas, int threads) {
    pthread_t th[1024];
    A = args;
    TT = T;
    for (CTA = 0; CTA < ctas; CTA++) {
        pthread_barrier_init(&bar, 0, threads);
        for (long i = 0; i < threads; i++)
            if (pthread_create(&th[i], 0, run, (void *)i)) return -1;
        for (int i = 0; i < threads; i++) pthread_join(th[i], 0);
        pthread_barrier_destroy(&bar);
    }
    return 0;
}
"""


def emulate(kernel, c0, inputs, T):
    import ctypes
    import re
    import tempfile
    ir = kernel.ir.replace("ptr addrspace(1)", "ptr").replace("ptr addrspace(3)", "ptr")
    ir = ir.replace("@smem = external addrspace(3) global", "@smem = external global")
    for a, b in [("llvm.nvvm.read.ptx.sreg.tid.x", "emu_tid"), ("llvm.nvvm.read.ptx.sreg.ctaid.x", "emu_cta"),
                 ("llvm.nvvm.barrier0", "emu_barrier"), ("llvm.nvvm.ex2.approx.f", "emu_ex2"),
                 ("llvm.maximum.f32", "emu_fmaximum"), ("llvm.minimum.f32", "emu_fminimum")]:
        ir = ir.replace("@" + a + "(", "@" + b + "(")
    # (the nvptx target and its metadata go: host code)
    ir = "\n".join(ln for ln in ir.splitlines() if not ln.startswith(("!", "target ")))
    ir = re.sub(r"\s*!\w+ ![0-9]+", "", ir)
    head = ir[ir.index("define void @torchc_scan_persist("):]
    nptr = head.split(")")[0].count("ptr")
    decl = ", ".join(["void *"] * nptr + ["int"])
    call = ", ".join([f"A[{i}]" for i in range(nptr)] + ["TT"])
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "k.ll"), "w").write(ir)
        open(os.path.join(d, "h.c"), "w").write(_HARNESS % {"decl": decl, "call": call})
        r = subprocess.run([LLC, "-O1", "-filetype=obj", "-relocation-model=pic", "k.ll", "-o", "k.o"], cwd=d,
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        subprocess.run([GCC, "-O1", "-shared", "-fPIC", "h.c", "k.o", "-o", "k.so", "-lpthread", "-lm"], cwd=d,
                       check=True, env=env, capture_output=True)
        lib = ctypes.CDLL(os.path.join(d, "k.so"))
    # the CUDA call's own buffers and pointer arguments (and its checks of the inputs)
    ptrs, hT, ys = _C._scan_persist_bind(kernel.cap, c0.contiguous(), list(inputs), T)
    for y in list(ys) + [hT]:
        y.fill_(float("nan"))
    args = (ctypes.c_void_p * len(ptrs))(*ptrs)
    assert lib.emu(args, T, kernel.ctas, kernel.threads) == 0
    return hT, list(ys)


def _emulated_scan(fn, init, xs, **kw):
    """(carry, ys) of the generated kernel run on the CPU, and the kernel"""
    with torch.no_grad():
        k, args = _scan.persistent_plan(fn, init, xs, with_args=True, **kw)
        T = (xs[0] if isinstance(xs, (tuple, list)) else xs).shape[0]
        hT, ys = emulate(k, init, args, T)
    return hT, ys, k


needs_llc = pytest.mark.skipif(not (LLC and GCC), reason="needs llc (LLVM 16) and gcc")


@needs_llc
@pytest.mark.parametrize("N,n,inp,sm,nsm", [(1, 1, 1, 90, 132), (3, 7, 2, 90, 132), (5, 33, 20, 90, 2),
                                            (6, 160, 1, 86, 132)])
def test_generated_modrelu_kernel_run_on_the_cpu_matches_eager(N, n, inp, sm, nsm):
    """nsm = 2: more rows than SMs (4 a CTA, a partial last CTA); sm 86 (99 KB of shared
    memory) at n = 160: W read from global memory"""
    fn, h0, xs = modrelu_case(N, n, T=9, inp=inp)
    h0 = torch.randn(N, n)
    hT, ys, k = _emulated_scan(fn, h0, xs, sm=sm, nsm=nsm)
    if n == 160:
        assert not k.w_smem
    if nsm == 2:
        assert k.R == 4 and k.ctas == 2
    with torch.no_grad():
        ce, yse = eager_scan(fn, h0, xs)
    torch.testing.assert_close(ys[0], yse, atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(hT, ce, atol=2e-5, rtol=2e-5)


@needs_llc
def test_generated_tanh_and_linear_kernels_run_on_the_cpu_match_eager():
    fn, h0, x = tanh_case(3, 21, T=7)
    hT, ys, k = _emulated_scan(fn, h0, x)
    with torch.no_grad():
        ce, yse = eager_scan(fn, h0, x)
    torch.testing.assert_close(ys[0], yse, atol=2e-6, rtol=2e-5)
    torch.testing.assert_close(hT, ce, atol=2e-6, rtol=2e-5)
    xt = torch.randn(3, 7, 21).movedim(1, 0)  # a strided x (a scan along dim 1)
    hT, ys, k = _emulated_scan(fn, h0, xt)
    with torch.no_grad():
        ce, yse = eager_scan(fn, h0, xt)
    torch.testing.assert_close(ys[0], yse, atol=2e-6, rtol=2e-5)
    lin = torch.nn.Linear(10, 10)
    fn = linear_relu_body(lin)
    h0, x = torch.randn(7, 10), torch.randn(5, 7, 10)
    hT, ys, k = _emulated_scan(fn, h0, x, nsm=4)  # 2 rows a CTA
    assert k.R == 2
    with torch.no_grad():
        ce, yse = eager_scan(fn, h0, x)
    torch.testing.assert_close(ys[0], yse, atol=2e-6, rtol=2e-5)
    torch.testing.assert_close(hT, ce, atol=2e-6, rtol=2e-5)


@needs_llc
def test_generated_transcendentals_run_on_the_cpu_match_eager():
    """exp (range reduction, powers of two, overflow / underflow), sigmoid, tanh (both
    branches), expm1, log1p, where, maximum over a wide range of inputs"""
    W = torch.randn(6, 6) * 0.1

    def step(h, x):
        z = h @ W + x
        a = torch.sigmoid(z) + torch.tanh(z) * 0.5 + torch.exp(-z.abs()) - torch.expm1(z * 1e-3)
        a = a + torch.where(z > 0, torch.log1p(z.abs()), torch.maximum(z, -torch.ones(())) * 0.25)
        return a * 0.1, torch.exp(x)
    x = torch.cat([torch.linspace(-120, 90, 4 * 6).reshape(1, 4, 6), torch.randn(3, 4, 6) * 0.3])
    h0 = torch.randn(4, 6)
    hT, ys, k = _emulated_scan(step, h0, x)
    with torch.no_grad():
        ce, yse = eager_scan(step, h0, x)
    torch.testing.assert_close(ys[0], yse, atol=0, rtol=2e-6)  # exp(x) alone: inf, 0, denormals
    torch.testing.assert_close(hT, ce, atol=1e-6, rtol=1e-5)


def test_call_buffers_are_checked_against_the_kernel():
    """_C._scan_persist_bind / _run check every tensor against what the kernel addresses (its
    graph's input sizes and strides, the x stacks' step and length, h0's shape): a mismatch
    raises instead of reading out of bounds"""
    fn, h0, x = tanh_case(3, 8, T=5)
    with torch.no_grad():
        k, args = _scan.persistent_plan(fn, h0, x, with_args=True)
    ptrs, hT, ys = _C._scan_persist_bind(k.cap, h0, list(args), 5)
    assert len(ptrs) == 2 + k.ninputs + k.nres and hT.shape == (3, 8) and ys[0].shape == (5, 3, 8)
    xi = next(i for i, a in enumerate(args) if a is not None and a.dim() == 3)
    bad = [(h0.t().contiguous().t(), args, 5), (h0, args, 6), (torch.zeros(3, 9), args, 5)]
    for wrong in (x[:, :, :4], x.double(), x.transpose(1, 2).contiguous().transpose(1, 2)):
        bad.append((h0, [wrong if i == xi else a for i, a in enumerate(args)], 5))
    for hh, aa, T in bad:
        with pytest.raises(ValueError, match="persistent kernel"):
            _C._scan_persist_bind(k.cap, hh, list(aa), T)
    with pytest.raises(ValueError, match="not a CUDA tensor"):
        _C._scan_persist_run(k.cap, h0, list(args), 5)


@needs_llc
def test_generated_bool_input_pow_and_linear_bias_run_on_the_cpu_match_eager():
    """a bool loop constant read per element (where), pow by a scalar, a linear's weight and
    bias, a 0-dim constant, a cast of a comparison: the kernel's IR on the CPU against eager"""
    lin = torch.nn.Linear(6, 6)
    mask = torch.tensor([True, False, True, True, False, False])
    s = torch.tensor(0.75)

    def step(h, x):
        z = lin(h) + x
        a = torch.where(mask, torch.tanh(z), z.abs() ** 1.5 * s) + (z > 0.1).float() * 0.25
        return a * 0.5, z ** 2
    h0, x = torch.randn(5, 6), torch.randn(4, 5, 6)
    hT, ys, k = _emulated_scan(step, h0, x, nsm=2)
    assert k.has_mv and k.R == 4 and k.ctas == 2
    with torch.no_grad():
        ce, yse = eager_scan(step, h0, x)
    torch.testing.assert_close(ys[0], yse, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(hT, ce, atol=1e-6, rtol=1e-5)
