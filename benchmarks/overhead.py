"""Per-call overhead of a cache hit: a 2-tensor function on tiny tensors, where the kernel
costs next to nothing. Prints eager, torchc and torch.compile µs/call (medians, one run).

    python benchmarks/overhead.py [--device cpu|cuda]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402
from common import bench, torch_compile_available  # noqa: E402


def f(x, y):
    return x + y


def noop(x, y):
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-torch-compile", action="store_true")
    a = ap.parse_args()
    x = torch.randn(8, device=a.device)
    y = torch.randn(8, device=a.device)
    with torch.no_grad():
        res = {}
        res["eager add"] = bench(f, x, y, reps=2000, min_time=0.5)
        cf = torchc.compile(f)
        res["torchc add"] = bench(cf, x, y, reps=2000, min_time=0.5)
        cn = torchc.compile(noop)
        res["torchc no-op (hook + guards + return)"] = bench(cn, x, y, reps=2000, min_time=0.5)
        res["eager no-op"] = bench(noop, x, y, reps=2000, min_time=0.5)
        if torch_compile_available() and not a.no_torch_compile:
            tf = torch.compile(f)
            res["torch.compile add"] = bench(tf, x, y, reps=2000, min_time=0.5)
    for k, v in res.items():
        print(f"{k:40s} {v * 1e6:8.2f} us/call")
    print(f"torchc hit overhead over eager (add): {(res['torchc add'] - res['eager add']) * 1e6:.2f} us")
    print(f"torchc hook+guard cost (no-op):       {(res['torchc no-op (hook + guards + return)'] - res['eager no-op']) * 1e6:.2f} us")
    if "torch.compile add" in res:
        print(f"torch.compile overhead over eager:    {(res['torch.compile add'] - res['eager add']) * 1e6:.2f} us")


if __name__ == "__main__":
    main()
