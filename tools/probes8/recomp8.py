"""Recompilation: one compiled function called across shapes, dtypes, requires_grad, grad
modes, layouts, train/eval flips and python-scalar changes, interleaved and repeated; values
against eager, and the compile count printed by run8 must stay bounded."""
import torch
import torch.nn.functional as F

from probe2 import scenario


def _x(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


@scenario(rtol=1e-5, atol=1e-5)
def interleaved_shape_dtype_grad(C, R):
    def f(x, s):
        y = x.softmax(-1) * s + x.sum(-1, keepdim=True)
        if x.dtype == torch.float64:
            y = y + 1
        return y.flip(0)[: max(x.shape[0] - 1, 0)]
    g = C(f)
    calls = [(_x((3, 4)), 2), (_x((5, 4)), 2), (_x((3, 4), torch.float64), 2), (_x((3, 4)), 3.5), (_x((1, 4)), 2),
             (_x((0, 4)), 2), (_x((3, 4)).T, 2), (_x((3, 4)).requires_grad_(), 2), (_x((3, 4), torch.bfloat16), 2),
             (_x((3, 4)), 2), (_x((6, 4)), 2), (_x((2, 7)), 1)]
    for rep in range(2):
        for x, s in calls:
            r = R.call(g, x, s)
            if r is not None and r.requires_grad:
                r.sum().backward()
                R(x.grad)
                x.grad = None


@scenario(rtol=1e-5, atol=1e-5)
def grad_mode_flips(C, R):
    lin = torch.nn.Linear(4, 3)
    def f(x):
        h = lin(x).relu()
        return h * torch.is_grad_enabled(), h.requires_grad
    g = C(f)
    x = _x((2, 4))
    for mode in ("grad", "nograd", "inference", "grad", "inference", "nograd", "grad"):
        if mode == "grad":
            out = R.call(g, x)
            out[0].sum().backward()
            R(lin.weight.grad)
            lin.zero_grad()
        elif mode == "nograd":
            with torch.no_grad():
                R.call(g, x)
        else:
            with torch.inference_mode():
                R.call(g, x)


@scenario(rtol=1e-5, atol=1e-5)
def train_eval_flips_with_bn_dropout(C, R):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.BatchNorm2d(3), torch.nn.Dropout(0.0),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(3, 2))
    cm = C(m)
    x = _x((2, 2, 5, 5))
    for i, training in enumerate((True, False, True, True, False, False, True)):
        m.train(training)
        R.call(cm, x * (i + 1))
        R(m[1].running_mean)
        R(m[1].num_batches_tracked)
    m[2].p = 0.5
    m.train()
    torch.manual_seed(1)
    R.call(cm, x)


@scenario(rtol=1e-5, atol=1e-5)
def requires_grad_of_params_and_inputs(C, R):
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    def f(x):
        return (m(x) ** 2).mean()
    g = C(f)
    x = _x((4, 3))
    for step, (wr, xr) in enumerate(((True, False), (False, True), (True, True), (False, False), (True, False))):
        m.weight.requires_grad_(wr)
        xi = x.clone().requires_grad_(xr)
        out = R.call(g, xi)
        if out is not None and out.requires_grad:
            out.backward()
        R((m.weight.grad, m.bias.grad, xi.grad))
        m.zero_grad(set_to_none=True)


@scenario(rtol=1e-5, atol=1e-5)
def python_args_change(C, R):
    def f(x, k, mode, flag=False, dims=(1,)):
        y = F.pad(x, (k, k), mode=mode)
        if flag:
            y = y.cumsum(-1)
        return y.sum(dims) if dims else y
    g = C(f)
    x = _x((1, 2, 5))
    for args in ((1, "constant"), (2, "constant"), (1, "reflect"), (1, "replicate", True), (3, "circular", False, (0, 2)),
                 (0, "constant", True, ()), (1, "constant"), (2, "reflect", True, (-1,)), (1, "constant", 1), (1, "constant", 0.0)):
        R.call(g, x, *args)


@scenario(rtol=1e-5, atol=1e-5)
def module_attribute_and_hyperparam_changes(C, R):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.scale = 1.0
            self.act = "relu"
            self.steps = 0

        def forward(self, x):
            self.steps += 1
            h = self.lin(x) * self.scale
            h = getattr(F, self.act)(h)
            return h, self.steps
    torch.manual_seed(0)
    m = M()
    cm = C(m)
    x = _x((2, 4))
    for change in (None, ("scale", 2.0), ("act", "gelu"), ("scale", 2), ("act", "tanh"), None, ("scale", 0.5)):
        if change:
            setattr(m, *change)
        R.call(cm, x)
    m.lin = torch.nn.Linear(4, 4, bias=False)
    R.call(cm, x)
    m.half()
    R.call(cm, x.half())
    m.double()
    R.call(cm, x.double())
