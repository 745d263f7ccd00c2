"""Global, closure and module-state mutation; dataclasses and namedtuples returned."""
import collections
import dataclasses
import enum
import typing

import torch
import torch.nn as nn

from probe2 import scenario

_G = {"n": 0, "t": None}
COUNTER = 0
SCALE = 2.0


@scenario
def global_counter_incremented(C, R):
    global COUNTER
    COUNTER = 0

    def f(x):
        global COUNTER
        COUNTER += 1
        return x * COUNTER
    g = C(f)
    for _ in range(3):
        R(g(torch.ones(2)))
    R(COUNTER)


@scenario
def global_scale_rebound_between_calls(C, R):
    global SCALE
    SCALE = 2.0
    g = C(lambda x: x * SCALE)
    R(g(torch.ones(2)))
    SCALE = 3.5
    R(g(torch.ones(2)))
    SCALE = torch.tensor(4.0)
    R(g(torch.ones(2)))
    SCALE = 2.0


@scenario
def global_dict_tensor_cache(C, R):
    _G["t"] = None

    def f(x):
        if _G["t"] is None:
            _G["t"] = x * 10
        _G["n"] += 1
        return x + _G["t"]
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.full((2,), 2.0)))
    R(_G["t"])


@scenario
def closure_tensor_mutated_inside(C, R):
    state = torch.zeros(3)

    def f(x):
        state.add_(x)
        return state * 2
    g = C(f)
    R(g(torch.ones(3)))
    R(g(torch.ones(3)))
    R(state)


@scenario
def closure_rebinding_nonlocal_tensor(C, R):
    acc = torch.zeros(2)

    def f(x):
        nonlocal acc
        acc = acc + x
        return acc.sum()
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(acc)


@scenario
def module_counter_attribute(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            self.calls += 1
            return self.lin(x) * self.calls
    m = M()
    mc = C(m)
    for _ in range(3):
        R(mc(torch.ones(1, 2)))
    R(m.calls)


@scenario
def module_caches_tensor_attribute(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.last = None

        def forward(self, x):
            out = x * 2 if self.last is None else x + self.last
            self.last = out.detach()
            return out
    m = M()
    mc = C(m)
    for i in range(3):
        R(mc(torch.full((2,), float(i))))
    R(m.last)


@scenario
def module_list_attribute_appended(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.history = []

        def forward(self, x):
            self.history.append(x.sum())
            return x * len(self.history)
    m = M()
    mc = C(m)
    for _ in range(3):
        R(mc(torch.ones(2)))
    R(m.history)


@scenario
def buffer_running_update(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(3))
            self.register_buffer("count", torch.tensor(0))

        def forward(self, x):
            self.count += 1
            self.mean.mul_(0.9).add_(0.1 * x.mean(0))
            return x - self.mean
    m = M()
    mc = C(m)
    for i in range(3):
        R(mc(torch.randn(4, 3)))
    R(m)
    R(m.count)


@scenario
def param_data_modified_inside(C, R):
    lin = nn.Linear(2, 2)

    def f(x):
        with torch.no_grad():
            lin.weight.mul_(0.5)
        return lin(x)
    g = C(f)
    R(g(torch.ones(1, 2)))
    R(g(torch.ones(1, 2)))
    R(lin)


@scenario
def object_attribute_mutated_inside(C, R):
    class Cfg:
        pass
    cfg = Cfg()
    cfg.step = 0
    cfg.vals = {}

    def f(x):
        cfg.step += 1
        cfg.vals[cfg.step] = x.sum()
        return x * cfg.step
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2)))
    R(cfg.step)
    R(cfg.vals)


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    loss: typing.Optional[torch.Tensor] = None
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class FOut:
    a: torch.Tensor
    n: int


NT = collections.namedtuple("NT", ["x", "y"])


class TNT(typing.NamedTuple):
    mean: torch.Tensor
    std: torch.Tensor
    k: int = 3


@scenario
def return_dataclass_with_defaults(C, R):
    def f(x, y=None):
        o = Out(x * 2)
        if y is not None:
            o.loss = (x - y).pow(2).mean()
            o.extra["y"] = y
        return o
    g = C(f)
    R(g(torch.ones(2)))
    R(g(torch.ones(2), torch.zeros(2)))


