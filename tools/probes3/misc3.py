"""Odds and ends: dtype queries, torch.compiler queries, caches, subclasses, Size arithmetic."""
import functools
import math

import torch
import torch.nn as nn

from probe2 import scenario


@scenario
def dtype_queries(C, R):
    def f(x, y):
        return (torch.result_type(x, y), torch.promote_types(x.dtype, y.dtype), torch.can_cast(x.dtype, y.dtype),
                x.is_floating_point(), y.is_complex(), torch.finfo(x.dtype).eps if x.is_floating_point() else 0,
                torch.iinfo(y.dtype).max if not y.is_floating_point() else 0, x.element_size(), x.itemsize)
    g = C(f)
    R(g(torch.ones(2), torch.ones(2, dtype=torch.int8)))
    R(g(torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.uint8)))


@scenario
def finfo_clamp_and_masked_fill(C, R):
    def f(x, m):
        return x.masked_fill(m, torch.finfo(x.dtype).min).softmax(-1), x.clamp(max=torch.finfo(x.dtype).max)
    g = C(f)
    m = torch.tensor([[True, False, False], [False, False, True]])
    R(g(torch.randn(2, 3), m))
    R(g(torch.randn(2, 3).half(), m))
    R(g(torch.randn(2, 3).bfloat16(), m))


@scenario
def is_compiling_queries(C, R):
    def f(x):
        a = torch.compiler.is_compiling()
        b = torch.jit.is_scripting()
        return x + 1, b, isinstance(a, bool)
    R(C(f)(torch.ones(2)))


@scenario
def lru_cache_helper(C, R):
    @functools.lru_cache(maxsize=None)
    def mask(n):
        return torch.tril(torch.ones(n, n, dtype=torch.bool))

    def f(x):
        return x.masked_fill(~mask(x.shape[-1]), 0)
    g = C(f)
    R(g(torch.ones(3, 3)))
    R(g(torch.ones(4, 4)))
    R(g(torch.ones(3, 3)))


@scenario
def size_arithmetic(C, R):
    def f(x):
        s = x.shape
        return (s[1:], s + (1,), s.numel(), len(s), list(reversed(s)), math.prod(s), s[-1] // 2, s == (2, 3),
                torch.Size([s[0] * 2]), x.reshape(*s[:-1], -1, 1).shape)
    R(C(f)(torch.ones(2, 3)))


@scenario
def size_index_errors(C, R):
    g = C(lambda x: x.shape[5])
    R.call(g, torch.ones(2))
    R.call(C(lambda x: x.size(3)), torch.ones(2))


@scenario
def parameter_isinstance_and_subclass(C, R):
    p = nn.Parameter(torch.ones(2))

    def f(x, q):
        return isinstance(q, nn.Parameter), type(q).__name__, x * q, q.is_leaf
    R(C(f)(torch.ones(2), p))


@scenario
def tensor_subclass_input(C, R):
    class MyT(torch.Tensor):
        pass

    def f(x):
        return x * 2, type(x * 2).__name__
    t = torch.ones(2).as_subclass(MyT)
    R(C(f)(t))


@scenario
def torch_function_subclass_input(C, R):
    log = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append(getattr(func, "__name__", "?"))
            return super().__torch_function__(func, types, args, kwargs or {})

    def f(x):
        return (x + 1).sum()
    r = C(f)(torch.ones(3).as_subclass(Logged))
    R(r)
    R(type(r).__name__)
    R(len(log) > 0)


@scenario
def tolist_of_half_and_bool(C, R):
    def f(x):
        return x.half().tolist(), (x > 0).tolist(), x.int().tolist(), x.sum().item(), x.bfloat16()[0].item()
    R(C(f)(torch.tensor([1.5, -2.25, 3.0])))


@scenario
def python_math_on_tensor_items(C, R):
    def f(x):
        v = x.max().item()
        return math.sqrt(v), math.floor(v), round(v, 1), int(v), float(x[0]), abs(x.min().item())
    R(C(f)(torch.tensor([2.5, -1.25, 9.75])))


@scenario
def bool_of_single_element_and_empty(C, R):
    def f(x):
        if x:
            return 1
        return 0
    g = C(f)
    R.call(g, torch.tensor([0.0]))
    R.call(g, torch.tensor(3))
    R.call(g, torch.tensor([]))
    R.call(g, torch.tensor([1, 2]))


@scenario
def int_and_float_of_tensors(C, R):
    def f(x):
        return int(x), float(x), complex(x) if False else 0, x.__index__() if x.dtype == torch.int64 else -1
    g = C(f)
    R.call(g, torch.tensor(3))
    R.call(g, torch.tensor(2.7))
    R.call(g, torch.tensor([1.0, 2.0]))


