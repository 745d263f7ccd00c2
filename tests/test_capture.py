"""The frame hook: caching, guards, recompiles, fallback, explain, modules, references."""
import gc
import sys
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchc
from torchc import _C
from conftest import assert_same, explain_of


def stats():
    return _C.stats()


def test_cache_hit_no_recompile():
    def f(x, y):
        return (x * y).relu().sum(-1)

    cf = torchc.compile(f)
    x, y = torch.randn(4, 8), torch.randn(4, 8)
    for _ in range(5):
        assert_same(cf(x, y), f(x, y))
    s = stats()
    assert s["compiles"] == 1 and s["hits"] == 5, s


@pytest.mark.allow_fallback
@pytest.mark.parametrize("change", ["dtype", "shape", "stride", "ndim", "requires_grad"])
def test_guard_failure_recompiles(change):
    def f(x):
        return torch.sigmoid(x) * 2

    cf = torchc.compile(f)
    x = torch.randn(4, 6)
    assert_same(cf(x), f(x))
    y = {
        "dtype": x.double(),
        "shape": torch.randn(5, 6),
        "stride": torch.randn(6, 4).t(),
        "ndim": torch.randn(4, 6, 1),
        "requires_grad": torch.randn(4, 6, requires_grad=True),
    }[change]
    if change == "requires_grad":
        with torch.no_grad():
            assert_same(cf(y), f(y))
        out = cf(y)  # grad mode on + requires_grad: runs eagerly, keeps autograd
        assert out.requires_grad and out.grad_fn is not None
        out.sum().backward()
        assert y.grad is not None
        return
    assert_same(cf(y), f(y))
    assert stats()["compiles"] == 2
    assert_same(cf(x), f(x))  # the first entry still hits
    assert stats()["compiles"] == 2


def test_constant_guard_recompiles():
    def f(x, k):
        return x * k

    cf = torchc.compile(f)
    x = torch.randn(3)
    assert_same(cf(x, 2), f(x, 2))
    assert_same(cf(x, 3), f(x, 3))
    assert_same(cf(x, 2.5), f(x, 2.5))
    assert_same(cf(x, True), f(x, True))
    assert stats()["compiles"] == 4


@pytest.mark.allow_fallback
def test_recompile_limit_falls_back():
    def f(x):
        return x + 1

    torchc.config.recompile_limit = 3
    try:
        cf = torchc.compile(f, dynamic=False)  # every size a new specialization
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for n in range(1, 7):
                x = torch.randn(n)
                assert_same(cf(x), f(x))
        assert stats()["compiles"] == 3
        assert any("recompile limit" in str(m.message) for m in w)
    finally:
        torchc.config.recompile_limit = 1000



def helper_scale(x):
    return x * 3


SCALE = 2.0


def uses_global(x):
    return x * SCALE


def test_global_constant_guarded():
    global SCALE
    cf = torchc.compile(uses_global)
    x = torch.randn(4)
    assert_same(cf(x), x * 2.0)
    SCALE = 5.0
    try:
        assert_same(cf(x), x * 5.0)
    finally:
        SCALE = 2.0


def test_unsupported_falls_back_with_reason():
    def f(x):
        y = x * 2
        print_free = y.histc(4)  # over the data's range: left to eager
        return print_free + 1

    cf = torchc.compile(f)
    x = torch.randn(5)
    assert_same(cf(x), f(x))
    ex = explain_of(f, x)
    assert ex.graph_break_count == 1 and ex.graph_count == 2, ex  # graph, eager histc, graph
    assert "histc" in ex.break_reasons[0]


def test_data_dependent_branch_breaks_the_graph():
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    cf = torchc.compile(f)
    for x in (torch.ones(3), -torch.ones(3), torch.ones(3)):
        assert_same(cf(x), f(x))
    ex = explain_of(f, torch.ones(3))
    assert ex.graph_break_count == 1 and ex.graph_count == 2, ex
    assert "data-dependent" in ex.break_reasons[0]


