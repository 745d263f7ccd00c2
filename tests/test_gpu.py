"""GPU backend (inductor_c/codegen/gpu_nvptx.c, runtime/cuda.c): compiled vs eager on CUDA.

The capture layer does not hand CUDA tensors to ic_compile yet, so these tests build graphs
directly through the inductor_c C API that torchc._C exports (ic_graph_new, ic_binary, ...,
ic_compile with device=IC_CUDA, ic_run_stream on torch's current stream), with ctypes.
A test function is written once against torch-like helpers (`ops` below) and runs twice:
on torch tensors (eager) and on graph values (Sym), so both sides compute the same thing.

Everything skips cleanly without a CUDA device. The builder at the top is import-safe
(benchmarks/gpu_bench.py reuses it).
"""
import ctypes
import math
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int32,
                    c_int64, c_size_t, c_uint, c_uint8, c_uint32, c_void_p)

import pytest
import torch

import torchc

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

# ---- the C API through ctypes ------------------------------------------------------------------
IC_CPU, IC_CUDA = 0, 1
IC_OK, IC_EUNSUPPORTED, IC_EINVALID, IC_EINTERNAL, IC_ENOMEM = range(5)
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64]
DT = {t: i for i, t in enumerate(DTYPES)}


# ctypes mirrors of inductor_c/ic.h's structs: they must be as large as C's (ic_compile writes
# all of ic_err; a short Err let it write past a Python-owned buffer and crashed later tests on
# the H100 run of 2026-12-05). test_struct_sizes_match_c checks them on every machine.
class Dim(Structure):
    _fields_ = [("coef", c_int64), ("exp", c_uint8 * 4)]


class Meta(Structure):
    _fields_ = [("dtype", c_int), ("ndim", c_int), ("sizes", c_int64 * 8), ("strides", c_int64 * 8),
                ("dyn", c_int), ("dims", Dim * 8)]


class Err(Structure):
    _fields_ = [("code", c_int), ("msg", c_char * 256), ("t_lookup", c_double), ("t_passes", c_double),
                ("t_codegen", c_double), ("t_load", c_double), ("mem_hit", c_int)]


class Options(Structure):
    _fields_ = [("device", c_int), ("device_index", c_int), ("num_threads", c_int),
                ("opt_level", c_int), ("debug", c_uint), ("autotune", c_int)]


ALLOC_FN = CFUNCTYPE(c_void_p, c_size_t, c_int, c_void_p, POINTER(c_void_p))
RELEASE_FN = CFUNCTYPE(None, c_void_p)


class Allocator(Structure):
    _fields_ = [("alloc", ALLOC_FN), ("release", RELEASE_FN)]


