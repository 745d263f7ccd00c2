"""Aliasing, second batch: detach/data/views sharing storage, returns aliasing inputs,
mutation visible through other views, grads with in-place."""
import torch

from probe2 import scenario


@scenario(exact=True)
def detach_shares_storage(C, R):
    def f(x):
        y = x.detach()
        y.mul_(2)
        return x + 1
    a = torch.ones(3)
    R(C(f)(a))
    R(a)
    def h(x):
        x.data.add_(5)
        return x * 1
    b = torch.ones(3, requires_grad=True)
    R(C(h)(b))
    R(b)
    def k(x):
        v = x.view(-1)
        r = x.sum()
        v[0] = 100
        return r, x.sum()
    R(C(k)(torch.ones(2, 2)))


@scenario(exact=True)
def return_aliases(C, R):
    def f(x):
        return x, x.view(-1), x[0], x.t(), x.detach()
    g = C(f)
    a = torch.arange(6.).reshape(2, 3)
    r = g(a)
    R(r)
    R([t.data_ptr() == a.data_ptr() for t in r])
    R([t._base is a for t in r[1:]])
    r[1][0] = 99
    R(a)


@scenario(exact=True)
def input_mutated_and_returned_view(C, R):
    def f(x):
        x.add_(1)
        return x[1:], x
    a = torch.zeros(4)
    r = C(f)(a)
    R(r)
    r[0][0] = 7
    R(a)
    R(r[1] is a)


@scenario(exact=True)
def view_of_input_mutated_inside(C, R):
    def f(x):
        v = x[::2]
        v.mul_(10)
        return x.sum(), v
    a = torch.arange(6.)
    R(C(f)(a))
    R(a)
    def h(x):
        x.unsqueeze(0).squeeze(0).transpose(0, 1)[0].fill_(-1)
        return x
    b = torch.zeros(2, 3)
    R(C(h)(b))


@scenario(exact=True)
def inplace_grad_on_view_chain(C, R):
    def f(w):
        y = w * 1
        v = y[:, 1]
        v.mul_(3)
        y.relu_()
        return (y * y).sum()
    g = C(f)
    w = torch.tensor([[1., -2., 3.], [-1., 2., -3.]], requires_grad=True)
    g(w).backward()
    R(w.grad)


@scenario(exact=True)
def inplace_leaf_view_error(C, R):
    def f(w):
        w[0].add_(1)
        return w
    R.call(C(f), torch.ones(2, 2, requires_grad=True))
    def h(w):
        v = w.view(4)
        return v.add_(1)
    R.call(C(h), torch.ones(2, 2, requires_grad=True))
    def k(w):
        with torch.no_grad():
            w[0] = 5
        return w.sum()
    p = torch.ones(3, requires_grad=True)
    R(C(k)(p))
    R(p)


@scenario(exact=True)
def out_alias_input(C, R):
    def f(a, b):
        torch.mul(a, b, out=b)
        torch.add(a, b, out=a)
        return a, b
    x, y = torch.ones(3) * 2, torch.ones(3) * 3
    R(C(f)(x, y))
    R((x, y))
    def h(a):
        torch.cumsum(a, 0, out=a)
        return a
    z = torch.arange(5.)
    R.call(C(h), z)
    R(z)


@scenario(exact=True)
def same_storage_different_views(C, R):
    def f(a, b):
        a.copy_(b * 2)
        return a + b
    base = torch.arange(8.)
    R(C(f)(base[:4], base[4:]))
    R(base)
    base2 = torch.arange(8.)
    R(C(f)(base2[:4], base2[2:6]))
    R(base2)
    base3 = torch.arange(8.)
    R(C(f)(base3[::2], base3[1::2]))
    R(base3)


@scenario(exact=True)
def setitem_on_input_with_grad_input(C, R):
    def f(x, v):
        y = x.clone()
        y[1] = v
        return (y * y).sum()
    g = C(f)
    x = torch.ones(3, requires_grad=True)
    v = torch.tensor(5.0, requires_grad=True)
    g(x, v).backward()
    R((x.grad, v.grad))


@scenario(exact=True)
def index_put_accumulate_dupes(C, R):
    def f(x, i, v):
        x.index_put_((i,), v, accumulate=True)
        return x
    R(C(f)(torch.zeros(4), torch.tensor([0, 0, 3, 0]), torch.tensor([1., 2., 3., 4.])))
    def h(x, i):
        x[i] = torch.arange(3.)
        return x
    R(C(h)(torch.zeros(4), torch.tensor([1, 2, 3])))
    def k(x, i, v):
        return x.index_add(0, i, v), x.scatter_add(0, i, v), x.scatter(0, i, v, reduce="add")
    R(C(k)(torch.zeros(4), torch.tensor([0, 0, 3, 0]), torch.tensor([1., 2., 3., 4.])))
