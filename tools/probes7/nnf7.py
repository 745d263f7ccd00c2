"""torch.nn.functional with unusual arguments: interpolate modes, pad modes, unfold/fold,
embedding_bag, one_hot, grid_sample, affine_grid, pixel_shuffle, normalize & co."""
import torch
import torch.nn.functional as F

from probe2 import scenario
from probes7._util import each


def _img(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n)).reshape(shape).mul(0.37).sin() * 3).to(dt)


@scenario(rtol=1e-5, atol=1e-5)
def interpolate_1d_modes(C, R):
    fns = []
    for mode, ac in (("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True), ("area", None)):
        for kw in ({"size": 7}, {"size": 2}, {"scale_factor": 2.5}, {"scale_factor": 0.5}, {"size": 1},
                   {"scale_factor": 1.7, "recompute_scale_factor": True}):
            fns.append(lambda x, mode=mode, ac=ac, kw=kw: F.interpolate(x, mode=mode, align_corners=ac, **kw))
    xs = [_img((2, 3, 5)), _img((1, 2, 1)), _img((2, 3, 5)).transpose(0, 1), _img((2, 3, 5), torch.float64)]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def interpolate_2d_modes(C, R):
    fns = []
    for mode, ac in (("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True),
                     ("bicubic", False), ("bicubic", True), ("area", None)):
        for kw in ({"size": (7, 3)}, {"scale_factor": (1.5, 0.5)}, {"scale_factor": 3}, {"size": (1, 1)},
                   {"scale_factor": 0.75, "recompute_scale_factor": True}):
            fns.append(lambda x, mode=mode, ac=ac, kw=kw: F.interpolate(x, mode=mode, align_corners=ac, **kw))
    xs = [_img((2, 3, 4, 5)), _img((2, 3, 4, 5)).contiguous(memory_format=torch.channels_last), _img((1, 1, 1, 2))]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def interpolate_antialias_and_half(C, R):
    fns = [lambda x: F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True),
           lambda x: F.interpolate(x, size=(2, 3), mode="bicubic", antialias=True),
           lambda x: F.interpolate(x, scale_factor=0.4, mode="bilinear", antialias=True, align_corners=True),
           lambda x: F.interpolate(x, size=(8, 9), mode="bilinear"),
           lambda x: F.interpolate(x, size=(8, 9), mode="nearest"),
           lambda x: F.interpolate(x, scale_factor=2, mode="nearest-exact")]
    xs = [_img((1, 2, 5, 6)), _img((1, 2, 5, 6), torch.bfloat16), _img((1, 2, 5, 6), torch.float16),
          _img((1, 2, 5, 6), torch.float64)]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def interpolate_3d_and_errors(C, R):
    fns = [lambda x: F.interpolate(x, scale_factor=2, mode="trilinear"),
           lambda x: F.interpolate(x, size=(3, 2, 5), mode="trilinear", align_corners=True),
           lambda x: F.interpolate(x, size=(3, 2, 5), mode="nearest"),
           lambda x: F.interpolate(x, size=(3, 2, 5), mode="area"),
           lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),   # 5-d bilinear raises
           lambda x: F.interpolate(x, size=(2, 2), mode="nearest"),       # wrong size rank raises
           lambda x: F.interpolate(x, mode="nearest"),                    # neither raises
           lambda x: F.interpolate(x, size=(2, 2, 2), scale_factor=2.0),  # both raise
           lambda x: F.interpolate(x, size=(2, 2, 2), mode="bogus")]
    each(C, R, fns, [_img((1, 2, 3, 4, 2))])


@scenario(exact=True)
def pad_modes(C, R):
    fns = []
    for mode in ("constant", "reflect", "replicate", "circular"):
        for p in ((1, 2), (0, 0), (-1, 1), (2, -1), (1, 1, 1, 1), (3, 0, 0, 1)):
            fns.append(lambda x, mode=mode, p=p: F.pad(x, p, mode=mode))
    fns.append(lambda x: F.pad(x, (1, 1), value=float("nan")))
    fns.append(lambda x: F.pad(x, (2, 2), value=-1.5))
    fns.append(lambda x: F.pad(x, (1, 1, 1, 1, 1, 1, 1, 1)))    # pads the batch dim too
    fns.append(lambda x: F.pad(x, (5, 5), mode="reflect"))         # pad >= size raises
    fns.append(lambda x: F.pad(x, (1,)))                           # odd length raises
    xs = [_img((2, 3, 4)), _img((2, 3, 4)).transpose(1, 2), _img((1, 2, 3, 4)), _img((2, 3, 4)).to(torch.int64)]
    each(C, R, fns, xs)


@scenario(exact=True)
def pad_int_and_bool(C, R):
    fns = [lambda x: F.pad(x, (1, 1), value=2), lambda x: F.pad(x, (1, 1), value=2.7), lambda x: F.pad(x, (1, 0), value=True),
           lambda x: F.pad(x, (1, 2), mode="replicate"), lambda x: F.pad(x, (-1, -1))]
    xs = [torch.tensor([[1, 2, 3]], dtype=torch.uint8), torch.tensor([[True, False, True]]),
          torch.tensor([[-1, 2, 3]], dtype=torch.int8), torch.tensor([[1.5, 2, 3]], dtype=torch.float16)]
    each(C, R, fns, xs)


@scenario(exact=True)
def unfold_fold(C, R):
    fns = [lambda x: F.unfold(x, 2), lambda x: F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
           lambda x: F.unfold(x, 3, padding=(0, 1)),
           lambda x: F.fold(F.unfold(x, 2), (x.shape[2], x.shape[3]), 2),
           lambda x: F.fold(F.unfold(x, 2, stride=2, padding=1), (x.shape[2], x.shape[3]), 2, stride=2, padding=1),
           lambda x: x.unfold(2, 2, 1), lambda x: x.unfold(-1, 3, 2), lambda x: x.unfold(1, 1, 5),
           lambda x: F.unfold(x, 9)]   # kernel larger than the input raises
    xs = [_img((1, 2, 4, 5)), _img((2, 1, 3, 3)).transpose(2, 3), _img((1, 2, 4, 5), torch.float64),
          _img((1, 2, 4, 5)).contiguous(memory_format=torch.channels_last)]
    each(C, R, fns, xs)


@scenario(exact=True)
def fold_3d_unbatched(C, R):
    fns = [lambda x: F.fold(x, (3, 4), 2), lambda x: F.fold(x, (4, 3), (2, 2), dilation=1, stride=1),
           lambda x: F.fold(x, (5, 5), 2)]   # block count mismatch raises
    each(C, R, fns, [torch.arange(48.0).reshape(8, 6), torch.arange(96.0).reshape(2, 8, 6)])


@scenario(rtol=1e-5, atol=1e-5)
def embedding_bag_modes(C, R):
    w = _img((10, 3))
    fns = []
    for mode in ("sum", "mean", "max"):
        fns.append(lambda i, o, mode=mode: F.embedding_bag(i, w, o, mode=mode))
        fns.append(lambda i, o, mode=mode: F.embedding_bag(i, w, o, mode=mode, include_last_offset=True))
        fns.append(lambda i, o, mode=mode: F.embedding_bag(i, w, o, mode=mode, padding_idx=2))
    fns.append(lambda i, o: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=torch.linspace(0.5, 2, i.numel())))
    fns.append(lambda i, o: F.embedding_bag(i, w, o, mode="mean", per_sample_weights=torch.ones(i.numel())))  # raises
    fns.append(lambda i, o: F.embedding_bag(i, w, o, max_norm=1.0))
    xs = [(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4])),
          (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 0, 4, 8])),   # empty bags
          (torch.tensor([2, 2, 2]), torch.tensor([0, 1])),
          (torch.tensor([1, 2, 4], dtype=torch.int32), torch.tensor([0, 2], dtype=torch.int32)),
          (torch.tensor([], dtype=torch.int64), torch.tensor([0, 0]))]
    each(C, R, fns, xs, star=True)


