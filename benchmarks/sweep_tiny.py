"""Sweep of every transformers architecture that can be built automatically from a tiny random
config (no per-model code), run on the CPU in eval inference under torchc.explain: graphs,
breaks, top break reasons and whether the compiled outputs match eager.

Models come from transformers' MODEL_MAPPING_NAMES (AutoModel: the base model of each
model_type). Each default config is shrunk by attribute name only (layers, heads, widths,
vocab, experts; nested sub-configs alike) and the inputs are chosen from the forward's
parameter names (input_ids, pixel_values, input_values, input_features, decoder_input_ids).
A model whose tiny config, build or eager run fails is recorded as such and not counted.

    python benchmarks/sweep_tiny.py                       # all; writes results/sweep_tiny.{json,md}
    python benchmarks/sweep_tiny.py --models bert,gpt2    # substrings of model_type
    python benchmarks/sweep_tiny.py --tag after --skip-done
    python benchmarks/sweep_tiny.py --tag after --rerun benchmarks/results/sweep_tiny_before.json:broken,wrong
    python benchmarks/sweep_tiny.py --train --tag train_before --timeout 120   # results/sweep_tiny_train_before.*

--train (issue 22): the model in train() mode with every dropout probability of its config set to
0, the forward under torchc.explain, a scalar loss (each float output that requires grad times a
fixed random tensor, summed: gradients that a sum's would hide, e.g. through a LayerNorm, stay
nonzero) and loss.backward(); the loss and every parameter's .grad are compared with eager's
(same seed) by benchmarks/suite.py's rule with the tolerance of Dynamo's training runs (1e-2:
allclose, else the RMSE against a float64 run of the model at most twice eager's + 1e-3); a .grad
left None by eager must stay None; a run failing that rule is held to the spread of eager's error
over three runs with ulp-perturbed parameters and inputs (eager_noise: non-smooth models move far
more than their rounding; row noise_rule); one failing that too is run under torchc in float64
against eager's float64 run (f64_check): equal there, its status is fp32_noise (rounding, not a
formula; not whole). Whole: one forward
graph, no break and one backward graph. --compare JSON lists the models whole in that
(inference) run and not whole in training.

A wrong row (inference or --train) is rerun under torch.compile(backend="eager"): when Dynamo
gives torchc's values and not eager's, the status is compile_differs (the library computes
otherwise while compiling, e.g. transformers' masks under is_tracing(); torchc answers as Dynamo).

Models run in worker processes (a crash or a hang costs one model, not the run); transformers
keeps process-wide state, so a worker is restarted every --chunk models. Not part of make test.
"""
import argparse
import concurrent.futures
import collections
import inspect
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")

B, SEQ = 2, 16
# attribute name -> tiny value (ints only; a value is only ever made smaller)
SHRINK = {
    "hidden_size": 64, "d_model": 64, "n_embd": 64, "embed_dim": 64, "hidden_dim": 64,
    "dim": 64, "n_embed": 64, "embedding_size": 64, "word_embed_proj_dim": 64,
    "projection_dim": 32, "d_embed": 64, "model_dim": 64, "encoder_hidden_size": 64,
    "num_hidden_layers": 2, "num_layers": 2, "n_layer": 2, "n_layers": 2, "encoder_layers": 2,
    "decoder_layers": 2, "num_decoder_layers": 2, "num_encoder_layers": 2,
    "num_attention_heads": 4, "n_head": 4, "n_heads": 4, "num_heads": 4,
    "encoder_attention_heads": 4, "decoder_attention_heads": 4, "num_key_value_heads": 2,
    "multi_query_group_num": 2, "num_kv_heads": 2, "head_dim": 16, "d_kv": 16,
    "intermediate_size": 128, "ffn_dim": 128, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128,
    "d_ff": 128, "n_inner": 128, "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64,
    "vocab_size": 512, "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "max_position_embeddings": 512, "conv_dim": 64,
    "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 4, "max_source_positions": 64,
    "max_target_positions": 64, "num_mel_bins": 16, "state_size": 8, "time_step_rank": 8,
    "expand": 2, "n_positions": 512, "num_channels_": None,
    "emb_dim": 64, "entity_vocab_size": 512, "out_hidden_size": 64, "d_latents": 64,
    "unit_embed_dim": 64, "decoder_hidden_size": 64, "vq_num_embeds": 512, "codebook_size": 512,
    "projection_size": 64, "rotary_dim": 8, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16,
    "v_head_dim": 16, "qk_head_dim": 32, "kv_lora_rank": 32, "q_lora_rank": 32,
    "attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1,
}
# lists of per-stage values: shrunk element-wise
LIST_SHRINK = {"depths": 1, "hidden_sizes": 32, "num_heads": 2, "embed_dims": 32, "dims": 32,
               "num_attention_heads": 2, "neck_hidden_sizes": 32, "block_repeats": 1,
               "num_layers": 1, "mlp_ratios": 2, "conv_dim": 64}


