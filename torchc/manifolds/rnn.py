"""expRNN (Lezcano-Casado and Martínez-Rubio, ICML 2019) and an LSTM baseline.

    h_t = modReLU(W_in x_t + B h_{t-1}),  B = base @ exp(A) orthogonal,
    modReLU(z) = sign(z) relu(|z| + b)

B is read from its parametrization once per forward (one matrix exponential per sequence,
not per step), the input projection of all steps is one GEMM, and the recurrence is
torchc.scan over the step h' = modReLU(xp_t + h B^T): the step is compiled once (forward and
backward graphs) and run as a loop in C, forward and backward (BPTT), so compile time does
not depend on the sequence length. The gradient of b is summed over the steps by the scan;
B's is not: the body reads Bᵀ detached and _RecurrentWeightGrad computes Σ_t h_{t-1}ᵀ dz_t as
one GEMM after the loop from the stacked dz (the gradient of XP); B's parametrization then
backpropagates through the matrix exponential once.
Measured (benchmarks/manifolds/bench_rnn_step.py, README, 2026-12-05): at sequence 784, batch
128, hidden 170, one training step (forward, backward, RMSprop) ran 2.1x faster than eager and
1.66x faster than torch.compile of the cell (1 thread, CPU time; 75% of it is the three GEMM
streams the step cannot avoid). torchc.compile of a model holding an ExpRNN captures forward
up to the recurrence and runs the step in the same time (see _recurrence).
"""
import math

import torch
from torch import nn

import torchc
from torchc import _C, _scan

from .parametrizations import orthogonal


