"""Extern calls with more than 4 tensor operands (IC_EXT_MAXIN = 8 in inductor_c/ic.h; the
graph node's IC_NIN): custom ops of 5..8 tensor arguments are captured as one `custom` extern,
run with every operand in place (values, dtype, shape, strides as eager's), their graph text
round-trips (parse(print(g)) == g) and names every operand, so the cache key tells graphs that
differ only in a late operand apart; a 9th tensor operand is a graph break with its reason.

Each compiled case asserts one graph, no break and the `custom` extern in explain(): a silent
fallback (which would also give eager's values) fails."""
import ctypes

import pytest
import torch

import torchc

LIB = "torchc_nin"
_lib = torch.library.Library(LIB, "FRAGMENT")  # kept alive for the module

# wsum(x0..x{n-1}) = sum_i (i + 1) * x_i: every operand weighs differently, so an operand lost,
# repeated or swapped gives a different value
def _wsum(*xs):
    return sum((i + 1) * x for i, x in enumerate(xs))


for _n in (5, 6, 8, 9):
    _args = ", ".join(f"Tensor x{i}" for i in range(_n))
    _lib.define(f"wsum{_n}({_args}) -> Tensor")
    _lib.impl(f"wsum{_n}", _wsum, "CompositeExplicitAutograd")
    torch.library.register_fake(f"{LIB}::wsum{_n}", lambda *xs: torch.empty_like(_wsum(*xs)), lib=_lib)

ops = getattr(torch.ops, LIB)


def _customs(ex):
    return sum(1 for c in ex.extern_calls if c == "custom")


def _check(fn, *args):
    ref = fn(*args)
    torchc.reset()
    cf = torchc.compile(fn)
    for _ in range(2):  # the first call compiles, the second reuses the entry
        got = cf(*args)
        assert got.dtype == ref.dtype and got.shape == ref.shape and got.stride() == ref.stride()
        torch.testing.assert_close(got, ref)
    ex = torchc.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    assert _customs(ex) == 1, ex.extern_calls
    return ex


@pytest.mark.parametrize("n", [5, 6, 8])
@pytest.mark.parametrize("shape", [(4, 5), (1,), (3, 1, 7), (0, 3)])
def test_custom_op_of_many_operands(n, shape):
    xs = [torch.randn(shape) for _ in range(n)]
    op = getattr(ops, f"wsum{n}")
    _check(lambda *a: op(*[x.sin() + i for i, x in enumerate(a)]) * 2, *xs)


def test_many_operands_noncontiguous_broadcast_and_repeated():
    a = torch.randn(5, 4).t()  # non-contiguous
    b = torch.randn(4, 1)
    c = torch.randn(5)
    x = torch.randn(4, 5)
    # operands: a view, broadcasts, the same value twice, a graph input as is
    _check(lambda a, b, c, x: ops.wsum8(a, b.expand(4, 5), c.expand(4, 5), x, x, a * 2, x + 1, b * c), a, b, c, x)


def test_many_operands_f64_and_half():
    for dt in (torch.float64, torch.float16):
        xs = [torch.randn(3, 7).to(dt) for _ in range(6)]
        _check(lambda *a: ops.wsum6(*a) + 1, *xs)


@pytest.mark.allow_fallback
def test_nine_operands_break_with_reason():
    xs = [torch.randn(4) for _ in range(9)]

    def f(*a):
        return ops.wsum9(*[x + 1 for x in a]) * 2

    ref = f(*xs)
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(*xs), ref)
    ex = torchc.explain(f)(*xs)
    assert ex.graph_break_count >= 1
    assert any("more than 8 tensor operands" in str(r) for r in ex.break_reasons), ex.break_reasons


def test_late_operand_is_part_of_the_key():
    """Two programs that differ only in the 8th operand (x vs y) compile to two entries: a
    cache key that left out operands past the 4th would hand the second the first's code."""
    xs = [torch.randn(4, 5) for _ in range(7)]
    y = torch.randn(4, 5)

    def f(*a):
        return ops.wsum8(*a[:7], a[0] * 0 + a[6]) + 1

    def g(*a):
        return ops.wsum8(*a[:7], a[0] * 0 + a[5]) + 1

    torchc.reset()
    cf, cg = torchc.compile(f), torchc.compile(g)
    torch.testing.assert_close(cf(*xs, y), f(*xs, y))
    torch.testing.assert_close(cg(*xs, y), g(*xs, y))
    assert not torch.allclose(f(*xs, y), g(*xs, y))  # the two really differ


