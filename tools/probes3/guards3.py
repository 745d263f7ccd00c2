"""State read by the compiled code and changed between calls: is each read guarded?"""
import dataclasses
import enum
import functools
import types

import torch
import torch.nn as nn

from probe2 import scenario

NS = types.SimpleNamespace(scale=2.0, sub=types.SimpleNamespace(bias=1.0), on=True)


@dataclasses.dataclass
class Cfg:
    k: int = 2
    mode: str = "a"


CFG = Cfg()


def _twice(cfgd):
    def scen(C, R):
        cfgd["before"]()
        g = C(cfgd["fn"])
        x = torch.ones(2)
        R(g(x))
        cfgd["change"]()
        R(g(x))
        cfgd["restore"]()
        R(g(x))
    return scen


@scenario
def simplenamespace_nested_attr(C, R):
    def f(x):
        return x * NS.scale + NS.sub.bias if NS.on else x
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    NS.sub.bias = 5.0
    R(g(x))
    NS.on = False
    R(g(x))
    NS.sub.bias, NS.on = 1.0, True


@scenario
def global_dataclass_field(C, R):
    def f(x):
        return x * CFG.k if CFG.mode == "a" else x - CFG.k
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    CFG.k = 7
    R(g(x))
    CFG.mode = "b"
    R(g(x))
    CFG.k, CFG.mode = 2, "a"


@scenario
def function_attribute_counter(C, R):
    def helper(x):
        return x * helper.w
    helper.w = 2.0

    def f(x):
        return helper(x)
    g = C(f)
    R(g(torch.ones(2)))
    helper.w = 3.0
    R(g(torch.ones(2)))


@scenario
def function_defaults_changed(C, R):
    def helper(x, s=2.0):
        return x * s

    def f(x):
        return helper(x)
    g = C(f)
    R(g(torch.ones(2)))
    helper.__defaults__ = (5.0,)
    R(g(torch.ones(2)))


@scenario
def kwdefaults_changed(C, R):
    def helper(x, *, s=2.0):
        return x * s
    g = C(lambda x: helper(x))
    R(g(torch.ones(2)))
    helper.__kwdefaults__ = {"s": 4.0}
    R(g(torch.ones(2)))


@scenario
def partial_args_mutated(C, R):
    p = functools.partial(torch.mul, other=2.0)
    g = C(lambda x: p(x))
    R(g(torch.ones(2)))
    p.keywords["other"] = 3.0
    R(g(torch.ones(2)))


@scenario
def class_dict_table_mutated(C, R):
    class K:
        table = {"a": 1.0}

    def f(x):
        return x * K.table["a"]
    g = C(f)
    R(g(torch.ones(2)))
    K.table["a"] = 9.0
    R(g(torch.ones(2)))


@scenario
def instance_of_global_attr(C, R):
    class Holder:
        def __init__(self):
            self.v = 1.5
    h = Holder()

    def f(x):
        return x * h.v
    g = C(f)
    R(g(torch.ones(2)))
    h.v = -1.0
    R(g(torch.ones(2)))


@scenario
def enum_member_value_read(C, R):
    class Act(enum.Enum):
        RELU = "relu"
        TANH = "tanh"

    class M(nn.Module):
        def __init__(self, a):
            super().__init__()
            self.a = a

        def forward(self, x):
            return x.relu() if self.a.value == "relu" else x.tanh()
    m = M(Act.RELU)
    mc = C(m)
    x = torch.randn(3)
    R(mc(x))
    m.a = Act.TANH
    R(mc(x))


@scenario
def metaclass_attribute(C, R):
    class Meta(type):
        pass

    class K(metaclass=Meta):
        f = 2.0

    def fn(x):
        return x * K.f
    g = C(fn)
    R(g(torch.ones(2)))
    K.f = 6.0
    R(g(torch.ones(2)))


@scenario
def class_attribute_through_instance_after_shadow(C, R):
    class K:
        f = 2.0

        def go(self, x):
            return x * self.f
    k = K()
    g = C(k.go)
    R(g(torch.ones(2)))
    K.f = 3.0
    R(g(torch.ones(2)))
    k.f = 4.0
    R(g(torch.ones(2)))


@scenario
def slots_object_attr(C, R):
    class S:
        __slots__ = ("v",)

        def __init__(self):
            self.v = 2.0
    s = S()
    g = C(lambda x: x * s.v)
    R(g(torch.ones(2)))
    s.v = 8.0
    R(g(torch.ones(2)))


@scenario
def module_level_int_in_other_module(C, R):
    import probes3.guards3 as mod
    mod.NS.scale = 2.0

    def f(x):
        return x * mod.NS.scale
    g = C(f)
    R(g(torch.ones(2)))
    mod.NS.scale = 11.0
    R(g(torch.ones(2)))
    mod.NS.scale = 2.0


@scenario
def tensor_dtype_attr_on_object(C, R):
    class P:
        dt = torch.float32
    p = P()
    g = C(lambda x: x.to(p.dt) * 2)
    R(g(torch.ones(2)))
    p.dt = torch.float64
    R(g(torch.ones(2)))
    P.dt = torch.float16
    del p.dt
    R(g(torch.ones(2)))


@scenario
def nn_module_class_constant_via_super(C, R):
    class Base(nn.Module):
        K = 2

    class M(Base):
        def forward(self, x):
            return x * super().K if hasattr(super(), "K") else x
    m = M()
    mc = C(m)
    R(mc(torch.ones(2)))
    Base.K = 5
    R(mc(torch.ones(2)))


@scenario
def closure_cell_class(C, R):
    class K:
        v = 1.0
    cls = K

    def f(x):
        return x + cls.v
    g = C(f)
    R(g(torch.ones(2)))
    K.v = 10.0
    R(g(torch.ones(2)))


@scenario
def type_of_input_object_attr(C, R):
    class A:
        w = 2.0

    class B:
        w = 3.0

    def f(o, x):
        return x * type(o).w
    g = C(f)
    R(g(A(), torch.ones(2)))
    R(g(B(), torch.ones(2)))
    A.w = 7.0
    R(g(A(), torch.ones(2)))


@scenario
def tensor_instance_attribute_set_later(C, R):
    def f(x):
        return x * getattr(x, "scale", 1.0), hasattr(x, "scale")
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    x.scale = 3.0
    R(g(x))
    del x.scale
    R(g(x))


@scenario
def hasattr_over_value_kinds(C, R):
    class P:
        CONST = 3

        @property
        def good(self):
            return 1

    def f(x, d, p):
        y = x * 2
        return (y + 1, hasattr(x, "is_leaf"), hasattr(y, "is_leaf"), hasattr(y, "zzz"), hasattr(d, "keys"),
                hasattr(p, "good"), hasattr(P, "CONST"), hasattr(x.shape, "numel"), hasattr(x.dtype, "itemsize"))
    R(C(f)(torch.ones(2), {"a": 1}, P()))
