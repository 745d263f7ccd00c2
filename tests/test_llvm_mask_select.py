"""A mask of one width selecting values of another, then widened: LLVM 16's X86 back end aborts
the whole process ("LLVM ERROR: Cannot emit physreg copy instruction") on
    sext/zext(select(icmp <16 x i64>, load <16 x i32>, load <16 x i32>))
without AVX-512 (znver3, haswell); torchc puts a freeze between the select and the extension
(inductor_c/codegen/part.c freeze_extended_selects). Found in ProphetNet's training forward: a
cat of two int32 slices of one tensor cast to int64. The cases run in a child process, so that
an abort fails the test instead of killing pytest; each must compile whole and equal eager.
On a host with AVX-512 the back end does not abort: there the test checks what makes the
code safe on other machines, that no module torchc made (TORCHC_DEBUG=llvm) extends a vector
select without the freeze. tools/probe_mask_select.py sweeps the dtype grid around it."""
import json
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, torch, torchc
torch.manual_seed(0)
L = torch.int64
def where_cast(p, q, x, y): return torch.where(p < q, x, y).to(L)
def cast_where(p, q, x, y): return torch.where(p < q, x.to(L), y.to(L))  # instcombine: the same
def cat_slices(x): return torch.cat([x[:, :300], x[:, 400:700]], dim=1).to(L)
def cat_slices_small(x): return torch.cat([x[:, :5], x[:, 9:20]], dim=1).to(L)
def ri(n, dt): return torch.randint(-100, 100, (n,), dtype=dt)
cases = []
for n in (1, 17, 1000):
    for f in (where_cast, cast_where):
        cases.append((f, (ri(n, torch.int64), ri(n, torch.int64), ri(n, torch.int32), ri(n, torch.int32))))
    cases.append((where_cast, (torch.randn(n, dtype=torch.float64), torch.randn(n, dtype=torch.float64),
                               ri(n, torch.int32), ri(n, torch.int32))))
cases.append((cat_slices, (torch.randint(-100, 100, (4, 1024), dtype=torch.int32),)))
cases.append((cat_slices_small, (torch.randint(-100, 100, (3, 20), dtype=torch.int32),)))
for f, args in cases:
    torchc.reset()
    ex = torchc.explain(f)(*args)
    whole = ex.graph_count == 1 and ex.graph_break_count == 0 and not ex.eager_frames
    got, want = torchc.compile(f)(*args), f(*args)
    ok = got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want)
    print("RESULT " + json.dumps([f.__name__, list(args[0].shape), str(args[0].dtype), whole, ok]), flush=True)
"""


def unfrozen_extended_selects(ir):
    """(function, line) of each sext/zext that reads a vector select directly"""
    bad, selects, fn = [], set(), "?"
    for ln in ir.splitlines():
        m = re.match(r"define .*@([\w.]+)\(", ln)
        if m:
            fn, selects = m.group(1), set()
            continue
        m = re.match(r"\s*(%[\w.]+) = select <\d+ x i1> ", ln)
        if m:
            selects.add(m.group(1))
            continue
        m = re.match(r"\s*%[\w.]+ = [sz]ext <\d+ x \w+> (%[\w.]+) to ", ln)
        if m and m.group(1) in selects:
            bad.append((fn, ln.strip()))
    return bad


def test_mask_select_widened_child_process():
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TORCHC_DEBUG="llvm")
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert p.returncode == 0, f"child exited {p.returncode}: {p.stderr[-800:]}"
    rows = [json.loads(ln[7:]) for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert len(rows) == 11, p.stdout[-800:]
    for name, shape, dt, whole, ok in rows:
        assert whole, f"{name}{shape} {dt}: not compiled whole"
        assert ok, f"{name}{shape} {dt}: compiled != eager"
    assert "=== torchc llvm" in p.stderr
    if platform.machine() in ("x86_64", "AMD64", "i686"):
        bad = unfrozen_extended_selects(p.stderr)
        assert not bad, f"extension of a vector select without a freeze: {bad[:3]}"
        assert re.search(r"= freeze <16 x i32> %[\w.]+\n\s*%[\w.]+ = sext <16 x i32>", p.stderr), \
            "the cases no longer make the pattern (a select of int32 vectors sign-extended)"
