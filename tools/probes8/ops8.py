"""The elementwise long tail: special functions, inf/nan/-0.0 operands, integer edge values,
python scalars of every kind mixed in, on contiguous / transposed / flipped / expanded inputs."""
import torch

from probe2 import scenario
from probes7._util import each


def _edge(dt=torch.float32):
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, -1e30, float("inf"), float("-inf"), float("nan")]
    return torch.tensor(v, dtype=torch.float64).to(dt).reshape(3, 4)


def _lay(t):
    out = [t, t.flip(0), t.T.contiguous().T, t.flip(-1).T]
    return out


@scenario(rtol=2e-6, atol=1e-6)
def special_unary_edges(C, R):
    fns = [torch.erfinv, torch.special.erfcx, torch.special.ndtri, torch.special.log_ndtr, torch.special.i0e,
           torch.special.i1, torch.special.i1e, torch.i0, torch.special.entr, torch.special.sinc, torch.logit,
           lambda x: torch.logit(x, eps=0.1), torch.special.expit, torch.lgamma, torch.digamma,
           lambda x: torch.polygamma(1, x), lambda x: torch.polygamma(2, x), torch.special.bessel_j0,
           torch.special.xlog1py.__call__ if False else (lambda x: torch.special.xlog1py(x, x)),
           lambda x: torch.xlogy(x, x.flip(0)), lambda x: torch.special.xlogy(0.0, x), torch.expm1, torch.log1p,
           torch.frac, torch.trunc, torch.sgn, torch.signbit, torch.nan_to_num,
           lambda x: torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-3.0), torch.rsqrt, torch.reciprocal,
           torch.deg2rad, torch.rad2deg, torch.exp2, torch.log2, torch.log10, torch.asinh, torch.acosh, torch.atanh,
           torch.special.log_softmax.__call__ if False else (lambda x: torch.special.log_softmax(x, 1)),
           torch.special.round, lambda x: torch.round(x, decimals=1), lambda x: torch.round(x, decimals=-1)]
    xs = _lay(_edge()) + [_edge(torch.float64), _edge().clamp(-0.999, 0.999), _edge().clamp(0.001, 0.999)]
    each(C, R, fns, xs)


@scenario(rtol=2e-6, atol=1e-6)
def binary_edges(C, R):
    fns = [torch.hypot, torch.copysign, torch.nextafter, torch.fmod, torch.remainder, torch.atan2, torch.logaddexp,
           torch.logaddexp2, torch.float_power, torch.fmax, torch.fmin, torch.maximum, torch.minimum, torch.heaviside,
           torch.xlogy, torch.ldexp.__call__ if False else (lambda a, b: torch.ldexp(a, b.nan_to_num().clamp(-4, 4).round())),
           lambda a, b: torch.lerp(a, b, 0.25), lambda a, b: torch.lerp(a, b, b.sigmoid()),
           lambda a, b: torch.addcdiv(a, a, b, value=-0.5), lambda a, b: torch.addcmul(a, b, b, value=2),
           lambda a, b: torch.floor_divide(a, b), lambda a, b: torch.div(a, b, rounding_mode="trunc"),
           lambda a, b: torch.div(a, b, rounding_mode="floor"), lambda a, b: torch.isclose(a, b, equal_nan=True),
           lambda a, b: torch.isclose(a, b, rtol=0.5, atol=0.0), lambda a, b: torch.eq(a, b) | torch.isnan(a),
           lambda a, b: torch.pow(a, b), lambda a, b: a ** 0.5, lambda a, b: 2 ** a, lambda a, b: 0 ** b,
           lambda a, b: (-8.0) ** b, lambda a, b: torch.true_divide(a, 0), lambda a, b: torch.remainder(a, -0.0)]
    a = _edge()
    b = a.flip(0).flip(1)
    xs = [(a, b), (a, b.T.contiguous().T), (a.double(), b), (a, b[:1]), (a[:, :1], b), (a.half(), b.bfloat16())]
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def integer_edges(C, R):
    i32 = torch.tensor([[0, 1, -1, 7], [-7, 2**31 - 1, -2**31, 3], [100, -100, 5, -5]], dtype=torch.int32)
    fns = [lambda a: a.abs(), lambda a: -a, lambda a: a.sign(), lambda a: a // 3, lambda a: a % -3, lambda a: a.fmod(-3),
           lambda a: a.remainder(3), lambda a: torch.div(a, -3, rounding_mode="trunc"), lambda a: a >> 3, lambda a: a << 3,
           lambda a: a >> 40, lambda a: a.bitwise_not(), lambda a: a ^ 0x55, lambda a: a & -2, lambda a: a | 1,
           lambda a: a * 2, lambda a: a + 2**31, lambda a: a.float(), lambda a: a / 2, lambda a: a.pow(2), lambda a: a.square(),
           lambda a: torch.clamp(a, -10, 10), lambda a: torch.clamp(a, min=2.5), lambda a: a.to(torch.int8), lambda a: a.to(torch.uint8),
           lambda a: a.to(torch.int16).to(torch.int32), lambda a: a.bool(), lambda a: a.sum(), lambda a: a.sum(1, dtype=torch.int32),
           lambda a: a.prod(0), lambda a: a.cumsum(1), lambda a: a.cumprod(0), lambda a: a.max(1), lambda a: a.argmin(),
           lambda a: torch.gcd(a, torch.tensor(6, dtype=a.dtype)), lambda a: torch.lcm(a % 50, torch.tensor(4, dtype=a.dtype)),
           lambda a: a.bitwise_left_shift(2), lambda a: a.bitwise_right_shift(torch.tensor([0, 1, 31, 2], dtype=a.dtype)),
           lambda a: a.mean(dtype=torch.float64), lambda a: a.to(torch.float16), lambda a: (a * 1.5).int(), lambda a: a.abs().sqrt(),
           lambda a: a.clamp_max(torch.tensor(3, dtype=torch.int64)), lambda a: torch.where(a > 0, a, 0.5), lambda a: a.logical_xor(a - 1)]
    xs = [i32, i32.long(), i32.to(torch.int16), i32.to(torch.int8), i32.to(torch.uint8), i32.T, i32.flip(1)]
    each(C, R, fns, xs)


