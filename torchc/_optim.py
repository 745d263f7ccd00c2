"""Compiled optimizer steps (issue 22, deliverable 7): SGD, Adam and AdamW as fused
multi-tensor graphs.

`Optimizer.step` of every torch.optim optimizer is one wrapper code object
(Optimizer.profile_hook_step's `wrapper`). torchc registers that code with the frame hook
(dynamo_hook/redirect.c): when a frame of it starts inside a torchc-compiled call —
`torchc.compile(opt.step)()`, or `opt.step()` in a compiled training step, where the capture
breaks the graph at the call — `step` below runs in its place. It keeps torch.optim's
bookkeeping in Python (param_groups, which params have a grad, state initialization exactly as
torch's `_init_group`, the step counters) and hands the arithmetic to one torchc-compiled
kernel per parameter group, dtype and device: the parameters, gradients and state tensors are
graph inputs the graph mutates in place (replayed exactly, as any mutated input), so the
update of every parameter of the group is one graph.

Numerics follow torch.optim's single-tensor implementation: the scalars torch computes in
Python doubles (lr, the bias corrections, 1 - lr * weight_decay, ...) are computed the same way
here, rounded to the parameters' dtype as torch's scalar arguments are, and passed as one
tensor input `hp` — so a learning-rate change (a scheduler writing param_groups[i]["lr"])
changes an input, never a guard: no recompile. Only structure is specialized (how many
params, their shapes, momentum on/off, nesterov, maximize, amsgrad, the first SGD step).

Anything else — another optimizer class or a subclass overriding step/_init_group, hooks,
closure, fused/capturable/differentiable, complex or sparse gradients, tensor betas, the
profiler — returns NotImplemented: torch's own step runs, unchanged.
"""
import types

import torch

from . import _C

_kernels = {}  # (id(opt), group index, kernel name, device, dtype) -> compiled kernel


# ---- kernels: traced by torchc (their code objects are allowed; torchc/ is skipped) ----------
# hp[i] holds parameter i's scalars, already rounded to the parameter dtype as torch rounds
# its Python-float arguments. Written as torch's single-tensor loops, op for op:
# add(alpha=a) is x + a * y; addcmul(value=v) is x + v * t1 * t2; addcdiv(value=v) is
# x + v * t1 / t2; lerp(w) is x + w * (y - x) for |w| < 0.5, else y - (y - x) * (1 - w).

def _sgd_kernel(params, grads, bufs, hp, wd_on, momentum_on, nesterov, maximize, fresh, grad_out=False):
    for i in range(len(params)):
        p = params[i]
        g = grads[i]
        h = hp[i]
        if maximize:
            g = -g
        if wd_on:
            g = g + h[1] * p
        if momentum_on:
            buf = bufs[i]
            if fresh[i]:
                buf.copy_(g)
            else:
                buf.mul_(h[2]).add_(h[3] * g)
            if nesterov:
                g = g + h[2] * buf
                if grad_out:  # torch's foreach path adds into the gradient itself
                    grads[i].copy_(g)
            else:
                g = buf
        p.add_(h[0] * g)


def _adam_kernel(params, grads, exp_avgs, exp_avg_sqs, max_sqs, hp, wd_mode, small_w, amsgrad,
                 maximize):
    # hp[i]: 0 -step_size, 1 sqrt(bias_correction2), 2 eps, 3 1 - beta1 (lerp weight),
    #        4 beta2, 5 1 - beta2, 6 weight_decay or 1 - lr * weight_decay (decoupled)
    for i in range(len(params)):
        p = params[i]
        g = grads[i]
        h = hp[i]
        if maximize:
            g = -g
        if wd_mode == 2:
            p.mul_(h[6])
        elif wd_mode == 1:
            g = g + h[6] * p
        ea = exp_avgs[i]
        if small_w:
            ea.add_(h[3] * (g - ea))
        else:
            ea.copy_(g - (g - ea) * (1 - h[3]))
        eas = exp_avg_sqs[i]
        eas.mul_(h[4]).add_(h[5] * g * g)
        if amsgrad:
            m = max_sqs[i]
            m.copy_(torch.maximum(m, eas))
            denom = m.sqrt() / h[1] + h[2]
        else:
            denom = eas.sqrt() / h[1] + h[2]
        p.add_(h[0] * ea / denom)