def _lib():
    lib = ctypes.CDLL(torchc._C.__file__)
    sig = {
        "ic_graph_new": (c_void_p, []), "ic_graph_free": (None, [c_void_p]),
        "ic_graph_error": (c_char_p, [c_void_p]),
        "ic_input": (c_int32, [c_void_p, POINTER(Meta)]),
        "ic_scalar": (c_int32, [c_void_p, c_double, c_int]),
        "ic_unary": (c_int32, [c_void_p, c_int, c_int32]),
        "ic_binary": (c_int32, [c_void_p, c_int, c_int32, c_int32]),
        "ic_where": (c_int32, [c_void_p, c_int32, c_int32, c_int32]),
        "ic_cast": (c_int32, [c_void_p, c_int32, c_int]),
        "ic_reduce": (c_int32, [c_void_p, c_int, c_int32, c_uint32, c_int, c_int]),
        "ic_reshape": (c_int32, [c_void_p, c_int32, c_int, POINTER(c_int64)]),
        "ic_permute": (c_int32, [c_void_p, c_int32, POINTER(c_int)]),
        "ic_expand": (c_int32, [c_void_p, c_int32, c_int, POINTER(c_int64)]),
        "ic_output": (c_int, [c_void_p, c_int32]),
        "ic_value_set_format": (c_int, [c_void_p, c_int32, c_int32, c_int]),
        "ic_value_meta": (POINTER(Meta), [c_void_p, c_int32]),
        "ic_compile": (c_void_p, [c_void_p, POINTER(Options), POINTER(Err)]),
        "ic_compiled_free": (None, [c_void_p]),
        "ic_compiled_num_outputs": (c_int, [c_void_p]),
        "ic_compiled_num_kernels": (c_int, [c_void_p]),
        "ic_compiled_output_meta": (POINTER(Meta), [c_void_p, c_int]),
        "ic_compiled_describe": (c_void_p, [c_void_p]),
        "ic_compiled_ptx": (c_void_p, [c_void_p]),
        "ic_run_stream": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_void_p), c_void_p, POINTER(Err)]),
        "ic_run": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_void_p), POINTER(Err)]),
        "ic_cuda_available": (c_int, []),
        "ic_cuda_unavailable_reason": (c_char_p, []),
        "ic_set_device_allocator": (None, [POINTER(Allocator)]),
        "ic_get_device_allocator": (c_int, [POINTER(Allocator)]),
        "ic_op_name": (c_char_p, [c_int]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


LIB = _lib()
_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes = [c_void_p]


def _take_string(p):
    if not p:
        return None
    s = ctypes.string_at(p).decode()
    _LIBC.free(p)
    return s


OPS = {}
for _i in range(256):
    _n = LIB.ic_op_name(_i).decode()
    if _n == "?":
        break
    OPS[_n] = _i


class GraphError(Exception):
    pass


class Graph:
    def __init__(self):
        self.g = LIB.ic_graph_new()
        self.inputs = []

    def __del__(self):
        if self.g:
            LIB.ic_graph_free(self.g)

    def check(self, v):
        if v < 0:
            raise GraphError(LIB.ic_graph_error(self.g).decode())
        return Sym(self, v)

    def input(self, t):
        m = Meta(DT[t.dtype], t.dim())
        for i in range(t.dim()):
            m.sizes[i], m.strides[i] = t.shape[i], t.stride(i)
        self.inputs.append(t)
        return self.check(LIB.ic_input(self.g, ctypes.byref(m)))

    def scalar(self, v):
        kind = DT[torch.bool] if isinstance(v, bool) else DT[torch.int64] if isinstance(v, int) else DT[torch.float64]
        return self.check(LIB.ic_scalar(self.g, float(v), kind))

    def lift(self, v):
        return v if isinstance(v, Sym) else self.scalar(v)


class Sym:
    """A graph value; operators build graph nodes."""

    def __init__(self, g, v):
        self.g, self.v = g, v

    @property
    def shape(self):
        m = LIB.ic_value_meta(self.g.g, self.v).contents
        return tuple(m.sizes[i] for i in range(m.ndim))

    def dim(self):
        return len(self.shape)

    @property
    def dtype(self):
        return DTYPES[LIB.ic_value_meta(self.g.g, self.v).contents.dtype]

    def _bin(self, op, other, rev=False):
        o = self.g.lift(other)
        a, b = (o, self) if rev else (self, o)
        return self.g.check(LIB.ic_binary(self.g.g, OPS[op], a.v, b.v))

    __add__ = lambda s, o: s._bin("add", o)
    __radd__ = lambda s, o: s._bin("add", o, True)
    __sub__ = lambda s, o: s._bin("sub", o)
    __rsub__ = lambda s, o: s._bin("sub", o, True)
    __mul__ = lambda s, o: s._bin("mul", o)
    __rmul__ = lambda s, o: s._bin("mul", o, True)
    __truediv__ = lambda s, o: s._bin("div", o)
    __rtruediv__ = lambda s, o: s._bin("div", o, True)
    __pow__ = lambda s, o: s._bin("pow", o)
    __lt__ = lambda s, o: s._bin("lt", o)
    __le__ = lambda s, o: s._bin("le", o)
    __gt__ = lambda s, o: s._bin("gt", o)
    __ge__ = lambda s, o: s._bin("ge", o)
    __neg__ = lambda s: s.g.check(LIB.ic_unary(s.g.g, OPS["neg"], s.v))

    def abs(self):
        return self.g.check(LIB.ic_unary(self.g.g, OPS["abs"], self.v))

    def exp(self):
        return self.g.check(LIB.ic_unary(self.g.g, OPS["exp"], self.v))

    def eq(self, o):
        return self._bin("eq", o)

    def ne(self, o):
        return self._bin("ne", o)

    def to(self, dtype):
        return self.g.check(LIB.ic_cast(self.g.g, self.v, DT[dtype]))

    def reshape(self, *sizes):
        arr = (c_int64 * len(sizes))(*sizes)
        return self.g.check(LIB.ic_reshape(self.g.g, self.v, len(sizes), arr))

    def permute(self, *perm):
        arr = (c_int * len(perm))(*perm)
        return self.g.check(LIB.ic_permute(self.g.g, self.v, arr))

    def expand(self, *sizes):
        arr = (c_int64 * len(sizes))(*sizes)
        return self.g.check(LIB.ic_expand(self.g.g, self.v, len(sizes), arr))

    @property
    def T(self):
        return self.permute(1, 0)

    def contiguous(self):
        """x.contiguous() of a computed value: the value itself, stored contiguous (eager's
        strides otherwise: graph/strides.c)"""
        assert LIB.ic_value_set_format(self.g.g, self.v, self.v, 1) == 0  # IC_MF_CONTIGUOUS
        return self


class ops:
    """torch-like functions that work on torch tensors (eager) and on Sym (graph)."""

    @staticmethod
    def unary(name, x):
        if isinstance(x, Sym):
            return x.g.check(LIB.ic_unary(x.g.g, OPS[name], x.v))
        f = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu,
             "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
             "relu": torch.relu, "logical_not": torch.logical_not}.get(name)
        return f(x) if f else getattr(torch, name)(x)

    @staticmethod
    def binary(name, a, b):
        if isinstance(a, Sym) or isinstance(b, Sym):
            s = a if isinstance(a, Sym) else b
            a, b = s.g.lift(a), s.g.lift(b)
            return s.g.check(LIB.ic_binary(s.g.g, OPS[name], a.v, b.v))
        return getattr(torch, name)(a, b)

    @staticmethod
    def where(c, a, b):
        if isinstance(c, Sym):
            return c.g.check(LIB.ic_where(c.g.g, c.v, c.g.lift(a).v, c.g.lift(b).v))
        return torch.where(c, a, b)

    @staticmethod
    def reduce(name, x, dim=None, keepdim=False, dtype=None):
        if isinstance(x, Sym):
            nd = x.dim()
            dims = range(nd) if dim is None else ([dim] if isinstance(dim, int) else dim)
            mask = 0
            for d in dims:
                mask |= 1 << (d % nd if nd else 0)
            dt = -1 if dtype is None else DT[dtype]
            return x.g.check(LIB.ic_reduce(x.g.g, OPS[name], x.v, mask, int(keepdim), dt))
        kw = {} if dtype is None else {"dtype": dtype}
        if name in ("amax", "amin"):
            return getattr(torch, name)(x, dim=() if dim is None else dim, keepdim=keepdim)
        if dim is None:
            return getattr(torch, name)(x, **kw)
        return getattr(torch, name)(x, dim=dim, keepdim=keepdim, **kw)


