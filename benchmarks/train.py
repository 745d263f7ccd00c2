"""Training steps: eager vs torch.compile vs torchc in one run (issue 22).

A full step is forward, loss, backward and an optimizer step (torch.optim SGD by default;
--optimizer sgd-momentum|adamw). Only the model is compiled unless --compile-step, which
compiles opt.step by the same system too; the loss is computed eagerly on its output. For each model:
median ms a step, speedup over eager, first-step seconds (compile included), peak memory of
the steady-state steps, the first step's loss against eager's, and torchc's graph / backward
graph / break counts and saved bytes (torchc.explain).

Dropout and stochastic depth are set to p=0 in every system (the graph IR has no RNG op yet,
so torchc would break the graph at each of them; all three then run the same math).

    GPU: python benchmarks/train.py --device cuda [--batch 32] [--precision bf16,amp]
                                   [--only resnet50,bert] [--no-torch-compile]
                                   [--json benchmarks/results/train_h200.json]
    CPU: python benchmarks/train.py --device cpu     (a transformer block, an MLP, a GRU cell)
         python benchmarks/train.py --device cpu --optimizer adamw --compile-step

--precision bf16: bf16 weights and inputs; amp: fp32 weights under torch.autocast(bf16)
(torchc leaves autocast regions to eager: its column then measures eager plus the guards).
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torchc  # noqa: E402


def first_tensor(out):
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


def no_randomness(m):
    for mod in m.modules():
        if isinstance(mod, nn.Dropout) or type(mod).__name__ in ("StochasticDepth", "DropPath"):
            mod.p = 0.0
        for attr in ("drop_prob", "dropout", "attention_dropout"):
            if isinstance(getattr(mod, attr, None), float):
                setattr(mod, attr, 0.0)
    return m


def gpu_models(batch):
    out = []
    try:
        import torchvision.models as tvm
        img = lambda: (torch.randn(batch, 3, 224, 224),)
        cls = lambda: torch.randint(0, 1000, (batch,))
        for name in ["resnet18", "resnet34", "resnet50", "mobilenet_v3_large", "efficientnet_b0",
                     "regnet_y_400mf", "convnext_tiny", "vit_b_16", "swin_t", "densenet121"]:
            out.append((name, getattr(tvm, name), img, cls, "cls"))
    except Exception as e:  # pragma: no cover
        print(f"torchvision unavailable: {e}")
    try:
        import transformers as tf
        ids = lambda: (torch.randint(0, 30000, (batch, 128)),)
        lab = lambda: torch.randint(0, 30000, (batch, 128))
        out += [
            ("bert_base_mlm", lambda: tf.BertForMaskedLM(tf.BertConfig()), ids, lab, "lm"),
            ("gpt2_lm", lambda: tf.GPT2LMHeadModel(tf.GPT2Config()), ids, lab, "lm"),
            ("distilbert_mlm", lambda: tf.DistilBertForMaskedLM(tf.DistilBertConfig()), ids, lab, "lm"),
            ("roberta_base_mlm", lambda: tf.RobertaForMaskedLM(tf.RobertaConfig(vocab_size=30000)), ids, lab, "lm"),
            ("albert_base_mlm", lambda: tf.AlbertForMaskedLM(tf.AlbertConfig(vocab_size=30000)), ids, lab, "lm"),
        ]
    except Exception as e:  # pragma: no cover
        print(f"transformers unavailable: {e}")
    return out


def cpu_models(batch):
    from run import MLP, GRUCell, PreLNBlock
    return [
        ("mlp_784_1024_1024_10", MLP, lambda: (torch.randn(batch * 8, 784),), lambda: torch.randint(0, 10, (batch * 8,)), "cls"),
        ("preln_block_d256_t128", PreLNBlock, lambda: (torch.randn(batch, 128, 256),), None, "mse"),
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


def run_model(name, make, inputs, labels, kind, a, precision):
    dev = a.device
    dt = torch.bfloat16 if precision == "bf16" else torch.float32
    torch.manual_seed(0)
    base = no_randomness(make()).to(dev, dt).train()
    x = tuple(t.to(dev, dt) if t.is_floating_point() else t.to(dev) for t in inputs())
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
                    out = fn(*x)
                    loss = loss_of(kind, out, y)
            else:
                out = fn(*x)
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
        return fn

    system("eager", lambda m: m)
    torchc.reset()
    cm = system("torchc", torchc.compile)
    try:
        if amp:
            with amp():
                ex = torchc.explain(cm)(*x)
        else:
            ex = torchc.explain(cm)(*x)
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--precision", default=None, help="comma-separated: bf16, amp, fp32")
    ap.add_argument("--only", default=None, help="comma-separated substrings of model names")
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--optimizer", default="sgd", choices=["sgd", "sgd-momentum", "adamw"])
    ap.add_argument("--compile-step", action="store_true",
                    help="compile opt.step too (torchc.compile / torch.compile of the bound method)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    gpu = a.device == "cuda"
    batch = a.batch or (32 if gpu else 4)
    precisions = (a.precision or ("bf16" if gpu else "fp32")).split(",")
    todo = gpu_models(batch) if gpu else cpu_models(batch)
    if not gpu:
        torch.set_num_threads(max(1, torch.get_num_threads()))
    rows = []
    print(f"{'model':22s} {'prec':5s} {'eager ms':>9s} {'torchc':>8s} {'x':>5s} {'1st s':>6s} {'MiB':>7s} "
          f"{'g/bwd/brk':>10s} {'saved':>7s} {'inductor':>8s} {'x':>5s} {'1st s':>6s} {'MiB':>7s} {'eagerMiB':>8s}")
    for prec in precisions:
        for name, make, inputs, labels, kind in todo:
            if a.only and not any(o and o in name for o in a.only.split(",")):
                continue
            try:
                r = run_model(name, make, inputs, labels, kind, a, prec)
            except Exception as e:
                traceback.print_exc()
                r = {"name": name, "precision": prec, "error": repr(e)[:300]}
                print(f"{name:22s} {prec:5s} ERROR {r['error']}")
                rows.append(r)
                continue
            rows.append(r)
            g = f"{r.get('graphs', -1)}/{r.get('backward_graphs', -1)}/{r.get('breaks', -1)}"
            ind = (f"{r['inductor_ms']:8.2f} {r['inductor_speedup']:5.2f} {r['inductor_first_s']:6.1f} "
                   f"{r['inductor_peak_mib']:7.0f}") if "inductor_ms" in r else f"{'-':>8s}"
            print(f"{name:22s} {prec:5s} {r['eager_ms']:9.2f} {r['torchc_ms']:8.2f} {r['torchc_speedup']:5.2f} "
                  f"{r['torchc_first_s']:6.2f} {r['torchc_peak_mib']:7.0f} {g:>10s} {r.get('saved_mib', 0):6.1f}M "
                  f"{ind} {r['eager_peak_mib']:8.0f}", flush=True)
            for reason in r.get("break_reasons", []):
                print(f"    {reason[:160]}")
    ok = [r for r in rows if "torchc_speedup" in r]
    if ok:
        gm = lambda k: statistics.geometric_mean([r[k] for r in ok if k in r]) if any(k in r for r in ok) else float("nan")
        print(f"geomean speedup over eager: torchc {gm('torchc_speedup'):.3f}  torch.compile {gm('inductor_speedup'):.3f}")
    if a.json:
        meta = {"device": torch.cuda.get_device_name() if gpu else "cpu", "torch": torch.__version__,
                "optimizer": a.optimizer, "compile_step": a.compile_step,
                "batch": batch, "threads": torch.get_num_threads()}
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
