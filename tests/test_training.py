"""Training (issue 22): compiled forward + compiled backward graphs.

Every test asserts that a backward graph was compiled (torchc.explain's
backward_graph_count), so it fails when torchc silently fell back to eager; gradients are
compared with eager's (differential), float64 ones with torch.autograd.gradcheck.
"""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same

F32 = dict(rtol=1e-4, atol=1e-5)


def _leaf(t, rg=True):
    return t.detach().clone().requires_grad_(rg) if rg else t.detach().clone()


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [o for o in out if isinstance(o, torch.Tensor)]


def grads_match(fn, *args, rg=None, tol=F32, graphs=1, gout_seed=1):
    """fn(*args) compiled vs eager: outputs and gradients of every float input (rg: mask)."""
    rg = rg if rg is not None else [a.is_floating_point() for a in args]
    fn = (lambda f: lambda *a: f(*a))(fn)  # builtins and library functions: one frame
    ae = [_leaf(a, r) for a, r in zip(args, rg)]
    ac = [_leaf(a, r) for a, r in zip(args, rg)]
    oe = _flat(fn(*ae))
    ex = torchc.explain(fn)(*ac)
    oc = _flat(ex.result)
    assert ex.graph_count == graphs and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == graphs, str(ex)
    assert len(oc) == len(oe)
    gen = torch.Generator().manual_seed(gout_seed)
    gouts = [torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device) if o.requires_grad else None for o in oe]
    for c, e in zip(oc, oe):
        assert_same(c.detach(), e.detach(), **tol)
        assert c.requires_grad == e.requires_grad
    pe = [(o, g) for o, g in zip(oe, gouts) if g is not None]
    pc = [(o, g) for o, g in zip(oc, gouts) if g is not None]
    we = [a for a in ae if a.requires_grad]
    wc = [a for a in ac if a.requires_grad]
    ge = torch.autograd.grad([o for o, _ in pe], we, [g for _, g in pe], allow_unused=True)
    gc = torch.autograd.grad([o for o, _ in pc], wc, [g for _, g in pc], allow_unused=True)
    for c, e in zip(gc, ge):
        assert (c is None) == (e is None)
        if e is not None:
            assert_same(c, e, **tol)
    return ex


def R(*s, dtype=torch.float32):
    return torch.randn(s, dtype=dtype)


def P(*s):  # positive
    return torch.rand(*s) + 0.5


# ---- pointwise ------------------------------------------------------------------------
BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 0.5),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": lambda a, b: (a.abs() + 0.5) ** b,
    "fmod": lambda a, b: torch.fmod(a, b.abs() + 0.5),
    "remainder": lambda a, b: torch.remainder(a, b.abs() + 0.5),
    "atan2": torch.atan2,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2.5),
}
BSHAPES = [((4, 5), (4, 5)), ((3, 1, 5), (4, 5)), ((5,), (4, 1)), ((), (3, 2)), ((0, 3), (1, 3)), ((1,), (1, 1))]


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", BSHAPES, ids=str)
def test_binary(name, shapes):
    grads_match(BINARY[name], R(*shapes[0]), R(*shapes[1]))


def test_binary_ties():
    a = torch.tensor([1.0, 2.0, 3.0, -1.0])
    b = torch.tensor([1.0, 1.0, 4.0, -1.0])
    grads_match(torch.maximum, a, b)
    grads_match(torch.minimum, a, b)


def test_binary_promotion():
    # f32 with f64, f16 and int operands: gradients in each operand's dtype
    grads_match(lambda a, b: a * b + a, R(3, 4), R(4, dtype=torch.float64))
    grads_match(lambda a, b: a * b, R(3, 4), R(3, 4).half(), tol=dict(rtol=1e-3, atol=1e-3))
    grads_match(lambda a, i: a * i + i, R(3, 4), torch.arange(4), rg=[True, False])
    grads_match(lambda a: a * 3 + 2.5 - a / 2, R(3, 4))


def test_binary_scalars():
    grads_match(lambda a: 2.0 ** a + a ** 3 + a ** 0.5 * 0 + (a.abs() + 1) ** 2.5 + a ** 0, R(3, 4))
    grads_match(lambda a: 1 / (a.abs() + 1) - 3 * a, R(5))


