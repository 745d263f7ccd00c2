"""Persistent recurrence kernels (recur.cu -> recur.ptx) loaded through the CUDA driver.

A prototype to measure the design of issue 23's GPU recurrence (README.md, "Persistent
recurrence kernel: design") before it goes into the NVPTX code generator: the expRNN step
h_t = modReLU(u_t + h_{t-1} W) over a whole sequence in one launch forward and one backward.

    H = recurrence(W, U, b, h0)    # W [n, n] (= Bᵀ), U [T, N, n] (the input projection of every
                                   # step, one GEMM beforehand), b [n], h0 [N, n]; H [T, N, n]

differentiable in all four (an autograd.Function): the backward kernel runs the BPTT loop
and writes dZ [T, N, n]; W's gradient is then one GEMM Hprevᵀ dZ and U's is dZ itself.
CUDA float32 only; the driver is reached with ctypes (libcuda), in torch's current context
and stream. Nothing here is imported by torchc.
"""
import ctypes
import os

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
_SMEM_OPTIN = 227 * 1024  # sm_90's opt-in dynamic shared memory per block
_CS, _KS = 8, 4  # recur.cu: CTAs per cluster, parts of the j range per column
_cu = None
_mod = None
_funcs = {}


def _check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        _cu.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"{what}: CUDA driver error {rc} ({name.value.decode() if name.value else '?'})")


