"""Reinterpreting views (view(dtype), view_as_real/complex), tensor metadata queries inside
compiled code, factories with unusual arguments, index ops with alpha / reduce / accumulate,
torch.func transforms around compiled functions."""
import torch
import torch.nn.functional as F

from probe2 import scenario
from probes7._util import each


def _x(shape=(3, 4), dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


@scenario(exact=True)
def dtype_views(C, R):
    fns = [lambda x: x.view(torch.int32), lambda x: x.view(torch.int32) & 0xFF, lambda x: x.view(torch.uint8),
           lambda x: x.view(torch.int16), lambda x: x.view(torch.float64) if x.shape[-1] % 2 == 0 else x,
           lambda x: (x * 2).view(torch.int32) >> 23 if False else (x * 2).view(torch.int32) // 8388608,
           lambda x: x.view(torch.bfloat16).float(), lambda x: x.view(torch.int32).view(torch.float32) + 1,
           lambda x: x.t().view(torch.int32), lambda x: x.view(torch.complex64), lambda x: torch.view_as_complex(x.reshape(-1, 2)),
           lambda x: torch.view_as_real(torch.view_as_complex(x.reshape(-1, 2)) * 1j), lambda x: x.view(torch.bool) if False else x.view(torch.int8).sum(),
           lambda x: x.view(torch.int32).clone().view(torch.float32), lambda x: x[:, 1:].view(torch.int32)]
    each(C, R, fns, [_x(), _x((2, 6)).T.contiguous(), _x((3, 4), torch.float16) if False else _x((4, 2))])


@scenario(exact=True)
def metadata_queries(C, R):
    fns = [lambda x: (x * 2, x.ndim, x.dim(), x.numel(), x.nelement(), x.element_size(), x.itemsize, x.nbytes),
           lambda x: (x + 1, x.is_contiguous(), x.is_contiguous(memory_format=torch.channels_last), x.storage_offset()),
           lambda x: (x.mT.sum(-1), x.mT.stride(), x.T.shape if x.dim() == 2 else None),
           lambda x: (x.real * 2, x.is_complex(), x.is_floating_point(), x.is_signed(), x.dtype.is_floating_point),
           lambda x: (x.imag if x.is_complex() else x.sgn(), ), lambda x: (x.is_leaf, x.requires_grad, x.grad_fn is None, x.is_inference()),
           lambda x: (x.new_empty(2).shape, x.new_ones(3).dtype, x.new_zeros((1, 2), dtype=torch.int8)),
           lambda x: (x.size(-1), x.size()[1:], x.shape.numel(), len(x), x.stride(0), x.is_cuda, x.device.type, str(x.dtype)),
           lambda x: (x.unsqueeze(-1).expand(*x.shape, 2).stride(), x.flip(0).stride(), x[::2].stride(), x[..., ::-1].shape if False else x.narrow(-1, 1, 2).storage_offset())]
    xs = [_x(), _x((2, 3, 4, 5)).contiguous(memory_format=torch.channels_last), _x((4, 3)).T, _x()[1:, ::2],
          _x((3, 4)).to(torch.complex64), _x((3, 4)).requires_grad_()]
    each(C, R, fns, xs)


@scenario(exact=True)
def factories_unusual(C, R):
    fns = [lambda x: torch.arange(0.0, 1.0, 0.1), lambda x: torch.arange(1, 0, -0.3), lambda x: torch.arange(-5, 5, 3, dtype=torch.int8),
           lambda x: torch.arange(x.shape[0] * 0.5, 7.25, 0.75), lambda x: torch.linspace(0, 1, 1), lambda x: torch.linspace(1, 0, 0),
           lambda x: torch.linspace(-1, 1, 5, dtype=torch.int64), lambda x: torch.logspace(0, 2, 3, base=2), lambda x: torch.eye(3, 5, dtype=torch.bool),
           lambda x: torch.eye(0), lambda x: torch.full((2, 2), True), lambda x: torch.full((2,), 3), lambda x: torch.full((2,), 2.5, dtype=torch.int32),
           lambda x: torch.tril_indices(3, 4, 1), lambda x: torch.triu_indices(4, 3, -1), lambda x: torch.empty_strided((2, 3), (1, 2)).fill_(1).stride(),
           lambda x: torch.zeros_like(x, memory_format=torch.channels_last).stride() if x.dim() == 4 else torch.zeros_like(x.T).stride(),
           lambda x: torch.full_like(x, 7, dtype=torch.int16), lambda x: torch.ones_like(x, dtype=torch.bool).sum(), lambda x: torch.scalar_tensor(3, dtype=torch.int64),
           lambda x: torch.tensor([[1, 2.5], [True, 0]]), lambda x: torch.tensor([True, 2]), lambda x: torch.as_tensor([1, 2], dtype=torch.float16),
           lambda x: torch.tensor(x.shape), lambda x: torch.tensor([x.shape[0], 2.5]), lambda x: torch.randn(0, 3).sum(0),
           lambda x: torch.empty(2, 0).mean(), lambda x: torch.polar(torch.ones(2), torch.tensor([0.0, 3.14159])), lambda x: torch.complex(x, x).abs(),
           lambda x: torch.heaviside(x, torch.tensor(0.5)), lambda x: torch.vander(torch.tensor([1, 2, 3]), 4), lambda x: torch.vander(x[0], increasing=True)]
    each(C, R, fns, [_x(), _x((2, 3, 2, 2))])


@scenario(rtol=1e-6, atol=1e-6)
def index_ops_with_modes(C, R):
    i = torch.tensor([2, 0, 2])
    fns = [lambda x: x.index_add(0, i, torch.ones(3, x.shape[1]), alpha=-2), lambda x: x.index_copy(0, i[:2], x[:2] * 10),
           lambda x: x.index_fill(1, torch.tensor([-1, 0]), float("nan")), lambda x: x.scatter(1, torch.tensor([[0, 0], [1, 1], [3, 2]]), 5.0, reduce="multiply"),
           lambda x: x.scatter(1, torch.tensor([[0, 0], [1, 1], [3, 2]]), x[:, :2], reduce="add"),
           lambda x: x.scatter_add(0, torch.tensor([[2, 2, 2, 2]]), x[:1]), lambda x: x.put(torch.tensor([0, 0, -1]), torch.tensor([1.0, 2.0, 3.0]), accumulate=True),
           lambda x: x.put(torch.tensor([5, 1]), torch.tensor([9.0, 8.0])), lambda x: x.masked_scatter(x > 0, torch.arange(100.0)),
           lambda x: torch.take_along_dim(x, torch.tensor([[0], [3], [1]]), 1), lambda x: torch.take_along_dim(x, torch.tensor([[0, 2]]), 1),
           lambda x: torch.take_along_dim(x, x.argmax()), lambda x: x.gather(0, torch.tensor([[2, 1], [0, 0]])),
           lambda x: x.index_reduce(0, i, x * 2, "prod", include_self=False), lambda x: x.index_reduce(1, torch.tensor([0, 0, 1, 1]), x, "mean"),
           lambda x: x.scatter_reduce(0, torch.tensor([[1, 1, 1, 1], [1, 0, 0, 0]]), x[:2], "amin", include_self=False),
           lambda x: x.index_put((torch.tensor([[0], [2]]), torch.tensor([1, 3])), torch.tensor(-1.0)),
           lambda x: x.index_put((torch.tensor([True, False, True]),), torch.tensor([7.0])),
           lambda x: x.index_put((torch.tensor([0, 0, 0]), torch.tensor([1, 1, 1])), torch.tensor([1.0, 2.0, 4.0]), accumulate=True),
           lambda x: x.scatter(1, torch.tensor([[4]]), 1.0), lambda x: x.index_select(0, torch.tensor([3])),
           lambda x: x.gather(1, torch.tensor([[-1]]))]
    each(C, R, fns, [_x(), _x((4, 3)).T, _x().double(), _x().flip(0)])


@scenario(rtol=1e-5, atol=1e-5)
def func_transforms_around_compiled(C, R):
    def f(x):
        return (x.sin() * x).sum()
    g = C(f)
    x = _x((4,))
    R.call(lambda: torch.func.grad(g)(x))
    R.call(lambda: torch.func.hessian(g)(x))
    R.call(lambda: torch.func.jvp(g, (x,), (torch.ones(4),)))
    R.call(lambda: torch.func.vjp(g, x)[1](torch.tensor(1.0)))
    R.call(lambda: torch.func.jacfwd(lambda t: g(t) * t)(x))
    lin = torch.nn.Linear(4, 2)
    params = {k: v.detach() * 2 for k, v in lin.named_parameters()}
    R.call(C(lambda x: torch.func.functional_call(lin, params, (x,))), x)
    R.call(lambda: torch.func.grad(lambda p, x: torch.func.functional_call(lin, p, (x,)).sum())(params, x))
    h = C(lambda t: torch.func.grad(lambda u: (u ** 3).sum())(t))
    R.call(h, x)
    R.call(C(lambda t: torch.autograd.functional.jacobian(lambda u: u.exp() * 2, t)), x)


@scenario(exact=True)
def complex_view_strides(C, R):
    fns = [lambda x: x.real.stride(), lambda x: x[:, ::2].real.stride(), lambda x: x[..., 1:].imag.stride(), lambda x: x.mT.stride(),
           lambda x: x.transpose(0, 2)[::2].stride(), lambda x: x.unflatten(-1, (2, 2)).stride(), lambda x: x[:, 1:, ::3].stride(),
           lambda x: x.movedim(0, -1)[1].stride(), lambda x: x[1, :, 2].stride(), lambda x: x.narrow(-1, 1, 2).narrow(0, 1, 1).stride(),
           lambda x: x.split(1, 0)[1][0, ::2].stride(), lambda x: torch.view_as_real(x[:, ::2]).stride(), lambda x: x.conj().stride(),
           lambda x: x.expand(3, 2, 3, 4)[:, 1].stride(), lambda x: x[:, ::2].reshape(2, -1).stride(), lambda x: x[:, ::2].view(torch.float32).stride(),
           lambda x: x[::2].view(-1), lambda x: x.diagonal(0, 1, 2).stride(), lambda x: x.select(-1, 2).is_contiguous(),
           lambda x: x.unfold(-1, 2, 2).stride(), lambda x: x[:, ::2].view(torch.float32).view(-1)]
    each(C, R, fns, [torch.arange(24.0).reshape(2, 3, 4).to(torch.complex64), torch.arange(24.0).reshape(4, 3, 2).to(torch.complex128).transpose(0, 2)])
