"""torchc.scan's persistent CUDA kernel (inductor_c/codegen/gpu_scan.c) on a GPU: values and time.

    PYTHONPATH=. python tools/scan_cuda_check.py [--hidden 64,170,512] [--batch 1,128] [--L 784] [--reps 5]

For each hidden size n, batch N and body (expRNN's modReLU step with a 1-pixel input, and a
tanh RNN step with an n-wide input), float32, no gradient, over L steps:
  - torchc.scan(step, h0, xs): the lowering it got (_scan.last_lowering) must be the persistent
    kernel, else the case FAILS (the script exits 1 at the end, naming it);
  - the max abs / relative error of the stacked results and the final carry against eager's
    Python loop (FAIL above 1e-3 relative to the largest value);
  - forward time (median of --reps, CUDA-synchronized) of the persistent kernel, eager's loop,
    and the non-persistent lowering (the Python loop over the compiled body: what torchc.scan
    runs on CUDA when the kernel does not fit), and the speedups.
Prints one line a case and a JSON summary (--out FILE to keep it). Needs CUDA (--device cpu
only smoke-tests this script: torchc.scan runs its C loop there, so every case FAILS loudly).
"""
import argparse
import json
import statistics
import sys
import time

os.environ.setdefault("TORCHC_SCAN_PERSISTENT", "1")  # off by default until this script has passed on a GPU
import torch
from torch.utils import _pytree as pytree

import torchc
from torchc import _scan


# recurrent matrices of gain 0.9 (contractive): over 784 steps eager's and the kernel's rounding
# (cuBLAS against sequential fmas) stay far below the 1e-3 check, so a defect stands out
GAIN = 0.9


def modrelu_step(n, dev, g):
    W = (torch.randn(n, n, generator=g) * (GAIN / n ** 0.5)).to(dev)
    Win = torch.randn(n, 1, generator=g).to(dev)
    b = (-torch.rand(n, generator=g) * 0.01).to(dev)  # b <= 0: continuous (see tests/test_scan_persistent.py)
    Wt, Wint = W.t(), Win.t()

    def step(h, x):
        z = torch.mm(h, Wt) + torch.mm(x, Wint)
        h = torch.sign(z) * torch.relu(z.abs() + b)
        return h, h
    return step, 1


def tanh_step(n, dev, g):
    W = (torch.randn(n, n, generator=g) * (GAIN / n ** 0.5)).to(dev)
    bias = (torch.randn(n, generator=g) * 0.1).to(dev)

    def step(h, x):
        h = torch.tanh(h @ W.t() + x + bias)
        return h, h
    return step, n


BODIES = {"modrelu": modrelu_step, "tanh": tanh_step}


def eager_scan(fn, h, xs):
    ys = []
    for t in range(xs.shape[0]):
        h, y = fn(h, xs[t])
        ys.append(y)
    return h, torch.stack(ys)


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(f, reps):
    f()
    _sync()
    ts = []
    out = None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        _sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def err(a, b):
    d = (a - b).abs().max().item()
    return d, d / max(b.abs().max().item(), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", default="64,170,512")
    ap.add_argument("--batch", default="1,128")
    ap.add_argument("--L", type=int, default=784)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bodies", default="modrelu,tanh")
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("scan_cuda_check: needs CUDA")
        return 2
    print(f"device: {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else dev}, torch {torch.__version__}")
    rows, failed = [], []
    for body in a.bodies.split(","):
        for n in [int(v) for v in a.hidden.split(",")]:
            for N in [int(v) for v in a.batch.split(",")]:
                g = torch.Generator().manual_seed(n * 131 + N)
                step, inp = BODIES[body](n, dev, g)
                h0 = torch.randn(N, n, generator=g).to(dev) * 0.5
                xs = torch.randn(a.L, N, inp, generator=g).to(dev)
                name = f"{body} n={n} N={N} L={a.L}"
                with torch.no_grad():
                    t_p, (c, ys) = timed(lambda: torchc.scan(step, h0, xs), a.reps)
                    lowering = _scan.last_lowering or ""
                    t_e, (ce, yse) = timed(lambda: eager_scan(step, h0, xs), a.reps)
                    # the non-persistent lowering: the Python loop over the same compiled body
                    body_c = _scan._compiled(step, static=True)
                    _, si = pytree.tree_flatten(h0)
                    _, sx = pytree.tree_flatten(xs)
                    t_l, (cl, ysl) = timed(lambda: _scan._python_loop(body_c, si, sx, [h0], [xs]), a.reps)
                persistent = lowering.startswith("persistent kernel")
                ey, ry = err(ys, yse)
                ec, rc = err(c, ce)
                el, rl = err(ysl, yse)
                ok = persistent and ry <= 1e-3 and rc <= 1e-3 and ys.shape == yse.shape and ys.dtype == yse.dtype
                row = dict(case=name, persistent=persistent, lowering=lowering, max_err_ys=ey, rel_err_ys=ry,
                           max_err_carry=ec, rel_err_carry=rc, loop_rel_err=rl, ms_persistent=t_p * 1e3,
                           ms_eager=t_e * 1e3, ms_python_loop=t_l * 1e3, x_vs_eager=t_e / t_p,
                           x_vs_loop=t_l / t_p, ok=ok)
                rows.append(row)
                print(f"{'ok  ' if ok else 'FAIL'} {name}: persistent={persistent} max err ys {ey:.2e} "
                      f"(rel {ry:.2e}) carry {ec:.2e} | {t_p * 1e3:.2f} ms, eager {t_e * 1e3:.2f} ms "
                      f"({t_e / t_p:.1f}x), compiled-body loop {t_l * 1e3:.2f} ms ({t_l / t_p:.1f}x)")
                if not persistent:
                    print(f"     the persistent kernel was NOT used: {lowering}")
                else:
                    print(f"     {lowering}")
                if not ok:
                    failed.append(name)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)
    if failed:
        print(f"FAILED ({len(failed)}): " + "; ".join(failed))
        return 1
    print(f"all {len(rows)} cases ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
