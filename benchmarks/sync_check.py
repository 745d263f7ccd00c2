"""Does a steady-state call block the host on the GPU? For each model: the host time of one
call queued behind ~50 ms of GPU work (torch.cuda._sleep), eager vs torchc: a call that
returns in well under 50 ms never waited for the GPU; one that takes >= 50 ms synchronized
(a .item(), a blocking copy, an allocator sync). Also the ops torch's sync debug mode flags.

    python benchmarks/sync_check.py [--only vit_b_16,resnet50] [--batch 32]
"""
import argparse
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402
from models import models  # noqa: E402


def blocked_ms(fn, x):
    for _ in range(3):
        fn(*x)
    torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)  # ~50 ms at the H200's ~2 GHz
    t0 = time.perf_counter()
    fn(*x)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e3, (t2 - t0) * 1e3


def flagged(fn, x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn(*x)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sorted({str(m.message)[:120] for m in w if "synchroniz" in str(m.message).lower()})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="vit_b_16")
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()
    for name, make, inputs in models(a.batch):
        if not any(o and o in name for o in a.only.split(",")):
            continue
        m = make().to("cuda", torch.bfloat16).eval()
        x = inputs()
        with torch.no_grad():
            cm = torchc.compile(m)
            for label, fn in (("eager", m), ("torchc", cm)):
                host, total = blocked_ms(fn, x)
                print(f"{name:20s} {label:7s} host {host:8.2f} ms of {total:8.2f} ms behind 50 ms of GPU work"
                      f" -> {'BLOCKED' if host > 40 else 'async'}", flush=True)
                for f in flagged(fn, x):
                    print(f"    sync flagged: {f}")
        del m, cm
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
