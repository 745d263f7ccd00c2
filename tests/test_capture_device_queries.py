"""Device and build queries (torch.cuda.is_available(), device_count(), ...) inside captured
code: answered at capture, one graph with no break (tracing into torch.cuda reached
torch._C._cuda_isInBadFork and broke the graph). And the first traced call does not import
torch._dynamo (2.7 s) to learn torch.compiler.is_compiling's aliases."""
import subprocess
import sys
import textwrap

import pytest
import torch

import torchc


def one_graph(f, *args):
    ex = torchc.explain(f)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    return ex.result


@pytest.mark.parametrize("shape", [(3,), (0,), (2, 1, 5)])
def test_cuda_queries_fold(shape):
    def f(x):
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        n = torch.cuda.device_count()
        if torch.backends.cudnn.is_available() and torch.distributed.is_available():
            x = x * 3
        if torch.xpu.is_available():
            x = x - 100
        return x + n, dev

    x = torch.randn(shape)
    got, dev = one_graph(f, x)
    want, wdev = f(x)
    assert dev == wdev
    torch.testing.assert_close(got, want)


def test_query_with_device_argument():
    def f(x):
        if torch.cuda.is_available() and torch.cuda.get_device_capability(x.device) >= (8, 0):
            return x.sin()
        return x.cos()

    # on a CUDA machine x must be a CUDA tensor: get_device_capability(cpu) raises in eager
    x = torch.randn(4, 3, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(one_graph(f, x), f(x))


def test_query_in_a_helper_and_accelerator():
    def helper(t):
        acc = getattr(torch, "accelerator", None)
        k = acc.device_count() if acc is not None else 0
        return t * 2 + k

    def f(x):
        return helper(x) + torch.cuda.is_available()

    x = torch.randn(5)
    torch.testing.assert_close(one_graph(f, x), f(x))


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU only: get_device_capability raises here")
@pytest.mark.allow_fallback
def test_query_that_raises_raises_as_eager():
    def f(x):
        return x * torch.cuda.get_device_capability()[0]

    x = torch.randn(3)
    with pytest.raises(Exception) as want:
        f(x)
    with pytest.raises(type(want.value)):
        torchc.compile(f)(x)


def test_first_traced_call_does_not_import_dynamo():
    code = textwrap.dedent("""
        import sys, torch, torchc
        def helper(t):
            return t + 1
        def f(x):
            y = helper(x)
            return y * 2 if torch.compiler.is_compiling() else y
        x = torch.ones(3)
        ex = torchc.explain(f)(x)
        assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
        assert torch.equal(ex.result, torch.full((3,), 4.0)), ex.result
        print("dynamo imported:", "torch._dynamo" in sys.modules)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "dynamo imported: False" in r.stdout, r.stdout
