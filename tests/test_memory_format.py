"""Memory format (issue 26 item 9): compiled outputs have eager's strides.

Every case compiles (explain: one graph, no break; the conftest fixture fails a test whose
frame fell back), runs, and compares each output's values, .stride() and
is_contiguous(memory_format=...) with eager's on the same inputs: pointwise ops under
TensorIterator's rule (channels-last 4-d/5-d, transposed, permuted, size-0/1 dims,
broadcast mixes), reductions, views of intermediates, clone/contiguous/to(memory_format=),
*_like factories, cat, conv. Views inside captured code raise where eager raises.
"""
import pytest
import torch

import torchc

CUDA = torch.cuda.is_available()


def cl4(*s):
    return torch.randn(*s).to(memory_format=torch.channels_last)


def cl5(*s):
    return torch.randn(*s).to(memory_format=torch.channels_last_3d)


def tr2(a, b):
    return torch.randn(b, a).t()


def perm3(a, b, c):
    return torch.randn(c, a, b).permute(1, 2, 0)


FORMATS = [torch.contiguous_format, torch.channels_last, torch.channels_last_3d]


def flat(r):
    if isinstance(r, torch.Tensor):
        return [r]
    out = []
    for x in r:
        out += flat(x)
    return out


def check(fn, *args, graphs=1):
    want = flat(fn(*args))
    torchc.reset()
    e = torchc.explain(fn)(*args)
    assert e.graph_count == graphs and e.graph_break_count == 0, str(e)
    got = flat(torchc.compile(fn)(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w, equal_nan=True)
        assert g.stride() == w.stride(), (g.stride(), w.stride())
        for f in FORMATS:
            assert g.is_contiguous(memory_format=f) == w.is_contiguous(memory_format=f), f


# ---- pointwise ops: TensorIterator's rule ------------------------------------------------

INPUTS = {
    "cl4": lambda: cl4(2, 3, 4, 5),
    "cl4_c1": lambda: cl4(2, 1, 4, 5),
    "cl4_hw1": lambda: cl4(2, 3, 1, 1),
    "cl4_n0": lambda: cl4(0, 3, 4, 5),
    "cl4_odd": lambda: cl4(3, 7, 5, 3),
    "cl5": lambda: cl5(2, 3, 2, 4, 5),
    "tr2": lambda: tr2(3, 4),
    "tr2_1": lambda: tr2(1, 5),
    "perm3": lambda: perm3(2, 3, 4),
    "perm3_1": lambda: torch.randn(4, 1, 3).permute(2, 1, 0),
    "contig": lambda: torch.randn(2, 3, 4),
    "slice": lambda: torch.randn(4, 6)[:, ::2],
    "expanded": lambda: torch.randn(5, 1, 2).expand(5, 4, 2),
}


@pytest.mark.parametrize("name", sorted(INPUTS))
@pytest.mark.parametrize("op", ["mul2", "add_self", "neg", "relu", "sigmoid", "float64", "gt0", "where0", "sq"])
def test_pointwise(name, op):
    x = INPUTS[name]()
    f = {
        "mul2": lambda a: a * 2,
        "add_self": lambda a: a + a,
        "neg": lambda a: -a,
        "relu": lambda a: torch.relu(a),
        "sigmoid": lambda a: torch.sigmoid(a),
        "float64": lambda a: a.to(torch.float64),
        "gt0": lambda a: a > 0,
        "where0": lambda a: torch.where(a > 0, a, 0.0),
        "sq": lambda a: a * a + 1,
    }[op]
    check(f, x)


MIXES = [
    ("cl4+contig", lambda: (cl4(2, 3, 4, 5), torch.randn(2, 3, 4, 5))),
    ("contig+cl4", lambda: (torch.randn(2, 3, 4, 5), cl4(2, 3, 4, 5))),
    ("cl4+bias", lambda: (cl4(2, 3, 4, 5), torch.randn(3, 1, 1))),
    ("bias+cl4", lambda: (torch.randn(3, 1, 1), cl4(2, 3, 4, 5))),
    ("cl4+row", lambda: (cl4(2, 3, 4, 5), torch.randn(5))),
    ("cl4+0d", lambda: (cl4(2, 3, 4, 5), torch.tensor(2.0))),
    ("tr2+contig", lambda: (tr2(4, 3), torch.randn(4, 3))),
    ("contig+tr2", lambda: (torch.randn(4, 3), tr2(4, 3))),
    ("tr2+col", lambda: (tr2(4, 3), torch.randn(4, 1))),
    ("row+tr2", lambda: (torch.randn(3), tr2(4, 3))),
    ("perm3+contig", lambda: (perm3(2, 3, 4), torch.randn(2, 3, 4))),
    ("contig+perm3", lambda: (torch.randn(2, 3, 4), perm3(2, 3, 4))),
    ("expand+tr2", lambda: (torch.randn(4, 1).expand(4, 3), tr2(4, 3))),
    ("tr2+tr2", lambda: (tr2(4, 3), tr2(4, 3))),
    ("cl5+contig", lambda: (cl5(2, 3, 2, 4, 5), torch.randn(2, 3, 2, 4, 5))),
    ("cl4_c1+contig", lambda: (cl4(2, 1, 4, 5), torch.randn(2, 1, 4, 5))),
    ("int_cl4+f", lambda: (cl4(2, 3, 4, 5).to(torch.int32), torch.randn(2, 3, 4, 5))),
]


@pytest.mark.parametrize("name,mk", MIXES, ids=[m[0] for m in MIXES])
@pytest.mark.parametrize("op", ["add", "mul_sub", "maximum", "where"])
def test_binary_mixes(name, mk, op):
    a, b = mk()
    f = {
        "add": lambda x, y: x + y,
        "mul_sub": lambda x, y: x * y - x,
        "maximum": lambda x, y: torch.maximum(x, y),
        "where": lambda x, y: torch.where(x > 0, x, y),
    }[op]
    if op == "maximum" and a.dtype != b.dtype:
        a = a.float()
    check(f, a, b)


# ---- reductions, views, copies, factories --------------------------------------------------

@pytest.mark.parametrize("name", ["cl4", "tr2", "perm3", "cl5", "cl4_c1"])
def test_reductions(name):
    x = INPUTS[name]()
    check(lambda a: (a.sum(1), a.sum(1, keepdim=True), a.amax(-1, keepdim=True), a.mean(0)), x)


@pytest.mark.parametrize("name", ["cl4", "tr2", "perm3", "cl5", "contig"])
def test_views_of_intermediates(name):
    x = INPUTS[name]()
    nd = x.dim()
    check(lambda a: (a * 2).transpose(0, nd - 1), x)
    check(lambda a: (a + 1)[1:], x)
    check(lambda a: (a * 3).unsqueeze(0), x)
    check(lambda a: (a * 3)[0], x)
    check(lambda a: (a - 1).flatten(), x)
    check(lambda a: (a * 2).reshape(-1), x)


def test_expand_of_intermediate():
    # eager's view has 0 strides: the compiled function returns the same view of its base
    check(lambda a: (a * 2).expand(3, 4), torch.randn(3, 1))
    check(lambda a: (a * 2).expand(3, 4) + 0, torch.randn(3, 1))


@pytest.mark.parametrize("name", ["cl4", "tr2", "perm3", "cl5", "slice", "expanded", "cl4_c1"])
def test_copies_and_factories(name):
    x = INPUTS[name]()
    check(lambda a: (a * 2).clone(), x)
    check(lambda a: a.clone(), x)
    check(lambda a: (a * 2).contiguous(), x)
    check(lambda a: a.contiguous() + 0, x)
    check(lambda a: torch.zeros_like(a), x)
    check(lambda a: torch.ones_like(a) + a, x)
    check(lambda a: torch.full_like(a, 3.0), x)
    check(lambda a: a.double(), x)


@pytest.mark.parametrize("fmt", ["contiguous_format", "channels_last", "preserve_format"])
@pytest.mark.parametrize("name", ["cl4", "contig4", "tr4"])
def test_clone_and_to_memory_format(fmt, name):
    x = {"cl4": lambda: cl4(2, 3, 4, 5), "contig4": lambda: torch.randn(2, 3, 4, 5),
         "tr4": lambda: torch.randn(2, 5, 4, 3).transpose(1, 3)}[name]()
    mf = getattr(torch, fmt)
    check(lambda a: (a + 1).clone(memory_format=mf), x)
    check(lambda a: a.clone(memory_format=mf), x)
    check(lambda a: (a * 2).to(memory_format=mf), x)
    check(lambda a: a.to(torch.float64, memory_format=mf), x)
    check(lambda a: torch.zeros_like(a, memory_format=mf), x)
    check(lambda a: torch.ones_like(a * 2, memory_format=mf) + 1, x)


def test_to_memory_format_returns_self_when_it_already_is():
    x = cl4(2, 3, 4, 5)
    assert torchc.compile(lambda a: a.to(memory_format=torch.channels_last))(x) is x
    y = torchc.compile(lambda a: (a * 2).to(memory_format=torch.contiguous_format))(x)
    assert y.is_contiguous()


@pytest.mark.allow_fallback
def test_channels_last_on_wrong_rank_raises_like_eager():
    x = torch.randn(3, 4)
    f = torchc.compile(lambda a: (a * 2).clone(memory_format=torch.channels_last))
    with pytest.raises(RuntimeError):
        (x * 2).clone(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError):
        f(x)


def test_cat():
    check(lambda a, b: torch.cat([a * 1, b * 1], 1), cl4(2, 3, 4, 5), cl4(2, 2, 4, 5))
    check(lambda a, b: torch.cat([a * 1, b * 1], 0), cl4(2, 3, 4, 5), torch.randn(2, 3, 4, 5))
    check(lambda a, b: torch.cat([a * 1, b * 1], 0), tr2(4, 3), tr2(4, 3))


def test_conv_channels_last():
    conv = torch.nn.Conv2d(3, 4, 3).eval()
    with torch.no_grad():
        check(lambda a: conv(a), cl4(2, 3, 8, 8))
        check(lambda a: torch.relu(conv(a)) + 1, cl4(2, 3, 8, 8))
        check(lambda a: conv(a), torch.randn(2, 3, 8, 8))


def test_inplace_keeps_layout():
    def f(a, b):
        y = a * 2
        y.add_(b)
        return y

    def g(a, b):
        y = a * 1
        y.copy_(b)
        return y

    def h(a, b):
        a.mul_(b)
        return a.view(-1)

    check(f, cl4(2, 3, 4, 5), torch.randn(2, 3, 4, 5))
    check(g, tr2(4, 3), torch.randn(4, 3))
    check(g, torch.randn(4, 3), tr2(4, 3))
    check(lambda a, b: h(a * 1, b), torch.randn(4, 3), tr2(4, 3))


# ---- views of intermediates: raise where eager raises ---------------------------------------

@pytest.mark.allow_fallback
@pytest.mark.parametrize("mk,view", [
    (lambda: torch.randn(4, 3), lambda a: (a.t() * 2).view(-1)),
    (lambda: cl4(2, 3, 4, 5), lambda a: (a + 1).view(2, -1)),
    (lambda: torch.randn(2, 3, 4), lambda a: (a.permute(2, 0, 1) * 2).view(8, 3)),
    (lambda: torch.randn(4, 3).t(), lambda a: torch.relu(a).view(12)),
])
def test_view_of_nonviewable_intermediate_raises(mk, view):
    x = mk()
    with pytest.raises(RuntimeError) as ee:
        view(x)
    torchc.reset()
    with pytest.raises(RuntimeError) as ec:
        torchc.compile(view)(x)
    assert "view size is not compatible" in str(ec.value) and "view size is not compatible" in str(ee.value)


@pytest.mark.parametrize("mk,fn", [
    (lambda: torch.randn(4, 3), lambda a: (a.t() * 2).reshape(-1)),
    (lambda: cl4(2, 3, 4, 5), lambda a: (a + 1).reshape(2, -1)),
    (lambda: cl4(2, 3, 4, 5), lambda a: (a + 1).permute(0, 2, 3, 1).view(2, -1)),
    (lambda: torch.randn(4, 3), lambda a: (a.t() * 2).t().view(-1)),
    (lambda: torch.randn(2, 3, 4), lambda a: (a.permute(2, 0, 1) * 2).view(4, 2, 3)),
])
def test_view_and_reshape_of_intermediates_match(mk, fn):
    check(fn, mk())


# ---- dynamic shapes: eager's dense layout at every size ----------------------------------

def test_dynamic_transposed_output():
    f = torchc.compile(lambda a: (a * 2).t() + 1, dynamic=True)
    for n in (3, 5, 9):
        x = torch.randn(n, 4)
        want = (x * 2).t() + 1
        got = f(x)
        torch.testing.assert_close(got, want)
        assert got.stride() == want.stride()


# ---- GPU: the same rules through the NVPTX path ---------------------------------------------

@pytest.mark.skipif(not CUDA, reason="CUDA")
@pytest.mark.parametrize("name", ["cl4", "tr2", "perm3", "cl5", "cl4_c1"])
def test_gpu_layouts(name):
    x = INPUTS[name]().cuda()
    check(lambda a: a * 2, x)
    check(lambda a: torch.relu(a) + a.to(torch.float16).float(), x)
    check(lambda a: (a * 2).contiguous(), x)
    check(lambda a: torch.zeros_like(a) + a, x)


@pytest.mark.skipif(not CUDA, reason="CUDA")
def test_gpu_conv_channels_last():
    conv = torch.nn.Conv2d(3, 4, 3).cuda().eval()
    with torch.no_grad():
        check(lambda a: torch.relu(conv(a)), cl4(2, 3, 8, 8).cuda())
        check(lambda a: torch.relu(conv(a)).to(torch.float16), cl4(2, 3, 8, 8).cuda().half().float())


@pytest.mark.parametrize("fn", [
    lambda a: torch.nn.functional.logsigmoid(a) * 2,
    lambda a: a.masked_fill(a > 0, 1.0) + 1,
    lambda a: torch.cat([a + 1]),
], ids=["logsigmoid", "masked_fill", "cat_one"])
@pytest.mark.parametrize("layout", ["transposed", "channels_last"])
def test_ops_whose_eager_kernel_returns_contiguous(fn, layout):
    """Ops whose eager kernels allocate a contiguous result whatever the input's layout
    (found by the fuzzer: seeds 139 and 4214808)."""
    x = torch.randn(6, 4).t() if layout == "transposed" else \
        torch.randn(2, 4, 3, 5).to(memory_format=torch.channels_last)
    exp = fn(x)
    torchc.reset()
    ex = torchc.explain(fn)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), ex.break_reasons
    got = torchc.compile(fn)(x)
    assert got.stride() == exp.stride()
    torch.testing.assert_close(got, exp)
