"""Global state every compiled entry is guarded on: grad mode, torch's default dtype and the
autocast state (device, dtype, enabled). A compiled call must give eager's dtype and values
whatever the state was when it was first compiled, and must never reuse an entry traced under
another state."""
import pytest
import torch

import torchc


def _graphs(fn, *args):
    e = torchc.explain(fn)(*args)
    return e, e.graph_count


@pytest.mark.parametrize("fn", [
    lambda a: a * 2.5,
    lambda a: a / 2,
    lambda a: a.exp() + 1,
    lambda a: torch.sigmoid(a) + 0.5,
    lambda a: (a + 1.5).sum(),
], ids=["mul_float", "int_div", "exp", "sigmoid", "sum"])
def test_default_dtype_guarded(fn):
    x = torch.arange(5)
    f = torchc.compile(fn)
    old = torch.get_default_dtype()
    try:
        for d in (torch.float32, torch.float64, torch.float32, torch.float64):
            torch.set_default_dtype(d)
            r, want = f(x), fn(x)
            assert r.dtype == want.dtype == d
            torch.testing.assert_close(r, want)
    finally:
        torch.set_default_dtype(old)


def test_default_dtype_guard_listed():
    e, n = _graphs(lambda a: a * 2, torch.ones(3))
    assert n == 1
    assert any("default_dtype=f32" in g for g in e.guards)
    assert any("autocast cpu=off" in g for g in e.guards)


def test_default_dtype_recompiles_once_per_state():
    x = torch.arange(4)
    old = torch.get_default_dtype()
    f = torchc.compile(lambda a: a * 0.5)
    try:
        c0 = torchc._C.stats()["compiles"]
        f(x)
        torch.set_default_dtype(torch.float64)
        f(x)
        f(x)
        torch.set_default_dtype(torch.float32)
        f(x)
        assert torchc._C.stats()["compiles"] - c0 == 2
    finally:
        torch.set_default_dtype(old)


lin = torch.nn.Linear(8, 8)


def _linrelu(a):
    return lin(a).relu() * 2


@torch.no_grad()
def test_autocast_around_call_cpu():
    a = torch.randn(4, 8)
    f = torchc.compile(_linrelu)
    r0 = f(a)
    assert r0.dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        r1, want = f(a), _linrelu(a)
    assert r1.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(r1, want)
    # off again: the float32 entry, not the autocast one
    r2 = f(a)
    assert r2.dtype == torch.float32
    torch.testing.assert_close(r2, _linrelu(a))


@torch.no_grad()
def test_autocast_first_call_under_autocast():
    a = torch.randn(4, 8)
    f = torchc.compile(_linrelu)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        r1, want = f(a), _linrelu(a)
    assert r1.dtype == want.dtype == torch.bfloat16
    r2 = f(a)
    assert r2.dtype == torch.float32
    torch.testing.assert_close(r2, _linrelu(a))


@torch.no_grad()
def test_autocast_guard_and_reason():
    a = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        e = torchc.explain(_linrelu)(a)
    assert e.result.dtype == torch.bfloat16
    # linear is captured with eager autocast's casts of its arguments (dynamo_hook/autocast.c)
    assert e.graph_count == 1 and e.graph_break_count == 0, e.break_reasons
    assert any("cast" in ln and "bf16" in ln for ln in e.graphs[0].splitlines()), e.graphs[0]
    assert any("autocast cpu=bf16" in g for g in e.guards)
    # an op autocast may change that has no policy yet (lerp: CUDA's promote list) breaks with
    # the reason
    with torch.autocast("cpu", dtype=torch.bfloat16):
        e = torchc.explain(lambda x: torch.lerp(_linrelu(x), _linrelu(x) * 2, 0.5))(a)
    assert any("autocast" in w for w in e.break_reasons), e.break_reasons


@torch.no_grad()
def test_autocast_pointwise_still_captured():
    """ops autocast leaves alone are captured whole under autocast"""
    a = torch.randn(4, 8)

    def f(x):
        return (x * 2 + 1).relu() - x.abs()

    with torch.autocast("cpu", dtype=torch.bfloat16):
        e = torchc.explain(f)(a)
        want = f(a)
    assert e.graph_count == 1 and e.graph_break_count == 0
    assert e.result.dtype == want.dtype
    torch.testing.assert_close(e.result, want)
    assert any("autocast cpu=bf16" in g for g in e.guards)


@torch.no_grad()
@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_autocast_region_inside():
    a = torch.randn(4, 8)

    def inner(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = lin(x)
        return y.float() + 1, y.dtype

    r, want = torchc.compile(inner)(a), inner(a)
    assert r[1] == want[1] == torch.bfloat16
    torch.testing.assert_close(r[0], want[0])


@torch.no_grad()
def test_autocast_matmul_operator():
    a, b = torch.randn(4, 8), torch.randn(8, 3)

    def f(x, y):
        return (x @ y) + 1

    g = torchc.compile(f)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        r, want = g(a, b), f(a, b)
    assert r.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(r, want)
    assert g(a, b).dtype == torch.float32


def test_grad_mode_guarded():
    w = torch.randn(3, requires_grad=True)
    f = torchc.compile(lambda a: a * 2 + 1)
    x = torch.randn(3)
    with torch.no_grad():
        assert not f(x).requires_grad
    r = f(w)
    assert r.requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@torch.no_grad()
def test_autocast_cuda():
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.LayerNorm(64)).cuda()
    x = torch.randn(8, 64, device="cuda")
    f = torchc.compile(m)
    assert f(x).dtype == torch.float32
    for dt in (torch.bfloat16, torch.float16):
        with torch.autocast("cuda", dtype=dt):
            r, want = f(x), m(x)
        assert r.dtype == want.dtype
        torch.testing.assert_close(r.float(), want.float(), atol=2e-2, rtol=2e-2)
    r = f(x)
    assert r.dtype == torch.float32
    torch.testing.assert_close(r, m(x))
