"""mode="max-autotune": choices torchc times instead of guessing.

Convolutions (2-d, any device): ATen's kernel for the conv's shapes is timed reading and
writing NCHW (contiguous) and NHWC (channels-last) tensors, on scratch tensors of the
captured shapes, dtype and device, and the faster layout is captured (dynamo_hook/ops_extern.c
asks at capture time, when torchc.config.conv_layout is "auto"). Without max-autotune the
layout is fixed (channels-last on CUDA for 16-bit floats, NCHW otherwise). CUDA GEMMs are
timed at their first call (inductor_c/runtime/cuda.c, template vs cuBLASLt). CPU GEMMs run
with ATen: there is no other choice to time.

Each decision is cached per (shapes, parameters, dtype, device) for the process and logged on
torchc.perf. torchc.reset() forgets them.
"""
import logging
import statistics
import time

import torch

log = logging.getLogger("torchc.perf")

_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
           "f64": torch.float64}
_choices = {}   # key -> True (channels-last) / False
decisions = []  # (key, nchw seconds, nhwc seconds, chose channels-last): tests, explain


def reset():
    _choices.clear()
    decisions.clear()


def _time(fn, sync, budget=0.25, reps=7):
    """median seconds of fn() over up to reps runs after one warm-up, within budget"""
    fn()
    sync()
    out, t_end = [], time.perf_counter() + budget
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end:
            break
    return statistics.median(out)


def conv_channels_last(xs, ws, stride, padding, dilation, groups, dtype, device, bias):
    """True when ATen's conv of these shapes ran faster on channels-last tensors."""
    key = (tuple(xs), tuple(ws), tuple(stride), tuple(padding), tuple(dilation), groups, dtype,
           device, bool(bias))
    hit = _choices.get(key)
    if hit is not None:
        return hit
    dt = _DTYPES.get(dtype)
    if dt is None or len(xs) != 4:
        return False
    dev = torch.device("cpu" if device < 0 else f"cuda:{device}")
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    with torch.no_grad():
        x = torch.randn(xs, dtype=dt, device=dev)
        w = torch.randn(ws, dtype=dt, device=dev)
        b = torch.randn(ws[0], dtype=dt, device=dev) if bias else None
        xl = x.contiguous(memory_format=torch.channels_last)
        wl = w.contiguous(memory_format=torch.channels_last)
        conv = torch.nn.functional.conv2d
        t_nchw = _time(lambda: conv(x, w, b, stride, padding, dilation, groups), sync)
        t_nhwc = _time(lambda: conv(xl, wl, b, stride, padding, dilation, groups), sync)
    cl = t_nhwc < t_nchw
    _choices[key] = cl
    decisions.append((key, t_nchw, t_nhwc, cl))
    log.info("max-autotune: conv x=%s w=%s stride=%s padding=%s groups=%d %s on %s: NCHW %.3f ms, "
             "channels-last %.3f ms -> %s", list(xs), list(ws), list(stride), list(padding), groups,
             dtype, dev, t_nchw * 1e3, t_nhwc * 1e3, "channels-last" if cl else "NCHW")
    return cl