@scenario
def return_frozen_dataclass(C, R):
    g = C(lambda x: FOut(x.relu(), x.shape[0]))
    r = g(torch.randn(3))
    R(r)
    R.call(setattr, r, "n", 4)


@scenario
def return_namedtuples(C, R):
    g = C(lambda x: (NT(x, x * 2), TNT(x.mean(), x.std()), TNT(x, x, k=5)))
    r = g(torch.randn(4))
    R(r)
    R(type(r[0]).__name__)
    R(r[1]._fields)
    R(r[1]._replace(k=9))


@scenario
def namedtuple_input_and_replace(C, R):
    def f(t):
        return t._replace(y=t.x + t.y), t.x * 2
    R(C(f)(NT(torch.ones(2), torch.zeros(2))))


@scenario
def dataclass_input_mutated(C, R):
    def f(o):
        o.loss = o.logits.sum()
        o.logits = o.logits * 3
        return o
    o = Out(torch.ones(2))
    r = C(f)(o)
    R(r is o)
    R(o)


@scenario
def dataclass_replace_and_asdict(C, R):
    def f(o):
        o2 = dataclasses.replace(o, logits=o.logits + 1)
        return o2, dataclasses.asdict(o2)
    R(C(f)(Out(torch.ones(2), torch.tensor(0.5))))


@scenario
def enum_state_switch(C, R):
    class Mode(enum.Enum):
        A = 1
        B = 2

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mode = Mode.A

        def forward(self, x):
            return x * 2 if self.mode is Mode.A else x - 2
    m = M()
    mc = C(m)
    R(mc(torch.ones(2)))
    m.mode = Mode.B
    R(mc(torch.ones(2)))


@scenario
def ordered_dict_output_and_defaultdict(C, R):
    def f(x):
        d = collections.OrderedDict()
        d["b"] = x
        d["a"] = x * 2
        dd = collections.defaultdict(list)
        dd["k"].append(x.sum())
        return d, dict(dd)
    R(C(f)(torch.ones(2)))


@scenario
def counter_and_deque(C, R):
    def f(xs):
        q = collections.deque(maxlen=2)
        for x in xs:
            q.append(x * 2)
        c = collections.Counter(int(x.sum()) for x in xs)
        return list(q), sorted(c.items())
    R(C(f)([torch.ones(2), torch.zeros(2), torch.ones(2)]))


@scenario
def class_attribute_counter(C, R):
    class K:
        n = 0

    def f(x):
        K.n += 1
        return x + K.n
    g = C(f)
    R(g(torch.zeros(1)))
    R(g(torch.zeros(1)))
    R(K.n)


@scenario
def rng_state_consumed_inside(C, R):
    def f(x):
        return x + torch.rand(3), torch.randn(2)
    g = C(f)
    torch.manual_seed(3)
    R(g(torch.zeros(3)))
    R(torch.rand(2))


@scenario
def generator_object_argument(C, R):
    def f(x, gen):
        return x + torch.rand(x.shape, generator=gen)
    g = C(f)
    gen = torch.Generator().manual_seed(5)
    R(g(torch.zeros(3), gen))
    R(g(torch.zeros(3), gen))
    R(torch.rand(2, generator=gen))


@scenario
def print_inside_and_side_effect_order(C, R):
    log = []

    def f(x):
        log.append("a")
        y = x * 2
        print("y", y.shape)
        log.append("b")
        return y
    g = C(f)
    R(g(torch.ones(2)))
    R(log)


@scenario
def setattr_on_module_parameter_new(C, R):
    class M(nn.Module):
        def forward(self, x):
            if not hasattr(self, "w"):
                self.w = nn.Parameter(torch.ones(x.shape[-1]))
            return x * self.w
    m = M()
    mc = C(m)
    R(mc(torch.full((2,), 3.0)))
    R(mc(torch.full((2,), 3.0)))
    R(m)


@scenario
def state_dict_of_compiled_after_training(C, R):
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    mc = C(m)
    mc(torch.randn(4, 2)).sum().backward()
    R(sorted(mc.state_dict().keys()))
    R(m[1].num_batches_tracked)
