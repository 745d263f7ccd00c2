"""sin / cos on the CPU: eager (ATen: SLEEF's vectorized u10 functions) vs torchc, one thread.

Each case times eager and compiled calls interleaved (one of each per round, so load on a
shared machine hits both alike) and reports the medians. Cases: sin, cos, tan and a fused
expression (sin(a) * a).relu() + 1, float32 and float64, shapes [512, 300] and [4096].

    python benchmarks/trig_bench.py [--rounds N] [--dtype float32] [--json out.json]
"""
import argparse
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, ".")
import torchc  # noqa: E402
from common import tier_wait  # noqa: E402

CASES = {
    "sin": lambda a: a.sin(),
    "cos": lambda a: a.cos(),
    "tan": lambda a: a.tan(),
    "fused": lambda a: (a.sin() * a).relu() + 1,
}
SHAPES = [(512, 300), (4096,)]


def interleaved(fns, args, rounds, inner):
    """median seconds per call of each fn, calls of all fns interleaved round by round"""
    for f in fns:
        for _ in range(3):
            f(*args)
    tier_wait()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, f in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(inner):
                f(*args)
            times[k].append((time.perf_counter() - t0) / inner)
    return [statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--dtype", choices=["float32", "float64"], help="only this dtype")
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    print(f"{'case':8} {'dtype':8} {'shape':11} {'eager ms':>9} {'torchc ms':>9} {'speedup':>8}")
    for dt in (torch.float32, torch.float64):
        if a.dtype and str(dt) != "torch." + a.dtype:
            continue
        for shape in SHAPES:
            x = torch.randn(shape, dtype=dt) * 10
            for name, fn in CASES.items():
                c = torchc.compile(fn)
                torch.testing.assert_close(c(x), fn(x), rtol=2e-5, atol=2e-5)
                inner = 20 if x.numel() < 10000 else 4
                te, tc = interleaved([fn, c], (x,), a.rounds, inner)
                rows.append(dict(case=name, dtype=str(dt).split(".")[1], shape=list(shape), eager_ms=te * 1e3,
                                 torchc_ms=tc * 1e3))
                print(f"{name:8} {rows[-1]['dtype']:8} {str(list(shape)):11} {te * 1e3:9.4f} {tc * 1e3:9.4f} {te / tc:7.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
