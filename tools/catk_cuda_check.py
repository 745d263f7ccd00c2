"""Real cats (inductor_c/sched/sched.c place_cat: a cat of many tensors stored operand by operand)
on CUDA: correctness against eager and timings, compiled vs eager in one process.

    python tools/catk_cuda_check.py [--runs 20]

Correctness (fp32 and bf16 where given; each case captured whole, else reported): a stack of 300
[16, 170]; cat along dims 0 / middle / last of odd, 0-size and non-contiguous operands with
mixed dtypes; a 64-step RNN [64, 256] with the steps stacked, forward and the gradients of its
weights; a small cat (3 operands) in a pointwise chain; a same-shape cat of 2 that is an output
and read by a reduction. Timings (median of --runs, CUDA-synchronized): the stack of 300, the
300-step RNN [16, 170], the 64-step RNN [64, 256] and the small cat. Last line: 'N mismatches'.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402

dev = "cuda"


def stack_many(xs):
    return torch.stack(xs)


def rnn(x, h, w, u):
    hs = []
    for t in range(x.shape[0]):
        h = torch.tanh(x[t] @ w + h @ u)
        hs.append(h)
    return torch.stack(hs)


def small_cat(a, b, c):
    y = torch.cat([a * 0.5, b * 2, c + 1], dim=1)
    return (y * y).relu() + 1


def cat_dims(xs, dim):
    return torch.cat([x * 2 for x in xs], dim)


def mixed(xs):
    return torch.cat(xs, 1) * 2


def stored_pair(a, b):
    y = torch.cat([a.exp(), b.exp()], 0)
    return y, y.sum(1)


def tm(fn, args, runs):
    fn(*args)
    fn(*args)
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def close(got, want, tol):
    if isinstance(want, (tuple, list)):
        return all(close(g, w, tol) for g, w in zip(got, want))
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    return torch.allclose(got.float(), want.float(), rtol=tol, atol=tol)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    torch.manual_seed(0)
    bad = 0

    def check(name, fn, args, tol=1e-4):
        nonlocal bad
        torchc.reset()
        ex = torchc.explain(fn)(*args)
        got = torchc.compile(fn)(*args)
        want = fn(*args)
        ok = close(got, want, tol) and ex.graph_count >= 1 and ex.graph_break_count == 0
        bad += not ok
        print(f"{name:40s} graphs {ex.graph_count} breaks {ex.graph_break_count}  {'OK' if ok else 'MISMATCH'}",
              flush=True)

    R = lambda *s, dt=torch.float32: torch.randn(*s, device=dev, dtype=dt)  # noqa: E731
    check("stack 300 [16,170]", stack_many, ([R(16, 170) for _ in range(300)],))
    check("stack 300 [16,170] bf16", stack_many, ([R(16, 170, dt=torch.bfloat16) for _ in range(300)],), 1e-2)
    for dim in (0, 1, 2):
        sizes = [3, 0, 1, 5, 2, 0, 7, 1, 4, 3, 1]
        xs = []
        for s in sizes:
            sh = [2, 3, 5]
            sh[dim] = s
            xs.append(R(*sh))
        check(f"cat dim {dim} odd/empty", cat_dims, (xs, dim))
    base = R(6, 40)
    xs = [base[:, i::8][:5] if i % 2 else base.t()[i:i + 5, :5] for i in range(6)]
    xs += [torch.randint(-5, 5, (5, 3), dtype=torch.int32, device=dev), R(5, 2, dt=torch.float16),
           R(5, 4, dt=torch.float64)[:, ::2], torch.ones(5, 1, dtype=torch.bool, device=dev)]
    check("cat strided + mixed dtypes", mixed, (xs,))
    check("small cat in a chain", small_cat, (R(512, 300), R(512, 200), R(512, 100)))
    check("stored same-shape pair", stored_pair, (R(33, 17), R(33, 17)))
    args64 = (R(64, 64, 256), R(64, 256), R(256, 256) * 0.05, R(256, 256) * 0.05)
    check("rnn 64 steps [64,256]", rnn, args64, 1e-3)

    # gradients through the stacked steps
    w = (torch.randn(256, 256, device=dev) * 0.05).requires_grad_()
    u = (torch.randn(256, 256, device=dev) * 0.05).requires_grad_()
    x, h = R(16, 8, 256), R(8, 256)

    def loss(x, h):
        return rnn(x, h, w, u).square().sum()

    torchc.reset()
    got = torchc.compile(loss)(x, h)
    gg = torch.autograd.grad(got, (w, u))
    want = loss(x, h)
    wg = torch.autograd.grad(want, (w, u))
    ok = close(got, want, 1e-3) and close(gg, wg, 1e-3)
    bad += not ok
    print(f"{'rnn 16 steps gradients':40s} {'OK' if ok else 'MISMATCH'}", flush=True)

    print("timings (ms, median):")
    cases = [
        ("stack 300x[16,170]", stack_many, ([R(16, 170) for _ in range(300)],)),
        ("rnn 300 steps [16,170]", rnn, (R(300, 16, 170), R(16, 170), R(170, 170) * 0.1, R(170, 170) * 0.1)),
        ("rnn 64 steps [64,256]", rnn, args64),
        ("small cat 3 in a chain", small_cat, (R(512, 300), R(512, 200), R(512, 100))),
    ]
    for name, fn, args in cases:
        torchc.reset()
        cf = torchc.compile(fn)
        te, tc = tm(fn, args, a.runs), tm(cf, args, a.runs)
        print(f"{name:26s} eager {te:8.3f}  compiled {tc:8.3f}  ({te / tc:5.2f}x)", flush=True)
    print(f"{bad} mismatches")


if __name__ == "__main__":
    main()
