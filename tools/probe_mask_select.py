"""Probe: masks of one width selecting values of another, then cast (the family of LLVM 16's
X86 abort "Cannot emit physreg copy instruction", fixed in inductor_c/codegen/part.c).

For each compare dtype C, select dtype S and result dtype D it compiles, whole, on the CPU:
    f1(p, q, x, y) = torch.where(p < q, x, y).to(D)          (p, q: C; x, y: S)
    f2(p, q, x, y) = torch.where(p < q, x.to(D), y.to(D))    (instcombine folds it to f1's form)
and checks compiled == eager. Every compare dtype runs in a child process of its own (an abort
costs the rest of that child's cases: the parent restarts it after the case that aborted).

With --llc CPUS (comma list, e.g. skylake-avx512,icelake-server,haswell) the children also dump
their modules (TORCHC_DEBUG=llvm: after the pass pipeline and torchc's fixups); their target-cpu
and target-features attributes are stripped and each module is compiled by llc-16 -O3 -mcpu=CPU,
which checks the code torchc made here against the back end of machines unlike this host.

    python tools/probe_mask_select.py                    # this host
    python tools/probe_mask_select.py --llc skylake-avx512,icelake-server,haswell,x86-64
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = ["int64", "int32", "int16", "int8", "uint8", "bool", "float16", "bfloat16", "float32", "float64"]
CMP = ["int64", "int32", "int16", "int8", "float16", "bfloat16", "float32", "float64"]
N = 1000  # vectorized body and a tail

CHILD = r"""
import json, sys, torch, torchc
torch.manual_seed(0)
N = int(sys.argv[2])
cases = json.loads(sys.argv[1])
def mk(dt, n):
    dt = getattr(torch, dt)
    if dt == torch.bool: return torch.rand(n) < 0.5
    if dt.is_floating_point: return torch.randn(n).to(dt)
    if dt == torch.uint8: return torch.randint(0, 255, (n,), dtype=dt)
    return torch.randint(-100, 100, (n,), dtype=dt)
for c, s, d, form in cases:
    print("START " + json.dumps([c, s, d, form]), flush=True)
    D = getattr(torch, d)
    if form == 1:
        def f(p, q, x, y): return torch.where(p < q, x, y).to(D)
    else:
        def f(p, q, x, y): return torch.where(p < q, x.to(D), y.to(D))
    args = (mk(c, N), mk(c, N), mk(s, N), mk(s, N))
    torchc.reset()
    ex = torchc.explain(f)(*args)
    whole = ex.graph_count == 1 and ex.graph_break_count == 0 and not ex.eager_frames
    got = torchc.compile(f)(*args)
    want = f(*args)
    ok = got.dtype == want.dtype and torch.equal(got, want)
    print("RESULT " + json.dumps([c, s, d, form, whole, ok]), flush=True)
"""


def run_child(cases, llvm_dump):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if llvm_dump:
        env["TORCHC_DEBUG"] = "llvm"
    err = open(llvm_dump, "w") if llvm_dump else subprocess.DEVNULL
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cases), str(N)], stdout=subprocess.PIPE,
                       stderr=err, text=True, env=env, cwd=ROOT)
    if llvm_dump:
        err.close()
    done, started = [], None
    for ln in p.stdout.splitlines():
        if ln.startswith("START "):
            started = json.loads(ln[6:])
        elif ln.startswith("RESULT "):
            done.append(json.loads(ln[7:]))
            started = None
    return p.returncode, done, started


def modules(path):
    """the modules TORCHC_DEBUG=llvm printed, target attributes stripped"""
    text = open(path).read()
    for part in re.split(r"^=== torchc llvm \([^\n]*\) ===\n", text, flags=re.M)[1:]:
        part = part.split("\n=== ", 1)[0]
        part = re.sub(r'"target-cpu"="[^"]*"|"target-features"="[^"]*"|"tune-cpu"="[^"]*"', "", part)
        yield part


def llc(src_path, cpu):
    r = subprocess.run(["llc-16", "-O3", "-mcpu=" + cpu, "-o", "/dev/null", src_path], text=True,
                       capture_output=True)
    return r.returncode, (r.stderr.strip().splitlines() or ["?"])[0][:100]


def llc_check(path, cpus, tag):
    """the child's modules linked into one (llvm-link-16; kernel names are unique within a process)
    and compiled for each cpu; a failure is narrowed to its modules by compiling them one by one"""
    mods = list(modules(path))
    files = []
    for i, m in enumerate(mods):
        files.append(f"{path}.{i}.ll")
        with open(files[-1], "w") as f:
            f.write(m)
    linked = path + ".linked.bc"
    subprocess.run(["llvm-link-16", "-o", linked] + files, check=True)
    bad = []
    for cpu in cpus:
        rc, msg = llc(linked, cpu)
        if rc:
            bad += [(tag, i, cpu, m) for i, f in enumerate(files) for r, m in [llc(f, cpu)] if r]
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llc", default="", help="comma list of LLVM cpus to compile the dumped modules for")
    ap.add_argument("--cmp", default=",".join(CMP))
    a = ap.parse_args()
    cpus = [c for c in a.llc.split(",") if c]
    aborts, wrong, notwhole, llc_bad, total = [], [], [], [], 0
    tmp = tempfile.mkdtemp(prefix="probe_mask_select_")
    for c in a.cmp.split(","):
        todo = [[c, s, d, form] for s in DTYPES for d in DTYPES for form in (1, 2) if not (form == 2 and s == d)]
        k = 0
        while todo:
            dump = os.path.join(tmp, f"{c}_{k}.ll") if cpus else None
            rc, done, started = run_child(todo, dump)
            total += len(done)
            for r in done:
                if not r[5]:
                    wrong.append(r[:4])
                elif not r[4]:
                    notwhole.append(r[:4])
            if dump:
                llc_bad += llc_check(dump, cpus, f"{c}_{k}")
            ndone = len(done)
            if rc == 0 and started is None:
                break
            if started is None:
                print(f"child for {c} exited {rc} between cases", file=sys.stderr)
                break
            aborts.append((started, rc))
            total += 1
            todo = todo[ndone + 1:]
            k += 1
        print(f"{c}: done; so far {len(aborts)} aborted, {len(wrong)} wrong, {len(llc_bad)} llc failures", flush=True)
    print(f"{total} cases; aborted: {len(aborts)}; wrong: {len(wrong)}; not whole: {len(notwhole)}"
          + (f"; llc failures ({','.join(cpus)}): {len(llc_bad)}" if cpus else ""))
    for x in aborts:
        print("ABORT", x)
    for x in wrong:
        print("WRONG", x)
    for x in notwhole[:20]:
        print("NOT WHOLE", x)
    for x in llc_bad:
        print("LLC", x)
    return 1 if aborts or wrong or llc_bad else 0


if __name__ == "__main__":
    sys.exit(main())
