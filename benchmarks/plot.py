"""Bar chart of a results JSON from benchmarks/run.py: speedup over eager per workload.

    python benchmarks/plot.py benchmarks/results/cpu_1thread.json  # writes the .png beside it
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path):
    with open(path) as f:
        data = json.load(f)
    rows = data["rows"]
    names = [r["name"] for r in rows]
    tc = [r["torchc_speedup"] for r in rows]
    ind = [r.get("inductor_speedup", 0) for r in rows]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], tc, 0.4, label="torchc")
    if any(ind):
        ax.bar([i + 0.2 for i in x], ind, 0.4, label="torch.compile")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("speedup over eager (log)")
    s = data.get("summary", {})
    ax.set_title(f"{data.get('torch', '')}, {data.get('threads', '?')} thread(s): torchc geomean "
                 f"{s.get('torchc_geomean', 0):.2f}x ({s.get('torchc_mean_compile_s', 0)*1e3:.0f} ms compile), "
                 f"torch.compile {s.get('inductor_geomean', 0):.2f}x ({s.get('inductor_mean_compile_s', 0):.1f} s)",
                 fontsize=9)
    ax.legend()
    fig.tight_layout()
    out = path.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/cpu_1thread.json")
