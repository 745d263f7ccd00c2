"""make demo: compile a small model with torchc, check it against eager, print compile time
and speedup. The model is a pointwise+reduction block (RMSNorm → GELU → softmax) on the CPU."""
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402
from common import bench, first_call, max_abs_err  # noqa: E402


class Block(nn.Module):
    """y = softmax(gelu(rmsnorm(x) * w + b)) — 3 reductions and ~12 pointwise ops in eager."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d) + 0.1 * torch.randn(d))
        self.bias = nn.Parameter(0.1 * torch.randn(d))
        self.eps = 1e-6

    def forward(self, x):
        h = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)
        h = F.gelu(h * self.weight + self.bias)
        return torch.softmax(h, dim=-1)


def main():
    torch.manual_seed(0)
    model = Block(1024).eval()
    x = torch.randn(4096, 1024)
    print(f"torchc demo: Block(d=1024) on x{tuple(x.shape)} float32, {torch.get_num_threads()} threads")
    compiled = torchc.compile(model)
    with torch.no_grad():
        t_compile, out = first_call(compiled, x)
        ref = model(x)
        err = max_abs_err(out, ref)
        ok = torch.allclose(out, ref, rtol=1e-4, atol=1e-6)
        ex = torchc.explain(compiled)(x)
        t_eager = bench(model, x)
        t_torchc = bench(compiled, x)
    print(f"  graphs: {ex.graph_count}, graph breaks: {ex.graph_break_count}, ops: {ex.op_count}")
    if ex.kernels:
        print("  kernels:\n    " + "\n    ".join(ex.kernels[0].strip().splitlines()))
    print(f"  first call (capture + compile + run): {t_compile * 1e3:.1f} ms")
    print(f"  max |torchc - eager| = {err:.2e}  -> {'OK' if ok else 'MISMATCH'}")
    print(f"  eager  {t_eager * 1e3:8.3f} ms/call (median)")
    print(f"  torchc {t_torchc * 1e3:8.3f} ms/call (median)  speedup {t_eager / t_torchc:.2f}x")
    if not ok or ex.graph_count != 1:
        sys.exit(1)


if __name__ == "__main__":
    main()
