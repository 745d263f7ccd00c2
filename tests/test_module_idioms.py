"""Library-module idioms captured as one graph (torchvision models): container subclasses,
context predicates, usage logging, identity tests on tensors, nn.MultiheadAttention."""
import types

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from conftest import assert_same, explain_of


def one_graph(m, *args, rtol=None, atol=None):
    """compiled == eager, and the whole call is one graph without breaks."""
    with torch.no_grad():
        want = m(*args)
        cm = torchc.compile(m)
        assert_same(cm(*args), want, rtol, atol)
        assert_same(cm(*args), want, rtol, atol)
        ex = explain_of(cm, *args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    return ex


class ConvBN(nn.Sequential):  # like torchvision's Conv2dNormActivation: no forward of its own
    def __init__(self, c, act=True):
        layers = [nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)]
        if act:
            layers.append(nn.ReLU())
        super().__init__(*layers)


class Blocks(nn.ModuleList):
    pass


def test_sequential_subclass_forward_and_iteration():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(ConvBN(4), ConvBN(4, act=False))
            self.blocks = Blocks([nn.Linear(8, 8), nn.GELU()])

        def forward(self, x):
            for m in self.features:  # iteration over a Sequential of subclasses
                x = m(x)
            x = self.features[1](x) + len(self.features[0])  # indexing, len
            for b in self.blocks:
                x = b(x)
            return x

    one_graph(M().eval(), torch.randn(2, 4, 8, 8))


def test_sequential_subclass_with_own_iter():
    class Rev(nn.Sequential):
        def __iter__(self):
            return reversed(list(self._modules.values()))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = Rev(nn.Linear(4, 6), nn.Linear(6, 4))

        def forward(self, x):
            for m in self.s:  # runs the subclass's __iter__: must not be taken as in order
                x = m(x)
            return x

    m = M().eval()
    x = torch.randn(3, 6)
    with torch.no_grad():
        cm = torchc.compile(m)
        assert_same(cm(x), m(x))
        ex = explain_of(cm, x)
    # the subclass's Python __iter__ is inlined (obj_proto.c): reversed, in one graph
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons


@pytest.mark.allow_fallback
def test_sequential_subclass_with_own_getitem_breaks():
    class Odd(nn.Sequential):
        def __getitem__(self, i):
            return list(self._modules.values())[-1 - i]

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = Odd(nn.Linear(4, 6), nn.Linear(6, 4))

        def forward(self, x):
            return self.s[0](x)

    m = M().eval()
    x = torch.randn(3, 6)
    with torch.no_grad():
        assert_same(torchc.compile(m)(x), m(x))