def test_graph_break_on_print_item_and_unknown_calls(capsys):
    def f(x, n):
        y = torch.relu(x) * n
        print("value", n)
        s = y.sum().item()           # .item(): a break, the Python float flows on
        z = y * 2 + s
        k = id(z) > 0                # unknown C function
        for i in range(2):
            z = z + i
        return z, k

    cf = torchc.compile(f)
    x = torch.randn(5)
    assert_same(cf(x, 3), f(x, 3))
    out = capsys.readouterr().out
    assert out.count("value 3") == 2
    ex = explain_of(f, x, 3)
    assert ex.graph_break_count == 3, ex
    assert_same(cf(x, 3), f(x, 3))


def test_graph_break_inside_inlined_function():
    def inner(x):
        print("inside")
        return x.exp()

    def outer(x):
        y = x + 1
        z = inner(y)    # breaks at this call; inner then runs hooked, breaking on print
        return z * 2

    cf = torchc.compile(outer)
    x = torch.randn(4)
    assert_same(cf(x), outer(x))
    assert_same(cf(x), outer(x))


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_fullgraph_raises():
    def f(x):
        return x.histc(4)  # over the data's range: left to eager

    with pytest.raises(RuntimeError, match="fullgraph"):
        torchc.compile(f, fullgraph=True)(torch.randn(3))


def test_eager_errors_are_eager_errors():
    def f(x, y):
        return x + y

    cf = torchc.compile(f)
    with pytest.raises(RuntimeError):
        cf(torch.randn(3), torch.randn(4))


@pytest.mark.needs_no_compiler
def test_bad_arguments():
    with pytest.raises(TypeError):
        torchc.compile(3)
    with pytest.raises(ValueError):
        torchc.compile(lambda x: x, mode="fastest")
    with pytest.raises(ValueError):
        torchc.compile(lambda x: x, backend="nope")
    with pytest.raises(ValueError):
        torchc.config.recompile_limit = 0
    with pytest.raises(AttributeError):
        torchc.config.no_such = 1


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_unsupported_dtype_and_device_fall_back():
    def f(x):
        return x * 2 + 1

    cf = torchc.compile(f)
    for x in (torch.randn(3, dtype=torch.complex64), torch.randn(3).to(torch.float16)):
        assert_same(cf(x), f(x))


def test_decorator_forms():
    @torchc.compile
    def f(x):
        return x.exp()

    @torchc.compile(fullgraph=True)
    def g(x):
        return x.exp()

    x = torch.randn(3)
    assert_same(f(x), x.exp())
    assert_same(g(x), x.exp())
    assert f.__name__ == "f"


def test_hook_inactive_outside_compiled_calls():
    calls = []

    def f(x):
        return x + 1

    cf = torchc.compile(f)
    cf(torch.randn(2))
    before = stats()["frames"]
    for _ in range(3):
        f(torch.randn(2))  # plain calls: no hook
    assert stats()["frames"] == before
    assert not calls


def test_nested_function_frames_are_captured_separately():
    def inner(x):
        return x * 2 + 1

    def outer(x):
        y = inner(x)
        id(y)              # unsupported builtin: outer falls back, inner is captured alone
        return inner(y)

    cf = torchc.compile(outer)
    x = torch.randn(4)
    assert_same(cf(x), outer(x))
    ex = explain_of(outer, x)
    assert ex.graph_break_count == 1
    assert ex.graph_count == 2  # inner captured at each call (one compile, then a hit)


class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d))
        self.register_buffer("shift", torch.randn(d))
        self.eps = 1e-6

    def forward(self, x):
        rms = torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)
        return F.gelu(x * rms * self.weight + self.shift)


@pytest.mark.allow_fallback
def test_module_compile_and_training_guard():
    m = Norm(16)
    cm = torchc.compile(m)
    x = torch.randn(8, 16)
    with torch.no_grad():
        assert_same(cm(x), m(x))
        m.eval()
        assert_same(cm(x), m(x))
        assert stats()["compiles"] == 2  # training flag is guarded
        m.weight.mul_(2)  # in-place parameter update is seen (parameters are inputs)
        assert_same(cm(x), m(x))
        m.weight = nn.Parameter(torch.randn(16))  # replaced parameter
        assert_same(cm(x), m(x))
    # grad mode with parameters that require grad: eager fallback keeps autograd working
    out = cm(x)
    out.sum().backward()
    assert m.weight.grad is not None