class ModReLU(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.b = nn.Parameter(torch.empty(features).uniform_(-0.01, 0.01))

    def forward(self, z):
        return torch.sign(z) * torch.relu(z.abs() + self.b)


class ExpRNNCell(nn.Module):
    """One step: h' = modReLU(W_in x + B h). B's parametrization is orthogonal (expRNN)."""

    def __init__(self, input_size, hidden_size, triv="expm", init="henaff"):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.input_kernel = nn.Linear(input_size, hidden_size, bias=False)
        nn.init.kaiming_normal_(self.input_kernel.weight, nonlinearity="relu")
        self.recurrent_kernel = nn.Linear(hidden_size, hidden_size, bias=False)
        orthogonal(self.recurrent_kernel, "weight", triv=triv, init=init)
        self.nonlinearity = ModReLU(hidden_size)

    def forward(self, x, h):
        return self.nonlinearity(self.input_kernel(x) + self.recurrent_kernel(h))


class _RecurrentWeightGrad(torch.autograd.Function):
    """XP -> XP (a view), with the recurrent kernel's gradient summed over the steps in one GEMM.

    In h_t = f(xp_t + h_{t-1} Bᵀ) the gradient of Bᵀ is Σ_t h_{t-1}ᵀ dz_t, and dz_t is the
    gradient of xp_t. The scan's body reads Bᵀ detached, so its compiled backward does not
    compute h_{t-1}ᵀ dz_t at every step (784 [n, N] x [N, n] GEMMs and a sum); this node gets
    dz = dXP [T, N, n] from the scan and computes the sum as h_0ᵀ dz_0 + H[:-1]ᵀ dz[1:] with
    contraction length (T-1) N, after the loop (cuDNN's RNNs order their weight gradients
    the same way). box holds (h_0, H) detached, set once the scan has run; H's version is
    checked like autograd's saved tensors."""

    @staticmethod
    def forward(ctx, XP, Bt, box):
        ctx.box = box
        return XP.view_as(XP)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        if g is None or not ctx.needs_input_grad[1]:
            return g, None, None
        h0, H, version = ctx.box[0]
        if H._version != version:
            raise RuntimeError("ExpRNN: the hidden states H were modified by an inplace operation after the "
                               "forward; the recurrent kernel's gradient needs them")
        n = H.shape[-1]
        dBt = h0.t() @ g[0]
        if g.shape[0] > 1:
            dBt = torch.addmm(dBt, H[:-1].reshape(-1, n).t(), g[1:].reshape(-1, n))
        return g, dBt, None


class _PooledProjection(torch.autograd.Function):
    """x [T, N, i] -> x Wᵀ [T, N, n] (nn.Linear without bias: the same ATen mm) into a stacked
    buffer of torchc.scan's pool: the 68 MB XP of a 784-step sequence is reused by the next
    forward once nothing holds it, instead of fresh pages (mmap, page faults and clearing)
    every step. The result is a tensor of its own on the buffer's storage (so the pool sees
    it held while it lives)."""

    @staticmethod
    def forward(ctx, x, W):
        T, N, i = x.shape
        n = W.shape[0]
        buf = _scan._empty((T, N, n), torch.result_type(x, W))
        torch.mm(x.reshape(T * N, i), W.t(), out=buf.view(T * N, n))
        ctx.save_for_backward(x, W)
        return torch.empty(0, dtype=buf.dtype).set_(buf.untyped_storage(), 0, buf.shape, buf.stride())

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        x, W = ctx.saved_tensors
        T, N, i = x.shape
        g2 = g.reshape(T * N, -1)
        gx = (g2 @ W).view(T, N, i) if ctx.needs_input_grad[0] else None
        gW = g2.t() @ x.reshape(T * N, i) if ctx.needs_input_grad[1] else None
        return gx, gW



class ExpRNN(nn.Module):
    """expRNN over a sequence x [T, N, input] (time first); returns (H [T, N, hidden], h_T)."""

    def __init__(self, input_size, hidden_size, triv="expm", init="henaff"):
        super().__init__()
        self.cell = ExpRNNCell(input_size, hidden_size, triv, init)
        self.hidden_size = hidden_size

    def forward(self, x, h0=None):
        c = self.cell
        if h0 is None:
            h0 = x.new_zeros(x.size(1), self.hidden_size)
        B = c.recurrent_kernel.weight  # the parametrization runs once: B = base @ exp(A)
        # Bᵀ once per forward too: a loop constant in the layout the step's GEMM reads (as
        # B itself the step would transpose it at every step, forward and backward)
        return _recurrence(x, c.input_kernel.weight, B.t(), c.nonlinearity.b, h0)


@torchc.disable
def _recurrence(x, W_in, Bt, b, h0):
    """H, h_T of h_t = modReLU(x_t W_inᵀ + h_{t-1} Bᵀ): the input projection, torchc.scan and
    the recurrent kernel's gradient node. A compiled caller (torchc.compile(model)) captures
    ExpRNN.forward up to here (the parametrization: B = base exp(A) with matrix_exp as a graph
    op, and its compiled backward) and breaks its graph at this call: the autograd Functions
    below and the scan run as in eager (tensors only cross the break: the step's closure is
    made here, as a frame with cell variables cannot resume after a break)."""
    # all steps' input projections, one GEMM (on the CPU into a pooled buffer: A/B in one
    # process, L = 784, n = 170: 0.217 s against 0.242 s a training step, CPU medians of 8)
    if x.device.type == "cpu" and x.dim() == 3 and x.dtype == W_in.dtype:
        XP = _PooledProjection.apply(x, W_in)
    else:
        XP = nn.functional.linear(x, W_in)
    box = None
    if torch.is_grad_enabled() and Bt.requires_grad:
        box = []
        XP = _RecurrentWeightGrad.apply(XP, Bt, box)
    Btd = Bt.detach()  # its gradient: _RecurrentWeightGrad, one GEMM

    def step(h, xp):  # one graph, compiled once: h' = modReLU(xp + h Bᵀ)
        z = torch.addmm(xp, h, Btd)
        h = torch.sign(z) * torch.relu(z.abs() + b)
        return h, h
    h, H = torchc.scan(step, h0, XP)
    if box is not None:
        Hd = H.detach()
        box.append((h0.detach(), Hd, Hd._version))
    return H, h


# torchc skips its own package's frames unless told: the step is captured, and a compiled
# caller captures ExpRNN.forward up to the scan (a graph break inside an inlined call moves
# the break to the call site; the frame itself then runs captured, not eagerly)
_C.allow_code(ExpRNN.forward.__code__)
_C.allow_code(next(c for c in _recurrence.__code__.co_consts if getattr(c, "co_name", None) == "step"))


class LSTM(nn.Module):
    """nn.LSTM with the ExpRNN interface (time first; returns (H, h_T))."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size)
        self.hidden_size = hidden_size

    def forward(self, x, h0=None):
        H, (h, _) = self.lstm(x)
        return H, h[-1]


def lstm_hidden_for_params(n_params, input_size, n_out):
    """Hidden size of a one-layer LSTM + Linear(hidden, n_out) with about n_params parameters."""
    # 4 (h (i + h) + 2 h) + h n_out + n_out = 4h^2 + (4i + 8 + n_out) h + n_out
    a, b, c = 4.0, 4.0 * input_size + 8 + n_out, n_out - n_params
    return max(1, int(round((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a))))
