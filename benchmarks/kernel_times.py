"""Per-kernel device times of gpu_bench.py cases (torch.profiler / CUPTI sees the kernels
torchc launches through the driver too): eager, torchc and torch.compile, the average
duration of each kernel over the profiled calls and the span of one call (first kernel's
start to last kernel's end), with the calls queued behind a sleep so host time stays out.

Usage: python benchmarks/kernel_times.py [--only "sum() f32,softmax 32768"] [--calls 20]
"""
import argparse
import collections
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench as GB  # noqa: E402
T = GB.T


def kernel_table(fn, calls):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda._sleep(20_000_000)
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "sleep" not in e.name]
    evs.sort(key=lambda e: e.time_range.start)
    per = collections.OrderedDict()
    for e in evs:
        per.setdefault(e.name, []).append(e.time_range.end - e.time_range.start)
    span = (evs[-1].time_range.end - evs[0].time_range.start) / calls if evs else 0.0
    return per, span


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="sum() f32,softmax 32768")
    ap.add_argument("--calls", type=int, default=20)
    a = ap.parse_args()
    for name, fn, make in GB.cases(False):
        if not any(o and o in name for o in a.only.split(",")):
            continue
        ins = make()
        c = T.Compiled(fn, *ins)
        outs = c.outputs()
        cf = torch.compile(fn)
        for who, f in [("eager", lambda: fn(*ins)), ("torchc", lambda: c.run(ins, outs)),
                       ("torch.compile", lambda: cf(*ins))]:
            per, span = kernel_table(f, a.calls)
            print(f"{name} / {who}: {span:.1f} us a call (first kernel start to last kernel end, averaged)")
            for k, ds in per.items():
                print(f"    {sum(ds) / len(ds):8.1f} us x{len(ds) // a.calls:<3d} {k[:90]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
