"""Dtypes: integer division/remainder/shifts on mixed dtypes, uint8/int8/int16/bool arithmetic,
Python scalars and 0-dim tensors in promotion, complex64 ops, half/bf16 reductions."""
import torch

from probe2 import scenario
from probes7._util import each

nan, inf = float("nan"), float("inf")


@scenario(exact=True)
def mixed_int_div_rem(C, R):
    fns = [lambda a, b: a // b, lambda a, b: a % b, lambda a, b: torch.fmod(a, b), lambda a, b: torch.remainder(a, b),
           lambda a, b: a / b, lambda a, b: torch.div(a, b, rounding_mode="trunc"), lambda a, b: (a // b).dtype]
    xs = [(torch.tensor([-7, 7, -128, 127], dtype=torch.int8), torch.tensor([2, -3, -1, 5], dtype=torch.uint8)),
          (torch.tensor([-7, 7, -1, 0], dtype=torch.int16), torch.tensor(3)),
          (torch.tensor([-7, 7, -1, 0], dtype=torch.int16), torch.tensor(-3.5)),
          (torch.tensor([-7, 7, -1, 0], dtype=torch.uint8), torch.tensor([2, 2, 2, 2], dtype=torch.int8)),
          (torch.tensor([True, False, True]), torch.tensor([True, True, True])),
          (torch.tensor([-7.5, 7.5, -0.0, 0.0]), torch.tensor([2, -2, 3, -3], dtype=torch.int32)),
          (torch.tensor([-7.5, 7.5, -0.0, 0.0], dtype=torch.float16), torch.tensor([inf, -inf, -inf, inf])),
          (torch.tensor([-7.5, 7.5, nan, inf], dtype=torch.bfloat16), torch.tensor(2.0, dtype=torch.float64)),
          (torch.tensor(-7), torch.tensor([2, -2], dtype=torch.int8)),
          (torch.tensor([[5], [-5]], dtype=torch.int64), torch.tensor([3, -3], dtype=torch.int32))]
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def scalar_div_rem_shift(C, R):
    fns = [lambda a: a // -3, lambda a: a % -3, lambda a: -3 % a, lambda a: 7 // a, lambda a: a // 2.5, lambda a: a % -2.5,
           lambda a: torch.fmod(a, -3), lambda a: torch.remainder(-7, a), lambda a: a >> 1, lambda a: a << 2, lambda a: 1 << a,
           lambda a: 256 >> a, lambda a: a ** 2, lambda a: 2 ** a, lambda a: a ** -1, lambda a: (-2) ** a, lambda a: a.pow(0),
           lambda a: a & 0xF0, lambda a: a ^ -1, lambda a: a | 1, lambda a: a * 2 ** 40, lambda a: a + True, lambda a: a - 300]
    xs = [torch.tensor([-7, 7, 0, 1], dtype=torch.int8), torch.tensor([250, 7, 0, 1], dtype=torch.uint8),
          torch.tensor([-7, 7, 3, 1], dtype=torch.int16), torch.tensor([-7, 7, 3, 1], dtype=torch.int32), torch.tensor(5),
          torch.tensor([True, False])]
    each(C, R, fns, xs)


@scenario(exact=True)
def small_int_arith(C, R):
    fns = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: torch.add(a, b, alpha=3),
           lambda a, b: torch.sub(a, b, alpha=2), lambda a, b: a.mul(b).sum(), lambda a, b: (a * b).sum(dtype=torch.int8),
           lambda a, b: torch.maximum(a, b), lambda a, b: torch.minimum(a, b), lambda a, b: a.abs() + b.abs(),
           lambda a, b: (a - b).sign(), lambda a, b: a.neg(), lambda a, b: torch.bitwise_and(a, b), lambda a, b: a.float() / b,
           lambda a, b: torch.addcmul(a, a, b), lambda a, b: torch.lerp(a.float(), b.float(), 0.3), lambda a, b: a.square(),
           lambda a, b: torch.sub(a, b, alpha=True) if a.dtype == torch.bool else a - b, lambda a, b: a.clamp(b)]
    xs = [(torch.tensor([100, -100, 127, -128], dtype=torch.int8), torch.tensor([100, 100, 1, -1], dtype=torch.int8)),
          (torch.tensor([200, 10, 255, 0], dtype=torch.uint8), torch.tensor([100, 20, 1, 1], dtype=torch.uint8)),
          (torch.tensor([30000, -30000, 32767, -32768], dtype=torch.int16), torch.tensor([30000, 30000, 1, -1], dtype=torch.int16)),
          (torch.tensor([True, False, True, True]), torch.tensor([True, True, False, True])),
          (torch.tensor([200, 10, 255, 0], dtype=torch.uint8), torch.tensor([100, -20, 1, 1], dtype=torch.int8))]
    each(C, R, fns, xs, star=True)


@scenario(exact=True)
def zero_dim_promotion(C, R):
    fns = [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: torch.where(a > 0, a, b), lambda a, b: torch.maximum(a, b),
           lambda a, b: a / b, lambda a, b: a // b, lambda a, b: torch.cat([a.flatten(), b.flatten()]),
           lambda a, b: torch.stack([a, b.expand_as(a)]) if a.dim() else a, lambda a, b: a.lerp(b.to(a.dtype), 0.5) if a.is_floating_point() else a,
           lambda a, b: torch.clamp(a, min=b), lambda a, b: a.add_(b) if a.dtype == torch.promote_types(a.dtype, b.dtype) else a.add(b),
           lambda a, b: a.copy_(b), lambda a, b: a == b, lambda a, b: torch.pow(a, b), lambda a, b: torch.atan2(a, b),
           lambda a, b: torch.fmod(a, b), lambda a, b: torch.hypot(a.float(), b), lambda a, b: torch.copysign(a, b)]
    xs = [(torch.tensor([1, 2, 3], dtype=torch.int8), torch.tensor(300)), (torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor(-1.5)),
          (torch.tensor([1, 2, 3], dtype=torch.float16), torch.tensor(70000.0, dtype=torch.float64)),
          (torch.tensor([1, 2, 3], dtype=torch.bfloat16), torch.tensor(2, dtype=torch.int64)),
          (torch.tensor([True, False]), torch.tensor(2.5, dtype=torch.float16)), (torch.tensor(3, dtype=torch.int8), torch.tensor([1.5, 2.0])),
          (torch.tensor([1.0, 2.0]), torch.tensor(1 + 2j)), (torch.tensor([1, 2], dtype=torch.int32), torch.tensor(True))]
    each(C, R, fns, xs, star=True)


@scenario(rtol=1e-5, atol=1e-6)
def complex64_ops(C, R):
    fns = [lambda z: z.exp(), lambda z: z.log(), lambda z: z.sqrt(), lambda z: z.reciprocal(), lambda z: z.sgn(), lambda z: z.angle(),
           lambda z: z.abs(), lambda z: z.tanh(), lambda z: z.sigmoid(), lambda z: z.sin(), lambda z: z.cos(), lambda z: z.conj() * z,
           lambda z: z.pow(2), lambda z: z.pow(0.5), lambda z: z ** z, lambda z: z.sum(), lambda z: z.mean(0), lambda z: z.prod(),
           lambda z: z.cumsum(0), lambda z: z.cumprod(0), lambda z: z / (z + 1), lambda z: z.real * 2 + z.imag, lambda z: z.square(),
           lambda z: torch.view_as_real(z).sum(-1), lambda z: z.abs().dtype, lambda z: z.isnan(), lambda z: z.isinf(),
           lambda z: z.isfinite(), lambda z: z.neg(), lambda z: z.exp2() if hasattr(z, "exp2") else z, lambda z: z.log1p(),
           lambda z: z.expm1(), lambda z: z.rsqrt(), lambda z: z.asin(), lambda z: z.atanh(), lambda z: z == z.conj(),
           lambda z: torch.linalg.vector_norm(z), lambda z: z.var(), lambda z: z.std(), lambda z: z @ z.conj(), lambda z: z.to(torch.complex128),
           lambda z: z.real.to(torch.complex64) + 1j]
    xs = [torch.tensor([1 + 2j, -3 + 0.5j, 0j, -1 + 0j, 0.25 - 4j], dtype=torch.complex64),
          torch.tensor([complex(inf, 0), complex(0, inf), complex(nan, 1), complex(-inf, -inf)], dtype=torch.complex64),
          torch.tensor([1 + 2j, -3 + 0.5j, 0j, -1 + 0j], dtype=torch.complex64)[::2]]
    each(C, R, fns, xs)


@scenario
def half_reductions(C, R):
    fns = [lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.mean(), lambda x: x.mean(-1), lambda x: x.var(0), lambda x: x.std(),
           lambda x: x.norm(), lambda x: x.norm(dim=1), lambda x: x.logsumexp(1), lambda x: x.softmax(0), lambda x: x.log_softmax(1),
           lambda x: x.prod(1), lambda x: x.cumsum(1), lambda x: x.sum(dtype=torch.float32), lambda x: x.mean(dtype=torch.float32),
           lambda x: x.nansum(), lambda x: x.nanmean(0), lambda x: torch.linalg.vector_norm(x, 1), lambda x: torch.dist(x, x.flip(0)),
           lambda x: x.float().sum().to(x.dtype), lambda x: (x * x).sum(1), lambda x: x.matmul(x.T), lambda x: torch.einsum("ij,ij->i", x, x),
           lambda x: torch.trace(x[:, :x.shape[0]]), lambda x: torch.var_mean(x, 1), lambda x: x.renorm(2, 0, 1.0)]
    big = torch.full((2, 300), 300.0)
    big[1] = torch.linspace(-1, 1, 300) * 60000
    xs = []
    for dt in (torch.float16, torch.bfloat16):
        xs += [big.to(dt), (torch.arange(600.0).reshape(2, 300).sin() * 0.01 + 1).to(dt), torch.full((2, 4097), 1.0, dtype=dt)]
    each(C, R, fns, xs)


@scenario(exact=True)
def where_clamp_mixed(C, R):
    fns = [lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: torch.clamp(x, min=lo), lambda x, lo, hi: torch.clamp(x, max=hi),
           lambda x, lo, hi: x.clip(lo, hi), lambda x, lo, hi: torch.where(x > lo, x, hi), lambda x, lo, hi: torch.where(x.isnan(), lo, x),
           lambda x, lo, hi: x.clamp_min(lo), lambda x, lo, hi: x.clamp_max(hi), lambda x, lo, hi: torch.where(x < hi, lo, 7),
           lambda x, lo, hi: x.clone().clamp_(lo, hi)]
    xs = [(torch.tensor([nan, -inf, inf, 0.5, -0.0]), torch.tensor(0.0), torch.tensor([1.0, nan, 1.0, -1.0, 0.0])),
          (torch.tensor([1, 5, -3], dtype=torch.int8), torch.tensor(0.5), torch.tensor(2, dtype=torch.int64)),
          (torch.tensor([1, 5, -3], dtype=torch.int32), torch.tensor([2, 0, 0], dtype=torch.int8), torch.tensor([1, 1, 1], dtype=torch.uint8)),
          (torch.tensor([1.0, 5.0, -3.0], dtype=torch.float16), torch.tensor([2.0, 0.0, nan]), torch.tensor(1.0, dtype=torch.float64)),
          (torch.tensor([1.0, 5.0, -3.0], dtype=torch.bfloat16), torch.tensor(3.0), torch.tensor(-3.0)),   # min > max
          (torch.tensor([True, False]), torch.tensor(False), torch.tensor(True)),
          (torch.tensor([1, 200], dtype=torch.uint8), torch.tensor(-5), torch.tensor(300))]
    each(C, R, fns, xs, star=True)
