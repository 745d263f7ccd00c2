"""The shared op layer (inductor_c/codegen/ops.c) against eager at the edge values: 0, -0,
NaN, +-inf, subnormals, INT_MIN / -1, the unsigned and bool dtypes, f16/bf16 rounding, and
integer division by zero (eager raises; the frontend checks divisors before each run).

Both operands are every edge value against every other (a[:, None] op b[None, :], 13 x 13
and more: vector bodies and scalar tails on the CPU). Exact ops are compared bit for bit on
the CPU (the sign of zero included, NaN only as NaN); the transcendentals within the
tolerances of conftest.assert_same. Each test asserts one graph, no break, no fallback, so a
silent fallback to eager fails it. With CUDA the same tests run on the GPU (the NVPTX target
of the op layer); there a zero sign is not compared for maximum/minimum/relu (eager's own
CUDA kernels differ there) and f64 transcendentals are not compiled (no libdevice)."""
import math

import pytest
import torch

import torchc
from conftest import assert_same, captured_whole

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def int_vals(dt):
    info = torch.iinfo(dt)
    v = [0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, info.min, info.max, info.min + 1, info.max - 1]
    return torch.tensor([x for x in v if info.min <= x <= info.max], dtype=torch.int64).to(dt)


def float_vals(dt):
    tiny = torch.finfo(dt).tiny
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 3.0, -3.0, 7.0, 1e-3, -1e-3, 100.0, -100.0,
         math.inf, -math.inf, math.nan, tiny, -tiny, tiny / 4, torch.finfo(dt).max, -torch.finfo(dt).max]
    return torch.tensor(v, dtype=torch.float64).to(dt)


def compiled(f, *args):
    def fn(*a):  # a Python frame even for builtins such as torch.maximum
        return f(*a)

    ex = torchc.explain(fn)(*args)
    assert captured_whole(ex), str(ex)
    return ex.result


def same_bits(got, want, signed_zero=True):
    """equal dtype, shape and values; floats bit for bit (NaN as NaN; -0 vs 0 when signed_zero)"""
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    got, want = got.cpu(), want.cpu()
    if not want.is_floating_point():
        bad = got != want
    else:
        gn, wn = torch.isnan(got), torch.isnan(want)
        g64, w64 = got.double(), want.double()
        bad = (gn != wn) | (~wn & (g64 != w64))
        if signed_zero:
            bad |= ~wn & (torch.signbit(got) != torch.signbit(want))
    if bad.any():
        i = bad.nonzero()[:8].tolist()
        pytest.fail(f"{int(bad.sum())} differ, e.g. at {i}: got {got[bad][:8].tolist()} want {want[bad][:8].tolist()}")


def grid(vals_a, vals_b, device):
    return vals_a.to(device)[:, None].contiguous(), vals_b.to(device)[None, :].contiguous()