@scenario
def index_with_tensor_scalar(C, R):
    def f(xs, i):
        return xs[i], [10, 20, 30][i], range(5)[i]
    g = C(f)
    R.call(g, [torch.ones(1), torch.zeros(1)], torch.tensor(1))
    R.call(g, [torch.ones(1), torch.zeros(1)], torch.tensor(1.0))


@scenario
def set_of_tensors_and_id(C, R):
    def f(a, b):
        s = {a, b, a}
        d = {id(a): "a", id(b): "b"}
        return len(s), d[id(a)], a in s
    R(C(f)(torch.ones(1), torch.ones(1)))


@scenario
def tensor_in_list_membership_raises(C, R):
    def f(a, xs):
        return a in xs
    g = C(f)
    R.call(g, torch.ones(2), [torch.zeros(2), torch.ones(2)])
    R.call(g, torch.ones(1), [torch.zeros(1), torch.ones(1)])


@scenario
def tensor_equality_in_python_sort(C, R):
    def f(xs):
        return sorted(xs, key=lambda t: t.sum().item()), max(xs, key=lambda t: t.norm())
    R(C(f)([torch.tensor([3.0]), torch.tensor([-1.0]), torch.tensor([2.0])]))


@scenario
def module_property_compute(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.log_scale = nn.Parameter(torch.zeros(2))

        @property
        def scale(self):
            return self.log_scale.exp()

        def forward(self, x):
            return x * self.scale
    m = M()
    mc = C(m)
    y = mc(torch.ones(2))
    y.sum().backward()
    R(y)
    R(m)


@scenario
def module_kwargs_only_forward(C, R):
    class M(nn.Module):
        def forward(self, *, x, scale=2.0, **extra):
            return x * scale + sum(extra.values())
    mc = C(M())
    R(mc(x=torch.ones(2)))
    R(mc(x=torch.ones(2), scale=3, bias=torch.ones(2)))
    R.call(mc, torch.ones(2))


@scenario
def module_returns_none_and_constants(C, R):
    class M(nn.Module):
        def forward(self, x):
            return None, 3, "s", (x,), {"k": None}
    R(C(M())(torch.ones(1)))


@scenario
def chained_comparison_tensors(C, R):
    def f(x):
        return (0 < x) & (x < 1), x.clamp(0, 1) == x
    R(C(f)(torch.tensor([-1.0, 0.5, 2.0])))


@scenario
def torch_no_grad_decorator_inside(C, R):
    @torch.no_grad()
    def helper(x):
        return x * 2

    def f(x):
        return helper(x) + x
    x = torch.ones(2, requires_grad=True)
    y = C(f)(x)
    R(y)
    y.sum().backward()
    R(x)


@scenario
def inference_mode_inside(C, R):
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return y, y.is_inference()
    R(C(f)(torch.ones(2)))


@scenario
def set_grad_enabled_false_inside(C, R):
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return y, x * 3
    x = torch.ones(2, requires_grad=True)
    a, b = C(f)(x)
    R(a)
    R(b)
    R(torch.is_grad_enabled())


@scenario
def repeated_compile_of_lambda_in_loop(C, R):
    out = []
    for k in range(4):
        g = C(lambda x, k=k: x * k)
        out.append(g(torch.ones(2)))
    R(out)


@scenario
def closure_over_loop_variable_late_binding(C, R):
    fs = []
    for k in range(3):
        fs.append(C(lambda x: x * k))
    R([h(torch.ones(1)) for h in fs])


@scenario
def compiled_method_of_object(C, R):
    class Acc:
        def __init__(self):
            self.total = torch.zeros(2)

        def add(self, x):
            self.total = self.total + x
            return self.total
    a = Acc()
    m = C(a.add)
    R(m(torch.ones(2)))
    R(m(torch.ones(2)))
    b = Acc()
    R(C(b.add)(torch.full((2,), 5.0)))
    R(a.total)


@scenario
def staticmethod_and_classmethod_compiled(C, R):
    class K:
        factor = 3

        @staticmethod
        def s(x):
            return x + 1

        @classmethod
        def c(cls, x):
            return x * cls.factor
    R(C(K.s)(torch.ones(2)))
    R(C(K.c)(torch.ones(2)))
    K.factor = 5
    R(C(K.c)(torch.ones(2)))


@scenario
def empty_list_and_none_inputs(C, R):
    def f(xs, y=None):
        if not xs:
            return y
        return torch.stack(xs).sum(0) if y is None else torch.stack(xs).sum(0) + y
    g = C(f)
    R(g([]))
    R(g([], torch.ones(1)))
    R(g([torch.ones(2)]))


@scenario
def torch_cat_errors_and_empty(C, R):
    g = C(lambda xs: torch.cat(xs))
    R.call(g, [])
    R.call(g, [torch.ones(2), torch.ones(3, 1)])
    R.call(g, [torch.ones(0), torch.ones(2, 3)])
    R.call(g, [torch.ones(2, dtype=torch.int32), torch.ones(1)])
