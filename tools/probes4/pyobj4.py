"""Python objects and builtins around tensors: contextlib, itertools, operator, singledispatch,
custom __eq__/__hash__ keys, del statements, except*, tensor dunders (__index__, __format__,
__floor__, divmod), iteration over tensors, numpy scalars."""
import contextlib
import dataclasses
import functools
import itertools
import math
import operator
from dataclasses import field

import numpy as np
import torch
import torch.nn as nn

from probe2 import scenario


@scenario
def exitstack_and_nullcontext(C, R):
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append("enter " + name)
        try:
            yield name.upper()
        finally:
            log.append("exit " + name)

    def f(x, n):
        with contextlib.ExitStack() as st:
            names = [st.enter_context(tag(f"t{i}")) for i in range(n)]
            with contextlib.nullcontext(x) as y:
                z = y * len(names)
            with contextlib.suppress(KeyError):
                {}["missing"]
                z = z * 100
        return z, names
    g = C(f)
    R(g(torch.ones(2), 2))
    R(g(torch.ones(2), 0))
    R(list(log))


@scenario
def contextmanager_exception_handled(C, R):
    @contextlib.contextmanager
    def guard():
        try:
            yield
        except ValueError as e:
            raise RuntimeError("converted") from e

    def f(x, bad):
        with guard():
            if bad:
                raise ValueError("bad")
            return x + 1
    g = C(f)
    R(g(torch.ones(2), False))
    R.call(g, torch.ones(2), True)


@scenario
def itertools_variety(C, R):
    def f(xs):
        acc = list(itertools.accumulate(xs))
        pw = [b - a for a, b in itertools.pairwise(xs)]
        ch = torch.stack(list(itertools.chain.from_iterable([xs[:1], xs[-1:]])))
        pr = [a * b for a, b in itertools.product(xs[:2], repeat=2)]
        sm = list(itertools.starmap(torch.add, zip(xs, xs[1:])))
        ct = list(itertools.islice(itertools.count(2, 3), 3))
        gb = [(k, len(list(v))) for k, v in itertools.groupby([1, 1, 2, 3, 3, 3])]
        zl = list(itertools.zip_longest(xs[:1], xs, fillvalue=None))
        return acc, pw, ch, pr, sm, ct, gb, len(zl), zl[-1][0] is None
    g = C(f)
    R(g([torch.ones(2) * i for i in range(4)]))


@scenario
def operator_getters(C, R):
    getx = operator.attrgetter("x")
    geta = operator.itemgetter("a", "b")
    mc = operator.methodcaller("sum", dim=0)

    class O:
        def __init__(self, x):
            self.x = x

    def f(o, d):
        a, b = geta(d)
        return mc(getx(o)) + a * b, operator.neg(a), operator.truediv(a, 2), operator.getitem(d, "b")
    g = C(f)
    R(g(O(torch.ones(3, 2)), {"a": torch.ones(2), "b": torch.full((2,), 3.0), "c": 1}))


@scenario
def singledispatch_helper(C, R):
    @functools.singledispatch
    def norm(x):
        raise TypeError(type(x).__name__)

    @norm.register
    def _(x: torch.Tensor):
        return x / x.norm()

    @norm.register
    def _(x: list):
        return [norm(v) for v in x]

    @norm.register(float)
    def _(x):
        return 1.0

    def f(a, b, c):
        return norm(a), norm(b), norm(c)
    g = C(f)
    R(g(torch.ones(3), [torch.ones(2), torch.arange(3.0)], 2.0))
    R.call(g, torch.ones(3), [], "s")


@scenario
def custom_eq_hash_keys(C, R):
    class Key:
        def __init__(self, name, n):
            self.name, self.n = name, n

        def __eq__(self, other):
            return isinstance(other, Key) and self.name == other.name

        def __hash__(self):
            return hash(self.name)

    table = {Key("a", 1): 2.0, Key("b", 2): 3.0}

    def f(x, k):
        return x * table[k], k in table, Key(k.name, 99) == k, len({k, Key(k.name, 5)})
    g = C(f)
    R(g(torch.ones(2), Key("a", 7)))
    R(g(torch.ones(2), Key("b", 7)))
    R.call(g, torch.ones(2), Key("c", 7))


