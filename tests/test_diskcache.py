"""On-disk code cache (inductor_c/runtime/diskcache.c + codegen object files): each case runs
fresh Python processes with their own TORCHC_CACHE_DIR, so a warm start is a real new process.

cold run writes entries; warm run loads them (no LLVM) and gives bit-identical results; a
truncated or garbage entry is ignored, rebuilt and rewritten; an unwritable directory or
TORCHC_CACHE=0 / TORCHC_DISK_CACHE=0 just turn the disk cache off.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

import torchc

# the torchc this test imported (the source tree, or the ASan build of make test-asan)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(torchc.__file__)))

CHILD = r"""
import json, sys, torch, torchc
torch.manual_seed(0)
def f(x, y):
    a = torch.tanh(x * 1.5 + y)
    b = a - a.mean(-1, keepdim=True)
    c = torch.sigmoid(b) * b.transpose(0, 1).sum(0)
    return c / (c.abs().amax(-1, keepdim=True) + 1), (a * a).sum()
def g(x):
    return torch.softmax(x * 2, -1)
x, y = torch.randn(33, 33), torch.randn(33)
cf, cg = torchc.compile(f), torchc.compile(g)
outs = list(cf(x, y)) + [cg(x), cg(torch.randn(5, 7)), cg(torch.randn(2, 3, 4))]
ref = list(f(x, y)) + [g(x)]
for o, r in zip(outs, ref):
    torch.testing.assert_close(o, r, rtol=1e-5, atol=1e-5)
