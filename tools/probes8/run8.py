"""Run round-8 scenarios and list every differing record (not just the first):
    python tools/probes8/run8.py MODULE [-k name] [--why]
--why: also list the reasons of the compiled run's fallbacks / graph breaks (distinct)."""
import importlib
import os
import sys

here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, here)
sys.path.insert(1, os.path.dirname(here))
import probe2  # noqa: E402


def report(k=None, why=False):
    """runs probe2.SCENARIOS (those whose name holds k) and prints every differing record;
    why: the compiled run's fallback / break reasons too (probes9 uses it as well)"""
    import torchc
    tot = bad = 0
    for s in probe2.SCENARIOS:
        if k and k not in s.__name__:
            continue
        if why:
            torchc._C.explain_start()
        try:
            d, info, recs = probe2.run_one(s)
        finally:
            reasons = torchc._C.explain_stop() if why else []
        a, b = recs
        n = 0
        for i, (x, y) in enumerate(zip(a, b)):
            tot += 1
            dd = probe2._diff(x, y, s._probe, f"[{i}]")
            if dd:
                n += 1
                print(f"  {s.__name__}{dd[:300]}")
        if len(a) != len(b):
            print(f"  {s.__name__}: record lengths {len(a)} vs {len(b)}")
        bad += n
        print(f"{'FAIL' if n else 'ok  '} {s.__name__} ({len(a)} records, {n} differ) {info.get('stats')}", flush=True)
        if "tb" in info:
            print(info["tb"])
        seen = set()
        for r in reasons:
            why_s = r.get("reason") or r.get("break_reason")
            if why_s and why_s not in seen:
                seen.add(why_s)
                print(f"    [{r.get('event')}] {str(why_s)[:200]}")
    print(f"records {tot}, differing {bad}")


def main(argv):
    why = "--why" in argv
    argv = [a for a in argv if a != "--why"]
    mod, k = argv[0], (argv[2] if len(argv) > 2 and argv[1] == "-k" else None)
    importlib.import_module("probes8." + mod)
    report(k, why)


if __name__ == "__main__":
    main(sys.argv[1:])
