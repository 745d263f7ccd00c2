"""Neighbours of the round-3 finds: aliases made by detach/.data in training, state read
through classes, modes and inference_mode in other spellings."""
import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from probe2 import scenario


@scenario(rtol=1e-5)
def data_attr_mutated_in_training(C, R):
    def f(x):
        y = x.exp()
        y.data.mul_(2)
        return y
    x = torch.randn(3, requires_grad=True)
    y = C(f)(x)
    R(y)
    y.sum().backward()
    R(x)


@scenario(rtol=1e-5)
def detach_of_input_mutated_in_training(C, R):
    def f(x):
        d = x.detach()
        d.mul_(2)
        return x * 1, d
    x = torch.randn(3, requires_grad=True)
    R(C(f)(x))
    R(x)


@scenario(rtol=1e-5)
def detach_returned_then_mutated_outside(C, R):
    def f(x, w):
        y = x @ w
        return y, y.detach()
    x = torch.randn(2, 3)
    w = torch.randn(3, 2, requires_grad=True)
    y, d = C(f)(x, w)
    d.zero_()
    R(y)
    R(d)


@scenario(rtol=1e-5)
def detach_view_chain_in_training(C, R):
    def f(x):
        y = x * 2
        z = y.detach()[0]
        z.fill_(7)
        return y
    x = torch.randn(2, 3, requires_grad=True)
    R(C(f)(x))


@scenario
def module_class_constant_changed(C, R):
    class M(nn.Module):
        EPS = 1e-3

        def forward(self, x):
            return x / (x.abs().sum() + type(self).EPS) + self.__class__.EPS
    m = M()
    mc = C(m)
    x = torch.ones(3)
    R(mc(x))
    M.EPS = 10.0
    R(mc(x))


@scenario
def class_flag_read_via_staticmethod(C, R):
    class Cfg:
        USE = True

    class M(nn.Module):
        @staticmethod
        def act(x):
            return x.relu() if Cfg.USE else x.tanh()

        def forward(self, x):
            return self.act(x)
    mc = C(M())
    x = torch.randn(4)
    R(mc(x))
    Cfg.USE = False
    R(mc(x))


@scenario
def classmethod_constructor_reads_default(C, R):
    class Box:
        SCALE = 2

        def __init__(self, v):
            self.v = v

        @classmethod
        def make(cls, x):
            return cls(x * cls.SCALE)

    def f(x):
        return Box.make(x).v
    g = C(f)
    R(g(torch.ones(2)))
    Box.SCALE = 3
    R(g(torch.ones(2)))


@scenario
def device_context_around_call(C, R):
    g = C(lambda x: x + torch.arange(3.0))
    R(g(torch.ones(3)))
    with torch.device("cpu"):
        R(g(torch.ones(3)))
    R.call(lambda: C(lambda n: torch.zeros(n).device)(2))


@scenario
def mode_entered_and_exited_between_calls(C, R):
    class Neg(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            r = func(*args, **(kwargs or {}))
            return -r if func is torch.Tensor.sum else r
    g = C(lambda x: x.sum() * 2)
    x = torch.ones(3)
    R(g(x))
    with Neg():
        R(g(x))
    R(g(x))


@scenario
def inference_mode_decorated_helper_returned(C, R):
    @torch.inference_mode()
    def helper(x):
        return x * 3

    def f(x):
        return helper(x)
    r = C(f)(torch.ones(2))
    R(r)
    R(r.is_inference())


@scenario
def inference_mode_nested_in_no_grad(C, R):
    def f(x):
        with torch.no_grad():
            with torch.inference_mode():
                a = x + 1
            b = a.clone()
        return b, b.is_inference()
    R(C(f)(torch.ones(2)))


@scenario
def inference_input_into_compiled(C, R):
    with torch.inference_mode():
        x = torch.ones(3)
    g = C(lambda a: (a * 2, a[0]))
    r = g(x)
    R(r)
    R([t.is_inference() for t in r])


@scenario
def exception_inside_mode_block(C, R):
    class Noop(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def f(x):
        try:
            with Noop():
                raise ValueError("x")
        except ValueError:
            return x + 1
    R(C(f)(torch.ones(2)))


@scenario(rtol=1e-5)
def detach_inplace_method_in_training(C, R):
    def f(x):
        y = x * 2
        z = y + 1
        z.detach_()
        return y, z, z.requires_grad
    x = torch.randn(2, requires_grad=True)
    R.call(C(f), x)


@scenario
def global_class_attr_counter_in_loop(C, R):
    class Stats:
        calls = 0

    def f(x):
        Stats.calls += 1
        return x * Stats.calls
    g = C(f)
    for _ in range(3):
        R(g(torch.ones(1)))
    R(Stats.calls)
