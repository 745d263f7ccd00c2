import sys, time, torch, torchc
torchc.config.recompile_limit = 1000000
sys.setrecursionlimit(100000)
def r(a, n):
    if n == 0:
        return a
    print(end="")
    return r(a + 1, n - 1)
cf = torchc.compile(r)
print(torchc._C.stats())
t = time.time(); v = cf(torch.zeros(1), 50); print("n=50 cold", time.time() - t, v, torchc._C.stats())
def g(x, k):
    k = k + 1
    print(end="")
    return x * k, k
cg = torchc.compile(g)
s0 = dict(torchc._C.stats())
for k in range(1, 31):
    out = cg(torch.ones(2), k)
    assert out[1] == k + 1 and out[0][0].item() == k + 1, (k, out)
print("loop", {kk: torchc._C.stats()[kk] - s0.get(kk, 0) for kk in torchc._C.stats() if isinstance(s0.get(kk), int)})
e = torchc.explain(cg)(torch.ones(2), 77)
print(e)
for n in (200, 400, 800):
    t = time.time(); v = cf(torch.zeros(1), n); t1 = time.time() - t
    t = time.time(); v = cf(torch.zeros(1), n); print(n, "first", round(t1, 2), "warm", round(time.time() - t, 2), v.item())
print(torchc._C.stats())
