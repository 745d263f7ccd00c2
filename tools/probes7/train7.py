"""requires_grad inputs (training path) for a subset of the round's ops."""
import torch
import torch.nn.functional as F

from probe2 import scenario


def _grad(C, R, fn, *xs):
    g = C(fn)
    ins = [x.detach().clone().requires_grad_(x.is_floating_point() or x.is_complex()) for x in xs]
    try:
        out = g(*ins)
        loss = sum(o.float().sum() if o.dtype != torch.complex64 else o.abs().sum() for o in (out if isinstance(out, tuple) else (out,))
                   if o.requires_grad)
        loss.backward()
    except Exception as e:   # noqa: BLE001
        R(type(e).__name__)
        return
    R(out)
    R([x.grad for x in ins])


@scenario(rtol=1e-5, atol=1e-5)
def grads_nn_functional(C, R):
    img = torch.arange(40.0).reshape(1, 2, 4, 5).sin()
    grid = torch.tensor([[[[-0.9, -1.0], [0.3, 0.9], [1.0, 1.0]], [[0.0, 0.0], [-0.5, 0.25], [0.7, -0.3]]]])
    w = torch.arange(30.0).reshape(10, 3).cos()
    cases = [(lambda x: F.interpolate(x, size=(7, 3), mode="bilinear"), img),
             (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), img),
             (lambda x: F.interpolate(x, size=(3, 3), mode="bicubic", align_corners=True), img),
             (lambda x: F.interpolate(x, size=(2, 3), mode="area"), img),
             (lambda x, g: F.grid_sample(x, g, align_corners=False), img, grid),
             (lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="border", align_corners=True), img, grid),
             (lambda x: F.pad(x, (1, 2, 2, 0), mode="reflect"), img), (lambda x: F.pad(x, (1, 2, 2, 0), mode="circular"), img),
             (lambda x: F.pad(x, (-1, 2)), img), (lambda x: F.fold(F.unfold(x, 2), (4, 5), 2), img),
             (lambda w: F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3]), w, torch.tensor([0, 3]), mode="max"), w),
             (lambda w: F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3]), w, torch.tensor([0, 3]), mode="mean", padding_idx=4), w),
             (lambda w, p: F.embedding_bag(torch.tensor([1, 2, 4]), w, torch.tensor([0, 1]), per_sample_weights=p), w, torch.tensor([0.5, 2.0, -1.0])),
             (lambda w: F.embedding(torch.tensor([[1, 1], [0, 2]]), w, padding_idx=1), w),
             (lambda x: F.pixel_shuffle(x.reshape(1, 4, 2, 5), 2), img), (lambda x: F.normalize(x, dim=1), img),
             (lambda x: F.cosine_similarity(x, x.flip(1), dim=1), img), (lambda x: F.rms_norm(x, (5,)), img)]
    for c in cases:
        _grad(C, R, c[0], *c[1:])


@scenario(rtol=1e-5, atol=1e-5)
def grads_index_sort_cum(C, R):
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0], [0.5, -1.0, 0.0, 4.0]])
    i = torch.tensor([[0, 0, 3], [1, 1, 1]])
    cases = [(lambda x: x.sort(1, stable=True)[0] * torch.arange(4.0), x), (lambda x: x.topk(2)[0], x),
             (lambda x: x.kthvalue(2, 1)[0], x), (lambda x: x.median(1)[0], x), (lambda x: x.cummax(1)[0], x),
             (lambda x: x.cumprod(1), x), (lambda x: x.cumprod(1), x * torch.tensor([1.0, 0.0, 1.0, 1.0])),
             (lambda x: x.logcumsumexp(1), x), (lambda x: x.scatter_reduce(1, i, x[:, :3], "amax"), x),
             (lambda x: x.scatter_reduce(1, i, x[:, :3] * 2, "prod", include_self=False), x),
             (lambda x: x.scatter_reduce(1, i, x[:, :3], "mean"), x),
             (lambda x: x.index_put((torch.tensor([0, 0]),), x[1] * 3, accumulate=True), x),
             (lambda x: x[torch.tensor([1, 1, 0]), torch.tensor([-1, -1, 2])], x), (lambda x: x[x > 1], x),
             (lambda x: x.masked_scatter(x > 1, x.flip(0) * 10), x), (lambda x: x.index_reduce(0, torch.tensor([1, 1]), x * 2, "amin"), x),
             (lambda x: torch.take_along_dim(x, x.argsort(1), 1), x), (lambda x: x.amax((0, 1)), x), (lambda x: x.std((0, 1)), x),
             (lambda x: x.var(1, correction=0, keepdim=True), x), (lambda x: x.clamp(torch.tensor(1.0), torch.tensor([[2.0], [3.0]])), x),
             (lambda x: torch.where(x > 1, x, x.new_tensor(float("nan"))).nan_to_num(), x)]
    for c in cases:
        _grad(C, R, c[0], *c[1:])


@scenario(rtol=1e-4, atol=1e-4)
def grads_half_and_complex(C, R):
    xh = torch.tensor([[3.0, 1.0, 3.0, 2.0], [0.5, -1.0, 0.0, 4.0]])
    z = torch.tensor([1 + 2j, -3 + 0.5j, 0.25 - 4j], dtype=torch.complex64)
    cases = [(lambda x: x.softmax(1), xh.bfloat16()), (lambda x: x.sum(0), xh.half()), (lambda x: x.cumsum(1), xh.bfloat16()),
             (lambda x: F.layer_norm(x, (4,)), xh.bfloat16()), (lambda z: z.exp() * z.conj(), z), (lambda z: z.abs(), z),
             (lambda z: torch.view_as_real(z * z).sum(-1), z), (lambda z: (z / (z + 1)).angle(), z)]
    for c in cases:
        _grad(C, R, c[0], *c[1:])