UNARY = {
    "neg": lambda x: -x, "abs": torch.abs, "exp": torch.exp, "log": lambda x: torch.log(x.abs() + 0.5),
    "sqrt": lambda x: torch.sqrt(x.abs() + 0.5), "rsqrt": lambda x: torch.rsqrt(x.abs() + 0.5),
    "reciprocal": lambda x: torch.reciprocal(x.abs() + 0.5), "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "sin": torch.sin, "cos": torch.cos, "erf": torch.erf, "log1p": lambda x: torch.log1p(x.abs()),
    "expm1": torch.expm1, "log2": lambda x: torch.log2(x.abs() + 0.5), "exp2": torch.exp2,
    "tan": lambda x: torch.tan(x * 0.5), "atan": torch.atan,
    "asin": lambda x: torch.asin(x.tanh() * 0.9), "acos": lambda x: torch.acos(x.tanh() * 0.9),
    "asinh": torch.asinh, "acosh": lambda x: torch.acosh(x.abs() + 1.1),
    "atanh": lambda x: torch.atanh(x.tanh() * 0.9),
    "floor": lambda x: torch.floor(x) * x, "ceil": lambda x: torch.ceil(x) + x, "round": lambda x: torch.round(x) * x,
    "trunc": lambda x: torch.trunc(x) * x, "sign": lambda x: torch.sign(x) * x,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "hardtanh": F.hardtanh, "softplus": F.softplus,
    "elu": F.elu, "mish": F.mish, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
    "clamp": lambda x: x.clamp(-0.5, 0.7), "square": torch.square,
}


@pytest.mark.parametrize("name", list(UNARY))
@pytest.mark.parametrize("shape", [(4, 6), (1,), (), (0, 3), (7, 1, 3)], ids=str)
def test_unary(name, shape):
    grads_match(UNARY[name], R(*shape))


def test_noncontiguous_inputs():
    x = R(6, 4).t()
    y = R(4, 6)[:, ::2]
    grads_match(lambda a, b: torch.sigmoid(a[:, :3] * b) + a.sum(1, keepdim=True), x, y)


def test_where_and_casts():
    grads_match(lambda x, y: torch.where(x > 0, x * 2, y), R(4, 5), R(5))
    grads_match(lambda x: x.double().sin().float() * 2 + x.to(torch.float64), R(3, 4))
    grads_match(lambda x: (x > 0).float() * x + x.long().float(), R(3, 4))


# ---- reductions -------------------------------------------------------------------------
RED = {
    "sum": lambda x: x.sum(), "sum1": lambda x: x.sum(1), "sum_keep": lambda x: x.sum((0, 2), keepdim=True),
    "mean": lambda x: x.mean(-1), "mean_all": lambda x: x.mean(), "amax": lambda x: x.amax(1),
    "amin": lambda x: x.amin((0, 2), keepdim=True), "max_dim": lambda x: x.max(1).values,
    "var": lambda x: x.var(1), "std": lambda x: x.std(-1, keepdim=True), "norm": lambda x: x.norm(dim=1),
    "logsumexp": lambda x: torch.logsumexp(x, 1), "sum_dtype": lambda x: x.sum(1, dtype=torch.float64),
}


@pytest.mark.parametrize("name", list(RED))
@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 7, 1), (2, 1, 3)], ids=str)
def test_reduction(name, shape):
    grads_match(RED[name], R(*shape))


def test_amax_ties():
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    grads_match(lambda x: x.amax(1) * 2, x)
    grads_match(lambda x: x.max() * 2, x)


def test_empty_reduction():
    grads_match(lambda x: x.sum(0) + 1, R(0, 3))


