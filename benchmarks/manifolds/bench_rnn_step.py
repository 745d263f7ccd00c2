"""expRNN training step (forward, backward, RMSprop step): eager, torch.compile, torchc.

    python benchmarks/manifolds/bench_rnn_step.py --L 784 --batch 128 --hidden 170 \
        --out benchmarks/manifolds/results/rnn_step_h170.json

The model is the issue's pixel-by-pixel setting: input size 1, expRNN with hidden n (B =
exp(A) orthogonal, modReLU), a Linear(n, 10) on the last state, cross entropy. Variants, all
from the same initial weights, interleaved in one run (medians):
  eager        the recurrence as a Python loop of the cell, torch autograd (B computed once
               per forward, the input projection one GEMM: the same work as the others)
  tc_cell      torch.compile of the cell (one compiled step, the Python loop as in eager):
               torch.compile of the whole unrolled loop compiles for minutes at L = 784, and
               torch.compile of torch's scan op fails on this body (see README)
  torchc       torchc.manifolds.ExpRNN: torchc.scan (the step compiled once, forward and
               backward run as C loops)
  torchc_scan  eager's cell_step (the input projection as xs) run by torchc.scan as a user
               writes it: no hand-written gradient (B's and b's gradients are the scan's
               per-step loop-constant sums; the forward saves z, modReLU's input, per step;
               opt-in: --variants ...,torchc_scan)
  torchc_model torchc.compile of the whole loss (Model + cross entropy): B's parametrization
               (matrix_exp as a graph op) and the head + loss compiled, a graph break at the
               recurrence, which runs as in `torchc` (opt-in: --variants ...,torchc_model)
  persistent   CUDA only: the prototype of the persistent recurrence kernels
               (persistent/recur.py: one launch forward, one backward, B once, the input
               projection one GEMM for all steps; opt-in: --variants ...,persistent)
  gemms        not a training step: only the GEMMs every variant's step must run (the
               forward's L [N, n] x [n, n], the backward's L dz B, and B's gradient as one
               [n, L N] x [L N, n]), into preallocated results, as ATen calls; the floor of
               any implementation that keeps them in float32 on this BLAS (opt-in:
               --variants ...,gemms)
Compile time: `--compile-only` in a fresh process with an empty cache measures the first
step (capture + compile + one run) minus the median of the following steps, in wall time and
in this process's CPU time (the development machine's 2 cores run several sessions at once:
wall time there was 2-4x CPU time).
"""
import argparse
import json
import os
import statistics
import time

import torch
from torch import nn

import torchc
import torchc.manifolds as M


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.rnn = M.ExpRNN(1, hidden)
        self.out = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.out(self.rnn(x)[1])


def cell_step(xp, h, W, b):
    z = torch.addmm(xp, h, W.t())
    return torch.sign(z) * torch.relu(z.abs() + b)


def loop_forward(model, x, step):
    """The recurrence as a user writes it in eager: B once, input projection once, a loop."""
    c = model.rnn.cell
    B = c.recurrent_kernel.weight
    XP = c.input_kernel(x)
    h = x.new_zeros(x.size(1), model.rnn.hidden_size)
    for xp in XP.unbind(0):  # unbind: XP[t] would cost O(T) per step in the backward
        h = step(xp, h, B, c.nonlinearity.b)
    return model.out(h)


def scan_forward(model, x):
    """eager's recurrence with torchc.scan in place of the Python loop (same step function)"""
    c = model.rnn.cell
    B = c.recurrent_kernel.weight
    XP = c.input_kernel(x)
    b = c.nonlinearity.b

    def body(h, xp):
        h = cell_step(xp, h, B, b)
        return h, h
    h, _ = torchc.scan(body, x.new_zeros(x.size(1), model.rnn.hidden_size), XP)
    return model.out(h)