# ---- the graph text (C side through ctypes) -------------------------------------------------
def _clib():
    lib = ctypes.CDLL(torchc._C.__file__)
    lib.ic_graph_parse.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_graph_parse.restype = ctypes.c_void_p
    lib.ic_graph_to_string.argtypes = [ctypes.c_void_p]
    lib.ic_graph_to_string.restype = ctypes.c_void_p  # malloc'd: freed with libc free
    lib.ic_graph_equal.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_graph_roundtrip.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_graph_free.argtypes = [ctypes.c_void_p]
    lib.ic_test_graph_roundtrip.argtypes = [ctypes.c_int]
    lib.ic_test_graph_roundtrip_stats.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_size_t]
    lib.ic_test_graph_roundtrip_stats.restype = ctypes.c_uint64
    return lib


_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]


def _text(n_in, ops_of_extern):
    lines = [f"%{i} = input {i} : f32[4,5] strides=[5,1]" for i in range(n_in)]
    refs = " ".join(f"%{i}" for i in ops_of_extern)
    lines.append(f"%{n_in} = extern {refs} custom params=[7,0,6,2,4,5] : f32[4,5]")
    lines.append(f"output 0 = %{n_in}")
    return "\n".join(lines) + "\n"


def _parse(lib, text):
    msg = ctypes.create_string_buffer(256)
    g = lib.ic_graph_parse(text.encode(), msg, 256)
    assert g, msg.value.decode()
    return g


def _print(lib, g):
    p = lib.ic_graph_to_string(g)
    try:
        return ctypes.string_at(p).decode()
    finally:
        _libc.free(p)


@pytest.mark.needs_no_compiler
@pytest.mark.parametrize("k", [5, 6, 8])
def test_graph_text_roundtrip_of_many_operands(k):
    lib = _clib()
    text = _text(8, list(range(k - 1, -1, -1)))  # operands in reverse: order matters
    g = _parse(lib, text)
    try:
        printed = _print(lib, g)
        assert printed.splitlines()[8].startswith(f"%8 = extern {' '.join(f'%{i}' for i in range(k - 1, -1, -1))} custom")
        msg = ctypes.create_string_buffer(256)
        assert lib.ic_graph_roundtrip(g, msg, 256) == 0, msg.value.decode()
        g2 = _parse(lib, printed)
        try:
            assert lib.ic_graph_equal(g, g2, msg, 256) == 0, msg.value.decode()
        finally:
            lib.ic_graph_free(g2)
    finally:
        lib.ic_graph_free(g)


@pytest.mark.needs_no_compiler
def test_graph_text_tells_a_late_operand_apart():
    lib = _clib()
    a = _parse(lib, _text(8, [0, 1, 2, 3, 4, 5]))
    b = _parse(lib, _text(8, [0, 1, 2, 3, 4, 7]))
    try:
        assert _print(lib, a) != _print(lib, b)
        msg = ctypes.create_string_buffer(256)
        assert lib.ic_graph_equal(a, b, msg, 256) != 0
        assert b"operands" in msg.value, msg.value
    finally:
        lib.ic_graph_free(a)
        lib.ic_graph_free(b)


@pytest.mark.needs_no_compiler
def test_graph_text_rejects_nine_operands():
    lib = _clib()
    msg = ctypes.create_string_buffer(256)
    assert not lib.ic_graph_parse(_text(9, list(range(9))).encode(), msg, 256)


def test_compiled_six_operand_graph_roundtrips():
    """The round-trip hook inside ic_compile sees the captured 6-operand extern's graph."""
    lib = _clib()
    bad0 = ctypes.c_uint64(0)
    last = ctypes.create_string_buffer(256)
    ok0 = lib.ic_test_graph_roundtrip_stats(ctypes.byref(bad0), last, 256)
    lib.ic_test_graph_roundtrip(1)
    try:
        _check(lambda *a: ops.wsum6(*[x * (i + 1) for i, x in enumerate(a)]), *[torch.randn(3, 4) for _ in range(6)])
    finally:
        lib.ic_test_graph_roundtrip(0)
    bad = ctypes.c_uint64(0)
    ok = lib.ic_test_graph_roundtrip_stats(ctypes.byref(bad), last, 256)
    assert bad.value == bad0.value, last.value
    assert ok > ok0
