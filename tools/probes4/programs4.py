"""Whole small programs written the 2026 way: config dataclasses, KV caches in dicts,
sampling loops, metric objects, registries, hooks, typed helpers."""
import dataclasses
import math
from collections import defaultdict
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@dataclasses.dataclass
class ModelArgs:
    dim: int = 8
    n_heads: int = 2
    n_layers: int = 2
    vocab: int = 11
    max_seq: int = 16
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    use_bias: bool = False


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def precompute_freqs(dim, end, theta):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    t = torch.arange(end, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rope(x, freqs):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs = freqs.view(1, xc.shape[1], 1, xc.shape[-1])
    return torch.view_as_real(xc * freqs).flatten(3).type_as(x)


class Attn(nn.Module):
    def __init__(self, a: ModelArgs, idx: int):
        super().__init__()
        self.idx = idx
        self.nh = a.n_heads
        self.hd = a.dim // a.n_heads
        self.wqkv = nn.Linear(a.dim, 3 * a.dim, bias=a.use_bias)
        self.wo = nn.Linear(a.dim, a.dim, bias=a.use_bias)

    def forward(self, x, freqs, cache: Optional[dict], pos: int):
        b, s, _ = x.shape
        q, k, v = self.wqkv(x).split(x.shape[-1], -1)
        q, k, v = (t.view(b, s, self.nh, self.hd) for t in (q, k, v))
        q, k = apply_rope(q, freqs), apply_rope(k, freqs)
        if cache is not None:
            ck, cv = cache.get(self.idx, (None, None))
            if ck is not None:
                k = torch.cat([ck, k], 1)
                v = torch.cat([cv, v], 1)
            cache[self.idx] = (k, v)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=(cache is None or pos == 0) and s > 1)
        return self.wo(o.transpose(1, 2).reshape(b, s, -1))


class Block(nn.Module):
    def __init__(self, a, i):
        super().__init__()
        self.n1 = RMSNorm(a.dim, a.norm_eps)
        self.at = Attn(a, i)
        self.n2 = RMSNorm(a.dim, a.norm_eps)
        self.ff = nn.Sequential(nn.Linear(a.dim, 4 * a.dim), nn.SiLU(), nn.Linear(4 * a.dim, a.dim))

    def forward(self, x, freqs, cache, pos):
        x = x + self.at(self.n1(x), freqs, cache, pos)
        return x + self.ff(self.n2(x))