def test_jit_and_compiler_predicates_are_false():
    def f(x):
        if torch.jit.is_scripting() or torch.jit.is_tracing():
            return x
        if torch.compiler.is_compiling():  # True in captured code: eager's x + 1 below
            x = x - 1
        x = x + 1
        if torch._C._get_tracing_state() is None:
            x = x * 2
        return x.relu()

    x = torch.randn(4, 5)
    with torch.no_grad():
        torchc.reset()
        ex = explain_of(torchc.compile(f), x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert_same(ex.result, (x * 2).relu())  # x - 1 + 1, then * 2
    assert_same(f(x), ((x + 1) * 2).relu())


def test_api_usage_logging_is_a_noop():
    def stoch(x, p):  # torchvision.ops.stochastic_depth's prologue
        if not torch.jit.is_scripting() and not torch.jit.is_tracing():
            log_once(stoch)
        if p < 0.0 or p > 1.0:
            raise ValueError("bad p")
        return x * 2

    def log_once(obj):  # torchvision.utils._log_api_usage_once
        module = obj.__module__
        if not module.startswith("torchvision"):
            module = f"torchvision.internal.{module}"
        name = obj.__class__.__name__
        if isinstance(obj, types.FunctionType):
            name = obj.__name__
        torch._C._log_api_usage_once(f"{module}.{name}")

    one_graph(lambda x: stoch(x, 0.1) + 1, torch.randn(3, 3))


def test_torchvision_stochastic_depth_eval():
    tv_ops = pytest.importorskip("torchvision.ops")
    m = tv_ops.StochasticDepth(0.2, "row").eval()
    one_graph(lambda x: m(x).sigmoid(), torch.randn(4, 3, 2))


def test_iteration_helpers_return_iterators():
    def f(xs):
        return reversed(xs), zip(xs, xs), enumerate(xs)

    xs = [torch.randn(2), torch.randn(2)]
    r, z, e = torchc.compile(f)(xs)
    rw, zw, ew = f(xs)
    assert iter(r) is r and iter(z) is z and iter(e) is e
    assert_same(list(r), list(rw))
    assert_same([tuple(p) for p in z], [tuple(p) for p in zw])
    assert [i for i, _ in e] == [i for i, _ in ew]


@pytest.mark.allow_fallback
def test_tuple_of_zip_and_reversed_iterator():
    def f(xs):
        t = tuple(zip(xs, xs))
        s = 0
        for a, b in t:
            s = s + a * b
        return s

    one_graph(f, [torch.randn(3), torch.randn(3)])

    def g(xs):
        return reversed(iter(xs))

    xs = [torch.randn(3)]
    with pytest.raises(TypeError):
        torchc.compile(g)(xs)


def test_is_between_constants_classes_and_tensors():
    def f(x, y):
        a = type(x) is torch.Tensor
        b = type(3) is not torch.Tensor
        c = x is y
        d = x is x
        e = torch.is_grad_enabled()
        return x * (a + b + c + d + e)

    x = torch.randn(3)
    one_graph(f, x, torch.randn(3))
    one_graph(lambda x: f(x, x), x)


def test_torch_assert_on_constants():
    def f(x):
        n, c = x.shape
        torch._assert(c == 4, f"bad width {c}")
        torch._assert(torch.overrides.has_torch_function((x,)) is False, "tf")
        return x.sum(1)

    one_graph(f, torch.randn(3, 4))


def test_genexpr_and_generator_function():
    def gen(xs):
        for i, x in enumerate(xs):
            yield x * (i + 1)

    def f(a, b, c):
        q, k, v = (t.transpose(1, 0) for t in (a, b, c))
        ok = all(t.device.type in ["cpu", "cuda"] for t in (a, b))
        s = sum(t.shape[0] for t in (a, b, c))
        return tuple(gen([q, k, v])), ok, s, any(t is None for t in (a, b))

    xs = [torch.randn(2, 3) for _ in range(3)]
    one_graph(f, *xs)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_generator_side_effects_are_not_captured():
    def f(xs):
        return any(x.add_(1).sum() is None for x in xs)  # in-place inside a generator

    xs = [torch.randn(3), torch.randn(3)]
    ys = [x.clone() for x in xs]
    assert torchc.compile(f)(xs) == f(ys)
    assert_same(xs, ys)


def test_unflatten():
    def f(x):
        return x.unflatten(-1, (3, -1)).unflatten(0, (1, 2)).sum(-1) + torch.unflatten(x, 1, (2, 6)).mean()

    one_graph(f, torch.randn(2, 12))


_NAME = "this module's global"


def test_nested_function_reads_its_own_module_globals():
    import types as _types
    mod = _types.ModuleType("tv_helper_mod")
    exec("import torch\n_NAME = 3.0\n"
         "def g(xs):\n    return tuple(x * _NAME for x in xs)\n", mod.__dict__)

    def f(x):
        return mod.g((x, x + 1))

    one_graph(f, torch.randn(4))


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kind", ["self", "self_weights", "cross", "kv", "mask"])
def test_multihead_attention(batch_first, kind):
    torch.manual_seed(0)
    m = nn.MultiheadAttention(16, 4, batch_first=batch_first).eval()
    x = torch.randn(2, 5, 16) if batch_first else torch.randn(5, 2, 16)
    y = torch.randn_like(x)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[1, 3:] = True

    def f(x, y):
        if kind == "self":
            return m(x, x, x, need_weights=False)[0].relu()
        if kind == "self_weights":
            return m(x, x, x)
        if kind == "cross":
            return m(x, y, y, need_weights=False)[0]
        if kind == "kv":
            return m(x, y, x * 2, need_weights=False)[0]
        return m(x, x, x, key_padding_mask=mask, need_weights=False)[0]

    with torch.no_grad():
        want = f(x, y)
        cf = torchc.compile(f)
        assert_same(cf(x, y), want, 1e-4, 1e-5)
        ex = explain_of(cf, x, y)
    if kind in ("self", "cross", "kv"):
        assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
        assert "sdpa" in ex.extern_calls or "scaled_dot_product_attention" in " ".join(ex.extern_calls), ex.extern_calls


def test_multihead_attention_output_layout_matches_eager():
    m = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        got = torchc.compile(lambda x: m(x, x, x, need_weights=False)[0])(x)
        want = m(x, x, x, need_weights=False)[0]
    assert got.stride() == want.stride()
    assert_same(got, want, 1e-4, 1e-5)


def test_torchvision_encoder_block():
    vt = pytest.importorskip("torchvision.models.vision_transformer")
    m = vt.EncoderBlock(4, 32, 64, 0.0, 0.0).eval()
    one_graph(m, torch.randn(2, 7, 32), rtol=1e-4, atol=1e-5)


def test_type_of_tensor_input_is_guarded():
    def f(x):
        if type(x) is torch.Tensor:
            return x + 1
        return x - 1

    cf = torchc.compile(f)
    p = nn.Parameter(torch.randn(3), requires_grad=False)
    t = torch.randn(3)
    with torch.no_grad():
        assert_same(cf(p), f(p))
        assert_same(cf(t), f(t))
        assert_same(cf(p), f(p))
        assert_same(cf(t * 2), f(t * 2))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_layer_norm_16bit(dtype):
    ln = nn.LayerNorm(48).to(dtype).eval()
    with torch.no_grad():
        ln.weight.normal_()
        ln.bias.normal_()

    def f(x):
        a = ln(x * 3 + 1)
        b = F.layer_norm(x, (48,), eps=1e-6)
        c = F.rms_norm(x, (48,), ln.weight)
        return a, b, c

    x = torch.randn(4, 5, 48).to(dtype)
    # eager rounds once from float32: at most one 16-bit ulp apart
    ex = one_graph(f, x, rtol=1e-2, atol=1e-2)
    got, want = torchc.compile(f)(x), f(x)
    for g, w in zip(got, want):
        assert (g.float() - w.float()).abs().max() <= 2 * torch.finfo(dtype).eps * w.float().abs().max()


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_is_grad_enabled_follows_traced_contexts():
    def f(x):
        a = torch.is_grad_enabled()
        with torch.no_grad():
            b = torch.is_grad_enabled()
        with torch.inference_mode(False):
            c = torch.is_grad_enabled()
        return x * (4 * a + 2 * b + c)

    x = torch.randn(3)
    cf = torchc.compile(f)
    assert_same(cf(x), f(x))  # grad mode on
    with torch.no_grad():
        assert_same(cf(x), f(x))
    assert_same(cf(x), f(x))


@pytest.mark.allow_fallback
def test_hook_registered_after_compiling_is_run():
    """a forward hook added after the first compiled call: the inlined forward is guarded on
    the module's (and torch's global) hook dicts being empty"""
    import torch.nn as nn
    import torchc

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x):
            return self.b(self.a(x).relu())

    m = Net().eval()
    cm = torchc.compile(m)
    x = torch.randn(2, 4)
    with torch.no_grad():
        cm(x)
        seen = []
        h = m.a.register_forward_hook(lambda mod, args, out: seen.append(out))
        got = cm(x)
        assert len(seen) == 1
        h.remove()
        g = nn.modules.module.register_module_forward_hook(lambda mod, args, out: seen.append(1))
        try:
            cm(x)
        finally:
            g.remove()
        assert len(seen) > 1
        torch.testing.assert_close(got, m(x))


