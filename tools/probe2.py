"""Differential probe harness for unseen user-style programs (reliab round 2).

A scenario is a function  scen(C, R)  written as a PyTorch user would write a program:
  C(fn_or_module, **kw)  compiles (torchc.compile) in the compiled run and is the identity in
                         the eager run;
  R(value, tag=None)     records a value (tensors cloned with dtype/shape/strides/requires_grad
                         and .grad; containers, dataclasses, namedtuples walked; anything else
                         by repr);
  R.call(f, *a, **kw)    calls f, recording its result or the type of the exception it raised.
Printed output (stdout) is recorded too. Each scenario runs twice with the same seed, eager
then compiled, and the two records must be equal (floats within tolerance, ints/bools exact).

    python tools/probe2.py [module_with_scenarios ...] [-k substring] [-v] [--dir probes3]

Scenario modules live in tools/probes2/*.py (round 2) and tools/probes3/*.py (round 3, --dir
probes3) and register with @scenario.
"""
import contextlib
import copy
import dataclasses
import importlib
import io
import math
import os
import random
import sys
import traceback

import torch

SCENARIOS = []


def scenario(fn=None, *, strides=True, rtol=1.3e-6, atol=1e-5, exact=False):
    def reg(f):
        f._probe = dict(strides=strides, rtol=rtol, atol=atol, exact=exact)
        SCENARIOS.append(f)
        return f
    return reg(fn) if fn is not None else reg


class _Exc:
    def __init__(self, e):
        self.type = type(e).__name__
        self.msg = str(e)[:200]

    def __repr__(self):
        return f"<raised {self.type}: {self.msg}>"


class _T:
    """A recorded tensor."""

    def __init__(self, t):
        self.dtype = t.dtype
        self.shape = tuple(t.shape)
        self.stride = t.stride() if t.layout == torch.strided else None
        self.requires_grad = t.requires_grad
        self.device = t.device
        self.cls = type(t).__name__
        with torch._C.DisableTorchFunctionSubclass():   # subclasses recorded as plain tensors
            self.val = (t.detach().clone() if t.layout == torch.strided else t.detach().to_dense().clone())
        self.val = self.val.as_subclass(torch.Tensor)
        g = t.grad if (t.is_leaf and t.requires_grad) else None
        self.grad = None if g is None else _T(g)

    def __repr__(self):
        return f"T({self.dtype}, {self.shape}, stride={self.stride}, rg={self.requires_grad})"


