"""Python features inside compiled functions."""
import dataclasses
import functools
import math
from collections import namedtuple, OrderedDict, defaultdict
from typing import NamedTuple

import torch
import torch.nn.functional as F

from probe2 import scenario

COUNTER = 0
CONFIG = {"scale": 2.0}
HISTORY = []


@scenario
def generator_consumed_inside(C, R):
    def chunks(x, n):
        for i in range(0, x.shape[0], n):
            yield x[i:i + n]

    def f(x):
        return torch.stack([c.sum(0) for c in chunks(x, 2)])
    g = C(f)
    R(g(torch.randn(6, 3)))
    R(g(torch.randn(7, 3)))


@scenario
def generator_expression_sum_any(C, R):
    def f(xs):
        tot = sum(x.sum() for x in xs)
        flag = any(x.shape[0] > 2 for x in xs)
        mx = max((x.numel() for x in xs), default=0)
        return tot, flag, mx
    g = C(f)
    R(g([torch.randn(2), torch.randn(3)]))
    R(g([torch.randn(1)]))


@scenario
def closure_nonlocal_counter(C, R):
    def make():
        calls = 0

        def step(x):
            nonlocal calls
            calls += 1
            return x * calls
        return step, lambda: calls
    step, get = make()
    g = C(step)
    x = torch.ones(3)
    R(g(x))
    R(g(x))
    R(get())
    R(g(x))


@scenario
def global_mutation(C, R):
    global COUNTER
    COUNTER = 0
    HISTORY.clear()

    def f(x):
        global COUNTER
        COUNTER += 1
        HISTORY.append(x.shape[0])
        return x * CONFIG["scale"] + COUNTER
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(3)))
    CONFIG["scale"] = 5.0
    R(g(torch.ones(3)))
    CONFIG["scale"] = 2.0
    R(COUNTER)
    R(list(HISTORY))


@scenario
def try_except_finally(C, R):
    log = []

    def f(x, d):
        try:
            y = x * d["k"]
        except KeyError:
            y = x - 1
        finally:
            log.append("fin")
        try:
            z = y / 0
        except ZeroDivisionError:
            z = y
        return z
    g = C(f)
    R(g(torch.ones(2), {"k": 3}))
    R(g(torch.ones(2), {}))
    R(list(log))


@scenario
def try_except_tensor_error(C, R):
    def f(x, y):
        try:
            return x @ y
        except RuntimeError:
            return x.sum() + y.sum()
    g = C(f)
    R(g(torch.randn(2, 3), torch.randn(3, 2)))
    R(g(torch.randn(2, 3), torch.randn(4, 2)))


@scenario
def with_blocks(C, R):
    def f(x, w):
        with torch.no_grad():
            a = x * w
        with torch.enable_grad():
            b = x * w
        with torch.autocast("cpu", enabled=False):
            c = (x @ w.T)
        return a, b, c, a.requires_grad, b.requires_grad
    g = C(f)
    w = torch.randn(3, 3, requires_grad=True)
    R(g(torch.randn(3, 3), w))


@scenario
def user_context_manager(C, R):
    import contextlib
    events = []

    @contextlib.contextmanager
    def tag(name):
        events.append("enter " + name)
        try:
            yield name
        finally:
            events.append("exit " + name)

    def f(x):
        with tag("a") as t:
            y = x + len(t)
        return y
    g = C(f)
    R(g(torch.zeros(2)))
    R(list(events))


@scenario
def dataclass_in_and_out(C, R):
    @dataclasses.dataclass
    class Cfg:
        alpha: float = 0.5
        eps: float = 1e-5
        dims: tuple = (1,)

    @dataclasses.dataclass
    class Out:
        y: torch.Tensor
        stats: dict

    def f(x, cfg):
        m = x.mean(cfg.dims, keepdim=True)
        y = (x - m) * cfg.alpha / (x.std(cfg.dims, keepdim=True) + cfg.eps)
        return Out(y, {"mean": m, "n": x.numel()})
    g = C(f)
    R(g(torch.randn(3, 4), Cfg()))
    R(g(torch.randn(3, 4), Cfg(alpha=2.0, dims=(0, 1))))


