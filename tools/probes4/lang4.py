"""Python language features a 2026 user writes inside models: match statements, walrus,
dataclass/typing configs, descriptors, metaclasses, __slots__, properties with setters,
generators in forward, try/finally with break, user context managers, global/nonlocal."""
import dataclasses
import enum
import functools
import typing
import warnings
from typing import NamedTuple, Optional, Protocol, Union

import torch
import torch.nn as nn

from probe2 import scenario


@dataclasses.dataclass
class Cfg:
    hidden: int = 4
    act: str = "gelu"
    scale: Optional[float] = None
    drop: float = 0.0


@dataclasses.dataclass(frozen=True)
class FCfg:
    mode: str = "sum"
    k: int = 2


class Pair(NamedTuple):
    a: torch.Tensor
    b: Optional[torch.Tensor] = None


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y


class Flag(enum.Flag):
    NONE = 0
    SCALE = enum.auto()
    SHIFT = enum.auto()
    BOTH = SCALE | SHIFT


class Mode(enum.IntEnum):
    A = 1
    B = 2


@scenario
def match_class_positional(C, R):
    def f(p, x):
        match p:
            case Point(0, y):
                return x * y
            case Point(x=xx, y=0):
                return x + xx
            case Point(a, b) if a > b:
                return x - a
            case _:
                return x
    g = C(f)
    x = torch.arange(4.0)
    R(g(Point(0, 3), x))
    R(g(Point(2, 0), x))
    R(g(Point(5, 1), x))
    R(g(Point(1, 5), x))


@scenario
def match_mapping_and_sequence(C, R):
    def f(cfg, x):
        match cfg:
            case {"op": "scale", "v": v}:
                return x * v
            case {"op": "shift", **rest}:
                return x + rest.get("v", 1) + len(rest)
            case [a, b, *others]:
                return x * a + b + len(others)
            case (int() | float()) as s:
                return x - s
            case None:
                return x
            case _:
                return -x
    g = C(f)
    x = torch.ones(3)
    R(g({"op": "scale", "v": 2.0}, x))
    R(g({"op": "shift", "v": 3, "w": 1}, x))
    R(g([2, 3], x))
    R(g((2, 3, 4, 5), x))
    R(g(7, x))
    R(g(2.5, x))
    R(g(None, x))
    R(g("str", x))


@scenario
def match_on_tensor_shape(C, R):
    def f(x):
        match x.shape:
            case (n,):
                return x * n
            case (a, b) if a == b:
                return x @ x
            case (a, b):
                return x.sum(0) + b
            case torch.Size([_, _, c]):
                return x.mean(-1) * c
        return x
    g = C(f)
    R(g(torch.arange(3.0)))
    R(g(torch.ones(2, 2)))
    R(g(torch.ones(2, 3)))
    R(g(torch.ones(1, 2, 5)))
    R(g(torch.ones(1, 2, 5, 1)))


@scenario
def match_enum_and_dataclass(C, R):
    def f(cfg, m, x):
        match cfg:
            case Cfg(act="relu", hidden=h):
                y = torch.relu(x) * h
            case Cfg(act="gelu", scale=None):
                y = torch.nn.functional.gelu(x)
            case Cfg(scale=s):
                y = x * s
        match m:
            case Mode.A:
                return y + 1
            case Mode.B:
                return y - 1
    g = C(f)
    x = torch.linspace(-2, 2, 5)
    R(g(Cfg(act="relu"), Mode.A, x))
    R(g(Cfg(), Mode.B, x))
    R(g(Cfg(act="tanh", scale=3.0), Mode.A, x))


@scenario
def enum_flag_ops(C, R):
    def f(x, fl):
        if Flag.SCALE in fl:
            x = x * 2
        if fl & Flag.SHIFT:
            x = x + 1
        return x, bool(fl), fl == Flag.BOTH, fl.value
    g = C(f)
    for fl in (Flag.NONE, Flag.SCALE, Flag.SHIFT, Flag.BOTH):
        R(g(torch.ones(2), fl))


