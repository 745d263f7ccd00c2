"""Training steps: eager vs torch.compile vs torchc in one run (issue 22).

A full step is forward, loss, backward and an optimizer step (torch.optim SGD by default;
--optimizer sgd-momentum|adamw). Only the model is compiled unless --compile-step, which
compiles opt.step by the same system too; the loss is computed eagerly on its output. For each model:
median ms a step, speedup over eager, first-step seconds (compile included), peak memory of
the steady-state steps, the first step's loss against eager's, and torchc's graph / backward
graph / break counts and saved bytes (torchc.explain).

Dropout and stochastic depth are set to p=0 in every system (all three then run the same math).

    GPU: python benchmarks/train.py --device cuda --precision amp --budget-s 470
         (ResNet-50, ViT-B/16, BERT-base MLM, GPT-2 LM first, then 11 more: torchvision CNNs and
         transformers models of the suite runner, benchmarks/suite.py; each model in its own
         process, capped at --model-cap-s and by what is left of --budget-s; a model cut short
         keeps the systems it finished; results and a plot in benchmarks/results/train_<dev>_<prec>.*)
         [--batch 32] [--only resnet50,bert] [--no-torch-compile] [--json PATH]
    CPU: python benchmarks/train.py --device cpu     (a transformer block, an MLP, a GRU cell)
         python benchmarks/train.py --device cpu --optimizer adamw --compile-step

--precision bf16: bf16 weights and inputs; amp: fp32 weights under torch.autocast(bf16)
(torchc captures the matmul/conv/attention family under autocast with eager's casts,
dynamo_hook/autocast.c; ops autocast changes that it has no policy for break the graph).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402
from common import first_tensor, tier_wait  # noqa: E402


def no_randomness(m):
    for mod in m.modules():
        if isinstance(mod, nn.Dropout) or type(mod).__name__ in ("StochasticDepth", "DropPath"):
            mod.p = 0.0
        for attr in ("drop_prob", "dropout", "attention_dropout"):
            if isinstance(getattr(mod, attr, None), float):
                setattr(mod, attr, 0.0)
    return m


def gpu_models(batch):
    """(name, make, inputs, labels, loss kind), the four of issue 22 first"""
    out = []
    try:
        import torchvision.models as tvm
        img = lambda: (torch.randn(batch, 3, 224, 224),)
        cls = lambda: torch.randint(0, 1000, (batch,))
        for name in ["resnet50", "vit_b_16", "resnet18", "mobilenet_v3_large", "efficientnet_b0",
                     "convnext_tiny", "regnet_y_400mf", "swin_t", "densenet121"]:
            out.append((name, getattr(tvm, name), img, cls, "cls"))
    except Exception as e:  # pragma: no cover
        print(f"torchvision unavailable: {e}")
    try:
        import transformers as tf
        ids = lambda: (torch.randint(0, 30000, (batch, 128)),)
        lab = lambda: torch.randint(0, 30000, (batch, 128))
        out[2:2] = [
            ("bert_base_mlm", lambda: tf.BertForMaskedLM(tf.BertConfig()), ids, lab, "lm"),
            ("gpt2_lm", lambda: tf.GPT2LMHeadModel(tf.GPT2Config()), ids, lab, "lm"),
        ]
        out += [
            ("distilbert_mlm", lambda: tf.DistilBertForMaskedLM(tf.DistilBertConfig()), ids, lab, "lm"),
            ("roberta_base_mlm", lambda: tf.RobertaForMaskedLM(tf.RobertaConfig(vocab_size=30000)), ids, lab, "lm"),
            ("albert_base_mlm", lambda: tf.AlbertForMaskedLM(tf.AlbertConfig(vocab_size=30000)), ids, lab, "lm"),
        ]
        import suite  # the suite runner's decoder LMs (6 layers, d 768, seq 256)
        S = suite.Scale(False, batch // 4 or 1)
        hf = suite.hf_models(S)
        for n in ["hf_llama", "hf_qwen2", "hf_mistral"]:
            build, inp = hf[n]
            out.append((n + "_lm", build, lambda inp=inp: inp("cpu"), lambda: suite._ids(S, "cpu"), "lm"))
    except Exception as e:  # pragma: no cover
        print(f"transformers unavailable: {e}")
    return out


class SdpaBlock(nn.Module):
    """the pre-LN block with F.scaled_dot_product_attention (causal) for its attention"""

    def __init__(self, d=256, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def cpu_models(batch):
    from run import MLP, GRUCell, PreLNBlock
    return [
        ("mlp_784_1024_1024_10", MLP, lambda: (torch.randn(batch * 8, 784),), lambda: torch.randint(0, 10, (batch * 8,)), "cls"),
        ("preln_block_d256_t128", PreLNBlock, lambda: (torch.randn(batch, 128, 256),), None, "mse"),
        ("sdpa_block_d256_t128", SdpaBlock, lambda: (torch.randn(batch, 128, 256),), None, "mse"),
        ("gru_cell_t32_d256", GRUCell, lambda: (torch.randn(32, batch, 256), torch.randn(batch, 256)), None, "mse"),
    ]


def loss_of(kind, out, y):
    o = first_tensor(out)
    if kind == "lm":
        return F.cross_entropy(o.float().reshape(-1, o.shape[-1]), y.reshape(-1))
    if kind == "cls":
        return F.cross_entropy(o.float(), y)
    return o.float().pow(2).mean()


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def timed_steps(step, dev, reps, warmup):
    for _ in range(warmup):
        step()
    tier_wait()
    sync(dev)
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        sync(dev)
        ts.append((time.perf_counter() - t0) * 1e3)
    peak = torch.cuda.max_memory_allocated() / 2**20 if dev == "cuda" else float("nan")
    return statistics.median(ts), peak


def run_model(name, make, inputs, labels, kind, a, precision, partial=None):
    dev = a.device
    dt = torch.bfloat16 if precision == "bf16" else torch.float32
    torch.manual_seed(0)
    base = no_randomness(make()).to(dev, dt).train()
    xin = inputs()
    kw = {}
    if isinstance(xin, dict):  # keyword inputs (the suite runner's transformers models)
        kw = {k: t.to(dev, dt) if t.is_floating_point() else t.to(dev) for k, t in xin.items()}
        xin = ()
    x = tuple(t.to(dev, dt) if t.is_floating_point() else t.to(dev) for t in xin)
    y = labels().to(dev) if labels else None
    state = {k: v.clone() for k, v in base.state_dict().items()}
    amp = (lambda: torch.autocast(dev, dtype=torch.bfloat16)) if precision == "amp" else None
    row = {"name": name, "precision": precision}

    def system(label, wrap):
        m = no_randomness(make()).to(dev, dt).train()
        m.load_state_dict(state)
        fn = wrap(m)
        opt = (torch.optim.AdamW(m.parameters(), lr=1e-3) if a.optimizer == "adamw"
               else torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9 if a.optimizer == "sgd-momentum" else 0))
        # --compile-step: the optimizer step compiled by the same system (torchc: one fused
        # graph per param group, torchc/_optim.py; torch.compile: Dynamo's compiled step)
        opt_step = wrap(opt.step) if a.compile_step and label != "eager" else opt.step

        def step():
            if amp:
                with amp():
                    out = fn(*x, **kw)
                    loss = loss_of(kind, out, y)
            else:
                out = fn(*x, **kw)
                loss = loss_of(kind, out, y)
            loss.backward()
            opt_step()
            opt.zero_grad(set_to_none=True)
            return loss

        sync(dev)
        t0 = time.perf_counter()
        loss0 = step().item()
        sync(dev)
        first = time.perf_counter() - t0
        ms, peak = timed_steps(step, dev, a.reps, a.warmup)
        row.update({f"{label}_ms": ms, f"{label}_first_s": first, f"{label}_peak_mib": peak, f"{label}_loss0": loss0})
        if partial:  # what is done so far survives a cap (the parent kills this process)
            partial(row)
        return fn

    system("eager", lambda m: m)
    torchc.reset()
    cm = system("torchc", torchc.compile)
    try:
        if amp:
            with amp():
                ex = torchc.explain(cm)(*x, **kw)
        else:
            ex = torchc.explain(cm)(*x, **kw)
        row.update(graphs=ex.graph_count, backward_graphs=ex.backward_graph_count, breaks=ex.graph_break_count,
                   saved_mib=ex.saved_bytes / 2**20, break_reasons=ex.break_reasons[:3])
    except Exception as e:  # pragma: no cover
        row["explain_error"] = repr(e)[:200]
    if not a.no_torch_compile:
        try:
            import torch._dynamo as dynamo
            dynamo.reset()
            system("inductor", torch.compile)
        except Exception as e:  # pragma: no cover
            row["inductor_error"] = repr(e)[:200]
    for k in ("torchc", "inductor"):
        if f"{k}_ms" in row:
            row[f"{k}_speedup"] = row["eager_ms"] / row[f"{k}_ms"]
            row[f"{k}_loss_rel_err"] = abs(row[f"{k}_loss0"] - row["eager_loss0"]) / max(abs(row["eager_loss0"]), 1e-12)
    return row


def finish_row(r):
    for k in ("torchc", "inductor"):
        if f"{k}_ms" in r and "eager_ms" in r:
            r[f"{k}_speedup"] = r["eager_ms"] / r[f"{k}_ms"]
            r[f"{k}_loss_rel_err"] = abs(r[f"{k}_loss0"] - r["eager_loss0"]) / max(abs(r["eager_loss0"]), 1e-12)
    return r


def print_row(r):
    name, prec = r["name"], r["precision"]
    if "torchc_ms" not in r:
        why = r.get("error") or r.get("status") or "no result"
        done = f" (eager {r['eager_ms']:.2f} ms)" if "eager_ms" in r else ""
        print(f"{name:22s} {prec:5s} {why[:150]}{done}", flush=True)
        return
    g = f"{r.get('graphs', -1)}/{r.get('backward_graphs', -1)}/{r.get('breaks', -1)}"
    ind = (f"{r['inductor_ms']:8.2f} {r['inductor_speedup']:5.2f} {r['inductor_first_s']:6.1f} "
           f"{r['inductor_peak_mib']:7.0f}") if "inductor_ms" in r else f"{r.get('status', '-')[:30]:>8s}"
    print(f"{name:22s} {prec:5s} {r['eager_ms']:9.2f} {r['torchc_ms']:8.2f} {r['torchc_speedup']:5.2f} "
          f"{r['torchc_first_s']:6.2f} {r['torchc_peak_mib']:7.0f} {g:>10s} {r.get('saved_mib', 0):6.1f}M "
          f"{ind} {r['eager_peak_mib']:8.0f}", flush=True)
    for reason in r.get("break_reasons", []):
        print(f"    {reason[:160]}")


def in_subprocess(name, prec, a, cap):
    """one model in its own process (a cap that a compile cannot overrun, memory given back):
    the row of the systems it finished"""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", path, "--only", name, "--exact",
           "--device", a.device, "--precision", prec, "--optimizer", a.optimizer,
           "--reps", str(a.reps), "--warmup", str(a.warmup)]
    cmd += ["--batch", str(a.batch)] if a.batch else []
    cmd += ["--no-torch-compile"] if a.no_torch_compile else []
    cmd += ["--compile-step"] if a.compile_step else []
    t0 = time.perf_counter()
    status = None
    try:
        p = subprocess.run(cmd, timeout=cap, capture_output=True, text=True)
        if p.returncode != 0:
            status = f"exit {p.returncode}: " + (p.stderr.strip().splitlines() or [""])[-1][:200]
    except subprocess.TimeoutExpired:
        status = f"cut at the {cap:.0f} s cap"
    row = {"name": name, "precision": prec}
    try:
        with open(path) as f:
            txt = f.read()
        if txt.strip():
            row = json.loads(txt)
    except (OSError, ValueError):
        pass
    os.unlink(path)
    if status:
        row["status"] = status
    row["wall_s"] = time.perf_counter() - t0
    return finish_row(row)


def plot(rows, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # pragma: no cover
        print(f"no plot: {e}")
        return
    ok = [r for r in rows if "torchc_speedup" in r]
    if not ok:
        return
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(ok) + 2), 4.5))
    x = range(len(ok))
    ax.bar([i - 0.2 for i in x], [r["torchc_speedup"] for r in ok], 0.4, label="torchc")
    ax.bar([i + 0.2 for i in x], [r.get("inductor_speedup", 0) for r in ok], 0.4, label="torch.compile")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{r['name']} {r['precision']}" for r in ok], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("training step speedup over eager")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--precision", default=None, help="comma-separated: bf16, amp, fp32")
    ap.add_argument("--only", default=None, help="comma-separated substrings of model names")
    ap.add_argument("--exact", action="store_true", help="--only names are exact")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "sgd-momentum", "adamw"])
    ap.add_argument("--compile-step", action="store_true",
                    help="compile opt.step too (torchc.compile / torch.compile of the bound method)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=None,
                    help="wall-clock seconds for the whole run (default 470 on cuda, none on cpu): "
                         "a model starts only with --min-start-s left; each runs in its own process")
    ap.add_argument("--model-cap-s", type=float, default=None,
                    help="seconds one model may take (its own process; default 100 with a budget)")
    ap.add_argument("--min-start-s", type=float, default=25.0)
    ap.add_argument("--json", default=None, help="default benchmarks/results/train_<device>_<precisions>.json")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    gpu = a.device == "cuda"
    batch = a.batch or (32 if gpu else 4)
    precisions = (a.precision or ("bf16" if gpu else "fp32")).split(",")
    todo = gpu_models(batch) if gpu else cpu_models(batch)
    if not gpu:
        torch.set_num_threads(max(1, torch.get_num_threads()))

    def wanted(name):
        if not a.only:
            return True
        return any(o and (o == name if a.exact else o in name) for o in a.only.split(","))
    todo = [t for t in todo if wanted(t[0])]

    if a.worker:  # one model, one precision: the row written after each system
        name, make, inputs, labels, kind = todo[0]

        def partial(row):
            with open(a.worker, "w") as f:
                json.dump(row, f)
        try:
            r = run_model(name, make, inputs, labels, kind, a, precisions[0], partial)
        except Exception as e:
            traceback.print_exc()
            r = {"name": name, "precision": precisions[0], "error": repr(e)[:300]}
            try:
                with open(a.worker) as f:
                    r = {**json.load(f), "error": repr(e)[:300]}
            except (OSError, ValueError):
                pass
        partial(r)
        return

    budget = a.budget_s if a.budget_s is not None else (470.0 if gpu else None)
    cap = a.model_cap_s if a.model_cap_s is not None else (100.0 if budget else None)
    t_start = time.perf_counter()
    rows = []
    print(f"{'model':22s} {'prec':5s} {'eager ms':>9s} {'torchc':>8s} {'x':>5s} {'1st s':>6s} {'MiB':>7s} "
          f"{'g/bwd/brk':>10s} {'saved':>7s} {'inductor':>8s} {'x':>5s} {'1st s':>6s} {'MiB':>7s} {'eagerMiB':>8s}",
          flush=True)
    for prec in precisions:
        for name, make, inputs, labels, kind in todo:
            if budget is not None or cap is not None:
                left = budget - (time.perf_counter() - t_start) if budget is not None else float("inf")
                if left < a.min_start_s:
                    r = {"name": name, "precision": prec, "status": "not run: budget spent"}
                else:
                    r = in_subprocess(name, prec, a, min(cap or left, left))
            else:
                try:
                    r = finish_row(run_model(name, make, inputs, labels, kind, a, prec))
                except Exception as e:
                    traceback.print_exc()
                    r = {"name": name, "precision": prec, "error": repr(e)[:300]}
            rows.append(r)
            print_row(r)
    ok = [r for r in rows if "torchc_speedup" in r]
    summary = {"wall_s": time.perf_counter() - t_start, "models_run": len(ok), "models_listed": len(rows)}
    if ok:
        for k in ("torchc", "inductor"):
            xs = [r[f"{k}_speedup"] for r in ok if f"{k}_speedup" in r]
            if xs:
                summary[f"{k}_geomean"] = statistics.geometric_mean(xs)
        both = [r for r in ok if "inductor_speedup" in r]
        if both:
            summary["torchc_over_inductor_geomean"] = statistics.geometric_mean(
                [r["inductor_ms"] / r["torchc_ms"] for r in both])
        print(f"geomean speedup over eager: torchc {summary.get('torchc_geomean', float('nan')):.3f}  "
              f"torch.compile {summary.get('inductor_geomean', float('nan')):.3f}  "
              f"(torchc over torch.compile {summary.get('torchc_over_inductor_geomean', float('nan')):.3f}, "
              f"{len(ok)} of {len(rows)} models, {summary['wall_s']:.0f} s)")
    path = a.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                  f"train_{a.device}_{'_'.join(precisions)}.json")
    meta = {"device": torch.cuda.get_device_name() if gpu else "cpu", "torch": torch.__version__,
            "optimizer": a.optimizer, "compile_step": a.compile_step, "budget_s": budget, "model_cap_s": cap,
            "batch": batch, "threads": torch.get_num_threads()}
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump({"meta": meta, "summary": summary, "rows": rows}, f, indent=1)
    print(f"wrote {path}")
    plot(rows, path.rsplit(".", 1)[0] + ".png",
         f"{meta['device']}, {','.join(precisions)}, batch {batch}, {a.optimizer}: torchc geomean "
         f"{summary.get('torchc_geomean', float('nan')):.2f}x, torch.compile "
         f"{summary.get('inductor_geomean', float('nan')):.2f}x over eager")


if __name__ == "__main__":
    main()