def exp(x): return ops.unary("exp", x)
def log(x): return ops.unary("log", x)
def rsqrt(x): return ops.unary("rsqrt", x)
def sum_(x, dim=None, keepdim=False, dtype=None): return ops.reduce("sum", x, dim, keepdim, dtype)
def mean(x, dim=None, keepdim=False): return ops.reduce("mean", x, dim, keepdim)
def amax(x, dim=None, keepdim=False): return ops.reduce("amax", x, dim, keepdim)
def amin(x, dim=None, keepdim=False): return ops.reduce("amin", x, dim, keepdim)


def softmax(x, dim=-1):
    m = amax(x, dim, True)
    e = exp(x - m)
    return e / sum_(e, dim, True)


def layernorm(x, w, b, eps=1e-5):
    mu = mean(x, -1, True)
    c = x - mu
    var = mean(c * c, -1, True)
    return c * rsqrt(var + eps) * w + b


def rmsnorm(x, w, eps=1e-6):
    return x * rsqrt(mean(x * x, -1, True) + eps) * w


def logsumexp(x):
    m = amax(x, -1, True)
    return log(sum_(exp(x - m), -1, True)) + m


class Compiled:
    """fn traced on graph values, compiled for CUDA; __call__ runs it on torch's stream."""

    def __init__(self, fn, *examples, device_index=None):
        self.graph = Graph()
        res = fn(*[self.graph.input(t) for t in examples])
        self.tuple = isinstance(res, tuple)
        for r in (res if self.tuple else (res,)):
            LIB.ic_output(self.graph.g, r.v)
        err = Err()
        dev = examples[0].device.index if device_index is None else device_index
        opt = Options(IC_CUDA, dev or 0, 0, 3, 0)
        self.c = LIB.ic_compile(self.graph.g, ctypes.byref(opt), ctypes.byref(err))
        if not self.c:
            raise GraphError(f"ic_compile: code {err.code}: {err.msg.decode()}", err.code)
        self.nout = LIB.ic_compiled_num_outputs(self.c)
        self.device = examples[0].device

    def __del__(self):
        if getattr(self, "c", None):
            LIB.ic_compiled_free(self.c)

    def outputs(self):
        outs = []
        for i in range(self.nout):
            m = LIB.ic_compiled_output_meta(self.c, i).contents
            # eager's strides (graph/strides.c): x.T + 1 is stored in x.T's layout
            outs.append(torch.empty_strided([m.sizes[d] for d in range(m.ndim)], [m.strides[d] for d in range(m.ndim)],
                                            dtype=DTYPES[m.dtype], device=self.device))
        return outs

    def run(self, inputs, outs, stream=None):
        ins = (c_void_p * max(1, len(inputs)))(*[t.data_ptr() for t in inputs])
        ous = (c_void_p * max(1, len(outs)))(*[t.data_ptr() for t in outs])
        err = Err()
        s = (stream or torch.cuda.current_stream(self.device)).cuda_stream
        if LIB.ic_run_stream(self.c, ins, ous, s, ctypes.byref(err)):
            raise GraphError(f"ic_run_stream: {err.msg.decode()}")
        return outs

    def __call__(self, *inputs, stream=None):
        outs = self.run(inputs, self.outputs(), stream)
        return tuple(outs) if self.tuple else outs[0]

    def describe(self):
        return _take_string(LIB.ic_compiled_describe(self.c))

    def ptx(self):
        return _take_string(LIB.ic_compiled_ptx(self.c))


def tol(dtype):
    if dtype in (torch.bfloat16, torch.float16):
        return dict(rtol=1.6e-2, atol=1e-2)
    if dtype == torch.float64:
        return dict(rtol=1e-12, atol=1e-12)
    return dict(rtol=2e-5, atol=2e-5)


def check(fn, *inputs, **kw):
    want = fn(*inputs)
    got = Compiled(fn, *inputs)(*inputs)
    torch.cuda.synchronize()
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) else (got,)
    for g, w in zip(gots, wants):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        t = kw or tol(w.dtype)
        torch.testing.assert_close(g, w, equal_nan=True, **t)
    return got


# ---- tests -----------------------------------------------------------------------------------------
CUDA = "cuda"


def rand(*shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    return (torch.rand(shape, device=CUDA, dtype=torch.float32) * (hi - lo) + lo).to(dtype)


def test_driver_available():
    assert LIB.ic_cuda_available() == 1, LIB.ic_cuda_unavailable_reason()
    assert LIB.ic_cuda_unavailable_reason() is None


UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh", "relu", "gelu",
         "gelu_tanh", "silu", "sin", "cos"]
POSITIVE = {"log", "sqrt", "rsqrt"}
SHAPES = [(0,), (1,), (7,), (1023,), (4096,), (33, 65), (3, 1, 257)]


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    for shape in SHAPES:
        x = rand(*shape, lo=0.01 if name in POSITIVE else -6, hi=6)
        check(lambda t: ops.unary(name, t), x)
    x = rand(65, 33, lo=0.01 if name in POSITIVE else -6, hi=6).t()  # non-contiguous
    check(lambda t: ops.unary(name, t), x)


UNARY2 = {"floor": (-6, 6), "ceil": (-6, 6), "round": (-6, 6), "trunc": (-6, 6), "sign": (-6, 6),
          "erf": (-4, 4), "log1p": (-0.9, 6), "expm1": (-6, 6), "log2": (0.01, 100), "exp2": (-20, 20),
          "tan": (-1.2, 1.2), "atan": (-20, 20), "asin": (-1.2, 1.2), "acos": (-1.2, 1.2), "asinh": (-30, 30),
          "acosh": (0.8, 30), "atanh": (-1.1, 1.1), "isnan": (-6, 6), "isinf": (-6, 6), "isfinite": (-6, 6)}