@scenario
def walrus_in_comprehension(C, R):
    def f(xs):
        out = [y for x in xs if (y := x * 2).sum() > 0]
        tot = sum((s := t.sum()) * 0 + s for t in out) if out else torch.zeros(())
        return out, tot
    g = C(f)
    R(g([torch.ones(2), -torch.ones(2), torch.arange(2.0)]))
    R(g([-torch.ones(2)]))


@scenario
def nested_comprehensions_tensors(C, R):
    def f(x):
        rows = [[x[i, j] * (i + 1) for j in range(x.shape[1]) if j != i] for i in range(x.shape[0])]
        d = {f"r{i}": torch.stack(r) for i, r in enumerate(rows) if r}
        s = {k: v.sum() for k, v in sorted(d.items(), reverse=True)}
        return d, s, list(s)
    g = C(f)
    R(g(torch.arange(9.0).reshape(3, 3)))
    R(g(torch.arange(6.0).reshape(2, 3)))


@scenario
def generator_in_forward(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ls = nn.ModuleList(nn.Linear(3, 3) for _ in range(3))

        def stages(self, x):
            for i, l in enumerate(self.ls):
                x = l(x)
                yield i, x

        def forward(self, x):
            outs = []
            for i, h in self.stages(x):
                if i == 1:
                    outs.append(h.relu())
                    continue
                outs.append(h)
            return torch.cat(outs, -1)
    m = M()
    g = C(m)
    R(g(torch.randn(2, 3)))


@scenario
def try_finally_with_break(C, R):
    log = []

    def f(x):
        acc = x
        for i in range(5):
            try:
                acc = acc * 2
                if i == 2:
                    break
            finally:
                log.append(i)
                acc = acc + 1
        return acc
    g = C(f)
    R(g(torch.ones(2)))
    R(list(log))


@scenario
def try_except_continue_in_loop(C, R):
    def f(xs):
        acc = torch.zeros(2)
        for x in xs:
            try:
                if x is None:
                    raise KeyError("none")
                acc = acc + x
            except KeyError:
                acc = acc - 1
                continue
            finally:
                acc = acc * 1.5
        return acc
    g = C(f)
    R(g([torch.ones(2), None, torch.ones(2) * 2]))


@scenario
def user_context_manager_suppress_and_state(C, R):
    class Scaled:
        depth = 0

        def __init__(self, k):
            self.k = k

        def __enter__(self):
            Scaled.depth += 1
            return self.k

        def __exit__(self, et, ev, tb):
            Scaled.depth -= 1
            return et is ZeroDivisionError

    def f(x, d):
        with Scaled(3) as k:
            y = x * k
            z = 1 / d
            y = y + z
        return y, Scaled.depth
    g = C(f)
    R(g(torch.ones(2), 2))
    R(g(torch.ones(2), 0))
    R(Scaled.depth)


G_COUNT = 0
G_SCALE = 2.0


@scenario
def global_writes(C, R):
    global G_COUNT, G_SCALE

    def f(x):
        global G_COUNT, G_SCALE
        G_COUNT += 1
        y = x * G_SCALE
        G_SCALE = G_SCALE + 0.5
        return y
    G_COUNT = 0
    G_SCALE = 2.0
    g = C(f)
    for _ in range(3):
        R(g(torch.ones(2)))
    R(G_COUNT)
    R(G_SCALE)


@scenario
def nonlocal_writes(C, R):
    def outer():
        n = 0
        last = None

        def f(x):
            nonlocal n, last
            n += 1
            last = x * n
            return last + 1
        return f, lambda: (n, last)
    f, peek = outer()
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(peek())


@scenario
def slots_and_property_setter(C, R):
    class Box:
        __slots__ = ("_v", "hits")

        def __init__(self, v):
            self._v = v
            self.hits = 0

        @property
        def v(self):
            self.hits += 1
            return self._v

        @v.setter
        def v(self, nv):
            self._v = nv * 2

    def f(b, x):
        y = x * b.v
        b.v = 3
        return y + b.v
    b = Box(2)
    g = C(f)
    R(g(b, torch.ones(2)))
    R(g(b, torch.ones(2)))
    R((b._v, b.hits))


@scenario
def data_descriptor(C, R):
    class Positive:
        def __set_name__(self, owner, name):
            self.name = "_" + name

        def __get__(self, obj, typ=None):
            if obj is None:
                return self
            return getattr(obj, self.name)

        def __set__(self, obj, v):
            if v <= 0:
                raise ValueError("must be positive")
            setattr(obj, self.name, v)

    class Layer:
        scale = Positive()

        def __init__(self, s):
            self.scale = s

    def f(l, x, s):
        y = x * l.scale
        l.scale = s
        return y * l.scale
    g = C(f)
    l = Layer(2)
    R(g(l, torch.ones(2), 3))
    R(l.scale)
    R.call(g, l, torch.ones(2), -1)
    R(l.scale)


@scenario
def metaclass_registry(C, R):
    REG = {}

    class Meta(type):
        def __new__(mcs, name, bases, ns):
            cls = super().__new__(mcs, name, bases, ns)
            REG[name] = cls
            return cls

        def __call__(cls, *a, **kw):
            obj = super().__call__(*a, **kw)
            obj.made_by_meta = True
            return obj

    class Act(metaclass=Meta):
        k = 1.0

        def __init__(self, k=None):
            if k is not None:
                self.k = k

        def __call__(self, x):
            return x * self.k

    class Act2(Act):
        k = 2.0

    def f(x, name):
        a = REG[name](3.0 if name == "Act" else None)
        return a(x), a.made_by_meta, type(a).__name__
    g = C(f)
    R(g(torch.ones(2), "Act"))
    R(g(torch.ones(2), "Act2"))


@scenario
def class_level_cache(C, R):
    class Rope:
        _cache = {}

        @classmethod
        def table(cls, n, dt):
            key = (n, dt)
            if key not in cls._cache:
                cls._cache[key] = torch.arange(n, dtype=dt) / n
            return cls._cache[key]

    def f(x):
        return x * Rope.table(x.shape[-1], x.dtype)
    g = C(f)
    R(g(torch.ones(2, 4)))
    R(g(torch.ones(2, 4)))
    R(g(torch.ones(3, 5, dtype=torch.float64)))
    R(sorted((k[0], str(k[1])) for k in Rope._cache))


@scenario
def lru_and_cache_helpers(C, R):
    calls = []

    @functools.cache
    def coef(n):
        calls.append(n)
        return [1.0 / (i + 1) for i in range(n)]

    @functools.lru_cache(maxsize=2)
    def name(k):
        return f"k{k}"

    def f(x):
        c = coef(x.shape[0])
        return x * torch.tensor(c), name(x.shape[0])
    g = C(f)
    R(g(torch.ones(3)))
    R(g(torch.ones(3)))
    R(g(torch.ones(4)))
    R(sorted(set(calls)))


@scenario
def format_shapes_and_assert(C, R):
    def f(x, y):
        assert x.dim() == 2, f"expected 2-D, got {x.dim()}-D {tuple(x.shape)}"
        assert x.shape[-1] == y.shape[0], "mismatch %s vs %s" % (x.shape, y.shape)
        msg = "{}x{} dtype={}".format(*x.shape, x.dtype)
        return x @ y, msg, f"{x.shape!r}", str(x.shape), f"{x.shape[0]:>4d}|{x.numel():03}"
    g = C(f)
    R(g(torch.ones(2, 3), torch.ones(3, 1)))
    R.call(g, torch.ones(2, 3), torch.ones(4, 1))
    R.call(g, torch.ones(3), torch.ones(3, 1))


@scenario
def warnings_and_stacklevel(C, R):
    def f(x):
        if x.shape[0] > 2:
            warnings.warn(f"long input {x.shape[0]}", UserWarning, stacklevel=2)
        return x * 2

    g = C(f)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        R(g(torch.ones(3)))
        R(g(torch.ones(1)))
    R([(str(i.message), i.category.__name__) for i in w])


@scenario
def typing_protocol_and_union(C, R):
    class HasScale(Protocol):
        scale: float

    class S:
        scale = 3.0

    def f(x: torch.Tensor, s: HasScale, b: Union[int, torch.Tensor, None] = None) -> torch.Tensor:
        y: torch.Tensor = x * s.scale
        if isinstance(b, torch.Tensor):
            y = y + b
        elif isinstance(b, int):
            y = y - b
        return y
    g = C(f)
    R(g(torch.ones(2), S()))
    R(g(torch.ones(2), S(), 2))
    R(g(torch.ones(2), S(), torch.ones(2)))
    R(typing.get_type_hints(f)["b"] == Union[int, torch.Tensor, None])


@scenario
def namedtuple_optional_fields(C, R):
    def f(p: Pair):
        b = p.b if p.b is not None else torch.zeros_like(p.a)
        q = p._replace(b=b + 1)
        a, bb = q
        return q, a + bb, q._asdict()["b"], Pair._fields
    g = C(f)
    R(g(Pair(torch.ones(2))))
    R(g(Pair(torch.ones(2), torch.ones(2) * 3)))


@scenario
def dataclass_config_model(C, R):
    class M(nn.Module):
        def __init__(self, cfg: Cfg):
            super().__init__()
            self.cfg = cfg
            self.l = nn.Linear(cfg.hidden, cfg.hidden)

        def forward(self, x):
            h = self.l(x)
            act = {"gelu": nn.functional.gelu, "relu": torch.relu}[self.cfg.act]
            h = act(h)
            if self.cfg.scale is not None:
                h = h * self.cfg.scale
            return h, dataclasses.replace(self.cfg, hidden=h.shape[-1] * 2), dataclasses.asdict(self.cfg)
    cfg = Cfg()
    m = M(cfg)
    g = C(m)
    x = torch.randn(2, 4)
    R(g(x))
    cfg.scale = 0.5
    R(g(x))
    cfg.act = "relu"
    R(g(x))


@scenario
def frozen_dataclass_mutation_raises(C, R):
    def f(c, x):
        y = x * c.k
        c.k = 3
        return y
    R.call(C(f), FCfg(), torch.ones(2))


@scenario
def recursion_tree_sum(C, R):
    def tree(x, d):
        if d == 0:
            return x
        return tree(x * 0.5, d - 1) + tree(x + 1, d - 1)
    g = C(tree)
    R(g(torch.ones(2), 3))
    R(g(torch.ones(2), 0))


@scenario
def kwonly_varargs_defaults(C, R):
    def f(x, *rest, scale=2.0, bias: Optional[torch.Tensor] = None, **extra):
        y = x * scale
        for r in rest:
            y = y + r
        if bias is not None:
            y = y + bias
        for k in sorted(extra):
            y = y * extra[k]
        return y, len(rest), sorted(extra)
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2), torch.ones(2), torch.ones(2), scale=3))
    R(g(torch.ones(2), bias=torch.ones(2), a=2, b=torch.ones(2) * 3))
    R.call(g)
    R.call(g, torch.ones(2), scale=1, bias=2, zzz=torch.ones(3))


