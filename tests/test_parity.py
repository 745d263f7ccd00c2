"""Table-driven parity with torch.compile: each case runs the same calls through
torch.compile (Dynamo, with a counting eager backend: the controls tested here are Dynamo's,
not Inductor's) and through torchc.compile, and compares what a user sees: results,
exceptions, and how many frames were compiled (torch: the counting backend; torchc: its
compile counter). Two-sided: a case where one side compiled nothing while the other did
fails."""
import copy
import inspect
import io
import logging
import os
import pickle
import subprocess
import sys

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

    def compile(self, fn=None, **kw):
        return torch.compile(fn, backend=self.cc, **kw)

    def compile_plain(self, fn=None, **kw):
        """torch.compile with the caller's backend/mode/options (argument checks)"""
        return torch.compile(fn, **kw)

    def dynamo_backend(self):
        """what torch.compile(m, backend=...) gets on this side: Dynamo's graphs go to the
        counting backend (torch) or to torchc ("torchc")"""
        return self.cc

    def compiles(self):
        return self.cc.frame_count


class Torchc:
    """Counts the graphs torchc compiles through its log hook (the C counters restart at
    reset, which some cases call)."""
    name = "torchc"
    count = 0

    def __init__(self):
        Torchc.count = 0

    def compile(self, fn=None, **kw):
        return torchc.compile(fn, **kw)

    compile_plain = compile

    def dynamo_backend(self):
        return "torchc"

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
    if "recompile_limit" not in inspect.signature(torch.compile).parameters:
        pytest.skip("this torch.compile has no recompile_limit argument (torch 2.11 has none)")

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


# ---- a user moving from torch.compile (issue 25, session 3): decorator forms, compiled
# modules, hooks, recompiles, logs, errors ------------------------------------------------

def case_decorator_bare(api):
    # @torch.compile without parentheses: torch.compile(f) (the counting backend on torch's side)
    @api.compile
    def f(x):
        return x * 2 - 1
    return [observe(lambda: f(torch.ones(3))), api.compiles(), f.__name__]


def case_decorator_args(api):
    @api.compile(dynamic=False, fullgraph=True)
    def f(x, y):
        return x @ y + 1
    x = torch.randn(3, 4)
    return [observe(lambda: f(x, x.T)), observe(lambda: f(x[:2], x.T)), api.compiles()]


def case_function_attributes(api):
    def f(x, scale=2.0):
        """doc of f"""
        return x * scale
    g = api.compile(f)
    return [g.__name__, g.__doc__, g.__wrapped__ is f, g.__module__ == f.__module__,
            g.__qualname__ == f.__qualname__, callable(g)]


def case_kwargs_defaults(api):
    def f(x, scale=2.0, *, shift=1):
        return x * scale + shift
    g = api.compile(f, dynamic=False)
    x = torch.ones(3)
    out = [observe(lambda: g(x)), observe(lambda: g(x, 3.0)), observe(lambda: g(x, shift=4)),
           observe(lambda: g(x, scale=0.5, shift=-1))]
    return out + [observe(lambda: g()), observe(lambda: g(x, bad=1))]


def case_varargs(api):
    def f(*xs, **kw):
        return sum(xs) * kw.get("k", 1)
    g = api.compile(f)
    a = torch.ones(2)
    return [observe(lambda: g(a, a, a)), observe(lambda: g(a, a, a, k=3)), api.compiles() >= 1]


def case_structured_outputs(api):
    def f(x):
        return {"a": x + 1, "b": [x * 2, (x - 1, 3)], "n": None, "s": "text"}
    g = api.compile(f)
    r = g(torch.ones(2))
    return [sorted(r), r["a"], r["b"][0], r["b"][1][0], r["b"][1][1], r["n"], r["s"],
            type(r["b"]).__name__, type(r["b"][1]).__name__, api.compiles()]


def case_inplace_input(api):
    def f(x, y):
        x.add_(1)
        y[0] = 5
        return x * y
    g = api.compile(f)
    x, y = torch.zeros(3), torch.ones(3)
    r = g(x, y)
    return [r, x, y, api.compiles()]


def case_user_exception(api):
    def f(x):
        if x.shape[0] > 3:
            raise ValueError("too long")
        return x + 1
    g = api.compile(f)
    return [observe(lambda: g(torch.ones(2))), observe(lambda: g(torch.ones(5)))]