def _snap(v, depth=0):
    if depth > 20:
        return repr(v)
    if isinstance(v, torch.Tensor):
        return _T(v)
    if isinstance(v, _Exc):
        return v
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return (type(v).__name__, tuple(_snap(x, depth + 1) for x in v))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [_snap(x, depth + 1) for x in v])
    if isinstance(v, dict):   # state_dict keys of an OptimizedModule carry "_orig_mod." (as torch.compile's)
        return (type(v).__name__, [(repr(k).replace("_orig_mod.", ""), _snap(x, depth + 1)) for k, x in v.items()])
    if isinstance(v, (set, frozenset)):
        return (type(v).__name__, sorted(repr(x) for x in v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, [(f.name, _snap(getattr(v, f.name), depth + 1))
                                   for f in dataclasses.fields(v)])
    if isinstance(v, float):
        return ("float", v)
    if isinstance(v, str):
        return ("str", v.replace("_orig_mod.", ""))
    if isinstance(v, (bool, int, type(None), complex, torch.dtype, torch.device, torch.Size)):
        return (type(v).__name__, v)
    if isinstance(v, torch.nn.Module):
        v = getattr(v, "_orig_mod", v)   # OptimizedModule wraps the module, as torch.compile's
        return ("module", type(v).__name__, v.training,
                [(k, _snap(x)) for k, x in v.state_dict().items()],
                [(k, _snap(p.grad) if p.grad is not None else None) for k, p in v.named_parameters()])
    return ("repr", type(v).__name__, repr(v)[:300])


class Recorder:
    def __init__(self):
        self.items = []

    def __call__(self, v, tag=None):
        self.items.append((tag, _snap(v)))
        return v

    def call(self, f, *a, **kw):
        try:
            r = f(*a, **kw)
        except Exception as e:  # noqa: BLE001 - the point is to record it
            self.items.append(("raised", _Exc(e)))
            return None
        self.items.append(("ret", _snap(r)))
        return r


def _diff(a, b, cfg, path="$"):
    """The first difference between two snapshots, or None."""
    if isinstance(a, _T) or isinstance(b, _T):
        if not (isinstance(a, _T) and isinstance(b, _T)):
            return f"{path}: {a!r} vs {b!r}"
        for k in ("dtype", "shape", "requires_grad", "device", "cls"):
            if getattr(a, k) != getattr(b, k):
                return f"{path}: {k} {getattr(a, k)} vs {getattr(b, k)}"
        if cfg["strides"] and a.stride != b.stride and a.val.numel() > 1:
            # strides of size-1 dims do not matter
            sa = [s for s, n in zip(a.stride, a.shape) if n != 1]
            sb = [s for s, n in zip(b.stride, b.shape) if n != 1]
            if sa != sb:
                return f"{path}: stride {a.stride} vs {b.stride} (shape {a.shape})"
        x, y = a.val, b.val
        if x.dtype.is_floating_point or x.dtype.is_complex:
            if not cfg["exact"]:
                xd, yd = x.double(), y.double()
                tol = cfg["atol"] + cfg["rtol"] * 8 * yd.abs() if x.dtype in (torch.float16, torch.bfloat16) else cfg["atol"] + cfg["rtol"] * yd.abs()
                if x.dtype in (torch.float16, torch.bfloat16):
                    tol = tol + (1e-2 if x.dtype == torch.bfloat16 else 2e-3) * yd.abs()
                same_nan = xd.isnan() == yd.isnan()
                fin = ~(xd.isnan() | yd.isnan())
                bad = ~same_nan | (fin & ~((xd == yd) | ((xd - yd).abs() <= tol)))
                if bad.any():
                    i = bad.nonzero()[0].tolist()
                    return f"{path}: values differ at {i}: {x[tuple(i)].item()} vs {y[tuple(i)].item()} (max abs diff {(xd - yd)[fin].abs().max().item() if fin.any() else 'nan'})"
            elif x.is_complex() and not torch.equal(torch.view_as_real(x.cdouble()).nan_to_num(1234.5),
                                                    torch.view_as_real(y.cdouble()).nan_to_num(1234.5)):
                return f"{path}: values differ (exact)"
            elif not x.is_complex() and not torch.equal(x.nan_to_num(1234.5), y.nan_to_num(1234.5)):
                return f"{path}: values differ (exact)"
        elif not torch.equal(x, y):
            return f"{path}: values differ: {x.flatten()[:8].tolist()} vs {y.flatten()[:8].tolist()}"
        if (a.grad is None) != (b.grad is None):
            return f"{path}.grad: {a.grad!r} vs {b.grad!r}"
        if a.grad is not None:
            return _diff(a.grad, b.grad, cfg, path + ".grad")
        return None
    if isinstance(a, _Exc) or isinstance(b, _Exc):
        if not (isinstance(a, _Exc) and isinstance(b, _Exc)):
            return f"{path}: {a!r} vs {b!r}"
        if a.type != b.type:
            return f"{path}: raised {a.type} vs {b.type} ({a.msg} | {b.msg})"
        return None
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == 2 and a[:1] == ("float",) and b[:1] == ("float",):
        x, y = a[1], b[1]
        if math.isnan(x) and math.isnan(y):
            return None
        if x == y or (cfg["exact"] is False and abs(x - y) <= cfg["atol"] + cfg["rtol"] * abs(y)):
            return None
        return f"{path}: {x!r} vs {y!r}"
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}: {a!r:.300} vs {b!r:.300}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, cfg, f"{path}[{i}]")
            if d:
                return d
        return None
    if a != b:
        return f"{path}: {a!r:.300} vs {b!r:.300}"
    return None


def _seed(s=0):
    torch.manual_seed(s)
    random.seed(s)


def run_one(scen, verbose=False):
    import torchc
    cfg = scen._probe
    recs = []
    info = {}
    for compiled in (False, True):
        torchc.reset()
        R = Recorder()
        made = []

        def C(f, **kw):
            if not compiled:
                return f
            c = torchc.compile(f, **kw)
            made.append(c)
            return c
        out = io.StringIO()
        _seed(0)
        try:
            with contextlib.redirect_stdout(out):
                scen(C, R)
        except Exception as e:  # noqa: BLE001
            R.items.append(("scenario raised", _Exc(e)))
            if compiled or verbose:
                info["tb"] = traceback.format_exc()
        R.items.append(("stdout", ("str", out.getvalue())))
        if compiled:
            st = torchc._C.stats()
            info["stats"] = {k: st.get(k) for k in ("frames", "compiles", "fallbacks",
                                                    "limit_fallbacks", "internal_faults")}
        recs.append(R.items)
    d = _diff(recs[0], recs[1], cfg)
    return d, info, recs


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("mods", nargs="*")
    ap.add_argument("-k", default=None)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--dir", default="probes2", help="the folder of scenario modules under tools/")
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(1, os.path.dirname(here))
    mods = args.mods or sorted(f[:-3] for f in os.listdir(os.path.join(here, args.dir))
                               if f.endswith(".py") and not f.startswith("_"))
    for m in mods:
        importlib.import_module(args.dir + "." + m.replace(".py", "").split("/")[-1])
    import probe2  # the scenario modules register there (this file runs as __main__)
    nfail = 0
    for s in probe2.SCENARIOS:
        name = f"{s.__module__}.{s.__name__}"
        if args.k and args.k not in name:
            continue
        d, info, recs = probe2.run_one(s, args.v)
        st = info.get("stats", {})
        tag = "FAIL" if d else "ok  "
        if d:
            nfail += 1
        print(f"{tag} {name}  compiles={st.get('compiles')} fallbacks={st.get('fallbacks')}"
              f" faults={st.get('internal_faults')}" + (f"\n     {d}" if d else ""), flush=True)
        if (d or args.v) and "tb" in info:
            print("     " + info["tb"].replace("\n", "\n     "))
    print(f"{nfail} failed")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
