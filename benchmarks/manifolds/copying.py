"""The copying task (Hochreiter & Schmidhuber 1997; the setup of Arjovsky et al. 2016 as coded
for expRNN by Lezcano-Casado & Martínez-Rubio 2019): 10 symbols from 1..8, L blanks, the
marker 9, 9 blanks (length L + 20); the target is L + 10 blanks and then the 10 symbols.
Predicting blanks and then uniform symbols gives the baseline cross-entropy 10 ln 8 / (L + 20).

    python benchmarks/manifolds/copying.py --model exprnn --L 100 --hidden 128 --steps 600 \
        [--K inf|1|100] [--triv expm|cayley] [--out results.json]
"""
import argparse
import json
import math
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from torchc import manifolds as M  # noqa: E402


def copying_batch(L, batch, gen, K=10):
    seq = torch.randint(1, 9, (batch, K), generator=gen)
    x = torch.zeros(batch, L + 2 * K, dtype=torch.long)
    x[:, :K] = seq
    x[:, K + L] = 9
    y = torch.zeros(batch, L + 2 * K, dtype=torch.long)
    y[:, K + L:] = seq
    return x.t(), y.t()  # time first


class Model(nn.Module):
    def __init__(self, kind, hidden, triv="expm", init="henaff", n_in=10, n_out=9):
        super().__init__()
        self.n_in = n_in
        self.rnn = M.ExpRNN(n_in, hidden, triv, init) if kind == "exprnn" else M.LSTM(n_in, hidden)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        H, _ = self.rnn(nn.functional.one_hot(x, self.n_in).float())
        return self.out(H)


def param_groups(model, lr, lr_orth):
    orth = [p for n, p in model.named_parameters() if "parametrizations" in n]
    rest = [p for n, p in model.named_parameters() if "parametrizations" not in n]
    return [{"params": rest, "lr": lr}] + ([{"params": orth, "lr": lr_orth}] if orth else [])


def run(a):
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)
    model = Model(a.model, a.hidden, a.triv, a.init)
    opt = torch.optim.RMSprop(param_groups(model, a.lr, a.lr_orth))
    K = math.inf if a.K in ("inf", "none") else int(a.K)
    dtriv = M.DynamicTrivialization(opt, model, K=K) if a.model == "exprnn" and K != math.inf else None
    baseline = 10 * math.log(8) / (a.L + 20)
    nparams = sum(p.numel() for p in model.parameters())
    curve, t0 = [], time.perf_counter()
    for step in range(1, a.steps + 1):
        x, y = copying_batch(a.L, a.batch, gen)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
        if step % a.log_every == 0 or step == a.steps:
            print(f"{a.model} K={a.K} step {step} loss {loss.item():.5f} (baseline {baseline:.5f}) "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
        if getattr(a, "max_seconds", 0) and time.perf_counter() - t0 > a.max_seconds:
            print(f"stopped by --max_seconds after {step} steps", flush=True)
            break
    res = {"task": "copying", "model": a.model, "L": a.L, "hidden": a.hidden, "batch": a.batch, "steps": a.steps,
           "steps_done": len(curve), "K": a.K, "triv": a.triv, "init": a.init, "lr": a.lr, "lr_orth": a.lr_orth, "params": nparams,
           "baseline": baseline, "loss": curve, "seconds": time.perf_counter() - t0,
           "final_loss_mean_last_50": sum(curve[-50:]) / len(curve[-50:])}
    if a.model == "exprnn":
        W = model.rnn.cell.recurrent_kernel.weight.detach()
        res["orthogonality_error"] = (W.T @ W - torch.eye(W.size(0))).abs().max().item()
    return res


def parser():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="exprnn", choices=["exprnn", "lstm"])
    ap.add_argument("--L", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr_orth", type=float, default=1e-4)
    ap.add_argument("--K", default="inf", help="dynamic trivialization period: inf (static), 1, 100, ...")
    ap.add_argument("--triv", default="expm")
    ap.add_argument("--init", default="henaff")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log_every", type=int, default=50)
    ap.add_argument("--out", default="")
    ap.add_argument("--max_seconds", type=float, default=0, help="stop after this long (0: no limit); "
                    "the result records the steps done")
    return ap


if __name__ == "__main__":
    a = parser().parse_args()
    torch.set_num_threads(a.threads)
    r = run(a)
    print(json.dumps({k: v for k, v in r.items() if k != "loss"}))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(r, f)