def test_explain_contents():
    def f(x, y):
        return torch.relu(x + y).sum(-1)

    ex = explain_of(f, torch.randn(3, 4), torch.randn(4))
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and ex.op_count >= 3
    assert any("TENSOR_MATCH" in g for g in ex.guards)
    text = str(ex)
    assert "relu" in text and "sum" in text


def test_no_reference_leaks():
    def f(x, y, k):
        return (x * y + k).sum(-1), x

    cf = torchc.compile(f)
    x, y = torch.randn(4, 5), torch.randn(5)
    cf(x, y, 2)  # compile
    gc.collect()
    rx, ry = sys.getrefcount(x), sys.getrefcount(y)
    for _ in range(200):
        out = cf(x, y, 2)
    del out
    gc.collect()
    assert sys.getrefcount(x) == rx and sys.getrefcount(y) == ry


def test_reset_and_code_death():
    def make():
        def f(x):
            return x * 2
        return f

    for _ in range(20):
        cf = torchc.compile(make())
        cf(torch.randn(3))
    torchc.reset()
    gc.collect()
    x = torch.randn(3)
    assert_same(torchc.compile(make())(x), x * 2)


def test_disable():
    @torchc.disable
    def g(x):
        return x.cumsum(0)

    def h(x):  # the same body, not disabled: compiled (the test fails without the compiler)
        return x.cumsum(0)

    x = torch.randn(5)
    assert_same(torchc.compile(g)(x), x.cumsum(0))
    ex = explain_of(g, x)
    assert ex.graph_count == 0
    assert explain_of(h, x).graph_count == 1


def test_threads_setting():
    n = torchc.config.num_threads
    torchc.config.num_threads = 1
    try:
        def f(x):
            return torch.tanh(x).sum(-1)
        x = torch.randn(64, 257)
        assert_same(torchc.compile(f)(x), f(x), rtol=1e-5, atol=1e-5)
    finally:
        torchc.config.num_threads = n