# ---- views and index maps ----------------------------------------------------------------
VIEWS = {
    "view": lambda x: x.view(4, 15).exp(), "reshape": lambda x: x.reshape(-1, 3) * 2,
    "permute": lambda x: x.permute(2, 0, 1).sin(), "transpose": lambda x: x.transpose(0, 2) * x.transpose(0, 2),
    "expand": lambda x: x[:, :1].expand(4, 7, 5) * 3, "slice": lambda x: x[:, 1:3].tanh(),
    "slice_step": lambda x: x[::2, :, 1::3] * 2, "select": lambda x: x[1] + x[:, 2].sum(),
    "unsqueeze": lambda x: x.unsqueeze(1).squeeze(1).flatten(1) * 2, "narrow": lambda x: x.narrow(2, 1, 3) ** 2,
    "chunk": lambda x: torch.chunk(x, 2, 2)[1] * 3, "split": lambda x: x.split([1, 2], 1)[1].exp(),
    "cat": lambda x: torch.cat([x, x * 2, x[:, :1]], 1).sin(), "stack": lambda x: torch.stack([x, x.cos()], 0),
    "neg_index": lambda x: x[..., -1] * x[-1, ...].sum(),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views(name):
    grads_match(VIEWS[name], R(4, 3, 5))


def test_index_select_embedding():
    w = R(10, 4)
    idx = torch.tensor([[1, 2, 1], [9, 0, 1]])
    grads_match(lambda w, i: F.embedding(i, w).sin(), w, idx, rg=[True, False])
    grads_match(lambda w, i: F.embedding(i, w, padding_idx=1) * 2, w, idx, rg=[True, False])
    grads_match(lambda w, i: torch.index_select(w, 1, i).exp(), w, torch.tensor([3, 0, 3]), rg=[True, False])


def test_gather_scatter_cumsum():
    x = R(4, 5)
    idx = torch.randint(0, 5, (4, 3))
    grads_match(lambda x, i: x.gather(1, i) * 2, x, idx, rg=[True, False])
    grads_match(lambda x, i, s: x.scatter_add(1, i, s).sin(), x, idx, R(4, 3), rg=[True, False, True])
    grads_match(lambda x: torch.cumsum(x, 1) * x, x)


# ---- externs ---------------------------------------------------------------------------------
def test_matmuls():
    grads_match(torch.mm, R(3, 4), R(4, 5))
    grads_match(torch.bmm, R(2, 3, 4), R(2, 4, 5))
    grads_match(lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0), R(5), R(3, 4), R(4, 5))
    grads_match(lambda b, x, y: torch.baddbmm(b, x, y, alpha=0.5), R(2, 3, 5), R(2, 3, 4), R(2, 4, 5))
    grads_match(torch.matmul, R(2, 3, 4), R(4, 5))
    grads_match(torch.matmul, R(4), R(2, 4, 5))
    grads_match(torch.matmul, R(2, 1, 3, 4), R(3, 4, 5))
    grads_match(torch.matmul, R(3, 4), R(2, 4, 5))
    grads_match(torch.matmul, R(4), R(4))
    grads_match(lambda a, b: a @ b.t(), R(3, 4), R(5, 4))
    grads_match(F.linear, R(2, 3, 4), R(5, 4), R(5))
    grads_match(F.linear, R(4), R(5, 4))
    grads_match(lambda x, w: F.linear(x, w).relu(), R(0, 4), R(5, 4))


# ---- composite ops -----------------------------------------------------------------------------
def test_softmax_layernorm():
    grads_match(lambda x: F.softmax(x, -1) * x, R(4, 7))
    grads_match(lambda x: F.log_softmax(x, 1), R(3, 5, 2))
    grads_match(lambda x, w, b: F.layer_norm(x, (6,), w, b), R(4, 6), R(6), R(6))
    grads_match(lambda x: F.layer_norm(x, (3, 6)), R(2, 3, 6))
    grads_match(lambda x, w: F.rms_norm(x, (6,), w) if hasattr(F, "rms_norm") else x * w, R(4, 6), R(6))
    grads_match(lambda x, t: -(F.log_softmax(x, 1) * t).sum(1).mean(), R(6, 5), F.one_hot(torch.randint(0, 5, (6,)), 5).float(), rg=[True, False])
    grads_match(lambda x, t: ((x - t) ** 2).mean(), R(6, 5), R(6, 5))


def test_group_norm_batchnorm_train():
    grads_match(lambda x, w, b: F.group_norm(x, 2, w, b), R(3, 4, 5), R(4), R(4))
    rm, rv = torch.zeros(4), torch.ones(4)
    grads_match(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), R(6, 4, 3), R(4), R(4))


# ---- float64 gradcheck ----------------------------------------------------------------------
GC = [
    (lambda a, b: (a * b).sigmoid() / (b.abs() + 1), ((3, 4), (4,))),
    (lambda a: F.gelu(a).sum(1) + torch.tanh(a).amax(0).sum(), ((3, 5),)),
    (lambda a, w, b: F.layer_norm(F.linear(a, w, b), (4,)), ((2, 3), (4, 3), (4,))),
    (lambda a: F.log_softmax(a[:, ::2], -1).exp().mean(), ((3, 6),)),
    (lambda a, b: F.silu(torch.matmul(a, b)), ((2, 3, 4), (4, 2))),
    (lambda a: torch.cat([a.sin(), a.expand(2, 3, 4).cos()], 0).pow(2), ((1, 3, 4),)),
]


