"""Curves of the manifold experiments (results/*.json of copying.py and fmnist.py) and the
matrix_exp benchmark's times; PNGs written beside the JSON files.

    python benchmarks/manifolds/plot.py [benchmarks/manifolds/results]
"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def smooth(xs, w=20):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= w:
            acc -= xs[i - w]
        out.append(acc / min(i + 1, w))
    return out


def label(r):
    if r["model"] == "lstm":
        return f"LSTM h={r['hidden']} ({r['params']} params)"
    k = r.get("K", "inf")
    return f"expRNN h={r['hidden']} " + ("static" if k in ("inf", None) else f"DTRIV K={k}")


def curves(files, title, out, baseline=None, logy=False, seconds=False):
    """loss curves of the runs in files; seconds: against training time (each run's steps spread
    evenly over its train_seconds), for runs given the same time budget"""
    if not files:
        return
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for f in sorted(files):
        r = json.load(open(f))
        n = len(r["loss"])
        xs = [(i + 1) * r["train_seconds"] / n for i in range(n)] if seconds else range(1, n + 1)
        lab = label(r) + f", {n} steps" + (f", test acc {100 * r['test_accuracy']:.1f}%" if "test_accuracy" in r else "")
        ax.plot(xs, smooth(r["loss"]), label=lab, lw=1.2)
    if baseline is not None:
        ax.axhline(baseline, color="k", ls="--", lw=0.8, label="baseline 10 ln 8 / (L+20)")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("training seconds (1 thread, shared machine)" if seconds else "optimizer step")
    ax.set_ylabel("cross-entropy (moving average of 20)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("wrote", out)


def bench(path):
    d = json.load(open(path))
    ns = [r["n"] for r in d["rows"]]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for k, st in (("eager", "o-"), ("torch.compile", "s-"), ("torchc", "^-")):
        ax.plot(ns, [r["ms"][k] for r in d["rows"]], st, label=k)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("ms (median), forward + backward")
    ax.set_title(f"matrix_exp fwd+bwd, {d['dtype']} {d['device']}, {d['threads']} thread(s)", fontsize=10)
    ax.legend()
    fig.tight_layout()
    out = path[:-5] + ".png"
    fig.savefig(out, dpi=110)
    print("wrote", out)


def main(d):
    by_L = {}
    for f in glob.glob(os.path.join(d, "copying_*.json")):
        by_L.setdefault(json.load(open(f))["L"], []).append(f)
    for L, cp in sorted(by_L.items()):
        r = json.load(open(cp[0]))
        name = "copying.png" if L == 200 else f"copying_L{L}.png"
        curves(cp, f"copying task, L={L}, hidden {r['hidden']}, batch {r['batch']}", os.path.join(d, name),
               r["baseline"], logy=True)
    for task in ("pixel", "perm"):
        name = f"{'permuted ' if task == 'perm' else ''}pixel-by-pixel Fashion-MNIST"
        fs = glob.glob(os.path.join(d, f"fmnist_{task}_*.json"))
        old = [f for f in fs if "_s300" not in f and "_s1000" not in f and not f.endswith("_time.json")]  # an earlier session's
        # (log scale: expRNN's first losses are ~60, the inputs summed over 784 steps)
        curves(old, name, os.path.join(d, f"fmnist_{task}.png"), logy=True)
        curves([f for f in fs if f.endswith("_s300.json") or f.endswith("_s1000.json")], name + ", 300 and 1000 steps",
               os.path.join(d, f"fmnist_{task}_s300.png"), logy=True)
        curves([f for f in fs if f.endswith("_time.json")], name + ", the same training time",
               os.path.join(d, f"fmnist_{task}_time.png"), seconds=True, logy=True)
    for b in glob.glob(os.path.join(d, "matrix_exp_*.json")):
        bench(b)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results"))