def _kernel(opt, gi, base, device, dtype):
    """The compiled kernel of one optimizer's group, device and dtype: a code object of its
    own (code.replace) so that each keeps its own cache entries and recompile budget."""
    key = (id(opt), gi, base.__name__, device, dtype)
    k = _kernels.get(key)
    if k is None or k[0]() is not opt:
        import weakref
        code = base.__code__.replace()
        _C.allow_code(code)
        fn = types.FunctionType(code, base.__globals__, base.__name__)
        cf = _C.CompiledFunction(fn, False, 0, 64)
        ref = weakref.ref(opt, lambda _r, key=key: _kernels.pop(key, None))
        k = _kernels[key] = (ref, cf)
    return k[1]


# ---- the step ------------------------------------------------------------------------------

_STEP_CODE = None  # Optimizer.profile_hook_step's wrapper code (the code every step runs)


def _inner(f):
    while hasattr(f, "__wrapped__"):  # profile_hook_step and _use_grad_for_differentiable
        f = f.__wrapped__
    return getattr(f, "__code__", None)


def _plain(opt, cls):
    """opt's class is cls or a subclass that keeps cls's step and _init_group."""
    t = type(opt)
    return (isinstance(opt, cls) and _inner(t.step) is _inner(cls.step) and
            _inner(t._init_group) is _inner(cls._init_group))


def _scalar(x):
    if isinstance(x, torch.Tensor):
        if x.numel() != 1 or x.requires_grad:
            return None
        return x.item()
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _groups_by_key(params):
    """Indices of params by (device, dtype), in order."""
    out = {}
    for i, p in enumerate(params):
        out.setdefault((p.device, p.dtype), []).append(i)
    return out


def _hp(rows, dtype, device):
    # torch rounds a Python scalar to the op's computation dtype: float32 for half types
    hd = torch.float64 if dtype == torch.float64 else torch.float32
    t = torch.tensor(rows, dtype=torch.float64).to(hd)
    return t.to(device, non_blocking=True) if device.type != "cpu" else t


def _default_foreach(params):
    """torch.optim's choice for foreach=None (and fused=None): foreach for CUDA tensors"""
    from torch.optim.optimizer import _default_to_fused_or_foreach
    return _default_to_fused_or_foreach(params, False, use_fused=False)[1]


def _sgd_step(opt):
    for gi, group in enumerate(opt.param_groups):
        lr, wd, mom, damp = (_scalar(group[k]) for k in ("lr", "weight_decay", "momentum", "dampening"))
        if None in (lr, wd, mom, damp):
            return False
    for gi, group in enumerate(opt.param_groups):
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        lr, wd, mom, damp = (float(_scalar(group[k])) for k in ("lr", "weight_decay", "momentum", "dampening"))
        grads = [p.grad for p in params]
        bufs, fresh = [], []
        if mom != 0:
            for p, g in zip(params, grads):
                b = opt.state[p].get("momentum_buffer")
                fresh.append(b is None)
                bufs.append(torch.empty_like(g) if b is None else b)
        # torch's foreach SGD (foreach=True, or None on CUDA) with nesterov momentum and
        # neither weight decay nor maximize updates p.grad in place: g += momentum * buf
        foreach = group["foreach"]
        if foreach is None:
            foreach = _default_foreach(params)
        grad_out = bool(foreach and group["nesterov"] and mom != 0 and wd == 0 and not group["maximize"])
        for (device, dtype), idx in _groups_by_key(params).items():
            hp = _hp([[-lr, wd, mom, 1 - damp]] * len(idx), dtype, device)
            k = _kernel(opt, gi, _sgd_kernel, device, dtype)
            k([params[i] for i in idx], [grads[i] for i in idx],
              [bufs[i] for i in idx] if mom != 0 else [], hp, wd != 0, mom != 0,
              bool(group["nesterov"]), bool(group["maximize"]),
              tuple(fresh[i] for i in idx) if mom != 0 else (), grad_out)
        if mom != 0:
            for p, b in zip(params, bufs):
                opt.state[p]["momentum_buffer"] = b
    return True


