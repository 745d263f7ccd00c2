"""Shared timing helpers: medians of repeated runs, all variants measured in one process."""
import statistics
import time

import torch


def bench(fn, *args, warmup=3, reps=20, min_time=0.2):
    """Median seconds per call of fn(*args) (after warmup)."""
    for _ in range(warmup):
        fn(*args)
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


def torch_compile_available():
    try:
        import torch._dynamo  # noqa: F401
        return hasattr(torch, "compile")
    except Exception:  # pragma: no cover
        return False