class TinyLM(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.args = a
        self.emb = nn.Embedding(a.vocab, a.dim)
        self.layers = nn.ModuleList(Block(a, i) for i in range(a.n_layers))
        self.norm = RMSNorm(a.dim, a.norm_eps)
        self.out = nn.Linear(a.dim, a.vocab, bias=False)
        self.register_buffer("freqs", precompute_freqs(a.dim // a.n_heads, a.max_seq, a.rope_theta), persistent=False)

    def forward(self, tok, cache=None, pos: int = 0):
        h = self.emb(tok)
        fr = self.freqs[pos: pos + tok.shape[1]]
        for l in self.layers:
            h = l(h, fr, cache, pos)
        return self.out(self.norm(h)).float()


@scenario(rtol=1e-4, atol=1e-4)
def tiny_llama_with_kv_cache(C, R):
    m = TinyLM(ModelArgs()).eval()
    g = C(m)
    tok = torch.randint(0, 11, (2, 5))
    with torch.no_grad():
        R(g(tok))
        cache = {}
        lg = g(tok, cache, 0)
        R(lg)
        nxt = lg[:, -1].argmax(-1, keepdim=True)
        for p in range(5, 8):
            lg = g(nxt, cache, p)
            nxt = lg[:, -1].argmax(-1, keepdim=True)
            R(nxt)
        R({k: v[0].shape for k, v in cache.items()})


@scenario(rtol=1e-4, atol=1e-4)
def tiny_llama_train_step(C, R):
    torch.manual_seed(0)
    m = TinyLM(ModelArgs(use_bias=True))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)

    def step(tok):
        logits = m(tok[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tok[:, 1:].reshape(-1))
        loss.backward()
        return loss
    g = C(step)
    for _ in range(3):
        tok = torch.randint(0, 11, (2, 6))
        opt.zero_grad()
        R(g(tok))
        opt.step()
    R(m)


class Metric:
    def __init__(self):
        self.totals = defaultdict(float)
        self.counts = defaultdict(int)

    def update(self, name, v, n=1):
        self.totals[name] += float(v) * n
        self.counts[name] += n

    def compute(self):
        return {k: self.totals[k] / max(self.counts[k], 1) for k in sorted(self.totals)}


@scenario
def eval_loop_with_metric_object(C, R):
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    met = Metric()

    def evaluate(x, y):
        logits = net(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        met.update("loss", loss, x.shape[0])
        met.update("acc", acc.item(), x.shape[0])
        return logits
    g = C(evaluate)
    with torch.no_grad():
        for i in range(3):
            R(g(torch.randn(5 + i, 4), torch.randint(0, 3, (5 + i,))))
    R(met.compute())


REGISTRY = {}


def register(name):
    def deco(cls):
        REGISTRY[name] = cls
        cls.registry_name = name
        return cls
    return deco


@register("swiglu")
class SwiGLU(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Linear(d, 2 * d)

    def forward(self, x):
        a, b = self.w(x).chunk(2, -1)
        return F.silu(a) * b


@register("geglu")
class GeGLU(SwiGLU):
    def forward(self, x):
        a, b = self.w(x).chunk(2, -1)
        return F.gelu(a, approximate="tanh") * b


@scenario
def registry_built_model(C, R):
    class M(nn.Module):
        def __init__(self, kinds):
            super().__init__()
            self.blocks = nn.ModuleList(REGISTRY[k](4) for k in kinds)

        def forward(self, x):
            names = []
            for b in self.blocks:
                x = x + b(x)
                names.append(type(b).registry_name)
            return x, "-".join(names)
    m = M(["swiglu", "geglu", "swiglu"])
    R(C(m)(torch.randn(2, 4)))


@scenario
def beam_search_python_lists(C, R):
    torch.manual_seed(0)
    emb = nn.Embedding(7, 5)
    proj = nn.Linear(5, 7)

    def step(tok):
        return proj(emb(tok)).log_softmax(-1)

    g = C(step)

    def beam(start, width, steps):
        beams = [([start], 0.0)]
        for _ in range(steps):
            cand = []
            for seq, sc in beams:
                lp = g(torch.tensor([seq[-1]]))[0]
                top = lp.topk(width)
                for v, i in zip(top.values.tolist(), top.indices.tolist()):
                    cand.append((seq + [i], sc + v))
            beams = sorted(cand, key=lambda t: -t[1])[:width]
        return beams
    with torch.no_grad():
        R(beam(1, 2, 3))


@scenario
def masked_lm_loss_ignore_index(C, R):
    def f(logits, labels):
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100, reduction="mean")
        n = (labels != -100).sum()
        return loss, n, loss * n
    g = C(f)
    lab = torch.tensor([[1, -100, 2], [-100, -100, 0]])
    R(g(torch.randn(2, 3, 4), lab))
    R(g(torch.randn(2, 3, 4), torch.full((2, 3), -100)))


@scenario
def gradient_checkpoint_like_manual_loop(C, R):
    torch.manual_seed(0)
    layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def fwd(x):
        hs = []
        for i, l in enumerate(layers):
            x = torch.tanh(l(x))
            if i % 2 == 0:
                hs.append(x)
        return x.sum() + sum(h.mean() for h in hs)
    g = C(fwd)
    x = torch.randn(2, 4, requires_grad=True)
    l = g(x)
    l.backward()
    R((l, x.grad, [p.grad for p in layers.parameters()]))


@scenario
def optional_mask_padding(C, R):
    def attn(q, k, v, mask: Optional[torch.Tensor] = None, scale: Optional[float] = None):
        scale = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
        s = q @ k.transpose(-1, -2) * scale
        if mask is not None:
            s = s.masked_fill(~mask[:, None, :], float("-inf"))
        p = s.softmax(-1)
        p = torch.nan_to_num(p)
        return p @ v
    g = C(attn)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    R(g(q, k, v))
    m = torch.tensor([[True] * 5, [True, True, False, False, False]])
    R(g(q, k, v, m))
    R(g(q, k, v, torch.zeros(2, 5, dtype=torch.bool), 0.5))


@scenario
def stateful_module_counter_and_history(C, R):
    class Tracker(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0
            self.history = []
            self.l = nn.Linear(2, 2)

        def forward(self, x):
            self.steps += 1
            y = self.l(x)
            if self.steps % 2 == 0:
                self.history.append(float(y.mean()))
            return y * self.steps
    m = Tracker()
    g = C(m)
    for _ in range(4):
        R(g(torch.ones(1, 2)))
    R((m.steps, m.history))


@scenario
def dict_of_tensors_inputs_outputs(C, R):
    def f(batch: dict):
        out = {}
        for k, v in batch.items():
            if k.startswith("_"):
                continue
            out[k.upper()] = v.float().mean() if v.dtype != torch.bool else v.sum()
        out["n"] = len(batch)
        batch["seen"] = True
        return out
    g = C(f)
    b = {"x": torch.randn(3), "m": torch.tensor([True, False]), "_meta": "a", "ids": torch.arange(4)}
    R(g(b))
    R(sorted(b))
    R(g({"x": torch.ones(2)}))