@scenario(exact=True)
def python_scalar_promotion(C, R):
    fns = [lambda x: x + 1, lambda x: x + 1.5, lambda x: x * True, lambda x: x + 2j, lambda x: 3 - x, lambda x: 1.5 / x,
           lambda x: x // 2.0, lambda x: x % 2.5, lambda x: x ** 2, lambda x: 2 ** x, lambda x: x ** -1,
           lambda x: x == 1.0, lambda x: x < 1j if False else x < 2.5, lambda x: torch.where(x > 1, 1.5, 2),
           lambda x: torch.where(x > 1, x, 2.5), lambda x: torch.where(x > 1, 3, x), lambda x: torch.full_like(x, 2.5),
           lambda x: x.new_full((2,), 7), lambda x: x.clamp(0.5, 2.5), lambda x: x.masked_fill(x > 1, 2.7),
           lambda x: x.add(1.5, alpha=2), lambda x: x.sub(x, alpha=3), lambda x: torch.maximum(x, torch.tensor(1.5)),
           lambda x: x * torch.tensor(2.0, dtype=torch.float64), lambda x: x + torch.tensor([1.5]),
           lambda x: x.lerp(x, 0.5) if x.is_floating_point() else x, lambda x: torch.add(x, 1, alpha=2)]
    xs = [torch.tensor([0, 1, 2, 3], dtype=t) for t in (torch.int64, torch.int32, torch.uint8, torch.bool, torch.float16,
                                                         torch.bfloat16, torch.float64, torch.complex64)]
    each(C, R, fns, xs)


@scenario(rtol=1e-6, atol=1e-7)
def nan_inf_through_selection(C, R):
    fns = [lambda x: x.max(), lambda x: x.min(1), lambda x: x.amax(0), lambda x: x.argmax(1), lambda x: x.argmin(0),
           lambda x: torch.max(x, x.flip(0)), lambda x: torch.where(x.isnan(), 0.0, x), lambda x: x.softmax(1),
           lambda x: x.log_softmax(0), lambda x: x.logsumexp(1), lambda x: x.logsumexp((0, 1)), lambda x: x.sort(1)[0],
           lambda x: x.sort(1, descending=True)[1], lambda x: x.topk(2, 1)[0], lambda x: x.topk(2, 1, largest=False)[1],
           lambda x: x.msort(), lambda x: x.clamp(-1, 1), lambda x: x.clamp(min=float("nan")), lambda x: x.cummax(1)[0],
           lambda x: x.cummin(0)[1], lambda x: x.cumsum(1), lambda x: x.relu(), lambda x: x.sigmoid(), lambda x: x.tanh(),
           lambda x: torch.nn.functional.gelu(x), lambda x: torch.nn.functional.silu(x), lambda x: torch.nn.functional.softplus(x),
           lambda x: torch.nn.functional.hardtanh(x), lambda x: torch.nn.functional.elu(x), lambda x: x.median(1),
           lambda x: x.nanmedian(), lambda x: x.nansum(1), lambda x: x.nanmean(0), lambda x: x.kthvalue(2, 1),
           lambda x: x.aminmax(), lambda x: x.isfinite().all(1), lambda x: x.isinf().sum(), lambda x: x.isposinf() ^ x.isneginf(),
           lambda x: (x == x).any(0), lambda x: x.sign(), lambda x: x.abs().argmax()]
    xs = [_edge(), _edge().T, _edge(torch.float64).flip(1), _edge().nan_to_num(nan=0.0), _edge(torch.bfloat16)]
    each(C, R, fns, xs)