# ---- module frames shared across instances --------------------------------------------------

import io as _io

_SINK = _io.StringIO()


class _Block(nn.Module):
    def __init__(self, scale=0.5):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.ln = nn.LayerNorm(8)
        self.scale = scale

    def forward(self, x):
        h = self.lin(self.ln(x)).relu()
        print("x", file=_SINK)  # a graph break: each block's forward runs as its own frame
        return x + h * self.scale


class _Deep(nn.Module):
    def __init__(self, n, scales=None):
        super().__init__()
        self.blocks = nn.ModuleList(_Block(scales[i] if scales else 0.5) for i in range(n))

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


def test_identical_blocks_share_entries():
    """48 instances of one block class: its forward (and the resume after its break) compile
    twice each (the first instance pinned, then one entry for the class), never the limit"""
    torch.manual_seed(0)
    m = _Deep(48)
    x = torch.randn(2, 8)
    with torch.no_grad():
        ex = explain_of(torchc.compile(m), x)
        torch.testing.assert_close(ex.result, m(x))
        ex2 = explain_of(torchc.compile(m), x)
    block = {k: n for k, n in ex.compiles_per_code.items() if f":{_Block.forward.__code__.co_firstlineno})" in k}
    assert 1 <= sum(block.values()) <= 4, ex.compiles_per_code
    # the loop's resume after each block is one code object (a resume of a resume is built
    # from the original code): at most the recompile limit, not one new code per iteration
    deep = {k: n for k, n in ex.compiles_per_code.items() if f":{_Deep.forward.__code__.co_firstlineno})" in k}
    assert sum(deep.values()) <= 1 + torchc.config.recompile_limit, ex.compiles_per_code
    assert not any("recompile limit" in r for r in ex.break_reasons + ex2.break_reasons)
    assert sum(ex2.compiles_per_code.values()) == 0  # the second call only hits
    assert ex2.pieces_run >= 48 and ex2.cache_hits == ex2.pieces_run  # a piece per block, each a hit


