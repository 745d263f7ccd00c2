"""expRNN (Lezcano-Casado and Martínez-Rubio, ICML 2019) and an LSTM baseline.

    h_t = modReLU(W_in x_t + B h_{t-1}),  B = base @ exp(A) orthogonal,
    modReLU(z) = sign(z) relu(|z| + b)

B is read from its parametrization once per forward (one matrix exponential per sequence,
not per step), and the recurrence is torchc.scan over the step
h' = modReLU(h Bᵀ + x_t W_inᵀ + e_t): the step is compiled once (forward and backward graphs)
and run as a loop in C, forward and backward (BPTT), so compile time does not depend on the
sequence length. The input projection is in the step (with one input feature an outer
product, which torchc lowers to a multiply fused into the step's kernel); the gradients of b
and W_in are summed over the steps by the scan; modReLU's backward reads the step's output h
(_ModReLUFn), so no pre-activation is saved per step. B's is not: the body reads Bᵀ detached, e_t
is a zero row whose gradient the scan stacks (dz), and _StepGradTap computes
Σ_t h_{t-1}ᵀ dz_t as one GEMM after the loop; B's parametrization then backpropagates
through the matrix exponential once.
Measured: benchmarks/manifolds/README.md (bench_rnn_step.py). torchc.compile of a model
holding an ExpRNN captures forward up to the recurrence and runs the step in the same time
(see _recurrence).
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


class _ModReLUFn(torch.autograd.Function):
    """modReLU(z) = sign(z) relu(|z| + b), differentiated from its output h alone.

    Where h != 0, sign(h) = sign(z) and |z| + b > 0, so eager's chain (mul, relu, abs) gives
    dz = (dh sign(h)) sign(h) and db = Σ dh sign(h) over the leading dims; where h = 0 both
    are 0 (|z| + b <= 0, or z = 0 and abs' = sign(0) = 0), and a NaN h propagates as in
    eager. The values are eager's to the bit (sign is ±1 or 0). Saving h, the step's output,
    instead of z: in a scanned step the backward reads the stacked outputs the forward writes
    anyway (torchc saves an autograd.Function's saved output as the output itself), not a
    second [T, N, n] stack of pre-activations."""

    @staticmethod
    def forward(ctx, z, b):
        h = torch.sign(z) * torch.relu(z.abs() + b)
        ctx.save_for_backward(h)
        return h

    @staticmethod
    def backward(ctx, dh):
        (h,) = ctx.saved_tensors
        s = torch.sign(h)
        g = dh * s
        db = g.reshape(-1, g.shape[-1]).sum(0) if ctx.needs_input_grad[1] else None
        return g * s, db


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


class _StepGradTap(torch.autograd.Function):
    """Bᵀ -> a zero [T, N, n] with stride 0 over T, added to the pre-activation z_t at every
    step: its gradient is dz_t, which torchc.scan stacks like any x slice's gradient, and this
    node turns it into the recurrent kernel's gradient with one GEMM after the loop.

    In h_t = f(z_t), z_t = h_{t-1} Bᵀ + x_t W_inᵀ, the gradient of Bᵀ is Σ_t h_{t-1}ᵀ dz_t.
    The scan's body reads Bᵀ detached, so its compiled backward does not compute h_{t-1}ᵀ dz_t
    at every step (784 [n, N] x [N, n] GEMMs and a sum); this node computes the sum as
    h_0ᵀ dz_0 + H[:-1]ᵀ dz[1:] with contraction length (T-1) N (cuDNN's RNNs order their
    weight gradients the same way). The forward reads one zero row (in cache) per step. box
    holds (h_0, H) detached, set once the scan has run; H's version is checked like
    autograd's saved tensors."""

    @staticmethod
    def forward(ctx, Bt, T, N, box):
        ctx.box = box
        ctx.set_materialize_grads(False)
        n = Bt.shape[1]
        return Bt.new_zeros(N, n).expand(T, N, n)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        if g is None or not ctx.needs_input_grad[0]:
            return None, None, None, None
        h0, H, version = ctx.box[0]
        if H._version != version:
            raise RuntimeError("ExpRNN: the hidden states H were modified by an inplace operation after the "
                               "forward; the recurrent kernel's gradient needs them")
        n = H.shape[-1]
        dBt = h0.t() @ g[0]
        if g.shape[0] > 1:
            dBt = torch.addmm(dBt, H[:-1].reshape(-1, n).t(), g[1:].reshape(-1, n))
        return dBt, None, None, None


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
    """H, h_T of h_t = modReLU(x_t W_inᵀ + h_{t-1} Bᵀ): torchc.scan over the step and the
    recurrent kernel's gradient node. A compiled caller (torchc.compile(model)) captures
    ExpRNN.forward up to here (the parametrization: B = base exp(A) with matrix_exp as a graph
    op, and its compiled backward) and breaks its graph at this call: the autograd Function
    below and the scan run as in eager (tensors only cross the break: the step's closure is
    made here, as a frame with cell variables cannot resume after a break).

    The input projection is part of the step, not one GEMM over all steps beforehand: with one
    input feature it is an outer product, which torchc lowers to a multiply fused into the
    step's kernel (no [T, N, n] projection written and read back, no BLAS copy of it into the
    step's GEMM; W_in's gradient is a reduction fused into the step's backward). Measured
    against the precomputed projection: see benchmarks/manifolds/README.md."""
    T, N, n = x.shape[0], x.shape[1], Bt.shape[1]
    Wt = W_in.t()
    Btd = Bt.detach()  # its gradient: _StepGradTap, one GEMM
    if torch.is_grad_enabled() and Bt.requires_grad:
        box = []
        tap = _StepGradTap.apply(Bt, T, N, box)
    else:
        box = None
        tap = Bt.new_zeros(N, n).expand(T, N, n)

    def step(h, xs):  # one graph, compiled once: h' = modReLU(h Bᵀ + x W_inᵀ) (backward from h')
        x, e = xs
        z = torch.mm(h, Btd) + torch.mm(x, Wt) + e
        h = _ModReLUFn.apply(z, b)
        return h, h
    h, H = torchc.scan(step, h0, (x, tap))
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
