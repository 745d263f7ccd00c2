"""Refcount-leak check over probe scenarios: each scenario runs eagerly and compiled several
times; Python's allocated blocks (sys.getallocatedblocks) and gc-tracked objects after the
warm-up runs must not grow per run more under torchc than eagerly.

    python tools/probes4/_leakcheck.py [--dir probes4] [module ...] [-k substring] [-n 4]
"""
import argparse
import contextlib
import gc
import importlib
import io
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(1, os.path.dirname(os.path.dirname(HERE)))

import probe2  # noqa: E402
import torch  # noqa: E402
import torchc  # noqa: E402


def _run(scen, compiled):
    torchc.reset()
    R = probe2.Recorder()

    def C(f, **kw):
        return torchc.compile(f, **kw) if compiled else f
    probe2._seed(0)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            scen(C, R)
        except Exception:  # noqa: BLE001
            pass
    del R, C


def _growth(scen, compiled, n):
    for _ in range(3):
        _run(scen, compiled)
    gc.collect()
    b0, o0 = sys.getallocatedblocks(), len(gc.get_objects())
    for _ in range(n):
        _run(scen, compiled)
    torchc.reset()
    gc.collect()
    return (sys.getallocatedblocks() - b0) / n, (len(gc.get_objects()) - o0) / n


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("mods", nargs="*")
    ap.add_argument("-k", default=None)
    ap.add_argument("-n", type=int, default=4)
    ap.add_argument("--dir", default="probes4")
    args = ap.parse_args(argv)
    folder = os.path.join(os.path.dirname(HERE), args.dir)
    mods = args.mods or sorted(f[:-3] for f in os.listdir(folder)
                               if f.endswith(".py") and not f.startswith("_") )
    for m in mods:
        importlib.import_module(args.dir + "." + m)
    bad = 0
    for s in probe2.SCENARIOS:
        name = f"{s.__module__}.{s.__name__}"
        if args.k and args.k not in name:
            continue
        eb, eo = _growth(s, False, args.n)
        cb, co = _growth(s, True, args.n)
        leak = (cb - eb) > 20 or (co - eo) > 5
        bad += leak
        print(f"{'LEAK' if leak else 'ok  '} {name}  blocks/run eager {eb:+.0f} torchc {cb:+.0f}  "
              f"objects/run eager {eo:+.0f} torchc {co:+.0f}", flush=True)
    print(f"{bad} leaking")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