@scenario(rtol=1e-5, atol=1e-5)
def embedding_bag_2d_and_embedding(C, R):
    w = _img((6, 4))
    fns = [lambda i: F.embedding_bag(i, w), lambda i: F.embedding_bag(i, w, mode="max"),
           lambda i: F.embedding_bag(i, w, padding_idx=0, mode="mean"),
           lambda i: F.embedding(i, w, padding_idx=1), lambda i: F.embedding(i, w, padding_idx=-1),
           lambda i: F.embedding(i, w.T), lambda i: F.embedding(i.T, w),
           lambda i: F.embedding(i - 7, w)]   # out of range raises
    xs = [torch.tensor([[0, 1, 2], [3, 0, 0]]), torch.tensor([[5, 5], [1, 0]]), torch.zeros(2, 0, dtype=torch.int64)]
    each(C, R, fns, xs)


@scenario(exact=True)
def one_hot(C, R):
    fns = [lambda x: F.one_hot(x), lambda x: F.one_hot(x, 6), lambda x: F.one_hot(x, -1), lambda x: F.one_hot(x, 2),
           lambda x: F.one_hot(x.T if x.dim() == 2 else x, 5).float().sum(0), lambda x: F.one_hot(x, 5).dtype]
    xs = [torch.tensor([0, 3, 1]), torch.tensor([[1, 0], [4, 2]]), torch.tensor(2), torch.tensor([-1, 2]),
          torch.tensor([0, 1], dtype=torch.int32), torch.tensor([0.0, 1.0]), torch.zeros(0, dtype=torch.int64)]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def grid_sample_modes(C, R):
    x = _img((1, 2, 4, 5))
    g1 = torch.tensor([[[[-1.2, -1.0], [0.3, 0.9], [1.0, 1.0], [1.7, -0.4]],
                        [[0.0, 0.0], [-0.5, 0.25], [2.5, 3.0], [-1.0, 1.0]]]])
    fns = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for pm in ("zeros", "border", "reflection"):
            for ac in (False, True):
                fns.append(lambda x, g, mode=mode, pm=pm, ac=ac: F.grid_sample(x, g, mode=mode, padding_mode=pm, align_corners=ac))
    xs = [(x, g1), (x.contiguous(memory_format=torch.channels_last), g1), (x.double(), g1.double()),
          (x.expand(2, 2, 4, 5), torch.cat([g1, -g1])), (x, g1.transpose(1, 2))]
    each(C, R, fns, xs, star=True)