def case_recompile_dtype(api):
    def f(x):
        return x * 2
    g = api.compile(f)
    out = [g(torch.ones(3)).dtype, g(torch.ones(3, dtype=torch.float64)).dtype,
           g(torch.ones(3, dtype=torch.float64)).dtype]
    return out + [api.compiles()]


def case_recompile_requires_grad(api):
    def f(x):
        return (x * 3).sum()
    g = api.compile(f)
    a = torch.ones(3)
    b = torch.ones(3, requires_grad=True)
    r1 = g(a)
    r2 = g(b)
    r2.backward()
    return [r1, r2.detach(), r2.requires_grad, r1.requires_grad, b.grad, api.compiles()]


def case_recompile_grad_mode(api):
    def f(x):
        return x.sin() * 2
    g = api.compile(f)
    x = torch.ones(3, requires_grad=True)
    r1 = g(x)
    with torch.no_grad():
        r2 = g(x)
    r3 = g(x)
    return [r1.requires_grad, r2.requires_grad, r3.requires_grad, r2, api.compiles()]


def case_automatic_dynamic(api):
    def f(x):
        return x.exp().sum(-1)
    g = api.compile(f)  # dynamic=None: the second shape compiles a dynamic graph
    out = [observe(lambda n=n: g(torch.ones(n, 2))) for n in (3, 4, 5, 6)]
    return out + [api.compiles()]


def case_dynamic_true(api):
    def f(x):
        return x.exp().sum(-1)
    g = api.compile(f, dynamic=True)
    out = [observe(lambda n=n: g(torch.ones(n, 2))) for n in (3, 4, 5, 6)]
    return out + [api.compiles()]


def case_dynamic_false(api):
    def f(x):
        return x.exp().sum(-1)
    g = api.compile(f, dynamic=False)
    out = [observe(lambda n=n: g(torch.ones(n, 2))) for n in (3, 4, 5)]
    return out + [api.compiles()]


def case_global_change(api):
    def f(x):
        return x * _SCALE[0]
    g = api.compile(f)
    out = [g(torch.ones(2))]
    _SCALE[0] = 5.0  # a guarded constant: the next call recompiles and sees 5
    try:
        out.append(g(torch.ones(2)))
    finally:
        _SCALE[0] = 2.0
    return out + [api.compiles()]


_SCALE = [2.0]


def case_closure_change(api):
    k = [3.0]

    def f(x):
        return x + k[0]
    g = api.compile(f)
    out = [g(torch.ones(2))]
    k[0] = -1.0
    out.append(g(torch.ones(2)))
    return out + [api.compiles()]


def case_nested_compiled(api):
    def inner(x):
        return x.cos() + 1
    ci = api.compile(inner)

    def outer(x):
        return ci(x) * 2
    co = api.compile(outer)
    return [observe(lambda: co(torch.ones(3))), observe(lambda: ci(torch.ones(3)))]


def case_bound_method(api):
    class Scaler:
        def __init__(self):
            self.k = 4.0

        def run(self, x):
            return x * self.k
    s = Scaler()
    g = api.compile(s.run)
    out = [observe(lambda: g(torch.ones(2)))]
    s.k = 0.5
    out.append(observe(lambda: g(torch.ones(2))))
    return out + [api.compiles()]


