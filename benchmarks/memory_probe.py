"""Peak memory of small models shaped like the suite's worst cases (Swin/ViT attention stacks,
a ConvNeXt block, a DenseNet dense block): eager's peak live tensor bytes, measured by a
TorchDispatchMode that follows every storage an op creates until it is freed, against torchc's
planned bytes (explain().planned_bytes: the workspace of each graph) plus the graph's outputs.

    PYTHONPATH=. TORCHC_CACHE_DIR=/tmp/tc python benchmarks/memory_probe.py [--dtype bfloat16]
        [--only vit,swin] [--device cuda]

On CUDA it also reports torch.cuda.max_memory_allocated() above the parameters for eager and
torchc (the suite's figure)."""
import argparse
import sys
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

sys.path.insert(0, ".")
import torchc  # noqa: E402


EXTERNS = {"mm", "addmm", "bmm", "baddbmm", "convolution", "cudnn_convolution", "mkldnn_convolution",
           "_convolution", "linear", "matmul"}


class PeakLive(TorchDispatchMode):
    """peak bytes of storages created inside the mode and alive at once (inputs and
    parameters made before it are not counted); views share their base's storage"""

    def __init__(self):
        super().__init__()
        self.live = 0
        self.peak = 0
        self.seen = set()
        self.largest_extern = 0  # the largest matmul/conv/attention result (torchc: an extern call)

    def _free(self, key, n):
        self.live -= n
        self.seen.discard(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in EXTERNS and isinstance(out, torch.Tensor):
            self.largest_extern = max(self.largest_extern, out.untyped_storage().nbytes())
        # an output sharing an operand's storage (a view, an in-place op) allocates nothing
        mine = {a.untyped_storage().data_ptr() for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            st = t.untyped_storage()
            key = st.data_ptr()
            if key in self.seen or key in mine or st.nbytes() == 0:
                continue
            self.seen.add(key)
            n = st.nbytes()
            self.live += n
            self.peak = max(self.peak, self.live)
            weakref.finalize(st, self._free, key, n)
        return out


def eager_peak(model, x):
    with torch.no_grad():
        m = PeakLive()
        with m:
            out = model(x)
        kept = sum(t.untyped_storage().nbytes() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))
        del out
    return m.peak, kept


def eager_peak_and_largest_extern(model, x):
    """eager's peak live bytes (outputs included) and its largest matmul/conv result"""
    with torch.no_grad():
        m = PeakLive()
        with m:
            out = model(x)
        del out
    return m.peak, m.largest_extern


# ---- models shaped like the suite's worst cases -------------------------------------------------

class Attn(nn.Module):
    """a ViT/Swin block: LN, qkv linear, sdpa (or the explicit softmax path with a bias, as
    torchvision's Swin), proj, residual, LN, MLP (GELU), residual"""

    def __init__(self, d, heads, explicit=False, win=0):
        super().__init__()
        self.h, self.explicit = heads, explicit
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.bias = nn.Parameter(torch.randn(heads, win * win, win * win) * 0.02) if explicit else None

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, n, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        if self.explicit:
            a = (q * (d // self.h) ** -0.5) @ k.transpose(-2, -1)
            a = (a + self.bias).softmax(-1)
            o = a @ v
        else:
            o = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(o.transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViTLike(nn.Module):
    def __init__(self, d=96, heads=3, depth=4, patch=8):
        super().__init__()
        self.embed = nn.Conv2d(3, d, patch, patch)
        self.blocks = nn.Sequential(*[Attn(d, heads) for _ in range(depth)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        x = self.blocks(x)
        return self.head(self.ln(x)[:, 0])


class SwinLike(nn.Module):
    """windowed attention with a relative bias (explicit softmax path), window partition by
    reshape/permute, a patch merging (cat of four strided slices + LN + linear)"""

    def __init__(self, d=48, heads=3, win=7, depth=2):
        super().__init__()
        self.win = win
        self.embed = nn.Conv2d(3, d, 4, 4)
        self.ln0 = nn.LayerNorm(d)
        self.blocks = nn.ModuleList([Attn(d, heads, explicit=True, win=win) for _ in range(depth)])
        self.merge_ln = nn.LayerNorm(4 * d)
        self.merge = nn.Linear(4 * d, 2 * d, bias=False)
        self.blocks2 = nn.ModuleList([Attn(2 * d, 2 * heads, explicit=True, win=win) for _ in range(depth)])
        self.head = nn.Linear(2 * d, 10)

    def windows(self, x, blk):
        B, H, W, C = x.shape
        w = self.win
        t = x.reshape(B, H // w, w, W // w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, C)
        t = blk(t)
        return t.reshape(B, H // w, W // w, w, w, C).permute(0, 1, 3, 2, 4, 5).reshape(B, H, W, C)

    def forward(self, x):
        x = self.ln0(self.embed(x).permute(0, 2, 3, 1))
        for blk in self.blocks:
            x = self.windows(x, blk)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        x = self.merge(self.merge_ln(x))
        x = F.pad(x, (0, 0, 0, 0, 0, 0))
        for blk in self.blocks2:
            x = self.windows(x, blk)
        return self.head(x.mean((1, 2)))


class CNBlock(nn.Module):
    """ConvNeXt: depthwise 7x7, permute to channels-last, LayerNorm, MLP, layer scale, permute back"""

    def __init__(self, d):
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.ln = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(torch.full((d,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.ln(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNeXtLike(nn.Module):
    def __init__(self, d=48, depth=3):
        super().__init__()
        self.stem = nn.Conv2d(3, d, 4, 4)
        self.blocks = nn.Sequential(*[CNBlock(d) for _ in range(depth)])
        self.down = nn.Conv2d(d, 2 * d, 2, 2)
        self.blocks2 = nn.Sequential(*[CNBlock(2 * d) for _ in range(depth)])
        self.head = nn.Linear(2 * d, 10)

    def forward(self, x):
        x = self.blocks2(self.down(self.blocks(self.stem(x))))
        return self.head(x.mean((2, 3)))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bn_size=4):
        super().__init__()
        self.n1, self.c1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.n2, self.c2 = nn.BatchNorm2d(bn_size * growth), nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, feats):
        x = torch.cat(feats, 1)
        return self.c2(F.relu(self.n2(self.c1(F.relu(self.n1(x))))))


class DenseNetLike(nn.Module):
    def __init__(self, c0=32, growth=16, layers=6):
        super().__init__()
        self.stem = nn.Conv2d(3, c0, 3, 2, 1)
        self.layers = nn.ModuleList([DenseLayer(c0 + i * growth, growth) for i in range(layers)])
        self.head = nn.Linear(c0 + layers * growth, 10)

    def forward(self, x):
        feats = [self.stem(x)]
        for layer in self.layers:
            feats.append(layer(feats))
        x = torch.cat(feats, 1)
        return self.head(F.adaptive_avg_pool2d(F.relu(x), 1).flatten(1))


MODELS = {
    "vit": (lambda: ViTLike(), (4, 3, 64, 64)),
    "swin": (lambda: SwinLike(), (2, 3, 112, 112)),
    "convnext": (lambda: ConvNeXtLike(), (2, 3, 96, 96)),
    "densenet": (lambda: DenseNetLike(), (2, 3, 64, 64)),
}


def torchvision_model(name, batch):
    """torchvision's model (random weights) at 224x224: --tv swin_t,vit_b_16 (needs torchvision)"""
    import types
    if "torchvision._meta_registrations" not in sys.modules:  # a wheel whose ops library does not load
        try:
            import torchvision  # noqa: F401
        except RuntimeError:
            for k in [k for k in sys.modules if k.startswith("torchvision")]:
                del sys.modules[k]
            sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
    import torchvision.models as tvm
    return (lambda: getattr(tvm, name)()), (batch, 3, 224, 224)


def measure(name, dtype=torch.float32, device="cpu", batch=1):
    make, shape = MODELS[name] if name in MODELS else torchvision_model(name, batch)
    torch.manual_seed(0)
    model = make().eval().to(device=device, dtype=dtype)
    x = torch.randn(shape, device=device, dtype=dtype)
    peak, kept = eager_peak(model, x)
    torchc.reset()
    with torch.no_grad():
        ex = torchc.explain(model)(x)
    out = ex.result
    out_bytes = sum(t.untyped_storage().nbytes() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))
    row = {"model": name, "eager_peak": peak, "eager_out": kept, "graphs": ex.graph_count,
           "breaks": ex.graph_break_count, "planned": ex.planned_bytes, "torchc_out": out_bytes,
           "torchc_peak": ex.planned_bytes + out_bytes}
    if device == "cpu":  # the plan a CUDA compilation of the same graphs makes (no GPU needed)
        g = ex.gpu_planned_bytes()
        row["gpu_planned"] = g
        row["gpu_peak"] = None if g is None else g + out_bytes
    if device == "cuda":
        base = torch.cuda.memory_allocated()
        for which, fn in (("eager_cuda", model), ("torchc_cuda", torchc.compile(model))):
            with torch.no_grad():
                fn(x)
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                y = fn(x)
                torch.cuda.synchronize()
            row[which] = torch.cuda.max_memory_allocated() - base
            del y
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default=",".join(MODELS), help="small models here, or torchvision names")
    ap.add_argument("--batch", type=int, default=1, help="torchvision models' batch")
    a = ap.parse_args()
    dt = getattr(torch, a.dtype)
    for name in a.only.split(","):
        r = measure(name, dt, a.device, a.batch)
        print("  ".join(f"{k}={v}" for k, v in r.items()), flush=True)


if __name__ == "__main__":
    main()