# ---- integers ------------------------------------------------------------------------------
INT_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
INT_DIV = {
    "floor_divide": lambda a, b: a // b,
    "remainder": lambda a, b: a % b,
    "fmod": torch.fmod,
}
INT_UNARY = {
    "neg": lambda a: -a,
    "abs": torch.abs,
    "sign": torch.sign,
    "relu": torch.relu,
    "bitwise_not": lambda a: ~a,
    "floor": torch.floor,
    "trunc": torch.trunc,
    "to_float": lambda a: a.float(),
    "to_double": lambda a: a.double(),
    "to_half": lambda a: a.to(torch.float16),
    "to_bf16": lambda a: a.to(torch.bfloat16),
    "to_bool": lambda a: a.bool(),
    "to_i8": lambda a: a.to(torch.int8),
    "to_u8": lambda a: a.to(torch.uint8),
    "to_i64": lambda a: a.long(),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("op", sorted(INT_BINARY))
def test_int_binary(device, dt, op):
    f = INT_BINARY[op]
    a, b = grid(int_vals(dt), int_vals(dt), device)
    same_bits(compiled(f, a, b), f(a, b))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", INTS, ids=str)
@pytest.mark.parametrize("op", sorted(INT_DIV))
def test_int_divmod(device, dt, op):
    # Python's signs for // and %, C's for fmod; INT_MIN // -1 wraps to INT_MIN as in eager
    f = INT_DIV[op]
    v = int_vals(dt)
    a, b = grid(v, v[v != 0], device)
    same_bits(compiled(f, a, b), f(a, b))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("dt", [torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("op", sorted(INT_DIV))
def test_int_divmod_by_zero_raises(dt, op):
    f = INT_DIV[op]
    a, b = grid(int_vals(dt), int_vals(dt), "cpu")
    with pytest.raises(RuntimeError) as want:
        f(a, b)
    def fn(x, y):
        return f(x, y)

    c = torchc.compile(fn)
    with pytest.raises(RuntimeError) as got:
        c(a, b)
    assert str(got.value) == str(want.value)
    # and without a zero the same compiled function runs and agrees
    b1 = b[b != 0][None, :]
    same_bits(c(a, b1), f(a, b1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", INTS + [torch.bool], ids=str)
@pytest.mark.parametrize("op", sorted(INT_UNARY))
def test_int_unary(device, dt, op):
    f = INT_UNARY[op]
    if dt == torch.bool:
        if op in ("neg", "floor", "trunc", "sign", "abs", "relu"):
            pytest.skip("eager raises or torchc refuses on bool")
        x = torch.tensor([True, False, True, True, False] * 5).to(device)
    else:
        x = int_vals(dt).repeat(3).to(device)
    same_bits(compiled(f, x), f(x))


# ---- floats --------------------------------------------------------------------------------
# exact in both eager and torchc: compared bit for bit
FLOAT_EXACT = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "fmod": torch.fmod,
    "remainder": lambda a, b: a % b,
    "floor_divide": lambda a, b: a // b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b,
}
# the sign of a zero result is not compared (eager's vector and scalar loops differ there)
FLOAT_EXACT_UNSIGNED_ZERO = {
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}
FLOAT_APPROX = {
    "pow": torch.pow,
    "atan2": torch.atan2,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(FLOAT_EXACT) + sorted(FLOAT_EXACT_UNSIGNED_ZERO))
def test_float_binary_exact(device, dt, op):
    f = FLOAT_EXACT.get(op) or FLOAT_EXACT_UNSIGNED_ZERO[op]
    va = vb = float_vals(dt)
    if op in ("fmod", "remainder", "floor_divide"):
        # finfo.max by a small divisor: eager's vector loop computes a / b (inf) and gives NaN,
        # its scalar loop (length < 16) the exact value, as torchc does
        va = va[va.abs() != torch.finfo(dt).max]
    a, b = grid(va, vb, device)
    if op == "floor_divide" and dt in (torch.float16, torch.bfloat16):
        # eager rounds every step of floor division to the 16-bit type (7 // -0.0010004 in f16:
        # -6996); torchc rounds once (-7000, the correctly rounded floor): one ulp apart
        got, want = compiled(f, a, b), f(a, b)
        torch.testing.assert_close(got, want, equal_nan=True, rtol=torch.finfo(dt).eps, atol=0)
        return
    same_bits(compiled(f, a, b), f(a, b), signed_zero=op in FLOAT_EXACT)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(FLOAT_APPROX))
def test_float_binary_approx(device, dt, op):
    if device == "cuda" and dt == torch.float64:
        pytest.skip("no f64 transcendentals on the GPU (no libdevice)")
    f = FLOAT_APPROX[op]
    a, b = grid(float_vals(dt), float_vals(dt), device)
    assert_same(compiled(f, a, b), f(a, b))


FLOAT_UNARY_EXACT = {
    "neg": lambda a: -a,
    "abs": torch.abs,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "sign": torch.sign,
    "reciprocal": torch.reciprocal,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
    "isfinite": torch.isfinite,
    "to_bool": lambda a: a.bool(),
    "to_float": lambda a: a.float(),
    "to_half": lambda a: a.to(torch.float16),
    "to_bf16": lambda a: a.to(torch.bfloat16),
    "to_double": lambda a: a.double(),
}
FLOAT_UNARY_APPROX = {
    "sqrt": torch.sqrt,  # eager's f64 vector sqrt is not correctly rounded (sqrt(0.5) 1 ulp low)
    "exp": torch.exp,
    "log": torch.log,
    "rsqrt": torch.rsqrt,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "silu": torch.nn.functional.silu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda a: torch.nn.functional.gelu(a, approximate="tanh"),
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "atan": torch.atan,
    "asin": torch.asin,
    "acos": torch.acos,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "erf": torch.erf,
    "log1p": torch.log1p,
    "expm1": torch.expm1,
    "log2": torch.log2,
    "exp2": torch.exp2,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY_EXACT) + ["relu"])
def test_float_unary_exact(device, dt, op):
    f = FLOAT_UNARY_EXACT.get(op, torch.relu)
    x = float_vals(dt).repeat(3).to(device)
    same_bits(compiled(f, x), f(x), signed_zero=op != "relu")


# eager's own f32 kernels give these values differently at the edges, per CPU and vector width
# (gelu(+inf): NaN with AVX-512, +inf with AVX2; tests/test_pointwise.py): compared away from them
APPROX_ONLY_FINITE = {"gelu", "gelu_tanh", "tan", "sin", "cos"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize("op", sorted(FLOAT_UNARY_APPROX))
def test_float_unary_approx(device, dt, op):
    if device == "cuda" and dt == torch.float64:
        pytest.skip("no f64 transcendentals on the GPU (no libdevice)")
    f = FLOAT_UNARY_APPROX[op]
    x = float_vals(dt)
    if op in APPROX_ONLY_FINITE:
        x = x[torch.isfinite(x) & (x.abs() < 1e4)]
    x = x.repeat(3).to(device)
    assert_same(compiled(f, x), f(x))


# ---- reductions ----------------------------------------------------------------------------
RED = {
    "sum": lambda a: a.sum(-1),
    "prod": lambda a: a.prod(-1),
    "amax": lambda a: a.amax(-1),
    "amin": lambda a: a.amin(-1),
    "argmax": lambda a: a.argmax(-1),
    "argmin": lambda a: a.argmin(-1),
}


def _rows(v, device):
    # rows that put the edge values at every position (first extreme wins for arg*)
    n = len(v)
    idx = (torch.arange(n)[:, None] + torch.arange(n)[None, :]) % n
    return v[idx].to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dt", INTS + [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("op", sorted(RED))
def test_reduction_edges(device, dt, op):
    f = RED[op]
    if dt.is_floating_point:
        v = float_vals(dt)
        if op in ("sum", "prod"):
            v = v[torch.isfinite(v) & (v.abs() < 1e6)]  # the order of a long sum is not fixed
    else:
        v = int_vals(dt)
    x = _rows(v, device)
    if op == "sum" and dt.is_floating_point:  # the order of additions differs
        assert_same(compiled(f, x), f(x))
        return
    same_bits(compiled(f, x), f(x), signed_zero=False)
    if dt.is_floating_point and op not in ("sum", "prod"):
        # NaN wins amax/amin and is the extreme of argmax/argmin; rows without NaN too
        y = _rows(v[~torch.isnan(v)], device)
        same_bits(compiled(f, y), f(y), signed_zero=False)
