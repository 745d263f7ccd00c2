"""Per-call cost of tiny compiled GPU calls: eager vs torchc (default, reduce-overhead) vs
torch.compile (default, reduce-overhead). Tiny tensors, so the time is host overhead (and
launch latency); each figure is the median over 5 rounds of (N calls back to back, then one
synchronize) / N, in µs per call.

  add          x + y                          one kernel
  chain        12 pointwise ops + a sum        one fused kernel (torchc), several eager
  mlp          3 Linear + GELU, batch 4, no_grad  ATen matmuls between torchc graphs

    python benchmarks/cudagraph_overhead.py [--no-torch-compile] [--json FILE]
"""
import argparse
import json
import statistics
import time

import torch

import torchc


def per_call(fn, args, n=300, rounds=5):
    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(*args)
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) / n)
    return statistics.median(ts)


def add(x, y):
    return x + y


def chain(x, y):
    z = x * y + 1
    z = torch.sigmoid(z) * x - y
    z = torch.tanh(z) + z * z
    z = torch.relu(z - 0.5) * 3 + torch.exp(-z)
    return z.sum(-1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    x, y = torch.randn(8, 8, device=dev), torch.randn(8, 8, device=dev)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 256),
                              torch.nn.GELU(), torch.nn.Linear(256, 16)).to(dev)
    xm = torch.randn(4, 64, device=dev)
    cases = [("add", add, (x, y)), ("chain", chain, (x, y)), ("mlp", mlp, (xm,))]
    variants = [("eager", lambda f: f),
                ("torchc", lambda f: torchc.compile(f)),
                ("torchc reduce-overhead", lambda f: torchc.compile(f, mode="reduce-overhead")),
                ("torchc reduce-overhead (replay)", lambda f: torchc.compile(
                    f, mode="reduce-overhead", options={"cudagraph_adaptive": False}))]
    if not a.no_torch_compile:
        variants += [("torch.compile", lambda f: torch.compile(f)),
                     ("torch.compile reduce-overhead", lambda f: torch.compile(f, mode="reduce-overhead"))]
    res = {}
    with torch.no_grad():
        for cname, f, args in cases:
            want = f(*args)
            for vname, mk in variants:
                try:
                    cf = mk(f)
                    for _ in range(6):  # compile, warm-ups, capture
                        got = cf(*args)
                    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
                    res[(cname, vname)] = per_call(cf, args)
                except Exception as e:  # report and go on
                    res[(cname, vname)] = None
                    print(f"{cname} / {vname}: {type(e).__name__}: {str(e)[:160]}")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}: µs per call (tiny tensors)")
    print(f"{'variant':32s}" + "".join(f"{c:>10s}" for c, _, _ in cases))
    for vname, _ in variants:
        row = [res.get((c, vname)) for c, _, _ in cases]
        print(f"{vname:32s}" + "".join(f"{t * 1e6:10.1f}" if t else f"{'-':>10s}" for t in row))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({f"{c}|{v}": t for (c, v), t in res.items()}, fh, indent=1)


if __name__ == "__main__":
    main()
