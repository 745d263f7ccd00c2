"""State that changes between calls of a compiled function: every change must be seen."""
import dataclasses
import functools

import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario

GSCALE = 2


def gact(x):
    return x.relu()


@scenario
def attr_type_changes(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.extra = None

        def forward(self, x):
            if self.extra is None:
                return x
            if isinstance(self.extra, torch.Tensor):
                return x + self.extra
            return x * self.extra
    mod = M()
    m = C(mod)
    x = torch.ones(2)
    for v in (None, torch.full((2,), 3.0), 4, 2.5, None, torch.zeros(2)):
        mod.extra = v
        R(m(x))


@scenario
def dict_and_list_attrs_mutated(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = {"k": 1.0}
            self.scales = [1.0]

        def forward(self, x):
            for s in self.scales:
                x = x * s
            return x + self.cfg["k"]
    mod = M()
    m = C(mod)
    x = torch.ones(2)
    R(m(x))
    mod.cfg["k"] = 5.0
    R(m(x))
    mod.scales.append(3.0)
    R(m(x))
    mod.scales[0] = -1.0
    R(m(x))
    mod.cfg = {"k": 0.0}
    R(m(x))


@scenario
def hooks_added_after_compile(C, R):
    net = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    m = C(net)
    x = torch.randn(2, 3)
    R(m(x))
    h = net[0].register_forward_hook(lambda mod, i, o: o * 0)
    R(m(x))
    h2 = net.register_forward_pre_hook(lambda mod, i: (i[0] + 1,))
    R(m(x))
    h.remove()
    R(m(x))
    h2.remove()
    R(m(x))


@scenario
def parameter_and_child_replaced(C, R):
    net = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    m = C(net)
    x = torch.randn(2, 3)
    R(m(x))
    net[0].weight = nn.Parameter(torch.ones(3, 3))
    R(m(x))
    net[1] = nn.Sigmoid()
    R(m(x))
    net.append(nn.Linear(3, 2))
    R(m(x))
    del net[2]
    R(m(x))


@scenario
def modulelist_appended_after_compile(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2)])

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x
    mod = M()
    m = C(mod)
    x = torch.randn(1, 2)
    R(m(x))
    mod.blocks.append(nn.Linear(2, 2))
    R(m(x))
    mod.blocks.insert(0, nn.Identity())
    R(m(x))


@scenario
def submodule_training_flag(C, R):
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.9), nn.BatchNorm1d(4))
    m = C(net)
    x = torch.randn(6, 4)
    torch.manual_seed(1)
    R(m(x))
    net[1].eval()
    R(m(x))
    net[2].eval()
    R(m(x))
    net[2].train()
    net[2].momentum = 0.5
    R(m(x))
    R(net[2].running_mean)


@scenario
def global_function_and_constant_rebound(C, R):
    global gact, GSCALE

    def f(x):
        return gact(x) * GSCALE
    g = C(f)
    x = torch.tensor([-1.0, 2.0])
    R(g(x))
    old = gact
    gact = lambda x: x.abs()  # noqa: E731
    R(g(x))
    GSCALE = 10
    R(g(x))
    gact, GSCALE = old, 2


@scenario
def closure_list_mutated_outside(C, R):
    weights = [1.0, 2.0]

    def f(x):
        return sum(x * w for w in weights)
    g = C(f)
    x = torch.ones(2)
    R(g(x))
    weights.append(3.0)
    R(g(x))
    weights[0] = -5.0
    R(g(x))


@scenario
def dataclass_config_field_changed(C, R):
    @dataclasses.dataclass
    class Cfg:
        act: str = "relu"
        p: float = 0.0
        scale: float = 1.0

    cfg = Cfg()

    def f(x):
        y = getattr(F, cfg.act)(x) * cfg.scale
        return F.dropout(y, cfg.p, training=cfg.p > 0)
    g = C(f)
    x = torch.tensor([-1.0, 0.5, 2.0])
    R(g(x))
    cfg.act = "gelu"
    R(g(x))
    cfg.scale = 3
    R(g(x))


@scenario
def partial_keywords_changed(C, R):
    act = functools.partial(F.leaky_relu, negative_slope=0.1)

    def f(x):
        return act(x)
    g = C(f)
    x = torch.tensor([-1.0, 2.0])
    R(g(x))
    act.keywords["negative_slope"] = 0.5
    R(g(x))


@scenario
def class_attribute_changed(C, R):
    class M(nn.Module):
        SCALE = 2
        USE_BIAS = True

        def forward(self, x):
            y = x * self.SCALE
            return y + 1 if self.USE_BIAS else y
    mod = M()
    m = C(mod)
    x = torch.ones(2)
    R(m(x))
    M.SCALE = 7
    R(m(x))
    mod.USE_BIAS = False   # instance attribute shadows the class one
    R(m(x))
    del mod.USE_BIAS
    R(m(x))


@scenario
def instance_method_monkeypatched(C, R):
    class M(nn.Module):
        def act(self, x):
            return x.relu()

        def forward(self, x):
            return self.act(x) + 1
    mod = M()
    m = C(mod)
    x = torch.tensor([-2.0, 3.0])
    R(m(x))
    mod.act = lambda x: x * 10
    R(m(x))
    M.act = lambda self, x: x - 100
    del mod.act
    R(m(x))


@scenario
def forward_replaced_on_instance(C, R):
    lin = nn.Linear(2, 2)
    m = C(lin)
    x = torch.ones(1, 2)
    R(m(x))
    orig = lin.forward
    lin.forward = lambda x: orig(x) * 0 + 42
    R(m(x))


@scenario
def tensor_attribute_on_module_reassigned_shape(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("pos", torch.arange(4.0))

        def forward(self, x):
            return x + self.pos[: x.shape[-1]]
    mod = M()
    m = C(mod)
    R(m(torch.zeros(3)))
    mod.pos = torch.arange(10.0) * 2
    R(m(torch.zeros(3)))
    mod.pos.resize_(2)
    R.call(m, torch.zeros(3))


@scenario
def requires_grad_of_param_toggled_in_training(C, R):
    net = nn.Linear(3, 1)
    m = C(net)
    x = torch.randn(4, 3)
    for rg in (True, False, True):
        net.bias.requires_grad_(rg)
        net.zero_grad()
        out = m(x).sum()
        out.backward()
        R((out, net.weight.grad, net.bias.grad))


@scenario
def inplace_param_update_between_calls(C, R):
    net = nn.Linear(3, 3)
    m = C(net)
    x = torch.randn(2, 3)
    for _ in range(3):
        R(m(x))
        with torch.no_grad():
            net.weight.mul_(0.5)
            net.bias.add_(1)
    net.weight.data = torch.eye(3)
    R(m(x))
    net.weight.data = torch.eye(3)[:, :2].T.contiguous() if False else torch.ones(3, 3).t()
    R(m(x))