@scenario
def del_statements(C, R):
    class O:
        pass

    def f(x, d, o):
        y = x * 2
        del x
        tmp = d.pop("a")
        del d["b"]
        del o.attr
        z = y + tmp
        del y
        return z, sorted(d), hasattr(o, "attr")
    g = C(f)
    o = O()
    o.attr = 1
    d = {"a": torch.ones(2), "b": 1, "c": 2}
    R(g(torch.ones(2), d, o))
    R((sorted(d), hasattr(o, "attr")))
    o.attr = 3
    R.call(g, torch.ones(2), {"a": torch.ones(2)}, o)


@scenario
def except_star_group(C, R):
    def f(x, kinds):
        errs = []
        for k in kinds:
            if k == "v":
                errs.append(ValueError("v"))
            elif k == "t":
                errs.append(TypeError("t"))
        try:
            if errs:
                raise ExceptionGroup("many", errs)
            y = x + 1
        except* ValueError as eg:
            y = x - len(eg.exceptions)
        except* TypeError:
            y = x * 10
        return y
    g = C(f)
    R(g(torch.ones(2), []))
    R(g(torch.ones(2), ["v", "v"]))
    R(g(torch.ones(2), ["t"]))
    R.call(g, torch.ones(2), ["v", "t"])


@scenario
def tensor_dunders(C, R):
    def f(x, i, s):
        return (list(range(i)), [0, 1, 2, 3][i], operator.index(i), math.floor(s), math.ceil(s), round(s),
                divmod(x, 3), abs(-x), x.__format__(""), f"{s:.3f}", f"{s.item():>8.2f}", float(i), int(s), complex(s),
                bool(i), hex(int(i)), x.tolist(), x.shape.numel())
    g = C(f)
    R.call(g, torch.arange(4.0) - 2, torch.tensor(2), torch.tensor(-2.5))
    R.call(g, torch.arange(4.0) - 2, torch.tensor(3, dtype=torch.uint8), torch.tensor(1.5, dtype=torch.float64))


@scenario
def tensor_dunder_errors(C, R):
    R.call(C(lambda x: len(x)), torch.tensor(1.0))
    R.call(C(lambda x: [1, 2][x]), torch.tensor(1.0))
    R.call(C(lambda x: bool(x)), torch.ones(2))
    R.call(C(lambda x: bool(x)), torch.ones(0))
    R.call(C(lambda x: int(x)), torch.ones(2))
    R.call(C(lambda x: range(x)), torch.tensor([2]))
    R.call(C(lambda x: f"{x:.2f}"), torch.ones(2))
    R.call(C(lambda x: hash(x) == hash(x)), torch.ones(2))
    R.call(C(lambda x: iter(x)), torch.tensor(1.0))


@scenario
def iterate_and_unpack_tensors(C, R):
    def f(x):
        a, b = x
        rows = [r * i for i, r in enumerate(x)]
        rev = list(reversed(x))
        tot = sum(x, torch.zeros(x.shape[1:]))
        mx = max(x.unbind(0), key=lambda t: t.sum().item())
        return a, b, rows, rev, tot, mx, [len(r) for r in x], x[0] in [x[1], x[0]]
    g = C(f)
    R.call(g, torch.arange(6.0).reshape(2, 3))
    R.call(g, torch.arange(6.0).reshape(3, 2))


@scenario
def sorted_tensors_python(C, R):
    def f(xs):
        s = sorted(xs, key=lambda t: float(t.sum()))
        m = min(xs, key=lambda t: t.abs().max())
        return s, m, sorted(t.item() for t in xs), max(t.item() for t in xs)
    g = C(f)
    R(g([torch.tensor(3.0), torch.tensor(-1.0), torch.tensor(2.0)]))


@scenario
def numpy_scalars_args(C, R):
    def f(x, a, b, c):
        return x * a, x + b, x.to(torch.float64) * c, type(a).__name__, a + 1
    g = C(f)
    R.call(g, torch.ones(2), np.float32(1.5), np.int64(3), np.float64(0.1))
    R.call(g, torch.ones(2), np.float16(2.0), np.int8(-3), np.bool_(True))


@scenario
def tensor_from_python_lists(C, R):
    def f(x):
        n, m = x.shape
        a = torch.tensor([n, m, n * m])
        b = torch.tensor([[1.0, n], [m, 0.5]])
        c = torch.tensor([x[0, 0], x[1, 1]]) if n > 1 and m > 1 else torch.zeros(2)
        d = torch.as_tensor(x.shape)
        e = torch.tensor(True)
        return a, b, c, d, e, torch.tensor([]), torch.tensor([1, 2.5]), torch.tensor([True, 2])
    g = C(f)
    R.call(g, torch.arange(6.0).reshape(2, 3))
    R.call(g, torch.arange(3.0).reshape(3, 1))


