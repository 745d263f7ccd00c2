"""Gradients at the special points eager defines: ties, boundaries, zeros, infinities, NaN
in the branch not taken, -inf rows, and ops whose backward scatters (gather, index, sort)."""
import torch
import torch.nn.functional as F

from probe2 import scenario


def _grad_case(C, R, fn, *inputs, dtype=torch.float32):
    g = C(fn)
    xs = [t.detach().clone().to(dtype).requires_grad_(True) if t.is_floating_point() else t for t in inputs]
    try:
        out = g(*xs)
    except Exception as e:  # noqa: BLE001
        R(("raised", type(e).__name__))
        return
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o.float() * torch.linspace(0.5, 1.5, o.numel()).reshape(o.shape)).sum() for o in outs if o.requires_grad)
    R(outs)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        loss.backward()
    R([x.grad for x in xs if isinstance(x, torch.Tensor) and x.requires_grad])


@scenario
def grad_at_kinks(C, R):
    x = torch.tensor([-1.0, 0.0, 1.0, 0.0, 2.0])
    for fn in (torch.relu, torch.abs, F.leaky_relu, F.elu, F.hardtanh, F.relu6, torch.sign, F.hardswish,
               F.hardsigmoid, F.softshrink, F.hardshrink, F.silu, F.gelu, F.mish, torch.floor, torch.round):
        _grad_case(C, R, lambda x, fn=fn: fn(x), x)


@scenario
def grad_clamp_boundaries(C, R):
    x = torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    _grad_case(C, R, lambda x: x.clamp(0, 1), x)
    _grad_case(C, R, lambda x: x.clamp(min=0.5), x)
    _grad_case(C, R, lambda x, lo: torch.clamp(x, min=lo), x, torch.tensor([0.0, 0.0, 0.5, 2.0, 2.0]))
    _grad_case(C, R, lambda x, y: torch.maximum(x, y), x, torch.tensor([-1.0, 1.0, 0.5, 1.0, 3.0]))
    _grad_case(C, R, lambda x, y: torch.minimum(x, y), x, torch.tensor([-1.0, 1.0, 0.5, 1.0, 3.0]))
    _grad_case(C, R, lambda x, y: torch.fmax(x, y), x, torch.tensor([float("nan"), 1.0, 0.5, 1.0, 3.0]))


@scenario
def grad_max_ties(C, R):
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    _grad_case(C, R, lambda x: x.max(), x)
    _grad_case(C, R, lambda x: x.amax(1), x)
    _grad_case(C, R, lambda x: x.max(1).values, x)
    _grad_case(C, R, lambda x: x.amin(0), x)
    _grad_case(C, R, lambda x: x.norm(dim=1, p=float("inf")), x)
    _grad_case(C, R, lambda x: torch.logsumexp(x, 1), x)
    _grad_case(C, R, lambda x: x.median(), x)
    _grad_case(C, R, lambda x: x.topk(2, 1).values, x)
    _grad_case(C, R, lambda x: x.sort(1).values[:, -1], x)


@scenario
def grad_sqrt_pow_log_at_zero(C, R):
    x = torch.tensor([0.0, 1.0, 4.0])
    _grad_case(C, R, torch.sqrt, x)
    _grad_case(C, R, lambda x: x ** 2, x)
    _grad_case(C, R, lambda x: x ** 0.5, x)
    _grad_case(C, R, lambda x: x ** 0, x)
    _grad_case(C, R, lambda x, y: x ** y, x, torch.tensor([0.0, 2.0, 0.5]))
    _grad_case(C, R, lambda x: torch.log(x), x)
    _grad_case(C, R, lambda x: x.norm(), torch.zeros(3))
    _grad_case(C, R, lambda x: x.norm(dim=0), torch.zeros(3, 2))
    _grad_case(C, R, lambda x: F.normalize(x, dim=0), torch.zeros(3))
    _grad_case(C, R, lambda x: torch.atan2(x, x), torch.zeros(2))
    _grad_case(C, R, lambda x: x.std(), torch.ones(1))
    _grad_case(C, R, lambda x: x.var(0), torch.ones(1, 2))


@scenario
def grad_where_nan_branch(C, R):
    x = torch.tensor([-1.0, 0.0, 4.0])
    _grad_case(C, R, lambda x: torch.where(x > 0, x.sqrt(), torch.zeros_like(x)), x)
    _grad_case(C, R, lambda x: torch.where(x > 0, x.log(), x), x)
    _grad_case(C, R, lambda x: x.masked_fill(x <= 0, 0.0).sqrt(), x)
    _grad_case(C, R, lambda x: torch.nan_to_num(x.log()), x)


@scenario
def grad_softmax_with_inf_rows(C, R):
    x = torch.tensor([[0.0, float("-inf"), 1.0], [float("-inf")] * 3])
    _grad_case(C, R, lambda x: x.softmax(-1), x)
    _grad_case(C, R, lambda x: x.log_softmax(-1), x[:1])
    _grad_case(C, R, lambda x: torch.logsumexp(x, -1), x)
    m = torch.tensor([[True, False, True], [False, False, False]])
    _grad_case(C, R, lambda x: x.masked_fill(~m, float("-inf")).softmax(-1).nan_to_num(), torch.randn(2, 3))


