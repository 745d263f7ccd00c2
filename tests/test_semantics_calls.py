"""Calls seen in transformers' training paths (issue 21; sym_call.c MAKE_FUNCTION, obj_func.c):
a comprehension closing over constants only (transformers.utils.generic.is_tensor), and
inspect.signature of a bound method passed in a local (apply_chunking_to_forward). Each asserts
one graph, no break, and eager's result."""
import inspect

import pytest

import torch

import torchc


def _whole(fn, *args):
    torchc.reset()
    want = fn(*args)
    ex = torchc.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    torch.testing.assert_close(ex.result, want)
    torch.testing.assert_close(torchc.compile(fn)(*args), want)


def _is_t(x):
    return isinstance(x, torch.Tensor)


def _is_n(x):
    return False


def test_comprehension_closing_over_constants():
    def f(x):
        table = {"pt": _is_t, "np": _is_n}
        order = ["np", "pt"]
        pref = "pt" if x.dim() == 1 else "np"
        rest = [k for k in order if k != pref]  # closure: (pref,), a constant tuple
        picked = {k: table[k] for k in [pref] + rest}
        return x * sum(1 for fn in picked.values() if fn(x)) + len(rest)

    _whole(f, torch.randn(3))


def _chunked(fn, *xs):
    n = len(inspect.signature(fn).parameters)
    assert n == len(xs)
    return fn(*xs)


class _M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def part(self, h):
        return torch.relu(self.lin(h))

    def forward(self, x):
        return _chunked(self.part, x) + 1


def test_signature_of_bound_method_in_a_local():
    m = _M().eval()
    with torch.no_grad():
        _whole(lambda x: m(x), torch.randn(2, 4))


def test_class_defined_inside_compiled_function():
    # a class statement with a simple body: made once while tracing, held as a constant
    # (dynamo_hook/obj_new.c sym_obj_build_class); was a clean fallback at LOAD_BUILD_CLASS
    def f(x):
        class A:
            scale = 3

            def __init__(self):
                self.v = 2

            @property
            def p(self):
                return self.v * self.scale

        a = A()
        return x * a.p + isinstance(a, A)

    x = torch.randn(3)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    torch.testing.assert_close(ex.result, f(x))
    torch.testing.assert_close(torchc.compile(f)(x), f(x))
