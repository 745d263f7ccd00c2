"""Python semantics that the symbolic interpreter must keep: aliasing, in-place operators,
iterators, exceptions, globals holding tensors."""
import copy
import itertools
import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario

GT = torch.ones(3)
GLIST = []


class MyErr(Exception):
    pass


@scenario
def augassign_aliases_tensor(C, R):
    def f(x, xs):
        y = x
        y += 1          # in place: x changes
        z = x
        z = z * 2       # rebinding: x unchanged
        xs[0] += 5      # in place on the list's tensor
        t = (x,)
        t += (z,)
        return t, y is x
    g = C(f)
    x = torch.zeros(2)
    xs = [torch.zeros(2)]
    R(g(x, xs))
    R((x, xs))


@scenario
def augassign_int_tensor_true_divide_raises(C, R):
    def f(x):
        x /= 2
        return x
    R.call(C(f), torch.tensor([4, 5]))


@scenario
def list_aliasing(C, R):
    def f(x):
        a = b = []
        a.append(x)
        c = a
        c += [x * 2]
        d = a[:]
        d.append(x * 3)
        return len(b), len(d), torch.stack(b)
    g = C(f)
    R(g(torch.ones(2)))


@scenario
def walrus_chained_cmp_match(C, R):
    def f(x, mode):
        if 0 < (n := x.shape[0]) < 5:
            x = x * n
        match mode:
            case "double":
                x = x * 2
            case ("shift", k):
                x = x + k
            case {"scale": s}:
                x = x * s
            case _:
                x = -x
        return x
    g = C(f)
    x = torch.ones(3)
    for mode in ("double", ("shift", 4), {"scale": 0.5}, None):
        R(g(x, mode))


@scenario
def fstring_tensor_format(C, R):
    def f(x):
        s = f"{x.sum().item():.3f}|{x.shape}|{x.dtype}|{len(x)}"
        print(s)
        return x + len(s), s
    g = C(f)
    R(g(torch.tensor([1.0, 2.123456])))


@scenario
def super_forward_subclass(C, R):
    class MyLinear(nn.Linear):
        def forward(self, x):
            return super().forward(x) * 2 + self.extra

        @property
        def extra(self):
            return self.bias.sum()

    m = C(MyLinear(3, 2))
    R(m(torch.randn(4, 3)))


@scenario
def module_getattr_override(C, R):
    class Wrap(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self.inner, name)

        def forward(self, x):
            return self.inner(x) + self.weight.sum()
    m = C(Wrap(nn.Linear(3, 3)))
    R(m(torch.randn(2, 3)))


@scenario
def lazy_linear(C, R):
    torch.manual_seed(0)
    net = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    m = C(net)
    x = torch.randn(3, 5)
    R(m(x))
    R(m(x))
    R(net)


@scenario
def register_buffer_in_forward(C, R):
    class M(nn.Module):
        def forward(self, x):
            if not hasattr(self, "run_mean"):
                self.register_buffer("run_mean", torch.zeros(x.shape[-1]))
            self.run_mean.mul_(0.9).add_(0.1 * x.mean(0))
            return x - self.run_mean
    mod = M()
    m = C(mod)
    for _ in range(3):
        R(m(torch.randn(4, 3)))
    R(mod.state_dict())


@scenario
def no_grad_decorated_forward(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        @torch.no_grad()
        def forward(self, x):
            return self.lin(x)
    m = C(M())
    y = m(torch.randn(2, 3))
    R((y, y.requires_grad))


@scenario
def compiler_disable_inside(C, R):
    calls = []

    @torch.compiler.disable
    def helper(x):
        calls.append(1)
        return x.numpy().sum() if False else x * 3

    def f(x):
        return helper(x + 1) - 1
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(len(calls))


@scenario
def iter_tools(C, R):
    def f(xs):
        acc = list(itertools.accumulate(xs, operator.add))
        ch = list(itertools.chain(xs[:1], xs[1:]))
        pr = [a * b for a, b in itertools.product(xs[:2], xs[:2])]
        z = list(zip(xs, xs[1:], strict=False))
        e = [i * x for i, x in enumerate(xs, start=1)]
        r = [xs[i] for i in range(len(xs) - 1, -1, -1)]
        it = iter(xs)
        first = next(it)
        rest = next(it, None)
        nothing = next(iter([]), "dflt")
        return acc[-1], len(ch), torch.stack(pr).sum(), len(z), sum(e), torch.stack(r), first, rest, nothing, math.prod(xs[0].shape), math.sqrt(xs[0].numel())
    g = C(f)
    R(g([torch.ones(2) * i for i in range(4)]))


@scenario
def getattr_names_and_param_groups(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            for i in range(3):
                setattr(self, f"layer{i}", nn.Linear(2, 2))
            self.norm = nn.LayerNorm(2)

        def forward(self, x):
            for i in range(3):
                x = getattr(self, f"layer{i}")(x)
            decay = [n for n, p in self.named_parameters() if not n.endswith("bias") and not n.startswith("norm")]
            return self.norm(x), decay, hasattr(self, "layer3")
    m = C(M())
    R(m(torch.randn(2, 2)))


@scenario
def copy_inside(C, R):
    def f(x, d):
        y = copy.copy(x)
        y.add_(1)       # shares storage with x? (copy.copy of a tensor is a new tensor sharing nothing? eager decides)
        dd = copy.deepcopy(d)
        dd["a"].mul_(10)
        return y, dd, d
    g = C(f)
    x = torch.zeros(2)
    d = {"a": torch.ones(2)}
    R(g(x, d))
    R((x, d))


@scenario
def custom_exception_flow(C, R):
    log = []

    def inner(x):
        if x.shape[0] > 2:
            raise MyErr(f"too long: {x.shape[0]}")
        return x * 2

    def f(x):
        try:
            return inner(x)
        except MyErr as e:
            log.append(str(e))
            return x[:2]
        finally:
            log.append("done")
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(5)))
    R(list(log))

    def h(x):
        return inner(x) + 1
    R.call(C(h), torch.ones(4))


