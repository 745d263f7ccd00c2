"""Activation checkpointing on the CPU (issue 22): a stack of pre-norm transformer blocks, each
run through torch.utils.checkpoint (use_reentrant=False), trained with SGD: eager vs torchc,
with and without checkpointing and with selective checkpointing (--sac: context_fn =
partial(create_selective_checkpoint_contexts, [mm, addmm, CPU flash attention]): the matmuls and
attention saved, norms and pointwise ops recomputed), in one process. Reports torchc's saved bytes (explain) and
the median step time (forward, backward, optimizer step) over --steps steps after --warmup.

    python benchmarks/checkpoint_cpu.py [--blocks 4] [--dim 256] [--seq 64] [--batch 4] [--steps 20]
"""
import argparse
import statistics
import time

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch
import torch.nn as nn
import torch.nn.functional as F
import functools

from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts

import torchc


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.h = h

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, -1)
        q, k, v = (t.view(B, T, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Net(nn.Module):
    def __init__(self, n, d, ckpt):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d, 4) for _ in range(n)])
        self.ckpt = ckpt

    def forward(self, x):
        for b in self.blocks:
            if self.ckpt == "sac":
                x = checkpoint(b, x, use_reentrant=False, context_fn=SAC)
            else:
                x = checkpoint(b, x, use_reentrant=False) if self.ckpt else b(x)
        return x


aten = torch.ops.aten
SAC = functools.partial(create_selective_checkpoint_contexts, [
    aten.mm.default, aten.addmm.default, aten._scaled_dot_product_flash_attention_for_cpu.default])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    x = torch.randn(a.batch, a.seq, a.dim)
    y = torch.randn(a.batch, a.seq, a.dim)
    runs = {}
    for ckpt in (False, True, "sac"):
        torch.manual_seed(0)
        m = Net(a.blocks, a.dim, ckpt)
        torchc.reset()
        ex = torchc.explain(m)(x)
        fns = {"eager": m, "torchc": torchc.compile(m)}
        opt = torch.optim.SGD(m.parameters(), lr=1e-3)
        times = {k: [] for k in fns}
        for i in range(a.warmup + a.steps):
            for k, fn in fns.items():  # alternating, same model
                t0 = time.perf_counter()
                opt.zero_grad()
                F.mse_loss(fn(x), y).backward()
                opt.step()
                if i >= a.warmup:
                    times[k].append(time.perf_counter() - t0)
        runs[ckpt] = (ex, {k: statistics.median(v) * 1e3 for k, v in times.items()})
    for ckpt, (ex, med) in runs.items():
        print(f"checkpoint={ckpt!s:5}  torchc graphs {ex.graph_count} breaks {ex.graph_break_count} "
              f"saved {ex.saved_bytes / 2**20:.2f} MiB  median step eager {med['eager']:.1f} ms  "
              f"torchc {med['torchc']:.1f} ms  ({med['eager'] / med['torchc']:.2f}x)")


if __name__ == "__main__":
    main()
