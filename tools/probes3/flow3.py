"""Generators, iterators, exceptions, recursion, nested compile."""
import itertools

import torch
import torch.nn as nn

import torchc
from probe2 import scenario


@scenario
def raise_inside_after_tensor_work(C, R):
    def f(x):
        y = x * 2
        if y.shape[0] > 2:
            raise ValueError("too long %d" % y.shape[0])
        return y
    g = C(f)
    R.call(g, torch.ones(2))
    R.call(g, torch.ones(3))
    R.call(g, torch.ones(1))


@scenario
def try_except_valueerror_inside(C, R):
    def f(x, n):
        try:
            if n < 0:
                raise ValueError
            y = x + n
        except ValueError:
            y = x - 100
        return y
    g = C(f)
    R(g(torch.ones(2), 1))
    R(g(torch.ones(2), -1))


@scenario
def try_finally_side_effect(C, R):
    log = []

    def f(x):
        try:
            return x.sum()
        finally:
            log.append("done")
    g = C(f)
    R(g(torch.ones(3)))
    R(g(torch.ones(4)))
    R(log)


@scenario
def except_reraise_different(C, R):
    def f(x):
        try:
            return x.view(-1, 7)
        except RuntimeError as e:
            raise KeyError("wrapped") from e
    g = C(f)
    R.call(g, torch.ones(6))
    R.call(g, torch.ones(14))


@scenario
def exception_caught_from_shape_error(C, R):
    def f(a, b):
        try:
            return a @ b
        except RuntimeError:
            return a.sum() + b.sum()
    g = C(f)
    R(g(torch.ones(2, 3), torch.ones(3, 2)))
    R(g(torch.ones(2, 3), torch.ones(2, 3)))


@scenario
def stopiteration_next_default(C, R):
    def f(xs):
        it = iter(xs)
        a = next(it)
        b = next(it, None)
        c = next(it, None)
        return a if c is None else a + b + c
    g = C(f)
    R(g([torch.ones(2), torch.ones(2)]))
    R(g([torch.ones(2), torch.ones(2), torch.ones(2)]))


@scenario
def stopiteration_raised_from_next(C, R):
    def f(xs):
        it = iter(xs)
        next(it)
        return next(it)
    g = C(f)
    R.call(g, [torch.ones(2)])
    R.call(g, (torch.ones(2), torch.zeros(2)))


@scenario
def generator_yield_tensors_inside(C, R):
    def gen(x, n):
        for i in range(n):
            yield x * i

    def f(x):
        return sum(gen(x, 4)), list(gen(x, 2))
    R(C(f)(torch.randn(3)))


@scenario
def generator_send_and_close(C, R):
    def acc():
        total = 0
        while True:
            v = yield total
            total = total + v

    def f(x):
        g = acc()
        next(g)
        g.send(x)
        r = g.send(x * 2)
        g.close()
        return r
    R(C(f)(torch.randn(3)))


@scenario
def generator_passed_in(C, R):
    def f(it):
        out = None
        for t in it:
            out = t if out is None else out + t
        return out
    g = C(f)
    R(g(torch.full((2,), float(i)) for i in range(3)))
    R(g(iter([torch.ones(2)])))


@scenario
def compiled_generator_function(C, R):
    def gen(x):
        yield x + 1
        yield x * 2
    g = C(gen)
    R(list(g(torch.ones(2))))


@scenario
def itertools_inside(C, R):
    def f(xs):
        acc = []
        for a, b in itertools.combinations(xs, 2):
            acc.append(a * b)
        for a, b in itertools.zip_longest(xs[:2], xs[:1], fillvalue=xs[0]):
            acc.append(a - b)
        return torch.stack(acc), list(itertools.accumulate([x.sum() for x in xs]))
    R(C(f)([torch.randn(3) for _ in range(3)]))


@scenario
def recursion_on_depth(C, R):
    def f(x, d):
        if d == 0:
            return x
        return f(x * 2 + d, d - 1)
    g = C(f)
    R(g(torch.ones(2), 3))
    R(g(torch.ones(2), 0))
    R(g(torch.ones(2), 5))


