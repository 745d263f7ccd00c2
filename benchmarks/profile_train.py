"""Where a training step's time goes on the GPU: eager vs torchc, one model of benchmarks/train.py
(AMP bf16, SGD): the step's wall median, the summed device time of its kernels, the kernel count
and the top kernels by device time (torch.profiler; CUPTI sees the kernels torchc launches through
the driver too). Wall minus device time is host time the GPU waited for.

    python benchmarks/profile_train.py --only resnet50 [--batch 32] [--top 15] [--steps 5]
"""
import argparse
import collections
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402
import train as TR  # noqa: E402


def make_step(name, make, inputs, labels, kind, wrap):
    torch.manual_seed(0)
    m = TR.no_randomness(make()).to("cuda").train()
    fn = wrap(m)
    x = tuple(t.to("cuda") for t in inputs()) if not isinstance(inputs(), dict) else ()
    y = labels().to("cuda") if labels else None
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = TR.loss_of(kind, fn(*x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def profile_step(step, steps, top):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    ts = []
    for _ in range(10):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    tot = collections.defaultdict(float)
    cnt = collections.Counter()
    for e in evs:
        tot[e.name] += e.device_time / 1e3
        cnt[e.name] += 1
    dev_ms = sum(tot.values()) / steps
    print(f"  wall median {statistics.median(ts):.2f} ms, device {dev_ms:.2f} ms, "
          f"{len(evs) / steps:.0f} kernels a step")
    for n, t in sorted(tot.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {t / steps:8.3f} ms  x{cnt[n] / steps:5.1f}  {n[:110]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="resnet50")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    want = a.only.split(",")
    for name, make, inputs, labels, kind in TR.gpu_models(a.batch):
        if name not in want:
            continue
        for label, wrap in (("eager", lambda m: m), ("torchc", torchc.compile)):
            torchc.reset()
            print(f"{name} {label}")
            profile_step(make_step(name, make, inputs, labels, kind, wrap), a.steps, a.top)


if __name__ == "__main__":
    main()