@scenario
def grad_index_ops_with_duplicates(C, R):
    x = torch.randn(4, 3)
    i = torch.tensor([0, 2, 0, 0])
    _grad_case(C, R, lambda x: x[i], x)
    _grad_case(C, R, lambda x: x.index_select(0, i), x)
    _grad_case(C, R, lambda x: x.gather(1, torch.tensor([[0, 0], [1, 1], [2, 0], [1, 2]])), x)
    _grad_case(C, R, lambda x: F.embedding(i, x), x)
    _grad_case(C, R, lambda x, v: x.index_add(0, i, v), x, torch.randn(4, 3))
    _grad_case(C, R, lambda x, v: x.scatter(0, torch.tensor([[0, 1, 2]]), v), x, torch.randn(1, 3))
    _grad_case(C, R, lambda x, v: x.scatter_add(0, torch.tensor([[0, 0, 0], [0, 1, 1]]), v), x, torch.randn(2, 3))
    _grad_case(C, R, lambda x, v: x.index_put((i,), v, accumulate=True), x, torch.randn(4, 3))
    _grad_case(C, R, lambda x: x[torch.tensor([True, False, True, True])], x)


@scenario
def grad_cumulative(C, R):
    x = torch.tensor([[1.0, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 1.0]])
    _grad_case(C, R, lambda x: x.cumsum(1), x)
    _grad_case(C, R, lambda x: x.cumprod(1), x)
    _grad_case(C, R, lambda x: x.cummax(1).values, x)
    _grad_case(C, R, lambda x: torch.logcumsumexp(x, 1), x)
    _grad_case(C, R, lambda x: x.prod(1), x)
    _grad_case(C, R, lambda x: x.prod(), x)


@scenario
def grad_losses_edges(C, R):
    p = torch.tensor([0.0, 1.0, 0.5, 1e-9])
    y = torch.tensor([0.0, 1.0, 1.0, 0.0])
    _grad_case(C, R, lambda p: F.binary_cross_entropy(p, y), p)
    _grad_case(C, R, lambda p: F.binary_cross_entropy_with_logits(p, y, pos_weight=torch.tensor(2.0)), p)
    _grad_case(C, R, lambda a, b: F.l1_loss(a, b), torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 0.0, 3.0]))
    _grad_case(C, R, lambda a, b: F.smooth_l1_loss(a, b, beta=1.0), torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 5.0]))
    _grad_case(C, R, lambda a, b: F.huber_loss(a, b, delta=1.0), torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 2.0, 5.0]))
    lg = torch.randn(4, 5)
    t = torch.tensor([1, -100, 4, 0])
    _grad_case(C, R, lambda z: F.cross_entropy(z, t, label_smoothing=0.1), lg)
    _grad_case(C, R, lambda z: F.cross_entropy(z, t, reduction="sum", weight=torch.arange(1.0, 6.0)), lg)
    _grad_case(C, R, lambda z: F.cross_entropy(z, torch.full((4,), -100)), lg)
    _grad_case(C, R, lambda z: F.nll_loss(z.log_softmax(-1), t), lg)
    _grad_case(C, R, lambda z: F.kl_div(z.log_softmax(-1), torch.softmax(torch.ones(4, 5), -1), reduction="batchmean"), lg)
    _grad_case(C, R, lambda a, b: F.cosine_similarity(a, b), torch.zeros(2, 3), torch.ones(2, 3))


@scenario
def grad_float64_and_half(C, R):
    x = torch.randn(3, 4)
    _grad_case(C, R, lambda x: (x.softmax(-1) * x).sum(-1), x, dtype=torch.float64)
    _grad_case(C, R, lambda x: F.layer_norm(x, (4,)), x, dtype=torch.float64)
    _grad_case(C, R, lambda x: (x.float() * 2).sum(), x, dtype=torch.float16)
    _grad_case(C, R, lambda x: x * 2 + 1, x, dtype=torch.bfloat16)


@scenario
def grad_views_reshapes(C, R):
    x = torch.randn(2, 3, 4)
    _grad_case(C, R, lambda x: x.transpose(0, 2).reshape(-1)[::3], x)
    _grad_case(C, R, lambda x: x.unfold(2, 2, 1).sum(-1), x)
    _grad_case(C, R, lambda x: torch.cat([x, x.flip(1)], 1).narrow(1, 2, 3), x)
    _grad_case(C, R, lambda x: x.expand(2, 2, 3, 4)[1], x)
    _grad_case(C, R, lambda x: torch.stack(x.unbind(1)[::-1], 0), x)
    _grad_case(C, R, lambda x: x.diagonal(0, 1, 2) * 2, x)
    _grad_case(C, R, lambda x: x.movedim(0, -1).contiguous().view(3, -1), x)
    _grad_case(C, R, lambda x: F.pad(x, (1, -1, 0, 2)), x)
    _grad_case(C, R, lambda x: x.roll(1, 2).tril() + x.triu(1), x[0])


@scenario
def grad_inplace_in_forward(C, R):
    x = torch.randn(3, 4)

    def f(x):
        y = x * 2
        y[:, 1] = 0
        y.relu_()
        y.mul_(x)
        z = y.clone()
        z[z > 1] = 1.0
        return z
    _grad_case(C, R, f, x)

    def h(x):
        y = x.exp()
        v = y[0]
        v.add_(1)
        return y
    _grad_case(C, R, h, x)

    def k(x):
        y = x.clone()
        y.t_()
        y.unsqueeze_(0)
        return y * 3
    _grad_case(C, R, k, x)
