"""Dynamic shapes and guards: size changes (0, 1, odd, large), strides/contiguity, dtype,
requires_grad, tensor subclasses; a wrong cache reuse is a wrong answer."""
import torch

from probe2 import scenario


@scenario(exact=True)
def sizes_sweep(C, R):
    def f(x):
        return x.sum(0), x * x.shape[0], x.mean(-1) if x.shape[-1] else x.sum(-1), x.reshape(-1, 2) if x.numel() % 2 == 0 else x.flatten()
    g = C(f)
    for n in (4, 0, 1, 7, 1, 0, 1000, 3, 2):
        R.call(g, torch.arange(float(n * 2)).reshape(n, 2) if n else torch.empty(0, 2))


@scenario(exact=True)
def size_one_broadcast(C, R):
    def f(x, y):
        return x + y, (x * y).sum(1)
    g = C(f)
    R.call(g, torch.ones(3, 4), torch.arange(4.))
    R.call(g, torch.ones(3, 1), torch.arange(4.))
    R.call(g, torch.ones(3, 4), torch.arange(1.))
    R.call(g, torch.ones(1, 4), torch.arange(4.).reshape(4, 1))
    R.call(g, torch.ones(3, 4), torch.arange(3.))
    R.call(g, torch.ones(3, 5), torch.arange(5.))


@scenario(exact=True)
def stride_guards(C, R):
    def f(x):
        return x.view(-1) * 2
    g = C(f)
    a = torch.arange(6.).reshape(2, 3)
    R.call(g, a)
    R.call(g, a.t())
    R.call(g, a[:, ::2])
    R.call(g, torch.arange(12.).reshape(3, 4)[:, :3])
    R.call(g, a)
    def h(x):
        return x.is_contiguous(), x.stride(), x + 1
    k = C(h)
    R(k(a))
    R(k(a.t()))
    R(k(torch.ones(3, 1)))
    R(k(torch.ones(3, 1).t()))
    R(k(torch.ones(2, 3, 4, 5).to(memory_format=torch.channels_last)))


@scenario(exact=True)
def dtype_device_rg(C, R):
    def f(x):
        return x * 2 + 1, x.dtype, x.requires_grad
    g = C(f)
    for t in (torch.ones(3), torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.int32),
              torch.ones(3, requires_grad=True), torch.ones(3), torch.ones(3, dtype=torch.bool),
              torch.ones(3, dtype=torch.complex64)):
        R(g(t))


@scenario(exact=True)
def grad_mode_guard(C, R):
    def f(x):
        y = x * 2
        return y, y.requires_grad, y.grad_fn is None
    g = C(f)
    x = torch.ones(3, requires_grad=True)
    R(g(x))
    with torch.no_grad():
        R(g(x))
    with torch.inference_mode():
        R(g(torch.ones(3)))
    R(g(x))


class MyT(torch.Tensor):
    pass


class MyT2(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        r = super().__torch_function__(func, types, args, kwargs)
        return r


@scenario(exact=True)
def subclasses(C, R):
    def f(x):
        return x * 2, type(x).__name__, isinstance(x, torch.nn.Parameter)
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.nn.Parameter(torch.ones(2))))
    R(g(torch.ones(2).as_subclass(MyT)))
    R(g(torch.ones(2).as_subclass(MyT2)))
    R(g(torch.ones(2)))
    p = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    R(g(p))


@scenario(exact=True)
def subclass_result_type(C, R):
    def f(x):
        y = x + 1
        return type(y).__name__, y
    g = C(f)
    R(g(torch.ones(2).as_subclass(MyT2)))
    R(g(torch.ones(2)))


@scenario(exact=True)
def python_scalar_specialise(C, R):
    def f(x, n):
        return x * n, x[:n] if isinstance(n, int) else x, n * 2
    g = C(f)
    for n in (2, 3, 2.5, 0, -1, True, 2):
        R.call(g, torch.arange(5.), n)


@scenario(exact=True)
def int_vs_float_scalar_same_value(C, R):
    def f(x, s):
        return x + s, (x + s).dtype
    g = C(f)
    for s in (1, 1.0, True, 1, 1.0):
        R(g(torch.tensor([1, 2], dtype=torch.int32), s))


@scenario(exact=True)
def shape_branch(C, R):
    def f(x):
        if x.shape[0] > 3:
            return x[:3] * 2
        if x.shape[0] == 0:
            return x.new_ones(1)
        return x.sum(0, keepdim=True)
    g = C(f)
    for n in (5, 2, 0, 4, 1, 3, 100):
        R(g(torch.arange(float(n))))


@scenario(exact=True)
def dim_change(C, R):
    def f(x):
        return x.sum(-1), x.ndim, x.flatten(1) if x.ndim > 1 else x
    g = C(f)
    for s in ((3,), (2, 3), (2, 3, 4), (), (0,), (1, 1, 1)):
        R.call(g, torch.ones(s))


@scenario(exact=True)
def module_param_rg_toggle(C, R):
    m = torch.nn.Linear(3, 2)
    cm = C(m)
    x = torch.ones(1, 3)
    y = cm(x)
    R(y.requires_grad)
    m.weight.requires_grad_(False)
    m.bias.requires_grad_(False)
    y = cm(x)
    R(y.requires_grad)
    R(y.grad_fn is None)
    m.weight.requires_grad_(True)
    y = cm(x)
    y.sum().backward()
    R(m.weight.grad)
    R(m.bias.grad)
    with torch.no_grad():
        m.weight.fill_(0.5)
    R(cm(x))
    m.weight = torch.nn.Parameter(torch.ones(2, 3, dtype=torch.float64))
    R.call(cm, x)
    R.call(cm, x.double())