def shrink(cfg, depth=0):
    """shrink a config in place by attribute names (sub-configs too)"""
    from transformers import PretrainedConfig
    d = cfg.to_dict() if depth == 0 else None
    orig = dict(vars(cfg))
    for k in list(vars(cfg)):
        v = getattr(cfg, k)
        if isinstance(v, PretrainedConfig) and depth < 3:
            shrink(v, depth + 1)
            continue
        if isinstance(v, bool):
            continue
        if k in ("num_key_value_heads", "num_kv_heads") and isinstance(v, int) and v == orig.get(
                "num_attention_heads" if k == "num_key_value_heads" else "num_heads"):
            continue  # as many key/value heads as query heads: set below to the shrunk head count
        if isinstance(v, int) and k in SHRINK and SHRINK[k] is not None and v > SHRINK[k]:
            setattr(cfg, k, SHRINK[k])
        elif isinstance(v, (list, tuple)) and k in LIST_SHRINK and v and all(
                isinstance(x, int) and not isinstance(x, bool) for x in v):
            setattr(cfg, k, type(v)(min(x, LIST_SHRINK[k]) for x in v))
    for kv, q in (("num_key_value_heads", "num_attention_heads"), ("num_kv_heads", "num_heads")):
        if isinstance(vars(cfg).get(kv), int) and isinstance(vars(cfg).get(q), int) and \
                vars(cfg)[kv] > vars(cfg)[q]:
            setattr(cfg, kv, vars(cfg)[q])
    # per-layer types (hybrid attention / linear attention / mamba): keep the shortest prefix
    # that has every type, so that two layers don't drop the only attention layer
    lt = getattr(cfg, "layer_types", None)
    n = getattr(cfg, "num_hidden_layers", None)
    if isinstance(lt, (list, tuple)) and lt and isinstance(n, int) and all(isinstance(x, str) for x in lt):
        kinds = set(lt)
        k = next(i + 1 for i in range(len(lt)) if set(lt[:i + 1]) == kinds)
        if k <= 8 and len(lt) > n:
            n = max(n, k)
            cfg.num_hidden_layers = n
            cfg.layer_types = type(lt)(lt[:n])
    # token ids must lie in the vocabulary
    V = getattr(cfg, "vocab_size", None)
    if isinstance(V, int):
        for k in list(vars(cfg)):
            v = getattr(cfg, k)
            if k.endswith("_token_id") and isinstance(v, int) and not isinstance(v, bool) and v >= V:
                setattr(cfg, k, min(V - 1, 2))
    # layer-type lists sized to the layer count
    L = getattr(cfg, "num_hidden_layers", None)
    for k in ("layer_types", "block_types", "attention_layers"):
        v = getattr(cfg, k, None)
        if isinstance(L, int) and isinstance(v, list) and len(v) > L:
            setattr(cfg, k, v[:L])
    return d


def tiny_config(model_type):
    from transformers import AutoConfig
    cfg = AutoConfig.for_model(model_type)
    shrink(cfg)
    cfg._attn_implementation = None
    return cfg


def no_dropout(cfg, depth=0):
    """--train: every dropout-like probability of a config (sub-configs too) set to 0, and
    SpecAugment's mask_*_prob, so that eager and compiled runs draw no random masks (and
    audio models' time masks fit the tiny inputs)"""
    from transformers import PretrainedConfig
    for k in list(vars(cfg)):
        v = getattr(cfg, k)
        if isinstance(v, PretrainedConfig) and depth < 3:
            no_dropout(v, depth + 1)
        elif isinstance(v, float) and not isinstance(v, bool) and v > 0 and (
                "dropout" in k or "drop_path" in k or "layerdrop" in k or k.endswith("_drop")
                or k.endswith("drop_rate") or k.endswith("drop_prob") or k == "drop"
                or (k.startswith("mask_") and k.endswith("_prob"))):  # SpecAugment's masks
            setattr(cfg, k, 0.0)


def _vision(cfg):
    for sub in ("vision_config", "visual_config"):
        s = getattr(cfg, sub, None)
        if s is not None:
            return s
    return cfg


def _img(cfg):
    v = _vision(cfg)
    size = getattr(v, "image_size", None) or getattr(v, "input_size", None) or 64
    if isinstance(size, (list, tuple)):
        size = tuple(size[-2:]) if len(size) >= 2 else (size[0], size[0])
    elif isinstance(size, dict):
        size = (size.get("height", 64), size.get("width", 64))
    else:
        size = (size, size)
    ch = getattr(v, "num_channels", 3) or 3
    return ch, size


TRAIN = False  # --train: forward and backward of a scalar loss in train() mode (issue 22)
PADDED = False  # --padded: an attention_mask with padding wherever the forward takes one
DECODE = False  # --decode: compile one generation step with the prefill's Cache, not the prefill


