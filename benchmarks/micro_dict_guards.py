# Guard cost of a big module-level dict read in a compiled function (one item read):
# python benchmarks/micro_dict_guards.py N {int|cls|fn}  (median of 15 batches, gc off)
import sys, time, statistics, torch, torchc
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
KIND = sys.argv[2] if len(sys.argv) > 2 else "int"
if KIND == "int":
    REG = {f"k{i}": i for i in range(N)}
elif KIND == "cls":
    REG = {f"k{i}": type(f"C{i}", (), {"scale": i}) for i in range(N)}
elif KIND == "fn":
    def mk(i):
        def f(x): return x * i
        return f
    REG = {f"k{i}": mk(i) for i in range(N)}
def f(x):
    return x * REG["k5"] if KIND == "int" else (x * REG["k5"].scale if KIND == "cls" else REG["k5"](x))
def f0(x):
    return x * 5
x = torch.randn(4)
import gc; gc.disable()
def timeit(g, reps=20000):
    for _ in range(200): g(x)
    ts = []
    for _ in range(15):
        t0 = time.perf_counter_ns()
        for _ in range(reps // 15): g(x)
        ts.append((time.perf_counter_ns() - t0) / (reps // 15))
    return statistics.median(ts)
cf, cf0 = torchc.compile(f), torchc.compile(f0)
ex = torchc.explain(f)(x)
print("graphs", ex.graph_count, "guards", len(ex.guards) if hasattr(ex, "guards") else "?")
a, b = timeit(cf), timeit(cf0)
print(f"N={N} {KIND}: dict read {a:.0f} ns/call, no dict {b:.0f} ns/call, diff {a-b:.0f} ns ({(a-b)/max(N,1):.1f} ns/key)")
