"""Where a model's time goes on the GPU: first-call compile stages (TORCHC_DEBUG=time, summed over
graphs) and the top CUDA kernels of one steady-state call, eager vs torchc (torch.profiler).

    TORCHC_DEBUG=time python benchmarks/profile_model.py --only vit_b_16,resnet50 [--batch 32] [--top 12]
        [--host] [--inductor]  (host time per op; torch.compile's kernels too)
"""
import argparse
import collections
import io
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402
from models import models, first_call  # noqa: E402


def kernel_table(fn, x, top):
    from torch.profiler import profile, ProfilerActivity
    for _ in range(3):
        fn(*x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*x)
        torch.cuda.synchronize()
    agg = collections.defaultdict(lambda: [0, 0.0])
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            a = agg[ev.name[:90]]
            a[0] += 1
            a[1] += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
    total = sum(v[1] for v in agg.values())
    rows = sorted(agg.items(), key=lambda kv: -kv[1][1])
    lines = [f"  total {total/1000:.3f} ms in {sum(v[0] for v in agg.values())} kernels"]
    for name, (n, t) in rows[:top]:
        lines.append(f"  {t/1000:8.3f} ms {n:4d}x  {name}")
    return "\n".join(lines)


def timeline(fn, x):
    """One call under the profiler (CPU + CUDA): when the first kernel starts after the call
    begins, how long the GPU is busy, and its idle gaps (the largest with their neighbours)."""
    from torch.profiler import profile, ProfilerActivity, record_function
    for _ in range(3):
        fn(*x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("__call__"):
            fn(*x)
        torch.cuda.synchronize()
    evs = prof.events()
    calls = [e for e in evs if e.name == "__call__" and e.device_type == torch.autograd.DeviceType.CPU]
    ks = sorted((e for e in evs if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda e: e.time_range.start)
    if not calls or not ks:
        return "  (no timeline)"
    c0, c1 = calls[0].time_range.start, calls[0].time_range.end
    busy = sum(e.time_range.end - e.time_range.start for e in ks)
    gaps = [(ks[i + 1].time_range.start - ks[i].time_range.end, ks[i].name[:40], ks[i + 1].name[:40])
            for i in range(len(ks) - 1)]
    idle = sum(g for g, _, _ in gaps if g > 0)
    out = [f"  host call {(c1 - c0) / 1000:.3f} ms; first kernel at +{(ks[0].time_range.start - c0) / 1000:.3f} ms; "
           f"last kernel ends +{(ks[-1].time_range.end - c0) / 1000:.3f} ms; GPU busy {busy / 1000:.3f} ms, "
           f"idle between kernels {idle / 1000:.3f} ms"]
    for g, a, b in sorted(gaps, reverse=True)[:3]:
        out.append(f"    gap {g:7.1f} us after {a} before {b}")
    return "\n".join(out)


def host_table(fn, x, top):
    """Self CPU time per op of one call (ATen ops the externs reach included)."""
    from torch.profiler import profile, ProfilerActivity
    for _ in range(3):
        fn(*x)
    torch.cuda.synchronize()
    s0 = torchc._C.stats()
    t0 = time.perf_counter()
    for _ in range(10):
        fn(*x)
    host = (time.perf_counter() - t0) / 10 * 1000
    s1 = torchc._C.stats()
    torch.cuda.synchronize()
    n = s1.get("timed_hits", 0) - s0.get("timed_hits", 0)
    phases = ""
    if n > 0:  # TORCHC_HOST_STATS=1: torchc's hook time by phase, per call
        phases = "; torchc per call: " + " ".join(
            f"{k[5:-3]} {(s1[k] - s0[k]) / 10:.1f} us" for k in s1 if k.startswith("host_"))
        phases += "; in GPU runs: " + " ".join(  # inductor_c/runtime/cuda.c ic_gpu_host_stats
            f"{k[4:-3]} {(s1[k] - s0[k]) / 10:.1f} us" + (f" ({(s1[k[:-3] + '_n'] - s0[k[:-3] + '_n']) / 10:.0f}x)"
                                                         if k[:-3] + "_n" in s1 else "")
            for k in s1 if k.startswith("gpu_") and k.endswith("_us"))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn(*x)
    ka = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    lines = [f"  host ~{host:.3f} ms/call without sync (10 calls){phases}"]
    for e in ka[:top]:
        lines.append(f"  {e.self_cpu_time_total/1000:8.3f} ms self {e.count:4d}x  {e.key[:80]}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--only", default="vit_b_16")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--host", action="store_true", help="also the host (CPU) time per op")
    ap.add_argument("--inductor", action="store_true", help="also torch.compile's kernels")
    a = ap.parse_args()
    torch.manual_seed(0)
    for name, make, inputs in models(a.batch):
        if not any(o and o in name for o in a.only.split(",")):
            continue
        m = make().to("cuda", torch.bfloat16).eval()
        x = inputs()
        with torch.no_grad():
            m(*x)
            torchc.reset()
            cm = torchc.compile(m)
            # capture stderr's "torchc time:" lines of the first call
            r, w = os.pipe()
            saved = os.dup(2)
            os.dup2(w, 2)
            try:
                tcc, _ = first_call(cm, *x)
            finally:
                os.dup2(saved, 2)
                os.close(w)
            text = os.read(r, 1 << 24).decode(errors="replace")
            os.close(r)
            stages = collections.Counter()
            ncomp = 0
            for line in text.splitlines():
                if line.startswith("torchc time: compile"):
                    ncomp += 1
                    mm = re.match(r"torchc time: compile ([\d.]+) ms", line)
                    stages["total"] += float(mm.group(1))
                    for k, v in re.findall(r" (init|graph|lower|sched|final|irgen|opt|emit|jit) ([\d.]+)", line):
                        stages[k] += float(v)
                    kn = re.search(r"(\d+) kernels", line)
                    stages["kernels"] += int(kn.group(1)) if kn else 0
            print(f"== {name}: first call {tcc:.2f} s; {ncomp} compiles; " +
                  " ".join(f"{k} {v:.0f}" for k, v in stages.items()) + " (ms)", flush=True)
            other = [l for l in text.splitlines() if not l.startswith("torchc time: compile")]
            for l in other[:10]:
                print("   stderr:", l[:200])
            ex = torchc.explain(cm)(*x)
            print(f"   graphs {ex.graph_count} breaks {ex.graph_break_count}")
            reasons = collections.Counter(str(r)[:160] for r in getattr(ex, "break_reasons", []))
            for r, n in reasons.most_common(8):
                print(f"   {n:4d}x {r}")
            print(f"-- eager {name}")
            print(kernel_table(m, x, a.top), flush=True)
            print(f"-- torchc {name}")
            print(kernel_table(cm, x, a.top), flush=True)
            print(f"-- timeline eager {name}")
            print(timeline(m, x), flush=True)
            print(f"-- timeline torchc {name}")
            print(timeline(cm, x), flush=True)
            if a.inductor:
                try:
                    im = torch.compile(m)
                    im(*x)
                    print(f"-- torch.compile {name}")
                    print(kernel_table(im, x, a.top), flush=True)
                    print(f"-- timeline torch.compile {name}")
                    print(timeline(im, x), flush=True)
                except Exception as e:  # report and go on
                    print(f"-- torch.compile {name}: {type(e).__name__}: {str(e)[:200]}")
            if a.host:
                print(f"-- host eager {name}")
                print(host_table(m, x, a.top), flush=True)
                print(f"-- host torchc {name}")
                print(host_table(cm, x, a.top), flush=True)
        del m, cm
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
