"""Tiny transformers models in training mode (issue 22 target: every suite model that captures
whole in inference also captures whole in training).

Each model runs .train() with labels (its loss: cross_entropy with ignore_index -100 inside
transformers' loss functions) and loss.backward(): the compiled step must be one forward
graph, no break and one backward graph (two-sided: a fallback or a split fails), and its
loss and every parameter's gradient must equal eager's. Dropout 0 gives eager's numbers
exactly up to rounding; with dropout > 0 the masks are drawn from ATen's generator in
eager's order on the CPU, so the same seed gives eager's loss too (checked), and a re-run
with the same seed gives the same numbers.
"""
import warnings

import pytest
import torch

import torchc

transformers = pytest.importorskip("transformers")
warnings.filterwarnings("ignore")

V, B, L = 96, 2, 8


def _bert(drop):
    cfg = transformers.BertConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=64, max_position_embeddings=32,
                                  hidden_dropout_prob=drop, attention_probs_dropout_prob=drop)
    return transformers.BertForMaskedLM(cfg)


def _gpt2(drop):
    cfg = transformers.GPT2Config(vocab_size=V, n_embd=32, n_layer=2, n_head=2, n_positions=32,
                                  resid_pdrop=drop, embd_pdrop=drop, attn_pdrop=drop)
    return transformers.GPT2LMHeadModel(cfg)


def _llama(drop):
    cfg = transformers.LlamaConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   num_key_value_heads=1, intermediate_size=64, max_position_embeddings=32,
                                   attention_dropout=drop)
    return transformers.LlamaForCausalLM(cfg)


def _opt(drop):
    # learned positions indexed by cumsum(attention_mask): a computed index checked after the
    # kernels (an extra graph output), differentiated through index_select's scatter-add
    cfg = transformers.OPTConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                 ffn_dim=64, word_embed_proj_dim=32, max_position_embeddings=32,
                                 dropout=drop, attention_dropout=drop)
    return transformers.OPTForCausalLM(cfg)


def _bloom(drop):
    # its GeLUFunction (a torch.autograd.Function) in training: forward and backward captured
    cfg = transformers.BloomConfig(vocab_size=V, hidden_size=32, n_layer=2, n_head=2,
                                   hidden_dropout=drop, attention_dropout=drop)
    return transformers.BloomForCausalLM(cfg)


MODELS = {"bert_mlm": _bert, "gpt2_lm": _gpt2, "llama_clm": _llama, "opt_clm": _opt, "bloom_clm": _bloom}


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (B, L), generator=g)
    labels = ids.clone()
    labels[0, :3] = -100  # ignored positions, as masked-LM data has
    return ids, labels


def _step(m, ids, labels, call=None):
    """loss and gradients of one step of m (run through `call`: the compiled module)"""
    m.zero_grad(set_to_none=True)
    out = (m if call is None else call)(input_ids=ids, labels=labels)
    out.loss.backward()
    return out.loss.detach(), {n: p.grad.detach().clone() for n, p in m.named_parameters() if p.grad is not None}


def _pair(name, drop):
    torch.manual_seed(0)
    me = MODELS[name](drop)
    torch.manual_seed(0)
    mc = MODELS[name](drop)
    mc.load_state_dict(me.state_dict())
    me.train()
    mc.train()
    return me, mc


def _draws_layerdrop(m, **kw):
    """whether m's training forward draws a 0-d torch.rand (transformers versions before about
    4.50 draw layerdrop's `torch.rand([]) < p` in training whatever p is: a data-dependent
    branch, where torch.compile breaks the graph too, so such a model cannot train whole)"""
    seen = []

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is torch.rand and args and tuple(args[0]) == ():
                seen.append(func)
            return func(*args, **(kwargs or {}))
    state = torch.get_rng_state()
    with Mode():
        m(**kw)
    torch.set_rng_state(state)
    return bool(seen)


# GPT-2 (its output record's __post_init__ reads self.__dict__, its logger's lru_cache'd
# warning_once) captures whole too: obj_dictview.c and ops_table.c's cached methods
WHOLE = ["bert_mlm", "llama_clm", "gpt2_lm", "opt_clm", "bloom_clm"]


@pytest.mark.parametrize("name", WHOLE)
def test_tiny_transformer_trains_whole(name):
    me, mc = _pair(name, 0.0)
    ids, labels = _batch()
    if _draws_layerdrop(me, input_ids=ids, labels=labels):
        pytest.skip("this transformers version branches on torch.rand([]) in training (layerdrop)")
    ex = torchc.explain(mc)(input_ids=ids, labels=labels)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)


@pytest.mark.parametrize("name", WHOLE)
def test_tiny_transformer_matches_eager(name, request):
    me, mc = _pair(name, 0.0)
    if _draws_layerdrop(me, **dict(zip(("input_ids", "labels"), _batch()))):
        # the frames around the data-dependent branch run eagerly: values are still compared
        request.node.add_marker(pytest.mark.allow_fallback)
    ex = torchc.explain(mc)(*(), **dict(zip(("input_ids", "labels"), _batch())))
    assert ex.backward_graph_count >= 1, str(ex)  # the loss's graph at least is differentiated
    cm = torchc.compile(mc)
    for step in range(2):  # the second call runs the cached graphs
        ids, labels = _batch(step)
        le, ge = _step(me, ids, labels)
        lc, gc = _step(mc, ids, labels, cm)
        torch.testing.assert_close(lc, le, rtol=1e-5, atol=1e-6)
        assert ge.keys() == gc.keys()
        for k in ge:
            torch.testing.assert_close(gc[k], ge[k], rtol=1e-4, atol=1e-6, msg=k)