@pytest.mark.parametrize("name", sorted(UNARY2))
def test_unary_more(name):
    lo, hi = UNARY2[name]
    for shape in [(1,), (1023,), (33, 65)]:
        x = rand(*shape, lo=lo, hi=hi)
        if name in ("round", "floor", "ceil", "trunc", "sign"):
            x = torch.cat([x.flatten(), torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0], device=CUDA)])
        if name.startswith("is"):
            x = torch.cat([x.flatten(), torch.tensor([float("nan"), float("inf"), -float("inf")], device=CUDA)])
        check(lambda t: ops.unary(name, t), x)
    i = torch.randint(-50, 50, (100,), device=CUDA, dtype=torch.int32)
    check(lambda t: ops.unary("bitwise_not", t), i)


@pytest.mark.parametrize("name", ["fmod", "remainder", "floor_divide", "atan2", "logical_xor"])
def test_binary_more(name):
    a, b = rand(33, 31, lo=-20, hi=20), rand(31, lo=-3, hi=3)
    check(lambda x, y: ops.binary(name, x, y), a, b)
    if name != "atan2":
        i = torch.randint(-50, 50, (33, 31), device=CUDA, dtype=torch.int32)
        j = torch.randint(1, 9, (31,), device=CUDA, dtype=torch.int32) * (torch.randint(0, 2, (31,), device=CUDA, dtype=torch.int32) * 2 - 1)
        check(lambda x, y: ops.binary(name, x, y), i, j)
    for bn in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        i = torch.randint(-50, 50, (100,), device=CUDA, dtype=torch.int64)
        check(lambda x, y: ops.binary(bn, x, y), i, i.flip(0).contiguous())


def test_prod_argmax_argmin():
    x = rand(40, 30, lo=0.9, hi=1.1)
    check(lambda t: ops.reduce("prod", t, 1), x, rtol=1e-4, atol=1e-5)
    for shape in [(64, 100), (8, 5000), (300, 40)]:
        y = rand(*shape)
        check(lambda t: ops.reduce("argmax", t, -1), y)
        check(lambda t: ops.reduce("argmin", t, 0), y)
        check(lambda t: ops.reduce("argmax", t, -1, True), y)
    ties = torch.randint(-3, 3, (16, 3000), device=CUDA, dtype=torch.int8)
    check(lambda t: ops.reduce("argmax", t, 1), ties)
    check(lambda t: ops.reduce("argmin", t, 1), ties)
    n = rand(1 << 20)
    n[12345] = float("nan")
    check(lambda t: ops.reduce("argmax", t), n)  # NaN is the max, split over many blocks


def test_split_reductions():
    # few huge rows: partial results from many blocks, then a combining launch
    check(lambda t: sum_(t), rand(1 << 22), rtol=1e-4, atol=1e-2)
    check(lambda t: mean(t, 1, True), rand(3, 1000003), rtol=1e-4, atol=1e-4)
    check(lambda t: (amax(t), amin(t)), rand(1 << 21))
    check(softmax, rand(1, 300000, lo=-10, hi=10))
    x, w, b = rand(2, 200000), rand(200000), rand(200000)
    check(layernorm, x, w, b, rtol=1e-4, atol=1e-4)
    check(lambda t: sum_(t, dtype=torch.float32), rand(1 << 21, dtype=torch.bfloat16), rtol=1e-4, atol=1e-2)


def test_unary_special_values():
    x = torch.tensor([0.0, -0.0, 1e-40, -1e-40, 88.7, -88.7, 100.0, -100.0, float("inf"), float("-inf"),
                      float("nan"), 1e30, -1e30, 3.0, -3.0, 1e-8], device=CUDA)
    for name in ["exp", "sigmoid", "tanh", "relu", "silu", "neg", "abs", "gelu", "gelu_tanh"]:
        check(lambda t: ops.unary(name, t), x)
    p = x.abs()
    for name in ["log", "sqrt", "rsqrt", "reciprocal"]:
        check(lambda t: ops.unary(name, t), p)


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcast(name):
    for sa, sb in [((1000,), (1000,)), ((33, 65), (65,)), ((64, 1), (1, 100)), ((2, 3, 4), (3, 1)), ((), (5,))]:
        a = rand(*sa, lo=0.1 if name == "pow" else -3, hi=3)
        b = rand(*sb, lo=-2, hi=2)
        check(lambda x, y: ops.binary(name, x, y), a, b)


def test_binary_scalars_and_ints():
    a = rand(300)
    check(lambda x: x * 2.5 + 1, a)
    check(lambda x: 1.0 / (x.abs() + 1) ** 0.5, a)
    check(lambda x: x ** 2 + x ** 3, a)
    i = torch.randint(-100, 100, (257,), device=CUDA, dtype=torch.int32)
    j = torch.randint(-100, 100, (257,), device=CUDA, dtype=torch.int64)
    check(lambda x, y: x + y, i, j)
    check(lambda x, y: ops.binary("maximum", x, y), i, i.flip(0).contiguous())
    check(lambda x: ops.unary("abs", x), i)
    check(lambda x: x * 3 - 7, i)
    u = torch.randint(0, 200, (100,), device=CUDA, dtype=torch.uint8)
    check(lambda x: x + 5, u)


