"""Time torchc's GPU code generation (graph passes, LLVM IR, O3, NVPTX, ptxas) on the graphs of a
training step of big models, without a GPU (issue 22's "first step < 2 s per model": most of a big
model's first GPU step is making its kernels, on the host).

    python benchmarks/gpu_codegen_time.py [--only gpt,resnet50,densenet121,mobilenet_v3]
        [--threads 1,16] [--repeat 1] [--ptxas] [--batch 4] [--size 64] [--seq 128]
        [--graphs DIR] [--env 'TORCHC_X=1,']  [--json OUT] [--check]

1. capture (a fresh process a model, cached in --graphs DIR): the model in train mode, one step
   (forward, cross entropy, backward) under torch.autocast("cpu", bfloat16), compiled by torchc on
   the CPU with the capture choices torchc makes for CUDA (config conv_layout=nhwc, dwconv=1) and
   TORCHC_DEBUG=graph: the text of every graph compiled (forward and backward) is kept, DIR/NAME.N.graph.
   The CPU graph is the CUDA one but for its device: ic_graph_to_ptx compiles it for sm_90.
2. compile (a fresh process per model, thread count and --env variant): each graph's text through
   torchc._C.graph_to_ptx (ic_graph_to_ptx: the whole CUDA pipeline of ic_compile up to the PTX,
   split into modules as a run splits them: kernels_per_part=4, the lazy fallbacks apart) with
   TORCHC_DEBUG=time and TORCHC_COMPILE_THREADS=threads; per model, summed over its graphs, in ms:

     wall      ic_compile's wall time; it includes the PTX of the lazy scalar fallbacks, made after
               the parts for ptxas to check (TORCHC_GPU_LAZY=probe; up to ~half of wall, perf: a
               run compiles them only when a launch needs one): the stage columns leave it out
     cpu       CPU time of all threads (the calling one and the parts' threads), the lazy fallbacks'
               PTX left out (ic_ctx cpu_probe), as proj16 is
     passes    graph copy + lower + schedule + finalize (serial)
     irgen     LLVM IR built for every kernel variant, dedupe of repeats (serial); irgen_cpu: its
               CPU time (the calling thread's: the wall time on a loaded machine is several times it)
     built     kernel variants whose IR was built (GEMM templates aside; the rest are repeats found
               by their structural key, gpu_key.c, before any IR)
     opt/emit  O3 and NVPTX code generation of the module parts, wall (parts run in parallel,
               one thread each; the split between the two is in proportion of their own times)
     all       the wall time of the model's graphs, one after another (--together: all at once)
     kernels   fused kernels (extern calls included); variants: .entry functions in the PTX;
     repeats   variants that repeat an earlier one of the graph (generated once); parts: modules
3. --ptxas: every PTX module assembled by ptxas -arch=sm_90 (validates it, as the runtime's ptxas
   or the driver's JIT would turn it into SASS): the summed CPU time ("ptxas cpu") and the
   longest module ("ptxas max": the critical path when modules assemble in parallel processes).

proj16, the projection to 16 cores (read it on a --threads 16 row: the parts are split as a
16-core host splits them): per graph passes + irgen (serial, the calling thread) + the parts'
CPU time (all threads' CPU minus the serial stages) / min(16, parts), assuming even parts; with
--ptxas + max(ptxas cpu / 16, longest module). What the H200 host's 16 cores would take for the
same work, from CPU times measured here (the GPU machine's cores may be faster).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

GPT = r'''
class GPTBlock(nn.Module):  # pre-norm: causal attention (SDPA) and a GELU MLP
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (t.view(b, s, self.h, -1).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, s, d)))
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh")))


class GPT(nn.Module):  # 12 blocks, 384 wide, 6 heads, tied LM head over 1000 tokens
    def __init__(self, layers=12, d=384, vocab=1000):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(1024, d))
        self.blocks = nn.ModuleList([GPTBlock(d, 6) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)

    @staticmethod
    def inputs(batch, size):  # tokens: batch x size
        return torch.randint(0, 1000, (batch, size))

    def forward(self, t):
        x = self.emb(t) + self.pos[: t.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.ln(x) @ self.emb.weight.t()


MODELS["gpt"] = GPT
'''

CAPTURE = r'''
import sys, torch
sys.path.insert(0, sys.argv[4])
import torchc
ns = {}
exec(sys.argv[1], ns)
name, batch, size = sys.argv[2], int(sys.argv[3].split(",")[0]), int(sys.argv[3].split(",")[1])
torchc.config.conv_layout = "nhwc"  # the capture choices torchc makes for 16-bit CUDA convs
torchc.config.dwconv = "1"
torch.manual_seed(0)
cls = ns["MODELS"][name]
model = cls().train()
x = cls.inputs(batch, size) if hasattr(cls, "inputs") else torch.randn(batch, 3, size, size)
cm = torchc.compile(model)
with torch.autocast("cpu", dtype=torch.bfloat16):
    out = cm(x)
    y = torch.randint(0, out.shape[-1], out.shape[:-1])
    loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), y.reshape(-1))
loss.backward()
with torch.autocast("cpu", dtype=torch.bfloat16):  # as captured: no recompile
    ex = torchc.explain(cm)(x)
print(f"RESULT {ex.graph_count} {getattr(ex, 'backward_graph_count', -1)} {ex.op_count}", flush=True)
'''

COMPILE = r'''
import glob, os, sys, time
sys.path.insert(0, sys.argv[1])
import torchc
files = sorted(glob.glob(os.path.join(sys.argv[2], sys.argv[3] + ".*.graph")), key=lambda f: int(f.split(".")[-2]))
out = sys.argv[4]
if sys.argv[5] == "1":  # all graphs at once, a thread each (config backward_ahead: forward and backward)
    import threading
    texts = [open(f).read() for f in files]
    t0 = time.perf_counter()
    ts = [threading.Thread(target=torchc._C.graph_to_ptx, args=(t, 90)) for t in texts]
    [t.start() for t in ts]
    [t.join() for t in ts]
    sys.stderr.write("ALL %.3f\n" % ((time.perf_counter() - t0) * 1e3))
    sys.exit(0)
t_all = time.perf_counter()
for f in files:
    with open(f) as fh:
        text = fh.read()
    sys.stderr.write("GRAPH " + os.path.basename(f) + "\n")
    sys.stderr.flush()
    t0 = time.perf_counter()
    ptx = torchc._C.graph_to_ptx(text, 90)
    sys.stderr.write("WALL %.3f\n" % ((time.perf_counter() - t0) * 1e3))
    sys.stderr.flush()
    if out:
        with open(os.path.join(out, os.path.basename(f)[:-6] + ".ptx"), "w") as fh:
            fh.write(ptx)
sys.stderr.write("ALL %.3f\n" % ((time.perf_counter() - t_all) * 1e3))
'''

CHECK = r'''
import glob, os, re, sys
sys.path.insert(0, sys.argv[1])
import torchc
files = sorted(glob.glob(os.path.join(sys.argv[2], sys.argv[3] + ".*.graph")), key=lambda f: int(f.split(".")[-2]))
norm = lambda p: re.sub(r"\btc\d+_", "tcN_", p)
for f in files:
    text = open(f).read()
    torchc.config.debug = ""
    a = torchc._C.graph_to_ptx(text, 90)
    torchc.config.debug = "dedupe"
    sys.stderr.write("GRAPH " + os.path.basename(f) + "\n")
    sys.stderr.flush()
    b = torchc._C.graph_to_ptx(text, 90)
    sys.stderr.write("SAME %d %d %d\n" % (norm(a) == norm(b), len(a), len(b)))
    sys.stderr.flush()
'''

TIME = re.compile(r"torchc time: compile ([\d.]+) ms \(cpu ([\d.]+) \+ ([\d.]+) other threads; (\d+) nodes, "
                  r"(\d+) kernels, (\d+) repeats, (\d+) lazy, (\d+) parts, (\d+) insts\):(.*)")
IRGEN = re.compile(r"torchc gpu irgen: cpu ([\d.]+) ms, (\d+) variants built")
SEP = "\n// ---- torchc: next PTX module ----\n"
STAGES = ["init", "graph", "lower", "sched", "final", "irgen", "opt", "emit", "jit"]


def models_src():
    import first_step
    return first_step.MODELS + GPT


def capture(name, args, gdir):
    """the graph texts of one training step of model name (DIR/NAME.N.graph), cached"""
    if sorted(f for f in os.listdir(gdir) if f.startswith(name + ".") and f.endswith(".graph")):
        return
    env = dict(os.environ, TORCHC_DEBUG="graph", TORCHC_CPU_TIERS="1", TORCHC_CACHE="0")
    size = args.seq if name in ("gpt", "transformer") else args.size
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CAPTURE, models_src(), name, f"{args.batch},{size}", ROOT],
                       env=env, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode:
        sys.exit(f"capture of {name} failed:\n{p.stderr[-3000:]}")
    res = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")]
    texts, seen = [], set()
    for chunk in p.stderr.split("=== torchc graph ===\n")[1:]:
        lines = []
        for ln in chunk.splitlines():
            if ln.startswith(("=== ", "torchc ", "Traceback", "/", "  warnings")) or not ln.strip():
                break
            lines.append(ln)
        t = "\n".join(lines) + "\n"
        if t not in seen:
            seen.add(t)
            texts.append(t)
    for i, t in enumerate(texts):
        with open(os.path.join(gdir, f"{name}.{i}.graph"), "w") as f:
            f.write(t)
    print(f"# {name}: captured {len(texts)} graphs in {time.perf_counter() - t0:.1f} s "
          f"(graphs, backward graphs, ops: {res[0][7:] if res else '?'})", flush=True)


def ptxas_path():
    for c in (os.environ.get("CUDA_HOME", "") + "/bin/ptxas", "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def assemble(ptx_dir, graphs, ptxas):
    """every module of every graph through ptxas, one at a time: (cpu ms summed, longest ms)"""
    total, longest = 0.0, 0.0
    for name, nparts in graphs:
        with open(os.path.join(ptx_dir, name + ".ptx")) as f:
            mods = f.read().split(SEP)
        if len(mods) > nparts:  # the lazy fallbacks' module: compiled on first need only
            mods = mods[:nparts]
        for i, m in enumerate(mods):
            fn = os.path.join(ptx_dir, f"{name}.m{i}.ptx")
            with open(fn, "w") as f:
                f.write(m)
            r0 = os.times()
            r = subprocess.run([ptxas, "-arch=sm_90", fn, "-o", os.devnull], capture_output=True, text=True)
            r1 = os.times()
            if r.returncode:
                sys.exit(f"ptxas failed on {fn}:\n{r.stderr[-2000:]}")
            ms = (r1.children_user + r1.children_system - r0.children_user - r0.children_system) * 1e3
            total += ms
            longest = max(longest, ms)
    return total, longest


def compile_once(name, args, gdir, threads, env_extra, together=False):
    env = dict(os.environ, TORCHC_DEBUG="time", TORCHC_COMPILE_THREADS=str(threads), TORCHC_KERNELS_PER_PART="4",
               TORCHC_GPU_LAZY="probe", TORCHC_CACHE="0")
    env.update(env_extra)
    ptx_dir = tempfile.mkdtemp(prefix="gct_") if args.ptxas and not together else ""
    try:
        p = subprocess.run([sys.executable, "-c", COMPILE, ROOT, gdir, name, ptx_dir, "1" if together else "0"],
                           env=env, capture_output=True, text=True, timeout=args.timeout)
        if p.returncode:
            sys.exit(f"compile of {name} failed:\n{p.stderr[-3000:]}")
        r = {"graphs": 0, "kernels": 0, "variants": 0, "repeats": 0, "lazy": 0, "parts": 0, "wall": 0.0, "cpu": 0.0,
             "passes": 0.0, "irgen": 0.0, "opt": 0.0, "emit": 0.0, "all": 0.0, "proj16": 0.0, "built": 0,
             "irgen_cpu": 0.0}
        for m in IRGEN.finditer(p.stderr):
            r["irgen_cpu"] += float(m.group(1))
            r["built"] += int(m.group(2))
        graphs, cur = [], "?" if together else None
        for ln in p.stderr.splitlines():
            if ln.startswith("ALL "):
                r["all"] = float(ln[4:])
            elif ln.startswith("GRAPH "):
                cur = ln[6:-6]
            m = TIME.match(ln)
            if m and cur:
                st = dict(zip(STAGES, map(float, m.group(10).split()[1::2])))
                r["graphs"] += 1
                r["wall"] += float(m.group(1))
                r["cpu"] += float(m.group(2)) + float(m.group(3))
                r["kernels"] += int(m.group(5))
                r["repeats"] += int(m.group(6))
                r["lazy"] += int(m.group(7))
                parts = int(m.group(8))
                r["parts"] += parts
                serial = sum(st[s] for s in ("init", "graph", "lower", "sched", "final"))
                r["passes"] += serial
                r["irgen"] += st["irgen"]
                r["opt"] += st["opt"]
                r["emit"] += st["emit"]
                # the parallel phase's CPU: total CPU minus the calling thread's serial stages
                par = max(0.0, float(m.group(2)) + float(m.group(3)) - serial - st["irgen"])
                r["proj16"] += serial + st["irgen"] + par / min(16, max(parts, 1))
                graphs.append((cur, parts))
                cur = "?" if together else None
        if ptx_dir:
            for name_, parts in graphs:
                with open(os.path.join(ptx_dir, name_ + ".ptx")) as f:
                    r["variants"] += sum(m.count(".entry ") for m in f.read().split(SEP)[:parts])
            pc, pm = assemble(ptx_dir, graphs, args.ptxas_path)
            r["ptxas_cpu"], r["ptxas_max"] = pc, pm
            r["proj16"] += max(pc / 16, pm)
        return r
    finally:
        if ptx_dir:
            shutil.rmtree(ptx_dir, ignore_errors=True)


def check(name, args, gdir, threads):
    """TORCHC_DEBUG=dedupe on every graph of name (each variant built anyway; a key repeat whose code
    differs from the first's fails the compile), and its PTX against the default compile's"""
    env = dict(os.environ, TORCHC_COMPILE_THREADS=str(threads), TORCHC_KERNELS_PER_PART="4", TORCHC_CACHE="0")
    p = subprocess.run([sys.executable, "-c", CHECK, ROOT, gdir, name], env=env, capture_output=True, text=True,
                       timeout=args.timeout)
    if p.returncode:
        sys.exit(f"dedupe check of {name} failed:\n{p.stderr[-3000:]}")
    chk = [tuple(map(int, m)) for m in re.findall(r"dedupe check: (\d+) key repeats built and equal, (\d+) repeats "
                                                   r"found by bitcode only, (\d+) keys", p.stderr)]
    same = [ln.split()[1] == "1" for ln in p.stderr.splitlines() if ln.startswith("SAME ")]
    print(f"# {name}: dedupe check over {len(same)} graphs: {sum(c[0] for c in chk)} key repeats built and "
          f"equal to the first's code, {sum(c[1] for c in chk)} repeats found by bitcode only, "
          f"PTX equal to the checked build's (names normalized) in {sum(same)} of {len(same)} graphs", flush=True)
    # a repeat only the bitcode finds is built once more by the default compile: an extra function,
    # so the PTX differs there; equal code under equal keys is what must hold (else the compile fails)
    return len(same) > 0 and (all(same) or sum(c[1] for c in chk) > 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="gpt,resnet50,densenet121,mobilenet_v3")
    ap.add_argument("--threads", default="1,16", help="TORCHC_COMPILE_THREADS values, comma-separated")
    ap.add_argument("--env", default="", help="variants: comma-separated K=V;K=V sets ('' the default)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--size", type=int, default=64, help="CNN image size")
    ap.add_argument("--seq", type=int, default=128, help="GPT sequence length")
    ap.add_argument("--graphs", default=os.path.join(tempfile.gettempdir(), "torchc_gpu_codegen_graphs"))
    ap.add_argument("--ptxas", action="store_true", help="assemble every module with ptxas (validates the PTX)")
    ap.add_argument("--together", action="store_true",
                    help="also compile a model's graphs all at once, a thread each (as config backward_ahead "
                         "compiles forward and backward): column all, the wall time of all its graphs")
    ap.add_argument("--check", action="store_true",
                    help="first, per model: TORCHC_DEBUG=dedupe (every kernel variant built, structural-key repeats "
                         "checked against it) and the PTX compared with the default compile's")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    args.ptxas_path = ptxas_path() if args.ptxas else None
    if args.ptxas and not args.ptxas_path:
        sys.exit("--ptxas: no ptxas found (CUDA_HOME, /usr/local/cuda/bin, PATH)")
    os.makedirs(args.graphs, exist_ok=True)
    names = args.only.split(",")
    for n in names:
        capture(n, args, args.graphs)
    if args.check:
        bad = [n for n in names if not check(n, args, args.graphs, int(args.threads.split(",")[-1]))]
        if bad:
            sys.exit(f"dedupe check: PTX differs for {bad}")
    variants = [dict(kv.split("=", 1) for kv in v.split(";") if kv) for v in args.env.split(",")]
    rows = []
    cols = ["graphs", "kernels", "variants", "built", "repeats", "parts", "wall", "cpu", "passes", "irgen",
            "irgen_cpu", "opt", "emit"]
    if args.ptxas:
        cols += ["ptxas_cpu", "ptxas_max"]
    cols += ["proj16", "all"]
    print(f"{'model':14s} {'threads':>7s} {'env':20s} " + " ".join(f"{c:>9s}" for c in cols))
    for n in names:
        for th in args.threads.split(","):
            for v, together in [(v, t) for v in variants for t in ([False, True] if args.together else [False])]:
                rs = [compile_once(n, args, args.graphs, int(th), v, together) for _ in range(args.repeat)]
                med = {k: statistics.median(r[k] for r in rs) if isinstance(rs[0][k], float) else rs[0][k]
                       for k in rs[0]}
                vs = ";".join(f"{k}={x}" for k, x in v.items()) + (" together" if together else "")
                rows.append({"model": n, "threads": int(th), "env": vs, "together": together, **med})
                print(f"{n:14s} {th:>7s} {vs[:20]:20s} " + " ".join(
                    f"{med.get(c, 0):9.0f}" if isinstance(med.get(c, 0), float) else f"{med.get(c, 0):9d}"
                    for c in cols), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": {"cpus": os.cpu_count(), "batch": args.batch, "size": args.size, "seq": args.seq,
                                "load": os.getloadavg()}, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
