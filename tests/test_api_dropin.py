"""torchc as a drop-in for torch.compile (issue 25): arguments, logs, errors, the "torchc"
Dynamo backend, pickling, threads. Behaviour shared with torch.compile is compared in
test_parity.py; these are torchc's own answers."""
import copy
import io
import logging
import os
import re
import subprocess
import sys

import pytest
import torch
import torch._dynamo

import torchc
from conftest import assert_same

HERE = os.path.abspath(__file__)


class Count:
    """Graphs torchc compiled, through its log hook (the C counters restart at reset)."""

    def __init__(self):
        self.n = 0
        self.recs = []

    def __call__(self, rec):
        self.recs.append(rec)
        if rec["event"] == "compiled" and not rec.get("fallback"):
            self.n += 1
        torchc._logging._on_record(rec)


@pytest.fixture
def count():
    c = Count()
    torchc._C.set_log_hook(c)
    yield c
    torchc._C.set_log_hook(torchc._logging._on_record)


@pytest.fixture
def logs(caplog):
    """caplog's handler on the torchc logger itself (set_logs stops propagation to the root,
    as TORCH_LOGS does for torch's loggers)."""
    lg = logging.getLogger("torchc")
    lg.addHandler(caplog.handler)
    yield caplog
    lg.removeHandler(caplog.handler)


def line_of(fn, text):
    """The line number of the first line of fn's source containing text."""
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


# ---- arguments ------------------------------------------------------------------------

def test_every_torch_compile_argument_is_accepted():
    import inspect
    want = set(inspect.signature(torch.compile).parameters)
    have = set(inspect.signature(torchc.compile).parameters)
    assert want <= have, want - have


@pytest.mark.allow_fallback
def test_name_and_recompile_limit(count):
    def f(x):
        return x * 2

    g = torchc.compile(f, name="region", recompile_limit=2, dynamic=False)
    assert g.compile_name == "region" and g.recompile_limit == 2
    with pytest.warns(RuntimeWarning, match=r"recompile limit \(2\)"):
        for n in (2, 3, 4, 5):
            assert_same(g(torch.ones(n)), f(torch.ones(n)))
    assert count.n == 2
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="recompile_limit"):
            torchc.compile(f, recompile_limit=bad)


@pytest.mark.needs_no_compiler
def test_options_validated():
    f = lambda x: x  # noqa: E731
    with pytest.raises(ValueError, match=r"unknown option 'epilogue_fusion'.*valid options: 'triton.cudagraphs'"):
        torchc.compile(f, options={"epilogue_fusion": True})
    with pytest.raises(TypeError, match="must be a bool"):
        torchc.compile(f, options={"triton.cudagraphs": "yes"})
    with pytest.raises(TypeError, match="options must be a dict"):
        torchc.compile(f, options=[("a", 1)])
    with pytest.raises(RuntimeError, match="Either mode or options"):
        torchc.compile(f, mode="max-autotune", options={"max_autotune": True})
    torchc.compile(f, mode="reduce-overhead", options={"cudagraph_adaptive": False})


def test_modes_and_backends():
    f = lambda x: x + 1  # noqa: E731
    with pytest.raises(ValueError, match="unknown mode 'fastest'; valid modes: default"):
        torchc.compile(f, mode="fastest")
    for b in ("eager", "aot_eager", lambda gm, ex: gm):
        with pytest.raises(ValueError, match="takes neither"):
            torchc.compile(f, backend=b, mode="max-autotune")
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        torchc.compile(f, backend="nope")
    with pytest.raises(TypeError):
        torchc.compile(f, backend=3)
    for b in (None, "inductor", "torchc"):
        assert torch.equal(torchc.compile(f, backend=b)(torch.ones(2)), torch.full((2,), 2.0))
    with pytest.raises(NotImplementedError, match="isolate_recompiles"):
        torchc.compile(f, isolate_recompiles=True)
    # fullgraph: any truthy value, as torch.compile (tests/test_parity.py fullgraph_truthy)
    assert torchc.compile(f, fullgraph=1).fullgraph == 1
    assert torchc.compile(f, fullgraph=0).fullgraph == 0


def test_max_autotune_says_what_it_does(caplog, count):
    torchc._api._autotune_warned = False

    def f(x):
        return (x @ x).relu()

    with caplog.at_level(logging.WARNING, logger="torchc"):
        g = torchc.compile(f, mode="max-autotune")
    assert any("max-autotune" in r.getMessage() and "convolution in NCHW and channels-last" in r.getMessage()
               for r in caplog.records)
    assert g.__wrapped__ is f or True
    cf = torchc.compile(f, mode="max-autotune-no-cudagraphs")
    assert cf.autotune == 1 and torchc.compile(f).autotune == 0
    assert torchc.compile(f, options={"max_autotune": True}).autotune == 1
    x = torch.randn(8, 8)
    assert_same(g(x), f(x))
    assert count.n >= 1


