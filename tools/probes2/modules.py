"""nn.Module idioms."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize

from probe2 import scenario


@scenario
def moduledict_routing(C, R):
    class Router(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(6, 3), "b": nn.Linear(6, 4), "c": nn.Identity()})

        def forward(self, x, which):
            outs = {}
            for k, h in self.heads.items():
                if k in which:
                    outs[k] = h(x)
            return outs
    m = C(Router())
    x = torch.randn(5, 6)
    R(m(x, ("a", "c")))
    R(m(x, ("b",)))
    R(m(x, ("a", "b", "c")))


@scenario
def parameterdict_scale(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn.ParameterDict({"scale": nn.Parameter(torch.randn(4)),
                                       "shift": nn.Parameter(torch.randn(4))})

        def forward(self, x):
            y = x
            for name in sorted(self.p.keys()):
                y = y * self.p[name] if name == "scale" else y + self.p[name]
            return y, len(self.p), "scale" in self.p
    m = C(M())
    x = torch.randn(3, 4)
    out = m(x)
    R(out)
    out[0].sum().backward()
    R(m)


@scenario
def buffers_nonpersistent(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros((), dtype=torch.long))
            self.register_buffer("cache", torch.zeros(4), persistent=False)
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            self.count += 1
            self.cache.mul_(0.5).add_(x.mean(0))
            return self.lin(x) + self.cache
    mod = M()
    m = C(mod)
    for i in range(3):
        R(m(torch.randn(2, 4)))
    R(sorted(m.state_dict().keys()))
    R(mod.count)
    R(mod.cache)
    sd = copy.deepcopy(m.state_dict())
    m2 = M()
    R.call(m2.load_state_dict, {k.replace("_orig_mod.", ""): v for k, v in sd.items()})
    R(m2.count)


@scenario
def hooks_forward_pre_and_post(C, R):
    log = []

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 2)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)))
    mod = M()
    mod.a.register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
    mod.a.register_forward_hook(lambda m, inp, out: log.append(tuple(out.shape)))
    h = mod.b.register_forward_hook(lambda m, inp, out: out + 1)
    m = C(mod)
    x = torch.randn(3, 4)
    R(m(x))
    R(list(log))
    h.remove()
    R(m(x))
    R(list(log))


@scenario
def train_eval_switch(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(5)
            self.drop = nn.Dropout(0.0)
            self.lin = nn.Linear(5, 5)

        def forward(self, x):
            y = self.lin(self.drop(self.bn(x)))
            if self.training:
                return y * 2
            return y
    mod = M()
    m = C(mod)
    x = torch.randn(8, 5)
    R(m(x))
    m.eval()
    R(m(x))
    R(mod.bn.running_mean)
    m.train()
    R(m(x))
    R(mod.bn.num_batches_tracked)
    R(mod.bn.running_var)


@scenario
def parametrization_orthogonal_like(C, R):
    class Sym(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    lin = nn.Linear(4, 4)
    parametrize.register_parametrization(lin, "weight", Sym())
    m = C(lin)
    x = torch.randn(3, 4)
    y = m(x)
    R(y)
    y.pow(2).sum().backward()
    R(lin.parametrizations.weight.original.grad)
    R(lin.bias.grad)


@scenario
def weight_norm_module(C, R):
    lin = nn.utils.parametrizations.weight_norm(nn.Linear(5, 3))
    m = C(lin)
    x = torch.randn(2, 5)
    y = m(x)
    R(y)
    y.sum().backward()
    R([p.grad for p in lin.parameters()])


@scenario
def state_dict_roundtrip_after_compile(C, R):
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    m = C(net)
    x = torch.randn(4, 3)
    R(m(x))
    sd = m.state_dict()
    R(list(sd.keys()))
    with torch.no_grad():
        for p in net.parameters():
            p.add_(1.0)
    R(m(x))   # parameters changed in place: must be seen
    net2 = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    m2 = C(net2)
    R(m2(x))
    m2.load_state_dict(m.state_dict())
    R(m2(x))


@scenario
def module_attr_swap_recompiles(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.act = nn.ReLU()
            self.scale = 2.0

        def forward(self, x):
            return self.act(x) * self.scale
    mod = M()
    m = C(mod)
    x = torch.randn(6)
    R(m(x))
    mod.act = nn.Sigmoid()
    R(m(x))
    mod.scale = 3
    R(m(x))
    mod.act = nn.GELU(approximate="tanh")
    R(m(x))


@scenario
def modulelist_with_slicing_and_reversed(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(4)])

        def forward(self, x):
            for l in self.layers[1:3]:
                x = l(x)
            for l in reversed(self.layers):
                x = x + l(x) * 0.1
            for i, l in enumerate(self.layers[::2]):
                x = x * (i + 1) + l(x)
            return x, len(self.layers[::-1])
    m = C(M())
    R(m(torch.randn(2, 4)))


@scenario
def parameterlist_enumerate_zip(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = nn.ParameterList([nn.Parameter(torch.randn(3, 3)) for _ in range(3)])
            self.bs = nn.ParameterList([nn.Parameter(torch.randn(3)) for _ in range(3)])

        def forward(self, x):
            for i, (w, b) in enumerate(zip(self.ws, self.bs)):
                x = torch.tanh(x @ w + b) + i
            return x + self.ws[-1].sum()
    mod = M()
    m = C(mod)
    y = m(torch.randn(2, 3))
    R(y)
    y.sum().backward()
    R(mod)


@scenario
def submodule_called_twice_shared(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = nn.Linear(4, 4)
            self.other = self.shared

        def forward(self, x):
            return self.other(self.shared(x))
    mod = M()
    m = C(mod)
    y = m(torch.randn(2, 4))
    R(y)
    y.sum().backward()
    R(mod.shared.weight.grad)
    R(len(list(mod.parameters())))


@scenario
def module_apply_and_children(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Sequential(nn.Linear(3, 3), nn.ReLU())

        def forward(self, x):
            n = 0
            for name, child in self.named_children():
                x = child(x)
                n += 1
            tot = sum(p.numel() for p in self.parameters())
            return x, n, tot
    m = C(M())
    R(m(torch.randn(2, 3)))


@scenario
def full_backward_hook(C, R):
    grads = []
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda m, gi, go: grads.append(go[0].clone()))
    m = C(lin)
    x = torch.randn(4, 3, requires_grad=True)
    y = m(x)
    y.sum().backward()
    R(y)
    R(x.grad)
    R(grads)


@scenario
def tensor_hook_in_forward(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            h = self.lin(x)
            h.register_hook(lambda g: g * 10)
            return h.relu().sum()
    mod = M()
    m = C(mod)
    x = torch.randn(2, 3, requires_grad=True)
    loss = m(x)
    loss.backward()
    R(loss)
    R(x.grad)
    R(mod.lin.weight.grad)


@scenario
def module_returns_namedtuple_and_dataclass(C, R):
    from collections import namedtuple
    from dataclasses import dataclass
    Out = namedtuple("Out", ["logits", "aux"])

    @dataclass
    class Res:
        loss: torch.Tensor
        n: int

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def forward(self, x, y=None):
            logits = self.lin(x)
            out = Out(logits, logits.softmax(-1))
            if y is None:
                return out
            return Res(F.cross_entropy(out.logits, y), x.shape[0])
    m = C(M())
    x = torch.randn(5, 4)
    R(m(x))
    R(m(x, torch.tensor([0, 1, 2, 0, 1])))
    R(m(x)._asdict())


@scenario
def module_deepcopy_after_compile(C, R):
    net = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3))
    m = C(net)
    x = torch.randn(2, 3)
    R(m(x))
    m2 = copy.deepcopy(m)
    with torch.no_grad():
        net[0].weight.zero_()
    R(m(x))
    R(m2(x))


@scenario
def requires_grad_toggle(C, R):
    net = nn.Linear(4, 2)
    m = C(net)
    x = torch.randn(3, 4)
    y = m(x)
    R(y)
    net.weight.requires_grad_(False)
    y = m(x)
    R(y)
    y.sum().backward()
    R(net.weight.grad)
    R(net.bias.grad)
    net.weight.requires_grad_(True)
    y = m(x)
    y.sum().backward()
    R(net)


@scenario
def inference_mode_and_no_grad(C, R):
    net = nn.Sequential(nn.Linear(4, 4), nn.GELU())
    m = C(net)
    x = torch.randn(2, 4)
    with torch.no_grad():
        y = m(x)
    R(y)
    with torch.inference_mode():
        y = m(x)
    R(y)
    R(y.is_inference())
    y = m(x)
    R(y)
    y.sum().backward()
    R(net)
