"""GEMM template vs cuBLAS: TFLOP/s on the GPU (inductor_c/codegen/gpu_gemm.c).

For each shape [M, K] x [K, N] (bf16 by default; the weight as nn.Linear stores it, [N, K]):
  cublas      torch F.linear(x, w) (eager, cuBLAS)
  cublas+epi  torch F.gelu(F.linear(x, w, b)) (eager: cuBLAS with bias, then a gelu kernel)
  extern      torchc graph linear(x, w, b) -> gelu, TORCHC_GEMM=extern (ATen call + our kernel)
  template    the same graph with TORCHC_GEMM=template (one kernel, epilogue fused)
  template-mm plain x @ w^T, TORCHC_GEMM=template (no bias, no epilogue)
  auto        the same graph as extern/template with TORCHC_GEMM=auto (the selection: the
              template, the extern call, or for 2^27..2^31 multiply-adds the faster of the two
              as timed on the first call, "timed: ...")
TFLOP/s = 2 M N K / time (epilogue flops not counted). Times: CUDA events over --iters calls
after warm-up, median of --reps. Writes JSON with --out.

  python3 benchmarks/gemm_bench.py [--dtype bf16] [--iters 50] [--out results.json]
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "tests")]
import test_gemm_gpu as G  # noqa: E402  (graph builders)
import torchc  # noqa: E402
import test_gpu as T  # noqa: E402

SHAPES = [  # (name, M, N, K)
    ("bert/gpt2 qkv-out 4096x768x768", 4096, 768, 768),
    ("bert/gpt2 fc1 4096x3072x768", 4096, 3072, 768),
    ("bert/gpt2 fc2 4096x768x3072", 4096, 768, 3072),
    ("vit fc1 6304x3072x768", 6304, 3072, 768),
    ("gpt2 qkv 4096x2304x768", 4096, 2304, 768),
    ("square 2048", 2048, 2048, 2048),
    ("square 4096", 4096, 4096, 4096),
    ("classifier 32x1000x512", 32, 1000, 512),
    ("small 128x768x768", 128, 768, 768),
    ("mid 256x768x768", 256, 768, 768),
    ("mid 512x768x768", 512, 768, 768),
    ("mid 1024x768x768", 1024, 768, 768),
    ("mid 256x3072x768", 256, 3072, 768),
    ("mid 1024x1024x1024", 1024, 1024, 1024),
]


def timed(fn, iters, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / iters * 1e-3)
    ts.sort()
    return ts[len(ts) // 2]


def compiled(mode, fn, *ins):
    os.environ["TORCHC_GEMM"] = mode
    try:
        c = T.Compiled(fn, *ins)
    finally:
        os.environ.pop("TORCHC_GEMM", None)
    outs = c.outputs()
    stream = torch.cuda.current_stream()
    return c, (lambda: c.run(ins, outs, stream))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "f16"])
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    ap.add_argument("--only")
    a = ap.parse_args()
    dt = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    rows = []
    print(f"{'shape':34s} {'cublas':>8s} {'cub+epi':>8s} {'extern':>8s} {'templ':>8s} {'tmpl-mm':>8s} {'auto':>8s}  TFLOP/s"
          "  (templ/extern)")
    for name, M, N, K in SHAPES:
        if a.only and a.only not in name:
            continue
        x = (torch.randn(M, K, device="cuda") * 0.5).to(dt)
        w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(dt)
        b = torch.randn(N, device="cuda").to(dt)
        flop = 2.0 * M * N * K
        r = {"shape": name, "M": M, "N": N, "K": K, "dtype": a.dtype}
        r["cublas"] = timed(lambda: F.linear(x, w), a.iters, a.reps)
        r["cublas+epi"] = timed(lambda: F.gelu(F.linear(x, w, b)), a.iters, a.reps)

        def epi(x, w, b):
            return G.act("gelu", G.linear(x, w, b))

        def plain(x, w):
            return G.linear(x, w)
        for key, mode, fn, ins in (("extern", "extern", epi, (x, w, b)), ("template", "template", epi, (x, w, b)),
                                   ("template-mm", "template", plain, (x, w)), ("auto", "auto", epi, (x, w, b))):
            g0 = torchc._C.stats()
            c, call = compiled(mode, fn, *ins)
            r[key] = timed(call, a.iters, a.reps)
            if key == "auto":  # a timed choice (2^27..2^31 multiply-adds) has both forms in its PTX
                g1 = torchc._C.stats()
                if g1["gemm_measured"] > g0["gemm_measured"]:
                    r["auto_path"] = "timed: " + ("template" if g1["gemm_template"] > g0["gemm_template"] else "extern")
                else:
                    r["auto_path"] = "template" if "mma.sync" in (c.ptx() or "") else "extern"
            if key == "template":  # correctness on the benchmark shape
                got = call()[0]
                torch.cuda.synchronize()
                want = F.gelu(F.linear(x, w, b))
                r["max_abs_err"] = float((got.float() - want.float()).abs().max())
        for k in ("cublas", "cublas+epi", "extern", "template", "template-mm", "auto"):
            r[k + "_tflops"] = flop / r[k] / 1e12
        rows.append(r)
        print(f"{name:34s} " + " ".join(f"{r[k + '_tflops']:8.1f}" for k in
                                         ("cublas", "cublas+epi", "extern", "template", "template-mm", "auto"))
              + f"  x{r['extern'] / r['template']:.2f} auto={r['auto_path']} err={r['max_abs_err']:.3g}", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