def _adam_step(opt):
    for group in opt.param_groups:
        if group.get("capturable"):
            return False
        vals = [_scalar(group["lr"]), _scalar(group["eps"]), _scalar(group["weight_decay"])]
        betas = group["betas"]
        if None in vals or any(isinstance(b, torch.Tensor) or _scalar(b) is None for b in betas):
            return False
        for p in group["params"]:
            if p.grad is not None and (p.grad.is_sparse or torch.is_complex(p)):
                return False
            if p.grad is not None and len(opt.state[p]) != 0:
                st = opt.state[p]["step"]
                if not isinstance(st, torch.Tensor) or st.device.type != "cpu":
                    return False
    for gi, group in enumerate(opt.param_groups):
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            continue
        lr, eps, wd = (float(_scalar(group[k])) for k in ("lr", "eps", "weight_decay"))
        beta1, beta2 = (float(b) for b in group["betas"])
        amsgrad = bool(group["amsgrad"])
        decoupled = bool(group.get("decoupled_weight_decay", isinstance(opt, torch.optim.AdamW)))
        grads = [p.grad for p in params]
        eas, easq, maxs, steps = [], [], [], []
        for p in params:  # torch's Adam._init_group
            st = opt.state[p]
            if len(st) == 0:
                st["step"] = torch.tensor(0.0, dtype=torch.float64 if torch.get_default_dtype() == torch.float64
                                          else torch.float32, device="cpu")
                st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                if amsgrad:
                    st["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            eas.append(st["exp_avg"])
            easq.append(st["exp_avg_sq"])
            if amsgrad:
                maxs.append(st["max_exp_avg_sq"])
            steps.append(st["step"])
        torch._foreach_add_(steps, 1)  # step_t += 1
        rows = []
        for step in torch.stack(steps).tolist() if len(steps) > 1 else [steps[0].item()]:
            bc1 = 1 - beta1 ** step
            bc2 = 1 - beta2 ** step
            step_size = lr / bc1
            rows.append([-step_size, bc2 ** 0.5, eps, 1 - beta1, beta2, 1 - beta2,
                         1 - lr * wd if decoupled else wd])
        wd_mode = 0 if wd == 0 else 2 if decoupled else 1
        for (device, dtype), idx in _groups_by_key(params).items():
            hp = _hp([rows[i] for i in idx], dtype, device)
            k = _kernel(opt, gi, _adam_kernel, device, dtype)
            k([params[i] for i in idx], [grads[i] for i in idx], [eas[i] for i in idx],
              [easq[i] for i in idx], [maxs[i] for i in idx] if amsgrad else [], hp, wd_mode,
              abs(1 - beta1) < 0.5, amsgrad, bool(group["maximize"]))
    return True


def step(*args, **kwargs):
    """Runs in place of a frame of Optimizer.step's wrapper (args = (optimizer, *step args)):
    the step's result (None), or NotImplemented when torch's own step must run instead."""
    if len(args) != 1 or kwargs or not isinstance(args[0], torch.optim.Optimizer):
        return NotImplemented  # a closure (or anything else): torch's step
    opt = args[0]
    from torch.optim import optimizer as _o
    if (opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks or
            _o._global_optimizer_pre_hooks or _o._global_optimizer_post_hooks or
            torch.autograd.profiler._is_profiler_enabled or getattr(opt, "grad_scale", None) is not None or
            getattr(opt, "found_inf", None) is not None):
        return NotImplemented
    for group in opt.param_groups:
        if group.get("fused") or group.get("differentiable"):
            return NotImplemented
    if _plain(opt, torch.optim.SGD):
        run = _sgd_step
    elif _plain(opt, torch.optim.Adam):  # AdamW: Adam with decoupled_weight_decay
        run = _adam_step
    else:
        return NotImplemented
    with torch.no_grad():
        if not run(opt):
            return NotImplemented
    return None


def install():
    """Registers `step` for Optimizer.step's wrapper code with the frame hook."""
    global _STEP_CODE
    wrapper = torch.optim.Optimizer.profile_hook_step(lambda *a, **k: None)
    _STEP_CODE = wrapper.__code__
    _C.set_frame_redirect(_STEP_CODE, step)
