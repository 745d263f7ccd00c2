"""The two papers' experiments at a scale this CPU runs in minutes, one results JSON.

    python benchmarks/manifolds/papers_small.py --out benchmarks/manifolds/results/papers_small.json

Papers: Lezcano-Casado & Martínez-Rubio, "Cheap Orthogonal Constraints in Neural Networks"
(ICML 2019, expRNN: copying task, pixel-by-pixel and permuted MNIST against an LSTM) and
Lezcano-Casado, "Trivializations for Gradient-Based Optimization on Manifolds" (NeurIPS 2019:
dynamic trivializations, DTRIV K = 1, 100, inf). What runs here, each from the same seed:

  copying    the copying task (copying.py: 10 symbols from 1..8, L blanks, the marker, the
             symbols to recall; baseline 10 ln 8 / (L + 20)) at --copy-L, expRNN static, DTRIV
             K = 1 and K = 100, and an LSTM with as many parameters
  pixel      pixel-by-pixel classification of 28x28 images downsampled to --side x --side
             (one pixel a step), plain and permuted: Fashion-MNIST when Debian's
             dataset-fashion-mnist is installed (/usr/share/datasets/fashion-mnist, or
             $FASHION_MNIST_DIR), otherwise a synthetic ten-class set (smooth random class
             templates, shifted by up to 2 pixels, plus noise of twice their scale; the JSON's "data" says which);
             expRNN static, DTRIV K = 1 and 100, and an LSTM with as many parameters

Every run gets --steps optimizer steps or --seconds of training, whichever ends first (the LSTM
is much slower per step on the CPU: its "steps_done" says how far it got). expRNN runs through
torchc (ExpRNN's recurrence is torchc.scan, the step compiled once and looped in C; the JSON
records torchc._scan.last_fallback, None when the C loop ran). Scale: far below the papers'
(L = 1000 and 4000 steps for copying, 70 epochs of MNIST); the comparisons are within one run.
The papers' own result tables could not be read through this machine's tools (see README.md,
"The papers' figures beside ours"); "reference" in the JSON holds what could be cited.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import torchc  # noqa: E402
from torchc import manifolds as M  # noqa: E402
from torchc.manifolds.rnn import lstm_hidden_for_params  # noqa: E402
import copying  # noqa: E402

REFERENCE = {
    "papers_tables": "not read: the search tool's pages/docs corpora return the papers' openings only "
                     "(queries for the result tables' captions and rows, 2026-12-06 again), no repository in "
                     "the code index quotes them",
    "copying_L1000_h190": "geotorch examples/copying_problem.py (commit 541d042): L = 1000, hidden 190, 4000 "
                          "iterations 'should converge to 0% error'",
    "pixel_mnist_h170": "geotorch examples/sequential_mnist.py (commit 541d042): hidden 170, 'a good result ... "
                        "would be 98.0% accuracy with orthogonal constraints' (MNIST, 70 epochs)",
}


def orth_error(model):
    W = model.rnn.cell.recurrent_kernel.weight.detach().double()
    return (W.T @ W - torch.eye(W.size(0), dtype=W.dtype)).abs().max().item()


def optimizer(model, lr, lr_orth, K):
    orth = [p for n, p in model.named_parameters() if "parametrizations" in n]
    rest = [p for n, p in model.named_parameters() if "parametrizations" not in n]
    opt = torch.optim.RMSprop([{"params": rest, "lr": lr}] + ([{"params": orth, "lr": lr_orth}] if orth else []))
    if orth and K != math.inf:
        M.DynamicTrivialization(opt, model, K=K)
    return opt


def train(model, opt, batches, loss_of, steps, seconds, clip=None):
    curve, t0 = [], time.perf_counter()
    for step in range(steps):
        x, y = batches(step)
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        curve.append(loss.item())
        if time.perf_counter() - t0 > seconds:
            break
    return curve, time.perf_counter() - t0


def variants(n_exprnn_params, n_in, n_out):
    lstm_h = lstm_hidden_for_params(n_exprnn_params, n_in, n_out)
    return [("exprnn", "static", math.inf, None), ("exprnn", "dtriv1", 1, None),
            ("exprnn", "dtriv100", 100, None), ("lstm", "lstm", math.inf, lstm_h)]


def run_copying(a):
    L, hidden = a.copy_L, a.copy_hidden
    baseline = 10 * math.log(8) / (L + 20)
    n_exp = sum(p.numel() for p in copying.Model("exprnn", hidden).parameters())
    out = []
    for kind, name, K, lstm_h in variants(n_exp, 10, 9):
        torch.manual_seed(a.seed)
        model = copying.Model(kind, lstm_h or hidden)
        opt = optimizer(model, a.copy_lr, a.copy_lr / 10, K)
        gen = torch.Generator().manual_seed(a.seed + 1)

        def loss_of(m, x, y):
            logits = m(x)
            return nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        torchc._scan.last_fallback = None
        curve, secs = train(model, opt, lambda s: copying.copying_batch(L, a.batch, gen), loss_of,
                            a.steps, a.seconds)
        ma = [sum(curve[max(0, i - 19):i + 1]) / len(curve[max(0, i - 19):i + 1]) for i in range(len(curve))]
        below = next((i + 1 for i, v in enumerate(ma) if v < baseline), None)
        r = {"model": name, "hidden": lstm_h or hidden, "K": str(K), "params": sum(p.numel() for p in model.parameters()),
             "steps_done": len(curve), "train_seconds": secs, "seconds_per_step": secs / len(curve),
             "loss_mean_last_20": sum(curve[-20:]) / len(curve[-20:]), "first_step_below_baseline_ma20": below,
             "loss": curve}
        if kind == "exprnn":
            r["orthogonality_error"] = orth_error(model)
            r["scan_fallback"] = torchc._scan.last_fallback
        print(f"copying L={L} {name}: {r['steps_done']} steps, loss {r['loss_mean_last_20']:.5f} "
              f"(baseline {baseline:.5f}), {secs:.0f} s", flush=True)
        out.append(r)
    return {"L": L, "batch": a.batch, "baseline": baseline, "lr": a.copy_lr, "lr_orth": a.copy_lr / 10, "runs": out}


def pixel_data(side, seed):
    """(xtr, ytr, xte, yte, name): images [N, side*side] normalized, labels [N]."""
    d = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    if os.path.exists(os.path.join(d, "train-images-idx3-ubyte.gz")):
        import fmnist
        fmnist.DATA = d
        sets = []
        for split in ("train", "test"):
            x, y = fmnist.load(split)
            x = nn.functional.adaptive_avg_pool2d(x.reshape(-1, 1, 28, 28), side).reshape(x.size(0), -1)
            sets += [(x - x.mean()) / x.std(), y]
        return (*sets, f"fashion-mnist ({d}), 28x28 average-pooled to {side}x{side}")
    g = torch.Generator().manual_seed(seed + 99)
    templates = nn.functional.interpolate(torch.randn(10, 1, 4, 4, generator=g), size=(side, side),
                                          mode="bilinear", align_corners=False)[:, 0]

    def draw(n):
        y = torch.randint(0, 10, (n,), generator=g)
        shift = torch.randint(-2, 3, (n, 2), generator=g)
        x = torch.stack([templates[c].roll((int(s[0]), int(s[1])), (0, 1)) for c, s in zip(y.tolist(), shift)])
        x = x + 2.0 * torch.randn(x.shape, generator=g)
        return x.reshape(n, -1), y
    xtr, ytr = draw(20000)
    xte, yte = draw(2000)
    mu, sd = xtr.mean(), xtr.std()
    return (xtr - mu) / sd, ytr, (xte - mu) / sd, yte, (
        f"synthetic ({side}x{side}: 10 smooth random class templates, shifted by up to 2 pixels, noise 2.0)")


class PixelModel(nn.Module):
    def __init__(self, kind, hidden):
        super().__init__()
        self.rnn = M.ExpRNN(1, hidden, "expm", "cayley") if kind == "exprnn" else M.LSTM(1, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):  # [N, T] pixels, one a step
        _, h = self.rnn(x.t().unsqueeze(-1))
        return self.out(h)


def run_pixel(a, permute, data):
    xtr, ytr, xte, yte, name = data
    T = xtr.size(1)
    if permute:
        perm = torch.randperm(T, generator=torch.Generator().manual_seed(1234))
        xtr, xte = xtr[:, perm], xte[:, perm]
    n_exp = sum(p.numel() for p in PixelModel("exprnn", a.pixel_hidden).parameters())
    out = []
    for kind, vname, K, lstm_h in variants(n_exp, 1, 10):
        torch.manual_seed(a.seed)
        model = PixelModel(kind, lstm_h or a.pixel_hidden)
        opt = optimizer(model, a.pixel_lr, a.pixel_lr / 10, K)
        gen = torch.Generator().manual_seed(a.seed + 7)

        def batches(step):
            i = torch.randint(0, xtr.size(0), (a.batch,), generator=gen)
            return xtr[i], ytr[i]
        torchc._scan.last_fallback = None
        curve, secs = train(model, opt, batches, lambda m, x, y: nn.functional.cross_entropy(m(x), y),
                            a.steps, a.seconds, clip=1.0 if kind == "lstm" else None)
        with torch.no_grad():
            n_test = min(a.test, xte.size(0))
            correct = sum((model(xte[j:j + 500]).argmax(-1) == yte[j:j + 500]).sum().item()
                          for j in range(0, n_test, 500))
        r = {"model": vname, "hidden": lstm_h or a.pixel_hidden, "K": str(K),
             "params": sum(p.numel() for p in model.parameters()), "steps_done": len(curve),
             "train_seconds": secs, "seconds_per_step": secs / len(curve),
             "loss_mean_last_20": sum(curve[-20:]) / len(curve[-20:]), "test_images": n_test,
             "test_accuracy": correct / n_test, "loss": curve}
        if kind == "exprnn":
            r["orthogonality_error"] = orth_error(model)
            r["scan_fallback"] = torchc._scan.last_fallback
        print(f"pixel{' permuted' if permute else ''} T={T} {vname}: {r['steps_done']} steps, loss "
              f"{r['loss_mean_last_20']:.4f}, test accuracy {r['test_accuracy']:.3f}, {secs:.0f} s", flush=True)
        out.append(r)
    return {"data": name, "T": T, "permuted": permute, "batch": a.batch, "lr": a.pixel_lr,
            "lr_orth": a.pixel_lr / 10, "runs": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copy-L", type=int, default=100)
    ap.add_argument("--copy-hidden", type=int, default=128)
    ap.add_argument("--copy-lr", type=float, default=1e-3)
    ap.add_argument("--side", type=int, default=14, help="images are side x side pixels (28: the papers')")
    ap.add_argument("--pixel-hidden", type=int, default=170)
    ap.add_argument("--pixel-lr", type=float, default=7e-4)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=300, help="optimizer steps per run (at most)")
    ap.add_argument("--seconds", type=float, default=60.0, help="training seconds per run (at most)")
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--tasks", default="copying,pixel,permuted")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tasks = a.tasks.split(",")
    res = {"settings": vars(a), "torch": torch.__version__, "load_avg_start": os.getloadavg(), "reference": REFERENCE}
    t0 = time.perf_counter()
    if "copying" in tasks:
        res["copying"] = run_copying(a)
    if "pixel" in tasks or "permuted" in tasks:
        data = pixel_data(a.side, a.seed)
        for task in ("pixel", "permuted"):
            if task in tasks:
                res[task] = run_pixel(a, task == "permuted", data)
    res["total_seconds"] = time.perf_counter() - t0
    res["load_avg_end"] = os.getloadavg()
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f)
    strip = lambda d: {k: ([{kk: vv for kk, vv in r.items() if kk != "loss"} for r in v] if k == "runs" else v)  # noqa: E731
                       for k, v in d.items()}
    print(json.dumps({k: (strip(v) if isinstance(v, dict) and "runs" in v else v) for k, v in res.items()}, indent=1))


if __name__ == "__main__":
    main()
