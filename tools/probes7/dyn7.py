"""One compiled function called with a run of shapes, layouts and dtypes (recompiles, automatic
dynamic shapes), over this round's ops: each call against eager."""
import torch
import torch.nn.functional as F

from probe2 import scenario


def _img(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


def _run(C, R, fns, shapes, dts=(torch.float32,), mk=None):
    import torchc
    for fn in fns:
        torchc.reset()
        g = C(fn)
        for s in shapes:
            for dt in dts:
                x = _img(s, dt) if mk is None else mk(s, dt)
                R.call(g, x)
                R.call(g, x.transpose(-1, -2))
                R.call(g, x[..., 1:])


@scenario(rtol=1e-5, atol=1e-5)
def dyn_nn_functional(C, R):
    fns = [lambda x: F.pad(x, (1, 2), mode="circular"), lambda x: F.pad(x, (1, 2), mode="reflect"),
           lambda x: F.pad(x, (2, 1), mode="replicate"), lambda x: F.pad(x, (1, -1, 2, 0)),
           lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), lambda x: F.interpolate(x, size=(5, 4), mode="bilinear"),
           lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True),
           lambda x: F.max_pool2d(x, 2), lambda x: F.avg_pool2d(x, 2, ceil_mode=True), lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
           lambda x: F.unfold(x, 2), lambda x: F.pixel_shuffle(x, 1), lambda x: F.layer_norm(x, x.shape[-1:]),
           lambda x: F.rms_norm(x, x.shape[-2:]), lambda x: F.normalize(x, dim=-1), lambda x: F.group_norm(x, 1),
           lambda x: F.softmax(x, -2), lambda x: F.embedding(x.abs().long() % 5, torch.arange(10.0).reshape(5, 2)),
           lambda x: F.one_hot(x.abs().long() % 3, 3), lambda x: F.cosine_similarity(x, x.flip(-1), -1),
           lambda x: F.grid_sample(x, torch.zeros(x.shape[0], 2, 3, 2), align_corners=False)]
    _run(C, R, fns, [(1, 2, 4, 5), (2, 2, 4, 5), (2, 3, 6, 7), (1, 1, 3, 3), (3, 2, 5, 4)], (torch.float32, torch.bfloat16))


@scenario(exact=True)
def dyn_index_sort(C, R):
    fns = [lambda x: x[[0, -1]], lambda x: x[:, [[0], [1]], [1, 0]], lambda x: x[x > 0], lambda x: x.index_fill(-1, torch.tensor([0]), 2),
           lambda x: x.scatter_reduce(-1, torch.zeros_like(x, dtype=torch.long), x, "amax"),
           lambda x: x.gather(-1, x.argsort(-1, stable=True)), lambda x: x.sort(-2, stable=True), lambda x: x.topk(2, -1),
           lambda x: x.cumsum(-1), lambda x: x.cummax(-2), lambda x: x.amax((-1, -2)), lambda x: x.sum((0, -1), keepdim=True),
           lambda x: torch.where(x > 0, x, x.new_tensor(float("nan"))).nansum(-1), lambda x: x.roll(2, -1), lambda x: x.flip(-1, 0),
           lambda x: x.tril(), lambda x: x.diagonal(0, -2, -1), lambda x: x.unflatten(-1, (1, -1)), lambda x: x.chunk(3, -1),
           lambda x: x.masked_fill(x > 1, 0), lambda x: x.clamp(-1, 1), lambda x: x.kthvalue(1, -1)]
    _run(C, R, fns, [(2, 3, 4), (3, 3, 4), (2, 5, 6), (1, 2, 2), (4, 3, 5)], (torch.float32, torch.int64),
         mk=lambda s, dt: _img(s).mul(3).round().to(dt))