def make_inputs(model, cfg, extra=False):
    """inputs by the forward's parameter names: the main input, required ones, and with extra
    every known input it takes (multimodal models need several); with PADDED also an
    attention_mask whose second row is left-padded (what a tokenizer gives a batch)"""
    import torch
    sig = inspect.signature(model.forward)
    params = sig.parameters
    main = getattr(model, "main_input_name", "input_ids")
    want = [n for n, p in params.items() if n == main or (p.default is inspect.Parameter.empty
                                                         and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))]
    if extra:
        want += [n for n in ("input_ids", "pixel_values", "decoder_input_ids") if n in params]
    if getattr(cfg, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        want.append("decoder_input_ids")
    if PADDED and "attention_mask" in params and "input_ids" in want:
        want.append("attention_mask")
    text = getattr(cfg, "text_config", None) or cfg
    V = getattr(text, "vocab_size", None) or getattr(cfg, "vocab_size", None) or 100
    g = torch.Generator().manual_seed(0)
    out = {}
    for n in dict.fromkeys(want):
        if n in ("input_ids", "decoder_input_ids"):
            out[n] = torch.randint(3, max(4, min(V, 512) - 1), (B, SEQ), generator=g)
        elif n == "pixel_values":
            ch, (h, w) = _img(cfg)
            out[n] = torch.randn(B, ch, h, w, generator=g)
        elif n == "input_values":
            out[n] = torch.randn(B, 3200, generator=g)
        elif n == "input_features":
            mel = getattr(cfg, "num_mel_bins", None) or getattr(cfg, "feature_size", None) or \
                getattr(cfg, "input_feat_per_channel", None) or 80
            T = 2 * getattr(cfg, "max_source_positions", 32) if hasattr(cfg, "max_source_positions") else 64
            if getattr(cfg, "model_type", "") in ():
                pass
            out[n] = torch.randn(B, mel, T, generator=g) if hasattr(cfg, "max_source_positions") \
                else torch.randn(B, T, mel, generator=g)
        elif n in ("attention_mask", "decoder_attention_mask"):
            out[n] = torch.ones(B, SEQ, dtype=torch.long)
            if PADDED and n == "attention_mask":
                out[n][1, :5] = 0
        elif n == "token_type_ids":
            out[n] = torch.zeros(B, SEQ, dtype=torch.long)
        else:
            return None, f"unknown required input {n}"
    return out, None


def tensors_of(out):
    import torch
    if isinstance(out, torch.Tensor):
        return [out]
    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors_of(o)]
    return []


def cache_tensors(kw):
    """the tensors a Cache object passed as past_key_values holds after the call (its update)"""
    import torch
    out = []
    for layer in getattr(kw.get("cache", kw.get("past_key_values")), "layers", None) or []:
        out += [v for _, v in sorted(vars(layer).items()) if isinstance(v, torch.Tensor)]
    return out


def decode_step(model, inputs):
    """--decode: one generation step after a prefill of `inputs` (input_ids, attention_mask
    and the rest): a function giving its keyword arguments afresh (one new token a row, the
    mask one longer, a copy of the prefill's Cache as cache= / past_key_values=), or None and
    why not"""
    import copy
    import torch
    params = inspect.signature(model.forward).parameters
    key = "cache" if "cache" in params else "past_key_values"  # (its name before transformers 5.2x)
    if "input_ids" not in inputs or key not in params or "decoder_input_ids" in inputs:
        return None, "no decode step (needs input_ids and a cache argument, no decoder_input_ids)"
    with torch.no_grad():
        out = model(**inputs, use_cache=True)
    cache = getattr(out, key, None)
    if cache is None or not hasattr(cache, "layers"):
        return None, f"no decode step ({key}: {type(cache).__name__})"
    ids = inputs["input_ids"]
    nxt = torch.randint(3, max(4, int(ids.max()) + 1), (ids.shape[0], 1), generator=torch.Generator().manual_seed(1))
    step = {"input_ids": nxt, "use_cache": True}
    if "attention_mask" in inputs:
        m = inputs["attention_mask"]
        step["attention_mask"] = torch.cat([m, torch.ones_like(m[:, :1])], 1)
    return (lambda: dict(step, **{key: copy.deepcopy(cache)})), None


