# Issue 21: recursion of a nested function recreated per call (room() below) under the frame
# hook. Per-call time and compiles (torchc._C.stats) of 5 calls of room(n) for each n, then the
# compiles and recompile reasons torchc.explain() reports for one more call.
# PYTHONPATH=. python tools/room_repro.py [n ...]
import sys, time, torch, torchc
torchc.config.recompile_limit = 100000
sys.setrecursionlimit(10000)
NS = [int(a) for a in sys.argv[1:]] or [100, 400]
def room(n):
    c = [0]
    def d2(k):
        c[0] = k
        if k >= n:
            return k
        return d2(k + 1)
    return d2(0), c[0]
def r(a, n):
    v, last = room(n)
    return a + v + last
cf = torchc.compile(r)
for n in NS:
    for i in range(5):
        s0 = torchc._C.stats()["compiles"]
        t = time.perf_counter()
        out = cf(torch.zeros(1), n)
        dt = time.perf_counter() - t
        assert out.item() == 2 * n, (out, n)
        print(f"room({n}) call {i}: {dt:.3f} s, compiles {torchc._C.stats()['compiles'] - s0}", flush=True)
    t = time.perf_counter()
    e = torchc.explain(cf)(torch.zeros(1), n)
    dt = time.perf_counter() - t
    recs = [r for r in e.records if r.get("event") not in ("hit",)]
    print(f"room({n}) explain call: {dt:.3f} s, graphs {e.graph_count}, non-hit records {len(recs)}", flush=True)
print(torchc._C.stats())
