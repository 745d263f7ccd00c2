"""Training through torchc.scan on CUDA: gradients against eager, the lowering each scan got,
and the training step's time against eager. For the lead's GPU run (no GPU on the
development machine):

    python tools/scan_grad_cuda_check.py [--L 784] [--batch 128] [--hidden 170] [--out FILE.json]

1. correctness (small, float32 and float64): f(x, A, W, b, h0) = loss of the recurrence
   h' = modReLU(h Bᵀ + x_t Wᵀ), B = matrix_exp(A - Aᵀ) once per forward, under
   torchc.compile, against the same recurrence as a Python loop in eager, at T = 1, 2, 7;
   gradients of every input and parameter. Exits 1 on a mismatch.
2. what ran: explain()'s scan_lowerings (today a CUDA scan that needs a gradient runs the
   Python loop over its compiled body: "Python loop: the C loop runs CPU graphs only, and no
   persistent kernel: a gradient is needed ..."), graph and backward graph counts.
3. speed: the expRNN training step (torchc.manifolds.ExpRNN + Linear head + cross entropy,
   forward + backward) at --L/--batch/--hidden: eager Python loop vs torchc.scan (the model
   called as is) and vs torchc.compile of the whole loss; medians
   of --reps after 2 warm-ups, torch.cuda.synchronize() around each.
Prints one JSON object (also written to --out)."""
import argparse
import json
import statistics
import sys
import time

import torch

import torchc
from torchc import _scan


def step(h, xt, Bt, Wt, b):
    z = h @ Bt + xt @ Wt
    h = torch.sign(z) * torch.relu(z.abs() + b)
    return h, h


def f(x, A, W, b, h0):
    B = torch.linalg.matrix_exp(A - A.t())
    Bt, Wt = B.t(), W.t()
    h, H = torchc.scan(lambda h, xt: step(h, xt, Bt, Wt, b), h0, x)
    return h.square().sum() + (H * H.flip(0)).mean()


def f_eager(x, A, W, b, h0):
    B = torch.linalg.matrix_exp(A - A.t())
    Bt, Wt = B.t(), W.t()
    h, H = h0, []
    for t in range(x.shape[0]):
        h, y = step(h, x[t], Bt, Wt, b)
        H.append(y)
    H = torch.stack(H)
    return h.square().sum() + (H * H.flip(0)).mean()


def make(T, dtype, dev, n=5, N=3, inp=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    ts = [torch.randn(T, N, inp, generator=g, dtype=dtype), torch.randn(n, n, generator=g, dtype=dtype) * 0.3,
          torch.randn(n, inp, generator=g, dtype=dtype), torch.empty(n, dtype=dtype).uniform_(-0.2, 0.1, generator=g),
          torch.randn(N, n, generator=g, dtype=dtype)]
    return [t.to(dev).requires_grad_() for t in ts]


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def correctness(dev):
    out, ok = [], True
    for dtype, tol in ((torch.float32, 5e-5), (torch.float64, 1e-10)):
        for T in (1, 2, 7):
            torchc.reset()
            args = make(T, dtype, dev)
            e = torchc.explain(f)(*args)
            got = torch.autograd.grad(e.result, args)
            want = torch.autograd.grad(f_eager(*args), args)
            errs = {k: rel(g, w) for k, g, w in zip("x A W b h0".split(), got, want)}
            good = all(v < tol for v in errs.values()) and rel(e.result.detach(), f_eager(*args).detach()) < tol
            ok &= good
            out.append({"dtype": str(dtype), "T": T, "ok": good, "rel_err": errs,
                        "scan_lowerings": e.scan_lowerings, "fallback": _scan.last_fallback,
                        "graphs": e.graph_count, "backward_graphs": e.backward_graph_count})
    return ok, out


def speed(dev, L, batch, hidden, reps):
    import torchc.manifolds as M
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = M.ExpRNN(1, hidden)
            self.out = nn.Linear(hidden, 10)

        def forward(self, x):
            return self.out(self.rnn(x)[1])

    torch.manual_seed(0)
    model = Model().to(dev)
    x = torch.randn(L, batch, 1, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    lossf = nn.CrossEntropyLoss()

    def eager_step():
        c = model.rnn.cell
        B = c.recurrent_kernel.weight
        h = x.new_zeros(batch, hidden)
        xp = x @ c.input_kernel.weight.t()
        for t in range(L):
            z = torch.addmm(xp[t], h, B.t())
            h = torch.sign(z) * torch.relu(z.abs() + c.nonlinearity.b)
        loss = lossf(model.out(h), y)
        loss.backward()
        return loss

    def torchc_step():
        loss = lossf(model(x), y)
        loss.backward()
        return loss

    closs = torchc.compile(lambda x, y: lossf(model(x), y))

    def torchc_model_step():  # the whole loss compiled: B's matrix_exp and the head in graphs
        loss = closs(x, y)
        loss.backward()
        return loss

    res = {}
    for name, fn in (("eager", eager_step), ("torchc", torchc_step), ("torchc_model", torchc_model_step)):
        ts = []
        for i in range(reps + 2):
            model.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = fn()
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
        res[name] = {"median_s": statistics.median(ts[2:]), "first_s": ts[0], "loss": loss.item()}
        if name != "eager":
            res[name]["scan_lowering"] = _scan.last_lowering
    res["torchc_x_eager"] = res["eager"]["median_s"] / res["torchc"]["median_s"]
    res["torchc_model_x_eager"] = res["eager"]["median_s"] / res["torchc_model"]["median_s"]
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, default=784)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=170)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    ok, corr = correctness(dev)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "ok": ok, "correctness": corr,
           "speed": speed(dev, a.L, a.batch, a.hidden, a.reps), "args": vars(a)}
    s = json.dumps(res, indent=1)
    print(s)
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(s)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