def test_where_compare_cast():
    a = rand(40, 50)
    check(lambda x: ops.where(x > 0, x, x * 0.1), a)
    check(lambda x: (x > 0.5).to(torch.float32) + x.to(torch.int32).to(torch.float32), a)
    check(lambda x: (x * 10).to(torch.int64), a)
    check(lambda x: x.to(torch.bool), a)
    check(lambda x: x.to(torch.float64) * 3, a)


def test_views_and_layouts():
    x = rand(6, 4)
    check(lambda t: t.reshape(2, 3, 4) + 1, x)
    check(lambda t: t.permute(1, 0) * 2, x)
    y = rand(1, 3, 1)
    check(lambda t: t.expand(2, 3, 4) + 1, y)
    z = rand(64, 130)[:, 1:129]  # strided rows, misaligned start
    check(lambda t: t * t, z)
    w = torch.empty(4097, device=CUDA)[1:].uniform_()  # storage offset 1: scalar fallback
    check(lambda t: t + 1, w)


@pytest.mark.parametrize("tile", ["0", "1"])
def test_transpose_tiles(tile, monkeypatch):
    # loads contiguous along another dim than the store: 32 x 32 tiles through shared memory
    # (the default; TORCHC_GPU_TILE=0 turns them off)
    monkeypatch.setenv("TORCHC_GPU_TILE", tile)
    torchc.reset()
    check(lambda t: t.permute(1, 0) + 1, rand(300, 517))
    check(lambda t, u: t.permute(1, 0) * u, rand(64, 96), rand(96, 64))
    check(lambda t: t.permute(1, 0).exp(), rand(33, 1000, dtype=torch.bfloat16))
    check(lambda t: t.permute(0, 2, 1) - 2, rand(3, 45, 70))
    check(lambda t: t.permute(1, 0) + 1, rand(32, 31))  # one short side: no tile
    # a pointwise op of a transposed input stores in that layout (eager's strides): the tiles
    # are reached by contiguous outputs (x.T.contiguous(), a copying reshape's input)
    check(lambda t: (t.permute(1, 0) + 1).contiguous(), rand(300, 517))
    check(lambda t: t.permute(1, 0).exp().contiguous(), rand(33, 1000, dtype=torch.bfloat16))
    check(lambda t: (t.permute(0, 2, 1) - 2).contiguous(), rand(3, 45, 70))
    check(lambda t: (t.permute(1, 0) * 3).contiguous(), rand(66, 130, dtype=torch.float16))
    f = torchc.compile(lambda x, y: x.t() * 2 + y)
    x, y = rand(257, 129), rand(129, 257)
    for _ in range(2):
        torch.testing.assert_close(f(x, y), x.t() * 2 + y)


def test_multi_output_and_zero_size():
    x = rand(129, 3)
    check(lambda t: (ops.unary("sigmoid", t), ops.unary("sigmoid", t) * t), x)
    check(lambda t: t + 1, rand(0, 5))
    check(lambda t: sum_(t, 1), rand(3, 0))
    check(lambda t: t * 2, rand())


REDUCE_SHAPES = [(100, 37), (64, 1024), (31, 4099), (8, 100000), (1000, 64), (5, 7), (6, 50, 8), (12345,),
                 (3, 1), (1, 1)]


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_reductions(op):
    for shape in REDUCE_SHAPES:
        x = rand(*shape)
        for dim in [-1, 0, None] + ([1] if len(shape) == 3 else []):
            for keep in (False, True):
                if dim is None and keep:
                    continue
                check(lambda t: ops.reduce(op, t, dim, keep), x, rtol=1e-4, atol=1e-3)


def test_reductions_more():
    x = rand(8, 9, 10)
    check(lambda t: sum_(t, (0, 2)), x, rtol=1e-5, atol=1e-4)
    check(lambda t: sum_(t.T, 1), rand(300, 200), rtol=1e-5, atol=1e-4)
    i = torch.randint(-50, 50, (17, 129), device=CUDA, dtype=torch.int32)
    check(lambda t: sum_(t, 1), i)
    check(lambda t: amax(t, 0), i)
    b = rand(19, 300) > 0
    check(lambda t: sum_(t, 1), b)
    check(lambda t: mean(t, 1, True), rand(50, 333, dtype=torch.float64))
    check(lambda t: sum_(t, 0), rand(4096, 256), rtol=1e-5, atol=1e-4)
    check(lambda t: sum_(t), rand(1 << 20), rtol=1e-5, atol=1e-2)


SOFTMAX_SHAPES = [(3, 33), (128, 1000), (4, 1024), (16, 4096), (4, 8192), (200, 32768), (2, 50000), (1, 1),
                  (7, 5, 129), (300, 192 * 4)]


def test_softmax():
    for shape in SOFTMAX_SHAPES:
        check(softmax, rand(*shape, lo=-10, hi=10))
    check(lambda t: softmax(t, 0), rand(300, 40))
    check(logsumexp, rand(16, 500))


