"""First training step on the CPU (issue 22's "first step < 2 s per model"): the compile cost of
a step of hand-built look-alikes of the GPU suite's slowest-to-compile models (torchvision and
timm are not needed), train mode, torchc.compile(model), forward + loss.backward() + SGD step.

    python benchmarks/first_step.py [--only densenet121,mobilenet_v3] [--repeat 3] [--amp]
                                    [--batch 2] [--size 64] [--roots /tmp/base,.]
                                    [--env 'TORCHC_CPU_TIERS=0,']

Each run is a fresh process with an empty on-disk cache (TORCHC_CACHE_DIR a new temp dir) and
TORCHC_DEBUG=time; reported per model, medians over the repeats, in ms:

  first     the first step (forward capture + compile + run, backward compile + run, SGD), wall
            and (cpu) the process's CPU time, all threads: steadier on a shared machine (the
            background compiles of tiered code during the step count in it)
  early     (--early-steps) steps right after the second one, before the tier-up wait: the
            median CPU time of the calling thread (the kernels' with --threads 1; the background
            compile runs on another thread): tiered graphs run mostly tier-0 code there
  tier-up wait  then, the wait until the background compiles of tiered code (config cpu_tiers)
            are done; the steady steps run the optimized code (also shown as thread cpu)
  second    the second step (a recompile or guard failure shows here)
  steady    the median of --steps more steps (run time of the compiled code, compile excluded), wall
            and (cpu) process CPU time (with --threads 1, the steadier one on a shared machine)
  eager     an eager step (the same model, after the compiled ones)
  capture   forward frame capture + compile minus the forward compile: tracing, graph building,
            the backward derivation and partition (graph/autograd.c)
  fwd/bwd   the forward and backward graphs' compiles (inductor): nodes, kernels, and the stages
            graph (copy + verify), lower (loop IR), sched (realize + fuse), final (finalize,
            buffers), irgen (LLVM IR), opt (LLVM passes), emit (object code), jit (ORC link)
  graphs    forward graphs compiled in the first two steps (more than one per frame: a recompile)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODELS = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, k=3, s=1, groups=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout),
                         act() if act else nn.Identity())


class DenseLayer(nn.Module):  # BN-ReLU-Conv1x1-BN-ReLU-Conv3x3, concatenated to its input
    def __init__(self, cin, growth, bn_size=4):
        super().__init__()
        self.n1, self.c1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, bn_size * growth, 1, bias=False)
        self.n2, self.c2 = nn.BatchNorm2d(bn_size * growth), nn.Conv2d(bn_size * growth, growth, 3, 1, 1, bias=False)

    def forward(self, feats):
        x = torch.cat(feats, 1)
        return self.c2(F.relu(self.n2(self.c1(F.relu(self.n1(x))))))


class DenseBlock(nn.Module):
    def __init__(self, n, cin, growth):
        super().__init__()
        self.layers = nn.ModuleList([DenseLayer(cin + i * growth, growth) for i in range(n)])

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(feats))
        return torch.cat(feats, 1)


class DenseNet(nn.Module):  # DenseNet-121: blocks (6, 12, 24, 16), growth 32, transitions halve
    def __init__(self, blocks=(6, 12, 24, 16), growth=32, c0=64, classes=100):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c0, 7, 2, 3, bias=False), nn.BatchNorm2d(c0), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, c = [], c0
        for i, n in enumerate(blocks):
            layers.append(DenseBlock(n, c, growth))
            c += n * growth
            if i < len(blocks) - 1:
                layers += [nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2, 2)]
                c //= 2
        self.features = nn.Sequential(*layers)
        self.norm, self.fc = nn.BatchNorm2d(c), nn.Linear(c, classes)

    def forward(self, x):
        x = F.relu(self.norm(self.features(self.stem(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SE(nn.Module):
    def __init__(self, c, r, gate=nn.Hardsigmoid, act=nn.ReLU):
        super().__init__()
        self.f1, self.f2, self.act, self.gate = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1), act(), gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.f2(self.act(self.f1(s))))


class InvRes(nn.Module):  # expand 1x1, depthwise kxk, SE, project 1x1, residual
    def __init__(self, cin, k, exp, cout, se, act, s, se_gate=nn.Hardsigmoid, se_act=nn.ReLU, se_ratio=4, se_in=False):
        super().__init__()
        self.res = s == 1 and cin == cout
        layers = [conv_bn(cin, exp, 1, act=act)] if exp != cin else []
        layers.append(conv_bn(exp, exp, k, s, groups=exp, act=act))
        if se:
            r = max(8, (cin if se_in else exp) // se_ratio)
            layers.append(SE(exp, r, se_gate, se_act))
        layers.append(conv_bn(exp, cout, 1, act=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        y = self.block(x)
        return x + y if self.res else y


class MobileNetV3(nn.Module):  # MobileNetV3-Large's 15 blocks: hardswish, SE with hardsigmoid
    CFG = [(3, 16, 16, False, "RE", 1), (3, 64, 24, False, "RE", 2), (3, 72, 24, False, "RE", 1),
           (5, 72, 40, True, "RE", 2), (5, 120, 40, True, "RE", 1), (5, 120, 40, True, "RE", 1),
           (3, 240, 80, False, "HS", 2), (3, 200, 80, False, "HS", 1), (3, 184, 80, False, "HS", 1),
           (3, 184, 80, False, "HS", 1), (3, 480, 112, True, "HS", 1), (3, 672, 112, True, "HS", 1),
           (5, 672, 160, True, "HS", 2), (5, 960, 160, True, "HS", 1), (5, 960, 160, True, "HS", 1)]

    def __init__(self, classes=100):
        super().__init__()
        layers, c = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)], 16
        for k, e, o, se, a, s in self.CFG:
            layers.append(InvRes(c, k, e, o, se, nn.ReLU if a == "RE" else nn.Hardswish, s))
            c = o
        layers.append(conv_bn(c, 960, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Linear(960, 1280), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class EfficientNetB0(nn.Module):  # MBConv stages with SiLU, SE (sigmoid) on the input width / 4
    STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
              (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]

    def __init__(self, classes=100):
        super().__init__()
        layers, c = [conv_bn(3, 32, 3, 2, act=nn.SiLU)], 32
        for e, k, s, o, n in self.STAGES:
            for i in range(n):
                layers.append(InvRes(c, k, c * e, o, True, nn.SiLU, s if i == 0 else 1, nn.Sigmoid, nn.SiLU,
                                     se_ratio=4, se_in=True))
                c = o
        layers.append(conv_bn(c, 1280, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class YBlock(nn.Module):  # RegNetY: 1x1, grouped 3x3, SE, 1x1, projection shortcut
    def __init__(self, cin, cout, s, gw=8):
        super().__init__()
        self.a = conv_bn(cin, cout, 1)
        self.b = conv_bn(cout, cout, 3, s, groups=cout // gw)
        self.se = SE(cout, max(1, cin // 4), nn.Sigmoid)
        self.c = conv_bn(cout, cout, 1, act=None)
        self.proj = conv_bn(cin, cout, 1, s, act=None) if s != 1 or cin != cout else None

    def forward(self, x):
        y = self.c(self.se(self.b(self.a(x))))
        return F.relu((self.proj(x) if self.proj is not None else x) + y)


class RegNetY(nn.Module):  # RegNetY-400MF: depths (1, 3, 6, 6), widths (48, 104, 208, 440)
    def __init__(self, depths=(1, 3, 6, 6), widths=(48, 104, 208, 440), classes=100):
        super().__init__()
        layers, c = [conv_bn(3, 32, 3, 2)], 32
        for d, w in zip(depths, widths):
            for i in range(d):
                layers.append(YBlock(c, w, 2 if i == 0 else 1))
                c = w
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class Bottleneck(nn.Module):
    def __init__(self, cin, mid, s):
        super().__init__()
        self.a, self.b, self.c = conv_bn(cin, mid, 1), conv_bn(mid, mid, 3, s), conv_bn(mid, mid * 4, 1, act=None)
        self.down = conv_bn(cin, mid * 4, 1, s, act=None) if s != 1 or cin != mid * 4 else None

    def forward(self, x):
        y = self.c(self.b(self.a(x)))
        return F.relu((self.down(x) if self.down is not None else x) + y)


class ResNet50(nn.Module):
    def __init__(self, depths=(3, 4, 6, 3), classes=100):
        super().__init__()
        layers, c = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)], 64
        for i, (d, mid) in enumerate(zip(depths, (64, 128, 256, 512))):
            for j in range(d):
                layers.append(Bottleneck(c, mid, 2 if (j == 0 and i > 0) else 1))
                c = mid * 4
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class Transformer(nn.Module):  # 12 pre-norm encoder layers (256 wide, 4 heads, MLP 1024), mean-pooled
    def __init__(self, layers=12, d=256, vocab=1000, classes=100):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True,
                                                             norm_first=True) for _ in range(layers)])
        self.norm, self.fc = nn.LayerNorm(d), nn.Linear(d, classes)

    @staticmethod
    def inputs(batch, size):  # tokens: batch x size (64: sequence 64)
        return torch.randint(0, 1000, (batch, size))

    def forward(self, t):
        x = self.emb(t)
        for layer in self.enc:
            x = layer(x)
        return self.fc(self.norm(x).mean(1))


class MLP(nn.Module):  # 4 hidden layers of 1024 (Linear, LayerNorm, GELU), on flattened 3x64x64 images
    def __init__(self, d=1024, layers=4, classes=100, size=64):
        super().__init__()
        dims = [3 * size * size] + [d] * layers
        self.body = nn.Sequential(*[nn.Sequential(nn.Linear(a, b), nn.LayerNorm(b), nn.GELU())
                                    for a, b in zip(dims, dims[1:])])
        self.fc = nn.Linear(d, classes)

    def forward(self, x):
        return self.fc(self.body(torch.flatten(x, 1)))


MODELS = {"densenet121": DenseNet, "mlp": MLP, "mobilenet_v3": MobileNetV3, "efficientnet_b0": EfficientNetB0,
          "regnet_y": RegNetY, "resnet50": ResNet50, "transformer": Transformer}
'''

CHILD = r'''
import sys, time, torch
sys.path.insert(0, sys.argv[5])
import torchc
ns = {}
exec(sys.argv[1], ns)
name, batch, size, amp = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[6] == "1"
torch.manual_seed(0)
cls = ns["MODELS"][name]
model = cls().train()
x = cls.inputs(batch, size) if hasattr(cls, "inputs") else torch.randn(batch, 3, size, size)
y = torch.randint(0, 100, (batch,))


def make_step(fn, opt):
    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(fn(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss
    return step


cm = torchc.compile(model)
step = make_step(cm, torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9))
t, tc = [], []
for _ in range(2):
    sys.stderr.write("STEP\n")
    sys.stderr.flush()
    t0, c0 = time.perf_counter(), time.process_time()
    step()
    t.append(time.perf_counter() - t0)
    tc.append(time.process_time() - c0)
sys.stderr.write("STEP\n")
# steps before the tier-up is done (tiered code: mostly tier 0), the calling thread's CPU time
# (the kernels run on it with --threads 1; the background compile runs on another thread)
t0s = []
for _ in range(int(sys.argv[8])):
    h0 = time.thread_time()
    step()
    t0s.append(time.thread_time() - h0)
t0s = sorted(t0s)[len(t0s) // 2] if t0s else float("nan")
# tiered code (config cpu_tiers): the optimized code swapped in before the steady steps
t0 = time.perf_counter()
getattr(torchc._C, "tier_wait", lambda: None)()
tw = time.perf_counter() - t0
ts, tsc, tst = [], [], []
for _ in range(int(sys.argv[7])):
    t0, c0, h0 = time.perf_counter(), time.process_time(), time.thread_time()
    step()
    ts.append(time.perf_counter() - t0)
    tsc.append(time.process_time() - c0)
    tst.append(time.thread_time() - h0)
ts, tsc, tst = ((sorted(ts)[len(ts) // 2], sorted(tsc)[len(tsc) // 2], sorted(tst)[len(tst) // 2]) if ts
                else (float("nan"),) * 3)
ex = torchc.explain(cm)(x)
estep = make_step(model, torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9))
estep()
te = []
for _ in range(3):
    t0 = time.perf_counter()
    estep()
    te.append(time.perf_counter() - t0)
print(f"RESULT {t[0] * 1e3:.1f} {t[1] * 1e3:.1f} {sorted(te)[1] * 1e3:.1f} {ex.graph_count} {ex.op_count}"
      f" {getattr(ex, 'backward_graph_count', -1)} {tc[0] * 1e3:.1f} {ts * 1e3:.2f} {tsc * 1e3:.2f}"
      f" 0 {tw * 1e3:.1f} {t0s * 1e3:.2f} {tst * 1e3:.2f}", flush=True)
'''

STAGES = ["init", "graph", "lower", "sched", "final", "irgen", "opt", "emit", "jit"]
COMPILE = re.compile(r"torchc time: compile ([\d.]+) ms \(cpu ([\d.]+) \+ ([\d.]+) other threads; (\d+) nodes, "
                     r"(\d+) kernels, (\d+) repeats.*?\):(.*)")
FRAME = re.compile(r"torchc time: frame (\S+): capture \+ compile ([\d.]+) ms")


def run_one(name, args, root, var=""):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCHC_CACHE_DIR=cache, TORCHC_DEBUG="time", OMP_NUM_THREADS=str(args.threads),
                   TORCHC_NUM_THREADS=str(args.threads))
        for k in ("TORCHC_CACHE", "TORCHC_DISK_CACHE"):
            env.pop(k, None)
        for kv in var.split():
            env[kv.split("=", 1)[0]] = kv.split("=", 1)[1]
        p = subprocess.run([sys.executable, "-c", CHILD, MODELS, name, str(args.batch), str(args.size), root,
                            "1" if args.amp else "0", str(args.steps), str(args.early_steps)], env=env,
                           capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{name}: failed\n{p.stderr[-3000:]}")
    res = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1].split()[1:]
    r = {"first_cpu": float(res[6]), "first": float(res[0]), "second": float(res[1]), "steady": float(res[7]), "steady_cpu": float(res[8]), "eager": float(res[2]), "graphs": int(res[3]),
         "ops": int(res[4]), "tier_wait": float(res[10]), "early_thread": float(res[11]),
         "steady_thread": float(res[12])}
    # step 1's lines: the forward's compile comes before its frame line, the backward's after
    step1 = p.stderr.split("STEP\n")[1]
    fwd = bwd = None
    frame_ms, seen_frame = 0.0, False
    for ln in step1.splitlines():
        m = FRAME.search(ln)
        if m:
            frame_ms += float(m.group(2))
            seen_frame = True
            continue
        m = COMPILE.search(ln)
        if m:
            st = dict(zip(STAGES, (float(v) for v in m.group(7).split()[1::2])))
            d = {"ms": float(m.group(1)), "cpu": float(m.group(2)) + float(m.group(3)), "nodes": int(m.group(4)),
                 "kernels": int(m.group(5)), "repeats": int(m.group(6)), **st}
            if not seen_frame:
                fwd = d if fwd is None else {k: fwd[k] + d[k] for k in d}
            else:
                bwd = d if bwd is None else {k: bwd[k] + d[k] for k in d}
    r["capture"] = frame_ms - (fwd["ms"] if fwd else 0.0)
    r["fwd"], r["bwd"] = fwd, bwd
    r["recompiles"] = len(p.stderr.split("STEP\n")[2].splitlines()) and sum(
        1 for ln in p.stderr.split("STEP\n")[2].splitlines() if FRAME.search(ln))
    return r


def med(rs, f):
    vals = [f(r) for r in rs if f(r) is not None]
    return statistics.median(vals) if vals else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="densenet121,mobilenet_v3,efficientnet_b0,regnet_y,resnet50")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--amp", action="store_true", help="CPU bf16 autocast around the forward and loss")
    ap.add_argument("--roots", default=ROOT, help="comma-separated torchc trees, run interleaved (A/B in one run)")
    ap.add_argument("--env", default="", help="comma-separated variants, each space-separated NAME=value settings "
                    "(e.g. 'TORCHC_CPU_TIERS=0,'): run interleaved with each root")
    ap.add_argument("--steps", type=int, default=10, help="steps after the first two: their median is 'steady'")
    ap.add_argument("--early-steps", type=int, default=0, help="steps right after the first two, before the "
                    "tier-up wait (tiered code: mostly tier 0); their calling-thread CPU median is 'early'")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the eager ops (TORCHC_NUM_THREADS too)")
    args = ap.parse_args()
    print(f"first training step, CPU, batch {args.batch}, {args.size}x{args.size}, amp={args.amp}, "
          f"median of {args.repeat} fresh processes (ms)")
    roots = [(root, var) for root in args.roots.split(",") for var in args.env.split(",")]
    for name in args.only.split(","):
        runs = {rv: [] for rv in roots}
        for _ in range(args.repeat):
            for rv in roots:
                runs[rv].append(run_one(name, args, *rv))
        for rv in roots:
            tag = " ".join(x for x in (rv[0] if len(args.roots.split(",")) > 1 else "", rv[1]) if x)
            report(name + (f" [{tag}]" if tag else ""), runs[rv])


def report(name, rs):
    r0 = rs[0]
    print(f"{name}: first {med(rs, lambda r: r['first']):.0f} (cpu {med(rs, lambda r: r['first_cpu']):.0f})  "
          f"tier-up wait {med(rs, lambda r: r['tier_wait']):.0f}  early (thread cpu) {med(rs, lambda r: r['early_thread']):.2f}  "
          f"steady (thread cpu) {med(rs, lambda r: r['steady_thread']):.2f}  "
          f"second {med(rs, lambda r: r['second']):.1f}  steady {med(rs, lambda r: r['steady']):.2f} (cpu {med(rs, lambda r: r['steady_cpu']):.2f})  eager {med(rs, lambda r: r['eager']):.1f}  "
          f"capture {med(rs, lambda r: r['capture']):.0f}  "
          f"graphs {r0['graphs']} ops {r0['ops']} step-2 frame compiles {r0['recompiles']}")
    for part in ("fwd", "bwd"):
        if r0[part] is None:
            print(f"  {part}: none")
            continue
        st = "  ".join(f"{s} {med(rs, lambda r, s=s: r[part][s] if r[part] else None):.0f}" for s in STAGES)
        print(f"  {part}: {med(rs, lambda r: r[part]['ms'] if r[part] else None):.0f} ms "
              f"(cpu {med(rs, lambda r: r[part]['cpu'] if r[part] else None):.0f}), {r0[part]['nodes']} nodes, "
              f"{r0[part]['kernels']} kernels ({r0[part]['repeats']} repeats): {st}")


if __name__ == "__main__":
    main()