DEFAULT_T = torch.ones(2)


@scenario
def tensor_default_arg(C, R):
    def f(x, w=torch.full((2,), 3.0), b=DEFAULT_T):
        return x * w + b
    g = C(f)
    R(g(torch.ones(2)))
    f.__defaults__[0].add_(1)
    R(g(torch.ones(2)))
    R(g(torch.ones(2), torch.zeros(2)))


G_MODE = "a"


@scenario
def global_changes_between_calls(C, R):
    global G_MODE

    def f(x):
        if G_MODE == "a":
            return x + 1
        return x * 10
    g = C(f)
    G_MODE = "a"
    R(g(torch.ones(2)))
    G_MODE = "b"
    R(g(torch.ones(2)))
    G_MODE = "a"
    R(g(torch.ones(2)))


@scenario
def chained_properties_and_super(C, R):
    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self._temp = 1.0

        @property
        def temp(self):
            return self._temp

        @temp.setter
        def temp(self, v):
            self._temp = max(v, 0.1)

        def forward(self, x):
            return x / self.temp

    class Child(Base):
        def forward(self, x):
            y = super().forward(x)
            self.temp = self.temp * 0.5
            return y.softmax(-1)
    m = Child()
    g = C(m)
    for _ in range(4):
        R(g(torch.arange(3.0)))
    R(m.temp)
