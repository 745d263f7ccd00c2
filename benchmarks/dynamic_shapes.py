"""Varying batch size: how many compiles and how much compile time a stream of batch sizes
costs, torchc (automatic dynamic shapes) vs torch.compile (its automatic dynamic shapes),
and the steady-state speed of the dynamic graph vs eager. One process, CPU.

    python3 benchmarks/dynamic_shapes.py [--threads N]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402
from torchc import _C  # noqa: E402
from benchmarks.common import bench, max_abs_err, torch_compile_available  # noqa: E402


def block(x, w, b):
    B, T, C = x.shape
    y = F.layer_norm(x, (C,), w, b)
    y = F.gelu(y).view(B * T, C)
    return torch.softmax(y, -1).view(B, T, C) + x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torchc.config.num_threads = a.threads
    C, T = 512, 16
    w, b = torch.randn(C), torch.randn(C)
    batches = [8, 16, 24, 32, 48, 64, 96, 128, 7, 200]
    res = {"batches": batches, "C": C, "T": T}
    variants = [("torchc", torchc.compile(block))]
    if torch_compile_available():
        variants.append(("torch.compile", torch.compile(block)))
    for name, fn in variants:
        c0 = _C.stats()["compiles"]
        t_first, errs = 0.0, []
        for B in batches:
            x = torch.randn(B, T, C)
            t0 = time.perf_counter()
            out = fn(x, w, b)
            t_first += time.perf_counter() - t0
            errs.append(max_abs_err(out, block(x, w, b)))
        x = torch.randn(96, T, C)
        te, tc = bench(block, x, w, b), bench(fn, x, w, b)
        r = {"first_calls_s": t_first, "max_err": max(errs), "eager_ms_b96": te * 1e3,
             "compiled_ms_b96": tc * 1e3, "speedup_b96": te / tc}
        if name == "torchc":
            r["compiles"] = _C.stats()["compiles"] - c0
        else:
            import torch._dynamo.utils as du
            r["compiles"] = du.counters["stats"]["unique_graphs"]
        res[name] = r
        print(f"{name:14s} compiles {r['compiles']:3d}  sum of first calls {t_first*1e3:8.1f} ms  "
              f"B=96: eager {te*1e3:.2f} ms, compiled {tc*1e3:.2f} ms ({r['speedup_b96']:.2f}x)  max err {r['max_err']:.1e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
