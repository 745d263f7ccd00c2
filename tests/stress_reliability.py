"""`make stress` (not part of `make test`): longer, randomized reliability runs (issue 26).

Each case runs in child processes that must exit cleanly with results equal to eager's:
thread/reset races (reset from another thread, reset inside compiled functions, several
functions with graph breaks and changing shapes), recursion (deep, mutual, infinite), a hostile
cache directory (a vandal process planting FIFOs, symbolic links and garbage at entry paths while
concurrent writers compile), and huge graphs (thousands of buffers, arguments and outputs).

    TORCHC_STRESS_SEED=n   the seed (make stress prints a fresh one each run)
    TORCHC_STRESS_SECONDS  seconds per race case (default 8)
"""
import os
import random
import subprocess
import sys
import textwrap

import pytest

import torchc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(torchc.__file__)))
SEED = int(os.environ.get("TORCHC_STRESS_SEED", "0"))
SECONDS = float(os.environ.get("TORCHC_STRESS_SECONDS", "8"))


def child(code, cache, timeout=600, wait=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["TORCHC_CACHE_DIR"] = str(cache)
    env["TORCHC_STRESS_SEED"] = str(SEED)
    env.pop("TORCHC_DEBUG", None)
    src = "import os, random, sys, torch, torchc\nSEED = int(os.environ['TORCHC_STRESS_SEED'])\n" + \
        textwrap.dedent(code)
    p = subprocess.Popen([sys.executable, "-c", src], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if not wait:
        return p
    return finish(p, timeout)


def finish(p, timeout=600):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"seed {SEED}: rc={p.returncode}\n{out[-2000:]}\n{err[-5000:]}"
    assert out.strip().splitlines()[-1] == "OK", f"seed {SEED}\n{out[-2000:]}\n{err[-3000:]}"
    return out


# ---- threads and reset ---------------------------------------------------------------------------

RACES = """
import threading, time
rng = random.Random(SEED)
torchc.config.recompile_limit = 64
def f1(a):
    return torch.relu(a * 2 + 1).sum(-1) * 3
def f2(a):
    b = a * 2
    print(end="")                    # graph break
    return (b + 1).softmax(-1)
def f3(a, k):
    if k > 2:                         # a branch on an int: one entry per value
        return a.cos() - k
    return a.sin() + k
def f4(a):
    b = a.exp()
    torchc.reset()                   # reset from inside, at a graph break
    return b.sum()
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(16, 8)
    def forward(self, x):
        return torch.tanh(self.l(x)) * 2
m = M()
fns = [(torchc.compile(f1), f1), (torchc.compile(f2), f2), (torchc.compile(f4), f4)]
cf3, cm = torchc.compile(f3), torchc.compile(m)
stop = time.time() + SECONDS
bad, calls = [], [0]
def worker(i):
    r = random.Random(SEED * 31 + i)
    while time.time() < stop:
        x = torch.randn(r.choice([1, 3, 16]), 16)
        cf, f = r.choice(fns)
        k = r.randrange(5)
        with torch.no_grad():
            pairs = [(cf(x), f(x)), (cf3(x, k), f3(x, k)), (cm(x), m(x))]
        for got, want in pairs:
            if not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
                bad.append((i, got, want))
        calls[0] += 1
def resetter():
    r = random.Random(SEED + 1)
    while time.time() < stop:
        torchc.reset()
        time.sleep(r.choice([0, 0.0005, 0.001, 0.005]))
ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)] + [threading.Thread(target=resetter)]
[t.start() for t in ts]
[t.join() for t in ts]
assert not bad and calls[0] > 20, (bad[:2], calls)
print("calls", calls[0])
print("OK")
""".replace("SECONDS", "float(os.environ.get('TORCHC_STRESS_SECONDS', '8'))")


@pytest.mark.parametrize("rep", range(3))
def test_thread_reset_races(tmp_path, rep):
    child(RACES, tmp_path / "c")


# ---- recursion -------------------------------------------------------------------------------------

def test_recursion(tmp_path):
    child("""
        torchc.config.recompile_limit = 100000
        def r(a, n):
            return a if n == 0 else r(a * 1.001 + 1, n - 1)
        def even(a, n):
            return a if n == 0 else odd(a + 1, n - 1)
        def odd(a, n):
            return a if n == 0 else even(a - 0.5, n - 1)
        rng = random.Random(SEED)
        for _ in range(3):
            n = rng.randrange(100, 950)
            x = torch.randn(3)
            torch.testing.assert_close(torchc.compile(r)(x, n), r(x, n))
            torch.testing.assert_close(torchc.compile(even)(x, n), even(x, n))
        def inf(a):
            return inf(a + 1)
        def inf2(a):
            b = a + 1
            print(end="")
            return inf2(b)
        for fn in (inf, inf2, inf):
            try:
                torchc.compile(fn)(torch.ones(2))
            except RecursionError:
                pass
            else:
                raise AssertionError("no RecursionError")
        print("OK")
    """, tmp_path / "c")


# ---- a hostile cache directory -----------------------------------------------------------------------

WRITER = """
rng = random.Random(SEED + int(sys.argv[1]) if len(sys.argv) > 1 else SEED)
torchc.config.recompile_limit = 1000
def make(k):
    def f(x, y):
        return (torch.tanh(x * (1.5 + k)) + y).softmax(-1) * (k + 1)
    return f
for round_ in range(6):
    for k in range(8):
        f = make(k)
        x, y = torch.randn(9, 13), torch.randn(13)
        torch.testing.assert_close(torchc.compile(f)(x, y), f(x, y))
    torchc.reset()
print("OK")
"""

VANDAL = """
import stat, time
d = os.path.join(os.environ["TORCHC_CACHE_DIR"], "cpu")
rng = random.Random(SEED + 99)
victim = os.environ["TORCHC_CACHE_DIR"] + "_victim"
stop = time.time() + float(sys.argv[1])
n = 0
while time.time() < stop:
    time.sleep(0.01)
    try:
        names = [x for x in os.listdir(d) if not x.startswith(".")]
    except OSError:
        continue
    fake = "%032x" % rng.getrandbits(128)
    target = os.path.join(d, rng.choice(names) if names and rng.random() < 0.7 else fake)
    try:
        how = rng.randrange(6)
        if 2 <= how <= 4 and os.path.lexists(target) and not stat.S_ISREG(os.lstat(target).st_mode):
            continue  # the vandal never opens its own FIFOs (it would block as a reader would have)
        if how == 0:
            os.unlink(target); os.mkfifo(target)
        elif how == 1:
            os.unlink(target); os.symlink(victim + str(n), target)
        elif how == 2:
            with open(target, "r+b") as fh:
                fh.truncate(rng.randrange(0, 64))
        elif how == 3:
            with open(target, "wb") as fh:
                fh.write(os.urandom(rng.randrange(0, 4096)))
        elif how == 4:
            with open(target, "r+b") as fh:
                fh.seek(rng.randrange(0, 200)); fh.write(bytes([rng.randrange(256)]))
        else:
            mark = os.path.join(d, ".evicted")
            if os.path.lexists(mark):
                os.unlink(mark)
            os.symlink(victim + "_mark", mark)
            os.utime(mark, (0, 0), follow_symlinks=False)
        n += 1
    except OSError:
        pass
leaked = [v for v in os.listdir(os.path.dirname(victim)) if os.path.basename(victim) in v]
assert not leaked, ("a symbolic link was followed", leaked)
print("vandalized", n)
print("OK")
"""


def test_hostile_cache_dir(tmp_path):
    cache = tmp_path / "c"
    child(WRITER, cache)                                    # populate
    vandal = child(VANDAL.replace("sys.argv[1]", repr(str(SECONDS * 3))), cache, wait=False)
    writers = [child(WRITER, cache, wait=False) for _ in range(3)]
    for w in writers:
        finish(w)
    finish(vandal)
    child(WRITER, cache)                                    # and after it


# ---- huge graphs -----------------------------------------------------------------------------------------

def test_huge_graphs(tmp_path):
    child("""
        rng = random.Random(SEED)
        n = rng.randrange(1500, 2500)
        src = "def s():\\n    t = G0\\n" + "".join(f"    t = t + G{i} * {i % 7}\\n" for i in range(1, n)) + "    return t\\n"
        g = {f"G{i}": torch.randn(4) for i in range(n)}
        exec(src, g)
        torch.testing.assert_close(torchc.compile(g["s"])(), g["s"](), rtol=1e-3, atol=1e-3)
        def many(*a):
            t = a[0]
            for v in a[1:]:
                t = t + v
            return t
        ts = [torch.randn(3) for _ in range(rng.randrange(600, 1200))]
        torch.testing.assert_close(torchc.compile(many)(*ts), many(*ts), rtol=1e-3, atol=1e-3)
        def outs(a):
            return [a + i for i in range(1200)]
        x = torch.randn(5)
        for p, q in zip(torchc.compile(outs)(x), outs(x)):
            torch.testing.assert_close(p, q)
        def chain(a):
            for i in range(3000):
                a = a * 1.0001 + 0.001
            return a
        torch.testing.assert_close(torchc.compile(chain)(x), chain(x), rtol=1e-4, atol=1e-4)
        def wide(a):
            return torch.cat([a * i for i in range(700)], 0).sum()
        torch.testing.assert_close(torchc.compile(wide)(x), wide(x), rtol=1e-4, atol=1e-3)
        print("OK")
    """, tmp_path / "c", timeout=900)