@scenario
def recursion_tree_structure(C, R):
    def walk(t):
        if isinstance(t, torch.Tensor):
            return t.sum()
        if isinstance(t, dict):
            return sum(walk(v) for v in t.values())
        return sum(walk(v) for v in t)
    g = C(walk)
    R(g({"a": torch.ones(2), "b": [torch.ones(3), (torch.ones(1), {"c": torch.ones(4)})]}))


@scenario
def recursion_error_deep(C, R):
    def f(x, d):
        return f(x + 1, d + 1)
    g = C(f)
    r = R.call(g, torch.ones(1), 0)
    R(r)


@scenario
def nested_compile_call(C, R):
    inner = C(lambda x: x.sin() * 2)

    def outer(x):
        return inner(x) + inner(x * 2)
    g = C(outer)
    R(g(torch.randn(4)))
    R(inner(torch.randn(4)))


@scenario
def compile_same_fn_twice(C, R):
    def f(x):
        return x.cos() + 1
    a = C(f)
    b = C(f)
    x = torch.randn(3)
    R(a(x))
    R(b(x))
    R(a(x.double()))


@scenario
def compiled_module_inside_compiled_fn(C, R):
    lin = nn.Linear(3, 3)
    m = C(lin)
    g = C(lambda x: m(x).relu() + m(-x))
    R(g(torch.randn(2, 3)))


@scenario
def exception_in_module_forward(C, R):
    class M(nn.Module):
        def forward(self, x):
            if x.dim() != 2:
                raise TypeError(f"need 2d, got {x.dim()}")
            return x.t()
    m = C(M())
    R.call(m, torch.ones(3))
    R.call(m, torch.ones(2, 3))
    R.call(m, torch.ones(2, 3, 1))


@scenario
def assert_with_tensor_condition(C, R):
    def f(x):
        assert (x > 0).all(), "not positive"
        return x.log()
    g = C(f)
    R.call(g, torch.ones(3))
    R.call(g, -torch.ones(3))


@scenario
def while_loop_data_dependent_exit(C, R):
    def f(x):
        n = 0
        while x.abs().max() > 1:
            x = x / 2
            n += 1
        return x, n
    g = C(f)
    R(g(torch.tensor([5.0, -9.0])))
    R(g(torch.tensor([0.5])))


@scenario
def for_else_and_break(C, R):
    def f(xs, thr):
        for i, x in enumerate(xs):
            if x.sum() > thr:
                break
        else:
            return None
        return i, x
    g = C(f)
    xs = [torch.full((2,), float(i)) for i in range(4)]
    R(g(xs, 3.0))
    R(g(xs, 100.0))


@scenario
def zip_strict_raises(C, R):
    def f(a, b):
        return [x + y for x, y in zip(a, b, strict=True)]
    g = C(f)
    R.call(g, [torch.ones(1)] * 2, [torch.ones(1)] * 2)
    R.call(g, [torch.ones(1)] * 2, [torch.ones(1)] * 3)


@scenario
def lambda_default_capture_in_loop(C, R):
    def f(x):
        fs = [lambda t, i=i: t * i for i in range(3)]
        return [h(x) for h in fs]
    R(C(f)(torch.ones(2)))


@scenario
def context_manager_exception_suppressed(C, R):
    import contextlib

    def f(x):
        with contextlib.suppress(IndexError):
            y = [x][3]
            return y
        return x * 5
    R(C(f)(torch.ones(2)))


@scenario
def exception_attrs_used(C, R):
    class MyErr(Exception):
        def __init__(self, v):
            super().__init__(v)
            self.v = v

    def f(x):
        try:
            raise MyErr(x.shape[0])
        except MyErr as e:
            return x * e.v
    R(C(f)(torch.ones(3)))


@scenario
def torchc_disable_nested(C, R):
    @torchc.disable
    def inner(x):
        return x.numpy().sum()

    def f(x):
        return x * 2 + float(inner(x))
    R(C(f)(torch.ones(3)))