@pytest.mark.parametrize("case", range(len(GC)))
def test_gradcheck_f64(case):
    fn, shapes = GC[case]
    xs = [torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in shapes]
    cf = torchc.compile(fn)
    assert torch.autograd.gradcheck(cf, xs)
    ex = torchc.explain(fn)(*xs)
    assert ex.backward_graph_count == 1, str(ex)


# ---- autograd semantics -------------------------------------------------------------------------
def test_backward_semantics():
    w = nn.Parameter(R(4, 3))
    x = R(2, 4)

    def f(x):
        return (x @ w).tanh()

    cf = torchc.compile(f)
    out = cf(x)
    assert out.requires_grad and out.grad_fn is not None
    # retain_graph, accumulation into .grad
    out.sum().backward(retain_graph=True)
    g1 = w.grad.clone()
    out.sum().backward()
    assert_same(w.grad, 2 * g1)
    w.grad = None
    f(x).sum().backward()
    assert_same(g1, w.grad, **F32)
    # autograd.grad, hooks on inputs and outputs
    xr = x.clone().requires_grad_(True)
    seen = []
    xr.register_hook(lambda g: seen.append(g.clone()))
    out = cf(xr)
    out.register_hook(lambda g: g * 2)
    (gx,) = torch.autograd.grad(out.sum(), xr)
    xe = x.clone().requires_grad_(True)
    oe = f(xe)
    oe.register_hook(lambda g: g * 2)
    (ge,) = torch.autograd.grad(oe.sum(), xe)
    assert_same(gx, ge, **F32)
    assert len(seen) == 1
    # later no_grad evaluation: the inference entry, no graph attached
    with torch.no_grad():
        r = cf(x)
    assert not r.requires_grad
    assert_same(r, f(x).detach(), **F32)
    ex = torchc.explain(f)(x)
    assert ex.backward_graph_count == 1


def test_stop_gradients():
    def f(x, y):
        with torch.no_grad():
            s = x * 3
        return x * s + y.detach() * x + y, (x * y).requires_grad, s.requires_grad

    ex = grads_match(f, R(3, 4), R(3, 4))
    assert ex.result[1] is True and ex.result[2] is False


def test_non_differentiable_outputs():
    def f(x):
        return x.argmax(1), x.sin(), (x > 0)

    ex = grads_match(f, R(3, 4))
    assert not ex.result[0].requires_grad and not ex.result[2].requires_grad


def test_partial_requires_grad():
    w = nn.Parameter(R(4))
    b = torch.randn(4)  # no grad
    grads_match(lambda x, w, b: x * w + b, R(3, 4), w, b, rg=[False, True, False])


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_no_rule_falls_back_with_reason():
    def f(x):
        return torch.cumprod(x, 1).sum()

    x = R(3, 4).requires_grad_(True)
    ex = torchc.explain(f)(x)
    assert ex.backward_graph_count == 0
    assert any("no backward rule" in r for r in ex.break_reasons), ex.break_reasons
    ex.result.backward()
    xe = x.detach().clone().requires_grad_(True)
    f(xe).backward()
    assert_same(x.grad, xe.grad, **F32)


def test_saved_bytes_reported():
    m = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    ex = torchc.explain(m)(R(16, 8))
    assert ex.backward_graph_count == 1
    # the two linear outputs (16x32 and 16x4 f32) at most; the relu output is recomputed
    assert 0 < ex.saved_bytes <= 16 * 32 * 4 + 16 * 4 * 4, ex.saved_bytes
    assert "Backward Graph 0" in str(ex) and "Saved Bytes" in str(ex)