@scenario
def typing_namedtuple_out(C, R):
    class P(NamedTuple):
        mu: torch.Tensor
        logvar: torch.Tensor
        k: int = 3

    def f(x):
        mu, lv = x.chunk(2, -1)
        p = P(mu, lv)
        q = p._replace(k=p.k + 1)
        return q, q.mu.exp() + q.logvar, p[2]
    g = C(f)
    R(g(torch.randn(2, 6)))


@scenario
def args_kwargs_defaults(C, R):
    def f(x, *rest, scale=1.0, bias=None, **extra):
        y = x * scale
        for r in rest:
            y = y + r
        if bias is not None:
            y = y + bias
        for k in sorted(extra):
            y = y * extra[k]
        return y, len(rest), tuple(sorted(extra))
    g = C(f)
    x = torch.randn(3)
    R(g(x))
    R(g(x, x, x, scale=2))
    R(g(x, bias=torch.ones(3), a=2.0, b=torch.tensor(3.0)))
    R(g(x, *[x, x], **{"z": 0.5}))


@scenario
def mutable_default_arg(C, R):
    def f(x, acc=[]):
        acc.append(x.sum())
        return x + len(acc)
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(len(f.__defaults__[0]))


@scenario
def recursion(C, R):
    def tree(x, depth):
        if depth == 0:
            return x
        return tree(x * 0.5, depth - 1) + tree(x.flip(0), depth - 1)
    g = C(tree)
    R(g(torch.arange(4.0), 3))


@scenario
def lambda_sorted_min_max_key(C, R):
    def f(tensors):
        s = sorted(tensors, key=lambda t: t.shape[0])
        big = max(tensors, key=lambda t: t.numel())
        small = min(tensors, key=lambda t: (t.shape[0], -t.dim()))
        return [t.sum() for t in s], big * 2, small
    g = C(f)
    R(g([torch.randn(3), torch.randn(1), torch.randn(5), torch.randn(2, 2)]))


@scenario
def sorted_by_tensor_value(C, R):
    def f(tensors):
        s = sorted(tensors, key=lambda t: t.sum().item())
        return torch.stack(s)
    g = C(f)
    R(g([torch.tensor([3.0, 1]), torch.tensor([-1.0, 0]), torch.tensor([0.5, 0.5])]))


@scenario
def dict_outputs_and_ordering(C, R):
    def f(x):
        d = {}
        d["b"] = x + 1
        d["a"] = x * 2
        d.update(c=x.sum())
        d.pop("b")
        d.setdefault("z", x.mean())
        od = OrderedDict(sorted(d.items()))
        dd = defaultdict(list)
        for k in od:
            dd[len(k)].append(k)
        return d, od, dict(dd)
    g = C(f)
    R(g(torch.randn(3)))


@scenario
def functools_partial_reduce(C, R):
    def act(x, slope):
        return F.leaky_relu(x, slope)

    def f(xs, slope):
        a = functools.partial(act, slope=slope)
        return functools.reduce(lambda p, q: p + a(q), xs, torch.zeros(3))
    g = C(f)
    xs = [torch.randn(3) for _ in range(4)]
    R(g(xs, 0.1))
    R(g(xs, 0.3))


@scenario
def string_formatting_and_print(C, R):
    def f(x):
        print(f"shape={tuple(x.shape)} dtype={x.dtype}")
        name = "layer_{}".format(x.dim())
        print("name:", name)
        return x + len(name)
    g = C(f)
    R(g(torch.zeros(2, 3)))
    R(g(torch.zeros(4)))


@scenario
def isinstance_and_type_dispatch(C, R):
    def f(v):
        if isinstance(v, (list, tuple)):
            return sum(f(t) for t in v)
        if isinstance(v, dict):
            return sum(f(t) for t in v.values())
        if isinstance(v, torch.Tensor):
            return v.sum()
        return torch.tensor(float(v))
    g = C(f)
    R(g([torch.ones(2), {"a": torch.ones(3), "b": (2, torch.ones(1))}]))


