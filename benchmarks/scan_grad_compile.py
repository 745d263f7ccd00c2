"""Compile time of an expRNN training step against the sequence length T: the recurrence as
torchc.scan under a torchc-compiled caller, against the same recurrence as a Python loop
under torchc.compile (which unrolls it: T copies of the step in the forward graph and in
its backward graph).

    python benchmarks/scan_grad_compile.py --T 100 400 784 --out benchmarks/results/scan_grad_compile_cpu.json

The step: B = matrix_exp(A - Aᵀ) once per forward, h' = modReLU(h Bᵀ + x_t Wᵀ), loss on h_T
and the stacked H. Each (variant, T) runs in a fresh process with an empty torchc cache
(TORCHC_CACHE_DIR): the first training step (capture + compile of forward and backward +
one run) minus the median of 3 later steps, wall and this process's CPU time (the machine's
cores are shared: wall time there is a few times CPU time)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, os, sys, time, statistics
import torch, torchc
torch.set_num_threads(1)
variant, T, n, N = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
g = torch.Generator().manual_seed(0)
A = (torch.randn(n, n, generator=g) * 0.1).requires_grad_()
W = torch.randn(n, 1, generator=g).requires_grad_()
b = torch.empty(n).uniform_(-0.01, 0.01, generator=g).requires_grad_()
x = torch.randn(T, N, 1, generator=g)

def step(h, xt, Bt, Wt, b):
    z = h @ Bt + xt @ Wt
    h = torch.sign(z) * torch.relu(z.abs() + b)
    return h, h

def f_scan(x, A, W, b):
    B = torch.linalg.matrix_exp(A - A.t())
    Bt, Wt = B.t(), W.t()
    h, H = torchc.scan(lambda h, xt: step(h, xt, Bt, Wt, b), x.new_zeros(x.shape[1], n), x)
    return h.square().sum() + H.mean()

def f_loop(x, A, W, b):
    B = torch.linalg.matrix_exp(A - A.t())
    Bt, Wt = B.t(), W.t()
    h, H = x.new_zeros(x.shape[1], n), []
    for t in range(x.shape[0]):
        h, y = step(h, x[t], Bt, Wt, b)
        H.append(y)
    return h.square().sum() + torch.stack(H).mean()

fn = torchc.compile(f_scan if variant == "scan" else f_loop)
def one():
    w, c = time.perf_counter(), time.process_time()
    fn(x, A, W, b).backward()
    return time.perf_counter() - w, time.process_time() - c
first = one()
rest = [one() for _ in range(3)]
e = torchc.explain(fn)(x, A, W, b)
mw, mc = statistics.median(r[0] for r in rest), statistics.median(r[1] for r in rest)
print(json.dumps({"first_s": first[0], "first_cpu_s": first[1], "step_s": mw, "step_cpu_s": mc,
                  "compile_s": first[0] - mw, "compile_cpu_s": first[1] - mc,
                  "graphs": e.graph_count, "op_count": e.op_count,
                  "backward_op_count": e.backward_op_count, "scan_lowerings": e.scan_lowerings}))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=int, nargs="+", default=[100, 400, 784])
    ap.add_argument("--hidden", type=int, default=170)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--variants", default="scan,loop")
    ap.add_argument("--timeout", type=float, default=400.0, help="per (variant, T) run, seconds")
    ap.add_argument("--out")
    a = ap.parse_args()
    res = {"hidden": a.hidden, "batch": a.batch, "command": " ".join(["python"] + sys.argv),
           "load_avg": list(os.getloadavg()), "runs": {}}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for v in a.variants.split(","):
        for T in a.T:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, TORCHC_CACHE_DIR=cache, PYTHONPATH=root)
                t0 = time.perf_counter()
                try:
                    p = subprocess.run([sys.executable, "-c", CHILD, v, str(T), str(a.hidden), str(a.batch)],
                                       env=env, capture_output=True, text=True, timeout=a.timeout)
                    r = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else \
                        {"error": p.stderr[-500:]}
                except subprocess.TimeoutExpired:
                    r = {"error": f"timed out after {a.timeout:.0f} s (wall)"}
                r["process_wall_s"] = time.perf_counter() - t0
            res["runs"][f"{v}_T{T}"] = r
            print(v, T, {k: (round(x, 3) if isinstance(x, float) else x) for k, x in r.items()}, flush=True)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