def test_norms():
    for n in [64, 768, 771, 4096, 10000]:
        x, w, b = rand(10, n), rand(n), rand(n)
        check(layernorm, x, w, b, rtol=1e-4, atol=1e-4)
        check(rmsnorm, x, w, rtol=1e-4, atol=1e-4)
    check(rmsnorm, rand(2, 5, 127), rand(127), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half(dtype):
    x = rand(64, 128, dtype=dtype)
    check(lambda t, u: (t + u) * 0.5, x, rand(128, dtype=dtype))
    check(softmax, rand(7, 99, dtype=dtype))
    check(softmax, rand(16, 4096, dtype=dtype))
    check(rmsnorm, rand(16, 2048, dtype=dtype), rand(2048, dtype=dtype))
    # per-op rounding to the half type: a few ulps of difference add up through layernorm
    check(layernorm, rand(8, 512, dtype=dtype), rand(512, dtype=dtype), rand(512, dtype=dtype), rtol=2e-2, atol=4e-2)
    check(lambda t: ops.unary("gelu", t), rand(1000, dtype=dtype))
    check(lambda t: sum_(t.to(torch.float32), 1), rand(33, 256, dtype=dtype), rtol=1e-5, atol=1e-4)
    check(lambda t: t.to(torch.float32) * 2, rand(1001, dtype=dtype))


def test_f64_transcendental_is_unsupported():
    x = rand(10, dtype=torch.float64)
    with pytest.raises(GraphError) as e:
        Compiled(lambda t: exp(t), x)
    assert e.value.args[1] == IC_EUNSUPPORTED


def test_streams_ptx_and_describe():
    x = rand(256, 1024)
    c = Compiled(softmax, x)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = c(x)
    s.synchronize()
    torch.testing.assert_close(y, softmax(x), rtol=2e-5, atol=2e-5)
    ptx = c.ptx()
    assert ".entry" in ptx and ".target sm_" in ptx
    d = c.describe()
    assert "gpu " in d and "block" in d
    assert LIB.ic_compiled_num_kernels(c.c) == 1  # softmax stays one kernel


def test_allocator():
    calls = []
    keep = {}

    def alloc(n, dev, stream, handle):
        t = torch.empty(n, dtype=torch.uint8, device=f"cuda:{dev}")
        keep[t.data_ptr()] = t
        handle[0] = t.data_ptr()
        calls.append(n)
        return t.data_ptr()

    def release(h):
        keep.pop(h)

    a = Allocator(ALLOC_FN(alloc), RELEASE_FN(release))
    orig = Allocator()  # torchc's (PyTorch's caching allocator): put back after, for the tests after
    had = LIB.ic_get_device_allocator(ctypes.byref(orig))
    LIB.ic_set_device_allocator(ctypes.byref(a))
    try:
        # x.sum(0) feeds a pointwise kernel over x: the reduction lands in the workspace
        x = rand(512, 300)
        check(lambda t: t * sum_(t, 0, True) + amax(t * 2, 1, True), x, rtol=1e-4, atol=1e-3)
        assert calls, "the workspace did not come from the registered allocator"
        assert not keep
    finally:
        LIB.ic_set_device_allocator(None)
    try:
        check(lambda t: t * sum_(t, 0, True), rand(512, 300), rtol=1e-4, atol=1e-3)  # none: cuMemAlloc*
    finally:
        LIB.ic_set_device_allocator(ctypes.byref(orig) if had else None)
    now = Allocator()
    assert LIB.ic_get_device_allocator(ctypes.byref(now)) == had
    if had:
        assert ctypes.cast(now.alloc, c_void_p).value == ctypes.cast(orig.alloc, c_void_p).value
        assert ctypes.cast(now.release, c_void_p).value == ctypes.cast(orig.release, c_void_p).value
    n = len(calls)
    check(lambda t: t * sum_(t, 0, True), rand(512, 300), rtol=1e-4, atol=1e-3)  # torchc's again
    assert len(calls) == n  # the test's allocator is not called any more


def test_random_chains():
    g = torch.Generator().manual_seed(1)
    names = ["exp", "tanh", "sigmoid", "relu", "neg", "sin"]
    for trial in range(20):
        shape = [int(torch.randint(1, 40, (1,), generator=g)) for _ in range(int(torch.randint(1, 4, (1,), generator=g)))]
        x, y = rand(*shape), rand(*shape[-1:])
        picks = [names[int(i)] for i in torch.randint(0, len(names), (4,), generator=g)]

        def f(a, b):
            v = a * b + 0.5
            for n in picks:
                v = ops.unary(n, v) * 0.9 + b
            return v, sum_(v, -1)

        check(f, x, y, rtol=1e-4, atol=1e-4)


def test_torchc_compile_cuda_matches_eager():
    # Through the capture layer: compiled on the GPU once it accepts CUDA tensors, an eager
    # fallback before; either way the result must match.
    def f(x, w):
        return torch.softmax(x * 2, -1) * w

    x, w = rand(64, 512), rand(512)
    got = torchc.compile(f)(x, w)
    torch.testing.assert_close(got, f(x, w), rtol=2e-5, atol=2e-5)


def test_capture_on_cuda_compiles_one_graph_and_matches():
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.w = nn.Parameter(torch.randn(d))

        def forward(self, x):
            h = self.norm(x) * self.w
            h = F.gelu(h) + x
            print_free = h.amax(-1, keepdim=True)
            return torch.softmax(h - print_free, -1), h.sum()

    m = Block(768).cuda().eval()
    x = torch.randn(256, 768, device="cuda")
    cm = torchc.compile(m)
    with torch.no_grad():
        got, want = cm(x), m(x)
        for g, w in zip(got, want):
            assert g.device == w.device and g.dtype == w.dtype
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)
        ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def test_capture_on_cuda_breaks_mutation_and_bf16():
    def f(x, buf):
        y = torch.relu(x) * 2
        buf.add_(y.sum(0))            # in-place update of an input, copied back on the GPU
        s = y.mean().item()           # graph break, the float flows on
        return (y + s).to(torch.bfloat16).float() * 0.5

    x = torch.randn(33, 65, device="cuda")
    b1, b2 = torch.zeros(65, device="cuda"), torch.zeros(65, device="cuda")
    got, want = torchc.compile(f)(x, b1), f(x, b2)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(b1, b2, rtol=1e-5, atol=1e-5)
    xb = torch.randn(16, 128, device="cuda", dtype=torch.bfloat16)
    g = lambda x: torch.softmax(x.float() * 3, -1).to(torch.bfloat16)
    torch.testing.assert_close(torchc.compile(g)(xb).float(), g(xb).float(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_capture_sdpa_on_cuda(dtype):
    """scaled_dot_product_attention as an ATen extern in a CUDA graph (flash/efficient kernels
    for half types), with a causal flag, a bool padding mask and a float mask."""
    import torch.nn.functional as F

    def f(q, k, v, mb, mf):
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b = F.scaled_dot_product_attention(q * 0.5, k, v, attn_mask=mb)
        c = F.scaled_dot_product_attention(q, k, v, attn_mask=mf, scale=0.2)
        return a + b.relu() + c

    q, k, v = (torch.randn(2, 12, 128, 64, device="cuda", dtype=dtype) for _ in range(3))
    mb = torch.ones(2, 1, 1, 128, device="cuda", dtype=torch.bool)
    mb[1, ..., 100:] = False
    mf = torch.randn(2, 12, 128, 128, device="cuda", dtype=dtype)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype != torch.float32 else dict(rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        torch.testing.assert_close(torchc.compile(f)(q, k, v, mb, mf), f(q, k, v, mb, mf), **tol)
        torchc.reset()
        ex = torchc.explain(f)(q, k, v, mb, mf)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.extern_calls.count("sdpa") == 3, ex


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_cnn_bf16_channels_last_on_cuda(layout, monkeypatch):
    # bf16 convs on CUDA run channels-last by default (TORCHC_CONV_LAYOUT): a ResNet-style
    # block with BN, ReLU, a strided downsampling shortcut, pooling; one graph, eager results
    import torch.nn as nn
    import torch.nn.functional as F
    monkeypatch.setenv("TORCHC_CONV_LAYOUT", layout)
    torchc.reset()

    class Block(nn.Module):
        def __init__(self, c=16, o=32):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o)
            self.c2, self.b2 = nn.Conv2d(o, o, 3, 1, 1, groups=4), nn.BatchNorm2d(o)
            self.down = nn.Sequential(nn.Conv2d(c, o, 1, 2, bias=False), nn.BatchNorm2d(o))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            y = F.relu(y + self.down(x))
            return F.max_pool2d(y, 3, 2, 1), F.adaptive_avg_pool2d(y, 1).flatten(1)

    torch.manual_seed(0)
    m = Block().eval()
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-1, 1)
            mod.running_var.uniform_(0.5, 2)
    m = m.to("cuda", torch.bfloat16)
    cm = torchc.compile(m)
    with torch.no_grad():
        for x in (torch.randn(4, 16, 33, 30, device="cuda", dtype=torch.bfloat16),
                  torch.randn(2, 16, 16, 16, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)):
            for g, w in zip(cm(x), m(x)):
                torch.testing.assert_close(g.float(), w.float(), rtol=3e-2, atol=3e-2)
        ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and len(ex.extern_calls) == 3, ex


def test_gather_indices_checked_on_device_without_sync():
    """CUDA gathers (embedding, index_select, x[idx]) check their indices in the kernel:
    no host sync per call; a negative index wraps like torch.compile's kernels."""
    emb = torch.nn.Embedding(50, 16).cuda()

    def f(ids, x, idx):
        return emb(ids) * 2, torch.index_select(x, 0, idx) + 1, x[idx] - 1

    cf = torchc.compile(f)
    ids = torch.randint(0, 50, (4, 7), device="cuda")
    x = torch.randn(30, 5, device="cuda")
    idx = torch.tensor([0, 29, 3, 3, 17], device="cuda")
    with torch.no_grad():
        want = f(ids, x, idx)
        cf(ids, x, idx)  # compile outside the sync check
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            got = cf(ids, x, idx)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
        ex = torchc.explain(cf)(ids, x, idx)
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons

        neg = torch.tensor([-1, -30, 5], device="cuda")
        g2 = torchc.compile(lambda x, i: x[i] * 3)(x, neg)
        torch.testing.assert_close(g2, x[neg] * 3)


def test_gather_index_out_of_range_fails_like_a_device_assert():
    """An index out of range kills the kernel (eager: a device-side assert): an error, never a
    silently clamped answer. In a subprocess: the CUDA context does not survive it."""
    import subprocess
    import sys
    code = (
        "import torch, torchc\n"
        "x = torch.randn(30, 5, device='cuda')\n"
        "f = torchc.compile(lambda x, i: x[i] * 3)\n"
        "f(x, torch.tensor([1, 2], device='cuda'))\n"
        "y = f(x, torch.tensor([1, 30], device='cuda'))\n"
        "torch.cuda.synchronize()\n"
        "print('NO ERROR', y)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode != 0 and "NO ERROR" not in r.stdout, (r.stdout, r.stderr[-2000:])


LIB.ic_cudnn_calls.restype = ctypes.c_long
LIB.ic_cudnn_calls.argtypes = []


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("cfg", [
    # (N, C, H, W, O, k, stride, pad, dilation, groups, bias)
    (4, 16, 17, 15, 32, 3, 1, 1, 1, 1, False),
    (2, 3, 32, 32, 24, 7, 2, 3, 1, 1, False),       # stem: 3 input channels
    (3, 32, 14, 14, 64, 1, 2, 0, 1, 1, False),      # strided 1x1 downsample
    (2, 32, 12, 12, 32, 3, 1, 1, 1, 32, False),     # depthwise
    (2, 24, 14, 14, 24, 7, 1, 3, 1, 24, True),      # depthwise 7x7 (convnext): ATen
    (2, 32, 11, 13, 48, 3, 1, 2, 2, 4, True),       # grouped, dilated, bias
    (1, 8, 1, 9, 8, (1, 3), 1, (0, 1), 1, 1, True),  # 1-row image, non-square kernel
])
def test_conv_through_cudnn_backend(dtype, layout, cfg, monkeypatch):
    """16-bit convs on CUDA run straight through cuDNN's backend API (runtime/cudnn.c), in
    channels-last and NCHW; NCHW convs with a bias input and grouped 7x7 convs go through ATen.
    Eager results."""
    import torch.nn.functional as F
    monkeypatch.setenv("TORCHC_CONV_LAYOUT", layout)
    monkeypatch.setenv("TORCHC_DWCONV", "0")  # depthwise convs stay convs (tests/test_dwconv.py)
    torchc.reset()
    N, C, H, W, O, k, st, pad, dil, g, bias = cfg
    ks = k if isinstance(k, tuple) else (k, k)
    torch.manual_seed(0)
    x = torch.randn(N, C, H, W, device="cuda", dtype=dtype)
    w = (torch.randn(O, C // g, *ks, device="cuda") / (C // g * ks[0] * ks[1]) ** 0.5).to(dtype)
    b = torch.randn(O, device="cuda", dtype=dtype) if bias else None

    def f(x, w, b):
        return F.relu(F.conv2d(x, w, b, st, pad, dil, g)) * 2

    cf = torchc.compile(f)
    with torch.no_grad():
        n0 = LIB.ic_cudnn_calls()
        for xi in (x, torch.randn_like(x)):
            torch.testing.assert_close(cf(xi, w, b).float(), f(xi, w, b).float(), rtol=2e-2, atol=2e-2)
        took = LIB.ic_cudnn_calls() - n0
    if (g == 1 or ks[0] * ks[1] < 49) and (layout == "nhwc" or not bias):
        assert took == 2, f"cuDNN backend path expected ({took} calls)"
    else:
        assert took == 0


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
@pytest.mark.parametrize("cfg", [
    # (N, C, H, W, O, k, stride, pad, dilation, groups)
    (4, 16, 17, 15, 32, 3, 1, 1, 1, 1),
    (3, 32, 14, 14, 64, 1, 2, 0, 1, 1),   # strided 1x1 downsample
    (2, 32, 12, 12, 32, 3, 2, 1, 1, 32),  # depthwise, strided
    (2, 32, 11, 13, 48, 3, 1, 2, 2, 4),   # grouped, dilated
])
def test_conv_backward_through_cudnn_backend(layout, cfg, monkeypatch):
    """Training: the data and weight gradients of a 16-bit conv (IC_EXT_CONV_BWD) are written by
    cuDNN's backend API straight into the graph's buffers (runtime/cudnn.c), no ATen result
    copied in (the DtoD copies of a ResNet-50 step); eager's gradients."""
    import torch.nn.functional as F
    monkeypatch.setenv("TORCHC_CONV_LAYOUT", layout)
    monkeypatch.setenv("TORCHC_DWCONV", "0")
    torchc.reset()
    N, C, H, W, O, k, st, pad, dil, g = cfg
    torch.manual_seed(0)
    x0 = torch.randn(N, C, H, W, device="cuda", dtype=torch.bfloat16)
    w0 = (torch.randn(O, C // g, k, k, device="cuda") / (C // g * k * k) ** 0.5).to(torch.bfloat16)

    def f(x, w, r):
        return (F.relu(F.conv2d(x, w, None, st, pad, dil, g)) * r).float().sum()

    cf = torchc.compile(f)
    got = []
    for step in range(2):
        r = torch.randn(N, O, (H + 2 * pad - dil * (k - 1) - 1) // st + 1,
                        (W + 2 * pad - dil * (k - 1) - 1) // st + 1, device="cuda", dtype=torch.bfloat16)
        grads = []
        for fn in (cf, f):
            x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
            n0, c0 = LIB.ic_cudnn_calls(), torchc._C.stats()["extern_copies"]
            fn(x, w, r).backward()
            torch.cuda.synchronize()
            grads.append((x.grad.float(), w.grad.float(), LIB.ic_cudnn_calls() - n0,
                          torchc._C.stats()["extern_copies"] - c0))
        (dxc, dwc, took, copies), (dxe, dwe, _, _) = grads
        torch.testing.assert_close(dxc, dxe, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(dwc, dwe, rtol=2e-2, atol=5e-2 * dwe.abs().max().item())
        got.append((took, copies))
    # the forward and the backward (dx and dw in one node) through cuDNN, no ATen result copied
    assert got[-1][0] >= 2 and got[-1][1] == 0, f"conv backward through cuDNN expected ((cuDNN calls, copies) a step: {got})"


def test_conv_cudnn_switch_off(monkeypatch):
    import torch.nn.functional as F
    monkeypatch.setenv("TORCHC_CUDNN", "0")
    torchc.reset()
    x = torch.randn(2, 8, 10, 10, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(16, 8, 3, 3, device="cuda", dtype=torch.bfloat16) * 0.1
    f = lambda x, w: F.conv2d(x, w, padding=1)
    n0 = LIB.ic_cudnn_calls()
    with torch.no_grad():
        torch.testing.assert_close(torchc.compile(f)(x, w).float(), f(x, w).float(), rtol=2e-2, atol=2e-2)
    assert LIB.ic_cudnn_calls() == n0
