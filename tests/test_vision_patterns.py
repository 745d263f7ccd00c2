"""Patterns of real vision model code (found by tools/sweep_vision.py on timm and torchvision
models) reproduced in plain torch: each is captured whole and matches eager."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import captured_whole

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))]


def check_whole(fn, *args, atol=1e-5, rtol=1e-5):
    torchc.reset()
    with torch.no_grad():
        want = fn(*args)
        ex = torchc.explain(fn)(*args)
        assert captured_whole(ex), str(ex)
        torch.testing.assert_close(ex.result, want, atol=atol, rtol=rtol)
        again = torchc.explain(fn)(*args).result  # the cached code
        torch.testing.assert_close(again, want, atol=atol, rtol=rtol)
    return ex


# ---- a module whose forward is set on the instance (timm's fasternet Partial_conv3:
# self.forward = self.forward_slicing in __init__) ------------------------------------------

class _PartialConv(nn.Module):
    def __init__(self, slicing):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 3, padding=1, bias=False)
        self.forward = self.forward_slicing if slicing else self.forward_split_cat

    def forward_slicing(self, x):
        x = x.clone()
        x[:, :2] = self.conv(x[:, :2])
        return x

    def forward_split_cat(self, x):
        a, b = torch.split(x, [2, x.shape[1] - 2], dim=1)
        return torch.cat((self.conv(a), b), 1)


def test_forward_bound_method_set_on_instance():
    torch.manual_seed(0)
    net = nn.Sequential(_PartialConv(True), nn.ReLU(), _PartialConv(False)).eval()
    x = torch.randn(2, 5, 6, 6)
    check_whole(net, x)


def test_forward_function_set_on_instance_and_changed():
    m = nn.Linear(3, 3)
    m.forward = lambda x: x * 3
    fn = lambda x: m(x) + 1  # noqa: E731
    x = torch.randn(2, 3)
    check_whole(fn, x)
    f = torchc.compile(fn)
    torch.testing.assert_close(f(x), fn(x))
    m.forward = lambda x: x * 5  # a new value: the identity guard fails, recompiled
    torch.testing.assert_close(f(x), fn(x))
    del m.forward  # the class's forward again
    torch.testing.assert_close(f(x), fn(x))


# ---- sum(list of lists, []) building a shape from x.shape (timm's hiera unroll/reroll) ------

def test_sum_of_lists_with_list_start():
    def unroll(x, strides=(2, 2)):
        B, H, W, C = x.shape
        cur = [H // strides[0], W // strides[1]]
        new_shape = [B] + sum([[i, s] for i, s in zip(cur, strides)], []) + [C]
        x = x.view(new_shape)
        L = len(new_shape)
        perm = [0] + sum([list(p) for p in zip(range(1, L - 1, 2), range(2, L - 1, 2))], []) + [L - 1]
        return x.permute(perm).reshape(B, -1, C) * 2

    check_whole(unroll, torch.randn(2, 4, 6, 3))


def test_sum_start_tensor_and_sizes():
    def f(x, y):
        n = sum([x.shape[0], x.shape[1]], 1)  # ints: a constant
        return sum([x, y, x], y) + n

    check_whole(f, torch.randn(3, 4), torch.randn(3, 4))


# ---- many index buffers: one relative-position index a block (timm's gcvit, maxvit, swin) ---

class _RelPosAttn(nn.Module):
    def __init__(self, win, heads):
        super().__init__()
        self.table = nn.Parameter(torch.randn((2 * win - 1) ** 2, heads))
        c = torch.stack(torch.meshgrid(torch.arange(win), torch.arange(win), indexing="ij")).flatten(1)
        rel = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (win - 1)
        self.register_buffer("index", rel[..., 0] * (2 * win - 1) + rel[..., 1], persistent=False)
        self.heads = heads

    def forward(self, x):  # x: (B, heads, N, N) attention logits
        bias = self.table[self.index.view(-1)].view(self.index.shape[0], self.index.shape[1], -1)
        return (x + bias.permute(2, 0, 1).unsqueeze(0)).softmax(-1)


@pytest.mark.parametrize("device", DEVICES)
def test_many_relative_position_index_buffers(device):
    torch.manual_seed(0)
    net = nn.Sequential(*[_RelPosAttn(2, 2) for _ in range(20)]).eval().to(device)
    check_whole(net, torch.randn(1, 2, 4, 4, device=device))


# ---- adaptive pools whose output size doesn't divide the input (timm's csatv2; torchvision's
# vgg / alexnet AdaptiveAvgPool2d((7, 7)) of a small feature map) ------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_pools_uneven_windows(device):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 9, 5, device=device)

    def f(x):
        return (F.adaptive_avg_pool2d(x, (7, 3)).sum(1), F.adaptive_max_pool2d(x, 4),
                F.adaptive_avg_pool2d(x[:, :, :2, :2], 7), F.adaptive_avg_pool1d(x[:, 0], 3),
                F.adaptive_max_pool1d(x[:, 1], 3), F.adaptive_avg_pool2d(x, (None, 2)))
    check_whole(f, x)
    check_whole(f, x.to(memory_format=torch.channels_last))
    check_whole(lambda x: F.adaptive_avg_pool2d(x, (3, 3)), x.double())


# ---- nn.Unfold into non-overlapping patches larger than 8x8 (timm's tnt pixel embedding) ----

@pytest.mark.parametrize("device", DEVICES)
def test_unfold_tiling_patches(device):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 35, 26, device=device)

    def f(x):
        return (F.unfold(x, kernel_size=16, stride=16), F.unfold(x, (4, 12), stride=(4, 12), padding=(1, 2)),
                F.unfold(x[0], 9, stride=9) * 2)
    ex = check_whole(f, x)
    for got in ex.result:
        assert got.is_contiguous()