@scenario
def dataclass_default_factory_post_init(C, R):
    @dataclasses.dataclass
    class State:
        x: torch.Tensor
        hist: list = field(default_factory=list)
        scale: float = 1.0
        total: torch.Tensor = field(init=False)

        def __post_init__(self):
            self.total = self.x.sum() * self.scale

    def f(x, s):
        st = State(x, scale=s)
        st.hist.append(st.total)
        st2 = dataclasses.replace(st, scale=2.0)
        return st, st2.total, dataclasses.fields(st)[1].name, dataclasses.astuple(st2)[2]
    g = C(f)
    R(g(torch.ones(3), 0.5))
    R(g(torch.ones(4), 3.0))


@scenario
def mutable_default_list_arg(C, R):
    def f(x, acc=[]):
        acc.append(x.sum())
        return torch.stack(acc), len(acc)
    g = C(f)
    f.__defaults__[0].clear()
    R(g(torch.ones(2)))
    R(g(torch.ones(2) * 2))
    R(g(torch.ones(3)))
    R(len(f.__defaults__[0]))


@scenario
def init_subclass_and_class_getitem(C, R):
    class Base:
        kinds = []

        def __init_subclass__(cls, k=1, **kw):
            super().__init_subclass__(**kw)
            cls.k = k
            Base.kinds.append(cls.__name__)

        def __class_getitem__(cls, item):
            return f"{cls.__name__}[{item}]"

    def f(x):
        class Local(Base, k=3):
            pass
        return x * Local.k, Base["int"], len(Base.kinds)
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))


@scenario
def tensor_python_attributes(C, R):
    def f(x):
        y = x * 2
        y.tag = "scaled"
        x.seen = getattr(x, "seen", 0) + 1
        return y, y.tag, x.seen
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    R(g(x))
    R(x.seen)


@scenario
def swap_and_chained_assignment(C, R):
    def f(a, b):
        a, b = b, a
        c = d = a * 2
        c = c + 1
        a, (b, e) = b, (a, b)
        return a, b, c, d, e
    R(C(f)(torch.ones(2), torch.zeros(2)))


@scenario
def star_call_forwarding(C, R):
    def inner(a, b, *, scale=1.0, shift=0.0):
        return a * scale + b + shift

    def f(args, kw):
        return inner(*args, **kw), inner(*args[::-1], **{**kw, "shift": 5.0})
    g = C(f)
    R(g([torch.ones(2), torch.arange(2.0)], {"scale": 2.0}))
    R(g((torch.ones(2), torch.arange(2.0)), {}))
    R.call(g, [torch.ones(2)], {})
    R.call(g, [torch.ones(2), torch.ones(2)], {"bogus": 1})


@scenario
def nn_module_getattr_dict_and_typing_cast(C, R):
    import typing

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = {"w": torch.full((2,), 3.0)}
            self.register_buffer("b", torch.ones(2))

        def __getattr__(self, name):
            if name in ("w",):
                return self.__dict__["table"][name]
            return super().__getattr__(name)

        def forward(self, x):
            if typing.TYPE_CHECKING:
                raise AssertionError
            w = typing.cast(torch.Tensor, self.w)
            return x * w + self.b
    m = M()
    g = C(m)
    R(g(torch.ones(2)))
    m.table["w"] = torch.full((2,), 5.0)
    R(g(torch.ones(2)))


@scenario
def print_tensor_and_formats(C, R):
    def f(x):
        print("x:", x)
        print(f"shape={tuple(x.shape)} dtype={x.dtype} dev={x.device}")
        print(repr(x.sum()), x.mean().item())
        return x * 2
    g = C(f)
    R(g(torch.arange(3.0)))
    R(g(torch.arange(3)))


@scenario
def generator_return_value_and_yield_from(C, R):
    def gen(x):
        y = yield x * 2
        z = yield (x + (y if y is not None else 0))
        return x * 100

    def outer(x):
        r = yield from gen(x)
        yield r

    def f(x):
        return list(outer(x)), [v.sum() for v in gen(x)]
    g = C(f)
    R(g(torch.ones(2)))