# ---- logs -----------------------------------------------------------------------------

def test_recompile_log_names_the_failed_guard(logs, count):
    caplog = logs
    def f(x, scale):
        return x * scale

    torchc.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.INFO, logger="torchc.recompiles"):
            g = torchc.compile(f, dynamic=False)
            g(torch.ones(3), 2)
            g(torch.ones(3), 3)
    finally:
        torchc.set_logs(recompiles=False)
    msgs = [r.getMessage() for r in caplog.records if r.name == "torchc.recompiles"]
    assert len(msgs) == 1, msgs
    assert f"Recompiling function f in {HERE}:" in msgs[0]
    assert "CONSTANT_MATCH 'scale' == 2" in msgs[0]


def _breaks(x):
    y = x * 2
    print("side effect")  # the break
    return y + 1


def test_break_log_has_user_file_line_and_no_internal_names(logs, count):
    caplog = logs
    def outer(x):
        return _breaks(x).relu()

    torchc.set_logs(graph_breaks=True, guards=True, graph=True, perf=True, output_code=True)
    try:
        with caplog.at_level(logging.INFO, logger="torchc"):
            assert_same(torchc.compile(outer)(torch.ones(3)), outer(torch.ones(3)))
    finally:
        torchc.set_logs(all=False)
    text = "\n".join(r.getMessage() for r in caplog.records)
    brk = line_of(_breaks, "print(")
    call = line_of(outer, "_breaks(x)")
    assert f"Graph break in user code at {HERE}:{brk}" in text
    assert f'File "{HERE}", line {call}, in ' in text  # the inlined call stack
    assert "Reason: call to print not supported" in text
    assert "torchc_resume" not in text
    assert "GUARDS of" in text and "GRAPH of" in text
    # the compile-time breakdown (perf): capture, cache lookup, graph passes, codegen, load
    perf = [r.getMessage() for r in caplog.records if r.name == "torchc.perf"]
    assert perf and all(re.search(r"compile [0-9.]+ s: capture [0-9.]+ s, .*codegen [0-9.]+ s", m) for m in perf), perf
    assert count.n >= 2


@pytest.mark.needs_no_compiler
def test_set_logs_and_env_parsing():
    with pytest.raises(ValueError, match="unknown log 'nope'; valid: graph_breaks"):
        torchc.set_logs(nope=True)
    assert torchc._logging.parse("graph_breaks,+recompiles") == {
        "graph_breaks": logging.INFO, "recompiles": logging.DEBUG}
    assert set(torchc._logging.parse("all")) == set(torchc._logging.ARTIFACTS)
    with pytest.raises(ValueError, match="TORCHC_LOGS"):
        torchc._logging.parse("graph_brakes")


def test_torchc_logs_env_var(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch, torchc\n"
                      "def f(x, n):\n    return x * n\n"
                      "g = torchc.compile(f)\n"
                      "g(torch.ones(2), 2)\ng(torch.ones(2), 3)\n")
    env = dict(os.environ, TORCHC_LOGS="recompiles",
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(HERE)),
                                           os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "[torchc torchc.recompiles] Recompiling function f in" in r.stderr
    assert "CONSTANT_MATCH 'n' == 2" in r.stderr


@pytest.mark.allow_fallback
@pytest.mark.no_compile
def test_fullgraph_error_names_user_line():
    def f(x):
        y = x + 1
        print("no")
        return y

    with pytest.raises(RuntimeError) as ei:
        torchc.compile(f, fullgraph=True)(torch.ones(2))
    msg = str(ei.value)
    assert f"{HERE}:{line_of(f, 'print(')}" in msg, msg
    assert "call to print not supported" in msg


def test_fail_on_recompile_message_names_guard():
    def f(x):
        return x - 3

    g = torchc.compile(f, dynamic=False)
    g(torch.ones(2))
    with torch.compiler.set_stance("fail_on_recompile"):
        with pytest.raises(RuntimeError, match=r"fail_on_recompile.*TENSOR_MATCH 'x'"):
            g(torch.ones(3))


# ---- torch.compile(backend="torchc") ----------------------------------------------------

@pytest.mark.needs_no_compiler
def test_backend_registered():
    assert "torchc" in torch._dynamo.list_backends()