@pytest.mark.parametrize("name", ["bert_mlm", "llama_clm"])
def test_tiny_transformer_dropout_same_seed(name):
    me, mc = _pair(name, 0.2)
    ids, labels = _batch()
    ex = torchc.explain(mc)(input_ids=ids, labels=labels)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    cm = torchc.compile(mc)
    torch.manual_seed(7)
    le, ge = _step(me, ids, labels)
    torch.manual_seed(7)
    lc, gc = _step(mc, ids, labels, cm)
    assert lc.shape == () and lc.dtype == torch.float32 and torch.isfinite(lc)
    assert all(torch.isfinite(g).all() for g in gc.values())
    torch.manual_seed(7)
    lc2, gc2 = _step(mc, ids, labels, cm)
    assert torch.equal(lc2, lc)  # same seed, same masks
    for k in gc:
        assert torch.equal(gc2[k], gc[k]), k
    # eager's masks too: the same generator draws, in eager's order (CPU)
    torch.testing.assert_close(lc, le, rtol=1e-5, atol=1e-6)
    for k in ge:
        torch.testing.assert_close(gc[k], ge[k], rtol=1e-4, atol=1e-6, msg=k)
    torch.manual_seed(8)
    lc3, _ = _step(mc, ids, labels, cm)
    assert not torch.equal(lc3, lc)  # another seed, other masks: dropout is live


@pytest.mark.allow_fallback  # the config deepcopy frames (inference's breaks too)
def test_t5_training_captures_as_inference():
    """T5 (a learned relative position bias added to the attention mask: sdpa's mask requires
    grad in training) captures in training exactly as in inference — no break for a training
    reason, the same graph and break counts (its remaining breaks, the deepcopy of its config
    in get_text_config, are inference's too) — and loss and every gradient equal eager's."""
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                                num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    m = transformers.T5ForConditionalGeneration(cfg)
    ids = torch.randint(0, V, (B, L))
    lab = torch.randint(0, V, (B, 6))
    m.eval()
    torchc.reset()
    with torch.no_grad():
        ei = torchc.explain(m)(input_ids=ids, labels=lab)
    m.train()
    torchc.reset()
    et = torchc.explain(m)(input_ids=ids, labels=lab)
    assert not [r for r in et.break_reasons if "training" in r], et.break_reasons
    assert (et.graph_count, et.graph_break_count) == (ei.graph_count, ei.graph_break_count), et.break_reasons
    assert et.backward_graph_count >= 1
    torchc.reset()
    m.zero_grad()
    le = m(input_ids=ids, labels=lab).loss
    le.backward()
    ge = {k: p.grad.clone() for k, p in m.named_parameters() if p.grad is not None}
    m.zero_grad()
    lc = torchc.compile(m)(input_ids=ids, labels=lab).loss
    lc.backward()
    gc = {k: p.grad.clone() for k, p in m.named_parameters() if p.grad is not None}
    torch.testing.assert_close(lc, le, rtol=1e-5, atol=1e-6)
    assert set(gc) == set(ge)
    for k in ge:
        torch.testing.assert_close(gc[k], ge[k], rtol=1e-4, atol=1e-5)


_MORE = {
    "distilbert": lambda: transformers.DistilBertForMaskedLM(transformers.DistilBertConfig(
        vocab_size=V, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=32)),  # dropout 0.1
    "mistral": lambda: transformers.MistralForCausalLM(transformers.MistralConfig(
        vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        intermediate_size=64, max_position_embeddings=32)),
    "phi": lambda: transformers.PhiForCausalLM(transformers.PhiConfig(
        vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32)),
    "bart": lambda: transformers.BartForConditionalGeneration(transformers.BartConfig(
        vocab_size=V, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=32)),
}


@pytest.mark.parametrize("name", sorted(_MORE))
def test_more_models_train_whole(name):
    """Models that capture whole in inference capture whole in training (1 graph, 0 breaks,
    1 backward graph); loss and every gradient equal eager's (dropout: same seed, same masks)."""
    torch.manual_seed(0)
    m = _MORE[name]()
    ids = torch.randint(3, V, (B, L))
    kw = dict(input_ids=ids, labels=ids)
    m.eval()
    torchc.reset()
    with torch.no_grad():
        ei = torchc.explain(m)(**kw)
    assert (ei.graph_count, ei.graph_break_count) == (1, 0), ei.break_reasons
    m.train()
    if _draws_layerdrop(m, **kw):
        pytest.skip("this transformers version branches on torch.rand([]) in training (layerdrop)")
    torchc.reset()
    et = torchc.explain(m)(**kw)
    assert (et.graph_count, et.graph_break_count, et.backward_graph_count) == (1, 0, 1), et.break_reasons
    torchc.reset()
    grads = []
    for fn in (m, torchc.compile(m)):
        torch.manual_seed(5)
        m.zero_grad()
        loss = fn(**kw).loss
        loss.backward()
        grads.append((loss.detach(), {k: p.grad.clone() for k, p in m.named_parameters() if p.grad is not None}))
    (le, ge), (lc, gc) = grads
    torch.testing.assert_close(lc, le, rtol=1e-5, atol=1e-6)
    assert set(gc) == set(ge)
    for k in ge:
        torch.testing.assert_close(gc[k], ge[k], rtol=1e-4, atol=1e-5)
