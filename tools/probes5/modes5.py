"""Inference tensors, grad modes, set_grad_enabled inside compiled code, deterministic flags."""
import torch

from probe2 import scenario


@scenario(exact=True)
def inference_tensor_inplace_outside(C, R):
    with torch.inference_mode():
        t = torch.ones(3)
    def f(x):
        x.add_(1)
        return x
    R.call(C(f), t)
    def h(x):
        return x * 2, x.is_inference()
    R.call(C(h), t)
    def k(x, w):
        return (x * w).sum()
    w = torch.ones(3, requires_grad=True)
    R.call(lambda: C(k)(t, w).backward())
    R(w.grad)


@scenario(exact=True)
def inference_mode_inside(C, R):
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return y, y.is_inference(), y.requires_grad
    R.call(C(f), torch.ones(3, requires_grad=True))
    def h(x):
        with torch.inference_mode():
            y = x * 2
        return y + x
    R.call(C(h), torch.ones(3, requires_grad=True))


@scenario(exact=True)
def set_grad_enabled_inside(C, R):
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        z = x * 3
        return y.requires_grad, z.requires_grad, torch.is_grad_enabled()
    R(C(f)(torch.ones(2, requires_grad=True)))
    R(torch.is_grad_enabled())
    def h(x):
        with torch.enable_grad():
            y = x * 2
        return y.requires_grad
    with torch.no_grad():
        R(C(h)(torch.ones(2, requires_grad=True)))


@scenario(exact=True)
def no_grad_decorator(C, R):
    @torch.no_grad()
    def inner(x):
        return x * 2
    def f(x):
        return inner(x) + x, inner(x).requires_grad
    r = C(f)(torch.ones(2, requires_grad=True))
    R(r)


@scenario(exact=True)
def requires_grad_inside(C, R):
    def f(x):
        y = x.detach().requires_grad_()
        z = (y * y).sum()
        return z, y.requires_grad, y.is_leaf
    R.call(C(f), torch.ones(2))
    def h(x):
        x.requires_grad_(True)
        return x * 2
    a = torch.ones(2)
    R.call(C(h), a)
    R(a.requires_grad)
    def k(x):
        return (x * 2).requires_grad_(False)
    R.call(C(k), torch.ones(2, requires_grad=True))


@scenario(exact=True)
def autograd_grad_inside(C, R):
    def f(x):
        y = (x ** 3).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        return g
    x = torch.tensor([1., 2.], requires_grad=True)
    r = C(f)(x)
    R(r)
    r.sum().backward()
    R(x.grad)


@scenario(exact=True)
def backward_inside(C, R):
    def f(x, w):
        loss = (x * w).sum()
        loss.backward()
        return w.grad.clone()
    w = torch.ones(3, requires_grad=True)
    R(C(f)(torch.arange(3.), w))
    R(C(f)(torch.arange(3.), w))
    R(w.grad)


@scenario(exact=True)
def retain_grad_and_hooks(C, R):
    seen = []
    def f(x):
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: seen.append(g.clone()))
        z = (y * y).sum()
        return z, y
    x = torch.ones(2, requires_grad=True)
    z, y = C(f)(x)
    z.backward()
    R((x.grad, y.grad, seen))