@scenario
def while_loop_with_break(C, R):
    def f(x, n):
        i = 0
        while True:
            x = x * 0.5 + 1
            i += 1
            if i >= n:
                break
        else:
            x = x * 100
        for j in range(3):
            if j == 1:
                continue
            x = x + j
        return x, i
    g = C(f)
    R(g(torch.zeros(2), 4))
    R(g(torch.zeros(2), 1))


@scenario
def data_dependent_branch(C, R):
    def f(x):
        if x.sum() > 0:
            return x * 2
        elif x.max() < -1:
            return x.abs()
        return -x
    g = C(f)
    R(g(torch.tensor([1.0, 2.0])))
    R(g(torch.tensor([-3.0, 1.0])))
    R(g(torch.tensor([-0.5, 0.1])))


@scenario
def item_and_tolist(C, R):
    def f(x):
        n = int(x.argmax())
        vals = x.tolist()
        return x[:n + 1] * vals[0], n, float(x.sum()), x.max().item()
    g = C(f)
    R(g(torch.tensor([1.0, 5.0, 2.0])))
    R(g(torch.tensor([9.0, 5.0, 2.0])))


@scenario
def method_on_user_class(C, R):
    class Scaler:
        def __init__(self, s):
            self.s = s
            self.calls = 0

        def __call__(self, x):
            self.calls += 1
            return x * self.s

        @property
        def double(self):
            return self.s * 2

        @staticmethod
        def shift(x):
            return x + 1

        @classmethod
        def unit(cls):
            return cls(1.0)
    sc = Scaler(3.0)

    def f(x):
        return Scaler.shift(sc(x)) + sc.double + Scaler.unit()(x)
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(sc.calls)
    sc.s = 0.5
    R(g(torch.ones(2)))


@scenario
def exception_raised_same_type(C, R):
    def f(x, k):
        if k < 0:
            raise ValueError("negative k")
        return x.topk(k)
    g = C(f)
    R.call(g, torch.randn(5), 2)
    R.call(g, torch.randn(5), -1)
    R.call(g, torch.randn(5), 9)


@scenario
def assert_statement(C, R):
    def f(x):
        assert x.dim() == 2, "need 2d"
        assert x.shape[1] == 3
        return x.sum(1)
    g = C(f)
    R.call(g, torch.ones(2, 3))
    R.call(g, torch.ones(3))
    R.call(g, torch.ones(2, 4))


@scenario
def tensor_truthiness_errors(C, R):
    def f(x):
        if x:
            return x + 1
        return x - 1
    g = C(f)
    R.call(g, torch.tensor([1.0]))
    R.call(g, torch.tensor([0.0]))
    R.call(g, torch.tensor([1.0, 2.0]))


@scenario
def unpacking_star(C, R):
    def f(x):
        a, *mid, b = x.unbind(0)
        h, t = x.split([1, x.shape[0] - 1])
        (p, q), r = (a, b), len(mid)
        return p + q + r, torch.stack(mid) if mid else x[:0], h, t
    g = C(f)
    R(g(torch.randn(4, 2)))
    R(g(torch.randn(2, 2)))


@scenario
def comprehension_nested_and_zip(C, R):
    def f(a, b):
        pairs = [(x * y).sum() for x, y in zip(a, b) if x.shape == y.shape]
        grid = {(i, j): a[i] @ b[j] for i in range(len(a)) for j in range(len(b)) if i <= j}
        return pairs, grid
    g = C(f)
    a = [torch.randn(3) for _ in range(3)]
    b = [torch.randn(3), torch.randn(3), torch.randn(3)]
    R(g(a, b))


@scenario
def slice_objects_and_ellipsis(C, R):
    def f(x, sl):
        return x[sl], x[..., 1:], x[None, ..., None].shape, x[:, None, ::2]
    g = C(f)
    x = torch.randn(4, 5)
    R(g(x, slice(1, 3)))
    R(g(x, slice(None, None, 2)))
    R(g(x, slice(-2, None)))
