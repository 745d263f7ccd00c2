"""Training mode: grads of inputs, accumulation, hooks, retain_graph, no_grad inside,
in-place on leaves and views, optimizer steps inside the compiled function."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@scenario(rtol=1e-5)
def input_grad_accumulates_over_calls(C, R):
    f = C(lambda x, w: (x @ w).tanh().sum())
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 2, requires_grad=True)
    for _ in range(3):
        f(x, w).backward()
    R(x)
    R(w)


@scenario(rtol=1e-5)
def retain_graph_twice(C, R):
    f = C(lambda x: (x.sin() * x).sum())
    x = torch.randn(5, requires_grad=True)
    y = f(x)
    y.backward(retain_graph=True)
    R(x.grad.clone())
    y.backward()
    R(x)


@scenario
def backward_twice_without_retain_raises(C, R):
    f = C(lambda x: (x.exp() * x).sum())
    x = torch.randn(4, requires_grad=True)
    y = f(x)
    y.backward()
    R.call(y.backward)
    R(x)


@scenario(rtol=1e-5)
def no_grad_block_inside(C, R):
    def f(x, w):
        y = x * w
        with torch.no_grad():
            s = y.abs().max()
        return y / s, s
    g = C(f)
    x = torch.randn(6, requires_grad=True)
    w = torch.randn(6, requires_grad=True)
    out, s = g(x, w)
    R(out)
    R(s)
    out.sum().backward()
    R(x)
    R(w)


@scenario(rtol=1e-5)
def enable_grad_inside_no_grad_outside(C, R):
    def f(x):
        with torch.enable_grad():
            y = (x * x).sum()
        return y
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        y = g(x)
    R(y)
    R(y.requires_grad)
    y.backward()
    R(x)


@scenario
def inplace_on_leaf_inside_raises(C, R):
    def f(x):
        x.add_(1)
        return x
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    R.call(g, x)
    R(x)


@scenario(rtol=1e-5)
def inplace_on_view_of_nonleaf(C, R):
    def f(x):
        y = x * 2
        y[1:].mul_(3)
        y.diagonal().zero_()
        return y.sum(), y
    g = C(f)
    x = torch.randn(4, 4, requires_grad=True)
    s, y = g(x)
    R(y)
    s.backward()
    R(x)


@scenario(rtol=1e-5)
def inplace_under_no_grad_on_leaf(C, R):
    def f(w, g):
        with torch.no_grad():
            w.sub_(0.1 * g)
        return w
    h = C(f)
    w = torch.randn(5, requires_grad=True)
    for _ in range(2):
        r = h(w, torch.ones(5))
    R(r is w)
    R(w)
    R(w.requires_grad)


@scenario(rtol=1e-5)
def tensor_hook_registered_outside(C, R):
    f = C(lambda x: (x ** 3).sum())
    x = torch.randn(4, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.clone()) or g * 2)
    f(x).backward()
    R(seen)
    R(x)


@scenario(rtol=1e-5)
def hook_on_intermediate_inside(C, R):
    grads = []

    def f(x):
        y = x.exp()
        y.register_hook(lambda g: grads.append(g.sum().item()))
        return (y * 3).sum()
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    g(x).backward()
    R(grads)
    R(x)


@scenario(rtol=1e-5)
def retain_grad_inside(C, R):
    def f(x):
        y = x * 2
        y.retain_grad()
        return y, (y ** 2).sum()
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    y, s = g(x)
    s.backward()
    R(y.grad)
    R(x)


@scenario(rtol=1e-5)
def optimizer_step_inside_compiled(C, R):
    lin = nn.Linear(3, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(lin(x), y)
        loss.backward()
        opt.step()
        return loss
    s = C(step)
    x, y = torch.randn(4, 3), torch.randn(4, 2)
    for _ in range(3):
        R(s(x, y))
    R(lin)


@scenario(rtol=1e-5)
def adamw_step_inside_compiled(C, R):
    lin = nn.Linear(4, 1)
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-2, weight_decay=0.1)

    def step(x, y):
        loss = (lin(x).squeeze(-1) - y).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()
    s = C(step)
    x, y = torch.randn(8, 4), torch.randn(8)
    for _ in range(3):
        R(s(x, y))
    R(lin)


@scenario(rtol=1e-5)
def manual_sgd_in_compiled(C, R):
    w = torch.randn(3, requires_grad=True)

    def step(x, y):
        loss = ((x @ w) - y).pow(2).mean()
        gw, = torch.autograd.grad(loss, [w])
        with torch.no_grad():
            w.sub_(0.1 * gw)
        return loss
    s = C(step)
    x, y = torch.randn(5, 3), torch.randn(5)
    for _ in range(3):
        R(s(x, y))
    R(w)


@scenario(rtol=1e-5)
def grad_none_vs_zero_accumulate(C, R):
    lin = nn.Linear(2, 2)
    f = C(lambda x: lin(x).sum())
    x = torch.randn(3, 2)
    f(x).backward()
    lin.zero_grad(set_to_none=False)
    f(x * 2).backward()
    R(lin)
    lin.zero_grad()
    R(lin.weight.grad)


@scenario(rtol=1e-5)
def partial_requires_grad_inputs(C, R):
    f = C(lambda a, b, c: (a * b + c).sum())
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3)
    c = torch.randn(3, requires_grad=True)
    f(a, b, c).backward()
    R(a)
    R(b)
    R(c)


@scenario(rtol=1e-5)
def output_not_requiring_grad_mixed(C, R):
    def f(x):
        return x.sum(), x.argmax(), (x > 0).sum(), x.detach() * 2
    g = C(f)
    x = torch.randn(5, requires_grad=True)
    out = g(x)
    R(out)
    R([o.requires_grad for o in out])
    R([o.grad_fn is None for o in out])


@scenario(rtol=1e-5)
def backward_with_grad_tensor(C, R):
    f = C(lambda x: x.sin() * 2)
    x = torch.randn(2, 3, requires_grad=True)
    y = f(x)
    y.backward(torch.full_like(y, 0.5))
    R(x)


@scenario(rtol=1e-5)
def double_call_shared_graph_backward(C, R):
    f = C(lambda x, w: (x * w).relu())
    w = torch.randn(4, requires_grad=True)
    a = f(torch.randn(4), w)
    b = f(torch.randn(4), w)
    (a.sum() + 2 * b.sum()).backward()
    R(w)


@scenario(rtol=1e-5)
def requires_grad_set_inside(C, R):
    def f(x):
        y = x.clone().requires_grad_()
        z = (y * y).sum()
        g, = torch.autograd.grad(z, y)
        return g
    g = C(f)
    R(g(torch.randn(4)))


@scenario(rtol=1e-5)
def detach_inplace_inside(C, R):
    def f(x):
        y = x * 3
        z = y.detach()
        z.add_(1)
        return y, z
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    y, z = g(x)
    R(y)
    R(z)
    R.call(lambda: y.sum().backward())


@scenario(rtol=1e-5)
def grad_of_output_view(C, R):
    def f(x):
        y = x.exp()
        return y[:, 1], y.t()
    g = C(f)
    x = torch.randn(3, 3, requires_grad=True)
    a, b = g(x)
    (a.sum() + b[0].sum()).backward()
    R(x)


@scenario(rtol=1e-5)
def module_train_with_dropout_zero_and_bn(C, R):
    m = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.0), nn.ReLU())
    mc = C(m)
    opt = torch.optim.SGD(m.parameters(), lr=0.05)
    x = torch.randn(6, 4)
    for _ in range(3):
        loss = mc(x).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        R(loss)
    R(m)


@scenario(rtol=1e-5)
def autograd_grad_allow_unused(C, R):
    def f(x, y):
        z = (x * 2).sum()
        return torch.autograd.grad(z, [x, y], allow_unused=True)
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    y = torch.randn(3, requires_grad=True)
    R(g(x, y))


@scenario
def autograd_grad_unused_raises(C, R):
    def f(x, y):
        z = (x * 2).sum()
        return torch.autograd.grad(z, [x, y])
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    y = torch.randn(3, requires_grad=True)
    R.call(g, x, y)


@scenario(rtol=1e-5)
def leaf_grad_read_inside(C, R):
    w = torch.randn(3, requires_grad=True)
    (w * 2).sum().backward()

    def f(x):
        return x * w.grad + w
    g = C(f)
    R(g(torch.ones(3)))
    (w * 5).sum().backward()
    R(g(torch.ones(3)))


@scenario(rtol=1e-5)
def grad_set_to_none_between_calls(C, R):
    w = torch.randn(3, requires_grad=True)

    def f(x):
        if w.grad is None:
            return x + w
        return x + w.grad
    g = C(f)
    R(g(torch.ones(3)))
    w.grad = torch.full((3,), 7.0)
    R(g(torch.ones(3)))
    w.grad = None
    R(g(torch.ones(3)))


@scenario(rtol=1e-5)
def checkpoint_free_two_losses(C, R):
    m = nn.Linear(3, 3)
    f = C(lambda x: (m(x).sum(), m(x).pow(2).mean()))
    x = torch.randn(2, 3)
    a, b = f(x)
    a.backward(retain_graph=True)
    b.backward()
    R(m)


@scenario(rtol=1e-5)
def custom_function_in_training(C, R):
    class Sq(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * g * x
    f = C(lambda x: Sq.apply(x).sum())
    x = torch.randn(4, requires_grad=True)
    f(x).backward()
    R(x)


@scenario(rtol=1e-5)
def int_input_with_float_grad_input(C, R):
    f = C(lambda idx, w: w[idx].sum() + w.sum())
    w = torch.randn(5, requires_grad=True)
    idx = torch.tensor([0, 2, 2, 4])
    f(idx, w).backward()
    R(w)


@scenario(rtol=1e-5)
def grad_through_inplace_relu(C, R):
    def f(x):
        y = x * 1.5
        F.relu(y, inplace=True)
        y.clamp_(max=1.0)
        return y.sum()
    g = C(f)
    x = torch.randn(8, requires_grad=True)
    g(x).backward()
    R(x)


@scenario(rtol=1e-5)
def grad_input_noncontig(C, R):
    f = C(lambda x: (x * x).sum(0))
    base = torch.randn(4, 6, requires_grad=True)
    x = base.t()
    f(x).sum().backward()
    R(base)


@scenario(rtol=1e-5)
def float64_training(C, R):
    m = nn.Linear(3, 1).double()
    mc = C(m)
    x = torch.randn(4, 3, dtype=torch.float64)
    loss = mc(x).sum()
    loss.backward()
    R(loss)
    R(m)
