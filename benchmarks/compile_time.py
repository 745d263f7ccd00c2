"""Compile time of a large graph: a generated function of N ops (pointwise chains with
periodic row reductions), first call through torchc (capture + compile + run) vs a cache hit.

    python benchmarks/compile_time.py [--ops 500]
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402


def make_fn(nops):
    lines = ["def f(x, y):", "    a = x"]
    ops = ["a = a * 1.0001 + y", "a = torch.tanh(a)", "a = a - a.mean(-1, keepdim=True)",
           "a = torch.sigmoid(a) * a", "a = a / (a.abs().amax(-1, keepdim=True) + 1)",
           "a = torch.relu(a) + 0.5 * a"]
    count, i = 0, 0
    per = [3, 1, 2, 3, 4, 3]  # graph ops each line adds (approximately)
    while count < nops:
        lines.append("    " + ops[i % len(ops)])
        count += per[i % len(ops)]
        i += 1
    lines.append("    return a")
    ns = {"torch": torch}
    exec("\n".join(lines), ns)
    return ns["f"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=500)
    a = ap.parse_args()
    f = make_fn(a.ops)
    x, y = torch.randn(64, 256), torch.randn(256)
    torchc.reset()
    cf = torchc.compile(f)
    t0 = time.perf_counter()
    out = cf(x, y)
    t1 = time.perf_counter()
    cf(x, y)
    t2 = time.perf_counter()
    ex = torchc.explain(cf)(x, y)
    rec = [r for r in ex.records if r["event"] != "fallback"]
    print(f"graph ops: {ex.op_count}, graphs: {ex.graph_count}, breaks: {ex.graph_break_count}")
    print(f"first call (capture + compile + run): {(t1 - t0) * 1e3:.1f} ms; "
          f"compile reported by the hook: {sum(r.get('compile_ms', 0) for r in rec):.1f} ms; "
          f"cache hit: {(t2 - t1) * 1e3:.3f} ms")
    torch.testing.assert_close(out, f(x, y), rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    main()