def case_module_attributes(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    cm = api.compile(m)
    cm.extra = 7                        # set through the wrapper: lands on the module
    return [type(cm).__name__, cm._orig_mod is m, m.extra, cm.extra, cm.get_submodule("0") is m[0],
            [n for n, _ in cm.named_parameters()], [n for n, _ in cm.named_modules()],
            [n for n, _ in cm.named_children()], len(list(cm.parameters())), repr(cm),
            isinstance(cm, torch.nn.Module), hasattr(cm, "forward"), cm.training]


def case_module_train_eval(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    cm = api.compile(m)
    x = torch.randn(5, 3)
    a = cm(x)                            # train: batch statistics, running stats updated
    rm = m[1].running_mean.clone()
    r = [cm.train() is cm, cm.eval() is cm, cm.training, m.training, m[1].training]
    with torch.no_grad():
        b = cm(x)                        # eval: running statistics
    cm.train()
    return r + [a.detach(), rm, b, m.training, m[1].num_batches_tracked]


def case_module_hooks(api):
    m = torch.nn.Linear(3, 3)
    seen = []
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m.register_forward_hook(lambda mod, args, out: out + 100)
    cm = api.compile(m)
    h = cm.register_forward_hook(lambda mod, args, out: seen.append(tuple(out.shape)))
    x = torch.ones(2, 3)
    with torch.no_grad():
        r = cm(x)
        h.remove()
        r2 = cm(x)
    return [r, r2, seen]


def case_module_state_dict_plain_load(api):
    m = torch.nn.Linear(3, 2)
    cm = api.compile(m)
    sd = cm.state_dict()
    plain = torch.nn.Linear(3, 2)
    out = [observe(lambda: plain.load_state_dict(sd))]  # "_orig_mod." keys: strict load fails
    stripped = {k.removeprefix("_orig_mod."): v for k, v in sd.items()}
    plain.load_state_dict(stripped)
    out.append(torch.equal(plain.weight, m.weight))
    cm.load_state_dict({k: torch.zeros_like(v) for k, v in sd.items()})
    out.append(m.weight.abs().sum().item())
    return out


def case_module_forward_direct(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh())
    cm = api.compile(m)
    x = torch.randn(2, 3)
    with torch.no_grad():
        return [cm.forward(x), cm(x), m(x)]


def case_module_new_submodule(api):
    m = torch.nn.Sequential(torch.nn.Linear(3, 3))
    cm = api.compile(m)
    with torch.no_grad():
        a = cm(torch.ones(1, 3))
        cm.append(torch.nn.ReLU())       # the wrapper forwards to the module's method
        b = cm(torch.ones(1, 3))
    return [a, b, len(m)]


def case_module_training_step(api):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 1))
    cm = api.compile(m)
    opt = torch.optim.SGD(cm.parameters(), lr=0.1)
    x, y = torch.randn(6, 4), torch.randn(6, 1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(cm(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses + [m[0].weight.detach()]


def case_compiled_fn_deepcopy(api):
    def f(x):
        return x + 3
    g = api.compile(f)
    c = copy.deepcopy(g)
    return [observe(lambda: c(torch.ones(2))), observe(lambda: pickle.dumps(g))]


def case_reset_alias(api):
    def f(x):
        return x.sigmoid() + 1
    g = api.compile(f)
    g(torch.ones(2))
    torch._dynamo.reset()               # the old name of torch.compiler.reset
    g(torch.ones(2))
    return [api.compiles()]


def case_stance_decorator(api):
    def f(x):
        return x.relu() * 7

    @torch.compiler.set_stance("force_eager")
    def run(g, x):
        return g(x)
    g = api.compile(f)
    out = [observe(lambda: run(g, torch.ones(2))), api.compiles()]
    out.append(observe(lambda: g(torch.ones(2))))
    return out + [api.compiles()]


def case_disable_compiled(api):
    def f(x):
        return x * 9
    g = api.compile(f)
    d = torch.compiler.disable(g)      # a compiled function disabled again: eager
    return [observe(lambda: d(torch.ones(2))), api.compiles()]


def case_cache_size_limit_alias(api):
    def f(x):
        return x.sin() - 4
    old = torch._dynamo.config.cache_size_limit
    torch._dynamo.config.cache_size_limit = 2  # the old name of recompile_limit
    torchc.config.recompile_limit = None
    try:
        g = api.compile(f, dynamic=False)
        out = [observe(lambda n=n: g(torch.ones(n))) for n in (2, 3, 4)]
    finally:
        torch._dynamo.config.cache_size_limit = old
        torchc.config.recompile_limit = 1000
    return out + [api.compiles()]


def case_bad_mode(api):
    def f(x):
        return x + 1
    return [observe(lambda: api.compile_plain(f, mode="bogus")(torch.ones(2))),
            observe(lambda: api.compile_plain(f, mode="default", options={"max_autotune": True})),
            observe(lambda: api.compile_plain(f, backend="no-such-backend")),
            observe(lambda: api.compile_plain(f, options={"no_such_option": 1})(torch.ones(2)))]


def case_fullgraph_truthy(api):
    def f(x):
        return x - 2
    g = api.compile(f, fullgraph=1)     # torch takes any truthy value
    return [observe(lambda: g(torch.ones(2))), api.compiles()]


def case_is_compiling(api):
    def f(x):
        return x + (1 if torch.compiler.is_compiling() else 100)
    g = api.compile(f)
    return [g(torch.zeros(2)), f(torch.zeros(2)), api.compiles()]


def case_no_grad_inside(api):
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + x
    g = api.compile(f)
    x = torch.ones(3, requires_grad=True)
    r = g(x)
    r.sum().backward()
    return [r.detach(), r.requires_grad, x.grad]


def case_backward_grads(api):
    def f(x, w):
        return torch.tanh(x @ w).pow(2).mean()
    g = api.compile(f)
    x = torch.randn(4, 3)
    w = torch.randn(3, 2, requires_grad=True)
    loss = g(x, w)
    loss.backward()
    return [loss.detach(), w.grad, api.compiles()]


def case_dynamo_backend_module(api):
    # torch.compile(m, backend=...) on a real module: Dynamo's capture either way; the graph
    # goes to the counting backend (torch) or to torchc's compiler ("torchc")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2)).eval()
    cm = torch.compile(m, backend=api.dynamo_backend())
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        return [cm(x), cm(x), type(cm).__name__, list(cm.state_dict())[:2], api.compiles()]


def _tiny_gpt2():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=64, n_positions=16)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(cfg).eval()


def case_transformers_gpt2(api):
    m = _tiny_gpt2()
    cm = api.compile(m)
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = m(ids).logits
        got = cm(ids).logits
    # torchc's kernels sum in another order than eager: compared to eager, not bitwise
    return [torch.allclose(got, want, atol=1e-4, rtol=1e-4), tuple(got.shape),
            list(cm.state_dict())[0], api.compiles() > 0]


def case_transformers_gpt2_dynamo_backend(api):
    m = _tiny_gpt2()
    cm = torch.compile(m, backend=api.dynamo_backend())
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = m(ids).logits
        got = cm(ids).logits
    return [torch.allclose(got, want, atol=1e-4, rtol=1e-4), tuple(got.shape), api.compiles() > 0]


# ---- what the logs and errors tell a user (normalized: the facts, not the wording) -------

_KINDS = ("dtype mismatch", "size mismatch", "rank mismatch", "stride mismatch", "requires_grad mismatch",
          "grad_mode")


class _Logs(logging.Handler):
    """records of torch's (TORCH_LOGS) or torchc's (TORCHC_LOGS) recompiles / graph_breaks logs"""

    def __init__(self, api, **arts):
        super().__init__()
        self.msgs, self.api, self.arts = [], api, arts

    def emit(self, r):
        self.msgs.append((r.name, r.getMessage()))

    def __enter__(self):
        # torch's artifact loggers keep their records to themselves (propagate off)
        self.names = ["torchc"] + [f"torch._dynamo.{m}.__{a}" for a in self.arts
                                   for m in ("guards", "symbolic_convert", "convert_frame")]
        for n in self.names:
            logging.getLogger(n).addHandler(self)
        if self.api.name == "torch":
            torch._logging.set_logs(**self.arts)
        else:
            torchc.set_logs(**self.arts)
        return self

    def __exit__(self, *exc):
        if self.api.name == "torch":
            torch._logging.set_logs()
        else:
            torchc.set_logs(all=False)
        for n in self.names:
            logging.getLogger(n).removeHandler(self)

    def of(self, what):
        return [m for n, m in self.msgs if what in n]


def _failures(msg):
    """a recompile message -> [(kind, names 'x'), ...] one per cached entry listed (at most 4)"""
    lines = [ln for ln in msg.splitlines()[1:] if "mismatch" in ln or "grad_mode" in ln]
    return [(next((k for k in _KINDS if k in ln), ln), "'x'" in ln) for ln in lines][:4]


def case_recompile_log_reasons(api):
    def f(x):
        return x * 2
    g = api.compile(f, dynamic=False)
    with _Logs(api, recompiles=True) as logs:
        g(torch.ones(3))
        g(torch.ones(5))
        g(torch.ones(3, requires_grad=True))
        with torch.no_grad():
            g(torch.ones(3, requires_grad=True))
        g(torch.ones(3, 2))
        g(torch.ones(3, 4))
        g(torch.ones(3, dtype=torch.float64))
    msgs = logs.of("recompiles")
    return [len(msgs), [m.splitlines()[0].split(" in ")[0] for m in msgs],
            [_failures(m)[0] for m in msgs], api.compiles()]


def case_graph_break_log_location(api):
    def f(x):
        y = x.sin()
        print("", end="")  # the break
        return y + 1
    brk = f.__code__.co_firstlineno + 2
    g = api.compile(f)
    with _Logs(api, graph_breaks=True) as logs:
        r = g(torch.ones(2))
    msgs = logs.of("graph_breaks")
    locs = {m.split("Graph break in user code at ")[1].split()[0] for m in msgs if "Graph break in user code at" in m}
    return [r, locs == {f"{__file__}:{brk}"}, len(msgs) >= 1]


def case_fullgraph_error_location(api):
    def f(x):
        y = x * 2
        if y.sum() > 0:  # data-dependent branch: fullgraph=True raises naming this line
            return y
        return -y
    line = f.__code__.co_firstlineno + 2
    g = api.compile(f, fullgraph=True)
    try:
        g(torch.ones(2))
        return ["no error"]
    except RuntimeError as e:
        text = str(e)
        return [f'File "{__file__}", line {line}' in text or f"{__file__}:{line}" in text]


def case_torch_logs_env(api):
    # TORCH_LOGS=recompiles (torch) / TORCHC_LOGS=recompiles (torchc) in a fresh process
    code = ("import torch, torchc\n"
            "def f(x):\n    return x + 1\n"
            "g = (torchc.compile(f) if __import__('sys').argv[1] == 'torchc' else torch.compile(f, backend='eager'))\n"
            "g(torch.ones(2)); g(torch.ones(2, dtype=torch.float64))\n")
    env = dict(os.environ, **({"TORCHC_LOGS": "recompiles"} if api.name == "torchc" else {"TORCH_LOGS": "recompiles"}))
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(torchc.__file__)), env.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-c", code, api.name], env=env, capture_output=True, text=True, timeout=300)
    err = p.stderr
    return [p.returncode, "Recompiling function f in <string>:2" in err, "dtype mismatch" in err, "'x'" in err]


def case_dynamo_config_settings(api):
    # torch._dynamo.config settings torchc follows: recompile_limit, automatic_dynamic_shapes,
    # both set at once (one compile per shape up to the limit, then eager)
    def f(x):
        return x.abs() * 3
    old = (torch._dynamo.config.recompile_limit, torch._dynamo.config.automatic_dynamic_shapes)
    torch._dynamo.config.recompile_limit, torch._dynamo.config.automatic_dynamic_shapes = 3, False
    torchc.config.recompile_limit = None
    torchc.config.automatic_dynamic_shapes = None
    try:
        g = api.compile(f)
        out = [observe(lambda n=n: g(torch.ones(n))) for n in (2, 3, 4, 5, 6)]
    finally:
        torch._dynamo.config.recompile_limit, torch._dynamo.config.automatic_dynamic_shapes = old
        torchc.config.recompile_limit = 1000
    return out + [api.compiles()]


def case_mode_options_dynamic(api):
    # accepted combinations give eager's results (torch: its own backend's checks, torchc its modes)
    def f(x):
        return torch.relu(x) * 2 + 1
    x = torch.randn(5, 3)
    out = []
    for kw in ({"mode": "default"}, {"mode": "reduce-overhead", "dynamic": False},
               {"mode": "max-autotune-no-cudagraphs", "dynamic": True}, {"options": {"max_autotune": True}},
               {"options": {"triton.cudagraphs": False}, "fullgraph": True}):
        out.append(observe(lambda kw=kw: api.compile_plain(f, **kw)(x)))
    return out


CASES = [case_recompile_limit, case_config_recompile_limit, case_config_automatic_dynamic,
         case_force_eager,
         case_fail_on_recompile, case_eager_on_recompile, case_eager_then_compile, case_reset, case_mark_static,
         case_mark_dynamic, case_maybe_mark_dynamic, case_compiler_disable,
         case_fullgraph_break, case_fullgraph_every_call, case_dynamic_then_static, case_disable_arg, case_state_dict, case_deepcopy_pickle,
         case_train_eval,
         case_decorator_bare, case_decorator_args, case_function_attributes, case_kwargs_defaults,
         case_varargs, case_structured_outputs, case_inplace_input, case_user_exception,
         case_recompile_dtype, case_recompile_requires_grad, case_recompile_grad_mode,
         case_automatic_dynamic, case_dynamic_true, case_dynamic_false, case_global_change,
         case_closure_change, case_nested_compiled, case_bound_method, case_module_attributes,
         case_module_train_eval, case_module_hooks, case_module_state_dict_plain_load,
         case_module_forward_direct, case_module_new_submodule, case_module_training_step,
         case_compiled_fn_deepcopy, case_reset_alias, case_stance_decorator, case_disable_compiled,
         case_cache_size_limit_alias, case_bad_mode, case_fullgraph_truthy, case_is_compiling,
         case_no_grad_inside, case_backward_grads, case_dynamo_backend_module,
         case_transformers_gpt2, case_transformers_gpt2_dynamo_backend,
         case_recompile_log_reasons, case_graph_break_log_location, case_fullgraph_error_location,
         case_torch_logs_env, case_dynamo_config_settings, case_mode_options_dynamic]
# cases whose torchc side falls back on purpose (the limit, disabled code, a break), compiles nothing
# with frames through the hook (no_compile), or is an API check that compiles nothing (needs_no_compiler)
_MARKS = {case_recompile_limit: pytest.mark.allow_fallback, case_config_recompile_limit: pytest.mark.allow_fallback,
          case_compiler_disable: pytest.mark.allow_fallback, case_fullgraph_break: pytest.mark.no_compile,
          case_fullgraph_every_call: pytest.mark.no_compile,
          case_disable_arg: pytest.mark.needs_no_compiler,
          case_function_attributes: pytest.mark.needs_no_compiler, case_bad_mode: pytest.mark.needs_no_compiler,
          case_cache_size_limit_alias: pytest.mark.allow_fallback,
          case_user_exception: pytest.mark.allow_fallback,  # the call that raises runs eagerly
          case_module_attributes: pytest.mark.needs_no_compiler, case_module_state_dict_plain_load: pytest.mark.needs_no_compiler,
          case_disable_compiled: pytest.mark.needs_no_compiler, case_fullgraph_error_location: pytest.mark.no_compile,
          case_torch_logs_env: pytest.mark.needs_no_compiler,  # compiles in a subprocess only
          case_dynamo_config_settings: pytest.mark.allow_fallback}
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


def test_dynamo_graph_break_breaks_as_under_torch_compile():
    """torch._dynamo.graph_break() inside a compiled function: a graph break there (as under
    torch.compile: two graphs), eager's values"""
    import torch._dynamo

    def f(x):
        y = x * 2
        torch._dynamo.graph_break()
        return y + 1

    x = torch.randn(3)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 2 and ex.graph_break_count == 1, ex.break_reasons
    assert "graph_break()" in str(ex.break_reasons[0])
    torch.testing.assert_close(ex.result, f(x))
    torch.testing.assert_close(torchc.compile(f)(x), f(x))


def test_checkpoint_is_a_break_with_a_reason():
    """torch.utils.checkpoint.checkpoint is wrapped by torch._disable_dynamo: what its polyfill
    leaves to it (here preserve_rng_state=False: eager's recompute draws new numbers) is a graph
    break at the call with a reason naming it (it was 'function nothing reached without a
    source', at a line of torch's eval_frame.py); the rest of the frame compiles; values and
    gradients as eager's. The common forms are captured inline: test_training_round6_checkpoint.py"""
    from torch.utils.checkpoint import checkpoint

    lin = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def f(x):
        y = checkpoint(lin, x * 2, use_reentrant=False, preserve_rng_state=False)
        return (y + 1).sum()

    x = torch.randn(3, 4)
    torchc.reset()
    ex = torchc.explain(f)(x)
    assert ex.graph_count == 2 and ex.graph_break_count == 1, ex.break_reasons
    reason = str(ex.break_reasons[0])
    # where: the polyfill's call of the original (torchc/_polyfills.py checkpoint)
    assert "call to checkpoint" in reason and "torch._disable_dynamo" in reason and "_polyfills.py" in reason, reason
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    le, lc = f(xe), torchc.compile(f)(xc)
    torch.testing.assert_close(lc, le)
    ge = torch.autograd.grad(le, [xe, lin[0].weight])
    gc = torch.autograd.grad(lc, [xc, lin[0].weight])
    for a, b in zip(gc, ge):
        torch.testing.assert_close(a, b)
