"""A training step of a small expRNN with a complex unitary recurrent kernel (B = exp(A - Aᴴ),
complex64, once per forward; modReLU; a real read-out of view_as_real of the last state; the
recurrence unrolled over T steps), forward + backward + RMSprop: eager against torchc.compile
of the loss (forward and backward compiled: one graph and one backward graph, checked), and
torch.compile where it runs, interleaved, medians of process CPU time and wall time.

    python benchmarks/manifolds/bench_unitary_step.py --n 64 --T 16 --batch 32 --reps 15
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


class UnitaryRNN(torch.nn.Module):
    def __init__(self, n_in, n, T):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.A = torch.nn.Parameter(torch.randn(n, n, dtype=torch.complex64, generator=g) * 0.1)
        self.U = torch.nn.Parameter(torch.randn(n_in, n, dtype=torch.complex64, generator=g) * 0.3)
        self.b = torch.nn.Parameter(torch.full((n,), -0.05))
        self.out = torch.nn.Linear(2 * n, 10)
        self.T = T

    def forward(self, xs):
        B = torch.linalg.matrix_exp(self.A - self.A.mH)
        h = torch.zeros(xs.shape[1], self.A.shape[0], dtype=self.A.dtype)
        for t in range(self.T):
            z = h @ B + xs[t].to(self.A.dtype) @ self.U
            r = z.abs()
            h = z * (torch.relu(r + self.b) / r.clamp_min(1e-6))
        return self.out(torch.view_as_real(h).flatten(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--T", type=int, default=16)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--variants", default="eager,torchc,torch_compile")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    xs = torch.randn(a.T, a.batch, 4, generator=torch.Generator().manual_seed(1))
    ys = torch.randint(0, 10, (a.batch,), generator=torch.Generator().manual_seed(2))
    steps, info = {}, {}
    for v in a.variants.split(","):
        m = UnitaryRNN(4, a.n, a.T)
        opt = torch.optim.RMSprop(m.parameters(), lr=1e-4)
        loss_fn = lambda xs, ys, m=m: torch.nn.functional.cross_entropy(m(xs), ys)  # noqa: E731
        if v == "torchc":
            ex = torchc.explain(loss_fn)(xs, ys)
            info["torchc"] = dict(graphs=ex.graph_count, breaks=ex.graph_break_count,
                                  backward_graphs=ex.backward_graph_count)
            torchc.reset()
            loss_fn = torchc.compile(loss_fn)
        elif v == "torch_compile":
            loss_fn = torch.compile(loss_fn)

        def step(loss_fn=loss_fn, opt=opt):
            loss = loss_fn(xs, ys)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.item()
        try:
            t0 = time.perf_counter()
            step()  # the first call (compiles)
            info.setdefault(v, {})["first_call_s"] = time.perf_counter() - t0
            steps[v] = step
        except Exception as e:  # noqa: BLE001 - a variant that does not run is reported
            info.setdefault(v, {})["error"] = f"{type(e).__name__}: {str(e)[:200]}"
    times = {v: ([], []) for v in steps}
    for _ in range(a.reps):
        for v, step in steps.items():
            c0, w0 = time.process_time(), time.perf_counter()
            step()
            times[v][0].append(time.process_time() - c0)
            times[v][1].append(time.perf_counter() - w0)
    res = {"n": a.n, "T": a.T, "batch": a.batch, "reps": a.reps, "threads": a.threads, "load": os.getloadavg()[0],
           "info": info, "median_cpu_s": {v: statistics.median(t[0]) for v, t in times.items()},
           "median_wall_s": {v: statistics.median(t[1]) for v, t in times.items()}}
    print(json.dumps(res, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
