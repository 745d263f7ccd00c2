"""Identity and aliasing of outputs that are module state or inputs."""
import torch
import torch.nn as nn

from probe2 import scenario


@scenario
def returns_parameter_and_buffer_objects(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(2))
            self.register_buffer("b", torch.zeros(2))

        def forward(self, x):
            return x * self.w, self.w, self.b, self.b[0]
    mod = M()
    m = C(mod)
    y, w, b, b0 = m(torch.ones(2))
    R((w is mod.w, b is mod.b, b0._base is mod.b))
    b0.fill_(9)
    R(mod.b)


@scenario
def returns_input_containers(C, R):
    def f(xs, d):
        xs.append(xs[0] + 1)
        return xs, d, xs[0]
    g = C(f)
    xs = [torch.ones(1)]
    d = {"a": torch.zeros(1)}
    a, b, c = g(xs, d)
    R((a is xs, b is d, c is xs[0], len(xs)))


@scenario
def returns_detached_and_contiguous_views(C, R):
    def f(x):
        return x.detach(), x.contiguous(), x.view_as(x), x.reshape(x.shape), x[...], x.to(x.dtype), x.float(), x.expand_as(x)
    g = C(f)
    x = torch.zeros(2, 2)
    outs = g(x)
    R([o is x for o in outs])
    for o in outs:
        o.add_(1) if o.data_ptr() == x.data_ptr() and o is not x else None
    R(x)


@scenario
def inplace_returned_self_identity(C, R):
    def f(x):
        y = x.mul_(2)
        z = x.add_(1).clamp_(max=4)
        return y, z
    g = C(f)
    x = torch.arange(4.0)
    y, z = g(x)
    R((y is x, z is x))
    R(x)
