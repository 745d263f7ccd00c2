"""GEMM choices timed on the device (gpu_nvptx.c gemm_kernel, runtime/cuda.c choose): a GEMM of
2^27..2^31 multiply-adds is compiled both ways, the extern call (cuBLASLt) followed by its
consumer kernel, and our template with that consumer fused into its epilogue. The first call
that can (not under stream capture) times both on scratch copies of the buffers they write,
then every call runs the faster. TORCHC_GEMM_CHOICE=extern|template forces a form, =static
keeps the fixed rule. Differential tests against eager for every mode, consumers that read
the graph's inputs again (residuals), a product with no consumer, chains of choices, CUDA
graphs and the disk cache; torchc._C.stats() counts the choices. Skips without a CUDA device.
"""
import pytest
import torch
import torch.nn.functional as F

import torchc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
BF = torch.bfloat16


def _stats():
    s = torchc._C.stats()
    return s["gemm_measured"], s["gemm_template"], s["gemm_extern"]


def _rnd(*shape, scale=1.0):
    return ((torch.rand(shape, device="cuda") * 2 - 1) * scale).to(BF)


def _close(got, want):
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)


@pytest.fixture
def mode(request, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.delenv("TORCHC_GEMM", raising=False)
    if request.param:
        monkeypatch.setenv("TORCHC_GEMM_CHOICE", request.param)
    else:
        monkeypatch.delenv("TORCHC_GEMM_CHOICE", raising=False)
    torchc.reset()
    return request.param


MODES = ["", "extern", "template", "static"]


@pytest.mark.parametrize("mode", MODES, indirect=True)
@pytest.mark.parametrize("M,N,K", [(2048, 768, 768), (1000, 1024, 1024), (4097, 768, 256)])
def test_linear_gelu(mode, M, N, K):
    x, w, b = _rnd(M, K), _rnd(N, K, scale=K ** -0.5), _rnd(N)
    f = lambda x, w, b: F.gelu(F.linear(x, w, b))
    n0 = _stats()
    cf = torchc.compile(f)
    for _ in range(3):
        got = cf(x, w, b)
    _close(got, f(x, w, b))
    d = [a - b for a, b in zip(_stats(), n0)]
    if mode == "":
        assert d[0] == 1 and d[1] + d[2] == 1, d  # timed once, on the first call
    else:
        assert d[0] == 0, d


@pytest.mark.parametrize("mode", MODES, indirect=True)
def test_mlp_block_with_residual(mode):
    """two choices in a row; the second's consumer adds the block's input (read again after
    the product, so the timing must not write over it)"""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(768, 1536), torch.nn.GELU(), torch.nn.Linear(1536, 768)).cuda().to(BF)
    f = lambda x: x + m(x)
    x = _rnd(8, 128, 768)  # 1024 x 768 x 1536: 1.2e9 multiply-adds each
    with torch.no_grad():
        want = f(x)
        cf = torchc.compile(f)
        for _ in range(3):
            got = cf(x)
    _close(got, want)
    x2 = _rnd(8, 128, 768)
    with torch.no_grad():
        _close(cf(x2), f(x2))


@pytest.mark.parametrize("mode", ["", "template"], indirect=True)
def test_product_without_consumer(mode):
    a, b = _rnd(2048, 768), _rnd(768, 512, scale=0.05)
    f = lambda a, b: a @ b
    got = torchc.compile(f)(a, b)
    _close(got, f(a, b))


@pytest.mark.parametrize("mode", [""], indirect=True)
def test_choice_under_cuda_graphs(mode):
    x, w, b = _rnd(2048, 768), _rnd(768, 768, scale=0.03), _rnd(768)
    f = lambda x, w, b: torch.relu(F.linear(x, w, b)) * 2
    cf = torchc.compile(f, mode="reduce-overhead")
    for _ in range(4):
        got = cf(x, w, b)
    _close(got, f(x, w, b))
    x.copy_(_rnd(2048, 768))
    _close(cf(x, w, b), f(x, w, b))


@pytest.mark.parametrize("mode", [""], indirect=True)
def test_choice_through_disk_cache(mode, monkeypatch, tmp_path):
    monkeypatch.setenv("TORCHC_CACHE", "1")
    monkeypatch.setenv("TORCHC_CACHE_DIR", str(tmp_path))
    x, w, b = _rnd(2048, 768), _rnd(768, 768, scale=0.03), _rnd(768)
    f = lambda x, w, b: F.silu(F.linear(x, w, b))
    for _ in range(2):  # the second compile is a disk-cache hit: timed again in its first call
        torchc.reset()
        n0 = _stats()
        got = torchc.compile(f)(x, w, b)
        _close(got, f(x, w, b))
        assert _stats()[0] - n0[0] == 1


@pytest.mark.parametrize("mode", [""], indirect=True)
def test_repeated_layers_timed_once(mode):
    """identical layers share one template function and one consumer function (dedupe): the
    first one's timing decides for all of them"""
    torch.manual_seed(0)
    m = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(768, 768), torch.nn.GELU()) for _ in range(6)])
    m = m.cuda().to(BF)
    x = _rnd(2048, 768)
    n0 = _stats()
    with torch.no_grad():
        want = m(x)
        got = torchc.compile(m)(x)
    _close(got, want)
    d = [a - b for a, b in zip(_stats(), n0)]
    assert 1 <= d[0] <= 2, d


@pytest.mark.parametrize("mode", ["bogus"], indirect=True)
def test_unknown_choice_value_is_the_default(mode):
    """TORCHC_GEMM_CHOICE=bogus: the configuration table takes only its listed values, so an
    unknown one leaves the default (timed on the first call, like mode ""), and setting it in
    Python raises. (Before the table it ran the fixed rule untimed; the H100 run timed it.)"""
    assert torchc.config.gemm_choice == ""
    with pytest.raises(ValueError):
        torchc.config.gemm_choice = "bogus"
    x, w, b = _rnd(2048, 768), _rnd(768, 768, scale=0.03), _rnd(768)
    f = lambda x, w, b: F.gelu(F.linear(x, w, b))
    n0 = _stats()
    cf = torchc.compile(f)
    for _ in range(2):
        got = cf(x, w, b)
    _close(got, f(x, w, b))
    d = [a - b for a, b in zip(_stats(), n0)]
    assert d[0] == 1 and d[1] + d[2] == 1, d
