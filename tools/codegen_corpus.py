#!/usr/bin/env python3
"""Dump the code torchc generates for a fixed corpus, so that a refactor can be shown to
change no generated code (issue 24, deliverable 6).

    python tools/codegen_corpus.py OUT            # dump into OUT (created), print the hash
    python tools/codegen_corpus.py OUT --ref REF  # ... and `diff -r REF OUT` (exit 1 on a difference)

What goes into OUT:
  c/     the graph corpus of tests/c/test_ptx.c (`build/c/test_ptx -d`, built here with make):
         per graph its text, the PTX for sm_90 and sm_80 (ic_graph_to_ptx: no GPU needed), the
         CPU module after optimization (TORCHC_DEBUG=llvm) and the kernel summary.
  py/    every program of tests/corpus_programs.py compiled on the CPU with TORCHC_DEBUG=llvm:
         the LLVM modules its graphs produced, in order (the frontend is part of this corpus);
         with --ptx also NAME.sm90.ptx: the PTX for sm_90 of each of its graphs, in order (the
         CPU-traced graph through ic_graph_to_ptx, TORCHC_PTX_PROBE; no GPU needed).
  SHA256SUMS  one line a file; its own sha256 is the corpus hash printed at the end.

Module and kernel symbol prefixes carry a process-wide counter (`ic12_k0`, module `ic12.0`;
PTX-only compiles `tc12_k0`)
and, for keyed compilations, the code-cache key (`ick<32 hex>`): both are rewritten to `icN`
/ `ickKEY`, so adding a setting to the cache key or compiling one graph more before another
does not show as a difference. Nothing else is normalized. The CPU code depends on the host
CPU (its features pick the vector width): compare dumps made on one machine.
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PREFIX = re.compile(rb"\bick[0-9a-f]{32}|\bic[0-9]+(?=[._])|\btc[0-9]+(?=_)")


def normalize(data):
    def rep(m):
        s = m.group(0)
        return b"ickKEY" if s.startswith(b"ick") else b"tcN" if s.startswith(b"tc") else b"icN"
    # LLVM pads the "; preds" comment of a block label to a column: with the label's counter
    # renamed, the padding would differ between two numberings
    return re.sub(rb" +; preds = ", b" ; preds = ", _PREFIX.sub(rep, data))


def dump_c(out):
    subprocess.run(["make", "-s", "build/c/test_ptx"], cwd=ROOT, check=True)
    d = os.path.join(out, "c")
    os.makedirs(d, exist_ok=True)
    r = subprocess.run([os.path.join(ROOT, "build/c/test_ptx"), "-d", d], cwd=ROOT)
    if r.returncode:
        sys.exit(f"test_ptx -d failed ({r.returncode})")


_PROBE_LINE = re.compile(rb"^torchc ptx probe: (ok|FAILED: .*)\n", re.M)
# the probe's GPU compile under TORCHC_DEBUG=llvm prints its NVPTX module too: up to the next dump
_NVPTX_DUMP = re.compile(rb"^=== torchc llvm \(nvptx[^\n]*\n(?:(?!=== |raised |torchc )[^\n]*\n)*", re.M)


def _collect_probe(d, name, probe):
    """the probe's PTX files of one program (probe_N.ptx, in N order) into NAME.sm90.ptx, and
    its failure lines (moved out of NAME.cpu.ll) after them"""
    files = sorted(os.listdir(probe), key=lambda f: int(f[6:-4]))
    with open(os.path.join(d, name + ".cpu.ll"), "rb") as f:
        ll = f.read()
    fails = [m.group(0) for m in _PROBE_LINE.finditer(ll) if m.group(1) != b"ok"]
    with open(os.path.join(d, name + ".cpu.ll"), "wb") as f:
        f.write(_NVPTX_DUMP.sub(b"", _PROBE_LINE.sub(b"", ll)))
    with open(os.path.join(d, name + ".sm90.ptx"), "wb") as out:
        for fn in files:
            with open(os.path.join(probe, fn), "rb") as f:
                out.write(f"// ---- graph {files.index(fn)}\n".encode() + f.read())
            os.unlink(os.path.join(probe, fn))
        out.write(b"".join(fails))


def py_worker(d, ptx=False):
    """runs in a subprocess: each program of the corpus with stderr sent to its file"""
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import torch
    import torchc
    import corpus_programs

    torchc.config.recompile_limit = 1000
    probe = tempfile.mkdtemp(prefix="torchc-corpus-probe-") if ptx else None
    if probe:
        os.environ["TORCHC_PTX_PROBE"] = probe  # read by the frontend at each compile
    for p in corpus_programs.PROGRAMS:
        torchc.reset()
        fn, args = p.materialize()
        grad = p.grad_mode()
        path = os.path.join(d, p.name + ".cpu.ll")
        sys.stderr.flush()
        saved = os.dup(2)
        with open(path, "wb") as f:
            os.dup2(f.fileno(), 2)
            try:
                cf = torchc.compile(fn)
                with torch.set_grad_enabled(grad):
                    cf(*args)
            except BaseException as e:  # noqa: BLE001 - the outcome is what is recorded
                os.write(2, f"raised {type(e).__name__}\n".encode())
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
        if probe:
            _collect_probe(d, p.name, probe)
    if probe:
        os.rmdir(probe)


def dump_py(out, ptx=False):
    d = os.path.join(out, "py")
    os.makedirs(d, exist_ok=True)
    # a fresh disk cache always (a TORCHC_CACHE_DIR of the caller's would give cache hits,
    # which print no IR)
    with tempfile.TemporaryDirectory(prefix="torchc-corpus-cache-") as cache:
        env = dict(os.environ, TORCHC_DEBUG="llvm", PYTHONPATH=ROOT, TORCHC_CACHE_DIR=cache)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--py-worker", d]
                           + (["--ptx"] if ptx else []), cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL)
    if r.returncode:
        sys.exit(f"python corpus worker failed ({r.returncode})")


def finish(out):
    lines = []
    for base, _, files in sorted(os.walk(out)):
        for fn in sorted(files):
            path = os.path.join(base, fn)
            rel = os.path.relpath(path, out)
            if rel == "SHA256SUMS":
                continue
            with open(path, "rb") as f:
                data = normalize(f.read())
            with open(path, "wb") as f:
                f.write(data)
            lines.append(f"{hashlib.sha256(data).hexdigest()}  {rel}\n")
    lines.sort(key=lambda s: s.split("  ", 1)[1])
    text = "".join(lines).encode()
    with open(os.path.join(out, "SHA256SUMS"), "wb") as f:
        f.write(text)
    return len(lines), hashlib.sha256(text).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--ref", help="a previous dump: diff -r against it")
    ap.add_argument("--only", choices=["c", "py"], help="one half of the corpus")
    ap.add_argument("--ptx", action="store_true", help="py/: also the sm_90 PTX of every program's graphs")
    ap.add_argument("--py-worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.py_worker:
        py_worker(a.out, a.ptx)
        return 0
    os.makedirs(a.out, exist_ok=True)
    if a.only in (None, "c"):
        dump_c(a.out)
    if a.only in (None, "py"):
        dump_py(a.out, a.ptx)
    n, h = finish(a.out)
    print(f"codegen corpus: {n} files in {a.out}, sha256 {h}")
    if a.ref:
        r = subprocess.run(["diff", "-r", "-q", a.ref, a.out])
        print("identical to " + a.ref if r.returncode == 0 else "DIFFERS from " + a.ref)
        return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
