"""Complex dtypes, vmap, TorchFunctionMode combinations."""
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from probe2 import scenario


def _c(*shape, dt=torch.complex64):
    return torch.randn(*shape, dtype=dt)


@scenario(rtol=1e-5)
def complex_arith_and_abs(C, R):
    g = C(lambda a, b: (a * b, a / b, a.abs(), a.angle(), a.conj(), a.real, a.imag, a - b.conj()))
    R(g(_c(4), _c(4)))


@scenario(rtol=1e-5)
def complex_mixed_real(C, R):
    g = C(lambda a, r: (a + r, a * r, r / a, a * 2.5, a + 1j))
    R(g(_c(3), torch.randn(3)))
    R(g(_c(3, dt=torch.complex128), torch.randn(3)))


@scenario(rtol=1e-5)
def complex_matmul_einsum(C, R):
    g = C(lambda a, b: (a @ b, torch.einsum("ij,jk->ik", a, b), a.mH))
    R(g(_c(3, 4), _c(4, 2)))


@scenario(rtol=1e-5)
def complex_view_as_real_roundtrip(C, R):
    def f(x):
        r = torch.view_as_real(x)
        y = torch.view_as_complex(r * 2)
        return r, y, torch.complex(r[..., 0], r[..., 1])
    R(C(f)(_c(2, 3)))


@scenario(rtol=1e-5)
def complex_exp_log_sqrt(C, R):
    g = C(lambda a: (a.exp(), a.log(), a.sqrt(), a.sin(), a.tanh(), a.reciprocal(), a.pow(2), a.sgn()))
    R(g(_c(5)))


@scenario(rtol=1e-5)
def complex_reductions(C, R):
    g = C(lambda a: (a.sum(), a.mean(0), a.prod(), a.abs().max(), torch.linalg.vector_norm(a), a.var()))
    R(g(_c(3, 2)))


@scenario
def complex_comparison_raises(C, R):
    g = C(lambda a, b: a < b)
    R.call(g, _c(2), _c(2))
    R.call(C(lambda a: a.max()), _c(3))
    R.call(C(lambda a: a.clamp(0, 1)), _c(3))


@scenario(rtol=1e-5)
def complex_eq_and_isclose(C, R):
    g = C(lambda a, b: (a == b, a != b, torch.isclose(a, b), a.isnan(), a.isfinite()))
    a = _c(3)
    R(g(a, a.clone()))
    R(g(a, a + 1))


@scenario(rtol=1e-4, atol=1e-4)
def fft_roundtrip(C, R):
    g = C(lambda x: (torch.fft.fft(x), torch.fft.ifft(torch.fft.fft(x)).real, torch.fft.rfft(x).abs()))
    R(g(torch.randn(8)))


@scenario(rtol=1e-5)
def complex_training_grad(C, R):
    f = C(lambda z: (z * z.conj()).real.sum() + (z.abs() ** 2).sum())
    z = _c(3).requires_grad_()
    f(z).backward()
    R(z)


@scenario(rtol=1e-5)
def complex_polar_and_cast(C, R):
    g = C(lambda m, p: (torch.polar(m, p), torch.polar(m, p).to(torch.complex128), m.to(torch.complex64)))
    R(g(torch.rand(3), torch.randn(3)))


@scenario
def complex_to_real_cast_warns_value(C, R):
    import warnings

    def f(z):
        return z.real.float() + z.float() if False else z.real * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R(C(f)(_c(3)))


@scenario(rtol=1e-5)
def complex_inplace_ops(C, R):
    def f(z, w):
        z.mul_(w)
        z.add_(1j)
        return z
    g = C(f)
    z = _c(3)
    R(g(z, _c(3)))
    R(z)


@scenario(rtol=1e-5)
def complex_chalf_and_cdouble(C, R):
    g = C(lambda z: (z * 2 + 1, z.abs()))
    R(g(_c(3, dt=torch.complex128)))


# ---- vmap
@scenario(rtol=1e-5)
def vmap_of_compiled_fn(C, R):
    g = C(lambda x, w: (x * w).sum())
    R(torch.vmap(g, in_dims=(0, None))(torch.randn(4, 3), torch.randn(3)))


@scenario(rtol=1e-5)
def vmap_inside_with_in_dims(C, R):
    def f(x, y):
        return torch.vmap(lambda a, b: a @ b, in_dims=(0, 1))(x, y)
    R(C(f)(torch.randn(3, 2, 4), torch.randn(4, 3, 5)))


@scenario(rtol=1e-5)
def vmap_out_dims_and_chunks(C, R):
    def f(x):
        return torch.vmap(lambda a: (a.sin(), a.sum()), out_dims=(1, 0))(x)
    R(C(f)(torch.randn(4, 3)))


@scenario(rtol=1e-5)
def vmap_nested(C, R):
    def f(x):
        return torch.vmap(torch.vmap(lambda a: a * a.sum()))(x)
    R(C(f)(torch.randn(2, 3, 4)))


@scenario(rtol=1e-5)
def vmap_grad_per_sample(C, R):
    from torch.func import grad, vmap

    def loss(w, x):
        return (x @ w).tanh().sum()

    def f(w, xs):
        return vmap(grad(loss), in_dims=(None, 0))(w, xs)
    R(C(f)(torch.randn(3), torch.randn(5, 3)))


@scenario
def vmap_data_dependent_raises(C, R):
    def f(x):
        return torch.vmap(lambda a: a.item())(x)
    R.call(C(f), torch.randn(3))


@scenario(rtol=1e-5)
def jacrev_small(C, R):
    from torch.func import jacrev
    R(C(lambda x: jacrev(lambda a: a.sin() * a.sum())(x))(torch.randn(3)))


# ---- TorchFunctionMode
class _Count(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


class _AddToMul(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.add or func is torch.Tensor.add or func is torch.Tensor.__add__:
            return torch.mul(*args)
        return func(*args, **(kwargs or {}))


@scenario
def mode_around_compiled(C, R):
    g = C(lambda x: x + x * 2)
    with _AddToMul():
        R(g(torch.full((2,), 3.0)))
    R(g(torch.full((2,), 3.0)))


@scenario
def mode_inside_compiled(C, R):
    def f(x):
        with _AddToMul():
            y = x + x
        return y + x
    R(C(f)(torch.full((2,), 3.0)))


@scenario
def mode_counting_side_effect(C, R):
    m = _Count()

    def f(x):
        with m:
            return x.sin() + x.cos()
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(m.n > 0)


@scenario(rtol=1e-5)
def vmap_with_complex(C, R):
    R(C(lambda z: torch.vmap(lambda a: (a * a.conj()).real.sum())(z))(_c(3, 2)))


@scenario(rtol=1e-5)
def complex_linear_layer(C, R):
    w = _c(4, 3)
    g = C(lambda x: F.linear(x, w))
    R(g(_c(2, 3)))
