"""Training through small programs that mix in-place ops on views, out=, integer/bool masks,
expanded / flipped / channels_last inputs, 0- and 1-size dims, inf/nan-producing paths,
advanced indexing and the nn.functional long tail: outputs and input grads against eager's."""
import torch
import torch.nn.functional as F

from probe2 import scenario


def _run(C, R, fn, *xs, rg=None):
    g = C(fn)
    ins = []
    for i, x in enumerate(xs):
        x = x.detach().clone()
        if (rg is None or i in rg) and x.is_floating_point():
            x.requires_grad_(True)
        ins.append(x)
    try:
        out = g(*ins)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o.double() * torch.arange(1.0, o.numel() + 1, dtype=torch.float64).reshape(o.shape).cos()).sum()
                   for o in outs if isinstance(o, torch.Tensor) and o.requires_grad)
        if isinstance(loss, torch.Tensor):
            loss.backward()
    except Exception as e:   # noqa: BLE001
        R(type(e).__name__)
        return
    R(out)
    R([x.grad for x in ins])


def _x(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


@scenario(rtol=1e-5, atol=1e-5)
def train_inplace_views_of_intermediates(C, R):
    def f1(x):
        y = x * 2
        y[:, 0].mul_(x[:, 1])
        y.diagonal().add_(1)
        return y
    def f2(x):
        y = x.clone()
        y[y > 0] = 0.0
        return y * x
    def f3(x):
        y = x.exp()
        y.view(-1)[::2].div_(2)
        return y.sum(1)
    def f4(x):
        y = x.relu()
        y.t_()
        y.clamp_(max=1.0)
        return y
    def f5(x):
        y = torch.empty_like(x)
        torch.mul(x, 3, out=y)
        return y.sin()
    def f6(x):
        y = x.sigmoid()
        y.masked_fill_(x < 0, 0.5)
        y.index_add_(0, torch.tensor([0, 0]), x[:2] * 2)
        return y
    def f7(x):
        y = x.new_zeros(x.shape[0], x.shape[1] + 2)
        y[:, 1:-1] = x
        y[:, 0] = x[:, -1]
        return y.cumsum(1)
    def f8(x):
        y = x.flip(0).contiguous()
        y.unsqueeze_(0).squeeze_(0)
        y[-1:] *= -1
        return y.flip(1)
    def f9(x):
        a, b = x.chunk(2, 1)
        a.add_(1) if not a.requires_grad else None
        c = a.clone()
        c.mul_(b)
        return c
    def f10(x):
        y = x * 1
        y.scatter_(1, torch.tensor([[0], [2], [1], [0]])[: x.shape[0]], -1.0)
        return y.logsumexp(1)
    for f in (f1, f2, f3, f4, f5, f6, f7, f8, f9, f10):
        for x in (_x((4, 4)), _x((4, 4)).T, _x((4, 4)).flip(1), _x((4, 4), torch.float64)):
            _run(C, R, f, x)


@scenario(rtol=1e-5, atol=1e-5)
def train_layouts_and_sizes(C, R):
    fns = [lambda x: F.conv2d(x, torch.ones(2, x.shape[1], 2, 2) * 0.1, padding=1),
           lambda x: F.batch_norm(x, None, None, training=True), lambda x: F.group_norm(x, 1),
           lambda x: F.instance_norm(x), lambda x: F.adaptive_avg_pool2d(x, 1), lambda x: F.max_pool2d(x, 2, ceil_mode=True),
           lambda x: F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False), lambda x: x.mean((2, 3), keepdim=True) * x,
           lambda x: F.interpolate(x, scale_factor=2, mode="nearest") + 1, lambda x: x.softmax(1).amax(1),
           lambda x: F.layer_norm(x, x.shape[-2:]), lambda x: F.local_response_norm(x, 2), lambda x: x.flatten(1) @ x.flatten(1).T,
           lambda x: F.max_pool2d(x, 2, return_indices=True)[0], lambda x: F.lp_pool2d(x.abs() + 0.1, 2, 2),
           lambda x: F.adaptive_max_pool2d(x, (1, 2)), lambda x: x.std(1), lambda x: x.norm(dim=(2, 3))]
    xs = [_x((2, 3, 4, 4)), _x((2, 3, 4, 4)).contiguous(memory_format=torch.channels_last), _x((1, 3, 1, 4)),
          _x((2, 3, 4, 4)).flip(3), _x((1, 3, 4, 4)).expand(2, 3, 4, 4)]
    for f in fns:
        for x in xs:
            _run(C, R, f, x)