@pytest.mark.parametrize("dynamic", [False, None])
def test_dynamo_backend_compiles_with_torchc(count, dynamic):
    m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16),
                            torch.nn.Linear(16, 4))
    cm = torch.compile(m, backend="torchc", dynamic=dynamic)
    torchc._backend.compiled_graphs.clear()
    with torch.no_grad():
        for n in (4, 4, 7):
            x = torch.randn(n, 8)
            assert_same(cm(x), m(x), rtol=1e-4, atol=1e-5)
    assert len(torchc._backend.compiled_graphs) >= 1
    assert count.n >= 1  # torchc compiled Dynamo's graph (no silent fallback)
    ops = [r["op_count"] for r in count.recs if r["event"] == "compiled" and not r.get("fallback")]
    assert max(ops) >= 4, ops


def test_torchc_compile_as_dynamo_backend(count):
    def f(x):
        return (x.sin() * 2).softmax(-1)

    cf = torch.compile(f, backend=torchc.compile)
    x = torch.randn(3, 7)
    assert_same(cf(x), f(x))
    assert count.n >= 1
    with pytest.raises(TypeError, match="one positional"):
        torchc.compile(f, 3)


@pytest.mark.allow_fallback
def test_dynamo_backend_partial_support(count):
    """A node torchc cannot compile runs with ATen; the nodes around it stay compiled."""
    def f(x):
        y = (x * 2).exp()
        z = torch.linalg.svdvals(y)  # not in torchc's op table
        return z.sum(-1) + y.mean()

    cf = torch.compile(f, backend="torchc")
    x = torch.randn(5, 5)
    assert_same(cf(x), f(x), rtol=1e-4, atol=1e-5)
    # one graph before the unsupported node (mul, exp, mean) and one after it (sum, add)
    graphs = [r for r in count.recs if r["event"] == "compiled" and not r.get("fallback")]
    assert len(graphs) >= 2, [r.get("graph") for r in graphs]
    assert any("exp" in r["graph"] for r in graphs) and any("sum" in r["graph"] for r in graphs), graphs
    assert any("svdvals" in (r.get("break_reason") or "") for r in count.recs), count.recs


# ---- modules: pickle, deepcopy, torch.save/load --------------------------------------------

def test_save_load_recompiles_lazily(tmp_path, count):
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
    cm = torchc.compile(m)
    x = torch.randn(3, 4)
    with torch.no_grad():
        want = cm(x)
    n = count.n
    assert n >= 1
    path = tmp_path / "m.pt"
    torch.save(cm, path)
    # instances of one class may share entries (modules type-guarded once a second instance
    # came, which earlier tests may have made): forget them, so that the loaded copy's first
    # call must capture again
    torchc.reset()
    c2 = torch.load(path, weights_only=False)
    assert isinstance(c2, torchc.OptimizedModule) and count.n == n  # nothing compiled yet
    with torch.no_grad():
        assert torch.equal(c2(x), want)
    assert count.n > n  # compiled at the first call after loading
    sd = torch.load(io.BytesIO(_save(cm.state_dict())))
    assert list(sd) == ["_orig_mod.0.weight", "_orig_mod.0.bias"]


def _save(obj):
    b = io.BytesIO()
    torch.save(obj, b)
    return b.getvalue()


def test_setattr_reaches_original_module():
    m = torch.nn.Linear(2, 2)
    cm = torchc.compile(m)
    assert isinstance(cm, torchc.OptimizedModule) and cm is not m
    cm.flag = 3
    assert m.flag == 3 and cm.flag == 3
    assert "weight" in dir(cm)
    x = torch.randn(3, 2)
    assert_same(cm(x), m(x))  # compiled: the wrapper still runs the module it wraps


# ---- threads ------------------------------------------------------------------------------

def test_threads_follow_torch_at_each_call():
    f = torchc.compile(lambda x: x * 2 + 1)
    n = torch.get_num_threads()
    torchc.config.num_threads = None  # follow torch (another test may have set it)
    try:
        torch.set_num_threads(1)
        f(torch.ones(4))
        assert torchc._C.get_num_threads() == 1
        torch.set_num_threads(max(2, n))
        f(torch.ones(4))
        assert torchc._C.get_num_threads() == max(2, n)
        assert torchc.config.num_threads == torch.get_num_threads()
        torchc.config.num_threads = 1  # set explicitly: torch's count no longer applies
        torch.set_num_threads(max(2, n))
        f(torch.ones(4))
        assert torchc._C.get_num_threads() == 1
    finally:
        torch.set_num_threads(n)
        torchc.config.num_threads = None


