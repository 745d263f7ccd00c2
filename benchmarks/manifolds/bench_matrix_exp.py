"""matrix_exp forward+backward: torch.linalg.matrix_exp with autograd (eager), the same under
torch.compile, and torchc (torchc.manifolds.matrix_exp: the extern's code with the saved-
register backward); plus the forward alone as a torchc-compiled graph op. One run, the three
interleaved, medians of `reps` calls each.

    python benchmarks/manifolds/bench_matrix_exp.py [--sizes 64,128,256,512,1024] [--device cpu|cuda]
        [--dtype float32] [--norm 5] [--out results.json]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
import torchc  # noqa: E402
from torchc import manifolds  # noqa: E402


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def timeit(fn, dev, reps, cpu=None):
    """median wall seconds of reps calls; their process CPU seconds appended to cpu"""
    ts = []
    for _ in range(reps):
        sync(dev)
        t, c = time.perf_counter(), time.process_time()
        fn()
        sync(dev)
        ts.append(time.perf_counter() - t)
        if cpu is not None:
            cpu.append(time.process_time() - c)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64,128,256,512,1024")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--norm", type=float, default=5.0, help="1-norm of the skew-symmetric input")
    ap.add_argument("--reps", type=int, default=0, help="0: by size")
    ap.add_argument("--out", default="")
    ap.add_argument("--max-seconds", type=float, default=170.0,
                    help="time cap: no new size starts after it, and a size's repetitions stop at it "
                    "(at least one each); the sizes and reps done are in the output")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU threads (1: this 2-core machine is shared; 2 threads under load spin for ~0.4 s a call)")
    a = ap.parse_args()
    if a.device == "cpu" and a.threads:
        torch.set_num_threads(a.threads)
        torchc._C.set_num_threads(a.threads)
    dev, dt = a.device, getattr(torch, a.dtype)
    torch.manual_seed(0)
    eager_f = lambda A: torch.linalg.matrix_exp(A)  # noqa: E731
    tc_f = torch.compile(eager_f)
    torchc_fwd = torchc.compile(lambda A: torch.linalg.matrix_exp(A))
    rows = []
    print(f"device {dev} dtype {a.dtype} threads {torch.get_num_threads()} norm {a.norm}")
    print(f"{'n':>6} {'eager ms':>10} {'compile ms':>11} {'torchc ms':>10} {'x eager':>8} {'x compile':>9}"
          f" | fwd: {'eager':>8} {'torchc graph':>12}")
    t_start = time.perf_counter()
    skipped = []
    for n in [int(s) for s in a.sizes.split(",")]:
        if time.perf_counter() - t_start > a.max_seconds:
            skipped.append(n)
            continue
        X = torch.randn(n, n, device=dev, dtype=torch.float64)
        X = X - X.T
        X = (X / X.abs().sum(0).max() * a.norm).to(dt)
        G = torch.randn(n, n, device=dev, dtype=dt)
        reps = a.reps or (20 if n <= 128 else 10 if n <= 256 else 5 if n <= 512 else 3)

        def fb(f):
            def run():
                A = X.clone().requires_grad_()
                f(A).backward(G)
                return A.grad
            return run
        runs = {"eager": fb(eager_f), "torch.compile": fb(tc_f), "torchc": fb(manifolds.matrix_exp)}
        ref = runs["eager"]()
        errs = {k: ((r() - ref).norm() / ref.norm()).item() for k, r in runs.items()}  # warm-up + check
        t = {k: [] for k in runs}
        tcpu = {k: [] for k in runs}
        for i in range(reps):  # interleaved
            if i and time.perf_counter() - t_start > a.max_seconds:
                reps = i
                break
            for k, r in runs.items():
                t[k].append(timeit(r, dev, 1, tcpu[k]))
        med = {k: statistics.median(v) * 1e3 for k, v in t.items()}
        med_cpu = {k: statistics.median(v) * 1e3 for k, v in tcpu.items()}
        with torch.no_grad():
            torchc_fwd(X)
            fe = timeit(lambda: torch.linalg.matrix_exp(X), dev, reps) * 1e3
            fc = timeit(lambda: torchc_fwd(X), dev, reps) * 1e3
        row = {"n": n, "ms": med, "cpu_ms": med_cpu, "fwd_ms": {"eager": fe, "torchc_graph": fc}, "grad_rel_err_vs_eager": errs,
               "reps": reps}
        rows.append(row)
        print(f"{n:>6} {med['eager']:>10.2f} {med['torch.compile']:>11.2f} {med['torchc']:>10.2f} "
              f"{med['eager'] / med['torchc']:>8.2f} {med['torch.compile'] / med['torchc']:>9.2f} | "
              f"{fe:>12.2f} {fc:>12.2f}   grad err {errs['torchc']:.1e} | CPU-time x eager "
              f"{med_cpu['eager'] / med_cpu['torchc']:.2f} x compile {med_cpu['torch.compile'] / med_cpu['torchc']:.2f}",
              flush=True)
    if skipped:
        print(f"time cap --max-seconds {a.max_seconds:g}: sizes not run: {skipped}")
    ex = torchc.explain(lambda A: torch.linalg.matrix_exp(A))(X)
    print("torchc graph of the forward:", ex.graph_count, "graph,", ex.op_count, "op(s)")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": dev, "dtype": a.dtype, "threads": torch.get_num_threads(), "norm": a.norm,
                       "torch": torch.__version__, "rows": rows, "sizes_not_run": skipped}, f, indent=1)


if __name__ == "__main__":
    main()
