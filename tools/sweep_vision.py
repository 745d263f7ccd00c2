"""Sweep of real timm and torchvision classification models (random weights, eval, no_grad,
float32, CPU) under torchc.explain: graphs and breaks as Dynamo counts them, break reasons,
max abs difference against eager and benchmarks/suite.py's rule (allclose at 1e-4, else RMSE
against a float64 run at most twice eager's: fp64_rule in the row), exceptions.

timm and torchvision don't import beside this machine's CPU torch wheel; tools/vision_shim.py
makes them import without changing the installed torch (see its docstring):

    pip install --no-deps --target .vision_pkgs torchvision==0.28.0 timm pillow
    python tools/sweep_vision.py                          # writes results/sweep_vision.{json,md}
    python tools/sweep_vision.py --list > benchmarks/results/sweep_vision_models.txt   # (minutes)
    python tools/sweep_vision.py --names benchmarks/results/sweep_vision_models.txt --tag before
    python tools/sweep_vision.py --tag after --models resnet,vit_tiny
    python tools/sweep_vision.py --tag after --rerun benchmarks/results/sweep_vision_before.json:broken,wrong,torchc_raised,crashed

Which models: every torchvision classification model and every timm model, grouped by family
(torchvision: the builder's module; timm: its model module), keeping the --per-family likely smallest
by name (size words: tiny, small, ...) whose parameter count on the meta device is at most
40M; --all keeps them all.
Input: 2x3x64x64; a model that rejects it in eager runs at its own default size
(timm: pretrained_cfg's input_size; torchvision: 224). Models run in worker processes (a crash
or a hang costs one model); not part of make test.
"""
import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
if ROOT not in sys.path:
    sys.path.append(ROOT)  # tools.vision_shim; torchc itself comes from --torchc-path first
B, HW = 2, 64
MAX_PARAMS = 40e6


def _libs():
    import tools.vision_shim  # noqa: F401  (before torchvision)
    import torchvision.models as tvm
    import timm
    return tvm, timm


def builder(name):
    """name ("tv:resnet18" / "timm:vit_tiny_patch16_224") -> (build(**kw), default input hw)"""
    tvm, timm = _libs()
    lib, _, n = name.partition(":")
    if lib == "tv":
        return (lambda **kw: tvm.get_model(n, weights=None, **kw)), 224
    cfg = timm.models.get_pretrained_cfg(n)
    hw = (cfg.input_size[-1] if cfg is not None and getattr(cfg, "input_size", None) else 224)
    return (lambda **kw: timm.create_model(n, pretrained=False, **kw)), hw


def meta_params(name):
    import torch
    build, _ = builder(name)
    try:
        with torch.device("meta"):
            m = build()
        return sum(p.numel() for p in m.parameters())
    except Exception:
        return None


def family(name):
    tvm, timm = _libs()
    lib, _, n = name.partition(":")
    if lib == "tv":
        return "tv:" + tvm.get_model_builder(n).__module__.rsplit(".", 1)[-1]
    return "timm:" + (timm.models._registry._model_to_module.get(n) or n)


def all_models():
    tvm, timm = _libs()
    names = ["tv:" + n for n in tvm.list_models(module=tvm)]
    names += ["timm:" + n for n in timm.list_models()]
    return names


SMALL = ("atto", "femto", "pico", "nano", "tiny", "xxs", "xxsmall", "xs", "xsmall", "mini", "small",
         "s", "lite0", "b0", "t", "050", "075", "100", "mobile", "lite", "base")


def size_rank(name):
    """smaller is likely smaller: the first size word of the name in SMALL's order, then length"""
    parts = re.split(r"[_.]", name.partition(":")[2])
    ranks = [SMALL.index(p) for p in parts if p in SMALL]
    return (min(ranks) if ranks else len(SMALL), len(name), name)


def select(per_family, include_all):
    """per family, the first per_family models by size_rank whose parameter count (on the
    meta device) is at most MAX_PARAMS; at most 4 candidates a family are built"""
    names = all_models()
    if include_all:
        return names
    fams = collections.defaultdict(list)
    for n in names:
        fams[family(n)].append(n)
    out = []
    for f, ns in sorted(fams.items()):
        kept = []
        for n in sorted(ns, key=size_rank)[:4]:
            p = meta_params(n)
            if p is not None and p <= MAX_PARAMS:
                kept.append(n)
            if len(kept) == per_family:
                break
        out += kept
    return out


