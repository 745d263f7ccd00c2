"""‖BᵀB − I‖ of expRNN's recurrent kernel over a long float32 training run (issue 23, item 3:
< 1e-5 after 10,000 steps with K = 1, N and inf, any torch.optim optimizer, periodic
re-projection).

    python benchmarks/manifolds/orthogonality.py --steps 10000 --K 1 100 inf \
        [--L 10 --hidden 190 --batch 32 --opt RMSprop --lr 1e-3 --lr_orth 1e-3] [--out r.json]

The model and task are copying.py's (an ExpRNN whose recurrence runs through torchc.scan, the
copying task at length L); the optimizer is any torch.optim class (--opt), DTRIV is
torchc.manifolds.DynamicTrivialization with its defaults (re-projection every 100 base moves).
The error is computed in float64 from the float32 weight: its largest entry and its spectral
norm, every --every steps (default 7, coprime with the re-projection period, so every phase
of it is seen) and at the end; the result keeps the final value and the largest seen.
--no_refine runs the parametrization without its single-precision Newton-Schulz step
(Stiefel.refine False: the library before that step existed), for comparison.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from copying import Model, copying_batch, param_groups  # noqa: E402
from torchc import manifolds as M  # noqa: E402


def errors(W):
    W = W.detach().double()
    E = W.mT @ W - torch.eye(W.size(-1), dtype=torch.float64)
    return E.abs().max().item(), torch.linalg.matrix_norm(E, 2).item()


def run(a, K):
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)
    model = Model("exprnn", a.hidden, a.triv, a.init)
    opt = getattr(torch.optim, a.opt)(param_groups(model, a.lr, a.lr_orth))
    Kv = math.inf if K in ("inf", "none") else int(K)
    dtriv = M.DynamicTrivialization(opt, model, K=Kv) if Kv != math.inf else None
    cell = model.rnn.cell
    worst = [0.0, 0.0, 0]
    losses, t0 = [], time.perf_counter()
    for step in range(1, a.steps + 1):
        x, y = copying_batch(a.L, a.batch, gen)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % a.every == 0 or step == a.steps:
            emax, e2 = errors(cell.recurrent_kernel.weight)
            if emax > worst[0]:
                worst = [emax, e2, step]
        if step % a.log_every == 0:
            print(f"K={K} step {step} loss {sum(losses[-50:]) / len(losses[-50:]):.5f} worst {worst[0]:.2e} "
                  f"(step {worst[2]}) {time.perf_counter() - t0:.0f}s", flush=True)
    emax, e2 = errors(cell.recurrent_kernel.weight)
    X = cell.recurrent_kernel.parametrizations.weight.original.detach()
    return {"K": K, "steps": a.steps, "final_max_entry": emax, "final_spectral": e2,
            "worst_max_entry": worst[0], "worst_spectral_at_that_step": worst[1], "worst_step": worst[2],
            "A_1norm_final": M.skew(X).abs().sum(-2).max().item(),
            "base_updates": dtriv.base_updates if dtriv else 0,
            "loss_mean_last_50": sum(losses[-50:]) / 50, "baseline": 10 * math.log(8) / (a.L + 20),
            "seconds": time.perf_counter() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--K", nargs="+", default=["1", "100", "inf"])
    ap.add_argument("--L", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=190)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--opt", default="RMSprop")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr_orth", type=float, default=1e-3)
    ap.add_argument("--triv", default="expm")
    ap.add_argument("--init", default="henaff")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=7)
    ap.add_argument("--log_every", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no_refine", action="store_true")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.no_refine:
        M.Stiefel.refine = property(lambda self: False)
    res = {"args": vars(a), "runs": []}
    for K in a.K:
        r = run(a, K)
        print(json.dumps(r), flush=True)
        res["runs"].append(r)
        if a.out:
            with open(a.out, "w") as f:
                json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
