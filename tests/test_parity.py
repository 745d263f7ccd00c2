"""Table-driven parity with torch.compile: each case runs the same calls through
torch.compile (Dynamo, with a counting eager backend: the controls tested here are Dynamo's,
not Inductor's) and through torchc.compile, and compares what a user sees: results,
exceptions, and how many frames were compiled (torch: the counting backend; torchc: its
compile counter). Two-sided: a case where one side compiled nothing while the other did
fails."""
import copy
import io
import pickle

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing

import torchc
from conftest import assert_same


class Torch:
    name = "torch"

    def __init__(self):
        self.cc = torch._dynamo.testing.CompileCounter()

    def compile(self, fn, **kw):
        return torch.compile(fn, backend=self.cc, **kw)

    def compiles(self):
        return self.cc.frame_count


class Torchc:
    """Counts the graphs torchc compiles through its log hook (the C counters restart at
    reset, which some cases call)."""
    name = "torchc"
    count = 0

    def __init__(self):
        Torchc.count = 0

    def compile(self, fn, **kw):
        return torchc.compile(fn, **kw)

    def compiles(self):
        return Torchc.count


def _counting_hook(rec):
    if rec["event"] == "compiled" and not rec.get("fallback"):
        Torchc.count += 1
    torchc._logging._on_record(rec)


@pytest.fixture(autouse=True)
def _count_torchc():
    torchc._C.set_log_hook(_counting_hook)
    yield
    torchc._C.set_log_hook(torchc._logging._on_record)


def observe(thunk):
    """What a user sees of one call: its value, or its exception's base class."""
    try:
        return ("ok", thunk())
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        for base in (RuntimeError, ValueError, TypeError):
            if isinstance(e, base):
                return ("raises", base.__name__)
        return ("raises", type(e).__name__)


# Each case: (api) -> list of observations (values, exceptions, compile counts). Functions
# are defined inside the case so that the two sides never share a code object's cache.

def case_recompile_limit(api):
    def f(x):
        return x * 2 + 1
    g = api.compile(f, dynamic=False, recompile_limit=1)
    out = [observe(lambda n=n: g(torch.ones(n))) for n in (2, 3, 4)]
    return out + [api.compiles()]


def case_config_recompile_limit(api):
    def f(x):
        return x.sin() + 1
    old = torch._dynamo.config.recompile_limit
    torch._dynamo.config.recompile_limit = 2
    torchc.config.recompile_limit = None  # torch's applies again
    try:
        g = api.compile(f, dynamic=False)
        out = [observe(lambda n=n: g(torch.ones(n))) for n in (2, 3, 4, 5)]
    finally:
        torch._dynamo.config.recompile_limit = old
        torchc.config.recompile_limit = 1000
    return out + [api.compiles()]


def case_config_automatic_dynamic(api):
    def f(x):
        return x.cos() - 2
    out = []
    torchc.config.automatic_dynamic_shapes = None  # torch's applies (another test may have set it)
    for auto in (False, True):
        torch._dynamo.reset()
        torch._dynamo.config.automatic_dynamic_shapes = auto
        try:
            g = api.compile(f)  # torchc reads torch's setting at compile()
            out += [observe(lambda n=n: g(torch.ones(n))) for n in (2, 3, 4, 5)]
        finally:
            torch._dynamo.config.automatic_dynamic_shapes = True
        out.append(api.compiles())
    return out


def case_force_eager(api):
    def f(x):
        return x.cos() * 3
    g = api.compile(f)
    with torch.compiler.set_stance("force_eager"):
        out = [observe(lambda: g(torch.ones(3)))]
    n = api.compiles()
    out.append(observe(lambda: g(torch.ones(3))))
    return out + [n, api.compiles()]


def case_fail_on_recompile(api):
    def f(x):
        return x.exp() - 1
    g = api.compile(f, dynamic=False)
    out = [observe(lambda: g(torch.ones(3)))]
    with torch.compiler.set_stance("fail_on_recompile"):
        out.append(observe(lambda: g(torch.ones(3))))   # cached: fine
        out.append(observe(lambda: g(torch.ones(5))))   # a recompile: raises
    return out + [api.compiles()]


def case_eager_on_recompile(api):
    def f(x):
        return x.abs() + 2
    g = api.compile(f, dynamic=False)
    out = [observe(lambda: g(torch.ones(3)))]
    with torch.compiler.set_stance("eager_on_recompile"):
        out.append(observe(lambda: g(-torch.ones(5))))  # eager, no compile
        out.append(observe(lambda: g(torch.ones(3))))   # cached entry still used
    return out + [api.compiles()]