def test_inlining_functions_methods_and_modules():
    def scale(x, k=2.0, *, shift=0.0):
        return x * k + shift

    class Act(nn.Module):
        def __init__(self):
            super().__init__()
            self.alpha = 0.5

        def forward(self, x):
            return self.mix(torch.tanh(x))

        def mix(self, y):
            return y * self.alpha + scale(y, shift=1.0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.Sequential(Act(), nn.ReLU(), Act(), nn.GELU(), nn.Dropout(0.1))
            self.extra = nn.ModuleList([Act(), nn.Identity()])
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            h = self.blocks(x)
            for m in self.extra:
                h = m(h)
            return self.norm(h) + scale(h, 3.0), len(self.extra)

    net = Net().eval()
    cnet = torchc.compile(net)
    x = torch.randn(4, 8)
    with torch.no_grad():
        assert_same(cnet(x), net(x), rtol=1e-4, atol=1e-5)
        ex = torchc.explain(cnet)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def test_closure_variables_are_guarded():
    def make(k):
        def f(x):
            return x * k
        return f

    f2 = torchc.compile(make(2.0))
    f3 = torchc.compile(make(3.0))
    x = torch.randn(3)
    assert_same(f2(x), x * 2.0)
    assert_same(f3(x), x * 3.0)


def test_inplace_updates_are_visible_like_eager():
    def f(x, y, buf):
        y.add_(1)                 # an input, updated in place
        x += y * 2                # augmented assignment on an input
        z = x * 3
        z.mul_(2)                 # an intermediate, updated in place
        h = torch.relu(z - 5)
        F.relu(h, inplace=True)
        buf.copy_(h.sum(0))       # copy_ into an input
        return z, h, x

    cf = torchc.compile(f)
    args = [torch.randn(4, 3), torch.randn(3), torch.zeros(3)]
    ref = [a.clone() for a in args]
    out = cf(*args)
    want = f(*ref)
    assert_same(out, want)
    for a, r in zip(args, ref):
        assert_same(a, r)
    assert out[2] is args[0]  # x returned: the same object, updated
    ex = explain_of(f, *[a.clone() for a in ref])
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def test_inplace_on_module_buffer():
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", torch.zeros(4))

        def forward(self, x):
            self.total.add_(x.sum(0))
            return x * 2

    m, m2 = Counter(), Counter()
    cm = torchc.compile(m)
    x = torch.randn(3, 4)
    for _ in range(3):
        assert_same(cm(x), m2(x))
    assert_same(m.total, m2.total)


def test_inplace_on_views_falls_back_correctly():
    def f(x):
        v = x.view(-1)
        v.mul_(2)                 # aliasing: not captured, eager result
        return x + 1

    x1, x2 = torch.randn(2, 3), None
    x2 = x1.clone()
    assert_same(torchc.compile(f)(x1), f(x2))
    assert_same(x1, x2)


def test_matmul_and_linear_are_extern_calls_not_breaks():
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(16, 32), nn.Linear(32, 4)

        def forward(self, x):
            h = torch.relu(self.l1(x))
            y = self.l2(h) @ torch.ones(4, 3)
            return torch.log_softmax(y + 1, -1)

    m = MLP().eval()
    x = torch.randn(5, 16)
    with torch.no_grad():
        assert_same(torchc.compile(m)(x), m(x), rtol=1e-5, atol=1e-5)
        ex = torchc.explain(torchc.compile(m))(x)
    assert ex.graph_break_count == 0 and len(ex.extern_calls) == 3, ex


@pytest.mark.allow_fallback
def test_any_binary_operator_failure_breaks_not_falls_back():
    def f(x, y):
        a = x * 2
        b = a @ y if a.is_floating_point() else a[:, :2] + y[0]   # extern, or pointwise
        c = b // (b + 1) if b.dtype == torch.int64 else b   # constant branch on dtype (a break: a computed integer divisor)
        return c + 1

    x, y = torch.randn(3, 4), torch.randn(4, 2)
    assert_same(torchc.compile(f)(x, y), f(x, y))
    xi, yi = torch.randint(0, 5, (3, 4)), torch.randint(0, 5, (4, 2))
    assert_same(torchc.compile(f)(xi, yi), f(xi, yi))
    torchc.reset()
    ex = torchc.explain(f)(xi, yi)  # the int path: a divisor whose zeros can't be checked
    assert ex.graph_break_count == 1 and "integer division" in str(ex.break_reasons), ex.break_reasons


def test_module_attribute_writes_super_moduledict_class_attrs():
    class Base(nn.Module):
        scale = 2.0  # a class attribute

        def forward(self, x):
            return x * self.scale

    class Child(Base):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
            self.calls = 0

        def forward(self, x):
            y = super().forward(x)
            for name, m in self.blocks.items():
                y = m(y) + len(name)
            self.last = y * 1          # attribute write, replayed after the graph
            self.calls = self.calls + 1
            return self.blocks["b"](y) + self.calls

    m1, m2 = Child(), Child()
    cm = torchc.compile(m1)
    x = torch.randn(3, 4)
    with torch.no_grad():
        for _ in range(3):
            assert_same(cm(x), m2(x))
            assert m1.calls == m2.calls
            assert_same(m1.last, m2.last)
        ex = torchc.explain(cm)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex


def _allow_g(x):
    return x * 3


def _allow_f(x):
    return _allow_g(x) + 1


def test_allow_in_graph_undoes_disable():
    torchc.disable(_allow_g)
    x = torch.randn(3)
    ex = explain_of(_allow_f, x)  # the disabled call breaks (its piece before has no op)
    assert ex.graph_count == 1 and any("disable" in r for r in ex.break_reasons), ex
    torchc.allow_in_graph(_allow_g)
    torchc.reset()
    ex = explain_of(_allow_f, x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0 and not ex.break_reasons, ex
    assert_same(torchc.compile(_allow_f)(x), _allow_f(x))


def test_break_inside_a_loop_keeps_the_iterator():
    def f(x, w):
        h = x
        for i in range(4):
            h = torch.tanh(h @ w + i)   # extern matmul inside the loop body
            print("step", i)            # a real break inside the loop too
        return h * 2

    x, w = torch.randn(3, 5), torch.randn(5, 5)
    assert_same(torchc.compile(f)(x, w), f(x, w), rtol=1e-5, atol=1e-5)
    ex = explain_of(f, x, w)
    # i, live across the break, is an automatic dynamic int of the resume from its second
    # value on: later iterations reuse that entry (was: an entry, a break, per iteration)
    assert 2 <= ex.graph_break_count <= 4 and len(ex.extern_calls) == ex.graph_break_count, ex


@pytest.mark.allow_fallback
def test_with_no_grad_and_try_blocks_on_the_happy_path():
    def f(x, d):
        with torch.no_grad():
            y = torch.relu(x) * 2
        try:
            z = y + d["k"]
        except KeyError:
            z = y - 1
        return z

    x = torch.randn(3, 4)
    assert_same(torchc.compile(f)(x, {"k": 1.0}), f(x, {"k": 1.0}))
    ex = explain_of(f, x, {"k": 1.0})
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    # the exception path: eager runs (the trace refuses the raising subscript)
    assert_same(torchc.compile(f)(x, {"j": 1.0}), f(x, {"j": 1.0}))

    def g(x):
        with torch.enable_grad():   # could turn recording on: not captured, eager
            return x * 2

    assert_same(torchc.compile(g)(x), g(x))


def test_breaks_in_functions_with_free_variables():
    scale, shift = 3.0, torch.ones(4)

    def f(x):
        y = x * scale + shift
        print("between")          # a break: the resume function needs the closure
        z = torch.tanh(y) * scale
        if z.sum() > 0:           # a data-dependent break, closure again
            return z + shift
        return z - shift

    cf = torchc.compile(f)
    for x in (torch.randn(4), -torch.ones(4) * 5, torch.randn(4)):
        assert_same(cf(x), f(x))
    ex = explain_of(f, torch.randn(4))
    assert ex.graph_break_count == 2 and ex.graph_count == 3, ex

    def make(k):
        def g(x):
            y = x * k
            id(y)                  # break
            return y + k
        return g

    g2, g5 = torchc.compile(make(2.0)), torchc.compile(make(5.0))
    x = torch.randn(3)
    assert_same(g2(x), x * 2.0 + 2.0)
    assert_same(g5(x), x * 5.0 + 5.0)   # same code, other closure: guarded, right value


def test_no_op_conversions_alias_like_eager():
    def f(x):
        v = x.to(x.dtype)      # eager returns x itself
        v.add_(1)              # ... so this updates x
        w = x.float()
        return torch.tanh(x), w is x, v is x

    x1 = torch.randn(3, 4)
    x2 = x1.clone()
    assert_same(torchc.compile(f)(x1), f(x2))
    assert_same(x1, x2)


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_nonlocal_writes_reach_the_cell():
    count = 0

    def f(x):
        nonlocal count
        count += 1
        return x * 2

    def g(x):
        k = 1

        def inc():
            nonlocal k
            k += 1
        inc()
        return x * k

    cf, cg = torchc.compile(f), torchc.compile(g)
    x = torch.randn(3)
    for i in range(3):
        assert_same(cf(x), x * 2)
        assert count == i + 1
        assert_same(cg(x), x * 2)


def test_device_queries_and_device_arguments():
    def f(x):
        d = x.device
        y = torch.zeros(3, device=d) + torch.arange(3, device=x.device) + torch.ones(3, device="cpu")
        return x.to("cpu") * 2, y, x.is_cuda, d
    x = torch.randn(3)
    got, want = torchc.compile(f)(x), f(x)
    assert_same(got[:3], want[:3])
    assert got[3] == want[3]
    assert torchc.explain(f)(x).graph_count == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.allow_fallback  # a CPU tensor made or copied inside a CUDA graph: the frame runs eagerly (H100 run)
def test_device_of_cuda_tensors_is_cuda():
    def f(x):
        y = torch.arange(4, device=x.device) * x      # the graph's device
        z = torch.zeros(4) + 1                         # eager: a CPU tensor
        return y, x.to("cpu"), x.device, x.is_cuda, z
    x = torch.randn(4, device="cuda")
    got, want = torchc.compile(f)(x), f(x)
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            assert g.device == w.device
            torch.testing.assert_close(g.cpu(), w.cpu())
        else:
            assert g == w


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_device_of_cuda_tensors_in_one_graph():
    # the same questions without a CPU tensor: one graph, no break, eager's answers
    def f(x):
        return torch.arange(4, device=x.device) * x, x.device, x.is_cuda, torch.zeros(4, device=x.device) + 1

    x = torch.randn(4, device="cuda")
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    for g, w in zip(ex.result, f(x)):
        if isinstance(w, torch.Tensor):
            assert g.device == w.device
            torch.testing.assert_close(g, w)
        else:
            assert g == w


@pytest.mark.allow_fallback
def test_repeated_identical_failure_stops_tracing():
    # a method on a fresh object every call (identity-guarded), failing the same way each
    # time and unable to break (a try block): after three failed specializations the code
    # runs eagerly without tracing
    class Box:
        def __init__(self, v):
            self.v = v

        def get(self, x):
            try:
                return x + len(vars(self))
            except ValueError:
                return x

    def f(x):
        return Box(1).get(x) * 2

    cf = torchc.compile(f)
    x = torch.randn(3)
    for _ in range(12):
        assert_same(cf(x), f(x))
    assert stats()["fallbacks"] <= 4, stats()


def test_many_sources_one_graph():
    # 300 Linear layers: 600 parameters plus the modules, more than the 512 guard slots
    # that live on the stack: the guard buffers move to the heap, the model stays one graph
    torch.manual_seed(0)
    m = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(300)]).eval()
    x = torch.randn(2, 4)

    def f(x):
        for layer in m:
            x = torch.tanh(layer(x))
        return x

    cf = torchc.compile(f)
    with torch.no_grad():
        ref = f(x)
        torch.testing.assert_close(cf(x), ref)
        torch.testing.assert_close(cf(x + 1), f(x + 1))
        ex = torchc.explain(cf)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons


