"""The expRNN training step's structure on the CPU (issue 23, item 6: the step benchmarked by
benchmarks/manifolds/bench_rnn_step.py), checked where it could regress without changing
any value:
  - B = base exp(A) is computed once per forward (one parametrization call, one matrix
    exponential backward per step), not per time step;
  - the recurrence runs as torchc.scan's C loop, forward and backward (BPTT) over one compiled
    body, with exactly one GEMM per time step in each direction (h Bᵀ forward, dz B
    backward): the input projection, modReLU and the sums of b's and W_in's gradients are
    fused into the step's kernels, and no extern result is copied;
  - the recurrent kernel's gradient is one GEMM after the loop, not one per step.
"""
import re

import pytest
import torch
from torch import nn

import torchc
from torchc import manifolds as M


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


class Model(nn.Module):
    """The benchmark's model: pixel-by-pixel input (one feature), expRNN, a head on h_T."""

    def __init__(self, hidden, dtype):
        super().__init__()
        self.rnn = M.ExpRNN(1, hidden).to(dtype)
        self.out = nn.Linear(hidden, 10).to(dtype)

    def forward(self, x):
        return self.out(self.rnn(x)[1])


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def eager_loop(m, x):
    """The recurrence as eager code: the cell over the steps (B read at every step)."""
    h = x.new_zeros(x.size(1), m.rnn.hidden_size)
    for t in range(x.size(0)):
        h = m.rnn.cell(x[t], h)
    return m.out(h)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("T", [1, 2, 37])
def test_exprnn_training_step_structure(T, dtype):
    torch.manual_seed(7)
    N, n = 6, 20
    m = Model(n, dtype)
    par = m.rnn.cell.recurrent_kernel.parametrizations.weight
    calls = {"fwd": 0, "vjp": 0}
    real_forward = par[0].forward

    def counted(X):
        calls["fwd"] += 1
        return real_forward(X)
    par[0].forward = counted
    vjp = M.functional._MatrixExp.backward

    def counted_vjp(ctx, g):
        calls["vjp"] += 1
        return vjp(ctx, g)
    opt = torch.optim.RMSprop(m.parameters(), lr=1e-3)
    x = torch.randn(T, N, 1, dtype=dtype)
    y = torch.randint(0, 10, (N,))
    mp = pytest.MonkeyPatch()
    mp.setattr(M.functional._MatrixExp, "backward", staticmethod(counted_vjp))
    try:
        for it in range(3):
            ref = [p.detach().clone() for p in m.parameters()]
            s0, (l0, r0) = torchc._C.stats(), torchc._C._scan_stats()
            calls.update(fwd=0, vjp=0)
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            s1, (l1, r1) = torchc._C.stats(), torchc._C._scan_stats()
            got = [p.grad.clone() for p in m.parameters()]
            # B once per forward and its exponential differentiated once
            assert calls == {"fwd": 1, "vjp": 1}, calls
            assert torchc._scan.last_fallback is None, torchc._scan.last_fallback
            # the C loop: the probe is step 0, then T - 1 forward and T backward graph runs
            assert (l1 - l0, r1 - r0) == ((2, (T - 1) + T) if T > 1 else (1, 1)), (l1 - l0, r1 - r0)
            # one GEMM extern per step and direction (probe included), nothing copied
            assert s1["extern_calls"] - s0["extern_calls"] == 2 * T, s1["extern_calls"] - s0["extern_calls"]
            assert s1["extern_copies"] == s0["extern_copies"]
            # against the eager loop of the cell, same weights
            with torch.no_grad():
                for p, r in zip(m.parameters(), ref):
                    p.copy_(r)
            par[0].forward = real_forward
            ref_loss = nn.functional.cross_entropy(eager_loop(m, x), y)
            want = torch.autograd.grad(ref_loss, list(m.parameters()))
            par[0].forward = counted
            tol = 1e-11 if dtype == torch.float64 else 2e-5
            assert rel(loss.detach(), ref_loss.detach()) < tol
            for g, w in zip(got, want):
                assert rel(g, w) < tol
            opt.step()
    finally:
        mp.undo()
        par[0].forward = real_forward


KERNEL = re.compile(r"^kernel k\d+: outer \[(\d+)\] inner \[(\d+)\] iters (\d+) vec_outer$")


@pytest.mark.parametrize("rows,cols,chunks", [(128, 170, 1), (64, 600, 3), (8192, 170, 6)])
def test_column_sums_of_a_one_thread_kernel_take_few_chunks(monkeypatch, capfd, rows, cols, chunks):
    """The step's backward sums [N, n] over the batch with lanes along the columns (vec_outer).
    A kernel below the work at which the runtime uses threads (IC_PAR_MIN_WORK, 2^20) takes
    the columns in as few chunks of up to 16 vectors as cover them, so each row of a stack in
    memory is read whole (170 columns: 1 chunk of 11 vectors, not 6 of 2; 600: 3 of 16); a
    larger one keeps >= 4 chunks for the threads ([8192, 170]: 6). Values as eager's."""
    monkeypatch.setenv("TORCHC_DEBUG", "loops")
    monkeypatch.setenv("TORCHC_CACHE", "0")
    torch.manual_seed(3)
    dh, h, x = torch.randn(rows, cols), torch.randn(rows, cols), torch.randn(rows, 1)

    def bwd(dh, h, x):  # modReLU's backward from its output, as in the step
        s = torch.sign(h)
        g = dh * s
        return g.sum(0), g * s, (g * s * x).sum(0)
    torchc.reset()
    capfd.readouterr()
    got = torchc.compile(bwd)(dh, h, x)
    err = capfd.readouterr().err.splitlines()
    ks = [m.groups() for ln in err if (m := KERNEL.match(ln))]
    assert ks, "no vec_outer kernel in the listing:\n" + "\n".join(err[-40:])
    assert all(int(o) == cols and int(i) == rows and int(it) == chunks for o, i, it in ks), ks
    for a, b in zip(got, bwd(dh, h, x)):
        assert rel(a, b) < 1e-5
