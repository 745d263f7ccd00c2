"""Inputs mutated in place then returned, aliasing outputs, views of inputs."""
import torch

from probe2 import scenario


@scenario
def mutate_then_return_input(C, R):
    def f(x):
        x.mul_(2)
        return x
    g = C(f)
    x = torch.ones(3)
    y = g(x)
    R(y is x)
    R(x)
    y.add_(1)
    R(x)


@scenario
def mutate_input_view_return_base(C, R):
    def f(x):
        x[0].fill_(7)
        x[:, 1] += 1
        return x, x[0]
    g = C(f)
    x = torch.zeros(2, 3)
    a, v = g(x)
    R(a is x)
    R(x)
    v.fill_(-1)
    R(x)


@scenario
def return_view_then_mutate_outside(C, R):
    def f(x):
        return x.t(), x[1:], x.view(-1), x.unsqueeze(0)
    g = C(f)
    x = torch.arange(6.0).reshape(2, 3)
    t, s, v, u = g(x)
    t[0, 0] = 100
    s.mul_(10)
    R(x)
    R(v)
    R(u)
    R([o._base is x for o in (t, s, v, u)])


@scenario
def same_input_twice_mutated(C, R):
    def f(a, b):
        a.add_(1)
        b.mul_(2)
        return a + b
    g = C(f)
    x = torch.ones(3)
    R(g(x, x))
    R(x)


@scenario
def overlapping_views_of_one_input(C, R):
    def f(a, b):
        a.add_(b)
        return a
    g = C(f)
    base = torch.arange(6.0)
    R(g(base[1:4], base[0:3]))
    R(base)


@scenario
def input_and_its_view_passed(C, R):
    def f(x, v):
        v.zero_()
        return x.sum(), x * 1
    g = C(f)
    x = torch.arange(1.0, 7.0).reshape(2, 3)
    R(g(x, x[0]))
    R(x)


@scenario
def output_aliases_two_ways(C, R):
    def f(x):
        y = x + 1
        return y, y, y.view(3, 1), x
    g = C(f)
    x = torch.ones(3)
    out = g(x)
    R(out[0] is out[1])
    R(out[3] is x)
    out[0].add_(5)
    R(out)


@scenario
def mutate_input_under_condition(C, R):
    def f(x, flag):
        if flag:
            x.clamp_(min=0)
        return x.sum()
    g = C(f)
    x = torch.tensor([-1.0, 2.0])
    R(g(x, False))
    R(x)
    R(g(x, True))
    R(x)


@scenario
def inplace_on_expanded_input_raises(C, R):
    def f(x):
        x.add_(1)
        return x
    g = C(f)
    R.call(g, torch.ones(3).expand(2, 3))


@scenario
def inplace_on_noncontig_input(C, R):
    def f(x):
        x.mul_(torch.arange(x.shape[1], dtype=x.dtype))
        return x.sum(0)
    g = C(f)
    x = torch.ones(4, 3).t()
    R(g(x))
    R(x)
    R(x.stride())


@scenario
def copy_into_input_broadcast(C, R):
    def f(x, y):
        x.copy_(y)
        return x
    g = C(f)
    x = torch.zeros(2, 3)
    R(g(x, torch.tensor([1.0, 2.0, 3.0])))
    x = torch.zeros(2, 3, dtype=torch.int32)
    R(g(x, torch.tensor([1.7, 2.2, -3.9])))


@scenario
def setitem_on_input_with_tensor_index(C, R):
    def f(x, idx, v):
        x[idx] = v
        x[idx > 1] += 10 if False else 0
        return x
    g = C(f)
    x = torch.zeros(5)
    R(g(x, torch.tensor([0, 3]), torch.tensor([1.0, 2.0])))
    R(x)


@scenario
def index_put_accumulate_on_input(C, R):
    def f(x, idx):
        x.index_put_((idx,), torch.ones(idx.shape[0]), accumulate=True)
        return x
    g = C(f)
    x = torch.zeros(4)
    R(g(x, torch.tensor([1, 1, 3, 1])))


@scenario
def mutate_list_element_tensor(C, R):
    def f(xs):
        xs[0].add_(1)
        xs[1] = xs[1] * 2
        return xs
    g = C(f)
    a, b = torch.zeros(2), torch.ones(2)
    xs = [a, b]
    out = g(xs)
    R(out is xs)
    R(xs)
    R(xs[1] is b)
    R(a)


@scenario
def mutate_dict_value_tensor(C, R):
    def f(d):
        d["a"].sub_(1)
        d["b"] = d["a"] * 3
        return d["a"]
    g = C(f)
    d = {"a": torch.ones(2)}
    r = g(d)
    R(r is d["a"])
    R(d)


@scenario
def resize_input_inplace(C, R):
    def f(x):
        x.resize_(4)
        x.fill_(2)
        return x
    g = C(f)
    x = torch.ones(2, 3)
    R(g(x))
    R(x)


@scenario
def squeeze_unsqueeze_inplace_input(C, R):
    def f(x):
        x.unsqueeze_(0)
        x.transpose_(1, 2)
        return x.shape, x
    g = C(f)
    x = torch.arange(6.0).reshape(2, 3)
    R(g(x))
    R(x)
    R(x.stride())


@scenario
def return_input_as_is_and_detached(C, R):
    def f(x):
        return x, x.detach(), x.data
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    a, d, dd = g(x)
    R(a is x)
    R(d.requires_grad)
    d.add_(1)
    R(x)


@scenario
def out_view_of_intermediate_mutated(C, R):
    def f(x):
        y = x * 2
        v = y[::2]
        v.fill_(0)
        return y, v
    g = C(f)
    y, v = g(torch.ones(5))
    R(y)
    v.fill_(3)
    R(y)


@scenario
def aliasing_via_expand_and_as_strided(C, R):
    def f(x):
        return x.expand(3, 4), x.as_strided((2, 2), (1, 1)), x.unfold(0, 2, 1)
    g = C(f)
    x = torch.arange(4.0)
    a, s, u = g(x)
    R((a, s, u))
    x[1] = 100
    R((a, s, u))


@scenario
def inplace_on_int_input_float_rhs_raises(C, R):
    def f(x):
        x.add_(0.5)
        return x
    g = C(f)
    R.call(g, torch.ones(2, dtype=torch.int64))
    R.call(g, torch.ones(2))


@scenario
def unsafe_out_aliasing_input(C, R):
    def f(x):
        torch.add(x, 1, out=x)
        torch.mul(x, x, out=x)
        return x
    g = C(f)
    x = torch.ones(3)
    R(g(x) is x)
    R(x)


@scenario
def buffer_view_returned_from_module(C, R):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", torch.zeros(4))

        def forward(self, x):
            self.b.add_(x)
            return self.b[:2]
    m = torch.nn.Module.__new__(M)
    m.__init__()
    mc = C(m)
    v = mc(torch.ones(4))
    v.fill_(9)
    R(m.b)
    R(mc(torch.ones(4)))