@scenario(rtol=1e-5, atol=1e-5)
def train_nonfinite_paths(C, R):
    fns = [lambda x: torch.where(x > 0, x.sqrt(), 0.0), lambda x: torch.where(x != 0, 1 / x, x),
           lambda x: x.masked_fill(x < 0, float("-inf")).softmax(1), lambda x: x.masked_fill(x < 10, float("-inf")).softmax(1),
           lambda x: x.masked_fill(x < 0, float("-inf")).logsumexp(1), lambda x: x.clamp(min=0).log(),
           lambda x: (x * 1e30).exp().clamp(max=1e30), lambda x: x.max(1).values - x.min(1).values, lambda x: x.nan_to_num(),
           lambda x: x.abs().pow(0.0), lambda x: (x.abs() + 1e-45).log(), lambda x: F.normalize(x * 0, dim=1),
           lambda x: x.norm(dim=1) + x[:1].norm() * 0, lambda x: torch.atan2(x, x.flip(0)), lambda x: x.maximum(x.flip(1)),
           lambda x: x.nanmean(1), lambda x: x.amax(1) + x.amin(0).sum(), lambda x: x.sort(1).values * x.argsort(1)]
    z = _x((3, 4))
    z[1, 2] = 0.0
    z[0, 0] = z[0, 1]
    xs = [z, z.T.contiguous().T, z.flip(0), z.double()]
    for f in fns:
        for x in xs:
            _run(C, R, f, x)


@scenario(rtol=1e-5, atol=1e-5)
def train_indexing(C, R):
    fns = [lambda x: x[x > 0], lambda x: x[torch.tensor([-1, 0, -1])], lambda x: x[:, torch.tensor([True, False, True, True])],
           lambda x: x[torch.tensor([[0, 1], [2, 2]]), -1], lambda x: x[..., None, ::-1] if False else x[..., None, 1::2],
           lambda x: x.gather(1, torch.tensor([[0, 0], [3, 1], [2, 2]])), lambda x: x.take(torch.tensor([0, -1, 5])),
           lambda x: x.index_select(1, torch.tensor([3, 3, 0])), lambda x: x.masked_select(x.abs() > 1),
           lambda x: x.unfold(1, 2, 1), lambda x: x.as_strided((2, 2), (1, 2)), lambda x: x.diag_embed(),
           lambda x: x.tril(-1) + x.triu(2), lambda x: x.roll(1, 1) - x.rot90(1, (0, 1)).T, lambda x: x.repeat_interleave(2, 0),
           lambda x: x.repeat_interleave(torch.tensor([1, 0, 2]), 0), lambda x: torch.stack([x, x.flip(0)], -1).flatten(1),
           lambda x: x.expand(2, 3, 4).sum(0), lambda x: x.narrow(1, 1, 0).sum() + x.sum(), lambda x: x.split([1, 3], 1)[1],
           lambda x: x.movedim(0, 1).reshape(-1)[3:9], lambda x: x.index_put((torch.tensor([0, 0]), torch.tensor([1, 1])), torch.tensor(5.0), accumulate=True)]
    xs = [_x((3, 4)), _x((4, 3)).T, _x((3, 4)).flip(1), _x((3, 4), torch.float64)]
    for f in fns:
        for x in xs:
            _run(C, R, f, x)


@scenario(rtol=1e-5, atol=1e-5)
def train_two_inputs_partial_grad(C, R):
    fns = [lambda a, b: (a * b).sum(1), lambda a, b: torch.where(a > b, a, b), lambda a, b: a.clamp(b - 1, b + 1),
           lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: torch.addcdiv(a, a, b.abs() + 1), lambda a, b: torch.cdist(a, b),
           lambda a, b: torch.einsum("ij,kj->ik", a, b), lambda a, b: F.cosine_similarity(a, b), lambda a, b: F.pairwise_distance(a, b),
           lambda a, b: torch.maximum(a, b) - torch.fmin(a, b), lambda a, b: torch.hypot(a, b), lambda a, b: torch.atan2(a, b),
           lambda a, b: (a @ b.T).softmax(-1) @ b, lambda a, b: torch.cat([a, b], 0).var(0), lambda a, b: a.pow(b.abs()),
           lambda a, b: F.mse_loss(a, b), lambda a, b: F.kl_div(a.log_softmax(1), b.softmax(1), reduction="batchmean")]
    a, b = _x((3, 4)), _x((3, 4)).flip(0) * 0.5
    for f in fns:
        for rg in ((0, 1), (0,), (1,)):
            _run(C, R, f, a, b, rg=rg)
        _run(C, R, f, a, b[:1], rg=(0, 1))
