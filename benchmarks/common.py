"""Shared timing helpers: medians of repeated runs, all variants measured in one process."""
import statistics
import time

import torch


def tier_wait():
    """Tiered CPU code (torchc.config.cpu_tiers): wait for the optimized code of the graphs compiled
    so far, so that what is timed is the code a long run runs (a no-op without torchc or tiers)."""
    import sys
    tc = sys.modules.get("torchc")
    getattr(getattr(tc, "_C", None), "tier_wait", lambda: None)()


def bench(fn, *args, warmup=3, reps=20, min_time=0.2):
    """Median seconds per call of fn(*args) (after warmup)."""
    for _ in range(warmup):
        fn(*args)
    tier_wait()
    times = []
    t_end = time.perf_counter() + min_time
    while len(times) < reps or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
        if len(times) > 2000:
            break
    return statistics.median(times)


def first_call(fn, *args):
    """Seconds of the first call (compile + run) and its result."""
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def max_abs_err(a, b):
    if isinstance(a, torch.Tensor):
        return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
    return max(max_abs_err(x, y) for x, y in zip(a, b))


def first_tensor(out):
    """the tensor a model's output stands for: itself, .logits, .last_hidden_state, or the
    first tensor of a tuple, list or dict (transformers' ModelOutput)"""
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    if isinstance(out, (tuple, list)):
        return first_tensor(out[0])
    if isinstance(out, dict):
        return first_tensor(next(iter(out.values())))
    raise TypeError(type(out))


def torch_compile_available():
    try:
        import torch._dynamo  # noqa: F401
        return hasattr(torch, "compile")
    except Exception:  # pragma: no cover
        return False


# TORCHC_ variables read outside the settings table (ic_config.h): logging (torchc/)
_ENV_OUTSIDE_TABLE = {"TORCHC_LOGS"}


def ab_pairs(setting):
    """An --ab option's "VAR=VALUE[;VAR=VALUE...]" as [(VAR, VALUE)]. ValueError for a TORCHC_
    variable that torchc does not read (a removed A/B knob such as TORCHC_GPU_V2 would time the
    same code twice and report it as a comparison)."""
    import torchc
    known = {e["env"] for e in torchc._C.config_table()} | _ENV_OUTSIDE_TABLE
    pairs = [tuple(p.partition("=")[::2]) for p in setting.split(";") if p]
    bad = [v for v, _ in pairs if v.startswith("TORCHC_") and v not in known]
    if bad:
        raise ValueError(f"--ab {setting!r}: torchc reads no {', '.join(bad)} (see print(torchc.config))")
    return pairs