def tensors_of(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors_of(o)]
    return []


def same(ref, res, tol=1e-4):
    """benchmarks/suite.py's rule without the fp64 fallback: shapes, dtypes, integer equality,
    allclose(atol=rtol=tol); returns (ok, why, max abs diff)"""
    import torch
    if len(ref) != len(res):
        return False, f"{len(res)} outputs, eager {len(ref)}", None
    worst = 0.0
    for i, (a, b) in enumerate(zip(ref, res)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, f"output {i}: {tuple(b.shape)} {b.dtype}, eager {tuple(a.shape)} {a.dtype}", None
        if not a.is_floating_point():
            if not torch.equal(a, b):
                return False, f"output {i}: integer values differ", None
            continue
        d = (a.double() - b.double()).abs().nan_to_num(0.0).max().item() if a.numel() else 0.0
        worst = max(worst, d)
        if not torch.allclose(a, b, atol=tol, rtol=tol, equal_nan=True):
            return False, f"output {i}: max abs diff {d:.3g}", d
    return True, None, worst


def rmse(a, b):
    import torch
    return torch.sqrt(torch.mean(torch.square(a.double() - b.double()))).item()


class Timeout(Exception):
    pass


def _alarm(*a):
    raise Timeout()


def run_one(name, timeout):
    import torch
    import torchc
    row = {"model": name}
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        build, hw0 = builder(name)
        ref = model = x = None
        err = None
        for kw, hw in (({}, HW), ({"img_size": HW}, HW), ({}, hw0)):
            if kw and name.startswith("tv:"):
                continue
            try:
                torch.manual_seed(0)
                model = build(**kw).eval()
                x = torch.randn(B, 3, hw, hw, generator=torch.Generator().manual_seed(0))
                with torch.no_grad():
                    ref = [t.detach().clone() for t in tensors_of(model(x))]
                    ref2 = [t.detach().clone() for t in tensors_of(model(x))]
                row["input"] = [B, 3, hw, hw]
                if kw:
                    row["build_kwargs"] = kw
                break
            except Timeout:
                raise
            except Exception as e:
                err = f"{type(e).__name__}: {str(e)[:200]}"
                ref = None
        if ref is None:
            row.update(status="eager_fail", error=err)
            return row
        row["params"] = sum(p.numel() for p in model.parameters())
        row["eager_deterministic"] = same(ref, ref2)[0]
        row["torchc"] = os.path.dirname(os.path.dirname(os.path.abspath(torchc.__file__)))
        torchc.reset()
        try:
            with torch.no_grad():
                run = torchc.explain(model)
                ex = run(x)
                res = tensors_of(ex.result)
                res2 = tensors_of(run(x).result)  # the second call: the cached compiled code
        except Timeout:
            raise
        except Exception as e:
            row.update(status="torchc_raised", error=f"{type(e).__name__}: {str(e)[:300]}",
                       trace=traceback.format_exc(limit=-3)[-1200:])
            return row
        ok, why, d = same(ref, res)
        if ok:
            ok, why, d2 = same(ref, res2)
            why = why and "second call: " + why
            d = max(d, d2 or 0.0)
        if not ok and d is not None:
            # suite.py's second rule: RMSE against a float64 run at most twice eager's
            try:
                import copy
                with torch.no_grad():
                    f64 = [t.float() for t in tensors_of(copy.deepcopy(model).double()(x.double()))]
                fine = []
                for i, (a, b, c) in enumerate(zip(ref, res, res2)):
                    if a.is_floating_point() and len(f64) == len(ref):
                        e = rmse(f64[i], a)
                        fine.append(max(rmse(f64[i], b), rmse(f64[i], c)) <= 2.0 * e + 1e-5)
                if fine and all(fine):
                    ok, why = True, None
                    row["fp64_rule"] = True
            except Timeout:
                raise
            except Exception as e:
                row["fp64_error"] = f"{type(e).__name__}: {str(e)[:100]}"
        if not ok and not row["eager_deterministic"]:
            ok, why = True, None  # eager disagrees with itself: not held against torchc
        row.update(graphs=ex.graph_count, breaks=ex.graph_break_count, ops=ex.op_count,
                   max_abs_diff=d, reasons=list(ex.break_reasons)[:40],
                   eager_frames=len(ex.eager_frames),
                   status=("whole" if ex.graph_count == 1 and ex.graph_break_count == 0 and not ex.eager_frames
                           else "fallback" if ex.graph_count == 0 else "broken") if ok else "wrong")
        if why:
            row["why"] = why
        return row
    except Timeout:
        row.update(status="timeout", error=f"timeout after {timeout} s")
        return row
    except Exception as e:
        row.update(status="sweep_error", error=f"{type(e).__name__}: {str(e)[:300]}")
        return row
    finally:
        signal.alarm(0)
        row["seconds"] = round(time.time() - t0, 2)


def worker(names, timeout):
    import torch
    torch.set_num_threads(1)  # a shared machine: one core a worker
    import warnings
    warnings.filterwarnings("ignore")
    _libs()
    for n in names:
        print("START " + n, flush=True)
        row = run_one(n, timeout)
        print("RESULT " + json.dumps(row), flush=True)


def reason_key(r):
    """a break reason without its frame and location ("forward (file:line): graph break: X" -> X)"""
    r = re.sub(r"^\S+ \([^()]*\): ", "", r)
    r = r[len("graph break: "):] if r.startswith("graph break: ") else r
    r = re.sub(r"0x[0-9a-f]+", "0x…", r)
    return r[:120]


RAN = ("whole", "broken", "fallback", "wrong", "torchc_raised", "crashed", "timeout")


def write_md(rows, path, meta):
    st = collections.Counter(r["status"] for r in rows)
    ran = [r for r in rows if r["status"] in RAN]
    reasons, per_model = collections.Counter(), collections.Counter()
    for r in rows:
        for k in set(reason_key(x) for x in r.get("reasons", [])):
            per_model[k] += 1
        for x in r.get("reasons", []):
            reasons[reason_key(x)] += 1
    with open(path, "w") as f:
        f.write(f"# Vision sweep ({meta['when']}, torch {meta['torch']}, torchvision {meta['torchvision']}, "
                f"timm {meta['timm']}, commit {meta['commit']}, input {B}x3x{HW}x{HW} float32 CPU eval)\n\n")
        f.write(f"Command: `{meta['command']}`\n\n")
        f.write(f"{len(rows)} models; ran under torchc: {len(ran)}; "
                + ", ".join(f"{k} {v}" for k, v in sorted(st.items())) + "\n\n")
        f.write(f"**Whole (1 graph, 0 breaks, matches eager): {st['whole']} of {len(ran)}; broken "
                f"{st['broken'] + st['fallback']}; wrong {st['wrong']}; crashed/raised/timeout "
                f"{st['crashed'] + st['torchc_raised'] + st['timeout']}**\n\n")
        f.write("## Break reasons (models affected / occurrences)\n\n")
        for k, n in per_model.most_common(40):
            f.write(f"- {n} / {reasons[k]}: {k}\n")
        f.write("\n## Models\n\n| model | status | graphs/breaks | ops | max abs diff | s | reason / error |\n"
                "|---|---|---|---|---|---|---|\n")
        for r in rows:
            g = f"{r['graphs']}/{r['breaks']}" if "graphs" in r else "-"
            d = f"{r['max_abs_diff']:.2g}" if r.get("max_abs_diff") is not None else "-"
            why = r.get("why") or r.get("error") or "; ".join(sorted(set(reason_key(x) for x in r.get("reasons", []))))[:160]
            why = why.replace("|", "\\|").replace("\n", " ")
            f.write(f"| {r['model']} | {r['status']} | {g} | {r.get('ops', '-')} | {d} | {r.get('seconds', '-')} | {why} |\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=None, help="comma-separated substrings of the names (tv:x, timm:y)")
    ap.add_argument("--per-family", type=int, default=1, help="smallest models kept per family")
    ap.add_argument("--all", action="store_true", help="every model (no per-family selection)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many models")
    ap.add_argument("--tag", default="")
    ap.add_argument("--rerun", default=None, metavar="JSON:STATUS,...",
                    help="only the models of an earlier run's JSON with these statuses")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per model")
    ap.add_argument("--chunk", type=int, default=20, help="models per worker process")
    ap.add_argument("--skip-done", action="store_true")
    ap.add_argument("--list", action="store_true", help="print the selected models and stop")
    ap.add_argument("--names", default=None, metavar="FILE",
                    help="the models named in FILE (one a line, as --list prints them), no selection")
    ap.add_argument("--torchc-path", default=ROOT,
                    help="directory holding the torchc package to test (a copy keeps a long run "
                         "apart from rebuilds of this tree)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker is not None:
        worker(a.worker.split(","), a.timeout)
        return 0
    import torch
    tvm, timm = _libs()
    import torchvision
    if a.rerun:
        path, _, sts = a.rerun.rpartition(":")
        names = [r["model"] for r in json.load(open(path))["rows"] if r["status"] in sts.split(",")]
    elif a.names:
        names = [ln.strip() for ln in open(a.names) if ln.strip() and not ln.startswith("#")]
    else:
        names = select(a.per_family, a.all)
    if a.models:
        pats = a.models.split(",")
        names = [n for n in names if any(p in n for p in pats)]
    if a.limit:
        names = names[:a.limit]
    if a.list:
        print("\n".join(names))
        print(len(names), "models")
        return 0
    base = os.path.join(RESULTS, "sweep_vision" + (f"_{a.tag}" if a.tag else ""))
    rows = {}
    if a.skip_done and os.path.exists(base + ".json"):
        rows = {r["model"]: r for r in json.load(open(base + ".json"))["rows"]}
    commit = subprocess.run(["git", "-C", a.torchc_path, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or f"unknown (a copy in {a.torchc_path})"
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "torch": torch.__version__,
            "torchvision": torchvision.__version__, "timm": timm.__version__, "commit": commit,
            "command": "python tools/sweep_vision.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    order = list(dict.fromkeys(list(rows) + names))
    todo = [n for n in names if n not in rows]

    def save():
        out = [rows[n] for n in order if n in rows]
        st = collections.Counter(r["status"] for r in out)
        with open(base + ".json.tmp", "w") as f:
            json.dump({"meta": meta, "summary": dict(st), "rows": out}, f, indent=1)
        os.replace(base + ".json.tmp", base + ".json")
        write_md(out, base + ".md", meta)

    env = dict(os.environ, PYTHONPATH=a.torchc_path + os.pathsep + ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    lock = threading.Lock()

    def run_chunk(chunk):
        p = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__), "--worker", ",".join(chunk),
                              "--timeout", str(a.timeout)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env)
        cur = None
        started = [time.time()]
        done = threading.Event()

        def watchdog():  # SIGALRM can't stop a worker stuck in C: kill it
            while not done.wait(5):
                if cur is not None and time.time() - started[0] > a.timeout + 60:
                    p.kill()
                    return
        threading.Thread(target=watchdog, daemon=True).start()
        for ln in p.stdout:
            if ln.startswith("START "):
                cur = ln.split()[1]
                started[0] = time.time()
            elif ln.startswith("RESULT "):
                r = json.loads(ln[7:])
                cur = None
                g = f"{r.get('graphs', '-')}/{r.get('breaks', '-')}"
                with lock:
                    rows[r["model"]] = r
                    print(f"{r['model']:44s} {r['status']:14s} {g:>7s} {r.get('seconds', 0):6.1f}  "
                          f"{(r.get('why') or r.get('error') or '; '.join(sorted(set(map(reason_key, r.get('reasons', [])))))[:100])}",
                          flush=True)
                    save()
        rc = p.wait()
        done.set()
        if cur is not None:
            with lock:
                rows[cur] = {"model": cur, "status": "crashed", "error": f"worker died (rc {rc})"}
                print(f"{cur:44s} crashed (rc {rc})", flush=True)
                save()

    while todo:
        for i in range(0, len(todo), a.chunk):
            run_chunk(todo[i:i + a.chunk])
        todo = [n for n in todo if n not in rows]
    save()
    st = collections.Counter(r["status"] for r in rows.values())
    print(json.dumps(dict(st)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
