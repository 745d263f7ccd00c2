"""Pixel-by-pixel and permuted pixel-by-pixel Fashion-MNIST (sequences of 784 pixels, one a
step; the class from the last hidden state), expRNN against an LSTM with the same number of
parameters, at a fixed budget of optimizer steps (or of time: --max_seconds). Data: Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist, IDX files; apt-get install dataset-fashion-mnist).

    python benchmarks/manifolds/fmnist.py --model exprnn --hidden 170 --steps 300 [--permute]
        [--K inf|1|100] [--out results.json]
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from torchc import manifolds as M  # noqa: E402
from torchc.manifolds.rnn import lstm_hidden_for_params  # noqa: E402

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    return torch.frombuffer(bytearray(b[4 + 4 * nd:]), dtype=torch.uint8).reshape(dims)


def load(split):
    pre = "train" if split == "train" else "t10k"
    x = idx(os.path.join(DATA, f"{pre}-images-idx3-ubyte.gz")).reshape(-1, 784).float() / 255.0
    y = idx(os.path.join(DATA, f"{pre}-labels-idx1-ubyte.gz")).long()
    return (x - 0.2860) / 0.3530, y  # the training set's mean and std


class Model(nn.Module):
    def __init__(self, kind, hidden, triv="expm", init="cayley"):
        super().__init__()
        self.rnn = M.ExpRNN(1, hidden, triv, init) if kind == "exprnn" else M.LSTM(1, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):  # x [N, 784]
        _, h = self.rnn(x.t().unsqueeze(-1))
        return self.out(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="exprnn", choices=["exprnn", "lstm"])
    ap.add_argument("--hidden", type=int, default=170, help="expRNN's; the LSTM gets as many parameters")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr_orth", type=float, default=1e-4)
    ap.add_argument("--K", default="inf")
    ap.add_argument("--permute", action="store_true")
    ap.add_argument("--test", type=int, default=2000, help="test images evaluated")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--max_seconds", type=float, default=0,
                    help="stop training after this long (0: no limit): a budget of time, not steps")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    xtr, ytr = load("train")
    xte, yte = load("test")
    perm = torch.randperm(784, generator=torch.Generator().manual_seed(1234)) if a.permute else None
    if perm is not None:
        xtr, xte = xtr[:, perm], xte[:, perm]
    exp_params = a.hidden * a.hidden + 2 * a.hidden + a.hidden * 10 + 10
    hidden = a.hidden if a.model == "exprnn" else lstm_hidden_for_params(exp_params, 1, 10)
    model = Model(a.model, hidden)
    orth = [p for n, p in model.named_parameters() if "parametrizations" in n]
    rest = [p for n, p in model.named_parameters() if "parametrizations" not in n]
    groups = [{"params": rest, "lr": a.lr}] + ([{"params": orth, "lr": a.lr_orth}] if orth else [])
    opt = torch.optim.RMSprop(groups)
    K = math.inf if a.K in ("inf", "none") else int(a.K)
    if a.model == "exprnn" and K != math.inf:
        M.DynamicTrivialization(opt, model, K=K)
    gen = torch.Generator().manual_seed(a.seed + 7)
    curve, t0 = [], time.perf_counter()
    for step in range(1, a.steps + 1):
        i = torch.randint(0, xtr.size(0), (a.batch,), generator=gen)
        loss = nn.functional.cross_entropy(model(xtr[i]), ytr[i])
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0) if a.model == "lstm" else None
        opt.step()
        curve.append(loss.item())
        if step % 25 == 0:
            print(f"{a.model}{' perm' if a.permute else ''} K={a.K} step {step} loss "
                  f"{sum(curve[-25:]) / 25:.4f} {time.perf_counter() - t0:.0f}s", flush=True)
        if a.max_seconds and time.perf_counter() - t0 > a.max_seconds:
            break
    train_s = time.perf_counter() - t0
    correct = 0
    with torch.no_grad():
        for j in range(0, a.test, 500):
            correct += (model(xte[j:j + 500]).argmax(-1) == yte[j:j + 500]).sum().item()
    acc = correct / a.test
    nparams = sum(p.numel() for p in model.parameters())
    res = {"task": "permuted" if a.permute else "pixel", "model": a.model, "hidden": hidden, "params": nparams,
           "steps": len(curve), "max_seconds": a.max_seconds, "batch": a.batch, "K": a.K, "lr": a.lr, "lr_orth": a.lr_orth, "test_images": a.test,
           "test_accuracy": acc, "train_seconds": train_s, "loss": curve}
    print(json.dumps({k: v for k, v in res.items() if k != "loss"}))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f)


if __name__ == "__main__":
    main()
