"""Bandwidth of fused GPU kernels: eager vs torchc (IC_CUDA) vs torch.compile, in one run.

Each case is one function written once (torch-like helpers of tests/test_gpu.py) and run
  eager          the torch ops, one kernel per op
  torchc         traced into an inductor_c graph, compiled with device=IC_CUDA, launched with
                 ic_run_stream on torch's current stream (outputs preallocated)
  torch.compile  PyTorch Inductor (Triton), default mode
Bandwidth counts the bytes a perfect fused kernel moves (every input read once, every output
written once) over the measured time, and is reported as a fraction of the device copy
bandwidth measured here (torch's x.clone() of a 1 GiB tensor: read + write).
Each case is timed twice: calls back to back as a program makes them (host and device
together: a call whose host path takes longer than its kernels measures the host), and
"queued" (device time: the calls wait behind a sleep kernel, then run back to back; timeit).

Usage: python benchmarks/gpu_bench.py [--no-inductor] [--quick] [--json FILE]
"""
import argparse
import json
import os
import sys
import time

import torch

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "tests")]
import test_gpu as T  # noqa: E402  (the ctypes graph builder)
from common import ab_pairs  # noqa: E402


STARVED = []  # cases whose queued timing found the GPU idle before the host had enqueued all


def timeit(fn, iters=20, warmup=3, queued=False):
    """Seconds per call, events around `iters` back-to-back calls.
    queued=False: host and device together (a call's host time shows where it exceeds its
    kernels' time: small kernels measure the launch path). queued=True: device time: the
    calls are enqueued behind a ~20 ms torch.cuda._sleep, so the kernels run back to back
    whatever the host costs; the start event is recorded after the sleep."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if queued:
        torch.cuda._sleep(40_000_000)  # cycles: ~20 ms at 1.98 GHz
    a.record()
    for _ in range(iters):
        fn()
    if queued and a.query():  # the sleep ended before the last call was enqueued
        STARVED.append(fn)
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / iters * 1e-3  # seconds


def copy_bandwidth():
    x = torch.empty(1 << 28, device="cuda")  # 1 GiB
    x.uniform_()
    t = timeit(lambda: x.clone(), iters=20)
    return 2 * x.numel() * 4 / t


def nbytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def cases(quick):
    R = 4096 if quick else 16384
    bf = torch.bfloat16
    r = T.rand
    return [
        ("add 64M f32", lambda x, y: x + y, lambda: (r(R * 4096), r(R * 4096))),
        ("gelu(x*w+b) f32", lambda x, w, b: T.ops.unary("gelu", x * w + b), lambda: (r(R, 4096), r(4096), r(4096))),
        ("add bf16", lambda x, y: x + y, lambda: (r(R * 4096, dtype=bf), r(R * 4096, dtype=bf))),
        ("sum(-1) f32", lambda x: T.sum_(x, -1), lambda: (r(R, 4096),)),
        ("sum(0) f32", lambda x: T.sum_(x, 0), lambda: (r(4096, R),)),
        ("sum() f32", lambda x: T.sum_(x), lambda: (r(R * 1024),)),
        # the same at the copy measurement's size (1 GiB): its launch ramp, tail and combining
        # launch weigh 16 times less than at 64 MB
        ("sum() f32 1 GiB", lambda x: T.sum_(x), lambda: (r(R * 16384),)),
        ("softmax 4096 f32", T.softmax, lambda: (r(R, 4096),)),
        ("softmax 32768 f32", T.softmax, lambda: (r(R // 8, 32768),)),
        # two rows of 4M: split rows (several blocks a row, then a combining launch a pass)
        ("softmax 2x4M f32 split", T.softmax, lambda: (r(2, R * 256),)),
        ("layernorm 2x4M f32 split", T.layernorm, lambda: (r(2, R * 256), r(R * 256), r(R * 256))),
        # torch.softmax of bf16 as torchc captures it (and eager computes it): f32 math, one rounding
        ("softmax 4096 bf16", lambda x: T.softmax(x.to(torch.float32)).to(bf), lambda: (r(R, 4096, dtype=bf),)),
        ("rmsnorm 4096 f32", T.rmsnorm, lambda: (r(R, 4096), r(4096))),
        ("layernorm 4096 f32", T.layernorm, lambda: (r(R, 4096), r(4096), r(4096))),
        ("layernorm 768 f32", T.layernorm, lambda: (r(R * 4, 768), r(768), r(768))),
        ("rmsnorm 4096 bf16", T.rmsnorm, lambda: (r(R, 4096, dtype=bf), r(4096, dtype=bf))),
        ("x.T + y f32", lambda x, y: x.permute(1, 0) + y, lambda: (r(4096, R), r(R, 4096))),
        ("x.T + y bf16", lambda x, y: x.permute(1, 0) + y, lambda: (r(4096, R, dtype=bf), r(R, 4096, dtype=bf))),
    ]


def _abkey(k, what):
    """row keys of the k-th --ab setting: ab_s, ab_q_s, then ab1_s, ..."""
    return f"ab{k or ''}_{what}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--only", default=None, help="comma-separated substrings of the case names to run")
    ap.add_argument("--ab", action="append", default=[], metavar="VAR=VALUE",
                    help="also time torchc compiled with this environment setting (same process; several: "
                         "VAR=VALUE;VAR2=VALUE2); repeatable")
    a = ap.parse_args()
    try:
        ab = [ab_pairs(s) for s in a.ab]
    except ValueError as e:
        ap.error(str(e))
    torch.manual_seed(0)
    copy = copy_bandwidth()
    dev = torch.cuda.get_device_name()
    print(f"{dev}: copy bandwidth {copy / 1e12:.2f} TB/s (x.clone(), 1 GiB)")
    print(f"{'case':22s} {'MB':>7s} | {'eager us':>9s} {'frac':>5s} | {'torchc us':>9s} {'frac':>5s} | "
          f"{'inductor us':>11s} {'frac':>5s} | {'torchc cmp s':>12s}")
    rows = []
    for name, fn, make in cases(a.quick):
        if a.only and not any(o and o in name for o in a.only.split(",")):
            continue
        ins = make()
        want = fn(*ins)
        wants = want if isinstance(want, tuple) else (want,)
        moved = nbytes(ins) + nbytes(wants)
        row = {"case": name, "bytes": moved}
        row["eager_s"] = timeit(lambda: fn(*ins))
        row["eager_q_s"] = timeit(lambda: fn(*ins), queued=True)
        t0 = time.perf_counter()
        try:
            c = T.Compiled(fn, *ins)
            row["torchc_compile_s"] = time.perf_counter() - t0
            outs = c.outputs()
            c.run(ins, outs)
            torch.cuda.synchronize()
            for g, w in zip(outs, wants):
                tl = T.tol(w.dtype)
                torch.testing.assert_close(g, w, rtol=tl["rtol"] * 10, atol=tl["atol"] * 10, equal_nan=True)
            row["torchc_s"] = timeit(lambda: c.run(ins, outs))
            row["torchc_q_s"] = timeit(lambda: c.run(ins, outs), queued=True)
        except Exception as e:  # report and go on
            row["torchc_error"] = str(e)[:200]
        for k, (setting, pairs) in enumerate(zip(a.ab, ab)):
            olds = {var: os.environ.get(var) for var, _ in pairs}
            os.environ.update(dict(pairs))
            try:
                cb = T.Compiled(fn, *ins)
                outs = cb.outputs()
                cb.run(ins, outs)
                torch.cuda.synchronize()
                for g, w in zip(outs, wants):
                    tl = T.tol(w.dtype)
                    torch.testing.assert_close(g, w, rtol=tl["rtol"] * 10, atol=tl["atol"] * 10, equal_nan=True)
                row[_abkey(k, "s")] = timeit(lambda: cb.run(ins, outs))
                row[_abkey(k, "q_s")] = timeit(lambda: cb.run(ins, outs), queued=True)
            except Exception as e:
                row[_abkey(k, "error")] = str(e)[:200]
            finally:
                for var, old in olds.items():
                    if old is None:
                        del os.environ[var]
                    else:
                        os.environ[var] = old
        if a.ab:
            row["ab_settings"] = a.ab
        if not a.no_inductor:
            try:
                cf = torch.compile(fn)
                cf(*ins)
                row["inductor_s"] = timeit(lambda: cf(*ins))
                row["inductor_q_s"] = timeit(lambda: cf(*ins), queued=True)
            except Exception as e:
                row["inductor_error"] = str(e)[:200]
        rows.append(row)

        def col(key):
            t = row.get(key)
            return f"{t * 1e6:9.1f} {moved / t / copy:5.2f}" if t else f"{'-':>9s} {'-':>5s}"

        print(f"{name:22s} {moved / 1e6:7.0f} | {col('eager_s')} | {col('torchc_s')} | "
              f"{col('inductor_s'):>17s} | {row.get('torchc_compile_s', 0):12.3f}"
              + "".join(f" | {st}: {col(_abkey(k, 's'))}" for k, st in enumerate(a.ab))
              + (f"  torchc: {row['torchc_error']}" if "torchc_error" in row else "")
              + f"\n{'  queued (device time)':22s} {'':7s} | {col('eager_q_s')} | {col('torchc_q_s')} | "
              f"{col('inductor_q_s'):>17s} |" + (f" {'':12s}" if a.ab else "")
              + "".join(f" | {st}: {col(_abkey(k, 'q_s'))}" for k, st in enumerate(a.ab))
              + (f"  inductor: {row['inductor_error'][:80]}" if "inductor_error" in row else ""))
        sys.stdout.flush()
    if STARVED:
        print(f"warning: {len(STARVED)} queued timings found the GPU idle before all calls were enqueued")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev, "copy_Bps": copy, "queued_starved": len(STARVED), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