def test_explain_break_reasons_name_user_line():
    def outer(x):
        return _breaks(x).relu()

    ex = torchc.explain(outer)(torch.ones(3))
    assert ex.graph_break_count >= 1
    brk = line_of(_breaks, "print(")
    assert any(f"{HERE}:{brk}" in r and "call to print not supported" in r
               for r in ex.break_reasons), ex.break_reasons
    assert not any("torchc_resume" in r for r in ex.break_reasons), ex.break_reasons


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("M,N,K", [(256, 256, 256), (8192, 1024, 1024)])  # below / above the default band
def test_max_autotune_times_every_gemm(monkeypatch, M, N, K):
    """mode="max-autotune": a GEMM outside 2^27..2^31 multiply-adds, which the default mode
    never times, is compiled both ways and timed at its first call (runtime/cuda.c)."""
    import torch.nn.functional as F
    monkeypatch.setenv("TORCHC_CACHE", "0")
    monkeypatch.delenv("TORCHC_GEMM", raising=False)
    monkeypatch.delenv("TORCHC_GEMM_CHOICE", raising=False)
    bf = torch.bfloat16
    x = (torch.rand(M, K, device="cuda") * 2 - 1).to(bf)
    w = ((torch.rand(N, K, device="cuda") * 2 - 1) * K ** -0.5).to(bf)
    b = (torch.rand(N, device="cuda") * 2 - 1).to(bf)

    def f(x, w, b):
        return F.gelu(F.linear(x, w, b))

    want = f(x, w, b).float()
    measured = {}
    for mode in ("default", "max-autotune-no-cudagraphs"):
        torchc.reset()
        n0 = torchc._C.stats()["gemm_measured"]
        cf = torchc.compile(f, mode=mode)
        for _ in range(3):
            got = cf(x, w, b)
        torch.testing.assert_close(got.float(), want, rtol=2e-2, atol=2e-2)
        measured[mode] = torchc._C.stats()["gemm_measured"] - n0
    assert measured == {"default": 0, "max-autotune-no-cudagraphs": 1}, measured


# ---- torchc.compile(backend=...): torchc's graphs to other backends as FX --------------