def case_eager_then_compile(api):
    def f(x):
        return x.neg() * 5
    g = api.compile(f)
    with torch.compiler.set_stance("eager_then_compile"):
        out = [observe(lambda: g(torch.ones(3)))]
        n = api.compiles()  # the first call ran eagerly
        out.append(observe(lambda: g(torch.ones(3))))
    return out + [n, api.compiles()]


def case_reset(api):
    def f(x):
        return x.tanh() * 2
    g = api.compile(f)
    g(torch.ones(3))
    g(torch.ones(3))
    n = api.compiles()
    torch.compiler.reset()
    out = [observe(lambda: g(torch.ones(3)))]
    return out + [n, api.compiles()]


def case_mark_static(api):
    def f(x):
        return x * 2
    g = api.compile(f, dynamic=True)
    x = torch.randn(4, 5)
    torch._dynamo.mark_static(x, 1)
    out = [observe(lambda: g(x))]
    y = torch.randn(4, 6)
    out.append(observe(lambda: g(y)))  # a static dim changed: a new graph
    z = torch.randn(7, 5)
    out.append(observe(lambda: g(z)))  # dim 0 is dynamic: no new graph
    return out + [api.compiles()]


def case_mark_dynamic(api):
    def f(x):
        return x.relu() + 1
    g = api.compile(f, dynamic=False)
    x = torch.randn(4, 5)
    torch._dynamo.mark_dynamic(x, 0)
    out = [observe(lambda: g(x))]
    y = torch.randn(9, 5)
    torch._dynamo.mark_dynamic(y, 0)
    out.append(observe(lambda: g(y)))  # marked dynamic from the first graph: no recompile
    return out + [api.compiles()]


def case_maybe_mark_dynamic(api):
    def f(x):
        return x.sigmoid() * 4
    g = api.compile(f, dynamic=False)
    x = torch.randn(6, 3)
    torch._dynamo.maybe_mark_dynamic(x, 0)
    out = [observe(lambda: g(x))]
    y = torch.randn(11, 3)
    torch._dynamo.maybe_mark_dynamic(y, 0)
    out.append(observe(lambda: g(y)))
    return out + [api.compiles()]


def case_compiler_disable(api):
    seen = []

    @torch.compiler.disable
    def side(x):
        seen.append(1)
        return x + 1

    def f(x):
        return side(x * 2).relu()
    g = api.compile(f)
    out = [observe(lambda: g(torch.ones(3))), observe(lambda: g(torch.ones(3)))]
    return out + [len(seen), api.compiles() > 0]


def case_fullgraph_break(api):
    def f(x):
        if x.sum() > 0:  # data-dependent branch: a graph break
            return x + 1
        return x - 1
    g = api.compile(f, fullgraph=True)
    return [observe(lambda: g(torch.ones(3)))]


def case_fullgraph_every_call(api):
    def f(x):
        if x.sum() > 0:  # a graph break: fullgraph=True raises at each call, never eager
            return x + 1
        return x - 1
    g = api.compile(f, fullgraph=True)
    return [observe(lambda: g(torch.ones(3))) for _ in range(3)]


def case_dynamic_then_static(api):
    def f(x):
        return x.sum(0) * 2
    x = torch.ones(4, 3)
    out = [observe(lambda: api.compile(f, dynamic=True)(x)), api.compiles()]
    # dynamic=False is another compile, not the dynamic entry (the options are in the key)
    out += [observe(lambda: api.compile(f, dynamic=False)(x)), api.compiles()]
    out += [observe(lambda: api.compile(f, dynamic=False)(x)), api.compiles()]
    return out


def case_disable_arg(api):
    def f(x):
        return x + 1
    g = api.compile(f, disable=True)
    return [g is f, observe(lambda: g(torch.ones(2))), api.compiles()]