def persistent_forward(model, x):
    """The same model with the recurrence as persistent/recur.py's kernels (CUDA float32)."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "persistent"))
    import recur
    c = model.rnn.cell
    B = c.recurrent_kernel.weight
    U = c.input_kernel(x)  # [T, N, n]: every step's input projection, one GEMM
    h0 = x.new_zeros(x.size(1), model.rnn.hidden_size)
    H = recur.recurrence(B.t(), U, c.nonlinearity.b, h0)
    return model.out(H[-1])


def make(kind, hidden, state, device="cpu"):
    torch.manual_seed(0)
    if kind == "gemms":
        L, N = state["_L"], state["_N"]
        dev = device
        h, Bt = torch.randn(N, hidden, device=dev), torch.randn(hidden, hidden, device=dev)
        H, dZ = torch.randn(L * N, hidden, device=dev), torch.randn(L * N, hidden, device=dev)
        B = Bt.t().contiguous()
        o1, o2 = torch.empty(N, hidden, device=dev), torch.empty(hidden, hidden, device=dev)

        def gemms(x, y):
            for _ in range(L):
                torch.mm(h, Bt, out=o1)
            for _ in range(L):  # dz B, B contiguous too (torchc's loop reads both NN)
                torch.mm(h, B, out=o1)
            torch.mm(H.t(), dZ, out=o2)  # two [L N, n] stacks, as the step's H and dz
            return o2[0, 0]
        return gemms
    m = Model(hidden)
    m.load_state_dict(state)
    m.to(device)
    opt = torch.optim.RMSprop(m.parameters(), lr=1e-4)
    if kind == "eager":
        fwd = lambda x: loop_forward(m, x, cell_step)  # noqa: E731
    elif kind == "persistent":
        fwd = lambda x: persistent_forward(m, x)  # noqa: E731
    elif kind == "torchc_scan":
        fwd = lambda x: scan_forward(m, x)  # noqa: E731
    elif kind == "tc_cell":
        cs = torch.compile(cell_step)
        fwd = lambda x: loop_forward(m, x, cs)  # noqa: E731
    else:
        fwd = m

    def loss_of(x, y):
        return nn.functional.cross_entropy(fwd(x), y)
    if kind == "torchc_model":  # the drop-in use: torchc.compile of the model's loss
        loss_of = torchc.compile(loss_of)

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(x, y)
        loss.backward()
        opt.step()
        return loss.detach()
    return train_step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, default=784)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=170)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--flush-denormal", action="store_true",
                    help="torch.set_flush_denormal(True) for every variant: at hidden 512 the "
                    "gradients through 784 steps reach float32's denormal range in some steps "
                    "(steps 2-3 from the benchmark's seed), and every variant's GEMMs slow down "
                    "there (torchc's step 1.17 -> 2.39 s CPU)")
    ap.add_argument("--variants", default="eager,tc_cell,torchc")
    ap.add_argument("--compile-only", action="store_true", help="torchc's compile time at this L")
    ap.add_argument("--compile-variant", default="torchc", choices=["torchc", "torchc_model"],
                    help="with --compile-only: torchc.scan called by the eager model, or "
                    "torchc.compile of the whole loss")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (torchc.scan runs its Python "
                    "loop over the compiled body on CUDA: see scan_fallback in the output)")
    ap.add_argument("--out")
    ap.add_argument("--max-seconds", type=float, default=170.0,
                    help="time cap for the repetitions: none starts after it (at least one; "
                    "reps_done in the output)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.flush_denormal and not torch.set_flush_denormal(True):
        raise SystemExit("--flush-denormal: not supported on this CPU")
    torch.manual_seed(0)
    state = Model(a.hidden).state_dict()
    state_gemms = {"_L": a.L, "_N": a.batch}
    x = torch.randn(a.L, a.batch, 1).to(a.device)
    y = torch.randint(0, 10, (a.batch,)).to(a.device)
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    kinds = [a.compile_variant] if a.compile_only else a.variants.split(",")
    steps = {k: make(k, a.hidden, state_gemms if k == "gemms" else state, a.device) for k in kinds}
    first, times, losses = {}, {k: [] for k in kinds}, {}
    cpu = {k: [] for k in kinds}
    for k in kinds:
        c0 = torchc._C.stats()["compiles"]
        if k.startswith("torchc"):
            torchc._C.explain_start()  # records torchc's compiles of this call (explain's source)
        t0, p0 = time.perf_counter(), time.process_time()
        try:
            losses[k] = float(steps[k](x, y)) if k != "gemms" else None
            sync()
        finally:
            recs = torchc._C.explain_stop() if k.startswith("torchc") else ()
        first[k] = time.perf_counter() - t0
        first[k + "_cpu"] = time.process_time() - p0
        if k.startswith("torchc"):
            pre = "torchc" if k in ("torchc", "torchc_model") else k  # (keys as before for those two)
            first[pre + "_compiles"] = torchc._C.stats()["compiles"] - c0
            # the compiler's own time for the step's forward graph (capture + graph passes +
            # LLVM + load), wall; its backward graph compiles on a helper thread meanwhile
            # (TORCHC_DEBUG=time prints both); the rest of the first step's excess over the
            # others is its fresh buffers (first touch of the [T, N, n] stacks)
            first[pre + "_fwd_compile_ms"] = sum(r.get("compile_ms", 0.0) for r in recs if r["event"] != "hit")
            first[pre + "_fwd_compile_stages_s"] = {
                s: sum((r.get("compile_times") or {}).get(s, 0.0) for r in recs if r["event"] == "compiled")
                for s in sorted({s for r in recs for s in (r.get("compile_times") or {})})}
    t_start, reps_done = time.perf_counter(), 0
    for r in range(a.reps):
        if r and time.perf_counter() - t_start > a.max_seconds:
            break
        reps_done += 1
        for k in kinds:
            t0, c0 = time.perf_counter(), time.process_time()
            steps[k](x, y)
            sync()
            times[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    res = {"L": a.L, "batch": a.batch, "hidden": a.hidden, "threads": a.threads, "reps": a.reps, "reps_done": reps_done,
           "flush_denormal": a.flush_denormal,
           "median_s": med, "median_cpu_s": med_cpu, "first_call_s": first, "times_s": times, "first_loss": losses,
           "device": a.device, "load_avg": os.getloadavg(), "torch": torch.__version__,
           "scan_fallback": torchc._scan.last_fallback}
    if a.compile_only:
        k = a.compile_variant
        res["compile_s_est"] = first[k] - med[k]
        res["compile_cpu_s_est"] = first[k + "_cpu"] - med_cpu[k]
    if "torchc" in med:
        for k in med:
            if k != "torchc":
                res[f"torchc_x_{k}"] = med[k] / med["torchc"]
                res[f"torchc_x_{k}_cpu"] = med_cpu[k] / med_cpu["torchc"]
    print(json.dumps({k: v for k, v in res.items() if k not in ("times_s",)}, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