st = torchc._C.cache_stats()
st["compiles"] = torchc._C.stats()["compiles"]
st["out"] = [o.flatten().tolist() for o in outs]
print("RESULT" + json.dumps(st))
"""


def run_child(env_extra):
    env = dict(os.environ)
    env.pop("TORCHC_DEBUG", None)
    env.pop("TORCHC_CACHE", None)
    env.pop("TORCHC_DISK_CACHE", None)
    env.update(env_extra)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def entries(d):
    sub = os.path.join(d, "cpu")
    if not os.path.isdir(sub):
        return []
    return sorted(os.path.join(sub, n) for n in os.listdir(sub) if not n.startswith("."))


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    d = tmp_path_factory.mktemp("cold")
    r = run_child({"TORCHC_CACHE_DIR": str(d)})
    return d, r


def copy_of(cold, tmp_path):
    shutil.copytree(cold[0], tmp_path / "c")
    return tmp_path / "c"


def test_cold_then_warm(cold, tmp_path):
    d0, r = cold
    assert r["compiles"] >= 4
    assert r["disk_writes"] == 4 and r["disk_loaded"] == 0 and r["disk_hits"] == 0
    assert len(entries(d0)) == 4
    warm = run_child({"TORCHC_CACHE_DIR": str(copy_of(cold, tmp_path))})
    assert warm["disk_loaded"] == 4, warm
    assert warm["disk_writes"] == 0 and warm["disk_rejected"] == 0
    assert warm["out"] == r["out"]  # bit-identical


def damage(fn, how):
    data = open(fn, "rb").read()
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "garbage":
        data = bytes(range(256)) * 8
    elif how == "empty":
        data = b""
    else:  # one flipped bit in the object code
        i = len(data) * 2 // 3
        data = data[:i] + bytes([data[i] ^ 0x40]) + data[i + 1:]
    open(fn, "wb").write(data)


def test_bad_entries_rebuilt(cold, tmp_path):
    d = copy_of(cold, tmp_path)
    files = entries(d)
    assert len(files) == 4
    for fn, how in zip(files, ["truncate", "garbage", "empty", "flip"]):
        damage(fn, how)
    again = run_child({"TORCHC_CACHE_DIR": str(d)})
    assert again["disk_rejected"] == 4, again
    assert again["disk_loaded"] == 0 and again["disk_writes"] == 4
    assert again["out"] == cold[1]["out"]
    warm = run_child({"TORCHC_CACHE_DIR": str(d)})
    assert warm["disk_loaded"] == 4 and warm["disk_rejected"] == 0
    assert warm["out"] == cold[1]["out"]


def test_unwritable_dir_disables(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    r = run_child({"TORCHC_CACHE_DIR": str(blocker / "cache")})
    assert r["disk_writes"] == 0 and r["disk_loaded"] == 0 and r["disk_errors"] >= 1


@pytest.mark.parametrize("var", ["TORCHC_CACHE", "TORCHC_DISK_CACHE"])
def test_disabled(cold, tmp_path, var):
    d = copy_of(cold, tmp_path)
    r = run_child({"TORCHC_CACHE_DIR": str(d), var: "0"})
    assert r["compiles"] >= 4  # the disk cache is off, not the compiler
    assert r["disk_writes"] == 0 and r["disk_misses"] == 0 and r["disk_loaded"] == 0
    assert r["out"] == cold[1]["out"]


def test_size_cap(tmp_path):
    # a cap below one entry: nothing is stored, everything still runs
    r = run_child({"TORCHC_CACHE_DIR": str(tmp_path), "TORCHC_CACHE_MAX_MB": "0.0001"})
    assert r["compiles"] >= 4
    assert r["disk_writes"] == 0 and entries(tmp_path) == []


# ---- a hostile cache directory (issue 26): FIFOs, symbolic links, forged headers ----------------

def test_fifo_at_entry_path(cold, tmp_path):
    # opened without blocking, seen not to be a regular file: a miss, rebuilt
    d = copy_of(cold, tmp_path)
    for fn in entries(d)[:2]:
        os.unlink(fn)
        os.mkfifo(fn)
    r = run_child({"TORCHC_CACHE_DIR": str(d)})  # run_child's timeout: a blocked open fails it
    assert r["disk_loaded"] == 2 and r["disk_rejected"] == 2 and r["disk_writes"] == 2, r
    assert r["out"] == cold[1]["out"]


def test_symlinks_never_followed(cold, tmp_path):
    d = copy_of(cold, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    files = entries(d)
    # a valid entry reached through a link: not read (a miss), replaced by a real file
    for fn in files[:2]:
        target = elsewhere / os.path.basename(fn)
        shutil.move(fn, target)
        os.symlink(target, fn)
    # a dangling link at the eviction mark, older than the scan interval: never created
    victim = tmp_path / "victim"
    mark = os.path.join(d, "cpu", ".evicted")
    if os.path.lexists(mark):
        os.unlink(mark)
    os.symlink(victim, mark)
    os.utime(mark, (0, 0), follow_symlinks=False)
    r = run_child({"TORCHC_CACHE_DIR": str(d)})
    assert r["disk_loaded"] == 2 and r["disk_writes"] == 2, r
    assert not os.path.lexists(victim), "a symbolic link was followed with O_CREAT"
    assert r["out"] == cold[1]["out"]
    for fn in files[:2]:
        assert not os.path.islink(fn)
    for fn in os.listdir(elsewhere):  # the link targets were left alone
        assert os.path.getsize(elsewhere / fn) > 40


def test_forged_header_rejected(cold, tmp_path):
    # entry A's payload and hash under entry B's name with B's key written into the header
    import struct
    d = copy_of(cold, tmp_path)
    a, b = entries(d)[:2]
    da, db = open(a, "rb").read(), open(b, "rb").read()

    def forge(data, path):
        name = os.path.basename(path)
        hi, lo = int(name[:16], 16), int(name[16:], 16)
        return data[:8] + struct.pack("<QQ", lo, hi) + data[24:]

    open(b, "wb").write(forge(da, b))
    open(a, "wb").write(forge(db, a))
    r = run_child({"TORCHC_CACHE_DIR": str(d)})
    assert r["disk_rejected"] == 2 and r["disk_loaded"] == 2, r
    assert r["out"] == cold[1]["out"]


@pytest.mark.parametrize("mb", ["2e13", "inf", "1e300"])
def test_huge_size_cap(tmp_path, mb):
    # no overflow to a zero cap: entries are written
    r = run_child({"TORCHC_CACHE_DIR": str(tmp_path), "TORCHC_CACHE_MAX_MB": mb})
    assert r["disk_writes"] == 4 and len(entries(tmp_path)) == 4, r


def test_garbage_and_concurrent_writers(tmp_path):
    # garbage files, a directory and a FIFO under the cache, two processes writing at once
    d = tmp_path / "c"
    (d / "cpu").mkdir(parents=True)
    (d / "cpu" / ("0" * 32)).write_bytes(b"\0" * 100)
    (d / "cpu" / ("1" * 32)).mkdir()
    os.mkfifo(d / "cpu" / ("2" * 32))
    (d / "cpu" / ".tmp.garbage").write_bytes(b"x")
    env = dict(os.environ, TORCHC_CACHE_DIR=str(d), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TORCHC_DEBUG", None)
    ps = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True) for _ in range(2)]
    outs = []
    for p in ps:
        o, e = p.communicate(timeout=300)
        assert p.returncode == 0, e[-3000:]
        outs.append(json.loads([ln for ln in o.splitlines() if ln.startswith("RESULT")][-1][6:]))
    assert outs[0]["out"] == outs[1]["out"]
    warm = run_child({"TORCHC_CACHE_DIR": str(d)})
    assert warm["disk_loaded"] == 4 and warm["out"] == outs[0]["out"], warm


def test_folder_and_switch_from_torchc_config(tmp_path):
    """cache_dir and disk_cache are rows of torchc.config (ic_config.h): set from Python they win
    over TORCHC_CACHE_DIR, and disk_cache=False writes nothing."""
    env_dir, py_dir = tmp_path / "env", tmp_path / "py"
    pre = f"torchc.config.cache_dir = {str(py_dir)!r}\n"
    child = CHILD.replace("torch.manual_seed(0)\n", "torch.manual_seed(0)\n" + pre, 1)
    env = dict(os.environ, TORCHC_CACHE_DIR=str(env_dir), PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("TORCHC_DEBUG", "TORCHC_CACHE", "TORCHC_DISK_CACHE"):
        env.pop(k, None)
    p = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][len("RESULT"):])
    assert r["disk_writes"] == 4 and len(entries(py_dir)) == 4 and entries(env_dir) == []
    off = child.replace(pre, pre + "torchc.config.disk_cache = False\n")
    p = subprocess.run([sys.executable, "-c", off], env=dict(env, TORCHC_CACHE_DIR=str(tmp_path / "off")),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][-1][len("RESULT"):])
    assert r["disk_writes"] == 0 and r["compiles"] >= 4