def test_star_unpacking_into_tuples_is_one_graph():
    """(*shape, -1, d) and f(*args, x): LIST_TO_TUPLE on 3.11, CALL_INTRINSIC_1 (intrinsic 6)
    on 3.12 (transformers' attention: hidden_shape = (*input_shape, -1, head_dim))"""
    def f(x):
        input_shape = x.shape[:-1]
        hidden = (*input_shape, -1, 4)
        y = x.view(hidden).transpose(1, 2)
        args = [y]
        return torch.sum(*args, 1) * 2

    x = torch.randn(2, 3, 8)
    torchc.reset()
    torch.testing.assert_close(torchc.compile(f)(x), f(x))
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons


# ---- what user code observes of frames after a graph break -------------------------------
# The call a trace stops at runs in a frame like the original (its name, file, line, locals)
# and the resume function keeps the function's name: locals(), sys._getframe(),
# inspect.currentframe(), warnings and logging see what eager shows.

def _unsupported(x):
    """a call the tracer breaks on (print to a sink)"""
    import io
    print("x", file=io.StringIO())
    return x


def _frame_view(x):
    a = x + 1
    _unsupported(a)          # break 1
    b = a * 2
    loc = locals()           # break 2: locals() itself
    f = sys._getframe()
    line = sys._getframe().f_lineno
    return b, sorted(loc), f.f_code.co_name, f.f_back.f_code.co_name, line


