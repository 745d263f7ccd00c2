"""Training capture against inference capture, model by model (issue 22's target: every suite
model that captures whole in inference also captures whole in training).

For each model: inference (eval(), no_grad) under torchc.explain -> graphs / breaks; then
training (train(), grad on) under torchc.explain of the module call, a loss over the output
tensors (sum of the mean squares of the floating outputs) and loss.backward() -> graphs,
breaks, backward_graph_count, saved bytes, reasons; and the loss, every parameter's gradient
and every buffer (BatchNorm running stats) against eager's from the same seed (dropout draws
the same masks on the CPU).

Models: the tiny transformers configs of benchmarks/suite.py (tests/test_models_tiny*.py)
and small nn models defined here (CNNs with BatchNorm in training mode, depthwise conv,
pooling, residuals; nn.TransformerEncoderLayer, nn.MultiheadAttention, a GRU-cell-style
recurrence).

    PYTHONPATH=. python benchmarks/train_capture.py --models nn            # the nn models
    PYTHONPATH=. python benchmarks/train_capture.py --models hf_bert,hf_gpt2
    PYTHONPATH=. python benchmarks/train_capture.py --models tiny --json out.jsonl

Each model runs after torchc.reset(); a group runs in one process (--models), so a test or a
table should run each group in its own process as tests/test_trainmodels_capture.py does.
"""
import argparse
import copy
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# ---- small nn models -----------------------------------------------------------------------------