@scenario
def global_tensor_mutated_between_calls(C, R):
    global GT
    GT = torch.ones(3)

    def f(x):
        return x * GT
    g = C(f)
    x = torch.arange(3.0)
    R(g(x))
    GT.mul_(5)
    R(g(x))
    GT = torch.full((3,), -1.0)
    R(g(x))
    GT = torch.ones(4)
    R.call(g, x)
    GT = torch.ones(3)


@scenario
def global_list_append(C, R):
    GLIST.clear()

    def f(x):
        GLIST.append(x.sum())
        return x + len(GLIST)
    g = C(f)
    for _ in range(3):
        R(g(torch.ones(2)))
    R(list(GLIST))


@scenario
def default_tensor_arg_mutated(C, R):
    w0 = torch.ones(3)

    def f(x, w=w0):
        return x * w
    g = C(f)
    x = torch.arange(3.0)
    R(g(x))
    w0.fill_(2)
    R(g(x))
    f.__defaults__ = (torch.full((3,), 7.0),)
    R(g(x))


@scenario
def class_level_tensor_constant(C, R):
    class M(nn.Module):
        SCALE = torch.tensor([1.0, 2.0, 3.0])

        def forward(self, x):
            return x * self.SCALE
    m = C(M())
    x = torch.ones(3)
    R(m(x))
    M.SCALE.mul_(-1)
    R(m(x))
    M.SCALE = torch.zeros(3)
    R(m(x))


@scenario
def dict_iteration_mutation(C, R):
    def f(d):
        out = {}
        for k, v in sorted(d.items(), key=lambda kv: kv[0], reverse=True):
            out[k.upper()] = v * 2
        keys = list(d)
        d.clear()
        return out, keys, len(d)
    g = C(f)
    d = {"b": torch.ones(1), "a": torch.zeros(1)}
    R(g(d))
    R(d)


@scenario
def tensor_as_bool_in_python_logic(C, R):
    def f(x, y):
        a = x.any() and y.all()
        b = x.sum() > 0 or y.sum() > 0
        c = not (x == y).all()
        d = x.max() if x.numel() else y.max()
        return a, b, c, d, bool(x.any()) + 1
    g = C(f)
    R(g(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 1.0])))
    R(g(torch.tensor([0.0, 0.0]), torch.tensor([0.0, 1.0])))


@scenario
def int_float_python_arith_from_shapes(C, R):
    def f(x):
        n, d = x.shape
        scale = d ** -0.5
        h = d // 2
        k = round(n / 3)
        m = int(math.ceil(n * 0.7))
        r = n % 3
        return x[:, :h] * scale, k, m, r, divmod(n, 2), x.reshape(n * d)[: m * 2], float(d) / 3
    g = C(f)
    R(g(torch.randn(5, 4)))
    R(g(torch.randn(7, 6)))


@scenario
def nested_functions_closures_in_loop(C, R):
    def f(x):
        fns = []
        for i in range(3):
            fns.append(lambda t, i=i: t * i)
        late = [lambda t: t * i for i in range(3)]
        return [fn(x) for fn in fns], [fn(x) for fn in late]
    g = C(f)
    R(g(torch.ones(2)))


@scenario
def set_operations(C, R):
    def f(x, names):
        s = set(names)
        s.add("z")
        s.discard("a")
        common = s & {"b", "z"}
        return x * len(common), sorted(s), "b" in s, frozenset(names) == frozenset(sorted(names))
    g = C(f)
    R(g(torch.ones(2), ["a", "b", "c", "b"]))