@scenario(rtol=1e-5, atol=1e-5)
def grid_sample_3d_and_nan(C, R):
    x = _img((1, 1, 3, 4, 2))
    g = torch.tensor([[[[[-1.0, 0.5, 0.2], [0.1, 1.2, -0.9]]]]])
    gn = torch.tensor([[[[float("nan"), 0.0], [float("inf"), 0.5]]]])
    fns = [lambda x, g: F.grid_sample(x, g, align_corners=False),
           lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
           lambda x, g: F.grid_sample(x, g, padding_mode="reflection", align_corners=False)]
    each(C, R, fns, [(x, g), (_img((1, 2, 4, 5)), gn)], star=True)


@scenario(rtol=1e-5, atol=1e-5)
def affine_grid_and_shuffle(C, R):
    th = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.4]]])
    th3 = torch.tensor([[[0.9, -0.2, 0.1, 0.0], [0.3, 1.1, -0.4, 0.2], [0.0, 0.1, 1.0, 0.3]]])
    fns = [lambda: F.affine_grid(th, (1, 2, 3, 4), align_corners=False),
           lambda: F.affine_grid(th, (1, 2, 3, 4), align_corners=True),
           lambda: F.affine_grid(th, (1, 2, 1, 1), align_corners=False),
           lambda: F.affine_grid(th3, (1, 1, 2, 3, 2), align_corners=False),
           lambda: F.affine_grid(th, (1, 2, 3, 4, 5), align_corners=False)]   # raises
    each(C, R, fns, [()], star=True)
    fns = [lambda x: F.pixel_shuffle(x, 2), lambda x: F.pixel_unshuffle(x, 2), lambda x: F.pixel_shuffle(x, 1),
           lambda x: F.pixel_shuffle(x, 3), lambda x: F.channel_shuffle(x, 2), lambda x: F.pixel_unshuffle(x, 3)]
    xs = [_img((1, 8, 2, 4)), _img((2, 4, 4, 2)).contiguous(memory_format=torch.channels_last), _img((4, 2, 2)),
          _img((1, 8, 2, 4)).transpose(2, 3)]
    each(C, R, fns, xs)


@scenario(rtol=1e-5, atol=1e-5)
def normalize_similarity(C, R):
    fns = [lambda a, b: F.normalize(a), lambda a, b: F.normalize(a, p=1, dim=0), lambda a, b: F.normalize(a, p=float("inf"), dim=-1),
           lambda a, b: F.normalize(a, eps=10.0), lambda a, b: F.cosine_similarity(a, b), lambda a, b: F.cosine_similarity(a, b, dim=0),
           lambda a, b: F.cosine_similarity(a, b, eps=100.0), lambda a, b: F.pairwise_distance(a, b),
           lambda a, b: F.pairwise_distance(a, b, p=1, keepdim=True), lambda a, b: F.pairwise_distance(a, b, p=0),
           lambda a, b: F.pairwise_distance(a, b, p=float("inf")), lambda a, b: F.glu(a, 1) if a.shape[1] % 2 == 0 else a,
           lambda a, b: F.local_response_norm(a.unsqueeze(0), 2), lambda a, b: F.softmax(a, 1, dtype=torch.float64),
           lambda a, b: F.log_softmax(a, 0, dtype=torch.float16), lambda a, b: F.softmin(a, -1),
           lambda a, b: F.rms_norm(a, (a.shape[1],)), lambda a, b: F.rms_norm(a, (a.shape[1],), eps=1.0),
           lambda a, b: F.layer_norm(a, (a.shape[1],), eps=0.0)]
    z = torch.zeros(2, 4)
    xs = [(_img((3, 4)), _img((3, 4)).flip(0)), (z, z), (_img((3, 4)), _img((1, 4))), (_img((3, 4)).T.contiguous().T, z[:1]),
          (_img((3, 4), torch.bfloat16), _img((3, 4), torch.bfloat16))]
    each(C, R, fns, xs, star=True)
