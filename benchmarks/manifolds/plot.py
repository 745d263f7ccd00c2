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


def curves(files, title, out, baseline=None, logy=False):
    if not files:
        return
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for f in sorted(files):
        r = json.load(open(f))
        ax.plot(range(1, len(r["loss"]) + 1), smooth(r["loss"]), label=label(r), lw=1.2)
    if baseline is not None:
        ax.axhline(baseline, color="k", ls="--", lw=0.8, label="baseline 10 ln 8 / (L+20)")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
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
        fs = glob.glob(os.path.join(d, f"fmnist_{task}_*.json"))
        curves(fs, f"{'permuted ' if task == 'perm' else ''}pixel-by-pixel Fashion-MNIST",
               os.path.join(d, f"fmnist_{task}.png"))
    for b in glob.glob(os.path.join(d, "matrix_exp_*.json")):
        bench(b)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results"))
