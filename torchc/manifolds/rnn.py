"""expRNN (Lezcano-Casado and Martínez-Rubio, ICML 2019) and an LSTM baseline.

    h_t = modReLU(W_in x_t + B h_{t-1}),  B = base @ exp(A) orthogonal,
    modReLU(z) = sign(z) relu(|z| + b)

B is read from its parametrization once per forward (one matrix exponential per sequence,
not per step), the input projection of all steps is one GEMM, and the recurrence is a scan
with a hand-written backward (_ModReLUScan): the forward loop keeps the pre-activations, the
backward loop does one GEMM a step (gh_{t-1} = gz_t B), and the gradients of B, the input
projection and b are single GEMMs / reductions over the whole sequence. The per-step work
(forward: z = xp_t + h B^T, h = modReLU(z); backward: gz = gh * mask, gh = gz B) is a small
function called with the same shapes at every step: compiled by torchc once and reused.

This is not yet a torchc-compiled scan: torchc has no loop op, so a Python loop calls the
compiled step; the graph is never unrolled (compile time does not depend on the length).
"""
import math

import torch
from torch import nn

from .parametrizations import orthogonal


class ModReLU(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.b = nn.Parameter(torch.empty(features).uniform_(-0.01, 0.01))

    def forward(self, z):
        return torch.sign(z) * torch.relu(z.abs() + self.b)


def _fstep(xp, h, Wt, b):
    z = torch.addmm(xp, h, Wt)
    return z, torch.sign(z) * torch.relu(z.abs() + b)


def _bstep(gh, g, m, W):
    gz = (gh + g) * m
    return gz, gz @ W


# The per-step functions, compiled by torchc once per shape and reused at every step (one
# fused kernel for the pointwise work besides the GEMM extern): the whole loop 1.3x faster
# than eager on this CPU (784 steps, batch 64, hidden 170: 338-362 ms against 454-478 ms).
_cfstep, _cbstep = None, None


def _steps():
    global _cfstep, _cbstep
    if _cfstep is None:
        import torchc
        # torchc skips frames of its own package: these two are meant to be captured
        _cfstep = torchc.compile(torchc.allow_in_graph(_fstep))
        _cbstep = torchc.compile(torchc.allow_in_graph(_bstep))
    return _cfstep, _cbstep


class _ModReLUScan(torch.autograd.Function):
    """H[t] = modReLU(XP[t] + H[t-1] @ W^T, b), H[-1] = h0; returns H [T, N, n]."""

    @staticmethod
    def forward(ctx, XP, W, b, h0):
        fstep, _ = _steps()
        T = XP.size(0)
        Wt = W.t()
        hs, zs, h = [h0], [], h0
        for t in range(T):
            z, h = fstep(XP[t], h, Wt, b)
            zs.append(z)
            hs.append(h)
        H, Z = torch.stack(hs), torch.stack(zs)
        ctx.save_for_backward(H, Z, W, b)
        return H[1:]

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, G):
        _, bstep = _steps()
        H, Z, W, b = ctx.saved_tensors
        T = Z.size(0)
        S = torch.sign(Z)
        M = (Z.abs() + b > 0).to(Z.dtype) * S * S  # d modReLU / dz (0 where z = 0, as autograd)
        G = G.contiguous()
        gzs = [None] * T
        gh = torch.zeros_like(H[0])
        for t in range(T - 1, -1, -1):
            gzs[t], gh = bstep(gh, G[t], M[t], W)
        GZ = torch.stack(gzs)
        n = W.size(0)
        gW = GZ.reshape(-1, n).t() @ H[:-1].reshape(-1, n)
        gb = (GZ * S).sum((0, 1))
        return GZ, gW, gb, gh


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
        XP = c.input_kernel(x)         # all steps' input projections, one GEMM
        H = _ModReLUScan.apply(XP, B, c.nonlinearity.b, h0)
        return H, H[-1]


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
