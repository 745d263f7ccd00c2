"""Compiled torch.cat/stack of many tensors against eager (CPU), median of several runs.

Cases: a stack of 300 [16, 170] tensors; a 300-step RNN cell loop with the steps stacked; a
64-step RNN [64, 256]; a small cat (3 operands) in a pointwise chain. Usage:
    python benchmarks/cat_bench.py [--runs 15] [--threads 1]
(from a checkout's root: it imports ./torchc; `cd /work/main && python <this file>` is a baseline).
max_cat_inputs is raised so that the 300-operand stacks are compiled, not broken off.
"""
import argparse
import os
import sys
import statistics
import time

import torch

sys.path.insert(0, os.getcwd())  # the checkout run from (a worktree, or main for a baseline)
import torchc  # noqa: E402


def stack_many(xs):
    return torch.stack(xs)


def rnn(x, h, w, u):
    hs = []
    for t in range(x.shape[0]):
        h = torch.tanh(x[t] @ w + h @ u)
        hs.append(h)
    return torch.stack(hs)


def small_cat(a, b, c):
    y = torch.cat([a * 0.5, b * 2, c + 1], dim=1)  # (sin: torchc's sin alone is slower than eager)
    return (y * y).relu() + 1


def timeit(fn, args, runs):
    fn(*args)
    fn(*args)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1, help="torch's (and so torchc's) CPU threads")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torchc.config.cpu_tiers = 0  # the optimized code from the first call on
    torch.manual_seed(0)
    torchc.config.max_cat_inputs = 1024
    print("torchc from", os.path.dirname(torchc.__file__), "torch threads", torch.get_num_threads())
    cases = [
        ("stack 300x[16,170]", stack_many, ([torch.randn(16, 170) for _ in range(300)],)),
        ("rnn 300 steps [16,170]", rnn, (torch.randn(300, 16, 170), torch.randn(16, 170),
                                         torch.randn(170, 170) * 0.1, torch.randn(170, 170) * 0.1)),
        ("rnn 64 steps [64,256]", rnn, (torch.randn(64, 64, 256), torch.randn(64, 256),
                                        torch.randn(256, 256) * 0.05, torch.randn(256, 256) * 0.05)),
        ("small cat 3 in a chain", small_cat, (torch.randn(512, 300), torch.randn(512, 200),
                                               torch.randn(512, 100))),
    ]
    for name, fn, args in cases:
        torchc.reset()
        cf = torchc.compile(fn)
        ex = torchc.explain(fn)(*args)
        want, got = fn(*args), cf(*args)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
        te = timeit(fn, args, a.runs)
        tc = timeit(cf, args, a.runs)
        print(f"{name:26s} eager {te:8.3f} ms  compiled {tc:8.3f} ms  ({te / tc:5.2f}x)  "
              f"graphs {ex.graph_count} breaks {ex.graph_break_count}", flush=True)


if __name__ == "__main__":
    main()