def _caller_of_frame_view(x):
    return _frame_view(x)


@pytest.mark.allow_fallback  # _frame_view reads its own frame: a break in it is refused (named)
def test_frames_after_break_match_eager():
    import inspect
    x = torch.randn(3)
    want = _frame_view(x)
    got = torchc.compile(_frame_view)(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1] == want[1] == ["a", "b", "x"]
    assert got[2] == "_frame_view"
    assert got[4] == want[4]
    assert torchc.compile(_caller_of_frame_view)(x)[2:4] == ("_frame_view", "_caller_of_frame_view")
    ex = torchc.explain(_frame_view)(x)
    assert ex.graph_break_count >= 1  # the frames above were seen after real breaks
    # inspect.currentframe, and the caller seen from the frame after the break
    def g(x):
        y = x + 1
        _unsupported(y)
        fr = inspect.currentframe()
        return y, fr.f_code.co_name, fr.f_back.f_code.co_name

    def outer(x):
        return g(x)

    r = torchc.compile(g)(x)
    assert r[1] == "g"
    assert r[2] == "test_frames_after_break_match_eager"
    assert torchc.compile(outer)(x)[1:] == outer(x)[1:] == ("g", "outer")


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_locals_at_first_break_values():
    def f(x, k=3):
        y = x * k
        loc = locals()
        return y, {n: v for n, v in loc.items() if not isinstance(v, torch.Tensor)}, sorted(loc)

    x = torch.randn(2)
    got, want = torchc.compile(f)(x), f(x)
    assert got[1] == want[1] == {"k": 3}
    assert got[2] == want[2] == ["k", "x", "y"]
    torch.testing.assert_close(got[0], want[0])


