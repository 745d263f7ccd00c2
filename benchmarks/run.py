"""Benchmark runner: eager vs torchc vs real torch.compile, measured in one run.

    python benchmarks/run.py [--only NAME] [--no-torch-compile] [--out results/cpu.json]

For each workload: median ms/call of each variant, speedup over eager, first-call
(compile) seconds, and max error against eager. Results go to benchmarks/results/.
"""
import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time

# first calls are cold compiles for both compilers: fresh cache directories for this run
# (TORCHC_WARM_CACHES=1 keeps the usual ones: torch.compile's FX/Inductor caches and torchc's)
if os.environ.get("TORCHC_WARM_CACHES") != "1":
    for var in ("TORCHINDUCTOR_CACHE_DIR", "TORCHC_CACHE_DIR"):
        os.environ[var] = tempfile.mkdtemp(prefix="bench_cache_")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torchc  # noqa: E402
from common import bench, first_call, max_abs_err, torch_compile_available  # noqa: E402


def softmax(x):
    return torch.softmax(x, -1)


def layernorm(x, w, b):
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(-1, keepdim=True)
    return xc * torch.rsqrt(var + 1e-5) * w + b


def rmsnorm(x, w):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def gelu(x):
    return F.gelu(x)


def pointwise_chain(x, y):
    return torch.sigmoid(x * 1.5 + y) * torch.tanh(y) - (x - y).abs().sqrt()


def rmsnorm_gelu_softmax(x, w, b):
    h = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)
    return torch.softmax(F.gelu(h * w + b), dim=-1)


def sum_rows(x):
    return (x * x).sum(-1)


class MLP(torch.nn.Module):
    """MLP 784-1024-1024-10."""

    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(784, 1024)
        self.l2 = torch.nn.Linear(1024, 1024)
        self.l3 = torch.nn.Linear(1024, 10)

    def forward(self, x):
        x = torch.relu(self.l1(x))
        x = torch.relu(self.l2(x))
        return torch.log_softmax(self.l3(x), -1)


class PreLNBlock(torch.nn.Module):
    """Pre-LN transformer block, d=256, 4 heads, MLP 4x, GELU."""

    def __init__(self, d=256, h=4):
        super().__init__()
        self.h = h
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q = q.view(b, t, self.h, d // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, d // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, d // self.h).transpose(1, 2)
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.h)), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GRUCell(torch.nn.Module):
    """A GRU-style cell unrolled over T=32 steps (the loop is unrolled by the capture)."""

    def __init__(self, d=256, steps=32):
        super().__init__()
        self.steps = steps
        self.wx = torch.nn.Linear(d, 3 * d)
        self.wh = torch.nn.Linear(d, 3 * d)

    def forward(self, xs, h):
        for i in range(self.steps):
            gx, gh = self.wx(xs[i]), self.wh(h)
            rx, zx, nx = gx.chunk(3, -1)
            rh, zh, nh = gh.chunk(3, -1)
            r, z = torch.sigmoid(rx + rh), torch.sigmoid(zx + zh)
            n = torch.tanh(nx + r * nh)
            h = (1 - z) * n + z * h
        return h


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False),
                                             torch.nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (x if self.short is None else self.short(x)))


