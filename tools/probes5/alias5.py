"""In-place ops on views and aliasing inputs, out=, resize_, version counters, leaf errors."""
import torch

from probe2 import scenario


@scenario(exact=True)
def add_view_of_self(C, R):
    def f(x):
        x.add_(x[0])
        return x
    g = C(f)
    R(g(torch.arange(6.).reshape(2, 3)))
    def h(x):
        x[1:].add_(x[:-1])
        return x
    R(C(h)(torch.arange(6.)))
    def k(x):
        x.mul_(x.t())
        return x
    R(C(k)(torch.arange(9.).reshape(3, 3)))


@scenario(exact=True)
def aliasing_inputs(C, R):
    def f(a, b):
        a.add_(1)
        return b * 2
    g = C(f)
    x = torch.zeros(4)
    R(g(x, x))
    R(x)
    y = torch.zeros(4)
    R(g(y, y[1:]))
    R(y)
    z = torch.zeros(4)
    R(g(z, torch.zeros(3)))
    R(g(z, z[:3]))
    R(z)


@scenario(exact=True)
def aliasing_inputs_both_mutated(C, R):
    def f(a, b):
        a.mul_(2)
        b.add_(1)
        return a + b
    g = C(f)
    x = torch.ones(3)
    R(g(x, x))
    R(x)
    y = torch.ones(3)
    R(g(y, torch.ones(3)))
    w = torch.ones(6)
    R(g(w[:3], w[3:]))
    v = torch.ones(6)
    R(g(v[:4], v[2:]))
    R(v)


@scenario(exact=True)
def out_args(C, R):
    def f(a, b, o):
        torch.add(a, b, out=o)
        return o * 2
    g = C(f)
    o = torch.empty(3)
    R(g(torch.ones(3), torch.ones(3), o))
    R(o)
    o2 = torch.empty(0)
    R.call(g, torch.ones(3), torch.ones(3), o2)
    R(o2)
    o3 = torch.empty(3, dtype=torch.int64)
    R.call(g, torch.ones(3), torch.ones(3), o3)
    a = torch.ones(3)
    R(g(a, torch.ones(3), a))
    R(a)


@scenario(exact=True)
def out_args_reduction(C, R):
    def f(a, o):
        torch.sum(a, 0, out=o)
        torch.mul(a, 2, out=a)
        return o, a
    g = C(f)
    R(g(torch.ones(2, 3), torch.empty(3)))
    R.call(g, torch.ones(2, 3), torch.empty(5))


@scenario(exact=True)
def resize(C, R):
    def f(x):
        y = x.clone()
        y.resize_(2, 2)
        return y + 1
    g = C(f)
    R(g(torch.arange(6.)))
    R(g(torch.arange(4.)))
    def h(x):
        x.resize_(3)
        return x * 2
    a = torch.arange(6.)
    R(C(h)(a))
    R(a)


@scenario(exact=True)
def version_counter(C, R):
    def f(x):
        x.add_(1)
        x.mul_(2)
        return x._version
    g = C(f)
    a = torch.zeros(3)
    R(g(a))
    R(a._version)
    R(g(a))
    def h(x):
        y = x.view(-1)
        y.add_(1)
        return x
    b = torch.zeros(2, 2)
    v0 = b._version
    R(C(h)(b))
    R(b._version - v0)


@scenario(exact=True)
def leaf_inplace_raises(C, R):
    def f(x):
        x.add_(1)
        return x
    g = C(f)
    R.call(g, torch.ones(3, requires_grad=True))
    def h(x):
        x[0] = 5
        return x
    R.call(C(h), torch.ones(3, requires_grad=True))
    def k(x):
        with torch.no_grad():
            x.add_(1)
        return x * 2
    p = torch.ones(3, requires_grad=True)
    r = C(k)(p)
    R(r)
    R(p)
    def m(x):
        y = x.view(3)
        y.mul_(2)
        return y
    R.call(C(m), torch.ones(3, requires_grad=True))


@scenario(exact=True)
def inplace_view_of_nonleaf_grad(C, R):
    def f(x):
        y = x * 1
        y[1:].mul_(3)
        y.t_() if y.dim() == 2 else None
        return y.sum()
    g = C(f)
    x = torch.ones(3, requires_grad=True)
    g(x).backward()
    R(x.grad)
    x2 = torch.ones(2, 2, requires_grad=True)
    g(x2).backward()
    R(x2.grad)


@scenario(exact=True)
def inplace_after_saved(C, R):
    def f(x):
        y = x * 2
        z = y.sin()
        y.add_(1)
        return z + y
    g = C(f)
    x = torch.ones(3, requires_grad=True)
    R.call(lambda: g(x).sum().backward())
    R(x.grad)
    def h(x):
        y = x * 2
        z = y.exp()
        z.add_(1)
        return z
    x = torch.ones(3, requires_grad=True)
    R.call(lambda: C(h)(x).sum().backward())
    R(x.grad)


@scenario(exact=True)
def setitem_alias(C, R):
    def f(x):
        x[1:] = x[:-1]
        return x
    R(C(f)(torch.arange(5.)))
    def h(x):
        x[:, 0] = x[0, :]
        return x
    R(C(h)(torch.arange(9.).reshape(3, 3)))
    def k(x, i):
        x[i] += 1
        return x
    R(C(k)(torch.zeros(4), torch.tensor([0, 0, 1])))
    def m(x):
        x.copy_(x.flip(0))
        return x
    R(C(m)(torch.arange(5.)))


@scenario(exact=True)
def transpose_inplace_input(C, R):
    def f(x):
        x.t_()
        x.add_(1)
        return x.stride(), x
    a = torch.arange(6.).reshape(2, 3)
    R(C(f)(a))
    R(a)
    R(a.shape)
    def h(x):
        x.unsqueeze_(0)
        return x.shape
    b = torch.ones(3)
    R(C(h)(b))
    R(b.shape)


@scenario(exact=True)
def inplace_dtype_mismatch(C, R):
    def f(x, y):
        x.add_(y)
        return x
    g = C(f)
    R.call(g, torch.ones(3, dtype=torch.int64), torch.ones(3) * 1.5)
    R.call(g, torch.ones(3), torch.ones(3, dtype=torch.int64))
    R.call(g, torch.ones(3, dtype=torch.float16), torch.ones(3, dtype=torch.float64) / 3)
    R.call(g, torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool))
    R.call(g, torch.ones(1), torch.ones(3))
    R.call(g, torch.ones(3, dtype=torch.int8), 300)


@scenario(exact=True)
def inplace_on_expanded(C, R):
    def f(x):
        x.add_(1)
        return x
    R.call(C(f), torch.zeros(1).expand(3))
    def h(x, y):
        y.copy_(x)
        return y
    R.call(C(h), torch.arange(3.), torch.zeros(1).expand(3))
