"""torch.enable_grad() and torch.set_grad_enabled(b) blocks in captured code (issue 21: "semantics
that must be right"): enable_grad where grad mode is on already changes nothing and is captured;
inside a traced no_grad() block it turns recording on until its exit (values made there require
grad as eager's do, and get gradients); set_grad_enabled(b) that changes nothing where it is made
is captured; one that switches the mode when made (eager's __init__ does) is left to eager with
a reason, and the thread's grad mode after the call is eager's in every case."""
import pytest
import torch

import torchc
from conftest import assert_same, captured_whole


def run(f, *args):
    torchc.reset()
    w_e = torch.randn(3, requires_grad=True)
    w_c = w_e.detach().clone().requires_grad_()
    mode0 = torch.is_grad_enabled()
    want = f(w_e, *args)
    mode_e = torch.is_grad_enabled()
    torch.set_grad_enabled(mode0)
    ex = torchc.explain(f)(w_c, *args)
    mode_c = torch.is_grad_enabled()
    torch.set_grad_enabled(mode0)
    got = ex.result
    assert mode_c == mode_e
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            assert g.requires_grad == w.requires_grad, (g, w)
            assert_same(g.detach(), w.detach())
        else:
            assert g == w and type(g) is type(w)
    return ex, got, want, w_c, w_e


X = torch.randn(3)


def enable_inside_no_grad(w, x):
    with torch.no_grad():
        y = x * w
        with torch.enable_grad():
            z = y * w + x
        q = z * w
    return y, z, q, torch.is_grad_enabled()


def enable_where_on(w, x):
    with torch.enable_grad():
        return x * w, torch.is_grad_enabled()


def nested(w, x):
    with torch.no_grad():
        with torch.enable_grad():
            with torch.no_grad():
                a = x * w
            b = a * w
        c = b * w
    return a, b, c


def set_true(w, x):
    with torch.set_grad_enabled(True):
        return x * w


def set_false_inside_no_grad(w, x):
    with torch.no_grad():
        with torch.set_grad_enabled(False):
            y = x * w
        return y + 1


@torch.enable_grad()
def _decorated(w, x):
    return x * w


def decorator_inside_no_grad(w, x):
    with torch.no_grad():
        return _decorated(w, x) + 1, _decorated(w, x)


@pytest.mark.parametrize("f", [enable_inside_no_grad, enable_where_on, nested, set_true,
                               set_false_inside_no_grad, decorator_inside_no_grad])
def test_captured_whole_like_eager(f):
    ex, *_ = run(f, X)
    assert captured_whole(ex), str(ex)


def test_gradients_through_an_enable_grad_region():
    ex, got, want, w_c, w_e = run(enable_inside_no_grad, X)
    assert captured_whole(ex), str(ex)
    got[1].sum().backward()
    want[1].sum().backward()
    assert_same(w_c.grad, w_e.grad)


def set_false(w, x):
    with torch.set_grad_enabled(False):
        y = x * w
    return y, torch.is_grad_enabled()


def bare_set(w, x):
    torch.set_grad_enabled(False)
    y = x * w
    torch.set_grad_enabled(True)
    return y + 1


def bare_set_left_off(w, x):
    torch.set_grad_enabled(False)
    return x * w


@pytest.mark.allow_fallback
@pytest.mark.parametrize("f", [set_false, bare_set, bare_set_left_off])
def test_switching_when_made_is_left_to_eager_with_the_mode_restored(f):
    ex, *_ = run(f, X)
    assert any("set_grad_enabled" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_enable_grad_in_a_call_made_under_no_grad():
    with torch.no_grad():
        ex, *_ = run(enable_where_on, X)
    assert any("enable_grad" in r for r in ex.break_reasons), ex.break_reasons