def case_state_dict(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    cm = api.compile(m)
    keys = list(cm.state_dict())
    m2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    cm2 = api.compile(m2)
    cm2.load_state_dict(cm.state_dict())
    with torch.no_grad():
        x = torch.randn(2, 3)
        same = torch.equal(cm(x), cm2(x))
    return [keys, same, isinstance(cm, torch.nn.Module), cm.training]


def case_deepcopy_pickle(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU())
    cm = api.compile(m)
    x = torch.randn(2, 3)
    with torch.no_grad():
        want = cm(x)
        out = []
        for clone in (lambda: copy.deepcopy(cm), lambda: pickle.loads(pickle.dumps(cm))):
            c = clone()
            out.append((type(c) is type(cm), torch.equal(c(x), want),
                        c._orig_mod[0].weight.data_ptr() != cm._orig_mod[0].weight.data_ptr()))
        buf = io.BytesIO()
        torch.save(cm, buf)
        buf.seek(0)
        c = torch.load(buf, weights_only=False)
        out.append((type(c) is type(cm), torch.equal(c(x), want)))
    return out


def case_train_eval(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5))
    cm = api.compile(m)
    cm.eval()
    with torch.no_grad():
        x = torch.randn(4, 3)
        r = torch.equal(cm(x), m(x))
    return [cm.training, m.training, r]


CASES = [case_recompile_limit, case_config_recompile_limit, case_config_automatic_dynamic,
         case_force_eager,
         case_fail_on_recompile, case_eager_on_recompile, case_eager_then_compile, case_reset, case_mark_static,
         case_mark_dynamic, case_maybe_mark_dynamic, case_compiler_disable,
         case_fullgraph_break, case_fullgraph_every_call, case_dynamic_then_static, case_disable_arg, case_state_dict, case_deepcopy_pickle,
         case_train_eval]
# cases whose torchc side falls back on purpose (the limit, disabled code, a break), or compiles nothing
_MARKS = {case_recompile_limit: pytest.mark.allow_fallback, case_config_recompile_limit: pytest.mark.allow_fallback,
          case_compiler_disable: pytest.mark.allow_fallback, case_fullgraph_break: pytest.mark.no_compile,
          case_fullgraph_every_call: pytest.mark.no_compile,
          case_disable_arg: pytest.mark.needs_no_compiler}
_PARAMS = [pytest.param(c, id=c.__name__[5:], marks=[_MARKS[c]] if c in _MARKS else []) for c in CASES]


def same(a, b):
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        assert_same(a, b)
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), (a, b)
        return all(same(x, y) for x, y in zip(a, b))
    assert a == b, (a, b)
    return True


@pytest.mark.parametrize("case", _PARAMS)
def test_parity(case):
    torch._dynamo.reset()  # also resets torchc
    torch.manual_seed(0)
    want = case(Torch())
    torch._dynamo.reset()
    torch.manual_seed(0)
    got = case(Torchc())
    same(got, want)


def test_parity_compiles_something():
    """The counters the table relies on move on both sides (the table cannot pass by
    comparing two zeros)."""
    torch._dynamo.reset()
    for api in (Torch(), Torchc()):
        def f(x):
            return x * 3
        api.compile(f)(torch.ones(2))
        assert api.compiles() == 1, api.name


def test_is_compiling_true_inside_capture():
    """torch.compiler.is_compiling() (and its aliases) answers True inside torchc's capture,
    as under torch.compile; the answer is constant (no break), and False in eager."""
    def f(x):
        if torch.compiler.is_compiling():
            return x + 1
        return x - 1
    torch._dynamo.reset()
    assert torch.equal(torch.compile(f, backend="eager")(torch.zeros(2)), torch.ones(2))
    Torchc.count = 0
    assert torch.equal(torchc.compile(f)(torch.zeros(2)), torch.ones(2))
    assert torch.equal(f(torch.zeros(2)), -torch.ones(2))
    assert Torchc.count == 1


def test_parity_backend_callable():
    """A torch.compile-style backend callable gets GraphModules from both: as many graphs,
    each with example tensors, and the results it runs equal eager's."""
    def f(x, y):
        a = torch.tanh(x @ y) * 2
        print("", end="")  # a graph break on both sides
        return (a - x).sum(0)

    def make():
        seen = []

        def backend(gm, example_inputs):
            assert isinstance(gm, torch.fx.GraphModule)
            assert all(isinstance(t, torch.Tensor) for t in example_inputs)
            seen.append(sum(n.op == "call_function" or n.op == "call_method" for n in gm.graph.nodes))
            return gm.forward
        return backend, seen

    x, y = torch.randn(3, 3), torch.randn(3, 3)
    torch._dynamo.reset()
    tb, tseen = make()
    want = torch.compile(f, backend=tb)(x, y)
    torch._dynamo.reset()
    cb, cseen = make()
    got = torchc.compile(f, backend=cb)(x, y)
    assert_same(got, want)
    assert_same(got, f(x, y))
    assert len(tseen) == len(cseen) == 2 and all(cseen), (tseen, cseen)
