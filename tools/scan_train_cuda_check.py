"""torchc.scan in training on CUDA (inductor_c/codegen/gpu_scan.c: the persistent forward that
stores the carries and the recurrent product, and the persistent backward through time;
torchc/_scan.py _PersistFn): gradients and time.

    PYTHONPATH=. python tools/scan_train_cuda_check.py [--hidden 64,170,512] [--batch 1,128] [--L 784] [--reps 5]

For each hidden size n, batch N and body (expRNN's modReLU step: h Wᵀ + x W_inᵀ with a 1-pixel
input, plus a zero tap e whose gradient is dz; a tanh RNN step with an n-wide input and a
bias), float32, over L steps, loss = sum(ys * gy) + sum(h_T * gT):
  - the lowering torchc.scan got (_scan.last_lowering): the persistent kernels ("training")
    where W fits in shared memory (n <= 236), else the loop over the compiled body with the
    reason; otherwise the case FAILS (exit 1 at the end, naming it);
  - the max error of ys, h_T and the gradient of every input (h0, W, b, W_in or x, e)
    against eager's Python loop, relative to the largest value (FAIL above 2e-3);
  - forward + backward time (median of --reps, CUDA-synchronized) of torchc.scan, of eager's
    loop and of the loop over the compiled body (the lowering before the persistent kernels:
    _scan._python_loop with autograd), and the speedups.
Prints one line a case and a JSON summary (--out FILE). Needs CUDA.
"""
import argparse
import json
import statistics
import sys
import time

import torch
from torch.utils import _pytree as pytree

import torchc
from torchc import _scan

GAIN = 0.9  # contractive recurrent matrices: eager's and the kernels' rounding stay small


def modrelu_case(n, N, L, dev, g):
    W = (torch.randn(n, n, generator=g) * (GAIN / n ** 0.5)).to(dev).requires_grad_()
    Win = torch.randn(n, 1, generator=g).to(dev).requires_grad_()
    b = (-torch.rand(n, generator=g) * 0.01).to(dev).requires_grad_()  # b <= 0: continuous modReLU
    x = torch.randn(L, N, 1, generator=g).to(dev)
    e0 = torch.zeros(N, n, device=dev, requires_grad=True)

    def step(h, xs):
        xt, e = xs
        z = torch.mm(h, W.t()) + torch.mm(xt, Win.t()) + e
        h = torch.sign(z) * torch.relu(z.abs() + b)
        return h, h
    return step, (x, e0.expand(L, N, n)), {"W": W, "W_in": Win, "b": b, "e": e0}


def tanh_case(n, N, L, dev, g):
    W = (torch.randn(n, n, generator=g) * (GAIN / n ** 0.5)).to(dev).requires_grad_()
    bias = (torch.randn(n, generator=g) * 0.1).to(dev).requires_grad_()
    x = torch.randn(L, N, n, generator=g).to(dev).requires_grad_()

    def step(h, xt):
        h = torch.tanh(h @ W.t() + xt + bias)
        return h, h
    return step, x, {"W": W, "bias": bias, "x": x}


BODIES = {"modrelu": modrelu_case, "tanh": tanh_case}


def eager_scan(fn, h, xs):
    X, spec = pytree.tree_flatten(xs)
    ys = []
    for t in range(X[0].shape[0]):
        h, y = fn(h, pytree.tree_unflatten([v[t] for v in X], spec))
        ys.append(y)
    return h, torch.stack(ys)


def compiled_loop(fn, h, xs):
    """the loop over the compiled body with autograd (torchc.scan's CUDA training lowering
    before the persistent kernels, and still the one of bodies they do not take)"""
    body = _scan._compiled(fn, static=True)
    X, sx = pytree.tree_flatten(xs)
    _, si = pytree.tree_flatten(h)
    return _scan._python_loop(body, si, sx, [h], X)


def sync():
    torch.cuda.synchronize()


def timed(f, reps):
    f()
    sync()
    ts, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = f()
        sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def rel(a, b):
    return (a - b).abs().max().item() / max(b.abs().max().item(), 1e-30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", default="64,170,512")
    ap.add_argument("--batch", default="1,128")
    ap.add_argument("--L", type=int, default=784)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bodies", default="modrelu,tanh")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("scan_train_cuda_check: needs CUDA")
        return 2
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}, torch {torch.__version__}")
    rows, failed = [], []
    for body in a.bodies.split(","):
        for n in [int(v) for v in a.hidden.split(",")]:
            for N in [int(v) for v in a.batch.split(",")]:
                g = torch.Generator().manual_seed(n * 131 + N)
                step, xs, named = BODIES[body](n, N, a.L, dev, g)
                h0 = (torch.randn(N, n, generator=g) * 0.5).to(dev).requires_grad_()
                named = {"h0": h0, **named}
                params = list(named.values())
                gy = torch.randn(a.L, N, n, generator=g).to(dev)
                gT = torch.randn(N, n, generator=g).to(dev)
                name = f"{body} n={n} N={N} L={a.L}"
                lowering = []

                def run(scan_fn, note=False):
                    c, ys = scan_fn(step, h0, xs)
                    if note:
                        lowering.append(_scan.last_lowering or "")
                    grads = torch.autograd.grad((ys * gy).sum() + (c * gT).sum(), params)
                    return c, ys, grads
                t_p, (c, ys, gp) = timed(lambda: run(torchc.scan, True), a.reps)
                t_e, (ce, yse, ge) = timed(lambda: run(eager_scan), a.reps)
                t_l, (cl, ysl, gl) = timed(lambda: run(compiled_loop), a.reps)
                low = lowering[-1]
                expect = n <= 236  # W [n, n] and the state in 227 KB of shared memory
                persistent = low.startswith("persistent kernel") and "training" in low
                as_expected = persistent if expect else (low.startswith("Python loop") and "shared memory" in low)
                errs = {"ys": rel(ys, yse), "h_T": rel(c, ce)}
                errs.update({f"d{k}": rel(x, y) for k, x, y in zip(named, gp, ge)})
                errs_loop = {f"d{k}": rel(x, y) for k, x, y in zip(named, gl, ge)}
                worst = max(errs.values())
                ok = as_expected and worst <= 2e-3
                row = dict(case=name, lowering=low, persistent=persistent, rel_err=errs,
                           loop_rel_err=errs_loop, ms_torchc=t_p * 1e3, ms_eager=t_e * 1e3,
                           ms_compiled_body_loop=t_l * 1e3, x_vs_eager=t_e / t_p, x_vs_loop=t_l / t_p, ok=ok)
                rows.append(row)
                print(f"{'ok  ' if ok else 'FAIL'} {name}: fwd+bwd {t_p * 1e3:.2f} ms, eager {t_e * 1e3:.2f} ms "
                      f"({t_e / t_p:.1f}x), compiled-body loop {t_l * 1e3:.2f} ms ({t_l / t_p:.1f}x); worst rel err "
                      f"{worst:.1e} ({max(errs, key=errs.get)})")
                print(f"     {low}")
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