class Recorder:
    """A torch.compile-style backend: records each GraphModule (its call_function targets'
    names) and the example inputs it got, and runs the GraphModule."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        assert isinstance(gm, torch.fx.GraphModule)
        assert all(isinstance(t, torch.Tensor) for t in example_inputs)
        self.graphs.append([getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes
                            if n.op in ("call_function", "call_method")])
        return gm.forward


def _with_break(x, y):
    a = torch.relu(x * y).sum(-1)
    print("", end="")  # a graph break
    return torch.softmax(a, -1) @ y, (x + 1).mean(0, keepdim=True)


def _programs():
    """(function, args): ops of every kind the graph IR has, a break, views, scalars, casts"""
    x, y = torch.randn(5, 5), torch.randn(5, 5)
    i = torch.tensor([0, 3, 1])
    return [
        (_with_break, (x, y)),
        (lambda x, i: (x.index_select(0, i) * 2.5, x.argmax(), x.cumsum(1), x.amax(1), x.int() // 3,
                       torch.where(x > 0, x, 0.5), torch.maximum(x, torch.tensor(0.25)), x[1:4:2],
                       torch.arange(6) * 1.5, torch.cat([x, x.t()], 1), x.sum(dtype=torch.float64),
                       (x > 0).sum(), torch.nn.functional.gelu(x, approximate="tanh")), (x, i)),
        (lambda q, k: torch.nn.functional.scaled_dot_product_attention(q, k, k, is_causal=True),
         (torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4, 8))),
        (lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=1).relu(),
         (torch.randn(1, 3, 6, 6), torch.randn(4, 3, 3, 3), torch.randn(4))),
        (lambda x, w: torch.nn.functional.layer_norm(torch.nn.functional.linear(x, w), (7,)), (torch.randn(3, 5), torch.randn(7, 5))),
        (lambda x: (x.to(torch.float16) * 3).sum(0), (torch.randn(4, 3),)),
        (lambda x: x.expand(3, 4, 4) + x.permute(1, 0).reshape(1, 4, 4), (torch.randn(4, 4),)),
    ]


@pytest.mark.parametrize("k", range(7))
def test_backend_callable_gets_fx_graphs(count, k):
    fn, args = _programs()[k]
    torchc.reset()
    ex = torchc.explain(fn)(*args)  # torchc's own compile: graphs and breaks to compare
    torchc.reset()
    rec = Recorder()
    n0, r0 = count.n, len(count.recs)
    cf = torchc.compile(fn, backend=rec)
    exb = torchc.explain(cf)(*args)
    assert_same(exb.result, fn(*args), rtol=1e-4, atol=1e-5)
    assert_same(cf(*args), fn(*args), rtol=1e-4, atol=1e-5)  # the cached entry runs the backend's code
    # every graph torchc captured went to the backend, as many as torchc compiles itself
    assert len(rec.graphs) == ex.graph_count == exb.graph_count >= 1
    assert exb.graph_break_count == ex.graph_break_count
    assert count.n - n0 == ex.graph_count
    assert all(r.get("backend_graph") is not None for r in count.recs[r0:] if r["event"] == "compiled")
    assert all(len(g) > 0 for g in rec.graphs)


def test_backend_graph_ops(count):
    rec = Recorder()
    torchc.compile(_with_break, backend=rec)(torch.randn(3, 3), torch.randn(3, 3))
    assert rec.graphs[0] == ["mul", "relu", "sum"]
    assert "matmul" in rec.graphs[1] and "exp" in rec.graphs[1] and "mean" in rec.graphs[1]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_named_backends(count, backend):
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    cf = torchc.compile(_with_break, backend=backend)
    for _ in range(2):
        assert_same(cf(x, y), _with_break(x, y))
    assert count.n == 2


def test_aot_eager_backend_trains(count):
    """aot_eager: AOT autograd derives the backward of torchc's forward graph"""
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = copy.deepcopy(m)
    x = torch.randn(5, 4)
    cm = torchc.compile(m, backend="aot_eager")
    cm(x).square().sum().backward()
    ref(x).square().sum().backward()
    for p, q in zip(m.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    assert count.n >= 1


def test_backend_entries_apart(count):
    """torchc's own entries and a backend's for the same code do not answer for each other"""
    def f(x):
        return x * 2 + 1

    rec = Recorder()
    x = torch.randn(3)
    assert_same(torchc.compile(f)(x), f(x))
    assert_same(torchc.compile(f, backend=rec)(x), f(x))
    assert len(rec.graphs) == 1
    assert_same(torchc.compile(f)(x), f(x))
    assert count.n == 2


@pytest.mark.allow_fallback
def test_backend_errors_propagate():
    def bad(gm, ex):
        raise RuntimeError("backend says no")

    with pytest.raises(RuntimeError, match="backend says no"):
        torchc.compile(lambda x: x.sin() + 1, backend=bad)(torch.randn(3))
    with pytest.raises(RuntimeError, match="not a callable"):
        torchc.compile(lambda x: x.cos() + 1, backend=lambda gm, ex: None)(torch.randn(3))


# ---- compile-time breakdown --------------------------------------------------------------

def test_compile_time_breakdown(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHC_CACHE_DIR", str(tmp_path))  # nothing on disk from before
    c = 3.0 + float(torch.rand(()))  # a graph no earlier test compiled

    def f(x):
        return (x * c).exp().sum(-1)

    x = torch.randn(4, 7)
    ex = torchc.explain(f)(x)
    t = ex.compile_times
    assert set(t) == {"capture", "cache_lookup", "graph_passes", "codegen", "load", "fx_export"}
    assert t["capture"] > 0 and t["graph_passes"] > 0 and t["codegen"] > 0 and t["fx_export"] == 0
    assert sum(t.values()) <= ex.compile_ms / 1e3 + 1e-6
    assert re.search(r"Compile Time: [0-9.]+ s \(capture [0-9.]+ s, .*codegen", str(ex)), str(ex)
    torchc.reset()
    ex2 = torchc.explain(f)(x)  # the code is found again (in memory, in process or on disk)
    assert ex2.graph_count == 1 and ex2.compile_times["codegen"] == 0
    rec = Recorder()
    ex3 = torchc.explain(torchc.compile(f, backend=rec))(x)
    assert ex3.compile_times["fx_export"] > 0 and ex3.compile_times["codegen"] == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_on_cuda(count, backend):
    # x * y and softmax(a) @ y: y is x's shape (64 x 32 by 32 x 32 raised in eager too)
    x, y = torch.randn(64, 32, device="cuda"), torch.randn(64, 32, device="cuda")
    cf = torchc.compile(_with_break, backend=backend)
    for _ in range(2):
        assert_same(cf(x, y), _with_break(x, y), rtol=1e-4, atol=1e-4)
    assert count.n == 2