# ---- training loops ---------------------------------------------------------------------------
def _train(make, data, steps=30, lr=0.05, tol=dict(rtol=1e-4, atol=1e-5), opt="sgd"):
    torch.manual_seed(0)
    me = make()
    mc = make()
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    mk = (lambda p: torch.optim.SGD(p, lr=lr, momentum=0.9)) if opt == "sgd" else (lambda p: torch.optim.Adam(p, lr=lr * 0.1))
    oe, oc = mk(me.parameters()), mk(mc.parameters())
    for step in range(steps):
        x, y = data(step)
        le = F.mse_loss(me(x), y)
        lc = F.mse_loss(cm(x), y)
        oe.zero_grad()
        oc.zero_grad()
        le.backward()
        lc.backward()
        oe.step()
        oc.step()
        assert_same(lc.detach(), le.detach(), **tol)
    for (n, pe), pc in zip(me.named_parameters(), mc.parameters()):
        assert_same(pc.detach(), pe.detach(), **tol)
    for (n, be), bc in zip(me.named_buffers(), mc.buffers()):
        assert_same(bc, be, **tol)
    ex = torchc.explain(cm)(data(0)[0])
    assert ex.graph_count >= 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == ex.graph_count, str(ex)
    return ex


def test_train_mlp():
    def make():
        return nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))

    g = torch.Generator().manual_seed(1)
    xs = [(torch.randn(8, 10, generator=g), torch.randn(8, 3, generator=g)) for _ in range(30)]
    _train(make, lambda i: xs[i])
    _train(make, lambda i: xs[i], opt="adam")


class GRUCell(nn.Module):
    def __init__(self, n_in=6, n_h=12):
        super().__init__()
        self.x2h = nn.Linear(n_in, 3 * n_h)
        self.h2h = nn.Linear(n_h, 3 * n_h)
        self.out = nn.Linear(n_h, 2)
        self.n_h = n_h

    def forward(self, xs):
        h = torch.zeros(xs.shape[1], self.n_h)
        for t in range(xs.shape[0]):
            gx = self.x2h(xs[t]).chunk(3, -1)
            gh = self.h2h(h).chunk(3, -1)
            r = torch.sigmoid(gx[0] + gh[0])
            z = torch.sigmoid(gx[1] + gh[1])
            n = torch.tanh(gx[2] + r * gh[2])
            h = (1 - z) * n + z * h
        return self.out(h)


def test_train_gru_cell():
    g = torch.Generator().manual_seed(2)
    xs = [(torch.randn(5, 4, 6, generator=g), torch.randn(4, 2, generator=g)) for _ in range(30)]
    _train(GRUCell, lambda i: xs[i])


class Block(nn.Module):
    def __init__(self, d=16, h=2):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.h = h

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, -1)
        q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // self.h)
        att = att.masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def test_train_transformer_block():
    g = torch.Generator().manual_seed(3)
    xs = [(torch.randn(2, 5, 16, generator=g), torch.randn(2, 5, 16, generator=g)) for _ in range(30)]
    _train(Block, lambda i: xs[i], tol=dict(rtol=2e-4, atol=2e-5))


# ---- convolutions (ATen's convolution_backward as extern calls) --------------------------------
CONVS = [
    (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 9, 9)),
    (lambda: nn.Conv2d(4, 8, 3, stride=2, groups=2), (2, 4, 9, 9)),
    (lambda: nn.Conv1d(3, 5, 3, dilation=2, bias=False), (2, 3, 11)),
    (lambda: nn.Conv2d(4, 4, 3, padding=1, groups=4), (1, 4, 6, 6)),
    (lambda: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv(case):
    make, shape = CONVS[case]
    torch.manual_seed(case)
    m = make()
    params = list(m.parameters())
    grads_match(lambda x, *ps: torch.relu(m(x)) * 2, R(*shape), *params)


def test_conv_channels_last():
    m = nn.Conv2d(3, 8, 3, padding=1)
    x = R(2, 3, 8, 8).to(memory_format=torch.channels_last)
    grads_match(lambda x, w, b: F.relu(m(x)) + 1, x, m.weight, m.bias)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.b1(self.c1(x)))
        x = F.relu(self.b2(self.c2(x))) + F.avg_pool2d(x, 2)
        return self.fc(x.mean((2, 3)))


def test_train_cnn_batchnorm():
    g = torch.Generator().manual_seed(4)
    xs = [(torch.randn(4, 3, 8, 8, generator=g), torch.randn(4, 4, generator=g)) for _ in range(30)]
    _train(CNN, lambda i: xs[i], tol=dict(rtol=2e-4, atol=5e-5))


