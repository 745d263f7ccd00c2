"""Offline model suite on the GPU: eager vs torchc vs torch.compile, bf16 inference, random
weights. For each model: median ms/iter, speedup over eager, first-call (compile) seconds,
max abs error vs eager, and torchc's graph/extern/break counts. One run, one process.

    python benchmarks/models.py [--batch 32] [--only resnet18] [--no-torch-compile]
                                [--json benchmarks/results/models_gpu.json]
"""
import argparse
import json
import math
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402
from common import ab_pairs, first_tensor  # noqa: E402


def cuda_bench(fn, *args, reps=20, warmup=3):
    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn(*args)
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def first_call(fn, *args):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(*args)
    torch.cuda.synchronize()
    return time.perf_counter() - t0, out


def gemm_choices():
    s = torchc._C.stats()
    return [s.get("gemm_measured", 0), s.get("gemm_template", 0), s.get("gemm_extern", 0)]


def models(batch):
    import torchvision.models as tvm
    img = lambda: (torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16),)
    out = [
        ("resnet18", lambda: tvm.resnet18(), img),
        ("resnet50", lambda: tvm.resnet50(), img),
        ("mobilenet_v3_large", lambda: tvm.mobilenet_v3_large(), img),
        ("convnext_tiny", lambda: tvm.convnext_tiny(), img),
        ("vit_b_16", lambda: tvm.vit_b_16(), img),
    ]
    try:
        import transformers
        ids = lambda: (torch.randint(0, 30000, (batch, 128), device="cuda"),)

        def bert():
            return transformers.BertModel(transformers.BertConfig())

        def gpt2():
            return transformers.GPT2Model(transformers.GPT2Config())
        out += [("bert_base", bert, ids), ("gpt2", gpt2, ids)]
    except Exception as e:  # pragma: no cover
        print(f"transformers unavailable: {e}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--only", default=None, help="comma-separated substrings of model names")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--ab", default=None, metavar="VAR=VALUE",
                    help="also time torchc compiled with this environment setting (same process)")
    a = ap.parse_args()
    if a.ab:
        try:
            ab_pairs(a.ab)
        except ValueError as e:
            ap.error(str(e))
    torch.manual_seed(0)
    rows = []
    print(f"{'model':20s} {'eager ms':>9s} {'torchc ms':>9s} {'x':>6s} {'comp s':>7s} {'err':>8s} "
          f"{'graphs/ext/brk':>15s} {'inductor ms':>11s} {'x':>6s} {'comp s':>7s} {'err':>8s}")
    for name, make, inputs in models(a.batch):
        if a.only and not any(o and o in name for o in a.only.split(",")):
            continue
        row = {"name": name}
        try:
            m = make().to("cuda", torch.bfloat16).eval()
            x = inputs()
            with torch.no_grad():
                ref = first_tensor(m(*x)).float()
                te = cuda_bench(m, *x)
                torchc.reset()
                cm = torchc.compile(m)
                g0 = gemm_choices()
                tcc, out = first_call(cm, *x)
                row["gemm_choices"] = [b - a for a, b in zip(g0, gemm_choices())]  # timed, template, extern
                err = (first_tensor(out).float() - ref).abs().max().item()
                row["ref_max_abs"] = ref.abs().max().item()
                ex = torchc.explain(cm)(*x)
                tt = cuda_bench(cm, *x)
                row.update(eager_ms=te, torchc_ms=tt, torchc_speedup=te / tt, torchc_compile_s=tcc,
                           torchc_max_err=err, graphs=ex.graph_count, extern=len(ex.extern_calls),
                           breaks=ex.graph_break_count)
                line = (f"{name:20s} {te:9.3f} {tt:9.3f} {te/tt:6.2f} {tcc:7.2f} {err:8.3g} "
                        f"{ex.graph_count:5d}/{len(ex.extern_calls):3d}/{ex.graph_break_count:3d}")
                if a.ab:
                    var, _, value = a.ab.partition("=")
                    old = os.environ.get(var)
                    os.environ[var] = value
                    try:
                        torchc.reset()
                        cb = torchc.compile(m)
                        tcb, bout = first_call(cb, *x)
                        tb = cuda_bench(cb, *x)
                        berr = (first_tensor(bout).float() - ref).abs().max().item()
                    finally:
                        if old is None:
                            del os.environ[var]
                        else:
                            os.environ[var] = old
                    row.update(ab=a.ab, ab_ms=tb, ab_speedup=te / tb, ab_compile_s=tcb, ab_max_err=berr)
                    line += f" | {a.ab}: {tb:7.3f} {te/tb:5.2f} {tcb:5.2f} {berr:7.3g}"
                if not a.no_torch_compile:
                    from torch import _dynamo
                    _dynamo.reset()
                    tm = torch.compile(m)
                    tic, tout = first_call(tm, *x)
                    ierr = (first_tensor(tout).float() - ref).abs().max().item()
                    ti = cuda_bench(tm, *x)
                    row.update(inductor_ms=ti, inductor_speedup=te / ti, inductor_compile_s=tic,
                               inductor_max_err=ierr)
                    line += f" {ti:11.3f} {te/ti:6.2f} {tic:7.1f} {ierr:8.3g}"
            if any(row.get("gemm_choices", [])):
                line += "  GEMM choices timed/template/extern " + "/".join(map(str, row["gemm_choices"]))
            print(line, flush=True)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"
            print(f"{name:20s} ERROR {row['error'][:200]}", flush=True)
            traceback.print_exc(limit=3)
        rows.append(row)
        torch.cuda.empty_cache()
    ok = [r for r in rows if "torchc_speedup" in r]
    if ok:
        g = math.exp(sum(math.log(r["torchc_speedup"]) for r in ok) / len(ok))
        print(f"torchc geomean {g:.2f}x over eager, mean first call {sum(r['torchc_compile_s'] for r in ok)/len(ok):.2f} s")
        ob = [r for r in ok if "ab_speedup" in r]
        if ob:
            gb = math.exp(sum(math.log(r["ab_speedup"]) for r in ob) / len(ob))
            print(f"torchc with {a.ab}: geomean {gb:.2f}x over eager")
        oi = [r for r in ok if "inductor_speedup" in r]
        if oi:
            gi = math.exp(sum(math.log(r["inductor_speedup"]) for r in oi) / len(oi))
            print(f"torch.compile geomean {gi:.2f}x over eager, mean first call "
                  f"{sum(r['inductor_compile_s'] for r in oi)/len(oi):.1f} s")
    if a.json:
        os.makedirs(os.path.dirname(a.json) or ".", exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"batch": a.batch, "rows": rows, "torch": torch.__version__}, f, indent=1)


if __name__ == "__main__":
    main()
