"""Per-call guard overhead of a cache hit (issue 24): a function calling 10 tensor methods on
each of 3 inputs (each method name read on an input tensor is guarded: no instance attribute
of that name shadows it) beside the same computation written with torch.* functions (no
method reads), with and without a torch.device("cpu") context around the call (the
TorchFunctionMode stack is read by the entry check and by its guard). Prints medians of many
calls: the whole call, and the guards alone (torchc._C.probe binds the arguments and runs the
entry's guards, nothing else), plus the guard count of each entry.

    python benchmarks/guard_overhead.py [--reps N]
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402


_NAMES = ("sin", "cos", "exp", "abs", "neg", "tanh", "sigmoid", "relu", "square", "sqrt")


def methods(x, y, z):
    a = x.sin() + x.cos() + x.exp() + x.abs() + x.neg() + x.tanh() + x.sigmoid() + x.relu() + x.square() + x.sqrt()
    b = y.sin() + y.cos() + y.exp() + y.abs() + y.neg() + y.tanh() + y.sigmoid() + y.relu() + y.square() + y.sqrt()
    c = z.sin() + z.cos() + z.exp() + z.abs() + z.neg() + z.tanh() + z.sigmoid() + z.relu() + z.square() + z.sqrt()
    return a + b + c


def functions(x, y, z):
    t = torch
    a = t.sin(x) + t.cos(x) + t.exp(x) + t.abs(x) + t.neg(x) + t.tanh(x) + t.sigmoid(x) + t.relu(x) + t.square(x) + t.sqrt(x)
    b = t.sin(y) + t.cos(y) + t.exp(y) + t.abs(y) + t.neg(y) + t.tanh(y) + t.sigmoid(y) + t.relu(y) + t.square(y) + t.sqrt(y)
    c = t.sin(z) + t.cos(z) + t.exp(z) + t.abs(z) + t.neg(z) + t.tanh(z) + t.sigmoid(z) + t.relu(z) + t.square(z) + t.sqrt(z)
    return a + b + c


def median_us(fn, *args, reps):
    for _ in range(50):
        fn(*args)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(*args)
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1e3


def nguards(fn, args):
    text = str(torchc.explain(fn)(*args))
    g = text.split("Guards:", 1)[1] if "Guards:" in text else ""
    lines = [ln.strip() for ln in g.splitlines() if ln.strip()]
    return len(lines), sum(ln.startswith("DICT_KEY") for ln in lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20000)
    a = ap.parse_args()
    args = tuple(torch.rand(8) for _ in range(3))
    rows = []
    with torch.no_grad():
        for name, fn in (("methods", methods), ("functions", functions)):
            cf = torchc.compile(fn)
            torch.testing.assert_close(cf(*args), fn(*args))
            n, nk = nguards(fn, args)
            for ctx_name in ("no context", "torch.device('cpu')"):
                ctx = torch.device("cpu") if ctx_name != "no context" else None
                if ctx is not None:
                    ctx.__enter__()
                try:
                    cf(*args)  # an entry for this context
                    call = median_us(cf, *args, reps=a.reps)
                    probe = median_us(torchc._C.probe, fn, args, None, cf, reps=a.reps)
                finally:
                    if ctx is not None:
                        ctx.__exit__(None, None, None)
                rows.append((name, ctx_name, n, nk, call, probe))
            eager = median_us(fn, *args, reps=a.reps // 4)
            rows.append((name, "eager", n, nk, eager, float("nan")))
    print(f"{'function':10s} {'around the call':20s} {'guards':>6s} {'DICT_KEY':>8s} {'call us':>8s} {'guards us':>9s}")
    for r in rows:
        print(f"{r[0]:10s} {r[1]:20s} {r[2]:6d} {r[3]:8d} {r[4]:8.2f} {r[5]:9.2f}")


if __name__ == "__main__":
    main()