# ---- attention -------------------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(causal):
    q, k, v = R(2, 3, 5, 8), R(2, 3, 5, 8), R(2, 3, 5, 4)
    grads_match(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal) * 2, q, k, v)
    grads_match(lambda q, k, v: F.scaled_dot_product_attention(q.transpose(1, 2), k, v, scale=0.3).sin(),
                R(2, 5, 3, 8), R(2, 3, 7, 8), R(2, 3, 7, 8))


def test_sdpa_masks():
    q, k, v = R(2, 3, 5, 8), R(2, 3, 6, 8), R(2, 3, 6, 4)
    bm = torch.rand(2, 1, 5, 6) > 0.3
    bm[..., 0] = True  # no fully masked row
    fm = R(1, 1, 1, 6)
    grads_match(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, bm)
    grads_match(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.2), q, k, v, fm,
                rg=[True, True, True, False])


def test_sdpa_mask_requiring_grad_compiles():
    """a float mask that requires grad (a learned position bias) has a backward rule now
    (tests/test_training_sdpa_mask.py has the cases); before, the frame fell back"""
    q = R(1, 2, 4, 8).requires_grad_(True)
    m = R(4, 4).requires_grad_(True)
    f = lambda q, m: F.scaled_dot_product_attention(q, q, q, attn_mask=m)  # noqa: E731
    ex = torchc.explain(f)(q, m)
    assert (ex.graph_count, ex.graph_break_count, ex.backward_graph_count) == (1, 0, 1), ex.break_reasons
    gq, gm = torch.autograd.grad(ex.result.sum(), (q, m))
    wq, wm = torch.autograd.grad(f(q, m).sum(), (q, m))
    torch.testing.assert_close(gq, wq)
    torch.testing.assert_close(gm, wm)


# ---- AMP ------------------------------------------------------------------------------------------------
def test_autocast_region_gets_eager_dtypes():
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    x = R(4, 8)
    cm = torchc.compile(m)
    cm(x)  # compiled outside autocast first: that entry must not serve the autocast call
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ex = torchc.explain(cm)(x)
        want = m(x)
    assert ex.result.dtype == want.dtype == torch.bfloat16
    # the autocast state is guarded; autocast-listed ops (linear here) run with ATen's casts
    assert any("autocast cpu=bf16" in str(g) for g in ex.guards), ex.guards
    assert cm(x).dtype == torch.float32


# ---- dropout (the mask drawn by ATen when the graph runs, saved for the backward) -----------------------
def test_dropout_matches_eager_rng():
    def f(x, w):
        return F.dropout(F.linear(x, w).relu() + 1, 0.3) * 2 + F.dropout(x, 0.5).sum(1, keepdim=True)

    x, w = R(6, 8), R(5, 8)
    torch.manual_seed(11)
    ex = torchc.explain(f)(x.clone().requires_grad_(True), w.clone().requires_grad_(True))
    assert ex.backward_graph_count == 1 and ex.graph_break_count == 0, str(ex)
    xs = [x.clone().requires_grad_(True), w.clone().requires_grad_(True)]
    xe = [x.clone().requires_grad_(True), w.clone().requires_grad_(True)]
    cf = torchc.compile(f)
    torch.manual_seed(12)
    oc = cf(*xs)
    torch.manual_seed(12)
    oe = f(*xe)
    assert_same(oc, oe, **F32)  # the CPU masks are eager's bits (same generator calls in order)
    g = torch.randn_like(oe)
    oc.backward(g)
    oe.backward(g)
    for a, b in zip(xs, xe):
        assert_same(a.grad, b.grad, **F32)
    assert (oc.detach() != oe.detach().roll(1, 1)).any()  # not a constant pattern
    with torch.no_grad():  # model.train() under no_grad: still random, no graph attached
        r = cf(*xs)
        assert not r.requires_grad


class DropBlock(Block):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(super().forward(x))


def test_train_transformer_block_dropout():
    g = torch.Generator().manual_seed(5)
    xs = [(torch.randn(2, 5, 16, generator=g), torch.randn(2, 5, 16, generator=g)) for _ in range(30)]
    def data(i):  # the same generator state before eager's and torchc's forward of step i
        return xs[i]

    torch.manual_seed(0)
    me, mc = DropBlock(), DropBlock()
    mc.load_state_dict(me.state_dict())
    cm = torchc.compile(mc)
    oe, oc = torch.optim.SGD(me.parameters(), lr=0.05), torch.optim.SGD(mc.parameters(), lr=0.05)
    for i in range(30):
        x, y = data(i)
        torch.manual_seed(100 + i)
        le = F.mse_loss(me(x), y)
        torch.manual_seed(100 + i)
        lc = F.mse_loss(cm(x), y)
        for o, l in ((oe, le), (oc, lc)):
            o.zero_grad()
            l.backward()
            o.step()
        assert_same(lc.detach(), le.detach(), rtol=2e-4, atol=2e-5)
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert_same(pc.detach(), pe.detach(), rtol=2e-4, atol=2e-5)
    ex = torchc.explain(cm)(xs[0][0])
    assert ex.graph_count == 1 and ex.backward_graph_count == 1, str(ex)