class ConvBN(nn.Module):
    """conv + BatchNorm (training: batch statistics, running-stat updates) + ReLU"""

    def __init__(self, cin, cout, k=3, stride=1, groups=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ResBlock(nn.Module):
    def __init__(self, c, stride=1):
        super().__init__()
        self.a = ConvBN(c, c * 2 if stride == 2 else c, 3, stride)
        co = c * 2 if stride == 2 else c
        self.b = nn.Conv2d(co, co, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(co)
        self.short = (nn.Sequential(nn.Conv2d(c, co, 1, stride, bias=False), nn.BatchNorm2d(co))
                      if stride != 1 else nn.Identity())

    def forward(self, x):
        return F.relu(self.bn(self.b(self.a(x))) + self.short(x))


class TinyResNet(nn.Module):
    """residual CNN: BatchNorm in training mode, strided convs, max and adaptive avg pooling"""

    def __init__(self, n=10):
        super().__init__()
        self.stem = ConvBN(3, 8)
        self.pool = nn.MaxPool2d(2)
        self.l1 = ResBlock(8)
        self.l2 = ResBlock(8, stride=2)
        self.head = nn.Linear(16, n)

    def forward(self, x):
        x = self.l2(self.l1(self.pool(self.stem(x))))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand 1x1, depthwise 3x3, project 1x1, residual; ReLU6"""

    def __init__(self, c, e=4):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, c * e, 1, bias=False), nn.BatchNorm2d(c * e), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(c * e, c * e, 3, 1, 1, groups=c * e, bias=False),
                                nn.BatchNorm2d(c * e), nn.ReLU6())
        self.proj = nn.Sequential(nn.Conv2d(c * e, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.proj(self.dw(self.expand(x)))


class TinyMobileNet(nn.Module):
    """depthwise convs, hardswish, avg pooling, dropout before the classifier"""

    def __init__(self, n=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(8), InvertedResidual(8))
        self.pool = nn.AvgPool2d(2)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(8 * 4 * 4, n)

    def forward(self, x):
        return self.fc(self.drop(self.pool(self.blocks(self.stem(x))).flatten(1)))


class TransformerEnc(nn.Module):
    """nn.TransformerEncoderLayer (dropout, layer norm, relu FFN) over embeddings"""

    def __init__(self, V=64, d=32, norm_first=False, act="relu"):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.layer = nn.TransformerEncoderLayer(d, 4, 64, dropout=0.1, batch_first=True, norm_first=norm_first,
                                                activation=act)
        self.out = nn.Linear(d, V)

    def forward(self, ids):
        return self.out(self.layer(self.emb(ids)))


class MHABlock(nn.Module):
    """nn.MultiheadAttention with a causal mask, a residual and LayerNorm, GELU MLP"""

    def __init__(self, d=32, L=8):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 4, dropout=0.1, batch_first=True)
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d))
        self.register_buffer("mask", torch.triu(torch.full((L, L), float("-inf")), 1))

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class GRUCellLoop(nn.Module):
    """a GRU-style cell unrolled over a short sequence with nn.GRUCell, and a hand-written one"""

    def __init__(self, d=16, h=24):
        super().__init__()
        self.cell = nn.GRUCell(d, h)
        self.wx = nn.Linear(d, 3 * h)
        self.wh = nn.Linear(h, 3 * h, bias=False)
        self.out = nn.Linear(2 * h, 4)

    def forward(self, x):
        B, T, _ = x.shape
        h1 = x.new_zeros(B, self.cell.hidden_size)
        h2 = x.new_zeros(B, self.cell.hidden_size)
        for t in range(T):
            h1 = self.cell(x[:, t], h1)
            r, z, n = self.wx(x[:, t]).chunk(3, -1)
            hr, hz, hn = self.wh(h2).chunk(3, -1)
            r = torch.sigmoid(r + hr)
            z = torch.sigmoid(z + hz)
            n = torch.tanh(n + r * hn)
            h2 = (1 - z) * n + z * h2
        return self.out(torch.cat([h1, h2], -1))


class LSTMRNNCells(nn.Module):
    """nn.LSTMCell, nn.RNNCell (tanh, and relu without biases) unrolled, unbatched steps too"""

    def __init__(self, d=16, h=20):
        super().__init__()
        self.lstm = nn.LSTMCell(d, h)
        self.rnn = nn.RNNCell(h, h)
        self.rnn_relu = nn.RNNCell(h, h, bias=False, nonlinearity="relu")
        self.out = nn.Linear(h, 3)

    def forward(self, x):
        B, T, _ = x.shape
        h = c = None
        hs = []
        for t in range(T):
            h, c = self.lstm(x[:, t], None if h is None else (h, c))
            hs.append(self.rnn_relu(self.rnn(h), h))
        last = self.rnn(hs[-1][0], hs[-2][0])  # an unbatched (1-D) step
        return self.out(torch.stack(hs, 1)).sum(1) + self.out(last)


class MLPDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.SiLU(), nn.Dropout(0.1), nn.Linear(64, 64), nn.LayerNorm(64),
                                 nn.Tanh(), nn.Linear(64, 5))

    def forward(self, x):
        return self.net(x)


def nn_models():
    img = lambda d: {"x": torch.randn(4, 3, 16, 16, device=d)}
    return {
        "nn_mlp_dropout": (MLPDropout, lambda d: {"x": torch.randn(8, 20, device=d)}),
        "nn_resnet_bn": (TinyResNet, img),
        "nn_mobilenet_dw": (TinyMobileNet, lambda d: {"x": torch.randn(4, 3, 16, 16, device=d)}),
        "nn_transformer_enc": (TransformerEnc, lambda d: {"ids": torch.randint(0, 64, (2, 8), device=d)}),
        "nn_transformer_enc_prenorm_gelu": (lambda: TransformerEnc(norm_first=True, act="gelu"),
                                            lambda d: {"ids": torch.randint(0, 64, (2, 8), device=d)}),
        "nn_mha_block": (MHABlock, lambda d: {"x": torch.randn(2, 8, 32, device=d)}),
        "nn_gru_cell": (GRUCellLoop, lambda d: {"x": torch.randn(3, 5, 16, device=d)}),
        "nn_lstm_rnn_cells": (LSTMRNNCells, lambda d: {"x": torch.randn(2, 4, 16, device=d)}),
    }


def memory_models():
    """larger sizes for the activation-memory figures (deliverable 3): a transformer block
    (pre-norm, GELU, dropout) and a BatchNorm residual CNN"""
    class Block(nn.Module):
        def __init__(self, d=256, L=128):
            super().__init__()
            self.enc = nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.1, batch_first=True, norm_first=True,
                                                  activation="gelu")

        def forward(self, x):
            return self.enc(x)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = ConvBN(3, 32)
            self.blocks = nn.Sequential(ResBlock(32), ResBlock(32, stride=2), ResBlock(64), InvertedResidual(64))
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            return self.fc(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))
    return {
        "mem_transformer_block": (Block, lambda d: {"x": torch.randn(8, 128, 256, device=d)}),
        "mem_resnet_cnn": (CNN, lambda d: {"x": torch.randn(16, 3, 32, 32, device=d)}),
    }


# ---- the table -----------------------------------------------------------------------------------

TINY = ["hf_bart", "hf_bert", "hf_bloom", "hf_gemma", "hf_gpt2", "hf_gpt_neo", "hf_llama", "hf_mistral", "hf_opt",
        "hf_phi", "hf_qwen2", "hf_t5", "hf_vit", "hf_whisper"]


def table():
    import suite
    out = {}
    try:
        out.update(suite.hf_models(suite.Scale(tiny=True, batch=2)))
    except ImportError:
        pass
    out.update(nn_models())
    out.update(memory_models())
    return out


def loss_of(out):
    """a scalar over every floating output tensor (its mean square): every output feeds the
    backward, as a loss over logits and auxiliary outputs would"""
    import suite
    ts = [t for t in suite.tensors_of(out) if t.is_floating_point() and t.requires_grad]
    if not ts:
        return None
    return sum(t.float().square().mean() for t in ts)


def grads_of(m):
    return {n: p.grad.detach().clone() for n, p in m.named_parameters() if p.grad is not None}


def close(a, b, rtol, atol):
    return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def rmse(a, b):
    return torch.sqrt(torch.mean(torch.square(a.double() - b.double()))).item() if a.numel() else 0.0


def fp64_reference(m0, inputs):
    """loss, gradients and buffers of one training step of a float64 copy of m0 (same seed),
    by the names measure() uses; None where float64 fails in eager"""
    import suite
    try:
        m = copy.deepcopy(m0).double()
        seed(1)
        loss = loss_of(m(**suite.cast_inputs(inputs, torch.float64)))
        loss.backward()
    except Exception:
        return None
    ref = {"loss": loss.detach()}
    ref.update({f"grad {k}": v for k, v in grads_of(m).items()})
    ref.update({f"buffer {k}": v for k, v in m.named_buffers()})
    return ref


def seed(s):
    """torch's and numpy's generators (wav2vec2-style SpecAugment draws its masks with numpy)"""
    torch.manual_seed(s)
    try:
        import numpy
        numpy.random.seed(s)
    except ImportError:
        pass


def without_random_flow(build):
    """build, then switch off the training-only control flow on random draws: LayerDrop
    (`torch.rand([]) < layerdrop` skips a layer: a branch on data, a break) and SpecAugment
    (masks drawn by numpy on the host: a break). What is left is the capture of the rest."""
    def b():
        m = build()
        c = getattr(m, "config", None)
        if c is not None and hasattr(c, "apply_spec_augment"):
            c.apply_spec_augment = False
        for obj in [c] + list(m.modules()):
            for k in ("layerdrop", "encoder_layerdrop", "decoder_layerdrop"):
                if isinstance(getattr(obj, k, None), float):
                    setattr(obj, k, 0.0)
        return m
    return b


def measure(name, build, make_inputs, rtol=1e-4, atol=1e-5):
    import torchc
    res = {"name": name}
    t0 = time.time()
    torch.manual_seed(0)
    model = build()
    inputs = make_inputs("cpu")
    # inference
    model.eval()
    torchc.reset()
    with torch.no_grad():
        ei = torchc.explain(model)(**inputs)
    res.update(inf_graphs=ei.graph_count, inf_breaks=ei.graph_break_count, inf_ops=ei.op_count)
    # training: eager reference from the same state and seed
    model.train()
    mc = copy.deepcopy(model)
    m0 = copy.deepcopy(model)
    seed(1)
    le = loss_of(model(**inputs))
    if le is None:
        res.update(error="no output requires grad")
        return res
    le.backward()
    ge = grads_of(model)
    be = {n: b.clone() for n, b in model.named_buffers()}
    torchc.reset()
    seed(1)
    et = torchc.explain(mc)(**inputs)
    lc = loss_of(et.result)
    lc.backward()
    gc = grads_of(mc)
    bc = dict(mc.named_buffers())
    res.update(train_graphs=et.graph_count, train_breaks=et.graph_break_count,
               backward_graphs=et.backward_graph_count, train_ops=et.op_count,
               backward_ops=et.backward_op_count, saved_bytes=et.saved_bytes,
               reasons=et.break_reasons[:12], inf_reasons=ei.break_reasons[:6])
    # compiled against eager: allclose, else the dynamo harness rule against a float64 run
    # from the same state and seed (error <= 2x eager's + 1e-5): fp32 rounding in deep
    # nets (BatchNorm over few elements) moves large gradients by more than rtol
    pairs = [("loss", lc.detach(), le.detach(), 1e-5, 1e-6)]
    pairs += [(f"grad {k}", gc[k], ge[k], rtol, atol) for k in ge if k in gc]
    pairs += [(f"buffer {k}", bc[k], be[k], rtol, atol) for k in be]
    bad = [] if set(gc) == set(ge) else [f"grads of {sorted(set(gc) ^ set(ge))[:4]} differ in presence"]
    worst = max([(gc[k] - ge[k]).abs().max().item() for k in ge if k in gc and ge[k].numel()] or [0.0])
    off = [(n, c, e) for n, c, e, rt, at in pairs
           if not (close(c, e, rt, at) if e.is_floating_point() else torch.equal(c, e))]
    ref = fp64_reference(m0, inputs) if off else None
    for n, c, e in off:
        r = ref.get(n) if ref is not None else None
        if r is None or not e.is_floating_point() or c.shape != e.shape:
            bad.append(f"{n}: max diff {(c.double() - e.double()).abs().max().item():.3g}" if c.shape == e.shape
                       else f"{n}: shape {tuple(c.shape)} vs {tuple(e.shape)}")
            continue
        rc, re_ = rmse(c, r), rmse(e, r)
        if not rc <= 2.0 * re_ + 1e-5:
            bad.append(f"{n}: rmse vs fp64 {rc:.3g}, eager's {re_:.3g}")
    res["fp64_judged"] = len(off) - len(bad) if off else 0
    res.update(ok=not bad, mismatch=bad[:6], max_grad_diff=worst, n_grads=len(ge))
    res["seconds"] = round(time.time() - t0, 1)
    return res


def saved_storages_bytes(m, inputs, call):
    """bytes of the distinct storages autograd keeps for the backward after call(**inputs)
    (saved_tensors_hooks: eager's saved tensors, and the compiled node's save_for_backward),
    parameters, buffers and the inputs left out (alive anyway): activation memory"""
    keep = {t.untyped_storage().data_ptr() for t in list(m.parameters()) + list(m.buffers())}
    keep |= {t.untyped_storage().data_ptr() for t in inputs.values() if isinstance(t, torch.Tensor)}
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in keep:
            seen[st.data_ptr()] = st.nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = call(**inputs)
    loss = loss_of(out)
    del out
    return sum(seen.values()), loss


def memory(name, build, make_inputs):
    """activation memory: eager's saved storages against the compiled graph's (deliverable 3)"""
    import torchc
    torch.manual_seed(0)
    m = build().train()
    inputs = make_inputs("cpu")
    torchc.reset()
    eager, _ = saved_storages_bytes(m, inputs, m)
    cm = torchc.compile(m)
    saved_tensors_bytes = saved_storages_bytes(m, inputs, cm)[0]  # first call compiles
    comp, _ = saved_storages_bytes(m, inputs, cm)
    ex = torchc.explain(cm)(**inputs)
    return {"name": name, "eager_saved": eager, "torchc_saved": comp, "explain_saved_bytes": ex.saved_bytes,
            "graphs": ex.graph_count, "breaks": ex.graph_break_count, "backward_graphs": ex.backward_graph_count,
            "ratio": round(comp / eager, 3) if eager else None, "first_call_saved": saved_tensors_bytes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="nn", help="comma list of names, or nn / tiny")
    ap.add_argument("--json", default=None, help="append one JSON line per model here")
    ap.add_argument("--memory", action="store_true", help="activation memory (saved bytes) against eager's")
    ap.add_argument("--no-random-flow", action="store_true",
                    help="LayerDrop and SpecAugment off (their branches on random draws break)")
    a = ap.parse_args()
    import warnings
    warnings.filterwarnings("ignore")
    tab = table()
    names = []
    for n in a.models.split(","):
        names += ([k for k in tab if k.startswith(n + "_")] if n in ("nn", "mem") else TINY if n == "tiny" else [n])
    for n in names:
        try:
            build, make_inputs = tab[n]
            if a.no_random_flow:
                build = without_random_flow(build)
            r = memory(n, build, make_inputs) if a.memory else measure(n, build, make_inputs)
        except Exception as e:
            r = {"name": n, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        print("RESULT " + json.dumps(r), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
