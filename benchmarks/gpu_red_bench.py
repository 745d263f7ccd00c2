"""Column reductions on the GPU: BatchNorm training steps at ResNet-50's shapes (channels-last,
batch 32, bf16 autocast, forward + backward) and x.sum(0) of few columns; eager vs torchc vs
torch.compile in one run, medians of device time (CUDA events around back-to-back calls,
queued behind a sleep so that host overhead does not show).

These are the reductions that keep few columns contiguous in memory (gpu_plan.c
gg_choose_split, split columns): per channel sums over N, H, W. Under a minute on an H100
(torch.compile's compiles are most of it; --no-inductor skips them).

Usage: python benchmarks/gpu_red_bench.py [--no-inductor] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torchc  # noqa: E402

# (channels, spatial) of ResNet-50's BatchNorms at 224x224: the stem, layer1..layer4
BN_SHAPES = [(64, 112), (64, 56), (256, 56), (512, 28), (1024, 14), (2048, 7)]
SUM0 = [(1 << 20, 32), (100000, 17)]


def med_time(fn, reps=5, iters=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(20_000_000)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / iters)
    return statistics.median(ts)  # ms


class BNRelu(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(self.bn(x))


def bn_case(c, s, fn_of):
    torch.manual_seed(0)
    m = BNRelu(c).cuda().to(memory_format=torch.channels_last)
    x = torch.randn(32, c, s, s, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    x.requires_grad_()
    g = torch.randn(32, c, s, s, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    f = fn_of(m)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = f(x)
        y.backward(g)
    return step


def sum0_case(r, c, fn_of):
    x = torch.randn(r, c, device="cuda")
    f = fn_of(lambda t: t.sum(0))
    return lambda: f(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    t0 = time.time()
    # static shapes: each case is a new shape of the same code (automatic dynamic shapes would
    # make the later ones symbolic); caches reset between cases
    backends = {"eager": lambda f: f, "torchc": lambda f: torchc.compile(f, dynamic=False)}
    if not a.no_inductor:
        backends["torch.compile"] = lambda f: torch.compile(f, dynamic=False)
    rows = []
    cases = [(f"bn train C={c} {s}x{s}", lambda fo, c=c, s=s: bn_case(c, s, fo)) for c, s in BN_SHAPES]
    cases += [(f"sum(0) {r}x{c} f32", lambda fo, r=r, c=c: sum0_case(r, c, fo)) for r, c in SUM0]
    print(f"{'case':32s} " + " ".join(f"{b:>14s}" for b in backends) + "   torchc/eager", flush=True)
    for name, mk in cases:
        res = {}
        torchc.reset()
        torch._dynamo.reset()
        for b, fo in backends.items():
            try:
                res[b] = med_time(mk(fo))
            except Exception as e:  # a backend failing is reported, the others still run
                res[b] = float("nan")
                print(f"  {name} {b}: {type(e).__name__}: {str(e)[:200]}", flush=True)
        sp = res["eager"] / res["torchc"] if res.get("torchc") else float("nan")
        print(f"{name:32s} " + " ".join(f"{res[b]:11.3f} ms" for b in backends) + f"   {sp:5.2f}x", flush=True)
        rows.append({"case": name, **{b: res[b] for b in backends}})
    print(f"total {time.time() - t0:.1f} s on {torch.cuda.get_device_name()}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        sys.exit("gpu_red_bench.py needs a CUDA device")
    main()
