"""reliab round 6 on CUDA (python .gpu/reliab_probes6_cuda.py): the CPU-tested changes whose
eager rules are the same on CUDA (pool/upsample/norm result layouts, bucketize's binary search,
addcmul's dtype and f32 math, split into > 64 pieces, group_norm half in f32). Prints each
mismatch against eager and 'N mismatches' at the end."""
import torch
import torch.nn.functional as F

import torchc

dev = "cuda"
bad = 0


def check(name, f, *args, exact=False):
    global bad
    torchc.reset()
    want = f(*args)
    got = torchc.compile(f)(*args)
    ws = want if isinstance(want, (list, tuple)) else [want]
    gs = got if isinstance(got, (list, tuple)) else [got]
    for w, g in zip(ws, gs):
        ok = w.dtype == g.dtype and w.shape == g.shape
        if ok and w.numel() > 1:
            ok = [s for s, n in zip(w.stride(), w.shape) if n != 1] == [s for s, n in zip(g.stride(), g.shape) if n != 1]
        if ok:
            ok = torch.equal(w, g) if exact or not w.is_floating_point() else torch.allclose(w.float(), g.float(), rtol=1e-2, atol=1e-2, equal_nan=True)
        if not ok:
            bad += 1
            print("MISMATCH", name, w.dtype, g.dtype, tuple(w.shape), w.stride(), g.stride())
    if len(ws) != len(gs):
        bad += 1
        print("MISMATCH", name, "lengths", len(ws), len(gs))


base = torch.randn(4, 6, 4, 6, device=dev)
for lay, x in {"contig": base, "T": base.transpose(1, 3), "cl": base.contiguous(memory_format=torch.channels_last)}.items():
    for name, op in {"max_pool2d": lambda x: F.max_pool2d(x, 2), "avg_pool2d": lambda x: F.avg_pool2d(x, 2),
                     "interp": lambda x: F.interpolate(x, scale_factor=2), "bn": lambda x: F.batch_norm(x, None, None, training=True),
                     "gn": lambda x: F.group_norm(x, 2), "pad": lambda x: F.pad(x, (1, 2)), "roll": lambda x: x.roll(1, 1),
                     "stack-1": lambda x: torch.stack([x, x * 2], -1)}.items():
        check(f"{name} {lay}", op, x)
for dt in (torch.bfloat16, torch.float16):
    xh = (torch.randn(4, 6, 5, 3, device=dev) * 4).round().to(dt)
    check(f"group_norm {dt}", lambda x: F.group_norm(x, 2), xh)
s = torch.tensor([-1.0, -0.0, 0.0, 2.0, float("nan")], device=dev)
xs = torch.tensor([0.0, -0.0, float("nan"), 2.0, 5.0, -5.0], device=dev)
check("bucketize", lambda x, s: (torch.bucketize(x, s), torch.bucketize(x, s, right=True)), xs, s, exact=True)
check("searchsorted rows", lambda s, x: torch.searchsorted(s, x), s.repeat(3, 1), xs.repeat(3, 1), exact=True)
a = torch.arange(24, device=dev).reshape(4, 6)
check("addcmul int", lambda a: torch.addcmul(a, a, a, value=2), a, exact=True)
check("split 500", lambda x: [t * 2 for t in x.split(2, 0)], torch.randn(1000, 3, device=dev))
print(bad, "mismatches")
