"""Compile time of a large graph: first call through torchc (capture + compile + run) of a
generated function of N ops, each measured in a fresh process:

  cold   empty on-disk cache (TORCHC_CACHE_DIR is a new temp dir): capture, lowering,
         scheduling, LLVM IR, optimization, object emission, loading
  warm   the same graph again in a new process, the disk cache filled by a cold run: the
         object files are loaded, LLVM is skipped

    python benchmarks/compile_time.py [--ops 500] [--graph mixed|chain] [--repeat 5]

--graph mixed (default): a realistic mix that cycles through pointwise chains with
broadcasts, row reductions (mean, softmax on a reshaped view), column reductions (amax over
dim 0), transposed views and full reductions, giving ~70 kernels for 500 ops.
--graph chain: the older benchmark, pointwise chains with row reductions (one fused kernel).
Reports min and median over the repeats, plus the per-stage breakdown (TORCHC_DEBUG=time)
of the fastest cold run.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MIXED = [("a = a * 1.0001 + y", 3), ("a = torch.tanh(a)", 1), ("a = a - a.mean(-1, keepdim=True)", 3),
         ("a = torch.sigmoid(a) * a", 2), ("a = (a.t() * 0.5).t() + a", 4),
         ("a = a / (a.abs().amax(0, keepdim=True) + 1)", 4),
         ("a = torch.softmax(a.reshape(-1, 128), -1).reshape(64, 256) + a", 8),
         ("a = torch.relu(a) + 0.5 * a", 3), ("s = s + a.sum()", 2)]
CHAIN = [("a = a * 1.0001 + y", 3), ("a = torch.tanh(a)", 1), ("a = a - a.mean(-1, keepdim=True)", 2),
         ("a = torch.sigmoid(a) * a", 3), ("a = a / (a.abs().amax(-1, keepdim=True) + 1)", 4),
         ("a = torch.relu(a) + 0.5 * a", 3)]


def source(nops, graph):
    ops = MIXED if graph == "mixed" else CHAIN
    lines = ["def f(x, y):", "    a = x", "    s = x.sum() * 0"]
    count, i = 0, 0
    while count < nops:
        line, n = ops[i % len(ops)]
        lines.append("    " + line)
        count += n
        i += 1
    lines.append("    return a + s")
    return "\n".join(lines)


CHILD = r"""
import sys, time, torch, torchc
ns = {"torch": torch}
exec(sys.argv[1], ns)
f = ns["f"]
x, y = torch.randn(64, 256), torch.randn(256)
cf = torchc.compile(f)
t0 = time.perf_counter()
out = cf(x, y)
t1 = time.perf_counter()
cf(x, y)
t2 = time.perf_counter()
torch.testing.assert_close(out, f(x, y), rtol=1e-3, atol=1e-3)
ex = torchc.explain(cf)(x, y)
st = torchc._C.cache_stats()
print(f"RESULT {(t1 - t0) * 1e3:.3f} {(t2 - t1) * 1e3:.3f} {ex.op_count} {ex.graph_count} {st['disk_loaded']}")
"""


def run(src, cache_dir, debug=False):
    env = dict(os.environ, TORCHC_CACHE_DIR=cache_dir, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TORCHC_CACHE", None)
    env.pop("TORCHC_DISK_CACHE", None)
    if debug:
        env["TORCHC_DEBUG"] = "time"
    else:
        env.pop("TORCHC_DEBUG", None)
    p = subprocess.run([sys.executable, "-c", CHILD, src], env=env, capture_output=True, text=True, check=True)
    r = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1].split()[1:]
    times = [ln for ln in p.stderr.splitlines() if ln.startswith("torchc time: compile")]
    return float(r[0]), float(r[1]), int(r[2]), int(r[3]), int(r[4]), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=500)
    ap.add_argument("--graph", choices=["mixed", "chain"], default="mixed")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    src = source(a.ops, a.graph)
    cold, warm, stages = [], [], []
    info = None
    for _ in range(a.repeat):
        with tempfile.TemporaryDirectory(prefix="torchc-ct-") as d:
            t, hit, nops, ngraphs, loaded, times = run(src, d, debug=True)
            cold.append(t)
            stages.append((t, times))
            assert loaded == 0
            t, hit, nops, ngraphs, loaded, _ = run(src, d)
            assert loaded == ngraphs, "warm run did not load from the disk cache"
            warm.append(t)
            info = (nops, ngraphs, hit)
    nops, ngraphs, hit = info
    print(f"graph {a.graph}: {nops} ops, {ngraphs} graph(s); cache hit call {hit:.3f} ms")
    print(f"cold first call (fresh process, empty disk cache): min {min(cold):.1f} ms, "
          f"median {statistics.median(cold):.1f} ms over {a.repeat}")
    print(f"warm first call (fresh process, disk cache filled): min {min(warm):.1f} ms, "
          f"median {statistics.median(warm):.1f} ms over {a.repeat}")
    best = min(stages)[1]
    for ln in best:
        print("  " + re.sub(r"^torchc time: ", "", ln))


if __name__ == "__main__":
    main()
