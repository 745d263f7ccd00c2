"""reliab round 7 on CUDA (python tools/reliab_probes7_cuda.py): the CPU-tested changes whose
eager rules may hold on CUDA too: rms_norm / one_hot / index_fill result layouts, vector_norm,
cosine_similarity, bilinear interpolate and avg_pool of f16/bf16 (float32 accumulation, one
rounding), lerp's fused multiply-add, list keys indexing as tuples, clamp/pad of bool raising,
torch.tensor of overflowing numbers raising. Prints each mismatch against eager and
'N mismatches' at the end (values: exact, or within one 16-bit ulp where marked)."""
import torch
import torch.nn.functional as F

import torchc

dev = "cuda"
bad = 0


def check(name, f, *args, ulp=False):
    global bad
    torchc.reset()
    try:
        want = f(*args)
    except Exception as e:   # noqa: BLE001
        try:
            torchc.compile(f)(*args)
        except Exception as e2:   # noqa: BLE001
            if type(e2) is not type(e):
                bad += 1
                print("MISMATCH", name, "raised", type(e).__name__, "vs", type(e2).__name__)
            return
        bad += 1
        print("MISMATCH", name, "eager raised", type(e).__name__, "compiled returned")
        return
    got = torchc.compile(f)(*args)
    ws = want if isinstance(want, (list, tuple)) else [want]
    gs = got if isinstance(got, (list, tuple)) else [got]
    for w, g in zip(ws, gs):
        ok = w.dtype == g.dtype and w.shape == g.shape
        if ok and w.numel() > 1:
            ok = [s for s, n in zip(w.stride(), w.shape) if n != 1] == [s for s, n in zip(g.stride(), g.shape) if n != 1]
        if ok:
            if ulp and w.is_floating_point():
                u = w.float().abs() * (2.0 ** (-7 if w.dtype == torch.bfloat16 else -10 if w.dtype == torch.float16 else -23))
                ok = bool(((w.float() - g.float()).abs() <= u + 1e-6).logical_or(w.float() == g.float()).all())  # equal infs
            else:
                ok = torch.equal(w.nan_to_num(1234.5), g.nan_to_num(1234.5))
        if not ok:
            bad += 1
            print("MISMATCH", name, w.dtype, g.dtype, tuple(w.shape), w.stride(), g.stride(),
                  (w.float() - g.float()).abs().max().item() if w.shape == g.shape else "")


def img(shape, dt=torch.float32):
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(float(n), device=dev).reshape(shape).mul(0.37).sin() * 3).to(dt)


xt = img((5, 4)).T
for name, f in {"rms_norm": lambda x: F.rms_norm(x, (5,)), "one_hot": lambda x: F.one_hot(x.abs().long() % 3, 3),
                "index_fill": lambda x: x.index_fill(1, torch.tensor([1, 1], device=dev), -3)}.items():
    check(f"{name} T", f, xt, ulp=True)  # the layout is what is checked; CUDA's fused rms_norm rounds differently
for dt in (torch.bfloat16, torch.float16):
    x = (torch.arange(600.0, device=dev).reshape(3, 200).mul(0.37).sin() * 3).to(dt)
    for p in (2, 0.5, 3):
        check(f"vector_norm p={p} {dt}", lambda x: torch.linalg.vector_norm(x, p, 1), x, ulp=True)
    check(f"cosine_similarity {dt}", lambda x: F.cosine_similarity(x, x.flip(0)), x, ulp=True)
    xi = img((1, 2, 5, 6), dt)[..., 1:]
    check(f"bilinear {dt}", lambda x: F.interpolate(x, size=(8, 9), mode="bilinear"), xi, ulp=True)
    check(f"bicubic {dt}", lambda x: F.interpolate(x, size=(8, 9), mode="bicubic"), xi, ulp=True)
    check(f"linear1d {dt}", lambda x: F.interpolate(x.flatten(2), size=11, mode="linear"), xi, ulp=True)
    check(f"adaptive_avg {dt}", lambda x: F.adaptive_avg_pool2d(x, (5, 1)), xi, ulp=True)
    check(f"avg_pool2d ceil {dt}", lambda x: F.avg_pool2d(x, 2, ceil_mode=True), xi, ulp=True)
a = torch.tensor([100.0, -100.0, 127.0, -128.0] * 5, device=dev)
b = torch.tensor([100.0, 100.0, 1.0, -1.0] * 5, device=dev)
check("lerp 0.3", lambda a, b: torch.lerp(a, b, 0.3), a, b)
check("lerp 0.7", lambda a, b: torch.lerp(a, b, 0.7), a, b)
x3 = torch.arange(60.0, device=dev).reshape(3, 4, 5)
check("list key", lambda x: x[[[0, 2], [1, 1]]], x3)
bt = torch.tensor([True, False], device=dev)
check("clamp bool", lambda b: b.clamp(False, True), bt)
check("pad bool replicate", lambda b: F.pad(b[None], (1, 2), mode="replicate"), bt)
check("tensor overflow", lambda x: x + torch.tensor(300, dtype=torch.uint8, device=dev), x3)
print(bad, "mismatches")