def _warn_helper():
    warnings.warn("careful", UserWarning, stacklevel=2)


def _warns(x):
    y = x + 1
    _unsupported(y)
    _warn_helper()      # the warning points at this line, in this function
    return y * 2


def test_warnings_stacklevel_after_break():
    x = torch.randn(2)
    with warnings.catch_warnings(record=True) as we:
        warnings.simplefilter("always")
        _warns(x)
    with warnings.catch_warnings(record=True) as wc:
        warnings.simplefilter("always")
        torchc.compile(_warns)(x)
    assert len(we) == len(wc) == 1
    assert (wc[0].filename, wc[0].lineno) == (we[0].filename, we[0].lineno)


def test_logging_after_break_reports_function_and_line():
    import logging
    recs = []

    class H(logging.Handler):
        def emit(self, record):
            recs.append((record.funcName, record.lineno, record.filename))

    log = logging.getLogger("torchc_test_frames")
    log.setLevel(logging.INFO)
    log.propagate = False
    h = H()
    log.addHandler(h)

    def logs(x):
        y = x + 1
        _unsupported(y)
        log.info("after the break")
        return y * 2

    try:
        x = torch.randn(2)
        logs(x)
        torchc.compile(logs)(x)
    finally:
        log.removeHandler(h)
    assert len(recs) == 2 and recs[0] == recs[1] and recs[0][0] == "logs"


@pytest.mark.allow_fallback
def test_traceback_after_break_names_function():
    import traceback

    def boom(x):
        y = x + 1
        _unsupported(y)
        raise ValueError("boom")

    try:
        torchc.compile(boom)(torch.randn(2))
    except ValueError as e:
        names = [fs.name for fs in traceback.extract_tb(e.__traceback__)]
    assert names[-1] == "boom"
    assert not any(n.startswith("torchc_resume") for n in names)


def test_is_compiling_true_in_captured_code():
    """True inside the capture, as under torch.compile; constant, no break"""
    def f(a):
        return a + (1 if torch.compiler.is_compiling() else 0)

    x = torch.zeros(2)
    assert f(x).sum().item() == 0
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    assert ex.result.sum().item() == 2


@pytest.mark.allow_fallback
def test_compiler_disable_never_traced():
    calls = []

    @torch.compiler.disable
    def d(x):
        calls.append(1)
        return x * 3

    @torchc.disable
    def d2(x):
        calls.append(2)
        return x - 1

    def f(x):
        return d2(d(x + 1)) + 1

    x = torch.randn(3)
    cf = torchc.compile(f)
    for _ in range(3):
        torch.testing.assert_close(cf(x), f(x))
    assert calls == [1, 2] * 6
    ex = torchc.explain(f)(x)
    assert ex.graph_count >= 1