# ---- GPU (skipped without CUDA) ---------------------------------------------------------------------------
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
GPU_TOL = dict(rtol=2e-3, atol=2e-3)  # TF32 / cuBLAS vs the compiled kernels


@cuda
@pytest.mark.parametrize("name", ["mul_bcast", "gelu_ln", "softmax", "linear", "conv", "sdpa", "embedding"])
def test_gpu_grads(name):
    d = "cuda"
    cases = {
        "mul_bcast": (lambda a, b: (a * b).sigmoid() + a.sum(0), (R(8, 5).to(d), R(5).to(d))),
        "gelu_ln": (lambda x, w, b: F.gelu(F.layer_norm(x, (64,), w, b)), (R(16, 64).to(d), R(64).to(d), R(64).to(d))),
        "softmax": (lambda x: F.log_softmax(x, -1) * x, (R(32, 100).to(d),)),
        "linear": (lambda x, w, b: F.linear(x, w, b).relu(), (R(4, 7, 32).to(d), R(16, 32).to(d), R(16).to(d))),
        "conv": (lambda x, w, b: F.relu(F.conv2d(x, w, b, padding=1)), (R(2, 3, 8, 8).to(d), R(8, 3, 3, 3).to(d), R(8).to(d))),
        "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 (R(2, 4, 16, 32).to(d), R(2, 4, 16, 32).to(d), R(2, 4, 16, 32).to(d))),
        "embedding": (lambda w, i: F.embedding(i, w, padding_idx=0).sum(1), (R(50, 16).to(d), torch.randint(0, 50, (4, 9), device=d))),
    }
    fn, args = cases[name]
    grads_match(fn, *args, tol=GPU_TOL)


@cuda
def test_gpu_train_loops():
    def make():
        return nn.Sequential(nn.Linear(10, 64), nn.GELU(), nn.Dropout(0.0), nn.Linear(64, 3)).cuda()

    g = torch.Generator().manual_seed(1)
    xs = [(torch.randn(8, 10, generator=g).cuda(), torch.randn(8, 3, generator=g).cuda()) for _ in range(30)]
    _train(make, lambda i: xs[i], tol=GPU_TOL)
    xc = [(torch.randn(4, 3, 8, 8, generator=g).cuda(), torch.randn(4, 4, generator=g).cuda()) for _ in range(30)]
    _train(lambda: CNN().cuda(), lambda i: xc[i], tol=dict(rtol=5e-3, atol=5e-3))


# ---- saved activations vs eager's ------------------------------------------------------------------------
def _eager_saved_bytes(m, *xs):
    """bytes of the tensors eager's autograd saves, except parameters, inputs and the output"""
    skip = {p.untyped_storage().data_ptr() for p in m.parameters()} | {x.untyped_storage().data_ptr() for x in xs}
    seen = {}

    def pack(t):
        k = t.untyped_storage().data_ptr()
        if k not in skip:
            seen[k] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = m(*xs)
    seen.pop(out.untyped_storage().data_ptr(), None)
    return sum(seen.values())


@pytest.mark.parametrize("name", ["block", "dropblock", "gru", "cnn", "mlp"])
def test_saved_bytes_vs_eager(name):
    m, xs = {"block": (Block(), (R(2, 5, 16),)), "dropblock": (DropBlock(), (R(2, 5, 16),)),
             "gru": (GRUCell(), (R(5, 4, 6),)), "cnn": (CNN(), (R(4, 3, 8, 8),)),
             "mlp": (nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)),
                     (R(32, 64),))}[name]
    m.train()
    ex = torchc.explain(m)(*xs)
    assert ex.backward_graph_count == 1
    eager = _eager_saved_bytes(m, *xs)
    assert ex.saved_bytes <= eager, (ex.saved_bytes, eager)
