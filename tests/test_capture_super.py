"""super() under torchc (issue 21): zero-argument and two-argument super() in instance methods,
classmethods (bound to cls, resolved past the defining class in cls's MRO), staticmethods reached
through super(), multiple inheritance, properties, and a torch.autograd.Function whose apply is a
classmethod calling super().apply. Each test compares with eager and asserts one graph and no
break, so a silent fallback fails it."""
import torch

import torchc
from conftest import assert_same


def whole(fn, *args, graphs=1):
    want = fn(*args)
    torchc.reset()
    ex = torchc.explain(fn)(*args)
    assert_same(ex.result, want)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex.break_reasons
    return ex


class A:
    k = 1.0

    @classmethod
    def make(cls, x):
        return x + cls.k

    @staticmethod
    def st(x):
        return x * 3

    def inst(self, x):
        return x - 1


class B(A):
    k = 2.0

    @classmethod
    def make(cls, x):
        return super().make(x) * 2

    @staticmethod
    def st(x):
        return x + 5

    def inst(self, x):
        return super().inst(x) * 2

    @classmethod
    def st_via_super(cls, x):
        return super().st(x)

    def inst_st_via_super(self, x):
        return super().st(x) + 1


class C(B):
    k = 4.0

    @classmethod
    def make(cls, x):
        return super().make(x) - 1

    def inst(self, x):
        return super().inst(x) + 10

    @classmethod
    def two_arg(cls, x):
        return super(B, cls).make(x)  # skips B: A.make with cls C

    def two_arg_inst(self, x):
        return super(B, self).inst(x)


def test_classmethod_two_levels():
    x = torch.randn(5, 3)
    whole(lambda x: B.make(x), x)
    assert_same(B.make(x), (x + 2.0) * 2)


def test_classmethod_three_levels_cls_binding():
    x = torch.randn(7)
    whole(lambda x: C.make(x), x)
    assert_same(C.make(x), (x + 4.0) * 2 - 1)  # cls stays C all the way down


def test_classmethod_called_on_instance():
    x = torch.randn(4, 1)
    c = C()
    whole(lambda x: c.make(x) + B().make(x), x)


def test_classmethod_two_arg_super():
    x = torch.randn(3, 2)
    whole(lambda x: C.two_arg(x), x)
    assert_same(C.two_arg(x), x + 4.0)


def test_staticmethod_through_super():
    x = torch.randn(6)
    whole(lambda x: B.st_via_super(x) + C.st_via_super(x), x)
    b = B()
    whole(lambda x: b.inst_st_via_super(x), x)
    assert_same(B.st_via_super(x), x * 3)


def test_instance_method_chain():
    x = torch.randn(2, 5)
    c = C()
    whole(lambda x: c.inst(x) + c.two_arg_inst(x), x)
    assert_same(c.inst(x), (x - 1) * 2 + 10)


class L:
    def f(self, x):
        return x + 1

    @classmethod
    def g(cls, x):
        return x * cls.w

    w = 2.0


class M1(L):
    def f(self, x):
        return super().f(x) * 2

    @classmethod
    def g(cls, x):
        return super().g(x) + 1


class M2(L):
    w = 3.0

    def f(self, x):
        return super().f(x) - 3

    @classmethod
    def g(cls, x):
        return super().g(x) - 5


class D(M1, M2):  # MRO: D, M1, M2, L
    w = 7.0

    def f(self, x):
        return super().f(x) * 10

    @classmethod
    def g(cls, x):
        return super().g(x) * 10


def test_multiple_inheritance_mro():
    x = torch.randn(3, 3)
    d = D()
    whole(lambda x: d.f(x), x)
    whole(lambda x: D.g(x), x)
    assert_same(d.f(x), ((x + 1) - 3) * 2 * 10)
    assert_same(D.g(x), ((x * 7.0 - 5) + 1) * 10)


class P:
    def __init__(self):
        self.s = 2.0

    @property
    def scale(self):
        return self.s


class Q(P):
    @property
    def scale(self):
        return super().scale * 3


def test_super_in_property():
    x = torch.randn(4)
    q = Q()
    whole(lambda x: x * q.scale, x)


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class ScaleCM(Scale):
    @classmethod
    def apply(cls, *args):
        return super().apply(*args)


def test_autograd_function_apply_classmethod_super_nograd():
    x = torch.randn(5, 2)
    with torch.no_grad():
        whole(lambda x: ScaleCM.apply(x) + 1, x)


def test_autograd_function_apply_classmethod_super():
    x = torch.randn(5, 2)
    whole(lambda x: ScaleCM.apply(x) + 1, x)


class E(C):
    k = 8.0

    def via_instance(self, x):
        return super().make(x)  # a classmethod through super() of an instance: cls is E


def test_classmethod_through_super_of_instance_binds_class():
    x = torch.randn(3)
    e = E()
    whole(lambda x: e.via_instance(x), x)
    assert_same(e.via_instance(x), ((x + 8.0) * 2 - 1))


class ScaleCM2(ScaleCM):
    @classmethod
    def apply(cls, *args):
        return super().apply(*args) + 1


def test_autograd_function_apply_classmethod_super_grad():
    x0 = torch.randn(4, 3)
    def f(x):
        return (ScaleCM2.apply(x) * x).sum()
    x = x0.clone().requires_grad_()
    want = f(x)
    want.backward()
    gw = x.grad
    torchc.reset()
    ex = torchc.explain(f)(x0.clone().requires_grad_())
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    y = x0.clone().requires_grad_()
    got = torchc.compile(f)(y)
    got.backward()
    assert_same(got.detach(), want.detach())
    assert_same(y.grad, gw)