def _module():
    global _cu, _mod
    if _mod is not None:
        return _mod
    torch.cuda.init()
    torch.zeros(1, device="cuda")  # torch's primary context current on this thread
    _cu = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    _check(_cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        raise RuntimeError("no current CUDA context")
    with open(os.path.join(_HERE, "recur.ptx"), "rb") as f:
        ptx = f.read() + b"\0"
    mod = ctypes.c_void_p()
    _check(_cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData(recur.ptx)")
    _mod = mod
    return mod


def _func(name, smem):
    f = _funcs.get(name)
    if f is None:
        f = ctypes.c_void_p()
        _check(_cu.cuModuleGetFunction(ctypes.byref(f), _module(), name.encode()), f"cuModuleGetFunction({name})")
        _funcs[name] = f
    # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    _check(_cu.cuFuncSetAttribute(f, 8, ctypes.c_int(smem)), "cuFuncSetAttribute")
    return f


def plan(N, n):
    """(kernel suffix, R rows per CTA or cluster, CTAs, threads per CTA, dynamic shared bytes).

    One thread per hidden column. W in one CTA's shared memory where it fits (n <= 240 in
    float32): one CTA per R batch rows, R = 1 while the rows are no more than the SMs (every
    SM runs one row's recurrence), else 2 or 4 ("s"). Else a cluster of 8 CTAs per 8 rows,
    each CTA holding 1/8 of W's columns ("c"; n <= 600). Else W from L2, 8 rows sharing each
    value ("g")."""
    if n > 1024:
        raise ValueError(f"hidden size {n} > 1024: not in this prototype")
    np_ = (n + 3) & ~3
    threads = max(32, (n + 31) // 32 * 32)
    R = 1 if N <= 132 else (2 if N <= 264 or threads > 512 else 4)
    smem = (n * np_ + 2 * R * np_) * 4
    if smem <= _SMEM_OPTIN:
        return "s", R, (N + R - 1) // R, threads, smem
    cw = (n + _CS - 1) // _CS
    cwp = (cw + 31) // 32 * 32
    smem = (2 * 8 * np_ + _KS * 8 * cwp + n * cw) * 4
    if smem <= _SMEM_OPTIN and _KS * cwp <= 512:
        return "c", 8, (N + 7) // 8 * _CS, _KS * cwp, smem
    R = 8 if threads <= 512 else 1
    return "g", R, (N + R - 1) // R, threads, 2 * R * np_ * 4


def _launch(name, grid, threads, smem, args):
    _module()
    f = _func(name, smem)
    cargs = []
    for a in args:
        if isinstance(a, torch.Tensor):
            cargs.append(ctypes.c_void_p(a.data_ptr()))
        elif a is None:
            cargs.append(ctypes.c_void_p(0))
        else:
            cargs.append(ctypes.c_int(a))
    params = (ctypes.c_void_p * len(cargs))(*[ctypes.cast(ctypes.pointer(c), ctypes.c_void_p) for c in cargs])
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    _check(_cu.cuLaunchKernel(f, grid, 1, 1, threads, 1, 1, smem, stream, params, None), f"cuLaunchKernel({name})")


def forward_kernel(W, U, b, h0):
    T, N, n = U.shape
    kind, R, ctas, threads, smem = plan(N, n)
    H = torch.empty_like(U)
    if T:
        _launch(f"recur_fwd_r{R}_{kind}", ctas, threads, smem, (W, U, b, h0, H, T, N, n))
    return H


def backward_kernel(W, H, dH, dhT):
    T, N, n = H.shape
    kind, R, ctas, threads, smem = plan(N, n)
    WT = W.t().contiguous()
    dZ = torch.empty_like(H)
    dh0 = torch.empty(N, n, device=H.device, dtype=H.dtype)
    db = torch.zeros(n, device=H.device, dtype=H.dtype)
    if T:
        _launch(f"recur_bwd_r{R}_{kind}", ctas, threads, smem, (WT, H, dH, dhT, dZ, dh0, db, T, N, n))
    elif dhT is not None:
        dh0.copy_(dhT)
    else:
        dh0.zero_()
    return dZ, dh0, db


class _Recurrence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, W, U, b, h0):
        for t in (W, U, b, h0):
            if not (t.is_cuda and t.dtype == torch.float32):
                raise TypeError("recurrence: CUDA float32 tensors only")
        W, U, b, h0 = (t.contiguous() for t in (W, U, b, h0))
        H = forward_kernel(W, U, b, h0)
        ctx.save_for_backward(W, h0, H)
        ctx.set_materialize_grads(False)
        return H

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dH):
        W, h0, H = ctx.saved_tensors
        T, N, n = H.shape
        dH = None if dH is None else dH.contiguous()
        dZ, dh0, db = backward_kernel(W, H, dH, None)
        dW = None
        if ctx.needs_input_grad[0]:  # z_t = u_t + h_{t-1} W: dW = sum_t h_{t-1}ᵀ dz_t, one GEMM
            dW = h0.t() @ dZ[0] if T else torch.zeros_like(W)
            if T > 1:
                dW = torch.addmm(dW, H[:-1].reshape(-1, n).t(), dZ[1:].reshape(-1, n))
        return dW, dZ, db, dh0


def recurrence(W, U, b, h0):
    return _Recurrence.apply(W, U, b, h0)


def reference(W, U, b, h0):
    """The same recurrence in eager torch (the cell loop bench_rnn_step.py's eager variant runs)."""
    h, out = h0, []
    for u in U.unbind(0):
        z = torch.addmm(u, h, W)
        h = torch.sign(z) * torch.relu(z.abs() + b)
        out.append(h)
    return torch.stack(out) if out else U.new_empty(U.shape)


def reference_backward(W, H, h0, dH):
    """(dW, dU, db, dh0) of sum(H * dH) by backpropagation through time in float64, given the
    forward's H (its zeros decide modReLU's mask). Over hundreds of steps eager's float32
    gradients are not a reference: modReLU's dead zone (h exactly 0 where |z| + b <= 0) makes
    the gradient discontinuous in z, and float32 and float64 runs of the same eager loop differ
    by up to ~0.5 of the gradients' largest value at T = 784 (forward values agree to 1e-6)."""
    W, H, h0, dH = (t.detach().double() for t in (W, H, h0, dH))
    T, N, n = H.shape
    dZ = torch.empty_like(H)
    db = torch.zeros(n, dtype=H.dtype, device=H.device)
    dprev = torch.zeros(N, n, dtype=H.dtype, device=H.device)
    for t in range(T - 1, -1, -1):
        s = torch.sign(H[t])
        gs = (dH[t] + dprev) * s
        db += gs.sum(0)
        dZ[t] = gs * s
        dprev = dZ[t] @ W.t()
    Hprev = torch.cat([h0[None], H[:-1]]) if T else H
    dW = torch.einsum("tni,tnj->ij", Hprev, dZ)
    return dW, dZ, db, dprev
