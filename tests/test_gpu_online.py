"""Online split rows (gpu_nvptx.c online_pair, emit_online, online_combine; TORCHC_GPU_ONLINE=0
off): a softmax / log_softmax / logsumexp (max, then sum of exp(x - max)) or a layer_norm / var
/ std (mean, then the sum of squared deviations) of a few huge rows makes both partials of a
part in one launch, from values it loads once: each thread keeps a running max and rescaled
sum, or count, mean and M2 (Chan et al.), then the block merges them, and the next launch
combines the parts the same way. Differential tests against eager on the device with it on (a
loop over the part: 4 blocks per SM) and off: ragged
sizes, several rows, bf16 input, a misaligned view (the scalar variant), -inf over whole parts,
inf and NaN, a mean far from 0, repeated calls giving the same bits, and CUDA graphs. Skips
without a CUDA device; the PTX side is in test_ptx_probe.py (test_online_split_ptx)."""
import pytest
import torch
import torch.nn.functional as F

import torchc

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


def _close(got, want, **tol):
    torch.testing.assert_close(got, want, equal_nan=True, **tol)


@pytest.fixture
def online(request, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.delenv("TORCHC_GPU_ONLINE", raising=False)
    if request.param:  # "VAR=VALUE" of TORCHC_GPU_VAR: off
        var, _, value = request.param.partition("=")
        monkeypatch.setenv("TORCHC_GPU_" + var, value)
    torchc.reset()
    return request.param


def _fns(n):
    w = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    return {
        "softmax": (lambda t: torch.softmax(t, -1), dict(rtol=1e-4, atol=1e-9)),
        "log_softmax": (lambda t: torch.log_softmax(t, -1), dict(rtol=1e-5, atol=1e-4)),
        "logsumexp": (lambda t: torch.logsumexp(t, -1), dict(rtol=1e-5, atol=1e-4)),
        "layer_norm": (lambda t: F.layer_norm(t, (n,), w, b), dict(rtol=1e-4, atol=1e-4)),
        "var": (lambda t: t.var(-1), dict(rtol=1e-4, atol=1e-6)),
        "std": (lambda t: t.std(-1), dict(rtol=1e-4, atol=1e-6)),
    }


# default (528 blocks: a loop), off
SETTINGS = ["", "ONLINE=0"]
CASES = ["softmax", "log_softmax", "logsumexp", "layer_norm", "var", "std"]


@cuda
@pytest.mark.parametrize("online", SETTINGS, indirect=True)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("shape", [(2, 4000000), (1, 3000017), (5, 1 << 21), (3, 1000003)])
def test_online_rows(online, case, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape, device="cuda") * 4
    fn, tol = _fns(shape[-1])[case]
    _close(torchc.compile(fn)(x), fn(x), **tol)


@cuda
@pytest.mark.parametrize("online", SETTINGS, indirect=True)
@pytest.mark.parametrize("case", ["softmax", "layer_norm", "var"])
def test_online_bf16_and_misaligned(online, case):
    torch.manual_seed(1)
    n = 4000000
    fn, tol = _fns(n)[case]
    xb = (torch.randn(2, n, device="cuda") * 3).to(torch.bfloat16)
    want = fn(xb.float()).to(torch.bfloat16) if case != "var" else fn(xb)
    got = torchc.compile(fn)(xb)
    _close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
    big = torch.randn(2 * n + 1, device="cuda")
    xm = big[1:].view(2, n)  # storage offset 1: the scalar variant
    f = torchc.compile(fn)
    _close(f(xm), fn(xm), **tol)
    xa = torch.randn(2, n, device="cuda")
    _close(f(xa), fn(xa), **tol)


@cuda
@pytest.mark.parametrize("online", SETTINGS, indirect=True)
def test_online_special_values(online):
    n = 4000000
    x = torch.randn(4, n, device="cuda")
    x[0, :1500000] = float("-inf")  # whole parts of -inf: they add nothing
    x[1, 123457] = float("inf")  # eager: the row is NaN
    x[2, 3999999] = float("nan")
    x[3] = float("-inf")  # every value -inf: NaN
    for case in ("softmax", "log_softmax", "logsumexp"):
        fn, tol = _fns(n)[case]
        _close(torchc.compile(fn)(x), fn(x), **tol)
    y = torch.randn(3, n, device="cuda")
    y[0, 5] = float("nan")
    y[1, 3999998] = float("inf")
    for case in ("layer_norm", "var"):
        fn, tol = _fns(n)[case]
        _close(torchc.compile(fn)(y), fn(y), **tol)


@cuda
@pytest.mark.parametrize("online", SETTINGS, indirect=True)
def test_online_far_mean_and_whole_tensor(online):
    torch.manual_seed(2)
    x = 1e3 + torch.randn(2, 4000000, device="cuda", dtype=torch.float64)
    xf = x.float()
    want = x.var(-1).float()  # the f64 answer: both forms stay close to it
    _close(torchc.compile(lambda t: t.var(-1))(xf), want, rtol=2e-3, atol=0)
    _close(torchc.compile(lambda t: t.var(-1))(xf), xf.var(-1), rtol=2e-3, atol=0)
    z = torch.randn(1 << 24, device="cuda") + 0.5
    _close(torchc.compile(lambda t: t.var())(z), z.var(), rtol=1e-4, atol=0)
    _close(torchc.compile(lambda t: torch.softmax(t, 0))(z), torch.softmax(z, 0), rtol=1e-4, atol=1e-12)


@cuda
@pytest.mark.parametrize("online", SETTINGS, indirect=True)
def test_online_repeatable_and_graphs(online):
    x = torch.randn(2, 4000000, device="cuda") * 2
    f = torchc.compile(lambda t: (torch.softmax(t, -1), t.var(-1)))
    a, b = f(x), f(x)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    g = torchc.compile(lambda t: (torch.softmax(t, -1), t.var(-1)), mode="reduce-overhead")
    for _ in range(4):
        got = g(x)
    _close(got[0], torch.softmax(x, -1), rtol=1e-4, atol=1e-9)
    _close(got[1], x.var(-1), rtol=1e-4, atol=1e-6)
    x2 = torch.randn(2, 4000000, device="cuda")
    _close(g(x2)[0], torch.softmax(x2, -1), rtol=1e-4, atol=1e-9)


@cuda
@pytest.mark.parametrize("online", SETTINGS, indirect=True)
def test_online_composites(online):
    """pairs whose x is itself an expression: over an earlier row value (softmax of x minus its
    mean: the mean's partials are combined first), over two inputs, with a stored max (not yet
    run on a GPU when written; the PTX probe merges all four)"""
    torch.manual_seed(4)
    n = 3000017
    x = torch.randn(2, n, device="cuda") * 2
    y = torch.randn(2, n, device="cuda")
    cases = [
        (lambda a, b: torch.softmax(a - a.mean(-1, keepdim=True), -1), dict(rtol=1e-4, atol=1e-9)),
        (lambda a, b: F.layer_norm(a + b, (n,)), dict(rtol=1e-4, atol=1e-4)),
        (lambda a, b: (torch.log_softmax(a * b, -1), (a * b).amax(-1)), dict(rtol=1e-5, atol=1e-4)),
        (lambda a, b: ((a - b).var(-1), (a - b).mean(-1)), dict(rtol=1e-4, atol=1e-6)),
    ]
    for fn, tol in cases:
        _close(torchc.compile(fn)(x, y), fn(x, y), **tol)
