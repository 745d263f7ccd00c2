"""Optimizer steps alone: torch.optim eager vs torchc.compile(opt.step) vs torch.compile(opt.step)
(issue 22, deliverable 7). Same parameters and gradients for every system; median ms a step,
first-step seconds (compile included), and the largest parameter difference from eager after
the timed steps.

    python benchmarks/optim_step.py [--device cpu|cuda] [--optimizer adamw,sgd-momentum,adam]
                                    [--model mlp|wide] [--steps 15] [--no-torch-compile]
"""
import argparse
import copy
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402

MAKE = {
    "sgd-momentum": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9, weight_decay=1e-4),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-3),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-3),
}


def model(kind, dev):
    torch.manual_seed(0)
    if kind == "mlp":  # 784-1024-1024-10: 6 tensors, 1.9M parameters
        m = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    else:  # many small tensors: 12 blocks of LayerNorm + 2 Linear (72 tensors)
        m = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.LayerNorm(256), torch.nn.Linear(256, 512),
                                                      torch.nn.Linear(512, 256)) for _ in range(12)])
    return m.to(dev)


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--optimizer", default="adamw,sgd-momentum")
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--no-torch-compile", action="store_true")
    a = ap.parse_args()
    dev = a.device
    for name in a.optimizer.split(","):
        base = model(a.model, dev)
        grads = [torch.randn_like(p) * 1e-3 for p in base.parameters()]
        systems = ["eager", "torchc"] + ([] if a.no_torch_compile else ["torch.compile"])
        res = {}
        for s in systems:
            m = copy.deepcopy(base)
            for p, g in zip(m.parameters(), grads):
                p.grad = g.clone()
            opt = MAKE[name](m.parameters())
            step = {"eager": opt.step, "torchc": torchc.compile(opt.step) if s == "torchc" else None,
                    "torch.compile": torch.compile(opt.step) if s == "torch.compile" else None}[s]
            sync(dev)
            t0 = time.perf_counter()
            step()
            sync(dev)
            first = time.perf_counter() - t0
            ts = []
            for _ in range(a.steps):
                t0 = time.perf_counter()
                step()
                sync(dev)
                ts.append((time.perf_counter() - t0) * 1e3)
            res[s] = (statistics.median(ts), first, [p.detach() for p in m.parameters()])
        e = res["eager"]
        nparams = sum(p.numel() for p in base.parameters())
        print(f"{name} {a.model} ({nparams} params, {len(grads)} tensors, {dev}): eager {e[0]:.2f} ms")
        for s in systems[1:]:
            ms, first, ps = res[s]
            diff = max((x - y).abs().max().item() for x, y in zip(ps, e[2]))
            print(f"  {s:13s} {ms:8.2f} ms  {e[0] / ms:5.2f}x over eager  first step {first:6.2f} s  "
                  f"max |param - eager's| {diff:.2e}")


if __name__ == "__main__":
    main()