def test_shared_block_entry_reads_each_instance():
    """a class-guarded entry still reads each instance's parameters and guarded attributes"""
    torch.manual_seed(0)
    m = _Deep(12)
    with torch.no_grad():
        for i, b in enumerate(m.blocks):
            b.lin.weight.mul_(1 + i / 10)
        x = torch.randn(2, 8)
        cm = torchc.compile(m)
        torch.testing.assert_close(cm(x), m(x))
        m.blocks[5].scale = 2.0  # one instance differs: its own entry, the others still right
        torch.testing.assert_close(cm(x), m(x))
        m.blocks[3].ln.weight.fill_(3.0)
        torch.testing.assert_close(cm(x), m(x))


# ---- idioms of real models (tiny transformers configs) -------------------------------------

class ScaledEmbedding(nn.Embedding):  # an Embedding subclass calling super().forward (Gemma, BART)
    def __init__(self, n, d, scale=0.5):
        super().__init__(n, d)
        self.scale = scale

    def forward(self, ids):
        return super().forward(ids) * self.scale


def test_super_forward_of_a_library_base_class():
    # the base class's function lives in another module (its globals: F): reached through super()
    m = ScaledEmbedding(16, 8).eval()
    one_graph(m, torch.arange(6).reshape(2, 3))


@pytest.mark.parametrize("shape", [(2, 5), (7,), (1, 1), (3, 2)])
def test_diff(shape):
    x = torch.randn(*shape)
    one_graph(lambda x: torch.diff(x) * 2, x)
    if x.shape[-1] > 1:
        one_graph(lambda x: x.diff(n=2, dim=-1), x)
    pre = torch.zeros(*shape[:-1], 1)
    one_graph(lambda x, p: torch.diff(x, prepend=p, append=p + 1, dim=-1), x, pre)
    ids = torch.arange(10).reshape(2, 5)
    one_graph(lambda i: (torch.diff(i, prepend=i[:, :1] - 1, dim=-1) != 1).cumsum(-1), ids)
    b = torch.tensor([[True, False, False, True]])
    one_graph(lambda b: torch.diff(b, dim=1), b)


def test_contiguous_of_a_strided_input_is_a_copy():
    x = torch.randn(4, 6).t()
    ex = one_graph(lambda x: x.contiguous() + 1, x)
    assert ex.op_count >= 1

    def f(x):
        y = x.contiguous()
        return y, y.is_contiguous()
    with torch.no_grad():
        y, c = torchc.compile(f)(x)
    assert c and y.is_contiguous() and torch.equal(y, x) and y.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("ishape", [(2, 3), (4,), (2, 2, 2)])
def test_embedding_weight_indexed_by_a_tensor_of_any_rank(ishape):
    w = torch.randn(10, 4)
    idx = torch.randint(0, 10, ishape)
    one_graph(lambda w, i: w[i] * 2, w, idx)
    one_graph(lambda w, j: w[1:, j] + 1, w, torch.randint(0, 4, ishape))


@pytest.mark.no_compile
def test_weight_indexed_by_a_0d_input_tensor_is_left_to_eager():
    # eager: w[i] with a 0-d integer tensor is a view (a select at i), at a position known only
    # at run time: the frame runs eagerly with the reason (a gathered copy would not alias w)
    w, i = torch.randn(10, 4), torch.tensor(3)
    f = lambda w, i: w[i]  # noqa: E731
    torchc.reset()
    ex = torchc.explain(torchc.compile(f))(w, i)
    assert ex.graph_break_count == 1 and "0-d integer tensor index" in ex.break_reasons[0], ex
    y = torchc.compile(f)(w, i)
    assert torch.equal(y, w[3]) and y.data_ptr() == w[3].data_ptr()
