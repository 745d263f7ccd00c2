"""expRNN forward (no gradient) on CUDA: torchc.scan's persistent kernel against eager's loop
and the old lowering (a Python loop over the compiled body, what torchc.scan ran on CUDA before).

    PYTHONPATH=. python benchmarks/manifolds/persistent/bench_scan_forward.py --L 784 --N 128 --hidden 170,512

Each variant: the same weights and input; the output checked against eager's; medians of --reps
runs, CUDA-synchronized wall time. The step is torchc.manifolds' expRNN step
(h' = modReLU(h Bᵀ + x W_inᵀ + e)), the body torchc.scan compiles.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

import torchc
from torchc import _scan
from torch.utils import _pytree as pytree
from torchc.manifolds import ExpRNN


def step_of(Bt, W_in, b):
    Wt = W_in.t()

    def step(h, xs):
        x, e = xs
        z = torch.mm(h, Bt) + torch.mm(x, Wt) + e
        h = torch.sign(z) * torch.relu(z.abs() + b)
        return h, h
    return step


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(f, reps):
    f()
    _sync()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        _sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, default=784)
    ap.add_argument("--N", type=int, default=128)
    ap.add_argument("--hidden", default="170,512")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda", help="cuda (cpu: a smoke test of this script; torchc.scan's C loop)")
    a = ap.parse_args()
    res = []
    for n in [int(s) for s in a.hidden.split(",")]:
        torch.manual_seed(0)
        m = ExpRNN(1, n)  # weights made on the CPU (B = base exp(A)), then moved
        x = torch.randn(a.L, a.N, 1, device=a.device)
        with torch.no_grad():
            c = m.cell
            B, W_in, b = (t.detach().to(a.device) for t in (c.recurrent_kernel.weight, c.input_kernel.weight,
                                                      c.nonlinearity.b))
            Bt = B.t()
            e = torch.zeros(a.N, n, device=a.device).expand(a.L, a.N, n)
            h0 = torch.zeros(a.N, n, device=a.device)
            step = step_of(Bt, W_in, b)

            def eager():
                h, out = h0, []
                XP = x @ W_in.t()
                for t in range(a.L):
                    z = torch.addmm(XP[t], h, Bt)
                    h = torch.sign(z) * torch.relu(z.abs() + b)
                    out.append(h)
                return torch.stack(out)

            def new():
                return torchc.scan(step, h0, (x, e))[1]

            def old():  # the lowering before: a Python loop over the compiled body
                body = _scan._compiled(step)
                _, si = pytree.tree_flatten(h0)
                _, sx = pytree.tree_flatten((x, e))
                return _scan._python_loop(body, si, sx, [h0], [x, e])[1]

            row = {"hidden": n, "L": a.L, "N": a.N, "device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu"}
            te, ye = timed(eager, a.reps)
            tn, yn = timed(new, a.reps)
            row["lowering"] = _scan.last_lowering
            to, yo = timed(old, max(1, a.reps // 2))
            try:  # the hand-written prototype (recur.cu), for comparison
                sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
                import recur
                Bt_c = Bt.contiguous()
                tp, yp = timed(lambda: recur.forward_kernel(Bt_c, (x @ W_in.t()).contiguous(), b, h0), a.reps)
                row.update(prototype_s=tp, prototype_max_abs_diff_vs_eager=float((yp - ye).abs().max()))
            except Exception as ex:  # noqa: BLE001
                row["prototype_error"] = repr(ex)
            row.update(eager_s=te, persistent_s=tn, old_scan_s=to,
                       speedup_vs_eager=te / tn, speedup_vs_old=to / tn,
                       max_abs_diff_vs_eager=float((yn - ye).abs().max()),
                       old_max_abs_diff_vs_eager=float((yo - ye).abs().max()))
        print(json.dumps(row), flush=True)
        res.append(row)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