class SmallResNet(torch.nn.Module):
    """A small CIFAR-style ResNet (ResNet-8: 3 stages of one basic block, 16/32/64 channels)."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, 1, 1, bias=False),
                                        torch.nn.BatchNorm2d(16), torch.nn.ReLU())
        self.layers = torch.nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                          BasicBlock(32, 64, 2))
        self.fc = torch.nn.Linear(64, classes)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))


def workloads():
    r, c = 4096, 1024
    x, y = torch.randn(r, c), torch.randn(r, c)
    w, b = torch.randn(c), torch.randn(c)
    return [
        ("softmax_4096x1024", softmax, (x,)),
        ("layernorm_4096x1024", layernorm, (x, w, b)),
        ("rmsnorm_4096x1024", rmsnorm, (x, w)),
        ("gelu_4096x1024", gelu, (x,)),
        ("pointwise_chain_4096x1024", pointwise_chain, (x, y)),
        ("rmsnorm_gelu_softmax_4096x1024", rmsnorm_gelu_softmax, (x, w, b)),
        ("sum_sq_rows_4096x1024", sum_rows, (x,)),
        ("softmax_small_64x128", softmax, (torch.randn(64, 128),)),
        ("mlp_784_1024_1024_10_b256", MLP().eval(), (torch.randn(256, 784),)),
        ("preln_block_d256_t128_b8", PreLNBlock().eval(), (torch.randn(8, 128, 256),)),
        ("gru_cell_t32_d256_b64", GRUCell().eval(), (torch.randn(32, 64, 256), torch.randn(64, 256))),
        ("resnet8_cifar_b32", SmallResNet().eval(), (torch.randn(32, 3, 32, 32),)),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for eager (torch.set_num_threads) and torchc alike")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "cpu.json"))
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        torchc.config.num_threads = args.threads
    use_tc = torch_compile_available() and not args.no_torch_compile
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}")
    hdr = f"{'workload':34s} {'eager ms':>9s} {'torchc ms':>9s} {'x eager':>8s} {'compile s':>9s}"
    if use_tc:
        hdr += f" {'inductor ms':>11s} {'x eager':>8s} {'compile s':>9s}"
    print(hdr)
    for name, fn, inputs in workloads():
        if args.only and args.only not in name:
            continue
        with torch.no_grad():
            ref = fn(*inputs)
            t_e = bench(fn, *inputs)  # eager first, before torchc's thread pool exists
            torchc.reset()
            cf = torchc.compile(fn)
            t_c, out = first_call(cf, *inputs)
            err = max_abs_err(out, ref)
            ex = torchc.explain(cf)(*inputs)
            t_t = bench(cf, *inputs)
            row = dict(name=name, eager_ms=t_e * 1e3, torchc_ms=t_t * 1e3, torchc_speedup=t_e / t_t,
                       torchc_compile_s=t_c, torchc_max_err=err, torchc_graphs=ex.graph_count,
                       torchc_breaks=ex.graph_break_count)
            line = f"{name:34s} {t_e*1e3:9.3f} {t_t*1e3:9.3f} {t_e/t_t:8.2f} {t_c:9.3f}"
            if use_tc:
                from torch import _dynamo
                _dynamo.reset()
                tfn = torch.compile(fn)
                t_ci, out2 = first_call(tfn, *inputs)
                t_i = bench(tfn, *inputs)
                row.update(inductor_ms=t_i * 1e3, inductor_speedup=t_e / t_i, inductor_compile_s=t_ci,
                           inductor_max_err=max_abs_err(out2, ref))
                line += f" {t_i*1e3:11.3f} {t_e/t_i:8.2f} {t_ci:9.3f}"
            print(line, flush=True)
            rows.append(row)
    if rows:
        g = math.exp(sum(math.log(r["torchc_speedup"]) for r in rows) / len(rows))
        summary = dict(torchc_geomean=g, torchc_mean_compile_s=sum(r["torchc_compile_s"] for r in rows) / len(rows))
        print(f"torchc geomean speedup over eager: {g:.2f}x, mean first-call compile "
              f"{summary['torchc_mean_compile_s']*1e3:.1f} ms")
        if use_tc:
            gi = math.exp(sum(math.log(r["inductor_speedup"]) for r in rows) / len(rows))
            summary.update(inductor_geomean=gi,
                           inductor_mean_compile_s=sum(r["inductor_compile_s"] for r in rows) / len(rows))
            print(f"torch.compile geomean speedup over eager: {gi:.2f}x, mean first-call compile "
                  f"{summary['inductor_mean_compile_s']:.1f} s")
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(dict(date=time.strftime("%Y-%m-%d %H:%M"), torch=torch.__version__,
                           threads=torch.get_num_threads(), rows=rows, summary=summary), f, indent=1)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
