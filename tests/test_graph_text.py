"""The graph text is a complete cache key (issue 24): parse(print(g)) == g for every graph the
corpus programs (tests/corpus_programs.py) compile, checked inside ic_compile through a test
hook (inductor_c/compile.c ic_test_graph_roundtrip, reached with ctypes); and internal compiler
faults are counted, shown by explain() and leave the program's result as eager's.

The C side (tests/c/test_parse.c, tests/c/test_ptx.c) checks the parser on written IR and the
round trip over the 134 graphs of the PTX corpus.
"""
import ctypes

import pytest
import torch

import torchc
import corpus_programs


def _lib():
    lib = ctypes.CDLL(torchc._C.__file__)
    lib.ic_test_graph_roundtrip.argtypes = [ctypes.c_int]
    lib.ic_test_graph_roundtrip_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_test_graph_roundtrip_stats.restype = ctypes.c_uint64
    lib.ic_test_inject_fault.argtypes = [ctypes.c_int]
    return lib


def _roundtrip_stats(lib):
    bad = ctypes.c_uint64(0)
    last = ctypes.create_string_buffer(256)
    ok = lib.ic_test_graph_roundtrip_stats(ctypes.byref(bad), last, 256)
    return ok, bad.value, last.value.decode(errors="replace")


@pytest.mark.allow_fallback  # the corpus has programs that break or fall back by design
def test_roundtrip_over_corpus_programs():
    lib = _lib()
    ok0, bad0, _ = _roundtrip_stats(lib)
    lib.ic_test_graph_roundtrip(1)
    limit = torchc.config.recompile_limit
    torchc.config.recompile_limit = 1000
    ran = 0
    try:
        for p in corpus_programs.PROGRAMS:
            torchc.reset()
            fn, args = p.materialize()
            grad = p.grad_mode()
            cf = torchc.compile(fn)
            try:
                with torch.set_grad_enabled(grad):
                    cf(*args)
            except Exception:  # noqa: BLE001 - programs that raise in eager raise here too
                pass
            ran += 1
    finally:
        lib.ic_test_graph_roundtrip(0)
        torchc.config.recompile_limit = limit
        torchc.reset()
    ok, bad, last = _roundtrip_stats(lib)
    ok -= ok0
    bad -= bad0
    assert bad == 0, f"{bad} graphs whose text does not parse back to them; last: {last}"
    # two-sided: the corpus compiles hundreds of graphs (a hook that never ran checks nothing)
    assert ran == len(corpus_programs.PROGRAMS) and ok >= 300, (ran, ok)


@pytest.mark.allow_internal_fault
@pytest.mark.allow_fallback
def test_internal_fault_counted_and_explained():
    lib = _lib()

    def f(x):
        return (x * 2).sin().sum(1)

    x = torch.randn(5, 7)
    torchc.reset()
    n0 = torchc._C.stats()["internal_faults"]
    lib.ic_test_inject_fault(1)
    try:
        out = torchc.explain(f)(x)
    finally:
        lib.ic_test_inject_fault(0)
    assert torchc._C.stats()["internal_faults"] == n0 + 1
    assert out.internal_faults == 1
    assert "injected internal fault" in out.last_internal_fault
    assert "Internal Faults: 1" in str(out)
    assert out.graph_count == 0  # the frame ran eagerly, with eager's result
    torch.testing.assert_close(out.result, f(x))
    # no fault: nothing shown, and the frame compiles
    torchc.reset()
    out = torchc.explain(f)(x)
    assert out.internal_faults == 0 and "Internal Faults" not in str(out)
    assert out.graph_count == 1
    torch.testing.assert_close(out.result, f(x))


class _Stance:
    """a stance object whose `stance` attribute raises exc (torch.compiler.set_stance's
    object, as torchc reads it from torch._dynamo.eval_frame._stance)"""

    def __init__(self, exc):
        self.exc = exc

    @property
    def stance(self):
        raise self.exc


@pytest.mark.parametrize("exc, propagates", [(AttributeError("no stance"), False),
                                             (KeyboardInterrupt(), True), (MemoryError(), True)])
def test_unexpected_exceptions_propagate(exc, propagates):
    """PyErr_Clear only for the expected exceptions (csrc/pyerr.h tc_clear_expected): an odd
    stance object reads as the default stance, but KeyboardInterrupt and MemoryError raised
    while reading it reach the caller as in eager (they used to be swallowed)."""
    import torch._dynamo.eval_frame as ef

    def f(x):
        return x * 2 + 1

    cf = torchc.compile(f)
    x = torch.randn(3)
    saved = ef.__dict__.get("_stance")
    ef._stance = _Stance(exc)
    try:
        if propagates:
            with pytest.raises(type(exc)):
                cf(x)
        else:
            torch.testing.assert_close(cf(x), f(x))
    finally:
        ef._stance = saved
    torch.testing.assert_close(cf(x), f(x))