def same(ref, res, tol=1e-4):
    import torch
    if len(ref) != len(res):
        return False, f"{len(res)} outputs, eager {len(ref)}"
    for i, (a, b) in enumerate(zip(ref, res)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, f"output {i}: {tuple(b.shape)} {b.dtype}, eager {tuple(a.shape)} {a.dtype}"
        if not a.is_floating_point():
            if not torch.equal(a, b):
                return False, f"output {i}: integer values differ"
        elif not torch.allclose(a, b, atol=tol, rtol=tol, equal_nan=True):
            d = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
            # a second eager run decides whether eager agrees with itself (dropout, random ops)
            return False, f"output {i}: max abs diff {d:.3g}"
    return True, None


def rmse(a, b):
    import torch
    return torch.sqrt(torch.mean(torch.square(a.double() - b.double()))).item()


TRAIN_TOL = 1e-2  # Dynamo's benchmarks/dynamo/huggingface.py tolerance for training (float32)


def same_fp64(ref, res, fp64, tol=TRAIN_TOL, names=None):
    """benchmarks/suite.py's `same` (Dynamo's rule): allclose(ref, res); else
    RMSE(res, fp64) <= 2 * RMSE(ref, fp64) + tol / 10; None entries must be None in both"""
    import torch
    if len(ref) != len(res):
        return False, f"{len(res)} tensors, eager {len(ref)}"
    for i, (a, b) in enumerate(zip(ref, res)):
        what = names[i] if names else f"output {i}"
        if a is None or b is None:
            if (a is None) != (b is None):
                return False, f"{what}: {'None' if b is None else 'a tensor'}, eager {'None' if a is None else 'a tensor'}"
            continue
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, f"{what}: {tuple(b.shape)} {b.dtype}, eager {tuple(a.shape)} {a.dtype}"
        if not a.is_floating_point():
            if not torch.equal(a, b):
                return False, f"{what}: integer values differ"
            continue
        if torch.allclose(a.float(), b.float(), atol=tol, rtol=tol, equal_nan=True):
            continue
        d = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
        if fp64 is None or fp64[i] is None:
            return False, f"{what}: max abs diff {d:.3g} (no fp64 reference)"
        re, ee = rmse(fp64[i], b), rmse(fp64[i], a)
        if not (re <= 2.0 * ee + tol / 10.0) or math.isnan(re):
            return False, f"{what}: max abs diff {d:.3g}, rmse {re:.3g} vs eager's {ee:.3g} (fp64 reference)"
    return True, None


def train_loss(out):
    """a scalar: each float output that requires grad times a fixed random tensor (drawn in
    float32 from a seeded generator, whatever the dtype), summed"""
    import torch
    g = torch.Generator().manual_seed(0)
    loss = None
    for t in tensors_of(out):
        if not (t.is_floating_point() and t.requires_grad):
            continue
        w = torch.randn(t.shape, generator=g).to(t.dtype)
        term = (t * w).sum()
        loss = term if loss is None else loss + term
    return loss


def train_step(f, model, kw):
    """(f's output, loss, [p.grad for every parameter]) after loss.backward() from no .grad"""
    import torch
    for p in model.parameters():
        p.grad = None
    torch.manual_seed(1)
    out = f(**kw)
    loss = train_loss(out.result if hasattr(out, "graph_count") else out)
    if loss is None:
        return out, None, None
    loss.backward()
    return out, loss.detach().clone(), [None if p.grad is None else p.grad.detach().clone()
                                        for p in model.parameters()]


NOISE_RUNS = 3  # eager runs with ulp-perturbed parameters and inputs (float noise spread)
NOISE_AMP = 2.0 ** -23  # their relative perturbation (one ulp of float32)


def eager_noise(model, inputs, fp64, runs=NOISE_RUNS, amp=NOISE_AMP):
    """per tensor of [loss] + grads: the largest RMSE against fp64 of eager float32 runs whose
    float parameters and inputs are each multiplied by (1 + 2^-23 randn) (one ulp, drawn per
    element from seeded generators). A loss of a non-smooth model (ReLU6/leaky_relu kinks,
    tiny-batch BatchNorm, sums that cancel) moves by far more than its rounding under such a
    change, so fp32 eager's own error against fp64 is one sample of a wide spread: a compiled
    run (other rounding, as eager's with other thread counts or a channels_last layout) is held
    to the spread, not to that one sample"""
    import copy
    import torch
    worst = None
    for s in range(runs):
        g = torch.Generator().manual_seed(1000 + s)
        mp = copy.deepcopy(model)
        with torch.no_grad():
            for p in mp.parameters():
                if p.is_floating_point():
                    p.mul_(1 + amp * torch.randn(p.shape, generator=g).to(p.dtype))
        inp = {k: v * (1 + amp * torch.randn(v.shape, generator=g).to(v.dtype))
               if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in inputs.items()}
        _, l, gr = train_step(mp, mp, inp)
        errs = [None if a is None or b is None else rmse(a, b) for a, b in zip(fp64, [l] + gr)]
        worst = errs if worst is None else [None if a is None or b is None else max(a, b) for a, b in zip(worst, errs)]
        del mp
    return worst


def within_noise(ref, res, fp64, noise, tol=TRAIN_TOL, names=None):
    """same_fp64's RMSE rule with eager's error taken as the larger of eager's own and
    eager_noise's spread: RMSE(res, fp64) <= 2 * max(...) + tol / 10 for every float tensor"""
    for i, (a, b) in enumerate(zip(ref, res)):
        if a is None or b is None or not a.is_floating_point() or fp64[i] is None:
            continue
        if torch_allclose(a, b, tol):
            continue
        re, ee = rmse(fp64[i], b), max(rmse(fp64[i], a), noise[i] or 0.0)
        if not (re <= 2.0 * ee + tol / 10.0) or math.isnan(re):
            what = names[i] if names else f"output {i}"
            return False, f"{what}: rmse {re:.3g} vs eager's {rmse(fp64[i], a):.3g} (ulp-perturbed eager up to {noise[i]:.3g}; fp64 reference)"
    return True, None


def f64_check(m64, i64, fp64, names=None):
    """a --train row wrong in float32: torchc on the float64 copy of the model against eager's
    float64 run. A formula error (a wrong rule, a lost op) shows at float64 as at float32;
    rounding does not: (True, None) when every tensor is within 1e-7 of its own largest value
    + 1e-9 of the largest of all (gradients that are zero in exact arithmetic, e.g. a key
    bias under softmax, are float64 noise), else (False, the first that is not)"""
    import torchc
    torchc.reset()
    _, l, g = train_step(torchc.compile(m64), m64, i64)
    res = [l] + g
    scale = max((t.abs().max().item() for t in fp64 if t is not None and t.numel()), default=0.0)
    for i, (a, b) in enumerate(zip(fp64, res)):
        what = names[i] if names else f"output {i}"
        if (a is None) != (b is None):
            return False, f"{what}: None in one float64 run only"
        if a is None or not a.numel():
            continue
        d = (a - b).abs().max().item()
        if not d <= 1e-7 * a.abs().max().item() + 1e-9 * scale:
            return False, f"{what}: float64 max abs diff {d:.3g}"
    return True, None


def torch_allclose(a, b, tol):
    import torch
    return torch.allclose(a.float(), b.float(), atol=tol, rtol=tol, equal_nan=True)


def dynamo_check(f_dyn, ref, res, cmp):
    """a wrong row's cross-check against Dynamo: f_dyn() runs the same call under
    torch.compile(backend="eager") (Dynamo's capture, eager's kernels) and gives its tensors.
    "compile_differs" when Dynamo's values are torchc's (cmp(dyn, res)) and not eager's: the
    library computes otherwise while compiling (code that reads torch.compiler.is_compiling()
    or is_tracing(), as transformers' masks do), which torchc answers as Dynamo does; else None
    (and why Dynamo could not tell)"""
    import torch
    try:
        torch._dynamo.reset()
        dyn = f_dyn()
    except Timeout:
        raise
    except Exception as e:
        return None, f"dynamo: {type(e).__name__}: {str(e)[:120]}"
    finally:
        torch._dynamo.reset()
    same_dyn, _ = cmp(dyn, res)
    eager_dyn, why = cmp(ref, dyn)
    if same_dyn and not eager_dyn:
        return "compile_differs", f"torch.compile(backend='eager') differs from eager alike ({why})"
    return None, None


def run_train(row, model, cfg, timeout):
    """--train: eager twice (determinism), float64 once, then torchc.explain; fills row"""
    import copy
    import torch
    import torchc
    names = [n for n, _ in model.named_parameters()]
    ref = err = None
    for extra in (False, True):
        inputs, why = make_inputs(model, cfg, extra)
        if inputs is None:
            err = why
            continue
        try:
            _, loss, grads = train_step(model, model, inputs)
            if loss is None:
                row.update(status="no_grad_outputs", error="no float output requires grad")
                return row
            ref = [loss] + grads
            _, loss2, grads2 = train_step(model, model, inputs)
            ref2 = [loss2] + grads2
            break
        except Timeout:
            raise
        except Exception as e:
            err = f"{type(e).__name__}: {str(e)[:200]}"
    if ref is None:
        row.update(status="eager_fail", error=err)
        return row
    row["inputs"] = sorted(inputs)
    tnames = ["loss"] + [f"{n}.grad" for n in names]
    row["eager_deterministic"] = same_fp64(ref, ref2, None, tol=1e-6, names=tnames)[0]
    fp64 = m64 = None
    try:
        m64 = copy.deepcopy(model).double()
        i64 = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
        _, l64, g64 = train_step(m64, m64, i64)
        fp64 = [l64] + g64
    except Timeout:
        raise
    except Exception as e:
        row["fp64_error"] = f"{type(e).__name__}: {str(e)[:200]}"
    torchc.reset()
    try:
        ex, loss, grads = train_step(torchc.explain(model), model, inputs)
    except Timeout:
        raise
    except Exception as e:
        row.update(status="torchc_raised", error=f"{type(e).__name__}: {str(e)[:300]}",
                   trace=traceback.format_exc(limit=-3)[-1200:])
        return row
    if loss is None:
        ok, why = False, "no float output of the compiled forward requires grad"
    else:
        ok, why = same_fp64(ref, [loss] + grads, fp64, names=tnames)
    if not ok and loss is not None and fp64 is not None:
        noise = eager_noise(model, inputs, fp64)
        ok, why2 = within_noise(ref, [loss] + grads, fp64, noise, names=tnames)
        if ok:
            row["noise_rule"] = why  # failed the single-sample rule, within eager's spread
            why = "within ulp-perturbed eager's spread: " + why
        else:
            why = why2
    if not ok and not row["eager_deterministic"]:
        ok, why = True, None  # eager disagrees with itself: not held against torchc
    differs = None
    if not ok and loss is not None:
        def dyn():
            _, ld, gd = train_step(torch.compile(model, backend="eager"), model, inputs)
            return [ld] + gd
        differs, dwhy = dynamo_check(dyn, ref, [loss] + grads,
                                     lambda a, b: same_fp64(a, b, fp64, names=tnames))
        if differs:
            why = dwhy
        elif dwhy:
            row["dynamo"] = dwhy
    if not ok and not differs and fp64 is not None and loss is not None:
        try:
            f64ok, f64why = f64_check(m64, i64, fp64, names=tnames)
        except Timeout:
            raise
        except Exception as e:
            f64ok, f64why = False, f"float64 run: {type(e).__name__}: {str(e)[:120]}"
        if f64ok:
            differs, why = "fp32_noise", f"float64 compiled run matches eager's; float32: {why}"
        else:
            row["f64"] = f64why
    whole = ex.graph_count == 1 and ex.graph_break_count == 0 and ex.backward_graph_count == 1
    row.update(graphs=ex.graph_count, breaks=ex.graph_break_count, ops=ex.op_count,
               bwd_graphs=ex.backward_graph_count, bwd_ops=ex.backward_op_count,
               reasons=list(ex.break_reasons)[:40],
               status=("whole" if whole else "fallback" if ex.graph_count == 0 else "broken") if ok else differs or "wrong")
    if ex.graph_count >= 1 and ex.backward_graph_count < ex.graph_count and not ex.break_reasons:
        row["reasons"].append(f"forward: {ex.graph_count - ex.backward_graph_count} of {ex.graph_count} "
                              f"graphs without a backward graph")
    if why:
        row["why"] = why
    return row


class Timeout(Exception):
    pass


def _alarm(*a):
    raise Timeout()


def run_one(model_type, timeout):
    import torch
    import torchc
    row = {"model": model_type}
    t0 = time.time()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout)
    try:
        try:
            from transformers import AutoModel
            cfg = tiny_config(model_type)
            if TRAIN:
                no_dropout(cfg)
            torch.manual_seed(0)
            model = AutoModel.from_config(cfg)
            model = model.train() if TRAIN else model.eval()
        except Timeout:
            raise
        except Exception as e:
            row.update(status="no_build", error=f"{type(e).__name__}: {str(e)[:200]}")
            return row
        row["params"] = sum(p.numel() for p in model.parameters())
        if row["params"] > 30e6:
            row.update(status="no_build", error=f"too large when shrunk ({row['params']} parameters)")
            return row
        if TRAIN:
            return run_train(row, model, cfg, timeout)
        ref = None
        err = None
        mk = None

        def run(f, result=lambda out: out):
            kw = mk()
            out = f(**kw)
            return out, tensors_of(result(out)) + cache_tensors(kw)
        for extra in (False, True):
            inputs, why = make_inputs(model, cfg, extra)
            if inputs is None:
                err = why
                continue
            try:
                mk = lambda: inputs  # noqa: E731
                if DECODE:
                    mk, why = decode_step(model, inputs)
                    if mk is None:
                        row.update(status="no_decode", error=why)
                        return row
                with torch.no_grad():
                    ref = [t.detach().clone() for t in run(model)[1]]
                    ref2 = [t.detach().clone() for t in run(model)[1]]
                break
            except Timeout:
                raise
            except Exception as e:
                err = f"{type(e).__name__}: {str(e)[:200]}"
        if ref is None:
            row.update(status="eager_fail", error=err)
            return row
        row["inputs"] = sorted(inputs)
        row["eager_deterministic"] = same(ref, ref2)[0]
        torchc.reset()
        try:
            with torch.no_grad():
                ex, res = run(torchc.explain(model), lambda ex: ex.result)
        except Timeout:
            raise
        except Exception as e:
            row.update(status="torchc_raised", error=f"{type(e).__name__}: {str(e)[:300]}",
                       trace=traceback.format_exc(limit=-3)[-1200:])
            return row
        ok, why = same(ref, res)
        if not ok and not row["eager_deterministic"]:
            ok, why = True, None  # eager disagrees with itself: not held against torchc
        differs = None
        if not ok:
            def dyn():
                with torch.no_grad():
                    return [t.detach().clone() for t in run(torch.compile(model, backend="eager"))[1]]
            differs, dwhy = dynamo_check(dyn, ref, res, same)
            if differs:
                why = dwhy
            elif dwhy:
                row["dynamo"] = dwhy
        row.update(graphs=ex.graph_count, breaks=ex.graph_break_count, ops=ex.op_count,
                   reasons=list(ex.break_reasons)[:40],
                   status=("whole" if ex.graph_count == 1 and ex.graph_break_count == 0 else
                           "fallback" if ex.graph_count == 0 else "broken") if ok else differs or "wrong")
        if why:
            row["why"] = why
        return row
    except Timeout:
        row.update(status="timeout", error=f"timeout after {timeout} s")
        return row
    finally:
        signal.alarm(0)
        row["seconds"] = round(time.time() - t0, 2)


