"""Side effects inside a call that the top frame ends up running eagerly (a graph break at
the call: something deep inside it is unsupported). The trace of the call is thrown away, and
so must be everything it logged: attribute writes, in-place tensor updates, list/dict
mutations. Otherwise the graph before the break replays them and the eager call does them
again (GPT-Neo/BLOOM's KV cache grew twice per layer: "size of tensor a (32) must match b (8)").
Each test compares the objects the caller holds with eager's and asserts the break happened
where expected (a graph before it), so a plain fallback fails the test."""
import pytest
import torch

import torchc
from conftest import assert_same


@torchc.disable
def opaque(x):
    return x + 0


class Layer:
    def __init__(self):
        self.ready = False

    def init(self, k):
        self.keys = k[:0]
        self.ready = True

    def update(self, k):
        if not self.ready:
            self.init(k)
        self.keys = torch.cat([self.keys, k], dim=0)
        return opaque(self.keys)  # the break: the whole update() runs eagerly


def run_both(f, make_state, *args):
    s_eager, s_comp = make_state(), make_state()
    want = f(*args, s_eager)
    ex = torchc.explain(f)(*args, s_comp)
    assert_same(ex.result, want)
    assert ex.graph_count >= 1, ex  # something compiled
    return ex, s_eager, s_comp


def test_attribute_write_inside_broken_call_runs_once():
    def f(x, layer):
        y = x * 2
        k = layer.update(y)
        return k.sum(0) + y

    ex, a, b = run_both(f, Layer, torch.randn(3, 4))
    assert_same(b.keys, a.keys)
    assert b.ready is True
    # and again with the state carried over (the cache grows by one each call)
    x = torch.randn(3, 4)
    assert_same(torchc.compile(f)(x, b), f(x, a))
    assert_same(b.keys, a.keys)


def test_inplace_update_inside_broken_call_runs_once():
    def g(t):
        t.add_(1)
        return opaque(t)

    def f(x, _state):
        y = x * 1
        z = g(x)  # break at this call: x.add_(1) is eager's, not the graph's
        return y + z

    x1, x2 = torch.zeros(4), torch.zeros(4)
    want = f(x1, None)
    ex = torchc.explain(f)(x2, None)
    assert_same(ex.result, want)
    assert_same(x2, x1)
    assert ex.graph_count >= 1


@pytest.mark.allow_fallback
def test_dict_write_inside_broken_call_runs_once():
    def g(d, x):
        d["n"] = d.get("n", 0) + 1
        return opaque(x)

    def f(x, d):
        y = x + 1
        return g(d, y) * 2

    ex, a, b = run_both(f, lambda: {"n": 0}, torch.randn(4))
    assert a == b and a["n"] == 1


def test_gpt_neo_kv_cache_pattern():
    """transformers' DynamicLayer/DynamicCache pattern: lazily initialised layers appended
    to a list, keys concatenated per call, an attention that breaks later."""
    class Cache:
        def __init__(self):
            self.layers = []

        def update(self, k, i):
            while len(self.layers) <= i:
                self.layers.append(Layer())
            return self.layers[i].update(k)

    def attn(q, k, cache, i):
        k = cache.update(k, i)
        w = q @ k.t()
        return opaque(w).softmax(-1)

    def f(x, cache):
        h = x
        for i in range(2):
            h = h + attn(h, h * 0.5, cache, i) @ h
        return h

    ex, a, b = run_both(f, Cache, torch.randn(5, 5))
    assert [l.keys.shape for l in b.layers] == [l.keys.shape for l in a.layers]
    for la, lb in zip(a.layers, b.layers):
        assert_same(lb.keys, la.keys)


def _tiny(name):
    T = __import__("pytest").importorskip("transformers")
    if name == "gptneo":
        cfg = T.GPTNeoConfig(hidden_size=32, num_layers=2, num_heads=2, vocab_size=100,
                             max_position_embeddings=64, attention_types=[[["global", "local"], 1]])
        return T.GPTNeoForCausalLM(cfg).eval(), cfg
    cfg = T.BloomConfig(hidden_size=32, n_layer=2, n_head=2, vocab_size=100)
    return T.BloomForCausalLM(cfg).eval(), cfg


@pytest.mark.allow_fallback
def test_tiny_gpt_neo_and_bloom_run_as_eager():
    """These raised RuntimeError under torchc (the KV cache updated twice per layer)."""
    import transformers as T
    for name in ("gptneo", "bloom"):
        torchc.reset()
        m, cfg = _tiny(name)
        ids = torch.randint(0, 100, (1, 8))
        with torch.no_grad():
            ca, cb = T.DynamicCache(config=cfg), T.DynamicCache(config=cfg)
            want = m(ids, past_key_values=ca).logits
            ex = torchc.explain(m)(ids, past_key_values=cb)
        assert_same(ex.result.logits, want, rtol=1e-4, atol=1e-4)
        assert ex.graph_count >= 1
        for la, lb in zip(ca.layers, cb.layers):
            assert_same(lb.keys, la.keys)
            assert_same(lb.values, la.values)