def worker(names, timeout):
    import torch
    torch.set_num_threads(1)  # a shared machine: one core a worker
    import warnings
    warnings.filterwarnings("ignore")
    import transformers
    transformers.logging.set_verbosity_error()
    for n in names:
        print("START " + n, flush=True)
        row = run_one(n, timeout)
        print("RESULT " + json.dumps(row), flush=True)


def model_types():
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
    return sorted(MODEL_MAPPING_NAMES)


def reason_key(r):
    """a break reason without its frame and location ("forward (file:line): graph break: X" -> X)"""
    import re
    r = re.sub(r"^\S+ \([^()]*\): ", "", r)
    r = r[len("graph break: "):] if r.startswith("graph break: ") else r
    r = re.sub(r"0x[0-9a-f]+", "0x…", r)
    return r[:120]


def write_md(rows, path, meta):
    st = collections.Counter(r["status"] for r in rows)
    ran = [r for r in rows if r["status"] in ("whole", "broken", "fallback", "wrong", "compile_differs", "fp32_noise",
                                              "torchc_raised")]
    reasons = collections.Counter()
    per_model = collections.Counter()
    for r in rows:
        ks = set(reason_key(x) for x in r.get("reasons", []))
        for k in ks:
            per_model[k] += 1
        for x in r.get("reasons", []):
            reasons[reason_key(x)] += 1
    with open(path, "w") as f:
        f.write(f"# Tiny transformers sweep ({meta['when']}, transformers {meta['transformers']}, "
                f"torch {meta['torch']}, commit {meta['commit']}"
                f"{', padded attention_mask' if meta.get('padded') else ''}"
                f"{', one decode step with a Cache' if meta.get('decode') else ''}"
                f"{', training: train() mode, dropout 0, loss.backward(), loss and grads compared' if meta.get('train') else ''})\n\n")
        f.write(f"{len(rows)} model types; ran under torchc: {len(ran)}; "
                + ", ".join(f"{k} {v}" for k, v in sorted(st.items())) + "\n\n")
        if meta.get("train"):
            f.write(f"**Whole (1 forward graph, 0 breaks, 1 backward graph, loss and grads match eager): "
                    f"{st['whole']} of {len(ran)}**; grads wrong {st['wrong']}; as Dynamo's (compile_differs) "
                    f"{st['compile_differs']}; fp32 noise (float64 compiled run matches) {st['fp32_noise']}; "
                    f"raising {st['torchc_raised']}\n\n")
        else:
            f.write(f"**Whole (1 graph, 0 breaks, matches eager): {st['whole']} of {len(ran)}**\n\n")
        if meta.get("compare") and os.path.exists(meta["compare"]):
            inf = {r["model"]: r["status"] for r in json.load(open(meta["compare"]))["rows"]}
            here = {r["model"]: r for r in rows}
            both = [m for m, s in inf.items() if s == "whole" and m in here]
            lost = [m for m in both if here[m]["status"] != "whole"]
            f.write(f"Whole in inference ({os.path.basename(meta['compare'])}) and run here: {len(both)}; "
                    f"whole in training too: {len(both) - len(lost)}; not: {len(lost)}"
                    + (" (" + ", ".join(f"{m}: {here[m]['status']}" for m in lost) + ")" if lost else "") + "\n\n")
        f.write("## Break reasons (models affected / occurrences)\n\n")
        for k, n in per_model.most_common(40):
            f.write(f"- {n} / {reasons[k]}: {k}\n")
        f.write(f"\n## Models\n\n| model | status | graphs/breaks{'/bwd' if meta.get('train') else ''} | ops | s | reason / error |\n|---|---|---|---|---|---|\n")
        for r in rows:
            g = f"{r['graphs']}/{r['breaks']}" if "graphs" in r else "-"
            if "bwd_graphs" in r:
                g += f"/{r['bwd_graphs']}"
            why = r.get("why") or r.get("error") or "; ".join(sorted(set(reason_key(x) for x in r.get("reasons", []))))[:160]
            why = why.replace("|", "\\|").replace("\n", " ")
            f.write(f"| {r['model']} | {r['status']} | {g} | {r.get('ops', '-')} | {r.get('seconds', '-')} | {why} |\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=None, help="comma-separated substrings of model_type")
    ap.add_argument("--tag", default="")
    ap.add_argument("--rerun", default=None, metavar="JSON:STATUS,...",
                    help="only the models of an earlier run's JSON with these statuses "
                         "(e.g. results/sweep_tiny_before.json:broken,wrong,torchc_raised,crashed)")
    ap.add_argument("--timeout", type=int, default=90, help="seconds per model")
    ap.add_argument("--chunk", type=int, default=25, help="models per worker process")
    ap.add_argument("--skip-done", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at once (each one thread)")
    ap.add_argument("--torchc-path", default=ROOT,
                    help="directory holding the torchc package to test (a copy keeps a long run "
                         "apart from rebuilds of this tree)")
    ap.add_argument("--padded", action="store_true",
                    help="pass an attention_mask with left padding in its second row wherever the "
                         "forward takes one (the inputs a tokenizer gives a batch of unequal texts)")
    ap.add_argument("--decode", action="store_true",
                    help="compile one generation step (a new token a row, the prefill's Cache as "
                         "past_key_values) instead of the prefill; the Cache's tensors after the "
                         "step are compared too; models without a Cache: no_decode")
    ap.add_argument("--train", action="store_true",
                    help="train() mode, dropout 0, forward under torchc.explain, a scalar loss and "
                         "loss.backward(); the loss and every parameter's .grad compared with eager's; "
                         "whole: 1 graph, 0 breaks, 1 backward graph")
    ap.add_argument("--compare", default=None, metavar="JSON",
                    help="an inference run's JSON: list the models whole there and not whole here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    global PADDED, DECODE, TRAIN
    PADDED, DECODE, TRAIN = a.padded, a.decode, a.train
    if a.worker is not None:
        worker(a.worker.split(","), a.timeout)
        return 0
    import torch
    import transformers
    names = everything = model_types()
    if a.models:
        pats = a.models.split(",")
        names = [n for n in names if any(p == n or (p.endswith("*") and n.startswith(p[:-1])) or p in n for p in pats)]
    if a.rerun:
        path, _, sts = a.rerun.rpartition(":")
        keep = {r["model"] for r in json.load(open(path))["rows"] if r["status"] in sts.split(",")}
        names = [n for n in names if n in keep]
    base = os.path.join(RESULTS, "sweep_tiny" + (f"_{a.tag}" if a.tag else ""))
    rows = {}
    if a.skip_done and os.path.exists(base + ".json"):
        rows = {r["model"]: r for r in json.load(open(base + ".json"))["rows"]}
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "torch": torch.__version__,
            "transformers": transformers.__version__, "commit": commit, "batch": B, "seq": SEQ,
            "padded": a.padded, "decode": a.decode, "train": a.train, "compare": a.compare}
    todo = [n for n in names if n not in rows]

    def save():
        # with --skip-done the file keeps the rows of earlier runs outside this run's models
        out = [rows[n] for n in (everything if a.skip_done else names) if n in rows]
        st = collections.Counter(r["status"] for r in out)
        with open(base + ".json.tmp", "w") as f:
            json.dump({"meta": meta, "summary": dict(st), "rows": out}, f, indent=1)
        os.replace(base + ".json.tmp", base + ".json")
        write_md(out, base + ".md", meta)

    env = dict(os.environ, PYTHONPATH=a.torchc_path + os.pathsep + ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if a.jobs > 1:  # tiny models: one thread each, so that jobs don't oversubscribe the cores
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    lock = threading.Lock()

    def run_chunk(chunk):
        p = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__), "--worker", ",".join(chunk),
                              "--timeout", str(a.timeout)] + (["--padded"] if a.padded else []) +
                             (["--decode"] if a.decode else []) + (["--train"] if a.train else []), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env)
        cur = None
        for ln in p.stdout:
            if ln.startswith("START "):
                cur = ln.split()[1]
            elif ln.startswith("RESULT "):
                r = json.loads(ln[7:])
                cur = None
                g = f"{r.get('graphs', '-')}/{r.get('breaks', '-')}" + (f"/{r['bwd_graphs']}" if "bwd_graphs" in r else "")
                with lock:
                    rows[r["model"]] = r
                    print(f"{r['model']:32s} {r['status']:14s} {g:>7s} {r.get('seconds', 0):6.1f}  "
                          f"{(r.get('why') or r.get('error') or '; '.join(sorted(set(map(reason_key, r.get('reasons', [])))))[:100])}",
                          flush=True)
                    save()
        rc = p.wait()
        if cur is not None:
            with lock:
                rows[cur] = {"model": cur, "status": "crashed", "error": f"worker died (rc {rc})"}
                print(f"{cur:32s} crashed (rc {rc})", flush=True)
                save()

    while todo:
        # a worker that died leaves the rest of its chunk to the next round
        chunks = [todo[i:i + a.chunk] for i in range(0, len(todo), a.chunk)]
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as ex:
            list(ex.map(run_chunk, chunks))
        todo = [n for n in todo if n not in rows]
    save()
    st = collections.Counter(r["status"] for r in rows.values())
    print(json.dumps(dict(st)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
